/*
 * Unit tests of replay.c's timelines: a long trace keeps at most two
 * points per time bucket per device, never loses the peak, and each point
 * is a consistent split of the device's bytes by phase; requests in flight
 * are downsampled the same way. Fed in batches; the bucket width adapts
 * (doubles) as the stream goes on. Each bucket's range (least and most of
 * the total and of each phase) matches direct bucketing, and keeps a phase
 * that rose and fell back inside a bucket the points do not show. TAP
 * output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load/load.h"
#include "replay/replay.h"

static int ntests, nfailed;

static void ok(int cond, const char *name, unsigned long long got)
{
	ntests++;
	nfailed += !cond;
	printf("%s %d - %s (%llu)\n", cond ? "ok" : "not ok", ntests, name,
	       got);
}

#define N 200000u /* events: far more than the buckets */

static struct vrt_event ev_mem(int64_t ts, int is_free, uint64_t addr,
                               uint64_t size, uint32_t phase)
{
	struct vrt_event e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.kind = is_free ? VRT_EV_FREE : VRT_EV_ALLOC;
	e.api = is_free ? VRT_API_cuMemFree_v2 : VRT_API_cuMemAlloc_v2;
	e.addr = addr;
	e.size = size;
	e.phase = phase;
	return e;
}

/* vLLM's start: weights, a profiling run's activations allocated and
 * freed 1 us later, then a larger KV cache; the server then serves one
 * request every 0.9 s for an hour (busy: the buckets widen to about 4 s)
 * or idles for the hour (its buckets stay fine). The end frees all. */
