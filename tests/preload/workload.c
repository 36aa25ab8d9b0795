/*
 * workload.c — the deterministic GPU-memory workload every preload test
 * client runs, and the bookkeeping of what `vramtrace analyze` must report
 * for it.
 *
 * The workload touches every recorded family on every device: device
 * (cuMemAlloc_v2, cuMemAllocPitch_v2, cuMemFree_v2, cuMemFree_v2(0)), async
 * (cuMemAllocAsync, cuMemAllocFromPoolAsync on a default and a created pool,
 * cuMemFreeAsync; streams NULL, legacy and per-thread), vmm (reserve,
 * create, map, unmap, release — both release-before-unmap and
 * unmap-before-release — and address free), managed, and on the host pinned
 * (cuMemHostAlloc, cuMemAllocHost_v2, cuMemFreeHost) and registered memory.
 * It makes calls that must fail with an exact code (unknown and double
 * frees, OOMs on device and host) and leaves allocations of every family
 * live at exit. Sizes differ per allocation, device and pass, so a counter
 * credited to the wrong place shows.
 *
 * Expectation rules (docs/design.md "The vramtrace-report/1 JSON report"):
 * allocs = successful allocating calls; frees = successful frees, counted in
 * the family that made the allocation (cuMemFree_v2 may free an async pointer);
 * a VMM handle is freed when its physical memory returns (released and
 * unmapped); failed = calls that returned non-success, failed frees in the
 * family the free API names, on the current device (host: -1); cuMemFree_v2(0)
 * is no event. A value of -1 in the expectation means "not checked".
 *
 * Threads: threads mode runs workers that only touch their own struct
 * thr; everything else runs on the main thread.
 */
#include "workload.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WL_MAX_DEV 64
#define WL_MAX_OOM 256
#define MiB        (1ull << 20)
#define GiB        (1ull << 30)

enum fam { F_DEVICE, F_ASYNC, F_VMM, F_MANAGED, F_PINNED, F_REGISTERED, F_N };
static const char *const fam_name[F_N] = {"device",  "async",  "vmm",
                                          "managed", "pinned", "registered"};

struct counters {
	long long allocs, frees, failed, peak, live;
};

struct oom {
	const char *api;
	int device;
	unsigned long long requested;
	long long free_bytes; /* -1: not checked (host) */
};

struct state {
	int ndev;
	CUcontext ctx[WL_MAX_DEV];
	size_t total[WL_MAX_DEV];
	size_t baseline_used[WL_MAX_DEV]; /* other processes, at start */
	struct counters dev[WL_MAX_DEV][F_PINNED];
	struct counters host[F_N - F_PINNED];
	struct oom ooms[WL_MAX_OOM];
	int nooms;
	int pass;
	int truncated; /* sigkill mode: the run must read as truncated */
	int peaks_unknown;
};

static struct state S;

/* ---- bookkeeping ------------------------------------------------------- */

static struct counters *ctr(int dev, enum fam f)
{
	return f >= F_PINNED ? &S.host[f - F_PINNED] : &S.dev[dev][f];
}

static void note_alloc(int dev, enum fam f, unsigned long long bytes)
{
	struct counters *c = ctr(dev, f);
	c->allocs++;
	c->live += (long long)bytes;
	if (c->live > c->peak)
		c->peak = c->live;
}

static void note_free(int dev, enum fam f, unsigned long long bytes)
{
	struct counters *c = ctr(dev, f);
	c->frees++;
	c->live -= (long long)bytes;
}

static void note_fail(int dev, enum fam f)
{
	ctr(dev, f)->failed++;
}

static void note_oom(const char *api, int dev, unsigned long long req,
                     long long free_bytes)
{
	if (S.nooms < WL_MAX_OOM)
		S.ooms[S.nooms++] = (struct oom){api, dev, req, free_bytes};
}

/* Device bytes this process holds, by the bookkeeping. */
static long long dev_live(int d)
{
	long long sum = 0;
	for (int f = 0; f < F_PINNED; f++)
		sum += S.dev[d][f].live;
	return sum;
}

