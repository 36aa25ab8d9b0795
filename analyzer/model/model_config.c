/*
 * model_config.c — a Hugging Face config.json into the model description
 * of model.h (docs/model.md has the arithmetic with its sources).
 *
 * The config names the numbers; the model type says what they mean.
 * transformers' configuration class of each type supplies what a config
 * may leave out (tie_word_embeddings is false for Llama, Mistral, Qwen,
 * DeepSeek and gpt-oss, true for Gemma, Cohere and the base class; Gemma
 * 3's text config defaults its heads and vocabulary), and the layer
 * pattern comes from the first of: "layer_types", "layers_block_type",
 * Nemotron-H's "hybrid_override_pattern", Jamba's attention period,
 * Qwen3-Next's full_attention_interval, the type's sliding-window rule
 * (every layer for Mistral; alternate layers for Gemma 2; every
 * sliding_window_pattern-th layer global for Gemma 3 and Cohere 2; Qwen's
 * use_sliding_window from max_window_layers on). MLA replaces full
 * attention wherever kv_lora_rank is given.
 *
 * Parameters are counted the way the checkpoints store them: per layer
 * the attention projections (with the biases, q/k norms and sinks the
 * type has), the feed-forward (gated: 3 matrices; plain: 2; mixtures of
 * experts: the routed experts, the router, the shared experts, dense
 * layers where the type keeps them), the recurrent mixers (Mamba,
 * Mamba 2, gated DeltaNet), the norms; the embedding and, untied, the
 * output head; a vision tower (SigLIP/CLIP-style) and its projector.
 * Every linear layer is counted with its shape so quantization can add
 * its scales and zero points per group, channel or block.
 *
 * The parse state is model_config_cfg.h's; the weights' storage types
 * (quantization_config) are model_config_quant.c's.
 *
 * Pure and single-threaded; jansson's objects are freed before return.
 */
#include "model_config.h"
#include "model_config_cfg.h"
#include "model_desc.h"

#include <jansson.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- model types --------------------------------------------------------- */

enum { SW_NONE, SW_ALL, SW_ALTERNATE, SW_PATTERN, SW_QWEN };

/* Attention and layer traits of a model type. */
#define F_QKV_BIAS  0x001u /* q, k, v projections carry a bias (Qwen2) */
#define F_ALL_BIAS  0x002u /* q, k, v and o carry a bias (gpt-oss) */
#define F_QK_NORM   0x004u /* per-head RMSNorm on q and k */
#define F_SINKS     0x008u /* a learned attention sink per head */
#define F_GATED_Q   0x010u /* q_proj also emits an output gate */
#define F_PLAIN_FFN 0x020u /* two-matrix MLP (no gate) */
#define F_MLA       0x040u /* DeepSeek-style MLA and MoE keys */
#define F_NO_ATTN   0x080u /* no attention at all (pure Mamba) */
#define F_ROUTER_B  0x100u /* router and experts carry biases */
#define F_FALCON    0x200u /* Falcon's fused QKV and layouts */

struct udefault {
	const char *key;
	uint64_t value;
};

struct family {
	const char *type;
	int tie;        /* tie_word_embeddings default */
	unsigned norms; /* hidden-size norm vectors per layer */
	unsigned flags;
	int sliding;      /* SW_* rule without layer_types */
	unsigned pattern; /* SW_PATTERN: every pattern-th layer is global */
	const struct udefault *defaults;
};

/* transformers' Gemma3TextConfig defaults: gemma-3-4b-it's config.json
 * names only hidden size, intermediate size and layers. */
static const struct udefault gemma3_defaults[] = {
        {"vocab_size", 262208},      {"hidden_size", 2304},
        {"intermediate_size", 9216}, {"num_hidden_layers", 26},
        {"num_attention_heads", 8},  {"num_key_value_heads", 4},
        {"head_dim", 256},           {"max_position_embeddings", 131072},
        {"sliding_window", 4096},    {NULL, 0},
};

/* transformers' NemotronHConfig defaults (the 8B's shape). */
static const struct udefault nemotron_h_defaults[] = {
        {"vocab_size", 131072},
        {"hidden_size", 4096},
        {"intermediate_size", 21504},
        {"num_hidden_layers", 52},
        {"num_attention_heads", 32},
        {"head_dim", 128},
        {"num_key_value_heads", 8},
        {"ssm_state_size", 128},
        {"mamba_num_heads", 128},
        {"mamba_head_dim", 64},
        {"n_groups", 8},
        {"conv_kernel", 4},
        {NULL, 0},
};

static const struct family families[] = {
        {"llama", 0, 2, 0, SW_ALL, 0, NULL},
        {"mistral", 0, 2, 0, SW_ALL, 0, NULL},
        {"mixtral", 0, 2, 0, SW_ALL, 0, NULL},
        {"phi3", 0, 2, 0, SW_ALL, 0, NULL},
        {"qwen2", 0, 2, F_QKV_BIAS, SW_QWEN, 0, NULL},
        {"qwen2_moe", 0, 2, F_QKV_BIAS, SW_QWEN, 0, NULL},
        {"qwen3", 0, 2, F_QK_NORM, SW_QWEN, 0, NULL},
        {"qwen3_moe", 0, 2, F_QK_NORM, SW_QWEN, 0, NULL},
        {"qwen3_next", 0, 2, F_QK_NORM | F_GATED_Q, SW_NONE, 0, NULL},
        {"gemma", 1, 2, 0, SW_NONE, 0, NULL},
        {"gemma2", 1, 4, 0, SW_ALTERNATE, 0, NULL},
        {"gemma3_text", 1, 4, F_QK_NORM, SW_PATTERN, 6, gemma3_defaults},
        {"cohere", 1, 1, 0, SW_NONE, 0, NULL},
        {"cohere2", 1, 1, 0, SW_PATTERN, 4, NULL},
        {"falcon", 1, 2, F_FALCON | F_PLAIN_FFN, SW_NONE, 0, NULL},
        {"deepseek_v2", 0, 2, F_MLA, SW_NONE, 0, NULL},
        {"deepseek_v3", 0, 2, F_MLA, SW_NONE, 0, NULL},
        {"kimi_k2", 0, 2, F_MLA, SW_NONE, 0, NULL},
        /* gpt-oss without layer_types: GptOssConfig's default, the even
         * layers windowed */
        {"gpt_oss", 0, 2, F_ALL_BIAS | F_SINKS | F_ROUTER_B, SW_PATTERN, 2,
         NULL},
        {"jamba", 0, 2, 0, SW_NONE, 0, NULL},
        {"mamba", 1, 1, F_NO_ATTN, SW_NONE, 0, NULL},
        {"falcon_mamba", 1, 1, F_NO_ATTN, SW_NONE, 0, NULL},
        {"nemotron_h", 0, 1, F_PLAIN_FFN, SW_NONE, 0, nemotron_h_defaults},
};

