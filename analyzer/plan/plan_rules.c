/*
 * plan_rules.c — each engine's sizing rule for one prediction, written
 * from the engine's source (plan.c's opening lists them; docs/plan.md
 * names where): vLLM, SGLang (with its memory fraction's default),
 * llama.cpp, TGI and TensorRT-LLM (a fraction of the free memory), and an
 * engine without a rule. Each fills the row's terms through
 * plan_predict.c's helpers. Pure, single-threaded.
 */
#include "plan_internal.h"
#include "diagnose/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- vLLM ------------------------------------------------------------- */

/* vLLM V1 (gpu_worker.determine_available_memory): requested memory =
 * total x gpu_memory_utilization; available KV = requested - (weights +
 * the profile run's peak + the non-torch increase) - the CUDA-graph
 * estimate when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS applies it. */
int64_t vrt_plan_rules_vllm_available(uint64_t util_milli, uint64_t total,
                                      uint64_t w, uint64_t prof,
                                      uint64_t nontorch, uint64_t graphs,
                                      int inside)
{
	int64_t req = (int64_t)vrt_plan_predict_scale(total, util_milli, 1000);
	return req - (int64_t)w - (int64_t)prof - (int64_t)nontorch -
	       (inside ? (int64_t)graphs : 0);
}

void vrt_plan_rules_vllm(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = vrt_plan_predict_tp_recorded(p),
	         tp = vrt_plan_predict_tp_of(c);
	uint64_t util = c->k[VRT_PLAN_FRACTION];
	uint32_t n = vrt_plan_predict_inflight_of(
	        c, c->k[VRT_PLAN_CONCURRENCY],
	        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY));
	int comm_unknown = tp > 1 && tp_r == 1;
	size_t i, nd = vrt_plan_predict_rank_devices(c, tp);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = vrt_plan_predict_scale(m->weights, tp_r, tp);
		uint64_t prof = m->profile, prof_r = m->profile;
		int prof_src = VRT_PLAN_SRC_MEASURED;
		int64_t kv_r, kv, off;
		int inside = p->graphs_inside;
		if (!m->profile) {
			/* no profile phase: the rule solved for it */
			int64_t x = vrt_plan_rules_vllm_available(
			                    p->rec[VRT_PLAN_FRACTION],
			                    m->capacity, m->weights, 0, m->comm,
			                    m->graphs, inside) -
			            (int64_t)m->kv;
			prof_r = prof = x > 0 ? (uint64_t)x : 0;
			prof_src = VRT_PLAN_SRC_RULE;
		}
		prof = vrt_plan_predict_batch_activations(c, prof, tp_r, tp,
		                                          &prof_src);
		vrt_plan_predict_sharded_terms(c, i, prof, prof_src, tp_r, tp);
		/* the rule at the recorded settings against the measured
		 * reserve: the gap is carried */
		kv_r = vrt_plan_rules_vllm_available(
		        p->rec[VRT_PLAN_FRACTION], m->capacity, m->weights,
		        prof_r, m->comm, m->graphs, inside);
		off = (int64_t)m->kv - kv_r;
		kv = vrt_plan_rules_vllm_available(
		        util, d->capacity, w, prof,
		        comm_unknown || tp == 1 ? 0 : m->comm, m->graphs,
		        inside);
		kv += off;
		if (i == 0) {
			vrt_plan_predict_say(
			        c,
			        "requested: %s x %s = %s (%s x the device's "
			        "total)",
			        frac_text(util), gib(d->capacity),
			        gib(vrt_plan_predict_scale(d->capacity, util,
			                                   1000)),
			        vrt_plan_predict_flagname(c,
			                                  VRT_PLAN_FRACTION));
			vrt_plan_predict_say(
			        c,
			        "weights: %s measured on each of %" PRIu64
			        " rank(s) -> x %" PRIu64 "/%" PRIu64 " = %s",
			        gib(m->weights), tp_r, tp_r, tp, gib(w));
			vrt_plan_predict_say(
			        c, "profile peak: %s %s%s -> %s", gib(prof_r),
			        m->profile ? "measured (profile phase)"
			                   : "solved from the KV reserve (no "
			                     "profile "
			                     "phase in the run)",
			        vrt_plan_predict_changed(c,
			                                 VRT_PLAN_BATCH_TOKENS)
			                ? ", scaled by the batch tokens"
			                : "",
			        gib(prof));
			vrt_plan_predict_say(
			        c,
			        "non-torch (comm): %s; CUDA graphs %s, counted "
			        "%s the fraction",
			        gib(m->comm), gib(m->graphs),
			        inside ? "inside" : "outside");
			vrt_plan_predict_say(
			        c,
			        "KV cache: requested - weights - profile peak "
			        "- "
			        "non-torch%s = %s, calibration %s (the rule at "
			        "the "
			        "recorded settings vs the measured %s) = %s",
			        inside ? " - graphs" : "", sgib(kv - off),
			        sgib(off), gib(m->kv), sgib(kv));
		}
		if (kv <= 0) {
			vrt_plan_predict_set_term(d, VRT_PLAN_KV, 0,
			                          VRT_PLAN_SRC_RULE, 1);
			vrt_plan_predict_refuse(
			        c, VRT_PLAN_BREAK_REFUSED,
			        "vLLM refuses to start: no memory is left for "
			        "the KV cache (%s %s)",
			        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION),
			        frac_text(util));
			continue;
		}
		/* the reserve is what the profile leaves: unknown with it */
		vrt_plan_predict_set_term(
		        d, VRT_PLAN_KV, (uint64_t)kv,
		        prof_src == VRT_PLAN_SRC_UNKNOWN ? VRT_PLAN_SRC_UNKNOWN
		        : vrt_plan_predict_changed(c, VRT_PLAN_FRACTION) ||
		                        vrt_plan_predict_changed(
		                                c, VRT_PLAN_PARALLEL) ||
		                        vrt_plan_predict_changed(
		                                c, VRT_PLAN_BATCH_TOKENS)
		                ? VRT_PLAN_SRC_RULE
		                : VRT_PLAN_SRC_MEASURED,
		        1);
		vrt_plan_predict_requests_term(c, i, n, tp_r, tp, 0, 0);
		if (d->other >
		    vrt_plan_predict_scale(d->capacity, 1000 - util, 1000))
			vrt_plan_predict_refuse(
			        c, VRT_PLAN_BREAK_REFUSED,
			        "vLLM refuses to start: device %" PRId32
			        " has %s free, less than %s x its total",
			        d->device, gib(d->capacity - d->other),
			        vrt_plan_predict_flagname(c,
			                                  VRT_PLAN_FRACTION));
	}
	vrt_plan_predict_note(
	        c, VRT_PLAN_WEIGHTS,
	        "measured (weights phase), sharded over the tensor-parallel "
	        "ranks");
	vrt_plan_predict_note(
	        c, VRT_PLAN_ACTIVATIONS,
	        "the profile run's peak (%s), linear in %s",
	        p->dev[p->template_dev].profile
	                ? "measured, profile phase"
	                : "solved from the KV reserve: the run has no profile "
	                  "phase",
	        vrt_plan_predict_flagname(c, VRT_PLAN_BATCH_TOKENS));
	vrt_plan_predict_note(
	        c, VRT_PLAN_KV,
	        "vLLM: %s x total - weights - profile peak - non-torch%s",
	        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION),
	        p->graphs_inside ? " - CUDA graphs" : "");
	vrt_plan_predict_note(
	        c, VRT_PLAN_GRAPHS,
	        "measured (cuda_graph phase); assumed the same capture sizes");
	vrt_plan_predict_note(c, VRT_PLAN_OTHER,
	                      "measured: comm phase and what loading left");
	vrt_plan_predict_note(
	        c, VRT_PLAN_REQUESTS,
	        "in flight (the run's traffic, at most %s) x one request's "
	        "growth (measured)",
	        vrt_plan_predict_flagname(c, VRT_PLAN_CONCURRENCY));
	if (c->row->ndev && c->row->dev[0].term[VRT_PLAN_KV].bytes) {
		uint64_t ctx = c->k[VRT_PLAN_CONTEXT];
		uint64_t kv = c->row->dev[0].term[VRT_PLAN_KV].bytes;
		vrt_plan_predict_kv_tokens(c, kv, tp, ctx, p->block_tokens);
		if (c->row->have_tokens && !c->row->max_concurrency &&
		    vrt_plan_predict_has(c, VRT_PLAN_CONTEXT))
			vrt_plan_predict_refuse(
			        c, VRT_PLAN_BREAK_REFUSED,
			        "vLLM refuses to start: the KV cache holds "
			        "%" PRIu64
			        " tokens, fewer than one sequence of "
			        "%s %" PRIu64,
			        c->row->kv_tokens,
			        vrt_plan_predict_flagname(c, VRT_PLAN_CONTEXT),
			        ctx);
		/* Without the model the check holds only where the run
		 * passed it: no longer a context, no smaller a cache per
		 * rank. */
		if (!c->row->have_tokens &&
		    ((vrt_plan_predict_changed(c, VRT_PLAN_CONTEXT) &&
		      !(ctx < p->rec[VRT_PLAN_CONTEXT])) ||
		     tp != tp_r || kv < p->dev[p->template_dev].kv))
			snprintf(
			        c->row->unsure, sizeof(c->row->unsure),
			        "vLLM refuses a KV cache smaller than one %s "
			        "sequence: without --model-config its tokens "
			        "are unknown",
			        vrt_plan_predict_flagname(c, VRT_PLAN_CONTEXT));
	}
}