/* ---- checks ------------------------------------------------------------ */

static const struct cu_fns *F;

static const char *errname(CUresult r)
{
	const char *s = NULL;
	if (F && F->cuGetErrorName &&
	    F->cuGetErrorName(r, &s) == CUDA_SUCCESS && s)
		return s;
	return "?";
}

/* Fails the mode unless `call` returned exactly `want`. */
#define EXPECT(want, call)                                                     \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != (want)) {                                            \
			fprintf(stderr,                                        \
			        "workload: %s:%d: %s returned %d (%s), "       \
			        "expected %d (%s)\n",                          \
			        __FILE__, __LINE__, #call, (int)r_,            \
			        errname(r_), (int)(want), errname(want));      \
			return -1;                                             \
		}                                                              \
	} while (0)

#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "workload: %s:%d: check failed: %s\n", \
			        __FILE__, __LINE__, #cond);                    \
			return -1;                                             \
		}                                                              \
	} while (0)

/* Probes free/total on device d (current) and checks them against the
 * bookkeeping: the fake must agree with every allocation made so far. */
static int probe(int d, size_t *free_out)
{
	size_t fr = 0, tot = 0;
	EXPECT(CUDA_SUCCESS, F->cuMemGetInfo_v2(&fr, &tot));
	REQUIRE(tot == S.total[d]);
	if ((long long)(tot - fr) !=
	    (long long)S.baseline_used[d] + dev_live(d)) {
		fprintf(stderr,
		        "workload: device %d: driver says %zu bytes used, "
		        "bookkeeping says %zu + %lld\n",
		        d, tot - fr, S.baseline_used[d], dev_live(d));
		return -1;
	}
	if (free_out)
		*free_out = fr;
	return 0;
}

static int use_dev(int d)
{
	CUdevice cur = -1;
	EXPECT(CUDA_SUCCESS, F->cuCtxSetCurrent(S.ctx[d]));
	EXPECT(CUDA_SUCCESS, F->cuCtxGetDevice(&cur));
	REQUIRE(cur == d);
	return 0;
}

/* ---- setup ------------------------------------------------------------- */

static int setup(int want_ndev)
{
	int n = 0, ver = 0;
	CUdevice cur;
	/* Driver rules first: nothing works before cuInit (an unhooked call
	 * checks it, so the trace gains no event). */
	EXPECT(CUDA_ERROR_NOT_INITIALIZED, F->cuDeviceGetCount(&n));
	EXPECT(CUDA_SUCCESS, F->cuInit(0));
	EXPECT(CUDA_SUCCESS, F->cuDriverGetVersion(&ver));
	REQUIRE(ver >= 12000);
	EXPECT(CUDA_SUCCESS, F->cuDeviceGetCount(&n));
	REQUIRE(n >= 1 && n <= WL_MAX_DEV);
	if (want_ndev > 0 && n != want_ndev) {
		fprintf(stderr, "workload: driver has %d devices, want %d\n", n,
		        want_ndev);
		return -1;
	}
	S.ndev = n;
	EXPECT(CUDA_ERROR_INVALID_CONTEXT, F->cuCtxGetDevice(&cur));
	for (int d = 0; d < n; d++) {
		CUdevice dev;
		char name[64];
		CUuuid uuid;
		size_t fr, tot;
		EXPECT(CUDA_SUCCESS, F->cuDeviceGet(&dev, d));
		EXPECT(CUDA_SUCCESS,
		       F->cuDeviceGetName(name, sizeof(name), dev));
		EXPECT(CUDA_SUCCESS, F->cuDeviceGetUuid_v2(&uuid, dev));
		EXPECT(CUDA_SUCCESS, F->cuDeviceTotalMem_v2(&S.total[d], dev));
		EXPECT(CUDA_SUCCESS,
		       F->cuDevicePrimaryCtxRetain(&S.ctx[d], dev));
		if (use_dev(d))
			return -1;
		EXPECT(CUDA_SUCCESS, F->cuMemGetInfo_v2(&fr, &tot));
		REQUIRE(tot == S.total[d] && fr <= tot);
		S.baseline_used[d] = tot - fr;
	}
	return 0;
}

