/*
 * Retest rows: one replayed run in; the line an engineer writes down after
 * each restart out, for `vramtrace table`: the engine and the flags that
 * set its memory budget (parsed from the recorded command lines), the peak
 * of each device and its split by phase, requests in flight, the
 * out-of-memory failure a verdict rests on (stage, phase) and the exit
 * status.
 *
 * The engine and its flags come from engine.h (one table for every
 * command): the columns are its first five settings, context length,
 * concurrency, memory fraction, tensor parallel and GPU layers
 * (docs/compare.md has the table).
 *
 * Pure: no I/O, no printing, no globals. A row copies what it keeps, so
 * the run can be released right after.
 */
#ifndef VRT_RETEST_H
#define VRT_RETEST_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "load.h"
#include "replay.h"

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
	struct vrt_retest_phase *phases; /* live at the peak, slot order */
	size_t nphases;
};

struct vrt_retest_row {
	const char *engine;              /* static, or NULL */
	char *value[VRT_RETEST_NFIELDS]; /* copies, or NULL */
	const char *option[VRT_RETEST_NFIELDS];
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

/* Name of a field as reports spell it ("context_length", ...). */
const char *vrt_retest_field_name(int field);

/* Fills *row (zeroed first) from the run: its engine and flags as
 * vrt_engine_of_run reads them (a program that is not recognised shows no
 * engine, only its flags). Returns 0, or -1 when out of memory (release
 * with vrt_retest_row_free either way). */
int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r);

void vrt_retest_row_free(struct vrt_retest_row *row);

struct vrt_enginelog;

/* The option name of a field the engine's log supplied (its option[]). */
#define VRT_RETEST_FROM_LOG "log"

/* Fills the fields (and the engine) the command lines left out from the
 * configuration the engine printed in its log (enginelog.h), their option
 * set to VRT_RETEST_FROM_LOG. Returns the fields filled, or -1 when out of
 * memory. */
int vrt_retest_from_log(struct vrt_retest_row *row,
                        const struct vrt_enginelog *log);

#endif /* VRT_RETEST_H */
