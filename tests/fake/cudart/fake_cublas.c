/*
 * fake_cublas.c — a stand-in libcublas.so.13 for the tests: handles,
 * streams, workspaces and GEMMs whose arguments are checked and whose
 * arithmetic is not done (there is no device to do it on).
 *
 * What the preload must see of cuBLAS is its memory: real cuBLAS takes a
 * default workspace pool from the device when a handle is created
 * (documented with cublasSetWorkspace; its size follows the same rules as
 * CUBLAS_WORKSPACE_CONFIG, ":SIZE_KiB:COUNT" pairs summed; by default
 * ":4096:2:16:8", 8 MiB + 128 KiB, and 32 MiB on compute capability 9.x
 * where cuBLAS recommends that much) and gives it back when the handle is
 * destroyed. This one does the same, through the runtime (cudaMalloc and
 * cudaFree of the fake runtime, hence cuMemAlloc_v2 / cuMemFree_v2 of the
 * driver). A workspace set with cublasSetWorkspace is the caller's: the
 * handle uses it and never frees it; the default pool stays allocated
 * until the handle is destroyed.
 *
 * Every other export of the real library is a stub that answers
 * CUBLAS_STATUS_NOT_SUPPORTED and says once on stderr which call it was
 * (cublas_stubs.h).
 *
 * Threads: a handle is used by one thread at a time, as cuBLAS requires;
 * the library keeps no other state but the stubs' once-flags (atomics).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_api.h"
#include "cudart_api.h"
#include "cublas_api.h"

#define CUBLAS_FAKE_MAGIC   0xb1a5c0deu
#define CUBLAS_FAKE_VERSION 130100 /* CUBLAS_VERSION of CUDA 13.0's 13.1.0 */
#define KIB                 1024ull

struct cublasContext {
	unsigned magic;
	int device;
	cudaStream_t stream;
	void *pool; /* the default workspace pool, ours */
	size_t pool_size;
	void *ws; /* the workspace in use: the pool, or the caller's */
	size_t ws_size;
	cublasPointerMode_t pointer_mode;
	cublasAtomicsMode_t atomics;
	cublasMath_t math;
	int sm_target;
};

static int valid(cublasHandle_t h)
{
	return h && h->magic == CUBLAS_FAKE_MAGIC;
}

/* CUBLAS_WORKSPACE_CONFIG: ":SIZE:COUNT" pairs (SIZE in KiB), summed;
 * -1 when unset or malformed. */
static long long workspace_config(void)
{
	const char *s = getenv("CUBLAS_WORKSPACE_CONFIG");
	unsigned long long total = 0;
	if (!s || !*s)
		return -1;
	while (*s) {
		char *end;
		unsigned long long size, count;
		if (*s != ':')
			return -1;
		size = strtoull(s + 1, &end, 10);
		if (end == s + 1 || *end != ':')
			return -1;
		s = end;
		count = strtoull(s + 1, &end, 10);
		if (end == s + 1)
			return -1;
		s = end;
		total += size * count * KIB;
	}
	return (long long)total;
}

/* The default pool: CUBLAS_WORKSPACE_CONFIG's, else cuBLAS's default for
 * the device's compute capability. */
static size_t default_pool_size(int device)
{
	long long cfg = workspace_config();
	int major = 0;
	if (cfg >= 0)
		return (size_t)cfg;
	cudaDeviceGetAttribute(&major, (enum cudaDeviceAttr)75, device);
	return major >= 9 ? 32768 * KIB : (4096 * 2 + 16 * 8) * KIB;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
	struct cublasContext *h;
	int dev = 0;
	if (!handle)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (cudaGetDevice(&dev) != cudaSuccess)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!(h = calloc(1, sizeof(*h))))
		return CUBLAS_STATUS_ALLOC_FAILED;
	h->device = dev;
	h->pool_size = default_pool_size(dev);
	if (h->pool_size && cudaMalloc(&h->pool, h->pool_size) != cudaSuccess) {
		free(h);
		return CUBLAS_STATUS_ALLOC_FAILED;
	}
	h->ws = h->pool;
	h->ws_size = h->pool_size;
	h->magic = CUBLAS_FAKE_MAGIC;
	*handle = h;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (handle->pool)
		cudaFree(handle->pool);
	handle->magic = 0;
	free(handle);
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
	if (!version)
		return CUBLAS_STATUS_INVALID_VALUE;
	*version = CUBLAS_FAKE_VERSION;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
	static const int v[3] = {CUBLAS_FAKE_VERSION / 10000,
	                         CUBLAS_FAKE_VERSION / 100 % 100,
	                         CUBLAS_FAKE_VERSION % 100};
	if (!value || (int)type < 0 || (int)type > 2)
		return CUBLAS_STATUS_INVALID_VALUE;
	*value = v[type];
	return CUBLAS_STATUS_SUCCESS;
}

