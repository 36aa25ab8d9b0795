/*
 * enginelog.c on the real-format log excerpts of tests/data/logs (one
 * file per engine and version, noise included: colour codes, carriage
 * returns, several processes' prefixed output, a line cut by a kill) and
 * on hand-made lines for the edge cases: every number the engine printed,
 * its device or rank, the configuration, readiness, the memory errors with
 * their numbers, repeated errors kept once, times from each prefix.
 *
 * Usage: test_enginelog DATA_DIR (tests/data). TAP output.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "enginelog/enginelog.h"
#include "vramtrace/trace_format.h"
#include "../tap.h"
#include "load/wallclock.h"

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

static const char *data_dir;

/* The run's reference moment: 2025-09-01T00:00:00Z (years of dates
 * printed without one are taken nearest to it). */
static int64_t ref_ns(void)
{
	return vrt_wallclock_timegm(2025, 9, 1, 0, 0, 0) * 1000000000;
}

/* Reads data_dir/logs/name through vrt_enginelog_read, without its
 * header: the leading "#" lines that cite where the format comes from
 * (they quote the engine's format strings, which would match) and say
 * what the log deserves (run_scenarios.py). */
static int load(struct vrt_enginelog *log, const char *name)
{
	char path[4096], tmp[] = "/tmp/test_enginelog.XXXXXX", err[256];
	struct vrt_enginelog_opts o = {ref_ns(), 0};
	FILE *in, *out;
	int fd, c, first = 1, rc;

	snprintf(path, sizeof(path), "%s/logs/%s", data_dir, name);
	in = fopen(path, "r");
	fd = mkstemp(tmp);
	out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!in || !out) {
		ok(0, "%s: opens", name);
		return -1;
	}
	/* first: 1 at a line's start while in the header, 2 inside a
	 * header line, 0 past the header */
	while ((c = fgetc(in)) != EOF) {
		if (first == 1 && c != '#')
			first = 0;
		if (!first)
			fputc(c, out);
		else if (c == '\n')
			first = 1;
		else
			first = 2;
	}
	fclose(in);
	fclose(out);
	rc = vrt_enginelog_read(log, tmp, &o, err, sizeof(err));
	unlink(tmp);
	if (rc) {
		ok(0, "%s: reads (%s)", name, err);
		return -1;
	}
	return 0;
}

/* value of kind on device equals bytes printed as v units (rounded as
 * the parser rounds: to the nearest byte) */
static void value_is(const struct vrt_enginelog *log, const char *file,
                     int kind, int32_t dev, double want)
{
	uint64_t v = 0;
	int found = vrt_enginelog_value(log, kind, dev, &v, NULL, NULL);
	uint64_t w = (uint64_t)(want + 0.5);

	ok(found && (v == w || v + 1 == w || v == w + 1),
	   "%s: %s on device %d = %" PRIu64 " (got %s%" PRIu64 ")", file,
	   vrt_enginelog_kind_name(kind), dev, w, found ? "" : "none, ", v);
}

static void no_value(const struct vrt_enginelog *log, const char *file,
                     int kind, int32_t dev)
{
	uint64_t v = 0;
	ok(!vrt_enginelog_value(log, kind, dev, &v, NULL, NULL),
	   "%s: no %s on device %d (got %" PRIu64 ")", file,
	   vrt_enginelog_kind_name(kind), dev, v);
}

static void config_is(const struct vrt_enginelog *log, const char *file,
                      int field, uint64_t want)
{
	ok(log->config_line[field] && log->config[field] == want,
	   "%s: config %s = %" PRIu64 " (got %" PRIu64 ", line %u)", file,
	   vrt_enginelog_config_name(field), want, log->config[field],
	   log->config_line[field]);
}

static const struct vrt_enginelog_error *fatal(const struct vrt_enginelog *log)
{
	return log->have_fatal ? &log->errors[log->fatal] : NULL;
}

static int64_t utc(int y, int mo, int d, int h, int mi, int s)
{
	return vrt_wallclock_timegm(y, mo, d, h, mi, s) * 1000000000;
}

static void test_vllm_v07(void)
{
	struct vrt_enginelog log;
	const char *f = "vllm/v0.7.log";
	const struct vrt_enginelog_error *e;

	if (load(&log, f))
		return;
	EQ(log.engine, VRT_ENGINELOG_VLLM, "vllm/v0.7.log: engine vllm");
	/* "model weights take" comes after "Loading model weights took"
	 * and is the one the budget used */
	value_is(&log, f, VRT_ELK_WEIGHTS, -1, 14.99 * GIB);
	value_is(&log, f, VRT_ELK_ACTIVATION, -1, 0.22 * GIB);
	value_is(&log, f, VRT_ELK_NON_TORCH, -1, 0.05 * GIB);
	value_is(&log, f, VRT_ELK_KV_BYTES, -1, 4.60 * GIB);
	value_is(&log, f, VRT_ELK_KV_BLOCKS, -1, 2356);
	value_is(&log, f, VRT_ELK_CONCURRENCY, -1, 290);
	value_is(&log, f, VRT_ELK_TOTAL, -1, 22.07 * GIB);
	config_is(&log, f, VRT_ELC_MEM_FRACTION, 900);
	config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 131072);
	config_is(&log, f, VRT_ELC_TP, 1);
	EQ(log.nerrors, 1, "vllm/v0.7.log: the refusal printed three times "
	                   "is one error");
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_KV_TOO_SMALL && e->max_model_len == 131072 &&
	           e->suggested_max_model_len == 37696,
	   "vllm/v0.7.log: fatal: the KV cache holds 37696 of 131072 tokens");
	ok(e && e->wall_ns == utc(2025, 3, 25, 21, 32, 48),
	   "vllm/v0.7.log: the error's time from 'ERROR 03-25 21:32:48' in "
	   "the year nearest the run");
	vrt_enginelog_free(&log);
}

