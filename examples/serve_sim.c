/*
 * serve_sim — a simulated vLLM-style inference server, for `vramtrace demo`,
 * the verdict tests and the scenario corpus: its flags are vLLM's, its
 * allocations come in the order and shapes vLLM V1 makes them, through the
 * allocator PyTorch would use (sim_alloc.c), and it serves real HTTP/1.1
 * on 127.0.0.1, so each OOM class can be reproduced on the fake GPU (or on
 * a real one) by choosing flags. Start-up, per tensor-parallel rank:
 *
 *   1. init       rank r takes device r (--tensor-parallel-size N) and
 *                 probes its free memory (cuMemGetInfo_v2, hipMemGetInfo);
 *   2. weights    --num-layers tensors, together --model-size-gib / N
 *                 (--no-shard: a sharding bug, rank 0 loads the whole
 *                 model and the other ranks nothing; --misplace-ranks:
 *                 every rank takes device 0, its slice loaded there);
 *   3. profile    empty_cache(), then a dummy forward pass of
 *                 --max-num-batched-tokens tokens (--act-kib-per-token
 *                 each), freed again: with a caching allocator the memory
 *                 stays cached, the activation budget serving draws on;
 *   4. kv_cache   a second probe, then the KV reserve: --gpu-memory-
 *                 utilization x total - weights - the profiled peak (vLLM
 *                 V1's arithmetic, which counts other processes' memory as
 *                 available); like vLLM it refuses to start when that
 *                 holds no block, or fewer tokens (--kv-kib-per-token
 *                 each, in blocks of 16) than one --max-model-len
 *                 sequence;
 *   5. cuda_graph --cuda-graph-mib MiB captured in 8 graphs after the KV
 *                 reserve, kept by the graphs (their private pool: no
 *                 empty-cache retry while capturing);
 *   6. sampler    with --vocab-size V, a dummy sampler run for
 *                 min(--max-num-seqs, --max-num-batched-tokens) sequences
 *                 (logits and probabilities, V x 4 bytes each per sequence);
 *   7. swap       --swap-space GiB of pinned host memory in per-layer
 *                 blocks (cuMemHostAlloc, hipHostMalloc), on rank 0;
 *   8. serve      listen on 127.0.0.1, then a client (in this process)
 *                 waits for GET /health, opens --idle-connections
 *                 keep-alive connections it leaves idle, and sends one
 *                 request alone, then --concurrent-requests at once
 *                 (--request-steps N,N,...: those groups, in turn)
 *                 (POST /v1/completions, half of them streamed). At most
 *                 --max-num-seqs are decoded together; each holds
 *                 --prompt-len (default --max-model-len; a list: the
 *                 lengths of requests in turn, cycled) x
 *                 --act-kib-per-token / N on every rank until its batch
 *                 is answered, and each batch step allocates the sampler's
 *                 tensors for its sequences.
 *
 * --allocator plain|caching|expandable|async|pool-vmm|pool-leg picks how
 * tensors become driver calls (plain, the default: one call per tensor).
 * --annotate api (default) announces phases with the annotation API
 * (include/vramtrace.h); --annotate none leaves them to a profiler's rules
 * or to nothing. --distributed-executor-backend mp runs vLLM V1's process
 * layout: this process is the API server; it spawns the engine core, which
 * spawns one worker per rank (with --tensor-parallel-size 1 the engine core
 * does the GPU work itself), each started as Python's multiprocessing spawn
 * starts it (sim_spawn.h). --killed-after-layers N ends the process (the
 * engine core's, or the only one) with SIGKILL after N weight layers, as an
 * orchestrator's liveness probe kills a server that loads too slowly.
 *
 * It logs what vLLM logs, in vLLM's format (sim_log.h): its arguments,
 * each rank's weights, available KV cache memory and graph memory, the KV
 * cache's size in tokens and the maximum concurrency (--kv-kib-per-token
 * sizes a token), readiness, and PyTorch's OutOfMemoryError inside the
 * worker's exception. --log-format sglang|tgi|trtllm|llamacpp prints
 * those engines' lines for the same numbers instead, none only the
 * server's own lines. Like vLLM it checks at start-up that its KV cache
 * holds one request of --max-model-len (--kv-kib-per-token each) and
 * refuses to start otherwise (exit 1, vLLM's ValueError with its
 * estimated maximum model length).
 *
 * --protocol http1|grpc|raw|tls serves in that protocol (sim_http.h): grpc
 * as Triton's and TensorRT-LLM's gRPC endpoints (the client's concurrent
 * requests are streams of one connection). --uds PATH serves on a unix
 * socket instead of 127.0.0.1, with no client of its own (a front sends
 * the requests, as TGI's router does to its shards over gRPC); with
 * --warmup-rpc the first call it gets is the front's warm-up (TGI's
 * Warmup RPC: a prefill of --max-num-batched-tokens tokens, at start-up,
 * before the front serves), then it takes --request-steps' requests.
 *
 * --runtime cuda (the default) reaches the CUDA driver as libcudart does;
 * --runtime hip the HIP runtime as PyTorch on ROCm does (sim_gpu.c). The
 * allocation shapes are the same on both. The engine work runs on one
 * thread per process, so runs are deterministic.
 *
 * Exit status: 0 served everything, 1 the engine refused to start (no
 * memory left for its KV cache, or its KV check), 2 usage, 3 out of
 * memory (device or pinned host memory, like a server that dies on the
 * error), 4 no driver.
 * With --distributed-executor-backend mp a worker that runs out of memory
 * exits 1 (the exception ends it), the engine core then exits 1, and so
 * does the API server, as vLLM's do.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim_alloc.h"
#include "sim_gpu.h"
#include "sim_http.h"
#include "sim_log.h"
#include "sim_spawn.h"

#define KIB        1024.0
#define GIB        (1024.0 * 1024.0 * 1024.0)
#define MAX_TP     8
#define MAX_REQS   64
#define MAX_LENS   16
#define MAX_HOST   1024
#define N_CAPTURES 8
/* vLLM's default KV block on CUDA (--block-size) */
#define BLOCK_TOKENS 16

