/*
 * fake_cudart.c — a stand-in libcudart.so.13 (NVIDIA's CUDA runtime) for
 * the tests: unmodified programs built by nvcc with -cudart shared run on
 * the fake driver, no GPU needed, and the preload sees what it sees under
 * the real runtime.
 *
 * NVIDIA's own runtime cannot run on the fake driver: it needs the
 * driver's private export tables, which no fake here emulates (off limits).
 * This one is written from the documented API (cuda_runtime_api.h and
 * crt/host_runtime.h of CUDA 13; cudart_api.h declares what it uses) and
 * exports every name the real libcudart.so.13 exports, under the same
 * version node (libcudart.map).
 *
 * How it reaches the driver, as the real runtime does: dlopen
 * "libcuda.so.1", dlsym "cuGetProcAddress_v2", ask that for
 * "cuGetProcAddress" (12000), and every other entry point through the
 * pointer it got, with the versions and flags the real runtime asks with
 * (flags 2 — per-thread default stream — for the _ptsz variants). So a
 * preload that wraps the resolver wraps every memory call made here.
 *
 * What it does:
 *   - memory: every allocation goes to the driver (cudaMalloc ->
 *     cuMemAlloc_v2, cudaMallocAsync -> cuMemAllocAsync, cudaMallocHost ->
 *     cuMemHostAlloc, ...); copies and sets never touch fake device
 *     memory: they move bytes only where both ends are mapped in this
 *     process (host, pinned, registered, managed memory), else they
 *     validate and return;
 *   - devices: count, current device per thread (the primary context of
 *     each device, retained once, made current on a thread on its first
 *     call), properties built from cuDeviceGetAttribute like the real
 *     runtime's (so the card is the fake driver's FAKECUDA_CARD);
 *   - streams: the driver's (cuStreamCreate), with flags and priority
 *     kept here; events: here (host clock timestamps);
 *   - kernels: __cudaRegisterFatBinary/Function/Var register host stubs,
 *     launches (<<<>>>, cudaLaunchKernel, CUDA 13's __cudaGetKernel +
 *     __cudaLaunchKernel) check the configuration against the device and
 *     the function's attributes, then do nothing; __device__ variables get
 *     host memory of their size, so cudaMemcpyToSymbol/FromSymbol round
 *     trip;
 *   - graphs: stream capture (modes and the calls they forbid), explicit
 *     nodes (kernel, memset, memcpy, host, empty), instantiate, update,
 *     launch (host nodes run, copies and sets as above, kernels nothing);
 *     a stream-ordered allocation or free on a capturing stream reaches
 *     the driver at capture, once, as under the real runtime (the fake
 *     driver allocates then; launches reuse the graph's memory);
 *   - errors: the thread's last error, names and strings for every code;
 *   - every other export is a stub that answers cudaErrorNotSupported and
 *     says once on stderr which call it was (cudart_stubs.h).
 * FAKECUDA_DEBUG (the fake driver's variable) logs the runtime's calls to
 * stderr too.
 *
 * Threads: any thread may call anything. g_lock guards the maps (kernels,
 * variables, streams) and the capture counters; each thread has its own
 * device, last error, launch configurations and capture mode (TLS). Driver
 * set-up runs once (pthread_once). Graph objects are not locked: like the
 * real runtime, a graph is not modified from two threads at once. Nothing
 * here is async-signal-safe.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_api_ext.h"
#include "cudart_api.h"

#define RT_VERSION        13000 /* CUDART_VERSION */
#define RT_MAX_DEV        64
#define RT_MAX_CONFIGS    16 /* nested <<<>>> configurations per thread */
#define RT_KERNEL_MAGIC   0x6b65726eu
#define RT_GRAPH_MAGIC    0x67726170u
#define RT_NODE_MAGIC     0x6e6f6465u
#define RT_EXEC_MAGIC     0x65786563u
#define RT_EVENT_MAGIC    0x65766e74u
#define RT_MODULE_MAGIC   0x6d6f646cu
#define RT_DEFAULT_SMEM   49152 /* dynamic shared memory without opt-in */

/* ---- the driver, as the real runtime reaches it ------------------------ */

/* Slots [0] and [1] of a pair: the default and the per-thread-default-
 * stream (_ptsz) entry of one driver function. */
static struct driver {
	CUresult (*GetProcAddress)(const char *, void **, int, cuuint64_t,
	                           CUdriverProcAddressQueryResult *);
	CUresult (*Init)(unsigned int);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxGetCurrent)(CUcontext *);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxGetDevice)(CUdevice *);
	CUresult (*CtxSynchronize)(void);
	CUresult (*StreamCreate)(CUstream *, unsigned int);
	CUresult (*StreamCreateWithPriority)(CUstream *, unsigned int, int);
	CUresult (*StreamDestroy)(CUstream);
	CUresult (*StreamQuery[2])(CUstream);
	CUresult (*StreamSynchronize[2])(CUstream);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemAllocPitch)(CUdeviceptr *, size_t *, size_t, size_t,
	                          unsigned int);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemAllocManaged)(CUdeviceptr *, size_t, unsigned int);
	CUresult (*MemGetInfo)(size_t *, size_t *);
	CUresult (*MemAllocAsync[2])(CUdeviceptr *, size_t, CUstream);
	CUresult (*MemAllocFromPoolAsync[2])(CUdeviceptr *, size_t,
	                                     CUmemoryPool, CUstream);
	CUresult (*MemFreeAsync[2])(CUdeviceptr, CUstream);
	CUresult (*DeviceGetDefaultMemPool)(CUmemoryPool *, CUdevice);
	CUresult (*DeviceGetMemPool)(CUmemoryPool *, CUdevice);
	CUresult (*DeviceSetMemPool)(CUdevice, CUmemoryPool);
	CUresult (*MemPoolCreate)(CUmemoryPool *, const CUmemPoolProps *);
	CUresult (*MemPoolDestroy)(CUmemoryPool);
	CUresult (*MemPoolSetAttribute)(CUmemoryPool, int, void *);
	CUresult (*MemPoolGetAttribute)(CUmemoryPool, int, void *);
	CUresult (*MemPoolTrimTo)(CUmemoryPool, size_t);
	CUresult (*MemHostAlloc)(void **, size_t, unsigned int);
	CUresult (*MemFreeHost)(void *);
	CUresult (*MemHostRegister)(void *, size_t, unsigned int);
	CUresult (*MemHostUnregister)(void *);
	CUresult (*PointerGetAttribute)(void *, int, CUdeviceptr);
} D;

/* Each entry point with the version and flags libcudart 13 asks for it
 * (the versions its resolver look-ups carry; 2: per-thread default
 * stream). */
#define DRV(slot, name, version, flags)                                        \
	{name, version, flags, offsetof(struct driver, slot)}
static const struct {
	const char *name;
	int version;
	int flags;
	size_t off;
} g_entries[] = {
        DRV(Init, "cuInit", 2000, 0),
        DRV(DriverGetVersion, "cuDriverGetVersion", 2020, 0),
        DRV(DeviceGetCount, "cuDeviceGetCount", 2000, 0),
        DRV(DeviceGetName, "cuDeviceGetName", 2000, 0),
        DRV(DeviceTotalMem, "cuDeviceTotalMem", 3020, 0),
        DRV(DeviceGetUuid, "cuDeviceGetUuid", 9020, 0),
        DRV(DeviceGetAttribute, "cuDeviceGetAttribute", 2000, 0),
        DRV(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 7000, 0),
        DRV(CtxGetCurrent, "cuCtxGetCurrent", 4000, 0),
        DRV(CtxSetCurrent, "cuCtxSetCurrent", 4000, 0),
        DRV(CtxGetDevice, "cuCtxGetDevice", 2000, 0),
        DRV(CtxSynchronize, "cuCtxSynchronize", 2000, 0),
        DRV(StreamCreate, "cuStreamCreate", 2000, 0),
        DRV(StreamCreateWithPriority, "cuStreamCreateWithPriority", 5050, 0),
        DRV(StreamDestroy, "cuStreamDestroy", 4000, 0),
        DRV(StreamQuery[0], "cuStreamQuery", 2000, 0),
        DRV(StreamQuery[1], "cuStreamQuery", 7000, 2),
        DRV(StreamSynchronize[0], "cuStreamSynchronize", 2000, 0),
        DRV(StreamSynchronize[1], "cuStreamSynchronize", 7000, 2),
        DRV(MemAlloc, "cuMemAlloc", 3020, 0),
        DRV(MemAllocPitch, "cuMemAllocPitch", 3020, 0),
        DRV(MemFree, "cuMemFree", 3020, 0),
        DRV(MemAllocManaged, "cuMemAllocManaged", 6000, 0),
        DRV(MemGetInfo, "cuMemGetInfo", 3020, 0),
        DRV(MemAllocAsync[0], "cuMemAllocAsync", 11020, 0),
        DRV(MemAllocAsync[1], "cuMemAllocAsync", 11020, 2),
        DRV(MemAllocFromPoolAsync[0], "cuMemAllocFromPoolAsync", 11020, 0),
        DRV(MemAllocFromPoolAsync[1], "cuMemAllocFromPoolAsync", 11020, 2),
        DRV(MemFreeAsync[0], "cuMemFreeAsync", 11020, 0),
        DRV(MemFreeAsync[1], "cuMemFreeAsync", 11020, 2),
        DRV(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 11020, 0),
        DRV(DeviceGetMemPool, "cuDeviceGetMemPool", 11020, 0),
        DRV(DeviceSetMemPool, "cuDeviceSetMemPool", 11020, 0),
        DRV(MemPoolCreate, "cuMemPoolCreate", 11020, 0),
        DRV(MemPoolDestroy, "cuMemPoolDestroy", 11020, 0),
        DRV(MemPoolSetAttribute, "cuMemPoolSetAttribute", 11020, 0),
        DRV(MemPoolGetAttribute, "cuMemPoolGetAttribute", 11020, 0),
        DRV(MemPoolTrimTo, "cuMemPoolTrimTo", 11020, 0),
        DRV(MemHostAlloc, "cuMemHostAlloc", 2020, 0),
        DRV(MemFreeHost, "cuMemFreeHost", 2000, 0),
        DRV(MemHostRegister, "cuMemHostRegister", 6050, 0),
        DRV(MemHostUnregister, "cuMemHostUnregister", 4000, 0),
        DRV(PointerGetAttribute, "cuPointerGetAttribute", 4000, 0),
};
#undef DRV

/* ---- process and thread state ------------------------------------------ */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static cudaError_t g_init_err; /* set once by rt_setup */
static int g_ndev;
static int g_debug;
static uintptr_t g_page = 4096;
static CUcontext g_primary[RT_MAX_DEV]; /* retained on first use (g_lock) */
static unsigned g_device_flags[RT_MAX_DEV];
static unsigned long long g_peer[RT_MAX_DEV]; /* peers enabled, bitmask */
static size_t g_limits[7] = {1024, 1u << 20, 8u << 20, 2, 2048, 64, 0};
static int g_global_captures; /* captures in global mode (g_lock) */
static unsigned long long g_next_stream_id = 1, g_next_capture_id = 1;

static _Thread_local int tls_dev;
static _Thread_local cudaError_t tls_last_error;
static _Thread_local int tls_capture_mode; /* cudaStreamCaptureMode */
static _Thread_local int tls_strict_captures; /* own non-relaxed captures */
static _Thread_local struct config {
	dim3 grid, block;
	size_t smem;
	cudaStream_t stream;
} tls_configs[RT_MAX_CONFIGS];
static _Thread_local int tls_nconfigs;

