/*
 * test_fake_pool.c — the fake driver's stream-ordered pools keep what they
 * should, as the scenarios built on them assume: with PyTorch's threshold
 * (UINT64_MAX) a free stays charged to the device, a later allocation
 * reuses a chunk it fits in without charging more, chunks never join (an
 * allocation can fail while the pool and the device together have room),
 * a synchronize gives back what is over the threshold and cuMemPoolTrimTo
 * what is over its argument; with the default threshold (0) a free goes
 * back at once. Linked with the fake directly, on a 16 GiB card.
 */
#include <stdint.h>
#include <stdio.h>

#include "cuda_api.h"
#include "cuda_api_ext.h"

#define GIB (1ull << 30)

static int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__,   \
			        __LINE__, #cond);                          \
			failures++;                                        \
		}                                                          \
	} while (0)

static unsigned long long used_now(void)
{
	size_t free_b = 0, total = 0;
	cuMemGetInfo_v2(&free_b, &total);
	return total - free_b;
}

static unsigned long long attr(CUmemoryPool p, CUmemPool_attribute a)
{
	unsigned long long v = ~0ull;
	CHECK(cuMemPoolGetAttribute(p, a, &v) == CUDA_SUCCESS);
	return v;
}

int main(void)
{
	CUcontext ctx;
	CUmemoryPool pool;
	CUdeviceptr a, b, c, d;
	unsigned long long keep_all = UINT64_MAX, zero = 0, base;

	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
	CHECK(cuDeviceGetDefaultMemPool(&pool, 0) == CUDA_SUCCESS);
	base = used_now();

	/* default threshold: a free goes back at once */
	CHECK(attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == 0);
	CHECK(cuMemAllocAsync(&a, 4 * GIB, NULL) == CUDA_SUCCESS);
	CHECK(used_now() == base + 4 * GIB);
	CHECK(cuMemFreeAsync(a, NULL) == CUDA_SUCCESS);
	CHECK(used_now() == base);

	/* PyTorch's threshold: frees stay charged */
	CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
	                            &keep_all) == CUDA_SUCCESS);
	CHECK(cuMemAllocAsync(&a, 5 * GIB, NULL) == CUDA_SUCCESS);
	CHECK(cuMemAllocAsync(&b, 5 * GIB, NULL) == CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(a, NULL) == CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(b, NULL) == CUDA_SUCCESS);
	CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS);
	CHECK(used_now() == base + 10 * GIB);
	CHECK(attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) == 0);
	CHECK(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) == 10 * GIB);

	/* reuse: a 3 GiB allocation takes part of a kept chunk */
	CHECK(cuMemAllocAsync(&c, 3 * GIB, NULL) == CUDA_SUCCESS);
	CHECK(used_now() == base + 10 * GIB);
	/* chunks never join: 6 GiB fits neither the 2 and 5 GiB chunks nor
	 * the 6 GiB the device has left, though together there are 13 */
	CHECK(cuMemAllocAsync(&d, 6 * GIB + 1, NULL) ==
	      CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(used_now() == base + 10 * GIB);

	/* trim: down to what is lent out */
	CHECK(cuMemPoolTrimTo(pool, 0) == CUDA_SUCCESS);
	CHECK(used_now() == base + 3 * GIB);
	CHECK(cuMemAllocAsync(&d, 6 * GIB + 1, NULL) == CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(d, NULL) == CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(c, NULL) == CUDA_SUCCESS);
	CHECK(used_now() == base + 9 * GIB + 1);

	/* a lower threshold: a synchronize gives back what is over it */
	CHECK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
	                            &zero) == CUDA_SUCCESS);
	CHECK(used_now() == base + 9 * GIB + 1);
	CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
	CHECK(used_now() == base);
	CHECK(attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) >= 10 * GIB);

	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	else
		printf("fake pool: all checks passed\n");
	return failures != 0;
}
