/*
 * The slice of cuBLAS (cublas_api.h of CUDA 13) that the fake cuBLAS
 * implements, declared here so it builds without a CUDA toolkit; same
 * names and values as NVIDIA's. With VRT_HAVE_CUBLAS_H (a translation
 * unit that includes <cublas_api.h> first: protos_check_cublas.c) NVIDIA's
 * types stand instead, and the compiler checks every definition of
 * fake_cublas.c against NVIDIA's prototype.
 *
 * Pure declarations: no state, safe to include anywhere (after
 * cudart_api.h).
 */
#ifndef VRT_TEST_CUBLAS_API_H
#define VRT_TEST_CUBLAS_API_H

#ifndef VRT_HAVE_CUBLAS_H
typedef enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_ALLOC_FAILED = 3,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_ARCH_MISMATCH = 8,
	CUBLAS_STATUS_MAPPING_ERROR = 11,
	CUBLAS_STATUS_EXECUTION_FAILED = 13,
	CUBLAS_STATUS_INTERNAL_ERROR = 14,
	CUBLAS_STATUS_NOT_SUPPORTED = 15,
	CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

typedef enum {
	CUBLAS_OP_N = 0,
	CUBLAS_OP_T = 1,
	CUBLAS_OP_C = 2,
	CUBLAS_OP_CONJG = 3
} cublasOperation_t;
typedef enum {
	CUBLAS_POINTER_MODE_HOST = 0,
	CUBLAS_POINTER_MODE_DEVICE = 1
} cublasPointerMode_t;
typedef enum {
	CUBLAS_ATOMICS_NOT_ALLOWED = 0,
	CUBLAS_ATOMICS_ALLOWED = 1
} cublasAtomicsMode_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0 } cublasMath_t;
typedef enum { CUBLAS_COMPUTE_16F = 64 } cublasComputeType_t;
typedef enum cudaDataType_t { CUDA_R_32F = 0 } cudaDataType;
typedef enum libraryPropertyType_t {
	MAJOR_VERSION,
	MINOR_VERSION,
	PATCH_LEVEL
} libraryPropertyType;
typedef struct {
	unsigned short x;
} __half;

struct cublasContext;
typedef struct cublasContext *cublasHandle_t;
#endif /* VRT_HAVE_CUBLAS_H */

#endif /* VRT_TEST_CUBLAS_API_H */
