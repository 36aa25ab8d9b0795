/*
 * plan_internal.h — what the parts of the planner share, not for anyone
 * else: the engines' defaults, the byte formatting of notes, one
 * prediction's state (struct pctx) and the functions one part calls in
 * another. plan.c says which part owns what. Pure, single-threaded.
 */
#ifndef VRT_PLAN_INTERNAL_H
#define VRT_PLAN_INTERNAL_H

#include "plan.h"

#include <stddef.h>
#include <stdint.h>

/* TGI's TGI_WIGGLE_ROOM: the share of the free memory its KV may take. */
#define TGI_WIGGLE_MILLI 950
/* Engine defaults used when the command line gives no value. */
#define VLLM_UTIL_DEFAULT    900  /* --gpu-memory-utilization 0.9 */
#define TGI_FRAC_DEFAULT     1000 /* --cuda-memory-fraction 1.0 */
#define TRTLLM_FRAC_DEFAULT  900  /* free_gpu_memory_fraction 0.9 */
#define LLAMA_BATCH_DEFAULT  2048 /* common_params n_batch */
#define LLAMA_UBATCH_DEFAULT 512  /* common_params n_ubatch */
/* A calibration gap past this share of the capacity is worth saying. */
#define CALIBRATION_NOTE_PCT 2

/* Bytes for notes and explanations, in a compound literal of the calling
 * statement (plan.c's vrt_plan_gib_into says why). */
#define gib(b)  vrt_plan_gib_into((char[24]){0}, 24, (b))
#define sgib(b) vrt_plan_sgib_into((char[24]){0}, 24, (b))
#define frac_text(m)                                                           \
	vrt_plan_knob_value((char[16]){0}, 16, VRT_PLAN_FRACTION, (m))

/* One prediction (plan_predict.c): the plan, the configuration's knobs
 * (have: which are set), the row it fills and its explanation (or NULL). */
struct pctx {
	const struct vrt_plan *p;
	uint64_t k[VRT_PLAN_NKNOBS];
	unsigned have;
	struct vrt_plan_row *row;
	struct vrt_plan_explain *ex;
};

/* plan.c: SGLang's largest CUDA-graph batch (engine.h has no field for
 * it); bytes into buf (n bytes), signed with sgib */
extern const char *const vrt_plan_graph_bs_flag;
const char *vrt_plan_gib_into(char *buf, size_t n, uint64_t b);
const char *vrt_plan_sgib_into(char *buf, size_t n, int64_t b);

/* plan_predict.c: the row's devices, the shared terms, the lines */
uint64_t vrt_plan_predict_batch_activations(const struct pctx *c,
                                            uint64_t bytes, uint64_t tp_r,
                                            uint64_t tp, int *src);
int vrt_plan_predict_changed(const struct pctx *c, int k);
const char *vrt_plan_predict_flagname(const struct pctx *c, int k);
int vrt_plan_predict_has(const struct pctx *c, int k);
uint32_t vrt_plan_predict_inflight_of(struct pctx *c, uint64_t cap,
                                      int have_cap);
void vrt_plan_predict_kv_tokens(struct pctx *c, uint64_t kv, uint64_t tp,
                                uint64_t ctx, uint64_t block);
const struct vrt_plan_measure *vrt_plan_predict_measure_of(const struct pctx *c,
                                                           size_t i);
void vrt_plan_predict_note(struct pctx *c, int term, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void vrt_plan_predict_other_term(struct pctx *c, size_t i, uint64_t tp_r,
                                 uint64_t tp);
uint64_t vrt_plan_predict_per_request(const struct vrt_plan *p,
                                      const struct vrt_plan_measure *m,
                                      uint32_t nrec);
size_t vrt_plan_predict_rank_devices(struct pctx *c, uint64_t tp);
void vrt_plan_predict_refuse(struct pctx *c, int brk, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
void vrt_plan_predict_requests_term(struct pctx *c, size_t i, uint32_t n,
                                    uint64_t num, uint64_t den, uint64_t cap,
                                    int have_cap);
void vrt_plan_predict_say(struct pctx *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
uint64_t vrt_plan_predict_scale(uint64_t x, uint64_t num, uint64_t den);
void vrt_plan_predict_set_term(struct vrt_plan_device *d, int term,
                               uint64_t bytes, int source, int held);
void vrt_plan_predict_sharded_terms(struct pctx *c, size_t i, uint64_t act,
                                    int act_src, uint64_t tp_r, uint64_t tp);
uint64_t vrt_plan_predict_tp_of(const struct pctx *c);
uint64_t vrt_plan_predict_tp_recorded(const struct vrt_plan *p);

/* plan_rules.c: each engine's sizing rule */
void vrt_plan_rules_fraction(struct pctx *c);
void vrt_plan_rules_generic(struct pctx *c);
void vrt_plan_rules_llamacpp(struct pctx *c);
void vrt_plan_rules_sglang(struct pctx *c);
void vrt_plan_rules_vllm(struct pctx *c);
void vrt_plan_rules_sglang_fraction(struct vrt_plan *p);
int64_t vrt_plan_rules_vllm_available(uint64_t util_milli, uint64_t total,
                                      uint64_t w, uint64_t prof,
                                      uint64_t nontorch, uint64_t graphs,
                                      int inside);

#endif
