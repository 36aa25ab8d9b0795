/*
 * live.c — the preload's own table of live allocations (see live.h).
 *
 * Keys are (space, address): device pointers (device, async, managed
 * families), pinned host memory, registered host memory, reserved address
 * ranges and VMM handles are separate spaces, as in the trace. Each entry
 * keeps what a snapshot needs to re-create the allocation in a trace (api,
 * device, size, phase, stack) and what `status` and the metrics need
 * (VRAM bytes per device and phase, summed when asked).
 *
 * The table is split into STRIPES stripes by key hash, each an open-
 * addressing array under its own spinlock, grown with mmap (never malloc:
 * this runs inside hooks). Removal shifts the rest of a probe cluster back
 * (no tombstones), so a stripe only grows with what is live, however many
 * addresses come and go. A call touches its stripe's lock and one
 * slot; totals are computed only when asked (status, metrics).
 *
 * A VMM handle's bytes leave the table when the handle is released (the
 * trace itself has the exact release-and-unmap semantics).
 *
 * Pending allocations: a thread's newest allocation first waits in the
 * thread's own area (vrt_tbuf_live), so the common allocate-then-free of
 * one thread touches no stripe at all: the ALLOC and the FREE are plain
 * stores to the thread's own cache line. The thread's next
 * ALLOC moves the waiting one into the table. The area's state word holds
 * a generation and EMPTY / HAS / MOVING:
 *   owner   EMPTY -> HAS (fields written first, release store);
 *           HAS -> EMPTY by a store (its own free);
 *           HAS -> MOVING by CAS, insert into the table, then EMPTY.
 *   others  HAS -> EMPTY by CAS (a free of that address from another
 *           thread, after the table did not have it); wait out MOVING
 *           and look in the table again.
 * Readers (stats, snapshot) visit the areas before the stripes, so an
 * allocation on its way into the table is seen at least once. An ALLOC
 * that waits in an area does not replace a stale table entry of the same
 * address (one whose free we never saw); the next ALLOC that goes through
 * the table does.
 */
#include "live.h"
#include "core.h"

#include <vramtrace/trace_format.h>

#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#define STRIPES 64 /* picked by the top 6 bits of a key hash */
_Static_assert(STRIPES == 64, "stripe selection uses h >> 58");
#define SLOT_EMPTY 0
#define SLOT_USED 1

enum space {
	SP_DPTR,
	SP_PINNED,
	SP_REGISTERED,
	SP_VA,
	SP_VMM,
};

struct slot {
	uint64_t addr, size;
	uint32_t stack;
	uint16_t phase; /* phase id (fixed or custom), from an annotation */
	uint8_t api;
	uint8_t state;
	int16_t device;
	uint8_t space;
	uint8_t annotated;
};

struct stripe {
	_Alignas(64) _Atomic int lock;
	struct slot *slots;
	uint32_t cap, used;
};

static struct stripe stripes[STRIPES];

/* A thread's pending allocation (in its tbuf's live area). Fields are
 * atomics so other threads may read them while validating against the
 * state word (seqlock style). */
#define PD_EMPTY  0u
#define PD_HAS    1u
#define PD_MOVING 2u
#define PD_STATE  3u
#define PD_GEN    4u /* generation unit: the bits above the state */

struct pending {
	_Atomic uint64_t state;
	_Atomic uint64_t addr, size;
	_Atomic uint64_t w2; /* stack | phase << 32 | api << 48 | space << 56 */
	_Atomic uint64_t w3; /* (uint16_t)device | annotated << 16 */
};
_Static_assert(sizeof(struct pending) <= VRT_TBUF_LIVE,
               "pending allocation must fit the tbuf live area");
static _Atomic uint64_t ooms, inflight;
static unsigned (*phase_of_stack)(uint32_t stack);

/* Per-device bytes and the peak of the current window (live.h): one cache
 * line per device, so devices used by different threads do not share. */
static _Atomic int tracking;
static struct {
	_Alignas(64) _Atomic int64_t now;
	_Atomic int64_t peak;
} peaks[VRT_LIVE_MAX_DEVICES];

void vrt_live_set_stack_phase(unsigned (*fn)(uint32_t stack))
{
	phase_of_stack = fn;
}

static void lock(struct stripe *s)
{
	while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&s->lock, memory_order_relaxed))
			;
}

