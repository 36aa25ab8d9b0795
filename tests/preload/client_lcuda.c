/*
 * client_lcuda.c — calls the driver by name, linked with -lcuda (the fake's
 * libcuda.so.1): the route of programs that link the driver directly. The
 * second pass of the workload calls the _ptsz exports by name, as code
 * compiled with --default-stream per-thread does.
 *
 * Single-threaded except in threads mode.
 */
#include "workload.h"

int main(int argc, char **argv)
{
	struct cu_fns f0 = {.ptsz = 0,
#define DIRECT(field, base, has_ptsz) .field = field,
	                    WL_FN_LIST(DIRECT)
#undef DIRECT
	};
	struct cu_fns f2 = f0;
	f2.ptsz = 1;
	f2.cuMemAllocAsync = cuMemAllocAsync_ptsz;
	f2.cuMemAllocFromPoolAsync = cuMemAllocFromPoolAsync_ptsz;
	f2.cuMemFreeAsync = cuMemFreeAsync_ptsz;
	f2.cuStreamSynchronize = cuStreamSynchronize_ptsz;
	return wl_main(argc, argv, &f0, &f2);
}
