/*
 * rt_kernels.cu — kernels, streams, events and CUDA graphs through the
 * CUDA runtime, built by nvcc with -cudart shared:
 *
 *   rt_kernels --case kernels|graph|smem --out FILE
 *
 * kernels  <<<>>> launches (a plain kernel, a template, dynamic shared
 *          memory, a created stream), cudaLaunchKernel, a launch the
 *          device refuses (1025 threads: cudaGetLastError and
 *          cudaPeekAtLastError report it), function attributes, a
 *          __device__ array and a __managed__ variable, events, host
 *          functions on a stream, error names and strings, a call the
 *          runtime does not emulate (cudaMalloc3DArray).
 * graph    stream capture of kernels, a memset and a host function;
 *          instantiate, launch three times (the host function runs three
 *          times), update with a same-shaped capture, a refused update
 *          (one node more); a capture that allocates (cudaMallocAsync,
 *          cudaFreeAsync inside, as the preload sees them under the real
 *          runtime: once, at capture); cudaMalloc during a global-mode
 *          capture refused and the capture invalidated, then allowed in
 *          relaxed mode; a graph built node by node, its kernel node's
 *          parameters changed in the graph and in the executable graph.
 * smem     dynamic shared memory against the card: 48 KiB without
 *          opt-in, the card's opt-in limit with it, one byte more
 *          refused (the limits differ between an H100, an A100 and an
 *          L4); "value" lines for run_nvcc.py.
 *
 * Writes rt_common.h's log to FILE; exit status 0, 1 when a call did not
 * return what a CUDA runtime returns (stderr says which), 2 usage.
 */
#include <string.h>

#include "rt_common.h"

__device__ float table[256];
__managed__ int counter_m;

__global__ void scale(float *x, float f, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] *= f * table[i % 256];
}

template <typename T, int N> __global__ void fill(T *x, T v)
{
	x[blockIdx.x * N + threadIdx.x] = v;
}

__global__ void reduce_smem(const float *x, float *out)
{
	extern __shared__ float buf[];
	buf[threadIdx.x] = x[threadIdx.x];
	__syncthreads();
	if (threadIdx.x == 0)
		*out = buf[0] + counter_m;
}

static int host_calls;

static void CUDART_CB on_host(void *arg)
{
	host_calls += *(int *)arg;
}

