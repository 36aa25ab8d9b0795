/*
 * Unit tests of diagnose.c on hand-made traces (replayed by replay.c):
 * one run per verdict with the exact verdict, detail, stage and evidence
 * numbers; the engine flags read from command lines; and the model
 * arithmetic (model.c) as the diagnosis states it, from the configs of
 * tests/data and the engine's flags in the command line. TAP output.
 * argv[1]: the tests/data directory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "load.h"
#include "model.h"
#include "replay.h"

#include "tap.h"
#define STR(a, b, name)                                                        \
	ok(!strcmp((a), (b)), "%s (got '%s', want '%s')", name, (a), (b))

#define GiB (1ull << 30)
#define MiB (1ull << 20)

static struct vrt_trace t;
/* The events of the trace being built, fed to the replay in one batch. */
static struct vrt_event *evs;
static size_t nev;
static struct vrt_replay r;
static struct vrt_diagnosis dg;
static struct vrt_failinfo fails[8];
static size_t nfail;
static struct vrt_process proc;
static struct vrt_device devs[4];
static char *argv_vllm[] = {
        "vllm", "serve",          "m",  "--max-model-len",
        "8192", "--max-num-seqs", "16", "--gpu-memory-utilization",
        "0.9"};

static void setup(size_t ndev, uint64_t total)
{
	size_t i;

	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	memset(&proc, 0, sizeof(proc));
	memset(devs, 0, sizeof(devs));
	nfail = 0;
	proc.pid = 42;
	proc.argv = argv_vllm;
	proc.argc = sizeof(argv_vllm) / sizeof(argv_vllm[0]);
	t.procs = &proc;
	t.nprocs = 1;
	for (i = 0; i < ndev; i++) {
		devs[i].total_bytes = total;
		devs[i].have_total = 1;
	}
	t.devices = devs;
	t.ndevices = ndev;
	t.fails = fails;
	t.nfails = 8;
	free(evs);
	evs = calloc(256, sizeof(*evs));
	nev = 0;
}

static struct vrt_event *ev(int kind, unsigned api, int dev, uint64_t addr,
                            uint64_t size, uint64_t aux, uint32_t phase)
{
	struct vrt_event *e = &evs[nev];
	e->ts = (int64_t)nev * 1000;
	e->kind = (uint8_t)kind;
	e->api = (uint16_t)api;
	e->device = dev;
	e->addr = addr;
	e->size = size;
	e->aux = aux;
	e->phase = phase;
	nev++;
	return e;
}

static void alloc(int dev, uint64_t addr, uint64_t size, uint32_t phase)
{
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, dev, addr, size, 0, phase);
}

static void probe(int dev, uint64_t free_b, uint64_t total)
{
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, dev, free_b, total, 0, 0);
}

/* An out-of-memory failure with the driver's free/total. */
static void oom(unsigned api, int dev, uint64_t size, uint64_t free_b,
                uint64_t total, uint32_t phase)
{
	struct vrt_event *e = ev(VRT_EV_FAIL, api, dev, 0, size,
	                         2 /* OUT_OF_MEMORY */, phase);
	e->flags = VRT_EV_HAVE_INFO;
	e->extra = (uint32_t)nfail;
	fails[nfail].free_bytes = free_b;
	fails[nfail].total_bytes = total;
	nfail++;
}

static void net(int op, uint64_t fd)
{
	ev(VRT_EV_NET, 0, -1, fd, 8000, (uint64_t)op, 0);
}

static void diagnose(const struct vrt_model *cfg)
{
	ok(vrt_replay_begin(&r, &t) == 0 &&
	           vrt_replay_feed(&r, &t, evs, nev) == 0 &&
	           vrt_replay_end(&r, &t) == 0,
	   "replay runs");
	vrt_diagnose_run(&dg, &t, &r, cfg);
}

static const struct vrt_diag_evidence *find(const char *key)
{
	size_t i;

	for (i = 0; i < dg.nevidence; i++)
		if (!strcmp(dg.evidence[i].key, key))
			return &dg.evidence[i];
	return NULL;
}