static void rtlog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void rtlog(const char *fmt, ...)
{
	va_list ap;
	if (!g_debug)
		return;
	va_start(ap, fmt);
	fputs("fakecudart: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Every API call's result goes through here: an error becomes the
 * thread's last error (cudaGetLastError), as in the real runtime. */
static cudaError_t ret(cudaError_t e)
{
	if (e != cudaSuccess)
		tls_last_error = e;
	return e;
}

/* The driver's codes and the runtime's coincide for every code the fake
 * driver returns (1, 2, 3, 100, 101, 201, 400, 500, 712, 713, 801, ...):
 * the runtime's enumeration was made to match. */
static cudaError_t rt_err(CUresult r)
{
	return r == CUDA_SUCCESS ? cudaSuccess : (cudaError_t)r;
}

static void rt_setup(void)
{
	void *lib, *gpa2 = NULL;
	CUdriverProcAddressQueryResult st;
	long page = sysconf(_SC_PAGESIZE);

	g_debug = getenv("FAKECUDA_DEBUG") != NULL;
	if (page > 0)
		g_page = (uintptr_t)page;
	lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (lib)
		gpa2 = dlsym(lib, "cuGetProcAddress_v2");
	if (!gpa2) {
		rtlog("no driver: %s", lib ? "no cuGetProcAddress_v2" : dlerror());
		g_init_err = cudaErrorInsufficientDriver;
		return;
	}
	/* The resolver hands out the resolver, so that every later look-up
	 * goes through whatever answered this one (a preload, say). */
	if (((CUresult(*)(const char *, void **, int, cuuint64_t,
	                  CUdriverProcAddressQueryResult *))gpa2)(
	            "cuGetProcAddress", (void **)&D.GetProcAddress, 12000, 0,
	            &st) != CUDA_SUCCESS ||
	    !D.GetProcAddress) {
		g_init_err = cudaErrorInsufficientDriver;
		return;
	}
	for (size_t i = 0; i < sizeof(g_entries) / sizeof(g_entries[0]); i++) {
		void **slot = (void **)((char *)&D + g_entries[i].off);
		if (D.GetProcAddress(g_entries[i].name, slot,
		                     g_entries[i].version,
		                     (cuuint64_t)g_entries[i].flags,
		                     &st) != CUDA_SUCCESS ||
		    !*slot) {
			fprintf(stderr,
			        "fakecudart: the driver has no %s (%d, flags "
			        "%d)\n",
			        g_entries[i].name, g_entries[i].version,
			        g_entries[i].flags);
			g_init_err = cudaErrorInsufficientDriver;
			return;
		}
	}
	switch (D.Init(0)) {
	case CUDA_SUCCESS: break;
	case CUDA_ERROR_NO_DEVICE: g_init_err = cudaErrorNoDevice; return;
	default: g_init_err = cudaErrorInitializationError; return;
	}
	if (D.DeviceGetCount(&g_ndev) != CUDA_SUCCESS || g_ndev <= 0)
		g_init_err = cudaErrorNoDevice;
	if (g_ndev > RT_MAX_DEV)
		g_ndev = RT_MAX_DEV;
	rtlog("%d device(s)", g_ndev);
}

static cudaError_t rt_init(void)
{
	pthread_once(&g_once, rt_setup);
	return g_init_err;
}

/* Makes device dev's primary context current on this thread, retaining it
 * on its first use in the process. */
static cudaError_t use_device(int dev)
{
	CUcontext c;
	CUresult r = CUDA_SUCCESS;
	pthread_mutex_lock(&g_lock);
	if (!g_primary[dev])
		r = D.DevicePrimaryCtxRetain(&g_primary[dev], dev);
	c = g_primary[dev];
	pthread_mutex_unlock(&g_lock);
	if (r == CUDA_SUCCESS)
		r = D.CtxSetCurrent(c);
	return rt_err(r);
}

/* Before a call that needs a device: the runtime set up, and a context
 * current on this thread (one the program made current through the driver
 * API is used as it is, as the real runtime does; else the thread's
 * device's primary context). */
static cudaError_t ctx(void)
{
	CUcontext c = NULL;
	cudaError_t e = rt_init();
	if (e != cudaSuccess)
		return e;
	if (D.CtxGetCurrent(&c) == CUDA_SUCCESS && c)
		return cudaSuccess;
	return use_device(tls_dev);
}

/* The calling thread's device. */
static int cur_dev(void)
{
	CUcontext c = NULL;
	CUdevice d;
	if (D.CtxGetCurrent(&c) == CUDA_SUCCESS && c &&
	    D.CtxGetDevice(&d) == CUDA_SUCCESS)
		return d;
	return tls_dev;
}

static int attr(int dev, int a)
{
	int v = 0;
	D.DeviceGetAttribute(&v, a, dev);
	return v;
}

/* ---- a pointer-keyed map (kernels, variables, streams) ----------------- */

struct ptrmap {
	struct {
		const void *key; /* NULL: empty; &tomb: deleted */
		void *val;
	} *slot;
	size_t cap, used; /* used counts deleted slots too */
};

static const char tomb;

static size_t map_hash(const void *k, size_t cap)
{
	return (size_t)(((uintptr_t)k * 0x9E3779B97F4A7C15ull) >> 17) &
	       (cap - 1);
}

static void *map_get(const struct ptrmap *m, const void *k)
{
	if (!m->cap || !k)
		return NULL;
	for (size_t i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slot[i].key)
			return NULL;
		if (m->slot[i].key == k)
			return m->slot[i].val;
	}
}

static int map_put(struct ptrmap *m, const void *k, void *v);

static int map_grow(struct ptrmap *m)
{
	struct ptrmap n = {0};
	n.cap = m->cap ? m->cap * 2 : 256;
	n.slot = calloc(n.cap, sizeof(*n.slot));
	if (!n.slot)
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].key && m->slot[i].key != &tomb)
			map_put(&n, m->slot[i].key, m->slot[i].val);
	free(m->slot);
	*m = n;
	return 0;
}

/* Adds or replaces; -1 when out of memory. */
static int map_put(struct ptrmap *m, const void *k, void *v)
{
	size_t i;
	if ((m->used + 1) * 2 > m->cap && map_grow(m))
		return -1;
	for (i = map_hash(k, m->cap); m->slot[i].key && m->slot[i].key != k &&
	                               m->slot[i].key != &tomb;
	     i = (i + 1) & (m->cap - 1))
		;
	if (!m->slot[i].key)
		m->used++;
	m->slot[i].key = k;
	m->slot[i].val = v;
	return 0;
}

static void *map_del(struct ptrmap *m, const void *k)
{
	if (!m->cap || !k)
		return NULL;
	for (size_t i = map_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (!m->slot[i].key)
			return NULL;
		if (m->slot[i].key == k) {
			void *v = m->slot[i].val;
			m->slot[i].key = &tomb;
			return v;
		}
	}
}

static struct ptrmap g_kernels; /* host stub -> struct CUkern_st (g_lock) */
static struct ptrmap g_vars;    /* host shadow -> struct rt_var (g_lock) */
static struct ptrmap g_streams; /* handle -> struct rt_stream (g_lock) */

/* ---- errors ------------------------------------------------------------ */

/* Every code of CUDA 13's enum cudaError, with its name and a short
 * description in the real runtime's manner. */
