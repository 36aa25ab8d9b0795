/*
 * Wall clock: a trace's times as UTC. Every event carries a monotonic
 * timestamp; each trace HEADER records the writer's CLOCK_REALTIME and
 * CLOCK_MONOTONIC read together (start_wall_ns, start_mono_ns), which is
 * the pair that turns one into the other. Runs that span several hosts
 * are already on the first host's monotonic clock (load.c moves them
 * through the same pairs), so the first process of the first host gives
 * the offset for the whole run.
 *
 * Pure: no I/O, no globals, thread-safe.
 */
#ifndef VRT_WALLCLOCK_H
#define VRT_WALLCLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* Buffer size that holds any vrt_wallclock_format result. */
#define VRT_WALLCLOCK_TEXT 40

/* 1 when t's processes carry a wall clock (a HEADER with a non-zero
 * start_wall_ns), else 0: then nothing below converts. */
int vrt_wallclock_known(const struct vrt_trace *t);

/* UTC nanoseconds since the Unix epoch of trace time ts (aligned
 * CLOCK_MONOTONIC ns, as events carry); 0 when the clock is unknown. */
int64_t vrt_wallclock_utc(const struct vrt_trace *t, int64_t ts);

/* The trace time of UTC wall_ns (the inverse of vrt_wallclock_utc); 0
 * when the clock is unknown. */
int64_t vrt_wallclock_mono(const struct vrt_trace *t, int64_t wall_ns);

/* wall_ns as ISO 8601 UTC with digits (0, 3, 6 or 9) fractional digits:
 * "2026-12-02T10:15:00.123Z". Returns buf. */
const char *vrt_wallclock_format(char *buf, size_t n, int64_t wall_ns,
                                 int digits);

/* Parses the form vrt_wallclock_format writes ("YYYY-MM-DDTHH:MM:SS",
 * optional ".fraction" of 1 to 9 digits, "Z") at s; returns the bytes
 * read, or 0 when s does not start with one. *wall_ns gets the time. */
size_t vrt_wallclock_parse(const char *s, size_t len, int64_t *wall_ns);

/* UTC seconds of a broken-down UTC calendar time (timegm, without the
 * process's time zone), or INT64_MIN when out of range. */
int64_t vrt_wallclock_timegm(int year, int mon, int day, int hour, int min,
                             int sec);

#endif /* VRT_WALLCLOCK_H */
