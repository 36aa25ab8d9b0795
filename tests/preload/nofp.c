/*
 * libnofp — a library built with -O2 -fomit-frame-pointer (and no
 * unwind-table shortcuts for the caller), standing between the program's
 * named functions and the driver, the way vendor libraries often are. The
 * unwinder must walk through it to find the caller's name.
 */
#include "cuda_api.h"

unsigned long long nofp_alloc(size_t n, int salt);

unsigned long long nofp_alloc(size_t n, int salt)
{
	volatile unsigned char scratch[96];
	for (int i = 0; i < 96; i++)
		scratch[i] = (unsigned char)(i ^ salt);
	CUdeviceptr p = 0;
	if (cuMemAlloc_v2(&p, n + scratch[salt & 63] * 0) != CUDA_SUCCESS)
		return 0;
	scratch[0]++;
	return p;
}
