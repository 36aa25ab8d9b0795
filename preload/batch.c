/*
 * batch.c — the writer's re-encoding of a chunk's ALLOC and FREE records
 * into BATCH records (trace format 5), before they are compressed.
 *
 * The hot path (tbuf.c) writes each event as one small record, which is
 * what a hook can afford. At tens of thousands of events a second with
 * sizes, call paths and lifetimes all mixed, what those records spend
 * their bytes on is addresses, nanosecond times and sizes
 * (docs/performance.md measures it). Here, on the writer thread and off
 * every hook, a chunk's runs of ALLOC, FREE, ALLOC_C, FREE_C and short
 * REPEAT records become BATCH records, column by column, against a
 * per-thread state both sides keep (trace_format.h): a free names its
 * allocation by how many allocations ago the thread made it; an
 * allocation that gets back an address freed in its size's class (its
 * size rounded up to the 512 bytes a device allocation takes) names its
 * place in that class's list; call sites are table indexes; a size is a
 * place in its site's recent sizes, else a slot of the thread's size
 * table, else written once; a folded pair of a short REPEAT is an event
 * with no address. Everything else in the chunk (MARK, NET, long
 * REPEATs, ...) stays as it was written, its dts too: a BATCH ends at
 * its last event's exact time.
 *
 * Times: an event's time is rounded down to the unit (VRAMTRACE_TIME_US,
 * a power of two of ns, written in each record), never before the
 * thread's previous event, unless rounding could put it before an event
 * of another thread that it followed; then it is exact. What the writer
 * knows of other threads is the pass (vrt_batch_pass, before the pass's
 * chunks): every event stamped before the pass's sweep is in it or in an
 * earlier pass (tbuf.c's ordering promise). So an event is exact when
 * its rounded time would fall before the previous pass's watermark, or
 * before another thread's event of the pass that is not an allocation or
 * free (a failure, a request, a mark, a sample...: the barriers), or when
 * another thread of the pass has an event on the same address (the
 * shared addresses, looked for only when two threads or more allocated
 * in the pass).
 *
 * Output: each thread's chunks of a frame become one chunk (one CHUNK
 * record, one BATCH between its other records), kept here until the
 * writer closes the frame (vrt_batch_emit): zstd then sees a server's
 * steps repeat inside one BATCH's columns. A frame spans a flush interval
 * (writer.c), so that is at most a few MiB.
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
 * Threads: the writer thread only (vrt_batch_pass, vrt_batch_chunk,
 * vrt_batch_pending, vrt_batch_emit, vrt_batch_reset), plus
 * vrt_batch_set and vrt_batch_set_time_us before recording starts. No
 * locks. Everything here may allocate: the writer is not a hook.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <stdlib.h>
#include <string.h>

#define MAX_STATES    256 /* thread states kept */
#define BATCH_EVENTS  (1u << 20)
#define EV_MAX_BYTES  96 /* column bytes one event may add */
#define BATCH_BYTES   (VRT_BATCH5_MAX_PAYLOAD - 1024) /* columns of one BATCH */
#define REPEAT_ABSORB 16 /* a REPEAT of at most this many pairs: events */

/* A call site: what an event's record says besides address, size, time.
 * api and kind share one word (SITE_AK), written and compared whole: two
 * byte stores read back as one wider load would stall the CPU. An alloc
 * site keeps its recent sizes (size slots, most recent first). */
struct site {
	uint64_t aux, phase, stack;
	int64_t device;
	uint32_t ak; /* SITE_AK(api, kind) */
	uint8_t nmtf;
	uint16_t mtf[VRT_BATCH_MTF];
};

#define SITE_AK(api, kind) ((uint32_t)(api) | (uint32_t)(kind) << 16)
#define SITE_API(ak)       ((ak) & 0xffff)
#define SITE_FREE(ak)      ((ak) >> 16) /* 1 for a free site */

/* A size slot: its size and the class slot it was last found in. */
struct size_slot {
	uint64_t size;
	int32_t cls; /* -1 none yet */
};

/* A class (granules of VRT_BATCH_GRAIN) and its list of freed addresses:
 * a circle of VRT_BATCH_LIFO entries, the top at lifo[(h - 1) % LIFO], so
 * that a push onto a full list drops the bottom entry by writing over
 * it, no move. */
struct class_slot {
	uint64_t gran; /* 0: empty slot */
	uint32_t n, h;
	uint32_t gen; /* definitions of the slot before this one */
	uint64_t lifo[VRT_BATCH_LIFO];
};

#define LIFO_AT(z, k) ((z)->lifo[((z)->h - 1 - (k)) % VRT_BATCH_LIFO])

static void lifo_push(struct class_slot *z, uint64_t addr)
{
	z->lifo[z->h % VRT_BATCH_LIFO] = addr;
	z->h = (z->h + 1) % VRT_BATCH_LIFO;
	if (z->n < VRT_BATCH_LIFO)
		z->n++;
}

/* Takes the entry k from the top out (the ones above move down). */
static void lifo_take(struct class_slot *z, uint32_t k)
{
	for (uint32_t j = k; j-- > 0;)
		z->lifo[(z->h - 2 - j) % VRT_BATCH_LIFO] =
		        z->lifo[(z->h - 1 - j) % VRT_BATCH_LIFO];
	z->h = (z->h + VRT_BATCH_LIFO - 1) % VRT_BATCH_LIFO;
	z->n--;
}