static int kernels(void)
{
	float *x = NULL, *out = NULL;
	cudaStream_t s = NULL;
	cudaEvent_t e0 = NULL, e1 = NULL;
	float ms = -1, host_table[256], back[256];
	int one = 1;
	cudaFuncAttributes fa;
	const char *name = NULL;

	OK(cudaFree, (void *)NULL);
	log_device(0);
	step("k_buffers");
	if (OK(cudaMalloc, (void **)&x, 1 << 20))
		logged_alloc("device", 0, 1 << 20, x);
	if (OK(cudaMalloc, (void **)&out, 4096))
		logged_alloc("device", 0, 4096, out);
	step_end();

	for (int i = 0; i < 256; i++)
		host_table[i] = (float)i;
	OK(cudaMemcpyToSymbol, table, host_table, sizeof(host_table), 0,
	   cudaMemcpyHostToDevice);
	OK(cudaMemcpyFromSymbol, back, table, sizeof(back), 0,
	   cudaMemcpyDeviceToHost);
	CHECK(back[255] == 255.0f); /* the symbol's memory round trips */
	EXPECT(cudaErrorInvalidValue, cudaMemcpyToSymbol, table, host_table,
	       sizeof(host_table), 4, cudaMemcpyHostToDevice);
	EXPECT(cudaErrorInvalidValue, cudaGetLastError); /* and resets it */
	size_t sz = 0;
	OK(cudaGetSymbolSize, &sz, table);
	CHECK(sz == sizeof(host_table));
	counter_m = 5; /* host code writes a __managed__ variable */
	CHECK(counter_m == 5);

	OK(cudaStreamCreate, &s);
	OK(cudaEventCreate, &e0);
	OK(cudaEventCreate, &e1);
	OK(cudaEventRecord, e0, s);
	scale<<<1024, 256>>>(x, 2.0f, 1 << 18);
	OK(cudaGetLastError);
	scale<<<dim3(64, 4), dim3(256), 0, s>>>(x, 0.5f, 1 << 18);
	fill<int, 64><<<16, 64, 0, s>>>((int *)x, 7);
	reduce_smem<<<1, 256, 256 * sizeof(float), s>>>(x, out);
	OK(cudaGetLastError);
	OK(cudaEventRecord, e1, s);
	OK(cudaEventSynchronize, e1);
	OK(cudaEventElapsedTime, &ms, e0, e1);
	CHECK(ms >= 0);
	OK(cudaStreamQuery, s);

	/* 1025 threads in a block: refused, reported by the next query. */
	scale<<<1, 1025>>>(x, 1.0f, 1);
	EXPECT(cudaErrorInvalidConfiguration, cudaPeekAtLastError);
	EXPECT(cudaErrorInvalidConfiguration, cudaGetLastError);
	OK(cudaGetLastError);
	scale<<<dim3(1, 70000), 32>>>(x, 1.0f, 1); /* grid.y past 65535 */
	EXPECT(cudaErrorInvalidConfiguration, cudaGetLastError);

	void *args[] = {&x, &ms, &one};
	OK(cudaLaunchKernel, (const void *)scale, dim3(4), dim3(128), args,
	   (size_t)0, s);
	EXPECT(cudaErrorInvalidDeviceFunction, cudaLaunchKernel,
	       (const void *)on_host, dim3(1), dim3(1), args, (size_t)0, s);

	if (OK(cudaFuncGetAttributes, &fa, (const void *)scale))
		CHECK(fa.maxThreadsPerBlock == 1024 &&
		      fa.maxDynamicSharedSizeBytes == 48 * 1024);
	if (OK(cudaFuncGetName, &name, (const void *)scale))
		CHECK(name && strstr(name, "scale"));
	OK(cudaFuncSetCacheConfig, (const void *)scale, cudaFuncCachePreferL1);
	int blocks = 0;
	OK(cudaOccupancyMaxActiveBlocksPerMultiprocessor, &blocks,
	   (const void *)scale, 256, (size_t)0);
	CHECK(blocks > 0);

	OK(cudaLaunchHostFunc, s, on_host, &one);
	OK(cudaStreamSynchronize, s);
	CHECK(host_calls == 1);

	/* Not emulated: the stub answers, and says so once on stderr. */
	cudaArray_t arr = NULL;
	cudaChannelFormatDesc cd = cudaCreateChannelDesc<float>();
	CHECK(cd.x == 32 && cd.f == cudaChannelFormatKindFloat);
	EXPECT(cudaErrorNotSupported, cudaMalloc3DArray, &arr, &cd,
	       make_cudaExtent(4, 4, 4), 0u);
	EXPECT(cudaErrorNotSupported, cudaMalloc3DArray, &arr, &cd,
	       make_cudaExtent(4, 4, 4), 0u);
	EXPECT(cudaErrorNotSupported, cudaGetLastError);
	CHECK(!strcmp(cudaGetErrorName(cudaErrorMemoryAllocation),
	              "cudaErrorMemoryAllocation"));
	CHECK(!strcmp(cudaGetErrorString(cudaErrorMemoryAllocation),
	              "out of memory"));
	CHECK(!strcmp(cudaGetErrorString(cudaSuccess), "no error"));

	OK(cudaEventDestroy, e0);
	OK(cudaEventDestroy, e1);
	OK(cudaStreamDestroy, s);
	EXPECT(cudaErrorInvalidResourceHandle, cudaStreamDestroy,
	       (cudaStream_t)NULL);
	if (OK(cudaFree, x))
		evlog_free(x);
	if (OK(cudaFree, out))
		evlog_free(out);
	return 0;
}

/* Captures the forward step of a toy model on s: kernels over x, a
 * memset of out, a host function; extra adds one more kernel. */
static cudaGraph_t capture_step(cudaStream_t s, float *x, float *out, int grid,
                                int extra)
{
	cudaGraph_t g = NULL;
	static int one = 1;
	cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
	OK(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal);
	OK(cudaStreamIsCapturing, s, &st);
	CHECK(st == cudaStreamCaptureStatusActive);
	scale<<<grid, 256, 0, s>>>(x, 1.5f, 1 << 18);
	OK(cudaMemsetAsync, out, 0, 4096, s);
	reduce_smem<<<1, 256, 256 * sizeof(float), s>>>(x, out);
	if (extra)
		fill<float, 32><<<8, 32, 0, s>>>(x, 1.0f);
	OK(cudaLaunchHostFunc, s, on_host, &one);
	OK(cudaStreamEndCapture, s, &g);
	return g;
}

