/*
 * diagnose.c — the verdict of diagnose.h from a replayed trace: which
 * budget broke, the numbers that show it, and what to change in the
 * engine's own flags. Pure: reads the trace and the replay, writes only
 * *d; no I/O, no globals, single-threaded. Sentences are built here (they
 * carry the numbers); reports only print them.
 *
 * This file owns the entry point (vrt_diagnose_run_opts: the order of the
 * steps below), the names, the run's numbers (each device's budgets, the
 * engine's flags, the host samples), how processes ended, and what every
 * part shares (diagnose_internal.h): the lines of a diagnosis (actions,
 * costs, the advice list), the engine's spelling of a setting, the
 * margin, sizes in words, the confidence. The other parts:
 *   diagnose_ladder.c    the ladder and the road to a verdict
 *   diagnose_verdict.c   each verdict's evidence and advice
 *   diagnose_advice.c    the levers: each change sized to fit, and its cost
 *   diagnose_evidence.c  the evidence lines every verdict shares
 *   diagnose_log.c       the engine's log beside the trace, and the log alone
 *   diagnose_model.c     the model arithmetic (--model-config)
 */
#include "diagnose_internal.h"
#include "replay/callpath.h"
#include "base/text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- names ------------------------------------------------------------- */

const char *vrt_diagnose_verdict_name(int verdict)
{
	switch (verdict) {
	case VRT_VERDICT_WEIGHTS:
		return "weights";
	case VRT_VERDICT_KV_CACHE:
		return "kv_cache";
	case VRT_VERDICT_CONCURRENCY:
		return "concurrency";
	case VRT_VERDICT_HOST_MEMORY:
		return "host_memory";
	case VRT_VERDICT_OTHER_PROCESSES:
		return "other_processes";
	case VRT_VERDICT_INCONCLUSIVE:
		return "inconclusive";
	}
	return "none";
}

const char *vrt_diagnose_confidence_name(int confidence)
{
	static const char *const names[] = {"high", "medium", "low"};
	return confidence >= 0 && confidence < 3 ? names[confidence] : "low";
}

const char *vrt_diagnose_rung_name(int rung)
{
	static const char *const names[VRT_RUNG_COUNT] = {
	        "baseline", "weights", "reserves", "activations", "in_flight"};
	return rung >= 0 && rung < VRT_RUNG_COUNT ? names[rung] : NULL;
}

const char *vrt_diagnose_unit_name(int unit)
{
	static const char *const names[] = {"bytes", "count",  "seconds",
	                                    "pid",   "tokens", "percent"};
	return unit >= 0 && unit < 6 ? names[unit] : "count";
}

/* ---- the lines of a diagnosis ------------------------------------------ */

static void line(char (*arr)[VRT_DIAG_TEXT], size_t *n, size_t max,
                 const char *fmt, va_list ap)
{
	if (*n >= max)
		return;
	vsnprintf(arr[(*n)++], VRT_DIAG_TEXT, fmt, ap);
}

void vrt_diagnose_action(struct vrt_diagnosis *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line(d->actions, &d->nactions,
	     sizeof(d->actions) / sizeof(d->actions[0]), fmt, ap);
	va_end(ap);
}

void vrt_diagnose_cost(struct vrt_diagnosis *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line(d->costs, &d->ncosts, sizeof(d->costs) / sizeof(d->costs[0]), fmt,
	     ap);
	va_end(ap);
}

