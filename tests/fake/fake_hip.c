/*
 * fake_hip.c — a fake HIP runtime (libamdhip64.so.6) for the preload tests
 * (no GPU needed).
 *
 * It answers the slice of the HIP runtime API that inference runtimes use
 * for memory, and behaves like libamdhip64 where vramtrace can tell:
 *   - reached as the runtime is reached: linked (-lamdhip64), dlopen +
 *     dlsym, and hipGetProcAddress (HIP 6.2), whose answers are this
 *     library's own functions (linked -Wl,-Bsymbolic), the "_spt" export
 *     for flags 2 where one exists, hipErrorInvalidValue for an unknown
 *     name;
 *   - no explicit initialisation (hipInit is optional), a current device
 *     per thread (default 0, hipSetDevice), several devices
 *     (FAKEHIP_DEVICES) with configurable capacity (FAKEHIP_MEM) and memory
 *     already used by "other processes" (FAKEHIP_USED), hipErrorOutOfMemory
 *     past capacity, hipMemGetInfo consistent with every allocation;
 *   - a zero-byte hipMalloc succeeds with a NULL pointer, as HIP's does;
 *   - device pointers are fake: per-device bump ranges from 1 << 54 (away
 *     from the fake CUDA driver's), 512-byte aligned, never reused, never
 *     touched, so an "80 GiB" card fits on a laptop; VMM address
 *     reservations and physical handles come from ranges of their own;
 *   - pinned host memory is real malloc memory (callers may touch it),
 *     counted with registered ranges against FAKEHIP_HOST_MEM;
 *   - VMM physical memory is returned when its handle has been released
 *     AND every mapping of it is unmapped, in either order; the
 *     hipMemAllocationProp it reads is HIP 6's layout;
 *   - hipPointerGetAttribute answers HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL
 *     for a device pointer (from any thread).
 * For the tests only (not HIP calls): fakehip_get_device_calls() counts
 * the calls to hipGetDevice so far, so a test can tell how often the
 * preload asked for the current device.
 * Environment (read once, at first use): FAKEHIP_DEVICES (1), FAKEHIP_MEM
 * ("64G"), FAKEHIP_USED ("0") — sizes with K/M/G/T suffix, or a comma list,
 * one per device, the last repeating —, FAKEHIP_NAME ("Fake AMD GPU"),
 * FAKEHIP_HOST_MEM ("16G"), FAKEHIP_DEBUG (log calls to stderr; otherwise
 * the library never prints). FAKEHIP_DEVICES=0 makes every call answer
 * hipErrorNoDevice, as the real runtime does on a machine without a GPU.
 *
 * Threads: any thread may call anything. One mutex (g_lock) guards all
 * mutable runtime state: the allocation table, per-device live bytes and
 * bump pointers, VMM reservations and mappings, pools and host bytes. The
 * environment is parsed under pthread_once. The current device is a
 * thread-local int. Nothing here is async-signal-safe, like the real
 * runtime.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_api.h"
#include "hip_api_ext.h"

#define FAKE_MAX_DEV         64
#define FAKE_DEV_BASE        (1ull << 54)
#define FAKE_DEV_RANGE_SHIFT 43 /* 8 TiB of fake addresses per device */
#define FAKE_DEV_ALIGN       512u
#define FAKE_VA_BASE         (1ull << 55)
#define FAKE_VA_LIMIT        ((1ull << 55) + (1ull << 50))
#define FAKE_HANDLE_BASE     0x7e0000001000ull
#define FAKE_GRANULARITY     (2ull << 20)
#define FAKE_POOL_MAGIC      0x41D9001Du

/* ---- configuration ---------------------------------------------------- */

struct fake_dev {
	unsigned long long cap;  /* total bytes */
	unsigned long long used; /* bytes used by "other processes" */
	unsigned long long live; /* bytes this process holds (g_lock) */
	unsigned long long bump; /* next fake address (g_lock) */
	char name[64];
	hipUUID uuid;
};

