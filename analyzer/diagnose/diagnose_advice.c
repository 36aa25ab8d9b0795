/*
 * diagnose_advice.c — the levers: each change a verdict can offer (the
 * memory fraction, a context or batch scaled to fit, capped sequences,
 * more cards, a quantized KV cache, fewer GPU layers, lower-precision
 * weights, CPU offload), sized from the run's numbers so the margin stays
 * spare, in the engine's own flags, with its cost and rank. Which levers a
 * verdict pulls is the verdict's (diagnose_verdict.c). Pure,
 * single-threaded: writes only the advice list of struct ctx.
 */
#include "diagnose_internal.h"
#include "model/gguf.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define GIB (1ull << 30)

/* ---- advice ---------------------------------------------------------------
 *
 * Each verdict offers the changes that would have fitted the run, every
 * number sized so the card keeps the margin (--margin: 5% of its
 * capacity by default) free at the peak, the definition `plan` judges a
 * row by (vrt_diag_fits_margin), and each with its cost measured on the
 * run: the share
 * of the KV cache, the context, the sequences or the batch it gives up.
 * They are printed cheapest first: by that share, then the changes whose
 * cost is of another kind (speed, quality, hardware) at fixed ranks.
 */

/* Rounds a fraction (x1000) down to a multiple of 0.01, at least 0.05. */
uint64_t vrt_diagnose_advice_util_down(uint64_t milli)
{
	milli -= milli % 10;
	return milli < 50 ? 50 : milli;
}

/* Rounds a token count down to a multiple of 256 (1024 above 8192). */
static uint64_t tokens_down(uint64_t n)
{
	uint64_t q = n > 8192 ? 1024 : 256;
	return n >= q ? n - n % q : n;
}

/* v x (have - the margin) / need: the largest value whose memory fits
 * have with the card's margin still free, when memory grows with v (need
 * bytes at v). Without a capacity known, the margin is need's share. */
uint64_t vrt_diagnose_advice_fit(const struct ctx *c, uint64_t v, uint64_t have,
                                 uint64_t need)
{
	double x;

	if (!need)
		return v;
	if (c->total)
		x = (double)v *
		    (double)vrt_diagnose_sub0(have, vrt_diagnose_margin_bytes(c)) /
		    (double)need;
	else
		x = (double)v * (double)have / (double)need *
		    (1.0 - (double)c->d->margin_pct / 100.0);
	return x < 0 ? 0 : (uint64_t)x;
}

/* The bytes to free so need fits where have is left with the card's
 * margin still free. */
uint64_t vrt_diagnose_advice_to_free(const struct ctx *c, uint64_t need,
                                     uint64_t have)
{
	uint64_t want = need + (c->total ? vrt_diagnose_margin_bytes(c)
	                                 : need * c->d->margin_pct / 100);
	return vrt_diagnose_sub0(want, have);
}

/* A setting an action names, kept as a number for `plan`. */
static void suggest(struct ctx *c, int field, uint64_t value)
{
	struct vrt_diagnosis *d = c->d;

	if (d->nsuggest < sizeof(d->suggest) / sizeof(d->suggest[0])) {
		d->suggest[d->nsuggest].field = field;
		d->suggest[d->nsuggest++].value = value;
	}
}
/* The KV cache on the failing device (the whole run's when none). */
uint64_t vrt_diagnose_advice_kv_bytes(const struct ctx *c)
{
	uint64_t kv = 0;
	size_t k;

	if (c->fd)
		return c->fd->kv_bytes ? c->fd->kv_bytes : c->x.kv;
	for (k = 0; k < c->d->ndevices; k++)
		kv += c->d->devices[k].kv_bytes;
	return kv;
}

/* " (about N tokens)": bytes of KV cache in tokens, with a model. */
static const char *kv_tokens(struct ctx *c, uint64_t bytes, char *buf,
                             size_t n)
{
	const struct vrt_model_arith *m = &c->d->model;
	uint64_t per = m->kv_bytes_per_token_at_context
	                       ? m->kv_bytes_per_token_at_context
	                       : m->kv_bytes_per_token;

	buf[0] = '\0';
	if (m->have && per)
		snprintf(buf, n, ", about %" PRIu64 " tokens", bytes / per);
	return buf;
}