enum role { SINGLE, API_SERVER, ENGINE_CORE, WORKER };

static struct {
	double model_gib, util, swap_gib, act_kib, kv_kib, graph_mib;
	int layers, tp, max_model_len, max_num_seqs, batched_tokens;
	int concurrent, no_shard, misplace, load_ms, hip, mp, annotate;
	int lens[MAX_LENS], nlens;             /* --prompt-len, cycled */
	int steps[SIM_HTTP_MAX_STEPS], nsteps; /* --request-steps */
	int allocator, idle, vocab, killed_after, warmup_rpc;
	const char *uds;
	enum role role;
	int rank; /* a worker's */
} o = {
        .model_gib = 14,
        .util = 0.9,
        .act_kib = 256,
        .kv_kib = 128,
        .layers = 32,
        .tp = 1,
        .max_model_len = 8192,
        .max_num_seqs = 256,
        .batched_tokens = 2048,
        .concurrent = 4,
        .annotate = 1,
        .allocator = SIM_ALLOC_PLAIN,
        .killed_after = -1,
        .role = SINGLE,
};

/* A tensor-parallel rank: held here (local) or by a worker process. */
static struct rank {
	int local;
	struct sim_alloc *al;
	size_t free_at_init, weights, profile_peak, kv;
	uint64_t act[MAX_REQS], graphs[N_CAPTURES];
	int nact;
	unsigned nreq; /* requests executed so far (picks the length) */
	pid_t pid;
	struct sim_chan chan;
} ranks[MAX_TP];

static char **g_argv; /* the settings, as given to the API server */
static int g_argc;

static int oom_exit(void)
{
	return o.role == SINGLE ? 3 : 1;
}

/* The start-up step (or serving) a failing call of `what` belongs to. */
static int stage_of(const char *what)
{
	if (!strcmp(what, "load_weights"))
		return SIM_LOG_IN_WEIGHTS;
	if (!strcmp(what, "profile_run") || !strcmp(what, "_dummy_sampler_run"))
		return SIM_LOG_IN_PROFILE;
	if (!strcmp(what, "initialize_kv_cache"))
		return SIM_LOG_IN_KV;
	if (!strcmp(what, "capture_model"))
		return SIM_LOG_IN_GRAPHS;
	return SIM_LOG_IN_FORWARD;
}

/* The tensor of `bytes` for `what` on rank r could not be had: say so as
 * PyTorch and vLLM would, and die as the engine does. */
