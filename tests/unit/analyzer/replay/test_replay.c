/*
 * Unit tests of replay.c (and the JSON writer) on hand-made event arrays
 * fed in batches: peaks and their times, family attribution of frees, VMM
 * handle/mapping reference semantics, unmatched frees, baseline, failures,
 * phases, requests in flight, the sites live at the peak (lazy snapshots
 * over several peaks), folded REPEAT pairs, devices that appear while
 * streaming and their final order (device_remap), the common path for
 * plain pointers against a model and against the general path, bytes
 * that wrap; and attrib.c's inference. TAP output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/attrib.h"
#include "report/json.h"
#include "load/load.h"
#include "base/names.h"
#include "replay/replay.h"

#include "../tap.h"

#define GiB (1ull << 30)

/* A trace with one process (room for two: t.nprocs may be raised) and
 * ndev devices; events appended by ev(). */
static struct vrt_trace t;
static struct vrt_replay r;
static struct vrt_failinfo fails[8];
/* The events of the trace being built (the stream). */
static struct vrt_event *evs;
static size_t nev;

static void setup(size_t ndev)
{
	static struct vrt_process procs[3];
	static struct vrt_device devs[4];

	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	memset(procs, 0, sizeof(procs));
	memset(devs, 0, sizeof(devs));
	procs[0].pid = 42;
	procs[1].pid = 43;
	procs[2].pid = 44;
	t.procs = procs;
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
	ok(!strcmp(vrt_names_error(VRT_API_cuMemAlloc_v2, 2, buf, sizeof(buf)),
	           "CUDA_ERROR_OUT_OF_MEMORY"),
	   "error name 2");
	ok(!strcmp(vrt_names_error(VRT_API_cuMemAlloc_v2, 12345, buf,
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
	/* The first request alone grew 1 GiB; the one left after the
	 * overlap is not measured (its start level is unknown). */
	EQ(r.single_request_peak_bytes, 1 * GiB,
	   "single-request peak: the first request, alone from its start");
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

/* The last event: NET kind (extra) and flags. */
static void netx(unsigned kind, uint8_t flags)
{
	evs[nev - 1].extra = kind;
	evs[nev - 1].flags = flags;
}

/* A writer that follows HTTP/1.x requests: idle keep-alive connections
 * count zero, a request is in flight from REQ_BEGIN to REQ_END (or its
 * connection's CLOSE), connections of other protocols count nothing, a
 * unix socket's listen() is no server (ZMQ) unless HTTP came over it,
 * and the first request / answer / 2xx answer are kept. */
static void test_http_requests(void)
{
	setup(1);
	ev(VRT_EV_NET, 0, -1, 3, 0, VRT_NET_LISTEN); /* ipc:// bind, 0 */
	netx(VRT_NET_KIND_UNIX, 0);
	ev(VRT_EV_NET, 0, -1, 4, 3, VRT_NET_ACCEPT); /* the engine, 1000 */
	netx(VRT_NET_KIND_UNIX, 0);
	ev(VRT_EV_NET, 0, -1, 4, VRT_NET_PROTO_OTHER, VRT_NET_PROTO);
	ev(VRT_EV_NET, 0, -1, 5, 8000, VRT_NET_LISTEN); /* HTTP, 3000 */
	netx(VRT_NET_KIND_INET, 0);
	for (int fd = 10; fd < 16; fd++) { /* six keep-alive connections */
		ev(VRT_EV_NET, 0, -1, (uint64_t)fd, 5, VRT_NET_ACCEPT);
		netx(VRT_NET_KIND_INET, 0);
		ev(VRT_EV_NET, 0, -1, (uint64_t)fd, 0, VRT_NET_REQ_BEGIN);
		ev(VRT_EV_NET, 0, -1, (uint64_t)fd, 503, VRT_NET_REQ_END);
	}
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_REQ_BEGIN); /* one ... */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_NET, 0, -1, 11, 0, VRT_NET_REQ_BEGIN); /* ... two */
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_NET, 0, -1, 10, 200, VRT_NET_REQ_END);
	ev(VRT_EV_NET, 0, -1, 11, 0, VRT_NET_CLOSE); /* ends its request */
	ev(VRT_EV_NET, 0, -1, 11, 200, VRT_NET_REQ_END); /* unknown: no-op */
	replay();
	EQ(r.max_inflight, 2, "idle keep-alive connections count zero");
	EQ(r.inflight, 0, "a close ends the request open on it");
	EQ(r.connections, 7, "connections still counted as connections");
	EQ(r.http_requests, 8, "HTTP requests begun");
	EQ(r.other_connections, 1, "the engine's channel is not HTTP");
	EQ(r.nfails, 1, "one failure");
	ok(r.nfails && r.fails[0].inflight == 2 && r.fails[0].after_ready,
	   "the OOM: two requests in flight, after the HTTP listen");
	ok(r.have_server_ready && r.server_ready_ts == 3000 &&
	           r.server_port == 8000 &&
	           r.server_ready_kind == VRT_NET_KIND_INET,
	   "ready at the inet listen, not the unix one");
	ok(r.have_first_listen && r.first_listen_ts == 0,
	   "the first listen of any kind");
	ok(r.have_first_request && r.first_request_ts == 5000 &&
	           r.have_first_response && r.first_response_ts == 6000 &&
	           r.first_response_status == 503,
	   "first request and first answer (a 503)");
	ok(r.have_first_ok_response,
	   "the first 2xx answer is another fact");
	teardown();

	/* Only unix sockets: ready where HTTP came over one, else never. */
	setup(1);
	ev(VRT_EV_NET, 0, -1, 3, 0, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_UNIX, 0);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	replay();
	ok(!r.have_server_ready && r.nfails == 1 && !r.fails[0].after_ready,
	   "a unix listen alone (ZMQ ipc): not ready, load stage");
	teardown();
	setup(1);
	ev(VRT_EV_NET, 0, -1, 3, 0, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_UNIX, 0);
	ev(VRT_EV_NET, 0, -1, 4, 3, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_UNIX, 0);
	ev(VRT_EV_NET, 0, -1, 4, 0, VRT_NET_REQ_BEGIN);
	replay();
	ok(r.have_server_ready && r.server_ready_ts == 0 &&
	           r.server_ready_kind == VRT_NET_KIND_UNIX,
	   "HTTP over a unix socket: ready at its listen");
	teardown();
}

/* The appended fields of the last NET event: stream, flags, val. */
static void netf(uint32_t stream, unsigned flags, uint32_t val)
{
	evs[nev - 1].phase = stream;
	evs[nev - 1].api = (uint16_t)flags;
	evs[nev - 1].stack = val;
}

static void at(int64_t ts)
{
	evs[nev - 1].ts = ts;
}

/* HTTP/2 streams are requests, many per connection; probes count apart;
 * inferred requests end at their REQ_END's lag or a quiet second after
 * their last ANSWER; a hop's requests are not counted; readiness is the
 * first non-probe request answered 2xx, never the listen. */
static void test_streams_probes_turns(void)
{
	const int64_t ms = 1000000;

	setup(1);
	ev(VRT_EV_NET, 0, -1, 5, 8001, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 10, VRT_NET_PROTO_HTTP2, VRT_NET_PROTO);
	netf(0, VRT_NET_F_FOLLOWED, 0);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_REQ_BEGIN);
	netf(5, VRT_NET_F_PROBE, 0); /* a health check */
	ev(VRT_EV_NET, 0, -1, 10, 200, VRT_NET_REQ_END);
	netf(5, VRT_NET_F_PROBE, 0);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_REQ_BEGIN);
	netf(1, 0, 7);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_REQ_BEGIN);
	netf(3, 0, 7);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_NET, 0, -1, 10, 200, VRT_NET_REQ_END);
	netf(1, 0, 0);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_CLOSE); /* ends stream 3 */
	replay();
	ok(r.nfails == 1 && r.fails[0].inflight == 2 && r.fails[0].after_ready,
	   "two streams of one connection in flight, the probe not");
	EQ(r.stream_requests, 2, "two HTTP/2 streams");
	EQ(r.probe_requests, 1, "one probe, apart");
	EQ(r.inflight, 0, "the close ends the stream still open");
	ok(r.have_ready && r.ready_from == VRT_READY_RESPONSE &&
	           r.ready_ts == 8000 && r.server_ready_ts == 0,
	   "ready at the first request answered 200, not at the probe's "
	   "200 nor the listen");
	ok(r.npaths == 1 && r.paths[0].hash == 7 && r.paths[0].requests == 2,
	   "the requests' path counted by its hash");
	teardown();

	setup(1);
	ev(VRT_EV_NET, 0, -1, 5, 9000, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 20, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_REQ_BEGIN);
	netf(0, VRT_NET_F_INFERRED, 0);
	at(1 * ms);
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_ANSWER);
	netf(0, VRT_NET_F_INFERRED, 0);
	at(2 * ms);
	/* quiet for a second after the answer: over */
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 1 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	at(1500 * ms);
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_REQ_BEGIN);
	netf(0, VRT_NET_F_INFERRED, 0);
	at(2000 * ms);
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_ANSWER);
	netf(0, VRT_NET_F_INFERRED, 0);
	at(2001 * ms);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 1 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	at(2300 * ms);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 1 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	at(2500 * ms);
	/* the client speaks again at 2.6 s: the answer's last write was
	 * 0.2 s before (lag in microseconds) */
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_REQ_END);
	netf(0, VRT_NET_F_INFERRED, 200000);
	at(2600 * ms);
	ev(VRT_EV_NET, 0, -1, 20, 0, VRT_NET_REQ_BEGIN);
	netf(0, VRT_NET_F_INFERRED, 0);
	at(2600 * ms);
	/* a hop: a connection from a process of the run */
	ev(VRT_EV_NET, 0, -1, 30, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_UNIX, 0);
	netf(0, VRT_NET_F_PEER_RUN, 99);
	at(2700 * ms);
	ev(VRT_EV_NET, 0, -1, 30, 0, VRT_NET_REQ_BEGIN);
	netf(1, 0, 0);
	at(2800 * ms);
	replay();
	ok(r.nfails == 3 && r.fails[0].inflight == 0,
	   "an answer quiet for a second is over");
	ok(r.nfails == 3 && r.fails[1].inflight == 1 &&
	           r.fails[1].inflight_inferred == 1,
	   "a request being answered is in flight, inferred");
	ok(r.nfails == 3 && r.fails[2].inflight == 0,
	   "the answer's last write came before the failure: the end's lag "
	   "takes it out");
	EQ(r.inferred_requests, 3, "three requests inferred");
	EQ(r.inflight, 1, "the last one still open");
	ok(r.forwarded_requests == 1 && r.forwarded_from_pid == 99,
	   "a hop's request is forwarded, not counted, its peer named");
	teardown();

	/* Listening while loading, probes answered 503: never ready, and a
	 * weights failure after them is the load stage. */
	setup(1);
	ev(VRT_EV_NET, 0, -1, 5, 8080, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, 0);
	ev(VRT_EV_NET, 0, -1, 10, 0, VRT_NET_REQ_BEGIN);
	netf(0, VRT_NET_F_PROBE, 0);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_NET, 0, -1, 10, 503, VRT_NET_REQ_END);
	netf(0, VRT_NET_F_PROBE, 0);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	replay();
	ok(!r.have_ready && !r.serving && r.nfails == 1 &&
	           !r.fails[0].after_ready && r.fails[0].inflight == 0,
	   "probes while loading: not serving, not ready, load stage");
	teardown();
}