/* The fraction the engine runs at: its flag, else its default (vLLM 0.9,
 * TGI 1.0); 0 unknown. */
uint64_t vrt_diagnose_advice_fraction_now(const struct ctx *c, int *is_default)
{
	*is_default = 0;
	if (c->d->flags.mem_util_milli)
		return c->d->flags.mem_util_milli;
	*is_default = 1;
	if (c->engine == VRT_ENGINE_VLLM)
		return 900;
	if (c->engine == VRT_ENGINE_TGI)
		return 1000;
	return 0;
}

/* Frees free_b by lowering the engine's memory fraction (the reserve it
 * sizes, KV cache mostly, gives it up). why: what the bytes are for. */
void vrt_diagnose_advice_fraction(struct ctx *c, uint64_t free_b,
                                  const char *why)
{
	const char *flag = vrt_diagnose_setting(c, VRT_ENGINE_MEM_FRACTION);
	uint64_t kv = vrt_diagnose_advice_kv_bytes(c), cut, now, nu,
	         base = c->total;
	int dflt;
	struct advice *a;
	char tok[64];

	if (!flag || !c->total || !free_b)
		return;
	/* TensorRT-LLM's fraction is of the memory free after the weights,
	 * the others' of the card. */
	if (c->engine == VRT_ENGINE_TRTLLM)
		base = vrt_diagnose_sub0(
		        c->total,
		        c->other + (c->fd ? c->fd->weights_bytes : 0));
	if (!base)
		return;
	now = vrt_diagnose_advice_fraction_now(c, &dflt);
	cut = (free_b * 1000 + base - 1) / base;
	/* A lever that cannot make the room is no advice: the whole KV
	 * reserve is less than what is missing, or the fraction would go to
	 * nothing. */
	if ((kv && free_b > kv) || (now && cut >= now))
		return;
	a = vrt_diagnose_advise(c, kv ? (double)free_b / (double)kv
	                              : RANK_UNKNOWN);
	if (now > cut &&
	    (nu = vrt_diagnose_advice_util_down(now - cut)) < now) {
		free_b = (now - nu) * base / 1000;
		suggest(c, VRT_ENGINE_MEM_FRACTION, nu);
		ACT(a,
		    "%sshrink the KV reserve: %s %.2f (was %.2f%s): frees %s "
		    "%s, %s",
		    vrt_diagnose_engine_label(c->engine), flag,
		    (double)nu / 1000.0, (double)now / 1000.0,
		    dflt ? ", the default" : "", SZ(free_b), why,
		    vrt_diagnose_margin_words(c));
	} else {
		/* In whole hundredths, as the flag is written. */
		cut = (cut + 9) / 10 * 10;
		free_b = cut * base / 1000;
		ACT(a,
		    "%sshrink the KV reserve: lower %s by %.2f: frees %s %s, "
		    "%s",
		    vrt_diagnose_engine_label(c->engine), flag,
		    (double)cut / 1000.0, SZ(free_b), why,
		    vrt_diagnose_margin_words(c));
	}
	if (kv)
		COST(a, "gives up %s of the %s KV cache (%" PRIu64 "%%%s): "
		        "fewer tokens cached at once, more preemption under "
		        "load",
		     SZ(free_b > kv ? kv : free_b), SZ(kv),
		     (free_b > kv ? kv : free_b) * 100 / kv,
		     kv_tokens(c, free_b > kv ? kv : free_b, tok, sizeof(tok)));
	else
		COST(a, "a smaller reserve holds fewer tokens at once (more "
		        "preemption under load)");
}

/* Rounds a context or batch size down the way the engine takes it
 * (llama.cpp pads its context to 256 tokens). */
static uint64_t round_tokens(const struct ctx *c, int field, uint64_t n)
{
	if (field == VRT_ENGINE_CONCURRENCY || field == VRT_ENGINE_GPU_LAYERS)
		return n;
	if (field == VRT_ENGINE_CONTEXT && (c->engine == VRT_ENGINE_LLAMACPP ||
	                                    c->engine == VRT_ENGINE_OLLAMA))
		return n >= 256 ? n - n % 256 : n;
	if (n < 256)
		return n >= 32 ? n - n % 32 : n;
	return tokens_down(n);
}

