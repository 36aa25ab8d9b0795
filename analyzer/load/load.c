/*
 * load.c — reads trace files (the only analyzer file that touches them or
 * zstd) as one stream of time-ordered events, plus the flat tables of
 * struct vrt_trace (processes, devices, strings, frames, stacks, phases).
 *
 * Streaming, in one pass. Each file is read in pieces (a buffer that holds
 * at least one compressed frame). A frame is located with
 * ZSTD_findFrameCompressedSize and decoded on its own with
 * ZSTD_decompressDCtx into a buffer capped at VRT_LOAD_FRAME_CAP (sized
 * from the frames seen, never from what a header announces), followed by
 * DEC_PAD zero bytes so the hot decoder may read a few bytes past a record
 * and check once per record that it did not overrun. A last frame that
 * ends early is a file cut by SIGKILL: everything before it is kept and
 * the process is marked truncated. Any other undecodable byte is an error
 * naming the file and the byte offset.
 *
 * Reading a frame (parse_frame) takes its metadata into the tables at once
 * and cuts its events into runs: the events of one CHUNK come from one
 * thread in time order, so each chunk's ALLOC, FREE and REPEAT records
 * (the bulk of a trace) form a sorted run that stays encoded in its frame
 * buffer (RUN_RAW; the buffer lives until its last run is delivered); the
 * other events, which add to tables in record order (fails, samples,
 * strings), are decoded at once into RUN_EV runs. Runs never cross a
 * CHUNK, a WATERMARK or a frame boundary.
 *
 * Order. Every run waits in one heap keyed by (aligned time of its next
 * event, file order, record order). A WATERMARK W promises that every
 * event of its file with ts < W is already in the file, so the stream may
 * deliver anything below the lowest watermark of the files still being
 * read (vrt_load_next reads one more frame of that file when the heap's
 * first event is not below it; the end of a file lifts its bound).
 * Delivery decodes a RUN_RAW's records straight into the caller's buffer,
 * run after run while each sorts before the next. So a trace comes out
 * exactly as a stable sort of all files' events concatenated in file
 * order, and memory holds the tables plus the frames whose events are not
 * yet delivered, never the whole trace. A file whose writer broke the
 * watermark promise still has every event delivered: a late one goes out
 * as soon as it is read (t->events_late counts them).
 *
 * Resolution happens at delivery: an event keeps its file's raw device
 * ordinal and stack and phase ids until then, because a writer may emit
 * DEVICE, STRING, FRAME, STACK and PHASE records after the events that use
 * them (hand-made traces, which have no watermark, are all read before the
 * first event goes out, exactly as a whole-file reader would). Frames and
 * call paths declared since the last watermark are interned at the next
 * one (or at the end of the file) in id order into tables shared by all
 * files, keyed by names (intern.c), so the same call path in two
 * processes is one stack. An id nothing declares resolves to "no stack" (or the unknown
 * frame): never an error. Devices get global indexes in order of first
 * appearance (intern.c says which card an ordinal or UUID is); the end of
 * the stream orders them by (host, ordinal) and says how in
 * t->device_remap.
 *
 * Opening reads every file up to its first watermark, so all processes
 * (and the hosts whose clocks are aligned onto the first host's) are known
 * before the first event goes out.
 *
 * Inputs are opened through readfile.c: a path that is not a regular file
 * (a FIFO named *.vtrace, a device) is never opened for reading (it would
 * block or never end). In a run directory, and among several paths given,
 * such a file is skipped with a note in t->skipped; alone, it is an error.
 * Which files a run directory holds, in what order, and each process's
 * "<pid>.exit" are tracedir.c's.
 *
 * Single-threaded, no globals. Every length read from the input is
 * bounds-checked; no input can make this file assert or crash.
 */
#include "load.h"
#include "array.h"
#include "intern.h"
#include "readfile.h"
#include "tracedir.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "base/progress.h"
#include "vramtrace/trace_format.h"

/* Writers close frames every few MiB; anything far above is not ours. */
#define VRT_LOAD_FRAME_CAP (256u * 1024u * 1024u)
/* More distinct devices than this in one file is corrupt input. */
#define VRT_LOAD_MAX_FILE_DEVICES 256
/* Longer call paths are cut at this depth (writers cap far below). */
#define VRT_LOAD_MAX_DEPTH 4096

static const uint8_t zstd_magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

const char *vrt_load_status_name(enum vrt_load_status s)
{
	switch (s) {
	case VRT_LOAD_OK:
		return "ok";
	case VRT_LOAD_ERR_IO:
		return "cannot read";
	case VRT_LOAD_ERR_EMPTY:
		return "not a trace";
	case VRT_LOAD_ERR_NOT_ZSTD:
		return "not a trace";
	case VRT_LOAD_ERR_CORRUPT:
		return "corrupt frame";
	case VRT_LOAD_ERR_NO_FRAME:
		return "no complete frame";
	case VRT_LOAD_ERR_NO_HEADER:
		return "not a trace";
	case VRT_LOAD_ERR_BAD_MAGIC:
		return "not a trace";
	case VRT_LOAD_ERR_VERSION:
		return "unsupported trace";
	case VRT_LOAD_ERR_RECORD:
		return "corrupt record";
	case VRT_LOAD_ERR_NO_TRACES:
		return "no traces";
	case VRT_LOAD_ERR_NOMEM:
		return "out of memory";
	case VRT_LOAD_ERR_TOO_LARGE:
		return "frame too large";
	}
	return "unknown error";
}

enum vrt_load_status vrt_load_fail(struct vrt_load_error *err,
                                   enum vrt_load_status s, const char *path,
                                   const char *fmt, ...)
{
	va_list ap;
	int n;

	err->status = s;
	snprintf(err->path, sizeof(err->path), "%s", path);
	n = snprintf(err->msg, sizeof(err->msg),
	             "%s: ", vrt_load_status_name(s));
	if (n < 0 || (size_t)n >= sizeof(err->msg))
		return s;
	va_start(ap, fmt);
	vsnprintf(err->msg + n, sizeof(err->msg) - (size_t)n, fmt, ap);
	va_end(ap);
	return s;
}

/* ---- record fields --------------------------------------------------- */

struct cursor {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t get_u(struct cursor *c)
{
	uint64_t v = 0;
	if (c->bad || vrt_get_uvarint(&c->p, c->end, &v))
		c->bad = 1;
	return c->bad ? 0 : v;
}

static int64_t get_s(struct cursor *c)
{
	int64_t v = 0;
	if (c->bad || vrt_get_svarint(&c->p, c->end, &v))
		c->bad = 1;
	return c->bad ? 0 : v;
}

/* Reads a str; *out points into the record (not NUL-terminated). */
static size_t get_str(struct cursor *c, const uint8_t **out)
{
	uint64_t n = get_u(c);
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

static char *dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* ---- the shared tables, as callers read them -------------------------- */

uint64_t vrt_load_events(const struct vrt_trace *t)
{
	uint64_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].events;
	return n;
}

const char *vrt_load_str(const struct vrt_trace *t, uint32_t idx)
{
	return idx < t->nstrs ? t->strs[idx] : NULL;
}

const char *vrt_load_phase_name(const struct vrt_trace *t, unsigned phase,
                                char *buf, size_t bufsz)
{
	const char *n;

	if (phase < t->nphases && t->phases[phase])
		return t->phases[phase];
	if (phase == VRT_LOAD_PHASE_INFERRED_KV)
		return VRT_LOAD_PHASE_INFERRED_KV_NAME;
	n = vrt_phase_builtin_name(phase);
	if (n)
		return n;
	snprintf(buf, bufsz, "phase-%u", phase);
	return buf;
}

size_t vrt_load_stack_frames(const struct vrt_trace *t, uint32_t stack,
                             uint32_t *frames, size_t max)
{
	size_t n = 0;

	/* Parents have smaller indexes, so this ends even on bad input. */
	while (stack && stack < t->nstacks && n < max) {
		frames[n++] = t->stacks[stack].frame;
		if (t->stacks[stack].parent >= stack)
			break;
		stack = t->stacks[stack].parent;
	}
	return n;
}

/* ---- loader state ------------------------------------------------------- */

/* Zero bytes after a decoded frame: the unchecked field reads of one record
 * (at most 12 varints of 10 bytes) never leave the buffer. */
#define DEC_PAD 256
/* Decoded-frame buffers kept for reuse, and their alignment (huge pages). */
#define MAX_FREE_FB 3
#define FBUF_ALIGN  (2u << 20)
/* The first input buffer size (grown to hold a whole compressed frame). */
#define READ_BYTES (256u << 10)
/* With more files than this, a file's descriptor is closed between reads
 * (so a run of many processes cannot exhaust descriptors). */
#define MAX_OPEN_FILES 64
/* Stack ids below this get a direct cache slot (writers number from 1). */
#define STACK_CACHE_MAX (1u << 20)
/* Phase ids below this get a direct cache slot. */
#define PHASE_CACHE 1024

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
	 * stack: then never kept). Only answers of resolve_fast are kept,
	 * which never change for the same ids. */
	int32_t g_dev;
	uint32_t g_stack, g_phase;
	uint8_t g_src, g_ok;
};

struct compact {
	uint64_t addr;
	struct ctmpl a, f;
};

/* A thread's BATCH state (trace_format.h), kept per thread id of a file
 * for as long as the file is read: a thread's batches are decoded in the
 * order it wrote them (its events come out in time order, ties in record
 * order). Tables grow as the writer defines slots, up to the format's
 * caps, so the memory follows the threads and their call sites and
 * sizes, never the events. */
struct bsite {
	uint64_t aux, stack, phase;
	uint64_t size;  /* alloc site: its last size (version 4) */
	int32_t device; /* raw ordinal (raw_device) */
	int32_t zslot;  /* the last size's slot, -1 none (version 4) */
	uint16_t api;
	uint8_t kind, has_size;
	uint8_t nmtf; /* version 5: the recent sizes (size slots) */
	uint16_t mtf[VRT_BATCH_MTF];
	/* Resolved fields, once resolve_fast answered for them (answers of
	 * the file's caches never change for the same ids). */
	int32_t g_dev;
	uint32_t g_stack, g_phase;
	uint8_t g_src, g_ok;
};

/* A size and its list of freed addresses: a circle, the top at
 * lifo[(h - 1) % LIFO], so that a push onto a full list drops the bottom
 * entry by writing over it. */
struct bsize {
	uint64_t size;
	uint32_t n, h;
	uint64_t lifo[VRT_BATCH_LIFO];
};

/* A ring entry: the address, its size slot (version 4) or class slot and
 * that slot's definition then (version 5). */
struct bring {
	uint64_t addr;
	int32_t zslot;
	uint32_t gen;
};

/* Version 5: a size slot, a class with its list (as struct bsize), and
 * an entry of the map from classes to class slots. */
struct bhent {
	uint64_t key;
	uint32_t val; /* slot + 1; 0 empty */
};

struct bsize5 {
	uint64_t size;
	int32_t cls;  /* -1 none yet */
	uint32_t gen; /* cls's definition when found (see bclass_of) */
};

struct bclass {
	uint64_t gran; /* granules of VRT_BATCH_GRAIN */
	uint32_t n, h;
	uint32_t gen; /* definitions of the slot so far */
	uint64_t lifo[VRT_BATCH_LIFO];
};

struct bstate {
	uint32_t tid;
	struct bsite *sites;
	size_t nsites, capsites;
	uint64_t site_next;
	struct bsize *sizes;
	size_t nsizes, capsizes;
	/* version 5 */
	struct bsize5 *sizes5;
	size_t nsizes5, capsizes5;
	uint64_t size_next;
	struct bclass *classes;
	size_t nclasses, capclasses;
	uint64_t class_next;
	struct bhent *cmap; /* class slots by granules, linear probing */
	size_t cmap_cap, cmap_n;
	struct bring *ring; /* VRT_BATCH_RING entries, made on first use */
	uint64_t nalloc, last_alloc, last_free;
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

static struct lstate *lstate_of(const struct vrt_trace *t)
{
	return t->intern;
}

/* ---- per-file id tables --------------------------------------------- */

static size_t idtab_slot(const struct idtab *it, uint64_t id)
{
	size_t i = vrt_intern_mix64(id) & (it->cap - 1);
	while (it->val[i] && it->key[i] != id)
		i = (i + 1) & (it->cap - 1);
	return i;
}

/* Index stored for id, or -1. */
static int64_t idtab_get(const struct idtab *it, uint64_t id)
{
	size_t i;

	if (!it->n)
		return -1;
	i = idtab_slot(it, id);
	return it->val[i] ? (int64_t)it->val[i] - 1 : -1;
}

/* Adds id -> v unless id is there already (the first one wins). */
static int idtab_put(struct idtab *it, uint64_t id, uint32_t v)
{
	size_t i;

	if ((it->n + 1) * 10 > it->cap * 7) {
		size_t ncap = it->cap ? it->cap * 2 : 64, j;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *nv = calloc(ncap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		for (j = 0; j < it->cap; j++) {
			size_t k;
			if (!it->val[j])
				continue;
			k = vrt_intern_mix64(it->key[j]) & (ncap - 1);
			while (nv[k])
				k = (k + 1) & (ncap - 1);
			nk[k] = it->key[j];
			nv[k] = it->val[j];
		}
		free(it->key);
		free(it->val);
		it->key = nk;
		it->val = nv;
		it->cap = ncap;
	}
	i = idtab_slot(it, id);
	if (it->val[i])
		return 0;
	it->key[i] = id;
	it->val[i] = v + 1;
	it->n++;
	return 0;
}

static void idtab_free(struct idtab *it)
{
	free(it->key);
	free(it->val);
}

static void file_free(struct lfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	if (!f->is_buf)
		free(f->in);
	free(f->name);
	idtab_free(&f->strs);
	idtab_free(&f->frames);
	idtab_free(&f->stacks);
	idtab_free(&f->phases);
	free(f->ffr);
	free(f->fst);
	free(f->scache);
	for (size_t i = 0; i < f->nbst; i++) {
		free(f->bst[i]->sites);
		free(f->bst[i]->sizes);
		free(f->bst[i]->sizes5);
		free(f->bst[i]->classes);
		free(f->bst[i]->cmap);
		free(f->bst[i]->ring);
		free(f->bst[i]);
	}
	free(f->bst);
	free(f);
}

/* The BATCH state of thread tid in f, made when missing; NULL when out
 * of memory. */
static struct bstate *bstate_of(struct lfile *f, uint32_t tid)
{
	struct bstate *b;

	for (size_t i = f->nbst; i-- > 0;)
		if (f->bst[i]->tid == tid)
			return f->bst[i];
	if (vrt_array_grow((void **)&f->bst, &f->capbst, f->nbst + 1,
	                   sizeof(*f->bst)))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->tid = tid;
	f->bst[f->nbst++] = b;
	return b;
}

/* ---- errors ------------------------------------------------------------- */

static enum vrt_load_status rec_error_at(struct lfile *f, uint64_t frame_off,
                                         struct vrt_load_error *err,
                                         uint64_t roff, const char *what)
{
	return vrt_load_fail(err, VRT_LOAD_ERR_RECORD, f->name,
	                     "%s in frame at byte %" PRIu64
	                     " (record at offset %" PRIu64
	                     " of the decoded frame)",
	                     what, frame_off, roff);
}

static enum vrt_load_status rec_error(struct lfile *f,
                                      struct vrt_load_error *err,
                                      uint64_t roff, const char *what)
{
	return rec_error_at(f, f->frame_off, err, roff, what);
}

static enum vrt_load_status nomem(struct lfile *f, struct vrt_load_error *err,
                                  const char *what)
{
	return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, f->name, "%s", what);
}

/* ---- records: metadata ------------------------------------------------ */

static enum vrt_load_status parse_header(struct vrt_trace *t, struct lfile *f,
                                         struct cursor *c, uint64_t roff,
                                         struct vrt_load_error *err)
{
	struct vrt_process *pr;
	const uint8_t *s;
	size_t n, i;
	uint64_t version, argc;

