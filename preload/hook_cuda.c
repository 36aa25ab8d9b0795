/*
 * hook_cuda.c — wrappers for the CUDA driver's memory calls, and the three
 * ways calls reach them (docs/design.md "How CUDA reaches the driver"):
 *
 *  1. dlsym(handle, "<hooked name>") answered by the driver → our wrapper
 *     (vrt_hook_cuda_dlsym, called from hook_libc.c). This is how libcudart
 *     gets cuGetProcAddress_v2, and how ctypes/NCCL/Triton get the rest.
 *  2. The wrapped cuGetProcAddress/_v2 calls the real resolver first
 *     (honouring cudaVersion and flags) and then substitutes the wrapper
 *     for the entry the answer belongs to (hook_table.h); the real pointer
 *     is kept per entry, and _ptsz entries are separate, so per-thread
 *     default stream calls keep their semantics.
 *  3. Programs linked with -lcuda bind to our exports directly (the
 *     preload comes first); the real function is then looked up with
 *     RTLD_NEXT, or through the driver's own handle when it was loaded
 *     RTLD_LOCAL.
 *
 * Rules: every call goes through to the driver and its result comes back
 * unchanged — NULL frees, unknown pointers, failures included. A wrapper
 * records only for the outermost call on a thread (hook.h). A real
 * pointer is only ever replaced by the same value: if a resolver answers
 * an entry with a different function than before, that answer is passed
 * through unwrapped rather than risk calling the wrong variant.
 *
 * With VRAMTRACE_RESOLVE_LOG=1 every look-up of a driver function (both
 * resolvers, and dlsym answers from the driver) is also written to the
 * resolver log with what the caller got (resolvelog.c); off, it costs one
 * option read per look-up, and look-ups are not on the allocation path.
 *
 * Threads: any; real pointers are atomics, the inventory is taken once
 * under a CAS flag.
 */
#include "hook.h"
#include "hook_table.h"

/* The wrappers are the exported interface: the version script picks which
 * names leave the library; everything else is hidden. */
#pragma GCC visibility push(default)
#include "cuda_api.h"
#pragma GCC visibility pop

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <string.h>