size_t cublasGetCudartVersion(void)
{
	return 13000;
}

/* The caller's workspace (256-byte aligned, as cuBLAS requires), or back
 * to the default pool with NULL / 0. */
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace,
                                     size_t workspaceSizeInBytes)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((uintptr_t)workspace % 256)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (!workspace || !workspaceSizeInBytes) {
		handle->ws = handle->pool;
		handle->ws_size = handle->pool_size;
	} else {
		handle->ws = workspace;
		handle->ws_size = workspaceSizeInBytes;
	}
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->stream = streamId;
	/* As documented: a new stream puts the handle back on its default
	 * workspace pool. */
	handle->ws = handle->pool;
	handle->ws_size = handle->pool_size;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t *streamId)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!streamId)
		return CUBLAS_STATUS_INVALID_VALUE;
	*streamId = handle->stream;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle,
                                       cublasPointerMode_t mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((int)mode < 0 || (int)mode > 1)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->pointer_mode = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle,
                                       cublasPointerMode_t *mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->pointer_mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((int)mode < 0 || (int)mode > 1)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->atomics = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle,
                                    cublasAtomicsMode_t *mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->atomics;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	handle->math = mode;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!mode)
		return CUBLAS_STATUS_INVALID_VALUE;
	*mode = handle->math;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int smCountTarget)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (smCountTarget < 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	handle->sm_target = smCountTarget;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *smCountTarget)
{
	if (!valid(handle))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!smCountTarget)
		return CUBLAS_STATUS_INVALID_VALUE;
	*smCountTarget = handle->sm_target;
	return CUBLAS_STATUS_SUCCESS;
}

static const char *const g_status[17][2] = {
        [0] = {"CUBLAS_STATUS_SUCCESS", "the operation completed successfully"},
        [1] = {"CUBLAS_STATUS_NOT_INITIALIZED",
               "the library was not initialized"},
        [3] = {"CUBLAS_STATUS_ALLOC_FAILED", "the resource allocation failed"},
        [7] = {"CUBLAS_STATUS_INVALID_VALUE",
               "an invalid numeric value was used as an argument"},
        [8] = {"CUBLAS_STATUS_ARCH_MISMATCH",
               "an absent device architectural feature is required"},
        [11] = {"CUBLAS_STATUS_MAPPING_ERROR",
                "an access to GPU memory space failed"},
        [13] = {"CUBLAS_STATUS_EXECUTION_FAILED",
                "the GPU program failed to execute"},
        [14] = {"CUBLAS_STATUS_INTERNAL_ERROR",
                "an internal operation failed"},
        [15] = {"CUBLAS_STATUS_NOT_SUPPORTED",
                "the functionality requested is not supported"},
        [16] = {"CUBLAS_STATUS_LICENSE_ERROR",
                "error detected trying to check the license"},
};

const char *cublasGetStatusName(cublasStatus_t status)
{
	if ((unsigned)status < 17 && g_status[status][0])
		return g_status[status][0];
	return "CUBLAS_STATUS_UNKNOWN";
}

const char *cublasGetStatusString(cublasStatus_t status)
{
	if ((unsigned)status < 17 && g_status[status][1])
		return g_status[status][1];
	return "unknown error";
}

/* ---- GEMMs ------------------------------------------------------------- */

/* The checks cuBLAS documents for C = alpha op(A) op(B) + beta C (column
 * major; op(A) is m x k, op(B) k x n), per batch member. The product
 * itself is not computed. */
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta,
                           cublasOperation_t tb, long long m, long long n,
                           long long k, long long lda, long long ldb,
                           long long ldc, long long batch)
{
	long long rows_a = ta == CUBLAS_OP_N ? m : k;
	long long rows_b = tb == CUBLAS_OP_N ? k : n;
	if (!valid(h))
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if ((int)ta < 0 || (int)ta > 2 || (int)tb < 0 || (int)tb > 2 || m < 0 ||
	    n < 0 || k < 0 || batch < 0 || lda < (rows_a > 1 ? rows_a : 1) ||
	    ldb < (rows_b > 1 ? rows_b : 1) || ldc < (m > 1 ? m : 1))
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta,
                              float *C, int ldc)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                              cublasOperation_t transb, int m, int n, int k,
                              const double *alpha, const double *A, int lda,
                              const double *B, int ldb, const double *beta,
                              double *C, int ldc)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                           cublasOperation_t transb, int m, int n, int k,
                           const __half *alpha, const __half *A, int lda,
                           const __half *B, int ldb, const __half *beta,
                           __half *C, int ldc)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasSgemmEx(cublasHandle_t handle, cublasOperation_t transa,
                             cublasOperation_t transb, int m, int n, int k,
                             const float *alpha, const void *A,
                             cudaDataType Atype, int lda, const void *B,
                             cudaDataType Btype, int ldb, const float *beta,
                             void *C, cudaDataType Ctype, int ldc)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void *alpha, const void *A,
                            cudaDataType Atype, int lda, const void *B,
                            cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType,
                            cublasGemmAlgo_t algo)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, 1);
}

