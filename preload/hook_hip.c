/*
 * hook_hip.c — wrappers for the HIP runtime's memory calls (libamdhip64),
 * the AMD counterpart of hook_cuda.c. PyTorch and vLLM on ROCm, and
 * llama.cpp's HIP backend, link the runtime directly; Python code and
 * loaders reach it with dlopen + dlsym; HIP 6.2 and later also hand out
 * pointers through hipGetProcAddress. So calls reach the wrappers by:
 *
 *  1. direct binding: the preload comes first in the global scope, so a
 *     program or library linked with -lamdhip64 calls our exports (an
 *     unversioned definition satisfies the runtime's hip_4.2/hip_5.1
 *     symbol versions); the real function is looked up with RTLD_NEXT,
 *     or through the runtime's own handle when it was loaded RTLD_LOCAL;
 *  2. dlsym(handle, "<hooked name>") answered by the runtime → our
 *     wrapper (vrt_hook_hip_dlsym, called from hook_libc.c for names
 *     starting with "hip");
 *  3. the wrapped hipGetProcAddress/_spt calls the real resolver and
 *     substitutes the wrapper when the answer is the runtime's plain
 *     export of a hooked name. A per-thread-stream answer (a "_spt"
 *     export) is a different function and passes through unwrapped.
 *
 * The runtime calls some of its own exports through its PLT (hipHostMalloc,
 * hipMemGetInfo): those land here too, and the re-entry guard keeps them
 * from being recorded inside an outer hooked call.
 *
 * Rules as in hook_cuda.c: every call goes through and its result comes
 * back unchanged — NULL frees, unknown pointers, failures included; a
 * failed allocation records the runtime's free/total and syncs the trace;
 * the device comes from the call (hipMemCreate's location) or hipGetDevice
 * (HIP has a current device per thread, default 0, and no explicit
 * context). A real pointer is only ever replaced by the same value.
 *
 * Threads: any; real pointers are atomics, the inventory is taken once
 * under a CAS flag.
 */
#include "hook.h"
#include "hook_table.h"

/* The wrappers are the exported interface: the version script picks which
 * names leave the library; everything else is hidden. */
#pragma GCC visibility push(default)
#include "hip_api.h"
#pragma GCC visibility pop

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <string.h>

