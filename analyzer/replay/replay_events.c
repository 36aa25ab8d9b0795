/*
 * replay_events.c — the general path of the replay (a part of it:
 * replay.c's opening block says how the whole works).
 *
 * Owns every event the common path (replay.c) does not take and what
 * only they do to the budgets: charging and discharging an allocation of
 * any family to its device, phase and site, host pinned and registered
 * memory, reserved address space, VMM handles and their mappings (a
 * handle's bytes stay charged until it is released and every mapping of
 * it is gone), the standby snapshots (the state at that moment replaces
 * what the process held) and the PAST facts, PREFREE, REPEAT, and the
 * dispatch of the other kinds to their parts (failures, requests, marks).
 * The common path must agree with this one (test_replay.c checks both
 * against a model).
 */
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void charge(struct state *s, struct obj *o, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;
	struct devstate *ds;
	struct site *x;

	if (vrt_replay_is_host_family(o->family)) {
		vrt_replay_counters_add(&r->host[o->family], o->size, ts);
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
	vrt_replay_counters_add(&d->fam[o->family], o->size, ts);
	if (!vrt_replay_is_vram(o->family))
		return;
	if (o->site == NONE) {
		o->site = vrt_replay_site_get(s, o->device, o->slot, o->stack);
		if (o->site == NONE) {
			s->oom = 1;
			return;
		}
	}
	ds = &s->devs[o->device];
	x = &s->sites[o->site];
	vrt_replay_site_touch(s, x, o->device);
	x->bytes += o->size;
	x->allocs++;
	/* Tracked bytes that wrap are no new peak: settle the last one. */
	if (UNLIKELY(d->tracked_bytes + o->size < o->size))
		vrt_replay_peak_settle(d, ds);
	vrt_replay_phase_add(d, ds, o->slot, o->size, ts);
	o->charged = 1;
	d->tracked_bytes += o->size;
	if (d->tracked_bytes > d->peak_bytes)
		vrt_replay_dev_peak(d, ds, ts);
	if (s->single_on && vrt_replay_slot_is_demand(o->slot))
		vrt_replay_single_note(s, (size_t)o->device, ts);
	if (r->nwindows)
		vrt_replay_series_window_note(s, o->device, o->slot);
	vrt_replay_range_up(&ds->acc, o->slot, ds->live[o->slot]);
	vrt_replay_series_note(s, o->device, ts);
}

static void discharge(struct state *s, struct obj *o)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;
	struct site *x;

	if (vrt_replay_is_host_family(o->family)) {
		vrt_replay_counters_sub(&r->host[o->family], o->size);
		r->host_pinned_bytes -= r->host_pinned_bytes >= o->size
		                                ? o->size
		                                : r->host_pinned_bytes;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	vrt_replay_counters_sub(&d->fam[o->family], o->size);
	if (!vrt_replay_is_vram(o->family) || !o->charged)
		return;
	x = &s->sites[o->site];
	vrt_replay_site_touch(s, x, o->device);
	x->bytes -= x->bytes >= o->size ? o->size : x->bytes;
	x->allocs -= x->allocs ? 1 : 0;
	vrt_replay_dev_pre_fall(s, o->device);
	vrt_replay_phase_sub(d, &s->devs[o->device], o->slot, o->size);
	o->charged = 0;
	d->tracked_bytes -=
	        d->tracked_bytes >= o->size ? o->size : d->tracked_bytes;
	vrt_replay_range_down(&s->devs[o->device].acc, o->slot,
	           s->devs[o->device].live[o->slot], d->tracked_bytes);
	vrt_replay_series_note(s, o->device, s->ts);
}

/* Counts n allocs or frees against the family (and phase) of o. */
static inline void count(struct state *s, const struct obj *o, int is_free,
                  uint64_t n)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;

	if (vrt_replay_is_host_family(o->family)) {
		if (is_free)
			r->host[o->family].frees += n;
		else
			r->host[o->family].allocs += n;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	if (is_free) {
		d->fam[o->family].frees += n;
		if (vrt_replay_is_vram(o->family))
			d->phase[o->slot].frees += n;
	} else {
		d->fam[o->family].allocs += n;
		if (vrt_replay_is_vram(o->family))
			d->phase[o->slot].allocs += n;
	}
}

int vrt_replay_events_space_of(int fam)
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
		vrt_replay_obj_free(s, h);
	}
}

static void mapping_drop(struct state *s, uint32_t m)
{
	uint32_t h = s->objs[m].handle;

	vrt_replay_obj_free(s, m);
	s->nmappings--;
	handle_unref(s, h);
}

