/*
 * Unit tests of diagnose.c on hand-made traces (replayed by replay.c):
 * one run per verdict with the exact verdict, detail, stage and evidence
 * numbers, the cases of issue 14 shaped as the engines make them (with
 * the ladder's numbers), and the model arithmetic (model.c) as the
 * diagnosis states it, from the configs of tests/data and the engine's
 * flags in the command line, and what the engine's log decides (struct
 * vrt_diag_log: the failure it names, its flags, its ready line, a budget
 * refusal, its numbers). TAP output. argv[1]: the tests/data directory.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/diagnose.h"
#include "load/load.h"
#include "model/model.h"
#include "model/model_read.h"
#include "replay/replay.h"

#include "../tap.h"
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
static struct vrt_failinfo fails[16];
static size_t nfail;
static struct vrt_process procs[4];
static struct vrt_device devs[4];
/* the process and thread of the next events */
static uint32_t cur_proc, cur_tid;
static char *argv_vllm[] = {
        "vllm", "serve",          "m",  "--max-model-len",
        "8192", "--max-num-seqs", "16", "--gpu-memory-utilization",
        "0.9"};

static void setup(size_t ndev, uint64_t total)
{
	size_t i;

	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	memset(procs, 0, sizeof(procs));
	memset(devs, 0, sizeof(devs));
	nfail = 0;
	cur_proc = 0;
	cur_tid = 0;
	procs[0].pid = 42;
	procs[0].ppid = 1;
	procs[0].argv = argv_vllm;
	procs[0].argc = sizeof(argv_vllm) / sizeof(argv_vllm[0]);
	t.procs = procs;
	t.nprocs = 1;
	for (i = 0; i < ndev; i++) {
		devs[i].total_bytes = total;
		devs[i].have_total = 1;
	}
	t.devices = devs;
	t.ndevices = ndev;
	t.fails = fails;
	t.nfails = 16;
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
	e->proc = cur_proc;
	e->tid = cur_tid;
	nev++;
	return e;
}

/* The command line of the only process. */
static void command(char **argv, size_t argc)
{
	procs[0].argv = argv;
	procs[0].argc = argc;
}

/* Another process of the run; returns its index. */
static uint32_t add_proc(uint64_t pid, uint64_t ppid, char **argv, size_t argc)
{
	struct vrt_process *p = &procs[t.nprocs];
	p->pid = pid;
	p->ppid = ppid;
	p->argv = argv;
	p->argc = argc;
	p->start_mono_ns = (int64_t)t.nprocs;
	return (uint32_t)t.nprocs++;
}

/* How a process ended (vramtrace record's <pid>.exit). */
static void exited(uint32_t i, int kind, int code)
{
	procs[i].exit_kind = kind;
	procs[i].exit_code = code;
	procs[i].has_trailer = kind == VRT_EXIT_CODE;
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

static void free_(uint64_t addr)
{
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, addr, 0, 0, 0);
}

/* An annotated request begins (1) or ends (2). */
static void request(uint64_t id, int op)
{
	ev(VRT_EV_REQUEST, 0, -1, id, 0, (uint64_t)op, 0);
}

static int has_evidence_text(const char *key, const char *needle)
{
	size_t i;

	for (i = 0; i < dg.nevidence; i++)
		if (!strcmp(dg.evidence[i].key, key) &&
		    strstr(dg.evidence[i].text, needle))
			return 1;
	return 0;
}

static void diagnose_log(const struct vrt_model *cfg,
                         const struct vrt_diag_log *log)
{
	ok(vrt_replay_begin(&r, &t) == 0 &&
	           vrt_replay_feed(&r, &t, evs, nev) == 0 &&
	           vrt_replay_end(&r, &t) == 0,
	   "replay runs");
	vrt_diagnose_run_log(&dg, &t, &r, cfg, log);
}

static void diagnose(const struct vrt_model *cfg)
{
	diagnose_log(cfg, NULL);
}

/* The same trace diagnosed again (the replay kept), with another log. */
static void rediagnose(const struct vrt_diag_log *log)
{
	vrt_diagnose_run_log(&dg, &t, &r, NULL, log);
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
	/* With the margin, 5% of the card (4 GiB) free at the peak:
	 * (8.5 - 4) / 2 = 2 requests: 14 + 57.5 + 2 x 2 = 75.5 of 80. */
	ok(has_action("vLLM: cap concurrent sequences: --max-num-seqs 2"),
	   "concurrency: action names vLLM's --max-num-seqs 2 (got '%s')",
	   dg.actions[0]);
	ok(dg.ncosts == dg.nactions, "concurrency: a cost for every action");
	ok(dg.nactions > 1 && strstr(dg.actions[0], "shrink the KV reserve") &&
	           strstr(dg.costs[0], "12.00 GiB of the 57.50 GiB KV cache "
	                               "(20%)"),
	   "concurrency: the cheapest first: 20%% of the KV cache (got '%s')",
	   dg.costs[0]);
	/* 16 GiB for the 8 in flight + 4 GiB margin - 8.5 GiB left = 11.5
	 * GiB: 0.144 of the card, 0.90 - 0.144 down to 0.75 (frees 12). */
	ok(has_action("--gpu-memory-utilization 0.75 (was 0.90)"),
	   "concurrency: or --gpu-memory-utilization 0.75: frees 16 GiB + "
	   "4 GiB - 8.5 GiB");
	/* no --max-num-batched-tokens given: a share of the engine's own
	 * value, (8.5 - 4) / 16 = 28% (half as dear: 36% of a rank) */
	ok(dg.nactions > 2 &&
	           strstr(dg.actions[1], "--max-num-batched-tokens at about "
	                                 "28% of the value the engine runs "
	                                 "with") &&
	           strstr(dg.costs[2], "throughput") &&
	           strstr(dg.costs[2], "at most 2 sequences at once where 8"),
	   "concurrency: then fewer tokens per step, then the cap, whose cost "
	   "is throughput (got '%s')",
	   dg.nactions > 2 ? dg.costs[2] : "");
	ok(dg.nverify && strstr(dg.verify[0], "vramtrace compare"),
	   "concurrency: verify with vramtrace compare");
	teardown();
}

/* One request's 12 GiB of activations where weights and the KV reserve
 * leave 8 GiB of 80. */
static void kv_context_run(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 58 * GiB, VRT_PHASE_kv_cache);
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10);
	oom(VRT_API_cuMemAlloc_v2, 0, 12 * GiB, 8 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
}

