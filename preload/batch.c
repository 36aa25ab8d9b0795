/*
 * batch.c — the writer's re-encoding of a chunk's ALLOC and FREE records
 * into BATCH records (trace format 4), before they are compressed.
 *
 * The hot path (tbuf.c) writes each event as one small record, which is
 * what a hook can afford. At tens of thousands of events a second with
 * sizes, call paths and lifetimes all mixed, what those records spend
 * their bytes on is addresses and nanosecond times (docs/performance.md
 * measures it). Here, on the writer thread and off every hook, a chunk's
 * runs of ALLOC, FREE, ALLOC_C and FREE_C records become BATCH records,
 * column by column, against a per-thread state both sides keep
 * (trace_format.h): a free names its allocation by how many allocations
 * ago the thread made it, an allocation that gets back an address freed
 * at its size names its place in that size's list, call sites and sizes
 * are table indexes, and times are microseconds (exact nanoseconds for an
 * event whose address the state does not know, see below). Everything
 * else in the chunk (REPEAT, MARK, ...) stays as it was written, its dts
 * too: a BATCH ends at its last event's exact time.
 *
 * The state lasts across a thread's chunks, so the writer must see them,
 * and write them, in the order the thread made them: vrt_tbuf_collect
 * hands them over that way. States are kept for MAX_STATES thread ids;
 * the least recently used one goes first, and the thread's next BATCH
 * starts over (VRT_BATCH_RESET). An event that does not fit (a value that
 * does not pack) is written as a full ALLOC or FREE record; a chunk that
 * does not parse (which our own hot path never writes) goes out as it
 * came, and its thread's state starts over.
 *
 * Threads: the writer thread only (vrt_batch_chunk, vrt_batch_reset),
 * plus vrt_batch_set before recording starts. No locks. Everything here
 * may allocate: the writer is not a hook.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <stdlib.h>
#include <string.h>

#define MAX_STATES   256 /* thread states kept */
#define BATCH_EVENTS 8192
#define EV_MAX_BYTES 96 /* column bytes one event may add */
#define BATCH_BYTES  (VRT_REC_MAX_PAYLOAD - 1024) /* columns of one BATCH */

/* A call site: what an event's record says besides address, size, time.
 * api and kind share one word (SITE_AK), written and compared whole: two
 * byte stores read back as one wider load would stall the CPU. */
struct site {
	uint64_t aux, phase, stack;
	int64_t device;
	uint64_t size; /* alloc site: its last size */
	int32_t zslot; /* and that size's slot, -1 none */
	uint32_t ak;   /* SITE_AK(api, kind) */
	uint8_t has_size;
};

#define SITE_AK(api, kind) ((uint32_t)(api) | (uint32_t)(kind) << 16)
#define SITE_API(ak)       ((ak) & 0xffff)
#define SITE_FREE(ak)      ((ak) >> 16) /* 1 for a free site */

/* A size and its list of freed addresses: a circle of VRT_BATCH_LIFO
 * entries, the top at lifo[(h - 1) % LIFO], so that a push onto a full
 * list drops the bottom entry by writing over it, no move. */
struct size_slot {
	uint64_t size;
	uint32_t n, h;
	uint64_t lifo[VRT_BATCH_LIFO];
};

#define LIFO_AT(z, k) ((z)->lifo[((z)->h - 1 - (k)) % VRT_BATCH_LIFO])

static void lifo_push(struct size_slot *z, uint64_t addr)
{
	z->lifo[z->h % VRT_BATCH_LIFO] = addr;
	z->h = (z->h + 1) % VRT_BATCH_LIFO;
	if (z->n < VRT_BATCH_LIFO)
		z->n++;
}

/* Takes the entry k from the top out (the ones above move down). */
static void lifo_take(struct size_slot *z, uint32_t k)
{
	for (uint32_t j = k; j-- > 0;)
		z->lifo[(z->h - 2 - j) % VRT_BATCH_LIFO] =
		        z->lifo[(z->h - 1 - j) % VRT_BATCH_LIFO];
	z->h = (z->h + VRT_BATCH_LIFO - 1) % VRT_BATCH_LIFO;
	z->n--;
}

struct hent {
	uint64_t key;
	uint32_t val; /* slot + 1; 0 empty */
};