static uint64_t gran_of(uint64_t size)
{
	return size / VRT_BATCH_GRAIN + (size % VRT_BATCH_GRAIN != 0);
}

/* A map from keys to slots: linear probing, at most half full, removal
 * by moving the rest of a probe chain back. */
struct hent {
	uint64_t key;
	uint32_t val; /* slot + 1; 0 empty */
};

struct umap {
	struct hent *t;
	uint32_t cap, n;
};

/* An allocation of the ring: its address, number, class slot and that
 * slot's definition then. */
struct aent {
	uint64_t addr, idx; /* idx: allocation number + 1; 0 empty */
	int32_t cls;
	uint32_t gen;
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
	uint32_t sizes_cap, nsizes; /* nsizes: slots defined */
	uint64_t size_next;         /* sizes ever defined */
	struct umap zmap;           /* size -> size slot */
	struct class_slot *classes;
	uint32_t classes_cap, nclasses;
	uint64_t class_next;
	struct umap cmap; /* granules -> class slot */
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

enum { C_KIND, C_TIME, C_ASITE, C_FSITE, C_SIZE, C_SIZELO, C_SIZENEW,
       C_AADDR, C_FADDR, C_ADDR, C_DEF };

static struct bstate *states[MAX_STATES];
static uint64_t use_clock;
static int batch_on = 1;
static unsigned unit_shift = 20;
static int oom; /* a buffer could not grow: this chunk goes out as it came */
static struct batch **outs; /* every thread's output in this frame (used),
                             * and spare ones */
static uint32_t nouts, capouts;
static size_t pending; /* bytes in the outputs, open BATCHes apart */

/* ---- the pass: barriers and shared addresses ------------------------------ */

/* A shared-address entry of the pass: the thread that used the address,
 * or -1 when two threads or more did. */
struct xent {
	uint64_t addr;
	uint32_t pass; /* the entry belongs to this pass (else empty) */
	pid_t tid;
};

static uint64_t *barrier;    /* other records' times, sorted */
static uint32_t nbarrier, barrier_cap;
static uint64_t pass_floor;  /* the previous pass's watermark */
static uint32_t pass_no;
static struct xent *xmap;    /* addresses, when two threads allocated */
static uint32_t xcap, xn, xbits;
static int xmap_on;
#define XMAP_MAX_SLOTS (1u << 17) /* 2 MiB of map at most */

void vrt_batch_set(int on)
{
	batch_on = on != 0;
}

void vrt_batch_set_time_us(long us)
{
	uint64_t ns = us > 0 ? (uint64_t)us * 1000 : 1;
	unsigned s = 0;
	while (s < VRT_BATCH_UNIT_MAX && ((uint64_t)1 << (s + 1)) <= ns)
		s++;
	/* The nearer of 2^s and 2^(s+1). */
	if (s < VRT_BATCH_UNIT_MAX &&
	    ns - ((uint64_t)1 << s) > ((uint64_t)2 << s) - ns)
		s++;
	unit_shift = s;
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

static inline void put_byte(struct bytes *b, uint8_t v)
{
	uint8_t *p = room(b, 1);
	if (p)
		p[0] = v, b->n++;
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

/* ---- maps --------------------------------------------------------------- */

static int32_t umap_get(const struct umap *m, uint64_t key)
{
	if (!m->cap)
		return -1;
	for (uint32_t j = (uint32_t)mix64(key) & (m->cap - 1); m->t[j].val;
	     j = (j + 1) & (m->cap - 1))
		if (m->t[j].key == key)
			return (int32_t)m->t[j].val - 1;
	return -1;
}

/* Puts key (absent) -> val; 0, or -1 out of memory. */
static int umap_put(struct umap *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		uint32_t ncap = m->cap ? m->cap * 2 : 64;
		struct hent *nt = calloc(ncap, sizeof(*nt));
		if (!nt) {
			oom = 1;
			return -1;
		}
		for (uint32_t i = 0; i < m->cap; i++) {
			if (!m->t[i].val)
				continue;
			uint32_t j = (uint32_t)mix64(m->t[i].key) & (ncap - 1);
			while (nt[j].val)
				j = (j + 1) & (ncap - 1);
			nt[j] = m->t[i];
		}
		free(m->t);
		m->t = nt;
		m->cap = ncap;
	}
	uint32_t j = (uint32_t)mix64(key) & (m->cap - 1);
	while (m->t[j].val)
		j = (j + 1) & (m->cap - 1);
	m->t[j].key = key;
	m->t[j].val = val + 1;
	m->n++;
	return 0;
}

static void umap_del(struct umap *m, uint64_t key)
{
	if (!m->cap)
		return;
	uint32_t mask = m->cap - 1, i = (uint32_t)mix64(key) & mask;
	while (m->t[i].val && m->t[i].key != key)
		i = (i + 1) & mask;
	if (!m->t[i].val)
		return;
	for (uint32_t j = (i + 1) & mask; m->t[j].val; j = (j + 1) & mask) {
		uint32_t h = (uint32_t)mix64(m->t[j].key) & mask;
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->t[i] = m->t[j];
			i = j;
		}
	}
	m->t[i].val = 0;
	m->n--;
}

/* ---- thread states ----------------------------------------------------- */

static void state_free(struct bstate *s)
{
	if (!s)
		return;
	free(s->sites);
	free(s->shash);
	free(s->sizes);
	free(s->zmap.t);
	free(s->classes);
	free(s->cmap.t);
	free(s->atab);
	free(s->ring_addr);
	free(s);
}

static void outs_drop(void);

void vrt_batch_reset(void)
{
	for (int i = 0; i < MAX_STATES; i++) {
		state_free(states[i]);
		states[i] = NULL;
	}
	nbarrier = 0;
	pass_floor = 0;
	xmap_on = 0;
	outs_drop();
}

static void state_leaving(struct bstate *s);

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
	if (states[victim])
		state_leaving(states[victim]);
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
	s->sites[slot].nmtf = 0;
	s->site_next++;
	if (shash_put(s, h, slot))
		return -1;
	return (int32_t)slot;
}

