/*
 * One recorded run, ready to report on: its trace streamed from the loader
 * (load.c) through attribution (attrib.c) and replay (replay.c) in one
 * pass, batch by batch (vrt_run_pass, used by every command that reports
 * on traces). vrt_run_open does it for the commands that handle several
 * runs side by side (compare, table); analyze, demo and live call
 * vrt_run_pass on the run they opened.
 *
 * These helpers print the analyzer's messages themselves ("vramtrace:
 * error: FILE: what: reason", one warning per skipped or truncated file),
 * so a command only maps their result to an exit status. Single-threaded.
 */
#ifndef VRT_RUN_H
#define VRT_RUN_H

#include <stddef.h>
#include <stdio.h>

#include "load/load.h"
#include "replay.h"

struct vrt_rules;

/* Events per batch of vrt_run_pass. */
#define VRT_RUN_BATCH 4096

enum vrt_run_pass_status {
	VRT_RUN_PASS_OK = 0,
	VRT_RUN_PASS_LOAD = 1,  /* the loader failed mid-stream: err filled */
	VRT_RUN_PASS_NOMEM = 2, /* out of memory attributing or replaying */
};

/*
 * The pass: t opened (vrt_load_open or vrt_load_open_buffer), every event
 * of its stream attributed with rules (NULL: the recorded phases and the
 * evidence only) and replayed into r, which must be zeroed (top_sites may
 * be set). Memory: one batch, plus what attribution and replay keep (live
 * allocations, stacks), never the whole stream. Prints nothing. Returns an
 * enum vrt_run_pass_status; release r with vrt_replay_free either way.
 */
int vrt_run_pass(struct vrt_trace *t, const struct vrt_rules *rules,
                 struct vrt_replay *r, struct vrt_load_error *err);

struct vrt_run {
	const char *label; /* the path as given, for messages and reports */
	struct vrt_trace t;
	struct vrt_replay r;
};

/*
 * Loads the run at path (a run directory or one trace file), classifies
 * its stacks with rules (NULL: the recorded phases) and replays it keeping
 * top_sites sites per (device, phase) at each peak (0: the default, see
 * replay.h). *run must be zeroed. Returns 0, or -1 after printing the
 * error; release *run with vrt_run_close either way.
 */
int vrt_run_open(struct vrt_run *run, const char *path,
                 const struct vrt_rules *rules, size_t top_sites);

void vrt_run_close(struct vrt_run *run);

/* The built-in rules with the rules file at path in front; NULL after
 * printing the error (unreadable file, syntax error "FILE:LINE: ...", out
 * of memory). */
struct vrt_rules *vrt_run_read_rules(const char *path);

/* One warning per file a directory held that died before its first flush
 * and per truncated trace of t (stderr). */
void vrt_run_warn(const struct vrt_trace *t);

#endif /* VRT_RUN_H */
