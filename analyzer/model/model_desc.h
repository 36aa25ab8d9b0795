/*
 * The model description: what a model's memory is made of, whatever said
 * so (a Hugging Face config.json, a GGUF file's metadata). The readers
 * (model_config.c, gguf.c) fill it; the arithmetic (model.h) reads it.
 *
 * A model is layers by type (struct vrt_model_group):
 *   full       attention over every token of the sequence: K and V per
 *              token per layer = KV heads x (K dim + V dim) elements
 *              (MHA, GQA, MQA);
 *   sliding    the same, but a layer holds at most its window of tokens
 *              (Mistral, Gemma 2/3's local layers, gpt-oss's banded ones);
 *   mla        multi-head latent attention: one compressed latent per
 *              token per layer, kv_lora_rank + qk_rope_head_dim elements
 *              (DeepSeek V2/V3/R1, Kimi K2);
 *   recurrent  Mamba, Mamba 2, gated DeltaNet: a fixed state per sequence
 *              (its convolution window and its SSM state), no per-token KV;
 *   cross      cross-attention over an encoder's output (Whisper): K and V
 *              of every encoder position, per sequence.
 * plus parameters (total, and active per token for mixtures of experts:
 * the routed experts a token does not visit are left out, the embedding
 * table is in), and the weight bytes by storage type (quantized linear
 * layers with their scales and zero points apart from the rest).
 *
 * A reader fills the description's plain fields (layers, heads, groups,
 * dtypes, parameters, weights) and calls vrt_model_finish, which derives
 * the per-token and per-sequence sums (model_desc.c).
 *
 * Pure, single-threaded, no globals; every struct is fixed-size and owns
 * no pointers, so a copy travels with the diagnosis.
 */
#ifndef VRT_MODEL_DESC_H
#define VRT_MODEL_DESC_H
#include <stddef.h>
#include <stdint.h>

#define VRT_MODEL_MAX_GROUPS  8
#define VRT_MODEL_MAX_WEIGHTS 6
#define VRT_MODEL_MAX_NOTES   8
#define VRT_MODEL_NOTE        128

enum vrt_model_kind {
	VRT_MODEL_FULL = 0,
	VRT_MODEL_SLIDING = 1,
	VRT_MODEL_MLA = 2,
	VRT_MODEL_RECURRENT = 3,
	VRT_MODEL_CROSS = 4,
};

/* An element type of the KV cache or of weights: block_bytes per
 * block_elems elements (1 element for plain types; llama.cpp's quantized
 * cache types pack 32 with their scale). */
struct vrt_model_dtype {
	char name[16]; /* canonical: fp32 fp16 bf16 fp8 fp8_e4m3 fp8_e5m2
	                  int8 fp8_ds_mla q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl */
	unsigned block_bytes;
	unsigned block_elems;
};

/* Layers of one type. */
struct vrt_model_group {
	int kind;       /* enum vrt_model_kind */
	char label[24]; /* "gqa", "mha", "mqa", "mla", "sliding", "mamba",
	                   "mamba2", "gated_deltanet", "cross" */
	uint64_t layers;
	uint64_t kv_heads;     /* attention kinds; MLA: 1 latent */
	uint64_t k_dim, v_dim; /* elements per head per token (MLA: latent +
	                          rope in k_dim, v_dim 0) */
	uint64_t window;       /* sliding: tokens a layer holds per sequence */
	uint64_t cross_tokens; /* cross: encoder positions per sequence */
	uint64_t conv_elems;   /* recurrent: convolution state elements per
	                          layer per sequence (model dtype) */
	uint64_t ssm_elems;    /* recurrent: SSM / DeltaNet state elements */
	/* derived by vrt_model_finish: */
	uint64_t kv_bytes_per_token; /* per layer (attention kinds) */
	uint64_t state_bytes;        /* per layer per sequence (recurrent,
	                                cross) */
};

/* Weight bytes of one storage type. */
struct vrt_model_weights {
	char what[48]; /* "bf16", "int4 awq g128 (+scales, zeros)", ... */
	uint64_t params;
	uint64_t bytes; /* scales, zero points, indices included */
};

