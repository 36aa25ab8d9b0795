/*
 * load_deliver.c — the merge that delivers the events (a part of the
 * loader: load.c's opening block says how the whole works).
 *
 * Owns vrt_load_next's loop: the run that sorts first in the heap gives
 * its events up to the next run's (and below the lowest watermark of the
 * files still read; another frame of that file is read when the heap
 * cannot go on). And the decoding, when they are delivered, of the
 * records a RUN_RAW leaves encoded in its frame, in the formats before
 * BATCH: ALLOC and FREE (every version), REPEAT, ALLOC_C and FREE_C with
 * the chunk's compact state (version 2 on; packed address deltas from
 * version 3); a BATCH record inside a run goes to load_batch.c. Also the copy-out of a
 * RUN_EV's events, decoded when read. Only here are the fields of ALLOC,
 * FREE and REPEAT records read and checked; every event leaves resolved
 * (vrt_load_resolve_event) and aligned to the first host's clock.
 */
#include "load_internal.h"

#include <string.h>

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

	count = vrt_load_uv(&p, &bad);
	(void)vrt_load_uv(&p, &bad); /* span: not kept */
	period = vrt_load_uv(&p, &bad);
	if (bad || p > pe || period < 1 || period > VRT_REPEAT_MAX_PERIOD)
		goto malformed;
	for (k = 0; k < period; k++) {
		struct vrt_event e;
		uint64_t api, fapi, sid, ph, nk;
		api = vrt_load_uv(&p, &bad);
		fapi = vrt_load_uv(&p, &bad);
		e.device = vrt_load_raw_device(
		        vrt_unzigzag(vrt_load_uv(&p, &bad)));
		(void)vrt_load_uv(&p, &bad); /* free device: the alloc's */
		e.size = vrt_load_uv(&p, &bad);
		e.aux = vrt_load_uv(&p, &bad);
		(void)vrt_load_uv(&p, &bad); /* free aux: not kept */
		sid = vrt_load_uv(&p, &bad);
		ph = vrt_load_uv(&p, &bad);
		if (bad || p > pe)
			goto malformed;
		if (api > VRT_API_MAX || fapi > VRT_API_MAX) {
			st = vrt_load_rec_error_at(f, r->fb->frame_off, err,
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
		st = vrt_load_resolve_event(t, f, &e, err);
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
	return vrt_load_rec_error_at(f, r->fb->frame_off, err,
	                    (uint64_t)(rec - r->fb->data),
	                    "short event record");
}

/* The address delta of an ALLOC_C or FREE_C (packed from version 3). */
static inline uint64_t addr_delta(uint64_t raw, int v3)
{
	return v3 ? (uint64_t)vrt_unpack_s(raw) : (uint64_t)vrt_unzigzag(raw);
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
		plen = vrt_load_uv(&p,
		                   &bad); /* checked when the frame was read */
		pe = p + plen;
		if (__builtin_expect(!vrt_load_lazy_type(type, f->version),
		                     0)) {
			p = pe; /* metadata read with the frame */
			memset(&cs, 0, sizeof(cs)); /* resets the state */
			continue;
		}
		if (type == VRT_REC_BATCH) {
			int fin;
			st = vrt_load_batch_emit(t, r, rec, p, pe, clock, out,
			                         max, &n, lim, eq, &last,
			                         &have_last, &late, &fin, err);
			if (st || !fin) {
				p = rec; /* resumed at this record */
				break;
			}
			clock = r->bc.after;
			memset(&cs, 0, sizeof(cs)); /* resets the state */
			p = pe;
			continue;
		}
		dts = vrt_load_uv(&p, &bad);
		ts = clock;
		(void)vrt_load_chunk_time(&ts, dts);
		tsx = shift ? vrt_load_sat_add(ts, shift) : ts;
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
			vrt_load_note_time(tsx, &last, &have_last, &late);
			clock = ts;
			p = pe;
			continue;
		}
		e->extra = 0;
		switch (type) {
		case VRT_REC_ALLOC_C:
			cs.addr += addr_delta(vrt_load_uv(&p, &bad), v3);
			e->addr = cs.addr;
			e->size = vrt_load_uv(&p, &bad);
			if (v3)
				e->size = vrt_unpack_u(e->size);
			sid = vrt_load_uv(&p, &bad);
			api = cs.a.api;
			e->device = (int32_t)cs.a.device;
			e->aux = cs.a.aux;
			ph = cs.a.phase;
			e->kind = VRT_EV_ALLOC;
			e->flags = snap;
			bad |= !cs.a.have;
			break;
		case VRT_REC_FREE_C:
			cs.addr += addr_delta(vrt_load_uv(&p, &bad), v3);
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
			api = vrt_load_uv(&p, &bad);
			e->device = vrt_load_raw_device(
			        vrt_unzigzag(vrt_load_uv(&p, &bad)));
			e->addr = vrt_load_uv(&p, &bad);
			if (type == VRT_REC_ALLOC) {
				e->size = vrt_load_uv(&p, &bad);
				e->kind = VRT_EV_ALLOC;
				e->flags = snap;
			} else {
				e->size = 0;
				e->kind = VRT_EV_FREE;
				e->flags = 0;
			}
			e->aux = vrt_load_uv(&p, &bad);
			sid = vrt_load_uv(&p, &bad);
			ph = vrt_load_uv(&p, &bad);
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
			st = vrt_load_rec_error_at(f, r->fb->frame_off, err,
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
			st = vrt_load_rec_error_at(f, r->fb->frame_off, err,
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
		} else if (vrt_load_resolve_fast(f, e)) {
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
			st = vrt_load_tables_resolve(t, f, e, err);
			if (st)
				break;
		}
		vrt_load_note_time(tsx, &last, &have_last, &late);
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

/* emit_raw for a RUN_EV: its events are decoded, only copied,
 * resolved and aligned on the way out. */
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
		int64_t tsx = vrt_load_sat_add(s->ts, f->shift);
		struct vrt_event *o;
		if (n == max || tsx > lim || (tsx == lim && !eq)) {
			r->key = tsx;
			break;
		}
		o = &out[n];
		*o = *s;
		o->ts = tsx;
		st = vrt_load_resolve_event(t, f, o, err);
		if (st)
			break;
		if (o->kind == VRT_EV_SAMPLE && o->extra < t->nsamples) {
			struct vrt_sample *smp = &t->samples[o->extra];
			smp->ts = o->ts;
			smp->proc = o->proc;
			smp->device = o->device;
		}
		vrt_load_delivered(L, t, o);
		r->pos++;
		n++;
	}
	*done = r->pos == r->nev;
	*np = n;
	return st;
}

/* ---- the merge ---------------------------------------------------------- */

/*
 * The merge: fills out[0, max) with the next events in time order, run
 * after run while each sorts before the next (reading another frame of
 * the file whose watermark holds them back), *n how many; the end of the
 * stream in a call of its own. vrt_load_next's work, after its checks.
 */
enum vrt_load_status vrt_load_deliver_next(struct lstate *L,
                                           struct vrt_trace *t,
                                           struct vrt_event *out, size_t max,
                                           size_t *n,
                                           struct vrt_load_error *err)
{
	enum vrt_load_status st = VRT_LOAD_OK;
	size_t got = 0, counted = 0, i;

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
			w = vrt_load_sat_add(f->relw, f->shift);
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
				st = vrt_load_step(L, t, slow, err);
				if (st)
					return st;
				continue;
			}
			/* The end: told in a call of its own, so no event of
			 * this call names a device index that moved. */
			if (!got) {
				st = vrt_load_finish_stream(L, t, err);
				if (st)
					return st;
			}
			break;
		}
		r = L->heap[0];
		if (L->nheap > 1)
			s = L->heap[1];
		if (L->nheap > 2 && vrt_load_run_before(L->heap[2], s))
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
			st = emit_raw(L, t, r, out, max, &got, lim,
			                          eq, &done, err);
		else
			st = emit_ev(L, t, r, out, max, &got, lim,
			                         eq, &done, err);
		if (st)
			return st;
		if (done) {
			L->heap[0] = L->heap[--L->nheap];
			vrt_load_run_free(L, r);
		}
		if (L->nheap)
			vrt_load_heap_down(L->heap, L->nheap, 0);
	}
	t->events_total += got;
	L->held -= got - counted < L->held ? got - counted : L->held;
	*n = got;
	return VRT_LOAD_OK;
}