static const struct vrt_hook hooks[VRT_HOOK_COUNT] = {
#define VRT_X_HOOK_ROW(exp, b, minv, p)                                        \
	[VRT_HOOK_##exp] = {#exp, (void *)&exp, #b, minv, p},
        VRT_CUDA_HOOKS(VRT_X_HOOK_ROW)
#undef VRT_X_HOOK_ROW
};

static _Atomic(void *) real_ptr[VRT_HOOK_COUNT];
static const char *const driver_names[] = {"libcuda.so.1", NULL};
static struct vrt_hooklib driver = {.file_prefix = "libcuda.so",
                                    .sonames = driver_names,
                                    .hooks = hooks,
                                    .real = real_ptr,
                                    .count = VRT_HOOK_COUNT};

#define REAL(name)                                                             \
	((__typeof__(&name))vrt_hooklib_real(&driver, VRT_HOOK_##name))

static void *driver_sym(const char *name)
{
	return vrt_hooklib_sym(&driver, name);
}

void *vrt_hook_cuda_dlsym(const char *symbol, void *addr)
{
	void *p = vrt_hooklib_dlsym(&driver, symbol, addr);
	/* The resolver log names only what the driver itself answered. */
	if (VRT_UNLIKELY(vrt_resolvelog_on()) &&
	    (p != addr || vrt_hooklib_owns(&driver, addr)))
		vrt_resolvelog_note("dlsym", symbol, VRT_RESOLVELOG_NONE,
		                    VRT_RESOLVELOG_NONE, VRT_RESOLVELOG_NONE,
		                    VRT_RESOLVELOG_NONE, p != addr, p);
	return p;
}

/* The entry a resolver answer for (base, version, flags) belongs to, or -1
 * when we do not wrap that variant. */
static int resolver_entry(const char *base, int version, cuuint64_t flags)
{
	int best = -1;
	for (int i = 0; i < VRT_HOOK_COUNT; i++) {
		const struct vrt_hook *h = &hooks[i];
		if (h->ptsz || strcmp(h->base, base) != 0 ||
		    version < h->min_version)
			continue;
		if (best < 0 || h->min_version > hooks[best].min_version)
			best = i;
	}
	if (best >= 0 &&
	    (flags & VRT_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)) {
		for (int i = 0; i < VRT_HOOK_COUNT; i++)
			if (hooks[i].ptsz && !strcmp(hooks[i].base, base))
				return i;
	}
	return best;
}

/* After the real resolver answered (r): our wrapper in *pfn for the entry
 * the answer belongs to; the look-up goes to the resolver log when wanted
 * (status: what a _v2 caller got back, or NULL). */
static void resolved(const char *via, const char *symbol, void **pfn,
                     int version, cuuint64_t flags, CUresult r,
                     const CUdriverProcAddressQueryResult *status)
{
	void *answer = pfn ? *pfn : NULL;
	if (r == CUDA_SUCCESS && symbol && answer && symbol[0] == 'c' &&
	    symbol[1] == 'u') {
		int idx = resolver_entry(symbol, version, flags);
		if (idx >= 0)
			*pfn = vrt_hooklib_substitute(&driver, idx, answer);
	}
	if (VRT_UNLIKELY(vrt_resolvelog_on()))
		vrt_resolvelog_note(via, symbol, version, (long long)flags, r,
		                    status ? (long long)*status
		                           : VRT_RESOLVELOG_NONE,
		                    pfn && *pfn != answer, pfn ? *pfn : NULL);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress) real = REAL(cuGetProcAddress);
	if (!real)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = real(symbol, pfn, cudaVersion, flags);
	resolved("cuGetProcAddress", symbol, pfn, cudaVersion, flags, r, NULL);
	return r;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
	__typeof__(&cuGetProcAddress_v2) real = REAL(cuGetProcAddress_v2);
	if (!real)
		return CUDA_ERROR_NOT_INITIALIZED;
	CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	resolved("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, r,
	         symbolStatus);
	return r;
}

/* ---- context: device, free memory, inventory --------------------------- */

static _Atomic(void *) aux_ctx_get_device;

static void *aux(_Atomic(void *) *slot, const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_relaxed);
	if (VRT_LIKELY(p != NULL))
		return p;
	p = driver_sym(name);
	if (p)
		atomic_store(slot, p);
	return p;
}

static int cur_device(void)
{
	__typeof__(&cuCtxGetDevice) f =
	        aux(&aux_ctx_get_device, "cuCtxGetDevice");
	CUdevice d;
	if (f && f(&d) == CUDA_SUCCESS)
		return d;
	return VRT_DEVICE_UNKNOWN;
}

static _Atomic(void *) aux_ptr_get_attribute;

/* Asks the driver for addr's device with a context made current in this
 * thread, which has none (ours: the control, metrics or snapshot reader):
 * the primary context of a device the process already uses, retained for
 * the call only, so nothing is created and nothing outlives the call. */
static CUresult device_of_borrowed(__typeof__(&cuPointerGetAttribute) f,
                                   int *ord, CUdeviceptr ptr)
{
	__typeof__(&cuDeviceGetCount) count = driver_sym("cuDeviceGetCount");
	__typeof__(&cuDeviceGet) get = driver_sym("cuDeviceGet");
	__typeof__(&cuDevicePrimaryCtxGetState) state =
	        driver_sym("cuDevicePrimaryCtxGetState");
	__typeof__(&cuDevicePrimaryCtxRetain) retain =
	        driver_sym("cuDevicePrimaryCtxRetain");
	__typeof__(&cuDevicePrimaryCtxRelease_v2) release =
	        driver_sym("cuDevicePrimaryCtxRelease_v2");
	__typeof__(&cuCtxSetCurrent) set = driver_sym("cuCtxSetCurrent");
	int n = 0;
	if (!count || !get || !state || !retain || !release || !set ||
	    count(&n) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_CONTEXT;
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		CUcontext ctx;
		unsigned flags;
		int active = 0;
		if (get(&dev, i) != CUDA_SUCCESS ||
		    state(dev, &flags, &active) != CUDA_SUCCESS || !active ||
		    retain(&ctx, dev) != CUDA_SUCCESS)
			continue;
		CUresult r = CUDA_ERROR_INVALID_CONTEXT;
		if (set(ctx) == CUDA_SUCCESS) {
			r = f(ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
			set(NULL);
		}
		release(dev);
		return r;
	}
	return CUDA_ERROR_INVALID_CONTEXT;
}

int vrt_hook_cuda_device_of(uint64_t addr)
{
	__typeof__(&cuPointerGetAttribute) f =
	        aux(&aux_ptr_get_attribute, "cuPointerGetAttribute");
	int ord;
	if (!f)
		return -1;
	CUresult r = f(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	               (CUdeviceptr)addr);
	if (r == CUDA_ERROR_INVALID_CONTEXT)
		r = device_of_borrowed(f, &ord, (CUdeviceptr)addr);
	return r == CUDA_SUCCESS ? ord : -1;
}

/* The driver's free/total for the current device; 0 on failure. The real
 * function is called directly, so the app's probe counters stay exact. */
static int mem_info(uint64_t *free_b, uint64_t *total_b)
{
	__typeof__(&cuMemGetInfo_v2) f =
	        vrt_hooklib_real(&driver, VRT_HOOK_cuMemGetInfo_v2);
	size_t fr, to;
	if (!f || f(&fr, &to) != CUDA_SUCCESS)
		return 0;
	*free_b = fr;
	*total_b = to;
	return 1;
}

static _Atomic int inventory_state; /* 0 todo, 1 busy/done, 2+ failures */

/* Names, totals and uuids of every device, once, after the driver has
 * answered a memory call (so cuInit has run). */
static void inventory(void)
{
	int s = atomic_load_explicit(&inventory_state, memory_order_relaxed);
	if (VRT_LIKELY(s == 1) || s > 4)
		return;
	if (!atomic_compare_exchange_strong(&inventory_state, &s, 1))
		return;
	__typeof__(&cuDeviceGetCount) count = driver_sym("cuDeviceGetCount");
	__typeof__(&cuDeviceGet) get = driver_sym("cuDeviceGet");
	__typeof__(&cuDeviceGetName) name = driver_sym("cuDeviceGetName");
	__typeof__(&cuDeviceTotalMem_v2) total =
	        driver_sym("cuDeviceTotalMem_v2");
	__typeof__(&cuDeviceGetUuid) uuid = driver_sym("cuDeviceGetUuid");
	int n = 0;
	if (!count || !get || count(&n) != CUDA_SUCCESS || n <= 0) {
		/* Try again at a later call, a few times at most. */
		atomic_store(&inventory_state, s == 0 ? 2 : s + 1);
		return;
	}
	struct vrt_device_info devs[64];
	if (n > 64)
		n = 64;
	memset(devs, 0, sizeof(devs));
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		devs[i].vendor = VRT_VENDOR_CUDA;
		devs[i].ordinal = i;
		if (get(&dev, i) != CUDA_SUCCESS)
			continue;
		if (name)
			name(devs[i].name, (int)sizeof(devs[i].name) - 1, dev);
		size_t bytes = 0;
		if (total && total(&bytes, dev) == CUDA_SUCCESS)
			devs[i].total_bytes = bytes;
		CUuuid u;
		if (uuid && uuid(&u, dev) == CUDA_SUCCESS) {
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
                     uint64_t aux_v, CUresult err)
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

/* A successful free is charged to its allocation's device by the reader;
 * a failed one names no known allocation, so it is charged to the device
 * the caller was working on. */
static int fail_device(int dev)
{
	return dev == VRT_DEVICE_UNKNOWN ? cur_device() : dev;
}

/* Shared body of the device-pointer allocators: ok records a success,
 * fail_dev is the device a failure is charged to. */
#define ALLOC_BODY_(api, call, ok, fail_dev, size_expr, aux_expr)              \
	do {                                                                   \
		if (!vrt_hook_enter())                                         \
			return call;                                           \
		CUresult r_ = call;                                            \
		if (r_ == CUDA_SUCCESS)                                        \
			ok;                                                    \
		else                                                           \
			rec_fail(api, (fail_dev), 0, (size_expr), (aux_expr),  \
			         r_);                                          \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

#define ALLOC_BODY(api, call, dev_expr, out_expr, size_expr, aux_expr)         \
	ALLOC_BODY_(api, call,                                                 \
	            rec_alloc(api, (dev_expr), (out_expr), (size_expr),        \
	                      (aux_expr)),                                     \
	            (dev_expr), size_expr, aux_expr)

/* An allocation on the caller's current device: the device is asked for
 * only when recording (see vrt_hook_alloc_cur). */
#define ALLOC_CUR_BODY(api, call, out_expr, size_expr, aux_expr)               \
	ALLOC_BODY_(api, call,                                                 \
	            (inventory(), vrt_hook_alloc_cur(api, cur_device,          \
	                                             (out_expr), (size_expr),  \
	                                             (aux_expr))),             \
	            cur_device(), size_expr, aux_expr)

/* Shared body of the frees; a NULL free is not an event. */
#define FREE_BODY(api, call, dev_expr, addr_expr, aux_expr)                    \
	do {                                                                   \
		if ((addr_expr) == 0 || !vrt_hook_enter())                     \
			return call;                                           \
		CUresult r_ = call;                                            \
		int dev_ = (dev_expr);                                         \
		if (r_ == CUDA_SUCCESS)                                        \
			rec_free(api, dev_, (addr_expr), (aux_expr));          \
		else                                                           \
			rec_fail(api, fail_device(dev_), (addr_expr), 0,       \
			         (aux_expr), r_);                              \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

#define CHECK_REAL(real)                                                       \
	if (VRT_UNLIKELY(!(real)))                                             \
	return CUDA_ERROR_NOT_INITIALIZED

/* ---- device ------------------------------------------------------------ */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	__typeof__(&cuMemAlloc_v2) real = REAL(cuMemAlloc_v2);
	CHECK_REAL(real);
	ALLOC_CUR_BODY(VRT_API_cuMemAlloc_v2, real(dptr, bytesize), *dptr,
	               bytesize, 0);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
	__typeof__(&cuMemAllocPitch_v2) real = REAL(cuMemAllocPitch_v2);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(dptr, pPitch, WidthInBytes, Height,
		            ElementSizeBytes);
	CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
	int dev = cur_device();
	if (r == CUDA_SUCCESS)
		rec_alloc(VRT_API_cuMemAllocPitch_v2, dev, *dptr,
		          (uint64_t)*pPitch * Height, 0);
	else
		rec_fail(VRT_API_cuMemAllocPitch_v2, dev, 0,
		         (uint64_t)WidthInBytes * Height, 0, r);
	vrt_hook_leave();
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	__typeof__(&cuMemFree_v2) real = REAL(cuMemFree_v2);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_cuMemFree_v2, real(dptr), VRT_DEVICE_UNKNOWN, dptr,
	          0);
}

/* ---- stream-ordered and pools ------------------------------------------ */

#define ASYNC_ALLOC(name)                                                      \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)    \
	{                                                                      \
		__typeof__(&name) real = REAL(name);                           \
		CHECK_REAL(real);                                              \
		ALLOC_CUR_BODY(VRT_API_##name,                                 \
		               real(dptr, bytesize, hStream), *dptr, bytesize, \
		               PTR(hStream));                                  \
	}
ASYNC_ALLOC(cuMemAllocAsync)
ASYNC_ALLOC(cuMemAllocAsync_ptsz)

#define POOL_ALLOC(name)                                                       \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,   \
	              CUstream hStream)                                        \
	{                                                                      \
		__typeof__(&name) real = REAL(name);                           \
		CHECK_REAL(real);                                              \
		ALLOC_BODY(VRT_API_##name,                                     \
		           real(dptr, bytesize, pool, hStream), cur_device(),  \
		           *dptr, bytesize, PTR(pool));                        \
	}
POOL_ALLOC(cuMemAllocFromPoolAsync)
POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz)

#define ASYNC_FREE(name)                                                       \
	CUresult name(CUdeviceptr dptr, CUstream hStream)                      \
	{                                                                      \
		__typeof__(&name) real = REAL(name);                           \
		CHECK_REAL(real);                                              \
		FREE_BODY(VRT_API_##name, real(dptr, hStream),                 \
		          VRT_DEVICE_UNKNOWN, dptr, PTR(hStream));             \
	}
ASYNC_FREE(cuMemFreeAsync)
ASYNC_FREE(cuMemFreeAsync_ptsz)

/* ---- virtual memory ---------------------------------------------------- */

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
	__typeof__(&cuMemAddressReserve) real = REAL(cuMemAddressReserve);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_cuMemAddressReserve,
	           real(ptr, size, alignment, addr, flags), cur_device(), *ptr,
	           size, 0);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	__typeof__(&cuMemAddressFree) real = REAL(cuMemAddressFree);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_cuMemAddressFree, real(ptr, size), VRT_DEVICE_UNKNOWN,
	          ptr, size);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
	__typeof__(&cuMemCreate) real = REAL(cuMemCreate);
	CHECK_REAL(real);
	/* The physical memory's device is the one the call names. */
	ALLOC_BODY(VRT_API_cuMemCreate, real(handle, size, prop, flags),
	           prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
	                   ? prop->location.id
	                   : cur_device(),
	           *handle, size, flags);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	__typeof__(&cuMemRelease) real = REAL(cuMemRelease);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_cuMemRelease, real(handle), VRT_DEVICE_UNKNOWN,
	          handle, 0);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	__typeof__(&cuMemMap) real = REAL(cuMemMap);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(ptr, size, offset, handle, flags);
	CUresult r = real(ptr, size, offset, handle, flags);
	if (r == CUDA_SUCCESS) {
		struct vrt_ev ev = {.rec = VRT_REC_MAP,
		                    .api = VRT_API_cuMemMap,
		                    .device = VRT_DEVICE_UNKNOWN,
		                    .addr = ptr,
		                    .size = size,
		                    .offset = offset,
		                    .handle = handle};
		vrt_hook_record(&ev);
	} else {
		rec_fail(VRT_API_cuMemMap, cur_device(), ptr, size, handle, r);
	}
	vrt_hook_leave();
	return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	__typeof__(&cuMemUnmap) real = REAL(cuMemUnmap);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(ptr, size);
	CUresult r = real(ptr, size);
	if (r == CUDA_SUCCESS) {
		struct vrt_ev ev = {.rec = VRT_REC_UNMAP,
		                    .api = VRT_API_cuMemUnmap,
		                    .device = VRT_DEVICE_UNKNOWN,
		                    .addr = ptr,
		                    .size = size};
		vrt_hook_record(&ev);
	} else {
		rec_fail(VRT_API_cuMemUnmap, cur_device(), ptr, size, 0, r);
	}
	vrt_hook_leave();
	return r;
}