struct vrt_model {
	char source[16];              /* "config.json", "gguf" */
	char model_type[48];          /* "llama", "deepseek_v3", ... */
	char architecture[64];        /* "LlamaForCausalLM", ... or "" */
	struct vrt_model_dtype dtype; /* the weights as served (an fp32
	                                 checkpoint is served in fp16) */
	uint64_t layers;              /* decoder layers */
	uint64_t hidden, heads, kv_heads, head_dim, vocab, intermediate;
	uint64_t context_len; /* max_position_embeddings, 0 unknown */
	struct vrt_model_group group[VRT_MODEL_MAX_GROUPS];
	size_t ngroups;
	/* The KV cache's element types, K and V apart (llama.cpp sets them
	 * apart), and what chose them. */
	struct vrt_model_dtype kv_k, kv_v;
	char kv_from[40];
	unsigned state_conv_bytes, state_ssm_bytes; /* recurrent state */
	/* Mixture of experts (experts 0: dense). */
	uint64_t experts, experts_per_token, shared_experts, moe_layers;
	uint64_t params_total;
	uint64_t params_active;    /* per token: all but the routed experts
	                              a token does not visit */
	uint64_t params_embedding; /* the input embedding table */
	uint64_t params_vision;    /* vision tower + projector, in total */
	int tied;                  /* the output head is the embedding */
	char quant[64];            /* "awq 4-bit g128", "gguf Q4_K_M", ...
	                              or "" */
	char gguf_type[16];        /* a GGUF's quantization as llama.cpp
	                              names it ("Q4_K_M", "F16"), or "" */
	struct vrt_model_weights weights[VRT_MODEL_MAX_WEIGHTS];
	size_t nweights;
	uint64_t weight_bytes; /* sum of weights[].bytes */
	uint64_t block_weight_bytes; /* the repeating layers' weights (a
	                                GGUF's blk.N.* tensors), 0 unknown */
	char notes[VRT_MODEL_MAX_NOTES][VRT_MODEL_NOTE];
	size_t nnotes;
	/* derived by vrt_model_finish: */
	uint64_t kv_bytes_per_token;  /* every attention layer holding the
	                                 token (a context within every window) */
	uint64_t state_bytes_per_seq; /* recurrent and cross state */
};

/* The element type called name (engine spellings: fp16 float16 half f16,
 * bf16 bfloat16, fp32 float32 float f32, fp8 fp8_inc, fp8_e4m3
 * float8_e4m3fn, fp8_e5m2 float8_e5m2, int8, fp8_ds_mla, q8_0 q4_0 q4_1
 * q5_0 q5_1 iq4_nl; any case) into *d. 0, or -1 when unknown ("auto"
 * included: it names no type). d may be NULL. */
int vrt_model_dtype(const char *name, struct vrt_model_dtype *d);

/* Bytes of n elements of d, rounded up to whole blocks. */
uint64_t vrt_model_dtype_size(const struct vrt_model_dtype *d, uint64_t n);

/* Sets the KV cache types (v NULL: as k) and what chose them; -1 when a
 * name is unknown (m unchanged). Call vrt_model_finish after. */
int vrt_model_set_kv_dtype(struct vrt_model *m, const char *k, const char *v,
                           const char *from);

/* Appends a group (kind, label, layers); NULL when full. */
struct vrt_model_group *vrt_model_add_group(struct vrt_model *m, int kind,
                                            const char *label, uint64_t layers);

/* Appends a note (printf format), dropped when the list is full. */
void vrt_model_note(struct vrt_model *m, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Derives the groups' per-token and per-sequence bytes and the model's
 * sums (kv_bytes_per_token, state_bytes_per_seq, weight_bytes). */
void vrt_model_finish(struct vrt_model *m);

/* "full", "sliding", "mla", "recurrent", "cross". */
const char *vrt_model_kind_name(int kind);

/* KV bytes one layer of g holds per token with heads KV heads stored (the
 * description's KV types; vLLM's fp8_ds_mla layout for MLA). */
uint64_t vrt_model_layer_kv_bytes(const struct vrt_model *m,
                                  const struct vrt_model_group *g,
                                  uint64_t heads);

#endif /* VRT_MODEL_DESC_H */