	if ((size_t)(c->end - c->p) < VRT_TRACE_MAGIC_LEN ||
	    memcmp(c->p, VRT_TRACE_MAGIC, VRT_TRACE_MAGIC_LEN))
		return vrt_load_fail(
		        err, VRT_LOAD_ERR_BAD_MAGIC, f->name,
		        "bad magic in HEADER (frame at byte %" PRIu64 ")",
		        f->frame_off);
	c->p += VRT_TRACE_MAGIC_LEN;
	version = get_u(c);
	if (c->bad)
		return rec_error(f, err, roff, "short HEADER");
	if (version > VRT_TRACE_VERSION)
		return vrt_load_fail(err, VRT_LOAD_ERR_VERSION, f->name,
		                     "format version %" PRIu64
		                     " is newer than this "
		                     "vramtrace supports (%d)",
		                     version, VRT_TRACE_VERSION);
	if (version < VRT_TRACE_VERSION_OLDEST)
		return vrt_load_fail(err, VRT_LOAD_ERR_BAD_MAGIC, f->name,
		                     "format version %" PRIu64 " is not valid",
		                     version);
	f->version = (unsigned)version;
	if (t->nprocs >= UINT32_MAX ||
	    vrt_array_grow((void **)&t->procs, &t->cap_procs, t->nprocs + 1,
	                   sizeof(*t->procs)))
		return nomem(f, err, "header");
	pr = &t->procs[t->nprocs];
	memset(pr, 0, sizeof(*pr));
	f->proc = t->nprocs++;
	f->have_header = 1;
	pr->path = strdup(f->name);
	pr->pid = get_u(c);
	pr->ppid = get_u(c);
	pr->start_wall_ns = (int64_t)get_u(c);
	pr->start_mono_ns = (int64_t)get_u(c);
	uint64_t hflags = get_u(c);
	pr->started_in_standby = (hflags & VRT_HEADER_STANDBY) != 0;
	pr->attached = (hflags & VRT_HEADER_ATTACHED) != 0;
	n = get_str(c, &s);
	pr->host = dup_bytes(s, n);
	n = get_str(c, &s);
	pr->exe = dup_bytes(s, n);
	argc = get_u(c);
	if (c->bad)
		return rec_error(f, err, roff, "short HEADER");
	/* Each argument takes at least one byte: bound argc by the payload. */
	if (argc > (uint64_t)(c->end - c->p))
		return rec_error(f, err, roff,
		                 "HEADER argc larger than the record");
	pr->argv = calloc(argc + 1, sizeof(char *));
	if (!pr->path || !pr->host || !pr->exe || !pr->argv)
		return nomem(f, err, "header");
	for (i = 0; i < argc; i++) {
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(f, err, roff, "short HEADER argv");
		pr->argv[i] = dup_bytes(s, n);
		if (!pr->argv[i])
			return nomem(f, err, "header");
		pr->argc = i + 1;
	}
	if (!f->is_buf) {
		vrt_tracedir_read_exit(pr);
		vrt_tracedir_read_running(pr);
	}
	return VRT_LOAD_OK;
}

static void dcache_set(struct lfile *f, int vendor, int64_t ordinal, int32_t g)
{
	if ((vendor == VRT_VENDOR_CUDA || vendor == VRT_VENDOR_HIP) &&
	    ordinal >= 0 && ordinal < 64)
		f->dcache[vendor - 1][ordinal] = g + 1;
}

static enum vrt_load_status parse_device(struct vrt_trace *t, struct lfile *f,
                                         struct cursor *c, uint64_t roff,
                                         struct vrt_load_error *err)
{
	struct vrt_process *pr = &t->procs[f->proc];
	const uint8_t *name, *uuid;
	size_t nname, nuuid, i;
	char ustr[64];
	uint64_t vendor, ordinal, total;
	int32_t g;

	vendor = get_u(c);
	ordinal = get_u(c);
	total = get_u(c);
	nname = get_str(c, &name);
	nuuid = get_str(c, &uuid);
	if (c->bad || ordinal > INT32_MAX)
		return rec_error(f, err, roff, "malformed DEVICE");
	vrt_intern_format_uuid(ustr, sizeof(ustr), (int)vendor, uuid, nuuid);
	g = vrt_intern_device(t, pr->host, vendor <= 255 ? (int)vendor : 0,
	                      (int64_t)ordinal, ustr);
	if (g < 0)
		return nomem(f, err, "device");
	if (vrt_intern_device_name(t, g, pr, vendor <= 255 ? (int)vendor : 0,
	                           total, name, nname))
		return nomem(f, err, "device");
	for (i = 0; i < f->ndevs; i++) {
		if (f->devs[i].ordinal == (int64_t)ordinal &&
		    (uint64_t)f->devs[i].vendor == vendor) {
			f->devs[i].global = g;
			dcache_set(f, (int)vendor, (int64_t)ordinal, g);
			return VRT_LOAD_OK;
		}
	}
	if (f->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
		return rec_error(f, err, roff, "too many devices");
	f->devs[f->ndevs].vendor = vendor <= 255 ? (int)vendor : 0;
	f->devs[f->ndevs].ordinal = (int64_t)ordinal;
	f->devs[f->ndevs].global = g;
	f->ndevs++;
	if (vendor <= 255)
		dcache_set(f, (int)vendor, (int64_t)ordinal, g);
	return VRT_LOAD_OK;
}

/* STRING, FRAME, STACK, PHASE: kept per file; frames and stacks are
 * interned at the next release. */
static enum vrt_load_status parse_symbolic(struct vrt_trace *t,
                                           struct lfile *f, unsigned type,
                                           struct cursor *c, uint64_t roff,
                                           struct vrt_load_error *err)
{
	const uint8_t *s;
	size_t n;
	uint64_t id = get_u(c);
	int oom = 0;

	switch (type) {
	case VRT_REC_STRING: {
		uint32_t g;
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(f, err, roff, "malformed STRING");
		g = vrt_intern_bytes(t, s, n, &oom);
		if (oom || idtab_put(&f->strs, id, g))
			break;
		return VRT_LOAD_OK;
	}
	case VRT_REC_FRAME: {
		struct file_frame fr;
		memset(&fr, 0, sizeof(fr));
		fr.id = id;
		fr.kind = (uint8_t)get_u(c);
		if (fr.kind == VRT_FRAME_NATIVE)
			fr.ip = get_u(c);
		fr.a = get_u(c);
		fr.b = get_u(c);
		fr.c = get_u(c);
		if (c->bad || fr.kind > VRT_FRAME_PYTHON)
			return rec_error(f, err, roff, "malformed FRAME");
		if (f->nffr >= UINT32_MAX - 1 ||
		    vrt_array_grow((void **)&f->ffr, &f->capffr, f->nffr + 1,
		                   sizeof(*f->ffr)) ||
		    idtab_put(&f->frames, id, (uint32_t)f->nffr))
			break;
		f->ffr[f->nffr++] = fr;
		return VRT_LOAD_OK;
	}
	case VRT_REC_STACK: {
		struct file_stack st;
		memset(&st, 0, sizeof(st));
		st.id = id;
		st.parent = get_u(c);
		st.frame = get_u(c);
		st.phase = get_u(c);
		if (c->bad || id == 0)
			return rec_error(f, err, roff, "malformed STACK");
		if (f->nfst >= UINT32_MAX - 1 ||
		    vrt_array_grow((void **)&f->fst, &f->capfst, f->nfst + 1,
		                   sizeof(*f->fst)) ||
		    idtab_put(&f->stacks, id, (uint32_t)f->nfst))
			break;
		f->fst[f->nfst++] = st;
		return VRT_LOAD_OK;
	}
	case VRT_REC_PHASE: {
		char *name;
		int g;
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(f, err, roff, "malformed PHASE");
		/* Fixed ids keep their names whatever a record says. */
		if (id <= VRT_PHASE_BUILTIN_MAX)
			return VRT_LOAD_OK;
		name = dup_bytes(s, n);
		if (!name)
			break;
		g = vrt_intern_phase(t, name[0] ? name : "(unnamed)");
		free(name);
		if (g < 0 || idtab_put(&f->phases, id, (uint32_t)g))
			break;
		return VRT_LOAD_OK;
	}
	}
	return nomem(f, err, "stacks");
}

/* ---- runs and the heap that merges them ----------------------------------- */

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/* Delivery order: aligned time, then file order, then record order. */
static inline int run_before(const struct run *a, const struct run *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->f->idx != b->f->idx)
		return a->f->idx < b->f->idx;
	return a->order < b->order;
}

static void heap_down(struct run **h, size_t n, size_t i)
{
	struct run *x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && run_before(h[c + 1], h[c]))
			c++;
		if (!run_before(h[c], x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static int heap_push(struct lstate *L, struct run *r)
{
	size_t i;

	if (vrt_array_grow((void **)&L->heap, &L->capheap, L->nheap + 1,
	                   sizeof(*L->heap)))
		return -1;
	i = L->nheap++;
	while (i) {
		size_t up = (i - 1) / 2;
		if (!run_before(r, L->heap[up]))
			break;
		L->heap[i] = L->heap[up];
		i = up;
	}
	L->heap[i] = r;
	return 0;
}

/*
 * (Re)allocates fb's data for at least cap bytes; the old contents are
 * dropped. Big frames (a busy writer's) are mapped directly, so freeing
 * one gives the memory back whatever malloc's thresholds, on a huge-page
 * boundary with a huge-page hint: that spares most page faults of a
 * first pass over them. Small ones come from malloc (a huge page each
 * would cost more than it saves).
 */
static void fbuf_unmap(struct fbuf *fb)
{
	if (fb->mapped)
		munmap(fb->data, fb->cap);
	else
		free(fb->data);
	fb->data = NULL;
	fb->cap = 0;
	fb->mapped = 0;
}

static int fbuf_alloc(struct fbuf *fb, size_t cap)
{
	size_t len = (cap + FBUF_ALIGN - 1) & ~(size_t)(FBUF_ALIGN - 1);
	uint8_t *m, *a;
	uintptr_t off;

	fbuf_unmap(fb);
	if (cap < 2 * FBUF_ALIGN) {
		fb->data = malloc(cap);
		if (!fb->data)
			return -1;
		fb->cap = cap;
		return 0;
	}
	if (len < cap)
		return -1;
	m = mmap(NULL, len + FBUF_ALIGN, PROT_READ | PROT_WRITE,
	         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	off = (uintptr_t)m & (FBUF_ALIGN - 1);
	a = off ? m + (FBUF_ALIGN - off) : m;
	if (a > m)
		munmap(m, (size_t)(a - m));
	if (a + len < m + len + FBUF_ALIGN)
		munmap(a + len, (size_t)(m + len + FBUF_ALIGN - (a + len)));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, len, MADV_HUGEPAGE);
#endif
	fb->data = a;
	fb->cap = len;
	fb->mapped = 1;
	return 0;
}

static void fbuf_put(struct lstate *L, struct fbuf *fb)
{
	if (--fb->refs)
		return;
	if (L->nfree_fb >= MAX_FREE_FB) {
		fbuf_unmap(fb);
		free(fb);
		return;
	}
	fb->next = L->free_fb;
	L->free_fb = fb;
	L->nfree_fb++;
}

static struct run *run_new(struct lstate *L, struct lfile *f, int kind)
{
	struct run *r = L->free_run;

	if (r)
		L->free_run = r->next;
	else if (!(r = malloc(sizeof(*r))))
		return NULL;
	memset(r, 0, sizeof(*r));
	r->f = f;
	r->kind = kind;
	r->order = f->next_order++;
	return r;
}

static void run_free(struct lstate *L, struct run *r)
{
	if (r->fb)
		fbuf_put(L, r->fb);
	free(r->evs);
	r->next = L->free_run;
	L->free_run = r;
}

/* Ends the runs being read (at a CHUNK, a WATERMARK, a record of the other
 * kind, the end of the frame): they join the merge. */
static int close_raw(struct lstate *L, struct lfile *f, const uint8_t *at)
{
	struct run *r = f->seg;

	if (!r)
		return 0;
	f->seg = NULL;
	r->end = at;
	if (heap_push(L, r)) {
		run_free(L, r);
		return -1;
	}
	return 0;
}

static int close_ev(struct lstate *L, struct lfile *f)
{
	struct run *r = f->eseg;

	if (!r)
		return 0;
	f->eseg = NULL;
	r->key = sat_add(r->evs[0].ts, f->shift);
	if (heap_push(L, r)) {
		run_free(L, r);
		return -1;
	}
	return 0;
}

/* ---- records: events ----------------------------------------------------- */

/* Clamps a device ordinal from an event into the int32 kept until the
 * event is delivered; anything below -1 or absurdly large becomes -1. */
static int32_t raw_device(int64_t d)
{
	return (d < -1 || d > INT32_MAX) ? -1 : (int32_t)d;
}

/* Advances the chunk clock by dts (saturating: wrapping timestamps would
 * be corrupt input) and returns the event's time. */
static inline int64_t chunk_time(int64_t *clock, uint64_t dts)
{
	if (__builtin_expect(dts > (uint64_t)(INT64_MAX - *clock), 0))
		*clock = INT64_MAX;
	else
		*clock += (int64_t)dts;
	return *clock;
}

/*
 * Unchecked uvarint read for the hot records: a decoded frame has DEC_PAD
 * zero bytes after it, so reading the fields of a record that starts
 * inside the frame never leaves the buffer; the caller checks once per
 * record that the fields did not run past its end. Sets *bad for a varint
 * longer than VRT_UVARINT_MAX bytes (which vrt_get_uvarint refuses too).
 */
static uint64_t uv_slow(const uint8_t **pp, int *bad)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			return v;
		}
	}
	*pp = p;
	*bad = 1;
	return 0;
}

static inline __attribute__((always_inline)) uint64_t uv(const uint8_t **pp,
                                                         int *bad)
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
		return uv_slow(pp, bad);
	*pp = p + (__builtin_ctzll(stop) >> 3) + 1;
	x &= (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full;
	x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
	x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	x = ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
	return x;
}

static inline int lazy_type(unsigned type, unsigned version)
{
	return type == VRT_REC_ALLOC || type == VRT_REC_FREE ||
	       (version >= 2 && (type == VRT_REC_REPEAT ||
	                         type == VRT_REC_ALLOC_C ||
	                         type == VRT_REC_FREE_C)) ||
	       (version >= 4 && type == VRT_REC_BATCH);
}

/*
 * The header of the BATCH record whose payload is [p, pe) in a file of
 * the given version: fills the column bounds of bc (cursors at their
 * starts), its count, pairs and time unit, *span, *flags. 0, or -1 when
 * the header or the column lengths do not fit the payload, the kind
 * column is too short for n, or (version 5) the pairs are more than the
 * events or the time unit is out of range. Reads with bounds checks (the
 * header is read when the frame is, before any padding guarantee
 * matters).
 */
static int batch_header(const uint8_t *p, const uint8_t *pe, unsigned version,
                        struct bcur *bc, uint64_t *span, uint64_t *flags)
{
	uint64_t n, pairs = 0, len[VRT_BATCH5_COLS - 1];
	int i, cols = version >= 5 ? VRT_BATCH5_COLS : VRT_BATCH_COLS;