/* ---- SGLang ---------------------------------------------------------- */

/* ModelRunnerKVCacheMixin._resolve_max_num_reqs. */
static uint64_t sglang_max_reqs(uint64_t tokens, uint64_t ctx, uint64_t want,
                                int have_want)
{
	uint64_t est = ctx ? (uint64_t)((long double)tokens / ctx * 512) : 4096;
	uint64_t n;

	est = est > 4096 ? 4096 : est < 2048 ? 2048 : est;
	n = have_want ? want : est;
	if (n > tokens / 2)
		n = tokens / 2;
	return n ? n : 1;
}

/* ReqToTokenPool: (size + 1) x (context + 4) int32 entries. */
static uint64_t sglang_req_pool(uint64_t reqs, uint64_t ctx)
{
	return (reqs + 1) * (ctx + 4) * 4;
}

/* The ReqToTokenPool the run made (part of its kv_cache phase): known
 * when the run gives its context and either its request cap or, through
 * the model, its tokens. */
static int sglang_recorded_rtt(const struct vrt_plan *p,
                               const struct vrt_plan_measure *m, uint64_t *rtt)
{
	uint64_t tp = p->rec[VRT_PLAN_PARALLEL] ? p->rec[VRT_PLAN_PARALLEL] : 1;
	uint64_t cell = p->have_model
	                        ? vrt_model_seq_bytes(&p->model, 1, 1, tp) / tp
	                        : 0;
	int have_reqs = (p->rec_have >> VRT_PLAN_CONCURRENCY) & 1;

	*rtt = 0;
	if (!((p->rec_have >> VRT_PLAN_CONTEXT) & 1) || (!have_reqs && !cell))
		return 0;
	*rtt = sglang_req_pool(
	        sglang_max_reqs(cell ? m->kv / cell : UINT64_MAX / 4,
	                        p->rec[VRT_PLAN_CONTEXT],
	                        p->rec[VRT_PLAN_CONCURRENCY], have_reqs),
	        p->rec[VRT_PLAN_CONTEXT]);
	return 1;
}

