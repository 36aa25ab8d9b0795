/*
 * Unit tests of plan.c on hand-made measurements (no trace): each
 * engine's sizing rule term by term (vLLM's utilization arithmetic and
 * its refusals, CUDA graphs inside or outside the fraction, tensor
 * parallel and its devices; SGLang's pool, ReqToTokenPool, request cap and
 * prefill chunk; llama.cpp's -ngl, -c and -ub; TGI and TensorRT-LLM
 * fractions), the sources every term reports, what cannot be predicted,
 * --set spellings, the default grid and the best row by objective. TAP
 * output; argv[1] is tests/data (for the Llama 3 8B config).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/engine.h"
#include "model/model.h"
#include "model/model_read.h"
#include "plan/plan.h"

#include "../tap.h"

/* EQ evaluates its arguments twice: a call with effects goes here. */
#define RC(call, want, name)                                                   \
	do {                                                                   \
		long rc_ = (call);                                             \
		EQ(rc_, (want), name);                                         \
	} while (0)

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static struct vrt_model llama;
static int have_llama;

/* A plan of one 80 GiB device with the given measurements. */
static void base(struct vrt_plan *p, int engine)
{
	memset(p, 0, sizeof(*p));
	p->engine = engine;
	p->margin_pct = 5;
	p->best = SIZE_MAX;
	p->ndev = 1;
	p->inventory = 2;
	p->serving = 1;
	p->load = 4;
	p->dev[0].device = 0;
	p->dev[0].capacity = 80 * GiB;
	p->have_single = 1;
	p->single = 1 * GiB;
	p->dev[0].have_single = 1;
	p->dev[0].single = 1 * GiB;
	p->block_tokens = 16;
}

static void rec(struct vrt_plan *p, int knob, uint64_t v)
{
	p->rec[knob] = v;
	p->rec_have |= 1u << knob;
	p->rec_from[knob] = "command line";
}

static void vllm_run(struct vrt_plan *p)
{
	struct vrt_plan_measure *m = &p->dev[0];

	base(p, VRT_ENGINE_VLLM);
	rec(p, VRT_PLAN_FRACTION, 900);
	rec(p, VRT_PLAN_CONTEXT, 8192);
	rec(p, VRT_PLAN_CONCURRENCY, 4);
	rec(p, VRT_PLAN_PARALLEL, 1);
	rec(p, VRT_PLAN_BATCH_TOKENS, 2048);
	p->spelling[VRT_PLAN_FRACTION] = "--gpu-memory-utilization";
	p->spelling[VRT_PLAN_CONTEXT] = "--max-model-len";
	m->weights = 14 * GiB;
	m->profile = 512 * MiB;
	m->kv = 57 * GiB + 512 * MiB;
	m->graphs = 1 * GiB;
	m->demand_peak = 4 * GiB;
	m->peak = 76 * GiB + 512 * MiB;
}

static void predict1(const struct vrt_plan *p, int knob, uint64_t v,
                     struct vrt_plan_row *row)
{
	uint64_t k[VRT_PLAN_NKNOBS] = {0};

	k[knob] = v;
	vrt_plan_predict(p, k, 1u << knob, row, NULL);
}

