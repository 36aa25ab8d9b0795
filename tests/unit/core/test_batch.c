/*
 * Unit test of BATCH records (trace format 5) end to end: threads record
 * scripted ALLOC and FREE events through the capture core (tbuf.c), the
 * writer re-encodes them (batch.c) and streams the file, and the
 * analyzer's loader (load.c) reads it back. Every event must come back
 * with its exact address, size, api, device, aux and phase, in its
 * thread's order, and a time at most one unit (the writer's, 1.05 ms
 * here) before the moment it was recorded. The scripts cover what the
 * per-thread state must get right: a caching pool's address reuse with
 * lifetimes interleaved (a ring of live blocks, 64 call sites, sizes per
 * site, each site's size drawn anew from a few) over many chunks and
 * writer passes; frees from another thread; more sites than the site
 * table, more sizes and classes than their tables, sizes that share a
 * 512-byte class, deeper free lists and longer lifetimes than the format
 * keeps; values that do not pack (written as full records); folded pairs,
 * long runs (REPEAT records between batches) and single pairs between
 * other events (pairs inside batches); marks between events; and a thread
 * whose state the writer dropped (more threads than it keeps) and
 * started again. What rounded times must not break, with threads running
 * at once: two threads handing the same addresses back and forth within
 * a unit (every free after its allocation, no address allocated twice),
 * and another thread's marks (no event recorded after a mark is read
 * before it). The file must also hold the events as BATCH records. TAP
 * output.
 */
#include "clock.h"
#include "core.h"
#include "load/load.h"

#include <vramtrace/trace_format.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zstd.h>

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

/* ---- what the threads recorded ------------------------------------------ */

struct want {
	uint64_t addr, size, aux, lo, hi; /* lo, hi: the clock around it */
	int32_t device;
	uint8_t kind, api, phase; /* kind: VRT_EV_ALLOC or VRT_EV_FREE */
};

#define MAX_LOGS 512

struct log {
	pid_t tid;
	struct want *w;
	size_t n, cap, next; /* next: the first not yet matched */
};

static struct log logs[MAX_LOGS];
static int nlogs;
static pthread_mutex_t logs_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct log *my_log;

static struct log *log_self(void)
{
	if (!my_log) {
		pthread_mutex_lock(&logs_mu);
		if (nlogs < MAX_LOGS) {
			my_log = &logs[nlogs++];
			my_log->tid = (pid_t)syscall(SYS_gettid);
		}
		pthread_mutex_unlock(&logs_mu);
	}
	return my_log;
}

/* Records one event and what it should read back as. */
static void rec(int alloc, uint64_t addr, uint64_t size, int api, int dev,
                uint64_t aux, uint32_t stack, unsigned phase)
{
	struct log *l = log_self();
	struct vrt_ev ev = {.rec = alloc ? VRT_REC_ALLOC : VRT_REC_FREE,
	                    .api = (uint8_t)api,
	                    .device = dev,
	                    .addr = addr,
	                    .size = alloc ? size : 0,
	                    .aux = aux,
	                    .stack = stack,
	                    .phase = phase ? vrt_phase_encode(
	                                             phase, VRT_SRC_ANNOTATION)
	                                   : 0};
	uint64_t lo = vrt_clock_now();
	vrt_tbuf_event(&ev);
	uint64_t hi = vrt_clock_now();
	if (!l)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 1024;
		l->w = realloc(l->w, l->cap * sizeof(*l->w));
		if (!l->w)
			abort();
	}
	struct want *w = &l->w[l->n++];
	w->addr = addr;
	w->size = alloc ? size : 0;
	w->aux = aux;
	w->lo = lo;
	w->hi = hi;
	w->device = dev;
	w->kind = alloc ? VRT_EV_ALLOC : VRT_EV_FREE;
	w->api = (uint8_t)api;
	w->phase = (uint8_t)phase;
}

static void mark(const char *label)
{
	struct vrt_ev ev = {.rec = VRT_REC_MARK, .text = label};
	vrt_tbuf_event(&ev);
}

/* ---- a caching pool's addresses ------------------------------------------ */

/* Per-thread: a freed block goes on a last-in-first-out list of its size
 * rounded up to 512 bytes, and the next allocation of that size (or
 * another that rounds alike) takes it back. */
