/*
 * replay_series.c — the timelines and the windows (a part of the replay:
 * replay.c's opening block says how the whole works, timelines included).
 *
 * Owns the bucketing of each device's timeline (a bucket's highest point,
 * its last state and its range, the widening that merges buckets in
 * pairs when too many hold a change) and of the requests in flight, and
 * the windows between MARK events with their per-device peaks. The
 * per-event notes of a change (vrt_replay_series_note, the ranges) are
 * inline in replay_internal.h: the common path takes them.
 */
#include "replay_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Windows (see vrt_replay_series_mark): r->windows[r->nwindows - 1] is
 * open. */
/* Raises the open window's peaks of device dev to its live counters
 * (slot: the phase slot that changed; VRT_REPLAY_MAX_PHASES: all). */
NOINLINE void vrt_replay_series_window_note(struct state *s, int32_t dev,
                                 unsigned slot)
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
	if (slot < VRT_REPLAY_MAX_PHASES) {
		if (d->phase[slot].live_bytes > w->peak_by_phase[slot])
			w->peak_by_phase[slot] = d->phase[slot].live_bytes;
		return;
	}
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (d->phase[k].live_bytes > w->peak_by_phase[k])
			w->peak_by_phase[k] = d->phase[k].live_bytes;
}

static NOINLINE void point_now(const struct state *s, int32_t dev,
                               int64_t ts, struct vrt_replay_point *p)
{
	p->ts = ts;
	p->total = s->r->dev[dev].tracked_bytes;
	memcpy(p->by_phase, s->devs[dev].live, sizeof(p->by_phase));
}

/* The highest point of dev's bucket, still read from the live counters,
 * copied. */
NOINLINE void vrt_replay_series_copy_max(struct state *s, int32_t dev)
{
	struct series_acc *a = &s->devs[dev].acc;

	point_now(s, dev, a->max.ts, &a->max);
	a->max_live = 0;
}

static int64_t bucket_of(const struct state *s, int64_t ts, int64_t width)
{
	int64_t d;

	if (__builtin_sub_overflow(ts, s->series_start, &d))
		d = ts > s->series_start ? INT64_MAX : 0;
	return d > 0 ? d / width : 0;
}

/* The first nanosecond of bucket b of width w (saturating). */
static int64_t bucket_start(const struct state *s, int64_t b, int64_t w)
{
	int64_t ts;

	if (__builtin_mul_overflow(b, w, &ts) ||
	    __builtin_add_overflow(ts, s->series_start, &ts))
		return INT64_MAX;
	return ts;
}

/* Keeps, of each run of points of v (n of them, in time order) in one
 * bucket of width w, the highest (the first to reach it) and the last
 * when that is another; in place. value: the field compared. */
#define MERGE_POINTS(v, n, value)                                              \
	do {                                                                   \
		size_t i_ = 0, o_ = 0, j_, m_;                                 \
		while (i_ < (n)) {                                             \
			int64_t b_ = bucket_of(s, (v)[i_].ts, w);              \
			for (j_ = m_ = i_;                                     \
			     j_ < (n) && bucket_of(s, (v)[j_].ts, w) == b_;    \
			     j_++)                                             \
				if ((v)[j_].value > (v)[m_].value)             \
					m_ = j_;                               \
			(v)[o_++] = (v)[m_];                                   \
			if (j_ - 1 != m_)                                      \
				(v)[o_++] = (v)[j_ - 1];                       \
			i_ = j_;                                               \
		}                                                              \
		(n) = o_;                                                      \
	} while (0)

/* MERGE_POINTS of the points of v's last bucket only (at most four: two
 * kept before, two added), after points were added to it. */
#define MERGE_TAIL(v, n, value)                                                \
	do {                                                                   \
		size_t t_ = (n), c_;                                           \
		int64_t l_ = bucket_of(s, (v)[(n)-1].ts, w);                   \
		while (t_ > 0 && bucket_of(s, (v)[t_ - 1].ts, w) == l_)        \
			t_--;                                                  \
		c_ = (n)-t_;                                                   \
		if (c_ > 2) {                                                  \
			MERGE_POINTS((v) + t_, c_, value);                     \
			(n) = t_ + c_;                                         \
		}                                                              \
	} while (0)

