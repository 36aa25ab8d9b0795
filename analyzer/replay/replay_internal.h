/*
 * replay_internal.h — what the parts of the replay share (replay.c and
 * its replay_*.c parts; nothing else includes it): the replay's state
 * (the live table, devices, sites, processes, requests in flight,
 * pending failures), the accounting every event goes through, kept static
 * inline so the common path compiles it in as one file did, and the
 * functions one part calls in another. replay.c's opening block says how
 * the replay works as a whole.
 */
#ifndef VRT_REPLAY_INTERNAL_H
#define VRT_REPLAY_INTERNAL_H

#include "replay.h"

#include <stdint.h>
#include <string.h>


#define LIKELY(x)   __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
/* Off the per-event path: keeps the inlined common case small. */
#define NOINLINE __attribute__((noinline))

enum space {
	SP_PTR = 0, /* device, async, managed */
	SP_PINNED = 1,
	SP_REG = 2,
	SP_VA = 3,
	SP_HANDLE = 4, /* VMM handles */
	SP_MAP = 5,    /* VMM mappings: address -> handle */
	SP_CONN = 6,   /* accepted connections: fd -> CONN_* */
	SP_REQ = 7,    /* annotated requests: id -> nothing */
	SP_HREQ = 8,   /* requests in flight on connections: fd | stream <<
	                * 32 -> RQ_* */
};

/* What an SP_CONN entry holds: a connection of an older writer is itself
 * a request in flight (CONN_LEGACY); a newer writer's says its family
 * (CONN_KIND + enum vrt_net_kind) and its requests are SP_HREQ entries. */
#define CONN_LEGACY 0u
#define CONN_KIND   1u
/* ... and flags of a newer writer's connection, above its family */
#define CF_HOP      0x100u /* its peer is a process of the run */
#define CF_UNCOUNTED 0x200u /* a protocol not followed: requests unknown */
#define CF_STREAMS  0x400u /* HTTP/2: many requests, by stream */
#define CONN_FAMILY(v) ((v) & 0xffu)

/* What an SP_HREQ entry holds (its key: fd | stream << 32). */
#define RQ_PLAIN    0u
#define RQ_INFERRED 1u

#define NONE UINT32_MAX

enum obj_kind { OBJ_ALLOC = 0, OBJ_HANDLE = 1, OBJ_MAPPING = 2 };

struct obj {
	uint64_t size;
	int32_t device;
	uint32_t slot;   /* phase slot */
	uint32_t refs;   /* handle: live mappings */
	uint32_t handle; /* mapping: object of its handle, or NONE */
	uint32_t next;   /* free list */
	uint32_t stack;  /* the allocating call's stack */
	uint32_t site;   /* charged: its site, else NONE */
	uint8_t family;
	uint8_t kind;
	uint8_t released; /* handle: cuMemRelease seen */
	uint8_t charged;  /* its bytes count in a device's tracked bytes */
};

/* What a table entry holds. */
enum tag {
	TAG_EMPTY = 0,
	TAG_OBJ = 1, /* ref is an object index */
	TAG_PTR = 2, /* a charged plain pointer allocation (SP_PTR): ref is
	                its site, size and family are its own; no object */
};

/* 32 bytes: two per cache line (the table is 64-byte aligned), so the
 * common free reads everything it needs from one line. */
struct slot {
	uint64_t addr;
	uint64_t size; /* TAG_PTR: the allocation's bytes */
	uint32_t proc;
	uint32_t hash; /* hash_key: its home without rehashing */
	uint32_t ref;  /* see enum tag */
	uint8_t space;
	uint8_t tag;
	uint8_t family; /* TAG_PTR */
	uint8_t pad_;
};

_Static_assert(sizeof(struct slot) == 32, "two table slots per line");

#define TABLE_MAX_CAP (1ull << 31) /* homes fit the stored hash bits */

/* The bucket of a timeline being built: its highest point (max; for
 * requests, max.total holds the count) and whether it changed after it.
 * max_live: max is the device's live state at max.ts (not copied yet). */
struct series_acc {
	int active; /* changed in this bucket */
	int after_max;
	int max_live;
	int64_t last_ts;
	/* devices only: the bucket's range so far (vrt_replay_range): the
	 * tracked bytes it began with and the least since, each phase's
	 * least and most (equal to the live state between buckets); its
	 * most tracked bytes are max.total or tstart. Beside the fields
	 * every event touches, so an event reads no further line. */
	uint64_t tstart, tmin;
	uint64_t pmax[VRT_REPLAY_MAX_PHASES], pmin[VRT_REPLAY_MAX_PHASES];
	struct vrt_replay_point max;
};

