/*
 * clock.h — the preload's clocks (clock.c): the event stamp every hook
 * takes, the plain CLOCK_MONOTONIC readings helper threads time their
 * waits with, and the deadlines of the core's bounded condition waits.
 *
 * Every reading is CLOCK_MONOTONIC in nanoseconds (or milliseconds): a
 * wall clock step must neither reorder events nor stretch a bounded wait.
 */
#ifndef VRT_CLOCK_H
#define VRT_CLOCK_H

#include "core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

/* From vrt_tbuf_init (before any thread records): looks whether the TSC
 * may be read for stamps, takes the first calibration anchor and sets up
 * the attribute of vrt_clock_cond_init. Not thread-safe. */
void vrt_clock_init(void);

/* CLOCK_MONOTONIC from clock_gettime. Any thread. */
static inline uint64_t vrt_clock_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline int64_t vrt_clock_mono_ms(void)
{
	return (int64_t)(vrt_clock_mono_ns() / 1000000u);
}

#if defined(__x86_64__)
/* The TSC conversion the writer publishes (clock.c): seq is odd while it
 * writes; a reader uses (tsc, ns, mult) only when seq is even, nonzero
 * and unchanged across its reads, and only within stale ticks of tsc. */
struct vrt_clock_conv {
	_Atomic uint32_t seq;
	_Atomic uint64_t tsc, ns, mult, stale;
};
extern int vrt_clock_tsc_ok VRT_HIDDEN; /* set by vrt_clock_init */
extern struct vrt_clock_conv vrt_clock_conv VRT_HIDDEN;
#endif

/* The event stamp: CLOCK_MONOTONIC in ns, from the TSC converted where it
 * is invariant, else clock_gettime. Any thread, hot-path safe (inline: a
 * hook takes one per event). */
static inline uint64_t vrt_clock_now(void)
{
#if defined(__x86_64__)
	if (VRT_LIKELY(vrt_clock_tsc_ok)) {
		struct vrt_clock_conv *c = &vrt_clock_conv;
		/* Acquire loads keep the second look at the sequence after
		 * them (plain loads on x86). */
		uint32_t s =
		        atomic_load_explicit(&c->seq, memory_order_acquire);
		uint64_t t0 =
		        atomic_load_explicit(&c->tsc, memory_order_acquire);
		uint64_t n0 =
		        atomic_load_explicit(&c->ns, memory_order_acquire);
		uint64_t m =
		        atomic_load_explicit(&c->mult, memory_order_acquire);
		uint64_t stale =
		        atomic_load_explicit(&c->stale, memory_order_acquire);
		uint64_t d = __builtin_ia32_rdtsc() - t0;
		if (VRT_LIKELY(!(s & 1) && s != 0 && d < stale &&
		               atomic_load_explicit(&c->seq,
		                                    memory_order_relaxed) == s))
			return n0 +
			       (uint64_t)(((unsigned __int128)d * m) >> 32);
	}
#endif
	return vrt_clock_mono_ns();
}

/* Writer thread (or before any thread records): measures the TSC against
 * clock_gettime and publishes the conversion; call every pass (at least
 * every 250 ms to keep the TSC in use). */
void vrt_clock_calibrate(void);
/* How far below vrt_clock_now() a watermark must stay to cover stamps of
 * events still being recorded (0 with clock_gettime). */
uint64_t vrt_clock_slack(void);

/* Condition variables of the core wait on CLOCK_MONOTONIC: init one
 * (after vrt_clock_init), and compute the absolute deadline ms from now
 * for pthread_cond_timedwait. Any thread. */
void vrt_clock_cond_init(pthread_cond_t *cv);
void vrt_clock_deadline(struct timespec *ts, int ms);

/* In a forked child: the writer that calibrated is gone. */
void vrt_clock_after_fork_child(void);

#endif /* VRT_CLOCK_H */
