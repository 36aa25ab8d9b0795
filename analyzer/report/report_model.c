/*
 * report_model.c — the model arithmetic of the diagnosis (model.h) as the
 * JSON report's "diagnosis.model" object and, with --explain, as a text
 * block: the model description in full and the KV arithmetic line by line
 * (docs/model.md names every key). Formatting only: every number comes
 * from struct vrt_model_arith.
 */
#include "report.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "json.h"
#include "model/model.h"
#include "base/text.h"

#define LINE 256

typedef void (*emit_fn)(void *ctx, const char *line);

__attribute__((format(printf, 3, 4))) static void emitf(emit_fn emit, void *ctx,
                                                        const char *fmt, ...)
{
	char line[LINE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	emit(ctx, line);
}

static const char *sz(char (*buf)[32], int i, uint64_t b)
{
	return vrt_text_bytes(buf[i], sizeof(buf[i]), b, 2);
}

/* The KV arithmetic line by line: per layer type at the run's context,
 * then the reserve and the budget solved in tokens and sequences. */
static void explain(const struct vrt_model_arith *a, emit_fn emit, void *ctx)
{
	const struct vrt_model *m = &a->desc;
	uint64_t ctxlen = a->context_len, reps;
	char b[4][32];
	size_t i;

	if (a->tp > 1)
		emitf(emit, ctx,
		      "tensor parallel %" PRIu64 ": a layer keeps max(KV "
		      "heads, %" PRIu64 ") heads over the ranks (an MLA "
		      "latent is on every rank)",
		      a->tp, a->tp);
	if (a->block_tokens > 1)
		emitf(emit, ctx,
		      "KV blocks of %" PRIu64 " tokens: a layer's tokens are "
		      "rounded up to whole blocks",
		      a->block_tokens);
	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		reps = a->tp > g->kv_heads && g->kv_heads ? a->tp / g->kv_heads
		                                          : 1;
		if (g->kind == VRT_MODEL_RECURRENT) {
			emitf(emit, ctx,
			      "%s: %" PRIu64 " layers x %s state per sequence "
			      "(%" PRIu64 " conv + %" PRIu64
			      " SSM elements) = %s per sequence",
			      g->label, g->layers, sz(b, 0, g->state_bytes),
			      g->conv_elems, g->ssm_elems,
			      sz(b, 1, g->layers * g->state_bytes));
			continue;
		}
		if (g->kind == VRT_MODEL_CROSS) {
			emitf(emit, ctx,
			      "cross: %" PRIu64 " layers x %" PRIu64
			      " encoder positions x %s = %s per sequence",
			      g->layers, g->cross_tokens,
			      sz(b, 0, g->kv_bytes_per_token * reps),
			      sz(b, 1, g->layers * g->state_bytes * reps));
			continue;
		}
		if (reps > 1)
			emitf(emit, ctx,
			      "%s: %" PRIu64 " layers x %s per token x %" PRIu64
			      " copies across the ranks = %s per token",
			      vrt_model_kind_name(g->kind), g->layers,
			      sz(b, 0, g->kv_bytes_per_token), reps,
			      sz(b, 1,
			         g->layers * g->kv_bytes_per_token * reps));
		else
			emitf(emit, ctx,
			      "%s: %" PRIu64 " layers x %s per token = %s per "
			      "token",
			      vrt_model_kind_name(g->kind), g->layers,
			      sz(b, 0, g->kv_bytes_per_token),
			      sz(b, 1, g->layers * g->kv_bytes_per_token));
		if (g->kind == VRT_MODEL_SLIDING && ctxlen)
			emitf(emit, ctx,
			      "  holds min(context %" PRIu64 ", window %" PRIu64
			      ") tokens per sequence",
			      ctxlen, g->window);
	}
	emitf(emit, ctx, "per token with every layer holding it: %s",
	      sz(b, 0, a->kv_bytes_per_token));
	if (ctxlen) {
		emitf(emit, ctx,
		      "one sequence of %" PRIu64 " tokens: %s (KV %s + state "
		      "%s); %s per token on average",
		      ctxlen, sz(b, 0, a->seq_bytes_at_context),
		      sz(b, 1,
		         a->seq_bytes_at_context - a->state_bytes_per_seq),
		      sz(b, 2, a->state_bytes_per_seq),
		      sz(b, 3, a->kv_bytes_per_token_at_context));
		emitf(emit, ctx,
		      "observed KV reserve %s / %s per sequence = %" PRIu64
		      " tokens (%" PRIu64 " sequences of %" PRIu64 ")",
		      sz(b, 0, a->kv_reserve_bytes),
		      sz(b, 1, a->seq_bytes_at_context), a->kv_reserve_tokens,
		      a->seq_bytes_at_context
		              ? a->kv_reserve_bytes / a->seq_bytes_at_context
		              : 0,
		      ctxlen);
		emitf(emit, ctx,
		      "reserve + headroom %s = %" PRIu64 " tokens: %" PRIu64
		      " sequences of %" PRIu64 " tokens",
		      sz(b, 0, a->kv_budget_bytes), a->max_tokens,
		      a->max_concurrency, ctxlen);
	} else
		emitf(emit, ctx,
		      "no context length known: observed KV reserve %s = "
		      "%" PRIu64 " tokens; reserve + headroom %s = %" PRIu64
		      " tokens",
		      sz(b, 0, a->kv_reserve_bytes), a->kv_reserve_tokens,
		      sz(b, 1, a->kv_budget_bytes), a->max_tokens);
	if (a->max_context_single == VRT_MODEL_UNBOUNDED)
		emitf(emit, ctx,
		      "one sequence of any length fits: every "
		      "attention layer is windowed");
	else
		emitf(emit, ctx,
		      "the longest single sequence that fits: %" PRIu64
		      " tokens",
		      a->max_context_single);
	emitf(emit, ctx,
	      "weights: %s expected from the description, %s observed",
	      sz(b, 0, a->expected_weight_bytes),
	      sz(b, 1, a->observed_weight_bytes));
}

