/*
 * The Hugging Face config.json reader (model_config.c): a description
 * (model_desc.h) from a model's configuration.
 */
#ifndef VRT_MODEL_CONFIG_H
#define VRT_MODEL_CONFIG_H

#include <stddef.h>

#include "model_desc.h"

/*
 * The config.json reader (model_config.c): the JSON in text[0..len) into
 * *m, finished. Per model type it knows the layer pattern (sliding
 * windows, MLA, recurrent layers, encoder-decoder), the defaults the
 * config may leave out (tie_word_embeddings, Gemma 3's heads, ...), the
 * parameter count (dense, MoE, vision tower) and quantization_config
 * (AWQ, GPTQ, fp8, compressed-tensors, bitsandbytes, mxfp4). The KV
 * types start as the model's dtype. Returns 0, or -1 with "what: reason"
 * in msg: invalid JSON (line and column), not an object, a required key
 * missing or not a positive integer, heads that do not divide.
 */
int vrt_model_config_parse(struct vrt_model *m, const char *text, size_t len,
                           char *msg, size_t msgsz);

#endif /* VRT_MODEL_CONFIG_H */