/* One (device, phase slot, stack): live now, and at the device's peak
 * number epoch (see the top of the file). */
struct site {
	/* what every allocation and free of the site touches, first */
	uint64_t bytes, allocs;
	uint64_t epoch;
	/* its device's result and state (r->dev[device], devs[device]),
	 * set again whenever those arrays move (sites_rebase) */
	struct vrt_replay_device *d;
	struct devstate *ds;
	int32_t device;
	uint32_t slot;
	/* at the device's peak number epoch */
	uint64_t peak_bytes, peak_allocs;
	uint32_t stack;
};

/* A request edge of a process in standby (PAST REQ_BEGIN, REQ_END, or
 * the CLOSE of a connection with a request open). */
struct past_edge {
	int64_t ts;
	uint64_t fd; /* fd | stream << 32 */
	uint32_t proc;
	uint8_t begin;
};

/* A process started (a snapshot) or stopped recording. */
struct mode_change {
	int64_t ts;
	uint32_t proc;
	uint8_t on;
};

/* The earliest listen() of a kind. */
struct listen_seen {
	int have;
	int64_t ts;
	uint32_t proc;
	uint64_t port;
};

/* Per process, beside the result's vrt_replay_proc: its earliest unix
 * socket listen(), and whether it served HTTP/1.x over unix connections. */
struct pstate {
	struct listen_seen unix_listen;
	uint8_t unix_http;     /* it served requests over unix connections */
	uint8_t inet_listened; /* it called listen() on an inet socket */
	uint8_t served;        /* a request of its own began (not a probe) */
	uint8_t hop; /* HOP_*: whether its requests are a front's, forwarded */
};

/* A process that listens on an inet socket below an ancestor that listens
 * on one and had served HTTP requests before this process's first is a
 * back end the ancestor forwards requests to (Ollama's server starts
 * llama-server on a port of its own when a request comes and proxies each
 * completion to it over HTTP, polling its /health while it loads): each
 * client request would be counted twice, and the health polls as
 * requests. Its requests are not counted; the front's are. Workers that
 * listen on a socket their parent bound (vLLM's API servers, uvicorn's
 * workers) have a parent that serves nothing, and a parent's other inet
 * listens (a ZMQ tcp:// endpoint, torch's TCPStore) make no front: theirs
 * are the requests. */
enum { HOP_UNDECIDED = 0, HOP_FRONT = 1, HOP_BEHIND = 2 };

/* Per device, beside the result's vrt_replay_device. */
struct devstate {
	uint64_t epoch; /* peaks reached so far */
	/* The device's peak_by_phase is not copied yet: the live phase
	 * bytes are still those of its peak (copied before they go down,
	 * see vrt_replay_dev_pre_fall), so a run of rising peaks copies once.
	 */
	int peak_pending;
	/* phase[k].live_bytes of the device, side by side, so copying a
	 * point or a peak is one memcpy */
	uint64_t live[VRT_REPLAY_MAX_PHASES];
	struct series_acc acc;
	/* a snapshot's allocation raised the peak, at this time */
	int snap_peak;
	int64_t snap_peak_ts;
	int snap_touched; /* named by the snapshot being read */
	/* the per-request phases' live bytes when the run was last idle (no
	 * request in flight): set when the first request begins */
	uint64_t idle_demand;
	/* ... and when serving began: the last idle level while the server
	 * was still loading (what loading left there, not requests) */
	uint64_t serve_demand;
};

/* An out-of-memory failure not yet recovered (see vrt_replay_fail_event). */
struct pending {
	size_t fail; /* index into r->fails */
	uint32_t proc, tid;
	int32_t device;
	int host;
	uint64_t size, freed;
	int64_t ts;
};

#define SITE_HINTS 4 /* site hints per stack (power of two) */

