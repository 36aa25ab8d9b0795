/*
 * Unit tests of load.c's streaming loader on traces built in memory:
 * release at watermarks with interleaved chunks of several threads, the
 * merge of two files on equal timestamps (file order), late events (a
 * writer that broke its watermark promise: delivered, counted), REPEAT
 * records (version 2; skipped in version 1), BATCH records (version 4:
 * every decoding rule, the first event's time as a run's key, malformed
 * ones), device_remap, memory held
 * bounded by watermarks, a randomized comparison with a stable sort, small
 * caller buffers, errors found when a record is decoded, a cut last
 * frame, and a process that began in standby (PAST facts, a snapshot's
 * connection state). TAP output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "load/load.h"
#include "vramtrace/trace_format.h"

#include "../tap.h"

/* ---- a small trace writer ----------------------------------------------- */

struct bb {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct bb *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void pu(struct bb *b, uint64_t v)
{
	uint8_t t[VRT_UVARINT_MAX];
	put(b, t, vrt_put_uvarint(t, v));
}

static void ps(struct bb *b, int64_t v)
{
	pu(b, vrt_zigzag(v));
}

static void pstr(struct bb *b, const char *s)
{
	pu(b, strlen(s));
	put(b, s, strlen(s));
}

/* The trace being built: records go into the open frame; end_frame()
 * compresses it onto the file. */
static struct bb frame, file, pl;

static void rec(unsigned type)
{
	uint8_t ty = (uint8_t)type;
	put(&frame, &ty, 1);
	pu(&frame, pl.n);
	put(&frame, pl.p, pl.n);
	pl.n = 0;
}

static void end_frame(void)
{
	size_t cap = ZSTD_compressBound(frame.n), n;
	uint8_t *z = malloc(cap);
	if (!z)
		abort();
	n = ZSTD_compress(z, cap, frame.n ? frame.p : (const uint8_t *)"",
	                  frame.n, 1);
	if (ZSTD_isError(n))
		abort();
	put(&file, z, n);
	free(z);
	frame.n = 0;
}

static void new_file(void)
{
	frame.n = file.n = pl.n = 0;
}

/* The flags of the next header written (then 0 again). */
static uint64_t header_flags;

static void header_v(uint64_t pid, const char *host, unsigned version,
                     int64_t wall, int64_t mono)
{
	put(&pl, VRT_TRACE_MAGIC, VRT_TRACE_MAGIC_LEN);
	pu(&pl, version);
	pu(&pl, pid);
	pu(&pl, 1);
	pu(&pl, (uint64_t)wall);
	pu(&pl, (uint64_t)mono);
	pu(&pl, header_flags);
	header_flags = 0;
	pstr(&pl, host);
	pstr(&pl, "/bin/x");
	pu(&pl, 1);
	pstr(&pl, "x");
	rec(VRT_REC_HEADER);
}

static void header(uint64_t pid)
{
	header_v(pid, "h", VRT_TRACE_VERSION, 0, 0);
}

static void device(unsigned vendor, unsigned ordinal)
{
	pu(&pl, vendor);
	pu(&pl, ordinal);
	pu(&pl, 80ull << 30);
	pstr(&pl, "card");
	pu(&pl, 0);
	rec(VRT_REC_DEVICE);
}

static void chunk(uint32_t tid, int64_t ts)
{
	pu(&pl, tid);
	pu(&pl, (uint64_t)ts);
	rec(VRT_REC_CHUNK);
}

static void alloc_s(uint64_t dts, int64_t dev, uint64_t addr, uint64_t size,
                    uint64_t stack, uint64_t phase)
{
	pu(&pl, dts);
	pu(&pl, VRT_API_cuMemAlloc_v2);
	ps(&pl, dev);
	pu(&pl, addr);
	pu(&pl, size);
	pu(&pl, 0);
	pu(&pl, stack);
	pu(&pl, phase);
	rec(VRT_REC_ALLOC);
}

/* A FREE of addr on device 0, no stack, no phase. */
static void free_rec(uint64_t dts, uint64_t addr)
{
	pu(&pl, dts);
	pu(&pl, VRT_API_cuMemFree_v2);
	ps(&pl, 0);
	pu(&pl, addr);
	pu(&pl, 0);
	pu(&pl, 0);
	pu(&pl, 0);
	rec(VRT_REC_FREE);
}

static void alloc(uint64_t dts, uint64_t addr)
{
	alloc_s(dts, 0, addr, 4096, 0, 0);
}

static void mark(uint64_t dts, const char *label)
{
	pu(&pl, dts);
	pstr(&pl, label);
	rec(VRT_REC_MARK);
}

static void watermark(int64_t w)
{
	pu(&pl, (uint64_t)w);
	rec(VRT_REC_WATERMARK);
}

static void trailer(int64_t end)
{
	pu(&pl, (uint64_t)end);
	pu(&pl, VRT_TRAILER_CLEAN_EXIT);
	pu(&pl, 0);
	pu(&pl, 0);
	pstr(&pl, "");
	rec(VRT_REC_TRAILER);
}

/* ---- loading -------------------------------------------------------------- */

struct evs {
	struct vrt_event *e;
	size_t n, cap;
};

static void evs_add(struct evs *v, const struct vrt_event *e, size_t n)
{
	if (v->n + n > v->cap) {
		v->cap = (v->n + n) * 2 + 16;
		v->e = realloc(v->e, v->cap * sizeof(*v->e));
		if (!v->e)
			abort();
	}
	memcpy(v->e + v->n, e, n * sizeof(*e));
	v->n += n;
}

/* Drains an opened stream max events per call into v. */
static enum vrt_load_status drain(struct vrt_trace *t, struct evs *v,
                                  size_t max, struct vrt_load_error *err)
{
	struct vrt_event *buf = malloc(max * sizeof(*buf));
	enum vrt_load_status st;
	size_t n;

	if (!buf)
		abort();
	do {
		st = vrt_load_next(t, buf, max, &n, err);
		if (!st)
			evs_add(v, buf, n);
	} while (!st && n);
	free(buf);
	return st;
}

/* Loads the built file (from memory) max events per call. */
static enum vrt_load_status load_mem(struct vrt_trace *t, struct evs *v,
                                     size_t max, struct vrt_load_error *err)
{
	enum vrt_load_status st;

	memset(t, 0, sizeof(*t));
	memset(v, 0, sizeof(*v));
	memset(err, 0, sizeof(*err));
	st = vrt_load_open_buffer(t, "mem.vtrace", file.p, file.n, err);
	return st ? st : drain(t, v, max, err);
}

static char tmpdir[] = "/tmp/vrt-test-load-XXXXXX";

/* Loads the files written to tmpdir, max events per call. */
static enum vrt_load_status load_dir(struct vrt_trace *t, struct evs *v,
                                     size_t max, struct vrt_load_error *err)
{
	char *paths[1] = {tmpdir};
	enum vrt_load_status st;

	memset(t, 0, sizeof(*t));
	memset(v, 0, sizeof(*v));
	st = vrt_load_open(t, paths, 1, err);
	return st ? st : drain(t, v, max, err);
}

static void write_file(const char *name)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(file.p, 1, file.n, f) != file.n || fclose(f))
		abort();
}

