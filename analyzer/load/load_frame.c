/*
 * load_frame.c — reads the records of one decoded frame (a part of the
 * loader: load.c's opening block says how the whole works).
 *
 * Owns the HEADER (the process), the events decoded as soon as they are
 * read because they add to tables in record order (MAP, UNMAP, FAIL,
 * MEMINFO, PREFREE; MARK, NET, PROC, REQUEST, SAMPLE, SNAPSHOT), which go
 * into RUN_EV runs, and the cutting of a chunk's ALLOC, FREE, REPEAT,
 * ALLOC_C, FREE_C and BATCH records into RUN_RAW runs that stay encoded
 * in the frame: those are only counted and timed here (their fields are
 * read when delivered, load_deliver.c and load_batch.c). The metadata
 * records go to load_tables.c; CHUNK, WATERMARK and PAST are followed
 * here.
 */
#include "load_internal.h"
#include "array.h"
#include "intern.h"
#include "tracedir.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	version = vrt_load_get_u(c);
	if (c->bad)
		return vrt_load_rec_error(f, err, roff, "short HEADER");
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
		return vrt_load_nomem(f, err, "header");
	pr = &t->procs[t->nprocs];
	memset(pr, 0, sizeof(*pr));
	f->proc = t->nprocs++;
	f->have_header = 1;
	pr->path = strdup(f->name);
	pr->pid = vrt_load_get_u(c);
	pr->ppid = vrt_load_get_u(c);
	pr->start_wall_ns = (int64_t)vrt_load_get_u(c);
	pr->start_mono_ns = (int64_t)vrt_load_get_u(c);
	uint64_t hflags = vrt_load_get_u(c);
	pr->started_in_standby = (hflags & VRT_HEADER_STANDBY) != 0;
	pr->attached = (hflags & VRT_HEADER_ATTACHED) != 0;
	n = vrt_load_get_str(c, &s);
	pr->host = vrt_load_dup_bytes(s, n);
	n = vrt_load_get_str(c, &s);
	pr->exe = vrt_load_dup_bytes(s, n);
	argc = vrt_load_get_u(c);
	if (c->bad)
		return vrt_load_rec_error(f, err, roff, "short HEADER");
	/* Each argument takes at least one byte: bound argc by the payload. */
	if (argc > (uint64_t)(c->end - c->p))
		return vrt_load_rec_error(f, err, roff,
		                 "HEADER argc larger than the record");
	pr->argv = calloc(argc + 1, sizeof(char *));
	if (!pr->path || !pr->host || !pr->exe || !pr->argv)
		return vrt_load_nomem(f, err, "header");
	for (i = 0; i < argc; i++) {
		n = vrt_load_get_str(c, &s);
		if (c->bad)
			return vrt_load_rec_error(f, err, roff,
			                          "short HEADER argv");
		pr->argv[i] = vrt_load_dup_bytes(s, n);
		if (!pr->argv[i])
			return vrt_load_nomem(f, err, "header");
		pr->argc = i + 1;
	}
	if (!f->is_buf) {
		vrt_tracedir_read_exit(pr);
		vrt_tracedir_read_running(pr);
	}
	return VRT_LOAD_OK;
}

/* The chunk time at rec: the times of the hot records between f->ts_at
 * and rec are added now (the frame was checked up to rec already). */
