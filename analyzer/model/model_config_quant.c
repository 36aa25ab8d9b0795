/*
 * model_config_quant.c — the config.json reader's weights
 * (model_config_cfg.h): the parameter buckets model_config.c counted,
 * stored as quantization_config says (AWQ, GPTQ, fp8, compressed-tensors,
 * bitsandbytes, mxfp4) with their scales and zero points, the rest at
 * the model's dtype. Pure and single-threaded.
 */
#include "model_config_cfg.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- quantization -------------------------------------------------------- */

/* Which buckets a quantization_config leaves in 16 bits: routers and
 * embeddings always, the head unless a method says otherwise, and what
 * modules_to_not_convert / ignore name. */
static void excluded_by(json_t *list, int *quant)
{
	size_t i;

	for (i = 0; json_is_array(list) && i < json_array_size(list); i++) {
		const char *s = json_string_value(json_array_get(list, i));
		if (!s)
			continue;
		if (strstr(s, "lm_head"))
			quant[B_HEAD] = 0;
		if (strstr(s, "embed"))
			quant[B_EMB] = 0;
		if (strstr(s, "self_attn") || strstr(s, "attention"))
			quant[B_ATTN] = 0;
		if (strstr(s, "shared_expert"))
			quant[B_SHARED] = 0;
		else if (strstr(s, "experts"))
			quant[B_EXPERT] = 0;
		if (strstr(s, "vision") || strstr(s, "visual"))
			quant[B_VISION] = 0;
		if (strstr(s, "mamba") || strstr(s, "linear_attn"))
			quant[B_RECUR] = 0;
	}
}

static void add_weights(struct vrt_model *m, const char *what, uint64_t params,
                        uint64_t bytes)
{
	struct vrt_model_weights *w;

	if (!params || m->nweights >= VRT_MODEL_MAX_WEIGHTS)
		return;
	w = &m->weights[m->nweights++];
	snprintf(w->what, sizeof(w->what), "%s", what);
	w->params = params;
	w->bytes = bytes;
}

struct qsum {
	uint64_t params, in_sum, out_sum, mats;
};

/* Bytes of the quantized linear layers q under the method of qc; the
 * storage type's name into what. */
static uint64_t quant_bytes(struct cfg *c, json_t *qc, const char *method,
                            const struct qsum *q, char *what, size_t n)
{
	json_t *x;
	uint64_t bits = 4, g = 128, per;
	int zero = 1;

	x = json_object_get(qc, "bits");
	if (json_is_integer(x) && json_integer_value(x) > 0)
		bits = (uint64_t)json_integer_value(x);
	x = json_object_get(qc, "group_size");
	if (json_is_integer(x))
		g = json_integer_value(x) > 0 ? (uint64_t)json_integer_value(x)
		                              : 0; /* -1: per output column */
	if (!strcmp(method, "awq")) {
		x = json_object_get(qc, "zero_point");
		zero = !x || json_is_true(x);
		snprintf(what, n, "int%" PRIu64 " awq g%" PRIu64, bits, g);
		/* qweight packed; fp16 scales and packed zeros per group of
		 * g inputs per output */
		per = g ? q->params / g : q->out_sum;
		return q->params * bits / 8 + per * 2 +
		       (zero ? per * bits / 8 : 0);
	}
	if (!strcmp(method, "gptq")) {
		if (g)
			snprintf(what, n, "int%" PRIu64 " gptq g%" PRIu64, bits,
			         g);
		else
			snprintf(what, n, "int%" PRIu64 " gptq per-channel",
			         bits);
		per = g ? q->params / g : q->out_sum;
		/* qweight, fp16 scales, packed qzeros, int32 g_idx per input */
		return q->params * bits / 8 + per * 2 + per * bits / 8 +
		       q->in_sum * 4;
	}
	if (!strcmp(method, "fp8")) {
		json_t *bs = json_object_get(qc, "weight_block_size");
		const char *act = json_string_value(
		        json_object_get(qc, "activation_scheme"));
		uint64_t scales;
		if (json_is_array(bs) && json_array_size(bs) == 2) {
			uint64_t a = (uint64_t)json_integer_value(
			                 json_array_get(bs, 0)),
			         b = (uint64_t)json_integer_value(
			                 json_array_get(bs, 1));
			snprintf(what, n, "fp8 block %" PRIu64 "x%" PRIu64, a,
			         b);
			/* an fp32 scale_inv per block (dims are multiples
			 * of the block in these checkpoints) */
			scales = a && b && a <= 65536 && b <= 65536
			                 ? q->params / (a * b) * 4
			                 : 0;
		} else {
			snprintf(what, n, "fp8 per-tensor");
			scales = q->mats * 4;
		}
		if (act && !strcmp(act, "static"))
			scales += q->mats * 4; /* input_scale */
		return q->params + scales;
	}
	if (!strcmp(method, "compressed-tensors")) {
		json_t *groups = json_object_get(qc, "config_groups"), *grp,
		       *wt;
		const char *key, *strategy, *type;
		uint64_t scales;
		int sym;
		bits = 8;
		strategy = "tensor";
		type = "int";
		sym = 1;
		json_object_foreach(groups, key, grp)
		{
			wt = json_object_get(grp, "weights");
			if (!json_is_object(wt))
				continue;
			x = json_object_get(wt, "num_bits");
			if (json_is_integer(x))
				bits = (uint64_t)json_integer_value(x);
			if (json_string_value(json_object_get(wt, "strategy")))
				strategy = json_string_value(
				        json_object_get(wt, "strategy"));
			if (json_string_value(json_object_get(wt, "type")))
				type = json_string_value(
				        json_object_get(wt, "type"));
			x = json_object_get(wt, "group_size");
			g = json_is_integer(x) && json_integer_value(x) > 0
			            ? (uint64_t)json_integer_value(x)
			            : 128;
			x = json_object_get(wt, "symmetric");
			sym = !x || json_is_true(x);
			break; /* the first group describes the linear layers */
		}
		snprintf(what, n, "%s%" PRIu64 " compressed-tensors %s",
		         strcmp(type, "float") ? "int" : "fp", bits, strategy);
		/* scales in the model's dtype: one per tensor, per output
		 * channel, per group of g inputs, or per 128x128 block */
		if (!strcmp(strategy, "channel"))
			scales = q->out_sum;
		else if (!strcmp(strategy, "group"))
			scales = q->params / g;
		else if (!strcmp(strategy, "block"))
			scales = q->params / (128 * 128);
		else
			scales = q->mats;
		return q->params * bits / 8 + scales * c->m->dtype.block_bytes +
		       (sym ? 0 : scales * bits / 8);
	}
	if (!strcmp(method, "bitsandbytes")) {
		if (bget(c, "load_in_8bit", 0) ||
		    json_is_true(json_object_get(qc, "load_in_8bit"))) {
			snprintf(what, n, "int8 bitsandbytes");
			/* int8 weights and an fp32 scale per output row */
			return q->params + q->out_sum * 4;
		}
		x = json_object_get(qc, "bnb_4bit_quant_type");
		snprintf(what, n, "%s bitsandbytes",
		         json_string_value(x) ? json_string_value(x) : "nf4");
		/* 4-bit codes and an absmax per 64: fp32, or with double
		 * quantization 8-bit plus an fp32 per 256 blocks */
		if (json_is_true(
		            json_object_get(qc, "bnb_4bit_use_double_quant")))
			return q->params / 2 + q->params / 64 +
			       q->params / (64 * 256) * 4;
		return q->params / 2 + q->params / 64 * 4;
	}
	/* mxfp4: 4-bit elements and an 8-bit scale per 32 */
	snprintf(what, n, "mxfp4");
	return q->params / 2 + q->params / 32;
}