static void clear_dir(void)
{
	char path[256];
	const char *names[] = {"a.vtrace", "b.vtrace", "c.vtrace"};
	for (size_t i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
}

static int addrs_are(const struct evs *v, const uint64_t *want, size_t n)
{
	if (v->n != n)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (v->e[i].addr != want[i])
			return 0;
	return 1;
}

/* ---- tests ----------------------------------------------------------------- */

/* Three threads' chunks interleave in one frame; the watermark releases
 * what is below it, the rest waits for the next frame's events. */
static void test_watermark_threads(void)
{
	static const uint64_t want[] = {1, 31, 21, 2, 22, 3, 23, 24, 4, 5};
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	size_t maxes[] = {1, 3, 4096};

	new_file();
	header(7);
	chunk(1, 1000);
	alloc(0, 1);   /* 1000 */
	alloc(100, 2); /* 1100 */
	alloc(100, 3); /* 1200 */
	chunk(2, 1050);
	alloc(0, 21);   /* 1050 */
	alloc(100, 22); /* 1150 */
	alloc(100, 23); /* 1250 */
	chunk(3, 1000);
	alloc(0, 31); /* 1000: after thread 1's (record order) */
	watermark(1160);
	end_frame();
	chunk(1, 1300);
	alloc(0, 4);   /* 1300 */
	alloc(100, 5); /* 1400 */
	chunk(2, 1260);
	alloc(0, 24); /* 1260 */
	watermark(2000);
	end_frame();
	trailer(3000);
	end_frame();
	for (size_t k = 0; k < 3; k++) {
		enum vrt_load_status st = load_mem(&t, &v, maxes[k], &err);
		EQ(st, VRT_LOAD_OK, "watermark: loads");
		ok(addrs_are(&v, want, 10),
		   "watermark: time order, ties in record order (max %zu)",
		   maxes[k]);
		EQ(t.events_total, 10, "watermark: events_total");
		EQ(t.events_late, 0, "watermark: nothing late");
		EQ(t.procs[0].events, 10, "watermark: process events");
		ok(t.events_held_max < 10,
		   "watermark: released before the next frame (held %llu)",
		   (unsigned long long)t.events_held_max);
		EQ(t.procs[0].truncated, 0, "watermark: complete file");
		vrt_load_free(&t);
		free(v.e);
	}
}

/* Two files with equal timestamps: the first file's event goes first. */
static void test_two_files_ties(void)
{
	static const uint64_t want[] = {10, 1, 2, 11, 3, 12};
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	enum vrt_load_status st;

	clear_dir();
	new_file();
	header(1);
	chunk(1, 500);
	alloc(0, 1); /* 500 */
	alloc(0, 2); /* 500 */
	watermark(600);
	end_frame();
	chunk(1, 700);
	alloc(0, 3); /* 700 */
	trailer(900);
	end_frame();
	write_file("a.vtrace");
	new_file();
	header(2);
	chunk(9, 500);
	alloc(0, 11); /* 500 */
	chunk(8, 400);
	alloc(0, 10); /* 400 */
	watermark(650);
	end_frame();
	chunk(9, 700);
	alloc(0, 12); /* 700: after file a's */
	trailer(900);
	end_frame();
	write_file("b.vtrace");

	st = load_dir(&t, &v, 2, &err);
	EQ(st, VRT_LOAD_OK, "two files: load");
	ok(addrs_are(&v, want, 6), "two files: ties go in file order");
	EQ(t.nprocs, 2, "two files: two processes");
	ok(v.n == 6 && v.e[0].proc == 1 && v.e[1].proc == 0,
	   "two files: events name their process");
	vrt_load_free(&t);
	free(v.e);

	clear_dir();
}

/* An event below what was already delivered (its writer broke the
 * watermark promise) is delivered anyway, as soon as it is read. */
static void test_late(void)
{
	enum vrt_load_status st;
	static const uint64_t want[] = {1, 9, 2};
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;

	new_file();
	header(3);
	chunk(1, 1000);
	alloc(0, 1);    /* 1000 */
	alloc(1000, 2); /* 2000 */
	watermark(1500);
	end_frame();
	chunk(2, 900);
	alloc(0, 9); /* 900: below what went out */
	watermark(3000);
	end_frame();
	trailer(3000);
	end_frame();
	st = load_mem(&t, &v, 64, &err);
	EQ(st, VRT_LOAD_OK, "late: loads");
	ok(addrs_are(&v, want, 3), "late: delivered, not dropped");
	EQ(t.events_late, 1, "late: counted");
	vrt_load_free(&t);
	free(v.e);
}

/* A NET record (kind 0: the field left out, as older writers do); past:
 * wrapped in a PAST record happened at `at`. */
static void net_rec(uint64_t dts, unsigned op, uint64_t fd, uint64_t arg,
                    unsigned kind, int past, uint64_t at)
{
	pu(&pl, dts);
	if (past) {
		pu(&pl, VRT_REC_NET);
		pu(&pl, at);
	}
	pu(&pl, op);
	pu(&pl, fd);
	pu(&pl, arg);
	if (kind)
		pu(&pl, kind);
	rec(past ? VRT_REC_PAST : VRT_REC_NET);
}

static void snapshot_rec(uint64_t dts, unsigned op)
{
	pu(&pl, dts);
	pu(&pl, op);
	rec(VRT_REC_SNAPSHOT);
}

/* A process that began in standby: its kept facts (PAST: a listen, the
 * first probe with what the process held then, a record of a kind this
 * reader does not know) and a snapshot with a live allocation, an open
 * connection and a request in flight; then events as usual. The facts
 * come with the times they happened, flagged, older than events already
 * delivered from another file and still not counted late; the snapshot's
 * connection state is flagged; the NET kind field is read. */
static void test_past(void)
{
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	const struct vrt_event *e;
	size_t i;
	int listen = 0, probe = 0, acc = 0, req = 0, alloc_snap = 0, end = 0;

	clear_dir();
	/* another process, recording all along: events at 100..5000 */
	new_file();
	header_v(1, "h", VRT_TRACE_VERSION, 0, 100);
	chunk(1, 100);
	alloc(0, 0x10);
	alloc(4900, 0x20);
	watermark(5000);
	end_frame();
	trailer(9000);
	end_frame();
	write_file("a.vtrace");
	/* the standby one: header at its first event (200), facts kept at
	 * 300 and 400, written with the snapshot at 6000 */
	new_file();
	header_flags = VRT_HEADER_STANDBY;
	header_v(2, "h", VRT_TRACE_VERSION, 0, 200);
	watermark(200);
	end_frame();
	device(VRT_VENDOR_CUDA, 0);
	chunk(7, 6000);
	net_rec(0, VRT_NET_LISTEN, 5, 8080, VRT_NET_KIND_INET, 1, 300);
	pu(&pl, 1);
	pu(&pl, VRT_REC_MEMINFO);
	pu(&pl, 400);
	ps(&pl, 0);
	pu(&pl, 60ull << 30); /* free */
	pu(&pl, 80ull << 30); /* total */
	pu(&pl, 0);           /* stack */
	pu(&pl, VRT_API_cuMemGetInfo_v2);
	pu(&pl, 4ull << 30); /* held */
	rec(VRT_REC_PAST);
	pu(&pl, 1);
	pu(&pl, 99); /* an inner kind from a newer writer: only its time */
	pu(&pl, 450);
	pu(&pl, 12345);
	rec(VRT_REC_PAST);
	snapshot_rec(1, 1);
	alloc_s(1, 0, 0x30, 4ull << 30, 0, 0);
	net_rec(1, VRT_NET_ACCEPT, 9, 5, VRT_NET_KIND_INET, 0, 0);
	net_rec(1, VRT_NET_REQ_BEGIN, 9, 0, 0, 0, 0);
	snapshot_rec(1, 2);
	net_rec(10, VRT_NET_REQ_END, 9, 200, 0, 0, 0);
	watermark(7000);
	end_frame();
	trailer(9000);
	end_frame();
	write_file("b.vtrace");
	{
		char path[sizeof(tmpdir) + 16];
		char *paths[] = {path};
		snprintf(path, sizeof(path), "%s", tmpdir);
		memset(&t, 0, sizeof(t));
		memset(&v, 0, sizeof(v));
		st = vrt_load_open(&t, paths, 1, &err);
		if (st == VRT_LOAD_OK)
			st = drain(&t, &v, 3, &err);
	}
	EQ(st, VRT_LOAD_OK, "past: loads");
	EQ(t.events_late, 0, "past: kept facts are not late events");
	for (i = 0; i < v.n; i++) {
		e = &v.e[i];
		if (e->kind == VRT_EV_NET && e->aux == VRT_NET_LISTEN)
			listen = e->ts == 300 && (e->flags & VRT_EV_PAST) &&
			         e->extra == VRT_NET_KIND_INET && e->size == 8080;
		if (e->kind == VRT_EV_MEMINFO)
			probe = e->ts == 400 && (e->flags & VRT_EV_PAST) &&
			        e->aux == (4ull << 30) &&
			        e->addr == (60ull << 30);
		if (e->kind == VRT_EV_ALLOC && e->addr == 0x30)
			alloc_snap = (e->flags & VRT_EV_SNAP) != 0;
		if (e->kind == VRT_EV_NET && e->aux == VRT_NET_ACCEPT)
			acc = (e->flags & VRT_EV_SNAP) && e->ts == 6005 &&
			      e->extra == VRT_NET_KIND_INET;
		if (e->kind == VRT_EV_NET && e->aux == VRT_NET_REQ_BEGIN)
			req = (e->flags & VRT_EV_SNAP) && !e->extra;
		if (e->kind == VRT_EV_NET && e->aux == VRT_NET_REQ_END)
			end = !(e->flags & (VRT_EV_SNAP | VRT_EV_PAST)) &&
			      e->ts == 6017 && e->size == 200;
	}
	ok(listen, "past: the listen at the time it happened, with its "
	           "family and port");
	ok(probe, "past: the first probe, with the bytes held then");
	ok(alloc_snap && acc && req,
	   "past: the snapshot's allocation, connection and request are "
	   "its state (clock kept over the unknown kind)");
	ok(end, "past: events after the snapshot are ordinary");
	ok(t.nprocs == 2 && t.procs[0].started_in_standby +
	                                t.procs[1].started_in_standby ==
	                        1,
	   "past: one process began in standby (its header says so)");
	vrt_load_free(&t);
	free(v.e);
	clear_dir();
}

static void repeat_rec(uint64_t dts, uint64_t count, uint64_t stack)
{
	pu(&pl, dts);
	pu(&pl, count);
	pu(&pl, 500); /* span */
	pu(&pl, 1);   /* period */
	pu(&pl, VRT_API_cuMemAlloc_v2);
	pu(&pl, VRT_API_cuMemFree_v2);
	ps(&pl, 0);       /* device */
	ps(&pl, 0);       /* free device */
	pu(&pl, 1 << 20); /* size */
	pu(&pl, 7);       /* aux */
	pu(&pl, 0);       /* free aux */
	pu(&pl, stack);
	pu(&pl, 0); /* phase: the stack's */
	rec(VRT_REC_REPEAT);
}

/* An ALLOC_C / FREE_C address delta and size as format `ver` has them
 * (packed from version 3). */
static void pdelta(unsigned ver, int64_t d)
{
	uint64_t v;
	if (ver < 3) {
		ps(&pl, d);
		return;
	}
	if (!vrt_pack_s(d, &v))
		abort(); /* the test only uses values that pack */
	pu(&pl, v);
}

static void psize(unsigned ver, uint64_t size)
{
	uint64_t v;
	if (ver < 3) {
		pu(&pl, size);
		return;
	}
	if (!vrt_pack_u(size, &v))
		abort();
	pu(&pl, v);
}

/* A REPEAT of a cycle of two pairs, and the compact ALLOC_C / FREE_C
 * records against the chunk's templates, at every caller buffer size, in
 * format versions 2 and 3. */
static void test_compact_v(unsigned ver)
{
	static const size_t sizes[] = {1, 2, 3, 64};
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		new_file();
		header_v(4, "h", ver, 0, 0);
		device(VRT_VENDOR_CUDA, 0);
		chunk(1, 100);
		alloc_s(0, 0, 0x1000, 4096, 0, 0);  /* 100 */
		pu(&pl, 5); /* ALLOC_C at 105: 0x1000 + 0x100, 8192 */
		pdelta(ver, 0x100);
		psize(ver, 8192);
		pu(&pl, 0);
		rec(VRT_REC_ALLOC_C);
		free_rec(5, 0x1000); /* FREE at 110 of 0x1000 */
		pu(&pl, 5); /* FREE_C at 115 of 0x1100 */
		pdelta(ver, 0x100);
		rec(VRT_REC_FREE_C);
		pu(&pl, 100); /* REPEAT at 215: 5 pairs over 2 templates */
		pu(&pl, 5);
		pu(&pl, 90);
		pu(&pl, 2);
		for (int k = 0; k < 2; k++) {
			pu(&pl, VRT_API_cuMemAlloc_v2);
			pu(&pl, VRT_API_cuMemFree_v2);
			ps(&pl, 0);
			ps(&pl, 0);
			pu(&pl, k ? 200 : 100);
			pu(&pl, 0);
			pu(&pl, 0);
			pu(&pl, 0);
			pu(&pl, 0);
		}
		rec(VRT_REC_REPEAT);
		pu(&pl, 5); /* FREE_C after a REPEAT: the state stands */
		pdelta(ver, 0x100);
		rec(VRT_REC_FREE_C);
		watermark(5000);
		trailer(5000);
		end_frame();
		st = load_mem(&t, &v, sizes[i], &err);
		ok(st == VRT_LOAD_OK, "compact v%u: loads", ver);
		ok(v.n == 7, "compact v%u: 7 events (buffer %zu)", ver, sizes[i]);
		if (v.n == 7) {
			ok(v.e[1].kind == VRT_EV_ALLOC && v.e[1].addr == 0x1100 &&
			           v.e[1].size == 8192 && v.e[1].ts == 105 &&
			           v.e[1].api == VRT_API_cuMemAlloc_v2,
			   "compact v%u: ALLOC_C takes the template and the delta",
			   ver);
			ok(v.e[3].kind == VRT_EV_FREE && v.e[3].addr == 0x1100 &&
			           v.e[3].api == VRT_API_cuMemFree_v2 &&
			           v.e[3].ts == 115,
			   "compact v%u: FREE_C takes the template and the delta",
			   ver);
			ok(v.e[4].kind == VRT_EV_REPEAT && v.e[4].addr == 3 &&
			           v.e[4].size == 100 && v.e[5].addr == 2 &&
			           v.e[5].size == 200 && v.e[4].ts == 215 &&
			           v.e[5].ts == 215,
			   "compact v%u: a REPEAT's cycle, count spread over it "
			   "(buffer %zu)", ver, sizes[i]);
			ok(v.e[6].addr == 0x1200,
			   "compact v%u: the address register survives a REPEAT",
			   ver);
		}
		ok(t.procs[0].events == 15,
		   "compact v%u: 2 x count for the REPEAT", ver);
		vrt_load_free(&t);
		free(v.e);
	}
}

