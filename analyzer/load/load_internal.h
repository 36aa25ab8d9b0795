/*
 * load_internal.h — what the parts of the loader share (load.c and its
 * load_*.c parts; nothing else includes it): the state of a load (files,
 * runs, decoded frames), the per-file tables, the field readers of the hot
 * records, and the functions one part calls in another. load.c's opening
 * block says how the loader works as a whole.
 *
 * The small field readers and the resolution from a file's caches are
 * static inline here, so each part's hot loop compiles them in as the one
 * file did. Single-threaded, as the loader.
 */
#ifndef VRT_LOAD_INTERNAL_H
#define VRT_LOAD_INTERNAL_H

#include "load.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "intern.h"
#include "vramtrace/trace_format.h"

/* More distinct devices than this in one file is corrupt input. */
#define VRT_LOAD_MAX_FILE_DEVICES 256
/* Phase ids below this get a direct cache slot. */
#define PHASE_CACHE 1024

/* ---- record fields --------------------------------------------------- */

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static inline uint64_t vrt_load_get_u(struct cursor *c)
{
	uint64_t v = 0;
	if (c->bad || vrt_get_uvarint(&c->p, c->end, &v))
		c->bad = 1;
	return c->bad ? 0 : v;
}

static inline int64_t vrt_load_get_s(struct cursor *c)
{
	int64_t v = 0;
	if (c->bad || vrt_get_svarint(&c->p, c->end, &v))
		c->bad = 1;
	return c->bad ? 0 : v;
}

/* Reads a str; *out points into the record (not NUL-terminated). */
static inline size_t vrt_load_get_str(struct cursor *c, const uint8_t **out)
{
	uint64_t n = vrt_load_get_u(c);
	*out = c->p;
	if (c->bad)
		return 0;
	if (n > (uint64_t)(c->end - c->p)) {
		c->bad = 1;
		return 0;
	}
	c->p += n;
	return (size_t)n;
}

/* ---- loader state ------------------------------------------------------- */

/* A thread's BATCH state (load_batch.c owns its layout). */
struct bstate;

/* A process numbers CUDA and HIP devices separately: CUDA ordinal 0 and
 * HIP ordinal 0 are two cards, so a file's device is (vendor, ordinal). An
 * event's vendor is its api's (vrt_api_vendor). */
struct file_dev {
	int vendor; /* enum vrt_vendor */
	int64_t ordinal;
	int32_t global; /* index in t->devices */
};

/* Per-file id -> index map (open addressing; the first entry of an id
 * wins, as a corrupt file may declare one twice). */
struct idtab {
	uint64_t *key;
	uint32_t *val; /* index + 1; 0 = empty */
	size_t cap, n;
};

/* FRAME and STACK records of a file, interned at the release after them. */
struct file_frame {
	uint64_t id;
	uint64_t ip, a, b, c; /* native: module, symbol, offset;
	                         python: file, function, line */
	uint32_t g;           /* index in t->frames, once resolved */
	uint8_t kind;
};

struct file_stack {
	uint64_t id, parent, frame, phase;
	uint32_t g;    /* index in t->stacks, once resolved */
	uint8_t state; /* 0 unresolved, 1 on the current path, 2 done */
};

/* What an event's stack id resolves to, cached per id. */
struct stack_res {
	uint32_t g1;    /* global stack + 1; 0: not cached */
	uint32_t phase; /* the STACK record's phase id (not source) */
};

/* The compact state of a chunk (trace_format.h, ALLOC_C and FREE_C).
 * A raw run starts where the state is reset (a CHUNK or another record
 * type ends the run before), so each run starts from zero. */
struct ctmpl {
	uint64_t api, aux, phase, stack;
	int64_t device;
	int have;
	/* The template's events resolved, once known (g_ok): for the free
	 * template device, stack and phase; for the alloc template device and
	 * an annotated phase (a phase from a stack depends on each ALLOC_C's
	 * stack: then never kept). Only answers of vrt_load_resolve_fast are
	 * kept, which never change for the same ids. */
	int32_t g_dev;
	uint32_t g_stack, g_phase;
	uint8_t g_src, g_ok;
};

