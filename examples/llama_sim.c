/*
 * llama_sim — a native server shaped like llama.cpp's llama-server, for
 * the phase tests, the demo and the scenario corpus. Its functions carry
 * llama.cpp's names (exported, so a profiler can name them), it reaches
 * the GPU as libcudart (or the HIP runtime) is reached (sim_gpu.c), and it
 * serves HTTP/1.1 on 127.0.0.1 (POST /completion, GET /health):
 *
 *   llama_model_load            one tensor of --layer-mib MiB per layer
 *                               offloaded: min(-ngl, --model-layers); the
 *                               other layers stay in host memory
 *   llama_kv_cache_init         --ctx-size x --kv-kib-per-token KiB for
 *                               the whole model, once, at context
 *                               creation; each layer's share lives where
 *                               the layer does, so the GPU holds the
 *                               offloaded layers' part. The -np slots
 *                               share it (each gets ctx-size / np)
 *   ggml_backend_sched_reserve  the compute buffer of the worst-case graph,
 *                               reserved at context creation: --compute-mib
 *                               MiB, or with --compute-kib-per-token K the
 *                               graph of min(-c, -b, -ub) tokens at K KiB
 *                               each (0: none)
 *   --warmup                    a warm-up decode of a couple of tokens
 *                               (1/16 of a request's activations) before
 *                               the server is ready, as llama-server's
 *                               start-up (common_init_from_params) runs one
 *   serving                     one request alone, then
 *                               --concurrent-requests at once (default
 *                               -np), at most -np of them decoded together
 *                               (the slots; the rest wait their turn);
 *                               each request's llama_decode holds --act-mib
 *                               MiB of activations until it is answered
 *
 * --allocator plain (the default) allocates each request's activations
 * with one driver call in llama_decode; pool-vmm and pool-leg run each
 * batch's decode through llama.cpp's CUDA pools (ggml_cuda_pool_vmm: a
 * reserved range mapped as it grows, never shrinking; ggml_cuda_pool_leg: a
 * buffer list that keeps what it allocated), the batch's n sequences
 * needing n x --act-mib; caching, expandable and async put the same
 * batches through PyTorch's allocators (sim_alloc.h). A pool that cannot
 * grow is fatal, as CUDA_CHECK is in llama.cpp: the process aborts.
 *
 *   --listen-before-load  listen first and answer 503 "Loading model"
 *                         until the model is loaded, as llama-server does
 *   --load-on-request     listen first, ready at once, and load the model
 *                         when the first completion request arrives, as
 *                         Ollama does
 *   --no-client           no client of its own: the plan's requests come
 *                         from outside (a front that forwards them, as
 *                         Ollama's server does to llama-server)
 *   --idle-connections N  the client keeps N keep-alive connections open
 *                         and idle all along
 *   -np N                 the slots: requests decoded together (default
 *                         4, or the --ladder's largest step)
 *   --concurrent-requests N  the client's second step: N requests at once
 *                         (default -np); past -np they wait for a slot
 *   --model-layers L      the model's layers (default -ngl: all offloaded)
 *   -b N, -ub N           llama.cpp's batch sizes (default 2048 and 512)
 *   --compute-kib-per-token K  the compute buffer as the worst-case graph's
 *                         min(-c, -b, -ub) tokens x K KiB (instead of
 *                         --compute-mib), as with flash attention, which
 *                         materialises no context-sized attention matrix
 *   --ladder 1,2,4,8      instead of 1 then --concurrent-requests: a load
 *                         test's concurrency ladder, each step (that many
 *                         clients at once) after a mark "concurrency=N"
 *                         (VRAMTRACE_MARK: a no-op without the preload)
 *   --hold-ms N           every step keeps its requests in flight (their
 *                         activations allocated) for N ms before answering
 *   --linger-ms N         stays alive N ms after serving everything (after
 *                         printing "served"), its memory still allocated,
 *                         so a test can scrape the metrics endpoint
 *   --pool-mib M          plain allocations only: each request in flight
 *                         also needs M MiB of ggml's CUDA pool (per-batch
 *                         temporaries): llama_decode grows the pool in
 *                         ggml_cuda_pool_leg_alloc (a C name for ggml-cuda's
 *                         ggml_cuda_pool_leg::alloc) to M MiB per request in
 *                         flight before its activations, and the pool never
 *                         shrinks, as ggml's does not
 *   --annotate api|none   announce phases with the annotation API (api) or
 *                         leave them to the names on the stack (none, the
 *                         default)
 *   --load-ms MS          loading the weights takes about MS
 *   --protocol P          http1 (the default), grpc, raw (a protocol of its
 *                         own over TCP, as llama.cpp's RPC server has) or
 *                         tls (HTTPS terminated inside the server)
 *   --runtime cuda|hip
 *   --log-format F        llama-server's own log lines (the default,
 *                         llamacpp: buffers, context, slots, readiness,
 *                         ggml's errors), another engine's (sim_log.h),
 *                         or none
 *
 * Exit status: 0 served everything, 2 usage, 3 out of memory (plain
 * allocations and PyTorch's allocators), 4 no driver; killed by SIGABRT
 * when a pool cannot grow.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "sim_alloc.h"
#include "sim_gpu.h"
#include "sim_http.h"
#include "sim_log.h"
#include "vramtrace.h"

#define MIB         (1024ull * 1024ull)
/* Kept out of line and uncloned, so each name is a frame of its own. */
#if defined(__has_attribute) && __has_attribute(noclone)
#define NOINLINE __attribute__((noinline, noclone, used))
#else
#define NOINLINE __attribute__((noinline, used))
#endif
#define MAX_CLIENTS 64
/* The warm-up decodes a couple of tokens where a request brings a prompt:
 * its activations are this fraction of a request's. */
