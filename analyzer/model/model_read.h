/*
 * Reading a model description from a file: a GGUF model file (gguf.h) or
 * a Hugging Face config.json (model_config.h), told apart by the file's
 * first bytes. The one place that knows both readers; the arithmetic
 * (model.h) takes what they produce.
 */
#ifndef VRT_MODEL_READ_H
#define VRT_MODEL_READ_H

#include <stddef.h>

#include "model_desc.h"

/*
 * Reads the model description at path: a GGUF model file (told by its
 * magic; only its head is read, gguf.h) or a Hugging Face config.json
 * (the file is read through load.c). kv_dtype, when not NULL, is the KV
 * cache type for K and V (--kv-dtype; an unknown name is an error).
 * Returns 0, or -1 with a message for "vramtrace: error: PATH: <msg>" in
 * msg.
 */
int vrt_model_read(struct vrt_model *m, const char *path, const char *kv_dtype,
                   char *msg, size_t msgsz);

#endif /* VRT_MODEL_READ_H */
