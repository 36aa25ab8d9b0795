/*
 * Unit tests of replay.c (and the JSON writer) on hand-made event arrays:
 * peaks and their times, family attribution of frees, VMM handle/mapping
 * reference semantics, unmatched frees, baseline, failures. TAP output.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	t.ev = calloc(64, sizeof(*t.ev));
}

static void ev(int kind, unsigned api, int dev, uint64_t addr, uint64_t size,
               uint64_t aux)
{
	struct vrt_event *e = &t.ev[t.nev];
	e->ts = (int64_t)t.nev * 1000; /* 1 us apart, in order */
	e->kind = (uint8_t)kind;
	e->api = (uint16_t)api;
	e->device = dev;
	e->addr = addr;
	e->size = size;
	e->aux = aux;
	t.nev++;
}

static void replay(void)
{
	ok(vrt_replay_run(&r, &t) == 0, "replay runs");
}

static void teardown(void)
{
	vrt_replay_free(&r);
	free(t.ev);
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
	t.ev[t.nev - 1].flags = VRT_EV_HAVE_INFO;
	t.ev[t.nev - 1].extra = 3;
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
	free(t.ev);
	t.ev = calloc(2 * n, sizeof(*t.ev));
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

int main(void)
{
	test_peaks();
	test_vmm_release_before_unmap();
	test_vmm_unmap_first_and_ranges();
	test_unmatched_and_noise();
	test_baseline_and_failures();
	test_many_live();
	test_json_escape();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