static void test_kv_context(void)
{
	kv_context_run();
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "kv_cache: verdict");
	STR(dg.detail, "context_too_long", "kv_cache: detail");
	STR(dg.stage, "request", "kv_cache: stage");
	EQ(value("single_request_bytes"), 12 * GiB, "kv_cache: one request");
	/* The margin is 5% of the card, 4 GiB free at the peak: 8192 x (8 -
	 * 4) GiB / 12 GiB = 2730, rounded down to 256: 2560; 0.90 - (12 + 4
	 * - 8) GiB / 80 GiB = 0.80 */
	ok(has_action("--max-model-len 2560 (was 8192)"),
	   "kv_cache: --max-model-len 2560 (got '%s')", dg.actions[0]);
	ok(has_action("--gpu-memory-utilization 0.80 (was 0.90"),
	   "kv_cache: --gpu-memory-utilization 0.80 (got '%s')",
	   dg.nactions > 1 ? dg.actions[1] : "");
	teardown();
}

/* One request needs more than the whole KV reserve could give back: the
 * memory fraction is no lever (the context is). */
static void test_kv_context_past_reserve(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 30 * GiB, VRT_PHASE_kv_cache);
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10);
	oom(VRT_API_cuMemAlloc_v2, 0, 128 * GiB, 36 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "past reserve: verdict");
	ok(!has_action("--gpu-memory-utilization"),
	   "past reserve: no memory-fraction lever for 92 GiB more than the "
	   "30 GiB KV reserve (got '%s')",
	   dg.nactions > 1 ? dg.actions[1] : "");
	ok(has_action("--max-model-len"), "past reserve: the context is");
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

/* The driver counts used what a stream-ordered pool keeps of its frees
 * (PyTorch's cudaMallocAsync backend keeps all): 8 GiB beyond the live
 * bytes. From plain allocations that is another process's; from a pool
 * that gave back 8 GiB it is the pool's, and since the call would have
 * fit with it given back, no budget of the run is blamed. */
static void pool_run(unsigned alloc_api, unsigned free_api)
{
	setup(1, 80 * GiB);
	probe(0, 80 * GiB, 80 * GiB);
	ev(VRT_EV_ALLOC, alloc_api, 0, 0x1000, 14 * GiB, 0, VRT_PHASE_weights);
	ev(VRT_EV_ALLOC, alloc_api, 0, 0x2000, 57 * GiB, 0,
	   VRT_PHASE_kv_cache);
	net(VRT_NET_LISTEN, 5);
	request(1, 1);
	for (uint64_t i = 0; i < 8; i++)
		ev(VRT_EV_ALLOC, alloc_api, 0, 0x10000 + i * 0x1000, 1 * GiB, 0,
		   VRT_PHASE_forward);
	for (uint64_t i = 0; i < 8; i++)
		ev(VRT_EV_FREE, free_api, -1, 0x10000 + i * 0x1000, 0, 0, 0);
	oom(alloc_api, 0, 2 * GiB, 1 * GiB, 80 * GiB, VRT_PHASE_forward);
	diagnose(NULL);
}

static void test_pool_kept(void)
{
	pool_run(VRT_API_cuMemAlloc_v2, VRT_API_cuMemFree_v2);
	STR(vrt_diagnose_verdict_name(dg.verdict), "other_processes",
	    "pool: plain allocations, the excess is another process's");
	EQ(value("other_processes_bytes"), 8 * GiB, "pool: 8 GiB other");
	teardown();

	pool_run(VRT_API_cuMemAllocAsync, VRT_API_cuMemFreeAsync);
	STR(vrt_diagnose_verdict_name(dg.verdict), "inconclusive",
	    "pool: async, not another process");
	STR(dg.detail, "pool_kept", "pool: detail");
	EQ(value("pool_kept_bytes"), 8 * GiB, "pool: 8 GiB kept");
	ok(find("other_processes_bytes") == NULL,
	   "pool: no other-process bytes claimed");
	ok(has_action("backend:cudaMallocAsync"),
	   "pool: the allocator is the lever");
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

/* ---- the advice of issue 19 ------------------------------------------------ */

/* The context action of test_kv_context at four margins, each a share
 * of the 80 GiB card left free at the peak: 8192 x (8 GiB - margin) /
 * 12 GiB, to a multiple of 256; the reserve frees 12 GiB + margin - 8
 * GiB (0.05, 0.10, 0.12, 0.25 of the card) from 0.90, down to a
 * hundredth; the costs pair the actions, cheapest first. At 20% (16 GiB)
 * no context keeps the margin where 8 GiB is left: the reserve alone is
 * offered. */
static void test_margin(void)
{
	static const struct {
		unsigned pct;
		const char *ctx, *util;
	} cases[] = {
	        {0, "--max-model-len 5376 (was 8192)",
	         "--gpu-memory-utilization 0.85 (was 0.90)"},
	        {5, "--max-model-len 2560 (was 8192)",
	         "--gpu-memory-utilization 0.80 (was 0.90)"},
	        {7, "--max-model-len 1536 (was 8192)",
	         "--gpu-memory-utilization 0.78 (was 0.90)"},
	        {20, NULL, "--gpu-memory-utilization 0.65 (was 0.90)"},
	};
	size_t i, k;
	int sorted;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct vrt_diag_options o = {cases[i].pct, NULL};
		kv_context_run();
		ok(vrt_replay_begin(&r, &t) == 0 &&
		           vrt_replay_feed(&r, &t, evs, nev) == 0 &&
		           vrt_replay_end(&r, &t) == 0,
		   "margin: replay runs");
		vrt_diagnose_run_opts(&dg, &t, &r, NULL, &o);
		EQ(dg.margin_pct, cases[i].pct, "margin: recorded");
		if (cases[i].ctx)
			ok(has_action(cases[i].ctx), "margin %u%%: %s",
			   cases[i].pct, cases[i].ctx);
		else
			ok(!has_action("--max-model-len"),
			   "margin %u%%: no context keeps it", cases[i].pct);
		ok(has_action(cases[i].util), "margin %u%%: %s", cases[i].pct,
		   cases[i].util);
		EQ(dg.ncosts, dg.nactions, "margin: one cost per action");
		/* the reserve (about 5% of the KV cache) before the context
		 * (half of it) */
		sorted = dg.nactions >= 1 &&
		         strstr(dg.actions[0], "shrink the KV reserve") &&
		         (!cases[i].ctx ||
		          strstr(dg.actions[dg.nactions - 1],
		                 "lower the context"));
		ok(sorted, "margin %u%%: the cheapest first (got '%s')",
		   cases[i].pct, dg.actions[0]);
		for (k = 0; k < dg.nactions; k++)
			ok(cases[i].pct ? strstr(dg.actions[k], "% margin") != NULL
			                : strstr(dg.actions[k], "no margin") !=
			                          NULL,
			   "margin %u%%: action %zu says its margin",
			   cases[i].pct, k);
		teardown();
	}
}

/* No failure, but 1 GiB free of 80: below the margin, warned, and the
 * reserve that restores it offered; 10 GiB free is not warned. */
