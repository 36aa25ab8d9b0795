/*
 * serve_sim — a simulated vLLM-style inference server, for `vramtrace demo`
 * and the verdict tests: its flags are vLLM's, its allocations come in the
 * order and shapes a real engine makes them, and it serves real TCP
 * connections on 127.0.0.1, so each OOM class of DESIGN.md's table can be
 * reproduced on the fake GPU (or on a real one) by choosing flags:
 *
 *   1. init       each tensor-parallel rank takes its own device
 *                 (--tensor-parallel-size N: ranks 0..N-1 on devices
 *                 0..N-1) and probes its free memory (cuMemGetInfo_v2,
 *                 hipMemGetInfo);
 *   2. weights    --num-layers tensors per rank, together
 *                 --model-size-gib / N (--no-shard: a sharding bug, rank 0
 *                 loads the whole model and the other ranks nothing);
 *   3. profile    a dummy forward pass of --max-num-batched-tokens tokens
 *                 (--act-kib-per-token each), freed again;
 *   4. kv_cache   a second free-memory probe, then the KV reserve:
 *                 --gpu-memory-utilization x total - weights - the profiled
 *                 activation peak (vLLM V1's arithmetic, which counts other
 *                 processes' memory as available);
 *   5. swap       --swap-space GiB of pinned host memory (cuMemHostAlloc,
 *                 hipHostMalloc),
 *                 in per-layer blocks, as vLLM's CPU swap space;
 *   6. serve      listen on 127.0.0.1, then one request alone and then
 *                 --concurrent-requests at once (real client threads); each
 *                 request holds --prompt-len (default --max-model-len) x
 *                 --act-kib-per-token of activations / N on every rank
 *                 until its connection closes. At most --max-num-seqs are
 *                 decoded together; the rest wait their turn.
 *
 * Phases are announced with the annotation API (include/vramtrace.h), so
 * the trace says weights / profile / kv_cache / forward without rules.
 * --runtime cuda (the default) reaches the CUDA driver as libcudart reaches
 * it (dlopen + one dlsym of cuGetProcAddress_v2) and switches the current
 * context per rank. --runtime hip reaches the HIP runtime as PyTorch and
 * vLLM on ROCm do (dlopen of libamdhip64.so, else its .so.6/.so.5 sonames,
 * then dlsym by name): hipSetDevice per rank, hipMalloc/hipFree for weights,
 * activations and the KV cache (PyTorch's caching allocator on ROCm),
 * hipMemGetInfo for the probes, hipHostMalloc for the swap space. The
 * allocation shapes are the same on both, so each scenario yields the same
 * verdict and numbers. Everything runs on the main thread, so runs are
 * deterministic.
 *
 * --log-format vllm|sglang|llamacpp|tgi|trtllm prints the engine's own log
 * lines with these numbers (sim_log.h; --kv-kib-per-token turns on vLLM's
 * start-up KV check, which refuses with exit 1).
 *
 * Exit status: 0 served everything, 1 the engine refused to start (its KV
 * check), 2 usage, 3 out of memory (device or pinned host memory, like a
 * server that dies on the error), 4 no driver.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sim_log.h"
#include "vramtrace.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);
typedef int hipError_t;

#define KIB      1024.0
#define GIB      (1024.0 * 1024.0 * 1024.0)
#define MAX_TP   8
#define MAX_REQS 64
#define MAX_HOST 1024

static struct {
	CUresult (*init)(unsigned);
	CUresult (*count)(int *);
	CUresult (*retain)(CUcontext *, int);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free_)(CUdeviceptr);
	CUresult (*mem_info)(size_t *, size_t *);
	CUresult (*host_alloc)(void **, size_t, unsigned);
	CUresult (*host_free)(void *);
} cu;

static struct {
	hipError_t (*count)(int *);
	hipError_t (*set_device)(int);
	hipError_t (*malloc_)(void **, size_t);
	hipError_t (*free_)(void *);
	hipError_t (*mem_info)(size_t *, size_t *);
	hipError_t (*host_malloc)(void **, size_t, unsigned);
	hipError_t (*host_free)(void *);
} hip;

static struct {
	double model_gib, util, swap_gib, act_kib;
	int layers, tp, max_model_len, max_num_seqs, batched_tokens;
	int prompt_len, concurrent, no_shard, load_ms, hip;
} o = {
        .model_gib = 14,
        .util = 0.9,
        .swap_gib = 0,
        .act_kib = 256,
        .layers = 32,
        .tp = 1,
        .max_model_len = 8192,
        .max_num_seqs = 256,
        .batched_tokens = 2048,
        .prompt_len = 0,
        .concurrent = 4,
        .no_shard = 0,
        .load_ms = 0,
};

static CUcontext ctx[MAX_TP];
static size_t weights_on[MAX_TP], profile_peak[MAX_TP];
static size_t last_request; /* bytes of the last allocation asked for */