/* An allocation of the ring: its address, number and size slot. */
struct aent {
	uint64_t addr, idx; /* idx: allocation number + 1; 0 empty */
	int32_t zslot;
};

struct bstate {
	pid_t tid;
	int fresh;     /* the next BATCH says VRT_BATCH_RESET */
	uint64_t used; /* last use, for eviction */
	struct site *sites;
	uint32_t sites_cap, nsites; /* nsites: slots defined (<= SITES) */
	uint64_t site_next;         /* sites ever defined */
	struct hent *shash;
	uint32_t shcap, shn;
	struct size_slot *sizes;
	uint32_t sizes_cap, nsizes;
	struct hent *zhash;
	uint32_t zhcap;
	struct aent *atab;
	uint32_t acap, abits, an; /* acap = 1 << abits */
	uint64_t *ring_addr; /* address of allocation number k at k % RING */
	uint64_t nalloc, last_alloc, last_free;
};

/* A growing byte buffer. */
struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static struct bstate *states[MAX_STATES];
static uint64_t use_clock;
static int batch_on = 1;
static struct bytes col[VRT_BATCH_COLS], out;
static int oom; /* a buffer could not grow: this chunk goes out as it came */

enum { C_KIND, C_TIME, C_ASITE, C_FSITE, C_SIZE, C_AADDR, C_FADDR, C_ADDR,
       C_DEF };

void vrt_batch_set(int on)
{
	batch_on = on != 0;
}

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static void *grow_array(void *p, uint32_t *cap, uint32_t need, size_t sz)
{
	if (need <= *cap)
		return p;
	uint32_t ncap = *cap ? *cap : 16;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(p, (size_t)ncap * sz);
	if (!np) {
		oom = 1;
		return NULL;
	}
	*cap = ncap;
	return np;
}

static inline uint8_t *room(struct bytes *b, size_t n)
{
	if (b->cap - b->n < n) {
		size_t ncap = b->cap ? b->cap : 4096;
		while (ncap - b->n < n)
			ncap *= 2;
		uint8_t *np = realloc(b->p, ncap);
		if (!np) {
			oom = 1;
			return NULL;
		}
		b->p = np;
		b->cap = ncap;
	}
	return b->p + b->n;
}

static inline void put_u(struct bytes *b, uint64_t v)
{
	uint8_t *p = room(b, VRT_UVARINT_MAX);
	if (p)
		b->n += vrt_put_uvarint(p, v);
}

static void put_raw(struct bytes *b, const void *src, size_t n)
{
	if (!n)
		return; /* an empty column may have no buffer yet */
	uint8_t *p = room(b, n);
	if (p) {
		memcpy(p, src, n);
		b->n += n;
	}
}

/* ---- thread states ----------------------------------------------------- */

static void state_free(struct bstate *s)
{
	if (!s)
		return;
	free(s->sites);
	free(s->shash);
	free(s->sizes);
	free(s->zhash);
	free(s->atab);
	free(s->ring_addr);
	free(s);
}

void vrt_batch_reset(void)
{
	for (int i = 0; i < MAX_STATES; i++) {
		state_free(states[i]);
		states[i] = NULL;
	}
}

/* The state of tid, made (or made again, evicting the least recently
 * used) when missing; NULL when out of memory. */
static struct bstate *state_of(pid_t tid)
{
	int victim = -1;
	for (int i = 0; i < MAX_STATES; i++) {
		if (states[i] && states[i]->tid == tid) {
			states[i]->used = ++use_clock;
			return states[i];
		}
		if (victim < 0 || (states[victim] &&
		                   (!states[i] ||
		                    states[i]->used < states[victim]->used)))
			victim = i;
	}
	struct bstate *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->tid = tid;
	s->fresh = 1;
	s->used = ++use_clock;
	state_free(states[victim]);
	states[victim] = s;
	return s;
}

static void state_drop(struct bstate *s)
{
	for (int i = 0; i < MAX_STATES; i++)
		if (states[i] == s) {
			state_free(s);
			states[i] = NULL;
		}
}

static uint64_t site_hash(const struct site *x)
{
	uint64_t h = x->aux * 0x9e3779b97f4a7c15ull ^
	             x->stack * 0xc2b2ae3d27d4eb4full ^
	             x->phase * 0x165667b19e3779f9ull ^
	             ((uint64_t)x->device << 24 | x->ak) *
	                     0xd6e8feb86659fd93ull;
	return (h ^ h >> 31) | 1;
}

