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
 *      missing: a process that is no server at all (not_a_server: the
 *      failing call, its stack and the device's state instead of a
 *      ladder), a request-stage failure with no request in flight, a
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
 * With the engine's log (struct vrt_diag_log, which logcheck.h fills from
 * a parsed server log) the diagnosis also rests on the engine's words:
 *   a. the failure the log's fatal error names is the decisive one
 *      (whatever replay chose), and the confidence says so;
 *   b. the configuration the engine printed fills the flags the command
 *      lines left at their defaults, before any action is written;
 *   c. when the trace saw no request, the engine's "ready" line ends the
 *      load stage: a run that died or failed after it did so serving;
 *   d. a budget refusal the engine printed (vLLM's KV check, SGLang's
 *      --mem-fraction-static, llama.cpp's context that does not fit,
 *      TGI's prefill and max_total_tokens checks) with no failed
 *      allocation behind it is the verdict of that budget, at the rung
 *      the engine was sizing, with the engine's suggested value beside
 *      the trace's and whether they agree; a refusal a failed
 *      allocation stands behind adds its values to the ladder's verdict;
 *   e. so a run that died while loading without a failed allocation gets
 *      the verdict of the budget its log names, not inconclusive;
 *   f. the engine's numbers stand beside the ladder's rungs, and those
 *      that disagree with the trace (beyond VRT_DIAG_LOG_TOLERANCE_PCT)
 *      are evidence; on the verdict's rung they lower the confidence.
 *
 * Pure: no I/O, no printing, no globals. The result owns no pointers into
 * the trace.
 */
#ifndef VRT_DIAGNOSE_H
#define VRT_DIAGNOSE_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "load/load.h"
#include "model/model.h"
#include "replay/replay.h"

#define VRT_DIAG_OTHER_MIN_BYTES (1ull << 30) /* 1 GiB: past a context */
/* kept by the run's stream-ordered pools: enough to be the cause */
#define VRT_DIAG_POOL_MIN_BYTES (256ull << 20)
#define VRT_DIAG_SHARD_FRACTION  0.9
#define VRT_DIAG_HOST_LOW_BYTES  (256ull << 20) /* MemAvailable "near 0" */
#define VRT_DIAG_MAX_ITEMS       24
#define VRT_DIAG_MAX_PIDS        8
#define VRT_DIAG_TEXT            320
#define VRT_DIAG_MARGIN_PCT      5  /* --margin: share of a card kept spare */
#define VRT_DIAG_MARGIN_MAX      50
#define VRT_DIAG_COMMAND         1100 /* a command line in advice */

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
	/* what the engine's log printed for this rung's budgets on the
	 * ladder's device (weights; KV cache and graphs; activations) */
	int have_engine;
	uint64_t engine_bytes;
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
	int flash_attn;        /* llama.cpp -fa on (or the log says it is) */
	char cache_k[16];      /* KV cache type asked for (llama.cpp -ctk,
	                          --kv-cache-dtype), "" default */
	char cache_v[16];      /* llama.cpp -ctv, else as cache_k */
};

/* Which fields of struct vrt_diag_flags the engine's log supplied. */
enum {
	VRT_DIAG_LOG_ENGINE = 1 << 0,
	VRT_DIAG_LOG_CTX = 1 << 1,
	VRT_DIAG_LOG_SEQS = 1 << 2,
	VRT_DIAG_LOG_TP = 1 << 3,
	VRT_DIAG_LOG_UTIL = 1 << 4,
	VRT_DIAG_LOG_TOTAL_TOKENS = 1 << 5,
	VRT_DIAG_LOG_NGL = 1 << 6,
	VRT_DIAG_LOG_UBATCH = 1 << 7,
	VRT_DIAG_LOG_BATCH = 1 << 8,
	VRT_DIAG_LOG_FLASH_ATTN = 1 << 9,
	VRT_DIAG_LOG_NFLAGS = 10,
};

/* An engine number and a traced one that differ by more than this (and
 * more than the printed rounding) disagree. */
#define VRT_DIAG_LOG_TOLERANCE_PCT 5
#define VRT_DIAG_LOG_NUMBERS       16
#define VRT_DIAG_REFUSAL_ITEMS     8

/* A budget refusal the engine printed, in its own terms: the verdict of
 * that budget, what the engine suggests and what the trace measures. */
