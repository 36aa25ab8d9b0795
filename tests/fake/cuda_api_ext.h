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

/* With VRT_HAVE_CUDA_H (a translation unit that includes cuda.h first, to
 * have the compiler check prototypes against NVIDIA's), cuda.h's types
 * stand instead of these. */
#ifndef VRT_HAVE_CUDA_H
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

#endif /* VRT_HAVE_CUDA_H */

CUresult cuCtxSynchronize(void);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev);
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev);
CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
CUresult cuMemPoolDestroy(CUmemoryPool pool);

#ifndef VRT_HAVE_CUDA_H
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
#endif

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
CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev);
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool);

/* Device attributes: the numbering of cuda.h's CUdevice_attribute (the
 * runtime's cudaDeviceAttr uses the same numbers). Only those the fake
 * and its tests name; every value from 1 to FAKECUDA_DEVICE_ATTRIBUTE_MAX
 * - 1 is a valid attribute. */
#ifndef VRT_HAVE_CUDA_H
typedef enum CUdevice_attribute_enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 102,
	CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
} CUdevice_attribute;
#endif
#define FAKECUDA_DEVICE_ATTRIBUTE_MAX 148

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                              CUdevice dev);

/* Streams (cuStreamCreate flags: 0 default, 1 CU_STREAM_NON_BLOCKING). */
CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags);
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                    int priority);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuStreamQuery(CUstream hStream);
CUresult cuStreamQuery_ptsz(CUstream hStream);
CUresult cuGetErrorName(CUresult error, const char **pStr);
CUresult cuGetErrorString(CUresult error, const char **pStr);

#endif /* VRT_TEST_CUDA_API_EXT_H */