/* Range x folded into y: the least of their least, the most of their
 * most. */
static void range_merge(struct vrt_replay_range *y,
                        const struct vrt_replay_range *x)
{
	unsigned k;

	if (x->min_total < y->min_total)
		y->min_total = x->min_total;
	if (x->max_total > y->max_total)
		y->max_total = x->max_total;
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (x->min_by_phase[k] < y->min_by_phase[k])
			y->min_by_phase[k] = x->min_by_phase[k];
		if (x->max_by_phase[k] > y->max_by_phase[k])
			y->max_by_phase[k] = x->max_by_phase[k];
	}
}

/* Ends the current bucket: its points go to the timelines. Called before
 * the first event of a later bucket applies, so the live counters still
 * hold each timeline's state at the end of the bucket. */
void vrt_replay_series_flush(struct state *s)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_point p;
	struct vrt_replay_inflight q;
	struct vrt_replay_range g;
	int64_t w = s->series_width;
	int any = s->inflight_acc.active;
	size_t i;

	for (i = 0; i < r->ndevices; i++) {
		struct series_acc *a = &s->devs[i].acc;
		struct vrt_replay_device *d = &r->dev[i];
		if (!a->active)
			continue;
		a->active = 0;
		any = 1;
		if (a->max_live) {
			point_now(s, (int32_t)i, a->max.ts, &a->max);
			a->max_live = 0;
		}
		if (vrt_replay_push((void **)&d->series, &d->nseries, &a->max,
		         sizeof(a->max)))
			goto oom;
		/* The range, then the next bucket's starts from the state
		 * now, which is the state at this one's end. */
		g.start_ts = bucket_start(s, s->bucket, w);
		g.min_total = a->tmin;
		g.max_total = a->max.total > a->tstart ? a->max.total
		                                       : a->tstart;
		memcpy(g.min_by_phase, a->pmin, sizeof(g.min_by_phase));
		memcpy(g.max_by_phase, a->pmax, sizeof(g.max_by_phase));
		if (d->nranges && d->ranges[d->nranges - 1].start_ts ==
		                          g.start_ts)
			range_merge(&d->ranges[d->nranges - 1], &g);
		else if (vrt_replay_push((void **)&d->ranges, &d->nranges, &g,
		                         sizeof(g)))
			goto oom;
		a->tmin = a->tstart = d->tracked_bytes;
		memcpy(a->pmin, s->devs[i].live, sizeof(a->pmin));
		memcpy(a->pmax, s->devs[i].live, sizeof(a->pmax));
		if (a->after_max) {
			point_now(s, (int32_t)i, a->last_ts, &p);
			if (vrt_replay_push((void **)&d->series, &d->nseries,
			                    &p, sizeof(p)))
				goto oom;
		}
		MERGE_TAIL(d->series, d->nseries, total);
	}
	if (s->inflight_acc.active) {
		struct series_acc *a = &s->inflight_acc;
		a->active = 0;
		q.ts = a->max.ts;
		q.inflight = (uint32_t)a->max.total;
		if (vrt_replay_push((void **)&r->inflight_series,
		                    &r->ninflight_series, &q, sizeof(q)))
			goto oom;
		q.ts = a->last_ts;
		q.inflight = r->inflight;
		if (a->after_max &&
		    vrt_replay_push((void **)&r->inflight_series,
		                    &r->ninflight_series, &q, sizeof(q)))
			goto oom;
		MERGE_TAIL(r->inflight_series, r->ninflight_series, inflight);
	}
	if (any && (!s->nbusy || s->busy[s->nbusy - 1] != s->bucket) &&
	    vrt_replay_push((void **)&s->busy, &s->nbusy, &s->bucket,
	                    sizeof(s->bucket)))
		goto oom;
	return;
oom:
	s->oom = 1;
}

/* Merges the ranges of a device's timeline that fall into one bucket of
 * width w (the least of their least, the most of their most); in place. */