static int site_eq(const struct site *a, const struct site *b)
{
	return a->ak == b->ak &&
	       a->device == b->device && a->aux == b->aux &&
	       a->phase == b->phase && a->stack == b->stack;
}

/* Puts slot under hash h in the site index (growing it first when more
 * than half full, from the sites defined now). */
static int shash_put(struct bstate *s, uint64_t h, uint32_t slot)
{
	if ((s->shn + 1) * 2 > s->shcap) {
		uint32_t ncap = 64;
		while (ncap < 4 * (s->nsites + 1))
			ncap *= 2;
		struct hent *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			oom = 1;
			return -1;
		}
		free(s->shash);
		s->shash = nt;
		s->shcap = ncap;
		s->shn = 0;
		for (uint32_t i = 0; i < s->nsites; i++) {
			if (i == slot)
				continue; /* about to change */
			uint64_t hi = site_hash(&s->sites[i]);
			uint32_t j = (uint32_t)hi & (ncap - 1);
			while (nt[j].val)
				j = (j + 1) & (ncap - 1);
			nt[j].key = hi;
			nt[j].val = i + 1;
			s->shn++;
		}
	}
	uint32_t j = (uint32_t)h & (s->shcap - 1);
	while (s->shash[j].val)
		j = (j + 1) & (s->shcap - 1);
	s->shash[j].key = h;
	s->shash[j].val = slot + 1;
	s->shn++;
	return 0;
}

/* The slot of site x, or -1. Entries of slots defined again since point
 * at a different site and are passed over. */
static int32_t site_find(const struct bstate *s, const struct site *x,
                         uint64_t h)
{
	if (!s->shcap)
		return -1;
	for (uint32_t j = (uint32_t)h & (s->shcap - 1); s->shash[j].val;
	     j = (j + 1) & (s->shcap - 1)) {
		uint32_t slot = s->shash[j].val - 1;
		if (s->shash[j].key == h && site_eq(&s->sites[slot], x))
			return (int32_t)slot;
	}
	return -1;
}

/* Defines x in the next slot (the column value 0 and def fields are the
 * caller's). Returns the slot, or -1 out of memory. */
static int32_t site_define(struct bstate *s, const struct site *x, uint64_t h)
{
	uint32_t slot = (uint32_t)(s->site_next % VRT_BATCH_SITES);
	if (slot >= s->nsites) {
		struct site *ns = grow_array(s->sites, &s->sites_cap, slot + 1,
		                             sizeof(*ns));
		if (!ns)
			return -1;
		s->sites = ns;
		s->nsites = slot + 1;
	}
	s->sites[slot] = *x;
	s->sites[slot].has_size = 0;
	s->sites[slot].zslot = -1;
	s->site_next++;
	if (shash_put(s, h, slot))
		return -1;
	return (int32_t)slot;
}

static int32_t size_find(const struct bstate *s, uint64_t size)
{
	if (!s->zhcap)
		return -1;
	for (uint32_t j = (uint32_t)mix64(size) & (s->zhcap - 1);
	     s->zhash[j].val; j = (j + 1) & (s->zhcap - 1))
		if (s->zhash[j].key == size)
			return (int32_t)s->zhash[j].val - 1;
	return -1;
}

/* A slot for a new size, or -1 when the table is full (or no memory). */
static int32_t size_define(struct bstate *s, uint64_t size)
{
	if (s->nsizes >= VRT_BATCH_SIZES)
		return -1;
	if ((s->nsizes + 1) * 2 > s->zhcap) {
		uint32_t ncap = s->zhcap ? s->zhcap * 2 : 64;
		struct hent *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			oom = 1;
			return -1;
		}
		for (uint32_t i = 0; i < s->nsizes; i++) {
			uint32_t j = (uint32_t)mix64(s->sizes[i].size) &
			             (ncap - 1);
			while (nt[j].val)
				j = (j + 1) & (ncap - 1);
			nt[j].key = s->sizes[i].size;
			nt[j].val = i + 1;
		}
		free(s->zhash);
		s->zhash = nt;
		s->zhcap = ncap;
	}
	struct size_slot *nz = grow_array(s->sizes, &s->sizes_cap,
	                                  s->nsizes + 1, sizeof(*nz));
	if (!nz)
		return -1;
	s->sizes = nz;
	uint32_t slot = s->nsizes++;
	s->sizes[slot].size = size;
	s->sizes[slot].n = s->sizes[slot].h = 0;
	uint32_t j = (uint32_t)mix64(size) & (s->zhcap - 1);
	while (s->zhash[j].val)
		j = (j + 1) & (s->zhcap - 1);
	s->zhash[j].key = size;
	s->zhash[j].val = slot + 1;
	return (int32_t)slot;
}

