/*
 * hpack.h — the Huffman code of HPACK (RFC 7541 appendix B), shared by the
 * preload, which reads HTTP/2 header blocks (preload/h2.c), and the example
 * servers, which write them. The code is canonical, so it is given by how
 * many symbols have each length: per code length L (5 to 30 bits), the
 * count of symbols, the first code, and where its symbols start in
 * vrt_hpack_hsyms (sorted by length, then value; 256 is EOS).
 *
 * Pure data and one pure function: safe inside a hook.
 */
#ifndef VRT_HPACK_H
#define VRT_HPACK_H

#include <stddef.h>
#include <stdint.h>

extern const uint8_t vrt_hpack_hcount[31];
extern const uint32_t vrt_hpack_hfirst[31];
extern const uint16_t vrt_hpack_hoffset[31];
extern const uint16_t vrt_hpack_hsyms[257];

/* Huffman-codes s[0..n) into out (room for at least n bytes: a code is
 * never longer than the string here unless the string has bytes above
 * 0x7e; then 0 is returned and nothing is promised). Returns the coded
 * length, padded with ones to a byte; 0 when it does not fit in max. */
size_t vrt_hpack_huff_encode(uint8_t *out, size_t max, const char *s,
                             size_t n);

#endif
