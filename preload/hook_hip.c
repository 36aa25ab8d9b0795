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
 * Rules as in hook_cuda.c, and the recording itself shared with it
 * (hook_lib.c): every call goes through and its result comes back
 * unchanged — NULL frees, unknown pointers, failures included; a failed
 * allocation records the runtime's free/total and syncs the trace; the
 * device comes from the call (hipMemCreate's location) or hipGetDevice
 * (HIP has a current device per thread, default 0, and no explicit
 * context), which standby does not ask: an allocation on the current
 * device is kept without one, and hipPointerGetAttribute names it when the
 * live table is read. A real pointer is only ever replaced by the same
 * value.
 *
 * Threads: any; real pointers are atomics.
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

struct vrt_hooklib *vrt_hook_hip_lib(void)
{
	return &runtime;
}

#define REAL(name)                                                             \
	((__typeof__(&name))vrt_hooklib_real(&runtime, VRT_HIP_HOOK_##name))

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

/* ---- vendor ops: device, free memory, inventory ------------------------ */

static _Atomic(void *) aux_get_device, aux_pointer_get_attribute,
        aux_get_device_count, aux_device_get_name, aux_device_total_mem,
        aux_device_get_uuid;

#define AUX(slot, name)                                                        \
	((__typeof__(&name))vrt_hooklib_aux(&runtime, &slot, #name))

static int cur_device(void)
{
	__typeof__(&hipGetDevice) f = AUX(aux_get_device, hipGetDevice);
	int d;
	if (f && f(&d) == hipSuccess && d >= 0)
		return d;
	return VRT_DEVICE_UNKNOWN;
}

/* HIP has no per-thread context to make current: any thread may ask. */
static int device_of(uint64_t addr)
{
	__typeof__(&hipPointerGetAttribute) f =
	        AUX(aux_pointer_get_attribute, hipPointerGetAttribute);
	int ord;
	if (!f || f(&ord, HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	            (hipDeviceptr_t)(uintptr_t)addr) != hipSuccess)
		return -1;
	return ord;
}

/* Not asked of HIP: an attach to a HIP process records a free of memory
 * allocated before it as a free of an unknown pointer. */
static int size_of(uint64_t addr, uint64_t *size)
{
	(void)addr;
	(void)size;
	return 0;
}

static int mem_info(size_t *free_b, size_t *total_b)
{
	__typeof__(&hipMemGetInfo) f = REAL(hipMemGetInfo);
	return f && f(free_b, total_b) == hipSuccess;
}

static int device_count(int *n)
{
	__typeof__(&hipGetDeviceCount) f =
	        AUX(aux_get_device_count, hipGetDeviceCount);
	return f && f(n) == hipSuccess;
}

/* The describing calls: a hipDevice_t is the ordinal in the HIP runtime.
 * writer.c keeps CUDA and HIP inventories apart, so a process using both
 * runtimes describes both. */
static int device_name(int ordinal, char *buf, int len)
{
	__typeof__(&hipDeviceGetName) f =
	        AUX(aux_device_get_name, hipDeviceGetName);
	return f && f(buf, len, ordinal) == hipSuccess;
}

static int device_total(int ordinal, size_t *bytes)
{
	__typeof__(&hipDeviceTotalMem) f =
	        AUX(aux_device_total_mem, hipDeviceTotalMem);
	return f && f(bytes, ordinal) == hipSuccess;
}

/* hipDeviceGetUuid appeared in HIP 5.1. */
static int device_uuid(int ordinal, void *out)
{
	__typeof__(&hipDeviceGetUuid) f =
	        AUX(aux_device_get_uuid, hipDeviceGetUuid);
	return f && f(out, ordinal) == hipSuccess;
}

VRT_HOOK_VENDOR_DEFINE(vrt_hook_hip, VRT_VENDOR_HIP);

/* ---- recording --------------------------------------------------------- */

#define PTR(p) ((uint64_t)(uintptr_t)(p))

/* What the shared bodies (hook.h) take. HIP answers a zero-byte request
 * with success and NULL: nothing was allocated, so there is no event. */
#define VRT_HOOK_RT      hipSuccess, hipErrorNotInitialized, &vrt_hook_hip
#define VRT_HOOK_REAL(f) REAL(f)

/* The pointer an allocator wrote; on success it is never NULL. */
#define OUT(pp) ((pp) ? PTR(*(pp)) : 0)

/* ---- device ------------------------------------------------------------ */

hipError_t hipMalloc(void **ptr, size_t size)
{
	VRT_HOOK_ALLOC_CUR(hipMalloc, (ptr, size), OUT(ptr), size, 0);
}

hipError_t hipExtMallocWithFlags(void **ptr, size_t sizeBytes,
                                 unsigned int flags)
{
	VRT_HOOK_ALLOC_CUR(hipExtMallocWithFlags, (ptr, sizeBytes, flags),
	                   OUT(ptr), sizeBytes, flags);
}

hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width,
                          size_t height)
{
	VRT_HOOK_ALLOC2(hipMallocPitch, (ptr, pitch, width, height),
	                cur_device(), OUT(ptr),
	                (uint64_t)(pitch ? *pitch : width) * height,
	                (uint64_t)width * height, 0);
}

hipError_t hipFree(void *ptr)
{
	VRT_HOOK_FREE(hipFree, (ptr), VRT_DEVICE_UNKNOWN, PTR(ptr), 0);
}

/* ---- stream-ordered and pools ------------------------------------------ */

hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream)
{
	VRT_HOOK_ALLOC_CUR(hipMallocAsync, (dev_ptr, size, stream),
	                   OUT(dev_ptr), size, PTR(stream));
}

hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size,
                                  hipMemPool_t mem_pool, hipStream_t stream)
{
	VRT_HOOK_ALLOC(hipMallocFromPoolAsync,
	               (dev_ptr, size, mem_pool, stream), cur_device(),
	               OUT(dev_ptr), size, PTR(mem_pool));
}

hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream)
{
	VRT_HOOK_FREE(hipFreeAsync, (dev_ptr, stream), VRT_DEVICE_UNKNOWN,
	              PTR(dev_ptr), PTR(stream));
}

/* ---- virtual memory ---------------------------------------------------- */

hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment,
                                void *addr, unsigned long long flags)
{
	VRT_HOOK_ALLOC(hipMemAddressReserve,
	               (ptr, size, alignment, addr, flags), cur_device(),
	               OUT(ptr), size, 0);
}

