/*
 * conn.c — one accepted connection's protocol and its requests in flight
 * (conn.h has the state machine and the turn-taking rule).
 *
 * Pure; callers serialise calls on one state.
 */
#include "conn.h"

#include "reqpath.h"

#include <vramtrace/trace_format.h>

#include <string.h>

enum turn_state { T_IDLE = 0, T_ASKED = 1, T_ANSWERING = 2 };

/* TLS phases of the client's records. */
enum tls_phase {
	TLS_HELLO = 0, /* before the client's ChangeCipherSpec */
	TLS_CCS = 1,   /* after it: its next record is its Finished */
	TLS_DONE = 2,  /* handshake over: application data are requests */
};

enum { TLS_CCS_REC = 0x14, TLS_HANDSHAKE = 0x16, TLS_APPDATA = 0x17 };

void vrt_conn_init(struct vrt_conn *c)
{
	memset(c, 0, sizeof(*c));
}

static void emit_ev(vrt_conn_emit emit, void *arg, uint8_t op, uint8_t flags,
                    uint32_t stream, uint64_t a, uint64_t val)
{
	struct vrt_conn_event e = {.op = op,
	                           .flags = flags,
	                           .stream = stream,
	                           .arg = a,
	                           .val = val};
	emit(arg, &e);
}

/* ---- which protocol ------------------------------------------------------ */

/* An HTTP/1.x request starts with its method, a token of capitals, then a
 * space; a first read that ends inside such a token is taken as one. */
static int is_http1(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && i < 24 && p[i] >= 'A' && p[i] <= 'Z')
		i++;
	return i > 0 && (i < n ? p[i] == ' ' : i < 24);
}

static int identify(const uint8_t *p, size_t n, int *proto)
{
	if (n >= 4 && !memcmp(p, "PRI ", 4)) {
		*proto = VRT_NET_PROTO_HTTP2;
		return VRT_CONN_H2;
	}
	if (p[0] == TLS_HANDSHAKE && (n < 2 || p[1] == 3)) {
		*proto = VRT_NET_PROTO_TLS;
		return VRT_CONN_TLS;
	}
	if (p[0] == 0xff) { /* ZMTP's signature starts so */
		*proto = VRT_NET_PROTO_ZMTP;
		return VRT_CONN_QUIET;
	}
	if (is_http1(p, n))
		return VRT_CONN_HTTP1;
	*proto = VRT_NET_PROTO_OTHER;
	return VRT_CONN_TURN;
}

/* ---- HTTP/2 --------------------------------------------------------------- */

struct h2_ctx {
	vrt_conn_emit emit;
	void *arg;
};

static void h2_event(void *arg, const struct vrt_h2_event *e)
{
	struct h2_ctx *x = arg;
	struct vrt_conn_event ev = {
	        .op = e->begin ? VRT_NET_REQ_BEGIN : VRT_NET_REQ_END,
	        .stream = e->stream,
	        .arg = e->begin ? 0 : e->status,
	        .val = e->begin ? e->hash : 0,
	        .text = e->begin ? e->path : NULL,
	        .text_len = e->begin ? e->path_len : 0};
	if (e->cls == VRT_REQPATH_PROBE)
		ev.flags |= VRT_NET_F_PROBE;
	else if (e->begin && e->cls == VRT_REQPATH_INTERNAL)
		ev.flags |= VRT_NET_F_INTERNAL;
	x->emit(x->arg, &ev);
}

/* ---- HTTP/1.x ------------------------------------------------------------- */

/* A request began on an HTTP/1.x connection whose first segment is p:
 * its target and class from the request line. */