static const struct {
	int code;
	const char *name, *text;
} g_errors[] = {
        {0, "cudaSuccess", "no error"},
        {1, "cudaErrorInvalidValue", "invalid argument"},
        {2, "cudaErrorMemoryAllocation", "out of memory"},
        {3, "cudaErrorInitializationError", "initialization error"},
        {4, "cudaErrorCudartUnloading", "driver shutting down"},
        {5, "cudaErrorProfilerDisabled", "profiler disabled"},
        {6, "cudaErrorProfilerNotInitialized", "profiler not initialized"},
        {7, "cudaErrorProfilerAlreadyStarted", "profiler already started"},
        {8, "cudaErrorProfilerAlreadyStopped", "profiler already stopped"},
        {9, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
        {12, "cudaErrorInvalidPitchValue", "invalid pitch argument"},
        {13, "cudaErrorInvalidSymbol", "invalid device symbol"},
        {16, "cudaErrorInvalidHostPointer", "invalid host pointer"},
        {17, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
        {18, "cudaErrorInvalidTexture", "invalid texture reference"},
        {19, "cudaErrorInvalidTextureBinding", "texture is not bound"},
        {20, "cudaErrorInvalidChannelDescriptor", "invalid channel descriptor"},
        {21, "cudaErrorInvalidMemcpyDirection", "invalid copy direction"},
        {22, "cudaErrorAddressOfConstant", "address of constant"},
        {23, "cudaErrorTextureFetchFailed", "texture fetch failed"},
        {24, "cudaErrorTextureNotBound", "texture not bound"},
        {25, "cudaErrorSynchronizationError", "synchronization error"},
        {26, "cudaErrorInvalidFilterSetting", "invalid filter setting"},
        {27, "cudaErrorInvalidNormSetting", "invalid norm setting"},
        {28, "cudaErrorMixedDeviceExecution", "mixed device execution"},
        {31, "cudaErrorNotYetImplemented", "feature not yet implemented"},
        {32, "cudaErrorMemoryValueTooLarge", "memory size too large"},
        {34, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
        {35, "cudaErrorInsufficientDriver",
         "CUDA driver version is insufficient for CUDA runtime version"},
        {36, "cudaErrorCallRequiresNewerDriver",
         "API call is not supported in the installed CUDA driver"},
        {37, "cudaErrorInvalidSurface", "invalid surface reference"},
        {43, "cudaErrorDuplicateVariableName", "duplicate global variable"},
        {44, "cudaErrorDuplicateTextureName", "duplicate texture name"},
        {45, "cudaErrorDuplicateSurfaceName", "duplicate surface name"},
        {46, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) busy"},
        {49, "cudaErrorIncompatibleDriverContext",
         "incompatible driver context"},
        {52, "cudaErrorMissingConfiguration", "missing configuration"},
        {53, "cudaErrorPriorLaunchFailure", "prior launch failure"},
        {65, "cudaErrorLaunchMaxDepthExceeded", "launch depth exceeded"},
        {66, "cudaErrorLaunchFileScopedTex", "file-scoped texture"},
        {67, "cudaErrorLaunchFileScopedSurf", "file-scoped surface"},
        {68, "cudaErrorSyncDepthExceeded", "sync depth exceeded"},
        {69, "cudaErrorLaunchPendingCountExceeded",
         "launch pending count exceeded"},
        {98, "cudaErrorInvalidDeviceFunction", "invalid device function"},
        {100, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
        {101, "cudaErrorInvalidDevice", "invalid device ordinal"},
        {102, "cudaErrorDeviceNotLicensed", "device not licensed"},
        {103, "cudaErrorSoftwareValidityNotEstablished",
         "integrity checks failed"},
        {127, "cudaErrorStartupFailure", "startup failure in cuda runtime"},
        {200, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
        {201, "cudaErrorDeviceUninitialized", "invalid device context"},
        {205, "cudaErrorMapBufferObjectFailed", "mapping of buffer failed"},
        {206, "cudaErrorUnmapBufferObjectFailed", "unmapping of buffer failed"},
        {207, "cudaErrorArrayIsMapped", "array is mapped"},
        {208, "cudaErrorAlreadyMapped", "resource already mapped"},
        {209, "cudaErrorNoKernelImageForDevice",
         "no kernel image is available for execution on the device"},
        {210, "cudaErrorAlreadyAcquired", "resource already acquired"},
        {211, "cudaErrorNotMapped", "resource not mapped"},
        {212, "cudaErrorNotMappedAsArray", "resource not mapped as array"},
        {213, "cudaErrorNotMappedAsPointer", "resource not mapped as pointer"},
        {214, "cudaErrorECCUncorrectable", "uncorrectable ECC error"},
        {215, "cudaErrorUnsupportedLimit", "limit is not supported"},
        {216, "cudaErrorDeviceAlreadyInUse", "exclusive device already in use"},
        {217, "cudaErrorPeerAccessUnsupported",
         "peer access is not supported between these two devices"},
        {218, "cudaErrorInvalidPtx", "a PTX JIT compilation failed"},
        {219, "cudaErrorInvalidGraphicsContext", "invalid graphics context"},
        {220, "cudaErrorNvlinkUncorrectable", "uncorrectable NVLink error"},
        {221, "cudaErrorJitCompilerNotFound", "PTX JIT compiler not found"},
        {222, "cudaErrorUnsupportedPtxVersion", "unsupported PTX version"},
        {223, "cudaErrorJitCompilationDisabled", "PTX JIT compilation disabled"},
        {224, "cudaErrorUnsupportedExecAffinity",
         "unsupported execution affinity"},
        {225, "cudaErrorUnsupportedDevSideSync",
         "unsupported device-side synchronization"},
        {226, "cudaErrorContained", "device exception contained"},
        {300, "cudaErrorInvalidSource", "device kernel source is invalid"},
        {301, "cudaErrorFileNotFound", "file not found"},
        {302, "cudaErrorSharedObjectSymbolNotFound",
         "shared object symbol not found"},
        {303, "cudaErrorSharedObjectInitFailed",
         "shared object initialization failed"},
        {304, "cudaErrorOperatingSystem", "OS call failed"},
        {400, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
        {401, "cudaErrorIllegalState", "the operation cannot be performed in "
                                       "the present state"},
        {402, "cudaErrorLossyQuery", "lossy query"},
        {500, "cudaErrorSymbolNotFound", "named symbol not found"},
        {600, "cudaErrorNotReady", "device not ready"},
        {700, "cudaErrorIllegalAddress", "an illegal memory access was "
                                         "encountered"},
        {701, "cudaErrorLaunchOutOfResources", "too many resources requested "
                                               "for launch"},
        {702, "cudaErrorLaunchTimeout", "the launch timed out"},
        {703, "cudaErrorLaunchIncompatibleTexturing",
         "incompatible texturing mode"},
        {704, "cudaErrorPeerAccessAlreadyEnabled",
         "peer access is already enabled"},
        {705, "cudaErrorPeerAccessNotEnabled", "peer access has not been "
                                               "enabled"},
        {708, "cudaErrorSetOnActiveProcess", "cannot set while device is "
                                             "active in this process"},
        {709, "cudaErrorContextIsDestroyed", "context is destroyed"},
        {710, "cudaErrorAssert", "device-side assert triggered"},
        {711, "cudaErrorTooManyPeers", "peer mapping resources exhausted"},
        {712, "cudaErrorHostMemoryAlreadyRegistered",
         "part or all of the requested memory range is already mapped"},
        {713, "cudaErrorHostMemoryNotRegistered",
         "pointer does not correspond to a registered memory region"},
        {714, "cudaErrorHardwareStackError", "hardware stack error"},
        {715, "cudaErrorIllegalInstruction", "an illegal instruction was "
                                             "encountered"},
        {716, "cudaErrorMisalignedAddress", "misaligned address"},
        {717, "cudaErrorInvalidAddressSpace", "operation not supported on "
                                              "global/shared address space"},
        {718, "cudaErrorInvalidPc", "invalid program counter"},
        {719, "cudaErrorLaunchFailure", "unspecified launch failure"},
        {720, "cudaErrorCooperativeLaunchTooLarge",
         "too many blocks in cooperative launch"},
        {721, "cudaErrorTensorMemoryLeak", "tensor memory not released"},
        {800, "cudaErrorNotPermitted", "operation not permitted"},
        {801, "cudaErrorNotSupported", "operation not supported"},
        {802, "cudaErrorSystemNotReady", "system not yet initialized"},
        {803, "cudaErrorSystemDriverMismatch",
         "system has unsupported display driver / cuda driver combination"},
        {804, "cudaErrorCompatNotSupportedOnDevice",
         "forward compatibility was attempted on non supported HW"},
        {805, "cudaErrorMpsConnectionFailed", "MPS client failed to connect "
                                              "to the MPS control daemon"},
        {806, "cudaErrorMpsRpcFailure", "MPS remote procedure call failed"},
        {807, "cudaErrorMpsServerNotReady", "MPS server is not ready"},
        {808, "cudaErrorMpsMaxClientsReached", "MPS client limit reached"},
        {809, "cudaErrorMpsMaxConnectionsReached",
         "MPS connection limit reached"},
        {810, "cudaErrorMpsClientTerminated", "MPS client terminated"},
        {811, "cudaErrorCdpNotSupported", "dynamic parallelism is not "
                                          "supported"},
        {812, "cudaErrorCdpVersionMismatch", "dynamic parallelism version "
                                             "mismatch"},
        {900, "cudaErrorStreamCaptureUnsupported",
         "operation not permitted when stream is capturing"},
        {901, "cudaErrorStreamCaptureInvalidated",
         "operation failed due to a previous error during capture"},
        {902, "cudaErrorStreamCaptureMerge", "operation would result in a "
                                             "merge of separate capture "
                                             "sequences"},
        {903, "cudaErrorStreamCaptureUnmatched", "capture was not ended in "
                                                 "the same stream as it "
                                                 "began"},
        {904, "cudaErrorStreamCaptureUnjoined", "capturing stream has "
                                                "unjoined work"},
        {905, "cudaErrorStreamCaptureIsolation", "dependency created on "
                                                 "uncaptured work in another "
                                                 "stream"},
        {906, "cudaErrorStreamCaptureImplicit", "operation would make the "
                                                "legacy stream depend on a "
                                                "capturing blocking stream"},
        {907, "cudaErrorCapturedEvent", "operation not permitted on an "
                                        "event last recorded in a capturing "
                                        "stream"},
        {908, "cudaErrorStreamCaptureWrongThread",
         "attempt to terminate a thread-local capture sequence from another "
         "thread"},
        {909, "cudaErrorTimeout", "wait operation timed out"},
        {910, "cudaErrorGraphExecUpdateFailure",
         "the graph update was not performed because it included changes "
         "which violated constraints specific to instantiated graph update"},
        {911, "cudaErrorExternalDevice", "an async error has occurred in "
                                         "external entity outside of CUDA"},
        {912, "cudaErrorInvalidClusterSize", "a kernel launch error has "
                                             "occurred due to cluster "
                                             "misconfiguration"},
        {913, "cudaErrorFunctionNotLoaded", "the function handle is not "
                                            "loaded"},
        {914, "cudaErrorInvalidResourceType", "invalid resource type"},
        {915, "cudaErrorInvalidResourceConfiguration",
         "invalid resource configuration"},
        {999, "cudaErrorUnknown", "unknown error"},
        {10000, "cudaErrorApiFailureBase", "api failure base"},
};

static int error_index(cudaError_t e)
{
	for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
		if (g_errors[i].code == (int)e)
			return (int)i;
	return -1;
}

const char *cudaGetErrorName(cudaError_t error)
{
	int i = error_index(error);
	return i < 0 ? "cudaErrorUnknown" : g_errors[i].name;
}

const char *cudaGetErrorString(cudaError_t error)
{
	int i = error_index(error);
	return i < 0 ? "unrecognized error code" : g_errors[i].text;
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = tls_last_error;
	tls_last_error = cudaSuccess;
	return e;
}

cudaError_t cudaPeekAtLastError(void)
{
	return tls_last_error;
}

/* ---- stream capture ---------------------------------------------------- */

/* What the runtime keeps of a stream: the driver's handle is the stream;
 * this is its flags, priority, id and capture. */
struct rt_stream {
	unsigned flags;
	int priority;
	int device;
	unsigned long long id;
	int capturing; /* enum cudaStreamCaptureStatus */
	int capture_mode;
	pthread_t capture_thread;
	unsigned long long capture_id;
	cudaGraph_t graph;
};

static int special_stream(cudaStream_t s)
{
	return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/* The record of a stream, made on first sight for a handle the driver
 * knows (a stream made through the driver API); NULL for the special
 * handles and for what is no stream. */
static struct rt_stream *stream_rec(cudaStream_t s)
{
	struct rt_stream *r;
	if (special_stream(s))
		return NULL;
	pthread_mutex_lock(&g_lock);
	r = map_get(&g_streams, s);
	pthread_mutex_unlock(&g_lock);
	if (r || D.StreamQuery[0](s) != CUDA_SUCCESS)
		return r;
	if (!(r = calloc(1, sizeof(*r))))
		return NULL;
	r->device = cur_dev();
	pthread_mutex_lock(&g_lock);
	r->id = g_next_stream_id++;
	if (map_put(&g_streams, s, r)) {
		free(r);
		r = NULL;
	}
	pthread_mutex_unlock(&g_lock);
	return r;
}

/* The capture a stream is in (active or invalidated), or NULL. */
static struct rt_stream *capturing(cudaStream_t s)
{
	struct rt_stream *r;
	if (special_stream(s))
		return NULL;
	pthread_mutex_lock(&g_lock);
	r = map_get(&g_streams, s);
	if (r && !r->capturing)
		r = NULL;
	pthread_mutex_unlock(&g_lock);
	return r;
}

/* "Potentially unsafe" calls (cudaMalloc, cudaFree, synchronous copies,
 * synchronizes) are refused while a capture that forbids them is going
 * on: one of this thread's own (not relaxed), or any thread's global-mode
 * one unless this thread's mode is relaxed (cudaThreadExchange-
 * StreamCaptureMode). The captures concerned are invalidated, as the real
 * runtime does. */
static cudaError_t capture_forbids(void)
{
	int hit = 0;
	if (tls_capture_mode == cudaStreamCaptureModeRelaxed)
		return cudaSuccess;
	pthread_mutex_lock(&g_lock);
	if (tls_strict_captures > 0 ||
	    (tls_capture_mode == cudaStreamCaptureModeGlobal &&
	     g_global_captures > 0)) {
		pthread_t self = pthread_self();
		hit = 1;
		for (size_t i = 0; i < g_streams.cap; i++) {
			struct rt_stream *r = g_streams.slot[i].val;
			const void *k = g_streams.slot[i].key;
			if (!k || k == &tomb || !r->capturing)
				continue;
			if (r->capture_mode == cudaStreamCaptureModeGlobal ||
			    (r->capture_mode !=
			             cudaStreamCaptureModeRelaxed &&
			     pthread_equal(r->capture_thread, self)))
				r->capturing = cudaStreamCaptureStatusInvalidated;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return hit ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
}

/* ---- memory ------------------------------------------------------------ */

/* Whether [p, p+n) is mapped in this process: then a copy or a set may
 * move bytes there. Fake device addresses are never mapped. */
static int host_mapped(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p & ~(g_page - 1);
	uintptr_t end = (uintptr_t)p + (n ? n : 1);
	if (!p || end < (uintptr_t)p)
		return 0;
	return msync((void *)a, end - a, MS_ASYNC) == 0;
}

static cudaError_t copy_2d(void *dst, size_t dpitch, const void *src,
                           size_t spitch, size_t width, size_t height,
                           int kind)
{
	if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault)
		return cudaErrorInvalidMemcpyDirection;
	if (!width || !height)
		return cudaSuccess;
	if (!dst || !src)
		return cudaErrorInvalidValue;
	if (width > dpitch || width > spitch)
		return cudaErrorInvalidValue; /* cudaErrorInvalidPitchValue */
	if (host_mapped(dst, dpitch * (height - 1) + width) &&
	    host_mapped(src, spitch * (height - 1) + width))
		for (size_t y = 0; y < height; y++)
			memmove((char *)dst + y * dpitch,
			        (const char *)src + y * spitch, width);
	return cudaSuccess;
}

static cudaError_t set_2d(void *dst, size_t pitch, int value, size_t width,
                          size_t height)
{
	if (!width || !height)
		return cudaSuccess;
	if (!dst || width > pitch)
		return cudaErrorInvalidValue;
	if (host_mapped(dst, pitch * (height - 1) + width))
		for (size_t y = 0; y < height; y++)
			memset((char *)dst + y * pitch, value, width);
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	CUdeviceptr p = 0;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !devPtr)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess)
		return ret(e);
	*devPtr = NULL;
	if (size == 0)
		return cudaSuccess; /* NULL, no driver call */
	e = rt_err(D.MemAlloc(&p, size));
	*devPtr = (void *)(uintptr_t)p;
	rtlog("cudaMalloc(%zu) -> %d %p", size, (int)e, *devPtr);
	return ret(e);
}

cudaError_t cudaFree(void *devPtr)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess || !devPtr)
		return ret(e); /* cudaFree(NULL): the context, nothing else */
	e = rt_err(D.MemFree((CUdeviceptr)(uintptr_t)devPtr));
	rtlog("cudaFree(%p) -> %d", devPtr, (int)e);
	return ret(e);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width,
                            size_t height)
{
	CUdeviceptr p = 0;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!devPtr || !pitch))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess)
		return ret(e);
	*devPtr = NULL;
	if (!width || !height) {
		*pitch = 0;
		return cudaSuccess;
	}
	e = rt_err(D.MemAllocPitch(&p, pitch, width, height, 16));
	*devPtr = (void *)(uintptr_t)p;
	return ret(e);
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	CUdeviceptr p = 0;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !devPtr)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess)
		return ret(e);
	*devPtr = NULL;
	if (size == 0)
		return ret(cudaErrorInvalidValue);
	e = rt_err(D.MemAllocManaged(&p, size, flags));
	*devPtr = (void *)(uintptr_t)p;
	rtlog("cudaMallocManaged(%zu) -> %d %p", size, (int)e, *devPtr);
	return ret(e);
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.MemGetInfo(free, total));
	return ret(e);
}

/* Pinned host memory: cudaMallocHost and cudaHostAlloc both reach
 * cuMemHostAlloc (the real runtime never asks for cuMemAllocHost); the
 * flags (portable 1, mapped 2, write-combined 4) are the driver's. */
static cudaError_t host_alloc(void **ptr, size_t size, unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!ptr || (flags & ~0xfu)))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess)
		return ret(e);
	*ptr = NULL;
	if (size == 0)
		return cudaSuccess;
	e = rt_err(D.MemHostAlloc(ptr, size, flags));
	rtlog("cudaHostAlloc(%zu, %u) -> %d %p", size, flags, (int)e, *ptr);
	return ret(e);
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	return host_alloc(ptr, size, 0);
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	return host_alloc(pHost, size, flags);
}

cudaError_t cudaFreeHost(void *ptr)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e != cudaSuccess || !ptr)
		return ret(e);
	return ret(rt_err(D.MemFreeHost(ptr)));
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e == cudaSuccess)
		e = rt_err(D.MemHostRegister(ptr, size, flags));
	return ret(e);
}

cudaError_t cudaHostUnregister(void *ptr)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e == cudaSuccess)
		e = rt_err(D.MemHostUnregister(ptr));
	return ret(e);
}

/* Unified addressing: a pinned host pointer is its own device pointer. */
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost,
                                     unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!pDevice || !pHost || flags))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*pDevice = pHost;
	return ret(e);
}

/* Device memory (and managed memory, which the fake driver keeps in the
 * same table) by its start address; anything else is unregistered host
 * memory as far as this fake knows. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                     const void *ptr)
{
	int ord = -1;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !attributes)
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	memset(attributes, 0, sizeof(*attributes));
	if (ptr && D.PointerGetAttribute(&ord,
	                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	                                 (CUdeviceptr)(uintptr_t)ptr) ==
	                   CUDA_SUCCESS) {
		attributes->type = cudaMemoryTypeDevice;
		attributes->device = ord;
		attributes->devicePointer = (void *)ptr;
		if (host_mapped(ptr, 1)) {
			attributes->type = cudaMemoryTypeManaged;
			attributes->hostPointer = (void *)ptr;
		}
		return cudaSuccess;
	}
	attributes->type = cudaMemoryTypeUnregistered;
	attributes->device = -2;
	attributes->hostPointer = (void *)ptr;
	return cudaSuccess;
}

/* ---- copies and sets --------------------------------------------------- */

struct CUgraph_st;
static cudaError_t capture_node(struct rt_stream *r, const void *tmpl);
static void graph_free(cudaGraph_t g);

/* A copy or set on a stream: captured as a node when the stream is
 * capturing, else done now (streams never have work in flight). */
enum op_kind { OP_COPY, OP_SET };
struct op {
	int op;
	void *dst;
	const void *src;
	size_t count, dpitch, spitch, width, height;
	int value, kind;
};

static cudaError_t do_op(const struct op *o)
{
	if (o->op == OP_SET)
		return set_2d(o->dst, o->dpitch, o->value, o->width, o->height);
	return copy_2d(o->dst, o->dpitch, o->src, o->spitch, o->width,
	               o->height, o->kind);
}

static cudaError_t stream_op(const struct op *o, cudaStream_t stream);

static cudaError_t sync_op(const struct op *o)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e == cudaSuccess)
		e = do_op(o);
	return ret(e);
}

static struct op op_copy(void *dst, const void *src, size_t count, int kind)
{
	return (struct op){.op = OP_COPY, .dst = dst, .src = src,
	                   .dpitch = count, .spitch = count, .width = count,
	                   .height = 1, .kind = kind};
}

