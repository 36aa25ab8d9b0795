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
 * A plain device pointer allocated on the common path needs no object:
 * its entry holds its bytes, family and site (which names its device and
 * phase slot), so a free touches one table line and one site. The rare
 * paths that want an object for such an entry get one made on the spot
 * (vrt_replay_slot_obj), so everything but the common path sees objects only.
 *
 * Address spaces follow trace_format.h: device/async/managed pointers share
 * one space; pinned, registered, reserved VA, VMM handles each have their
 * own; VMM mappings (address -> handle) are a sixth. A VMM handle's bytes
 * stay charged until it is released AND all its mappings are unmapped,
 * whichever comes last.
 *
 * Requests in flight are three more key spaces of the same table (accepted
 * connections by fd, annotated requests by id, HTTP/1.x requests by fd).
 * A connection of an older writer is itself a request in flight; a newer
 * writer's says its family and its requests come as REQ_BEGIN/REQ_END. A
 * process counts its annotated requests instead from its first REQUEST
 * event on (its connections and requests still open then stop counting).
 *
 * A process that began in standby brings facts kept there (PAST events,
 * with the times they happened, delivered after later events) and
 * snapshots (the state at that moment: live allocations, open connections
 * and requests, replacing what the process held). What depends on the
 * order of such facts — readiness, the stage of each failure, requests in
 * flight at a failure while another process was in standby — is settled
 * by vrt_replay_end.
 *
 * One pass, fed in batches. The allocation sites live at a device's peak
 * are kept by lazy snapshots: a site (device, phase slot, stack) holds its
 * live bytes and allocations and its value at the device's last peak that
 * it saw; each device counts its peaks (an epoch). Before a site changes,
 * if its epoch is older than its device's, its value now is its value at
 * that device's latest peak (it has not changed since), so it is stored
 * with the epoch. At the end, a site's share of the final peak is its
 * stored value when its epoch is the final one, else its live value. O(1)
 * per event; the snapshot costs no second pass. The device's own split at
 * its peak (peak_by_phase) is lazy the same way: a rise to a new peak only
 * marks it pending, and it is copied from the live phase bytes before they
 * next change otherwise (a fall, or tracked bytes that wrap), so a run of
 * rising peaks costs one copy.
 *
 * Timelines are bounded: the run is cut into time buckets of width w from
 * its start; within one, a device keeps its highest point and, when it
 * changed after that, its state at the bucket's end (read from the live
 * counters when the first event of a later bucket arrives, before it
 * applies). The highest point is copied lazily: while the device only
 * grows, the live counters are that point. When more than
 * VRT_REPLAY_SERIES_BUCKETS buckets hold a change, w doubles and each pair
 * of buckets merges into one (its highest point, and its last when that
 * is another), which is what bucketing at the doubled width would have
 * kept. Only buckets that hold a change count, so a server that loads in
 * a minute and then idles for a day keeps its start at the resolution of
 * a minute, not of a day. A bucket opened before a widening can end in
 * the same wider bucket as the one before it: its points then merge into
 * that one's as they are added. Beside
 * the points, each bucket in which a device changed keeps its range (the
 * least and most of its total and of each phase, from the state the bucket
 * began with): one compare per event on the phase it touches, so a phase
 * that rose and fell back inside a bucket is never lost. Ranges merge
 * like points when the width doubles.
 *
 * Speed: the common events (allocations and frees of plain pointers) take
 * an inlined path (fast_alloc, fast_free) that touches one table line, one
 * site and its device's counters, with no division and no per-event
 * switch; the table line an event will probe is prefetched a few events
 * ahead, as the table outgrows the first-level cache. Everything else
 * takes the general path (vrt_replay_events_one), which the common path
 * must agree with (tests/unit/analyzer/replay/test_replay.c checks both
 * against a model).
 *
 * The parts. This file keeps the objects, the live table, the sites, the
 * replay's state, the common path and the end of the stream (sites at the
 * peaks, devices in their final order); replay_events.c the general path
 * (every other event and what only it does to the budgets: families,
 * address spaces, VMM handles and mappings, standby snapshots);
 * replay_fail.c the failed calls, what recovers them and which was fatal;
 * replay_requests.c the requests in flight, the stage and readiness;
 * replay_series.c the timelines and the windows between marks. What they
 * share, with the accounting both paths take inline, is in
 * replay_internal.h.
 */
#include "replay.h"
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vrt_replay_family_is_vram(int family)
{
	return vrt_replay_is_vram(family);
}

