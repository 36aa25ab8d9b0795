/*
 * The slice of the CUDA runtime API (cuda_runtime_api.h, driver_types.h,
 * crt/host_runtime.h of CUDA 13) that the fake runtime implements,
 * declared here so the fake builds without a CUDA toolkit. Types carry the
 * same names, tags, fields and values as NVIDIA's headers. Where a toolkit
 * is present the fake is compiled a second time against them (see
 * meson.build: VRT_HAVE_CUDA_RUNTIME_H with <cuda_runtime_api.h> included
 * first), so the compiler checks every definition in fake_cudart.c against
 * NVIDIA's prototype, and layout_check.c compares the structures' layouts.
 *
 * Pure declarations: no state, safe to include anywhere (after cuda_api.h,
 * whose CUuuid this reuses as cudaUUID_t, as driver_types.h does).
 */
#ifndef VRT_TEST_CUDART_API_H
#define VRT_TEST_CUDART_API_H

#include <stddef.h>

#ifndef VRT_HAVE_CUDA_RUNTIME_H
/* Every code the fake returns or names (driver_types.h, enum cudaError);
 * cudaGetErrorName knows them all (fake_cudart.c, g_errors). */
typedef enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3,
	cudaErrorInvalidConfiguration = 9,
	cudaErrorMissingConfiguration = 52,
	cudaErrorInvalidSymbol = 13,
	cudaErrorInvalidMemcpyDirection = 21,
	cudaErrorInsufficientDriver = 35,
	cudaErrorInvalidDeviceFunction = 98,
	cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101,
	cudaErrorDeviceUninitialized = 201,
	cudaErrorUnsupportedLimit = 215,
	cudaErrorPeerAccessUnsupported = 217,
	cudaErrorInvalidResourceHandle = 400,
	cudaErrorIllegalState = 401,
	cudaErrorSymbolNotFound = 500,
	cudaErrorNotReady = 600,
	cudaErrorPeerAccessAlreadyEnabled = 704,
	cudaErrorPeerAccessNotEnabled = 705,
	cudaErrorNotSupported = 801,
	cudaErrorStreamCaptureUnsupported = 900,
	cudaErrorStreamCaptureInvalidated = 901,
	cudaErrorStreamCaptureUnmatched = 903,
	cudaErrorStreamCaptureWrongThread = 908,
	cudaErrorGraphExecUpdateFailure = 910,
	cudaErrorUnknown = 999
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef struct CUkern_st *cudaKernel_t;
typedef struct CUfunc_st *cudaFunction_t;
typedef struct CUuuid_st cudaUUID_t;
typedef struct cudaGraphEdgeData_st cudaGraphEdgeData; /* opaque here */
typedef struct cudaLaunchAttribute_st cudaLaunchAttribute; /* opaque */