	if (vrt_get_uvarint(&p, pe, span) || vrt_get_uvarint(&p, pe, &n) ||
	    vrt_get_uvarint(&p, pe, flags) || n == 0 || n > UINT32_MAX)
		return -1;
	if (version >= 5 && (vrt_get_uvarint(&p, pe, &pairs) || pairs > n ||
	                     (*flags >> 1 & 63) > VRT_BATCH_UNIT_MAX))
		return -1;
	for (i = 0; i < cols - 1; i++)
		if (vrt_get_uvarint(&p, pe, &len[i]))
			return -1;
	for (i = 0; i < cols; i++) {
		uint64_t l = i < cols - 1 ? len[i] : (uint64_t)(pe - p);
		if (l > (uint64_t)(pe - p))
			return -1;
		bc->c[i] = p;
		bc->e[i] = p + l;
		p += l;
	}
	if ((uint64_t)(bc->e[0] - bc->c[0]) < (n + 7) / 8)
		return -1;
	bc->n = (uint32_t)n;
	bc->pairs = (uint32_t)pairs;
	bc->unit = (uint8_t)(*flags >> 1 & 63);
	bc->i = 0;
	return 0;
}

/* The time step of a version 4 BATCH time value (trace_format.h). */
static inline uint64_t batch_dt(uint64_t v)
{
	if (v & 1)
		return v >> 1;
	return v >> 1 > UINT64_MAX / 1000 ? UINT64_MAX : (v >> 1) * 1000;
}

/* A version 5 BATCH event's time from the previous one's (prev, never
 * negative) and its time value v, in units of 2^u ns (trace_format.h);
 * saturates at INT64_MAX. */
static inline int64_t batch5_time(int64_t prev, uint64_t v, unsigned u)
{
	uint64_t k = v >> 1;
	if (v & 1)
		return chunk_time(&prev, k);
	if (!k)
		return prev;
	if (k > (uint64_t)INT64_MAX >> u)
		return INT64_MAX;
	prev &= ~(int64_t)(((uint64_t)1 << u) - 1);
	return chunk_time(&prev, k << u);
}

/* The chunk time at rec: the times of the hot records between f->ts_at
 * and rec are added now (the frame was checked up to rec already). */
static int64_t clock_at(struct lfile *f, const uint8_t *rec)
{
	const uint8_t *p = f->ts_at;
	int bad = 0;

	while (p && p < rec) {
		unsigned type = *p++;
		uint64_t plen = uv(&p, &bad);
		const uint8_t *q = p;
		if (lazy_type(type, f->version))
			(void)chunk_time(&f->ts, uv(&q, &bad));
		p += plen;
	}
	f->ts_at = rec;
	return f->ts;
}

/* Stamps e with the chunk's time, thread and process and appends it to
 * the chunk's RUN_EV (a RUN_RAW being read ends before it). */
static enum vrt_load_status push_event(struct lstate *L, struct lfile *f,
                                       struct vrt_event *e, uint64_t dts,
                                       const uint8_t *rec,
                                       struct vrt_load_error *err)
{
	struct run *r;

	if (close_raw(L, f, rec))
		return nomem(f, err, "events");
	if (!f->eseg && !(f->eseg = run_new(L, f, RUN_EV)))
		return nomem(f, err, "events");
	r = f->eseg;
	if (vrt_array_grow((void **)&r->evs, &r->cap, r->nev + 1,
	                   sizeof(*r->evs)))
		return nomem(f, err, "events");
	(void)clock_at(f, rec);
	e->ts = chunk_time(&f->ts, dts);
	if (f->in_past) {
		/* A fact kept in standby: when it happened (PAST). */
		e->ts = f->past_at;
		e->flags |= VRT_EV_PAST;
	}
	f->ts_at = NULL; /* set past this record by parse_frame */
	e->tid = f->tid;
	e->proc = (uint32_t)f->proc;
	r->evs[r->nev++] = *e;
	return VRT_LOAD_OK;
}

/* MAP, UNMAP, FAIL, MEMINFO (ALLOC, FREE and REPEAT stay encoded in a
 * RUN_RAW until delivered). */
static enum vrt_load_status parse_event(struct lstate *L, struct vrt_trace *t,
                                        struct lfile *f, unsigned type,
                                        struct cursor *c, const uint8_t *rec,
                                        uint64_t roff, uint64_t dts,
                                        struct vrt_load_error *err)
{
	struct vrt_event e;
	uint64_t api = 0, error = 0, have_info = 0, fr = 0, to = 0;

	memset(&e, 0, sizeof(e));
	if (type != VRT_REC_MEMINFO)
		api = get_u(c);
	e.device = raw_device(get_s(c));
	switch (type) {
	case VRT_REC_MAP:
		e.kind = VRT_EV_MAP;
		e.addr = get_u(c);
		e.size = get_u(c);
		(void)get_u(c); /* offset into the handle: not needed */
		e.aux = get_u(c);
		break;
	case VRT_REC_UNMAP:
	case VRT_REC_PREFREE:
		e.kind = type == VRT_REC_UNMAP ? VRT_EV_UNMAP : VRT_EV_PREFREE;
		e.addr = get_u(c);
		e.size = get_u(c);
		break;
	case VRT_REC_FAIL:
		e.kind = VRT_EV_FAIL;
		e.addr = get_u(c);
		e.size = get_u(c);
		(void)get_u(c); /* aux of the failed call */
		error = get_u(c);
		have_info = get_u(c);
		fr = get_u(c);
		to = get_u(c);
		break;
	case VRT_REC_MEMINFO:
		e.kind = VRT_EV_MEMINFO;
		e.addr = get_u(c);
		e.size = get_u(c);
		/* Appended fields, absent from older writers: the probe's
		 * stack (not used), then its api (none: a CUDA probe). */
		if (c->p < c->end)
			(void)get_u(c);
		if (c->p < c->end)
			api = get_u(c);
		/* In a PAST record: the bytes the process held then. */
		if (c->p < c->end)
			e.aux = get_u(c);
		break;
	}
	if (type != VRT_REC_MEMINFO) {
		/* Both stay file ids (the raw phase field) until the event
		 * is delivered. An id too large to be a stack is no stack. */
		uint64_t sid = get_u(c), ph = get_u(c);
		e.stack = sid > UINT32_MAX ? 0 : (uint32_t)sid;
		e.phase = ph > UINT32_MAX ? UINT32_MAX : (uint32_t)ph;
	}
	if (c->bad)
		return rec_error(f, err, roff, "short event record");
	if (api > VRT_API_MAX)
		return rec_error(f, err, roff, "api id out of range");
	e.api = (uint16_t)api;
	if (type == VRT_REC_FAIL) {
		e.aux = error;
		if (have_info)
			e.flags |= VRT_EV_HAVE_INFO;
		if (t->nfails >= UINT32_MAX ||
		    vrt_array_grow((void **)&t->fails, &t->cap_fails,
		                   t->nfails + 1, sizeof(*t->fails)))
			return nomem(f, err, "events");
		t->fails[t->nfails].free_bytes = have_info ? fr : 0;
		t->fails[t->nfails].total_bytes = have_info ? to : 0;
		e.extra = (uint32_t)t->nfails++;
	}
	return push_event(L, f, &e, dts, rec, err);
}

/* A sampler reading: kept in t->samples, and as an event (so it is timed,
 * its device mapped and ordered like every event; its time, process and
 * device are copied into t->samples when it is delivered). */
static enum vrt_load_status parse_sample(struct lstate *L, struct vrt_trace *t,
                                         struct lfile *f, struct cursor *c,
                                         const uint8_t *rec, uint64_t roff,
                                         uint64_t dts,
                                         struct vrt_load_error *err)
{
	struct vrt_sample smp;
	struct vrt_event e;

	memset(&smp, 0, sizeof(smp));
	memset(&e, 0, sizeof(e));
	smp.kind = (uint8_t)get_u(c);
	if (smp.kind == VRT_SAMPLE_DEVICE) {
		e.device = raw_device(get_s(c));
		smp.used = get_u(c);
		smp.total = get_u(c);
		uint64_t np = get_u(c);
		if (c->bad || np > 4096)
			return rec_error(f, err, roff, "malformed SAMPLE");
		smp.first_pid = (uint32_t)t->nsample_pids;
		for (uint64_t k = 0; k < np; k++) {
			struct vrt_sample_pid sp;
			sp.pid = get_u(c);
			sp.used_bytes = get_u(c);
			if (c->bad)
				return rec_error(f, err, roff,
				                 "malformed SAMPLE");
			if (t->nsample_pids >= UINT32_MAX ||
			    vrt_array_grow((void **)&t->sample_pids,
			                   &t->cap_sample_pids,
			                   t->nsample_pids + 1, sizeof(sp)))
				return nomem(f, err, "samples");
			t->sample_pids[t->nsample_pids++] = sp;
		}
		smp.npids = (uint32_t)np;
	} else if (smp.kind == VRT_SAMPLE_HOST) {
		e.device = -1;
		smp.used = get_u(c);
		smp.total = get_u(c);
		smp.swap_total = get_u(c);
		smp.swap_free = get_u(c);
	} else {
		return VRT_LOAD_OK; /* a newer kind: skipped */
	}
	if (c->bad)
		return rec_error(f, err, roff, "malformed SAMPLE");
	if (vrt_array_grow((void **)&t->samples, &t->cap_samples,
	                   t->nsamples + 1, sizeof(smp)) ||
	    t->nsamples >= UINT32_MAX)
		return nomem(f, err, "samples");
	t->samples[t->nsamples] = smp;
	e.kind = VRT_EV_SAMPLE;
	e.extra = (uint32_t)t->nsamples++;
	return push_event(L, f, &e, dts, rec, err);
}

/* MARK, NET, PROC, REQUEST, SAMPLE, SNAPSHOT: chunk events that change no
 * memory. */
static enum vrt_load_status parse_chunk_event(struct lstate *L,
                                              struct vrt_trace *t,
                                              struct lfile *f, unsigned type,
                                              struct cursor *c,
                                              const uint8_t *rec,
                                              uint64_t roff, uint64_t dts,
                                              struct vrt_load_error *err)
{
	struct vrt_event e;
	const uint8_t *s = NULL;
	size_t n = 0;
	int oom = 0;
	uint32_t net_val = 0;

	memset(&e, 0, sizeof(e));
	switch (type) {
	case VRT_REC_MARK:
		e.kind = VRT_EV_MARK;
		n = get_str(c, &s);
		break;
	case VRT_REC_NET: {
		uint64_t v = 0;
		e.kind = VRT_EV_NET;
		e.aux = get_u(c);
		e.addr = get_u(c);
		e.size = get_u(c);
		/* Appended later, each absent from older writers (0): the
		 * socket's family, the stream, flags, val, the path. */
		if (c->p < c->end) {
			uint64_t k = get_u(c);
			e.extra = k <= VRT_NET_KIND_OTHER ? (uint32_t)k
			                                  : VRT_NET_KIND_OTHER;
		}
		if (c->p < c->end)
			e.phase = (uint32_t)get_u(c);
		if (c->p < c->end)
			e.api = (uint16_t)(get_u(c) & 0xffff);
		if (c->p < c->end)
			v = get_u(c);
		if (c->p < c->end)
			n = get_str(c, &s);
		/* val: an inferred end's lag is kept in microseconds */
		if (e.aux == VRT_NET_REQ_END && (e.api & VRT_NET_F_INFERRED))
			v /= 1000;
		net_val = (uint32_t)(v < UINT32_MAX ? v : UINT32_MAX);
		break;
	}
	case VRT_REC_PROC:
		e.kind = VRT_EV_PROC;
		e.aux = get_u(c);
		e.addr = get_u(c);
		n = get_str(c, &s);
		break;
	case VRT_REC_REQUEST:
		e.kind = VRT_EV_REQUEST;
		e.aux = get_u(c);
		e.addr = get_u(c);
		break;
	case VRT_REC_SAMPLE:
		return parse_sample(L, t, f, c, rec, roff, dts, err);
	case VRT_REC_SNAPSHOT:
		e.kind = VRT_EV_SNAPSHOT;
		e.aux = get_u(c);
		f->in_snap = e.aux == 1;
		f->snap_tid = f->tid;
		break;
	}
	if (c->bad)
		return rec_error(f, err, roff, "short event record");
	if (type == VRT_REC_MARK || type == VRT_REC_PROC) {
		e.extra = vrt_intern_bytes(t, s, n, &oom);
		if (oom)
			return nomem(f, err, "strings");
	}
	e.device = -1;
	if (type == VRT_REC_NET) {
		if (n) {
			uint32_t text = vrt_intern_bytes(t, s, n, &oom);
			if (oom)
				return nomem(f, err, "strings");
			if (text < (1u << 30))
				e.extra |= text << 2;
		}
		e.stack = net_val;
	}
	/* Open connections and requests of a snapshot are its state. */
	if ((type == VRT_REC_NET || type == VRT_REC_REQUEST) && f->in_snap &&
	    f->tid == f->snap_tid && !f->in_past)
		e.flags |= VRT_EV_SNAP;
	return push_event(L, f, &e, dts, rec, err);
}

static enum vrt_load_status intern_new_symbols(struct vrt_trace *t,
                                               struct lfile *f,
                                               struct vrt_load_error *err);

/*
 * Reads the records of one decoded frame: metadata goes into the tables at
 * once; ALLOC, FREE and REPEAT records are only counted and timed (their
 * fields are read when delivered), so a chunk's run of them is a range of
 * the frame; other events are decoded now, in record order, since they
 * add to tables (fails, samples, strings).
 */
static enum vrt_load_status parse_frame(struct lstate *L, struct vrt_trace *t,
                                        struct lfile *f, struct fbuf *fb,
                                        struct vrt_load_error *err)
{
	const uint8_t *buf = fb->data, *p = buf, *end = buf + fb->len;
	enum vrt_load_status st = VRT_LOAD_OK;
	uint64_t nev = 0; /* events counted for this file's process */
	uint64_t nheld = 0; /* event records read */
	int v2 = f->version >= 2, v4 = f->version >= 4;

