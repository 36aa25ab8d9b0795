/*
 * sim_gpu.h — the GPU runtime the example servers allocate through, CUDA
 * or HIP behind one set of calls, reached the way real engines reach it:
 * CUDA as libcudart does (dlopen of libcuda.so.1, one dlsym of
 * cuGetProcAddress_v2, every other name through the resolver), HIP as
 * PyTorch and llama.cpp on ROCm do (dlopen of libamdhip64, dlsym by name).
 *
 * Return convention: 0 on success, else the runtime's own error code.
 * CUDA_ERROR_OUT_OF_MEMORY and hipErrorOutOfMemory are both 2, so
 * SIM_GPU_OOM names either. Device pointers and VMM handles travel as
 * uint64_t on both runtimes.
 *
 * Threads: sim_gpu_open once, before any other call; afterwards any
 * thread may call anything. The current device is per thread, as in both
 * runtimes (sim_gpu_use sets it).
 */
#ifndef SIM_GPU_H
#define SIM_GPU_H

#include <stddef.h>
#include <stdint.h>

#define SIM_GPU_OOM 2

/* Opens the runtime (hip: 0 CUDA, 1 HIP) and initialises it; 0 or -1. */
int sim_gpu_open(int hip);
int sim_gpu_is_hip(void);
/* "CUDA" or "HIP", for messages. */
/* The runtime as ggml's CUDA backend names it in its errors
 * (GGML_CUDA_NAME): "CUDA", or "ROCm" on HIP. */
const char *sim_gpu_ggml_name(void);
const char *sim_gpu_name(void);
int sim_gpu_count(int *n);
/* Makes dev the calling thread's current device (its primary context). */
int sim_gpu_use(int dev);
int sim_gpu_current(void);

/* The device's capacity, as its properties say (no free-memory probe). */
size_t sim_gpu_total(int dev);
int sim_gpu_malloc(uint64_t *p, size_t bytes);
int sim_gpu_free(uint64_t p);
/* Whether the runtime has the stream-ordered / virtual-memory calls. */
int sim_gpu_has_async(void);
int sim_gpu_has_vmm(void);
int sim_gpu_malloc_async(uint64_t *p, size_t bytes);
int sim_gpu_free_async(uint64_t p);
/* The default stream-ordered pool of device dev keeps every freed byte
 * (release threshold UINT64_MAX), as PyTorch's cudaMallocAsync backend
 * sets it; trim: synchronize and give all it keeps back (its emptyCache).
 * CUDA only: -1 on HIP or a driver without pools. */
int sim_gpu_pool_keep(int dev);
int sim_gpu_pool_trim(int dev);
int sim_gpu_sync(void);
/* Free and total bytes of the current device (0, 0 on error). */
void sim_gpu_mem_info(size_t *free_b, size_t *total_b);
int sim_gpu_host_alloc(void **p, size_t bytes);

/* Virtual memory: address ranges, physical handles on device dev, maps. */
int sim_gpu_granularity(size_t *g, int dev);
int sim_gpu_va_reserve(uint64_t *va, size_t bytes);
int sim_gpu_va_free(uint64_t va, size_t bytes);
int sim_gpu_create(uint64_t *handle, size_t bytes, int dev);
int sim_gpu_release(uint64_t handle);
int sim_gpu_map(uint64_t va, size_t bytes, uint64_t handle);
int sim_gpu_unmap(uint64_t va, size_t bytes);
int sim_gpu_set_access(uint64_t va, size_t bytes, int dev);

/* The raw driver entry for device allocations, for callers whose own
 * frame must sit right above the driver's (llama_sim's llama_decode):
 * CUDA's cuMemAlloc_v2 itself, or NULL on HIP. */
typedef int (*sim_gpu_alloc_fn)(unsigned long long *, size_t);
typedef int (*sim_gpu_free_fn)(unsigned long long);
sim_gpu_alloc_fn sim_gpu_raw_alloc(void);
sim_gpu_free_fn sim_gpu_raw_free(void);

/* Bytes as the engines print them: "3.12 GiB", "512.00 MiB". */
const char *sim_gpu_size(char *buf, size_t n, double bytes);

#endif