static uint64_t value(const char *key)
{
	const struct vrt_diag_evidence *e = find(key);
	return e ? e->value : (uint64_t)-1;
}

static int has_action(const char *needle)
{
	size_t i;

	for (i = 0; i < dg.nactions; i++)
		if (strstr(dg.actions[i], needle))
			return 1;
	return 0;
}

static void teardown(void)
{
	vrt_replay_free(&r);
	free(evs);
	evs = NULL;
}

/* The vLLM shape on an 80 GiB card: 14 GiB weights, 57.5 GiB KV, then
 * requests of 2 GiB each; the fifth at once fails. */
static void test_concurrency(void)
{
	int i;

	setup(1, 80 * GiB);
	probe(0, 80 * GiB, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 57 * GiB + 512 * MiB, VRT_PHASE_kv_cache);
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10);
	alloc(0, 0x3000, 2 * GiB, VRT_PHASE_forward);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x3000, 0, 0, 0);
	net(VRT_NET_CLOSE, 10);
	for (i = 0; i < 8; i++)
		net(VRT_NET_ACCEPT, 20 + (uint64_t)i);
	for (i = 0; i < 4; i++)
		alloc(0, 0x4000 + (uint64_t)i * 0x100, 2 * GiB,
		      VRT_PHASE_forward);
	oom(VRT_API_cuMemAlloc_v2, 0, 2 * GiB, 512 * MiB, 80 * GiB,
	    VRT_PHASE_forward);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "concurrency",
	    "concurrency: verdict");
	STR(dg.detail, "overlapping_requests", "concurrency: detail");
	STR(dg.stage, "request", "concurrency: stage");
	EQ(dg.device, 0, "concurrency: device 0");
	EQ(value("single_request_peak_bytes"), 2 * GiB,
	   "concurrency: one request's peak");
	EQ(value("request_headroom_bytes"), 8 * GiB + 512 * MiB,
	   "concurrency: headroom for requests");
	EQ(value("requests_that_fit"), 4, "concurrency: 4 requests fit");
	ok(has_action("vLLM: cap concurrent sequences: --max-num-seqs 4"),
	   "concurrency: action names vLLM's --max-num-seqs 4 (got '%s')",
	   dg.actions[0]);
	ok(dg.ncosts && strstr(dg.costs[0], "throughput"),
	   "concurrency: cost is throughput");
	ok(dg.nverify && strstr(dg.verify[0], "vramtrace compare"),
	   "concurrency: verify with vramtrace compare");
	teardown();
}

static void test_kv_context(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 62 * GiB, VRT_PHASE_kv_cache);
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10);
	oom(VRT_API_cuMemAlloc_v2, 0, 8 * GiB, 4 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "kv_cache: verdict");
	STR(dg.detail, "context_too_long", "kv_cache: detail");
	STR(dg.stage, "request", "kv_cache: stage");
	EQ(value("single_request_bytes"), 8 * GiB, "kv_cache: one request");
	/* 8192 x 4 GiB / 8 GiB = 4096 tokens; 0.90 - (4 GiB / 80 GiB) */
	ok(has_action("--max-model-len 4096 (was 8192)"),
	   "kv_cache: --max-model-len 4096 (got '%s')", dg.actions[0]);
	ok(has_action("--gpu-memory-utilization 0.84 (was 0.90"),
	   "kv_cache: --gpu-memory-utilization 0.84 (got '%s')",
	   dg.nactions > 1 ? dg.actions[1] : "");
	teardown();
}

static void test_kv_reserve(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 40 * GiB, VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 45 * GiB, 40 * GiB, 80 * GiB,
	    VRT_PHASE_kv_cache);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "kv reserve: verdict");
	STR(dg.detail, "kv_reserve", "kv reserve: detail");
	STR(dg.stage, "load", "kv reserve: stage");
	EQ(value("kv_reserve_requested_bytes"), 45 * GiB,
	   "kv reserve: requested");
	teardown();
}

