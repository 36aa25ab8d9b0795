/*
 * plan.c — the budgets of other settings from one recorded run (plan.h).
 *
 * Three steps. vrt_plan_measure reads what the run shows: per device its
 * phase peaks (weights, kv_cache with the inferred reserve, profile and
 * what of it the peak still held, cuda_graph, comm), the per-request
 * phases when serving began and at the peak, one request's growth alone,
 * the requests in flight, the recorded settings (engine.h) and, with a
 * model description, the run's KV types and blocks. vrt_plan_set and
 * vrt_plan_default_grid make the grid. vrt_plan_predict applies the
 * engine's sizing rule to one configuration; each rule is one function
 * of plan_rules.c, written from the engine's source (docs/plan.md names
 * where):
 *
 *   vLLM      KV = gpu_memory_utilization x total - weights - profiled
 *             peak - non-torch memory (- CUDA graphs when the run shows
 *             them counted in the fraction)
 *   SGLang    KV = free after the weights - free before x (1 -
 *             mem_fraction_static), then the ReqToTokenPool
 *   llama.cpp KV = n_ctx x bytes per token of the offloaded layers;
 *             compute buffer of min(n_ctx, n_batch, n_ubatch) tokens
 *   TGI       KV = 0.95 x (free after warm-up - (1 - cuda_memory_fraction)
 *             x total)
 *   TRT-LLM   KV = (total - peak of the estimation run) x
 *             kv_cache_free_gpu_memory_fraction
 *
 * Each rule is calibrated on the run: the rule at the recorded settings
 * is compared with the measured KV reserve and the difference is carried
 * (and shown), so the recorded configuration predicts the recorded run.
 *
 * This file owns the names, the engine's flags as knobs, measuring the
 * run (vrt_plan_measure), the grid (vrt_plan_set, vrt_plan_default_grid)
 * and the search: every row predicted, the best by the objective, the
 * calibration (vrt_plan_run). One prediction is plan_predict.c's, the
 * engines' sizing rules plan_rules.c's (plan_internal.h).
 *
 * Pure: no I/O, no globals but constant tables. Single-threaded.
 */
#include "plan_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/argv.h"
#include "diagnose/diagnose.h"
#include "diagnose/engine.h"
#include "base/text.h"

/* ---- names ------------------------------------------------------------ */

const char *vrt_plan_source_name(int source)
{
	static const char *const n[] = {"measured", "log",        "config",
	                                "rule",     "assumption", "unknown"};
	return source >= 0 && source < VRT_PLAN_SRC_COUNT ? n[source] : "?";
}

const char *vrt_plan_term_name(int term)
{
	static const char *const n[] = {"weights",  "activations",
	                                "kv_cache", "cuda_graph",
	                                "other",    "requests"};
	return term >= 0 && term < VRT_PLAN_NTERMS ? n[term] : "?";
}

const char *vrt_plan_knob_name(int knob)
{
	static const char *const n[] = {"context_length",  "concurrency",
	                                "memory_fraction", "tensor_parallel",
	                                "gpu_layers",      "batch_tokens",
	                                "ubatch",          "cuda_graph_max_bs"};
	return knob >= 0 && knob < VRT_PLAN_NKNOBS ? n[knob] : "?";
}

const char *vrt_plan_fit_name(int fit)
{
	static const char *const n[] = {"yes", "tight", "no", "unsure"};
	return fit >= 0 && fit <= VRT_PLAN_UNSURE ? n[fit] : "?";
}

const char *vrt_plan_break_name(int brk)
{
	static const char *const n[] = {
	        NULL,          "weights",   "activations", "reserves",
	        "one_request", "in_flight", "refused",     "devices"};
	return brk >= 0 && brk <= VRT_PLAN_BREAK_DEVICES ? n[brk] : NULL;
}

const char *vrt_plan_objective_name(int objective)
{
	static const char *const n[] = {"concurrency", "context", "throughput"};
	return objective >= 0 && objective <= VRT_PLAN_OBJ_THROUGHPUT
	               ? n[objective]
	               : "?";
}