static void verify(struct vrt_diagnosis *d, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void verify(struct vrt_diagnosis *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line(d->verify, &d->nverify, sizeof(d->verify) / sizeof(d->verify[0]),
	     fmt, ap);
	va_end(ap);
}

/* ---- the engine and its flags ------------------------------------------ */

/* The engine's spelling of a setting (engine.h), or generic words; NULL
 * where the engine has no such setting (what: N_CTX, ...). */
const char *vrt_diagnose_flag_name(int engine, int what)
{
	static const int field[] = {VRT_ENGINE_CONTEXT, VRT_ENGINE_CONCURRENCY,
	                            VRT_ENGINE_MEM_FRACTION,
	                            VRT_ENGINE_PARALLEL};
	return vrt_engine_info(engine)->setting[field[what]];
}

/* The variable that picks a process's GPUs: HIP's on AMD cards (ROCm also
 * honours CUDA_VISIBLE_DEVICES, but its own name is the one to write). */
const char *vrt_diagnose_visible_devices(const struct vrt_trace *t, int32_t dev)
{
	if (dev >= 0 && (size_t)dev < t->ndevices &&
	    t->devices[dev].vendor == VRT_VENDOR_HIP)
		return "HIP_VISIBLE_DEVICES";
	return "CUDA_VISIBLE_DEVICES";
}

const char *vrt_diagnose_engine_label(int engine)
{
	return vrt_engine_info(engine)->prefix;
}

/* ---- the numbers ----------------------------------------------------------
 */

uint64_t vrt_diagnose_dev_total(const struct vrt_trace *t,
                                const struct vrt_replay *r, size_t i)
{
	if (t->devices[i].have_total)
		return t->devices[i].total_bytes;
	return r->dev[i].have_baseline ? r->dev[i].probe_total_bytes : 0;
}

static int dev_touched(const struct vrt_replay_device *d)
{
	int fam;

	if (d->have_baseline)
		return 1;
	for (fam = 0; fam < VRT_FAM_COUNT; fam++)
		if (d->fam[fam].allocs || d->fam[fam].failed)
			return 1;
	return 0;
}

int vrt_diagnose_pid_in_run(const struct vrt_trace *t, uint64_t pid)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return 1;
	return 0;
}

void vrt_diagnose_add_other_pid(struct vrt_diagnosis *d, uint64_t pid)
{
	size_t i;

	for (i = 0; i < d->nother_pids; i++)
		if (d->other_pids[i] == pid)
			return;
	if (d->nother_pids < VRT_DIAG_MAX_PIDS)
		d->other_pids[d->nother_pids++] = pid;
}

/* Most bytes NVML saw other processes (not of this run) hold on device
 * dev at one sample; their PIDs go into d. */
static uint64_t nvml_other(struct vrt_diagnosis *d, const struct vrt_trace *t,
                           int32_t dev)
{
	uint64_t best = 0;
	size_t i, k;

	for (i = 0; i < t->nsamples; i++) {
		const struct vrt_sample *s = &t->samples[i];
		uint64_t sum = 0;
		if (s->kind != VRT_SAMPLE_DEVICE || s->device != dev)
			continue;
		for (k = 0; k < s->npids; k++) {
			const struct vrt_sample_pid *p;
			if ((size_t)s->first_pid + k >= t->nsample_pids)
				break;
			p = &t->sample_pids[s->first_pid + k];
			if (vrt_diagnose_pid_in_run(t, p->pid))
				continue;
			sum += p->used_bytes;
			vrt_diagnose_add_other_pid(d, p->pid);
		}
		if (sum > best)
			best = sum;
	}
	return best;
}

static void host_samples(const struct vrt_trace *t, struct host_state *h)
{
	size_t i;

	memset(h, 0, sizeof(*h));
	for (i = 0; i < t->nsamples; i++) {
		const struct vrt_sample *s = &t->samples[i];
		if (s->kind != VRT_SAMPLE_HOST)
			continue;
		if (!h->have || s->total < h->min_available) {
			h->min_available = s->total;
			h->min_ts = s->ts;
		}
		if (s->swap_total > h->swap_total)
			h->swap_total = s->swap_total;
		if (s->swap_total &&
		    (!h->min_swap_free || s->swap_free < h->min_swap_free))
			h->min_swap_free = s->swap_free;
		if (s->used > h->max_rss)
			h->max_rss = s->used;
		h->have = 1;
	}
}

/* MemAvailable near zero, and swap (if the machine has any) nearly
 * full: the kernel is about to kill something. */
int vrt_diagnose_host_exhausted(const struct host_state *h)
{
	if (!h->have || h->min_available >= VRT_DIAG_HOST_LOW_BYTES)
		return 0;
	return !h->swap_total || h->min_swap_free * 20 < h->swap_total;
}

struct vrt_diag_device *vrt_diagnose_dev(struct vrt_diagnosis *d, int32_t i)
{
	size_t k;

	for (k = 0; k < d->ndevices; k++)
		if (d->devices[k].device == i)
			return &d->devices[k];
	return NULL;
}