/* Packed values (version 3): every value round-trips, those that cannot
 * pack say so, and a trace with large and negative deltas decodes. */
static void test_packed(void)
{
	static const uint64_t us[] = {0, 1, 2, 3, 512, 20ull << 20,
	                              (1ull << 58) - 1, 1ull << 63,
	                              ((1ull << 58) - 1) << 6};
	static const int64_t ss[] = {0, 1, -1, 512, -512, -(32ll << 20),
	                             INT64_MIN, -(1ll << 57),
	                             (1ll << 57) - 1};
	int good = 1;
	uint64_t p;
	for (size_t i = 0; i < sizeof(us) / sizeof(us[0]); i++)
		good &= vrt_pack_u(us[i], &p) && vrt_unpack_u(p) == us[i];
	for (size_t i = 0; i < sizeof(ss) / sizeof(ss[0]); i++)
		good &= vrt_pack_s(ss[i], &p) && vrt_unpack_s(p) == ss[i];
	ok(good, "packed: values round-trip");
	ok(!vrt_pack_u(UINT64_MAX, &p) && !vrt_pack_u((1ull << 58) | 1, &p) &&
	           !vrt_pack_s(INT64_MAX, &p) && !vrt_pack_s(INT64_MAX - 1, &p) &&
	           !vrt_pack_s(-(1ll << 57) - 1, &p),
	   "packed: values of more than 58 significant bits do not pack");
	ok(vrt_pack_u(20ull << 20, &p) && p < 1u << 14 &&
	           vrt_pack_s(-(32ll << 20), &p) && p < 1u << 7,
	   "packed: 20 MiB and -32 MiB take two bytes and one");
	uint64_t x = 0x9e3779b97f4a7c15ull;
	good = 1;
	for (int i = 0; i < 100000 && good; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		uint64_t v = x >> (x & 63);
		v <<= (x >> 6) & 63;
		if (vrt_pack_u(v, &p))
			good &= vrt_unpack_u(p) == v;
		if (vrt_pack_s((int64_t)v, &p))
			good &= vrt_unpack_s(p) == (int64_t)v;
	}
	ok(good, "packed: random values round-trip when they pack");

	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	new_file();
	header_v(4, "h", 3, 0, 0);
	device(VRT_VENDOR_CUDA, 0);
	chunk(1, 100);
	alloc_s(0, 0, 0x7f0000000000ull, 4096, 0, 0);
	pu(&pl, 1); /* ALLOC_C 64 MiB lower, 20 MiB */
	pdelta(3, -(64ll << 20));
	psize(3, 20ull << 20);
	pu(&pl, 0);
	rec(VRT_REC_ALLOC_C);
	pu(&pl, 1); /* ALLOC_C back up 2^40 + 512 */
	pdelta(3, (1ll << 40) + 512 + (64ll << 20));
	psize(3, 0);
	pu(&pl, 0);
	rec(VRT_REC_ALLOC_C);
	watermark(5000);
	trailer(5000);
	end_frame();
	st = load_mem(&t, &v, 64, &err);
	EQ(st, VRT_LOAD_OK, "packed: loads");
	ok(v.n == 3 && v.e[1].addr == 0x7f0000000000ull - (64ull << 20) &&
	           v.e[1].size == 20ull << 20 &&
	           v.e[2].addr == 0x7f0000000000ull + (1ull << 40) + 512 &&
	           v.e[2].size == 0,
	   "packed: negative and large deltas, sizes");
	vrt_load_free(&t);
	free(v.e);
}