static void test_none_margin(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 65 * GiB, VRT_PHASE_kv_cache);
	diagnose(NULL);
	STR(dg.detail, "fits", "none margin: still none (fits)");
	EQ(value("headroom_below_margin"), 1 * GiB,
	   "none margin: 1 GiB is below 4 GiB");
	ok(has_action("keeps less than the 5% margin"),
	   "none margin: warned (got '%s')", dg.actions[0]);
	/* 4 GiB - 1 GiB = 3 GiB: 0.0375 of the card, to 0.86 */
	ok(has_action("--gpu-memory-utilization 0.86 (was 0.90)"),
	   "none margin: --gpu-memory-utilization 0.86 restores it");
	teardown();
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 56 * GiB, VRT_PHASE_kv_cache);
	diagnose(NULL);
	ok(!find("headroom_below_margin") &&
	           has_action("nothing to change"),
	   "none margin: 10 GiB free keeps the margin");
	teardown();
}

/* Two processes of one run each hold 60 GiB of "device 0" of 80 GiB (no
 * UUID: their cards merged by ordinal): a data problem, not none. */
static void test_over_capacity(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 60 * GiB, VRT_PHASE_weights);
	add_proc(43, 1, argv_vllm, sizeof(argv_vllm) / sizeof(argv_vllm[0]));
	cur_proc = 1;
	alloc(0, 0x2000, 60 * GiB, VRT_PHASE_weights);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "inconclusive",
	    "over capacity: not none");
	STR(dg.detail, "peak_over_capacity", "over capacity: detail");
	EQ(value("peak_over_capacity"), 120 * GiB, "over capacity: the peak");
	EQ(dg.confidence, VRT_CONFIDENCE_LOW, "over capacity: low confidence");
	ok(strstr(dg.confidence_reason, "CUDA_VISIBLE_DEVICES") != NULL,
	   "over capacity: names the likely cause (%s)",
	   dg.confidence_reason);
	teardown();
	/* managed memory may oversubscribe: not a data problem */
	setup(1, 80 * GiB);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAllocManaged, 0, 0x1000, 100 * GiB, 0,
	   VRT_PHASE_weights);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "none",
	    "over capacity: managed memory oversubscribes");
	teardown();
}

/* A card the processes disagree about (intern.c fills conflict). */
static void test_identity_conflict(void)
{
	setup(1, 80 * GiB);
	snprintf(devs[0].uuid, sizeof(devs[0].uuid), "GPU-x");
	snprintf(devs[0].conflict, sizeof(devs[0].conflict),
	         "PID 2 on b names it 'A100' of 40 GiB");
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	diagnose(NULL);
	STR(dg.detail, "device_identity_conflict", "identity: detail");
	ok(has_evidence_text("device_identity_conflict", "names it 'A100'"),
	   "identity: says how they disagree");
	teardown();
}

/* ---- the cases of issue 14 ------------------------------------------------
 * Each is shaped as the engine makes it (the order of its allocations, its
 * allocator's retry, how it exits), with the ladder's numbers checked. */

#define N(a) (sizeof(a) / sizeof((a)[0]))

static int rung_is(int rung, uint64_t bytes, uint64_t cumulative, int fits)
{
	return dg.have_ladder && dg.ladder[rung].bytes == bytes &&
	       dg.ladder[rung].cumulative == cumulative &&
	       dg.ladder[rung].fits == fits;
}

/* vLLM on 80 GiB (1 GiB of contexts): a request's 6.5 GiB does not fit at
 * once; PyTorch's allocator frees the 1.5 GiB it kept and retries. */
static void near_miss_run(void)
{
	probe(0, 79 * GiB, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 57 * GiB + 512 * MiB, VRT_PHASE_kv_cache);
	request(1, 1);
	alloc(0, 0x3000, 1 * GiB + 512 * MiB, VRT_PHASE_forward); /* kept */
	request(1, 2);
	request(2, 1);
	cur_tid = 7;
	oom(VRT_API_cuMemAlloc_v2, 0, 6 * GiB + 512 * MiB, 6 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	free_(0x3000); /* release_cached_blocks */
	alloc(0, 0x4000, 6 * GiB + 512 * MiB, VRT_PHASE_forward); /* retry */
	cur_tid = 0;
	free_(0x4000);
	request(2, 2);
}

static void test_recovered_none(void)
{
	setup(1, 80 * GiB);
	near_miss_run();
	exited(0, VRT_EXIT_CODE, 0);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "none",
	    "recovered: a recovered failure is no verdict");
	STR(dg.detail, "near_miss", "recovered: detail near_miss");
	EQ(dg.have_failure, 0, "recovered: no decisive failure");
	ok(r.nfails == 1 && r.fails[0].recovered && !r.fails[0].fatal,
	   "recovered: the failure is recovered, not fatal");
	EQ(r.fails[0].freed_bytes, 1 * GiB + 512 * MiB,
	   "recovered: 1.5 GiB freed before the retry");
	EQ(r.fails[0].recovered_bytes, 6 * GiB + 512 * MiB,
	   "recovered: the retry's size");
	EQ(r.recovered, 1, "recovered: counted");
	EQ(value("near_miss"), 6 * GiB + 512 * MiB, "recovered: near-miss");
	ok(has_evidence_text("near_miss", "freed 1.50 GiB of its cache"),
	   "recovered: the near-miss says what was freed");
	STR(vrt_diagnose_confidence_name(dg.confidence), "high",
	    "recovered: confidence high (exit 0)");
	ok(has_action("headroom is thin"), "recovered: thin headroom said");
	teardown();
}

/* The same near-miss, then two requests of 5 GiB at once: the second
 * fails, the allocator's retry fails too, and the server exits 1. */
static void test_recovered_then_fatal(void)
{
	setup(1, 80 * GiB);
	near_miss_run();
	request(3, 1);
	request(4, 1);
	cur_tid = 9;
	alloc(0, 0x5000, 5 * GiB, VRT_PHASE_forward);
	oom(VRT_API_cuMemAlloc_v2, 0, 5 * GiB, 2 * GiB + 512 * MiB, 80 * GiB,
	    VRT_PHASE_forward);
	oom(VRT_API_cuMemAlloc_v2, 0, 5 * GiB, 2 * GiB + 512 * MiB, 80 * GiB,
	    VRT_PHASE_forward);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "concurrency",
	    "then fatal: the verdict comes from the fatal failure");
	STR(dg.detail, "overlapping_requests", "then fatal: detail");
	EQ(dg.failure, 2, "then fatal: the last failure is the decisive one");
	ok(r.fails[0].recovered && !r.fails[1].recovered && !r.fails[1].fatal &&
	           r.fails[2].fatal,
	   "then fatal: recovered, superseded attempt, fatal retry");
	EQ(value("single_request_peak_bytes"), 5 * GiB,
	   "then fatal: one request's 5 GiB, measured alone");
	EQ(value("request_headroom_bytes"), 7 * GiB + 512 * MiB,
	   "then fatal: 7.5 GiB for requests");
	ok(has_action("--max-num-seqs 1"), "then fatal: --max-num-seqs 1");
	EQ(value("near_miss"), 6 * GiB + 512 * MiB,
	   "then fatal: the near-miss is still reported");
	ok(rung_is(VRT_RUNG_ACTIVATIONS, 5 * GiB, 77 * GiB + 512 * MiB, 1) &&
	           rung_is(VRT_RUNG_INFLIGHT, 5 * GiB, 82 * GiB + 512 * MiB,
	                   0) &&
	           dg.rung == VRT_RUNG_INFLIGHT,
	   "then fatal: one request fits, the second does not");
	STR(vrt_diagnose_confidence_name(dg.confidence), "high",
	    "then fatal: confidence high");
	teardown();
}