unsigned vrt_replay_phase_slot(uint32_t phase)
{
	return vrt_replay_slot(phase);
}

/* ---- objects ---------------------------------------------------------- */

/* Doubles *arr (*cap elements of sz bytes; first when empty), keeping its
 * indices below NONE; -1 when it cannot. */
static int grow_ids(void **arr, size_t *cap, size_t first, size_t sz)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *p;

	if (nc >= NONE)
		return -1;
	p = realloc(*arr, nc * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

uint32_t vrt_replay_obj_new(struct state *s)
{
	uint32_t o;

	if (s->free_obj != NONE) {
		o = s->free_obj;
		s->free_obj = s->objs[o].next;
	} else {
		if (s->nobjs == s->capobjs &&
		    grow_ids((void **)&s->objs, &s->capobjs, 1024,
		             sizeof(*s->objs)))
			return NONE;
		o = (uint32_t)s->nobjs++;
	}
	s->objs[o] = (struct obj){.handle = NONE, .site = NONE};
	return o;
}

void vrt_replay_obj_free(struct state *s, uint32_t o)
{
	s->objs[o].next = s->free_obj;
	s->free_obj = o;
}

/* ---- the live table --------------------------------------------------- */

/* One multiply: the high address bits are folded down first, so keys
 * that differ only there (two devices' pointers at the same offset) still
 * land apart; the product's high half mixes every input bit. */
static inline uint32_t hash_key(uint32_t proc, uint8_t space, uint64_t addr)
{
	uint64_t x = addr ^ ((uint64_t)proc << 32) ^ ((uint64_t)space << 58);

	x ^= x >> 32;
	return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32);
}

static int table_grow(struct state *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024, i;
	struct slot *nt;

	if (ncap > TABLE_MAX_CAP)
		return -1;
	nt = aligned_alloc(64, ncap * sizeof(*nt));
	if (!nt)
		return -1;
	memset(nt, 0, ncap * sizeof(*nt)); /* TAG_EMPTY */
	for (i = 0; i < s->cap; i++) {
		struct slot *o = &s->tab[i];
		size_t j;
		if (o->tag == TAG_EMPTY)
			continue;
		j = o->hash & (ncap - 1);
		while (nt[j].tag != TAG_EMPTY)
			j = (j + 1) & (ncap - 1);
		nt[j] = *o;
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	s->grow_at = ncap / 2;
	return 0;
}

/* Index of the slot holding the key, or of the empty slot ending its
 * probe sequence. Requires cap > used. */
static inline size_t table_find_h(const struct state *s, uint32_t proc,
                                  uint8_t space, uint64_t addr, uint32_t h)
{
	size_t mask = s->cap - 1, i = h & mask;

	while (s->tab[i].tag != TAG_EMPTY) {
		const struct slot *e = &s->tab[i];
		if (e->addr == addr && e->proc == proc && e->space == space)
			return i;
		i = (i + 1) & mask;
	}
	return i;
}

size_t vrt_replay_table_find(const struct state *s, uint32_t proc,
                             uint8_t space, uint64_t addr)
{
	return table_find_h(s, proc, space, addr, hash_key(proc, space, addr));
}

/* The object of the entry at slot i (NONE when empty); a TAG_PTR entry
 * gets its object made now (NONE and s->oom when out of memory). */
uint32_t vrt_replay_slot_obj(struct state *s, size_t i)
{
	struct slot *sl = &s->tab[i];
	const struct site *x;
	struct obj *ob;
	uint32_t o;

	if (sl->tag != TAG_PTR)
		return sl->tag == TAG_EMPTY ? NONE : sl->ref;
	o = vrt_replay_obj_new(s);
	if (o == NONE) {
		s->oom = 1;
		return NONE;
	}
	x = &s->sites[sl->ref];
	ob = &s->objs[o];
	ob->size = sl->size;
	ob->device = x->device;
	ob->slot = x->slot;
	ob->stack = x->stack;
	ob->site = sl->ref;
	ob->family = sl->family;
	ob->kind = OBJ_ALLOC;
	ob->charged = 1;
	sl->tag = TAG_OBJ;
	sl->ref = o;
	return o;
}

uint32_t vrt_replay_table_get(struct state *s, uint32_t proc, uint8_t space,
                          uint64_t addr)
{
	return vrt_replay_slot_obj(s,
	                           vrt_replay_table_find(s, proc, space, addr));
}

/* Sets key -> obj and stores the object it replaced (or NONE) in *old.
 * Returns 0, or -1 when out of memory. */
int vrt_replay_table_put(struct state *s, uint32_t proc, uint8_t space,
                     uint64_t addr, uint32_t obj, uint32_t *old)
{
	uint32_t h = hash_key(proc, space, addr);
	struct slot *sl;
	size_t i;

	/* At most half full: short clusters for lookups and deletions. */
	if ((s->used + 1) * 2 > s->cap && table_grow(s))
		return -1;
	i = table_find_h(s, proc, space, addr, h);
	*old = vrt_replay_slot_obj(s, i);
	if (s->oom)
		return -1;
	sl = &s->tab[i];
	if (sl->tag == TAG_EMPTY)
		s->used++;
	sl->hash = h;
	sl->addr = addr;
	sl->proc = proc;
	sl->space = space;
	sl->tag = TAG_OBJ;
	sl->ref = obj;
	return 0;
}

/* Removes a key; returns its object or NONE. */
uint32_t vrt_replay_table_take(struct state *s, uint32_t proc, uint8_t space,
                           uint64_t addr)
{
	size_t i = vrt_replay_table_find(s, proc, space, addr);
	uint32_t o = vrt_replay_slot_obj(s, i);

	if (o != NONE)
		vrt_replay_table_remove_at(s, i);
	return o;
}

/* Copies a pending peak split: the live phase bytes are about to change
 * other than by rising to a new peak. */
NOINLINE void vrt_replay_peak_copy(struct vrt_replay_device *d,
                               struct devstate *ds)
{
	memcpy(d->peak_by_phase, ds->live, sizeof(ds->live));
	ds->peak_pending = 0;
}

int vrt_replay_phase_is_demand(unsigned slot)
{
	return slot < VRT_REPLAY_MAX_PHASES && vrt_replay_slot_is_demand(slot);
}

uint64_t vrt_replay_demand_level(const struct devstate *ds)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (vrt_replay_slot_is_demand(k))
			sum += ds->live[k];
	return sum;
}