static int64_t clock_at(struct lfile *f, const uint8_t *rec)
{
	const uint8_t *p = f->ts_at;
	int bad = 0;

	while (p && p < rec) {
		unsigned type = *p++;
		uint64_t plen = vrt_load_uv(&p, &bad);
		const uint8_t *q = p;
		if (vrt_load_lazy_type(type, f->version))
			(void)vrt_load_chunk_time(&f->ts,
			                          vrt_load_uv(&q, &bad));
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

	if (vrt_load_close_raw(L, f, rec))
		return vrt_load_nomem(f, err, "events");
	if (!f->eseg && !(f->eseg = vrt_load_run_new(L, f, RUN_EV)))
		return vrt_load_nomem(f, err, "events");
	r = f->eseg;
	if (vrt_array_grow((void **)&r->evs, &r->cap, r->nev + 1,
	                   sizeof(*r->evs)))
		return vrt_load_nomem(f, err, "events");
	(void)clock_at(f, rec);
	e->ts = vrt_load_chunk_time(&f->ts, dts);
	if (f->in_past) {
		/* A fact kept in standby: when it happened (PAST). */
		e->ts = f->past_at;
		e->flags |= VRT_EV_PAST;
	}
	f->ts_at = NULL; /* set past this record by vrt_load_frame_parse */
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
		api = vrt_load_get_u(c);
	e.device = vrt_load_raw_device(vrt_load_get_s(c));
	switch (type) {
	case VRT_REC_MAP:
		e.kind = VRT_EV_MAP;
		e.addr = vrt_load_get_u(c);
		e.size = vrt_load_get_u(c);
		(void)vrt_load_get_u(
		        c); /* offset into the handle: not needed */
		e.aux = vrt_load_get_u(c);
		break;
	case VRT_REC_UNMAP:
	case VRT_REC_PREFREE:
		e.kind = type == VRT_REC_UNMAP ? VRT_EV_UNMAP : VRT_EV_PREFREE;
		e.addr = vrt_load_get_u(c);
		e.size = vrt_load_get_u(c);
		break;
	case VRT_REC_FAIL:
		e.kind = VRT_EV_FAIL;
		e.addr = vrt_load_get_u(c);
		e.size = vrt_load_get_u(c);
		(void)vrt_load_get_u(c); /* aux of the failed call */
		error = vrt_load_get_u(c);
		have_info = vrt_load_get_u(c);
		fr = vrt_load_get_u(c);
		to = vrt_load_get_u(c);
		break;
	case VRT_REC_MEMINFO:
		e.kind = VRT_EV_MEMINFO;
		e.addr = vrt_load_get_u(c);
		e.size = vrt_load_get_u(c);
		/* Appended fields, absent from older writers: the probe's
		 * stack (not used), then its api (none: a CUDA probe). */
		if (c->p < c->end)
			(void)vrt_load_get_u(c);
		if (c->p < c->end)
			api = vrt_load_get_u(c);
		/* In a PAST record: the bytes the process held then. */
		if (c->p < c->end)
			e.aux = vrt_load_get_u(c);
		break;
	}
	if (type != VRT_REC_MEMINFO) {
		/* Both stay file ids (the raw phase field) until the event
		 * is delivered. An id too large to be a stack is no stack. */
		uint64_t sid = vrt_load_get_u(c), ph = vrt_load_get_u(c);
		e.stack = sid > UINT32_MAX ? 0 : (uint32_t)sid;
		e.phase = ph > UINT32_MAX ? UINT32_MAX : (uint32_t)ph;
	}
	if (c->bad)
		return vrt_load_rec_error(f, err, roff, "short event record");
	if (api > VRT_API_MAX)
		return vrt_load_rec_error(f, err, roff, "api id out of range");
	e.api = (uint16_t)api;
	if (type == VRT_REC_FAIL) {
		e.aux = error;
		if (have_info)
			e.flags |= VRT_EV_HAVE_INFO;
		if (t->nfails >= UINT32_MAX ||
		    vrt_array_grow((void **)&t->fails, &t->cap_fails,
		                   t->nfails + 1, sizeof(*t->fails)))
			return vrt_load_nomem(f, err, "events");
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
	smp.kind = (uint8_t)vrt_load_get_u(c);
	if (smp.kind == VRT_SAMPLE_DEVICE) {
		e.device = vrt_load_raw_device(vrt_load_get_s(c));
		smp.used = vrt_load_get_u(c);
		smp.total = vrt_load_get_u(c);
		uint64_t np = vrt_load_get_u(c);
		if (c->bad || np > 4096)
			return vrt_load_rec_error(f, err, roff,
			                          "malformed SAMPLE");
		smp.first_pid = (uint32_t)t->nsample_pids;
		for (uint64_t k = 0; k < np; k++) {
			struct vrt_sample_pid sp;
			sp.pid = vrt_load_get_u(c);
			sp.used_bytes = vrt_load_get_u(c);
			if (c->bad)
				return vrt_load_rec_error(f, err, roff,
				                 "malformed SAMPLE");
			if (t->nsample_pids >= UINT32_MAX ||
			    vrt_array_grow((void **)&t->sample_pids,
			                   &t->cap_sample_pids,
			                   t->nsample_pids + 1, sizeof(sp)))
				return vrt_load_nomem(f, err, "samples");
			t->sample_pids[t->nsample_pids++] = sp;
		}
		smp.npids = (uint32_t)np;
	} else if (smp.kind == VRT_SAMPLE_HOST) {
		e.device = -1;
		smp.used = vrt_load_get_u(c);
		smp.total = vrt_load_get_u(c);
		smp.swap_total = vrt_load_get_u(c);
		smp.swap_free = vrt_load_get_u(c);
	} else {
		return VRT_LOAD_OK; /* a newer kind: skipped */
	}
	if (c->bad)
		return vrt_load_rec_error(f, err, roff, "malformed SAMPLE");
	if (vrt_array_grow((void **)&t->samples, &t->cap_samples,
	                   t->nsamples + 1, sizeof(smp)) ||
	    t->nsamples >= UINT32_MAX)
		return vrt_load_nomem(f, err, "samples");
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
		n = vrt_load_get_str(c, &s);
		break;
	case VRT_REC_NET: {
		uint64_t v = 0;
		e.kind = VRT_EV_NET;
		e.aux = vrt_load_get_u(c);
		e.addr = vrt_load_get_u(c);
		e.size = vrt_load_get_u(c);
		/* Appended later, each absent from older writers (0): the
		 * socket's family, the stream, flags, val, the path. */
		if (c->p < c->end) {
			uint64_t k = vrt_load_get_u(c);
			e.extra = k <= VRT_NET_KIND_OTHER ? (uint32_t)k
			                                  : VRT_NET_KIND_OTHER;
		}
		if (c->p < c->end)
			e.phase = (uint32_t)vrt_load_get_u(c);
		if (c->p < c->end)
			e.api = (uint16_t)(vrt_load_get_u(c) & 0xffff);
		if (c->p < c->end)
			v = vrt_load_get_u(c);
		if (c->p < c->end)
			n = vrt_load_get_str(c, &s);
		/* val: an inferred end's lag is kept in microseconds */
		if (e.aux == VRT_NET_REQ_END && (e.api & VRT_NET_F_INFERRED))
			v /= 1000;
		net_val = (uint32_t)(v < UINT32_MAX ? v : UINT32_MAX);
		break;
	}
	case VRT_REC_PROC:
		e.kind = VRT_EV_PROC;
		e.aux = vrt_load_get_u(c);
		e.addr = vrt_load_get_u(c);
		n = vrt_load_get_str(c, &s);
		break;
	case VRT_REC_REQUEST:
		e.kind = VRT_EV_REQUEST;
		e.aux = vrt_load_get_u(c);
		e.addr = vrt_load_get_u(c);
		break;
	case VRT_REC_SAMPLE:
		return parse_sample(L, t, f, c, rec, roff, dts, err);
	case VRT_REC_SNAPSHOT:
		e.kind = VRT_EV_SNAPSHOT;
		e.aux = vrt_load_get_u(c);
		f->in_snap = e.aux == 1;
		f->snap_tid = f->tid;
		break;
	}
	if (c->bad)
		return vrt_load_rec_error(f, err, roff, "short event record");
	if (type == VRT_REC_MARK || type == VRT_REC_PROC) {
		e.extra = vrt_intern_bytes(t, s, n, &oom);
		if (oom)
			return vrt_load_nomem(f, err, "strings");
	}
	e.device = -1;
	if (type == VRT_REC_NET) {
		if (n) {
			uint32_t text = vrt_intern_bytes(t, s, n, &oom);
			if (oom)
				return vrt_load_nomem(f, err, "strings");
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

/*
 * Reads the records of one decoded frame: metadata goes into the tables at
 * once; ALLOC, FREE and REPEAT records are only counted and timed (their
 * fields are read when delivered), so a chunk's run of them is a range of
 * the frame; other events are decoded now, in record order, since they
 * add to tables (fails, samples, strings).
 */
enum vrt_load_status vrt_load_frame_parse(struct lstate *L, struct vrt_trace *t,
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
			st = vrt_load_rec_error(f, err, (uint64_t)(rec - buf),
			               "record longer than its frame");
			break;
		}
		if (plen > (uint64_t)(end - p)) {
			st = vrt_load_rec_error(f, err, (uint64_t)(rec - buf),
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
				st = vrt_load_rec_error(
				        f, err, (uint64_t)(rec - buf),
				        "event before any CHUNK");
				goto out;
			}
			if (type == VRT_REC_BATCH) {
				struct bcur bc;
				uint64_t span, flags, k;
				if (vrt_load_batch_header(p, pe, f->version,
				                          &bc, &span, &flags)) {
					st = vrt_load_rec_error(f, err,
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
				(void)vrt_load_uv(&q, &bad);
				count = vrt_load_uv(&q, &bad);
				if (bad || q > pe) {
					st = vrt_load_rec_error(f, err,
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
				if (f->eseg && vrt_load_close_ev(L, f)) {
					st = vrt_load_nomem(f, err, "events");
					goto out;
				}
				r = vrt_load_run_new(L, f, RUN_RAW);
				if (!r) {
					st = vrt_load_nomem(f, err, "events");
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
				dts = vrt_load_uv(&q, &bad);
				r->key = r->clock;
				if (type == VRT_REC_BATCH) {
					/* The key is the first event's time,
					 * not the record's span. */
					struct bcur bc;
					uint64_t span, flags, v;
					(void)vrt_load_batch_header(
					        p, pe, f->version, &bc, &span,
					        &flags);
					q = bc.c[1];
					v = q < bc.e[1] ? vrt_load_uv(&q, &bad)
					                : 0;
					if (f->version >= 5)
						r->key = vrt_load_batch5_time(
						        r->clock, v, bc.unit);
					else
						(void)vrt_load_chunk_time(
						        &r->key,
						        vrt_load_batch_dt(v));
				} else {
					(void)vrt_load_chunk_time(&r->key, dts);
				}
				r->key = vrt_load_sat_add(r->key, f->shift);
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
				st = vrt_load_rec_error(
				        f, err, (uint64_t)(rec - buf),
				        "event before any CHUNK");
				goto out;
			}
			dts = vrt_load_get_u(&c);
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
				st = vrt_load_rec_error(
				        f, err, (uint64_t)(rec - buf),
				        "event before any CHUNK");
				goto out;
			}
			dts = vrt_load_get_u(&c);
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
				st = vrt_load_rec_error(
				        f, err, (uint64_t)(rec - buf),
				        "event before any CHUNK");
				goto out;
			}
			dts = vrt_load_get_u(&c);
			inner = vrt_load_get_u(&c);
			at = vrt_load_get_u(&c);
			if (c.bad) {
				st = vrt_load_rec_error(f, err,
				                        (uint64_t)(rec - buf),
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
				(void)vrt_load_chunk_time(&f->ts, dts);
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
			uint64_t tid = vrt_load_get_u(&c),
			         ts = vrt_load_get_u(&c);
			if (c.bad) {
				st = vrt_load_rec_error(f, err,
				                        (uint64_t)(rec - buf),
				                        "short CHUNK");
				goto out;
			}
			if (vrt_load_close_raw(L, f, rec) ||
			    vrt_load_close_ev(L, f)) {
				st = vrt_load_nomem(f, err, "events");
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
			st = vrt_load_tables_device(t, f, &c,
			                            (uint64_t)(rec - buf), err);
			if (st)
				goto out;
			break;
		case VRT_REC_STRING:
		case VRT_REC_FRAME:
		case VRT_REC_STACK:
		case VRT_REC_PHASE:
			st = vrt_load_tables_symbolic(t, f, type, &c,
			                    (uint64_t)(rec - buf), err);
			if (st)
				goto out;
			break;
		case VRT_REC_WATERMARK: {
			uint64_t w = vrt_load_get_u(&c);
			/* A malformed watermark promises nothing: skipped. */
			if (c.bad)
				break;
			if (vrt_load_close_raw(L, f, rec) ||
			    vrt_load_close_ev(L, f)) {
				st = vrt_load_nomem(f, err, "events");
				goto out;
			}
			st = vrt_load_tables_intern(t, f, err);
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
			uint64_t endns = vrt_load_get_u(&c);
			pr->trailer_flags = vrt_load_get_u(&c);
			pr->events_written = vrt_load_get_u(&c);
			pr->events_dropped = vrt_load_get_u(&c);
			n = vrt_load_get_str(&c, &s);
			if (c.bad) {
				st = vrt_load_rec_error(f, err,
				                        (uint64_t)(rec - buf),
				                        "short TRAILER");
				goto out;
			}
			free(pr->note);
			pr->note = vrt_load_dup_bytes(s, n);
			if (!pr->note) {
				st = vrt_load_nomem(f, err, "trailer");
				goto out;
			}
			pr->has_trailer = 1;
			pr->end_mono_ns =
			        endns > INT64_MAX ? INT64_MAX : (int64_t)endns;
			/* How the process left, as it knew it (appended
			 * later): an exit file (what its parent or record
			 * reaped) says more and wins. */
			if (c.p < c.end) {
				uint64_t kind = vrt_load_get_u(&c),
				         code = vrt_load_get_u(&c);
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
	if (!st && (vrt_load_close_raw(L, f, end) || vrt_load_close_ev(L, f)))
		st = vrt_load_nomem(f, err, "events");
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
