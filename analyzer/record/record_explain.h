/*
 * Why a recorded run has no trace. `record` calls vrt_record_explain_print
 * once the command's process tree has exited: a run directory without a
 * trace then gets one line saying why — the preload could not be loaded
 * (the missing library or glibc version, in the dynamic loader's own
 * words), VRAMTRACE_ENABLE turned tracing off, recording stayed in
 * standby, or no process made a GPU memory call (the command and its exit
 * status) — instead of a claim that there is a trace to analyze.
 * Single-threaded (record's main thread).
 */
#ifndef VRT_RECORD_EXPLAIN_H
#define VRT_RECORD_EXPLAIN_H

#include <stddef.h>

struct vrt_record_outcome {
	const char *dir;     /* the run directory, as given */
	const char *preload; /* the library put in LD_PRELOAD */
	char *const *cmd;    /* the command, NULL-terminated */
	int status;          /* the command's wait status */
	int standby;         /* recorded with --standby */
};

/* 1 when the run directory holds a trace (nothing printed); else prints
 * "vramtrace: error: DIR: no trace: WHY" on stderr and returns 0. To find
 * WHY it reads DIR/output.log when there is one and runs this executable
 * once more with the same LD_PRELOAD (tracing off) to hear the loader. */
int vrt_record_explain_print(const struct vrt_record_outcome *o);

/* Finds the dynamic loader's complaint about a preloaded library in text
 * (a process's output, len bytes, not NUL-terminated) and fills why (n
 * bytes) with what it means: a missing library, a missing symbol version
 * (glibc's named as such), a preload the loader ignored (only preload
 * itself when it is not NULL: other LD_PRELOAD entries are the user's),
 * an undefined symbol. 1 found, 0 not. Pure. */
int vrt_record_explain_loader(const char *text, size_t len, const char *preload,
                              char *why, size_t n);

#endif /* VRT_RECORD_EXPLAIN_H */