struct ihipMemPoolHandle_t {
	unsigned magic;
	int ordinal;
	int is_default;
	int destroyed; /* pools are never freed: a stale handle stays readable
	                */
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_ndev = 1;
static int g_debug;
static unsigned long long g_host_cap;
static unsigned long long g_host_live; /* pinned + registered (g_lock) */
static struct fake_dev g_dev[FAKE_MAX_DEV];
static struct ihipMemPoolHandle_t g_default_pool[FAKE_MAX_DEV];
static _Thread_local int tls_dev; /* current device, default 0 */
static _Atomic unsigned long g_get_device_calls;

static void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbg(const char *fmt, ...)
{
	va_list ap;
	if (!g_debug)
		return;
	va_start(ap, fmt);
	fputs("fakehip: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Parses "80G", "512M", "1048576", "1.5G" (binary units). Returns 0 on
 * success. */
static int parse_size(const char *s, size_t len, unsigned long long *out)
{
	char buf[64];
	char *end;
	double v;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	if (end == buf || v < 0)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		v *= 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -1;
	*out = (unsigned long long)v;
	return 0;
}

/* Fills vals[0..n) from a comma list; the last value repeats. A malformed
 * entry keeps the default, as a driver ignores a bad tuning variable. */
static void parse_size_list(const char *env, unsigned long long dflt,
                            unsigned long long *vals, int n)
{
	const char *s = getenv(env);
	unsigned long long last = dflt;
	int i = 0;
	while (s && *s && i < n) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		unsigned long long v;
		if (parse_size(s, len, &v) == 0)
			last = v;
		vals[i++] = last;
		s = comma ? comma + 1 : NULL;
	}
	for (; i < n; i++)
		vals[i] = last;
}

static void parse_env(void)
{
	unsigned long long caps[FAKE_MAX_DEV], used[FAKE_MAX_DEV], host;
	const char *s = getenv("FAKEHIP_DEVICES");
	const char *prefix = getenv("FAKEHIP_NAME");
	g_debug = getenv("FAKEHIP_DEBUG") != NULL;
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		g_ndev = n < 0 ? 0 : n > FAKE_MAX_DEV ? FAKE_MAX_DEV : (int)n;
	}
	if (!prefix || !*prefix)
		prefix = "Fake AMD GPU";
	parse_size_list("FAKEHIP_MEM", 64ull << 30, caps, FAKE_MAX_DEV);
	parse_size_list("FAKEHIP_USED", 0, used, FAKE_MAX_DEV);
	parse_size_list("FAKEHIP_HOST_MEM", 16ull << 30, &host, 1);
	g_host_cap = host;
	for (int i = 0; i < FAKE_MAX_DEV; i++) {
		struct fake_dev *d = &g_dev[i];
		d->cap = caps[i];
		d->used = used[i] > caps[i] ? caps[i] : used[i];
		d->bump = FAKE_DEV_BASE +
		          ((unsigned long long)i << FAKE_DEV_RANGE_SHIFT);
		snprintf(d->name, sizeof(d->name), "%s %d", prefix, i);
		/* Not the fake CUDA driver's uuids: a mixed process has two
		 * sets of cards. */
		for (int b = 0; b < 16; b++)
			d->uuid.bytes[b] = (char)(0xa7 ^ (b * 31 + i * 97 + 3));
		g_default_pool[i] =
		        (struct ihipMemPoolHandle_t){FAKE_POOL_MAGIC, i, 1, 0};
	}
	dbg("%d devices, cap[0]=%llu used[0]=%llu host=%llu", g_ndev,
	    g_dev[0].cap, g_dev[0].used, g_host_cap);
}

/* Every entry point starts here: HIP initialises itself on first use. */
static hipError_t check_init(void)
{
	pthread_once(&g_once, parse_env);
	return g_ndev > 0 ? hipSuccess : hipErrorNoDevice;
}

static int valid_dev(int dev)
{
	return dev >= 0 && dev < g_ndev;
}

/* ---- the allocation table (g_lock) ------------------------------------ */

enum space {
	SP_DEV = 1,    /* device pointers: device, pitch, async, managed */
	SP_PINNED = 2, /* host pointers from hipHostMalloc/hipMallocHost */
	SP_REG = 3,    /* registered host ranges, keyed by start */
	SP_HANDLE = 4, /* VMM physical handles */
	SP_VA = 5,     /* VMM address reservations, keyed by base */
	SP_MAP = 6,    /* VMM mappings, keyed by mapped address */
};

enum kind { K_DEVICE, K_ASYNC, K_MANAGED, K_HOST, K_VMM, K_VA };

struct entry {
	struct entry *next;
	unsigned long long key;
	unsigned long long size;
	unsigned long long aux; /* SP_MAP: handle; SP_HANDLE: live maps */
	int space;
	int dev;
	int kind;
	int released; /* SP_HANDLE: hipMemRelease seen */
};

static struct entry **g_buckets;
static size_t g_nbuckets;
static size_t g_nentries;

static size_t bucket_of(int space, unsigned long long key, size_t n)
{
	unsigned long long h = (key ^ ((unsigned long long)space << 58)) *
	                       0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 20) & (n - 1);
}

static int table_grow(void)
{
	size_t n = g_nbuckets ? g_nbuckets * 2 : 4096;
	struct entry **b = calloc(n, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < g_nbuckets; i++) {
		struct entry *e = g_buckets[i], *next;
		for (; e; e = next) {
			size_t j = bucket_of(e->space, e->key, n);
			next = e->next;
			e->next = b[j];
			b[j] = e;
		}
	}
	free(g_buckets);
	g_buckets = b;
	g_nbuckets = n;
	return 0;
}

