/*
 * replay_fail.c — failed calls and their outcome (a part of the replay:
 * replay.c's opening block says how the whole works).
 *
 * Owns a failure's record (its device's budget at that moment, the
 * requests in flight, its stage), the pending failures that a successful
 * allocation for the same need soon after recovers (caching allocators
 * free their cache and retry), the driver's free and total bytes
 * (MEMINFO), and at the end which failure was fatal and which one was
 * decisive, from how each process and the run ended (the root processes
 * of the process tree).
 */
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Stage of a failure in phase slot: "request" once the server serves (a
 * request has begun), except while it loads: weights always load (a
 * model loaded on demand or swapped in after serving is a load again),
 * and after weights were loaded the reserves the engine sizes (KV cache,
 * profile run, graphs, communicators), or anything while no request is
 * in flight (a warm-up run), belong to that load until a request in
 * flight makes per-request allocations. A listening socket alone does
 * not end the load: servers listen before they load (llama-server
 * answers 503 meanwhile).
 */
static int stage_request(const struct state *s, uint32_t slot)
{
	if (!s->r->serving || slot == VRT_PHASE_weights)
		return 0;
	return !(s->loading &&
	         (!vrt_replay_slot_is_demand(slot) || !s->r->inflight));
}

/* Failures within this long of a successful allocation for the same
 * need were recovered: caching allocators free their cache and retry at
 * once (PyTorch's release_cached_blocks, llama.cpp's pool clear_pool). */
#define RECOVER_NS 10000000000LL

static int same_thread(uint32_t a, uint32_t b)
{
	return !a || !b || a == b;
}

/* An out-of-memory failure: it may yet be recovered. An earlier one of
 * the same thread still pending was not (the thread failed again). */
static int pending_fail(struct state *s, const struct vrt_replay_failure *f)
{
	size_t i;

	for (i = 0; i < s->npend;) {
		const struct pending *p = &s->pend[i];
		if (p->proc == f->proc && same_thread(p->tid, f->tid))
			s->pend[i] = s->pend[--s->npend];
		else
			i++;
	}
	if (s->npend == s->cappend) {
		size_t n = s->cappend ? s->cappend * 2 : 8;
		void *np = realloc(s->pend, n * sizeof(*s->pend));
		if (!np)
			return -1;
		s->pend = np;
		s->cappend = n;
	}
	s->pend[s->npend++] = (struct pending){
	        .fail = (size_t)(f - s->r->fails),
	        .proc = f->proc,
	        .tid = f->tid,
	        .device = f->device,
	        .host = vrt_replay_is_host_family(f->family),
	        .size = f->requested_bytes,
	        .ts = f->ts,
	};
	return 0;
}

NOINLINE void vrt_replay_fail_pending_alloc(struct state *s,
                                            const struct vrt_event *e, int fam)
{
	size_t i;

	for (i = 0; i < s->npend;) {
		struct pending *p = &s->pend[i];
		struct vrt_replay_failure *f = &s->r->fails[p->fail];
		if (e->ts - p->ts > RECOVER_NS) {
			s->pend[i] = s->pend[--s->npend]; /* too late */
			continue;
		}
		if (p->proc != e->proc || !same_thread(p->tid, e->tid) ||
		    p->host != vrt_replay_is_host_family(fam) ||
		    (!p->host && p->device != e->device) || e->size < p->size) {
			i++;
			continue;
		}
		f->recovered = 1;
		f->recovered_ts = e->ts;
		f->recovered_bytes = e->size;
		f->recovered_api = e->api;
		f->freed_bytes = p->freed;
		s->pend[i] = s->pend[--s->npend];
	}
}

/* Process proc freed bytes on device dev (-1: host): counted for its
 * pending failures there (what its allocator gave back to retry). */
NOINLINE void vrt_replay_fail_pending_freed(struct state *s, uint32_t proc,
                                   int32_t dev, int host, uint64_t bytes)
{
	size_t i;

	for (i = 0; i < s->npend; i++) {
		struct pending *p = &s->pend[i];
		if (p->proc == proc && p->host == host &&
		    (host || p->device == dev))
			p->freed += bytes;
	}
}

int vrt_replay_fail_event(struct state *s, const struct vrt_event *e)
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
	    !vrt_replay_is_host_family(fam) &&
	    vrt_api_op(e->api) == VRT_OP_FREE) {
		uint32_t o = vrt_replay_table_get(
		        s, e->proc, (uint8_t)vrt_replay_events_space_of(fam),
		        e->addr);
		if (o != NONE)
			f->device = s->objs[o].device;
	}
	f->api = e->api;
	f->family = fam;
	f->requested_bytes = e->size;
	f->addr = e->addr;
	f->error = (int64_t)e->aux;
	f->phase = vrt_replay_slot(e->phase);
	f->stack = e->stack;
	f->after_ready = stage_request(s, f->phase);
	f->inflight = r->inflight;
	f->inflight_inferred = s->inflight_inferred;
	f->uncounted = s->uncounted_open;
	/* Serving over connections whose requests cannot be counted: a
	 * per-request phase failing then is the request stage, with the
	 * number in flight unknown (not a warm-up). */
	if (!f->after_ready && f->uncounted && !r->serving &&
	    f->phase != VRT_PHASE_weights &&
	    vrt_replay_slot_is_demand(f->phase))
		f->after_ready = 1;
	if (!vrt_replay_slot_is_demand(f->phase) && e->aux == 2 &&
	    e->ts > s->last_load_fail_ts)
		s->last_load_fail_ts = e->ts;
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
		const struct devstate *ds = &s->devs[f->device];
		unsigned k;
		const struct vrt_counters *as =
		        &r->dev[f->device].fam[VRT_FAM_ASYNC];
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			f->live_by_phase[k] =
			        r->dev[f->device].phase[k].live_bytes;
		f->pool_kept_max = as->peak_bytes > as->live_bytes
		                           ? as->peak_bytes - as->live_bytes
		                           : 0;
		f->demand_bytes = vrt_replay_demand_level(ds);
		f->idle_demand_bytes =
		        r->inflight ? ds->idle_demand : f->demand_bytes;
		f->serve_demand_bytes = ds->serve_demand < f->idle_demand_bytes
		                                ? ds->serve_demand
		                                : f->idle_demand_bytes;
	}
	if (f->oom && pending_fail(s, f))
		return -1;
	if (fam < 0 || fam == VRT_FAM_NONE)
		return 0;
	if (vrt_replay_is_host_family(fam)) {
		r->host[fam].failed++;
	} else if (f->device >= 0 && (size_t)f->device < r->ndevices) {
		r->dev[f->device].fam[fam].failed++;
		if (vrt_replay_is_vram(fam))
			r->dev[f->device]
			        .phase[vrt_replay_slot(e->phase)]
			        .failed++;
	}
	return 0;
}

