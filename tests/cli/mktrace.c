/*
 * mktrace — test-only trace writer: builds .vtrace files from a small text
 * script, so the cli tests need no committed binary traces and no GPU.
 *
 *   mktrace SCRIPT      (paths in the script are relative to the cwd)
 *
 * One directive per line; '#' starts a comment. Numbers take 0x, and the
 * suffixes Ki Mi Gi Ti (bytes) or ns us ms s (nanoseconds). APIs are names
 * from trace_format.h (cuMemAlloc_v2) or numbers. In strings '~' is a
 * space. Any record line may end with +HEX: extra payload bytes (as a newer
 * writer would append).
 *
 *   file PATH                      start a new trace file
 *   set version N | set magic STR | set flags N
 *                                  change the next HEADER
 *   header PID PPID WALL MONO HOST EXE [ARG...]
 *   device VENDOR ORDINAL TOTAL NAME UUIDHEX|-
 *   chunk TID TS
 *   alloc DTS API DEV ADDR SIZE [AUX [PHASE]]
 *   free DTS API DEV ADDR [AUX]
 *   repeat DTS COUNT SPAN API FREEAPI DEV SIZE [AUX]
 *       REPEAT record (version 2): COUNT more identical alloc+free
 *       pairs, the frees on DEV with aux 0
 *   map DTS API DEV ADDR SIZE OFFSET HANDLE
 *   unmap DTS API DEV ADDR SIZE
 *   fail DTS API DEV ADDR SIZE ERROR [FREE TOTAL]
 *   meminfo DTS DEV FREE TOTAL
 *       alloc, free, repeat, map, unmap and fail also take s=STACK (a
 *       stack id) and p=PHASE anywhere after the directive. PHASE is
 *       NAME[/SRC]:
 *       NAME a fixed phase name (weights, kv_cache, ...) or an id, SRC
 *       rule (default), ann or inf; or =N for the raw field.
 *   string ID TEXT                 STRING record
 *   frame ID py FILE FUNC LINE     FRAME record (FILE, FUNC: string ids)
 *   frame ID native IP MODULE SYMBOL OFFSET   (MODULE, SYMBOL: string ids)
 *   stack ID PARENT FRAME [PHASE]  STACK record (PHASE as above)
 *   phase ID NAME                  PHASE record
 *   mark DTS LABEL
 *   net DTS listen|accept|close|req_begin|req_end|proto|N FD ARG
 *       [inet|unix|other|N]        the socket's family (appended field)
 *   proc DTS fork|exec|spawn|N PID [TEXT]
 *   request DTS begin|end|N ID
 *   snapshot DTS begin|end|stop|N  SNAPSHOT record
 *   past AT DIRECTIVE...           the event record DIRECTIVE makes,
 *       wrapped in a PAST record that says it happened at AT
 *   watermark TS
 *   trailer END [FLAGS WRITTEN DROPPED NOTE]
 *   raw TYPE HEX                   any record
 *   frame                          (no fields) close the current zstd frame
 *   corrupt                        the current frame gets a bad checksum
 *   bytes HEX                      raw bytes after the current frame
 *   cut N                          drop the file's last N bytes at the end
 *   write PATH TEXT...             a plain text file (e.g. PID.exit)
 *   append PATH TEXT...            one more line of a text file (rules)
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "vramtrace/trace_format.h"

#define MAXTOK 64

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static struct buf frame, file;
static char path[4096];
static int corrupt_frame, lineno;
static size_t cut_bytes;
static uint64_t version = VRT_TRACE_VERSION;
static uint64_t header_flags;
/* The line being read is wrapped in a PAST record happened at past_at. */
static int in_past;
static uint64_t past_at;
static char magic[9] = VRT_TRACE_MAGIC;

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *fmt,
                                                                ...)
{
	va_list ap;
	fprintf(stderr, "mktrace: line %d: ", lineno);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void put(struct buf *b, const void *d, size_t n)
{
	if (!n)
		return;
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			die("out of memory");
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put_u(struct buf *b, uint64_t v)
{
	uint8_t t[VRT_UVARINT_MAX];
	put(b, t, vrt_put_uvarint(t, v));
}

static void put_s(struct buf *b, int64_t v)
{
	uint8_t t[VRT_UVARINT_MAX];
	put(b, t, vrt_put_svarint(t, v));
}

static void put_str(struct buf *b, const char *s)
{
	size_t n = strlen(s), i;
	put_u(b, n);
	for (i = 0; i < n; i++) {
		char c = s[i] == '~' ? ' ' : s[i];
		put(b, &c, 1);
	}
}

static void put_hex(struct buf *b, const char *h)
{
	size_t n = strlen(h), i;
	if (n % 2)
		die("odd hex string '%s'", h);
	for (i = 0; i < n; i += 2) {
		unsigned v;
		if (sscanf(h + i, "%2x", &v) != 1)
			die("bad hex '%s'", h);
		uint8_t c = (uint8_t)v;
		put(b, &c, 1);
	}
}

static int64_t num(const char *s)
{
	static const struct {
		const char *suf;
		int64_t mul;
	} sufs[] = {{"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30},
	            {"Ti", 1LL << 40}, {"ns", 1},         {"us", 1000},
	            {"ms", 1000000},   {"s", 1000000000}, {"", 1}};
	char *end;
	size_t i;
	int64_t v;

	errno = 0;
	v = (int64_t)strtoll(s, &end, 0);
	if (end == s && strncmp(s, "0x", 2))
		die("not a number: '%s'", s);
	if (!strncmp(s, "0x", 2) || !strncmp(s, "0X", 2))
		v = (int64_t)strtoull(s, &end, 16);
	for (i = 0; i < sizeof(sufs) / sizeof(sufs[0]); i++)
		if (!strcmp(end, sufs[i].suf))
			return v * sufs[i].mul;
	die("bad number '%s'", s);
}

static unsigned api(const char *s)
{
	unsigned i;
	if (isdigit((unsigned char)s[0]))
		return (unsigned)num(s);
	for (i = 1; i < 256; i++) {
		const char *n = vrt_api_name(i);
		if (n && !strcmp(n, s))
			return i;
	}
	die("unknown api '%s'", s);
}

/* A phase field: NAME[/SRC] or =RAW (see the header comment). */
static uint64_t phase_spec(const char *s)
{
	char name[64], *slash;
	unsigned id, src = VRT_SRC_RULE, i;

	if (s[0] == '=')
		return (uint64_t)num(s + 1);
	snprintf(name, sizeof(name), "%s", s);
	slash = strchr(name, '/');
	if (slash) {
		*slash++ = '\0';
		if (!strcmp(slash, "rule"))
			src = VRT_SRC_RULE;
		else if (!strcmp(slash, "ann"))
			src = VRT_SRC_ANNOTATION;
		else if (!strcmp(slash, "inf"))
			src = VRT_SRC_INFERRED;
		else
			die("unknown phase source '%s'", slash);
	}
	if (isdigit((unsigned char)name[0])) {
		id = (unsigned)num(name);
	} else {
		for (i = 0; i <= VRT_PHASE_BUILTIN_MAX; i++)
			if (!strcmp(vrt_phase_builtin_name(i), name))
				break;
		if (i > VRT_PHASE_BUILTIN_MAX)
			die("unknown phase '%s'", name);
		id = i;
	}
	return vrt_phase_encode(id, src);
}

/* An op by name (names[i] is op i + 1) or number. */
static uint64_t op(const char *s, const char *const *names, unsigned n)
{
	unsigned i;

	if (isdigit((unsigned char)s[0]))
		return (uint64_t)num(s);
	for (i = 0; i < n; i++)
		if (!strcmp(names[i], s))
			return i + 1;
	die("unknown op '%s'", s);
}

/* Creates the directories leading to path (like mkdir -p). */
static void parents(const char *p)
{
	char d[4096];
	char *s;

	snprintf(d, sizeof(d), "%s", p);
	for (s = strchr(d + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(d, 0755) && errno != EEXIST)
			die("%s: %s", d, strerror(errno));
		*s = '/';
	}
}

static void close_frame(void)
{
	size_t bound, n;
	uint8_t *out;
	ZSTD_CCtx *cc;

	if (!frame.n)
		return;
	bound = ZSTD_compressBound(frame.n);
	out = malloc(bound);
	cc = ZSTD_createCCtx();
	if (!out || !cc)
		die("out of memory");
	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
	n = ZSTD_compress2(cc, out, bound, frame.p, frame.n);
	if (ZSTD_isError(n))
		die("zstd: %s", ZSTD_getErrorName(n));
	if (corrupt_frame)
		out[n - 2] ^= 0x5a; /* inside the 4-byte content checksum */
	put(&file, out, n);
	free(out);
	ZSTD_freeCCtx(cc);
	frame.n = 0;
	corrupt_frame = 0;
}

static void close_file(void)
{
	FILE *f;

	close_frame();
	if (!path[0])
		return;
	if (cut_bytes > file.n)
		die("cut %zu is larger than the file", cut_bytes);
	parents(path);
	f = fopen(path, "wb");
	if (!f ||
	    fwrite(file.p, 1, file.n - cut_bytes, f) != file.n - cut_bytes ||
	    fclose(f))
		die("%s: %s", path, strerror(errno));
	path[0] = '\0';
	file.n = 0;
	cut_bytes = 0;
}

static void record(unsigned type, struct buf *payload)
{
	uint8_t t = (uint8_t)type;
	if (in_past) {
		/* dts, type, at, then the record's own fields after its
		 * dts. */
		struct buf w = {0};
		const uint8_t *q = payload->p;
		uint64_t dts = 0;
		unsigned shift = 0;
		do
			dts |= (uint64_t)(*q & 0x7f) << shift, shift += 7;
		while (*q++ & 0x80);
		put_u(&w, dts);
		put_u(&w, type);
		put_u(&w, past_at);
		put(&w, q, payload->n - (size_t)(q - payload->p));
		in_past = 0;
		record(VRT_REC_PAST, &w);
		free(w.p);
		return;
	}
	put(&frame, &t, 1);
	put_u(&frame, payload->n);
	put(&frame, payload->p, payload->n);
}

/* Number of fields before an optional trailing +HEX. */
static int fields(char **tok, int ntok, struct buf *extra)
{
	extra->n = 0;
	if (ntok > 1 && tok[ntok - 1][0] == '+') {
		put_hex(extra, tok[ntok - 1] + 1);
		return ntok - 1;
	}
	return ntok;
}

static void need(int have, int lo, int hi, const char *what)
{
	if (have < lo || have > hi)
		die("%s takes %d to %d fields, got %d", what, lo - 1, hi - 1,
		    have - 1);
}

static void line(char **tok, int ntok)
{
	static const char *const net_ops[] = {"listen",    "accept",
	                                      "close",     "req_begin",
	                                      "req_end",   "proto"};
	static const char *const kinds[] = {"inet", "unix", "other"};
	static const char *const snap_ops[] = {"begin", "end", "stop"};
	static const char *const proc_ops[] = {"fork", "exec", "spawn"};
	static const char *const req_ops[] = {"begin", "end"};
	struct buf p = {0}, extra = {0};
	const char *d = tok[0];
	uint64_t stack = 0, phase = 0;
	int n, i, j;

	if (!strcmp(d, "past")) {
		if (ntok < 3)
			die("past AT DIRECTIVE...");
		past_at = (uint64_t)num(tok[1]);
		in_past = 1;
		line(tok + 2, ntok - 2);
		if (in_past)
			die("past: '%s' makes no event record", tok[2]);
		return;
	}

	/* s=STACK and p=PHASE options, anywhere after the directive */
	for (i = j = 1; i < ntok; i++) {
		if (!strncmp(tok[i], "s=", 2))
			stack = (uint64_t)num(tok[i] + 2);
		else if (!strncmp(tok[i], "p=", 2))
			phase = phase_spec(tok[i] + 2);
		else
			tok[j++] = tok[i];
	}
	ntok = j;
	n = fields(tok, ntok, &extra);

	if (!strcmp(d, "file")) {
		need(n, 2, 2, d);
		close_file();
		snprintf(path, sizeof(path), "%s", tok[1]);
		version = VRT_TRACE_VERSION;
		memcpy(magic, VRT_TRACE_MAGIC, 9);
	} else if (!strcmp(d, "set")) {
		need(n, 3, 3, d);
		if (!strcmp(tok[1], "version"))
			version = (uint64_t)num(tok[2]);
		else if (!strcmp(tok[1], "magic"))
			snprintf(magic, sizeof(magic), "%-8s", tok[2]);
		else if (!strcmp(tok[1], "flags"))
			header_flags = (uint64_t)num(tok[2]);
		else
			die("unknown setting '%s'", tok[1]);
	} else if (!strcmp(d, "header")) {
		need(n, 7, MAXTOK, d);
		put(&p, magic, 8);
		put_u(&p, version);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, (uint64_t)num(tok[2]));
		put_u(&p, (uint64_t)num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put_u(&p, header_flags);
		header_flags = 0;
		put_str(&p, tok[5]);
		put_str(&p, tok[6]);
		put_u(&p, (uint64_t)(n - 7));
		for (i = 7; i < n; i++)
			put_str(&p, tok[i]);
		put(&p, extra.p, extra.n);
		record(VRT_REC_HEADER, &p);
	} else if (!strcmp(d, "device")) {
		need(n, 6, 6, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, (uint64_t)num(tok[2]));
		put_u(&p, (uint64_t)num(tok[3]));
		put_str(&p, tok[4]);
		if (!strcmp(tok[5], "-")) {
			put_u(&p, 0);
		} else {
			put_u(&p, strlen(tok[5]) / 2);
			put_hex(&p, tok[5]);
		}
		put(&p, extra.p, extra.n);
		record(VRT_REC_DEVICE, &p);
	} else if (!strcmp(d, "chunk")) {
		need(n, 3, 3, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, (uint64_t)num(tok[2]));
		put(&p, extra.p, extra.n);
		record(VRT_REC_CHUNK, &p);
	} else if (!strcmp(d, "alloc")) {
		need(n, 6, 8, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, api(tok[2]));
		put_s(&p, num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put_u(&p, (uint64_t)num(tok[5]));
		put_u(&p, n > 6 ? (uint64_t)num(tok[6]) : 0);
		put_u(&p, stack);
		put_u(&p, n > 7 ? (uint64_t)num(tok[7]) : phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_ALLOC, &p);
	} else if (!strcmp(d, "free")) {
		need(n, 5, 6, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, api(tok[2]));
		put_s(&p, num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put_u(&p, n > 5 ? (uint64_t)num(tok[5]) : 0);
		put_u(&p, stack);
		put_u(&p, phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_FREE, &p);
	} else if (!strcmp(d, "repeat")) {
		need(n, 8, 9, d);
		put_u(&p, (uint64_t)num(tok[1])); /* dts */
		put_u(&p, (uint64_t)num(tok[2])); /* count */
		put_u(&p, (uint64_t)num(tok[3])); /* span */
		put_u(&p, 1);                     /* period */
		put_u(&p, api(tok[4]));
		put_u(&p, api(tok[5]));
		put_s(&p, num(tok[6])); /* device */
		put_s(&p, num(tok[6])); /* free device */
		put_u(&p, (uint64_t)num(tok[7]));
		put_u(&p, n > 8 ? (uint64_t)num(tok[8]) : 0);
		put_u(&p, 0); /* free aux */
		put_u(&p, stack);
		put_u(&p, phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_REPEAT, &p);
	} else if (!strcmp(d, "map")) {
		need(n, 8, 8, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, api(tok[2]));
		put_s(&p, num(tok[3]));
		for (i = 4; i < 8; i++)
			put_u(&p, (uint64_t)num(tok[i]));
		put_u(&p, stack);
		put_u(&p, phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_MAP, &p);
	} else if (!strcmp(d, "unmap")) {
		need(n, 6, 6, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, api(tok[2]));
		put_s(&p, num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put_u(&p, (uint64_t)num(tok[5]));
		put_u(&p, stack);
		put_u(&p, phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_UNMAP, &p);
	} else if (!strcmp(d, "fail")) {
		need(n, 7, 9, d);
		if (n == 8)
			die("fail: give both FREE and TOTAL");
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, api(tok[2]));
		put_s(&p, num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put_u(&p, (uint64_t)num(tok[5]));
		put_u(&p, 0);
		put_u(&p, (uint64_t)num(tok[6]));
		put_u(&p, n == 9);
		put_u(&p, n == 9 ? (uint64_t)num(tok[7]) : 0);
		put_u(&p, n == 9 ? (uint64_t)num(tok[8]) : 0);
		put_u(&p, stack);
		put_u(&p, phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_FAIL, &p);
	} else if (!strcmp(d, "meminfo")) {
		need(n, 5, 5, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_s(&p, num(tok[2]));
		put_u(&p, (uint64_t)num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		put(&p, extra.p, extra.n);
		record(VRT_REC_MEMINFO, &p);
	} else if (!strcmp(d, "string")) {
		need(n, 3, 3, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_str(&p, tok[2]);
		put(&p, extra.p, extra.n);
		record(VRT_REC_STRING, &p);
	} else if (!strcmp(d, "frame") && n > 1) {
		put_u(&p, (uint64_t)num(tok[1]));
		if (n > 2 && !strcmp(tok[2], "py")) {
			need(n, 6, 6, "frame py");
			put_u(&p, VRT_FRAME_PYTHON);
			for (i = 3; i < 6; i++)
				put_u(&p, (uint64_t)num(tok[i]));
		} else if (n > 2 && !strcmp(tok[2], "native")) {
			need(n, 7, 7, "frame native");
			put_u(&p, VRT_FRAME_NATIVE);
			for (i = 3; i < 7; i++)
				put_u(&p, (uint64_t)num(tok[i]));
		} else {
			die("frame ID py|native ...");
		}
		put(&p, extra.p, extra.n);
		record(VRT_REC_FRAME, &p);
	} else if (!strcmp(d, "stack")) {
		need(n, 4, 5, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, (uint64_t)num(tok[2]));
		put_u(&p, (uint64_t)num(tok[3]));
		put_u(&p, n > 4 ? phase_spec(tok[4]) : phase);
		put(&p, extra.p, extra.n);
		record(VRT_REC_STACK, &p);
	} else if (!strcmp(d, "phase")) {
		need(n, 3, 3, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_str(&p, tok[2]);
		put(&p, extra.p, extra.n);
		record(VRT_REC_PHASE, &p);
	} else if (!strcmp(d, "mark")) {
		need(n, 3, 3, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_str(&p, tok[2]);
		put(&p, extra.p, extra.n);
		record(VRT_REC_MARK, &p);
	} else if (!strcmp(d, "net")) {
		need(n, 5, 6, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, op(tok[2], net_ops, 6));
		put_u(&p, (uint64_t)num(tok[3]));
		put_u(&p, (uint64_t)num(tok[4]));
		if (n > 5)
			put_u(&p, op(tok[5], kinds, 3));
		put(&p, extra.p, extra.n);
		record(VRT_REC_NET, &p);
	} else if (!strcmp(d, "snapshot")) {
		need(n, 3, 3, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, op(tok[2], snap_ops, 3));
		put(&p, extra.p, extra.n);
		record(VRT_REC_SNAPSHOT, &p);
	} else if (!strcmp(d, "proc")) {
		need(n, 4, 5, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, op(tok[2], proc_ops, 3));
		put_u(&p, (uint64_t)num(tok[3]));
		put_str(&p, n > 4 ? tok[4] : "");
		put(&p, extra.p, extra.n);
		record(VRT_REC_PROC, &p);
	} else if (!strcmp(d, "request")) {
		need(n, 4, 4, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p, op(tok[2], req_ops, 2));
		put_u(&p, (uint64_t)num(tok[3]));
		put(&p, extra.p, extra.n);
		record(VRT_REC_REQUEST, &p);
	} else if (!strcmp(d, "watermark")) {
		need(n, 2, 2, d);
		put_u(&p, (uint64_t)num(tok[1]));
		record(VRT_REC_WATERMARK, &p);
	} else if (!strcmp(d, "trailer")) {
		need(n, 2, 6, d);
		put_u(&p, (uint64_t)num(tok[1]));
		put_u(&p,
		      n > 2 ? (uint64_t)num(tok[2]) : VRT_TRAILER_CLEAN_EXIT);
		put_u(&p, n > 3 ? (uint64_t)num(tok[3]) : 0);
		put_u(&p, n > 4 ? (uint64_t)num(tok[4]) : 0);
		put_str(&p, n > 5 ? tok[5] : "");
		put(&p, extra.p, extra.n);
		record(VRT_REC_TRAILER, &p);
	} else if (!strcmp(d, "raw")) {
		need(n, 3, 3, d);
		put_hex(&p, tok[2]);
		record((unsigned)num(tok[1]), &p);
	} else if (!strcmp(d, "frame")) { /* no fields: see above */
		close_frame();
	} else if (!strcmp(d, "corrupt")) {
		corrupt_frame = 1;
	} else if (!strcmp(d, "bytes")) {
		need(n, 2, 2, d);
		close_frame();
		put_hex(&file, tok[1]);
	} else if (!strcmp(d, "cut")) {
		need(n, 2, 2, d);
		cut_bytes = (size_t)num(tok[1]);
	} else if (!strcmp(d, "write") || !strcmp(d, "append")) {
		FILE *f;
		need(n, 2, MAXTOK, d);
		parents(tok[1]);
		f = fopen(tok[1], d[0] == 'w' ? "w" : "a");
		if (!f)
			die("%s: %s", tok[1], strerror(errno));
		for (i = 2; i < n; i++)
			fprintf(f, "%s%s", tok[i], i + 1 < n ? " " : "\n");
		fclose(f);
	} else {
		die("unknown directive '%s'", d);
	}
	free(p.p);
	free(extra.p);
}

int main(int argc, char **argv)
{
	char l[4096];
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: mktrace SCRIPT\n");
		return 2;
	}
	f = fopen(argv[1], "r");
	if (!f) {
		fprintf(stderr, "mktrace: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (fgets(l, sizeof(l), f)) {
		char *tok[MAXTOK], *s, *save = NULL;
		int ntok = 0;

		lineno++;
		if ((s = strchr(l, '#')))
			*s = '\0';
		for (s = strtok_r(l, " \t\r\n", &save); s && ntok < MAXTOK;
		     s = strtok_r(NULL, " \t\r\n", &save))
			tok[ntok++] = s;
		if (ntok)
			line(tok, ntok);
	}
	fclose(f);
	close_file();
	return 0;
}
