/*
 * replay.c — turns the ordered event stream into budgets: live and peak
 * bytes per device, family and phase, reserved address space, host pinned
 * memory, and the list of failed calls. Pure: no I/O, no printing.
 *
 * Live allocations are kept in one open-addressing hash table (linear
 * probing, backward-shift deletion, so no tombstones) keyed by
 * (process, address space, address) and sized by the live set, never by
 * the event count. Values are indexes into a pool of objects, so a VMM
 * mapping can refer to its handle while the table moves entries around.
 * A plain device pointer allocated on the common path needs no object:
 * its entry holds its bytes, family and site (which names its device and
 * phase slot), so a free touches one table line and one site. The rare
 * paths that want an object for such an entry get one made on the spot
 * (slot_obj), so everything but the common path sees objects only.
 *
 * Address spaces follow trace_format.h: device/async/managed pointers share
 * one space; pinned, registered, reserved VA, VMM handles each have their
 * own; VMM mappings (address -> handle) are a sixth. A VMM handle's bytes
 * stay charged until it is released AND all its mappings are unmapped,
 * whichever comes last.
 *
 * Requests in flight are three more key spaces of the same table (accepted
 * connections by fd, annotated requests by id, HTTP/1.x requests by fd).
 * A connection of an older writer is itself a request in flight; a newer
 * writer's says its family and its requests come as REQ_BEGIN/REQ_END. A
 * process counts its annotated requests instead from its first REQUEST
 * event on (its connections and requests still open then stop counting).
 *
 * A process that began in standby brings facts kept there (PAST events,
 * with the times they happened, delivered after later events) and
 * snapshots (the state at that moment: live allocations, open connections
 * and requests, replacing what the process held). What depends on the
 * order of such facts — readiness, the stage of each failure, requests in
 * flight at a failure while another process was in standby — is settled
 * by vrt_replay_end.
 *
 * One pass, fed in batches. The allocation sites live at a device's peak
 * are kept by lazy snapshots: a site (device, phase slot, stack) holds its
 * live bytes and allocations and its value at the device's last peak that
 * it saw; each device counts its peaks (an epoch). Before a site changes,
 * if its epoch is older than its device's, its value now is its value at
 * that device's latest peak (it has not changed since), so it is stored
 * with the epoch. At the end, a site's share of the final peak is its
 * stored value when its epoch is the final one, else its live value. O(1)
 * per event; the snapshot costs no second pass. The device's own split at
 * its peak (peak_by_phase) is lazy the same way: a rise to a new peak only
 * marks it pending, and it is copied from the live phase bytes before they
 * next change otherwise (a fall, or tracked bytes that wrap), so a run of
 * rising peaks costs one copy.
 *
 * Timelines are bounded: the run is cut into time buckets of width w from
 * its start; within one, a device keeps its highest point and, when it
 * changed after that, its state at the bucket's end (read from the live
 * counters when the first event of a later bucket arrives, before it
 * applies). The highest point is copied lazily: while the device only
 * grows, the live counters are that point. When more than
 * VRT_REPLAY_SERIES_BUCKETS buckets hold a change, w doubles and each pair
 * of buckets merges into one (its highest point, and its last when that
 * is another), which is what bucketing at the doubled width would have
 * kept. Only buckets that hold a change count, so a server that loads in
 * a minute and then idles for a day keeps its start at the resolution of
 * a minute, not of a day. A bucket opened before a widening can end in
 * the same wider bucket as the one before it: its points then merge into
 * that one's as they are added. Beside
 * the points, each bucket in which a device changed keeps its range (the
 * least and most of its total and of each phase, from the state the bucket
 * began with): one compare per event on the phase it touches, so a phase
 * that rose and fell back inside a bucket is never lost. Ranges merge
 * like points when the width doubles.
 *
 * Speed: the common events (allocations and frees of plain pointers) take
 * an inlined path (fast_alloc, fast_free) that touches one table line, one
 * site and its device's counters, with no division and no per-event
 * switch; the table line an event will probe is prefetched a few events
 * ahead, as the table outgrows the first-level cache. Everything else
 * takes the general path (replay_one), which the common path must agree
 * with (tests/unit/analyzer/test_replay.c checks both against a model).
 */
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
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
	 * see dev_pre_fall), so a run of rising peaks copies once. */
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

/* An out-of-memory failure not yet recovered (see on_fail). */
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
	 * failure in another process (settle_inflight) */
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
	/* Serving and stage (see on_fail): requests in flight before the
	 * last change, a lone request seen from its start (its growth is
	 * one request's), weights loading since the last per-request
	 * allocation made while requests were in flight. */
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
	/* readiness when no request was answered (settle_ready): the last
	 * successful and failed allocations of a load phase, the last
	 * connection accepted from outside the run */
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

/* ---- names --------------------------------------------------------------- */

static inline int is_vram(int family)
{
	return family == VRT_FAM_DEVICE || family == VRT_FAM_ASYNC ||
	       family == VRT_FAM_VMM || family == VRT_FAM_MANAGED;
}

int vrt_replay_family_is_vram(int family)
{
	return is_vram(family);
}

static inline uint32_t phase_slot(uint32_t phase)
{
	return phase < VRT_REPLAY_MAX_PHASES ? phase : 0;
}

unsigned vrt_replay_phase_slot(uint32_t phase)
{
	return phase_slot(phase);
}

/* ---- objects ---------------------------------------------------------- */

/* Doubles *arr (*cap elements of sz bytes; first when empty), keeping its
 * indices below NONE; -1 when it cannot. */
static int grow_ids(void **arr, size_t *cap, size_t first, size_t sz)
{
	size_t nc = *cap ? *cap * 2 : first;
	void *p;

	if (nc >= NONE)
		return -1;
	p = realloc(*arr, nc * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = nc;
	return 0;
}

static inline uint32_t obj_new(struct state *s)
{
	uint32_t o;

	if (s->free_obj != NONE) {
		o = s->free_obj;
		s->free_obj = s->objs[o].next;
	} else {
		if (s->nobjs == s->capobjs &&
		    grow_ids((void **)&s->objs, &s->capobjs, 1024,
		             sizeof(*s->objs)))
			return NONE;
		o = (uint32_t)s->nobjs++;
	}
	s->objs[o] = (struct obj){.handle = NONE, .site = NONE};
	return o;
}

static void obj_free(struct state *s, uint32_t o)
{
	s->objs[o].next = s->free_obj;
	s->free_obj = o;
}

/* ---- the live table --------------------------------------------------- */

/* One multiply: the high address bits are folded down first, so keys
 * that differ only there (two devices' pointers at the same offset) still
 * land apart; the product's high half mixes every input bit. */
static inline uint32_t hash_key(uint32_t proc, uint8_t space, uint64_t addr)
{
	uint64_t x = addr ^ ((uint64_t)proc << 32) ^ ((uint64_t)space << 58);

	x ^= x >> 32;
	return (uint32_t)((x * 0x9e3779b97f4a7c15ull) >> 32);
}

static int table_grow(struct state *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 1024, i;
	struct slot *nt;

	if (ncap > TABLE_MAX_CAP)
		return -1;
	nt = aligned_alloc(64, ncap * sizeof(*nt));
	if (!nt)
		return -1;
	memset(nt, 0, ncap * sizeof(*nt)); /* TAG_EMPTY */
	for (i = 0; i < s->cap; i++) {
		struct slot *o = &s->tab[i];
		size_t j;
		if (o->tag == TAG_EMPTY)
			continue;
		j = o->hash & (ncap - 1);
		while (nt[j].tag != TAG_EMPTY)
			j = (j + 1) & (ncap - 1);
		nt[j] = *o;
	}
	free(s->tab);
	s->tab = nt;
	s->cap = ncap;
	s->grow_at = ncap / 2;
	return 0;
}

/* Index of the slot holding the key, or of the empty slot ending its
 * probe sequence. Requires cap > used. */
static inline size_t table_find_h(const struct state *s, uint32_t proc,
                                  uint8_t space, uint64_t addr, uint32_t h)
{
	size_t mask = s->cap - 1, i = h & mask;

	while (s->tab[i].tag != TAG_EMPTY) {
		const struct slot *e = &s->tab[i];
		if (e->addr == addr && e->proc == proc && e->space == space)
			return i;
		i = (i + 1) & mask;
	}
	return i;
}

static size_t table_find(const struct state *s, uint32_t proc, uint8_t space,
                         uint64_t addr)
{
	return table_find_h(s, proc, space, addr, hash_key(proc, space, addr));
}

/* The object of the entry at slot i (NONE when empty); a TAG_PTR entry
 * gets its object made now (NONE and s->oom when out of memory). */
static uint32_t slot_obj(struct state *s, size_t i)
{
	struct slot *sl = &s->tab[i];
	const struct site *x;
	struct obj *ob;
	uint32_t o;

	if (sl->tag != TAG_PTR)
		return sl->tag == TAG_EMPTY ? NONE : sl->ref;
	o = obj_new(s);
	if (o == NONE) {
		s->oom = 1;
		return NONE;
	}
	x = &s->sites[sl->ref];
	ob = &s->objs[o];
	ob->size = sl->size;
	ob->device = x->device;
	ob->slot = x->slot;
	ob->stack = x->stack;
	ob->site = sl->ref;
	ob->family = sl->family;
	ob->kind = OBJ_ALLOC;
	ob->charged = 1;
	sl->tag = TAG_OBJ;
	sl->ref = o;
	return o;
}

static uint32_t table_get(struct state *s, uint32_t proc, uint8_t space,
                          uint64_t addr)
{
	return slot_obj(s, table_find(s, proc, space, addr));
}

/* Sets key -> obj and stores the object it replaced (or NONE) in *old.
 * Returns 0, or -1 when out of memory. */
static int table_put(struct state *s, uint32_t proc, uint8_t space,
                     uint64_t addr, uint32_t obj, uint32_t *old)
{
	uint32_t h = hash_key(proc, space, addr);
	struct slot *sl;
	size_t i;

	/* At most half full: short clusters for lookups and deletions. */
	if ((s->used + 1) * 2 > s->cap && table_grow(s))
		return -1;
	i = table_find_h(s, proc, space, addr, h);
	*old = slot_obj(s, i);
	if (s->oom)
		return -1;
	sl = &s->tab[i];
	if (sl->tag == TAG_EMPTY)
		s->used++;
	sl->hash = h;
	sl->addr = addr;
	sl->proc = proc;
	sl->space = space;
	sl->tag = TAG_OBJ;
	sl->ref = obj;
	return 0;
}

/* Removes the entry at slot i, shifting later entries of its cluster back
 * so lookups never stop at a hole. */
static inline void table_remove_at(struct state *s, size_t i)
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

/* Removes a key; returns its object or NONE. */
static uint32_t table_take(struct state *s, uint32_t proc, uint8_t space,
                           uint64_t addr)
{
	size_t i = table_find(s, proc, space, addr);
	uint32_t o = slot_obj(s, i);

	if (o != NONE)
		table_remove_at(s, i);
	return o;
}

/* ---- accounting ------------------------------------------------------- */

/* What to take from v to take bytes away without going below 0:
 * min(v, bytes) (a compare and a conditional move). */
static inline uint64_t sub_clamp(uint64_t v, uint64_t bytes)
{
	return v < bytes ? v : bytes;
}

static inline void counters_add(struct vrt_counters *c, uint64_t bytes,
                                int64_t ts)
{
	c->live_bytes += bytes;
	if (c->live_bytes > c->peak_bytes) {
		c->peak_bytes = c->live_bytes;
		c->peak_ts = ts;
	}
}

static inline void counters_sub(struct vrt_counters *c, uint64_t bytes)
{
	/* Cannot underflow for bytes we charged; clamp anyway. */
	c->live_bytes -= sub_clamp(c->live_bytes, bytes);
}

/* A device's phase counters, kept in both places (devstate.live). */
static inline void phase_add(struct vrt_replay_device *d, struct devstate *ds,
                             uint32_t slot, uint64_t bytes, int64_t ts)
{
	counters_add(&d->phase[slot], bytes, ts);
	ds->live[slot] = d->phase[slot].live_bytes;
}

static inline void phase_sub(struct vrt_replay_device *d, struct devstate *ds,
                             uint32_t slot, uint64_t bytes)
{
	counters_sub(&d->phase[slot], bytes);
	ds->live[slot] = d->phase[slot].live_bytes;
}

/* A new peak of device d: its phase split is copied lazily (see struct
 * devstate), and every site's snapshot goes stale (the epoch). */
static inline void dev_peak(struct vrt_replay_device *d, struct devstate *ds,
                            int64_t ts)
{
	d->peak_bytes = d->tracked_bytes;
	d->peak_ts = ts;
	ds->epoch++;
	ds->peak_pending = 1;
}

/* Copies a pending peak split: the live phase bytes are about to change
 * other than by rising to a new peak. */
static NOINLINE void peak_copy(struct vrt_replay_device *d,
                               struct devstate *ds)
{
	memcpy(d->peak_by_phase, ds->live, sizeof(ds->live));
	ds->peak_pending = 0;
}

static inline void peak_settle(struct vrt_replay_device *d,
                               struct devstate *ds)
{
	if (ds->peak_pending)
		peak_copy(d, ds);
}

static inline int is_host_family(int fam)
{
	return fam == VRT_FAM_PINNED || fam == VRT_FAM_REGISTERED;
}

/* The per-request phases: what a request allocates, whatever a rule
 * called it (a pool, a workspace, nothing); the others are what loading
 * and the engine's own sizing reserve. */
static inline int slot_is_demand(uint32_t slot)
{
	return slot == VRT_PHASE_unattributed || slot == VRT_PHASE_forward ||
	       slot == VRT_PHASE_workspace ||
	       slot > VRT_LOAD_PHASE_BEFORE_ATTACH;
}

int vrt_replay_phase_is_demand(unsigned slot)
{
	return slot < VRT_REPLAY_MAX_PHASES && slot_is_demand(slot);
}

static uint64_t demand_level(const struct devstate *ds)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (slot_is_demand(k))
			sum += ds->live[k];
	return sum;
}

