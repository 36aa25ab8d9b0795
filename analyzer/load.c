/*
 * load.c — reads trace files (the only analyzer file that touches them or
 * zstd) into the flat tables of struct vrt_trace.
 *
 * A file is a sequence of zstd frames. Each frame is located with
 * ZSTD_findFrameCompressedSize and decoded on its own with a streaming
 * decoder into a buffer capped at VRT_LOAD_FRAME_CAP, so a lying frame
 * header cannot make us allocate more. A last frame that ends early is a
 * file cut by SIGKILL: everything before it is kept and the process is
 * marked truncated. Any other undecodable byte is an error naming the file
 * and the byte offset.
 *
 * Records are parsed with the varint readers of trace_format.h, which never
 * read past the end; every field read below checks their result. Event
 * devices are stored as raw ordinals while a file is parsed and mapped to
 * the device table at the end of the file, so DEVICE records may come in
 * any order. STRING, FRAME, STACK and PHASE records are collected per file
 * (their ids are per file) and resolved once the whole file is read, since
 * a writer may emit them after the events that use them; frames and call
 * paths are then interned into tables shared by all files, keyed by names,
 * so the same call path in two processes is one stack. An id nothing
 * declares resolves to "no stack" (or the unknown frame): never an error.
 * Single-threaded, no globals.
 */
#include "load.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include "progress.h"
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

__attribute__((format(printf, 4, 5))) static enum vrt_load_status
fail(struct vrt_load_error *err, enum vrt_load_status s, const char *path,
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

/* Grows *arr (of *cap elements of size sz) to hold at least need. */
static int grow(void **arr, size_t *cap, size_t need, size_t sz)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / sz)
			return -1;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
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

/* ---- tables shared by the files of one load ------------------------------ */

/* Open addressing, linear probing; a slot holds a hash and an index + 1
 * (0 = empty). Entries are never removed. */
struct itab {
	struct islot {
		uint64_t h;
		uint32_t v;
	} * s;
	size_t cap, n;
};

struct intern {
	struct itab strs, frames, stacks;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static uint64_t hash_bytes(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*p)
		h = (h ^ (uint8_t)*p++) * 0x100000001b3ull;
	return mix64(h);
}

static int itab_grow(struct itab *it)
{
	size_t ncap = it->cap ? it->cap * 2 : 256, i;
	struct islot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	for (i = 0; i < it->cap; i++) {
		size_t j;
		if (!it->s[i].v)
			continue;
		j = it->s[i].h & (ncap - 1);
		while (ns[j].v)
			j = (j + 1) & (ncap - 1);
		ns[j] = it->s[i];
	}
	free(it->s);
	it->s = ns;
	it->cap = ncap;
	return 0;
}

/* Index of the slot for hash h whose entry eq() accepts, or of the empty
 * slot ending the probe; requires cap > n. */
static size_t itab_find(const struct itab *it, uint64_t h,
                        int (*eq)(const void *ctx, uint32_t v), const void *ctx)
{
	size_t i = h & (it->cap - 1);

	while (it->s[i].v) {
		if (it->s[i].h == h && eq(ctx, it->s[i].v - 1))
			return i;
		i = (i + 1) & (it->cap - 1);
	}
	return i;
}

/* Prepares room for one more entry. */
static int itab_reserve(struct itab *it)
{
	if ((it->n + 1) * 10 > it->cap * 7)
		return itab_grow(it);
	return 0;
}

static void itab_set(struct itab *it, size_t slot, uint64_t h, uint32_t v)
{
	it->s[slot].h = h;
	it->s[slot].v = v + 1;
	it->n++;
}

struct str_key {
	const struct vrt_trace *t;
	const char *s;
};

static int str_eq(const void *ctx, uint32_t v)
{
	const struct str_key *k = ctx;
	return !strcmp(k->t->strs[v], k->s);
}

/* Interns a NUL-terminated string; returns its index (> 0) or 0 when out
 * of memory (callers check with *oom). */
static uint32_t intern_str(struct vrt_trace *t, const char *s, int *oom)
{
	struct intern *in = t->intern;
	struct str_key k = {t, s};
	uint64_t h = hash_bytes(s);
	size_t slot;
	char *d;

	if (itab_reserve(&in->strs))
		goto nomem;
	slot = itab_find(&in->strs, h, str_eq, &k);
	if (in->strs.s[slot].v)
		return in->strs.s[slot].v - 1;
	if (t->nstrs >= UINT32_MAX - 1 || grow((void **)&t->strs, &t->cap_strs,
	                                       t->nstrs + 1, sizeof(*t->strs)))
		goto nomem;
	d = strdup(s);
	if (!d)
		goto nomem;
	t->strs[t->nstrs] = d;
	itab_set(&in->strs, slot, h, (uint32_t)t->nstrs);
	return (uint32_t)t->nstrs++;
nomem:
	*oom = 1;
	return 0;
}

/* intern_str for bytes from a record (not NUL-terminated). */
static uint32_t intern_bytes(struct vrt_trace *t, const uint8_t *p, size_t n,
                             int *oom)
{
	char *s = dup_bytes(p, n);
	uint32_t v;

	if (!s) {
		*oom = 1;
		return 0;
	}
	v = intern_str(t, s, oom);
	free(s);
	return v;
}

static uint64_t frame_hash(const struct vrt_frame *f)
{
	uint64_t h = mix64(f->kind + 0x9e3779b97f4a7c15ull);
	h = mix64(h ^ f->function);
	h = mix64(h ^ ((uint64_t)f->file << 1));
	h = mix64(h ^ f->line);
	h = mix64(h ^ f->offset);
	return mix64(h ^ f->ip);
}

struct frame_key {
	const struct vrt_trace *t;
	const struct vrt_frame *f;
};

static int frame_eq(const void *ctx, uint32_t v)
{
	const struct frame_key *k = ctx;
	const struct vrt_frame *a = &k->t->frames[v], *b = k->f;
	return a->kind == b->kind && a->function == b->function &&
	       a->file == b->file && a->line == b->line &&
	       a->offset == b->offset && a->ip == b->ip;
}

/* Returns the frame's index, or 0 (the unknown frame) with *oom set. */
static uint32_t intern_frame(struct vrt_trace *t, const struct vrt_frame *f,
                             int *oom)
{
	struct intern *in = t->intern;
	struct frame_key k = {t, f};
	uint64_t h = frame_hash(f);
	size_t slot;

	if (itab_reserve(&in->frames))
		goto nomem;
	slot = itab_find(&in->frames, h, frame_eq, &k);
	if (in->frames.s[slot].v)
		return in->frames.s[slot].v - 1;
	if (t->nframes >= UINT32_MAX - 1 ||
	    grow((void **)&t->frames, &t->cap_frames, t->nframes + 1,
	         sizeof(*t->frames)))
		goto nomem;
	t->frames[t->nframes] = *f;
	itab_set(&in->frames, slot, h, (uint32_t)t->nframes);
	return (uint32_t)t->nframes++;
nomem:
	*oom = 1;
	return 0;
}

struct stack_key {
	const struct vrt_trace *t;
	uint32_t parent, frame;
};

static int stack_eq(const void *ctx, uint32_t v)
{
	const struct stack_key *k = ctx;
	return k->t->stacks[v].parent == k->parent &&
	       k->t->stacks[v].frame == k->frame;
}