/* vLLM's profiling run: 10 GiB of weights on 40 GiB, then the dummy
 * forward of --max-num-batched-tokens 65536 asks 35 GiB with 30 free
 * (and again after emptying the cache). */
static void test_profile_oom(void)
{
	char *argv[] = {
	        "vllm",  "serve",          "m",  "--max-num-batched-tokens",
	        "65536", "--max-num-seqs", "256"};

	setup(1, 40 * GiB);
	command(argv, N(argv));
	probe(0, 40 * GiB, 40 * GiB);
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 35 * GiB, 30 * GiB, 40 * GiB,
	    VRT_PHASE_profile);
	oom(VRT_API_cuMemAlloc_v2, 0, 35 * GiB, 30 * GiB, 40 * GiB,
	    VRT_PHASE_profile);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "concurrency",
	    "profile: not weights");
	STR(dg.detail, "batch_activations", "profile: the batch's activations");
	STR(dg.stage, "load", "profile: load stage");
	EQ(dg.rung, VRT_RUNG_ACTIVATIONS, "profile: the activations rung");
	ok(dg.batch_rung, "profile: the configured batch's rung");
	ok(rung_is(VRT_RUNG_WEIGHTS, 10 * GiB, 10 * GiB, 1) &&
	           rung_is(VRT_RUNG_ACTIVATIONS, 35 * GiB, 45 * GiB, 0),
	   "profile: weights fit, the batch does not");
	EQ(value("batch_activation_bytes"), 35 * GiB, "profile: 35 GiB");
	EQ(value("batch_tokens"), 65536, "profile: the batch flag read");
	/* The margin, 5% of the 40 GiB card: 65536 x (30 - 2) / 35 = 52428,
	 * to a multiple of 1024; 256 x 28 / 35 = 204 sequences */
	ok(has_action("vLLM: fewer tokens per batch: "
	              "--max-num-batched-tokens 52224 (was 65536)"),
	   "profile: --max-num-batched-tokens 52224 (got '%s')", dg.actions[0]);
	ok(has_action("--max-num-seqs 204 (was 256)"),
	   "profile: --max-num-seqs 204");
	ok(!has_action("shard"), "profile: no sharding advice");
	EQ(dg.failure, 1, "profile: the retry's failure is the fatal one");
	teardown();
}

/* vLLM V1's order on 80 GiB: weights 20 GiB, profile (freed), the KV
 * reserve sized from --gpu-memory-utilization 0.98 (58.39 GiB), then CUDA
 * graph capture asks 1 GiB with 624 MiB free. */
static void test_graph_capture(void)
{
	char *argv[] = {"vllm", "serve", "m", "--gpu-memory-utilization",
	                "0.98"};

	setup(1, 80 * GiB);
	command(argv, N(argv));
	probe(0, 79 * GiB, 80 * GiB);
	alloc(0, 0x1000, 20 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 2 * GiB, VRT_PHASE_profile);
	free_(0x2000); /* empty_cache after profiling */
	alloc(0, 0x3000, 58 * GiB + 400 * MiB, VRT_PHASE_kv_cache);
	oom(VRT_API_cuMemAlloc_v2, 0, 1 * GiB, 624 * MiB, 80 * GiB,
	    VRT_PHASE_cuda_graph);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "graphs: the reserve, not weights");
	STR(dg.detail, "graph_capture_after_reserve", "graphs: detail");
	EQ(dg.rung, VRT_RUNG_RESERVES, "graphs: the reserves rung");
	ok(rung_is(VRT_RUNG_WEIGHTS, 20 * GiB, 21 * GiB, 1) &&
	           rung_is(VRT_RUNG_RESERVES, 59 * GiB + 400 * MiB,
	                   80 * GiB + 400 * MiB, 0),
	   "graphs: weights fit, the reserve and the graph do not");
	/* 1 GiB + the 4 GiB margin - 624 MiB free = 4.39 GiB: 0.055 less,
	 * down to a multiple of 0.01 */
	ok(has_action("--gpu-memory-utilization 0.92 (was 0.98"),
	   "graphs: a lower --gpu-memory-utilization (got '%s')",
	   dg.actions[0]);
	ok(has_action("--enforce-eager"), "graphs: or --enforce-eager");
	ok(has_action("max_cudagraph_capture_size"),
	   "graphs: or fewer capture sizes");
	ok(!has_action("shard"), "graphs: no sharding advice");
	teardown();
}

/* llama-server -np 4 on 24 GiB: weights, KV and its compute buffer; the
 * CUDA pool (ggml_cuda_pool_leg: grows, never shrinks) holds one
 * request's 1.25 GiB after a lone request; four at once grow it until it
 * fails, twice (the pool's retry after clear_pool), and abort(). */