static void gpu_mem_info(size_t *free_b, size_t *total_b);

static void die_oom(const char *what, int rank)
{
	size_t free_b = 0, total_b = 0;

	if (sim_log_enabled()) {
		gpu_mem_info(&free_b, &total_b);
		sim_log_oom(rank,
		            !strcmp(what, "load_weights")  ? SIM_LOG_IN_WEIGHTS
		            : !strcmp(what, "profile_run") ? SIM_LOG_IN_PROFILE
		            : !strcmp(what, "execute_model")
		                    ? SIM_LOG_IN_FORWARD
		                    : SIM_LOG_IN_KV,
		            last_request, free_b, total_b);
	}
	fprintf(stderr,
	        "serve_sim: %s out of memory in %s (rank %d); "
	        "exiting\n",
	        o.hip ? "HIP" : "CUDA", what, rank);
	exit(3);
}

/* ---- the runtime: the same calls on CUDA and on HIP ---------------------- */

static int gpu_alloc(CUdeviceptr *p, size_t bytes)
{
	void *q = NULL;
	int rc;

	last_request = bytes;
	if (!o.hip)
		return cu.alloc(p, bytes);
	rc = hip.malloc_(&q, bytes);
	*p = (CUdeviceptr)(uintptr_t)q;
	return rc;
}

static void gpu_free(CUdeviceptr p)
{
	if (o.hip)
		hip.free_((void *)(uintptr_t)p);
	else
		cu.free_(p);
}

static void gpu_mem_info(size_t *free_b, size_t *total_b)
{
	*free_b = *total_b = 0;
	if (o.hip)
		hip.mem_info(free_b, total_b);
	else
		cu.mem_info(free_b, total_b);
}

static int gpu_host_alloc(void **p, size_t bytes)
{
	return o.hip ? hip.host_malloc(p, bytes, 0)
	             : cu.host_alloc(p, bytes, 0);
}

static void use_rank(int rank)
{
	if (o.hip ? hip.set_device(rank) : cu.set_current(ctx[rank])) {
		fprintf(stderr, "serve_sim: cannot select device %d\n", rank);
		exit(4);
	}
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (ms > 0 && nanosleep(&ts, &ts))
		;
}

static void init_device(int rank)
{
	size_t free_b, total_b;

	if (!o.hip && cu.retain(&ctx[rank], rank)) {
		fprintf(stderr, "serve_sim: no device %d for rank %d\n", rank,
		        rank);
		exit(4);
	}
	use_rank(rank);
	gpu_mem_info(&free_b, &total_b);
}

