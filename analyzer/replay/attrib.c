/*
 * attrib.c — the final phase of each allocation event (see attrib.h for
 * the order of precedence), one batch of the event stream at a time.
 * Re-classification is lazy and per stack: the first event naming a stack
 * computes its best (lowest) rule as min(rule of its own frame, best of
 * its parent) — a parent has a smaller index, so the walk up the path
 * stops at the first stack already known — and each frame is matched
 * once however many stacks share it. The caches grow with the stack and
 * frame tables as the stream brings new entries. Inference keeps the last
 * free-memory probe per (process, thread, device) in a small table. Pure,
 * single-threaded, no globals.
 */
#include "attrib.h"

#include <stdlib.h>
#include <string.h>

#include "load/intern.h"
#include "rules.h"
#include "vramtrace/trace_format.h"

#define UNKNOWN (-2) /* frame or stack not matched yet */

#define NPROBES 64

/* The last probe of one (process, thread, device). */
struct probe {
	int64_t ts;
	uint64_t free_bytes; /* what the probe reported */
	uint32_t proc, tid;
	int32_t device;
};

struct vrt_attrib {
	const struct vrt_rules *rules;
	int *frule;  /* per frame: first matching rule, or UNKNOWN */
	size_t nframes;
	int *srule;  /* per stack: best rule of its path, or UNKNOWN */
	size_t nstacks;
	int *cache;  /* per rule: its phase index in t's table, or -1 */
	int ncache;
	uint32_t *walk; /* stacks on the way up to a known one */
	size_t nwalk;
	struct probe probes[NPROBES];
	size_t nprobes, next;
};

/* The kinds the rules re-classify, one bit each (kinds are below 32). */
#define ATTRIBUTABLE                                                           \
	(1u << VRT_EV_ALLOC | 1u << VRT_EV_FREE | 1u << VRT_EV_MAP |          \
	 1u << VRT_EV_UNMAP | 1u << VRT_EV_FAIL | 1u << VRT_EV_REPEAT)

static inline int is_attributable(const struct vrt_event *e)
{
	return e->kind < 32 && (ATTRIBUTABLE >> e->kind & 1);
}

/* Whether step 4 can touch e: a probe, or an allocation large enough
 * (infer's first tests, cheap enough to run on every event). */
static inline int may_infer(const struct vrt_event *e)
{
	return __builtin_expect(e->kind == VRT_EV_MEMINFO ||
	                                e->size >= VRT_ATTRIB_LARGE_BYTES,
	                        0);
}

/* Phase index of rule k (interned in t's table), cached per rule. */
static int rule_phase(struct vrt_attrib *a, struct vrt_trace *t, int k)
{
	unsigned id;
	const char *name;
	int g;

	if (k >= 0 && k < a->ncache && a->cache[k] >= 0)
		return a->cache[k];
	id = vrt_rules_phase(a->rules, k);
	if (id <= VRT_PHASE_BUILTIN_MAX) {
		g = (int)id;
	} else {
		name = vrt_rules_phase_name(a->rules, id);
		g = vrt_intern_phase(t, name ? name : "unattributed");
	}
	if (g >= 0 && k >= 0 && k < a->ncache)
		a->cache[k] = g;
	return g;
}

/* Grows a per-entry cache of ints to n entries, new ones UNKNOWN. */
static int grow_ints(int **v, size_t *have, size_t n)
{
	size_t cap = *have ? *have : 256, i;
	int *nv;

	if (n <= *have)
		return 0;
	while (cap < n)
		cap *= 2;
	nv = realloc(*v, cap * sizeof(*nv));
	if (!nv)
		return -1;
	for (i = *have; i < cap; i++)
		nv[i] = UNKNOWN;
	*v = nv;
	*have = cap;
	return 0;
}

static int frame_rule(struct vrt_attrib *a, const struct vrt_trace *t,
                      uint32_t fi)
{
	const struct vrt_frame *f;
	struct vrt_rule_frame rf;

	if (!fi || fi >= t->nframes)
		return VRT_RULE_NONE;
	if (fi >= a->nframes && grow_ints(&a->frule, &a->nframes, fi + 1))
		return UNKNOWN;
	if (a->frule[fi] != UNKNOWN)
		return a->frule[fi];
	f = &t->frames[fi];
	rf.kind = f->kind;
	rf.function = vrt_load_str(t, f->function);
	rf.file = vrt_load_str(t, f->file);
	a->frule[fi] = vrt_rules_match(a->rules, &rf);
	return a->frule[fi];
}

/* Best rule of stack si (< t->nstacks, cache grown to cover it), or
 * UNKNOWN when out of memory. */
static int stack_rule(struct vrt_attrib *a, const struct vrt_trace *t,
                      uint32_t si)
{
	size_t n = 0;
	uint32_t cur = si;
	int best;

	/* Up to the first known stack (or the root). */
	while (cur && a->srule[cur] == UNKNOWN) {
		if (n == a->nwalk) {
			size_t nc = a->nwalk ? a->nwalk * 2 : 64;
			uint32_t *nw = realloc(a->walk, nc * sizeof(*nw));
			if (!nw)
				return UNKNOWN;
			a->walk = nw;
			a->nwalk = nc;
		}
		a->walk[n++] = cur;
		/* Parents have smaller indexes; anything else ends the path. */
		cur = t->stacks[cur].parent < cur ? t->stacks[cur].parent : 0;
	}
	best = cur ? a->srule[cur] : VRT_RULE_NONE;
	while (n--) {
		int fr = frame_rule(a, t, t->stacks[a->walk[n]].frame);
		if (fr == UNKNOWN)
			return UNKNOWN;
		if (fr < best)
			best = fr;
		a->srule[a->walk[n]] = best;
	}
	return best;
}

