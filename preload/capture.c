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

#include <stddef.h>

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
