/*
 * Diagnosis: the loaded trace and its replay in; the OOM verdict out —
 * which budget broke (weights, kv_cache, concurrency, host_memory,
 * other_processes, none, or inconclusive), at what stage, with the
 * evidence in numbers, how sure it is, the action (in the flags of the
 * engine the run's root command shows), its cost and how to verify.
 *
 * It rests on the decisive failure (replay.h: the earliest fatal one, else
 * the last unrecovered one); recovered failures are near-misses. In order:
 *   1. a host allocation (pinned/registered) failed, or HOST samples show
 *      MemAvailable near zero (and swap, if any, nearly full) -> host_memory;
 *   2. on the failing device, memory other processes held (the baseline
 *      of the first free-memory probe, NVML's other PIDs, the driver's own
 *      count at the failure) is at least VRT_DIAG_OTHER_MIN_BYTES and at
 *      least the shortfall (the call would have fit without them) ->
 *      other_processes (their PIDs are named, never to be killed);
 *   3. what the evidence cannot support -> inconclusive, saying what is
 *      missing: a request-stage failure with no request in flight, a
 *      load-stage failure of memory no rule named, a root process that
 *      died during the load without any failed allocation, or after only
 *      recovered ones;
 *   4. the ladder on the failing device, the manual retests done as
 *      arithmetic: baseline (other processes, contexts) -> + weights ->
 *      + the reserves the engine sized (KV cache, CUDA graphs,
 *      communicators, what loading left in the per-request phases) ->
 *      + the activations of one request, or of the configured batch in a
 *      profiling / warm-up run (with what a caching allocator kept) ->
 *      + the rest of the requests in flight. The first rung whose running
 *      sum passes the capacity is the budget that broke, but never a rung
 *      after the one the failing call was building (its phase says
 *      which): weights -> weights (not_sharded when one device holds
 *      VRT_DIAG_SHARD_FRACTION of the weights of a run asked to use
 *      several devices; card_too_small; weights_do_not_fit); reserves ->
 *      kv_cache (kv_reserve, graph_capture_after_reserve,
 *      comm_after_reserve); activations -> concurrency (batch_activations)
 *      in a load, kv_cache (context_too_long) for a request; in flight ->
 *      concurrency (overlapping_requests). A device that holds most of
 *      the weights of a run asked to shard them is not_sharded whatever
 *      rung broke;
 *   5. no failure -> none, with the headroom per device and the
 *      near-misses.
 * Every verdict carries a confidence (high, medium, low) and its reason.
 *
 * Pure: no I/O, no printing, no globals. The result owns no pointers into
 * the trace.
 */
#ifndef VRT_DIAGNOSE_H
#define VRT_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "load.h"
#include "model.h"
#include "replay.h"

#define VRT_DIAG_OTHER_MIN_BYTES (1ull << 30) /* 1 GiB: past a context */
#define VRT_DIAG_SHARD_FRACTION  0.9
#define VRT_DIAG_HOST_LOW_BYTES  (256ull << 20) /* MemAvailable "near 0" */
#define VRT_DIAG_MAX_ITEMS       24
#define VRT_DIAG_MAX_PIDS        8
#define VRT_DIAG_TEXT            320

enum vrt_verdict {
	VRT_VERDICT_NONE = 0,
	VRT_VERDICT_WEIGHTS = 1,
	VRT_VERDICT_KV_CACHE = 2,
	VRT_VERDICT_CONCURRENCY = 3,
	VRT_VERDICT_HOST_MEMORY = 4,
	VRT_VERDICT_OTHER_PROCESSES = 5,
	VRT_VERDICT_INCONCLUSIVE = 6,
};

enum vrt_confidence {
	VRT_CONFIDENCE_HIGH = 0,
	VRT_CONFIDENCE_MEDIUM = 1,
	VRT_CONFIDENCE_LOW = 2,
};

/* The ladder's rungs, in the order they are climbed. */
enum vrt_rung {
	VRT_RUNG_BASELINE = 0,    /* other processes, contexts */
	VRT_RUNG_WEIGHTS = 1,     /* weights */
	VRT_RUNG_RESERVES = 2,    /* KV cache, graphs, comm, load buffers */
	VRT_RUNG_ACTIVATIONS = 3, /* one request's / the batch's */
	VRT_RUNG_INFLIGHT = 4,    /* the other requests in flight */
	VRT_RUNG_COUNT = 5,
};

/* One rung: its bytes, the running sum, and whether that fits. */
struct vrt_diag_rung {
	uint64_t bytes;
	uint64_t cumulative;
	int fits;
};

