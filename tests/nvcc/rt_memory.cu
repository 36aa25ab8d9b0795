/*
 * rt_memory.cu — every memory family through the CUDA runtime, built by
 * nvcc with -cudart shared (and again with --default-stream per-thread):
 *
 *   rt_memory --case memory|props --out FILE
 *
 * memory  one step (phase) each: cudaMalloc, cudaMallocPitch,
 *         cudaMallocManaged (written by host code, set and copied),
 *         cudaMallocAsync on a created stream and on the default one, a
 *         pool of its own (release threshold, reuse, cudaDeviceSetMemPool,
 *         trim), pinned memory (cudaMallocHost, cudaHostAlloc; page
 *         aligned, copied between), a registered range (unregistered twice:
 *         the driver's error comes back), an out-of-memory failure of
 *         cudaMalloc, cudaMallocAsync and cudaMallocManaged, and one
 *         allocation left live at exit. Copies and sets that reach device
 *         memory must succeed without touching it; those between host
 *         memory (pageable, pinned, managed) must move the bytes.
 * props   the device's properties, as "value" lines for run_nvcc.py to
 *         hold against the card it asked the fake driver for, and one
 *         allocation, so the trace names the device and its memory.
 *
 * Writes rt_common.h's log to FILE; exit status 0, 1 when a call did not
 * return what a CUDA runtime returns (stderr says which), 2 usage.
 */
#include <cuda.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "rt_common.h"

