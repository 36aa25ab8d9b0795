/*
 * phase_native — a native "inference server" whose functions carry the
 * names llama.cpp uses, so the built-in rules must tag its allocations:
 *
 *   llama_model_load_from_file  3 x 96 MiB           → weights
 *   llama_kv_cache_init         1 GiB                → kv_cache
 *   llama_decode                4 x (64 MiB alloc+free) → forward
 *     and inside it, announced with VRAMTRACE_PHASE_PUSH("kv_cache"),
 *     one 32 MiB allocation: the annotation wins over the forward rule
 *   plain_helper                8 MiB                → unattributed (or
 *                                                      what a user rules
 *                                                      file says)
 *   a custom phase "scratch" announced around 16 MiB
 *
 * Linked with -lcuda (the fake) and exported symbols, so dladdr names every
 * frame. noinline + an opaque call keep each function on the stack.
 */
#include "cuda_api.h"

#include <vramtrace.h>

#include <stdio.h>
#include <stdlib.h>

#define MIB      (1024ull * 1024ull)
#define NOINLINE __attribute__((noinline, noclone))

static void check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "phase_native: %s failed: %d\n", what, (int)r);
		exit(1);
	}
}

/* Exported (not static) so dladdr names them in the trace. */
void keep_frame(void);
CUdeviceptr alloc_bytes(size_t n);
void llama_model_load_from_file(void);
void llama_kv_cache_init(void);
void llama_decode(int step);
void plain_helper(void);

/* An opaque call after the allocation keeps the caller's frame from
 * becoming a tail call. */
volatile int sink;
NOINLINE void keep_frame(void)
{
	sink++;
}

NOINLINE CUdeviceptr alloc_bytes(size_t n)
{
	CUdeviceptr p = 0;
	check(cuMemAlloc_v2(&p, n), "cuMemAlloc_v2");
	keep_frame();
	return p;
}

NOINLINE void llama_model_load_from_file(void)
{
	for (int i = 0; i < 3; i++)
		alloc_bytes(96 * MIB);
	keep_frame();
}

NOINLINE void llama_kv_cache_init(void)
{
	alloc_bytes(1024 * MIB);
	keep_frame();
}

NOINLINE void llama_decode(int step)
{
	CUdeviceptr act = alloc_bytes(64 * MIB);
	if (step == 0) {
		VRAMTRACE_PHASE_PUSH("kv_cache");
		alloc_bytes(32 * MIB);
		VRAMTRACE_PHASE_POP();
	}
	check(cuMemFree_v2(act), "cuMemFree_v2");
	keep_frame();
}

NOINLINE void plain_helper(void)
{
	alloc_bytes(8 * MIB);
	keep_frame();
}

int main(void)
{
	CUcontext ctx;
	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "retain");
	check(cuCtxSetCurrent(ctx), "set current");
	llama_model_load_from_file();
	llama_kv_cache_init();
	VRAMTRACE_MARK("serving");
	for (int i = 0; i < 4; i++)
		llama_decode(i);
	plain_helper();
	VRAMTRACE_PHASE_PUSH("scratch");
	alloc_bytes(16 * MIB);
	VRAMTRACE_PHASE_POP();
	keep_frame();
	return 0;
}
