/*
 * Unit tests of replay.c (and the JSON writer) on hand-made event arrays
 * fed in batches: peaks and their times, family attribution of frees, VMM
 * handle/mapping reference semantics, unmatched frees, baseline, failures,
 * phases, requests in flight, the sites live at the peak (lazy snapshots
 * over several peaks), folded REPEAT pairs, devices that appear while
 * streaming and their final order (device_remap); and attrib.c's
 * inference. TAP output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "json.h"
#include "load.h"
#include "replay.h"

static int ntests, nfailed;

static void ok(int cond, const char *fmt, ...)
{
	va_list ap;

	ntests++;
	if (!cond)
		nfailed++;
	printf("%s %d - ", cond ? "ok" : "not ok", ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#define EQ(a, b, name)                                                         \
	ok((unsigned long long)(a) == (unsigned long long)(b),                 \
	   "%s (got %llu, want %llu)", name, (unsigned long long)(a),          \
	   (unsigned long long)(b))

#define GiB (1ull << 30)

/* A trace with one process and ndev devices; events appended by ev(). */
static struct vrt_trace t;
static struct vrt_replay r;
static struct vrt_failinfo fails[8];
/* The events of the trace being built (the stream). */
static struct vrt_event *evs;
static size_t nev;

static void setup(size_t ndev)
{
	static struct vrt_process proc;
	static struct vrt_device devs[4];

	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	memset(&proc, 0, sizeof(proc));
	memset(devs, 0, sizeof(devs));
	proc.pid = 42;
	t.procs = &proc;
	t.nprocs = 1;
	t.devices = devs;
	t.ndevices = ndev;
	t.fails = fails;
	t.nfails = 8;
	evs = calloc(64, sizeof(*evs));
	nev = 0;
}

static void ev(int kind, unsigned api, int dev, uint64_t addr, uint64_t size,
               uint64_t aux)
{
	struct vrt_event *e = &evs[nev];
	e->ts = (int64_t)nev * 1000; /* 1 us apart, in order */
	e->kind = (uint8_t)kind;
	e->api = (uint16_t)api;
	e->device = dev;
	e->addr = addr;
	e->size = size;
	e->aux = aux;
	nev++;
}

/* The last event gets a phase and a stack. */
static void tag(uint32_t phase, uint32_t stack)
{
	evs[nev - 1].phase = phase;
	evs[nev - 1].stack = stack;
}

/* Feeds the events in batches of 3 (batch edges must not matter). */
static void replay(void)
{
	size_t i;
	int rc = vrt_replay_begin(&r, &t);

	for (i = 0; i < nev && !rc; i += 3)
		rc = vrt_replay_feed(&r, &t, evs + i,
		                     nev - i < 3 ? nev - i : 3);
	ok(!rc && vrt_replay_end(&r, &t) == 0, "replay runs");
}

static void teardown(void)
{
	vrt_replay_free(&r);
	free(evs);
	evs = NULL;
}

/* The site of (device, phase slot, stack) at the peak, or NULL. */
static const struct vrt_replay_site *site(int32_t dev, uint32_t slot,
                                          uint32_t stack)
{
	size_t i;

	for (i = 0; i < r.nsites; i++)
		if (r.sites[i].device == dev && r.sites[i].phase == slot &&
		    r.sites[i].stack == stack)
			return &r.sites[i];
	return NULL;
}

static void test_peaks(void)
{
	const struct vrt_replay_device *d;

	setup(2);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 4 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAllocAsync, 0, 0x2000, 2 * GiB, 7);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 1, 0x3000, 1 * GiB, 0);
	/* cuMemFree_v2 of an async pointer: async loses the bytes */
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x2000, 0, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAllocManaged, 0, 0x4000, 1 * GiB, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemHostAlloc, -1, 0x5000, 3 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemFreeHost, -1, 0x5000, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->fam[VRT_FAM_ASYNC].frees, 1, "async free counted on async");
	EQ(d->fam[VRT_FAM_DEVICE].frees, 0, "device family has no frees");
	EQ(d->fam[VRT_FAM_ASYNC].live_bytes, 0, "async live 0 at end");
	EQ(d->peak_bytes, 6 * GiB, "device 0 peak = 4+2 GiB");
	EQ(d->peak_ts, 1000, "peak time is the second alloc");
	EQ(d->peak_by_phase[0], 6 * GiB, "peak split: all unattributed");
	EQ(d->tracked_bytes, 5 * GiB, "device 0 live at end = 4+1 GiB");
	EQ(r.dev[1].peak_bytes, 1 * GiB, "device 1 peak");
	EQ(r.host[VRT_FAM_PINNED].peak_bytes, 3 * GiB, "pinned peak");
	EQ(r.host[VRT_FAM_PINNED].live_bytes, 0, "pinned live at end");
	EQ(r.host_pinned_peak, 3 * GiB, "host page-locked peak");
	EQ(d->fam[VRT_FAM_DEVICE].peak_bytes, 4 * GiB, "device family peak");
	EQ(r.unmatched_frees, 0, "no unmatched frees");
	teardown();
}