/* The index of the ring's allocations not yet freed, by address: linear
 * probing, at most half full, deletion by moving the rest of a probe
 * chain back; an allocation leaves it when freed or when it drops out of
 * the ring (ring_addr says which one that is). */
/* An address's home slot: the top bits of a multiplicative hash (device
 * addresses are multiples of 512: their low bits say nothing). */
static inline uint32_t ahome(const struct bstate *s, uint64_t addr)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> (64 - s->abits));
}

static inline uint32_t aslot(const struct bstate *s, uint64_t addr)
{
	uint32_t j = ahome(s, addr);
	while (s->atab[j].idx && s->atab[j].addr != addr)
		j = (j + 1) & (s->acap - 1);
	return j;
}

static void adel(struct bstate *s, uint32_t i)
{
	uint32_t mask = s->acap - 1;
	for (uint32_t j = (i + 1) & mask; s->atab[j].idx; j = (j + 1) & mask) {
		uint32_t h = ahome(s, s->atab[j].addr);
		if (((j - h) & mask) >= ((j - i) & mask)) {
			s->atab[i] = s->atab[j];
			i = j;
		}
	}
	s->atab[i].idx = 0;
	s->an--;
}

static int agrow(struct bstate *s)
{
	uint32_t ncap = s->acap ? s->acap * 2 : 64;
	struct aent *old = s->atab;
	uint32_t ocap = s->acap;
	s->atab = calloc(ncap, sizeof(*s->atab));
	if (!s->atab) {
		s->atab = old;
		oom = 1;
		return -1;
	}
	s->acap = ncap;
	s->abits = (uint32_t)__builtin_ctz(ncap);
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].idx)
			s->atab[aslot(s, old[i].addr)] = old[i];
	free(old);
	return 0;
}

/* Remembers the allocation about to get number s->nalloc. */
static void ring_put(struct bstate *s, uint64_t addr, int32_t zslot)
{
	uint32_t k = (uint32_t)(s->nalloc % VRT_BATCH_RING);
	if (!s->ring_addr &&
	    !(s->ring_addr = malloc(VRT_BATCH_RING * sizeof(uint64_t)))) {
		oom = 1;
		return;
	}
	if (s->nalloc >= VRT_BATCH_RING && s->an) {
		/* The allocation that leaves the ring now. */
		uint32_t j = aslot(s, s->ring_addr[k]);
		if (s->atab[j].idx == s->nalloc - VRT_BATCH_RING + 1)
			adel(s, j);
	}
	s->ring_addr[k] = addr;
	if ((s->an + 1) * 2 > s->acap && agrow(s))
		return;
	uint32_t j = aslot(s, addr);
	if (!s->atab[j].idx)
		s->an++;
	s->atab[j].addr = addr;
	s->atab[j].idx = s->nalloc + 1;
	s->atab[j].zslot = zslot;
}

/* The slot of the live ring allocation at addr, or UINT32_MAX. */
static uint32_t ring_find(const struct bstate *s, uint64_t addr)
{
	if (!s->an)
		return UINT32_MAX;
	uint32_t j = aslot(s, addr);
	return s->atab[j].idx ? j : UINT32_MAX;
}

/* ---- one chunk ----------------------------------------------------------- */

/* An ALLOC or FREE as decoded from the hot path's records. */
struct hot {
	uint64_t ts, addr, size;
	struct site site;
};

/* The batch being built, and the chunk's clock. */
struct batch {
	struct bstate *st;
	uint32_t n;
	uint64_t t0;   /* exact time before the batch */
	uint64_t prev; /* the previous event's time as written */
	uint64_t last; /* the previous event's exact time */
};