/* ---- managed ----------------------------------------------------------- */

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags)
{
	__typeof__(&cuMemAllocManaged) real = REAL(cuMemAllocManaged);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_cuMemAllocManaged, real(dptr, bytesize, flags),
	           cur_device(), *dptr, bytesize, flags);
}

/* ---- pinned and registered host memory ---------------------------------- */

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	__typeof__(&cuMemHostAlloc) real = REAL(cuMemHostAlloc);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_cuMemHostAlloc, real(pp, bytesize, Flags),
	           VRT_DEVICE_HOST, PTR(*pp), bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	__typeof__(&cuMemAllocHost_v2) real = REAL(cuMemAllocHost_v2);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_cuMemAllocHost_v2, real(pp, bytesize),
	           VRT_DEVICE_HOST, PTR(*pp), bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	__typeof__(&cuMemFreeHost) real = REAL(cuMemFreeHost);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_cuMemFreeHost, real(p), VRT_DEVICE_HOST, PTR(p), 0);
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	__typeof__(&cuMemHostRegister_v2) real = REAL(cuMemHostRegister_v2);
	CHECK_REAL(real);
	ALLOC_BODY(VRT_API_cuMemHostRegister_v2, real(p, bytesize, Flags),
	           VRT_DEVICE_HOST, PTR(p), bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
	__typeof__(&cuMemHostUnregister) real = REAL(cuMemHostUnregister);
	CHECK_REAL(real);
	FREE_BODY(VRT_API_cuMemHostUnregister, real(p), VRT_DEVICE_HOST, PTR(p),
	          0);
}

/* ---- capacity probe ---------------------------------------------------- */

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	__typeof__(&cuMemGetInfo_v2) real = REAL(cuMemGetInfo_v2);
	CHECK_REAL(real);
	if (!vrt_hook_enter())
		return real(free, total);
	CUresult r = real(free, total);
	if (r == CUDA_SUCCESS && free && total) {
		inventory();
		struct vrt_ev ev = {.rec = VRT_REC_MEMINFO,
		                    .api = VRT_API_cuMemGetInfo_v2,
		                    .device = cur_device(),
		                    .free_bytes = *free,
		                    .total_bytes = *total};
		vrt_hook_record(&ev);
	}
	vrt_hook_leave();
	return r;
}
