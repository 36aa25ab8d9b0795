/*
 * attrib.c — the final phase of each allocation event (see attrib.h for
 * the order of precedence). Re-classification walks the shared stack table
 * once, forward: a stack's parent has a smaller index, so the best (lowest)
 * rule matching its path is min(rule of its own frame, best of its parent),
 * and each frame is matched once however many stacks share it. Inference
 * keeps the last free-memory probe per (process, thread, device) in a small
 * table. Pure, single-threaded, no globals.
 */
#include "attrib.h"

#include <stdlib.h>
#include <string.h>

#include "rules.h"
#include "vramtrace/trace_format.h"

#define UNKNOWN (-2) /* frame not matched yet */

static int is_attributable(const struct vrt_event *e)
{
	return e->kind == VRT_EV_ALLOC || e->kind == VRT_EV_FREE ||
	       e->kind == VRT_EV_MAP || e->kind == VRT_EV_UNMAP ||
	       e->kind == VRT_EV_FAIL;
}

/* Phase index of rule k (interned in t's table), cached per rule. */
static int rule_phase(struct vrt_trace *t, const struct vrt_rules *rules, int k,
                      int *cache, int ncache)
{
	unsigned id;
	const char *name;
	int g;

	if (k >= 0 && k < ncache && cache[k] >= 0)
		return cache[k];
	id = vrt_rules_phase(rules, k);
	if (id <= VRT_PHASE_BUILTIN_MAX) {
		g = (int)id;
	} else {
		name = vrt_rules_phase_name(rules, id);
		g = vrt_load_phase_intern(t, name ? name : "unattributed");
	}
	if (g >= 0 && k >= 0 && k < ncache)
		cache[k] = g;
	return g;
}

static int reclassify(struct vrt_trace *t, const struct vrt_rules *rules)
{
	int *frule = NULL, *srule = NULL, *cache = NULL, ncache, rc = -1;
	size_t i;

	ncache = vrt_rules_count(rules);
	if (ncache < 0)
		ncache = 0;
	frule = malloc((t->nframes ? t->nframes : 1) * sizeof(*frule));
	srule = malloc((t->nstacks ? t->nstacks : 1) * sizeof(*srule));
	cache = malloc(((size_t)ncache + 1) * sizeof(*cache));
	if (!frule || !srule || !cache)
		goto out;
	for (i = 0; i < t->nframes; i++)
		frule[i] = UNKNOWN;
	for (i = 0; i < (size_t)ncache; i++)
		cache[i] = -1;
	if (t->nstacks)
		srule[0] = VRT_RULE_NONE;
	for (i = 1; i < t->nstacks; i++) {
		const struct vrt_stack *st = &t->stacks[i];
		int best = st->parent < i ? srule[st->parent] : VRT_RULE_NONE;
		uint32_t fi = st->frame;
		if (fi && fi < t->nframes) {
			if (frule[fi] == UNKNOWN) {
				const struct vrt_frame *f = &t->frames[fi];
				struct vrt_rule_frame rf;
				rf.kind = f->kind;
				rf.function = vrt_load_str(t, f->function);
				rf.file = vrt_load_str(t, f->file);
				frule[fi] = vrt_rules_match(rules, &rf);
			}
			if (frule[fi] < best)
				best = frule[fi];
		}
		srule[i] = best;
	}
	for (i = 0; i < t->nev; i++) {
		struct vrt_event *e = &t->ev[i];
		int g;
		if (!is_attributable(e) || e->phase_src == VRT_SRC_ANNOTATION ||
		    !e->stack || e->stack >= t->nstacks ||
		    srule[e->stack] == VRT_RULE_NONE)
			continue;
		g = rule_phase(t, rules, srule[e->stack], cache, ncache);
		if (g < 0)
			goto out;
		e->phase = (uint32_t)g;
		e->phase_src = VRT_SRC_RULE;
	}
	rc = 0;
out:
	free(frule);
	free(srule);
	free(cache);
	return rc;
}

/* Device memory an engine would reserve a KV cache from (not managed:
 * it can live on the host). */
static int is_reserve_family(int fam)
{
	return fam == VRT_FAM_DEVICE || fam == VRT_FAM_ASYNC ||
	       fam == VRT_FAM_VMM;
}

/* The last probe of one (process, thread, device). */
struct probe {
	int64_t ts;
	uint64_t free_bytes; /* what the probe reported */
	uint32_t proc, tid;
	int32_t device;
};

#define NPROBES 64

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

static void infer(struct vrt_trace *t)
{
	struct probe probes[NPROBES];
	size_t n = 0, next = 0, i;

	for (i = 0; i < t->nev; i++) {
		struct vrt_event *e = &t->ev[i];
		struct probe *p;
		int fam = vrt_api_family(e->api);

		if (e->device < 0)
			continue;
		if (e->kind == VRT_EV_MEMINFO) {
			p = find_probe(probes, n, e);
			if (!p) {
				/* Full: the oldest-filled entry makes room. */
				p = &probes[n < NPROBES ? n++ : next];
				next = (next + 1) % NPROBES;
			}
			p->ts = e->ts;
			p->free_bytes = e->addr;
			p->proc = e->proc;
			p->tid = e->tid;
			p->device = e->device;
			continue;
		}
		if ((e->kind != VRT_EV_ALLOC && e->kind != VRT_EV_FAIL) ||
		    vrt_api_op(e->api) != VRT_OP_ALLOC ||
		    !is_reserve_family(fam))
			continue;
		if (e->phase || e->phase_src == VRT_SRC_ANNOTATION)
			continue;
		p = find_probe(probes, n, e);
		if (!p || e->ts - p->ts > VRT_ATTRIB_PROBE_WINDOW_NS ||
		    e->ts < p->ts)
			continue;
		if (e->size >= VRT_ATTRIB_LARGE_BYTES &&
		    e->size >= p->free_bytes / 4) {
			e->phase = VRT_LOAD_PHASE_INFERRED_KV;
			e->phase_src = VRT_SRC_INFERRED;
		}
	}
}

int vrt_attrib_run(struct vrt_trace *t, const struct vrt_rules *rules)
{
	if (rules && reclassify(t, rules))
		return -1;
	infer(t);
	return 0;
}
