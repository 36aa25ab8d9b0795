/*
 * sink.h — a stream that takes every byte a report writer writes and keeps
 * none (fopencookie), for the fuzz targets: they exercise the writers
 * without pointing them at a device file. Needs _GNU_SOURCE.
 */
#ifndef VRT_FUZZ_SINK_H
#define VRT_FUZZ_SINK_H

#include <stdio.h>
#include <sys/types.h>

static ssize_t fuzz_sink_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	(void)buf;
	return (ssize_t)n;
}

/* The stream, made once; NULL if it cannot be. */
static FILE *fuzz_sink(void)
{
	static FILE *f;
	cookie_io_functions_t io = {NULL, fuzz_sink_write, NULL, NULL};
	if (!f)
		f = fopencookie(NULL, "w", io);
	return f;
}

#endif