static int memory(void)
{
	void *a = NULL, *b = NULL, *pitched = NULL, *managed = NULL;
	void *as = NULL, *ad = NULL, *p1 = NULL, *p2 = NULL, *p3 = NULL;
	void *pin = NULL, *pin2 = NULL, *dptr = NULL, *oom = NULL, *kept = NULL;
	size_t pitch = 0, free0 = 0, total = 0, free1 = 0;
	unsigned long long keep_all = UINT64_MAX, v = 0;
	cudaStream_t s = NULL;
	cudaMemPool_t pool = NULL, dflt = NULL, cur = NULL;
	cudaMemPoolProps props;
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char host[256], back[256];

	OK(cudaFree, (void *)NULL); /* the runtime's first call: a context */
	log_device(0);
	OK(cudaMemGetInfo, &free0, &total);

	step("rt_malloc");
	if (OK(cudaMalloc, &a, 64 * MiB))
		logged_alloc("device", 0, 64 * MiB, a);
	if (OK(cudaMalloc, &b, MiB + 3))
		logged_alloc("device", 0, MiB + 3, b);
	OK(cudaMemGetInfo, &free1, &total);
	CHECK(free0 - free1 == 65 * MiB + 3);
	memset(host, 0x11, sizeof(host));
	OK(cudaMemset, a, 0, 64 * MiB);
	OK(cudaMemcpy, a, host, sizeof(host), cudaMemcpyHostToDevice);
	OK(cudaMemcpy, back, a, sizeof(back), cudaMemcpyDeviceToHost);
	OK(cudaMemcpy, b, a, MiB, cudaMemcpyDeviceToDevice);
	OK(cudaMemcpy, back, host, sizeof(back), cudaMemcpyDefault);
	CHECK(back[0] == 0x11 && back[255] == 0x11);
	EXPECT(cudaErrorInvalidMemcpyDirection, cudaMemcpy, back, host, 1,
	       (cudaMemcpyKind)7);
	EXPECT(cudaErrorInvalidValue, cudaMemcpy, back, (void *)NULL, 1,
	       cudaMemcpyHostToHost);
	void *zero = &zero;
	OK(cudaMalloc, &zero, 0); /* no allocation, NULL back */
	CHECK(zero == NULL);
	if (OK(cudaFree, b))
		evlog_free(b);

	step("rt_pitch");
	if (OK(cudaMallocPitch, &pitched, &pitch, 1000, 100))
		logged_alloc("device", 0, pitch * 100, pitched);
	CHECK(pitch >= 1000);
	OK(cudaMemset2D, pitched, pitch, 0, 1000, 100);
	if (OK(cudaFree, pitched))
		evlog_free(pitched);

	step("rt_managed");
	if (OK(cudaMallocManaged, &managed, 32 * MiB, cudaMemAttachGlobal)) {
		logged_alloc("managed", 0, 32 * MiB, managed);
		unsigned char *m = (unsigned char *)managed;
		m[0] = 1;
		m[32 * MiB - 1] = 2; /* host code writes managed memory */
		OK(cudaMemset, managed, 7, 4096);
		CHECK(m[0] == 7 && m[4095] == 7 && m[4096] == 0);
		OK(cudaMemcpy, back, managed, sizeof(back), cudaMemcpyDefault);
		CHECK(back[0] == 7);
		cudaMemLocation loc = {cudaMemLocationTypeDevice, 0};
		OK(cudaMemPrefetchAsync, managed, 32 * MiB, loc, 0, 0);
		OK(cudaMemAdvise, managed, 32 * MiB, cudaMemAdviseSetReadMostly,
		   loc);
		cudaPointerAttributes pa;
		if (OK(cudaPointerGetAttributes, &pa, managed))
			CHECK(pa.type == cudaMemoryTypeManaged && pa.device == 0);
		if (OK(cudaFree, managed))
			evlog_free(managed);
	}

	step("rt_async");
	OK(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);
	if (OK(cudaMallocAsync, &as, 16 * MiB, s))
		logged_alloc("async", 0, 16 * MiB, as);
	if (OK(cudaMallocAsync, &ad, 8 * MiB, (cudaStream_t)0))
		logged_alloc("async", 0, 8 * MiB, ad);
	OK(cudaMemsetAsync, as, 0, 16 * MiB, s);
	if (OK(cudaFreeAsync, as, s))
		evlog_free(as);
	if (OK(cudaFreeAsync, ad, (cudaStream_t)0))
		evlog_free(ad);
	OK(cudaStreamSynchronize, s);

	step("rt_pool");
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	OK(cudaMemPoolCreate, &pool, &props);
	OK(cudaMemPoolSetAttribute, pool, cudaMemPoolAttrReleaseThreshold,
	   &keep_all);
	if (OK(cudaMallocFromPoolAsync, &p1, 24 * MiB, pool, s))
		logged_alloc("async", 0, 24 * MiB, p1);
	if (OK(cudaFreeAsync, p1, s))
		evlog_free(p1);
	if (OK(cudaMallocFromPoolAsync, &p2, 12 * MiB, pool, s))
		logged_alloc("async", 0, 12 * MiB, p2);
	OK(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrReservedMemCurrent, &v);
	CHECK(v == 24 * MiB); /* the freed 24 MiB kept, 12 of them lent */
	OK(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrUsedMemCurrent, &v);
	CHECK(v == 12 * MiB);
	OK(cudaDeviceGetDefaultMemPool, &dflt, 0);
	OK(cudaDeviceSetMemPool, 0, pool);
	OK(cudaDeviceGetMemPool, &cur, 0);
	CHECK(cur == pool);
	if (OK(cudaMallocAsync, &p3, 4 * MiB, s)) /* from the current pool */
		logged_alloc("async", 0, 4 * MiB, p3);
	OK(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrUsedMemCurrent, &v);
	CHECK(v == 16 * MiB);
	if (OK(cudaFreeAsync, p2, s))
		evlog_free(p2);
	if (OK(cudaFreeAsync, p3, s))
		evlog_free(p3);
	OK(cudaStreamSynchronize, s);
	OK(cudaMemPoolTrimTo, pool, 0);
	OK(cudaMemPoolGetAttribute, pool, cudaMemPoolAttrReservedMemCurrent, &v);
	CHECK(v == 0);
	OK(cudaDeviceSetMemPool, 0, dflt);
	OK(cudaMemPoolDestroy, pool);
	OK(cudaStreamDestroy, s);

	step("rt_pinned");
	if (OK(cudaMallocHost, &pin, 3 * MiB + 5)) {
		logged_alloc("pinned", -1, 3 * MiB + 5, pin);
		CHECK((uintptr_t)pin % page == 0);
		memset(pin, 0x5a, 3 * MiB + 5);
	}
	if (OK(cudaHostAlloc, &pin2, MiB, cudaHostAllocPortable |
	                                          cudaHostAllocMapped)) {
		logged_alloc("pinned", -1, MiB, pin2);
		CHECK((uintptr_t)pin2 % page == 0);
		OK(cudaHostGetDevicePointer, &dptr, pin2, 0);
		CHECK(dptr == pin2);
	}
	if (pin && pin2) {
		OK(cudaMemcpy, pin2, pin, MiB, cudaMemcpyHostToHost);
		CHECK(((unsigned char *)pin2)[MiB - 1] == 0x5a);
	}
	if (OK(cudaFreeHost, pin))
		evlog_free(pin);
	if (OK(cudaFreeHost, pin2))
		evlog_free(pin2);

	step("rt_registered");
	void *reg = aligned_alloc(page, 4 * MiB);
	if (OK(cudaHostRegister, reg, 4 * MiB, cudaHostRegisterDefault))
		logged_alloc("registered", -1, 4 * MiB, reg);
	if (OK(cudaHostUnregister, reg))
		evlog_free(reg);
	EXPECT(cudaErrorHostMemoryNotRegistered, cudaHostUnregister, reg);
	evlog_line("fail cuMemHostUnregister registered host");
	free(reg);

	step("rt_oom");
	OK(cudaMemGetInfo, &free1, &total);
	log_oom("cuMemAlloc_v2", 0, 2 * total, free1, total);
	EXPECT(cudaErrorMemoryAllocation, cudaMalloc, &oom, 2 * total);
	CHECK(oom == NULL);
	EXPECT(cudaErrorMemoryAllocation, cudaGetLastError);
	EXPECT(cudaSuccess, cudaGetLastError);
	log_oom("cuMemAllocAsync" PTSZ, 0, 2 * total + 1, free1, total);
	EXPECT(cudaErrorMemoryAllocation, cudaMallocAsync, &oom, 2 * total + 1,
	       (cudaStream_t)0);
	log_oom("cuMemAllocManaged", 0, 2 * total + 2, free1, total);
	EXPECT(cudaErrorMemoryAllocation, cudaMallocManaged, &oom,
	       2 * total + 2, cudaMemAttachGlobal);

	step("rt_kept");
	if (OK(cudaMalloc, &kept, 2 * MiB))
		logged_alloc("device", 0, 2 * MiB, kept); /* live at exit */
	if (OK(cudaFree, a))
		evlog_free(a);
	OK(cudaDeviceSynchronize);
	return 0;
}