/* The stack (parent, frame); parent must exist. 0 with *oom set. */
static uint32_t intern_stack(struct vrt_trace *t, uint32_t parent,
                             uint32_t frame, int *oom)
{
	struct intern *in = t->intern;
	struct stack_key k = {t, parent, frame};
	uint64_t h = mix64(((uint64_t)parent << 32 | frame) ^ 0x5bd1e995ull);
	size_t slot;
	struct vrt_stack *st;

	if (itab_reserve(&in->stacks))
		goto nomem;
	slot = itab_find(&in->stacks, h, stack_eq, &k);
	if (in->stacks.s[slot].v)
		return in->stacks.s[slot].v - 1;
	if (t->nstacks >= UINT32_MAX - 1 ||
	    grow((void **)&t->stacks, &t->cap_stacks, t->nstacks + 1,
	         sizeof(*t->stacks)))
		goto nomem;
	st = &t->stacks[t->nstacks];
	st->parent = parent;
	st->frame = frame;
	st->depth = t->stacks[parent].depth + 1;
	itab_set(&in->stacks, slot, h, (uint32_t)t->nstacks);
	return (uint32_t)t->nstacks++;
nomem:
	*oom = 1;
	return 0;
}

static const char *const inferred_kv_name = "kv_cache (inferred)";

/* The fixed names: 0..VRT_PHASE_BUILTIN_MAX and the inferred kv_cache. */
static int phases_init(struct vrt_trace *t)
{
	unsigned i;

	for (i = (unsigned)t->nphases; i <= VRT_LOAD_PHASE_INFERRED_KV; i++) {
		const char *n = i == VRT_LOAD_PHASE_INFERRED_KV
		                        ? inferred_kv_name
		                        : vrt_phase_builtin_name(i);
		t->phases[i] = strdup(n ? n : "reserved");
		if (!t->phases[i])
			return -1;
		t->nphases = i + 1;
	}
	return 0;
}

int vrt_load_phase_intern(struct vrt_trace *t, const char *name)
{
	size_t i;

	if (phases_init(t))
		return -1;
	for (i = 0; i < t->nphases; i++)
		if (!strcmp(t->phases[i], name))
			return (int)i;
	if (t->nphases == VRT_LOAD_MAX_PHASES - 1) {
		/* Full: every further name shares one last entry. */
		t->phases[t->nphases] = strdup("other");
		if (!t->phases[t->nphases])
			return -1;
		t->nphases++;
	}
	if (t->nphases == VRT_LOAD_MAX_PHASES)
		return VRT_LOAD_MAX_PHASES - 1;
	t->phases[t->nphases] = strdup(name);
	if (!t->phases[t->nphases])
		return -1;
	return (int)t->nphases++;
}

/* Creates the shared tables with their fixed first entries. */
static int tables_init(struct vrt_trace *t)
{
	if (t->intern)
		return 0;
	t->intern = calloc(1, sizeof(struct intern));
	if (!t->intern ||
	    grow((void **)&t->strs, &t->cap_strs, 1, sizeof(*t->strs)) ||
	    grow((void **)&t->frames, &t->cap_frames, 1, sizeof(*t->frames)) ||
	    grow((void **)&t->stacks, &t->cap_stacks, 1, sizeof(*t->stacks)))
		return -1;
	t->strs[0] = NULL;
	t->nstrs = 1;
	memset(&t->frames[0], 0, sizeof(t->frames[0]));
	t->nframes = 1;
	memset(&t->stacks[0], 0, sizeof(t->stacks[0]));
	t->nstacks = 1;
	return phases_init(t);
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
		return inferred_kv_name;
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

/* ---- per-file state --------------------------------------------------- */

/* A process numbers CUDA and HIP devices separately: CUDA ordinal 0 and
 * HIP ordinal 0 are two cards, so a file's device is (vendor, ordinal). An
 * event's vendor is its api's (vrt_api_vendor). */
struct file_dev {
	int vendor; /* enum vrt_vendor */
	int64_t ordinal;
	int32_t global; /* index in t->devices */
};

/* Records of one file, resolved at its end (ids are per file). */
struct file_str {
	uint64_t id;
	uint32_t g; /* index in t->strs */
	uint32_t seq;
};

struct file_frame {
	uint64_t id;
	uint64_t ip, a, b, c; /* native: module, symbol, offset;
	                         python: file, function, line */
	uint32_t g;           /* index in t->frames, once resolved */
	uint32_t seq;
	uint8_t kind;
};

struct file_stack {
	uint64_t id, parent, frame, phase;
	uint32_t g; /* index in t->stacks, once resolved */
	uint32_t seq;
	uint8_t state; /* 0 unresolved, 1 on the current path, 2 done */
};

struct file_phase {
	uint64_t id;
	uint32_t g; /* index in t->phases */
	uint32_t seq;
};

struct file_state {
	struct vrt_trace *t;
	const char *name;
	struct vrt_load_error *err;
	size_t proc; /* index of this file's process, valid if have_header */
	int have_header;
	size_t first_ev;
	struct file_dev devs[VRT_LOAD_MAX_FILE_DEVICES];
	size_t ndevs;
	struct file_str *fstr;
	size_t nfstr, capfstr;
	struct file_frame *ffr;
	size_t nffr, capffr;
	struct file_stack *fst;
	size_t nfst, capfst;
	struct file_phase *fph;
	size_t nfph, capfph;
	/* current frame */
	uint64_t frame_off;
	int have_chunk;
	uint32_t snap_tid; /* thread writing a snapshot (in_snap) */
	int in_snap;
	uint32_t tid;
	int64_t ts;
};

static int host_index(struct vrt_trace *t, const char *host, unsigned *idx)
{
	size_t i;
	char **nh;

	for (i = 0; i < t->nhosts; i++) {
		if (!strcmp(t->hosts[i], host)) {
			*idx = (unsigned)i;
			return 0;
		}
	}
	nh = realloc(t->hosts, (t->nhosts + 1) * sizeof(*nh));
	if (!nh)
		return -1;
	t->hosts = nh;
	nh[t->nhosts] = strdup(host);
	if (!nh[t->nhosts])
		return -1;
	*idx = (unsigned)t->nhosts++;
	return 0;
}

static void format_uuid(char *out, size_t outsz, int vendor, const uint8_t *u,
                        size_t n)
{
	size_t i, o = 0;

	out[0] = '\0';
	if (n == 16) {
		static const int dash[16] = {0, 0, 0, 1, 0, 1, 0, 1,
		                             0, 1, 0, 0, 0, 0, 0, 0};
		o = (size_t)snprintf(out, outsz, "%s",
		                     vendor == VRT_VENDOR_CUDA ? "GPU-" : "");
		for (i = 0; i < 16 && o + 3 < outsz; i++) {
			o += (size_t)snprintf(out + o, outsz - o, "%02x%s",
			                      u[i], dash[i] ? "-" : "");
		}
		return;
	}
	/* Not the 16 raw bytes the format names: keep it visible as hex. */
	for (i = 0; i < n && o + 3 < outsz; i++)
		o += (size_t)snprintf(out + o, outsz - o, "%02x", u[i]);
}

/* Finds or creates the global device for (uuid, or host+vendor+ordinal);
 * vendor 0 (unknown) matches any. */
static int32_t global_device(struct vrt_trace *t, const char *host, int vendor,
                             int64_t ordinal, const char *uuid)
{
	size_t i;
	unsigned hidx;
	struct vrt_device *d;

	for (i = 0; i < t->ndevices; i++) {
		d = &t->devices[i];
		if (uuid[0] ? !strcmp(d->uuid, uuid)
		            : (!d->uuid[0] && d->ordinal == ordinal &&
		               (!vendor || !d->vendor || d->vendor == vendor) &&
		               !strcmp(d->host, host)))
			return (int32_t)i;
	}
	if (host_index(t, host, &hidx))
		return -1;
	if (grow((void **)&t->devices, &t->cap_devices, t->ndevices + 1,
	         sizeof(*t->devices)))
		return -1;
	d = &t->devices[t->ndevices];
	memset(d, 0, sizeof(*d));
	d->host = strdup(host);
	if (!d->host)
		return -1;
	d->ordinal = ordinal;
	d->vendor = vendor;
	d->host_idx = hidx;
	snprintf(d->uuid, sizeof(d->uuid), "%s", uuid);
	return (int32_t)t->ndevices++;
}

static enum vrt_load_status rec_error(struct file_state *fs, uint64_t roff,
                                      const char *what)
{
	return fail(fs->err, VRT_LOAD_ERR_RECORD, fs->name,
	            "%s in frame at byte %" PRIu64 " (record at offset %" PRIu64
	            " of the decoded frame)",
	            what, fs->frame_off, roff);
}

static enum vrt_load_status parse_header(struct file_state *fs,
                                         struct cursor *c, uint64_t roff)
{
	struct vrt_trace *t = fs->t;
	struct vrt_process *pr;
	const uint8_t *s;
	size_t n, i;
	uint64_t version, argc;

	if ((size_t)(c->end - c->p) < VRT_TRACE_MAGIC_LEN ||
	    memcmp(c->p, VRT_TRACE_MAGIC, VRT_TRACE_MAGIC_LEN))
		return fail(fs->err, VRT_LOAD_ERR_BAD_MAGIC, fs->name,
		            "bad magic in HEADER (frame at byte %" PRIu64 ")",
		            fs->frame_off);
	c->p += VRT_TRACE_MAGIC_LEN;
	version = get_u(c);
	if (c->bad)
		return rec_error(fs, roff, "short HEADER");
	if (version > VRT_TRACE_VERSION)
		return fail(fs->err, VRT_LOAD_ERR_VERSION, fs->name,
		            "format version %" PRIu64 " is newer than this "
		            "vramtrace supports (%d)",
		            version, VRT_TRACE_VERSION);
	if (version == 0)
		return fail(fs->err, VRT_LOAD_ERR_BAD_MAGIC, fs->name,
		            "format version 0 is not valid");
	if (grow((void **)&t->procs, &t->cap_procs, t->nprocs + 1,
	         sizeof(*t->procs)))
		return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "header");
	pr = &t->procs[t->nprocs];
	memset(pr, 0, sizeof(*pr));
	fs->proc = t->nprocs++;
	fs->have_header = 1;
	pr->path = strdup(fs->name);
	pr->pid = get_u(c);
	pr->ppid = get_u(c);
	pr->start_wall_ns = (int64_t)get_u(c);
	pr->start_mono_ns = (int64_t)get_u(c);
	(void)get_u(c); /* flags: unused in version 1 */
	n = get_str(c, &s);
	pr->host = dup_bytes(s, n);
	n = get_str(c, &s);
	pr->exe = dup_bytes(s, n);
	argc = get_u(c);
	if (c->bad)
		return rec_error(fs, roff, "short HEADER");
	/* Each argument takes at least one byte: bound argc by the payload. */
	if (argc > (uint64_t)(c->end - c->p))
		return rec_error(fs, roff,
		                 "HEADER argc larger than the record");
	pr->argv = calloc(argc + 1, sizeof(char *));
	if (!pr->path || !pr->host || !pr->exe || !pr->argv)
		return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "header");
	for (i = 0; i < argc; i++) {
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(fs, roff, "short HEADER argv");
		pr->argv[i] = dup_bytes(s, n);
		if (!pr->argv[i])
			return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name,
			            "header");
		pr->argc = i + 1;
	}
	return VRT_LOAD_OK;
}