struct compact {
	uint64_t addr;
	struct ctmpl a, f;
};

/* Where a run is inside a BATCH record (on: between events of one). */
struct bcur {
	const uint8_t *c[VRT_BATCH5_COLS], *e[VRT_BATCH5_COLS];
	uint32_t i, n;
	uint32_t pairs; /* version 5: pairs the header announces, left */
	uint8_t unit;   /* version 5: the time unit's shift */
	int64_t prev;  /* the previous event's time, as written */
	int64_t after; /* the time after the record */
	uint8_t on;
};

/* One decoded frame. Lazy runs point into it, so it lives until the last
 * of them is delivered (refs), then goes back to a free list. */
struct fbuf {
	uint8_t *data; /* len bytes, then DEC_PAD zero bytes */
	size_t len, cap;
	uint64_t frame_off; /* where the frame starts in its file */
	unsigned refs;
	int mapped; /* data is an mmap of cap bytes (else malloc) */
	struct fbuf *next; /* free list */
};

/*
 * A sorted run of pending events, all of one chunk (one thread, times
 * never decreasing). RUN_RAW: the chunk's ALLOC, FREE and REPEAT records,
 * left encoded in their frame and decoded straight into the caller's
 * buffer when delivered (records of other types in the range are skipped).
 * RUN_EV: records decoded when read (those with side effects on the
 * tables: FAIL, SAMPLE, MARK, ...), kept as events.
 */
enum run_kind { RUN_RAW = 0, RUN_EV = 1 };

struct run {
	struct lfile *f;
	int kind;
	uint64_t order; /* record order in the file (ties) */
	int64_t key;    /* aligned time of the next event */
	/* RUN_RAW */
	struct fbuf *fb;
	const uint8_t *p, *end; /* records left */
	int64_t clock;          /* chunk time before p */
	uint32_t tid;
	uint8_t snap;  /* ALLOCs are a standby snapshot's */
	uint8_t rep_k; /* templates of the REPEAT at p already delivered */
	struct compact cs; /* the chunk's compact state at p */
	struct bstate *bs; /* the thread's BATCH state */
	struct bcur bc;    /* a BATCH at p delivered in part */
	/* RUN_EV */
	struct vrt_event *evs;
	size_t pos, nev, cap;
	struct run *next; /* free list */
};

struct lfile {
	char *name; /* path, or the buffer's name */
	size_t idx; /* file order (ties) */
	/* input: a file read in pieces, or a caller's buffer */
	int fd;             /* -1 while closed (or a buffer) */
	int is_buf, eof;
	uint8_t *in;        /* file input buffer; the buffer itself if is_buf */
	size_t incap, lo, hi; /* unconsumed input: in[lo, hi) */
	uint64_t pos;         /* file offset of in[lo] */
	size_t nframes;
	/* process */
	int have_header;
	int finished; /* read to its end: every event is in a run */
	unsigned version;
	size_t proc;
	int64_t shift; /* host clock alignment, added when delivered */
	int64_t relw;  /* events below this are released (watermark) */
	/* current frame and chunk */
	uint64_t frame_off;
	int have_chunk, in_snap;
	uint32_t tid, snap_tid;
	int in_past;     /* a PAST record is being read ... */
	int64_t past_at; /* ... and this is its time */
	int64_t ts;             /* chunk time after the records before ts_at */
	const uint8_t *ts_at;   /* (hot records' times are read lazily) */
	struct run *seg;  /* RUN_RAW being read */
	struct run *eseg; /* RUN_EV being read */
	uint64_t next_order;
	/* devices */
	struct file_dev devs[VRT_LOAD_MAX_FILE_DEVICES];
	size_t ndevs;
	int32_t dcache[2][64]; /* CUDA/HIP ordinal -> global + 1 */
	/* symbols (ids are per file) */
	struct idtab strs, frames, stacks, phases;
	struct file_frame *ffr;
	size_t nffr, capffr, ffr_done; /* [ffr_done, nffr) not interned */
	struct file_stack *fst;
	size_t nfst, capfst, fst_done;
	struct stack_res *scache;
	size_t scap;
	uint32_t pcache[PHASE_CACHE]; /* declared phase id -> global + 1 */
	/* BATCH states by thread id */
	struct bstate **bst;
	size_t nbst, capbst;
};