/* Removes process proc's open connections and HTTP requests (and, with
 * annotated, its annotated requests) from the table; those that were
 * requests in flight stop counting. */
void vrt_replay_events_drop_open(struct state *s, uint32_t proc, int annotated,
                      int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t dropped = 0;
	size_t i;

	for (i = 0; i < s->cap; i++) {
		struct slot *sl = &s->tab[i];
		if (sl->tag == TAG_EMPTY || sl->proc != proc ||
		    (sl->space != SP_CONN && sl->space != SP_HREQ &&
		     (!annotated || sl->space != SP_REQ)))
			continue;
		/* A newer writer's connection is no request itself. */
		if (sl->space != SP_CONN || sl->ref == CONN_LEGACY)
			dropped++;
		if (sl->space == SP_CONN && sl->ref != CONN_LEGACY &&
		    (sl->ref & CF_UNCOUNTED) && s->uncounted_open)
			s->uncounted_open--;
		vrt_replay_table_remove_at(s, i);
		i--; /* backward shift may have moved an entry here */
	}
	for (i = s->nturns; i-- > 0;)
		if (s->turns[i].proc == proc) {
			s->turns[i] = s->turns[--s->nturns];
			if (s->inflight_inferred)
				s->inflight_inferred--;
		}
	vrt_replay_requests_deadline(s);
	for (i = s->nstreams; i-- > 0;)
		if (s->streams[i].proc == proc)
			s->streams[i] = s->streams[--s->nstreams];
	if (!dropped)
		return;
	r->inflight -= r->inflight >= dropped ? dropped : r->inflight;
	vrt_replay_requests_changed(s, ts);
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
		n += s->tab[i].tag != TAG_EMPTY && s->tab[i].proc == proc &&
		     s->tab[i].space <= SP_MAP;
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -1;
	for (i = 0, k = 0; i < s->cap; i++)
		if (s->tab[i].tag != TAG_EMPTY && s->tab[i].proc == proc &&
		    s->tab[i].space <= SP_MAP)
			keys[k++] = (struct key){s->tab[i].addr, s->tab[i].space};
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if ((keys[i].space == SP_MAP) != (pass == 0))
				continue;
			uint32_t o = vrt_replay_table_take(
			        s, proc, keys[i].space, keys[i].addr);
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
			vrt_replay_obj_free(s, o);
		}
	}
	free(keys);
	return 0;
}

/* A snapshot's before_attach allocation: where PREFREE events of its
 * process and device find it. 0, or -1 when out of memory. */
static int remember_before(struct state *s, const struct vrt_event *e)
{
	struct before_at b = {e->proc, e->device, e->addr};
	size_t i;

	for (i = 0; i < s->nbefore; i++)
		if (s->before[i].proc == e->proc &&
		    s->before[i].device == e->device) {
			s->before[i] = b;
			return 0;
		}
	return vrt_replay_push((void **)&s->before, &s->nbefore, &b, sizeof(b));
}

static int on_alloc(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o, old;
	struct obj *ob;

	/* A snapshot entry that is already live here was recorded as a
	 * call: keep that one. */
	if ((e->flags & VRT_EV_SNAP) &&
	    vrt_replay_table_get(s, e->proc,
	                         (uint8_t)vrt_replay_events_space_of(fam),
	                         e->addr) != NONE)
		return 0;
	o = vrt_replay_obj_new(s);
	if (o == NONE)
		return -1;
	ob = &s->objs[o];
	ob->size = e->size;
	ob->device = e->device;
	ob->slot = vrt_replay_slot(e->phase);
	ob->stack = e->stack;
	ob->family = (uint8_t)fam;
	ob->kind = fam == VRT_FAM_VMM ? OBJ_HANDLE : OBJ_ALLOC;
	if (vrt_replay_table_put(s, e->proc,
	                         (uint8_t)vrt_replay_events_space_of(fam),
	                         e->addr, o, &old))
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
				vrt_replay_obj_free(s, old);
			}
		} else {
			discharge(s, p);
			vrt_replay_obj_free(s, old);
		}
	}
	ob = &s->objs[o];
	if (!(e->flags & VRT_EV_SNAP))
		count(s, ob, 0, 1);
	else if (ob->slot == VRT_LOAD_PHASE_BEFORE_ATTACH && e->addr < 4096 &&
	         remember_before(s, e))
		return -1;
	/* which devices each process allocated on (misplaced ranks) */
	if (e->proc < s->r->nprocs && e->device >= 0 && e->device < 64 &&
	    vrt_replay_family_is_vram(fam))
		s->r->procs[e->proc].devices |= 1ull << e->device;
	charge(s, ob, e->ts);
	if ((e->flags & VRT_EV_SNAP) && ob->charged && ob->device >= 0 &&
	    (size_t)ob->device < s->r->ndevices) {
		const struct vrt_replay_device *d = &s->r->dev[ob->device];
		struct devstate *ds = &s->devs[ob->device];
		ds->snap_touched = 1;
		/* The peak is what the snapshot found: a lower bound. */
		if (d->peak_ts == e->ts && d->peak_bytes == d->tracked_bytes) {
			ds->snap_peak = 1;
			ds->snap_peak_ts = e->ts;
		}
	}
	if (fam != VRT_FAM_VA && !(e->flags & VRT_EV_SNAP))
		vrt_replay_alloc_noted(s, e, vrt_replay_slot(e->phase), fam);
	return 0;
}

