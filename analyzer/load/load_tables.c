/*
 * load_tables.c — a trace file's own tables and how its ids become the
 * shared tables' indexes (a part of the loader: load.c's opening block
 * says how the whole works).
 *
 * Owns the per-file id maps (strings, frames, stacks, phases: ids are per
 * file), the DEVICE, STRING, FRAME, STACK and PHASE records that fill
 * them, the interning of the frames and call paths declared since the
 * last release into the tables shared by all files (intern.c), and the
 * resolution of a delivered event's device, stack and phase that the
 * file's caches cannot answer (vrt_load_tables_resolve; the cached answer
 * is vrt_load_resolve_fast in load_internal.h). Devices get global indexes
 * in order of first appearance; an id nothing declares resolves to "no
 * stack" (or the unknown frame), never an error.
 */
#include "load_internal.h"
#include "array.h"
#include "intern.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer call paths are cut at this depth (writers cap far below). */
#define VRT_LOAD_MAX_DEPTH 4096
/* Stack ids below this get a direct cache slot (writers number from 1). */
#define STACK_CACHE_MAX (1u << 20)

/* ---- per-file id tables --------------------------------------------- */

static size_t idtab_slot(const struct idtab *it, uint64_t id)
{
	size_t i = vrt_intern_mix64(id) & (it->cap - 1);
	while (it->val[i] && it->key[i] != id)
		i = (i + 1) & (it->cap - 1);
	return i;
}

/* Index stored for id, or -1. */
static int64_t idtab_get(const struct idtab *it, uint64_t id)
{
	size_t i;

	if (!it->n)
		return -1;
	i = idtab_slot(it, id);
	return it->val[i] ? (int64_t)it->val[i] - 1 : -1;
}