struct vrt_diag_refusal {
	int verdict;     /* VRT_VERDICT_KV_CACHE or _CONCURRENCY */
	char detail[48]; /* "max_model_len_exceeds_kv_cache", ... */
	int rung;        /* the rung the engine was sizing */
	char stage[16];  /* "load" or "request" */
	int32_t device;  /* trace device, -1 unknown */
	uint32_t line;   /* the log line of the refusal */
	uint64_t needed_bytes; /* what the engine wanted for that rung and
	                          did not allocate (0: not printed) */
	uint64_t budget_bytes; /* the capacity the engine sizes within (its
	                          memory fraction of the card; 0: the card) */
	char flag[48];   /* the engine flag the values are for */
	int fraction;    /* values are fractions x1000 */
	int have_engine_value, have_trace_value;
	uint64_t engine_value; /* the engine's suggestion */
	uint64_t trace_value;  /* the trace's own */
	int agree;             /* 1 yes, 0 no, -1 no way to tell */
	struct vrt_diag_evidence evidence[VRT_DIAG_REFUSAL_ITEMS];
	size_t nevidence;
	char actions[3][VRT_DIAG_TEXT];
	size_t nactions;
	char costs[2][VRT_DIAG_TEXT];
	size_t ncosts;
};

/* One number the engine printed beside the traced one. */
struct vrt_diag_engine_number {
	int rung;       /* VRT_RUNG_WEIGHTS, _RESERVES or _ACTIVATIONS */
	char what[24];  /* "weights", "kv_cache", "activations",
	                   "cuda_graphs" */
	int32_t device; /* trace device */
	uint64_t engine_bytes, traced_bytes;
	double diff_percent; /* (traced - engine) / engine x 100 */
	int disagrees;
	uint32_t line;
};

/* What the engine's own log says, for the diagnosis (logcheck.h fills it
 * from a parsed log). Every part is optional. */
struct vrt_diag_log {
	char engine[24]; /* "vLLM", ...: in sentences */
	/* a. the recorded failure its fatal error names */
	int have_fatal_failure;
	size_t fatal_failure; /* index into the replay's fails[] */
	uint32_t fatal_line;
	char fatal_why[VRT_DIAG_TEXT];
	/* a memory error that names no recorded failure (not a refusal) */
	int have_unmatched_error;
	uint32_t unmatched_line;
	char unmatched_error[VRT_DIAG_TEXT];
	/* b. the configuration it printed (VRT_DIAG_LOG_* in printed) */
	struct vrt_diag_flags flags;
	unsigned printed;
	/* c. it said it serves, at ready_ts on the trace's clock */
	int have_ready;
	int64_t ready_ts;
	uint32_t ready_line;
	/* d. a budget refusal */
	int have_refusal;
	struct vrt_diag_refusal refusal;
	/* f. its numbers beside the trace's */
	struct vrt_diag_engine_number numbers[VRT_DIAG_LOG_NUMBERS];
	size_t nnumbers;
	/* The log is all there is (analyze --log without a trace): the run
	 * was built from its numbers (logrun.h), so sentences speak of log
	 * lines, a rung no number of the log stands for is "not in the log",
	 * and what a trace would settle names the command that records one.
	 * fatal_line is the failure's line. */
	int log_only;
	unsigned rungs_read;  /* bit per enum vrt_rung */
	int inflight_counted; /* the engine counted the requests in flight */
	int engine_known;     /* the log reads as an inference engine's */
	int memory_lines;     /* it printed anything about memory */
	uint64_t lines;       /* lines read */
	int prompt_known;     /* the failing request's prompt tokens */
	uint64_t prompt_tokens;
	char record_command[VRT_DIAG_COMMAND];
	/* PyTorch's own account in the fatal error (with a trace too):
	 * memory it reserved but could not use for the call (fragmentation),
	 * and the other processes it named on the card. */
	int have_reserved;
	uint64_t reserved_bytes, requested_bytes, free_bytes;
	int host_pageable; /* the fatal host allocation was pageable RAM
	                      (PyTorch's CPU allocator, ggml's CPU buffer),
	                      not page-locked memory */
	uint64_t other_pids[VRT_DIAG_MAX_PIDS];
	uint64_t other_pid_bytes[VRT_DIAG_MAX_PIDS];
	size_t nother_pids;
};

