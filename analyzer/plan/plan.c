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
 * below, written from the engine's source (docs/plan.md names where):
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
 * Pure: no I/O, no globals but constant tables. Single-threaded.
 */
#include "plan.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/argv.h"
#include "diagnose/diagnose.h"
#include "diagnose/engine.h"
#include "base/text.h"

/* TGI's TGI_WIGGLE_ROOM: the share of the free memory its KV may take. */
#define TGI_WIGGLE_MILLI 950
/* Engine defaults used when the command line gives no value. */
#define VLLM_UTIL_DEFAULT    900  /* --gpu-memory-utilization 0.9 */
#define TGI_FRAC_DEFAULT     1000 /* --cuda-memory-fraction 1.0 */
#define TRTLLM_FRAC_DEFAULT  900  /* free_gpu_memory_fraction 0.9 */
#define LLAMA_BATCH_DEFAULT  2048 /* common_params n_batch */
#define LLAMA_UBATCH_DEFAULT 512  /* common_params n_ubatch */
/* A calibration gap past this share of the capacity is worth saying. */
#define CALIBRATION_NOTE_PCT 2

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

static const char *gib_into(char *buf, size_t n, uint64_t b)
{
	return bytes_into(buf, n, "", (double)b);
}

static const char *sgib_into(char *buf, size_t n, int64_t b)
{
	return bytes_into(buf, n, b < 0 ? "-" : "+",
	                  b < 0 ? -(double)b : (double)b);
}