static void llama_pool(uint32_t w, uint32_t kv, uint32_t prof, uint32_t pool,
                       const char *name)
{
	char *argv[] = {"llama-server", "-m",  "x.gguf", "-c",
	                "16384",        "-np", "4"};
	const uint64_t q = 1 * GiB + 256 * MiB;
	char what[96];
	int i;

	setup(1, 24 * GiB);
	command(argv, N(argv));
	probe(0, 23 * GiB + 512 * MiB, 24 * GiB);
	alloc(0, 0x1000, 14 * GiB, w);
	alloc(0, 0x2000, 4 * GiB, kv);
	alloc(0, 0x3000, 1 * GiB + 512 * MiB, prof);
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10);
	alloc(0, 0x4000, q, pool);
	net(VRT_NET_CLOSE, 10);
	for (i = 0; i < 4; i++)
		net(VRT_NET_ACCEPT, 11 + (uint64_t)i);
	alloc(0, 0x5000, q, pool);
	alloc(0, 0x6000, q, pool);
	oom(VRT_API_cuMemAlloc_v2, 0, q, 256 * MiB, 24 * GiB, pool);
	oom(VRT_API_cuMemAlloc_v2, 0, q, 256 * MiB, 24 * GiB, pool);
	exited(0, VRT_EXIT_SIGNAL, 6);
	diagnose(NULL);
	snprintf(what, sizeof(what), "llama pool (%s): verdict", name);
	STR(vrt_diagnose_verdict_name(dg.verdict), "concurrency", what);
	snprintf(what, sizeof(what), "llama pool (%s): detail", name);
	STR(dg.detail, "overlapping_requests", what);
	EQ(r.single_request_peak_bytes, q, "llama pool: the lone request grew");
	EQ(value("single_request_peak_bytes"), q,
	   "llama pool: one request's 1.25 GiB");
	EQ(value("request_headroom_bytes"), 4 * GiB,
	   "llama pool: 4 GiB after weights, KV and the compute buffer");
	EQ(value("requests_that_fit"), 3, "llama pool: 3 fit");
	/* with 5% of the card (1.2 GiB) free: (4 - 1.2) / 1.25 = 2 */
	ok(has_action("llama.cpp: cap concurrent sequences: -np 2"),
	   "llama pool: -np 2 (got '%s')", dg.actions[0]);
	ok(rung_is(VRT_RUNG_INFLIGHT, 3 * q, 25 * GiB, 0) &&
	           dg.ladder[VRT_RUNG_ACTIVATIONS].fits,
	   "llama pool: one request fits, the others in flight do not");
	teardown();
}

/* llama.cpp runs n_ubatch = min(-ub, -b): -ub 4096 with -b 2048 runs
 * 2048, and advice starts from that; -ub below -b stays. */
static void test_llama_ubatch_cap(void)
{
	char *over[] = {"llama-server", "-m", "x.gguf", "-b", "2048", "-ub",
	                "4096"};
	char *under[] = {"llama-server", "-m", "x.gguf", "-b", "2048", "-ub",
	                 "512"};

	setup(1, 24 * GiB);
	command(over, N(over));
	alloc(0, 0x1000, 8 * GiB, VRT_PHASE_weights);
	diagnose(NULL);
	EQ(dg.flags.ubatch, 2048, "llama -ub 4096 -b 2048: runs 2048");
	teardown();
	setup(1, 24 * GiB);
	command(under, N(under));
	alloc(0, 0x1000, 8 * GiB, VRT_PHASE_weights);
	diagnose(NULL);
	EQ(dg.flags.ubatch, 512, "llama -ub 512 -b 2048: runs 512");
	teardown();
}

static void test_llama_pool(void)
{
	llama_pool(VRT_PHASE_weights, VRT_PHASE_kv_cache, VRT_PHASE_profile,
	           VRT_PHASE_workspace, "pool tagged workspace");
	/* a rules file that names nothing: the numbers still tell */
	llama_pool(0, 0, 0, 0, "nothing named");
}

/* llama-server listens (answering health checks with 503) before it
 * loads 96 GiB of weights on an 80 GiB card. */
static void test_listen_first(void)
{
	char *argv[] = {"llama-server", "-m", "big.gguf", "-c", "8192"};
	int i;

	setup(1, 80 * GiB);
	command(argv, N(argv));
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 9); /* GET /health: 503 while loading */
	net(VRT_NET_CLOSE, 9);
	for (i = 0; i < 32; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 32 * GiB, 16 * GiB, 80 * GiB,
	    VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(dg.stage, "load", "listen first: still the load stage");
	STR(vrt_diagnose_verdict_name(dg.verdict), "weights",
	    "listen first: weights");
	STR(dg.detail, "card_too_small", "listen first: card too small");
	ok(r.fails[0].after_ready == 0 && r.serving,
	   "listen first: a health check served, the weights still load");
	ok(has_action("-ngl"), "listen first: llama.cpp's -ngl");
	teardown();
}

/* vllm serve --tensor-parallel-size 2: two spawned workers both land on
 * device 0; device 1 is only in the inventory (never allocated on). */
static void test_tp_spawn(void)
{
	char *root[] = {"vllm", "serve", "m", "--tensor-parallel-size", "2"};
	char *worker[] = {"/usr/bin/python3", "-c",
	                  "from multiprocessing.spawn import spawn_main; "
	                  "spawn_main(tracker_fd=5, pipe_handle=7)",
	                  "--multiprocessing-fork"};
	uint32_t w1, w2;
	int i;

	setup(2, 80 * GiB);
	command(root, N(root));
	procs[0].pid = 10;
	w1 = add_proc(11, 10, worker, N(worker));
	w2 = add_proc(12, 10, worker, N(worker));
	cur_proc = w1;
	probe(0, 79 * GiB + 768 * MiB, 80 * GiB);
	for (i = 0; i < 16; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB + 512 * MiB,
		      VRT_PHASE_weights);
	cur_proc = w2;
	for (i = 0; i < 15; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB + 512 * MiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 2 * GiB + 512 * MiB, 2 * GiB, 80 * GiB,
	    VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 1);
	procs[w2].truncated = 1;
	diagnose(NULL);
	STR(vrt_engine_name(dg.flags.engine), "vllm",
	    "tp: the engine of the root command, not the worker's");
	EQ(dg.flags.tp, 2, "tp: --tensor-parallel-size from the root");
	STR(vrt_diagnose_verdict_name(dg.verdict), "weights", "tp: weights");
	STR(dg.detail, "not_sharded", "tp: not sharded");
	EQ(value("weights_share_percent"), 100, "tp: device 0 holds all");
	ok(has_evidence_text("idle_device_peak_bytes", "never allocated on"),
	   "tp: device 1, never touched, is named from the inventory");
	EQ(value("tensor_parallel"), 2, "tp: the flag as evidence");
	ok(r.fails[0].fatal, "tp: the worker's failure is fatal");
	teardown();
}

/* llama.cpp splits the layers over every visible GPU: two visible, all
 * the weights on one is not_sharded; with -sm none it is on purpose. */
static void llama_visible(int one, const char *want, const char *name)
{
	char *argv[] = {"llama-server", "-m", "x.gguf", "-sm", "none"};
	int i;

	setup(2, 24 * GiB);
	command(argv, one ? 5 : 3);
	for (i = 0; i < 11; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 4 * GiB, 2 * GiB, 24 * GiB,
	    VRT_PHASE_weights);
	diagnose(NULL);
	STR(dg.detail, want, name);
	teardown();
}

static void test_llama_visible(void)
{
	llama_visible(0, "not_sharded",
	              "llama.cpp: two visible GPUs, one holds every layer");
	llama_visible(1, "card_too_small", "llama.cpp -sm none: one GPU");
}

/* Ollama loads models on demand long after it listened: a request for a
 * second model makes its runner load weights next to the first model's,
 * and the KV reserve of that load fails: a load stage again, while the
 * request that asked for it is in flight. */
