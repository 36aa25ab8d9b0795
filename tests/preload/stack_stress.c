/*
 * stack_stress — stack capture under hostile conditions; must finish and
 * leave a trace whose phases still come out right:
 *   - llama_model_load() allocates through libnofp (no frame pointers):
 *     4 x 1 MiB, tagged weights only if the unwinder gets through it;
 *   - recursion 300 deep (past the 64-frame cap) ending in llama_decode():
 *     1 x 5 MiB tagged forward (the innermost frames are the ones kept);
 *   - a signal handler that allocates: 10 synchronous raise() calls, each
 *     handler allocating and freeing 2 MiB (recorded: the handler runs
 *     outside any hook);
 *   - a storm of 2000 asynchronous signals from another thread while the
 *     main thread makes 20000 alloc/free pairs of 4 KiB; each handler
 *     records a mark (vramtrace_mark), so handlers land inside our hooks,
 *     unwinder and buffers at random points. Those that interrupt a hook
 *     pass through unrecorded by design; nothing may deadlock or crash.
 *     (The handler does not call the driver: a driver is not async-signal
 *     safe, and interrupting its own locked section would hang any
 *     program, traced or not.)
 * Prints "stack_stress: done" and exits 0.
 */
#include "cuda_api.h"

#include <vramtrace.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MIB      (1024ull * 1024ull)
#define NOINLINE __attribute__((noinline, noclone))

/* Exported (not static) so dladdr names them in the trace. */
void keep_frame(void);
void llama_model_load(void);
void llama_decode(void);
int recurse(int n);

unsigned long long nofp_alloc(size_t n, int salt);

volatile int sink;
static volatile sig_atomic_t handled;

NOINLINE void keep_frame(void)
{
	sink++;
}

static void check(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "stack_stress: %s failed: %d\n", what, (int)r);
		exit(1);
	}
}

NOINLINE void llama_model_load(void)
{
	for (int i = 0; i < 4; i++)
		if (!nofp_alloc(MIB, i))
			exit(1);
	keep_frame();
}

NOINLINE void llama_decode(void)
{
	CUdeviceptr p;
	check(cuMemAlloc_v2(&p, 5 * MIB), "decode alloc");
	keep_frame();
}

NOINLINE int recurse(int n)
{
	if (n == 0)
		llama_decode();
	else
		recurse(n - 1);
	keep_frame();
	return n;
}

/* SIGUSR1 is raised synchronously, outside any driver call: its handler
 * may allocate. SIGUSR2 arrives at any point: its handler only marks. */
static void on_signal(int sig)
{
	if (sig == SIGUSR1) {
		CUdeviceptr p;
		if (cuMemAlloc_v2(&p, 2 * MIB) == CUDA_SUCCESS)
			cuMemFree_v2(p);
	} else {
		VRAMTRACE_MARK("signal");
	}
	handled++;
}

static pthread_t main_thread;
static volatile int storming = 1;

static void *storm(void *arg)
{
	(void)arg;
	for (int i = 0; i < 2000 && storming; i++) {
		pthread_kill(main_thread, SIGUSR2);
		if (i % 16 == 0)
			usleep(100);
	}
	return NULL;
}

int main(void)
{
	CUcontext ctx;
	check(cuInit(0), "cuInit");
	check(cuDevicePrimaryCtxRetain(&ctx, 0), "retain");
	check(cuCtxSetCurrent(ctx), "set current");
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);

	llama_model_load();
	recurse(300);
	for (int i = 0; i < 10; i++)
		raise(SIGUSR1);

	main_thread = pthread_self();
	pthread_t t;
	pthread_create(&t, NULL, storm, NULL);
	for (int i = 0; i < 20000; i++) {
		CUdeviceptr p;
		check(cuMemAlloc_v2(&p, 4096), "loop alloc");
		check(cuMemFree_v2(p), "loop free");
	}
	storming = 0;
	pthread_join(t, NULL);
	printf("stack_stress: done (%d handlers ran)\n", (int)handled);
	return 0;
}
