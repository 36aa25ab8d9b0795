/*
 * hip_standby.c — how often the preload asks the HIP runtime for the
 * current device while the program allocates. Linked with the fake
 * runtime (-lamdhip64), whose fakehip_get_device_calls() counts every
 * hipGetDevice.
 *
 *   hip_standby N   selects device 1, makes N hipMalloc and N
 *                   hipMallocAsync of 1 MiB, prints "getdevice D" (the
 *                   hipGetDevice calls made meanwhile) and "ready", waits
 *                   for a line on stdin (the runner reads the control
 *                   endpoint meanwhile), then frees everything.
 *
 * Single-threaded; exit 0, or 1 when a call failed.
 */
#include "hip_api.h"
#include "hip_api_ext.h"

#include <stdio.h>
#include <stdlib.h>

#define MIB (1u << 20)

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;
	if (n <= 0 || n > 4096) {
		fprintf(stderr, "usage: hip_standby N (1..4096)\n");
		return 2;
	}
	void **p = calloc(2 * (size_t)n, sizeof(*p));
	if (!p || hipSetDevice(1) != hipSuccess)
		return 1;
	unsigned long before = fakehip_get_device_calls();
	for (int i = 0; i < n; i++)
		if (hipMalloc(&p[i], MIB) != hipSuccess ||
		    hipMallocAsync(&p[n + i], MIB, NULL) != hipSuccess)
			return 1;
	printf("getdevice %lu\nready\n", fakehip_get_device_calls() - before);
	fflush(stdout);
	char line[16];
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	for (int i = 0; i < n; i++)
		if (hipFree(p[i]) != hipSuccess ||
		    hipFreeAsync(p[n + i], NULL) != hipSuccess)
			return 1;
	free(p);
	return 0;
}