#define gib(b)  gib_into((char[24]){0}, 24, (b))
#define sgib(b) sgib_into((char[24]){0}, 24, (b))
#define frac_text(m)                                                           \
	vrt_plan_knob_value((char[16]){0}, 16, VRT_PLAN_FRACTION, (m))

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
static const char *const graph_bs_flag = "--cuda-graph-max-bs";

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
		p->spelling[VRT_PLAN_GRAPH_BS] = graph_bs_flag;
		if (er.proc != SIZE_MAX) {
			const struct vrt_process *pr = &t->procs[er.proc];
			size_t i;
			for (i = 1; i < pr->argc; i++) {
				const char *v = vrt_argv_value(
				        pr->argv, pr->argc, i, graph_bs_flag);
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

static void sglang_fraction(struct vrt_plan *p);

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
		sglang_fraction(p);
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
	if (!strcmp(name, graph_bs_flag + 2))
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

/* ---- one prediction ------------------------------------------------------ */

struct pctx {
	const struct vrt_plan *p;
	uint64_t k[VRT_PLAN_NKNOBS];
	unsigned have;
	struct vrt_plan_row *row;
	struct vrt_plan_explain *ex;
};

static void say(struct pctx *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void say(struct pctx *c, const char *fmt, ...)
{
	va_list ap;

	if (!c->ex || c->ex->n >= VRT_PLAN_MAX_EXPLAIN)
		return;
	va_start(ap, fmt);
	vsnprintf(c->ex->line[c->ex->n++], sizeof(c->ex->line[0]), fmt, ap);
	va_end(ap);
}

static void note(struct pctx *c, int term, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void note(struct pctx *c, int term, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->row->note[term], VRT_PLAN_NOTE, fmt, ap);
	va_end(ap);
}

static int has(const struct pctx *c, int k)
{
	return (c->have >> k) & 1;
}

/* Whether the configuration changes knob k from the recorded value (an
 * unknown recorded value counts as a change). */
static int changed(const struct pctx *c, int k)
{
	const struct vrt_plan *p = c->p;

	if (!has(c, k))
		return 0;
	return !(p->rec_have & (1u << k)) || p->rec[k] != c->k[k];
}

static const char *flagname(const struct pctx *c, int k)
{
	return c->p->spelling[k] ? c->p->spelling[k] : vrt_plan_knob_name(k);
}

static void refuse(struct pctx *c, int brk, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void refuse(struct pctx *c, int brk, const char *fmt, ...)
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
	say(c, "=> %s", c->row->reason);
}

static void set_term(struct vrt_plan_device *d, int term, uint64_t bytes,
                     int source, int held)
{
	d->term[term].bytes = source == VRT_PLAN_SRC_UNKNOWN ? 0 : bytes;
	d->term[term].source = source;
	d->term[term].held = held;
}

/* x * num / den without overflow for budgets (below 2^64 / 2^20). */
static uint64_t scale(uint64_t x, uint64_t num, uint64_t den)
{
	if (!den)
		return x;
	return (uint64_t)((long double)x * (long double)num / (long double)den);
}

/* The devices of a prediction: the recorded ones, or with another
 * tensor-parallel degree the first tp of the run's inventory, each with
 * the template device's measurements. Returns the number. */
static size_t rank_devices(struct pctx *c, uint64_t tp)
{
	const struct vrt_plan *p = c->p;
	struct vrt_plan_row *row = c->row;
	size_t i;

	if (!changed(c, VRT_PLAN_PARALLEL) || !tp) {
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
		refuse(c, VRT_PLAN_BREAK_DEVICES,
		       "%s %" PRIu64 " needs %" PRIu64
		       " devices; the run's driver reported %zu",
		       flagname(c, VRT_PLAN_PARALLEL), tp, tp, p->inventory);
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
static const struct vrt_plan_measure *measure_of(const struct pctx *c, size_t i)
{
	const struct vrt_plan *p = c->p;

	if (!changed(c, VRT_PLAN_PARALLEL) && i < p->ndev)
		return &p->dev[i];
	return &p->dev[p->template_dev];
}

/* One request's activations on device m: its own growth alone, else the
 * average of the requests in flight at its peak. */
static uint64_t per_request(const struct vrt_plan *p,
                            const struct vrt_plan_measure *m, uint32_t nrec)
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
static uint32_t inflight_of(struct pctx *c, uint64_t cap, int have_cap)
{
	uint32_t n = c->p->load;

	if (have_cap && cap < n)
		n = (uint32_t)cap;
	return n;
}

/* The in-flight term of device i: n requests of one request's growth,
 * scaled to the ranks (activations are sharded like the weights: an
 * assumption). */
static void requests_term(struct pctx *c, size_t i, uint32_t n, uint64_t num,
                          uint64_t den, uint64_t cap, int have_cap)
{
	const struct vrt_plan *p = c->p;
	const struct vrt_plan_measure *m = measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];
	uint32_t nrec = inflight_of(c, p->rec[VRT_PLAN_CONCURRENCY],
	                            (p->rec_have >> VRT_PLAN_CONCURRENCY) & 1);
	uint64_t a = scale(per_request(p, m, nrec), num, den);
	uint64_t bytes = (uint64_t)n * a;
	int src = num == den ? VRT_PLAN_SRC_MEASURED : VRT_PLAN_SRC_ASSUMPTION;

	if (!p->serving) {
		set_term(d, VRT_PLAN_REQUESTS, 0, VRT_PLAN_SRC_UNKNOWN, 1);
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
	set_term(d, VRT_PLAN_REQUESTS, bytes, src, 1);
	if (i == 0)
		say(c,
		    "requests: %" PRIu32 " in flight (the run's %" PRIu32
		    "%s) x %s each%s = %s%s",
		    n, p->load, n < p->load ? ", capped by the setting" : "",
		    gib(a), num != den ? " (scaled to the ranks)" : "",
		    gib(bytes), have_cap && bytes == cap ? " (capped)" : "");
}

/* The fixed rest: communicators and what loading left in the
 * per-request phases, held as measured; going from one rank to several
 * the communicators are unknown, from several to one there are none. */
static void other_term(struct pctx *c, size_t i, uint64_t tp_r, uint64_t tp)
{
	const struct vrt_plan_measure *m = measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];

	if (tp > 1 && tp_r <= 1)
		set_term(d, VRT_PLAN_OTHER, m->residue, VRT_PLAN_SRC_UNKNOWN,
		         1);
	else if (tp == 1 && tp_r > 1)
		set_term(d, VRT_PLAN_OTHER, m->residue, VRT_PLAN_SRC_RULE, 1);
	else
		set_term(d, VRT_PLAN_OTHER, m->comm + m->residue,
		         VRT_PLAN_SRC_MEASURED, 1);
}

/* KV tokens and sequences from the model: kv bytes per rank on tp ranks,
 * sequences of ctx tokens in blocks. */
static void kv_tokens(struct pctx *c, uint64_t kv, uint64_t tp, uint64_t ctx,
                      uint64_t block)
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
	say(c,
	    "KV tokens: %s x %" PRIu64 " ranks / %s per sequence of %" PRIu64
	    " tokens (model, blocks of %" PRIu64 ") = %" PRIu64
	    " sequences, %" PRIu64 " tokens",
	    gib(kv), tp ? tp : 1, gib(seq), ctx, block, row->max_concurrency,
	    row->kv_tokens);
}

/* The tensor-parallel degree the run had, and the configuration's. */
static uint64_t tp_recorded(const struct vrt_plan *p)
{
	return p->rec[VRT_PLAN_PARALLEL] ? p->rec[VRT_PLAN_PARALLEL] : 1;
}

static uint64_t tp_of(const struct pctx *c)
{
	return has(c, VRT_PLAN_PARALLEL) && c->k[VRT_PLAN_PARALLEL]
	               ? c->k[VRT_PLAN_PARALLEL]
	               : tp_recorded(c->p);
}

/* The loading batch's activations (a profile run, a warm-up) at the
 * configuration from bytes measured at the recorded settings: linear in
 * the batch tokens (the rule: a forward pass of that many tokens),
 * divided over the ranks like the weights (an assumption). *src is the
 * measurement's source on entry. */
static uint64_t batch_activations(const struct pctx *c, uint64_t bytes,
                                  uint64_t tp_r, uint64_t tp, int *src)
{
	const struct vrt_plan *p = c->p;

	if (changed(c, VRT_PLAN_BATCH_TOKENS)) {
		if ((p->rec_have >> VRT_PLAN_BATCH_TOKENS) & 1 &&
		    *src != VRT_PLAN_SRC_RULE) {
			bytes = scale(bytes, c->k[VRT_PLAN_BATCH_TOKENS],
			              p->rec[VRT_PLAN_BATCH_TOKENS]);
			*src = VRT_PLAN_SRC_RULE;
		} else {
			*src = VRT_PLAN_SRC_UNKNOWN;
		}
	}
	if (tp != tp_r && *src == VRT_PLAN_SRC_MEASURED)
		*src = VRT_PLAN_SRC_ASSUMPTION;
	return scale(bytes, tp_r, tp);
}

/* The terms a sharded engine's device shares: the weights over the
 * ranks, the activation budget, the CUDA graphs as measured (the same
 * capture sizes assumed) and the fixed rest. */
static void sharded_terms(struct pctx *c, size_t i, uint64_t act, int act_src,
                          uint64_t tp_r, uint64_t tp)
{
	const struct vrt_plan_measure *m = measure_of(c, i);
	struct vrt_plan_device *d = &c->row->dev[i];

	set_term(d, VRT_PLAN_WEIGHTS, scale(m->weights, tp_r, tp),
	         tp == tp_r ? VRT_PLAN_SRC_MEASURED : VRT_PLAN_SRC_RULE, 1);
	set_term(d, VRT_PLAN_ACTIVATIONS, act, act_src, m->profile_held > 0);
	set_term(d, VRT_PLAN_GRAPHS, m->graphs,
	         m->graphs ? VRT_PLAN_SRC_ASSUMPTION : VRT_PLAN_SRC_MEASURED,
	         1);
	other_term(c, i, tp_r, tp);
}

/* ---- vLLM ------------------------------------------------------------- */

/* vLLM V1 (gpu_worker.determine_available_memory): requested memory =
 * total x gpu_memory_utilization; available KV = requested - (weights +
 * the profile run's peak + the non-torch increase) - the CUDA-graph
 * estimate when VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS applies it. */
static int64_t vllm_rule(uint64_t util_milli, uint64_t total, uint64_t w,
                         uint64_t prof, uint64_t nontorch, uint64_t graphs,
                         int inside)
{
	int64_t req = (int64_t)scale(total, util_milli, 1000);
	return req - (int64_t)w - (int64_t)prof - (int64_t)nontorch -
	       (inside ? (int64_t)graphs : 0);
}

static void rule_vllm(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = tp_recorded(p), tp = tp_of(c);
	uint64_t util = c->k[VRT_PLAN_FRACTION];
	uint32_t n = inflight_of(c, c->k[VRT_PLAN_CONCURRENCY],
	                         has(c, VRT_PLAN_CONCURRENCY));
	int comm_unknown = tp > 1 && tp_r == 1;
	size_t i, nd = rank_devices(c, tp);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = scale(m->weights, tp_r, tp);
		uint64_t prof = m->profile, prof_r = m->profile;
		int prof_src = VRT_PLAN_SRC_MEASURED;
		int64_t kv_r, kv, off;
		int inside = p->graphs_inside;
		if (!m->profile) {
			/* no profile phase: the rule solved for it */
			int64_t x = vllm_rule(p->rec[VRT_PLAN_FRACTION],
			                      m->capacity, m->weights, 0,
			                      m->comm, m->graphs, inside) -
			            (int64_t)m->kv;
			prof_r = prof = x > 0 ? (uint64_t)x : 0;
			prof_src = VRT_PLAN_SRC_RULE;
		}
		prof = batch_activations(c, prof, tp_r, tp, &prof_src);
		sharded_terms(c, i, prof, prof_src, tp_r, tp);
		/* the rule at the recorded settings against the measured
		 * reserve: the gap is carried */
		kv_r = vllm_rule(p->rec[VRT_PLAN_FRACTION], m->capacity,
		                 m->weights, prof_r, m->comm, m->graphs,
		                 inside);
		off = (int64_t)m->kv - kv_r;
		kv = vllm_rule(util, d->capacity, w, prof,
		               comm_unknown || tp == 1 ? 0 : m->comm, m->graphs,
		               inside);
		kv += off;
		if (i == 0) {
			say(c,
			    "requested: %s x %s = %s (%s x the device's "
			    "total)",
			    frac_text(util), gib(d->capacity),
			    gib(scale(d->capacity, util, 1000)),
			    flagname(c, VRT_PLAN_FRACTION));
			say(c,
			    "weights: %s measured on each of %" PRIu64
			    " rank(s) -> x %" PRIu64 "/%" PRIu64 " = %s",
			    gib(m->weights), tp_r, tp_r, tp, gib(w));
			say(c, "profile peak: %s %s%s -> %s", gib(prof_r),
			    m->profile
			            ? "measured (profile phase)"
			            : "solved from the KV reserve (no profile "
			              "phase in the run)",
			    changed(c, VRT_PLAN_BATCH_TOKENS)
			            ? ", scaled by the batch tokens"
			            : "",
			    gib(prof));
			say(c,
			    "non-torch (comm): %s; CUDA graphs %s, counted "
			    "%s the fraction",
			    gib(m->comm), gib(m->graphs),
			    inside ? "inside" : "outside");
			say(c,
			    "KV cache: requested - weights - profile peak - "
			    "non-torch%s = %s, calibration %s (the rule at the "
			    "recorded settings vs the measured %s) = %s",
			    inside ? " - graphs" : "", sgib(kv - off),
			    sgib(off), gib(m->kv), sgib(kv));
		}
		if (kv <= 0) {
			set_term(d, VRT_PLAN_KV, 0, VRT_PLAN_SRC_RULE, 1);
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "vLLM refuses to start: no memory is left for "
			       "the KV cache (%s %s)",
			       flagname(c, VRT_PLAN_FRACTION), frac_text(util));
			continue;
		}
		/* the reserve is what the profile leaves: unknown with it */
		set_term(d, VRT_PLAN_KV, (uint64_t)kv,
		         prof_src == VRT_PLAN_SRC_UNKNOWN ? VRT_PLAN_SRC_UNKNOWN
		         : changed(c, VRT_PLAN_FRACTION) ||
		                         changed(c, VRT_PLAN_PARALLEL) ||
		                         changed(c, VRT_PLAN_BATCH_TOKENS)
		                 ? VRT_PLAN_SRC_RULE
		                 : VRT_PLAN_SRC_MEASURED,
		         1);
		requests_term(c, i, n, tp_r, tp, 0, 0);
		if (d->other > scale(d->capacity, 1000 - util, 1000))
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "vLLM refuses to start: device %" PRId32
			       " has %s free, less than %s x its total",
			       d->device, gib(d->capacity - d->other),
			       flagname(c, VRT_PLAN_FRACTION));
	}
	note(c, VRT_PLAN_WEIGHTS,
	     "measured (weights phase), sharded over the tensor-parallel "
	     "ranks");
	note(c, VRT_PLAN_ACTIVATIONS,
	     "the profile run's peak (%s), linear in %s",
	     p->dev[p->template_dev].profile
	             ? "measured, profile phase"
	             : "solved from the KV reserve: the run has no profile "
	               "phase",
	     flagname(c, VRT_PLAN_BATCH_TOKENS));
	note(c, VRT_PLAN_KV,
	     "vLLM: %s x total - weights - profile peak - non-torch%s",
	     flagname(c, VRT_PLAN_FRACTION),
	     p->graphs_inside ? " - CUDA graphs" : "");
	note(c, VRT_PLAN_GRAPHS,
	     "measured (cuda_graph phase); assumed the same capture sizes");
	note(c, VRT_PLAN_OTHER, "measured: comm phase and what loading left");
	note(c, VRT_PLAN_REQUESTS,
	     "in flight (the run's traffic, at most %s) x one request's "
	     "growth (measured)",
	     flagname(c, VRT_PLAN_CONCURRENCY));
	if (c->row->ndev && c->row->dev[0].term[VRT_PLAN_KV].bytes) {
		uint64_t ctx = c->k[VRT_PLAN_CONTEXT];
		uint64_t kv = c->row->dev[0].term[VRT_PLAN_KV].bytes;
		kv_tokens(c, kv, tp, ctx, p->block_tokens);
		if (c->row->have_tokens && !c->row->max_concurrency &&
		    has(c, VRT_PLAN_CONTEXT))
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "vLLM refuses to start: the KV cache holds "
			       "%" PRIu64 " tokens, fewer than one sequence of "
			       "%s %" PRIu64,
			       c->row->kv_tokens, flagname(c, VRT_PLAN_CONTEXT),
			       ctx);
		/* Without the model the check holds only where the run
		 * passed it: no longer a context, no smaller a cache per
		 * rank. */
		if (!c->row->have_tokens &&
		    ((changed(c, VRT_PLAN_CONTEXT) &&
		      !(ctx < p->rec[VRT_PLAN_CONTEXT])) ||
		     tp != tp_r || kv < p->dev[p->template_dev].kv))
			snprintf(c->row->unsure, sizeof(c->row->unsure),
			         "vLLM refuses a KV cache smaller than one %s "
			         "sequence: without --model-config its tokens "
			         "are unknown",
			         flagname(c, VRT_PLAN_CONTEXT));
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
static void sglang_fraction(struct vrt_plan *p)
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

static void rule_sglang(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = tp_recorded(p), tp = tp_of(c);
	uint64_t ctx = c->k[VRT_PLAN_CONTEXT];
	uint64_t frac = c->k[VRT_PLAN_FRACTION],
	         frac_r = p->rec[VRT_PLAN_FRACTION];
	uint64_t cell = 0;
	uint64_t tokens_min = UINT64_MAX, reqs = 0;
	int rtt_known = 0;
	size_t i, nd = rank_devices(c, tp);

	if (p->have_model)
		cell = vrt_model_seq_bytes(&p->model, 1, 1, tp) / tp;
	/* pass 1: the pool on every rank; SGLang takes the smallest */
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t pre = sglang_pre(d->capacity, d->other, m->comm);
		uint64_t pre_r = sglang_pre(m->capacity, m->other, m->comm);
		uint64_t w = scale(m->weights, tp_r, tp), rtt_r;
		int64_t pool_r, pool, off;
		rtt_known = sglang_recorded_rtt(p, m, &rtt_r);
		pool_r = (int64_t)scale(pre_r, frac_r, 1000) -
		         (int64_t)m->weights;
		off = (int64_t)m->kv - (int64_t)rtt_r - pool_r;
		pool = (int64_t)scale(pre, frac, 1000) - (int64_t)w;
		/* no profile run; the graphs are sized in pass 2 */
		sharded_terms(c, i, m->profile, VRT_PLAN_SRC_MEASURED, tp_r,
		              tp);
		if (i == 0) {
			say(c,
			    "free before the weights: %s total - %s other "
			    "processes - %s comm = %s",
			    gib(d->capacity), gib(d->other), gib(m->comm),
			    gib(pre));
			say(c,
			    "weights: %s measured per rank x %" PRIu64
			    "/%" PRIu64 " = %s",
			    gib(m->weights), tp_r, tp, gib(w));
			say(c,
			    "KV pool: free after the weights - free before x "
			    "(1 - %s %s) = %s x %s - %s = %s",
			    flagname(c, VRT_PLAN_FRACTION), frac_text(frac),
			    gib(pre), frac_text(frac), gib(w), sgib(pool));
			say(c,
			    "calibration: %s (the rule at the recorded "
			    "settings vs the measured kv_cache phase%s)",
			    sgib(off),
			    rtt_known ? " less its ReqToTokenPool"
			              : ", its ReqToTokenPool included");
		}
		pool += off;
		if (pool <= 0) {
			set_term(d, VRT_PLAN_KV, 0, VRT_PLAN_SRC_RULE, 1);
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "SGLang refuses to start: loaded weights leave "
			       "no "
			       "memory for the KV cache under %s %s",
			       flagname(c, VRT_PLAN_FRACTION), frac_text(frac));
			tokens_min = 0;
			continue;
		}
		set_term(d, VRT_PLAN_KV, (uint64_t)pool,
		         changed(c, VRT_PLAN_FRACTION) ||
		                         changed(c, VRT_PLAN_PARALLEL)
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
		say(c,
		    "max_total_num_tokens: %s / %s per token per rank "
		    "(model) = %" PRIu64,
		    gib(c->row->dev[0].term[VRT_PLAN_KV].bytes), gib(cell),
		    tokens_min);
		if (!tokens_min)
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "SGLang refuses to start: not enough memory for "
			       "one token (raise %s)",
			       flagname(c, VRT_PLAN_FRACTION));
	}
	if (c->row->have_tokens)
		reqs = sglang_max_reqs(c->row->kv_tokens, ctx,
		                       c->k[VRT_PLAN_CONCURRENCY],
		                       has(c, VRT_PLAN_CONCURRENCY));
	else if (has(c, VRT_PLAN_CONCURRENCY))
		reqs = c->k[VRT_PLAN_CONCURRENCY];
	c->row->inflight = inflight_of(c, reqs, reqs != 0);
	if (reqs)
		say(c,
		    "max_running_requests: %" PRIu64
		    " (SGLang: the setting, at most half the tokens; without "
		    "it from the tokens)",
		    reqs);
	/* pass 2: the request table, graphs and requests */
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t rtt = reqs && ctx ? sglang_req_pool(reqs, ctx) : 0;
		uint64_t graphs = m->graphs, cap = 0;
		uint32_t nrec =
		        inflight_of(c, p->rec[VRT_PLAN_CONCURRENCY],
		                    (p->rec_have >> VRT_PLAN_CONCURRENCY) & 1);
		uint64_t a = per_request(p, m, nrec);
		int graph_src = VRT_PLAN_SRC_MEASURED, have_cap = 0;
		/* the request table: added where the run's own is known
		 * (then out of the calibration), else carried in it, which
		 * holds only while context and cap stay as recorded */
		if (rtt_known && reqs && d->term[VRT_PLAN_KV].bytes)
			d->term[VRT_PLAN_KV].bytes += rtt;
		else if (changed(c, VRT_PLAN_CONTEXT) ||
		         changed(c, VRT_PLAN_CONCURRENCY))
			set_term(d, VRT_PLAN_KV, 0, VRT_PLAN_SRC_UNKNOWN, 1);
		if (changed(c, VRT_PLAN_GRAPH_BS)) {
			if ((p->rec_have >> VRT_PLAN_GRAPH_BS) & 1) {
				graphs = scale(graphs, c->k[VRT_PLAN_GRAPH_BS],
				               p->rec[VRT_PLAN_GRAPH_BS]);
				graph_src = VRT_PLAN_SRC_ASSUMPTION;
			} else {
				graph_src = VRT_PLAN_SRC_UNKNOWN;
			}
		}
		set_term(d, VRT_PLAN_GRAPHS, scale(graphs, tp_r, tp), graph_src,
		         1);
		/* the prefill chunk caps a batch's activations: the run
		 * shows the cap when its batch at the peak grew less than
		 * its requests alone would have */
		if (nrec > 1 && a && m->demand_peak > m->residue &&
		    (m->demand_peak - m->residue) * 20 <
		            (uint64_t)nrec * a * 19) {
			cap = m->demand_peak - m->residue;
			have_cap = 1;
			if (changed(c, VRT_PLAN_BATCH_TOKENS)) {
				if ((p->rec_have >> VRT_PLAN_BATCH_TOKENS) & 1)
					cap = scale(
					        cap,
					        c->k[VRT_PLAN_BATCH_TOKENS],
					        p->rec[VRT_PLAN_BATCH_TOKENS]);
				else
					have_cap = 0;
			}
			cap = scale(cap, tp_r, tp);
		}
		if (i == 0) {
			say(c,
			    "ReqToTokenPool: (%" PRIu64 " + 1) x (%" PRIu64
			    " + 4) x 4 bytes = %s, in the KV term",
			    reqs, ctx, gib(rtt));
			say(c, "CUDA graphs: %s measured%s = %s",
			    gib(m->graphs),
			    changed(c, VRT_PLAN_GRAPH_BS)
			            ? ", proportional to the largest batch"
			            : "",
			    gib(d->term[VRT_PLAN_GRAPHS].bytes));
			if (have_cap)
				say(c,
				    "prefill chunk: a batch's activations at "
				    "most %s (measured at the peak)",
				    gib(cap));
		}
		requests_term(c, i, c->row->inflight, tp_r, tp, cap, have_cap);
	}
	note(c, VRT_PLAN_WEIGHTS, "measured (weights phase), sharded over %s",
	     flagname(c, VRT_PLAN_PARALLEL));
	note(c, VRT_PLAN_ACTIVATIONS,
	     "measured (profile phase; SGLang sizes its pool without a "
	     "profile run)");
	note(c, VRT_PLAN_KV,
	     "SGLang: free after weights - free before x (1 - %s), plus "
	     "the ReqToTokenPool",
	     flagname(c, VRT_PLAN_FRACTION));
	note(c, VRT_PLAN_GRAPHS,
	     "measured (cuda_graph phase), proportional to %s", graph_bs_flag);
	note(c, VRT_PLAN_OTHER, "measured: comm phase and what loading left");
	note(c, VRT_PLAN_REQUESTS,
	     "in flight (at most max_running_requests) x one request's growth, "
	     "at most a prefill chunk's");
}

