/*
 * model.c — the model arithmetic of model.h: the engine's KV flags, and a
 * description (model_desc.c, filled by a reader) solved against a run's
 * budgets. It reads no file and calls no reader. Pure and
 * single-threaded; no globals but constant tables.
 */
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/argv.h"

static int is_attention(int kind)
{
	return kind != VRT_MODEL_RECURRENT;
}

/* ---- the engine's flags -------------------------------------------------- */

int vrt_model_engine(const char *name)
{
	static const char *const names[] = {"vllm", "sglang", "llama.cpp",
	                                    "tgi"};
	int i;

	for (i = 0; name && i < 4; i++)
		if (!strcmp(name, names[i]))
			return i + 1;
	return VRT_MODEL_ENGINE_OTHER;
}

enum { KV_BOTH, KV_K, KV_V, KV_BLOCK, KV_SSM };

static const struct {
	const char *flag;
	int what;
} kv_flags[] = {
        {"--kv-cache-dtype", KV_BOTH}, /* vLLM, SGLang, TGI */
        {"-ctk", KV_K},
        {"--cache-type-k", KV_K},
        {"-ctv", KV_V},
        {"--cache-type-v", KV_V},
        {"--block-size", KV_BLOCK}, /* vLLM */
        {"--page-size", KV_BLOCK},  /* SGLang */
        {"--mamba-ssm-cache-dtype", KV_SSM},
};

static void set_once(char *dst, size_t n, const char *v)
{
	if (!dst[0])
		snprintf(dst, n, "%s", v);
}

/* One KV option's value into *b (the first of each kind wins). */
static void take_flag(struct vrt_model_budget *b, int what, const char *flag,
                      const char *v)
{
	char *end;
	unsigned long long x;

	switch (what) {
	case KV_BLOCK:
		x = strtoull(v, &end, 10);
		if (!*end && x > 0 && x < (1u << 20) && !b->block_tokens)
			b->block_tokens = x;
		break;
	case KV_SSM:
		set_once(b->ssm_dtype, sizeof(b->ssm_dtype), v);
		break;
	case KV_V:
		set_once(b->kv_dtype_v, sizeof(b->kv_dtype_v), v);
		break;
	default:
		if (!b->kv_dtype[0])
			set_once(b->kv_flag, sizeof(b->kv_flag), flag);
		set_once(b->kv_dtype, sizeof(b->kv_dtype), v);
		if (what == KV_BOTH)
			set_once(b->kv_dtype_v, sizeof(b->kv_dtype_v), v);
	}
}

void vrt_model_budget_argv(struct vrt_model_budget *b, char *const *argv,
                           size_t argc)
{
	const char *v;
	size_t i, k;

	for (i = 0; i < argc; i++)
		for (k = 0; k < sizeof(kv_flags) / sizeof(kv_flags[0]); k++) {
			v = vrt_argv_value(argv, argc, i, kv_flags[k].flag);
			if (v && v[0])
				take_flag(b, kv_flags[k].what, kv_flags[k].flag,
				          v);
		}
}

/* ---- per sequence -------------------------------------------------------- */

typedef unsigned __int128 u128;

static uint64_t sat(u128 x)
{
	return x > UINT64_MAX ? UINT64_MAX : (uint64_t)x;
}

static uint64_t round_up(uint64_t n, uint64_t block)
{
	if (block <= 1)
		return n;
	return n > UINT64_MAX - block ? UINT64_MAX
	                              : (n + block - 1) / block * block;
}

/* Heads stored per token across all ranks: an engine that shards heads
 * over tp ranks keeps at least one KV head per rank, so fewer KV heads
 * than ranks are replicated (MLA's single latent: on every rank). */
static uint64_t stored_heads(const struct vrt_model_group *g, uint64_t tp)
{
	return tp > g->kv_heads ? tp : g->kv_heads;
}

uint64_t vrt_model_seq_bytes(const struct vrt_model *m, uint64_t ctx,
                             uint64_t block_tokens, uint64_t tp)
{
	u128 sum = 0;
	size_t i;

	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		uint64_t tokens = ctx, tok_bytes;
		if (g->kind == VRT_MODEL_RECURRENT) {
			/* Sharded by heads over the ranks: the total is the
			 * same on one rank or many. */
			sum += (u128)g->layers * g->state_bytes;
			continue;
		}
		tok_bytes = vrt_model_layer_kv_bytes(m, g, stored_heads(g, tp));
		if (g->kind == VRT_MODEL_CROSS)
			tokens = g->cross_tokens;
		else if (g->kind == VRT_MODEL_SLIDING && ctx > g->window) {
			/* The window rarely starts on a block boundary:
			 * one more block holds its first tokens. */
			tokens = g->window +
			         (block_tokens > 1 ? block_tokens : 0);
			if (tokens > ctx)
				tokens = ctx;
		}
		sum += (u128)g->layers * round_up(tokens, block_tokens) *
		       tok_bytes;
	}
	return sat(sum);
}

