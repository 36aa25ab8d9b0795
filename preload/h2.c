/*
 * h2.c — HTTP/2 streams of one connection, from its frames (see h2.h for
 * what counts as a request in flight).
 *
 * Both directions are read frame by frame: the 9-byte header is collected
 * across writes, the payload skipped by its length. Only the client's
 * HEADERS and CONTINUATION payloads are looked into, by a byte-at-a-time
 * HPACK walker (RFC 7541 section 6) that reads integers, strings and, for
 * Huffman-coded strings, the canonical code of the RFC's appendix B, bit by
 * bit from its tables (common/hpack.c). A walker that meets something it cannot
 * read (an integer too long, the EOS symbol) gives up paths for the rest
 * of the connection; streams are still counted, since their frames need
 * no HPACK.
 *
 * Pure; callers serialise calls on one state (h2.h).
 */
#include "h2.h"

#include "hpack.h"
#include "reqpath.h"

#include <string.h>

enum ftype {
	F_DATA = 0,
	F_HEADERS = 1,
	F_RST_STREAM = 3,
	F_GOAWAY = 7,
	F_CONTINUATION = 9,
};

enum fflag {
	FL_END_STREAM = 0x1,
	FL_END_HEADERS = 0x4,
	FL_PADDED = 0x8,
	FL_PRIORITY = 0x20,
};

/* Walker states. */
enum hstate {
	HS_REP = 0,  /* a representation's first byte */
	HS_IDX,      /* integer: an indexed field's index */
	HS_NAMEIDX,  /* integer: a literal's name index */
	HS_SIZE,     /* integer: a table size update */
	HS_NLEN0,    /* a literal name's length, first byte */
	HS_NLEN,     /* ... continued */
	HS_NAME,     /* the name's bytes */
	HS_VLEN0,    /* the value's length, first byte */
	HS_VLEN,     /* ... continued */
	HS_VAL,      /* the value's bytes */
	HS_LOST,     /* gave up reading this connection's header blocks */
};

enum rep { REP_INC = 1, REP_NOINC = 2 };

enum field { FD_OTHER = 0, FD_PATH = 1, FD_METHOD = 2 };

/* Literal name candidates (cand bits) and value candidates of :method. */
#define C_PATH   1
#define C_METHOD 2
#define C_GET    1
#define C_HEAD   2

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof(preface) - 1)

void vrt_h2_init(struct vrt_h2 *h, unsigned skip_preface)
{
	memset(h, 0, sizeof(*h));
	h->preface = (uint8_t)(skip_preface < PREFACE_LEN ? skip_preface
	                                                  : PREFACE_LEN);
}

/* ---- open streams ------------------------------------------------------- */

static int find_open(const struct vrt_h2 *h, uint32_t stream)
{
	for (unsigned i = 0; i < h->nopen; i++)
		if ((h->open[i] & ~VRT_H2_PROBE_BIT) == stream)
			return (int)i;
	return -1;
}

static void begin_stream(struct vrt_h2 *h, uint32_t stream, int cls,
                         int get, uint32_t hash, const char *path,
                         size_t plen, vrt_h2_emit emit, void *arg)
{
	struct vrt_h2_event e = {.begin = 1,
	                         .stream = stream,
	                         .cls = cls,
	                         .get = get,
	                         .hash = hash,
	                         .path = path,
	                         .path_len = plen};
	if (find_open(h, stream) >= 0)
		return;
	if (h->nopen < VRT_H2_STREAMS)
		h->open[h->nopen++] =
		        stream | (cls != VRT_REQPATH_REQUEST ? VRT_H2_PROBE_BIT
		                                             : 0);
	else if (h->unpaired < UINT16_MAX && cls == VRT_REQPATH_REQUEST)
		h->unpaired++;
	emit(arg, &e);
}

static void end_stream(struct vrt_h2 *h, uint32_t stream, unsigned status,
                       vrt_h2_emit emit, void *arg)
{
	struct vrt_h2_event e = {.begin = 0, .stream = stream, .status = status};
	int i = find_open(h, stream);

	if (i >= 0) {
		if (h->open[i] & VRT_H2_PROBE_BIT)
			e.cls = VRT_REQPATH_PROBE;
		h->open[i] = h->open[--h->nopen];
	} else if (h->unpaired && (stream & 1)) {
		/* Perhaps one begun while the table was full; the reader
		 * pairs it by its stream id. */
		h->unpaired--;
	} else {
		return; /* ended already, or never begun */
	}
	emit(arg, &e);
}