static void h1_begin(struct vrt_conn *c, const uint8_t *p, size_t n,
                     vrt_conn_emit emit, void *arg)
{
	struct vrt_conn_event e = {.op = VRT_NET_REQ_BEGIN};
	size_t m = 0, t, end;
	int get, cls;

	while (m < n && p[m] != ' ')
		m++;
	get = (m == 3 && !memcmp(p, "GET", 3)) ||
	      (m == 4 && !memcmp(p, "HEAD", 4)) ||
	      (m == 7 && !memcmp(p, "OPTIONS", 7));
	t = m + 1;
	end = t;
	while (end < n && p[end] != ' ' && p[end] != '\r' && p[end] != '\n')
		end++;
	if (t < n && end > t) {
		size_t len = end - t;
		/* An absolute-form target (a proxy's): its path. */
		if (len > 7 && !memcmp(p + t, "http://", 7)) {
			const uint8_t *s = memchr(p + t + 7, '/', len - 7);
			if (s) {
				len -= (size_t)(s - (p + t));
				t = (size_t)(s - p);
			}
		}
		cls = vrt_reqpath_class((const char *)p + t, len, get);
		e.text = (const char *)p + t;
		e.text_len = len < VRT_CONN_PATH ? len : VRT_CONN_PATH;
		e.val = vrt_reqpath_hash(e.text, len);
	} else {
		cls = VRT_REQPATH_REQUEST;
	}
	c->probe = cls != VRT_REQPATH_REQUEST;
	if (cls == VRT_REQPATH_PROBE)
		e.flags |= VRT_NET_F_PROBE;
	else if (cls == VRT_REQPATH_INTERNAL)
		e.flags |= VRT_NET_F_INTERNAL;
	emit(arg, &e);
}

/* ---- turns ------------------------------------------------------------------ */

/* The client spoke (application bytes, for TLS). */
static void turn_ask(struct vrt_conn *c, uint64_t now, vrt_conn_emit emit,
                     void *arg)
{
	struct vrt_turn *t = &c->u.t;
	if (t->st == T_ASKED)
		return; /* still asking */
	if (t->st == T_ANSWERING)
		emit_ev(emit, arg, VRT_NET_REQ_END, VRT_NET_F_INFERRED, 0, 0,
		        now > t->last_write ? now - t->last_write : 0);
	t->st = T_ASKED;
	emit_ev(emit, arg, VRT_NET_REQ_BEGIN, VRT_NET_F_INFERRED, 0, 0, 0);
}

static void turn_write(struct vrt_conn *c, uint64_t now, vrt_conn_emit emit,
                       void *arg)
{
	struct vrt_turn *t = &c->u.t;
	t->last_write = now;
	if (t->skip_wr) {
		t->skip_wr = 0; /* the handshake's last flight */
		return;
	}
	if (t->st == T_ASKED) {
		t->st = T_ANSWERING;
		t->last_mark = now;
		emit_ev(emit, arg, VRT_NET_ANSWER, VRT_NET_F_INFERRED, 0, 0, 0);
	} else if (t->st == T_ANSWERING &&
	           now - t->last_mark >= VRT_CONN_QUIET_NS / 2) {
		t->last_mark = now;
		emit_ev(emit, arg, VRT_NET_ANSWER, VRT_NET_F_INFERRED, 0, 0, 0);
	}
}

/* The client's bytes over TLS: records, of which only application data
 * after the handshake ask. */
static void tls_read(struct vrt_conn *c, const uint8_t *p, size_t n,
                     uint64_t now, vrt_conn_emit emit, void *arg)
{
	struct vrt_turn *t = &c->u.t;
	size_t i = 0;

	while (i < n) {
		if (t->rhave < 5) {
			t->rhdr[t->rhave++] = p[i++];
			if (t->rhave < 5)
				continue;
			t->rremain = (uint16_t)(t->rhdr[3] << 8 | t->rhdr[4]);
			uint8_t type = t->rhdr[0];
			if (t->tls == TLS_DONE) {
				if (type == TLS_APPDATA)
					turn_ask(c, now, emit, arg);
			} else if (type == TLS_CCS_REC) {
				t->tls = TLS_CCS;
			} else if (t->tls == TLS_CCS ||
			           (type == TLS_APPDATA && t->tls == TLS_HELLO)) {
				/* The client's Finished (after its CCS, or
				 * TLS 1.3's first encrypted record without
				 * one): the server's next flight is still
				 * the handshake's. */
				t->tls = TLS_DONE;
				t->skip_wr = 1;
			}
		} else {
			size_t k = n - i < t->rremain ? n - i : t->rremain;
			t->rremain = (uint16_t)(t->rremain - k);
			i += k;
		}
		if (t->rhave == 5 && !t->rremain)
			t->rhave = 0;
	}
}

/* ---- the connection ----------------------------------------------------- */

static void start_h2(struct vrt_conn *c, unsigned preface)
{
	c->proto = VRT_CONN_H2;
	vrt_h2_init(&c->u.h2, preface);
}