/* The free memory before the weights: SGLang's pre_model_load_memory. */
static uint64_t sglang_pre(uint64_t capacity, uint64_t other, uint64_t comm)
{
	return capacity > other + comm ? capacity - other - comm : 0;
}

/* Without --mem-fraction-static on the command line (SGLang picks one
 * from the card's size), the fraction the run used, solved from its KV
 * pool by the rule. */
void vrt_plan_rules_sglang_fraction(struct vrt_plan *p)
{
	const struct vrt_plan_measure *m = &p->dev[p->template_dev];
	uint64_t pre = sglang_pre(m->capacity, m->other, m->comm), rtt;

	if ((p->rec_have >> VRT_PLAN_FRACTION) & 1 || !pre)
		return;
	sglang_recorded_rtt(p, m, &rtt);
	p->rec[VRT_PLAN_FRACTION] =
	        (uint64_t)((long double)(m->kv - (rtt < m->kv ? rtt : m->kv) +
	                                 m->weights) *
	                           1000 / pre +
	                   0.5L);
	if (!p->rec[VRT_PLAN_FRACTION] || p->rec[VRT_PLAN_FRACTION] > 1000)
		return;
	p->rec_have |= 1u << VRT_PLAN_FRACTION;
	p->rec_from[VRT_PLAN_FRACTION] =
	        "solved from the KV pool (SGLang's rule)";
}

