/*
 * The engine's log as a run: when the log is all there is (`analyze --log
 * FILE` without a trace), the numbers it printed are laid out as the
 * events a trace of the same server would hold, so the log goes through
 * the same replay, ladder, verdicts and report schema as a trace:
 *
 *   - one device per card the log names (the failing one first of all),
 *     with the capacity it printed (PyTorch's "total capacity", vLLM's
 *     total_gpu_memory, llama.cpp's fit and breakdown lines, Ollama's
 *     inference compute) and what other processes held (PyTorch's
 *     "Process N has X memory in use" for the processes that are not the
 *     log's own, the free memory an engine saw before it loaded) as the
 *     first free-memory probe;
 *   - weights, KV cache, CUDA graphs, activations, non-PyTorch memory as
 *     allocations of their phase at the line that printed them;
 *   - the fatal error as a failed allocation of its size, with the free
 *     and total memory it printed, in the phase its line, its traceback
 *     or the start-up step it came in names; PyTorch's own account of
 *     the process at that moment (allocated, private pools, reserved but
 *     unallocated, this process's memory) fills in what the engine's
 *     lines did not;
 *   - the requests the engine counted running then (vLLM's "Running: N
 *     reqs", SGLang's #running-req, llama.cpp's busy slots) as requests
 *     in flight, when the log says it was serving.
 *
 * Nothing is made up: a number the log does not print is absent (the
 * ladder shows it as not in the log), and what is missing is named.
 * Times: the log's own wall-clock times where its lines have them;
 * without any, one millisecond per line (the reports then speak of log
 * lines, not times).
 *
 * Pure: no I/O, no globals; single-threaded per struct.
 */
#ifndef VRT_LOGRUN_H
#define VRT_LOGRUN_H

#include <stddef.h>
#include <stdint.h>

#include "diagnose/diagnose.h"
#include "enginelog.h"
#include "load/load.h"
#include "replay/replay.h"

#define VRT_LOGRUN_MAX_DEVICES 16
#define VRT_LOGRUN_MAX_ARGS    128

struct vrt_logrun {
	struct vrt_trace t;  /* the run the log describes */
	struct vrt_replay r; /* replayed (complete after _build) */
	int have_wall;       /* the log's lines carry wall-clock times */
	int have_failure;    /* its fatal error is r.fails[0] */
	uint32_t failure_line;
	/* The ladder's rungs a number of the log stands for (bit per
	 * enum vrt_rung): a rung without one is "not in the log". */
	unsigned rungs_read;
	/* serving at the failure, and whether the log counted the requests
	 * in flight then */
	int serving;
	int inflight_counted;
	uint32_t inflight;
	/* The server's command line (rebuilt from the log) for `vramtrace
	 * record`, "" when the log prints nothing to rebuild it from. */
	char command[VRT_ENGINELOG_CMD];
	/* private storage of t */
	struct vrt_process proc;
	struct vrt_device devs[VRT_LOGRUN_MAX_DEVICES];
	struct vrt_failinfo failinfo[1];
	char *args;
	char *argv[VRT_LOGRUN_MAX_ARGS];
	char host[8];
};

/*
 * Builds *lr (overwritten) from log (parsed and _end'ed). Returns 0, or -1
 * when out of memory (lr is then freed). lr keeps no pointer into log.
 */
int vrt_logrun_build(struct vrt_logrun *lr, const struct vrt_enginelog *log);

void vrt_logrun_free(struct vrt_logrun *lr);

/* The trace device of a device ordinal the log names, -1 none. */
int32_t vrt_logrun_device(const struct vrt_logrun *lr, int32_t ordinal);

#endif /* VRT_LOGRUN_H */