static int graph(void)
{
	float *x = NULL, *out = NULL;
	void *g1 = NULL, *relaxed = NULL, *refused = NULL;
	cudaStream_t s = NULL;
	cudaGraph_t g = NULL, g2 = NULL, g3 = NULL, ga = NULL, gb = NULL;
	cudaGraphExec_t ge = NULL, gae = NULL;
	cudaGraphExecUpdateResultInfo info = {};
	size_t n = 0;

	OK(cudaFree, (void *)NULL);
	log_device(0);
	step("g_buffers");
	if (OK(cudaMalloc, (void **)&x, 1 << 20))
		logged_alloc("device", 0, 1 << 20, x);
	if (OK(cudaMalloc, (void **)&out, 4096))
		logged_alloc("device", 0, 4096, out);
	step_end();
	OK(cudaStreamCreateWithFlags, &s, cudaStreamNonBlocking);

	host_calls = 0;
	g = capture_step(s, x, out, 1024, 0);
	OK(cudaGraphGetNodes, g, (cudaGraphNode_t *)NULL, &n);
	CHECK(n == 4);
	OK(cudaGraphInstantiate, &ge, g, 0ull);
	CHECK(host_calls == 0); /* captured, not run */
	for (int i = 0; i < 3; i++)
		OK(cudaGraphLaunch, ge, s);
	OK(cudaStreamSynchronize, s);
	CHECK(host_calls == 3);

	g2 = capture_step(s, x, out, 512, 0); /* same shape: updates */
	OK(cudaGraphExecUpdate, ge, g2, &info);
	CHECK(info.result == cudaGraphExecUpdateSuccess);
	g3 = capture_step(s, x, out, 512, 1); /* one node more: refused */
	EXPECT(cudaErrorGraphExecUpdateFailure, cudaGraphExecUpdate, ge, g3,
	       &info);
	CHECK(info.result == cudaGraphExecUpdateErrorTopologyChanged);
	EXPECT(cudaErrorGraphExecUpdateFailure, cudaGetLastError);
	OK(cudaGraphLaunch, ge, s);
	OK(cudaStreamSynchronize, s);
	CHECK(host_calls == 4);

	/* Allocation inside a capture: the driver call happens at capture
	 * (once), the launches reuse the graph's memory. */
	step("g_capture_async");
	OK(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal);
	if (OK(cudaMallocAsync, &g1, 16 * MiB, s))
		logged_alloc("async", 0, 16 * MiB, g1);
	OK(cudaMemsetAsync, g1, 0, 16 * MiB, s);
	if (OK(cudaFreeAsync, g1, s))
		evlog_free(g1);
	OK(cudaStreamEndCapture, s, &ga);
	OK(cudaGraphGetNodes, ga, (cudaGraphNode_t *)NULL, &n);
	CHECK(n == 3);
	OK(cudaGraphInstantiate, &gae, ga, 0ull);
	for (int i = 0; i < 3; i++)
		OK(cudaGraphLaunch, gae, s);
	OK(cudaStreamSynchronize, s);

	/* cudaMalloc is "potentially unsafe" while a global-mode capture is
	 * on: refused, and the capture is lost. */
	step("g_capture_refused");
	OK(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal);
	EXPECT(cudaErrorStreamCaptureUnsupported, cudaMalloc, &refused, MiB);
	EXPECT(cudaErrorStreamCaptureInvalidated, cudaStreamEndCapture, s,
	       &gb);
	CHECK(gb == NULL);
	EXPECT(cudaErrorStreamCaptureInvalidated, cudaGetLastError);
	/* ...and allowed once this thread's mode is relaxed. */
	step("g_capture_relaxed");
	cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
	OK(cudaThreadExchangeStreamCaptureMode, &mode);
	CHECK(mode == cudaStreamCaptureModeGlobal);
	OK(cudaStreamBeginCapture, s, cudaStreamCaptureModeGlobal);
	if (OK(cudaMalloc, &relaxed, 3 * MiB))
		logged_alloc("device", 0, 3 * MiB, relaxed);
	scale<<<4, 64, 0, s>>>((float *)relaxed, 2.0f, 256);
	OK(cudaStreamEndCapture, s, &gb);
	OK(cudaThreadExchangeStreamCaptureMode, &mode);
	CHECK(mode == cudaStreamCaptureModeRelaxed);
	if (OK(cudaFree, relaxed))
		evlog_free(relaxed);
	step_end();

	/* A graph built node by node. */
	cudaGraph_t gm = NULL;
	cudaGraphExec_t gme = NULL;
	cudaGraphNode_t kn = NULL, hn = NULL, nodes[4] = {};
	cudaKernelNodeParams kp = {};
	cudaHostNodeParams hp = {};
	float f = 3.0f;
	int len = 1 << 10, one = 1;
	void *kargs[] = {&x, &f, &len};
	kp.func = (void *)scale;
	kp.gridDim = dim3(4);
	kp.blockDim = dim3(256);
	kp.kernelParams = kargs;
	hp.fn = on_host;
	hp.userData = &one;
	OK(cudaGraphCreate, &gm, 0u);
	OK(cudaGraphAddKernelNode, &kn, gm, (const cudaGraphNode_t *)NULL,
	   (size_t)0, &kp);
	OK(cudaGraphAddHostNode, &hn, gm, &kn, (size_t)1, &hp);
	n = 4;
	OK(cudaGraphGetNodes, gm, nodes, &n);
	CHECK(n == 2 && nodes[0] == kn && nodes[1] == hn);
	cudaGraphNodeType t;
	OK(cudaGraphNodeGetType, hn, &t);
	CHECK(t == cudaGraphNodeTypeHost);
	OK(cudaGraphInstantiate, &gme, gm, 0ull);
	kp.gridDim = dim3(8);
	OK(cudaGraphExecKernelNodeSetParams, gme, kn, &kp);
	kp.blockDim = dim3(2048); /* refused: too many threads */
	EXPECT(cudaErrorInvalidConfiguration, cudaGraphKernelNodeSetParams, kn,
	       &kp);
	cudaKernelNodeParams got = {};
	OK(cudaGraphKernelNodeGetParams, kn, &got);
	CHECK(got.gridDim.x == 4 && got.func == (void *)scale);
	EXPECT(cudaErrorInvalidConfiguration, cudaGetLastError);
	host_calls = 0;
	OK(cudaGraphLaunch, gme, s);
	OK(cudaStreamSynchronize, s);
	CHECK(host_calls == 1);
	OK(cudaGetLastError);

	OK(cudaGraphExecDestroy, gme);
	OK(cudaGraphDestroy, gm);
	OK(cudaGraphExecDestroy, ge);
	OK(cudaGraphExecDestroy, gae);
	OK(cudaGraphDestroy, g);
	OK(cudaGraphDestroy, g2);
	OK(cudaGraphDestroy, g3);
	OK(cudaGraphDestroy, ga);
	OK(cudaGraphDestroy, gb);
	OK(cudaStreamDestroy, s);
	if (OK(cudaFree, x))
		evlog_free(x);
	if (OK(cudaFree, out))
		evlog_free(out);
	return 0;
}