static void test_compact(void)
{
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;

	test_compact_v(2);
	test_compact_v(3);
	test_packed();

	/* Any other record resets the state: a FREE_C after a MARK has no
	 * template. */
	new_file();
	header(4);
	device(VRT_VENDOR_CUDA, 0);
	chunk(1, 100);
	free_rec(0, 0x1000);
	pu(&pl, 1);
	pstr(&pl, "m");
	rec(VRT_REC_MARK);
	pu(&pl, 1);
	ps(&pl, 0x100);
	rec(VRT_REC_FREE_C);
	trailer(500);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_ERR_RECORD, "compact: no template after a reset");
	vrt_load_free(&t);
	free(v.e);
}

static void test_repeat(void)
{
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	const struct vrt_event *e;

	new_file();
	header(4);
	device(VRT_VENDOR_CUDA, 0);
	pu(&pl, 1);
	pstr(&pl, "model.py");
	rec(VRT_REC_STRING);
	pu(&pl, 2);
	pstr(&pl, "load");
	rec(VRT_REC_STRING);
	pu(&pl, 1); /* frame 1: python */
	pu(&pl, VRT_FRAME_PYTHON);
	pu(&pl, 1);
	pu(&pl, 2);
	pu(&pl, 10);
	rec(VRT_REC_FRAME);
	pu(&pl, 1); /* stack 1: root -> frame 1, weights */
	pu(&pl, 0);
	pu(&pl, 1);
	pu(&pl, vrt_phase_encode(VRT_PHASE_weights, VRT_SRC_RULE));
	rec(VRT_REC_STACK);
	chunk(1, 100);
	alloc_s(0, 0, 0x1000, 1 << 20, 1, 0);
	free_rec(10, 0x1000);
	repeat_rec(1000, 5, 1);
	watermark(5000);
	trailer(5000);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_OK, "repeat: loads");
	EQ(v.n, 3, "repeat: one event for the record");
	e = v.n == 3 ? &v.e[2] : NULL;
	ok(e && e->kind == VRT_EV_REPEAT, "repeat: kind");
	ok(e && e->api == VRT_API_cuMemAlloc_v2 &&
	           e->extra == VRT_API_cuMemFree_v2,
	   "repeat: alloc api, free api in extra");
	ok(e && e->addr == 5 && e->size == (1 << 20) && e->aux == 7,
	   "repeat: count in addr, size, aux");
	ok(e && e->ts == 1110 && e->device == 0, "repeat: time and device");
	ok(e && e->stack && e->stack == v.e[0].stack &&
	           e->phase == VRT_PHASE_weights,
	   "repeat: stack and its phase, as an ALLOC's");
	EQ(t.procs[0].events, 12, "repeat: counts 2 x count events");
	vrt_load_free(&t);
	free(v.e);

	/* Version 1 has no REPEAT: a record of that type is skipped. */
	new_file();
	header_v(4, "h", 1, 0, 0);
	chunk(1, 100);
	alloc(0, 1);
	repeat_rec(10, 5, 0);
	alloc(10, 2);
	trailer(500);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_OK, "repeat v1: loads");
	ok(v.n == 2 && v.e[1].addr == 2 && v.e[1].ts == 110,
	   "repeat v1: skipped (no time taken either)");
	EQ(t.procs[0].events, 2, "repeat v1: not counted");
	vrt_load_free(&t);
	free(v.e);
}

static void test_device_remap(void)
{
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;

	new_file();
	header(5);
	device(VRT_VENDOR_CUDA, 1);
	device(VRT_VENDOR_CUDA, 0);
	chunk(1, 100);
	alloc_s(0, 1, 0x1, 10, 0, 0);
	alloc_s(1, 0, 0x2, 10, 0, 0);
	alloc_s(1, 2, 0x3, 10, 0, 0); /* no DEVICE record names it */
	trailer(500);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_OK, "remap: loads");
	ok(v.n == 3 && v.e[0].device == 0 && v.e[1].device == 1 &&
	           v.e[2].device == 2,
	   "remap: indexes of first appearance while streaming");
	ok(t.device_remap && t.device_remap[0] == 1 &&
	           t.device_remap[1] == 0 && t.device_remap[2] == 2,
	   "remap: the end orders devices by ordinal");
	ok(t.ndevices == 3 && t.devices[0].ordinal == 0 &&
	           t.devices[1].ordinal == 1 && t.devices[2].ordinal == 2,
	   "remap: device table in (host, ordinal) order");
	vrt_load_free(&t);
	free(v.e);

	new_file();
	header(5);
	device(VRT_VENDOR_CUDA, 0);
	device(VRT_VENDOR_CUDA, 1);
	chunk(1, 100);
	alloc_s(0, 1, 0x1, 10, 0, 0);
	trailer(500);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_OK, "no remap: loads");
	ok(!t.device_remap, "no remap: NULL when nothing moved");
	vrt_load_free(&t);
	free(v.e);
}

/* Many frames, each ending with a watermark that covers it: what is held
 * at once stays about a frame, whatever the length of the trace. */
