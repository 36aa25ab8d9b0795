/*
 * Diagnosis: the loaded trace and its replay in; the OOM verdict of
 * DESIGN.md "The diagnosis it automates" out — which budget broke
 * (weights, kv_cache, concurrency, host_memory, other_processes, or none),
 * at what stage, with the evidence in numbers, the action (in the flags of
 * the engine the command lines show), its cost and how to verify.
 *
 * The rules, first match wins, on the run's first out-of-memory failure:
 *   1. a host allocation (pinned/registered) failed, or HOST samples show
 *      MemAvailable near zero (and swap, if any, nearly full) -> host_memory;
 *   2. on the failing device, memory other processes held (the baseline
 *      of the first free-memory probe, or NVML's other PIDs) is at least
 *      VRT_DIAG_OTHER_MIN_BYTES and at least the shortfall (the call would
 *      have fit without them) -> other_processes (their PIDs are named;
 *      the action never suggests killing them);
 *   3. stage load (before the first listen()) in the kv_cache phase ->
 *      kv_cache, detail "kv_reserve"; any other load-stage failure, or a
 *      weights-phase failure -> weights, detail "not_sharded" when one
 *      device holds at least VRT_DIAG_SHARD_FRACTION of the weights of a
 *      run that uses several devices (or asks for tensor parallelism),
 *      "card_too_small" when the weights alone fill the card, else
 *      "weights_do_not_fit";
 *   4. stage request with at most one request in flight -> kv_cache,
 *      detail "context_too_long";
 *   5. stage request with several in flight: when one request's peak
 *      (requests.single_request_peak_bytes, else the failing call) fits the
 *      device's headroom -> concurrency, detail "overlapping_requests";
 *      else kv_cache, detail "context_too_long";
 *   6. no failure -> none, with the headroom per device (host exhaustion
 *      seen in samples is still host_memory).
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
#include "modelcfg.h"
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
	uint64_t max_num_seqs;     /* --max-num-seqs, --max-running-requests,
	                              -np, --max-concurrent-requests */
	uint64_t tp;               /* --tensor-parallel-size, --tp, ... */
	uint64_t mem_util_milli;   /* --gpu-memory-utilization or
	                              --mem-fraction-static, x1000 */
	uint64_t max_total_tokens; /* TGI --max-total-tokens */
	uint64_t ngl;              /* llama.cpp -ngl */
	int have_ngl;
};

/* --model-config arithmetic (have = 0 without a config). */
struct vrt_diag_model {
	int have;
	uint64_t kv_bytes_per_token;
	uint64_t kv_reserve_bytes;   /* observed, all devices */
	uint64_t kv_reserve_tokens;  /* what that reserve holds */
	uint64_t kv_headroom_bytes;  /* reserve + unused headroom */
	uint64_t max_tokens;         /* tokens that budget holds */
	uint64_t context_len;        /* flag, else max_position_embeddings */
	uint64_t max_concurrency;    /* max_tokens / context_len */
	uint64_t max_context_single; /* = max_tokens (one sequence) */
	uint64_t params;
	uint64_t expected_weight_bytes;
	uint64_t observed_weight_bytes; /* weights phase peaks, summed */
};

struct vrt_diagnosis {
	int verdict;     /* enum vrt_verdict */
	char detail[48]; /* "not_sharded", ... or "" */
	char stage[16];  /* "load", "request" (for none: the last stage
	                    reached) */
	int32_t device;  /* the failing device, -1: host or none */
	int have_failure;
	size_t failure; /* index into replay fails[] when have_failure */
	struct vrt_diag_flags flags;
	struct vrt_diag_device devices[64];
	size_t ndevices;
	uint64_t other_pids[VRT_DIAG_MAX_PIDS];
	size_t nother_pids;
	struct vrt_diag_model model;
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
                      const struct vrt_replay *r,
                      const struct vrt_modelcfg *cfg);

/* "weights", "kv_cache", ... never NULL. */
const char *vrt_diagnose_verdict_name(int verdict);

/* "bytes", "count", "seconds", "pid", "tokens", "percent". */
const char *vrt_diagnose_unit_name(int unit);

#endif /* VRT_DIAGNOSE_H */