/* While one request is in flight alone since it began, its growth on
 * device i (the per-request phases above their level when it began) is a
 * candidate for the single-request peak. A request that overlapped others
 * is not measured: caching allocators keep what the overlap grew. */
static NOINLINE void single_note(struct state *s, size_t i, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d = &r->dev[i];
	uint64_t lvl = demand_level(&s->devs[i]);
	uint64_t g = lvl > s->devs[i].idle_demand
	                     ? lvl - s->devs[i].idle_demand
	                     : 0;

	if (!s->single_on)
		return;
	if (!d->have_single_request || g > d->single_request_bytes) {
		d->have_single_request = 1;
		d->single_request_bytes = g;
	}
	if (!r->have_single_request || g > r->single_request_peak_bytes) {
		r->have_single_request = 1;
		r->single_request_peak_bytes = g;
		r->single_request_peak_device = (int32_t)i;
		r->single_request_peak_ts = ts;
	}
}

/* An allocation succeeded: loading and stage state, and the failures it
 * may recover. */
static NOINLINE void pending_alloc(struct state *s, const struct vrt_event *e,
                                   int fam);
static NOINLINE void pending_freed(struct state *s, uint32_t proc,
                                   int32_t dev, int host, uint64_t bytes);

static inline void alloc_noted(struct state *s, const struct vrt_event *e,
                               uint32_t slot, int fam)
{
	if (slot == VRT_PHASE_weights)
		s->loading = 1;
	else if (s->loading && s->r->inflight && slot_is_demand(slot))
		s->loading = 0;
	if (!slot_is_demand(slot) && e->ts > s->last_load_ts)
		s->last_load_ts = e->ts;
	if (e->proc < s->nprocs)
		s->last_alloc[e->proc] = e->ts;
	if (s->npend)
		pending_alloc(s, e, fam);
}

/* Windows (see on_mark): r->windows[r->nwindows - 1] is open. */
/* Raises the open window's peaks of device dev to its live counters
 * (slot: the phase slot that changed; VRT_REPLAY_MAX_PHASES: all). */
static NOINLINE void window_note(struct state *s, int32_t dev,
                                 unsigned slot)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_window_device *w;
	const struct vrt_replay_device *d;
	unsigned k;

	if (!r->nwindows || dev < 0 || (size_t)dev >= r->ndevices)
		return;
	d = &r->dev[dev];
	w = &r->windows[r->nwindows - 1].dev[dev];
	if (d->tracked_bytes > w->peak_bytes)
		w->peak_bytes = d->tracked_bytes;
	if (slot < VRT_REPLAY_MAX_PHASES) {
		if (d->phase[slot].live_bytes > w->peak_by_phase[slot])
			w->peak_by_phase[slot] = d->phase[slot].live_bytes;
		return;
	}
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (d->phase[k].live_bytes > w->peak_by_phase[k])
			w->peak_by_phase[k] = d->phase[k].live_bytes;
}

/* ---- timelines ---------------------------------------------------------- */

/* Appends one element of sz bytes to *v (n elements), growing by doubling;
 * -1 when out of memory. */
static int push(void **v, size_t *n, const void *x, size_t sz)
{
	if (*n == 0 || (*n >= 16 && !(*n & (*n - 1)))) {
		void *nv = realloc(*v, (*n ? *n * 2 : 16) * sz);
		if (!nv)
			return -1;
		*v = nv;
	}
	memcpy((char *)*v + *n * sz, x, sz);
	(*n)++;
	return 0;
}

static NOINLINE void point_now(const struct state *s, int32_t dev,
                               int64_t ts, struct vrt_replay_point *p)
{
	p->ts = ts;
	p->total = s->r->dev[dev].tracked_bytes;
	memcpy(p->by_phase, s->devs[dev].live, sizeof(p->by_phase));
}

/* The highest point of dev's bucket, still read from the live counters,
 * copied. */
static NOINLINE void series_copy_max(struct state *s, int32_t dev)
{
	struct series_acc *a = &s->devs[dev].acc;

	point_now(s, dev, a->max.ts, &a->max);
	a->max_live = 0;
}

/* Device dev's tracked bytes are about to go down: a highest point still
 * read from the live counters is copied first, and so is a peak's split
 * (see struct devstate). */
static inline void dev_pre_fall(struct state *s, int32_t dev)
{
	struct devstate *ds = &s->devs[dev];

	if (UNLIKELY(ds->acc.max_live))
		series_copy_max(s, dev);
	peak_settle(&s->r->dev[dev], ds);
}

/* Device dev's tracked bytes changed at ts (the live counters hold the
 * new state). */
static inline void series_note(struct state *s, int32_t dev, int64_t ts)
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
static inline void range_up(struct series_acc *a, uint32_t slot,
                            uint64_t live)
{
	uint64_t m = a->pmax[slot];

	/* A select and a store, no branch: whether an event sets a new
	 * extreme is a coin toss the predictor would lose. */
	a->pmax[slot] = live > m ? live : m;
}

static inline void range_down(struct series_acc *a, uint32_t slot,
                              uint64_t live, uint64_t tracked)
{
	uint64_t m = a->pmin[slot], t = a->tmin;

	a->pmin[slot] = live < m ? live : m;
	a->tmin = tracked < t ? tracked : t;
}

static void inflight_note(struct state *s, int64_t ts)
{
	struct series_acc *a = &s->inflight_acc;

	if (!a->active || s->r->inflight > a->max.total) {
		a->max.ts = ts;
		a->max.total = s->r->inflight;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
}

static int64_t bucket_of(const struct state *s, int64_t ts, int64_t width)
{
	int64_t d;

	if (__builtin_sub_overflow(ts, s->series_start, &d))
		d = ts > s->series_start ? INT64_MAX : 0;
	return d > 0 ? d / width : 0;
}

/* The first nanosecond of bucket b of width w (saturating). */
static int64_t bucket_start(const struct state *s, int64_t b, int64_t w)
{
	int64_t ts;

	if (__builtin_mul_overflow(b, w, &ts) ||
	    __builtin_add_overflow(ts, s->series_start, &ts))
		return INT64_MAX;
	return ts;
}

/* Keeps, of each run of points of v (n of them, in time order) in one
 * bucket of width w, the highest (the first to reach it) and the last
 * when that is another; in place. value: the field compared. */
#define MERGE_POINTS(v, n, value)                                              \
	do {                                                                   \
		size_t i_ = 0, o_ = 0, j_, m_;                                 \
		while (i_ < (n)) {                                             \
			int64_t b_ = bucket_of(s, (v)[i_].ts, w);              \
			for (j_ = m_ = i_;                                     \
			     j_ < (n) && bucket_of(s, (v)[j_].ts, w) == b_;    \
			     j_++)                                             \
				if ((v)[j_].value > (v)[m_].value)             \
					m_ = j_;                               \
			(v)[o_++] = (v)[m_];                                   \
			if (j_ - 1 != m_)                                      \
				(v)[o_++] = (v)[j_ - 1];                       \
			i_ = j_;                                               \
		}                                                              \
		(n) = o_;                                                      \
	} while (0)

/* MERGE_POINTS of the points of v's last bucket only (at most four: two
 * kept before, two added), after points were added to it. */
#define MERGE_TAIL(v, n, value)                                                \
	do {                                                                   \
		size_t t_ = (n), c_;                                           \
		int64_t l_ = bucket_of(s, (v)[(n)-1].ts, w);                   \
		while (t_ > 0 && bucket_of(s, (v)[t_ - 1].ts, w) == l_)        \
			t_--;                                                  \
		c_ = (n)-t_;                                                   \
		if (c_ > 2) {                                                  \
			MERGE_POINTS((v) + t_, c_, value);                     \
			(n) = t_ + c_;                                         \
		}                                                              \
	} while (0)

/* Range x folded into y: the least of their least, the most of their
 * most. */
static void range_merge(struct vrt_replay_range *y,
                        const struct vrt_replay_range *x)
{
	unsigned k;

	if (x->min_total < y->min_total)
		y->min_total = x->min_total;
	if (x->max_total > y->max_total)
		y->max_total = x->max_total;
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (x->min_by_phase[k] < y->min_by_phase[k])
			y->min_by_phase[k] = x->min_by_phase[k];
		if (x->max_by_phase[k] > y->max_by_phase[k])
			y->max_by_phase[k] = x->max_by_phase[k];
	}
}

/* Ends the current bucket: its points go to the timelines. Called before
 * the first event of a later bucket applies, so the live counters still
 * hold each timeline's state at the end of the bucket. */
static void series_flush(struct state *s)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_point p;
	struct vrt_replay_inflight q;
	struct vrt_replay_range g;
	int64_t w = s->series_width;
	int any = s->inflight_acc.active;
	size_t i;

	for (i = 0; i < r->ndevices; i++) {
		struct series_acc *a = &s->devs[i].acc;
		struct vrt_replay_device *d = &r->dev[i];
		if (!a->active)
			continue;
		a->active = 0;
		any = 1;
		if (a->max_live) {
			point_now(s, (int32_t)i, a->max.ts, &a->max);
			a->max_live = 0;
		}
		if (push((void **)&d->series, &d->nseries, &a->max,
		         sizeof(a->max)))
			goto oom;
		/* The range, then the next bucket's starts from the state
		 * now, which is the state at this one's end. */
		g.start_ts = bucket_start(s, s->bucket, w);
		g.min_total = a->tmin;
		g.max_total = a->max.total > a->tstart ? a->max.total
		                                       : a->tstart;
		memcpy(g.min_by_phase, a->pmin, sizeof(g.min_by_phase));
		memcpy(g.max_by_phase, a->pmax, sizeof(g.max_by_phase));
		if (d->nranges && d->ranges[d->nranges - 1].start_ts ==
		                          g.start_ts)
			range_merge(&d->ranges[d->nranges - 1], &g);
		else if (push((void **)&d->ranges, &d->nranges, &g, sizeof(g)))
			goto oom;
		a->tmin = a->tstart = d->tracked_bytes;
		memcpy(a->pmin, s->devs[i].live, sizeof(a->pmin));
		memcpy(a->pmax, s->devs[i].live, sizeof(a->pmax));
		if (a->after_max) {
			point_now(s, (int32_t)i, a->last_ts, &p);
			if (push((void **)&d->series, &d->nseries, &p,
			         sizeof(p)))
				goto oom;
		}
		MERGE_TAIL(d->series, d->nseries, total);
	}
	if (s->inflight_acc.active) {
		struct series_acc *a = &s->inflight_acc;
		a->active = 0;
		q.ts = a->max.ts;
		q.inflight = (uint32_t)a->max.total;
		if (push((void **)&r->inflight_series, &r->ninflight_series,
		         &q, sizeof(q)))
			goto oom;
		q.ts = a->last_ts;
		q.inflight = r->inflight;
		if (a->after_max &&
		    push((void **)&r->inflight_series, &r->ninflight_series,
		         &q, sizeof(q)))
			goto oom;
		MERGE_TAIL(r->inflight_series, r->ninflight_series, inflight);
	}
	if (any && (!s->nbusy || s->busy[s->nbusy - 1] != s->bucket) &&
	    push((void **)&s->busy, &s->nbusy, &s->bucket, sizeof(s->bucket)))
		goto oom;
	return;
oom:
	s->oom = 1;
}

/* Merges the ranges of a device's timeline that fall into one bucket of
 * width w (the least of their least, the most of their most); in place. */
static void merge_ranges(const struct state *s, struct vrt_replay_device *d,
                         int64_t w)
{
	size_t i, o = 0;

	for (i = 0; i < d->nranges; i++) {
		struct vrt_replay_range *x = &d->ranges[i];
		int64_t b = bucket_of(s, x->start_ts, w);
		struct vrt_replay_range *y = o ? &d->ranges[o - 1] : NULL;
		if (!y || bucket_of(s, y->start_ts, w) != b) {
			y = &d->ranges[o++];
			*y = *x;
			y->start_ts = bucket_start(s, b, w);
			continue;
		}
		range_merge(y, x);
	}
	d->nranges = o;
}

/* Doubles the bucket width: each pair of finished buckets becomes one. */
static void series_widen(struct state *s)
{
	struct vrt_replay *r = s->r;
	int64_t w = s->series_width * 2;
	size_t k, o = 0;

	for (k = 0; k < r->ndevices; k++) {
		MERGE_POINTS(r->dev[k].series, r->dev[k].nseries, total);
		merge_ranges(s, &r->dev[k], w);
	}
	MERGE_POINTS(r->inflight_series, r->ninflight_series, inflight);
	for (k = 0; k < s->nbusy; k++)
		if (!o || s->busy[o - 1] != s->busy[k] / 2)
			s->busy[o++] = s->busy[k] / 2;
	s->nbusy = o;
	s->series_width = w;
}

/* Before an event at ts that falls past the current bucket: flushes it,
 * widens the buckets while too many hold a change, and opens ts's. */