static void on_free(struct state *s, const struct vrt_event *e, int fam);

/* PREFREE: a free of memory an attached process held before the attach.
 * The snapshot's allocation of that address when there is one; else the
 * driver's size of it comes off the process's before_attach allocation on
 * the device (trace_format.h). */
static void on_prefree(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o = NONE;
	struct obj *ob;
	uint64_t take;
	size_t i;

	if (vrt_replay_table_get(s, e->proc,
	                         (uint8_t)vrt_replay_events_space_of(fam),
	                         e->addr) != NONE) {
		on_free(s, e, fam);
		return;
	}
	for (i = 0; i < s->nbefore && o == NONE; i++)
		if (s->before[i].proc == e->proc &&
		    s->before[i].device == e->device)
			o = vrt_replay_table_get(s, e->proc, SP_PTR,
			                         s->before[i].addr);
	if (o == NONE) {
		s->r->unmatched_frees++;
		return;
	}
	ob = &s->objs[o];
	count(s, ob, 1, 1);
	take = e->size < ob->size ? e->size : ob->size;
	discharge(s, ob);
	ob->size -= take;
	charge(s, ob, e->ts);
}

/* SNAPSHOT end: the devices it named hold what the run held then. */
static void snapshot_done(struct state *s, int64_t ts)
{
	size_t i;

	for (i = 0; i < s->r->ndevices; i++) {
		struct vrt_replay_device *d = &s->r->dev[i];
		if (!s->devs[i].snap_touched)
			continue;
		s->devs[i].snap_touched = 0;
		d->have_snapshot = 1;
		d->snapshot_bytes = d->tracked_bytes;
		d->snapshot_ts = ts;
	}
}

static int on_snapshot(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct mode_change m = {e->ts, e->proc, e->aux == 1};

	if (e->aux == 2) {
		snapshot_done(s, e->ts);
		return 0;
	}
	if (e->aux != 1 && e->aux != 3)
		return 0;
	if (vrt_replay_push((void **)&s->modes, &s->nmodes, &m, sizeof(m)))
		return -1;
	if (e->aux == 3) /* recording stops: standby from here */
		return 0;
	/* Recording starts late only where a process began in standby: a
	 * snapshot after `ctl stop` (or an allocation refused in standby
	 * then) continues a recording that began with the process. */
	if (e->proc < s->t->nprocs && s->t->procs[e->proc].started_in_standby &&
	    (!r->have_recording_start || e->ts < r->recording_start_ts)) {
		r->have_recording_start = 1;
		r->recording_start_ts = e->ts;
	}
	if (e->proc < r->nprocs) {
		struct vrt_replay_proc *p = &r->procs[e->proc];
		if (!p->have_snapshot) {
			p->have_snapshot = 1;
			p->first_snapshot_ts = e->ts;
		}
		p->snapshots++;
	}
	/* Its connections and requests are the snapshot's (closes it
	 * missed in standby). */
	vrt_replay_events_drop_open(s, e->proc, 1, e->ts);
	return snapshot_reset(s, e->proc);
}