static void test_vllm_v011(void)
{
	struct vrt_enginelog log;
	const char *f = "vllm/v0.11.log";
	const struct vrt_enginelog_error *e;

	if (load(&log, f))
		return;
	EQ(log.engine, VRT_ENGINELOG_VLLM, "vllm/v0.11.log: engine vllm");
	/* the workers' prefixes name their ranks */
	value_is(&log, f, VRT_ELK_WEIGHTS, 0, 7.6444 * GIB);
	value_is(&log, f, VRT_ELK_WEIGHTS, 1, 7.6444 * GIB);
	value_is(&log, f, VRT_ELK_KV_BYTES, 0, 26.12 * GIB);
	value_is(&log, f, VRT_ELK_KV_BYTES, 1, 26.08 * GIB);
	value_is(&log, f, VRT_ELK_GRAPH, 0, 0.61 * GIB);
	value_is(&log, f, VRT_ELK_GRAPH, 1, 0.62 * GIB);
	value_is(&log, f, VRT_ELK_KV_TOKENS, -1, 380352);
	value_is(&log, f, VRT_ELK_CONCURRENCY, -1, 11610);
	no_value(&log, f, VRT_ELK_WEIGHTS, -1);
	config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 32768);
	config_is(&log, f, VRT_ELC_MEM_FRACTION, 920);
	config_is(&log, f, VRT_ELC_TP, 2);
	ok(log.have_ready && strstr(log.ready_text,
	                            "Application startup complete") &&
	           log.ready_wall_ns == utc(2025, 12, 2, 10, 15, 41),
	   "vllm/v0.11.log: ready at uvicorn's 'Application startup "
	   "complete', a line without a time of its own: the one before "
	   "it (%s)",
	   log.ready_text);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_TORCH_OOM &&
	           e->requested_bytes == (uint64_t)(2.0 * GIB) &&
	           e->device == 0 && e->total_bytes == (uint64_t)(39.38 * GIB) &&
	           e->free_bytes == (uint64_t)(1.50 * GIB) &&
	           e->allocated_bytes == (uint64_t)(35.10 * GIB) &&
	           e->reserved_bytes == (uint64_t)(1.12 * GIB) && e->pid == 2320,
	   "vllm/v0.11.log: fatal: PyTorch's OutOfMemoryError with its "
	   "numbers, from pid 2320");
	ok(e && e->wall_ns == utc(2025, 12, 2, 10, 16, 5),
	   "vllm/v0.11.log: its time from the coloured prefix");
	ok(log.lines == 23, "vllm/v0.11.log: every line read, the last one "
	                    "cut by the kill too (%" PRIu64 ")",
	   log.lines);
	vrt_enginelog_free(&log);
}

static void test_vllm_refusal(void)
{
	struct vrt_enginelog log;
	const char *f = "vllm/v0.11-kv-refusal.log";
	const struct vrt_enginelog_error *e;

	if (load(&log, f))
		return;
	value_is(&log, f, VRT_ELK_WEIGHTS, -1, 14.9889 * GIB);
	value_is(&log, f, VRT_ELK_KV_BYTES, -1, 8.0 * GIB);
	config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 131072);
	EQ(log.nerrors, 1, "vllm/v0.11-kv-refusal.log: one refusal");
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_KV_TOO_SMALL && e->max_model_len == 131072 &&
	           e->needed_bytes == (uint64_t)(16.0 * GIB) &&
	           e->available_bytes == (uint64_t)(8.0 * GIB) &&
	           e->suggested_max_model_len == 65536 &&
	           vrt_enginelog_is_refusal(e->kind),
	   "vllm/v0.11-kv-refusal.log: 16 GiB needed, 8 GiB available, "
	   "estimated maximum model length 65536");
	ok(!log.have_ready, "vllm/v0.11-kv-refusal.log: never ready");
	vrt_enginelog_free(&log);
}

static void test_sglang(void)
{
	struct vrt_enginelog log;
	const char *f = "sglang/v0.4.0.log";
	const struct vrt_enginelog_error *e;

	if (!load(&log, f)) {
		EQ(log.engine, VRT_ENGINELOG_SGLANG, "sglang/v0.4.0.log: "
		                                     "engine sglang");
		/* no "mem usage" yet: begin minus end free memory */
		value_is(&log, f, VRT_ELK_WEIGHTS, 0, (23.26 - 9.69) * GIB);
		value_is(&log, f, VRT_ELK_KV_TOKENS, 0, 56524);
		no_value(&log, f, VRT_ELK_GRAPH, 0);
		config_is(&log, f, VRT_ELC_MEM_FRACTION, 880);
		config_is(&log, f, VRT_ELC_TP, 1);
		config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 32768);
		config_is(&log, f, VRT_ELC_MAX_NUM_SEQS, 2049);
		ok(log.have_ready &&
		           log.ready_wall_ns == utc(2024, 12, 13, 1, 45, 2),
		   "sglang/v0.4.0.log: ready at 01:45:02 (%s)", log.ready_text);
		ok(!log.nerrors, "sglang/v0.4.0.log: no error");
		vrt_enginelog_free(&log);
	}
	f = "sglang/v0.5.log";
	if (!load(&log, f)) {
		value_is(&log, f, VRT_ELK_WEIGHTS, 0, 7.08 * GIB);
		value_is(&log, f, VRT_ELK_WEIGHTS, 1, 7.08 * GIB);
		value_is(&log, f, VRT_ELK_KV_BYTES, 0, 11.38 * GIB);
		value_is(&log, f, VRT_ELK_KV_BYTES, 1, 11.38 * GIB);
		value_is(&log, f, VRT_ELK_KV_TOKENS, 1, 298447);
		value_is(&log, f, VRT_ELK_GRAPH, 0, 0.42 * GIB);
		config_is(&log, f, VRT_ELC_MEM_FRACTION, 800);
		config_is(&log, f, VRT_ELC_TP, 2);
		config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 40960);
		config_is(&log, f, VRT_ELC_MAX_NUM_SEQS, 3730);
		ok(log.have_ready && strstr(log.ready_text, "fired up"),
		   "sglang/v0.5.log: ready when fired up (%s)", log.ready_text);
		vrt_enginelog_free(&log);
	}
	f = "sglang/v0.5-refusal.log";
	if (!load(&log, f)) {
		value_is(&log, f, VRT_ELK_WEIGHTS, 0, 61.11 * GIB);
		e = fatal(&log);
		ok(e && e->kind == VRT_ELE_MEM_FRACTION &&
		           (e->have & VRT_ELH_MEM_FRACTION) &&
		           e->mem_fraction_milli == 700,
		   "sglang/v0.5-refusal.log: refused at "
		   "--mem-fraction-static 0.7");
		vrt_enginelog_free(&log);
	}
}

