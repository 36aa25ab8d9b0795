/*
 * gpu_driver.c — the CUDA driver API the way ctypes, NCCL and Triton reach
 * it: dlopen("libcuda.so.1") and dlsym of each versioned export. Built with
 * the system compiler and no CUDA toolkit, so the same binary runs on a
 * real driver (tests/gpu/run_gpu.py) and on the fake one (its dry run).
 *
 *   gpu_driver --case probe                    devices and driver version
 *   gpu_driver --case vmm|pool|oom|multi --out FILE
 *
 *   vmm    vmm_seq.h on device 0
 *   pool   a created pool: cuMemAllocFromPoolAsync 2, 4, 6 MiB and the
 *          default pool's cuMemAllocAsync 8 MiB on the NULL stream, all
 *          freed with cuMemFreeAsync, then synchronised
 *   oom    a real out-of-memory: device 0 filled with chunks of 1/32 of
 *          its memory until the driver refuses one (free bytes read just
 *          before each), then all freed
 *   multi  on devices 0 and 1 (or 0 alone, logged as a skip): 3 and 5 MiB
 *          times (ordinal + 1), the first freed
 *
 * Writes evlog.h lines to FILE; exit status 0, or 1 when a call that must
 * succeed did not (the log says which), 2 usage, 3 no driver.
 * Single-threaded.
 */
#include <dlfcn.h>
#include <string.h>

#include "cuda_api.h"
#include "cuda_api_ext.h"
#include "evlog.h"
#include "vmm_seq.h"

#define MiB (1ull << 20)

/* X(field, export) */
#define DRV_FNS(X)                                                             \
	X(cuInit, "cuInit")                                                    \
	X(cuDriverGetVersion, "cuDriverGetVersion")                            \
	X(cuDeviceGetCount, "cuDeviceGetCount")                                \
	X(cuDeviceGet, "cuDeviceGet")                                          \
	X(cuDeviceGetName, "cuDeviceGetName")                                  \
	X(cuDeviceTotalMem_v2, "cuDeviceTotalMem_v2")                          \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")                \
	X(cuCtxSetCurrent, "cuCtxSetCurrent")                                  \
	X(cuGetErrorName, "cuGetErrorName")                                    \
	X(cuMemGetInfo_v2, "cuMemGetInfo_v2")                                  \
	X(cuMemAlloc_v2, "cuMemAlloc_v2")                                      \
	X(cuMemFree_v2, "cuMemFree_v2")                                        \
	X(cuMemAllocAsync, "cuMemAllocAsync")                                  \
	X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync")                  \
	X(cuMemFreeAsync, "cuMemFreeAsync")                                    \
	X(cuStreamSynchronize, "cuStreamSynchronize")                          \
	X(cuMemPoolCreate, "cuMemPoolCreate")                                  \
	X(cuMemPoolDestroy, "cuMemPoolDestroy")                                \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity")      \
	X(cuMemAddressReserve, "cuMemAddressReserve")                          \
	X(cuMemAddressFree, "cuMemAddressFree")                                \
	X(cuMemCreate, "cuMemCreate")                                          \
	X(cuMemRelease, "cuMemRelease")                                        \
	X(cuMemMap, "cuMemMap")                                                \
	X(cuMemUnmap, "cuMemUnmap")                                            \
	X(cuMemSetAccess, "cuMemSetAccess")

static struct {
#define DRV_FIELD(f, name) __typeof__(&f) f;
	DRV_FNS(DRV_FIELD)
#undef DRV_FIELD
} D;

static const char *errname(CUresult r)
{
	const char *s = NULL;
	if (D.cuGetErrorName && D.cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "?";
}

static CUresult logged(const char *api, CUresult r)
{
	evlog_call(api, (int)r, errname(r));
	return r;
}

#define CALL(api, ...) logged(#api, D.api(__VA_ARGS__))

static int load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "gpu_driver: no CUDA driver: %s\n", dlerror());
		return -1;
	}
#define DRV_LOAD(f, name)                                                      \
	if (!(D.f = (__typeof__(&f))dlsym(h, name))) {                         \
		fprintf(stderr, "gpu_driver: driver lacks %s\n", name);        \
		return -1;                                                     \
	}
	DRV_FNS(DRV_LOAD)
#undef DRV_LOAD
	return 0;
}

/* The primary context of ordinal current on this thread; logs its total. */
static int use_device(int ord)
{
	CUdevice dev;
	CUcontext ctx;
	size_t total = 0;
	if (CALL(cuDeviceGet, &dev, ord) != CUDA_SUCCESS ||
	    CALL(cuDevicePrimaryCtxRetain, &ctx, dev) != CUDA_SUCCESS ||
	    CALL(cuCtxSetCurrent, ctx) != CUDA_SUCCESS ||
	    CALL(cuDeviceTotalMem_v2, &total, dev) != CUDA_SUCCESS)
		return -1;
	evlog_device(ord, total);
	return 0;
}

static int probe(void)
{
	int version = 0, n = 0;
	CUresult r = D.cuInit(0);
	D.cuDriverGetVersion(&version);
	if (r != CUDA_SUCCESS || D.cuDeviceGetCount(&n) != CUDA_SUCCESS) {
		printf("driver %d error %d %s\n", version, (int)r, errname(r));
		return 3;
	}
	printf("driver %d devices %d\n", version, n);
	for (int i = 0; i < n; i++) {
		CUdevice dev;
		char name[128] = "?";
		size_t total = 0;
		if (D.cuDeviceGet(&dev, i) == CUDA_SUCCESS) {
			D.cuDeviceGetName(name, (int)sizeof(name) - 1, dev);
			D.cuDeviceTotalMem_v2(&total, dev);
		}
		printf("device %d %zu %s\n", i, total, name);
	}
	return 0;
}