/* While one request is in flight alone since it began, its growth on
 * device i (the per-request phases above their level when it began) is a
 * candidate for the single-request peak. A request that overlapped others
 * is not measured: caching allocators keep what the overlap grew. */
NOINLINE void vrt_replay_single_note(struct state *s, size_t i, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d = &r->dev[i];
	uint64_t lvl = vrt_replay_demand_level(&s->devs[i]);
	uint64_t g = lvl > s->devs[i].idle_demand
	                     ? lvl - s->devs[i].idle_demand
	                     : 0;

	if (!s->single_on)
		return;
	if (!d->have_single_request || g > d->single_request_bytes) {
		d->have_single_request = 1;
		d->single_request_bytes = g;
	}
	if (!r->have_single_request || g > r->single_request_peak_bytes) {
		r->have_single_request = 1;
		r->single_request_peak_bytes = g;
		r->single_request_peak_device = (int32_t)i;
		r->single_request_peak_ts = ts;
	}
}

/* ---- vectors ------------------------------------------------------------ */

/* Appends one element of sz bytes to *v (n elements), growing by doubling;
 * -1 when out of memory. */
int vrt_replay_push(void **v, size_t *n, const void *x, size_t sz)
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

/* The site of (dev, slot, stack), created when new; NONE when out of
 * memory. */