static void test_bounded(void)
{
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	int sorted = 1;

	new_file();
	header(6);
	for (int k = 0; k < 300; k++) {
		for (uint32_t tid = 1; tid <= 2; tid++) {
			chunk(tid, (int64_t)k * 1000 + tid);
			for (int i = 0; i < 100; i++)
				alloc(i ? 2 : 0, (uint64_t)k * 1000 + i);
		}
		watermark((int64_t)k * 1000 + 500);
		end_frame();
	}
	trailer(400000);
	end_frame();
	st = load_mem(&t, &v, 1000, &err);
	EQ(st, VRT_LOAD_OK, "bounded: loads");
	EQ(v.n, 60000, "bounded: every event");
	for (size_t i = 1; i < v.n; i++)
		sorted &= v.e[i - 1].ts <= v.e[i].ts;
	ok(sorted, "bounded: in time order");
	ok(t.events_held_max <= 400,
	   "bounded: at most about a frame held (%llu of 60000)",
	   (unsigned long long)t.events_held_max);
	vrt_load_free(&t);
	free(v.e);
}

/* Random threads, chunks and frames (watermarks as a writer sets them),
 * eager records (MARK) among them, in two files: the stream equals a
 * stable sort of the events on time, files in order. */
static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

struct ref {
	int64_t ts;
	uint64_t id; /* file * 1e6 + record order */
};

static int cmp_ref(const void *pa, const void *pb)
{
	const struct ref *a = pa, *b = pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static size_t build_random(int fileno, struct ref *refs, size_t nref)
{
	int64_t next[4], clock = 1000;
	size_t seq = 0;

	new_file();
	header(100 + (uint64_t)fileno);
	for (int i = 0; i < 4; i++)
		next[i] = 1000 + (int64_t)rnd(50);
	for (int fr = 0; fr < 40; fr++) {
		int64_t wm;
		for (int c = 0; c < 6; c++) {
			int th = (int)rnd(4);
			int64_t ts = next[th];
			chunk((uint32_t)th + 1, ts);
			for (int k = (int)rnd(8); k >= 0; k--) {
				uint64_t dts = rnd(4) ? rnd(30) : 0;
				uint64_t id = (uint64_t)fileno * 1000000 + seq++;
				int64_t prev = ts;
				ts += (int64_t)dts;
				if (rnd(5))
					alloc(dts, id);
				else
					mark(dts, "m");
				refs[nref].ts = ts;
				refs[nref].id = id;
				nref++;
				(void)prev;
			}
			next[th] = ts;
		}
		/* Every thread's next event comes at or after its clock. */
		wm = next[0];
		for (int i = 1; i < 4; i++)
			if (next[i] < wm)
				wm = next[i];
		clock = wm;
		watermark(clock);
		end_frame();
	}
	trailer(clock + 1000);
	end_frame();
	return nref;
}

static void test_random(void)
{
	static struct ref refs[2 * 40 * 6 * 8];
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	size_t nref = 0, i, nmarks = 0;
	enum vrt_load_status st;
	int same = 1;

	for (int round = 0; round < 5; round++) {
		clear_dir();
		nref = build_random(0, refs, 0);
		write_file("a.vtrace");
		nref = build_random(1, refs, nref);
		write_file("b.vtrace");
		qsort(refs, nref, sizeof(*refs), cmp_ref);
		st = load_dir(&t, &v, 1 + rnd(50), &err);
		EQ(st, VRT_LOAD_OK, "random: loads");
		same = v.n == nref;
		for (i = 0; same && i < nref; i++) {
			const struct vrt_event *e = &v.e[i];
			if (e->kind == VRT_EV_MARK) {
				/* Marks carry no id: check time and slot. */
				nmarks++;
				same = e->ts == refs[i].ts;
			} else {
				same = e->ts == refs[i].ts &&
				       e->addr == refs[i].id;
			}
		}
		ok(same, "random %d: equals a stable sort (%zu events)", round,
		   nref);
		EQ(t.events_late, 0, "random: nothing late");
		vrt_load_free(&t);
		free(v.e);
	}
	ok(nmarks > 0, "random: eager records were among them");
	clear_dir();
}

/* ---- BATCH records (version 4) ---------------------------------------------- */

/* A BATCH being built: its nine columns, then bat_end() writes it. */
static struct bb bcol[VRT_BATCH_COLS];
static uint32_t bn;

enum { BK, BT, BAS, BFS, BZ, BAA, BFA, BX, BD };

static void bat_ev(int kind, uint64_t time)
{
	uint8_t z = 0;
	if (bn % 8 == 0)
		put(&bcol[BK], &z, 1);
	if (kind)
		bcol[BK].p[bcol[BK].n - 1] |= (uint8_t)(1u << (bn % 8));
	pu(&bcol[BT], time);
	bn++;
}

/* A new site's fields, for a site code 0. */
static void bat_def(unsigned api, int64_t dev, uint64_t aux, uint64_t phase)
{
	pu(&bcol[BD], api);
	ps(&bcol[BD], dev);
	pu(&bcol[BD], aux);
	pu(&bcol[BD], phase);
	pu(&bcol[BD], 0);
}

static void bat_packed_s(int64_t v)
{
	uint64_t p;
	if (!vrt_pack_s(v, &p))
		abort();
	pu(&bcol[BX], p);
}

/* An ALLOC: site code, size code (1: new size), address code (0: the
 * delta to last_alloc). */
static void bat_alloc(uint64_t time, uint64_t site, uint64_t z,
                      uint64_t size, uint64_t a, int64_t delta)
{
	bat_ev(0, time);
	pu(&bcol[BAS], site);
	pu(&bcol[BZ], z);
	if (z == 1) {
		uint64_t p;
		if (!vrt_pack_u(size, &p))
			abort();
		pu(&bcol[BZ], p);
	}
	pu(&bcol[BAA], a);
	if (!a)
		bat_packed_s(delta);
}

static void bat_free(uint64_t time, uint64_t site, uint64_t a, int64_t delta)
{
	bat_ev(1, time);
	pu(&bcol[BFS], site);
	pu(&bcol[BFA], a);
	if (!a)
		bat_packed_s(delta);
}

/* The record, with its n = the events added (or n_over when not 0). */
static void bat_end_n(uint64_t span, uint64_t flags, uint64_t n_over)
{
	pu(&pl, span);
	pu(&pl, n_over ? n_over : bn);
	pu(&pl, flags);
	for (int i = 0; i < VRT_BATCH_COLS - 1; i++)
		pu(&pl, bcol[i].n);
	for (int i = 0; i < VRT_BATCH_COLS; i++) {
		if (bcol[i].n)
			put(&pl, bcol[i].p, bcol[i].n);
		bcol[i].n = 0;
	}
	bn = 0;
	rec(VRT_REC_BATCH);
}

static void bat_end(uint64_t span, uint64_t flags)
{
	bat_end_n(span, flags, 0);
}

#define KV_ANN (VRT_PHASE_kv_cache * 4 + VRT_SRC_ANNOTATION)

/* The decoding rules of trace_format.h, one by one, at every caller
 * buffer size: sites, sizes, the lists of freed addresses, ages, exact and
 * microsecond times, a state that lasts across records and chunks of the
 * thread, and the time after a record. */
static void test_batch_decode(void)
{
	static const size_t sizes[] = {1, 2, 3, 64};
	static const uint64_t addr[] = {0x10000, 0x11000, 0x11000, 0x10000,
	                                0x11000, 0x10000, 0x5000,  0x10000,
	                                0x10000, 0x20000, 0x20000};
	static const int64_t ts[] = {1000, 3000, 3005, 3005, 4005, 4005,
	                             4012, 4022, 4022, 9000, 9010};
	static const uint8_t kind[] = {VRT_EV_ALLOC, VRT_EV_ALLOC, VRT_EV_FREE,
	                               VRT_EV_FREE,  VRT_EV_ALLOC, VRT_EV_ALLOC,
	                               VRT_EV_FREE,  VRT_EV_MARK,  VRT_EV_FREE,
	                               VRT_EV_ALLOC, VRT_EV_FREE};
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		new_file();
		header_v(4, "h", 4, 0, 0);
		device(VRT_VENDOR_CUDA, 0);
		chunk(1, 1000);
		/* 1000: a new site and size, the address 0x10000 */
		bat_alloc(0, 0, 1, 4096, 0, 0x10000);
		bat_def(VRT_API_cuMemAllocAsync, 0, 5, KV_ANN);
		/* 3000 (+2 us): site 1, its size, 0x10000 + 0x1000 */
		bat_alloc(4, 1, 0, 0, 0, 0x1000);
		/* 3005 (+5 ns exact): the latest allocation, a new free
		 * site; 0x11000 goes on the 4096 list */
		bat_free(5 << 1 | 1, 0, 1, 0);
		bat_def(VRT_API_cuMemFreeAsync, VRT_DEVICE_UNKNOWN, 5, 0);
		/* 3005: the allocation 2 ago (0x10000), list top */
		bat_free(0, 2, 2, 0);
		/* 4005: size slot 0, the list's second entry (0x11000) */
		bat_alloc(2, 1, 2, 0, 2, 0);
		/* 4005: the list's top (0x10000) */
		bat_alloc(0, 1, 0, 0, 1, 0);
		/* 4012: last_free (0) + 0x5000, exact */
		bat_free(7 << 1 | 1, 2, 0, 0x5000);
		bat_end(3012, 0); /* ends at 4012 */
		mark(10, "m"); /* 4022 */
		/* the state goes on: the latest allocation (0x10000) */
		bat_free(0, 2, 1, 0);
		bat_end(0, 0);
		watermark(5000);
		end_frame();
		chunk(1, 9000); /* and in the thread's next chunk */
		bat_alloc(0, 1, 0, 0, 0, 0x10000); /* 0x10000 + 0x10000 */
		bat_free(10 << 1 | 1, 2, 1, 0);
		bat_end(10, 0);
		watermark(10000);
		trailer(10000);
		end_frame();
		st = load_mem(&t, &v, sizes[i], &err);
		ok(st == VRT_LOAD_OK, "batch: loads (buffer %zu)", sizes[i]);
		if (st) printf("# %s\n", err.msg);
		int good = v.n == 11;
		for (size_t k = 0; good && k < 11; k++) {
			const struct vrt_event *e = &v.e[k];
			good = e->kind == kind[k] && e->ts == ts[k] &&
			       (e->kind == VRT_EV_MARK || e->addr == addr[k]);
			if (e->kind == VRT_EV_ALLOC)
				good = good && e->size == 4096 &&
				       e->api == VRT_API_cuMemAllocAsync &&
				       e->aux == 5 && e->device == 0 &&
				       e->phase == VRT_PHASE_kv_cache &&
				       e->phase_src == VRT_SRC_ANNOTATION;
			if (e->kind == VRT_EV_FREE)
				good = good && e->size == 0 &&
				       e->api == VRT_API_cuMemFreeAsync &&
				       e->aux == 5 && e->device == -1 &&
				       e->phase == 0;
			if (!good)
				printf("# event %zu: kind %u ts %lld addr %#llx "
				       "size %llu\n",
				       k, e->kind, (long long)e->ts,
				       (unsigned long long)e->addr,
				       (unsigned long long)e->size);
		}
		ok(good, "batch: every field as the rules say (buffer %zu)",
		   sizes[i]);
		EQ(t.procs[0].events, 11, "batch: the process's events");
		vrt_load_free(&t);
		free(v.e);
	}
}