static struct entry *table_find(int space, unsigned long long key)
{
	if (!g_nbuckets)
		return NULL;
	for (struct entry *e = g_buckets[bucket_of(space, key, g_nbuckets)]; e;
	     e = e->next)
		if (e->space == space && e->key == key)
			return e;
	return NULL;
}

static struct entry *table_add(int space, unsigned long long key,
                               unsigned long long size, int dev, int kind)
{
	struct entry *e;
	size_t i;
	if (g_nentries >= g_nbuckets && table_grow())
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->size = size;
	e->space = space;
	e->dev = dev;
	e->kind = kind;
	i = bucket_of(space, key, g_nbuckets);
	e->next = g_buckets[i];
	g_buckets[i] = e;
	g_nentries++;
	return e;
}

static void table_del(struct entry *victim)
{
	struct entry **pp =
	        &g_buckets[bucket_of(victim->space, victim->key, g_nbuckets)];
	for (; *pp; pp = &(*pp)->next) {
		if (*pp == victim) {
			*pp = victim->next;
			free(victim);
			g_nentries--;
			return;
		}
	}
}

/* First entry of a space that match() accepts; a linear scan, used only
 * for VMM entries, which are few. */
static struct entry *
table_scan(int space, int (*match)(const struct entry *, void *), void *arg)
{
	for (size_t i = 0; i < g_nbuckets; i++)
		for (struct entry *e = g_buckets[i]; e; e = e->next)
			if (e->space == space && match(e, arg))
				return e;
	return NULL;
}

/* ---- device allocations ----------------------------------------------- */

static int fits(const struct fake_dev *d, unsigned long long bytes)
{
	return bytes <= d->cap && d->used + d->live <= d->cap - bytes;
}

/* Charges bytes on device ord and hands out a fresh fake address. A
 * zero-byte request succeeds with NULL and charges nothing. */
static hipError_t dev_alloc(void **ptr, unsigned long long bytes, int ord,
                            int kind, const char *api)
{
	struct fake_dev *d = &g_dev[ord];
	unsigned long long limit =
	        FAKE_DEV_BASE +
	        ((unsigned long long)(ord + 1) << FAKE_DEV_RANGE_SHIFT);
	unsigned long long step;
	hipError_t r = hipSuccess;
	if (!ptr)
		return hipErrorInvalidValue;
	*ptr = NULL;
	if (bytes == 0)
		return hipSuccess;
	step = (bytes + FAKE_DEV_ALIGN - 1) &
	       ~(unsigned long long)(FAKE_DEV_ALIGN - 1);
	pthread_mutex_lock(&g_lock);
	if (!fits(d, bytes) || step > limit - d->bump) {
		r = hipErrorOutOfMemory;
	} else if (!table_add(SP_DEV, d->bump, bytes, ord, kind)) {
		r = hipErrorOutOfMemory; /* the fake's own malloc failed */
	} else {
		*ptr = (void *)(uintptr_t)d->bump;
		d->bump += step;
		d->live += bytes;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("%s(%llu) dev %d -> %d %p", api, bytes, ord, (int)r, *ptr);
	return r;
}

hipError_t hipPointerGetAttribute(void *data, hipPointer_attribute attribute,
                                  hipDeviceptr_t ptr)
{
	hipError_t r = check_init();
	struct entry *e;
	if (r != hipSuccess)
		return r;
	if (!data || attribute != HIP_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		return hipErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_DEV, (uintptr_t)ptr);
	if (e)
		*(int *)data = e->dev;
	pthread_mutex_unlock(&g_lock);
	dbg("hipPointerGetAttribute(DEVICE_ORDINAL, %p) -> %d", ptr, e ? 0 : 1);
	return e ? hipSuccess : hipErrorInvalidValue;
}

static hipError_t dev_free(void *p, const char *api)
{
	hipError_t r = hipSuccess;
	struct entry *e;
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_DEV, (uintptr_t)p);
	if (!e) {
		r = hipErrorInvalidValue;
	} else {
		g_dev[e->dev].live -= e->size;
		table_del(e);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("%s(%p) -> %d", api, p, (int)r);
	return r;
}

hipError_t hipMalloc(void **ptr, size_t size)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	return dev_alloc(ptr, size, tls_dev, K_DEVICE, "hipMalloc");
}

hipError_t hipExtMallocWithFlags(void **ptr, size_t sizeBytes,
                                 unsigned int flags)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (flags > 3) /* default, fine-grained, signal, uncached */
		return hipErrorInvalidValue;
	return dev_alloc(ptr, sizeBytes, tls_dev, K_DEVICE,
	                 "hipExtMallocWithFlags");
}

hipError_t hipMallocPitch(void **ptr, size_t *pitch, size_t width,
                          size_t height)
{
	size_t p;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!ptr || !pitch || width == 0 || height == 0)
		return hipErrorInvalidValue;
	p = (width + 511) & ~(size_t)511;
	r = dev_alloc(ptr, (unsigned long long)p * height, tls_dev, K_DEVICE,
	              "hipMallocPitch");
	if (r == hipSuccess)
		*pitch = p;
	return r;
}