static void test_weights(void)
{
	int i;

	setup(1, 24 * GiB);
	for (i = 0; i < 11; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 4 * GiB, 2 * GiB, 24 * GiB,
	    VRT_PHASE_weights);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "weights",
	    "weights: verdict");
	STR(dg.detail, "card_too_small", "weights: detail");
	STR(dg.stage, "load", "weights: stage");
	EQ(value("weights_loaded_bytes"), 26 * GiB,
	   "weights: 22 GiB loaded + 4 GiB requested");
	ok(has_action("--tensor-parallel-size 2"),
	   "weights: action --tensor-parallel-size 2");
	teardown();
}

static void test_not_sharded(void)
{
	int i;

	setup(2, 80 * GiB);
	probe(0, 80 * GiB, 80 * GiB);
	probe(1, 80 * GiB, 80 * GiB);
	for (i = 0; i < 25; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 3 * GiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 3 * GiB, 5 * GiB - 1, 80 * GiB,
	    VRT_PHASE_weights);
	/* Shortfall is 1 byte: the 5 GiB the driver had must not be
	 * mistaken for other processes. */
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "weights",
	    "not sharded: verdict");
	STR(dg.detail, "not_sharded", "not sharded: detail");
	EQ(value("weights_share_percent"), 100,
	   "not sharded: device 0 holds 100%% of the weights");
	EQ(value("idle_device_peak_bytes"), 0,
	   "not sharded: device 1 holds nothing");
	teardown();
}

static void test_host(void)
{
	setup(1, 80 * GiB);
	ev(VRT_EV_ALLOC, VRT_API_cuMemHostAlloc, -1, 0x9000, 2 * GiB, 0, 0);
	oom(VRT_API_cuMemHostAlloc, -1, 128 * MiB, 0, 0, 0);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "host_memory",
	    "host: verdict");
	STR(dg.detail, "pinned_alloc_failed", "host: detail");
	EQ(dg.device, -1, "host: no device");
	EQ(value("pinned_peak_bytes"), 2 * GiB, "host: pinned peak");
	teardown();
}

static struct vrt_sample samples[3];
static struct vrt_sample_pid spids[3];

static void test_host_samples(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 1 * GiB, VRT_PHASE_weights);
	memset(samples, 0, sizeof(samples));
	samples[0].kind = VRT_SAMPLE_HOST;
	samples[0].device = -1;
	samples[0].used = 60 * GiB;
	samples[0].total = 100 * MiB; /* MemAvailable */
	t.samples = samples;
	t.nsamples = 1;
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "host_memory",
	    "host samples: MemAvailable near 0 is host_memory");
	STR(dg.detail, "host_ram_exhausted", "host samples: detail");
	EQ(value("mem_available_min_bytes"), 100 * MiB,
	   "host samples: MemAvailable minimum");
	teardown();
}

static void test_other(void)
{
	setup(1, 80 * GiB);
	probe(0, 50 * GiB, 80 * GiB); /* 30 GiB used before us */
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 57 * GiB, 36 * GiB, 80 * GiB,
	    VRT_PHASE_kv_cache);
	memset(samples, 0, sizeof(samples));
	memset(spids, 0, sizeof(spids));
	samples[0].kind = VRT_SAMPLE_DEVICE;
	samples[0].device = 0;
	samples[0].used = 44 * GiB;
	samples[0].total = 80 * GiB;
	samples[0].first_pid = 0;
	samples[0].npids = 2;
	spids[0].pid = 42; /* this run: not "other" */
	spids[0].used_bytes = 14 * GiB;
	spids[1].pid = 4242;
	spids[1].used_bytes = 30 * GiB;
	t.samples = samples;
	t.nsamples = 1;
	t.sample_pids = spids;
	t.nsample_pids = 2;
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "other_processes",
	    "other: verdict");
	STR(dg.stage, "load", "other: stage");
	EQ(value("other_processes_bytes"), 30 * GiB, "other: 30 GiB");
	EQ(value("other_pid"), 4242, "other: PID 4242 named");
	EQ(dg.nother_pids, 1, "other: only the foreign PID");
	EQ(value("shortfall_bytes"), 21 * GiB, "other: 21 GiB short");
	ok(!has_action("kill"), "other: never suggests killing");
	teardown();
}