cublasStatus_t cublasSgemmStridedBatched(
        cublasHandle_t handle, cublasOperation_t transa,
        cublasOperation_t transb, int m, int n, int k, const float *alpha,
        const float *A, int lda, long long int strideA, const float *B,
        int ldb, long long int strideB, const float *beta, float *C, int ldc,
        long long int strideC, int batchCount)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasDgemmStridedBatched(
        cublasHandle_t handle, cublasOperation_t transa,
        cublasOperation_t transb, int m, int n, int k, const double *alpha,
        const double *A, int lda, long long int strideA, const double *B,
        int ldb, long long int strideB, const double *beta, double *C,
        int ldc, long long int strideC, int batchCount)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasHgemmStridedBatched(
        cublasHandle_t handle, cublasOperation_t transa,
        cublasOperation_t transb, int m, int n, int k, const __half *alpha,
        const __half *A, int lda, long long int strideA, const __half *B,
        int ldb, long long int strideB, const __half *beta, __half *C,
        int ldc, long long int strideC, int batchCount)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasGemmStridedBatchedEx(
        cublasHandle_t handle, cublasOperation_t transa,
        cublasOperation_t transb, int m, int n, int k, const void *alpha,
        const void *A, cudaDataType Atype, int lda, long long int strideA,
        const void *B, cudaDataType Btype, int ldb, long long int strideB,
        const void *beta, void *C, cudaDataType Ctype, int ldc,
        long long int strideC, int batchCount,
        cublasComputeType_t computeType, cublasGemmAlgo_t algo)
{
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasSgemmBatched(cublasHandle_t handle,
                                  cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n,
                                  int k, const float *alpha,
                                  const float *const Aarray[], int lda,
                                  const float *const Barray[], int ldb,
                                  const float *beta, float *const Carray[],
                                  int ldc, int batchCount)
{
	if (batchCount > 0 && (!Aarray || !Barray || !Carray))
		return CUBLAS_STATUS_INVALID_VALUE;
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasHgemmBatched(cublasHandle_t handle,
                                  cublasOperation_t transa,
                                  cublasOperation_t transb, int m, int n,
                                  int k, const __half *alpha,
                                  const __half *const Aarray[], int lda,
                                  const __half *const Barray[], int ldb,
                                  const __half *beta, __half *const Carray[],
                                  int ldc, int batchCount)
{
	if (batchCount > 0 && (!Aarray || !Barray || !Carray))
		return CUBLAS_STATUS_INVALID_VALUE;
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

cublasStatus_t cublasGemmBatchedEx(
        cublasHandle_t handle, cublasOperation_t transa,
        cublasOperation_t transb, int m, int n, int k, const void *alpha,
        const void *const Aarray[], cudaDataType Atype, int lda,
        const void *const Barray[], cudaDataType Btype, int ldb,
        const void *beta, void *const Carray[], cudaDataType Ctype, int ldc,
        int batchCount, cublasComputeType_t computeType,
        cublasGemmAlgo_t algo)
{
	if (batchCount > 0 && (!Aarray || !Barray || !Carray))
		return CUBLAS_STATUS_INVALID_VALUE;
	return gemm(handle, transa, transb, m, n, k, lda, ldb, ldc, batchCount);
}

/* ---- every other export ------------------------------------------------ */

#ifndef VRT_HAVE_CUBLAS_H
/* Says once per name which call the program made that the fake does not
 * emulate. */
static int stub(const char *name, atomic_int *said)
{
	if (!atomic_exchange(said, 1))
		fprintf(stderr,
		        "fakecublas: %s is not emulated: "
		        "CUBLAS_STATUS_NOT_SUPPORTED\n",
		        name);
	return CUBLAS_STATUS_NOT_SUPPORTED;
}

#define X(name)                                                                \
	int name(void);                                                        \
	int name(void)                                                         \
	{                                                                      \
		static atomic_int said;                                        \
		return stub(#name, &said);                                     \
	}
#include "cublas_stubs.h"
#undef X
#endif
