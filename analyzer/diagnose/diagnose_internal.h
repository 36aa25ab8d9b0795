/*
 * diagnose_internal.h — what the parts of the diagnosis share, not for
 * anyone else: the state of one diagnosis (struct ctx), the ladder's
 * terms, the advice list, and the functions one part calls in another.
 * diagnose.c says which part owns what. Every function here is pure and
 * single-threaded: it reads the trace and the replay and writes only the
 * diagnosis and c.
 */
#ifndef VRT_DIAGNOSE_INTERNAL_H
#define VRT_DIAGNOSE_INTERNAL_H

#include "diagnose.h"

#include <stddef.h>
#include <stdint.h>

/* A size in one of struct ctx's rotating buffers, so one sentence can
 * hold several; needs a `struct ctx *c` in scope. */
#define SZ(b) vrt_diagnose_sz(c, (b))

/* The settings vrt_diagnose_flag_name spells. */
enum { N_CTX, N_SEQS, N_UTIL, N_TP };

/* The host's memory over the run, from its HOST samples. */
struct host_state {
	int have;
	uint64_t min_available;
	uint64_t swap_total, min_swap_free;
	uint64_t max_rss;
	int64_t min_ts;
};

/* How one request's activations were known. */
enum {
	ONE_ALONE = 0,   /* measured while it was in flight alone */
	ONE_AVERAGE = 1, /* the requests in flight at the failure, on average */
	ONE_CACHE = 2,   /* lone requests grew nothing: the memory a profile or
	                    warm-up run left cached, over the configured
	                    sequences */
	ONE_ONLY = 3,    /* the failing request was the only one in flight */
};

/* The ladder's terms on the failing device, at the failure (diagnose.h).
 * The failing call's bytes are in the term it was building. */
struct terms {
	uint64_t weights, kv, graph, comm;
	uint64_t load_buffers; /* per-request phases' bytes loading left */
	uint64_t profile;      /* memory of a profile / warm-up run (cached) */
	uint64_t cache;  /* per-request phases kept from earlier requests */
	uint64_t growth; /* what the requests in flight grew */
	uint64_t one;    /* one request's activations */
	int one_how;
	uint64_t one_growth; /* its share of the growth: beyond what is kept */
	uint64_t room;       /* capacity - baseline - weights - reserves */
	uint64_t before;     /* held before `vramtrace attach`, unattributed:
	                        counted with the reserves */
};

/* One change the advice offers: what to do, what it costs, and how dear
 * that is (the share of a capacity it gives up, or a RANK_* below). */
struct advice {
	double rank;
	char action[VRT_DIAG_TEXT];
	char cost[VRT_DIAG_TEXT];
};

/* One diagnosis in progress: its inputs, the failure it rests on and the
 * numbers every part reads. */
struct ctx {
	struct vrt_diagnosis *d;
	const struct vrt_trace *t;
	const struct vrt_replay *r;
	const struct vrt_model *cfg;
	const struct vrt_replay_failure *f; /* the decisive failure, or NULL */
	const struct vrt_diag_log *log;     /* the engine's log, or NULL */
	struct vrt_replay_failure fcopy;    /* f as the log's stage makes it */
	int serving; /* the run reached serving: a request, or (the trace
	                saw none) the engine's ready line */
	struct vrt_diag_device *fd;     /* its device's budget */
	const struct vrt_process *root; /* the run's root, or NULL */
	uint64_t total, other, live, shortfall;
	uint64_t pool_kept; /* of the driver's count at the failure: what
	                       the run's stream-ordered pools kept */
	struct host_state host;
	int engine;
	struct terms x;
	int frung; /* the rung the failing call was building */
	int xrung; /* the first rung that does not fit, -1: none */
	char szbuf[8][32];
	unsigned szi;
	struct advice adv[VRT_DIAG_MAX_ITEMS / 3];
	size_t nadv;
	/* the shortest context advice may offer: the failing request's
	 * prompt (its tokens, times llama.cpp's slots), 0 unknown */
	uint64_t min_context;
	int free_estimated; /* f's free memory is the log's numbers' */
};