static void test_none(void)
{
	setup(2, 80 * GiB);
	alloc(0, 0x1000, 30 * GiB, VRT_PHASE_weights);
	alloc(1, 0x2000, 10 * GiB, VRT_PHASE_kv_cache);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "none", "none: verdict");
	EQ(dg.ndevices, 2, "none: two devices");
	EQ(dg.devices[0].headroom_bytes, 50 * GiB, "none: headroom dev 0");
	EQ(dg.devices[1].headroom_bytes, 70 * GiB, "none: headroom dev 1");
	EQ(value("headroom_bytes"), 50 * GiB, "none: evidence headroom");
	teardown();
}

static void test_flags(void)
{
	struct vrt_diag_flags f;
	char *sg[] = {"python3",
	              "-m",
	              "sglang.launch_server",
	              "--context-length",
	              "32768",
	              "--max-running-requests",
	              "64",
	              "--mem-fraction-static=0.85",
	              "--tp",
	              "4"};
	char *ll[] = {"/opt/llama-server",
	              "-m",
	              "x.gguf",
	              "-c",
	              "4096",
	              "-np",
	              "8",
	              "-ngl",
	              "99"};
	char *tg[] = {"text-generation-launcher",
	              "--max-total-tokens",
	              "2048",
	              "--max-concurrent-requests",
	              "128",
	              "--num-shard",
	              "2"};
	char *bare[] = {"./serve", "--max-num-seqs", "12",
	                "--tensor-parallel-size", "2"};

	memset(&f, 0, sizeof(f));
	vrt_diagnose_flags(&f, sg, 10);
	EQ(f.engine, VRT_ENGINE_SGLANG, "flags: sglang recognised");
	EQ(f.max_model_len, 32768, "flags: --context-length");
	EQ(f.max_num_seqs, 64, "flags: --max-running-requests");
	EQ(f.mem_util_milli, 850, "flags: --mem-fraction-static=0.85");
	EQ(f.tp, 4, "flags: --tp");
	memset(&f, 0, sizeof(f));
	vrt_diagnose_flags(&f, ll, 9);
	EQ(f.engine, VRT_ENGINE_LLAMACPP, "flags: llama-server recognised");
	EQ(f.max_model_len, 4096, "flags: -c");
	EQ(f.max_num_seqs, 8, "flags: -np");
	EQ(f.ngl, 99, "flags: -ngl");
	memset(&f, 0, sizeof(f));
	vrt_diagnose_flags(&f, tg, 7);
	EQ(f.engine, VRT_ENGINE_TGI, "flags: TGI recognised");
	EQ(f.max_total_tokens, 2048, "flags: --max-total-tokens");
	EQ(f.max_num_seqs, 128, "flags: --max-concurrent-requests");
	memset(&f, 0, sizeof(f));
	vrt_diagnose_flags(&f, bare, 5);
	EQ(f.engine, VRT_ENGINE_VLLM, "flags: vLLM by its flags alone");
	EQ(f.tp, 2, "flags: --tensor-parallel-size");
}

/* ---- the model arithmetic in the diagnosis ----------------------------- */

static int read_cfg(const char *dir, const char *name, struct vrt_model *m)
{
	char path[4096], msg[600];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (vrt_model_read(m, path, NULL, msg, sizeof(msg))) {
		ok(0, "%s for the diagnosis: %s", name, msg);
		return -1;
	}
	return 0;
}

static const char *text_of(const char *key)
{
	const struct vrt_diag_evidence *e = find(key);
	return e ? e->text : "";
}

/* A run on one device of total bytes with weights and a KV reserve,
 * diagnosed with the config dir/name; argv (when not NULL) replaces the
 * vLLM command line. -1 when the config does not read. */
static int model_run(const char *dir, const char *name, struct vrt_model *c,
                     uint64_t total, uint64_t weights, uint64_t kv, char **argv,
                     size_t argc)
{
	if (read_cfg(dir, name, c))
		return -1;
	setup(1, total);
	if (argv) {
		proc.argv = argv;
		proc.argc = argc;
	}
	alloc(0, 0x1000, weights, VRT_PHASE_weights);
	alloc(0, 0x2000, kv, VRT_PHASE_kv_cache);
	diagnose(c);
	return 0;
}