static void test_vllm(void)
{
	struct vrt_plan p;
	struct vrt_plan_row *row = calloc(1, sizeof(*row));
	uint64_t k[VRT_PLAN_NKNOBS] = {0};

	vllm_run(&p);
	vrt_plan_predict(&p, p.rec, p.rec_have, row, NULL);
	ok(row->recorded, "vllm: the recorded settings are the recorded row");
	EQ(row->dev[0].peak, 76 * GiB + 512 * MiB,
	   "vllm: the recorded settings predict the recorded peak");
	EQ(row->dev[0].term[VRT_PLAN_KV].source, VRT_PLAN_SRC_MEASURED,
	   "vllm: KV at the recorded settings is measured");

	predict1(&p, VRT_PLAN_FRACTION, 800, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 64 * GiB - 14 * GiB - 512 * MiB,
	   "vllm: KV = 0.8 x 80 - 14 - 0.5 GiB");
	EQ(row->dev[0].term[VRT_PLAN_KV].source, VRT_PLAN_SRC_RULE,
	   "vllm: a new fraction's KV comes from the rule");
	EQ(row->dev[0].term[VRT_PLAN_ACTIVATIONS].held, 0,
	   "vllm: the plain profile run is not in the serving peak");
	EQ(row->dev[0].peak,
	   14 * GiB + 49 * GiB + 512 * MiB + 1 * GiB + 4 * GiB,
	   "vllm: peak = weights + KV + graphs + 4 requests");
	EQ(row->fit, VRT_PLAN_UNSURE,
	   "vllm: 0.8 without the model: is the smaller cache one sequence?");

	predict1(&p, VRT_PLAN_CONCURRENCY, 2, row);
	EQ(row->inflight, 2, "vllm: --max-num-seqs 2 caps the 4 in flight");
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].bytes, 2 * GiB,
	   "vllm: two requests of 1 GiB");

	predict1(&p, VRT_PLAN_FRACTION, 980, row);
	EQ(row->fit, VRT_PLAN_NO, "vllm: 0.98 does not fit");
	EQ(row->brk, VRT_PLAN_BREAK_IN_FLIGHT,
	   "vllm: 0.98 breaks at the requests in flight");

	predict1(&p, VRT_PLAN_FRACTION, 150, row);
	EQ(row->brk, VRT_PLAN_BREAK_REFUSED,
	   "vllm: 0.15 leaves nothing for the KV cache: refused");

	predict1(&p, VRT_PLAN_BATCH_TOKENS, 8192, row);
	EQ(row->dev[0].term[VRT_PLAN_ACTIVATIONS].bytes, 2 * GiB,
	   "vllm: the profile scales with --max-num-batched-tokens");
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 72 * GiB - 14 * GiB - 2 * GiB,
	   "vllm: ... and the KV cache shrinks by as much");

	/* tensor parallel 2 on the run's two devices */
	predict1(&p, VRT_PLAN_PARALLEL, 2, row);
	EQ(row->ndev, 2, "vllm: tp 2 predicts two devices");
	EQ(row->dev[1].term[VRT_PLAN_WEIGHTS].bytes, 7 * GiB,
	   "vllm: tp 2 halves the weights");
	EQ(row->dev[1].term[VRT_PLAN_OTHER].source, VRT_PLAN_SRC_UNKNOWN,
	   "vllm: communicators of two ranks are unknown from one");
	EQ(row->fit, VRT_PLAN_UNSURE, "vllm: tp 2 is unsure");
	predict1(&p, VRT_PLAN_PARALLEL, 4, row);
	EQ(row->brk, VRT_PLAN_BREAK_DEVICES,
	   "vllm: tp 4 needs more devices than the run had");

	/* graphs counted inside the fraction: the run's KV says so */
	vllm_run(&p);
	p.dev[0].kv = 56 * GiB + 512 * MiB;
	p.axis[VRT_PLAN_FRACTION].n = 1;
	p.axis[VRT_PLAN_FRACTION].v[0] = 800;
	{
		char msg[128];
		RC(vrt_plan_run(&p, msg, sizeof(msg)), 0, "vllm: plan runs");
	}
	EQ(p.graphs_inside, 1, "vllm: graphs inside the fraction detected");
	EQ(p.rows[0].dev[0].term[VRT_PLAN_KV].bytes,
	   64 * GiB - 14 * GiB - 512 * MiB - 1 * GiB,
	   "vllm: ... and subtracted at another fraction");
	vrt_plan_free(&p);

	/* the model: tokens and vLLM's one-sequence check */
	if (have_llama) {
		vllm_run(&p);
		p.model = llama;
		p.have_model = 1;
		predict1(&p, VRT_PLAN_FRACTION, 800, row);
		EQ(row->fit, VRT_PLAN_FITS, "vllm: 0.8 fits, with the model");
		predict1(&p, VRT_PLAN_FRACTION, 900, row);
		EQ(row->kv_tokens, 471040,
		   "vllm: 57.5 GiB / 128 KiB = 471040 tokens");
		EQ(row->max_concurrency, 57, "vllm: 57 sequences of 8192");
		predict1(&p, VRT_PLAN_CONTEXT, 524288, row);
		EQ(row->brk, VRT_PLAN_BREAK_REFUSED,
		   "vllm: 57.5 GiB cannot hold one sequence of 524288");
	}
	/* without it the check holds only for contexts the run passed */
	vllm_run(&p);
	predict1(&p, VRT_PLAN_CONTEXT, 4096, row);
	ok(row->fit == VRT_PLAN_TIGHT,
	   "vllm: a shorter context passes the check (got %d)", row->fit);
	predict1(&p, VRT_PLAN_CONTEXT, 16384, row);
	EQ(row->fit, VRT_PLAN_UNSURE,
	   "vllm: a longer context without the model is unsure");

	/* no profile phase: solved from the KV reserve, batch unknown */
	vllm_run(&p);
	p.dev[0].profile = 0;
	predict1(&p, VRT_PLAN_FRACTION, 800, row);
	EQ(row->dev[0].term[VRT_PLAN_ACTIVATIONS].bytes, 512 * MiB,
	   "vllm: the profile peak solved from the reserve");
	EQ(row->dev[0].term[VRT_PLAN_ACTIVATIONS].source, VRT_PLAN_SRC_RULE,
	   "vllm: ... by the rule");
	predict1(&p, VRT_PLAN_BATCH_TOKENS, 4096, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].source, VRT_PLAN_SRC_UNKNOWN,
	   "vllm: no profile phase: another batch's KV is unknown");
	EQ(row->fit, VRT_PLAN_UNSURE, "vllm: ... and its fit unsure");

	/* no request served */
	vllm_run(&p);
	p.serving = 0;
	vrt_plan_predict(&p, k, 0, row, NULL);
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].source, VRT_PLAN_SRC_UNKNOWN,
	   "vllm: no request served: requests unknown");
	free(row);
}

