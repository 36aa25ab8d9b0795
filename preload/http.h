/*
 * http.c — requests in flight on one accepted connection, from the bytes
 * the server reads and writes (HTTP/1.x, one outstanding request per
 * connection).
 *
 * A request begins when bytes arrive on an idle connection and ends when
 * the response to it has been written completely, as its own framing
 * says: a status line and headers, then no body (HEAD, 1xx, 204, 304), a
 * Content-Length body, or a chunked body up to its zero chunk and
 * trailers. A response with neither (close-delimited, as SSE streams of
 * HTTP/1.0 servers) ends when the connection closes. Then the connection
 * is idle again: an idle keep-alive connection counts zero.
 *
 * A connection whose first bytes are not an HTTP/1.x request line is not
 * followed here: the HTTP/2 preface (gRPC), a TLS handshake, ZMQ's ZMTP
 * greeting (conn.c follows them). A 101 Switching Protocols response ends
 * the request and the connection's HTTP/1.x (h2c goes on as HTTP/2, a
 * WebSocket by turns: conn.c).
 *
 * Pure: no I/O, no allocation, no globals; the caller owns each state and
 * serialises the calls on one state (hook_libc.c: one spinlock per fd).
 * Safe inside a hook.
 */
#ifndef VRT_HTTP_H
#define VRT_HTTP_H

#include <stddef.h>
#include <stdint.h>

/* One connection, zeroed by vrt_http_init. */
struct vrt_http {
	uint8_t proto; /* VRT_HTTP_NEW, _HTTP1 or _OTHER */
	uint8_t busy;  /* a request is in flight */
	uint8_t rs;    /* response parser state (http.c) */
	uint8_t flags; /* http.c: HEAD request, header seen... */
	uint8_t match; /* header name matching progress */
	uint8_t te;    /* "chunked" matching progress */
	uint16_t status;
	uint8_t up;      /* "h2c" matching progress of an Upgrade value */
	uint8_t h2c;     /* the 101 answer's Upgrade is h2c */
	uint32_t used;   /* END: bytes of that write up to the response's end */
	uint64_t num;    /* the number being read (length, chunk size) */
	uint64_t remain; /* body or chunk bytes still to come */
};

enum vrt_http_proto { VRT_HTTP_NEW = 0, VRT_HTTP_HTTP1 = 1, VRT_HTTP_OTHER = 2 };

/* What a call changed. */
enum vrt_http_change {
	VRT_HTTP_NONE = 0,
	VRT_HTTP_BEGIN = 1,     /* a request is in flight from now */
	VRT_HTTP_END = 2,       /* its response is complete: idle again */
	VRT_HTTP_NOT_HTTP1 = 3, /* first bytes of another protocol */
};

void vrt_http_init(struct vrt_http *c);

/*
 * Bytes arrived; p shows the first got of them (got >= 1: a scattered
 * read shows its first segment). Returns BEGIN when they start a request
 * on an idle HTTP/1.x connection, NOT_HTTP1 when they are a connection's
 * first bytes and another protocol's (*proto then says which, enum
 * vrt_net_proto), else NONE.
 */
int vrt_http_read(struct vrt_http *c, const uint8_t *p, size_t got,
                  int *proto);

/*
 * The server wrote n bytes (p) on the connection. Returns END when they
 * complete the response of the request in flight (*status: its code;
 * c->used: how many of the n bytes it took; after a 101, c->h2c says
 * whether the connection now speaks HTTP/2); bytes after that response's
 * end are not looked at. NONE otherwise.
 * With p NULL the n bytes are body bytes the caller could not show
 * (sendfile): they count, unparsed.
 */
int vrt_http_write(struct vrt_http *c, const uint8_t *p, size_t n,
                   unsigned *status);

#endif /* VRT_HTTP_H */
