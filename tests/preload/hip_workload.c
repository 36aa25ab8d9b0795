/*
 * hip_workload.c — the deterministic GPU-memory workload of the HIP preload
 * test clients, and the bookkeeping of what `vramtrace analyze` must report
 * for it (the rules of workload.c, with HIP's calls).
 *
 * The workload touches every recorded HIP family on every device: device
 * (hipMalloc, hipExtMallocWithFlags, hipMallocPitch, hipFree, hipFree(NULL),
 * a zero-byte hipMalloc that returns NULL and allocates nothing), async
 * (hipMallocAsync on the NULL and per-thread streams, hipMallocFromPoolAsync
 * on a default and a created pool, hipFreeAsync), vmm (reserve, create, map,
 * unmap, release in both orders, address free), managed, and on the host
 * pinned (hipHostMalloc, hipMallocHost, hipHostFree, hipFreeHost) and
 * registered memory. It makes calls that must fail with an exact code
 * (double and unknown frees, OOMs on device and host) and leaves
 * allocations of every family live at exit. Sizes differ per allocation,
 * device and pass.
 *
 * Expectation rules: those of workload.c. A NULL free and a zero-byte
 * allocation answered with NULL are no events.
 *
 * Threads: the calling thread only (HIP's current device is per thread).
 */
#include "hip_workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HWL_MAX_DEV 64
#define HWL_MAX_OOM 256
#define MiB         (1ull << 20)
#define GiB         (1ull << 30)

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
	int ndev, id_base;
	size_t total[HWL_MAX_DEV];
	size_t baseline_used[HWL_MAX_DEV];
	struct counters dev[HWL_MAX_DEV][F_PINNED];
	struct counters host[F_N - F_PINNED];
	struct oom ooms[HWL_MAX_OOM];
	int nooms;
	int pass;
};

static struct state S;
static const struct hip_fns *F;

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
	if (S.nooms < HWL_MAX_OOM)
		S.ooms[S.nooms++] = (struct oom){api, dev, req, free_bytes};
}

static long long dev_live(int d)
{
	long long sum = 0;
	for (int f = 0; f < F_PINNED; f++)
		sum += S.dev[d][f].live;
	return sum;
}

/* ---- checks ------------------------------------------------------------ */

static const char *errname(hipError_t r)
{
	const char *s = F && F->hipGetErrorName ? F->hipGetErrorName(r) : NULL;
	return s ? s : "?";
}

#define EXPECT(want, call)                                                     \
	do {                                                                   \
		hipError_t r_ = (call);                                        \
		if (r_ != (want)) {                                            \
			fprintf(stderr,                                        \
			        "hip_workload: %s:%d: %s returned %d (%s), "   \
			        "expected %d (%s)\n",                          \
			        __FILE__, __LINE__, #call, (int)r_,            \
			        errname(r_), (int)(want), errname(want));      \
			return -1;                                             \
		}                                                              \
	} while (0)

#define REQUIRE(cond)                                                          \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
			        "hip_workload: %s:%d: check failed: %s\n",     \
			        __FILE__, __LINE__, #cond);                    \
			return -1;                                             \
		}                                                              \
	} while (0)

