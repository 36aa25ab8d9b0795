/*
 * load_batch.c — the BATCH record of trace format versions 4 and 5 (a
 * part of the loader: load.c's opening block says how the whole works).
 *
 * Owns each thread's BATCH state (its call sites, sizes, version 5's
 * classes and their lists of freed addresses, the ring of recent
 * allocations), the record's header (read when the frame is, to count and
 * time its events) and the decoding of its events when they are
 * delivered, both versions from one loop (emit_batch_v, made once per
 * version). The state changes event by event exactly as the writer's did
 * (trace_format.h says how each column is written).
 */
#include "load_internal.h"
#include "array.h"

#include <stdlib.h>
#include <string.h>

/* A thread's BATCH state (trace_format.h), kept per thread id of a file
 * for as long as the file is read: a thread's batches are decoded in the
 * order it wrote them (its events come out in time order, ties in record
 * order). Tables grow as the writer defines slots, up to the format's
 * caps, so the memory follows the threads and their call sites and
 * sizes, never the events. */
struct bsite {
	uint64_t aux, stack, phase;
	uint64_t size;  /* alloc site: its last size (version 4) */
	int32_t device; /* raw ordinal (vrt_load_raw_device) */
	int32_t zslot;  /* the last size's slot, -1 none (version 4) */
	uint16_t api;
	uint8_t kind, has_size;
	uint8_t nmtf; /* version 5: the recent sizes (size slots) */
	uint16_t mtf[VRT_BATCH_MTF];
	/* Resolved fields, once vrt_load_resolve_fast answered for them
	 * (answers of the file's caches never change for the same ids). */
	int32_t g_dev;
	uint32_t g_stack, g_phase;
	uint8_t g_src, g_ok;
};

/* A size and its list of freed addresses: a circle, the top at
 * lifo[(h - 1) % LIFO], so that a push onto a full list drops the bottom
 * entry by writing over it. */
struct bsize {
	uint64_t size;
	uint32_t n, h;
	uint64_t lifo[VRT_BATCH_LIFO];
};

/* A ring entry: the address, its size slot (version 4) or class slot and
 * that slot's definition then (version 5). */
struct bring {
	uint64_t addr;
	int32_t zslot;
	uint32_t gen;
};

/* Version 5: a size slot, a class with its list (as struct bsize), and
 * an entry of the map from classes to class slots. */
struct bhent {
	uint64_t key;
	uint32_t val; /* slot + 1; 0 empty */
};

struct bsize5 {
	uint64_t size;
	int32_t cls;  /* -1 none yet */
	uint32_t gen; /* cls's definition when found (see bclass_of) */
};

struct bclass {
	uint64_t gran; /* granules of VRT_BATCH_GRAIN */
	uint32_t n, h;
	uint32_t gen; /* definitions of the slot so far */
	uint64_t lifo[VRT_BATCH_LIFO];
};

struct bstate {
	uint32_t tid;
	struct bsite *sites;
	size_t nsites, capsites;
	uint64_t site_next;
	struct bsize *sizes;
	size_t nsizes, capsizes;
	/* version 5 */
	struct bsize5 *sizes5;
	size_t nsizes5, capsizes5;
	uint64_t size_next;
	struct bclass *classes;
	size_t nclasses, capclasses;
	uint64_t class_next;
	struct bhent *cmap; /* class slots by granules, linear probing */
	size_t cmap_cap, cmap_n;
	struct bring *ring; /* VRT_BATCH_RING entries, made on first use */
	uint64_t nalloc, last_alloc, last_free;
};

/* The BATCH state of thread tid in f, made when missing; NULL when out
 * of memory. */
static struct bstate *bstate_of(struct lfile *f, uint32_t tid)
{
	struct bstate *b;

	for (size_t i = f->nbst; i-- > 0;)
		if (f->bst[i]->tid == tid)
			return f->bst[i];
	if (vrt_array_grow((void **)&f->bst, &f->capbst, f->nbst + 1,
	                   sizeof(*f->bst)))
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->tid = tid;
	f->bst[f->nbst++] = b;
	return b;
}

/*
 * The header of the BATCH record whose payload is [p, pe) in a file of
 * the given version: fills the column bounds of bc (cursors at their
 * starts), its count, pairs and time unit, *span, *flags. 0, or -1 when
 * the header or the column lengths do not fit the payload, the kind
 * column is too short for n, or (version 5) the pairs are more than the
 * events or the time unit is out of range. Reads with bounds checks (the
 * header is read when the frame is, before any padding guarantee
 * matters).
 */
