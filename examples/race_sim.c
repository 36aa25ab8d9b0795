/*
 * race_sim — a server whose request threads allocate at the same moment,
 * for the scenario that an out-of-memory failure racing with other
 * threads' successful allocations is concurrency, not another process:
 * what the other threads had just allocated is counted by the driver when
 * the failing call asks it for free memory, and must be in the trace
 * before that failure.
 *
 *   weights   --weights-gib GiB in 1 GiB tensors (phase weights)
 *   kv_cache  --kv-gib GiB (phase kv_cache)
 *   serve     HTTP/1.1 on 127.0.0.1; a client of its own sends one
 *             request, then --threads at once; --threads request threads
 *             take them, and each request's thread allocates --act-gib of
 *             activations (phase forward) at the same moment as the
 *             others of its step (a barrier), holds them until every
 *             thread of the step has allocated, then answers
 *
 * Exit status: 0 all served, 2 usage, 3 out of memory (PyTorch's message,
 * as a server dies on the error), 4 no driver.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_gpu.h"
#include "sim_http.h"
#include "vramtrace.h"

#define GIB (1024ull * 1024ull * 1024ull)
#define MAX_THREADS 32

static struct {
	double weights_gib, kv_gib, act_gib;
	int threads;
} o = {40, 24, 4, 4};

static struct sim_http *http;
static pthread_barrier_t step_barrier;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *request_thread(void *arg)
{
	(void)arg;
	sim_gpu_use(0); /* a thread's own current context, as in CUDA */
	for (;;) {
		struct sim_http_req r;
		uint64_t p = 0;
		int alone;
		if (sim_http_next(http, &r))
			return NULL;
		pthread_mutex_lock(&mu);
		alone = r.id == 0; /* the first step is one request */
		pthread_mutex_unlock(&mu);
		VRAMTRACE_PHASE_PUSH("forward");
		if (!alone)
			pthread_barrier_wait(&step_barrier);
		if (sim_gpu_malloc(&p, (size_t)(o.act_gib * GIB))) {
			size_t f, t;
			sim_gpu_mem_info(&f, &t);
			fprintf(stderr,
			        "torch.OutOfMemoryError: CUDA out of memory. Tried "
			        "to allocate %.2f GiB. GPU 0 has a total capacity "
			        "of %.2f GiB of which %.2f GiB is free.\n",
			        o.act_gib, (double)t / GIB, (double)f / GIB);
			exit(3);
		}
		if (!alone)
			pthread_barrier_wait(&step_barrier);
		sim_gpu_free(p);
		VRAMTRACE_PHASE_POP();
		sim_http_reply(http, &r);
	}
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	uint64_t p;
	int ndev = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--weights-gib"))
			o.weights_gib = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--kv-gib"))
			o.kv_gib = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--act-gib"))
			o.act_gib = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--threads"))
			o.threads = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "usage: race_sim [--weights-gib G] "
			                "[--kv-gib G] [--act-gib G] [--threads "
			                "N]\n");
			return 2;
		}
	}
	if (o.threads < 2 || o.threads > MAX_THREADS)
		return 2;
	if (sim_gpu_open(0) || sim_gpu_count(&ndev) || ndev < 1)
		return 4;
	sim_gpu_use(0);
	VRAMTRACE_PHASE_PUSH("weights");
	for (double g = 0; g < o.weights_gib; g += 1)
		if (sim_gpu_malloc(&p, GIB))
			return 3;
	VRAMTRACE_PHASE_POP();
	VRAMTRACE_PHASE_PUSH("kv_cache");
	if (o.kv_gib > 0 && sim_gpu_malloc(&p, (size_t)(o.kv_gib * GIB)))
		return 3;
	VRAMTRACE_PHASE_POP();
	if (!(http = sim_http_listen(0, 0)))
		return 1;
	pthread_barrier_init(&step_barrier, NULL, (unsigned)o.threads);
	struct sim_load load = {.port = sim_http_port(http),
	                        .wait_ready = 1,
	                        .path = "/v1/completions",
	                        .nsteps = 2,
	                        .steps = {1, o.threads}};
	if (sim_load_start(&load))
		return 1;
	for (int i = 0; i < o.threads; i++)
		pthread_create(&th[i], NULL, request_thread, NULL);
	int failed = sim_load_join(&load);
	printf("race_sim: served, %d failed\n", failed);
	return failed ? 1 : 0;
}
