/*
 * sim_gpu.c — the example servers' GPU runtime: CUDA driver or HIP runtime
 * behind one set of calls (sim_gpu.h). CUDA is reached as libcudart 12/13
 * reaches it — dlopen("libcuda.so.1"), dlsym of cuGetProcAddress_v2 only,
 * then cuGetProcAddress("cuGetProcAddress", 12000) and every other name
 * through that — so a profiler sees the path real engines take; HIP as
 * PyTorch on ROCm does: dlopen of libamdhip64.so (or its .so.6/.so.5
 * sonames) and dlsym by name.
 *
 * The function tables are written once by sim_gpu_open (before any other
 * call, on one thread) and only read afterwards. The CUDA primary contexts
 * are retained once per device under a mutex; the current context and the
 * current HIP device are the runtimes' own per-thread state.
 */
#include "sim_gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cuda_api_ext.h"
#include "hip_api_ext.h"

#define MAX_DEV 64

typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t,
                            CUdriverProcAddressQueryResult *);

#define CU_FN(name) __typeof__(name) *
static struct {
	CU_FN(cuInit) init;
	CU_FN(cuDeviceGetCount) count;
	CU_FN(cuDevicePrimaryCtxRetain) retain;
	CU_FN(cuCtxSetCurrent) set_current;
	CU_FN(cuCtxGetDevice) get_device;
	CU_FN(cuDeviceTotalMem_v2) total_mem;
	CU_FN(cuMemAlloc_v2) alloc;
	CU_FN(cuMemFree_v2) free_;
	CU_FN(cuMemAllocAsync) alloc_async;
	CU_FN(cuMemFreeAsync) free_async;
	CU_FN(cuStreamSynchronize) sync;
	CU_FN(cuMemGetInfo_v2) mem_info;
	CU_FN(cuMemHostAlloc) host_alloc;
	CU_FN(cuMemGetAllocationGranularity) granularity;
	CU_FN(cuMemAddressReserve) va_reserve;
	CU_FN(cuMemAddressFree) va_free;
	CU_FN(cuMemCreate) create;
	CU_FN(cuMemRelease) release;
	CU_FN(cuMemMap) map;
	CU_FN(cuMemUnmap) unmap;
	CU_FN(cuMemSetAccess) set_access;
	CU_FN(cuDeviceGetDefaultMemPool) default_pool;
	CU_FN(cuMemPoolSetAttribute) pool_set;
	CU_FN(cuMemPoolTrimTo) pool_trim;
} cu;

static struct {
	CU_FN(hipGetDeviceCount) count;
	CU_FN(hipSetDevice) set_device;
	CU_FN(hipGetDevice) get_device;
	CU_FN(hipDeviceTotalMem) total_mem;
	CU_FN(hipMalloc) malloc_;
	CU_FN(hipFree) free_;
	CU_FN(hipMallocAsync) malloc_async;
	CU_FN(hipFreeAsync) free_async;
	CU_FN(hipStreamSynchronize) sync;
	CU_FN(hipMemGetInfo) mem_info;
	CU_FN(hipHostMalloc) host_malloc;
	CU_FN(hipMemGetAllocationGranularity) granularity;
	CU_FN(hipMemAddressReserve) va_reserve;
	CU_FN(hipMemAddressFree) va_free;
	CU_FN(hipMemCreate) create;
	CU_FN(hipMemRelease) release;
	CU_FN(hipMemMap) map;
	CU_FN(hipMemUnmap) unmap;
	CU_FN(hipMemSetAccess) set_access;
} hip;

static int g_hip;
static pthread_mutex_t g_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext g_ctx[MAX_DEV];

struct name_slot {
	const char *name;
	void **slot;
	int optional; /* VMM and stream-ordered calls: only some modes */
};

