/*
 * gpu_runtime.cu — what needs NVIDIA's CUDA runtime itself (built by nvcc
 * with the static runtime, so a GPU machine needs only its driver).
 *
 *   gpu_runtime --case graph|vmm-entry --out FILE
 *
 *   graph      CUDA-graph capture that allocates inside the capture: on a
 *              created stream, capture cudaMallocAsync 16 MiB, a memset and
 *              cudaFreeAsync; instantiate and launch it 3 times. Then a
 *              second capture with cudaMallocAsync 24 MiB only, launched
 *              once, its memory freed after the launch with cudaFreeAsync.
 *              The preload sees the captured calls when they are captured
 *              (cuMemAllocAsync/cuMemFreeAsync on the capturing stream);
 *              a launch reuses the graph's own memory without a call.
 *   vmm-entry  vmm_seq.h with the driver functions obtained from
 *              cudaGetDriverEntryPointByVersion, as PyTorch gets them for
 *              its expandable segments.
 *
 * Writes evlog.h lines to FILE; exit status 0, 1 when a call that must
 * succeed did not (the log says which; on the fake driver the runtime's
 * first call fails, which run_gpu.py's dry run expects), 2 usage.
 * Single-threaded.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <string.h>

#include "evlog.h"
#include "vmm_seq.h"

#define MiB (1ull << 20)

static cudaError_t logged(const char *api, cudaError_t r)
{
	evlog_call(api, (int)r, cudaGetErrorName(r));
	return r;
}

#define CALL(api, ...) logged(#api, api(__VA_ARGS__))

/* One capture on s: cudaMallocAsync of bytes and a memset, with the
 * cudaFreeAsync inside the capture, or after the launches (before the
 * executable graph is destroyed). */
static int capture(cudaStream_t s, size_t bytes, int free_inside, int launches)
{
	cudaGraph_t g = NULL;
	cudaGraphExec_t ge = NULL;
	void *p = NULL;
	int bad = 0;
	if (CALL(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal) !=
	    cudaSuccess)
		return 1;
	if (CALL(cudaMallocAsync, &p, bytes, s) == cudaSuccess)
		evlog_alloc("async", 0, bytes, p);
	else
		bad = 1;
	if (p) {
		bad |= CALL(cudaMemsetAsync, p, 0, bytes, s) != cudaSuccess;
		if (free_inside && CALL(cudaFreeAsync, p, s) == cudaSuccess)
			evlog_free(p);
	}
	bad |= CALL(cudaStreamEndCapture, s, &g) != cudaSuccess;
	if (!bad) {
		bad |= CALL(cudaGraphInstantiate, &ge, g, 0) != cudaSuccess;
		for (int i = 0; i < launches && !bad; i++)
			bad |= CALL(cudaGraphLaunch, ge, s) != cudaSuccess;
		if (p && !free_inside &&
		    CALL(cudaFreeAsync, p, s) == cudaSuccess)
			evlog_free(p);
		bad |= CALL(cudaStreamSynchronize, s) != cudaSuccess;
		CALL(cudaGraphExecDestroy, ge);
	}
	if (g)
		CALL(cudaGraphDestroy, g);
	return bad;
}

static int case_graph(void)
{
	cudaStream_t s = NULL;
	if (CALL(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking) !=
	    cudaSuccess)
		return 1;
	int bad = capture(s, 16 * MiB, 1, 3);
	bad |= capture(s, 24 * MiB, 0, 1);
	CALL(cudaStreamDestroy, s);
	return bad;
}

static CUresult (*drv_error_name)(CUresult, const char **);

static const char *drv_errname(CUresult r)
{
	const char *s = NULL;
	return drv_error_name && drv_error_name(r, &s) == CUDA_SUCCESS && s
	               ? s
	               : "?";
}

/* A driver function by name through the runtime, like PyTorch. */
template <typename T> static int entry(const char *name, T *fn)
{
	void *p = NULL;
	enum cudaDriverEntryPointQueryResult q;
	cudaError_t r = cudaGetDriverEntryPointByVersion(name, &p, 12000,
	                                                 cudaEnableDefault, &q);
	evlog_call("cudaGetDriverEntryPointByVersion", (int)r,
	           cudaGetErrorName(r));
	*fn = (T)p;
	return r == cudaSuccess && q == cudaDriverEntryPointSuccess && p ? 0
	                                                                 : -1;
}

static int case_vmm_entry(void)
{
	struct vmm_fns f;
	memset(&f, 0, sizeof(f));
	if (entry("cuGetErrorName", &drv_error_name) ||
	    entry("cuMemGetAllocationGranularity", &f.granularity) ||
	    entry("cuMemAddressReserve", &f.reserve) ||
	    entry("cuMemAddressFree", &f.address_free) ||
	    entry("cuMemCreate", &f.create) ||
	    entry("cuMemRelease", &f.release) || entry("cuMemMap", &f.map) ||
	    entry("cuMemUnmap", &f.unmap) ||
	    entry("cuMemSetAccess", &f.set_access))
		return 1;
	f.errname = drv_errname;
	return vmm_sequence(&f, 0);
}

int main(int argc, char **argv)
{
	static const struct evlog_case cases[] = {
	        {"graph", case_graph},
	        {"vmm-entry", case_vmm_entry},
	};
	const char *which, *out;
	evlog_args(argc, argv, &which, &out);
	if (!which || !out) {
		fprintf(stderr, "usage: gpu_runtime --case graph|vmm-entry "
		                "--out FILE\n");
		return 2;
	}
	evlog_open(out);
	evlog_line("prog gpu_runtime-%s static default", which);
	struct cudaDeviceProp prop;
	/* Initialises the runtime and the primary context of device 0. */
	if (CALL(cudaFree, NULL) != cudaSuccess ||
	    CALL(cudaGetDeviceProperties, &prop, 0) != cudaSuccess)
		return 1;
	evlog_device(0, prop.totalGlobalMem);
	return evlog_run_case(cases, sizeof(cases) / sizeof(cases[0]),
	                      "gpu_runtime", which);
}
