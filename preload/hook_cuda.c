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
 * What is recorded, and how a failure or standby is handled, is shared
 * with hook_hip.c (hook_lib.c); this file says how to ask the driver
 * (its vendor ops) and how each call reads.
 *
 * Threads: any; real pointers are atomics.
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

struct vrt_hooklib *vrt_hook_cuda_lib(void)
{
	return &driver;
}

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

/* ---- vendor ops: device, free memory, inventory ------------------------ */

static _Atomic(void *) aux_ctx_get_device, aux_ptr_get_attribute,
        aux_device_get_count, aux_device_get, aux_device_get_name,
        aux_device_total_mem, aux_device_get_uuid, aux_primary_state;

#define AUX(slot, name)                                                        \
	((__typeof__(&name))vrt_hooklib_aux(&driver, &slot, #name))

static int cur_device(void)
{
	__typeof__(&cuCtxGetDevice) f = AUX(aux_ctx_get_device, cuCtxGetDevice);
	CUdevice d;
	if (f && f(&d) == CUDA_SUCCESS)
		return d;
	return VRT_DEVICE_UNKNOWN;
}

/* Asks the driver for addr's device with a context made current in this
 * thread, which has none (ours: the control, metrics or snapshot reader):
 * the primary context of a device the process already uses, retained for
 * the call only, so nothing is created and nothing outlives the call. */
static CUresult device_of_borrowed(__typeof__(&cuPointerGetAttribute) f,
                                   int *ord, CUdeviceptr ptr)
{
	__typeof__(&cuDeviceGetCount) count =
	        AUX(aux_device_get_count, cuDeviceGetCount);
	__typeof__(&cuDeviceGet) get = AUX(aux_device_get, cuDeviceGet);
	__typeof__(&cuDevicePrimaryCtxGetState) state =
	        AUX(aux_primary_state, cuDevicePrimaryCtxGetState);
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

/* The one device whose primary context the process holds, or -1 (none,
 * several, or the driver cannot say): where an allocation whose address
 * the driver cannot place must have been made. */
static int sole_device(void)
{
	__typeof__(&cuDeviceGetCount) count =
	        AUX(aux_device_get_count, cuDeviceGetCount);
	__typeof__(&cuDeviceGet) get = AUX(aux_device_get, cuDeviceGet);
	__typeof__(&cuDevicePrimaryCtxGetState) state =
	        AUX(aux_primary_state, cuDevicePrimaryCtxGetState);
	int n = 0, found = -1;
	if (!count || !get || !state || count(&n) != CUDA_SUCCESS)
		return -1;
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		unsigned flags;
		int active = 0;
		if (get(&dev, i) != CUDA_SUCCESS ||
		    state(dev, &flags, &active) != CUDA_SUCCESS || !active)
			continue;
		if (found >= 0)
			return -1;
		found = i;
	}
	return found;
}

/* An allocation's device by its address; when the driver cannot say (no
 * pointer attribute query, a context that is gone), the process's only
 * device, else -1 (live.c then takes the allocating thread's). */
static int device_of(uint64_t addr)
{
	__typeof__(&cuPointerGetAttribute) f =
	        AUX(aux_ptr_get_attribute, cuPointerGetAttribute);
	int ord;
	CUresult r = CUDA_ERROR_NOT_SUPPORTED;
	if (f) {
		r = f(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
		      (CUdeviceptr)addr);
		if (r == CUDA_ERROR_INVALID_CONTEXT)
			r = device_of_borrowed(f, &ord, (CUdeviceptr)addr);
	}
	return r == CUDA_SUCCESS ? ord : sole_device();
}

static _Atomic(void *) aux_address_range;

static int size_of(uint64_t addr, uint64_t *size)
{
	__typeof__(&cuMemGetAddressRange_v2) f =
	        AUX(aux_address_range, cuMemGetAddressRange_v2);
	CUdeviceptr base;
	size_t bytes;
	if (!f || f(&base, &bytes, (CUdeviceptr)addr) != CUDA_SUCCESS ||
	    base != (CUdeviceptr)addr)
		return 0;
	*size = bytes;
	return 1;
}

/* The real function, never our wrapper (hook.h). */
static int mem_info(size_t *free_b, size_t *total_b)
{
	__typeof__(&cuMemGetInfo_v2) f = REAL(cuMemGetInfo_v2);
	return f && f(free_b, total_b) == CUDA_SUCCESS;
}

/* The inventory asks after a memory call, so cuInit has run; the describing
 * calls need cuDeviceGet too. */
static int device_count(int *n)
{
	__typeof__(&cuDeviceGetCount) f =
	        AUX(aux_device_get_count, cuDeviceGetCount);
	return f && AUX(aux_device_get, cuDeviceGet) && f(n) == CUDA_SUCCESS;
}

/* The CUdevice of an ordinal: the driver's handle, which the describing
 * calls take. 1, or 0 when the driver cannot say. */
static int device(int ordinal, CUdevice *dev)
{
	__typeof__(&cuDeviceGet) get = AUX(aux_device_get, cuDeviceGet);
	return get && get(dev, ordinal) == CUDA_SUCCESS;
}

static int device_name(int ordinal, char *buf, int len)
{
	__typeof__(&cuDeviceGetName) f =
	        AUX(aux_device_get_name, cuDeviceGetName);
	CUdevice dev;
	return f && device(ordinal, &dev) && f(buf, len, dev) == CUDA_SUCCESS;
}

static int device_total(int ordinal, size_t *bytes)
{
	__typeof__(&cuDeviceTotalMem_v2) f =
	        AUX(aux_device_total_mem, cuDeviceTotalMem_v2);
	CUdevice dev;
	return f && device(ordinal, &dev) && f(bytes, dev) == CUDA_SUCCESS;
}

static int device_uuid(int ordinal, void *out)
{
	__typeof__(&cuDeviceGetUuid) f =
	        AUX(aux_device_get_uuid, cuDeviceGetUuid);
	CUdevice dev;
	return f && device(ordinal, &dev) && f(out, dev) == CUDA_SUCCESS;
}

VRT_HOOK_VENDOR_DEFINE(vrt_hook_cuda, VRT_VENDOR_CUDA);

/* ---- recording ---------------------------------------------------------- */

#define PTR(p) ((uint64_t)(uintptr_t)(p))

/* What the shared bodies (hook.h) take. */
#define VRT_HOOK_RT      CUDA_SUCCESS, CUDA_ERROR_NOT_INITIALIZED, &vrt_hook_cuda
#define VRT_HOOK_REAL(f) REAL(f)

/* ---- device ------------------------------------------------------------ */

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	VRT_HOOK_ALLOC_CUR(cuMemAlloc_v2, (dptr, bytesize), *dptr, bytesize, 0);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
	/* The size allocated is the pitch's; the size refused, the
	 * request's. */
	VRT_HOOK_ALLOC2(cuMemAllocPitch_v2,
	                (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes),
	                cur_device(), *dptr, (uint64_t)*pPitch * Height,
	                (uint64_t)WidthInBytes * Height, 0);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	VRT_HOOK_FREE(cuMemFree_v2, (dptr), VRT_DEVICE_UNKNOWN, dptr, 0);
}

/* ---- stream-ordered and pools ------------------------------------------ */

#define ASYNC_ALLOC(name)                                                      \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)    \
	{                                                                      \
		VRT_HOOK_ALLOC_CUR(name, (dptr, bytesize, hStream), *dptr,     \
		                   bytesize, PTR(hStream));                    \
	}
ASYNC_ALLOC(cuMemAllocAsync)
ASYNC_ALLOC(cuMemAllocAsync_ptsz)

#define POOL_ALLOC(name)                                                       \
	CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,   \
	              CUstream hStream)                                        \
	{                                                                      \
		VRT_HOOK_ALLOC(name, (dptr, bytesize, pool, hStream),          \
		               cur_device(), *dptr, bytesize, PTR(pool));      \
	}