/* ---- the workload, one pass -------------------------------------------- */

static int device_family(int d, unsigned k)
{
	CUdeviceptr a1, a2, a3, p1, unknown = 0xdead0000ull + d;
	size_t pitch = 0;
	unsigned long long s1 = 64 * MiB + 1000 + 7 * k, s2 = 3 * MiB + 17 + k,
	                   s3 = 128 * MiB + 5 + 3 * k,
	                   w = 1000 + 8 * d + S.pass, h = 300 + k;

	EXPECT(CUDA_SUCCESS, F->cuMemAlloc_v2(&a1, s1));
	note_alloc(d, F_DEVICE, s1);
	EXPECT(CUDA_SUCCESS, F->cuMemAlloc_v2(&a2, s2));
	note_alloc(d, F_DEVICE, s2);
	REQUIRE(a1 && a2 && a1 != a2 && a1 % 512 == 0 && a2 % 512 == 0);
	EXPECT(CUDA_SUCCESS, F->cuMemAllocPitch_v2(&p1, &pitch, w, h, 4));
	REQUIRE(pitch == ((w + 511) & ~511ull)); /* rows padded to 512 */
	note_alloc(d, F_DEVICE, pitch * h);
	if (probe(d, NULL))
		return -1;
	EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(a2));
	note_free(d, F_DEVICE, s2);
	/* cudaFree(0): success, and no event at all. */
	EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(0));
	/* A double free and an unknown pointer: the exact driver code. */
	EXPECT(CUDA_ERROR_INVALID_VALUE, F->cuMemFree_v2(a2));
	note_fail(d, F_DEVICE);
	EXPECT(CUDA_ERROR_INVALID_VALUE, F->cuMemFree_v2(unknown));
	note_fail(d, F_DEVICE);
	EXPECT(CUDA_SUCCESS, F->cuMemAlloc_v2(&a3, s3));
	note_alloc(d, F_DEVICE, s3);
	/* A stream-ordered free of a cuMemAlloc pointer: counted in device. */
	EXPECT(CUDA_SUCCESS, F->cuMemFreeAsync(a3, NULL));
	note_free(d, F_DEVICE, s3);
	return probe(d, NULL); /* a1 and p1 stay live */
}

static int async_family(int d, unsigned k)
{
	CUdeviceptr b1, b2, b3, b4, unknown = 0xbad00000ull + 512 * d;
	CUmemoryPool defpool = NULL, pool = NULL;
	CUmemPoolProps props;
	unsigned long long s1 = 48 * MiB + 123 + k, s2 = 5 * MiB + 9 + k,
	                   s3 = 7 * MiB + 11 + k, s4 = 9 * MiB + 1 + k;

	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = d;
	EXPECT(CUDA_SUCCESS, F->cuMemAllocAsync(&b1, s1, NULL));
	note_alloc(d, F_ASYNC, s1);
	EXPECT(CUDA_SUCCESS,
	       F->cuMemAllocAsync(&b2, s2, FAKECUDA_STREAM_PER_THREAD));
	note_alloc(d, F_ASYNC, s2);
	EXPECT(CUDA_SUCCESS, F->cuDeviceGetDefaultMemPool(&defpool, d));
	EXPECT(CUDA_SUCCESS, F->cuMemAllocFromPoolAsync(
	                             &b3, s3, defpool, FAKECUDA_STREAM_LEGACY));
	note_alloc(d, F_ASYNC, s3);
	EXPECT(CUDA_SUCCESS, F->cuMemPoolCreate(&pool, &props));
	EXPECT(CUDA_SUCCESS,
	       F->cuMemAllocFromPoolAsync(&b4, s4, pool,
	                                  FAKECUDA_STREAM_PER_THREAD));
	note_alloc(d, F_ASYNC, s4);
	if (probe(d, NULL))
		return -1;
	EXPECT(CUDA_SUCCESS, F->cuMemFreeAsync(b2, FAKECUDA_STREAM_PER_THREAD));
	note_free(d, F_ASYNC, s2);
	EXPECT(CUDA_SUCCESS, F->cuMemFreeAsync(b3, NULL));
	note_free(d, F_ASYNC, s3);
	/* cuMemFree_v2 of a pool pointer: frees count in async. */
	EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(b4));
	note_free(d, F_ASYNC, s4);
	EXPECT(CUDA_ERROR_INVALID_VALUE, F->cuMemFreeAsync(unknown, NULL));
	note_fail(d, F_ASYNC);
	EXPECT(CUDA_SUCCESS, F->cuStreamSynchronize(NULL));
	EXPECT(CUDA_SUCCESS,
	       F->cuStreamSynchronize(FAKECUDA_STREAM_PER_THREAD));
	EXPECT(CUDA_SUCCESS, F->cuMemPoolDestroy(pool));
	return probe(d, NULL); /* b1 stays live */
}