/* The last event is process p's. */
static void by(uint32_t p)
{
	evs[nev - 1].proc = p;
}

static void net_by(uint32_t p, uint64_t fd, uint64_t size, unsigned op)
{
	ev(VRT_EV_NET, 0, -1, fd, size, op);
	by(p);
	if (op == VRT_NET_LISTEN || op == VRT_NET_ACCEPT)
		netx(VRT_NET_KIND_INET, 0);
}

/* A front that forwards requests to a back end of its own (Ollama's
 * server and its llama-server child, each listening on its own port):
 * a client request is one request in flight, not two, and the front's
 * health polls of the back end are none; workers that accept on their
 * parent's socket (uvicorn, vLLM's API servers) did not listen: each
 * one's requests count. */
static void test_forwarded_requests(void)
{
	struct vrt_process *pr;

	setup(1);
	t.nprocs = 2;
	pr = (struct vrt_process *)t.procs;
	pr[1].ppid = 42;
	net_by(0, 3, 11434, VRT_NET_LISTEN);
	net_by(0, 10, 3, VRT_NET_ACCEPT); /* the client's request */
	net_by(0, 10, 0, VRT_NET_REQ_BEGIN);
	net_by(1, 3, 40000, VRT_NET_LISTEN); /* llama-server starts */
	net_by(1, 20, 3, VRT_NET_ACCEPT);     /* a health poll */
	net_by(1, 20, 0, VRT_NET_REQ_BEGIN);
	net_by(1, 20, 503, VRT_NET_REQ_END);
	net_by(1, 20, 0, VRT_NET_CLOSE);
	net_by(1, 21, 3, VRT_NET_ACCEPT); /* the forwarded completion */
	net_by(1, 21, 0, VRT_NET_REQ_BEGIN);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	by(1);
	replay();
	EQ(r.max_inflight, 1, "forwarded: one client request in flight");
	EQ(r.http_requests, 1, "forwarded: the front's request counted");
	EQ(r.forwarded_requests, 2, "forwarded: the poll and the copy");
	EQ(r.forwarded_proc_pid, 43, "forwarded: the back end named");
	ok(r.nfails == 1 && r.fails[0].inflight == 1,
	   "forwarded: the back end's failure with one request in flight");
	teardown();

	setup(1);
	t.nprocs = 3;
	pr = (struct vrt_process *)t.procs;
	pr[1].ppid = 42;
	pr[2].ppid = 42;
	net_by(0, 3, 8000, VRT_NET_LISTEN); /* the parent binds */
	net_by(1, 10, 3, VRT_NET_ACCEPT);    /* each worker accepts */
	net_by(1, 10, 0, VRT_NET_REQ_BEGIN);
	net_by(2, 10, 3, VRT_NET_ACCEPT);
	net_by(2, 10, 0, VRT_NET_REQ_BEGIN);
	replay();
	EQ(r.max_inflight, 2, "workers: both requests in flight");
	EQ(r.forwarded_requests, 0, "workers: nothing forwarded");
	teardown();

	/* vLLM's API servers: the parent binds the port (and listens on a
	 * ZMQ tcp:// endpoint of its own) but serves nothing; each worker
	 * calls listen() on the socket it was given and serves. */
	setup(1);
	t.nprocs = 3;
	pr = (struct vrt_process *)t.procs;
	pr[1].ppid = 42;
	pr[2].ppid = 42;
	net_by(0, 4, 5557, VRT_NET_LISTEN); /* ZMQ tcp:// bind */
	net_by(1, 3, 8000, VRT_NET_LISTEN);
	net_by(2, 3, 8000, VRT_NET_LISTEN);
	net_by(1, 10, 3, VRT_NET_ACCEPT);
	net_by(1, 10, 0, VRT_NET_REQ_BEGIN);
	net_by(2, 10, 3, VRT_NET_ACCEPT);
	net_by(2, 10, 0, VRT_NET_REQ_BEGIN);
	replay();
	EQ(r.max_inflight, 2, "API servers: both requests in flight");
	EQ(r.forwarded_requests, 0, "API servers: a parent serving nothing "
	                            "is no front");
	teardown();
}

