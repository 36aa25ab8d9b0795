/*
 * Attribution: decides the final phase of every allocation event of a
 * loaded trace, between loading and replay (DESIGN.md "Stacks and phases").
 *
 * In order of precedence:
 *   1. an ANNOTATION phase (vramtrace_phase_push) stands;
 *   2. with rules, the first rule (lowest index) matching any frame of the
 *      event's stack — each distinct stack is classified once;
 *   3. the writer's own tag (the STACK record's phase; load.c put it there);
 *   4. evidence, only where 1-3 left the event unattributed: a large device
 *      allocation made right after the application's own free-memory probe
 *      (a MEMINFO on the same process, thread and device within
 *      VRT_ATTRIB_PROBE_WINDOW_NS) is a KV cache reserve: phase
 *      VRT_LOAD_PHASE_INFERRED_KV, source VRT_SRC_INFERRED, reported as
 *      "kv_cache (inferred)". Large means at least VRT_ATTRIB_LARGE_BYTES
 *      AND at least a quarter of the free bytes that probe reported (every
 *      allocation of a series is measured against the same probe, so a
 *      series is tagged evenly): both, not either, because servers also
 *      probe at start-up, right before loading weights, and a weights
 *      tensor of a few GiB is not a KV reserve.
 *      Failed allocations are tagged the same way (for an OOM's phase);
 *   5. otherwise "unattributed".
 *
 * Pure: no I/O, no printing, no globals. Single-threaded.
 */
#ifndef VRT_ATTRIB_H
#define VRT_ATTRIB_H

#include <stdint.h>

#include "load.h"

struct vrt_rules;

#define VRT_ATTRIB_PROBE_WINDOW_NS 1000000000ll /* 1 s */
#define VRT_ATTRIB_LARGE_BYTES     (1ull << 30) /* 1 GiB */

/*
 * Re-classifies t's events (ordered by vrt_load_finish) as above; rules may
 * be NULL (then only step 4 runs). New phase names from the rules are added
 * to t's phase table. Returns 0, or -1 when out of memory.
 */
int vrt_attrib_run(struct vrt_trace *t, const struct vrt_rules *rules);

#endif /* VRT_ATTRIB_H */