hipError_t hipFree(void *ptr)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!ptr)
		return hipSuccess; /* hipFree(NULL): nothing happens */
	return dev_free(ptr, "hipFree");
}

hipError_t hipMallocManaged(void **dev_ptr, size_t size, unsigned int flags)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (flags != FAKEHIP_MEM_ATTACH_GLOBAL &&
	    flags != FAKEHIP_MEM_ATTACH_HOST)
		return hipErrorInvalidValue;
	return dev_alloc(dev_ptr, size, tls_dev, K_MANAGED, "hipMallocManaged");
}

hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total)
{
	struct fake_dev *d;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!free_bytes || !total)
		return hipErrorInvalidValue;
	d = &g_dev[tls_dev];
	pthread_mutex_lock(&g_lock);
	*total = d->cap;
	*free_bytes =
	        d->used + d->live >= d->cap ? 0 : d->cap - d->used - d->live;
	pthread_mutex_unlock(&g_lock);
	return hipSuccess;
}

/* ---- stream-ordered allocations and pools ----------------------------- */

static int valid_stream(hipStream_t s)
{
	return s == NULL || s == FAKEHIP_STREAM_PER_THREAD;
}

hipError_t hipMallocAsync(void **dev_ptr, size_t size, hipStream_t stream)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!valid_stream(stream))
		return hipErrorInvalidHandle;
	return dev_alloc(dev_ptr, size, tls_dev, K_ASYNC, "hipMallocAsync");
}

hipError_t hipMallocFromPoolAsync(void **dev_ptr, size_t size,
                                  hipMemPool_t mem_pool, hipStream_t stream)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!valid_stream(stream))
		return hipErrorInvalidHandle;
	if (!mem_pool || mem_pool->magic != FAKE_POOL_MAGIC ||
	    mem_pool->destroyed)
		return hipErrorInvalidValue;
	return dev_alloc(dev_ptr, size, mem_pool->ordinal, K_ASYNC,
	                 "hipMallocFromPoolAsync");
}

hipError_t hipFreeAsync(void *dev_ptr, hipStream_t stream)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!valid_stream(stream))
		return hipErrorInvalidHandle;
	if (!dev_ptr)
		return hipSuccess;
	return dev_free(dev_ptr, "hipFreeAsync");
}

hipError_t hipDeviceGetDefaultMemPool(hipMemPool_t *mem_pool, int device)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!mem_pool)
		return hipErrorInvalidValue;
	if (!valid_dev(device))
		return hipErrorInvalidDevice;
	*mem_pool = &g_default_pool[device];
	return hipSuccess;
}

hipError_t hipMemPoolCreate(hipMemPool_t *mem_pool,
                            const hipMemPoolProps *pool_props)
{
	struct ihipMemPoolHandle_t *p;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!mem_pool || !pool_props ||
	    pool_props->allocType != hipMemAllocationTypePinned ||
	    pool_props->location.type != hipMemLocationTypeDevice)
		return hipErrorInvalidValue;
	if (!valid_dev(pool_props->location.id))
		return hipErrorInvalidDevice;
	p = calloc(1, sizeof(*p));
	if (!p)
		return hipErrorOutOfMemory;
	*p = (struct ihipMemPoolHandle_t){FAKE_POOL_MAGIC,
	                                  pool_props->location.id, 0, 0};
	*mem_pool = p;
	return hipSuccess;
}

hipError_t hipMemPoolDestroy(hipMemPool_t mem_pool)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!mem_pool || mem_pool->magic != FAKE_POOL_MAGIC ||
	    mem_pool->is_default || mem_pool->destroyed)
		return hipErrorInvalidValue;
	/* Kept allocated so a stale handle is detected, not dereferenced
	 * after free. */
	mem_pool->destroyed = 1;
	return hipSuccess;
}

hipError_t hipStreamSynchronize(hipStream_t stream)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	return valid_stream(stream) ? hipSuccess : hipErrorInvalidHandle;
}

hipError_t hipStreamSynchronize_spt(hipStream_t stream)
{
	return hipStreamSynchronize(stream);
}

hipError_t hipDeviceSynchronize(void)
{
	return check_init();
}

/* ---- virtual memory management ---------------------------------------- */

static unsigned long long g_va_bump = FAKE_VA_BASE;         /* g_lock */
static unsigned long long g_next_handle = FAKE_HANDLE_BASE; /* g_lock */

struct range {
	unsigned long long lo, hi;
};

static int va_covers(const struct entry *e, void *arg)
{
	const struct range *r = arg;
	return r->lo >= e->key && r->hi <= e->key + e->size;
}

static int map_overlaps(const struct entry *e, void *arg)
{
	const struct range *r = arg;
	return r->lo < e->key + e->size && e->key < r->hi;
}

