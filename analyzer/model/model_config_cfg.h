/*
 * The parse state of the config.json reader, shared by its two files:
 * model_config.c (the layer pattern, attention, feed-forward and the
 * parameter count) and model_config_quant.c (quantization_config into
 * weight bytes). Private to the reader; single-threaded.
 */
#ifndef VRT_MODEL_CONFIG_CFG_H
#define VRT_MODEL_CONFIG_CFG_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <strings.h>

#include "model_desc.h"

#define MAX_LAYERS 4096

/* Parameter buckets: what quantization may touch is kept apart. */
enum {
	B_EMB,    /* input embedding */
	B_HEAD,   /* output head (untied) */
	B_ATTN,   /* attention projections */
	B_MLP,    /* dense feed-forward */
	B_EXPERT, /* routed experts */
	B_SHARED, /* shared experts */
	B_ROUTER, /* routers */
	B_RECUR,  /* recurrent mixers' projections */
	B_OTHER,  /* norms, biases, convolutions, small vectors */
	B_VISION, /* vision tower and projector */
	NBUCKETS
};

struct bucket {
	uint64_t params, in_sum, out_sum, mats;
};

/* A model type's traits (model_config.c's table). */
struct family;

struct cfg {
	json_t *root, *o; /* the whole config; the text model's numbers */
	struct vrt_model *m;
	const struct family *fam;
	char *msg;
	size_t msgsz;
	struct bucket b[NBUCKETS];
	uint64_t inactive; /* routed-expert params a token does not visit */
	uint64_t window;   /* sliding window */
	unsigned char kind[MAX_LAYERS], ffn[MAX_LAYERS];
	/* shapes */
	uint64_t H, L, heads, kvh, hd, V, I;
	uint64_t E, topk, Im, shared, shared_i;
	int plain;         /* a two-matrix feed-forward */
	uint64_t mla_head; /* MLA: a query/key head's size */
};

/* A member of the text config, else of the whole config. */
static inline json_t *get(struct cfg *c, const char *key)
{
	json_t *v = json_object_get(c->o, key);

	if ((!v || json_is_null(v)) && c->o != c->root)
		v = json_object_get(c->root, key);
	return v && !json_is_null(v) ? v : NULL;
}

/* A flag: JSON true (or "true", as some configs write it). */
static inline int bget(struct cfg *c, const char *key, int dflt)
{
	json_t *v = get(c, key);
	const char *s;

	if (!v)
		return dflt;
	if (json_is_boolean(v))
		return json_is_true(v);
	s = json_string_value(v);
	return s ? !strcasecmp(s, "true") : dflt;
}

/* The weights by storage type into c->m from the parameter buckets and
 * quantization_config (model_config_quant.c). */
void vrt_model_config_weights(struct cfg *c);

#endif /* VRT_MODEL_CONFIG_CFG_H */