static void test_on_demand_load(void)
{
	char *serve[] = {"/usr/bin/ollama", "serve"};
	char *runner[] = {"/usr/bin/ollama", "runner", "--model",    "b.gguf",
	                  "--ctx-size",      "32768",  "--parallel", "4"};
	uint32_t run2;

	setup(1, 48 * GiB);
	command(serve, N(serve));
	net(VRT_NET_LISTEN, 3);
	net(VRT_NET_ACCEPT, 10); /* model A: loaded, then served */
	alloc(0, 0x1000, 20 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 8 * GiB, VRT_PHASE_kv_cache);
	alloc(0, 0x3000, 1 * GiB, VRT_PHASE_forward);
	free_(0x3000);
	net(VRT_NET_CLOSE, 10);
	net(VRT_NET_ACCEPT, 11); /* model B asked for */
	run2 = add_proc(43, 42, runner, N(runner));
	cur_proc = run2;
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 8 * GiB, 6 * GiB, 48 * GiB,
	    VRT_PHASE_kv_cache);
	exited(0, VRT_EXIT_CODE, 0);
	diagnose(NULL);
	STR(dg.stage, "load", "on demand: the second model's load stage");
	ok(r.serving && r.fails[0].inflight == 1,
	   "on demand: while serving, with its request in flight");
	STR(vrt_engine_name(dg.flags.engine), "ollama", "on demand: ollama");
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "on demand: the KV reserve of the load");
	STR(dg.detail, "kv_reserve", "on demand: kv_reserve");
	ok(has_action("OLLAMA_CONTEXT_LENGTH="),
	   "on demand: Ollama's own setting (got '%s')", dg.actions[0]);
	teardown();
}

/* The root exits 1 while loading, no allocation failed. */
static void test_died_loading(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "inconclusive",
	    "died loading: inconclusive, never none");
	STR(dg.detail, "died_while_loading", "died loading: detail");
	STR(vrt_diagnose_confidence_name(dg.confidence), "low",
	    "died loading: low confidence");
	EQ(value("exit_status"), 1, "died loading: the exit status");
	ok(has_action("log"), "died loading: says where to look");
	teardown();
	/* a recovered failure, then death by a signal */
	setup(1, 80 * GiB);
	near_miss_run();
	exited(0, VRT_EXIT_SIGNAL, 11);
	diagnose(NULL);
	STR(dg.detail, "recovered_then_died",
	    "recovered then died: inconclusive");
	EQ(value("exit_signal"), 11, "recovered then died: signal 11");
	teardown();
	/* stopped on purpose while loading: still inconclusive */
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 130);
	diagnose(NULL);
	STR(dg.detail, "stopped_while_loading",
	    "SIGINT (130) while loading: inconclusive, not none");
	teardown();
	/* stopped on purpose while serving: none */
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	request(1, 1);
	request(1, 2);
	exited(0, VRT_EXIT_SIGNAL, 15);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "none",
	    "SIGTERM while serving: none");
	teardown();
}

/* A request-stage failure with no request in flight: nothing to blame. */
static void test_no_request(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 60 * GiB, VRT_PHASE_kv_cache);
	request(1, 1);
	alloc(0, 0x3000, 1 * GiB, VRT_PHASE_forward);
	request(1, 2);
	oom(VRT_API_cuMemAlloc_v2, 0, 8 * GiB, 5 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	diagnose(NULL);
	STR(vrt_diagnose_verdict_name(dg.verdict), "inconclusive",
	    "no request: inconclusive");
	STR(dg.detail, "no_request_in_flight", "no request: detail");
	EQ(dg.rung, -1, "no request: no rung named");
	ok(dg.have_ladder, "no request: the ladder is still shown");
	teardown();
}

/* Keep-alive connections held idle by a client pool are not requests:
 * the server annotates its requests; one alone, two, then four at once. */