static void sglang_run(struct vrt_plan *p)
{
	struct vrt_plan_measure *m = &p->dev[0];
	uint64_t rtt = 5ull * 8196 * 4;

	base(p, VRT_ENGINE_SGLANG);
	rec(p, VRT_PLAN_FRACTION, 850);
	rec(p, VRT_PLAN_CONTEXT, 8192);
	rec(p, VRT_PLAN_CONCURRENCY, 4);
	rec(p, VRT_PLAN_PARALLEL, 1);
	rec(p, VRT_PLAN_BATCH_TOKENS, 8192);
	rec(p, VRT_PLAN_GRAPH_BS, 64);
	m->weights = 14 * GiB;
	m->kv = 54 * GiB + rtt;
	m->graphs = 512 * MiB;
	p->load = 6;
	/* the prefill chunk capped the batch: 2 GiB for 4 requests of 1 */
	m->demand_peak = 2 * GiB;
	m->peak = 14 * GiB + m->kv + 512 * MiB + 2 * GiB;
}

static void test_sglang(void)
{
	struct vrt_plan p;
	struct vrt_plan_row *row = calloc(1, sizeof(*row));
	uint64_t k[VRT_PLAN_NKNOBS] = {0};

	sglang_run(&p);
	vrt_plan_predict(&p, p.rec, p.rec_have, row, NULL);
	EQ(row->dev[0].peak, p.dev[0].peak,
	   "sglang: the recorded settings predict the recorded peak");
	predict1(&p, VRT_PLAN_FRACTION, 900, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 58 * GiB + 5ull * 8196 * 4,
	   "sglang: pool = 0.9 x 80 - 14 GiB, plus the ReqToTokenPool");
	predict1(&p, VRT_PLAN_FRACTION, 150, row);
	EQ(row->brk, VRT_PLAN_BREAK_REFUSED,
	   "sglang: 0.15 x 80 < 14 GiB of weights: refused");
	predict1(&p, VRT_PLAN_CONCURRENCY, 2, row);
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].bytes, 2 * GiB,
	   "sglang: two requests of 1 GiB");
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 54 * GiB + 3ull * 8196 * 4,
	   "sglang: a ReqToTokenPool of 3 rows");
	predict1(&p, VRT_PLAN_CONCURRENCY, 8, row);
	EQ(row->inflight, 6, "sglang: the run's six requests in flight");
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].bytes, 2 * GiB,
	   "sglang: six requests capped by the prefill chunk");
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].source, VRT_PLAN_SRC_RULE,
	   "sglang: the cap is the rule's");
	predict1(&p, VRT_PLAN_GRAPH_BS, 256, row);
	EQ(row->dev[0].term[VRT_PLAN_GRAPHS].bytes, 2 * GiB,
	   "sglang: graphs proportional to --cuda-graph-max-bs");
	EQ(row->dev[0].term[VRT_PLAN_GRAPHS].source, VRT_PLAN_SRC_ASSUMPTION,
	   "sglang: ... an assumption");
	/* the context changes the ReqToTokenPool */
	predict1(&p, VRT_PLAN_CONTEXT, 65536, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 54 * GiB + 5ull * 65540 * 4,
	   "sglang: the ReqToTokenPool follows the context");
	/* without --max-running-requests nor a model it cannot */
	sglang_run(&p);
	p.rec_have &= ~(1u << VRT_PLAN_CONCURRENCY);
	p.dev[0].kv = 54 * GiB + 4097ull * 8196 * 4;
	predict1(&p, VRT_PLAN_CONTEXT, 65536, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].source, VRT_PLAN_SRC_UNKNOWN,
	   "sglang: the request table of another context without the cap "
	   "or the model is unknown");
	if (have_llama) {
		p.model = llama;
		p.have_model = 1;
		vrt_plan_predict(&p, k, 0, row, NULL);
		EQ(row->kv_tokens, 442368,
		   "sglang: 54 GiB / 128 KiB per token");
		predict1(&p, VRT_PLAN_CONTEXT, 65536, row);
		EQ(row->dev[0].term[VRT_PLAN_KV].bytes,
		   54 * GiB + 3457ull * 65540 * 4,
		   "sglang: with the model the default cap is known: "
		   "442368 / 65536 x 512 = 3456");
	}
	free(row);
}