void vrt_h2_upgraded(struct vrt_h2 *h, int cls, int get)
{
	(void)get;
	if (h->nopen < VRT_H2_STREAMS)
		h->open[h->nopen++] =
		        1u | (cls != VRT_REQPATH_REQUEST ? VRT_H2_PROBE_BIT
		                                         : 0);
	/* The client's stream ids continue after 1. */
}

void vrt_h2_each_open(const struct vrt_h2 *h,
                      void (*fn)(void *arg, uint32_t stream, int probe),
                      void *arg)
{
	for (unsigned i = 0; i < h->nopen; i++)
		fn(arg, h->open[i] & ~VRT_H2_PROBE_BIT,
		   (h->open[i] & VRT_H2_PROBE_BIT) != 0);
}

unsigned vrt_h2_inflight(const struct vrt_h2 *h)
{
	unsigned n = h->unpaired;
	for (unsigned i = 0; i < h->nopen; i++)
		n += !(h->open[i] & VRT_H2_PROBE_BIT);
	return n;
}

/* ---- HPACK walker --------------------------------------------------------- */

static void block_start(struct vrt_h2 *h, uint32_t stream, int is_new)
{
	h->block = stream;
	h->block_new = (uint8_t)is_new;
	h->got_path = h->ptext = h->get = 0;
	h->pcls = VRT_REQPATH_REQUEST;
	h->phash = 0;
	h->plen = 0;
	h->shift = 0;
	if (h->hs != HS_LOST)
		h->hs = HS_REP;
}

/* A field of the static table or a dynamic entry named it: what it is. */
static void static_field(struct vrt_h2 *h, uint32_t idx)
{
	h->field = FD_OTHER;
	if (idx == 2 || idx == 3) {
		h->field = FD_METHOD;
	} else if (idx == 4 || idx == 5) {
		h->field = FD_PATH;
	} else if (idx >= 62) {
		uint32_t ins = h->inserts - (idx - 62);
		for (unsigned i = 0; i < VRT_H2_PATHS; i++)
			if (h->pins[i] && h->pins[i] == ins)
				h->field = FD_PATH;
	}
}

/* An indexed field (the whole field from the table). */
static void indexed(struct vrt_h2 *h, uint32_t idx)
{
	if (idx == 2) {
		h->get = 1;
	} else if (idx == 4 || idx == 5) {
		const char *p = idx == 4 ? "/" : "/index.html";
		size_t n = strlen(p);
		memcpy(h->path, p, n);
		h->plen = (uint8_t)n;
		h->phash = vrt_reqpath_hash(p, n);
		h->got_path = h->ptext = 1;
		h->pcls = (uint8_t)vrt_reqpath_class(p, n, h->get);
	} else if (idx >= 62) {
		uint32_t ins = h->inserts - (idx - 62);
		for (unsigned i = 0; i < VRT_H2_PATHS; i++) {
			if (h->pins[i] && h->pins[i] == ins) {
				h->got_path = 1;
				h->ptext = 0;
				h->phash = h->phashes[i];
				h->pcls = h->pclss[i];
			}
		}
	}
}

/* One decoded byte of a literal name or value. */
static void str_char(struct vrt_h2 *h, unsigned c)
{
	if (h->hs == HS_NAME) {
		static const char p[] = ":path", m[] = ":method";
		unsigned k = h->nlen;
		if (k >= sizeof(p) - 1 || (unsigned)p[k] != c)
			h->cand &= (uint8_t)~C_PATH;
		if (k >= sizeof(m) - 1 || (unsigned)m[k] != c)
			h->cand &= (uint8_t)~C_METHOD;
		if (h->nlen < 255)
			h->nlen++;
		return;
	}
	if (h->field == FD_PATH) {
		if (h->plen < VRT_H2_PATH)
			h->path[h->plen++] = (char)c;
		h->phash = vrt_reqpath_hash_byte(h->phash, c);
	} else if (h->field == FD_METHOD) {
		static const char g[] = "GET", hd[] = "HEAD";
		unsigned k = h->nlen;
		if (k >= sizeof(g) - 1 || (unsigned)g[k] != c)
			h->cand &= (uint8_t)~C_GET;
		if (k >= sizeof(hd) - 1 || (unsigned)hd[k] != c)
			h->cand &= (uint8_t)~C_HEAD;
		if (h->nlen < 255)
			h->nlen++;
	}
}