#define WARMUP_SHARE 16

static struct {
	int n_layers, layer_mib, ctx_size, kv_kib, act_mib, clients, port;
	int hold_ms, linger_ms, nsteps, steps[SIM_HTTP_MAX_STEPS];
	int compute_mib, warmup, listen_first, on_request, no_client, idle, annotate;
	int allocator, hip, load_ms, pool_mib;
	int model_layers, load, batch, ubatch, compute_kib;
	int prompt_tokens; /* --prompt-tokens: each request's, in its slot's
	                      log lines (0: none printed) */
	int task;          /* the next request's task id */
} o = {.n_layers = 32,
       .batch = 2048, /* llama.cpp's defaults (common_params) */
       .ubatch = 512,
       .layer_mib = 16,
       .ctx_size = 4096,
       .kv_kib = 128,
       .act_mib = 64,
       .clients = 0, /* -np: 4, or the --ladder's largest step */
       .allocator = SIM_ALLOC_PLAIN};

/* --pool-mib: the pool's size and the requests in flight (the serving
 * thread only). */
static uint64_t pool_bytes;
static int inflight;

static sim_gpu_alloc_fn raw_alloc;
static sim_gpu_free_fn raw_free;
static struct sim_alloc *g_pool;

/* A device allocation from the calling frame: the driver's own entry on
 * CUDA (so the caller's frame sits right above the driver), the runtime's
 * on HIP. */
#define DEV_ALLOC(p, n)                                                     \
	(raw_alloc ? raw_alloc((unsigned long long *)(p), (n))              \
	           : sim_gpu_malloc((p), (n)))
#define DEV_FREE(p) (raw_free ? raw_free(p) : sim_gpu_free(p))

/* The functions a profiler must see, exported by name. */
void llama_model_load(void);
void llama_kv_cache_init(void);
void ggml_backend_sched_reserve(void);
uint64_t llama_decode(int n_seqs);
void ggml_cuda_pool_leg_alloc(uint64_t bytes);
void common_init_from_params(void);
void ggml_backend_sched_graph_compute_async(int n_seqs, uint64_t *out);
void llama_context_decode(int n_seqs, uint64_t *out)
        __asm__("_ZN13llama_context6decodeERK11llama_batch");
volatile int llama_sim_sink;

static void oom(const char *where)
{
	fprintf(stderr, "llama_sim: %s out of memory in %s\n", sim_gpu_name(),
	        where);
	exit(3);
}

/* A buffer of the model or the context could not be had: llama.cpp logs
 * the failed cudaMalloc, then the load fails. */
static void buffer_oom(const char *where, int stage, uint64_t bytes)
{
	sim_log_oom(0, stage, bytes, NULL);
	oom(where);
}