static void test_vmm_release_before_unmap(void)
{
	const struct vrt_replay_device *d;

	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAddressReserve, 0, 0x100000, 8 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemCreate, 0, 0xa, 2 * GiB, 0);
	ev(VRT_EV_MAP, VRT_API_cuMemMap, 0, 0x100000, 2 * GiB, 0xa);
	ev(VRT_EV_MAP, VRT_API_cuMemMap, 0, 0x900000, 2 * GiB, 0xa);
	ev(VRT_EV_FREE, VRT_API_cuMemRelease, -1, 0xa, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->fam[VRT_FAM_VMM].live_bytes, 2 * GiB,
	   "released but mapped twice: bytes stay");
	EQ(d->fam[VRT_FAM_VMM].frees, 1, "the release counts as a free");
	EQ(d->fam[VRT_FAM_VA].live_bytes, 8 * GiB, "reserved VA apart");
	EQ(d->tracked_bytes, 2 * GiB, "VA is not in tracked bytes");
	vrt_replay_free(&r);
	memset(&r, 0, sizeof(r));
	ev(VRT_EV_UNMAP, VRT_API_cuMemUnmap, 0, 0x100000, 2 * GiB, 0);
	replay();
	EQ(r.dev[0].fam[VRT_FAM_VMM].live_bytes, 2 * GiB,
	   "one mapping left: bytes stay");
	vrt_replay_free(&r);
	memset(&r, 0, sizeof(r));
	ev(VRT_EV_UNMAP, VRT_API_cuMemUnmap, 0, 0x900000, 2 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemAddressFree, -1, 0x100000, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->fam[VRT_FAM_VMM].live_bytes, 0, "last unmap returns the bytes");
	EQ(d->fam[VRT_FAM_VA].live_bytes, 0, "VA freed");
	EQ(d->fam[VRT_FAM_VA].peak_bytes, 8 * GiB, "VA peak");
	EQ(d->peak_bytes, 2 * GiB, "device peak counts the handle once");
	EQ(r.unmatched_frees, 0, "nothing unmatched");
	teardown();
}

static void test_vmm_unmap_first_and_ranges(void)
{
	const struct vrt_replay_device *d;

	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemCreate, 0, 1, 1 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemCreate, 0, 2, 1 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemCreate, 0, 3, 1 * GiB, 0);
	ev(VRT_EV_MAP, VRT_API_cuMemMap, 0, 0x40000000, 1 * GiB, 1);
	ev(VRT_EV_MAP, VRT_API_cuMemMap, 0, 0x80000000, 1 * GiB, 2);
	/* a hole at 0xc0000000 */
	ev(VRT_EV_MAP, VRT_API_cuMemMap, 0, 0x100000000, 1 * GiB, 3);
	/* one unmap over all three (contiguous walk, then a scan) */
	ev(VRT_EV_UNMAP, VRT_API_cuMemUnmap, 0, 0x40000000, 4 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemRelease, -1, 1, 0, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemRelease, -1, 2, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->fam[VRT_FAM_VMM].live_bytes, 1 * GiB,
	   "unmapped first, released: bytes back; handle 3 still live");
	EQ(d->fam[VRT_FAM_VMM].peak_bytes, 3 * GiB, "vmm peak");
	EQ(r.unmatched_frees, 0, "no unmatched");
	vrt_replay_free(&r);
	memset(&r, 0, sizeof(r));
	ev(VRT_EV_UNMAP, VRT_API_cuMemUnmap, 0, 0x40000000, 4 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemRelease, -1, 3, 0, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemRelease, -1, 3, 0, 0);
	replay();
	EQ(r.dev[0].fam[VRT_FAM_VMM].live_bytes, 0, "all returned");
	EQ(r.unmatched_frees, 2, "second unmap and second release unmatched");
	teardown();
}