static const struct vrt_hook hooks[VRT_HIP_HOOK_COUNT] = {
#define VRT_X_HIP_ROW(exp)                                                     \
	[VRT_HIP_HOOK_##exp] = {#exp, (void *)&exp, NULL, 0, 0},
        VRT_HIP_HOOKS(VRT_X_HIP_ROW)
#undef VRT_X_HIP_ROW
};

static _Atomic(void *) real_ptr[VRT_HIP_HOOK_COUNT];

/* Sonames of the runtime, newest first: ROCm 7, 6, 5, and the dev link. */
static const char *const runtime_names[] = {
        "libamdhip64.so.7",
        "libamdhip64.so.6",
        "libamdhip64.so.5",
        "libamdhip64.so",
        NULL,
};
static struct vrt_hooklib runtime = {.file_prefix = "libamdhip64.so",
                                     .sonames = runtime_names,
                                     .hooks = hooks,
                                     .real = real_ptr,
                                     .count = VRT_HIP_HOOK_COUNT};

#define REAL(name)                                                             \
	((__typeof__(&name))vrt_hooklib_real(&runtime, VRT_HIP_HOOK_##name))

static void *runtime_sym(const char *name)
{
	return vrt_hooklib_sym(&runtime, name);
}

static void *real_get(int idx)
{
	return vrt_hooklib_real(&runtime, idx);
}

void *vrt_hook_hip_dlsym(const char *symbol, void *addr)
{
	return vrt_hooklib_dlsym(&runtime, symbol, addr);
}

/* A resolver answered symbol with *pfn: wrap it when it is the runtime's
 * plain export of a hooked name (not a "_spt" variant, not a function of
 * another library). The runtime's resolver looks names up with dlsym on
 * its own handle, so the answer may already be our wrapper. */
static void resolved(const char *symbol, void **pfn)
{
	if (!symbol || !pfn || !*pfn)
		return;
	int idx = vrt_hooklib_find(&runtime, symbol);
	if (idx < 0 || *pfn == hooks[idx].wrapper)
		return;
	if (*pfn == real_get(idx))
		*pfn = hooks[idx].wrapper;
}

#define CHECK_REAL(real)                                                       \
	if (VRT_UNLIKELY(!(real)))                                             \
	return hipErrorNotInitialized

hipError_t hipGetProcAddress(const char *symbol, void **pfn, int hipVersion,
                             uint64_t flags,
                             hipDriverProcAddressQueryResult *symbolStatus)
{
	__typeof__(&hipGetProcAddress) real = REAL(hipGetProcAddress);
	CHECK_REAL(real);
	hipError_t r = real(symbol, pfn, hipVersion, flags, symbolStatus);
	if (r == hipSuccess)
		resolved(symbol, pfn);
	return r;
}

hipError_t hipGetProcAddress_spt(const char *symbol, void **pfn, int hipVersion,
                                 uint64_t flags,
                                 hipDriverProcAddressQueryResult *symbolStatus)
{
	__typeof__(&hipGetProcAddress_spt) real = REAL(hipGetProcAddress_spt);
	CHECK_REAL(real);
	hipError_t r = real(symbol, pfn, hipVersion, flags, symbolStatus);
	if (r == hipSuccess)
		resolved(symbol, pfn);
	return r;
}

/* ---- context: device, free memory, inventory --------------------------- */

static _Atomic(void *) aux_get_device;

static void *aux(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_relaxed);
	if (VRT_LIKELY(p != NULL))
		return p;
	p = runtime_sym(name);
	if (p)
		atomic_store(slot, p);
	return p;
}

static int cur_device(void)
{
	__typeof__(&hipGetDevice) f = aux(&aux_get_device, "hipGetDevice");
	int d;
	if (f && f(&d) == hipSuccess && d >= 0)
		return d;
	return VRT_DEVICE_UNKNOWN;
}

/* The runtime's free/total for the current device; 0 on failure. The real
 * function is called directly, so the app's probe counters stay exact. */
static int mem_info(uint64_t *free_b, uint64_t *total_b)
{
	__typeof__(&hipMemGetInfo) f = real_get(VRT_HIP_HOOK_hipMemGetInfo);
	size_t fr, to;
	if (!f || f(&fr, &to) != hipSuccess)
		return 0;
	*free_b = fr;
	*total_b = to;
	return 1;
}

static _Atomic int inventory_state; /* 0 todo, 1 busy/done, 2+ failures */

/* Names, totals and uuids of every HIP device, once, after the runtime
 * has answered a memory call. writer.c keeps CUDA and HIP inventories
 * apart, so a process using both runtimes describes both. */
static void inventory(void)
{
	int s = atomic_load_explicit(&inventory_state, memory_order_relaxed);
	if (VRT_LIKELY(s == 1) || s > 4)
		return;
	if (!atomic_compare_exchange_strong(&inventory_state, &s, 1))
		return;
	__typeof__(&hipGetDeviceCount) count = runtime_sym("hipGetDeviceCount");
	__typeof__(&hipDeviceGetName) name = runtime_sym("hipDeviceGetName");
	__typeof__(&hipDeviceTotalMem) total = runtime_sym("hipDeviceTotalMem");
	/* hipDeviceGetUuid appeared in HIP 5.1. */
	__typeof__(&hipDeviceGetUuid) uuid = runtime_sym("hipDeviceGetUuid");
	int n = 0;
	if (!count || count(&n) != hipSuccess || n <= 0) {
		/* Try again at a later call, a few times at most. */
		atomic_store(&inventory_state, s == 0 ? 2 : s + 1);
		return;
	}
	struct vrt_device_info devs[64];
	if (n > 64)
		n = 64;
	memset(devs, 0, sizeof(devs));
	for (int i = 0; i < n; i++) {
		/* A hipDevice_t is the ordinal in the HIP runtime. */
		devs[i].vendor = VRT_VENDOR_HIP;
		devs[i].ordinal = i;
		if (name)
			name(devs[i].name, (int)sizeof(devs[i].name) - 1, i);
		size_t bytes = 0;
		if (total && total(&bytes, i) == hipSuccess)
			devs[i].total_bytes = bytes;
		hipUUID u;
		if (uuid && uuid(&u, i) == hipSuccess) {
			memcpy(devs[i].uuid, u.bytes, 16);
			devs[i].have_uuid = 1;
		}
	}
	vrt_writer_devices(devs, n);
}

/* ---- recording --------------------------------------------------------- */

static void rec_alloc(int api, int dev, uint64_t addr, uint64_t size,
                      uint64_t aux_v)
{
	inventory();
	vrt_hook_alloc(api, dev, addr, size, aux_v);
}

static void rec_free(int api, int dev, uint64_t addr, uint64_t aux_v)
{
	vrt_hook_free(api, dev, addr, aux_v);
}

static void rec_fail(int api, int dev, uint64_t addr, uint64_t size,
                     uint64_t aux_v, hipError_t err)
{
	int allocating = vrt_api_op((unsigned)api) == VRT_OP_ALLOC;
	/* A process whose first call fails still names every device. */
	inventory();
	vrt_hook_fail(api, dev, addr, size, aux_v, (uint32_t)err,
	              allocating && dev >= 0 ? cur_device()
	                                     : VRT_HOOK_NO_DEVICE,
	              mem_info);
}

#define PTR(p) ((uint64_t)(uintptr_t)(p))

/* A failed free names no known allocation: charge it to the device the
 * caller was working on. */
static int fail_device(int dev)
{
	return dev == VRT_DEVICE_UNKNOWN ? cur_device() : dev;
}

/* Shared body of the allocators. HIP answers a zero-byte request with
 * success and NULL: nothing was allocated, so there is no event. */
#define ALLOC_BODY(api, call, dev_expr, out_expr, size_expr, aux_expr)         \
	do {                                                                   \
		if (!vrt_hook_enter())                                         \
			return call;                                           \
		hipError_t r_ = call;                                          \
		int dev_ = (dev_expr);                                         \
		uint64_t out_ = r_ == hipSuccess ? (out_expr) : 0;             \
		if (out_)                                                      \
			rec_alloc(api, dev_, out_, (size_expr), (aux_expr));   \
		else if (r_ != hipSuccess)                                     \
			rec_fail(api, dev_, 0, (size_expr), (aux_expr), r_);   \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* Shared body of the frees; a NULL free is not an event. */
#define FREE_BODY(api, call, dev_expr, addr_expr, aux_expr)                    \
	do {                                                                   \
		if ((addr_expr) == 0 || !vrt_hook_enter())                     \
			return call;                                           \
		hipError_t r_ = call;                                          \
		int dev_ = (dev_expr);                                         \
		if (r_ == hipSuccess)                                          \
			rec_free(api, dev_, (addr_expr), (aux_expr));          \
		else                                                           \
			rec_fail(api, fail_device(dev_), (addr_expr), 0,       \
			         (aux_expr), r_);                              \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* The pointer an allocator wrote; on success it is never NULL. */
#define OUT(pp) ((pp) ? PTR(*(pp)) : 0)

/* ---- device ------------------------------------------------------------ */

hipError_t hipMalloc(void **ptr, size_t size)
{
	__typeof__(&hipMalloc) real = REAL(hipMalloc);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMalloc, real(ptr, size), cur_device(), OUT(ptr),
	           size, 0);
}

hipError_t hipExtMallocWithFlags(void **ptr, size_t sizeBytes,
                                 unsigned int flags)
{
	__typeof__(&hipExtMallocWithFlags) real = REAL(hipExtMallocWithFlags);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipExtMallocWithFlags, real(ptr, sizeBytes, flags),
	           cur_device(), OUT(ptr), sizeBytes, flags);
}

hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width,
                          size_t height)
{
	__typeof__(&hipMallocPitch) real = REAL(hipMallocPitch);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(ptr, pitch, width, height);
	hipError_t r = real(ptr, pitch, width, height);
	int dev = cur_device();
	if (r == hipSuccess && OUT(ptr))
		rec_alloc(VRT_API_hipMallocPitch, dev, OUT(ptr),
		          (uint64_t)(pitch ? *pitch : width) * height, 0);
	else if (r != hipSuccess)
		rec_fail(VRT_API_hipMallocPitch, dev, 0,
		         (uint64_t)width * height, 0, r);
	vrt_hook_leave();
	return r;
}

hipError_t hipFree(void *ptr)
{
	__typeof__(&hipFree) real = REAL(hipFree);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipFree, real(ptr), VRT_DEVICE_UNKNOWN, PTR(ptr), 0);
}