static enum vrt_load_status parse_device(struct file_state *fs,
                                         struct cursor *c, uint64_t roff)
{
	struct vrt_process *pr = &fs->t->procs[fs->proc];
	struct vrt_device *d;
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
		return rec_error(fs, roff, "malformed DEVICE");
	format_uuid(ustr, sizeof(ustr), (int)vendor, uuid, nuuid);
	g = global_device(fs->t, pr->host, vendor <= 255 ? (int)vendor : 0,
	                  (int64_t)ordinal, ustr);
	if (g < 0)
		return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "device");
	d = &fs->t->devices[g];
	if (!d->name) {
		d->name = dup_bytes(name, nname);
		if (!d->name)
			return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name,
			            "device");
		d->vendor = vendor <= 255 ? (int)vendor : 0;
		d->total_bytes = total;
		d->have_total = 1;
	}
	for (i = 0; i < fs->ndevs; i++) {
		if (fs->devs[i].ordinal == (int64_t)ordinal &&
		    (uint64_t)fs->devs[i].vendor == vendor) {
			fs->devs[i].global = g;
			return VRT_LOAD_OK;
		}
	}
	if (fs->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
		return rec_error(fs, roff, "too many devices");
	fs->devs[fs->ndevs].vendor = vendor <= 255 ? (int)vendor : 0;
	fs->devs[fs->ndevs].ordinal = (int64_t)ordinal;
	fs->devs[fs->ndevs].global = g;
	fs->ndevs++;
	return VRT_LOAD_OK;
}

/* Clamps a device ordinal from an event into the int32 kept until the end
 * of the file; anything below -1 or absurdly large becomes -1 (none). */
static int32_t raw_device(int64_t d)
{
	return (d < -1 || d > INT32_MAX) ? -1 : (int32_t)d;
}

/* Stamps e with the chunk's time, thread and process and appends it. */
static enum vrt_load_status push_event(struct file_state *fs,
                                       struct vrt_event *e, uint64_t dts)
{
	struct vrt_trace *t = fs->t;

	/* Wrapping timestamps would be corrupt input; saturate instead. */
	if (dts > (uint64_t)(INT64_MAX - fs->ts))
		fs->ts = INT64_MAX;
	else
		fs->ts += (int64_t)dts;
	e->ts = fs->ts;
	e->tid = fs->tid;
	e->proc = (uint32_t)fs->proc;
	if (grow((void **)&t->ev, &t->cap_ev, t->nev + 1, sizeof(*t->ev)))
		return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "events");
	t->ev[t->nev++] = *e;
	t->procs[fs->proc].events++;
	return VRT_LOAD_OK;
}

static enum vrt_load_status parse_event(struct file_state *fs, unsigned type,
                                        struct cursor *c, uint64_t roff)
{
	struct vrt_trace *t = fs->t;
	struct vrt_event e;
	uint64_t dts, api = 0, error = 0, have_info = 0, fr = 0, to = 0;

	if (!fs->have_chunk)
		return rec_error(fs, roff, "event before any CHUNK");
	memset(&e, 0, sizeof(e));
	dts = get_u(c);
	if (type != VRT_REC_MEMINFO)
		api = get_u(c);
	e.device = raw_device(get_s(c));
	switch (type) {
	case VRT_REC_ALLOC:
		e.kind = VRT_EV_ALLOC;
		e.addr = get_u(c);
		e.size = get_u(c);
		e.aux = get_u(c);
		if (fs->in_snap && fs->tid == fs->snap_tid)
			e.flags |= VRT_EV_SNAP;
		break;
	case VRT_REC_FREE:
		e.kind = VRT_EV_FREE;
		e.addr = get_u(c);
		e.aux = get_u(c);
		break;
	case VRT_REC_MAP:
		e.kind = VRT_EV_MAP;
		e.addr = get_u(c);
		e.size = get_u(c);
		(void)get_u(c); /* offset into the handle: not needed */
		e.aux = get_u(c);
		break;
	case VRT_REC_UNMAP:
		e.kind = VRT_EV_UNMAP;
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
		break;
	}
	if (type != VRT_REC_MEMINFO) {
		/* Both stay file ids (the raw phase field) until the file
		 * ends: resolve_stacks() maps them. An id too large to be a
		 * stack is no stack. */
		uint64_t sid = get_u(c), ph = get_u(c);
		e.stack = sid > UINT32_MAX ? 0 : (uint32_t)sid;
		e.phase = ph > UINT32_MAX ? UINT32_MAX : (uint32_t)ph;
	}
	if (c->bad)
		return rec_error(fs, roff, "short event record");
	if (api > VRT_API_MAX)
		return rec_error(fs, roff, "api id out of range");
	e.api = (uint16_t)api;
	if (type == VRT_REC_FAIL) {
		e.aux = error;
		if (have_info)
			e.flags |= VRT_EV_HAVE_INFO;
		if (grow((void **)&t->fails, &t->cap_fails, t->nfails + 1,
		         sizeof(*t->fails)))
			return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name,
			            "events");
		t->fails[t->nfails].free_bytes = have_info ? fr : 0;
		t->fails[t->nfails].total_bytes = have_info ? to : 0;
		e.extra = (uint32_t)t->nfails++;
		if (t->nfails > UINT32_MAX)
			return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name,
			            "too many failures");
	}
	return push_event(fs, &e, dts);
}