static void test_unmatched_and_noise(void)
{
	setup(1);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0xdead, 0, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0, 0, 0); /* cudaFree(0) */
	ev(VRT_EV_FREE, VRT_API_cuMemFreeHost, -1, 0xbeef, 0, 0);
	/* the same address in another space is not a match */
	ev(VRT_EV_ALLOC, VRT_API_cuMemHostAlloc, -1, 0x1000, 1 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x1000, 0, 0);
	/* unknown api and out-of-range device: ignored, no crash */
	ev(VRT_EV_ALLOC, 200, 0, 0x2000, 1 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 7, 0x3000, 1 * GiB, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x3000, 0, 0);
	/* an address allocated twice (lost free): the new one replaces it */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x4000, 1 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x4000, 2 * GiB, 0);
	replay();
	EQ(r.unmatched_frees, 3, "three unmatched frees");
	EQ(r.host[VRT_FAM_PINNED].live_bytes, 1 * GiB, "pinned untouched");
	EQ(r.dev[0].tracked_bytes, 2 * GiB, "replaced allocation");
	teardown();
}

static void test_baseline_and_failures(void)
{
	const struct vrt_replay_device *d;
	char buf[32];

	setup(2);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 3 * GiB, 0);
	/* 80 GiB total, 70 free: 10 used, 3 of them ours -> 7 before us */
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 70 * GiB, 80 * GiB, 0);
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 10 * GiB, 80 * GiB, 0);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 90 * GiB, 2);
	evs[nev - 1].flags = VRT_EV_HAVE_INFO;
	evs[nev - 1].extra = 3;
	fails[3].free_bytes = 66 * GiB;
	fails[3].total_bytes = 80 * GiB;
	ev(VRT_EV_FAIL, VRT_API_cuMemFree_v2, 0, 0x77, 0, 1);
	ev(VRT_EV_FAIL, VRT_API_cuMemHostAlloc, -1, 0, 1 * GiB, 2);
	ev(VRT_EV_FAIL, VRT_API_cuMemAddressReserve, 0, 0, 1 * GiB, 2);
	replay();
	d = &r.dev[0];
	ok(d->have_baseline, "baseline probed on device 0");
	EQ(d->baseline_used_bytes, 7 * GiB, "baseline = used - ours");
	ok(!r.dev[1].have_baseline, "device 1 never probed");
	EQ(r.nfails, 4, "four failures");
	EQ(r.ooms, 3, "three out-of-memory on allocating calls");
	ok(r.fails[0].oom && r.fails[0].have_info &&
	           r.fails[0].free_bytes == 66 * GiB,
	   "first failure carries driver info");
	EQ(r.fails[0].live_by_phase[0], 3 * GiB, "live bytes at failure");
	ok(!r.fails[1].oom, "a failed free is not an OOM");
	EQ(d->fam[VRT_FAM_DEVICE].failed, 2, "failed counted on device family");
	EQ(r.host[VRT_FAM_PINNED].failed, 1, "host failure counted");
	EQ(d->fam[VRT_FAM_VA].failed, 1, "VA failure counted apart");
	ok(!strcmp(vrt_replay_error_name(VRT_API_cuMemAlloc_v2, 2, buf,
	                                 sizeof(buf)),
	           "CUDA_ERROR_OUT_OF_MEMORY"),
	   "error name 2");
	ok(!strcmp(vrt_replay_error_name(VRT_API_cuMemAlloc_v2, 12345, buf,
	                                 sizeof(buf)),
	           "error 12345"),
	   "unknown error name");
	teardown();
}