static NOINLINE void series_tick(struct state *s, int64_t ts)
{
	int64_t b = bucket_of(s, ts, s->series_width), end;

	if (b == s->bucket)
		return;
	series_flush(s);
	while (s->nbusy > VRT_REPLAY_SERIES_BUCKETS &&
	       s->series_width < INT64_MAX / 4)
		series_widen(s);
	b = bucket_of(s, ts, s->series_width);
	s->bucket = b;
	/* The first ts of the next bucket (saturating). */
	if (__builtin_mul_overflow(b + 1, s->series_width, &end) ||
	    __builtin_add_overflow(end, s->series_start, &end))
		s->bucket_end = INT64_MAX;
	else
		s->bucket_end = end;
}

/* The site of (dev, slot, stack), created when new; NONE when out of
 * memory. */
static NOINLINE uint32_t site_get(struct state *s, int32_t dev,
                                  uint32_t slot, uint32_t stack)
{
	size_t hint = (size_t)stack * SITE_HINTS +
	              ((uint32_t)dev & (SITE_HINTS - 1));
	uint32_t h = hint < s->nstack_site ? s->stack_site[hint] : NONE;
	size_t i, mask;
	struct site *x;

	if (h != NONE && s->sites[h].device == dev && s->sites[h].slot == slot)
		return h;
	if ((s->nsites + 1) * 2 > s->scap) {
		size_t nc = s->scap ? s->scap * 2 : 256, k;
		uint32_t *ni = malloc(nc * sizeof(*ni));
		if (!ni)
			return NONE;
		for (k = 0; k < nc; k++)
			ni[k] = NONE;
		for (k = 0; k < s->nsites; k++) {
			x = &s->sites[k];
			i = hash_key(x->stack, (uint8_t)x->slot,
			             (uint64_t)(uint32_t)x->device) &
			    (nc - 1);
			while (ni[i] != NONE)
				i = (i + 1) & (nc - 1);
			ni[i] = (uint32_t)k;
		}
		free(s->sindex);
		s->sindex = ni;
		s->scap = nc;
	}
	mask = s->scap - 1;
	i = hash_key(stack, (uint8_t)slot, (uint64_t)(uint32_t)dev) & mask;
	for (; s->sindex[i] != NONE; i = (i + 1) & mask) {
		x = &s->sites[s->sindex[i]];
		if (x->stack == stack && x->slot == slot && x->device == dev) {
			h = s->sindex[i];
			goto found;
		}
	}
	if (s->nsites == s->capsites &&
	    grow_ids((void **)&s->sites, &s->capsites, 256, sizeof(*s->sites)))
		return NONE;
	h = (uint32_t)s->nsites++;
	x = &s->sites[h];
	memset(x, 0, sizeof(*x));
	x->device = dev;
	x->slot = slot;
	x->stack = stack;
	x->d = &s->r->dev[dev];
	x->ds = &s->devs[dev];
	s->sindex[i] = h;
found:
	if (hint < s->nstack_site)
		s->stack_site[hint] = h;
	return h;
}

/* x's value now is its value at its device's peak number epoch. */
static inline void site_snapshot(struct site *x, uint64_t epoch)
{
	x->peak_bytes = x->bytes;
	x->peak_allocs = x->allocs;
	x->epoch = epoch;
}

/* Site x of device dev is about to change: if the device reached a peak
 * since x last changed, x's value now is its value at that peak. */
static inline void site_touch(struct state *s, struct site *x, int32_t dev)
{
	uint64_t epoch = s->devs[dev].epoch;

	if (x->epoch != epoch)
		site_snapshot(x, epoch);
}

static void charge(struct state *s, struct obj *o, int64_t ts)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;
	struct devstate *ds;
	struct site *x;

	if (is_host_family(o->family)) {
		counters_add(&r->host[o->family], o->size, ts);
		r->host_pinned_bytes += o->size;
		if (r->host_pinned_bytes > r->host_pinned_peak) {
			r->host_pinned_peak = r->host_pinned_bytes;
			r->host_pinned_peak_ts = ts;
		}
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	counters_add(&d->fam[o->family], o->size, ts);
	if (!is_vram(o->family))
		return;
	if (o->site == NONE) {
		o->site = site_get(s, o->device, o->slot, o->stack);
		if (o->site == NONE) {
			s->oom = 1;
			return;
		}
	}
	ds = &s->devs[o->device];
	x = &s->sites[o->site];
	site_touch(s, x, o->device);
	x->bytes += o->size;
	x->allocs++;
	/* Tracked bytes that wrap are no new peak: settle the last one. */
	if (UNLIKELY(d->tracked_bytes + o->size < o->size))
		peak_settle(d, ds);
	phase_add(d, ds, o->slot, o->size, ts);
	o->charged = 1;
	d->tracked_bytes += o->size;
	if (d->tracked_bytes > d->peak_bytes)
		dev_peak(d, ds, ts);
	if (s->single_on && slot_is_demand(o->slot))
		single_note(s, (size_t)o->device, ts);
	if (r->nwindows)
		window_note(s, o->device, o->slot);
	range_up(&ds->acc, o->slot, ds->live[o->slot]);
	series_note(s, o->device, ts);
}

static void discharge(struct state *s, struct obj *o)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;
	struct site *x;

	if (is_host_family(o->family)) {
		counters_sub(&r->host[o->family], o->size);
		r->host_pinned_bytes -= r->host_pinned_bytes >= o->size
		                                ? o->size
		                                : r->host_pinned_bytes;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	counters_sub(&d->fam[o->family], o->size);
	if (!is_vram(o->family) || !o->charged)
		return;
	x = &s->sites[o->site];
	site_touch(s, x, o->device);
	x->bytes -= x->bytes >= o->size ? o->size : x->bytes;
	x->allocs -= x->allocs ? 1 : 0;
	dev_pre_fall(s, o->device);
	phase_sub(d, &s->devs[o->device], o->slot, o->size);
	o->charged = 0;
	d->tracked_bytes -=
	        d->tracked_bytes >= o->size ? o->size : d->tracked_bytes;
	range_down(&s->devs[o->device].acc, o->slot,
	           s->devs[o->device].live[o->slot], d->tracked_bytes);
	series_note(s, o->device, s->ts);
}

/* Counts n allocs or frees against the family (and phase) of o. */
static inline void count(struct state *s, const struct obj *o, int is_free,
                  uint64_t n)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_device *d;

	if (is_host_family(o->family)) {
		if (is_free)
			r->host[o->family].frees += n;
		else
			r->host[o->family].allocs += n;
		return;
	}
	if (o->device < 0 || (size_t)o->device >= r->ndevices)
		return;
	d = &r->dev[o->device];
	if (is_free) {
		d->fam[o->family].frees += n;
		if (is_vram(o->family))
			d->phase[o->slot].frees += n;
	} else {
		d->fam[o->family].allocs += n;
		if (is_vram(o->family))
			d->phase[o->slot].allocs += n;
	}
}

static int space_of(int fam)
{
	switch (fam) {
	case VRT_FAM_PINNED:
		return SP_PINNED;
	case VRT_FAM_REGISTERED:
		return SP_REG;
	case VRT_FAM_VA:
		return SP_VA;
	case VRT_FAM_VMM:
		return SP_HANDLE;
	default:
		return SP_PTR;
	}
}

/* Drops one mapping reference from handle h; returns its bytes once the
 * handle is both released and unmapped everywhere. */
static void handle_unref(struct state *s, uint32_t h)
{
	struct obj *o;

	if (h == NONE)
		return;
	o = &s->objs[h];
	if (o->refs)
		o->refs--;
	if (o->released && !o->refs) {
		discharge(s, o);
		obj_free(s, h);
	}
}

static void mapping_drop(struct state *s, uint32_t m)
{
	uint32_t h = s->objs[m].handle;

	obj_free(s, m);
	s->nmappings--;
	handle_unref(s, h);
}

static void inflight_changed(struct state *s, int64_t ts);
static void turn_deadline(struct state *s);

/* Removes process proc's open connections and HTTP requests (and, with
 * annotated, its annotated requests) from the table; those that were
 * requests in flight stop counting. */
static void drop_open(struct state *s, uint32_t proc, int annotated,
                      int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t dropped = 0;
	size_t i;

	for (i = 0; i < s->cap; i++) {
		struct slot *sl = &s->tab[i];
		if (sl->tag == TAG_EMPTY || sl->proc != proc ||
		    (sl->space != SP_CONN && sl->space != SP_HREQ &&
		     (!annotated || sl->space != SP_REQ)))
			continue;
		/* A newer writer's connection is no request itself. */
		if (sl->space != SP_CONN || sl->ref == CONN_LEGACY)
			dropped++;
		if (sl->space == SP_CONN && sl->ref != CONN_LEGACY &&
		    (sl->ref & CF_UNCOUNTED) && s->uncounted_open)
			s->uncounted_open--;
		table_remove_at(s, i);
		i--; /* backward shift may have moved an entry here */
	}
	for (i = s->nturns; i-- > 0;)
		if (s->turns[i].proc == proc) {
			s->turns[i] = s->turns[--s->nturns];
			if (s->inflight_inferred)
				s->inflight_inferred--;
		}
	turn_deadline(s);
	for (i = s->nstreams; i-- > 0;)
		if (s->streams[i].proc == proc)
			s->streams[i] = s->streams[--s->nstreams];
	if (!dropped)
		return;
	r->inflight -= r->inflight >= dropped ? dropped : r->inflight;
	inflight_changed(s, ts);
}

/* A standby snapshot begins: what this process held live is replaced by
 * the snapshot's allocations, so drop it all without counting frees
 * (mappings first, so their handles come free with them). */
static int snapshot_reset(struct state *s, uint32_t proc)
{
	struct key {
		uint64_t addr;
		uint8_t space;
	} *keys;
	size_t i, n = 0, k;

	for (i = 0; i < s->cap; i++)
		n += s->tab[i].tag != TAG_EMPTY && s->tab[i].proc == proc &&
		     s->tab[i].space <= SP_MAP;
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -1;
	for (i = 0, k = 0; i < s->cap; i++)
		if (s->tab[i].tag != TAG_EMPTY && s->tab[i].proc == proc &&
		    s->tab[i].space <= SP_MAP)
			keys[k++] = (struct key){s->tab[i].addr, s->tab[i].space};
	for (int pass = 0; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if ((keys[i].space == SP_MAP) != (pass == 0))
				continue;
			uint32_t o = table_take(s, proc, keys[i].space,
			                        keys[i].addr);
			if (o == NONE)
				continue;
			if (pass == 0) {
				mapping_drop(s, o);
				continue;
			}
			struct obj *ob = &s->objs[o];
			if (ob->kind == OBJ_HANDLE && ob->refs) {
				ob->released = 1; /* its mappings live on */
				continue;
			}
			discharge(s, ob);
			obj_free(s, o);
		}
	}
	free(keys);
	return 0;
}

/* A snapshot's before_attach allocation: where PREFREE events of its
 * process and device find it. 0, or -1 when out of memory. */
static int remember_before(struct state *s, const struct vrt_event *e)
{
	struct before_at b = {e->proc, e->device, e->addr};
	size_t i;

	for (i = 0; i < s->nbefore; i++)
		if (s->before[i].proc == e->proc &&
		    s->before[i].device == e->device) {
			s->before[i] = b;
			return 0;
		}
	return push((void **)&s->before, &s->nbefore, &b, sizeof(b));
}

static int on_alloc(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o, old;
	struct obj *ob;

	/* A snapshot entry that is already live here was recorded as a
	 * call: keep that one. */
	if ((e->flags & VRT_EV_SNAP) &&
	    table_get(s, e->proc, (uint8_t)space_of(fam), e->addr) != NONE)
		return 0;
	o = obj_new(s);
	if (o == NONE)
		return -1;
	ob = &s->objs[o];
	ob->size = e->size;
	ob->device = e->device;
	ob->slot = phase_slot(e->phase);
	ob->stack = e->stack;
	ob->family = (uint8_t)fam;
	ob->kind = fam == VRT_FAM_VMM ? OBJ_HANDLE : OBJ_ALLOC;
	if (table_put(s, e->proc, (uint8_t)space_of(fam), e->addr, o, &old))
		return -1;
	if (old != NONE) {
		/* The same live address again: its free was not recorded
		 * (dropped events). The new allocation replaces it; a handle
		 * that is still mapped keeps its bytes until unmapped. */
		struct obj *p = &s->objs[old];
		if (p->kind == OBJ_HANDLE) {
			p->released = 1;
			if (p->refs == 0) {
				discharge(s, p);
				obj_free(s, old);
			}
		} else {
			discharge(s, p);
			obj_free(s, old);
		}
	}
	ob = &s->objs[o];
	if (!(e->flags & VRT_EV_SNAP))
		count(s, ob, 0, 1);
	else if (ob->slot == VRT_LOAD_PHASE_BEFORE_ATTACH && e->addr < 4096 &&
	         remember_before(s, e))
		return -1;
	/* which devices each process allocated on (misplaced ranks) */
	if (e->proc < s->r->nprocs && e->device >= 0 && e->device < 64 &&
	    vrt_replay_family_is_vram(fam))
		s->r->procs[e->proc].devices |= 1ull << e->device;
	charge(s, ob, e->ts);
	if ((e->flags & VRT_EV_SNAP) && ob->charged && ob->device >= 0 &&
	    (size_t)ob->device < s->r->ndevices) {
		const struct vrt_replay_device *d = &s->r->dev[ob->device];
		struct devstate *ds = &s->devs[ob->device];
		ds->snap_touched = 1;
		/* The peak is what the snapshot found: a lower bound. */
		if (d->peak_ts == e->ts && d->peak_bytes == d->tracked_bytes) {
			ds->snap_peak = 1;
			ds->snap_peak_ts = e->ts;
		}
	}
	if (fam != VRT_FAM_VA && !(e->flags & VRT_EV_SNAP))
		alloc_noted(s, e, phase_slot(e->phase), fam);
	return 0;
}