/* Defines size in the next size slot (replacing what it held); the slot,
 * or -1 out of memory. */
static int32_t size_define(struct bstate *s, uint64_t size)
{
	uint32_t slot = (uint32_t)(s->size_next % VRT_BATCH5_SIZES);
	if (slot >= s->nsizes) {
		struct size_slot *nz = grow_array(s->sizes, &s->sizes_cap,
		                                  slot + 1, sizeof(*nz));
		if (!nz)
			return -1;
		s->sizes = nz;
		s->nsizes = slot + 1;
	} else {
		umap_del(&s->zmap, s->sizes[slot].size);
	}
	if (umap_put(&s->zmap, size, slot))
		return -1;
	s->sizes[slot].size = size;
	s->sizes[slot].cls = -1;
	s->size_next++;
	return (int32_t)slot;
}

/* The class slot of size slot z (found, or defined now); -1 out of
 * memory. As the reader does it (trace_format.h). */
static int32_t class_of(struct bstate *s, uint32_t z)
{
	struct size_slot *sz = &s->sizes[z];
	uint64_t g = gran_of(sz->size);
	if (sz->cls >= 0 && s->classes[sz->cls].gran == g)
		return sz->cls;
	int32_t c = umap_get(&s->cmap, g);
	if (c < 0) {
		uint32_t slot = (uint32_t)(s->class_next % VRT_BATCH5_CLASSES);
		if (slot >= s->nclasses) {
			struct class_slot *nc = grow_array(
			        s->classes, &s->classes_cap, slot + 1,
			        sizeof(*nc));
			if (!nc)
				return -1;
			s->classes = nc;
			s->nclasses = slot + 1;
		} else {
			umap_del(&s->cmap, s->classes[slot].gran);
		}
		if (umap_put(&s->cmap, g, slot))
			return -1;
		s->classes[slot].gran = g;
		s->classes[slot].n = s->classes[slot].h = 0;
		s->classes[slot].gen =
		        (uint32_t)(s->class_next / VRT_BATCH5_CLASSES);
		s->class_next++;
		c = (int32_t)slot;
	}
	sz->cls = c;
	return c;
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
static void ring_put(struct bstate *s, uint64_t addr, int32_t cls,
                     uint32_t gen)
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
	s->atab[j].cls = cls;
	s->atab[j].gen = gen;
}

/* The slot of the live ring allocation at addr, or UINT32_MAX. */
static uint32_t ring_find(const struct bstate *s, uint64_t addr)
{
	if (!s->an)
		return UINT32_MAX;
	uint32_t j = aslot(s, addr);
	return s->atab[j].idx ? j : UINT32_MAX;
}

/* ---- the chunk's records ------------------------------------------------ */

/* An ALLOC, FREE or pair as decoded from the hot path's records. */
struct hot {
	uint64_t ts, addr, size;
	struct site site;
	struct site fsite; /* a pair's free */
	int pair;
};

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
	e->pair = 0;
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

/* The CHUNK record at the start of [in, in + len): its thread id and
 * time, and where the records after it start; 0 or -1. */
static int chunk_head(const uint8_t *in, size_t len, uint64_t *tid,
                      uint64_t *clock, const uint8_t **rest)
{
	const uint8_t *q = in + 1, *end = in + len, *pe;
	uint64_t plen;
	if (len < 2 || in[0] != VRT_REC_CHUNK || rd_u(&q, end, &plen) ||
	    plen > (uint64_t)(end - q))
		return -1;
	pe = q + plen;
	if (rd_u(&q, pe, tid) || rd_u(&q, pe, clock))
		return -1;
	*rest = pe;
	return 0;
}

/* ---- the pass ---------------------------------------------------------------- */

static void barrier_add(uint64_t ts)
{
	if (nbarrier == barrier_cap) {
		uint32_t ncap = barrier_cap ? 2 * barrier_cap : 256;
		uint64_t *nb = realloc(barrier, ncap * sizeof(*nb));
		if (!nb) {
			/* Without the list, no time of the pass may be
			 * rounded past one of them: every time is exact. */
			xmap_on = -1;
			return;
		}
		barrier = nb;
		barrier_cap = ncap;
	}
	barrier[nbarrier++] = ts;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static inline uint32_t xhome(uint64_t addr)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> (64 - xbits));
}