#define POOL_SIZES 8192
#define POOL_DEPTH 32

struct pool {
	uint64_t base, bump;
	uint64_t size[POOL_SIZES];
	uint32_t n[POOL_SIZES];
	uint64_t lifo[POOL_SIZES][POOL_DEPTH];
	uint32_t nsizes;
};

static uint32_t pool_class(struct pool *p, uint64_t size)
{
	size = (size + 511) & ~511ull;
	for (uint32_t i = 0; i < p->nsizes; i++)
		if (p->size[i] == size)
			return i;
	if (p->nsizes == POOL_SIZES)
		abort();
	p->size[p->nsizes] = size;
	return p->nsizes++;
}

static uint64_t pool_alloc(struct pool *p, uint64_t size)
{
	uint32_t c = pool_class(p, size);
	if (p->n[c])
		return p->lifo[c][--p->n[c]];
	uint64_t a = p->base + p->bump;
	p->bump += (size + 511) & ~511ull;
	return a;
}

static void pool_free(struct pool *p, uint64_t addr, uint64_t size)
{
	uint32_t c = pool_class(p, size);
	if (p->n[c] < POOL_DEPTH)
		p->lifo[c][p->n[c]++] = addr;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- the scripts ------------------------------------------------------------ */

#define MIX_PAIRS 60000
#define RING      256

/* 64 call sites (stack, size, phase, device), a ring of live blocks each
 * freed RING allocations later, a mark now and then. */
static void *script_mixed(void *arg)
{
	uint64_t seed = (uintptr_t)arg, r = 0x9e3779b97f4a7c15ull * seed;
	static __thread struct pool p;
	uint64_t ring_a[RING] = {0}, ring_s[RING] = {0};
	memset(&p, 0, sizeof(p));
	p.base = (seed + 1) << 40;
	for (uint64_t i = 0; i < MIX_PAIRS; i++) {
		uint64_t x = rng_next(&r);
		unsigned site = (unsigned)(x % 64);
		/* A few sizes per site, drawn anew each time: some share a
		 * 512-byte class (+256 and +512 round alike). */
		uint64_t size = (4096ull << (site % 11)) + 512 * (site % 5) +
		                256 * ((x >> 20) % (1 + site % 6));
		uint64_t a = pool_alloc(&p, size);
		rec(1, a, size, VRT_API_cuMemAllocAsync, (int)(site % 2), 7,
		    100 + site, site % 4 ? 3 : 2);
		unsigned k = (unsigned)(i % RING);
		if (ring_a[k]) {
			rec(0, ring_a[k], 0, VRT_API_cuMemFreeAsync,
			    VRT_DEVICE_UNKNOWN, 7, 0, 3);
			pool_free(&p, ring_a[k], ring_s[k]);
		}
		ring_a[k] = a;
		ring_s[k] = size;
		if (i % 5000 == 4999)
			mark("step");
	}
	for (unsigned k = 0; k < RING; k++)
		if (ring_a[k])
			rec(0, ring_a[k], 0, VRT_API_cuMemFreeAsync,
			    VRT_DEVICE_UNKNOWN, 7, 0, 3);
	vrt_tbuf_thread_exit();
	return NULL;
}

#define CROSS 3000
static uint64_t cross_addr[CROSS];

static void *script_cross_alloc(void *arg)
{
	(void)arg;
	for (int i = 0; i < CROSS; i++) {
		cross_addr[i] = (7ull << 40) + (uint64_t)i * 8192;
		rec(1, cross_addr[i], 8192, VRT_API_cuMemAlloc_v2, 0, 0, 5, 0);
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

static void *script_cross_free(void *arg)
{
	(void)arg;
	for (int i = CROSS; i-- > 0;)
		rec(0, cross_addr[i], 0, VRT_API_cuMemFree_v2,
		    VRT_DEVICE_UNKNOWN, 0, 0, 0);
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Two threads at once, each making WIDE distinct addresses as fast as it
 * can: a writer's pass then usually holds more addresses than the
 * shared-address map may (batch.c's XMAP_MAX_SLOTS / 2), and that pass
 * keeps its times exact; every event must still come back as made. */
#define WIDE 40000
static pthread_barrier_t wide_bar;

static void *script_wide(void *arg)
{
	uint64_t base = (9ull + (uintptr_t)arg) << 40;
	pthread_barrier_wait(&wide_bar);
	for (int i = 0; i < WIDE; i++)
		rec(1, base + (uint64_t)i * 4096, 4096, VRT_API_cuMemAlloc_v2, 0,
		    0, 7, 0);
	for (int i = 0; i < WIDE; i++)
		rec(0, base + (uint64_t)i * 4096, 0, VRT_API_cuMemFree_v2,
		    VRT_DEVICE_UNKNOWN, 0, 0, 0);
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Past every table of the format: sites, sizes, classes, a site's
 * recent sizes, list depth, ring. */
static void *script_tables(void *arg)
{
	(void)arg;
	static struct pool p;
	static uint64_t live[6000];
	memset(&p, 0, sizeof(p));
	p.base = 9ull << 40;
	/* 5000 sites, 4500 sizes (and classes), each block freed right
	 * away, then 500 more from the first sizes (replaced by then) */
	for (uint32_t i = 0; i < 5500; i++) {
		uint64_t size = 512 * (1 + i % 4500), a = pool_alloc(&p, size);
		rec(1, a, size, VRT_API_cuMemAlloc_v2, 1, 0, 1000 + i % 5000,
		    0);
		rec(0, a, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
		pool_free(&p, a, size);
	}
	/* One site going round 12 sizes: more than its recent sizes */
	for (uint32_t i = 0; i < 600; i++) {
		uint64_t size = 100000 + 1000 * (i % 12), a = pool_alloc(&p, size);
		rec(1, a, size, VRT_API_cuMemAlloc_v2, 1, 0, 17, 0);
		rec(0, a, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
		pool_free(&p, a, size);
	}
	/* 40 blocks of one size freed, then taken again: a list of 40 */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 40; i++) {
			live[i] = pool_alloc(&p, 65536);
			rec(1, live[i], 65536, VRT_API_cuMemAlloc_v2, 1, 0, 7, 1);
		}
		for (int i = 0; i < 40; i++) {
			rec(0, live[i], 0, VRT_API_cuMemFree_v2,
			    VRT_DEVICE_UNKNOWN, 0, 0, 1);
			pool_free(&p, live[i], 65536);
		}
	}
	/* 12 blocks of one size freed, then taken again in another order
	 * (a pool that does not hand out its newest block first): each from
	 * somewhere in the list */
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 12; i++) {
			int k = (i * 5 + 3 * round) % 12;
			live[i] = (10ull << 40) + 1048576 * (uint64_t)k;
			/* a size of the first 1024: it has a slot */
			rec(1, live[i], 512000, VRT_API_cuMemAlloc_v2, 1, 0, 6,
			    0);
		}
		for (int i = 0; i < 12; i++)
			rec(0, live[i], 0, VRT_API_cuMemFree_v2,
			    VRT_DEVICE_UNKNOWN, 0, 0, 0);
	}
	/* 6000 live at once, freed oldest first: past the ring */
	for (int i = 0; i < 6000; i++) {
		live[i] = pool_alloc(&p, 1024);
		rec(1, live[i], 1024, VRT_API_cuMemAlloc_v2, 0, 0, 8, 0);
	}
	for (int i = 0; i < 6000; i++) {
		rec(0, live[i], 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0,
		    0, 0);
		pool_free(&p, live[i], 1024);
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Values that do not pack (full records), and folded pairs (REPEAT)
 * between batches. */
static void *script_odd(void *arg)
{
	(void)arg;
	uint64_t a = 0x10, b = 0x4000000000000011ull, huge = (1ull << 62) + 1;
	for (int i = 0; i < 50; i++) {
		rec(1, a + 512 * (uint64_t)i, 512, VRT_API_cuMemAlloc_v2, 0, 0,
		    3, 0);
		rec(1, b, 4096, VRT_API_cuMemAlloc_v2, 0, 0, 3, 0);
		rec(1, (5ull << 40) + 4096 * (uint64_t)i, huge,
		    VRT_API_cuMemAllocManaged, 0, 1, 4, 0);
		rec(0, b, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
		rec(0, a + 512 * (uint64_t)i, 0, VRT_API_cuMemFree_v2,
		    VRT_DEVICE_UNKNOWN, 0, 0, 0);
		/* the same pair again and again: folded */
		for (int k = 0; k < 20; k++) {
			rec(1, 0x7000, 2048, VRT_API_cuMemAlloc_v2, 0, 0, 9, 0);
			rec(0, 0x7000, 0, VRT_API_cuMemFree_v2,
			    VRT_DEVICE_UNKNOWN, 0, 0, 0);
		}
		mark("odd");
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Single folded pairs between other events (a layer's scratch block:
 * each run of folded pairs is one pair long), and runs of 3. */
static void *script_pairs(void *arg)
{
	(void)arg;
	uint64_t base = 15ull << 40;
	for (int i = 0; i < 3000; i++) {
		uint64_t size = 8192 * (1 + (uint64_t)(i / 300));
		rec(1, base, size, VRT_API_cuMemAllocAsync, 0, 3, 21, 0);
		for (int k = 0; k < 1 + 2 * (i % 2); k++) {
			rec(1, base + (1 << 20), 4096, VRT_API_cuMemAllocAsync,
			    0, 3, 22, 0);
			rec(0, base + (1 << 20), 0, VRT_API_cuMemFreeAsync,
			    VRT_DEVICE_UNKNOWN, 3, 0, 0);
		}
		rec(0, base, 0, VRT_API_cuMemFreeAsync, VRT_DEVICE_UNKNOWN, 3,
		    0, 0);
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Two threads allocating from one pool at once, each freeing blocks the
 * other may have allocated: addresses change hands within microseconds,
 * and each thread gets back addresses it freed itself after the other
 * used them. Each event is recorded under the pool's lock, so the order
 * of the records is the order of the calls. */
#define HAND_OPS  20000
#define HAND_LIVE 4
static pthread_mutex_t hand_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t hand_free[64], hand_bump;
static int hand_nfree;
static uint64_t hand_live[2 * HAND_LIVE];
static pthread_barrier_t hand_bar;

static void *script_handoff(void *arg)
{
	uintptr_t me = (uintptr_t)arg;
	uint64_t r = 0x51ed270b27d5a6a9ull * (me + 1);
	unsigned prev = 2 * HAND_LIVE;
	pthread_barrier_wait(&hand_bar);
	for (int i = 0; i < HAND_OPS; i++) {
		/* a slot of either thread's: free what it holds (maybe the
		 * other thread's block), then allocate into it. Never the
		 * slot this thread just allocated into: the hot path would
		 * fold that allocation and the free after it into a pair
		 * (REPEAT), which has no address, even when the other thread
		 * freed and took the address again in between. */
		unsigned k = (unsigned)(rng_next(&r) % (2 * HAND_LIVE - 1));
		k += k >= prev;
		prev = k;
		pthread_mutex_lock(&hand_mu);
		if (hand_live[k]) {
			rec(0, hand_live[k], 0, VRT_API_cuMemFreeAsync,
			    VRT_DEVICE_UNKNOWN, 0, 0, 0);
			if (hand_nfree < 64)
				hand_free[hand_nfree++] = hand_live[k];
		}
		uint64_t a = hand_nfree ? hand_free[--hand_nfree]
		                        : (17ull << 40) + 65536 * hand_bump++;
		rec(1, a, 65536, VRT_API_cuMemAllocAsync, 0, 0, 30 + me, 0);
		hand_live[k] = a;
		/* A driver call takes microseconds: the other thread's next
		 * call on these addresses is not within the clock's reach
		 * of this one (two threads' stamps a few ns apart may come
		 * out equal, and equal times are ordered by the file). */
		uint64_t until = vrt_clock_now() + 300;
		while (vrt_clock_now() < until)
			;
		pthread_mutex_unlock(&hand_mu);
	}
	pthread_barrier_wait(&hand_bar);
	if (me == 0)
		for (unsigned k = 0; k < 2 * HAND_LIVE; k++)
			if (hand_live[k])
				rec(0, hand_live[k], 0, VRT_API_cuMemFreeAsync,
				    VRT_DEVICE_UNKNOWN, 0, 0, 0);
	vrt_tbuf_thread_exit();
	return NULL;
}

/* Marks of one thread while another allocates: no event recorded after a
 * mark may be read before it. mark_hi[i]: the clock once mark i was
 * recorded. */
#define MARKS 400
static uint64_t mark_hi[MARKS];
static _Atomic int marks_done;

static void *script_marker(void *arg)
{
	(void)arg;
	char label[32];
	for (int i = 0; i < MARKS; i++) {
		snprintf(label, sizeof(label), "m%d", i);
		mark(label);
		mark_hi[i] = vrt_clock_now();
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	atomic_store(&marks_done, 1);
	vrt_tbuf_thread_exit();
	return NULL;
}

static void *script_busy(void *arg)
{
	(void)arg;
	uint64_t base = 19ull << 40;
	/* two live at a time, so that no pair folds */
	for (uint64_t i = 0; !atomic_load(&marks_done); i++) {
		uint64_t a = base + 4096 * (i % 8), b = a + (1 << 20);
		rec(1, a, 4096, VRT_API_cuMemAlloc_v2, 0, 0, 40, 0);
		rec(1, b, 4096, VRT_API_cuMemAlloc_v2, 0, 0, 41, 0);
		rec(0, a, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
		rec(0, b, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

/* A thread that outlives its state in the writer: it allocates, waits
 * while more threads than the writer keeps states for come and go, then
 * frees and allocates again. */
static pthread_barrier_t evict_bar;

static void *script_short(void *arg)
{
	uint64_t base = (11ull << 40) + ((uintptr_t)arg << 20);
	rec(1, base, 4096, VRT_API_cuMemAlloc_v2, 0, 0, 2, 0);
	rec(1, base + 4096, 4096, VRT_API_cuMemAlloc_v2, 0, 0, 2, 0);
	rec(0, base, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0, 0);
	rec(0, base + 4096, 0, VRT_API_cuMemFree_v2, VRT_DEVICE_UNKNOWN, 0, 0,
	    0);
	vrt_tbuf_thread_exit();
	return NULL;
}

static void *script_evicted(void *arg)
{
	(void)arg;
	uint64_t base = 13ull << 40;
	for (int i = 0; i < 10; i++)
		rec(1, base + 8192 * (uint64_t)i, 8192, VRT_API_cuMemAlloc_v2,
		    0, 0, 2, 0);
	pthread_barrier_wait(&evict_bar); /* others run */
	pthread_barrier_wait(&evict_bar);
	for (int i = 0; i < 10; i++) {
		rec(0, base + 8192 * (uint64_t)i, 0, VRT_API_cuMemFree_v2,
		    VRT_DEVICE_UNKNOWN, 0, 0, 0);
		rec(1, base + 8192 * (uint64_t)i, 8192, VRT_API_cuMemAlloc_v2,
		    0, 0, 2, 0);
		rec(0, base + 8192 * (uint64_t)i, 0, VRT_API_cuMemFree_v2,
		    VRT_DEVICE_UNKNOWN, 0, 0, 0);
	}
	vrt_tbuf_thread_exit();
	return NULL;
}

/* ---- reading it back ----------------------------------------------------------- */

static struct log *log_of(uint32_t tid)
{
	for (int i = 0; i < nlogs; i++)
		if ((uint32_t)logs[i].tid == tid)
			return &logs[i];
	return NULL;
}

struct check {
	uint64_t events, mismatches, early, late_clock, unknown_tid, repeats;
	uint64_t order;      /* a free delivered before its allocation's */
	uint64_t marks;      /* the marks delivered so far (in order) */
	uint64_t mark_order; /* an event read before a mark it followed */
};

#define UNIT_NS (1ull << 20) /* the writer's time unit here */

/* Devices by final index: what the trace's device index means. */
static int32_t ordinal_of(const struct vrt_trace *t, int32_t dev)
{
	if (dev < 0)
		return VRT_DEVICE_UNKNOWN;
	uint32_t g = t->device_remap ? t->device_remap[dev] : (uint32_t)dev;
	return g < t->ndevices ? (int32_t)t->devices[g].ordinal : -99;
}

static void first_mismatch(const struct vrt_event *e, const struct want *w)
{
	printf("# tid %u: got kind %u addr %#llx size %llu api %u aux %llu "
	       "phase %u ts %lld; want kind %u addr %#llx size %llu api %u "
	       "aux %llu phase %u in [%llu, %llu]\n",
	       e->tid, e->kind, (unsigned long long)e->addr,
	       (unsigned long long)e->size, e->api,
	       (unsigned long long)e->aux, e->phase, (long long)e->ts,
	       w->kind, (unsigned long long)w->addr,
	       (unsigned long long)w->size, w->api,
	       (unsigned long long)w->aux, w->phase,
	       (unsigned long long)w->lo, (unsigned long long)w->hi);
}

/* Devices are checked once the stream has ended (their final indexes). */
struct devcheck {
	int32_t dev, want;
};

static struct devcheck *devs;
static size_t ndevs, capdevs;

/* The addresses live in the delivered stream (all threads together): a
 * free must find its allocation already delivered. */
#define LIVE_BITS 20
static uint64_t live_set[1u << LIVE_BITS];

static uint64_t *live_slot(uint64_t addr)
{
	uint32_t i = (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >>
	                        (64 - LIVE_BITS));
	while (live_set[i] && live_set[i] != addr)
		i = (i + 1) & ((1u << LIVE_BITS) - 1);
	return &live_set[i];
}

static void order_broken(const struct vrt_event *e, struct check *c)
{
	if (!c->order++) {
		printf("# out of order: tid %u %s %#llx at %lld\n", e->tid,
		       e->kind == VRT_EV_ALLOC ? "alloc" : "free",
		       (unsigned long long)e->addr, (long long)e->ts);
	}
}

static void live_track(const struct vrt_event *e, struct check *c)
{
	uint64_t *s = live_slot(e->addr);
	if (e->kind == VRT_EV_ALLOC) {
		if (*s)
			order_broken(e, c);
		*s = e->addr;
		return;
	}
	if (!*s) {
		order_broken(e, c);
		return;
	}
	/* Removal with the rest of the probe chain moved back. */
	uint32_t i = (uint32_t)(s - live_set), mask = (1u << LIVE_BITS) - 1;
	for (uint32_t j = (i + 1) & mask; live_set[j]; j = (j + 1) & mask) {
		uint32_t h = (uint32_t)((live_set[j] * 0x9e3779b97f4a7c15ull) >>
		                        (64 - LIVE_BITS));
		if (((j - h) & mask) >= ((j - i) & mask)) {
			live_set[i] = live_set[j];
			i = j;
		}
	}
	live_set[i] = 0;
}

static void check_event(const struct vrt_event *e, struct check *c)
{
	struct log *l = log_of(e->tid);
	if (e->kind != VRT_EV_REPEAT)
		live_track(e, c);
	if (!l) {
		c->unknown_tid++;
		return;
	}
	if (e->kind == VRT_EV_REPEAT) {
		/* e->addr pairs, each an alloc of e->size and its free */
		c->repeats++;
		for (uint64_t k = 0; k < e->addr; k++) {
			const struct want *a = &l->w[l->next],
			                  *f = &l->w[l->next + 1];
			if (l->next + 2 > l->n || a->kind != VRT_EV_ALLOC ||
			    f->kind != VRT_EV_FREE || a->size != e->size ||
			    f->addr != a->addr)
				c->mismatches++;
			l->next += 2;
			c->events += 2;
		}
		return;
	}
	if (l->next >= l->n) {
		c->mismatches++;
		return;
	}
	const struct want *w = &l->w[l->next++];
	c->events++;
	if (e->kind != w->kind || e->addr != w->addr || e->size != w->size ||
	    e->api != w->api || e->aux != w->aux || e->phase != w->phase ||
	    (w->phase && e->phase_src != VRT_SRC_ANNOTATION)) {
		if (!c->mismatches)
			first_mismatch(e, w);
		c->mismatches++;
	}
	if ((uint64_t)e->ts + UNIT_NS <= w->lo)
		c->early++;
	/* Every mark recorded before this event was: delivered already. */
	uint64_t lo = 0, hi = MARKS;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (mark_hi[mid] && mark_hi[mid] < w->lo)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > c->marks)
		c->mark_order++;
	if ((uint64_t)e->ts > w->hi)
		c->late_clock++;
	if (ndevs == capdevs) {
		capdevs = capdevs ? 2 * capdevs : 4096;
		devs = realloc(devs, capdevs * sizeof(*devs));
		if (!devs)
			abort();
	}
	devs[ndevs].dev = e->device;
	devs[ndevs++].want = w->device < 0 ? VRT_DEVICE_UNKNOWN : w->device;
}

/* Record types at the top level of every frame: BATCH records and the
 * events in them, and the hot path's own ALLOC and FREE kinds. */
static void scan_file(const char *path, uint64_t *batches,
                      uint64_t *batch_events, uint64_t *rows,
                      uint64_t *pairs, uint64_t *repeats)
{
	FILE *fp = fopen(path, "rb");
	*batches = *batch_events = *rows = *pairs = *repeats = 0;
	if (!fp)
		return;
	fseek(fp, 0, SEEK_END);
	long len = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	uint8_t *in = malloc((size_t)len);
	size_t cap = 64u << 20;
	uint8_t *out = malloc(cap);
	if (!in || !out || fread(in, 1, (size_t)len, fp) != (size_t)len)
		abort();
	fclose(fp);
	for (size_t off = 0; off < (size_t)len;) {
		size_t fl = ZSTD_findFrameCompressedSize(in + off, len - off);
		if (ZSTD_isError(fl))
			break;
		size_t n = ZSTD_decompress(out, cap, in + off, fl);
		off += fl;
		if (ZSTD_isError(n))
			break;
		const uint8_t *p = out, *end = out + n;
		while (p < end) {
			unsigned type = *p++;
			uint64_t plen, span, cnt, flags, np;
			if (vrt_get_uvarint(&p, end, &plen) ||
			    plen > (uint64_t)(end - p))
				break;
			const uint8_t *q = p;
			if (type == VRT_REC_BATCH &&
			    !vrt_get_uvarint(&q, p + plen, &span) &&
			    !vrt_get_uvarint(&q, p + plen, &cnt) &&
			    !vrt_get_uvarint(&q, p + plen, &flags) &&
			    !vrt_get_uvarint(&q, p + plen, &np)) {
				(*batches)++;
				*batch_events += cnt + np;
				*pairs += np;
			}
			if (type == VRT_REC_REPEAT)
				(*repeats)++;
			if (type == VRT_REC_ALLOC || type == VRT_REC_FREE ||
			    type == VRT_REC_ALLOC_C || type == VRT_REC_FREE_C)
				(*rows)++;
			p += plen;
		}
	}
	free(in);
	free(out);
}

int main(void)
{
	char dir[] = "/tmp/vrt-batch-XXXXXX";
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	printf("1..14\n");
	atomic_store(&vrt_state, VRT_STATE_ON);
	ok(vrt_tbuf_init(16u << 20) == 0, "tbuf init");
	vrt_batch_set_time_us(1000); /* UNIT_NS */
	ok(vrt_writer_start(dir, 20, 1) == 0, "writer starts");

	/* Two mixed threads at once, then the rest one after another. */
	pthread_t th[4];
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, script_mixed, (void *)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_create(&th[0], NULL, script_cross_alloc, NULL);
	pthread_join(th[0], NULL);
	vrt_writer_sync(5000);
	pthread_create(&th[0], NULL, script_cross_free, NULL);
	pthread_join(th[0], NULL);
	pthread_create(&th[0], NULL, script_tables, NULL);
	pthread_join(th[0], NULL);
	pthread_create(&th[0], NULL, script_odd, NULL);
	pthread_join(th[0], NULL);
	pthread_create(&th[0], NULL, script_pairs, NULL);
	pthread_join(th[0], NULL);
	pthread_barrier_init(&hand_bar, NULL, 2);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, script_handoff, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	vrt_writer_sync(5000);
	pthread_barrier_init(&wide_bar, NULL, 2);
	for (uintptr_t i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, script_wide, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	pthread_create(&th[0], NULL, script_marker, NULL);
	pthread_create(&th[1], NULL, script_busy, NULL);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);

	pthread_barrier_init(&evict_bar, NULL, 2);
	pthread_create(&th[1], NULL, script_evicted, NULL);
	pthread_barrier_wait(&evict_bar);
	vrt_writer_sync(5000);
	for (uintptr_t i = 0; i < 300; i++) {
		pthread_t s;
		pthread_create(&s, NULL, script_short, (void *)i);
		pthread_join(s, NULL);
		if (i % 50 == 49)
			vrt_writer_sync(5000);
	}
	vrt_writer_sync(5000);
	pthread_barrier_wait(&evict_bar);
	pthread_join(th[1], NULL);
	vrt_writer_stop(5000);

	char path[256];
	snprintf(path, sizeof(path), "%s/%d%s", dir, (int)getpid(),
	         VRT_TRACE_SUFFIX);
	uint64_t batches, batch_events, rows, pairs, repeats, want_events = 0;
	for (int i = 0; i < nlogs; i++)
		want_events += logs[i].n;
	scan_file(path, &batches, &batch_events, &rows, &pairs, &repeats);
	ok(batches > 0 && batch_events + rows >= want_events * 9 / 10 &&
	           rows < want_events / 50,
	   "the file holds the events as BATCH records");
	ok(pairs >= 3000 && repeats > 0,
	   "short runs of folded pairs are pairs in BATCH records, long "
	   "ones REPEAT records");
	printf("# %llu events, %llu in %llu BATCH records (%llu pairs), "
	       "%llu other records, %llu REPEAT records\n",
	       (unsigned long long)want_events,
	       (unsigned long long)batch_events, (unsigned long long)batches,
	       (unsigned long long)pairs, (unsigned long long)rows,
	       (unsigned long long)repeats);

	struct vrt_trace t;
	struct vrt_load_error err;
	struct check c = {0};
	static struct vrt_event buf[4096];
	char *paths[] = {path};
	enum vrt_load_status st;
	memset(&t, 0, sizeof(t));
	st = vrt_load_open(&t, paths, 1, &err);
	if (!st) {
		for (;;) {
			size_t n;
			st = vrt_load_next(&t, buf, 4096, &n, &err);
			if (st || !n)
				break;
			for (size_t i = 0; i < n; i++)
				if (buf[i].kind == VRT_EV_ALLOC ||
				    buf[i].kind == VRT_EV_FREE ||
				    buf[i].kind == VRT_EV_REPEAT)
					check_event(&buf[i], &c);
				else if (buf[i].kind == VRT_EV_MARK &&
				         buf[i].extra < t.nstrs &&
				         t.strs[buf[i].extra] &&
				         t.strs[buf[i].extra][0] == 'm')
					c.marks++;
		}
	}
	if (st)
		printf("# load: %s\n", err.msg);
	ok(st == VRT_LOAD_OK, "the loader reads the file");
	size_t left = 0;
	for (int i = 0; i < nlogs; i++)
		left += logs[i].n - logs[i].next;
	ok(c.events == want_events && left == 0 && !c.unknown_tid,
	   "every event comes back once, in its thread's order");
	ok(c.mismatches == 0,
	   "addresses, sizes, apis, aux and phases are exact");
	size_t devbad = 0;
	for (size_t i = 0; i < ndevs; i++)
		devbad += ordinal_of(&t, devs[i].dev) != devs[i].want;
	ok(ndevs && devbad == 0, "devices are exact");
	ok(c.early == 0 && c.late_clock == 0,
	   "times are at most one unit before the recorded moment");
	ok(t.events_late == 0, "no event comes after a later one");
	ok(c.order == 0, "every free comes after its allocation, whichever "
	                 "thread made them");
	ok(c.repeats > 0, "folded pairs count as pairs");
	ok(c.marks == MARKS && c.mark_order == 0,
	   "no event is read before another thread's mark it followed");
	printf("# marks %llu, events before a mark they followed %llu\n",
	       (unsigned long long)c.marks, (unsigned long long)c.mark_order);
	if (c.mismatches || c.early || c.late_clock || left)
		printf("# events %llu of %llu, mismatches %llu, early %llu, "
		       "late %llu, left %zu\n",
		       (unsigned long long)c.events,
		       (unsigned long long)want_events,
		       (unsigned long long)c.mismatches,
		       (unsigned long long)c.early,
		       (unsigned long long)c.late_clock, left);
	ok(t.procs && t.procs[0].events_dropped == 0,
	   "nothing was dropped");
	vrt_load_free(&t);
	unlink(path);
	rmdir(dir);
	return failures ? 1 : 0;
}
