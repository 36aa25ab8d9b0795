/*
 * client_cudart.c — reaches the driver exactly as libcudart 13 does
 * (docs/design.md "How CUDA reaches the driver"): dlopen("libcuda.so.1"), ONE
 * dlsym for "cuGetProcAddress_v2", cuGetProcAddress("cuGetProcAddress",
 * 12000) through it, and every further name through the pointer that call
 * returned. The workload then runs twice: with every function resolved
 * with flags 0, and with flags 2 (per-thread default stream), which must
 * hand out the _ptsz exports for the stream-ordered calls.
 *
 * The driver is opened RTLD_LOCAL, so a preload that looks the real driver
 * up with dlsym(RTLD_NEXT) finds nothing and must fall back to
 * dlopen(RTLD_NOLOAD). Single-threaded except in threads mode.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

typedef CUresult (*getproc_v2_fn)(const char *, void **, int, cuuint64_t,
                                  CUdriverProcAddressQueryResult *);
typedef CUresult (*getproc_v1_fn)(const char *, void **, int, cuuint64_t);

#define CUDART_VERSION 12000

static getproc_v2_fn getproc;

static int fail(const char *what, const char *name, CUresult r,
                CUdriverProcAddressQueryResult st)
{
	fprintf(stderr, "client_cudart: %s %s: result %d, status %d\n", what,
	        name, (int)r, (int)st);
	return -1;
}

/* Resolves every field of fns by base name, as cudart's table does. */
static int resolve_all(struct cu_fns *fns, cuuint64_t flags)
{
	CUdriverProcAddressQueryResult st;
	void *p;
	CUresult r;
	memset(fns, 0, sizeof(*fns));
	fns->ptsz = (flags &
	             VRT_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
#define RESOLVE(field, base, has_ptsz)                                         \
	p = NULL;                                                              \
	st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;                             \
	r = getproc(base, &p, CUDART_VERSION, flags, &st);                     \
	if (r != CUDA_SUCCESS || !p || st != CU_GET_PROC_ADDRESS_SUCCESS)      \
		return fail("resolving", base, r, st);                         \
	fns->field = (__typeof__(fns->field))(uintptr_t)p;
	WL_FN_LIST(RESOLVE)
#undef RESOLVE
	return 0;
}

static const char *const extra[] = {
        "cuDevicePrimaryCtxRelease", "cuGetErrorString", "cuGetProcAddress",
        "cuCtxGetCurrent",           "cuDeviceGetUuid",
};

/* The resolver's answers for what it must (not) find. */
static int check_resolver(void)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	void *p = (void *)1;
	CUresult r;
	getproc_v1_fn v1;
	int ver = 0;
	CUresult (*drvver)(int *);

	r = getproc("cuNoSuchFunction", &p, CUDART_VERSION, 0, &st);
	if (r != CUDA_ERROR_NOT_FOUND || p ||
	    st != CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
		return fail("unknown name", "cuNoSuchFunction", r, st);
	p = (void *)1;
	st = CU_GET_PROC_ADDRESS_SUCCESS;
	r = getproc("cuMemAllocAsync", &p, 11000, 0, &st);
	if (r != CUDA_ERROR_NOT_FOUND || p ||
	    st != CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
		return fail("too old a version for", "cuMemAllocAsync", r, st);
	/* Below 12000 the resolver is the four-argument v1. */
	r = getproc("cuGetProcAddress", &p, 11080, 0, &st);
	if (r != CUDA_SUCCESS || !p)
		return fail("resolving v1", "cuGetProcAddress", r, st);
	v1 = (getproc_v1_fn)(uintptr_t)p;
	r = v1("cuDriverGetVersion", &p, CUDART_VERSION, 0);
	if (r != CUDA_SUCCESS || !p)
		return fail("v1 resolving", "cuDriverGetVersion", r, 0);
	drvver = (CUresult(*)(int *))(uintptr_t)p;
	if (drvver(&ver) != CUDA_SUCCESS || ver < 12000)
		return fail("calling", "cuDriverGetVersion", r, 0);
	r = v1("cuNoSuchFunction", &p, CUDART_VERSION, 0);
	if (r != CUDA_ERROR_NOT_FOUND || p)
		return fail("v1 unknown name", "cuNoSuchFunction", r, 0);
	/* Names cudart asks for that the workload does not call. */
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
		for (cuuint64_t fl = 0; fl <= 2; fl += 2) {
			p = NULL;
			r = getproc(extra[i], &p, CUDART_VERSION, fl, &st);
			if (r != CUDA_SUCCESS || !p ||
			    st != CU_GET_PROC_ADDRESS_SUCCESS)
				return fail("resolving", extra[i], r, st);
		}
	}
	/* An old cudaVersion gets the old variant, where one exists. */
	r = getproc("cuMemHostRegister", &p, 6000, 0, &st);
	if (r != CUDA_SUCCESS || !p)
		return fail("resolving v1", "cuMemHostRegister", r, st);
	return 0;
}

int main(int argc, char **argv)
{
	struct cu_fns f0, f2;
	CUdriverProcAddressQueryResult st =
	        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	void *handle, *p = NULL;
	getproc_v2_fn boot;
	CUresult r;

	handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		fprintf(stderr, "client_cudart: dlopen: %s\n", dlerror());
		return 1;
	}
	boot = (getproc_v2_fn)(uintptr_t)dlsym(handle, "cuGetProcAddress_v2");
	if (!boot) {
		fprintf(stderr, "client_cudart: dlsym: %s\n", dlerror());
		return 1;
	}
	r = boot("cuGetProcAddress", &p, CUDART_VERSION, 0, &st);
	if (r != CUDA_SUCCESS || !p || st != CU_GET_PROC_ADDRESS_SUCCESS)
		return fail("bootstrapping", "cuGetProcAddress", r, st) ? 1 : 0;
	getproc = (getproc_v2_fn)(uintptr_t)p;

	if (check_resolver() || resolve_all(&f0, 0) ||
	    resolve_all(&f2, VRT_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return 1;
	/* Flags 2 must give other functions for the stream-ordered calls
	 * only. */
	if ((void *)f0.cuMemAllocAsync == (void *)f2.cuMemAllocAsync ||
	    (void *)f0.cuMemFreeAsync == (void *)f2.cuMemFreeAsync ||
	    (void *)f0.cuMemAllocFromPoolAsync ==
	            (void *)f2.cuMemAllocFromPoolAsync ||
	    (void *)f0.cuMemAlloc_v2 != (void *)f2.cuMemAlloc_v2) {
		fprintf(stderr, "client_cudart: flags 2 did not select the "
		                "_ptsz functions (and only them)\n");
		return 1;
	}
	return wl_main(argc, argv, &f0, &f2);
}