/* The base class's defaults, for a type this table does not know. */
static const struct family generic = {"", 1, 2, 0, SW_ALL, 0, NULL};

/* Multimodal wrappers whose text config names no type of its own. */
static const struct {
	const char *outer, *inner;
} text_types[] = {
        {"gemma3", "gemma3_text"}, {"qwen2_5_vl", "qwen2"},
        {"qwen2_vl", "qwen2"},     {"llava", "llama"},
        {"llava_next", "llama"},   {"mistral3", "mistral"},
};

/* ---- parse state (struct cfg: model_config_cfg.h) ------------------------ */

/* Per-layer kinds. */
enum { LK_FULL, LK_SLIDING, LK_MLA, LK_MAMBA1, LK_MAMBA2, LK_GDN, LK_NONE };
enum { FF_NONE, FF_DENSE, FF_MOE };

/* ---- JSON helpers -------------------------------------------------------- */

/* A positive integer member: 1 found (or the type's default), 0 absent,
 * -1 present but not a positive integer (an error is set). */
static int uget(struct cfg *c, const char *key, uint64_t *out)
{
	json_t *v = get(c, key);
	const struct udefault *d;

	if (!v) {
		for (d = c->fam->defaults; d && d->key; d++)
			if (!strcmp(d->key, key)) {
				*out = d->value;
				return 1;
			}
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) <= 0) {
		snprintf(c->msg, c->msgsz,
		         "key \"%s\" is not a positive integer", key);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

/* uget with a fallback for absent keys; 0 ok, -1 error. */
static int uopt(struct cfg *c, const char *key, uint64_t dflt, uint64_t *out)
{
	int rc = uget(c, key, out);

	if (rc == 0)
		*out = dflt;
	return rc < 0 ? -1 : 0;
}

static int required(struct cfg *c, const char *key, uint64_t *out)
{
	int rc = uget(c, key, out);

	if (rc == 0)
		snprintf(c->msg, c->msgsz, "missing key \"%s\"", key);
	return rc == 1 ? 0 : -1;
}

static const char *sget(struct cfg *c, const char *key)
{
	return json_string_value(get(c, key));
}

/* ---- counting ------------------------------------------------------------ */

/* count matrices of in x out in bucket k. */
static void lin(struct cfg *c, int k, uint64_t in, uint64_t out, uint64_t count)
{
	c->b[k].params += in * out * count;
	c->b[k].in_sum += in * count;
	c->b[k].out_sum += out * count;
	c->b[k].mats += count;
}

static void vec(struct cfg *c, uint64_t n)
{
	c->b[B_OTHER].params += n;
}

/* ---- the layer pattern --------------------------------------------------- */

static int kind_of_type(struct cfg *c, const char *t)
{
	if (!strcmp(t, "full_attention") || !strcmp(t, "attention") ||
	    !strcmp(t, "global"))
		return LK_FULL;
	if (!strcmp(t, "sliding_attention") || !strcmp(t, "local") ||
	    !strcmp(t, "chunked_attention"))
		return LK_SLIDING;
	if (!strcmp(t, "linear_attention"))
		return LK_GDN;
	if (!strcmp(t, "mamba"))
		return get(c, "mamba_num_heads") || get(c, "mamba_n_heads")
		               ? LK_MAMBA2
		               : LK_MAMBA1;
	return -1;
}

/* layer_types / layers_block_type: 1 used, 0 absent, -1 error. */
static int pattern_from_list(struct cfg *c)
{
	json_t *a = get(c, "layer_types");
	size_t i;

	if (!a)
		a = get(c, "layers_block_type");
	if (!a || !json_is_array(a))
		return 0;
	if (json_array_size(a) != c->L) {
		snprintf(c->msg, c->msgsz,
		         "layer_types has %zu entries for %" PRIu64 " layers",
		         json_array_size(a), c->L);
		return -1;
	}
	for (i = 0; i < c->L; i++) {
		const char *t = json_string_value(json_array_get(a, i));
		int k = t ? kind_of_type(c, t) : -1;
		if (k < 0) {
			snprintf(c->msg, c->msgsz,
			         "layer type \"%s\" of layer %zu is not known",
			         t ? t : "?", i);
			return -1;
		}
		c->kind[i] = (unsigned char)k;
	}
	return 1;
}

static int pattern_nemotron(struct cfg *c, const char *p)
{
	size_t i;

	if (strlen(p) != c->L) {
		snprintf(c->msg, c->msgsz,
		         "hybrid_override_pattern has %zu layers, "
		         "num_hidden_layers %" PRIu64,
		         strlen(p), c->L);
		return -1;
	}
	for (i = 0; i < c->L; i++) {
		switch (p[i]) {
		case 'M':
			c->kind[i] = LK_MAMBA2, c->ffn[i] = FF_NONE;
			break;
		case '*':
			c->kind[i] = LK_FULL, c->ffn[i] = FF_NONE;
			break;
		case '-':
			c->kind[i] = LK_NONE, c->ffn[i] = FF_DENSE;
			break;
		case 'E':
			c->kind[i] = LK_NONE, c->ffn[i] = FF_MOE;
			break;
		default:
			snprintf(
			        c->msg, c->msgsz,
			        "hybrid_override_pattern has '%c' at layer %zu",
			        p[i], i);
			return -1;
		}
	}
	return 0;
}

/* Sliding layers by the type's rule; window from sliding_window. 0, or
 * -1 with the error set. */
static int pattern_sliding(struct cfg *c)
{
	uint64_t i, p = c->fam->pattern, maxwin = 0;
	int sw = c->fam->sliding;

	if (!c->window)
		return 0;
	if (sw == SW_QWEN) {
		/* transformers' Qwen2/Qwen3: sliding only with
		 * use_sliding_window, from max_window_layers on. */
		if (!bget(c, "use_sliding_window", 0))
			return 0;
		if (uopt(c, "max_window_layers", c->L, &maxwin))
			return -1;
	}
	if (sw == SW_PATTERN && uopt(c, "sliding_window_pattern", p, &p))
		return -1;
	for (i = 0; i < c->L; i++) {
		int s = 0;
		switch (sw) {
		case SW_ALL:
			s = 1;
			break;
		case SW_ALTERNATE: /* Gemma 2: the even layers */
			s = i % 2 == 0;
			break;
		case SW_PATTERN: /* Gemma 3, Cohere 2 */
			s = p && (i + 1) % p != 0;
			break;
		case SW_QWEN:
			s = i >= maxwin;
			break;
		}
		if (s && c->kind[i] == LK_FULL)
			c->kind[i] = LK_SLIDING;
	}
	return 0;
}

static int layer_pattern(struct cfg *c)
{
	const char *mt = c->m->model_type, *hp;
	uint64_t i, period, offset, x;
	int rc;

	for (i = 0; i < c->L; i++) {
		c->kind[i] = c->fam->flags & F_NO_ATTN ? LK_MAMBA1 : LK_FULL;
		c->ffn[i] = c->fam->flags & F_NO_ATTN ? FF_NONE
		            : c->E                    ? FF_MOE
		                                      : FF_DENSE;
	}
	if (uget(c, "sliding_window", &c->window) < 0)
		return -1;
	rc = pattern_from_list(c);
	if (rc < 0)
		return -1;
	if (rc == 0 && (hp = sget(c, "hybrid_override_pattern")) != NULL) {
		if (pattern_nemotron(c, hp))
			return -1;
		rc = 1;
	}
	if (rc == 0 && !strcmp(mt, "jamba")) {
		if (uopt(c, "attn_layer_period", 8, &period) ||
		    uopt(c, "attn_layer_offset", 4, &offset))
			return -1;
		for (i = 0; i < c->L; i++)
			c->kind[i] = i % period == offset ? LK_FULL : LK_MAMBA1;
		rc = 1;
	}
	if (rc == 0 && !strcmp(mt, "qwen3_next")) {
		if (uopt(c, "full_attention_interval", 4, &period))
			return -1;
		for (i = 0; i < c->L; i++)
			c->kind[i] = (i + 1) % period ? LK_GDN : LK_FULL;
		rc = 1;
	}
	if (rc == 0 && pattern_sliding(c))
		return -1;
	for (i = 0; i < c->L; i++)
		if (c->kind[i] == LK_SLIDING && !c->window) {
			x = 0;
			if (uget(c, "attention_chunk_size", &x) < 0)
				return -1;
			c->window = x;
			if (!x) {
				/* No window given: nothing caps the layer. */
				c->kind[i] = LK_FULL;
				vrt_model_note(c->m,
				               "sliding layers without a "
				               "sliding_window: counted as "
				               "full attention");
			}
		}
	if (get(c, "kv_lora_rank"))
		for (i = 0; i < c->L; i++)
			if (c->kind[i] == LK_FULL)
				c->kind[i] = LK_MLA;
	return 0;
}

/* Which layers hold experts (the rest a dense feed-forward). */
static int ffn_pattern(struct cfg *c)
{
	const char *mt = c->m->model_type;
	uint64_t i, first = 0, freq = 1, period, offset, step = 1;
	json_t *only;

	if (!c->E || sget(c, "hybrid_override_pattern"))
		return 0;
	if (c->fam->flags & F_MLA) {
		if (uopt(c, "first_k_dense_replace", 0, &first) < 0 ||
		    uopt(c, "moe_layer_freq", 1, &freq))
			return -1;
		for (i = 0; i < c->L; i++)
			c->ffn[i] =
			        i >= first && i % freq == 0 ? FF_MOE : FF_DENSE;
		return 0;
	}
	if (!strcmp(mt, "jamba")) {
		if (uopt(c, "expert_layer_period", 2, &period) ||
		    uopt(c, "expert_layer_offset", 1, &offset))
			return -1;
		for (i = 0; i < c->L; i++)
			c->ffn[i] = i % period == offset ? FF_MOE : FF_DENSE;
		return 0;
	}
	if (uopt(c, "decoder_sparse_step", 1, &step))
		return -1;
	only = get(c, "mlp_only_layers");
	for (i = 0; i < c->L; i++) {
		size_t k;
		int dense = (i + 1) % step != 0;
		for (k = 0; only && k < json_array_size(only); k++)
			if (json_integer_value(json_array_get(only, k)) ==
			    (json_int_t)i)
				dense = 1;
		c->ffn[i] = dense ? FF_DENSE : FF_MOE;
	}
	return 0;
}

/* ---- parameters of one layer --------------------------------------------- */

static void attn_standard(struct cfg *c)
{
	unsigned f = c->fam->flags;
	uint64_t q = c->heads * c->hd, kv = c->kvh * c->hd;

	lin(c, B_ATTN, c->H,
	    f & F_GATED_Q && bget(c, "attn_output_gate", 1) ? 2 * q : q, 1);
	lin(c, B_ATTN, c->H, kv, 2);
	lin(c, B_ATTN, q, c->H, 1);
	if (f & F_ALL_BIAS || bget(c, "attention_bias", 0))
		vec(c, q + 2 * kv + c->H);
	else if (f & F_QKV_BIAS)
		vec(c, q + 2 * kv);
	if (f & F_QK_NORM)
		vec(c, 2 * c->hd);
	if (f & F_SINKS)
		vec(c, c->heads);
}

/* Falcon: one fused query_key_value projection and a dense output. */
static int attn_falcon(struct cfg *c)
{
	uint64_t kv = c->kvh;

	lin(c, B_ATTN, c->H, (c->heads + 2 * kv) * c->hd, 1);
	lin(c, B_ATTN, c->heads * c->hd, c->H, 1);
	if (bget(c, "bias", 0))
		vec(c, (c->heads + 2 * kv) * c->hd + c->H);
	return 0;
}

/* MLA (DeepSeek V2/V3): q through an optional low-rank, one latent KV
 * down-projection (with the rope key) and its up-projection. */
static int attn_mla(struct cfg *c, uint64_t *latent)
{
	uint64_t qr = 0, kvr, nope, rope, vd;

	if (uget(c, "q_lora_rank", &qr) < 0 ||
	    required(c, "kv_lora_rank", &kvr) ||
	    required(c, "qk_nope_head_dim", &nope) ||
	    required(c, "qk_rope_head_dim", &rope) ||
	    required(c, "v_head_dim", &vd))
		return -1;
	if (qr) {
		lin(c, B_ATTN, c->H, qr, 1);
		vec(c, qr); /* q_a_layernorm */
		lin(c, B_ATTN, qr, c->heads * (nope + rope), 1);
	} else
		lin(c, B_ATTN, c->H, c->heads * (nope + rope), 1);
	lin(c, B_ATTN, c->H, kvr + rope, 1);
	vec(c, kvr); /* kv_a_layernorm */
	lin(c, B_ATTN, kvr, c->heads * (nope + vd), 1);
	lin(c, B_ATTN, c->heads * vd, c->H, 1);
	*latent = kvr + rope;
	c->mla_head = nope + rope;
	return 0;
}

/* Recurrent mixers: their parameters into the buckets, their state per
 * sequence into *conv and *ssm (elements). */
/* key, else key2, else dflt; 0 ok, -1 error. */
static int either(struct cfg *c, const char *key, const char *key2,
                  uint64_t dflt, uint64_t *out)
{
	int rc = uget(c, key, out);

	if (rc == 0)
		rc = uopt(c, key2, dflt, out);
	return rc < 0 ? -1 : 0;
}

static int mamba1(struct cfg *c, uint64_t *conv, uint64_t *ssm)
{
	uint64_t expand, I, N, K, R;
	json_t *r;

	/* Jamba spells them mamba_*; Mamba and FalconMamba give the inner
	 * size as intermediate_size. */
	if (either(c, "mamba_expand", "expand", 2, &expand) ||
	    either(c, "mamba_d_state", "state_size", 16, &N) ||
	    either(c, "mamba_d_conv", "conv_kernel", 4, &K))
		return -1;
	I = c->fam->flags & F_NO_ATTN && c->I ? c->I : expand * c->H;
	r = get(c, "mamba_dt_rank");
	if (!r)
		r = get(c, "time_step_rank");
	R = r && json_is_integer(r) && json_integer_value(r) > 0
	            ? (uint64_t)json_integer_value(r)
	            : (c->H + 15) / 16; /* "auto": ceil(hidden / 16) */
	lin(c, B_RECUR, c->H, 2 * I, 1);
	lin(c, B_RECUR, I, R + 2 * N, 1);
	lin(c, B_RECUR, R, I, 1);
	lin(c, B_RECUR, I, c->H, 1);
	vec(c, I * K); /* depthwise convolution */
	if (bget(c, "mamba_conv_bias", 1) && bget(c, "use_conv_bias", 1))
		vec(c, I);
	vec(c, I + I * N + I); /* dt_proj bias, A_log, D */
	if (bget(c, "mamba_proj_bias", 0) || bget(c, "use_bias", 0))
		vec(c, 2 * I + c->H);
	if (!strcmp(c->m->model_type, "jamba"))
		vec(c, R + 2 * N); /* dt, B and C layernorms */
	*conv = I * (K - 1);
	*ssm = I * N;
	return 0;
}

static int mamba2(struct cfg *c, uint64_t *conv, uint64_t *ssm)
{
	uint64_t nh, hdim, N, G, K, I, convdim;

	if (either(c, "mamba_num_heads", "mamba_n_heads", 0, &nh) ||
	    required(c, "mamba_head_dim", &hdim) ||
	    required(c, "ssm_state_size", &N) ||
	    either(c, "n_groups", "mamba_n_groups", 1, &G) ||
	    either(c, "conv_kernel", "mamba_d_conv", 4, &K))
		return -1;
	if (!nh) {
		snprintf(c->msg, c->msgsz, "missing key \"mamba_num_heads\"");
		return -1;
	}
	I = nh * hdim;
	convdim = I + 2 * G * N;
	lin(c, B_RECUR, c->H, 2 * I + 2 * G * N + nh, 1); /* z, xBC, dt */
	lin(c, B_RECUR, I, c->H, 1);
	vec(c, convdim * K + convdim); /* convolution and its bias */
	vec(c, 3 * nh + I);            /* dt_bias, A_log, D; gated norm */
	*conv = convdim * (K - 1);
	*ssm = nh * hdim * N;
	return 0;
}

/* Qwen3-Next's gated DeltaNet. */
static int gdn(struct cfg *c, uint64_t *conv, uint64_t *ssm)
{
	uint64_t nk, nv, dk, dv, K, kd, vd;

	if (required(c, "linear_num_key_heads", &nk) ||
	    required(c, "linear_num_value_heads", &nv) ||
	    required(c, "linear_key_head_dim", &dk) ||
	    required(c, "linear_value_head_dim", &dv) ||
	    uopt(c, "linear_conv_kernel_dim", 4, &K))
		return -1;
	kd = nk * dk;
	vd = nv * dv;
	lin(c, B_RECUR, c->H, 2 * kd + 2 * vd, 1); /* q, k, v, z */
	lin(c, B_RECUR, c->H, 2 * nv, 1);          /* b, a */
	lin(c, B_RECUR, vd, c->H, 1);
	vec(c, (2 * kd + vd) * K); /* convolution, no bias */
	vec(c, 2 * nv + dv);       /* dt_bias, A_log; gated norm */
	*conv = (2 * kd + vd) * (K - 1);
	*ssm = nv * dv * dk;
	return 0;
}

static void ffn_dense(struct cfg *c)
{
	if (c->plain) {
		lin(c, B_MLP, c->H, c->I, 1);
		lin(c, B_MLP, c->I, c->H, 1);
		if (bget(c, "mlp_bias", 0) || bget(c, "bias", 0))
			vec(c, c->I + c->H);
		return;
	}
	lin(c, B_MLP, c->H, c->I, 2);
	lin(c, B_MLP, c->I, c->H, 1);
	if (bget(c, "mlp_bias", 0))
		vec(c, 2 * c->I + c->H);
}

static void ffn_moe(struct cfg *c)
{
	uint64_t expert = 3 * c->H * c->Im;

	lin(c, B_EXPERT, c->H, c->Im, 2 * c->E);
	lin(c, B_EXPERT, c->Im, c->H, c->E);
	lin(c, B_ROUTER, c->H, c->E, 1);
	if (c->fam->flags & F_ROUTER_B) {
		/* gpt-oss: router bias, gate_up and down biases */
		vec(c, c->E + c->E * (2 * c->Im + c->H));
		expert += 2 * c->Im + c->H;
	}
	if (c->fam->flags & F_MLA &&
	    !strcmp(sget(c, "topk_method") ? sget(c, "topk_method") : "",
	            "noaux_tc"))
		vec(c, c->E); /* e_score_correction_bias */
	if (c->shared_i) {
		lin(c, B_SHARED, c->H, c->shared_i, 2);
		lin(c, B_SHARED, c->shared_i, c->H, 1);
		if (!(c->fam->flags & F_MLA))
			lin(c, B_SHARED, c->H, 1, 1); /* shared_expert_gate */
	}
	c->inactive += (c->E - c->topk) * expert;
}

/* ---- the vision tower ---------------------------------------------------- */

static void vision(struct cfg *c)
{
	json_t *vc = json_object_get(c->root, "vision_config");
	const char *vt, *outer = json_string_value(
	                        json_object_get(c->root, "model_type"));
	uint64_t vh, vi, vl, p, img, ch = 3, patches;
	json_t *x;
	int clip;

	if (!json_is_object(vc))
		return;
#define VU(key, dst)                                                           \
	((x = json_object_get(vc, key)) && json_is_integer(x) &&               \
	 json_integer_value(x) > 0 &&                                          \
	 ((dst) = (uint64_t)json_integer_value(x), 1))
	if (!VU("hidden_size", vh) || !VU("intermediate_size", vi) ||
	    !(VU("num_hidden_layers", vl) || VU("depth", vl)) ||
	    !VU("patch_size", p) || !VU("image_size", img)) {
		vrt_model_note(c->m, "vision_config without a ViT shape: "
		                     "its parameters are not counted");
		return;
	}
	(void)VU("num_channels", ch);
#undef VU
	vt = json_string_value(json_object_get(vc, "model_type"));
	clip = vt && strstr(vt, "clip");
	if (!vt || (!clip && !strstr(vt, "siglip")))
		vrt_model_note(c->m,
		               "vision tower of type %s counted as a "
		               "SigLIP-style ViT",
		               vt ? vt : "(none)");
	patches = (img / p) * (img / p);
	/* patch convolution (+bias), position embedding (CLIP: a class
	 * token too), per layer 4 biased projections, 2 LayerNorms and a
	 * biased 2-matrix MLP; the final LayerNorm (CLIP: a first one). */
	c->b[B_VISION].params += ch * p * p * vh + (clip ? 0 : vh) +
	                         (patches + (clip ? 2 : 0)) * vh;
	c->b[B_VISION].params +=
	        vl * (4 * (vh * vh + vh) + 4 * vh + 2 * vh * vi + vi + vh);
	c->b[B_VISION].params += (clip ? 4 : 2) * vh;
	if (outer && !strcmp(outer, "gemma3"))
		/* mm_input_projection_weight and mm_soft_emb_norm */
		c->b[B_VISION].params += vh * c->H + vh;
	else if (outer && strstr(outer, "llava"))
		/* multi_modal_projector: linear_1, GELU, linear_2 */
		c->b[B_VISION].params += vh * c->H + c->H + c->H * c->H + c->H;
	else
		vrt_model_note(c->m, "the projector of %s is not counted",
		               outer ? outer : "this model");
	c->m->params_vision = c->b[B_VISION].params;
}

/* ---- the whole model ----------------------------------------------------- */

static const struct family *family_of(const char *type)
{
	size_t i;

	for (i = 0; i < sizeof(families) / sizeof(families[0]); i++)
		if (!strcmp(families[i].type, type))
			return &families[i];
	return NULL;
}

/* The weights' dtype as served: torch_dtype (or dtype); float32
 * checkpoints are served in 16 bits by the engines' "auto". */
static void model_dtype(struct cfg *c)
{
	const char *t = sget(c, "torch_dtype");
	struct vrt_model *m = c->m;

	if (!t)
		t = sget(c, "dtype");
	if (t && !vrt_model_dtype(t, &m->dtype) &&
	    strcmp(m->dtype.name, "fp32"))
		return;
	if (t && !strcmp(m->dtype.name, "fp32"))
		vrt_model_note(m, "float32 checkpoint: engines serve it in "
		                  "fp16 (dtype \"auto\")");
	else
		vrt_model_note(m, "no torch_dtype: 16-bit weights assumed");
	vrt_model_dtype("fp16", &m->dtype);
}

/* The recurrent state's element sizes: the convolution at the model's
 * dtype, the SSM state at mamba_ssm_dtype where the config names one. */
static void state_dtypes(struct cfg *c)
{
	struct vrt_model_dtype d;
	const char *s = sget(c, "mamba_ssm_dtype");

	if (!s)
		s = sget(c, "mamba_ssm_cache_dtype");
	c->m->state_conv_bytes = c->m->dtype.block_bytes;
	c->m->state_ssm_bytes = s && !vrt_model_dtype(s, &d)
	                                ? d.block_bytes
	                                : c->m->dtype.block_bytes;
}

/* Groups of consecutive-or-not layers of one kind. */
static int group_layers(struct cfg *c, uint64_t latent, uint64_t conv[3],
                        uint64_t ssm[3])
{
	static const char *const rec_label[3] = {"mamba", "mamba2",
	                                         "gated_deltanet"};
	uint64_t count[LK_NONE + 1] = {0}, i;
	struct vrt_model_group *g;
	int k;

	for (i = 0; i < c->L; i++)
		count[c->kind[i]]++;
	for (k = 0; k < LK_NONE; k++) {
		if (!count[k])
			continue;
		if (k == LK_FULL || k == LK_SLIDING) {
			const char *label = k == LK_SLIDING      ? "sliding"
			                    : c->kvh == 1        ? "mqa"
			                    : c->kvh == c->heads ? "mha"
			                                         : "gqa";
			g = vrt_model_add_group(c->m,
			                        k == LK_FULL
			                                ? VRT_MODEL_FULL
			                                : VRT_MODEL_SLIDING,
			                        label, count[k]);
			if (!g)
				return -1;
			g->kv_heads = c->kvh;
			g->k_dim = g->v_dim = c->hd;
			g->window = k == LK_SLIDING ? c->window : 0;
		} else if (k == LK_MLA) {
			g = vrt_model_add_group(c->m, VRT_MODEL_MLA, "mla",
			                        count[k]);
			if (!g)
				return -1;
			g->kv_heads = 1;
			g->k_dim = latent;
		} else {
			int r = k - LK_MAMBA1;
			g = vrt_model_add_group(c->m, VRT_MODEL_RECURRENT,
			                        rec_label[r], count[k]);
			if (!g)
				return -1;
			g->conv_elems = conv[r];
			g->ssm_elems = ssm[r];
		}
	}
	return 0;
}

static int count_layers(struct cfg *c)
{
	uint64_t latent = 0, conv[3] = {0}, ssm[3] = {0}, i;

	for (i = 0; i < c->L; i++) {
		int k = c->kind[i], rc = 0;
		switch (k) {
		case LK_FULL:
		case LK_SLIDING:
			if (c->fam->flags & F_FALCON)
				rc = attn_falcon(c);
			else
				attn_standard(c);
			break;
		case LK_MLA:
			rc = attn_mla(c, &latent);
			break;
		case LK_MAMBA1:
			rc = mamba1(c, &conv[0], &ssm[0]);
			break;
		case LK_MAMBA2:
			rc = mamba2(c, &conv[1], &ssm[1]);
			break;
		case LK_GDN:
			rc = gdn(c, &conv[2], &ssm[2]);
			break;
		}
		if (rc)
			return -1;
		if (c->ffn[i] == FF_DENSE)
			ffn_dense(c);
		else if (c->ffn[i] == FF_MOE)
			ffn_moe(c);
		vec(c, c->fam->norms * c->H);
	}
	return group_layers(c, latent, conv, ssm);
}

static int experts(struct cfg *c)
{
	uint64_t nshared = 0;

	if (uget(c, "n_routed_experts", &c->E) < 0)
		return -1;
	if (!c->E && uget(c, "num_local_experts", &c->E) < 0)
		return -1;
	if (!c->E && uget(c, "num_experts", &c->E) < 0)
		return -1;
	if (c->E <= 1) {
		c->E = 0;
		return 0;
	}
	if (uget(c, "num_experts_per_tok", &c->topk) < 0)
		return -1;
	if (!c->topk && uopt(c, "experts_per_token", 2, &c->topk))
		return -1;
	if (uopt(c, "moe_intermediate_size", c->I, &c->Im) ||
	    uopt(c, "n_shared_experts", 0, &nshared) ||
	    uopt(c, "shared_expert_intermediate_size", 0, &c->shared_i))
		return -1;
	if (nshared)
		c->shared_i = nshared * c->Im; /* DeepSeek: one wide MLP */
	c->shared = nshared ? nshared : c->shared_i ? 1 : 0;
	if (c->topk > c->E) {
		snprintf(c->msg, c->msgsz,
		         "num_experts_per_tok (%" PRIu64
		         ") exceeds the %" PRIu64 " experts",
		         c->topk, c->E);
		return -1;
	}
	return 0;
}

/* Heads, KV heads and head size, with the types' own keys. */
static int attention_shape(struct cfg *c)
{
	int rc;

	if (c->fam->flags & F_NO_ATTN)
		return 0;
	if (required(c, "num_attention_heads", &c->heads))
		return -1;
	c->kvh = c->heads;
	rc = uget(c, "num_key_value_heads", &c->kvh);
	if (rc == 0 && c->fam->flags & F_FALCON) {
		/* Falcon: num_kv_heads with the new architecture, else
		 * one head under multi_query */
		if (bget(c, "new_decoder_architecture", 0))
			rc = uget(c, "num_kv_heads", &c->kvh);
		else if (bget(c, "multi_query", 0))
			c->kvh = 1;
	} else if (rc == 0 && bget(c, "multi_query", 0))
		c->kvh = 1;
	if (rc < 0)
		return -1;
	if (c->kvh > c->heads || c->heads % c->kvh) {
		snprintf(c->msg, c->msgsz,
		         "num_key_value_heads (%" PRIu64 ") does not divide "
		         "num_attention_heads (%" PRIu64 ")",
		         c->kvh, c->heads);
		return -1;
	}
	rc = uget(c, "head_dim", &c->hd);
	if (rc == 0)
		rc = uget(c, "attention_head_dim", &c->hd);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		if (c->H % c->heads) {
			snprintf(c->msg, c->msgsz,
			         "hidden_size (%" PRIu64
			         ") is not a multiple of "
			         "num_attention_heads (%" PRIu64 ") and no "
			         "head_dim is given",
			         c->H, c->heads);
			return -1;
		}
		c->hd = c->H / c->heads;
	}
	return 0;
}