NOINLINE uint32_t vrt_replay_site_get(struct state *s, int32_t dev,
                                  uint32_t slot, uint32_t stack)
{
	size_t hint = (size_t)stack * SITE_HINTS +
	              ((uint32_t)dev & (SITE_HINTS - 1));
	uint32_t h = hint < s->nstack_site ? s->stack_site[hint] : NONE;
	size_t i, mask;
	struct site *x;

	if (h != NONE && s->sites[h].device == dev && s->sites[h].slot == slot)
		return h;
	if ((s->nsites + 1) * 2 > s->scap) {
		size_t nc = s->scap ? s->scap * 2 : 256, k;
		uint32_t *ni = malloc(nc * sizeof(*ni));
		if (!ni)
			return NONE;
		for (k = 0; k < nc; k++)
			ni[k] = NONE;
		for (k = 0; k < s->nsites; k++) {
			x = &s->sites[k];
			i = hash_key(x->stack, (uint8_t)x->slot,
			             (uint64_t)(uint32_t)x->device) &
			    (nc - 1);
			while (ni[i] != NONE)
				i = (i + 1) & (nc - 1);
			ni[i] = (uint32_t)k;
		}
		free(s->sindex);
		s->sindex = ni;
		s->scap = nc;
	}
	mask = s->scap - 1;
	i = hash_key(stack, (uint8_t)slot, (uint64_t)(uint32_t)dev) & mask;
	for (; s->sindex[i] != NONE; i = (i + 1) & mask) {
		x = &s->sites[s->sindex[i]];
		if (x->stack == stack && x->slot == slot && x->device == dev) {
			h = s->sindex[i];
			goto found;
		}
	}
	if (s->nsites == s->capsites &&
	    grow_ids((void **)&s->sites, &s->capsites, 256, sizeof(*s->sites)))
		return NONE;
	h = (uint32_t)s->nsites++;
	x = &s->sites[h];
	memset(x, 0, sizeof(*x));
	x->device = dev;
	x->slot = slot;
	x->stack = stack;
	x->d = &s->r->dev[dev];
	x->ds = &s->devs[dev];
	s->sindex[i] = h;
found:
	if (hint < s->nstack_site)
		s->stack_site[hint] = h;
	return h;
}

/* ---- sites at the peaks ------------------------------------------------ */

static int cmp_site_bytes(const void *pa, const void *pb)
{
	const struct vrt_replay_site *a = pa, *b = pb;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* r->sites from the lazy snapshots: every site that held something at its
 * device's last peak, the largest r->top_sites per (device, phase). */
static int sites_collect(struct state *s)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_site *v;
	size_t limit = r->top_sites ? r->top_sites : VRT_REPLAY_TOP_SITES;
	size_t i, n = 0, kept = 0;

	if (!s->nsites)
		return 0;
	v = malloc(s->nsites * sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < s->nsites; i++) {
		const struct site *x = &s->sites[i];
		const struct devstate *ds;
		uint64_t bytes, allocs;
		if (x->device < 0 || (size_t)x->device >= r->ndevices ||
		    !r->dev[x->device].peak_bytes)
			continue;
		ds = &s->devs[x->device];
		bytes = x->epoch == ds->epoch ? x->peak_bytes : x->bytes;
		allocs = x->epoch == ds->epoch ? x->peak_allocs : x->allocs;
		if (!allocs)
			continue;
		v[n].device = x->device;
		v[n].phase = x->slot;
		v[n].stack = x->stack;
		v[n].bytes = bytes;
		v[n].allocs = allocs;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_site_bytes);
	r->sites = v;
	r->nsites = 0;
	for (i = 0; i < n; i++) {
		if (!i || v[i].device != v[i - 1].device ||
		    v[i].phase != v[i - 1].phase)
			kept = 0;
		if (kept++ < limit)
			v[r->nsites++] = v[i];
	}
	return 0;
}

/* ---- devices in their final order ------------------------------------ */

/* Moves every per-device array and device field of r from the stream's
 * indexes to map[i] (a permutation of 0..n-1, n == r->ndevices). */
static int remap_devices(struct vrt_replay *r, const uint32_t *map, size_t n)
{
	struct vrt_replay_device *nd;
	uint8_t *seen;
	size_t i, j;

	if (n != r->ndevices || !n)
		return 0;
	seen = calloc(n, 1);
	if (!seen)
		return -1;
	for (i = 0; i < n; i++) {
		if (map[i] >= n || seen[map[i]]) {
			free(seen); /* not a permutation: leave r alone */
			return 0;
		}
		seen[map[i]] = 1;
	}
	free(seen);
	nd = malloc(n * sizeof(*nd));
	if (!nd)
		return -1;
	for (i = 0; i < n; i++)
		nd[map[i]] = r->dev[i];
	free(r->dev);
	r->dev = nd;
	for (j = 0; j < r->nwindows; j++) {
		struct vrt_replay_window_device *wd =
		        malloc(n * sizeof(*wd));
		if (!wd)
			return -1;
		for (i = 0; i < n; i++)
			wd[map[i]] = r->windows[j].dev[i];
		free(r->windows[j].dev);
		r->windows[j].dev = wd;
	}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].device >= 0 && (size_t)r->fails[i].device < n)
			r->fails[i].device = (int32_t)map[r->fails[i].device];
	for (i = 0; i < r->nsites; i++)
		if (r->sites[i].device >= 0 && (size_t)r->sites[i].device < n)
			r->sites[i].device = (int32_t)map[r->sites[i].device];
	if (r->nsites > 1)
		qsort(r->sites, r->nsites, sizeof(*r->sites), cmp_site_bytes);
	if (r->have_single_request && r->single_request_peak_device >= 0 &&
	    (size_t)r->single_request_peak_device < n)
		r->single_request_peak_device =
		        (int32_t)map[r->single_request_peak_device];
	for (i = 0; i < r->nprocs; i++) {
		uint64_t was = r->procs[i].devices, now = 0;
		for (j = 0; j < n && j < 64; j++)
			if ((was >> j & 1) && map[j] < 64)
				now |= 1ull << map[j];
		r->procs[i].devices = now;
	}
	return 0;
}