static int resolve_cuda(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	const struct name_slot names[] = {
	        {"cuInit", (void **)&cu.init, 0},
	        {"cuDeviceGetCount", (void **)&cu.count, 0},
	        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain, 0},
	        {"cuCtxSetCurrent", (void **)&cu.set_current, 0},
	        {"cuCtxGetDevice", (void **)&cu.get_device, 0},
	        {"cuDeviceTotalMem", (void **)&cu.total_mem, 0},
	        {"cuMemAlloc", (void **)&cu.alloc, 0},
	        {"cuMemFree", (void **)&cu.free_, 0},
	        {"cuMemGetInfo", (void **)&cu.mem_info, 0},
	        {"cuMemHostAlloc", (void **)&cu.host_alloc, 0},
	        {"cuMemAllocAsync", (void **)&cu.alloc_async, 1},
	        {"cuMemFreeAsync", (void **)&cu.free_async, 1},
	        {"cuStreamSynchronize", (void **)&cu.sync, 1},
	        {"cuMemGetAllocationGranularity", (void **)&cu.granularity, 1},
	        {"cuMemAddressReserve", (void **)&cu.va_reserve, 1},
	        {"cuMemAddressFree", (void **)&cu.va_free, 1},
	        {"cuMemCreate", (void **)&cu.create, 1},
	        {"cuMemRelease", (void **)&cu.release, 1},
	        {"cuMemMap", (void **)&cu.map, 1},
	        {"cuMemUnmap", (void **)&cu.unmap, 1},
	        {"cuMemSetAccess", (void **)&cu.set_access, 1},
	        {"cuDeviceGetDefaultMemPool", (void **)&cu.default_pool, 1},
	        {"cuMemPoolSetAttribute", (void **)&cu.pool_set, 1},
	        {"cuMemPoolTrimTo", (void **)&cu.pool_trim, 1},
	};

	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL))
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if ((get(names[i].name, names[i].slot, 12000, 0, NULL) ||
		     !*names[i].slot) &&
		    !names[i].optional)
			return -1;
	return cu.init(0) ? -1 : 0;
}

static int resolve_hip(void)
{
	static const char *const sonames[] = {
	        "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
	const struct name_slot names[] = {
	        {"hipGetDeviceCount", (void **)&hip.count, 0},
	        {"hipSetDevice", (void **)&hip.set_device, 0},
	        {"hipGetDevice", (void **)&hip.get_device, 0},
	        {"hipDeviceTotalMem", (void **)&hip.total_mem, 0},
	        {"hipMalloc", (void **)&hip.malloc_, 0},
	        {"hipFree", (void **)&hip.free_, 0},
	        {"hipMemGetInfo", (void **)&hip.mem_info, 0},
	        {"hipHostMalloc", (void **)&hip.host_malloc, 0},
	        {"hipMallocAsync", (void **)&hip.malloc_async, 1},
	        {"hipFreeAsync", (void **)&hip.free_async, 1},
	        {"hipStreamSynchronize", (void **)&hip.sync, 1},
	        {"hipMemGetAllocationGranularity", (void **)&hip.granularity,
	         1},
	        {"hipMemAddressReserve", (void **)&hip.va_reserve, 1},
	        {"hipMemAddressFree", (void **)&hip.va_free, 1},
	        {"hipMemCreate", (void **)&hip.create, 1},
	        {"hipMemRelease", (void **)&hip.release, 1},
	        {"hipMemMap", (void **)&hip.map, 1},
	        {"hipMemUnmap", (void **)&hip.unmap, 1},
	        {"hipMemSetAccess", (void **)&hip.set_access, 1},
	};
	void *h = NULL;

	for (size_t i = 0; !h && i < sizeof(sonames) / sizeof(sonames[0]); i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*names[i].slot = dlsym(h, names[i].name)) &&
		    !names[i].optional)
			return -1;
	return 0;
}

int sim_gpu_open(int use_hip)
{
	/* The engines are C++ programs: with the C++ runtime loaded, a
	 * profiler in the process can demangle the allocator names the
	 * examples carry (sim_alloc.c). Without it they stay mangled. */
	dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
	g_hip = use_hip;
	return g_hip ? resolve_hip() : resolve_cuda();
}

