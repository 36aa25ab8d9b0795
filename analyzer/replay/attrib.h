/*
 * Attribution: decides the final phase of every allocation event of a
 * loaded trace, between loading and replay (docs/design.md "Stacks and
 * phases").
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

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"

struct vrt_rules;

#define VRT_ATTRIB_PROBE_WINDOW_NS 1000000000ll /* 1 s */
#define VRT_ATTRIB_LARGE_BYTES     (1ull << 30) /* 1 GiB */

/*
 * Attribution runs over the event stream, batch by batch, in time order
 * (vrt_load_next's order): each distinct stack is classified once, when an
 * event first names it (stacks may join t's table while streaming), and the
 * evidence of step 4 needs only the last probe per (process, thread,
 * device). Memory: one word per stack and per frame seen, and the probes.
 */
struct vrt_attrib;

/* A state for t's stream; rules may be NULL (then only step 4 runs).
 * NULL when out of memory. */
struct vrt_attrib *vrt_attrib_new(const struct vrt_trace *t,
                                  const struct vrt_rules *rules);

/*
 * Re-classifies the n events of ev in place (the next ones of t's stream),
 * as above. New phase names from the rules are added to t's phase table.
 * Returns 0, or -1 when out of memory.
 */
int vrt_attrib_feed(struct vrt_attrib *a, struct vrt_trace *t,
                    struct vrt_event *ev, size_t n);

/*
 * The rule that decides stack (an index into t's stack table) under a's
 * rules, from the same per-stack cache vrt_attrib_feed fills: a rule index
 * of the rule set (rules.h), VRT_RULE_NONE when no rule matches (or a is
 * without rules, or stack is 0 or out of range), or -1 when out of memory.
 */
int vrt_attrib_stack_rule(struct vrt_attrib *a, const struct vrt_trace *t,
                          uint32_t stack);

void vrt_attrib_free(struct vrt_attrib *a);

#endif /* VRT_ATTRIB_H */