static void die_oom(const char *what, int r, size_t bytes)
{
	char text[1024];

	sim_alloc_oom_text(ranks[r].al, bytes, text, sizeof(text));
	sim_log_oom(r, stage_of(what), bytes, text);
	fprintf(stderr, "serve_sim: %s out of memory in %s (rank %d); exiting\n",
	        sim_gpu_name(), what, r);
	exit(oom_exit());
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (ms > 0 && nanosleep(&ts, &ts))
		;
}

/* The device rank r runs on. */
static int rank_dev(int r)
{
	return o.misplace ? 0 : r;
}

static void use_rank(int r)
{
	/* --misplace-ranks: every rank takes device 0, as workers that were
	 * each given CUDA_VISIBLE_DEVICES=0 (or that ignore their local rank)
	 * do. */
	if (sim_gpu_use(rank_dev(r))) {
		fprintf(stderr, "serve_sim: cannot select device %d\n", r);
		exit(4);
	}
}

static void tensor(int r, size_t bytes, uint64_t *p, const char *what)
{
	if (sim_alloc_malloc(ranks[r].al, bytes, p))
		die_oom(what, r, bytes);
}

static size_t reserved(int r)
{
	struct sim_alloc_stats st;
	sim_alloc_stats(ranks[r].al, &st);
	return st.reserved;
}

/* ---- one rank's work (in whichever process holds the rank) ---------------- */

static void init_device(int r)
{
	size_t free_b, total_b;

	use_rank(r);
	sim_gpu_mem_info(&free_b, &total_b);
	ranks[r].free_at_init = free_b;
	ranks[r].al = sim_alloc_new(o.allocator, rank_dev(r));
	if (!ranks[r].al)
		exit(4);
}

static void load_weights(int r)
{
	double share = o.no_shard ? (r == 0 ? o.model_gib : 0)
	                          : o.model_gib / o.tp;
	size_t per = (size_t)(share * GIB / o.layers), before;
	uint64_t p;

	if (!per)
		return;
	use_rank(r);
	before = reserved(r);
	sim_alloc_phase_push("weights");
	for (int l = 0; l < o.layers; l++) {
		if (o.load_ms)
			sleep_ms(o.load_ms / o.layers);
		if (l == o.killed_after)
			raise(SIGKILL);
		tensor(r, per, &p, "load_weights");
	}
	sim_alloc_phase_pop();
	ranks[r].weights = reserved(r) - before;
	sim_log_weights(r, ranks[r].weights, ranks[r].free_at_init);
}

/* A dummy forward pass of --max-num-batched-tokens tokens on rank r,
 * freed again, after emptying the cache so it measures its own peak (what
 * it frees stays cached): vLLM's profile run (what), TGI's warm-up
 * prefill. */
static void dummy_batch(int r, const char *what)
{
	size_t act =
	        (size_t)((double)o.batched_tokens * o.act_kib * KIB / o.tp);
	uint64_t p;

	use_rank(r);
	sim_alloc_empty_cache(ranks[r].al);
	sim_alloc_phase_push("profile");
	if (act) {
		tensor(r, act, &p, what);
		sim_alloc_free(ranks[r].al, p);
	}
	ranks[r].profile_peak = act;
	sim_alloc_phase_pop();
}

static void profile_run(int r)
{
	dummy_batch(r, "profile_run");
}

/* The KV reserve of rank r; returns its bytes. Before allocating it the
 * engine checks, as vLLM does, that one request of --max-model-len fits. */
static size_t initialize_kv_cache(int r)
{
	size_t free_b, total_b;
	uint64_t p;
	double kv, need = o.kv_kib * KIB / o.tp * o.max_model_len;

	use_rank(r);
	sim_gpu_mem_info(&free_b, &total_b);
	kv = o.util * (double)total_b - (double)ranks[r].weights -
	     (double)ranks[r].profile_peak;
	if (kv <= 0) {
		sim_log_no_kv(r);
		fprintf(stderr,
		        "serve_sim: no memory left for the KV cache on rank %d; "
		        "raise --gpu-memory-utilization\n",
		        r);
		exit(1); /* the engine refused to start: nothing failed */
	}
	if (need > kv) {
		sim_log_kv_refusal(r, need, kv);
		fprintf(stderr,
		        "serve_sim: one request of %d tokens needs %.2f GiB of KV "
		        "cache on rank %d, %.2f GiB left; refusing to start\n",
		        o.max_model_len, need / GIB, r, kv / GIB);
		exit(1);
	}
	sim_log_kv(r, (size_t)kv);
	sim_alloc_phase_push("kv_cache");
	tensor(r, (size_t)kv, &p, "initialize_kv_cache");
	sim_alloc_phase_pop();
	ranks[r].kv = (size_t)kv;
	printf("serve_sim: rank %d: weights %.2f GiB, KV cache %.2f GiB\n", r,
	       (double)ranks[r].weights / GIB, kv / GIB);
	fflush(stdout);
	return (size_t)kv;
}

