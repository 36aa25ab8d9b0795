/*
 * The structures the fake runtime shares with programs, field by field:
 * S(tag) for each structure's size, F(tag, field) for each field's
 * offset, in declaration order. layout_ours.c expands the list over
 * cudart_api.h, layout_theirs.c over NVIDIA's headers, and layout_check.c
 * compares the two (built only where a CUDA toolkit is present).
 */
#ifndef VRT_TEST_CUDART_LAYOUT_H
#define VRT_TEST_CUDART_LAYOUT_H

#include <stddef.h>

#define VRT_CUDART_LAYOUT(S, F) \
	S(cudaDeviceProp) \
	F(cudaDeviceProp, name) \
	F(cudaDeviceProp, uuid) \
	F(cudaDeviceProp, luid) \
	F(cudaDeviceProp, luidDeviceNodeMask) \
	F(cudaDeviceProp, totalGlobalMem) \
	F(cudaDeviceProp, sharedMemPerBlock) \
	F(cudaDeviceProp, regsPerBlock) \
	F(cudaDeviceProp, warpSize) \
	F(cudaDeviceProp, memPitch) \
	F(cudaDeviceProp, maxThreadsPerBlock) \
	F(cudaDeviceProp, maxThreadsDim) \
	F(cudaDeviceProp, maxGridSize) \
	F(cudaDeviceProp, totalConstMem) \
	F(cudaDeviceProp, major) \
	F(cudaDeviceProp, minor) \
	F(cudaDeviceProp, textureAlignment) \
	F(cudaDeviceProp, texturePitchAlignment) \
	F(cudaDeviceProp, multiProcessorCount) \
	F(cudaDeviceProp, integrated) \
	F(cudaDeviceProp, canMapHostMemory) \
	F(cudaDeviceProp, maxTexture1D) \
	F(cudaDeviceProp, maxTexture1DMipmap) \
	F(cudaDeviceProp, maxTexture2D) \
	F(cudaDeviceProp, maxTexture2DMipmap) \
	F(cudaDeviceProp, maxTexture2DLinear) \
	F(cudaDeviceProp, maxTexture2DGather) \
	F(cudaDeviceProp, maxTexture3D) \
	F(cudaDeviceProp, maxTexture3DAlt) \
	F(cudaDeviceProp, maxTextureCubemap) \
	F(cudaDeviceProp, maxTexture1DLayered) \
	F(cudaDeviceProp, maxTexture2DLayered) \
	F(cudaDeviceProp, maxTextureCubemapLayered) \
	F(cudaDeviceProp, maxSurface1D) \
	F(cudaDeviceProp, maxSurface2D) \
	F(cudaDeviceProp, maxSurface3D) \
	F(cudaDeviceProp, maxSurface1DLayered) \
	F(cudaDeviceProp, maxSurface2DLayered) \
	F(cudaDeviceProp, maxSurfaceCubemap) \
	F(cudaDeviceProp, maxSurfaceCubemapLayered) \
	F(cudaDeviceProp, surfaceAlignment) \
	F(cudaDeviceProp, concurrentKernels) \
	F(cudaDeviceProp, ECCEnabled) \
	F(cudaDeviceProp, pciBusID) \
	F(cudaDeviceProp, pciDeviceID) \
	F(cudaDeviceProp, pciDomainID) \
	F(cudaDeviceProp, tccDriver) \
	F(cudaDeviceProp, asyncEngineCount) \
	F(cudaDeviceProp, unifiedAddressing) \
	F(cudaDeviceProp, memoryBusWidth) \
	F(cudaDeviceProp, l2CacheSize) \
	F(cudaDeviceProp, persistingL2CacheMaxSize) \
	F(cudaDeviceProp, maxThreadsPerMultiProcessor) \
	F(cudaDeviceProp, streamPrioritiesSupported) \
	F(cudaDeviceProp, globalL1CacheSupported) \
	F(cudaDeviceProp, localL1CacheSupported) \
	F(cudaDeviceProp, sharedMemPerMultiprocessor) \
	F(cudaDeviceProp, regsPerMultiprocessor) \
	F(cudaDeviceProp, managedMemory) \
	F(cudaDeviceProp, isMultiGpuBoard) \
	F(cudaDeviceProp, multiGpuBoardGroupID) \
	F(cudaDeviceProp, hostNativeAtomicSupported) \
	F(cudaDeviceProp, pageableMemoryAccess) \
	F(cudaDeviceProp, concurrentManagedAccess) \
	F(cudaDeviceProp, computePreemptionSupported) \
	F(cudaDeviceProp, canUseHostPointerForRegisteredMem) \
	F(cudaDeviceProp, cooperativeLaunch) \
	F(cudaDeviceProp, sharedMemPerBlockOptin) \
	F(cudaDeviceProp, pageableMemoryAccessUsesHostPageTables) \
	F(cudaDeviceProp, directManagedMemAccessFromHost) \
	F(cudaDeviceProp, maxBlocksPerMultiProcessor) \
	F(cudaDeviceProp, accessPolicyMaxWindowSize) \
	F(cudaDeviceProp, reservedSharedMemPerBlock) \
	F(cudaDeviceProp, hostRegisterSupported) \
	F(cudaDeviceProp, sparseCudaArraySupported) \
	F(cudaDeviceProp, hostRegisterReadOnlySupported) \
	F(cudaDeviceProp, timelineSemaphoreInteropSupported) \
	F(cudaDeviceProp, memoryPoolsSupported) \
	F(cudaDeviceProp, gpuDirectRDMASupported) \
	F(cudaDeviceProp, gpuDirectRDMAFlushWritesOptions) \
	F(cudaDeviceProp, gpuDirectRDMAWritesOrdering) \
	F(cudaDeviceProp, memoryPoolSupportedHandleTypes) \
	F(cudaDeviceProp, deferredMappingCudaArraySupported) \
	F(cudaDeviceProp, ipcEventSupported) \
	F(cudaDeviceProp, clusterLaunch) \
	F(cudaDeviceProp, unifiedFunctionPointers) \
	F(cudaDeviceProp, deviceNumaConfig) \
	F(cudaDeviceProp, deviceNumaId) \
	F(cudaDeviceProp, mpsEnabled) \
	F(cudaDeviceProp, hostNumaId) \
	F(cudaDeviceProp, gpuPciDeviceID) \
	F(cudaDeviceProp, gpuPciSubsystemID) \
	F(cudaDeviceProp, hostNumaMultinodeIpcSupported) \
	F(cudaDeviceProp, reserved) \
	S(cudaFuncAttributes) \
	F(cudaFuncAttributes, sharedSizeBytes) \
	F(cudaFuncAttributes, constSizeBytes) \
	F(cudaFuncAttributes, localSizeBytes) \
	F(cudaFuncAttributes, maxThreadsPerBlock) \
	F(cudaFuncAttributes, numRegs) \
	F(cudaFuncAttributes, ptxVersion) \
	F(cudaFuncAttributes, binaryVersion) \
	F(cudaFuncAttributes, cacheModeCA) \
	F(cudaFuncAttributes, maxDynamicSharedSizeBytes) \
	F(cudaFuncAttributes, preferredShmemCarveout) \
	F(cudaFuncAttributes, clusterDimMustBeSet) \
	F(cudaFuncAttributes, requiredClusterWidth) \
	F(cudaFuncAttributes, requiredClusterHeight) \
	F(cudaFuncAttributes, requiredClusterDepth) \
	F(cudaFuncAttributes, clusterSchedulingPolicyPreference) \
	F(cudaFuncAttributes, nonPortableClusterSizeAllowed) \
	F(cudaFuncAttributes, reserved) \
	S(cudaPointerAttributes) \
	F(cudaPointerAttributes, type) \
	F(cudaPointerAttributes, device) \
	F(cudaPointerAttributes, devicePointer) \
	F(cudaPointerAttributes, hostPointer) \
	F(cudaPointerAttributes, reserved) \
	S(cudaKernelNodeParams) \
	F(cudaKernelNodeParams, func) \
	F(cudaKernelNodeParams, gridDim) \
	F(cudaKernelNodeParams, blockDim) \
	F(cudaKernelNodeParams, sharedMemBytes) \
	F(cudaKernelNodeParams, kernelParams) \
	F(cudaKernelNodeParams, extra) \
	S(cudaMemsetParams) \
	F(cudaMemsetParams, dst) \
	F(cudaMemsetParams, pitch) \
	F(cudaMemsetParams, value) \
	F(cudaMemsetParams, elementSize) \
	F(cudaMemsetParams, width) \
	F(cudaMemsetParams, height) \
	S(cudaHostNodeParams) \
	F(cudaHostNodeParams, fn) \
	F(cudaHostNodeParams, userData) \
	S(cudaMemPoolProps) \
	F(cudaMemPoolProps, allocType) \
	F(cudaMemPoolProps, handleTypes) \
	F(cudaMemPoolProps, location) \
	F(cudaMemPoolProps, win32SecurityAttributes) \
	F(cudaMemPoolProps, maxSize) \
	F(cudaMemPoolProps, usage) \
	F(cudaMemPoolProps, reserved) \
	S(cudaMemLocation) \
	F(cudaMemLocation, type) \
	F(cudaMemLocation, id) \
	S(cudaMemAccessDesc) \
	F(cudaMemAccessDesc, location) \
	F(cudaMemAccessDesc, flags) \
	S(cudaGraphExecUpdateResultInfo_st) \
	F(cudaGraphExecUpdateResultInfo_st, result) \
	F(cudaGraphExecUpdateResultInfo_st, errorNode) \
	F(cudaGraphExecUpdateResultInfo_st, errorFromNode) \
	S(cudaLaunchConfig_st) \
	F(cudaLaunchConfig_st, gridDim) \
	F(cudaLaunchConfig_st, blockDim) \
	F(cudaLaunchConfig_st, dynamicSmemBytes) \
	F(cudaLaunchConfig_st, stream) \
	F(cudaLaunchConfig_st, attrs) \
	F(cudaLaunchConfig_st, numAttrs) \
	S(cudaChannelFormatDesc) \
	F(cudaChannelFormatDesc, x) \
	F(cudaChannelFormatDesc, y) \
	F(cudaChannelFormatDesc, z) \
	F(cudaChannelFormatDesc, w) \
	F(cudaChannelFormatDesc, f)

/* Fills out[] with the list's sizes and offsets, in its order; returns
 * their number. */
size_t vrt_cudart_layout_ours(size_t *out, const char **names);
size_t vrt_cudart_layout_theirs(size_t *out);

#endif /* VRT_TEST_CUDART_LAYOUT_H */