/* ---- stream-ordered and pools ------------------------------------------ */

hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream)
{
	__typeof__(&hipMallocAsync) real = REAL(hipMallocAsync);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMallocAsync, real(dev_ptr, size, stream),
	           cur_device(), OUT(dev_ptr), size, PTR(stream));
}

hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size,
                                  hipMemPool_t mem_pool, hipStream_t stream)
{
	__typeof__(&hipMallocFromPoolAsync) real = REAL(hipMallocFromPoolAsync);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMallocFromPoolAsync,
	           real(dev_ptr, size, mem_pool, stream), cur_device(),
	           OUT(dev_ptr), size, PTR(mem_pool));
}

hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream)
{
	__typeof__(&hipFreeAsync) real = REAL(hipFreeAsync);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipFreeAsync, real(dev_ptr, stream),
	          VRT_DEVICE_UNKNOWN, PTR(dev_ptr), PTR(stream));
}

/* ---- virtual memory ---------------------------------------------------- */

hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment,
                                void *addr, unsigned long long flags)
{
	__typeof__(&hipMemAddressReserve) real = REAL(hipMemAddressReserve);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMemAddressReserve,
	           real(ptr, size, alignment, addr, flags), cur_device(),
	           OUT(ptr), size, 0);
}

hipError_t hipMemAddressFree(void *devPtr, size_t size)
{
	__typeof__(&hipMemAddressFree) real = REAL(hipMemAddressFree);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipMemAddressFree, real(devPtr, size),
	          VRT_DEVICE_UNKNOWN, PTR(devPtr), size);
}

