/*
 * cudart_mem.cu — every allocation family through NVIDIA's real CUDA
 * runtime, built by nvcc four ways (dynamic and static runtime, with and
 * without --default-stream per-thread; VRT_CUDART_LINK names the runtime).
 *
 *   cudart_mem --out FILE
 *
 * Writes one line per fact to FILE (tests/gpu/evlog.h): each runtime call
 * and its result, and what succeeded. It never fails on a call's result:
 * the callers judge the log.
 *
 * On a GPU (tests/gpu/run_gpu.py): cudaMalloc, cudaMallocPitch,
 * cudaMallocManaged, cudaMallocAsync and cudaMallocFromPoolAsync on the
 * default stream, cudaHostAlloc, cudaMallocHost, cudaHostRegister, two
 * out-of-memory failures (cudaMalloc and cudaMallocAsync of twice the
 * card), every cudaFree*; one cudaMalloc is left live at exit. The
 * expected report follows from the log.
 *
 * Without a GPU, on the fake driver (tests/realcuda/run_cudart_real.py):
 * the runtime resolves its entry points, then misses the driver's private
 * tables, and every call fails the same way; the look-ups are what is
 * checked.
 *
 * Single-threaded.
 */
#include <cuda_runtime.h>
#include <stdint.h>

#include "evlog.h"

#ifndef VRT_CUDART_LINK
#define VRT_CUDART_LINK "unknown"
#endif
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define STREAM_MODE "per-thread"
#define PTSZ        "_ptsz"
#else
#define STREAM_MODE "default"
#define PTSZ        ""
#endif

#define MiB (1ull << 20)

static cudaError_t logged(const char *api, cudaError_t r)
{
	evlog_call(api, (int)r, cudaGetErrorName(r));
	return r;
}

#define CALL(api, ...) logged(#api, api(__VA_ARGS__))

int main(int argc, char **argv)
{
	if (argc != 3 || strcmp(argv[1], "--out") != 0) {
		fprintf(stderr, "usage: cudart_mem --out FILE\n");
		return 2;
	}
	evlog_open(argv[2]);
	evlog_line("prog cudart_mem " VRT_CUDART_LINK " " STREAM_MODE);

	void *dev_buf = NULL, *pitched = NULL, *managed = NULL;
	void *async_buf = NULL, *pool_buf = NULL, *oom_buf = NULL;
	void *pinned = NULL, *pinned2 = NULL;
	size_t pitch = 0, free_b = 0, total_b = 0;
	const size_t reg_bytes = 4 * MiB;
	void *registered = aligned_alloc(4096, reg_bytes);
	cudaMemPool_t pool = NULL;
	struct cudaMemPoolProps props;
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;

	/* Initialises the runtime; a NULL free is no event. */
	CALL(cudaFree, NULL);
	struct cudaDeviceProp prop;
	if (CALL(cudaGetDeviceProperties, &prop, 0) == cudaSuccess)
		evlog_device(0, prop.totalGlobalMem);
	CALL(cudaMemGetInfo, &free_b, &total_b);

	if (CALL(cudaMalloc, &dev_buf, 6 * MiB) == cudaSuccess)
		evlog_alloc("device", 0, 6 * MiB, dev_buf);
	if (CALL(cudaMallocPitch, &pitched, &pitch, 1000, 300) == cudaSuccess)
		evlog_alloc("device", 0, (unsigned long long)pitch * 300,
		            pitched);
	if (CALL(cudaMallocManaged, &managed, 4 * MiB, cudaMemAttachGlobal) ==
	    cudaSuccess)
		evlog_alloc("managed", 0, 4 * MiB, managed);
	if (CALL(cudaMallocAsync, &async_buf, 8 * MiB, 0) == cudaSuccess)
		evlog_alloc("async", 0, 8 * MiB, async_buf);
	CALL(cudaMemPoolCreate, &pool, &props);
	if (CALL(cudaMallocFromPoolAsync, &pool_buf, 10 * MiB, pool, 0) ==
	    cudaSuccess)
		evlog_alloc("async", 0, 10 * MiB, pool_buf);
	if (CALL(cudaHostAlloc, &pinned, 2 * MiB, cudaHostAllocDefault) ==
	    cudaSuccess)
		evlog_alloc("pinned", -1, 2 * MiB, pinned);
	if (CALL(cudaMallocHost, &pinned2, 3 * MiB) == cudaSuccess)
		evlog_alloc("pinned", -1, 3 * MiB, pinned2);
	if (registered && CALL(cudaHostRegister, registered, reg_bytes,
	                       cudaHostRegisterDefault) == cudaSuccess)
		evlog_alloc("registered", -1, reg_bytes, registered);

	/* Out of memory for real: twice the card. The free bytes are read
	 * right before, with nothing else running in this process. */
	if (total_b) {
		size_t f = 0, t = 0;
		CALL(cudaMemGetInfo, &f, &t);
		if (CALL(cudaMalloc, &oom_buf, 2 * total_b) ==
		    cudaErrorMemoryAllocation)
			evlog_oom("cuMemAlloc_v2", 0, 2ull * total_b,
			          (long long)f, (long long)t);
		if (CALL(cudaMallocAsync, &oom_buf, 2 * total_b, 0) ==
		    cudaErrorMemoryAllocation)
			evlog_oom("cuMemAllocAsync" PTSZ, 0, 2ull * total_b, -1,
			          -1);
	}

	if (CALL(cudaFreeAsync, async_buf, 0) == cudaSuccess && async_buf)
		evlog_free(async_buf);
	if (CALL(cudaFreeAsync, pool_buf, 0) == cudaSuccess && pool_buf)
		evlog_free(pool_buf);
	CALL(cudaStreamSynchronize, 0);
	CALL(cudaMemPoolDestroy, pool);
	if (CALL(cudaFree, pitched) == cudaSuccess && pitched)
		evlog_free(pitched);
	if (CALL(cudaFree, managed) == cudaSuccess && managed)
		evlog_free(managed);
	if (CALL(cudaFreeHost, pinned) == cudaSuccess && pinned)
		evlog_free(pinned);
	if (CALL(cudaFreeHost, pinned2) == cudaSuccess && pinned2)
		evlog_free(pinned2);
	if (registered && CALL(cudaHostUnregister, registered) == cudaSuccess)
		evlog_free(registered);
	/* dev_buf stays live: the report must show it at the end. */
	free(registered);
	return 0;
}