void vrt_conn_read(struct vrt_conn *c, const uint8_t *p, size_t n,
                   uint64_t now, vrt_conn_emit emit, void *arg)
{
	if (!n)
		return;
	if (c->proto == VRT_CONN_NEW) {
		int proto = 0;
		/* A first read of fewer than 4 bytes may be the start of
		 * HTTP/2's preface or of an HTTP/1.x POST: wait for more. */
		size_t k = 0;
		while (k < n && c->pre + k < 4 && p[k] == "PRI "[c->pre + k])
			k++;
		if (k == n && c->pre + k < 4) {
			c->pre = (uint8_t)(c->pre + k);
			return;
		}
		if (c->pre) {
			unsigned had = c->pre;
			c->pre = 0;
			if (k + had >= 4) {
				/* the preface, its first bytes read already */
				c->proto = VRT_CONN_H2;
				vrt_h2_init(&c->u.h2, 24 - had);
				emit_ev(emit, arg, VRT_NET_PROTO,
				        VRT_NET_F_FOLLOWED, 0,
				        VRT_NET_PROTO_HTTP2, 0);
			} else {
				/* an HTTP/1.x request whose method began
				 * with those bytes (its path is not read) */
				c->proto = VRT_CONN_HTTP1;
				vrt_http_init(&c->u.h1);
				c->u.h1.proto = VRT_HTTP_HTTP1;
				c->u.h1.busy = 1;
				c->probe = 0;
				emit_ev(emit, arg, VRT_NET_REQ_BEGIN, 0, 0, 0, 0);
				return;
			}
			struct h2_ctx x = {emit, arg};
			vrt_h2_read(&c->u.h2, p, n, h2_event, &x);
			return;
		}
		c->proto = (uint8_t)identify(p, n, &proto);
		if (c->proto == VRT_CONN_H2) {
			vrt_h2_init(&c->u.h2, 24);
		} else if (c->proto == VRT_CONN_TURN ||
		           c->proto == VRT_CONN_TLS) {
			memset(&c->u.t, 0, sizeof(c->u.t));
		} else if (c->proto == VRT_CONN_HTTP1) {
			vrt_http_init(&c->u.h1);
			c->u.h1.proto = VRT_HTTP_HTTP1;
		}
		if (proto)
			emit_ev(emit, arg, VRT_NET_PROTO,
			        c->proto == VRT_CONN_QUIET ? 0
			                                   : VRT_NET_F_FOLLOWED,
			        0, (uint64_t)proto, 0);
	}
	switch (c->proto) {
	case VRT_CONN_HTTP1: {
		int proto = 0;
		if (vrt_http_read(&c->u.h1, p, n, &proto) == VRT_HTTP_BEGIN)
			h1_begin(c, p, n, emit, arg);
		return;
	}
	case VRT_CONN_H2: {
		struct h2_ctx x = {emit, arg};
		vrt_h2_read(&c->u.h2, p, n, h2_event, &x);
		return;
	}
	case VRT_CONN_TURN:
		turn_ask(c, now, emit, arg);
		return;
	case VRT_CONN_TLS:
		tls_read(c, p, n, now, emit, arg);
		return;
	default:
		return;
	}
}

/* An HTTP/1.x response ended with status 101: the protocol it switched
 * to takes the rest of the write. */
static void switched(struct vrt_conn *c, const uint8_t *rest, size_t n,
                     uint64_t now, vrt_conn_emit emit, void *arg)
{
	int probe = c->probe;
	if (c->u.h1.h2c) {
		start_h2(c, 24);
		emit_ev(emit, arg, VRT_NET_PROTO, VRT_NET_F_FOLLOWED, 0,
		        VRT_NET_PROTO_HTTP2, 0);
		/* The request that asked goes on as stream 1. */
		vrt_h2_upgraded(&c->u.h2, probe ? VRT_REQPATH_PROBE
		                                : VRT_REQPATH_REQUEST,
		                0);
		emit_ev(emit, arg, VRT_NET_REQ_BEGIN,
		        probe ? VRT_NET_F_PROBE : 0, 1, 0, 0);
		if (n) {
			struct h2_ctx x = {emit, arg};
			vrt_h2_write(&c->u.h2, rest, n, h2_event, &x);
		}
		return;
	}
	c->proto = VRT_CONN_TURN;
	memset(&c->u.t, 0, sizeof(c->u.t));
	c->u.t.last_write = now;
	emit_ev(emit, arg, VRT_NET_PROTO, VRT_NET_F_FOLLOWED, 0,
	        VRT_NET_PROTO_WEBSOCKET, 0);
}