/* A process that recorded from its start, stopped (`ctl stop`), then
 * wrote a snapshot when an allocation was refused in standby: recording
 * did not begin late. */
static void test_stop_then_snapshot(void)
{
	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 2 * GiB, 0);
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 3); /* stop */
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 2 * GiB, 0);
	evs[nev - 1].flags = VRT_EV_SNAP;
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 2);
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	replay();
	ok(!r.have_recording_start, "stop, then a snapshot: recording did "
	                            "not begin late");
	teardown();
}

/* A process that began in standby: kept facts arrive with the times they
 * happened, after later events; the snapshot is the state then (live
 * allocations, open connections, requests in flight), its peak a lower
 * bound; a second snapshot (stop, start) replaces it without counting
 * anything twice. */
static void test_standby_facts(void)
{
	const struct vrt_replay_device *d;

	setup(1);
	((struct vrt_process *)t.procs)[0].started_in_standby = 1;
	/* A failure recorded while the listen had not come in yet. */
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 1); /* 0 */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 10 * GiB, 0);
	tag(VRT_PHASE_weights, 0);
	evs[nev - 1].flags = VRT_EV_SNAP;
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 40 * GiB, 0);
	tag(VRT_PHASE_kv_cache, 0);
	evs[nev - 1].flags = VRT_EV_SNAP;
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, VRT_EV_SNAP);
	ev(VRT_EV_NET, 0, -1, 9, 0, VRT_NET_REQ_BEGIN); /* in flight */
	netx(0, VRT_EV_SNAP);
	ev(VRT_EV_NET, 0, -1, 10, 5, VRT_NET_ACCEPT); /* idle */
	netx(VRT_NET_KIND_INET, VRT_EV_SNAP);
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 2); /* 6000 */
	/* the kept facts of that process, older, delivered late */
	ev(VRT_EV_NET, 0, -1, 5, 8000, VRT_NET_LISTEN);
	netx(VRT_NET_KIND_INET, VRT_EV_PAST);
	evs[nev - 1].ts = -500;
	ev(VRT_EV_NET, 0, -1, 9, 0, VRT_NET_REQ_BEGIN);
	netx(0, VRT_EV_PAST);
	evs[nev - 1].ts = -400;
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 75 * GiB, 80 * GiB,
	   0); /* first probe: 5 GiB used, nothing held: 5 GiB before us */
	evs[nev - 1].flags = VRT_EV_PAST;
	evs[nev - 1].ts = -900;
	ev(VRT_EV_MEMINFO, VRT_API_cuMemGetInfo_v2, 0, 10 * GiB, 80 * GiB,
	   0); /* a later probe: not the first */
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x3000, 2 * GiB, 0);
	tag(VRT_PHASE_forward, 0); /* 11000 */
	ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
	tag(VRT_PHASE_forward, 0);
	ev(VRT_EV_NET, 0, -1, 9, 200, VRT_NET_REQ_END);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x3000, 0, 0);
	replay();
	d = &r.dev[0];
	ok(r.have_recording_start && r.recording_start_ts == 0,
	   "recording began at the snapshot");
	ok(r.nprocs == 1 && r.procs[0].have_snapshot &&
	           r.procs[0].first_snapshot_ts == 0 &&
	           r.procs[0].snapshots == 1,
	   "the process's first snapshot");
	EQ(d->phase[VRT_PHASE_weights].allocs, 0,
	   "a snapshot's allocations are no new calls");
	EQ(d->phase[VRT_PHASE_kv_cache].live_bytes, 40 * GiB,
	   "the snapshot keeps each allocation's phase");
	ok(d->have_snapshot && d->snapshot_bytes == 50 * GiB &&
	           d->snapshot_ts == 6000,
	   "what the run held when recording began");
	EQ(d->peak_bytes, 52 * GiB, "the peak after recording began");
	ok(!d->peak_at_snapshot, "a measured peak is no lower bound");
	EQ(r.fails[0].inflight, 1, "the request open at the snapshot");
	ok(r.fails[0].after_ready,
	   "the failure is after the kept listen (settled at the end)");
	ok(r.have_server_ready && r.server_ready_ts == -500,
	   "ready at the time the listen happened");
	ok(r.have_first_request && r.first_request_ts == -400,
	   "the first request when it began, in standby");
	EQ(r.connections, 0, "open connections of a snapshot are not new");
	EQ(r.http_requests, 0, "nor its requests");
	EQ(r.max_inflight, 1, "one request in flight");
	ok(d->have_baseline && d->baseline_ts == -900 &&
	           d->baseline_used_bytes == 5 * GiB,
	   "used before the run: the first probe, by its own held bytes");
	teardown();

	/* stop, start: the second snapshot replaces the first; a peak that
	 * only a snapshot saw is a lower bound */
	setup(1);
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 10 * GiB, 0);
	tag(VRT_PHASE_weights, 0);
	evs[nev - 1].flags = VRT_EV_SNAP;
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, VRT_EV_SNAP);
	ev(VRT_EV_NET, 0, -1, 9, 0, VRT_NET_REQ_BEGIN);
	netx(0, VRT_EV_SNAP);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 30 * GiB, 0);
	tag(VRT_PHASE_forward, 0);
	evs[nev - 1].flags = VRT_EV_SNAP;
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 2);
	/* (stop: in standby the request ended, 0x2000 was freed) */
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 10 * GiB, 0);
	tag(VRT_PHASE_weights, 0);
	evs[nev - 1].flags = VRT_EV_SNAP; /* already live: kept once */
	ev(VRT_EV_NET, 0, -1, 9, 5, VRT_NET_ACCEPT);
	netx(VRT_NET_KIND_INET, VRT_EV_SNAP);
	ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 2);
	ev(VRT_EV_NET, 0, -1, 9, 0, VRT_NET_CLOSE);
	replay();
	d = &r.dev[0];
	EQ(d->tracked_bytes, 10 * GiB, "the second snapshot's live set");
	EQ(d->phase[VRT_PHASE_weights].live_bytes, 10 * GiB,
	   "weights counted once");
	EQ(d->phase[VRT_PHASE_forward].frees, 0,
	   "what left in standby is no free");
	EQ(r.inflight, 0, "the request that ended in standby is gone");
	EQ(r.max_inflight, 1, "one at most");
	ok(d->peak_at_snapshot && d->peak_bytes == 40 * GiB,
	   "a peak only a snapshot saw is a lower bound");
	EQ(r.procs[0].snapshots, 2, "two snapshots");
	teardown();

	/* Two processes: an engine (0) fails while its API server (1) is in
	 * standby with three requests in flight (kept edges, written when
	 * it started later); a failure while the API server records counts
	 * only what its trace holds. */
	{
		static struct vrt_process two[2];
		setup(1);
		memset(two, 0, sizeof(two));
		two[0].pid = 42;
		two[1].pid = 43;
		two[1].started_in_standby = 1;
		t.procs = two;
		t.nprocs = 2;
		for (int k = 0; k < 4; k++) { /* API: 4 begin, one ends */
			ev(VRT_EV_NET, 0, -1, (uint64_t)(10 + k), 0,
			   VRT_NET_REQ_BEGIN);
			netx(0, VRT_EV_PAST);
			evs[nev - 1].proc = 1;
			evs[nev - 1].ts = 100 + k;
		}
		ev(VRT_EV_NET, 0, -1, 10, 200, VRT_NET_REQ_END);
		netx(0, VRT_EV_PAST);
		evs[nev - 1].proc = 1;
		evs[nev - 1].ts = 200;
		ev(VRT_EV_NET, 0, -1, 11, 0, VRT_NET_CLOSE);
		netx(0, VRT_EV_PAST);
		evs[nev - 1].proc = 1;
		evs[nev - 1].ts = 99000; /* after the failure */
		/* the engine's failure at 8000 (recording all along) */
		for (size_t k = 0; k < nev; k++)
			evs[k].ts = evs[k].ts ? evs[k].ts : 1;
		ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
		ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 1); /* API starts: 9000 */
		evs[nev - 1].proc = 1;
		ev(VRT_EV_NET, 0, -1, 12, 5, VRT_NET_ACCEPT);
		netx(VRT_NET_KIND_INET, VRT_EV_SNAP);
		evs[nev - 1].proc = 1;
		ev(VRT_EV_NET, 0, -1, 12, 0, VRT_NET_REQ_BEGIN);
		netx(0, VRT_EV_SNAP);
		evs[nev - 1].proc = 1;
		ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 2);
		evs[nev - 1].proc = 1;
		ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
		ev(VRT_EV_SNAPSHOT, 0, -1, 0, 0, 3); /* API stops: 14000 */
		evs[nev - 1].proc = 1;
		ev(VRT_EV_NET, 0, -1, 13, 0, VRT_NET_REQ_BEGIN);
		netx(0, VRT_EV_PAST);
		evs[nev - 1].proc = 1;
		ev(VRT_EV_FAIL, VRT_API_cuMemAlloc_v2, 0, 0, 8 * GiB, 2);
		replay();
		ok(r.nfails == 3 && r.fails[0].inflight == 3,
		   "a failure while another process was in standby: its "
		   "kept requests in flight count (3)");
		ok(r.nfails == 3 && r.fails[1].inflight == 1,
		   "while it records, only what its trace holds (1)");
		ok(r.nfails == 3 && r.fails[2].inflight == 2,
		   "after it stopped: what it held, and what it kept (2)");
		EQ(r.max_inflight, 3, "at least 3 were in flight at once");
		teardown();
	}
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

