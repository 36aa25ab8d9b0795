/*
 * The model arithmetic: a model description (model_desc.h, filled by a
 * reader: model_read.h) solved against a run's traced budgets (struct
 * vrt_model_budget) into tokens, sequences and parameters (struct
 * vrt_model_arith; docs/model.md). It reads the description, never a
 * file, and calls no reader.
 *
 * Pure, single-threaded, no globals; every struct is fixed-size and owns
 * no pointers, so a copy travels with the diagnosis.
 */
#ifndef VRT_MODEL_H
#define VRT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "model_desc.h"

/* max_context_single when no context length exhausts the budget (every
 * attention layer is windowed). */
#define VRT_MODEL_UNBOUNDED UINT64_MAX

/* What a run shows and its engine's flags say (0 / "": unknown). */
struct vrt_model_budget {
	uint64_t kv_reserve_bytes; /* observed KV cache, all devices */
	uint64_t headroom_bytes;   /* unused at the peak, all devices */
	uint64_t weight_bytes;     /* observed weights, all devices */
	uint64_t context_len;      /* the engine's max context per sequence */
	uint64_t max_seqs;         /* the engine's concurrency cap */
	uint64_t tp;               /* tensor-parallel degree */
	uint64_t block_tokens;     /* --block-size / --page-size */
	int engine;                /* enum vrt_model_engine */
	char kv_dtype[16];         /* the engine's KV cache type (K) */
	char kv_dtype_v[16];       /* llama.cpp's V cache type, if apart */
	char kv_flag[24];          /* the flag that said so */
	char ssm_dtype[16];        /* vLLM's --mamba-ssm-cache-dtype */
};

enum vrt_model_engine {
	VRT_MODEL_ENGINE_OTHER = 0,
	VRT_MODEL_ENGINE_VLLM = 1,
	VRT_MODEL_ENGINE_SGLANG = 2,
	VRT_MODEL_ENGINE_LLAMACPP = 3,
	VRT_MODEL_ENGINE_TGI = 4,
};

/* The description solved against a run (have = 0 without a model). */
struct vrt_model_arith {
	int have;
	int explain;           /* --explain: reports print it all */
	struct vrt_model desc; /* with the KV dtypes the run used */
	uint64_t context_len;  /* engine flag, else the config's; 0 unknown */
	uint64_t tp;           /* replication of KV across ranks: stored
	                          heads = max(KV heads, tp) */
	uint64_t block_tokens; /* the engine's KV block (1: none) */
	uint64_t kv_bytes_per_token;            /* all ranks, short context */
	uint64_t kv_bytes_per_token_at_context; /* average at context_len */
	uint64_t state_bytes_per_seq;
	uint64_t seq_bytes_at_context; /* one sequence of context_len */
	uint64_t kv_reserve_bytes;
	uint64_t kv_reserve_tokens;  /* the reserve, at context_len */
	uint64_t kv_budget_bytes;    /* reserve + headroom */
	uint64_t max_tokens;         /* the budget, at context_len */
	uint64_t max_concurrency;    /* sequences of context_len */
	uint64_t max_context_single; /* one sequence, or VRT_MODEL_UNBOUNDED */
	uint64_t params_total, params_active;
	uint64_t expected_weight_bytes;
	uint64_t observed_weight_bytes;
};

/* The engine named by diagnose's engine names ("vllm", "sglang",
 * "llama.cpp", "tgi"), else VRT_MODEL_ENGINE_OTHER. */
int vrt_model_engine(const char *name);

/* Reads one process's KV cache flags into *b (first seen wins): vLLM,
 * SGLang and TGI --kv-cache-dtype, llama.cpp -ctk/--cache-type-k and
 * -ctv/--cache-type-v, vLLM --block-size, SGLang --page-size, vLLM
 * --mamba-ssm-cache-dtype. "--flag=value" and "--flag value" both. */
void vrt_model_budget_argv(struct vrt_model_budget *b, char *const *argv,
                           size_t argc);

/* Bytes one sequence of ctx tokens holds across all ranks: every
 * attention layer's KV (a sliding layer at most its window, plus one
 * block where the window straddles blocks), rounded up to block_tokens,
 * heads replicated up to tp, plus the per-sequence state. Saturates. */
uint64_t vrt_model_seq_bytes(const struct vrt_model *m, uint64_t ctx,
                             uint64_t block_tokens, uint64_t tp);

/* The description solved against b into *a (overwritten). The KV types:
 * the description's when it was given --kv-dtype, else the engine's flag
 * from b, else the model's dtype ("auto"). */
void vrt_model_arith(struct vrt_model_arith *a, const struct vrt_model *m,
                     const struct vrt_model_budget *b);

/* The per-token KV arithmetic in one phrase, e.g. "61 MLA layers x 576
 * latent x 2 bytes bf16" or "21 full + 21 sliding(4096) layers x 8 KV
 * heads x (256 + 256) x 2 bytes bf16". Returns the length written. */
size_t vrt_model_kv_formula(const struct vrt_model *m, char *buf, size_t n);

#endif /* VRT_MODEL_H */