/* The shared-address entry of addr in this pass (made when missing and
 * make is set), or NULL. */
static struct xent *xfind(uint64_t addr, int make)
{
	if (!xcap)
		return NULL;
	uint32_t j = xhome(addr);
	while (xmap[j].pass == pass_no && xmap[j].addr != addr)
		j = (j + 1) & (xcap - 1);
	if (xmap[j].pass == pass_no)
		return &xmap[j];
	if (!make)
		return NULL;
	xmap[j].pass = pass_no;
	xmap[j].addr = addr;
	xmap[j].tid = 0;
	xn++;
	return &xmap[j];
}

/* Room for one more address in this pass's map (entries of other
 * passes count as empty); 0, or -1 when it cannot grow. */
static int xreserve(void)
{
	if ((xn + 1) * 2 <= xcap)
		return 0;
	uint32_t ncap = xcap ? 2 * xcap : 4096;
	/* A pass with more addresses than XMAP_MAX_SLOTS / 2 (a writer that
	 * fell behind) keeps its times exact instead: a bigger map would
	 * cost the writer more in cache misses than the bytes it saves, and
	 * slow it further behind. */
	if (ncap > XMAP_MAX_SLOTS)
		return -1;
	struct xent *old = xmap, *nt = calloc(ncap, sizeof(*nt));
	if (!nt) {
		free(nt);
		return -1;
	}
	uint32_t ocap = xcap;
	xmap = nt;
	xcap = ncap;
	xbits = (uint32_t)__builtin_ctz(ncap);
	xn = 0;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].pass == pass_no)
			*xfind(old[i].addr, 1) = old[i];
	free(old);
	return 0;
}

/* Notes an event of tid on addr. A map that cannot grow turns the pass's
 * times exact (xmap_on -1). */
static void xnote(uint64_t addr, pid_t tid)
{
	if (xmap_on < 0 || xreserve()) {
		xmap_on = -1;
		return;
	}
	struct xent *e = xfind(addr, 1);
	if (!e->tid)
		e->tid = tid;
	else if (e->tid != tid)
		e->tid = -1;
}

/* Whether another thread than tid has an event on addr in this pass (at
 * any time of the pass: more than the rule asks, never less). */
static int xshared(uint64_t addr, pid_t tid)
{
	const struct xent *e = xfind(addr, 0);
	return e && e->tid != tid;
}

/* Walks the records of one chunk from rest (after its CHUNK record, whose
 * time is clock): barriers from its other records; with addrs, every
 * hot event's address into the map. Stops at the first hot record when
 * stop_hot is set; returns 1 if it saw a hot record (or a REPEAT), 0 if
 * none, -1 when the chunk does not parse. */
static int scan_chunk(const uint8_t *p, const uint8_t *end, uint64_t clock,
                      pid_t tid, int stop_hot, int addrs)
{
	uint64_t addr_reg = 0;
	struct ctmpl ta = {0}, tf = {0};
	int hot = 0;
	while (p < end) {
		uint64_t plen, dts;
		unsigned type = *p++;
		if (rd_u(&p, end, &plen) || plen > (uint64_t)(end - p))
			return -1;
		const uint8_t *pe = p + plen;
		if (is_hot(type)) {
			hot = 1;
			if (stop_hot)
				return 1;
			struct hot e;
			if (decode_hot(type, p, pe, clock, &addr_reg, &ta, &tf,
			               &e))
				return -1;
			clock = e.ts;
			if (addrs) {
				xnote(e.addr, tid);
				if (xmap_on < 0) /* every time exact now */
					return hot;
			}
		} else {
			const uint8_t *q = p;
			if (type == VRT_REC_CHUNK || rd_u(&q, pe, &dts))
				return -1;
			clock += dts;
			if (type == VRT_REC_REPEAT) {
				hot = 1;
				if (stop_hot)
					return 1;
			} else {
				barrier_add(clock);
				memset(&ta, 0, sizeof(ta));
				memset(&tf, 0, sizeof(tf));
				addr_reg = 0;
			}
		}
		p = pe;
	}
	return hot;
}

void vrt_batch_pass(const struct vrt_chunk *chunks, uint64_t floor)
{
	pid_t first = 0;
	int threads = 0;

	pass_no++;
	nbarrier = 0;
	pass_floor = floor;
	xmap_on = 0;
	xn = 0;
	if (!batch_on)
		return;
	/* Which threads allocated, and the other records of the chunks
	 * that did not (a thread's own barriers end its batches anyway). */
	for (const struct vrt_chunk *c = chunks; c; c = c->next) {
		uint64_t tid, clock;
		const uint8_t *rest;
		if (chunk_head(c->data, c->len, &tid, &clock, &rest))
			continue;
		int hot = scan_chunk(rest, c->data + c->len, clock, (pid_t)tid,
		                     1, 0);
		if (hot == 1) {
			if (!threads || (pid_t)tid != first)
				threads++;
			first = (pid_t)tid;
		}
	}
	if (threads >= 2) {
		/* Every other record, and every address: start over (the
		 * chunks that allocated were only looked at up to their
		 * first event). */
		nbarrier = 0;
		if (!xmap_on)
			xmap_on = 1;
		for (const struct vrt_chunk *c = chunks; c && xmap_on >= 0;
		     c = c->next) {
			uint64_t tid, clock;
			const uint8_t *rest;
			if (!chunk_head(c->data, c->len, &tid, &clock, &rest))
				(void)scan_chunk(rest, c->data + c->len, clock,
				                 (pid_t)tid, 0, 1);
		}
	}
	if (nbarrier > 1)
		qsort(barrier, nbarrier, sizeof(*barrier), cmp_u64);
}