struct lstate {
	struct vrt_intern in; /* first: the shared tables (intern.h) */
	struct lfile **files;
	size_t nfiles, capfiles;
	ZSTD_DCtx *dctx;
	struct fbuf *free_fb; /* decoded-frame buffers not in use */
	size_t frame_max;     /* room to give a new frame buffer */
	unsigned nfree_fb;
	struct run *free_run;
	struct run **heap; /* every closed run with events left */
	size_t nheap, capheap;
	int opened, ended;
	enum vrt_load_status failed; /* sticky: every later call says it */
	struct vrt_load_error ferr;
	int64_t last_ts; /* latest timestamp delivered */
	int delivered;
	uint64_t held; /* events read, not yet delivered */
	uint64_t files_done, bytes_done, nfiles_hint; /* progress */
};

/* ---- what one part calls in another ------------------------------------ */

/* load.c: errors naming the file, the frame and the record. */
enum vrt_load_status vrt_load_rec_error_at(struct lfile *f, uint64_t frame_off,
                                           struct vrt_load_error *err,
                                           uint64_t roff, const char *what);
enum vrt_load_status vrt_load_rec_error(struct lfile *f,
                                        struct vrt_load_error *err,
                                        uint64_t roff, const char *what);
enum vrt_load_status vrt_load_nomem(struct lfile *f,
                                    struct vrt_load_error *err,
                                    const char *what);
/* load.c: a NUL-terminated copy of n bytes; NULL when out of memory. */
char *vrt_load_dup_bytes(const uint8_t *p, size_t n);
/* load.c: vrt_load_uv past its first two bytes. */
uint64_t vrt_load_uv_slow(const uint8_t **pp, int *bad);
/* load.c: a new run of f (RUN_RAW or RUN_EV); NULL when out of memory. */
struct run *vrt_load_run_new(struct lstate *L, struct lfile *f, int kind);
/* load.c: end the runs being read (they join the merge); -1 on ENOMEM. */
int vrt_load_close_raw(struct lstate *L, struct lfile *f, const uint8_t *at);
int vrt_load_close_ev(struct lstate *L, struct lfile *f);
/* load.c: restores the heap order of h[0, n) below h[i]. */
void vrt_load_heap_down(struct run **h, size_t n, size_t i);
/* load.c: a run delivered (its frame buffer let go), kept for reuse. */
void vrt_load_run_free(struct lstate *L, struct run *r);
/* load.c: reads and parses f's next frame (or ends the file). */
enum vrt_load_status vrt_load_step(struct lstate *L, struct vrt_trace *t,
                                   struct lfile *f,
                                   struct vrt_load_error *err);
/* load.c: the end of the stream: devices in their final order, the
 * run's totals. */
enum vrt_load_status vrt_load_finish_stream(struct lstate *L,
                                            struct vrt_trace *t,
                                            struct vrt_load_error *err);

/* load_tables.c: DEVICE, and STRING, FRAME, STACK, PHASE records. */
enum vrt_load_status vrt_load_tables_device(struct vrt_trace *t,
                                            struct lfile *f,
                                            struct cursor *c, uint64_t roff,
                                            struct vrt_load_error *err);
enum vrt_load_status vrt_load_tables_symbolic(struct vrt_trace *t,
                                              struct lfile *f, unsigned type,
                                              struct cursor *c, uint64_t roff,
                                              struct vrt_load_error *err);
/* load_tables.c: interns the frames and stacks declared since the last
 * release. */
enum vrt_load_status vrt_load_tables_intern(struct vrt_trace *t,
                                            struct lfile *f,
                                            struct vrt_load_error *err);
/* load_tables.c: what vrt_load_resolve_fast leaves to the slow path. */
enum vrt_load_status vrt_load_tables_resolve(struct vrt_trace *t,
                                             struct lfile *f,
                                             struct vrt_event *e,
                                             struct vrt_load_error *err);