static void on_free(struct state *s, const struct vrt_event *e, int fam);

/* PREFREE: a free of memory an attached process held before the attach.
 * The snapshot's allocation of that address when there is one; else the
 * driver's size of it comes off the process's before_attach allocation on
 * the device (trace_format.h). */
static void on_prefree(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o = NONE;
	struct obj *ob;
	uint64_t take;
	size_t i;

	if (table_get(s, e->proc, (uint8_t)space_of(fam), e->addr) != NONE) {
		on_free(s, e, fam);
		return;
	}
	for (i = 0; i < s->nbefore && o == NONE; i++)
		if (s->before[i].proc == e->proc &&
		    s->before[i].device == e->device)
			o = table_get(s, e->proc, SP_PTR, s->before[i].addr);
	if (o == NONE) {
		s->r->unmatched_frees++;
		return;
	}
	ob = &s->objs[o];
	count(s, ob, 1, 1);
	take = e->size < ob->size ? e->size : ob->size;
	discharge(s, ob);
	ob->size -= take;
	charge(s, ob, e->ts);
}

/* SNAPSHOT end: the devices it named hold what the run held then. */
static void snapshot_done(struct state *s, int64_t ts)
{
	size_t i;

	for (i = 0; i < s->r->ndevices; i++) {
		struct vrt_replay_device *d = &s->r->dev[i];
		if (!s->devs[i].snap_touched)
			continue;
		s->devs[i].snap_touched = 0;
		d->have_snapshot = 1;
		d->snapshot_bytes = d->tracked_bytes;
		d->snapshot_ts = ts;
	}
}

static int on_snapshot(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct mode_change m = {e->ts, e->proc, e->aux == 1};

	if (e->aux == 2) {
		snapshot_done(s, e->ts);
		return 0;
	}
	if (e->aux != 1 && e->aux != 3)
		return 0;
	if (push((void **)&s->modes, &s->nmodes, &m, sizeof(m)))
		return -1;
	if (e->aux == 3) /* recording stops: standby from here */
		return 0;
	/* Recording starts late only where a process began in standby: a
	 * snapshot after `ctl stop` (or an allocation refused in standby
	 * then) continues a recording that began with the process. */
	if (e->proc < s->t->nprocs && s->t->procs[e->proc].started_in_standby &&
	    (!r->have_recording_start || e->ts < r->recording_start_ts)) {
		r->have_recording_start = 1;
		r->recording_start_ts = e->ts;
	}
	if (e->proc < r->nprocs) {
		struct vrt_replay_proc *p = &r->procs[e->proc];
		if (!p->have_snapshot) {
			p->have_snapshot = 1;
			p->first_snapshot_ts = e->ts;
		}
		p->snapshots++;
	}
	/* Its connections and requests are the snapshot's (closes it
	 * missed in standby). */
	drop_open(s, e->proc, 1, e->ts);
	return snapshot_reset(s, e->proc);
}

static void on_free(struct state *s, const struct vrt_event *e, int fam)
{
	uint32_t o;
	struct obj *ob;

	/* cudaFree(0) reaches the driver as cuMemFree_v2(0): a no-op. */
	if (e->addr == 0)
		return;
	o = table_take(s, e->proc, (uint8_t)space_of(fam), e->addr);
	if (o == NONE) {
		s->r->unmatched_frees++;
		return;
	}
	ob = &s->objs[o];
	count(s, ob, 1, 1);
	if (ob->kind == OBJ_HANDLE) {
		ob->released = 1;
		if (ob->refs)
			return; /* bytes stay until the last unmap */
	}
	if (s->npend && ob->family != VRT_FAM_VA)
		pending_freed(s, e->proc, ob->device,
		              is_host_family(ob->family), ob->size);
	discharge(s, ob);
	obj_free(s, o);
}

static int on_map(struct state *s, const struct vrt_event *e)
{
	uint32_t h = table_get(s, e->proc, SP_HANDLE, e->aux);
	uint32_t m = obj_new(s), old;

	if (m == NONE)
		return -1;
	s->objs[m].kind = OBJ_MAPPING;
	s->objs[m].size = e->size;
	s->objs[m].handle = h;
	if (table_put(s, e->proc, SP_MAP, e->addr, m, &old))
		return -1;
	s->nmappings++;
	if (h != NONE)
		s->objs[h].refs++;
	if (old != NONE)
		mapping_drop(s, old); /* mapped twice: the unmap was lost */
	return 0;
}

static void on_unmap(struct state *s, const struct vrt_event *e)
{
	uint64_t lo = e->addr, hi = e->addr + e->size, cur = lo;
	size_t removed = 0, i;

	if (hi < lo)
		hi = UINT64_MAX; /* wrapped: to the end of the space */
	/* Fast path: contiguous mappings from the start of the range. */
	do {
		uint32_t m = table_take(s, e->proc, SP_MAP, cur);
		uint64_t sz;
		if (m == NONE)
			break;
		sz = s->objs[m].size;
		mapping_drop(s, m);
		removed++;
		if (!sz || cur + sz < cur)
			break;
		cur += sz;
	} while (cur < hi);
	/* Gaps: look at every mapping of the process. */
	if (cur < hi && s->nmappings) {
		for (i = 0; i < s->cap; i++) {
			struct slot *sl = &s->tab[i];
			/* mappings are always objects (TAG_OBJ) */
			if (sl->tag == TAG_EMPTY || sl->space != SP_MAP ||
			    sl->proc != e->proc || sl->addr < lo ||
			    sl->addr >= hi)
				continue;
			uint32_t m = sl->ref;
			table_remove_at(s, i);
			mapping_drop(s, m);
			removed++;
			/* Backward shift may have moved an unvisited entry
			 * into slot i: look at it again. */
			i--;
		}
	}
	if (!removed)
		s->r->unmatched_frees++;
}

/*
 * Stage of a failure in phase slot: "request" once the server serves (a
 * request has begun), except while it loads: weights always load (a
 * model loaded on demand or swapped in after serving is a load again),
 * and after weights were loaded the reserves the engine sizes (KV cache,
 * profile run, graphs, communicators), or anything while no request is
 * in flight (a warm-up run), belong to that load until a request in
 * flight makes per-request allocations. A listening socket alone does
 * not end the load: servers listen before they load (llama-server
 * answers 503 meanwhile).
 */
static int stage_request(const struct state *s, uint32_t slot)
{
	if (!s->r->serving || slot == VRT_PHASE_weights)
		return 0;
	return !(s->loading && (!slot_is_demand(slot) || !s->r->inflight));
}

/* Failures within this long of a successful allocation for the same
 * need were recovered: caching allocators free their cache and retry at
 * once (PyTorch's release_cached_blocks, llama.cpp's pool clear_pool). */
#define RECOVER_NS 10000000000LL

static int same_thread(uint32_t a, uint32_t b)
{
	return !a || !b || a == b;
}

/* An out-of-memory failure: it may yet be recovered. An earlier one of
 * the same thread still pending was not (the thread failed again). */
static int pending_fail(struct state *s, const struct vrt_replay_failure *f)
{
	size_t i;

	for (i = 0; i < s->npend;) {
		const struct pending *p = &s->pend[i];
		if (p->proc == f->proc && same_thread(p->tid, f->tid))
			s->pend[i] = s->pend[--s->npend];
		else
			i++;
	}
	if (s->npend == s->cappend) {
		size_t n = s->cappend ? s->cappend * 2 : 8;
		void *np = realloc(s->pend, n * sizeof(*s->pend));
		if (!np)
			return -1;
		s->pend = np;
		s->cappend = n;
	}
	s->pend[s->npend++] = (struct pending){
	        .fail = (size_t)(f - s->r->fails),
	        .proc = f->proc,
	        .tid = f->tid,
	        .device = f->device,
	        .host = is_host_family(f->family),
	        .size = f->requested_bytes,
	        .ts = f->ts,
	};
	return 0;
}

static NOINLINE void pending_alloc(struct state *s, const struct vrt_event *e,
                                   int fam)
{
	size_t i;

	for (i = 0; i < s->npend;) {
		struct pending *p = &s->pend[i];
		struct vrt_replay_failure *f = &s->r->fails[p->fail];
		if (e->ts - p->ts > RECOVER_NS) {
			s->pend[i] = s->pend[--s->npend]; /* too late */
			continue;
		}
		if (p->proc != e->proc || !same_thread(p->tid, e->tid) ||
		    p->host != is_host_family(fam) ||
		    (!p->host && p->device != e->device) || e->size < p->size) {
			i++;
			continue;
		}
		f->recovered = 1;
		f->recovered_ts = e->ts;
		f->recovered_bytes = e->size;
		f->recovered_api = e->api;
		f->freed_bytes = p->freed;
		s->pend[i] = s->pend[--s->npend];
	}
}

/* Process proc freed bytes on device dev (-1: host): counted for its
 * pending failures there (what its allocator gave back to retry). */
static NOINLINE void pending_freed(struct state *s, uint32_t proc,
                                   int32_t dev, int host, uint64_t bytes)
{
	size_t i;

	for (i = 0; i < s->npend; i++) {
		struct pending *p = &s->pend[i];
		if (p->proc == proc && p->host == host &&
		    (host || p->device == dev))
			p->freed += bytes;
	}
}

static int on_fail(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_failure *f;
	int fam = vrt_api_family(e->api);

	if (r->nfails % 64 == 0) {
		void *p = realloc(r->fails, (r->nfails + 64) * sizeof(*f));
		if (!p)
			return -1;
		r->fails = p;
	}
	f = &r->fails[r->nfails++];
	memset(f, 0, sizeof(*f));
	f->ts = e->ts;
	f->proc = e->proc;
	f->tid = e->tid;
	f->device = e->device;
	/* A failed free of a live pointer names no device (-1, as FREE
	 * records do); the allocation knows it. */
	if (f->device < 0 && e->addr && fam >= 0 && fam != VRT_FAM_NONE &&
	    !is_host_family(fam) && vrt_api_op(e->api) == VRT_OP_FREE) {
		uint32_t o =
		        table_get(s, e->proc, (uint8_t)space_of(fam), e->addr);
		if (o != NONE)
			f->device = s->objs[o].device;
	}
	f->api = e->api;
	f->family = fam;
	f->requested_bytes = e->size;
	f->addr = e->addr;
	f->error = (int64_t)e->aux;
	f->phase = phase_slot(e->phase);
	f->stack = e->stack;
	f->after_ready = stage_request(s, f->phase);
	f->inflight = r->inflight;
	f->inflight_inferred = s->inflight_inferred;
	f->uncounted = s->uncounted_open;
	/* Serving over connections whose requests cannot be counted: a
	 * per-request phase failing then is the request stage, with the
	 * number in flight unknown (not a warm-up). */
	if (!f->after_ready && f->uncounted && !r->serving &&
	    f->phase != VRT_PHASE_weights && slot_is_demand(f->phase))
		f->after_ready = 1;
	if (!slot_is_demand(f->phase) && e->aux == 2 && e->ts > s->last_load_fail_ts)
		s->last_load_fail_ts = e->ts;
	f->oom = e->aux == 2 && vrt_api_op(e->api) == VRT_OP_ALLOC;
	if (e->flags & VRT_EV_HAVE_INFO && e->extra < s->t->nfails) {
		f->have_info = 1;
		f->free_bytes = s->t->fails[e->extra].free_bytes;
		f->total_bytes = s->t->fails[e->extra].total_bytes;
	}
	if (f->oom)
		r->ooms++;
	if (f->oom && r->nwindows)
		r->windows[r->nwindows - 1].ooms++;
	if (f->device >= 0 && (size_t)f->device < r->ndevices) {
		const struct devstate *ds = &s->devs[f->device];
		unsigned k;
		const struct vrt_counters *as =
		        &r->dev[f->device].fam[VRT_FAM_ASYNC];
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			f->live_by_phase[k] =
			        r->dev[f->device].phase[k].live_bytes;
		f->pool_kept_max = as->peak_bytes > as->live_bytes
		                           ? as->peak_bytes - as->live_bytes
		                           : 0;
		f->demand_bytes = demand_level(ds);
		f->idle_demand_bytes =
		        r->inflight ? ds->idle_demand : f->demand_bytes;
		f->serve_demand_bytes = ds->serve_demand < f->idle_demand_bytes
		                                ? ds->serve_demand
		                                : f->idle_demand_bytes;
	}
	if (f->oom && pending_fail(s, f))
		return -1;
	if (fam < 0 || fam == VRT_FAM_NONE)
		return 0;
	if (is_host_family(fam)) {
		r->host[fam].failed++;
	} else if (f->device >= 0 && (size_t)f->device < r->ndevices) {
		r->dev[f->device].fam[fam].failed++;
		if (is_vram(fam))
			r->dev[f->device]
			        .phase[phase_slot(e->phase)]
			        .failed++;
	}
	return 0;
}