/* A BATCH holds its events in one record: the first one's time, not the
 * record's, places it among other files' events. */
static void test_batch_key(void)
{
	static const int64_t want[] = {1000, 1500, 6000};
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	enum vrt_load_status st;

	clear_dir();
	new_file();
	header_v(1, "h", 4, 0, 0);
	chunk(1, 1000);
	bat_alloc(0, 0, 1, 4096, 0, 0x1000); /* 1000 */
	bat_def(VRT_API_cuMemAlloc_v2, 0, 0, 0);
	bat_free(5000 << 1 | 1, 0, 1, 0); /* 6000 */
	bat_def(VRT_API_cuMemFree_v2, 0, 0, 0);
	bat_end(5000, 0);
	trailer(9000);
	end_frame();
	write_file("a.vtrace");
	new_file();
	header(2);
	chunk(7, 1500);
	alloc(0, 0x9000); /* 1500 */
	trailer(9000);
	end_frame();
	write_file("b.vtrace");
	st = load_dir(&t, &v, 64, &err);
	EQ(st, VRT_LOAD_OK, "batch key: loads");
	ok(v.n == 3 && v.e[0].ts == want[0] && v.e[1].ts == want[1] &&
	           v.e[2].ts == want[2] && v.e[1].proc == 1,
	   "batch key: another file's event goes between a BATCH's");
	EQ(t.events_late, 0, "batch key: nothing late");
	vrt_load_free(&t);
	free(v.e);
	clear_dir();
}

/* Malformed BATCH records: each is an error naming the record, never a
 * crash or a wrong event. */
static void test_batch_errors(void)
{
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	enum vrt_load_status st;
	int n = 0, bad = 0;

	for (int c = 0; c < 10; c++) {
		new_file();
		header_v(4, "h", 4, 0, 0);
		chunk(1, 1000);
		bat_alloc(0, 0, 1, 4096, 0, 0x1000);
		bat_def(VRT_API_cuMemAlloc_v2, 0, 0, 0);
		switch (c) {
		case 0: /* a site not defined */
			bat_alloc(0, 5, 0, 0, 0, 0);
			bat_end(0, 0);
			break;
		case 1: /* a free naming an alloc site */
			bat_free(0, 1, 1, 0);
			bat_end(0, 0);
			break;
		case 2: /* a list entry nobody freed */
			bat_alloc(0, 1, 0, 0, 1, 0);
			bat_end(0, 0);
			break;
		case 3: /* an allocation older than the thread's first */
			bat_free(0, 0, 2, 0);
			bat_def(VRT_API_cuMemFree_v2, 0, 0, 0);
			bat_end(0, 0);
			break;
		case 4: /* a new site with no size to repeat */
			bat_alloc(0, 0, 0, 0, 0, 0x1000);
			bat_def(VRT_API_cuMemAllocHost_v2, 0, 0, 0);
			bat_end(0, 0);
			break;
		case 5: /* more events than its columns hold */
			bat_end_n(0, 0, 3);
			break;
		case 6: /* a size slot not defined */
			bat_alloc(0, 1, 9, 0, 0, 0x1000);
			bat_end(0, 0);
			break;
		case 7: /* a state emptied: the site is gone */
			bat_end(0, 0);
			bat_alloc(0, 1, 0, 0, 0, 0x1000);
			bat_end(0, VRT_BATCH_RESET);
			break;
		case 8: /* column lengths past the record */
			bat_end(0, 0);
			pl.n = 0;
			pu(&pl, 0);
			pu(&pl, 1);
			pu(&pl, 0);
			for (int k = 0; k < VRT_BATCH_COLS - 1; k++)
				pu(&pl, 200);
			rec(VRT_REC_BATCH);
			break;
		case 9: /* an api id out of range */
			bat_end(0, 0);
			bat_alloc(0, 0, 1, 4096, 0, 0x1000);
			bat_def(VRT_API_MAX + 1, 0, 0, 0);
			bat_end(0, 0);
			break;
		}
		trailer(2000);
		end_frame();
		st = load_mem(&t, &v, 64, &err);
		n++;
		if (st != VRT_LOAD_ERR_RECORD) {
			bad++;
			printf("# case %d: status %d\n", c, st);
		}
		vrt_load_free(&t);
		free(v.e);
	}
	ok(n == 10 && bad == 0, "batch: malformed records are errors");

	/* Before version 4, type 30 is not a BATCH: skipped. */
	new_file();
	header_v(4, "h", 3, 0, 0);
	chunk(1, 1000);
	alloc(0, 0x1000);
	bat_alloc(0, 0, 1, 4096, 0, 0x1000);
	bat_def(VRT_API_cuMemAlloc_v2, 0, 0, 0);
	bat_end(0, 0);
	trailer(2000);
	end_frame();
	st = load_mem(&t, &v, 64, &err);
	ok(st == VRT_LOAD_OK && v.n == 1,
	   "batch: a version 3 reader's type 30 is skipped");
	vrt_load_free(&t);
	free(v.e);
}

