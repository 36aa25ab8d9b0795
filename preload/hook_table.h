/*
 * The one table of hooked functions: CUDA driver, then HIP runtime.
 *
 * X(export, base, min_version, ptsz)
 *   export       the driver's exported name; our wrapper has this name too
 *   base         the name a runtime passes to cuGetProcAddress
 *   min_version  the lowest cudaVersion for which the resolver answers
 *                base with this export (older versions answer an older
 *                ABI we do not wrap: those calls pass through untouched)
 *   ptsz         1 for the per-thread-default-stream variant, answered
 *                when the resolver is asked with flags & 2
 *
 * Every entry except the two resolvers is also a row of VRT_API_LIST in
 * trace_format.h with the same name (its id in the trace).
 */
#ifndef VRT_HOOK_TABLE_H
#define VRT_HOOK_TABLE_H

#define VRT_CUDA_HOOKS(X)                                                      \
	X(cuMemAlloc_v2, cuMemAlloc, 3020, 0)                                  \
	X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, 0)                        \
	X(cuMemFree_v2, cuMemFree, 3020, 0)                                    \
	X(cuMemAllocAsync, cuMemAllocAsync, 0, 0)                              \
	X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 0, 1)                         \
	X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 0, 0)              \
	X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 0, 1)         \
	X(cuMemFreeAsync, cuMemFreeAsync, 0, 0)                                \
	X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 0, 1)                           \
	X(cuMemAddressReserve, cuMemAddressReserve, 0, 0)                      \
	X(cuMemAddressFree, cuMemAddressFree, 0, 0)                            \
	X(cuMemCreate, cuMemCreate, 0, 0)                                      \
	X(cuMemRelease, cuMemRelease, 0, 0)                                    \
	X(cuMemMap, cuMemMap, 0, 0)                                            \
	X(cuMemUnmap, cuMemUnmap, 0, 0)                                        \
	X(cuMemAllocManaged, cuMemAllocManaged, 0, 0)                          \
	X(cuMemHostAlloc, cuMemHostAlloc, 0, 0)                                \
	X(cuMemAllocHost_v2, cuMemAllocHost, 3020, 0)                          \
	X(cuMemFreeHost, cuMemFreeHost, 0, 0)                                  \
	X(cuMemHostRegister_v2, cuMemHostRegister, 6050, 0)                    \
	X(cuMemHostUnregister, cuMemHostUnregister, 0, 0)                      \
	X(cuMemGetInfo_v2, cuMemGetInfo, 3020, 0)                              \
	X(cuGetProcAddress, cuGetProcAddress, 0, 0)                            \
	X(cuGetProcAddress_v2, cuGetProcAddress, 12000, 0)

enum vrt_hook_id {
#define VRT_X_HOOK_ENUM(exp, base, minv, ptsz) VRT_HOOK_##exp,
	VRT_CUDA_HOOKS(VRT_X_HOOK_ENUM)
#undef VRT_X_HOOK_ENUM
	        VRT_HOOK_COUNT
};

/*
 * The hooked HIP runtime functions: X(export). HIP exports plain names and
 * hipGetProcAddress answers a name with the export of that name (or its
 * "_spt" export for the per-thread default stream, which we do not wrap),
 * so one column suffices. Every entry except the two resolvers is a row of
 * VRT_API_LIST with the same name.
 */
#define VRT_HIP_HOOKS(X)                                                       \
	X(hipMalloc)                                                           \
	X(hipExtMallocWithFlags)                                               \
	X(hipMallocPitch)                                                      \
	X(hipFree)                                                             \
	X(hipMallocAsync)                                                      \
	X(hipMallocFromPoolAsync)                                              \
	X(hipFreeAsync)                                                        \
	X(hipMemAddressReserve)                                                \
	X(hipMemAddressFree)                                                   \
	X(hipMemCreate)                                                        \
	X(hipMemRelease)                                                       \
	X(hipMemMap)                                                           \
	X(hipMemUnmap)                                                         \
	X(hipMallocManaged)                                                    \
	X(hipHostMalloc)                                                       \
	X(hipMallocHost)                                                       \
	X(hipHostFree)                                                         \
	X(hipFreeHost)                                                         \
	X(hipHostRegister)                                                     \
	X(hipHostUnregister)                                                   \
	X(hipMemGetInfo)                                                       \
	X(hipGetProcAddress)                                                   \
	X(hipGetProcAddress_spt)

enum vrt_hip_hook_id {
#define VRT_X_HIP_ENUM(exp) VRT_HIP_HOOK_##exp,
	VRT_HIP_HOOKS(VRT_X_HIP_ENUM)
#undef VRT_X_HIP_ENUM
	        VRT_HIP_HOOK_COUNT
};

#endif /* VRT_HOOK_TABLE_H */