static void test_llama(void)
{
	struct vrt_enginelog log;
	const char *f = "llamacpp/b3600.log";
	const struct vrt_enginelog_error *e;

	if (!load(&log, f)) {
		EQ(log.engine, VRT_ENGINELOG_LLAMACPP, "llamacpp/b3600.log: "
		                                       "engine llama.cpp");
		value_is(&log, f, VRT_ELK_WEIGHTS, 0, 4403.50 * MIB);
		value_is(&log, f, VRT_ELK_KV_BYTES, 0, 1024.00 * MIB);
		value_is(&log, f, VRT_ELK_ACTIVATION, 0, 560.00 * MIB);
		no_value(&log, f, VRT_ELK_WEIGHTS, -1);
		config_is(&log, f, VRT_ELC_CTX_SIZE, 8192);
		config_is(&log, f, VRT_ELC_GPU_LAYERS, 33);
		ok(log.have_ready && strstr(log.ready_text, "HTTP server "
		                                            "listening") &&
		           log.ready_wall_ns == 1724745602ll * 1000000000,
		   "llamacpp/b3600.log: ready from the JSON line, its epoch "
		   "timestamp (%s)",
		   log.ready_text);
		e = fatal(&log);
		ok(e && e->kind == VRT_ELE_CUDA_ERROR &&
		           (e->have & VRT_ELH_DEVICE) && e->device == 0,
		   "llamacpp/b3600.log: fatal: CUDA error: out of memory on "
		   "device 0 (the next line's)");
		vrt_enginelog_free(&log);
	}
	f = "llamacpp/b6100.log";
	if (!load(&log, f)) {
		value_is(&log, f, VRT_ELK_WEIGHTS, 0, 4403.49 * MIB);
		value_is(&log, f, VRT_ELK_KV_BYTES, 0, 2048.00 * MIB);
		value_is(&log, f, VRT_ELK_ACTIVATION, 0, 1104.00 * MIB);
		value_is(&log, f, VRT_ELK_KV_TOKENS, -1, 16384);
		config_is(&log, f, VRT_ELC_SLOTS, 4);
		config_is(&log, f, VRT_ELC_CTX_SIZE, 16384);
		config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 4096);
		config_is(&log, f, VRT_ELC_GPU_LAYERS, 33);
		ok(log.have_ready && strstr(log.ready_text, "starting the main "
		                                            "loop"),
		   "llamacpp/b6100.log: ready at the main loop (%s)",
		   log.ready_text);
		ok(!log.nerrors, "llamacpp/b6100.log: no error");
		vrt_enginelog_free(&log);
	}
	f = "llamacpp/b6100-oom.log";
	if (!load(&log, f)) {
		e = fatal(&log);
		EQ(log.nerrors, 2, "llamacpp/b6100-oom.log: two errors");
		ok(e && e->kind == VRT_ELE_CONTEXT_ALLOC &&
		           vrt_enginelog_is_refusal(e->kind) &&
		           e->requested_bytes == (uint64_t)(16384.0 * MIB) &&
		           e->device == 0,
		   "llamacpp/b6100-oom.log: fatal: the context did not fit, "
		   "with the failed cudaMalloc's 16 GiB on device 0");
		vrt_enginelog_free(&log);
	}
}

static void test_tgi_trtllm(void)
{
	struct vrt_enginelog log;
	const char *f = "tgi/v3.3.7.log";
	const struct vrt_enginelog_error *e;

	if (!load(&log, f)) {
		EQ(log.engine, VRT_ENGINELOG_TGI, "tgi/v3.3.7.log: engine tgi");
		value_is(&log, f, VRT_ELK_KV_TOKENS, -1, 60391);
		config_is(&log, f, VRT_ELC_TP, 2);
		config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 8192);
		config_is(&log, f, VRT_ELC_MAX_NUM_SEQS, 128);
		config_is(&log, f, VRT_ELC_MEM_FRACTION, 1000);
		config_is(&log, f, VRT_ELC_MAX_BATCH_TOKENS, 60391);
		ok(log.have_ready &&
		           log.ready_wall_ns == utc(2025, 6, 2, 10, 15, 33) +
		                                        190211000,
		   "tgi/v3.3.7.log: ready when the router Connected, at its "
		   "UTC time");
		e = fatal(&log);
		ok(e && e->kind == VRT_ELE_TORCH_OOM && e->device == 1 &&
		           e->requested_bytes == (uint64_t)(1.96 * GIB),
		   "tgi/v3.3.7.log: fatal: a request's OutOfMemoryError on "
		   "GPU 1, from the shard's traceback");
		vrt_enginelog_free(&log);
	}
	f = "tgi/v3.3.7-warmup.log";
	if (!load(&log, f)) {
		EQ(log.nerrors, 1, "tgi/v3.3.7-warmup.log: the prefill error "
		                   "printed twice is one");
		e = fatal(&log);
		ok(e && e->kind == VRT_ELE_PREFILL_TOKENS && e->tokens == 8242,
		   "tgi/v3.3.7-warmup.log: fatal: 8242 prefill tokens do not "
		   "fit");
		ok(!log.have_ready, "tgi/v3.3.7-warmup.log: never connected");
		vrt_enginelog_free(&log);
	}
	f = "trtllm/v1.1.log";
	if (!load(&log, f)) {
		EQ(log.engine, VRT_ENGINELOG_TRTLLM, "trtllm/v1.1.log: engine "
		                                     "trtllm");
		value_is(&log, f, VRT_ELK_WEIGHTS, -1, 15323 * MIB);
		value_is(&log, f, VRT_ELK_KV_BYTES, -1, 62.99 * GIB);
		value_is(&log, f, VRT_ELK_KV_TOKENS, -1, 294848);
		value_is(&log, f, VRT_ELK_TOTAL, -1, 79.10 * GIB);
		config_is(&log, f, VRT_ELC_BLOCK_SIZE, 64);
		config_is(&log, f, VRT_ELC_MAX_MODEL_LEN, 4096);
		config_is(&log, f, VRT_ELC_MAX_NUM_SEQS, 64);
		ok(log.have_ready, "trtllm/v1.1.log: ready");
		vrt_enginelog_free(&log);
	}
}

static void feed(struct vrt_enginelog *log, const char *s)
{
	vrt_enginelog_feed(log, s, strlen(s));
}