/* ---- the common path against a model, and against the general path --- */

/* A small deterministic generator for the random streams below. */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

#define NADDR  48
#define NSTACK 6

/* A random stream of plain pointer allocations and frees over 2 devices
 * and 2 processes: a pool of addresses (so some frees are of nothing and
 * some addresses are allocated twice), phases past the slot limit, a few
 * marks and requests. Returns how many events it wrote (at most max). */
static size_t random_stream(struct vrt_event *v, size_t max, uint64_t seed)
{
	static const unsigned allocs[] = {
	        VRT_API_cuMemAlloc_v2, VRT_API_cuMemAllocAsync,
	        VRT_API_cuMemAllocManaged, VRT_API_hipMalloc};
	static const unsigned frees[] = {VRT_API_cuMemFree_v2,
	                                 VRT_API_cuMemFreeAsync,
	                                 VRT_API_hipFree};
	size_t n = 0;
	int64_t ts = 0;

	rnd_state = seed;
	while (n < max) {
		struct vrt_event *e = &v[n++];
		uint64_t x = rnd();
		memset(e, 0, sizeof(*e));
		ts += (int64_t)(x % 3) * 700; /* ties too */
		e->ts = ts;
		e->proc = (uint32_t)(x >> 8) & 1;
		e->addr = 0x10000 + (x >> 16) % NADDR * 0x1000;
		switch ((x >> 24) % 16) {
		case 0:
			e->kind = VRT_EV_MARK;
			break;
		case 1:
			e->kind = VRT_EV_REQUEST;
			e->aux = 1 + (x >> 32) % 2;
			e->addr = (x >> 40) % 3;
			break;
		case 2: case 3: case 4: case 5: case 6: case 7: case 8:
			e->kind = VRT_EV_ALLOC;
			e->api = (uint16_t)allocs[(x >> 32) % 4];
			e->device = (int32_t)((x >> 36) % 2);
			e->size = (x >> 40) % 4 ? (1 + (x >> 42) % 64) << 20 : 0;
			e->phase = (uint32_t)((x >> 50) % 40);
			e->stack = (uint32_t)((x >> 56) % NSTACK);
			break;
		default:
			e->kind = VRT_EV_FREE;
			e->api = (uint16_t)frees[(x >> 32) % 3];
			e->device = -1;
			break;
		}
	}
	return n;
}