/* load_tables.c: frees f's id tables, frames, stacks and caches. */
void vrt_load_tables_free(struct lfile *f);

/* load_frame.c: reads the records of one decoded frame. */
enum vrt_load_status vrt_load_frame_parse(struct lstate *L,
                                          struct vrt_trace *t,
                                          struct lfile *f, struct fbuf *fb,
                                          struct vrt_load_error *err);

/* load_batch.c: a BATCH record's header; its events; the threads' BATCH
 * states of f, freed. */
int vrt_load_batch_header(const uint8_t *p, const uint8_t *pe,
                          unsigned version, struct bcur *bc, uint64_t *span,
                          uint64_t *flags);
enum vrt_load_status
vrt_load_batch_emit(struct vrt_trace *t, struct run *r, const uint8_t *rec,
                    const uint8_t *p, const uint8_t *pe, int64_t clock,
                    struct vrt_event *out, size_t max, size_t *np,
                    int64_t lim, int eq, int64_t *lastp, int *have_lastp,
                    uint64_t *latep, int *fin, struct vrt_load_error *err);
void vrt_load_batch_free(struct lfile *f);

/* load_deliver.c: the merge (vrt_load_next's work, after its checks). */
enum vrt_load_status vrt_load_deliver_next(struct lstate *L,
                                           struct vrt_trace *t,
                                           struct vrt_event *out, size_t max,
                                           size_t *n,
                                           struct vrt_load_error *err);

/* ---- record fields and times, inline ------------------------------------ */

/* Delivery order: aligned time, then file order, then record order. */
static inline int vrt_load_run_before(const struct run *a, const struct run *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->f->idx != b->f->idx)
		return a->f->idx < b->f->idx;
	return a->order < b->order;
}

/* a + b, saturating at the int64 range. */
static inline int64_t vrt_load_sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* Clamps a device ordinal from an event into the int32 kept until the
 * event is delivered; anything below -1 or absurdly large becomes -1. */
static inline int32_t vrt_load_raw_device(int64_t d)
{
	return (d < -1 || d > INT32_MAX) ? -1 : (int32_t)d;
}

/* Advances the chunk clock by dts (saturating: wrapping timestamps would
 * be corrupt input) and returns the event's time. */
static inline int64_t vrt_load_chunk_time(int64_t *clock, uint64_t dts)
{
	if (__builtin_expect(dts > (uint64_t)(INT64_MAX - *clock), 0))
		*clock = INT64_MAX;
	else
		*clock += (int64_t)dts;
	return *clock;
}

/*
 * Unchecked uvarint read for the hot records: a decoded frame has DEC_PAD
 * zero bytes after it (load.c), so reading the fields of a record that
 * starts inside the frame never leaves the buffer; the caller checks once
 * per record that the fields did not run past its end. Sets *bad for a
 * varint longer than VRT_UVARINT_MAX bytes (which vrt_get_uvarint refuses
 * too).
 */