static void devices(struct vrt_diagnosis *d, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	size_t i;

	for (i = 0; i < t->ndevices && i < r->ndevices; i++) {
		const struct vrt_replay_device *rd = &r->dev[i];
		struct vrt_diag_device *x;
		uint64_t used;
		if (!dev_touched(rd) ||
		    d->ndevices >= sizeof(d->devices) / sizeof(d->devices[0]))
			continue;
		x = &d->devices[d->ndevices++];
		x->device = (int32_t)i;
		x->total_bytes = vrt_diagnose_dev_total(t, r, i);
		x->other_bytes =
		        rd->have_baseline ? rd->baseline_used_bytes : 0;
		used = nvml_other(d, t, (int32_t)i);
		if (used > x->other_bytes)
			x->other_bytes = used;
		x->weights_bytes = rd->phase[VRT_PHASE_weights].peak_bytes;
		x->kv_bytes = rd->phase[VRT_PHASE_kv_cache].peak_bytes +
		              rd->phase[VRT_LOAD_PHASE_INFERRED_KV].peak_bytes;
		x->peak_bytes = rd->peak_bytes;
		used = x->other_bytes + x->peak_bytes;
		x->headroom_bytes =
		        x->total_bytes > used ? x->total_bytes - used : 0;
	}
}

size_t vrt_diagnose_flags(struct vrt_diag_flags *f, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	struct vrt_model_budget b;
	size_t k;

	memset(f, 0, sizeof(*f));
	vrt_engine_of_run(&er, t);
	f->engine = er.engine;
	vrt_engine_uint(er.value[VRT_ENGINE_CONTEXT], &f->max_model_len);
	vrt_engine_uint(er.value[VRT_ENGINE_CONCURRENCY], &f->max_num_seqs);
	vrt_engine_uint(er.value[VRT_ENGINE_PARALLEL], &f->tp);
	vrt_engine_fraction_milli(er.value[VRT_ENGINE_MEM_FRACTION],
	                          &f->mem_util_milli);
	f->have_ngl = vrt_engine_uint(er.value[VRT_ENGINE_GPU_LAYERS], &f->ngl);
	vrt_engine_uint(er.value[VRT_ENGINE_PIPELINE], &f->pp);
	vrt_engine_uint(er.value[VRT_ENGINE_BATCH_TOKENS], &f->batch_tokens);
	vrt_engine_uint(er.value[VRT_ENGINE_UBATCH], &f->ubatch);
	/* llama.cpp runs n_ubatch = min(-ub, -b): a -ub above -b is not
	 * what it ran with */
	if ((f->engine == VRT_ENGINE_LLAMACPP ||
	     f->engine == VRT_ENGINE_OLLAMA) &&
	    f->batch_tokens && f->ubatch > f->batch_tokens)
		f->ubatch = f->batch_tokens;
	f->one_device = er.value[VRT_ENGINE_SPLIT_MODE] &&
	                !strcmp(er.value[VRT_ENGINE_SPLIT_MODE], "none");
	/* "-fa on" (and the older bare "-fa": what follows is another
	 * option); "-fa auto" lets llama.cpp decide: not known on */
	if (er.value[VRT_ENGINE_FLASH_ATTN]) {
		const char *v = er.value[VRT_ENGINE_FLASH_ATTN];
		f->flash_attn = !strcmp(v, "on") || !strcmp(v, "1") ||
		                !strcmp(v, "true") || !strcmp(v, "enabled") ||
		                v[0] == '-';
	}
	if (f->engine == VRT_ENGINE_TGI)
		f->max_total_tokens = f->max_model_len;
	/* The KV cache types the command lines ask for (-ctk/-ctv,
	 * --kv-cache-dtype), the first process's that names one. */
	memset(&b, 0, sizeof(b));
	for (k = 0; k < t->nprocs; k++)
		vrt_model_budget_argv(&b, t->procs[k].argv, t->procs[k].argc);
	snprintf(f->cache_k, sizeof(f->cache_k), "%s", b.kv_dtype);
	snprintf(f->cache_v, sizeof(f->cache_v), "%s",
	         b.kv_dtype_v[0] ? b.kv_dtype_v : b.kv_dtype);
	return er.root;
}

const char *vrt_diagnose_sz(struct ctx *c, uint64_t b)
{
	c->szi = (c->szi + 1) % 8;
	/* GiB at most: sentences compare sizes, so they share a unit. */
	return vrt_text_bytes_in(c->szbuf[c->szi], sizeof(c->szbuf[0]),
	                         (double)b, 2, VRT_UNIT_B, VRT_UNIT_GIB);
}