struct dim3 {
	unsigned int x, y, z;
};
typedef struct dim3 dim3;
struct uint3 {
	unsigned int x, y, z;
};
typedef struct uint3 uint3;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4
};
enum cudaMemoryType {
	cudaMemoryTypeUnregistered = 0,
	cudaMemoryTypeHost = 1,
	cudaMemoryTypeDevice = 2,
	cudaMemoryTypeManaged = 3
};
enum cudaStreamCaptureMode {
	cudaStreamCaptureModeGlobal = 0,
	cudaStreamCaptureModeThreadLocal = 1,
	cudaStreamCaptureModeRelaxed = 2
};
enum cudaStreamCaptureStatus {
	cudaStreamCaptureStatusNone = 0,
	cudaStreamCaptureStatusActive = 1,
	cudaStreamCaptureStatusInvalidated = 2
};
enum cudaGraphNodeType {
	cudaGraphNodeTypeKernel = 0x00,
	cudaGraphNodeTypeMemcpy = 0x01,
	cudaGraphNodeTypeMemset = 0x02,
	cudaGraphNodeTypeHost = 0x03,
	cudaGraphNodeTypeEmpty = 0x05,
	cudaGraphNodeTypeMemAlloc = 0x0a,
	cudaGraphNodeTypeMemFree = 0x0b
};
enum cudaGraphExecUpdateResult {
	cudaGraphExecUpdateSuccess = 0x0,
	cudaGraphExecUpdateError = 0x1,
	cudaGraphExecUpdateErrorTopologyChanged = 0x2,
	cudaGraphExecUpdateErrorNodeTypeChanged = 0x3
};
enum cudaFuncAttribute {
	cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
	cudaFuncAttributePreferredSharedMemoryCarveout = 9,
	cudaFuncAttributeClusterDimMustBeSet = 10,
	cudaFuncAttributeRequiredClusterWidth = 11,
	cudaFuncAttributeRequiredClusterHeight = 12,
	cudaFuncAttributeRequiredClusterDepth = 13,
	cudaFuncAttributeNonPortableClusterSizeAllowed = 14,
	cudaFuncAttributeClusterSchedulingPolicyPreference = 15,
	cudaFuncAttributeMax
};
enum cudaFuncCache { cudaFuncCachePreferNone = 0 };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault = 0 };
enum cudaLimit {
	cudaLimitStackSize = 0x00,
	cudaLimitPrintfFifoSize = 0x01,
	cudaLimitMallocHeapSize = 0x02,
	cudaLimitDevRuntimeSyncDepth = 0x03,
	cudaLimitDevRuntimePendingLaunchCount = 0x04,
	cudaLimitMaxL2FetchGranularity = 0x05,
	cudaLimitPersistingL2CacheSize = 0x06
};
/* Same numbers as the driver's CUdevice_attribute. */
enum cudaDeviceAttr { cudaDevAttrMaxThreadsPerBlock = 1 };
/* Same numbers as the driver's CUmemPool_attribute. */
enum cudaMemPoolAttr { cudaMemPoolAttrReleaseThreshold = 0x4 };
enum cudaDriverEntryPointQueryResult {
	cudaDriverEntryPointSuccess = 0,
	cudaDriverEntryPointSymbolNotFound = 1,
	cudaDriverEntryPointVersionNotSufficent = 2
};
enum cudaMemoryAdvise { cudaMemAdviseSetReadMostly = 1 };
enum cudaChannelFormatKind { cudaChannelFormatKindSigned = 0 };
enum cudaMemAllocationType { cudaMemAllocationTypePinned = 0x1 };
enum cudaMemAllocationHandleType { cudaMemHandleTypeNone = 0x0 };
enum cudaMemLocationType {
	cudaMemLocationTypeInvalid = 0,
	cudaMemLocationTypeDevice = 1,
	cudaMemLocationTypeHost = 2
};
enum cudaMemAccessFlags { cudaMemAccessFlagsProtNone = 0 };

typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status,
                                     void *userData);

struct cudaDeviceProp {
	char name[256];
	cudaUUID_t uuid;
	char luid[8];
	unsigned int luidDeviceNodeMask;
	size_t totalGlobalMem;
	size_t sharedMemPerBlock;
	int regsPerBlock;
	int warpSize;
	size_t memPitch;
	int maxThreadsPerBlock;
	int maxThreadsDim[3];
	int maxGridSize[3];
	size_t totalConstMem;
	int major;
	int minor;
	size_t textureAlignment;
	size_t texturePitchAlignment;
	int multiProcessorCount;
	int integrated;
	int canMapHostMemory;
	int maxTexture1D;
	int maxTexture1DMipmap;
	int maxTexture2D[2];
	int maxTexture2DMipmap[2];
	int maxTexture2DLinear[3];
	int maxTexture2DGather[2];
	int maxTexture3D[3];
	int maxTexture3DAlt[3];
	int maxTextureCubemap;
	int maxTexture1DLayered[2];
	int maxTexture2DLayered[3];
	int maxTextureCubemapLayered[2];
	int maxSurface1D;
	int maxSurface2D[2];
	int maxSurface3D[3];
	int maxSurface1DLayered[2];
	int maxSurface2DLayered[3];
	int maxSurfaceCubemap;
	int maxSurfaceCubemapLayered[2];
	size_t surfaceAlignment;
	int concurrentKernels;
	int ECCEnabled;
	int pciBusID;
	int pciDeviceID;
	int pciDomainID;
	int tccDriver;
	int asyncEngineCount;
	int unifiedAddressing;
	int memoryBusWidth;
	int l2CacheSize;
	int persistingL2CacheMaxSize;
	int maxThreadsPerMultiProcessor;
	int streamPrioritiesSupported;
	int globalL1CacheSupported;
	int localL1CacheSupported;
	size_t sharedMemPerMultiprocessor;
	int regsPerMultiprocessor;
	int managedMemory;
	int isMultiGpuBoard;
	int multiGpuBoardGroupID;
	int hostNativeAtomicSupported;
	int pageableMemoryAccess;
	int concurrentManagedAccess;
	int computePreemptionSupported;
	int canUseHostPointerForRegisteredMem;
	int cooperativeLaunch;
	size_t sharedMemPerBlockOptin;
	int pageableMemoryAccessUsesHostPageTables;
	int directManagedMemAccessFromHost;
	int maxBlocksPerMultiProcessor;
	int accessPolicyMaxWindowSize;
	size_t reservedSharedMemPerBlock;
	int hostRegisterSupported;
	int sparseCudaArraySupported;
	int hostRegisterReadOnlySupported;
	int timelineSemaphoreInteropSupported;
	int memoryPoolsSupported;
	int gpuDirectRDMASupported;
	unsigned int gpuDirectRDMAFlushWritesOptions;
	int gpuDirectRDMAWritesOrdering;
	unsigned int memoryPoolSupportedHandleTypes;
	int deferredMappingCudaArraySupported;
	int ipcEventSupported;
	int clusterLaunch;
	int unifiedFunctionPointers;
	int deviceNumaConfig;
	int deviceNumaId;
	int mpsEnabled;
	int hostNumaId;
	unsigned int gpuPciDeviceID;
	unsigned int gpuPciSubsystemID;
	int hostNumaMultinodeIpcSupported;
	int reserved[56];
};