hipError_t hipMemAddressFree(void *devPtr, size_t size)
{
	VRT_HOOK_FREE(hipMemAddressFree, (devPtr, size), VRT_DEVICE_UNKNOWN,
	              PTR(devPtr), size);
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
	VRT_HOOK_ALLOC(hipMemCreate, (handle, size, prop, flags),
	               create_device(prop), OUT(handle), size, flags);
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle)
{
	VRT_HOOK_FREE(hipMemRelease, (handle), VRT_DEVICE_UNKNOWN, PTR(handle),
	              0);
}

hipError_t hipMemMap(void *ptr, size_t size, size_t offset,
                     hipMemGenericAllocationHandle_t handle,
                     unsigned long long flags)
{
	VRT_HOOK_MAP(hipMemMap, (ptr, size, offset, handle, flags), VRT_REC_MAP,
	             PTR(ptr), size, offset, PTR(handle));
}

hipError_t hipMemUnmap(void *ptr, size_t size)
{
	VRT_HOOK_MAP(hipMemUnmap, (ptr, size), VRT_REC_UNMAP, PTR(ptr), size, 0,
	             0);
}

/* ---- managed ----------------------------------------------------------- */

hipError_t hipMallocManaged(void **dev_ptr, size_t size, unsigned int flags)
{
	VRT_HOOK_ALLOC(hipMallocManaged, (dev_ptr, size, flags), cur_device(),
	               OUT(dev_ptr), size, flags);
}

/* ---- pinned and registered host memory ---------------------------------- */

hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
	VRT_HOOK_ALLOC(hipHostMalloc, (ptr, size, flags), VRT_DEVICE_HOST,
	               OUT(ptr), size, flags);
}

hipError_t hipMallocHost(void **ptr, size_t size)
{
	VRT_HOOK_ALLOC(hipMallocHost, (ptr, size), VRT_DEVICE_HOST, OUT(ptr),
	               size, 0);
}

hipError_t hipHostFree(void *ptr)
{
	VRT_HOOK_FREE(hipHostFree, (ptr), VRT_DEVICE_HOST, PTR(ptr), 0);
}

hipError_t hipFreeHost(void *ptr)
{
	VRT_HOOK_FREE(hipFreeHost, (ptr), VRT_DEVICE_HOST, PTR(ptr), 0);
}

hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags)
{
	VRT_HOOK_ALLOC(hipHostRegister, (hostPtr, sizeBytes, flags),
	               VRT_DEVICE_HOST, PTR(hostPtr), sizeBytes, flags);
}

hipError_t hipHostUnregister(void *hostPtr)
{
	VRT_HOOK_FREE(hipHostUnregister, (hostPtr), VRT_DEVICE_HOST,
	              PTR(hostPtr), 0);
}

/* ---- capacity probe ---------------------------------------------------- */

hipError_t hipMemGetInfo(size_t *free, size_t *total)
{
	VRT_HOOK_MEMINFO(hipMemGetInfo, (free, total), free, total);
}