static size_t server_events(struct vrt_event *e, int busy)
{
	const uint64_t GiB = 1ull << 30;
	const int64_t S = 1000000000;
	size_t n = 0;
	int64_t ts;

	e[n++] = ev_mem(S / 2, 0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	e[n++] = ev_mem(2 * S, 0, 0x2000, GiB / 2, VRT_PHASE_profile);
	e[n++] = ev_mem(2 * S + 1000, 1, 0x2000, 0, 0);
	e[n++] = ev_mem(5 * S / 2, 0, 0x3000, 6 * GiB, VRT_PHASE_kv_cache);
	for (ts = 5 * S; busy && ts < 3599 * S; ts += 9 * S / 10) {
		e[n++] = ev_mem(ts, 0, 0x4000, GiB / 4, VRT_PHASE_forward);
		e[n++] = ev_mem(ts + S / 10, 1, 0x4000, 0, 0);
	}
	e[n++] = ev_mem(3600 * S, 1, 0x3000, 0, 0);
	e[n++] = ev_mem(3600 * S, 1, 0x1000, 0, 0);
	return n;
}

/* Replays server_events(busy) into *r; 0 on success. */
static int replay_server(struct vrt_replay *r, int busy)
{
	static struct vrt_process proc;
	static struct vrt_device dev;
	static struct vrt_event e[10000];
	struct vrt_trace t;
	size_t n = server_events(e, busy);

	memset(&t, 0, sizeof(t));
	memset(r, 0, sizeof(*r));
	t.procs = &proc;
	t.nprocs = 1;
	t.devices = &dev;
	t.ndevices = 1;
	t.end_ns = 3600 * 1000000000ll;
	return vrt_replay_begin(r, &t) || vrt_replay_feed(r, &t, e, n) ||
	       vrt_replay_end(r, &t);
}

/* The largest of a phase slot in the points, or in the ranges. */
static uint64_t most(const struct vrt_replay_device *d, unsigned slot,
                     int in_ranges)
{
	uint64_t m = 0;
	size_t i;

	for (i = 0; !in_ranges && i < d->nseries; i++)
		if (d->series[i].by_phase[slot] > m)
			m = d->series[i].by_phase[slot];
	for (i = 0; in_ranges && i < d->nranges; i++)
		if (d->ranges[i].max_by_phase[slot] > m)
			m = d->ranges[i].max_by_phase[slot];
	return m;
}

static void idle_and_busy(void)
{
	const uint64_t GiB = 1ull << 30;
	unsigned wslot = vrt_replay_phase_slot(VRT_PHASE_weights);
	unsigned pslot = vrt_replay_phase_slot(VRT_PHASE_profile);
	struct vrt_replay r;
	const struct vrt_replay_device *d;
	const struct vrt_replay_range *last;

	/* Idle: a few buckets hold a change, so they stay narrow and
	 * every event keeps its point. */
	if (replay_server(&r, 0)) {
		ok(0, "idle hour: replay runs", 0);
	} else {
		d = &r.dev[0];
		ok(r.series_bucket_ns < 1000000 && d->nseries == 6 &&
		           most(d, pslot, 0) == GiB / 2,
		   "an idle hour costs no resolution: the profile spike is a "
		   "point",
		   (unsigned long long)r.series_bucket_ns);
	}
	vrt_replay_free(&r);
	/* Busy: the profile spike and the KV cache share a bucket. */
	if (replay_server(&r, 1)) {
		ok(0, "busy hour: replay runs", 0);
		vrt_replay_free(&r);
		return;
	}
	d = &r.dev[0];
	last = &d->ranges[d->nranges - 1];
	ok(r.series_bucket_ns > 3600000000000ll / VRT_REPLAY_SERIES_BUCKETS &&
	           d->nranges <= VRT_REPLAY_SERIES_BUCKETS &&
	           d->ranges[0].start_ts == 0,
	   "busy hour: buckets widen, a range per bucket that changed",
	   (unsigned long long)d->nranges);
	ok(most(d, pslot, 0) == 0 && most(d, pslot, 1) == GiB / 2,
	   "busy hour: no point holds the profile spike, its range does",
	   most(d, pslot, 1));
	ok(d->ranges[0].min_total == 0 && d->ranges[0].max_total == 20 * GiB &&
	           last->max_by_phase[wslot] == 14 * GiB &&
	           last->min_by_phase[wslot] == 0 && last->min_total == 0,
	   "busy hour: ranges start from the state the bucket began with",
	   last->max_total);
	vrt_replay_free(&r);
}

/* The timeline of evs (memory and request events; every free follows
 * its allocation) bucketed directly at the final width, the narrowest
 * power of two in which at most VRT_REPLAY_SERIES_BUCKETS buckets hold an
 * event: widening and merging on the way must have kept exactly these
 * points and ranges. */
static void check_direct(const char *what, const struct vrt_event *evs,
                         size_t nev, const struct vrt_replay *r)
{
	const struct vrt_replay_device *d = &r->dev[0];
	char name[128];
	uint64_t bad = 0;
	size_t i;
	int64_t w = 1, b = 0, mts = 0, last_ts = 0;
	uint64_t total = 0, mx = 0;
	uint64_t live[VRT_REPLAY_MAX_PHASES] = {0};
	uint64_t lo[VRT_REPLAY_MAX_PHASES], hi[VRT_REPLAY_MAX_PHASES];
	uint64_t tlo = 0, thi = 0;
	int active = 0, after = 0;
	size_t k = 0, g = 0, badr = 0;
	unsigned j;

	memset(lo, 0, sizeof(lo));
	memset(hi, 0, sizeof(hi));
	for (;; w *= 2) {
		size_t used = 0;
		for (i = 0; i < nev; i++)
			used += !i || evs[i].ts / w != evs[i - 1].ts / w;
		if (used <= VRT_REPLAY_SERIES_BUCKETS)
			break;
	}
#define EXPECT(ts_, total_)                                                    \
	do {                                                                   \
		bad += k >= d->nseries || d->series[k].ts != (ts_) ||          \
		       d->series[k].total != (total_);                         \
		k++;                                                           \
	} while (0)
	for (i = 0; i <= nev; i++) {
		const struct vrt_event *e = i < nev ? &evs[i] : NULL;
		if (!e || e->ts / w != b) {
			if (active) {
				const struct vrt_replay_range *x =
				        g < d->nranges ? &d->ranges[g]
				                       : NULL;
				EXPECT(mts, mx);
				if (after)
					EXPECT(last_ts, total);
				badr += !x || x->start_ts != b * w ||
				        x->min_total != tlo ||
				        x->max_total != thi ||
				        memcmp(x->min_by_phase, lo,
				               sizeof(lo)) ||
				        memcmp(x->max_by_phase, hi,
				               sizeof(hi));
				g++;
			}
			/* The next bucket starts from now. */
			memcpy(lo, live, sizeof(lo));
			memcpy(hi, live, sizeof(hi));
			tlo = thi = total;
			active = 0;
			if (!e)
				break;
			b = e->ts / w;
		}
		if (e->kind == VRT_EV_ALLOC) {
			total += e->size;
			j = vrt_replay_phase_slot(e->phase);
			live[j] += e->size;
		} else if (e->kind == VRT_EV_FREE) {
			total -= evs[i - 1].size;
			j = vrt_replay_phase_slot(evs[i - 1].phase);
			live[j] -= evs[i - 1].size;
		} else {
			continue;
		}
		if (live[j] > hi[j])
			hi[j] = live[j];
		if (live[j] < lo[j])
			lo[j] = live[j];
		if (total > thi)
			thi = total;
		if (total < tlo)
			tlo = total;
		if (!active || total > mx) {
			mx = total;
			mts = e->ts;
			active = 1;
			after = 0;
		} else {
			after = 1;
		}
		last_ts = e->ts;
	}
#undef EXPECT
	snprintf(name, sizeof(name),
	         "%s: same points as direct bucketing at the final width",
	         what);
	ok(bad == 0 && k == d->nseries, name, bad);
	snprintf(name, sizeof(name),
	         "%s: same ranges as direct bucketing at the final width",
	         what);
	ok(badr == 0 && g == d->nranges && w == r->series_bucket_ns, name,
	   badr);
}

int main(void)
{
	static struct vrt_process proc;
	static struct vrt_device dev;
	struct vrt_trace t;
	struct vrt_replay r;
	const struct vrt_replay_device *d;
	uint64_t max = 0, bad = 0;
	int64_t max_ts = -1;
	struct vrt_event *evs;
	size_t i, nreq = 0, nev = 0;
	int rc;

	idle_and_busy();
	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	proc.pid = 42;
	t.procs = &proc;
	t.nprocs = 1;
	t.devices = &dev;
	t.ndevices = 1;
	evs = calloc(N + 2, sizeof(*evs));
	/* A sawtooth: allocate i % 97 + 1 MiB, free it; one spike of 5 GiB
	 * in the middle, gone at the next event; a request opens and closes
	 * every 1000 events. 1 us apart. */
	for (i = 0; i < N; i++) {
		struct vrt_event *e = &evs[nev++];
		e->ts = (int64_t)i * 1000;
		e->device = 0;
		if (i % 1000 == 500 || i % 1000 == 501) {
			e->kind = VRT_EV_REQUEST;
			e->aux = i % 1000 == 500 ? 1 : 2;
			e->addr = i / 1000;
			nreq++;
			continue;
		}
		e->api = i % 2 ? VRT_API_cuMemFree_v2 : VRT_API_cuMemAlloc_v2;
		e->kind = i % 2 ? VRT_EV_FREE : VRT_EV_ALLOC;
		e->addr = 0x1000 + i / 2 * 0x1000;
		if (i % 2 == 0) {
			e->size = (i % 97 + 1) << 20;
			if (i == N / 2)
				e->size = 5ull << 30;
			e->phase = (uint32_t)(1 + i % 3);
		}
		if (i % 2)
			e->addr = evs[nev - 2].addr;
	}
	t.start_ns = 0;
	t.end_ns = (int64_t)N * 1000;
	/* Batches of 4096, as the analyzer feeds them. */
	rc = vrt_replay_begin(&r, &t);
	for (i = 0; i < nev && !rc; i += 4096)
		rc = vrt_replay_feed(&r, &t, evs + i,
		                     nev - i < 4096 ? nev - i : 4096);
	ok(!rc && vrt_replay_end(&r, &t) == 0, "replay runs", 0);
	d = &r.dev[0];
	/* The buckets widen as the run goes on: at the end at least half
	 * of them are used. */
	ok(d->nseries > VRT_REPLAY_SERIES_BUCKETS / 2 &&
	           d->nseries <= 2 * VRT_REPLAY_SERIES_BUCKETS,
	   "timeline bounded by the buckets", d->nseries);
	for (i = 0; i < d->nseries; i++) {
		const struct vrt_replay_point *p = &d->series[i];
		uint64_t sum = 0;
		unsigned k;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			sum += p->by_phase[k];
		bad += sum != p->total;
		bad += i && p->ts < d->series[i - 1].ts;
		if (p->total > max) {
			max = p->total;
			max_ts = p->ts;
		}
	}
	ok(bad == 0, "points in time order, phases sum to the total", bad);
	ok(max == d->peak_bytes && max == 5ull << 30,
	   "the 1-event peak survives downsampling", max);
	ok(max_ts == d->peak_ts, "at the peak's own time",
	   (unsigned long long)max_ts);
	ok(r.ninflight_series > 0 &&
	           r.ninflight_series <= 2 * VRT_REPLAY_SERIES_BUCKETS,
	   "requests in flight bounded", r.ninflight_series);
	for (i = 0, max = 0; i < r.ninflight_series; i++)
		if (r.inflight_series[i].inflight > max)
			max = r.inflight_series[i].inflight;
	ok(max == 1 && r.inflight_series[r.ninflight_series - 1].inflight == 0,
	   "requests in flight: peak and end kept", max);
	ok(d->series[d->nseries - 1].total == d->tracked_bytes,
	   "the last point is the state at the end", d->tracked_bytes);
	check_direct("sawtooth", evs, nev, &r);
	vrt_replay_free(&r);
	/* Bursts of 300 allocation/free pairs 1 us apart, idle gaps of 1 ms
	 * to 10 s between them: buckets widen while some lie far apart, and
	 * a bucket opened before a widening shares the wider bucket with the
	 * one before it. */
	{
		uint64_t x = 12345;
		int64_t ts = 0;
		size_t burst;
		nev = 0;
		for (burst = 0; burst < 40; burst++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			ts += 1000000 + (int64_t)((x >> 33) % 10000000000ull);
			for (i = 0; i < 600; i++) {
				struct vrt_event *e = &evs[nev++];
				memset(e, 0, sizeof(*e));
				e->ts = ts + (int64_t)i * 1000;
				e->device = 0;
				e->addr = 0x1000 + nev / 2 * 0x1000;
				e->api = i % 2 ? VRT_API_cuMemFree_v2
				               : VRT_API_cuMemAlloc_v2;
				e->kind = i % 2 ? VRT_EV_FREE : VRT_EV_ALLOC;
				if (i % 2) {
					e->addr = evs[nev - 2].addr;
				} else {
					e->size = ((x >> (i % 40)) % 64 + 1)
					          << 20;
					e->phase = (uint32_t)(1 + (i / 2) % 5);
				}
			}
		}
		t.end_ns = ts + 600000;
		memset(&r, 0, sizeof(r));
		rc = vrt_replay_begin(&r, &t);
		for (i = 0; i < nev && !rc; i += 4096)
			rc = vrt_replay_feed(&r, &t, evs + i,
			                     nev - i < 4096 ? nev - i : 4096);
		ok(!rc && vrt_replay_end(&r, &t) == 0, "bursts: replay runs",
		   0);
		if (!rc)
			check_direct("bursts", evs, nev, &r);
		vrt_replay_free(&r);
	}
	free(evs);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
