/*
 * sim_log.c — the engines' log lines for the example servers (sim_log.h).
 * Each line copies the engine's own format: its logging prefix (vLLM
 * "INFO 12-02 10:15:00 [file.py:N] " behind "(EngineCore_DP0 pid=N) ",
 * SGLang "[2025-12-02 10:15:00 TP0] ", TGI's UTC tracing prefix,
 * TensorRT-LLM's "[TensorRT-LLM][INFO] ") and its sentence, with the
 * server's real numbers; the allocator's error text (sim_alloc.h) inside
 * the engine's framing. Engines print local times except TGI (UTC). Lines
 * are flushed one by one, as a logging handler does.
 *
 * State is this file's statics: the examples log from one thread per
 * process.
 */
#include "sim_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sim_gpu.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

enum { F_NONE, F_VLLM, F_SGLANG, F_LLAMA, F_TGI, F_TRTLLM, F_LLAMA_DEF,
       F_COUNT };

/* llamacpp-default: today's llama-server at its default verbosity (no
 * model, context, KV or compute buffer lines; "srv  llama_server:" for
 * readiness) */
static const char *const format_names[F_COUNT] = {
        "none", "vllm", "sglang", "llamacpp", "tgi", "trtllm",
        "llamacpp-default"};

static struct {
	int format; /* -1 until --log-format or sim_log_start sets it */
	double scale_weights, scale_kv;
	struct sim_log_config c;
} L = {-1, 1, 1, {NULL, SIM_LOG_ALL, "sim-model", 0, 0, 0, 1, 32, 0, 128}};

static int format_of(const char *name)
{
	for (int k = 0; k < F_COUNT; k++)
		if (name && !strcmp(name, format_names[k]))
			return k;
	return -1;
}

/* The lines of the API server (its arguments, readiness) and of the
 * engine core (its config, the KV cache's size) come from those
 * processes; a rank's from whichever process holds the rank. */
static int is_api(void)
{
	return L.c.process == SIM_LOG_ALL || L.c.process == SIM_LOG_API;
}

static int is_core(void)
{
	return L.c.process == SIM_LOG_ALL || L.c.process == SIM_LOG_CORE;
}

int sim_log_enabled(void)
{
	return L.format > F_NONE;
}

int sim_log_option(int argc, char **argv, int *i)
{
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	char *end;

	if (strcmp(a, "--log-format") && strcmp(a, "--log-scale"))
		return 0;
	if (!v) {
		fprintf(stderr, "%s needs a value\n", a);
		return -1;
	}
	(*i)++;
	if (!strcmp(a, "--log-format")) {
		if ((L.format = format_of(v)) >= 0)
			return 1;
		fprintf(stderr, "--log-format is vllm, sglang, llamacpp, "
		                "llamacpp-default, tgi, trtllm or none\n");
		return -1;
	}
	if (!strncmp(v, "weights=", 8))
		L.scale_weights = strtod(v + 8, &end);
	else if (!strncmp(v, "kv=", 3))
		L.scale_kv = strtod(v + 3, &end);
	else
		end = (char *)"bad";
	if (*end) {
		fprintf(stderr, "--log-scale: weights=F or kv=F\n");
		return -1;
	}
	return 1;
}

/* ---- prefixes ------------------------------------------------------------ */

enum { T_VLLM, T_SGLANG, T_TRTLLM };

/* Now in local time, as each engine's logger prints it. */
static void local_time(char *buf, size_t n, int which)
{
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	if (which == T_VLLM)
		strftime(buf, n, "%m-%d %H:%M:%S", &tm);
	else if (which == T_SGLANG)
		strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	else
		strftime(buf, n, "%m/%d/%Y-%H:%M:%S", &tm);
}

