/*
 * plan_predict.c — one prediction (vrt_plan_predict): the row's devices,
 * the terms every engine shares (other processes, one request's and the
 * requests' activations, the loading batch's, the KV cache in tokens,
 * sharded weights), the explanation lines, and the verdict of the row
 * (judge: each device's ladder against its capacity). The engine's own
 * sizing of the KV cache is plan_rules.c's. Pure, single-threaded: writes
 * only the row and its explanation.
 */
#include "plan_internal.h"
#include "diagnose/diagnose.h"
#include "diagnose/engine.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- one prediction ------------------------------------------------------ */

void vrt_plan_predict_say(struct pctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->ex || c->ex->n >= VRT_PLAN_MAX_EXPLAIN)
		return;
	va_start(ap, fmt);
	vsnprintf(c->ex->line[c->ex->n++], sizeof(c->ex->line[0]), fmt, ap);
	va_end(ap);
}

void vrt_plan_predict_note(struct pctx *c, int term, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->row->note[term], VRT_PLAN_NOTE, fmt, ap);
	va_end(ap);
}

int vrt_plan_predict_has(const struct pctx *c, int k)
{
	return (c->have >> k) & 1;
}

/* Whether the configuration changes knob k from the recorded value (an
 * unknown recorded value counts as a change). */
int vrt_plan_predict_changed(const struct pctx *c, int k)
{
	const struct vrt_plan *p = c->p;

	if (!vrt_plan_predict_has(c, k))
		return 0;
	return !(p->rec_have & (1u << k)) || p->rec[k] != c->k[k];
}

const char *vrt_plan_predict_flagname(const struct pctx *c, int k)
{
	return c->p->spelling[k] ? c->p->spelling[k] : vrt_plan_knob_name(k);
}

void vrt_plan_predict_refuse(struct pctx *c, int brk, const char *fmt, ...)
{
	va_list ap;

	if (c->row->brk == VRT_PLAN_BREAK_REFUSED ||
	    c->row->brk == VRT_PLAN_BREAK_DEVICES)
		return; /* the first refusal is the reason */
	c->row->fit = VRT_PLAN_NO;
	c->row->brk = brk;
	va_start(ap, fmt);
	vsnprintf(c->row->reason, sizeof(c->row->reason), fmt, ap);
	va_end(ap);
	vrt_plan_predict_say(c, "=> %s", c->row->reason);
}

void vrt_plan_predict_set_term(struct vrt_plan_device *d, int term,
                               uint64_t bytes, int source, int held)
{
	d->term[term].bytes = source == VRT_PLAN_SRC_UNKNOWN ? 0 : bytes;
	d->term[term].source = source;
	d->term[term].held = held;
}

/* x * num / den without overflow for budgets (below 2^64 / 2^20). */
uint64_t vrt_plan_predict_scale(uint64_t x, uint64_t num, uint64_t den)
{
	if (!den)
		return x;
	return (uint64_t)((long double)x * (long double)num / (long double)den);
}

/* The devices of a prediction: the recorded ones, or with another
 * tensor-parallel degree the first tp of the run's inventory, each with
 * the template device's measurements. Returns the number. */
size_t vrt_plan_predict_rank_devices(struct pctx *c, uint64_t tp)
{
	const struct vrt_plan *p = c->p;
	struct vrt_plan_row *row = c->row;
	size_t i;

	if (!vrt_plan_predict_changed(c, VRT_PLAN_PARALLEL) || !tp) {
		row->ndev = p->ndev;
		for (i = 0; i < p->ndev; i++) {
			row->dev[i].device = p->dev[i].device;
			row->dev[i].capacity = p->dev[i].capacity;
			row->dev[i].other = p->dev[i].other;
		}
		return row->ndev;
	}
	if (tp > p->inventory || tp > VRT_PLAN_MAX_DEVICES) {
		row->ndev = 0;
		vrt_plan_predict_refuse(
		        c, VRT_PLAN_BREAK_DEVICES,
		        "%s %" PRIu64 " needs %" PRIu64
		        " devices; the run's driver reported %zu",
		        vrt_plan_predict_flagname(c, VRT_PLAN_PARALLEL), tp, tp,
		        p->inventory);
		return 0;
	}
	row->ndev = (size_t)tp;
	for (i = 0; i < tp; i++) {
		size_t k;
		row->dev[i].device = (int32_t)i;
		/* a device the run measured keeps its own capacity and
		 * other processes; the others are taken to be like the
		 * template (the same card, nothing else on it) */
		row->dev[i].capacity = p->dev[p->template_dev].capacity;
		row->dev[i].other = 0;
		for (k = 0; k < p->ndev; k++)
			if (p->dev[k].device == (int32_t)i) {
				row->dev[i].capacity = p->dev[k].capacity;
				row->dev[i].other = p->dev[k].other;
			}
	}
	return row->ndev;
}

