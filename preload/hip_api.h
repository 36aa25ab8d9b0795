/*
 * The slice of the HIP runtime API (libamdhip64) that vramtrace hooks or
 * calls, declared here so the build needs no ROCm. Names, tags and values
 * are hip_runtime_api.h's; a translation unit that includes the real
 * header first (with VRT_HAVE_HIP_H defined) gets only the prototypes, and
 * the compiler checks them against AMD's.
 *
 * hipMemAllocationProp changed layout between HIP 5 and HIP 6 (the
 * location moved from offset 4 to offset 8); vrt_hip_prop_device() reads
 * either. The struct declared here is HIP 6's.
 *
 * Pure declarations and one inline reader: no state, safe anywhere.
 */
#ifndef VRT_HIP_API_H
#define VRT_HIP_API_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef VRT_HAVE_HIP_H
typedef enum hipError_t {
	hipSuccess = 0,
	hipErrorInvalidValue = 1,
	hipErrorOutOfMemory = 2,
	hipErrorMemoryAllocation = 2,
	hipErrorNotInitialized = 3,
	hipErrorDeinitialized = 4,
	hipErrorInvalidDevicePointer = 17,
	hipErrorNoDevice = 100,
	hipErrorInvalidDevice = 101,
	hipErrorInvalidContext = 201,
	hipErrorInvalidHandle = 400,
	hipErrorNotFound = 500,
	hipErrorHostMemoryAlreadyRegistered = 712,
	hipErrorHostMemoryNotRegistered = 713,
	hipErrorNotSupported = 801,
	hipErrorUnknown = 999,
} hipError_t;

typedef int hipDevice_t;
typedef void *hipDeviceptr_t;
typedef struct ihipStream_t *hipStream_t;
typedef struct ihipMemPoolHandle_t *hipMemPool_t;
typedef struct ihipMemGenericAllocationHandle *hipMemGenericAllocationHandle_t;
typedef struct hipUUID_t {
	char bytes[16];
} hipUUID;

typedef enum hipMemLocationType {
	hipMemLocationTypeInvalid = 0,
	hipMemLocationTypeDevice = 1
} hipMemLocationType;
typedef struct hipMemLocation {
	hipMemLocationType type;
	int id;
} hipMemLocation;
typedef enum hipMemAllocationType {
	hipMemAllocationTypeInvalid = 0,
	hipMemAllocationTypePinned = 1,
	hipMemAllocationTypeMax = 0x7FFFFFFF
} hipMemAllocationType;
typedef enum hipMemAllocationHandleType {
	hipMemHandleTypeNone = 0,
	hipMemHandleTypePosixFileDescriptor = 1
} hipMemAllocationHandleType;
/* HIP 6 layout (HIP 5: compressionType, location, requestedHandleType,
 * type, usage, win32HandleMetaData). */
typedef struct hipMemAllocationProp {
	hipMemAllocationType type;
	hipMemAllocationHandleType requestedHandleType;
	hipMemLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
	} allocFlags;
} hipMemAllocationProp;
typedef struct hipMemPoolProps {
	hipMemAllocationType allocType;
	hipMemAllocationHandleType handleTypes;
	hipMemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned char reserved[56];
} hipMemPoolProps;
/* Only the attribute vramtrace asks for. */
typedef enum hipPointer_attribute {
	HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
} hipPointer_attribute;
typedef enum hipDriverProcAddressQueryResult {
	HIP_GET_PROC_ADDRESS_SUCCESS = 0,
	HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
	HIP_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} hipDriverProcAddressQueryResult;
#endif /* VRT_HAVE_HIP_H */

/* hipGetProcAddress flags */
#define VRT_HIP_GET_PROC_ADDRESS_DEFAULT                   0
#define VRT_HIP_GET_PROC_ADDRESS_LEGACY_STREAM             1
#define VRT_HIP_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM 2

/*
 * The device a hipMemCreate prop names, or -1 when it names none. Both
 * layouts start with 32-bit fields:
 *   HIP 5: u32[1] location.type, u32[2] location.id, u32[4] type
 *   HIP 6: u32[0] type, u32[2] location.type, u32[3] location.id
 * A valid prop has type Pinned (1) and location type Device (1). HIP 5's
 * is recognised first: reading it as HIP 6 would need the low half of the
 * HIP 6 win32HandleMetaData pointer to be 1, which never happens, while a
 * HIP 5 prop with compressionType 1 on device 1 would pass the HIP 6
 * test. Both structs are at least 24 bytes, so the reads stay inside.
 */
static inline int vrt_hip_prop_device(const void *prop)
{
	uint32_t w[5];
	if (!prop)
		return -1;
	memcpy(w, prop, sizeof(w));
	if (w[1] == hipMemLocationTypeDevice &&
	    w[4] == hipMemAllocationTypePinned)
		return (int)w[2];
	if (w[0] == hipMemAllocationTypePinned &&
	    w[2] == hipMemLocationTypeDevice)
		return (int)w[3];
	return -1;
}

/* ---- hooked (recorded) ---------------------------------------------- */
hipError_t hipMalloc(void **ptr, size_t size);
hipError_t hipExtMallocWithFlags(void **ptr, size_t sizeBytes,
                                 unsigned int flags);
hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width,
                          size_t height);
hipError_t hipFree(void *ptr);
hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream);
hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size,
                                  hipMemPool_t mem_pool, hipStream_t stream);
hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream);
hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment,
                                void *addr, unsigned long long flags);
hipError_t hipMemAddressFree(void *devPtr, size_t size);
hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                        const hipMemAllocationProp *prop,
                        unsigned long long flags);
hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle);
hipError_t hipMemMap(void *ptr, size_t size, size_t offset,
                     hipMemGenericAllocationHandle_t handle,
                     unsigned long long flags);
hipError_t hipMemUnmap(void *ptr, size_t size);
hipError_t hipMallocManaged(void **dev_ptr, size_t size, unsigned int flags);
hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags);
hipError_t hipMallocHost(void **ptr, size_t size);
hipError_t hipHostFree(void *ptr);
hipError_t hipFreeHost(void *ptr);
hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags);
hipError_t hipHostUnregister(void *hostPtr);
hipError_t hipMemGetInfo(size_t *free, size_t *total);

/* ---- resolvers (wrapped, not recorded; HIP 6.2 and later) ----------- */
hipError_t hipGetProcAddress(const char *symbol, void **pfn, int hipVersion,
                             uint64_t flags,
                             hipDriverProcAddressQueryResult *symbolStatus);
hipError_t hipGetProcAddress_spt(const char *symbol, void **pfn, int hipVersion,
                                 uint64_t flags,
                                 hipDriverProcAddressQueryResult *symbolStatus);

/* ---- called by vramtrace for context (not hooked) ------------------- */
hipError_t hipInit(unsigned int flags);
hipError_t hipDriverGetVersion(int *driverVersion);
hipError_t hipRuntimeGetVersion(int *runtimeVersion);
hipError_t hipGetDeviceCount(int *count);
hipError_t hipGetDevice(int *deviceId);
hipError_t hipSetDevice(int deviceId);
hipError_t hipDeviceGet(hipDevice_t *device, int ordinal);
hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device);
hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device);
hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device);
/* HIP 5.0 and later. */
hipError_t hipPointerGetAttribute(void *data, hipPointer_attribute attribute,
                                  hipDeviceptr_t ptr);

#endif /* VRT_HIP_API_H */