static struct op op_set(void *dst, int value, size_t count)
{
	return (struct op){.op = OP_SET, .dst = dst, .dpitch = count,
	                   .width = count, .height = 1, .value = value};
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count,
                       enum cudaMemcpyKind kind)
{
	struct op o = op_copy(dst, src, count, kind);
	return sync_op(&o);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind)
{
	return cudaMemcpy(dst, src, count, kind);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                            enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct op o = op_copy(dst, src, count, kind);
	return stream_op(&o, stream);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudaMemcpyAsync(dst, src, count, kind, stream);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	struct op o = op_set(devPtr, value, count);
	return sync_op(&o);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return cudaMemset(devPtr, value, count);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count,
                            cudaStream_t stream)
{
	struct op o = op_set(devPtr, value, count);
	return stream_op(&o, stream);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count,
                                 cudaStream_t stream)
{
	return cudaMemsetAsync(devPtr, value, count, stream);
}

cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src,
                         size_t spitch, size_t width, size_t height,
                         enum cudaMemcpyKind kind)
{
	struct op o = {OP_COPY, dst, src, 0, dpitch, spitch, width, height, 0,
	               kind};
	return sync_op(&o);
}

cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind)
{
	return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src,
                              size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
	struct op o = {OP_COPY, dst, src, 0, dpitch, spitch, width, height, 0,
	               kind};
	return stream_op(&o, stream);
}

cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src,
                                   size_t spitch, size_t width, size_t height,
                                   enum cudaMemcpyKind kind,
                                   cudaStream_t stream)
{
	return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind,
	                         stream);
}

cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width,
                         size_t height)
{
	struct op o = {OP_SET, devPtr, NULL, 0, pitch, 0, width, height, value,
	               0};
	return sync_op(&o);
}

cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value,
                              size_t width, size_t height)
{
	return cudaMemset2D(devPtr, pitch, value, width, height);
}

cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value,
                              size_t width, size_t height, cudaStream_t stream)
{
	struct op o = {OP_SET, devPtr, NULL, 0, pitch, 0, width, height, value,
	               0};
	return stream_op(&o, stream);
}

cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value,
                                   size_t width, size_t height,
                                   cudaStream_t stream)
{
	return cudaMemset2DAsync(devPtr, pitch, value, width, height, stream);
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src,
                           int srcDevice, size_t count)
{
	struct op o = op_copy(dst, src, count, cudaMemcpyDeviceToDevice);
	cudaError_t e = ctx();
	if (e == cudaSuccess && (dstDevice < 0 || dstDevice >= g_ndev ||
	                         srcDevice < 0 || srcDevice >= g_ndev))
		return ret(cudaErrorInvalidDevice);
	return e == cudaSuccess ? sync_op(&o) : ret(e);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src,
                                int srcDevice, size_t count,
                                cudaStream_t stream)
{
	struct op o = op_copy(dst, src, count, cudaMemcpyDeviceToDevice);
	cudaError_t e = ctx();
	if (e == cudaSuccess && (dstDevice < 0 || dstDevice >= g_ndev ||
	                         srcDevice < 0 || srcDevice >= g_ndev))
		return ret(cudaErrorInvalidDevice);
	return e == cudaSuccess ? stream_op(&o, stream) : ret(e);
}

/* Prefetches and advice move nothing: the fake has no device copy. */
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count,
                                 struct cudaMemLocation location,
                                 unsigned int flags, cudaStream_t stream)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!devPtr || !count || flags))
		e = cudaErrorInvalidValue;
	return ret(e);
}

cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count,
                                      struct cudaMemLocation location,
                                      unsigned int flags, cudaStream_t stream)
{
	return cudaMemPrefetchAsync(devPtr, count, location, flags, stream);
}

cudaError_t cudaMemAdvise(const void *devPtr, size_t count,
                          enum cudaMemoryAdvise advice,
                          struct cudaMemLocation location)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!devPtr || !count || advice < 1 || advice > 6))
		e = cudaErrorInvalidValue;
	return ret(e);
}

/* ---- stream-ordered allocation and pools ------------------------------- */

static cudaError_t capture_mem_node(cudaStream_t stream, int type);

/* On a capturing stream, the real runtime hands the call to the driver
 * with the capturing stream (that call is what a preload sees), and the
 * driver makes a graph memory node whose memory the graph keeps: its
 * launches reuse it without another call. The fake driver knows nothing
 * of captures, so it allocates (or frees) at once, which is what the
 * preload is shown; the capture gets the node. */
static cudaError_t malloc_async(void **devPtr, size_t size, cudaMemPool_t pool,
                                cudaStream_t stream, int ptsz)
{
	CUdeviceptr p = 0;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !devPtr)
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	*devPtr = NULL;
	if (size == 0)
		return cudaSuccess;
	if (pool)
		e = rt_err(D.MemAllocFromPoolAsync[ptsz](&p, size, pool,
		                                         stream));
	else
		e = rt_err(D.MemAllocAsync[ptsz](&p, size, stream));
	*devPtr = (void *)(uintptr_t)p;
	if (e == cudaSuccess)
		e = capture_mem_node(stream, cudaGraphNodeTypeMemAlloc);
	rtlog("cudaMallocAsync(%zu, pool %p) -> %d %p", size, (void *)pool,
	      (int)e, *devPtr);
	return ret(e);
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_async(devPtr, size, NULL, hStream, 0);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size,
                                 cudaStream_t hStream)
{
	return malloc_async(devPtr, size, NULL, hStream, 1);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size,
                                    cudaMemPool_t memPool, cudaStream_t stream)
{
	if (!memPool)
		return ret(cudaErrorInvalidValue);
	return malloc_async(ptr, size, memPool, stream, 0);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size,
                                         cudaMemPool_t memPool,
                                         cudaStream_t stream)
{
	if (!memPool)
		return ret(cudaErrorInvalidValue);
	return malloc_async(ptr, size, memPool, stream, 1);
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, int ptsz)
{
	cudaError_t e = ctx();
	if (e != cudaSuccess || !devPtr)
		return ret(e);
	e = rt_err(D.MemFreeAsync[ptsz]((CUdeviceptr)(uintptr_t)devPtr, stream));
	if (e == cudaSuccess)
		e = capture_mem_node(stream, cudaGraphNodeTypeMemFree);
	return ret(e);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, 0);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, 1);
}

static int valid_device(int device)
{
	return device >= 0 && device < g_ndev;
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		e = rt_err(D.DeviceGetDefaultMemPool(memPool, device));
	return ret(e);
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		e = rt_err(D.DeviceGetMemPool(memPool, device));
	return ret(e);
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		e = rt_err(D.DeviceSetMemPool(device, memPool));
	return ret(e);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool,
                              const struct cudaMemPoolProps *poolProps)
{
	CUmemPoolProps p;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!memPool || !poolProps))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	memset(&p, 0, sizeof(p));
	p.allocType = (CUmemAllocationType)poolProps->allocType;
	p.handleTypes = (CUmemAllocationHandleType)poolProps->handleTypes;
	p.location.type = (CUmemLocationType)poolProps->location.type;
	p.location.id = poolProps->location.id;
	p.maxSize = poolProps->maxSize;
	p.usage = poolProps->usage;
	return ret(rt_err(D.MemPoolCreate(memPool, &p)));
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.MemPoolDestroy(memPool));
	return ret(e);
}

/* The runtime's pool attributes carry the driver's numbers. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool,
                                    enum cudaMemPoolAttr attr, void *value)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.MemPoolSetAttribute(memPool, (int)attr, value));
	return ret(e);
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool,
                                    enum cudaMemPoolAttr attr, void *value)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.MemPoolGetAttribute(memPool, (int)attr, value));
	return ret(e);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.MemPoolTrimTo(memPool, minBytesToKeep));
	return ret(e);
}

/* Access from other devices: every device of the fake may reach every
 * pool, so there is nothing to grant. */
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                 const struct cudaMemAccessDesc *descList,
                                 size_t count)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!memPool || (count && !descList)))
		e = cudaErrorInvalidValue;
	for (size_t i = 0; e == cudaSuccess && i < count; i++)
		if (descList[i].location.type == cudaMemLocationTypeDevice &&
		    !valid_device(descList[i].location.id))
			e = cudaErrorInvalidDevice;
	return ret(e);
}

/* ---- devices ----------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
	cudaError_t e = rt_init();
	if (!count)
		return ret(cudaErrorInvalidValue);
	*count = e == cudaSuccess ? g_ndev : 0;
	return ret(e);
}

cudaError_t cudaGetDevice(int *device)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !device)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*device = cur_dev();
	return ret(e);
}

/* As since CUDA 12: the device's primary context is made current (and
 * initialised) at once. */
cudaError_t cudaSetDevice(int device)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess) {
		tls_dev = device;
		e = use_device(device);
	}
	return ret(e);
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags,
                           unsigned int flags)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess) {
		CUcontext keep = NULL;
		D.CtxGetCurrent(&keep);
		e = use_device(device);
		if (e == cudaSuccess && keep)
			D.CtxSetCurrent(keep);
	}
	return ret(e);
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (flags & ~0x1fu))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		g_device_flags[cur_dev()] = flags;
	return ret(e);
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !flags)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*flags = g_device_flags[cur_dev()];
	return ret(e);
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr,
                                   int device)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		e = rt_err(D.DeviceGetAttribute(value, (int)attr, device));
	return ret(e);
}

/* cudaDeviceProp's fields that are device attributes, by number. */
#define PROP_INT(field, a) {a, offsetof(struct cudaDeviceProp, field), 0}
#define PROP_SZ(field, a)  {a, offsetof(struct cudaDeviceProp, field), 1}
static const struct {
	int attr;
	size_t off;
	int is_size;
} g_prop_attrs[] = {
        PROP_SZ(sharedMemPerBlock, 8),
        PROP_INT(regsPerBlock, 12),
        PROP_INT(warpSize, 10),
        PROP_SZ(memPitch, 11),
        PROP_INT(maxThreadsPerBlock, 1),
        PROP_INT(maxThreadsDim[0], 2),
        PROP_INT(maxThreadsDim[1], 3),
        PROP_INT(maxThreadsDim[2], 4),
        PROP_INT(maxGridSize[0], 5),
        PROP_INT(maxGridSize[1], 6),
        PROP_INT(maxGridSize[2], 7),
        PROP_SZ(totalConstMem, 9),
        PROP_INT(major, 75),
        PROP_INT(minor, 76),
        PROP_SZ(textureAlignment, 14),
        PROP_SZ(texturePitchAlignment, 51),
        PROP_INT(multiProcessorCount, 16),
        PROP_INT(integrated, 18),
        PROP_INT(canMapHostMemory, 19),
        PROP_SZ(surfaceAlignment, 30),
        PROP_INT(concurrentKernels, 31),
        PROP_INT(ECCEnabled, 32),
        PROP_INT(pciBusID, 33),
        PROP_INT(pciDeviceID, 34),
        PROP_INT(pciDomainID, 50),
        PROP_INT(tccDriver, 35),
        PROP_INT(asyncEngineCount, 40),
        PROP_INT(unifiedAddressing, 41),
        PROP_INT(memoryBusWidth, 37),
        PROP_INT(l2CacheSize, 38),
        PROP_INT(persistingL2CacheMaxSize, 108),
        PROP_INT(maxThreadsPerMultiProcessor, 39),
        PROP_INT(streamPrioritiesSupported, 78),
        PROP_INT(globalL1CacheSupported, 79),
        PROP_INT(localL1CacheSupported, 80),
        PROP_SZ(sharedMemPerMultiprocessor, 81),
        PROP_INT(regsPerMultiprocessor, 82),
        PROP_INT(managedMemory, 83),
        PROP_INT(isMultiGpuBoard, 84),
        PROP_INT(multiGpuBoardGroupID, 85),
        PROP_INT(hostNativeAtomicSupported, 86),
        PROP_INT(pageableMemoryAccess, 88),
        PROP_INT(concurrentManagedAccess, 89),
        PROP_INT(computePreemptionSupported, 90),
        PROP_INT(canUseHostPointerForRegisteredMem, 91),
        PROP_INT(cooperativeLaunch, 95),
        PROP_SZ(sharedMemPerBlockOptin, 97),
        PROP_INT(pageableMemoryAccessUsesHostPageTables, 100),
        PROP_INT(directManagedMemAccessFromHost, 101),
        PROP_INT(maxBlocksPerMultiProcessor, 106),
        PROP_INT(accessPolicyMaxWindowSize, 109),
        PROP_SZ(reservedSharedMemPerBlock, 111),
        PROP_INT(hostRegisterSupported, 99),
        PROP_INT(sparseCudaArraySupported, 112),
        PROP_INT(hostRegisterReadOnlySupported, 113),
        PROP_INT(timelineSemaphoreInteropSupported, 114),
        PROP_INT(memoryPoolsSupported, 115),
        PROP_INT(gpuDirectRDMASupported, 116),
        PROP_INT(gpuDirectRDMAFlushWritesOptions, 117),
        PROP_INT(gpuDirectRDMAWritesOrdering, 118),
        PROP_INT(memoryPoolSupportedHandleTypes, 119),
        PROP_INT(deferredMappingCudaArraySupported, 121),
        PROP_INT(ipcEventSupported, 125),
        PROP_INT(clusterLaunch, 120),
        PROP_INT(unifiedFunctionPointers, 129),
        PROP_INT(deviceNumaConfig, 130),
        PROP_INT(deviceNumaId, 131),
        PROP_INT(mpsEnabled, 133),
        PROP_INT(hostNumaId, 134),
        PROP_INT(gpuPciDeviceID, 139),
        PROP_INT(gpuPciSubsystemID, 140),
        PROP_INT(hostNumaMultinodeIpcSupported, 143),
};
#undef PROP_INT
#undef PROP_SZ