static void load_weights(int rank)
{
	double share =
	        o.no_shard ? (rank == 0 ? o.model_gib : 0) : o.model_gib / o.tp;
	size_t per = (size_t)(share * GIB / o.layers);
	size_t free_b = 0, total_b = 0;
	CUdeviceptr p;

	if (!per)
		return;
	use_rank(rank);
	if (sim_log_enabled())
		gpu_mem_info(&free_b, &total_b);
	VRAMTRACE_PHASE_PUSH("weights");
	for (int l = 0; l < o.layers; l++) {
		if (o.load_ms)
			sleep_ms(o.load_ms / o.layers);
		if (gpu_alloc(&p, per))
			die_oom("load_weights", rank);
		weights_on[rank] += per;
	}
	VRAMTRACE_PHASE_POP();
	sim_log_weights(rank, weights_on[rank], free_b);
}

static void profile_run(int rank)
{
	size_t act =
	        (size_t)((double)o.batched_tokens * o.act_kib * KIB / o.tp);
	CUdeviceptr p;

	use_rank(rank);
	VRAMTRACE_PHASE_PUSH("profile");
	if (act && gpu_alloc(&p, act))
		die_oom("profile_run", rank);
	if (act)
		gpu_free(p);
	profile_peak[rank] = act;
	VRAMTRACE_PHASE_POP();
}

static void initialize_kv_cache(int rank)
{
	size_t free_b, total_b;
	CUdeviceptr p;
	double kv;

	use_rank(rank);
	gpu_mem_info(&free_b, &total_b);
	kv = o.util * (double)total_b - (double)weights_on[rank] -
	     (double)profile_peak[rank];
	if (sim_log_kv_check(rank, kv))
		exit(1); /* the engine refused to start */
	if (kv <= 0) {
		fprintf(stderr,
		        "serve_sim: no memory left for the KV cache on "
		        "rank %d; raise --gpu-memory-utilization\n",
		        rank);
		exit(3);
	}
	VRAMTRACE_PHASE_PUSH("kv_cache");
	if (gpu_alloc(&p, (size_t)kv))
		die_oom("initialize_kv_cache", rank);
	VRAMTRACE_PHASE_POP();
	sim_log_kv(rank, (size_t)kv);
	printf("serve_sim: rank %d: weights %.2f GiB, KV cache %.2f GiB\n",
	       rank, (double)weights_on[rank] / GIB, kv / GIB);
}

static void allocate_swap_space(void)
{
	size_t per = (size_t)(o.swap_gib * GIB / o.layers);
	void *blocks[MAX_HOST];
	int n = o.layers < MAX_HOST ? o.layers : MAX_HOST;

	if (!per)
		return;
	VRAMTRACE_PHASE_PUSH("kv_cache");
	for (int l = 0; l < n; l++)
		if (gpu_host_alloc(&blocks[l], per)) {
			fprintf(stderr,
			        "serve_sim: cannot pin %.2f GiB of host "
			        "memory for the swap space (block %d)\n",
			        o.swap_gib, l);
			exit(3);
		}
	VRAMTRACE_PHASE_POP();
}

/* ---- serving ------------------------------------------------------------- */

static void *client(void *arg)
{
	int port = (int)(intptr_t)arg;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	char c;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* The server may die mid-request (that is the point of some runs):
	 * a failed read just ends this client. */
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    read(fd, &c, 1) != 1)
		c = 0;
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* One request's activations on every rank; returns them in p[rank]. */
static void execute_model(CUdeviceptr *p)
{
	int len = o.prompt_len ? o.prompt_len : o.max_model_len;
	size_t act = (size_t)((double)len * o.act_kib * KIB / o.tp);

	VRAMTRACE_PHASE_PUSH("forward");
	for (int r = 0; r < o.tp; r++) {
		use_rank(r);
		if (gpu_alloc(&p[r], act))
			die_oom("execute_model", r);
	}
	VRAMTRACE_PHASE_POP();
}

static void finish(const CUdeviceptr *p)
{
	for (int r = 0; r < o.tp; r++) {
		use_rank(r);
		gpu_free(p[r]);
	}
}