/* Edge cases on hand-made lines. */
static void test_noise(void)
{
	struct vrt_enginelog log;
	struct vrt_enginelog_opts o = {ref_ns(), 3600};
	const struct vrt_enginelog_error *e;
	char big[40000];
	uint64_t v = 0;

	vrt_enginelog_init(&log, &o);
	/* record's prefix wins over the engine's own time */
	feed(&log, "2025-12-02T09:15:00.250000Z out INFO 12-02 10:15:59 "
	           "[gpu_model_runner.py:1] Model loading took 1.5 GiB and 2 "
	           "seconds");
	/* the engine's local time (UTC+1) when record did not stamp it */
	feed(&log, "INFO 12-02 10:16:00 [gpu_worker.py:1] Available KV cache "
	           "memory: 3.25 GiB");
	/* colour codes everywhere, a docker compose prefix */
	feed(&log, "vllm_0  | \x1b[1;36m(EngineCore_DP0 pid=7)\x1b[0;0m "
	           "\x1b[32mINFO\x1b[0m \x1b[90m12-02 10:16:01\x1b[0m "
	           "GPU KV cache size: \x1b[1m1,024\x1b[0m tokens");
	/* a number out of range is not a fact */
	feed(&log, "Model loading took 99999999999999999999 GiB");
	/* a line far past the cap, the sentence near its start */
	memset(big, 'x', sizeof(big));
	memcpy(big, "Graph capturing finished in 3 secs, took 0.25 GiB ", 50);
	vrt_enginelog_feed(&log, big, sizeof(big));
	/* record's cut marker */
	feed(&log, "2025-12-02T09:20:00.000000Z err --- vramtrace: 1048576 "
	           "bytes (20 lines) of output cut here ---");
	/* a torch OOM from before PyTorch 2.1 */
	feed(&log, "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to "
	           "allocate 20.00 MiB (GPU 1; 15.78 GiB total capacity; "
	           "14.56 GiB already allocated; 3.44 MiB free; 14.75 GiB "
	           "reserved in total by PyTorch)");
	vrt_enginelog_end(&log);
	ok(log.nfacts >= 1 && log.facts[0].wall_ns ==
	                              utc(2025, 12, 2, 9, 15, 0) + 250000000,
	   "record's timestamp prefix gives the line's time");
	ok(log.nfacts >= 2 && log.facts[1].wall_ns == utc(2025, 12, 2, 9, 16, 0),
	   "an engine's local time moves to UTC by the time zone offset");
	ok(vrt_enginelog_value(&log, VRT_ELK_KV_TOKENS, -1, &v, NULL, NULL) &&
	           v == 1024 && log.facts[2].pid == 7,
	   "colour codes and prefixes stripped: 1,024 tokens from pid 7");
	ok(vrt_enginelog_value(&log, VRT_ELK_WEIGHTS, -1, &v, NULL, NULL) &&
	           v == (uint64_t)(1.5 * GIB),
	   "an out-of-range number is ignored (weights stay 1.5 GiB)");
	ok(vrt_enginelog_value(&log, VRT_ELK_GRAPH, -1, &v, NULL, NULL) &&
	           v == (uint64_t)(0.25 * GIB),
	   "a 40 KB line is read up to the cap");
	EQ(log.cut_bytes, 1048576, "record's cut marker counted");
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_TORCH_OOM &&
	           e->requested_bytes == (uint64_t)(20.0 * MIB) &&
	           e->device == 1 && e->free_bytes == (uint64_t)(3.44 * MIB) &&
	           e->reserved_bytes == (uint64_t)((14.75 - 14.56) * GIB),
	   "the pre-2.1 OutOfMemoryError with its numbers");
	ok(e && e->requested_tol > 5000 && e->requested_tol < 6000,
	   "a size printed with 2 decimals of MiB is known to 0.005 MiB "
	   "(%" PRIu64 ")",
	   e ? e->requested_tol : 0);
	vrt_enginelog_free(&log);
}

/* PyTorch's OutOfMemoryError with the cudaMallocAsync backend: one line
 * per number (c10/cuda/CUDAMallocAsyncAllocator.cpp), here behind vLLM's
 * worker prefix; printed again where it is re-raised, it counts once. */
static void test_torch_async(void)
{
	static const char *const lines[] = {
	        "torch.OutOfMemoryError: Allocation on device 0 would exceed "
	        "allowed memory. (out of memory)",
	        "Currently allocated     : 77.40 GiB",
	        "Requested               : 2.00 GiB",
	        "Device limit            : 80.00 GiB",
	        "Free (according to CUDA): 512.00 MiB",
	        "PyTorch limit (set by user-supplied memory fraction)",
	        "                        : 17179869184.00 GiB"};
	struct vrt_enginelog log;
	const struct vrt_enginelog_error *e;
	char buf[256];
	size_t i;
	int pass;

	vrt_enginelog_init(&log, NULL);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
			snprintf(buf, sizeof(buf),
			         "(Worker_TP0 pid=77) ERROR 12-02 10:15:00 "
			         "[multiproc_executor.py:671] %s",
			         lines[i]);
			feed(&log, buf);
		}
	vrt_enginelog_end(&log);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_TORCH_OOM && e->device == 0 &&
	           e->pid == 77 && e->requested_bytes == (uint64_t)(2 * GIB) &&
	           e->free_bytes == (uint64_t)(512 * MIB) &&
	           e->total_bytes == (uint64_t)(80 * GIB) &&
	           e->allocated_bytes == (uint64_t)(77.4 * GIB),
	   "cudaMallocAsync's OutOfMemoryError with its numbers");
	EQ(log.nerrors, 1, "cudaMallocAsync's error printed twice counts once");
	vrt_enginelog_free(&log);
}

/* llama-server's readiness: "model loaded", then the listening line that
 * follows it wins; the HTTP server up before the load is not ready. */
static void test_llama_ready(void)
{
	struct vrt_enginelog log;

	vrt_enginelog_init(&log, NULL);
	feed(&log, "main: HTTP server is listening, hostname: 127.0.0.1, port: "
	           "8080, http threads: 15");
	ok(!log.have_ready, "llama ready: not while the HTTP server waits");
	feed(&log, "main: model loaded");
	ok(log.have_ready && strstr(log.ready_text, "model loaded"),
	   "llama ready: the model is loaded");
	feed(&log, "main: server is listening on http://127.0.0.1:8080 - "
	           "starting the main loop");
	feed(&log, "srv  update_slots: all slots are idle");
	vrt_enginelog_end(&log);
	ok(log.have_ready && strstr(log.ready_text, "starting the main loop"),
	   "llama ready: the listening line wins (%s)", log.ready_text);
	vrt_enginelog_free(&log);
}

/* Random bytes and the engines' sentences cut at random places: nothing
 * crashes (the sanitizer builds run this too), numbers stay in range. */
