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

#include "enginelog.h"
#include "tap.h"
#include "wallclock.h"

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
	test_garbage();
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