void vrt_plan_rules_sglang(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = vrt_plan_predict_tp_recorded(p),
	         tp = vrt_plan_predict_tp_of(c);
	uint64_t ctx = c->k[VRT_PLAN_CONTEXT];
	uint64_t frac = c->k[VRT_PLAN_FRACTION],
	         frac_r = p->rec[VRT_PLAN_FRACTION];
	uint64_t cell = 0;
	uint64_t tokens_min = UINT64_MAX, reqs = 0;
	int rtt_known = 0;
	size_t i, nd = vrt_plan_predict_rank_devices(c, tp);

	if (p->have_model)
		cell = vrt_model_seq_bytes(&p->model, 1, 1, tp) / tp;
	/* pass 1: the pool on every rank; SGLang takes the smallest */
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t pre = sglang_pre(d->capacity, d->other, m->comm);
		uint64_t pre_r = sglang_pre(m->capacity, m->other, m->comm);
		uint64_t w = vrt_plan_predict_scale(m->weights, tp_r, tp),
		         rtt_r;
		int64_t pool_r, pool, off;
		rtt_known = sglang_recorded_rtt(p, m, &rtt_r);
		pool_r = (int64_t)vrt_plan_predict_scale(pre_r, frac_r, 1000) -
		         (int64_t)m->weights;
		off = (int64_t)m->kv - (int64_t)rtt_r - pool_r;
		pool = (int64_t)vrt_plan_predict_scale(pre, frac, 1000) -
		       (int64_t)w;
		/* no profile run; the graphs are sized in pass 2 */
		vrt_plan_predict_sharded_terms(c, i, m->profile,
		                               VRT_PLAN_SRC_MEASURED, tp_r, tp);
		if (i == 0) {
			vrt_plan_predict_say(
			        c,
			        "free before the weights: %s total - %s other "
			        "processes - %s comm = %s",
			        gib(d->capacity), gib(d->other), gib(m->comm),
			        gib(pre));
			vrt_plan_predict_say(
			        c,
			        "weights: %s measured per rank x %" PRIu64
			        "/%" PRIu64 " = %s",
			        gib(m->weights), tp_r, tp, gib(w));
			vrt_plan_predict_say(
			        c,
			        "KV pool: free after the weights - free before "
			        "x "
			        "(1 - %s %s) = %s x %s - %s = %s",
			        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION),
			        frac_text(frac), gib(pre), frac_text(frac),
			        gib(w), sgib(pool));
			vrt_plan_predict_say(
			        c,
			        "calibration: %s (the rule at the recorded "
			        "settings vs the measured kv_cache phase%s)",
			        sgib(off),
			        rtt_known ? " less its ReqToTokenPool"
			                  : ", its ReqToTokenPool included");
		}
		pool += off;
		if (pool <= 0) {
			vrt_plan_predict_set_term(d, VRT_PLAN_KV, 0,
			                          VRT_PLAN_SRC_RULE, 1);
			vrt_plan_predict_refuse(
			        c, VRT_PLAN_BREAK_REFUSED,
			        "SGLang refuses to start: loaded weights leave "
			        "no "
			        "memory for the KV cache under %s %s",
			        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION),
			        frac_text(frac));
			tokens_min = 0;
			continue;
		}
		vrt_plan_predict_set_term(
		        d, VRT_PLAN_KV, (uint64_t)pool,
		        vrt_plan_predict_changed(c, VRT_PLAN_FRACTION) ||
		                        vrt_plan_predict_changed(
		                                c, VRT_PLAN_PARALLEL)
		                ? VRT_PLAN_SRC_RULE
		                : VRT_PLAN_SRC_MEASURED,
		        1);
		if (cell && (uint64_t)pool / cell < tokens_min)
			tokens_min = (uint64_t)pool / cell;
	}
	if (!nd)
		return;
	if (cell && tokens_min != UINT64_MAX) {
		c->row->have_tokens = 1;
		c->row->kv_tokens = tokens_min;
		c->row->max_concurrency = ctx ? tokens_min / ctx : 0;
		vrt_plan_predict_say(
		        c,
		        "max_total_num_tokens: %s / %s per token per rank "
		        "(model) = %" PRIu64,
		        gib(c->row->dev[0].term[VRT_PLAN_KV].bytes), gib(cell),
		        tokens_min);
		if (!tokens_min)
			vrt_plan_predict_refuse(c, VRT_PLAN_BREAK_REFUSED,
			                        "SGLang refuses to start: not "
			                        "enough memory for "
			                        "one token (raise %s)",
			                        vrt_plan_predict_flagname(
			                                c, VRT_PLAN_FRACTION));
	}
	if (c->row->have_tokens)
		reqs = sglang_max_reqs(
		        c->row->kv_tokens, ctx, c->k[VRT_PLAN_CONCURRENCY],
		        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY));
	else if (vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY))
		reqs = c->k[VRT_PLAN_CONCURRENCY];
	c->row->inflight = vrt_plan_predict_inflight_of(c, reqs, reqs != 0);
	if (reqs)
		vrt_plan_predict_say(c,
		                     "max_running_requests: %" PRIu64
		                     " (SGLang: the setting, at most half the "
		                     "tokens; without "
		                     "it from the tokens)",
		                     reqs);
	/* pass 2: the request table, graphs and requests */
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t rtt = reqs && ctx ? sglang_req_pool(reqs, ctx) : 0;
		uint64_t graphs = m->graphs, cap = 0;
		uint32_t nrec = vrt_plan_predict_inflight_of(
		        c, p->rec[VRT_PLAN_CONCURRENCY],
		        (p->rec_have >> VRT_PLAN_CONCURRENCY) & 1);
		uint64_t a = vrt_plan_predict_per_request(p, m, nrec);
		int graph_src = VRT_PLAN_SRC_MEASURED, have_cap = 0;
		/* the request table: added where the run's own is known
		 * (then out of the calibration), else carried in it, which
		 * holds only while context and cap stay as recorded */
		if (rtt_known && reqs && d->term[VRT_PLAN_KV].bytes)
			d->term[VRT_PLAN_KV].bytes += rtt;
		else if (vrt_plan_predict_changed(c, VRT_PLAN_CONTEXT) ||
		         vrt_plan_predict_changed(c, VRT_PLAN_CONCURRENCY))
			vrt_plan_predict_set_term(d, VRT_PLAN_KV, 0,
			                          VRT_PLAN_SRC_UNKNOWN, 1);
		if (vrt_plan_predict_changed(c, VRT_PLAN_GRAPH_BS)) {
			if ((p->rec_have >> VRT_PLAN_GRAPH_BS) & 1) {
				graphs = vrt_plan_predict_scale(
				        graphs, c->k[VRT_PLAN_GRAPH_BS],
				        p->rec[VRT_PLAN_GRAPH_BS]);
				graph_src = VRT_PLAN_SRC_ASSUMPTION;
			} else {
				graph_src = VRT_PLAN_SRC_UNKNOWN;
			}
		}
		vrt_plan_predict_set_term(
		        d, VRT_PLAN_GRAPHS,
		        vrt_plan_predict_scale(graphs, tp_r, tp), graph_src, 1);
		/* the prefill chunk caps a batch's activations: the run
		 * shows the cap when its batch at the peak grew less than
		 * its requests alone would have */
		if (nrec > 1 && a && m->demand_peak > m->residue &&
		    (m->demand_peak - m->residue) * 20 <
		            (uint64_t)nrec * a * 19) {
			cap = m->demand_peak - m->residue;
			have_cap = 1;
			if (vrt_plan_predict_changed(c,
			                             VRT_PLAN_BATCH_TOKENS)) {
				if ((p->rec_have >> VRT_PLAN_BATCH_TOKENS) & 1)
					cap = vrt_plan_predict_scale(
					        cap,
					        c->k[VRT_PLAN_BATCH_TOKENS],
					        p->rec[VRT_PLAN_BATCH_TOKENS]);
				else
					have_cap = 0;
			}
			cap = vrt_plan_predict_scale(cap, tp_r, tp);
		}
		if (i == 0) {
			vrt_plan_predict_say(
			        c,
			        "ReqToTokenPool: (%" PRIu64 " + 1) x (%" PRIu64
			        " + 4) x 4 bytes = %s, in the KV term",
			        reqs, ctx, gib(rtt));
			vrt_plan_predict_say(
			        c, "CUDA graphs: %s measured%s = %s",
			        gib(m->graphs),
			        vrt_plan_predict_changed(c, VRT_PLAN_GRAPH_BS)
			                ? ", proportional to the largest batch"
			                : "",
			        gib(d->term[VRT_PLAN_GRAPHS].bytes));
			if (have_cap)
				vrt_plan_predict_say(
				        c,
				        "prefill chunk: a batch's activations "
				        "at "
				        "most %s (measured at the peak)",
				        gib(cap));
		}
		vrt_plan_predict_requests_term(c, i, c->row->inflight, tp_r, tp,
		                               cap, have_cap);
	}
	vrt_plan_predict_note(c, VRT_PLAN_WEIGHTS,
	                      "measured (weights phase), sharded over %s",
	                      vrt_plan_predict_flagname(c, VRT_PLAN_PARALLEL));
	vrt_plan_predict_note(
	        c, VRT_PLAN_ACTIVATIONS,
	        "measured (profile phase; SGLang sizes its pool without a "
	        "profile run)");
	vrt_plan_predict_note(
	        c, VRT_PLAN_KV,
	        "SGLang: free after weights - free before x (1 - %s), plus "
	        "the ReqToTokenPool",
	        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION));
	vrt_plan_predict_note(c, VRT_PLAN_GRAPHS,
	                      "measured (cuda_graph phase), proportional to %s",
	                      vrt_plan_graph_bs_flag);
	vrt_plan_predict_note(c, VRT_PLAN_OTHER,
	                      "measured: comm phase and what loading left");
	vrt_plan_predict_note(c, VRT_PLAN_REQUESTS,
	                      "in flight (at most max_running_requests) x one "
	                      "request's growth, "
	                      "at most a prefill chunk's");
}

