/*
 * annotate.c — the public annotation API of include/vramtrace.h, exported
 * by libvramtrace.so. Phases go to the calling thread's stack (phase.c);
 * request brackets and marks are events in the thread's chunk, recorded
 * like a hooked call (so the first one may start the writer).
 *
 * Threads: any application thread. Never called from inside our hooks.
 */
#include "hook.h"
#include "standby.h"

#include <vramtrace/trace_format.h>

#include <vramtrace.h>

#pragma GCC visibility push(default)

static void record(const struct vrt_ev *ev)
{
	if (!vrt_hook_enter())
		return;
	/* Open request brackets are part of a snapshot (standby.h). */
	if (ev->rec == VRT_REC_REQUEST)
		vrt_standby_request(ev->op, ev->addr);
	if (vrt_capture_on())
		vrt_tbuf_event(ev);
	else
		vrt_standby_keep(ev); /* standby writes nothing */
	vrt_hook_leave();
}

void vramtrace_phase_push(const char *phase)
{
	vrt_phase_push(phase);
}

void vramtrace_phase_pop(void)
{
	vrt_phase_pop();
}

void vramtrace_request_begin(uint64_t id)
{
	struct vrt_ev ev = {.rec = VRT_REC_REQUEST, .op = 1, .addr = id};
	record(&ev);
}

void vramtrace_request_end(uint64_t id)
{
	struct vrt_ev ev = {.rec = VRT_REC_REQUEST, .op = 2, .addr = id};
	record(&ev);
}

void vramtrace_mark(const char *label)
{
	struct vrt_ev ev = {.rec = VRT_REC_MARK, .text = label ? label : ""};
	record(&ev);
}

#pragma GCC visibility pop