static void test_keepalive(void)
{
	const uint64_t q = 2 * GiB + 512 * MiB;
	int i;

	setup(1, 80 * GiB);
	probe(0, 80 * GiB, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 57 * GiB + 512 * MiB, VRT_PHASE_kv_cache);
	request(1, 1);
	for (i = 0; i < 6; i++)
		net(VRT_NET_ACCEPT, 20 + (uint64_t)i); /* idle keep-alive */
	alloc(0, 0x3000, q, VRT_PHASE_forward);
	free_(0x3000);
	request(1, 2);
	request(2, 1);
	request(3, 1);
	alloc(0, 0x3000, q, VRT_PHASE_forward);
	alloc(0, 0x3100, q, VRT_PHASE_forward);
	free_(0x3000);
	free_(0x3100);
	request(2, 2);
	request(3, 2);
	for (i = 0; i < 4; i++)
		request(4 + (uint64_t)i, 1);
	for (i = 0; i < 3; i++)
		alloc(0, 0x4000 + (uint64_t)i * 0x100, q, VRT_PHASE_forward);
	oom(VRT_API_cuMemAlloc_v2, 0, q, 1 * GiB, 80 * GiB, VRT_PHASE_forward);
	diagnose(NULL);
	EQ(r.max_inflight, 4, "keep-alive: at most 4 in flight, not 10");
	EQ(r.fails[0].inflight, 4, "keep-alive: 4 in flight at the failure");
	EQ(r.single_request_peak_bytes, q,
	   "keep-alive: the lone request's 2.5 GiB");
	STR(vrt_diagnose_verdict_name(dg.verdict), "concurrency",
	    "keep-alive: concurrency");
	EQ(value("requests_that_fit"), 3, "keep-alive: 3 fit");
	teardown();
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
	if (argv)
		command(argv, argc);
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


/* ---- the engine's log (diagnose.h a-f) ------------------------------------ */

static struct vrt_diag_log lg;

static void log_reset(void)
{
	memset(&lg, 0, sizeof(lg));
	snprintf(lg.engine, sizeof(lg.engine), "vLLM");
}

/* a. Two tensor-parallel workers fail; replay takes the earlier, the
 * engine's log names the later: the log's wins, and the reason says so.
 * A failure replay cannot call fatal (its process's end is unknown and it
 * allocated after it) is fatal when the log names it. */
static void test_log_fatal(void)
{
	char *worker[] = {"/usr/bin/python3", "-c",
	                  "from multiprocessing.spawn import spawn_main; "
	                  "spawn_main(tracker_fd=5, pipe_handle=7)",
	                  "--multiprocessing-fork"};
	uint32_t w1, w2;

	setup(2, 80 * GiB);
	w1 = add_proc(43, 42, worker, N(worker));
	w2 = add_proc(44, 42, worker, N(worker));
	cur_proc = w1;
	alloc(0, 0x1000, 7 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 64 * GiB, VRT_PHASE_kv_cache);
	cur_proc = w2;
	alloc(1, 0x1000, 7 * GiB, VRT_PHASE_weights);
	alloc(1, 0x2000, 64 * GiB, VRT_PHASE_kv_cache);
	cur_proc = 0;
	request(1, 1);
	cur_proc = w1;
	oom(VRT_API_cuMemAlloc_v2, 0, 16 * GiB, 9 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	cur_proc = w2;
	oom(VRT_API_cuMemAlloc_v2, 1, 16 * GiB, 9 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	exited(0, VRT_EXIT_CODE, 1);
	exited(w1, VRT_EXIT_CODE, 1);
	exited(w2, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	EQ(dg.failure, 0, "log fatal: replay alone takes the earlier failure");
	log_reset();
	lg.have_fatal_failure = 1;
	lg.fatal_failure = 1;
	lg.fatal_line = 20;
	snprintf(lg.fatal_why, sizeof(lg.fatal_why),
	         "the log's fatal error (line 20, torch_oom) is the failed "
	         "cuMemAlloc_v2 of 16.00 GiB on device 1");
	rediagnose(&lg);
	EQ(dg.failure, 1, "log fatal: the failure the log names is decisive");
	ok(dg.log_fatal && dg.have_log, "log fatal: said so in the result");
	EQ(dg.device, 1, "log fatal: its device");
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "log fatal: the ladder on its device");
	ok(strstr(dg.confidence_reason, "the engine's log names") != NULL,
	   "log fatal: the confidence reason names the log (%s)",
	   dg.confidence_reason);
	ok(has_evidence_text("log_fatal_failure",
	                     "the trace alone would have taken the failure"),
	   "log fatal: the evidence says what replay would have taken");
	EQ(value("log_fatal_failure"), 20, "log fatal: its log line");
	teardown();

	/* no exit status recorded, the process allocated after the failure */
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 60 * GiB, VRT_PHASE_kv_cache);
	request(1, 1);
	oom(VRT_API_cuMemAlloc_v2, 0, 8 * GiB, 6 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	alloc(0, 0x3000, 1 * MiB, VRT_PHASE_forward);
	diagnose(NULL);
	STR(vrt_diagnose_confidence_name(dg.confidence), "medium",
	    "log fatal: without the log a failure the process outlived");
	log_reset();
	lg.have_fatal_failure = 1;
	lg.fatal_failure = 0;
	lg.fatal_line = 9;
	snprintf(lg.fatal_why, sizeof(lg.fatal_why), "named");
	rediagnose(&lg);
	STR(vrt_diagnose_confidence_name(dg.confidence), "high",
	    "log fatal: the log says the process died of it");
	ok(strstr(dg.confidence_reason, "line 9") != NULL,
	   "log fatal: with its line (%s)", dg.confidence_reason);
	teardown();
}

/* b. The command line left the context at its default; the engine
 * printed it: the action carries the number. */
static void test_log_flags(void)
{
	char *argv[] = {"vllm", "serve", "m"};

	setup(1, 80 * GiB);
	command(argv, N(argv));
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 58 * GiB, VRT_PHASE_kv_cache);
	request(1, 1);
	oom(VRT_API_cuMemAlloc_v2, 0, 12 * GiB, 8 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	ok(!has_action("(was 8192)"), "log flags: without the log no number");
	log_reset();
	lg.flags.max_model_len = 8192;
	lg.flags.max_num_seqs = 256;
	lg.flags.engine = VRT_ENGINE_VLLM;
	lg.printed = VRT_DIAG_LOG_CTX | VRT_DIAG_LOG_SEQS | VRT_DIAG_LOG_ENGINE;
	rediagnose(&lg);
	STR(dg.detail, "context_too_long", "log flags: the verdict unchanged");
	{
		char all[VRT_DIAG_MAX_ITEMS / 3 * VRT_DIAG_TEXT] = "";
		size_t k;
		for (k = 0; k < dg.nactions; k++) {
			strcat(all, dg.actions[k]);
			strcat(all, " / ");
		}
		ok(has_action("--max-model-len") && has_action("(was 8192)"),
		   "log flags: the log's 8192 in the context action (got '%s')",
		   all);
	}
	EQ(dg.flags_from_log, VRT_DIAG_LOG_CTX | VRT_DIAG_LOG_SEQS,
	   "log flags: the two defaults filled, the engine known already");
	ok(has_evidence_text("flags_from_log", "max_model_len, max_num_seqs"),
	   "log flags: said as evidence");
	EQ(vrt_diagnose_fill_flags(&dg.flags, &lg.flags, lg.printed), 0,
	   "log flags: a flag already set is never overwritten");
	teardown();
}

/* c. The trace saw no request (connections not recorded): the engine's
 * ready line ends the load stage. */
static void test_log_ready(void)
{
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 60 * GiB, VRT_PHASE_kv_cache);
	oom(VRT_API_cuMemAlloc_v2, 0, 8 * GiB, 6 * GiB, 80 * GiB,
	    VRT_PHASE_forward);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(dg.stage, "load", "log ready: without it a load-stage failure");
	STR(dg.detail, "batch_activations",
	    "log ready: taken for a warm-up batch");
	log_reset();
	lg.have_ready = 1;
	lg.ready_ts = 1500; /* after the reserve, before the failure */
	lg.ready_line = 12;
	rediagnose(&lg);
	STR(dg.stage, "request", "log ready: the request stage");
	STR(dg.detail, "no_request_in_flight",
	    "log ready: serving with no request traced: inconclusive");
	ok(dg.log_ready && find("engine_ready"), "log ready: said so");
	lg.ready_ts = 5000; /* after the failure: no change */
	rediagnose(&lg);
	STR(dg.stage, "load", "log ready: a failure before it stays load");
	teardown();

	/* died without a failure, after the engine said it serves */
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 10 * GiB, VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(dg.detail, "died_while_loading", "log ready: died loading");
	log_reset();
	lg.have_ready = 1;
	lg.ready_ts = 0;
	rediagnose(&lg);
	STR(dg.detail, "died_while_serving", "log ready: died serving");
	STR(dg.stage, "request", "log ready: request stage");
	teardown();
}

/* vLLM's KV check as logcheck.c builds it: 64 GiB needed, 57.5 left of
 * 0.9 x 80 GiB, its estimate 117760 tokens and the trace's. */
static void vllm_refusal(int agree)
{
	struct vrt_diag_refusal *x = &lg.refusal;

	log_reset();
	lg.have_refusal = 1;
	x->verdict = VRT_VERDICT_KV_CACHE;
	x->rung = VRT_RUNG_RESERVES;
	snprintf(x->detail, sizeof(x->detail),
	         "max_model_len_exceeds_kv_cache");
	snprintf(x->stage, sizeof(x->stage), "load");
	snprintf(x->flag, sizeof(x->flag), "--max-model-len");
	x->device = 0;
	x->line = 5;
	x->needed_bytes = 64 * GiB;
	x->budget_bytes = 72 * GiB;
	x->have_engine_value = x->have_trace_value = 1;
	x->engine_value = 117760;
	x->trace_value = agree ? 117760 : 90112;
	x->agree = agree;
	x->nevidence = 1;
	snprintf(x->evidence[0].key, sizeof(x->evidence[0].key),
	         "engine_suggested_max_model_len");
	x->evidence[0].value = 117760;
	x->evidence[0].unit = VRT_DIAG_TOKENS;
	snprintf(x->evidence[0].text, sizeof(x->evidence[0].text),
	         "vLLM estimates the maximum model length at 117760");
	x->nactions = 1;
	snprintf(x->actions[0], sizeof(x->actions[0]),
	         "vLLM: lower the context: --max-model-len 117760");
}

/* d, e. No allocation failed; the engine refused to start for its KV
 * budget and exited 1: the verdict of that budget, not inconclusive. */
static void test_log_refusal(void)
{
	setup(1, 80 * GiB);
	probe(0, 80 * GiB, 80 * GiB);
	alloc(0, 0x1000, 14 * GiB, VRT_PHASE_weights);
	alloc(0, 0x2000, 512 * MiB, VRT_PHASE_profile);
	free_(0x2000);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	STR(dg.detail, "died_while_loading",
	    "refusal: the trace alone is inconclusive");
	vllm_refusal(1);
	rediagnose(&lg);
	STR(vrt_diagnose_verdict_name(dg.verdict), "kv_cache",
	    "refusal: the KV cache's verdict");
	STR(dg.detail, "max_model_len_exceeds_kv_cache", "refusal: detail");
	STR(dg.stage, "load", "refusal: load stage");
	ok(dg.log_refusal && !dg.have_failure, "refusal: from the log");
	EQ(dg.rung, VRT_RUNG_RESERVES, "refusal: the reserves rung");
	EQ(dg.capacity_bytes, 72 * GiB, "refusal: the engine's budget");
	ok(rung_is(VRT_RUNG_WEIGHTS, 14 * GiB, 14 * GiB, 1) &&
	           rung_is(VRT_RUNG_RESERVES, 64 * GiB, 78 * GiB, 0),
	   "refusal: the KV it wanted on the reserves rung does not fit");
	EQ(value("engine_suggested_max_model_len"), 117760,
	   "refusal: the engine's value beside ours");
	ok(has_action("--max-model-len 117760"), "refusal: its action");
	STR(vrt_diagnose_confidence_name(dg.confidence), "high",
	    "refusal: high when the trace agrees");
	ok(strstr(dg.confidence_reason, "trace agrees") != NULL,
	   "refusal: the reason says it agrees (%s)", dg.confidence_reason);
	EQ(value("exit_status"), 1, "refusal: how it ended");
	vllm_refusal(0);
	rediagnose(&lg);
	STR(vrt_diagnose_confidence_name(dg.confidence), "medium",
	    "refusal: medium when the trace disagrees");
	teardown();

	/* a failure the process died of stands behind: the ladder decides,
	 * the refusal's values are evidence beside it */
	setup(1, 80 * GiB);
	alloc(0, 0x1000, 40 * GiB, VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 45 * GiB, 40 * GiB, 80 * GiB,
	    VRT_PHASE_kv_cache);
	exited(0, VRT_EXIT_CODE, 1);
	diagnose(NULL);
	vllm_refusal(1);
	rediagnose(&lg);
	STR(dg.detail, "kv_reserve", "refusal beside: the ladder's verdict");
	ok(!dg.log_refusal && dg.have_failure,
	   "refusal beside: not the verdict");
	EQ(value("engine_suggested_max_model_len"), 117760,
	   "refusal beside: its value as evidence");
	ok(!has_action("--max-model-len 117760"),
	   "refusal beside: the ladder's actions only");
	lg.refusal.verdict = VRT_VERDICT_CONCURRENCY;
	rediagnose(&lg);
	STR(vrt_diagnose_confidence_name(dg.confidence), "medium",
	    "refusal beside: another budget than the ladder's lowers it");
	teardown();
}

/* f. The engine's numbers beside the rungs; one that disagrees on the
 * verdict's rung makes it less sure. */
static void test_log_numbers(void)
{
	struct vrt_diag_engine_number *n;
	int i;

	setup(1, 24 * GiB);
	for (i = 0; i < 11; i++)
		alloc(0, 0x1000 + (uint64_t)i * 0x100, 2 * GiB,
		      VRT_PHASE_weights);
	oom(VRT_API_cuMemAlloc_v2, 0, 4 * GiB, 2 * GiB, 24 * GiB,
	    VRT_PHASE_weights);
	exited(0, VRT_EXIT_CODE, 1);
	log_reset();
	n = &lg.numbers[lg.nnumbers++];
	n->rung = VRT_RUNG_WEIGHTS;
	snprintf(n->what, sizeof(n->what), "weights");
	n->device = 0;
	n->engine_bytes = 22 * GiB;
	n->traced_bytes = 22 * GiB;
	diagnose_log(NULL, &lg);
	STR(dg.detail, "card_too_small", "numbers: the verdict");
	ok(dg.ladder[VRT_RUNG_WEIGHTS].have_engine &&
	           dg.ladder[VRT_RUNG_WEIGHTS].engine_bytes == 22 * GiB &&
	           !dg.ladder[VRT_RUNG_RESERVES].have_engine,
	   "numbers: the engine's weights beside the weights rung");
	STR(vrt_diagnose_confidence_name(dg.confidence), "high",
	    "numbers: agreeing numbers change nothing");
	ok(!find("engine_weights_bytes"), "numbers: no evidence when agreed");
	n->engine_bytes = 16 * GiB;
	n->diff_percent = 37.5;
	n->disagrees = 1;
	rediagnose(&lg);
	EQ(value("engine_weights_bytes"), 16 * GiB,
	   "numbers: a disagreeing number is evidence");
	STR(vrt_diagnose_confidence_name(dg.confidence), "medium",
	    "numbers: on the verdict's rung it lowers the confidence");
	teardown();
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/data";

	test_concurrency();
	test_kv_context();
	test_kv_context_past_reserve();
	test_kv_reserve();
	test_weights();
	test_not_sharded();
	test_host();
	test_host_samples();
	test_other();
	test_pool_kept();
	test_none();
	test_recovered_none();
	test_recovered_then_fatal();
	test_profile_oom();
	test_graph_capture();
	test_llama_pool();
	test_listen_first();
	test_tp_spawn();
	test_llama_visible();
	test_on_demand_load();
	test_died_loading();
	test_no_request();
	test_keepalive();
	test_log_fatal();
	test_log_flags();
	test_log_ready();
	test_log_refusal();
	test_log_numbers();
	test_model_in_diagnosis(dir);
	test_margin();
	test_llama_ubatch_cap();
	test_none_margin();
	test_over_capacity();
	test_identity_conflict();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