/* ---- a thread's output ------------------------------------------------------ */

/* A thread's output until the frame closes: one CHUNK record, then its
 * records, the open BATCH's columns apart; and the thread's clock. */
struct batch {
	struct bstate *st; /* NULL between chunks (the state may go) */
	pid_t tid;
	int chunk;     /* the CHUNK record is written */
	int used;      /* the thread's chunks came in this frame */
	uint32_t n, pairs;
	uint32_t bar;  /* barriers at or below prev */
	uint32_t pass; /* the pass bar belongs to */
	uint64_t t0;   /* exact time before the batch */
	uint64_t prev; /* the previous event's time as written */
	uint64_t last; /* the previous event's exact time */
	struct bytes out;
	struct bytes col[VRT_BATCH5_COLS];
};


static size_t col_bytes(const struct batch *b)
{
	size_t n = 0;
	for (int i = 0; i < VRT_BATCH5_COLS; i++)
		n += b->col[i].n;
	return n;
}

/* Writes the open BATCH record to b's output. */
static void batch_flush(struct batch *b)
{
	if (!b->n)
		return;
	uint8_t hdr[(4 + VRT_BATCH5_COLS - 1) * VRT_UVARINT_MAX];
	uint8_t rec[1 + VRT_UVARINT_MAX];
	size_t h = 0, before = b->out.n;
	h += vrt_put_uvarint(hdr + h, b->last - b->t0);
	h += vrt_put_uvarint(hdr + h, b->n);
	h += vrt_put_uvarint(hdr + h, (b->st->fresh ? VRT_BATCH_RESET : 0) |
	                                      (uint64_t)unit_shift << 1);
	h += vrt_put_uvarint(hdr + h, b->pairs);
	for (int i = 0; i < VRT_BATCH5_COLS - 1; i++)
		h += vrt_put_uvarint(hdr + h, b->col[i].n);
	rec[0] = VRT_REC_BATCH;
	size_t r = 1 + vrt_put_uvarint(rec + 1, h + col_bytes(b));
	put_raw(&b->out, rec, r);
	put_raw(&b->out, hdr, h);
	for (int i = 0; i < VRT_BATCH5_COLS; i++) {
		put_raw(&b->out, b->col[i].p, b->col[i].n);
		b->col[i].n = 0;
	}
	pending += b->out.n - before;
	b->st->fresh = 0;
	b->n = b->pairs = 0;
	b->t0 = b->prev = b->last;
}

/* The output of thread tid (made when missing); NULL out of memory. */
static struct batch *out_of(pid_t tid)
{
	uint32_t i;
	for (i = 0; i < nouts; i++)
		if (outs[i]->used && outs[i]->tid == tid)
			return outs[i];
	for (i = 0; i < nouts; i++)
		if (!outs[i]->used)
			break;
	if (i == nouts) {
		struct batch **no = grow_array(outs, &capouts, nouts + 1,
		                               sizeof(*outs));
		if (!no)
			return NULL;
		outs = no;
		if (!(outs[nouts] = calloc(1, sizeof(**outs)))) {
			oom = 1;
			return NULL;
		}
		nouts++;
	}
	struct batch *b = outs[i];
	b->used = 1;
	b->tid = tid;
	b->chunk = 0;
	b->n = b->pairs = 0;
	b->st = NULL;
	b->out.n = 0;
	for (int k = 0; k < VRT_BATCH5_COLS; k++)
		b->col[k].n = 0;
	return b;
}

/* A state about to go: its thread's open BATCH is written first. */
static void state_leaving(struct bstate *s)
{
	for (uint32_t i = 0; i < nouts; i++)
		if (outs[i]->used && outs[i]->st == s) {
			batch_flush(outs[i]);
			outs[i]->st = NULL;
		}
}

/* Forgets what the outputs held: it was for the file before. */
static void outs_drop(void)
{
	for (uint32_t i = 0; i < nouts; i++) {
		outs[i]->used = 0;
		outs[i]->st = NULL;
	}
	pending = 0;
}

size_t vrt_batch_pending(void)
{
	size_t n = pending;
	for (uint32_t i = 0; i < nouts; i++)
		if (outs[i]->used)
			n += col_bytes(outs[i]);
	return n;
}

void vrt_batch_emit(void (*feed)(const void *data, size_t len))
{
	for (uint32_t i = 0; i < nouts; i++) {
		struct batch *b = outs[i];
		if (!b->used)
			continue;
		if (b->st)
			batch_flush(b);
		if (b->out.n)
			feed(b->out.p, b->out.n);
		b->used = 0;
		b->st = NULL;
	}
	pending = 0;
}