/* A sampler reading: kept in t->samples, and as an event (so it is timed,
 * its device mapped and ordered like every event; replay skips it). */
static enum vrt_load_status parse_sample(struct file_state *fs,
                                         struct cursor *c, uint64_t roff,
                                         uint64_t dts)
{
	struct vrt_trace *t = fs->t;
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
			return rec_error(fs, roff, "malformed SAMPLE");
		smp.first_pid = (uint32_t)t->nsample_pids;
		for (uint64_t k = 0; k < np; k++) {
			struct vrt_sample_pid sp;
			sp.pid = get_u(c);
			sp.used_bytes = get_u(c);
			if (c->bad)
				return rec_error(fs, roff, "malformed SAMPLE");
			if (grow((void **)&t->sample_pids, &t->cap_sample_pids,
			         t->nsample_pids + 1, sizeof(sp)))
				return fail(fs->err, VRT_LOAD_ERR_NOMEM,
				            fs->name, "samples");
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
		return rec_error(fs, roff, "malformed SAMPLE");
	if (grow((void **)&t->samples, &t->cap_samples, t->nsamples + 1,
	         sizeof(smp)) ||
	    t->nsamples >= UINT32_MAX)
		return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "samples");
	t->samples[t->nsamples] = smp;
	e.kind = VRT_EV_SAMPLE;
	e.extra = (uint32_t)t->nsamples++;
	return push_event(fs, &e, dts);
}

/* MARK, NET, PROC, REQUEST: chunk events that change no memory. */
static enum vrt_load_status parse_chunk_event(struct file_state *fs,
                                              unsigned type, struct cursor *c,
                                              uint64_t roff)
{
	struct vrt_event e;
	const uint8_t *s = NULL;
	size_t n = 0;
	uint64_t dts;
	int oom = 0;

	if (!fs->have_chunk)
		return rec_error(fs, roff, "event before any CHUNK");
	memset(&e, 0, sizeof(e));
	dts = get_u(c);
	switch (type) {
	case VRT_REC_MARK:
		e.kind = VRT_EV_MARK;
		n = get_str(c, &s);
		break;
	case VRT_REC_NET:
		e.kind = VRT_EV_NET;
		e.aux = get_u(c);
		e.addr = get_u(c);
		e.size = get_u(c);
		break;
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
		return parse_sample(fs, c, roff, dts);
	case VRT_REC_SNAPSHOT:
		e.kind = VRT_EV_SNAPSHOT;
		e.aux = get_u(c);
		fs->in_snap = e.aux == 1;
		fs->snap_tid = fs->tid;
		break;
	}
	if (c->bad)
		return rec_error(fs, roff, "short event record");
	if (type == VRT_REC_MARK || type == VRT_REC_PROC) {
		e.extra = intern_bytes(fs->t, s, n, &oom);
		if (oom)
			return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name,
			            "strings");
	}
	e.device = -1;
	return push_event(fs, &e, dts);
}

/* STRING, FRAME, STACK, PHASE: kept per file, resolved at its end. */
static enum vrt_load_status parse_symbolic(struct file_state *fs, unsigned type,
                                           struct cursor *c, uint64_t roff)
{
	struct vrt_trace *t = fs->t;
	const uint8_t *s;
	size_t n;
	uint64_t id = get_u(c);
	int oom = 0;

	switch (type) {
	case VRT_REC_STRING: {
		struct file_str *fsr;
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(fs, roff, "malformed STRING");
		if (grow((void **)&fs->fstr, &fs->capfstr, fs->nfstr + 1,
		         sizeof(*fs->fstr)))
			break;
		fsr = &fs->fstr[fs->nfstr];
		fsr->id = id;
		fsr->seq = (uint32_t)fs->nfstr;
		fsr->g = intern_bytes(t, s, n, &oom);
		if (oom)
			break;
		fs->nfstr++;
		return VRT_LOAD_OK;
	}
	case VRT_REC_FRAME: {
		struct file_frame f;
		memset(&f, 0, sizeof(f));
		f.id = id;
		f.kind = (uint8_t)get_u(c);
		if (f.kind == VRT_FRAME_NATIVE)
			f.ip = get_u(c);
		f.a = get_u(c);
		f.b = get_u(c);
		f.c = get_u(c);
		if (c->bad || f.kind > VRT_FRAME_PYTHON)
			return rec_error(fs, roff, "malformed FRAME");
		if (grow((void **)&fs->ffr, &fs->capffr, fs->nffr + 1,
		         sizeof(*fs->ffr)))
			break;
		f.seq = (uint32_t)fs->nffr;
		fs->ffr[fs->nffr++] = f;
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
			return rec_error(fs, roff, "malformed STACK");
		if (grow((void **)&fs->fst, &fs->capfst, fs->nfst + 1,
		         sizeof(*fs->fst)))
			break;
		st.seq = (uint32_t)fs->nfst;
		fs->fst[fs->nfst++] = st;
		return VRT_LOAD_OK;
	}
	case VRT_REC_PHASE: {
		char *name;
		int g;
		n = get_str(c, &s);
		if (c->bad)
			return rec_error(fs, roff, "malformed PHASE");
		/* Fixed ids keep their names whatever a record says. */
		if (id <= VRT_PHASE_BUILTIN_MAX)
			return VRT_LOAD_OK;
		name = dup_bytes(s, n);
		if (!name || grow((void **)&fs->fph, &fs->capfph, fs->nfph + 1,
		                  sizeof(*fs->fph))) {
			free(name);
			break;
		}
		g = vrt_load_phase_intern(t, name[0] ? name : "(unnamed)");
		free(name);
		if (g < 0)
			break;
		fs->fph[fs->nfph].id = id;
		fs->fph[fs->nfph].g = (uint32_t)g;
		fs->fph[fs->nfph].seq = (uint32_t)fs->nfph;
		fs->nfph++;
		return VRT_LOAD_OK;
	}
	}
	return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "stacks");
}