/* A setting whose memory grows in proportion (a context, tokens per
 * batch): v scaled so need fits in have with the margin. what: the verb
 * ("lower the context"); for: what the memory is ("one request's
 * activations"). Returns 1 when it offered one. */
int vrt_diagnose_advice_scale(struct ctx *c, int field, uint64_t v, int dflt,
                              uint64_t have, uint64_t need, const char *what,
                              const char *mem)
{
	struct advice *a;
	char b[96];
	uint64_t nv;
	double share;

	if (!v || !need || !vrt_diagnose_setting(c, field))
		return 0;
	nv = round_tokens(c, field, vrt_diagnose_advice_fit(c, v, have, need));
	if (!nv || nv >= v)
		return 0;
	/* a context the failing prompt does not fit in rejects it */
	if (field == VRT_ENGINE_CONTEXT && c->min_context &&
	    nv < c->min_context)
		return 0;
	suggest(c, field, nv);
	share = 1.0 - (double)nv / (double)v;
	/* Smaller batches cost prefill speed, not capacity: half as dear as
	 * the share of a context or of the sequences. */
	if (field == VRT_ENGINE_BATCH_TOKENS || field == VRT_ENGINE_UBATCH)
		share /= 2;
	a = vrt_diagnose_advise(c, share);
	ACT(a,
	    "%s%s: %s (was %" PRIu64 "%s): %s grow with it, %s at %" PRIu64
	    " where %s is left; %s%s",
	    vrt_diagnose_engine_label(c->engine), what,
	    vrt_diagnose_set_to(b, sizeof(b), c, field, nv), v,
	    dflt ? ", the default" : "", mem, SZ(need), v, SZ(have),
	    vrt_diagnose_margin_words(c),
	    field == VRT_ENGINE_UBATCH ? " (-b, the logical batch, may stay: "
	                                 "it is split into -ub steps)"
	                               : "");
	switch (field) {
	case VRT_ENGINE_CONTEXT:
		COST(a, "prompt + output longer than %" PRIu64 " tokens are "
		        "rejected: %" PRIu64 "%% of the context given up",
		     nv, (v - nv) * 100 / v);
		break;
	case VRT_ENGINE_CONCURRENCY:
		COST(a,
		     "at most %" PRIu64 " sequences share a step (was %" PRIu64
		     "): lower throughput under load",
		     nv, v);
		break;
	default:
		COST(a, "a step takes at most %" PRIu64 " tokens (was %" PRIu64
		        "): long prompts prefill in more steps, lower prefill "
		        "throughput",
		     nv, v);
	}
	return 1;
}

/* The tokens-per-step setting (vLLM --max-num-batched-tokens, SGLang
 * --chunked-prefill-size, TGI --max-batch-prefill-tokens, llama.cpp
 * -ub): scaled when the command line gives it (llama.cpp's default 512
 * otherwise), else as a share of the value the engine runs with (its
 * log says which). */
void vrt_diagnose_advice_step_tokens(struct ctx *c, uint64_t have,
                                     uint64_t need, const char *mem)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	int field = vrt_diagnose_setting(c, VRT_ENGINE_UBATCH)
	                    ? VRT_ENGINE_UBATCH
	                    : VRT_ENGINE_BATCH_TOKENS;
	uint64_t v = field == VRT_ENGINE_UBATCH ? f->ubatch : f->batch_tokens;
	uint64_t pct;
	int dflt = 0;
	struct advice *a;

	if (!vrt_diagnose_setting(c, field) || !need || have >= need)
		return;
	if (!v && c->engine == VRT_ENGINE_LLAMACPP) {
		v = 512; /* llama.cpp's default -ub */
		dflt = 1;
	}
	if (v) {
		vrt_diagnose_advice_scale(c, field, v, dflt, have, need,
		                          "fewer tokens per step", mem);
		return;
	}
	pct = vrt_diagnose_advice_fit(c, 100, have, need);
	/* "about 3% of a value the run does not show" is no setting to
	 * type: below a tenth the other levers carry it */
	if (pct < 10)
		return;
	a = vrt_diagnose_advise(c, (1.0 - (double)pct / 100.0) / 2);
	ACT(a,
	    "%sfewer tokens per step: %s at about %" PRIu64 "%% of the value "
	    "the engine runs with (its log says it): %s grow with it, %s "
	    "where %s is left; %s",
	    vrt_diagnose_engine_label(c->engine),
	    vrt_diagnose_setting(c, field), pct, mem, SZ(need), SZ(have),
	    vrt_diagnose_margin_words(c));
	COST(a, "long prompts prefill in more steps: lower prefill "
	        "throughput");
}