	f->have_chunk = 0;
	f->ts_at = NULL;
	while (p < end) {
		const uint8_t *rec = p, *pe, *q;
		uint64_t plen, dts;
		unsigned type = *p++;
		struct cursor c;
		int bad = 0;

		if (p < end && *p < 0x80) {
			plen = *p++;
		} else if (vrt_get_uvarint(&p, end, &plen)) {
			st = rec_error(f, err, (uint64_t)(rec - buf),
			               "record longer than its frame");
			break;
		}
		if (plen > (uint64_t)(end - p)) {
			st = rec_error(f, err, (uint64_t)(rec - buf),
			               "record longer than its frame");
			break;
		}
		pe = p + plen;
		if (__builtin_expect(!f->have_header, 0)) {
			if (type != VRT_REC_HEADER) {
				st = vrt_load_fail(
				        err, VRT_LOAD_ERR_NO_HEADER, f->name,
				        "first record is type %u, not a "
				        "HEADER",
				        type);
				break;
			}
			c.p = p;
			c.end = pe;
			c.bad = 0;
			st = parse_header(t, f, &c, (uint64_t)(rec - buf), err);
			if (st)
				break;
			v2 = f->version >= 2;
			v4 = f->version >= 4;
			p = pe;
			continue;
		}
		c.p = p;
		c.end = pe;
		c.bad = 0;
		switch (type) {
		case VRT_REC_BATCH:
			if (!v4)
				break; /* not a record before version 4 */
			/* fall through */
		case VRT_REC_REPEAT:
		case VRT_REC_ALLOC_C:
		case VRT_REC_FREE_C:
			if (!v2)
				break; /* not a record of version 1: skipped */
			/* fall through */
		case VRT_REC_ALLOC:
		case VRT_REC_FREE:
			if (!f->have_chunk) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "event before any CHUNK");
				goto out;
			}
			if (type == VRT_REC_BATCH) {
				struct bcur bc;
				uint64_t span, flags, k;
				if (batch_header(p, pe, f->version, &bc, &span,
				                 &flags)) {
					st = rec_error(f, err,
					               (uint64_t)(rec - buf),
					               "malformed BATCH header");
					goto out;
				}
				/* A pair is an allocation and a free. */
				k = (uint64_t)bc.n + bc.pairs;
				nev += k > UINT64_MAX - nev ? UINT64_MAX - nev : k;
				nheld += bc.n - 1; /* and 1 below */
			} else if (type == VRT_REC_REPEAT) {
				/* Each folded pair is an allocation and a
				 * free. */
				uint64_t count;
				q = p;
				(void)uv(&q, &bad);
				count = uv(&q, &bad);
				if (bad || q > pe) {
					st = rec_error(f, err,
					               (uint64_t)(rec - buf),
					               "short event record");
					goto out;
				}
				nev += count > (UINT64_MAX - nev) / 2
				               ? UINT64_MAX - nev
				               : 2 * count;
			} else {
				nev++;
			}
			nheld++;
			if (!f->seg) {
				struct run *r;
				if (f->eseg && close_ev(L, f)) {
					st = nomem(f, err, "events");
					goto out;
				}
				r = run_new(L, f, RUN_RAW);
				if (!r) {
					st = nomem(f, err, "events");
					goto out;
				}
				r->fb = fb;
				fb->refs++;
				r->p = rec;
				r->clock = clock_at(f, rec);
				r->tid = f->tid;
				r->snap = f->in_snap && f->tid == f->snap_tid;
				f->seg = r;
				q = p;
				dts = uv(&q, &bad);
				r->key = r->clock;
				if (type == VRT_REC_BATCH) {
					/* The key is the first event's time,
					 * not the record's span. */
					struct bcur bc;
					uint64_t span, flags, v;
					(void)batch_header(p, pe, f->version, &bc,
					                   &span, &flags);
					q = bc.c[1];
					v = q < bc.e[1] ? uv(&q, &bad) : 0;
					if (f->version >= 5)
						r->key = batch5_time(r->clock, v,
						                     bc.unit);
					else
						(void)chunk_time(&r->key,
						                 batch_dt(v));
				} else {
					(void)chunk_time(&r->key, dts);
				}
				r->key = sat_add(r->key, f->shift);
			}
			/* The chunk's next ALLOC and FREE records (the bulk of
			 * a trace) only need their lengths checked now. */
			while (end - pe >= 2 &&
			       (pe[0] == VRT_REC_ALLOC || pe[0] == VRT_REC_FREE ||
			        (v2 && (pe[0] == VRT_REC_ALLOC_C ||
			                pe[0] == VRT_REC_FREE_C))) &&
			       pe[1] < 0x80 && pe[1] <= end - pe - 2) {
				pe += 2 + pe[1];
				nev++;
				nheld++;
			}
			break;
		case VRT_REC_MAP:
		case VRT_REC_UNMAP:
		case VRT_REC_FAIL:
		case VRT_REC_MEMINFO:
		case VRT_REC_PREFREE:
			if (!f->have_chunk) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "event before any CHUNK");
				goto out;
			}
			dts = get_u(&c);
			st = parse_event(L, t, f, type, &c, rec,
			                 (uint64_t)(rec - buf), dts, err);
			if (st)
				goto out;
			f->ts_at = pe;
			nev++;
			nheld++;
			break;
		case VRT_REC_MARK:
		case VRT_REC_NET:
		case VRT_REC_PROC:
		case VRT_REC_REQUEST:
		case VRT_REC_SAMPLE:
		case VRT_REC_SNAPSHOT: {
			struct run *e0 = f->eseg;
			size_t before = e0 ? e0->nev : 0;
			if (!f->have_chunk) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "event before any CHUNK");
				goto out;
			}
			dts = get_u(&c);
			st = parse_chunk_event(L, t, f, type, &c, rec,
			                       (uint64_t)(rec - buf), dts, err);
			if (st)
				goto out;
			if (!f->ts_at)
				f->ts_at = pe; /* its time is in f->ts */
			/* A skipped sample kind adds no event. */
			if (f->eseg && (f->eseg != e0 || f->eseg->nev > before)) {
				nev++;
				nheld++;
			}
			break;
		}
		case VRT_REC_PAST: {
			struct run *e0 = f->eseg;
			size_t before = e0 ? e0->nev : 0;
			uint64_t inner, at;
			if (!f->have_chunk) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "event before any CHUNK");
				goto out;
			}
			dts = get_u(&c);
			inner = get_u(&c);
			at = get_u(&c);
			if (c.bad) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "short PAST record");
				goto out;
			}
			f->in_past = 1;
			f->past_at = at > INT64_MAX ? INT64_MAX : (int64_t)at;
			if (inner == VRT_REC_MEMINFO)
				st = parse_event(L, t, f, (unsigned)inner, &c,
				                 rec, (uint64_t)(rec - buf), dts,
				                 err);
			else if (inner == VRT_REC_NET || inner == VRT_REC_PROC ||
			         inner == VRT_REC_REQUEST ||
			         inner == VRT_REC_SAMPLE)
				st = parse_chunk_event(L, t, f, (unsigned)inner,
				                       &c, rec,
				                       (uint64_t)(rec - buf), dts,
				                       err);
			else { /* a kind we do not know: only its time */
				(void)clock_at(f, rec);
				(void)chunk_time(&f->ts, dts);
				f->ts_at = NULL;
			}
			f->in_past = 0;
			if (st)
				goto out;
			if (!f->ts_at)
				f->ts_at = pe;
			if (f->eseg && (f->eseg != e0 || f->eseg->nev > before)) {
				nev++;
				nheld++;
			}
			break;
		}
		case VRT_REC_CHUNK: {
			uint64_t tid = get_u(&c), ts = get_u(&c);
			if (c.bad) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "short CHUNK");
				goto out;
			}
			if (close_raw(L, f, rec) || close_ev(L, f)) {
				st = nomem(f, err, "events");
				goto out;
			}
			f->have_chunk = 1;
			f->tid = (uint32_t)tid;
			f->ts = ts > INT64_MAX ? INT64_MAX : (int64_t)ts;
			f->ts_at = pe;
			break;
		}
		case VRT_REC_HEADER:
			/* One process per file: a repeated HEADER adds
			 * nothing, so it is skipped like an unknown record. */
			break;
		case VRT_REC_DEVICE:
			st = parse_device(t, f, &c, (uint64_t)(rec - buf), err);
			if (st)
				goto out;
			break;
		case VRT_REC_STRING:
		case VRT_REC_FRAME:
		case VRT_REC_STACK:
		case VRT_REC_PHASE:
			st = parse_symbolic(t, f, type, &c,
			                    (uint64_t)(rec - buf), err);
			if (st)
				goto out;
			break;
		case VRT_REC_WATERMARK: {
			uint64_t w = get_u(&c);
			/* A malformed watermark promises nothing: skipped. */
			if (c.bad)
				break;
			if (close_raw(L, f, rec) || close_ev(L, f)) {
				st = nomem(f, err, "events");
				goto out;
			}
			st = intern_new_symbols(t, f, err);
			if (st)
				goto out;
			if ((int64_t)(w > INT64_MAX ? INT64_MAX : w) > f->relw)
				f->relw = w > INT64_MAX ? INT64_MAX
				                        : (int64_t)w;
			break;
		}
		case VRT_REC_TRAILER: {
			struct vrt_process *pr = &t->procs[f->proc];
			const uint8_t *s;
			size_t n;
			uint64_t endns = get_u(&c);
			pr->trailer_flags = get_u(&c);
			pr->events_written = get_u(&c);
			pr->events_dropped = get_u(&c);
			n = get_str(&c, &s);
			if (c.bad) {
				st = rec_error(f, err, (uint64_t)(rec - buf),
				               "short TRAILER");
				goto out;
			}
			free(pr->note);
			pr->note = dup_bytes(s, n);
			if (!pr->note) {
				st = nomem(f, err, "trailer");
				goto out;
			}
			pr->has_trailer = 1;
			pr->end_mono_ns =
			        endns > INT64_MAX ? INT64_MAX : (int64_t)endns;
			/* How the process left, as it knew it (appended
			 * later): an exit file (what its parent or record
			 * reaped) says more and wins. */
			if (c.p < c.end) {
				uint64_t kind = get_u(&c), code = get_u(&c);
				if (!c.bad && kind == VRT_TRAILER_EXIT_CODE &&
				    pr->exit_kind == VRT_EXIT_NONE &&
				    code <= 255) {
					pr->exit_kind = VRT_EXIT_CODE;
					pr->exit_code = (int)code;
					pr->running = 0;
				}
			}
			break;
		}
		default:
			/* Types from newer writers: skipped by their
			 * length. */
			break;
		}
		p = pe;
	}
	if (!st && (close_raw(L, f, end) || close_ev(L, f)))
		st = nomem(f, err, "events");
out:
	L->held += nheld;
	if (L->held > t->events_held_max)
		t->events_held_max = L->held;
	if (f->have_header) {
		uint64_t *cnt = &t->procs[f->proc].events;
		*cnt = nev > UINT64_MAX - *cnt ? UINT64_MAX : *cnt + nev;
	}
	return st;
}

/* ---- delivery: symbols, devices, decoding -------------------------------- */

static uint32_t file_string(const struct lfile *f, uint64_t id)
{
	int64_t i;

	if (!id)
		return 0;
	i = idtab_get(&f->strs, id);
	return i < 0 ? 0 : (uint32_t)i;
}

/* The shared phase index of a file's phase id; an undeclared custom id
 * becomes "phase-N". -1 on ENOMEM. */
static int file_phase(struct vrt_trace *t, struct lfile *f, unsigned id)
{
	int64_t i;
	char name[32];

	if (id <= VRT_PHASE_BUILTIN_MAX)
		return (int)id;
	if (id < PHASE_CACHE && f->pcache[id])
		return (int)f->pcache[id] - 1;
	i = idtab_get(&f->phases, id);
	if (i >= 0) {
		if (id < PHASE_CACHE)
			f->pcache[id] = (uint32_t)i + 1;
		return (int)i;
	}
	snprintf(name, sizeof(name), "phase-%u", id);
	return vrt_intern_phase(t, name);
}

/* Shared stack index of file stack k, interning its path outermost
 * first. A parent nothing declares, a cycle, or a path deeper than
 * VRT_LOAD_MAX_DEPTH ends the path there (as if at the root). */
static int resolve_stack(struct vrt_trace *t, struct lfile *f, size_t k,
                         size_t *chain)
{
	size_t len = 0, j = k;
	uint32_t base = 0;
	int oom = 0;

	for (;;) {
		struct file_stack *st = &f->fst[j];
		int64_t p;
		if (st->state == 2) {
			base = st->g;
			break;
		}
		if (st->state == 1 || len == VRT_LOAD_MAX_DEPTH)
			break;
		st->state = 1;
		chain[len++] = j;
		if (!st->parent)
			break;
		p = idtab_get(&f->stacks, st->parent);
		if (p < 0)
			break;
		j = (size_t)p;
	}
	while (len) {
		struct file_stack *st = &f->fst[chain[--len]];
		int64_t fi = idtab_get(&f->frames, st->frame);
		uint32_t frame = fi < 0 ? 0 : f->ffr[fi].g;
		base = vrt_intern_stack(t, base, frame, &oom);
		if (oom)
			return -1;
		st->g = base;
		st->state = 2;
	}
	return 0;
}

struct idseq {
	uint64_t id;
	size_t seq;
};

