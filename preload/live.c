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
 */
#include "live.h"
#include "core.h"

#include <vramtrace/trace_format.h>

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
static _Atomic uint64_t ooms, inflight;
static unsigned (*phase_of_stack)(uint32_t stack);

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

static unsigned phase_slot(const struct slot *e)
{
	unsigned id = e->annotated ? e->phase
	              : (e->stack && phase_of_stack) ? phase_of_stack(e->stack)
	                                             : 0;
	return id < VRT_LIVE_PHASES ? id : 0;
}

void vrt_live_event(const struct vrt_ev *ev)
{
	switch (ev->rec) {
	case VRT_REC_NET:
		if (ev->op == VRT_NET_ACCEPT)
			atomic_fetch_add(&inflight, 1);
		else if (ev->op == VRT_NET_CLOSE && atomic_load(&inflight))
			atomic_fetch_sub(&inflight, 1);
		return;
	case VRT_REC_FAIL:
		if (ev->error == 2 /* out of memory, CUDA and HIP alike */ &&
		    vrt_api_op(ev->api) == VRT_OP_ALLOC)
			atomic_fetch_add(&ooms, 1);
		return;
	case VRT_REC_ALLOC:
	case VRT_REC_FREE:
		break;
	default:
		return;
	}
	int space = space_of(ev->api);
	uint64_t h = hash(space, ev->addr);
	/* High bits pick the stripe, low bits the slot: keys of one stripe must
	 * not all share their low bits. */
	struct stripe *s = &stripes[h >> 58];
	lock(s);
	struct slot *e = find(s, space, ev->addr, h);
	if (ev->rec == VRT_REC_FREE) {
		if (e)
			remove_slot(s, e);
		unlock(s);
		return;
	}
	if (e) /* the same address again without a free we saw: replace */
		remove_slot(s, e);
	if (reserve(s) == 0) {
		struct slot n = {.addr = ev->addr,
		                 .size = ev->size,
		                 .stack = ev->stack,
		                 .phase = (uint16_t)vrt_phase_id(ev->phase),
		                 .api = ev->api,
		                 .state = SLOT_USED,
		                 .device = (int16_t)ev->device,
		                 .space = (uint8_t)space,
		                 .annotated = vrt_phase_source(ev->phase) ==
		                              VRT_SRC_ANNOTATION};
		place(s->slots, s->cap, &n);
		s->used++;
	}
	/* A table that cannot grow (mmap failed) misses this entry: the
	 * totals stay short by its bytes, nothing worse. */
	unlock(s);
}

void vrt_live_stats(struct vrt_live_stats *out)
{
	memset(out, 0, sizeof(*out));
	/* Summed here, not kept on the hot path: a phase is only known once
	 * the writer has classified the stack, often after the allocation. */
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (uint32_t k = 0; k < s->cap; k++) {
			const struct slot *e = &s->slots[k];
			if (e->state != SLOT_USED)
				continue;
			out->allocations++;
			if (e->space == SP_PINNED || e->space == SP_REGISTERED) {
				out->host_pinned_bytes += e->size;
				continue;
			}
			if (!counts_vram(e->space) || e->device < 0 ||
			    e->device >= VRT_LIVE_MAX_DEVICES)
				continue;
			struct vrt_live_device *d = &out->dev[e->device];
			d->vendor = vrt_api_vendor(e->api);
			d->bytes += e->size;
			d->by_phase[phase_slot(e)] += e->size;
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

void vrt_live_each(void (*fn)(const struct vrt_ev *ev, void *arg), void *arg)
{
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		lock(s);
		for (uint32_t k = 0; k < s->cap; k++) {
			const struct slot *e = &s->slots[k];
			if (e->state != SLOT_USED)
				continue;
			struct vrt_ev ev = {
			        .rec = VRT_REC_ALLOC,
			        .api = e->api,
			        .device = e->device,
			        .addr = e->addr,
			        .size = e->size,
			        .stack = e->stack,
			        .phase = e->annotated
			                         ? vrt_phase_encode(
			                                   e->phase,
			                                   VRT_SRC_ANNOTATION)
			                         : 0};
			fn(&ev, arg);
		}
		unlock(s);
	}
}

void vrt_live_after_fork_child(void)
{
	/* The child inherits the parent's allocations on paper only: the
	 * driver does not carry device memory across fork, and the child's
	 * trace starts empty. The fds of accepted connections do carry over,
	 * but they are the parent's requests. */
	for (int i = 0; i < STRIPES; i++) {
		struct stripe *s = &stripes[i];
		atomic_store(&s->lock, 0);
		if (s->slots)
			memset(s->slots, 0, s->cap * sizeof(struct slot));
		s->used = 0;
	}
	atomic_store(&inflight, 0);
	atomic_store(&ooms, 0);
}
