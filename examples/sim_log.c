/*
 * sim_log.c — the engines' log lines for the example servers (sim_log.h).
 * Each line copies the engine's own format: its logging prefix (vLLM
 * "INFO 12-02 10:15:00 [file.py:N] " behind "(EngineCore_DP0 pid=N) ",
 * SGLang "[2025-12-02 10:15:00 TP0] ", TGI's UTC tracing prefix,
 * TensorRT-LLM's "[TensorRT-LLM][INFO] ") and its sentence, with the
 * server's real numbers; PyTorch's OutOfMemoryError for the Python
 * engines, ggml's messages for llama.cpp. Engines print local times except
 * TGI (UTC). Lines are flushed one by one, as a logging handler does.
 *
 * State is this file's statics: the examples are single-threaded where
 * they log.
 */
#include "sim_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

enum { F_NONE, F_VLLM, F_SGLANG, F_LLAMA, F_TGI, F_TRTLLM };

static struct {
	int format;
	double kv_kib; /* KV per token, all ranks together */
	int kv_check;  /* --kv-kib-per-token given */
	double scale_weights, scale_kv;
	struct sim_log_config c;
	size_t kv_min; /* smallest rank's KV cache */
} L = {F_NONE, 128, 0, 1, 1, {"sim-model", 0, 0, 0, 1, 32, 0}, 0};

int sim_log_enabled(void)
{
	return L.format != F_NONE;
}