static size_t col_bytes(void)
{
	size_t n = 0;
	for (int i = 0; i < VRT_BATCH_COLS; i++)
		n += col[i].n;
	return n;
}

/* Writes the pending BATCH record to out. */
static void batch_flush(struct batch *b)
{
	if (!b->n)
		return;
	uint8_t hdr[(3 + VRT_BATCH_COLS - 1) * VRT_UVARINT_MAX], rec[1 + VRT_UVARINT_MAX];
	size_t h = 0;
	h += vrt_put_uvarint(hdr + h, b->last - b->t0);
	h += vrt_put_uvarint(hdr + h, b->n);
	h += vrt_put_uvarint(hdr + h, b->st->fresh ? VRT_BATCH_RESET : 0);
	for (int i = 0; i < VRT_BATCH_COLS - 1; i++)
		h += vrt_put_uvarint(hdr + h, col[i].n);
	rec[0] = VRT_REC_BATCH;
	size_t r = 1 + vrt_put_uvarint(rec + 1, h + col_bytes());
	put_raw(&out, rec, r);
	put_raw(&out, hdr, h);
	for (int i = 0; i < VRT_BATCH_COLS; i++) {
		put_raw(&out, col[i].p, col[i].n);
		col[i].n = 0;
	}
	b->st->fresh = 0;
	b->n = 0;
	b->t0 = b->prev = b->last;
}

/* The event as a full ALLOC or FREE record (dts from the exact clock). */
static void write_full(struct batch *b, const struct hot *e)
{
	uint8_t p[1 + VRT_UVARINT_MAX + 8 * VRT_UVARINT_MAX];
	size_t n = 2;
	int alloc = !SITE_FREE(e->site.ak);
	n += vrt_put_uvarint(p + n, e->ts - b->last);
	n += vrt_put_uvarint(p + n, SITE_API(e->site.ak));
	n += vrt_put_svarint(p + n, e->site.device);
	n += vrt_put_uvarint(p + n, e->addr);
	if (alloc)
		n += vrt_put_uvarint(p + n, e->size);
	n += vrt_put_uvarint(p + n, e->site.aux);
	n += vrt_put_uvarint(p + n, e->site.stack);
	n += vrt_put_uvarint(p + n, e->site.phase);
	p[0] = alloc ? VRT_REC_ALLOC : VRT_REC_FREE;
	p[1] = (uint8_t)(n - 2); /* at most 8 varints: < 0x80 */
	put_raw(&out, p, n);
	b->t0 = b->prev = b->last = e->ts;
}

/* Writes the site column value for x (found in slot sl, or -1: defined
 * now, its fields into def); returns its slot, or -1 out of memory. */
static int32_t put_site(struct bstate *s, int c, const struct site *x,
                        int32_t sl, uint64_t h)
{
	if (sl >= 0) {
		put_u(&col[c], (uint64_t)sl + 1);
		return sl;
	}
	sl = site_define(s, x, h);
	if (sl < 0)
		return -1;
	put_u(&col[c], 0);
	put_u(&col[C_DEF], SITE_API(x->ak));
	uint8_t *p = room(&col[C_DEF], VRT_UVARINT_MAX);
	if (p)
		col[C_DEF].n += vrt_put_svarint(p, x->device);
	put_u(&col[C_DEF], x->aux);
	put_u(&col[C_DEF], x->phase);
	put_u(&col[C_DEF], x->stack);
	return sl;
}

/* Adds one event to the batch (or writes it in full when it does not
 * fit one). The state changes exactly as a reader's will. */