static void test_garbage(void)
{
	static const char *const seeds[] = {
	        "Model loading took ", "GPU KV cache size: ",
	        "Tried to allocate 2.00 GiB. GPU ",
	        "max seq len (131072), (16.0 GiB KV cache is needed",
	        "llama_kv_cache: size = ", " buffer size = ",
	        "(EngineCore_DP0 pid=", "INFO 12-02 10:1", "[2025-12-02 10:15:",
	        "2024-10-16T08:51:10.5Z  INFO x: ", "{\"msg\":\"",
	        "KV Cache is allocated. #tokens: ", "    max_total_tokens: Some(",
	        "\x1b[", "current device: ", "Args {", "}"};
	static const char *const tails[] = {
	        "14.99 GiB and 2 seconds", "1,024 tokens", "1,0",
	        "99999999999999999999 GiB", "-5 GiB", "12 MiB",
	        "( 3 cells, 2 layers, 1/1 seqs)", "7", "", "Some(", ".5x"};
	struct vrt_enginelog log;
	char line[600];
	uint64_t x = 88172645463325252ull;
	size_t i, k, n, bad = 0;

	vrt_enginelog_init(&log, NULL);
	for (i = 0; i < 20000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = 0;
		for (k = 0; k < 1 + x % 4 && n < 400; k++) {
			const char *sd = seeds[(x >> (8 * k)) % (sizeof(seeds) /
			                                         sizeof(seeds[0]))];
			size_t len = strlen(sd);
			size_t cut = (x >> (16 + k)) & 1 ? len
			                                  : (x >> (20 + k)) % (len + 1);
			memcpy(line + n, sd, cut);
			n += cut;
			const char *tail = tails[(x >> (28 + k)) %
			                         (sizeof(tails) / sizeof(tails[0]))];
			size_t tl = strlen(tail);
			memcpy(line + n, tail, tl);
			n += tl;
			for (size_t j = 0; j < (x >> 40) % 8 && n < 590; j++)
				line[n++] = (char)("0123456789., GiBMK()x:%-\r\t"
				                   [(x >> (j * 7)) % 27]);
		}
		vrt_enginelog_feed(&log, line, n);
	}
	vrt_enginelog_end(&log);
	for (i = 0; i < log.nfacts; i++)
		bad += log.facts[i].value > (uint64_t)1e18;
	ok(log.lines == 20000 && !bad && log.nerrors <= VRT_ENGINELOG_MAX_ERRORS,
	   "20000 lines of cut sentences and random bytes: read, numbers in "
	   "range (%zu facts, %zu errors)",
	   log.nfacts, log.nerrors);
	vrt_enginelog_free(&log);
}


/* A log fed line by line (each string one line), then ended. */
static void feed_all(struct vrt_enginelog *log, const char *const *lines)
{
	vrt_enginelog_init(log, NULL);
	for (; *lines; lines++)
		feed(log, *lines);
	vrt_enginelog_end(log);
}

/* issue 34: today's llama-server ("srv    llama_server:" lines at the
 * default verbosity); the HTTP thread that listens before the load is
 * not ready, the model loaded line is, the listening line after it wins. */
static void test_llama_server_today(void)
{
	struct vrt_enginelog log;
	static const char *const lines[] = {
	        "srv    llama_server: HTTP server is listening, hostname: "
	        "127.0.0.1, port: 8080, http threads: 15",
	        "srv    llama_server: loading model",
	        "srv    load_model: loading model '/m/x.gguf'",
	        "srv    llama_server: model loaded",
	        "srv    llama_server: listening on http://127.0.0.1:8080",
	        "srv  update_slots: all slots are idle", NULL};

	vrt_enginelog_init(&log, NULL);
	feed(&log, lines[0]);
	ok(!log.have_ready, "today's llama-server: not ready while the HTTP "
	                    "thread waits for the load");
	feed(&log, lines[1]);
	feed(&log, lines[2]);
	feed(&log, lines[3]);
	ok(log.have_ready && log.ready_line == 4,
	   "today's llama-server: ready at 'llama_server: model loaded'");
	feed(&log, lines[4]);
	feed(&log, lines[5]);
	vrt_enginelog_end(&log);
	ok(log.have_ready && log.ready_line == 5 &&
	           strstr(log.ready_text, "listening on http"),
	   "today's llama-server: the listening line after it wins (%s)",
	   log.ready_text);
	EQ(log.engine, VRT_ENGINELOG_LLAMACPP, "today's llama-server: engine");
	ok(!strncmp(log.model, "/m/x.gguf", 9), "the model path (%s)", log.model);
	vrt_enginelog_free(&log);
}

/* issue 34: the KV cache's cells per stream times the streams; the fit
 * step's projection and the free memory before loading */
static void test_llama_memory(void)
{
	struct vrt_enginelog log;
	uint64_t v = 0;
	static const char *const lines[] = {
	        "llama_model_load_from_file_impl: using device CUDA0 (NVIDIA "
	        "GeForce RTX 4090) (0000:01:00.0) - 23564 MiB free",
	        "common_params_fit_impl:   - CUDA0 (NVIDIA GeForce RTX 4090):  "
	        "24080 total,  15126 used,   8438 free vs. target of   1024",
	        "common_params_fit_impl: projected to use 15126 MiB of device "
	        "memory vs. 23564 MiB of free device memory",
	        "llama_kv_cache: size = 6144.00 MiB (  8192 cells,  48 layers,  "
	        "4/4 seqs), K (f16): 3072.00 MiB, V (f16): 3072.00 MiB",
	        "llama_context: n_ubatch      = 512",
	        "llama_context: flash_attn    = enabled",
	        "common_memory_breakdown_print: |   - CUDA0 (RTX 4090)   | 24080 "
	        "= 8000 + (15126 = 8566 + 6144 + 412) +  954 |",
	        NULL};

	feed_all(&log, lines);
	value_is(&log, "llama memory", VRT_ELK_FREE, 0, 23564 * MIB);
	value_is(&log, "llama memory", VRT_ELK_TOTAL, 0, 24080 * MIB);
	value_is(&log, "llama memory", VRT_ELK_PROJECTED, 0, 15126 * MIB);
	value_is(&log, "llama memory", VRT_ELK_PROJECTED, -1, 15126 * MIB);
	value_is(&log, "llama memory", VRT_ELK_KV_TOKENS, -1, 8192 * 4);
	config_is(&log, "llama memory", VRT_ELC_SLOTS, 4);
	config_is(&log, "llama memory", VRT_ELC_UBATCH, 512);
	config_is(&log, "llama memory", VRT_ELC_FLASH_ATTN, 1);
	ok(vrt_enginelog_value(&log, VRT_ELK_TOTAL, 0, &v, NULL, NULL) &&
	           v == (uint64_t)(24080 * MIB),
	   "llama memory: the breakdown's total");
	vrt_enginelog_free(&log);
}

