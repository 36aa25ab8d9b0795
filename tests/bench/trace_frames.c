/*
 * trace_frames.c — call sites for gen_trace's stacks. The capture core
 * drops the leading frames that belong to the module it is linked into (in
 * the preload: the hook), so the frames that make each stack distinct live
 * here, in a shared library of their own: trace_frames_walk() descends
 * through one of two functions per bit of its key and calls capture at the
 * bottom, giving 2^levels different stacks. No state; any thread.
 */
#include <stdint.h>

typedef uint32_t (*trace_frames_fn)(void);

uint32_t trace_frames_walk(unsigned key, int levels, trace_frames_fn capture);

static uint32_t descend(unsigned key, int levels, trace_frames_fn capture);

/* noinline, and a result used after the call: each level stays a frame
 * of its own (the library is also built with sibling calls off). */
__attribute__((noinline)) static uint32_t left(unsigned key, int levels,
                                               trace_frames_fn capture)
{
	volatile uint32_t id = descend(key >> 1, levels - 1, capture);
	return id;
}

__attribute__((noinline)) static uint32_t right(unsigned key, int levels,
                                                trace_frames_fn capture)
{
	volatile uint32_t id = descend(key >> 1, levels - 1, capture);
	return id;
}

__attribute__((noinline)) static uint32_t descend(unsigned key, int levels,
                                                  trace_frames_fn capture)
{
	if (levels <= 0)
		return capture();
	return key & 1 ? right(key, levels, capture)
	               : left(key, levels, capture);
}

uint32_t trace_frames_walk(unsigned key, int levels, trace_frames_fn capture)
{
	volatile uint32_t id = descend(key, levels, capture);
	return id;
}
