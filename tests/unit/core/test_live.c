/*
 * Unit test of the live table (live.c) with its per-thread pending
 * allocations: an allocation freed by its own thread, by another thread
 * while it still waits in its thread's area, after it moved into the
 * table, and after its thread exited; totals and the snapshot see each
 * live allocation exactly once. Threads run one after another (joined),
 * so every step is deterministic. Devices kept for later (standby) are
 * asked of the runtime when the table is read, once per table entry.
 * TAP output.
 */
#include "core.h"
#include "live.h"

#include <vramtrace/trace_format.h>

#include <pthread.h>
#include <stdio.h>

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

static void alloc(uint64_t addr, uint64_t size)
{
	struct vrt_ev ev = {.rec = VRT_REC_ALLOC,
	                    .api = VRT_API_cuMemAlloc_v2,
	                    .device = 0,
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

static uint64_t live_bytes(uint64_t *count)
{
	struct vrt_live_stats st;
	vrt_live_stats(&st);
	*count = st.allocations;
	return st.ndev ? st.dev[0].bytes : 0;
}

static void count_one(const struct vrt_ev *ev, void *arg)
{
	(void)ev;
	(*(int *)arg)++;
}

static int snapshot_count(void)
{
	int n = 0;
	vrt_live_each(count_one, &n);
	return n;
}

struct job {
	void (*fn)(uint64_t);
	uint64_t arg;
};

/* Runs fn(arg) on a thread of its own and waits for it. */
static void *job_main(void *p)
{
	struct job *j = p;
	j->fn(j->arg);
	vrt_tbuf_thread_exit();
	return NULL;
}

static void run(void (*fn)(uint64_t), uint64_t arg)
{
	struct job j = {fn, arg};
	pthread_t t;
	pthread_create(&t, NULL, job_main, &j);
	pthread_join(t, NULL);
}

static void a_alloc(uint64_t addr)
{
	alloc(addr, 1000);
}

static void a_free(uint64_t addr)
{
	release(addr);
}

static void a_two(uint64_t addr)
{
	alloc(addr, 1000);
	alloc(addr + 0x1000, 2000); /* moves the first into the table */
}

static void a_pair_loop(uint64_t addr)
{
	for (int i = 0; i < 1000; i++) {
		alloc(addr + (uint64_t)i * 0x1000, 4096);
		release(addr + (uint64_t)i * 0x1000);
	}
	alloc(addr + 0x1000000, 4096); /* one left live */
}

/* The runtime's answer for a device kept for later: the ordinal is the
 * address's bits 32 and up; BAD_ADDR is an address the runtime cannot
 * place. */
#define BAD_ADDR 0x300000000ull
static int asked;

static int device_of(uint64_t addr)
{
	asked++;
	return addr == BAD_ADDR ? -1 : (int)(addr >> 32);
}

static uint64_t dev_bytes(const struct vrt_live_stats *st, int dev)
{
	for (int i = 0; i < st->ndev; i++)
		if (st->dev[i].device == dev)
			return st->dev[i].bytes;
	return 0;
}

struct devs {
	int n, dev[8];
};

static void note_device(const struct vrt_ev *ev, void *arg)
{
	struct devs *d = arg;
	if (d->n < 8)
		d->dev[d->n++] = ev->device;
}

static int has_device(const struct devs *d, int dev)
{
	for (int i = 0; i < d->n; i++)
		if (d->dev[i] == dev)
			return 1;
	return 0;
}

static void later_devices(void)
{
	struct vrt_live_stats st;
	vrt_live_set_device_of(VRT_VENDOR_CUDA, device_of);
	/* 1 then 2: the first moves into the table, the second waits in this
	 * thread's area; the third cannot be placed; the fourth is HIP's,
	 * which has no function set. */
	vrt_live_alloc(VRT_API_cuMemAlloc_v2, VRT_LIVE_DEVICE_LATER,
	               0x100000000ull, 1000, 0, 0);
	vrt_live_alloc(VRT_API_cuMemAlloc_v2, VRT_LIVE_DEVICE_LATER, BAD_ADDR,
	               5000, 0, 0);
	vrt_live_alloc(VRT_API_hipMalloc, VRT_LIVE_DEVICE_LATER, 0x400000000ull,
	               7000, 0, 0);
	vrt_live_alloc(VRT_API_cuMemAlloc_v2, VRT_LIVE_DEVICE_LATER,
	               0x200000000ull, 2000, 0, 0);
	vrt_live_stats(&st);
	ok(st.allocations == 4 && st.ndev == 2 && dev_bytes(&st, 1) == 1000 &&
	           dev_bytes(&st, 2) == 2000,
	   "devices kept for later are asked when read; unknown ones not "
	   "counted");
	ok(asked == 3, "the runtime is asked once per entry of its vendor");
	vrt_live_stats(&st);
	ok(asked == 4 && dev_bytes(&st, 1) == 1000,
	   "table entries keep the answer; only the pending one is asked "
	   "again");
	struct devs d = {0};
	vrt_live_each(note_device, &d);
	ok(d.n == 4 && has_device(&d, 1) && has_device(&d, 2) &&
	           has_device(&d, VRT_DEVICE_UNKNOWN) &&
	           !has_device(&d, VRT_LIVE_DEVICE_LATER),
	   "the snapshot names each entry's device, or unknown");
	vrt_live_free(VRT_API_cuMemFree_v2, 0x100000000ull);
	vrt_live_free(VRT_API_cuMemFree_v2, 0x200000000ull);
	vrt_live_free(VRT_API_cuMemFree_v2, BAD_ADDR);
	vrt_live_free(VRT_API_hipFree, 0x400000000ull);
	vrt_live_stats(&st);
	ok(st.allocations == 0 && st.ndev == 0, "all freed");
}

int main(void)
{
	uint64_t n, b;
	printf("1..13\n");
	ok(vrt_tbuf_init(4u << 20) == 0, "tbuf init");

	run(a_pair_loop, 0x10000000);
	b = live_bytes(&n);
	ok(n == 1 && b == 4096,
	   "own frees: only the allocation left live remains");
	release(0x10000000 + 0x1000000); /* another thread, area of an exit */
	b = live_bytes(&n);
	ok(n == 0 && b == 0, "freed from another thread after its exit");

	run(a_alloc, 0x20000000);
	ok(snapshot_count() == 1, "a pending allocation is in the snapshot");
	run(a_free, 0x20000000);
	b = live_bytes(&n);
	ok(n == 0 && b == 0, "freed by another thread while pending");

	run(a_two, 0x30000000);
	b = live_bytes(&n);
	ok(n == 2 && b == 3000 && snapshot_count() == 2,
	   "one in the table, one pending: both counted once");
	run(a_free, 0x30000000);
	run(a_free, 0x30001000);
	b = live_bytes(&n);
	ok(n == 0 && b == 0 && snapshot_count() == 0,
	   "both freed from other threads");

	release(0x40000000); /* never allocated: nothing changes */
	b = live_bytes(&n);
	ok(n == 0 && b == 0, "an unknown free changes nothing");

	later_devices();
	return failures ? 1 : 0;
}