static inline __attribute__((always_inline)) uint64_t
vrt_load_uv(const uint8_t **pp, int *bad)
{
	const uint8_t *p = *pp;
	uint64_t x, stop;

	if (__builtin_expect(p[0] < 0x80, 1)) {
		*pp = p + 1;
		return p[0];
	}
	if (p[1] < 0x80) {
		*pp = p + 2;
		return (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
	}
	/* Up to 8 bytes at once (the padding makes the load safe): find
	 * the first byte without the continuation bit, keep the bytes up
	 * to it, and pack their 7-bit groups. */
	memcpy(&x, p, sizeof(x));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	x = __builtin_bswap64(x); /* the bytes in varint order */
#endif
	stop = ~x & 0x8080808080808080ull;
	if (__builtin_expect(!stop, 0))
		return vrt_load_uv_slow(pp, bad);
	*pp = p + (__builtin_ctzll(stop) >> 3) + 1;
	x &= (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full;
	x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
	x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
	return x;
}

static inline int vrt_load_lazy_type(unsigned type, unsigned version)
{
	return type == VRT_REC_ALLOC || type == VRT_REC_FREE ||
	       (version >= 2 && (type == VRT_REC_REPEAT ||
	                         type == VRT_REC_ALLOC_C ||
	                         type == VRT_REC_FREE_C)) ||
	       (version >= 4 && type == VRT_REC_BATCH);
}

/* The time step of a version 4 BATCH time value (trace_format.h). */
static inline uint64_t vrt_load_batch_dt(uint64_t v)
{
	if (v & 1)
		return v >> 1;
	return v >> 1 > UINT64_MAX / 1000 ? UINT64_MAX : (v >> 1) * 1000;
}

/* A version 5 BATCH event's time from the previous one's (prev, never
 * negative) and its time value v, in units of 2^u ns (trace_format.h);
 * saturates at INT64_MAX. */
static inline int64_t vrt_load_batch5_time(int64_t prev, uint64_t v, unsigned u)
{
	uint64_t k = v >> 1;
	if (v & 1)
		return vrt_load_chunk_time(&prev, k);
	if (!k)
		return prev;
	if (k > (uint64_t)INT64_MAX >> u)
		return INT64_MAX;
	prev &= ~(int64_t)(((uint64_t)1 << u) - 1);
	return vrt_load_chunk_time(&prev, k << u);
}

/* vrt_load_resolve_event from the file's caches alone: 1 when e was resolved, 0
 * (e untouched) when vrt_load_tables_resolve must. */
static inline __attribute__((always_inline)) int
vrt_load_resolve_fast(const struct lfile *f, struct vrt_event *e)
{
	int32_t dev = e->device, g1 = 0;
	uint32_t sid = e->stack, ph = e->phase, id, src, pg;
	struct stack_res sr = {0, 0};

	/* Device: cached for small CUDA/HIP ordinals; -1 stays. */
	if ((uint32_t)dev < 64)
		g1 = f->dcache[e->api >= 64][dev];
	else if (dev < 0)
		g1 = 0;
	if (!g1 && dev >= 0)
		return 0;
	if (!(e->kind <= VRT_EV_FAIL || e->kind == VRT_EV_REPEAT)) {
		e->device = g1 - 1;
		return 1;
	}
	if (sid) {
		if (sid >= f->scap || !f->scache[sid].g1)
			return 0;
		sr = f->scache[sid];
	}
	src = ph & 3;
	id = ph >> 2;
	if (src != VRT_SRC_ANNOTATION) {
		if (sr.phase)
			id = sr.phase;
		src = VRT_SRC_RULE;
	}
	if (id <= VRT_PHASE_BUILTIN_MAX)
		pg = id;
	else if (id < PHASE_CACHE && f->pcache[id])
		pg = f->pcache[id] - 1;
	else
		return 0;
	e->device = g1 - 1;
	e->stack = sr.g1 ? sr.g1 - 1 : 0;
	e->phase = pg;
	e->phase_src = (uint8_t)(pg ? src : VRT_SRC_RULE);
	return 1;
}

static inline __attribute__((always_inline)) enum vrt_load_status
vrt_load_resolve_event(struct vrt_trace *t, struct lfile *f,
                       struct vrt_event *e, struct vrt_load_error *err)
{
	return vrt_load_resolve_fast(f, e)
	               ? VRT_LOAD_OK
	               : vrt_load_tables_resolve(t, f, e, err);
}

/* Bookkeeping of one delivered event (its time aligned already). */
static inline void vrt_load_delivered(struct lstate *L, struct vrt_trace *t,
                             const struct vrt_event *o)
{
	/* A fact kept in standby is older than its record by design. */
	if (__builtin_expect(o->flags & VRT_EV_PAST, 0))
		return;
	if (__builtin_expect(L->delivered && o->ts < L->last_ts, 0)) {
		t->events_late++;
	} else {
		L->last_ts = o->ts;
		L->delivered = 1;
	}
}

/* Keeps the latest time delivered; an event below it counts as late. */
static inline void vrt_load_note_time(int64_t tsx, int64_t *last,
                                      int *have_last, uint64_t *late)
{
	if (__builtin_expect(*have_last && tsx < *last, 0)) {
		(*late)++;
	} else {
		*last = tsx;
		*have_last = 1;
	}
}

#endif