/* ---- BATCH records (version 5) ---------------------------------------------- */

/* A version 5 BATCH being built: its eleven columns and pairs. */
static struct bb b5[VRT_BATCH5_COLS];
static uint32_t b5n, b5pairs;

enum { C5K, C5T, C5AS, C5FS, C5Z, C5ZL, C5ZN, C5AA, C5FA, C5X, C5D };

static void b5_ev(int kind, uint64_t time)
{
	uint8_t z = 0;
	if (b5n % 8 == 0)
		put(&b5[C5K], &z, 1);
	if (kind)
		b5[C5K].p[b5[C5K].n - 1] |= (uint8_t)(1u << (b5n % 8));
	pu(&b5[C5T], time);
	b5n++;
}

static void b5_def(unsigned api, int64_t dev, uint64_t aux, uint64_t phase)
{
	pu(&b5[C5D], api);
	ps(&b5[C5D], dev);
	pu(&b5[C5D], aux);
	pu(&b5[C5D], phase);
	pu(&b5[C5D], 0);
}

/* The size byte z: < VRT_BATCH_MTF a recent size, then a slot (with its
 * low byte lo), VRT_BATCH_NEWSIZE a new size. */
static void b5_size(uint8_t z, uint8_t lo, uint64_t size)
{
	put(&b5[C5Z], &z, 1);
	if (z >= VRT_BATCH_MTF && z != VRT_BATCH_NEWSIZE)
		put(&b5[C5ZL], &lo, 1);
	if (z == VRT_BATCH_NEWSIZE) {
		uint64_t p;
		if (!vrt_pack_u(size, &p))
			abort();
		pu(&b5[C5ZN], p);
	}
}

/* An ALLOC: time, site code, size (as b5_size), address code a (0: the
 * delta to last_alloc; VRT_BATCH_PAIR: a pair, fsite its free's site). */
static void b5_alloc(uint64_t time, uint64_t site, uint8_t z, uint8_t lo,
                     uint64_t size, uint64_t a, int64_t delta)
{
	b5_ev(0, time);
	pu(&b5[C5AS], site);
	b5_size(z, lo, size);
	pu(&b5[C5AA], a);
	if (!a) {
		uint64_t p;
		if (!vrt_pack_s(delta, &p))
			abort();
		pu(&b5[C5X], p);
	}
}

static void b5_pair(uint64_t time, uint64_t site, uint8_t z, uint64_t size,
                    uint64_t fsite)
{
	b5_alloc(time, site, z, 0, size, VRT_BATCH_PAIR, 0);
	pu(&b5[C5FS], fsite);
	b5pairs++;
}

static void b5_free(uint64_t time, uint64_t site, uint64_t a, int64_t delta)
{
	b5_ev(1, time);
	pu(&b5[C5FS], site);
	pu(&b5[C5FA], a);
	if (!a) {
		uint64_t p;
		if (!vrt_pack_s(delta, &p))
			abort();
		pu(&b5[C5X], p);
	}
}

/* The record: span, flags (the unit's shift u is added), pairs as
 * counted unless pairs_over is not ~0. */
static void b5_end_p(uint64_t span, uint64_t flags, unsigned u,
                     uint64_t pairs_over)
{
	pu(&pl, span);
	pu(&pl, b5n);
	pu(&pl, flags | (uint64_t)u << 1);
	pu(&pl, pairs_over != ~0ull ? pairs_over : b5pairs);
	for (int i = 0; i < VRT_BATCH5_COLS - 1; i++)
		pu(&pl, b5[i].n);
	for (int i = 0; i < VRT_BATCH5_COLS; i++) {
		if (b5[i].n)
			put(&pl, b5[i].p, b5[i].n);
		b5[i].n = 0;
	}
	b5n = b5pairs = 0;
	rec(VRT_REC_BATCH);
}

static void b5_end(uint64_t span, uint64_t flags, unsigned u)
{
	b5_end_p(span, flags, u, ~0ull);
}

/* Version 5's rules one by one, at every caller buffer size: times on a
 * grid of 2^u ns (u = 10 here), exact times; a site's recent sizes, size
 * slots and new sizes; the list of a class (a block freed at 4096 bytes
 * comes back for 4000: both round to 8 granules of 512); frees by age;
 * pairs (a REPEAT event of one, counted as an allocation and a free); a
 * state that lasts across records and chunks, and starts over. */
static void test_batch5_decode(void)
{
	static const size_t sizes[] = {1, 2, 3, 64};
	/* kind, ts, addr (a pair: its count), size */
	static const struct {
		uint8_t kind;
		int64_t ts;
		uint64_t addr, size;
	} want[] = {
		{VRT_EV_ALLOC, 1000, 0x10000, 4096},   /* 0 */
		{VRT_EV_ALLOC, 2048, 0x12000, 8192},   /* 1 */
		{VRT_EV_FREE, 2048, 0x10000, 0},       /* 2 */
		{VRT_EV_ALLOC, 2053, 0x10000, 4000},   /* 3 */
		{VRT_EV_ALLOC, 4096, 0x20000, 8192},   /* 4 */
		{VRT_EV_REPEAT, 5120, 1, 4000},        /* 5 */
		{VRT_EV_FREE, 5120, 0x20000, 0},       /* 6 */
		{VRT_EV_ALLOC, 5120, 0x20000, 4096},   /* 7 */
		{VRT_EV_MARK, 5130, 0, 0},             /* 8 */
		{VRT_EV_ALLOC, 6144, 0x20400, 4000},   /* 9 */
		{VRT_EV_ALLOC, 9000, 0x30000, 4096},   /* 10 */
	};
	const size_t nwant = sizeof(want) / sizeof(want[0]);
	const unsigned u = 10;
	enum vrt_load_status st;
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		new_file();
		header(5);
		device(VRT_VENDOR_CUDA, 0);
		chunk(1, 1000);
		/* 1000 (k = 0: the time before): a new site, a new size
		 * (slot 0), the address 0x10000 */
		b5_alloc(0, 0, VRT_BATCH_NEWSIZE, 0, 4096, 0, 0x10000);
		b5_def(VRT_API_cuMemAllocAsync, 0, 5, KV_ANN);
		/* 2048 (the grid line after 1000: 1000 & ~1023 + 2 * 1024
		 * is 2048): another new size (slot 1), +0x2000 */
		b5_alloc(2 << 1, 1, VRT_BATCH_NEWSIZE, 0, 8192, 0, 0x2000);
		/* 2048: the allocation 2 ago (0x10000): on the list of
		 * class 8 (4096) */
		b5_free(0, 0, 2, 0);
		b5_def(VRT_API_cuMemFreeAsync, VRT_DEVICE_UNKNOWN, 5, 0);
		/* 2053 (exact): a new size 4000 (slot 2), class 8 too: the
		 * list's top, 0x10000 */
		b5_alloc(5 << 1 | 1, 1, VRT_BATCH_NEWSIZE, 0, 4000, 1, 0);
		/* 4096: the site's recent sizes are 4000, 8192, 4096: entry
		 * 1; the address +0x10000 from last_alloc 0x10000 */
		b5_alloc(2 << 1, 1, 1, 0, 0, 0, 0x10000);
		/* 5120: a pair of 4000 (recent entry 1 now), a new free
		 * site */
		b5_pair(1 << 1, 1, 1, 4000, 0);
		b5_def(VRT_API_cuMemFree_v2, 0, 7, 0);
		/* 5120: the latest allocation (0x20000, class 16) */
		b5_free(0, 2, 1, 0);
		/* 5120: size slot 0 (4096) by its number, the address from
		 * last_alloc (0x20000) + 0 */
		b5_alloc(0, 1, VRT_BATCH_MTF + 0, 0, 0, 0, 0);
		b5_end(4120, 0, u); /* ends at 5120 */
		mark(10, "m"); /* 5130 */
		/* 6144: the state goes on; the recent sizes are 4096,
		 * 4000, 8192: entry 1; the address 0x20000 + 0x400 */
		b5_alloc(1 << 1, 1, 1, 0, 0, 0, 0x400);
		b5_end(1014, 0, u);
		watermark(7000);
		end_frame();
		chunk(1, 9000); /* and in the thread's next chunk, emptied */
		b5_alloc(0, 0, VRT_BATCH_NEWSIZE, 0, 4096, 0, 0x30000);
		b5_def(VRT_API_cuMemAllocAsync, 0, 5, KV_ANN);
		b5_end(0, VRT_BATCH_RESET, u);
		watermark(10000);
		trailer(10000);
		end_frame();
		st = load_mem(&t, &v, sizes[i], &err);
		ok(st == VRT_LOAD_OK, "batch 5: loads (buffer %zu)", sizes[i]);
		if (st)
			printf("# %s\n", err.msg);
		int good = v.n == nwant;
		for (size_t k = 0; good && k < nwant; k++) {
			const struct vrt_event *e = &v.e[k];
			good = e->kind == want[k].kind && e->ts == want[k].ts &&
			       (e->kind == VRT_EV_MARK ||
			        (e->addr == want[k].addr &&
			         e->size == want[k].size));
			if (e->kind == VRT_EV_ALLOC)
				good = good && e->api == VRT_API_cuMemAllocAsync &&
				       e->aux == 5 && e->device == 0 &&
				       e->phase == VRT_PHASE_kv_cache &&
				       e->phase_src == VRT_SRC_ANNOTATION;
			if (e->kind == VRT_EV_REPEAT)
				good = good && e->api == VRT_API_cuMemAllocAsync &&
				       e->extra == VRT_API_cuMemFree_v2 &&
				       e->device == 0;
			if (e->kind == VRT_EV_FREE)
				good = good && e->api == VRT_API_cuMemFreeAsync &&
				       e->device == -1;
			if (!good)
				printf("# event %zu: kind %u ts %lld addr %#llx "
				       "size %llu\n",
				       k, e->kind, (long long)e->ts,
				       (unsigned long long)e->addr,
				       (unsigned long long)e->size);
		}
		ok(good, "batch 5: every field as the rules say (buffer %zu)",
		   sizes[i]);
		/* the pair is an allocation and a free */
		EQ(t.procs[0].events, 12, "batch 5: the process's events");
		vrt_load_free(&t);
		free(v.e);
	}
}