/* The measurements a predicted device takes: its own when the devices
 * are the recorded ones, else the template's. */
const struct vrt_plan_measure *vrt_plan_predict_measure_of(const struct pctx *c,
                                                           size_t i)
{
	const struct vrt_plan *p = c->p;

	if (!vrt_plan_predict_changed(c, VRT_PLAN_PARALLEL) && i < p->ndev)
		return &p->dev[i];
	return &p->dev[p->template_dev];
}

/* One request's activations on device m: its own growth alone, else the
 * average of the requests in flight at its peak. */
uint64_t vrt_plan_predict_per_request(const struct vrt_plan *p,
                                      const struct vrt_plan_measure *m,
                                      uint32_t nrec)
{
	if (m->have_single && m->single)
		return m->single;
	/* none alone, or the one alone was served from cached memory: the
	 * average of those in flight at the peak */
	if (nrec && m->demand_peak > m->residue)
		return (m->demand_peak - m->residue) / nrec;
	return m->single;
}

/* The requests the configuration has in flight: the run's traffic,
 * capped by the engine's concurrency setting. */
uint32_t vrt_plan_predict_inflight_of(struct pctx *c, uint64_t cap,
                                      int have_cap)
{
	uint32_t n = c->p->load;

	if (have_cap && cap < n)
		n = (uint32_t)cap;
	return n;
}

/* The in-flight term of device i: n requests of one request's growth,
 * scaled to the ranks (activations are sharded like the weights: an
 * assumption). */
void vrt_plan_predict_requests_term(struct pctx *c, size_t i, uint32_t n,
                                    uint64_t num, uint64_t den, uint64_t cap,
                                    int have_cap)
{
	const struct vrt_plan *p = c->p;
	const struct vrt_plan_measure *m = vrt_plan_predict_measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];
	uint32_t nrec = vrt_plan_predict_inflight_of(
	        c, p->rec[VRT_PLAN_CONCURRENCY],
	        (p->rec_have >> VRT_PLAN_CONCURRENCY) & 1);
	uint64_t a = vrt_plan_predict_scale(
	        vrt_plan_predict_per_request(p, m, nrec), num, den);
	uint64_t bytes = (uint64_t)n * a;
	int src = num == den ? VRT_PLAN_SRC_MEASURED : VRT_PLAN_SRC_ASSUMPTION;

	if (!p->serving) {
		vrt_plan_predict_set_term(d, VRT_PLAN_REQUESTS, 0,
		                          VRT_PLAN_SRC_UNKNOWN, 1);
		return;
	}
	if (have_cap && bytes > cap) {
		bytes = cap;
		src = VRT_PLAN_SRC_RULE;
	}
	/* requests that grew nothing were served from cached memory, which
	 * is known to suffice only up to the recorded number in flight */
	if (!a && n > nrec && m->demand_peak <= m->residue)
		src = VRT_PLAN_SRC_UNKNOWN;
	vrt_plan_predict_set_term(d, VRT_PLAN_REQUESTS, bytes, src, 1);
	if (i == 0)
		vrt_plan_predict_say(
		        c,
		        "requests: %" PRIu32 " in flight (the run's %" PRIu32
		        "%s) x %s each%s = %s%s",
		        n, p->load,
		        n < p->load ? ", capped by the setting" : "", gib(a),
		        num != den ? " (scaled to the ranks)" : "", gib(bytes),
		        have_cap && bytes == cap ? " (capped)" : "");
}

/* The fixed rest: communicators and what loading left in the
 * per-request phases, held as measured; going from one rank to several
 * the communicators are unknown, from several to one there are none. */
void vrt_plan_predict_other_term(struct pctx *c, size_t i, uint64_t tp_r,
                                 uint64_t tp)
{
	const struct vrt_plan_measure *m = vrt_plan_predict_measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];

	if (tp > 1 && tp_r <= 1)
		vrt_plan_predict_set_term(d, VRT_PLAN_OTHER, m->residue,
		                          VRT_PLAN_SRC_UNKNOWN, 1);
	else if (tp == 1 && tp_r > 1)
		vrt_plan_predict_set_term(d, VRT_PLAN_OTHER, m->residue,
		                          VRT_PLAN_SRC_RULE, 1);
	else
		vrt_plan_predict_set_term(d, VRT_PLAN_OTHER,
		                          m->comm + m->residue,
		                          VRT_PLAN_SRC_MEASURED, 1);
}

/* KV tokens and sequences from the model: kv bytes per rank on tp ranks,
 * sequences of ctx tokens in blocks. */