int sim_gpu_is_hip(void)
{
	return g_hip;
}

const char *sim_gpu_name(void)
{
	return g_hip ? "HIP" : "CUDA";
}

const char *sim_gpu_ggml_name(void)
{
	return g_hip ? "ROCm" : "CUDA";
}

int sim_gpu_count(int *n)
{
	*n = 0;
	return g_hip ? hip.count(n) : cu.count(n);
}

int sim_gpu_use(int dev)
{
	CUcontext c;
	int rc = 0;

	if (g_hip)
		return hip.set_device(dev);
	if (dev < 0 || dev >= MAX_DEV)
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_ctx_lock);
	if (!g_ctx[dev])
		rc = cu.retain(&g_ctx[dev], dev);
	c = g_ctx[dev];
	pthread_mutex_unlock(&g_ctx_lock);
	return rc ? rc : (int)cu.set_current(c);
}

int sim_gpu_current(void)
{
	int d = 0;

	if (g_hip ? hip.get_device(&d) : cu.get_device(&d))
		return -1;
	return d;
}

size_t sim_gpu_total(int dev)
{
	size_t t = 0;

	if (g_hip ? hip.total_mem(&t, dev) : cu.total_mem(&t, dev))
		return 0;
	return t;
}

int sim_gpu_malloc(uint64_t *p, size_t bytes)
{
	void *q = NULL;
	int rc;

	if (!g_hip)
		return cu.alloc((CUdeviceptr *)p, bytes);
	rc = hip.malloc_(&q, bytes);
	*p = (uint64_t)(uintptr_t)q;
	return rc;
}

int sim_gpu_free(uint64_t p)
{
	return g_hip ? hip.free_((void *)(uintptr_t)p) : cu.free_(p);
}

int sim_gpu_has_async(void)
{
	return g_hip ? hip.malloc_async && hip.free_async && hip.sync
	             : cu.alloc_async && cu.free_async && cu.sync;
}

int sim_gpu_has_vmm(void)
{
	return g_hip ? hip.granularity && hip.va_reserve && hip.va_free &&
	                       hip.create && hip.release && hip.map &&
	                       hip.unmap && hip.set_access
	             : cu.granularity && cu.va_reserve && cu.va_free &&
	                       cu.create && cu.release && cu.map && cu.unmap &&
	                       cu.set_access;
}

int sim_gpu_malloc_async(uint64_t *p, size_t bytes)
{
	void *q = NULL;
	int rc;

	if (!g_hip)
		return cu.alloc_async((CUdeviceptr *)p, bytes, NULL);
	rc = hip.malloc_async(&q, bytes, NULL);
	*p = (uint64_t)(uintptr_t)q;
	return rc;
}

int sim_gpu_free_async(uint64_t p)
{
	return g_hip ? hip.free_async((void *)(uintptr_t)p, NULL)
	             : cu.free_async(p, NULL);
}

int sim_gpu_pool_keep(int dev)
{
	CUmemoryPool pool;
	uint64_t keep = UINT64_MAX;

	if (g_hip || !cu.default_pool || !cu.pool_set ||
	    cu.default_pool(&pool, dev))
		return -1;
	return cu.pool_set(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep) ? -1
	                                                                   : 0;
}

int sim_gpu_pool_trim(int dev)
{
	CUmemoryPool pool;

	if (g_hip || !cu.default_pool || !cu.pool_trim ||
	    cu.default_pool(&pool, dev) || sim_gpu_sync())
		return -1;
	return cu.pool_trim(pool, 0) ? -1 : 0;
}

int sim_gpu_sync(void)
{
	return g_hip ? hip.sync(NULL) : cu.sync(NULL);
}

void sim_gpu_mem_info(size_t *free_b, size_t *total_b)
{
	*free_b = *total_b = 0;
	if (g_hip ? hip.mem_info(free_b, total_b)
	          : cu.mem_info(free_b, total_b))
		*free_b = *total_b = 0;
}