static void batch_add(struct batch *b, const struct hot *e)
{
	struct bstate *s = b->st;
	int alloc = !SITE_FREE(e->site.ak), same_size = 0;
	uint64_t code = 0, packed = 0, size_code = 0;
	uint64_t h = site_hash(&e->site);
	int32_t sl = site_find(s, &e->site, h), zslot = -1;
	uint32_t ae = UINT32_MAX;

	/* The codes first: an event that cannot be written must leave the
	 * state alone. */
	if (alloc) {
		same_size = sl >= 0 && s->sites[sl].has_size &&
		            s->sites[sl].size == e->size;
		zslot = same_size ? s->sites[sl].zslot : size_find(s, e->size);
		if (zslot >= 0) {
			const struct size_slot *z = &s->sizes[zslot];
			for (uint32_t k = 0; k < z->n; k++)
				if (LIFO_AT(z, k) == e->addr) {
					code = k + 1; /* 1 = the top */
					break;
				}
		}
		if (!code && !vrt_pack_s((int64_t)(e->addr - s->last_alloc),
		                         &packed))
			goto full;
		if (!same_size && zslot < 0 && !vrt_pack_u(e->size, &size_code))
			goto full;
	} else {
		ae = ring_find(s, e->addr);
		if (ae != UINT32_MAX)
			code = s->nalloc - (s->atab[ae].idx - 1);
		else if (!vrt_pack_s((int64_t)(e->addr - s->last_free), &packed))
			goto full;
	}
	if (b->n == BATCH_EVENTS || col_bytes() + EV_MAX_BYTES > BATCH_BYTES)
		batch_flush(b);

	/* kind */
	if (b->n % 8 == 0) {
		uint8_t *p = room(&col[C_KIND], 1);
		if (!p)
			return;
		*p = 0;
		col[C_KIND].n++;
	}
	if (!alloc)
		col[C_KIND].p[col[C_KIND].n - 1] |= (uint8_t)(1u << (b->n % 8));
	/* time: microseconds, at most 1 us early, for an event whose address
	 * the state knows; exact for the others */
	if (code) {
		uint64_t us = (e->ts - b->prev) / 1000;
		put_u(&col[C_TIME], us << 1);
		b->prev += us * 1000;
	} else {
		put_u(&col[C_TIME], (e->ts - b->prev) << 1 | 1);
		b->prev = e->ts;
	}
	b->last = e->ts;
	b->n++;

	if (!alloc) {
		put_site(s, C_FSITE, &e->site, sl, h);
		put_u(&col[C_FADDR], code);
		if (!code) {
			put_u(&col[C_ADDR], packed);
			s->last_free = e->addr;
			return;
		}
		int32_t zs = s->atab[ae].zslot;
		adel(s, ae); /* freed: out of the index */
		if (zs >= 0)
			lifo_push(&s->sizes[zs], e->addr);
		return;
	}
	sl = put_site(s, C_ASITE, &e->site, sl, h);
	if (sl < 0)
		return; /* out of memory: oom is set */
	if (same_size) {
		put_u(&col[C_SIZE], 0);
	} else if (zslot >= 0) {
		put_u(&col[C_SIZE], (uint64_t)zslot + 2);
	} else {
		put_u(&col[C_SIZE], 1);
		put_u(&col[C_SIZE], size_code);
		zslot = size_define(s, e->size);
	}
	struct site *site = &s->sites[sl];
	site->size = e->size;
	site->zslot = zslot;
	site->has_size = 1;
	put_u(&col[C_AADDR], code);
	if (code)
		lifo_take(&s->sizes[zslot], (uint32_t)code - 1);
	else
		put_u(&col[C_ADDR], packed);
	s->last_alloc = e->addr;
	ring_put(s, e->addr, zslot);
	s->nalloc++;
	return;
full:
	batch_flush(b);
	write_full(b, e);
}

/* The compact state of a chunk (trace_format.h) as the hot path left it:
 * the alloc and free templates and the address register. */
struct ctmpl {
	uint64_t api, aux, phase, stack;
	int64_t device;
	int have;
};

static int rd_u(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	return vrt_get_uvarint(p, end, v);
}

