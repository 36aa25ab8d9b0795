/*
 * bench_attach — what `vramtrace attach` costs, measured and printed (never
 * a timed test):
 *
 *   1. attach and detach, p50 and max over --cycles cycles, each with the
 *      time every thread of the target was stopped, while --threads
 *      threads of the target allocate and free in a tight loop (the
 *      library calls of cmd_attach.c: preflight, attach, detach; the
 *      command's own start-up and polling left out);
 *   2. the CPU added per cuMemAlloc_v2 + cuMemFree_v2 pair by the agent's
 *      inline hooks, against the preload's on the same program and
 *      pairs, both recording with VRAMTRACE_STACKS=native (the fake
 *      driver in its benchmark mode: no lock, no table).
 *
 * The target is this program run with --target: it reaches the driver as
 * libcudart does (pointers from cuGetProcAddress, kept), runs its load
 * threads, and on "pairs N" (stdin) makes N pairs on one thread and
 * prints the CPU ns per pair (CLOCK_THREAD_CPUTIME_ID).
 *
 *   bench_attach --agent LIB --preload LIB [--cycles N] [--threads N]
 *                [--pairs N] [--out DIR]
 *
 * Prints "figure | value" rows; exit 0, 1 on a failure, 77 where ptrace is
 * not permitted. The fake driver must be on the library path.
 */
#include "record/attach.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);

static CUresult (*cu_alloc)(CUdeviceptr *, size_t);
static CUresult (*cu_free)(CUdeviceptr);
static void *cu_ctx;
static CUresult (*cu_set)(void *);
static _Atomic int stopping;

/* ---- the target ------------------------------------------------------------ */

static int resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	CUresult (*init)(unsigned), (*dget)(int *, int),
	        (*retain)(void **, int);
	int st, dev;
#define R(v, n) (get(n, (void **)&v, 12000, 0, &st) || !v)
	if (!get || R(init, "cuInit") || R(dget, "cuDeviceGet") ||
	    R(retain, "cuDevicePrimaryCtxRetain") ||
	    R(cu_set, "cuCtxSetCurrent") || R(cu_alloc, "cuMemAlloc") ||
	    R(cu_free, "cuMemFree"))
		return -1;
#undef R
	return init(0) || dget(&dev, 0) || retain(&cu_ctx, dev) ||
	       cu_set(cu_ctx);
}

static void *load(void *arg)
{
	(void)arg;
	cu_set(cu_ctx);
	for (uint64_t k = 0; !atomic_load_explicit(&stopping,
	                                           memory_order_relaxed);
	     k++) {
		CUdeviceptr p;
		if (cu_alloc(&p, 4096 + (k % 8) * 512) || cu_free(p))
			abort();
	}
	return NULL;
}

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int target(int threads)
{
	pthread_t th[64];
	char line[64];
	if (resolve())
		return 1;
	for (int t = 0; t < threads && t < 64; t++)
		pthread_create(&th[t], NULL, load, NULL);
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		long n = 0;
		if (sscanf(line, "pairs %ld", &n) != 1 || n <= 0)
			break;
		double c0 = thread_cpu_ns();
		for (long k = 0; k < n; k++) {
			CUdeviceptr p;
			if (cu_alloc(&p, 4096 + (size_t)(k % 8) * 512) ||
			    cu_free(p))
				abort();
		}
		printf("%.1f\n", (thread_cpu_ns() - c0) / (double)n);
		fflush(stdout);
	}
	atomic_store(&stopping, 1);
	for (int t = 0; t < threads && t < 64; t++)
		pthread_join(th[t], NULL);
	return 0;
}

/* ---- the driver ------------------------------------------------------------- */

struct child {
	pid_t pid;
	FILE *in, *out;
};

