/*
 * client_hip_real.c — every hooked HIP call against the REAL libamdhip64
 * (Debian's libamdhip64-5, linked by its soname), on any machine: with no
 * AMD GPU the runtime refuses most calls, and the point is that it refuses
 * them identically with and without the preload, and that nothing crashes.
 *
 * Each call is made with well-formed arguments (a real host buffer where
 * the runtime may touch memory, NULL output slots never) and one line per
 * call is written to --out FILE:
 *   <api> <result code> <recorded 0|1>
 * recorded says whether the preload must record a failure event for a
 * non-zero result (allocations, frees of a non-NULL pointer, map, unmap;
 * not probes, not NULL frees). run_hip_real.py compares the two runs and
 * checks the trace. Single-threaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_api.h"

static FILE *out;

static void row(const char *api, hipError_t r, int recorded)
{
	fprintf(out, "%s %d %d\n", api, (int)r, recorded);
}

#define CALL(api, rec, ...) row(#api, api(__VA_ARGS__), rec)

int main(int argc, char **argv)
{
	static char hostbuf[1 << 16] __attribute__((aligned(4096)));
	void *p = NULL, *fake = (void *)(uintptr_t)0x7f0000100000ull;
	size_t pitch = 0, fr = 0, tot = 0;
	int n = -1, d = -1;
	hipMemGenericAllocationHandle_t h = NULL;
	/* HIP 5's layout: compressionType, location, handle type, type. */
	struct {
		unsigned char compressionType;
		hipMemLocation location;
		hipMemAllocationHandleType requestedHandleType;
		hipMemAllocationType type;
		unsigned short usage;
		void *win32HandleMetaData;
	} prop5;

	if (argc != 3 || strcmp(argv[1], "--out") != 0) {
		fprintf(stderr, "usage: client_hip_real --out FILE\n");
		return 2;
	}
	out = fopen(argv[2], "w");
	if (!out) {
		perror(argv[2]);
		return 1;
	}
	memset(&prop5, 0, sizeof(prop5));
	prop5.type = hipMemAllocationTypePinned;
	prop5.location.type = hipMemLocationTypeDevice;
	/* Device 1: without a GPU the runtime has no current device, so a
	 * failure on device 1 shows the preload read the HIP 5 layout. */
	prop5.location.id = 1;

	CALL(hipInit, 0, 0);
	CALL(hipGetDeviceCount, 0, &n);
	CALL(hipGetDevice, 0, &d);
	CALL(hipSetDevice, 0, 0);
	CALL(hipMemGetInfo, 0, &fr, &tot);
	CALL(hipMalloc, 1, &p, 1 << 20);
	CALL(hipExtMallocWithFlags, 1, &p, 1 << 20, 0);
	CALL(hipMallocPitch, 1, &p, &pitch, 1000, 10);
	CALL(hipMallocManaged, 1, &p, 1 << 20, 1);
	CALL(hipMallocAsync, 1, &p, 1 << 20, NULL);
	CALL(hipMallocFromPoolAsync, 1, &p, 1 << 20, NULL, NULL);
	CALL(hipFree, 0, NULL);
	CALL(hipFree, 1, fake);
	CALL(hipFreeAsync, 1, fake, NULL);
	CALL(hipHostMalloc, 1, &p, 4096, 0);
	CALL(hipMallocHost, 1, &p, 4096);
	CALL(hipHostFree, 0, NULL);
	CALL(hipHostFree, 1, hostbuf);
	CALL(hipFreeHost, 1, hostbuf);
	CALL(hipHostRegister, 1, hostbuf, sizeof(hostbuf), 0);
	CALL(hipHostUnregister, 1, hostbuf);
	CALL(hipMemAddressReserve, 1, &p, 2 << 20, 0, NULL, 0);
	CALL(hipMemCreate, 1, &h, 2 << 20, (const hipMemAllocationProp *)&prop5,
	     0);
	CALL(hipMemMap, 1, fake, 2 << 20, 0, h, 0);
	CALL(hipMemUnmap, 1, fake, 2 << 20);
	CALL(hipMemRelease, 1, (hipMemGenericAllocationHandle_t)fake);
	CALL(hipMemAddressFree, 1, fake, 2 << 20);
	if (fclose(out)) {
		perror(argv[2]);
		return 1;
	}
	return 0;
}
