/*
 * gguf.c — the GGUF reader of gguf.h: a bounded cursor over the head of
 * the file, two passes over the key-value pairs (the first finds the
 * architecture, whose name prefixes the keys the second reads), then the
 * tensor infos, then the description. Nothing in the file is trusted: a
 * length is compared with the bytes left before anything is read, arrays
 * are skipped element by element only for strings and nested arrays
 * (whose elements take at least 8 bytes each, so a count cannot spin),
 * and the only allocation is one per-layer array of at most MAX_LAYERS
 * values. Pure, single-threaded; the tables are constant.
 */
#include "gguf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_LAYERS 4096
#define MAX_DIMS   4 /* GGML_MAX_DIMS */

/* ---- ggml's types ----------------------------------------------------- */

/* ggml's type traits (ggml.c, ggml-common.h): name, bytes per block,
 * elements per block. Removed types have no entry. */
static const struct {
	const char *name;
	unsigned bytes, elems;
} types[] = {
        [0] = {"f32", 4, 1},         [1] = {"f16", 2, 1},
        [2] = {"q4_0", 18, 32},      [3] = {"q4_1", 20, 32},
        [6] = {"q5_0", 22, 32},      [7] = {"q5_1", 24, 32},
        [8] = {"q8_0", 34, 32},      [9] = {"q8_1", 36, 32},
        [10] = {"q2_K", 84, 256},    [11] = {"q3_K", 110, 256},
        [12] = {"q4_K", 144, 256},   [13] = {"q5_K", 176, 256},
        [14] = {"q6_K", 210, 256},   [15] = {"q8_K", 292, 256},
        [16] = {"iq2_xxs", 66, 256}, [17] = {"iq2_xs", 74, 256},
        [18] = {"iq3_xxs", 98, 256}, [19] = {"iq1_s", 50, 256},
        [20] = {"iq4_nl", 18, 32},   [21] = {"iq3_s", 110, 256},
        [22] = {"iq2_s", 82, 256},   [23] = {"iq4_xs", 136, 256},
        [24] = {"i8", 1, 1},         [25] = {"i16", 2, 1},
        [26] = {"i32", 4, 1},        [27] = {"i64", 8, 1},
        [28] = {"f64", 8, 1},        [29] = {"iq1_m", 56, 256},
        [30] = {"bf16", 2, 1},       [34] = {"tq1_0", 54, 256},
        [35] = {"tq2_0", 66, 256},   [39] = {"mxfp4", 17, 32},
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

const char *vrt_gguf_type(uint32_t t, unsigned *bytes, unsigned *elems)
{
	if (t >= NTYPES || !types[t].name)
		return NULL;
	if (bytes)
		*bytes = types[t].bytes;
	if (elems)
		*elems = types[t].elems;
	return types[t].name;
}

/* llama.cpp's enum llama_ftype (include/llama.h), "MOSTLY_" dropped. */
static const char *const file_types[] = {
        [0] = "F32",        [1] = "F16",     [2] = "Q4_0",    [3] = "Q4_1",
        [7] = "Q8_0",       [8] = "Q5_0",    [9] = "Q5_1",    [10] = "Q2_K",
        [11] = "Q3_K_S",    [12] = "Q3_K_M", [13] = "Q3_K_L", [14] = "Q4_K_S",
        [15] = "Q4_K_M",    [16] = "Q5_K_S", [17] = "Q5_K_M", [18] = "Q6_K",
        [19] = "IQ2_XXS",   [20] = "IQ2_XS", [21] = "Q2_K_S", [22] = "IQ3_XS",
        [23] = "IQ3_XXS",   [24] = "IQ1_S",  [25] = "IQ4_NL", [26] = "IQ3_S",
        [27] = "IQ3_M",     [28] = "IQ2_S",  [29] = "IQ2_M",  [30] = "IQ4_XS",
        [31] = "IQ1_M",     [32] = "BF16",   [36] = "TQ1_0",  [37] = "TQ2_0",
        [38] = "MXFP4_MOE",
};

const char *vrt_gguf_file_type_name(uint32_t ftype)
{
	if (ftype >= sizeof(file_types) / sizeof(file_types[0]))
		return NULL;
	return file_types[ftype];
}

/* Bits per weight over a whole model: llama-quantize's sizes for
 * Llama-3-8B (8.03B parameters; Q8_0 7.96 GiB ... Q2_K 2.96 GiB) with
 * its mix of tensor types, and its stated bits for the IQ types. */
static const struct vrt_gguf_quant quants[] = {
        {"F16", 16.0},    {"Q8_0", 8.52},   {"Q6_K", 6.57},   {"Q5_K_M", 5.70},
        {"Q5_K_S", 5.57}, {"Q4_K_M", 4.90}, {"Q4_K_S", 4.67}, {"IQ4_XS", 4.25},
        {"Q3_K_M", 4.00}, {"IQ3_M", 3.66},  {"Q2_K", 3.17},   {"IQ2_M", 2.70},
};

const struct vrt_gguf_quant *vrt_gguf_quants(size_t *n)
{
	*n = sizeof(quants) / sizeof(quants[0]);
	return quants;
}

double vrt_gguf_quant_bpw(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(quants) / sizeof(quants[0]); i++)
		if (!strcasecmp(name, quants[i].name))
			return quants[i].bpw;
	if (name && !strcasecmp(name, "BF16"))
		return 16.0;
	return 0;
}