static void test_llamacpp(void)
{
	struct vrt_plan p;
	struct vrt_plan_row *row = calloc(1, sizeof(*row));
	struct vrt_plan_measure *m = &p.dev[0];

	base(&p, VRT_ENGINE_LLAMACPP);
	rec(&p, VRT_PLAN_CONTEXT, 32768);
	rec(&p, VRT_PLAN_CONCURRENCY, 4);
	rec(&p, VRT_PLAN_GPU_LAYERS, 32);
	rec(&p, VRT_PLAN_BATCH_TOKENS, 2048);
	rec(&p, VRT_PLAN_UBATCH, 512);
	m->weights = 48 * GiB;
	m->kv = 4 * GiB;
	m->profile = 1 * GiB;
	m->profile_held = 1 * GiB;
	m->single = 3 * GiB;
	m->demand_peak = 12 * GiB;
	p.load = 6;
	predict1(&p, VRT_PLAN_CONTEXT, 131072, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 16 * GiB,
	   "llama.cpp: KV = -c x bytes per token");
	EQ(row->dev[0].term[VRT_PLAN_REQUESTS].bytes, 12 * GiB,
	   "llama.cpp: four slots of 3 GiB");
	EQ(row->context_per_seq, 32768, "llama.cpp: -c 131072 over 4 slots");
	predict1(&p, VRT_PLAN_UBATCH, 2048, row);
	EQ(row->dev[0].term[VRT_PLAN_ACTIVATIONS].bytes, 4 * GiB,
	   "llama.cpp: the compute buffer follows min(-c, -b, -ub)");
	predict1(&p, VRT_PLAN_GPU_LAYERS, 16, row);
	EQ(row->dev[0].term[VRT_PLAN_WEIGHTS].source, VRT_PLAN_SRC_ASSUMPTION,
	   "llama.cpp: -ngl without the model's layers is an assumption");
	EQ(row->dev[0].term[VRT_PLAN_WEIGHTS].bytes, 24 * GiB,
	   "llama.cpp: half the layers, half the weights");
	if (have_llama) {
		p.model = llama;
		p.have_model = 1;
		predict1(&p, VRT_PLAN_GPU_LAYERS, 99, row);
		EQ(row->dev[0].term[VRT_PLAN_WEIGHTS].bytes, 48 * GiB,
		   "llama.cpp: -ngl past the model's 32 layers adds nothing");
		EQ(row->dev[0].term[VRT_PLAN_WEIGHTS].source, VRT_PLAN_SRC_RULE,
		   "llama.cpp: ... by the rule, with the model");
		predict1(&p, VRT_PLAN_GPU_LAYERS, 8, row);
		EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 1 * GiB,
		   "llama.cpp: a quarter of the layers keeps a quarter of the "
		   "KV on the GPU");
	}
	free(row);
}