static int cmp_idseq(const void *pa, const void *pb)
{
	const struct idseq *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Interns the frames, then the stacks, declared since the last release,
 * each in (id, order of appearance) order — at the end of a file without
 * watermarks, exactly the order a whole-file reader uses. */
static enum vrt_load_status intern_new_symbols(struct vrt_trace *t,
                                               struct lfile *f,
                                               struct vrt_load_error *err)
{
	size_t n = f->nffr - f->ffr_done, m = f->nfst - f->fst_done, i;
	size_t cap = n > m ? n : m;
	struct idseq *ord;
	size_t *chain = NULL;
	int oom = 0;

	if (!cap)
		return VRT_LOAD_OK;
	ord = malloc(cap * sizeof(*ord));
	if (!ord)
		return nomem(f, err, "stacks");
	for (i = 0; i < n; i++) {
		ord[i].id = f->ffr[f->ffr_done + i].id;
		ord[i].seq = f->ffr_done + i;
	}
	if (n > 1)
		qsort(ord, n, sizeof(*ord), cmp_idseq);
	for (i = 0; i < n; i++) {
		struct file_frame *ff = &f->ffr[ord[i].seq];
		struct vrt_frame fr;
		memset(&fr, 0, sizeof(fr));
		fr.kind = ff->kind;
		fr.file = file_string(f, ff->a);
		fr.function = file_string(f, ff->b);
		if (ff->kind == VRT_FRAME_PYTHON) {
			fr.line = ff->c;
		} else {
			fr.offset = ff->c;
			/* Without a symbol the address is all there is
			 * (and it only matches within one process). */
			if (!fr.function)
				fr.ip = ff->ip;
		}
		ff->g = vrt_intern_frame(t, &fr, &oom);
		if (oom)
			goto nomem;
	}
	f->ffr_done = f->nffr;
	if (m) {
		for (i = 0; i < m; i++) {
			ord[i].id = f->fst[f->fst_done + i].id;
			ord[i].seq = f->fst_done + i;
		}
		if (m > 1)
			qsort(ord, m, sizeof(*ord), cmp_idseq);
		chain = malloc((f->nfst < VRT_LOAD_MAX_DEPTH
		                        ? f->nfst
		                        : VRT_LOAD_MAX_DEPTH) *
		               sizeof(*chain));
		if (!chain)
			goto nomem;
		for (i = 0; i < m; i++)
			if (f->fst[ord[i].seq].state != 2 &&
			    resolve_stack(t, f, ord[i].seq, chain))
				goto nomem;
		f->fst_done = f->nfst;
	}
	free(chain);
	free(ord);
	return VRT_LOAD_OK;
nomem:
	free(chain);
	free(ord);
	return nomem(f, err, "stacks");
}

/* What the file's stack id sid resolves to ({0, 0}: no stack). */
static struct stack_res stack_lookup(struct lfile *f, uint32_t sid)
{
	struct stack_res r = {0, 0};
	int64_t k;

	if (sid < f->scap && f->scache[sid].g1)
		return f->scache[sid];
	k = idtab_get(&f->stacks, sid);
	if (k < 0 || f->fst[k].state != 2)
		return r; /* not declared (yet): no stack */
	r.g1 = f->fst[k].g + 1;
	r.phase = vrt_phase_id(f->fst[k].phase);
	if (sid < STACK_CACHE_MAX) {
		if (sid >= f->scap) {
			size_t ncap = f->scap ? f->scap : 1024;
			struct stack_res *nc;
			while (ncap <= sid)
				ncap *= 2;
			nc = realloc(f->scache, ncap * sizeof(*nc));
			if (!nc)
				return r; /* only a cache: go without */
			memset(nc + f->scap, 0,
			       (ncap - f->scap) * sizeof(*nc));
			f->scache = nc;
			f->scap = ncap;
		}
		f->scache[sid] = r;
	}
	return r;
}

/* Maps an event's raw ordinal to a global device (created when no DEVICE
 * record described it). */
static enum vrt_load_status map_device(struct vrt_trace *t, struct lfile *f,
                                       struct vrt_event *e, int vendor,
                                       struct vrt_load_error *err)
{
	int32_t g = -1;
	size_t j;

	for (j = 0; j < f->ndevs; j++) {
		if (f->devs[j].ordinal == e->device &&
		    f->devs[j].vendor == vendor) {
			g = f->devs[j].global;
			break;
		}
	}
	if (g < 0) {
		/* An ordinal no DEVICE record described. */
		if (f->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
			return vrt_load_fail(err, VRT_LOAD_ERR_RECORD, f->name,
			                     "too many devices");
		g = vrt_intern_device(t, t->procs[f->proc].host, vendor,
		                      e->device, "");
		if (g < 0)
			return nomem(f, err, "devices");
		f->devs[f->ndevs].vendor = vendor;
		f->devs[f->ndevs].ordinal = e->device;
		f->devs[f->ndevs].global = g;
		f->ndevs++;
	}
	dcache_set(f, vendor, e->device, g);
	e->device = g;
	return VRT_LOAD_OK;
}

/*
 * Gives a delivered event its global device, stack and phase: an
 * annotation stands; otherwise the STACK record's phase (the writer's
 * rules); otherwise the event's own field; else unattributed. cmd_analyze
 * may re-classify later (attrib.c). The common cases are the caches'; the
 * rest goes to resolve_slow.
 */
static enum vrt_load_status resolve_slow(struct vrt_trace *t, struct lfile *f,
                                         struct vrt_event *e,
                                         struct vrt_load_error *err)
{
	if (e->device >= 0) {
		int vendor = vrt_api_vendor(e->api);
		int32_t g1 = e->device < 64 ? f->dcache[vendor - 1][e->device]
		                            : 0;
		if (g1) {
			e->device = g1 - 1;
		} else {
			enum vrt_load_status st =
			        map_device(t, f, e, vendor, err);
			if (st)
				return st;
		}
	} else {
		e->device = -1;
	}
	if (e->kind <= VRT_EV_FAIL || e->kind == VRT_EV_REPEAT) {
		unsigned src = vrt_phase_source(e->phase);
		unsigned id = vrt_phase_id(e->phase);
		struct stack_res sr = {0, 0};
		int g;

		if (e->stack)
			sr = stack_lookup(f, e->stack);
		e->stack = sr.g1 ? sr.g1 - 1 : 0;
		if (src != VRT_SRC_ANNOTATION) {
			if (sr.g1 && sr.phase)
				id = sr.phase;
			src = VRT_SRC_RULE;
		}
		g = id ? file_phase(t, f, id) : 0;
		if (g < 0)
			return nomem(f, err, "stacks");
		e->phase = (uint32_t)g;
		e->phase_src = (uint8_t)(g ? src : VRT_SRC_RULE);
	}
	return VRT_LOAD_OK;
}

/* resolve_event from the file's caches alone: 1 when e was resolved, 0
 * (e untouched) when resolve_slow must. */
static inline __attribute__((always_inline)) int
resolve_fast(const struct lfile *f, struct vrt_event *e)
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
resolve_event(struct vrt_trace *t, struct lfile *f, struct vrt_event *e,
              struct vrt_load_error *err)
{
	return resolve_fast(f, e) ? VRT_LOAD_OK : resolve_slow(t, f, e, err);
}

/* Bookkeeping of one delivered event (its time aligned already). */
static inline void delivered(struct lstate *L, struct vrt_trace *t,
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

/*
 * The events of one REPEAT record (after its dts, at *pp): one per
 * template that folded pairs, `count` spread over the cycle. Templates
 * before *rep_k were delivered by an earlier call; when out fills up,
 * *rep_k says where to resume (0: the record is done).
 */
static enum vrt_load_status emit_repeat(struct vrt_trace *t, struct lfile *f,
                                        struct run *r, const uint8_t *rec,
                                        const uint8_t **pp,
                                        const uint8_t *pe,
                                        struct vrt_event *out, size_t max,
                                        size_t *np, int64_t tsx,
                                        unsigned *rep_k,
                                        struct vrt_load_error *err)
{
	const uint8_t *p = *pp;
	uint64_t count, period, k;
	size_t n = *np;
	int bad = 0;
	enum vrt_load_status st = VRT_LOAD_OK;

	count = uv(&p, &bad);
	(void)uv(&p, &bad); /* span: not kept */
	period = uv(&p, &bad);
	if (bad || p > pe || period < 1 || period > VRT_REPEAT_MAX_PERIOD)
		goto malformed;
	for (k = 0; k < period; k++) {
		struct vrt_event e;
		uint64_t api, fapi, sid, ph, nk;
		api = uv(&p, &bad);
		fapi = uv(&p, &bad);
		e.device = raw_device(vrt_unzigzag(uv(&p, &bad)));
		(void)uv(&p, &bad); /* free device: the alloc's */
		e.size = uv(&p, &bad);
		e.aux = uv(&p, &bad);
		(void)uv(&p, &bad); /* free aux: not kept */
		sid = uv(&p, &bad);
		ph = uv(&p, &bad);
		if (bad || p > pe)
			goto malformed;
		if (api > VRT_API_MAX || fapi > VRT_API_MAX) {
			st = rec_error_at(f, r->fb->frame_off, err,
			                  (uint64_t)(rec - r->fb->data),
			                  "api id out of range");
			break;
		}
		nk = count / period + (k < count % period);
		if (k < *rep_k || !nk)
			continue;
		if (n == max) {
			*rep_k = (unsigned)k;
			*np = n;
			return VRT_LOAD_OK;
		}
		e.addr = nk;
		e.extra = (uint32_t)fapi;
		e.kind = VRT_EV_REPEAT;
		e.flags = 0;
		e.api = (uint16_t)api;
		e.ts = tsx;
		e.proc = (uint32_t)f->proc;
		e.tid = r->tid;
		e.stack = sid > UINT32_MAX ? 0 : (uint32_t)sid;
		e.phase = ph > UINT32_MAX ? UINT32_MAX : (uint32_t)ph;
		e.phase_src = 0;
		st = resolve_event(t, f, &e, err);
		if (st)
			break;
		out[n++] = e;
	}
	*rep_k = 0;
	*np = n;
	*pp = p;
	return st;
malformed:
	*rep_k = 0;
	*np = n;
	return rec_error_at(f, r->fb->frame_off, err,
	                    (uint64_t)(rec - r->fb->data),
	                    "short event record");
}

/* The address delta of an ALLOC_C or FREE_C (packed from version 3). */
static inline uint64_t addr_delta(uint64_t raw, int v3)
{
	return v3 ? (uint64_t)vrt_unpack_s(raw) : (uint64_t)vrt_unzigzag(raw);
}

/* Keeps the latest time delivered; an event below it counts as late. */
static inline void note_time(int64_t tsx, int64_t *last, int *have_last,
                             uint64_t *late)
{
	if (__builtin_expect(*have_last && tsx < *last, 0)) {
		(*late)++;
	} else {
		*last = tsx;
		*have_last = 1;
	}
}

/* Empties a thread's BATCH state (its memory stays for reuse). */
static void bstate_clear(struct bstate *b)
{
	b->nsites = 0;
	b->site_next = 0;
	b->nsizes = 0;
	b->nsizes5 = 0;
	b->size_next = 0;
	b->nclasses = 0;
	b->class_next = 0;
	if (b->cmap_cap)
		memset(b->cmap, 0, b->cmap_cap * sizeof(*b->cmap));
	b->cmap_n = 0;
	b->nalloc = 0;
	b->last_alloc = b->last_free = 0;
}

/* Where the writer puts a new site: the next slot, round the table. */
static struct bsite *bsite_define(struct bstate *b)
{
	size_t slot = (size_t)(b->site_next % VRT_BATCH_SITES);
	if (slot >= b->nsites) {
		if (vrt_array_grow((void **)&b->sites, &b->capsites, slot + 1,
		                   sizeof(*b->sites)))
			return NULL;
		b->nsites = slot + 1;
	}
	b->site_next++;
	memset(&b->sites[slot], 0, sizeof(b->sites[slot]));
	b->sites[slot].zslot = -1;
	return &b->sites[slot];
}

/* Version 5: slot z goes first in a site's recent sizes, the entries 0
 * to k - 1 before it moving up one (the one at k leaves; k <= 7). One
 * jump and k moves: most sizes are the site's last (k = 0), and a loop
 * would be made a memmove call. */
_Static_assert(VRT_BATCH_MTF == 8, "mtf_front moves up to 7 entries");

static inline void mtf_front(uint16_t *m, uint32_t k, uint16_t z)
{
	switch (k) {
	case 7:
		m[7] = m[6];
		/* fall through */
	case 6:
		m[6] = m[5];
		/* fall through */
	case 5:
		m[5] = m[4];
		/* fall through */
	case 4:
		m[4] = m[3];
		/* fall through */
	case 3:
		m[3] = m[2];
		/* fall through */
	case 2:
		m[2] = m[1];
		/* fall through */
	case 1:
		m[1] = m[0];
		/* fall through */
	default:
		m[0] = z;
	}
}

/* Version 5: the class slot holding granules g, or -1. */
static int32_t bclass_find(const struct bstate *b, uint64_t g)
{
	if (!b->cmap_cap)
		return -1;
	for (size_t j = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) &
	                (b->cmap_cap - 1);
	     b->cmap[j].val; j = (j + 1) & (b->cmap_cap - 1))
		if (b->cmap[j].key == g)
			return (int32_t)b->cmap[j].val - 1;
	return -1;
}

static void bclass_del(struct bstate *b, uint64_t g)
{
	size_t mask = b->cmap_cap - 1, i;
	if (!b->cmap_cap)
		return;
	i = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) & mask;
	while (b->cmap[i].val && b->cmap[i].key != g)
		i = (i + 1) & mask;
	if (!b->cmap[i].val)
		return;
	for (size_t j = (i + 1) & mask; b->cmap[j].val; j = (j + 1) & mask) {
		size_t h = (size_t)(b->cmap[j].key * 0x9e3779b97f4a7c15ull >>
		                    32) & mask;
		if (((j - h) & mask) >= ((j - i) & mask)) {
			b->cmap[i] = b->cmap[j];
			i = j;
		}
	}
	b->cmap[i].val = 0;
	b->cmap_n--;
}

/* Puts g (absent) -> slot; 0, or -1 out of memory. */
static int bclass_put(struct bstate *b, uint64_t g, uint32_t slot)
{
	size_t j;
	if ((b->cmap_n + 1) * 2 > b->cmap_cap) {
		size_t ncap = b->cmap_cap ? 2 * b->cmap_cap : 64;
		struct bhent *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -1;
		for (size_t i = 0; i < b->cmap_cap; i++) {
			if (!b->cmap[i].val)
				continue;
			j = (size_t)(b->cmap[i].key * 0x9e3779b97f4a7c15ull >>
			             32) & (ncap - 1);
			while (nt[j].val)
				j = (j + 1) & (ncap - 1);
			nt[j] = b->cmap[i];
		}
		free(b->cmap);
		b->cmap = nt;
		b->cmap_cap = ncap;
	}
	j = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) & (b->cmap_cap - 1);
	while (b->cmap[j].val)
		j = (j + 1) & (b->cmap_cap - 1);
	b->cmap[j].key = g;
	b->cmap[j].val = slot + 1;
	b->cmap_n++;
	return 0;
}

/* Version 5: the class slot of size slot z (trace_format.h), defined
 * when no slot holds its class; -1 out of memory. Found again (or made)
 * here; bclass_of answers at once for the slot it found last, when that
 * slot was not defined since (a slot defined again for the same class is
 * found again here). */
static int32_t bclass_find_of(struct bstate *b, struct bsize5 *z)
{
	uint64_t g;
	int32_t c;
	g = z->size / VRT_BATCH_GRAIN + (z->size % VRT_BATCH_GRAIN != 0);
	c = bclass_find(b, g);
	if (c < 0) {
		size_t slot = (size_t)(b->class_next % VRT_BATCH5_CLASSES);
		if (slot >= b->nclasses) {
			if (vrt_array_grow((void **)&b->classes, &b->capclasses,
			                   slot + 1, sizeof(*b->classes)))
				return -1;
			b->nclasses = slot + 1;
		} else {
			bclass_del(b, b->classes[slot].gran);
		}
		if (bclass_put(b, g, (uint32_t)slot))
			return -1;
		b->classes[slot].gran = g;
		b->classes[slot].n = b->classes[slot].h = 0;
		b->classes[slot].gen = (uint32_t)(b->class_next /
		                                  VRT_BATCH5_CLASSES);
		b->class_next++;
		c = (int32_t)slot;
	}
	z->cls = c;
	z->gen = b->classes[c].gen;
	return c;
}

static inline int32_t bclass_of(struct bstate *b, struct bsize5 *z)
{
	if (__builtin_expect(z->cls >= 0 && b->classes[z->cls].gen == z->gen,
	                     1))
		return z->cls;
	return bclass_find_of(b, z);
}

/* Version 5: a new size into the next size slot; the slot, or -1 out of
 * memory. */
static int32_t bsize5_define(struct bstate *b, uint64_t size)
{
	size_t slot = (size_t)(b->size_next % VRT_BATCH5_SIZES);
	if (slot >= b->nsizes5) {
		if (vrt_array_grow((void **)&b->sizes5, &b->capsizes5,
		                   slot + 1, sizeof(*b->sizes5)))
			return -1;
		b->nsizes5 = slot + 1;
	}
	b->sizes5[slot].size = size;
	b->sizes5[slot].cls = -1;
	b->size_next++;
	return (int32_t)slot;
}

/*
 * Delivers the events of the BATCH record [rec, pe) (payload at p; the
 * chunk time before it: clock) from where r->bc stands, while they sort
 * before the bound, as emit_raw does for other records. *fin says the
 * record is done (else r->key is its next event's time). The thread's
 * state changes event by event, exactly as the writer's did. Both
 * versions of the record: they differ in times, sizes and an
 * allocation's address (and version 5's pairs).
 */