static void test_many_live(void)
{
	size_t i, n = 20000;

	setup(1);
	free(evs);
	evs = calloc(2 * n, sizeof(*evs));
	for (i = 0; i < n; i++)
		ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x10000 + i * 512,
		   512, 0);
	for (i = 0; i < n; i += 2)
		ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x10000 + i * 512, 0,
		   0);
	replay();
	EQ(r.dev[0].peak_bytes, n * 512, "peak over many allocations");
	EQ(r.dev[0].tracked_bytes, n / 2 * 512, "half freed (table growth)");
	EQ(r.unmatched_frees, 0, "every free found");
	teardown();
}

static void test_json_escape(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct vrt_json w;

	vrt_json_init(&w, f);
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "s");
	vrt_json_string_n(&w, "a\"b\\c\n\x01\xff\xc3\xa9\0z", 12);
	vrt_json_key(&w, "t");
	vrt_json_seconds(&w, 1500000000);
	vrt_json_key(&w, "e");
	vrt_json_begin_array(&w);
	vrt_json_end_array(&w);
	vrt_json_end_object(&w);
	fclose(f);
	ok(out && !strcmp(out, "{\n  \"s\": \"a\\\"b\\\\c\\n\\u0001\\ufffd"
	                       "\xc3\xa9\\u0000z\",\n  \"t\": 1.5,\n"
	                       "  \"e\": []\n}"),
	   "json escaping and layout");
	if (out && nfailed)
		printf("# %s\n", out);
	free(out);
}

static void test_phases_and_requests(void)
{
	const struct vrt_replay_device *d;
	const struct vrt_replay_failure *f;
	size_t i;

	setup(1);
	t.nstacks = 4; /* stacks 1..3 exist (frames are not looked at) */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 4 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 2 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x3000, 3 * GiB, 0);
	tag(VRT_PHASE_kv_cache, 2);
	/* an OOM before any listen(): stage load */
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 70 * GiB, 2);
	tag(VRT_PHASE_kv_cache, 2);
	ev(VRT_EV_NET, 0, -1, 5, 8000, VRT_NET_LISTEN);
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT); /* 1 in flight */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x4000, 1 * GiB, 0);
	tag(VRT_PHASE_forward, 3);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT); /* 2 */
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT); /* lost close: 2 */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x5000, 2 * GiB, 0);
	tag(VRT_PHASE_forward, 3); /* the peak: 12 GiB */
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 3);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x4000, 0, 0);
	ev(VRT_EV_NET, 0, -1, 9, 0, VRT_NET_CLOSE);  /* 1: forward 2 GiB */
	ev(VRT_EV_NET, 0, -1, 77, 0, VRT_NET_CLOSE); /* unknown fd */
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x5000, 0, 0);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_CLOSE); /* 0 */
	ev(VRT_EV_MARK, 0, -1, 0, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->phase[VRT_PHASE_weights].allocs, 2, "weights allocs");
	EQ(d->phase[VRT_PHASE_weights].peak_bytes, 6 * GiB, "weights peak");
	EQ(d->phase[VRT_PHASE_kv_cache].failed, 1, "kv_cache failed");
	EQ(d->phase[VRT_PHASE_forward].peak_bytes, 3 * GiB, "forward peak");
	EQ(d->phase[VRT_PHASE_forward].live_bytes, 0, "forward live at end");
	EQ(d->phase[VRT_PHASE_forward].frees, 2, "forward frees");
	EQ(d->peak_bytes, 12 * GiB, "device peak");
	EQ(d->peak_by_phase[VRT_PHASE_forward], 3 * GiB, "peak split forward");
	EQ(d->peak_by_phase[VRT_PHASE_weights], 6 * GiB, "peak split weights");
	ok(r.have_server_ready && r.server_ready_ts == 4000 &&
	           r.server_port == 8000,
	   "server ready at the listen");
	EQ(r.max_inflight, 2, "max in flight (a repeated accept counts once)");
	EQ(r.inflight, 0, "none in flight at the end");
	EQ(r.connections, 2, "two connections");
	ok(r.have_single_request, "one request alone at some point");
	EQ(r.single_request_peak_bytes, 2 * GiB,
	   "single-request forward peak: after the first close");
	EQ(r.nfails, 2, "two failures");
	f = &r.fails[0];
	ok(!f->after_ready && f->inflight == 0 &&
	           f->phase == VRT_PHASE_kv_cache,
	   "first OOM: load stage, kv_cache, none in flight");
	f = &r.fails[1];
	ok(f->after_ready && f->inflight == 2 &&
	           f->phase == VRT_PHASE_forward &&
	           f->live_by_phase[VRT_PHASE_forward] == 3 * GiB,
	   "second OOM: request stage, forward, two in flight");
	EQ(r.nmarks, 1, "one mark");
	/* sites at the peak: weights (stack 1, 2 allocs), kv (2), fwd (3) */
	EQ(r.nsites, 3, "three sites at the peak");
	for (i = 0; i < r.nsites; i++) {
		const struct vrt_replay_site *x = &r.sites[i];
		if (x->phase == VRT_PHASE_weights)
			ok(x->stack == 1 && x->bytes == 6 * GiB &&
			           x->allocs == 2,
			   "weights site: stack 1, 6 GiB, 2 allocations");
		else if (x->phase == VRT_PHASE_forward)
			ok(x->stack == 3 && x->bytes == 3 * GiB &&
			           x->allocs == 2,
			   "forward site: stack 3, 3 GiB, 2 allocations");
		else
			ok(x->phase == VRT_PHASE_kv_cache && x->stack == 2 &&
			           x->bytes == 3 * GiB,
			   "kv_cache site");
	}
	teardown();
}

