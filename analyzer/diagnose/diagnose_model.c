/*
 * diagnose_model.c — the model arithmetic in the diagnosis
 * (--model-config): the model's description solved against the observed
 * budgets (model.h) before the verdict, whose advice counts in tokens and
 * layers, and the evidence lines that say what it found. Pure,
 * single-threaded: writes only the diagnosis.
 */
#include "diagnose_internal.h"

#include <inttypes.h>
#include <string.h>

/* --model-config: the model's description solved against the observed
 * budgets (model.c), before the verdict (its advice counts in tokens and
 * layers). */
void vrt_diagnose_model_solve(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_model_arith *m = &d->model;
	struct vrt_model_budget b;
	size_t k;

	if (!c->cfg)
		return;
	memset(&b, 0, sizeof(b));
	for (k = 0; k < d->ndevices; k++) {
		b.kv_reserve_bytes += d->devices[k].kv_bytes;
		b.weight_bytes += d->devices[k].weights_bytes;
		b.headroom_bytes += d->devices[k].headroom_bytes;
	}
	for (k = 0; k < c->t->nprocs; k++)
		vrt_model_budget_argv(&b, c->t->procs[k].argv,
		                      c->t->procs[k].argc);
	b.engine = vrt_model_engine(vrt_engine_name(d->flags.engine));
	b.context_len = d->flags.max_model_len;
	/* llama.cpp's -c is the whole cache, shared by its -np slots: a
	 * sequence holds -c / -np (its KV cache is -c tokens either way). */
	if (d->flags.engine == VRT_ENGINE_LLAMACPP && d->flags.max_num_seqs > 1)
		b.context_len /= d->flags.max_num_seqs;
	b.max_seqs = d->flags.max_num_seqs;
	b.tp = d->flags.tp;
	vrt_model_arith(m, c->cfg, &b);
}

/* The lines that say what the model arithmetic found. */
void vrt_diagnose_model_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_model_arith *m = &d->model;
	char how[VRT_DIAG_TEXT / 2];

	if (!m->have)
		return;
	vrt_model_kv_formula(&m->desc, how, sizeof(how));
	vrt_diagnose_evidence(d, "kv_bytes_per_token", -1, VRT_DIAG_BYTES,
	                      m->kv_bytes_per_token,
	                      "model: %s of KV per token (%s%s)",
	                      SZ(m->kv_bytes_per_token), how,
	                      m->kv_bytes_per_token > m->desc.kv_bytes_per_token
	                              ? "; copied on every tensor-parallel rank"
	                              : "");
	if (m->context_len &&
	    m->kv_bytes_per_token_at_context < m->kv_bytes_per_token)
		vrt_diagnose_evidence(
		        d, "kv_bytes_per_token_at_context", -1, VRT_DIAG_BYTES,
		        m->kv_bytes_per_token_at_context,
		        "at %" PRIu64 " tokens of context: %s of KV per token "
		        "(sliding-window layers hold at most their window)",
		        m->context_len, SZ(m->kv_bytes_per_token_at_context));
	if (m->state_bytes_per_seq)
		vrt_diagnose_evidence(
		        d, "state_bytes_per_sequence", -1, VRT_DIAG_BYTES,
		        m->state_bytes_per_seq,
		        "plus %s per sequence whatever its length (recurrent "
		        "state, cross-attention)",
		        SZ(m->state_bytes_per_seq));
	vrt_diagnose_evidence(d, "kv_reserve_tokens", -1, VRT_DIAG_TOKENS,
	                      m->kv_reserve_tokens,
	                      "the observed KV reserve (%s) holds %" PRIu64
	                      " tokens",
	                      SZ(m->kv_reserve_bytes), m->kv_reserve_tokens);
	if (m->context_len && m->max_context_single == VRT_MODEL_UNBOUNDED)
		vrt_diagnose_evidence(
		        d, "max_concurrency_at_context", -1, VRT_DIAG_COUNT,
		        m->max_concurrency,
		        "reserve + headroom (%s) hold %" PRIu64
		        " sequences of %" PRIu64 " tokens, or one of any "
		        "length (every attention layer is windowed)",
		        SZ(m->kv_budget_bytes), m->max_concurrency,
		        m->context_len);
	else if (m->context_len)
		vrt_diagnose_evidence(
		        d, "max_concurrency_at_context", -1, VRT_DIAG_COUNT,
		        m->max_concurrency,
		        "reserve + headroom (%s) hold %" PRIu64
		        " sequences of %" PRIu64 " tokens, or one of %" PRIu64,
		        SZ(m->kv_budget_bytes), m->max_concurrency,
		        m->context_len, m->max_context_single);
	vrt_diagnose_evidence(
	        d, "expected_weight_bytes", -1, VRT_DIAG_BYTES,
	        m->expected_weight_bytes,
	        "weights: %.2fB parameters (%.2fB active per token) = %s "
	        "expected, %s observed",
	        (double)m->params_total / 1e9, (double)m->params_active / 1e9,
	        SZ(m->expected_weight_bytes), SZ(m->observed_weight_bytes));
}