/* CUDA-graph capture after the KV reserve, largest batch first; each
 * graph keeps what its capture allocated. */
static void capture_model(int r)
{
	size_t per = (size_t)(o.graph_mib * KIB * KIB / N_CAPTURES);

	if (!per)
		return;
	use_rank(r);
	sim_alloc_phase_push("cuda_graph");
	sim_alloc_capture(ranks[r].al, 1);
	for (int g = 0; g < N_CAPTURES; g++)
		tensor(r, per, &ranks[r].graphs[g], "capture_model");
	sim_alloc_capture(ranks[r].al, 0);
	sim_alloc_phase_pop();
	sim_log_graphs(r, per * N_CAPTURES);
}

/* The sampler's tensors for n sequences: logits and probabilities. */
static void sampler(int r, int n, const char *what)
{
	size_t bytes = (size_t)n * (size_t)o.vocab * 4;
	uint64_t logits, probs;

	if (!bytes)
		return;
	tensor(r, bytes, &logits, what);
	tensor(r, bytes, &probs, what);
	sim_alloc_free(ranks[r].al, probs);
	sim_alloc_free(ranks[r].al, logits);
}

static void warm_up_sampler(int r)
{
	int n = o.max_num_seqs < o.batched_tokens ? o.max_num_seqs
	                                          : o.batched_tokens;

	use_rank(r);
	sim_alloc_phase_push("profile");
	sampler(r, n, "_dummy_sampler_run");
	sim_alloc_phase_pop();
}

static void allocate_swap_space(void)
{
	size_t per = (size_t)(o.swap_gib * GIB / o.layers);
	void *block;
	int n = o.layers < MAX_HOST ? o.layers : MAX_HOST;

	if (!per)
		return;
	sim_alloc_phase_push("kv_cache");
	for (int l = 0; l < n; l++)
		if (sim_gpu_host_alloc(&block, per)) {
			fprintf(stderr,
			        "serve_sim: cannot pin %.2f GiB of host "
			        "memory for the swap space (block %d)\n",
			        o.swap_gib, l);
			exit(oom_exit());
		}
	sim_alloc_phase_pop();
}

/* One batch step: n requests' activations, then the sampler's tensors
 * for the n sequences; they stay until FINISH. */
static void execute_model(int r, int n)
{
	use_rank(r);
	sim_alloc_phase_push("forward");
	for (int i = 0; i < n && ranks[r].nact < MAX_REQS; i++) {
		int len = o.nlens ? o.lens[ranks[r].nreq++ % (unsigned)o.nlens]
		                  : o.max_model_len;
		size_t act = (size_t)((double)len * o.act_kib * KIB / o.tp);
		tensor(r, act, &ranks[r].act[ranks[r].nact++], "execute_model");
	}
	sampler(r, n, "sample_tokens");
	sim_alloc_phase_pop();
}

/* TGI's Warmup RPC: a prefill batch of --max-num-batched-tokens tokens,
 * freed again (the server's warm-up, before it serves). */
static void warmup_prefill(int r)
{
	dummy_batch(r, "warmup");
}

static void finish(int r)
{
	use_rank(r);
	while (ranks[r].nact > 0)
		sim_alloc_free(ranks[r].al, ranks[r].act[--ranks[r].nact]);
}

/* Runs one step of the engine's protocol on a rank held here; returns
 * what the step reports back (the KV cache's bytes for KV, else 0). */
