/*
 * The CUDA driver calls that the fake driver and the test clients need
 * beyond preload/cuda_api.h (which lists only what vramtrace itself hooks
 * or calls). Same names, tags and values as cuda.h, declared here so the
 * tests build without a CUDA toolkit. Include after "cuda_api.h".
 *
 * Pure declarations: no state, safe to include anywhere.
 */
#ifndef VRT_TEST_CUDA_API_EXT_H
#define VRT_TEST_CUDA_API_EXT_H

#include "cuda_api.h"

/* Codes the fake returns that cuda_api.h does not name. */
#define FAKECUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ((CUresult)712)
#define FAKECUDA_ERROR_HOST_MEMORY_NOT_REGISTERED     ((CUresult)713)

/* Special stream handles, as cuda.h defines them. */
#define FAKECUDA_STREAM_LEGACY     ((CUstream)0x1)
#define FAKECUDA_STREAM_PER_THREAD ((CUstream)0x2)

/* cuMemAllocManaged flags */
#define FAKECUDA_MEM_ATTACH_GLOBAL 0x1

typedef enum CUmemAllocationGranularity_flags_enum {
	CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0,
	CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1
} CUmemAllocationGranularity_flags;

typedef enum CUmemAccess_flags_enum {
	CU_MEM_ACCESS_FLAGS_PROT_NONE = 0,
	CU_MEM_ACCESS_FLAGS_PROT_READ = 1,
	CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
} CUmemAccess_flags;

typedef struct CUmemAccessDesc_st {
	CUmemLocation location;
	CUmemAccess_flags flags;
} CUmemAccessDesc;

CUresult cuCtxSynchronize(void);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
CUresult cuMemPoolDestroy(CUmemoryPool pool);

typedef enum CUmemPool_attribute_enum {
	CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC,
	CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
	CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
	CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
	CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
	CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
	CU_MEMPOOL_ATTR_USED_MEM_HIGH
} CUmemPool_attribute;

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value);
CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value);
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
                        const CUmemAccessDesc *desc, size_t count);
CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                       const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option);
CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);

#endif /* VRT_TEST_CUDA_API_EXT_H */