void vrt_conn_write(struct vrt_conn *c, const uint8_t *p, size_t n,
                    uint64_t now, vrt_conn_emit emit, void *arg)
{
	if (!n)
		return;
	switch (c->proto) {
	case VRT_CONN_NEW:
		/* A server that speaks first: no HTTP server. ZMQ's peers
		 * both send their greeting at once (plumbing); otherwise its
		 * client's turns are requests. */
		if (p && p[0] == 0xff) {
			c->proto = VRT_CONN_QUIET;
			emit_ev(emit, arg, VRT_NET_PROTO, 0, 0,
			        VRT_NET_PROTO_ZMTP, 0);
			return;
		}
		c->proto = VRT_CONN_TURN;
		memset(&c->u.t, 0, sizeof(c->u.t));
		c->u.t.last_write = now;
		emit_ev(emit, arg, VRT_NET_PROTO, VRT_NET_F_FOLLOWED, 0,
		        VRT_NET_PROTO_OTHER, 0);
		return;
	case VRT_CONN_HTTP1: {
		unsigned status = 0;
		if (vrt_http_write(&c->u.h1, p, n, &status) != VRT_HTTP_END)
			return;
		emit_ev(emit, arg, VRT_NET_REQ_END,
		        c->probe ? VRT_NET_F_PROBE : 0, 0, status, 0);
		if (status == 101) {
			size_t used = c->u.h1.used < n ? c->u.h1.used : n;
			switched(c, p ? p + used : NULL, p ? n - used : 0, now,
			         emit, arg);
		}
		c->probe = 0;
		return;
	}
	case VRT_CONN_H2: {
		struct h2_ctx x = {emit, arg};
		if (!p) {
			/* Unseen bytes: inside a payload they are skipped;
			 * else the frames are lost from here. */
			struct vrt_h2_frames *f = &c->u.h2.wr;
			if (f->have == 9 && n <= f->remain) {
				f->remain -= (uint32_t)n;
				if (!f->remain) /* the payload's end */
					f->have = 0;
			} else
				c->proto = VRT_CONN_QUIET;
			return;
		}
		vrt_h2_write(&c->u.h2, p, n, h2_event, &x);
		return;
	}
	case VRT_CONN_TURN:
	case VRT_CONN_TLS:
		turn_write(c, now, emit, arg);
		return;
	default:
		return;
	}
}

void vrt_conn_close(struct vrt_conn *c, uint64_t now, vrt_conn_emit emit,
                    void *arg)
{
	if ((c->proto == VRT_CONN_TURN || c->proto == VRT_CONN_TLS) &&
	    c->u.t.st != T_IDLE) {
		struct vrt_turn *t = &c->u.t;
		emit_ev(emit, arg, VRT_NET_REQ_END, VRT_NET_F_INFERRED, 0, 0,
		        t->st == T_ANSWERING && now > t->last_write
		                ? now - t->last_write
		                : 0);
		t->st = T_IDLE;
	}
	c->proto = VRT_CONN_QUIET;
}

unsigned vrt_conn_inflight(const struct vrt_conn *c)
{
	switch (c->proto) {
	case VRT_CONN_HTTP1:
		return c->u.h1.busy && !c->probe;
	case VRT_CONN_H2:
		return vrt_h2_inflight(&c->u.h2);
	case VRT_CONN_TURN:
	case VRT_CONN_TLS:
		return c->u.t.st != T_IDLE;
	default:
		return 0;
	}
}

struct each_ctx {
	void (*fn)(void *arg, uint32_t stream, unsigned flags);
	void *arg;
};

static void each_stream(void *arg, uint32_t stream, int probe)
{
	struct each_ctx *x = arg;
	x->fn(x->arg, stream, probe ? VRT_NET_F_PROBE : 0);
}

void vrt_conn_each_open(const struct vrt_conn *c,
                        void (*fn)(void *arg, uint32_t stream,
                                   unsigned flags),
                        void *arg)
{
	switch (c->proto) {
	case VRT_CONN_HTTP1:
		if (c->u.h1.busy)
			fn(arg, 0, c->probe ? VRT_NET_F_PROBE : 0);
		return;
	case VRT_CONN_H2: {
		struct each_ctx x = {fn, arg};
		vrt_h2_each_open(&c->u.h2, each_stream, &x);
		return;
	}
	case VRT_CONN_TURN:
	case VRT_CONN_TLS:
		if (c->u.t.st != T_IDLE)
			fn(arg, 0, VRT_NET_F_INFERRED);
		return;
	default:
		return;
	}
}
