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
 * Reading a frame (vrt_load_frame_parse) takes its metadata into the tables at
 * once and cuts its events into runs: the events of one CHUNK come from one
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
 * processes is one stack. An id nothing declares resolves to "no stack" (or the
 * unknown frame): never an error. Devices get global indexes in order of first
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
 * The parts. This file reads the input and its frames, opens the files,
 * keeps the runs and their heap, ends the stream, reports errors and
 * releases. load_frame.c reads the records of a decoded frame into the
 * tables and the runs; load_tables.c holds a file's own tables (ids,
 * devices, frames, call paths) and resolves them into the shared ones;
 * load_deliver.c merges the runs into the stream and decodes their
 * records of the formats before BATCH as they go out, load_batch.c the
 * BATCH record of versions 4 and 5. What the parts share is in
 * load_internal.h.
 *
 * Single-threaded, no globals. Every length read from the input is
 * bounds-checked; no input can make this file assert or crash.
 */
#include "load.h"
#include "load_internal.h"
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

char *vrt_load_dup_bytes(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	if (n)
		memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* The rest of vrt_load_uv (load_internal.h): a varint whose first 8 bytes
 * all continue, read byte by byte. */
uint64_t vrt_load_uv_slow(const uint8_t **pp, int *bad)
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

static struct lstate *lstate_of(const struct vrt_trace *t)
{
	return t->intern;
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
	vrt_load_tables_free(f);
	vrt_load_batch_free(f);
	free(f);
}

/* ---- errors ------------------------------------------------------------- */

enum vrt_load_status vrt_load_rec_error_at(struct lfile *f, uint64_t frame_off,
                                         struct vrt_load_error *err,
                                         uint64_t roff, const char *what)
{
	return vrt_load_fail(err, VRT_LOAD_ERR_RECORD, f->name,
	                     "%s in frame at byte %" PRIu64
	                     " (record at offset %" PRIu64
	                     " of the decoded frame)",
	                     what, frame_off, roff);
}

enum vrt_load_status vrt_load_rec_error(struct lfile *f,
                                      struct vrt_load_error *err,
                                      uint64_t roff, const char *what)
{
	return vrt_load_rec_error_at(f, f->frame_off, err, roff, what);
}

enum vrt_load_status vrt_load_nomem(struct lfile *f, struct vrt_load_error *err,
                                  const char *what)
{
	return vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, f->name, "%s", what);
}

/* ---- runs and the heap that merges them ----------------------------------- */




void vrt_load_heap_down(struct run **h, size_t n, size_t i)
{
	struct run *x = h[i];

	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && vrt_load_run_before(h[c + 1], h[c]))
			c++;
		if (!vrt_load_run_before(h[c], x))
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
		if (!vrt_load_run_before(r, L->heap[up]))
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

struct run *vrt_load_run_new(struct lstate *L, struct lfile *f, int kind)
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

void vrt_load_run_free(struct lstate *L, struct run *r)
{
	if (r->fb)
		fbuf_put(L, r->fb);
	free(r->evs);
	r->next = L->free_run;
	L->free_run = r;
}

/* Ends the runs being read (at a CHUNK, a WATERMARK, a record of the other
 * kind, the end of the frame): they join the merge. */
int vrt_load_close_raw(struct lstate *L, struct lfile *f, const uint8_t *at)
{
	struct run *r = f->seg;

	if (!r)
		return 0;
	f->seg = NULL;
	r->end = at;
	if (heap_push(L, r)) {
		vrt_load_run_free(L, r);
		return -1;
	}
	return 0;
}

int vrt_load_close_ev(struct lstate *L, struct lfile *f)
{
	struct run *r = f->eseg;

	if (!r)
		return 0;
	f->eseg = NULL;
	r->key = vrt_load_sat_add(r->evs[0].ts, f->shift);
	if (heap_push(L, r)) {
		vrt_load_run_free(L, r);
		return -1;
	}
	return 0;
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
	st = vrt_load_tables_intern(t, f, err);
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
enum vrt_load_status vrt_load_step(struct lstate *L, struct vrt_trace *t,
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
			st = vrt_load_frame_parse(L, t, f, fb, err);
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
		enum vrt_load_status st = vrt_load_step(L, t, f, err);
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
				p->start_mono_ns = vrt_load_sat_add(
				        p->start_mono_ns, t->host_shift[h]);
		}
		for (i = 0; i < L->nfiles; i++) {
			struct lfile *f = L->files[i];
			h = vrt_intern_host_find(t, t->procs[f->proc].host);
			f->shift = h < t->nhosts ? t->host_shift[h] : 0;
		}
		/* Runs read so far were keyed unaligned. */
		for (i = 0; i < L->nheap; i++)
			L->heap[i]->key = vrt_load_sat_add(L->heap[i]->key,
			                          L->heap[i]->f->shift);
		for (i = L->nheap / 2; i-- > 0;)
			vrt_load_heap_down(L->heap, L->nheap, i);
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
enum vrt_load_status vrt_load_finish_stream(struct lstate *L,
                                            struct vrt_trace *t,
                                            struct vrt_load_error *err)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		struct vrt_process *p = &t->procs[i];
		if (t->nhosts >= 2) {
			unsigned h = vrt_intern_host_find(t, p->host);
			if (h < t->nhosts)
				p->end_mono_ns = vrt_load_sat_add(
				        p->end_mono_ns, t->host_shift[h]);
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
	enum vrt_load_status st;

	*n = 0;
	if (L && L->failed) {
		*err = L->ferr;
		return L->failed;
	}
	if (!L || !L->opened)
		return vrt_load_fail(err, VRT_LOAD_ERR_IO, "",
		                     "no trace is open");
	st = vrt_load_deliver_next(L, t, out, max, n, err);
	return st ? stick(L, st, err) : VRT_LOAD_OK;
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
			vrt_load_run_free(L, L->heap[i]);
		for (i = 0; i < L->nfiles; i++) {
			struct lfile *f = L->files[i];
			if (f->seg)
				vrt_load_run_free(L, f->seg);
			if (f->eseg)
				vrt_load_run_free(L, f->eseg);
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