static uint64_t do_op(int r, const char *op, int n)
{
	if (!strcmp(op, "INIT"))
		init_device(r);
	else if (!strcmp(op, "LOAD"))
		load_weights(r);
	else if (!strcmp(op, "PROFILE"))
		profile_run(r);
	else if (!strcmp(op, "KV"))
		return initialize_kv_cache(r);
	else if (!strcmp(op, "WARMUP")) {
		capture_model(r);
		if (o.vocab)
			warm_up_sampler(r);
	} else if (!strcmp(op, "SWAP")) {
		if (r == 0)
			allocate_swap_space();
	} else if (!strcmp(op, "EXEC"))
		execute_model(r, n);
	else if (!strcmp(op, "FINISH"))
		finish(r);
	else if (!strcmp(op, "PREFILL_WARMUP"))
		warmup_prefill(r);
	return 0;
}

/* ---- the engine core: the ranks in step ------------------------------------ */

/* Closes every worker's channel (a worker ends at its end) and waits for
 * them all. */
static void reap_workers(void)
{
	for (int r = 0; r < o.tp; r++)
		if (!ranks[r].local && ranks[r].pid > 0) {
			close(ranks[r].chan.fd);
			while (waitpid(ranks[r].pid, NULL, 0) < 0 &&
			       errno == EINTR)
				;
			ranks[r].pid = 0;
		}
}

/* Runs op on every rank: the workers' in parallel, then those held here;
 * a worker that dies instead of answering ends the engine. Returns the
 * smallest value the ranks reported ("OK N"). */
static uint64_t core_op(const char *op, int n)
{
	char line[64];
	unsigned long long v;
	uint64_t least = UINT64_MAX;

	for (int r = 0; r < o.tp; r++)
		if (!ranks[r].local && sim_chan_send(&ranks[r].chan, "%s %d",
		                                     op, n))
			goto dead;
	for (int r = 0; r < o.tp; r++)
		if (ranks[r].local && (v = do_op(r, op, n)) < least)
			least = v;
	for (int r = 0; r < o.tp; r++) {
		if (ranks[r].local)
			continue;
		if (sim_chan_recv(&ranks[r].chan, line, sizeof(line)) ||
		    sscanf(line, "OK %llu", &v) != 1)
			goto dead;
		if (v < least)
			least = v;
	}
	return least;
dead:
	sim_log_core_failed();
	reap_workers();
	exit(1);
}

static void spawn_workers(void)
{
	for (int r = 0; r < o.tp; r++) {
		char role[] = "--sim-worker", rank[8];
		const char **args;
		if (o.tp == 1 && o.role == ENGINE_CORE) {
			ranks[r].local = 1; /* the UniProcExecutor */
			continue;
		}
		args = calloc((size_t)g_argc + 3, sizeof(*args));
		if (!args)
			exit(1);
		snprintf(rank, sizeof(rank), "%d", r);
		/* The settings as given, then the worker's own (last, so
		 * "serve MODEL" stays first). */
		for (int i = 0; i < g_argc; i++)
			args[i] = g_argv[i];
		args[g_argc] = role;
		args[g_argc + 1] = rank;
		ranks[r].pid = sim_spawn(args, g_argc + 2, &ranks[r].chan);
		free(args);
		if (ranks[r].pid < 0) {
			perror("serve_sim: spawn a worker");
			exit(1);
		}
	}
}

/* Start-up in vLLM V1's order, each step on every rank before the next. */
static void core_reserve(void);

static void core_start(void)
{
	if (o.role == SINGLE)
		for (int r = 0; r < o.tp; r++)
			ranks[r].local = 1;
	else
		spawn_workers();
	core_op("INIT", 0);
	core_op("LOAD", 0);
	if (!o.warmup_rpc)
		core_reserve();
}

/* Profile, KV reserve, graphs, swap: at start-up, or (--warmup-rpc) when
 * the front's warm-up call comes, as TGI sizes its KV blocks after the
 * warm-up prefill. */
static void core_reserve(void)
{
	core_op(o.warmup_rpc ? "PREFILL_WARMUP" : "PROFILE", 0);
	/* the engine core sizes the cache by its smallest rank */
	sim_log_kv_total(core_op("KV", 0));
	core_op("WARMUP", 0);
	core_op("SWAP", 0);
}

/* Decodes n requests, --max-num-seqs at a time; done(b) after each batch
 * of b is finished. */