int vrt_load_batch_header(const uint8_t *p, const uint8_t *pe, unsigned version,
                        struct bcur *bc, uint64_t *span, uint64_t *flags)
{
	uint64_t n, pairs = 0, len[VRT_BATCH5_COLS - 1];
	int i, cols = version >= 5 ? VRT_BATCH5_COLS : VRT_BATCH_COLS;

	if (vrt_get_uvarint(&p, pe, span) || vrt_get_uvarint(&p, pe, &n) ||
	    vrt_get_uvarint(&p, pe, flags) || n == 0 || n > UINT32_MAX)
		return -1;
	if (version >= 5 && (vrt_get_uvarint(&p, pe, &pairs) || pairs > n ||
	                     (*flags >> 1 & 63) > VRT_BATCH_UNIT_MAX))
		return -1;
	for (i = 0; i < cols - 1; i++)
		if (vrt_get_uvarint(&p, pe, &len[i]))
			return -1;
	for (i = 0; i < cols; i++) {
		uint64_t l = i < cols - 1 ? len[i] : (uint64_t)(pe - p);
		if (l > (uint64_t)(pe - p))
			return -1;
		bc->c[i] = p;
		bc->e[i] = p + l;
		p += l;
	}
	if ((uint64_t)(bc->e[0] - bc->c[0]) < (n + 7) / 8)
		return -1;
	bc->n = (uint32_t)n;
	bc->pairs = (uint32_t)pairs;
	bc->unit = (uint8_t)(*flags >> 1 & 63);
	bc->i = 0;
	return 0;
}

/* Empties a thread's BATCH state (its memory stays for reuse). */
static void bstate_clear(struct bstate *b)
{
	b->nsites = 0;
	b->site_next = 0;
	b->nsizes = 0;
	b->nsizes5 = 0;
	b->size_next = 0;
	b->nclasses = 0;
	b->class_next = 0;
	if (b->cmap_cap)
		memset(b->cmap, 0, b->cmap_cap * sizeof(*b->cmap));
	b->cmap_n = 0;
	b->nalloc = 0;
	b->last_alloc = b->last_free = 0;
}

/* Where the writer puts a new site: the next slot, round the table. */
static struct bsite *bsite_define(struct bstate *b)
{
	size_t slot = (size_t)(b->site_next % VRT_BATCH_SITES);
	if (slot >= b->nsites) {
		if (vrt_array_grow((void **)&b->sites, &b->capsites, slot + 1,
		                   sizeof(*b->sites)))
			return NULL;
		b->nsites = slot + 1;
	}
	b->site_next++;
	memset(&b->sites[slot], 0, sizeof(b->sites[slot]));
	b->sites[slot].zslot = -1;
	return &b->sites[slot];
}

/* A new site's fields from the definitions column (*cd, ending at ed): -1
 * when its api is out of range; a read past ed sets *bad. */
static inline int bsite_read(struct bsite *site, const uint8_t **cd,
                             const uint8_t *ed, int *bad, int kind)
{
	uint64_t api = vrt_load_uv(cd, bad), dev = vrt_load_uv(cd, bad);
	site->aux = vrt_load_uv(cd, bad);
	site->phase = vrt_load_uv(cd, bad);
	site->stack = vrt_load_uv(cd, bad);
	*bad |= *cd > ed;
	if (api > VRT_API_MAX)
		return -1;
	site->api = (uint16_t)api;
	site->device = vrt_load_raw_device(vrt_unzigzag(dev));
	site->kind = (uint8_t)kind;
	return 0;
}

/* Version 5: slot z goes first in a site's recent sizes, the entries 0
 * to k - 1 before it moving up one (the one at k leaves; k <= 7). One
 * jump and k moves: most sizes are the site's last (k = 0), and a loop
 * would be made a memmove call. */
_Static_assert(VRT_BATCH_MTF == 8, "mtf_front moves up to 7 entries");

static inline void mtf_front(uint16_t *m, uint32_t k, uint16_t z)
{
	switch (k) {
	case 7:
		m[7] = m[6];
		/* fall through */
	case 6:
		m[6] = m[5];
		/* fall through */
	case 5:
		m[5] = m[4];
		/* fall through */
	case 4:
		m[4] = m[3];
		/* fall through */
	case 3:
		m[3] = m[2];
		/* fall through */
	case 2:
		m[2] = m[1];
		/* fall through */
	case 1:
		m[1] = m[0];
		/* fall through */
	default:
		m[0] = z;
	}
}