/* Parses the records of one decoded frame. */
static enum vrt_load_status parse_frame(struct file_state *fs,
                                        const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf, *end = buf + len;
	enum vrt_load_status st;

	fs->have_chunk = 0;
	while (p < end) {
		uint64_t roff = (uint64_t)(p - buf), plen;
		unsigned type = *p++;
		struct cursor c;

		if (vrt_get_uvarint(&p, end, &plen) ||
		    plen > (uint64_t)(end - p))
			return rec_error(fs, roff,
			                 "record longer than its frame");
		c.p = p;
		c.end = p + plen;
		c.bad = 0;
		p += plen;
		if (!fs->have_header) {
			if (type != VRT_REC_HEADER)
				return fail(fs->err, VRT_LOAD_ERR_NO_HEADER,
				            fs->name,
				            "first record is type %u, not a "
				            "HEADER",
				            type);
			st = parse_header(fs, &c, roff);
			if (st)
				return st;
			continue;
		}
		switch (type) {
		case VRT_REC_HEADER:
			/* One process per file: a repeated HEADER adds
			 * nothing, so it is skipped like an unknown record. */
			break;
		case VRT_REC_DEVICE:
			st = parse_device(fs, &c, roff);
			if (st)
				return st;
			break;
		case VRT_REC_CHUNK: {
			uint64_t tid = get_u(&c), ts = get_u(&c);
			if (c.bad)
				return rec_error(fs, roff, "short CHUNK");
			fs->have_chunk = 1;
			fs->tid = (uint32_t)tid;
			fs->ts = ts > INT64_MAX ? INT64_MAX : (int64_t)ts;
			break;
		}
		case VRT_REC_ALLOC:
		case VRT_REC_FREE:
		case VRT_REC_MAP:
		case VRT_REC_UNMAP:
		case VRT_REC_FAIL:
		case VRT_REC_MEMINFO:
			st = parse_event(fs, type, &c, roff);
			if (st)
				return st;
			break;
		case VRT_REC_MARK:
		case VRT_REC_NET:
		case VRT_REC_PROC:
		case VRT_REC_REQUEST:
		case VRT_REC_SAMPLE:
		case VRT_REC_SNAPSHOT:
			st = parse_chunk_event(fs, type, &c, roff);
			if (st)
				return st;
			break;
		case VRT_REC_STRING:
		case VRT_REC_FRAME:
		case VRT_REC_STACK:
		case VRT_REC_PHASE:
			st = parse_symbolic(fs, type, &c, roff);
			if (st)
				return st;
			break;
		case VRT_REC_TRAILER: {
			struct vrt_process *pr = &fs->t->procs[fs->proc];
			const uint8_t *s;
			size_t n;
			uint64_t endns = get_u(&c);
			pr->trailer_flags = get_u(&c);
			pr->events_written = get_u(&c);
			pr->events_dropped = get_u(&c);
			n = get_str(&c, &s);
			if (c.bad)
				return rec_error(fs, roff, "short TRAILER");
			free(pr->note);
			pr->note = dup_bytes(s, n);
			if (!pr->note)
				return fail(fs->err, VRT_LOAD_ERR_NOMEM,
				            fs->name, "trailer");
			pr->has_trailer = 1;
			pr->end_mono_ns =
			        endns > INT64_MAX ? INT64_MAX : (int64_t)endns;
			break;
		}
		default:
			/* SAMPLE, WATERMARK and types from newer writers:
			 * not used by this analyzer, skipped by their
			 * length. */
			break;
		}
	}
	return VRT_LOAD_OK;
}

/* Maps the raw ordinals of this file's events to global devices. */
static enum vrt_load_status resolve_devices(struct file_state *fs)
{
	struct vrt_trace *t = fs->t;
	const char *host = t->procs[fs->proc].host;
	size_t i, j;

	for (i = fs->first_ev; i < t->nev; i++) {
		struct vrt_event *e = &t->ev[i];
		int32_t g = -1;
		int vendor = vrt_api_vendor(e->api);
		if (e->device < 0) {
			e->device = -1;
			continue;
		}
		for (j = 0; j < fs->ndevs; j++) {
			if (fs->devs[j].ordinal == e->device &&
			    fs->devs[j].vendor == vendor) {
				g = fs->devs[j].global;
				break;
			}
		}
		if (g < 0) {
			/* An ordinal no DEVICE record described. */
			if (fs->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
				return fail(fs->err, VRT_LOAD_ERR_RECORD,
				            fs->name, "too many devices");
			g = global_device(t, host, vendor, e->device, "");
			if (g < 0)
				return fail(fs->err, VRT_LOAD_ERR_NOMEM,
				            fs->name, "devices");
			fs->devs[fs->ndevs].vendor = vendor;
			fs->devs[fs->ndevs].ordinal = e->device;
			fs->devs[fs->ndevs].global = g;
			fs->ndevs++;
		}
		e->device = g;
	}
	return VRT_LOAD_OK;
}

/* Puts the samples in event order (time) with their events' final time,
 * process and device, once clocks are aligned and devices sorted. */
static int order_samples(struct vrt_trace *t)
{
	struct vrt_sample *sorted;
	size_t i, n = 0;

	if (!t->nsamples)
		return 0;
	sorted = malloc(t->nsamples * sizeof(*sorted));
	if (!sorted)
		return -1;
	for (i = 0; i < t->nev; i++) {
		struct vrt_event *e = &t->ev[i];
		if (e->kind != VRT_EV_SAMPLE || e->extra >= t->nsamples)
			continue;
		sorted[n] = t->samples[e->extra];
		sorted[n].ts = e->ts;
		sorted[n].proc = e->proc;
		sorted[n].device = e->device;
		e->extra = (uint32_t)n++;
	}
	free(t->samples);
	t->samples = sorted;
	t->nsamples = t->cap_samples = n;
	return 0;
}

/* ---- stacks: per-file ids to shared indexes ----------------------------- */

/* Sorting by (id, order of appearance): the first declaration of an id
 * wins when a corrupt file repeats one. */
#define VRT_CMP_ID(name, type)                                                 \
	static int name(const void *pa, const void *pb)                        \
	{                                                                      \
		const type *a = pa, *b = pb;                                   \
		if (a->id != b->id)                                            \
			return a->id < b->id ? -1 : 1;                         \
		return a->seq < b->seq ? -1 : a->seq > b->seq;                 \
	}
VRT_CMP_ID(cmp_fstr, struct file_str)
VRT_CMP_ID(cmp_ffr, struct file_frame)
VRT_CMP_ID(cmp_fst, struct file_stack)
VRT_CMP_ID(cmp_fph, struct file_phase)
#undef VRT_CMP_ID

/* Binary search over an array sorted by id (first of equal ids); returns
 * the index or -1. Every file_* struct starts with its uint64_t id. */
static ptrdiff_t find_id(const void *arr, size_t n, size_t sz, uint64_t id)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t v;
		memcpy(&v, (const char *)arr + mid * sz, sizeof(v));
		if (v < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n) {
		uint64_t v;
		memcpy(&v, (const char *)arr + lo * sz, sizeof(v));
		if (v == id)
			return (ptrdiff_t)lo;
	}
	return -1;
}

static uint32_t file_string(const struct file_state *fs, uint64_t id)
{
	ptrdiff_t i;

	if (!id)
		return 0;
	i = find_id(fs->fstr, fs->nfstr, sizeof(*fs->fstr), id);
	return i < 0 ? 0 : fs->fstr[i].g;
}

/* The shared phase index of a file's phase id; an undeclared custom id
 * becomes "phase-N". -1 on ENOMEM. */
static int file_phase(struct file_state *fs, unsigned id)
{
	ptrdiff_t i;
	char name[32];

	if (id <= VRT_PHASE_BUILTIN_MAX)
		return (int)id;
	i = find_id(fs->fph, fs->nfph, sizeof(*fs->fph), id);
	if (i >= 0)
		return (int)fs->fph[i].g;
	snprintf(name, sizeof(name), "phase-%u", id);
	return vrt_load_phase_intern(fs->t, name);
}

/* Shared stack index of file stack k, interning its path outermost
 * first. A parent nothing declares, a cycle, or a path deeper than
 * VRT_LOAD_MAX_DEPTH ends the path there (as if at the root). */
static int resolve_stack(struct file_state *fs, size_t k, size_t *chain)
{
	struct vrt_trace *t = fs->t;
	size_t len = 0, j = k;
	uint32_t base = 0;
	int oom = 0;

	for (;;) {
		struct file_stack *st = &fs->fst[j];
		ptrdiff_t p;
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
		p = find_id(fs->fst, fs->nfst, sizeof(*fs->fst), st->parent);
		if (p < 0)
			break;
		j = (size_t)p;
	}
	while (len) {
		struct file_stack *st = &fs->fst[chain[--len]];
		ptrdiff_t f =
		        find_id(fs->ffr, fs->nffr, sizeof(*fs->ffr), st->frame);
		uint32_t frame = f < 0 ? 0 : fs->ffr[f].g;
		base = intern_stack(t, base, frame, &oom);
		if (oom)
			return -1;
		st->g = base;
		st->state = 2;
	}
	return 0;
}

/*
 * Runs once the whole file is read: interns its frames and stacks, then
 * gives each of its events a shared stack index and its phase: an
 * annotation stands; otherwise the STACK record's phase (the writer's
 * rules); otherwise the event's own field; else unattributed. cmd_analyze
 * may re-classify later (attrib.c).
 */