/* Accepts n connections, then decodes them max_num_seqs at a time; each
 * batch holds its activations until its connections are answered. */
static void serve(int srv, int port, int n)
{
	pthread_t t[MAX_REQS];
	int conn[MAX_REQS];
	CUdeviceptr act[MAX_REQS][MAX_TP];

	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, client, (void *)(intptr_t)port);
	for (int i = 0; i < n; i++)
		conn[i] = accept(srv, NULL, NULL);
	for (int done = 0; done < n;) {
		int batch =
		        n - done < o.max_num_seqs ? n - done : o.max_num_seqs;
		for (int i = done; i < done + batch; i++)
			execute_model(act[i]);
		for (int i = done; i < done + batch; i++) {
			finish(act[i]);
			if (write(conn[i], "x", 1) != 1)
				fprintf(stderr, "serve_sim: lost a client\n");
			close(conn[i]);
		}
		done += batch;
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* ---- setup --------------------------------------------------------------- */

/* PyTorch on ROCm opens the runtime by its dev name; wheels that bundle
 * it carry a soname. Lookups are by name, as from a linked library. */
static int resolve_hip(void)
{
	static const char *const sonames[] = {
	        "libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
	void *h = NULL;
	struct {
		const char *name;
		void **slot;
	} names[] = {
	        {"hipGetDeviceCount", (void **)&hip.count},
	        {"hipSetDevice", (void **)&hip.set_device},
	        {"hipMalloc", (void **)&hip.malloc_},
	        {"hipFree", (void **)&hip.free_},
	        {"hipMemGetInfo", (void **)&hip.mem_info},
	        {"hipHostMalloc", (void **)&hip.host_malloc},
	        {"hipHostFree", (void **)&hip.host_free},
	};

	for (size_t i = 0; !h && i < sizeof(sonames) / sizeof(sonames[0]); i++)
		h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!(*names[i].slot = dlsym(h, names[i].name)))
			return -1;
	return 0;
}

static int resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	struct {
		const char *name;
		void **slot;
	} names[] = {
	        {"cuInit", (void **)&cu.init},
	        {"cuDeviceGetCount", (void **)&cu.count},
	        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain},
	        {"cuCtxSetCurrent", (void **)&cu.set_current},
	        {"cuMemAlloc", (void **)&cu.alloc},
	        {"cuMemFree", (void **)&cu.free_},
	        {"cuMemGetInfo", (void **)&cu.mem_info},
	        {"cuMemHostAlloc", (void **)&cu.host_alloc},
	        {"cuMemFreeHost", (void **)&cu.host_free},
	};

	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL))
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (get(names[i].name, names[i].slot, 12000, 0, NULL) ||
		    !*names[i].slot)
			return -1;
	return 0;
}

static int usage(const char *msg)
{
	fprintf(stderr,
	        "serve_sim: %s\n"
	        "usage: serve_sim [serve MODEL] [--model-size-gib G] "
	        "[--num-layers N]\n"
	        "         [--tensor-parallel-size N] [--no-shard] "
	        "[--gpu-memory-utilization F]\n"
	        "         [--max-model-len T] [--max-num-seqs N] "
	        "[--max-num-batched-tokens T]\n"
	        "         [--act-kib-per-token K] [--swap-space G] "
	        "[--prompt-len T]\n"
	        "         [--concurrent-requests N] [--load-ms MS] "
	        "[--runtime cuda|hip]\n"
	        "         [--log-format vllm|sglang|llamacpp|tgi|trtllm] "
	        "[--kv-kib-per-token K]\n"
	        "         [--log-scale weights=F|kv=F]\n",
	        msg);
	return 2;
}

