/*
 * http.c — the HTTP/1.x framing of one connection, read from the bytes the
 * server exchanges (see http.h for what counts as a request in flight).
 *
 * The write side is a byte-at-a-time state machine over the response: the
 * status line (its code), header lines (only Content-Length and
 * Transfer-Encoding are looked at, matched case-insensitively as they
 * stream by, so a header split over several writes is read as well as a
 * whole one), then the body by its framing; body and chunk data are
 * skipped by length, not scanned, so a large response costs a few
 * subtractions per write. The read side looks at the first bytes of a
 * connection once (which protocol) and otherwise only notes that bytes
 * arrived.
 *
 * Pure; callers serialise calls on one state (http.h).
 */
#include "http.h"

#include <vramtrace/trace_format.h>

#include <string.h>

enum rstate {
	RS_VERSION = 0,   /* "HTTP/1.1", up to the space */
	RS_CODE,          /* the status code's digits */
	RS_REASON,        /* the rest of the status line */
	RS_LINE,          /* the start of a header line */
	RS_NAME,          /* a header name, up to ':' */
	RS_VALUE,         /* a value we read (length, encoding) */
	RS_SKIP,          /* the rest of a line we do not read */
	RS_END_LF,        /* CR of the empty line seen */
	RS_BODY,          /* remain body bytes to come */
	RS_CHUNK_SIZE,    /* a chunk's hex size */
	RS_CHUNK_EXT,     /* the rest of the size line */
	RS_CHUNK_DATA,    /* remain chunk bytes to come */
	RS_CHUNK_CRLF,    /* the line end after chunk data */
	RS_TRAILER,       /* the start of a trailer line */
	RS_TRAILER_SKIP,  /* the rest of a trailer line */
	RS_TRAILER_LF,    /* CR of the last empty line seen */
	RS_UNTIL_CLOSE,   /* close-delimited: ends with the connection */
};

enum flag {
	F_HEAD = 1,     /* the request is a HEAD: no body in the answer */
	F_CAND_CL = 2,  /* the header name may still be Content-Length */
	F_CAND_TE = 4,  /* ... Transfer-Encoding */
	F_HAVE_CL = 8,  /* a Content-Length was read */
	F_CHUNKED = 16, /* the last Transfer-Encoding ends in chunked */
	F_DIGITS = 32,  /* the value being read had digits */
	F_IS_CL = 64,   /* the value being read is a Content-Length */
	F_CAND_UP = 128, /* ... Upgrade (and, in RS_VALUE, it is one) */
};

static const char cl_name[] = "content-length";
static const char te_name[] = "transfer-encoding";
static const char chunked[] = "chunked";
static const char up_name[] = "upgrade";
static const char h2c[] = "h2c";
#define CL_LEN  (sizeof(cl_name) - 1)
#define TE_LEN  (sizeof(te_name) - 1)
#define CH_LEN  (sizeof(chunked) - 1)
#define UP_LEN  (sizeof(up_name) - 1)
#define H2C_LEN (sizeof(h2c) - 1)
#define TE_BAD  0xff

void vrt_http_init(struct vrt_http *c)
{
	memset(c, 0, sizeof(*c));
}

static inline unsigned lower(unsigned ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch | 32 : ch;
}

static inline int hexval(unsigned ch)
{
	if (ch >= '0' && ch <= '9')
		return (int)(ch - '0');
	ch = lower(ch);
	if (ch >= 'a' && ch <= 'f')
		return (int)(ch - 'a' + 10);
	return -1;
}

/* Which protocol a connection's first bytes speak: VRT_HTTP_HTTP1, or
 * VRT_HTTP_OTHER with *proto set. An HTTP/1.x request starts with its
 * method, a token of capitals, then a space; a first read that ends
 * inside such a token is taken as one. */
static int identify(const uint8_t *p, size_t got, int *proto)
{
	size_t i = 0;

	if (got >= 4 && !memcmp(p, "PRI ", 4)) {
		*proto = VRT_NET_PROTO_HTTP2;
		return VRT_HTTP_OTHER;
	}
	if (got && (p[0] == 0x16 || p[0] == 0x80)) {
		*proto = VRT_NET_PROTO_TLS;
		return VRT_HTTP_OTHER;
	}
	while (i < got && i < 24 && p[i] >= 'A' && p[i] <= 'Z')
		i++;
	if (i > 0 && (i < got ? p[i] == ' ' : i < 24))
		return VRT_HTTP_HTTP1;
	*proto = VRT_NET_PROTO_OTHER;
	return VRT_HTTP_OTHER;
}