/* Llama-3-8B shape, 16 GiB KV reserve and 8 GiB of headroom at
 * --max-model-len 8192; DeepSeek-R1 under vLLM with 8 tensor-parallel
 * ranks and an fp8 cache (the MLA latent on every rank); Jamba's Mamba
 * state per sequence. */
static void test_model_in_diagnosis(const char *dir)
{
	static char *argv_ds[] = {"vllm",
	                          "serve",
	                          "deepseek-ai/DeepSeek-R1",
	                          "--max-model-len",
	                          "32768",
	                          "--tensor-parallel-size",
	                          "8",
	                          "--kv-cache-dtype",
	                          "fp8",
	                          "--block-size",
	                          "64"};
	struct vrt_model *c = malloc(sizeof(*c));
	uint64_t per_tok = 61ull * 576 * 8;

	if (!c || model_run(dir, "llama3-8b.config.json", c, 40 * GiB, 16 * GiB,
	                    16 * GiB, NULL, 0))
		goto out;
	EQ(dg.model.have, 1, "model: arithmetic present");
	EQ(dg.model.kv_reserve_tokens, 131072,
	   "model: 16 GiB / 128 KiB = 131072 tokens in the reserve");
	EQ(dg.model.max_tokens, 196608,
	   "model: 24 GiB / 128 KiB = 196608 tokens with the headroom");
	EQ(dg.model.context_len, 8192, "model: context from --max-model-len");
	EQ(dg.model.max_concurrency, 24, "model: 24 sequences of 8192");
	EQ(dg.model.expected_weight_bytes, 16060522496ull,
	   "model: expected weight bytes");
	EQ(value("kv_bytes_per_token"), 131072, "model: evidence");
	ok(strstr(text_of("kv_bytes_per_token"),
	          "32 full layers x 8 KV heads x (128 + 128) x 2 B bf16") !=
	           NULL,
	   "model: the formula in the evidence ('%s')",
	   text_of("kv_bytes_per_token"));
	ok(strstr(text_of("expected_weight_bytes"),
	          "8.03B parameters (8.03B active per token)") != NULL,
	   "model: parameters in the evidence ('%s')",
	   text_of("expected_weight_bytes"));
	teardown();

	if (model_run(dir, "models/deepseek-r1.json", c, 140 * GiB, 80 * GiB,
	              16 * GiB, argv_ds, sizeof(argv_ds) / sizeof(argv_ds[0])))
		goto out;
	EQ(dg.model.tp, 8, "model: --tensor-parallel-size 8");
	EQ(dg.model.block_tokens, 64, "model: --block-size 64");
	EQ(value("kv_bytes_per_token"), per_tok,
	   "model: the fp8 latent on 8 ranks");
	ok(strstr(text_of("kv_bytes_per_token"),
	          "61 MLA layers x 576 latent x 1 B fp8; copied on every "
	          "tensor-parallel rank") != NULL,
	   "model: MLA in the evidence ('%s')", text_of("kv_bytes_per_token"));
	EQ(dg.model.kv_reserve_tokens, 16 * GiB / per_tok,
	   "model: the reserve in tokens at 32768");
	ok(!strcmp(dg.model.desc.kv_from, "--kv-cache-dtype"),
	   "model: the engine's KV type");
	teardown();

	if (model_run(dir, "models/jamba-1.5-mini.json", c, 80 * GiB, 40 * GiB,
	              8 * GiB, NULL, 0))
		goto out;
	EQ(value("state_bytes_per_sequence"), 8716288,
	   "model: Mamba state per sequence in the evidence");
	EQ(dg.model.max_concurrency, 40 * GiB / (4ull * 4096 * 8192 + 8716288),
	   "model: sequences of 8192 with their state, in 40 GiB");
	teardown();
out:
	free(c);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/data";

	test_concurrency();
	test_kv_context();
	test_kv_reserve();
	test_weights();
	test_not_sharded();
	test_host();
	test_host_samples();
	test_other();
	test_none();
	test_flags();
	test_model_in_diagnosis(dir);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
