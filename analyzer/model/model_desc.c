/*
 * model_desc.c — the model description of model_desc.h: element types,
 * building a description (groups, notes, KV types) and the per-token and
 * per-sequence sums derived from it. The readers (model_config.c, gguf.c)
 * call these; nothing here reads a file or solves against a run. Pure and
 * single-threaded; no globals but constant tables.
 */
#include "model_desc.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- element types ------------------------------------------------------- */

static const struct {
	const char *name;
	const char *canon;
	unsigned block_bytes, block_elems;
} dtypes[] = {
        {"fp32", "fp32", 4, 1},
        {"float32", "fp32", 4, 1},
        {"float", "fp32", 4, 1},
        {"f32", "fp32", 4, 1},
        {"fp16", "fp16", 2, 1},
        {"float16", "fp16", 2, 1},
        {"half", "fp16", 2, 1},
        {"f16", "fp16", 2, 1},
        {"bf16", "bf16", 2, 1},
        {"bfloat16", "bf16", 2, 1},
        /* vLLM's "fp8" is e4m3 on NVIDIA; fp8_inc is Intel Gaudi's. */
        {"fp8", "fp8", 1, 1},
        {"fp8_inc", "fp8", 1, 1},
        {"fp8_e4m3", "fp8_e4m3", 1, 1},
        {"float8_e4m3fn", "fp8_e4m3", 1, 1},
        {"fp8_e4m3fn", "fp8_e4m3", 1, 1},
        {"fp8_e5m2", "fp8_e5m2", 1, 1},
        {"float8_e5m2", "fp8_e5m2", 1, 1},
        {"int8", "int8", 1, 1},
        /* vLLM's DeepSeek sparse-MLA layout: 656 bytes per token per
         * layer (see per_token below); 1 byte elsewhere. */
        {"fp8_ds_mla", "fp8_ds_mla", 1, 1},
        /* ggml's block types for llama.cpp's -ctk/-ctv: 32 elements and
         * their fp16 scale (and min, and high bits) per block. */
        {"q8_0", "q8_0", 34, 32},
        {"q4_0", "q4_0", 18, 32},
        {"q4_1", "q4_1", 20, 32},
        {"q5_0", "q5_0", 22, 32},
        {"q5_1", "q5_1", 24, 32},
        {"iq4_nl", "iq4_nl", 18, 32},
};

/* vLLM's fp8_ds_mla: 512 fp8 latent values, 4 fp32 tile scales and 64
 * bf16 rope values per token per layer. */
#define DS_MLA_TOKEN_BYTES 656

int vrt_model_dtype(const char *name, struct vrt_model_dtype *d)
{
	size_t i;

	for (i = 0; name && i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
		if (strcasecmp(name, dtypes[i].name))
			continue;
		if (d) {
			snprintf(d->name, sizeof(d->name), "%s",
			         dtypes[i].canon);
			d->block_bytes = dtypes[i].block_bytes;
			d->block_elems = dtypes[i].block_elems;
		}
		return 0;
	}
	return -1;
}

uint64_t vrt_model_dtype_size(const struct vrt_model_dtype *d, uint64_t n)
{
	uint64_t per = d->block_elems ? d->block_elems : 1;

	return (n + per - 1) / per * d->block_bytes;
}

/* ---- building a description ---------------------------------------------- */

int vrt_model_set_kv_dtype(struct vrt_model *m, const char *k, const char *v,
                           const char *from)
{
	struct vrt_model_dtype dk, dv;

	if (vrt_model_dtype(k, &dk) || vrt_model_dtype(v ? v : k, &dv))
		return -1;
	m->kv_k = dk;
	m->kv_v = dv;
	snprintf(m->kv_from, sizeof(m->kv_from), "%s", from ? from : "");
	return 0;
}

struct vrt_model_group *vrt_model_add_group(struct vrt_model *m, int kind,
                                            const char *label, uint64_t layers)
{
	struct vrt_model_group *g;

	if (m->ngroups >= VRT_MODEL_MAX_GROUPS)
		return NULL;
	g = &m->group[m->ngroups++];
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	g->layers = layers;
	snprintf(g->label, sizeof(g->label), "%s", label);
	return g;
}

void vrt_model_note(struct vrt_model *m, const char *fmt, ...)
{
	va_list ap;

	if (m->nnotes >= VRT_MODEL_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(m->notes[m->nnotes++], VRT_MODEL_NOTE, fmt, ap);
	va_end(ap);
}

const char *vrt_model_kind_name(int kind)
{
	switch (kind) {
	case VRT_MODEL_SLIDING:
		return "sliding";
	case VRT_MODEL_MLA:
		return "mla";
	case VRT_MODEL_RECURRENT:
		return "recurrent";
	case VRT_MODEL_CROSS:
		return "cross";
	}
	return "full";
}

uint64_t vrt_model_layer_kv_bytes(const struct vrt_model *m,
                                  const struct vrt_model_group *g,
                                  uint64_t heads)
{
	if (g->kind == VRT_MODEL_MLA) {
		if (!strcmp(m->kv_k.name, "fp8_ds_mla"))
			return heads * DS_MLA_TOKEN_BYTES;
		return heads * vrt_model_dtype_size(&m->kv_k, g->k_dim);
	}
	return heads * (vrt_model_dtype_size(&m->kv_k, g->k_dim) +
	                vrt_model_dtype_size(&m->kv_v, g->v_dim));
}

void vrt_model_finish(struct vrt_model *m)
{
	size_t i;

	m->kv_bytes_per_token = 0;
	m->state_bytes_per_seq = 0;
	m->weight_bytes = 0;
	for (i = 0; i < m->ngroups; i++) {
		struct vrt_model_group *g = &m->group[i];
		g->kv_bytes_per_token = 0;
		g->state_bytes = 0;
		if (g->kind == VRT_MODEL_RECURRENT)
			g->state_bytes = g->conv_elems * m->state_conv_bytes +
			                 g->ssm_elems * m->state_ssm_bytes;
		else
			g->kv_bytes_per_token =
			        vrt_model_layer_kv_bytes(m, g, g->kv_heads);
		if (g->kind == VRT_MODEL_CROSS)
			g->state_bytes =
			        g->cross_tokens * g->kv_bytes_per_token;
		else
			m->kv_bytes_per_token +=
			        g->layers * g->kv_bytes_per_token;
		m->state_bytes_per_seq += g->layers * g->state_bytes;
	}
	for (i = 0; i < m->nweights; i++)
		m->weight_bytes += m->weights[i].bytes;
}
