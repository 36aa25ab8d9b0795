/*
 * sim_alloc.h — how the example servers turn a tensor into driver calls:
 * a small model of the device allocators inference engines use, written
 * from their documented behaviour (sim_alloc.c says which):
 *
 *   plain       one driver allocation per tensor, freed at once
 *   caching     PyTorch's CUDA caching allocator: sizes rounded to 512 B,
 *               small tensors (<= 1 MiB) carved from 2 MiB segments,
 *               larger ones from 20 MiB segments (< 10 MiB) or segments
 *               rounded up to 2 MiB; freed blocks stay cached and are
 *               split for later tensors without any driver call; when the
 *               driver refuses, every cached unused segment is freed and
 *               the allocation tried once more — only that retry's
 *               failure is an error
 *   expandable  the same with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True:
 *               one reserved address range per pool, physical pages (2 MiB
 *               small, 20 MiB large) created and mapped as it grows
 *               (cuMemCreate, cuMemMap, cuMemSetAccess), unmapped and
 *               released when the cache is emptied
 *   async       PyTorch's backend:cudaMallocAsync: cuMemAllocAsync and
 *               cuMemFreeAsync per tensor; a refusal is an error at once
 *   pool-vmm    llama.cpp's ggml_cuda_pool_vmm: one 32 GiB address range,
 *               physical memory mapped at its end in granularity steps as
 *               the pool grows, never given back; frees are LIFO
 *   pool-leg    llama.cpp's ggml_cuda_pool_leg: a list of buffers, best
 *               fit, new buffers 5% larger than asked, freed buffers kept
 *
 * One struct sim_alloc per device; the caller makes that device current
 * before each call. Not thread-safe: one thread per allocator. Return
 * convention: 0, or the runtime's error (SIM_GPU_OOM when out of memory,
 * after the model's own recovery failed).
 */
#ifndef SIM_ALLOC_H
#define SIM_ALLOC_H

#include <stddef.h>
#include <stdint.h>

enum sim_alloc_mode {
	SIM_ALLOC_PLAIN,
	SIM_ALLOC_CACHING,
	SIM_ALLOC_EXPANDABLE,
	SIM_ALLOC_ASYNC,
	SIM_ALLOC_POOL_VMM,
	SIM_ALLOC_POOL_LEG,
};

struct sim_alloc_stats {
	uint64_t allocated; /* bytes of live tensors */
	uint64_t reserved;  /* bytes held from the driver (cached included) */
	unsigned retries;   /* driver refusals the model recovered from */
};

struct sim_alloc;

/* Phases for the annotation API (include/vramtrace.h): with
 * sim_alloc_annotate(1) the example servers announce each phase they
 * allocate in; with 0 (--annotate none) the push and pop do nothing and a
 * profiler has only the names on the stack. Process-wide. */
void sim_alloc_annotate(int on);
void sim_alloc_phase_push(const char *phase);
void sim_alloc_phase_pop(void);

/* The mode a --allocator word names, or -1. */
int sim_alloc_mode_of(const char *word);
const char *sim_alloc_mode_name(int mode);
/* A new allocator for device dev; NULL when the runtime lacks the calls
 * the mode needs (the message says which) or on malloc failure. */
struct sim_alloc *sim_alloc_new(int mode, int dev);
int sim_alloc_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr);
void sim_alloc_free(struct sim_alloc *a, uint64_t ptr);
/* torch.cuda.empty_cache(): cached unused memory back to the driver. */
void sim_alloc_empty_cache(struct sim_alloc *a);
/* CUDA-graph capture on/off: while capturing, PyTorch allocates from the
 * graph's private pool and does not empty its cache on a refusal. */
void sim_alloc_capture(struct sim_alloc *a, int on);
void sim_alloc_stats(const struct sim_alloc *a, struct sim_alloc_stats *st);
/* What the engine whose allocator the mode models says when a request of
 * bytes failed for good, into buf (n bytes, NUL-terminated, lines ending
 * in '\n'): PyTorch's OutOfMemoryError (plain, caching, expandable,
 * async) or ggml's CUDA error (pools). Asks the driver for free memory, as
 * the engines do. Returns the length written. The servers print it
 * through sim_log_oom, in their engine's log format. */
size_t sim_alloc_oom_text(const struct sim_alloc *a, size_t bytes, char *buf,
                          size_t n);

#endif
