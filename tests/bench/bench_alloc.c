/*
 * bench_alloc — alloc+free pairs, for measuring what a profiler adds per
 * pair. With --api cuda (the default) the pairs are cuMemAlloc_v2 +
 * cuMemFree_v2, reaching the driver the way libcudart does (dlopen +
 * cuGetProcAddress); with --api malloc they are malloc + free (what
 * heaptrack hooks), called the same way from the same place. Either way
 * every thread makes --pairs pairs from one call site, --depth frames
 * below its start, with sizes cycling through --sizes values (--base +
 * k * 512, k < sizes; base 4096 and 8 sizes by default, so no pair
 * repeats the one before it; 1 makes every pair identical; --base 2097152
 * makes them large, as allocator segments are).
 *
 * Prints one line:
 *   "<threads> <depth> <pairs per thread> <wall ns/pair> <cpu ns/pair>"
 * wall ns/pair: wall time of the whole run divided by the pairs of one
 *   thread (what one thread's pair takes while all threads run);
 * cpu ns/pair: CPU time the calling threads spent (CLOCK_THREAD_CPUTIME_ID
 *   of each worker around its loop, summed) divided by all pairs. With
 *   more threads than cores the wall figure measures the scheduler; the
 *   CPU figure stays what one pair costs, so it is the one to compare.
 * Run it bare and under a profiler and subtract (run_all.py does).
 *
 *   bench_alloc [--api cuda|malloc] [--threads N] [--pairs N] [--depth N]
 *               [--sizes N] [--base BYTES]
 *
 * Exit 0; 1 when the driver is missing or a call fails; 2 usage.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum api { API_CUDA, API_MALLOC };

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);

static CUresult (*cu_init)(unsigned);
static CUresult (*cu_retain)(CUcontext *, int);
static CUresult (*cu_set)(CUcontext);
static CUresult (*cu_alloc)(CUdeviceptr *, size_t);
static CUresult (*cu_free)(CUdeviceptr);
static CUcontext ctx;
static long pairs = 200000;
static int depth = 40;
static long nsizes = 8;
static size_t base = 4096; /* --base: the first size */
static enum api api = API_CUDA;
/* Volatile, so the compiler cannot see (and drop) a malloc+free pair. */
static void *(*volatile c_malloc)(size_t) = malloc;
static void (*volatile c_free)(void *) = free;

static double now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static __attribute__((noinline)) void loop(void)
{
	if (api == API_MALLOC) {
		for (long i = 0; i < pairs; i++) {
			void *p = c_malloc(base + (size_t)(i % nsizes) * 512);
			if (!p) {
				fprintf(stderr, "bench_alloc: malloc failed\n");
				exit(1);
			}
			c_free(p);
		}
		return;
	}
	for (long i = 0; i < pairs; i++) {
		CUdeviceptr p;
		if (cu_alloc(&p, base + (size_t)(i % nsizes) * 512) ||
		    cu_free(p)) {
			fprintf(stderr, "bench_alloc: driver call failed\n");
			exit(1);
		}
	}
}

/* Calls loop() from depth nested frames, so stacks are ~depth deep. */
static __attribute__((noinline)) void nest(int d, volatile int *guard)
{
	if (d <= 1)
		loop();
	else
		nest(d - 1, guard);
	(*guard)++; /* not a tail call */
}

/* arg: where this thread stores the CPU ns its loop took. */
static void *worker(void *arg)
{
	volatile int guard = 0;
	double t0;
	if (api == API_CUDA)
		cu_set(ctx);
	t0 = now(CLOCK_THREAD_CPUTIME_ID);
	nest(depth, &guard);
	*(double *)arg = now(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_alloc [--api cuda|malloc] [--threads N] "
	                "[--pairs N] [--depth N] [--sizes N] [--base BYTES]\n");
	return 2;
}

/* Resolves the driver entry points the loop uses; 0 on success. */
static int open_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL) ||
	    get("cuInit", (void **)&cu_init, 12000, 0, NULL) ||
	    get("cuDevicePrimaryCtxRetain", (void **)&cu_retain, 12000, 0,
	        NULL) ||
	    get("cuCtxSetCurrent", (void **)&cu_set, 12000, 0, NULL) ||
	    get("cuMemAlloc", (void **)&cu_alloc, 12000, 0, NULL) ||
	    get("cuMemFree", (void **)&cu_free, 12000, 0, NULL) || cu_init(0) ||
	    cu_retain(&ctx, 0))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int threads = 1;
	pthread_t t[256];
	double cpu[256], wall, cpu_sum = 0;
	for (int i = 1; i < argc; i += 2) {
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pairs"))
			pairs = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--depth"))
			depth = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--sizes"))
			nsizes = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--base"))
			base = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--api") &&
		         !strcmp(argv[i + 1], "cuda"))
			api = API_CUDA;
		else if (!strcmp(argv[i], "--api") &&
		         !strcmp(argv[i + 1], "malloc"))
			api = API_MALLOC;
		else
			return usage();
	}
	if (threads < 1 || threads > 256 || pairs < 1 || depth < 1 ||
	    nsizes < 1 || nsizes > 1024 || base < 1)
		return usage();
	if (api == API_CUDA && open_driver()) {
		fprintf(stderr, "bench_alloc: no CUDA driver\n");
		return 1;
	}
	wall = now(CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, &cpu[i])) {
			fprintf(stderr, "bench_alloc: cannot start a thread\n");
			return 1;
		}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		cpu_sum += cpu[i];
	}
	wall = now(CLOCK_MONOTONIC) - wall;
	printf("%d %d %ld %.1f %.1f\n", threads, depth, pairs,
	       wall / (double)pairs, cpu_sum / ((double)pairs * threads));
	return 0;
}