static int start(struct child *c, const char *self, int threads,
                 const char *preload, const char *out)
{
	int to[2], from[2];
	char n[16];
	if (pipe(to) || pipe(from))
		return -1;
	snprintf(n, sizeof(n), "%d", threads);
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(to[0], 0);
		dup2(from[1], 1);
		close(to[1]);
		close(from[0]);
		if (preload) {
			setenv("LD_PRELOAD", preload, 1);
			setenv("VRAMTRACE_OUT", out, 1);
		}
		/* The target goes when this program does. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(self, self, "--target", n, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = fdopen(to[1], "w");
	c->out = fdopen(from[0], "r");
	char line[64];
	return c->in && c->out && fgets(line, sizeof(line), c->out) &&
	                       !strncmp(line, "ready", 5)
	               ? 0
	               : -1;
}

static double pairs(struct child *c, long n)
{
	char line[64];
	fprintf(c->in, "pairs %ld\n", n);
	fflush(c->in);
	return fgets(line, sizeof(line), c->out) ? atof(line) : -1;
}

static void stop(struct child *c)
{
	fclose(c->in);
	int st;
	waitpid(c->pid, &st, 0);
	fclose(c->out);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void p50_max(double *v, int n, double *p50, double *max)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	*p50 = n ? v[n / 2] : 0;
	*max = n ? v[n - 1] : 0;
}

static int attach_one(struct vrt_attach *a, struct child *c,
                      const struct vrt_attach_opts *o)
{
	memset(a, 0, sizeof(*a));
	if (vrt_attach_preflight(a, c->pid, o) || vrt_attach_start(a, o)) {
		fprintf(stderr, "bench_attach: %s\n", a->why);
		vrt_attach_free(a);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *agent = NULL, *preload = NULL, *out = "/tmp";
	int cycles = 200, threads = 8;
	long npairs = 200000;
	char self[4096];
	if (argc == 3 && !strcmp(argv[1], "--target"))
		return target(atoi(argv[2]));
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--agent"))
			agent = argv[i + 1];
		else if (!strcmp(argv[i], "--preload"))
			preload = argv[i + 1];
		else if (!strcmp(argv[i], "--cycles"))
			cycles = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pairs"))
			npairs = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
	}
	ssize_t l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (!agent || !preload || l <= 0 || cycles < 1) {
		fprintf(stderr, "usage: bench_attach --agent LIB --preload LIB "
		                "[--cycles N] [--threads N] [--pairs N] "
		                "[--out DIR]\n");
		return 2;
	}
	self[l] = 0;
	setenv("FAKECUDA_BENCH", "1", 1);
	setenv("VRAMTRACE_STACKS", "native", 1);
	struct vrt_attach_opts o;
	memset(&o, 0, sizeof(o));
	o.python = 0;
	if (!realpath(agent, o.agent))
		return 1;
	struct child c;
	if (start(&c, self, threads, NULL, NULL))
		return 1;
	double *at = calloc((size_t)cycles, sizeof(double));
	double *as = calloc((size_t)cycles, sizeof(double));
	double *dt = calloc((size_t)cycles, sizeof(double));
	double *ds = calloc((size_t)cycles, sizeof(double));
	struct vrt_attach a;
	for (int i = 0; i < cycles; i++) {
		snprintf(o.out_dir, sizeof(o.out_dir), "%s/attach-bench-%d",
		         out, i);
		mkdir(o.out_dir, 0700);
		if (attach_one(&a, &c, &o)) {
			int denied = strstr(a.why, "not permitted") != NULL;
			stop(&c);
			return denied ? 77 : 1;
		}
		at[i] = (double)a.attach_cost.total_ns / 1e6;
		as[i] = (double)a.attach_cost.stopped_ns / 1e6;
		if (vrt_attach_detach(&a) < 0) {
			fprintf(stderr, "bench_attach: %s\n", a.why);
			return 1;
		}
		dt[i] = (double)a.detach_cost.total_ns / 1e6;
		ds[i] = (double)a.detach_cost.stopped_ns / 1e6;
		vrt_attach_free(&a);
	}
	double p, m;
	printf("attach/detach, %d cycles, target with %d threads in a tight "
	       "alloc/free loop\n",
	       cycles, threads);
	p50_max(at, cycles, &p, &m);
	printf("attach, ms (p50 | max) | %.2f | %.2f\n", p, m);
	p50_max(as, cycles, &p, &m);
	printf("attach, every thread stopped, ms (p50 | max) | %.2f | %.2f\n",
	       p, m);
	p50_max(dt, cycles, &p, &m);
	printf("detach, ms (p50 | max) | %.2f | %.2f\n", p, m);
	p50_max(ds, cycles, &p, &m);
	printf("detach, every thread stopped, ms (p50 | max) | %.2f | %.2f\n",
	       p, m);
	/* The cost per call: bare, attached, preloaded; the load stopped. */
	stop(&c);
	if (start(&c, self, 0, NULL, NULL))
		return 1;
	double bare = pairs(&c, npairs);
	snprintf(o.out_dir, sizeof(o.out_dir), "%s/attach-bench-cost", out);
	mkdir(o.out_dir, 0700);
	if (attach_one(&a, &c, &o))
		return 1;
	pairs(&c, npairs / 10); /* warm the stack cache */
	double hooked = pairs(&c, npairs);
	vrt_attach_detach(&a);
	vrt_attach_free(&a);
	stop(&c);
	char pre_out[4096];
	snprintf(pre_out, sizeof(pre_out), "%s/attach-bench-preload", out);
	if (start(&c, self, 0, preload, pre_out))
		return 1;
	pairs(&c, npairs / 10);
	double pre = pairs(&c, npairs);
	stop(&c);
	printf("CPU ns per cuMemAlloc_v2+cuMemFree_v2 pair, recording with "
	       "native stacks, %ld pairs\n",
	       npairs);
	printf("bare | %.1f\n", bare);
	printf("added by attach's inline hooks | %.1f\n", hooked - bare);
	printf("added by the preload | %.1f\n", pre - bare);
	printf("inline hooks / preload | %.2f\n",
	       pre > bare ? (hooked - bare) / (pre - bare) : 0);
	return 0;
}
