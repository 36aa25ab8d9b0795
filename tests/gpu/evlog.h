/*
 * evlog.h — what a real-CUDA test program did, one line per fact, for
 * tests/gpu/run_gpu.py (which turns the lines into the counters `vramtrace
 * analyze` must report) and tests/realcuda/run_cudart_real.py (which
 * compares the calls' results with and without the preload).
 *
 *   prog NAME LINK STREAM         the program, shared|static|driver, and
 *                                 default|per-thread default stream
 *   call API CODE NAME            every CUDA call and what it returned
 *   device ORD TOTAL_BYTES        a device the program used
 *   alloc FAMILY DEV BYTES ID     an allocation that succeeded (DEV: an
 *                                 ordinal, or "host" for pinned/registered)
 *   free ID                       its free, which succeeded
 *   oom API DEV BYTES FREE TOTAL  an allocation the driver refused for lack
 *                                 of memory: the driver API the preload
 *                                 sees, the bytes asked, and the free and
 *                                 total bytes the program read just before
 *                                 (-1: not known)
 *   skip REASON...                a part that cannot run here (one device)
 *
 * Also the programs' common "--case NAME --out FILE" arguments and a table
 * of cases. Header-only, C and C++ (nvcc). Not thread-safe: single-threaded
 * programs.
 */
#ifndef VRT_TEST_EVLOG_H
#define VRT_TEST_EVLOG_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *evlog_out;

/* Opens the log (line-buffered, so a program that dies still leaves what
 * it did); exits with status 1 when it cannot. */
static inline void evlog_open(const char *path)
{
	evlog_out = fopen(path, "w");
	if (!evlog_out) {
		perror(path);
		exit(1);
	}
	setvbuf(evlog_out, NULL, _IOLBF, 0);
}

static inline void evlog_line(const char *fmt, ...)
        __attribute__((format(printf, 1, 2)));

static inline void evlog_line(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(evlog_out, fmt, ap);
	va_end(ap);
	fputc('\n', evlog_out);
}

static inline void evlog_call(const char *api, int code, const char *name)
{
	evlog_line("call %s %d %s", api, code, name ? name : "?");
}

static inline void evlog_device(int ord, unsigned long long total)
{
	evlog_line("device %d %llu", ord, total);
}

/* dev < 0: host memory. */
static inline void evlog_alloc(const char *family, int dev,
                               unsigned long long bytes, const void *id)
{
	if (dev < 0)
		evlog_line("alloc %s host %llu %p", family, bytes, id);
	else
		evlog_line("alloc %s %d %llu %p", family, dev, bytes, id);
}

static inline void evlog_free(const void *id)
{
	evlog_line("free %p", id);
}

static inline void evlog_oom(const char *api, int dev, unsigned long long bytes,
                             long long free_bytes, long long total_bytes)
{
	evlog_line("oom %s %d %llu %lld %lld", api, dev, bytes, free_bytes,
	           total_bytes);
}

/* A handle or device address as an evlog ID. */
static inline void *evlog_id(unsigned long long v)
{
	return (void *)(uintptr_t)v;
}

/* "--case NAME" and "--out FILE", in any order; either may be missing
 * (NULL): the caller says which it needs. */
static inline void evlog_args(int argc, char **argv, const char **which,
                              const char **out)
{
	*which = *out = NULL;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--case"))
			*which = argv[i + 1];
		else if (!strcmp(argv[i], "--out"))
			*out = argv[i + 1];
	}
}

struct evlog_case {
	const char *name;
	int (*run)(void);
};

/* Runs the case named which: its exit status, or 2 if there is none. */
static inline int evlog_run_case(const struct evlog_case *cases, size_t n,
                                 const char *prog, const char *which)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cases[i].name, which))
			return cases[i].run();
	fprintf(stderr, "%s: unknown case %s\n", prog, which);
	return 2;
}

#endif /* VRT_TEST_EVLOG_H */