POOL_ALLOC(cuMemAllocFromPoolAsync)
POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz)

#define ASYNC_FREE(name)                                                       \
	CUresult name(CUdeviceptr dptr, CUstream hStream)                      \
	{                                                                      \
		VRT_HOOK_FREE(name, (dptr, hStream), VRT_DEVICE_UNKNOWN, dptr, \
		              PTR(hStream));                                   \
	}
ASYNC_FREE(cuMemFreeAsync)
ASYNC_FREE(cuMemFreeAsync_ptsz)

/* ---- virtual memory ---------------------------------------------------- */

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
	VRT_HOOK_ALLOC(cuMemAddressReserve, (ptr, size, alignment, addr, flags),
	               cur_device(), *ptr, size, 0);
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	VRT_HOOK_FREE(cuMemAddressFree, (ptr, size), VRT_DEVICE_UNKNOWN, ptr,
	              size);
}

/* The physical memory's device is the one the call names. */
static int create_device(const CUmemAllocationProp *prop)
{
	return prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
	               ? prop->location.id
	               : cur_device();
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
	VRT_HOOK_ALLOC(cuMemCreate, (handle, size, prop, flags),
	               create_device(prop), *handle, size, flags);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	VRT_HOOK_FREE(cuMemRelease, (handle), VRT_DEVICE_UNKNOWN, handle, 0);
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	VRT_HOOK_MAP(cuMemMap, (ptr, size, offset, handle, flags), VRT_REC_MAP,
	             ptr, size, offset, handle);
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	VRT_HOOK_MAP(cuMemUnmap, (ptr, size), VRT_REC_UNMAP, ptr, size, 0, 0);
}

/* ---- managed ----------------------------------------------------------- */

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags)
{
	VRT_HOOK_ALLOC(cuMemAllocManaged, (dptr, bytesize, flags), cur_device(),
	               *dptr, bytesize, flags);
}

/* ---- pinned and registered host memory ---------------------------------- */

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	VRT_HOOK_ALLOC(cuMemHostAlloc, (pp, bytesize, Flags), VRT_DEVICE_HOST,
	               PTR(*pp), bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	VRT_HOOK_ALLOC(cuMemAllocHost_v2, (pp, bytesize), VRT_DEVICE_HOST,
	               PTR(*pp), bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
	VRT_HOOK_FREE(cuMemFreeHost, (p), VRT_DEVICE_HOST, PTR(p), 0);
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	VRT_HOOK_ALLOC(cuMemHostRegister_v2, (p, bytesize, Flags),
	               VRT_DEVICE_HOST, PTR(p), bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
	VRT_HOOK_FREE(cuMemHostUnregister, (p), VRT_DEVICE_HOST, PTR(p), 0);
}

/* ---- capacity probe ---------------------------------------------------- */

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	VRT_HOOK_MEMINFO(cuMemGetInfo_v2, (free, total), free, total);
}