static uint64_t live_sum(const struct vrt_replay_failure *f)
{
	uint64_t s = 0;
	unsigned k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		s += f->live_by_phase[k];
	return s;
}

uint64_t vrt_diagnose_sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The confidence falls to level (never rises); the first reason given
 * for the lowest level is kept. */
void vrt_diagnose_confidence(struct ctx *c, int level, const char *fmt, ...)
{
	struct vrt_diagnosis *d = c->d;
	va_list ap;

	if (level < d->confidence ||
	    (level == d->confidence && d->confidence_reason[0]))
		return;
	d->confidence = level;
	va_start(ap, fmt);
	vsnprintf(d->confidence_reason, sizeof(d->confidence_reason), fmt, ap);
	va_end(ap);
}

/* ---- how processes ended ------------------------------------------------ */

int vrt_diagnose_died(const struct vrt_process *p)
{
	return p->exit_kind == VRT_EXIT_SIGNAL ||
	       (p->exit_kind == VRT_EXIT_CODE && p->exit_code != 0) ||
	       (p->exit_kind == VRT_EXIT_NONE && p->truncated && !p->running);
}

/* Stopped on purpose: SIGHUP, SIGINT, SIGTERM, or the shell's 128 + N
 * for them (a server is usually ended so). */
int vrt_diagnose_stopped(const struct vrt_process *p)
{
	int n = p->exit_code;

	if (p->exit_kind == VRT_EXIT_CODE && n > 128)
		n -= 128;
	else if (p->exit_kind != VRT_EXIT_SIGNAL)
		return 0;
	return n == 1 || n == 2 || n == 15;
}

void vrt_diagnose_how_ended(char *buf, size_t n, const struct vrt_process *p)
{
	if (p->exit_kind == VRT_EXIT_NONE && p->ended)
		snprintf(buf, n, "%s", p->ended);
	else if (p->exit_kind == VRT_EXIT_SIGNAL)
		snprintf(buf, n, "was killed by signal %d", p->exit_code);
	else if (p->exit_kind == VRT_EXIT_CODE)
		snprintf(buf, n, "exited with status %d", p->exit_code);
	else if (p->running)
		snprintf(buf, n, "is still running (recording)");
	else if (p->truncated)
		snprintf(buf, n, "died: its trace ends without a clean exit");
	else
		snprintf(buf, n, "ended (exit status not recorded)");
}

const char *vrt_diagnose_setting(struct ctx *c, int field)
{
	return vrt_engine_info(c->engine)->setting[field];
}

/* "--max-num-seqs 4" or "OLLAMA_NUM_PARALLEL=4" into buf. */
const char *vrt_diagnose_set_to(char *buf, size_t n, struct ctx *c, int field,
                                uint64_t v)
{
	snprintf(buf, n, "%s%s%" PRIu64, vrt_diagnose_setting(c, field),
	         vrt_engine_info(c->engine)->env_style ? "=" : " ", v);
	return buf;
}

int vrt_diagnose_margin_pct(const struct ctx *c)
{
	return (int)c->d->margin_pct;
}

/* The requests that run at once of inflight received (at least 1): at
 * most the engine's cap on sequences when the run gives it; the rest wait
 * in its queue and hold no activations. */
uint64_t vrt_diagnose_running(const struct ctx *c, uint32_t inflight)
{
	uint64_t cap = c->d->flags.max_num_seqs;
	uint64_t n = inflight ? inflight : 1;
	return cap && cap < n ? cap : n;
}

/* The bytes the margin keeps free on the device advice is sized for
 * (the failing one, else the tightest); 0 with no capacity known. */
uint64_t vrt_diagnose_margin_bytes(const struct ctx *c)
{
	return vrt_diag_margin_bytes(c->total, c->d->margin_pct);
}

/* "with a 5% margin (4.00 GiB of the card free)" (or "with no margin"
 * for --margin 0). */
const char *vrt_diagnose_margin_words(struct ctx *c)
{
	static char buf[80];
	char sz[32];
	int n;

	if (!vrt_diagnose_margin_pct(c))
		return "with no margin (--margin 0)";
	n = snprintf(buf, sizeof(buf), "with a %d%% margin",
	             vrt_diagnose_margin_pct(c));
	if (c->total)
		snprintf(buf + n, sizeof(buf) - (size_t)n,
		         " (%s of the card free)",
		         vrt_text_bytes_in(sz, sizeof(sz),
		                           (double)vrt_diagnose_margin_bytes(c),
		                           2, VRT_UNIT_B, VRT_UNIT_GIB));
	return buf;
}