static void unlock(struct stripe *s)
{
	atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static uint64_t hash(int space, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)space << 59)) * 0x9e3779b97f4a7c15ull;
	return h ^ (h >> 31);
}

static int space_of(int api)
{
	switch (vrt_api_family((unsigned)api)) {
	case VRT_FAM_PINNED:
		return SP_PINNED;
	case VRT_FAM_REGISTERED:
		return SP_REGISTERED;
	case VRT_FAM_VA:
		return SP_VA;
	case VRT_FAM_VMM:
		return SP_VMM;
	default:
		return SP_DPTR;
	}
}

static int counts_vram(int space)
{
	return space == SP_DPTR || space == SP_VMM;
}

/* An entry enters (sign 1) or leaves (-1) the table: its device's bytes
 * move, and the window's peak follows them up. */
static void account(int space, int device, uint64_t size, int sign)
{
	if (!atomic_load_explicit(&tracking, memory_order_relaxed) ||
	    !counts_vram(space) || device < 0 || device >= VRT_LIVE_MAX_DEVICES)
		return;
	int64_t d = sign > 0 ? (int64_t)size : -(int64_t)size;
	int64_t now = atomic_fetch_add(&peaks[device].now, d) + d;
	int64_t p =
	        atomic_load_explicit(&peaks[device].peak, memory_order_relaxed);
	while (now > p &&
	       !atomic_compare_exchange_weak(&peaks[device].peak, &p, now))
		;
}

static void account_slot(const struct slot *e, int sign)
{
	account(e->space, e->device, e->size, sign);
}

void vrt_live_track_peaks(void)
{
	atomic_store(&tracking, 1);
}

int vrt_live_tracking_peaks(void)
{
	return atomic_load_explicit(&tracking, memory_order_relaxed);
}

void vrt_live_take_peaks(uint64_t peak[VRT_LIVE_MAX_DEVICES])
{
	for (int d = 0; d < VRT_LIVE_MAX_DEVICES; d++) {
		int64_t now = atomic_load(&peaks[d].now);
		int64_t p = atomic_exchange(&peaks[d].peak, now);
		/* A free counted before its allocation's add (two threads)
		 * may dip below zero for a moment: report none. */
		peak[d] = p > 0 ? (uint64_t)p : 0;
	}
}

/* The slot holding (space, addr), or NULL. Stripe locked. */
static struct slot *find(struct stripe *s, int space, uint64_t addr,
                         uint64_t h)
{
	if (!s->cap)
		return NULL;
	for (uint32_t i = (uint32_t)(h & (s->cap - 1)), n = 0; n < s->cap;
	     i = (i + 1) & (s->cap - 1), n++) {
		struct slot *e = &s->slots[i];
		if (e->state == SLOT_EMPTY)
			return NULL;
		if (e->state == SLOT_USED && e->addr == addr &&
		    e->space == space)
			return e;
	}
	return NULL;
}

static void place(struct slot *slots, uint32_t cap, const struct slot *e)
{
	uint32_t i = (uint32_t)(hash(e->space, e->addr) & (cap - 1));
	while (slots[i].state == SLOT_USED)
		i = (i + 1) & (cap - 1);
	slots[i] = *e;
}