struct vrt_diagnosis {
	int verdict;     /* enum vrt_verdict */
	unsigned margin_pct; /* the margin the advice keeps, percent */
	char detail[48]; /* "not_sharded", ... or "" */
	int confidence;  /* enum vrt_confidence */
	char confidence_reason[VRT_DIAG_TEXT];
	char stage[16]; /* "load", "request" (for none: the last stage
	                   reached) */
	int32_t device; /* the failing device, -1: host or none */
	int have_failure;
	size_t failure; /* index into replay fails[] when have_failure */
	/* The run is no server (detail "not_a_server"): it never listened,
	 * served no request and runs no engine vramtrace knows, so reports
	 * lead with the failing call and leave the server's parts out. */
	int not_server;
	uint32_t failing_stack; /* the decisive failure's stack (0: none) */
	char failing_site[160]; /* where it was called, for sentences
	                           (callpath.h), "" when unnamed */
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
	/* What the engine's log decided (have_log 0: there was none): the
	 * flags it supplied (VRT_DIAG_LOG_*), the failure it named, the
	 * refusal that is the verdict, the stage its ready line ended. */
	int have_log;
	unsigned flags_from_log;
	int log_fatal;
	int log_refusal;
	int log_ready;
	/* The log is all there is: every number is the log's (rungs_read:
	 * the rungs a number of it stands for), and record_command records
	 * the same server to settle what it leaves open ("" none). */
	int source_log;
	unsigned rungs_read;
	char record_command[VRT_DIAG_COMMAND];
	struct vrt_diag_evidence evidence[VRT_DIAG_MAX_ITEMS];
	size_t nevidence;
	/* The changes to make, cheapest first; costs[i] is what actions[i]
	 * gives up ("" when nothing): ncosts == nactions. */
	char actions[VRT_DIAG_MAX_ITEMS / 3][VRT_DIAG_TEXT];
	size_t nactions;
	char costs[VRT_DIAG_MAX_ITEMS / 3][VRT_DIAG_TEXT];
	size_t ncosts;
	char verify[4][VRT_DIAG_TEXT];
	size_t nverify;
	/* The engine settings the actions name, as numbers: field (enum
	 * vrt_engine_field) and value (a memory fraction x1000), for `plan`
	 * to try the same settings. */
	struct {
		int field;
		uint64_t value;
	} suggest[8];
	size_t nsuggest;
};

/* The bytes the margin keeps spare on a card of capacity bytes. */
static inline uint64_t vrt_diag_margin_bytes(uint64_t capacity,
                                             unsigned margin_pct)
{
	return capacity / 100 * margin_pct + capacity % 100 * margin_pct / 100;
}

/* The one definition of "fits with the margin", for analyze and plan
 * alike: a card of capacity bytes with headroom bytes free at the peak
 * keeps margin_pct percent of its capacity spare. */
static inline int vrt_diag_fits_margin(uint64_t headroom, uint64_t capacity,
                                       unsigned margin_pct)
{
	return headroom >= vrt_diag_margin_bytes(capacity, margin_pct);
}

/* How the advice is sized. */
struct vrt_diag_options {
	unsigned margin_pct; /* 0..VRT_DIAG_MARGIN_MAX: every suggested
	                        number leaves this share of the card's
	                        capacity free (--margin) */
	/* the engine's log, held against the trace (logcheck.h); NULL:
	 * none */
	const struct vrt_diag_log *log;
};

/*
 * Diagnoses t and its replay r into *d (overwritten). cfg may be NULL
 * (no --model-config); o NULL: the defaults (VRT_DIAG_MARGIN_PCT). Never
 * fails.
 */
void vrt_diagnose_run_opts(struct vrt_diagnosis *d, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_model *cfg,
                           const struct vrt_diag_options *o);

/* vrt_diagnose_run_opts with the defaults. */
void vrt_diagnose_run(struct vrt_diagnosis *d, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg);

/* The same with the engine's log (log may be NULL: vrt_diagnose_run).
 * log->fatal_failure indexes r->fails; its devices are t's. */
void vrt_diagnose_run_log(struct vrt_diagnosis *d, const struct vrt_trace *t,
                          const struct vrt_replay *r,
                          const struct vrt_model *cfg,
                          const struct vrt_diag_log *log);

/* Copies into *f the fields of log the log printed (printed: its
 * VRT_DIAG_LOG_* bits) that *f left at 0 (its defaults); returns the bits
 * it filled. */
unsigned vrt_diagnose_fill_flags(struct vrt_diag_flags *f,
                                 const struct vrt_diag_flags *log,
                                 unsigned printed);

/* "engine", "max_model_len", "max_num_seqs", "tensor_parallel",
 * "memory_fraction", "max_total_tokens", "gpu_layers" for the bit
 * numbers 0 .. VRT_DIAG_LOG_NFLAGS - 1; NULL past them. */
const char *vrt_diagnose_log_flag_name(int bit);

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