hipError_t
hipMemGetAllocationGranularity(size_t *granularity,
                               const hipMemAllocationProp *prop,
                               hipMemAllocationGranularity_flags option)
{
	hipError_t r = check_init();
	(void)option;
	if (r != hipSuccess)
		return r;
	if (!granularity || !prop)
		return hipErrorInvalidValue;
	*granularity = FAKE_GRANULARITY;
	return hipSuccess;
}

hipError_t hipMemAddressReserve(void **ptr, size_t size, size_t alignment,
                                void *addr, unsigned long long flags)
{
	unsigned long long align, base;
	hipError_t r = check_init();
	(void)addr; /* only a hint; the fake never honours it */
	if (r != hipSuccess)
		return r;
	if (!ptr || size == 0 || size % FAKE_GRANULARITY || flags ||
	    (alignment & (alignment - 1)))
		return hipErrorInvalidValue;
	*ptr = NULL;
	align = alignment > FAKE_GRANULARITY ? alignment : FAKE_GRANULARITY;
	pthread_mutex_lock(&g_lock);
	base = (g_va_bump + align - 1) & ~(align - 1);
	if (base + size > FAKE_VA_LIMIT || base + size < base) {
		r = hipErrorOutOfMemory;
	} else if (!table_add(SP_VA, base, size, -1, K_VA)) {
		r = hipErrorOutOfMemory;
	} else {
		g_va_bump = base + size;
		*ptr = (void *)(uintptr_t)base;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemAddressReserve(%zu) -> %d %p", size, (int)r, *ptr);
	return r;
}

hipError_t hipMemAddressFree(void *devPtr, size_t size)
{
	struct entry *e;
	unsigned long long p = (uintptr_t)devPtr;
	struct range rg = {p, p + size};
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_VA, p);
	if (!e || e->size != size || table_scan(SP_MAP, map_overlaps, &rg))
		r = hipErrorInvalidValue;
	else
		table_del(e);
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemAddressFree(%p, %zu) -> %d", devPtr, size, (int)r);
	return r;
}

hipError_t hipMemCreate(hipMemGenericAllocationHandle_t *handle, size_t size,
                        const hipMemAllocationProp *prop,
                        unsigned long long flags)
{
	struct fake_dev *d;
	int ord;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!handle || !prop || flags || size == 0 || size % FAKE_GRANULARITY ||
	    prop->type != hipMemAllocationTypePinned ||
	    prop->location.type != hipMemLocationTypeDevice)
		return hipErrorInvalidValue;
	ord = prop->location.id;
	if (!valid_dev(ord))
		return hipErrorInvalidDevice;
	d = &g_dev[ord];
	*handle = NULL;
	pthread_mutex_lock(&g_lock);
	if (!fits(d, size)) {
		r = hipErrorOutOfMemory;
	} else if (!table_add(SP_HANDLE, g_next_handle, size, ord, K_VMM)) {
		r = hipErrorOutOfMemory;
	} else {
		*handle = (hipMemGenericAllocationHandle_t)(uintptr_t)
		        g_next_handle;
		g_next_handle += 0x40;
		d->live += size;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemCreate(%zu, dev %d) -> %d %p", size, ord, (int)r,
	    (void *)*handle);
	return r;
}