/* ---- the stream --------------------------------------------------------- */

/* The per-device arrays moved: the sites' pointers into them follow. */
static void sites_rebase(struct state *s)
{
	size_t i;

	for (i = 0; i < s->nsites; i++) {
		s->sites[i].d = &s->r->dev[s->sites[i].device];
		s->sites[i].ds = &s->devs[s->sites[i].device];
	}
}

/* Grows the per-device and per-process state to t's tables. */
static int state_grow(struct state *s, const struct vrt_trace *t)
{
	struct vrt_replay *r = s->r;
	size_t n = t->ndevices;

	if (n > r->ndevices) {
		struct vrt_replay_device *nd;
		struct devstate *ns;
		nd = realloc(r->dev, n * sizeof(*nd));
		if (!nd)
			return -1;
		memset(nd + r->ndevices, 0, (n - r->ndevices) * sizeof(*nd));
		r->dev = nd;
		ns = realloc(s->devs, n * sizeof(*ns));
		if (!ns)
			return -1;
		memset(ns + r->ndevices, 0, (n - r->ndevices) * sizeof(*ns));
		s->devs = ns;
		sites_rebase(s);
		if (vrt_replay_series_windows_grow(r, n))
			return -1;
		r->ndevices = n;
	}
	if (t->nprocs > s->nprocs) {
		uint8_t *nu = realloc(s->uses_requests, t->nprocs);
		uint64_t *nc;
		struct pstate *np;
		struct vrt_replay_proc *rp;
		size_t add = t->nprocs - s->nprocs;
		int64_t *la;
		size_t i;
		if (!nu)
			return -1;
		memset(nu + s->nprocs, 0, add);
		s->uses_requests = nu;
		nc = realloc(s->conns, t->nprocs * sizeof(*nc));
		if (!nc)
			return -1;
		memset(nc + s->nprocs, 0, add * sizeof(*nc));
		s->conns = nc;
		np = realloc(s->ps, t->nprocs * sizeof(*np));
		if (!np)
			return -1;
		memset(np + s->nprocs, 0, add * sizeof(*np));
		s->ps = np;
		rp = realloc(r->procs, t->nprocs * sizeof(*rp));
		if (!rp)
			return -1;
		memset(rp + s->nprocs, 0, add * sizeof(*rp));
		r->procs = rp;
		r->nprocs = t->nprocs;
		la = realloc(s->last_alloc, t->nprocs * sizeof(*la));
		if (!la)
			return -1;
		for (i = s->nprocs; i < t->nprocs; i++)
			la[i] = INT64_MIN;
		s->last_alloc = la;
		s->nprocs = t->nprocs;
	}
	if (t->nstacks * SITE_HINTS > s->nstack_site) {
		size_t nc = s->nstack_site ? s->nstack_site : 256, i;
		uint32_t *ns;
		while (nc < t->nstacks * SITE_HINTS)
			nc *= 2;
		ns = realloc(s->stack_site, nc * sizeof(*ns));
		if (!ns)
			return -1;
		for (i = s->nstack_site; i < nc; i++)
			ns[i] = NONE;
		s->stack_site = ns;
		s->nstack_site = nc;
	}
	return 0;
}

static void state_free(struct state *s)
{
	if (!s)
		return;
	free(s->tab);
	free(s->objs);
	free(s->uses_requests);
	free(s->conns);
	free(s->ps);
	free(s->edges);
	free(s->turns);
	free(s->streams);
	free(s->modes);
	free(s->before);
	free(s->devs);
	free(s->sites);
	free(s->sindex);
	free(s->stack_site);
	free(s->busy);
	free(s->pend);
	free(s->last_alloc);
	free(s);
}