static void merge_ranges(const struct state *s, struct vrt_replay_device *d,
                         int64_t w)
{
	size_t i, o = 0;

	for (i = 0; i < d->nranges; i++) {
		struct vrt_replay_range *x = &d->ranges[i];
		int64_t b = bucket_of(s, x->start_ts, w);
		struct vrt_replay_range *y = o ? &d->ranges[o - 1] : NULL;
		if (!y || bucket_of(s, y->start_ts, w) != b) {
			y = &d->ranges[o++];
			*y = *x;
			y->start_ts = bucket_start(s, b, w);
			continue;
		}
		range_merge(y, x);
	}
	d->nranges = o;
}

/* Doubles the bucket width: each pair of finished buckets becomes one. */
void vrt_replay_series_widen(struct state *s)
{
	struct vrt_replay *r = s->r;
	int64_t w = s->series_width * 2;
	size_t k, o = 0;

	for (k = 0; k < r->ndevices; k++) {
		MERGE_POINTS(r->dev[k].series, r->dev[k].nseries, total);
		merge_ranges(s, &r->dev[k], w);
	}
	MERGE_POINTS(r->inflight_series, r->ninflight_series, inflight);
	for (k = 0; k < s->nbusy; k++)
		if (!o || s->busy[o - 1] != s->busy[k] / 2)
			s->busy[o++] = s->busy[k] / 2;
	s->nbusy = o;
	s->series_width = w;
}

/* Before an event at ts that falls past the current bucket: flushes it,
 * widens the buckets while too many hold a change, and opens ts's. */
NOINLINE void vrt_replay_series_tick(struct state *s, int64_t ts)
{
	int64_t b = bucket_of(s, ts, s->series_width), end;

	if (b == s->bucket)
		return;
	vrt_replay_series_flush(s);
	while (s->nbusy > VRT_REPLAY_SERIES_BUCKETS &&
	       s->series_width < INT64_MAX / 4)
		vrt_replay_series_widen(s);
	b = bucket_of(s, ts, s->series_width);
	s->bucket = b;
	/* The first ts of the next bucket (saturating). */
	if (__builtin_mul_overflow(b + 1, s->series_width, &end) ||
	    __builtin_add_overflow(end, s->series_start, &end))
		s->bucket_end = INT64_MAX;
	else
		s->bucket_end = end;
}

/* ---- windows ------------------------------------------------------------ */

/* Grows every per-window device array to n devices (new ones zero). */
int vrt_replay_series_windows_grow(struct vrt_replay *r, size_t n)
{
	size_t i;

	for (i = 0; i < r->nwindows; i++) {
		struct vrt_replay_window_device *nd =
		        realloc(r->windows[i].dev, n * sizeof(*nd));
		if (!nd)
			return -1;
		memset(nd + r->ndevices, 0, (n - r->ndevices) * sizeof(*nd));
		r->windows[i].dev = nd;
	}
	return 0;
}

/* A mark ends the open window and opens the next, which starts with what
 * is live and in flight at the mark. */
static int window_open(struct state *s, const struct vrt_replay_mark *m)
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
		r->windows[r->nwindows - 1].end_ts = m->ts;
	w = &r->windows[r->nwindows];
	memset(w, 0, sizeof(*w));
	w->dev = calloc(r->ndevices ? r->ndevices : 1, sizeof(*w->dev));
	if (!w->dev)
		return -1;
	w->mark = *m;
	w->start_ts = m->ts;
	w->end_ts = m->ts;
	w->max_inflight = r->inflight;
	r->nwindows++;
	for (i = 0; i < r->ndevices; i++)
		vrt_replay_series_window_note(s, (int32_t)i,
		                              VRT_REPLAY_MAX_PHASES);
	return 0;
}

void vrt_replay_series_windows_free(struct vrt_replay *r)
{
	size_t i;

	for (i = 0; i < r->nwindows; i++)
		free(r->windows[i].dev);
	free(r->windows);
}

int vrt_replay_series_mark(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_mark m;

	if (r->nmarks % 64 == 0) {
		void *p = realloc(r->marks, (r->nmarks + 64) * sizeof(m));
		if (!p)
			return -1;
		r->marks = p;
	}
	m.ts = e->ts;
	m.proc = e->proc;
	m.label = e->extra;
	r->marks[r->nmarks++] = m;
	return window_open(s, &m);
}