static inline __attribute__((always_inline)) enum vrt_load_status
emit_batch_v(struct vrt_trace *t, struct run *r, const uint8_t *rec,
             const uint8_t *p, const uint8_t *pe, int64_t clock,
             struct vrt_event *out, size_t max, size_t *np, int64_t lim,
             int eq, int64_t *lastp, int *have_lastp, uint64_t *latep,
             int *fin, struct vrt_load_error *err, const int v5)
{
	struct lfile *f = r->f;
	struct bcur *bc = &r->bc;
	struct bstate *b = r->bs;
	int64_t shift = f->shift, last = *lastp, prev;
	int have_last = *have_lastp, bad = 0, keyed = 0;
	uint64_t late = 0;
	size_t n = *np;
	uint32_t i, cnt, pairs;
	unsigned unit;
	uint8_t snap = r->snap ? VRT_EV_SNAP : 0;
	enum vrt_load_status st = VRT_LOAD_OK;
	const char *why = "malformed BATCH";
	/* The columns' cursors, in registers while the loop runs (the
	 * run keeps them between calls). Each is checked against its end
	 * right after it moved, so a column that runs short never lets a
	 * read go further than one varint past it (the padding covers).
	 * Version 4 has no sizelo (cl) and sizenew (cn) columns. */
	const uint8_t *ck, *ct, *cs[2], *cz, *cl, *cn, *ca[2], *cx, *cd;
	const uint8_t *et, *es[2], *ez, *el, *en, *ea[2], *ex, *ed;
	const int ia = v5 ? 7 : 5; /* the aaddr column; faddr, addr, def
	                            * follow it */

	*fin = 0;
	if (!b && !(b = r->bs = bstate_of(f, r->tid)))
		return nomem(f, err, "events");
	if (!bc->on) {
		uint64_t span, flags;
		if (batch_header(p, pe, f->version, bc, &span, &flags))
			goto malformed; /* checked with the frame: not reached */
		if (flags & VRT_BATCH_RESET)
			bstate_clear(b);
		bc->prev = clock;
		bc->after = clock;
		(void)chunk_time(&bc->after, span);
		bc->on = 1;
	}
	ck = bc->c[0];
	ct = bc->c[1], et = bc->e[1];
	cs[0] = bc->c[2], es[0] = bc->e[2];
	cs[1] = bc->c[3], es[1] = bc->e[3];
	cz = bc->c[4], ez = bc->e[4];
	cl = bc->c[5], el = bc->e[5];
	cn = bc->c[6], en = bc->e[6];
	ca[0] = bc->c[ia], ea[0] = bc->e[ia];
	ca[1] = bc->c[ia + 1], ea[1] = bc->e[ia + 1];
	cx = bc->c[ia + 2], ex = bc->e[ia + 2];
	cd = bc->c[ia + 3], ed = bc->e[ia + 3];
	prev = bc->prev;
	i = bc->i;
	cnt = bc->n;
	pairs = bc->pairs;
	unit = bc->unit;
	/* One comparison per event for the bound (equal times go when eq),
	 * and the caller's room as a count. */
	if (!eq && lim != INT64_MIN)
		lim--;
	else if (!eq)
		cnt = i; /* nothing sorts below INT64_MIN */
	if (cnt - i > max - n)
		cnt = i + (uint32_t)(max - n);
	while (i < cnt) {
		const uint8_t *tp = ct;
		int kind, pair = 0;
		uint64_t v, c, addr = 0, size = 0;
		int64_t ts = prev, tsx;
		struct bsite *site, *fs = NULL;
		struct vrt_event *e;

		v = uv(&ct, &bad);
		bad |= ct > et;
		if (v5)
			ts = batch5_time(prev, v, unit);
		else
			(void)chunk_time(&ts, batch_dt(v));
		tsx = shift ? sat_add(ts, shift) : ts;
		if (tsx > lim) {
			ct = tp;
			r->key = tsx;
			keyed = 1;
			break;
		}
		kind = (ck[i >> 3] >> (i & 7)) & 1;
		c = uv(&cs[kind], &bad);
		bad |= cs[kind] > es[kind];
		if (__builtin_expect(c != 0, 1)) {
			if (c > b->nsites || b->sites[c - 1].kind != kind)
				goto malformed;
			site = &b->sites[c - 1];
		} else {
			uint64_t api, dev;
			if (!(site = bsite_define(b)))
				return nomem(f, err, "events");
			api = uv(&cd, &bad);
			dev = uv(&cd, &bad);
			site->aux = uv(&cd, &bad);
			site->phase = uv(&cd, &bad);
			site->stack = uv(&cd, &bad);
			bad |= cd > ed;
			if (api > VRT_API_MAX) {
				why = "api id out of range";
				goto malformed;
			}
			site->api = (uint16_t)api;
			site->device = raw_device(vrt_unzigzag(dev));
			site->kind = (uint8_t)kind;
		}
		c = uv(&ca[kind], &bad);
		bad |= ca[kind] > ea[kind];
		if (!kind && v5) {
			/* The size: from the site's recent sizes, a size slot
			 * or new; then first in the site's recent sizes. */
			uint32_t z = *cz++, k;
			int32_t zs;
			bad |= cz > ez;
			if (z < VRT_BATCH_MTF) {
				if (z >= site->nmtf)
					goto malformed;
				zs = site->mtf[z];
				k = z;
			} else if (z < VRT_BATCH_MTF + VRT_BATCH5_SIZES / 256) {
				zs = (int32_t)((z - VRT_BATCH_MTF) << 8 | *cl++);
				bad |= cl > el;
				if ((size_t)zs >= b->nsizes5)
					goto malformed;
				k = site->nmtf < VRT_BATCH_MTF ? site->nmtf
				                               : VRT_BATCH_MTF - 1;
			} else if (z == VRT_BATCH_NEWSIZE) {
				size = vrt_unpack_u(uv(&cn, &bad));
				bad |= cn > en;
				if ((zs = bsize5_define(b, size)) < 0)
					return nomem(f, err, "events");
				k = site->nmtf < VRT_BATCH_MTF ? site->nmtf
				                               : VRT_BATCH_MTF - 1;
			} else {
				goto malformed;
			}
			if (k == site->nmtf)
				site->nmtf++;
			mtf_front(site->mtf, k, (uint16_t)zs);
			size = b->sizes5[zs].size;
			if (c == VRT_BATCH_PAIR) {
				/* No address: its free's site follows. */
				uint64_t fc = uv(&cs[1], &bad);
				bad |= cs[1] > es[1];
				if (fc) {
					if (fc > b->nsites ||
					    b->sites[fc - 1].kind != 1)
						goto malformed;
					fs = &b->sites[fc - 1];
				} else {
					uint64_t api, dev;
					if (!(fs = bsite_define(b)))
						return nomem(f, err, "events");
					api = uv(&cd, &bad);
					dev = uv(&cd, &bad);
					fs->aux = uv(&cd, &bad);
					fs->phase = uv(&cd, &bad);
					fs->stack = uv(&cd, &bad);
					bad |= cd > ed;
					if (api > VRT_API_MAX) {
						why = "api id out of range";
						goto malformed;
					}
					fs->api = (uint16_t)api;
					fs->device =
					        raw_device(vrt_unzigzag(dev));
					fs->kind = 1;
				}
				if (!pairs--)
					goto malformed;
				pair = 1;
			} else {
				int32_t cls = bclass_of(b, &b->sizes5[zs]);
				struct bclass *q;
				if (cls < 0)
					return nomem(f, err, "events");
				q = &b->classes[cls];
				if (!c) {
					addr = b->last_alloc +
					       (uint64_t)vrt_unpack_s(
					               uv(&cx, &bad));
					bad |= cx > ex;
				} else {
					uint32_t j;
					if (c > q->n)
						goto malformed;
					addr = q->lifo[(q->h - (uint32_t)c) %
					               VRT_BATCH_LIFO];
					/* The entries above it move down. */
					for (j = (uint32_t)c - 1; j-- > 0;)
						q->lifo[(q->h - 2 - j) %
						        VRT_BATCH_LIFO] =
						        q->lifo[(q->h - 1 - j) %
						                VRT_BATCH_LIFO];
					q->h = (q->h + VRT_BATCH_LIFO - 1) %
					       VRT_BATCH_LIFO;
					q->n--;
				}
				if (__builtin_expect(!b->ring, 0) &&
				    !(b->ring = malloc(VRT_BATCH_RING *
				                       sizeof(*b->ring))))
					return nomem(f, err, "events");
				b->ring[b->nalloc % VRT_BATCH_RING].addr = addr;
				b->ring[b->nalloc % VRT_BATCH_RING].zslot = cls;
				b->ring[b->nalloc % VRT_BATCH_RING].gen = q->gen;
				b->nalloc++;
				b->last_alloc = addr;
			}
		} else if (!kind) {
			int32_t zslot;
			uint64_t z = uv(&cz, &bad);
			if (z == 0) {
				if (!site->has_size)
					goto malformed;
				size = site->size;
				zslot = site->zslot;
			} else if (z == 1) {
				size = vrt_unpack_u(uv(&cz, &bad));
				zslot = -1;
				if (b->nsizes < VRT_BATCH_SIZES) {
					if (vrt_array_grow((void **)&b->sizes,
					                   &b->capsizes,
					                   b->nsizes + 1,
					                   sizeof(*b->sizes)))
						return nomem(f, err, "events");
					zslot = (int32_t)b->nsizes++;
					b->sizes[zslot].size = size;
					b->sizes[zslot].n = 0;
					b->sizes[zslot].h = 0;
				}
			} else {
				if (z - 2 >= b->nsizes)
					goto malformed;
				zslot = (int32_t)(z - 2);
				size = b->sizes[zslot].size;
			}
			bad |= cz > ez;
			site->size = size;
			site->zslot = zslot;
			site->has_size = 1;
			if (!c) {
				addr = b->last_alloc +
				       (uint64_t)vrt_unpack_s(uv(&cx, &bad));
				bad |= cx > ex;
			} else {
				struct bsize *zs;
				uint32_t k;
				if (zslot < 0 || c > b->sizes[zslot].n)
					goto malformed;
				zs = &b->sizes[zslot];
				addr = zs->lifo[(zs->h - (uint32_t)c) %
				                VRT_BATCH_LIFO];
				/* The entries above it move down one. */
				for (k = (uint32_t)c - 1; k-- > 0;)
					zs->lifo[(zs->h - 2 - k) % VRT_BATCH_LIFO] =
					        zs->lifo[(zs->h - 1 - k) %
					                 VRT_BATCH_LIFO];
				zs->h = (zs->h + VRT_BATCH_LIFO - 1) %
				        VRT_BATCH_LIFO;
				zs->n--;
			}
			if (__builtin_expect(!b->ring, 0) &&
			    !(b->ring = malloc(VRT_BATCH_RING * sizeof(*b->ring))))
				return nomem(f, err, "events");
			b->ring[b->nalloc % VRT_BATCH_RING].addr = addr;
			b->ring[b->nalloc % VRT_BATCH_RING].zslot = zslot;
			b->nalloc++;
			b->last_alloc = addr;
		} else if (!c) {
			addr = b->last_free + (uint64_t)vrt_unpack_s(uv(&cx, &bad));
			bad |= cx > ex;
			b->last_free = addr;
		} else {
			const struct bring *a;
			if (c > b->nalloc || c > VRT_BATCH_RING)
				goto malformed;
			a = &b->ring[(b->nalloc - c) % VRT_BATCH_RING];
			addr = a->addr;
			if (a->zslot >= 0) {
				/* Version 4: the size's list; 5: the class's,
				 * if its slot still holds that class. */
				uint32_t *zn = NULL, *zh = NULL;
				uint64_t *lifo = NULL;
				if (!v5) {
					struct bsize *q = &b->sizes[a->zslot];
					zn = &q->n, zh = &q->h, lifo = q->lifo;
				} else if (b->classes[a->zslot].gen == a->gen) {
					struct bclass *q = &b->classes[a->zslot];
					zn = &q->n, zh = &q->h, lifo = q->lifo;
				}
				if (lifo) {
					lifo[*zh % VRT_BATCH_LIFO] = addr;
					*zh = (*zh + 1) % VRT_BATCH_LIFO;
					*zn += *zn < VRT_BATCH_LIFO;
				}
			}
		}
		if (__builtin_expect(bad, 0))
			goto malformed;
		e = &out[n];
		e->ts = tsx;
		e->addr = pair ? 1 : addr; /* a pair: a REPEAT of one */
		e->size = size;
		e->aux = site->aux;
		e->proc = (uint32_t)f->proc;
		e->tid = r->tid;
		e->extra = pair ? fs->api : 0;
		e->api = site->api;
		e->kind = pair ? VRT_EV_REPEAT : kind ? VRT_EV_FREE : VRT_EV_ALLOC;
		e->flags = (uint8_t)(snap & (kind - 1) & (pair - 1));
		if (__builtin_expect(site->g_ok, 1)) {
			e->device = site->g_dev;
			e->stack = site->g_stack;
			e->phase = site->g_phase;
			e->phase_src = site->g_src;
		} else {
			e->device = site->device;
			e->stack = site->stack > UINT32_MAX ? 0
			                                    : (uint32_t)site->stack;
			e->phase = site->phase > UINT32_MAX ? UINT32_MAX
			                                    : (uint32_t)site->phase;
			e->phase_src = 0;
			if (resolve_fast(f, e)) {
				site->g_dev = e->device;
				site->g_stack = e->stack;
				site->g_phase = e->phase;
				site->g_src = e->phase_src;
				site->g_ok = 1;
			} else {
				st = resolve_slow(t, f, e, err);
				if (st)
					break;
			}
		}
		note_time(tsx, &last, &have_last, &late);
		prev = ts;
		i++;
		n++;
	}
	bc->c[1] = ct;
	bc->c[2] = cs[0];
	bc->c[3] = cs[1];
	bc->c[4] = cz;
	bc->c[5] = cl;
	bc->c[6] = cn;
	bc->c[ia] = ca[0];
	bc->c[ia + 1] = ca[1];
	bc->c[ia + 2] = cx;
	bc->c[ia + 3] = cd;
	bc->prev = prev;
	bc->i = i;
	bc->pairs = pairs;
	if (!st && i == bc->n) {
		if (pairs)
			goto malformed; /* fewer pairs than announced */
		bc->on = 0;
		*fin = 1;
	} else if (!st && !keyed) {
		/* The caller's buffer is full: the next event's time is the
		 * run's key (a column too short is found when it is read). */
		const uint8_t *q = ct;
		int64_t ts = prev;
		if (v5)
			ts = batch5_time(prev, uv(&q, &bad), unit);
		else
			(void)chunk_time(&ts, batch_dt(uv(&q, &bad)));
		r->key = shift ? sat_add(ts, shift) : ts;
	}
	*lastp = last;
	*have_lastp = have_last;
	*latep += late;
	*np = n;
	return st;
malformed:
	*lastp = last;
	*have_lastp = have_last;
	*latep += late;
	*np = n;
	bc->on = 0;
	return rec_error_at(f, r->fb->frame_off, err,
	                    (uint64_t)(rec - r->fb->data), why);
}

/* emit_batch_v made once per version, so that neither loop tests it. */
static enum vrt_load_status
emit_batch(struct vrt_trace *t, struct run *r, const uint8_t *rec,
           const uint8_t *p, const uint8_t *pe, int64_t clock,
           struct vrt_event *out, size_t max, size_t *np, int64_t lim, int eq,
           int64_t *lastp, int *have_lastp, uint64_t *latep, int *fin,
           struct vrt_load_error *err)
{
	if (r->f->version >= 5)
		return emit_batch_v(t, r, rec, p, pe, clock, out, max, np, lim,
		                    eq, lastp, have_lastp, latep, fin, err, 1);
	return emit_batch_v(t, r, rec, p, pe, clock, out, max, np, lim, eq,
	                    lastp, have_lastp, latep, fin, err, 0);
}

/*
 * Decodes r's records into out[*np, max) while the next event sorts before
 * the bound (lim; equal times too when eq), then sets r->key to the next
 * event's time. *done says r has no event left. Only here are the fields
 * of ALLOC, FREE and REPEAT records read and checked.
 */
static enum vrt_load_status emit_raw(struct lstate *L, struct vrt_trace *t,
                                     struct run *r, struct vrt_event *out,
                                     size_t max, size_t *np, int64_t lim,
                                     int eq, int *done,
                                     struct vrt_load_error *err)
{
	struct lfile *f = r->f;
	const uint8_t *p = r->p, *end = r->end;
	int64_t clock = r->clock, shift = f->shift, last = L->last_ts;
	uint32_t tid = r->tid, proc = (uint32_t)f->proc;
	uint8_t snap = r->snap ? VRT_EV_SNAP : 0;
	int have_last = L->delivered;
	uint64_t late = 0;
	size_t n = *np;
	int v2 = f->version >= 2, v3 = f->version >= 3;
	struct compact cs = r->cs;
	unsigned rep_k = r->rep_k;
	enum vrt_load_status st = VRT_LOAD_OK;