static int vmm_family(int d, unsigned k)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	CUmemGenericAllocationHandle h1, h2, h3, h4;
	CUdeviceptr va1, va2;
	size_t g = 0;
	unsigned long long s1, s2, s3, s4;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = d;
	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	EXPECT(CUDA_SUCCESS,
	       F->cuMemGetAllocationGranularity(
	               &g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	REQUIRE(g > 0);
	s1 = (4 + S.pass) * g;
	s2 = (6 + d) * g;
	s3 = (3 + S.pass + d) * g;
	s4 = (5 + k % 3) * g;

	EXPECT(CUDA_SUCCESS,
	       F->cuMemAddressReserve(&va1, s1 + s2 + s3, 0, 0, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemCreate(&h1, s1, &prop, 0));
	note_alloc(d, F_VMM, s1);
	EXPECT(CUDA_SUCCESS, F->cuMemCreate(&h2, s2, &prop, 0));
	note_alloc(d, F_VMM, s2);
	EXPECT(CUDA_SUCCESS, F->cuMemCreate(&h3, s3, &prop, 0));
	note_alloc(d, F_VMM, s3);
	EXPECT(CUDA_SUCCESS, F->cuMemMap(va1, s1, 0, h1, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemMap(va1 + s1, s2, 0, h2, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemMap(va1 + s1 + s2, s3, 0, h3, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemSetAccess(va1, s1 + s2 + s3, &access, 1));
	if (probe(d, NULL))
		return -1;
	/* Unmap, then release: the memory returns at the release. */
	EXPECT(CUDA_SUCCESS, F->cuMemUnmap(va1, s1));
	EXPECT(CUDA_SUCCESS, F->cuMemRelease(h1));
	note_free(d, F_VMM, s1);
	/* Release while mapped (what PyTorch's expandable segments do): the
	 * memory returns only at the unmap. */
	EXPECT(CUDA_SUCCESS, F->cuMemRelease(h2));
	if (probe(d, NULL))
		return -1;
	EXPECT(CUDA_SUCCESS, F->cuMemUnmap(va1 + s1, s2));
	note_free(d, F_VMM, s2);
	/* A second release of a gone handle. */
	EXPECT(CUDA_ERROR_INVALID_VALUE, F->cuMemRelease(h1));
	note_fail(d, F_VMM);
	/* A full cycle ending with cuMemAddressFree. */
	EXPECT(CUDA_SUCCESS, F->cuMemAddressReserve(&va2, s4, 0, 0, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemCreate(&h4, s4, &prop, 0));
	note_alloc(d, F_VMM, s4);
	EXPECT(CUDA_SUCCESS, F->cuMemMap(va2, s4, 0, h4, 0));
	EXPECT(CUDA_SUCCESS, F->cuMemRelease(h4));
	EXPECT(CUDA_SUCCESS, F->cuMemUnmap(va2, s4));
	note_free(d, F_VMM, s4);
	EXPECT(CUDA_SUCCESS, F->cuMemAddressFree(va2, s4));
	return probe(d, NULL); /* h3 stays mapped and live; va1 reserved */
}

static int managed_family(int d, unsigned k)
{
	CUdeviceptr m1, m2;
	unsigned long long s1 = 12 * MiB + 77 + k, s2 = 2 * MiB + 5 + k;
	EXPECT(CUDA_SUCCESS,
	       F->cuMemAllocManaged(&m1, s1, FAKECUDA_MEM_ATTACH_GLOBAL));
	note_alloc(d, F_MANAGED, s1);
	EXPECT(CUDA_SUCCESS,
	       F->cuMemAllocManaged(&m2, s2, FAKECUDA_MEM_ATTACH_GLOBAL));
	note_alloc(d, F_MANAGED, s2);
	EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(m1));
	note_free(d, F_MANAGED, s1);
	return probe(d, NULL); /* m2 stays live */
}

static int device_ooms(int d)
{
	const char *async_api =
	        F->ptsz ? "cuMemAllocAsync_ptsz" : "cuMemAllocAsync";
	CUdeviceptr p = 1;
	size_t fr;
	unsigned long long req;

	if (probe(d, &fr))
		return -1;
	req = fr + GiB + 512ull * d + 1 + S.pass;
	EXPECT(CUDA_ERROR_OUT_OF_MEMORY, F->cuMemAlloc_v2(&p, req));
	REQUIRE(p == 0);
	note_fail(d, F_DEVICE);
	note_oom("cuMemAlloc_v2", d, req, (long long)fr);
	if (d == 0) {
		req = fr + 3 * GiB + 99 + S.pass;
		EXPECT(CUDA_ERROR_OUT_OF_MEMORY,
		       F->cuMemAllocAsync(&p, req, NULL));
		note_fail(d, F_ASYNC);
		note_oom(async_api, d, req, (long long)fr);
	}
	if (d == S.ndev - 1) {
		CUmemAllocationProp prop;
		CUmemGenericAllocationHandle h = 0;
		memset(&prop, 0, sizeof(prop));
		prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
		prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
		prop.location.id = d;
		req = ((fr + 2 * GiB) / (2 * MiB) + 1 + S.pass) * (2 * MiB);
		EXPECT(CUDA_ERROR_OUT_OF_MEMORY,
		       F->cuMemCreate(&h, req, &prop, 0));
		note_fail(d, F_VMM);
		note_oom("cuMemCreate", d, req, (long long)fr);
	}
	return probe(d, NULL);
}

static int host_families(void)
{
	void *hp1, *hp2, *hp3, *hp_oom = (void *)1;
	char *not_pinned, *rb1, *rb2;
	unsigned p = (unsigned)S.pass;
	unsigned long long s1 = 6 * MiB + 33 + p, s2 = MiB + 21 + p,
	                   s3 = 300000 + p, huge = (1ull << 40) + 7 + p,
	                   r1 = 2 * MiB + 100 + p, r2 = 700000 + p;

	if (use_dev(0))
		return -1;
	EXPECT(CUDA_SUCCESS, F->cuMemHostAlloc(&hp1, s1, 0));
	note_alloc(-1, F_PINNED, s1);
	EXPECT(CUDA_SUCCESS, F->cuMemAllocHost_v2(&hp2, s2));
	note_alloc(-1, F_PINNED, s2);
	EXPECT(CUDA_SUCCESS, F->cuMemHostAlloc(&hp3, s3, 1 /* PORTABLE */));
	note_alloc(-1, F_PINNED, s3);
	/* Pinned memory is real host memory: the program may use it. */
	memset(hp1, 0xa5, 4096);
	memset(hp2, 0x5a, 64);
	memset(hp3, 0x11, 64);
	EXPECT(CUDA_SUCCESS, F->cuMemFreeHost(hp1));
	note_free(-1, F_PINNED, s1);
	not_pinned = malloc(64);
	REQUIRE(not_pinned);
	EXPECT(CUDA_ERROR_INVALID_VALUE, F->cuMemFreeHost(not_pinned));
	note_fail(-1, F_PINNED);
	free(not_pinned);
	EXPECT(CUDA_ERROR_OUT_OF_MEMORY, F->cuMemHostAlloc(&hp_oom, huge, 0));
	REQUIRE(hp_oom == NULL);
	note_fail(-1, F_PINNED);
	note_oom("cuMemHostAlloc", -1, huge, -1);

	rb1 = malloc(r1);
	rb2 = malloc(r2);
	REQUIRE(rb1 && rb2);
	EXPECT(CUDA_SUCCESS, F->cuMemHostRegister_v2(rb1, r1, 0));
	note_alloc(-1, F_REGISTERED, r1);
	EXPECT(CUDA_SUCCESS, F->cuMemHostRegister_v2(rb2, r2, 0));
	note_alloc(-1, F_REGISTERED, r2);
	EXPECT(CUDA_SUCCESS, F->cuMemHostUnregister(rb1));
	note_free(-1, F_REGISTERED, r1);
	EXPECT(FAKECUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
	       F->cuMemHostUnregister(rb1));
	note_fail(-1, F_REGISTERED);
	free(rb1);
	/* hp2, hp3 and rb2 stay pinned/registered until exit. */
	return 0;
}

static int run_pass(const struct cu_fns *fns, int pass)
{
	F = fns;
	S.pass = pass;
	for (int d = 0; d < S.ndev; d++) {
		unsigned k = (unsigned)(pass * 16 + d);
		if (use_dev(d) || probe(d, NULL) || device_family(d, k) ||
		    async_family(d, k) || vmm_family(d, k) ||
		    managed_family(d, k) || device_ooms(d))
			return -1;
	}
	if (host_families())
		return -1;
	EXPECT(CUDA_SUCCESS, F->cuCtxSynchronize());
	return 0;
}

/* ---- threads mode ------------------------------------------------------ */

struct thr {
	pthread_t id;
	int t, dev, iters;
	unsigned long long max_size, keep;
	int err;
};

/* --size: every pair of threads mode asks for the same bytes (a repeated
 * call site, which the trace folds); 0: sizes vary. */
static unsigned long long fixed_size;

static void *thread_main(void *arg)
{
	struct thr *th = arg;
	CUdeviceptr p;
	CUresult r = F->cuCtxSetCurrent(S.ctx[th->dev]);
	for (int i = 0; i < th->iters && r == CUDA_SUCCESS; i++) {
		unsigned long long sz =
		        fixed_size ? fixed_size
		                   : 512ull * (1 + ((unsigned)i * 2654435761u +
		                                    (unsigned)th->t * 40503u) %
		                                           4096) +
		                             (unsigned)(i % 7);
		r = F->cuMemAlloc_v2(&p, sz);
		if (r == CUDA_SUCCESS)
			r = F->cuMemFree_v2(p);
		if (sz > th->max_size)
			th->max_size = sz;
	}
	/* One allocation per thread outlives the run. */
	th->keep = MiB + 4096ull * th->t + 3;
	if (r == CUDA_SUCCESS)
		r = F->cuMemAlloc_v2(&p, th->keep);
	if (th->keep > th->max_size)
		th->max_size = th->keep;
	th->err = (int)r;
	return NULL;
}

static int run_threads(int nthreads, int iters)
{
	struct thr *th = calloc((size_t)nthreads, sizeof(*th));
	int rc = 0;
	REQUIRE(th);
	for (int t = 0; t < nthreads; t++) {
		th[t] = (struct thr){.t = t, .dev = t % S.ndev, .iters = iters};
		if (pthread_create(&th[t].id, NULL, thread_main, &th[t])) {
			fprintf(stderr, "workload: pthread_create failed\n");
			exit(1); /* threads already started still run */
		}
	}
	for (int t = 0; t < nthreads; t++) {
		struct counters *c = &S.dev[th[t].dev][F_DEVICE];
		pthread_join(th[t].id, NULL);
		if (th[t].err != CUDA_SUCCESS) {
			fprintf(stderr, "workload: thread %d: error %d (%s)\n",
			        t, th[t].err, errname(th[t].err));
			rc = -1;
		}
		c->allocs += iters + 1;
		c->frees += iters;
		c->live += (long long)th[t].keep;
		/* With one thread per device the peak is that thread's
		 * largest block; with several it depends on scheduling. */
		if ((long long)th[t].max_size > c->peak)
			c->peak = (long long)th[t].max_size;
	}
	if (nthreads > S.ndev)
		S.peaks_unknown = 1;
	for (int d = 0; d < S.ndev && !rc; d++)
		if (use_dev(d) || probe(d, NULL))
			rc = -1;
	free(th);
	return rc;
}

/* ---- oom mode ---------------------------------------------------------- */

/* Fills device 0 with blocks of 100 MiB (or 1/40 of a large card) until
 * the driver refuses. */
static int run_oom(void)
{
	CUdeviceptr blocks[256];
	unsigned long long sz =
	        S.total[0] / 40 > 100 * MiB ? S.total[0] / 40 : 100 * MiB;
	int n = 0;
	size_t fr;
	CUresult r;

	sz += 3;
	if (use_dev(0))
		return -1;
	for (;;) {
		CUdeviceptr p = 0;
		if (probe(0, &fr))
			return -1;
		REQUIRE(n < 256);
		r = F->cuMemAlloc_v2(&p, sz + 512ull * n);
		if (r != CUDA_SUCCESS)
			break;
		note_alloc(0, F_DEVICE, sz + 512ull * n);
		blocks[n++] = p;
	}
	/* The host must see the driver's code unchanged. */
	REQUIRE(r == CUDA_ERROR_OUT_OF_MEMORY);
	REQUIRE(fr < sz + 512ull * n);
	note_fail(0, F_DEVICE);
	note_oom("cuMemAlloc_v2", 0, sz + 512ull * n, (long long)fr);
	EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(0));
	/* Free every other block; the freed room serves a new request. */
	for (int i = 0; i < n; i += 2) {
		EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(blocks[i]));
		note_free(0, F_DEVICE, sz + 512ull * i);
	}
	EXPECT(CUDA_SUCCESS, F->cuMemAlloc_v2(&blocks[0], 50 * MiB + 7));
	note_alloc(0, F_DEVICE, 50 * MiB + 7);
	return probe(0, NULL);
}

/* ---- sigkill mode ------------------------------------------------------ */

static int write_pidfile(const char *path)
{
	char tmp[4096];
	FILE *f;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) ||
	    rename(tmp, path)) {
		fprintf(stderr, "workload: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* Allocates until killed; gives up (exit 3) after 60 s so a harness bug
 * never leaves it running. */
static int run_until_killed(const char *pidfile)
{
	CUdeviceptr keep[64], p;
	struct timespec pause = {0, 1000000};
	size_t fr;
	S.truncated = 1;
	if (use_dev(0))
		return -1;
	for (int i = 0; i < 64; i++) {
		EXPECT(CUDA_SUCCESS,
		       F->cuMemAlloc_v2(&keep[i], MiB + 512ull * i));
		note_alloc(0, F_DEVICE, MiB + 512ull * i);
	}
	/* A failed allocation makes the preload close and sync its current
	 * frame at once, so the trace holds data however early the kill. */
	if (probe(0, &fr))
		return -1;
	EXPECT(CUDA_ERROR_OUT_OF_MEMORY, F->cuMemAlloc_v2(&p, fr + GiB));
	if (!pidfile || write_pidfile(pidfile))
		return -1;
	for (long i = 0; i < 60000; i++) {
		EXPECT(CUDA_SUCCESS,
		       F->cuMemAlloc_v2(&p, 4096 + 512ull * (i % 100)));
		if (i % 3)
			EXPECT(CUDA_SUCCESS, F->cuMemFree_v2(p));
		nanosleep(&pause, NULL);
	}
	fprintf(stderr, "workload: sigkill mode was never killed\n");
	exit(3);
}

/* ---- expectation output ------------------------------------------------ */

static void put_counters(FILE *f, const struct counters *c, int peak_known)
{
	fprintf(f,
	        "{\"allocs\": %lld, \"frees\": %lld, \"failed\": %lld, "
	        "\"peak_bytes\": %lld, \"live_bytes_end\": %lld}",
	        c->allocs, c->frees, c->failed, peak_known ? c->peak : -1,
	        c->live);
}

static int write_expect(const char *path)
{
	char tmp[4096];
	long long failures = 0;
	FILE *f;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "workload: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"devices\": [\n");
	for (int d = 0; d < S.ndev; d++) {
		fprintf(f,
		        "    {\"id\": %d, \"total_bytes\": %zu, \"families\": "
		        "{",
		        d, S.total[d]);
		for (int fa = 0; fa < F_PINNED; fa++) {
			fprintf(f, "%s\n      \"%s\": ", fa ? "," : "",
			        fam_name[fa]);
			put_counters(f, &S.dev[d][fa], !S.peaks_unknown);
			failures += S.dev[d][fa].failed;
		}
		fprintf(f, "}}%s\n", d + 1 < S.ndev ? "," : "");
	}
	fprintf(f, "  ],\n  \"host\": {\"families\": {");
	for (int fa = F_PINNED; fa < F_N; fa++) {
		fprintf(f, "%s\n    \"%s\": ", fa > F_PINNED ? "," : "",
		        fam_name[fa]);
		put_counters(f, &S.host[fa - F_PINNED], 1);
		failures += S.host[fa - F_PINNED].failed;
	}
	fprintf(f, "}},\n  \"ooms\": [");
	for (int i = 0; i < S.nooms; i++)
		fprintf(f,
		        "%s\n    {\"api\": \"%s\", \"device\": %d, "
		        "\"requested_bytes\": %llu, \"free_bytes\": %lld}",
		        i ? "," : "", S.ooms[i].api, S.ooms[i].device,
		        S.ooms[i].requested, S.ooms[i].free_bytes);
	fprintf(f, "\n  ],\n  \"failures\": %lld,\n  \"truncated\": %s\n}\n",
	        failures, S.truncated ? "true" : "false");
	if (fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "workload: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- main -------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: client [--expect FILE] [--devices N] "
	                "[--mode workload|threads|oom|sigkill] [--threads N] "
	                "[--iters N] [--size BYTES] [--pidfile FILE]\n");
	return 2;
}

int wl_main(int argc, char **argv, const struct cu_fns *flags0,
            const struct cu_fns *flags2)
{
	const char *expect = NULL, *mode = "workload", *pidfile = NULL;
	int ndev = 0, nthreads = 16, iters = 100000, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--expect") && v)
			expect = v;
		else if (!strcmp(a, "--devices") && v)
			ndev = atoi(v);
		else if (!strcmp(a, "--mode") && v)
			mode = v;
		else if (!strcmp(a, "--threads") && v)
			nthreads = atoi(v);
		else if (!strcmp(a, "--iters") && v)
			iters = atoi(v);
		else if (!strcmp(a, "--size") && v)
			fixed_size = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--pidfile") && v)
			pidfile = v;
		else
			return usage();
		i++;
	}
	if (nthreads < 1 || iters < 0)
		return usage();

	F = flags0;
	if (setup(ndev))
		return 1;
	if (!strcmp(mode, "workload"))
		rc = run_pass(flags0, 0) || run_pass(flags2, 1);
	else if (!strcmp(mode, "threads"))
		rc = run_threads(nthreads, iters);
	else if (!strcmp(mode, "oom"))
		rc = run_oom();
	else if (!strcmp(mode, "sigkill"))
		rc = run_until_killed(pidfile);
	else
		return usage();
	if (rc)
		return 1;
	if (expect && write_expect(expect))
		return 1;
	return 0;
}
