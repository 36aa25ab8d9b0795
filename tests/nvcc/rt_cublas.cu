/*
 * rt_cublas.cu — cuBLAS GEMMs with a workspace, built by nvcc with
 * -cudart shared and -lcublas:
 *
 *   rt_cublas --case gemm --pool BYTES --out FILE
 *
 * A handle is created (cuBLAS takes its default workspace pool from the
 * device: BYTES, which run_nvcc.py knows for the card and
 * CUBLAS_WORKSPACE_CONFIG of the run, is what the program logs for it; 0:
 * no pool),
 * matrices and a workspace of the program's own are allocated, the
 * workspace is set, GEMMs of each kind run (single and half precision,
 * GemmEx, strided and pointer-array batches) on the default stream and on
 * a created one, a GEMM with a bad leading dimension is refused, and the
 * handle is destroyed (its pool goes back). Each part is a step (phase),
 * so the trace shows which allocation was cuBLAS's.
 *
 * Writes rt_common.h's log to FILE; exit status 0, 1 when a call did not
 * return what cuBLAS or the runtime returns (stderr says which), 2 usage.
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <string.h>

#include "rt_common.h"

static unsigned long long g_pool;

#define BLAS(want, api, ...)                                                   \
	blas_expect(#api, __LINE__, want, api(__VA_ARGS__))

static bool blas_expect(const char *api, int line, cublasStatus_t want,
                        cublasStatus_t got)
{
	evlog_line("call %s %d %s", api, (int)got, cublasGetStatusName(got));
	if (got != want) {
		fprintf(stderr, "line %d: %s returned %s, expected %s\n", line,
		        api, cublasGetStatusName(got), cublasGetStatusName(want));
		rt_failed = 1;
	}
	return got == want;
}

static int gemm(void)
{
	const int m = 512, n = 256, k = 1024, batch = 8;
	float *A = NULL, *B = NULL, *C = NULL, alpha = 1, beta = 0;
	__half *hA = NULL, *hB = NULL, *hC = NULL;
	void *ws = NULL, **ptrs = NULL;
	cublasHandle_t h = NULL;
	cudaStream_t s = NULL;
	int version = 0;

	OK(cudaFree, (void *)NULL);
	log_device(0);

	step("b_create");
	if (BLAS(CUBLAS_STATUS_SUCCESS, cublasCreate, &h) && g_pool)
		evlog_line("alloc device 0 %llu cublas-pool", g_pool);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasGetVersion, h, &version);
	CHECK(version >= 130000);

	step("b_matrices");
	if (OK(cudaMalloc, (void **)&A, sizeof(float) * m * k))
		logged_alloc("device", 0, sizeof(float) * m * k, A);
	if (OK(cudaMalloc, (void **)&B, sizeof(float) * k * n * batch))
		logged_alloc("device", 0, sizeof(float) * k * n * batch, B);
	if (OK(cudaMalloc, (void **)&C, sizeof(float) * m * n * batch))
		logged_alloc("device", 0, sizeof(float) * m * n * batch, C);
	if (OK(cudaMalloc, (void **)&hA, sizeof(__half) * m * k))
		logged_alloc("device", 0, sizeof(__half) * m * k, hA);
	if (OK(cudaMalloc, (void **)&hB, sizeof(__half) * k * n))
		logged_alloc("device", 0, sizeof(__half) * k * n, hB);
	if (OK(cudaMalloc, (void **)&hC, sizeof(__half) * m * n))
		logged_alloc("device", 0, sizeof(__half) * m * n, hC);
	if (OK(cudaMallocManaged, (void **)&ptrs, 3 * batch * sizeof(void *),
	       cudaMemAttachGlobal))
		logged_alloc("managed", 0, 3 * batch * sizeof(void *), ptrs);

	step("b_workspace");
	if (OK(cudaMalloc, &ws, 4 * MiB))
		logged_alloc("device", 0, 4 * MiB, ws);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSetWorkspace, h, ws, 4 * MiB);
	BLAS(CUBLAS_STATUS_INVALID_VALUE, cublasSetWorkspace, h,
	     (char *)ws + 16, MiB); /* cuBLAS wants 256-byte alignment */
	step_end();

	BLAS(CUBLAS_STATUS_SUCCESS, cublasSetMathMode, h,
	     CUBLAS_TF32_TENSOR_OP_MATH);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSgemm, h, CUBLAS_OP_N, CUBLAS_OP_N, m,
	     n, k, &alpha, A, m, B, k, &beta, C, m);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSgemm, h, CUBLAS_OP_T, CUBLAS_OP_N, m,
	     n, k, &alpha, A, k, B, k, &beta, C, m);
	__half ha = __float2half(1.0f), hb = __float2half(0.0f);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasHgemm, h, CUBLAS_OP_N, CUBLAS_OP_N, m,
	     n, k, &ha, hA, m, hB, k, &hb, hC, m);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasGemmEx, h, CUBLAS_OP_T, CUBLAS_OP_N, m,
	     n, k, &alpha, hA, CUDA_R_16F, k, hB, CUDA_R_16F, k, &beta, C,
	     CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSgemmStridedBatched, h, CUBLAS_OP_N,
	     CUBLAS_OP_N, m, n, k, &alpha, A, m, 0, B, k, (long long)k * n,
	     &beta, C, m, (long long)m * n, batch);
	for (int i = 0; i < batch && ptrs; i++) {
		ptrs[i] = A; /* host code fills the managed pointer arrays */
		ptrs[batch + i] = B + (size_t)i * k * n;
		ptrs[2 * batch + i] = C + (size_t)i * m * n;
	}
	BLAS(CUBLAS_STATUS_SUCCESS, cublasGemmBatchedEx, h, CUBLAS_OP_N,
	     CUBLAS_OP_N, m, n, k, &alpha, (const void *const *)ptrs,
	     CUDA_R_32F, m, (const void *const *)(ptrs + batch), CUDA_R_32F, k,
	     &beta, (void *const *)(ptrs + 2 * batch), CUDA_R_32F, m, batch,
	     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	/* lda smaller than the rows of A: refused. */
	BLAS(CUBLAS_STATUS_INVALID_VALUE, cublasSgemm, h, CUBLAS_OP_N,
	     CUBLAS_OP_N, m, n, k, &alpha, A, m - 1, B, k, &beta, C, m);

	OK(cudaStreamCreate, &s);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSetStream, h, s);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasSetWorkspace, h, ws, 4 * MiB);
	BLAS(CUBLAS_STATUS_SUCCESS, cublasGemmStridedBatchedEx, h, CUBLAS_OP_N,
	     CUBLAS_OP_N, m, n, k, &alpha, A, CUDA_R_32F, m, 0, B, CUDA_R_32F,
	     k, (long long)k * n, &beta, C, CUDA_R_32F, m, (long long)m * n,
	     batch, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT);
	OK(cudaStreamSynchronize, s);
	cudaStream_t got = NULL;
	BLAS(CUBLAS_STATUS_SUCCESS, cublasGetStream, h, &got);
	CHECK(got == s);

	if (BLAS(CUBLAS_STATUS_SUCCESS, cublasDestroy, h) && g_pool)
		evlog_line("free cublas-pool");
	CHECK(!strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE),
	              "CUBLAS_STATUS_INVALID_VALUE"));
	OK(cudaStreamDestroy, s);
	void *bufs[] = {A, B, C, hA, hB, hC, ws};
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (OK(cudaFree, bufs[i]))
			evlog_free(bufs[i]);
	if (OK(cudaFree, ptrs))
		evlog_free(ptrs);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct evlog_case cases[] = {{"gemm", gemm}};
	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--pool"))
			g_pool = strtoull(argv[i + 1], NULL, 10);
	return rt_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