static int parse(int argc, char **argv)
{
	int i = 1;

	/* "serve MODEL" as in `vllm serve MODEL`: the name is cosmetic. */
	if (i < argc && !strcmp(argv[i], "serve"))
		i += 2;
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;
		double d;
		int k = sim_log_option(argc, argv, &i);
		if (k < 0)
			return usage("bad log option");
		if (k)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage("a simulated vLLM-style server");
			exit(0);
		}
		if (!strcmp(a, "--no-shard")) {
			o.no_shard = 1;
			continue;
		}
		if (!v)
			return usage("option needs a value");
		if (!strcmp(a, "--runtime")) {
			if (strcmp(v, "cuda") && strcmp(v, "hip"))
				return usage("--runtime is cuda or hip");
			o.hip = !strcmp(v, "hip");
			i++;
			continue;
		}
		d = strtod(v, &end);
		if (*end || d < 0)
			return usage("bad number");
		i++;
		if (!strcmp(a, "--model-size-gib"))
			o.model_gib = d;
		else if (!strcmp(a, "--num-layers"))
			o.layers = (int)d;
		else if (!strcmp(a, "--tensor-parallel-size") ||
		         !strcmp(a, "-tp"))
			o.tp = (int)d;
		else if (!strcmp(a, "--gpu-memory-utilization"))
			o.util = d;
		else if (!strcmp(a, "--max-model-len"))
			o.max_model_len = (int)d;
		else if (!strcmp(a, "--max-num-seqs"))
			o.max_num_seqs = (int)d;
		else if (!strcmp(a, "--max-num-batched-tokens"))
			o.batched_tokens = (int)d;
		else if (!strcmp(a, "--act-kib-per-token"))
			o.act_kib = d;
		else if (!strcmp(a, "--swap-space"))
			o.swap_gib = d;
		else if (!strcmp(a, "--prompt-len"))
			o.prompt_len = (int)d;
		else if (!strcmp(a, "--concurrent-requests"))
			o.concurrent = (int)d;
		else if (!strcmp(a, "--load-ms"))
			o.load_ms = (int)d;
		else
			return usage("unknown option");
	}
	if (o.tp < 1 || o.tp > MAX_TP || o.layers < 1 ||
	    o.concurrent > MAX_REQS || o.max_num_seqs < 1 || o.util > 1)
		return usage("value out of range");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int ndev = 0, srv, port;

	if (parse(argc, argv))
		return 2;
	if (o.hip ? resolve_hip() || hip.count(&ndev)
	          : resolve() || cu.init(0) || cu.count(&ndev)) {
		fprintf(stderr, "serve_sim: no usable %s\n",
		        o.hip ? "HIP runtime" : "CUDA driver");
		return 4;
	}
	if (ndev < o.tp) {
		fprintf(stderr,
		        "serve_sim: --tensor-parallel-size %d needs %d "
		        "devices, %d found\n",
		        o.tp, o.tp, ndev);
		return 4;
	}
	sim_log_start(&(struct sim_log_config){
	        "sim-model", o.max_model_len, o.max_num_seqs, o.util, o.tp,
	        o.layers, o.batched_tokens});
	for (int r = 0; r < o.tp; r++)
		init_device(r);
	for (int r = 0; r < o.tp; r++)
		load_weights(r);
	for (int r = 0; r < o.tp; r++)
		profile_run(r);
	for (int r = 0; r < o.tp; r++)
		initialize_kv_cache(r);
	allocate_swap_space();

	srv = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (srv < 0 || bind(srv, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(srv, MAX_REQS) < 0 ||
	    getsockname(srv, (struct sockaddr *)&a, &len) < 0) {
		perror("serve_sim: listen");
		return 1;
	}
	port = ntohs(a.sin_port);
	printf("serve_sim: listening on 127.0.0.1:%d\n", port);
	fflush(stdout);
	sim_log_ready(port);
	serve(srv, port, 1);
	if (o.concurrent > 1)
		serve(srv, port, o.concurrent);
	close(srv);
	printf("serve_sim: served %d requests\n",
	       1 + (o.concurrent > 1 ? o.concurrent : 0));
	return 0;
}
