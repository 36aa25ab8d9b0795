/*
 * The fake cuBLAS compiled against NVIDIA's headers (cublas_api.h and
 * cuda_runtime_api.h first): every function it defines must match
 * NVIDIA's prototype. Compiling is the check. Built only where a CUDA
 * toolkit is present (meson.build).
 */
#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#define VRT_HAVE_CUDA_H
#define VRT_HAVE_CUDA_RUNTIME_H
#define VRT_HAVE_CUBLAS_H
#include "fake_cublas.c"