/* The sequences the KV cache holds at the engine's context, from the
 * model arithmetic; 0 unknown. */
static uint64_t kv_sequences(const struct ctx *c)
{
	const struct vrt_model_arith *m = &c->d->model;

	if (!m->have || !m->seq_bytes_at_context)
		return 0;
	return m->kv_reserve_bytes / m->seq_bytes_at_context;
}

/* Caps the sequences in flight at n (they fit with the margin). */
void vrt_diagnose_advice_seqs(struct ctx *c, uint64_t n, uint32_t inflight)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	uint64_t seqs = kv_sequences(c), was = f->max_num_seqs;
	uint64_t base = inflight > was && was ? was : inflight;
	struct advice *a;
	char b[96], held[128] = "";
	int short_of_margin = !n;

	if (!vrt_diagnose_setting(c, VRT_ENGINE_CONCURRENCY))
		return;
	if (!n)
		n = 1; /* the fewest there is, said as short of the margin */
	if (was && n >= was)
		return; /* the cap it has already holds no more than that */
	suggest(c, VRT_ENGINE_CONCURRENCY, n);
	a = vrt_diagnose_advise(c, base > n ? 1.0 - (double)n / (double)base
	                                    : 0.0);
	if (was)
		snprintf(held, sizeof(held), " (was %" PRIu64 ")", was);
	if (short_of_margin)
		ACT(a,
		    "%scap concurrent sequences: %s%s, the fewest: even one "
		    "leaves less than the %d%% margin (%s) free, so pair it "
		    "with a smaller reserve%s",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_set_to(b, sizeof(b), c,
		                        VRT_ENGINE_CONCURRENCY, n),
		    held, vrt_diagnose_margin_pct(c),
		    SZ(vrt_diagnose_margin_bytes(c)),
		    was ? "" : "; or put a limit in front of the server");
	else
		ACT(a,
		    "%scap concurrent sequences: %s%s: %" PRIu64 " fit%s in "
		    "what the reserves leave, %s%s",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_set_to(b, sizeof(b), c,
		                        VRT_ENGINE_CONCURRENCY, n),
		    held, n, n == 1 ? "s" : "", vrt_diagnose_margin_words(c),
		    was ? "" : "; or put a limit in front of the server");
	if (seqs)
		COST(a, "at most %" PRIu64 " sequence%s at once where %" PRIu32
		        " %s in flight, while the KV cache holds %" PRIu64
		        " sequences of %" PRIu64 " tokens: the cap, not the "
		        "cache, limits throughput",
		     n, n == 1 ? "" : "s", inflight,
		     inflight == 1 ? "was" : "were", seqs,
		     c->d->model.context_len);
	else
		COST(a,
		     "at most %" PRIu64 " sequence%s at once where %" PRIu32
		     " %s in flight: requests past the cap wait in the queue "
		     "(lower throughput)",
		     n, n == 1 ? "" : "s", inflight,
		     inflight == 1 ? "was" : "were");
}

/* More cards for the engine: tensor parallelism, or the devices an
 * engine that spreads over every visible GPU sees. */
void vrt_diagnose_advice_cards(struct ctx *c, uint64_t n, const char *why)
{
	const char *tp = vrt_diagnose_setting(c, VRT_ENGINE_PARALLEL);
	struct advice *a = vrt_diagnose_advise(c, RANK_HARDWARE);

	/* Never the parallel size the run already had. */
	if (c->d->flags.tp && n <= c->d->flags.tp)
		n = c->d->flags.tp * 2;
	if (tp)
		ACT(a, "%sadd cards: %s %" PRIu64 " %s",
		    vrt_diagnose_engine_label(c->engine), tp, n, why);
	else
		ACT(a,
		    "%sadd cards: make %" PRIu64 " GPUs visible (%s); the "
		    "layers are split over them (-sm layer, -ts to weigh "
		    "them) %s",
		    vrt_diagnose_engine_label(c->engine), n,
		    vrt_diagnose_visible_devices(c->t, c->d->device), why);
	COST(a, "%" PRIu64 " cards instead of one cost money%s", n,
	     tp ? "; tensor parallelism adds communication between them" : "");
}