/* The description, for people. */
static void describe(const struct vrt_model *m, emit_fn emit, void *ctx)
{
	char b[4][32], line[LINE];
	size_t i, len;

	emitf(emit, ctx, "%s%s%s%s, from %s%s%s",
	      m->model_type[0] ? m->model_type : "(no model_type)",
	      m->architecture[0] ? " (" : "", m->architecture,
	      m->architecture[0] ? ")" : "", m->source,
	      m->gguf_type[0] ? " " : "", m->gguf_type);
	emitf(emit, ctx,
	      "%" PRIu64 " layers, hidden %" PRIu64 ", %" PRIu64
	      " heads of %" PRIu64 ", %" PRIu64 " KV heads, vocabulary %" PRIu64
	      ", context %" PRIu64,
	      m->layers, m->hidden, m->heads, m->head_dim, m->kv_heads,
	      m->vocab, m->context_len);
	emitf(emit, ctx, "%-15s %6s %8s %12s %8s %14s %14s", "layer type",
	      "layers", "KV heads", "K + V dims", "window", "KV/token/layer",
	      "state/seq/layer");
	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		char dims[24], win[24], heads[24];
		int rec = g->kind == VRT_MODEL_RECURRENT;
		snprintf(dims, sizeof(dims), "%" PRIu64 " + %" PRIu64, g->k_dim,
		         g->v_dim);
		snprintf(heads, sizeof(heads), "%" PRIu64, g->kv_heads);
		if (g->kind == VRT_MODEL_CROSS)
			snprintf(win, sizeof(win), "enc %" PRIu64,
			         g->cross_tokens);
		else
			snprintf(win, sizeof(win), "%" PRIu64, g->window);
		emitf(emit, ctx, "%-15s %6" PRIu64 " %8s %12s %8s %14s %14s",
		      g->label, g->layers, rec ? "-" : heads, rec ? "-" : dims,
		      g->window || g->kind == VRT_MODEL_CROSS ? win : "-",
		      g->kind == VRT_MODEL_RECURRENT
		              ? "-"
		              : sz(b, 0, g->kv_bytes_per_token),
		      g->state_bytes ? sz(b, 1, g->state_bytes) : "-");
	}
	emitf(emit, ctx, "KV cache: K %s, V %s (%s)", m->kv_k.name,
	      m->kv_v.name, m->kv_from);
	if (m->experts)
		emitf(emit, ctx,
		      "experts: %" PRIu64 " routed, %" PRIu64
		      " per token, %" PRIu64 " shared, in %" PRIu64
		      " of %" PRIu64 " layers",
		      m->experts, m->experts_per_token, m->shared_experts,
		      m->moe_layers, m->layers);
	snprintf(line, sizeof(line), "; vision tower and projector %.2fB",
	         (double)m->params_vision / 1e9);
	emitf(emit, ctx,
	      "parameters: %.2fB total, %.2fB active per token (embedding "
	      "%.2fB, %s output head%s)",
	      (double)m->params_total / 1e9, (double)m->params_active / 1e9,
	      (double)m->params_embedding / 1e9, m->tied ? "tied" : "separate",
	      m->params_vision ? line : "");
	len = (size_t)snprintf(line, sizeof(line), "weights:");
	for (i = 0; i < m->nweights && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len,
		                        "%s %s %.2fB = %s", i ? ";" : "",
		                        m->weights[i].what,
		                        (double)m->weights[i].params / 1e9,
		                        sz(b, i % 4, m->weights[i].bytes));
	emit(ctx, line);
	for (i = 0; i < m->nnotes; i++)
		emitf(emit, ctx, "note: %s", m->notes[i]);
}

