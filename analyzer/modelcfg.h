/*
 * Model configs: a Hugging Face config.json in, the numbers the diagnosis
 * needs out — KV cache bytes per token and the weight bytes the parameter
 * count implies (DESIGN.md "analyze ... --model-config").
 *
 *   KV bytes per token = 2 (K and V) x num_hidden_layers
 *                        x num_key_value_heads x head_dim x dtype bytes
 *
 * num_key_value_heads defaults to num_attention_heads (plain multi-head
 * attention); "multi_query": true (Falcon) means 1. head_dim is the
 * config's own when given, else hidden_size / num_attention_heads.
 *
 * Parameters are estimated for a decoder-only transformer: embeddings
 * (vocab x hidden, twice unless tie_word_embeddings), per layer the
 * attention projections (q and o: hidden x heads x head_dim; k and v:
 * hidden x kv_heads x head_dim), the MLP (three hidden x intermediate
 * matrices for gated activations — silu/swiglu/geglu, the Llama family —
 * else two) and two norm vectors, plus the final norm. Biases and
 * mixture-of-experts layers are not counted: the estimate is for dense
 * models, good to about 1%.
 *
 * The JSON is parsed with jansson; the file itself is read by the caller
 * (load.c reads files). Pure, single-threaded, no globals.
 */
#ifndef VRT_MODELCFG_H
#define VRT_MODELCFG_H

#include <stddef.h>
#include <stdint.h>

struct vrt_modelcfg {
	char model_type[64];    /* "llama", "falcon", ... or "" */
	char torch_dtype[32];   /* as written, or "" */
	char kv_dtype[16];      /* fp16, bf16, fp8, fp32: --kv-dtype or
	                           torch_dtype's */
	uint64_t layers;        /* num_hidden_layers */
	uint64_t heads;         /* num_attention_heads */
	uint64_t kv_heads;      /* num_key_value_heads (see above) */
	uint64_t head_dim;      /* given, or hidden / heads */
	uint64_t hidden;        /* hidden_size */
	uint64_t intermediate;  /* intermediate_size, else 4 x hidden */
	uint64_t vocab;         /* vocab_size */
	uint64_t max_positions; /* max_position_embeddings, 0 if absent */
	int tied;               /* tie_word_embeddings (default 1) */
	int gated;              /* gated MLP: 3 matrices */
	unsigned weight_bytes_per_param; /* from torch_dtype (default 2) */
	unsigned kv_bytes_per_elem;      /* from kv_dtype */
	uint64_t kv_bytes_per_token;
	uint64_t params;       /* estimated parameter count */
	uint64_t weight_bytes; /* params x weight_bytes_per_param */
};

/* Bytes of one element of a dtype name: fp16/float16/half/bf16/bfloat16 2,
 * fp8/fp8_e4m3/fp8_e5m2/float8* /int8 1, fp32/float32/float 4; 0 when
 * unknown. */
unsigned vrt_modelcfg_dtype_bytes(const char *name);

/*
 * Parses a config.json held in text[0..len) into *c. kv_dtype, when not
 * NULL, overrides the config's torch_dtype for the KV cache (an unknown
 * name is an error). Returns 0, or -1 with "what: reason" in msg (the
 * caller adds the file name): invalid JSON (with line and column), not
 * an object, a missing or non-positive required key (num_hidden_layers,
 * num_attention_heads, hidden_size, vocab_size), heads that do not divide.
 * A config whose numbers live under "text_config" (multimodal models) is
 * read from there.
 */
int vrt_modelcfg_parse(struct vrt_modelcfg *c, const char *text, size_t len,
                       const char *kv_dtype, char *msg, size_t msgsz);

#endif /* VRT_MODELCFG_H */