/* issue 29: what a failure was for, and whether the engine carried on */
static void test_meanings(void)
{
	struct vrt_enginelog log;
	const struct vrt_enginelog_error *e;
	static const char *const retry[] = {
	        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 1648.00 "
	        "MiB on device 0: cudaMalloc failed: out of memory",
	        "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of "
	        "size 1728053248",
	        "sched_reserve: compute buffer allocation failed, retrying "
	        "without pipeline parallelism",
	        "llama_context:      CUDA0 compute buffer size =   412.00 MiB",
	        "srv    llama_server: model loaded", NULL};
	static const char *const compute[] = {
	        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 4804.00 "
	        "MiB on device 0: cudaMalloc failed: out of memory",
	        "graph_reserve: failed to allocate compute buffers",
	        "llama_init_from_model: failed to initialize the context: "
	        "failed to allocate compute pp buffers",
	        NULL};
	static const char *const weights[] = {
	        "load_tensors: offloaded 65/65 layers to GPU",
	        "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 18739.22 "
	        "MiB on device 0: cudaMalloc failed: out of memory",
	        "alloc_tensor_range: failed to allocate CUDA0 buffer of size "
	        "19649302528",
	        "llama_model_load: error loading model: unable to allocate "
	        "CUDA0 buffer",
	        NULL};
	static const char *const host[] = {
	        "ggml_cuda_host_malloc: failed to allocate 417.66 MiB of "
	        "pinned memory: out of memory",
	        "ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate "
	        "buffer of size 42949672960",
	        "alloc_tensor_range: failed to allocate CPU buffer of size "
	        "42949672960",
	        "llama_model_load: error loading model: unable to allocate CPU "
	        "buffer",
	        NULL};
	static const char *const graph[] = {
	        "Traceback (most recent call last):",
	        "  File \"x/gpu_model_runner.py\", line 2415, in capture_model",
	        "  File \"torch/cuda/graphs.py\", line 186, in capture_end",
	        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
	        "512.00 MiB. GPU 1 has a total capacity of 44.53 GiB of which "
	        "301.19 MiB is free. Process 4242 has 10.00 GiB memory in use. "
	        "Including non-PyTorch memory, this process has 34.22 GiB memory "
	        "in use. Of the allocated memory 33.60 GiB is allocated by "
	        "PyTorch, with 1.31 GiB allocated in private pools (e.g., CUDA "
	        "Graphs), and 142.00 MiB is reserved by PyTorch but "
	        "unallocated.",
	        NULL};

	feed_all(&log, retry);
	ok(log.nerrors == 1 && log.errors[0].recovered && !log.have_fatal,
	   "sched_reserve's retry: the failure is recovered, nothing fatal");
	ok(log.have_ready, "sched_reserve's retry: the server then loads");
	vrt_enginelog_free(&log);

	feed_all(&log, compute);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_COMPUTE_ALLOC &&
	           e->phase == VRT_PHASE_profile &&
	           e->requested_bytes == (uint64_t)(4804.0 * MIB) &&
	           !vrt_enginelog_is_refusal(e->kind),
	   "compute buffers: their own kind (a batch's activations), with the "
	   "cudaMalloc's size, no context refusal");
	vrt_enginelog_free(&log);

	feed_all(&log, weights);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_WEIGHTS_ALLOC &&
	           e->phase == VRT_PHASE_weights &&
	           e->requested_bytes == 19649302528ull,
	   "a model buffer's failure is the weights', its exact size from "
	   "alloc_tensor_range");
	vrt_enginelog_free(&log);

	feed_all(&log, host);
	e = fatal(&log);
	ok(log.nerrors == 2 && log.errors[0].recovered && e &&
	           e->kind == VRT_ELE_HOST_ALLOC && !e->recovered &&
	           e->requested_bytes == 42949672960ull &&
	           !(e->have & VRT_ELH_DEVICE),
	   "pinned memory refused is recovered (pageable instead); ggml's CPU "
	   "buffer is the fatal host failure, its summary line no weights'");
	vrt_enginelog_free(&log);

	feed_all(&log, graph);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_TORCH_OOM &&
	           e->phase == VRT_PHASE_cuda_graph && e->device == 1,
	   "a traceback through capture_end is graph capture");
	ok(e && (e->have & VRT_ELH_PRIVATE) &&
	           e->private_bytes == (uint64_t)(1.31 * GIB + 0.5) &&
	           (e->have & VRT_ELH_PROCESS) && e->nothers == 1 &&
	           e->others[0].pid == 4242 &&
	           e->others[0].bytes == (uint64_t)(10 * GIB),
	   "PyTorch's message read whole: private pools, this process, the "
	   "other process it names");
	vrt_enginelog_free(&log);
}

/* issue 29: serving evidence and the engines' counts of requests */
static void test_serving(void)
{
	struct vrt_enginelog log;
	static const char *const vllm[] = {
	        "(APIServer pid=1) INFO:     Application startup complete.",
	        "(APIServer pid=1) INFO:     10.0.0.7:51422 - \"POST "
	        "/v1/chat/completions HTTP/1.1\" 200 OK",
	        "(APIServer pid=1) INFO:     10.0.0.9:40112 - \"GET /health "
	        "HTTP/1.1\" 200 OK",
	        "(APIServer pid=1) INFO 03-11 09:05:12 [loggers.py:123] Engine "
	        "000: Avg prompt throughput: 2210.9 tokens/s, Avg generation "
	        "throughput: 377.1 tokens/s, Running: 14 reqs, Waiting: 3 reqs, "
	        "GPU KV cache usage: 88.4%, Prefix cache hit rate: 2.7%",
	        NULL};
	static const char *const sglang[] = {
	        "[2026-02-03 10:02:11 TP0] Prefill batch. #new-seq: 16, "
	        "#new-token: 8192, #cached-token: 0, token usage: 0.02, "
	        "#running-req: 24, #queue-req: 31",
	        NULL};
	static const char *const gin[] = {
	        "[GIN] 2025/10/02 - 08:15:06 | 200 |    4.502113s |       "
	        "127.0.0.1 | POST     \"/api/chat\"",
	        "[GIN] 2025/10/02 - 08:15:07 | 200 |       1.2ms |       "
	        "127.0.0.1 | GET      \"/api/version\"",
	        NULL};
	static const char *const handler[] = {
	        "Traceback (most recent call last):",
	        "  File \"x/serving_chat.py\", line 171, in "
	        "create_chat_completion",
	        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
	        "2.25 GiB.",
	        NULL};

	feed_all(&log, vllm);
	ok(log.requests == 1 && log.have_running && log.running == 14,
	   "vLLM: a POST access line is a request, a health probe is not; "
	   "Running: 14 reqs is the engine's count");
	vrt_enginelog_free(&log);
	feed_all(&log, sglang);
	ok(log.requests == 16 && log.running == 40,
	   "SGLang: the batch's new sequences are requests, running are "
	   "running plus new (got %" PRIu64 ", %" PRIu64 ")",
	   log.requests, log.running);
	vrt_enginelog_free(&log);
	feed_all(&log, gin);
	ok(log.requests == 1, "Ollama: Gin's POST is a request, a version "
	                      "probe is not");
	vrt_enginelog_free(&log);
	feed_all(&log, handler);
	ok(log.have_fatal && log.errors[log.fatal].serving,
	   "an OOM raised in a request handler is serving, ready line or not");
	vrt_enginelog_free(&log);
}