	*done = 0;
	for (;;) {
		const uint8_t *rec = p, *pe;
		uint64_t plen, dts, api, sid, ph;
		int64_t ts, tsx;
		unsigned type;
		struct vrt_event *e;
		int bad = 0;

		if (p >= end) {
			*done = 1;
			break;
		}
		type = *p++;
		plen = uv(&p, &bad); /* checked when the frame was read */
		pe = p + plen;
		if (__builtin_expect(!lazy_type(type, f->version), 0)) {
			p = pe; /* metadata read with the frame */
			memset(&cs, 0, sizeof(cs)); /* resets the state */
			continue;
		}
		if (type == VRT_REC_BATCH) {
			int fin;
			st = emit_batch(t, r, rec, p, pe, clock, out, max, &n, lim,
			                eq, &last, &have_last, &late, &fin, err);
			if (st || !fin) {
				p = rec; /* resumed at this record */
				break;
			}
			clock = r->bc.after;
			memset(&cs, 0, sizeof(cs)); /* resets the state */
			p = pe;
			continue;
		}
		dts = uv(&p, &bad);
		ts = clock;
		(void)chunk_time(&ts, dts);
		tsx = shift ? sat_add(ts, shift) : ts;
		if (n == max || tsx > lim || (tsx == lim && !eq)) {
			r->key = tsx;
			p = rec;
			break;
		}
		/* Decoded in place: a local copied out whole would be read
		 * back wide right after narrow stores (a store-forwarding
		 * stall per event). */
		e = &out[n];
		if (__builtin_expect(type == VRT_REC_REPEAT, 0)) {
			st = emit_repeat(t, f, r, rec, &p, pe, out, max, &n, tsx,
			                 &rep_k, err);
			if (st || rep_k) {
				p = rec; /* resumed at this record */
				if (!st)
					r->key = tsx;
				break;
			}
			note_time(tsx, &last, &have_last, &late);
			clock = ts;
			p = pe;
			continue;
		}
		e->extra = 0;
		switch (type) {
		case VRT_REC_ALLOC_C:
			cs.addr += addr_delta(uv(&p, &bad), v3);
			e->addr = cs.addr;
			e->size = uv(&p, &bad);
			if (v3)
				e->size = vrt_unpack_u(e->size);
			sid = uv(&p, &bad);
			api = cs.a.api;
			e->device = (int32_t)cs.a.device;
			e->aux = cs.a.aux;
			ph = cs.a.phase;
			e->kind = VRT_EV_ALLOC;
			e->flags = snap;
			bad |= !cs.a.have;
			break;
		case VRT_REC_FREE_C:
			cs.addr += addr_delta(uv(&p, &bad), v3);
			e->addr = cs.addr;
			e->size = 0;
			sid = cs.f.stack;
			api = cs.f.api;
			e->device = (int32_t)cs.f.device;
			e->aux = cs.f.aux;
			ph = cs.f.phase;
			e->kind = VRT_EV_FREE;
			e->flags = 0;
			bad |= !cs.f.have;
			break;
		default:
			api = uv(&p, &bad);
			e->device = raw_device(vrt_unzigzag(uv(&p, &bad)));
			e->addr = uv(&p, &bad);
			if (type == VRT_REC_ALLOC) {
				e->size = uv(&p, &bad);
				e->kind = VRT_EV_ALLOC;
				e->flags = snap;
			} else {
				e->size = 0;
				e->kind = VRT_EV_FREE;
				e->flags = 0;
			}
			e->aux = uv(&p, &bad);
			sid = uv(&p, &bad);
			ph = uv(&p, &bad);
			if (v2) {
				struct ctmpl *tp =
				        type == VRT_REC_ALLOC ? &cs.a : &cs.f;
				tp->api = api;
				tp->device = e->device;
				tp->aux = e->aux;
				tp->stack = sid;
				tp->phase = ph;
				tp->have = 1;
				tp->g_ok = 0;
				cs.addr = e->addr;
			}
			break;
		}
		if (__builtin_expect(bad || p > pe, 0)) {
			st = rec_error_at(f, r->fb->frame_off, err,
			                  (uint64_t)(rec - r->fb->data),
			                  type == VRT_REC_ALLOC_C ||
			                                  type == VRT_REC_FREE_C
			                          ? "short event record, or a "
			                            "compact one without a "
			                            "template"
			                          : "short event record");
			break;
		}
		if (__builtin_expect(api > VRT_API_MAX, 0)) {
			st = rec_error_at(f, r->fb->frame_off, err,
			                  (uint64_t)(rec - r->fb->data),
			                  "api id out of range");
			break;
		}
		e->api = (uint16_t)api;
		e->ts = tsx;
		e->proc = proc;
		e->tid = tid;
		/* Both are file ids until resolved: an id too large to be a
		 * stack is no stack. */
		e->stack = sid > UINT32_MAX ? 0 : (uint32_t)sid;
		e->phase = ph > UINT32_MAX ? UINT32_MAX : (uint32_t)ph;
		e->phase_src = 0;
		if (type == VRT_REC_FREE_C && cs.f.g_ok) {
			e->device = cs.f.g_dev;
			e->stack = cs.f.g_stack;
			e->phase = cs.f.g_phase;
			e->phase_src = cs.f.g_src;
		} else if (type == VRT_REC_ALLOC_C && cs.a.g_ok &&
		           (!e->stack || (e->stack < f->scap &&
		                          f->scache[e->stack].g1))) {
			e->device = cs.a.g_dev;
			e->stack = e->stack ? f->scache[e->stack].g1 - 1 : 0;
			e->phase = cs.a.g_phase;
			e->phase_src = cs.a.g_src;
		} else if (resolve_fast(f, e)) {
			/* Kept for the template's compact events (v2). */
			if (type == VRT_REC_FREE || type == VRT_REC_FREE_C) {
				cs.f.g_dev = e->device;
				cs.f.g_stack = e->stack;
				cs.f.g_phase = e->phase;
				cs.f.g_src = e->phase_src;
				cs.f.g_ok = (uint8_t)v2;
			} else if (ph <= UINT32_MAX &&
			           (ph & 3) == VRT_SRC_ANNOTATION) {
				cs.a.g_dev = e->device;
				cs.a.g_phase = e->phase;
				cs.a.g_src = e->phase_src;
				cs.a.g_ok = (uint8_t)v2;
			}
		} else {
			st = resolve_slow(t, f, e, err);
			if (st)
				break;
		}
		note_time(tsx, &last, &have_last, &late);
		n++;
		clock = ts;
		p = pe;
	}
	r->cs = cs;
	r->rep_k = (uint8_t)rep_k;
	r->p = p;
	r->clock = clock;
	L->last_ts = last;
	L->delivered = have_last;
	t->events_late += late;
	*np = n;
	return st;
}

/* emit_raw for a RUN_EV: its events are decoded, only copied, resolved and
 * aligned on the way out. */
static enum vrt_load_status emit_ev(struct lstate *L, struct vrt_trace *t,
                                    struct run *r, struct vrt_event *out,
                                    size_t max, size_t *np, int64_t lim,
                                    int eq, int *done,
                                    struct vrt_load_error *err)
{
	struct lfile *f = r->f;
	size_t n = *np;
	enum vrt_load_status st = VRT_LOAD_OK;

	while (r->pos < r->nev) {
		const struct vrt_event *s = &r->evs[r->pos];
		int64_t tsx = sat_add(s->ts, f->shift);
		struct vrt_event *o;
		if (n == max || tsx > lim || (tsx == lim && !eq)) {
			r->key = tsx;
			break;
		}
		o = &out[n];
		*o = *s;
		o->ts = tsx;
		st = resolve_event(t, f, o, err);
		if (st)
			break;
		if (o->kind == VRT_EV_SAMPLE && o->extra < t->nsamples) {
			struct vrt_sample *smp = &t->samples[o->extra];
			smp->ts = o->ts;
			smp->proc = o->proc;
			smp->device = o->device;
		}
		delivered(L, t, o);
		r->pos++;
		n++;
	}
	*done = r->pos == r->nev;
	*np = n;
	return st;
}

/* ---- input and frames ----------------------------------------------------- */

static void progress_note(const struct lstate *L, const struct vrt_trace *t)
{
	vrt_progress_note(t->progress, VRT_PROGRESS_READ, L->files_done,
	                  L->nfiles_hint, L->bytes_done);
}

/* Reads more of f's file after in[hi) (the buffer is first slid to the
 * front, grown when full). *got says whether bytes came; f->eof is set at
 * the end of the file. */
static enum vrt_load_status more_input(struct lstate *L, struct lfile *f,
                                       int *got, struct vrt_load_error *err)
{
	ssize_t r;

	*got = 0;
	if (f->is_buf || f->eof)
		return VRT_LOAD_OK;
	if (f->lo) {
		memmove(f->in, f->in + f->lo, f->hi - f->lo);
		f->hi -= f->lo;
		f->lo = 0;
	}
	if (f->hi == f->incap) {
		size_t ncap = f->incap ? f->incap * 2 : READ_BYTES;
		uint8_t *nb = ncap > f->incap ? realloc(f->in, ncap) : NULL;
		if (!nb)
			return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, f->name,
			                     "file too large");
		f->in = nb;
		f->incap = ncap;
	}
	if (f->fd < 0) {
		char why[128];
		f->fd = vrt_readfile_open(f->name, why, sizeof(why));
		if (f->fd < 0)
			return vrt_load_fail(err, VRT_LOAD_ERR_IO, f->name,
			                     "%s", why);
		if (f->pos + f->hi &&
		    lseek(f->fd, (off_t)(f->pos + f->hi), SEEK_SET) < 0)
			return vrt_load_fail(err, VRT_LOAD_ERR_IO, f->name,
			                     "%s", strerror(errno));
	}
	do
		r = read(f->fd, f->in + f->hi, f->incap - f->hi);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return vrt_load_fail(err, VRT_LOAD_ERR_IO, f->name, "%s",
		                     strerror(errno));
	if (r == 0)
		f->eof = 1;
	f->hi += (size_t)r;
	*got = r > 0;
	if (f->eof || L->nfiles > MAX_OPEN_FILES) {
		close(f->fd);
		f->fd = -1;
	}
	return VRT_LOAD_OK;
}

/* A buffer for one decoded frame (reused when one is free). */
static struct fbuf *fbuf_get(struct lstate *L)
{
	struct fbuf *fb = L->free_fb;

	if (fb) {
		L->free_fb = fb->next;
		L->nfree_fb--;
	} else if (!(fb = calloc(1, sizeof(*fb)))) {
		return NULL;
	}
	fb->refs = 1;
	fb->len = 0;
	/* Sized for the largest frame so far: a frame that does not fit
	 * is decoded again, so guessing low costs a whole decode. */
	if (fb->cap < L->frame_max + DEC_PAD)
		(void)fbuf_alloc(fb, L->frame_max + DEC_PAD); /* else: grown
		                                                  * on demand */
	return fb;
}

/* Decodes one frame of [src, src + n) into fb (grown, capped). */
static enum vrt_load_status decode_frame(struct lstate *L, struct lfile *f,
                                         struct fbuf *fb, const uint8_t *src,
                                         size_t n, struct vrt_load_error *err)
{
	for (;;) {
		size_t r, room = fb->cap > DEC_PAD ? fb->cap - DEC_PAD : 0;
		if (room) {
			r = ZSTD_decompressDCtx(L->dctx, fb->data, room, src, n);
			if (!ZSTD_isError(r)) {
				memset(fb->data + r, 0, DEC_PAD);
				fb->len = r;
				/* With a quarter more for the next ones. */
				if (r + r / 4 > L->frame_max)
					L->frame_max = r + r / 4 > room
					                       ? room
					                       : r + r / 4;
				return VRT_LOAD_OK;
			}
			if (ZSTD_getErrorCode(r) != ZSTD_error_dstSize_tooSmall)
				return vrt_load_fail(
				        err, VRT_LOAD_ERR_CORRUPT, f->name,
				        "at byte %" PRIu64 ": %s", f->pos,
				        ZSTD_getErrorName(r));
			if (room >= VRT_LOAD_FRAME_CAP)
				return vrt_load_fail(
				        err, VRT_LOAD_ERR_TOO_LARGE, f->name,
				        "frame at byte %" PRIu64
				        " decodes to more than %u MiB",
				        f->pos, VRT_LOAD_FRAME_CAP >> 20);
		}
		size_t ncap = room ? room * 2 : (64u << 10) - DEC_PAD;
		if (ncap > VRT_LOAD_FRAME_CAP)
			ncap = VRT_LOAD_FRAME_CAP;
		if (fbuf_alloc(fb, ncap + DEC_PAD))
			return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, f->name,
			                     "frame at byte %" PRIu64, f->pos);
	}
}

/* The end of f's input (cut: why the last frame is incomplete, or NULL):
 * checks what a file must hold, notes truncation, releases everything. */
static enum vrt_load_status end_of_file(struct lstate *L, struct vrt_trace *t,
                                        struct lfile *f, const char *cut,
                                        struct vrt_load_error *err)
{
	struct vrt_process *pr;
	enum vrt_load_status st;

	if (!cut && f->pos == 0 && !f->nframes)
		return vrt_load_fail(err, VRT_LOAD_ERR_EMPTY, f->name,
		                     "empty file");
	if (cut && !f->have_header)
		return vrt_load_fail(
		        err, VRT_LOAD_ERR_NO_FRAME, f->name,
		        "file ends inside its first frame (truncated at "
		        "byte %" PRIu64 ")",
		        f->pos);
	if (!f->have_header)
		return vrt_load_fail(err, VRT_LOAD_ERR_NO_HEADER, f->name,
		                     "no HEADER record in %zu frame%s",
		                     f->nframes, f->nframes == 1 ? "" : "s");
	pr = &t->procs[f->proc];
	if (cut) {
		pr->truncated = 1;
		pr->trunc_offset = (int64_t)f->pos;
		snprintf(pr->trunc_reason, sizeof(pr->trunc_reason),
		         "%s; decoded the %zu frame%s before it", cut,
		         f->nframes, f->nframes == 1 ? "" : "s");
	} else if (!pr->has_trailer) {
		pr->truncated = 1;
		pr->trunc_offset = (int64_t)(f->pos + (f->hi - f->lo));
		snprintf(pr->trunc_reason, sizeof(pr->trunc_reason),
		         "no TRAILER record (the process did not exit "
		         "cleanly)");
	}
	st = intern_new_symbols(t, f, err);
	if (st)
		return st;
	f->finished = 1;
	f->relw = INT64_MAX;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	if (!f->is_buf)
		free(f->in);
	f->in = NULL;
	f->lo = f->hi = f->incap = 0;
	L->files_done++;
	progress_note(L, t);
	return VRT_LOAD_OK;
}

/* Decodes f's next frame (releasing at its watermarks), or handles the
 * end of the file. */
static enum vrt_load_status step(struct lstate *L, struct vrt_trace *t,
                                 struct lfile *f, struct vrt_load_error *err)
{
	for (;;) {
		size_t rem = f->hi - f->lo, fsz = 0;
		struct fbuf *fb;
		const uint8_t *p = f->in + f->lo;
		const char *cut = NULL;
		enum vrt_load_status st;
		int got;

		if (rem < 4 && !f->eof) {
			st = more_input(L, f, &got, err);
			if (st)
				return st;
			continue;
		}
		if (rem == 0)
			return end_of_file(L, t, f, NULL, err);
		if (rem < 4 || memcmp(p, zstd_magic, 4)) {
			/* A prefix of the magic at the very end is a frame cut
			 * right after it began. */
			if (rem < 4 && !memcmp(p, zstd_magic, rem))
				cut = "last zstd frame is incomplete";
			else if (f->nframes == 0)
				return vrt_load_fail(
				        err, VRT_LOAD_ERR_NOT_ZSTD, f->name,
				        "not a zstd frame at byte %" PRIu64,
				        f->pos);
			else
				return vrt_load_fail(
				        err, VRT_LOAD_ERR_CORRUPT, f->name,
				        "bytes that are not a zstd frame at "
				        "byte %" PRIu64,
				        f->pos);
		}
		if (!cut) {
			fsz = ZSTD_findFrameCompressedSize(p, rem);
			if (ZSTD_isError(fsz)) {
				if (ZSTD_getErrorCode(fsz) !=
				    ZSTD_error_srcSize_wrong)
					return vrt_load_fail(
					        err, VRT_LOAD_ERR_CORRUPT,
					        f->name,
					        "at byte %" PRIu64 ": %s",
					        f->pos, ZSTD_getErrorName(fsz));
				if (!f->eof) {
					st = more_input(L, f, &got, err);
					if (st)
						return st;
					continue;
				}
				cut = "last zstd frame is incomplete";
			}
		}
		if (cut)
			return end_of_file(L, t, f, cut, err);
		fb = fbuf_get(L);
		if (!fb)
			return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, f->name,
			                     "frame at byte %" PRIu64, f->pos);
		st = decode_frame(L, f, fb, p, fsz, err);
		f->frame_off = f->pos;
		fb->frame_off = f->pos;
		/* Skippable frames and empty frames decode to nothing. */
		if (!st && fb->len)
			st = parse_frame(L, t, f, fb, err);
		fbuf_put(L, fb);
		if (st)
			return st;
		f->lo += fsz;
		f->pos += fsz;
		f->nframes++;
		L->bytes_done += fsz;
		progress_note(L, t);
		return VRT_LOAD_OK;
	}
}