/* A gated feed-forward unless the type or its activation says plain. */
static int gated_ffn(struct cfg *c)
{
	const char *act;

	if (c->fam->flags & F_PLAIN_FFN)
		return 0;
	if (c->fam != &generic)
		return 1;
	act = sget(c, "hidden_act");
	if (!act)
		act = sget(c, "hidden_activation");
	if (!act)
		act = sget(c, "activation_function");
	/* Llama-family configs name a gated activation; with none named, an
	 * explicit intermediate_size is the Llama convention and a missing
	 * one GPT's 4 x hidden with a plain MLP. */
	if (!act)
		return get(c, "intermediate_size") != NULL;
	return !strcasecmp(act, "silu") || !strcasecmp(act, "swiglu") ||
	       !strcasecmp(act, "geglu") ||
	       !strcasecmp(act, "gelu_pytorch_tanh");
}

static int decoder(struct cfg *c)
{
	struct vrt_model *m = c->m;
	uint64_t emb, mtp = 0, i;
	json_t *tie;

	if (required(c, "num_hidden_layers", &c->L) ||
	    required(c, "hidden_size", &c->H) ||
	    required(c, "vocab_size", &c->V))
		return -1;
	if (c->L > MAX_LAYERS) {
		snprintf(c->msg, c->msgsz,
		         "num_hidden_layers (%" PRIu64 ") is over %d", c->L,
		         MAX_LAYERS);
		return -1;
	}
	if (attention_shape(c))
		return -1;
	if (uget(c, "intermediate_size", &c->I) < 0)
		return -1;
	if (!c->I && uget(c, "ffn_hidden_size", &c->I) < 0)
		return -1;
	c->plain = !gated_ffn(c);
	if (!c->I)
		c->I = 4 * c->H;
	if (experts(c) || layer_pattern(c) || ffn_pattern(c))
		return -1;
	if (count_layers(c))
		return -1;
	vec(c, (c->fam->flags & F_FALCON ? 2 : 1) * c->H); /* final norm */
	emb = c->V * c->H;
	tie = get(c, "tie_word_embeddings");
	m->tied = tie ? json_is_true(tie) : c->fam->tie;
	c->b[B_EMB].params += emb;
	if (!m->tied)
		lin(c, B_HEAD, c->H, c->V, 1);
	m->params_embedding = emb;
	m->layers = c->L;
	m->hidden = c->H;
	m->heads = c->heads;
	m->kv_heads = c->kvh;
	m->head_dim = c->mla_head ? c->mla_head : c->hd;
	m->vocab = c->V;
	m->intermediate = c->I;
	m->experts = c->E;
	m->experts_per_token = c->E ? c->topk : 0;
	m->shared_experts = c->shared;
	for (i = 0; i < c->L; i++)
		m->moe_layers += c->ffn[i] == FF_MOE;
	if (uopt(c, "max_position_embeddings", 0, &m->context_len))
		return -1;
	if (uget(c, "num_nextn_predict_layers", &mtp) == 1 && mtp)
		vrt_model_note(m,
		               "%" PRIu64 " multi-token-prediction layer%s "
		               "of the checkpoint not counted (loaded only "
		               "for speculative decoding)",
		               mtp, mtp == 1 ? "" : "s");
	return 0;
}