static void put_text(void *ctx, const char *line)
{
	FILE *f = ctx;

	fputs("    ", f);
	vrt_text_put_safe(f, line, LINE);
	fputc('\n', f);
}

void vrt_report_model_text(FILE *f, const struct vrt_model_arith *a)
{
	if (!a->have)
		return;
	fputs("MODEL\n", f);
	describe(&a->desc, put_text, f);
	fputs("  KV arithmetic (all devices):\n", f);
	explain(a, put_text, f);
	fputc('\n', f);
}

static void put_json(void *ctx, const char *line)
{
	vrt_json_string(ctx, line);
}

static void key_str(struct vrt_json *w, const char *key, const char *s)
{
	vrt_json_key(w, key);
	if (s && s[0])
		vrt_json_string(w, s);
	else
		vrt_json_null(w);
}

static void description_json(struct vrt_json *w, const struct vrt_model *m)
{
	size_t i;

	vrt_json_begin_object(w);
	key_str(w, "source", m->source);
	key_str(w, "model_type", m->model_type);
	key_str(w, "architecture", m->architecture);
	key_str(w, "dtype", m->dtype.name);
	vrt_json_key_uint(w, "layers", m->layers);
	vrt_json_key_uint(w, "hidden_size", m->hidden);
	vrt_json_key_uint(w, "heads", m->heads);
	vrt_json_key_uint(w, "kv_heads", m->kv_heads);
	vrt_json_key_uint(w, "head_dim", m->head_dim);
	vrt_json_key_uint(w, "vocab_size", m->vocab);
	vrt_json_key_uint_or_null(w, "context_len", m->context_len != 0,
	                          m->context_len);
	vrt_json_key(w, "kv_dtype");
	vrt_json_begin_object(w);
	key_str(w, "k", m->kv_k.name);
	key_str(w, "v", m->kv_v.name);
	key_str(w, "from", m->kv_from);
	vrt_json_end_object(w);
	vrt_json_key(w, "layer_groups");
	vrt_json_begin_array(w);
	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		vrt_json_begin_object(w);
		key_str(w, "kind", vrt_model_kind_name(g->kind));
		key_str(w, "label", g->label);
		vrt_json_key_uint(w, "layers", g->layers);
		vrt_json_key_uint(w, "kv_heads", g->kv_heads);
		vrt_json_key_uint(w, "k_dim", g->k_dim);
		vrt_json_key_uint(w, "v_dim", g->v_dim);
		vrt_json_key_uint_or_null(w, "window", g->window != 0,
		                          g->window);
		vrt_json_key_uint_or_null(w, "cross_tokens",
		                          g->cross_tokens != 0,
		                          g->cross_tokens);
		vrt_json_key_uint(w, "kv_bytes_per_token_per_layer",
		                  g->kv_bytes_per_token);
		vrt_json_key_uint(w, "state_bytes_per_sequence_per_layer",
		                  g->state_bytes);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key_uint(w, "kv_bytes_per_token", m->kv_bytes_per_token);
	vrt_json_key_uint(w, "state_bytes_per_sequence",
	                  m->state_bytes_per_seq);
	vrt_json_key(w, "experts");
	if (m->experts) {
		vrt_json_begin_object(w);
		vrt_json_key_uint(w, "routed", m->experts);
		vrt_json_key_uint(w, "per_token", m->experts_per_token);
		vrt_json_key_uint(w, "shared", m->shared_experts);
		vrt_json_key_uint(w, "moe_layers", m->moe_layers);
		vrt_json_end_object(w);
	} else
		vrt_json_null(w);
	vrt_json_key(w, "params");
	vrt_json_begin_object(w);
	vrt_json_key_uint(w, "total", m->params_total);
	vrt_json_key_uint(w, "active", m->params_active);
	vrt_json_key_uint(w, "embedding", m->params_embedding);
	vrt_json_key_uint(w, "vision", m->params_vision);
	vrt_json_end_object(w);
	vrt_json_key(w, "tied_embeddings");
	vrt_json_bool(w, m->tied);
	key_str(w, "quantization", m->quant);
	vrt_json_key(w, "weights");
	vrt_json_begin_array(w);
	for (i = 0; i < m->nweights; i++) {
		vrt_json_begin_object(w);
		key_str(w, "type", m->weights[i].what);
		vrt_json_key_uint(w, "params", m->weights[i].params);
		vrt_json_key_uint(w, "bytes", m->weights[i].bytes);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key_uint(w, "weight_bytes", m->weight_bytes);
	vrt_json_key(w, "notes");
	vrt_json_begin_array(w);
	for (i = 0; i < m->nnotes; i++)
		vrt_json_string(w, m->notes[i]);
	vrt_json_end_array(w);
	vrt_json_end_object(w);
}

void vrt_report_model_json(struct vrt_json *w, const struct vrt_model_arith *a)
{
	if (!a->have) {
		vrt_json_null(w);
		return;
	}
	vrt_json_begin_object(w);
	vrt_json_key_uint(w, "kv_bytes_per_token", a->kv_bytes_per_token);
	vrt_json_key_uint(w, "kv_bytes_per_token_at_context",
	                  a->kv_bytes_per_token_at_context);
	vrt_json_key_uint(w, "state_bytes_per_sequence",
	                  a->state_bytes_per_seq);
	vrt_json_key_uint(w, "sequence_bytes_at_context",
	                  a->seq_bytes_at_context);
	vrt_json_key_uint(w, "kv_reserve_bytes", a->kv_reserve_bytes);
	vrt_json_key_uint(w, "kv_reserve_tokens", a->kv_reserve_tokens);
	vrt_json_key_uint(w, "kv_budget_bytes", a->kv_budget_bytes);
	vrt_json_key_uint(w, "max_tokens", a->max_tokens);
	vrt_json_key_uint_or_null(w, "context_len", a->context_len != 0,
	                          a->context_len);
	vrt_json_key(w, "max_concurrency_at_context");
	if (a->context_len)
		vrt_json_uint(w, a->max_concurrency);
	else
		vrt_json_null(w);
	vrt_json_key(w, "max_context_single");
	if (a->max_context_single == VRT_MODEL_UNBOUNDED)
		vrt_json_null(w);
	else
		vrt_json_uint(w, a->max_context_single);
	vrt_json_key(w, "context_unbounded");
	vrt_json_bool(w, a->max_context_single == VRT_MODEL_UNBOUNDED);
	vrt_json_key_uint(w, "tensor_parallel", a->tp);
	vrt_json_key_uint(w, "kv_block_tokens", a->block_tokens);
	vrt_json_key_uint(w, "params", a->params_total);
	vrt_json_key_uint(w, "params_active", a->params_active);
	vrt_json_key_uint(w, "expected_weight_bytes", a->expected_weight_bytes);
	vrt_json_key_uint(w, "observed_weight_bytes", a->observed_weight_bytes);
	vrt_json_key(w, "description");
	description_json(w, &a->desc);
	if (a->explain) {
		vrt_json_key(w, "explain");
		vrt_json_begin_array(w);
		explain(a, put_json, w);
		vrt_json_end_array(w);
	}
	vrt_json_end_object(w);
}