/* A failure in a decode: what the allocator's engine says. */
static void decode_oom(uint64_t bytes)
{
	char text[1024] = "";

	if (g_pool)
		sim_alloc_oom_text(g_pool, bytes, text, sizeof(text));
	sim_log_oom(0, SIM_LOG_IN_FORWARD, bytes, text);
}

static void sleep_ms(int ms)
{
	struct timespec d = {ms / 1000, (long)(ms % 1000) * 1000000};
	while (ms > 0 && nanosleep(&d, &d))
		;
}

/* Layers on the GPU: -ngl of them, at most the model's. */
static int offloaded(void)
{
	return o.n_layers < o.model_layers ? o.n_layers : o.model_layers;
}

NOINLINE void llama_model_load(void)
{
	uint64_t bytes = (uint64_t)o.layer_mib * MIB;
	int n = offloaded();

	sim_alloc_phase_push("weights");
	for (int i = 0; i < n; i++) {
		uint64_t p;
		if (o.load_ms)
			sleep_ms(o.load_ms / n);
		if (DEV_ALLOC(&p, bytes))
			buffer_oom("llama_model_load", SIM_LOG_IN_WEIGHTS,
			           bytes);
	}
	sim_alloc_phase_pop();
	sim_log_weights(0, (size_t)n * bytes, 0);
	llama_sim_sink++;
}

/* The offloaded layers' share of the KV cache: each layer keeps its K and
 * V on the device that holds the layer. */
NOINLINE void llama_kv_cache_init(void)
{
	uint64_t p, bytes = (uint64_t)o.ctx_size * (uint64_t)o.kv_kib * 1024 *
	                    (uint64_t)offloaded() / (uint64_t)o.model_layers;

	sim_alloc_phase_push("kv_cache");
	if (DEV_ALLOC(&p, bytes))
		buffer_oom("llama_kv_cache_init", SIM_LOG_IN_KV, bytes);
	sim_alloc_phase_pop();
	sim_log_kv(0, bytes);
	llama_sim_sink++;
}

/* The tokens of the worst-case graph llama_context reserves for:
 * min(n_ctx, n_ubatch), with n_ubatch <= n_batch <= n_ctx. */
static uint64_t graph_tokens(void)
{
	uint64_t t = (uint64_t)o.ctx_size;

	if ((uint64_t)o.batch < t)
		t = (uint64_t)o.batch;
	return (uint64_t)o.ubatch < t ? (uint64_t)o.ubatch : t;
}

NOINLINE void ggml_backend_sched_reserve(void)
{
	uint64_t p, bytes = o.compute_kib
	                            ? graph_tokens() * (uint64_t)o.compute_kib *
	                                      1024
	                            : (uint64_t)o.compute_mib * MIB;

	if (!bytes)
		return;
	sim_alloc_phase_push("profile");
	if (DEV_ALLOC(&p, bytes))
		buffer_oom("llama_context", SIM_LOG_IN_PROFILE, bytes);
	sim_alloc_phase_pop();
	sim_log_compute(0, bytes);
	llama_sim_sink++;
}

/* The pool could not grow: llama.cpp's CUDA_CHECK prints the error and
 * aborts the process. */
static void pool_fatal(uint64_t bytes)
{
	struct rlimit no_core = {0, 0};

	decode_oom(bytes);
	fprintf(stderr, "ggml/src/ggml-cuda/ggml-cuda.cu: %s error\n",
	        sim_gpu_ggml_name());
	fflush(stderr);
	/* No core file: the abort is the behaviour, not a bug to debug. */
	setrlimit(RLIMIT_CORE, &no_core);
	abort();
}

/* The graph's temporaries for n sequences, from the pool (or the
 * PyTorch-like allocator); the caller gives them back when the batch is
 * answered. */
NOINLINE void ggml_backend_sched_graph_compute_async(int n_seqs,
                                                     uint64_t *out)
{
	uint64_t bytes = n_seqs ? (uint64_t)n_seqs * (uint64_t)o.act_mib * MIB
	                        : (uint64_t)o.act_mib * MIB / WARMUP_SHARE;

	if (sim_alloc_malloc(g_pool, bytes, out)) {
		if (o.allocator == SIM_ALLOC_POOL_VMM ||
		    o.allocator == SIM_ALLOC_POOL_LEG)
			pool_fatal(bytes);
		decode_oom(bytes);
		oom("llama_decode");
	}
	llama_sim_sink++;
}