struct advice *vrt_diagnose_advise(struct ctx *c, double rank)
{
	struct advice *a;

	if (c->nadv >= sizeof(c->adv) / sizeof(c->adv[0]))
		return NULL;
	a = &c->adv[c->nadv++];
	memset(a, 0, sizeof(*a));
	a->rank = rank;
	return a;
}

void vrt_diagnose_say(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, VRT_DIAG_TEXT, fmt, ap);
	va_end(ap);
}


/* The advice into d, cheapest first (a stable sort: equal ranks keep the
 * order they were offered in). */
static void emit_advice(struct ctx *c)
{
	size_t i, j;

	for (i = 1; i < c->nadv; i++)
		for (j = i; j > 0 && c->adv[j - 1].rank > c->adv[j].rank; j--) {
			struct advice tmp = c->adv[j];
			c->adv[j] = c->adv[j - 1];
			c->adv[j - 1] = tmp;
		}
	for (i = 0; i < c->nadv; i++) {
		vrt_diagnose_action(c->d, "%s", c->adv[i].action);
		vrt_diagnose_cost(c->d, "%s", c->adv[i].cost);
	}
}

unsigned vrt_diagnose_fill_flags(struct vrt_diag_flags *f,
                                 const struct vrt_diag_flags *log,
                                 unsigned printed)
{
	unsigned got = 0;

#define FILL(bit, field)                                                    \
	do {                                                                \
		if ((printed & (bit)) && !f->field && log->field) {         \
			f->field = log->field;                              \
			got |= (bit);                                       \
		}                                                           \
	} while (0)
	FILL(VRT_DIAG_LOG_ENGINE, engine);
	FILL(VRT_DIAG_LOG_CTX, max_model_len);
	FILL(VRT_DIAG_LOG_SEQS, max_num_seqs);
	FILL(VRT_DIAG_LOG_TP, tp);
	FILL(VRT_DIAG_LOG_UTIL, mem_util_milli);
	FILL(VRT_DIAG_LOG_TOTAL_TOKENS, max_total_tokens);
	FILL(VRT_DIAG_LOG_UBATCH, ubatch);
	FILL(VRT_DIAG_LOG_BATCH, batch_tokens);
	FILL(VRT_DIAG_LOG_FLASH_ATTN, flash_attn);
#undef FILL
	if ((printed & VRT_DIAG_LOG_NGL) && !f->have_ngl && log->have_ngl) {
		f->ngl = log->ngl;
		f->have_ngl = 1;
		got |= VRT_DIAG_LOG_NGL;
	}
	return got;
}

/* The reason for a verdict nothing made less sure. */
static void high_reason(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	char how[96] = "";

	if (c->f)
		vrt_diagnose_how_ended(how, sizeof(how),
		                       &c->t->procs[c->f->proc]);
	switch (d->verdict) {
	case VRT_VERDICT_NONE:
		snprintf(d->confidence_reason, sizeof(d->confidence_reason),
		         "no allocation failed for good%s",
		         c->root && c->root->exit_kind == VRT_EXIT_CODE
		                 ? " and the run exited with status 0"
		                 : "");
		break;
	case VRT_VERDICT_HOST_MEMORY:
		snprintf(d->confidence_reason, sizeof(d->confidence_reason),
		         "a page-locked host allocation failed");
		break;
	case VRT_VERDICT_OTHER_PROCESSES:
		snprintf(d->confidence_reason, sizeof(d->confidence_reason),
		         "without the memory other processes held the call "
		         "would have fit");
		break;
	default:
		if (d->source_log)
			snprintf(d->confidence_reason,
			         sizeof(d->confidence_reason),
			         "the fatal error the engine's log ends with "
			         "(line %u), its phase and the ladder of the "
			         "log's "
			         "numbers agree",
			         c->log->fatal_line);
		else if (d->log_fatal)
			snprintf(d->confidence_reason,
			         sizeof(d->confidence_reason),
			         "the fatal failure the engine's log names "
			         "(line "
			         "%u; PID %" PRIu64 " %s), its phase and the "
			         "ladder agree",
			         c->log->fatal_line,
			         c->t->procs[c->f->proc].pid, how);
		else
			snprintf(d->confidence_reason,
			         sizeof(d->confidence_reason),
			         "the fatal failure (PID %" PRIu64 " %s), its "
			         "phase and the ladder agree",
			         c->t->procs[c->f->proc].pid, how);
	}
}

