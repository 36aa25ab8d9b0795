/*
 * rt_common.h — what the programs of this directory share: every runtime
 * call logged (tests/gpu/evlog.h) and checked against the result the
 * program expects of a CUDA runtime, and steps, each a phase of its own
 * (include/vramtrace.h), so that the trace can be checked allocation by
 * allocation (run_nvcc.py).
 *
 * Evlog lines beyond evlog.h's:
 *   step NAME        the allocations that follow belong to phase NAME
 *   value KEY VALUE  a fact the driver script checks (a property, a count)
 *   fail API FAMILY DEV   a memory call the driver refused, not for lack
 *                    of memory (the trace lists it among the failures)
 *
 * Header-only, for nvcc; single-threaded programs.
 */
#ifndef VRT_TEST_RT_COMMON_H
#define VRT_TEST_RT_COMMON_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "evlog.h"
#include "vramtrace.h"

#define MiB (1ull << 20)

#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define PTSZ "_ptsz"
#else
#define PTSZ ""
#endif

static int rt_failed;

/* A call whose result is checked: logged, and a mismatch makes the
 * program fail (after it has run to the end). */
static inline bool rt_expect(const char *api, int line, cudaError_t want,
                             cudaError_t got)
{
	evlog_call(api, (int)got, cudaGetErrorName(got));
	if (got != want) {
		fprintf(stderr, "line %d: %s returned %s (%d), expected %s\n",
		        line, api, cudaGetErrorName(got), (int)got,
		        cudaGetErrorName(want));
		rt_failed = 1;
	}
	return got == want;
}

#define EXPECT(want, api, ...)                                                 \
	rt_expect(#api, __LINE__, want, api(__VA_ARGS__))
#define OK(api, ...) EXPECT(cudaSuccess, api, __VA_ARGS__)

/* A fact that must hold. */
#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "line %d: failed: %s\n", __LINE__,     \
			        #cond);                                        \
			rt_failed = 1;                                         \
		}                                                              \
	} while (0)

static int rt_in_step;

/* Starts a step: the phase of what follows, in the trace and in the log. */
static inline void step(const char *name)
{
	if (rt_in_step)
		VRAMTRACE_PHASE_POP();
	VRAMTRACE_PHASE_PUSH(name);
	rt_in_step = 1;
	evlog_line("step %s", name);
}

static inline void step_end(void)
{
	if (rt_in_step)
		VRAMTRACE_PHASE_POP();
	rt_in_step = 0;
}

/* An allocation the program made on device dev (-1: host memory). */
static inline void logged_alloc(const char *family, int dev, size_t bytes,
                                const void *p)
{
	evlog_alloc(family, dev, bytes, p);
}

/* The device the program runs on, with its total memory. */
static inline void log_device(int dev)
{
	cudaDeviceProp p;
	if (OK(cudaGetDeviceProperties, &p, dev))
		evlog_device(dev, p.totalGlobalMem);
}

/* An allocation the driver must refuse: asked after reading free/total. */
static inline void log_oom(const char *driver_api, int dev, size_t bytes,
                           size_t free_b, size_t total_b)
{
	evlog_oom(driver_api, dev, bytes, (long long)free_b,
	          (long long)total_b);
}

static inline int rt_main(int argc, char **argv,
                          const struct evlog_case *cases, size_t n)
{
	const char *which, *out;
	int rc;
	evlog_args(argc, argv, &which, &out);
	if (!which || !out) {
		fprintf(stderr, "usage: %s --case NAME --out FILE\n", argv[0]);
		return 2;
	}
	evlog_open(out);
	rc = evlog_run_case(cases, n, argv[0], which);
	step_end();
	return rc ? rc : rt_failed;
}

#endif /* VRT_TEST_RT_COMMON_H */