void vrt_model_config_weights(struct cfg *c)
{
	struct vrt_model *m = c->m;
	json_t *qc = get(c, "quantization_config");
	const char *method = NULL;
	int quant[NBUCKETS] = {0}, k;
	struct qsum q = {0, 0, 0, 0};
	uint64_t rest = 0;
	char what[48], dt[24];

	if (json_is_object(qc)) {
		method = json_string_value(json_object_get(qc, "quant_method"));
		if (!method &&
		    (json_is_true(json_object_get(qc, "load_in_4bit")) ||
		     json_is_true(json_object_get(qc, "load_in_8bit"))))
			method = "bitsandbytes";
	}
	if (method && strcmp(method, "awq") && strcmp(method, "gptq") &&
	    strcmp(method, "fp8") && strcmp(method, "compressed-tensors") &&
	    strcmp(method, "bitsandbytes") && strcmp(method, "mxfp4")) {
		vrt_model_note(m,
		               "quantization \"%s\" is not known: weights "
		               "counted at the model's dtype",
		               method);
		method = NULL;
	}
	if (method) {
		if (!strcmp(method, "mxfp4"))
			quant[B_EXPERT] = 1;
		else {
			quant[B_ATTN] = quant[B_MLP] = quant[B_EXPERT] = 1;
			quant[B_SHARED] = quant[B_RECUR] = 1;
			if (!strcmp(method, "gptq") &&
			    json_is_true(json_object_get(qc, "lm_head")))
				quant[B_HEAD] = 1;
		}
		excluded_by(json_object_get(qc, "modules_to_not_convert"),
		            quant);
		excluded_by(json_object_get(qc, "ignore"), quant);
		excluded_by(json_object_get(qc, "llm_int8_skip_modules"),
		            quant);
	}
	for (k = 0; k < NBUCKETS; k++) {
		if (!quant[k]) {
			rest += c->b[k].params;
			continue;
		}
		q.params += c->b[k].params;
		q.in_sum += c->b[k].in_sum;
		q.out_sum += c->b[k].out_sum;
		q.mats += c->b[k].mats;
	}
	if (method && q.params) {
		uint64_t bytes =
		        quant_bytes(c, qc, method, &q, what, sizeof(what));
		snprintf(m->quant, sizeof(m->quant), "%s", what);
		add_weights(m, what, q.params, bytes);
	}
	snprintf(dt, sizeof(dt), "%s", m->dtype.name);
	add_weights(m, dt, rest, rest * m->dtype.block_bytes);
}
