/*
 * replay.c — turns the ordered event stream into budgets: live and peak
 * bytes per device, family and phase, reserved address space, host pinned
 * memory, and the list of failed calls. Pure: no I/O, no printing.
 *
 * Live allocations are kept in one open-addressing hash table (linear
 * probing, backward-shift deletion, so no tombstones) keyed by
 * (process, address space, address) and sized by the live set, never by
 * the event count. Values are indexes into a pool of objects, so a VMM
 * mapping can refer to its handle while the table moves entries around.
 *
 * Address spaces follow trace_format.h: device/async/managed pointers share
 * one space; pinned, registered, reserved VA, VMM handles each have their
 * own; VMM mappings (address -> handle) are a sixth. A VMM handle's bytes
 * stay charged until it is released AND all its mappings are unmapped,
 * whichever comes last.
 *
 * Requests in flight are two more key spaces of the same table (accepted
 * connections by fd, annotated requests by id). The allocation sites live
 * at a device's peak need the live set at that moment, which is only known
 * once the peak is: a second pass replays the events again and takes the
 * live objects of each device right after the event of its peak.
 *
 * Timelines (first pass only) are bounded: the run is cut into
 * VRT_REPLAY_SERIES_BUCKETS equal time buckets; within one, a device keeps
 * its highest point (copied when a change exceeds it) and, when it changed
 * after that, its state at the bucket's end (read from the live counters
 * when the first event of a later bucket arrives, before it applies).
 */
#include "replay.h"

#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum space {
	SP_PTR = 0, /* device, async, managed */
	SP_PINNED = 1,
	SP_REG = 2,
	SP_VA = 3,
	SP_HANDLE = 4, /* VMM handles */
	SP_MAP = 5,    /* VMM mappings: address -> handle */
	SP_CONN = 6,   /* accepted connections: fd -> nothing */
	SP_REQ = 7,    /* annotated requests: id -> nothing */
};

#define NONE UINT32_MAX

enum obj_kind { OBJ_ALLOC = 0, OBJ_HANDLE = 1, OBJ_MAPPING = 2 };

struct obj {
	uint64_t size;
	int32_t device;
	uint32_t slot;   /* phase slot */
	uint32_t refs;   /* handle: live mappings */
	uint32_t handle; /* mapping: object of its handle, or NONE */
	uint32_t next;   /* free list */
	uint32_t stack;  /* the allocating call's stack */
	uint8_t family;
	uint8_t kind;
	uint8_t released; /* handle: cuMemRelease seen */
	uint8_t charged;  /* its bytes count in a device's tracked bytes */
};

struct slot {
	uint64_t addr;
	uint32_t proc;
	uint32_t obj; /* NONE: empty slot */
	uint8_t space;
};

struct state {
	struct vrt_replay *r;
	const struct vrt_trace *t;
	struct slot *tab;
	size_t cap, used; /* cap is a power of two */
	struct obj *objs;
	size_t nobjs, capobjs;
	uint32_t free_obj;
	size_t nmappings;
	size_t cur;             /* index of the event being replayed */
	uint8_t *uses_requests; /* per process: REQUEST events exist */
	/* timelines: NULL acc in the second pass (no timelines) */
	struct series_acc *acc; /* per device */
	struct series_acc *inflight_acc;
	int64_t series_start, series_width, bucket;
	int series_oom;
};

/* The bucket of a timeline being built: its highest point (max; for
 * requests, max.total holds the count) and whether it changed after it. */
struct series_acc {
	int active; /* changed in this bucket */
	int after_max;
	int64_t last_ts;
	struct vrt_replay_point max;
};

/* ---- names --------------------------------------------------------------- */

static const char *const family_names[VRT_FAM_COUNT] = {
        "device", "async",      "vmm", "managed",
        "pinned", "registered", "va",  "none",
};

const char *vrt_replay_family_name(int family)
{
	if (family < 0 || family >= VRT_FAM_COUNT)
		return NULL;
	return family_names[family];
}

int vrt_replay_family_is_vram(int family)
{
	return family == VRT_FAM_DEVICE || family == VRT_FAM_ASYNC ||
	       family == VRT_FAM_VMM || family == VRT_FAM_MANAGED;
}

unsigned vrt_replay_phase_slot(uint32_t phase)
{
	return phase < VRT_REPLAY_MAX_PHASES ? phase : 0;
}

struct err_name {
	int64_t code;
	const char *cuda, *hip;
};