/* Built from the driver's answers, as the real runtime builds it. */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	size_t total = 0;
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !prop)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e != cudaSuccess)
		return ret(e);
	memset(prop, 0, sizeof(*prop));
	if (D.DeviceGetName(prop->name, (int)sizeof(prop->name), device) !=
	            CUDA_SUCCESS ||
	    D.DeviceTotalMem(&total, device) != CUDA_SUCCESS ||
	    D.DeviceGetUuid(&prop->uuid, device) != CUDA_SUCCESS)
		return ret(cudaErrorInvalidDevice);
	prop->totalGlobalMem = total;
	for (size_t i = 0; i < sizeof(g_prop_attrs) / sizeof(g_prop_attrs[0]);
	     i++) {
		int v = attr(device, g_prop_attrs[i].attr);
		char *f = (char *)prop + g_prop_attrs[i].off;
		if (g_prop_attrs[i].is_size) {
			size_t s = (size_t)(unsigned)v;
			memcpy(f, &s, sizeof(s));
		} else {
			memcpy(f, &v, sizeof(v));
		}
	}
	return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && (!pciBusId || len <= 0))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !valid_device(device))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		snprintf(pciBusId, (size_t)len, "%08X:%02X:%02X.0",
		         attr(device, 50), attr(device, 33), attr(device, 34));
	return ret(e);
}

cudaError_t cudaDeviceSynchronize(void)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = capture_forbids();
	if (e == cudaSuccess)
		e = rt_err(D.CtxSynchronize());
	return ret(e);
}

/* The real reset destroys the primary context and what it holds; the
 * fake driver keeps contexts for the life of the process, so this only
 * waits, as a reset does first. */
cudaError_t cudaDeviceReset(void)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = rt_err(D.CtxSynchronize());
	return ret(e);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority,
                                             int *greatestPriority)
{
	cudaError_t e = ctx();
	if (e != cudaSuccess)
		return ret(e);
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device,
                                    int peerDevice)
{
	cudaError_t e = rt_init();
	if (e == cudaSuccess && !canAccessPeer)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess &&
	    (!valid_device(device) || !valid_device(peerDevice)))
		e = cudaErrorInvalidDevice;
	if (e == cudaSuccess)
		*canAccessPeer = device != peerDevice;
	return ret(e);
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
	int dev;
	unsigned long long bit;
	cudaError_t e = ctx();
	if (e == cudaSuccess && flags)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !valid_device(peerDevice))
		e = cudaErrorInvalidDevice;
	if (e != cudaSuccess)
		return ret(e);
	dev = cur_dev();
	if (dev == peerDevice)
		return ret(cudaErrorInvalidDevice);
	bit = 1ull << peerDevice;
	pthread_mutex_lock(&g_lock);
	if (g_peer[dev] & bit)
		e = cudaErrorPeerAccessAlreadyEnabled;
	g_peer[dev] |= bit;
	pthread_mutex_unlock(&g_lock);
	return ret(e);
}

cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
	int dev;
	unsigned long long bit;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_device(peerDevice))
		e = cudaErrorInvalidDevice;
	if (e != cudaSuccess)
		return ret(e);
	dev = cur_dev();
	bit = 1ull << peerDevice;
	pthread_mutex_lock(&g_lock);
	if (!(g_peer[dev] & bit))
		e = cudaErrorPeerAccessNotEnabled;
	g_peer[dev] &= ~bit;
	pthread_mutex_unlock(&g_lock);
	return ret(e);
}

cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && ((int)limit < 0 || (int)limit > 6))
		e = cudaErrorUnsupportedLimit;
	if (e == cudaSuccess) {
		pthread_mutex_lock(&g_lock);
		g_limits[limit] = value;
		pthread_mutex_unlock(&g_lock);
	}
	return ret(e);
}

cudaError_t cudaDeviceGetLimit(size_t *pValue, enum cudaLimit limit)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !pValue)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && ((int)limit < 0 || (int)limit > 6))
		e = cudaErrorUnsupportedLimit;
	if (e == cudaSuccess) {
		pthread_mutex_lock(&g_lock);
		*pValue = g_limits[limit];
		pthread_mutex_unlock(&g_lock);
	}
	return ret(e);
}

/* Cache and bank preferences are hints a device may ignore; so does this
 * one. */
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache cacheConfig)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && ((int)cacheConfig < 0 || (int)cacheConfig > 3))
		e = cudaErrorInvalidValue;
	return ret(e);
}

cudaError_t cudaDeviceGetCacheConfig(enum cudaFuncCache *pCacheConfig)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !pCacheConfig)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*pCacheConfig = cudaFuncCachePreferNone;
	return ret(e);
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
	cudaError_t e = rt_init();
	if (!driverVersion)
		return ret(cudaErrorInvalidValue);
	if (e == cudaErrorInsufficientDriver) {
		*driverVersion = 0; /* no driver: 0, and success */
		return cudaSuccess;
	}
	return ret(rt_err(D.DriverGetVersion(driverVersion)));
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return ret(cudaErrorInvalidValue);
	*runtimeVersion = RT_VERSION;
	return cudaSuccess;
}

/* The driver's resolver, through the runtime: PyTorch reaches cuMemCreate
 * and friends this way, so it must be the very resolver the runtime got
 * (a preload's, when there is one). Without a version, the runtime's. */
static cudaError_t entry_point(const char *symbol, void **funcPtr,
                               unsigned int cudaVersion,
                               unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	cudaError_t e = rt_init();
	if (e == cudaSuccess && (!symbol || !funcPtr || (flags & ~3ull)))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	e = rt_err(D.GetProcAddress(symbol, funcPtr, (int)cudaVersion,
	                            (cuuint64_t)flags, &st));
	if (status)
		*status = (enum cudaDriverEntryPointQueryResult)st;
	return ret(e);
}

cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                    unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult
                                            *driverStatus)
{
	return entry_point(symbol, funcPtr, RT_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                         unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult
                                                 *driverStatus)
{
	return entry_point(symbol, funcPtr, RT_VERSION, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion(
        const char *symbol, void **funcPtr, unsigned int cudaVersion,
        unsigned long long flags,
        enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
        const char *symbol, void **funcPtr, unsigned int cudaVersion,
        unsigned long long flags,
        enum cudaDriverEntryPointQueryResult *driverStatus)
{
	return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus);
}

/* No profiler is attached: starting and stopping it succeed. */
cudaError_t cudaProfilerStart(void)
{
	return ret(rt_init());
}

cudaError_t cudaProfilerStop(void)
{
	return ret(rt_init());
}

struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                             enum cudaChannelFormatKind f)
{
	struct cudaChannelFormatDesc d = {x, y, z, w, f};
	return d;
}

/* ---- streams and events ------------------------------------------------ */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags,
                                 int priority, int with_priority)
{
	struct rt_stream *r;
	cudaStream_t s = NULL;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!pStream || (flags & ~1u)))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	e = rt_err(with_priority ? D.StreamCreateWithPriority(&s, flags, priority)
	                         : D.StreamCreate(&s, flags));
	if (e != cudaSuccess)
		return ret(e);
	if (!(r = calloc(1, sizeof(*r)))) {
		D.StreamDestroy(s);
		return ret(cudaErrorMemoryAllocation);
	}
	r->flags = flags;
	r->priority = priority;
	r->device = cur_dev();
	pthread_mutex_lock(&g_lock);
	r->id = g_next_stream_id++;
	if (map_put(&g_streams, s, r))
		e = cudaErrorMemoryAllocation;
	pthread_mutex_unlock(&g_lock);
	if (e != cudaSuccess) {
		free(r);
		D.StreamDestroy(s);
		return ret(e);
	}
	*pStream = s;
	rtlog("cudaStreamCreate(%u, %d) -> %p", flags, priority, (void *)s);
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
	return stream_create(pStream, 0, 0, 0);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream,
                                      unsigned int flags)
{
	return stream_create(pStream, flags, 0, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream,
                                         unsigned int flags, int priority)
{
	return stream_create(pStream, flags, priority, 1);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess && special_stream(stream))
		e = cudaErrorInvalidResourceHandle;
	if (e != cudaSuccess)
		return ret(e);
	e = rt_err(D.StreamDestroy(stream));
	if (e != cudaSuccess)
		return ret(e);
	/* A capture going on ends with its stream (and its graph). */
	pthread_mutex_lock(&g_lock);
	r = map_del(&g_streams, stream);
	if (r && r->capturing) {
		if (r->capture_mode == cudaStreamCaptureModeGlobal)
			g_global_captures--;
		if (r->capture_mode != cudaStreamCaptureModeRelaxed &&
		    pthread_equal(r->capture_thread, pthread_self()))
			tls_strict_captures--;
	}
	pthread_mutex_unlock(&g_lock);
	if (r && r->graph)
		graph_free(r->graph);
	free(r);
	return cudaSuccess;
}

/* Synchronizing a capturing stream is illegal: the capture is
 * invalidated, as the real runtime does. */
static cudaError_t stream_sync(cudaStream_t stream, int ptsz)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (r = capturing(stream))) {
		pthread_mutex_lock(&g_lock);
		r->capturing = cudaStreamCaptureStatusInvalidated;
		pthread_mutex_unlock(&g_lock);
		e = cudaErrorStreamCaptureUnsupported;
	}
	if (e == cudaSuccess)
		e = rt_err(D.StreamSynchronize[ptsz](stream));
	return ret(e);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	return stream_sync(stream, 0);
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return stream_sync(stream, 1);
}

static cudaError_t stream_query(cudaStream_t stream, int ptsz)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && capturing(stream))
		e = cudaErrorStreamCaptureUnsupported;
	if (e == cudaSuccess)
		e = rt_err(D.StreamQuery[ptsz](stream));
	return ret(e);
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
	return stream_query(stream, 0);
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
	return stream_query(stream, 1);
}

/* Flags, priority, id and device of a stream; the special streams have
 * the defaults. */
static cudaError_t stream_info(cudaStream_t s, struct rt_stream *out)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e != cudaSuccess)
		return e;
	memset(out, 0, sizeof(*out));
	out->device = cur_dev();
	out->id = s == NULL || s == cudaStreamLegacy ? 0 : (uintptr_t)s;
	if (special_stream(s))
		return cudaSuccess;
	if (!(r = stream_rec(s)))
		return cudaErrorInvalidResourceHandle;
	pthread_mutex_lock(&g_lock);
	*out = *r;
	pthread_mutex_unlock(&g_lock);
	return cudaSuccess;
}

cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
	struct rt_stream r;
	cudaError_t e = flags ? stream_info(hStream, &r) : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*flags = r.flags;
	return ret(e);
}

cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
	return cudaStreamGetFlags(hStream, flags);
}

cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
	struct rt_stream r;
	cudaError_t e = priority ? stream_info(hStream, &r)
	                         : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*priority = r.priority;
	return ret(e);
}

cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
	return cudaStreamGetPriority(hStream, priority);
}

cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
	struct rt_stream r;
	cudaError_t e = streamId ? stream_info(hStream, &r)
	                         : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*streamId = r.id;
	return ret(e);
}

cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream,
                                 unsigned long long *streamId)
{
	return cudaStreamGetId(hStream, streamId);
}

cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
	struct rt_stream r;
	cudaError_t e = device ? stream_info(hStream, &r) : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*device = r.device;
	return ret(e);
}

cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device)
{
	return cudaStreamGetDevice(hStream, device);
}

/* A stream handle a call may use: a special one, or a live stream. */
static cudaError_t check_stream(cudaStream_t s)
{
	if (special_stream(s))
		return cudaSuccess;
	return D.StreamQuery[0](s) == CUDA_SUCCESS
	               ? cudaSuccess
	               : cudaErrorInvalidResourceHandle;
}

struct CUevent_st {
	unsigned magic;
	unsigned flags;
	int recorded;
	struct timespec when;
};

static int valid_event(cudaEvent_t e)
{
	return e && e->magic == RT_EVENT_MAGIC;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	struct CUevent_st *ev;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!event || (flags & ~0xfu)))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	if (!(ev = calloc(1, sizeof(*ev))))
		return ret(cudaErrorMemoryAllocation);
	ev->magic = RT_EVENT_MAGIC;
	ev->flags = flags;
	*event = ev;
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, 0);
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	if (!valid_event(event))
		return ret(cudaErrorInvalidResourceHandle);
	event->magic = 0;
	free(event);
	return cudaSuccess;
}

/* Recording takes the host clock: the stream has no work in flight, so
 * the event completes at once. In a capturing stream it only orders the
 * capture, which the fake's graphs (a list of nodes) do not need. */
cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                     unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_event(event))
		e = cudaErrorInvalidResourceHandle;
	if (e == cudaSuccess && flags > 1)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e != cudaSuccess)
		return ret(e);
	if (!capturing(stream)) {
		clock_gettime(CLOCK_MONOTONIC, &event->when);
		event->recorded = 1;
	}
	return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event,
                                          cudaStream_t stream,
                                          unsigned int flags)
{
	return cudaEventRecordWithFlags(event, stream, flags);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return cudaEventRecordWithFlags(event, stream, 0);
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	return cudaEventRecordWithFlags(event, stream, 0);
}

