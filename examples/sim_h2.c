/*
 * sim_h2.c — HTTP/2 frames and HPACK for the example servers (sim_h2.h).
 */
#include "sim_h2.h"

#include "hpack.h"

#include <stdlib.h>
#include <string.h>

/* RFC 7541 appendix A. */
static const char *const static_table[62][2] = {
        {"", ""},
        {":authority", ""},
        {":method", "GET"},
        {":method", "POST"},
        {":path", "/"},
        {":path", "/index.html"},
        {":scheme", "http"},
        {":scheme", "https"},
        {":status", "200"},
        {":status", "204"},
        {":status", "206"},
        {":status", "304"},
        {":status", "400"},
        {":status", "404"},
        {":status", "500"},
        {"accept-charset", ""},
        {"accept-encoding", "gzip, deflate"},
        {"accept-language", ""},
        {"accept-ranges", ""},
        {"accept", ""},
        {"access-control-allow-origin", ""},
        {"age", ""},
        {"allow", ""},
        {"authorization", ""},
        {"cache-control", ""},
        {"content-disposition", ""},
        {"content-encoding", ""},
        {"content-language", ""},
        {"content-length", ""},
        {"content-location", ""},
        {"content-range", ""},
        {"content-type", ""},
        {"cookie", ""},
        {"date", ""},
        {"etag", ""},
        {"expect", ""},
        {"expires", ""},
        {"from", ""},
        {"host", ""},
        {"if-match", ""},
        {"if-modified-since", ""},
        {"if-none-match", ""},
        {"if-range", ""},
        {"if-unmodified-since", ""},
        {"last-modified", ""},
        {"link", ""},
        {"location", ""},
        {"max-forwards", ""},
        {"proxy-authenticate", ""},
        {"proxy-authorization", ""},
        {"range", ""},
        {"referer", ""},
        {"refresh", ""},
        {"retry-after", ""},
        {"server", ""},
        {"set-cookie", ""},
        {"strict-transport-security", ""},
        {"transfer-encoding", ""},
        {"user-agent", ""},
        {"vary", ""},
        {"via", ""},
        {"www-authenticate", ""},
};

size_t sim_h2_frame(uint8_t *out, int type, int flags, uint32_t stream,
                    const void *payload, size_t n)
{
	out[0] = (uint8_t)(n >> 16);
	out[1] = (uint8_t)(n >> 8);
	out[2] = (uint8_t)n;
	out[3] = (uint8_t)type;
	out[4] = (uint8_t)flags;
	out[5] = (uint8_t)(stream >> 24 & 0x7f);
	out[6] = (uint8_t)(stream >> 16);
	out[7] = (uint8_t)(stream >> 8);
	out[8] = (uint8_t)stream;
	if (n)
		memcpy(out + 9, payload, n);
	return 9 + n;
}

int sim_h2_next_frame(const uint8_t *p, size_t n, int *type, int *flags,
                      uint32_t *stream, const uint8_t **payload,
                      size_t *len, size_t *used)
{
	size_t l;

	if (n < 9)
		return 0;
	l = (size_t)p[0] << 16 | (size_t)p[1] << 8 | p[2];
	if (n < 9 + l)
		return 0;
	*type = p[3];
	*flags = p[4];
	*stream = ((uint32_t)p[5] << 24 | (uint32_t)p[6] << 16 |
	           (uint32_t)p[7] << 8 | p[8]) &
	          0x7fffffffu;
	*payload = p + 9;
	*len = l;
	*used = 9 + l;
	return 1;
}

/* ---- writing ---------------------------------------------------------------- */

static size_t put_int(uint8_t *out, unsigned first, unsigned nbits,
                      uint32_t v)
{
	uint32_t max = (1u << nbits) - 1;
	size_t k = 0;

	if (v < max) {
		out[k++] = (uint8_t)(first | v);
		return k;
	}
	out[k++] = (uint8_t)(first | max);
	v -= max;
	while (v >= 128) {
		out[k++] = (uint8_t)(v % 128 + 128);
		v /= 128;
	}
	out[k++] = (uint8_t)v;
	return k;
}

static size_t put_str(uint8_t *out, const char *s, int huffman)
{
	size_t n = strlen(s), h;
	uint8_t tmp[512];

	if (huffman && n < sizeof(tmp) &&
	    (h = vrt_hpack_huff_encode(tmp, sizeof(tmp), s, n)) != 0 && h < n) {
		size_t k = put_int(out, 0x80, 7, (uint32_t)h);
		memcpy(out + k, tmp, h);
		return k + h;
	}
	size_t k = put_int(out, 0, 7, (uint32_t)n);
	memcpy(out + k, s, n);
	return k + n;
}

size_t sim_hpack_literal(uint8_t *out, unsigned indexed_name,
                         const char *name, const char *value, int incremental,
                         int huffman)
{
	size_t k = incremental ? put_int(out, 0x40, 6, indexed_name)
	                       : put_int(out, 0x00, 4, indexed_name);
	if (!indexed_name)
		k += put_str(out + k, name, 0);
	return k + put_str(out + k, value, huffman);
}

size_t sim_hpack_indexed(uint8_t *out, unsigned index)
{
	return put_int(out, 0x80, 7, index);
}