/* The KV cache types llama.cpp runs with (-ctk / -ctv), bytes per
 * element x 32 (q8_0: 34, f16: 64). */
static unsigned kv_bytes32(const char *name)
{
	struct vrt_model_dtype d;

	if (!name || !name[0] || vrt_model_dtype(name, &d))
		return 64; /* llama.cpp's default f16 */
	return d.block_bytes * 32 / (d.block_elems ? d.block_elems : 1);
}

/* llama.cpp: a quantized KV cache frees part of the reserve; offered when
 * it frees need_free (q8_0, else q4_0), or the most it can. */
void vrt_diagnose_advice_kv_quant(struct ctx *c, uint64_t need_free)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	unsigned cur = (kv_bytes32(f->cache_k) + kv_bytes32(f->cache_v)) / 2;
	uint64_t kv = vrt_diagnose_advice_kv_bytes(c), saved8, saved4;
	struct advice *a;
	const char *type;
	uint64_t saved;

	if (c->engine != VRT_ENGINE_LLAMACPP || !kv || cur <= 34)
		return;
	saved8 = kv - kv * 34 / cur;
	saved4 = kv - kv * 18 / cur;
	type = saved8 >= need_free || saved4 <= saved8 ? "q8_0" : "q4_0";
	saved = type[1] == '8' ? saved8 : saved4;
	/* A q8_0 cache costs less than a fifth of anything: little
	 * quality, no capacity. */
	a = vrt_diagnose_advise(c, type[1] == '8' ? 0.15 : 0.5);
	if (f->flash_attn)
		ACT(a, "llama.cpp: quantize the KV cache: -ctk %s -ctv %s: the "
		       "%s cache takes %s, %s less%s (flash attention is "
		       "already on, as a quantized V cache needs)",
		    type, type, SZ(kv), SZ(kv - saved), SZ(saved),
		    saved >= need_free ? "" : ", not all that is needed");
	else
		ACT(a, "llama.cpp: quantize the KV cache: -ctk %s -ctv %s -fa "
		       "on: the %s cache takes %s, %s less%s (a quantized V "
		       "cache needs flash attention)",
		    type, type, SZ(kv), SZ(kv - saved), SZ(saved),
		    saved >= need_free ? "" : ", not all that is needed");
	COST(a, "%s", type[1] == '8'
	                      ? "a q8_0 KV cache costs little quality; flash "
	                        "attention must run on the GPU"
	                      : "a q4_0 KV cache costs some quality (q8_0 "
	                        "less); flash attention must run on the GPU");
}

/* llama.cpp's layer offload: the most layers whose weights and KV cache
 * fit avail with the margin, from the model description. Returns 1 when
 * it offered a number. */
