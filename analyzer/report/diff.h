/*
 * Diff: two replayed runs in (A, before; B, after); what changed out, for
 * `vramtrace compare`: per matched device its peak, every phase's and
 * family's peak and the split of the device's peak by phase; requests in
 * flight, out-of-memory failures and host pinned memory; and the call
 * paths live at each device's peak, matched by names.
 *
 * Devices match by uuid when both runs know it, else by (host, vendor,
 * ordinal); when each run comes from one host and the hosts differ (the
 * same test on another machine), the devices left over match by (vendor,
 * ordinal).
 *
 * A call path matches by what survives a rebuild or another load address:
 * for each frame its function name and the last component of its module
 * (native) or file (Python), never addresses, offsets or line numbers;
 * together with the phase. Two stacks of one run that differ only in
 * those add up.
 *
 * Pure: no I/O, no printing, no globals. The result copies the names it
 * needs, and keeps stack indexes into each trace for printing frames.
 */
#ifndef VRT_DIFF_H
#define VRT_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"
#include "replay/replay.h"

#define VRT_DIFF_NAME 48 /* phase names are cut to this (with the NUL) */

struct vrt_diff_pair {
	uint64_t a, b;
};

struct vrt_diff_phase {
	char name[VRT_DIFF_NAME];
	struct vrt_diff_pair peak;    /* the phase's own peak */
	struct vrt_diff_pair at_peak; /* its live bytes at the device's peak */
};

struct vrt_diff_device {
	int32_t a, b; /* device index in A's / B's trace; -1: not in that run */
	struct vrt_diff_pair peak;
	struct vrt_diff_pair fam[VRT_FAM_COUNT]; /* each family's peak */
	struct vrt_diff_phase *phases;           /* A's slot order, then B's */
	size_t nphases;
};

enum vrt_diff_change {
	VRT_DIFF_GREW = 1,
	VRT_DIFF_SHRANK = 2,
	VRT_DIFF_APPEARED = 3,
	VRT_DIFF_DISAPPEARED = 4,
};

struct vrt_diff_site {
	size_t dev; /* index into vrt_diff.dev */
	char phase[VRT_DIFF_NAME];
	uint32_t stack_a, stack_b; /* one stack of the path in A / B's trace
	                              (0: not live at that run's peak) */
	struct vrt_diff_pair bytes, allocs;
	int change; /* enum vrt_diff_change */
};

struct vrt_diff {
	struct vrt_diff_device *dev; /* A's devices in order, then B's rest */
	size_t ndev;
	struct vrt_diff_site *sites; /* changed paths, largest |delta| first */
	size_t nsites;
	size_t sites_same; /* paths live at both peaks with equal bytes */
	struct vrt_diff_pair ooms, max_inflight, single_request, pinned_peak;
	int have_single_request_a, have_single_request_b;
};

/*
 * Compares run A (ta, ra) with run B (tb, rb) into *d, which must be
 * zeroed. Sites come from ra/rb->sites, so replay them with top_sites set
 * to SIZE_MAX to see every path. Returns 0, or -1 when out of memory
 * (release *d with vrt_diff_free either way).
 */
int vrt_diff_run(struct vrt_diff *d, const struct vrt_trace *ta,
                 const struct vrt_replay *ra, const struct vrt_trace *tb,
                 const struct vrt_replay *rb);

void vrt_diff_free(struct vrt_diff *d);

/* b - a, saturated to the int64_t range. */
int64_t vrt_diff_delta(struct vrt_diff_pair p);

/* The change in whole percent of a, rounded half away from zero, in *pct;
 * returns 0 when a is 0 (no percentage), else 1. */
int vrt_diff_pct(struct vrt_diff_pair p, int64_t *pct);

/* "grew", "shrank", "appeared", "disappeared"; "" for anything else. */
const char *vrt_diff_change_name(int change);

#endif /* VRT_DIFF_H */