/* Starts b's CHUNK record (at time ts) if it has none. */
static void chunk_open(struct batch *b, uint64_t ts)
{
	if (b->chunk)
		return;
	uint8_t p[2 + 2 * VRT_UVARINT_MAX];
	size_t n = 2;
	n += vrt_put_uvarint(p + n, (uint64_t)b->tid);
	n += vrt_put_uvarint(p + n, ts);
	p[0] = VRT_REC_CHUNK;
	p[1] = (uint8_t)(n - 2);
	put_raw(&b->out, p, n);
	pending += n;
	b->chunk = 1;
	b->t0 = b->prev = b->last = ts;
}

/* Copies a record whose time is clock to b's output, its dts counted
 * from b's clock (the previous event's exact time). */
static void put_record(struct batch *b, unsigned type, const uint8_t *body,
                       const uint8_t *pe, uint64_t clock)
{
	uint8_t h[1 + 2 * VRT_UVARINT_MAX];
	size_t dn = vrt_put_uvarint(h + 1 + VRT_UVARINT_MAX, clock - b->last);
	size_t hn = 1 + vrt_put_uvarint(h + 1, dn + (size_t)(pe - body));
	h[0] = (uint8_t)type;
	put_raw(&b->out, h, hn);
	put_raw(&b->out, h + 1 + VRT_UVARINT_MAX, dn);
	put_raw(&b->out, body, (size_t)(pe - body));
	pending += hn + dn + (size_t)(pe - body);
	b->t0 = b->prev = b->last = clock;
}

/* Where a thread's output stood before a chunk, to go back to when the
 * chunk turns out not to parse (or memory runs out). */
struct mark {
	size_t out, col[VRT_BATCH5_COLS], pending;
	uint32_t n, pairs;
	uint64_t t0, prev, last;
	int chunk;
};

static void mark_take(const struct batch *b, struct mark *m)
{
	m->out = b->out.n;
	for (int i = 0; i < VRT_BATCH5_COLS; i++)
		m->col[i] = b->col[i].n;
	m->pending = pending;
	m->n = b->n;
	m->pairs = b->pairs;
	m->t0 = b->t0;
	m->prev = b->prev;
	m->last = b->last;
	m->chunk = b->chunk;
}

static void mark_back(struct batch *b, const struct mark *m)
{
	b->out.n = m->out;
	for (int i = 0; i < VRT_BATCH5_COLS; i++)
		b->col[i].n = m->col[i];
	pending = m->pending;
	b->n = m->n;
	b->pairs = m->pairs;
	b->t0 = m->t0;
	b->prev = m->prev;
	b->last = m->last;
	b->chunk = m->chunk;
	/* The kind bits of events past the mark, in its last byte. */
	if (b->n % 8)
		b->col[C_KIND].p[b->col[C_KIND].n - 1] &=
		        (uint8_t)((1u << (b->n % 8)) - 1);
}

/* ---- one event ------------------------------------------------------------ */

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
	put_raw(&b->out, p, n);
	pending += n;
	b->t0 = b->prev = b->last = e->ts;
}

/* Writes the site column value for x (found in slot sl, or -1: defined
 * now, its fields into def); returns its slot, or -1 out of memory. */
static int32_t put_site(struct batch *b, int c, const struct site *x,
                        int32_t sl, uint64_t h)
{
	struct bstate *s = b->st;
	if (sl >= 0) {
		put_u(&b->col[c], (uint64_t)sl + 1);
		return sl;
	}
	sl = site_define(s, x, h);
	if (sl < 0)
		return -1;
	put_u(&b->col[c], 0);
	put_u(&b->col[C_DEF], SITE_API(x->ak));
	uint8_t *p = room(&b->col[C_DEF], VRT_UVARINT_MAX);
	if (p)
		b->col[C_DEF].n += vrt_put_svarint(p, x->device);
	put_u(&b->col[C_DEF], x->aux);
	put_u(&b->col[C_DEF], x->phase);
	put_u(&b->col[C_DEF], x->stack);
	return sl;
}

/* Writes the event's time (trace_format.h): rounded down to the unit,
 * never before the previous event, unless that could put it before an
 * event of another thread it followed (shared says its address is used
 * by another thread in this pass). */
static void put_time(struct batch *b, uint64_t ts, int shared)
{
	uint64_t mask = ((uint64_t)1 << unit_shift) - 1;
	uint64_t g = ts & ~mask, w = g > b->prev ? g : b->prev;
	if (b->pass != pass_no) {
		b->pass = pass_no;
		b->bar = 0;
	}
	while (b->bar < nbarrier && barrier[b->bar] < w)
		b->bar++;
	if (shared || w < pass_floor ||
	    (b->bar < nbarrier && barrier[b->bar] <= ts)) {
		put_u(&b->col[C_TIME], (ts - b->prev) << 1 | 1);
		b->prev = ts;
	} else {
		uint64_t k = w == b->prev ? 0
		                          : (g - (b->prev & ~mask)) >> unit_shift;
		put_u(&b->col[C_TIME], k << 1);
		b->prev = w;
	}
	b->last = ts;
}

/* The size byte(s) of size at alloc site st (trace_format.h), the state
 * changed as the reader will; the size's slot, or -1 when the size does
 * not pack or memory ran out (nothing written or changed then). */