/* issue 29: shapes read, each as its engine prints it */
static void test_shapes(void)
{
	struct vrt_enginelog log;
	const struct vrt_enginelog_error *e;
	static const char *const vllm_free[] = {
	        "ValueError: Free memory on device cuda:1 (12.18/23.56 GiB) on "
	        "startup is less than desired GPU memory utilization (0.92, "
	        "21.67 GiB). Decrease GPU memory utilization or reduce GPU "
	        "memory used by other processes.",
	        NULL};
	static const char *const vllm_usage[] = {
	        "INFO 05-20 15:00:24 [gpu_worker.py:331] Free memory on device "
	        "(47.03/47.37 GiB) on startup. Desired GPU memory utilization "
	        "is (0.9, 42.63 GiB). Actual usage is 15.27 GiB for weight, "
	        "1.40 GiB for peak activation, 0.33 GiB for non-torch memory, "
	        "and 0.54 GiB for CUDAGraph memory.",
	        "INFO 10-30 16:00:18 [worker.py:262] Memory profiling results: "
	        "total_gpu_memory=79.22GiB initial_memory_usage=15.42GiB "
	        "peak_torch_memory=16.22GiB non_torch_memory=0.58GiB "
	        "kv_cache_size=60.83GiB gpu_memory_utilization=0.98",
	        NULL};
	static const char *const sampler[] = {
	        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
	        "1.96 GiB. GPU 0 has a total capacity of 14.58 GiB of which "
	        "1.21 GiB is free.",
	        "RuntimeError: CUDA out of memory occurred when warming up "
	        "sampler with 256 dummy requests. Please try lowering "
	        "`max_num_seqs` or `gpu_memory_utilization` when initializing "
	        "the engine.",
	        NULL};
	static const char *const sglang[] = {
	        "[2026-02-03 10:00:14 TP0] Load weight end. elapsed=6.02 s, "
	        "type=LlamaForCausalLM, quant=fp8, avail mem=62.68 GB, mem "
	        "usage=15.53 GB.",
	        "ValueError: Loaded weights leave no GPU memory for the KV cache "
	        "under --mem-fraction-static=0.7. Raise --mem-fraction-static "
	        "above 0.781 (minimum viable = 1 - available/pre = 0.7803).",
	        NULL};
	static const char *const trt[] = {
	        "[11/20/2025-09:00:20] [TRT-LLM] [RANK 1] [I] Peak memory during "
	        "memory usage profiling (torch + non-torch): 16.83 GiB, "
	        "available KV cache memory when calculating max tokens: 62.40 "
	        "GiB, fraction is set 0.99, kv size is 131072. device total "
	        "memory 79.19 GiB",
	        "[11/20/2025-09:00:21] [TRT-LLM] [RANK 1] [E] Executor creation "
	        "failed due to insufficient GPU memory.",
	        "[11/20/2025-09:00:21] [TRT-LLM] [RANK 1] [E] The following "
	        "component could not be created: KV cache",
	        NULL};
	static const char *const ollama[] = {
	        "time=2025-10-02T08:15:00.001Z level=INFO source=memory.go:356 "
	        "msg=\"offload to cuda\" layers.requested=-1 layers.offload=33 "
	        "memory.required.full=\"21.9 GiB\"",
	        "time=2025-10-02T08:15:00.012Z level=INFO source=server.go:376 "
	        "msg=\"starting llama server\" cmd=\"/usr/bin/ollama runner "
	        "--model /m --ctx-size 8192 --parallel 1 --port 38021\"",
	        "time=2025-10-02T08:15:03.004Z level=INFO source=server.go:594 "
	        "msg=\"llama runner started in 2.99 seconds\"",
	        "time=2025-10-02T08:16:38.112Z level=DEBUG source=cache.go:104 "
	        "msg=\"loading cache slot\" id=0 cache=0 prompt=90210 used=0",
	        "time=2025-10-02T08:16:40.000Z level=ERROR source=sched.go:489 "
	        "msg=\"error loading llama server\" error=\"llama runner process "
	        "has terminated: cudaMalloc failed: out of memory\"",
	        NULL};
	uint64_t v = 0;

	feed_all(&log, vllm_free);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_FREE_BELOW_UTIL && e->device == 1 &&
	           e->free_bytes == (uint64_t)(12.18 * GIB),
	   "vLLM 0.11's start-up check names its device (cuda:1)");
	vrt_enginelog_free(&log);
	feed_all(&log, vllm_usage);
	value_is(&log, "vLLM usage", VRT_ELK_FREE, -1, 47.03 * GIB);
	value_is(&log, "vLLM usage", VRT_ELK_GRAPH, -1, 0.54 * GIB);
	value_is(&log, "vLLM usage", VRT_ELK_KV_BYTES, -1, 60.83 * GIB);
	value_is(&log, "vLLM usage", VRT_ELK_TOTAL, -1, 79.22 * GIB);
	vrt_enginelog_free(&log);
	feed_all(&log, sampler);
	e = fatal(&log);
	ok(log.nerrors == 1 && e && e->kind == VRT_ELE_SAMPLER_WARMUP &&
	           e->count == 256 && e->requested_bytes &&
	           e->phase == VRT_PHASE_profile,
	   "vLLM's sampler warm-up: one error, the PyTorch error's numbers");
	config_is(&log, "sampler warm-up", VRT_ELC_MAX_NUM_SEQS, 256);
	vrt_enginelog_free(&log);
	feed_all(&log, sglang);
	value_is(&log, "SGLang 0.5", VRT_ELK_WEIGHTS, 0, 15.53 * GIB);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_MEM_FRACTION &&
	           e->mem_fraction_milli == 700 &&
	           e->suggested_fraction_milli == 781,
	   "SGLang: the weights leave no KV room; its floor read");
	vrt_enginelog_free(&log);
	feed_all(&log, trt);
	e = fatal(&log);
	ok(log.engine == VRT_ENGINELOG_TRTLLM && e &&
	           e->kind == VRT_ELE_EXECUTOR &&
	           e->phase == VRT_PHASE_kv_cache && e->device == 1 &&
	           e->requested_bytes == (uint64_t)(62.40 * GIB),
	   "TensorRT-LLM: [RANK 1] read, the KV cache component's size from "
	   "its estimate");
	vrt_enginelog_free(&log);
	feed_all(&log, ollama);
	e = fatal(&log);
	ok(log.engine == VRT_ENGINELOG_OLLAMA && log.have_ready &&
	           log.prompt_tokens == 90210 && e &&
	           e->kind == VRT_ELE_RUNNER_DIED &&
	           vrt_enginelog_value(&log, VRT_ELK_PROJECTED, -1, &v, NULL,
	                               NULL) &&
	           strstr(log.command, "--ctx-size 8192"),
	   "Ollama: its estimate, the runner's command, started, the prompt, "
	   "the runner's death of memory");
	vrt_enginelog_free(&log);
}