static void lost(struct vrt_h2 *h)
{
	h->hs = HS_LOST;
	h->got_path = 0;
}

/* A Huffman-coded byte of a string. */
static void huff_byte(struct vrt_h2 *h, unsigned b)
{
	for (int bit = 7; bit >= 0; bit--) {
		h->hcode = h->hcode << 1 | ((b >> bit) & 1);
		h->hlen++;
		if (h->hlen >= 5 && h->hlen <= 30) {
			uint32_t i = h->hcode - vrt_hpack_hfirst[h->hlen];
			if (h->hcode >= vrt_hpack_hfirst[h->hlen] && i < vrt_hpack_hcount[h->hlen]) {
				unsigned sym = vrt_hpack_hsyms[vrt_hpack_hoffset[h->hlen] + i];
				if (sym == 256) {
					lost(h);
					return;
				}
				str_char(h, sym);
				h->hcode = 0;
				h->hlen = 0;
			}
		} else if (h->hlen > 30) {
			lost(h);
			return;
		}
	}
}

/* A literal's name or value string ended. */
static void name_done(struct vrt_h2 *h)
{
	h->field = FD_OTHER;
	if ((h->cand & C_PATH) && h->nlen == 5)
		h->field = FD_PATH;
	else if ((h->cand & C_METHOD) && h->nlen == 7)
		h->field = FD_METHOD;
}

static void value_start(struct vrt_h2 *h)
{
	if (h->field == FD_PATH) {
		h->plen = 0;
		h->phash = VRT_REQPATH_HASH_INIT;
	} else if (h->field == FD_METHOD) {
		h->nlen = 0;
		h->cand = C_GET | C_HEAD;
	}
}

static void value_done(struct vrt_h2 *h)
{
	if (h->field == FD_METHOD) {
		h->get = ((h->cand & C_GET) && h->nlen == 3) ||
		         ((h->cand & C_HEAD) && h->nlen == 4);
	} else if (h->field == FD_PATH) {
		h->got_path = h->ptext = 1;
		h->pcls = (uint8_t)vrt_reqpath_class(h->path, h->plen, h->get);
	}
	if (h->rep == REP_INC) {
		h->inserts++;
		if (h->field == FD_PATH) {
			/* Replace the oldest remembered path. */
			unsigned o = 0;
			for (unsigned i = 1; i < VRT_H2_PATHS; i++)
				if (h->pins[i] < h->pins[o])
					o = i;
			h->pins[o] = h->inserts;
			h->phashes[o] = h->phash;
			h->pclss[o] = h->pcls;
		}
	}
	h->hs = HS_REP;
}

/* An integer of the walker is complete: act on it. */
static void int_done(struct vrt_h2 *h, uint32_t v)
{
	switch (h->hs) {
	case HS_IDX:
		indexed(h, v);
		h->hs = HS_REP;
		return;
	case HS_SIZE:
		h->hs = HS_REP;
		return;
	case HS_NAMEIDX:
		if (v == 0) {
			h->hs = HS_NLEN0;
		} else {
			static_field(h, v);
			value_start(h);
			h->hs = HS_VLEN0;
		}
		return;
	case HS_NLEN:
	case HS_NLEN0:
		h->srem = v;
		h->nlen = 0;
		h->cand = C_PATH | C_METHOD;
		h->hs = HS_NAME;
		if (!v) {
			name_done(h);
			value_start(h);
			h->hs = HS_VLEN0;
		}
		return;
	case HS_VLEN:
	case HS_VLEN0:
		h->srem = v;
		h->hs = HS_VAL;
		if (!v)
			value_done(h);
		return;
	default:
		return;
	}
}

/* The first byte of an integer with an n-bit prefix (the state says which
 * integer it is). */