static void test_request_annotations(void)
{
	setup(1);
	/* annotated requests: connections of the same process are ignored */
	ev(VRT_EV_REQUEST, 0, -1, 1, 0, 1);
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_REQUEST, 0, -1, 2, 0, 1);
	ev(VRT_EV_REQUEST, 0, -1, 1, 0, 2);
	ev(VRT_EV_REQUEST, 0, -1, 2, 0, 2);
	ev(VRT_EV_REQUEST, 0, -1, 2, 0, 2); /* end twice: ignored */
	replay();
	EQ(r.max_inflight, 2, "two annotated requests at once");
	EQ(r.connections, 0, "connections not counted");
	EQ(r.requests, 2, "two requests");
	EQ(r.single_request_peak_bytes, 1 * GiB, "single-request peak");
	ok(!r.have_server_ready, "no listen: not ready");
	teardown();
	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	replay();
	ok(!r.have_single_request, "never one request: no single peak");
	teardown();
	setup(1);
	/* connections first, requests later: from the first REQUEST on,
	 * the process's connections (open ones too) stop counting */
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT);
	ev(VRT_EV_REQUEST, 0, -1, 1, 0, 1);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT);
	ev(VRT_EV_REQUEST, 0, -1, 1, 0, 2);
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_CLOSE);
	replay();
	EQ(r.max_inflight, 1, "one in flight at most");
	EQ(r.inflight, 0, "none at the end");
	EQ(r.connections, 0, "connections not counted");
	EQ(r.requests, 1, "one request");
	teardown();
}

static void test_inference(void)
{
	setup(1);
	t.nprocs = 1;
	/* probe: 40 GiB free */
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 40 * GiB, 48 * GiB, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 12 * GiB, 0);
	/* under a quarter of the probe's free bytes */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 9 * GiB, 0);
	/* another thread */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x3000, 12 * GiB, 0);
	evs[nev - 1].tid = 2;
	/* a rule said so already */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x4000, 12 * GiB, 0);
	tag(VRT_PHASE_weights, 0);
	/* pinned host memory is no KV reserve */
	ev(VRT_EV_ALLOC, VRT_API_cuMemHostAlloc, 0, 0x5000, 12 * GiB, 0);
	/* after the window */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x6000, 12 * GiB, 0);
	evs[nev - 1].ts = 2000000000;
	/* a failed reserve right after a probe */
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 4 * GiB, 48 * GiB, 0);
	evs[nev - 1].ts = 3000000000;
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 6 * GiB, 2);
	evs[nev - 1].ts = 3000000001;
	{
		struct vrt_attrib *a = vrt_attrib_new(&t, NULL);
		ok(a && vrt_attrib_feed(a, &t, evs, 4) == 0 &&
		           vrt_attrib_feed(a, &t, evs + 4, nev - 4) == 0,
		   "attrib runs");
		vrt_attrib_free(a);
	}
	ok(evs[1].phase == VRT_LOAD_PHASE_INFERRED_KV &&
	           evs[1].phase_src == VRT_SRC_INFERRED,
	   "large allocation after a probe: kv_cache (inferred)");
	EQ(evs[2].phase, 0, "small: not inferred");
	EQ(evs[3].phase, 0, "other thread: not inferred");
	EQ(evs[4].phase, VRT_PHASE_weights, "rule phase kept");
	EQ(evs[5].phase, 0, "host memory: not inferred");
	EQ(evs[6].phase, 0, "after the window: not inferred");
	EQ(evs[8].phase, VRT_LOAD_PHASE_INFERRED_KV, "failed reserve tagged");
	teardown();
}