/* ---- llama.cpp ------------------------------------------------------ */

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;
	return m < c ? m : c;
}

static void rule_llamacpp(struct pctx *c)
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
	uint32_t n = inflight_of(c, c->k[VRT_PLAN_CONCURRENCY],
	                         has(c, VRT_PLAN_CONCURRENCY));
	int ngl_src = VRT_PLAN_SRC_MEASURED, ctx_src = VRT_PLAN_SRC_MEASURED;
	int act_src = VRT_PLAN_SRC_MEASURED;
	size_t i, nd = rank_devices(c, 0);

	c->row->inflight = n;
	if (changed(c, VRT_PLAN_GPU_LAYERS)) {
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
	if (changed(c, VRT_PLAN_CONTEXT))
		ctx_src = (p->rec_have >> VRT_PLAN_CONTEXT) & 1
		                  ? VRT_PLAN_SRC_RULE
		                  : VRT_PLAN_SRC_UNKNOWN;
	if (g != g_r)
		act_src = g_r ? VRT_PLAN_SRC_ASSUMPTION : VRT_PLAN_SRC_UNKNOWN;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = scale(m->weights, off, off_r);
		uint64_t kv = scale(scale(m->kv, off, off_r),
		                    ctx_src == VRT_PLAN_SRC_RULE ? ctx : 1,
		                    ctx_src == VRT_PLAN_SRC_RULE ? ctx_r : 1);
		uint64_t act = act_src == VRT_PLAN_SRC_ASSUMPTION
		                       ? scale(m->profile, g, g_r)
		                       : m->profile;
		int kv_src = ctx_src == VRT_PLAN_SRC_UNKNOWN ||
		                             ngl_src == VRT_PLAN_SRC_UNKNOWN
		                     ? VRT_PLAN_SRC_UNKNOWN
		             : ctx_src == VRT_PLAN_SRC_RULE ||
		                             ngl_src != VRT_PLAN_SRC_MEASURED
		                     ? VRT_PLAN_SRC_RULE
		                     : VRT_PLAN_SRC_MEASURED;
		set_term(d, VRT_PLAN_WEIGHTS, w, ngl_src, 1);
		set_term(d, VRT_PLAN_KV, kv, kv_src, 1);
		set_term(d, VRT_PLAN_ACTIVATIONS, act,
		         m->profile ? act_src : VRT_PLAN_SRC_MEASURED, 1);
		set_term(d, VRT_PLAN_GRAPHS, m->graphs, VRT_PLAN_SRC_MEASURED,
		         1);
		other_term(c, i, 1, 1);
		if (i == 0) {
			if (changed(c, VRT_PLAN_GPU_LAYERS))
				say(c,
				    "weights: %s measured for %" PRIu64
				    " offloaded layers -> %" PRIu64 " = %s",
				    gib(m->weights), off_r, off, gib(w));
			else
				say(c, "weights: %s measured (%s as recorded)",
				    gib(w), flagname(c, VRT_PLAN_GPU_LAYERS));
			say(c,
			    "KV buffer: %s measured at %s %" PRIu64
			    " -> x %" PRIu64 "/%" PRIu64 " tokens x %" PRIu64
			    "/%" PRIu64 " layers = %s",
			    gib(m->kv), flagname(c, VRT_PLAN_CONTEXT), ctx_r,
			    ctx, ctx_r, off, off_r, gib(kv));
			say(c,
			    "compute buffer: %s measured for a graph of "
			    "%" PRIu64 " tokens -> %" PRIu64 " tokens = %s",
			    gib(m->profile), g_r, g, gib(act));
		}
		requests_term(c, i, n, 1, 1, 0, 0);
	}
	if (ctx) {
		/* n_ctx cells, shared by the slots (n_ctx_seq = n_ctx /
		 * n_seq_max unless --kv-unified) */
		c->row->have_tokens = 1;
		c->row->kv_tokens = ctx;
		c->row->max_concurrency = has(c, VRT_PLAN_CONCURRENCY)
		                                  ? c->k[VRT_PLAN_CONCURRENCY]
		                                  : 0;
		c->row->context_per_seq =
		        c->row->max_concurrency ? ctx / c->row->max_concurrency
		                                : ctx;
		say(c,
		    "slots: %s %" PRIu64 " share %s %" PRIu64 ": %" PRIu64
		    " tokens each",
		    flagname(c, VRT_PLAN_CONCURRENCY), c->row->max_concurrency,
		    flagname(c, VRT_PLAN_CONTEXT), ctx,
		    c->row->context_per_seq);
	}
	note(c, VRT_PLAN_WEIGHTS,
	     "measured (weights phase), per offloaded layer x %s",
	     flagname(c, VRT_PLAN_GPU_LAYERS));
	note(c, VRT_PLAN_ACTIVATIONS,
	     "the compute buffer (profile phase), proportional to "
	     "min(-c, -b, -ub) tokens");
	note(c, VRT_PLAN_KV,
	     "llama.cpp: %s x bytes per token (measured) of the offloaded "
	     "layers",
	     flagname(c, VRT_PLAN_CONTEXT));
	note(c, VRT_PLAN_GRAPHS, "measured (cuda_graph phase)");
	note(c, VRT_PLAN_OTHER, "measured: comm phase and what loading left");
	note(c, VRT_PLAN_REQUESTS,
	     "in flight (at most %s slots) x one request's growth (measured)",
	     flagname(c, VRT_PLAN_CONCURRENCY));
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
		                 (int64_t)scale(total, 1000 - frac, 1000);
		return free_b > 0 ? (int64_t)scale((uint64_t)free_b,
		                                   TGI_WIGGLE_MILLI, 1000)
		                  : free_b;
	}
	return (int64_t)scale(total > (uint64_t)used ? total - (uint64_t)used
	                                             : 0,
	                      frac, 1000);
}