/* The model: what the live set of a stream of allocations and frees
 * (no marks, no requests) must add up to, by plain arithmetic. */
struct model_live {
	int used;
	int32_t dev;
	int fam;
	uint32_t slot, stack;
	uint64_t size;
};

struct model_dev {
	uint64_t fam_allocs[VRT_FAM_COUNT], fam_frees[VRT_FAM_COUNT];
	uint64_t fam_live[VRT_FAM_COUNT], fam_peak[VRT_FAM_COUNT];
	uint64_t ph_allocs[VRT_REPLAY_MAX_PHASES];
	uint64_t ph_frees[VRT_REPLAY_MAX_PHASES];
	uint64_t ph_live[VRT_REPLAY_MAX_PHASES];
	uint64_t ph_peak[VRT_REPLAY_MAX_PHASES];
	uint64_t tracked, peak, by_phase[VRT_REPLAY_MAX_PHASES];
	int64_t peak_ts;
	/* per (slot, stack): live bytes and allocations, and at the peak */
	uint64_t site_bytes[VRT_REPLAY_MAX_PHASES][NSTACK];
	uint64_t site_allocs[VRT_REPLAY_MAX_PHASES][NSTACK];
	uint64_t at_peak_bytes[VRT_REPLAY_MAX_PHASES][NSTACK];
	uint64_t at_peak_allocs[VRT_REPLAY_MAX_PHASES][NSTACK];
};