static void on_meminfo(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay_device *d;
	uint64_t used, held;

	if (e->device < 0 || (size_t)e->device >= s->r->ndevices)
		return;
	d = &s->r->dev[e->device];
	/* An attached process's probes count once its snapshot says what
	 * it held: before, the driver's used bytes include what it held
	 * before the attach, which is no other process's. */
	if (e->proc < s->t->nprocs && s->t->procs[e->proc].attached &&
	    !(e->proc < s->r->nprocs && s->r->procs[e->proc].have_snapshot))
		return;
	/* The first probe: a fact kept in standby may arrive after a later
	 * one. */
	if (d->have_baseline && e->ts >= d->baseline_ts)
		return;
	d->have_baseline = 1;
	d->baseline_ts = e->ts;
	d->probe_total_bytes = e->size;
	used = e->size >= e->addr ? e->size - e->addr : 0;
	/* What the driver counts as used beyond our live bytes was there
	 * before us (or is driver overhead); never negative. A kept probe
	 * carries what its process held then (the trace never saw those
	 * allocations). */
	held = (e->flags & VRT_EV_PAST) ? e->aux : d->tracked_bytes;
	d->baseline_used_bytes = used > held ? used - held : 0;
}

/* The number in flight changed (however requests are counted): the
 * first request begins serving; leaving idle sets each device's idle
 * level of the per-request phases; a request alone from its start is
 * measured (single_note). */
static void requests_moved(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t prev = s->prev_inflight, now = r->inflight;
	size_t i;

	s->prev_inflight = now;
	if (now > prev && !r->serving && !s->snap_edge) {
		r->serving = 1;
		r->serving_ts = ts;
	}
	if (!prev && now)
		for (i = 0; i < r->ndevices; i++) {
			struct devstate *ds = &s->devs[i];
			ds->idle_demand = demand_level(ds);
			if (s->loading)
				ds->serve_demand = ds->idle_demand;
		}
	s->single_on = now == 1 && prev == 0 && !s->snap_edge;
	if (s->single_on)
		for (i = 0; i < r->ndevices; i++)
			single_note(s, i, ts);
}

static void inflight_changed(struct state *s, int64_t ts)
{
	struct vrt_replay *r = s->r;

	if (r->inflight > r->max_inflight) {
		r->max_inflight = r->inflight;
		r->max_inflight_ts = ts;
	}
	if (r->nwindows &&
	    r->inflight > r->windows[r->nwindows - 1].max_inflight)
		r->windows[r->nwindows - 1].max_inflight = r->inflight;
	requests_moved(s, ts);
	inflight_note(s, ts);
}

/* Opens (or closes) one annotated request (SP_REQ) or an older writer's
 * connection (SP_CONN, itself a request); duplicates and unknown closes
 * (lost events) change nothing. A snapshot's open request is no new one
 * (VRT_EV_SNAP: counted in flight, not begun). Requests on a newer
 * writer's connections are req_begin's and req_close's. */
static int request_edge(struct state *s, const struct vrt_event *e, uint8_t sp,
                        int open)
{
	struct vrt_replay *r = s->r;
	uint32_t old;

	if (open) {
		/* The value is never read: any non-NONE object index
		 * (CONN_LEGACY for a connection). */
		if (table_put(s, e->proc, sp, e->addr, CONN_LEGACY, &old))
			return -1;
		if (old != NONE)
			return 0;
		r->inflight++;
		if (e->flags & VRT_EV_SNAP) {
			/* open at the snapshot: not a new one */
		} else if (sp == SP_CONN) {
			r->connections++;
			if (e->proc < s->nprocs)
				s->conns[e->proc]++;
			/* an older writer's connection: its only request */
			s->legacy_conns = 1;
			if (e->ts > s->last_accept_ts)
				s->last_accept_ts = e->ts;
		} else {
			r->requests++;
		}
	} else {
		if (table_take(s, e->proc, sp, e->addr) == NONE)
			return 0;
		r->inflight--;
	}
	s->snap_edge = (e->flags & VRT_EV_SNAP) != 0;
	inflight_changed(s, e->ts);
	s->snap_edge = 0;
	return 0;
}

/* The first REQUEST of process proc: from now on it counts its
 * annotated requests, not its connections or HTTP requests (never both);
 * those it holds open stop counting. */
static void use_requests(struct state *s, uint32_t proc, int64_t ts)
{
	struct vrt_replay *r = s->r;

	s->uses_requests[proc] = 1;
	r->connections -= r->connections >= s->conns[proc] ? s->conns[proc]
	                                                   : r->connections;
	drop_open(s, proc, 0, ts);
}

static void listen_note(struct listen_seen *l, const struct vrt_event *e)
{
	if (l->have && l->ts <= e->ts)
		return;
	l->have = 1;
	l->ts = e->ts;
	l->proc = e->proc;
	l->port = e->size;
}

/* Facts of the first request begun, answered, answered 2xx (also from
 * the annotation API's brackets). */
static void first_request(struct vrt_replay *r, int64_t ts)
{
	if (!r->have_first_request || ts < r->first_request_ts) {
		r->have_first_request = 1;
		r->first_request_ts = ts;
	}
}

static void first_response(struct vrt_replay *r, int64_t ts, uint64_t status)
{
	if (!r->have_first_response || ts < r->first_response_ts) {
		r->have_first_response = 1;
		r->first_response_ts = ts;
		r->first_response_status = (uint32_t)status;
	}
	if (status >= 200 && status < 300 &&
	    (!r->have_first_ok_response || ts < r->first_ok_response_ts)) {
		r->have_first_ok_response = 1;
		r->first_ok_response_ts = ts;
	}
}

static int on_listen(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned kind = vrt_net_kind(e);

	if (!r->have_first_listen || e->ts < r->first_listen_ts) {
		r->have_first_listen = 1;
		r->first_listen_ts = e->ts;
	}
	/* A library's own plumbing (NCCL, ZMQ, torch.distributed's store)
	 * is no server, and its connections are not followed. */
	if (vrt_net_flags(e) & VRT_NET_F_INTERNAL)
		return 0;
	if (kind == VRT_NET_KIND_INET)
		listen_note(&s->inet, e);
	else if (kind == VRT_NET_KIND_UNKNOWN)
		listen_note(&s->unknown, e);
	else if (kind == VRT_NET_KIND_UNIX && e->proc < s->nprocs)
		listen_note(&s->ps[e->proc].unix_listen, e);
	if (kind == VRT_NET_KIND_INET && e->proc < s->nprocs)
		s->ps[e->proc].inet_listened = 1;
	return 0;
}

/* Whether process p's requests are forwarded to it by a front (see
 * HOP_BEHIND); decided at its first request edge, when the front's listen
 * and first request are behind. */
static int behind_front(struct state *s, uint32_t p)
{
	const struct vrt_trace *t = s->t;
	uint32_t cur = p;
	int depth;

	if (p >= s->nprocs || p >= t->nprocs)
		return 0;
	if (s->ps[p].hop != HOP_UNDECIDED)
		return s->ps[p].hop == HOP_BEHIND;
	s->ps[p].hop = HOP_FRONT;
	if (!s->ps[p].inet_listened)
		return 0;
	for (depth = 0; depth < 64; depth++) {
		uint32_t q, parent = UINT32_MAX;
		for (q = 0; q < t->nprocs && q < s->nprocs; q++)
			if (q != cur && t->procs[q].pid == t->procs[cur].ppid) {
				parent = q;
				break;
			}
		if (parent == UINT32_MAX)
			break;
		if (s->ps[parent].inet_listened && s->ps[parent].served) {
			s->ps[p].hop = HOP_BEHIND;
			s->r->forwarded_proc_pid = t->procs[p].pid;
			return 1;
		}
		cur = parent;
	}
	return 0;
}

/* The request edges of on_net (what a back end's are ignored for). */
static int is_request_edge(uint64_t op)
{
	return op == VRT_NET_ACCEPT || op == VRT_NET_CLOSE ||
	       op == VRT_NET_REQ_BEGIN || op == VRT_NET_REQ_END ||
	       op == VRT_NET_ANSWER;
}

/* The key of the request a NET event names on its connection. */
static inline uint64_t req_key(const struct vrt_event *e)
{
	return (e->addr & 0xffffffffu) | (uint64_t)vrt_net_stream(e) << 32;
}

/* A request path named by a REQ_BEGIN: counted per path (text or hash). */
static int path_note(struct state *s, const struct vrt_event *e, int probe)
{
	struct vrt_replay *r = s->r;
	uint32_t text = vrt_net_text(e), hash = vrt_net_val(e);
	size_t i;

	if (!text && !hash)
		return 0;
	for (i = 0; i < r->npaths; i++) {
		struct vrt_replay_path *p = &r->paths[i];
		if ((hash && p->hash == hash) || (!hash && p->text == text)) {
			p->requests++;
			if (!p->text)
				p->text = text;
			/* keep the most named first */
			while (i > 0 && r->paths[i - 1].requests <
			                        r->paths[i].requests) {
				struct vrt_replay_path x = r->paths[i - 1];
				r->paths[i - 1] = r->paths[i];
				r->paths[i] = x;
				i--;
			}
			return 0;
		}
	}
	if (r->npaths >= VRT_REPLAY_MAX_PATHS)
		return 0;
	struct vrt_replay_path x = {text, hash, 1, probe};
	return push((void **)&r->paths, &r->npaths, &x, sizeof(x));
}

/* The earliest turn deadline again, after a change. */
static void turn_deadline(struct state *s)
{
	size_t i;

	s->turn_deadline = INT64_MAX;
	for (i = 0; i < s->nturns; i++)
		if (s->turns[i].mark &&
		    s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS <
		            s->turn_deadline)
			s->turn_deadline =
			        s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS;
}

static size_t turn_find(const struct state *s, uint32_t proc, uint64_t key)
{
	size_t i;
	for (i = 0; i < s->nturns; i++)
		if (s->turns[i].proc == proc && s->turns[i].key == key)
			return i;
	return SIZE_MAX;
}

/* Ends the request on (proc, key) at ts, if it is open; its bookkeeping
 * as an inferred request or a stream too. */
static void req_close(struct state *s, uint32_t proc, uint64_t key,
                      int64_t ts)
{
	struct vrt_replay *r = s->r;
	uint32_t v = table_take(s, proc, SP_HREQ, key);
	size_t i;

	if (v == NONE)
		return;
	if (v == RQ_INFERRED) {
		i = turn_find(s, proc, key);
		if (i != SIZE_MAX) {
			s->turns[i] = s->turns[--s->nturns];
			turn_deadline(s);
		}
		if (s->inflight_inferred)
			s->inflight_inferred--;
	}
	if (key >> 32)
		for (i = 0; i < s->nstreams; i++)
			if (s->streams[i].proc == proc &&
			    s->streams[i].key == key) {
				s->streams[i] = s->streams[--s->nstreams];
				break;
			}
	if (r->inflight)
		r->inflight--;
	inflight_changed(s, ts);
}

/* Inferred requests whose answer went quiet end then (the earliest
 * first), before the event at now is replayed. */
static NOINLINE void expire_turns(struct state *s, int64_t now)
{
	while (s->turn_deadline < now) {
		int64_t at = s->turn_deadline;
		size_t i;
		for (i = 0; i < s->nturns; i++)
			if (s->turns[i].mark &&
			    s->turns[i].mark + (int64_t)VRT_NET_QUIET_NS == at)
				break;
		if (i == s->nturns) {
			turn_deadline(s);
			continue;
		}
		req_close(s, s->turns[i].proc, s->turns[i].key, at);
	}
}

/* An inferred request ended `lag` before its REQ_END (the server's last
 * write): failures in between did not have it in flight. */
static void lag_correct(struct state *s, int64_t begin, int64_t end,
                        int64_t seen)
{
	struct vrt_replay *r = s->r;
	size_t i;

	for (i = r->nfails; i-- > 0;) {
		struct vrt_replay_failure *f = &r->fails[i];
		if (f->ts <= end)
			break;
		if (f->ts > seen || f->ts < begin)
			continue;
		if (f->inflight)
			f->inflight--;
		if (f->inflight_inferred)
			f->inflight_inferred--;
	}
}

/* Sets flags on process proc's connection fd. */
static void conn_flag(struct state *s, uint32_t proc, uint64_t fd,
                      uint32_t flag)
{
	size_t i = table_find(s, proc, SP_CONN, fd);
	uint32_t v = slot_obj(s, i), old;

	if (v == NONE || v == CONN_LEGACY || (v & flag))
		return;
	table_put(s, proc, SP_CONN, fd, v | flag, &old);
}

/* A connection of a writer that follows requests: remembered with its
 * family (and whether its peer is one of the run); its requests come as
 * REQ_BEGIN/REQ_END. */
static int conn_open(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	uint32_t old, v = CONN_KIND + vrt_net_kind(e);

	if (vrt_net_flags(e) & VRT_NET_F_PEER_RUN) {
		v |= CF_HOP;
		if (vrt_net_val(e))
			r->forwarded_from_pid = vrt_net_val(e);
	} else if (!(e->flags & VRT_EV_SNAP) && e->ts > s->last_accept_ts) {
		s->last_accept_ts = e->ts;
	}
	if (table_put(s, e->proc, SP_CONN, e->addr, v, &old))
		return -1;
	if (old != NONE || (e->flags & VRT_EV_SNAP))
		return 0;
	r->connections++;
	if (e->proc < s->nprocs)
		s->conns[e->proc]++;
	return 0;
}

