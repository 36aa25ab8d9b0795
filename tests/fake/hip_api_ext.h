/*
 * The HIP runtime calls that the fake runtime and the test clients need
 * beyond preload/hip_api.h (which lists only what vramtrace itself hooks or
 * calls). Same names and values as hip_runtime_api.h, declared here so the
 * tests build without ROCm. Include after "hip_api.h".
 *
 * Pure declarations: no state, safe to include anywhere.
 */
#ifndef VRT_TEST_HIP_API_EXT_H
#define VRT_TEST_HIP_API_EXT_H

#include "hip_api.h"

/* hipStreamPerThread, as hip_runtime_api.h defines it. */
#define FAKEHIP_STREAM_PER_THREAD ((hipStream_t)0x2)

/* hipMallocManaged flags */
#define FAKEHIP_MEM_ATTACH_GLOBAL 0x1
#define FAKEHIP_MEM_ATTACH_HOST   0x2

/* hipExtMallocWithFlags flags */
#define FAKEHIP_DEVICE_MALLOC_DEFAULT     0x0
#define FAKEHIP_DEVICE_MALLOC_FINEGRAINED 0x1

/* hipHostMalloc flags */
#define FAKEHIP_HOST_MALLOC_DEFAULT  0x0
#define FAKEHIP_HOST_MALLOC_PORTABLE 0x1

/* The runtime version the fake reports (HIP_VERSION of 6.2.41134). */
#define FAKEHIP_VERSION 60241134

typedef enum hipMemAllocationGranularity_flags {
	hipMemAllocationGranularityMinimum = 0,
	hipMemAllocationGranularityRecommended = 1
} hipMemAllocationGranularity_flags;

typedef enum hipMemAccessFlags {
	hipMemAccessFlagsProtNone = 0,
	hipMemAccessFlagsProtRead = 1,
	hipMemAccessFlagsProtReadWrite = 3
} hipMemAccessFlags;

typedef struct hipMemAccessDesc {
	hipMemLocation location;
	hipMemAccessFlags flags;
} hipMemAccessDesc;

/* The fake runtime's count of hipGetDevice calls so far (not a HIP
 * call; fake_hip.c). */
unsigned long fakehip_get_device_calls(void);

hipError_t hipDeviceSynchronize(void);
hipError_t hipStreamSynchronize(hipStream_t stream);
hipError_t hipStreamSynchronize_spt(hipStream_t stream);
hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *mem_pool, int device);
hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool,
                            const hipMemPoolProps *pool_props);
hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool);
hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc,
                           size_t count);
hipError_t
hipMemGetAllocationGranularity(size_t *granularity,
                               const hipMemAllocationProp *prop,
                               hipMemAllocationGranularity_flags option);
const char *hipGetErrorName(hipError_t hip_error);
const char *hipGetErrorString(hipError_t hip_error);

#endif /* VRT_TEST_HIP_API_EXT_H */