NOINLINE void llama_context_decode(int n_seqs, uint64_t *out)
{
	ggml_backend_sched_graph_compute_async(n_seqs, out);
	llama_sim_sink++;
}

NOINLINE void ggml_cuda_pool_leg_alloc(uint64_t bytes)
{
	uint64_t p;

	if (DEV_ALLOC(&p, bytes)) {
		decode_oom(bytes);
		oom("ggml_cuda_pool_leg_alloc");
	}
	pool_bytes += bytes;
	llama_sim_sink++;
}

/* Plain: one request's activations, one driver call, returned to the
 * caller to free. Otherwise: a batch of n_seqs through the pool. n_seqs 0
 * is the warm-up's batch: a couple of tokens, not a prompt, so a
 * WARMUP_SHARE-th of a request's activations. */
NOINLINE uint64_t llama_decode(int n_seqs)
{
	uint64_t p = 0;

	sim_alloc_phase_push("forward");
	if (o.allocator == SIM_ALLOC_PLAIN) {
		uint64_t bytes = (uint64_t)o.act_mib * MIB;
		uint64_t need = n_seqs ? (uint64_t)++inflight *
		                                 (uint64_t)o.pool_mib * MIB
		                       : 0;
		if (need > pool_bytes)
			ggml_cuda_pool_leg_alloc(need - pool_bytes);
		if (DEV_ALLOC(&p, n_seqs ? bytes : bytes / WARMUP_SHARE)) {
			decode_oom(bytes);
			oom("llama_decode");
		}
	} else {
		llama_context_decode(n_seqs, &p);
	}
	sim_alloc_phase_pop();
	llama_sim_sink++;
	return p;
}

static void release_decode(uint64_t p)
{
	if (o.allocator == SIM_ALLOC_PLAIN)
		DEV_FREE(p);
	else
		sim_alloc_free(g_pool, p);
}

/* llama_model_load_from_file + llama_init_from_model, then the warm-up:
 * what llama-server's load_model asks of common_init_from_params. */
NOINLINE void common_init_from_params(void)
{
	llama_model_load();
	llama_kv_cache_init();
	ggml_backend_sched_reserve();
	if (o.warmup) {
		printf("common_init_from_params: warming up the model with an "
		       "empty run - please wait ... (--no-warmup to disable)\n");
		release_decode(llama_decode(0));
	}
	fflush(stdout);
}

/* n requests decoded together (plain: one llama_decode each), held
 * --hold-ms, then answered. */
static void decode_wave(struct sim_http *http, struct sim_http_req *reqs,
                        int n)
{
	uint64_t act[MAX_CLIENTS];
	int nact = 0;

	for (int i = 0; i < n; i++)
		sim_log_slot(i, o.task++, o.prompt_tokens);
	if (o.allocator == SIM_ALLOC_PLAIN)
		for (int i = 0; i < n; i++)
			act[nact++] = llama_decode(1);
	else
		act[nact++] = llama_decode(n);
	sleep_ms(o.hold_ms);
	for (int i = 0; i < n; i++) {
		if (i < nact && o.allocator == SIM_ALLOC_PLAIN) {
			release_decode(act[i]);
			inflight--;
		}
		sim_http_reply(http, &reqs[i]);
	}
	if (o.allocator != SIM_ALLOC_PLAIN)
		release_decode(act[0]);
}

/* One step: n requests arrive; the -np slots decode them, at most -np at
 * a time, the others waiting (still in flight) for a free slot. */