static void core_step(int n, void (*done)(int, void *), void *arg)
{
	for (int left = n; left > 0;) {
		int b = left < o.max_num_seqs ? left : o.max_num_seqs;
		core_op("EXEC", b);
		core_op("FINISH", 0);
		done(b, arg);
		left -= b;
	}
}

/* ---- serving ------------------------------------------------------------------ */

struct batch_ctx {
	struct sim_http *http;
	struct sim_http_req *reqs;
	int next;
};

static void reply_batch(int b, void *arg)
{
	struct batch_ctx *c = arg;

	for (int i = 0; i < b; i++)
		sim_http_reply(c->http, &c->reqs[c->next++]);
}

/* The engine core of another process: sends the step, answers each batch
 * as it reports it done. */
static struct sim_chan g_core;
static pid_t g_core_pid;

static void wait_core(void)
{
	if (g_core_pid > 0)
		while (waitpid(g_core_pid, NULL, 0) < 0 && errno == EINTR)
			;
	g_core_pid = 0;
}

static void remote_step(int n, void (*done)(int, void *), void *arg)
{
	char line[64];
	int b;

	if (sim_chan_send(&g_core, "STEP %d", n))
		goto dead;
	for (int left = n; left > 0; left -= b) {
		if (sim_chan_recv(&g_core, line, sizeof(line)) ||
		    sscanf(line, "DONE %d", &b) != 1 || b < 1)
			goto dead;
		done(b, arg);
	}
	return;
dead:
	fprintf(stderr, "ERROR [async_llm.py] AsyncLLM output_handler failed.\n"
	                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
	                "encountered an issue. See stack trace (above) for the "
	                "root cause.\n");
	close(g_core.fd);
	wait_core();
	exit(1);
}

static int serve(void)
{
	struct sim_http *http =
	        o.uds ? sim_http_listen_unix(o.uds, SIM_GRPC, 0)
	              : sim_http_listen(0, 0);
	struct sim_load load = {.wait_ready = 1,
	                        .path = "/v1/completions",
	                        .idle = o.idle};
	struct sim_http_req reqs[MAX_REQS];
	int served = 0, failed = 0;

	if (!http)
		return 1;
	load.port = o.uds ? 0 : sim_http_port(http);
	if (o.nsteps) {
		memcpy(load.steps, o.steps, sizeof(o.steps));
		load.nsteps = o.nsteps;
	} else {
		load.steps[load.nsteps++] = 1;
		if (o.concurrent > 1)
			load.steps[load.nsteps++] = o.concurrent;
	}
	if (o.uds)
		printf("serve_sim: listening on unix:%s\n", o.uds);
	else
		printf("serve_sim: listening on 127.0.0.1:%d\n", load.port);
	fflush(stdout);
	sim_log_ready(load.port);
	if (!o.uds && sim_load_start(&load))
		return 1;
	if (o.warmup_rpc) {
		struct sim_http_req w;
		if (sim_http_next(http, &w))
			return 1;
		core_reserve();
		sim_http_reply(http, &w);
	}
	for (int s = 0; s < load.nsteps; s++) {
		int n = load.steps[s];
		struct batch_ctx c = {http, reqs, 0};
		for (int i = 0; i < n; i++)
			if (sim_http_next(http, &reqs[i]))
				return 1;
		if (o.role == API_SERVER)
			remote_step(n, reply_batch, &c);
		else
			core_step(n, reply_batch, &c);
		served += n;
	}
	if (!o.uds)
		failed = sim_load_join(&load);
	sim_http_stop(http);
	if (o.uds)
		unlink(o.uds);
	if (failed) {
		fprintf(stderr, "serve_sim: %d requests got no complete answer\n",
		        failed);
		return 1;
	}
	printf("serve_sim: served %d requests\n", served);
	return 0;
}

/* ---- the processes ------------------------------------------------------------ */

static struct sim_chan g_parent; /* a spawned child's channel */

static int run_worker(void)
{
	char line[64], op[16];
	int n;

	ranks[o.rank].local = 1;
	while (!sim_chan_recv(&g_parent, line, sizeof(line))) {
		if (sscanf(line, "%15s %d", op, &n) != 2)
			return 1;
		if (sim_chan_send(&g_parent, "OK %llu",
		                  (unsigned long long)do_op(o.rank, op, n)))
			return 1;
	}
	return 0; /* the engine core closed the channel: shut down */
}