static int conn_close(struct state *s, const struct vrt_event *e)
{
	size_t i = table_find(s, e->proc, SP_CONN, e->addr), k;
	uint32_t v = slot_obj(s, i);

	if (v == CONN_LEGACY) /* the connection was the request */
		return request_edge(s, e, SP_CONN, 0);
	if (v != NONE) {
		table_remove_at(s, i);
		if ((v & CF_UNCOUNTED) && s->uncounted_open)
			s->uncounted_open--;
	}
	/* Every request still in flight on it ends with it. */
	for (k = s->nstreams; k-- > 0;)
		if (s->streams[k].proc == e->proc &&
		    (s->streams[k].key & 0xffffffffu) == (e->addr & 0xffffffffu))
			req_close(s, e->proc, s->streams[k].key, e->ts);
	req_close(s, e->proc, e->addr & 0xffffffffu, e->ts);
	return 0;
}

/* A request began on a connection. */
static int req_begin(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned fl = vrt_net_flags(e);
	uint32_t conn = table_get(s, e->proc, SP_CONN, e->addr);
	uint64_t key = req_key(e);
	uint32_t old, v = (fl & VRT_NET_F_INFERRED) ? RQ_INFERRED : RQ_PLAIN;
	int snap = (e->flags & VRT_EV_SNAP) != 0;

	if (conn != NONE && conn != CONN_LEGACY && (conn & CF_HOP)) {
		/* A hop between two processes of the run: the request (or
		 * the warm-up, the health check) is the run's own. */
		if (!snap && !(fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)) &&
		    !(fl & VRT_NET_F_INFERRED)) {
			r->forwarded_requests++;
			if (e->proc < s->t->nprocs)
				r->forwarded_proc_pid = s->t->procs[e->proc].pid;
		}
		return 0;
	}
	if (fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)) {
		if (snap)
			return 0;
		if (fl & VRT_NET_F_PROBE)
			r->probe_requests++;
		else
			r->internal_requests++;
		return path_note(s, e, 1);
	}
	if (e->proc < s->nprocs)
		s->ps[e->proc].served = 1;
	if (!snap)
		first_request(r, e->ts);
	if (conn != NONE && CONN_FAMILY(conn) == CONN_KIND + VRT_NET_KIND_UNIX &&
	    e->proc < s->nprocs)
		s->ps[e->proc].unix_http = 1;
	if (table_put(s, e->proc, SP_HREQ, key, v, &old))
		return -1;
	if (old != NONE)
		return 0;
	if (v == RQ_INFERRED) {
		struct turn_open x = {key, e->proc, e->ts, 0};
		if (push((void **)&s->turns, &s->nturns, &x, sizeof(x)))
			return -1;
		s->inflight_inferred++;
	}
	if (key >> 32) {
		struct stream_open x = {key, e->proc};
		if (push((void **)&s->streams, &s->nstreams, &x, sizeof(x)))
			return -1;
	}
	r->inflight++;
	if (!snap) {
		if (v == RQ_INFERRED) {
			r->inferred_requests++;
		} else {
			if (key >> 32)
				r->stream_requests++;
			r->http_requests++;
		}
		if (path_note(s, e, 0))
			return -1;
	}
	s->snap_edge = snap;
	inflight_changed(s, e->ts);
	s->snap_edge = 0;
	return 0;
}

static int req_end(struct state *s, const struct vrt_event *e)
{
	uint64_t key = req_key(e);
	size_t i = table_find(s, e->proc, SP_HREQ, key);
	uint32_t v = slot_obj(s, i);

	if (v == NONE)
		return 0; /* ended already, a probe, or never seen begun */
	first_response(s->r, e->ts, e->size);
	if (v == RQ_INFERRED && vrt_net_val(e)) {
		/* It ended at the server's last write, lag ago. */
		int64_t lag = (int64_t)vrt_net_val(e) * 1000, begin = e->ts;
		size_t k = turn_find(s, e->proc, key);
		if (k != SIZE_MAX)
			begin = s->turns[k].begin;
		lag_correct(s, begin, e->ts - lag, e->ts);
	}
	req_close(s, e->proc, key, e->ts);
	return 0;
}

/* The server answers (or goes on answering) an inferred request. */
static void on_answer(struct state *s, const struct vrt_event *e)
{
	size_t i = turn_find(s, e->proc, req_key(e));
	if (i == SIZE_MAX)
		return;
	s->turns[i].mark = e->ts;
	turn_deadline(s);
}

/* A connection's first bytes are another protocol than HTTP/1.x. */
static void on_proto(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	unsigned fl = vrt_net_flags(e);
	uint32_t conn = table_get(s, e->proc, SP_CONN, e->addr);

	r->other_connections++;
	if (fl & VRT_NET_F_FOLLOWED) {
		if (e->size == VRT_NET_PROTO_HTTP2)
			conn_flag(s, e->proc, e->addr, CF_STREAMS);
		return;
	}
	/* Not followed: ZMQ's plumbing, or an older writer that followed
	 * HTTP/1.x alone. A client's connection to the server (inet, from
	 * outside the run) then has requests that cannot be counted. */
	if (e->size == VRT_NET_PROTO_ZMTP || conn == NONE ||
	    conn == CONN_LEGACY || (conn & (CF_HOP | CF_UNCOUNTED)) ||
	    CONN_FAMILY(conn) != CONN_KIND + VRT_NET_KIND_INET)
		return;
	conn_flag(s, e->proc, e->addr, CF_UNCOUNTED);
	s->uncounted_open++;
	r->uncounted_connections++;
}

static int on_net(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	int by_conn = e->proc >= s->nprocs || !s->uses_requests[e->proc];
	unsigned fl = vrt_net_flags(e);

	if (e->aux == VRT_NET_LISTEN)
		return on_listen(s, e);
	if (is_request_edge(e->aux) && behind_front(s, e->proc)) {
		if (e->aux == VRT_NET_REQ_BEGIN && !(e->flags & VRT_EV_SNAP) &&
		    !(fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL)))
			r->forwarded_requests++;
		return 0;
	}
	if (e->flags & VRT_EV_PAST) {
		/* Kept in standby: when requests came and went, nothing
		 * about what is open now (the snapshot says that). */
		if (fl & (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL))
			return 0;
		if (e->aux == VRT_NET_REQ_BEGIN) {
			if (e->proc < s->nprocs)
				s->ps[e->proc].served = 1;
			first_request(r, e->ts);
		} else if (e->aux == VRT_NET_REQ_END) {
			first_response(r, e->ts, e->size);
		}
		if (e->aux == VRT_NET_REQ_BEGIN || e->aux == VRT_NET_REQ_END ||
		    e->aux == VRT_NET_CLOSE) {
			struct past_edge x = {e->ts,
			                      e->aux == VRT_NET_CLOSE ? e->addr
			                                              : req_key(e),
			                      e->proc, e->aux == VRT_NET_REQ_BEGIN};
			return push((void **)&s->edges, &s->nedges, &x,
			            sizeof(x));
		}
		return 0;
	}
	switch (e->aux) {
	case VRT_NET_ACCEPT:
		if (!by_conn)
			return 0;
		if (vrt_net_kind(e) != VRT_NET_KIND_UNKNOWN)
			return conn_open(s, e);
		return request_edge(s, e, SP_CONN, 1);
	case VRT_NET_CLOSE:
		return by_conn ? conn_close(s, e) : 0;
	case VRT_NET_REQ_BEGIN:
		return by_conn ? req_begin(s, e) : 0;
	case VRT_NET_REQ_END:
		return by_conn ? req_end(s, e) : 0;
	case VRT_NET_ANSWER:
		if (by_conn)
			on_answer(s, e);
		return 0;
	case VRT_NET_PROTO:
		if (by_conn)
			on_proto(s, e);
		return 0;
	}
	return 0; /* an op from a newer writer */
}

/* Whether process p was recording at ts: from its start unless it began
 * in standby, then as its last start or stop before ts says; *since: when
 * that last change was (INT64_MIN: none). */
static int recording_at(const struct state *s, uint32_t p, int64_t ts,
                        int64_t *since)
{
	int on = p < s->t->nprocs && !s->t->procs[p].started_in_standby;
	size_t i;

	*since = INT64_MIN;
	for (i = 0; i < s->nmodes; i++) {
		const struct mode_change *m = &s->modes[i];
		if (m->proc == p && m->ts <= ts && m->ts >= *since) {
			*since = m->ts;
			on = m->on;
		}
	}
	return on;
}

/* How the requests in flight of process p changed by ts, by the edges
 * it kept since `from` (when it went to standby): a request whose last
 * edge is a begin is open (+1); one that ended without beginning in that
 * stretch was open when it stopped recording, which the replay still
 * counts (-1). */
static int64_t standby_inflight(const struct state *s, uint32_t p,
                                int64_t from, int64_t ts)
{
	int64_t n = 0;
	size_t i, j;

	for (i = 0; i < s->nedges; i++) {
		const struct past_edge *a = &s->edges[i];
		int first = 1, last = 1;
		if (a->proc != p || a->ts < from || a->ts > ts)
			continue;
		for (j = 0; j < s->nedges; j++) {
			const struct past_edge *b = &s->edges[j];
			int before;
			if (j == i || b->proc != p || b->fd != a->fd ||
			    b->ts < from || b->ts > ts)
				continue;
			before = b->ts < a->ts || (b->ts == a->ts && j < i);
			first &= !before;
			last &= before;
		}
		if (last && a->begin)
			n++;
		if (first && !a->begin)
			n--;
	}
	return n;
}

/* A failure while other processes of the run were in standby: their
 * requests then (kept edges) are in flight too. What the replay counted
 * is what the recording processes had open. */
static void settle_inflight(struct state *s)
{
	struct vrt_replay *r = s->r;
	size_t i;
	uint32_t p;

	if (!s->nedges)
		return;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		int64_t n = f->inflight, since;
		for (p = 0; p < s->nprocs; p++)
			if (!recording_at(s, p, f->ts, &since))
				n += standby_inflight(s, p, since, f->ts);
		f->inflight = n > 0 ? (uint32_t)n : 0;
		/* at least that many were in flight at some point */
		if (f->inflight > r->max_inflight) {
			r->max_inflight = f->inflight;
			r->max_inflight_ts = f->ts;
		}
	}
}

/* Serving from facts kept in standby: a process that was in standby when
 * its first request came keeps it as a fact, read out of time order, so
 * serving may have begun before the stream said. A failure of a
 * per-request phase with requests in flight after that moment is of the
 * request stage, as stage_request would have said had it known. */
static void settle_serving(struct state *s)
{
	struct vrt_replay *r = s->r;
	size_t i;

	if (r->have_first_request &&
	    (!r->serving || r->first_request_ts < r->serving_ts)) {
		r->serving = 1;
		r->serving_ts = r->first_request_ts;
	}
	if (!r->serving)
		return;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		if (!f->after_ready && f->ts >= r->serving_ts && f->inflight &&
		    f->phase != VRT_PHASE_weights && slot_is_demand(f->phase))
			f->after_ready = 1;
	}
}

/* The server's socket from the listen() facts, and readiness (see
 * replay.h): facts kept in standby arrive out of time order, so both are
 * settled here. */
static void settle_ready(struct state *s)
{
	struct vrt_replay *r = s->r;
	const struct listen_seen *best = NULL;
	int kind = VRT_NET_KIND_UNKNOWN;
	size_t i;

	if (s->inet.have) {
		best = &s->inet;
		kind = VRT_NET_KIND_INET;
	} else {
		for (i = 0; i < s->nprocs; i++) {
			const struct listen_seen *u = &s->ps[i].unix_listen;
			if (u->have && s->ps[i].unix_http &&
			    (!best || u->ts < best->ts)) {
				best = u;
				kind = VRT_NET_KIND_UNIX;
			}
		}
		if (!best && s->unknown.have)
			best = &s->unknown;
	}
	r->have_server_ready = best != NULL;
	if (best) {
		r->server_ready_ts = best->ts;
		r->server_ready_proc = best->proc;
		r->server_port = best->port;
		r->server_ready_kind = kind;
	}
	if (r->have_first_ok_response) {
		r->have_ready = 1;
		r->ready_from = VRT_READY_RESPONSE;
		r->ready_ts = r->first_ok_response_ts;
	} else if (best && s->last_load_ts != INT64_MIN &&
	           s->last_accept_ts > s->last_load_ts &&
	           s->last_load_fail_ts < s->last_load_ts &&
	           (r->uncounted_connections || r->inferred_requests ||
	            s->legacy_conns)) {
		/* No request answered that could be read (a protocol not
		 * followed, turns without status, an older writer's
		 * connections): the load phases ended, then a client
		 * connected, and nothing of the load failed after. */
		r->have_ready = 1;
		r->ready_from = VRT_READY_LOAD_END;
		/* ... and not before it listened */
		r->ready_ts = s->last_load_ts > best->ts ? s->last_load_ts
		                                         : best->ts;
	}
}

/* ---- windows ------------------------------------------------------------ */

/* Grows every per-window device array to n devices (new ones zero). */
static int windows_grow(struct vrt_replay *r, size_t n)
{
	size_t i;

	for (i = 0; i < r->nwindows; i++) {
		struct vrt_replay_window_device *nd =
		        realloc(r->windows[i].dev, n * sizeof(*nd));
		if (!nd)
			return -1;
		memset(nd + r->ndevices, 0, (n - r->ndevices) * sizeof(*nd));
		r->windows[i].dev = nd;
	}
	return 0;
}

/* A mark ends the open window and opens the next, which starts with what
 * is live and in flight at the mark. */