NOINLINE static void serve(struct sim_http *http, int n, int *loaded)
{
	struct sim_http_req reqs[MAX_CLIENTS];

	for (int i = 0; i < n; i++)
		if (sim_http_next(http, &reqs[i]))
			exit(1);
	if (!*loaded) {
		/* Ollama: the first request loads the model. */
		common_init_from_params();
		*loaded = 1;
	}
	for (int i = 0; i < n; i += o.clients)
		decode_wave(http, reqs + i,
		            n - i < o.clients ? n - i : o.clients);
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: llama_sim [-ngl N] [--layer-mib M] [-c|--ctx-size T]\n"
	        "                 [--kv-kib-per-token K] [--act-mib M] "
	        "[--compute-mib M]\n"
	        "                 [-np|--parallel N] [--concurrent-requests N] "
	        "[--model-layers L]\n"
	        "                 [-b|--batch-size N] [-ub|--ubatch-size N] "
	        "[--compute-kib-per-token K]\n"
	        "                 [--port P] [--ladder N,N,...] [--hold-ms MS]\n"
	        "                 [--linger-ms MS] [--idle-connections N] "
	        "[--warmup]\n"
	        "                 [--protocol http1|grpc|raw|tls] "
	        "[--listen-before-load | --load-on-request] "
	        "[--no-client]\n"
	        "                 "
	        "[--load-ms MS]\n"
	        "                 [--allocator plain|pool-vmm|pool-leg|caching|"
	        "expandable|async]\n"
	        "                 [--pool-mib M] [--annotate api|none] "
	        "[--runtime cuda|hip]\n"
	        "                 [--prompt-tokens N] [-fa on|off|auto]\n"
	        "                 [--log-format llamacpp|llamacpp-default|vllm|"
	        "sglang|tgi|trtllm|none]\n"
	        "                 [--log-scale weights=F|kv=F]\n");
	return 2;
}

static int parse_ladder(const char *s)
{
	char *end;

	for (o.nsteps = 0; *s && o.nsteps < SIM_HTTP_MAX_STEPS;) {
		long n = strtol(s, &end, 10);
		if (end == s || n < 1 || n > MAX_CLIENTS ||
		    (*end && *end != ','))
			return -1;
		o.steps[o.nsteps++] = (int)n;
		s = *end == ',' ? end + 1 : end;
	}
	return *s || !o.nsteps ? -1 : 0;
}

static int parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		int k = sim_log_option(argc, argv, &i);
		if (k < 0)
			return usage();
		if (k)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			exit(0);
		}
		if (!strcmp(a, "--warmup")) {
			o.warmup = 1;
			continue;
		}
		if (!strcmp(a, "--listen-before-load")) {
			o.listen_first = 1;
			continue;
		}
		if (!strcmp(a, "--load-on-request")) {
			o.on_request = 1;
			continue;
		}
		if (!strcmp(a, "--no-client")) {
			o.no_client = 1;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		v = argv[++i];
		if (!strcmp(a, "--ladder")) {
			if (parse_ladder(v))
				return usage();
		} else if (!strcmp(a, "--allocator")) {
			if ((o.allocator = sim_alloc_mode_of(v)) < 0)
				return usage();
		} else if (!strcmp(a, "--annotate")) {
			if (strcmp(v, "api") && strcmp(v, "none"))
				return usage();
			o.annotate = !strcmp(v, "api");
		} else if (!strcmp(a, "--runtime")) {
			if (strcmp(v, "cuda") && strcmp(v, "hip"))
				return usage();
			o.hip = !strcmp(v, "hip");
		} else if (!strcmp(a, "--protocol")) {
			if (sim_http_protocol(v))
				return usage();
		} else {
			int n = atoi(v);
			if (!strcmp(a, "-ngl"))
				o.n_layers = n;
			else if (!strcmp(a, "--layer-mib"))
				o.layer_mib = n;
			else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size"))
				o.ctx_size = n;
			else if (!strcmp(a, "--kv-kib-per-token"))
				o.kv_kib = n;
			else if (!strcmp(a, "--act-mib"))
				o.act_mib = n;
			else if (!strcmp(a, "--compute-mib"))
				o.compute_mib = n;
			else if (!strcmp(a, "-np") || !strcmp(a, "--parallel"))
				o.clients = n;
			else if (!strcmp(a, "--concurrent-requests"))
				o.load = n;
			else if (!strcmp(a, "--model-layers"))
				o.model_layers = n;
			else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size"))
				o.batch = n;
			else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size"))
				o.ubatch = n;
			else if (!strcmp(a, "--compute-kib-per-token"))
				o.compute_kib = n;
			else if (!strcmp(a, "--port"))
				o.port = n;
			else if (!strcmp(a, "--hold-ms"))
				o.hold_ms = n;
			else if (!strcmp(a, "--linger-ms"))
				o.linger_ms = n;
			else if (!strcmp(a, "--idle-connections"))
				o.idle = n;
			else if (!strcmp(a, "--load-ms"))
				o.load_ms = n;
			else if (!strcmp(a, "--pool-mib"))
				o.pool_mib = n;
			else if (!strcmp(a, "--prompt-tokens"))
				o.prompt_tokens = n;
			else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
				/* taken as llama-server takes it; the
				 * compute buffer's size says what it does */
				if (strcmp(v, "on") && strcmp(v, "off") &&
				    strcmp(v, "auto"))
					return usage();
			} else
				return usage();
		}
	}
	if (!o.model_layers)
		o.model_layers = o.n_layers > 0 ? o.n_layers : 1; /* all on GPU */
	if (!o.clients) {
		o.clients = o.nsteps ? 1 : 4;
		for (int i = 0; i < o.nsteps; i++)
			if (o.steps[i] > o.clients)
				o.clients = o.steps[i];
	}
	if (!o.load)
		o.load = o.clients;
	if (o.clients < 1 || o.clients > MAX_CLIENTS || o.n_layers < 0 ||
	    o.model_layers < 1 || o.load < 1 || o.load > MAX_CLIENTS ||
	    o.batch < 1 || o.ubatch < 1 || o.compute_kib < 0 || o.idle < 0 ||
	    o.idle > 128 || o.pool_mib < 0 || (o.listen_first && o.on_request))
		return usage();
	return 0;
}