/* Returns the physical bytes of a handle once released and unmapped. */
static void handle_maybe_drop(struct entry *h)
{
	if (h->released && h->aux == 0) {
		g_dev[h->dev].live -= h->size;
		table_del(h);
	}
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle)
{
	struct entry *h;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	pthread_mutex_lock(&g_lock);
	h = table_find(SP_HANDLE, (uintptr_t)handle);
	if (!h || h->released) {
		r = hipErrorInvalidValue;
	} else {
		h->released = 1;
		handle_maybe_drop(h);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemRelease(%p) -> %d", (void *)handle, (int)r);
	return r;
}

hipError_t hipMemMap(void *ptr, size_t size, size_t offset,
                     hipMemGenericAllocationHandle_t handle,
                     unsigned long long flags)
{
	struct entry *h, *m;
	unsigned long long p = (uintptr_t)ptr;
	struct range rg = {p, p + size};
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (size == 0 || flags || p % FAKE_GRANULARITY ||
	    size % FAKE_GRANULARITY || offset % FAKE_GRANULARITY)
		return hipErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	h = table_find(SP_HANDLE, (uintptr_t)handle);
	if (!h || h->released || offset > h->size || size > h->size - offset ||
	    !table_scan(SP_VA, va_covers, &rg) ||
	    table_scan(SP_MAP, map_overlaps, &rg)) {
		r = hipErrorInvalidValue;
	} else if (!(m = table_add(SP_MAP, p, size, h->dev, K_VMM))) {
		r = hipErrorOutOfMemory;
	} else {
		m->aux = (uintptr_t)handle;
		h->aux++;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemMap(%p, %zu, handle %p) -> %d", ptr, size, (void *)handle,
	    (int)r);
	return r;
}

/* Unmaps every mapping inside [ptr, ptr+size); a range that cuts a mapping
 * or covers none is an error, and then nothing is unmapped. */
hipError_t hipMemUnmap(void *ptr, size_t size)
{
	unsigned long long p = (uintptr_t)ptr;
	struct range rg = {p, p + size};
	struct entry *m;
	unsigned long long covered = 0;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (size == 0)
		return hipErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < g_nbuckets; i++)
		for (m = g_buckets[i]; m; m = m->next)
			if (m->space == SP_MAP && map_overlaps(m, &rg)) {
				if (m->key < rg.lo || m->key + m->size > rg.hi)
					r = hipErrorInvalidValue;
				covered++;
			}
	if (covered == 0)
		r = hipErrorInvalidValue;
	while (r == hipSuccess && (m = table_scan(SP_MAP, map_overlaps, &rg))) {
		struct entry *h = table_find(SP_HANDLE, m->aux);
		table_del(m);
		if (h) {
			h->aux--;
			handle_maybe_drop(h);
		}
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipMemUnmap(%p, %zu) -> %d", ptr, size, (int)r);
	return r;
}

hipError_t hipMemSetAccess(void *ptr, size_t size, const hipMemAccessDesc *desc,
                           size_t count)
{
	hipError_t r = check_init();
	(void)ptr;
	(void)size;
	if (r != hipSuccess)
		return r;
	return desc && count ? hipSuccess : hipErrorInvalidValue;
}

/* ---- host memory ------------------------------------------------------ */

static int host_fits(unsigned long long bytes)
{
	return bytes <= g_host_cap && g_host_live <= g_host_cap - bytes;
}

static hipError_t host_alloc(void **ptr, size_t size, const char *api)
{
	void *p = NULL;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!ptr)
		return hipErrorInvalidValue;
	*ptr = NULL;
	if (size == 0)
		return hipSuccess;
	pthread_mutex_lock(&g_lock);
	if (!host_fits(size) || !(p = malloc(size))) {
		r = hipErrorOutOfMemory;
	} else if (!table_add(SP_PINNED, (uintptr_t)p, size, -1, K_HOST)) {
		free(p);
		p = NULL;
		r = hipErrorOutOfMemory;
	} else {
		g_host_live += size;
		*ptr = p;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("%s(%zu) -> %d %p", api, size, (int)r, p);
	return r;
}

hipError_t hipHostMalloc(void **ptr, size_t size, unsigned int flags)
{
	if (flags & ~0xffu)
		return hipErrorInvalidValue;
	return host_alloc(ptr, size, "hipHostMalloc");
}

hipError_t hipMallocHost(void **ptr, size_t size)
{
	return host_alloc(ptr, size, "hipMallocHost");
}

static hipError_t host_free(void *p, const char *api)
{
	struct entry *e;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!p)
		return hipSuccess; /* like free(NULL) */
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_PINNED, (uintptr_t)p);
	if (!e) {
		r = hipErrorInvalidValue;
	} else {
		g_host_live -= e->size;
		table_del(e);
		free(p);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("%s(%p) -> %d", api, p, (int)r);
	return r;
}

hipError_t hipHostFree(void *ptr)
{
	return host_free(ptr, "hipHostFree");
}

hipError_t hipFreeHost(void *ptr)
{
	return host_free(ptr, "hipFreeHost");
}

hipError_t hipHostRegister(void *hostPtr, size_t sizeBytes, unsigned int flags)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!hostPtr || sizeBytes == 0 || (flags & ~0xfu))
		return hipErrorInvalidValue;
	pthread_mutex_lock(&g_lock);
	if (table_find(SP_REG, (uintptr_t)hostPtr) ||
	    table_find(SP_PINNED, (uintptr_t)hostPtr))
		r = hipErrorHostMemoryAlreadyRegistered;
	else if (!host_fits(sizeBytes) ||
	         !table_add(SP_REG, (uintptr_t)hostPtr, sizeBytes, -1, K_HOST))
		r = hipErrorOutOfMemory;
	else
		g_host_live += sizeBytes;
	pthread_mutex_unlock(&g_lock);
	dbg("hipHostRegister(%p, %zu) -> %d", hostPtr, sizeBytes, (int)r);
	return r;
}

hipError_t hipHostUnregister(void *hostPtr)
{
	struct entry *e;
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	pthread_mutex_lock(&g_lock);
	e = hostPtr ? table_find(SP_REG, (uintptr_t)hostPtr) : NULL;
	if (!e) {
		r = hipErrorHostMemoryNotRegistered;
	} else {
		g_host_live -= e->size;
		table_del(e);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("hipHostUnregister(%p) -> %d", hostPtr, (int)r);
	return r;
}

/* ---- init, versions, devices ------------------------------------------ */

hipError_t hipInit(unsigned int flags)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	return flags ? hipErrorInvalidValue : hipSuccess;
}