/* The physical memory's device is the one the prop names (either HIP
 * layout, hip_api.h), else the current one. */
static int create_device(const hipMemAllocationProp *prop)
{
	int d = vrt_hip_prop_device(prop);
	return d >= 0 ? d : cur_device();
}

hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                        const hipMemAllocationProp *prop,
                        unsigned long long flags)
{
	__typeof__(&hipMemCreate) real = REAL(hipMemCreate);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMemCreate, real(handle, size, prop, flags),
	           create_device(prop), OUT(handle), size, flags);
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle)
{
	__typeof__(&hipMemRelease) real = REAL(hipMemRelease);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipMemRelease, real(handle), VRT_DEVICE_UNKNOWN,
	          PTR(handle), 0);
}

hipError_t hipMemMap(void *ptr, size_t size, size_t offset,
                     hipMemGenericAllocationHandle_t handle,
                     unsigned long long flags)
{
	__typeof__(&hipMemMap) real = REAL(hipMemMap);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(ptr, size, offset, handle, flags);
	hipError_t r = real(ptr, size, offset, handle, flags);
	if (r == hipSuccess) {
		struct vrt_ev ev = {.rec = VRT_REC_MAP,
		                    .api = VRT_API_hipMemMap,
		                    .device = VRT_DEVICE_UNKNOWN,
		                    .addr = PTR(ptr),
		                    .size = size,
		                    .offset = offset,
		                    .handle = PTR(handle)};
		vrt_hook_record(&ev);
	} else {
		rec_fail(VRT_API_hipMemMap, cur_device(), PTR(ptr), size,
		         PTR(handle), r);
	}
	vrt_hook_leave();
	return r;
}