static void rule_fraction(struct pctx *c)
{
	const struct vrt_plan *p = c->p;
	uint64_t tp_r = tp_recorded(p), tp = tp_of(c);
	uint64_t frac = c->k[VRT_PLAN_FRACTION];
	uint32_t n = inflight_of(c, c->k[VRT_PLAN_CONCURRENCY],
	                         has(c, VRT_PLAN_CONCURRENCY));
	int comm_unknown = tp > 1 && tp_r == 1;
	const char *label = vrt_engine_info(p->engine)->label;
	size_t i, nd = rank_devices(c, tp);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		uint64_t w = scale(m->weights, tp_r, tp);
		int act_src = VRT_PLAN_SRC_MEASURED;
		uint64_t act =
		        batch_activations(c, m->profile, tp_r, tp, &act_src);
		int64_t kv_r, kv, off;
		kv_r = fraction_rule(p->engine, p->rec[VRT_PLAN_FRACTION],
		                     m->capacity, m->other, m->weights,
		                     m->profile_held ? m->profile : 0, m->comm);
		off = (int64_t)m->kv - kv_r;
		kv = fraction_rule(p->engine, frac, d->capacity, d->other, w,
		                   m->profile_held ? act : 0,
		                   comm_unknown || tp == 1 ? 0 : m->comm) +
		     off;
		sharded_terms(c, i, act, act_src, tp_r, tp);
		if (i == 0)
			say(c,
			    "KV cache (%s rule) at %s %s: %s, calibration %s "
			    "= %s",
			    label, flagname(c, VRT_PLAN_FRACTION),
			    frac_text(frac), sgib(kv - off), sgib(off),
			    sgib(kv));
		if (kv <= 0) {
			set_term(d, VRT_PLAN_KV, 0, VRT_PLAN_SRC_RULE, 1);
			refuse(c, VRT_PLAN_BREAK_REFUSED,
			       "%s refuses to start: no memory is left for the "
			       "KV cache under %s",
			       label, flagname(c, VRT_PLAN_FRACTION));
			continue;
		}
		set_term(d, VRT_PLAN_KV, (uint64_t)kv,
		         act_src == VRT_PLAN_SRC_UNKNOWN && m->profile_held
		                 ? VRT_PLAN_SRC_UNKNOWN
		         : changed(c, VRT_PLAN_FRACTION) ||
		                         changed(c, VRT_PLAN_PARALLEL) ||
		                         changed(c, VRT_PLAN_BATCH_TOKENS)
		                 ? VRT_PLAN_SRC_RULE
		                 : VRT_PLAN_SRC_MEASURED,
		         1);
		requests_term(c, i, n, tp_r, tp, 0, 0);
	}
	note(c, VRT_PLAN_WEIGHTS, "measured (weights phase), sharded over %s",
	     flagname(c, VRT_PLAN_PARALLEL));
	note(c, VRT_PLAN_ACTIVATIONS,
	     "the warm-up's peak (profile phase), linear in %s",
	     flagname(c, VRT_PLAN_BATCH_TOKENS));
	note(c, VRT_PLAN_KV,
	     p->engine == VRT_ENGINE_TGI
	             ? "TGI: 0.95 x (free after warm-up - (1 - %s) x total)"
	             : "TensorRT-LLM: (total - peak before the KV cache) x %s",
	     flagname(c, VRT_PLAN_FRACTION));
	note(c, VRT_PLAN_GRAPHS, "measured (cuda_graph phase)");
	note(c, VRT_PLAN_OTHER, "measured: comm phase and what loading left");
	note(c, VRT_PLAN_REQUESTS,
	     "in flight (at most %s) x one request's growth (measured)",
	     flagname(c, VRT_PLAN_CONCURRENCY));
	if (c->row->ndev && c->row->dev[0].term[VRT_PLAN_KV].bytes)
		kv_tokens(c, c->row->dev[0].term[VRT_PLAN_KV].bytes, tp,
		          c->k[VRT_PLAN_CONTEXT], p->block_tokens);
}