static int32_t put_size(struct batch *b, struct site *st, uint64_t size)
{
	struct bstate *s = b->st;
	uint32_t k;
	int32_t z = -1;
	for (k = 0; k < st->nmtf; k++)
		if (s->sizes[st->mtf[k]].size == size) {
			z = st->mtf[k];
			break;
		}
	if (z >= 0) {
		put_byte(&b->col[C_SIZE], (uint8_t)k);
	} else if ((z = umap_get(&s->zmap, size)) >= 0) {
		put_byte(&b->col[C_SIZE], (uint8_t)(VRT_BATCH_MTF + (z >> 8)));
		put_byte(&b->col[C_SIZELO], (uint8_t)z);
		k = st->nmtf < VRT_BATCH_MTF ? st->nmtf : VRT_BATCH_MTF - 1;
	} else {
		uint64_t packed;
		if (!vrt_pack_u(size, &packed))
			return -1;
		z = size_define(s, size);
		if (z < 0)
			return -1;
		put_byte(&b->col[C_SIZE], VRT_BATCH_NEWSIZE);
		put_u(&b->col[C_SIZENEW], packed);
		k = st->nmtf < VRT_BATCH_MTF ? st->nmtf : VRT_BATCH_MTF - 1;
	}
	/* To the front of the site's recent sizes. */
	if (k == st->nmtf)
		st->nmtf++;
	for (uint32_t j = VRT_BATCH_MTF - 1; j > 0; j--)
		if (j <= k)
			st->mtf[j] = st->mtf[j - 1];
	st->mtf[0] = (uint16_t)z;
	return z;
}

/* Adds one event to the batch (or writes it in full when it does not
 * fit one). The state changes exactly as a reader's will. */
static void batch_add(struct batch *b, const struct hot *e)
{
	struct bstate *s = b->st;
	int alloc = !SITE_FREE(e->site.ak);
	uint64_t code = 0, packed = 0, hf = 0;
	uint64_t h = site_hash(&e->site);
	int32_t sl = site_find(s, &e->site, h), fsl = -1, cls = -1;
	uint32_t ae = UINT32_MAX;
	int32_t zs = -1;

	/* The codes first: an event that cannot be written must leave the
	 * state alone. */
	if (alloc) {
		uint64_t p;
		if (!vrt_pack_u(e->size, &p))
			goto full;
		if (e->pair) {
			hf = site_hash(&e->fsite);
		} else {
			/* The class the reader will find (or make, with an
			 * empty list): the slot that holds the size's. */
			int32_t c = umap_get(&s->cmap, gran_of(e->size));
			if (c >= 0) {
				const struct class_slot *q = &s->classes[c];
				for (uint32_t k = 0; k < q->n; k++)
					if (LIFO_AT(q, k) == e->addr) {
						code = k + 1;
						break;
					}
			}
			if (!code &&
			    !vrt_pack_s((int64_t)(e->addr - s->last_alloc),
			                &packed))
				goto full;
		}
	} else {
		ae = ring_find(s, e->addr);
		if (ae != UINT32_MAX)
			code = s->nalloc - (s->atab[ae].idx - 1);
		else if (!vrt_pack_s((int64_t)(e->addr - s->last_free), &packed))
			goto full;
	}
	if (b->n == BATCH_EVENTS || col_bytes(b) + EV_MAX_BYTES > BATCH_BYTES)
		batch_flush(b);

	/* kind */
	if (b->n % 8 == 0) {
		uint8_t *p = room(&b->col[C_KIND], 1);
		if (!p)
			return;
		*p = 0;
		b->col[C_KIND].n++;
	}
	if (!alloc)
		b->col[C_KIND].p[b->col[C_KIND].n - 1] |=
		        (uint8_t)(1u << (b->n % 8));
	put_time(b, e->ts,
	         xmap_on < 0 ||
	                 (xmap_on > 0 && !e->pair && xshared(e->addr, b->tid)));
	b->n++;

	if (!alloc) {
		put_site(b, C_FSITE, &e->site, sl, h);
		put_u(&b->col[C_FADDR], code);
		if (!code) {
			put_u(&b->col[C_ADDR], packed);
			s->last_free = e->addr;
			return;
		}
		int32_t c = s->atab[ae].cls;
		uint32_t g = s->atab[ae].gen;
		adel(s, ae); /* freed: out of the index */
		if (c >= 0 && s->classes[c].gen == g)
			lifo_push(&s->classes[c], e->addr);
		return;
	}
	sl = put_site(b, C_ASITE, &e->site, sl, h);
	if (sl < 0)
		return; /* out of memory: oom is set */
	zs = put_size(b, &s->sites[sl], e->size);
	if (zs < 0) {
		oom = 1; /* packs (checked above): out of memory */
		return;
	}
	if (e->pair) {
		/* Found again: the alloc site may have just taken the
		 * free site's slot. */
		fsl = site_find(s, &e->fsite, hf);
		put_u(&b->col[C_AADDR], VRT_BATCH_PAIR);
		put_site(b, C_FSITE, &e->fsite, fsl, hf);
		b->pairs++;
		return;
	}
	cls = class_of(s, (uint32_t)zs);
	if (cls < 0)
		return; /* out of memory: oom is set */
	put_u(&b->col[C_AADDR], code);
	if (code)
		lifo_take(&s->classes[cls], (uint32_t)code - 1);
	else
		put_u(&b->col[C_ADDR], packed);
	s->last_alloc = e->addr;
	ring_put(s, e->addr, cls, s->classes[cls].gen);
	s->nalloc++;
	return;
full:
	batch_flush(b);
	write_full(b, e);
}