struct state {
	struct vrt_replay *r;
	const struct vrt_trace *t; /* set by each call */
	struct slot *tab;
	size_t cap, used; /* cap is a power of two */
	size_t grow_at;   /* used that makes the table grow: cap / 2 */
	struct obj *objs;
	size_t nobjs, capobjs;
	uint32_t free_obj;
	size_t nmappings;
	int64_t ts; /* the event being replayed */
	/* per process (grown with the trace's table): REQUEST events seen,
	 * and connections it accepted until then */
	uint8_t *uses_requests;
	uint64_t *conns;
	struct pstate *ps;
	size_t nprocs;
	/* server readiness candidates (settled by vrt_replay_end) */
	struct listen_seen inet, unknown;
	/* request edges kept in standby (PAST) and when each process
	 * started and stopped recording, for the requests in flight at a
	 * failure in another process (vrt_replay_requests_settle_inflight) */
	struct past_edge *edges;
	size_t nedges;
	struct mode_change *modes;
	size_t nmodes;
	struct devstate *devs; /* r->ndevices of them */
	struct series_acc inflight_acc;
	int64_t series_start, series_width, bucket, bucket_end;
	/* the buckets that held a change, at width series_width (indexes,
	 * ascending, at most VRT_REPLAY_SERIES_BUCKETS + 1) */
	int64_t *busy;
	size_t nbusy;
	/* sites: a pool, an open-addressing index of it, and per (stack,
	 * device & 3) the site it last named (a stack mostly allocates in
	 * one phase) */
	struct site *sites;
	size_t nsites, capsites;
	uint32_t *sindex;
	size_t scap;
	uint32_t *stack_site;
	size_t nstack_site;
	int oom;
	/* Serving and stage (see vrt_replay_fail_event): requests in flight
	 * before the last change, a lone request seen from its start (its
	 * growth is one request's), weights loading since the last
	 * per-request allocation made while requests were in flight. */
	uint32_t prev_inflight;
	int single_on;
	/* the in-flight change being noted comes from a snapshot: requests
	 * that began before recording did, not now */
	int snap_edge;
	int loading;
	/* failures that a later allocation may still recover */
	struct pending *pend;
	size_t npend, cappend;
	/* per process: the time of its last successful allocation */
	int64_t *last_alloc;
	/* the process of the event being replayed (general path) */
	uint32_t proc;
	/* Requests inferred from turn-taking, open: when each began and its
	 * last ANSWER mark (0: none yet); one ends VRT_NET_QUIET_NS after its
	 * last mark unless its REQ_END comes first (turn_deadline: the
	 * earliest such end, INT64_MAX when none). */
	struct turn_open {
		uint64_t key;
		uint32_t proc;
		int64_t begin, mark;
	} *turns;
	size_t nturns;
	int64_t turn_deadline;
	uint32_t inflight_inferred;
	/* HTTP/2 streams open, to end with their connection */
	struct stream_open {
		uint64_t key;
		uint32_t proc;
	} *streams;
	size_t nstreams;
	/* connections open whose requests cannot be counted */
	uint32_t uncounted_open;
	/* readiness when no request was answered
	 * (vrt_replay_requests_settle_ready): the last successful and failed
	 * allocations of a load phase, the last connection accepted from
	 * outside the run */
	int64_t last_load_ts, last_load_fail_ts, last_accept_ts;
	int legacy_conns; /* an older writer's connections were counted */
	/* per process and device, the address of what an attach found held
	 * there and could not name (its snapshot's before_attach ALLOC),
	 * which PREFREE events shrink */
	struct before_at {
		uint32_t proc;
		int32_t device;
		uint64_t addr;
	} *before;
	size_t nbefore;
};

/* ---- what one part calls in another ------------------------------------ */

/* replay.c: objects, the live table, peaks, the notes of a change, sites,
 * and the growing of a vector. */
uint32_t vrt_replay_obj_new(struct state *s);
void vrt_replay_obj_free(struct state *s, uint32_t o);
size_t vrt_replay_table_find(const struct state *s, uint32_t proc,
                             uint8_t space, uint64_t addr);
uint32_t vrt_replay_slot_obj(struct state *s, size_t i);
uint32_t vrt_replay_table_get(struct state *s, uint32_t proc, uint8_t space,
                              uint64_t addr);
int vrt_replay_table_put(struct state *s, uint32_t proc, uint8_t space,
                         uint64_t addr, uint32_t obj, uint32_t *old);
uint32_t vrt_replay_table_take(struct state *s, uint32_t proc, uint8_t space,
                               uint64_t addr);
void vrt_replay_peak_copy(struct vrt_replay_device *d, struct devstate *ds);
uint64_t vrt_replay_demand_level(const struct devstate *ds);
void vrt_replay_single_note(struct state *s, size_t i, int64_t ts);
int vrt_replay_push(void **v, size_t *n, const void *x, size_t sz);
uint32_t vrt_replay_site_get(struct state *s, int32_t dev, uint32_t slot,
                             uint32_t stack);

/* replay_events.c: the general path (every event the common path does
 * not take), the address space of a family, a process's open connections
 * and requests dropped. */
int vrt_replay_events_one(struct state *s, const struct vrt_event *e);
int vrt_replay_events_space_of(int fam);
void vrt_replay_events_drop_open(struct state *s, uint32_t proc, int annotated,
                                 int64_t ts);

