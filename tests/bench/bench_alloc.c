/*
 * bench_alloc — alloc+free pairs through the CUDA driver, for measuring
 * what the preload adds. Reaches the driver the way libcudart does
 * (dlopen + cuGetProcAddress), calls from a given stack depth, on one or
 * more threads, and prints one line: "<threads> <depth> <pairs> <ns/pair>".
 * Run it with and without the preload and compare (run_bench.py does).
 *
 *   bench_alloc [--threads N] [--pairs N] [--depth N]
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static __attribute__((noinline)) void loop(void)
{
	for (long i = 0; i < pairs; i++) {
		CUdeviceptr p;
		if (cu_alloc(&p, 4096 + (size_t)(i & 7) * 512) || cu_free(p)) {
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

static void *worker(void *arg)
{
	(void)arg;
	volatile int guard = 0;
	cu_set(ctx);
	nest(depth, &guard);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pairs"))
			pairs = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--depth"))
			depth = atoi(argv[i + 1]);
	}
	if (threads < 1 || threads > 256 || pairs < 1 || depth < 1) {
		fprintf(stderr, "usage: bench_alloc [--threads N] [--pairs N] "
		                "[--depth N]\n");
		return 2;
	}
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL) ||
	    get("cuInit", (void **)&cu_init, 12000, 0, NULL) ||
	    get("cuDevicePrimaryCtxRetain", (void **)&cu_retain, 12000, 0,
	        NULL) ||
	    get("cuCtxSetCurrent", (void **)&cu_set, 12000, 0, NULL) ||
	    get("cuMemAlloc", (void **)&cu_alloc, 12000, 0, NULL) ||
	    get("cuMemFree", (void **)&cu_free, 12000, 0, NULL) || cu_init(0) ||
	    cu_retain(&ctx, 0)) {
		fprintf(stderr, "bench_alloc: no CUDA driver\n");
		return 1;
	}
	pthread_t t[256];
	double t0 = now();
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	double ns = now() - t0;
	/* Wall time per pair per thread: what one thread's call costs. */
	printf("%d %d %ld %.1f\n", threads, depth, pairs, ns / (double)pairs);
	return 0;
}
