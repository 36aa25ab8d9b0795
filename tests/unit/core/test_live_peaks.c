/*
 * Unit test of the live table's peaks per device (live.c, for the metrics'
 * vramtrace_device_peak_bytes): the most a device held since the previous
 * reading, through every way an entry leaves the table — freed by its own
 * thread while pending, by another thread while pending, after it moved
 * into the table, replaced by an allocation of the same address without a
 * free — and a spike between two readings that the current totals no
 * longer show. Threads run one after another (joined). TAP output.
 */
#include "core.h"
#include "live.h"

#include <vramtrace/trace_format.h>

#include <pthread.h>
#include <stdio.h>

#define MIB (1ull << 20)

static int test_no, failures;

static void ok(int cond, const char *what, unsigned long long got,
               unsigned long long want)
{
	printf("%sok %d - %s (got %llu, want %llu)\n", cond ? "" : "not ",
	       ++test_no, what, got, want);
	if (!cond)
		failures++;
}

static void alloc(int dev, uint64_t addr, uint64_t size)
{
	struct vrt_ev ev = {.rec = VRT_REC_ALLOC,
	                    .api = VRT_API_cuMemAlloc_v2,
	                    .device = dev,
	                    .addr = addr,
	                    .size = size};
	vrt_live_event(&ev);
}

static void release(uint64_t addr)
{
	struct vrt_ev ev = {.rec = VRT_REC_FREE,
	                    .api = VRT_API_cuMemFree_v2,
	                    .device = VRT_DEVICE_UNKNOWN,
	                    .addr = addr};
	vrt_live_event(&ev);
}

static uint64_t take(int dev)
{
	uint64_t p[VRT_LIVE_MAX_DEVICES];
	vrt_live_take_peaks(p);
	return p[dev];
}

static void *spike_then_free(void *arg)
{
	(void)arg;
	alloc(1, 0x200000000ull, 300 * MIB); /* pending in this thread */
	release(0x200000000ull);             /* its own free */
	alloc(1, 0x200100000ull, 40 * MIB);  /* left pending here */
	vrt_tbuf_thread_exit();
	return NULL;
}

static void run(void *(*fn)(void *))
{
	pthread_t t;
	pthread_create(&t, NULL, fn, NULL);
	pthread_join(t, NULL);
}

int main(void)
{
	uint64_t p;

	printf("1..8\n");
	vrt_live_track_peaks();
	if (vrt_tbuf_init(4u << 20) || !vrt_live_tracking_peaks()) {
		printf("Bail out! setup\n");
		return 1;
	}
	alloc(0, 0x100000000ull, 100 * MIB);
	alloc(0, 0x100100000ull, 50 * MIB); /* moves the first into the table */
	release(0x100100000ull);            /* own pending free */
	p = take(0);
	ok(p == 150 * MIB, "device 0: the peak since start", p, 150 * MIB);
	p = take(0);
	ok(p == 100 * MIB, "device 0: the next window starts at what is live",
	   p, 100 * MIB);

	run(spike_then_free);
	p = take(1);
	ok(p == 300 * MIB, "device 1: a spike freed before the reading", p,
	   300 * MIB);
	release(0x200100000ull); /* another thread's pending allocation */
	p = take(1);
	ok(p == 40 * MIB, "device 1: window after the spike", p, 40 * MIB);
	p = take(1);
	ok(p == 0, "device 1: freed from another thread: nothing left", p, 0);

	/* The same address again without a free: the old entry leaves. */
	alloc(0, 0x100200000ull, 10 * MIB);
	alloc(0, 0x100000000ull, 20 * MIB); /* replaces the 100 MiB entry */
	alloc(0, 0x100300000ull, 1 * MIB);  /* moves it into the table */
	take(0);
	p = take(0);
	ok(p == 31 * MIB, "device 0: a replaced entry counts once", p,
	   31 * MIB);
	release(0x100000000ull);
	release(0x100200000ull);
	release(0x100300000ull);
	p = take(0);
	ok(p == 31 * MIB, "device 0: the window before the frees", p, 31 * MIB);
	p = take(0);
	ok(p == 0, "device 0: all freed", p, 0);
	return failures != 0;
}