int vrt_diagnose_advice_ngl(struct ctx *c, uint64_t avail, int generic)
{
	const struct vrt_diagnosis *d = c->d;
	const struct vrt_model *m = d->model.have ? &d->model.desc : NULL;
	const char *flag = vrt_diagnose_setting(c, VRT_ENGINE_GPU_LAYERS);
	uint64_t layers, w, kvl, n, ctx, now;
	struct advice *a;
	char b[96];

	if (!flag)
		return 0;
	if ((!m || !m->layers || !m->weight_bytes) && d->flags.have_ngl &&
	    d->flags.ngl > 1 && d->flags.ngl < 99 && c->x.weights > avail) {
		/* A layer count given on the command line (99 and above
		 * stand for every layer): the weights it loaded, or the one
		 * buffer llama.cpp asks for them, scale with it. */
		n = vrt_diagnose_advice_fit(c, d->flags.ngl, avail,
		                            c->x.weights);
		if (!n || n >= d->flags.ngl)
			return 0;
		a = vrt_diagnose_advise(c, (double)(d->flags.ngl - n) /
		                                   (double)d->flags.ngl);
		ACT(a,
		    "%soffload fewer layers: %s (was %" PRIu64 "): the "
		    "layers asked for take %s of weights where %s is left; "
		    "%s",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_set_to(b, sizeof(b), c, VRT_ENGINE_GPU_LAYERS,
		                        n),
		    d->flags.ngl, SZ(c->x.weights), SZ(avail),
		    vrt_diagnose_margin_words(c));
		COST(a, "%" PRIu64 " more layers run on the CPU: generation "
		        "slows about in proportion",
		     d->flags.ngl - n);
		return 1;
	}
	if (!m || !m->layers || !m->weight_bytes) {
		if (!generic)
			return 0;
		a = vrt_diagnose_advise(c, RANK_UNKNOWN);
		ACT(a,
		    "%soffload fewer layers: %s below %s (--model-config "
		    "MODEL.gguf computes how many fit)",
		    vrt_diagnose_engine_label(c->engine), flag,
		    d->flags.have_ngl && d->flags.ngl < 999
		            ? "its value"
		            : "the layer count");
		COST(a, "the layers left on the CPU run slower");
		return 0;
	}
	layers = m->layers;
	now = d->flags.have_ngl && d->flags.ngl < layers ? d->flags.ngl
	                                                 : layers;
	w = (m->block_weight_bytes ? m->block_weight_bytes : m->weight_bytes) /
	    layers;
	/* What the run loaded says more than a description that does not
	 * match it: its layers weigh at least that much. */
	if (now && c->x.weights / now > w)
		w = c->x.weights / now;
	ctx = d->model.context_len ? d->model.context_len : m->context_len;
	kvl = d->model.kv_bytes_per_token * ctx / layers;
	/* The weights outside the repeating layers (output head) stay. */
	avail = vrt_diagnose_sub0(avail, m->block_weight_bytes
	                                         ? m->weight_bytes -
	                                                   m->block_weight_bytes
	                                         : 0);
	n = vrt_diagnose_advice_fit(c, 1, avail, w + kvl);
	if (n >= now)
		return 0; /* the layers are not what does not fit */
	a = vrt_diagnose_advise(c, now ? (double)(now - n) / (double)now : 1.0);
	ACT(a,
	    "%soffload fewer layers: %s (of %" PRIu64 " layers%s): each "
	    "takes %s of weights + %s of KV cache at %" PRIu64
	    " tokens, %s are left for them; %s",
	    vrt_diagnose_engine_label(c->engine),
	    vrt_diagnose_set_to(b, sizeof(b), c, VRT_ENGINE_GPU_LAYERS, n),
	    layers, d->flags.have_ngl ? "" : ", all by default", SZ(w), SZ(kvl),
	    ctx, SZ(avail), vrt_diagnose_margin_words(c));
	COST(a, "%" PRIu64 " of %" PRIu64 " layers run on the CPU: generation "
	        "slows about in proportion",
	     layers - n, layers);
	return 1;
}

/* Lower-precision weights: GGUF quantizations for llama.cpp and Ollama
 * (the largest that fits budget with the margin), fp8 or int4 for the
 * others. */