int vrt_replay_begin(struct vrt_replay *r, const struct vrt_trace *t)
{
	struct state *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	r->priv = s;
	s->r = r;
	s->t = t;
	s->free_obj = NONE;
	s->series_start = t->start_ns;
	s->series_width = 1;
	s->bucket = 0;
	s->bucket_end = t->start_ns < INT64_MAX ? t->start_ns + 1 : INT64_MAX;
	s->loading = 1;
	s->turn_deadline = INT64_MAX;
	s->last_load_ts = s->last_load_fail_ts = s->last_accept_ts = INT64_MIN;
	if (table_grow(s) || state_grow(s, t))
		return -1;
	return 0;
}

/* ---- the common case, inline ------------------------------------------ */

/*
 * Most events are allocations and frees of plain device pointers (device,
 * async, managed: one address space, no handles, no host memory). These
 * take a straight path here with the same effect as on_alloc/on_free +
 * count + charge/discharge, and their table entries carry what the free
 * needs (TAG_PTR), so no object is made. Anything unusual (an address
 * already live, a device outside the table, a standby snapshot entry, an
 * entry that is an object) goes the general way. The general path stays
 * the reference: both must agree.
 */

/* Per api id: 1 + its family when that is a plain pointer family, else
 * 0 (looked up once per event instead of two switches). */
#define VRT_X_PTRFAM(i, name, fam, op)                                         \
	[i] = ((fam) == VRT_FAM_DEVICE || (fam) == VRT_FAM_ASYNC ||            \
	       (fam) == VRT_FAM_MANAGED)                                       \
	              ? (fam) + 1                                              \
	              : 0,
static const uint8_t api_ptr_family[256] = {VRT_API_LIST(VRT_X_PTRFAM)};
#undef VRT_X_PTRFAM

/* Events between a table line's prefetch and its use (a power of
 * two). */
#define PREFETCH_AHEAD 8

/* The hash of e's key as a plain pointer, its table line prefetched. */
static inline uint32_t prefetch_slot(const struct state *s,
                                     const struct vrt_event *e)
{
	uint32_t h = hash_key(e->proc, SP_PTR, e->addr);

	__builtin_prefetch(&s->tab[h & (s->cap - 1)]);
	return h;
}

static inline unsigned ptr_family_of(uint16_t api)
{
	return api < 256 ? api_ptr_family[api] : 0;
}

/* The site of (dev, slot, stack): mostly the one this stack named last
 * on this device. NONE when out of memory. */
static inline uint32_t site_find(struct state *s, int32_t dev, uint32_t slot,
                                 uint32_t stack)
{
	size_t hint = (size_t)stack * SITE_HINTS +
	              ((uint32_t)dev & (SITE_HINTS - 1));
	uint32_t si = hint < s->nstack_site ? s->stack_site[hint] : NONE;

	/* A hint only ever names a site of its own stack. */
	if (LIKELY(si != NONE)) {
		const struct site *x = &s->sites[si];
		if (LIKELY(x->device == dev && x->slot == slot))
			return si;
	}
	return vrt_replay_site_get(s, dev, slot, stack);
}

/* 1 when handled, 0 to take the general path, -1 out of memory. The
 * state's arrays are read into locals first: the counters below are
 * uint64_t, which could alias the state's size_t fields, and would make
 * the compiler reload them after every store. */