/* ---- the cursor --------------------------------------------------------- */

enum vtype {
	T_U8 = 0,
	T_I8 = 1,
	T_U16 = 2,
	T_I16 = 3,
	T_U32 = 4,
	T_I32 = 5,
	T_F32 = 6,
	T_BOOL = 7,
	T_STRING = 8,
	T_ARRAY = 9,
	T_U64 = 10,
	T_I64 = 11,
	T_F64 = 12,
};

struct cur {
	const uint8_t *b;
	size_t len, off;
	int bad; /* ran past the end or met a malformed value */
	char why[160];
};

static void bad(struct cur *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void bad(struct cur *c, const char *fmt, ...)
{
	va_list ap;

	if (c->bad)
		return;
	c->bad = 1;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
}

static size_t left(const struct cur *c)
{
	return c->bad ? 0 : c->len - c->off;
}

static int need(struct cur *c, size_t n, const char *what)
{
	if (c->bad)
		return -1;
	if (n > c->len - c->off) {
		bad(c, "%s at byte %zu runs past the end", what, c->off);
		return -1;
	}
	return 0;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static uint64_t get(struct cur *c, unsigned n, const char *what)
{
	uint64_t v;

	if (need(c, n, what))
		return 0;
	v = le(c->b + c->off, n);
	c->off += n;
	return v;
}

/* A string: its bytes in place (not NUL-terminated). */
static const char *str(struct cur *c, size_t *n, const char *what)
{
	uint64_t len = get(c, 8, what);
	const char *s;

	if (c->bad || need(c, len > SIZE_MAX ? SIZE_MAX : (size_t)len, what))
		return NULL;
	s = (const char *)c->b + c->off;
	c->off += (size_t)len;
	*n = (size_t)len;
	return s;
}

static unsigned scalar_size(uint32_t t)
{
	static const unsigned sizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
	return t < sizeof(sizes) / sizeof(sizes[0]) ? sizes[t] : 0;
}

static void skip_value(struct cur *c, uint32_t t, int depth);

/* A value read as a count: any integer type, negative refused; *ok
 * stays 0 for other types, which are skipped. */
static uint64_t as_uint(struct cur *c, uint32_t t, int *ok)
{
	unsigned n = scalar_size(t);
	uint64_t v;

	*ok = 0;
	if (!n || t == T_F32 || t == T_F64 || t == T_BOOL) {
		skip_value(c, t, 0);
		return 0;
	}
	v = get(c, n, "value");
	if (c->bad)
		return 0;
	if ((t == T_I8 || t == T_I16 || t == T_I32 || t == T_I64) &&
	    (v >> (n * 8 - 1)) & 1)
		return 0; /* negative */
	*ok = 1;
	return v;
}

/* An array's elements, skipped. */
static void skip_array(struct cur *c, int depth)
{
	uint32_t et = (uint32_t)get(c, 4, "array type");
	uint64_t n = get(c, 8, "array length"), i;
	unsigned sz = scalar_size(et);

	if (c->bad)
		return;
	if (depth >= VRT_GGUF_MAX_DEPTH) {
		bad(c, "arrays nested deeper than %d at byte %zu",
		    VRT_GGUF_MAX_DEPTH, c->off);
		return;
	}
	if (sz) {
		if (n > left(c) / sz) {
			bad(c,
			    "array of %" PRIu64 " values at byte %zu runs "
			    "past the end",
			    n, c->off);
			return;
		}
		c->off += (size_t)n * sz;
		return;
	}
	if (et != T_STRING && et != T_ARRAY) {
		bad(c, "array of unknown type %" PRIu32 " at byte %zu", et,
		    c->off);
		return;
	}
	/* Strings and arrays take at least 8 bytes each: a count larger
	 * than that cannot be in the buffer. */
	if (n > left(c) / 8) {
		bad(c,
		    "array of %" PRIu64 " values at byte %zu runs past the "
		    "end",
		    n, c->off);
		return;
	}
	for (i = 0; i < n && !c->bad; i++)
		skip_value(c, et, depth + 1);
}

static void skip_value(struct cur *c, uint32_t t, int depth)
{
	size_t n;
	unsigned sz = scalar_size(t);

	if (sz) {
		if (!need(c, sz, "value"))
			c->off += sz;
	} else if (t == T_STRING) {
		str(c, &n, "string");
	} else if (t == T_ARRAY) {
		skip_array(c, depth);
	} else {
		bad(c, "value of unknown type %" PRIu32 " at byte %zu", t,
		    c->off);
	}
}

/* ---- the keys ------------------------------------------------------------ */

/* A per-layer value: one number for every layer, or one per layer. */
struct layered {
	int have;
	uint64_t one;   /* the number, or the largest of the array */
	uint64_t *each; /* per layer (NULL: one for all) */
	size_t n;
};

struct meta {
	char arch[32];
	size_t narch;
	int have_ftype;
	uint32_t ftype;
	char name[64];
	uint64_t blocks, ctx, embd, key_len, value_len, window, lora_rank,
	        rope_dims, experts, experts_used, experts_shared, conv_kernel,
	        ssm_inner, ssm_state, ssm_groups, vocab, swa_every;
	struct layered heads, kv_heads, ffn, swa;
};

/* Keys are compared without the architecture's prefix. */
static int key_is(const struct meta *m, const char *k, size_t n,
                  const char *suffix)
{
	size_t sl = strlen(suffix);

	return n == m->narch + 1 + sl && !memcmp(k, m->arch, m->narch) &&
	       k[m->narch] == '.' && !memcmp(k + m->narch + 1, suffix, sl);
}

static int key_eq(const char *k, size_t n, const char *name)
{
	return n == strlen(name) && !memcmp(k, name, n);
}

/* A per-layer array of integers (or bools) into l; other arrays are
 * skipped. */
static void read_layered(struct cur *c, struct layered *l)
{
	uint32_t et = (uint32_t)get(c, 4, "array type");
	uint64_t n = get(c, 8, "array length"), i;
	unsigned sz = scalar_size(et);
	int ok;

	if (c->bad)
		return;
	if (!sz || et == T_F32 || et == T_F64 || n > MAX_LAYERS) {
		/* Not a per-layer list of counts: skipped like any. */
		c->off -= 12;
		skip_array(c, 0);
		return;
	}
	if (n > left(c) / sz) {
		bad(c,
		    "array of %" PRIu64 " values at byte %zu runs past the "
		    "end",
		    n, c->off);
		return;
	}
	free(l->each);
	l->each = calloc(n ? (size_t)n : 1, sizeof(*l->each));
	if (!l->each) {
		bad(c, "out of memory");
		return;
	}
	l->n = (size_t)n;
	l->have = 1;
	l->one = 0;
	for (i = 0; i < n; i++) {
		uint64_t v = et == T_BOOL ? get(c, 1, "value") != 0
		                          : as_uint(c, et, &ok);
		if (et != T_BOOL && !ok && !c->bad) {
			bad(c, "a negative count in a per-layer array");
			return;
		}
		l->each[i] = v;
		if (v > l->one)
			l->one = v;
	}
}

/* A count or a per-layer array into l. */
static void layered_value(struct cur *c, uint32_t t, struct layered *l)
{
	int ok;
	uint64_t v;

	if (t == T_ARRAY) {
		read_layered(c, l);
		return;
	}
	v = as_uint(c, t, &ok);
	if (ok) {
		free(l->each);
		l->each = NULL;
		l->n = 0;
		l->have = 1;
		l->one = v;
	}
}

/* The u64 fields named by suffix. */
static uint64_t *plain_key(struct meta *m, const char *k, size_t n)
{
	static const struct {
		const char *suffix;
		size_t off;
	} keys[] = {
#define K(s, f) {s, offsetof(struct meta, f)}
	        K("block_count", blocks),
	        K("context_length", ctx),
	        K("embedding_length", embd),
	        K("attention.key_length", key_len),
	        K("attention.value_length", value_len),
	        K("attention.sliding_window", window),
	        K("attention.kv_lora_rank", lora_rank),
	        K("rope.dimension_count", rope_dims),
	        K("expert_count", experts),
	        K("expert_used_count", experts_used),
	        K("expert_shared_count", experts_shared),
	        K("ssm.conv_kernel", conv_kernel),
	        K("ssm.inner_size", ssm_inner),
	        K("ssm.state_size", ssm_state),
	        K("ssm.group_count", ssm_groups),
	        K("vocab_size", vocab),
#undef K
	};
	size_t i;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (key_is(m, k, n, keys[i].suffix))
			return (uint64_t *)((char *)m + keys[i].off);
	return NULL;
}

/* One key-value pair: the value read when the key is one we take,
 * skipped otherwise. Pass 0 looks for the architecture only. */
static void kv_pair(struct cur *c, struct meta *m, int pass)
{
	size_t kn, sn;
	const char *k = str(c, &kn, "key"), *s;
	uint32_t t = (uint32_t)get(c, 4, "value type");
	uint64_t *u, v;
	int ok;

	if (c->bad)
		return;
	if (kn > 65535) {
		bad(c, "a key of %zu bytes (at most 65535)", kn);
		return;
	}
	if (pass == 0) {
		if (key_eq(k, kn, "general.architecture") && t == T_STRING) {
			s = str(c, &sn, "general.architecture");
			if (s && sn && sn < sizeof(m->arch)) {
				memcpy(m->arch, s, sn);
				m->arch[sn] = '\0';
				m->narch = sn;
			}
			return;
		}
		skip_value(c, t, 0);
		return;
	}
	if (key_eq(k, kn, "general.file_type")) {
		v = as_uint(c, t, &ok);
		if (ok && v <= UINT32_MAX) {
			m->have_ftype = 1;
			m->ftype = (uint32_t)v;
		}
		return;
	}
	if (key_eq(k, kn, "general.name") && t == T_STRING) {
		s = str(c, &sn, "general.name");
		if (s)
			snprintf(m->name, sizeof(m->name), "%.*s",
			         (int)(sn < 63 ? sn : 63), s);
		return;
	}
	if (key_eq(k, kn, "tokenizer.ggml.tokens") && t == T_ARRAY) {
		size_t at = c->off;
		uint32_t et = (uint32_t)get(c, 4, "array type");
		uint64_t n = get(c, 8, "array length");
		(void)et;
		c->off = at;
		skip_array(c, 0);
		if (!c->bad && !m->vocab)
			m->vocab = n;
		return;
	}
	if (!m->narch) {
		skip_value(c, t, 0);
		return;
	}
	if (key_is(m, k, kn, "attention.head_count"))
		layered_value(c, t, &m->heads);
	else if (key_is(m, k, kn, "attention.head_count_kv"))
		layered_value(c, t, &m->kv_heads);
	else if (key_is(m, k, kn, "feed_forward_length"))
		layered_value(c, t, &m->ffn);
	else if (key_is(m, k, kn, "attention.sliding_window_pattern")) {
		/* A number n (every n-th layer attends to everything) or one
		 * flag per layer (true: sliding). */
		if (t == T_ARRAY)
			read_layered(c, &m->swa);
		else {
			v = as_uint(c, t, &ok);
			if (ok)
				m->swa_every = v;
		}
	} else if ((u = plain_key(m, k, kn))) {
		v = as_uint(c, t, &ok);
		if (ok)
			*u = v;
	} else {
		skip_value(c, t, 0);
	}
}

/* ---- the tensors ----------------------------------------------------------
 */

struct tensors {
	uint64_t params[NTYPES], bytes[NTYPES];
	uint64_t total_params, block_bytes, embd_params, exps_params;
	uint64_t moe_layers; /* layers with a ffn_down_exps tensor */
	int have_output, have_embd;
	uint64_t vocab; /* rows of token_embd */
};

static int has_prefix(const char *s, size_t n, const char *p)
{
	size_t pl = strlen(p);

	return n >= pl && !memcmp(s, p, pl);
}

static int contains(const char *s, size_t n, const char *needle)
{
	size_t nl = strlen(needle), i;

	for (i = 0; i + nl <= n; i++)
		if (!memcmp(s + i, needle, nl))
			return 1;
	return 0;
}

static void tensor_info(struct cur *c, struct tensors *ts)
{
	size_t nn;
	const char *name = str(c, &nn, "tensor name");
	uint32_t nd = (uint32_t)get(c, 4, "tensor dimensions"), t, k;
	uint64_t dims[MAX_DIMS], elems = 1;
	unsigned bb, be;
	__uint128_t x;

	if (c->bad)
		return;
	if (nd > MAX_DIMS) {
		bad(c, "tensor '%.*s' has %" PRIu32 " dimensions (at most %d)",
		    (int)(nn < 64 ? nn : 64), name, nd, MAX_DIMS);
		return;
	}
	for (k = 0; k < nd; k++) {
		dims[k] = get(c, 8, "tensor dimension");
		x = (__uint128_t)elems * dims[k];
		if (x > INT64_MAX) {
			bad(c, "tensor '%.*s' has more than 2^63 elements",
			    (int)(nn < 64 ? nn : 64), name);
			return;
		}
		elems = (uint64_t)x;
	}
	t = (uint32_t)get(c, 4, "tensor type");
	get(c, 8, "tensor offset");
	if (c->bad)
		return;
	if (!vrt_gguf_type(t, &bb, &be)) {
		bad(c, "tensor '%.*s' has unknown ggml type %" PRIu32,
		    (int)(nn < 64 ? nn : 64), name, t);
		return;
	}
	if (nd && dims[0] % be) {
		bad(c,
		    "tensor '%.*s': %" PRIu64 " elements per row are not "
		    "whole blocks of %u",
		    (int)(nn < 64 ? nn : 64), name, dims[0], be);
		return;
	}
	ts->params[t] += elems;
	ts->bytes[t] += elems / be * bb;
	ts->total_params += elems;
	if (has_prefix(name, nn, "blk.")) {
		ts->block_bytes += elems / be * bb;
		if (contains(name, nn, "_exps."))
			ts->exps_params += elems;
		if (contains(name, nn, "ffn_down_exps."))
			ts->moe_layers++;
	} else if (nn == strlen("token_embd.weight") &&
	           has_prefix(name, nn, "token_embd.weight")) {
		ts->have_embd = 1;
		ts->embd_params += elems;
		if (nd == 2)
			ts->vocab = dims[1];
	} else if (nn == strlen("output.weight") &&
	           has_prefix(name, nn, "output.weight")) {
		ts->have_output = 1;
	}
}

/* ---- the description -------------------------------------------------------
 */

static uint64_t at(const struct layered *l, uint64_t i)
{
	return l->each ? (i < l->n ? l->each[i] : 0) : l->one;
}

/* Layers by (kind, KV heads): a group for each run of equal layers. */
struct lay {
	int kind;
	uint64_t kv;
};

static int add_layer_group(struct vrt_model *m, const struct meta *x,
                           struct lay l, uint64_t count, uint64_t kdim,
                           uint64_t vdim)
{
	struct vrt_model_group *g;
	size_t i;

	for (i = 0; i < m->ngroups; i++) {
		g = &m->group[i];
		if (g->kind == l.kind && g->kv_heads == l.kv) {
			g->layers += count;
			return 0;
		}
	}
	g = vrt_model_add_group(m, l.kind,
	                        l.kind == VRT_MODEL_RECURRENT ? "mamba"
	                        : l.kind == VRT_MODEL_MLA     ? "mla"
	                        : l.kind == VRT_MODEL_SLIDING ? "sliding"
	                        : l.kv == 1                   ? "mqa"
	                        : l.kv == at(&x->heads, 0)    ? "mha"
	                                                      : "gqa",
	                        count);
	if (!g)
		return -1;
	g->kv_heads = l.kind == VRT_MODEL_RECURRENT ? 0 : l.kv;
	g->k_dim = kdim;
	g->v_dim = vdim;
	if (l.kind == VRT_MODEL_SLIDING)
		g->window = x->window;
	if (l.kind == VRT_MODEL_RECURRENT) {
		/* Mamba: a conv window of (kernel - 1) steps over the inner
		 * channels (and, Mamba 2, the B and C groups), the SSM state
		 * inner x state. */
		uint64_t conv_ch =
		        x->ssm_inner +
		        (x->ssm_groups ? 2 * x->ssm_groups * x->ssm_state : 0);
		g->conv_elems =
		        (x->conv_kernel ? x->conv_kernel - 1 : 0) * conv_ch;
		g->ssm_elems = x->ssm_inner * x->ssm_state;
		snprintf(g->label, sizeof(g->label), "%s",
		         x->ssm_groups ? "mamba2" : "mamba");
	}
	return 0;
}

/* Which layers slide: the per-layer flags, else every n-th layer full
 * (n from the file, else llama.cpp's rule for the architecture), else
 * none (an upper bound, noted). */
static int sliding_layer(const struct meta *x, uint64_t i, uint64_t every)
{
	if (!x->window)
		return 0;
	if (x->swa.have && x->swa.each)
		return at(&x->swa, i) != 0;
	if (every)
		return (i + 1) % every != 0;
	return 0;
}

static uint64_t swa_rule(const struct meta *x)
{
	if (x->swa_every)
		return x->swa_every;
	/* llama.cpp's hparams for these architectures when the file says
	 * no pattern: Gemma 2 alternates, Gemma 3 keeps one global layer
	 * in six, Cohere 2 one in four. */
	if (!strcmp(x->arch, "gemma2"))
		return 2;
	if (!strcmp(x->arch, "gemma3"))
		return 6;
	if (!strcmp(x->arch, "cohere2"))
		return 4;
	return 0;
}

static void add_weights(struct vrt_model *m, const struct tensors *ts)
{
	size_t order[NTYPES], n = 0, i, j;
	uint64_t rest_p = 0, rest_b = 0;

	for (i = 0; i < NTYPES; i++)
		if (ts->params[i])
			order[n++] = i;
	/* Largest bytes first. */
	for (i = 1; i < n; i++)
		for (j = i;
		     j > 0 && ts->bytes[order[j - 1]] < ts->bytes[order[j]];
		     j--) {
			size_t tmp = order[j];
			order[j] = order[j - 1];
			order[j - 1] = tmp;
		}
	for (i = 0; i < n; i++) {
		struct vrt_model_weights *w;
		if (i + 1 >= VRT_MODEL_MAX_WEIGHTS &&
		    n > VRT_MODEL_MAX_WEIGHTS) {
			rest_p += ts->params[order[i]];
			rest_b += ts->bytes[order[i]];
			continue;
		}
		w = &m->weights[m->nweights++];
		snprintf(w->what, sizeof(w->what), "%s", types[order[i]].name);
		w->params = ts->params[order[i]];
		w->bytes = ts->bytes[order[i]];
	}
	if (rest_p) {
		struct vrt_model_weights *w = &m->weights[m->nweights++];
		snprintf(w->what, sizeof(w->what), "other types");
		w->params = rest_p;
		w->bytes = rest_b;
	}
}

/* The type most weight bytes are stored in, as a quant name ("Q4_K"). */
static void guess_quant(struct vrt_model *m, const struct tensors *ts)
{
	size_t i, best = 0;
	char *p;

	for (i = 0; i < NTYPES; i++)
		if (ts->bytes[i] > ts->bytes[best])
			best = i;
	snprintf(m->gguf_type, sizeof(m->gguf_type), "%s", types[best].name);
	for (p = m->gguf_type; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	vrt_model_note(m,
	               "general.file_type is not given: %s (the type most "
	               "weight bytes are stored in)",
	               m->gguf_type);
}

static int describe(struct vrt_model *m, const struct meta *x,
                    const struct tensors *ts, char *msg, size_t msgsz)
{
	uint64_t i, kdim, vdim, every = swa_rule(x), mla_k = 0;
	const char *ft;

	if (!x->narch) {
		snprintf(msg, msgsz, "general.architecture is missing");
		return -1;
	}
	if (!x->blocks || x->blocks > MAX_LAYERS) {
		snprintf(msg, msgsz,
		         "%s.block_count is missing or not in 1..%d", x->arch,
		         MAX_LAYERS);
		return -1;
	}
	snprintf(m->source, sizeof(m->source), "gguf");
	snprintf(m->model_type, sizeof(m->model_type), "%s", x->arch);
	snprintf(m->architecture, sizeof(m->architecture), "%s", x->name);
	m->layers = x->blocks;
	m->hidden = x->embd;
	m->heads = x->heads.one;
	m->kv_heads = x->kv_heads.have ? x->kv_heads.one : m->heads;
	m->context_len = x->ctx;
	m->intermediate = x->ffn.one;
	m->vocab = x->vocab ? x->vocab : ts->vocab;
	m->experts = x->experts;
	m->experts_per_token = x->experts_used;
	m->shared_experts = x->experts_shared;
	m->moe_layers = ts->moe_layers;
	kdim = x->key_len ? x->key_len : m->heads ? x->embd / m->heads : 0;
	vdim = x->value_len ? x->value_len : kdim;
	m->head_dim = kdim;
	if (x->lora_rank)
		mla_k = x->lora_rank + x->rope_dims;
	for (i = 0; i < x->blocks; i++) {
		uint64_t kv = x->kv_heads.have ? at(&x->kv_heads, i)
		                               : at(&x->heads, i);
		struct lay l = {VRT_MODEL_FULL, kv};
		int rc;
		if (!kv && (x->ssm_inner || x->kv_heads.have))
			l.kind = VRT_MODEL_RECURRENT;
		else if (mla_k)
			l = (struct lay){VRT_MODEL_MLA, 1};
		else if (sliding_layer(x, i, every))
			l.kind = VRT_MODEL_SLIDING;
		if (l.kind == VRT_MODEL_FULL && !kv) {
			snprintf(msg, msgsz,
			         "%s.attention.head_count is missing or 0",
			         x->arch);
			return -1;
		}
		if (l.kind == VRT_MODEL_RECURRENT && !x->ssm_inner)
			continue; /* no attention, no state: nothing kept */
		rc = add_layer_group(m, x, l, 1,
		                     l.kind == VRT_MODEL_MLA ? mla_k : kdim,
		                     l.kind == VRT_MODEL_MLA ? 0 : vdim);
		if (rc) {
			snprintf(msg, msgsz,
			         "more than %d kinds of layers (by KV heads)",
			         VRT_MODEL_MAX_GROUPS);
			return -1;
		}
	}
	if (x->window && !x->swa.each && !every)
		vrt_model_note(m,
		               "%s.attention.sliding_window is %" PRIu64
		               " but no layer pattern is given: every layer is "
		               "counted as full attention (an upper bound)",
		               x->arch, x->window);
	/* llama.cpp keeps recurrent states in f32. */
	m->state_conv_bytes = 4;
	m->state_ssm_bytes = 4;
	/* llama.cpp's KV cache is f16 unless -ctk/-ctv say otherwise,
	 * whatever the weights are stored in. */
	vrt_model_dtype("f16", &m->dtype);
	vrt_model_set_kv_dtype(m, "f16", NULL, "llama.cpp default");
	m->params_total = ts->total_params;
	m->params_embedding = ts->embd_params;
	m->params_active = ts->total_params;
	if (x->experts && x->experts_used && x->experts_used < x->experts)
		m->params_active -= ts->exps_params - ts->exps_params /
		                                              x->experts *
		                                              x->experts_used;
	m->tied = ts->have_embd && !ts->have_output;
	m->block_weight_bytes = ts->block_bytes;
	add_weights(m, ts);
	ft = x->have_ftype ? vrt_gguf_file_type_name(x->ftype) : NULL;
	if (ft)
		snprintf(m->gguf_type, sizeof(m->gguf_type), "%s", ft);
	else if (ts->total_params)
		guess_quant(m, ts);
	if (m->gguf_type[0])
		snprintf(m->quant, sizeof(m->quant), "gguf %s", m->gguf_type);
	if (!ts->total_params)
		vrt_model_note(m, "the file lists no tensors: weights unknown");
	vrt_model_finish(m);
	return 0;
}

/* ---- the file -------------------------------------------------------------
 */

int vrt_gguf_is(const uint8_t *buf, size_t len)
{
	return len >= 4 && !memcmp(buf, "GGUF", 4);
}

int vrt_gguf_parse(struct vrt_model *m, const uint8_t *buf, size_t len,
                   int truncated, char *msg, size_t msgsz)
{
	struct cur c = {buf, len, 0, 0, ""};
	struct meta *x = calloc(1, sizeof(*x));
	struct tensors *ts = calloc(1, sizeof(*ts));
	uint64_t version, ntensors, nkv, i;
	size_t kv_start;
	int pass, rc = -1;

	memset(m, 0, sizeof(*m));
	if (!x || !ts) {
		snprintf(msg, msgsz, "out of memory");
		goto out;
	}
	if (!vrt_gguf_is(buf, len)) {
		snprintf(msg, msgsz, "not a GGUF file (no \"GGUF\" magic)");
		goto out;
	}
	c.off = 4;
	version = get(&c, 4, "version");
	if (!c.bad && (version < 2 || version > 3)) {
		snprintf(msg, msgsz,
		         "GGUF version %" PRIu64 " is not supported (2 or 3)",
		         version);
		goto out;
	}
	ntensors = get(&c, 8, "tensor count");
	nkv = get(&c, 8, "key-value count");
	/* A pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 +
	 * 8: larger counts cannot be in the file. */
	if (!c.bad && !truncated &&
	    (nkv > left(&c) / 13 || ntensors > left(&c) / 24))
		bad(&c,
		    "%" PRIu64 " keys and %" PRIu64 " tensors cannot fit "
		    "in %zu bytes",
		    nkv, ntensors, len);
	kv_start = c.off;
	for (pass = 0; pass < 2 && !c.bad; pass++) {
		c.off = kv_start;
		for (i = 0; i < nkv && !c.bad; i++)
			kv_pair(&c, x, pass);
	}
	for (i = 0; i < ntensors && !c.bad; i++)
		tensor_info(&c, ts);
	if (c.bad) {
		if (truncated && strstr(c.why, "past the end"))
			snprintf(msg, msgsz,
			         "the metadata is larger than the %u MiB read: "
			         "%s",
			         VRT_GGUF_MAX_HEAD >> 20, c.why);
		else
			snprintf(msg, msgsz, "%s", c.why);
		goto out;
	}
	rc = describe(m, x, ts, msg, msgsz);
out:
	if (x) {
		free(x->heads.each);
		free(x->kv_heads.each);
		free(x->ffn.each);
		free(x->swa.each);
	}
	free(x);
	free(ts);
	return rc;
}
