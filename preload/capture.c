/*
 * capture.c — the capture state every hook reads, and the sticky stop.
 *
 * vrt_state moves INIT → ARMED (constructor) → ON (first recorded event,
 * writer started) → OFF (shutdown or any internal failure), and back to
 * ARMED only in a forked child. Hooks read it with a relaxed load: a hook
 * that races with the switch to OFF records one last event or passes
 * through, both harmless. The first failure reason is kept for the one
 * warning printed at exit.
 */
#include "core.h"

#include <sched.h>
#include <stddef.h>
#include <time.h>

_Atomic int vrt_state;
static _Atomic(const char *) fail_reason;

void vrt_capture_fail(const char *reason)
{
	const char *none = NULL;
	atomic_compare_exchange_strong(&fail_reason, &none, reason);
	atomic_store(&vrt_state, VRT_STATE_OFF);
}

const char *vrt_capture_fail_reason(void)
{
	return atomic_load(&fail_reason);
}

void vrt_capture_thread_started(_Atomic int *flag)
{
	atomic_store(flag, 1);
}

void vrt_capture_wait_started(_Atomic int *flag)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!atomic_load(flag)) {
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000000000L + t.tv_nsec -
		            t0.tv_nsec >
		    200000000L)
			return; /* a slow start only loses the guarantee */
	}
}