int vrt_http_read(struct vrt_http *c, const uint8_t *p, size_t got,
                  int *proto)
{
	if (c->proto == VRT_HTTP_NEW) {
		if (!got)
			return VRT_HTTP_NONE;
		c->proto = (uint8_t)identify(p, got, proto);
		if (c->proto == VRT_HTTP_OTHER)
			return VRT_HTTP_NOT_HTTP1;
	}
	if (c->proto != VRT_HTTP_HTTP1 || c->busy)
		return VRT_HTTP_NONE;
	c->busy = 1;
	c->rs = RS_VERSION;
	c->flags = got >= 5 && !memcmp(p, "HEAD ", 5) ? F_HEAD : 0;
	c->status = 0;
	c->num = c->remain = 0;
	c->match = c->te = 0;
	c->h2c = 0;
	return VRT_HTTP_BEGIN;
}

/* The empty line after the headers: what follows, by the framing.
 * Returns END when the response has no body. */
static int headers_done(struct vrt_http *c)
{
	if (c->status >= 100 && c->status < 200) {
		if (c->status == 101) {
			/* Another protocol from now on (h2c, WebSocket). */
			c->proto = VRT_HTTP_OTHER;
			return VRT_HTTP_END;
		}
		/* An interim answer (100 Continue): the real one follows. */
		c->rs = RS_VERSION;
		c->status = 0;
		c->flags &= F_HEAD;
		return VRT_HTTP_NONE;
	}
	if ((c->flags & F_HEAD) || c->status == 204 || c->status == 304)
		return VRT_HTTP_END;
	if (c->flags & F_CHUNKED) {
		c->rs = RS_CHUNK_SIZE;
		c->num = 0;
		return VRT_HTTP_NONE;
	}
	if (c->flags & F_HAVE_CL) {
		if (!c->remain)
			return VRT_HTTP_END;
		c->rs = RS_BODY;
		return VRT_HTTP_NONE;
	}
	c->rs = RS_UNTIL_CLOSE;
	return VRT_HTTP_NONE;
}

/* A header value's line ended: keep what it said. */
static void value_done(struct vrt_http *c)
{
	if (c->flags & F_CAND_UP) {
		c->h2c = c->up == H2C_LEN;
		c->flags &= (uint8_t)~F_CAND_UP;
		return;
	}
	if (c->flags & F_IS_CL) {
		if (c->flags & F_DIGITS) {
			c->flags |= F_HAVE_CL;
			c->remain = c->num;
		}
	} else if (c->te == CH_LEN) {
		c->flags |= F_CHUNKED;
	} else {
		c->flags &= (uint8_t)~F_CHUNKED;
	}
	c->flags &= (uint8_t)~(F_DIGITS | F_IS_CL);
}

static void value_byte(struct vrt_http *c, unsigned ch)
{
	if (c->flags & F_CAND_UP) {
		/* "h2c", alone (spaces around it allowed) */
		if (ch == ' ' || ch == '\t' || ch == '\r')
			return;
		if (c->up < H2C_LEN && lower(ch) == (unsigned)h2c[c->up])
			c->up++;
		else
			c->up = 0xff;
		return;
	}
	if (c->flags & F_IS_CL) {
		if (ch >= '0' && ch <= '9' && c->num < (UINT64_MAX - 9) / 10) {
			c->num = c->num * 10 + (ch - '0');
			c->flags |= F_DIGITS;
		} else if (ch != ' ' && ch != '\t' && ch != '\r') {
			c->rs = RS_SKIP; /* not a number: ignored */
			c->flags &= (uint8_t)~(F_DIGITS | F_IS_CL);
		}
		return;
	}
	/* Transfer-Encoding: the last coding must be "chunked". */
	if (ch == ',') {
		c->te = 0;
	} else if (ch == ' ' || ch == '\t' || ch == '\r') {
		if (c->te != 0 && c->te != CH_LEN)
			c->te = TE_BAD;
	} else if (c->te < CH_LEN && lower(ch) == (unsigned)chunked[c->te]) {
		c->te++;
	} else {
		c->te = TE_BAD;
	}
}