/* Version 5: the class slot holding granules g, or -1. */
static int32_t bclass_find(const struct bstate *b, uint64_t g)
{
	if (!b->cmap_cap)
		return -1;
	for (size_t j = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) &
	                (b->cmap_cap - 1);
	     b->cmap[j].val; j = (j + 1) & (b->cmap_cap - 1))
		if (b->cmap[j].key == g)
			return (int32_t)b->cmap[j].val - 1;
	return -1;
}

static void bclass_del(struct bstate *b, uint64_t g)
{
	size_t mask = b->cmap_cap - 1, i;
	if (!b->cmap_cap)
		return;
	i = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) & mask;
	while (b->cmap[i].val && b->cmap[i].key != g)
		i = (i + 1) & mask;
	if (!b->cmap[i].val)
		return;
	for (size_t j = (i + 1) & mask; b->cmap[j].val; j = (j + 1) & mask) {
		size_t h = (size_t)(b->cmap[j].key * 0x9e3779b97f4a7c15ull >>
		                    32) & mask;
		if (((j - h) & mask) >= ((j - i) & mask)) {
			b->cmap[i] = b->cmap[j];
			i = j;
		}
	}
	b->cmap[i].val = 0;
	b->cmap_n--;
}

/* Puts g (absent) -> slot; 0, or -1 out of memory. */
static int bclass_put(struct bstate *b, uint64_t g, uint32_t slot)
{
	size_t j;
	if ((b->cmap_n + 1) * 2 > b->cmap_cap) {
		size_t ncap = b->cmap_cap ? 2 * b->cmap_cap : 64;
		struct bhent *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return -1;
		for (size_t i = 0; i < b->cmap_cap; i++) {
			if (!b->cmap[i].val)
				continue;
			j = (size_t)(b->cmap[i].key * 0x9e3779b97f4a7c15ull >>
			             32) & (ncap - 1);
			while (nt[j].val)
				j = (j + 1) & (ncap - 1);
			nt[j] = b->cmap[i];
		}
		free(b->cmap);
		b->cmap = nt;
		b->cmap_cap = ncap;
	}
	j = (size_t)(g * 0x9e3779b97f4a7c15ull >> 32) & (b->cmap_cap - 1);
	while (b->cmap[j].val)
		j = (j + 1) & (b->cmap_cap - 1);
	b->cmap[j].key = g;
	b->cmap[j].val = slot + 1;
	b->cmap_n++;
	return 0;
}

/* Version 5: the class slot of size slot z (trace_format.h), defined
 * when no slot holds its class; -1 out of memory. Found again (or made)
 * here; bclass_of answers at once for the slot it found last, when that
 * slot was not defined since (a slot defined again for the same class is
 * found again here). */
static int32_t bclass_find_of(struct bstate *b, struct bsize5 *z)
{
	uint64_t g;
	int32_t c;
	g = z->size / VRT_BATCH_GRAIN + (z->size % VRT_BATCH_GRAIN != 0);
	c = bclass_find(b, g);
	if (c < 0) {
		size_t slot = (size_t)(b->class_next % VRT_BATCH5_CLASSES);
		if (slot >= b->nclasses) {
			if (vrt_array_grow((void **)&b->classes, &b->capclasses,
			                   slot + 1, sizeof(*b->classes)))
				return -1;
			b->nclasses = slot + 1;
		} else {
			bclass_del(b, b->classes[slot].gran);
		}
		if (bclass_put(b, g, (uint32_t)slot))
			return -1;
		b->classes[slot].gran = g;
		b->classes[slot].n = b->classes[slot].h = 0;
		b->classes[slot].gen = (uint32_t)(b->class_next /
		                                  VRT_BATCH5_CLASSES);
		b->class_next++;
		c = (int32_t)slot;
	}
	z->cls = c;
	z->gen = b->classes[c].gen;
	return c;
}

static inline int32_t bclass_of(struct bstate *b, struct bsize5 *z)
{
	if (__builtin_expect(z->cls >= 0 && b->classes[z->cls].gen == z->gen,
	                     1))
		return z->cls;
	return bclass_find_of(b, z);
}

/* Version 5: a new size into the next size slot; the slot, or -1 out of
 * memory. */