static inline int fast_alloc(struct state *s, const struct vrt_event *e,
                             unsigned fam, uint32_t h)
{
	struct vrt_replay_device *d;
	struct vrt_counters *pc;
	struct devstate *ds;
	struct series_acc *a;
	struct site *x;
	struct slot *tab, *sl;
	uint32_t si, slot = vrt_replay_slot(e->phase), proc = e->proc;
	uint64_t size = e->size, addr = e->addr, tracked;
	int64_t ts = e->ts;
	int32_t dev = e->device;
	size_t i, mask;

	if (UNLIKELY((uint32_t)dev >= s->r->ndevices ||
	             (e->flags & VRT_EV_SNAP)))
		return 0;
	/* At most half full, as vrt_replay_table_put keeps it. */
	if (UNLIKELY(s->used >= s->grow_at) && table_grow(s))
		return -1;
	tab = s->tab;
	mask = s->cap - 1;
	for (i = h & mask; tab[i].tag != TAG_EMPTY; i = (i + 1) & mask)
		if (UNLIKELY(tab[i].addr == addr && tab[i].proc == proc &&
		             tab[i].space == SP_PTR))
			return 0; /* live already: its free was lost */
	si = site_find(s, dev, slot, e->stack); /* may move s->sites */
	if (UNLIKELY(si == NONE))
		return -1;
	s->used++;
	x = &s->sites[si];
	sl = &tab[i];
	sl->addr = addr;
	sl->size = size;
	sl->proc = proc;
	sl->hash = h;
	sl->ref = si;
	sl->space = SP_PTR;
	sl->tag = TAG_PTR;
	sl->family = (uint8_t)fam;
	d = x->d;
	ds = x->ds;
	pc = &d->phase[slot];
	/* as on_alloc: which devices each process allocated on */
	if (LIKELY(proc < s->r->nprocs && dev < 64))
		s->r->procs[proc].devices |= 1ull << dev;
	d->fam[fam].allocs++;
	vrt_replay_counters_add(&d->fam[fam], size, ts);
	if (x->epoch != ds->epoch) /* vrt_replay_site_touch */
		vrt_replay_site_snapshot(x, ds->epoch);
	x->bytes += size;
	x->allocs++;
	pc->allocs++;
	tracked = d->tracked_bytes + size;
	if (UNLIKELY(tracked < size))
		vrt_replay_peak_settle(
		        d, ds); /* wraps: no new peak (see charge) */
	vrt_replay_counters_add(pc, size, ts); /* vrt_replay_phase_add */
	ds->live[slot] = pc->live_bytes;
	d->tracked_bytes = tracked;
	if (tracked > d->peak_bytes)
		vrt_replay_dev_peak(d, ds, ts);
	if (UNLIKELY(s->single_on) && vrt_replay_slot_is_demand(slot))
		vrt_replay_single_note(s, (size_t)dev, ts);
	if (UNLIKELY(s->r->nwindows != 0))
		vrt_replay_series_window_note(s, dev, slot);
	a = &ds->acc;
	vrt_replay_range_up(a, slot, pc->live_bytes);
	/* vrt_replay_series_note */
	if (!a->active || tracked > a->max.total) {
		a->max.ts = ts;
		a->max.total = tracked;
		a->max_live = 1;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
	vrt_replay_alloc_noted(s, e, slot, (int)fam);
	return 1;
}

/* 1 when handled, 0 to take the general path. */
static inline int fast_free(struct state *s, const struct vrt_event *e,
                            uint32_t h)
{
	struct vrt_replay_device *d;
	struct vrt_counters *fc, *pc;
	struct devstate *ds;
	struct series_acc *a;
	struct slot *tab = s->tab, *sl;
	struct site *x;
	uint64_t size, addr = e->addr;
	uint32_t slot, proc = e->proc;
	size_t i, mask = s->cap - 1;

	if (UNLIKELY(!addr))
		return 0;
	for (i = h & mask;; i = (i + 1) & mask) {
		sl = &tab[i];
		if (UNLIKELY(sl->tag == TAG_EMPTY))
			return 0; /* unknown */
		if (sl->addr == addr && sl->proc == proc &&
		    sl->space == SP_PTR)
			break;
	}
	if (UNLIKELY(sl->tag != TAG_PTR))
		return 0; /* an object */
	size = sl->size;
	x = &s->sites[sl->ref];
	d = x->d;
	ds = x->ds;
	slot = x->slot;
	fc = &d->fam[sl->family];
	pc = &d->phase[slot];
	vrt_replay_table_remove_at(s, i);
	if (UNLIKELY(s->npend))
		vrt_replay_fail_pending_freed(s, proc, x->device, 0, size);
	fc->frees++;
	pc->frees++;
	vrt_replay_counters_sub(fc, size);
	if (x->epoch != ds->epoch) /* vrt_replay_site_touch */
		vrt_replay_site_snapshot(x, ds->epoch);
	x->bytes -= vrt_replay_sub_clamp(x->bytes, size);
	x->allocs--; /* >= 1: this entry is one of them */
	a = &ds->acc;
	if (UNLIKELY(a->max_live)) /* vrt_replay_dev_pre_fall */
		vrt_replay_series_copy_max(s, x->device);
	vrt_replay_peak_settle(d, ds);
	vrt_replay_counters_sub(pc, size); /* vrt_replay_phase_sub */
	ds->live[slot] = pc->live_bytes;
	d->tracked_bytes -= vrt_replay_sub_clamp(d->tracked_bytes, size);
	vrt_replay_range_down(a, slot, pc->live_bytes, d->tracked_bytes);
	/* vrt_replay_series_note: going down, so no new highest point once
	 * active */
	if (LIKELY(a->active)) {
		a->after_max = 1;
		a->last_ts = e->ts;
	} else {
		vrt_replay_series_note(s, x->device, e->ts);
	}
	return 1;
}

int vrt_replay_feed(struct vrt_replay *r, const struct vrt_trace *t,
                    const struct vrt_event *ev, size_t n)
{
	struct state *s = r->priv;
	uint32_t ahead[PREFETCH_AHEAD];
	size_t i;

	if (!s)
		return -1;
	s->t = t;
	if (state_grow(s, t))
		return -1;
	/* The table is larger than the first-level cache and each event
	 * lands at a random place in it: the line an event will probe is
	 * loaded PREFETCH_AHEAD events early, its key's hash kept for it. */
	for (i = 0; i < n && i < PREFETCH_AHEAD; i++)
		ahead[i] = prefetch_slot(s, &ev[i]);
	for (i = 0; i < n; i++) {
		const struct vrt_event *e = &ev[i];
		uint32_t h = ahead[i % PREFETCH_AHEAD];
		unsigned pf;
		int rc = 0;
		if (LIKELY(i + PREFETCH_AHEAD < n))
			ahead[i % PREFETCH_AHEAD] =
			        prefetch_slot(s, &ev[i + PREFETCH_AHEAD]);
		if (UNLIKELY(e->ts >= s->bucket_end))
			vrt_replay_series_tick(s, e->ts);
		if (UNLIKELY(e->ts > s->turn_deadline))
			vrt_replay_requests_expire(s, e->ts);
		pf = ptr_family_of(e->api);
		if (LIKELY(pf != 0)) {
			if (e->kind == VRT_EV_ALLOC)
				rc = fast_alloc(s, e, pf - 1, h);
			else if (e->kind == VRT_EV_FREE)
				rc = fast_free(s, e, h);
			if (UNLIKELY(rc < 0))
				return -1;
			if (LIKELY(rc))
				continue;
		}
		s->ts = e->ts;
		if (vrt_replay_events_one(s, e) || s->oom)
			return -1;
	}
	return 0;
}

int vrt_replay_end(struct vrt_replay *r, const struct vrt_trace *t)
{
	struct state *s = r->priv;
	int rc = -1;
	size_t i;

	if (!s)
		return -1;
	s->t = t;
	if (state_grow(s, t))
		goto out;
	vrt_replay_series_flush(s);
	if (s->oom)
		goto out;
	while (s->nbusy > VRT_REPLAY_SERIES_BUCKETS &&
	       s->series_width < INT64_MAX / 4)
		vrt_replay_series_widen(s);
	r->series_bucket_ns = s->series_width;
	for (i = 0; i < r->ndevices; i++) {
		vrt_replay_peak_settle(&r->dev[i], &s->devs[i]);
		r->dev[i].peak_at_snapshot =
		        s->devs[i].snap_peak &&
		        s->devs[i].snap_peak_ts == r->dev[i].peak_ts;
	}
	vrt_replay_requests_settle_ready(s);
	vrt_replay_requests_settle_inflight(s);
	vrt_replay_requests_settle_serving(s);
	vrt_replay_fail_classify(s, t);
	for (i = 0; i < r->nprocs && i < t->nprocs; i++)
		r->procs[i].started_in_standby = t->procs[i].started_in_standby;
	/* The last window runs to the end of the run. */
	if (r->nwindows && t->end_ns > r->windows[r->nwindows - 1].start_ts)
		r->windows[r->nwindows - 1].end_ts = t->end_ns;
	if (sites_collect(s))
		goto out;
	if (t->device_remap &&
	    remap_devices(r, t->device_remap, t->ndevices))
		goto out;
	rc = 0;
out:
	state_free(s);
	r->priv = NULL;
	return rc;
}

void vrt_replay_free(struct vrt_replay *r)
{
	size_t i;

	state_free(r->priv);
	for (i = 0; r->dev && i < r->ndevices; i++) {
		free(r->dev[i].series);
		free(r->dev[i].ranges);
	}
	free(r->inflight_series);
	free(r->paths);
	free(r->procs);
	free(r->dev);
	free(r->fails);
	free(r->marks);
	vrt_replay_series_windows_free(r);
	free(r->sites);
	memset(r, 0, sizeof(*r));
}