/* Adds id -> v unless id is there already (the first one wins). */
static int idtab_put(struct idtab *it, uint64_t id, uint32_t v)
{
	size_t i;

	if ((it->n + 1) * 10 > it->cap * 7) {
		size_t ncap = it->cap ? it->cap * 2 : 64, j;
		uint64_t *nk = calloc(ncap, sizeof(*nk));
		uint32_t *nv = calloc(ncap, sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		for (j = 0; j < it->cap; j++) {
			size_t k;
			if (!it->val[j])
				continue;
			k = vrt_intern_mix64(it->key[j]) & (ncap - 1);
			while (nv[k])
				k = (k + 1) & (ncap - 1);
			nk[k] = it->key[j];
			nv[k] = it->val[j];
		}
		free(it->key);
		free(it->val);
		it->key = nk;
		it->val = nv;
		it->cap = ncap;
	}
	i = idtab_slot(it, id);
	if (it->val[i])
		return 0;
	it->key[i] = id;
	it->val[i] = v + 1;
	it->n++;
	return 0;
}

static void idtab_free(struct idtab *it)
{
	free(it->key);
	free(it->val);
}

static void dcache_set(struct lfile *f, int vendor, int64_t ordinal, int32_t g)
{
	if ((vendor == VRT_VENDOR_CUDA || vendor == VRT_VENDOR_HIP) &&
	    ordinal >= 0 && ordinal < 64)
		f->dcache[vendor - 1][ordinal] = g + 1;
}

enum vrt_load_status vrt_load_tables_device(struct vrt_trace *t,
                                            struct lfile *f, struct cursor *c,
                                            uint64_t roff,
                                            struct vrt_load_error *err)
{
	struct vrt_process *pr = &t->procs[f->proc];
	const uint8_t *name, *uuid;
	size_t nname, nuuid, i;
	char ustr[64];
	uint64_t vendor, ordinal, total;
	int32_t g;

	vendor = vrt_load_get_u(c);
	ordinal = vrt_load_get_u(c);
	total = vrt_load_get_u(c);
	nname = vrt_load_get_str(c, &name);
	nuuid = vrt_load_get_str(c, &uuid);
	if (c->bad || ordinal > INT32_MAX)
		return vrt_load_rec_error(f, err, roff, "malformed DEVICE");
	vrt_intern_format_uuid(ustr, sizeof(ustr), (int)vendor, uuid, nuuid);
	g = vrt_intern_device(t, pr->host, vendor <= 255 ? (int)vendor : 0,
	                      (int64_t)ordinal, ustr);
	if (g < 0)
		return vrt_load_nomem(f, err, "device");
	if (vrt_intern_device_name(t, g, pr, vendor <= 255 ? (int)vendor : 0,
	                           total, name, nname))
		return vrt_load_nomem(f, err, "device");
	for (i = 0; i < f->ndevs; i++) {
		if (f->devs[i].ordinal == (int64_t)ordinal &&
		    (uint64_t)f->devs[i].vendor == vendor) {
			f->devs[i].global = g;
			dcache_set(f, (int)vendor, (int64_t)ordinal, g);
			return VRT_LOAD_OK;
		}
	}
	if (f->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
		return vrt_load_rec_error(f, err, roff, "too many devices");
	f->devs[f->ndevs].vendor = vendor <= 255 ? (int)vendor : 0;
	f->devs[f->ndevs].ordinal = (int64_t)ordinal;
	f->devs[f->ndevs].global = g;
	f->ndevs++;
	if (vendor <= 255)
		dcache_set(f, (int)vendor, (int64_t)ordinal, g);
	return VRT_LOAD_OK;
}

/* STRING, FRAME, STACK, PHASE: kept per file; frames and stacks are
 * interned at the next release. */
enum vrt_load_status vrt_load_tables_symbolic(struct vrt_trace *t,
                                           struct lfile *f, unsigned type,
                                           struct cursor *c, uint64_t roff,
                                           struct vrt_load_error *err)
{
	const uint8_t *s;
	size_t n;
	uint64_t id = vrt_load_get_u(c);
	int oom = 0;

	switch (type) {
	case VRT_REC_STRING: {
		uint32_t g;
		n = vrt_load_get_str(c, &s);
		if (c->bad)
			return vrt_load_rec_error(f, err, roff,
			                          "malformed STRING");
		g = vrt_intern_bytes(t, s, n, &oom);
		if (oom || idtab_put(&f->strs, id, g))
			break;
		return VRT_LOAD_OK;
	}
	case VRT_REC_FRAME: {
		struct file_frame fr;
		memset(&fr, 0, sizeof(fr));
		fr.id = id;
		fr.kind = (uint8_t)vrt_load_get_u(c);
		if (fr.kind == VRT_FRAME_NATIVE)
			fr.ip = vrt_load_get_u(c);
		fr.a = vrt_load_get_u(c);
		fr.b = vrt_load_get_u(c);
		fr.c = vrt_load_get_u(c);
		if (c->bad || fr.kind > VRT_FRAME_PYTHON)
			return vrt_load_rec_error(f, err, roff,
			                          "malformed FRAME");
		if (f->nffr >= UINT32_MAX - 1 ||
		    vrt_array_grow((void **)&f->ffr, &f->capffr, f->nffr + 1,
		                   sizeof(*f->ffr)) ||
		    idtab_put(&f->frames, id, (uint32_t)f->nffr))
			break;
		f->ffr[f->nffr++] = fr;
		return VRT_LOAD_OK;
	}
	case VRT_REC_STACK: {
		struct file_stack st;
		memset(&st, 0, sizeof(st));
		st.id = id;
		st.parent = vrt_load_get_u(c);
		st.frame = vrt_load_get_u(c);
		st.phase = vrt_load_get_u(c);
		if (c->bad || id == 0)
			return vrt_load_rec_error(f, err, roff,
			                          "malformed STACK");
		if (f->nfst >= UINT32_MAX - 1 ||
		    vrt_array_grow((void **)&f->fst, &f->capfst, f->nfst + 1,
		                   sizeof(*f->fst)) ||
		    idtab_put(&f->stacks, id, (uint32_t)f->nfst))
			break;
		f->fst[f->nfst++] = st;
		return VRT_LOAD_OK;
	}
	case VRT_REC_PHASE: {
		char *name;
		int g;
		n = vrt_load_get_str(c, &s);
		if (c->bad)
			return vrt_load_rec_error(f, err, roff,
			                          "malformed PHASE");
		/* Fixed ids keep their names whatever a record says. */
		if (id <= VRT_PHASE_BUILTIN_MAX)
			return VRT_LOAD_OK;
		name = vrt_load_dup_bytes(s, n);
		if (!name)
			break;
		g = vrt_intern_phase(t, name[0] ? name : "(unnamed)");
		free(name);
		if (g < 0 || idtab_put(&f->phases, id, (uint32_t)g))
			break;
		return VRT_LOAD_OK;
	}
	}
	return vrt_load_nomem(f, err, "stacks");
}

/* ---- delivery: symbols and devices ------------------------------------ */

static uint32_t file_string(const struct lfile *f, uint64_t id)
{
	int64_t i;

	if (!id)
		return 0;
	i = idtab_get(&f->strs, id);
	return i < 0 ? 0 : (uint32_t)i;
}

/* The shared phase index of a file's phase id; an undeclared custom id
 * becomes "phase-N". -1 on ENOMEM. */
static int file_phase(struct vrt_trace *t, struct lfile *f, unsigned id)
{
	int64_t i;
	char name[32];

	if (id <= VRT_PHASE_BUILTIN_MAX)
		return (int)id;
	if (id < PHASE_CACHE && f->pcache[id])
		return (int)f->pcache[id] - 1;
	i = idtab_get(&f->phases, id);
	if (i >= 0) {
		if (id < PHASE_CACHE)
			f->pcache[id] = (uint32_t)i + 1;
		return (int)i;
	}
	snprintf(name, sizeof(name), "phase-%u", id);
	return vrt_intern_phase(t, name);
}

/* Shared stack index of file stack k, interning its path outermost
 * first. A parent nothing declares, a cycle, or a path deeper than
 * VRT_LOAD_MAX_DEPTH ends the path there (as if at the root). */
static int resolve_stack(struct vrt_trace *t, struct lfile *f, size_t k,
                         size_t *chain)
{
	size_t len = 0, j = k;
	uint32_t base = 0;
	int oom = 0;

	for (;;) {
		struct file_stack *st = &f->fst[j];
		int64_t p;
		if (st->state == 2) {
			base = st->g;
			break;
		}
		if (st->state == 1 || len == VRT_LOAD_MAX_DEPTH)
			break;
		st->state = 1;
		chain[len++] = j;
		if (!st->parent)
			break;
		p = idtab_get(&f->stacks, st->parent);
		if (p < 0)
			break;
		j = (size_t)p;
	}
	while (len) {
		struct file_stack *st = &f->fst[chain[--len]];
		int64_t fi = idtab_get(&f->frames, st->frame);
		uint32_t frame = fi < 0 ? 0 : f->ffr[fi].g;
		base = vrt_intern_stack(t, base, frame, &oom);
		if (oom)
			return -1;
		st->g = base;
		st->state = 2;
	}
	return 0;
}

struct idseq {
	uint64_t id;
	size_t seq;
};

static int cmp_idseq(const void *pa, const void *pb)
{
	const struct idseq *a = pa, *b = pb;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Interns the frames, then the stacks, declared since the last release,
 * each in (id, order of appearance) order — at the end of a file without
 * watermarks, exactly the order a whole-file reader uses. */
enum vrt_load_status vrt_load_tables_intern(struct vrt_trace *t,
                                               struct lfile *f,
                                               struct vrt_load_error *err)
{
	size_t n = f->nffr - f->ffr_done, m = f->nfst - f->fst_done, i;
	size_t cap = n > m ? n : m;
	struct idseq *ord;
	size_t *chain = NULL;
	int oom = 0;

	if (!cap)
		return VRT_LOAD_OK;
	ord = malloc(cap * sizeof(*ord));
	if (!ord)
		return vrt_load_nomem(f, err, "stacks");
	for (i = 0; i < n; i++) {
		ord[i].id = f->ffr[f->ffr_done + i].id;
		ord[i].seq = f->ffr_done + i;
	}
	if (n > 1)
		qsort(ord, n, sizeof(*ord), cmp_idseq);
	for (i = 0; i < n; i++) {
		struct file_frame *ff = &f->ffr[ord[i].seq];
		struct vrt_frame fr;
		memset(&fr, 0, sizeof(fr));
		fr.kind = ff->kind;
		fr.file = file_string(f, ff->a);
		fr.function = file_string(f, ff->b);
		if (ff->kind == VRT_FRAME_PYTHON) {
			fr.line = ff->c;
		} else {
			fr.offset = ff->c;
			/* Without a symbol the address is all there is
			 * (and it only matches within one process). */
			if (!fr.function)
				fr.ip = ff->ip;
		}
		ff->g = vrt_intern_frame(t, &fr, &oom);
		if (oom)
			goto nomem;
	}
	f->ffr_done = f->nffr;
	if (m) {
		for (i = 0; i < m; i++) {
			ord[i].id = f->fst[f->fst_done + i].id;
			ord[i].seq = f->fst_done + i;
		}
		if (m > 1)
			qsort(ord, m, sizeof(*ord), cmp_idseq);
		chain = malloc((f->nfst < VRT_LOAD_MAX_DEPTH
		                        ? f->nfst
		                        : VRT_LOAD_MAX_DEPTH) *
		               sizeof(*chain));
		if (!chain)
			goto nomem;
		for (i = 0; i < m; i++)
			if (f->fst[ord[i].seq].state != 2 &&
			    resolve_stack(t, f, ord[i].seq, chain))
				goto nomem;
		f->fst_done = f->nfst;
	}
	free(chain);
	free(ord);
	return VRT_LOAD_OK;
nomem:
	free(chain);
	free(ord);
	return vrt_load_nomem(f, err, "stacks");
}

/* What the file's stack id sid resolves to ({0, 0}: no stack). */
static struct stack_res stack_lookup(struct lfile *f, uint32_t sid)
{
	struct stack_res r = {0, 0};
	int64_t k;

	if (sid < f->scap && f->scache[sid].g1)
		return f->scache[sid];
	k = idtab_get(&f->stacks, sid);
	if (k < 0 || f->fst[k].state != 2)
		return r; /* not declared (yet): no stack */
	r.g1 = f->fst[k].g + 1;
	r.phase = vrt_phase_id(f->fst[k].phase);
	if (sid < STACK_CACHE_MAX) {
		if (sid >= f->scap) {
			size_t ncap = f->scap ? f->scap : 1024;
			struct stack_res *nc;
			while (ncap <= sid)
				ncap *= 2;
			nc = realloc(f->scache, ncap * sizeof(*nc));
			if (!nc)
				return r; /* only a cache: go without */
			memset(nc + f->scap, 0,
			       (ncap - f->scap) * sizeof(*nc));
			f->scache = nc;
			f->scap = ncap;
		}
		f->scache[sid] = r;
	}
	return r;
}

/* Maps an event's raw ordinal to a global device (created when no DEVICE
 * record described it). */
static enum vrt_load_status map_device(struct vrt_trace *t, struct lfile *f,
                                       struct vrt_event *e, int vendor,
                                       struct vrt_load_error *err)
{
	int32_t g = -1;
	size_t j;

	for (j = 0; j < f->ndevs; j++) {
		if (f->devs[j].ordinal == e->device &&
		    f->devs[j].vendor == vendor) {
			g = f->devs[j].global;
			break;
		}
	}
	if (g < 0) {
		/* An ordinal no DEVICE record described. */
		if (f->ndevs == VRT_LOAD_MAX_FILE_DEVICES)
			return vrt_load_fail(err, VRT_LOAD_ERR_RECORD, f->name,
			                     "too many devices");
		g = vrt_intern_device(t, t->procs[f->proc].host, vendor,
		                      e->device, "");
		if (g < 0)
			return vrt_load_nomem(f, err, "devices");
		f->devs[f->ndevs].vendor = vendor;
		f->devs[f->ndevs].ordinal = e->device;
		f->devs[f->ndevs].global = g;
		f->ndevs++;
	}
	dcache_set(f, vendor, e->device, g);
	e->device = g;
	return VRT_LOAD_OK;
}

/*
 * Gives a delivered event its global device, stack and phase: an
 * annotation stands; otherwise the STACK record's phase (the writer's
 * rules); otherwise the event's own field; else unattributed. cmd_analyze
 * may re-classify later (attrib.c). The common cases are the caches'; the
 * rest goes to vrt_load_tables_resolve.
 */
enum vrt_load_status vrt_load_tables_resolve(struct vrt_trace *t,
                                             struct lfile *f,
                                             struct vrt_event *e,
                                             struct vrt_load_error *err)
{
	if (e->device >= 0) {
		int vendor = vrt_api_vendor(e->api);
		int32_t g1 = e->device < 64 ? f->dcache[vendor - 1][e->device]
		                            : 0;
		if (g1) {
			e->device = g1 - 1;
		} else {
			enum vrt_load_status st =
			        map_device(t, f, e, vendor, err);
			if (st)
				return st;
		}
	} else {
		e->device = -1;
	}
	if (e->kind <= VRT_EV_FAIL || e->kind == VRT_EV_REPEAT) {
		unsigned src = vrt_phase_source(e->phase);
		unsigned id = vrt_phase_id(e->phase);
		struct stack_res sr = {0, 0};
		int g;

		if (e->stack)
			sr = stack_lookup(f, e->stack);
		e->stack = sr.g1 ? sr.g1 - 1 : 0;
		if (src != VRT_SRC_ANNOTATION) {
			if (sr.g1 && sr.phase)
				id = sr.phase;
			src = VRT_SRC_RULE;
		}
		g = id ? file_phase(t, f, id) : 0;
		if (g < 0)
			return vrt_load_nomem(f, err, "stacks");
		e->phase = (uint32_t)g;
		e->phase_src = (uint8_t)(g ? src : VRT_SRC_RULE);
	}
	return VRT_LOAD_OK;
}

/* Frees f's id tables, its frames and stacks, and its stack cache. */
void vrt_load_tables_free(struct lfile *f)
{
	idtab_free(&f->strs);
	idtab_free(&f->frames);
	idtab_free(&f->stacks);
	idtab_free(&f->phases);
	free(f->ffr);
	free(f->fst);
	free(f->scache);
}