/* vLLM: "(PROC pid=N) LEVEL mm-dd HH:MM:SS [FILE] MSG" on stdout. */
static void vllm(const char *proc, const char *level, const char *file,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void vllm(const char *proc, const char *level, const char *file,
                 const char *fmt, ...)
{
	char ts[32];
	va_list ap;

	local_time(ts, sizeof(ts), T_VLLM);
	printf("(%s pid=%d) %s %s [%s] ", proc, (int)getpid(), level, ts, file);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* The vLLM process a rank's lines come from: the engine core runs the
 * only worker itself; with tensor parallelism each rank has its own. */
static const char *vllm_worker(int rank, char *buf, size_t n)
{
	if (L.c.tp <= 1)
		return "EngineCore_DP0";
	snprintf(buf, n, "Worker_TP%d", rank);
	return buf;
}

/* SGLang: "[YYYY-mm-dd HH:MM:SS TPn] MSG" (rank < 0: no TP tag). */
static void sglang(int rank, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void sglang(int rank, const char *fmt, ...)
{
	char ts[32];
	va_list ap;

	local_time(ts, sizeof(ts), T_SGLANG);
	if (rank >= 0)
		printf("[%s TP%d] ", ts, rank);
	else
		printf("[%s] ", ts);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* TGI: "YYYY-mm-ddTHH:MM:SS.uuuuuuZ  LEVEL TARGET: MSG" in UTC. */
static void tgi(const char *level, const char *target, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void tgi(const char *level, const char *target, const char *fmt, ...)
{
	struct timeval tv;
	struct tm tm;
	char ts[32];
	va_list ap;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	printf("%s.%06ldZ %5s %s: ", ts, (long)tv.tv_usec, level, target);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* llama.cpp (default output, no prefix) on stderr. */
static void llama(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void llama(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void plain(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void plain(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Python's str(round(x, 2)), as vLLM's format_gib prints: "14.0",
 * "13.57". */
static const char *pyround2(char *buf, size_t n, double x)
{
	size_t len;

	snprintf(buf, n, "%.2f", x);
	len = strlen(buf);
	if (len > 3 && buf[len - 1] == '0')
		buf[len - 1] = '\0';
	return buf;
}

/* "380352" as Python's f"{n:,}": "380,352". */
static const char *commas(char *buf, size_t n, long long v)
{
	char raw[32];
	size_t len, i, o = 0;

	snprintf(raw, sizeof(raw), "%lld", v);
	len = strlen(raw);
	for (i = 0; i < len && o + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = raw[i];
	}
	buf[o] = '\0';
	return buf;
}

/* ---- events -------------------------------------------------------------- */

void sim_log_start(const struct sim_log_config *c)
{
	L.c = *c;
	if (L.c.tp < 1)
		L.c.tp = 1;
	if (L.c.kv_kib <= 0)
		L.c.kv_kib = 128;
	if (L.format < 0)
		L.format = format_of(c->format) > 0 ? format_of(c->format)
		                                    : F_NONE;
	switch (L.format) {
	case F_VLLM:
		if (is_api())
			vllm("APIServer", "INFO", "utils.py:233",
			     "non-default args: {'model': '%s', "
			     "'max_model_len': %d, 'gpu_memory_utilization': %g, "
			     "'max_num_seqs': %d, 'tensor_parallel_size': %d}",
			     c->model, c->max_model_len, c->util,
			     c->max_num_seqs, L.c.tp);
		if (is_core())
			vllm("EngineCore_DP0", "INFO", "core.py:77",
			     "Initializing a V1 LLM engine (v0.11.0) with config: "
			     "model='%s', speculative_config=None, "
			     "tokenizer='%s', dtype=torch.bfloat16, "
			     "max_seq_len=%d, download_dir=None, "
			     "load_format=auto, tensor_parallel_size=%d, "
			     "pipeline_parallel_size=1, quantization=None, "
			     "enforce_eager=False, kv_cache_dtype=auto",
			     c->model, c->model, c->max_model_len, L.c.tp);
		break;
	case F_SGLANG:
		if (is_api())
			sglang(-1,
			       "server_args=ServerArgs(model_path='%s', "
			       "tokenizer_path='%s', context_length=%d, "
			       "mem_fraction_static=%g, max_running_requests=%d, "
			       "max_total_tokens=None, page_size=1, tp_size=%d, "
			       "pp_size=1)",
			       c->model, c->model, c->max_model_len, c->util,
			       c->max_num_seqs, L.c.tp);
		break;
	case F_LLAMA:
		llama("build: 6100 (65349f26) with cc (Debian 12.2.0-14) "
		      "12.2.0 for x86_64-linux-gnu");
		llama("srv    load_model: loading model '%s'", c->model);
		break;
	case F_LLAMA_DEF:
		llama("build: 7104 (a3c51f9d) with cc (GCC) 13.3.0 for "
		      "x86_64-linux-gnu");
		llama("system info: n_threads = 8, n_threads_batch = 8, "
		      "total_threads = 16");
		llama("srv    load_model: loading model '%s'", c->model);
		break;
	case F_TGI:
		if (!is_api())
			break;
		tgi("INFO", "text_generation_launcher", "Args {");
		plain("    model_id: \"%s\",", c->model);
		plain("    num_shard: Some(");
		plain("        %d,", L.c.tp);
		plain("    ),");
		plain("    max_concurrent_requests: %d,", c->max_num_seqs);
		plain("    max_total_tokens: Some(");
		plain("        %d,", c->max_model_len);
		plain("    ),");
		plain("    cuda_memory_fraction: %g,", c->util);
		plain("}");
		break;
	case F_TRTLLM: {
		char ts[32];
		if (!is_core())
			break;
		local_time(ts, sizeof(ts), T_TRTLLM);
		plain("[%s] [TRT-LLM] [I] max_seq_len=%d, max_num_requests=%d, "
		      "max_num_tokens=8192, max_batch_size=%d",
		      ts, c->max_model_len, c->max_num_seqs, c->max_num_seqs);
		break;
	}
	}
}

void sim_log_weights(int rank, size_t bytes, size_t free_before)
{
	double b = (double)bytes * L.scale_weights;
	char w[32], g[32];

	switch (L.format) {
	case F_VLLM:
		vllm(vllm_worker(rank, w, sizeof(w)), "INFO",
		     "gpu_model_runner.py:2634",
		     "Model loading took %s GiB and %.6f seconds",
		     pyround2(g, sizeof(g), b / GIB), 0.25);
		break;
	case F_SGLANG:
		sglang(rank, "Load weight begin. avail mem=%.2f GB",
		       (double)free_before / GIB);
		sglang(rank,
		       "Load weight end. type=SimForCausalLM, "
		       "dtype=torch.bfloat16, avail mem=%.2f GB, mem usage=%.2f "
		       "GB.",
		       ((double)free_before - (double)bytes) / GIB, b / GIB);
		break;
	case F_LLAMA:
		llama("load_tensors: offloaded %d/%d layers to GPU", L.c.layers,
		      L.c.layers);
		llama("load_tensors: %12s model buffer size = %8.2f MiB",
		      rank ? "CUDA1" : "CUDA0", b / MIB);
		break;
	}
}

void sim_log_compute(int rank, size_t bytes)
{
	if (L.format == F_LLAMA)
		llama("llama_context: %10s compute buffer size = %8.2f MiB",
		      rank ? "CUDA1" : "CUDA0", (double)bytes / MIB);
}

/* Tokens one rank's KV cache holds (its share of each token's KV), in
 * whole blocks of 16 as the engines count them. */
static long long tokens_of(double bytes)
{
	long long t = (long long)(bytes / (L.c.kv_kib * 1024.0 / L.c.tp));
	return t - t % 16;
}

void sim_log_kv(int rank, size_t bytes)
{
	double b = (double)bytes * L.scale_kv;
	char w[32];

	switch (L.format) {
	case F_VLLM:
		vllm(vllm_worker(rank, w, sizeof(w)), "INFO",
		     "gpu_worker.py:298", "Available KV cache memory: %.2f GiB",
		     b / GIB);
		break;
	case F_SGLANG:
		sglang(rank,
		       "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, "
		       "V size: %.2f GB",
		       tokens_of((double)bytes), b / 2 / GIB, b / 2 / GIB);
		break;
	case F_LLAMA:
		llama("llama_context: n_seq_max     = %d", L.c.max_num_seqs);
		llama("llama_context: n_ctx         = %d", L.c.max_model_len);
		llama("llama_context: n_ctx_per_seq = %d",
		      L.c.max_num_seqs ? L.c.max_model_len / L.c.max_num_seqs
		                       : L.c.max_model_len);
		llama("llama_kv_cache: %10s KV buffer size = %8.2f MiB",
		      rank ? "CUDA1" : "CUDA0", b / MIB);
		/* cells per stream (one stream a sequence: the cache holds
		 * cells x streams tokens), as llama_kv_cache prints them */
		llama("llama_kv_cache: size = %7.2f MiB (%6d cells, %3d "
		      "layers, %2d/%d seqs), K (f16): %7.2f MiB, V (f16): %7.2f "
		      "MiB",
		      b / MIB,
		      L.c.max_num_seqs ? L.c.max_model_len / L.c.max_num_seqs
		                       : L.c.max_model_len,
		      L.c.layers, L.c.max_num_seqs,
		      L.c.max_num_seqs ? L.c.max_num_seqs : 1, b / 2 / MIB,
		      b / 2 / MIB);
		break;
	}
}

void sim_log_kv_total(size_t min_bytes)
{
	long long tokens = tokens_of((double)min_bytes);
	char t1[32], t2[32];
	double b = (double)min_bytes * L.scale_kv;

	switch (L.format) {
	case F_VLLM:
		vllm("EngineCore_DP0", "INFO", "kv_cache_utils.py:1087",
		     "GPU KV cache size: %s tokens",
		     commas(t1, sizeof(t1), tokens));
		vllm("EngineCore_DP0", "INFO", "kv_cache_utils.py:1091",
		     "Maximum concurrency for %s tokens per request: %.2fx",
		     commas(t2, sizeof(t2), L.c.max_model_len),
		     L.c.max_model_len ? (double)tokens / L.c.max_model_len
		                       : 0.0);
		break;
	case F_SGLANG:
		sglang(0,
		       "max_total_num_tokens=%lld, chunked_prefill_size=8192, "
		       "max_prefill_tokens=16384, max_running_requests=%d, "
		       "context_len=%d, available_gpu_mem=1.00 GB",
		       tokens, L.c.max_num_seqs, L.c.max_model_len);
		break;
	case F_TGI:
		tgi("INFO", "text_generation_launcher",
		    "KV-cache blocks: %lld, size: 1", tokens);
		tgi("INFO", "text_generation_router_v3",
		    "backends/v3/src/lib.rs:137: Setting max batch total tokens "
		    "to %lld",
		    tokens);
		break;
	case F_TRTLLM:
		plain("[TensorRT-LLM][INFO] Number of tokens per block: 32.");
		plain("[TensorRT-LLM][INFO] [MemUsageChange] Allocated %.2f GiB "
		      "for max tokens in paged KV cache (%lld).",
		      b / GIB, tokens);
		break;
	}
}

void sim_log_graphs(int rank, size_t bytes)
{
	char w[32];

	switch (L.format) {
	case F_VLLM:
		vllm(vllm_worker(rank, w, sizeof(w)), "INFO",
		     "gpu_model_runner.py:3480",
		     "Graph capturing finished in 1 secs, took %.2f GiB",
		     (double)bytes / GIB);
		break;
	case F_SGLANG:
		sglang(rank,
		       "Capture cuda graph end. Time elapsed: 1.00 s. mem "
		       "usage=%.2f GB.",
		       (double)bytes / GIB);
		break;
	}
}

void sim_log_no_kv(int rank)
{
	switch (L.format) {
	case F_VLLM:
		vllm("EngineCore_DP0", "ERROR", "core.py:708",
		     "ValueError: No available memory for the cache blocks. Try "
		     "increasing `gpu_memory_utilization` when initializing the "
		     "engine.");
		break;
	case F_SGLANG:
		sglang(rank, "Scheduler hit an exception: Traceback (most recent "
		             "call last):");
		plain("  File \"/sgl-workspace/sglang/python/sglang/srt/"
		      "mem_cache/pool_configurator.py\", line 84, in "
		      "__post_init__");
		plain("    raise RuntimeError(msg)");
		plain("RuntimeError: Not enough memory. Please try to increase "
		      "--mem-fraction-static. Current value: "
		      "mem_fraction_static=%g",
		      L.c.util);
		break;
	}
}

void sim_log_kv_refusal(int rank, double needed, double available)
{
	double per = L.c.kv_kib * 1024.0 / L.c.tp; /* one rank's share */
	long long est;
	char n1[32], n2[32], estimate[128] = "";

	(void)rank;
	if (L.format != F_VLLM)
		return;
	/* vLLM's estimate: the longest length whose blocks (16 tokens)
	 * fit in what is available */
	est = (long long)(available / (per * 16)) * 16;
	if (est > 0)
		snprintf(estimate, sizeof(estimate),
		         "Based on the available memory, the estimated maximum "
		         "model length is %lld. ",
		         est);
	vllm("EngineCore_DP0", "ERROR", "core.py:708", "EngineCore failed to "
	                                               "start.");
	vllm("EngineCore_DP0", "ERROR", "core.py:708",
	     "ValueError: To serve at least one request with the models's max "
	     "seq len (%d), (%s GiB KV cache is needed, which is larger than "
	     "the available KV cache memory (%s GiB). %sTry increasing "
	     "`gpu_memory_utilization` or decreasing `max_model_len` when "
	     "initializing the engine. See "
	     "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ "
	     "for more details.",
	     L.c.max_model_len, pyround2(n1, sizeof(n1), needed / GIB),
	     pyround2(n2, sizeof(n2), available / GIB), estimate);
	if (L.c.process == SIM_LOG_ALL)
		fprintf(stderr, "(APIServer pid=%d) RuntimeError: Engine core "
		                "initialization failed. See root cause above. "
		                "Failed core proc(s): {}\n",
		        (int)getpid());
}

void sim_log_core_failed(void)
{
	if (L.format == F_VLLM)
		vllm("EngineCore_DP0", "ERROR", "core.py:710",
		     "EngineCore encountered a fatal error.");
}

void sim_log_http_up(int port)
{
	if (L.format == F_LLAMA_DEF) {
		llama("srv    llama_server: HTTP server is listening, hostname: "
		      "127.0.0.1, port: %d, http threads: 15",
		      port);
		llama("srv    llama_server: loading model");
		return;
	}
	if (L.format != F_LLAMA)
		return;
	llama("main: HTTP server is listening, hostname: 127.0.0.1, port: %d, "
	      "http threads: 15",
	      port);
	llama("main: loading model");
}

void sim_log_slot(int slot, int task, int tokens)
{
	if ((L.format != F_LLAMA && L.format != F_LLAMA_DEF) || !tokens)
		return;
	llama("slot launch_slot_: id  %d | task %d | processing task, "
	      "is_child = 0",
	      slot, task);
	llama("slot update_slots: id  %d | task %d | new prompt, n_ctx_slot = "
	      "%d, n_keep = 0, task.n_tokens = %d",
	      slot, task,
	      L.c.max_num_seqs ? L.c.max_model_len / L.c.max_num_seqs
	                       : L.c.max_model_len,
	      tokens);
}

void sim_log_ready(int port)
{
	switch (L.format) {
	case F_VLLM:
		vllm("APIServer", "INFO", "api_server.py:1971",
		     "Starting vLLM API server 0 on http://127.0.0.1:%d", port);
		plain("(APIServer pid=%d) INFO:     Started server process [%d]",
		      (int)getpid(), (int)getpid());
		plain("(APIServer pid=%d) INFO:     Waiting for application "
		      "startup.",
		      (int)getpid());
		plain("(APIServer pid=%d) INFO:     Application startup "
		      "complete.",
		      (int)getpid());
		break;
	case F_SGLANG:
		sglang(-1, "INFO:     Uvicorn running on http://127.0.0.1:%d "
		           "(Press CTRL+C to quit)",
		       port);
		sglang(-1, "The server is fired up and ready to roll!");
		break;
	case F_LLAMA:
		llama("srv    load_model: initializing slots, n_slots = %d",
		      L.c.max_num_seqs);
		llama("main: model loaded");
		llama("main: server is listening on http://127.0.0.1:%d - "
		      "starting the main loop",
		      port);
		llama("srv  update_slots: all slots are idle");
		break;
	case F_LLAMA_DEF:
		llama("srv    load_model: initializing slots, n_slots = %d",
		      L.c.max_num_seqs);
		for (int i = 0; i < L.c.max_num_seqs && i < 64; i++)
			llama("slot   load_model: id  %d | task -1 | new slot, "
			      "n_ctx = %d",
			      i, L.c.max_num_seqs ? L.c.max_model_len /
			                                    L.c.max_num_seqs
			                          : L.c.max_model_len);
		llama("srv    llama_server: model loaded");
		llama("srv    llama_server: listening on http://127.0.0.1:%d",
		      port);
		llama("srv  update_slots: all slots are idle");
		break;
	case F_TGI:
		tgi("INFO", "text_generation_router::server",
		    "router/src/server.rs:2302: Connected");
		break;
	case F_TRTLLM:
		plain("INFO:     Application startup complete.");
		break;
	}
}

/* Each line of text through print (the engine's prefix per line). */
static void each_line(const char *text, void (*print)(const char *, void *),
                      void *arg)
{
	char line[1024];

	while (text && *text) {
		size_t n = strcspn(text, "\n");
		snprintf(line, sizeof(line), "%.*s", (int)n, text);
		print(line, arg);
		text += n + (text[n] == '\n');
	}
}

static void print_vllm(const char *line, void *rank)
{
	char w[32];

	vllm(vllm_worker(*(int *)rank, w, sizeof(w)), "ERROR",
	     "multiproc_executor.py:671", "%s", line);
}

static void print_plain(const char *line, void *unused)
{
	(void)unused;
	plain("%s", line);
}

static void print_llama(const char *line, void *unused)
{
	(void)unused;
	llama("%s", line);
}

/* What llama.cpp says of a buffer it could not allocate: the failed
 * cudaMalloc, then what the load or the context makes of it. */
static void llama_buffer_oom(int rank, int stage, size_t requested)
{
	llama("ggml_backend_cuda_buffer_type_alloc_buffer: allocating %.2f "
	      "MiB on device %d: cudaMalloc failed: out of memory",
	      (double)requested / MIB, rank);
	if (stage == SIM_LOG_IN_KV)
		llama("llama_init_from_model: failed to initialize the "
		      "context: failed to allocate buffer for kv cache");
	else if (stage == SIM_LOG_IN_PROFILE)
		llama("llama_init_from_model: failed to initialize the "
		      "context: failed to allocate compute buffers");
	else
		llama("llama_model_load: error loading model: unable to "
		      "allocate CUDA%d buffer",
		      rank);
}

void sim_log_oom(int rank, int stage, size_t requested, const char *text)
{
	char w[32], msg[128];

	if (!text || !*text) {
		/* llama.cpp's buffers have words of their own (below); a
		 * Python engine says at least what PyTorch says. */
		snprintf(msg, sizeof(msg),
		         "torch.OutOfMemoryError: %s out of memory. Tried to "
		         "allocate %.2f MiB.",
		         sim_gpu_name(), (double)requested / MIB);
		text = L.format == F_LLAMA || L.format == F_LLAMA_DEF ||
		               L.format <= F_NONE
		       ? NULL
		       : msg;
	}
	switch (L.format) {
	case F_VLLM:
		vllm(vllm_worker(rank, w, sizeof(w)), "ERROR",
		     "multiproc_executor.py:671", "WorkerProc hit an exception.");
		each_line(text, print_vllm, &rank);
		break;
	case F_SGLANG:
		sglang(rank, "Scheduler hit an exception: Traceback (most recent "
		             "call last):");
		each_line(text, print_plain, NULL);
		break;
	case F_LLAMA:
	case F_LLAMA_DEF:
		if (text)
			each_line(text, print_llama, NULL);
		else if (stage == SIM_LOG_IN_FORWARD)
			/* ggml's CUDA_CHECK on a decode's allocation */
			llama("%s error: out of memory\n"
			      "  current device: %d, in function alloc at "
			      "ggml/src/ggml-cuda/ggml-cuda.cu:375\n"
			      "  ggml_cuda_device_malloc(&ptr, look_ahead_size, "
			      "device)",
			      sim_gpu_ggml_name(), rank);
		else
			llama_buffer_oom(rank, stage, requested);
		break;
	case F_TGI:
		tgi("ERROR", "text_generation_launcher",
		    "Method %s encountered an error.",
		    stage == SIM_LOG_IN_FORWARD ? "Prefill" : "Warmup");
		plain("Traceback (most recent call last):");
		if (stage == SIM_LOG_IN_PROFILE) {
			/* TGI's warmup turns the OOM into its own advice */
			plain("RuntimeError: Not enough memory to handle %d "
			      "prefill tokens. You need to decrease "
			      "`--max-batch-prefill-tokens`",
			      L.c.batch_tokens);
			break;
		}
		each_line(text, print_plain, NULL);
		break;
	case F_TRTLLM:
		each_line(text, print_plain, NULL);
		break;
	default:
		fputs(text ? text : "", stderr);
		break;
	}
	fflush(stderr);
}
