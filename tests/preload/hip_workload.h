/*
 * The HIP version of the shared preload-test workload (workload.h), and
 * the analyzer result it expects.
 *
 * Every HIP client (linked with -lamdhip64, dlopen + dlsym, hipGetProcAddress)
 * fills a struct hip_fns by its own route to the runtime and hands it to
 * hwl_main(), which runs one mode (workload, oom), checks every return
 * code against what the runtime returns, and writes the expected
 * `vramtrace analyze --format json` counters to --expect FILE in the same
 * format as workload.c, so run_case.py checks both alike.
 *
 * Not thread-safe: hwl_main owns its state. It may run on another thread
 * at the same time as workload.c's wl_main (the mixed CUDA + HIP client):
 * the two share nothing.
 */
#ifndef VRT_TEST_HIP_WORKLOAD_H
#define VRT_TEST_HIP_WORKLOAD_H

#include "hip_api.h"
#include "hip_api_ext.h"

/* Every runtime function the workload calls: X(name). */
#define HWL_FN_LIST(X)                                                         \
	X(hipInit)                                                             \
	X(hipRuntimeGetVersion)                                                \
	X(hipGetDeviceCount)                                                   \
	X(hipDeviceGet)                                                        \
	X(hipDeviceGetName)                                                    \
	X(hipDeviceTotalMem)                                                   \
	X(hipDeviceGetUuid)                                                    \
	X(hipSetDevice)                                                        \
	X(hipGetDevice)                                                        \
	X(hipDeviceSynchronize)                                                \
	X(hipGetErrorName)                                                     \
	X(hipMemGetInfo)                                                       \
	X(hipMalloc)                                                           \
	X(hipExtMallocWithFlags)                                               \
	X(hipMallocPitch)                                                      \
	X(hipFree)                                                             \
	X(hipMallocManaged)                                                    \
	X(hipMallocAsync)                                                      \
	X(hipMallocFromPoolAsync)                                              \
	X(hipFreeAsync)                                                        \
	X(hipStreamSynchronize)                                                \
	X(hipDeviceGetDefaultMemPool)                                          \
	X(hipMemPoolCreate)                                                    \
	X(hipMemPoolDestroy)                                                   \
	X(hipMemGetAllocationGranularity)                                      \
	X(hipMemAddressReserve)                                                \
	X(hipMemAddressFree)                                                   \
	X(hipMemCreate)                                                        \
	X(hipMemRelease)                                                       \
	X(hipMemMap)                                                           \
	X(hipMemUnmap)                                                         \
	X(hipMemSetAccess)                                                     \
	X(hipHostMalloc)                                                       \
	X(hipMallocHost)                                                       \
	X(hipHostFree)                                                         \
	X(hipFreeHost)                                                         \
	X(hipHostRegister)                                                     \
	X(hipHostUnregister)

struct hip_fns {
#define HWL_FN_FIELD(name) __typeof__(&name) name;
	HWL_FN_LIST(HWL_FN_FIELD)
#undef HWL_FN_FIELD
};

/*
 * Options:
 *   --expect FILE    write the expected analyzer counters (JSON) there
 *   --devices N      the runtime must report N devices (FAKEHIP_DEVICES)
 *   --id-base N      the report's id of HIP device 0 (N CUDA devices come
 *                    first in a mixed process); 0 by default
 *   --mode M         workload (default) | oom
 * workload mode runs the workload with pass0, then with pass1 (another
 * route to the same runtime, or the same table). Returns the exit status:
 * 0 ok, 1 a check failed (message on stderr), 2 usage.
 */
int hwl_main(int argc, char **argv, const struct hip_fns *pass0,
             const struct hip_fns *pass1);

#endif /* VRT_TEST_HIP_WORKLOAD_H */
