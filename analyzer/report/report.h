/*
 * Reports: formatting only. Each writer takes the loaded trace (for names,
 * processes and devices) and its replay (for the numbers) and writes one
 * report to a stdio stream. They read nothing else and decide nothing:
 * every number comes from replay.c. Errors stay in the stream (ferror).
 */
#ifndef VRT_REPORT_H
#define VRT_REPORT_H

#include <stdio.h>

#include "load/load.h"
#include "replay/replay.h"

struct vrt_diagnosis;
struct vrt_json;
struct vrt_logcheck;
struct vrt_model_arith;

/* The "vramtrace-report/1" JSON document (docs/design.md); dg (diagnose.h) may
 * be NULL ("diagnosis": null), lc (logcheck.h: the engine's log held
 * against the trace) too ("engine_log": null, "findings": []). */
void vrt_report_json_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *dg,
                           const struct vrt_logcheck *lc);

/* The human summary: the diagnosis first (when dg is not NULL), then run,
 * the engine's log against the trace (when lc is not NULL), per-device
 * families and peak, host, failures. */
void vrt_report_text_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *dg,
                           const struct vrt_logcheck *lc);

/* The engine's log against the trace (report_enginelog.c): the JSON
 * report's "engine_log" and "findings" members (null and [] when lc is
 * NULL), and the text report's block (nothing when lc is NULL). */
void vrt_report_enginelog_json(struct vrt_json *w, const struct vrt_trace *t,
                               const struct vrt_logcheck *lc);
void vrt_report_enginelog_text(FILE *f, const struct vrt_trace *t,
                               const struct vrt_logcheck *lc);

/* The names of the diagnosis flags the engine's log supplied
 * (VRT_DIAG_LOG_* bits, diagnose.h) as a JSON array (report_diagnosis.c). */
void vrt_report_log_flags_json(struct vrt_json *w, unsigned bits);

/* The diagnosis as the text report's opening block (report_diagnosis.c). */
void vrt_report_diagnosis_text(FILE *f, const struct vrt_trace *t,
                               const struct vrt_diagnosis *dg);

/* The diagnosis as a JSON object (the value of "diagnosis"). */
/* "frames": the frames of stack in call order, innermost first (at most
 * 64), and "depth": how many it has (callpath.h). */
void vrt_report_json_frames(struct vrt_json *w, const struct vrt_trace *t,
                            uint32_t stack);

void vrt_report_diagnosis_json(struct vrt_json *w, const struct vrt_trace *t,
                               const struct vrt_diagnosis *dg);

/* The model arithmetic (model.h, report_model.c): the description in
 * full and the KV arithmetic line by line as a text block (--explain),
 * and the value of "diagnosis.model" (null without --model-config). */
void vrt_report_model_text(FILE *f, const struct vrt_model_arith *a);
void vrt_report_model_json(struct vrt_json *w, const struct vrt_model_arith *a);

struct vrt_diff;
struct vrt_run;
struct vrt_retest_row;

struct vrt_retest_changes;

/* What compare says beyond the diff: each run's diagnosis (diagnose.h)
 * and the settings that changed (retest.h). */
struct vrt_compare_verdicts {
	const struct vrt_diagnosis *a, *b;
	const struct vrt_retest_changes *changes;
};

/* `vramtrace compare`: the text summary and the "vramtrace-compare/1"
 * JSON document of diff d between runs a and b, with their verdicts v
 * (report_compare.c). */
void vrt_report_compare_text(FILE *f, const struct vrt_diff *d,
                             const struct vrt_run *a, const struct vrt_run *b,
                             const struct vrt_compare_verdicts *v);
void vrt_report_compare_json(FILE *f, const struct vrt_diff *d,
                             const struct vrt_run *a, const struct vrt_run *b,
                             const struct vrt_compare_verdicts *v);

/* `vramtrace table`: nrows rows (labels[i] names row i's run) as an
 * aligned text table, CSV, or the "vramtrace-table/1" JSON document
 * (report_table.c). */
void vrt_report_table_text(FILE *f, const struct vrt_retest_row *rows,
                           char *const *labels, size_t nrows);
void vrt_report_table_csv(FILE *f, const struct vrt_retest_row *rows,
                          char *const *labels, size_t nrows);
void vrt_report_table_json(FILE *f, const struct vrt_retest_row *rows,
                           char *const *labels, size_t nrows);

struct vrt_plan;
struct vrt_plan_row;
struct vrt_plan_explain;

/* `vramtrace plan` (report_plan.c): the table of configurations as text,
 * CSV, or the "vramtrace-plan/1" JSON document; label names the run,
 * explained (may be NULL) is the configuration --explain shows with its
 * arithmetic ex, index its row (0: not in the grid). */
void vrt_report_plan_text(FILE *f, const struct vrt_trace *t,
                          const struct vrt_plan *p, const char *label,
                          const struct vrt_plan_row *explained,
                          const struct vrt_plan_explain *ex, size_t index);
void vrt_report_plan_csv(FILE *f, const struct vrt_plan *p);
void vrt_report_plan_json(FILE *f, const struct vrt_trace *t,
                          const struct vrt_plan *p, const char *label,
                          const struct vrt_plan_row *explained,
                          const struct vrt_plan_explain *ex, size_t index);

/* One self-contained HTML page (inline CSS, JS and SVG; nothing loaded
 * from the network) drawn from the JSON report of t, r and d (d may be
 * NULL), embedded in it: the diagnosis, per-device timelines by phase
 * (zoom and pan) with server-ready, mark, request and OOM markers, the
 * load-test windows, budget bars against capacity, failures, top sites. */
void vrt_report_html_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *d,
                           const struct vrt_logcheck *lc);

/* The page around the report's JSON document: generated at build time
 * from analyzer/html/ by html/embed_page.py (html_page.c). */
extern const char vrt_html_page_head[];
extern const char vrt_html_page_tail[];

/* Chrome trace event JSON for ui.perfetto.dev: a process per traced pid,
 * counter tracks per device and phase (and, once the timeline is
 * downsampled, each phase's most and least per bucket), requests in
 * flight, instant events for OOMs, marks and server readiness, and (lc not
 * NULL) the engine log's memory lines at their wall-clock times. */
void vrt_report_perfetto_write(FILE *f, const struct vrt_trace *t,
                               const struct vrt_replay *r,
                               const struct vrt_logcheck *lc);

/* Folded stacks ("[phase];root;...;leaf bytes", "[device N];" in front
 * when several devices peak) of everything live at each device's peak,
 * for flamegraph.pl (--countname=bytes) and speedscope. Needs every site: r
 * replayed with top_sites = SIZE_MAX. Returns 0, or -1 when out of memory
 * (nothing written). */
int vrt_report_folded_write(FILE *f, const struct vrt_trace *t,
                            const struct vrt_replay *r);

#endif /* VRT_REPORT_H */