/* issue 29: the rest of the shapes docs/logs.md lists, each read */
static void test_rest(void)
{
	struct vrt_enginelog log;
	const struct vrt_enginelog_error *e;
	static const char *const v0[] = {
	        "INFO 10-30 16:00:18 async_llm_engine.py:208] Added request "
	        "chat-4f1e.",
	        "INFO 10-30 16:00:19 async_llm_engine.py:208] Added request "
	        "chat-90ab.",
	        "INFO 10-30 16:00:19 metrics.py:351] Avg prompt throughput: "
	        "812.0 tokens/s, Avg generation throughput: 40.1 tokens/s, "
	        "Running: 2 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV "
	        "cache usage: 31.0%, CPU KV cache usage: 0.0%.",
	        NULL};
	static const char *const nokv[] = {
	        "ValueError: No available memory for the cache blocks. Try "
	        "increasing `gpu_memory_utilization` when initializing the "
	        "engine.",
	        NULL};
	static const char *const layout[] = {
	        "time=2025-10-02T08:15:00.012Z level=INFO source=server.go:1 "
	        "msg=\"starting runner\" cmd=\"/usr/bin/ollama runner --model "
	        "/m --port 41221\"",
	        "time=2025-10-02T08:15:01.200Z level=ERROR source=sched.go:2 "
	        "msg=\"memory layout cannot be allocated\" memory.InputWeights="
	        "\"411 MiB\"",
	        NULL};
	static const char *const runner[] = {
	        "time=2025-10-02T08:15:01.200Z level=ERROR source=runner.go:3 "
	        "msg=\"insufficient memory - required allocations\" "
	        "gpu=\"20.1 GiB\"",
	        NULL};
	static const char *const cuda[] = {
	        "Traceback (most recent call last):",
	        "  File \"/opt/app/server.py\", line 88, in run_batch",
	        "RuntimeError: CUDA error: out of memory", NULL};
	static const char *const hip[] = {
	        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate "
	        "4.00 GiB. GPU 1 has a total capacity of 191.98 GiB of which "
	        "1.20 GiB is free.",
	        NULL};

	feed_all(&log, v0);
	ok(log.engine == VRT_ENGINELOG_VLLM && log.requests_by[1] == 2 &&
	           log.have_running && log.running == 2,
	   "vLLM V0: Added request lines count requests, its metrics the "
	   "running ones");
	vrt_enginelog_free(&log);
	feed_all(&log, nokv);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_NO_KV_MEMORY &&
	           vrt_enginelog_is_refusal(e->kind),
	   "vLLM V0: no memory for the cache blocks is a refusal");
	vrt_enginelog_free(&log);
	feed_all(&log, layout);
	e = fatal(&log);
	ok(log.engine == VRT_ENGINELOG_OLLAMA && e &&
	           e->kind == VRT_ELE_OOM_OTHER && e->phase == VRT_PHASE_weights,
	   "Ollama: a memory layout that cannot be allocated is a load "
	   "failure of the weights");
	vrt_enginelog_free(&log);
	feed_all(&log, runner);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_OOM_OTHER && e->phase == VRT_PHASE_weights,
	   "Ollama's runner: insufficient memory for its allocations");
	vrt_enginelog_free(&log);
	feed_all(&log, cuda);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_CUDA_ERROR && e->serving,
	   "RuntimeError: CUDA error: out of memory under run_batch: a "
	   "failed device call (size not printed) while serving");
	vrt_enginelog_free(&log);
	feed_all(&log, hip);
	e = fatal(&log);
	ok(e && e->kind == VRT_ELE_TORCH_OOM && e->device == 1 &&
	           e->requested_bytes == (uint64_t)(4 * GIB) &&
	           e->total_bytes > (uint64_t)(191.97 * GIB) &&
	           e->total_bytes < (uint64_t)(191.99 * GIB),
	   "PyTorch on ROCm: HIP out of memory read as CUDA's");
	vrt_enginelog_free(&log);
}

/* issue 29: logs as people paste them */
static void test_pasted(void)
{
	struct vrt_enginelog log;
	static const char *const noisy[] = {
	        "Here is the log:",
	        "> ```text",
	        "> [pod/vllm-0/vllm] 2026-03-11T09:05:12.000000001Z "
	        "(RayWorkerWrapper pid=4122, ip=10.0.0.12) INFO 03-11 09:05:12 "
	        "[gpu_model_runner.py:1801] Model loading took 18.71 GiB and "
	        "48.1 seconds",
	        "> Mar 11 09:05:14 gpu-node-3 vllm-serve[4121]: torch.OutOf"
	        "MemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
	        "GPU 0 has a total capacity of 44.53 GiB of which 1.00 GiB is "
	        "free.",
	        "(RayWorkerWrapper pid=4123, ip=10.0.0.12) torch.OutOfMemoryError"
	        ": CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
	        "total capacity of 44.53 GiB of which 1.00 GiB is free. "
	        "[repeated 1x across cluster]",
	        "> ```",
	        NULL};
	static const char *const wrapped[] = {
	        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
	        "2.00 GiB. GPU 0",
	        " has a total capacity of 79.19 GiB of which 1.50 GiB is free. "
	        "Of the allocated",
	        "memory 70.00 GiB is allocated by PyTorch, and 1.00 GiB is "
	        "reserved by PyTorch but unallocated.",
	        NULL};

	feed_all(&log, noisy);
	value_is(&log, "pasted", VRT_ELK_WEIGHTS, -1, 18.71 * GIB);
	ok(log.nerrors == 1 && log.have_fatal &&
	           log.errors[0].requested_bytes == 2 * (uint64_t)GIB,
	   "pasted: fences, quotes, kubectl, journald and Ray prefixes off; "
	   "Ray's fold of the other worker's copy is one error");
	vrt_enginelog_free(&log);
	feed_all(&log, wrapped);
	ok(log.nerrors == 1 && (log.errors[0].have & VRT_ELH_RESERVED) &&
	           log.errors[0].reserved_bytes == (uint64_t)GIB &&
	           log.errors[0].free_bytes == (uint64_t)(1.5 * GIB) &&
	           log.errors[0].line == 1,
	   "a message wrapped over three lines is read as one, at its first "
	   "line");
	vrt_enginelog_free(&log);
}

int main(int argc, char **argv)
{
	data_dir = argc > 1 ? argv[1] : "tests/data";
	test_vllm_v07();
	test_vllm_v011();
	test_vllm_refusal();
	test_sglang();
	test_llama();
	test_tgi_trtllm();
	test_noise();
	test_torch_async();
	test_llama_ready();
	test_llama_server_today();
	test_llama_memory();
	test_meanings();
	test_serving();
	test_shapes();
	test_pasted();
	test_rest();
	test_garbage();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