static int32_t bsize5_define(struct bstate *b, uint64_t size)
{
	size_t slot = (size_t)(b->size_next % VRT_BATCH5_SIZES);
	if (slot >= b->nsizes5) {
		if (vrt_array_grow((void **)&b->sizes5, &b->capsizes5,
		                   slot + 1, sizeof(*b->sizes5)))
			return -1;
		b->nsizes5 = slot + 1;
	}
	b->sizes5[slot].size = size;
	b->sizes5[slot].cls = -1;
	b->size_next++;
	return (int32_t)slot;
}

/*
 * Delivers the events of the BATCH record [rec, pe) (payload at p; the
 * chunk time before it: clock) from where r->bc stands, while they sort
 * before the bound, as vrt_load_deliver_raw does for other records. *fin says
 * the record is done (else r->key is its next event's time). The thread's state
 * changes event by event, exactly as the writer's did. Both versions of the
 * record: they differ in times, sizes and an allocation's address (and version
 * 5's pairs).
 */
static inline __attribute__((always_inline)) enum vrt_load_status
emit_batch_v(struct vrt_trace *t, struct run *r, const uint8_t *rec,
             const uint8_t *p, const uint8_t *pe, int64_t clock,
             struct vrt_event *out, size_t max, size_t *np, int64_t lim,
             int eq, int64_t *lastp, int *have_lastp, uint64_t *latep,
             int *fin, struct vrt_load_error *err, const int v5)
{
	struct lfile *f = r->f;
	struct bcur *bc = &r->bc;
	struct bstate *b = r->bs;
	int64_t shift = f->shift, last = *lastp, prev;
	int have_last = *have_lastp, bad = 0, keyed = 0;
	uint64_t late = 0;
	size_t n = *np;
	uint32_t i, cnt, pairs;
	unsigned unit;
	uint8_t snap = r->snap ? VRT_EV_SNAP : 0;
	enum vrt_load_status st = VRT_LOAD_OK;
	const char *why = "malformed BATCH";
	/* The columns' cursors, in registers while the loop runs (the
	 * run keeps them between calls). Each is checked against its end
	 * right after it moved, so a column that runs short never lets a
	 * read go further than one varint past it (the padding covers).
	 * Version 4 has no sizelo (cl) and sizenew (cn) columns. */
	const uint8_t *ck, *ct, *cs[2], *cz, *cl, *cn, *ca[2], *cx, *cd;
	const uint8_t *et, *es[2], *ez, *el, *en, *ea[2], *ex, *ed;
	const int ia = v5 ? 7 : 5; /* the aaddr column; faddr, addr, def
	                            * follow it */

	*fin = 0;
	if (!b && !(b = r->bs = bstate_of(f, r->tid)))
		return vrt_load_nomem(f, err, "events");
	if (!bc->on) {
		uint64_t span, flags;
		if (vrt_load_batch_header(p, pe, f->version, bc, &span, &flags))
			goto malformed; /* checked with the frame: not reached */
		if (flags & VRT_BATCH_RESET)
			bstate_clear(b);
		bc->prev = clock;
		bc->after = clock;
		(void)vrt_load_chunk_time(&bc->after, span);
		bc->on = 1;
	}
	ck = bc->c[0];
	ct = bc->c[1], et = bc->e[1];
	cs[0] = bc->c[2], es[0] = bc->e[2];
	cs[1] = bc->c[3], es[1] = bc->e[3];
	cz = bc->c[4], ez = bc->e[4];
	cl = bc->c[5], el = bc->e[5];
	cn = bc->c[6], en = bc->e[6];
	ca[0] = bc->c[ia], ea[0] = bc->e[ia];
	ca[1] = bc->c[ia + 1], ea[1] = bc->e[ia + 1];
	cx = bc->c[ia + 2], ex = bc->e[ia + 2];
	cd = bc->c[ia + 3], ed = bc->e[ia + 3];
	prev = bc->prev;
	i = bc->i;
	cnt = bc->n;
	pairs = bc->pairs;
	unit = bc->unit;
	/* One comparison per event for the bound (equal times go when eq),
	 * and the caller's room as a count. */
	if (!eq && lim != INT64_MIN)
		lim--;
	else if (!eq)
		cnt = i; /* nothing sorts below INT64_MIN */
	if (cnt - i > max - n)
		cnt = i + (uint32_t)(max - n);
	while (i < cnt) {
		const uint8_t *tp = ct;
		int kind, pair = 0;
		uint64_t v, c, addr = 0, size = 0;
		int64_t ts = prev, tsx;
		struct bsite *site, *fs = NULL;
		struct vrt_event *e;

		v = vrt_load_uv(&ct, &bad);
		bad |= ct > et;
		if (v5)
			ts = vrt_load_batch5_time(prev, v, unit);
		else
			(void)vrt_load_chunk_time(&ts, vrt_load_batch_dt(v));
		tsx = shift ? vrt_load_sat_add(ts, shift) : ts;
		if (tsx > lim) {
			ct = tp;
			r->key = tsx;
			keyed = 1;
			break;
		}
		kind = (ck[i >> 3] >> (i & 7)) & 1;
		c = vrt_load_uv(&cs[kind], &bad);
		bad |= cs[kind] > es[kind];
		if (__builtin_expect(c != 0, 1)) {
			if (c > b->nsites || b->sites[c - 1].kind != kind)
				goto malformed;
			site = &b->sites[c - 1];
		} else {
			if (!(site = bsite_define(b)))
				return vrt_load_nomem(f, err, "events");
			if (bsite_read(site, &cd, ed, &bad, kind)) {
				why = "api id out of range";
				goto malformed;
			}
		}
		c = vrt_load_uv(&ca[kind], &bad);
		bad |= ca[kind] > ea[kind];
		if (!kind && v5) {
			/* The size: from the site's recent sizes, a size slot
			 * or new; then first in the site's recent sizes. */
			uint32_t z = *cz++, k;
			int32_t zs;
			bad |= cz > ez;
			if (z < VRT_BATCH_MTF) {
				if (z >= site->nmtf)
					goto malformed;
				zs = site->mtf[z];
				k = z;
			} else if (z < VRT_BATCH_MTF + VRT_BATCH5_SIZES / 256) {
				zs = (int32_t)((z - VRT_BATCH_MTF) << 8 | *cl++);
				bad |= cl > el;
				if ((size_t)zs >= b->nsizes5)
					goto malformed;
				k = site->nmtf < VRT_BATCH_MTF ? site->nmtf
				                               : VRT_BATCH_MTF - 1;
			} else if (z == VRT_BATCH_NEWSIZE) {
				size = vrt_unpack_u(vrt_load_uv(&cn, &bad));
				bad |= cn > en;
				if ((zs = bsize5_define(b, size)) < 0)
					return vrt_load_nomem(f, err, "events");
				k = site->nmtf < VRT_BATCH_MTF ? site->nmtf
				                               : VRT_BATCH_MTF - 1;
			} else {
				goto malformed;
			}
			if (k == site->nmtf)
				site->nmtf++;
			mtf_front(site->mtf, k, (uint16_t)zs);
			size = b->sizes5[zs].size;
			if (c == VRT_BATCH_PAIR) {
				/* No address: its free's site follows. */
				uint64_t fc = vrt_load_uv(&cs[1], &bad);
				bad |= cs[1] > es[1];
				if (fc) {
					if (fc > b->nsites ||
					    b->sites[fc - 1].kind != 1)
						goto malformed;
					fs = &b->sites[fc - 1];
				} else {
					if (!(fs = bsite_define(b)))
						return vrt_load_nomem(f, err,
						                      "events");
					if (bsite_read(fs, &cd, ed, &bad, 1)) {
						why = "api id out of range";
						goto malformed;
					}
				}
				if (!pairs--)
					goto malformed;
				pair = 1;
			} else {
				int32_t cls = bclass_of(b, &b->sizes5[zs]);
				struct bclass *q;
				if (cls < 0)
					return vrt_load_nomem(f, err, "events");
				q = &b->classes[cls];
				if (!c) {
					addr = b->last_alloc +
					       (uint64_t)vrt_unpack_s(
					               vrt_load_uv(&cx, &bad));
					bad |= cx > ex;
				} else {
					uint32_t j;
					if (c > q->n)
						goto malformed;
					addr = q->lifo[(q->h - (uint32_t)c) %
					               VRT_BATCH_LIFO];
					/* The entries above it move down. */
					for (j = (uint32_t)c - 1; j-- > 0;)
						q->lifo[(q->h - 2 - j) %
						        VRT_BATCH_LIFO] =
						        q->lifo[(q->h - 1 - j) %
						                VRT_BATCH_LIFO];
					q->h = (q->h + VRT_BATCH_LIFO - 1) %
					       VRT_BATCH_LIFO;
					q->n--;
				}
				if (__builtin_expect(!b->ring, 0) &&
				    !(b->ring = malloc(VRT_BATCH_RING *
				                       sizeof(*b->ring))))
					return vrt_load_nomem(f, err, "events");
				b->ring[b->nalloc % VRT_BATCH_RING].addr = addr;
				b->ring[b->nalloc % VRT_BATCH_RING].zslot = cls;
				b->ring[b->nalloc % VRT_BATCH_RING].gen = q->gen;
				b->nalloc++;
				b->last_alloc = addr;
			}
		} else if (!kind) {
			int32_t zslot;
			uint64_t z = vrt_load_uv(&cz, &bad);
			if (z == 0) {
				if (!site->has_size)
					goto malformed;
				size = site->size;
				zslot = site->zslot;
			} else if (z == 1) {
				size = vrt_unpack_u(vrt_load_uv(&cz, &bad));
				zslot = -1;
				if (b->nsizes < VRT_BATCH_SIZES) {
					if (vrt_array_grow((void **)&b->sizes,
					                   &b->capsizes,
					                   b->nsizes + 1,
					                   sizeof(*b->sizes)))
						return vrt_load_nomem(f, err,
						                      "events");
					zslot = (int32_t)b->nsizes++;
					b->sizes[zslot].size = size;
					b->sizes[zslot].n = 0;
					b->sizes[zslot].h = 0;
				}
			} else {
				if (z - 2 >= b->nsizes)
					goto malformed;
				zslot = (int32_t)(z - 2);
				size = b->sizes[zslot].size;
			}
			bad |= cz > ez;
			site->size = size;
			site->zslot = zslot;
			site->has_size = 1;
			if (!c) {
				addr = b->last_alloc +
				       (uint64_t)vrt_unpack_s(
				               vrt_load_uv(&cx, &bad));
				bad |= cx > ex;
			} else {
				struct bsize *zs;
				uint32_t k;
				if (zslot < 0 || c > b->sizes[zslot].n)
					goto malformed;
				zs = &b->sizes[zslot];
				addr = zs->lifo[(zs->h - (uint32_t)c) %
				                VRT_BATCH_LIFO];
				/* The entries above it move down one. */
				for (k = (uint32_t)c - 1; k-- > 0;)
					zs->lifo[(zs->h - 2 - k) % VRT_BATCH_LIFO] =
					        zs->lifo[(zs->h - 1 - k) %
					                 VRT_BATCH_LIFO];
				zs->h = (zs->h + VRT_BATCH_LIFO - 1) %
				        VRT_BATCH_LIFO;
				zs->n--;
			}
			if (__builtin_expect(!b->ring, 0) &&
			    !(b->ring = malloc(VRT_BATCH_RING * sizeof(*b->ring))))
				return vrt_load_nomem(f, err, "events");
			b->ring[b->nalloc % VRT_BATCH_RING].addr = addr;
			b->ring[b->nalloc % VRT_BATCH_RING].zslot = zslot;
			b->nalloc++;
			b->last_alloc = addr;
		} else if (!c) {
			addr = b->last_free +
			       (uint64_t)vrt_unpack_s(vrt_load_uv(&cx, &bad));
			bad |= cx > ex;
			b->last_free = addr;
		} else {
			const struct bring *a;
			if (c > b->nalloc || c > VRT_BATCH_RING)
				goto malformed;
			a = &b->ring[(b->nalloc - c) % VRT_BATCH_RING];
			addr = a->addr;
			if (a->zslot >= 0) {
				/* Version 4: the size's list; 5: the class's,
				 * if its slot still holds that class. */
				uint32_t *zn = NULL, *zh = NULL;
				uint64_t *lifo = NULL;
				if (!v5) {
					struct bsize *q = &b->sizes[a->zslot];
					zn = &q->n, zh = &q->h, lifo = q->lifo;
				} else if (b->classes[a->zslot].gen == a->gen) {
					struct bclass *q = &b->classes[a->zslot];
					zn = &q->n, zh = &q->h, lifo = q->lifo;
				}
				if (lifo) {
					lifo[*zh % VRT_BATCH_LIFO] = addr;
					*zh = (*zh + 1) % VRT_BATCH_LIFO;
					*zn += *zn < VRT_BATCH_LIFO;
				}
			}
		}
		if (__builtin_expect(bad, 0))
			goto malformed;
		e = &out[n];
		e->ts = tsx;
		e->addr = pair ? 1 : addr; /* a pair: a REPEAT of one */
		e->size = size;
		e->aux = site->aux;
		e->proc = (uint32_t)f->proc;
		e->tid = r->tid;
		e->extra = pair ? fs->api : 0;
		e->api = site->api;
		e->kind = pair ? VRT_EV_REPEAT : kind ? VRT_EV_FREE : VRT_EV_ALLOC;
		e->flags = (uint8_t)(snap & (kind - 1) & (pair - 1));
		if (__builtin_expect(site->g_ok, 1)) {
			e->device = site->g_dev;
			e->stack = site->g_stack;
			e->phase = site->g_phase;
			e->phase_src = site->g_src;
		} else {
			e->device = site->device;
			e->stack = site->stack > UINT32_MAX ? 0
			                                    : (uint32_t)site->stack;
			e->phase = site->phase > UINT32_MAX ? UINT32_MAX
			                                    : (uint32_t)site->phase;
			e->phase_src = 0;
			if (vrt_load_resolve_fast(f, e)) {
				site->g_dev = e->device;
				site->g_stack = e->stack;
				site->g_phase = e->phase;
				site->g_src = e->phase_src;
				site->g_ok = 1;
			} else {
				st = vrt_load_tables_resolve(t, f, e, err);
				if (st)
					break;
			}
		}
		vrt_load_note_time(tsx, &last, &have_last, &late);
		prev = ts;
		i++;
		n++;
	}
	bc->c[1] = ct;
	bc->c[2] = cs[0];
	bc->c[3] = cs[1];
	bc->c[4] = cz;
	bc->c[5] = cl;
	bc->c[6] = cn;
	bc->c[ia] = ca[0];
	bc->c[ia + 1] = ca[1];
	bc->c[ia + 2] = cx;
	bc->c[ia + 3] = cd;
	bc->prev = prev;
	bc->i = i;
	bc->pairs = pairs;
	if (!st && i == bc->n) {
		if (pairs)
			goto malformed; /* fewer pairs than announced */
		bc->on = 0;
		*fin = 1;
	} else if (!st && !keyed) {
		/* The caller's buffer is full: the next event's time is the
		 * run's key (a column too short is found when it is read). */
		const uint8_t *q = ct;
		int64_t ts = prev;
		if (v5)
			ts = vrt_load_batch5_time(prev, vrt_load_uv(&q, &bad),
			                          unit);
		else
			(void)vrt_load_chunk_time(
			        &ts, vrt_load_batch_dt(vrt_load_uv(&q, &bad)));
		r->key = shift ? vrt_load_sat_add(ts, shift) : ts;
	}
	*lastp = last;
	*have_lastp = have_last;
	*latep += late;
	*np = n;
	return st;
malformed:
	*lastp = last;
	*have_lastp = have_last;
	*latep += late;
	*np = n;
	bc->on = 0;
	return vrt_load_rec_error_at(f, r->fb->frame_off, err,
	                    (uint64_t)(rec - r->fb->data), why);
}