static enum vrt_load_status resolve_stacks(struct file_state *fs)
{
	struct vrt_trace *t = fs->t;
	size_t i, *chain = NULL;
	int oom = 0;

	/* qsort's base must not be NULL, even for no elements. */
	if (fs->nfstr)
		qsort(fs->fstr, fs->nfstr, sizeof(*fs->fstr), cmp_fstr);
	if (fs->nffr)
		qsort(fs->ffr, fs->nffr, sizeof(*fs->ffr), cmp_ffr);
	if (fs->nfst)
		qsort(fs->fst, fs->nfst, sizeof(*fs->fst), cmp_fst);
	if (fs->nfph)
		qsort(fs->fph, fs->nfph, sizeof(*fs->fph), cmp_fph);
	for (i = 0; i < fs->nffr; i++) {
		struct file_frame *ff = &fs->ffr[i];
		struct vrt_frame f;
		memset(&f, 0, sizeof(f));
		f.kind = ff->kind;
		if (ff->kind == VRT_FRAME_PYTHON) {
			f.file = file_string(fs, ff->a);
			f.function = file_string(fs, ff->b);
			f.line = ff->c;
		} else {
			f.file = file_string(fs, ff->a);
			f.function = file_string(fs, ff->b);
			f.offset = ff->c;
			/* Without a symbol the address is all there is
			 * (and it only matches within one process). */
			if (!f.function)
				f.ip = ff->ip;
		}
		ff->g = intern_frame(t, &f, &oom);
		if (oom)
			goto nomem;
	}
	if (fs->nfst) {
		chain = malloc((fs->nfst < VRT_LOAD_MAX_DEPTH
		                        ? fs->nfst
		                        : VRT_LOAD_MAX_DEPTH) *
		               sizeof(*chain));
		if (!chain)
			goto nomem;
	}
	for (i = 0; i < fs->nfst; i++)
		if (fs->fst[i].state != 2 && resolve_stack(fs, i, chain))
			goto nomem;
	free(chain);
	chain = NULL;
	for (i = fs->first_ev; i < t->nev; i++) {
		struct vrt_event *e = &t->ev[i];
		const struct file_stack *st = NULL;
		unsigned src = vrt_phase_source(e->phase);
		unsigned id = vrt_phase_id(e->phase);
		int g;

		if (e->kind > VRT_EV_FAIL)
			continue; /* MEMINFO and later kinds carry neither */
		if (e->stack) {
			ptrdiff_t k = find_id(fs->fst, fs->nfst,
			                      sizeof(*fs->fst), e->stack);
			st = k < 0 ? NULL : &fs->fst[k];
		}
		e->stack = st ? st->g : 0;
		if (src != VRT_SRC_ANNOTATION) {
			if (st && vrt_phase_id(st->phase)) {
				id = vrt_phase_id(st->phase);
			}
			src = VRT_SRC_RULE;
		}
		g = id ? file_phase(fs, id) : 0;
		if (g < 0)
			goto nomem;
		e->phase = (uint32_t)g;
		e->phase_src = (uint8_t)(g ? src : VRT_SRC_RULE);
	}
	return VRT_LOAD_OK;
nomem:
	free(chain);
	return fail(fs->err, VRT_LOAD_ERR_NOMEM, fs->name, "stacks");
}

/* Decodes one frame of [src, src+n) into *out (grown, capped). */
static enum vrt_load_status decode_frame(ZSTD_DCtx *dctx, const uint8_t *src,
                                         size_t n, uint8_t **out,
                                         size_t *outcap, size_t *outlen,
                                         const char **why)
{
	ZSTD_inBuffer in = {src, n, 0};
	size_t ret = 1;

	*outlen = 0;
	ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
	while (ret != 0) {
		ZSTD_outBuffer ob;
		if (*outlen == *outcap) {
			size_t ncap = *outcap ? *outcap * 2 : 1u << 20;
			uint8_t *nb;
			if (*outcap >= VRT_LOAD_FRAME_CAP)
				return VRT_LOAD_ERR_TOO_LARGE;
			if (ncap > VRT_LOAD_FRAME_CAP)
				ncap = VRT_LOAD_FRAME_CAP;
			nb = realloc(*out, ncap);
			if (!nb)
				return VRT_LOAD_ERR_NOMEM;
			*out = nb;
			*outcap = ncap;
		}
		ob.dst = *out;
		ob.size = *outcap;
		ob.pos = *outlen;
		ret = ZSTD_decompressStream(dctx, &ob, &in);
		*outlen = ob.pos;
		if (ZSTD_isError(ret)) {
			*why = ZSTD_getErrorName(ret);
			return VRT_LOAD_ERR_CORRUPT;
		}
		if (ret != 0 && in.pos == in.size && ob.pos < ob.size) {
			*why = "frame ends early";
			return VRT_LOAD_ERR_CORRUPT;
		}
	}
	return VRT_LOAD_OK;
}

/* How far vrt_load_paths got, for t->progress: files done of total, and
 * the compressed bytes decoded so far. */
struct lprog {
	uint64_t done, total, bytes;
};

static void lprog_note(const struct vrt_trace *t, const struct lprog *lp,
                       uint64_t more_bytes)
{
	if (lp)
		vrt_progress_note(t->progress, VRT_PROGRESS_READ, lp->done,
		                  lp->total, lp->bytes + more_bytes);
}

static enum vrt_load_status load_buffer(struct vrt_trace *t, const char *name,
                                        const uint8_t *buf, size_t len,
                                        struct vrt_load_error *err,
                                        const struct lprog *lp)
{
	struct file_state *fs;
	ZSTD_DCtx *dctx = NULL;
	uint8_t *out = NULL;
	size_t outcap = 0, outlen, off = 0, nframes = 0;
	enum vrt_load_status st = VRT_LOAD_OK;
	const char *why = "";
	struct vrt_process *pr;

	fs = calloc(1, sizeof(*fs));
	dctx = ZSTD_createDCtx();
	if (!fs || !dctx) {
		st = fail(err, VRT_LOAD_ERR_NOMEM, name, "decoder");
		goto out;
	}
	fs->t = t;
	fs->name = name;
	fs->err = err;
	fs->first_ev = t->nev;
	if (tables_init(t)) {
		st = fail(err, VRT_LOAD_ERR_NOMEM, name, "tables");
		goto out;
	}
	if (len == 0) {
		st = fail(err, VRT_LOAD_ERR_EMPTY, name, "empty file");
		goto out;
	}
	while (off < len) {
		size_t rem = len - off, fsz;
		const char *cut = NULL;

		if (rem < 4 || memcmp(buf + off, zstd_magic, 4)) {
			/* A prefix of the magic at the very end is a frame cut
			 * right after it began. */
			if (rem < 4 && !memcmp(buf + off, zstd_magic, rem))
				cut = "last zstd frame is incomplete";
			else if (nframes == 0) {
				st = fail(err, VRT_LOAD_ERR_NOT_ZSTD, name,
				          "not a zstd frame at byte %zu", off);
				goto out;
			} else {
				st = fail(err, VRT_LOAD_ERR_CORRUPT, name,
				          "bytes that are not a zstd frame at "
				          "byte %zu",
				          off);
				goto out;
			}
		}
		if (!cut) {
			fsz = ZSTD_findFrameCompressedSize(buf + off, rem);
			if (ZSTD_isError(fsz)) {
				if (ZSTD_getErrorCode(fsz) !=
				    ZSTD_error_srcSize_wrong) {
					st = fail(err, VRT_LOAD_ERR_CORRUPT,
					          name, "at byte %zu: %s", off,
					          ZSTD_getErrorName(fsz));
					goto out;
				}
				cut = "last zstd frame is incomplete";
			}
		}
		if (cut) {
			if (!fs->have_header) {
				st = fail(err, VRT_LOAD_ERR_NO_FRAME, name,
				          "file ends inside its first frame "
				          "(truncated at byte %zu)",
				          off);
				goto out;
			}
			pr = &t->procs[fs->proc];
			pr->truncated = 1;
			pr->trunc_offset = (int64_t)off;
			snprintf(pr->trunc_reason, sizeof(pr->trunc_reason),
			         "%s; decoded the %zu frame%s before it", cut,
			         nframes, nframes == 1 ? "" : "s");
			break;
		}
		st = decode_frame(dctx, buf + off, fsz, &out, &outcap, &outlen,
		                  &why);
		if (st == VRT_LOAD_ERR_CORRUPT) {
			st = fail(err, st, name, "at byte %zu: %s", off, why);
			goto out;
		} else if (st == VRT_LOAD_ERR_TOO_LARGE) {
			st = fail(err, st, name,
			          "frame at byte %zu decodes to more than %u "
			          "MiB",
			          off, VRT_LOAD_FRAME_CAP >> 20);
			goto out;
		} else if (st) {
			st = fail(err, st, name, "frame at byte %zu", off);
			goto out;
		}
		fs->frame_off = off;
		/* Skippable frames and empty frames decode to nothing. */
		if (outlen) {
			st = parse_frame(fs, out, outlen);
			if (st)
				goto out;
		}
		off += fsz;
		nframes++;
		lprog_note(t, lp, off);
	}
	if (!fs->have_header) {
		st = fail(err, VRT_LOAD_ERR_NO_HEADER, name,
		          "no HEADER record in %zu frame%s", nframes,
		          nframes == 1 ? "" : "s");
		goto out;
	}
	pr = &t->procs[fs->proc];
	if (!pr->has_trailer && !pr->truncated) {
		pr->truncated = 1;
		pr->trunc_offset = (int64_t)len;
		snprintf(pr->trunc_reason, sizeof(pr->trunc_reason),
		         "no TRAILER record (the process did not exit "
		         "cleanly)");
	}
	st = resolve_devices(fs);
	if (!st)
		st = resolve_stacks(fs);
out:
	free(out);
	ZSTD_freeDCtx(dctx);
	if (fs) {
		free(fs->fstr);
		free(fs->ffr);
		free(fs->fst);
		free(fs->fph);
	}
	free(fs);
	return st;
}