cudaError_t cudaEventQuery(cudaEvent_t event)
{
	return ret(valid_event(event) ? cudaSuccess
	                              : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	return ret(valid_event(event) ? cudaSuccess
	                              : cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	if (!ms)
		return ret(cudaErrorInvalidValue);
	if (!valid_event(start) || !valid_event(end) || !start->recorded ||
	    !end->recorded || (start->flags & 2) || (end->flags & 2))
		return ret(cudaErrorInvalidResourceHandle);
	*ms = (float)((double)(end->when.tv_sec - start->when.tv_sec) * 1e3 +
	              (double)(end->when.tv_nsec - start->when.tv_nsec) / 1e6);
	return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event,
                                unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_event(event))
		e = cudaErrorInvalidResourceHandle;
	if (e == cudaSuccess)
		e = check_stream(stream);
	return ret(e);
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                     unsigned int flags)
{
	return cudaStreamWaitEvent(stream, event, flags);
}

/* ---- kernels: registration, attributes, launch ------------------------- */

/* A module: what __cudaRegisterFatBinary hands back. */
struct rt_module {
	unsigned magic;
	void *fatbin;
};

/* A kernel as the runtime knows it: the host stub nvcc generated (its
 * address is the kernel's identity in every call), its name, and what
 * cudaFuncSetAttribute changed. cudaKernel_t and cudaFunction_t point
 * here. */
struct CUkern_st {
	unsigned magic;
	const void *host_fun;
	const char *name;
	int max_dynamic_smem;
	int carveout;
	int attrs[cudaFuncAttributeMax]; /* cluster attributes, as set */
};

/* A __device__ or __constant__ variable: host memory of its size stands
 * for its device memory, so copies to and from it round trip. */
struct rt_var {
	const char *name;
	size_t size;
	void *mem;
};

void **__cudaRegisterFatBinary(void *fatCubin)
{
	struct rt_module *m = calloc(1, sizeof(*m));
	if (!m) {
		fputs("fakecudart: out of memory registering a module\n", stderr);
		abort(); /* the generated code cannot report a failure */
	}
	m->magic = RT_MODULE_MAGIC;
	m->fatbin = fatCubin;
	return (void **)m;
}

void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
}

/* Called from an atexit handler of each module: kernels and variables
 * stay registered (another module's destructor may still launch), and
 * the process is ending anyway. */
void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
}

/* The module's managed variables get their memory on first use; it was
 * already given at registration here. */
char __cudaInitModule(void **fatCubinHandle)
{
	return 1;
}

void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun,
                            char *deviceFun, const char *deviceName,
                            int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize)
{
	struct CUkern_st *k = calloc(1, sizeof(*k));
	if (!k) {
		fputs("fakecudart: out of memory registering a kernel\n", stderr);
		abort();
	}
	k->magic = RT_KERNEL_MAGIC;
	k->host_fun = hostFun;
	k->name = deviceName;
	k->max_dynamic_smem = RT_DEFAULT_SMEM;
	k->carveout = -1;
	pthread_mutex_lock(&g_lock);
	if (map_put(&g_kernels, hostFun, k)) {
		fputs("fakecudart: out of memory registering a kernel\n", stderr);
		abort();
	}
	pthread_mutex_unlock(&g_lock);
}

static void register_var(const void *key, const char *name, size_t size,
                         void *mem)
{
	struct rt_var *v = calloc(1, sizeof(*v));
	if (!v || !mem) {
		fputs("fakecudart: out of memory registering a variable\n",
		      stderr);
		abort();
	}
	v->name = name;
	v->size = size;
	v->mem = mem;
	pthread_mutex_lock(&g_lock);
	if (map_put(&g_vars, key, v)) {
		fputs("fakecudart: out of memory registering a variable\n",
		      stderr);
		abort();
	}
	pthread_mutex_unlock(&g_lock);
}

void __cudaRegisterVar(void **fatCubinHandle, char *hostVar,
                       char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global)
{
	register_var(hostVar, deviceName, size, calloc(1, size ? size : 1));
}

/* Host code reads a managed variable through *hostVarPtrAddress: it must
 * be real memory, which is also what the symbol calls see. */
void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress,
                              char *deviceAddress, const char *deviceName,
                              int ext, size_t size, int constant, int global)
{
	void *mem = calloc(1, size ? size : 1);
	if (mem)
		*hostVarPtrAddress = mem;
	register_var(hostVarPtrAddress, deviceName, size, mem);
}

static struct CUkern_st *kernel_of(const void *func)
{
	struct CUkern_st *k;
	pthread_mutex_lock(&g_lock);
	k = map_get(&g_kernels, func);
	pthread_mutex_unlock(&g_lock);
	return k;
}

static struct rt_var *var_of(const void *symbol)
{
	struct rt_var *v;
	pthread_mutex_lock(&g_lock);
	v = map_get(&g_vars, symbol);
	pthread_mutex_unlock(&g_lock);
	return v;
}

/* The <<<grid, block, shared memory, stream>>> of a launch, pushed by the
 * caller and popped by the kernel's host stub. */
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim,
                                     size_t sharedMem,
                                     struct CUstream_st *stream)
{
	if (tls_nconfigs >= RT_MAX_CONFIGS)
		return 1; /* the launch is skipped */
	tls_configs[tls_nconfigs++] =
	        (struct config){gridDim, blockDim, sharedMem, stream};
	return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim,
                                       size_t *sharedMem, void *stream)
{
	struct config c;
	if (tls_nconfigs <= 0)
		return ret(cudaErrorMissingConfiguration);
	c = tls_configs[--tls_nconfigs];
	*gridDim = c.grid;
	*blockDim = c.block;
	*sharedMem = c.smem;
	*(cudaStream_t *)stream = c.stream;
	return cudaSuccess;
}

static cudaError_t get_kernel(cudaKernel_t *kernelPtr, const void *func)
{
	struct CUkern_st *k;
	if (!kernelPtr || !func)
		return ret(cudaErrorInvalidValue);
	if (!(k = kernel_of(func)))
		return ret(cudaErrorInvalidDeviceFunction);
	*kernelPtr = k;
	return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
	return get_kernel(kernel, hostFun);
}

cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr)
{
	return get_kernel(kernelPtr, entryFuncAddr);
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr,
                                const void *symbolPtr)
{
	return get_kernel((cudaKernel_t *)functionPtr, symbolPtr);
}

/* What a launch must satisfy on the current device: block and grid within
 * the device's limits, dynamic shared memory within the kernel's allowance
 * (48 KiB unless raised by cudaFuncSetAttribute, up to the card's opt-in
 * limit). */
static cudaError_t launch_check(const struct CUkern_st *k, dim3 g, dim3 b,
                                size_t smem)
{
	int dev = cur_dev();
	unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
	if (!k || k->magic != RT_KERNEL_MAGIC)
		return cudaErrorInvalidDeviceFunction;
	if (!b.x || !b.y || !b.z || !g.x || !g.y || !g.z ||
	    threads > (unsigned)attr(dev, 1) || b.x > (unsigned)attr(dev, 2) ||
	    b.y > (unsigned)attr(dev, 3) || b.z > (unsigned)attr(dev, 4) ||
	    g.x > (unsigned)attr(dev, 5) || g.y > (unsigned)attr(dev, 6) ||
	    g.z > (unsigned)attr(dev, 7))
		return cudaErrorInvalidConfiguration;
	if (smem > (size_t)k->max_dynamic_smem)
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

struct CUgraphNode_st;
static cudaError_t capture_kernel(struct rt_stream *r,
                                  const struct CUkern_st *k, dim3 g, dim3 b,
                                  size_t smem);

/* A launch: checked, captured when the stream is capturing, else done —
 * that is, nothing: the fake has no device to run it on. */
static cudaError_t launch(const struct CUkern_st *k, dim3 g, dim3 b,
                          size_t smem, cudaStream_t stream)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = launch_check(k, g, b, smem);
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e == cudaSuccess && (r = capturing(stream)))
		e = capture_kernel(r, k, g, b, smem);
	if (g_debug && k && k->magic == RT_KERNEL_MAGIC)
		rtlog("launch %s <<<(%u,%u,%u), (%u,%u,%u), %zu, %p>>> -> %d",
		      k->name, g.x, g.y, g.z, b.x, b.y, b.z, smem,
		      (void *)stream, (int)e);
	return ret(e);
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim,
                               dim3 blockDim, void **args, size_t sharedMem,
                               cudaStream_t stream)
{
	return launch(kernel, gridDim, blockDim, sharedMem, stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim,
                                    dim3 blockDim, void **args,
                                    size_t sharedMem, cudaStream_t stream)
{
	return launch(kernel, gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim,
                             void **args, size_t sharedMem,
                             cudaStream_t stream)
{
	return launch(kernel_of(func), gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim,
                                  dim3 blockDim, void **args,
                                  size_t sharedMem, cudaStream_t stream)
{
	return launch(kernel_of(func), gridDim, blockDim, sharedMem, stream);
}

/* Launch attributes (clusters, priorities, ...) change how a kernel
 * would run, not whether this fake accepts it. */
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
                                const void *func, void **args)
{
	if (!config)
		return ret(cudaErrorInvalidValue);
	return launch(kernel_of(func), config->gridDim, config->blockDim,
	              config->dynamicSmemBytes, config->stream);
}

cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config,
                                     const void *func, void **args)
{
	return cudaLaunchKernelExC(config, func, args);
}

cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim,
                                        dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream)
{
	return launch(kernel_of(func), gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim,
                                             dim3 blockDim, void **args,
                                             size_t sharedMem,
                                             cudaStream_t stream)
{
	return launch(kernel_of(func), gridDim, blockDim, sharedMem, stream);
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a,
                                  const void *func)
{
	struct CUkern_st *k = kernel_of(func);
	int dev, cc;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !a)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !k)
		e = cudaErrorInvalidDeviceFunction;
	if (e != cudaSuccess)
		return ret(e);
	dev = cur_dev();
	cc = attr(dev, 75) * 10 + attr(dev, 76);
	memset(a, 0, sizeof(*a));
	a->maxThreadsPerBlock = attr(dev, 1);
	a->numRegs = 32;
	a->ptxVersion = cc;
	a->binaryVersion = cc;
	a->maxDynamicSharedSizeBytes = k->max_dynamic_smem;
	a->preferredShmemCarveout = k->carveout;
	a->clusterDimMustBeSet = k->attrs[cudaFuncAttributeClusterDimMustBeSet];
	a->requiredClusterWidth = k->attrs[cudaFuncAttributeRequiredClusterWidth];
	a->requiredClusterHeight =
	        k->attrs[cudaFuncAttributeRequiredClusterHeight];
	a->requiredClusterDepth = k->attrs[cudaFuncAttributeRequiredClusterDepth];
	a->clusterSchedulingPolicyPreference =
	        k->attrs[cudaFuncAttributeClusterSchedulingPolicyPreference];
	a->nonPortableClusterSizeAllowed =
	        k->attrs[cudaFuncAttributeNonPortableClusterSizeAllowed];
	return cudaSuccess;
}

/* The dynamic shared memory a kernel may use is raised here, up to what
 * the card allows one block (its opt-in limit); a carveout is a
 * percentage or -1. */
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute a,
                                 int value)
{
	struct CUkern_st *k = kernel_of(func);
	cudaError_t e = ctx();
	if (e == cudaSuccess && !k)
		e = cudaErrorInvalidDeviceFunction;
	if (e != cudaSuccess)
		return ret(e);
	switch (a) {
	case cudaFuncAttributeMaxDynamicSharedMemorySize:
		if (value < 0 || value > attr(cur_dev(), 97))
			return ret(cudaErrorInvalidValue);
		k->max_dynamic_smem = value;
		return cudaSuccess;
	case cudaFuncAttributePreferredSharedMemoryCarveout:
		if (value < -1 || value > 100)
			return ret(cudaErrorInvalidValue);
		k->carveout = value;
		return cudaSuccess;
	case cudaFuncAttributeClusterDimMustBeSet:
		return ret(cudaErrorInvalidValue); /* read-only */
	case cudaFuncAttributeRequiredClusterWidth:
	case cudaFuncAttributeRequiredClusterHeight:
	case cudaFuncAttributeRequiredClusterDepth:
	case cudaFuncAttributeNonPortableClusterSizeAllowed:
	case cudaFuncAttributeClusterSchedulingPolicyPreference:
		k->attrs[a] = value;
		return cudaSuccess;
	default:
		return ret(cudaErrorInvalidValue);
	}
}

cudaError_t cudaFuncSetCacheConfig(const void *func,
                                   enum cudaFuncCache cacheConfig)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !kernel_of(func))
		e = cudaErrorInvalidDeviceFunction;
	return ret(e);
}

cudaError_t cudaFuncGetName(const char **name, const void *func)
{
	struct CUkern_st *k = kernel_of(func);
	if (!name)
		return ret(cudaErrorInvalidValue);
	if (!k)
		return ret(cudaErrorInvalidDeviceFunction);
	*name = k->name;
	return cudaSuccess;
}

/* Blocks of blockSize threads that fit one SM at once, by threads,
 * blocks and shared memory (registers are assumed to fit). */
