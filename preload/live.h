/*
 * live.c — the table of live allocations (address → size, device, family,
 * phase) kept by the preload itself, in recording and in standby.
 *
 * Standby (VRAMTRACE_START=standby, `vramtrace record --standby`, or the
 * control command `stop`) keeps only this table, at near-zero cost per
 * call, and writes nothing. `start` opens the trace and writes a snapshot
 * of every live allocation first, so budgets are right from the first
 * second. The same table answers the control endpoint's `status` and the
 * Prometheus endpoint (VRAMTRACE_METRICS).
 *
 * Threads: any; hot-path operations take one striped spinlock at most
 * (a thread's newest allocation waits in its own area, see live.c).
 */
#ifndef VRT_LIVE_H
#define VRT_LIVE_H

#include <stdint.h>

#define VRT_LIVE_MAX_DEVICES 16
#define VRT_LIVE_PHASES 8 /* the fixed phases of trace_format.h */

struct vrt_live_device {
	int device;  /* ordinal as this process sees it */
	int vendor;  /* enum vrt_vendor */
	uint64_t bytes;                     /* VRAM families together */
	uint64_t by_phase[VRT_LIVE_PHASES]; /* custom phases count as
	                                     * unattributed */
};

struct vrt_live_stats {
	int ndev;
	struct vrt_live_device dev[VRT_LIVE_MAX_DEVICES];
	uint64_t host_pinned_bytes; /* pinned + registered */
	uint64_t inflight;          /* requests in flight now on accepted
	                             * connections: HTTP/1.x requests,
	                             * HTTP/2 streams, and requests
	                             * inferred from turns (TLS, other
	                             * protocols) until the client's next
	                             * turn or the close; probes apart */
	uint64_t ooms;              /* allocations refused for memory */
	uint64_t allocations;       /* live entries in the table */
};

struct vrt_ev;

/* The device of an entry added in standby on the caller's current device:
 * asked for only when the table is read (stats, snapshot), through the
 * function set for its runtime, so that standby makes no driver call. */
#define VRT_LIVE_DEVICE_LATER (-100)
/* The same, with the device the allocating thread was last seen on (d >=
 * 0) for when the runtime cannot say (no pointer attribute query, a
 * context that is gone): the entry is then kept on d, never dropped. */
#define VRT_LIVE_DEVICE_LATER_ON(d) (-200 - (d))

/* How to tell the device of an allocation by its address, for a vendor
 * (enum vrt_vendor): an ordinal, or < 0 when the runtime cannot say. Called
 * from the thread that reads the table, with a stripe lock held: it must not
 * re-enter the table. */
void vrt_live_set_device_of(int vendor, int (*fn)(uint64_t addr));

/* ALLOC and FREE of vrt_live_event, for hooks that have no event to
 * build (standby): phase as in struct vrt_ev. */
void vrt_live_alloc(int api, int device, uint64_t addr, uint64_t size,
                    uint32_t stack, uint64_t phase);
void vrt_live_free(int api, uint64_t addr);

/* 1 when an allocation of api's address space at addr is in the table
 * (allocated, or snapshotted, and not freed since). A lookup: a stripe
 * lock and a walk over the threads' areas. From inside a hook; for the
 * agent's frees only (the preload never asks). */
int vrt_live_has(int api, uint64_t addr);

/* Applies one event to the table: ALLOC adds, FREE removes, a NET
 * REQ_BEGIN or REQ_END (or the CLOSE of a connection with a request in
 * flight, ev->size 1) moves the in-flight count, a FAIL for memory counts
 * an OOM; other events are ignored. From inside a hook, recording or in standby: one
 * stripe spinlock, no malloc (the table grows with mmap). */
void vrt_live_event(const struct vrt_ev *ev);

/* Calls fn with an ALLOC event for every live entry (a snapshot), each
 * stripe locked while its entries are visited: an allocation freed
 * concurrently is either visited before its free or not at all. fn must
 * not re-enter the table. */
void vrt_live_each(void (*fn)(const struct vrt_ev *ev, void *arg), void *arg);

/* How to tell the phase of a stack id (stack.c, once the writer has
 * classified it; 0 until then). */
void vrt_live_set_stack_phase(unsigned (*fn)(uint32_t stack));

void vrt_live_after_fork_child(void);
/* Forgets every entry, the in-flight and OOM counts and the peaks: a new
 * session of the agent, whose table from an earlier attach is stale (the
 * calls made while detached were not seen). No other thread of ours may
 * be using the table. */
void vrt_live_reset(void);

/* VRAM bytes live in the table on one device of a vendor (its ordinal as
 * this process sees it). Scans the whole table (each stripe locked in
 * turn): for rare events only (standby's first probe per device). May be
 * called from inside a hook; devices kept for later are asked of the
 * runtime as for vrt_live_stats. */
uint64_t vrt_live_device_bytes(int vendor, int device);

/* Peaks: when something reads them (the metrics endpoint), the table
 * also keeps each device's VRAM bytes as it changes, and the most it held
 * since the last reading, so a spike between two readings is not lost.
 * vrt_live_track_peaks turns that on; call it before the first allocation
 * is recorded (the constructor), so every free finds its allocation
 * counted. It costs an atomic add per allocation and free on a shared
 * counter per device; nothing when off. Entries whose device is kept for
 * later (VRT_LIVE_DEVICE_LATER) are not counted: standby asks for the
 * device at once while peaks are tracked (vrt_live_tracking_peaks). */
void vrt_live_track_peaks(void);
int vrt_live_tracking_peaks(void);

/* peak[d] = the most VRAM bytes device d held since the previous call
 * (or since start), for d < VRT_LIVE_MAX_DEVICES; the window then starts
 * again from what the device holds now. Any thread (not a hook). */
void vrt_live_take_peaks(uint64_t peak[VRT_LIVE_MAX_DEVICES]);

/* Fills *out with the current totals. Any thread (not a hook): takes each
 * stripe lock in turn; the totals are consistent per stripe. */
void vrt_live_stats(struct vrt_live_stats *out);

#endif /* VRT_LIVE_H */