/* ---- files and directories --------------------------------------------- */

static enum vrt_load_status read_file(const char *path, uint8_t **buf,
                                      size_t *len, struct vrt_load_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	size_t cap, n = 0;
	uint8_t *b = NULL;
	enum vrt_load_status s = VRT_LOAD_OK;

	if (fd < 0)
		return fail(err, VRT_LOAD_ERR_IO, path, "%s", strerror(errno));
	if (fstat(fd, &st) < 0) {
		s = fail(err, VRT_LOAD_ERR_IO, path, "%s", strerror(errno));
		goto out;
	}
	/* st_size is a hint only: the file may still be growing. */
	cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	b = malloc(cap);
	if (!b) {
		s = fail(err, VRT_LOAD_ERR_NOMEM, path, "file of %zu bytes",
		         cap);
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (n == cap) {
			uint8_t *nb =
			        cap < SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
			if (!nb) {
				s = fail(err, VRT_LOAD_ERR_NOMEM, path,
				         "file too large");
				goto out;
			}
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			s = fail(err, VRT_LOAD_ERR_IO, path, "%s",
			         strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
out:
	close(fd);
	if (s) {
		free(b);
		return s;
	}
	*buf = b;
	*len = n;
	return VRT_LOAD_OK;
}

enum vrt_load_status vrt_load_text(const char *path, char **text, size_t *len,
                                   struct vrt_load_error *err)
{
	uint8_t *b = NULL;
	size_t n = 0;
	enum vrt_load_status s = read_file(path, &b, &n, err);
	char *nb;

	if (s)
		return s;
	nb = realloc(b, n + 1);
	if (!nb) {
		free(b);
		return fail(err, VRT_LOAD_ERR_NOMEM, path, "file of %zu bytes",
		            n);
	}
	nb[n] = '\0';
	*text = nb;
	*len = n;
	return VRT_LOAD_OK;
}

/* Reads "<dir>/<pid>.exit" (written by vramtrace record) if present. */
static void read_exit_file(struct vrt_process *pr)
{
	char path[4200], line[64];
	const char *slash = strrchr(pr->path, '/');
	int dirlen = slash ? (int)(slash - pr->path) : 1;
	FILE *f;
	int code;

	snprintf(path, sizeof(path), "%.*s/%" PRIu64 ".exit", dirlen,
	         slash ? pr->path : ".", pr->pid);
	f = fopen(path, "re");
	if (!f)
		return; /* absent: the exit status stays unknown */
	if (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "exit %d", &code) == 1 && code >= 0) {
			pr->exit_kind = VRT_EXIT_CODE;
			pr->exit_code = code;
		} else if (sscanf(line, "signal %d", &code) == 1 && code > 0) {
			pr->exit_kind = VRT_EXIT_SIGNAL;
			pr->exit_code = code;
		}
	}
	fclose(f);
}

enum vrt_load_status vrt_load_buffer(struct vrt_trace *t, const char *name,
                                     const uint8_t *buf, size_t len,
                                     struct vrt_load_error *err)
{
	return load_buffer(t, name, buf, len, err, NULL);
}

static enum vrt_load_status load_file(struct vrt_trace *t, const char *path,
                                      struct vrt_load_error *err,
                                      struct lprog *lp)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	enum vrt_load_status s = read_file(path, &buf, &len, err);

	if (s)
		return s;
	s = load_buffer(t, path, buf, len, err, lp);
	if (lp) {
		lp->done++;
		lp->bytes += len;
		lprog_note(t, lp, 0);
	}
	free(buf);
	if (!s)
		read_exit_file(&t->procs[t->nprocs - 1]);
	return s;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n > m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum vrt_load_status load_dir(struct vrt_trace *t, const char *path,
                                     struct vrt_load_error *err,
                                     struct lprog *lp)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0, cap = 0, i;
	enum vrt_load_status s = VRT_LOAD_OK;

	if (!d)
		return fail(err, VRT_LOAD_ERR_IO, path, "%s", strerror(errno));
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, VRT_TRACE_SUFFIX))
			continue;
		if (grow((void **)&names, &cap, n + 1, sizeof(*names))) {
			s = fail(err, VRT_LOAD_ERR_NOMEM, path, "listing");
			goto out;
		}
		if (asprintf(&names[n], "%s%s%s", path,
		             has_suffix(path, "/") ? "" : "/",
		             de->d_name) < 0) {
			s = fail(err, VRT_LOAD_ERR_NOMEM, path, "listing");
			goto out;
		}
		n++;
	}
	if (n == 0) {
		s = fail(err, VRT_LOAD_ERR_NO_TRACES, path,
		         "no *%s files in this directory", VRT_TRACE_SUFFIX);
		goto out;
	}
	/* Name order, so reports do not depend on readdir order. */
	qsort(names, n, sizeof(*names), cmp_str);
	size_t loaded = 0, procs_before = t->nprocs;
	struct vrt_load_error first = {0};
	for (i = 0; i < n && !s; i++) {
		s = load_file(t, names[i], err, lp);
		if (s == VRT_LOAD_ERR_EMPTY || s == VRT_LOAD_ERR_NO_FRAME) {
			/* A process that died before its first flush: nothing
			 * of it can be read, the rest of the run can. */
			char *note;
			if (!first.status)
				first = *err;
			if (asprintf(&note, "%s: %s", err->path, err->msg) <
			            0 ||
			    grow((void **)&t->skipped, &t->cap_skipped,
			         t->nskipped + 1, sizeof(*t->skipped))) {
				s = fail(err, VRT_LOAD_ERR_NOMEM, path,
				         "listing");
				goto out;
			}
			t->skipped[t->nskipped++] = note;
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
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return s;
}

/* ---- ordering ----------------------------------------------------------- */

/* Bottom-up merge sort: stable, O(n log n), one scratch array. */
static int sort_events(struct vrt_event *ev, size_t n)
{
	struct vrt_event *tmp, *src = ev, *dst;
	size_t width, i;

	if (n < 2)
		return 0;
	tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -1;
	dst = tmp;
	for (width = 1; width < n; width *= 2) {
		for (i = 0; i < n; i += 2 * width) {
			size_t lo = i, mid = i + width, hi = i + 2 * width;
			size_t a, b, k = lo;
			if (mid > n)
				mid = n;
			if (hi > n)
				hi = n;
			a = lo;
			b = mid;
			while (a < mid && b < hi)
				dst[k++] = src[b].ts < src[a].ts ? src[b++]
				                                 : src[a++];
			while (a < mid)
				dst[k++] = src[a++];
			while (b < hi)
				dst[k++] = src[b++];
		}
		struct vrt_event *sw = src;
		src = dst;
		dst = sw;
	}
	if (src != ev)
		memcpy(ev, src, n * sizeof(*ev));
	free(tmp);
	return 0;
}

static int cmp_dev(const struct vrt_device *a, const struct vrt_device *b)
{
	if (a->host_idx != b->host_idx)
		return a->host_idx < b->host_idx ? -1 : 1;
	if (a->vendor != b->vendor) /* CUDA's devices, then HIP's */
		return a->vendor < b->vendor ? -1 : 1;
	if (a->ordinal != b->ordinal)
		return a->ordinal < b->ordinal ? -1 : 1;
	return strcmp(a->uuid, b->uuid);
}

static enum vrt_load_status sort_devices(struct vrt_trace *t)
{
	size_t n = t->ndevices, i, j;
	int32_t *order, *rank;
	struct vrt_device *nd;

	if (n < 2)
		return VRT_LOAD_OK;
	order = malloc(n * sizeof(*order));
	rank = malloc(n * sizeof(*rank));
	nd = malloc(n * sizeof(*nd));
	if (!order || !rank || !nd) {
		free(order);
		free(rank);
		free(nd);
		return VRT_LOAD_ERR_NOMEM;
	}
	/* Insertion sort: device tables are tiny. */
	for (i = 0; i < n; i++) {
		order[i] = (int32_t)i;
		for (j = i; j > 0 && cmp_dev(&t->devices[order[j - 1]],
		                             &t->devices[order[j]]) > 0;
		     j--) {
			int32_t x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	}
	for (i = 0; i < n; i++) {
		nd[i] = t->devices[order[i]];
		rank[order[i]] = (int32_t)i;
	}
	memcpy(t->devices, nd, n * sizeof(*nd));
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].device >= 0)
			t->ev[i].device = rank[t->ev[i].device];
	free(order);
	free(rank);
	free(nd);
	return VRT_LOAD_OK;
}