/* emit_batch_v made once per version, so that neither loop tests it. */
enum vrt_load_status
vrt_load_batch_emit(struct vrt_trace *t, struct run *r, const uint8_t *rec,
           const uint8_t *p, const uint8_t *pe, int64_t clock,
           struct vrt_event *out, size_t max, size_t *np, int64_t lim, int eq,
           int64_t *lastp, int *have_lastp, uint64_t *latep, int *fin,
           struct vrt_load_error *err)
{
	if (r->f->version >= 5)
		return emit_batch_v(t, r, rec, p, pe, clock, out, max, np, lim,
		                    eq, lastp, have_lastp, latep, fin, err, 1);
	return emit_batch_v(t, r, rec, p, pe, clock, out, max, np, lim, eq,
	                    lastp, have_lastp, latep, fin, err, 0);
}

/* Frees the threads' BATCH states of f. */
void vrt_load_batch_free(struct lfile *f)
{
	for (size_t i = 0; i < f->nbst; i++) {
		free(f->bst[i]->sites);
		free(f->bst[i]->sizes);
		free(f->bst[i]->sizes5);
		free(f->bst[i]->classes);
		free(f->bst[i]->cmap);
		free(f->bst[i]->ring);
		free(f->bst[i]);
	}
	free(f->bst);
}