static const struct err_name err_names[] = {
        {1, "CUDA_ERROR_INVALID_VALUE", "hipErrorInvalidValue"},
        {2, "CUDA_ERROR_OUT_OF_MEMORY", "hipErrorOutOfMemory"},
        {3, "CUDA_ERROR_NOT_INITIALIZED", "hipErrorNotInitialized"},
        {4, "CUDA_ERROR_DEINITIALIZED", "hipErrorDeinitialized"},
        {100, "CUDA_ERROR_NO_DEVICE", "hipErrorNoDevice"},
        {101, "CUDA_ERROR_INVALID_DEVICE", "hipErrorInvalidDevice"},
        {201, "CUDA_ERROR_INVALID_CONTEXT", "hipErrorInvalidContext"},
        {400, "CUDA_ERROR_INVALID_HANDLE", "hipErrorInvalidHandle"},
        {500, "CUDA_ERROR_NOT_FOUND", "hipErrorNotFound"},
        {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
         "hipErrorHostMemoryAlreadyRegistered"},
        {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
         "hipErrorHostMemoryNotRegistered"},
        {801, "CUDA_ERROR_NOT_SUPPORTED", "hipErrorNotSupported"},
        {999, "CUDA_ERROR_UNKNOWN", "hipErrorUnknown"},
};

const char *vrt_replay_error_name(unsigned api, int64_t code, char *buf,
                                  size_t bufsz)
{
	size_t i;
	int hip = vrt_api_vendor(api) == VRT_VENDOR_HIP;

	for (i = 0; i < sizeof(err_names) / sizeof(err_names[0]); i++)
		if (err_names[i].code == code)
			return hip ? err_names[i].hip : err_names[i].cuda;
	snprintf(buf, bufsz, "error %" PRId64, code);
	return buf;
}

/* ---- the live table --------------------------------------------------- */