/* Room for one more entry (load below 3/4). */
static int reserve(struct stripe *s)
{
	if ((s->used + 1) * 4 <= s->cap * 3)
		return 0;
	uint32_t cap = s->cap ? s->cap * 2 : 256;
	struct slot *slots = mmap(NULL, cap * sizeof(struct slot),
	                          PROT_READ | PROT_WRITE,
	                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return -1;
	for (uint32_t i = 0; i < s->cap; i++)
		if (s->slots[i].state == SLOT_USED)
			place(slots, cap, &s->slots[i]);
	if (s->slots)
		munmap(s->slots, s->cap * sizeof(struct slot));
	s->slots = slots;
	s->cap = cap;
	return 0;
}

/* Empties slot e, moving later entries of its cluster back so lookups
 * never stop at a hole. */
static void remove_slot(struct stripe *s, struct slot *e)
{
	uint32_t mask = s->cap - 1, i = (uint32_t)(e - s->slots), j = i;
	s->slots[i].state = SLOT_EMPTY;
	s->used--;
	for (;;) {
		j = (j + 1) & mask;
		if (s->slots[j].state == SLOT_EMPTY)
			return;
		uint32_t home = (uint32_t)(hash(s->slots[j].space,
		                                s->slots[j].addr) &
		                           mask);
		/* Move j into the hole i unless its home lies in (i, j]. */
		if ((j > i && (home <= i || home > j)) ||
		    (j < i && (home <= i && home > j))) {
			s->slots[i] = s->slots[j];
			s->slots[j].state = SLOT_EMPTY;
			i = j;
		}
	}
}

static void pending_read(struct pending *pd, struct slot *e)
{
	uint64_t w2 = atomic_load_explicit(&pd->w2, memory_order_acquire);
	uint64_t w3 = atomic_load_explicit(&pd->w3, memory_order_acquire);
	e->addr = atomic_load_explicit(&pd->addr, memory_order_acquire);
	e->size = atomic_load_explicit(&pd->size, memory_order_acquire);
	e->stack = (uint32_t)w2;
	e->phase = (uint16_t)(w2 >> 32);
	e->api = (uint8_t)(w2 >> 48);
	e->space = (uint8_t)(w2 >> 56);
	e->device = (int16_t)(uint16_t)w3;
	e->annotated = (uint8_t)(w3 >> 16);
	e->state = SLOT_USED;
}

/* Adds e to the table, replacing an entry of the same key. A table that
 * cannot grow (mmap failed) misses the entry: the totals stay short by
 * its bytes, nothing worse. */
static void table_put(const struct slot *n)
{
	uint64_t h = hash(n->space, n->addr);
	/* High bits pick the stripe, low bits the slot: keys of one stripe must
	 * not all share their low bits. */
	struct stripe *s = &stripes[h >> 58];
	lock(s);
	struct slot *e = find(s, n->space, n->addr, h), gone;
	int replaced = e != NULL, placed = 0;
	if (e) { /* the same address again without a free we saw: replace */
		gone = *e;
		remove_slot(s, e);
	}
	if (reserve(s) == 0) {
		place(s->slots, s->cap, n);
		s->used++;
		placed = 1;
	}
	unlock(s);
	/* Counted when it was allocated; what leaves the table uncounts. */
	if (replaced)
		account_slot(&gone, -1);
	if (!placed)
		account_slot(n, -1);
}

static int table_remove(int space, uint64_t addr)
{
	uint64_t h = hash(space, addr);
	struct stripe *s = &stripes[h >> 58];
	lock(s);
	struct slot *e = find(s, space, addr, h), gone;
	int found = e != NULL;
	if (e) {
		gone = *e;
		remove_slot(s, e);
	}
	unlock(s);
	if (found)
		account_slot(&gone, -1);
	return found;
}

/* A consistent copy of an area's entry with the state word it goes with;
 * 0 when the area is empty. */
static uint64_t pending_snap(struct pending *pd, struct slot *out)
{
	for (;;) {
		uint64_t st = atomic_load_explicit(&pd->state,
		                                   memory_order_acquire);
		if ((st & PD_STATE) == PD_EMPTY)
			return 0;
		pending_read(pd, out); /* acquire loads: no fence needed */
		if (atomic_load_explicit(&pd->state, memory_order_relaxed) == st)
			return st;
	}
}

struct free_search {
	int space;
	uint64_t addr;
	struct pending *self;
	int done, moving;
};

static void search_area(void *area, void *arg)
{
	struct free_search *fs = arg;
	struct pending *pd = area;
	if (fs->done || pd == fs->self)
		return;
	for (;;) {
		struct slot e;
		uint64_t st = pending_snap(pd, &e);
		if (!st || e.addr != fs->addr || e.space != fs->space)
			return;
		if ((st & PD_STATE) == PD_MOVING) {
			fs->moving = 1; /* on its way into the table */
			return;
		}
		if (atomic_compare_exchange_strong(
		            &pd->state, &st, st & ~(uint64_t)PD_STATE)) {
			account_slot(&e, -1);
			fs->done = 1;
			return;
		}
	}
}

/* A free the calling thread's own area did not hold: the table, else
 * another thread's area (allocated there, freed here), else the table
 * again (the allocation may have moved in meanwhile). */
static void table_free(int space, uint64_t addr, struct pending *self)
{
	if (table_remove(space, addr))
		return;
	for (int tries = 0; tries < 1000; tries++) {
		struct free_search fs = {space, addr, self, 0, 0};
		vrt_tbuf_live_each(search_area, &fs);
		if (fs.done || table_remove(space, addr) || !fs.moving)
			return;
		sched_yield(); /* its owner is between two stores */
	}
}

static unsigned phase_slot(const struct slot *e)
{
	unsigned id = e->annotated ? e->phase
	              : (e->stack && phase_of_stack) ? phase_of_stack(e->stack)
	                                             : 0;
	return id < VRT_LIVE_PHASES ? id : 0;
}

struct has_search {
	int space;
	uint64_t addr;
	int found;
};

static void look_area(void *area, void *arg)
{
	struct has_search *hs = arg;
	struct slot e;
	if (!hs->found && pending_snap(area, &e) && e.addr == hs->addr &&
	    e.space == hs->space)
		hs->found = 1; /* waiting there, or moving into the table */
}

int vrt_live_has(int api, uint64_t addr)
{
	int space = space_of(api);
	uint64_t h = hash(space, addr);
	struct stripe *s = &stripes[h >> 58];
	lock(s);
	int found = find(s, space, addr, h) != NULL;
	unlock(s);
	if (!found) {
		/* The areas, then the table again: an entry moves from one
		 * to the other, never out of both while it lives. */
		struct has_search hs = {space, addr, 0};
		vrt_tbuf_live_each(look_area, &hs);
		found = hs.found;
		if (!found) {
			lock(s);
			found = find(s, space, addr, h) != NULL;
			unlock(s);
		}
	}
	return found;
}

void vrt_live_free(int api, uint64_t addr)
{
	struct pending *pd = vrt_tbuf_live();
	int space = space_of(api);
	if (pd) {
		uint64_t st = atomic_load_explicit(&pd->state,
		                                   memory_order_relaxed);
		if ((st & PD_STATE) == PD_HAS &&
		    atomic_load_explicit(&pd->addr, memory_order_relaxed) ==
		            addr &&
		    (uint8_t)(atomic_load_explicit(&pd->w2,
		                                   memory_order_relaxed) >>
		              56) == space) {
			struct slot e;
			int track = atomic_load_explicit(&tracking,
			                                 memory_order_relaxed);
			if (track)
				pending_read(pd, &e);
			/* A plain store: only this thread makes an area HAS,
			 * and another thread clears this generation only when
			 * it frees the same address too (a double free: empty
			 * either way). */
			atomic_store_explicit(&pd->state,
			                      st & ~(uint64_t)PD_STATE,
			                      memory_order_release);
			if (track)
				account_slot(&e, -1);
			return;
		}
	}
	table_free(space, addr, pd);
}

void vrt_live_alloc(int api, int device, uint64_t addr, uint64_t size,
                    uint32_t stack, uint64_t phase_enc)
{
	struct pending *pd = vrt_tbuf_live();
	int space = space_of(api);
	uint16_t phase = (uint16_t)vrt_phase_id(phase_enc);
	account(space, device, size, 1);
	uint8_t annotated = vrt_phase_source(phase_enc) == VRT_SRC_ANNOTATION;
	if (!pd) {
		struct slot n = {.addr = addr,
		                 .size = size,
		                 .stack = stack,
		                 .phase = phase,
		                 .api = (uint8_t)api,
		                 .state = SLOT_USED,
		                 .device = (int16_t)device,
		                 .space = (uint8_t)space,
		                 .annotated = annotated};
		table_put(&n);
		return;
	}
	uint64_t st = atomic_load_explicit(&pd->state, memory_order_relaxed);
	if ((st & PD_STATE) == PD_HAS) {
		uint64_t moving = (st & ~(uint64_t)PD_STATE) | PD_MOVING;
		if (atomic_compare_exchange_strong(&pd->state, &st, moving)) {
			struct slot old;
			pending_read(pd, &old);
			table_put(&old);
			atomic_store_explicit(&pd->state,
			                      st & ~(uint64_t)PD_STATE,
			                      memory_order_release);
		}
		/* else another thread freed it meanwhile: nothing to move */
	}
	/* Straight from the arguments: a struct built on the stack and
	 * copied wide would stall on store forwarding. */
	/* Release stores: a reader that sees one of these fields also sees
	 * the state that made the area this thread's to write again. */
	st = atomic_load_explicit(&pd->state, memory_order_relaxed);
	atomic_store_explicit(&pd->addr, addr, memory_order_release);
	atomic_store_explicit(&pd->size, size, memory_order_release);
	atomic_store_explicit(&pd->w2,
	                      (uint64_t)stack | (uint64_t)phase << 32 |
	                              (uint64_t)(uint8_t)api << 48 |
	                              (uint64_t)(uint8_t)space << 56,
	                      memory_order_release);
	atomic_store_explicit(&pd->w3,
	                      (uint64_t)(uint16_t)(int16_t)device |
	                              (uint64_t)annotated << 16,
	                      memory_order_release);
	atomic_store_explicit(&pd->state,
	                      ((st & ~(uint64_t)PD_STATE) + PD_GEN) | PD_HAS,
	                      memory_order_release);
}

void vrt_live_event(const struct vrt_ev *ev)
{
	switch (ev->rec) {
	case VRT_REC_NET: {
		/* Requests, not connections: an idle keep-alive connection
		 * counts zero; a close ends the requests open on it (size:
		 * how many); probes and plumbing never count. */
		int counted = !(ev->nflags &
		                (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL));
		uint64_t n = ev->op == VRT_NET_CLOSE ? ev->size
		             : ev->op == VRT_NET_REQ_END && counted ? 1
		                                                    : 0;
		if (ev->op == VRT_NET_REQ_BEGIN && counted) {
			atomic_fetch_add(&inflight, 1);
		} else if (n) {
			uint64_t was = atomic_load(&inflight);
			while (was && !atomic_compare_exchange_weak(
			                      &inflight, &was,
			                      was > n ? was - n : 0))
				;
		}
		return;
	}
	case VRT_REC_FAIL:
		if (ev->error == 2 /* out of memory, CUDA and HIP alike */ &&
		    vrt_api_op(ev->api) == VRT_OP_ALLOC)
			atomic_fetch_add(&ooms, 1);
		return;
	case VRT_REC_ALLOC:
		vrt_live_alloc(ev->api, ev->device, ev->addr, ev->size,
		               ev->stack, ev->phase);
		return;
	case VRT_REC_FREE:
		vrt_live_free(ev->api, ev->addr);
		return;
	default:
		return;
	}
}

static int (*_Atomic device_of[3])(uint64_t addr); /* by enum vrt_vendor */

void vrt_live_set_device_of(int vendor, int (*fn)(uint64_t addr))
{
	if (vendor > 0 && vendor < 3)
		atomic_store(&device_of[vendor], fn);
}

/* A device kept for later, with or without the thread's hint. */
static int later(int device)
{
	return device == VRT_LIVE_DEVICE_LATER ||
	       device <= VRT_LIVE_DEVICE_LATER_ON(0);
}

/* An entry's device, asking its runtime for one kept for later; when the
 * runtime cannot say, the allocating thread's device (the hint), else
 * unknown. */
static int entry_device(const struct slot *e)
{
	if (!later(e->device))
		return e->device;
	int hint = e->device == VRT_LIVE_DEVICE_LATER
	                   ? -1
	                   : VRT_LIVE_DEVICE_LATER_ON(0) - e->device;
	int v = vrt_api_vendor(e->api);
	int (*fn)(uint64_t) = v > 0 && v < 3 ? atomic_load(&device_of[v]) : NULL;
	int d = fn ? fn(e->addr) : -1;
	if (d >= 0 && d < INT16_MAX)
		return d;
	return hint >= 0 ? hint : VRT_DEVICE_UNKNOWN;
}

/* The same for an entry of the table (stripe locked), kept once known. */
static int slot_device(struct slot *e)
{
	if (later(e->device))
		e->device = (int16_t)entry_device(e);
	return e->device;
}

/* e: a table slot (its stripe locked) or a copy of an area's entry. */
static void stats_add(struct vrt_live_stats *out, struct slot *e)
{
	out->allocations++;
	if (e->space == SP_PINNED || e->space == SP_REGISTERED) {
		out->host_pinned_bytes += e->size;
		return;
	}
	if (!counts_vram(e->space))
		return;
	int dev = slot_device(e);
	if (dev < 0 || dev >= VRT_LIVE_MAX_DEVICES)
		return;
	struct vrt_live_device *d = &out->dev[dev];
	d->vendor = vrt_api_vendor(e->api);
	d->bytes += e->size;
	d->by_phase[phase_slot(e)] += e->size;
}

static void stats_area(void *area, void *arg)
{
	struct slot e;
	if (pending_snap(area, &e))
		stats_add(arg, &e);
}

void vrt_live_stats(struct vrt_live_stats *out)
{
	memset(out, 0, sizeof(*out));
	/* Summed here, not kept on the hot path: a phase is only known once
	 * the writer has classified the stack, often after the allocation.
	 * Threads' pending allocations first (see the top of the file). */
	vrt_tbuf_live_each(stats_area, out);
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (uint32_t k = 0; k < s->cap; k++) {
			struct slot *e = &s->slots[k];
			if (e->state == SLOT_USED)
				stats_add(out, e);
		}
		unlock(s);
	}
	/* Keep the devices that hold memory, in ordinal order. */
	int n = 0;
	for (int d = 0; d < VRT_LIVE_MAX_DEVICES; d++) {
		if (!out->dev[d].vendor)
			continue;
		struct vrt_live_device dev = out->dev[d];
		dev.device = d;
		out->dev[n++] = dev;
	}
	out->ndev = n;
	out->inflight = atomic_load(&inflight);
	out->ooms = atomic_load(&ooms);
}