hipError_t hipDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return hipErrorInvalidValue;
	*driverVersion = FAKEHIP_VERSION;
	return hipSuccess;
}

hipError_t hipRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return hipErrorInvalidValue;
	*runtimeVersion = FAKEHIP_VERSION;
	return hipSuccess;
}

hipError_t hipGetDeviceCount(int *count)
{
	hipError_t r = check_init();
	if (!count)
		return hipErrorInvalidValue;
	*count = r == hipSuccess ? g_ndev : 0;
	return r;
}

hipError_t hipDeviceGet(hipDevice_t *device, int ordinal)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!device)
		return hipErrorInvalidValue;
	if (!valid_dev(ordinal))
		return hipErrorInvalidDevice;
	*device = ordinal;
	return hipSuccess;
}

hipError_t hipSetDevice(int deviceId)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!valid_dev(deviceId))
		return hipErrorInvalidDevice;
	tls_dev = deviceId;
	return hipSuccess;
}

hipError_t hipGetDevice(int *deviceId)
{
	atomic_fetch_add(&g_get_device_calls, 1);
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!deviceId)
		return hipErrorInvalidValue;
	*deviceId = tls_dev;
	return hipSuccess;
}

unsigned long fakehip_get_device_calls(void)
{
	return atomic_load(&g_get_device_calls);
}

hipError_t hipDeviceGetName(char *name, int len, hipDevice_t device)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!name || len <= 0)
		return hipErrorInvalidValue;
	if (!valid_dev(device))
		return hipErrorInvalidDevice;
	snprintf(name, (size_t)len, "%s", g_dev[device].name);
	return hipSuccess;
}

hipError_t hipDeviceTotalMem(size_t *bytes, hipDevice_t device)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!bytes)
		return hipErrorInvalidValue;
	if (!valid_dev(device))
		return hipErrorInvalidDevice;
	*bytes = g_dev[device].cap;
	return hipSuccess;
}

hipError_t hipDeviceGetUuid(hipUUID *uuid, hipDevice_t device)
{
	hipError_t r = check_init();
	if (r != hipSuccess)
		return r;
	if (!uuid)
		return hipErrorInvalidValue;
	if (!valid_dev(device))
		return hipErrorInvalidDevice;
	*uuid = g_dev[device].uuid;
	return hipSuccess;
}

/* ---- errors ----------------------------------------------------------- */

static const struct {
	hipError_t code;
	const char *name;
	const char *text;
} g_errors[] = {
        {hipSuccess, "hipSuccess", "no error"},
        {hipErrorInvalidValue, "hipErrorInvalidValue", "invalid argument"},
        {hipErrorOutOfMemory, "hipErrorOutOfMemory", "out of memory"},
        {hipErrorNotInitialized, "hipErrorNotInitialized",
         "initialization error"},
        {hipErrorNoDevice, "hipErrorNoDevice",
         "no ROCm-capable device is detected"},
        {hipErrorInvalidDevice, "hipErrorInvalidDevice",
         "invalid device ordinal"},
        {hipErrorInvalidHandle, "hipErrorInvalidHandle",
         "invalid resource handle"},
        {hipErrorNotFound, "hipErrorNotFound", "named symbol not found"},
        {hipErrorHostMemoryAlreadyRegistered,
         "hipErrorHostMemoryAlreadyRegistered",
         "part or all of the requested memory range is already mapped"},
        {hipErrorHostMemoryNotRegistered, "hipErrorHostMemoryNotRegistered",
         "pointer does not correspond to a registered memory region"},
        {hipErrorNotSupported, "hipErrorNotSupported",
         "operation not supported"},
        {hipErrorUnknown, "hipErrorUnknown", "unknown error"},
};

static const char *error_lookup(hipError_t error, int text)
{
	for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++)
		if (g_errors[i].code == error)
			return text ? g_errors[i].text : g_errors[i].name;
	return text ? "unknown error" : "hipErrorUnknown";
}

const char *hipGetErrorName(hipError_t hip_error)
{
	return error_lookup(hip_error, 0);
}

const char *hipGetErrorString(hipError_t hip_error)
{
	return error_lookup(hip_error, 1);
}

/* ---- the resolver ----------------------------------------------------- */

/*
 * HIP's resolver maps a name to the export of that name; with flags 2
 * (per-thread default stream) to the name's "_spt" export where one
 * exists. Other flags are invalid; an unknown name is hipErrorInvalidValue
 * with status SYMBOL_NOT_FOUND, as in the real runtime.
 */
