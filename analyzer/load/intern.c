/*
 * intern.c — the tables shared by the files of one load (intern.h):
 * strings, frames and stacks found by value, phase names, hosts, and which
 * device a process means by an ordinal or a UUID.
 *
 * The same call path recorded by two processes is one stack: frames are
 * keyed by their names (python: file, function, line; native: module,
 * symbol, offset, and the address only when the symbol is unknown) and a
 * stack by (parent, frame), so stacks form one trie whatever file declared
 * them. A device is one card of the run: its UUID names it across
 * processes and hosts; without one, (host, vendor, ordinal) does. The
 * first DEVICE record to describe a card names it; a later one that
 * disagrees is kept as a conflict line for the report, never silently.
 *
 * Called by load.c while it reads records (never per event of the bulk:
 * the hot decoder resolves through its own per-file caches and comes here
 * only for what they miss). Single-threaded, no globals; t->intern holds
 * the hash tables (intern.h).
 */
#include "intern.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "vramtrace/trace_format.h"

static uint64_t hash_bytes(const char *p)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*p)
		h = (h ^ (uint8_t)*p++) * 0x100000001b3ull;
	return vrt_intern_mix64(h);
}

static int itab_grow(struct vrt_intern_tab *it)
{
	size_t ncap = it->cap ? it->cap * 2 : 256, i;
	struct vrt_intern_slot *ns = calloc(ncap, sizeof(*ns));

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
static size_t itab_find(const struct vrt_intern_tab *it, uint64_t h,
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
static int itab_reserve(struct vrt_intern_tab *it)
{
	if ((it->n + 1) * 10 > it->cap * 7)
		return itab_grow(it);
	return 0;
}

static void itab_set(struct vrt_intern_tab *it, size_t slot, uint64_t h,
                     uint32_t v)
{
	it->s[slot].h = h;
	it->s[slot].v = v + 1;
	it->n++;
}

/* The index of the entry of hash h that eq() accepts; else -1, with *slot
 * the empty slot for a new entry and room made for it both in it and in
 * the table it indexes (*arr, n elements of sz bytes, *cap of room); -2
 * when out of memory. */
static int64_t itab_lookup(struct vrt_intern_tab *it, uint64_t h,
                           int (*eq)(const void *ctx, uint32_t v),
                           const void *ctx, size_t *slot, void **arr,
                           size_t *cap, size_t n, size_t sz)
{
	if (itab_reserve(it))
		return -2;
	*slot = itab_find(it, h, eq, ctx);
	if (it->s[*slot].v)
		return it->s[*slot].v - 1;
	if (n >= UINT32_MAX - 1 || vrt_array_grow(arr, cap, n + 1, sz))
		return -2;
	return -1;
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

uint32_t vrt_intern_str(struct vrt_trace *t, const char *s, int *oom)
{
	struct vrt_intern *in = t->intern;
	struct str_key k = {t, s};
	uint64_t h = hash_bytes(s);
	size_t slot;
	int64_t v = itab_lookup(&in->strs, h, str_eq, &k, &slot,
	                        (void **)&t->strs, &t->cap_strs, t->nstrs,
	                        sizeof(*t->strs));
	char *d;

	if (v >= 0)
		return (uint32_t)v;
	if (v < -1 || !(d = strdup(s)))
		goto nomem;
	t->strs[t->nstrs] = d;
	itab_set(&in->strs, slot, h, (uint32_t)t->nstrs);
	return (uint32_t)t->nstrs++;
nomem:
	*oom = 1;
	return 0;
}

uint32_t vrt_intern_bytes(struct vrt_trace *t, const uint8_t *p, size_t n,
                          int *oom)
{
	char *s = strndup((const char *)p, n);
	uint32_t v;

	if (!s) {
		*oom = 1;
		return 0;
	}
	v = vrt_intern_str(t, s, oom);
	free(s);
	return v;
}

static uint64_t frame_hash(const struct vrt_frame *f)
{
	uint64_t h = vrt_intern_mix64(f->kind + 0x9e3779b97f4a7c15ull);
	h = vrt_intern_mix64(h ^ f->function);
	h = vrt_intern_mix64(h ^ ((uint64_t)f->file << 1));
	h = vrt_intern_mix64(h ^ f->line);
	h = vrt_intern_mix64(h ^ f->offset);
	return vrt_intern_mix64(h ^ f->ip);
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

uint32_t vrt_intern_frame(struct vrt_trace *t, const struct vrt_frame *f,
                          int *oom)
{
	struct vrt_intern *in = t->intern;
	struct frame_key k = {t, f};
	uint64_t h = frame_hash(f);
	size_t slot;
	int64_t v = itab_lookup(&in->frames, h, frame_eq, &k, &slot,
	                        (void **)&t->frames, &t->cap_frames, t->nframes,
	                        sizeof(*t->frames));

	if (v >= 0)
		return (uint32_t)v;
	if (v < -1) {
		*oom = 1;
		return 0;
	}
	t->frames[t->nframes] = *f;
	itab_set(&in->frames, slot, h, (uint32_t)t->nframes);
	return (uint32_t)t->nframes++;
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

uint32_t vrt_intern_stack(struct vrt_trace *t, uint32_t parent, uint32_t frame,
                          int *oom)
{
	struct vrt_intern *in = t->intern;
	struct stack_key k = {t, parent, frame};
	uint64_t h = vrt_intern_mix64(((uint64_t)parent << 32 | frame) ^
	                              0x5bd1e995ull);
	size_t slot;
	int64_t v = itab_lookup(&in->stacks, h, stack_eq, &k, &slot,
	                        (void **)&t->stacks, &t->cap_stacks, t->nstacks,
	                        sizeof(*t->stacks));
	struct vrt_stack *st;

	if (v >= 0)
		return (uint32_t)v;
	if (v < -1) {
		*oom = 1;
		return 0;
	}
	st = &t->stacks[t->nstacks];
	st->parent = parent;
	st->frame = frame;
	st->depth = t->stacks[parent].depth + 1;
	itab_set(&in->stacks, slot, h, (uint32_t)t->nstacks);
	return (uint32_t)t->nstacks++;
}

/* The fixed names: 0..VRT_PHASE_BUILTIN_MAX, the inferred kv_cache and
 * what an attach found held. */
static int phases_init(struct vrt_trace *t)
{
	unsigned i;

	for (i = (unsigned)t->nphases; i <= VRT_LOAD_PHASE_BEFORE_ATTACH; i++) {
		const char *n = i == VRT_LOAD_PHASE_INFERRED_KV
		                        ? VRT_LOAD_PHASE_INFERRED_KV_NAME
		                : i == VRT_LOAD_PHASE_BEFORE_ATTACH
		                        ? VRT_BEFORE_ATTACH_PHASE
		                        : vrt_phase_builtin_name(i);
		t->phases[i] = strdup(n ? n : "reserved");
		if (!t->phases[i])
			return -1;
		t->nphases = i + 1;
	}
	return 0;
}

int vrt_intern_phase(struct vrt_trace *t, const char *name)
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

int vrt_intern_init(struct vrt_trace *t)
{
	if (t->nstrs)
		return 0;
	if (vrt_array_grow((void **)&t->strs, &t->cap_strs, 1,
	                   sizeof(*t->strs)) ||
	    vrt_array_grow((void **)&t->frames, &t->cap_frames, 1,
	                   sizeof(*t->frames)) ||
	    vrt_array_grow((void **)&t->stacks, &t->cap_stacks, 1,
	                   sizeof(*t->stacks)))
		return -1;
	t->strs[0] = NULL;
	t->nstrs = 1;
	memset(&t->frames[0], 0, sizeof(t->frames[0]));
	t->nframes = 1;
	memset(&t->stacks[0], 0, sizeof(t->stacks[0]));
	t->nstacks = 1;
	return phases_init(t);
}

int vrt_intern_host(struct vrt_trace *t, const char *host, unsigned *idx)
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

unsigned vrt_intern_host_find(const struct vrt_trace *t, const char *host)
{
	unsigned h;

	for (h = 0; h < t->nhosts; h++)
		if (!strcmp(host, t->hosts[h]))
			break;
	return h;
}

void vrt_intern_format_uuid(char *out, size_t outsz, int vendor,
                            const uint8_t *u, size_t n)
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

int32_t vrt_intern_device(struct vrt_trace *t, const char *host, int vendor,
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
	if (vrt_intern_host(t, host, &hidx))
		return -1;
	if (vrt_array_grow((void **)&t->devices, &t->cap_devices,
	                   t->ndevices + 1, sizeof(*t->devices)))
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

int vrt_intern_device_name(struct vrt_trace *t, int32_t g,
                           const struct vrt_process *pr, int vendor,
                           uint64_t total, const uint8_t *name, size_t nname)
{
	struct vrt_device *d = &t->devices[g];

	if (!d->name) {
		d->name = strndup((const char *)name, nname);
		if (!d->name)
			return -1;
		d->vendor = vendor;
		d->total_bytes = total;
		d->have_total = 1;
		d->pid = pr->pid;
	} else if (!d->conflict[0] &&
	           ((total && d->total_bytes && total != d->total_bytes) ||
	            (nname && d->name[0] &&
	             (nname != strlen(d->name) ||
	              memcmp(name, d->name, nname))) ||
	            (pr->host && strcmp(pr->host, d->host)))) {
		/* One UUID, two cards: the same card cannot have two names,
		 * two capacities or two hosts. */
		snprintf(d->conflict, sizeof(d->conflict),
		         "PID %" PRIu64 " on %.40s names it '%.*s' of %" PRIu64
		         " bytes; PID %" PRIu64 " on %.40s named it '%.40s' of "
		         "%" PRIu64 " bytes",
		         pr->pid, pr->host, (int)(nname < 40 ? nname : 40),
		         (const char *)name, total, d->pid, d->host, d->name,
		         d->total_bytes);
	}
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

int vrt_intern_sort_devices(struct vrt_trace *t)
{
	size_t n = t->ndevices, i, j;
	uint32_t *order, *rank;
	struct vrt_device *nd;
	int moved = 0;

	if (n < 2)
		return 0;
	order = malloc(n * sizeof(*order));
	rank = malloc(n * sizeof(*rank));
	nd = malloc(n * sizeof(*nd));
	if (!order || !rank || !nd) {
		free(order);
		free(rank);
		free(nd);
		return -1;
	}
	/* Insertion sort: device tables are tiny. */
	for (i = 0; i < n; i++) {
		order[i] = (uint32_t)i;
		for (j = i; j > 0 && cmp_dev(&t->devices[order[j - 1]],
		                             &t->devices[order[j]]) > 0;
		     j--) {
			uint32_t x = order[j];
			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	}
	for (i = 0; i < n; i++) {
		nd[i] = t->devices[order[i]];
		rank[order[i]] = (uint32_t)i;
		moved |= order[i] != i;
	}
	memcpy(t->devices, nd, n * sizeof(*nd));
	free(order);
	free(nd);
	if (!moved) {
		free(rank);
		return 0;
	}
	t->device_remap = rank;
	return 0;
}

void vrt_intern_free(struct vrt_trace *t)
{
	struct vrt_intern *in = t->intern;
	size_t i;

	for (i = 1; i < t->nstrs; i++)
		free(t->strs[i]);
	free(t->strs);
	free(t->frames);
	free(t->stacks);
	for (i = 0; i < t->nphases; i++)
		free(t->phases[i]);
	if (in) {
		free(in->strs.s);
		free(in->frames.s);
		free(in->stacks.s);
	}
}