void vrt_plan_predict_kv_tokens(struct pctx *c, uint64_t kv, uint64_t tp,
                                uint64_t ctx, uint64_t block)
{
	const struct vrt_plan *p = c->p;
	struct vrt_plan_row *row = c->row;
	uint64_t seq, all;

	if (!p->have_model || !ctx)
		return;
	seq = vrt_model_seq_bytes(&p->model, ctx, block, tp);
	all = kv * (tp ? tp : 1);
	if (!seq)
		return;
	row->have_tokens = 1;
	row->max_concurrency = all / seq;
	row->kv_tokens = (uint64_t)((long double)all * ctx / seq);
	vrt_plan_predict_say(c,
	                     "KV tokens: %s x %" PRIu64
	                     " ranks / %s per sequence of %" PRIu64
	                     " tokens (model, blocks of %" PRIu64 ") = %" PRIu64
	                     " sequences, %" PRIu64 " tokens",
	                     gib(kv), tp ? tp : 1, gib(seq), ctx, block,
	                     row->max_concurrency, row->kv_tokens);
}

/* The tensor-parallel degree the run had, and the configuration's. */
uint64_t vrt_plan_predict_tp_recorded(const struct vrt_plan *p)
{
	return p->rec[VRT_PLAN_PARALLEL] ? p->rec[VRT_PLAN_PARALLEL] : 1;
}

uint64_t vrt_plan_predict_tp_of(const struct pctx *c)
{
	return vrt_plan_predict_has(c, VRT_PLAN_PARALLEL) &&
	                       c->k[VRT_PLAN_PARALLEL]
	               ? c->k[VRT_PLAN_PARALLEL]
	               : vrt_plan_predict_tp_recorded(c->p);
}

/* The loading batch's activations (a profile run, a warm-up) at the
 * configuration from bytes measured at the recorded settings: linear in
 * the batch tokens (the rule: a forward pass of that many tokens),
 * divided over the ranks like the weights (an assumption). *src is the
 * measurement's source on entry. */
uint64_t vrt_plan_predict_batch_activations(const struct pctx *c,
                                            uint64_t bytes, uint64_t tp_r,
                                            uint64_t tp, int *src)
{
	const struct vrt_plan *p = c->p;

	if (vrt_plan_predict_changed(c, VRT_PLAN_BATCH_TOKENS)) {
		if ((p->rec_have >> VRT_PLAN_BATCH_TOKENS) & 1 &&
		    *src != VRT_PLAN_SRC_RULE) {
			bytes = vrt_plan_predict_scale(
			        bytes, c->k[VRT_PLAN_BATCH_TOKENS],
			        p->rec[VRT_PLAN_BATCH_TOKENS]);
			*src = VRT_PLAN_SRC_RULE;
		} else {
			*src = VRT_PLAN_SRC_UNKNOWN;
		}
	}
	if (tp != tp_r && *src == VRT_PLAN_SRC_MEASURED)
		*src = VRT_PLAN_SRC_ASSUMPTION;
	return vrt_plan_predict_scale(bytes, tp_r, tp);
}

/* The terms a sharded engine's device shares: the weights over the
 * ranks, the activation budget, the CUDA graphs as measured (the same
 * capture sizes assumed) and the fixed rest. */
void vrt_plan_predict_sharded_terms(struct pctx *c, size_t i, uint64_t act,
                                    int act_src, uint64_t tp_r, uint64_t tp)
{
	const struct vrt_plan_measure *m = vrt_plan_predict_measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];

	vrt_plan_predict_set_term(
	        d, VRT_PLAN_WEIGHTS,
	        vrt_plan_predict_scale(m->weights, tp_r, tp),
	        tp == tp_r ? VRT_PLAN_SRC_MEASURED : VRT_PLAN_SRC_RULE, 1);
	vrt_plan_predict_set_term(d, VRT_PLAN_ACTIVATIONS, act, act_src,
	                          m->profile_held > 0);
	vrt_plan_predict_set_term(
	        d, VRT_PLAN_GRAPHS, m->graphs,
	        m->graphs ? VRT_PLAN_SRC_ASSUMPTION : VRT_PLAN_SRC_MEASURED, 1);
	vrt_plan_predict_other_term(c, i, tp_r, tp);
}

/* ---- the verdict of a row --------------------------------------------- */

/* Climbs the ladder of each device: weights, the loading batch's
 * activations, the reserves, one request, the rest in flight. */
