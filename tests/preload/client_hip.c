/*
 * client_hip.c — the HIP workload (hip_workload.c) through the route of
 * programs built with hipcc and of PyTorch's ROCm build: linked with
 * -lamdhip64, every call bound by the dynamic linker (so, under the
 * preload, to its exports first). Both passes use the same table.
 * Single-threaded.
 */
#include "hip_workload.h"

int main(int argc, char **argv)
{
	struct hip_fns fns = {
#define FILL(name) .name = name,
	        HWL_FN_LIST(FILL)
#undef FILL
	};
	return hwl_main(argc, argv, &fns, &fns);
}