const char *vrt_plan_knob_value(char *buf, size_t n, int knob, uint64_t v)
{
	if (knob == VRT_PLAN_FRACTION) {
		snprintf(buf, n, "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
		/* 0.850 -> 0.85, 1.000 -> 1.0 */
		for (size_t len = strlen(buf);
		     len > 3 && buf[len - 1] == '0' && buf[len - 2] != '.';
		     len--)
			buf[len - 1] = '\0';
	} else {
		snprintf(buf, n, "%" PRIu64, v);
	}
	return buf;
}

/* Bytes for notes and explanations, written into a compound
 * literal of the calling statement (so several fit in one line and the
 * module keeps no state). */
static const char *bytes_into(char *buf, size_t n, const char *sign, double b)
{
	size_t k = strlen(sign) < n ? strlen(sign) : 0;

	memcpy(buf, sign, k);
	vrt_text_bytes_in(buf + k, n - k, b, 2, VRT_UNIT_B, VRT_UNIT_TIB);
	return buf;
}

const char *vrt_plan_gib_into(char *buf, size_t n, uint64_t b)
{
	return bytes_into(buf, n, "", (double)b);
}

const char *vrt_plan_sgib_into(char *buf, size_t n, int64_t b)
{
	return bytes_into(buf, n, b < 0 ? "-" : "+",
	                  b < 0 ? -(double)b : (double)b);
}


static void add_line(char (*arr)[VRT_PLAN_NOTE], size_t *n, const char *fmt,
                     va_list ap)
{
	if (*n < VRT_PLAN_MAX_NOTES)
		vsnprintf(arr[(*n)++], VRT_PLAN_NOTE, fmt, ap);
}

static void unknown(struct vrt_plan *p, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void unknown(struct vrt_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_line(p->unknown, &p->nunknown, fmt, ap);
	va_end(ap);
}

static void assume(struct vrt_plan *p, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void assume(struct vrt_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	add_line(p->assume, &p->nassume, fmt, ap);
	va_end(ap);
}

/* ---- the engine's flags as knobs --------------------------------------- */

/* Knob k's engine.h field; -1 for knobs engine.h does not read. */
static int knob_field(int k)
{
	static const int f[VRT_PLAN_NKNOBS] = {
	        VRT_ENGINE_CONTEXT,      VRT_ENGINE_CONCURRENCY,
	        VRT_ENGINE_MEM_FRACTION, VRT_ENGINE_PARALLEL,
	        VRT_ENGINE_GPU_LAYERS,   VRT_ENGINE_BATCH_TOKENS,
	        VRT_ENGINE_UBATCH,       -1};
	return k >= 0 && k < VRT_PLAN_NKNOBS ? f[k] : -1;
}

/* SGLang's largest CUDA-graph batch; engine.h has no field for it. */
const char *const vrt_plan_graph_bs_flag = "--cuda-graph-max-bs";

/* A program name each engine's parser recognises (engine.h), so a flag
 * can be read through the one engine table. */
static const char *engine_program(int engine)
{
	switch (engine) {
	case VRT_ENGINE_VLLM:
		return "vllm";
	case VRT_ENGINE_SGLANG:
		return "sglang.launch_server";
	case VRT_ENGINE_LLAMACPP:
		return "llama-server";
	case VRT_ENGINE_TGI:
		return "text-generation-launcher";
	case VRT_ENGINE_TRTLLM:
		return "trtllm-serve";
	case VRT_ENGINE_OLLAMA:
		return "ollama";
	}
	return NULL;
}

static int parse_value(int knob, const char *s, uint64_t *v)
{
	if (knob == VRT_PLAN_FRACTION)
		return vrt_engine_fraction_milli(s, v);
	return vrt_engine_uint(s, v);
}

/* ---- measuring the run ------------------------------------------------- */

static uint64_t demand_sum(const uint64_t *by_phase)
{
	uint64_t s = 0;
	unsigned k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (vrt_replay_phase_is_demand(k))
			s += by_phase[k];
	return s;
}

/* The per-request phases when serving began: the last timeline point
 * before the first request (the level loading left). */
static uint64_t residue_at(const struct vrt_replay_device *rd, int64_t ts)
{
	const struct vrt_replay_point *last = NULL;
	size_t i;

	for (i = 0; i < rd->nseries && rd->series[i].ts < ts; i++)
		last = &rd->series[i];
	return last ? demand_sum(last->by_phase) : 0;
}

static void measure_devices(struct vrt_plan *p, const struct vrt_trace *t,
                            const struct vrt_replay *r)
{
	struct vrt_diagnosis *d = calloc(1, sizeof(*d));
	size_t k;

	if (!d)
		return; /* no device is measured: every term reads unknown */
	vrt_diagnose_run(d, t, r, NULL);
	for (k = 0; k < d->ndevices && p->ndev < VRT_PLAN_MAX_DEVICES; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		const struct vrt_replay_device *rd = &r->dev[x->device];
		struct vrt_plan_measure *m = &p->dev[p->ndev++];
		m->device = x->device;
		m->capacity = x->total_bytes;
		m->other = x->other_bytes;
		m->weights = rd->phase[VRT_PHASE_weights].peak_bytes;
		m->kv = x->kv_bytes;
		m->profile = rd->phase[VRT_PHASE_profile].peak_bytes;
		m->profile_held = rd->peak_by_phase[VRT_PHASE_profile];
		m->graphs = rd->phase[VRT_PHASE_cuda_graph].peak_bytes;
		m->comm = rd->phase[VRT_PHASE_comm].peak_bytes;
		m->demand_peak = demand_sum(rd->peak_by_phase);
		m->residue = r->serving ? residue_at(rd, r->serving_ts)
		                        : m->demand_peak;
		if (m->residue > m->demand_peak)
			m->residue = m->demand_peak;
		m->peak = rd->peak_bytes;
		m->peak_ts = rd->peak_ts - t->start_ns;
		m->have_single = rd->have_single_request;
		m->single = rd->single_request_bytes;
		if (m->weights > p->dev[p->template_dev].weights)
			p->template_dev = p->ndev - 1;
		if (m->profile_held)
			p->caching = 1;
	}
	free(d);
}

static void read_settings(struct vrt_plan *p, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	int k;

	vrt_engine_of_run(&er, t);
	p->engine = er.engine;
	for (k = 0; k < VRT_PLAN_NKNOBS; k++) {
		int f = knob_field(k);
		const char *v = f >= 0 ? er.value[f] : NULL;
		p->spelling[k] =
		        f >= 0 ? vrt_engine_info(p->engine)->setting[f] : NULL;
		if (v && parse_value(k, v, &p->rec[k])) {
			p->rec_have |= 1u << k;
			p->rec_from[k] = "command line";
		}
	}
	if (p->engine == VRT_ENGINE_SGLANG) {
		p->spelling[VRT_PLAN_GRAPH_BS] = vrt_plan_graph_bs_flag;
		if (er.proc != SIZE_MAX) {
			const struct vrt_process *pr = &t->procs[er.proc];
			size_t i;
			for (i = 1; i < pr->argc; i++) {
				const char *v =
				        vrt_argv_value(pr->argv, pr->argc, i,
				                       vrt_plan_graph_bs_flag);
				if (v &&
				    vrt_engine_uint(
				            v, &p->rec[VRT_PLAN_GRAPH_BS])) {
					p->rec_have |= 1u << VRT_PLAN_GRAPH_BS;
					p->rec_from[VRT_PLAN_GRAPH_BS] =
					        "command line";
				}
			}
		}
	}
#define DEFAULT(knob, v)                                                       \
	do {                                                                   \
		if (!(p->rec_have & (1u << (knob)))) {                         \
			p->rec[knob] = (v);                                    \
			p->rec_have |= 1u << (knob);                           \
			p->rec_from[knob] = "the engine's default";            \
		}                                                              \
	} while (0)
	switch (p->engine) {
	case VRT_ENGINE_VLLM:
		DEFAULT(VRT_PLAN_FRACTION, VLLM_UTIL_DEFAULT);
		break;
	case VRT_ENGINE_TGI:
		DEFAULT(VRT_PLAN_FRACTION, TGI_FRAC_DEFAULT);
		break;
	case VRT_ENGINE_TRTLLM:
		DEFAULT(VRT_PLAN_FRACTION, TRTLLM_FRAC_DEFAULT);
		break;
	case VRT_ENGINE_LLAMACPP:
	case VRT_ENGINE_OLLAMA:
		DEFAULT(VRT_PLAN_BATCH_TOKENS, LLAMA_BATCH_DEFAULT);
		DEFAULT(VRT_PLAN_UBATCH, LLAMA_UBATCH_DEFAULT);
		break;
	}
#undef DEFAULT
	if (p->engine != VRT_ENGINE_LLAMACPP &&
	    p->engine != VRT_ENGINE_OLLAMA) {
		/* one rank unless the command line says more */
		if (!(p->rec_have & (1u << VRT_PLAN_PARALLEL))) {
			p->rec[VRT_PLAN_PARALLEL] = 1;
			p->rec_have |= 1u << VRT_PLAN_PARALLEL;
			p->rec_from[VRT_PLAN_PARALLEL] = "the engine's default";
		}
	}
}

static void read_model(struct vrt_plan *p, const struct vrt_trace *t,
                       const struct vrt_model *cfg)
{
	struct vrt_model_arith *a;
	struct vrt_model_budget b;
	size_t k;

	if (!cfg)
		return;
	a = calloc(1, sizeof(*a));
	if (!a)
		return;
	memset(&b, 0, sizeof(b));
	for (k = 0; k < t->nprocs; k++)
		vrt_model_budget_argv(&b, t->procs[k].argv, t->procs[k].argc);
	b.engine = vrt_model_engine(vrt_engine_name(p->engine));
	b.tp = p->rec[VRT_PLAN_PARALLEL];
	vrt_model_arith(a, cfg, &b);
	p->model = a->desc;
	p->block_tokens = a->block_tokens;
	p->have_model = 1;
	free(a);
}


void vrt_plan_measure(struct vrt_plan *p, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg)
{
	const struct vrt_plan_measure *m;

	memset(p, 0, sizeof(*p));
	p->margin_pct = VRT_PLAN_DEFAULT_MARGIN;
	p->best = SIZE_MAX;
	p->inventory = t->ndevices;
	read_settings(p, t);
	measure_devices(p, t, r);
	read_model(p, t, cfg);
	p->serving = r->serving;
	p->failed = r->decisive != SIZE_MAX;
	p->load = r->max_inflight;
	p->have_single = r->have_single_request;
	p->single = r->single_request_peak_bytes;
	if (!p->ndev) {
		unknown(p, "every budget: the run allocated on no device");
		return;
	}
	m = &p->dev[p->template_dev];
	if (p->engine == VRT_ENGINE_SGLANG)
		vrt_plan_rules_sglang_fraction(p);
	if (!p->serving)
		unknown(p, "requests in flight: the run served no request, so "
		           "one request's activations were not measured");
	else if (!p->have_single && m->demand_peak > m->residue)
		assume(p,
		       "one request's activations: no request was alone in "
		       "flight; the average of the %" PRIu32
		       " in flight at the peak",
		       p->load);
	else if (p->have_single && !p->single && m->demand_peak <= m->residue)
		assume(p,
		       "requests grew nothing: memory %s served them; more "
		       "than the run's %" PRIu32 " in flight may not",
		       p->caching ? "the profile run left cached"
		                  : "the allocator kept",
		       p->load);
	if (!p->have_model)
		unknown(p, "KV tokens and sequences: no model description "
		           "(--model-config)");
}

/* ---- the grid ------------------------------------------------------------ */

static int axis_add(struct vrt_plan_axis *a, uint64_t v)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (a->v[i] == v)
			return 0;
	if (a->n >= VRT_PLAN_MAX_VALUES)
		return -1;
	a->v[a->n++] = v;
	return 0;
}

/* The knob a --set flag names: a knob name, else the engine's spelling
 * through engine.h's table (any alias, one dash or two). */
static int knob_of_flag(const struct vrt_plan *p, const char *flag, size_t len)
{
	char name[64], opt[72];
	const char *prog = engine_program(p->engine);
	int k, dashes;

	while (len && *flag == '-')
		flag++, len--;
	if (!len || len >= sizeof(name))
		return -1;
	memcpy(name, flag, len);
	name[len] = '\0';
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		if (!strcmp(name, vrt_plan_knob_name(k)))
			return k;
	if (!strcmp(name, vrt_plan_graph_bs_flag + 2))
		return VRT_PLAN_GRAPH_BS;
	for (dashes = 2; prog && dashes >= 1; dashes--) {
		struct vrt_engine_flags f;
		char *argv[3];
		snprintf(opt, sizeof(opt), "%s%s", dashes == 2 ? "--" : "-",
		         name);
		argv[0] = (char *)prog;
		argv[1] = opt;
		argv[2] = (char *)"1";
		vrt_engine_parse_argv(&f, argv, 3);
		for (k = 0; k < VRT_PLAN_NKNOBS; k++)
			if (knob_field(k) >= 0 && f.value[knob_field(k)])
				return k;
	}
	return -1;
}

int vrt_plan_set(struct vrt_plan *p, const char *spec, char *msg, size_t n)
{
	const char *eq = strchr(spec, '='), *s;
	struct vrt_plan_axis axis = {0, {0}};
	int k;

	if (!eq)
		return snprintf(msg, n, "'%s' is not FLAG=V1,V2,...", spec), -1;
	k = knob_of_flag(p, spec, (size_t)(eq - spec));
	if (k < 0)
		return snprintf(
		               msg, n,
		               "'%.*s' is no setting plan knows for %s "
		               "(context, "
		               "concurrency, memory fraction, tensor parallel, "
		               "GPU layers, batch sizes)",
		               (int)(eq - spec), spec,
		               vrt_engine_info(p->engine)->label[0]
		                       ? vrt_engine_info(p->engine)->label
		                       : "this run"),
		       -1;
	for (s = eq + 1;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		char v[32];
		uint64_t x;
		if (!len || len >= sizeof(v))
			return snprintf(msg, n, "empty or long value in '%s'",
			                spec),
			       -1;
		memcpy(v, s, len);
		v[len] = '\0';
		if (!parse_value(k, v, &x) || (k != VRT_PLAN_GPU_LAYERS && !x))
			return snprintf(msg, n, "'%s' is no value for %s%s", v,
			                vrt_plan_knob_name(k),
			                k == VRT_PLAN_FRACTION
			                        ? " (a fraction in (0, 1])"
			                        : " (a whole number)"),
			       -1;
		if (axis_add(&axis, x))
			return snprintf(msg, n, "more than %d values in '%s'",
			                VRT_PLAN_MAX_VALUES, spec),
			       -1;
		if (!comma)
			break;
		s = comma + 1;
	}
	p->axis[k] = axis; /* the last --set of a knob wins */
	return 0;
}

int vrt_plan_try(struct vrt_plan *p, int knob, uint64_t v)
{
	struct vrt_plan_axis *a;

	if (knob < 0 || knob >= VRT_PLAN_NKNOBS || !v || !p->spelling[knob])
		return -1;
	a = &p->axis[knob];
	if (!a->n && (p->rec_have & (1u << knob)) && axis_add(a, p->rec[knob]))
		return -1;
	return axis_add(a, v);
}

void vrt_plan_default_grid(struct vrt_plan *p)
{
	static const int knobs[] = {VRT_PLAN_CONTEXT, VRT_PLAN_CONCURRENCY,
	                            VRT_PLAN_FRACTION};
	size_t i;

	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		int k = knobs[i];
		struct vrt_plan_axis *a = &p->axis[k];
		uint64_t v = p->rec[k];
		if (a->n || !(p->rec_have & (1u << k)) || !p->spelling[k])
			continue;
		if (k == VRT_PLAN_FRACTION) {
			if (v > 50)
				axis_add(a, v - 50);
			axis_add(a, v);
			axis_add(a,
			         v + 50 > 990 ? (v > 990 ? v : 990) : v + 50);
		} else {
			if (v > 1)
				axis_add(a, v / 2);
			axis_add(a, v);
			axis_add(a, v * 2);
		}
	}
}

/* ---- the grid and the best row ------------------------------------------ */

/* The effective concurrency of a row: the setting, at most what the KV
 * cache holds. */
static uint64_t concurrency_of(const struct vrt_plan_row *r)
{
	uint64_t n = (r->have >> VRT_PLAN_CONCURRENCY) & 1
	                     ? r->knob[VRT_PLAN_CONCURRENCY]
	                     : UINT64_MAX;

	if (r->have_tokens && r->max_concurrency < n)
		n = r->max_concurrency;
	return n == UINT64_MAX ? r->inflight : n;
}

#define NSCORES 6

/* The keys a row is compared by, most important first: the objective's
 * three, then what makes a server faster at equal memory (more layers on
 * the GPU, larger batches). */
static uint64_t score(const struct vrt_plan_row *r, int objective, int which)
{
	uint64_t ctx = r->knob[VRT_PLAN_CONTEXT];
	uint64_t n = concurrency_of(r);
	uint64_t tok = r->have_tokens ? r->kv_tokens : 0;

	if (which >= 3)
		return r->knob[which == 3   ? VRT_PLAN_GPU_LAYERS
		               : which == 4 ? VRT_PLAN_UBATCH
		                            : VRT_PLAN_BATCH_TOKENS];
	if (objective == VRT_PLAN_OBJ_CONTEXT)
		return which == 0 ? ctx : which == 1 ? n : tok;
	if (objective == VRT_PLAN_OBJ_THROUGHPUT) {
		uint64_t busy =
		        n && ctx && n < UINT64_MAX / ctx ? n * ctx : tok;
		if (tok && tok < busy)
			busy = tok;
		return which == 0 ? busy : which == 1 ? n : ctx;
	}
	return which == 0 ? n : which == 1 ? ctx : tok;
}

static void choose_best(struct vrt_plan *p)
{
	int pass, which;
	size_t i;

	for (pass = VRT_PLAN_FITS; pass <= VRT_PLAN_TIGHT; pass++) {
		for (i = 0; i < p->nrows; i++) {
			const struct vrt_plan_row *r = &p->rows[i];
			if (r->fit != pass)
				continue;
			if (p->best == SIZE_MAX) {
				p->best = i;
				continue;
			}
			for (which = 0; which < NSCORES; which++) {
				uint64_t a = score(r, p->objective, which),
				         b = score(&p->rows[p->best],
				                   p->objective, which);
				if (a != b) {
					if (a > b)
						p->best = i;
					break;
				}
			}
		}
		if (p->best != SIZE_MAX)
			break;
	}
	if (p->best != SIZE_MAX)
		p->rows[p->best].best = 1;
}

/* vLLM: are CUDA graphs inside the fraction? The rule both ways at the
 * recorded settings; the one that lands nearer the measured reserve. */
static void calibrate(struct vrt_plan *p)
{
	const struct vrt_plan_measure *m;
	int64_t out, in;

	if (p->engine != VRT_ENGINE_VLLM || !p->ndev)
		return;
	m = &p->dev[p->template_dev];
	if (!m->graphs || !m->profile)
		return;
	out = vrt_plan_rules_vllm_available(p->rec[VRT_PLAN_FRACTION],
	                                    m->capacity, m->weights, m->profile,
	                                    m->comm, m->graphs, 0) -
	      (int64_t)m->kv;
	in = out - (int64_t)m->graphs;
	p->graphs_inside = (in < 0 ? -in : in) < (out < 0 ? -out : out);
	assume(p,
	       "vLLM counts the CUDA graphs (%s) %s --gpu-memory-utilization: "
	       "the measured KV reserve matches that rule%s",
	       gib(m->graphs), p->graphs_inside ? "inside" : "outside",
	       p->graphs_inside ? " (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS)"
	                        : "");
}

/* What every row assumes or cannot know, said once. */
static void preamble(struct vrt_plan *p)
{
	const struct vrt_plan_measure *m;
	int64_t gap;

	if (!p->ndev)
		return;
	m = &p->dev[p->template_dev];
	calibrate(p);
	vrt_plan_predict(p, p->rec, p->rec_have, &p->recorded, NULL);
	gap = (int64_t)p->recorded.dev[0].peak - (int64_t)m->peak;
	if (p->recorded.ndev && (uint64_t)(gap < 0 ? -gap : gap) * 100 >
	                                m->capacity * CALIBRATION_NOTE_PCT)
		assume(p,
		       "at the recorded settings the terms add up to %s, the "
		       "run peaked at %s: the gap is what the terms do not "
		       "explain",
		       gib(p->recorded.dev[0].peak), gib(m->peak));
	if (p->engine == VRT_ENGINE_UNKNOWN)
		unknown(p, "the engine: no sizing rule; only the requests in "
		           "flight are predicted, other changes are unknown");
	if (p->engine == VRT_ENGINE_VLLM && !m->profile)
		unknown(p,
		        "the profile run: the run has no profile phase, so "
		        "its peak is solved from the KV reserve and changing "
		        "--max-num-batched-tokens is unknown");
	if ((p->axis[VRT_PLAN_PARALLEL].n > 1 ||
	     (p->axis[VRT_PLAN_PARALLEL].n == 1 &&
	      p->axis[VRT_PLAN_PARALLEL].v[0] != p->rec[VRT_PLAN_PARALLEL])) &&
	    p->rec[VRT_PLAN_PARALLEL] <= 1)
		unknown(p, "communicators (NCCL) of several ranks: the run had "
		           "one");
}

int vrt_plan_run(struct vrt_plan *p, char *msg, size_t n)
{
	size_t total = 1, i;
	int k;

	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		if (p->axis[k].n) {
			total *= p->axis[k].n;
			if (total > VRT_PLAN_MAX_ROWS)
				return snprintf(msg, n,
				                "the grid has more than %d "
				                "configurations",
				                VRT_PLAN_MAX_ROWS),
				       -1;
		}
	preamble(p);
	p->rows = calloc(total, sizeof(*p->rows));
	if (!p->rows)
		return -2;
	p->nrows = total;
	for (i = 0; i < total; i++) {
		uint64_t knob[VRT_PLAN_NKNOBS];
		unsigned have = 0;
		size_t rest = i;
		/* the last knob varies fastest */
		for (k = VRT_PLAN_NKNOBS - 1; k >= 0; k--) {
			const struct vrt_plan_axis *a = &p->axis[k];
			knob[k] = p->rec[k];
			if (!a->n)
				continue;
			knob[k] = a->v[rest % a->n];
			rest /= a->n;
			have |= 1u << k;
		}
		vrt_plan_predict(p, knob, have, &p->rows[i], NULL);
	}
	choose_best(p);
	return 0;
}

void vrt_plan_free(struct vrt_plan *p)
{
	free(p->rows);
	p->rows = NULL;
	p->nrows = 0;
}