/* Whisper: an encoder (no KV cache) and a decoder with self-attention
 * per token and cross-attention over the encoder's positions. */
static int whisper(struct cfg *c)
{
	struct vrt_model *m = c->m;
	uint64_t d, el, dl, eh, dh, ef, df, V, src, tgt, mels;
	struct vrt_model_group *g;

	if (required(c, "d_model", &d) || required(c, "encoder_layers", &el) ||
	    required(c, "decoder_layers", &dl) ||
	    required(c, "encoder_attention_heads", &eh) ||
	    required(c, "decoder_attention_heads", &dh) ||
	    required(c, "encoder_ffn_dim", &ef) ||
	    required(c, "decoder_ffn_dim", &df) ||
	    required(c, "vocab_size", &V) ||
	    uopt(c, "max_source_positions", 1500, &src) ||
	    uopt(c, "max_target_positions", 448, &tgt) ||
	    uopt(c, "num_mel_bins", 80, &mels))
		return -1;
	if (d % dh || d % eh) {
		snprintf(c->msg, c->msgsz,
		         "d_model (%" PRIu64 ") is not a multiple of the heads",
		         d);
		return -1;
	}
	/* encoder: two convolutions, positions, layers, final LayerNorm */
	vec(c, mels * d * 3 + d + d * d * 3 + d + src * d);
	lin(c, B_ATTN, d, d, 4 * el);
	lin(c, B_MLP, d, ef, el);
	lin(c, B_MLP, ef, d, el);
	vec(c, el * (3 * d + 4 * d + ef + d) + 2 * d);
	/* decoder: positions, layers with self- and cross-attention; the
	 * output projection is the token embedding */
	vec(c, tgt * d);
	lin(c, B_ATTN, d, d, 8 * dl);
	lin(c, B_MLP, d, df, dl);
	lin(c, B_MLP, df, d, dl);
	vec(c, dl * (6 * d + 6 * d + df + d) + 2 * d);
	c->b[B_EMB].params += V * d;
	m->tied = 1;
	m->params_embedding = V * d;
	m->layers = dl;
	m->hidden = d;
	m->heads = m->kv_heads = dh;
	m->head_dim = d / dh;
	m->vocab = V;
	m->intermediate = df;
	m->context_len = tgt;
	g = vrt_model_add_group(m, VRT_MODEL_FULL, "mha", dl);
	g->kv_heads = dh;
	g->k_dim = g->v_dim = d / dh;
	g = vrt_model_add_group(m, VRT_MODEL_CROSS, "cross", dl);
	g->kv_heads = dh;
	g->k_dim = g->v_dim = d / dh;
	g->cross_tokens = src;
	vrt_model_note(m,
	               "%" PRIu64 " encoder layers hold no KV cache; "
	               "each decoder layer keeps K and V of the %" PRIu64
	               " encoder positions per sequence",
	               el, src);
	return 0;
}