static void model_drop(struct model_dev *md, struct model_live *l)
{
	struct model_dev *m = &md[l->dev];

	m->fam_live[l->fam] -= l->size;
	m->ph_live[l->slot] -= l->size;
	m->tracked -= l->size;
	m->site_bytes[l->slot][l->stack] -= l->size;
	m->site_allocs[l->slot][l->stack]--;
	l->used = 0;
}

static void model_run(const struct vrt_event *v, size_t n,
                      struct model_dev *md, uint64_t *unmatched)
{
	static struct model_live live[2][NADDR];
	size_t i;

	memset(live, 0, sizeof(live));
	*unmatched = 0;
	for (i = 0; i < n; i++) {
		const struct vrt_event *e = &v[i];
		struct model_live *l = &live[e->proc][(e->addr - 0x10000) /
		                                      0x1000];
		struct model_dev *m;
		if (e->kind == VRT_EV_FREE) {
			if (!l->used) {
				(*unmatched)++;
				continue;
			}
			md[l->dev].fam_frees[l->fam]++;
			md[l->dev].ph_frees[l->slot]++;
			model_drop(md, l);
			continue;
		}
		if (l->used) /* its free was lost: replaced, not freed */
			model_drop(md, l);
		m = &md[e->device];
		l->used = 1;
		l->dev = e->device;
		l->fam = vrt_api_family(e->api);
		l->slot = e->phase < VRT_REPLAY_MAX_PHASES ? e->phase : 0;
		l->stack = e->stack;
		l->size = e->size;
		m->fam_allocs[l->fam]++;
		m->ph_allocs[l->slot]++;
		m->fam_live[l->fam] += e->size;
		if (m->fam_live[l->fam] > m->fam_peak[l->fam])
			m->fam_peak[l->fam] = m->fam_live[l->fam];
		m->ph_live[l->slot] += e->size;
		if (m->ph_live[l->slot] > m->ph_peak[l->slot])
			m->ph_peak[l->slot] = m->ph_live[l->slot];
		m->site_bytes[l->slot][l->stack] += e->size;
		m->site_allocs[l->slot][l->stack]++;
		m->tracked += e->size;
		if (m->tracked > m->peak) {
			m->peak = m->tracked;
			m->peak_ts = e->ts;
			memcpy(m->by_phase, m->ph_live, sizeof(m->by_phase));
			memcpy(m->at_peak_bytes, m->site_bytes,
			       sizeof(m->site_bytes));
			memcpy(m->at_peak_allocs, m->site_allocs,
			       sizeof(m->site_allocs));
		}
	}
}

