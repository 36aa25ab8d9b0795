/*
 * sglang_sim — a simulated SGLang server, for `vramtrace plan`'s tests and
 * the demo runs: its flags are SGLang's (python -m sglang.launch_server),
 * its start-up sizes memory by SGLang's rules (ModelRunner.load_model,
 * init_memory_pool, the CUDA-graph runner), its allocations go through
 * the allocator PyTorch would use (sim_alloc.c), and it serves real
 * HTTP/1.1 on 127.0.0.1. Start-up, per tensor-parallel rank (rank r on
 * device r, all in this process, one engine thread):
 *
 *   1. init       the free-memory probe before the model loads: SGLang's
 *                 pre_model_load_memory (cuMemGetInfo_v2, hipMemGetInfo);
 *   2. weights    --num-layers tensors, together --model-size-gib / tp;
 *   3. KV pool    a second probe, then SGLang's budget
 *                   rest = free now - pre_model_load_memory x
 *                          (1 - --mem-fraction-static)
 *                 (the weights are already out of "free now"; other
 *                 processes' memory out of both probes); rest <= 0 is
 *                 SGLang's "Loaded weights leave no GPU memory for the KV
 *                 cache" error. max_total_num_tokens = rest / the cell
 *                 size (--kv-kib-per-token / tp per rank); then
 *                 max_running_requests: --max-running-requests, at most
 *                 max_total_num_tokens / 2, or without the flag
 *                 min(max(min(tokens / context x 512, 4096), 2048),
 *                 tokens / 2); the ReqToTokenPool, (max_running_requests
 *                 + 1) x (--context-length + 4) int32 entries, and the
 *                 KV buffers, one K and one V tensor per layer;
 *   4. cuda_graph the decode graphs for batch sizes up to
 *                 --cuda-graph-max-bs, captured after the pool from what
 *                 the fraction left: --cuda-graph-kib-per-bs KiB per unit
 *                 of the largest batch (a graph keeps its largest
 *                 capture's buffers), none with --disable-cuda-graph;
 *   5. serve      listen on 127.0.0.1; a client (in this process) sends
 *                 one request alone, then --concurrent-requests at once.
 *                 The scheduler runs at most max_running_requests
 *                 together; a batch's prefill computes at most
 *                 --chunked-prefill-size new tokens per forward, so its
 *                 activations are min(requests x --prompt-len, chunk) x
 *                 --act-kib-per-token / tp, held until the batch is
 *                 answered.
 *
 * It logs SGLang's own lines ("Load weight end ... mem usage", "KV Cache
 * is allocated. #tokens", "max_total_num_tokens=..."). --allocator, --annotate
 * and --runtime as serve_sim's. Exit status: 0 served everything, 2 usage,
 * 3 out of memory or a budget SGLang refuses, 4 no driver.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_alloc.h"
#include "sim_gpu.h"
#include "sim_http.h"

#define KIB        1024.0
#define GIB        (1024.0 * 1024.0 * 1024.0)
#define MAX_TP     8
#define MAX_REQS   64
#define MAX_LAYERS 256
#define N_CAPTURES 8

static struct {
	double model_gib, frac, kv_kib, act_kib, graph_kib;
	int layers, tp, context, max_running, chunk, graph_bs, no_graph;
	int prompt_len, concurrent, idle, allocator, annotate, hip;
} o = {
        .model_gib = 14,
        .frac = 0.88,
        .kv_kib = 128,
        .act_kib = 256,
        .layers = 32,
        .tp = 1,
        .context = 8192,
        .chunk = 8192,
        .graph_bs = 160,
        .prompt_len = 1024,
        .concurrent = 4,
        .allocator = SIM_ALLOC_PLAIN,
        .annotate = 1,
};

static struct rank {
	struct sim_alloc *al;
	double pre; /* pre_model_load_memory, bytes */
	uint64_t tokens;
	uint64_t act;
} ranks[MAX_TP];

static int max_running; /* resolved, the same on every rank */