static cudaError_t occupancy(int *numBlocks, const void *func, int blockSize,
                             size_t dynamicSMemSize)
{
	struct CUkern_st *k = kernel_of(func);
	int dev, warps, n;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!numBlocks || blockSize <= 0))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !k)
		e = cudaErrorInvalidDeviceFunction;
	if (e != cudaSuccess)
		return ret(e);
	dev = cur_dev();
	if (blockSize > attr(dev, 1) || dynamicSMemSize > (size_t)k->max_dynamic_smem) {
		*numBlocks = 0;
		return cudaSuccess;
	}
	warps = (blockSize + 31) / 32;
	n = attr(dev, 39) / (warps * 32);
	if (n > attr(dev, 106))
		n = attr(dev, 106);
	if (dynamicSMemSize) {
		size_t per = dynamicSMemSize + (size_t)attr(dev, 111);
		size_t fit = (size_t)attr(dev, 81) / per;
		if ((size_t)n > fit)
			n = (int)fit;
	}
	*numBlocks = n;
	return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        int *numBlocks, const void *func, int blockSize,
        size_t dynamicSMemSize)
{
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        int *numBlocks, const void *func, int blockSize,
        size_t dynamicSMemSize, unsigned int flags)
{
	if (flags > 1)
		return ret(cudaErrorInvalidValue);
	return occupancy(numBlocks, func, blockSize, dynamicSMemSize);
}

/* ---- symbols ----------------------------------------------------------- */

static cudaError_t symbol_span(const void *symbol, size_t count, size_t offset,
                               struct rt_var **out)
{
	struct rt_var *v = var_of(symbol);
	cudaError_t e = ctx();
	if (e != cudaSuccess)
		return e;
	if (!v)
		return cudaErrorInvalidSymbol;
	if (offset > v->size || count > v->size - offset)
		return cudaErrorInvalidValue;
	*out = v;
	return cudaSuccess;
}

static cudaError_t to_symbol(const void *symbol, const void *src, size_t count,
                             size_t offset, int kind, cudaStream_t stream,
                             int async)
{
	struct rt_var *v;
	struct op o;
	cudaError_t e = symbol_span(symbol, count, offset, &v);
	if (e != cudaSuccess)
		return ret(e);
	o = op_copy((char *)v->mem + offset, src, count,
	            kind == cudaMemcpyDefault ? cudaMemcpyDefault
	                                      : cudaMemcpyHostToDevice);
	if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice &&
	    kind != cudaMemcpyDefault)
		return ret(cudaErrorInvalidMemcpyDirection);
	return async ? stream_op(&o, stream) : sync_op(&o);
}

static cudaError_t from_symbol(void *dst, const void *symbol, size_t count,
                               size_t offset, int kind, cudaStream_t stream,
                               int async)
{
	struct rt_var *v;
	struct op o;
	cudaError_t e = symbol_span(symbol, count, offset, &v);
	if (e != cudaSuccess)
		return ret(e);
	if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice &&
	    kind != cudaMemcpyDefault)
		return ret(cudaErrorInvalidMemcpyDirection);
	o = op_copy(dst, (char *)v->mem + offset, count, kind);
	return async ? stream_op(&o, stream) : sync_op(&o);
}

cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src,
                               size_t count, size_t offset,
                               enum cudaMemcpyKind kind)
{
	return to_symbol(symbol, src, count, offset, kind, NULL, 0);
}

cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src,
                                    size_t count, size_t offset,
                                    enum cudaMemcpyKind kind)
{
	return to_symbol(symbol, src, count, offset, kind, NULL, 0);
}

cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src,
                                    size_t count, size_t offset,
                                    enum cudaMemcpyKind kind,
                                    cudaStream_t stream)
{
	return to_symbol(symbol, src, count, offset, kind, stream, 1);
}

cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src,
                                         size_t count, size_t offset,
                                         enum cudaMemcpyKind kind,
                                         cudaStream_t stream)
{
	return to_symbol(symbol, src, count, offset, kind, stream, 1);
}

cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count,
                                 size_t offset, enum cudaMemcpyKind kind)
{
	return from_symbol(dst, symbol, count, offset, kind, NULL, 0);
}

cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol,
                                      size_t count, size_t offset,
                                      enum cudaMemcpyKind kind)
{
	return from_symbol(dst, symbol, count, offset, kind, NULL, 0);
}

cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol,
                                      size_t count, size_t offset,
                                      enum cudaMemcpyKind kind,
                                      cudaStream_t stream)
{
	return from_symbol(dst, symbol, count, offset, kind, stream, 1);
}

cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol,
                                           size_t count, size_t offset,
                                           enum cudaMemcpyKind kind,
                                           cudaStream_t stream)
{
	return from_symbol(dst, symbol, count, offset, kind, stream, 1);
}

cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
	struct rt_var *v;
	cudaError_t e = devPtr ? symbol_span(symbol, 0, 0, &v)
	                       : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*devPtr = v->mem;
	return ret(e);
}

cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
	struct rt_var *v;
	cudaError_t e = size ? symbol_span(symbol, 0, 0, &v)
	                     : cudaErrorInvalidValue;
	if (e == cudaSuccess)
		*size = v->size;
	return ret(e);
}

/* ---- graphs ------------------------------------------------------------ */

/* A node, by value: an instantiated graph holds copies. */
struct CUgraphNode_st {
	unsigned magic;
	int type; /* enum cudaGraphNodeType */
	struct CUgraph_st *graph;
	const struct CUkern_st *kernel;
	dim3 grid, block;
	unsigned smem;
	void **params; /* kernelParams, as given; never read */
	struct op op;  /* memcpy and memset nodes */
	cudaHostFn_t fn;
	void *user;
};

struct CUgraph_st {
	unsigned magic;
	struct CUgraphNode_st **node;
	size_t n, cap;
};

struct CUgraphExec_st {
	unsigned magic;
	struct CUgraphNode_st *node; /* copies, in the graph's order */
	const struct CUgraphNode_st **from; /* the graph node of each */
	size_t n;
};

static int valid_graph(cudaGraph_t g)
{
	return g && g->magic == RT_GRAPH_MAGIC;
}

static int valid_node(cudaGraphNode_t n)
{
	return n && n->magic == RT_NODE_MAGIC;
}

static int valid_exec(cudaGraphExec_t x)
{
	return x && x->magic == RT_EXEC_MAGIC;
}

static cudaGraph_t graph_new(void)
{
	cudaGraph_t g = calloc(1, sizeof(*g));
	if (g)
		g->magic = RT_GRAPH_MAGIC;
	return g;
}

/* Appends a copy of tmpl to g. Dependencies are checked (they must be
 * nodes of g) but not kept: the fake runs a graph's nodes in the order
 * they were added, which is an order its dependencies allow. */
static cudaError_t graph_add(cudaGraph_t g, const struct CUgraphNode_st *tmpl,
                             const cudaGraphNode_t *deps, size_t ndeps,
                             cudaGraphNode_t *out)
{
	struct CUgraphNode_st *n;
	if (!valid_graph(g) || (ndeps && !deps))
		return cudaErrorInvalidValue;
	for (size_t i = 0; i < ndeps; i++)
		if (!valid_node(deps[i]) || deps[i]->graph != g)
			return cudaErrorInvalidValue;
	if (g->n == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct CUgraphNode_st **p =
		        realloc(g->node, cap * sizeof(*p));
		if (!p)
			return cudaErrorMemoryAllocation;
		g->node = p;
		g->cap = cap;
	}
	if (!(n = malloc(sizeof(*n))))
		return cudaErrorMemoryAllocation;
	*n = *tmpl;
	n->magic = RT_NODE_MAGIC;
	n->graph = g;
	g->node[g->n++] = n;
	if (out)
		*out = n;
	return cudaSuccess;
}

static void graph_free(cudaGraph_t g)
{
	for (size_t i = 0; i < g->n; i++) {
		g->node[i]->magic = 0;
		free(g->node[i]);
	}
	free(g->node);
	g->magic = 0;
	free(g);
}

static cudaError_t capture_node(struct rt_stream *r, const void *tmpl)
{
	cudaError_t e;
	if (r->capturing != cudaStreamCaptureStatusActive)
		return cudaErrorStreamCaptureInvalidated;
	e = graph_add(r->graph, tmpl, NULL, 0, NULL);
	if (e != cudaSuccess)
		r->capturing = cudaStreamCaptureStatusInvalidated;
	return e;
}

static cudaError_t capture_kernel(struct rt_stream *r,
                                  const struct CUkern_st *k, dim3 g, dim3 b,
                                  size_t smem)
{
	struct CUgraphNode_st t = {.type = cudaGraphNodeTypeKernel,
	                           .kernel = k, .grid = g, .block = b,
	                           .smem = (unsigned)smem};
	return capture_node(r, &t);
}

static cudaError_t capture_mem_node(cudaStream_t stream, int type)
{
	struct rt_stream *r = capturing(stream);
	struct CUgraphNode_st t = {.type = type};
	return r ? capture_node(r, &t) : cudaSuccess;
}

static cudaError_t stream_op(const struct op *o, cudaStream_t stream)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e != cudaSuccess)
		return ret(e);
	if ((r = capturing(stream))) {
		struct CUgraphNode_st t = {
		        .type = o->op == OP_SET ? cudaGraphNodeTypeMemset
		                                : cudaGraphNodeTypeMemcpy,
		        .op = *o};
		return ret(capture_node(r, &t));
	}
	return ret(do_op(o));
}

/* Host functions run now, on the calling thread: the stream's earlier
 * work is all done. Captured, they become host nodes. */
static cudaError_t host_func(cudaStream_t stream, cudaHostFn_t fn, void *user)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !fn)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e != cudaSuccess)
		return ret(e);
	if ((r = capturing(stream))) {
		struct CUgraphNode_st t = {.type = cudaGraphNodeTypeHost,
		                           .fn = fn, .user = user};
		return ret(capture_node(r, &t));
	}
	fn(user);
	return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn,
                               void *userData)
{
	return host_func(stream, fn, userData);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn,
                                    void *userData)
{
	return host_func(stream, fn, userData);
}

static cudaError_t stream_callback(cudaStream_t stream,
                                   cudaStreamCallback_t callback,
                                   void *userData, unsigned int flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!callback || flags))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e == cudaSuccess && capturing(stream))
		e = cudaErrorStreamCaptureUnsupported;
	if (e != cudaSuccess)
		return ret(e);
	callback(stream, cudaSuccess, userData);
	return cudaSuccess;
}

cudaError_t cudaStreamAddCallback(cudaStream_t stream,
                                  cudaStreamCallback_t callback,
                                  void *userData, unsigned int flags)
{
	return stream_callback(stream, callback, userData, flags);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream,
                                       cudaStreamCallback_t callback,
                                       void *userData, unsigned int flags)
{
	return stream_callback(stream, callback, userData, flags);
}

/* ---- capture ----------------------------------------------------------- */

static cudaError_t begin_capture(cudaStream_t stream,
                                 enum cudaStreamCaptureMode mode)
{
	struct rt_stream *r;
	cudaGraph_t g;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (int)mode > cudaStreamCaptureModeRelaxed)
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	if (special_stream(stream))
		return ret(cudaErrorStreamCaptureUnsupported);
	if (!(r = stream_rec(stream)))
		return ret(cudaErrorInvalidResourceHandle);
	if (!(g = graph_new()))
		return ret(cudaErrorMemoryAllocation);
	pthread_mutex_lock(&g_lock);
	if (r->capturing) {
		e = cudaErrorIllegalState;
	} else {
		r->capturing = cudaStreamCaptureStatusActive;
		r->capture_mode = mode;
		r->capture_thread = pthread_self();
		r->capture_id = g_next_capture_id++;
		r->graph = g;
		if (mode == cudaStreamCaptureModeGlobal)
			g_global_captures++;
		if (mode != cudaStreamCaptureModeRelaxed)
			tls_strict_captures++;
	}
	pthread_mutex_unlock(&g_lock);
	if (e != cudaSuccess)
		graph_free(g);
	return ret(e);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream,
                                   enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode);
}

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                        enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode);
}

/* Ends a capture: its graph, or cudaErrorStreamCaptureInvalidated (and no
 * graph) when a forbidden call broke it. A thread-local or global capture
 * is ended by the thread that began it. */
static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	struct rt_stream *r;
	cudaGraph_t g = NULL;
	int status = 0;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !pGraph)
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	pthread_mutex_lock(&g_lock);
	r = special_stream(stream) ? NULL : map_get(&g_streams, stream);
	if (!r || !r->capturing) {
		e = cudaErrorIllegalState;
	} else if (r->capture_mode != cudaStreamCaptureModeRelaxed &&
	           !pthread_equal(r->capture_thread, pthread_self())) {
		e = cudaErrorStreamCaptureWrongThread;
	} else {
		status = r->capturing;
		g = r->graph;
		if (r->capture_mode == cudaStreamCaptureModeGlobal)
			g_global_captures--;
		if (r->capture_mode != cudaStreamCaptureModeRelaxed)
			tls_strict_captures--;
		r->capturing = cudaStreamCaptureStatusNone;
		r->graph = NULL;
	}
	pthread_mutex_unlock(&g_lock);
	if (e != cudaSuccess)
		return ret(e);
	if (status == cudaStreamCaptureStatusInvalidated) {
		graph_free(g);
		*pGraph = NULL;
		return ret(cudaErrorStreamCaptureInvalidated);
	}
	*pGraph = g;
	return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	return end_capture(stream, pGraph);
}

cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
	return end_capture(stream, pGraph);
}

