/*
 * attach_target.c — a process started without the preload, for the attach
 * tests: it reaches the driver as libcudart does (dlopen, one dlsym of
 * cuGetProcAddress_v2, every other entry through the resolver, the
 * pointers cached at start-up), calls one entry through the PLT (linked
 * with the driver: cuMemAllocHost_v2 and cuMemFreeHost, thread 0), holds
 * --hold-mib MiB allocated before anything can attach, and runs --threads
 * threads in a tight allocate/free loop, each with its own counter.
 *
 * Thread t's k-th allocation (k from 0) asks for size(t, k) = ((k % 1024)
 * << 3 | t) + 1 bytes, so a reader of the trace can tell, per thread and
 * in order, that no call between its first and last recorded one is
 * missing; its pinned allocations (thread 0, one in every 16 iterations)
 * are numbered the same way by their own counter.
 *
 * stdin, one command per line: "counts" prints "counts A0 A1 ... P" (each
 * thread's allocations so far, then the pinned ones); "release" frees one
 * of the 256 MiB blocks held since the start and prints "released N" (N
 * left); "stop" ends the
 * threads, prints the final counts the same way and exits 0. It prints
 * "ready PID" once the loops run. The main thread waits in read(): a
 * thread an injector may borrow.
 *
 * --spawn N: first starts N copies of itself (2 threads each, their own
 * driver state: workers of a server), which run until this process stops
 * or dies (they read a pipe from it); "stop" waits for them and prints
 * "children N ok" when every one exited 0.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_api.h"

#define MAX_THREADS 64

typedef CUresult (*getproc_fn)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);

static struct {
	__typeof__(&cuInit) init;
	__typeof__(&cuDeviceGet) device_get;
	__typeof__(&cuDevicePrimaryCtxRetain) retain;
	__typeof__(&cuCtxSetCurrent) set_current;
	__typeof__(&cuMemAlloc_v2) alloc;
	__typeof__(&cuMemFree_v2) free;
} cu;

static int nthreads = 8;
static _Atomic int stopping;
static _Atomic uint64_t allocs[MAX_THREADS], pinned;
static CUcontext ctx;

static int resolve(getproc_fn get, const char *name, void **out)
{
	CUdriverProcAddressQueryResult st;
	return get(name, out, 12000, 0, &st) != CUDA_SUCCESS || !*out;
}

static void *loop(void *arg)
{
	int t = (int)(intptr_t)arg;
	if (cu.set_current(ctx) != CUDA_SUCCESS)
		abort();
	for (uint64_t k = 0; !atomic_load_explicit(&stopping,
	                                           memory_order_relaxed);
	     k++) {
		CUdeviceptr p;
		size_t size = ((size_t)(k % 1024) << 3 | (size_t)t) + 1;
		if (cu.alloc(&p, size) != CUDA_SUCCESS || cu.free(p) !=
		                                                  CUDA_SUCCESS) {
			fprintf(stderr, "attach_target: thread %d: call failed\n",
			        t);
			abort();
		}
		atomic_store_explicit(&allocs[t], k + 1, memory_order_relaxed);
		if (t == 0 && k % 16 == 0) {
			uint64_t n = atomic_load(&pinned);
			void *h;
			/* Through the PLT: the program is linked with it. */
			if (cuMemAllocHost_v2(&h, ((n % 1024) << 3) + 1) !=
			            CUDA_SUCCESS ||
			    cuMemFreeHost(h) != CUDA_SUCCESS)
				abort();
			atomic_store(&pinned, n + 1);
		}
	}
	return NULL;
}

static void print_counts(const char *what)
{
	printf("%s", what);
	for (int t = 0; t < nthreads; t++)
		printf(" %llu", (unsigned long long)atomic_load(&allocs[t]));
	printf(" %llu\n", (unsigned long long)atomic_load(&pinned));
	fflush(stdout);
}

extern char **environ;

/* Starts n workers: this program with "--threads 2 --worker", their stdin
 * the read end of a pipe whose write end only this process holds. */
static int spawn_workers(int n, pid_t *pids)
{
	int fds[2];
	if (pipe(fds))
		return -1;
	char *argv[] = {"/proc/self/exe", "--threads", "2", "--worker", "1",
	                NULL};
	char exe[4096];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return -1;
	exe[l] = 0;
	argv[0] = exe;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	for (int i = 0; i < n; i++)
		if (posix_spawn(&pids[i], exe, &fa, NULL, argv, environ))
			return -1;
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	return fds[1]; /* closed at exit: the workers stop */
}

int main(int argc, char **argv)
{
	long hold_mib = 0;
	int nspawn = 0, worker = 0, wfd = -1;
	pid_t wpids[64];
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			nthreads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--hold-mib"))
			hold_mib = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--spawn"))
			nspawn = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--worker"))
			worker = 1;
	}
	if (nspawn < 0 || nspawn > 64)
		return 2;
	if (nspawn && (wfd = spawn_workers(nspawn, wpids)) < 0)
		return 5;
	if (nthreads < 1 || nthreads > MAX_THREADS)
		return 2;
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	getproc_fn get = h ? (getproc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get || resolve(get, "cuInit", (void **)&cu.init) ||
	    resolve(get, "cuDeviceGet", (void **)&cu.device_get) ||
	    resolve(get, "cuDevicePrimaryCtxRetain", (void **)&cu.retain) ||
	    resolve(get, "cuCtxSetCurrent", (void **)&cu.set_current) ||
	    resolve(get, "cuMemAlloc", (void **)&cu.alloc) ||
	    resolve(get, "cuMemFree", (void **)&cu.free)) {
		fprintf(stderr, "attach_target: no driver\n");
		return 4;
	}
	CUdevice dev;
	if (cu.init(0) || cu.device_get(&dev, 0) || cu.retain(&ctx, dev) ||
	    cu.set_current(ctx))
		return 4;
	/* What was allocated before any attach: the "weights". */
	static CUdeviceptr held[4096];
	long nheld = 0;
	for (long i = 0; i < hold_mib / 256 && i < 4096; i++) {
		if (cu.alloc(&held[nheld], 256u << 20) != CUDA_SUCCESS)
			return 3;
		nheld++;
	}
	pthread_t th[MAX_THREADS];
	for (int t = 0; t < nthreads; t++)
		pthread_create(&th[t], NULL, loop, (void *)(intptr_t)t);
	if (!worker) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
	}
	char line[256];
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "counts", 6)) {
			print_counts("counts");
		} else if (!strncmp(line, "release", 7) && nheld) {
			if (cu.free(held[--nheld]) != CUDA_SUCCESS)
				abort();
			printf("released %ld\n", nheld);
			fflush(stdout);
		} else if (!strncmp(line, "stop", 4)) {
			break;
		}
	}
	atomic_store(&stopping, 1);
	for (int t = 0; t < nthreads; t++)
		pthread_join(th[t], NULL);
	if (worker)
		return 0;
	print_counts("final");
	if (nspawn) {
		int ok = 0, st;
		close(wfd);
		for (int i = 0; i < nspawn; i++)
			ok += waitpid(wpids[i], &st, 0) == wpids[i] &&
			      WIFEXITED(st) && WEXITSTATUS(st) == 0;
		printf("children %d ok\n", ok);
	}
	return 0;
}