/* Malformed version 5 BATCH records: errors naming the record. */
static void test_batch5_errors(void)
{
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	enum vrt_load_status st;
	int n = 0, bad = 0;

	for (int c = 0; c < 9; c++) {
		new_file();
		header(5);
		chunk(1, 1000);
		b5_alloc(0, 0, VRT_BATCH_NEWSIZE, 0, 4096, 0, 0x1000);
		b5_def(VRT_API_cuMemAlloc_v2, 0, 0, 0);
		switch (c) {
		case 0: /* a recent size the site does not have */
			b5_alloc(0, 1, 3, 0, 0, 0, 0x1000);
			b5_end(0, 0, 10);
			break;
		case 1: /* a size slot not defined */
			b5_alloc(0, 1, VRT_BATCH_MTF, 7, 0, 0, 0x1000);
			b5_end(0, 0, 10);
			break;
		case 2: /* a size byte out of range */
			b5_alloc(0, 1, 200, 0, 0, 0, 0x1000);
			b5_end(0, 0, 10);
			break;
		case 3: /* more pairs announced than there are */
			b5_end_p(0, 0, 10, 1);
			break;
		case 4: /* a pair not announced */
			b5_pair(0, 1, 0, 0, 0);
			b5_def(VRT_API_cuMemFree_v2, 0, 0, 0);
			b5_end_p(0, 0, 10, 0);
			break;
		case 5: /* a time unit past the largest */
			b5_end(0, 0, VRT_BATCH_UNIT_MAX + 1);
			break;
		case 6: /* an entry of a class list nobody freed */
			b5_alloc(0, 1, 0, 0, 0, 1, 0);
			b5_end(0, 0, 10);
			break;
		case 7: /* a pair whose free's site is an alloc site */
			b5_pair(0, 1, 0, 0, 1);
			b5_end(0, 0, 10);
			break;
		case 8: /* an address code past the list and the pair */
			b5_alloc(0, 1, 0, 0, 0, VRT_BATCH_PAIR + 1, 0);
			b5_end(0, 0, 10);
			break;
		}
		trailer(2000);
		end_frame();
		st = load_mem(&t, &v, 64, &err);
		n++;
		if (st != VRT_LOAD_ERR_RECORD) {
			bad++;
			printf("# case %d: status %d\n", c, st);
		}
		vrt_load_free(&t);
		free(v.e);
	}
	ok(n == 9 && bad == 0, "batch 5: malformed records are errors");

	/* A version 4 file's BATCH keeps its own layout (and the 5-column
	 * record above is not one). */
	new_file();
	header_v(4, "h", 4, 0, 0);
	chunk(1, 1000);
	b5_alloc(0, 0, VRT_BATCH_NEWSIZE, 0, 4096, 0, 0x1000);
	b5_def(VRT_API_cuMemAlloc_v2, 0, 0, 0);
	b5_end(0, 0, 10);
	trailer(2000);
	end_frame();
	st = load_mem(&t, &v, 64, &err);
	ok(st == VRT_LOAD_ERR_RECORD,
	   "batch 5: a version 4 file reads BATCH as version 4");
	vrt_load_free(&t);
	free(v.e);
}

/* A record too short for its fields is found when decoded. */
static void test_errors(void)
{
	struct vrt_trace t;
	struct vrt_load_error err;
	struct evs v;
	enum vrt_load_status st;

	new_file();
	header(8);
	chunk(1, 100);
	alloc(0, 1);
	pu(&pl, 5); /* dts and api only */
	pu(&pl, VRT_API_cuMemAlloc_v2);
	rec(VRT_REC_ALLOC);
	trailer(500);
	end_frame();
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_ERR_RECORD, "short ALLOC: corrupt record");
	ok(strstr(err.msg, "short event record in frame at byte 0") != NULL,
	   "short ALLOC: message (%s)", err.msg);
	vrt_load_free(&t);
	free(v.e);

	/* Cut inside the last frame: what came before is kept. */
	new_file();
	header(9);
	chunk(1, 100);
	alloc(0, 1);
	watermark(200);
	end_frame();
	size_t first = file.n;
	chunk(1, 300);
	for (int i = 0; i < 50; i++)
		alloc(1, 100 + (uint64_t)i);
	end_frame();
	file.n = first + (file.n - first) / 2;
	st = load_mem(&t, &v, 16, &err);
	EQ(st, VRT_LOAD_OK, "cut: loads");
	ok(v.n == 1 && t.procs[0].truncated &&
	           !strncmp(t.procs[0].trunc_reason,
	                    "last zstd frame is incomplete", 29),
	   "cut: truncated after the complete frame");
	EQ(t.procs[0].trunc_offset, first, "cut: at the frame's byte");
	vrt_load_free(&t);
	free(v.e);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_watermark_threads();
	test_two_files_ties();
	test_late();
	test_past();
	test_repeat();
	test_compact();
	test_batch_decode();
	test_batch_key();
	test_batch_errors();
	test_batch5_decode();
	test_batch5_errors();
	test_device_remap();
	test_bounded();
	test_random();
	test_errors();
	clear_dir();
	rmdir(tmpdir);
	free(frame.p);
	free(file.p);
	free(pl.p);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
