/*
 * Unit tests of diagnose.c on hand-made traces (replayed by replay.c):
 * one run per verdict with the exact verdict, detail, stage and evidence
 * numbers; and modelcfg.c's
 * arithmetic on the two configs of tests/data (Llama-3-8B: grouped-query
 * attention; Falcon-7B: multi-query), checked against hand-computed
 * values. TAP output. argv[1]: the tests/data directory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "load.h"
#include "modelcfg.h"
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

static void diagnose(const struct vrt_modelcfg *cfg)
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

/* ---- model configs --------------------------------------------------------
 * Llama-3-8B (bf16): KV/token = 2 x 32 x 8 x 128 x 2 = 131072 B.
 *   per layer: q,o 2 x 4096 x 4096 = 33554432; k,v 2 x 4096 x 1024 =
 *   8388608; MLP 3 x 4096 x 14336 = 176160768; norms 8192 -> 218112000;
 *   x 32 = 6979584000; embeddings + lm_head 2 x 128256 x 4096 =
 *   1050673152; final norm 4096 -> 8030261248 parameters (the published
 *   8,030,261,248), 16060522496 bytes in bf16.
 * Falcon-7B (bf16, multi_query): head_dim 4544 / 71 = 64, 1 KV head:
 *   KV/token = 2 x 32 x 1 x 64 x 2 = 8192 B (4096 in fp8).
 *   per layer: q,o 2 x 4544 x 4544 = 41295872; k,v 2 x 4544 x 64 =
 *   581632; MLP 2 x 4544 x 18176 = 165183488; norms 9088 -> 207070080;
 *   x 32 = 6626242560; tied embeddings 65024 x 4544 = 295469056; final
 *   norm 4544 -> 6921716160 (published: 6.92B).
 */
static int read_cfg(const char *dir, const char *name, const char *kv,
                    struct vrt_modelcfg *c, char *msg, size_t msgsz)
{
	struct vrt_load_error err;
	char path[4096], *text = NULL;
	size_t len = 0;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (vrt_load_text(path, &text, &len, &err)) {
		snprintf(msg, msgsz, "%s", err.msg);
		return -2;
	}
	rc = vrt_modelcfg_parse(c, text, len, kv, msg, msgsz);
	free(text);
	return rc;
}

static void test_model_configs(const char *dir)
{
	struct vrt_modelcfg c;
	char msg[600];
	const char *bad;

	ok(read_cfg(dir, "llama3-8b.config.json", NULL, &c, msg, sizeof(msg)) ==
	           0,
	   "llama3-8b parses");
	EQ(c.kv_heads, 8, "llama3: 8 KV heads (GQA)");
	EQ(c.head_dim, 128, "llama3: head_dim 4096/32");
	EQ(c.kv_bytes_per_token, 131072, "llama3: KV bytes per token");
	EQ(c.params, 8030261248ull, "llama3: parameters");
	EQ(c.weight_bytes, 16060522496ull, "llama3: weight bytes (bf16)");
	ok(read_cfg(dir, "llama3-8b.config.json", "fp8", &c, msg,
	            sizeof(msg)) == 0,
	   "llama3-8b parses with --kv-dtype fp8");
	EQ(c.kv_bytes_per_token, 65536, "llama3: fp8 KV halves it");
	ok(read_cfg(dir, "falcon-7b.config.json", NULL, &c, msg, sizeof(msg)) ==
	           0,
	   "falcon-7b parses");
	EQ(c.kv_heads, 1, "falcon: multi_query is 1 KV head (MQA)");
	EQ(c.head_dim, 64, "falcon: head_dim 4544/71");
	EQ(c.kv_bytes_per_token, 8192, "falcon: KV bytes per token");
	EQ(c.params, 6921716160ull, "falcon: parameters");
	ok(read_cfg(dir, "falcon-7b.config.json", "fp32", &c, msg,
	            sizeof(msg)) == 0,
	   "falcon-7b parses with --kv-dtype fp32");
	EQ(c.kv_bytes_per_token, 16384, "falcon: fp32 KV doubles it");

	bad = "{\"num_hidden_layers\": 2, \"hidden_size\": 64, "
	      "\"vocab_size\": 10}";
	ok(vrt_modelcfg_parse(&c, bad, strlen(bad), NULL, msg, sizeof(msg)) ==
	                   -1 &&
	           strstr(msg, "missing key \"num_attention_heads\""),
	   "missing key named (got '%s')", msg);
	bad = "{\"num_hidden_layers\": 2,";
	ok(vrt_modelcfg_parse(&c, bad, strlen(bad), NULL, msg, sizeof(msg)) ==
	                   -1 &&
	           strstr(msg, "invalid JSON at line 1"),
	   "invalid JSON with its position (got '%s')", msg);
	bad = "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	      "\"num_key_value_heads\": 3, \"hidden_size\": 64, "
	      "\"vocab_size\": 10}";
	ok(vrt_modelcfg_parse(&c, bad, strlen(bad), NULL, msg, sizeof(msg)) ==
	                   -1 &&
	           strstr(msg, "does not divide"),
	   "KV heads that do not divide the heads (got '%s')", msg);
	bad = "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	      "\"hidden_size\": 64, \"vocab_size\": 10}";
	ok(vrt_modelcfg_parse(&c, bad, strlen(bad), "int3", msg, sizeof(msg)) ==
	                   -1 &&
	           strstr(msg, "unknown KV dtype"),
	   "unknown KV dtype (got '%s')", msg);
	ok(read_cfg(dir, "no-such.json", NULL, &c, msg, sizeof(msg)) == -2,
	   "a missing file is an error");
}

/* KV arithmetic in the diagnosis: Llama-3-8B shape, 16 GiB KV reserve
 * and 8 GiB of headroom at --max-model-len 8192. */
static void test_model_in_diagnosis(const char *dir)
{
	struct vrt_modelcfg c;
	char msg[600];

	if (read_cfg(dir, "llama3-8b.config.json", NULL, &c, msg,
	             sizeof(msg))) {
		ok(0, "llama3 config for the diagnosis: %s", msg);
		return;
	}
	setup(1, 40 * GiB);
	alloc(0, 0x1000, 16 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 16 * GiB, VRT_PHASE_kv_cache);
	diagnose(&c);
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
	teardown();
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
	test_model_configs(dir);
	test_model_in_diagnosis(dir);
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
