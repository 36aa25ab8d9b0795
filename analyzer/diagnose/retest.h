/*
 * Retest rows: one replayed run in; the line an engineer writes down after
 * each restart out, for `vramtrace table`: the engine and the flags that
 * set its memory budget (parsed from the recorded command lines), the
 * verdict `analyze` gives the run (diagnose.h), the peak and headroom of
 * each device and its split by phase, requests in flight, the
 * out-of-memory failure a verdict rests on (stage, phase) and the exit
 * status. And, for `vramtrace compare`, what changed between two runs'
 * settings and whether the second fixed the first's failure.
 *
 * The engine and its flags come from engine.h (one table for every
 * command, the detection `analyze` uses): the columns are its first five
 * settings, context length, concurrency, memory fraction, tensor parallel
 * and GPU layers (docs/compare.md has the table).
 *
 * Pure: no I/O, no printing, no globals. A row copies what it keeps, so
 * the run can be released right after.
 */
#ifndef VRT_RETEST_H
#define VRT_RETEST_H

#include <stddef.h>
#include <stdint.h>

#include "diagnose.h"
#include "engine.h"
#include "load/load.h"
#include "replay/replay.h"

/* The table's columns: engine.h's first settings, in its order. */
enum vrt_retest_field {
	VRT_RETEST_CONTEXT = VRT_ENGINE_CONTEXT,
	VRT_RETEST_CONCURRENCY = VRT_ENGINE_CONCURRENCY,
	VRT_RETEST_MEM_FRACTION = VRT_ENGINE_MEM_FRACTION,
	VRT_RETEST_PARALLEL = VRT_ENGINE_PARALLEL,
	VRT_RETEST_GPU_LAYERS = VRT_ENGINE_GPU_LAYERS,
	VRT_RETEST_NFIELDS = 5,
};

#define VRT_RETEST_NAME 48

struct vrt_retest_phase {
	char name[VRT_RETEST_NAME];
	uint64_t bytes;
};

struct vrt_retest_device {
	int32_t id; /* index in the run's devices */
	uint64_t peak_bytes;
	int have_headroom;       /* the diagnosis budgets this device */
	uint64_t headroom_bytes; /* total - other processes - peak */
	struct vrt_retest_phase *phases; /* live at the peak, slot order */
	size_t nphases;
};

struct vrt_retest_row {
	const char *engine;              /* static, or NULL */
	char *value[VRT_RETEST_NFIELDS]; /* copies, or NULL */
	const char *option[VRT_RETEST_NFIELDS]; /* static; "log" for a value
	                                           the engine's log gave */
	char verdict[24];       /* the diagnosis: "kv_cache", ... */
	char detail[48];        /* "context_too_long", ... or "" */
	char **argv; /* the command line the engine was found in (else the
	                first process's); copies */
	size_t argc;
	size_t nprocs;
	struct vrt_retest_device *dev;
	size_t ndev;
	uint32_t max_inflight;
	uint64_t ooms;
	int have_oom; /* the decisive out-of-memory failure (replay.h),
	                 else the first: */
	int oom_after_ready;
	char oom_phase[VRT_RETEST_NAME];
	int32_t oom_device;
	uint64_t oom_requested;
	int64_t oom_time_ns; /* since the run's start */
	int exit_kind;       /* enum vrt_exit_kind of the first process that
	                        has an exit status */
	int exit_code;
};

/* One setting two runs differ in. */
struct vrt_retest_change {
	char name[48]; /* the option as B spells it, else as A does */
	char a[64];    /* its value in A, "" not given, "(set)" a switch */
	char b[64];
	const char *source; /* "command line", "engine log" */
};

struct vrt_retest_changes {
	struct vrt_retest_change *v;
	size_t n, cap;
};

/* Name of a field as reports spell it ("context_length", ...). */
const char *vrt_retest_field_name(int field);

/* Fills *row (zeroed first) from the run: its engine and flags as
 * vrt_engine_of_run reads them (a program that is not recognised shows no
 * engine, only its flags). Returns 0, or -1 when out of memory (release
 * with vrt_retest_row_free either way). */
int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r);

void vrt_retest_row_free(struct vrt_retest_row *row);

/* A setting read from elsewhere than the command line (the engine's log,
 * enginelog.h): fills field when the command line left it empty, marked
 * as the log's. Returns 0, -1 out of memory. */
int vrt_retest_row_fill(struct vrt_retest_row *row, int field,
                        const char *value);

/*
 * The settings of runs A and B that differ, from each run's engine
 * command line (the process vrt_engine_of_run names): options by the
 * setting they size (two spellings of one engine flag are one setting),
 * switches, and the positional arguments. out must be zeroed. Returns 0,
 * -1 out of memory (release with vrt_retest_changes_free either way).
 */
int vrt_retest_flags_diff(struct vrt_retest_changes *out,
                          const struct vrt_trace *a, const struct vrt_trace *b);

/* Adds one change (source: where the values were read, e.g. "engine log"
 * for the configuration an engine logs); a setting already listed keeps
 * its first entry. 0, or -1 out of memory. */
int vrt_retest_changes_add(struct vrt_retest_changes *c, const char *name,
                           const char *a, const char *b, const char *source);

void vrt_retest_changes_free(struct vrt_retest_changes *c);

/* Whether run B fixed run A's failure, in one line into buf: *fixed 1
 * (A failed, B did not), 0 (B fails too, or fails where A did not), -1
 * (cannot tell: a verdict is inconclusive, or neither failed). ra, rb:
 * the replays (the load each run carried). */
void vrt_retest_outcome(const struct vrt_diagnosis *a,
                        const struct vrt_replay *ra,
                        const struct vrt_diagnosis *b,
                        const struct vrt_replay *rb, int *fixed, char *buf,
                        size_t n);

/* The option name of a field the engine's log supplied (its option[]):
 * enginelog/log_retest.c fills such fields. */
#define VRT_RETEST_FROM_LOG "log"

#endif /* VRT_RETEST_H */