static void test_fractions(void)
{
	struct vrt_plan p;
	struct vrt_plan_row *row = calloc(1, sizeof(*row));
	struct vrt_plan_measure *m = &p.dev[0];

	/* TGI: 0.95 x (free after warm-up - (1 - 1.0) x total) */
	base(&p, VRT_ENGINE_TGI);
	rec(&p, VRT_PLAN_FRACTION, 1000);
	rec(&p, VRT_PLAN_PARALLEL, 1);
	m->weights = 16 * GiB;
	m->kv = (uint64_t)((80 - 16) * GiB * 0.95);
	predict1(&p, VRT_PLAN_FRACTION, 900, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes,
	   (uint64_t)((64 * GiB - 8 * GiB) * 0.95),
	   "tgi: 0.95 x (free - 0.1 x total)");
	/* TensorRT-LLM: (total - peak) x fraction */
	base(&p, VRT_ENGINE_TRTLLM);
	rec(&p, VRT_PLAN_FRACTION, 900);
	rec(&p, VRT_PLAN_PARALLEL, 1);
	m->weights = 16 * GiB;
	m->kv = (uint64_t)(64 * GiB * 0.9);
	predict1(&p, VRT_PLAN_FRACTION, 500, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].bytes, 32 * GiB,
	   "trtllm: (80 - 16) x 0.5");
	/* an engine without a rule: only the requests */
	base(&p, VRT_ENGINE_UNKNOWN);
	rec(&p, VRT_PLAN_CONTEXT, 4096);
	m->kv = 8 * GiB;
	predict1(&p, VRT_PLAN_CONTEXT, 8192, row);
	EQ(row->dev[0].term[VRT_PLAN_KV].source, VRT_PLAN_SRC_UNKNOWN,
	   "unknown engine: another context's KV is unknown");
	free(row);
}

static void test_set(void)
{
	struct vrt_plan p;
	char msg[256];

	base(&p, VRT_ENGINE_LLAMACPP);
	RC(vrt_plan_set(&p, "c=4096,8192", msg, sizeof(msg)), 0,
	   "set: llama.cpp c");
	EQ(p.axis[VRT_PLAN_CONTEXT].n, 2, "set: two context values");
	RC(vrt_plan_set(&p, "--ctx-size=16384", msg, sizeof(msg)), 0,
	   "set: llama.cpp --ctx-size");
	EQ(p.axis[VRT_PLAN_CONTEXT].v[0], 16384,
	   "set: the last --set of a knob wins");
	RC(vrt_plan_set(&p, "-ngl=0,99", msg, sizeof(msg)), 0,
	   "set: -ngl takes 0");
	RC(vrt_plan_set(&p, "ub=512", msg, sizeof(msg)), 0, "set: ub");
	EQ(p.axis[VRT_PLAN_UBATCH].v[0], 512, "set: -ub");
	base(&p, VRT_ENGINE_VLLM);
	RC(vrt_plan_set(&p, "gpu-memory-utilization=0.85,0.9", msg,
	                sizeof(msg)),
	   0, "set: vLLM fraction");
	EQ(p.axis[VRT_PLAN_FRACTION].v[0], 850, "set: 0.85 in thousandths");
	RC(vrt_plan_set(&p, "memory_fraction=1.5", msg, sizeof(msg)), -1,
	   "set: a fraction past 1 is refused");
	RC(vrt_plan_set(&p, "max-num-seqs=x", msg, sizeof(msg)), -1,
	   "set: not a number");
	RC(vrt_plan_set(&p, "nosuch=1", msg, sizeof(msg)), -1,
	   "set: no such setting");
	RC(vrt_plan_set(&p, "max-model-len", msg, sizeof(msg)), -1,
	   "set: no values");
	RC(vrt_plan_set(&p, "tensor_parallel=2", msg, sizeof(msg)), 0,
	   "set: a knob name");
	base(&p, VRT_ENGINE_SGLANG);
	RC(vrt_plan_set(&p, "cuda-graph-max-bs=32", msg, sizeof(msg)), 0,
	   "set: SGLang --cuda-graph-max-bs");
	RC(vrt_plan_set(&p, "--tp=2", msg, sizeof(msg)), 0, "set: SGLang --tp");
	EQ(p.axis[VRT_PLAN_PARALLEL].v[0], 2, "set: --tp is tensor parallel");
}