/* Device memory an engine would reserve a KV cache from (not managed:
 * it can live on the host). */
static int is_reserve_family(int fam)
{
	return fam == VRT_FAM_DEVICE || fam == VRT_FAM_ASYNC ||
	       fam == VRT_FAM_VMM;
}


static struct probe *find_probe(struct probe *p, size_t n,
                                const struct vrt_event *e)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i].proc == e->proc && p[i].tid == e->tid &&
		    p[i].device == e->device)
			return &p[i];
	return NULL;
}

/* Step 4 for one event (after the rules). */
static void infer(struct vrt_attrib *a, struct vrt_event *e)
{
	struct probe *p;

	if (e->device < 0)
		return;
	if (e->kind == VRT_EV_MEMINFO) {
		p = find_probe(a->probes, a->nprobes, e);
		if (!p) {
			/* Full: the oldest-filled entry makes room. */
			p = &a->probes[a->nprobes < NPROBES ? a->nprobes++
			                                    : a->next];
			a->next = (a->next + 1) % NPROBES;
		}
		p->ts = e->ts;
		p->free_bytes = e->addr;
		p->proc = e->proc;
		p->tid = e->tid;
		p->device = e->device;
		return;
	}
	if (!a->nprobes || e->size < VRT_ATTRIB_LARGE_BYTES)
		return;
	if ((e->kind != VRT_EV_ALLOC && e->kind != VRT_EV_FAIL &&
	     e->kind != VRT_EV_REPEAT) ||
	    vrt_api_op(e->api) != VRT_OP_ALLOC ||
	    !is_reserve_family(vrt_api_family(e->api)))
		return;
	if (e->phase || e->phase_src == VRT_SRC_ANNOTATION)
		return;
	p = find_probe(a->probes, a->nprobes, e);
	if (!p || e->ts - p->ts > VRT_ATTRIB_PROBE_WINDOW_NS || e->ts < p->ts)
		return;
	if (e->size >= p->free_bytes / 4) {
		e->phase = VRT_LOAD_PHASE_INFERRED_KV;
		e->phase_src = VRT_SRC_INFERRED;
	}
}

struct vrt_attrib *vrt_attrib_new(const struct vrt_trace *t,
                                  const struct vrt_rules *rules)
{
	struct vrt_attrib *a = calloc(1, sizeof(*a));
	int i;

	(void)t;
	if (!a)
		return NULL;
	a->rules = rules;
	if (!rules)
		return a;
	a->ncache = vrt_rules_count(rules);
	if (a->ncache < 0)
		a->ncache = 0;
	a->cache = malloc(((size_t)a->ncache + 1) * sizeof(*a->cache));
	if (!a->cache) {
		free(a);
		return NULL;
	}
	for (i = 0; i < a->ncache; i++)
		a->cache[i] = -1;
	return a;
}

int vrt_attrib_feed(struct vrt_attrib *a, struct vrt_trace *t,
                    struct vrt_event *ev, size_t n)
{
	size_t i;

	if (!a->rules) {
		/* Step 4 only: most events are neither probes nor large. */
		for (i = 0; i < n; i++)
			if (may_infer(&ev[i]))
				infer(a, &ev[i]);
		return 0;
	}
	if (t->nstacks > a->nstacks &&
	    grow_ints(&a->srule, &a->nstacks, t->nstacks))
		return -1;
	for (i = 0; i < n; i++) {
		struct vrt_event *e = &ev[i];
		int k, g;

		if (e->stack && e->stack < t->nstacks &&
		    e->phase_src != VRT_SRC_ANNOTATION && is_attributable(e)) {
			k = a->srule[e->stack];
			if (k == UNKNOWN) {
				k = stack_rule(a, t, e->stack);
				if (k == UNKNOWN)
					return -1;
			}
			if (k != VRT_RULE_NONE) {
				g = k < a->ncache && a->cache[k] >= 0
				            ? a->cache[k]
				            : rule_phase(a, t, k);
				if (g < 0)
					return -1;
				e->phase = (uint32_t)g;
				e->phase_src = VRT_SRC_RULE;
			}
		}
		if (may_infer(e))
			infer(a, e);
	}
	return 0;
}

int vrt_attrib_stack_rule(struct vrt_attrib *a, const struct vrt_trace *t,
                          uint32_t stack)
{
	int k;

	if (!a->rules || !stack || stack >= t->nstacks)
		return VRT_RULE_NONE;
	if (t->nstacks > a->nstacks &&
	    grow_ints(&a->srule, &a->nstacks, t->nstacks))
		return -1;
	k = a->srule[stack];
	if (k == UNKNOWN)
		k = stack_rule(a, t, stack);
	return k == UNKNOWN ? -1 : k;
}

void vrt_attrib_free(struct vrt_attrib *a)
{
	if (!a)
		return;
	free(a->frule);
	free(a->srule);
	free(a->cache);
	free(a->walk);
	free(a);
}