/* The pairs of the REPEAT record [p, pe) (after its dts, at time ts) as
 * pair events, when it holds at most REPEAT_ABSORB of them; 0, or -1
 * when it stays a record. */
static int absorb_repeat(struct batch *b, const uint8_t *p, const uint8_t *pe,
                         uint64_t ts)
{
	uint64_t count, span, period;
	struct hot tm[VRT_REPEAT_MAX_PERIOD];
	if (rd_u(&p, pe, &count) || rd_u(&p, pe, &span) ||
	    rd_u(&p, pe, &period) || !count || count > REPEAT_ABSORB ||
	    period < 1 || period > VRT_REPEAT_MAX_PERIOD)
		return -1;
	for (uint64_t k = 0; k < period; k++) {
		uint64_t api, fapi, aux, faux, size, stack, phase;
		int64_t dev, fdev;
		struct hot *e = &tm[k];
		if (rd_u(&p, pe, &api) || rd_u(&p, pe, &fapi) ||
		    vrt_get_svarint(&p, pe, &dev) ||
		    vrt_get_svarint(&p, pe, &fdev) || rd_u(&p, pe, &size) ||
		    rd_u(&p, pe, &aux) || rd_u(&p, pe, &faux) ||
		    rd_u(&p, pe, &stack) || rd_u(&p, pe, &phase) ||
		    api > 0xff || fapi > 0xff)
			return -1;
		memset(e, 0, sizeof(*e));
		e->ts = ts;
		e->size = size;
		e->pair = 1;
		e->site.ak = SITE_AK(api, 0);
		e->site.device = dev;
		e->site.aux = aux;
		e->site.phase = phase;
		e->site.stack = stack;
		e->fsite.ak = SITE_AK(fapi, 1);
		e->fsite.device = fdev;
		e->fsite.aux = faux;
		e->fsite.phase = phase;
		e->fsite.stack = 0;
	}
	for (uint64_t k = 0; k < count; k++) {
		/* A pair whose size does not pack stays a REPEAT; checked
		 * before the first is added, so nothing is half written. */
		uint64_t packed;
		if (!vrt_pack_u(tm[k % period].size, &packed))
			return -1;
	}
	for (uint64_t k = 0; k < count; k++)
		batch_add(b, &tm[k % period]);
	return 0;
}

void vrt_batch_chunk(const uint8_t *in, size_t len)
{
	const uint8_t *p, *end = in + len;
	uint64_t tid, clock, addr_reg = 0;
	struct ctmpl ta = {0}, tf = {0};
	struct batch *b;
	struct mark mk;
	unsigned type;
	int any = 0;

	if (chunk_head(in, len, &tid, &clock, &p) || !(b = out_of((pid_t)tid)))
		goto raw;
	/* A chunk without a hot record, or with batching off, goes out as
	 * it came (after what its thread wrote before it in the frame). */
	for (const uint8_t *q = p; batch_on && q < end && !any;) {
		uint64_t plen;
		type = *q++;
		if (rd_u(&q, end, &plen) || plen > (uint64_t)(end - q))
			goto raw;
		any = is_hot(type) || type == VRT_REC_REPEAT;
		q += plen;
	}
	if (!any)
		goto raw;
	b->st = state_of((pid_t)tid);
	if (!b->st)
		goto raw;
	oom = 0;
	mark_take(b, &mk);
	/* The thread's chunks of the frame make one: this one's records go
	 * on from the time of the previous one's last. */
	chunk_open(b, clock);
	while (p < end) {
		const uint8_t *pe;
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
			batch_add(b, &e);
		} else {
			const uint8_t *q = p;
			if (type == VRT_REC_CHUNK || rd_u(&q, pe, &dts))
				goto bad;
			clock += dts;
			if (type == VRT_REC_REPEAT &&
			    !absorb_repeat(b, q, pe, clock)) {
				p = pe;
				continue;
			}
			/* A BATCH ends at its last event's exact time, the
			 * time this record's dts counts from. */
			batch_flush(b);
			put_record(b, type, q, pe, clock);
			if (type != VRT_REC_REPEAT) {
				memset(&ta, 0, sizeof(ta));
				memset(&tf, 0, sizeof(tf));
				addr_reg = 0;
			}
		}
		p = pe;
	}
	if (!oom)
		return;
bad:
	/* The state took events that will not be in the file: what the
	 * thread wrote before this chunk goes out as it was, the thread
	 * starts over, and its chunk goes out as it came. */
	mark_back(b, &mk);
	batch_flush(b);
	state_drop(b->st);
	b->st = NULL;
raw:
	b = chunk_head(in, len, &tid, &clock, &p) ? NULL : out_of((pid_t)tid);
	if (b) {
		if (b->st)
			batch_flush(b);
		put_raw(&b->out, in, len);
		pending += len;
		/* What follows needs a CHUNK record of its own. */
		b->chunk = 0;
		b->st = NULL;
		if (!oom)
			return;
	}
	/* No output to put it in: out of memory. The chunk is lost; the
	 * trailer's count of dropped events cannot say so, but the file
	 * stays readable. */
}