void vrt_diagnose_advice_quant(struct ctx *c, uint64_t budget)
{
	const struct vrt_model *m =
	        c->d->model.have ? &c->d->model.desc : NULL;
	struct advice *a;
	size_t nq, i;
	const struct vrt_gguf_quant *q = vrt_gguf_quants(&nq);
	double now_bpw, fit_bpw;
	uint64_t params;

	if (c->engine != VRT_ENGINE_LLAMACPP &&
	    c->engine != VRT_ENGINE_OLLAMA) {
		a = vrt_diagnose_advise(c, RANK_QUALITY);
		const char *flag =
		        c->engine == VRT_ENGINE_TGI ? "--quantize fp8"
		        : c->engine == VRT_ENGINE_VLLM ||
		                        c->engine == VRT_ENGINE_SGLANG
		                ? "--quantization fp8"
		                : "fp8";
		if (m && m->params_total)
			ACT(a,
			    "%sload lower-precision weights: %s (about %s: "
			    "%.1fB parameters at 1 byte) or an int4 AWQ/GPTQ "
			    "checkpoint (about %s)",
			    vrt_diagnose_engine_label(c->engine), flag,
			    SZ(m->params_total), (double)m->params_total / 1e9,
			    SZ(m->params_total * 53 / 100));
		else
			ACT(a,
			    "%sload lower-precision weights: %s (half the "
			    "bytes of bf16) or an int4 AWQ/GPTQ checkpoint "
			    "(about a quarter)",
			    vrt_diagnose_engine_label(c->engine), flag);
		COST(a, "lower-precision weights may cost quality (fp8 "
		        "little, int4 more)");
		return;
	}
	if (!m || !m->params_total) {
		a = vrt_diagnose_advise(c, RANK_QUALITY);
		ACT(a,
		    "%sa smaller GGUF quantization: Q8_0, Q6_K, Q5_K_M, "
		    "Q4_K_M take about 8.5, 6.6, 5.7 and 4.9 bits per weight "
		    "(--model-config MODEL.gguf tells which fits)",
		    vrt_diagnose_engine_label(c->engine));
		COST(a, "fewer bits per weight cost quality (Q4_K_M little, "
		        "below 4 bits noticeably)");
		return;
	}
	params = m->params_total;
	now_bpw = vrt_gguf_quant_bpw(m->gguf_type);
	if (!now_bpw)
		now_bpw = (double)m->weight_bytes * 8.0 / (double)params;
	fit_bpw = (double)vrt_diagnose_advice_fit(c, 1, budget, 1) * 8.0 /
	          (double)params;
	if (now_bpw <= fit_bpw)
		return; /* the weights as they are fit: not the lever */
	for (i = 0; i < nq; i++)
		if (q[i].bpw < now_bpw - 0.05 && q[i].bpw <= fit_bpw)
			break;
	a = vrt_diagnose_advise(c, RANK_QUALITY);
	if (i == nq) {
		ACT(a,
		    "%sa smaller GGUF quantization alone does not fit: even "
		    "%s (%.2f bits per weight) needs %s where %s is left",
		    vrt_diagnose_engine_label(c->engine), q[nq - 1].name,
		    q[nq - 1].bpw,
		    SZ((uint64_t)((double)params * q[nq - 1].bpw / 8.0)),
		    SZ(budget));
		COST(a, "offload layers or add GPUs as well");
		return;
	}
	if (m->gguf_type[0])
		ACT(a,
		    "%sa smaller GGUF quantization: %s (about %.2f bits per "
		    "weight: %s of weights instead of %s at %s), the "
		    "largest that fits the %s left %s",
		    vrt_diagnose_engine_label(c->engine), q[i].name, q[i].bpw,
		    SZ((uint64_t)((double)params * q[i].bpw / 8.0)),
		    SZ(m->weight_bytes), m->gguf_type, SZ(budget),
		    vrt_diagnose_margin_words(c));
	else
		ACT(a,
		    "%sa GGUF quantization: %s (about %.2f bits per weight: "
		    "%s of weights instead of %s), the largest that fits "
		    "the %s left %s",
		    vrt_diagnose_engine_label(c->engine), q[i].name, q[i].bpw,
		    SZ((uint64_t)((double)params * q[i].bpw / 8.0)),
		    SZ(m->weight_bytes), SZ(budget),
		    vrt_diagnose_margin_words(c));
	COST(a, "fewer bits per weight cost quality (%s)",
	     q[i].bpw >= 4.5 ? "little at this size"
	                     : "noticeable below about 4.5 bits");
}

/* vLLM and SGLang: keep part of the weights in host memory. */
void vrt_diagnose_advice_cpu_offload(struct ctx *c, uint64_t on_gpu)
{
	const struct vrt_model *m =
	        c->d->model.have ? &c->d->model.desc : NULL;
	uint64_t gib;
	struct advice *a;

	if ((c->engine != VRT_ENGINE_VLLM && c->engine != VRT_ENGINE_SGLANG) ||
	    !m || m->weight_bytes <= on_gpu)
		return;
	gib = (m->weight_bytes - on_gpu + GIB - 1) / GIB;
	a = vrt_diagnose_advise(c, RANK_OFFLOAD);
	ACT(a,
	    "%skeep %" PRIu64 " GiB of the weights in host memory: "
	    "--cpu-offload-gb %" PRIu64 " (the GPU keeps %s of %s)",
	    vrt_diagnose_engine_label(c->engine), gib, gib, SZ(on_gpu),
	    SZ(m->weight_bytes));
	COST(a, "every forward pass copies %" PRIu64 " GiB over PCIe: much "
	        "slower",
	     gib);
}