/* replay_fail.c: failed calls, what recovers them, which one was fatal. */
void vrt_replay_fail_pending_alloc(struct state *s, const struct vrt_event *e,
                                   int fam);
void vrt_replay_fail_pending_freed(struct state *s, uint32_t proc, int32_t dev,
                                   int host, uint64_t bytes);
int vrt_replay_fail_event(struct state *s, const struct vrt_event *e);
void vrt_replay_fail_meminfo(struct state *s, const struct vrt_event *e);
void vrt_replay_fail_classify(struct state *s, const struct vrt_trace *t);

/* replay_requests.c: requests in flight, the stage, readiness. */
void vrt_replay_requests_changed(struct state *s, int64_t ts);
void vrt_replay_requests_deadline(struct state *s);
void vrt_replay_requests_expire(struct state *s, int64_t now);
int vrt_replay_requests_edge(struct state *s, const struct vrt_event *e,
                             uint8_t sp, int open);
void vrt_replay_requests_use(struct state *s, uint32_t proc, int64_t ts);
void vrt_replay_requests_first(struct vrt_replay *r, int64_t ts);
int vrt_replay_requests_net(struct state *s, const struct vrt_event *e);
void vrt_replay_requests_settle_ready(struct state *s);
void vrt_replay_requests_settle_inflight(struct state *s);
void vrt_replay_requests_settle_serving(struct state *s);

/* replay_series.c: the timelines and the windows between marks. */
void vrt_replay_series_window_note(struct state *s, int32_t dev, unsigned slot);
void vrt_replay_series_copy_max(struct state *s, int32_t dev);
void vrt_replay_series_flush(struct state *s);
void vrt_replay_series_widen(struct state *s);
void vrt_replay_series_tick(struct state *s, int64_t ts);
int vrt_replay_series_windows_grow(struct vrt_replay *r, size_t n);
void vrt_replay_series_windows_free(struct vrt_replay *r);
int vrt_replay_series_mark(struct state *s, const struct vrt_event *e);

/* ---- names --------------------------------------------------------------- */

static inline int vrt_replay_is_vram(int family)
{
	return family == VRT_FAM_DEVICE || family == VRT_FAM_ASYNC ||
	       family == VRT_FAM_VMM || family == VRT_FAM_MANAGED;
}

static inline uint32_t vrt_replay_slot(uint32_t phase)
{
	return phase < VRT_REPLAY_MAX_PHASES ? phase : 0;
}


/* Removes the entry at slot i, shifting later entries of its cluster back
 * so lookups never stop at a hole. */
static inline void vrt_replay_table_remove_at(struct state *s, size_t i)
{
	size_t mask = s->cap - 1, j = i;

	s->tab[i].tag = TAG_EMPTY;
	s->used--;
	for (;;) {
		j = (j + 1) & mask;
		if (s->tab[j].tag == TAG_EMPTY)
			return;
		/* j may fill the hole unless its home lies in (i, j]: it is
		 * at least as far from its home as from the hole. */
		if (((j - s->tab[j].hash) & mask) >= ((j - i) & mask)) {
			s->tab[i] = s->tab[j];
			s->tab[j].tag = TAG_EMPTY;
			i = j;
		}
	}
}

/* ---- accounting ------------------------------------------------------- */

/* What to take from v to take bytes away without going below 0:
 * min(v, bytes) (a compare and a conditional move). */
static inline uint64_t vrt_replay_sub_clamp(uint64_t v, uint64_t bytes)
{
	return v < bytes ? v : bytes;
}

static inline void vrt_replay_counters_add(struct vrt_counters *c,
                                           uint64_t bytes, int64_t ts)
{
	c->live_bytes += bytes;
	if (c->live_bytes > c->peak_bytes) {
		c->peak_bytes = c->live_bytes;
		c->peak_ts = ts;
	}
}

static inline void vrt_replay_counters_sub(struct vrt_counters *c,
                                           uint64_t bytes)
{
	/* Cannot underflow for bytes we charged; clamp anyway. */
	c->live_bytes -= vrt_replay_sub_clamp(c->live_bytes, bytes);
}

/* A device's phase counters, kept in both places (devstate.live). */
static inline void vrt_replay_phase_add(struct vrt_replay_device *d,
                                        struct devstate *ds, uint32_t slot,
                                        uint64_t bytes, int64_t ts)
{
	vrt_replay_counters_add(&d->phase[slot], bytes, ts);
	ds->live[slot] = d->phase[slot].live_bytes;
}