/* The sites at the final peak when the device peaked several times and
 * sites changed between (the lazy snapshots). */
static void test_sites_over_peaks(void)
{
	const struct vrt_replay_site *x;

	setup(1);
	r.top_sites = SIZE_MAX;
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 2 * GiB, 0);
	tag(VRT_PHASE_forward, 2); /* peak 1: 3 GiB */
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x2000, 0, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x3000, 1 * GiB, 0);
	tag(VRT_PHASE_kv_cache, 3);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x4000, 512ull << 20, 0);
	tag(VRT_PHASE_forward, 2);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x5000, 3 * GiB, 0);
	tag(VRT_PHASE_forward, 2); /* peak 2: 5.5 GiB */
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x1000, 0, 0);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x5000, 0, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x6000, 1 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x7000, 1 * GiB, 0);
	tag(VRT_PHASE_weights, 4); /* never live at a peak */
	replay();
	EQ(r.dev[0].peak_bytes, 5 * GiB + (512ull << 20), "peak 5.5 GiB");
	EQ(r.nsites, 3, "three sites at the last peak");
	x = site(0, VRT_PHASE_weights, 1);
	ok(x && x->bytes == 1 * GiB && x->allocs == 1,
	   "weights: its value at the peak, not its live value");
	x = site(0, VRT_PHASE_forward, 2);
	ok(x && x->bytes == 3 * GiB + (512ull << 20) && x->allocs == 2,
	   "forward: changed at the peak itself");
	x = site(0, VRT_PHASE_kv_cache, 3);
	ok(x && x->bytes == 1 * GiB && x->allocs == 1,
	   "kv_cache: unchanged since the peak");
	ok(!site(0, VRT_PHASE_weights, 4), "a later site is not at the peak");
	teardown();
}

/* REPEAT: folded alloc+free pairs count as allocations and frees, and
 * their bytes count once, momentarily, on top of what is live. */
static void test_repeat(void)
{
	const struct vrt_replay_device *d;
	const struct vrt_replay_site *x;

	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	/* 10 pairs of 2 GiB: a new peak (3 GiB) for an instant */
	ev(VRT_EV_REPEAT, VRT_API_cuMemAlloc_v2, 0, 10, 2 * GiB, 0);
	evs[nev - 1].extra = VRT_API_cuMemFree_v2;
	tag(VRT_PHASE_forward, 2);
	/* below the peak: changes no peak */
	ev(VRT_EV_REPEAT, VRT_API_cuMemAlloc_v2, 0, 5, 1 * GiB, 0);
	evs[nev - 1].extra = VRT_API_cuMemFree_v2;
	tag(VRT_PHASE_kv_cache, 3);
	/* pinned host pairs */
	ev(VRT_EV_REPEAT, VRT_API_cuMemHostAlloc, -1, 3, 4 * GiB, 0);
	evs[nev - 1].extra = VRT_API_cuMemFreeHost;
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x1000, 0, 0);
	replay();
	d = &r.dev[0];
	EQ(d->fam[VRT_FAM_DEVICE].allocs, 16, "1 + 10 + 5 allocations");
	EQ(d->fam[VRT_FAM_DEVICE].frees, 16, "1 + 10 + 5 frees");
	EQ(d->phase[VRT_PHASE_forward].allocs, 10, "forward: 10 allocations");
	EQ(d->phase[VRT_PHASE_forward].frees, 10, "forward: 10 frees");
	EQ(d->peak_bytes, 3 * GiB, "peak: live 1 GiB + one 2 GiB pair");
	EQ(d->peak_ts, 1000, "peak at the REPEAT");
	EQ(d->peak_by_phase[VRT_PHASE_forward], 2 * GiB, "peak split");
	EQ(d->phase[VRT_PHASE_forward].peak_bytes, 2 * GiB, "forward peak");
	EQ(d->phase[VRT_PHASE_kv_cache].peak_bytes, 1 * GiB, "kv peak");
	EQ(d->tracked_bytes, 0, "nothing live at the end");
	EQ(d->phase[VRT_PHASE_forward].live_bytes, 0, "pairs leave nothing");
	EQ(r.host[VRT_FAM_PINNED].allocs, 3, "pinned pairs counted");
	EQ(r.host[VRT_FAM_PINNED].peak_bytes, 4 * GiB, "pinned peak");
	EQ(r.host_pinned_bytes, 0, "no pinned bytes live");
	EQ(r.nsites, 2, "two sites at the peak");
	x = site(0, VRT_PHASE_forward, 2);
	ok(x && x->bytes == 2 * GiB && x->allocs == 1,
	   "the pair's site holds its size at the peak");
	x = site(0, VRT_PHASE_weights, 1);
	ok(x && x->bytes == 1 * GiB, "the live site too");
	teardown();
}