/* Random allocations and frees (the common path, and the general one for
 * addresses allocated twice) give what the model adds up. */
static void test_fast_path_model(void)
{
	static struct model_dev md[2];
	struct vrt_event *v;
	uint64_t unmatched, seed;
	size_t n, i, k, bad;

	for (seed = 1; seed <= 3; seed++) {
		setup(2);
		t.nprocs = 2;
		r.top_sites = SIZE_MAX;
		free(evs);
		v = evs = calloc(5000, sizeof(*evs));
		n = random_stream(v, 5000, seed * 0x9e3779b97f4a7c15ull);
		/* allocations and frees only, for the model */
		for (i = k = 0; i < n; i++)
			if (v[i].kind == VRT_EV_ALLOC ||
			    v[i].kind == VRT_EV_FREE)
				v[k++] = v[i];
		nev = k;
		memset(md, 0, sizeof(md));
		model_run(v, nev, md, &unmatched);
		replay();
		bad = 0;
		for (i = 0; i < 2; i++) {
			const struct vrt_replay_device *d = &r.dev[i];
			const struct model_dev *m = &md[i];
			for (k = 0; k < VRT_FAM_COUNT; k++)
				bad += d->fam[k].allocs != m->fam_allocs[k] ||
				       d->fam[k].frees != m->fam_frees[k] ||
				       d->fam[k].live_bytes != m->fam_live[k] ||
				       d->fam[k].peak_bytes != m->fam_peak[k];
			for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
				bad += d->phase[k].allocs != m->ph_allocs[k] ||
				       d->phase[k].frees != m->ph_frees[k] ||
				       d->phase[k].live_bytes != m->ph_live[k] ||
				       d->phase[k].peak_bytes != m->ph_peak[k] ||
				       d->peak_by_phase[k] != m->by_phase[k];
			bad += d->tracked_bytes != m->tracked ||
			       d->peak_bytes != m->peak ||
			       d->peak_ts != m->peak_ts;
		}
		EQ(bad, 0, "counters, peaks and peak splits match the model");
		EQ(r.unmatched_frees, unmatched, "unmatched frees match");
		bad = 0;
		for (i = 0; i < r.nsites; i++) {
			const struct vrt_replay_site *x = &r.sites[i];
			const struct model_dev *m = &md[x->device];
			bad += x->bytes != m->at_peak_bytes[x->phase][x->stack] ||
			       x->allocs !=
			               m->at_peak_allocs[x->phase][x->stack];
		}
		for (i = k = 0; i < 2; i++) {
			size_t p, q;
			for (p = 0; p < VRT_REPLAY_MAX_PHASES; p++)
				for (q = 0; q < NSTACK; q++)
					k += md[i].peak &&
					     md[i].at_peak_allocs[p][q] != 0;
		}
		EQ(bad, 0, "sites at the peaks match the model");
		EQ(r.nsites, k, "as many sites as the model");
		teardown();
	}
}

/* Everything a replay reports, but failures. */
static size_t diff_results(const struct vrt_replay *a,
                           const struct vrt_replay *b)
{
	size_t bad = 0, i, k;

	if (a->ndevices != b->ndevices || a->nsites != b->nsites ||
	    a->nwindows != b->nwindows ||
	    a->ninflight_series != b->ninflight_series)
		return 1;
	for (i = 0; i < a->ndevices; i++) {
		const struct vrt_replay_device *x = &a->dev[i], *y = &b->dev[i];
		for (k = 0; k < VRT_FAM_COUNT; k++)
			bad += x->fam[k].allocs != y->fam[k].allocs ||
			       x->fam[k].frees != y->fam[k].frees ||
			       x->fam[k].live_bytes != y->fam[k].live_bytes ||
			       x->fam[k].peak_bytes != y->fam[k].peak_bytes ||
			       x->fam[k].peak_ts != y->fam[k].peak_ts;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			bad += x->phase[k].allocs != y->phase[k].allocs ||
			       x->phase[k].frees != y->phase[k].frees ||
			       x->phase[k].live_bytes !=
			               y->phase[k].live_bytes ||
			       x->phase[k].peak_bytes !=
			               y->phase[k].peak_bytes ||
			       x->phase[k].peak_ts != y->phase[k].peak_ts;
		bad += x->tracked_bytes != y->tracked_bytes ||
		       x->peak_bytes != y->peak_bytes ||
		       x->peak_ts != y->peak_ts ||
		       memcmp(x->peak_by_phase, y->peak_by_phase,
		              sizeof(x->peak_by_phase)) ||
		       x->nseries != y->nseries ||
		       (x->nseries && memcmp(x->series, y->series,
		                             x->nseries * sizeof(*x->series))) ||
		       x->nranges != y->nranges ||
		       (x->nranges && memcmp(x->ranges, y->ranges,
		                             x->nranges * sizeof(*x->ranges)));
		for (k = 0; k < a->nwindows; k++)
			bad += memcmp(&a->windows[k].dev[i], &b->windows[k].dev[i],
			              sizeof(*a->windows[k].dev));
	}
	for (k = 0; k < a->nwindows; k++)
		bad += a->windows[k].max_inflight != b->windows[k].max_inflight;
	/* field by field: these structs have padding */
	for (k = 0; k < a->nsites; k++)
		bad += a->sites[k].device != b->sites[k].device ||
		       a->sites[k].phase != b->sites[k].phase ||
		       a->sites[k].stack != b->sites[k].stack ||
		       a->sites[k].bytes != b->sites[k].bytes ||
		       a->sites[k].allocs != b->sites[k].allocs;
	for (k = 0; k < a->ninflight_series; k++)
		bad += a->inflight_series[k].ts != b->inflight_series[k].ts ||
		       a->inflight_series[k].inflight !=
		               b->inflight_series[k].inflight;
	bad += a->unmatched_frees != b->unmatched_frees ||
	       a->max_inflight != b->max_inflight ||
	       a->have_single_request != b->have_single_request ||
	       a->single_request_peak_bytes != b->single_request_peak_bytes ||
	       a->single_request_peak_device != b->single_request_peak_device ||
	       a->single_request_peak_ts != b->single_request_peak_ts;
	return bad;
}

