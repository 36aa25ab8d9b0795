/*
 * Unit test of the HTTP/1.x framing tracker (preload/http.c): when a
 * request begins and when its response is complete, for Content-Length,
 * chunked (with extensions and trailers), no-body answers (HEAD, 204, 304),
 * interim 100 Continue, 101 upgrades, close-delimited bodies, keep-alive
 * reuse, and connections of other protocols (HTTP/2 preface, TLS, ZMQ's
 * ZMTP greeting, a server that speaks first). Every response is also fed
 * split at each byte position and one byte at a time: the answer must not
 * depend on how the server cut its writes. TAP output.
 */
#include "http.h"

#include <vramtrace/trace_format.h>

#include <stdio.h>
#include <string.h>

#include "../analyzer/tap.h"

/* EQ evaluates its arguments twice: calls with effects go through here. */
static void eqi(long got, long want, const char *name)
{
	EQ(got, want, name);
}

static int begin(struct vrt_http *c, const char *req)
{
	int proto = 0;
	return vrt_http_read(c, (const uint8_t *)req, strlen(req), &proto);
}

/* Feeds resp in pieces of at most step bytes (0: split once at cut);
 * returns the byte count after which END came (0 when it never did). */
static size_t feed(struct vrt_http *c, const char *resp, size_t step,
                   size_t cut, unsigned *status)
{
	size_t n = strlen(resp), i = 0;

	while (i < n) {
		size_t k = step ? step : (i < cut ? cut - i : n - i);
		if (k > n - i)
			k = n - i;
		if (vrt_http_write(c, (const uint8_t *)resp + i, k, status) ==
		    VRT_HTTP_END) {
			/* END comes with the write holding the last byte. */
			return i + k;
		}
		i += k;
	}
	return 0;
}

/* One request/response on a fresh connection, cut every way: END must
 * come with the write that holds the response's last byte (ends: 1), or
 * never (ends: 0), with status want_status. */
static void exchange(const char *name, const char *req, const char *resp,
                     int ends, unsigned want_status)
{
	size_t n = strlen(resp), cut, bad_cut = 0, step;
	size_t want = ends ? n : 0;
	int all = 1;
	unsigned status = 0;

	for (cut = 0; cut <= n; cut++) {
		struct vrt_http c;
		vrt_http_init(&c);
		status = 0;
		if (begin(&c, req) != VRT_HTTP_BEGIN ||
		    feed(&c, resp, 0, cut, &status) != want ||
		    (ends && status != want_status)) {
			all = 0;
			bad_cut = cut;
			break;
		}
	}
	ok(all, "%s: every two-write split (first bad: %zu)", name, bad_cut);
	for (step = 1; step <= 3; step++) {
		struct vrt_http c;
		size_t got;
		vrt_http_init(&c);
		begin(&c, req);
		status = 0;
		got = feed(&c, resp, step, 0, &status);
		ok(got == want && (!ends || status == want_status),
		   "%s: %zu byte(s) per write (ended after %zu, status %u)",
		   name, step, got, status);
	}
}