static void report_done(int b, void *arg)
{
	if (sim_chan_send(arg, "DONE %d", b))
		exit(1);
}

static int run_engine_core(void)
{
	char line[64];
	int n;

	core_start();
	if (sim_chan_send(&g_parent, "READY"))
		return 1;
	while (!sim_chan_recv(&g_parent, line, sizeof(line))) {
		if (sscanf(line, "STEP %d", &n) != 1)
			break;
		core_step(n, report_done, &g_parent);
	}
	reap_workers();
	return 0;
}

static int run_api_server(void)
{
	const char **args = calloc((size_t)g_argc + 2, sizeof(*args));
	char line[64];
	int rc;

	if (!args)
		return 1;
	for (int i = 0; i < g_argc; i++)
		args[i] = g_argv[i];
	args[g_argc] = "--sim-engine-core";
	g_core_pid = sim_spawn(args, g_argc + 1, &g_core);
	free(args);
	if (g_core_pid < 0) {
		perror("serve_sim: spawn the engine core");
		return 1;
	}
	if (sim_chan_recv(&g_core, line, sizeof(line)) ||
	    strcmp(line, "READY")) {
		fprintf(stderr, "RuntimeError: Engine core initialization "
		                "failed. See root cause above.\n");
		close(g_core.fd);
		wait_core();
		return 1;
	}
	rc = serve();
	close(g_core.fd); /* the engine core shuts down at its end */
	wait_core();
	return rc;
}

/* ---- setup ---------------------------------------------------------------------- */

static int usage(const char *msg)
{
	fprintf(stderr,
	        "serve_sim: %s\n"
	        "usage: serve_sim [serve MODEL] [--model-size-gib G] "
	        "[--num-layers N]\n"
	        "         [--tensor-parallel-size N] [--no-shard] "
	        "[--misplace-ranks] [--gpu-memory-utilization F]\n"
	        "         [--max-model-len T] [--max-num-seqs N] "
	        "[--max-num-batched-tokens T]\n"
	        "         [--act-kib-per-token K] [--kv-kib-per-token K] "
	        "[--swap-space G]\n"
	        "         [--prompt-len T[,T...]] [--concurrent-requests N] "
	        "[--request-steps N[,N...]]\n"
	        "         [--idle-connections N] [--protocol "
	        "http1|grpc|raw|tls] [--uds PATH] [--warmup-rpc]\n"
	        "         [--cuda-graph-mib M] [--vocab-size V] [--load-ms MS] "
	        "[--killed-after-layers N]\n"
	        "         [--allocator plain|caching|expandable|async|pool-vmm|"
	        "pool-leg]\n"
	        "         [--annotate api|none] "
	        "[--distributed-executor-backend mp] [--runtime cuda|hip]\n"
	        "         [--log-format vllm|sglang|llamacpp|tgi|trtllm|none] "
	        "[--log-scale weights=F|kv=F]\n",
	        msg);
	return 2;
}

/* A word-valued option; 1 when a was one (then *i is advanced), 0 when
 * not, -1 on a bad value (usage printed). */
/* A comma list of whole numbers in [lo, hi] into out[0..max); its length,
 * or -1 when malformed. */
