/*
 * GGUF: the metadata of a llama.cpp model file read into the model
 * description of model.h, so `--model-config model.gguf` works wherever
 * a Hugging Face config.json does (docs/model.md).
 *
 * The format (ggml's docs/gguf.md, versions 2 and 3, little-endian): the
 * magic "GGUF", a u32 version, a u64 tensor count, a u64 key-value count,
 * the typed key-value pairs (integers, floats, bools, strings, arrays of
 * any of them, nested), then one info per tensor: name, dimensions, ggml
 * type, data offset. Only the head of the file is read (the tensor data
 * that follows is never touched), at most VRT_GGUF_MAX_HEAD bytes.
 *
 * What is taken: general.architecture, general.file_type (the quant name,
 * Q4_K_M ...), and per architecture ARCH.block_count, .context_length,
 * .embedding_length, .feed_forward_length, .attention.head_count,
 * .attention.head_count_kv (a number, or one per layer: 0 marks a layer
 * without attention), .attention.key_length / .value_length,
 * .attention.sliding_window (+ .sliding_window_pattern), .attention.
 * kv_lora_rank with .rope.dimension_count (MLA), .expert_count,
 * .expert_used_count, .ssm.* (recurrent layers), the vocabulary size;
 * from the tensor infos the parameters and bytes per ggml type (ggml's
 * type traits: block size and bytes per block), the repeating blocks'
 * bytes (blk.N.*), the embedding table and whether the output head is
 * tied.
 *
 * Untrusted input: every count and length is checked against the bytes
 * left before it is used, arrays nest at most VRT_GGUF_MAX_DEPTH deep, no
 * size from the file sizes an allocation beyond the layer count (at most
 * 4096). Pure, single-threaded, no globals but constant tables.
 */
#ifndef VRT_GGUF_H
#define VRT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "model_desc.h"

#define VRT_GGUF_MAX_HEAD  (64u << 20) /* metadata + tensor infos read */
#define VRT_GGUF_MAX_DEPTH 4           /* arrays of arrays of ... */

/* 1 when buf starts with the magic "GGUF". */
int vrt_gguf_is(const uint8_t *buf, size_t len);

/*
 * Parses the head of a GGUF file, buf[0..len), into *m (overwritten),
 * finished (vrt_model_finish). truncated: 1 when buf is only the first
 * len bytes of a longer file (an error that runs past the end then says
 * the metadata is larger than what was read). Returns 0, or -1 with
 * "what: reason" in msg (bad magic, unsupported version, a value past the
 * end, a key that must be a positive integer and is not, an unknown
 * tensor type, ...).
 */
int vrt_gguf_parse(struct vrt_model *m, const uint8_t *buf, size_t len,
                   int truncated, char *msg, size_t msgsz);

/* ggml's name of tensor type t ("q4_K", "f16", ...), NULL unknown; its
 * bytes per block and elements per block into *bytes and *elems. */
const char *vrt_gguf_type(uint32_t t, unsigned *bytes, unsigned *elems);

/* llama.cpp's name of general.file_type ("Q4_K_M", "F16", ...), NULL
 * unknown. */
const char *vrt_gguf_file_type_name(uint32_t ftype);

/* A quantization advice can name: llama-quantize's name and its average
 * bits per weight on a whole model (the mix of tensor types included). */
struct vrt_gguf_quant {
	const char *name;
	double bpw;
};

/* The quantizations advice names, largest first; *n their count. */
const struct vrt_gguf_quant *vrt_gguf_quants(size_t *n);

/* Average bits per weight of the quantization called name (any case),
 * 0 when it is not one of vrt_gguf_quants. */
double vrt_gguf_quant_bpw(const char *name);

#endif /* VRT_GGUF_H */