/* ---- llama.cpp ------------------------------------------------------ */

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;
	return m < c ? m : c;
}

void vrt_plan_rules_llamacpp(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t layers = p->have_model ? p->model.layers : 0;
	uint64_t ngl_r = p->rec[VRT_PLAN_GPU_LAYERS],
	         ngl = c->k[VRT_PLAN_GPU_LAYERS];
	int have_ngl_r = (p->rec_have >> VRT_PLAN_GPU_LAYERS) & 1;
	uint64_t off_r = 1, off = 1;
	uint64_t ctx = c->k[VRT_PLAN_CONTEXT], ctx_r = p->rec[VRT_PLAN_CONTEXT];
	uint64_t g_r = min3(ctx_r, p->rec[VRT_PLAN_BATCH_TOKENS],
	                    p->rec[VRT_PLAN_UBATCH]);
	uint64_t g =
	        min3(ctx, c->k[VRT_PLAN_BATCH_TOKENS], c->k[VRT_PLAN_UBATCH]);
	uint32_t n = vrt_plan_predict_inflight_of(
	        c, c->k[VRT_PLAN_CONCURRENCY],
	        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY));
	int ngl_src = VRT_PLAN_SRC_MEASURED, ctx_src = VRT_PLAN_SRC_MEASURED;
	int act_src = VRT_PLAN_SRC_MEASURED;
	size_t i, nd = vrt_plan_predict_rank_devices(c, 0);

	c->row->inflight = n;
	if (vrt_plan_predict_changed(c, VRT_PLAN_GPU_LAYERS)) {
		if (!have_ngl_r) {
			ngl_src = VRT_PLAN_SRC_UNKNOWN;
		} else {
			/* layers past the model's count add nothing (the
			 * output layer is not modelled) */
			off_r = layers && ngl_r > layers ? layers : ngl_r;
			off = layers && ngl > layers ? layers : ngl;
			ngl_src = layers ? VRT_PLAN_SRC_RULE
			                 : VRT_PLAN_SRC_ASSUMPTION;
			if (!off_r)
				ngl_src = VRT_PLAN_SRC_UNKNOWN;
		}
	}
	if (vrt_plan_predict_changed(c, VRT_PLAN_CONTEXT))
		ctx_src = (p->rec_have >> VRT_PLAN_CONTEXT) & 1
		                  ? VRT_PLAN_SRC_RULE
		                  : VRT_PLAN_SRC_UNKNOWN;
	if (g != g_r)
		act_src = g_r ? VRT_PLAN_SRC_ASSUMPTION : VRT_PLAN_SRC_UNKNOWN;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = vrt_plan_predict_scale(m->weights, off, off_r);
		uint64_t kv = vrt_plan_predict_scale(
		        vrt_plan_predict_scale(m->kv, off, off_r),
		        ctx_src == VRT_PLAN_SRC_RULE ? ctx : 1,
		        ctx_src == VRT_PLAN_SRC_RULE ? ctx_r : 1);
		uint64_t act =
		        act_src == VRT_PLAN_SRC_ASSUMPTION
		                ? vrt_plan_predict_scale(m->profile, g, g_r)
		                : m->profile;
		int kv_src = ctx_src == VRT_PLAN_SRC_UNKNOWN ||
		                             ngl_src == VRT_PLAN_SRC_UNKNOWN
		                     ? VRT_PLAN_SRC_UNKNOWN
		             : ctx_src == VRT_PLAN_SRC_RULE ||
		                             ngl_src != VRT_PLAN_SRC_MEASURED
		                     ? VRT_PLAN_SRC_RULE
		                     : VRT_PLAN_SRC_MEASURED;
		vrt_plan_predict_set_term(d, VRT_PLAN_WEIGHTS, w, ngl_src, 1);
		vrt_plan_predict_set_term(d, VRT_PLAN_KV, kv, kv_src, 1);
		vrt_plan_predict_set_term(
		        d, VRT_PLAN_ACTIVATIONS, act,
		        m->profile ? act_src : VRT_PLAN_SRC_MEASURED, 1);
		vrt_plan_predict_set_term(d, VRT_PLAN_GRAPHS, m->graphs,
		                          VRT_PLAN_SRC_MEASURED, 1);
		vrt_plan_predict_other_term(c, i, 1, 1);
		if (i == 0) {
			if (vrt_plan_predict_changed(c, VRT_PLAN_GPU_LAYERS))
				vrt_plan_predict_say(
				        c,
				        "weights: %s measured for %" PRIu64
				        " offloaded layers -> %" PRIu64 " = %s",
				        gib(m->weights), off_r, off, gib(w));
			else
				vrt_plan_predict_say(
				        c,
				        "weights: %s measured (%s as recorded)",
				        gib(w),
				        vrt_plan_predict_flagname(
				                c, VRT_PLAN_GPU_LAYERS));
			vrt_plan_predict_say(
			        c,
			        "KV buffer: %s measured at %s %" PRIu64
			        " -> x %" PRIu64 "/%" PRIu64
			        " tokens x %" PRIu64 "/%" PRIu64 " layers = %s",
			        gib(m->kv),
			        vrt_plan_predict_flagname(c, VRT_PLAN_CONTEXT),
			        ctx_r, ctx, ctx_r, off, off_r, gib(kv));
			vrt_plan_predict_say(
			        c,
			        "compute buffer: %s measured for a graph of "
			        "%" PRIu64 " tokens -> %" PRIu64 " tokens = %s",
			        gib(m->profile), g_r, g, gib(act));
		}
		vrt_plan_predict_requests_term(c, i, n, 1, 1, 0, 0);
	}
	if (ctx) {
		/* n_ctx cells, shared by the slots (n_ctx_seq = n_ctx /
		 * n_seq_max unless --kv-unified) */
		c->row->have_tokens = 1;
		c->row->kv_tokens = ctx;
		c->row->max_concurrency =
		        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY)
		                ? c->k[VRT_PLAN_CONCURRENCY]
		                : 0;
		c->row->context_per_seq =
		        c->row->max_concurrency ? ctx / c->row->max_concurrency
		                                : ctx;
		vrt_plan_predict_say(
		        c,
		        "slots: %s %" PRIu64 " share %s %" PRIu64 ": %" PRIu64
		        " tokens each",
		        vrt_plan_predict_flagname(c, VRT_PLAN_CONCURRENCY),
		        c->row->max_concurrency,
		        vrt_plan_predict_flagname(c, VRT_PLAN_CONTEXT), ctx,
		        c->row->context_per_seq);
	}
	vrt_plan_predict_note(
	        c, VRT_PLAN_WEIGHTS,
	        "measured (weights phase), per offloaded layer x %s",
	        vrt_plan_predict_flagname(c, VRT_PLAN_GPU_LAYERS));
	vrt_plan_predict_note(
	        c, VRT_PLAN_ACTIVATIONS,
	        "the compute buffer (profile phase), proportional to "
	        "min(-c, -b, -ub) tokens");
	vrt_plan_predict_note(
	        c, VRT_PLAN_KV,
	        "llama.cpp: %s x bytes per token (measured) of the offloaded "
	        "layers",
	        vrt_plan_predict_flagname(c, VRT_PLAN_CONTEXT));
	vrt_plan_predict_note(c, VRT_PLAN_GRAPHS,
	                      "measured (cuda_graph phase)");
	vrt_plan_predict_note(c, VRT_PLAN_OTHER,
	                      "measured: comm phase and what loading left");
	vrt_plan_predict_note(
	        c, VRT_PLAN_REQUESTS,
	        "in flight (at most %s slots) x one request's growth "
	        "(measured)",
	        vrt_plan_predict_flagname(c, VRT_PLAN_CONCURRENCY));
}