/* free/total of device d (current) against the bookkeeping. */
static int probe(int d, size_t *free_out)
{
	size_t fr = 0, tot = 0;
	EXPECT(hipSuccess, F->hipMemGetInfo(&fr, &tot));
	REQUIRE(tot == S.total[d]);
	if ((long long)(tot - fr) !=
	    (long long)S.baseline_used[d] + dev_live(d)) {
		fprintf(stderr,
		        "hip_workload: device %d: runtime says %zu bytes used, "
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
	int cur = -1;
	EXPECT(hipSuccess, F->hipSetDevice(d));
	EXPECT(hipSuccess, F->hipGetDevice(&cur));
	REQUIRE(cur == d);
	return 0;
}

#define P(x) ((unsigned long long)(uintptr_t)(x))

/* ---- setup ------------------------------------------------------------- */

static int setup(int want_ndev)
{
	int n = 0, ver = 0, cur = -1;
	/* No explicit init needed: the current device is 0 from the start. */
	EXPECT(hipSuccess, F->hipGetDevice(&cur));
	REQUIRE(cur == 0);
	EXPECT(hipSuccess, F->hipInit(0));
	EXPECT(hipSuccess, F->hipRuntimeGetVersion(&ver));
	REQUIRE(ver >= 60000000);
	EXPECT(hipSuccess, F->hipGetDeviceCount(&n));
	REQUIRE(n >= 1 && n <= HWL_MAX_DEV);
	if (want_ndev > 0 && n != want_ndev) {
		fprintf(stderr,
		        "hip_workload: runtime has %d devices, want %d\n", n,
		        want_ndev);
		return -1;
	}
	S.ndev = n;
	EXPECT(hipErrorInvalidDevice, F->hipSetDevice(n));
	for (int d = 0; d < n; d++) {
		hipDevice_t dev;
		char name[64];
		hipUUID uuid;
		size_t fr, tot;
		EXPECT(hipSuccess, F->hipDeviceGet(&dev, d));
		EXPECT(hipSuccess,
		       F->hipDeviceGetName(name, sizeof(name), dev));
		EXPECT(hipSuccess, F->hipDeviceGetUuid(&uuid, dev));
		EXPECT(hipSuccess, F->hipDeviceTotalMem(&S.total[d], dev));
		if (use_dev(d))
			return -1;
		EXPECT(hipSuccess, F->hipMemGetInfo(&fr, &tot));
		REQUIRE(tot == S.total[d] && fr <= tot);
		S.baseline_used[d] = tot - fr;
	}
	return 0;
}

/* ---- the workload, one pass -------------------------------------------- */

static int device_family(int d, unsigned k)
{
	void *a1, *a2, *a3, *e1, *p1, *z = (void *)1;
	void *unknown = (void *)(uintptr_t)(0xdead0000ull + 512 * d);
	size_t pitch = 0;
	unsigned long long s1 = 64 * MiB + 1000 + 7 * k, s2 = 3 * MiB + 17 + k,
	                   s3 = 128 * MiB + 5 + 3 * k, se = 9 * MiB + 99 + k,
	                   w = 1000 + 8 * d + S.pass, h = 300 + k;

	EXPECT(hipSuccess, F->hipMalloc(&a1, s1));
	note_alloc(d, F_DEVICE, s1);
	EXPECT(hipSuccess, F->hipMalloc(&a2, s2));
	note_alloc(d, F_DEVICE, s2);
	REQUIRE(a1 && a2 && a1 != a2 && P(a1) % 512 == 0);
	EXPECT(hipSuccess, F->hipExtMallocWithFlags(
	                           &e1, se, FAKEHIP_DEVICE_MALLOC_FINEGRAINED));
	note_alloc(d, F_DEVICE, se);
	EXPECT(hipSuccess, F->hipMallocPitch(&p1, &pitch, w, h));
	REQUIRE(pitch == ((w + 511) & ~511ull));
	note_alloc(d, F_DEVICE, pitch * h);
	if (probe(d, NULL))
		return -1;
	EXPECT(hipSuccess, F->hipFree(a2));
	note_free(d, F_DEVICE, s2);
	/* hipFree(NULL) succeeds and is no event; neither is a zero-byte
	 * hipMalloc, which answers NULL. */
	EXPECT(hipSuccess, F->hipFree(NULL));
	EXPECT(hipSuccess, F->hipMalloc(&z, 0));
	REQUIRE(z == NULL);
	EXPECT(hipErrorInvalidValue, F->hipFree(a2));
	note_fail(d, F_DEVICE);
	EXPECT(hipErrorInvalidValue, F->hipFree(unknown));
	note_fail(d, F_DEVICE);
	EXPECT(hipSuccess, F->hipMalloc(&a3, s3));
	note_alloc(d, F_DEVICE, s3);
	/* A stream-ordered free of a hipMalloc pointer: counted in device. */
	EXPECT(hipSuccess, F->hipFreeAsync(a3, NULL));
	note_free(d, F_DEVICE, s3);
	EXPECT(hipSuccess, F->hipFree(e1));
	note_free(d, F_DEVICE, se);
	return probe(d, NULL); /* a1 and p1 stay live */
}

static int async_family(int d, unsigned k)
{
	void *b1, *b2, *b3, *b4;
	void *unknown = (void *)(uintptr_t)(0xbad00000ull + 512 * d);
	hipMemPool_t defpool = NULL, pool = NULL;
	hipMemPoolProps props;
	unsigned long long s1 = 48 * MiB + 123 + k, s2 = 5 * MiB + 9 + k,
	                   s3 = 7 * MiB + 11 + k, s4 = 9 * MiB + 1 + k;

	memset(&props, 0, sizeof(props));
	props.allocType = hipMemAllocationTypePinned;
	props.location.type = hipMemLocationTypeDevice;
	props.location.id = d;
	EXPECT(hipSuccess, F->hipMallocAsync(&b1, s1, NULL));
	note_alloc(d, F_ASYNC, s1);
	EXPECT(hipSuccess,
	       F->hipMallocAsync(&b2, s2, FAKEHIP_STREAM_PER_THREAD));
	note_alloc(d, F_ASYNC, s2);
	EXPECT(hipSuccess, F->hipDeviceGetDefaultMemPool(&defpool, d));
	EXPECT(hipSuccess, F->hipMallocFromPoolAsync(&b3, s3, defpool, NULL));
	note_alloc(d, F_ASYNC, s3);
	EXPECT(hipSuccess, F->hipMemPoolCreate(&pool, &props));
	EXPECT(hipSuccess, F->hipMallocFromPoolAsync(
	                           &b4, s4, pool, FAKEHIP_STREAM_PER_THREAD));
	note_alloc(d, F_ASYNC, s4);
	if (probe(d, NULL))
		return -1;
	EXPECT(hipSuccess, F->hipFreeAsync(b2, FAKEHIP_STREAM_PER_THREAD));
	note_free(d, F_ASYNC, s2);
	EXPECT(hipSuccess, F->hipFreeAsync(b3, NULL));
	note_free(d, F_ASYNC, s3);
	/* hipFree of a pool pointer: frees count in async. */
	EXPECT(hipSuccess, F->hipFree(b4));
	note_free(d, F_ASYNC, s4);
	EXPECT(hipErrorInvalidValue, F->hipFreeAsync(unknown, NULL));
	note_fail(d, F_ASYNC);
	EXPECT(hipSuccess, F->hipStreamSynchronize(NULL));
	EXPECT(hipSuccess, F->hipStreamSynchronize(FAKEHIP_STREAM_PER_THREAD));
	EXPECT(hipSuccess, F->hipMemPoolDestroy(pool));
	return probe(d, NULL); /* b1 stays live */
}

static void vmm_prop(hipMemAllocationProp *prop, int d)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = hipMemAllocationTypePinned;
	prop->location.type = hipMemLocationTypeDevice;
	prop->location.id = d;
}

static int vmm_family(int d, unsigned k)
{
	hipMemAllocationProp prop;
	hipMemAccessDesc access;
	hipMemGenericAllocationHandle_t h1, h2, h3, h4;
	void *va1, *va2;
	char *v;
	size_t g = 0;
	unsigned long long s1, s2, s3, s4;

	vmm_prop(&prop, d);
	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = hipMemAccessFlagsProtReadWrite;
	EXPECT(hipSuccess,
	       F->hipMemGetAllocationGranularity(
	               &g, &prop, hipMemAllocationGranularityMinimum));
	REQUIRE(g > 0);
	s1 = (4 + S.pass) * g;
	s2 = (6 + d) * g;
	s3 = (3 + S.pass + d) * g;
	s4 = (5 + k % 3) * g;

	EXPECT(hipSuccess,
	       F->hipMemAddressReserve(&va1, s1 + s2 + s3, 0, NULL, 0));
	v = va1;
	EXPECT(hipSuccess, F->hipMemCreate(&h1, s1, &prop, 0));
	note_alloc(d, F_VMM, s1);
	EXPECT(hipSuccess, F->hipMemCreate(&h2, s2, &prop, 0));
	note_alloc(d, F_VMM, s2);
	EXPECT(hipSuccess, F->hipMemCreate(&h3, s3, &prop, 0));
	note_alloc(d, F_VMM, s3);
	EXPECT(hipSuccess, F->hipMemMap(v, s1, 0, h1, 0));
	EXPECT(hipSuccess, F->hipMemMap(v + s1, s2, 0, h2, 0));
	EXPECT(hipSuccess, F->hipMemMap(v + s1 + s2, s3, 0, h3, 0));
	EXPECT(hipSuccess, F->hipMemSetAccess(v, s1 + s2 + s3, &access, 1));
	if (probe(d, NULL))
		return -1;
	/* Unmap, then release: the memory returns at the release. */
	EXPECT(hipSuccess, F->hipMemUnmap(v, s1));
	EXPECT(hipSuccess, F->hipMemRelease(h1));
	note_free(d, F_VMM, s1);
	/* Release while mapped: the memory returns only at the unmap. */
	EXPECT(hipSuccess, F->hipMemRelease(h2));
	if (probe(d, NULL))
		return -1;
	EXPECT(hipSuccess, F->hipMemUnmap(v + s1, s2));
	note_free(d, F_VMM, s2);
	EXPECT(hipErrorInvalidValue, F->hipMemRelease(h1));
	note_fail(d, F_VMM);
	/* A full cycle ending with hipMemAddressFree. */
	EXPECT(hipSuccess, F->hipMemAddressReserve(&va2, s4, 0, NULL, 0));
	EXPECT(hipSuccess, F->hipMemCreate(&h4, s4, &prop, 0));
	note_alloc(d, F_VMM, s4);
	EXPECT(hipSuccess, F->hipMemMap(va2, s4, 0, h4, 0));
	EXPECT(hipSuccess, F->hipMemRelease(h4));
	EXPECT(hipSuccess, F->hipMemUnmap(va2, s4));
	note_free(d, F_VMM, s4);
	EXPECT(hipSuccess, F->hipMemAddressFree(va2, s4));
	return probe(d, NULL); /* h3 stays mapped and live; va1 reserved */
}

static int managed_family(int d, unsigned k)
{
	void *m1, *m2;
	unsigned long long s1 = 12 * MiB + 77 + k, s2 = 2 * MiB + 5 + k;
	EXPECT(hipSuccess,
	       F->hipMallocManaged(&m1, s1, FAKEHIP_MEM_ATTACH_GLOBAL));
	note_alloc(d, F_MANAGED, s1);
	EXPECT(hipSuccess,
	       F->hipMallocManaged(&m2, s2, FAKEHIP_MEM_ATTACH_GLOBAL));
	note_alloc(d, F_MANAGED, s2);
	EXPECT(hipSuccess, F->hipFree(m1));
	note_free(d, F_MANAGED, s1);
	return probe(d, NULL); /* m2 stays live */
}

static int device_ooms(int d)
{
	void *p = (void *)1;
	size_t fr;
	unsigned long long req;

	if (probe(d, &fr))
		return -1;
	req = fr + GiB + 512ull * d + 1 + S.pass;
	EXPECT(hipErrorOutOfMemory, F->hipMalloc(&p, req));
	REQUIRE(p == NULL);
	note_fail(d, F_DEVICE);
	note_oom("hipMalloc", d, req, (long long)fr);
	if (d == 0) {
		req = fr + 3 * GiB + 99 + S.pass;
		EXPECT(hipErrorOutOfMemory, F->hipMallocAsync(&p, req, NULL));
		note_fail(d, F_ASYNC);
		note_oom("hipMallocAsync", d, req, (long long)fr);
		req = fr + 5 * GiB + 7 + S.pass;
		EXPECT(hipErrorOutOfMemory,
		       F->hipExtMallocWithFlags(&p, req, 0));
		note_fail(d, F_DEVICE);
		note_oom("hipExtMallocWithFlags", d, req, (long long)fr);
	}
	if (d == S.ndev - 1) {
		hipMemAllocationProp prop;
		hipMemGenericAllocationHandle_t h = NULL;
		vmm_prop(&prop, d);
		req = ((fr + 2 * GiB) / (2 * MiB) + 1 + S.pass) * (2 * MiB);
		EXPECT(hipErrorOutOfMemory, F->hipMemCreate(&h, req, &prop, 0));
		note_fail(d, F_VMM);
		note_oom("hipMemCreate", d, req, (long long)fr);
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
	EXPECT(hipSuccess,
	       F->hipHostMalloc(&hp1, s1, FAKEHIP_HOST_MALLOC_DEFAULT));
	note_alloc(-1, F_PINNED, s1);
	EXPECT(hipSuccess, F->hipMallocHost(&hp2, s2));
	note_alloc(-1, F_PINNED, s2);
	EXPECT(hipSuccess,
	       F->hipHostMalloc(&hp3, s3, FAKEHIP_HOST_MALLOC_PORTABLE));
	note_alloc(-1, F_PINNED, s3);
	/* Pinned memory is real host memory: the program may use it. */
	memset(hp1, 0xa5, 4096);
	memset(hp2, 0x5a, 64);
	memset(hp3, 0x11, 64);
	EXPECT(hipSuccess, F->hipHostFree(hp1));
	note_free(-1, F_PINNED, s1);
	EXPECT(hipSuccess, F->hipFreeHost(hp2)); /* the deprecated name */
	note_free(-1, F_PINNED, s2);
	EXPECT(hipSuccess, F->hipHostFree(NULL));
	not_pinned = malloc(64);
	REQUIRE(not_pinned);
	EXPECT(hipErrorInvalidValue, F->hipHostFree(not_pinned));
	note_fail(-1, F_PINNED);
	free(not_pinned);
	EXPECT(hipErrorOutOfMemory, F->hipHostMalloc(&hp_oom, huge, 0));
	REQUIRE(hp_oom == NULL);
	note_fail(-1, F_PINNED);
	note_oom("hipHostMalloc", -1, huge, -1);

	rb1 = malloc(r1);
	rb2 = malloc(r2);
	REQUIRE(rb1 && rb2);
	EXPECT(hipSuccess, F->hipHostRegister(rb1, r1, 0));
	note_alloc(-1, F_REGISTERED, r1);
	EXPECT(hipSuccess, F->hipHostRegister(rb2, r2, 0));
	note_alloc(-1, F_REGISTERED, r2);
	EXPECT(hipErrorHostMemoryAlreadyRegistered,
	       F->hipHostRegister(rb2, r2, 0));
	note_fail(-1, F_REGISTERED);
	EXPECT(hipSuccess, F->hipHostUnregister(rb1));
	note_free(-1, F_REGISTERED, r1);
	EXPECT(hipErrorHostMemoryNotRegistered, F->hipHostUnregister(rb1));
	note_fail(-1, F_REGISTERED);
	free(rb1);
	/* hp3 and rb2 stay pinned/registered until exit. */
	return 0;
}

static int run_pass(const struct hip_fns *fns, int pass)
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
	EXPECT(hipSuccess, F->hipDeviceSynchronize());
	return 0;
}

/* ---- oom mode ---------------------------------------------------------- */

/* Fills the last device with blocks until the runtime refuses, on a
 * device other than 0 so the device must come from hipSetDevice. */
static int run_oom(void)
{
	void *blocks[256];
	int d = S.ndev - 1, n = 0;
	unsigned long long sz =
	        (S.total[d] / 40 > 100 * MiB ? S.total[d] / 40 : 100 * MiB) + 3;
	size_t fr;
	hipError_t r;

	if (use_dev(d))
		return -1;
	for (;;) {
		void *p = NULL;
		if (probe(d, &fr))
			return -1;
		REQUIRE(n < 256);
		r = F->hipMalloc(&p, sz + 512ull * n);
		if (r != hipSuccess)
			break;
		note_alloc(d, F_DEVICE, sz + 512ull * n);
		blocks[n++] = p;
	}
	REQUIRE(r == hipErrorOutOfMemory);
	REQUIRE(fr < sz + 512ull * n);
	note_fail(d, F_DEVICE);
	note_oom("hipMalloc", d, sz + 512ull * n, (long long)fr);
	for (int i = 0; i < n; i += 2) {
		EXPECT(hipSuccess, F->hipFree(blocks[i]));
		note_free(d, F_DEVICE, sz + 512ull * i);
	}
	EXPECT(hipSuccess, F->hipMalloc(&blocks[0], 50 * MiB + 7));
	note_alloc(d, F_DEVICE, 50 * MiB + 7);
	return probe(d, NULL);
}

/* ---- expectation output ------------------------------------------------ */

static void put_counters(FILE *f, const struct counters *c)
{
	fprintf(f,
	        "{\"allocs\": %lld, \"frees\": %lld, \"failed\": %lld, "
	        "\"peak_bytes\": %lld, \"live_bytes_end\": %lld}",
	        c->allocs, c->frees, c->failed, c->peak, c->live);
}

static int write_expect(const char *path)
{
	char tmp[4096];
	long long failures = 0;
	FILE *f;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "hip_workload: %s: %s\n", tmp, strerror(errno));
		return -1;
	}
	fprintf(f, "{\n  \"devices\": [\n");
	for (int d = 0; d < S.ndev; d++) {
		fprintf(f,
		        "    {\"id\": %d, \"vendor\": \"hip\", "
		        "\"total_bytes\": %zu, \"families\": {",
		        S.id_base + d, S.total[d]);
		for (int fa = 0; fa < F_PINNED; fa++) {
			fprintf(f, "%s\n      \"%s\": ", fa ? "," : "",
			        fam_name[fa]);
			put_counters(f, &S.dev[d][fa]);
			failures += S.dev[d][fa].failed;
		}
		fprintf(f, "}}%s\n", d + 1 < S.ndev ? "," : "");
	}
	fprintf(f, "  ],\n  \"host\": {\"families\": {");
	for (int fa = F_PINNED; fa < F_N; fa++) {
		fprintf(f, "%s\n    \"%s\": ", fa > F_PINNED ? "," : "",
		        fam_name[fa]);
		put_counters(f, &S.host[fa - F_PINNED]);
		failures += S.host[fa - F_PINNED].failed;
	}
	fprintf(f, "}},\n  \"ooms\": [");
	for (int i = 0; i < S.nooms; i++)
		fprintf(f,
		        "%s\n    {\"api\": \"%s\", \"device\": %d, "
		        "\"requested_bytes\": %llu, \"free_bytes\": %lld}",
		        i ? "," : "", S.ooms[i].api,
		        S.ooms[i].device < 0 ? -1
		                             : S.id_base + S.ooms[i].device,
		        S.ooms[i].requested, S.ooms[i].free_bytes);
	fprintf(f, "\n  ],\n  \"failures\": %lld,\n  \"truncated\": false\n}\n",
	        failures);
	if (fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "hip_workload: %s: %s\n", path,
		        strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- main -------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr, "usage: client [--expect FILE] [--devices N] "
	                "[--id-base N] [--mode workload|oom]\n");
	return 2;
}

int hwl_main(int argc, char **argv, const struct hip_fns *pass0,
             const struct hip_fns *pass1)
{
	const char *expect = NULL, *mode = "workload";
	int ndev = 0, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--expect") && v)
			expect = v;
		else if (!strcmp(a, "--devices") && v)
			ndev = atoi(v);
		else if (!strcmp(a, "--id-base") && v)
			S.id_base = atoi(v);
		else if (!strcmp(a, "--mode") && v)
			mode = v;
		else
			return usage();
		i++;
	}
	F = pass0;
	if (setup(ndev))
		return 1;
	if (!strcmp(mode, "workload"))
		rc = run_pass(pass0, 0) || run_pass(pass1, 1);
	else if (!strcmp(mode, "oom"))
		rc = run_oom();
	else
		return usage();
	if (rc)
		return 1;
	if (expect && write_expect(expect))
		return 1;
	return 0;
}
