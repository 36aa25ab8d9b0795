/*
 * The engine's words held against the trace: a parsed server log
 * (enginelog.h) and a replayed run in; out:
 *
 *   - the engine's numbers beside the traced ones per device (weights, KV
 *     reserve, activations, CUDA graphs), a disagreement above
 *     VRT_LOGCHECK_TOLERANCE_PCT flagged as a finding (a rule that misses,
 *     memory outside the hooked calls, or another process);
 *   - which recorded failure the log's fatal error names (by requested
 *     bytes, device, time and pid), for the fatal-vs-recovered choice;
 *   - the moment the engine said it serves, on the trace's clock;
 *   - the engine's effective configuration as diagnosis flags, for the
 *     flags the command lines did not carry;
 *   - whether a budget refusal the engine printed (vLLM's KV-cache check,
 *     SGLang's --mem-fraction-static, llama.cpp's context that does not
 *     fit, TGI's prefill and max_total_tokens checks) is the run's fatal
 *     error, and with it the verdict of that budget with the engine's
 *     suggested value beside the trace's own.
 *
 * The diagnosis decides with all this (diagnose.h, struct vrt_diag_log):
 * vrt_logcheck_diag hands it over. Pure: no I/O, no globals,
 * single-threaded.
 */
#ifndef VRT_LOGCHECK_H
#define VRT_LOGCHECK_H

#include <stddef.h>
#include <stdint.h>

#include "diagnose/diagnose.h"
#include "enginelog.h"
#include "load/load.h"
#include "model/model.h"
#include "replay/replay.h"

#define VRT_LOGCHECK_TOLERANCE_PCT VRT_DIAG_LOG_TOLERANCE_PCT
#define VRT_LOGCHECK_TEXT          VRT_DIAG_TEXT
#define VRT_LOGCHECK_MAX_ROWS      64
#define VRT_LOGCHECK_MAX_FINDINGS  32

/* What an engine number is compared with. */
enum vrt_logcheck_quantity {
	VRT_LCQ_WEIGHTS = 0,     /* the weights phase's peak */
	VRT_LCQ_KV = 1,          /* kv_cache (+ inferred) peak */
	VRT_LCQ_ACTIVATIONS = 2, /* the profile phase's peak */
	VRT_LCQ_GRAPHS = 3,      /* the cuda_graph phase's peak */
	VRT_LCQ_N = 4,
};

struct vrt_logcheck_row {
	int quantity;        /* enum vrt_logcheck_quantity */
	int32_t device;      /* trace device index */
	int32_t log_device;  /* the device or rank the log named, -1 none */
	uint64_t engine_bytes;
	uint64_t engine_tol; /* what the printed rounding allows */
	uint64_t traced_bytes;
	double diff_percent; /* (traced - engine) / engine x 100 */
	int flagged;         /* off by more than the tolerance */
	int allocation_failed; /* less traced: its allocation failed (not
	                          flagged) */
	uint32_t line;       /* the log line (last one summed) */
};

struct vrt_logcheck_finding {
	char key[48];   /* "weights_disagree", ... */
	int32_t device; /* trace device, -1 the run */
	char text[VRT_LOGCHECK_TEXT];
};

struct vrt_logcheck {
	const struct vrt_enginelog *log;
	const char *path; /* the log file, for reports */
	struct vrt_logcheck_row rows[VRT_LOGCHECK_MAX_ROWS];
	size_t nrows;
	struct vrt_logcheck_finding findings[VRT_LOGCHECK_MAX_FINDINGS];
	size_t nfindings;
	/* the failure the log's fatal error names */
	int have_fatal_failure;
	size_t fatal_failure; /* index into the replay's fails[] */
	char fatal_match[VRT_LOGCHECK_TEXT];
	/* the engine said it serves, at ready_ts on the trace's clock */
	int have_ready;
	int64_t ready_ts;
	/* the command lines' flags with the engine's configuration for the
	 * ones they left at their defaults (VRT_DIAG_LOG_* bits) */
	struct vrt_diag_flags flags;
	unsigned flags_from_log;
	/* the fatal error is a budget refusal (whatever the diagnosis) */
	int have_refusal;
	struct vrt_diag_refusal refusal;
	size_t refusal_error; /* index into the log's errors[] */
	int refusal_applied;  /* the diagnosis made it the verdict (reports) */
	/* No trace: the run is the one the log describes (logrun.h), its
	 * numbers the log's own (nothing to compare). */
	int log_only;
	const struct vrt_logrun *lr;
};

/*
 * Holds log (parsed and _end'ed) against t and its replay r into *lc
 * (overwritten). path names the log in sentences; cfg (--model-config)
 * may be NULL. lc keeps pointers to log and path: they must outlive it.
 * Never fails.
 */
void vrt_logcheck_run(struct vrt_logcheck *lc, const struct vrt_enginelog *log,
                      const char *path, const struct vrt_trace *t,
                      const struct vrt_replay *r,
                      const struct vrt_model *cfg);

struct vrt_logrun;

/*
 * A log with no trace: lr is the run built from it (logrun.h, from the
 * same log). Fills *lc as vrt_logcheck_run does, with no comparison (the
 * numbers are the log's own): the fatal failure is the run's failed
 * allocation, the ready line on the run's clock, the configuration as
 * flags, a refusal in the engine's terms. lc keeps pointers to log, path
 * and lr. Never fails.
 */
void vrt_logcheck_run_logonly(struct vrt_logcheck *lc,
                              const struct vrt_enginelog *log,
                              const char *path, const struct vrt_logrun *lr,
                              const struct vrt_model *cfg);

/*
 * analyze --log FILE without a trace, once the log is read: the run it
 * describes built into *lr, held into *lc, diagnosed into *dg with
 * margin_pct (dl: the log's part of the diagnosis, kept for lc's
 * lifetime). path names the log; cfg may be NULL. Returns 0, or -1 when
 * out of memory (lr is then freed).
 */
int vrt_logcheck_logonly_diagnose(struct vrt_logcheck *lc,
                                  struct vrt_logrun *lr,
                                  struct vrt_diag_log *dl,
                                  struct vrt_diagnosis *dg,
                                  const struct vrt_enginelog *log,
                                  const char *path,
                                  const struct vrt_model *cfg,
                                  unsigned margin_pct);

/* The recorded failure the log's fatal error names: 1 and *index into
 * r->fails, *why a sentence (VRT_LOGCHECK_TEXT bytes, may be NULL); 0 when
 * it names none (a refusal, no error, or nothing recorded matches). */
int vrt_logcheck_fatal_failure(const struct vrt_enginelog *log,
                               const struct vrt_trace *t,
                               const struct vrt_replay *r, size_t *index,
                               char *why);

/* The log's configuration as diagnosis flags into *f (zeroed first):
 * returns the VRT_DIAG_LOG_* bits of the fields it printed. */
unsigned vrt_logcheck_flags(const struct vrt_enginelog *log,
                            struct vrt_diag_flags *f);

/* What lc found, for the diagnosis (vrt_diagnose_run_log) into *out
 * (overwritten); lc must have been run. */
void vrt_logcheck_diag(const struct vrt_logcheck *lc,
                       struct vrt_diag_log *out);

/* "weights", "kv_cache", "activations", "cuda_graphs". */
const char *vrt_logcheck_quantity_name(int q);

#endif /* VRT_LOGCHECK_H */