int main(int argc, char **argv)
{
	struct sim_load load = {.path = "/completion", .gated = 1};
	struct sim_http *http = NULL;
	int loaded = 0, served = 0, failed;

	if (parse(argc, argv))
		return 2;
	sim_alloc_annotate(o.annotate);
	sim_log_start(&(struct sim_log_config){
	        "llamacpp", SIM_LOG_ALL, "sim-model.gguf", o.ctx_size,
	        o.clients, 0, 1, o.n_layers, 0, o.kv_kib});
	if (sim_gpu_open(o.hip) || sim_gpu_use(0)) {
		fprintf(stderr, "llama_sim: no usable %s\n",
		        o.hip ? "HIP runtime" : "CUDA driver");
		return 4;
	}
	raw_alloc = sim_gpu_raw_alloc();
	raw_free = sim_gpu_raw_free();
	if (o.allocator != SIM_ALLOC_PLAIN &&
	    !(g_pool = sim_alloc_new(o.allocator, 0)))
		return 4;
	if (o.listen_first || o.on_request) {
		/* llama-server and Ollama answer HTTP before the model is in. */
		if (!(http = sim_http_listen(o.port, o.listen_first)))
			return 1;
		sim_log_http_up(sim_http_port(http));
	}
	load.wait_ready = 1;
	load.idle = o.idle;
	if (o.nsteps) {
		load.nsteps = o.nsteps;
		memcpy(load.steps, o.steps, sizeof(o.steps));
	} else {
		load.steps[load.nsteps++] = 1;
		if (o.load > 1)
			load.steps[load.nsteps++] = o.load;
	}
	/* A client that finds the server listening polls /health at once:
	 * 503 while llama-server loads, 200 from Ollama's server. */
	if (http && !o.no_client &&
	    (load.port = sim_http_port(http), sim_load_start(&load)))
		return 1;
	if (!o.on_request) {
		common_init_from_params();
		loaded = 1;
	}
	if (!http) {
		if (!(http = sim_http_listen(o.port, 0)))
			return 1;
		load.port = sim_http_port(http);
		if (!o.no_client && sim_load_start(&load))
			return 1;
	}
	sim_http_set_loading(http, 0);
	printf("llama_sim: listening on 127.0.0.1:%d\n", sim_http_port(http));
	fflush(stdout);
	sim_log_ready(sim_http_port(http));
	for (int s = 0; s < load.nsteps; s++) {
		if (o.nsteps) {
			char label[32];
			snprintf(label, sizeof(label), "concurrency=%d",
			         load.steps[s]);
			VRAMTRACE_MARK(label);
		}
		if (!o.no_client)
			sim_load_open(&load);
		serve(http, load.steps[s], &loaded);
		served += load.steps[s];
	}
	failed = o.no_client ? 0 : sim_load_join(&load);
	sim_http_stop(http);
	if (failed) {
		fprintf(stderr, "llama_sim: %d requests got no complete answer\n",
		        failed);
		return 1;
	}
	printf("llama_sim: served %d requests\n", served);
	fflush(stdout);
	sleep_ms(o.linger_ms);
	return 0;
}
