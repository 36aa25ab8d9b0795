/*
 * The shared workload of the preload test clients, and the analyzer result
 * it expects.
 *
 * Every client (cudart-style resolver, -lcuda, ctypes port) fills a
 * struct cu_fns by its own route to the driver and hands it to wl_main(),
 * which runs one mode (workload, threads, oom, sigkill), checks every
 * return code against what the real driver returns, and writes the
 * expected `vramtrace analyze --format json` counters to --expect FILE.
 * The expectation is computed from what the program itself did, so a run
 * without the preload checks the fake and this bookkeeping on their own.
 *
 * Not thread-safe except where noted: wl_main owns the state.
 */
#ifndef VRT_TEST_WORKLOAD_H
#define VRT_TEST_WORKLOAD_H

#include "cuda_api.h"
#include "cuda_api_ext.h"

/*
 * Every driver function the workload calls: X(field, base name asked of
 * cuGetProcAddress, has a _ptsz variant). The field has the type and name
 * of the versioned export it resolves to.
 */
#define WL_FN_LIST(X)                                                          \
	X(cuInit, "cuInit", 0)                                                 \
	X(cuDriverGetVersion, "cuDriverGetVersion", 0)                         \
	X(cuDeviceGetCount, "cuDeviceGetCount", 0)                             \
	X(cuDeviceGet, "cuDeviceGet", 0)                                       \
	X(cuDeviceGetName, "cuDeviceGetName", 0)                               \
	X(cuDeviceTotalMem_v2, "cuDeviceTotalMem", 0)                          \
	X(cuDeviceGetUuid_v2, "cuDeviceGetUuid", 0)                            \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", 0)             \
	X(cuCtxSetCurrent, "cuCtxSetCurrent", 0)                               \
	X(cuCtxGetCurrent, "cuCtxGetCurrent", 0)                               \
	X(cuCtxGetDevice, "cuCtxGetDevice", 0)                                 \
	X(cuCtxSynchronize, "cuCtxSynchronize", 0)                             \
	X(cuGetErrorName, "cuGetErrorName", 0)                                 \
	X(cuMemGetInfo_v2, "cuMemGetInfo", 0)                                  \
	X(cuMemAlloc_v2, "cuMemAlloc", 0)                                      \
	X(cuMemAllocPitch_v2, "cuMemAllocPitch", 0)                            \
	X(cuMemFree_v2, "cuMemFree", 0)                                        \
	X(cuMemAllocManaged, "cuMemAllocManaged", 0)                           \
	X(cuMemAllocAsync, "cuMemAllocAsync", 1)                               \
	X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", 1)               \
	X(cuMemFreeAsync, "cuMemFreeAsync", 1)                                 \
	X(cuStreamSynchronize, "cuStreamSynchronize", 1)                       \
	X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", 0)           \
	X(cuMemPoolCreate, "cuMemPoolCreate", 0)                               \
	X(cuMemPoolDestroy, "cuMemPoolDestroy", 0)                             \
	X(cuMemGetAllocationGranularity, "cuMemGetAllocationGranularity", 0)   \
	X(cuMemAddressReserve, "cuMemAddressReserve", 0)                       \
	X(cuMemAddressFree, "cuMemAddressFree", 0)                             \
	X(cuMemCreate, "cuMemCreate", 0)                                       \
	X(cuMemRelease, "cuMemRelease", 0)                                     \
	X(cuMemMap, "cuMemMap", 0)                                             \
	X(cuMemUnmap, "cuMemUnmap", 0)                                         \
	X(cuMemSetAccess, "cuMemSetAccess", 0)                                 \
	X(cuMemHostAlloc, "cuMemHostAlloc", 0)                                 \
	X(cuMemAllocHost_v2, "cuMemAllocHost", 0)                              \
	X(cuMemFreeHost, "cuMemFreeHost", 0)                                   \
	X(cuMemHostRegister_v2, "cuMemHostRegister", 0)                        \
	X(cuMemHostUnregister, "cuMemHostUnregister", 0)

struct cu_fns {
	/* 1 when the fields of the has-_ptsz rows hold the _ptsz exports:
	 * the trace then names the _ptsz APIs. */
	int ptsz;
#define WL_FN_FIELD(field, base, has_ptsz) __typeof__(&field) field;
	WL_FN_LIST(WL_FN_FIELD)
#undef WL_FN_FIELD
};

/*
 * Parses the common options and runs the requested mode:
 *   --expect FILE    write the expected analyzer counters (JSON) there
 *   --devices N      the driver must report N devices (FAKECUDA_DEVICES)
 *   --mode M         workload (default) | threads | oom | sigkill
 *   --threads N, --iters N   threads mode (16 × 100000)
 *   --pidfile FILE   sigkill mode: written once the trace surely has data
 * workload mode runs the workload with `flags0` and again with `flags2`
 * (the per-thread-default-stream resolution; may equal flags0's table with
 * ptsz = 0 where a client has no such route). Returns the exit status:
 * 0 ok, 1 a check failed (message on stderr), 2 usage.
 */
int wl_main(int argc, char **argv, const struct cu_fns *flags0,
            const struct cu_fns *flags2);

#endif /* VRT_TEST_WORKLOAD_H */