struct held_arg {
	int vendor, device;
	uint64_t bytes;
};

static void held_add(struct held_arg *h, struct slot *e)
{
	if (counts_vram(e->space) && vrt_api_vendor(e->api) == h->vendor &&
	    slot_device(e) == h->device)
		h->bytes += e->size;
}

static void held_area(void *area, void *arg)
{
	struct slot e;
	if (pending_snap(area, &e))
		held_add(arg, &e);
}

uint64_t vrt_live_device_bytes(int vendor, int device)
{
	struct held_arg h = {vendor, device, 0};
	vrt_tbuf_live_each(held_area, &h);
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (uint32_t k = 0; k < s->cap; k++)
			if (s->slots[k].state == SLOT_USED)
				held_add(&h, &s->slots[k]);
		unlock(s);
	}
	return h.bytes;
}

static void each_slot(struct slot *e,
                      void (*fn)(const struct vrt_ev *ev, void *arg), void *arg)
{
	struct vrt_ev ev = {
	        .rec = VRT_REC_ALLOC,
	        .api = e->api,
	        .device = slot_device(e),
	        .addr = e->addr,
	        .size = e->size,
	        .stack = e->stack,
	        .phase = e->annotated
	                         ? vrt_phase_encode(e->phase, VRT_SRC_ANNOTATION)
	                         : 0};
	fn(&ev, arg);
}