/* The longest sequence whose bytes fit budget; VRT_MODEL_UNBOUNDED when
 * no length exhausts it (every attention layer windowed). */
static uint64_t max_context(const struct vrt_model *m, uint64_t budget,
                            uint64_t block, uint64_t tp)
{
	uint64_t lo = 0, hi = 1ull << 40;

	if (vrt_model_seq_bytes(m, hi, block, tp) <= budget)
		return VRT_MODEL_UNBOUNDED;
	if (vrt_model_seq_bytes(m, 1, block, tp) > budget)
		return 0;
	/* seq_bytes is non-decreasing in the length: bisect for the last
	 * length that fits (lo fits, hi does not). */
	lo = 1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (vrt_model_seq_bytes(m, mid, block, tp) <= budget)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* bytes x ctx / seq: the tokens bytes hold as sequences of ctx tokens. */
static uint64_t tokens_in(uint64_t bytes, uint64_t ctx, uint64_t seq)
{
	return seq ? sat((u128)bytes * ctx / seq) : 0;
}

/* The KV types the run used: --kv-dtype, else the engine's flag, else
 * llama.cpp's own default (f16), else the model's dtype. */
static void run_kv_dtype(struct vrt_model *m, const struct vrt_model_budget *b)
{
	char from[40];
	const char *k = b->kv_dtype, *v = b->kv_dtype_v;

	if (!strcmp(m->kv_from, "--kv-dtype"))
		return;
	if (!strcasecmp(k, "auto"))
		k = "";
	if (!strcasecmp(v, "auto"))
		v = "";
	if (b->engine == VRT_MODEL_ENGINE_LLAMACPP) {
		/* llama.cpp's cache is f16 unless -ctk/-ctv say otherwise,
		 * whatever the weights are. */
		snprintf(from, sizeof(from), "%s",
		         k[0] || v[0] ? "-ctk/-ctv" : "llama.cpp default");
		if (vrt_model_set_kv_dtype(m, k[0] ? k : "f16",
		                           v[0] ? v : "f16", from))
			vrt_model_note(
			        m,
			        "llama.cpp's cache types '%s'/'%s' are not "
			        "known: the model's dtype is used",
			        k, v);
		return;
	}
	if (k[0] && vrt_model_set_kv_dtype(m, k, v[0] ? v : k, b->kv_flag))
		vrt_model_note(m,
		               "the engine's KV type '%s' is not known: "
		               "the model's dtype is used",
		               k);
}

void vrt_model_arith(struct vrt_model_arith *a, const struct vrt_model *m,
                     const struct vrt_model_budget *b)
{
	struct vrt_model *d;
	struct vrt_model_dtype ssm;
	uint64_t ctx, block;
	size_t i;

	memset(a, 0, sizeof(*a));
	a->have = 1;
	a->desc = *m;
	d = &a->desc;
	run_kv_dtype(d, b);
	if (b->ssm_dtype[0] && strcasecmp(b->ssm_dtype, "auto") &&
	    !vrt_model_dtype(b->ssm_dtype, &ssm))
		d->state_ssm_bytes = ssm.block_bytes;
	vrt_model_finish(d);
	block = b->block_tokens;
	if (!block && b->engine == VRT_MODEL_ENGINE_VLLM)
		block = 16; /* vLLM's default --block-size */
	a->block_tokens = block ? block : 1;
	a->tp = b->tp > 1 ? b->tp : 1;
	ctx = b->context_len ? b->context_len : d->context_len;
	a->context_len = ctx;
	for (i = 0; i < d->ngroups; i++) {
		const struct vrt_model_group *g = &d->group[i];
		if (is_attention(g->kind) && g->kind != VRT_MODEL_CROSS)
			a->kv_bytes_per_token +=
			        g->layers *
			        vrt_model_layer_kv_bytes(
			                d, g, stored_heads(g, a->tp));
	}
	/* Zero tokens: what a sequence holds whatever its length (its
	 * state, its encoder's positions in whole blocks). */
	a->state_bytes_per_seq =
	        vrt_model_seq_bytes(d, 0, a->block_tokens, a->tp);
	a->kv_reserve_bytes = b->kv_reserve_bytes;
	a->kv_budget_bytes = b->kv_reserve_bytes + b->headroom_bytes;
	if (ctx) {
		a->seq_bytes_at_context =
		        vrt_model_seq_bytes(d, ctx, a->block_tokens, a->tp);
		a->kv_bytes_per_token_at_context =
		        (a->seq_bytes_at_context - a->state_bytes_per_seq) /
		        ctx;
		a->kv_reserve_tokens = tokens_in(a->kv_reserve_bytes, ctx,
		                                 a->seq_bytes_at_context);
		a->max_tokens = tokens_in(a->kv_budget_bytes, ctx,
		                          a->seq_bytes_at_context);
		a->max_concurrency =
		        a->seq_bytes_at_context
		                ? a->kv_budget_bytes / a->seq_bytes_at_context
		                : 0;
	} else if (a->kv_bytes_per_token) {
		/* No context length anywhere: every layer holds the token. */
		a->kv_bytes_per_token_at_context = a->kv_bytes_per_token;
		a->kv_reserve_tokens =
		        a->kv_reserve_bytes / a->kv_bytes_per_token;
		a->max_tokens = a->kv_budget_bytes / a->kv_bytes_per_token;
	}
	a->max_context_single =
	        max_context(d, a->kv_budget_bytes, a->block_tokens, a->tp);
	a->params_total = d->params_total;
	a->params_active = d->params_active;
	a->expected_weight_bytes = d->weight_bytes;
	a->observed_weight_bytes = b->weight_bytes;
}

/* ---- words --------------------------------------------------------------- */

/* " x 2 B bf16", " x q8_0 (34 B per 32)", " x K q8_0, V fp16". */
static size_t dtype_words(const struct vrt_model *m, char *buf, size_t n)
{
	const struct vrt_model_dtype *k = &m->kv_k, *v = &m->kv_v;

	if (strcmp(k->name, v->name))
		return (size_t)snprintf(buf, n, " at K %s, V %s", k->name,
		                        v->name);
	if (k->block_elems > 1)
		return (size_t)snprintf(buf, n, " x %s (%u B per %u)", k->name,
		                        k->block_bytes, k->block_elems);
	return (size_t)snprintf(buf, n, " x %u B %s", k->block_bytes, k->name);
}

/* " x KV heads x (K + V)" or " x latent" of one group. */
static size_t shape_words(const struct vrt_model_group *g, char *buf, size_t n)
{
	if (g->kind == VRT_MODEL_MLA)
		return (size_t)snprintf(buf, n, " x %" PRIu64 " latent",
		                        g->k_dim);
	return (size_t)snprintf(
	        buf, n, " x %" PRIu64 " KV heads x (%" PRIu64 " + %" PRIu64 ")",
	        g->kv_heads, g->k_dim, g->v_dim);
}

size_t vrt_model_kv_formula(const struct vrt_model *m, char *buf, size_t n)
{
	const struct vrt_model_group *first = NULL;
	size_t len = 0, i;
	int same = 1;

#define AT (len < n ? buf + len : NULL), (len < n ? n - len : 0)
#define PUT(...)                                                               \
	do {                                                                   \
		int w_ = snprintf(AT, __VA_ARGS__);                            \
		if (w_ > 0)                                                    \
			len += (size_t)w_;                                     \
	} while (0)
	if (n)
		buf[0] = '\0';
	/* Groups of one shape read as one product; else one per group. */
	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		if (!is_attention(g->kind) || g->kind == VRT_MODEL_CROSS)
			continue;
		if (!first)
			first = g;
		else if ((g->kind == VRT_MODEL_MLA) !=
		                 (first->kind == VRT_MODEL_MLA) ||
		         g->kv_heads != first->kv_heads ||
		         g->k_dim != first->k_dim || g->v_dim != first->v_dim)
			same = 0;
	}
	if (!first) {
		PUT("no attention layer");
		return len;
	}
	for (i = 0; i < m->ngroups; i++) {
		const struct vrt_model_group *g = &m->group[i];
		if (!is_attention(g->kind) || g->kind == VRT_MODEL_CROSS)
			continue;
		PUT("%s%" PRIu64 " %s", g == first ? "" : " + ", g->layers,
		    g->kind == VRT_MODEL_MLA ? "MLA"
		                             : vrt_model_kind_name(g->kind));
		if (g->kind == VRT_MODEL_SLIDING)
			PUT(" (window %" PRIu64 ")", g->window);
		if (!same)
			len += shape_words(g, AT);
	}
	PUT(" layers");
	if (same)
		len += shape_words(first, AT);
	len += dtype_words(m, AT);
#undef PUT
#undef AT
	return len;
}
