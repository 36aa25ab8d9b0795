/*
 * modelcfg.c — a Hugging Face config.json parsed with jansson into the KV
 * and weight arithmetic of modelcfg.h. Pure: the caller reads the file.
 * Single-threaded; jansson's objects are freed before returning.
 */
#include "modelcfg.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct {
	const char *name;
	unsigned bytes;
	const char *canon;
} dtypes[] = {
        {"fp16", 2, "fp16"},         {"float16", 2, "fp16"},
        {"half", 2, "fp16"},         {"bf16", 2, "bf16"},
        {"bfloat16", 2, "bf16"},     {"fp8", 1, "fp8"},
        {"fp8_e4m3", 1, "fp8"},      {"fp8_e5m2", 1, "fp8"},
        {"float8_e4m3fn", 1, "fp8"}, {"float8_e5m2", 1, "fp8"},
        {"int8", 1, "fp8"},          {"fp32", 4, "fp32"},
        {"float32", 4, "fp32"},      {"float", 4, "fp32"},
};

static int dtype_index(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcasecmp(name, dtypes[i].name))
			return (int)i;
	return -1;
}

unsigned vrt_modelcfg_dtype_bytes(const char *name)
{
	int i = dtype_index(name);
	return i < 0 ? 0 : dtypes[i].bytes;
}

/* A positive integer member: 1 found, 0 absent (or null), -1 present but
 * not a positive integer. */
static int get_uint(json_t *o, const char *key, uint64_t *out)
{
	json_t *v = json_object_get(o, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) <= 0)
		return -1;
	*out = (uint64_t)json_integer_value(v);
	return 1;
}

static int required(json_t *o, const char *key, uint64_t *out, char *msg,
                    size_t msgsz)
{
	int rc = get_uint(o, key, out);

	if (rc == 0)
		snprintf(msg, msgsz, "missing key \"%s\"", key);
	else if (rc < 0)
		snprintf(msg, msgsz, "key \"%s\" is not a positive integer",
		         key);
	return rc == 1 ? 0 : -1;
}

static void copy_str(json_t *o, const char *key, char *dst, size_t n)
{
	const char *s = json_string_value(json_object_get(o, key));

	snprintf(dst, n, "%s", s ? s : "");
}

static int is_gated(const char *act)
{
	return act && (!strcasecmp(act, "silu") || !strcasecmp(act, "swiglu") ||
	               !strcasecmp(act, "geglu") ||
	               !strcasecmp(act, "gelu_pytorch_tanh"));
}

/* o holds the numbers; root is the whole config (the same object, or the
 * one around a text_config, whose torch_dtype the inner one inherits). */