/* Devices named while streaming (the table grows between batches) and
 * their final order, applied by vrt_replay_end from device_remap. */
static void test_devices_remap(void)
{
	static uint32_t remap[2] = {1, 0};
	size_t i;

	setup(1);
	ev(VRT_EV_MARK, 0, -1, 0, 0, 0);
	evs[nev - 1].extra = 7;
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_weights, 1);
	ok(vrt_replay_begin(&r, &t) == 0 &&
	           vrt_replay_feed(&r, &t, evs, nev) == 0,
	   "first batch: one device");
	nev = 0;
	t.ndevices = 2; /* a second device appears */
	ev(VRT_EV_REQUEST, 0, -1, 1, 0, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 1, 0x2000, 3 * GiB, 0);
	tag(VRT_PHASE_forward, 2);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 1, 0, 8 * GiB, 2);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x2000, 0, 0);
	t.device_remap = remap; /* at the end: device 1 comes first */
	ok(vrt_replay_feed(&r, &t, evs, nev) == 0 &&
	           vrt_replay_end(&r, &t) == 0,
	   "second batch and end");
	EQ(r.ndevices, 2, "two devices");
	EQ(r.dev[1].peak_bytes, 1 * GiB, "stream device 0 is now 1");
	EQ(r.dev[0].peak_bytes, 3 * GiB, "stream device 1 is now 0");
	EQ(r.dev[0].fam[VRT_FAM_DEVICE].failed, 1, "failure moved");
	ok(r.dev[0].nseries > 0 && r.dev[1].nseries > 0 &&
	           r.dev[0].series[0].total == 3 * GiB,
	   "timelines moved with their devices");
	EQ(r.nfails, 1, "one failure");
	EQ(r.fails[0].device, 0, "failure device remapped");
	EQ(r.nsites, 2, "a site per device");
	ok(r.sites[0].device == 0 && r.sites[0].stack == 2 &&
	           r.sites[1].device == 1 && r.sites[1].stack == 1,
	   "sites remapped and in device order");
	EQ(r.nwindows, 1, "one window");
	EQ(r.windows[0].mark.label, 7, "the window's mark copied");
	EQ(r.marks[0].label, 7, "the mark copied");
	ok(r.windows[0].dev[0].peak_bytes == 3 * GiB &&
	           r.windows[0].dev[1].peak_bytes == 1 * GiB,
	   "window devices grown and remapped");
	ok(r.have_single_request && r.single_request_peak_device == 0,
	   "single-request device remapped");
	for (i = 0; i < r.nsites; i++)
		ok(r.sites[i].device < 2, "site device in range");
	t.device_remap = NULL;
	teardown();
}

int main(void)
{
	test_peaks();
	test_vmm_release_before_unmap();
	test_vmm_unmap_first_and_ranges();
	test_unmatched_and_noise();
	test_baseline_and_failures();
	test_many_live();
	test_phases_and_requests();
	test_request_annotations();
	test_inference();
	test_sites_over_peaks();
	test_repeat();
	test_devices_remap();
	test_json_escape();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
