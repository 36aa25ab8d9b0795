/*
 * Unit tests of replay.c's timelines: a long trace keeps at most two
 * points per time bucket per device, never loses the peak, and each point
 * is a consistent split of the device's bytes by phase; requests in flight
 * are downsampled the same way. Fed in batches; the bucket width adapts
 * (doubles) as the stream goes on. TAP output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"
#include "replay.h"

static int ntests, nfailed;

static void ok(int cond, const char *name, unsigned long long got)
{
	ntests++;
	nfailed += !cond;
	printf("%s %d - %s (%llu)\n", cond ? "ok" : "not ok", ntests, name,
	       got);
}

#define N 200000u /* events: far more than the buckets */

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
	/* The same timeline bucketed directly at the final width (the
	 * smallest power of two that fits the run in the buckets): widening
	 * and merging on the way must have kept exactly these points. */
	{
		int64_t w = 1, b = 0, mts = 0, last_ts = 0;
		uint64_t total = 0, mx = 0;
		int active = 0, after = 0;
		size_t k = 0;
		bad = 0;
		while (evs[nev - 1].ts / w >= VRT_REPLAY_SERIES_BUCKETS)
			w *= 2;
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
					EXPECT(mts, mx);
					if (after)
						EXPECT(last_ts, total);
				}
				active = 0;
				if (!e)
					break;
				b = e->ts / w;
			}
			if (e->kind == VRT_EV_ALLOC)
				total += e->size;
			else if (e->kind == VRT_EV_FREE)
				total -= evs[i - 1].size;
			else
				continue;
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
		ok(bad == 0 && k == d->nseries,
		   "same points as direct bucketing at the final width",
		   bad);
	}
	vrt_replay_free(&r);
	free(evs);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