void vrt_replay_fail_meminfo(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay_device *d;
	uint64_t used, held;

	if (e->device < 0 || (size_t)e->device >= s->r->ndevices)
		return;
	d = &s->r->dev[e->device];
	/* An attached process's probes count once its snapshot says what
	 * it held: before, the driver's used bytes include what it held
	 * before the attach, which is no other process's. */
	if (e->proc < s->t->nprocs && s->t->procs[e->proc].attached &&
	    !(e->proc < s->r->nprocs && s->r->procs[e->proc].have_snapshot))
		return;
	/* The first probe: a fact kept in standby may arrive after a later
	 * one. */
	if (d->have_baseline && e->ts >= d->baseline_ts)
		return;
	d->have_baseline = 1;
	d->baseline_ts = e->ts;
	d->probe_total_bytes = e->size;
	used = e->size >= e->addr ? e->size - e->addr : 0;
	/* What the driver counts as used beyond our live bytes was there
	 * before us (or is driver overhead); never negative. A kept probe
	 * carries what its process held then (the trace never saw those
	 * allocations). */
	held = (e->flags & VRT_EV_PAST) ? e->aux : d->tracked_bytes;
	d->baseline_used_bytes = used > held ? used - held : 0;
}

/* ---- fatal and recovered failures ------------------------------------ */

enum end_kind { END_UNKNOWN = 0, END_DIED = 1, END_LIVED = 2 };

/* How process p ended: its exit status (vramtrace record writes it for
 * the command it started), else a trace cut short (no TRAILER: killed);
 * a TRAILER alone says the exit path ran, not with which status. */
static int proc_end(const struct vrt_process *p)
{
	if (p->exit_kind == VRT_EXIT_SIGNAL ||
	    (p->exit_kind == VRT_EXIT_CODE && p->exit_code != 0))
		return END_DIED;
	if (p->exit_kind == VRT_EXIT_CODE)
		return END_LIVED;
	/* a process still recording has not ended at all */
	return p->truncated && !p->running ? END_DIED : END_UNKNOWN;
}

/* How the run ended: as its root processes (parent not in the run). */
static int run_end(const struct vrt_trace *t)
{
	int end = END_UNKNOWN;
	size_t i, k;

	for (i = 0; i < t->nprocs; i++) {
		int root = 1, e;
		for (k = 0; k < t->nprocs && root; k++)
			if (k != i && t->procs[k].pid == t->procs[i].ppid)
				root = 0;
		if (!root)
			continue;
		e = proc_end(&t->procs[i]);
		if (e == END_DIED)
			return END_DIED;
		if (e == END_LIVED)
			end = END_LIVED;
	}
	return end;
}

/*
 * Marks each process's fatal failure: the last out-of-memory failure it
 * did not recover from, when the process died (signal, non-zero exit,
 * trace cut short), or its end is unknown and the run died, or nothing
 * tells and the process allocated nothing after it. The decisive failure
 * is the earliest fatal one (the first to break; the others may follow
 * from it), else the earliest unrecovered one (a failure the program saw
 * and survived).
 */
void vrt_replay_fail_classify(struct state *s, const struct vrt_trace *t)
{
	struct vrt_replay *r = s->r;
	int run = run_end(t);
	size_t i, k;

	r->decisive = SIZE_MAX;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		int end;
		if (!f->oom)
			continue;
		if (f->recovered) {
			r->recovered++;
			continue;
		}
		for (k = i + 1; k < r->nfails; k++)
			if (r->fails[k].oom && !r->fails[k].recovered &&
			    r->fails[k].proc == f->proc)
				break;
		if (k < r->nfails) /* not the process's last */
			continue;
		end = f->proc < t->nprocs ? proc_end(&t->procs[f->proc])
		                          : END_UNKNOWN;
		f->fatal = end == END_DIED ||
		           (end == END_UNKNOWN &&
		            (run == END_DIED ||
		             (run == END_UNKNOWN &&
		              (f->proc >= s->nprocs ||
		               s->last_alloc[f->proc] <= f->ts))));
	}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].fatal) {
			r->decisive = i;
			return;
		}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].oom && !r->fails[i].recovered) {
			r->decisive = i;
			return;
		}
}