static int window_open(struct state *s, const struct vrt_replay_mark *m)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_window *w;
	size_t i;

	if (r->nwindows % 16 == 0) {
		void *p = realloc(r->windows,
		                  (r->nwindows + 16) * sizeof(*r->windows));
		if (!p)
			return -1;
		r->windows = p;
	}
	if (r->nwindows)
		r->windows[r->nwindows - 1].end_ts = m->ts;
	w = &r->windows[r->nwindows];
	memset(w, 0, sizeof(*w));
	w->dev = calloc(r->ndevices ? r->ndevices : 1, sizeof(*w->dev));
	if (!w->dev)
		return -1;
	w->mark = *m;
	w->start_ts = m->ts;
	w->end_ts = m->ts;
	w->max_inflight = r->inflight;
	r->nwindows++;
	for (i = 0; i < r->ndevices; i++)
		window_note(s, (int32_t)i, VRT_REPLAY_MAX_PHASES);
	return 0;
}

static void windows_free(struct vrt_replay *r)
{
	size_t i;

	for (i = 0; i < r->nwindows; i++)
		free(r->windows[i].dev);
	free(r->windows);
}

static int on_mark(struct state *s, const struct vrt_event *e)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_mark m;

	if (r->nmarks % 64 == 0) {
		void *p = realloc(r->marks, (r->nmarks + 64) * sizeof(m));
		if (!p)
			return -1;
		r->marks = p;
	}
	m.ts = e->ts;
	m.proc = e->proc;
	m.label = e->extra;
	r->marks[r->nmarks++] = m;
	return window_open(s, &m);
}

/* A REPEAT: addr allocate-then-free pairs like an ALLOC of these fields,
 * each freed before the next; their bytes were live only momentarily, so
 * they count once on top of what is live now (a peak, the sites at it,
 * a timeline's highest point), then are gone. */
static int on_repeat(struct state *s, const struct vrt_event *e, int fam)
{
	struct obj o;

	if (!e->addr)
		return 0;
	memset(&o, 0, sizeof(o));
	o.size = e->size;
	o.device = e->device;
	o.slot = phase_slot(e->phase);
	o.stack = e->stack;
	o.family = (uint8_t)fam;
	o.kind = fam == VRT_FAM_VMM ? OBJ_HANDLE : OBJ_ALLOC;
	o.handle = NONE;
	o.site = NONE;
	count(s, &o, 0, e->addr);
	count(s, &o, 1, e->addr);
	charge(s, &o, e->ts);
	if (s->oom)
		return -1;
	discharge(s, &o);
	return 0;
}

/* ---- sites at the peaks ------------------------------------------------ */

static int cmp_site_bytes(const void *pa, const void *pb)
{
	const struct vrt_replay_site *a = pa, *b = pb;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* r->sites from the lazy snapshots: every site that held something at its
 * device's last peak, the largest r->top_sites per (device, phase). */
static int sites_collect(struct state *s)
{
	struct vrt_replay *r = s->r;
	struct vrt_replay_site *v;
	size_t limit = r->top_sites ? r->top_sites : VRT_REPLAY_TOP_SITES;
	size_t i, n = 0, kept = 0;

	if (!s->nsites)
		return 0;
	v = malloc(s->nsites * sizeof(*v));
	if (!v)
		return -1;
	for (i = 0; i < s->nsites; i++) {
		const struct site *x = &s->sites[i];
		const struct devstate *ds;
		uint64_t bytes, allocs;
		if (x->device < 0 || (size_t)x->device >= r->ndevices ||
		    !r->dev[x->device].peak_bytes)
			continue;
		ds = &s->devs[x->device];
		bytes = x->epoch == ds->epoch ? x->peak_bytes : x->bytes;
		allocs = x->epoch == ds->epoch ? x->peak_allocs : x->allocs;
		if (!allocs)
			continue;
		v[n].device = x->device;
		v[n].phase = x->slot;
		v[n].stack = x->stack;
		v[n].bytes = bytes;
		v[n].allocs = allocs;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_site_bytes);
	r->sites = v;
	r->nsites = 0;
	for (i = 0; i < n; i++) {
		if (!i || v[i].device != v[i - 1].device ||
		    v[i].phase != v[i - 1].phase)
			kept = 0;
		if (kept++ < limit)
			v[r->nsites++] = v[i];
	}
	return 0;
}

/* ---- devices in their final order ------------------------------------ */

/* Moves every per-device array and device field of r from the stream's
 * indexes to map[i] (a permutation of 0..n-1, n == r->ndevices). */
static int remap_devices(struct vrt_replay *r, const uint32_t *map, size_t n)
{
	struct vrt_replay_device *nd;
	uint8_t *seen;
	size_t i, j;

	if (n != r->ndevices || !n)
		return 0;
	seen = calloc(n, 1);
	if (!seen)
		return -1;
	for (i = 0; i < n; i++) {
		if (map[i] >= n || seen[map[i]]) {
			free(seen); /* not a permutation: leave r alone */
			return 0;
		}
		seen[map[i]] = 1;
	}
	free(seen);
	nd = malloc(n * sizeof(*nd));
	if (!nd)
		return -1;
	for (i = 0; i < n; i++)
		nd[map[i]] = r->dev[i];
	free(r->dev);
	r->dev = nd;
	for (j = 0; j < r->nwindows; j++) {
		struct vrt_replay_window_device *wd =
		        malloc(n * sizeof(*wd));
		if (!wd)
			return -1;
		for (i = 0; i < n; i++)
			wd[map[i]] = r->windows[j].dev[i];
		free(r->windows[j].dev);
		r->windows[j].dev = wd;
	}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].device >= 0 && (size_t)r->fails[i].device < n)
			r->fails[i].device = (int32_t)map[r->fails[i].device];
	for (i = 0; i < r->nsites; i++)
		if (r->sites[i].device >= 0 && (size_t)r->sites[i].device < n)
			r->sites[i].device = (int32_t)map[r->sites[i].device];
	if (r->nsites > 1)
		qsort(r->sites, r->nsites, sizeof(*r->sites), cmp_site_bytes);
	if (r->have_single_request && r->single_request_peak_device >= 0 &&
	    (size_t)r->single_request_peak_device < n)
		r->single_request_peak_device =
		        (int32_t)map[r->single_request_peak_device];
	for (i = 0; i < r->nprocs; i++) {
		uint64_t was = r->procs[i].devices, now = 0;
		for (j = 0; j < n && j < 64; j++)
			if ((was >> j & 1) && map[j] < 64)
				now |= 1ull << map[j];
		r->procs[i].devices = now;
	}
	return 0;
}

/* ---- the stream --------------------------------------------------------- */

/* The per-device arrays moved: the sites' pointers into them follow. */
static void sites_rebase(struct state *s)
{
	size_t i;

	for (i = 0; i < s->nsites; i++) {
		s->sites[i].d = &s->r->dev[s->sites[i].device];
		s->sites[i].ds = &s->devs[s->sites[i].device];
	}
}

/* Grows the per-device and per-process state to t's tables. */
static int state_grow(struct state *s, const struct vrt_trace *t)
{
	struct vrt_replay *r = s->r;
	size_t n = t->ndevices;

	if (n > r->ndevices) {
		struct vrt_replay_device *nd;
		struct devstate *ns;
		nd = realloc(r->dev, n * sizeof(*nd));
		if (!nd)
			return -1;
		memset(nd + r->ndevices, 0, (n - r->ndevices) * sizeof(*nd));
		r->dev = nd;
		ns = realloc(s->devs, n * sizeof(*ns));
		if (!ns)
			return -1;
		memset(ns + r->ndevices, 0, (n - r->ndevices) * sizeof(*ns));
		s->devs = ns;
		sites_rebase(s);
		if (windows_grow(r, n))
			return -1;
		r->ndevices = n;
	}
	if (t->nprocs > s->nprocs) {
		uint8_t *nu = realloc(s->uses_requests, t->nprocs);
		uint64_t *nc;
		struct pstate *np;
		struct vrt_replay_proc *rp;
		size_t add = t->nprocs - s->nprocs;
		int64_t *la;
		size_t i;
		if (!nu)
			return -1;
		memset(nu + s->nprocs, 0, add);
		s->uses_requests = nu;
		nc = realloc(s->conns, t->nprocs * sizeof(*nc));
		if (!nc)
			return -1;
		memset(nc + s->nprocs, 0, add * sizeof(*nc));
		s->conns = nc;
		np = realloc(s->ps, t->nprocs * sizeof(*np));
		if (!np)
			return -1;
		memset(np + s->nprocs, 0, add * sizeof(*np));
		s->ps = np;
		rp = realloc(r->procs, t->nprocs * sizeof(*rp));
		if (!rp)
			return -1;
		memset(rp + s->nprocs, 0, add * sizeof(*rp));
		r->procs = rp;
		r->nprocs = t->nprocs;
		la = realloc(s->last_alloc, t->nprocs * sizeof(*la));
		if (!la)
			return -1;
		for (i = s->nprocs; i < t->nprocs; i++)
			la[i] = INT64_MIN;
		s->last_alloc = la;
		s->nprocs = t->nprocs;
	}
	if (t->nstacks * SITE_HINTS > s->nstack_site) {
		size_t nc = s->nstack_site ? s->nstack_site : 256, i;
		uint32_t *ns;
		while (nc < t->nstacks * SITE_HINTS)
			nc *= 2;
		ns = realloc(s->stack_site, nc * sizeof(*ns));
		if (!ns)
			return -1;
		for (i = s->nstack_site; i < nc; i++)
			ns[i] = NONE;
		s->stack_site = ns;
		s->nstack_site = nc;
	}
	return 0;
}

static void state_free(struct state *s)
{
	if (!s)
		return;
	free(s->tab);
	free(s->objs);
	free(s->uses_requests);
	free(s->conns);
	free(s->ps);
	free(s->edges);
	free(s->turns);
	free(s->streams);
	free(s->modes);
	free(s->before);
	free(s->devs);
	free(s->sites);
	free(s->sindex);
	free(s->stack_site);
	free(s->busy);
	free(s->pend);
	free(s->last_alloc);
	free(s);
}

int vrt_replay_begin(struct vrt_replay *r, const struct vrt_trace *t)
{
	struct state *s = calloc(1, sizeof(*s));

	if (!s)
		return -1;
	r->priv = s;
	s->r = r;
	s->t = t;
	s->free_obj = NONE;
	s->series_start = t->start_ns;
	s->series_width = 1;
	s->bucket = 0;
	s->bucket_end = t->start_ns < INT64_MAX ? t->start_ns + 1 : INT64_MAX;
	s->loading = 1;
	s->turn_deadline = INT64_MAX;
	s->last_load_ts = s->last_load_fail_ts = s->last_accept_ts = INT64_MIN;
	if (table_grow(s) || state_grow(s, t))
		return -1;
	return 0;
}

static NOINLINE int replay_one(struct state *s, const struct vrt_event *e)
{
	int fam = vrt_api_family(e->api);

	switch (e->kind) {
	case VRT_EV_ALLOC:
		return fam < 0 || fam == VRT_FAM_NONE ? 0 : on_alloc(s, e, fam);
	case VRT_EV_FREE:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_free(s, e, fam);
		return 0;
	case VRT_EV_REPEAT:
		return fam < 0 || fam == VRT_FAM_NONE ? 0
		                                      : on_repeat(s, e, fam);
	case VRT_EV_MAP:
		return fam < 0 || fam == VRT_FAM_NONE ? 0 : on_map(s, e);
	case VRT_EV_UNMAP:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_unmap(s, e);
		return 0;
	case VRT_EV_PREFREE:
		if (fam >= 0 && fam != VRT_FAM_NONE)
			on_prefree(s, e, fam);
		return 0;
	case VRT_EV_NET:
		return on_net(s, e);
	case VRT_EV_REQUEST:
		if (e->aux != 1 && e->aux != 2)
			return 0;
		if (e->flags & VRT_EV_PAST) {
			if (e->aux == 1)
				first_request(s->r, e->ts);
			return 0;
		}
		if (e->proc < s->nprocs && !s->uses_requests[e->proc])
			use_requests(s, e->proc, e->ts);
		if (e->aux == 1 && !(e->flags & VRT_EV_SNAP))
			first_request(s->r, e->ts);
		return request_edge(s, e, SP_REQ, e->aux == 1);
	case VRT_EV_MARK:
		return on_mark(s, e);
	case VRT_EV_SNAPSHOT:
		return on_snapshot(s, e);
	case VRT_EV_FAIL:
		return on_fail(s, e);
	case VRT_EV_MEMINFO:
		on_meminfo(s, e);
		return 0;
	}
	return 0; /* PROC, SAMPLE, kinds from a newer loader */
}

/* ---- the common case, inline ------------------------------------------ */

/*
 * Most events are allocations and frees of plain device pointers (device,
 * async, managed: one address space, no handles, no host memory). These
 * take a straight path here with the same effect as on_alloc/on_free +
 * count + charge/discharge, and their table entries carry what the free
 * needs (TAG_PTR), so no object is made. Anything unusual (an address
 * already live, a device outside the table, a standby snapshot entry, an
 * entry that is an object) goes the general way. The general path stays
 * the reference: both must agree.
 */

/* Per api id: 1 + its family when that is a plain pointer family, else
 * 0 (looked up once per event instead of two switches). */
#define VRT_X_PTRFAM(i, name, fam, op)                                         \
	[i] = ((fam) == VRT_FAM_DEVICE || (fam) == VRT_FAM_ASYNC ||            \
	       (fam) == VRT_FAM_MANAGED)                                       \
	              ? (fam) + 1                                              \
	              : 0,
static const uint8_t api_ptr_family[256] = {VRT_API_LIST(VRT_X_PTRFAM)};
#undef VRT_X_PTRFAM

/* Events between a table line's prefetch and its use (a power of
 * two). */