/* ---- opening ---------------------------------------------------------------- */

static enum vrt_load_status state_new(struct vrt_trace *t, const char *name,
                                      struct vrt_load_error *err)
{
	struct lstate *L;

	if (t->intern)
		return vrt_load_fail(
		        err, VRT_LOAD_ERR_IO, name,
		        "a trace is already loaded into this table");
	L = calloc(1, sizeof(*L));
	if (!L)
		return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name, "decoder");
	t->intern = L;
	L->dctx = ZSTD_createDCtx();
	if (!L->dctx || vrt_intern_init(t))
		return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name, "tables");
	return VRT_LOAD_OK;
}

static struct lfile *file_new(struct lstate *L, const char *name)
{
	struct lfile *f;

	if (vrt_array_grow((void **)&L->files, &L->capfiles, L->nfiles + 1,
	                   sizeof(*L->files)))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->fd = -1;
	f->relw = INT64_MIN;
	f->idx = L->nfiles;
	f->name = strdup(name);
	if (!f->name) {
		free(f);
		return NULL;
	}
	L->files[L->nfiles++] = f;
	return f;
}

/* Reads f up to its first watermark (or its end): its HEADER, its first
 * metadata and its first events. */
static enum vrt_load_status prime(struct lstate *L, struct vrt_trace *t,
                                  struct lfile *f, struct vrt_load_error *err)
{
	while (!f->finished && f->relw == INT64_MIN) {
		enum vrt_load_status st = step(L, t, f, err);
		if (st)
			return st;
	}
	return VRT_LOAD_OK;
}

/* A path that exists but is not a regular file (a FIFO named *.vtrace, a
 * device) is noted in t->skipped and never opened: returns 1. *first keeps
 * the first reason (the error when nothing else loads). 0 for anything
 * else (a regular file, or one stat cannot see: opening it says why);
 * *s is set only when the note cannot be kept (out of memory). */
static int skip_irregular(struct vrt_trace *t, const char *name,
                          struct vrt_load_error *first,
                          enum vrt_load_status *s, struct vrt_load_error *err)
{
	char why[128];

	*s = VRT_LOAD_OK;
	if (!vrt_tracedir_irregular(name, why, sizeof(why)))
		return 0;
	if (!first->status)
		vrt_load_fail(first, VRT_LOAD_ERR_IO, name, "%s", why);
	if (vrt_tracedir_skip(t, name, why)) {
		*s = vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name, "listing");
		return 0;
	}
	return 1;
}

/* Opens every *.vtrace file of a directory, in name order. A file that is
 * empty or holds no complete frame (its process died before the first
 * flush) is listed in t->skipped instead, as long as another file loads. */
static enum vrt_load_status open_dir(struct lstate *L, struct vrt_trace *t,
                                     const char *path,
                                     struct vrt_load_error *err)
{
	char **names, why[128];
	size_t n, i, loaded = 0, procs_before = t->nprocs;
	enum vrt_load_status s;
	struct vrt_load_error first;

	memset(&first, 0, sizeof(first));
	s = vrt_tracedir_list(path, &names, &n, why, sizeof(why));
	if (s)
		return vrt_load_fail(err, s, path, "%s", why);
	for (i = 0; i < n && !s; i++) {
		struct lfile *f;
		if (skip_irregular(t, names[i], &first, &s, err))
			continue;
		if (s)
			goto out;
		f = file_new(L, names[i]);
		if (!f) {
			s = vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, path,
			                  "listing");
			goto out;
		}
		s = prime(L, t, f, err);
		if (s == VRT_LOAD_ERR_EMPTY || s == VRT_LOAD_ERR_NO_FRAME) {
			/* A process that died before its first flush: nothing
			 * of it can be read, the rest of the run can. */
			L->files_done++;
			file_free(f);
			L->nfiles--;
			if (!first.status)
				first = *err;
			if (vrt_tracedir_skip(t, err->path, err->msg)) {
				s = vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, path,
				                  "listing");
				goto out;
			}
			s = VRT_LOAD_OK;
			continue;
		}
		loaded += !s;
	}
	if (!s && !loaded && first.status && t->nprocs == procs_before) {
		*err = first;
		s = first.status;
	}
out:
	vrt_tracedir_free(names, n);
	return s;
}

/*
 * Once every file is open: the hosts of processes that never named a
 * device join the host list, and with several hosts each host's times are
 * moved onto the first host's monotonic clock through wall time
 * (start_wall_ns - start_mono_ns of the host's first process). One host:
 * nothing moves, so NTP steps cannot disturb a single-host run.
 */
static enum vrt_load_status start_stream(struct lstate *L, struct vrt_trace *t,
                                         const char *name,
                                         struct vrt_load_error *err)
{
	size_t i;
	unsigned h;
	int64_t ref = 0;

	for (i = 0; i < t->nprocs; i++)
		if (vrt_intern_host(t, t->procs[i].host, &h))
			return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name,
			                     "hosts");
	free(t->host_shift);
	t->host_shift = calloc(t->nhosts ? t->nhosts : 1, sizeof(int64_t));
	if (!t->host_shift)
		return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name, "hosts");
	if (t->nhosts >= 2) {
		for (h = 0; h < t->nhosts; h++) {
			for (i = 0; i < t->nprocs; i++) {
				struct vrt_process *p = &t->procs[i];
				if (!strcmp(p->host, t->hosts[h])) {
					int64_t off = p->start_wall_ns -
					              p->start_mono_ns;
					if (h == 0)
						ref = off;
					t->host_shift[h] = off - ref;
					break;
				}
			}
		}
		for (i = 0; i < t->nprocs; i++) {
			struct vrt_process *p = &t->procs[i];
			h = vrt_intern_host_find(t, p->host);
			if (h < t->nhosts)
				p->start_mono_ns = sat_add(p->start_mono_ns,
				                           t->host_shift[h]);
		}
		for (i = 0; i < L->nfiles; i++) {
			struct lfile *f = L->files[i];
			h = vrt_intern_host_find(t, t->procs[f->proc].host);
			f->shift = h < t->nhosts ? t->host_shift[h] : 0;
		}
		/* Runs read so far were keyed unaligned. */
		for (i = 0; i < L->nheap; i++)
			L->heap[i]->key = sat_add(L->heap[i]->key,
			                          L->heap[i]->f->shift);
		for (i = L->nheap / 2; i-- > 0;)
			heap_down(L->heap, L->nheap, i);
	}
	t->start_ns = t->end_ns = 0;
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		if (i == 0 || p->start_mono_ns < t->start_ns)
			t->start_ns = p->start_mono_ns;
		if (i == 0 || p->start_mono_ns > t->end_ns)
			t->end_ns = p->start_mono_ns;
	}
	L->opened = 1;
	return VRT_LOAD_OK;
}

static enum vrt_load_status stick(struct lstate *L, enum vrt_load_status st,
                                  const struct vrt_load_error *err)
{
	if (st && L && !L->failed) {
		L->failed = st;
		L->ferr = *err;
	}
	return st;
}

enum vrt_load_status vrt_load_open(struct vrt_trace *t, char *const *paths,
                                   size_t npaths, struct vrt_load_error *err)
{
	struct vrt_load_error irregular;
	enum vrt_load_status s;
	struct lstate *L;
	size_t i;

	s = state_new(t, npaths ? paths[0] : "", err);
	if (s)
		return s;
	L = lstate_of(t);
	L->nfiles_hint = t->progress ? vrt_tracedir_count(paths, npaths) : 0;
	memset(&irregular, 0, sizeof(irregular));
	for (i = 0; i < npaths && !s; i++) {
		struct stat sb;
		if (stat(paths[i], &sb) < 0) {
			s = vrt_load_fail(err, VRT_LOAD_ERR_IO, paths[i], "%s",
			                  strerror(errno));
		} else if (S_ISDIR(sb.st_mode)) {
			s = open_dir(L, t, paths[i], err);
		} else if (skip_irregular(t, paths[i], &irregular, &s, err)) {
			continue;
		} else if (!s) {
			struct lfile *f = file_new(L, paths[i]);
			s = f ? prime(L, t, f, err)
			      : vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, paths[i],
			                      "decoder");
		}
	}
	/* Nothing but FIFOs and devices: that is the error. */
	if (!s && !t->nprocs && irregular.status) {
		*err = irregular;
		s = irregular.status;
	}
	if (!s)
		s = start_stream(L, t, npaths ? paths[0] : "", err);
	return stick(L, s, err);
}

enum vrt_load_status vrt_load_open_buffer(struct vrt_trace *t,
                                          const char *name,
                                          const uint8_t *buf, size_t len,
                                          struct vrt_load_error *err)
{
	enum vrt_load_status s;
	struct lstate *L;
	struct lfile *f;

	s = state_new(t, name, err);
	if (s)
		return s;
	L = lstate_of(t);
	f = file_new(L, name);
	if (!f)
		return stick(L,
		             vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, name,
		                           "decoder"),
		             err);
	f->is_buf = 1;
	f->eof = 1;
	f->in = (uint8_t *)buf; /* only read: is_buf keeps it unwritten */
	f->hi = len;
	L->nfiles_hint = 1;
	s = prime(L, t, f, err);
	if (!s)
		s = start_stream(L, t, name, err);
	return stick(L, s, err);
}

/* ---- the merge of files, and the end of the stream ---------------------- */

/* Everything is delivered: trailer times aligned, end time, devices
 * ordered (samples follow), decoder buffers released. */
static enum vrt_load_status finish_stream(struct lstate *L, struct vrt_trace *t,
                                          struct vrt_load_error *err)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		struct vrt_process *p = &t->procs[i];
		if (t->nhosts >= 2) {
			unsigned h = vrt_intern_host_find(t, p->host);
			if (h < t->nhosts)
				p->end_mono_ns = sat_add(p->end_mono_ns,
				                         t->host_shift[h]);
		}
		if (p->has_trailer && p->end_mono_ns > t->end_ns)
			t->end_ns = p->end_mono_ns;
	}
	if (L->delivered && L->last_ts > t->end_ns)
		t->end_ns = L->last_ts;
	if (vrt_intern_sort_devices(t))
		return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM,
		                     L->nfiles ? L->files[0]->name : "",
		                     "devices");
	if (t->device_remap)
		for (i = 0; i < t->nsamples; i++)
			if (t->samples[i].device >= 0 &&
			    (size_t)t->samples[i].device < t->ndevices)
				t->samples[i].device = (int32_t)
				        t->device_remap[t->samples[i].device];
	ZSTD_freeDCtx(L->dctx);
	L->dctx = NULL;
	while (L->free_fb) {
		struct fbuf *fb = L->free_fb;
		L->free_fb = fb->next;
		fbuf_unmap(fb);
		free(fb);
	}
	L->nfree_fb = 0;
	L->ended = 1;
	return VRT_LOAD_OK;
}

/*
 * The merge. Every run read so far is in one heap on (aligned time, file,
 * record order). A file still being read may yet add events at or after
 * its watermark, so nothing at or after the lowest watermark of those
 * files goes out; when the heap's first event is there, that file is read
 * one more frame. Events of the first run go out while they sort before
 * the second run's next one.
 */
enum vrt_load_status vrt_load_next(struct vrt_trace *t, struct vrt_event *out,
                                   size_t max, size_t *n,
                                   struct vrt_load_error *err)
{
	struct lstate *L = lstate_of(t);
	enum vrt_load_status st = VRT_LOAD_OK;
	size_t got = 0, counted = 0, i;

	*n = 0;
	if (L && L->failed) {
		*err = L->ferr;
		return L->failed;
	}
	if (!L || !L->opened)
		return vrt_load_fail(err, VRT_LOAD_ERR_IO, "",
		                     "no trace is open");
	while (got < max && !L->ended) {
		struct lfile *slow = NULL;
		int64_t bound = INT64_MAX, lim;
		struct run *r, *s = NULL;
		int eq, done;

		for (i = 0; i < L->nfiles; i++) {
			struct lfile *f = L->files[i];
			int64_t w;
			if (f->finished)
				continue;
			w = sat_add(f->relw, f->shift);
			if (!slow || w < bound) {
				slow = f;
				bound = w;
			}
		}
		if (!L->nheap || (slow && L->heap[0]->key >= bound)) {
			if (slow) {
				/* What went out is no longer held. */
				L->held -= got - counted < L->held ? got - counted
				                                   : L->held;
				counted = got;
				st = step(L, t, slow, err);
				if (st)
					return stick(L, st, err);
				continue;
			}
			/* The end: told in a call of its own, so no event of
			 * this call names a device index that moved. */
			if (!got) {
				st = finish_stream(L, t, err);
				if (st)
					return stick(L, st, err);
			}
			break;
		}
		r = L->heap[0];
		if (L->nheap > 1)
			s = L->heap[1];
		if (L->nheap > 2 && run_before(L->heap[2], s))
			s = L->heap[2];
		/* Up to the second run's next event (ties: file, record
		 * order) and below the watermark bound. */
		if (s) {
			lim = s->key;
			eq = r->f->idx != s->f->idx ? r->f->idx < s->f->idx
			                             : r->order < s->order;
		} else {
			lim = INT64_MAX;
			eq = 1;
		}
		if (slow && bound <= lim) {
			lim = bound;
			eq = 0;
		}
		if (r->kind == RUN_RAW)
			st = emit_raw(L, t, r, out, max, &got, lim, eq, &done,
			              err);
		else
			st = emit_ev(L, t, r, out, max, &got, lim, eq, &done,
			             err);
		if (st)
			return stick(L, st, err);
		if (done) {
			L->heap[0] = L->heap[--L->nheap];
			run_free(L, r);
		}
		if (L->nheap)
			heap_down(L->heap, L->nheap, 0);
	}
	t->events_total += got;
	L->held -= got - counted < L->held ? got - counted : L->held;
	*n = got;
	return VRT_LOAD_OK;
}

/* ---- release ------------------------------------------------------------ */

void vrt_load_free(struct vrt_trace *t)
{
	struct lstate *L = lstate_of(t);
	size_t i, j;

	for (i = 0; i < t->nprocs; i++) {
		struct vrt_process *p = &t->procs[i];
		free(p->path);
		free(p->host);
		free(p->exe);
		free(p->note);
		if (p->argv)
			for (j = 0; j < p->argc; j++)
				free(p->argv[j]);
		free(p->argv);
	}
	for (i = 0; i < t->ndevices; i++) {
		free(t->devices[i].host);
		free(t->devices[i].name);
	}
	vrt_intern_free(t);
	if (L) {
		for (i = 0; i < L->nheap; i++)
			run_free(L, L->heap[i]);
		for (i = 0; i < L->nfiles; i++) {
			struct lfile *f = L->files[i];
			if (f->seg)
				run_free(L, f->seg);
			if (f->eseg)
				run_free(L, f->eseg);
			file_free(f);
		}
		free(L->files);
		free(L->heap);
		ZSTD_freeDCtx(L->dctx);
		while (L->free_fb) {
			struct fbuf *fb = L->free_fb;
			L->free_fb = fb->next;
			fbuf_unmap(fb);
			free(fb);
		}
		while (L->free_run) {
			struct run *r = L->free_run;
			L->free_run = r->next;
			free(r);
		}
		free(L);
	}
	free(t->samples);
	free(t->sample_pids);
	for (i = 0; i < t->nskipped; i++)
		free(t->skipped[i]);
	free(t->skipped);
	for (i = 0; i < t->nhosts; i++)
		free(t->hosts[i]);
	free(t->hosts);
	free(t->host_shift);
	free(t->device_remap);
	free(t->procs);
	free(t->devices);
	free(t->fails);
	memset(t, 0, sizeof(*t));
}