static int int_list(const char *v, int *out, int max, int lo, int hi)
{
	int n = 0;

	while (*v) {
		char *end;
		long x = strtol(v, &end, 10);
		if (end == v || x < lo || x > hi || n >= max ||
		    (*end && *end != ','))
			return -1;
		out[n++] = (int)x;
		v = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

static int word_option(const char *a, const char *v, int *i)
{
	if (!strcmp(a, "--prompt-len")) {
		if ((o.nlens = int_list(v, o.lens, MAX_LENS, 1, 1 << 24)) < 0)
			return usage("--prompt-len is T or T,T,..."), -1;
	} else if (!strcmp(a, "--request-steps")) {
		if ((o.nsteps = int_list(v, o.steps, SIM_HTTP_MAX_STEPS, 1,
		                         MAX_REQS)) < 0)
			return usage("--request-steps is N or N,N,... (each "
			             "1-64)"),
			       -1;
	} else if (!strcmp(a, "--runtime")) {
		if (strcmp(v, "cuda") && strcmp(v, "hip"))
			return usage("--runtime is cuda or hip"), -1;
		o.hip = !strcmp(v, "hip");
	} else if (!strcmp(a, "--allocator")) {
		if ((o.allocator = sim_alloc_mode_of(v)) < 0)
			return usage("unknown --allocator"), -1;
	} else if (!strcmp(a, "--annotate")) {
		if (strcmp(v, "api") && strcmp(v, "none"))
			return usage("--annotate is api or none"), -1;
		o.annotate = !strcmp(v, "api");
	} else if (!strcmp(a, "--distributed-executor-backend")) {
		if (strcmp(v, "mp"))
			return usage("only --distributed-executor-backend mp"),
			       -1;
		o.mp = 1;
	} else if (!strcmp(a, "--protocol")) {
		if (sim_http_protocol(v))
			return usage("--protocol is http1, grpc, raw or tls"),
			       -1;
	} else if (!strcmp(a, "--uds")) {
		o.uds = v;
	} else if (!strcmp(a, "--sim-worker")) {
		o.role = WORKER; /* set by the engine core when it spawns */
		o.rank = atoi(v);
	} else {
		return 0;
	}
	(*i)++;
	return 1;
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
		int w = sim_log_option(argc, argv, &i);
		if (w < 0)
			return usage("bad log option");
		if (w)
			continue;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage("a simulated vLLM-style server");
			exit(0);
		}
		if (!strcmp(a, "--no-shard")) {
			o.no_shard = 1;
			continue;
		}
		if (!strcmp(a, "--warmup-rpc")) {
			o.warmup_rpc = 1;
			continue;
		}
		if (!strcmp(a, "--misplace-ranks")) {
			o.misplace = 1;
			continue;
		}
		if (!strcmp(a, "--sim-engine-core")) {
			o.role = ENGINE_CORE; /* set by the API server */
			continue;
		}
		if (!v)
			return usage("option needs a value");
		if ((w = word_option(a, v, &i)) != 0) {
			if (w < 0)
				return 2;
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
		else if (!strcmp(a, "--kv-kib-per-token"))
			o.kv_kib = d;
		else if (!strcmp(a, "--swap-space"))
			o.swap_gib = d;
		else if (!strcmp(a, "--concurrent-requests"))
			o.concurrent = (int)d;
		else if (!strcmp(a, "--idle-connections"))
			o.idle = (int)d;
		else if (!strcmp(a, "--cuda-graph-mib"))
			o.graph_mib = d;
		else if (!strcmp(a, "--vocab-size"))
			o.vocab = (int)d;
		else if (!strcmp(a, "--load-ms"))
			o.load_ms = (int)d;
		else if (!strcmp(a, "--killed-after-layers"))
			o.killed_after = (int)d;
		else
			return usage("unknown option");
	}
	if (o.tp < 1 || o.tp > MAX_TP || o.layers < 1 ||
	    o.concurrent > MAX_REQS || o.max_num_seqs < 1 || o.util > 1 ||
	    o.idle > 128)
		return usage("value out of range");
	if (o.role == SINGLE && o.mp)
		o.role = API_SERVER;
	return 0;
}

int main(int argc, char **argv)
{
	char **args;
	int nargs, ndev = 0, spawned;

	spawned = sim_spawn_child(argc, argv, &g_parent, &args, &nargs);
	if (spawned < 0)
		return 1;
	if (spawned) {
		argc = nargs;
		argv = args;
	}
	g_argc = argc;
	g_argv = argv;
	if (parse(argc, argv))
		return 2;
	sim_alloc_annotate(o.annotate);
	sim_log_start(&(struct sim_log_config){
	        "vllm",
	        o.role == API_SERVER    ? SIM_LOG_API
	        : o.role == ENGINE_CORE ? SIM_LOG_CORE
	        : o.role == WORKER      ? SIM_LOG_WORKER
	                                : SIM_LOG_ALL,
	        "sim-model", o.max_model_len, o.max_num_seqs, o.util, o.tp,
	        o.layers, o.batched_tokens, o.kv_kib});
	if (o.role == API_SERVER)
		return run_api_server(); /* no GPU here, as in vLLM */
	if (sim_gpu_open(o.hip) || sim_gpu_count(&ndev)) {
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
	if (o.role == WORKER)
		return run_worker();
	if (o.role == ENGINE_CORE)
		return run_engine_core();
	core_start();
	return serve();
}