static uint64_t hash_key(uint32_t proc, uint8_t space, uint64_t addr)
{
	uint64_t x = addr ^ ((uint64_t)proc << 32) ^ ((uint64_t)space << 58);
	/* splitmix64 finalizer: addresses share their low and high bits. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static int table_grow(struct state *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024, i;
	struct slot *nt = malloc(ncap * sizeof(*nt));

	if (!nt)
		return -1;
	for (i = 0; i < ncap; i++)
		nt[i].obj = NONE;
	for (i = 0; i < s->cap; i++) {
		struct slot *o = &s->tab[i];
		size_t j;
		if (o->obj == NONE)
			continue;
		j = hash_key(o->proc, o->space, o->addr) & (ncap - 1);
		while (nt[j].obj != NONE)
			j = (j + 1) & (ncap - 1);
		nt[j] = *o;
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	return 0;
}

/* Index of the slot holding the key, or of the empty slot ending its
 * probe sequence. Requires cap > used. */
static size_t table_find(const struct state *s, uint32_t proc, uint8_t space,
                         uint64_t addr)
{
	size_t i = hash_key(proc, space, addr) & (s->cap - 1);

	while (s->tab[i].obj != NONE) {
		const struct slot *e = &s->tab[i];
		if (e->addr == addr && e->proc == proc && e->space == space)
			return i;
		i = (i + 1) & (s->cap - 1);
	}
	return i;
}

static uint32_t table_get(const struct state *s, uint32_t proc, uint8_t space,
                          uint64_t addr)
{
	if (!s->cap)
		return NONE;
	return s->tab[table_find(s, proc, space, addr)].obj;
}

/* Sets key -> obj and stores the object it replaced (or NONE) in *old.
 * Returns 0, or -1 when out of memory. */
static int table_put(struct state *s, uint32_t proc, uint8_t space,
                     uint64_t addr, uint32_t obj, uint32_t *old)
{
	size_t i;

	if ((s->used + 1) * 10 > s->cap * 7 && table_grow(s))
		return -1;
	i = table_find(s, proc, space, addr);
	*old = s->tab[i].obj;
	if (*old == NONE)
		s->used++;
	s->tab[i].addr = addr;
	s->tab[i].proc = proc;
	s->tab[i].space = space;
	s->tab[i].obj = obj;
	return 0;
}

/* Removes the entry at slot i, shifting later entries of its cluster back
 * so lookups never stop at a hole. */
static void table_remove_at(struct state *s, size_t i)
{
	size_t mask = s->cap - 1, j = i;

	s->tab[i].obj = NONE;
	s->used--;
	for (;;) {
		size_t home;
		j = (j + 1) & mask;
		if (s->tab[j].obj == NONE)
			return;
		home = hash_key(s->tab[j].proc, s->tab[j].space,
		                s->tab[j].addr) &
		       mask;
		/* Move j into the hole i unless its home lies in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			s->tab[i] = s->tab[j];
			s->tab[j].obj = NONE;
			i = j;
		}
	}
}

/* Removes a key; returns its object or NONE. */
static uint32_t table_take(struct state *s, uint32_t proc, uint8_t space,
                           uint64_t addr)
{
	size_t i;
	uint32_t o;

	if (!s->cap)
		return NONE;
	i = table_find(s, proc, space, addr);
	o = s->tab[i].obj;
	if (o != NONE)
		table_remove_at(s, i);
	return o;
}

static uint32_t obj_new(struct state *s)
{
	uint32_t o;

	if (s->free_obj != NONE) {
		o = s->free_obj;
		s->free_obj = s->objs[o].next;
	} else {
		if (s->nobjs == s->capobjs) {
			size_t nc = s->capobjs ? s->capobjs * 2 : 1024;
			struct obj *no;
			if (nc >= NONE)
				return NONE;
			no = realloc(s->objs, nc * sizeof(*no));
			if (!no)
				return NONE;
			s->objs = no;
			s->capobjs = nc;
		}
		o = (uint32_t)s->nobjs++;
	}
	memset(&s->objs[o], 0, sizeof(s->objs[o]));
	s->objs[o].handle = NONE;
	return o;
}

static void obj_free(struct state *s, uint32_t o)
{
	s->objs[o].next = s->free_obj;
	s->free_obj = o;
}

/* ---- accounting ------------------------------------------------------- */

static void counters_add(struct vrt_counters *c, uint64_t bytes, int64_t ts)
{
	c->live_bytes += bytes;
	if (c->live_bytes > c->peak_bytes) {
		c->peak_bytes = c->live_bytes;
		c->peak_ts = ts;
	}
}

static void counters_sub(struct vrt_counters *c, uint64_t bytes)
{
	/* Cannot underflow for bytes we charged; clamp anyway. */
	c->live_bytes = c->live_bytes >= bytes ? c->live_bytes - bytes : 0;
}

static int is_host_family(int fam)
{
	return fam == VRT_FAM_PINNED || fam == VRT_FAM_REGISTERED;
}

/* While exactly one request is in flight, its forward bytes on device i
 * are a candidate for the single-request peak. */
static void sample_single(struct state *s, size_t i, int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint64_t b = r->dev[i].phase[VRT_PHASE_forward].live_bytes;

	if (r->inflight != 1)
		return;
	if (!r->have_single_request || b > r->single_request_peak_bytes) {
		r->have_single_request = 1;
		r->single_request_peak_bytes = b;
		r->single_request_peak_device = (int32_t)i;
		r->single_request_peak_ts = ts;
	}
}

/* Windows (see on_mark): r->windows[r->nwindows - 1] is open. */
/* Raises the open window's peaks of device dev to its live counters. */
static void window_note(struct state *s, int32_t dev)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_window_device *w;
	const struct vrt_replay_device *d;
	unsigned k;

	if (!r->nwindows || dev < 0 || (size_t)dev >= r->ndevices)
		return;
	d = &r->dev[dev];
	w = &r->windows[r->nwindows - 1].dev[dev];
	if (d->tracked_bytes > w->peak_bytes)
		w->peak_bytes = d->tracked_bytes;
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (d->phase[k].live_bytes > w->peak_by_phase[k])
			w->peak_by_phase[k] = d->phase[k].live_bytes;
}

/* ---- timelines ---------------------------------------------------------- */

/* Appends one element of sz bytes to *v (n elements), growing by doubling;
 * -1 when out of memory. */
static int push(void **v, size_t *n, const void *x, size_t sz)
{
	if (*n == 0 || (*n >= 16 && !(*n & (*n - 1)))) {
		void *nv = realloc(*v, (*n ? *n * 2 : 16) * sz);
		if (!nv)
			return -1;
		*v = nv;
	}
	memcpy((char *)*v + *n * sz, x, sz);
	(*n)++;
	return 0;
}

static void point_now(const struct vrt_replay_device *d, int64_t ts,
                      struct vrt_replay_point *p)
{
	unsigned k;

	p->ts = ts;
	p->total = d->tracked_bytes;
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		p->by_phase[k] = d->phase[k].live_bytes;
}

/* Device dev's tracked bytes changed at ts (the live counters hold the
 * new state). */
static void series_note(struct state *s, int32_t dev, int64_t ts)
{
	struct series_acc *a;
	const struct vrt_replay_device *d = &s->r->dev[dev];

	if (!s->acc)
		return;
	a = &s->acc[dev];
	if (!a->active || d->tracked_bytes > a->max.total) {
		point_now(d, ts, &a->max);
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
}

static void inflight_note(struct state *s, int64_t ts)
{
	struct series_acc *a = s->inflight_acc;

	if (!a)
		return;
	if (!a->active || s->r->inflight > a->max.total) {
		a->max.ts = ts;
		a->max.total = s->r->inflight;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
}

/* Ends the current bucket: its points go to the timelines. Called before
 * the first event of a later bucket applies, so the live counters still
 * hold each timeline's state at the end of the bucket. */
static void series_flush(struct state *s)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_point p;
	struct vrt_replay_inflight q;
	size_t i;

	for (i = 0; i < r->ndevices; i++) {
		struct series_acc *a = &s->acc[i];
		struct vrt_replay_device *d = &r->dev[i];
		if (!a->active)
			continue;
		a->active = 0;
		if (push((void **)&d->series, &d->nseries, &a->max,
		         sizeof(a->max)))
			goto oom;
		if (!a->after_max)
			continue;
		point_now(d, a->last_ts, &p);
		if (push((void **)&d->series, &d->nseries, &p, sizeof(p)))
			goto oom;
	}
	if (s->inflight_acc->active) {
		struct series_acc *a = s->inflight_acc;
		a->active = 0;
		q.ts = a->max.ts;
		q.inflight = (uint32_t)a->max.total;
		if (push((void **)&r->inflight_series, &r->ninflight_series,
		         &q, sizeof(q)))
			goto oom;
		q.ts = a->last_ts;
		q.inflight = r->inflight;
		if (a->after_max &&
		    push((void **)&r->inflight_series, &r->ninflight_series,
		         &q, sizeof(q)))
			goto oom;
	}
	return;
oom:
	s->series_oom = 1;
}

/* Flushes the bucket before an event at ts when ts starts a later one. */
static void series_tick(struct state *s, int64_t ts)
{
	int64_t d = ts - s->series_start;
	int64_t b = d > 0 ? d / s->series_width : 0;

	if (b != s->bucket) {
		series_flush(s);
		s->bucket = b;
	}
}

/* Sets up the timelines of a first pass; -1 when out of memory. */
static int series_init(struct state *s)
{
	const struct vrt_trace *t = s->t;
	int64_t end = t->end_ns;

	s->acc = calloc(t->ndevices + 1, sizeof(*s->acc));
	if (!s->acc)
		return -1;
	s->inflight_acc = &s->acc[t->ndevices];
	if (t->nev && t->ev[t->nev - 1].ts > end)
		end = t->ev[t->nev - 1].ts;
	s->series_start = t->start_ns;
	s->series_width = end > t->start_ns
	                          ? (end - t->start_ns) /
	                                            VRT_REPLAY_SERIES_BUCKETS +
	                                    1
	                          : 1;
	return 0;
}

static void charge(struct state *s, struct obj *o, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;
	unsigned k;

	if (is_host_family(o->family)) {
		counters_add(&r->host[o->family], o->size, ts);
		r->host_pinned_bytes += o->size;
		if (r->host_pinned_bytes > r->host_pinned_peak) {
			r->host_pinned_peak = r->host_pinned_bytes;
			r->host_pinned_peak_ts = ts;
		}
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	counters_add(&d->fam[o->family], o->size, ts);
	if (!vrt_replay_family_is_vram(o->family))
		return;
	counters_add(&d->phase[o->slot], o->size, ts);
	o->charged = 1;
	d->tracked_bytes += o->size;
	if (d->tracked_bytes > d->peak_bytes) {
		d->peak_bytes = d->tracked_bytes;
		d->peak_ts = ts;
		d->peak_ev = s->cur;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			d->peak_by_phase[k] = d->phase[k].live_bytes;
	}
	if (o->slot == VRT_PHASE_forward)
		sample_single(s, (size_t)o->device, ts);
	window_note(s, o->device);
	series_note(s, o->device, ts);
}

static void discharge(struct state *s, struct obj *o)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;

	if (is_host_family(o->family)) {
		counters_sub(&r->host[o->family], o->size);
		r->host_pinned_bytes -= r->host_pinned_bytes >= o->size
		                                ? o->size
		                                : r->host_pinned_bytes;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	counters_sub(&d->fam[o->family], o->size);
	if (!vrt_replay_family_is_vram(o->family))
		return;
	counters_sub(&d->phase[o->slot], o->size);
	o->charged = 0;
	d->tracked_bytes -=
	        d->tracked_bytes >= o->size ? o->size : d->tracked_bytes;
	series_note(s, o->device, s->t->ev[s->cur].ts);
}

/* Counts an alloc or free against the family (and phase) of o. */
static void count(struct state *s, const struct obj *o, int is_free)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;

	if (is_host_family(o->family)) {
		if (is_free)
			r->host[o->family].frees++;
		else
			r->host[o->family].allocs++;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	if (is_free) {
		d->fam[o->family].frees++;
		if (vrt_replay_family_is_vram(o->family))
			d->phase[o->slot].frees++;
	} else {
		d->fam[o->family].allocs++;
		if (vrt_replay_family_is_vram(o->family))
			d->phase[o->slot].allocs++;
	}
}

static int space_of(int fam)
{
	switch (fam) {
	case VRT_FAM_PINNED:
		return SP_PINNED;
	case VRT_FAM_REGISTERED:
		return SP_REG;
	case VRT_FAM_VA:
		return SP_VA;
	case VRT_FAM_VMM:
		return SP_HANDLE;
	default:
		return SP_PTR;
	}
}

/* Drops one mapping reference from handle h; returns its bytes once the
 * handle is both released and unmapped everywhere. */
static void handle_unref(struct state *s, uint32_t h)
{
	struct obj *o;

	if (h == NONE)
		return;
	o = &s->objs[h];
	if (o->refs)
		o->refs--;
	if (o->released && !o->refs) {
		discharge(s, o);
		obj_free(s, h);
	}
}

static void mapping_drop(struct state *s, uint32_t m)
{
	uint32_t h = s->objs[m].handle;

	obj_free(s, m);
	s->nmappings--;
	handle_unref(s, h);
}

/* A standby snapshot begins: what this process held live is replaced by
 * the snapshot's allocations, so drop it all without counting frees
 * (mappings first, so their handles come free with them). */
static int snapshot_reset(struct state *s, uint32_t proc)
{
	struct key {
		uint64_t addr;
		uint8_t space;
	} *keys;
	size_t i, n = 0, k;

	for (i = 0; i < s->cap; i++)
		n += s->tab[i].obj != NONE && s->tab[i].proc == proc &&
		     s->tab[i].space <= SP_MAP;
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -1;
	for (i = 0, k = 0; i < s->cap; i++)
		if (s->tab[i].obj != NONE && s->tab[i].proc == proc &&
		    s->tab[i].space <= SP_MAP)
			keys[k++] = (struct key){s->tab[i].addr, s->tab[i].space};
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if ((keys[i].space == SP_MAP) != (pass == 0))
				continue;
			uint32_t o = table_take(s, proc, keys[i].space,
			                        keys[i].addr);
			if (o == NONE)
				continue;
			if (pass == 0) {
				mapping_drop(s, o);
				continue;
			}
			struct obj *ob = &s->objs[o];
			if (ob->kind == OBJ_HANDLE && ob->refs) {
				ob->released = 1; /* its mappings live on */
				continue;
			}
			discharge(s, ob);
			obj_free(s, o);
		}
	}
	free(keys);
	return 0;
}

static int on_alloc(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o, old;
	struct obj *ob;

	/* A snapshot entry that is already live here was recorded as a
	 * call: keep that one. */
	if ((e->flags & VRT_EV_SNAP) &&
	    table_get(s, e->proc, (uint8_t)space_of(fam), e->addr) != NONE)
		return 0;
	o = obj_new(s);
	if (o == NONE)
		return -1;
	ob = &s->objs[o];
	ob->size = e->size;
	ob->device = e->device;
	ob->slot = vrt_replay_phase_slot(e->phase);
	ob->stack = e->stack;
	ob->family = (uint8_t)fam;
	ob->kind = fam == VRT_FAM_VMM ? OBJ_HANDLE : OBJ_ALLOC;
	if (table_put(s, e->proc, (uint8_t)space_of(fam), e->addr, o, &old))
		return -1;
	if (old != NONE) {
		/* The same live address again: its free was not recorded
		 * (dropped events). The new allocation replaces it; a handle
		 * that is still mapped keeps its bytes until unmapped. */
		struct obj *p = &s->objs[old];
		if (p->kind == OBJ_HANDLE) {
			p->released = 1;
			if (p->refs == 0) {
				discharge(s, p);
				obj_free(s, old);
			}
		} else {
			discharge(s, p);
			obj_free(s, old);
		}
	}
	ob = &s->objs[o];
	if (!(e->flags & VRT_EV_SNAP))
		count(s, ob, 0);
	charge(s, ob, e->ts);
	return 0;
}

static void on_free(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o;
	struct obj *ob;

	/* cudaFree(0) reaches the driver as cuMemFree_v2(0): a no-op. */
	if (e->addr == 0)
		return;
	o = table_take(s, e->proc, (uint8_t)space_of(fam), e->addr);
	if (o == NONE) {
		s->r->unmatched_frees++;
		return;
	}
	ob = &s->objs[o];
	count(s, ob, 1);
	if (ob->kind == OBJ_HANDLE) {
		ob->released = 1;
		if (ob->refs)
			return; /* bytes stay until the last unmap */
	}
	discharge(s, ob);
	obj_free(s, o);
}

static int on_map(struct state *s, const struct vrt_event *e)
{
	uint32_t h = table_get(s, e->proc, SP_HANDLE, e->aux);
	uint32_t m = obj_new(s), old;

	if (m == NONE)
		return -1;
	s->objs[m].kind = OBJ_MAPPING;
	s->objs[m].size = e->size;
	s->objs[m].handle = h;
	if (table_put(s, e->proc, SP_MAP, e->addr, m, &old))
		return -1;
	s->nmappings++;
	if (h != NONE)
		s->objs[h].refs++;
	if (old != NONE)
		mapping_drop(s, old); /* mapped twice: the unmap was lost */
	return 0;
}

static void on_unmap(struct state *s, const struct vrt_event *e)
{
	uint64_t lo = e->addr, hi = e->addr + e->size, cur = lo;
	size_t removed = 0, i;

	if (hi < lo)
		hi = UINT64_MAX; /* wrapped: to the end of the space */
	/* Fast path: contiguous mappings from the start of the range. */
	do {
		uint32_t m = table_take(s, e->proc, SP_MAP, cur);
		uint64_t sz;
		if (m == NONE)
			break;
		sz = s->objs[m].size;
		mapping_drop(s, m);
		removed++;
		if (!sz || cur + sz < cur)
			break;
		cur += sz;
	} while (cur < hi);
	/* Gaps: look at every mapping of the process. */
	if (cur < hi && s->nmappings) {
		for (i = 0; i < s->cap; i++) {
			struct slot *sl = &s->tab[i];
			if (sl->obj == NONE || sl->space != SP_MAP ||
			    sl->proc != e->proc || sl->addr < lo ||
			    sl->addr >= hi)
				continue;
			uint32_t m = sl->obj;
			table_remove_at(s, i);
			mapping_drop(s, m);
			removed++;
			/* Backward shift may have moved an unvisited entry
			 * into slot i: look at it again. */
			i--;
		}
	}
	if (!removed)
		s->r->unmatched_frees++;
}

static int on_fail(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_failure *f;
	int fam = vrt_api_family(e->api);

	if (r->nfails % 64 == 0) {
		void *p = realloc(r->fails, (r->nfails + 64) * sizeof(*f));
		if (!p)
			return -1;
		r->fails = p;
	}
	f = &r->fails[r->nfails++];
	memset(f, 0, sizeof(*f));
	f->ts = e->ts;
	f->proc = e->proc;
	f->tid = e->tid;
	f->device = e->device;
	/* A failed free of a live pointer names no device (-1, as FREE
	 * records do); the allocation knows it. */
	if (f->device < 0 && e->addr && fam >= 0 && fam != VRT_FAM_NONE &&
	    !is_host_family(fam) && vrt_api_op(e->api) == VRT_OP_FREE) {
		uint32_t o =
		        table_get(s, e->proc, (uint8_t)space_of(fam), e->addr);
		if (o != NONE)
			f->device = s->objs[o].device;
	}
	f->api = e->api;
	f->family = fam;
	f->requested_bytes = e->size;
	f->addr = e->addr;
	f->error = (int64_t)e->aux;
	f->phase = vrt_replay_phase_slot(e->phase);
	f->stack = e->stack;
	f->after_ready = r->have_server_ready;
	f->inflight = r->inflight;
	f->oom = e->aux == 2 && vrt_api_op(e->api) == VRT_OP_ALLOC;
	if (e->flags & VRT_EV_HAVE_INFO && e->extra < s->t->nfails) {
		f->have_info = 1;
		f->free_bytes = s->t->fails[e->extra].free_bytes;
		f->total_bytes = s->t->fails[e->extra].total_bytes;
	}
	if (f->oom)
		r->ooms++;
	if (f->oom && r->nwindows)
		r->windows[r->nwindows - 1].ooms++;
	if (f->device >= 0 && (size_t)f->device < r->ndevices) {
		unsigned k;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			f->live_by_phase[k] =
			        r->dev[f->device].phase[k].live_bytes;
	}
	if (fam < 0 || fam == VRT_FAM_NONE)
		return 0;
	if (is_host_family(fam)) {
		r->host[fam].failed++;
	} else if (f->device >= 0 && (size_t)f->device < r->ndevices) {
		r->dev[f->device].fam[fam].failed++;
		if (vrt_replay_family_is_vram(fam))
			r->dev[f->device]
			        .phase[vrt_replay_phase_slot(e->phase)]
			        .failed++;
	}
	return 0;
}

static void on_meminfo(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay_device *d;
	uint64_t used;

	if (e->device < 0 || (size_t)e->device >= s->r->ndevices)
		return;
	d = &s->r->dev[e->device];
	if (d->have_baseline)
		return;
	d->have_baseline = 1;
	d->baseline_ts = e->ts;
	d->probe_total_bytes = e->size;
	used = e->size >= e->addr ? e->size - e->addr : 0;
	/* What the driver counts as used beyond our live bytes was there
	 * before us (or is driver overhead); never negative. */
	d->baseline_used_bytes =
	        used > d->tracked_bytes ? used - d->tracked_bytes : 0;
}

static void inflight_changed(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;
	size_t i;

	if (r->inflight > r->max_inflight) {
		r->max_inflight = r->inflight;
		r->max_inflight_ts = ts;
	}
	if (r->nwindows &&
	    r->inflight > r->windows[r->nwindows - 1].max_inflight)
		r->windows[r->nwindows - 1].max_inflight = r->inflight;
	for (i = 0; i < r->ndevices; i++)
		sample_single(s, i, ts);
	inflight_note(s, ts);
}

/* Opens (or closes) one request in key space sp; duplicates and unknown
 * closes (lost events) change nothing. */
static int request_edge(struct state *s, const struct vrt_event *e, uint8_t sp,
                        int open)
{
	struct vrt_replay *r = s->r;
	uint32_t old;

	if (open) {
		/* The value is never read: any non-NONE object index. */
		if (table_put(s, e->proc, sp, e->addr, 0, &old))
			return -1;
		if (old != NONE)
			return 0;
		r->inflight++;
		if (sp == SP_CONN)
			r->connections++;
		else
			r->requests++;
	} else {
		if (table_take(s, e->proc, sp, e->addr) == NONE)
			return 0;
		r->inflight--;
	}
	inflight_changed(s, e->ts);
	return 0;
}

static int on_net(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	int by_conn = e->proc >= s->t->nprocs || !s->uses_requests[e->proc];

	switch (e->aux) {
	case VRT_NET_LISTEN:
		if (!r->have_server_ready) {
			r->have_server_ready = 1;
			r->server_ready_ts = e->ts;
			r->server_ready_proc = e->proc;
			r->server_port = e->size;
		}
		return 0;
	case VRT_NET_ACCEPT:
		return by_conn ? request_edge(s, e, SP_CONN, 1) : 0;
	case VRT_NET_CLOSE:
		return by_conn ? request_edge(s, e, SP_CONN, 0) : 0;
	}
	return 0; /* an op from a newer writer */
}

/* ---- windows ------------------------------------------------------------ */

/* A mark ends the open window and opens the next, which starts with what
 * is live and in flight at the mark. */
static int window_open(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_window *w;
	size_t i;

	if (r->nwindows % 16 == 0) {
		void *p = realloc(r->windows,
		                  (r->nwindows + 16) * sizeof(*r->windows));
		if (!p)
			return -1;
		r->windows = p;
	}
	if (r->nwindows)
		r->windows[r->nwindows - 1].end_ts = ts;
	w = &r->windows[r->nwindows];
	memset(w, 0, sizeof(*w));
	w->dev = calloc(r->ndevices ? r->ndevices : 1, sizeof(*w->dev));
	if (!w->dev)
		return -1;
	w->mark = s->cur;
	w->start_ts = ts;
	w->end_ts = ts;
	w->max_inflight = r->inflight;
	r->nwindows++;
	for (i = 0; i < r->ndevices; i++)
		window_note(s, (int32_t)i);
	return 0;
}

static void windows_free(struct vrt_replay *r)
{
	size_t i;

	for (i = 0; i < r->nwindows; i++)
		free(r->windows[i].dev);
	free(r->windows);
}

static int on_mark(struct state *s)
{
	struct vrt_replay *r = s->r;

	if (r->nmarks % 64 == 0) {
		void *p = realloc(r->marks, (r->nmarks + 64) * sizeof(size_t));
		if (!p)
			return -1;
		r->marks = p;
	}
	r->marks[r->nmarks++] = s->cur;
	return window_open(s, s->t->ev[s->cur].ts);
}

static int cmp_site(const void *pa, const void *pb)
{
	const struct vrt_replay_site *a = pa, *b = pb;

	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	if (a->stack != b->stack)
		return a->stack < b->stack ? -1 : 1;
	return 0;
}

static int cmp_site_bytes(const void *pa, const void *pb)
{
	const struct vrt_replay_site *a = pa, *b = pb;

	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Appends to out the largest call paths live on device dev now (the
 * moment of its peak), VRT_REPLAY_TOP_SITES per phase. */
static int snapshot_sites(struct state *s, struct vrt_replay *out, int32_t dev)
{
	struct vrt_replay_site *v = NULL, *nv;
	size_t n = 0, m = 0, i, kept = 0;
	size_t limit = out->top_sites ? out->top_sites : VRT_REPLAY_TOP_SITES;
	uint32_t phase = NONE;

	for (i = 0; i < s->nobjs; i++)
		n += s->objs[i].charged && s->objs[i].device == dev;
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < s->nobjs; i++) {
		const struct obj *o = &s->objs[i];
		if (!o->charged || o->device != dev)
			continue;
		v[m].device = dev;
		v[m].phase = o->slot;
		v[m].stack = o->stack;
		v[m].bytes = o->size;
		v[m].allocs = 1;
		m++;
	}
	qsort(v, m, sizeof(*v), cmp_site);
	for (i = 1, n = m ? 1 : 0; i < m; i++) {
		if (!cmp_site(&v[n - 1], &v[i])) {
			v[n - 1].bytes += v[i].bytes;
			v[n - 1].allocs++;
		} else {
			v[n++] = v[i];
		}
	}
	qsort(v, n, sizeof(*v), cmp_site_bytes);
	nv = realloc(out->sites, (out->nsites + n) * sizeof(*nv));
	if (!nv) {
		free(v);
		return -1;
	}
	out->sites = nv;
	for (i = 0; i < n; i++) {
		if (v[i].phase != phase) {
			phase = v[i].phase;
			kept = 0;
		}
		if (kept++ < limit)
			out->sites[out->nsites++] = v[i];
	}
	free(v);
	return 0;
}

/*
 * One replay of every event into r. With sites set (the second pass), r is
 * scratch and, right after each device's peak event (from the first pass,
 * in sites->dev[].peak_ev), the live call paths are added to sites.
 */
static int replay_pass(struct vrt_replay *r, const struct vrt_trace *t,
                       uint8_t *uses_requests, struct vrt_replay *sites)
{
	struct state s;
	size_t i, j;
	int rc = 0;
	/* Progress over both passes: events of the first, then the second. */
	const struct vrt_progress *progress =
	        sites ? sites->progress : r->progress;
	uint64_t done = sites ? t->nev : 0;

	memset(&s, 0, sizeof(s));
	s.r = r;
	s.t = t;
	s.free_obj = NONE;
	s.uses_requests = uses_requests;
	r->ndevices = t->ndevices;
	r->dev = calloc(t->ndevices ? t->ndevices : 1, sizeof(*r->dev));
	if (!r->dev || table_grow(&s) || (!sites && series_init(&s)))
		rc = -1;
	for (i = 0; i < t->nev && !rc; i++) {
		const struct vrt_event *e = &t->ev[i];
		int fam = vrt_api_family(e->api);

		s.cur = i;
		if (!(i & 0xffff))
			vrt_progress_note(progress, VRT_PROGRESS_REPLAY,
			                  done + i, 2 * (uint64_t)t->nev, 0);
		if (s.acc) {
			series_tick(&s, e->ts);
			if (s.series_oom) {
				rc = -1;
				break;
			}
		}
		if (sites) {
			for (j = 0; j < sites->ndevices && i; j++)
				if (sites->dev[j].peak_bytes &&
				    sites->dev[j].peak_ev == i - 1)
					rc |= snapshot_sites(&s, sites,
					                     (int32_t)j);
			if (rc)
				break;
		}
		switch (e->kind) {
		case VRT_EV_NET:
			rc = on_net(&s, e);
			continue;
		case VRT_EV_REQUEST:
			if (e->aux == 1 || e->aux == 2)
				rc = request_edge(&s, e, SP_REQ, e->aux == 1);
			continue;
		case VRT_EV_MARK:
			rc = on_mark(&s);
			continue;
		case VRT_EV_PROC:
			continue;
		case VRT_EV_SNAPSHOT:
			if (e->aux == 1)
				rc = snapshot_reset(&s, e->proc);
			continue;
		}
		if (e->kind == VRT_EV_FAIL) {
			rc = on_fail(&s, e);
			continue;
		}
		if (e->kind == VRT_EV_MEMINFO) {
			on_meminfo(&s, e);
			continue;
		}
		/* Apis from a newer writer: their semantics are unknown. */
		if (fam < 0 || fam == VRT_FAM_NONE)
			continue;
		switch (e->kind) {
		case VRT_EV_ALLOC:
			rc = on_alloc(&s, e, fam);
			break;
		case VRT_EV_FREE:
			on_free(&s, e, fam);
			break;
		case VRT_EV_MAP:
			rc = on_map(&s, e);
			break;
		case VRT_EV_UNMAP:
			on_unmap(&s, e);
			break;
		}
	}
	if (sites && !rc && t->nev)
		for (j = 0; j < sites->ndevices && !rc; j++)
			if (sites->dev[j].peak_bytes &&
			    sites->dev[j].peak_ev == t->nev - 1)
				rc = snapshot_sites(&s, sites, (int32_t)j);
	if (s.acc && !rc) {
		series_flush(&s);
		rc = -s.series_oom;
	}
	free(s.acc);
	free(s.tab);
	free(s.objs);
	return rc;
}

int vrt_replay_run(struct vrt_replay *r, const struct vrt_trace *t)
{
	struct vrt_replay scratch;
	uint8_t *uses_requests;
	size_t i;
	int rc, peaks = 0;

	uses_requests = calloc(t->nprocs ? t->nprocs : 1, 1);
	if (!uses_requests)
		return -1;
	for (i = 0; i < t->nev; i++)
		if (t->ev[i].kind == VRT_EV_REQUEST &&
		    t->ev[i].proc < t->nprocs)
			uses_requests[t->ev[i].proc] = 1;
	rc = replay_pass(r, t, uses_requests, NULL);
	/* The last window runs to the end of the run. */
	if (!rc && r->nwindows &&
	    t->end_ns > r->windows[r->nwindows - 1].start_ts)
		r->windows[r->nwindows - 1].end_ts = t->end_ns;
	for (i = 0; i < r->ndevices && !rc; i++)
		peaks |= r->dev[i].peak_bytes != 0;
	if (!rc && peaks) {
		memset(&scratch, 0, sizeof(scratch));
		rc = replay_pass(&scratch, t, uses_requests, r);
		vrt_replay_free(&scratch);
	}
	free(uses_requests);
	return rc;
}

void vrt_replay_free(struct vrt_replay *r)
{
	size_t i;

	for (i = 0; r->dev && i < r->ndevices; i++)
		free(r->dev[i].series);
	free(r->inflight_series);
	free(r->dev);
	free(r->fails);
	free(r->marks);
	windows_free(r);
	free(r->sites);
	memset(r, 0, sizeof(*r));
}
