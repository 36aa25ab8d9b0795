/*
 * sim_h2.h — the few pieces of HTTP/2 the example servers speak for gRPC
 * (sim_http.c's grpc protocol): frames, and HPACK's integers and strings,
 * written and read. No third-party HTTP/2 library: tests check these
 * frames against Debian's python3-h2.
 *
 * Pure: no I/O; the decoder's dynamic table lives in its struct.
 */
#ifndef SIM_H2_H
#define SIM_H2_H

#include <stddef.h>
#include <stdint.h>

#define SIM_H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define SIM_H2_PREFACE_LEN 24

enum {
	SIM_H2_DATA = 0,
	SIM_H2_HEADERS = 1,
	SIM_H2_RST_STREAM = 3,
	SIM_H2_SETTINGS = 4,
	SIM_H2_PING = 6,
	SIM_H2_GOAWAY = 7,
	SIM_H2_WINDOW_UPDATE = 8,
	SIM_H2_CONTINUATION = 9,
};

enum {
	SIM_H2_END_STREAM = 0x1,
	SIM_H2_ACK = 0x1,
	SIM_H2_END_HEADERS = 0x4,
	SIM_H2_PADDED = 0x8,
	SIM_H2_PRIORITY = 0x20,
};

/* A frame: its 9-byte header then the payload, into out (room for
 * 9 + n bytes). Returns the frame's length. */
size_t sim_h2_frame(uint8_t *out, int type, int flags, uint32_t stream,
                    const void *payload, size_t n);

/* One frame at the start of p[0..n): 1 with *type, *flags, *stream,
 * *payload and *len set and *used its whole length; 0 when it is not all
 * there yet. */
int sim_h2_next_frame(const uint8_t *p, size_t n, int *type, int *flags,
                      uint32_t *stream, const uint8_t **payload,
                      size_t *len, size_t *used);

/* HPACK, writing: one field as a literal. indexed_name: the static
 * table's index of its name (0: a literal name); incremental: added to the
 * dynamic table (the receiver's and sim_hpack_enc's); huffman: the value
 * Huffman-coded. Returns the bytes written into out (room for 2 * (name +
 * value) + 16). */
size_t sim_hpack_literal(uint8_t *out, unsigned indexed_name,
                         const char *name, const char *value, int incremental,
                         int huffman);
/* One field from the table (static or dynamic) by its index. */
size_t sim_hpack_indexed(uint8_t *out, unsigned index);

/* A client's encoder of :path values: a path sent before is an index into
 * the dynamic table; a new one a literal with incremental indexing, its
 * value Huffman-coded (as gRPC clients send them). Only paths are added
 * to the table, so the index is their count since. */
#define SIM_HPACK_PATHS 16
struct sim_hpack_enc {
	char paths[SIM_HPACK_PATHS][96];
	int n; /* paths added, in order */
};
size_t sim_hpack_path(struct sim_hpack_enc *e, uint8_t *out,
                      const char *path);

/* HPACK, reading: a decoder with its dynamic table (entries evicted
 * oldest first past SIM_HPACK_TABLE bytes, as RFC 7541 says). fn gets each
 * field (not NUL-terminated). Returns 0, -1 on a malformed block. */
#define SIM_HPACK_TABLE 4096
struct sim_hpack_dec {
	struct {
		char *name, *value;
	} e[SIM_HPACK_TABLE / 32];
	int n;       /* entries, newest first */
	size_t size; /* their size as RFC 7541 counts it */
};
typedef void (*sim_hpack_field)(void *arg, const char *name, size_t nl,
                                const char *value, size_t vl);
int sim_hpack_decode(struct sim_hpack_dec *d, const uint8_t *p, size_t n,
                     sim_hpack_field fn, void *arg);
void sim_hpack_dec_free(struct sim_hpack_dec *d);

#endif
