/*
 * Plan: one recorded run in; the memory budget of other settings of the
 * same engine out, per device — the retest loop done as arithmetic
 * (`vramtrace plan`, docs/plan.md).
 *
 * Each prediction is built from terms, and every term says where it came
 * from (enum vrt_plan_source): measured in the run (the phase peaks of
 * replay.c, the single-request peak, the requests in flight), the
 * engine's log (reserved: nothing reads it yet), the model description
 * (model.h: KV bytes per token, layers), the engine's documented sizing
 * rule applied to those (vLLM's gpu_memory_utilization arithmetic,
 * SGLang's mem_fraction_static, llama.cpp's n_ctx x bytes per token, TGI's
 * cuda_memory_fraction after warm-up, TensorRT-LLM's free-memory
 * fraction), or an assumption stated in words. A term that cannot be
 * predicted is unknown: its row's peak is then a lower bound and its fit
 * is unsure, never a guess.
 *
 * The settings are knobs (enum vrt_plan_knob), read from the run's
 * command line through engine.h, varied by a grid (vrt_plan_set or
 * vrt_plan_default_grid) and predicted one configuration at a time
 * (vrt_plan_predict), optionally with the arithmetic line by line.
 *
 * Pure: no I/O, no printing, no globals. A plan copies what it keeps from
 * the trace and the replay, so both may be released after
 * vrt_plan_measure. Single-threaded.
 */
#ifndef VRT_PLAN_H
#define VRT_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"
#include "model/model.h"
#include "replay/replay.h"

#define VRT_PLAN_MAX_DEVICES    8
#define VRT_PLAN_MAX_VALUES     16
#define VRT_PLAN_MAX_ROWS       4096
#define VRT_PLAN_NOTE           160
#define VRT_PLAN_MAX_NOTES      12
#define VRT_PLAN_MAX_EXPLAIN    72
#define VRT_PLAN_DEFAULT_MARGIN 5 /* percent of a device's capacity */

/* Where a term came from. */
enum vrt_plan_source {
	VRT_PLAN_SRC_MEASURED = 0,   /* the run itself (a phase, a peak) */
	VRT_PLAN_SRC_LOG = 1,        /* the engine's own log lines */
	VRT_PLAN_SRC_CONFIG = 2,     /* the model description */
	VRT_PLAN_SRC_RULE = 3,       /* the engine's sizing rule applied to
	                                measured, logged or config terms */
	VRT_PLAN_SRC_ASSUMPTION = 4, /* stated in the term's note */
	VRT_PLAN_SRC_UNKNOWN = 5,    /* cannot be predicted */
	VRT_PLAN_SRC_COUNT = 6,
};

/* The settings a plan varies. Values are whole numbers; the memory
 * fraction in thousandths. */
enum vrt_plan_knob {
	VRT_PLAN_CONTEXT = 0,      /* max tokens of one sequence / -c */
	VRT_PLAN_CONCURRENCY = 1,  /* max sequences / slots */
	VRT_PLAN_FRACTION = 2,     /* memory fraction, x1000 */
	VRT_PLAN_PARALLEL = 3,     /* tensor-parallel degree */
	VRT_PLAN_GPU_LAYERS = 4,   /* llama.cpp -ngl */
	VRT_PLAN_BATCH_TOKENS = 5, /* tokens per forward batch / -b */
	VRT_PLAN_UBATCH = 6,       /* llama.cpp -ub */
	VRT_PLAN_GRAPH_BS = 7,     /* SGLang --cuda-graph-max-bs */
	VRT_PLAN_NKNOBS = 8,
};

/* The budgets of one device. */
enum vrt_plan_term_id {
	VRT_PLAN_WEIGHTS = 0,     /* the model's weights on the device */
	VRT_PLAN_ACTIVATIONS = 1, /* profile run, warm-up, compute buffer */
	VRT_PLAN_KV = 2,          /* the KV cache reserve (and its tables) */
	VRT_PLAN_GRAPHS = 3,      /* CUDA graphs */
	VRT_PLAN_OTHER = 4,       /* communicators, what loading left */
	VRT_PLAN_REQUESTS = 5,    /* the requests in flight */
	VRT_PLAN_NTERMS = 6,
};

enum vrt_plan_fit {
	VRT_PLAN_FITS = 0,   /* the peak fits with at least the margin */
	VRT_PLAN_TIGHT = 1,  /* fits, with less headroom than the margin */
	VRT_PLAN_NO = 2,     /* a budget breaks, or the engine refuses */
	VRT_PLAN_UNSURE = 3, /* a term is unknown and the rest fits */
};