#define FN(f) ((void *)(uintptr_t) & (f))
static const struct proc {
	const char *name;
	void *fn;
	void *spt;
} g_procs[] = {
        {"hipGetProcAddress", FN(hipGetProcAddress), NULL},
        {"hipInit", FN(hipInit), NULL},
        {"hipDriverGetVersion", FN(hipDriverGetVersion), NULL},
        {"hipRuntimeGetVersion", FN(hipRuntimeGetVersion), NULL},
        {"hipGetDeviceCount", FN(hipGetDeviceCount), NULL},
        {"hipDeviceGet", FN(hipDeviceGet), NULL},
        {"hipSetDevice", FN(hipSetDevice), NULL},
        {"hipGetDevice", FN(hipGetDevice), NULL},
        {"hipDeviceGetName", FN(hipDeviceGetName), NULL},
        {"hipDeviceTotalMem", FN(hipDeviceTotalMem), NULL},
        {"hipDeviceGetUuid", FN(hipDeviceGetUuid), NULL},
        {"hipPointerGetAttribute", FN(hipPointerGetAttribute), NULL},
        {"hipDeviceSynchronize", FN(hipDeviceSynchronize), NULL},
        {"hipStreamSynchronize", FN(hipStreamSynchronize),
         FN(hipStreamSynchronize_spt)},
        {"hipGetErrorName", FN(hipGetErrorName), NULL},
        {"hipGetErrorString", FN(hipGetErrorString), NULL},
        {"hipMemGetInfo", FN(hipMemGetInfo), NULL},
        {"hipMalloc", FN(hipMalloc), NULL},
        {"hipExtMallocWithFlags", FN(hipExtMallocWithFlags), NULL},
        {"hipMallocPitch", FN(hipMallocPitch), NULL},
        {"hipFree", FN(hipFree), NULL},
        {"hipMallocManaged", FN(hipMallocManaged), NULL},
        {"hipMallocAsync", FN(hipMallocAsync), NULL},
        {"hipMallocFromPoolAsync", FN(hipMallocFromPoolAsync), NULL},
        {"hipFreeAsync", FN(hipFreeAsync), NULL},
        {"hipDeviceGetDefaultMemPool", FN(hipDeviceGetDefaultMemPool), NULL},
        {"hipMemPoolCreate", FN(hipMemPoolCreate), NULL},
        {"hipMemPoolDestroy", FN(hipMemPoolDestroy), NULL},
        {"hipMemGetAllocationGranularity", FN(hipMemGetAllocationGranularity),
         NULL},
        {"hipMemAddressReserve", FN(hipMemAddressReserve), NULL},
        {"hipMemAddressFree", FN(hipMemAddressFree), NULL},
        {"hipMemCreate", FN(hipMemCreate), NULL},
        {"hipMemRelease", FN(hipMemRelease), NULL},
        {"hipMemMap", FN(hipMemMap), NULL},
        {"hipMemUnmap", FN(hipMemUnmap), NULL},
        {"hipMemSetAccess", FN(hipMemSetAccess), NULL},
        {"hipHostMalloc", FN(hipHostMalloc), NULL},
        {"hipMallocHost", FN(hipMallocHost), NULL},
        {"hipHostFree", FN(hipHostFree), NULL},
        {"hipFreeHost", FN(hipFreeHost), NULL},
        {"hipHostRegister", FN(hipHostRegister), NULL},
        {"hipHostUnregister", FN(hipHostUnregister), NULL},
};
#undef FN

hipError_t hipGetProcAddress(const char *symbol, void **pfn, int hipVersion,
                             uint64_t flags,
                             hipDriverProcAddressQueryResult *symbolStatus)
{
	hipError_t r = hipErrorInvalidValue;
	(void)hipVersion; /* every export of the fake exists since 6.0 */
	pthread_once(&g_once, parse_env);
	if (!symbol || !*symbol || !pfn || flags > 2)
		goto out;
	*pfn = NULL;
	for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
		if (strcmp(g_procs[i].name, symbol))
			continue;
		*pfn = flags == VRT_HIP_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM &&
		                       g_procs[i].spt
		               ? g_procs[i].spt
		               : g_procs[i].fn;
		r = hipSuccess;
		break;
	}
	if (symbolStatus)
		*symbolStatus = r == hipSuccess
		                        ? HIP_GET_PROC_ADDRESS_SUCCESS
		                        : HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
out:
	dbg("hipGetProcAddress(%s, %d, %llu) -> %d %p",
	    symbol ? symbol : "(null)", hipVersion, (unsigned long long)flags,
	    (int)r, pfn ? *pfn : NULL);
	return r;
}

hipError_t hipGetProcAddress_spt(const char *symbol, void **pfn, int hipVersion,
                                 uint64_t flags,
                                 hipDriverProcAddressQueryResult *symbolStatus)
{
	if (flags == VRT_HIP_GET_PROC_ADDRESS_DEFAULT)
		flags = VRT_HIP_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	return hipGetProcAddress(symbol, pfn, hipVersion, flags, symbolStatus);
}
