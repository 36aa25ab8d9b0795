/*
 * conn.h — requests in flight on one accepted connection, whatever the
 * protocol: the state machine that reads a connection's first bytes, then
 * follows it as that protocol says (docs/design.md has the picture).
 *
 *   NEW ──"GET / HTTP/1.1"──> HTTP1 ──101 Upgrade: h2c──> H2
 *    │                          └────101 (WebSocket)───> TURN
 *    ├──"PRI * HTTP/2.0"─────> H2      (streams: http2 in h2.c)
 *    ├──TLS record 0x16──────> TLS     (turns of application data)
 *    ├──0xFF (ZMQ's ZMTP)────> QUIET   (plumbing: nothing counted)
 *    └──anything else────────> TURN    (a protocol of its own)
 *
 * HTTP1: one request at a time, framed as HTTP/1.x says (http.c). H2:
 * many streams (h2.c). TURN and TLS cannot be parsed, so requests are
 * inferred from turn-taking: a request is in flight from the first bytes
 * the client sends on an idle connection until the server has answered —
 * its answer is the bytes it writes after that; the answer is over when
 * the client speaks again (the request ended at the server's last write
 * before, which the END event says as a lag), when the connection closes,
 * or when the server has written nothing for VRT_CONN_QUIET_NS (the reader
 * applies that from the ANSWER marks: one at the answer's first write,
 * then one per half quiet period while it goes on). Until the server
 * writes, the request stays in flight however long it computes. Over TLS
 * only application data records count, and the handshake is not a
 * request: the client's turns up to its Finished, and the server's first
 * flight after it (TLS 1.2's Finished, TLS 1.3's session tickets), are
 * skipped. Such requests are marked inferred (VRT_NET_F_INFERRED).
 *
 * Events (struct vrt_conn_event) go to the caller's emit function, in the
 * order they happened within the call. Pure: no I/O, no allocation, no
 * globals, time given by the caller; callers serialise calls on one
 * state (hook_libc.c: a spinlock per fd). Safe inside a hook.
 */
#ifndef VRT_CONN_H
#define VRT_CONN_H

#include "h2.h"
#include "http.h"

#include <vramtrace/trace_format.h>

#include <stddef.h>
#include <stdint.h>

#define VRT_CONN_QUIET_NS VRT_NET_QUIET_NS /* an answer is over after 1 s */
#define VRT_CONN_PATH     64            /* request path bytes reported */

enum vrt_conn_proto {
	VRT_CONN_NEW = 0,
	VRT_CONN_HTTP1 = 1,
	VRT_CONN_H2 = 2,
	VRT_CONN_TURN = 3,
	VRT_CONN_TLS = 4,
	VRT_CONN_QUIET = 5,
};

/* Turn-taking state (TURN and TLS). */
struct vrt_turn {
	uint8_t st;       /* conn.c: idle, asked, answering */
	uint8_t tls;      /* conn.c: TLS handshake phase */
	uint8_t rhave;    /* client record header bytes collected */
	uint8_t skip_wr;  /* the server's next write is handshake */
	uint8_t rhdr[5];
	uint16_t rremain; /* client record bytes still to come */
	uint64_t last_write, last_mark;
};

struct vrt_conn {
	uint8_t proto;   /* enum vrt_conn_proto */
	uint8_t probe;   /* HTTP1: the request in flight is a probe */
	uint8_t pre;     /* NEW: bytes of "PRI " seen in reads too short to
	                  * tell HTTP/2's preface from POST, PUT, PATCH */
	union {
		struct vrt_http h1;
		struct vrt_h2 h2;
		struct vrt_turn t;
	} u;
};

struct vrt_conn_event {
	uint8_t op;        /* VRT_NET_REQ_BEGIN, _REQ_END, _ANSWER, _PROTO */
	uint8_t flags;     /* VRT_NET_F_* */
	uint32_t stream;   /* HTTP/2 stream, else 0 */
	uint64_t arg;      /* END: the status; PROTO: enum vrt_net_proto */
	uint64_t val;      /* END (inferred): ns since the answer's last
	                    * write; BEGIN: hash of the path (0: none) */
	const char *text;  /* BEGIN: the path, when read */
	size_t text_len;
};

typedef void (*vrt_conn_emit)(void *arg, const struct vrt_conn_event *e);

void vrt_conn_init(struct vrt_conn *c);

/* Bytes the server read: p[0..n) (n >= 1), at time now. */
void vrt_conn_read(struct vrt_conn *c, const uint8_t *p, size_t n,
                   uint64_t now, vrt_conn_emit emit, void *arg);
/* Bytes the server wrote: p[0..n); p NULL for n bytes it sent unseen
 * (sendfile). */
void vrt_conn_write(struct vrt_conn *c, const uint8_t *p, size_t n,
                    uint64_t now, vrt_conn_emit emit, void *arg);
/* The connection closes: an inferred request in flight ends (with its
 * lag); HTTP/1.x and HTTP/2 requests end with the CLOSE event itself. */
void vrt_conn_close(struct vrt_conn *c, uint64_t now, vrt_conn_emit emit,
                    void *arg);

/* Requests in flight on it, probes left out. */
unsigned vrt_conn_inflight(const struct vrt_conn *c);
/* Its open requests, for a snapshot: fn(stream, flags). */
void vrt_conn_each_open(const struct vrt_conn *c,
                        void (*fn)(void *arg, uint32_t stream,
                                   unsigned flags),
                        void *arg);

#endif /* VRT_CONN_H */