struct cudaFuncAttributes {
	size_t sharedSizeBytes;
	size_t constSizeBytes;
	size_t localSizeBytes;
	int maxThreadsPerBlock;
	int numRegs;
	int ptxVersion;
	int binaryVersion;
	int cacheModeCA;
	int maxDynamicSharedSizeBytes;
	int preferredShmemCarveout;
	int clusterDimMustBeSet;
	int requiredClusterWidth;
	int requiredClusterHeight;
	int requiredClusterDepth;
	int clusterSchedulingPolicyPreference;
	int nonPortableClusterSizeAllowed;
	int reserved[16];
};

struct cudaPointerAttributes {
	enum cudaMemoryType type;
	int device;
	void *devicePointer;
	void *hostPointer;
	long reserved[8];
};

struct cudaKernelNodeParams {
	void *func;
	dim3 gridDim;
	dim3 blockDim;
	unsigned int sharedMemBytes;
	void **kernelParams;
	void **extra;
};

struct cudaMemsetParams {
	void *dst;
	size_t pitch;
	unsigned int value;
	unsigned int elementSize;
	size_t width;
	size_t height;
};

struct cudaHostNodeParams {
	cudaHostFn_t fn;
	void *userData;
};

struct cudaMemLocation {
	enum cudaMemLocationType type;
	int id;
};

struct cudaMemPoolProps {
	enum cudaMemAllocationType allocType;
	enum cudaMemAllocationHandleType handleTypes;
	struct cudaMemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
};

struct cudaMemAccessDesc {
	struct cudaMemLocation location;
	enum cudaMemAccessFlags flags;
};

typedef struct cudaGraphExecUpdateResultInfo_st {
	enum cudaGraphExecUpdateResult result;
	cudaGraphNode_t errorNode;
	cudaGraphNode_t errorFromNode;
} cudaGraphExecUpdateResultInfo;

typedef struct cudaLaunchConfig_st {
	dim3 gridDim;
	dim3 blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
} cudaLaunchConfig_t;

struct cudaChannelFormatDesc {
	int x;
	int y;
	int z;
	int w;
	enum cudaChannelFormatKind f;
};

/* Special stream handles, as driver_types.h defines them. */
#define cudaStreamLegacy    ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

/* What the fake cuBLAS calls (fake_cudart.c defines every function of the
 * runtime it implements without a prototype here: NVIDIA's header is the
 * prototype, checked by protos_check.c). */
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
                                   int device);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
#endif /* VRT_HAVE_CUDA_RUNTIME_H */

/* What nvcc's generated host code calls (crt/host_runtime.h and
 * crt/device_functions.h declare these for C++ only). */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaUnregisterFatBinary(void **fatCubinHandle);
void __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
                       char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global);
void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                              char *deviceAddress, const char *deviceName,
                              int ext, size_t size, int constant, int global);
char __cudaInitModule(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                            char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                     size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                       size_t *sharedMem, void *stream);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
                               dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim,
                                    dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream);

#endif /* VRT_TEST_CUDART_API_H */