void vrt_diagnose_run(struct vrt_diagnosis *d, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg)
{
	vrt_diagnose_run_opts(d, t, r, cfg, NULL);
}

void vrt_diagnose_run_log(struct vrt_diagnosis *d, const struct vrt_trace *t,
                          const struct vrt_replay *r,
                          const struct vrt_model *cfg,
                          const struct vrt_diag_log *log)
{
	struct vrt_diag_options o = {VRT_DIAG_MARGIN_PCT, log};

	vrt_diagnose_run_opts(d, t, r, cfg, &o);
}

void vrt_diagnose_run_opts(struct vrt_diagnosis *d, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_model *cfg,
                           const struct vrt_diag_options *o)
{
	const struct vrt_diag_log *log = o ? o->log : NULL;
	struct ctx c;
	size_t root;
	int refusal;

	memset(d, 0, sizeof(*d));
	d->margin_pct = o ? o->margin_pct : VRT_DIAG_MARGIN_PCT;
	memset(&c, 0, sizeof(c));
	c.d = d;
	c.t = t;
	c.r = r;
	c.cfg = cfg;
	c.log = log;
	d->device = -1;
	d->rung = -1;
	d->confidence = VRT_CONFIDENCE_HIGH;
	root = vrt_diagnose_flags(&d->flags, t);
	/* the engine's configuration, before any action is written */
	d->have_log = log != NULL;
	if (log)
		d->flags_from_log = vrt_diagnose_fill_flags(
		        &d->flags, &log->flags, log->printed);
	if (log && log->log_only) {
		d->source_log = 1;
		d->rungs_read = log->rungs_read;
		snprintf(d->record_command, sizeof(d->record_command), "%s",
		         log->record_command);
	}
	/* advice never offers a context the failing prompt does not fit */
	if (log && log->prompt_known && log->prompt_tokens)
		c.min_context = log->prompt_tokens *
		                (d->flags.engine == VRT_ENGINE_LLAMACPP &&
		                                 d->flags.max_num_seqs > 1
		                         ? d->flags.max_num_seqs
		                         : 1);
	c.root = root < t->nprocs ? &t->procs[root] : NULL;
	c.engine = d->flags.engine;
	devices(d, t, r);
	host_samples(t, &c.host);
	vrt_diagnose_model_solve(&c);
	vrt_diagnose_log_decisive(&c);
	vrt_diagnose_log_stage(&c);
	snprintf(d->stage, sizeof(d->stage), "%s",
	         c.f         ? (c.f->after_ready ? "request" : "load")
	         : c.serving ? "request"
	                     : "load");
	if (c.f) {
		d->failing_stack = c.f->stack;
		vrt_callpath_site(t, c.f->stack, d->failing_site,
		                  sizeof(d->failing_site));
	}
	if (c.f && c.f->device >= 0) {
		d->device = c.f->device;
		c.fd = vrt_diagnose_dev(d, c.f->device);
		c.total = c.fd ? c.fd->total_bytes : 0;
		if (!c.total && c.f->have_info)
			c.total = c.f->total_bytes;
		c.other = c.fd ? c.fd->other_bytes : 0;
		c.live = live_sum(c.f);
		/* A log's failure without the driver's free memory (ggml's):
		 * about what the capacity less what the log accounts for
		 * leaves, so the advice can size its numbers. */
		if (d->source_log && !c.f->have_info && c.total &&
		    c.total > c.other + c.live) {
			if (c.f != &c.fcopy)
				c.fcopy = *c.f;
			c.fcopy.have_info = 1;
			c.fcopy.free_bytes = c.total - c.other - c.live;
			c.fcopy.total_bytes = c.total;
			c.f = &c.fcopy;
			c.free_estimated = 1;
		}
		vrt_diagnose_ladder_driver_count(&c);
		c.shortfall =
		        c.f->have_info && c.f->requested_bytes > c.f->free_bytes
		                ? c.f->requested_bytes - c.f->free_bytes
		                : c.f->requested_bytes;
	}
	/* A refusal is the verdict unless a failure the process did not
	 * survive stands behind the run's end. */
	refusal = log && log->have_refusal &&
	          (!c.f || (!c.f->fatal && !d->log_fatal));
	if (vrt_diagnose_ladder_data_problem(&c))
		; /* inconclusive: the numbers cannot be read */
	else if (refusal)
		vrt_diagnose_log_refusal(&c);
	else if (c.f && (c.f->family == VRT_FAM_PINNED ||
	                 c.f->family == VRT_FAM_REGISTERED))
		vrt_diagnose_verdict_host(&c);
	else if (!c.f && d->source_log)
		vrt_diagnose_log_only_none(&c);
	else if (!c.f)
		vrt_diagnose_ladder_without_failure(&c);
	else if (c.f->device < 0 || (size_t)c.f->device >= r->ndevices)
		vrt_diagnose_verdict_inconclusive(
		        &c, "device_unknown",
		        "the failing call named no device (no "
		        "current context)",
		        "the trace cannot place it; the server's "
		        "log may");
	else if (c.other >= VRT_DIAG_OTHER_MIN_BYTES &&
	         c.other * 20 >= c.total && c.other >= c.shortfall &&
	         /* a log's failure of no printed size: others must hold a
	          * tenth of the card to be the cause */
	         (!d->source_log || c.f->requested_bytes ||
	          c.other * 10 >= c.total)) {
		vrt_diagnose_ladder_climb(&c);
		vrt_diagnose_verdict_other(&c);
	} else if (vrt_diagnose_ladder_pool_decides(&c))
		vrt_diagnose_verdict_pool(&c);
	else if (vrt_diagnose_log_only_missing(&c))
		; /* inconclusive: the log lacks the budgets */
	else
		vrt_diagnose_ladder_with_failure(&c);
	vrt_diagnose_log_only_after(&c);
	if (log && c.f)
		vrt_diagnose_log_torch_account(&c);
	if (c.f && c.host.have && vrt_diagnose_host_exhausted(&c.host) &&
	    d->verdict != VRT_VERDICT_HOST_MEMORY)
		vrt_diagnose_evidence(
		        d, "mem_available_min_bytes", -1, VRT_DIAG_BYTES,
		        c.host.min_available,
		        "host memory was nearly exhausted too (MemAvailable "
		        "%s)",
		        vrt_diagnose_sz(&c, c.host.min_available));
	if (log && log->have_refusal && !refusal)
		vrt_diagnose_log_refusal_beside(&c);
	if (log)
		vrt_diagnose_log_evidence(&c);
	vrt_diagnose_model_evidence(&c);
	emit_advice(&c);
	if (!d->confidence_reason[0])
		high_reason(&c);
	else if (d->log_fatal && d->confidence != VRT_CONFIDENCE_HIGH)
		snprintf(d->confidence_reason + strlen(d->confidence_reason),
		         sizeof(d->confidence_reason) -
		                 strlen(d->confidence_reason),
		         " (the fatal failure is the one the engine's log "
		         "names, "
		         "line %u)",
		         log->fatal_line);
	if (d->source_log && (d->verdict == VRT_VERDICT_INCONCLUSIVE ||
	                      d->confidence != VRT_CONFIDENCE_HIGH)) {
		char rec[VRT_DIAG_TEXT];
		verify(d, "%s; then analyze it: vramtrace analyze RUN",
		       vrt_diagnose_log_record_words(&c, rec, sizeof(rec)));
	}
	if (d->source_log && d->verdict != VRT_VERDICT_INCONCLUSIVE &&
	    d->verdict != VRT_VERDICT_NONE)
		verify(d, "re-run with the change; its log (or a trace: "
		          "vramtrace record) shows whether it fits");
	else if (d->source_log)
		;
	else if (d->not_server)
		verify(d, "re-run with the change and compare the two runs: "
		          "vramtrace compare OLD_RUN NEW_RUN");
	else if (d->verdict == VRT_VERDICT_INCONCLUSIVE)
		verify(d, "after adding what is missing, record again and "
		          "analyze: vramtrace analyze NEW_RUN");
	else if (d->verdict != VRT_VERDICT_NONE)
		verify(d, "re-run with the change and compare the two runs: "
		          "vramtrace compare OLD_RUN NEW_RUN");
	else
		verify(d, "after changing settings, record again and compare: "
		          "vramtrace compare OLD_RUN NEW_RUN");
}