/* The card as the runtime describes it. */
static int props(void)
{
	cudaDeviceProp p;
	int n = 0, vmm = -1, pools = -1, dev = -1;
	OK(cudaGetDeviceCount, &n);
	OK(cudaGetDevice, &dev);
	if (!OK(cudaGetDeviceProperties, &p, 0))
		return 1;
	/* VMM support is a driver attribute (the runtime's enumeration has
	 * no name for it): asked through the driver entry point the runtime
	 * hands out, as PyTorch and llama.cpp reach the driver. */
	CUresult (*get_attr)(int *, CUdevice_attribute, CUdevice) = NULL;
	cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
	if (OK(cudaGetDriverEntryPointByVersion, "cuDeviceGetAttribute",
	       (void **)&get_attr, 12000, cudaEnableDefault, &st) &&
	    st == cudaDriverEntryPointSuccess)
		CHECK(get_attr(&vmm,
		               CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
		               0) == CUDA_SUCCESS);
	EXPECT(cudaErrorSymbolNotFound, cudaGetDriverEntryPointByVersion,
	       "cuNoSuchCall", (void **)&get_attr, 12000, cudaEnableDefault,
	       &st);
	CHECK(st == cudaDriverEntryPointSymbolNotFound);
	OK(cudaDeviceGetAttribute, &pools, cudaDevAttrMemoryPoolsSupported, 0);
	EXPECT(cudaErrorInvalidDevice, cudaGetDeviceProperties, &p, n);
	OK(cudaGetDeviceProperties, &p, 0);
	/* The trace must carry the card's memory as the device's total. */
	log_device(0);
	void *probe = NULL;
	step("p_probe");
	if (OK(cudaMalloc, &probe, MiB))
		logged_alloc("device", 0, MiB, probe);
	if (OK(cudaFree, probe))
		evlog_free(probe);
	step_end();
	evlog_line("value devices %d", n);
	evlog_line("value device %d", dev);
	evlog_line("value cc %d.%d", p.major, p.minor);
	evlog_line("value sms %d", p.multiProcessorCount);
	evlog_line("value smem_per_block %zu", p.sharedMemPerBlock);
	evlog_line("value smem_per_block_optin %zu", p.sharedMemPerBlockOptin);
	evlog_line("value smem_per_sm %zu", p.sharedMemPerMultiprocessor);
	evlog_line("value threads_per_sm %d", p.maxThreadsPerMultiProcessor);
	evlog_line("value l2 %d", p.l2CacheSize);
	evlog_line("value total_mem %zu", p.totalGlobalMem);
	evlog_line("value warp %d", p.warpSize);
	evlog_line("value vmm %d", vmm);
	evlog_line("value pools %d", pools);
	evlog_line("value managed %d", p.managedMemory);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct evlog_case cases[] = {
	        {"memory", memory},
	        {"props", props},
	};
	return rt_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