int sim_log_option(int argc, char **argv, int *i)
{
	static const char *const names[] = {"none", "vllm", "sglang",
	                                    "llamacpp", "tgi", "trtllm"};
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	char *end;
	int k;

	if (strcmp(a, "--log-format") && strcmp(a, "--kv-kib-per-token") &&
	    strcmp(a, "--log-scale"))
		return 0;
	if (!v) {
		fprintf(stderr, "%s needs a value\n", a);
		return -1;
	}
	(*i)++;
	if (!strcmp(a, "--log-format")) {
		for (k = 0; k < 6; k++)
			if (!strcmp(v, names[k])) {
				L.format = k;
				return 1;
			}
		fprintf(stderr, "--log-format is vllm, sglang, llamacpp, tgi "
		                "or trtllm\n");
		return -1;
	}
	if (!strcmp(a, "--kv-kib-per-token")) {
		L.kv_kib = strtod(v, &end);
		L.kv_check = 1;
		if (*end || L.kv_kib <= 0) {
			fprintf(stderr, "--kv-kib-per-token: a number of KiB\n");
			return -1;
		}
		return 1;
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

/* PyTorch's format_size: two decimals of the largest unit that fits. */
static const char *torch_size(char *buf, size_t n, double b)
{
	if (b <= 1024)
		snprintf(buf, n, "%.0f bytes", b);
	else if (b <= 1048576)
		snprintf(buf, n, "%.2f KiB", b / 1024);
	else if (b <= 1073741824.0)
		snprintf(buf, n, "%.2f MiB", b / MIB);
	else
		snprintf(buf, n, "%.2f GiB", b / GIB);
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
	switch (L.format) {
	case F_VLLM:
		vllm("APIServer", "INFO", "utils.py:233",
		     "non-default args: {'model': '%s', 'max_model_len': %d, "
		     "'gpu_memory_utilization': %g, 'max_num_seqs': %d, "
		     "'tensor_parallel_size': %d}",
		     c->model, c->max_model_len, c->util, c->max_num_seqs, L.c.tp);
		vllm("EngineCore_DP0", "INFO", "core.py:77",
		     "Initializing a V1 LLM engine (v0.11.0) with config: "
		     "model='%s', speculative_config=None, tokenizer='%s', "
		     "dtype=torch.bfloat16, max_seq_len=%d, download_dir=None, "
		     "load_format=auto, tensor_parallel_size=%d, "
		     "pipeline_parallel_size=1, quantization=None, "
		     "enforce_eager=False, kv_cache_dtype=auto",
		     c->model, c->model, c->max_model_len, L.c.tp);
		break;
	case F_SGLANG:
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
	case F_TGI:
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

/* Tokens one rank's KV cache holds: its share of each token's KV. */
static double tokens_of(double bytes)
{
	return bytes / (L.kv_kib * 1024.0 / L.c.tp);
}

void sim_log_kv(int rank, size_t bytes)
{
	double b = (double)bytes * L.scale_kv;
	double tokens = tokens_of((double)bytes);
	char w[32], t1[32], t2[32];
	int last = rank == L.c.tp - 1;

	if (!L.kv_min || bytes < L.kv_min)
		L.kv_min = bytes;
	tokens = tokens_of((double)L.kv_min);
	tokens -= (double)((long long)tokens % 16);
	switch (L.format) {
	case F_VLLM:
		vllm(vllm_worker(rank, w, sizeof(w)), "INFO",
		     "gpu_worker.py:298", "Available KV cache memory: %.2f GiB",
		     b / GIB);
		if (last) {
			vllm("EngineCore_DP0", "INFO", "kv_cache_utils.py:1087",
			     "GPU KV cache size: %s tokens",
			     commas(t1, sizeof(t1), (long long)tokens));
			vllm("EngineCore_DP0", "INFO", "kv_cache_utils.py:1091",
			     "Maximum concurrency for %s tokens per request: "
			     "%.2fx",
			     commas(t2, sizeof(t2), L.c.max_model_len),
			     L.c.max_model_len ? tokens / L.c.max_model_len
			                       : 0.0);
		}
		break;
	case F_SGLANG:
		sglang(rank,
		       "KV Cache is allocated. #tokens: %lld, K size: %.2f GB, "
		       "V size: %.2f GB",
		       (long long)tokens, b / 2 / GIB, b / 2 / GIB);
		if (last)
			sglang(0,
			       "max_total_num_tokens=%lld, chunked_prefill_size="
			       "8192, max_prefill_tokens=16384, "
			       "max_running_requests=%d, context_len=%d, "
			       "available_gpu_mem=1.00 GB",
			       (long long)tokens, L.c.max_num_seqs,
			       L.c.max_model_len);
		break;
	case F_LLAMA:
		llama("llama_context: n_seq_max     = %d", L.c.max_num_seqs);
		llama("llama_context: n_ctx         = %d", L.c.max_model_len);
		llama("llama_context: n_ctx_per_seq = %d",
		      L.c.max_num_seqs ? L.c.max_model_len / L.c.max_num_seqs
		                       : L.c.max_model_len);
		llama("llama_kv_cache: %10s KV buffer size = %8.2f MiB",
		      rank ? "CUDA1" : "CUDA0", b / MIB);
		llama("llama_kv_cache: size = %7.2f MiB (%6d cells, %3d "
		      "layers, %2d/%d seqs), K (f16): %7.2f MiB, V (f16): %7.2f "
		      "MiB",
		      b / MIB, L.c.max_model_len, L.c.layers, L.c.max_num_seqs,
		      L.c.max_num_seqs, b / 2 / MIB, b / 2 / MIB);
		break;
	case F_TGI:
		if (last) {
			tgi("INFO", "text_generation_launcher",
			    "KV-cache blocks: %lld, size: 1", (long long)tokens);
			tgi("INFO", "text_generation_router_v3",
			    "backends/v3/src/lib.rs:137: Setting max batch total "
			    "tokens to %lld",
			    (long long)tokens);
		}
		break;
	case F_TRTLLM:
		if (last) {
			plain("[TensorRT-LLM][INFO] Number of tokens per block: "
			      "32.");
			plain("[TensorRT-LLM][INFO] [MemUsageChange] Allocated "
			      "%.2f GiB for max tokens in paged KV cache (%lld).",
			      b / GIB, (long long)tokens);
		}
		break;
	}
}

int sim_log_kv_check(int rank, double available)
{
	double per = L.kv_kib * 1024.0 / L.c.tp; /* one rank's share */
	double need = per * L.c.max_model_len;
	long long est;
	char n1[32], n2[32], estimate[128] = "";

	if (available <= 0 && L.format == F_SGLANG) {
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
		return 1;
	}
	if (!L.kv_check || L.format != F_VLLM || need <= available)
		return 0;
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
	     L.c.max_model_len, pyround2(n1, sizeof(n1), need / GIB),
	     pyround2(n2, sizeof(n2), available / GIB), estimate);
	fprintf(stderr, "(APIServer pid=%d) RuntimeError: Engine core "
	                "initialization failed. See root cause above. Failed "
	                "core proc(s): {}\n",
	        (int)getpid());
	return 1;
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
	case F_TGI:
		tgi("INFO", "text_generation_router::server",
		    "router/src/server.rs:2302: Connected");
		break;
	case F_TRTLLM:
		plain("INFO:     Application startup complete.");
		break;
	}
}

/* PyTorch's OutOfMemoryError text (PyTorch 2.4 and later). */
static void torch_oom(char *buf, size_t n, int rank, size_t requested,
                      size_t free_b, size_t total_b)
{
	char r[32], t[32], f[32], u[32], a[32];
	double used = (double)total_b - (double)free_b;

	snprintf(buf, n,
	         "torch.OutOfMemoryError: CUDA out of memory. Tried to "
	         "allocate %s. GPU %d has a total capacity of %s of which %s "
	         "is free. Including non-PyTorch memory, this process has %s "
	         "memory in use. Of the allocated memory %s is allocated by "
	         "PyTorch, and 0 bytes is reserved by PyTorch but "
	         "unallocated. If reserved but unallocated memory is large "
	         "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
	         "to avoid fragmentation.  See documentation for Memory "
	         "Management  (https://pytorch.org/docs/stable/notes/"
	         "cuda.html#environment-variables)",
	         torch_size(r, sizeof(r), (double)requested), rank,
	         torch_size(t, sizeof(t), (double)total_b),
	         torch_size(f, sizeof(f), (double)free_b),
	         torch_size(u, sizeof(u), used),
	         torch_size(a, sizeof(a), used));
}

void sim_log_oom(int rank, int stage, size_t requested, size_t free_b,
                 size_t total_b)
{
	char msg[1024], w[32];

	switch (L.format) {
	case F_VLLM:
		torch_oom(msg, sizeof(msg), rank, requested, free_b, total_b);
		vllm(vllm_worker(rank, w, sizeof(w)), "ERROR",
		     "multiproc_executor.py:671", "WorkerProc hit an exception.");
		vllm(vllm_worker(rank, w, sizeof(w)), "ERROR",
		     "multiproc_executor.py:671", "%s", msg);
		break;
	case F_SGLANG:
		torch_oom(msg, sizeof(msg), rank, requested, free_b, total_b);
		sglang(rank, "Scheduler hit an exception: Traceback (most recent "
		             "call last):");
		plain("%s", msg);
		break;
	case F_LLAMA:
		if (stage == SIM_LOG_IN_FORWARD) {
			llama("CUDA error: out of memory");
			llama("  current device: %d, in function alloc at "
			      "ggml/src/ggml-cuda/ggml-cuda.cu:375",
			      rank);
			llama("  cuMemCreate(&handle, reserve_size, &prop, 0)");
			break;
		}
		llama("ggml_backend_cuda_buffer_type_alloc_buffer: allocating "
		      "%.2f MiB on device %d: cudaMalloc failed: out of memory",
		      (double)requested / MIB, rank);
		if (stage == SIM_LOG_IN_KV)
			llama("llama_init_from_model: failed to initialize the "
			      "context: failed to allocate buffer for kv cache");
		else
			llama("llama_model_load: error loading model: unable to "
			      "allocate CUDA%d buffer",
			      rank);
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
		torch_oom(msg, sizeof(msg), rank, requested, free_b, total_b);
		plain("%s", msg);
		break;
	case F_TRTLLM:
		torch_oom(msg, sizeof(msg), rank, requested, free_b, total_b);
		plain("%s", msg);
		break;
	}
}