/* The same stream twice: as it is, and with a failed free of each
 * address right before its free (same time), which makes the replay turn
 * the common path's table entry into an object, so the free takes the
 * general path. Everything but the failures must agree; standby
 * snapshots of process 1 drop what it holds on both. */
static void test_fast_path_general_path(void)
{
	static struct vrt_replay a;
	struct vrt_event *v;
	size_t n, i, k;
	uint64_t seed;

	for (seed = 1; seed <= 3; seed++) {
		setup(2);
		t.nprocs = 2;
		r.top_sites = SIZE_MAX;
		free(evs);
		v = calloc(4000, sizeof(*v));
		n = random_stream(v, 4000, seed * 0xbf58476d1ce4e5b9ull);
		for (i = 0; i < n; i += 1000) { /* a standby snapshot */
			v[i].kind = VRT_EV_SNAPSHOT;
			v[i].proc = 1;
			v[i].aux = 1;
		}
		evs = v;
		nev = n;
		replay();
		a = r;
		memset(&r, 0, sizeof(r));
		r.top_sites = SIZE_MAX;
		evs = calloc(2 * n, sizeof(*evs));
		for (i = k = 0; i < n; i++) {
			if (v[i].kind == VRT_EV_FREE) {
				struct vrt_event *f = &evs[k++];
				*f = v[i];
				f->kind = VRT_EV_FAIL;
				f->aux = 1; /* not out of memory */
			}
			evs[k++] = v[i];
		}
		nev = k;
		replay();
		ok(r.nfails > 0, "failed frees seen");
		EQ(diff_results(&a, &r), 0,
		   "common and general path agree");
		vrt_replay_free(&a);
		free(v);
		teardown();
	}
}

/* Tracked bytes that wrap around are no new peak: the split of the last
 * peak is the one at that peak (the split is copied lazily). */
static void test_wrapping_bytes(void)
{
	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 3ull << 62, 0);
	tag(1, 1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x2000, 2ull << 62, 0);
	tag(2, 1);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x1000, 0, 0);
	replay();
	EQ(r.dev[0].peak_bytes, 3ull << 62, "the peak before the wrap");
	EQ(r.dev[0].peak_ts, 0, "at the first allocation");
	EQ(r.dev[0].peak_by_phase[1], 3ull << 62, "its split: phase 1");
	EQ(r.dev[0].peak_by_phase[2], 0, "not the wrapped state");
	teardown();
}

/* An allocation live while the device table grows (the per-device arrays
 * move), freed after. */
static void test_devices_grow_live(void)
{
	setup(1);
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 0, 0x1000, 1 * GiB, 0);
	tag(3, 1);
	ok(vrt_replay_begin(&r, &t) == 0 &&
	           vrt_replay_feed(&r, &t, evs, nev) == 0,
	   "first batch: one device");
	nev = 0;
	t.ndevices = 4;
	ev(VRT_EV_ALLOC, VRT_API_cuMemAlloc_v2, 3, 0x2000, 2 * GiB, 0);
	tag(3, 1);
	ev(VRT_EV_FREE, VRT_API_cuMemFree_v2, -1, 0x1000, 0, 0);
	ok(vrt_replay_feed(&r, &t, evs, nev) == 0 &&
	           vrt_replay_end(&r, &t) == 0,
	   "second batch and end");
	EQ(r.dev[0].tracked_bytes, 0, "device 0 freed after the move");
	EQ(r.dev[0].fam[VRT_FAM_DEVICE].frees, 1, "its free counted");
	EQ(r.dev[0].phase[3].live_bytes, 0, "its phase emptied");
	EQ(r.dev[3].tracked_bytes, 2 * GiB, "device 3 holds its own");
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
	test_http_requests();
	test_streams_probes_turns();
	test_forwarded_requests();
	test_standby_facts();
	test_stop_then_snapshot();
	test_inference();
	test_sites_over_peaks();
	test_repeat();
	test_devices_remap();
	test_fast_path_model();
	test_fast_path_general_path();
	test_wrapping_bytes();
	test_devices_grow_live();
	test_json_escape();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