static int case_vmm(void)
{
	const struct vmm_fns f = {
	        .granularity = D.cuMemGetAllocationGranularity,
	        .reserve = D.cuMemAddressReserve,
	        .address_free = D.cuMemAddressFree,
	        .create = D.cuMemCreate,
	        .release = D.cuMemRelease,
	        .map = D.cuMemMap,
	        .unmap = D.cuMemUnmap,
	        .set_access = D.cuMemSetAccess,
	        .errname = errname,
	};
	return vmm_sequence(&f, 0);
}

static int case_pool(void)
{
	CUmemPoolProps props;
	CUmemoryPool pool = NULL;
	CUdeviceptr p[4] = {0};
	int bad = 0;
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	if (CALL(cuMemPoolCreate, &pool, &props) != CUDA_SUCCESS)
		return 1;
	for (int i = 0; i < 3; i++) {
		size_t bytes = (size_t)(2 * (i + 1)) * MiB;
		if (CALL(cuMemAllocFromPoolAsync, &p[i], bytes, pool, NULL) ==
		    CUDA_SUCCESS)
			evlog_alloc("async", 0, bytes, evlog_id(p[i]));
		else
			bad = 1;
	}
	if (CALL(cuMemAllocAsync, &p[3], 8 * MiB, NULL) == CUDA_SUCCESS)
		evlog_alloc("async", 0, 8 * MiB, evlog_id(p[3]));
	else
		bad = 1;
	for (int i = 0; i < 4; i++)
		if (p[i] && CALL(cuMemFreeAsync, p[i], NULL) == CUDA_SUCCESS)
			evlog_free(evlog_id(p[i]));
	bad |= CALL(cuStreamSynchronize, NULL) != CUDA_SUCCESS;
	bad |= CALL(cuMemPoolDestroy, pool) != CUDA_SUCCESS;
	return bad;
}

#define OOM_MAX_CHUNKS 64

static int case_oom(void)
{
	CUdeviceptr held[OOM_MAX_CHUNKS];
	size_t fr = 0, total = 0;
	int n = 0, hit = 0;
	if (CALL(cuMemGetInfo_v2, &fr, &total) != CUDA_SUCCESS)
		return 1;
	/* 1/32 of the card, in whole 2 MiB pages. */
	size_t chunk = (total / 32 + 2 * MiB - 1) & ~(size_t)(2 * MiB - 1);
	while (n < OOM_MAX_CHUNKS && !hit) {
		if (CALL(cuMemGetInfo_v2, &fr, &total) != CUDA_SUCCESS)
			break;
		CUresult r = CALL(cuMemAlloc_v2, &held[n], chunk);
		if (r == CUDA_SUCCESS) {
			evlog_alloc("device", 0, chunk, evlog_id(held[n]));
			n++;
		} else if (r == CUDA_ERROR_OUT_OF_MEMORY) {
			evlog_oom("cuMemAlloc_v2", 0, chunk, (long long)fr,
			          (long long)total);
			hit = 1;
		} else {
			break;
		}
	}
	while (n-- > 0)
		if (CALL(cuMemFree_v2, held[n]) == CUDA_SUCCESS)
			evlog_free(evlog_id(held[n]));
	return !hit;
}

static int case_multi(void)
{
	int n = 0, bad = 0;
	if (CALL(cuDeviceGetCount, &n) != CUDA_SUCCESS)
		return 1;
	if (n < 2)
		evlog_line("skip two devices: this machine has %d", n);
	for (int d = 0; d < n && d < 2; d++) {
		CUdeviceptr a = 0, b = 0;
		size_t sa = (size_t)(3 * (d + 1)) * MiB;
		size_t sb = (size_t)(5 * (d + 1)) * MiB;
		if (d > 0 && use_device(d) < 0)
			return 1;
		if (CALL(cuMemAlloc_v2, &a, sa) == CUDA_SUCCESS)
			evlog_alloc("device", d, sa, evlog_id(a));
		else
			bad = 1;
		if (CALL(cuMemAlloc_v2, &b, sb) == CUDA_SUCCESS)
			evlog_alloc("device", d, sb, evlog_id(b));
		else
			bad = 1;
		if (a && CALL(cuMemFree_v2, a) == CUDA_SUCCESS)
			evlog_free(evlog_id(a));
	}
	return bad;
}

int main(int argc, char **argv)
{
	static const struct evlog_case cases[] = {
	        {"vmm", case_vmm},
	        {"pool", case_pool},
	        {"oom", case_oom},
	        {"multi", case_multi},
	};
	const char *which, *out;
	evlog_args(argc, argv, &which, &out);
	if (!which || (strcmp(which, "probe") != 0 && !out)) {
		fprintf(stderr, "usage: gpu_driver --case probe | --case "
		                "vmm|pool|oom|multi --out FILE\n");
		return 2;
	}
	if (load() < 0)
		return 3;
	if (!strcmp(which, "probe"))
		return probe();
	evlog_open(out);
	evlog_line("prog gpu_driver-%s driver default", which);
	if (CALL(cuInit, 0) != CUDA_SUCCESS || use_device(0) < 0)
		return 1;
	return evlog_run_case(cases, sizeof(cases) / sizeof(cases[0]),
	                      "gpu_driver", which);
}