int vrt_http_write(struct vrt_http *c, const uint8_t *p, size_t n,
                   unsigned *status)
{
	size_t i = 0;

	if (c->proto == VRT_HTTP_NEW) {
		/* A server that speaks first is no HTTP server. */
		c->proto = VRT_HTTP_OTHER;
		return VRT_HTTP_NONE;
	}
	if (c->proto != VRT_HTTP_HTTP1 || !c->busy)
		return VRT_HTTP_NONE;
	if (!p) { /* body bytes we cannot see */
		if (c->rs == RS_BODY || c->rs == RS_CHUNK_DATA) {
			c->remain -= n < c->remain ? n : c->remain;
			if (c->rs == RS_BODY && !c->remain) {
				i = n;
				goto end;
			}
		}
		return VRT_HTTP_NONE;
	}
	while (i < n) {
		unsigned ch;
		int r;
		switch (c->rs) {
		case RS_BODY:
		case RS_CHUNK_DATA: {
			size_t take = n - i < c->remain ? n - i
			                                : (size_t)c->remain;
			i += take;
			c->remain -= take;
			if (c->remain)
				return VRT_HTTP_NONE;
			if (c->rs == RS_BODY)
				goto end;
			c->rs = RS_CHUNK_CRLF;
			continue;
		}
		case RS_UNTIL_CLOSE:
			return VRT_HTTP_NONE;
		default:
			break;
		}
		ch = p[i++];
		switch (c->rs) {
		case RS_VERSION:
			if (ch == ' ')
				c->rs = RS_CODE;
			else if (ch == '\n')
				c->rs = RS_LINE;
			break;
		case RS_CODE:
			if (ch >= '0' && ch <= '9' && c->status < 1000)
				c->status = (uint16_t)(c->status * 10 +
				                       (ch - '0'));
			else
				c->rs = ch == '\n' ? RS_LINE : RS_REASON;
			break;
		case RS_REASON:
		case RS_SKIP:
			if (ch == '\n')
				c->rs = RS_LINE;
			break;
		case RS_LINE:
			if (ch == '\r') {
				c->rs = RS_END_LF;
				break;
			}
			if (ch == '\n') {
				r = headers_done(c);
				if (r == VRT_HTTP_END)
					goto end;
				break;
			}
			c->rs = RS_NAME;
			c->match = 0;
			c->flags |= F_CAND_CL | F_CAND_TE | F_CAND_UP;
			/* The name's first byte. */
			__attribute__((fallthrough));
		case RS_NAME:
			if (ch == ':') {
				int cl = (c->flags & F_CAND_CL) &&
				         c->match == CL_LEN;
				int te = (c->flags & F_CAND_TE) &&
				         c->match == TE_LEN;
				int up = (c->flags & F_CAND_UP) &&
				         c->match == UP_LEN && c->status == 101;
				c->flags &= (uint8_t)~(F_CAND_CL | F_CAND_TE |
				                       F_CAND_UP);
				c->rs = cl || te || up ? RS_VALUE : RS_SKIP;
				if (up) {
					c->flags |= F_CAND_UP;
					c->up = 0;
				}
				if (cl) {
					c->flags |= F_IS_CL;
					c->num = 0;
				}
				c->te = 0;
				break;
			}
			if (ch == '\n') {
				c->rs = RS_LINE;
				break;
			}
			if (c->match >= CL_LEN ||
			    lower(ch) != (unsigned)cl_name[c->match])
				c->flags &= (uint8_t)~F_CAND_CL;
			if (c->match >= TE_LEN ||
			    lower(ch) != (unsigned)te_name[c->match])
				c->flags &= (uint8_t)~F_CAND_TE;
			if (c->match >= UP_LEN ||
			    lower(ch) != (unsigned)up_name[c->match])
				c->flags &= (uint8_t)~F_CAND_UP;
			if (c->match < 255)
				c->match++;
			break;
		case RS_VALUE:
			if (ch == '\n') {
				value_done(c);
				c->rs = RS_LINE;
			} else {
				value_byte(c, ch);
			}
			break;
		case RS_END_LF:
			if (ch == '\n') {
				r = headers_done(c);
				if (r == VRT_HTTP_END)
					goto end;
			} else {
				c->rs = RS_SKIP;
			}
			break;
		case RS_CHUNK_SIZE: {
			int h = hexval(ch);
			if (h >= 0) {
				if (c->num < (UINT64_MAX >> 4))
					c->num = c->num * 16 + (unsigned)h;
				break;
			}
			if (ch != '\n') {
				c->rs = RS_CHUNK_EXT;
				break;
			}
			/* The size line ended. */
			__attribute__((fallthrough));
		}
		case RS_CHUNK_EXT:
			if (ch != '\n')
				break;
			if (!c->num) {
				c->rs = RS_TRAILER;
			} else {
				c->remain = c->num;
				c->rs = RS_CHUNK_DATA;
			}
			break;
		case RS_CHUNK_CRLF:
			if (ch == '\n') {
				c->rs = RS_CHUNK_SIZE;
				c->num = 0;
			}
			break;
		case RS_TRAILER:
			if (ch == '\n')
				goto end;
			c->rs = ch == '\r' ? RS_TRAILER_LF : RS_TRAILER_SKIP;
			break;
		case RS_TRAILER_SKIP:
			if (ch == '\n')
				c->rs = RS_TRAILER;
			break;
		case RS_TRAILER_LF:
			if (ch == '\n')
				goto end;
			c->rs = RS_TRAILER_SKIP;
			break;
		}
	}
	return VRT_HTTP_NONE;
end:
	*status = c->status;
	c->used = (uint32_t)i;
	c->busy = 0;
	return VRT_HTTP_END;
}