/* The budget that breaks, in the ladder's order (diagnose.h). */
enum vrt_plan_break {
	VRT_PLAN_BREAK_NONE = 0,
	VRT_PLAN_BREAK_WEIGHTS = 1,
	VRT_PLAN_BREAK_ACTIVATIONS = 2, /* the profile / warm-up batch */
	VRT_PLAN_BREAK_RESERVES = 3,    /* KV cache, graphs */
	VRT_PLAN_BREAK_ONE_REQUEST = 4,
	VRT_PLAN_BREAK_IN_FLIGHT = 5,
	VRT_PLAN_BREAK_REFUSED = 6, /* the engine's own check refuses */
	VRT_PLAN_BREAK_DEVICES = 7, /* more devices than the run had */
};

enum vrt_plan_objective {
	VRT_PLAN_OBJ_CONCURRENCY = 0, /* most sequences of the context */
	VRT_PLAN_OBJ_CONTEXT = 1,     /* the longest context */
	VRT_PLAN_OBJ_THROUGHPUT = 2,  /* most tokens decoded together */
};

struct vrt_plan_term {
	uint64_t bytes;
	int source; /* enum vrt_plan_source (UNKNOWN: bytes is 0) */
	int held;   /* counts in the serving peak (a profile run's memory
	               freed before the KV reserve does not) */
};

struct vrt_plan_device {
	int32_t device;    /* index into the run's devices */
	uint64_t capacity; /* the device's total */
	uint64_t other;    /* other processes, as measured (diagnose.h) */
	struct vrt_plan_term term[VRT_PLAN_NTERMS];
	uint64_t load_peak; /* while loading: weights + activations */
	uint64_t peak;      /* the most at any stage (lower bound when a
	                       term is unknown) */
	uint64_t headroom;  /* capacity - other - peak, 0 when negative */
	int over;           /* the peak does not fit */
};

/* One configuration and its prediction. */
struct vrt_plan_row {
	uint64_t knob[VRT_PLAN_NKNOBS];
	unsigned have; /* bit k: knob k has a value */
	int recorded;  /* the run's own settings */
	int best;      /* the objective's choice */
	int fit;       /* enum vrt_plan_fit */
	int brk;       /* enum vrt_plan_break */
	char reason[2 * VRT_PLAN_NOTE];
	char unsure[VRT_PLAN_NOTE]; /* a check the plan cannot make, or "" */
	uint32_t inflight;          /* requests in flight it plans for */
	int have_tokens;            /* KV tokens known (model or rule) */
	uint64_t kv_tokens;         /* tokens the KV cache holds */
	uint64_t max_concurrency;   /* sequences of the context it holds */
	uint64_t context_per_seq;   /* llama.cpp: -c / -np per slot */
	char note[VRT_PLAN_NTERMS][VRT_PLAN_NOTE]; /* how each term came */
	size_t ndev;
	struct vrt_plan_device dev[VRT_PLAN_MAX_DEVICES];
};

/* What the run shows of one device. */
struct vrt_plan_measure {
	int32_t device;
	uint64_t capacity, other;
	uint64_t weights, kv, profile, profile_held, graphs, comm;
	uint64_t residue;     /* per-request phases when serving began:
	                         what loading left there */
	uint64_t demand_peak; /* per-request phases at the device's peak */
	uint64_t peak;
	int64_t peak_ts; /* ns since the run's start */
	int have_single;
	uint64_t single; /* one request's growth alone (replay.h) */
};

struct vrt_plan_axis {
	size_t n;
	uint64_t v[VRT_PLAN_MAX_VALUES];
};

/* The arithmetic of one prediction, line by line (--explain). */
struct vrt_plan_explain {
	size_t n;
	char line[VRT_PLAN_MAX_EXPLAIN][VRT_PLAN_NOTE + 40];
};