static int64_t sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
}

/*
 * Several hosts: monotonic clocks of different machines are unrelated, so
 * each host's times are moved onto the first host's monotonic clock through
 * wall time (start_wall_ns - start_mono_ns of the host's first process).
 * One host: nothing moves, so NTP steps cannot disturb a single-host run.
 */
static enum vrt_load_status align_clocks(struct vrt_trace *t)
{
	size_t i;
	unsigned h;
	int64_t ref = 0;

	free(t->host_shift);
	t->host_shift = calloc(t->nhosts ? t->nhosts : 1, sizeof(int64_t));
	if (!t->host_shift)
		return VRT_LOAD_ERR_NOMEM;
	if (t->nhosts < 2)
		return VRT_LOAD_OK;
	for (h = 0; h < t->nhosts; h++) {
		for (i = 0; i < t->nprocs; i++) {
			struct vrt_process *p = &t->procs[i];
			if (!strcmp(p->host, t->hosts[h])) {
				int64_t off =
				        p->start_wall_ns - p->start_mono_ns;
				if (h == 0)
					ref = off;
				t->host_shift[h] = off - ref;
				break;
			}
		}
	}
	for (i = 0; i < t->nprocs; i++) {
		struct vrt_process *p = &t->procs[i];
		for (h = 0; h < t->nhosts; h++)
			if (!strcmp(p->host, t->hosts[h]))
				break;
		int64_t sh = h < t->nhosts ? t->host_shift[h] : 0;
		p->start_mono_ns = sat_add(p->start_mono_ns, sh);
		p->end_mono_ns = sat_add(p->end_mono_ns, sh);
	}
	for (i = 0; i < t->nev; i++) {
		const char *host = t->procs[t->ev[i].proc].host;
		for (h = 0; h < t->nhosts; h++)
			if (!strcmp(host, t->hosts[h]))
				break;
		if (h < t->nhosts)
			t->ev[i].ts = sat_add(t->ev[i].ts, t->host_shift[h]);
	}
	return VRT_LOAD_OK;
}

enum vrt_load_status vrt_load_finish(struct vrt_trace *t)
{
	size_t i;
	unsigned h;

	/* Hosts of processes that never named a device. */
	for (i = 0; i < t->nprocs; i++)
		if (host_index(t, t->procs[i].host, &h))
			return VRT_LOAD_ERR_NOMEM;
	if (align_clocks(t) || sort_devices(t) || sort_events(t->ev, t->nev) ||
	    order_samples(t))
		return VRT_LOAD_ERR_NOMEM;
	t->start_ns = t->end_ns = 0;
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		if (i == 0 || p->start_mono_ns < t->start_ns)
			t->start_ns = p->start_mono_ns;
		if (i == 0 || p->start_mono_ns > t->end_ns)
			t->end_ns = p->start_mono_ns;
		if (p->has_trailer && p->end_mono_ns > t->end_ns)
			t->end_ns = p->end_mono_ns;
	}
	if (t->nev && t->ev[t->nev - 1].ts > t->end_ns)
		t->end_ns = t->ev[t->nev - 1].ts;
	return VRT_LOAD_OK;
}

/* The trace files paths name, counted for the progress line only: a
 * directory that cannot be read counts nothing (loading reports it). */
static uint64_t count_files(char *const *paths, size_t npaths)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < npaths; i++) {
		DIR *d = opendir(paths[i]);
		struct dirent *de;
		if (!d) {
			n++;
			continue;
		}
		while ((de = readdir(d)))
			n += has_suffix(de->d_name, VRT_TRACE_SUFFIX);
		closedir(d);
	}
	return n;
}

enum vrt_load_status vrt_load_paths(struct vrt_trace *t, char *const *paths,
                                    size_t npaths, struct vrt_load_error *err)
{
	size_t i;
	enum vrt_load_status s = VRT_LOAD_OK;
	struct lprog prog = {0, 0, 0}, *lp = NULL;

	if (t->progress) {
		prog.total = count_files(paths, npaths);
		lp = &prog;
	}
	for (i = 0; i < npaths && !s; i++) {
		struct stat st;
		if (stat(paths[i], &st) < 0)
			s = fail(err, VRT_LOAD_ERR_IO, paths[i], "%s",
			         strerror(errno));
		else if (S_ISDIR(st.st_mode))
			s = load_dir(t, paths[i], err, lp);
		else
			s = load_file(t, paths[i], err, lp);
	}
	if (!s)
		vrt_progress_note(t->progress, VRT_PROGRESS_SORT, 0, t->nev, 0);
	if (!s && vrt_load_finish(t))
		s = fail(err, VRT_LOAD_ERR_NOMEM, paths[0], "sorting events");
	return s;
}

void vrt_load_free(struct vrt_trace *t)
{
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
	for (i = 1; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->frames);
	free(t->stacks);
	for (i = 0; i < t->nphases; i++)
		free(t->phases[i]);
	if (t->intern) {
		struct intern *in = t->intern;
		free(in->strs.s);
		free(in->frames.s);
		free(in->stacks.s);
		free(in);
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
	free(t->procs);
	free(t->devices);
	free(t->ev);
	free(t->fails);
	memset(t, 0, sizeof(*t));
}