/* ---- an engine without a rule ---------------------------------------- */

static void rule_generic(struct pctx *c)
{
	uint32_t n = inflight_of(c, c->k[VRT_PLAN_CONCURRENCY],
	                         has(c, VRT_PLAN_CONCURRENCY));
	int moved = changed(c, VRT_PLAN_CONTEXT) ||
	            changed(c, VRT_PLAN_FRACTION) ||
	            changed(c, VRT_PLAN_PARALLEL) ||
	            changed(c, VRT_PLAN_GPU_LAYERS) ||
	            changed(c, VRT_PLAN_BATCH_TOKENS) ||
	            changed(c, VRT_PLAN_UBATCH);
	size_t i, nd = rank_devices(c, 0);

	c->row->inflight = n;
	for (i = 0; i < nd; i++) {
		const struct vrt_plan_measure *m = measure_of(c, i);
		struct vrt_plan_device *d = &c->row->dev[i];
		int src = moved ? VRT_PLAN_SRC_UNKNOWN : VRT_PLAN_SRC_MEASURED;
		set_term(d, VRT_PLAN_WEIGHTS, m->weights, VRT_PLAN_SRC_MEASURED,
		         1);
		set_term(d, VRT_PLAN_ACTIVATIONS, m->profile, src,
		         m->profile_held > 0);
		set_term(d, VRT_PLAN_KV, m->kv, src, 1);
		set_term(d, VRT_PLAN_GRAPHS, m->graphs, VRT_PLAN_SRC_MEASURED,
		         1);
		other_term(c, i, 1, 1);
		requests_term(c, i, n, 1, 1, 0, 0);
	}
	for (i = 0; i < VRT_PLAN_NTERMS; i++)
		note(c, (int)i, "measured; no sizing rule for this engine");
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
		if (!d->over && d->headroom * 100 < d->capacity * p->margin_pct)
			tight = 1;
		if (i == 0)
			say(c,
			    "device %" PRId32 ": peak max(loading %s, serving "
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
		if (changed(&c, k))
			row->recorded = 0;
	if (!p->ndev) {
		row->fit = VRT_PLAN_UNSURE;
		snprintf(row->reason, sizeof(row->reason),
		         "the run allocated on no device");
		return;
	}
	switch (p->engine) {
	case VRT_ENGINE_VLLM:
		rule_vllm(&c);
		break;
	case VRT_ENGINE_SGLANG:
		rule_sglang(&c);
		break;
	case VRT_ENGINE_LLAMACPP:
	case VRT_ENGINE_OLLAMA:
		rule_llamacpp(&c);
		break;
	case VRT_ENGINE_TGI:
	case VRT_ENGINE_TRTLLM:
		rule_fraction(&c);
		break;
	default:
		rule_generic(&c);
	}
	judge(&c);
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
	out = vllm_rule(p->rec[VRT_PLAN_FRACTION], m->capacity, m->weights,
	                m->profile, m->comm, m->graphs, 0) -
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