/* The object holding the text model's numbers, and its type. */
static json_t *text_object(json_t *root, const char **type)
{
	static const char *const keys[] = {"text_config", "llm_config",
	                                   "language_config"};
	const char *outer =
	        json_string_value(json_object_get(root, "model_type"));
	json_t *o = root;
	size_t i;

	for (i = 0; i < 3; i++) {
		json_t *t = json_object_get(root, keys[i]);
		if (json_is_object(t)) {
			o = t;
			break;
		}
	}
	*type = json_string_value(json_object_get(o, "model_type"));
	if (!*type && o != root && outer)
		for (i = 0; i < sizeof(text_types) / sizeof(text_types[0]); i++)
			if (!strcmp(text_types[i].outer, outer))
				*type = text_types[i].inner;
	if (!*type)
		*type = outer;
	if (*type && o != root && !family_of(*type))
		for (i = 0; i < sizeof(text_types) / sizeof(text_types[0]); i++)
			if (!strcmp(text_types[i].outer, *type))
				*type = text_types[i].inner;
	return o;
}

int vrt_model_config_parse(struct vrt_model *m, const char *text, size_t len,
                           char *msg, size_t msgsz)
{
	struct cfg *c;
	json_error_t jerr;
	const char *type, *arch;
	json_t *archs;
	int rc = -1, k;

	memset(m, 0, sizeof(*m));
	snprintf(m->source, sizeof(m->source), "config.json");
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(msg, msgsz, "out of memory");
		return -1;
	}
	c->m = m;
	c->msg = msg;
	c->msgsz = msgsz;
	c->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!c->root) {
		snprintf(msg, msgsz, "invalid JSON at line %d column %d: %s",
		         jerr.line, jerr.column, jerr.text);
		free(c);
		return -1;
	}
	if (!json_is_object(c->root)) {
		snprintf(msg, msgsz, "not a JSON object");
		goto out;
	}
	c->o = text_object(c->root, &type);
	snprintf(m->model_type, sizeof(m->model_type), "%s", type ? type : "");
	archs = json_object_get(c->root, "architectures");
	arch = json_string_value(json_array_get(archs, 0));
	snprintf(m->architecture, sizeof(m->architecture), "%s",
	         arch ? arch : "");
	c->fam = family_of(m->model_type);
	if (!c->fam) {
		c->fam = &generic;
		if (strcmp(m->model_type, "whisper"))
			vrt_model_note(m,
			               "model type \"%s\" is not known: "
			               "counted as a dense decoder",
			               m->model_type);
	}
	model_dtype(c);
	state_dtypes(c);
	if (!strcmp(m->model_type, "whisper") ? whisper(c) : decoder(c))
		goto out;
	vision(c);
	for (k = 0; k < NBUCKETS; k++)
		m->params_total += c->b[k].params;
	m->params_active = m->params_total - c->inactive;
	vrt_model_config_weights(c);
	/* A canonical name: cannot fail. */
	(void)vrt_model_set_kv_dtype(m, m->dtype.name, NULL, "model dtype");
	vrt_model_finish(m);
	rc = 0;
out:
	json_decref(c->root);
	free(c);
	return rc;
}