static void keep_alive(void)
{
	struct vrt_http c;
	unsigned st = 0;
	int proto = 0;
	const char *r = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

	vrt_http_init(&c);
	eqi(begin(&c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"),
	   VRT_HTTP_BEGIN, "first bytes begin a request");
	eqi(begin(&c, "Content-Length: 2\r\n\r\n{}"), VRT_HTTP_NONE,
	   "more request bytes: the same request");
	eqi(vrt_http_write(&c, (const uint8_t *)r, strlen(r), &st),
	   VRT_HTTP_END, "the response ends it");
	eqi(st, 200, "status 200");
	eqi(c.busy, 0, "idle keep-alive connection counts zero");
	eqi(vrt_http_write(&c, (const uint8_t *)r, strlen(r), &st),
	   VRT_HTTP_NONE, "a write on an idle connection changes nothing");
	eqi(vrt_http_read(&c, (const uint8_t *)"G", 1, &proto),
	   VRT_HTTP_BEGIN, "the next request on it begins again");
	eqi(vrt_http_write(&c, NULL, 5, &st), VRT_HTTP_NONE,
	   "unseen bytes before the headers are ignored");
}

static void protocols(void)
{
	static const struct {
		const char *name;
		const char *bytes;
		size_t len;
		int proto;
	} cases[] = {
	        {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24,
	         VRT_NET_PROTO_HTTP2},
	        {"TLS client hello", "\x16\x03\x01\x02\x00\x01", 6,
	         VRT_NET_PROTO_TLS},
	        {"ZMTP greeting", "\xff\x00\x00\x00\x00\x00\x00\x00\x01\x7f",
	         10, VRT_NET_PROTO_OTHER},
	        {"lower-case method", "get / HTTP/1.1\r\n", 16,
	         VRT_NET_PROTO_OTHER},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vrt_http c;
		int proto = 0;
		unsigned st;
		vrt_http_init(&c);
		eqi(vrt_http_read(&c, (const uint8_t *)cases[i].bytes,
		                 cases[i].len, &proto),
		   VRT_HTTP_NOT_HTTP1, cases[i].name);
		eqi(proto, cases[i].proto, "  ... and says which");
		eqi(vrt_http_read(&c, (const uint8_t *)"GET / HTTP/1.1\r\n", 16,
		                 &proto),
		   VRT_HTTP_NONE, "  ... later bytes never count");
		eqi(vrt_http_write(&c, (const uint8_t *)"HTTP/1.1 200 OK\r\n\r\n",
		                  19, &st),
		   VRT_HTTP_NONE, "  ... nor writes");
	}
	{
		struct vrt_http c;
		int proto = 0;
		unsigned st;
		vrt_http_init(&c);
		eqi(vrt_http_write(&c, (const uint8_t *)"\xff\x00", 2, &st),
		   VRT_HTTP_NONE, "a server that writes first");
		eqi(vrt_http_read(&c, (const uint8_t *)"GET / HTTP/1.1\r\n", 16,
		                 &proto),
		   VRT_HTTP_NONE, "  ... is not followed");
	}
	{
		struct vrt_http c;
		int proto = 0;
		vrt_http_init(&c);
		eqi(vrt_http_read(&c, (const uint8_t *)"DEL", 3, &proto),
		   VRT_HTTP_BEGIN, "a first read inside the method token");
	}
}

int main(void)
{
	const char *get = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *cl = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                 "Content-Length: 11\r\n\r\n{\"ok\":true}";
	const char *cl_caps = "HTTP/1.1 201 Created\r\nCONTENT-LENGTH:3\r\n"
	                      "Server: t\r\n\r\nabc";
	const char *sse = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream"
	                  "\r\ntransfer-encoding: chunked\r\n\r\n"
	                  "e\r\ndata: token1\n\n\r\n"
	                  "f\r\ndata: token22\n\n\r\n"
	                  "D\r\ndata: [DONE]\n\r\n"
	                  "0\r\n\r\n";
	const char *ext = "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked"
	                  "\r\n\r\n4;name=v\r\nwiki\r\n0\r\nExpires: never"
	                  "\r\nX: y\r\n\r\n";
	const char *not_last = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, "
	                       "gzip\r\n\r\n0\r\n\r\n";
	const char *cont = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service "
	                   "Unavailable\r\nContent-Length: 4\r\n\r\nbusy";
	const char *nobody = "HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n"
	                     "\r\n";
	const char *notmod = "HTTP/1.1 304 Not Modified\r\n\r\n";
	const char *head = "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
	const char *close_del = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n"
	                        "\r\nstreamed until the connection closes";
	const char *upgrade = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
	                      "websocket\r\n\r\n";
	const char *lf_only = "HTTP/1.1 200 OK\nContent-Length: 2\n\nhi";

	exchange("Content-Length", get, cl, 1, 200);
	exchange("header names in capitals", get, cl_caps, 1,
	         201);
	exchange("chunked SSE stream", get, sse, 1, 200);
	exchange("chunk extensions and trailers", get, ext, 1, 200);
	exchange("chunked not the last coding: close-delimited", get,
	         not_last, 0, 0);
	exchange("100 Continue, then the answer", get, cont, 1,
	         503);
	exchange("204: no body whatever the length says", get, nobody,
	         1, 204);
	exchange("304: no body", get, notmod, 1, 304);
	exchange("HEAD: no body", "HEAD / HTTP/1.1\r\n\r\n", head, 1, 200);
	exchange("close-delimited body", get, close_del, 0, 0);
	exchange("bare LF line ends", get, lf_only, 1, 200);
	exchange("101 Switching Protocols", get, upgrade, 1, 101);
	{
		struct vrt_http c;
		unsigned st = 0;
		int proto = 0;
		vrt_http_init(&c);
		begin(&c, get);
		vrt_http_write(&c, (const uint8_t *)upgrade, strlen(upgrade),
		               &st);
		eqi(vrt_http_read(&c, (const uint8_t *)"GET", 3, &proto),
		   VRT_HTTP_NONE, "after an upgrade nothing counts");
	}
	{
		/* A large body sent in part by sendfile (unseen bytes). */
		const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n"
		                "\r\n";
		struct vrt_http c;
		unsigned st = 0;
		vrt_http_init(&c);
		begin(&c, get);
		eqi(vrt_http_write(&c, (const uint8_t *)h, strlen(h), &st),
		   VRT_HTTP_NONE, "headers of a 1 MB body");
		eqi(vrt_http_write(&c, NULL, 999999, &st), VRT_HTTP_NONE,
		   "all but one byte of the body");
		eqi(vrt_http_write(&c, (const uint8_t *)"x", 1, &st),
		   VRT_HTTP_END, "the last byte ends it");
	}
	keep_alive();
	protocols();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