struct each_arg {
	void (*fn)(const struct vrt_ev *ev, void *arg);
	void *arg;
};

static void each_area(void *area, void *arg)
{
	struct each_arg *a = arg;
	struct slot e;
	if (pending_snap(area, &e))
		each_slot(&e, a->fn, a->arg);
}

void vrt_live_each(void (*fn)(const struct vrt_ev *ev, void *arg), void *arg)
{
	/* Areas before stripes: an allocation moving from one to the other
	 * meanwhile is visited at least once (a reader keeps one). */
	struct each_arg a = {fn, arg};
	vrt_tbuf_live_each(each_area, &a);
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (uint32_t k = 0; k < s->cap; k++)
			if (s->slots[k].state == SLOT_USED)
				each_slot(&s->slots[k], fn, arg);
		unlock(s);
	}
}

static void clear_area(void *area, void *arg)
{
	(void)arg;
	atomic_store(&((struct pending *)area)->state, 0);
}

void vrt_live_after_fork_child(void)
{
	/* The child inherits the parent's allocations on paper only: the
	 * driver does not carry device memory across fork, and the child's
	 * trace starts empty. The fds of accepted connections do carry over,
	 * but they are the parent's requests. */
	vrt_live_reset();
}

void vrt_live_reset(void)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		atomic_store(&s->lock, 0);
		if (s->slots)
			memset(s->slots, 0, s->cap * sizeof(struct slot));
		s->used = 0;
	}
	vrt_tbuf_live_each(clear_area, NULL);
	atomic_store(&inflight, 0);
	atomic_store(&ooms, 0);
	for (int d = 0; d < VRT_LIVE_MAX_DEVICES; d++) {
		atomic_store(&peaks[d].now, 0);
		atomic_store(&peaks[d].peak, 0);
	}
}
