/*
 * Reports: formatting only. Each writer takes the loaded trace (for names,
 * processes and devices) and its replay (for the numbers) and writes one
 * report to a stdio stream. They read nothing else and decide nothing:
 * every number comes from replay.c. Errors stay in the stream (ferror).
 */
#ifndef VRT_REPORT_H
#define VRT_REPORT_H

#include <stdio.h>

#include "load.h"
#include "replay.h"

/* The "vramtrace-report/1" JSON document (DESIGN.md). */
void vrt_report_json_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r);

/* The human summary: run, per-device families and peak, host, failures. */
void vrt_report_text_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r);

#endif /* VRT_REPORT_H */