int sim_gpu_host_alloc(void **p, size_t bytes)
{
	return g_hip ? hip.host_malloc(p, bytes, 0) : cu.host_alloc(p, bytes, 0);
}

/* ---- virtual memory ------------------------------------------------------ */

int sim_gpu_granularity(size_t *g, int dev)
{
	if (g_hip) {
		hipMemAllocationProp prop = {.type = hipMemAllocationTypePinned};
		prop.location.type = hipMemLocationTypeDevice;
		prop.location.id = dev;
		if (!hip.granularity)
			return -1;
		return hip.granularity(g, &prop,
		                       hipMemAllocationGranularityMinimum);
	}
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	if (!cu.granularity)
		return -1;
	return cu.granularity(g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
}

int sim_gpu_va_reserve(uint64_t *va, size_t bytes)
{
	void *q = NULL;
	int rc;

	if (!g_hip)
		return cu.va_reserve((CUdeviceptr *)va, bytes, 0, 0, 0);
	rc = hip.va_reserve(&q, bytes, 0, NULL, 0);
	*va = (uint64_t)(uintptr_t)q;
	return rc;
}

int sim_gpu_va_free(uint64_t va, size_t bytes)
{
	return g_hip ? hip.va_free((void *)(uintptr_t)va, bytes)
	             : cu.va_free(va, bytes);
}

int sim_gpu_create(uint64_t *handle, size_t bytes, int dev)
{
	if (g_hip) {
		hipMemAllocationProp prop = {.type = hipMemAllocationTypePinned};
		hipMemGenericAllocationHandle_t h = NULL;
		int rc;
		prop.location.type = hipMemLocationTypeDevice;
		prop.location.id = dev;
		rc = hip.create(&h, bytes, &prop, 0);
		*handle = (uint64_t)(uintptr_t)h;
		return rc;
	}
	CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED};
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	return cu.create((CUmemGenericAllocationHandle *)handle, bytes, &prop,
	                 0);
}

int sim_gpu_release(uint64_t handle)
{
	return g_hip ? hip.release((hipMemGenericAllocationHandle_t)(uintptr_t)
	                                   handle)
	             : cu.release(handle);
}

int sim_gpu_map(uint64_t va, size_t bytes, uint64_t handle)
{
	return g_hip ? hip.map((void *)(uintptr_t)va, bytes, 0,
	                       (hipMemGenericAllocationHandle_t)(uintptr_t)handle,
	                       0)
	             : cu.map(va, bytes, 0, handle, 0);
}

int sim_gpu_unmap(uint64_t va, size_t bytes)
{
	return g_hip ? hip.unmap((void *)(uintptr_t)va, bytes)
	             : cu.unmap(va, bytes);
}

int sim_gpu_set_access(uint64_t va, size_t bytes, int dev)
{
	if (g_hip) {
		hipMemAccessDesc d = {.flags = hipMemAccessFlagsProtReadWrite};
		d.location.type = hipMemLocationTypeDevice;
		d.location.id = dev;
		return hip.set_access((void *)(uintptr_t)va, bytes, &d, 1);
	}
	CUmemAccessDesc d = {.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = dev;
	return cu.set_access(va, bytes, &d, 1);
}

sim_gpu_alloc_fn sim_gpu_raw_alloc(void)
{
	return g_hip ? NULL : (sim_gpu_alloc_fn)cu.alloc;
}

sim_gpu_free_fn sim_gpu_raw_free(void)
{
	return g_hip ? NULL : (sim_gpu_free_fn)cu.free_;
}

const char *sim_gpu_size(char *buf, size_t n, double b)
{
	if (b < 1024.0)
		snprintf(buf, n, "%.0f bytes", b);
	else if (b < 1024.0 * 1024)
		snprintf(buf, n, "%.2f KiB", b / 1024.0);
	else if (b < 1024.0 * 1024 * 1024)
		snprintf(buf, n, "%.2f MiB", b / (1024.0 * 1024));
	else
		snprintf(buf, n, "%.2f GiB", b / (1024.0 * 1024 * 1024));
	return buf;
}