/* ---- TGI and TensorRT-LLM -------------------------------------------- */

/* TGI (flash_causal_lm.warmup): blocks from the free memory after the
 * warm-up batch less (1 - cuda_memory_fraction) x total, times
 * TGI_WIGGLE_ROOM. TensorRT-LLM (KvCacheCreator): (total - the estimation
 * run's peak) x free_gpu_memory_fraction. */
static int64_t fraction_rule(int engine, uint64_t frac, uint64_t total,
                             uint64_t other, uint64_t w, uint64_t act,
                             uint64_t nontorch)
{
	int64_t used = (int64_t)(other + w + act + nontorch);

	if (engine == VRT_ENGINE_TGI) {
		int64_t free_b = (int64_t)total - used -
		                 (int64_t)vrt_plan_predict_scale(
		                         total, 1000 - frac, 1000);
		return free_b > 0 ? (int64_t)vrt_plan_predict_scale(
		                            (uint64_t)free_b, TGI_WIGGLE_MILLI,
		                            1000)
		                  : free_b;
	}
	return (int64_t)vrt_plan_predict_scale(
	        total > (uint64_t)used ? total - (uint64_t)used : 0, frac,
	        1000);
}

void vrt_plan_rules_fraction(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = vrt_plan_predict_tp_recorded(p),
	         tp = vrt_plan_predict_tp_of(c);
	uint64_t frac = c->k[VRT_PLAN_FRACTION];
	uint32_t n = vrt_plan_predict_inflight_of(
	        c, c->k[VRT_PLAN_CONCURRENCY],
	        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY));
	int comm_unknown = tp > 1 && tp_r == 1;
	const char *label = vrt_engine_info(p->engine)->label;
	size_t i, nd = vrt_plan_predict_rank_devices(c, tp);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = vrt_plan_predict_scale(m->weights, tp_r, tp);
		int act_src = VRT_PLAN_SRC_MEASURED;
		uint64_t act = vrt_plan_predict_batch_activations(
		        c, m->profile, tp_r, tp, &act_src);
		int64_t kv_r, kv, off;
		kv_r = fraction_rule(p->engine, p->rec[VRT_PLAN_FRACTION],
		                     m->capacity, m->other, m->weights,
		                     m->profile_held ? m->profile : 0, m->comm);
		off = (int64_t)m->kv - kv_r;
		kv = fraction_rule(p->engine, frac, d->capacity, d->other, w,
		                   m->profile_held ? act : 0,
		                   comm_unknown || tp == 1 ? 0 : m->comm) +
		     off;
		vrt_plan_predict_sharded_terms(c, i, act, act_src, tp_r, tp);
		if (i == 0)
			vrt_plan_predict_say(
			        c,
			        "KV cache (%s rule) at %s %s: %s, calibration "
			        "%s "
			        "= %s",
			        label,
			        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION),
			        frac_text(frac), sgib(kv - off), sgib(off),
			        sgib(kv));
		if (kv <= 0) {
			vrt_plan_predict_set_term(d, VRT_PLAN_KV, 0,
			                          VRT_PLAN_SRC_RULE, 1);
			vrt_plan_predict_refuse(c, VRT_PLAN_BREAK_REFUSED,
			                        "%s refuses to start: no "
			                        "memory is left for the "
			                        "KV cache under %s",
			                        label,
			                        vrt_plan_predict_flagname(
			                                c, VRT_PLAN_FRACTION));
			continue;
		}
		vrt_plan_predict_set_term(
		        d, VRT_PLAN_KV, (uint64_t)kv,
		        act_src == VRT_PLAN_SRC_UNKNOWN && m->profile_held
		                ? VRT_PLAN_SRC_UNKNOWN
		        : vrt_plan_predict_changed(c, VRT_PLAN_FRACTION) ||
		                        vrt_plan_predict_changed(
		                                c, VRT_PLAN_PARALLEL) ||
		                        vrt_plan_predict_changed(
		                                c, VRT_PLAN_BATCH_TOKENS)
		                ? VRT_PLAN_SRC_RULE
		                : VRT_PLAN_SRC_MEASURED,
		        1);
		vrt_plan_predict_requests_term(c, i, n, tp_r, tp, 0, 0);
	}
	vrt_plan_predict_note(c, VRT_PLAN_WEIGHTS,
	                      "measured (weights phase), sharded over %s",
	                      vrt_plan_predict_flagname(c, VRT_PLAN_PARALLEL));
	vrt_plan_predict_note(
	        c, VRT_PLAN_ACTIVATIONS,
	        "the warm-up's peak (profile phase), linear in %s",
	        vrt_plan_predict_flagname(c, VRT_PLAN_BATCH_TOKENS));
	vrt_plan_predict_note(
	        c, VRT_PLAN_KV,
	        p->engine == VRT_ENGINE_TGI
	                ? "TGI: 0.95 x (free after warm-up - (1 - %s) x total)"
	                : "TensorRT-LLM: (total - peak before the KV cache) x "
	                  "%s",
	        vrt_plan_predict_flagname(c, VRT_PLAN_FRACTION));
	vrt_plan_predict_note(c, VRT_PLAN_GRAPHS,
	                      "measured (cuda_graph phase)");
	vrt_plan_predict_note(c, VRT_PLAN_OTHER,
	                      "measured: comm phase and what loading left");
	vrt_plan_predict_note(
	        c, VRT_PLAN_REQUESTS,
	        "in flight (at most %s) x one request's growth (measured)",
	        vrt_plan_predict_flagname(c, VRT_PLAN_CONCURRENCY));
	if (c->row->ndev && c->row->dev[0].term[VRT_PLAN_KV].bytes)
		vrt_plan_predict_kv_tokens(
		        c, c->row->dev[0].term[VRT_PLAN_KV].bytes, tp,
		        c->k[VRT_PLAN_CONTEXT], p->block_tokens);
}