#define PREFETCH_AHEAD 8

/* The hash of e's key as a plain pointer, its table line prefetched. */
static inline uint32_t prefetch_slot(const struct state *s,
                                     const struct vrt_event *e)
{
	uint32_t h = hash_key(e->proc, SP_PTR, e->addr);

	__builtin_prefetch(&s->tab[h & (s->cap - 1)]);
	return h;
}

static inline unsigned ptr_family_of(uint16_t api)
{
	return api < 256 ? api_ptr_family[api] : 0;
}

/* The site of (dev, slot, stack): mostly the one this stack named last
 * on this device. NONE when out of memory. */
static inline uint32_t site_find(struct state *s, int32_t dev, uint32_t slot,
                                 uint32_t stack)
{
	size_t hint = (size_t)stack * SITE_HINTS +
	              ((uint32_t)dev & (SITE_HINTS - 1));
	uint32_t si = hint < s->nstack_site ? s->stack_site[hint] : NONE;

	/* A hint only ever names a site of its own stack. */
	if (LIKELY(si != NONE)) {
		const struct site *x = &s->sites[si];
		if (LIKELY(x->device == dev && x->slot == slot))
			return si;
	}
	return site_get(s, dev, slot, stack);
}

/* 1 when handled, 0 to take the general path, -1 out of memory. The
 * state's arrays are read into locals first: the counters below are
 * uint64_t, which could alias the state's size_t fields, and would make
 * the compiler reload them after every store. */
static inline int fast_alloc(struct state *s, const struct vrt_event *e,
                             unsigned fam, uint32_t h)
{
	struct vrt_replay_device *d;
	struct vrt_counters *pc;
	struct devstate *ds;
	struct series_acc *a;
	struct site *x;
	struct slot *tab, *sl;
	uint32_t si, slot = phase_slot(e->phase), proc = e->proc;
	uint64_t size = e->size, addr = e->addr, tracked;
	int64_t ts = e->ts;
	int32_t dev = e->device;
	size_t i, mask;

	if (UNLIKELY((uint32_t)dev >= s->r->ndevices ||
	             (e->flags & VRT_EV_SNAP)))
		return 0;
	/* At most half full, as table_put keeps it. */
	if (UNLIKELY(s->used >= s->grow_at) && table_grow(s))
		return -1;
	tab = s->tab;
	mask = s->cap - 1;
	for (i = h & mask; tab[i].tag != TAG_EMPTY; i = (i + 1) & mask)
		if (UNLIKELY(tab[i].addr == addr && tab[i].proc == proc &&
		             tab[i].space == SP_PTR))
			return 0; /* live already: its free was lost */
	si = site_find(s, dev, slot, e->stack); /* may move s->sites */
	if (UNLIKELY(si == NONE))
		return -1;
	s->used++;
	x = &s->sites[si];
	sl = &tab[i];
	sl->addr = addr;
	sl->size = size;
	sl->proc = proc;
	sl->hash = h;
	sl->ref = si;
	sl->space = SP_PTR;
	sl->tag = TAG_PTR;
	sl->family = (uint8_t)fam;
	d = x->d;
	ds = x->ds;
	pc = &d->phase[slot];
	/* as on_alloc: which devices each process allocated on */
	if (LIKELY(proc < s->r->nprocs && dev < 64))
		s->r->procs[proc].devices |= 1ull << dev;
	d->fam[fam].allocs++;
	counters_add(&d->fam[fam], size, ts);
	if (x->epoch != ds->epoch) /* site_touch */
		site_snapshot(x, ds->epoch);
	x->bytes += size;
	x->allocs++;
	pc->allocs++;
	tracked = d->tracked_bytes + size;
	if (UNLIKELY(tracked < size))
		peak_settle(d, ds); /* wraps: no new peak (see charge) */
	counters_add(pc, size, ts); /* phase_add */
	ds->live[slot] = pc->live_bytes;
	d->tracked_bytes = tracked;
	if (tracked > d->peak_bytes)
		dev_peak(d, ds, ts);
	if (UNLIKELY(s->single_on) && slot_is_demand(slot))
		single_note(s, (size_t)dev, ts);
	if (UNLIKELY(s->r->nwindows != 0))
		window_note(s, dev, slot);
	a = &ds->acc;
	range_up(a, slot, pc->live_bytes);
	/* series_note */
	if (!a->active || tracked > a->max.total) {
		a->max.ts = ts;
		a->max.total = tracked;
		a->max_live = 1;
		a->active = 1;
		a->after_max = 0;
	} else {
		a->after_max = 1;
	}
	a->last_ts = ts;
	alloc_noted(s, e, slot, (int)fam);
	return 1;
}

/* 1 when handled, 0 to take the general path. */
static inline int fast_free(struct state *s, const struct vrt_event *e,
                            uint32_t h)
{
	struct vrt_replay_device *d;
	struct vrt_counters *fc, *pc;
	struct devstate *ds;
	struct series_acc *a;
	struct slot *tab = s->tab, *sl;
	struct site *x;
	uint64_t size, addr = e->addr;
	uint32_t slot, proc = e->proc;
	size_t i, mask = s->cap - 1;

	if (UNLIKELY(!addr))
		return 0;
	for (i = h & mask;; i = (i + 1) & mask) {
		sl = &tab[i];
		if (UNLIKELY(sl->tag == TAG_EMPTY))
			return 0; /* unknown */
		if (sl->addr == addr && sl->proc == proc &&
		    sl->space == SP_PTR)
			break;
	}
	if (UNLIKELY(sl->tag != TAG_PTR))
		return 0; /* an object */
	size = sl->size;
	x = &s->sites[sl->ref];
	d = x->d;
	ds = x->ds;
	slot = x->slot;
	fc = &d->fam[sl->family];
	pc = &d->phase[slot];
	table_remove_at(s, i);
	if (UNLIKELY(s->npend))
		pending_freed(s, proc, x->device, 0, size);
	fc->frees++;
	pc->frees++;
	counters_sub(fc, size);
	if (x->epoch != ds->epoch) /* site_touch */
		site_snapshot(x, ds->epoch);
	x->bytes -= sub_clamp(x->bytes, size);
	x->allocs--; /* >= 1: this entry is one of them */
	a = &ds->acc;
	if (UNLIKELY(a->max_live)) /* dev_pre_fall */
		series_copy_max(s, x->device);
	peak_settle(d, ds);
	counters_sub(pc, size); /* phase_sub */
	ds->live[slot] = pc->live_bytes;
	d->tracked_bytes -= sub_clamp(d->tracked_bytes, size);
	range_down(a, slot, pc->live_bytes, d->tracked_bytes);
	/* series_note: going down, so no new highest point once active */
	if (LIKELY(a->active)) {
		a->after_max = 1;
		a->last_ts = e->ts;
	} else {
		series_note(s, x->device, e->ts);
	}
	return 1;
}

int vrt_replay_feed(struct vrt_replay *r, const struct vrt_trace *t,
                    const struct vrt_event *ev, size_t n)
{
	struct state *s = r->priv;
	uint32_t ahead[PREFETCH_AHEAD];
	size_t i;

	if (!s)
		return -1;
	s->t = t;
	if (state_grow(s, t))
		return -1;
	/* The table is larger than the first-level cache and each event
	 * lands at a random place in it: the line an event will probe is
	 * loaded PREFETCH_AHEAD events early, its key's hash kept for it. */
	for (i = 0; i < n && i < PREFETCH_AHEAD; i++)
		ahead[i] = prefetch_slot(s, &ev[i]);
	for (i = 0; i < n; i++) {
		const struct vrt_event *e = &ev[i];
		uint32_t h = ahead[i % PREFETCH_AHEAD];
		unsigned pf;
		int rc = 0;
		if (LIKELY(i + PREFETCH_AHEAD < n))
			ahead[i % PREFETCH_AHEAD] =
			        prefetch_slot(s, &ev[i + PREFETCH_AHEAD]);
		if (UNLIKELY(e->ts >= s->bucket_end))
			series_tick(s, e->ts);
		if (UNLIKELY(e->ts > s->turn_deadline))
			expire_turns(s, e->ts);
		pf = ptr_family_of(e->api);
		if (LIKELY(pf != 0)) {
			if (e->kind == VRT_EV_ALLOC)
				rc = fast_alloc(s, e, pf - 1, h);
			else if (e->kind == VRT_EV_FREE)
				rc = fast_free(s, e, h);
			if (UNLIKELY(rc < 0))
				return -1;
			if (LIKELY(rc))
				continue;
		}
		s->ts = e->ts;
		if (replay_one(s, e) || s->oom)
			return -1;
	}
	return 0;
}

/* ---- fatal and recovered failures ------------------------------------ */

enum end_kind { END_UNKNOWN = 0, END_DIED = 1, END_LIVED = 2 };

/* How process p ended: its exit status (vramtrace record writes it for
 * the command it started), else a trace cut short (no TRAILER: killed);
 * a TRAILER alone says the exit path ran, not with which status. */
static int proc_end(const struct vrt_process *p)
{
	if (p->exit_kind == VRT_EXIT_SIGNAL ||
	    (p->exit_kind == VRT_EXIT_CODE && p->exit_code != 0))
		return END_DIED;
	if (p->exit_kind == VRT_EXIT_CODE)
		return END_LIVED;
	/* a process still recording has not ended at all */
	return p->truncated && !p->running ? END_DIED : END_UNKNOWN;
}

/* How the run ended: as its root processes (parent not in the run). */
static int run_end(const struct vrt_trace *t)
{
	int end = END_UNKNOWN;
	size_t i, k;

	for (i = 0; i < t->nprocs; i++) {
		int root = 1, e;
		for (k = 0; k < t->nprocs && root; k++)
			if (k != i && t->procs[k].pid == t->procs[i].ppid)
				root = 0;
		if (!root)
			continue;
		e = proc_end(&t->procs[i]);
		if (e == END_DIED)
			return END_DIED;
		if (e == END_LIVED)
			end = END_LIVED;
	}
	return end;
}

/*
 * Marks each process's fatal failure: the last out-of-memory failure it
 * did not recover from, when the process died (signal, non-zero exit,
 * trace cut short), or its end is unknown and the run died, or nothing
 * tells and the process allocated nothing after it. The decisive failure
 * is the earliest fatal one (the first to break; the others may follow
 * from it), else the earliest unrecovered one (a failure the program saw
 * and survived).
 */
static void classify(struct state *s, const struct vrt_trace *t)
{
	struct vrt_replay *r = s->r;
	int run = run_end(t);
	size_t i, k;

	r->decisive = SIZE_MAX;
	for (i = 0; i < r->nfails; i++) {
		struct vrt_replay_failure *f = &r->fails[i];
		int end;
		if (!f->oom)
			continue;
		if (f->recovered) {
			r->recovered++;
			continue;
		}
		for (k = i + 1; k < r->nfails; k++)
			if (r->fails[k].oom && !r->fails[k].recovered &&
			    r->fails[k].proc == f->proc)
				break;
		if (k < r->nfails) /* not the process's last */
			continue;
		end = f->proc < t->nprocs ? proc_end(&t->procs[f->proc])
		                          : END_UNKNOWN;
		f->fatal = end == END_DIED ||
		           (end == END_UNKNOWN &&
		            (run == END_DIED ||
		             (run == END_UNKNOWN &&
		              (f->proc >= s->nprocs ||
		               s->last_alloc[f->proc] <= f->ts))));
	}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].fatal) {
			r->decisive = i;
			return;
		}
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].oom && !r->fails[i].recovered) {
			r->decisive = i;
			return;
		}
}

int vrt_replay_end(struct vrt_replay *r, const struct vrt_trace *t)
{
	struct state *s = r->priv;
	int rc = -1;
	size_t i;

	if (!s)
		return -1;
	s->t = t;
	if (state_grow(s, t))
		goto out;
	series_flush(s);
	if (s->oom)
		goto out;
	while (s->nbusy > VRT_REPLAY_SERIES_BUCKETS &&
	       s->series_width < INT64_MAX / 4)
		series_widen(s);
	r->series_bucket_ns = s->series_width;
	for (i = 0; i < r->ndevices; i++) {
		peak_settle(&r->dev[i], &s->devs[i]);
		r->dev[i].peak_at_snapshot =
		        s->devs[i].snap_peak &&
		        s->devs[i].snap_peak_ts == r->dev[i].peak_ts;
	}
	settle_ready(s);
	settle_inflight(s);
	settle_serving(s);
	classify(s, t);
	for (i = 0; i < r->nprocs && i < t->nprocs; i++)
		r->procs[i].started_in_standby = t->procs[i].started_in_standby;
	/* The last window runs to the end of the run. */
	if (r->nwindows && t->end_ns > r->windows[r->nwindows - 1].start_ts)
		r->windows[r->nwindows - 1].end_ts = t->end_ns;
	if (sites_collect(s))
		goto out;
	if (t->device_remap &&
	    remap_devices(r, t->device_remap, t->ndevices))
		goto out;
	rc = 0;
out:
	state_free(s);
	r->priv = NULL;
	return rc;
}

void vrt_replay_free(struct vrt_replay *r)
{
	size_t i;

	state_free(r->priv);
	for (i = 0; r->dev && i < r->ndevices; i++) {
		free(r->dev[i].series);
		free(r->dev[i].ranges);
	}
	free(r->inflight_series);
	free(r->paths);
	free(r->procs);
	free(r->dev);
	free(r->fails);
	free(r->marks);
	windows_free(r);
	free(r->sites);
	memset(r, 0, sizeof(*r));
}
