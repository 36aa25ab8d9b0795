/*
 * hpack.c — HPACK's Huffman code (hpack.h).
 */
#include "hpack.h"

/* The Huffman code of RFC 7541 appendix B is canonical: per code length,
 * how many symbols have it, the first code of that length, where its
 * symbols start in syms (sorted by length, then value). */
const uint8_t vrt_hpack_hcount[31] = {0,  0,  0,  0,  0,  10, 26, 32,
                                   6,  0,  5,  3,  2,  6,  2,  3,
                                   0,  0,  0,  3,  8,  13, 26, 29,
                                   12, 4,  15, 19, 29, 0,  4};
const uint32_t vrt_hpack_hfirst[31] = {
        0,        0,         0,         0,         0,         0,
        20,       92,        248,       508,       1016,      2042,
        4090,     8184,      16380,     32764,     65534,     131068,
        262136,   524272,    1048550,   2097116,   4194258,   8388568,
        16777194, 33554412,  67108832,  134217694, 268435426, 536870910,
        1073741820};
const uint16_t vrt_hpack_hoffset[31] = {0,   0,   0,   0,   0,   0,   10,  36,
                                     68,  74,  74,  79,  82,  84,  90,  92,
                                     95,  95,  95,  95,  98,  106, 119, 145,
                                     174, 186, 190, 205, 224, 253, 253};
const uint16_t vrt_hpack_hsyms[257] = {
        48,  49,  50,  97,  99,  101, 105, 111, 115, 116, 32,  37,  45,
        46,  47,  51,  52,  53,  54,  55,  56,  57,  61,  65,  95,  98,
        100, 102, 103, 104, 108, 109, 110, 112, 114, 117, 58,  66,  67,
        68,  69,  70,  71,  72,  73,  74,  75,  76,  77,  78,  79,  80,
        81,  82,  83,  84,  85,  86,  87,  89,  106, 107, 113, 118, 119,
        120, 121, 122, 38,  42,  44,  59,  88,  90,  33,  34,  40,  41,
        63,  39,  43,  124, 35,  62,  0,   36,  64,  91,  93,  126, 94,
        125, 60,  96,  123, 92,  195, 208, 128, 130, 131, 162, 184, 194,
        224, 226, 153, 161, 167, 172, 176, 177, 179, 209, 216, 217, 227,
        229, 230, 129, 132, 133, 134, 136, 146, 154, 156, 160, 163, 164,
        169, 170, 173, 178, 181, 185, 186, 187, 189, 190, 196, 198, 228,
        232, 233, 1,   135, 137, 138, 139, 140, 141, 143, 147, 149, 150,
        151, 152, 155, 157, 158, 165, 166, 168, 174, 175, 180, 182, 183,
        188, 191, 197, 231, 239, 9,   142, 144, 145, 148, 159, 171, 206,
        215, 225, 236, 237, 199, 207, 234, 235, 192, 193, 200, 201, 202,
        205, 210, 213, 218, 219, 238, 240, 242, 243, 255, 203, 204, 211,
        212, 214, 221, 222, 223, 241, 244, 245, 246, 247, 248, 250, 251,
        252, 253, 254, 2,   3,   4,   5,   6,   7,   8,   11,  12,  14,
        15,  16,  17,  18,  19,  20,  21,  23,  24,  25,  26,  27,  28,
        29,  30,  31,  127, 220, 249, 10,  13,  22,  256};


/* The code and length of one symbol, from the canonical tables. */
static int code_of(unsigned sym, uint32_t *code, unsigned *len)
{
	for (unsigned l = 5; l <= 30; l++)
		for (unsigned i = 0; i < vrt_hpack_hcount[l]; i++)
			if (vrt_hpack_hsyms[vrt_hpack_hoffset[l] + i] == sym) {
				*code = vrt_hpack_hfirst[l] + i;
				*len = l;
				return 1;
			}
	return 0;
}

size_t vrt_hpack_huff_encode(uint8_t *out, size_t max, const char *s,
                             size_t n)
{
	uint64_t acc = 0;
	unsigned bits = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t code;
		unsigned len;
		if (!code_of((uint8_t)s[i], &code, &len))
			return 0;
		acc = acc << len | code;
		bits += len;
		while (bits >= 8) {
			if (k == max)
				return 0;
			out[k++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	if (bits) {
		if (k == max)
			return 0;
		out[k++] = (uint8_t)((acc << (8 - bits)) | ((1u << (8 - bits)) - 1));
	}
	return k;
}