/* ---- an engine without a rule ---------------------------------------- */

void vrt_plan_rules_generic(struct pctx *c)
{
	uint32_t n = vrt_plan_predict_inflight_of(
	        c, c->k[VRT_PLAN_CONCURRENCY],
	        vrt_plan_predict_has(c, VRT_PLAN_CONCURRENCY));
	int moved = vrt_plan_predict_changed(c, VRT_PLAN_CONTEXT) ||
	            vrt_plan_predict_changed(c, VRT_PLAN_FRACTION) ||
	            vrt_plan_predict_changed(c, VRT_PLAN_PARALLEL) ||
	            vrt_plan_predict_changed(c, VRT_PLAN_GPU_LAYERS) ||
	            vrt_plan_predict_changed(c, VRT_PLAN_BATCH_TOKENS) ||
	            vrt_plan_predict_changed(c, VRT_PLAN_UBATCH);
	size_t i, nd = vrt_plan_predict_rank_devices(c, 0);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m =
		        vrt_plan_predict_measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		int src = moved ? VRT_PLAN_SRC_UNKNOWN : VRT_PLAN_SRC_MEASURED;
		vrt_plan_predict_set_term(d, VRT_PLAN_WEIGHTS, m->weights,
		                          VRT_PLAN_SRC_MEASURED, 1);
		vrt_plan_predict_set_term(d, VRT_PLAN_ACTIVATIONS, m->profile,
		                          src, m->profile_held > 0);
		vrt_plan_predict_set_term(d, VRT_PLAN_KV, m->kv, src, 1);
		vrt_plan_predict_set_term(d, VRT_PLAN_GRAPHS, m->graphs,
		                          VRT_PLAN_SRC_MEASURED, 1);
		vrt_plan_predict_other_term(c, i, 1, 1);
		vrt_plan_predict_requests_term(c, i, n, 1, 1, 0, 0);
	}
	for (i = 0; i < VRT_PLAN_NTERMS; i++)
		vrt_plan_predict_note(
		        c, (int)i, "measured; no sizing rule for this engine");
}