size_t sim_hpack_path(struct sim_hpack_enc *e, uint8_t *out, const char *path)
{
	for (int i = e->n - 1; i >= 0 && i >= e->n - SIM_HPACK_PATHS; i--)
		if (!strcmp(e->paths[i % SIM_HPACK_PATHS], path))
			/* the newest entry is index 62 */
			return sim_hpack_indexed(out,
			                         62 + (unsigned)(e->n - 1 - i));
	strncpy(e->paths[e->n % SIM_HPACK_PATHS], path,
	        sizeof(e->paths[0]) - 1);
	e->n++;
	return sim_hpack_literal(out, 4, NULL, path, 1, 1);
}

/* ---- reading ---------------------------------------------------------------- */

static int get_int(const uint8_t **p, const uint8_t *end, unsigned nbits,
                   uint32_t *v)
{
	uint32_t max = (1u << nbits) - 1, m = 0;

	if (*p >= end)
		return -1;
	*v = *(*p)++ & max;
	if (*v < max)
		return 0;
	for (;;) {
		if (*p >= end || m > 28)
			return -1;
		uint8_t b = *(*p)++;
		*v += (uint32_t)(b & 127) << m;
		m += 7;
		if (!(b & 128))
			return 0;
	}
}

/* A string into a malloc'd buffer (Huffman-decoded when coded). */
static char *get_str(const uint8_t **p, const uint8_t *end, size_t *len)
{
	uint32_t n;
	int huff;
	char *s;

	if (*p >= end)
		return NULL;
	huff = (**p & 0x80) != 0;
	if (get_int(p, end, 7, &n) || (size_t)(end - *p) < n)
		return NULL;
	s = malloc(huff ? (size_t)n * 8 / 5 + 1 : (size_t)n + 1);
	if (!s)
		return NULL;
	if (!huff) {
		memcpy(s, *p, n);
		*len = n;
	} else {
		uint32_t code = 0;
		unsigned bits = 0;
		size_t k = 0;
		for (uint32_t i = 0; i < n; i++)
			for (int b = 7; b >= 0; b--) {
				code = code << 1 | (((*p)[i] >> b) & 1);
				bits++;
				if (bits < 5)
					continue;
				uint32_t j = code - vrt_hpack_hfirst[bits];
				if (bits > 30) {
					free(s);
					return NULL;
				}
				if (code >= vrt_hpack_hfirst[bits] &&
				    j < vrt_hpack_hcount[bits]) {
					unsigned sym = vrt_hpack_hsyms
					        [vrt_hpack_hoffset[bits] + j];
					if (sym == 256) {
						free(s);
						return NULL;
					}
					s[k++] = (char)sym;
					code = 0;
					bits = 0;
				}
			}
		*len = k;
	}
	s[*len] = 0;
	*p += n;
	return s;
}

static void add_entry(struct sim_hpack_dec *d, char *name, char *value)
{
	size_t sz = strlen(name) + strlen(value) + 32;
	const int max = (int)(sizeof(d->e) / sizeof(d->e[0]));

	while (d->n && (d->size + sz > SIM_HPACK_TABLE || d->n == max)) {
		d->n--;
		d->size -= strlen(d->e[d->n].name) + strlen(d->e[d->n].value) +
		           32;
		free(d->e[d->n].name);
		free(d->e[d->n].value);
	}
	if (sz > SIM_HPACK_TABLE) {
		free(name);
		free(value);
		return;
	}
	memmove(&d->e[1], &d->e[0], (size_t)d->n * sizeof(d->e[0]));
	d->e[0].name = name;
	d->e[0].value = value;
	d->n++;
	d->size += sz;
}

/* The name and value of table index i (static or dynamic), or -1. */
static int lookup(const struct sim_hpack_dec *d, uint32_t i, const char **name,
                  const char **value)
{
	if (i >= 1 && i <= 61) {
		*name = static_table[i][0];
		*value = static_table[i][1];
		return 0;
	}
	if (i >= 62 && i - 62 < (uint32_t)d->n) {
		*name = d->e[i - 62].name;
		*value = d->e[i - 62].value;
		return 0;
	}
	return -1;
}

int sim_hpack_decode(struct sim_hpack_dec *d, const uint8_t *p, size_t n,
                     sim_hpack_field fn, void *arg)
{
	const uint8_t *end = p + n;

	while (p < end) {
		uint8_t b = *p;
		uint32_t idx;
		const char *name, *value;
		if (b & 0x80) {
			if (get_int(&p, end, 7, &idx) ||
			    lookup(d, idx, &name, &value))
				return -1;
			fn(arg, name, strlen(name), value, strlen(value));
			continue;
		}
		if ((b & 0xe0) == 0x20) { /* a table size update */
			if (get_int(&p, end, 5, &idx))
				return -1;
			continue;
		}
		int inc = (b & 0xc0) == 0x40;
		char *nm = NULL, *val;
		size_t nl = 0, vl = 0;
		if (get_int(&p, end, inc ? 6 : 4, &idx))
			return -1;
		if (idx) {
			if (lookup(d, idx, &name, &value))
				return -1;
			nl = strlen(name);
			nm = malloc(nl + 1);
			if (!nm)
				return -1;
			memcpy(nm, name, nl + 1);
		} else if (!(nm = get_str(&p, end, &nl))) {
			return -1;
		}
		if (!(val = get_str(&p, end, &vl))) {
			free(nm);
			return -1;
		}
		fn(arg, nm, nl, val, vl);
		if (inc) {
			add_entry(d, nm, val);
		} else {
			free(nm);
			free(val);
		}
	}
	return 0;
}

void sim_hpack_dec_free(struct sim_hpack_dec *d)
{
	for (int i = 0; i < d->n; i++) {
		free(d->e[i].name);
		free(d->e[i].value);
	}
	d->n = 0;
	d->size = 0;
}