hipError_t hipMemUnmap(void *ptr, size_t size)
{
	__typeof__(&hipMemUnmap) real = REAL(hipMemUnmap);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(ptr, size);
	hipError_t r = real(ptr, size);
	if (r == hipSuccess) {
		struct vrt_ev ev = {.rec = VRT_REC_UNMAP,
		                    .api = VRT_API_hipMemUnmap,
		                    .device = VRT_DEVICE_UNKNOWN,
		                    .addr = PTR(ptr),
		                    .size = size};
		vrt_hook_record(&ev);
	} else {
		rec_fail(VRT_API_hipMemUnmap, cur_device(), PTR(ptr), size, 0,
		         r);
	}
	vrt_hook_leave();
	return r;
}

/* ---- managed ----------------------------------------------------------- */

hipError_t hipMallocManaged(void **dev_ptr, size_t size, unsigned int flags)
{
	__typeof__(&hipMallocManaged) real = REAL(hipMallocManaged);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMallocManaged, real(dev_ptr, size, flags),
	           cur_device(), OUT(dev_ptr), size, flags);
}

/* ---- pinned and registered host memory ---------------------------------- */

hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
	__typeof__(&hipHostMalloc) real = REAL(hipHostMalloc);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipHostMalloc, real(ptr, size, flags),
	           VRT_DEVICE_HOST, OUT(ptr), size, flags);
}

hipError_t hipMallocHost(void **ptr, size_t size)
{
	__typeof__(&hipMallocHost) real = REAL(hipMallocHost);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipMallocHost, real(ptr, size), VRT_DEVICE_HOST,
	           OUT(ptr), size, 0);
}

hipError_t hipHostFree(void *ptr)
{
	__typeof__(&hipHostFree) real = REAL(hipHostFree);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipHostFree, real(ptr), VRT_DEVICE_HOST, PTR(ptr), 0);
}

hipError_t hipFreeHost(void *ptr)
{
	__typeof__(&hipFreeHost) real = REAL(hipFreeHost);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipFreeHost, real(ptr), VRT_DEVICE_HOST, PTR(ptr), 0);
}

hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags)
{
	__typeof__(&hipHostRegister) real = REAL(hipHostRegister);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_hipHostRegister, real(hostPtr, sizeBytes, flags),
	           VRT_DEVICE_HOST, PTR(hostPtr), sizeBytes, flags);
}

hipError_t hipHostUnregister(void *hostPtr)
{
	__typeof__(&hipHostUnregister) real = REAL(hipHostUnregister);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_hipHostUnregister, real(hostPtr), VRT_DEVICE_HOST,
	          PTR(hostPtr), 0);
}

/* ---- capacity probe ---------------------------------------------------- */

hipError_t hipMemGetInfo(size_t *free, size_t *total)
{
	__typeof__(&hipMemGetInfo) real = REAL(hipMemGetInfo);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(free, total);
	hipError_t r = real(free, total);
	if (r == hipSuccess && free && total) {
		inventory();
		struct vrt_ev ev = {.rec = VRT_REC_MEMINFO,
		                    .api = VRT_API_hipMemGetInfo,
		                    .device = cur_device(),
		                    .free_bytes = *free,
		                    .total_bytes = *total};
		vrt_hook_record(&ev);
	}
	vrt_hook_leave();
	return r;
}