static int fill(struct vrt_modelcfg *c, json_t *root, json_t *o,
                const char *kv_dtype, char *msg, size_t msgsz)
{
	json_t *tie = json_object_get(o, "tie_word_embeddings");
	json_t *mq = json_object_get(o, "multi_query");
	const char *act;
	uint64_t per_layer;
	int rc, di;

	if (required(o, "num_hidden_layers", &c->layers, msg, msgsz) ||
	    required(o, "num_attention_heads", &c->heads, msg, msgsz) ||
	    required(o, "hidden_size", &c->hidden, msg, msgsz) ||
	    required(o, "vocab_size", &c->vocab, msg, msgsz))
		return -1;
	c->kv_heads = c->heads;
	rc = get_uint(o, "num_key_value_heads", &c->kv_heads);
	if (rc < 0) {
		snprintf(msg, msgsz,
		         "key \"num_key_value_heads\" is not a "
		         "positive integer");
		return -1;
	}
	if (rc == 0 && json_is_true(mq))
		c->kv_heads = 1;
	if (c->kv_heads > c->heads || c->heads % c->kv_heads) {
		snprintf(msg, msgsz,
		         "num_key_value_heads (%llu) does not divide "
		         "num_attention_heads (%llu)",
		         (unsigned long long)c->kv_heads,
		         (unsigned long long)c->heads);
		return -1;
	}
	rc = get_uint(o, "head_dim", &c->head_dim);
	if (rc < 0) {
		snprintf(msg, msgsz,
		         "key \"head_dim\" is not a positive "
		         "integer");
		return -1;
	}
	if (rc == 0) {
		if (c->hidden % c->heads) {
			snprintf(msg, msgsz,
			         "hidden_size (%llu) is not a multiple of "
			         "num_attention_heads (%llu) and no head_dim "
			         "is given",
			         (unsigned long long)c->hidden,
			         (unsigned long long)c->heads);
			return -1;
		}
		c->head_dim = c->hidden / c->heads;
	}
	rc = get_uint(o, "intermediate_size", &c->intermediate);
	if (rc < 0) {
		snprintf(msg, msgsz,
		         "key \"intermediate_size\" is not a "
		         "positive integer");
		return -1;
	}
	if (rc == 0 && get_uint(o, "ffn_hidden_size", &c->intermediate) != 1)
		c->intermediate = 4 * c->hidden;
	if (get_uint(o, "max_position_embeddings", &c->max_positions) <= 0)
		c->max_positions = 0;
	c->tied = tie ? json_is_true(tie) : 1;
	act = json_string_value(json_object_get(o, "hidden_act"));
	if (!act)
		act = json_string_value(json_object_get(o, "activation"));
	/* Llama-family configs name their gated activation; when a config
	 * names none, an explicit intermediate_size is the Llama convention
	 * and a missing one GPT's 4 x hidden with a plain MLP. */
	c->gated = act ? is_gated(act)
	               : json_object_get(o, "intermediate_size") != NULL;
	copy_str(o, "model_type", c->model_type, sizeof(c->model_type));
	copy_str(o, "torch_dtype", c->torch_dtype, sizeof(c->torch_dtype));
	if (!c->torch_dtype[0])
		copy_str(o, "dtype", c->torch_dtype, sizeof(c->torch_dtype));
	if (!c->torch_dtype[0])
		copy_str(root, "torch_dtype", c->torch_dtype,
		         sizeof(c->torch_dtype));
	c->weight_bytes_per_param = vrt_modelcfg_dtype_bytes(c->torch_dtype);
	if (!c->weight_bytes_per_param)
		c->weight_bytes_per_param = 2;
	di = dtype_index(kv_dtype ? kv_dtype : c->torch_dtype);
	if (kv_dtype && di < 0) {
		snprintf(msg, msgsz,
		         "unknown KV dtype '%s' (fp16, bf16, fp8 or fp32)",
		         kv_dtype);
		return -1;
	}
	snprintf(c->kv_dtype, sizeof(c->kv_dtype), "%s",
	         di < 0 ? "fp16" : dtypes[di].canon);
	c->kv_bytes_per_elem = di < 0 ? 2 : dtypes[di].bytes;
	c->kv_bytes_per_token = 2 * c->layers * c->kv_heads * c->head_dim *
	                        c->kv_bytes_per_elem;
	per_layer = c->hidden * c->heads * c->head_dim * 2 +
	            c->hidden * c->kv_heads * c->head_dim * 2 +
	            (c->gated ? 3 : 2) * c->hidden * c->intermediate +
	            2 * c->hidden;
	c->params = c->layers * per_layer +
	            c->vocab * c->hidden * (c->tied ? 1 : 2) + c->hidden;
	c->weight_bytes = c->params * c->weight_bytes_per_param;
	return 0;
}

int vrt_modelcfg_parse(struct vrt_modelcfg *c, const char *text, size_t len,
                       const char *kv_dtype, char *msg, size_t msgsz)
{
	json_error_t jerr;
	json_t *root, *o;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(msg, msgsz, "invalid JSON at line %d column %d: %s",
		         jerr.line, jerr.column, jerr.text);
		return -1;
	}
	if (!json_is_object(root)) {
		snprintf(msg, msgsz, "not a JSON object");
		goto out;
	}
	o = root;
	if (!json_object_get(o, "num_hidden_layers") &&
	    json_is_object(json_object_get(o, "text_config")))
		o = json_object_get(o, "text_config");
	rc = fill(c, root, o, kv_dtype, msg, msgsz);
out:
	json_decref(root);
	return rc;
}