static cudaError_t capture_info(cudaStream_t stream,
                                enum cudaStreamCaptureStatus *status,
                                unsigned long long *id, cudaGraph_t *graph)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !status)
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e != cudaSuccess)
		return e;
	pthread_mutex_lock(&g_lock);
	r = special_stream(stream) ? NULL : map_get(&g_streams, stream);
	*status = r ? (enum cudaStreamCaptureStatus)r->capturing
	            : cudaStreamCaptureStatusNone;
	if (id)
		*id = r && r->capturing ? r->capture_id : 0;
	if (graph)
		*graph = r && r->capturing ? r->graph : NULL;
	pthread_mutex_unlock(&g_lock);
	return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                  enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return ret(capture_info(stream, pCaptureStatus, NULL, NULL));
}

cudaError_t cudaStreamIsCapturing_ptsz(
        cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return ret(capture_info(stream, pCaptureStatus, NULL, NULL));
}

/* Dependencies of the next captured node: the fake keeps none (its
 * graphs run in order), so there are none to report. */
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                     enum cudaStreamCaptureStatus *captureStatus_out,
                                     unsigned long long *id_out,
                                     cudaGraph_t *graph_out,
                                     const cudaGraphNode_t **dependencies_out,
                                     const cudaGraphEdgeData **edgeData_out,
                                     size_t *numDependencies_out)
{
	cudaError_t e = capture_info(stream, captureStatus_out, id_out,
	                             graph_out);
	if (e != cudaSuccess)
		return ret(e);
	if (dependencies_out)
		*dependencies_out = NULL;
	if (edgeData_out)
		*edgeData_out = NULL;
	if (numDependencies_out)
		*numDependencies_out = 0;
	return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo_ptsz(
        cudaStream_t stream, enum cudaStreamCaptureStatus *captureStatus_out,
        unsigned long long *id_out, cudaGraph_t *graph_out,
        const cudaGraphNode_t **dependencies_out,
        const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return cudaStreamGetCaptureInfo(stream, captureStatus_out, id_out,
	                                graph_out, dependencies_out,
	                                edgeData_out, numDependencies_out);
}

cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode *mode)
{
	int old;
	if (!mode || (int)*mode < 0 || (int)*mode > cudaStreamCaptureModeRelaxed)
		return ret(cudaErrorInvalidValue);
	old = tls_capture_mode;
	tls_capture_mode = *mode;
	*mode = (enum cudaStreamCaptureMode)old;
	return cudaSuccess;
}

/* ---- explicit graphs, instantiation, update, launch -------------------- */

cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	if (!pGraph || flags)
		return ret(cudaErrorInvalidValue);
	if (!(*pGraph = graph_new()))
		return ret(cudaErrorMemoryAllocation);
	return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
	if (!valid_graph(graph))
		return ret(cudaErrorInvalidValue);
	graph_free(graph);
	return cudaSuccess;
}

static int kernel_node(struct CUgraphNode_st *t,
                       const struct cudaKernelNodeParams *p)
{
	memset(t, 0, sizeof(*t));
	t->type = cudaGraphNodeTypeKernel;
	t->kernel = kernel_of(p->func);
	t->grid = p->gridDim;
	t->block = p->blockDim;
	t->smem = p->sharedMemBytes;
	t->params = p->kernelParams;
	return t->kernel != NULL;
}

cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode,
                                   cudaGraph_t graph,
                                   const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies,
                                   const struct cudaKernelNodeParams *pNodeParams)
{
	struct CUgraphNode_st t;
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!pGraphNode || !pNodeParams))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess && !kernel_node(&t, pNodeParams))
		e = cudaErrorInvalidDeviceFunction;
	if (e == cudaSuccess)
		e = launch_check(t.kernel, t.grid, t.block, t.smem);
	if (e == cudaSuccess)
		e = graph_add(graph, &t, pDependencies, numDependencies,
		              pGraphNode);
	return ret(e);
}

cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t *pGraphNode,
                                  cudaGraph_t graph,
                                  const cudaGraphNode_t *pDependencies,
                                  size_t numDependencies)
{
	struct CUgraphNode_st t = {.type = cudaGraphNodeTypeEmpty};
	if (!pGraphNode)
		return ret(cudaErrorInvalidValue);
	return ret(graph_add(graph, &t, pDependencies, numDependencies,
	                     pGraphNode));
}

cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t *pGraphNode,
                                   cudaGraph_t graph,
                                   const cudaGraphNode_t *pDependencies,
                                   size_t numDependencies,
                                   const struct cudaMemsetParams *p)
{
	struct CUgraphNode_st t = {.type = cudaGraphNodeTypeMemset};
	if (!pGraphNode || !p || (p->elementSize != 1 && p->elementSize != 2 &&
	                          p->elementSize != 4))
		return ret(cudaErrorInvalidValue);
	/* The element pattern is what a byte set cannot express; a fake
	 * without device memory only needs its extent. */
	t.op = (struct op){OP_SET, p->dst, NULL, 0,
	                   p->height > 1 ? p->pitch : p->width * p->elementSize,
	                   0, p->width * p->elementSize,
	                   p->height ? p->height : 1, (int)(p->value & 0xff), 0};
	return ret(graph_add(graph, &t, pDependencies, numDependencies,
	                     pGraphNode));
}

cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t *pGraphNode,
                                     cudaGraph_t graph,
                                     const cudaGraphNode_t *pDependencies,
                                     size_t numDependencies, void *dst,
                                     const void *src, size_t count,
                                     enum cudaMemcpyKind kind)
{
	struct CUgraphNode_st t = {.type = cudaGraphNodeTypeMemcpy};
	if (!pGraphNode || kind < cudaMemcpyHostToHost ||
	    kind > cudaMemcpyDefault)
		return ret(cudaErrorInvalidValue);
	t.op = op_copy(dst, src, count, kind);
	return ret(graph_add(graph, &t, pDependencies, numDependencies,
	                     pGraphNode));
}

cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode,
                                 cudaGraph_t graph,
                                 const cudaGraphNode_t *pDependencies,
                                 size_t numDependencies,
                                 const struct cudaHostNodeParams *pNodeParams)
{
	struct CUgraphNode_st t = {.type = cudaGraphNodeTypeHost};
	if (!pGraphNode || !pNodeParams || !pNodeParams->fn)
		return ret(cudaErrorInvalidValue);
	t.fn = pNodeParams->fn;
	t.user = pNodeParams->userData;
	return ret(graph_add(graph, &t, pDependencies, numDependencies,
	                     pGraphNode));
}

cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes,
                              size_t *numNodes)
{
	if (!valid_graph(graph) || !numNodes)
		return ret(cudaErrorInvalidValue);
	if (nodes)
		for (size_t i = 0; i < *numNodes; i++)
			nodes[i] = i < graph->n ? graph->node[i] : NULL;
	*numNodes = graph->n;
	return cudaSuccess;
}

cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node,
                                 enum cudaGraphNodeType *pType)
{
	if (!valid_node(node) || !pType)
		return ret(cudaErrorInvalidValue);
	*pType = (enum cudaGraphNodeType)node->type;
	return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node,
                                         struct cudaKernelNodeParams *p)
{
	if (!valid_node(node) || node->type != cudaGraphNodeTypeKernel || !p)
		return ret(cudaErrorInvalidValue);
	memset(p, 0, sizeof(*p));
	p->func = (void *)node->kernel->host_fun;
	p->gridDim = node->grid;
	p->blockDim = node->block;
	p->sharedMemBytes = node->smem;
	p->kernelParams = node->params;
	return cudaSuccess;
}

static cudaError_t set_kernel_params(struct CUgraphNode_st *n,
                                     const struct cudaKernelNodeParams *p)
{
	struct CUgraphNode_st t;
	cudaError_t e;
	if (!n || n->type != cudaGraphNodeTypeKernel || !p)
		return cudaErrorInvalidValue;
	if (!kernel_node(&t, p))
		return cudaErrorInvalidDeviceFunction;
	if ((e = launch_check(t.kernel, t.grid, t.block, t.smem)) != cudaSuccess)
		return e;
	n->kernel = t.kernel;
	n->grid = t.grid;
	n->block = t.block;
	n->smem = t.smem;
	n->params = t.params;
	return cudaSuccess;
}

cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t node,
                                         const struct cudaKernelNodeParams *p)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess)
		e = set_kernel_params(valid_node(node) ? node : NULL, p);
	return ret(e);
}

static cudaError_t exec_new(cudaGraphExec_t *out, cudaGraph_t g)
{
	struct CUgraphExec_st *x = calloc(1, sizeof(*x));
	if (!x)
		return cudaErrorMemoryAllocation;
	x->node = calloc(g->n ? g->n : 1, sizeof(*x->node));
	x->from = calloc(g->n ? g->n : 1, sizeof(*x->from));
	if (!x->node || !x->from) {
		free(x->node);
		free(x->from);
		free(x);
		return cudaErrorMemoryAllocation;
	}
	for (size_t i = 0; i < g->n; i++) {
		x->node[i] = *g->node[i];
		x->from[i] = g->node[i];
	}
	x->n = g->n;
	x->magic = RT_EXEC_MAGIC;
	*out = x;
	return cudaSuccess;
}

static cudaError_t instantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                               unsigned long long flags)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess &&
	    (!pGraphExec || !valid_graph(graph) || (flags & ~0xfull)))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = exec_new(pGraphExec, graph);
	return ret(e);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                 unsigned long long flags)
{
	return instantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec,
                                          cudaGraph_t graph,
                                          unsigned long long flags)
{
	return instantiate(pGraphExec, graph, flags);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	if (!valid_exec(graphExec))
		return ret(cudaErrorInvalidValue);
	graphExec->magic = 0;
	free(graphExec->node);
	free(graphExec->from);
	free(graphExec);
	return cudaSuccess;
}

/* The update rules that matter to callers (llama.cpp, PyTorch): the same
 * nodes, of the same types, in the same order take the new graph's
 * parameters; anything else fails and leaves the executable graph as it
 * was, with the reason in resultInfo. */
cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                cudaGraphExecUpdateResultInfo *resultInfo)
{
	cudaGraphExecUpdateResultInfo info = {cudaGraphExecUpdateSuccess, NULL,
	                                      NULL};
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!valid_exec(hGraphExec) || !valid_graph(hGraph)))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	if (hGraphExec->n != hGraph->n) {
		info.result = cudaGraphExecUpdateErrorTopologyChanged;
	} else {
		for (size_t i = 0; i < hGraph->n; i++) {
			if (hGraph->node[i]->type != hGraphExec->node[i].type) {
				info.result =
				        cudaGraphExecUpdateErrorNodeTypeChanged;
				info.errorNode = hGraph->node[i];
				break;
			}
		}
	}
	if (resultInfo)
		*resultInfo = info;
	if (info.result != cudaGraphExecUpdateSuccess)
		return ret(cudaErrorGraphExecUpdateFailure);
	for (size_t i = 0; i < hGraph->n; i++) {
		hGraphExec->node[i] = *hGraph->node[i];
		hGraphExec->from[i] = hGraph->node[i];
	}
	return cudaSuccess;
}

cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t hGraphExec,
                                             cudaGraphNode_t node,
                                             const struct cudaKernelNodeParams *p)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && (!valid_exec(hGraphExec) || !valid_node(node)))
		e = cudaErrorInvalidValue;
	if (e != cudaSuccess)
		return ret(e);
	for (size_t i = 0; i < hGraphExec->n; i++)
		if (hGraphExec->from[i] == node)
			return ret(set_kernel_params(&hGraphExec->node[i], p));
	return ret(cudaErrorInvalidValue);
}

/* Runs the nodes in order: host functions are called, copies and sets
 * move what they may (see host_mapped), kernels do nothing. Launched into
 * a capturing stream, the graph's nodes are captured instead. */
static cudaError_t graph_launch(cudaGraphExec_t x, cudaStream_t stream)
{
	struct rt_stream *r;
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_exec(x))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	if (e != cudaSuccess)
		return ret(e);
	r = capturing(stream);
	for (size_t i = 0; e == cudaSuccess && i < x->n; i++) {
		const struct CUgraphNode_st *n = &x->node[i];
		if (r)
			e = capture_node(r, n);
		else if (n->type == cudaGraphNodeTypeHost)
			n->fn(n->user);
		else if (n->type == cudaGraphNodeTypeMemcpy ||
		         n->type == cudaGraphNodeTypeMemset)
			e = do_op(&n->op);
	}
	rtlog("cudaGraphLaunch(%zu nodes) -> %d", x->n, (int)e);
	return ret(e);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream);
}

cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream);
}

/* Uploading prepares a launch; there is nothing to prepare. */
cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	cudaError_t e = ctx();
	if (e == cudaSuccess && !valid_exec(graphExec))
		e = cudaErrorInvalidValue;
	if (e == cudaSuccess)
		e = check_stream(stream);
	return ret(e);
}

cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return cudaGraphUpload(graphExec, stream);
}

/* ---- every other export ------------------------------------------------ */

/* Compiled against NVIDIA's headers (the prototype check), the stubs'
 * generic signature would clash with the real ones: they are left out
 * there. */
#ifndef VRT_HAVE_CUDA_RUNTIME_H
/* Says once per name which call the program made that the fake does not
 * emulate, and answers cudaErrorNotSupported (which also becomes the
 * thread's last error). */
static int stub(const char *name, atomic_int *said)
{
	if (!atomic_exchange(said, 1))
		fprintf(stderr,
		        "fakecudart: %s is not emulated: cudaErrorNotSupported\n",
		        name);
	return (int)ret(cudaErrorNotSupported);
}

#define X(name)                                                                \
	int name(void);                                                        \
	int name(void)                                                         \
	{                                                                      \
		static atomic_int said;                                        \
		return stub(#name, &said);                                     \
	}
#include "cudart_stubs.h"
#undef X
#endif