static inline void vrt_replay_phase_sub(struct vrt_replay_device *d,
                                        struct devstate *ds, uint32_t slot,
                                        uint64_t bytes)
{
	vrt_replay_counters_sub(&d->phase[slot], bytes);
	ds->live[slot] = d->phase[slot].live_bytes;
}

/* A new peak of device d: its phase split is copied lazily (see struct
 * devstate), and every site's snapshot goes stale (the epoch). */
static inline void vrt_replay_dev_peak(struct vrt_replay_device *d,
                                       struct devstate *ds, int64_t ts)
{
	d->peak_bytes = d->tracked_bytes;
	d->peak_ts = ts;
	ds->epoch++;
	ds->peak_pending = 1;
}


static inline void vrt_replay_peak_settle(struct vrt_replay_device *d,
                               struct devstate *ds)
{
	if (ds->peak_pending)
		vrt_replay_peak_copy(d, ds);
}

static inline int vrt_replay_is_host_family(int fam)
{
	return fam == VRT_FAM_PINNED || fam == VRT_FAM_REGISTERED;
}

/* The per-request phases: what a request allocates, whatever a rule
 * called it (a pool, a workspace, nothing); the others are what loading
 * and the engine's own sizing reserve. */
static inline int vrt_replay_slot_is_demand(uint32_t slot)
{
	return slot == VRT_PHASE_unattributed || slot == VRT_PHASE_forward ||
	       slot == VRT_PHASE_workspace ||
	       slot > VRT_LOAD_PHASE_BEFORE_ATTACH;
}

static inline void vrt_replay_alloc_noted(struct state *s,
                                          const struct vrt_event *e,
                                          uint32_t slot, int fam)
{
	if (slot == VRT_PHASE_weights)
		s->loading = 1;
	else if (s->loading && s->r->inflight &&
	         vrt_replay_slot_is_demand(slot))
		s->loading = 0;
	if (!vrt_replay_slot_is_demand(slot) && e->ts > s->last_load_ts)
		s->last_load_ts = e->ts;
	if (e->proc < s->nprocs)
		s->last_alloc[e->proc] = e->ts;
	if (s->npend)
		vrt_replay_fail_pending_alloc(s, e, fam);
}

/* Device dev's tracked bytes are about to go down: a highest point still
 * read from the live counters is copied first, and so is a peak's split
 * (see struct devstate). */
static inline void vrt_replay_dev_pre_fall(struct state *s, int32_t dev)
{
	struct devstate *ds = &s->devs[dev];

	if (UNLIKELY(ds->acc.max_live))
		vrt_replay_series_copy_max(s, dev);
	vrt_replay_peak_settle(&s->r->dev[dev], ds);
}

/* Device dev's tracked bytes changed at ts (the live counters hold the
 * new state). */
static inline void vrt_replay_series_note(struct state *s, int32_t dev,
                                          int64_t ts)
{
	struct series_acc *a = &s->devs[dev].acc;
	const struct vrt_replay_device *d = &s->r->dev[dev];

	if (!a->active || d->tracked_bytes > a->max.total) {
		a->max.ts = ts;
		a->max.total = d->tracked_bytes;
		a->max_live = 1;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
}

/* A device's bucket range, after its phase slot rose to live, or fell
 * (to tracked bytes in all). */
static inline void vrt_replay_range_up(struct series_acc *a, uint32_t slot,
                            uint64_t live)
{
	uint64_t m = a->pmax[slot];

	/* A select and a store, no branch: whether an event sets a new
	 * extreme is a coin toss the predictor would lose. */
	a->pmax[slot] = live > m ? live : m;
}

static inline void vrt_replay_range_down(struct series_acc *a, uint32_t slot,
                              uint64_t live, uint64_t tracked)
{
	uint64_t m = a->pmin[slot], t = a->tmin;

	a->pmin[slot] = live < m ? live : m;
	a->tmin = tracked < t ? tracked : t;
}

/* x's value now is its value at its device's peak number epoch. */
static inline void vrt_replay_site_snapshot(struct site *x, uint64_t epoch)
{
	x->peak_bytes = x->bytes;
	x->peak_allocs = x->allocs;
	x->epoch = epoch;
}

/* Site x of device dev is about to change: if the device reached a peak
 * since x last changed, x's value now is its value at that peak. */
static inline void vrt_replay_site_touch(struct state *s, struct site *x,
                                         int32_t dev)
{
	uint64_t epoch = s->devs[dev].epoch;

	if (x->epoch != epoch)
		vrt_replay_site_snapshot(x, epoch);
}

#endif