/* Units of an evidence value (JSON "unit"). */
enum vrt_diag_unit {
	VRT_DIAG_BYTES = 0,
	VRT_DIAG_COUNT = 1,
	VRT_DIAG_SECONDS_NS = 2, /* value in ns, reported in seconds */
	VRT_DIAG_PID = 3,
	VRT_DIAG_TOKENS = 4,
	VRT_DIAG_PERCENT = 5,
};

/* One number behind the verdict: a stable key, its value, the device it
 * concerns (-1: the run) and a sentence for people. */
struct vrt_diag_evidence {
	char key[48];
	int32_t device;
	int unit; /* enum vrt_diag_unit */
	uint64_t value;
	char text[VRT_DIAG_TEXT];
};

/* The budget of one device the run used. */
struct vrt_diag_device {
	int32_t device; /* index into the trace's devices */
	uint64_t total_bytes;
	uint64_t other_bytes;    /* other processes: max(baseline, NVML) */
	uint64_t weights_bytes;  /* weights phase peak */
	uint64_t kv_bytes;       /* kv_cache (rule + inferred) peak */
	uint64_t peak_bytes;     /* this run's tracked peak */
	uint64_t headroom_bytes; /* total - other - peak, 0 when negative */
};

/* The command-line settings found in the run's processes (0: absent). */
struct vrt_diag_flags {
	int engine;                /* enum vrt_engine (engine.h) */
	uint64_t max_model_len;    /* --max-model-len, --context-length, -c */
	uint64_t max_num_seqs;     /* --max-num-seqs, ... (engine.h) */
	uint64_t tp;               /* --tensor-parallel-size, ... */
	uint64_t mem_util_milli;   /* --gpu-memory-utilization, ... x1000 */
	uint64_t max_total_tokens; /* TGI --max-total-tokens */
	uint64_t ngl;              /* llama.cpp -ngl */
	int have_ngl;
	uint64_t pp;           /* pipeline-parallel degree */
	uint64_t batch_tokens; /* tokens in one forward batch */
	uint64_t ubatch;       /* llama.cpp -ub */
	int one_device;        /* llama.cpp -sm none: one GPU on purpose */
};

struct vrt_diagnosis {
	int verdict;     /* enum vrt_verdict */
	char detail[48]; /* "not_sharded", ... or "" */
	int confidence;  /* enum vrt_confidence */
	char confidence_reason[VRT_DIAG_TEXT];
	char stage[16]; /* "load", "request" (for none: the last stage
	                   reached) */
	int32_t device; /* the failing device, -1: host or none */
	int have_failure;
	size_t failure; /* index into replay fails[] when have_failure */
	struct vrt_diag_flags flags;
	struct vrt_diag_device devices[64];
	size_t ndevices;
	uint64_t other_pids[VRT_DIAG_MAX_PIDS];
	size_t nother_pids;
	struct vrt_model_arith model; /* --model-config (model.h) */
	/* The ladder on the failing device (have_ladder = 0 without a
	 * device failure); rung is the one the verdict names, -1 none. */
	int have_ladder;
	int32_t ladder_device;
	uint64_t capacity_bytes;
	struct vrt_diag_rung ladder[VRT_RUNG_COUNT];
	int rung;
	int batch_rung; /* the activations rung is the configured batch's
	                   (a profiling or warm-up run), not one request's */
	struct vrt_diag_evidence evidence[VRT_DIAG_MAX_ITEMS];
	size_t nevidence;
	char actions[VRT_DIAG_MAX_ITEMS / 3][VRT_DIAG_TEXT];
	size_t nactions;
	char costs[VRT_DIAG_MAX_ITEMS / 3][VRT_DIAG_TEXT];
	size_t ncosts;
	char verify[4][VRT_DIAG_TEXT];
	size_t nverify;
};

/*
 * Diagnoses t and its replay r into *d (overwritten). cfg may be NULL
 * (no --model-config). Never fails.
 */
void vrt_diagnose_run(struct vrt_diagnosis *d, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg);

/* The run's engine (from its root command, inherited by its workers) and
 * the numbers of its memory flags into *f (zeroed first); returns the
 * index of the root process (0 when the run has none). */
size_t vrt_diagnose_flags(struct vrt_diag_flags *f, const struct vrt_trace *t);

/* "weights", "kv_cache", ... never NULL. */
const char *vrt_diagnose_verdict_name(int verdict);

/* "high", "medium", "low". */
const char *vrt_diagnose_confidence_name(int confidence);

/* "baseline", "weights", "reserves", "activations", "in_flight". */
const char *vrt_diagnose_rung_name(int rung);

/* "bytes", "count", "seconds", "pid", "tokens", "percent". */
const char *vrt_diagnose_unit_name(int unit);

#endif /* VRT_DIAGNOSE_H */