/* The ranks of advice whose cost is of another kind than a share of a
 * capacity (diagnose_advice.c). */
#define RANK_FREE      0.0  /* fixes a mistake: costs nothing the run used */
#define RANK_GRAPHS    0.25 /* fewer CUDA graph sizes */
#define RANK_EAGER     0.5  /* no CUDA graphs */
#define RANK_OFFLOAD   0.8  /* weights streamed from host memory */
#define RANK_QUALITY   1.5  /* lower-precision weights */
#define RANK_ELSEWHERE 1.8  /* wait for the card, or another one */
#define RANK_HARDWARE  2.0  /* more cards */
#define RANK_UNKNOWN   0.9  /* a share the run does not tell */

/* The action and the cost of advice a (NULL when the list is full). */
#define ACT(a, ...)                                                            \
	do {                                                                   \
		struct advice *a_ = (a);                                       \
		if (a_)                                                        \
			vrt_diagnose_say(a_->action, __VA_ARGS__);             \
	} while (0)
#define COST(a, ...)                                                           \
	do {                                                                   \
		struct advice *a_ = (a);                                       \
		if (a_)                                                        \
			vrt_diagnose_say(a_->cost, __VA_ARGS__);               \
	} while (0)

/* diagnose.c: the lines, the engine's spelling, the margin, the numbers */
void vrt_diagnose_action(struct vrt_diagnosis *d, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
void vrt_diagnose_add_other_pid(struct vrt_diagnosis *d, uint64_t pid);
struct advice *vrt_diagnose_advise(struct ctx *c, double rank);
void vrt_diagnose_confidence(struct ctx *c, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void vrt_diagnose_cost(struct vrt_diagnosis *d, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
uint64_t vrt_diagnose_dev_total(const struct vrt_trace *t,
                                const struct vrt_replay *r, size_t i);
struct vrt_diag_device *vrt_diagnose_dev(struct vrt_diagnosis *d, int32_t i);
int vrt_diagnose_died(const struct vrt_process *p);
const char *vrt_diagnose_engine_label(int engine);
const char *vrt_diagnose_flag_name(int engine, int what);
int vrt_diagnose_host_exhausted(const struct host_state *h);
void vrt_diagnose_how_ended(char *buf, size_t n, const struct vrt_process *p);
int vrt_diagnose_margin_pct(const struct ctx *c);
uint64_t vrt_diagnose_margin_bytes(const struct ctx *c);
uint64_t vrt_diagnose_running(const struct ctx *c, uint32_t inflight);
const char *vrt_diagnose_margin_words(struct ctx *c);
int vrt_diagnose_pid_in_run(const struct vrt_trace *t, uint64_t pid);
void vrt_diagnose_say(char *dst, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
const char *vrt_diagnose_set_to(char *buf, size_t n, struct ctx *c, int field,
                                uint64_t v);
const char *vrt_diagnose_setting(struct ctx *c, int field);
int vrt_diagnose_stopped(const struct vrt_process *p);
uint64_t vrt_diagnose_sub0(uint64_t a, uint64_t b);
const char *vrt_diagnose_sz(struct ctx *c, uint64_t b);
const char *vrt_diagnose_visible_devices(const struct vrt_trace *t,
                                         int32_t dev);

/* diagnose_evidence.c: the evidence lines every verdict shares */
void vrt_diagnose_evidence(struct vrt_diagnosis *d, const char *key,
                           int32_t dev, int unit, uint64_t value,
                           const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));
void vrt_diagnose_evidence_budget(struct ctx *c,
                                  const struct vrt_diag_device *x);
void vrt_diagnose_evidence_failure(struct ctx *c);
void vrt_diagnose_evidence_exit(struct ctx *c, const struct vrt_process *p);
void vrt_diagnose_evidence_near_miss(struct ctx *c);
void vrt_diagnose_evidence_others(struct ctx *c, int32_t dev, uint64_t bytes);

/* diagnose_ladder.c: which budget broke, and the road to a verdict */
void vrt_diagnose_ladder_climb(struct ctx *c);
int vrt_diagnose_ladder_data_problem(struct ctx *c);
void vrt_diagnose_ladder_driver_count(struct ctx *c);
void vrt_diagnose_ladder_failure_confidence(struct ctx *c);
int vrt_diagnose_ladder_pool_decides(const struct ctx *c);
void vrt_diagnose_ladder_with_failure(struct ctx *c);
void vrt_diagnose_ladder_without_failure(struct ctx *c);

/* diagnose_verdict.c: each verdict's lines and levers */
int32_t vrt_diagnose_verdict_misplaced_ranks(const struct ctx *c, int32_t dev,
                                             uint64_t *pids, size_t max,
                                             size_t *n, size_t *nidle);
const struct vrt_diag_device *vrt_diagnose_verdict_not_sharded(struct ctx *c,
                                                               uint64_t *want);
void vrt_diagnose_verdict_batch(struct ctx *c);
void vrt_diagnose_verdict_concurrency(struct ctx *c);
void vrt_diagnose_verdict_context(struct ctx *c);
void vrt_diagnose_verdict_host(struct ctx *c);
void vrt_diagnose_verdict_inconclusive(struct ctx *c, const char *detail,
                                       const char *why, const char *get);
void vrt_diagnose_verdict_none(struct ctx *c);
void vrt_diagnose_verdict_other(struct ctx *c);
void vrt_diagnose_verdict_pool(struct ctx *c);
void vrt_diagnose_verdict_program(struct ctx *c);
void vrt_diagnose_verdict_reserve(struct ctx *c);
void vrt_diagnose_verdict_weights(struct ctx *c);

/* diagnose_advice.c: the levers, sized to fit */
uint64_t vrt_diagnose_advice_fit(const struct ctx *c, uint64_t v, uint64_t have,
                                 uint64_t need);
uint64_t vrt_diagnose_advice_fraction_now(const struct ctx *c, int *is_default);
uint64_t vrt_diagnose_advice_kv_bytes(const struct ctx *c);
void vrt_diagnose_advice_cards(struct ctx *c, uint64_t n, const char *why);
void vrt_diagnose_advice_cpu_offload(struct ctx *c, uint64_t on_gpu);
void vrt_diagnose_advice_fraction(struct ctx *c, uint64_t free_b,
                                  const char *why);
void vrt_diagnose_advice_kv_quant(struct ctx *c, uint64_t need_free);
int vrt_diagnose_advice_ngl(struct ctx *c, uint64_t avail, int generic);
void vrt_diagnose_advice_quant(struct ctx *c, uint64_t budget);
int vrt_diagnose_advice_scale(struct ctx *c, int field, uint64_t v, int dflt,
                              uint64_t have, uint64_t need, const char *what,
                              const char *mem);
void vrt_diagnose_advice_seqs(struct ctx *c, uint64_t n, uint32_t inflight);
void vrt_diagnose_advice_step_tokens(struct ctx *c, uint64_t have,
                                     uint64_t need, const char *mem);
uint64_t vrt_diagnose_advice_to_free(const struct ctx *c, uint64_t need,
                                     uint64_t have);
uint64_t vrt_diagnose_advice_util_down(uint64_t milli);

/* diagnose_log.c: the engine's log, and the log alone */
void vrt_diagnose_log_decisive(struct ctx *c);
void vrt_diagnose_log_evidence(struct ctx *c);
void vrt_diagnose_log_ladder(struct ctx *c);
void vrt_diagnose_log_stage(struct ctx *c);
void vrt_diagnose_log_only_after(struct ctx *c);
int vrt_diagnose_log_only_missing(struct ctx *c);
void vrt_diagnose_log_only_none(struct ctx *c);
const char *vrt_diagnose_log_record_words(const struct ctx *c, char *buf,
                                          size_t n);
void vrt_diagnose_log_refusal_beside(struct ctx *c);
void vrt_diagnose_log_torch_account(struct ctx *c);
void vrt_diagnose_log_refusal(struct ctx *c);

/* diagnose_model.c: the model arithmetic */
void vrt_diagnose_model_evidence(struct ctx *c);
void vrt_diagnose_model_solve(struct ctx *c);

#endif