/* Dynamic shared memory against the card's limits. */
static int smem(void)
{
	cudaDeviceProp p;
	float *x = NULL, *out = NULL;
	if (!OK(cudaGetDeviceProperties, &p, 0))
		return 1;
	size_t optin = p.sharedMemPerBlockOptin;
	evlog_line("value smem_optin %zu", optin);
	log_device(0);
	step("s_buffers");
	if (OK(cudaMalloc, (void **)&x, 4096))
		logged_alloc("device", 0, 4096, x);
	if (OK(cudaMalloc, (void **)&out, 4096))
		logged_alloc("device", 0, 4096, out);
	step_end();
	reduce_smem<<<1, 256, 48 * 1024>>>(x, out);
	OK(cudaGetLastError);
	reduce_smem<<<1, 256, 48 * 1024 + 1>>>(x, out); /* no opt-in yet */
	EXPECT(cudaErrorInvalidValue, cudaGetLastError);
	EXPECT(cudaErrorInvalidValue, cudaFuncSetAttribute,
	       (const void *)reduce_smem,
	       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin + 1);
	EXPECT(cudaErrorInvalidValue, cudaGetLastError);
	OK(cudaFuncSetAttribute, (const void *)reduce_smem,
	   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)optin);
	reduce_smem<<<1, 256, optin>>>(x, out);
	OK(cudaGetLastError);
	reduce_smem<<<1, 256, optin + 1>>>(x, out);
	EXPECT(cudaErrorInvalidValue, cudaGetLastError);
	/* 100 KiB: within an H100's or A100's opt-in, past an L4's. */
	reduce_smem<<<1, 256, 100 * 1024>>>(x, out);
	cudaError_t big = cudaGetLastError();
	evlog_line("value smem_100k %s", cudaGetErrorName(big));
	cudaFuncAttributes fa;
	if (OK(cudaFuncGetAttributes, &fa, (const void *)reduce_smem))
		evlog_line("value func_max_dynamic %d",
		           fa.maxDynamicSharedSizeBytes);
	if (OK(cudaFree, x))
		evlog_free(x);
	if (OK(cudaFree, out))
		evlog_free(out);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct evlog_case cases[] = {
	        {"kernels", kernels},
	        {"graph", graph},
	        {"smem", smem},
	};
	return rt_main(argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}