static void test_grid(void)
{
	struct vrt_plan p;
	char msg[128];
	size_t i;

	vllm_run(&p);
	p.spelling[VRT_PLAN_CONCURRENCY] = "--max-num-seqs";
	p.model = llama;
	p.have_model = have_llama;
	vrt_plan_default_grid(&p);
	EQ(p.axis[VRT_PLAN_CONTEXT].n, 3, "grid: three contexts");
	EQ(p.axis[VRT_PLAN_CONTEXT].v[0], 4096, "grid: half the context");
	EQ(p.axis[VRT_PLAN_CONTEXT].v[2], 16384, "grid: twice the context");
	EQ(p.axis[VRT_PLAN_FRACTION].v[0], 850, "grid: 0.05 less");
	EQ(p.axis[VRT_PLAN_FRACTION].v[2], 950, "grid: 0.05 more");
	RC(vrt_plan_run(&p, msg, sizeof(msg)), 0, "grid: runs");
	EQ(p.nrows, 27, "grid: 27 configurations");
	ok(p.best != SIZE_MAX && p.rows[p.best].best,
	   "grid: a best row is marked");
	/* concurrency: most sequences at once; then the longest context */
	EQ(p.rows[p.best].knob[VRT_PLAN_CONCURRENCY], 8,
	   "grid: the best for concurrency runs 8 at once");
	for (i = 0; i < p.nrows; i++)
		if (p.rows[i].recorded)
			break;
	ok(i < p.nrows, "grid: holds the recorded settings");
	vrt_plan_free(&p);
	vllm_run(&p);
	p.spelling[VRT_PLAN_CONCURRENCY] = "--max-num-seqs";
	p.model = llama;
	p.have_model = have_llama;
	p.objective = VRT_PLAN_OBJ_CONTEXT;
	vrt_plan_default_grid(&p);
	vrt_plan_run(&p, msg, sizeof(msg));
	EQ(p.rows[p.best].knob[VRT_PLAN_CONTEXT], 16384,
	   "grid: the best for context is the longest");
	vrt_plan_free(&p);
	for (i = 0; i < VRT_PLAN_NKNOBS; i++) {
		p.axis[i].n = 4;
		p.axis[i].v[0] = 1;
	}
	RC(vrt_plan_run(&p, msg, sizeof(msg)), -1,
	   "grid: too many configurations is refused");
}

int main(int argc, char **argv)
{
	char path[1024], msg[256];

	if (argc > 1) {
		snprintf(path, sizeof(path), "%s/llama3-8b.config.json",
		         argv[1]);
		have_llama =
		        !vrt_model_read(&llama, path, NULL, msg, sizeof(msg));
	}
	ok(have_llama, "the Llama 3 8B config reads (%s)",
	   have_llama ? "yes" : msg);
	test_vllm();
	test_sglang();
	test_llamacpp();
	test_fractions();
	test_set();
	test_grid();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