static void judge(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	struct vrt_plan_row *row = c->row;
	int unsure = 0, tight = 0;
	size_t i;

	for (i = 0; i < row->ndev; i++) {
		struct vrt_plan_device *d = &row->dev[i];
		const struct vrt_plan_term *t = d->term;
		uint64_t room =
		        d->capacity > d->other ? d->capacity - d->other : 0;
		uint64_t base =
		        t[VRT_PLAN_OTHER].bytes + t[VRT_PLAN_WEIGHTS].bytes;
		uint64_t load = base + t[VRT_PLAN_ACTIVATIONS].bytes;
		uint64_t reserves = base + t[VRT_PLAN_KV].bytes +
		                    t[VRT_PLAN_GRAPHS].bytes +
		                    (t[VRT_PLAN_ACTIVATIONS].held
		                             ? t[VRT_PLAN_ACTIVATIONS].bytes
		                             : 0);
		uint64_t one = row->inflight ? t[VRT_PLAN_REQUESTS].bytes /
		                                       row->inflight
		                             : 0;
		uint64_t serve = reserves + t[VRT_PLAN_REQUESTS].bytes;
		int k, brk = VRT_PLAN_BREAK_NONE;
		for (k = 0; k < VRT_PLAN_NTERMS; k++)
			if (t[k].source == VRT_PLAN_SRC_UNKNOWN)
				unsure = 1;
		d->load_peak = load;
		d->peak = load > serve ? load : serve;
		d->headroom = room > d->peak ? room - d->peak : 0;
		d->over = d->peak > room;
		if (base > room)
			brk = VRT_PLAN_BREAK_WEIGHTS;
		else if (load > room)
			brk = VRT_PLAN_BREAK_ACTIVATIONS;
		else if (reserves > room)
			brk = VRT_PLAN_BREAK_RESERVES;
		else if (reserves + one > room)
			brk = VRT_PLAN_BREAK_ONE_REQUEST;
		else if (serve > room)
			brk = VRT_PLAN_BREAK_IN_FLIGHT;
		if (brk && row->fit != VRT_PLAN_NO) {
			row->fit = VRT_PLAN_NO;
			row->brk = brk;
			snprintf(row->reason, sizeof(row->reason),
			         "device %" PRId32 ": %s past its %s (%s)",
			         d->device, gib(d->peak), gib(room),
			         brk == VRT_PLAN_BREAK_WEIGHTS ? "the weights"
			         : brk == VRT_PLAN_BREAK_ACTIVATIONS
			                 ? "the loading batch's activations"
			         : brk == VRT_PLAN_BREAK_RESERVES
			                 ? "the reserves (KV cache, graphs)"
			         : brk == VRT_PLAN_BREAK_ONE_REQUEST
			                 ? "one request's activations"
			                 : "the requests in flight");
		}
		if (!d->over &&
		    !vrt_diag_fits_margin(d->headroom, d->capacity, p->margin_pct))
			tight = 1;
		if (i == 0)
			vrt_plan_predict_say(
			        c,
			        "device %" PRId32
			        ": peak max(loading %s, serving "
			        "%s) = %s of %s free (%s total - %s other): "
			        "headroom %s",
			        d->device, gib(load), gib(serve), gib(d->peak),
			        gib(room), gib(d->capacity), gib(d->other),
			        gib(d->headroom));
	}
	if (row->fit == VRT_PLAN_NO)
		return;
	row->fit = unsure || row->unsure[0] ? VRT_PLAN_UNSURE
	           : tight                  ? VRT_PLAN_TIGHT
	                                    : VRT_PLAN_FITS;
	if (unsure)
		snprintf(row->reason, sizeof(row->reason),
		         "a term is unknown: the peak is a lower bound");
	else if (row->unsure[0])
		snprintf(row->reason, sizeof(row->reason), "%s", row->unsure);
	else if (tight)
		snprintf(row->reason, sizeof(row->reason),
		         "fits with less than the %u%% margin", p->margin_pct);
}

void vrt_plan_predict(const struct vrt_plan *p, const uint64_t *knob,
                      unsigned have, struct vrt_plan_row *row,
                      struct vrt_plan_explain *ex)
{
	struct pctx c;
	int k;

	memset(row, 0, sizeof(*row));
	c.p = p;
	c.row = row;
	c.ex = ex;
	c.have = have | p->rec_have;
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		c.k[k] = (have >> k) & 1 ? knob[k] : p->rec[k];
	memcpy(row->knob, c.k, sizeof(row->knob));
	row->have = c.have;
	row->recorded = 1;
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		if (vrt_plan_predict_changed(&c, k))
			row->recorded = 0;
	if (!p->ndev) {
		row->fit = VRT_PLAN_UNSURE;
		snprintf(row->reason, sizeof(row->reason),
		         "the run allocated on no device");
		return;
	}
	switch (p->engine) {
	case VRT_ENGINE_VLLM:
		vrt_plan_rules_vllm(&c);
		break;
	case VRT_ENGINE_SGLANG:
		vrt_plan_rules_sglang(&c);
		break;
	case VRT_ENGINE_LLAMACPP:
	case VRT_ENGINE_OLLAMA:
		vrt_plan_rules_llamacpp(&c);
		break;
	case VRT_ENGINE_TGI:
	case VRT_ENGINE_TRTLLM:
		vrt_plan_rules_fraction(&c);
		break;
	default:
		vrt_plan_rules_generic(&c);
	}
	judge(&c);
}