static void int_first(struct vrt_h2 *h, unsigned b, unsigned nbits)
{
	uint32_t mask = (1u << nbits) - 1;
	if ((b & mask) < mask) {
		int_done(h, b & mask);
		return;
	}
	h->ival = mask;
	h->shift = 0;
	/* HS_NLEN0/HS_VLEN0 continue as HS_NLEN/HS_VLEN; others as they are */
	if (h->hs == HS_NLEN0)
		h->hs = HS_NLEN;
	else if (h->hs == HS_VLEN0)
		h->hs = HS_VLEN;
	h->shift = 0x80; /* marks "continuing" (shift kept in the low bits) */
}

static void hpack_byte(struct vrt_h2 *h, unsigned b)
{
	if (h->shift & 0x80) { /* an integer's continuation byte */
		unsigned s = h->shift & 0x7f;
		if (s > 28) {
			lost(h);
			return;
		}
		h->ival += (uint32_t)(b & 0x7f) << s;
		if (b & 0x80) {
			h->shift = (uint8_t)(0x80 | (s + 7));
			return;
		}
		h->shift = 0;
		int_done(h, h->ival);
		return;
	}
	switch (h->hs) {
	case HS_REP:
		if (b & 0x80) {
			h->hs = HS_IDX;
			int_first(h, b, 7);
		} else if (b & 0x40) {
			h->rep = REP_INC;
			h->hs = HS_NAMEIDX;
			int_first(h, b, 6);
		} else if (b & 0x20) {
			h->hs = HS_SIZE;
			int_first(h, b, 5);
		} else {
			h->rep = REP_NOINC;
			h->hs = HS_NAMEIDX;
			int_first(h, b, 4);
		}
		return;
	case HS_NLEN0:
	case HS_VLEN0:
		h->huff = (uint8_t)((b & 0x80) != 0);
		h->hcode = 0;
		h->hlen = 0;
		int_first(h, b, 7);
		return;
	case HS_NAME:
	case HS_VAL:
		if (h->huff)
			huff_byte(h, b);
		else
			str_char(h, b);
		if (h->hs == HS_LOST)
			return;
		if (--h->srem)
			return;
		if (h->hs == HS_NAME) {
			name_done(h);
			value_start(h);
			h->hs = HS_VLEN0;
		} else {
			value_done(h);
		}
		return;
	default:
		return;
	}
}

/* ---- frames ------------------------------------------------------------- */

static inline uint32_t be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t be31(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	        (uint32_t)p[2] << 8 | p[3]) &
	       0x7fffffffu;
}

/* The client's header block of the frame ended (END_HEADERS). */
static void block_end(struct vrt_h2 *h, vrt_h2_emit emit, void *arg)
{
	if (h->got_path && h->ptext) /* :method may come after :path */
		h->pcls = (uint8_t)vrt_reqpath_class(h->path, h->plen, h->get);
	if (h->block_new)
		begin_stream(h, h->block,
		             h->got_path ? h->pcls : VRT_REQPATH_REQUEST, h->get,
		             h->got_path ? h->phash : 0,
		             h->got_path && h->ptext ? h->path : NULL,
		             h->got_path && h->ptext ? h->plen : 0, emit, arg);
	h->block = 0;
	h->block_new = 0;
}

/* A frame header was read on the client's side. */
static void rd_header(struct vrt_h2 *h, vrt_h2_emit emit, void *arg)
{
	struct vrt_h2_frames *f = &h->rd;
	uint8_t type = f->hdr[3], flags = f->hdr[4];
	uint32_t stream = be31(f->hdr + 5);

	f->skip = f->pad = 0;
	if (type == F_HEADERS) {
		block_start(h, stream,
		            (stream & 1) && find_open(h, stream) < 0);
		f->skip = (uint8_t)(((flags & FL_PADDED) ? 1 : 0) +
		                    ((flags & FL_PRIORITY) ? 5 : 0));
	} else if (type == F_RST_STREAM && stream) {
		end_stream(h, stream, 0, emit, arg);
	}
}

/* The client's frame ended. */
static void rd_end(struct vrt_h2 *h, vrt_h2_emit emit, void *arg)
{
	uint8_t type = h->rd.hdr[3], flags = h->rd.hdr[4];
	if ((type == F_HEADERS || type == F_CONTINUATION) &&
	    (flags & FL_END_HEADERS) && h->block)
		block_end(h, emit, arg);
}