struct vrt_plan {
	/* the run */
	int engine;                            /* enum vrt_engine */
	const char *spelling[VRT_PLAN_NKNOBS]; /* the engine's flag, or
	                                           NULL: it has none */
	uint64_t rec[VRT_PLAN_NKNOBS];
	unsigned rec_have;
	const char *rec_from[VRT_PLAN_NKNOBS]; /* "command line", ... */
	size_t ndev;
	struct vrt_plan_measure dev[VRT_PLAN_MAX_DEVICES];
	size_t inventory;    /* devices the run's driver reported */
	size_t template_dev; /* the rank-0 device: most weights */
	int serving;         /* a request was served */
	uint32_t load;       /* most requests in flight (the traffic) */
	int caching;         /* the profile's memory stayed cached */
	int failed;          /* an allocation failed for good: the run
	                        stopped short of its traffic's peak */
	uint64_t single;     /* one request's growth, the run's */
	int have_single;
	/* the model description (--model-config), with the run's KV types */
	int have_model;
	struct vrt_model model;
	uint64_t block_tokens; /* the engine's KV block (1: none) */
	/* the engine's rule calibrated on the run */
	int graphs_inside; /* vLLM: graphs counted in the fraction */
	/* settings */
	unsigned margin_pct;
	int objective;
	/* the grid: a value list per knob (n 0: the recorded value) */
	struct vrt_plan_axis axis[VRT_PLAN_NKNOBS];
	/* what the run cannot tell, and what every row assumes */
	char unknown[VRT_PLAN_MAX_NOTES][VRT_PLAN_NOTE];
	size_t nunknown;
	char assume[VRT_PLAN_MAX_NOTES][VRT_PLAN_NOTE];
	size_t nassume;
	/* the result */
	struct vrt_plan_row *rows;
	size_t nrows;
	size_t best;                  /* SIZE_MAX: nothing fits */
	struct vrt_plan_row recorded; /* the run's own settings */
};

/* "measured", "log", "config", "rule", "assumption", "unknown". */
const char *vrt_plan_source_name(int source);
/* "weights", "activations", "kv_cache", "cuda_graph", "other",
 * "requests". */
const char *vrt_plan_term_name(int term);
/* "context_length", "concurrency", "memory_fraction",
 * "tensor_parallel", "gpu_layers", "batch_tokens", "ubatch",
 * "cuda_graph_max_bs". */
const char *vrt_plan_knob_name(int knob);
/* "yes", "tight", "no", "unsure". */
const char *vrt_plan_fit_name(int fit);
/* NULL (none), "weights", "activations", "reserves", "one_request",
 * "in_flight", "refused", "devices". */
const char *vrt_plan_break_name(int brk);
/* "concurrency", "context", "throughput". */
const char *vrt_plan_objective_name(int objective);

/*
 * Reads the run into *p (zeroed first): its engine and recorded settings
 * (engine.h), each device's measured budgets, the requests in flight and
 * one request's growth; cfg (may be NULL) is the model description,
 * solved with the run's KV cache types. Never fails.
 */
void vrt_plan_measure(struct vrt_plan *p, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg);

/*
 * One --set: "FLAG=V1,V2,..." where FLAG is the engine's flag (with or
 * without its dashes, any spelling the engine accepts: "max-model-len",
 * "-c", "ctx-size") or a knob name ("context_length"). Values are whole
 * numbers (fractions as decimals, e.g. 0.85). Returns 0, or -1 with the
 * reason in msg.
 */
int vrt_plan_set(struct vrt_plan *p, const char *spec, char *msg, size_t n);

/* The neighbourhood of the recorded settings for knobs no --set named:
 * context and concurrency halved and doubled, the memory fraction 0.05
 * either side (each only where the run gives a value). */
void vrt_plan_default_grid(struct vrt_plan *p);

/* Before vrt_plan_default_grid: a value to try for knob (what `analyze`
 * advised for the run); that knob's axis is then the recorded value and
 * the advised ones, not the neighbourhood. Returns 0, -1 when the axis is
 * full or the knob unknown. */
int vrt_plan_try(struct vrt_plan *p, int knob, uint64_t v);

/* Predicts every configuration of the grid (the product of its axes, at
 * most VRT_PLAN_MAX_ROWS) and the recorded one, and marks the best by
 * p->objective. Returns 0, -1 when the grid is too large (msg says so),
 * -2 when out of memory. */
int vrt_plan_run(struct vrt_plan *p, char *msg, size_t n);

/* Predicts the configuration knob[] (bits in have) into *row; ex, when
 * not NULL, receives the arithmetic line by line. */
void vrt_plan_predict(const struct vrt_plan *p, const uint64_t *knob,
                      unsigned have, struct vrt_plan_row *row,
                      struct vrt_plan_explain *ex);

/* A knob's value as written on a command line ("8192", "0.85"). */
const char *vrt_plan_knob_value(char *buf, size_t n, int knob, uint64_t v);

void vrt_plan_free(struct vrt_plan *p);

#endif /* VRT_PLAN_H */