/* A line of SGLang's log, prefixed as its scheduler processes are. */
static void sglang_log(int r, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void sglang_log(int r, const char *fmt, ...)
{
	va_list ap;

	printf("[TP%d] ", r);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void die(int r, const char *msg)
{
	fprintf(stderr, "%s\nsglang_sim: rank %d cannot start; exiting\n", msg,
	        r);
	exit(3);
}

static void use_rank(int r)
{
	if (sim_gpu_use(r)) {
		fprintf(stderr, "sglang_sim: cannot select device %d\n", r);
		exit(4);
	}
}

static void tensor(int r, size_t bytes, uint64_t *p, const char *what)
{
	char sz[32];

	if (!sim_alloc_malloc(ranks[r].al, bytes, p))
		return;
	if (o.allocator == SIM_ALLOC_PLAIN)
		fprintf(stderr,
		        "torch.OutOfMemoryError: %s out of memory. Tried to "
		        "allocate %s.\n",
		        sim_gpu_name(),
		        sim_gpu_size(sz, sizeof(sz), (double)bytes));
	else {
		char text[1024];
		size_t n = sim_alloc_oom_text(ranks[r].al, bytes, text,
		                              sizeof(text));
		fprintf(stderr, "%s%s", text,
		        n && text[n - 1] == '\n' ? "" : "\n");
	}
	fprintf(stderr, "sglang_sim: %s out of memory in %s (rank %d)\n",
	        sim_gpu_name(), what, r);
	exit(3);
}

static double free_now(void)
{
	size_t free_b, total_b;

	sim_gpu_mem_info(&free_b, &total_b);
	return (double)free_b;
}

/* ---- start-up, one rank at a time, in SGLang's order ------------------ */

static void init_torch_distributed(int r)
{
	use_rank(r);
	ranks[r].al = sim_alloc_new(o.allocator, r);
	if (!ranks[r].al)
		exit(4);
	ranks[r].pre = free_now();
}

static void load_model(int r)
{
	size_t per = (size_t)(o.model_gib / o.tp * GIB / o.layers);
	uint64_t p;

	use_rank(r);
	sglang_log(r, "Load weight begin. avail mem=%.2f GB",
	           ranks[r].pre / GIB);
	sim_alloc_phase_push("weights");
	for (int l = 0; l < o.layers && per; l++)
		tensor(r, per, &p, "load_model");
	sim_alloc_phase_pop();
	sglang_log(
	        r,
	        "Load weight end. type=SimForCausalLM, dtype=torch.bfloat16, "
	        "avail mem=%.2f GB, mem usage=%.2f GB.",
	        free_now() / GIB, (ranks[r].pre - free_now()) / GIB);
}

/* ModelRunnerKVCacheMixin: the budget, the token count and the request
 * cap. The same on every rank (SGLang takes the minimum over ranks). */
static void profile_max_num_token(int r)
{
	double avail = free_now();
	double rest = avail - ranks[r].pre * (1.0 - o.frac);
	double cell = o.kv_kib * KIB / o.tp;
	char msg[320];

	if (rest <= 0) {
		snprintf(msg, sizeof(msg),
		         "ValueError: Loaded weights leave no GPU memory for "
		         "the KV cache under --mem-fraction-static=%g. Raise "
		         "--mem-fraction-static above %.3f.",
		         o.frac, 1.0 - avail / ranks[r].pre);
		die(r, msg);
	}
	ranks[r].tokens = cell > 0 ? (uint64_t)(rest / cell) : 0;
	if (!ranks[r].tokens)
		die(r, "RuntimeError: Not enough memory. Please try to "
		       "increase --mem-fraction-static.");
}

static int resolve_max_running(uint64_t tokens)
{
	uint64_t est = (uint64_t)((double)tokens / o.context * 512);
	uint64_t n;

	est = est > 4096 ? 4096 : est;
	est = est < 2048 ? 2048 : est;
	n = o.max_running ? (uint64_t)o.max_running : est;
	if (n > tokens / 2)
		n = tokens / 2;
	return n ? (int)n : 1;
}

static void init_memory_pool(int r)
{
	size_t rtt = (size_t)(max_running + 1) * (size_t)(o.context + 4) * 4;
	size_t layer = (size_t)((double)(ranks[r].tokens + 1) * o.kv_kib * KIB /
	                        o.tp / 2 / o.layers);
	uint64_t p;

	use_rank(r);
	sim_alloc_phase_push("kv_cache");
	tensor(r, rtt, &p, "ReqToTokenPool");
	for (int l = 0; l < 2 * o.layers; l++)
		tensor(r, layer, &p, "MHATokenToKVPool._create_buffers");
	sim_alloc_phase_pop();
	sglang_log(r,
	           "KV Cache is allocated. #tokens: %llu, K size: %.2f GB, "
	           "V size: %.2f GB",
	           (unsigned long long)ranks[r].tokens,
	           (double)layer * o.layers / GIB,
	           (double)layer * o.layers / GIB);
	sglang_log(r, "Memory pool end. avail mem=%.2f GB", free_now() / GIB);
}

/* CudaGraphRunner: batch sizes up to --cuda-graph-max-bs, largest first;
 * the graphs share one memory pool sized by the largest capture. */
static void capture_cuda_graphs(int r)
{
	size_t per =
	        (size_t)((double)o.graph_bs * o.graph_kib * KIB / N_CAPTURES);
	double before = free_now();
	uint64_t p;

	if (o.no_graph || !per)
		return;
	use_rank(r);
	sglang_log(r,
	           "Capture cuda graph begin. This can take up to several "
	           "minutes. avail mem=%.2f GB",
	           before / GIB);
	sim_alloc_phase_push("cuda_graph");
	sim_alloc_capture(ranks[r].al, 1);
	for (int g = 0; g < N_CAPTURES; g++)
		tensor(r, per, &p, "CudaGraphRunner.capture");
	sim_alloc_capture(ranks[r].al, 0);
	sim_alloc_phase_pop();
	sglang_log(r,
	           "Capture cuda graph end. Time elapsed: 0.01 s. mem "
	           "usage=%.2f GB. avail mem=%.2f GB.",
	           (before - free_now()) / GIB, free_now() / GIB);
}

static void start_up(void)
{
	uint64_t tokens = UINT64_MAX;

	for (int r = 0; r < o.tp; r++)
		init_torch_distributed(r);
	for (int r = 0; r < o.tp; r++)
		load_model(r);
	for (int r = 0; r < o.tp; r++) {
		profile_max_num_token(r);
		if (ranks[r].tokens < tokens)
			tokens = ranks[r].tokens;
	}
	for (int r = 0; r < o.tp; r++)
		ranks[r].tokens = tokens;
	max_running = resolve_max_running(tokens);
	for (int r = 0; r < o.tp; r++)
		init_memory_pool(r);
	for (int r = 0; r < o.tp; r++)
		capture_cuda_graphs(r);
	sglang_log(0,
	           "max_total_num_tokens=%llu, chunked_prefill_size=%d, "
	           "max_prefill_tokens=16384, max_running_requests=%d, "
	           "context_len=%d, available_gpu_mem=%.2f GB",
	           (unsigned long long)tokens, o.chunk, max_running, o.context,
	           free_now() / GIB);
}

/* ---- serving ------------------------------------------------------------ */

/* One batch of n requests: its prefill's activations on every rank,
 * held until the batch is answered. */
static void run_batch(int n)
{
	uint64_t want = (uint64_t)n * (uint64_t)o.prompt_len;
	size_t bytes;

	if (o.chunk > 0 && want > (uint64_t)o.chunk)
		want = (uint64_t)o.chunk;
	bytes = (size_t)((double)want * o.act_kib * KIB / o.tp);
	for (int r = 0; r < o.tp && bytes; r++) {
		use_rank(r);
		sim_alloc_phase_push("forward");
		tensor(r, bytes, &ranks[r].act, "forward_extend");
		sim_alloc_phase_pop();
	}
}

static void finish_batch(void)
{
	for (int r = 0; r < o.tp; r++)
		if (ranks[r].act) {
			use_rank(r);
			sim_alloc_free(ranks[r].al, ranks[r].act);
			ranks[r].act = 0;
		}
}

static int serve(void)
{
	struct sim_http *http = sim_http_listen(0, 0);
	struct sim_load load = {
	        .wait_ready = 1, .path = "/generate", .idle = o.idle};
	struct sim_http_req reqs[MAX_REQS];
	int served = 0, failed;

	if (!http)
		return 1;
	load.port = sim_http_port(http);
	load.steps[load.nsteps++] = 1;
	if (o.concurrent > 1)
		load.steps[load.nsteps++] = o.concurrent;
	printf("INFO:     Uvicorn running on http://127.0.0.1:%d\n", load.port);
	fflush(stdout);
	if (sim_load_start(&load))
		return 1;
	for (int s = 0; s < load.nsteps; s++) {
		int n = load.steps[s];
		for (int i = 0; i < n; i++)
			if (sim_http_next(http, &reqs[i]))
				return 1;
		for (int i = 0; i < n; i += max_running) {
			int b = n - i < max_running ? n - i : max_running;
			run_batch(b);
			finish_batch();
			for (int k = 0; k < b; k++)
				sim_http_reply(http, &reqs[i + k]);
		}
		served += n;
	}
	failed = sim_load_join(&load);
	sim_http_stop(http);
	if (failed) {
		fprintf(stderr,
		        "sglang_sim: %d requests got no complete answer\n",
		        failed);
		return 1;
	}
	printf("sglang_sim: served %d requests\n", served);
	return 0;
}

/* ---- setup ------------------------------------------------------------- */

static int usage(const char *msg)
{
	fprintf(stderr,
	        "sglang_sim: %s\n"
	        "usage: sglang_sim [--model-path M] [--model-size-gib G] "
	        "[--num-layers N]\n"
	        "         [--tp N] [--mem-fraction-static F] "
	        "[--context-length T]\n"
	        "         [--max-running-requests N] [--chunked-prefill-size "
	        "T]\n"
	        "         [--cuda-graph-max-bs N] [--cuda-graph-kib-per-bs K] "
	        "[--disable-cuda-graph]\n"
	        "         [--kv-kib-per-token K] [--act-kib-per-token K] "
	        "[--prompt-len T]\n"
	        "         [--concurrent-requests N] [--idle-connections N]\n"
	        "         [--allocator plain|caching|expandable|async]\n"
	        "         [--annotate api|none] [--runtime cuda|hip]\n",
	        msg);
	return 2;
}

/* "--flag value" or "--flag=value": the value, advancing *i past it. */
static const char *value_of(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] || *i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

static int parse(int argc, char **argv)
{
	static const struct {
		const char *name;
		double *d;
		int *n;
	} nums[] = {
	        {"--model-size-gib", &o.model_gib, NULL},
	        {"--mem-fraction-static", &o.frac, NULL},
	        {"--kv-kib-per-token", &o.kv_kib, NULL},
	        {"--act-kib-per-token", &o.act_kib, NULL},
	        {"--cuda-graph-kib-per-bs", &o.graph_kib, NULL},
	        {"--num-layers", NULL, &o.layers},
	        {"--tensor-parallel-size", NULL, &o.tp},
	        {"--tp-size", NULL, &o.tp},
	        {"--tp", NULL, &o.tp},
	        {"--context-length", NULL, &o.context},
	        {"--max-running-requests", NULL, &o.max_running},
	        {"--chunked-prefill-size", NULL, &o.chunk},
	        {"--cuda-graph-max-bs", NULL, &o.graph_bs},
	        {"--prompt-len", NULL, &o.prompt_len},
	        {"--concurrent-requests", NULL, &o.concurrent},
	        {"--idle-connections", NULL, &o.idle},
	};

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		size_t k;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage("a simulated SGLang server");
			exit(0);
		}
		if (!strcmp(a, "--disable-cuda-graph")) {
			o.no_graph = 1;
			continue;
		}
		if ((v = value_of(argc, argv, &i, "--model-path")))
			continue;
		if ((v = value_of(argc, argv, &i, "--allocator"))) {
			o.allocator = sim_alloc_mode_of(v);
			if (o.allocator < 0 || o.allocator > SIM_ALLOC_ASYNC)
				return usage("--allocator is one of PyTorch's");
			continue;
		}
		if ((v = value_of(argc, argv, &i, "--annotate"))) {
			if (strcmp(v, "api") && strcmp(v, "none"))
				return usage("--annotate is api or none");
			o.annotate = !strcmp(v, "api");
			continue;
		}
		if ((v = value_of(argc, argv, &i, "--runtime"))) {
			if (strcmp(v, "cuda") && strcmp(v, "hip"))
				return usage("--runtime is cuda or hip");
			o.hip = !strcmp(v, "hip");
			continue;
		}
		for (k = 0; k < sizeof(nums) / sizeof(nums[0]); k++) {
			char *end;
			double d;
			if (!(v = value_of(argc, argv, &i, nums[k].name)))
				continue;
			d = strtod(v, &end);
			if (end == v || *end || d < 0)
				return usage("bad number");
			if (nums[k].d)
				*nums[k].d = d;
			else
				*nums[k].n = (int)d;
			break;
		}
		if (k == sizeof(nums) / sizeof(nums[0]))
			return usage("unknown option");
	}
	if (o.tp < 1 || o.tp > MAX_TP || o.layers < 1 ||
	    o.layers > MAX_LAYERS || o.frac <= 0 || o.frac > 1 ||
	    o.context < 1 || o.concurrent < 1 || o.concurrent > MAX_REQS ||
	    o.idle > 128)
		return usage("value out of range");
	return 0;
}

int main(int argc, char **argv)
{
	int ndev = 0;

	if (parse(argc, argv))
		return 2;
	sim_alloc_annotate(o.annotate);
	if (sim_gpu_open(o.hip) || sim_gpu_count(&ndev)) {
		fprintf(stderr, "sglang_sim: no usable %s\n",
		        o.hip ? "HIP runtime" : "CUDA driver");
		return 4;
	}
	if (ndev < o.tp) {
		fprintf(stderr,
		        "sglang_sim: --tp %d needs %d devices, %d found\n",
		        o.tp, o.tp, ndev);
		return 4;
	}
	start_up();
	return serve();
}