/* Decodes one hot record (type, payload [p, end)) into e; 0 or -1. */
static int decode_hot(unsigned type, const uint8_t *p, const uint8_t *end,
                      uint64_t clock, uint64_t *addr_reg, struct ctmpl *ta,
                      struct ctmpl *tf, struct hot *e)
{
	uint64_t dts, v;
	int64_t dev;
	if (rd_u(&p, end, &dts))
		return -1;
	e->ts = clock + dts;
	switch (type) {
	case VRT_REC_ALLOC:
	case VRT_REC_FREE: {
		struct ctmpl *t = type == VRT_REC_ALLOC ? ta : tf;
		uint64_t api;
		if (rd_u(&p, end, &api) || vrt_get_svarint(&p, end, &dev) ||
		    rd_u(&p, end, &e->addr))
			return -1;
		e->size = 0;
		if (type == VRT_REC_ALLOC && rd_u(&p, end, &e->size))
			return -1;
		if (rd_u(&p, end, &t->aux) || rd_u(&p, end, &t->stack) ||
		    rd_u(&p, end, &t->phase))
			return -1;
		t->api = api;
		t->device = dev;
		t->have = 1;
		*addr_reg = e->addr;
		e->site.ak = SITE_AK(t->api, type == VRT_REC_FREE);
		e->site.device = t->device;
		e->site.aux = t->aux;
		e->site.phase = t->phase;
		e->site.stack = t->stack;
		return api > 0xff ? -1 : 0;
	}
	case VRT_REC_ALLOC_C:
	case VRT_REC_FREE_C: {
		int alloc = type == VRT_REC_ALLOC_C;
		struct ctmpl *t = alloc ? ta : tf;
		if (!t->have || rd_u(&p, end, &v))
			return -1;
		*addr_reg += (uint64_t)vrt_unpack_s(v);
		e->addr = *addr_reg;
		e->size = 0;
		e->site.stack = t->stack;
		if (alloc) {
			if (rd_u(&p, end, &v) || rd_u(&p, end, &e->site.stack))
				return -1;
			e->size = vrt_unpack_u(v);
		}
		e->site.ak = SITE_AK(t->api, !alloc);
		e->site.device = t->device;
		e->site.aux = t->aux;
		e->site.phase = t->phase;
		return 0;
	}
	}
	return -1;
}

static int is_hot(unsigned type)
{
	return type == VRT_REC_ALLOC || type == VRT_REC_FREE ||
	       type == VRT_REC_ALLOC_C || type == VRT_REC_FREE_C;
}

void vrt_batch_chunk(const uint8_t *in, size_t len, const uint8_t **res,
                     size_t *res_len)
{
	const uint8_t *p = in, *end = in + len;
	uint64_t tid, clock, addr_reg = 0;
	struct ctmpl ta = {0}, tf = {0};
	struct batch b = {0};
	unsigned type;

	*res = in;
	*res_len = len;
	if (!batch_on || len < 2 || in[0] != VRT_REC_CHUNK)
		return;
	/* The CHUNK record. */
	{
		const uint8_t *q = in + 1, *pe;
		uint64_t plen;
		if (rd_u(&q, end, &plen) || plen > (uint64_t)(end - q))
			return;
		pe = q + plen;
		if (rd_u(&q, pe, &tid) || rd_u(&q, pe, &clock))
			return;
		p = pe;
	}
	/* A chunk without a hot record goes out as it is. */
	{
		const uint8_t *q = p;
		int any = 0;
		while (q < end && !any) {
			uint64_t plen;
			type = *q++;
			if (rd_u(&q, end, &plen) || plen > (uint64_t)(end - q))
				return;
			any = is_hot(type);
			q += plen;
		}
		if (!any)
			return;
	}
	b.st = state_of((pid_t)tid);
	if (!b.st)
		return;
	oom = 0;
	out.n = 0;
	for (int i = 0; i < VRT_BATCH_COLS; i++)
		col[i].n = 0;
	put_raw(&out, in, (size_t)(p - in));
	b.t0 = b.prev = b.last = clock;
	while (p < end) {
		const uint8_t *rec = p, *pe;
		uint64_t plen, dts;
		type = *p++;
		if (rd_u(&p, end, &plen) || plen > (uint64_t)(end - p))
			goto bad;
		pe = p + plen;
		if (is_hot(type)) {
			struct hot e;
			if (decode_hot(type, p, pe, clock, &addr_reg, &ta, &tf,
			               &e))
				goto bad;
			clock = e.ts;
			batch_add(&b, &e);
		} else {
			const uint8_t *q = p;
			if (type == VRT_REC_CHUNK || rd_u(&q, pe, &dts))
				goto bad;
			batch_flush(&b);
			clock += dts;
			b.t0 = b.prev = b.last = clock;
			if (type != VRT_REC_REPEAT) {
				memset(&ta, 0, sizeof(ta));
				memset(&tf, 0, sizeof(tf));
				addr_reg = 0;
			}
			put_raw(&out, rec, (size_t)(pe - rec));
		}
		p = pe;
	}
	batch_flush(&b);
	if (oom)
		goto bad;
	*res = out.p;
	*res_len = out.n;
	return;
bad:
	/* The state took events that will not be in the file. */
	state_drop(b.st);
}