/* Payload bytes of the client's frame (p[0..n), n <= remain). */
static void rd_payload(struct vrt_h2 *h, const uint8_t *p, size_t n)
{
	struct vrt_h2_frames *f = &h->rd;
	uint8_t type = f->hdr[3], flags = f->hdr[4];
	size_t i = 0;

	if (type != F_HEADERS && type != F_CONTINUATION)
		return;
	if (!h->block)
		return;
	if (type == F_HEADERS && f->skip &&
	    be24(f->hdr) - f->remain == 0 && (flags & FL_PADDED)) {
		/* The first payload byte is the pad length. */
		f->pad = p[0];
	}
	for (; i < n; i++) {
		uint32_t left = f->remain - (uint32_t)i; /* incl. this byte */
		if (f->skip) {
			f->skip--;
			continue;
		}
		if (left <= f->pad)
			break; /* padding */
		if (h->hs != HS_LOST)
			hpack_byte(h, p[i]);
	}
}

/* A frame header was read on the server's side. */
static void wr_header(struct vrt_h2 *h, vrt_h2_emit emit, void *arg)
{
	struct vrt_h2_frames *f = &h->wr;
	uint8_t type = f->hdr[3], flags = f->hdr[4];
	uint32_t stream = be31(f->hdr + 5);

	f->goaway = 0;
	if ((type == F_HEADERS || type == F_DATA) && (flags & FL_END_STREAM) &&
	    stream)
		end_stream(h, stream, 200, emit, arg);
	else if (type == F_RST_STREAM && stream)
		end_stream(h, stream, 0, emit, arg);
}

static void wr_end(struct vrt_h2 *h, vrt_h2_emit emit, void *arg)
{
	struct vrt_h2_frames *f = &h->wr;
	if (f->hdr[3] != F_GOAWAY || be24(f->hdr) < 4)
		return;
	/* Streams after the last one it processes were refused. */
	uint32_t last = f->goaway & 0x7fffffffu;
	for (unsigned i = h->nopen; i-- > 0;) {
		uint32_t s = h->open[i] & ~VRT_H2_PROBE_BIT;
		if (s > last)
			end_stream(h, s, 0, emit, arg);
	}
}

static void wr_payload(struct vrt_h2 *h, const uint8_t *p, size_t n)
{
	struct vrt_h2_frames *f = &h->wr;
	uint32_t done = be24(f->hdr) - f->remain; /* payload bytes before p */
	if (f->hdr[3] != F_GOAWAY)
		return;
	for (size_t i = 0; i < n && done + i < 4; i++)
		f->goaway = f->goaway << 8 | p[i];
}

/* Runs the frame reader of one direction over p[0..n). */
static void frames(struct vrt_h2 *h, struct vrt_h2_frames *f,
                   const uint8_t *p, size_t n, int rd, vrt_h2_emit emit,
                   void *arg)
{
	size_t i = 0;
	while (i < n) {
		if (f->have < 9) {
			f->hdr[f->have++] = p[i++];
			if (f->have < 9)
				continue;
			f->remain = be24(f->hdr);
			if (rd)
				rd_header(h, emit, arg);
			else
				wr_header(h, emit, arg);
		} else {
			size_t k = n - i < f->remain ? n - i : f->remain;
			if (rd)
				rd_payload(h, p + i, k);
			else
				wr_payload(h, p + i, k);
			f->remain -= (uint32_t)k;
			i += k;
		}
		if (f->remain == 0) {
			if (rd)
				rd_end(h, emit, arg);
			else
				wr_end(h, emit, arg);
			f->have = 0;
		}
	}
}

void vrt_h2_read(struct vrt_h2 *h, const uint8_t *p, size_t n,
                 vrt_h2_emit emit, void *arg)
{
	if (h->preface) {
		size_t k = n < h->preface ? n : h->preface;
		h->preface = (uint8_t)(h->preface - k);
		p += k;
		n -= k;
	}
	frames(h, &h->rd, p, n, 1, emit, arg);
}

void vrt_h2_write(struct vrt_h2 *h, const uint8_t *p, size_t n,
                  vrt_h2_emit emit, void *arg)
{
	frames(h, &h->wr, p, n, 0, emit, arg);
}
