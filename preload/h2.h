/*
 * h2.h — requests in flight on one HTTP/2 connection (gRPC, h2c), from the
 * bytes the server reads and writes.
 *
 * A request is a stream the client opens: it is in flight from the client's
 * HEADERS (once the header block is complete) until the server ends the
 * stream (END_STREAM on its HEADERS or DATA: gRPC's trailers, the last
 * message of a server-streaming RPC) or either side resets it
 * (RST_STREAM), or a GOAWAY from the server refuses it. Many streams on
 * one connection are many requests.
 *
 * Each direction is read as frames (9-byte header, payload skipped by its
 * length). The client's header blocks are walked with HPACK just enough to
 * read each request's :path — indexed fields, literals (Huffman-coded or
 * not), table size updates — without keeping the dynamic table: an entry
 * is named by the count of insertions before it, which is all an index
 * needs, and the last few :path values the client inserted are kept, so a
 * repeated path sent as an index is still known (by its hash; its text
 * only when it was read as a literal).
 *
 * The server's responses are not decoded (no HPACK on that side): a
 * stream it ends completed (status 200, as gRPC answers every RPC at the
 * HTTP level), a reset did not (status 0).
 *
 * Bounded: at most VRT_H2_STREAMS open streams are remembered (the
 * rest still produce their begin and end, unpaired by the connection
 * state); at most VRT_H2_PATH bytes of a path are kept. Pure: no I/O, no
 * allocation, no globals; callers serialise the calls on one state
 * (conn.c). Safe inside a hook.
 */
#ifndef VRT_H2_H
#define VRT_H2_H

#include <stddef.h>
#include <stdint.h>

#define VRT_H2_STREAMS 14
#define VRT_H2_PATH    48
#define VRT_H2_PATHS   4 /* :path insertions remembered */

/* The frame reader of one direction. */
struct vrt_h2_frames {
	uint8_t hdr[9];
	uint8_t have;  /* header bytes collected; 9 while in a payload */
	uint8_t skip;  /* payload bytes before the header block (pad length,
	                * priority) still to skip */
	uint8_t pad;   /* padding at the payload's end */
	uint32_t remain; /* payload bytes still to come */
	uint32_t goaway; /* GOAWAY: its last stream id, being read */
};

struct vrt_h2 {
	struct vrt_h2_frames rd, wr;
	uint8_t preface;   /* client preface bytes still to skip */
	/* HPACK walk of the client's header block */
	uint8_t hs;        /* walker state (h2.c) */
	uint8_t rep;       /* the representation being read */
	uint8_t field;     /* which field it names: 0 other, 1 :path,
	                    * 2 :method */
	uint8_t shift;     /* integer continuation */
	uint8_t huff;      /* the string is Huffman-coded */
	uint8_t hlen;      /* Huffman code bits collected */
	uint8_t nlen;      /* literal name bytes compared */
	uint8_t cand;      /* literal name candidates still matching */
	uint8_t plen;      /* path bytes kept */
	uint8_t get;       /* the block's :method is GET or HEAD */
	uint8_t got_path;  /* the block named a :path */
	uint8_t pcls;      /* its class */
	uint8_t ptext;     /* its text was read (a literal) */
	uint32_t hcode;
	uint32_t ival;     /* integer being read */
	uint32_t srem;     /* string bytes still to come */
	uint32_t phash;    /* hash of the path read so far */
	uint32_t inserts;  /* insertions into the client's table */
	uint32_t block;    /* the stream of the header block (0: none) */
	uint8_t block_new; /* it opens a stream */
	uint8_t nopen;
	uint16_t unpaired; /* streams begun while the table was full */
	/* the :path values the client inserted into its HPACK table: each
	 * one's insertion number (1-based; 0: empty), hash and class */
	uint32_t pins[VRT_H2_PATHS], phashes[VRT_H2_PATHS];
	uint8_t pclss[VRT_H2_PATHS];
	uint32_t open[VRT_H2_STREAMS]; /* stream id | VRT_H2_PROBE_BIT */
	char path[VRT_H2_PATH];
};

#define VRT_H2_PROBE_BIT 0x80000000u

/* What happened to a stream. */
struct vrt_h2_event {
	int begin;          /* 1 a stream opened, 0 it ended */
	uint32_t stream;
	unsigned status;    /* end: 200 completed, 0 reset or refused */
	int cls;            /* enum vrt_reqpath_class of its :path (end: PROBE
	                     * for any stream that was not a request) */
	int get;            /* begin: its method is GET or HEAD */
	uint32_t hash;      /* begin: hash of its :path (0: none) */
	const char *path;   /* begin: its text, when read; else NULL */
	size_t path_len;
};

typedef void (*vrt_h2_emit)(void *arg, const struct vrt_h2_event *e);

/* A connection that starts with the client preface (prior knowledge):
 * skip_preface is how many of its 24 bytes are still to come. After an
 * HTTP/1.1 "Upgrade: h2c", the request that asked is stream 1, open. */
void vrt_h2_init(struct vrt_h2 *h, unsigned skip_preface);
void vrt_h2_upgraded(struct vrt_h2 *h, int cls, int get);

/* Bytes the client sent (read by the server) / the server wrote. Events
 * are emitted in the order of the frames. */
void vrt_h2_read(struct vrt_h2 *h, const uint8_t *p, size_t n,
                 vrt_h2_emit emit, void *arg);
void vrt_h2_write(struct vrt_h2 *h, const uint8_t *p, size_t n,
                  vrt_h2_emit emit, void *arg);

/* Streams open now (those remembered), for a snapshot: fn(stream, probe). */
void vrt_h2_each_open(const struct vrt_h2 *h,
                      void (*fn)(void *arg, uint32_t stream, int probe),
                      void *arg);
/* Open streams, probes left out (those remembered and the unpaired). */
unsigned vrt_h2_inflight(const struct vrt_h2 *h);

#endif /* VRT_H2_H */
