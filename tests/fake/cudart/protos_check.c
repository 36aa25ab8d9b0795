/*
 * The fake runtime compiled against NVIDIA's headers (cuda.h and
 * cuda_runtime_api.h first): every function it defines must match
 * NVIDIA's prototype, every field it uses must exist with that name.
 * Compiling is the check; nothing runs. Built only where a CUDA toolkit
 * is present (meson.build).
 */
#include <cuda.h>
#include <cuda_runtime_api.h>

#define VRT_HAVE_CUDA_H
#define VRT_HAVE_CUDA_RUNTIME_H
#include "fake_cudart.c"