static void on_free(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o;
	struct obj *ob;

	/* cudaFree(0) reaches the driver as cuMemFree_v2(0): a no-op. */
	if (e->addr == 0)
		return;
	o = vrt_replay_table_take(
	        s, e->proc, (uint8_t)vrt_replay_events_space_of(fam), e->addr);
	if (o == NONE) {
		s->r->unmatched_frees++;
		return;
	}
	ob = &s->objs[o];
	count(s, ob, 1, 1);
	if (ob->kind == OBJ_HANDLE) {
		ob->released = 1;
		if (ob->refs)
			return; /* bytes stay until the last unmap */
	}
	if (s->npend && ob->family != VRT_FAM_VA)
		vrt_replay_fail_pending_freed(s, e->proc, ob->device,
		              vrt_replay_is_host_family(ob->family), ob->size);
	discharge(s, ob);
	vrt_replay_obj_free(s, o);
}

static int on_map(struct state *s, const struct vrt_event *e)
{
	uint32_t h = vrt_replay_table_get(s, e->proc, SP_HANDLE, e->aux);
	uint32_t m = vrt_replay_obj_new(s), old;

	if (m == NONE)
		return -1;
	s->objs[m].kind = OBJ_MAPPING;
	s->objs[m].size = e->size;
	s->objs[m].handle = h;
	if (vrt_replay_table_put(s, e->proc, SP_MAP, e->addr, m, &old))
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
		uint32_t m = vrt_replay_table_take(s, e->proc, SP_MAP, cur);
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
			/* mappings are always objects (TAG_OBJ) */
			if (sl->tag == TAG_EMPTY || sl->space != SP_MAP ||
			    sl->proc != e->proc || sl->addr < lo ||
			    sl->addr >= hi)
				continue;
			uint32_t m = sl->ref;
			vrt_replay_table_remove_at(s, i);
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

/* A REPEAT: addr allocate-then-free pairs like an ALLOC of these fields,
 * each freed before the next; their bytes were live only momentarily, so
 * they count once on top of what is live now (a peak, the sites at it,
 * a timeline's highest point), then are gone. */
static int on_repeat(struct state *s, const struct vrt_event *e, int fam)
{
	struct obj o;

	if (!e->addr)
		return 0;
	memset(&o, 0, sizeof(o));
	o.size = e->size;
	o.device = e->device;
	o.slot = vrt_replay_slot(e->phase);
	o.stack = e->stack;
	o.family = (uint8_t)fam;
	o.kind = fam == VRT_FAM_VMM ? OBJ_HANDLE : OBJ_ALLOC;
	o.handle = NONE;
	o.site = NONE;
	count(s, &o, 0, e->addr);
	count(s, &o, 1, e->addr);
	charge(s, &o, e->ts);
	if (s->oom)
		return -1;
	discharge(s, &o);
	return 0;
}

NOINLINE int vrt_replay_events_one(struct state *s, const struct vrt_event *e)
{
	int fam = vrt_api_family(e->api);

	switch (e->kind) {
	case VRT_EV_ALLOC:
		return fam < 0 || fam == VRT_FAM_NONE ? 0 : on_alloc(s, e, fam);
	case VRT_EV_FREE:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_free(s, e, fam);
		return 0;
	case VRT_EV_REPEAT:
		return fam < 0 || fam == VRT_FAM_NONE ? 0
		                                      : on_repeat(s, e, fam);
	case VRT_EV_MAP:
		return fam < 0 || fam == VRT_FAM_NONE ? 0 : on_map(s, e);
	case VRT_EV_UNMAP:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_unmap(s, e);
		return 0;
	case VRT_EV_PREFREE:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_prefree(s, e, fam);
		return 0;
	case VRT_EV_NET:
		return vrt_replay_requests_net(s, e);
	case VRT_EV_REQUEST:
		if (e->aux != 1 && e->aux != 2)
			return 0;
		if (e->flags & VRT_EV_PAST) {
			if (e->aux == 1)
				vrt_replay_requests_first(s->r, e->ts);
			return 0;
		}
		if (e->proc < s->nprocs && !s->uses_requests[e->proc])
			vrt_replay_requests_use(s, e->proc, e->ts);
		if (e->aux == 1 && !(e->flags & VRT_EV_SNAP))
			vrt_replay_requests_first(s->r, e->ts);
		return vrt_replay_requests_edge(s, e, SP_REQ, e->aux == 1);
	case VRT_EV_MARK:
		return vrt_replay_series_mark(s, e);
	case VRT_EV_SNAPSHOT:
		return on_snapshot(s, e);
	case VRT_EV_FAIL:
		return vrt_replay_fail_event(s, e);
	case VRT_EV_MEMINFO:
		vrt_replay_fail_meminfo(s, e);
		return 0;
	}
	return 0; /* PROC, SAMPLE, kinds from a newer loader */
}
