/*
 * diagnose.c — the verdict of diagnose.h from a replayed trace: which
 * budget broke, the numbers that show it, and what to change in the
 * engine's own flags. Pure: reads the trace and the replay, writes only
 * *d; no I/O, no globals, single-threaded. Sentences are built here (they
 * carry the numbers); reports only print them.
 */
#include "diagnose.h"
#include "replay/callpath.h"

#include "model/gguf.h"
#include "base/names.h"
#include "base/text.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1ull << 30)

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

/* ---- formatting helpers -------------------------------------------------- */

/* A size in one of struct ctx's rotating buffers, so one sentence can
 * hold several; needs a `struct ctx *c` in scope. */
#define SZ(b) sz(c, (b))

static void evidence(struct vrt_diagnosis *d, const char *key, int32_t dev,
                     int unit, uint64_t value, const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));
static void evidence(struct vrt_diagnosis *d, const char *key, int32_t dev,
                     int unit, uint64_t value, const char *fmt, ...)
{
	struct vrt_diag_evidence *e;
	va_list ap;

	if (d->nevidence >= VRT_DIAG_MAX_ITEMS)
		return;
	e = &d->evidence[d->nevidence++];
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->device = dev;
	e->unit = unit;
	e->value = value;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

static void line(char (*arr)[VRT_DIAG_TEXT], size_t *n, size_t max,
                 const char *fmt, va_list ap)
{
	if (*n >= max)
		return;
	vsnprintf(arr[(*n)++], VRT_DIAG_TEXT, fmt, ap);
}

static void action(struct vrt_diagnosis *d, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void action(struct vrt_diagnosis *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	line(d->actions, &d->nactions,
	     sizeof(d->actions) / sizeof(d->actions[0]), fmt, ap);
	va_end(ap);
}

static void cost(struct vrt_diagnosis *d, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void cost(struct vrt_diagnosis *d, const char *fmt, ...)
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
 * where the engine has no such setting. */
enum { N_CTX, N_SEQS, N_UTIL, N_TP };

static const char *flag_name(int engine, int what)
{
	static const int field[] = {VRT_ENGINE_CONTEXT, VRT_ENGINE_CONCURRENCY,
	                            VRT_ENGINE_MEM_FRACTION,
	                            VRT_ENGINE_PARALLEL};
	return vrt_engine_info(engine)->setting[field[what]];
}

/* The variable that picks a process's GPUs: HIP's on AMD cards (ROCm also
 * honours CUDA_VISIBLE_DEVICES, but its own name is the one to write). */
static const char *visible_devices(const struct vrt_trace *t, int32_t dev)
{
	if (dev >= 0 && (size_t)dev < t->ndevices &&
	    t->devices[dev].vendor == VRT_VENDOR_HIP)
		return "HIP_VISIBLE_DEVICES";
	return "CUDA_VISIBLE_DEVICES";
}

static const char *engine_label(int engine)
{
	return vrt_engine_info(engine)->prefix;
}

/* ---- the numbers ----------------------------------------------------------
 */

static uint64_t dev_total(const struct vrt_trace *t, const struct vrt_replay *r,
                          size_t i)
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

static int pid_in_run(const struct vrt_trace *t, uint64_t pid)
{
	size_t i;

	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == pid)
			return 1;
	return 0;
}

static void add_other_pid(struct vrt_diagnosis *d, uint64_t pid)
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
			if (pid_in_run(t, p->pid))
				continue;
			sum += p->used_bytes;
			add_other_pid(d, p->pid);
		}
		if (sum > best)
			best = sum;
	}
	return best;
}

struct host_state {
	int have;
	uint64_t min_available;
	uint64_t swap_total, min_swap_free;
	uint64_t max_rss;
	int64_t min_ts;
};

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
static int host_exhausted(const struct host_state *h)
{
	if (!h->have || h->min_available >= VRT_DIAG_HOST_LOW_BYTES)
		return 0;
	return !h->swap_total || h->min_swap_free * 20 < h->swap_total;
}

static struct vrt_diag_device *diag_dev(struct vrt_diagnosis *d, int32_t i)
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
		x->total_bytes = dev_total(t, r, i);
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

/* Rounds a fraction (x1000) down to a multiple of 0.01, at least 0.05. */
static uint64_t util_down(uint64_t milli)
{
	milli -= milli % 10;
	return milli < 50 ? 50 : milli;
}

/* Rounds a token count down to a multiple of 256 (1024 above 8192). */
static uint64_t tokens_down(uint64_t n)
{
	uint64_t q = n > 8192 ? 1024 : 256;
	return n >= q ? n - n % q : n;
}

/* ---- the verdicts ---------------------------------------------------------
 */

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
	uint64_t before; /* held before `vramtrace attach`, unattributed:
	                    counted with the reserves */
};

/* One change the advice offers: what to do, what it costs, and how dear
 * that is (the share of a capacity it gives up, or a RANK_* below). */
struct advice {
	double rank;
	char action[VRT_DIAG_TEXT];
	char cost[VRT_DIAG_TEXT];
};

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
	struct vrt_diag_device *fd;         /* its device's budget */
	const struct vrt_process *root;     /* the run's root, or NULL */
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

static const char *sz(struct ctx *c, uint64_t b)
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

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The confidence falls to level (never rises); the first reason given
 * for the lowest level is kept. */
static void confidence(struct ctx *c, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void confidence(struct ctx *c, int level, const char *fmt, ...)
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

static int died(const struct vrt_process *p)
{
	return p->exit_kind == VRT_EXIT_SIGNAL ||
	       (p->exit_kind == VRT_EXIT_CODE && p->exit_code != 0) ||
	       (p->exit_kind == VRT_EXIT_NONE && p->truncated && !p->running);
}

/* Stopped on purpose: SIGHUP, SIGINT, SIGTERM, or the shell's 128 + N
 * for them (a server is usually ended so). */
static int stopped(const struct vrt_process *p)
{
	int n = p->exit_code;

	if (p->exit_kind == VRT_EXIT_CODE && n > 128)
		n -= 128;
	else if (p->exit_kind != VRT_EXIT_SIGNAL)
		return 0;
	return n == 1 || n == 2 || n == 15;
}

static void how_ended(char *buf, size_t n, const struct vrt_process *p)
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

static void exit_evidence(struct ctx *c, const struct vrt_process *p)
{
	char how[96];

	how_ended(how, sizeof(how), p);
	evidence(c->d,
	         p->exit_kind == VRT_EXIT_SIGNAL ? "exit_signal"
	                                         : "exit_status",
	         -1, VRT_DIAG_COUNT, (uint64_t)(int64_t)p->exit_code,
	         "PID %" PRIu64 " (%s) %s", p->pid,
	         p->argc && p->argv[0] ? p->argv[0] : "?", how);
}

/* ---- evidence ------------------------------------------------------------ */

static void common_failure_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_process *p = &c->t->procs[f->proc];
	const char *api = vrt_names_api(f->api, "an allocation");
	char where[32], pb[32], how[96];

	if (f->device >= 0)
		snprintf(where, sizeof(where), "on device %d", f->device);
	else if (f->family == VRT_FAM_PINNED || f->family == VRT_FAM_REGISTERED)
		snprintf(where, sizeof(where), "on the host");
	else
		snprintf(where, sizeof(where), "on an unknown device");
	if (d->source_log) {
		/* a log gives the failure's line, not a call */
		how_ended(how, sizeof(how), p);
		evidence(d, "requested_bytes", f->device, VRT_DIAG_BYTES,
		         f->requested_bytes,
		         "the allocation the log's fatal error names (%s) "
		         "failed %s at log line %u (%s stage, phase %s, %" PRIu32
		         " request%s in flight)",
		         f->requested_bytes ? SZ(f->requested_bytes)
		                            : "size not printed",
		         where, c->log ? c->log->fatal_line : 0,
		         f->after_ready ? "request" : "load",
		         vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)),
		         f->inflight, f->inflight == 1 ? "" : "s");
		if (f->have_info && f->device >= 0)
			evidence(d, "free_bytes", f->device, VRT_DIAG_BYTES,
			         f->free_bytes,
			         c->free_estimated
			                 ? "about %s free of %s (the capacity less "
			                   "what the log's lines account for)"
			                 : "the engine printed %s free of %s",
			         SZ(f->free_bytes), SZ(f->total_bytes));
		evidence(d, "fatal", f->device, VRT_DIAG_COUNT, 1,
		         "the failure was fatal: the server %s", how);
		return;
	}
	if (d->not_server)
		evidence(d, "requested_bytes", f->device, VRT_DIAG_BYTES,
		         f->requested_bytes, "%s of %s failed %s at %.3fs", api,
		         SZ(f->requested_bytes), where,
		         (double)(f->ts - c->t->start_ns) / 1e9);
	else
	evidence(d, "requested_bytes", f->device, VRT_DIAG_BYTES,
	         f->requested_bytes,
	         "%s of %s failed %s at %.3fs (%s stage, phase %s, %" PRIu32
	         " request%s in flight)",
	         api, SZ(f->requested_bytes), where,
	         (double)(f->ts - c->t->start_ns) / 1e9,
	         f->after_ready ? "request" : "load",
	         vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)),
	         f->inflight, f->inflight == 1 ? "" : "s");
	if (f->have_info && f->device >= 0)
		evidence(d, "free_bytes", f->device, VRT_DIAG_BYTES,
		         f->free_bytes, "the driver had %s free of %s",
		         SZ(f->free_bytes), SZ(f->total_bytes));
	how_ended(how, sizeof(how), p);
	if (f->fatal)
		evidence(d, "fatal", f->device, VRT_DIAG_COUNT, 1,
		         "the failure was fatal: PID %" PRIu64 " did not "
		         "recover from it and %s",
		         p->pid, how);
	else
		evidence(d, "fatal", f->device, VRT_DIAG_COUNT, 0,
		         "PID %" PRIu64 " did not recover from the failure but "
		         "went on%s%s",
		         p->pid,
		         p->exit_kind == VRT_EXIT_NONE
		                 ? " (its exit status was "
		                   "not recorded)"
		                 : "; it later ",
		         p->exit_kind == VRT_EXIT_NONE ? "" : how);
}

/* Up to three recovered failures: evidence of thin headroom. */
static void near_miss_evidence(struct ctx *c)
{
	const struct vrt_replay *r = c->r;
	size_t i, n = 0;
	char where[32];

	for (i = 0; i < r->nfails && n < 3; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		if (!x->oom || !x->recovered)
			continue;
		n++;
		if (x->device >= 0)
			snprintf(where, sizeof(where), "on device %d",
			         x->device);
		else
			snprintf(where, sizeof(where), "of host memory");
		evidence(c->d, "near_miss", x->device, VRT_DIAG_BYTES,
		         x->requested_bytes,
		         "near-miss at %.3fs: %s %s could not be had at once; "
		         "the allocator freed %s of its cache and got %s "
		         "(thin headroom)",
		         (double)(x->ts - c->t->start_ns) / 1e9,
		         SZ(x->requested_bytes), where, SZ(x->freed_bytes),
		         SZ(x->recovered_bytes));
	}
	if (r->recovered > n)
		evidence(c->d, "near_misses", -1, VRT_DIAG_COUNT, r->recovered,
		         "%" PRIu64 " near-misses in all (recovered failures)",
		         r->recovered);
}

static void budget_evidence(struct ctx *c, const struct vrt_diag_device *x)
{
	const struct vrt_replay_device *rd = &c->r->dev[x->device];
	uint64_t req = 0;
	unsigned k;

	/* the per-request phases (forward, workspace, pools, ...) at the
	 * device's peak, whatever a rule called them */
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (vrt_replay_phase_is_demand(k))
			req += rd->peak_by_phase[k];
	if (c->d->source_log) {
		/* a log alone: what it printed, never a 0 for what it did
		 * not */
		unsigned rd_mask = c->d->rungs_read;
		char w[32], kv[32], rq[32];
		if (!(rd_mask & (1u << VRT_RUNG_WEIGHTS |
		                 1u << VRT_RUNG_RESERVES |
		                 1u << VRT_RUNG_ACTIVATIONS)))
			return;
		snprintf(w, sizeof(w), "%s",
		         rd_mask & 1u << VRT_RUNG_WEIGHTS ? SZ(x->weights_bytes)
		                                          : "not in the log");
		snprintf(kv, sizeof(kv), "%s",
		         rd_mask & 1u << VRT_RUNG_RESERVES ? SZ(x->kv_bytes)
		                                           : "not in the log");
		snprintf(rq, sizeof(rq), "%s",
		         rd_mask & 1u << VRT_RUNG_ACTIVATIONS ? SZ(req)
		                                              : "not in the log");
		evidence(c->d, "weights_bytes", x->device, VRT_DIAG_BYTES,
		         x->weights_bytes,
		         "device %d, as the log gives them: weights %s, KV cache "
		         "%s, per-request phases %s of %s",
		         x->device, w, kv, rq, SZ(x->total_bytes));
		return;
	}
	evidence(c->d, "weights_bytes", x->device, VRT_DIAG_BYTES,
	         x->weights_bytes,
	         "device %d: weights %s, KV cache %s, per-request phases %s "
	         "at the run peak of %s of %s",
	         x->device, SZ(x->weights_bytes), SZ(x->kv_bytes), SZ(req),
	         SZ(x->peak_bytes), SZ(x->total_bytes));
}

static void other_processes_evidence(struct ctx *c, int32_t dev, uint64_t bytes)
{
	struct vrt_diagnosis *d = c->d;
	char pids[160] = "";
	size_t i, n = 0;

	for (i = 0; i < d->nother_pids; i++)
		n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%s%" PRIu64,
		                      i ? ", " : "", d->other_pids[i]);
	evidence(d, "other_processes_bytes", dev, VRT_DIAG_BYTES, bytes,
	         "device %d: %s in use by other processes (memory the driver "
	         "counted that this run did not allocate)%s%s%s",
	         dev, SZ(bytes),
	         !n                    ? ""
	         : d->nother_pids == 1 ? " (PID "
	                               : " (PIDs ",
	         pids, n ? ")" : "");
	for (i = 0; i < d->nother_pids; i++)
		evidence(d, "other_pid", dev, VRT_DIAG_PID, d->other_pids[i],
		         "PID %" PRIu64 " holds memory on the card",
		         d->other_pids[i]);
}

/* ---- the ladder ---------------------------------------------------------- */

static void log_ladder(struct ctx *c); /* the engine's numbers: below */

/*
 * One request's activations at a request-stage failure (terms.one), and
 * what of them the memory kept from earlier requests covers (kept). The
 * memory a profiling or warm-up run holds is sized for the configured
 * batch and stays apart (llama.cpp's compute buffer), unless lone
 * requests grew nothing at all: then they drew on it (a caching allocator
 * that kept the profile run's blocks), and one request is that memory
 * over the configured sequences.
 */
static void one_request(struct ctx *c, uint64_t *kept)
{
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_replay_device *rd = &c->r->dev[f->device];
	struct terms *x = &c->x;
	uint64_t avg, seqs = c->d->flags.max_num_seqs;
	uint64_t prof = rd->phase[VRT_PHASE_profile].peak_bytes;

	*kept = x->cache;
	if (f->inflight <= 1) {
		/* The failing request was alone: what it drew on is all its
		 * own. */
		x->one = x->cache + x->growth;
		x->one_how = ONE_ONLY;
		return;
	}
	/* Requests draw on what is kept before the allocator grows. */
	avg = (x->cache + x->growth) / f->inflight;
	if (rd->have_single_request && rd->single_request_bytes &&
	    rd->single_request_bytes >= avg) {
		x->one = rd->single_request_bytes;
		x->one_how = ONE_ALONE;
	} else if (rd->have_single_request && !rd->single_request_bytes &&
	           prof && seqs) {
		x->one = prof / seqs;
		x->one_how = ONE_CACHE;
		*kept += x->profile;
	} else {
		x->one = avg;
		x->one_how = ONE_AVERAGE;
	}
}

/*
 * The ladder at the decisive failure (diagnose.h): each rung's bytes, the
 * running sum against the capacity, the first rung that does not fit
 * (c->xrung) and the rung the failing call was building (c->frung).
 */
static void climb(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const uint64_t *live = f->live_by_phase;
	struct terms *x = &c->x;
	uint64_t req = f->requested_bytes, idle, serve, kept = 0, sum = 0;
	uint64_t bytes[VRT_RUNG_COUNT];
	int k;

	memset(x, 0, sizeof(*x));
	x->weights = live[VRT_PHASE_weights];
	x->kv = live[VRT_PHASE_kv_cache] + live[VRT_LOAD_PHASE_INFERRED_KV];
	x->graph = live[VRT_PHASE_cuda_graph];
	x->comm = live[VRT_PHASE_comm];
	x->profile = live[VRT_PHASE_profile];
	x->before = live[VRT_LOAD_PHASE_BEFORE_ATTACH];
	/* The per-request phases: what loading left there (a reserve), what
	 * a caching allocator kept from earlier requests, and what the
	 * requests in flight grew beyond that. In a load all of it is the
	 * load's. */
	idle = f->idle_demand_bytes < f->demand_bytes ? f->idle_demand_bytes
	                                              : f->demand_bytes;
	serve = f->after_ready ? f->serve_demand_bytes : idle;
	if (serve > idle) /* freed since: the rest is what is left */
		serve = idle;
	x->load_buffers = serve;
	x->cache = idle - serve;
	x->growth = f->demand_bytes - idle;
	switch (f->phase) {
	case VRT_PHASE_weights:
		x->weights += req;
		c->frung = VRT_RUNG_WEIGHTS;
		break;
	case VRT_PHASE_kv_cache:
	case VRT_LOAD_PHASE_INFERRED_KV:
		x->kv += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_cuda_graph:
		x->graph += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_comm:
		x->comm += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_profile:
		x->profile += req;
		c->frung = VRT_RUNG_ACTIVATIONS;
		d->batch_rung = 1;
		break;
	case VRT_PHASE_unattributed:
		if (!f->after_ready) {
			/* nothing named it: counted with what loading
			 * allocates, the ladder can only show it */
			x->load_buffers += req;
			c->frung = VRT_RUNG_RESERVES;
			break;
		}
		/* a request's, as below */
		__attribute__((fallthrough));
	default:
		if (!f->after_ready) {
			/* a per-request phase while loading: a warm-up run
			 * of the configured batch */
			x->profile += req;
			c->frung = VRT_RUNG_ACTIVATIONS;
			d->batch_rung = 1;
		} else {
			x->growth += req;
			c->frung = f->inflight <= 1 ? VRT_RUNG_ACTIVATIONS
			                            : VRT_RUNG_INFLIGHT;
		}
	}
	if (f->after_ready) {
		one_request(c, &kept);
		x->one_growth = sub0(x->one, kept);
		if (x->one_growth > x->growth)
			x->one_growth = x->growth;
	}
	bytes[VRT_RUNG_BASELINE] = c->other;
	bytes[VRT_RUNG_WEIGHTS] = x->weights;
	bytes[VRT_RUNG_RESERVES] =
	        x->kv + x->graph + x->comm + x->load_buffers + x->before;
	bytes[VRT_RUNG_ACTIVATIONS] = x->profile + x->cache + x->one_growth;
	bytes[VRT_RUNG_INFLIGHT] = x->growth - x->one_growth;
	d->have_ladder = 1;
	d->ladder_device = f->device;
	d->capacity_bytes = c->total;
	c->xrung = -1;
	for (k = 0; k < VRT_RUNG_COUNT; k++) {
		sum += bytes[k];
		d->ladder[k].bytes = bytes[k];
		d->ladder[k].cumulative = sum;
		d->ladder[k].fits = !c->total || sum <= c->total;
		if (!d->ladder[k].fits && c->xrung < 0)
			c->xrung = k;
	}
	log_ladder(c);
	/* What requests have: the capacity after everything held before
	 * them (a batch's profile memory too, unless they draw on it). */
	x->room = sub0(c->total,
	               bytes[VRT_RUNG_BASELINE] + bytes[VRT_RUNG_WEIGHTS] +
	                       bytes[VRT_RUNG_RESERVES] +
	                       (x->one_how == ONE_CACHE || !f->after_ready
	                                ? 0
	                                : x->profile));
	/* The budget that broke: the first rung past the capacity, but no
	 * later than the one being built (a graph capture failing after a
	 * reserve is the reserve's, whatever came before it). */
	d->rung = c->xrung >= 0 && c->xrung < c->frung ? c->xrung : c->frung;
}

/* How sure a verdict on the failure can be: is it the one the process
 * did not survive? */
static void failure_confidence(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_process *p = &c->t->procs[f->proc];

	if (c->d->log_fatal)
		return; /* the engine's log says it died of this one */
	if (!f->fatal)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "PID %" PRIu64 " went on after this failure: the "
		           "program caught the error and carried on",
		           p->pid);
	else if (!died(p) && !(c->root && died(c->root)))
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "no exit status was recorded (record the run with "
		           "vramtrace record): the last failure PID %" PRIu64
		           " did not recover from is taken as fatal",
		           p->pid);
}

/* A process recorded from an attach: what it held before and the snapshot
 * could not attribute is its own (never another process's), counted with
 * the reserves; it decides nothing unless the budget that broke is among
 * weights and reserves, which it then cannot tell apart. */
static void before_attach(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	if (!c->x.before)
		return;
	evidence(c->d, "before_attach_bytes", f->device, VRT_DIAG_BYTES,
	         c->x.before,
	         "%s on device %d was held before vramtrace attach began "
	         "recording and could not be attributed (no allocator "
	         "snapshot named it): this process's own, counted with the "
	         "reserves",
	         SZ(c->x.before), f->device);
	if (c->d->rung == VRT_RUNG_WEIGHTS || c->d->rung == VRT_RUNG_RESERVES)
		confidence(c, VRT_CONFIDENCE_LOW,
		           "%s held before the attach cannot be split into "
		           "weights and reserves, and the broken budget is "
		           "among them: record the server from its start "
		           "(vramtrace record) to tell them apart",
		           SZ(c->x.before));
}

/* How sure the ladder's verdict is. */
static void ladder_confidence(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	if (!c->total && c->d->source_log)
		confidence(c, VRT_CONFIDENCE_LOW,
		           "the log does not print device %d's capacity: the "
		           "ladder cannot tell which rung overflowed, so the "
		           "verdict is the budget the engine said the failed "
		           "allocation was for",
		           f->device);
	else if (!c->total)
		confidence(c, VRT_CONFIDENCE_LOW,
		           "the capacity of device %d is unknown: the ladder "
		           "cannot tell which rung overflowed",
		           f->device);
	else if (c->xrung < 0 && c->d->source_log)
		confidence(c, VRT_CONFIDENCE_LOW,
		           "the log's numbers on device %d add up to %s of %s: "
		           "what overflowed is memory the log does not account "
		           "for, so the failing allocation's own rung is named",
		           f->device,
		           SZ(c->d->ladder[VRT_RUNG_COUNT - 1].cumulative),
		           SZ(c->total));
	else if (c->xrung < 0)
		confidence(c, VRT_CONFIDENCE_LOW,
		           "the traced memory on device %d adds up to %s of "
		           "%s: what overflowed is memory the trace does not "
		           "see (allocations outside the traced calls, "
		           "fragmentation), so the failing call's own rung is "
		           "named",
		           f->device,
		           SZ(c->d->ladder[VRT_RUNG_COUNT - 1].cumulative),
		           SZ(c->total));
	failure_confidence(c);
	if (f->phase == VRT_LOAD_PHASE_INFERRED_KV)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "the KV reserve was inferred (a large allocation "
		           "right after a free-memory probe), not named by a "
		           "rule");
	if (c->xrung > c->frung)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "the ladder first overflows at %s, but the failing "
		           "call was building %s, which is named",
		           vrt_diagnose_rung_name(c->xrung),
		           vrt_diagnose_rung_name(c->frung));
}

/* ---- advice ---------------------------------------------------------------
 *
 * Each verdict offers the changes that would have fitted the run, every
 * number sized so the budget it changes keeps the margin (--margin, 5% by
 * default) spare, and each with its cost measured on the run: the share
 * of the KV cache, the context, the sequences or the batch it gives up.
 * They are printed cheapest first: by that share, then the changes whose
 * cost is of another kind (speed, quality, hardware) at fixed ranks.
 */

#define RANK_FREE      0.0  /* fixes a mistake: costs nothing the run used */
#define RANK_GRAPHS    0.25 /* fewer CUDA graph sizes */
#define RANK_EAGER     0.5  /* no CUDA graphs */
#define RANK_OFFLOAD   0.8  /* weights streamed from host memory */
#define RANK_QUALITY   1.5  /* lower-precision weights */
#define RANK_ELSEWHERE 1.8  /* wait for the card, or another one */
#define RANK_HARDWARE  2.0  /* more cards */
#define RANK_UNKNOWN   0.9  /* a share the run does not tell */

static const char *setting(struct ctx *c, int field)
{
	return vrt_engine_info(c->engine)->setting[field];
}

/* "--max-num-seqs 4" or "OLLAMA_NUM_PARALLEL=4" into buf. */
static const char *set_to(char *buf, size_t n, struct ctx *c, int field,
                          uint64_t v)
{
	snprintf(buf, n, "%s%s%" PRIu64, setting(c, field),
	         vrt_engine_info(c->engine)->env_style ? "=" : " ", v);
	return buf;
}

static int margin_pct(const struct ctx *c)
{
	return (int)c->d->margin_pct;
}

/* "with a 5% margin" (or "with no margin" for --margin 0). */
static const char *margin_words(struct ctx *c)
{
	static char buf[40];

	if (!margin_pct(c))
		return "with no margin (--margin 0)";
	snprintf(buf, sizeof(buf), "with a %d%% margin", margin_pct(c));
	return buf;
}

/* v x have / need, less the margin: the largest value whose memory fits
 * have with the margin spare, when memory grows with v. */
static uint64_t fit_value(const struct ctx *c, uint64_t v, uint64_t have,
                          uint64_t need)
{
	double x;

	if (!need)
		return v;
	x = (double)v * (double)have / (double)need *
	    (1.0 - (double)c->d->margin_pct / 100.0);
	return x < 0 ? 0 : (uint64_t)x;
}

/* The bytes to free so need fits where have is left, with the margin. */
static uint64_t to_free(const struct ctx *c, uint64_t need, uint64_t have)
{
	uint64_t want = need + need * c->d->margin_pct / 100;
	return sub0(want, have);
}

/* A setting an action names, kept as a number for `plan`. */
static void suggest(struct ctx *c, int field, uint64_t value)
{
	struct vrt_diagnosis *d = c->d;

	if (d->nsuggest < sizeof(d->suggest) / sizeof(d->suggest[0])) {
		d->suggest[d->nsuggest].field = field;
		d->suggest[d->nsuggest++].value = value;
	}
}

static struct advice *advise(struct ctx *c, double rank)
{
	struct advice *a;

	if (c->nadv >= sizeof(c->adv) / sizeof(c->adv[0]))
		return NULL;
	a = &c->adv[c->nadv++];
	memset(a, 0, sizeof(*a));
	a->rank = rank;
	return a;
}

static void say(char *dst, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void say(char *dst, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(dst, VRT_DIAG_TEXT, fmt, ap);
	va_end(ap);
}

/* The action and the cost of advice a (NULL when the list is full). */
#define ACT(a, ...)                                                            \
	do {                                                                   \
		struct advice *a_ = (a);                                       \
		if (a_)                                                        \
			say(a_->action, __VA_ARGS__);                          \
	} while (0)
#define COST(a, ...)                                                           \
	do {                                                                   \
		struct advice *a_ = (a);                                       \
		if (a_)                                                        \
			say(a_->cost, __VA_ARGS__);                            \
	} while (0)

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
		action(c->d, "%s", c->adv[i].action);
		cost(c->d, "%s", c->adv[i].cost);
	}
}

/* The KV cache on the failing device (the whole run's when none). */
static uint64_t kv_bytes(const struct ctx *c)
{
	uint64_t kv = 0;
	size_t k;

	if (c->fd)
		return c->fd->kv_bytes ? c->fd->kv_bytes : c->x.kv;
	for (k = 0; k < c->d->ndevices; k++)
		kv += c->d->devices[k].kv_bytes;
	return kv;
}

/* " (about N tokens)": bytes of KV cache in tokens, with a model. */
static const char *kv_tokens(struct ctx *c, uint64_t bytes, char *buf,
                             size_t n)
{
	const struct vrt_model_arith *m = &c->d->model;
	uint64_t per = m->kv_bytes_per_token_at_context
	                       ? m->kv_bytes_per_token_at_context
	                       : m->kv_bytes_per_token;

	buf[0] = '\0';
	if (m->have && per)
		snprintf(buf, n, ", about %" PRIu64 " tokens", bytes / per);
	return buf;
}

/* The fraction the engine runs at: its flag, else its default (vLLM 0.9,
 * TGI 1.0); 0 unknown. */
static uint64_t fraction_now(const struct ctx *c, int *is_default)
{
	*is_default = 0;
	if (c->d->flags.mem_util_milli)
		return c->d->flags.mem_util_milli;
	*is_default = 1;
	if (c->engine == VRT_ENGINE_VLLM)
		return 900;
	if (c->engine == VRT_ENGINE_TGI)
		return 1000;
	return 0;
}

/* Frees free_b by lowering the engine's memory fraction (the reserve it
 * sizes, KV cache mostly, gives it up). why: what the bytes are for. */
static void lever_fraction(struct ctx *c, uint64_t free_b, const char *why)
{
	const char *flag = setting(c, VRT_ENGINE_MEM_FRACTION);
	uint64_t kv = kv_bytes(c), cut, now, nu, base = c->total;
	int dflt;
	struct advice *a;
	char tok[64];

	if (!flag || !c->total || !free_b)
		return;
	/* TensorRT-LLM's fraction is of the memory free after the weights,
	 * the others' of the card. */
	if (c->engine == VRT_ENGINE_TRTLLM)
		base = sub0(c->total,
		            c->other + (c->fd ? c->fd->weights_bytes : 0));
	if (!base)
		return;
	now = fraction_now(c, &dflt);
	cut = (free_b * 1000 + base - 1) / base;
	/* A lever that cannot make the room is no advice: the whole KV
	 * reserve is less than what is missing, or the fraction would go to
	 * nothing. */
	if ((kv && free_b > kv) || (now && cut >= now))
		return;
	a = advise(c, kv ? (double)free_b / (double)kv : RANK_UNKNOWN);
	if (now > cut && (nu = util_down(now - cut)) < now) {
		free_b = (now - nu) * base / 1000;
		suggest(c, VRT_ENGINE_MEM_FRACTION, nu);
		ACT(a, "%sshrink the KV reserve: %s %.2f (was %.2f%s): frees %s "
		       "%s, %s",
		    engine_label(c->engine), flag, (double)nu / 1000.0,
		    (double)now / 1000.0, dflt ? ", the default" : "",
		    SZ(free_b), why, margin_words(c));
	} else {
		/* In whole hundredths, as the flag is written. */
		cut = (cut + 9) / 10 * 10;
		free_b = cut * base / 1000;
		ACT(a, "%sshrink the KV reserve: lower %s by %.2f: frees %s %s, "
		       "%s",
		    engine_label(c->engine), flag, (double)cut / 1000.0,
		    SZ(free_b), why, margin_words(c));
	}
	if (kv)
		COST(a, "gives up %s of the %s KV cache (%" PRIu64 "%%%s): "
		        "fewer tokens cached at once, more preemption under "
		        "load",
		     SZ(free_b > kv ? kv : free_b), SZ(kv),
		     (free_b > kv ? kv : free_b) * 100 / kv,
		     kv_tokens(c, free_b > kv ? kv : free_b, tok, sizeof(tok)));
	else
		COST(a, "a smaller reserve holds fewer tokens at once (more "
		        "preemption under load)");
}

/* Rounds a context or batch size down the way the engine takes it
 * (llama.cpp pads its context to 256 tokens). */
static uint64_t round_tokens(const struct ctx *c, int field, uint64_t n)
{
	if (field == VRT_ENGINE_CONCURRENCY || field == VRT_ENGINE_GPU_LAYERS)
		return n;
	if (field == VRT_ENGINE_CONTEXT && (c->engine == VRT_ENGINE_LLAMACPP ||
	                                    c->engine == VRT_ENGINE_OLLAMA))
		return n >= 256 ? n - n % 256 : n;
	if (n < 256)
		return n >= 32 ? n - n % 32 : n;
	return tokens_down(n);
}

/* A setting whose memory grows in proportion (a context, tokens per
 * batch): v scaled so need fits in have with the margin. what: the verb
 * ("lower the context"); for: what the memory is ("one request's
 * activations"). Returns 1 when it offered one. */
static int lever_scale(struct ctx *c, int field, uint64_t v, int dflt,
                       uint64_t have, uint64_t need, const char *what,
                       const char *mem)
{
	struct advice *a;
	char b[96];
	uint64_t nv;
	double share;

	if (!v || !need || !setting(c, field))
		return 0;
	nv = round_tokens(c, field, fit_value(c, v, have, need));
	if (!nv || nv >= v)
		return 0;
	/* a context the failing prompt does not fit in rejects it */
	if (field == VRT_ENGINE_CONTEXT && c->min_context &&
	    nv < c->min_context)
		return 0;
	suggest(c, field, nv);
	share = 1.0 - (double)nv / (double)v;
	/* Smaller batches cost prefill speed, not capacity: half as dear as
	 * the share of a context or of the sequences. */
	if (field == VRT_ENGINE_BATCH_TOKENS || field == VRT_ENGINE_UBATCH)
		share /= 2;
	a = advise(c, share);
	ACT(a, "%s%s: %s (was %" PRIu64 "%s): %s grow with it, %s at %" PRIu64
	       " where %s is left; %s%s",
	    engine_label(c->engine), what, set_to(b, sizeof(b), c, field, nv), v,
	    dflt ? ", the default" : "", mem, SZ(need), v, SZ(have),
	    margin_words(c),
	    field == VRT_ENGINE_UBATCH ? " (-b, the logical batch, may stay: "
	                                 "it is split into -ub steps)"
	                               : "");
	switch (field) {
	case VRT_ENGINE_CONTEXT:
		COST(a, "prompt + output longer than %" PRIu64 " tokens are "
		        "rejected: %" PRIu64 "%% of the context given up",
		     nv, (v - nv) * 100 / v);
		break;
	case VRT_ENGINE_CONCURRENCY:
		COST(a, "at most %" PRIu64 " sequences share a step (was %" PRIu64
		        "): lower throughput under load",
		     nv, v);
		break;
	default:
		COST(a, "a step takes at most %" PRIu64 " tokens (was %" PRIu64
		        "): long prompts prefill in more steps, lower prefill "
		        "throughput",
		     nv, v);
	}
	return 1;
}

/* The tokens-per-step setting (vLLM --max-num-batched-tokens, SGLang
 * --chunked-prefill-size, TGI --max-batch-prefill-tokens, llama.cpp
 * -ub): scaled when the command line gives it (llama.cpp's default 512
 * otherwise), else as a share of the value the engine runs with (its
 * log says which). */
static void lever_step_tokens(struct ctx *c, uint64_t have, uint64_t need,
                              const char *mem)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	int field = setting(c, VRT_ENGINE_UBATCH) ? VRT_ENGINE_UBATCH
	                                          : VRT_ENGINE_BATCH_TOKENS;
	uint64_t v = field == VRT_ENGINE_UBATCH ? f->ubatch : f->batch_tokens;
	uint64_t pct;
	int dflt = 0;
	struct advice *a;

	if (!setting(c, field) || !need || have >= need)
		return;
	if (!v && c->engine == VRT_ENGINE_LLAMACPP) {
		v = 512; /* llama.cpp's default -ub */
		dflt = 1;
	}
	if (v) {
		lever_scale(c, field, v, dflt, have, need,
		            "fewer tokens per step", mem);
		return;
	}
	pct = fit_value(c, 100, have, need);
	if (!pct)
		return;
	a = advise(c, (1.0 - (double)pct / 100.0) / 2);
	ACT(a, "%sfewer tokens per step: %s at about %" PRIu64 "%% of the value "
	       "the engine runs with (its log says it): %s grow with it, %s "
	       "where %s is left; %s",
	    engine_label(c->engine), setting(c, field), pct, mem, SZ(need),
	    SZ(have), margin_words(c));
	COST(a, "long prompts prefill in more steps: lower prefill "
	        "throughput");
}

/* The sequences the KV cache holds at the engine's context, from the
 * model arithmetic; 0 unknown. */
static uint64_t kv_sequences(const struct ctx *c)
{
	const struct vrt_model_arith *m = &c->d->model;

	if (!m->have || !m->seq_bytes_at_context)
		return 0;
	return m->kv_reserve_bytes / m->seq_bytes_at_context;
}

/* Caps the sequences in flight at n (they fit with the margin). */
static void lever_seqs(struct ctx *c, uint64_t n, uint32_t inflight)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	uint64_t seqs = kv_sequences(c), was = f->max_num_seqs;
	uint64_t base = inflight > was && was ? was : inflight;
	struct advice *a;
	char b[96], held[128] = "";

	if (!setting(c, VRT_ENGINE_CONCURRENCY))
		return;
	if (!n)
		n = 1;
	suggest(c, VRT_ENGINE_CONCURRENCY, n);
	a = advise(c, base > n ? 1.0 - (double)n / (double)base : 0.0);
	if (was)
		snprintf(held, sizeof(held), " (was %" PRIu64 ")", was);
	ACT(a, "%scap concurrent sequences: %s%s: %" PRIu64 " fit%s in what "
	       "the reserves leave, %s%s",
	    engine_label(c->engine),
	    set_to(b, sizeof(b), c, VRT_ENGINE_CONCURRENCY, n), held, n,
	    n == 1 ? "s" : "", margin_words(c),
	    was ? "" : "; or put a limit in front of the server");
	if (seqs)
		COST(a, "at most %" PRIu64 " sequence%s at once where %" PRIu32
		        " %s in flight, while the KV cache holds %" PRIu64
		        " sequences of %" PRIu64 " tokens: the cap, not the "
		        "cache, limits throughput",
		     n, n == 1 ? "" : "s", inflight,
		     inflight == 1 ? "was" : "were", seqs,
		     c->d->model.context_len);
	else
		COST(a, "at most %" PRIu64 " sequence%s at once where %" PRIu32
		        " %s in flight: requests past the cap wait in the queue "
		        "(lower throughput)",
		     n, n == 1 ? "" : "s", inflight,
		     inflight == 1 ? "was" : "were");
}

/* More cards for the engine: tensor parallelism, or the devices an
 * engine that spreads over every visible GPU sees. */
static void lever_cards(struct ctx *c, uint64_t n, const char *why)
{
	const char *tp = setting(c, VRT_ENGINE_PARALLEL);
	struct advice *a = advise(c, RANK_HARDWARE);

	/* Never the parallel size the run already had. */
	if (c->d->flags.tp && n <= c->d->flags.tp)
		n = c->d->flags.tp * 2;
	if (tp)
		ACT(a, "%sadd cards: %s %" PRIu64 " %s", engine_label(c->engine),
		    tp, n, why);
	else
		ACT(a, "%sadd cards: make %" PRIu64 " GPUs visible (%s); the "
		       "layers are split over them (-sm layer, -ts to weigh "
		       "them) %s",
		    engine_label(c->engine), n,
		    visible_devices(c->t, c->d->device), why);
	COST(a, "%" PRIu64 " cards instead of one cost money%s", n,
	     tp ? "; tensor parallelism adds communication between them" : "");
}

/* The KV cache types llama.cpp runs with (-ctk / -ctv), bytes per
 * element x 32 (q8_0: 34, f16: 64). */
static unsigned kv_bytes32(const char *name)
{
	struct vrt_model_dtype d;

	if (!name || !name[0] || vrt_model_dtype(name, &d))
		return 64; /* llama.cpp's default f16 */
	return d.block_bytes * 32 / (d.block_elems ? d.block_elems : 1);
}

/* llama.cpp: a quantized KV cache frees part of the reserve; offered when
 * it frees need_free (q8_0, else q4_0), or the most it can. */
static void lever_kv_quant(struct ctx *c, uint64_t need_free)
{
	const struct vrt_diag_flags *f = &c->d->flags;
	unsigned cur = (kv_bytes32(f->cache_k) + kv_bytes32(f->cache_v)) / 2;
	uint64_t kv = kv_bytes(c), saved8, saved4;
	struct advice *a;
	const char *type;
	uint64_t saved;

	if (c->engine != VRT_ENGINE_LLAMACPP || !kv || cur <= 34)
		return;
	saved8 = kv - kv * 34 / cur;
	saved4 = kv - kv * 18 / cur;
	type = saved8 >= need_free || saved4 <= saved8 ? "q8_0" : "q4_0";
	saved = type[1] == '8' ? saved8 : saved4;
	/* A q8_0 cache costs less than a fifth of anything: little
	 * quality, no capacity. */
	a = advise(c, type[1] == '8' ? 0.15 : 0.5);
	if (f->flash_attn)
		ACT(a, "llama.cpp: quantize the KV cache: -ctk %s -ctv %s: the "
		       "%s cache takes %s, %s less%s (flash attention is "
		       "already on, as a quantized V cache needs)",
		    type, type, SZ(kv), SZ(kv - saved), SZ(saved),
		    saved >= need_free ? "" : ", not all that is needed");
	else
		ACT(a, "llama.cpp: quantize the KV cache: -ctk %s -ctv %s -fa "
		       "on: the %s cache takes %s, %s less%s (a quantized V "
		       "cache needs flash attention)",
		    type, type, SZ(kv), SZ(kv - saved), SZ(saved),
		    saved >= need_free ? "" : ", not all that is needed");
	COST(a, "%s", type[1] == '8'
	                      ? "a q8_0 KV cache costs little quality; flash "
	                        "attention must run on the GPU"
	                      : "a q4_0 KV cache costs some quality (q8_0 "
	                        "less); flash attention must run on the GPU");
}

/* llama.cpp's layer offload: the most layers whose weights and KV cache
 * fit avail with the margin, from the model description. Returns 1 when
 * it offered a number. */
static int lever_ngl(struct ctx *c, uint64_t avail, int generic)
{
	const struct vrt_diagnosis *d = c->d;
	const struct vrt_model *m = d->model.have ? &d->model.desc : NULL;
	const char *flag = setting(c, VRT_ENGINE_GPU_LAYERS);
	uint64_t layers, w, kvl, n, ctx, now;
	struct advice *a;
	char b[96];

	if (!flag)
		return 0;
	if ((!m || !m->layers || !m->weight_bytes) && d->flags.have_ngl &&
	    d->flags.ngl > 1 && d->flags.ngl < 99 && c->x.weights > avail) {
		/* A layer count given on the command line (99 and above
		 * stand for every layer): the weights it loaded, or the one
		 * buffer llama.cpp asks for them, scale with it. */
		n = fit_value(c, d->flags.ngl, avail, c->x.weights);
		if (!n || n >= d->flags.ngl)
			return 0;
		a = advise(c, (double)(d->flags.ngl - n) /
		                      (double)d->flags.ngl);
		ACT(a, "%soffload fewer layers: %s (was %" PRIu64 "): the "
		       "layers asked for take %s of weights where %s is left; "
		       "%s",
		    engine_label(c->engine),
		    set_to(b, sizeof(b), c, VRT_ENGINE_GPU_LAYERS, n),
		    d->flags.ngl, SZ(c->x.weights), SZ(avail),
		    margin_words(c));
		COST(a, "%" PRIu64 " more layers run on the CPU: generation "
		        "slows about in proportion",
		     d->flags.ngl - n);
		return 1;
	}
	if (!m || !m->layers || !m->weight_bytes) {
		if (!generic)
			return 0;
		a = advise(c, RANK_UNKNOWN);
		ACT(a, "%soffload fewer layers: %s below %s (--model-config "
		       "MODEL.gguf computes how many fit)",
		    engine_label(c->engine), flag,
		    d->flags.have_ngl && d->flags.ngl < 999 ? "its value"
		                                            : "the layer count");
		COST(a, "the layers left on the CPU run slower");
		return 0;
	}
	layers = m->layers;
	now = d->flags.have_ngl && d->flags.ngl < layers ? d->flags.ngl
	                                                 : layers;
	w = (m->block_weight_bytes ? m->block_weight_bytes : m->weight_bytes) /
	    layers;
	/* What the run loaded says more than a description that does not
	 * match it: its layers weigh at least that much. */
	if (now && c->x.weights / now > w)
		w = c->x.weights / now;
	ctx = d->model.context_len ? d->model.context_len : m->context_len;
	kvl = d->model.kv_bytes_per_token * ctx / layers;
	/* The weights outside the repeating layers (output head) stay. */
	avail = sub0(avail, m->block_weight_bytes
	                            ? m->weight_bytes - m->block_weight_bytes
	                            : 0);
	n = fit_value(c, avail, 1, w + kvl);
	if (n >= now)
		return 0; /* the layers are not what does not fit */
	a = advise(c, now ? (double)(now - n) / (double)now : 1.0);
	ACT(a, "%soffload fewer layers: %s (of %" PRIu64 " layers%s): each "
	       "takes %s of weights + %s of KV cache at %" PRIu64
	       " tokens, %s are left for them; %s",
	    engine_label(c->engine), set_to(b, sizeof(b), c,
	                                    VRT_ENGINE_GPU_LAYERS, n),
	    layers, d->flags.have_ngl ? "" : ", all by default", SZ(w),
	    SZ(kvl), ctx, SZ(avail), margin_words(c));
	COST(a, "%" PRIu64 " of %" PRIu64 " layers run on the CPU: generation "
	        "slows about in proportion",
	     layers - n, layers);
	return 1;
}

/* Lower-precision weights: GGUF quantizations for llama.cpp and Ollama
 * (the largest that fits budget with the margin), fp8 or int4 for the
 * others. */
static void lever_quant(struct ctx *c, uint64_t budget)
{
	const struct vrt_model *m =
	        c->d->model.have ? &c->d->model.desc : NULL;
	struct advice *a;
	size_t nq, i;
	const struct vrt_gguf_quant *q = vrt_gguf_quants(&nq);
	double now_bpw, fit_bpw;
	uint64_t params;

	if (c->engine != VRT_ENGINE_LLAMACPP && c->engine != VRT_ENGINE_OLLAMA) {
		a = advise(c, RANK_QUALITY);
		const char *flag = c->engine == VRT_ENGINE_TGI ? "--quantize fp8"
		                   : c->engine == VRT_ENGINE_VLLM ||
		                                   c->engine == VRT_ENGINE_SGLANG
		                           ? "--quantization fp8"
		                           : "fp8";
		if (m && m->params_total)
			ACT(a, "%sload lower-precision weights: %s (about %s: "
			       "%.1fB parameters at 1 byte) or an int4 AWQ/GPTQ "
			       "checkpoint (about %s)",
			    engine_label(c->engine), flag,
			    SZ(m->params_total), (double)m->params_total / 1e9,
			    SZ(m->params_total * 53 / 100));
		else
			ACT(a, "%sload lower-precision weights: %s (half the "
			       "bytes of bf16) or an int4 AWQ/GPTQ checkpoint "
			       "(about a quarter)",
			    engine_label(c->engine), flag);
		COST(a, "lower-precision weights may cost quality (fp8 "
		        "little, int4 more)");
		return;
	}
	if (!m || !m->params_total) {
		a = advise(c, RANK_QUALITY);
		ACT(a, "%sa smaller GGUF quantization: Q8_0, Q6_K, Q5_K_M, "
		       "Q4_K_M take about 8.5, 6.6, 5.7 and 4.9 bits per weight "
		       "(--model-config MODEL.gguf tells which fits)",
		    engine_label(c->engine));
		COST(a, "fewer bits per weight cost quality (Q4_K_M little, "
		        "below 4 bits noticeably)");
		return;
	}
	params = m->params_total;
	now_bpw = vrt_gguf_quant_bpw(m->gguf_type);
	if (!now_bpw)
		now_bpw = (double)m->weight_bytes * 8.0 / (double)params;
	fit_bpw = (double)budget * 8.0 / (double)params *
	          (1.0 - (double)margin_pct(c) / 100.0);
	if (now_bpw <= fit_bpw)
		return; /* the weights as they are fit: not the lever */
	for (i = 0; i < nq; i++)
		if (q[i].bpw < now_bpw - 0.05 && q[i].bpw <= fit_bpw)
			break;
	a = advise(c, RANK_QUALITY);
	if (i == nq) {
		ACT(a, "%sa smaller GGUF quantization alone does not fit: even "
		       "%s (%.2f bits per weight) needs %s where %s is left",
		    engine_label(c->engine), q[nq - 1].name, q[nq - 1].bpw,
		    SZ((uint64_t)((double)params * q[nq - 1].bpw / 8.0)),
		    SZ(budget));
		COST(a, "offload layers or add GPUs as well");
		return;
	}
	if (m->gguf_type[0])
		ACT(a, "%sa smaller GGUF quantization: %s (about %.2f bits per "
		       "weight: %s of weights instead of %s at %s), the "
		       "largest that fits the %s left %s",
		    engine_label(c->engine), q[i].name, q[i].bpw,
		    SZ((uint64_t)((double)params * q[i].bpw / 8.0)),
		    SZ(m->weight_bytes), m->gguf_type, SZ(budget),
		    margin_words(c));
	else
		ACT(a, "%sa GGUF quantization: %s (about %.2f bits per weight: "
		       "%s of weights instead of %s), the largest that fits "
		       "the %s left %s",
		    engine_label(c->engine), q[i].name, q[i].bpw,
		    SZ((uint64_t)((double)params * q[i].bpw / 8.0)),
		    SZ(m->weight_bytes), SZ(budget), margin_words(c));
	COST(a, "fewer bits per weight cost quality (%s)",
	     q[i].bpw >= 4.5 ? "little at this size"
	                     : "noticeable below about 4.5 bits");
}

/* vLLM and SGLang: keep part of the weights in host memory. */
static void lever_cpu_offload(struct ctx *c, uint64_t on_gpu)
{
	const struct vrt_model *m =
	        c->d->model.have ? &c->d->model.desc : NULL;
	uint64_t gib;
	struct advice *a;

	if ((c->engine != VRT_ENGINE_VLLM && c->engine != VRT_ENGINE_SGLANG) ||
	    !m || m->weight_bytes <= on_gpu)
		return;
	gib = (m->weight_bytes - on_gpu + GIB - 1) / GIB;
	a = advise(c, RANK_OFFLOAD);
	ACT(a, "%skeep %" PRIu64 " GiB of the weights in host memory: "
	       "--cpu-offload-gb %" PRIu64 " (the GPU keeps %s of %s)",
	    engine_label(c->engine), gib, gib, SZ(on_gpu),
	    SZ(m->weight_bytes));
	COST(a, "every forward pass copies %" PRIu64 " GiB over PCIe: much "
	        "slower",
	     gib);
}

/* ---- the verdicts -------------------------------------------------------- */

static void verdict_host(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay *r = c->r;
	struct advice *a;

	d->verdict = VRT_VERDICT_HOST_MEMORY;
	d->device = -1;
	if (c->f && c->f->device < 0 && c->log && c->log->host_pageable) {
		/* the log names a pageable host allocation: RAM ran out */
		snprintf(d->detail, sizeof(d->detail), "host_ram_exhausted");
		common_failure_evidence(c);
	} else if (c->f && c->f->device < 0) {
		snprintf(d->detail, sizeof(d->detail), "pinned_alloc_failed");
		common_failure_evidence(c);
		evidence(d, "pinned_peak_bytes", -1, VRT_DIAG_BYTES,
		         r->host_pinned_peak,
		         "page-locked host memory peaked at %s before the "
		         "failure (pinned + registered)",
		         SZ(r->host_pinned_peak));
	} else {
		snprintf(d->detail, sizeof(d->detail), "host_ram_exhausted");
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "no allocation failed: the host samples show "
		           "MemAvailable near zero");
	}
	if (c->host.have) {
		evidence(d, "mem_available_min_bytes", -1, VRT_DIAG_BYTES,
		         c->host.min_available,
		         "host MemAvailable fell to %s at %.3fs",
		         SZ(c->host.min_available),
		         (double)(c->host.min_ts - c->t->start_ns) / 1e9);
		if (c->host.swap_total)
			evidence(d, "swap_free_min_bytes", -1, VRT_DIAG_BYTES,
			         c->host.min_swap_free,
			         "swap: %s free of %s at the lowest",
			         SZ(c->host.min_swap_free),
			         SZ(c->host.swap_total));
	}
	evidence(d, "vram_ok", -1, VRT_DIAG_COUNT, 0,
	         "not a VRAM problem: the GPU allocations did not fail");
	a = advise(c, RANK_UNKNOWN);
	ACT(a,
	    "%sreduce page-locked host buffers (%s); offload less to the "
	    "CPU, or give the machine more RAM",
	    engine_label(c->engine),
	    c->engine == VRT_ENGINE_VLLM     ? "--swap-space, --cpu-offload-gb"
	    : c->engine == VRT_ENGINE_SGLANG ? "--cpu-offload-gb"
	    : c->engine == VRT_ENGINE_LLAMACPP
	            ? "--no-mmap/--mlock, --no-kv-offload"
	            : "swap space and CPU offload settings");
	COST(a, "less host-side swap/offload space: preempted sequences are "
	        "recomputed instead of swapped");
}

/* llama.cpp and Ollama size their memory by layers and context, not by a
 * fraction: what fits where avail is left. */
static int spread_engine(const struct ctx *c)
{
	return !setting((struct ctx *)c, VRT_ENGINE_MEM_FRACTION);
}

static void verdict_other(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	uint64_t room = sub0(c->total, c->other);
	struct advice *a;

	d->verdict = VRT_VERDICT_OTHER_PROCESSES;
	snprintf(d->detail, sizeof(d->detail), "device_shared");
	/* without the baseline the rest fits: the rung that broke */
	d->rung = VRT_RUNG_BASELINE;
	failure_confidence(c);
	common_failure_evidence(c);
	other_processes_evidence(c, c->f->device, c->other);
	evidence(d, "shortfall_bytes", c->f->device, VRT_DIAG_BYTES,
	         c->shortfall,
	         "the call was %s short; without the other processes it would "
	         "have fit",
	         SZ(c->shortfall));
	a = advise(c, RANK_ELSEWHERE);
	ACT(a,
	    "free the card: wait for the other process%s%s to finish or "
	    "move %s to another GPU, or run on an empty GPU (%s)",
	    d->nother_pids == 1 ? "" : "es",
	    d->nother_pids ? " named above" : "",
	    d->nother_pids == 1 ? "it" : "them",
	    visible_devices(c->t, c->f->device));
	COST(a, "waiting for the card, or another card");
	if (!c->total)
		return;
	if (!spread_engine(c)) {
		uint64_t fit = fit_value(c, room * 1000 / c->total, 1, 1), now;
		int dflt;
		now = fraction_now(c, &dflt);
		a = advise(c, now > fit ? 1.0 - (double)fit / (double)now
		                        : RANK_FREE);
		ACT(a,
		    "%sfit into what is left: %s %.2f (%s of %s is available to "
		    "this run), %s",
		    engine_label(c->engine), setting(c, VRT_ENGINE_MEM_FRACTION),
		    (double)util_down(fit) / 1000.0, SZ(room), SZ(c->total),
		    margin_words(c));
		COST(a, "a smaller memory fraction holds fewer tokens at once "
		        "(more preemption under load)");
	} else if (!lever_ngl(c, room, 0)) {
		a = advise(c, RANK_UNKNOWN);
		ACT(a, "%sfit into what is left (%s of %s): lower %s or offload "
		       "fewer layers (%s)",
		    engine_label(c->engine), SZ(room), SZ(c->total),
		    setting(c, VRT_ENGINE_CONTEXT),
		    setting(c, VRT_ENGINE_GPU_LAYERS)
		            ? setting(c, VRT_ENGINE_GPU_LAYERS)
		            : "GPU layers");
		COST(a, "a shorter context or layers on the CPU");
	}
}

/* The devices the run asked to use: tensor x pipeline parallel degree,
 * the devices it allocated on, and for engines that spread over every
 * visible GPU (llama.cpp, Ollama, TGI without --num-shard) the devices
 * visible on the host of dev (unless told to keep to one: -sm none). */
static uint64_t devices_wanted(struct ctx *c, int32_t dev)
{
	const struct vrt_diagnosis *d = c->d;
	uint64_t want = d->ndevices, par = d->flags.tp ? d->flags.tp : 1;
	size_t i, visible = 0;

	par *= d->flags.pp ? d->flags.pp : 1;
	if (par > want)
		want = par;
	if (vrt_engine_info(c->engine)->spreads && !d->flags.tp &&
	    !d->flags.one_device && dev >= 0 && (size_t)dev < c->t->ndevices) {
		for (i = 0; i < c->t->ndevices; i++)
			visible += c->t->devices[i].host_idx ==
			           c->t->devices[dev].host_idx;
		if (visible > want)
			want = visible;
	}
	return want;
}

/* The device holding VRT_DIAG_SHARD_FRACTION of the weights of a run that
 * asked for several devices while the others stayed nearly empty, or
 * NULL. *want: the devices it asked for. */
static const struct vrt_diag_device *not_sharded(struct ctx *c, uint64_t *want)
{
	const struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *heavy = NULL;
	uint64_t sumw = 0;
	size_t k;

	for (k = 0; k < d->ndevices; k++) {
		sumw += d->devices[k].weights_bytes;
		if (!heavy ||
		    d->devices[k].weights_bytes > heavy->weights_bytes)
			heavy = &d->devices[k];
	}
	if (!heavy || !sumw)
		return NULL;
	*want = devices_wanted(c, heavy->device);
	if (*want < 2 || (double)heavy->weights_bytes <
	                         VRT_DIAG_SHARD_FRACTION * (double)sumw)
		return NULL;
	/* A log that does not print the other ranks' lines apart (each
	 * sees its card as GPU 0) does not show an unsharded run */
	if (d->source_log && d->ndevices < *want)
		return NULL;
	for (k = 0; k < d->ndevices; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		if (x != heavy && x->peak_bytes * 10 > x->total_bytes)
			return NULL;
	}
	return heavy;
}

/* Ranks of a run stacked on one device while another visible device
 * stayed idle (a per-worker CUDA_VISIBLE_DEVICES naming the same card, a
 * launcher that ignores the local rank): two processes or more allocated
 * on dev and on no other device, and a device of the same host that no
 * process allocated on. A run whose parallel size is known to be 1 has no
 * ranks to place. Returns the first idle device (its trace index), or -1;
 * the ranks' PIDs into pids (at most max), their count into *n, and the
 * idle devices' count into *nidle. */
static int32_t misplaced_ranks(const struct ctx *c, int32_t dev,
                               uint64_t *pids, size_t max, size_t *n,
                               size_t *nidle)
{
	const struct vrt_replay *r = c->r;
	const struct vrt_trace *t = c->t;
	uint64_t used = 0;
	int32_t idle = -1;
	size_t i, k;

	*n = *nidle = 0;
	if (dev < 0 || dev >= 64 || (size_t)dev >= t->ndevices ||
	    (c->d->flags.tp == 1 && c->d->flags.pp <= 1))
		return -1;
	for (i = 0; i < r->nprocs && i < t->nprocs; i++) {
		used |= r->procs[i].devices;
		if (r->procs[i].devices != 1ull << dev)
			continue;
		if (*n < max)
			pids[*n] = t->procs[i].pid;
		++*n;
	}
	if (*n < 2)
		return -1;
	for (k = 0; k < t->ndevices && k < r->ndevices && k < 64; k++)
		if ((int32_t)k != dev && !(used >> k & 1) &&
		    t->devices[k].host_idx == t->devices[dev].host_idx &&
		    !r->dev[k].peak_bytes) {
			if (idle < 0)
				idle = (int32_t)k;
			++*nidle;
		}
	return idle;
}

/* "401 and 402", "401, 402 and 403" (n PIDs, at most max in v). */
static void pid_list(char *buf, size_t len, const uint64_t *v, size_t n,
                     size_t max)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && i < max && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64,
		                      !i                           ? ""
		                      : i + 1 == (n < max ? n : max) ? " and "
		                                                     : ", ",
		                      v[i]);
	if (n > max && o < len)
		snprintf(buf + o, len - o, " and %zu more", n - max);
}

/* What one device holding the weights looks like: its share, and every
 * other device of its host the run could see, used or not. */
static void shard_evidence(struct ctx *c, const struct vrt_diag_device *heavy,
                           uint64_t sumw, uint64_t want)
{
	struct vrt_diagnosis *d = c->d;
	size_t k;

	if (sumw)
		evidence(d, "weights_share_percent", heavy->device,
		         VRT_DIAG_PERCENT, heavy->weights_bytes * 100 / sumw,
		         "device %d holds %" PRIu64 "%% of the weights (%s) "
		         "while the run asked for %" PRIu64 " devices",
		         heavy->device, heavy->weights_bytes * 100 / sumw,
		         SZ(heavy->weights_bytes), want);
	for (k = 0; k < c->t->ndevices && k < c->r->ndevices; k++) {
		const struct vrt_diag_device *x = diag_dev(d, (int32_t)k);
		uint64_t tot = dev_total(c->t, c->r, k);
		if ((int32_t)k == heavy->device ||
		    c->t->devices[k].host_idx !=
		            c->t->devices[heavy->device].host_idx)
			continue;
		evidence(d, "idle_device_peak_bytes", (int32_t)k, VRT_DIAG_BYTES,
		         x ? x->peak_bytes : 0, "device %zu peaked at %s of %s: %s",
		         k, SZ(x ? x->peak_bytes : 0), SZ(tot),
		         x ? "nearly empty"
		           : "visible to the run, never allocated on");
	}
}

/* not_sharded because the ranks share a card: name them and the idle
 * card, and place them (never a parallel size the run already has). */
static void ranks_misplaced(struct ctx *c, int32_t dev, int32_t idle,
                            const uint64_t *pids, size_t n, size_t nidle)
{
	struct vrt_diagnosis *d = c->d;
	const char *tp = flag_name(c->engine, N_TP);
	const struct vrt_diag_device *fd = diag_dev(d, dev);
	uint64_t sumw = 0;
	char list[160];
	struct advice *a;
	size_t k;

	snprintf(d->detail, sizeof(d->detail), "not_sharded");
	for (k = 0; k < d->ndevices; k++)
		sumw += d->devices[k].weights_bytes;
	if (fd)
		shard_evidence(c, fd, sumw, n);
	pid_list(list, sizeof(list), pids, n, 8);
	evidence(d, "ranks_on_one_device", dev, VRT_DIAG_COUNT, n,
	         "the ranks in PIDs %s are %s on device %d; device %d is idle%s "
	         "(visible to the run, nothing allocated on it)",
	         list, n == 2 ? "both" : "all", dev, idle,
	         nidle > 1 ? " and so are others" : "");
	if (d->flags.tp >= 2 && tp)
		evidence(d, "tensor_parallel", -1, VRT_DIAG_COUNT, d->flags.tp,
		         "the run asks for %s %" PRIu64 ": the size is right, the "
		         "placement is not",
		         tp, d->flags.tp);
	a = advise(c, RANK_FREE);
	ACT(a,
	    "%splace each rank on its own GPU: PIDs %s %s opened device %d "
	    "while device %d stayed idle; give every worker all the run's "
	    "cards (CUDA_VISIBLE_DEVICES=%d,%d on the whole run, or unset) "
	    "and let the launcher pick each rank's device from its local rank",
	    engine_label(c->engine), list, n == 2 ? "both" : "all", dev, idle,
	    dev < idle ? dev : idle, dev < idle ? idle : dev);
	COST(a, "none: the idle card was meant to hold a rank");
}

/* weights: detail not_sharded / card_too_small / weights_do_not_fit. */
static void verdict_weights(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *heavy;
	const struct vrt_model *m = d->model.have ? &d->model.desc : NULL;
	uint64_t sumw = 0, want = 0, wlive = c->x.weights;
	uint64_t room = sub0(c->total, c->other);
	struct advice *a;
	size_t k;

	d->verdict = VRT_VERDICT_WEIGHTS;
	for (k = 0; k < d->ndevices; k++)
		sumw += d->devices[k].weights_bytes;
	common_failure_evidence(c);
	{
		uint64_t pids[8];
		size_t n, nidle;
		int32_t idle = misplaced_ranks(c, c->f->device, pids, 8, &n,
		                               &nidle);
		if (idle >= 0) {
			ranks_misplaced(c, c->f->device, idle, pids, n, nidle);
			return;
		}
	}
	heavy = not_sharded(c, &want);
	if (heavy) {
		snprintf(d->detail, sizeof(d->detail), "not_sharded");
		shard_evidence(c, heavy, sumw, want);
		if (d->flags.tp >= 2)
			evidence(d, "tensor_parallel", -1, VRT_DIAG_COUNT,
			         d->flags.tp,
			         "the command line asks for %s %" PRIu64,
			         flag_name(c->engine, N_TP), d->flags.tp);
		a = advise(c, RANK_FREE);
		if (flag_name(c->engine, N_TP))
			ACT(a,
			    "%sfix the sharding so each of the %" PRIu64
			    " devices loads its own slice: check that every "
			    "worker selects its own GPU (%s lists "
			    "%" PRIu64 " cards, %s %" PRIu64 ")",
			    engine_label(c->engine), want,
			    visible_devices(c->t, heavy->device), want,
			    flag_name(c->engine, N_TP), want);
		else
			ACT(a,
			    "%sspread the layers over the %" PRIu64
			    " visible devices: check the split settings "
			    "(llama.cpp -sm, -ts, -mg) and %s",
			    engine_label(c->engine), want,
			    visible_devices(c->t, heavy->device));
		COST(a, "none: the cards were meant to share the weights");
		if (d->rung != VRT_RUNG_WEIGHTS)
			confidence(c, VRT_CONFIDENCE_MEDIUM,
			           "the failure came at the %s rung; the "
			           "unsharded weights are what left it no "
			           "room",
			           vrt_diagnose_rung_name(d->rung));
		return;
	}
	/* The weights (with the call that failed, when it loaded weights)
	 * are nearly everything on the card. */
	if (wlive &&
	    wlive * 10 >= (c->live + c->f->requested_bytes + c->other) * 9) {
		snprintf(d->detail, sizeof(d->detail), "card_too_small");
		evidence(d, "weights_loaded_bytes", c->f->device,
		         VRT_DIAG_BYTES, wlive,
		         "weights alone fill device %d: %s loaded or "
		         "requested of %s",
		         c->f->device, SZ(wlive), SZ(c->total));
	} else
		snprintf(d->detail, sizeof(d->detail), "weights_do_not_fit");
	if (c->fd)
		budget_evidence(c, c->fd);
	if (!flag_name(c->engine, N_TP)) {
		/* llama.cpp and Ollama: fewer layers on this GPU, a smaller
		 * GGUF, more GPUs. What the layers may use: the card less
		 * other processes and the compute buffer of a warm-up. */
		uint64_t avail = sub0(room, c->x.profile);
		uint64_t kv_ctx = d->model.have ? d->model.kv_bytes_per_token *
		                                          d->model.context_len
		                                : 0;
		uint64_t cards = devices_wanted(c, c->f->device) + 1;
		lever_ngl(c, avail, 1);
		lever_quant(c, sub0(avail, kv_ctx));
		if (m && avail)
			cards = (m->weight_bytes + kv_ctx +
			         fit_value(c, avail, 1, 1) - 1) /
			        fit_value(c, avail, 1, 1);
		lever_cards(c, cards > 1 ? cards : 2,
		            "to keep every layer on a GPU");
		return;
	}
	if (m && c->total) {
		/* The cards the weights need, each keeping 20% for the KV
		 * cache and the margin spare. */
		uint64_t per = (uint64_t)((double)c->total * 0.8 *
		                          (1.0 - margin_pct(c) / 100.0));
		uint64_t n = per ? (m->weight_bytes + per - 1) / per : 2, p2 = 2;
		while (p2 < n)
			p2 *= 2;
		/* never the parallel size the run already had */
		while (p2 <= d->flags.tp)
			p2 *= 2;
		a = advise(c, RANK_HARDWARE);
		ACT(a,
		    "%sshard the weights over %" PRIu64 " cards: %s %" PRIu64
		    " (the config's %s of weights need at least %" PRIu64
		    " cards with 20%% of each left for the KV cache, %s)",
		    engine_label(c->engine), p2, flag_name(c->engine, N_TP), p2,
		    SZ(m->weight_bytes), n, margin_words(c));
		COST(a, "%" PRIu64 " cards instead of one; tensor parallelism "
		        "adds communication between them",
		     p2);
		lever_cpu_offload(c, per);
	} else {
		a = advise(c, RANK_HARDWARE);
		ACT(a,
		    "%sshard the weights over more cards: %s %" PRIu64
		    " (or more; --model-config tells how many)",
		    engine_label(c->engine), flag_name(c->engine, N_TP),
		    d->flags.tp >= 2 ? d->flags.tp * 2 : 2);
		COST(a, "tensor parallelism adds communication between the "
		        "cards");
	}
	lever_quant(c, room);
}

/* kv_cache at the reserves rung: the KV reserve itself, or a graph
 * capture / communicator setup the reserve left no room for. */
static void verdict_reserve(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_engine_info *e = vrt_engine_info(c->engine);
	int graph = f->phase == VRT_PHASE_cuda_graph,
	    comm = f->phase == VRT_PHASE_comm, kv_call;
	uint64_t need;
	struct advice *a;

	d->verdict = VRT_VERDICT_KV_CACHE;
	common_failure_evidence(c);
	if (c->fd)
		budget_evidence(c, c->fd);
	if (graph || comm) {
		snprintf(d->detail, sizeof(d->detail), "%s%s",
		         graph ? "graph_capture" : "comm",
		         c->x.kv ? "_after_reserve" : "_buffers");
		evidence(d, "reserve_bytes", f->device, VRT_DIAG_BYTES, c->x.kv,
		         "%s asked %s with %s free after the KV cache reserve "
		         "(%s) was sized: the reserve left no room for it",
		         graph ? "CUDA graph capture" : "communicator setup",
		         SZ(f->requested_bytes), SZ(f->free_bytes),
		         SZ(c->x.kv));
		lever_fraction(c, to_free(c, f->requested_bytes, f->free_bytes),
		               graph ? "for the graph capture"
		                     : "for the communicators");
		if (graph && e->no_graphs) {
			a = advise(c, RANK_EAGER);
			ACT(a, "%srun without CUDA graphs: %s",
			    engine_label(c->engine), e->no_graphs);
			COST(a, "without CUDA graphs every decode step launches "
			        "its kernels one by one: slower decoding");
		}
		if (graph && e->graph_sizes) {
			a = advise(c, RANK_GRAPHS);
			ACT(a, "%scapture fewer graph sizes: %s",
			    engine_label(c->engine), e->graph_sizes);
			COST(a, "batches larger than the largest graph run "
			        "without one: slower decoding at high load");
		}
		return;
	}
	/* The reserve itself did not fit next to the weights (or, when a
	 * later call failed, left it no room). */
	snprintf(d->detail, sizeof(d->detail), "kv_reserve");
	kv_call = f->phase == VRT_PHASE_kv_cache ||
	          f->phase == VRT_LOAD_PHASE_INFERRED_KV;
	need = kv_call ? f->requested_bytes : c->x.kv;
	if (f->free_bytes >= need && c->free_estimated)
		evidence(d, "kv_reserve_requested_bytes", f->device,
		         VRT_DIAG_BYTES, need,
		         "the KV cache reserve %s %s; the log's numbers leave "
		         "%s after the weights: what else held the card is not "
		         "in the log",
		         kv_call ? "asked" : "holds", SZ(need),
		         SZ(f->free_bytes));
	else
		evidence(d, "kv_reserve_requested_bytes", f->device,
		         VRT_DIAG_BYTES, need,
		         "the KV cache reserve %s %s with %s left after the "
		         "weights: %s short",
		         kv_call ? "asked" : "holds", SZ(need),
		         SZ(f->free_bytes), SZ(c->shortfall));
	if (spread_engine(c)) {
		/* llama.cpp's KV cache grows with -c: the context that fits,
		 * a quantized cache, or fewer layers on the GPU. */
		lever_scale(c, VRT_ENGINE_CONTEXT, d->flags.max_model_len, 0,
		            f->free_bytes, need, "lower the context",
		            "the KV cache's bytes");
		lever_kv_quant(c, to_free(c, need, f->free_bytes));
		if (setting(c, VRT_ENGINE_GPU_LAYERS) && d->model.have)
			lever_ngl(c, sub0(c->total, c->other), 0);
		return;
	}
	/* The engines that size the reserve as a fraction of the card. */
	lever_fraction(c, to_free(c, need, f->free_bytes),
	               "so the reserve fits what the weights leave");
}

/* A request's failure whose size the log does not print (a pool's growth
 * refused): what the requests needed is not known, only that it was more
 * than the room left. The advice names the levers without sizing them:
 * fewer tokens per step (half as many), and for several requests, fewer
 * of them at once. Returns 1 when it gave the advice. */
static int unsized_advice(struct ctx *c, uint32_t inflight)
{
	const struct vrt_diag_flags *fl = &c->d->flags;
	int field = setting(c, VRT_ENGINE_UBATCH) ? VRT_ENGINE_UBATCH
	                                          : VRT_ENGINE_BATCH_TOKENS;
	uint64_t v = field == VRT_ENGINE_UBATCH ? fl->ubatch : fl->batch_tokens;
	struct advice *a;
	char b[96];

	if (!c->d->source_log || c->f->requested_bytes)
		return 0;
	if (!v && c->engine == VRT_ENGINE_LLAMACPP)
		v = 512;
	evidence(c->d, "request_need_unknown", c->f->device, VRT_DIAG_BYTES,
	         c->x.room,
	         "the log does not print how much the failing step asked: "
	         "more than the %s the weights and reserves left",
	         SZ(c->x.room));
	if (setting(c, field)) {
		a = advise(c, 0.25);
		if (v)
			ACT(a, "%sfewer tokens per step: %s (was %" PRIu64 "): a "
			       "step's temporaries grow with its tokens; halve it "
			       "and re-run, the log does not say by how much it "
			       "was short%s",
			    engine_label(c->engine),
			    set_to(b, sizeof(b), c, field, v / 2 >= 32 ? v / 2 : 32),
			    v,
			    field == VRT_ENGINE_UBATCH
			            ? " (-b, the logical batch, may stay)"
			            : "");
		else
			ACT(a, "%sfewer tokens per step: lower %s (half the value "
			       "the engine runs with, then re-run)",
			    engine_label(c->engine), setting(c, field));
		COST(a, "long prompts are prefilled in more steps: lower "
		        "prefill throughput");
	}
	if (inflight > 1 && setting(c, VRT_ENGINE_CONCURRENCY)) {
		a = advise(c, 1.0 / (double)inflight);
		ACT(a, "%sfewer requests at once: %s (%" PRIu32 " were in flight "
		       "when it failed)",
		    engine_label(c->engine),
		    set_to(b, sizeof(b), c, VRT_ENGINE_CONCURRENCY, inflight - 1),
		    inflight);
		COST(a, "requests past the cap wait in the queue (lower "
		        "throughput)");
	}
	confidence(c, VRT_CONFIDENCE_MEDIUM,
	           "the log does not print the failing step's size: the "
	           "budget is the one the failure was building, the advice "
	           "is not sized");
	return 1;
}

/* kv_cache at the activations rung of a request: one request does not
 * fit next to the reserves. */
static void verdict_context(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t one = c->x.one, room = c->x.room;

	d->verdict = VRT_VERDICT_KV_CACHE;
	snprintf(d->detail, sizeof(d->detail), "context_too_long");
	common_failure_evidence(c);
	if (c->fd)
		budget_evidence(c, c->fd);
	if (unsized_advice(c, f->inflight))
		return;
	evidence(d, "single_request_bytes", f->device, VRT_DIAG_BYTES, one,
	         "one request needed %s of activations%s; weights + KV "
	         "reserve left %s for it",
	         SZ(one),
	         c->x.one_how == ONE_ONLY ? ""
	         : c->x.one_how == ONE_ALONE
	                 ? " (measured alone)"
	                 : " (the requests in flight, on average)",
	         SZ(room));
	/* llama.cpp's per-step temporaries are bounded by -ub (a prompt is
	 * processed -ub tokens at a time); the context bounds them only
	 * through attention scores, which flash attention does not keep */
	if (c->engine == VRT_ENGINE_LLAMACPP && d->flags.flash_attn)
		;
	else if (d->flags.max_model_len)
		lever_scale(c, VRT_ENGINE_CONTEXT, d->flags.max_model_len, 0,
		            room, one, "lower the context",
		            "one request's activations");
	else if (c->engine != VRT_ENGINE_LLAMACPP) {
		struct advice *a = advise(c, RANK_UNKNOWN);
		ACT(a, "%slower %s: one request needed %s where %s is left",
		    engine_label(c->engine), setting(c, VRT_ENGINE_CONTEXT),
		    SZ(one), SZ(room));
		COST(a, "shorter inputs: prompts longer than the new limit are "
		        "rejected");
	}
	/* A long prompt's activations grow with the tokens of a step, which
	 * the batch setting caps (chunked prefill, llama.cpp's -ub). */
	lever_step_tokens(c, room, one, "a step's activations");
	if (spread_engine(c))
		lever_kv_quant(c, to_free(c, one, room));
	else
		lever_fraction(c, to_free(c, one, room),
		               "for one request's activations");
}

/* concurrency at the activations rung of a load: the profiling or
 * warm-up run of the configured batch does not fit. */
static void verdict_batch(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t need = c->x.profile, have = c->x.room;
	int field = setting(c, VRT_ENGINE_UBATCH) ? VRT_ENGINE_UBATCH
	                                          : VRT_ENGINE_BATCH_TOKENS;
	uint64_t batch = field == VRT_ENGINE_UBATCH ? d->flags.ubatch
	                                            : d->flags.batch_tokens;
	char pb[32];
	struct advice *a;

	d->verdict = VRT_VERDICT_CONCURRENCY;
	snprintf(d->detail, sizeof(d->detail), "batch_activations");
	common_failure_evidence(c);
	if (c->fd)
		budget_evidence(c, c->fd);
	evidence(d, "batch_activation_bytes", f->device, VRT_DIAG_BYTES, need,
	         "the %s run (phase %s: a dummy forward of the configured "
	         "batch) needed at least %s of activations; weights and "
	         "reserves left %s",
	         f->phase == VRT_PHASE_profile ? "profiling" : "warm-up",
	         vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)), SZ(need),
	         SZ(have));
	if (batch)
		evidence(d, "batch_tokens", -1, VRT_DIAG_TOKENS, batch,
		         "the command line sizes the batch at %s %" PRIu64
		         " tokens",
		         setting(c, field), batch);
	if (!lever_scale(c, field, batch, 0, have, need, "fewer tokens per batch",
	                 "the batch's activations")) {
		a = advise(c, RANK_UNKNOWN);
		if (setting(c, field) && need)
			ACT(a,
			    "%slower %s to about %" PRIu64 "%% of its current "
			    "value: the configured batch needed %s, %s is left "
			    "(%s)",
			    engine_label(c->engine), setting(c, field),
			    fit_value(c, 100, have, need), SZ(need), SZ(have),
			    margin_words(c));
		else
			ACT(a, "%slower the tokens per batch",
			    engine_label(c->engine));
		COST(a, "smaller batches: long prompts are prefilled in more "
		        "steps (lower prefill throughput)");
	}
	if (!lever_scale(c, VRT_ENGINE_CONCURRENCY, d->flags.max_num_seqs, 0,
	                 have, need, "fewer sequences per batch",
	                 "the batch's activations") &&
	    setting(c, VRT_ENGINE_CONCURRENCY)) {
		a = advise(c, RANK_UNKNOWN);
		ACT(a, "%sfewer sequences per batch: %s",
		    engine_label(c->engine), setting(c, VRT_ENGINE_CONCURRENCY));
		COST(a, "fewer sequences share a step (lower throughput)");
	}
	if (c->x.kv)
		lever_fraction(c, to_free(c, need, have),
		               "for the batch's activations");
}

/* concurrency at the in-flight rung: one request fits, the overlap of
 * those in flight does not. */
static void verdict_concurrency(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t one = c->x.one, room = c->x.room;
	uint64_t fit = one ? room / one : 0;
	uint64_t demand = one * (f->inflight ? f->inflight : 1);

	d->verdict = VRT_VERDICT_CONCURRENCY;
	snprintf(d->detail, sizeof(d->detail), "overlapping_requests");
	common_failure_evidence(c);
	if (unsized_advice(c, f->inflight))
		return;
	if (c->fd)
		budget_evidence(c, c->fd);
	if (c->x.one_how == ONE_CACHE)
		evidence(
		        d, "single_request_peak_bytes", f->device,
		        VRT_DIAG_BYTES, one,
		        "one request peaks at about %s: alone it grew nothing, "
		        "drawing on the %s a profiling / warm-up run left "
		        "cached, taken as the activations of %" PRIu64
		        " sequences",
		        SZ(one),
		        SZ(c->r->dev[f->device]
		                   .phase[VRT_PHASE_profile]
		                   .peak_bytes),
		        d->flags.max_num_seqs);
	else
		evidence(
		        d, "single_request_peak_bytes", f->device,
		        VRT_DIAG_BYTES, one,
		        "one request peaks at %s%s: it fits", SZ(one),
		        c->x.one_how == ONE_ALONE
		                ? " (measured alone)"
		                : " (the requests in flight at the failure, on "
		                  "average)");
	evidence(d, "request_headroom_bytes", f->device, VRT_DIAG_BYTES, room,
	         "weights + KV cache + everything else leave %s for "
	         "requests on device %d",
	         SZ(room), f->device);
	evidence(d, "requests_that_fit", f->device, VRT_DIAG_COUNT, fit,
	         "%" PRIu64 " request%s fit%s at once; %" PRIu32
	         " %s in flight when it failed (at most %" PRIu32 ")",
	         fit, fit == 1 ? "" : "s", fit == 1 ? "s" : "", f->inflight,
	         f->inflight == 1 ? "was" : "were", c->r->max_inflight);
	lever_seqs(c, fit_value(c, room, 1, one ? one : 1), f->inflight);
	/* What a step holds grows with its tokens: fewer tokens per step
	 * (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size,
	 * TGI --max-batch-prefill-tokens, llama.cpp -ub). */
	lever_step_tokens(c, room, demand,
	                  "the activations of the requests in flight");
	if (spread_engine(c))
		lever_kv_quant(c, to_free(c, demand, room));
	else
		lever_fraction(c, to_free(c, demand, room),
		               "for the requests in flight");
	lever_cards(c, 2, "to serve more at once");
	if (c->x.one_how != ONE_ALONE)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "one request's activations were not measured alone: "
		           "%s",
		           c->x.one_how == ONE_CACHE
		                   ? "lone requests drew on memory a profiling "
		                     "run left cached"
		                   : "estimated as the requests in flight at "
		                     "the failure, on average");
}


/* inconclusive: detail, why, and what would tell. */
static const char *record_words(const struct ctx *c, char *buf, size_t n);

static void verdict_inconclusive(struct ctx *c, const char *detail,
                                 const char *why, const char *get)
{
	struct vrt_diagnosis *d = c->d;
	char rec[VRT_DIAG_TEXT];

	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1; /* the ladder is shown, but names no budget */
	snprintf(d->detail, sizeof(d->detail), "%s", detail);
	if (c->f)
		common_failure_evidence(c);
	if (c->f && c->fd)
		budget_evidence(c, c->fd);
	confidence(c, VRT_CONFIDENCE_LOW, "%s", why);
	/* without a trace, what would tell is a trace */
	if (d->source_log && strcmp(detail, "not_an_engine_log"))
		get = record_words(c, rec, sizeof(rec));
	ACT(advise(c, RANK_FREE), "%s", get);
}

/* Room to leave on the tightest device so the margin is spare again:
 * fewer bytes reserved (the memory fraction, llama.cpp's context or a
 * quantized KV cache). */
static void restore_margin(struct ctx *c, uint64_t need_free, const char *why)
{
	struct vrt_diagnosis *d = c->d;
	uint64_t kv = kv_bytes(c);

	if (!spread_engine(c)) {
		lever_fraction(c, need_free, why);
	} else if (kv > need_free && d->flags.max_model_len) {
		/* The context whose KV cache is need_free smaller: the scale
		 * takes the margin off once more, so have is its inverse. */
		double have = (double)(kv - need_free) /
		              (1.0 - (double)margin_pct(c) / 100.0);
		lever_scale(c, VRT_ENGINE_CONTEXT, d->flags.max_model_len, 0,
		            (uint64_t)have, kv, "lower the context",
		            "the KV cache's bytes");
	}
	if (spread_engine(c))
		lever_kv_quant(c, need_free);
}

static void verdict_none(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_diag_device *tight = NULL;
	uint64_t need_free = 0, want;
	struct advice *a;
	size_t k;

	d->verdict = VRT_VERDICT_NONE;
	snprintf(d->detail, sizeof(d->detail), "%s",
	         c->r->recovered ? "near_miss" : "fits");
	for (k = 0; k < d->ndevices; k++) {
		struct vrt_diag_device *x = &d->devices[k];
		evidence(d, "headroom_bytes", x->device, VRT_DIAG_BYTES,
		         x->headroom_bytes,
		         "device %d: peak %s of %s, headroom %s (weights %s, "
		         "KV cache %s)",
		         x->device, SZ(x->peak_bytes), SZ(x->total_bytes),
		         SZ(x->headroom_bytes), SZ(x->weights_bytes),
		         SZ(x->kv_bytes));
		if (x->other_bytes >= VRT_DIAG_OTHER_MIN_BYTES)
			other_processes_evidence(c, x->device, x->other_bytes);
		/* The device furthest below the margin. */
		want = x->total_bytes * d->margin_pct / 100;
		if (x->total_bytes && x->headroom_bytes < want &&
		    want - x->headroom_bytes > need_free) {
			need_free = want - x->headroom_bytes;
			tight = x;
		}
	}
	if (c->r->max_inflight)
		evidence(d, "max_inflight", -1, VRT_DIAG_COUNT,
		         c->r->max_inflight,
		         "at most %" PRIu32 " request%s in flight",
		         c->r->max_inflight,
		         c->r->max_inflight == 1 ? "" : "s");
	if (tight)
		evidence(d, "headroom_below_margin", tight->device,
		         VRT_DIAG_BYTES, tight->headroom_bytes,
		         "device %d: the headroom of %s is below the %d%% "
		         "margin (%s of %s): a longer prompt, another request "
		         "or a fragmented cache can fail",
		         tight->device, SZ(tight->headroom_bytes),
		         margin_pct(c),
		         SZ(tight->total_bytes * d->margin_pct / 100),
		         SZ(tight->total_bytes));
	near_miss_evidence(c);
	if (tight) {
		c->fd = tight;
		c->total = tight->total_bytes;
	}
	if (c->r->recovered) {
		a = advise(c, RANK_FREE);
		ACT(a, "nothing failed for good, but the headroom is thin: the "
		       "allocator had to empty its cache to carry on; leave "
		       "more room before the load grows");
		COST(a, "emptying the cache stalls the server (it synchronizes "
		        "and frees before retrying)");
		if (!need_free)
			for (k = 0; k < c->r->nfails; k++)
				if (c->r->fails[k].recovered &&
				    c->r->fails[k].requested_bytes > need_free)
					need_free =
					        c->r->fails[k].requested_bytes;
		if (!c->total && d->ndevices) {
			c->fd = &d->devices[0];
			c->total = c->fd->total_bytes;
		}
		restore_margin(c, need_free, "to keep the margin spare");
	} else if (tight) {
		a = advise(c, RANK_FREE);
		ACT(a, "nothing failed, but device %d keeps less than the %d%% "
		       "margin (%s free of %s): leave more room before the load "
		       "grows",
		    tight->device, margin_pct(c), SZ(tight->headroom_bytes),
		    SZ(tight->total_bytes));
		restore_margin(c, need_free, "to keep the margin spare");
	} else {
		a = advise(c, RANK_FREE);
		ACT(a, "nothing to change: no allocation failed and every "
		       "device keeps the %d%% margin spare",
		    margin_pct(c));
	}
	if (c->root && c->root->running)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "the run is still recording: nothing has failed so "
		           "far, and a load still to come may change that");
	else if (c->root && c->root->exit_kind == VRT_EXIT_NONE &&
	         !c->root->has_trailer)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "the run's end was not recorded (no exit status, no "
		           "clean end)");
}

/* ---- sanity: numbers that cannot be ------------------------------------ */

/*
 * A data problem: a device whose traced peak (managed memory aside,
 * which may oversubscribe) is above its capacity, or a card the run's
 * processes disagree about (load.c: one UUID, two names, capacities or
 * hosts). No budget can be read from such numbers: the verdict is
 * inconclusive, naming the likely cause. Returns 1 when it found one.
 */
static int data_problem(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *bad = NULL;
	const struct vrt_device *dv;
	size_t k;

	for (k = 0; k < d->ndevices && !bad; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		uint64_t managed = c->r->dev[x->device]
		                           .fam[VRT_FAM_MANAGED]
		                           .peak_bytes;
		dv = &c->t->devices[x->device];
		if (dv->conflict[0] ||
		    (x->total_bytes && x->peak_bytes > x->total_bytes &&
		     x->peak_bytes - managed > x->total_bytes))
			bad = x;
	}
	if (!bad)
		return 0;
	dv = &c->t->devices[bad->device];
	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1;
	if (dv->conflict[0]) {
		snprintf(d->detail, sizeof(d->detail),
		         "device_identity_conflict");
		evidence(d, "device_identity_conflict", bad->device,
		         VRT_DIAG_COUNT, 1,
		         "data problem: the processes disagree about device "
		         "%d (%s): %s",
		         bad->device, dv->uuid, dv->conflict);
		confidence(c, VRT_CONFIDENCE_LOW,
		           "data problem: one card identity (UUID %s) stands "
		           "for different cards, so no device's budget can be "
		           "trusted: runs from different hosts were merged, or "
		           "a driver reported one UUID for several cards",
		           dv->uuid);
	} else {
		snprintf(d->detail, sizeof(d->detail), "peak_over_capacity");
		evidence(d, "peak_over_capacity", bad->device, VRT_DIAG_BYTES,
		         bad->peak_bytes,
		         "data problem: device %d's %s peak of %s is above "
		         "its capacity of %s: no card holds that much",
		         bad->device, d->source_log ? "logged" : "traced",
		         SZ(bad->peak_bytes), SZ(bad->total_bytes));
		if (d->source_log) {
			confidence(c, VRT_CONFIDENCE_LOW,
			           "data problem: the memory the log's lines print "
			           "for device %d adds up to more than the card it "
			           "names: the lines come from different runs or "
			           "cards (a log pieced together, ranks mixed up)",
			           bad->device);
			ACT(advise(c, RANK_FREE),
			    "give the log of one run of one server; with ranks, "
			    "the lines with their process prefixes");
			return 1;
		}
		if (dv->uuid[0])
			confidence(c, VRT_CONFIDENCE_LOW,
			           "data problem: what the processes hold on "
			           "card %s adds up to more than it has: runs "
			           "recorded at other times or on other hosts "
			           "were merged into one analysis, or a driver "
			           "that ignores %s gave different cards one "
			           "identity",
			           dv->uuid,
			           visible_devices(c->t, bad->device));
		else
			confidence(c, VRT_CONFIDENCE_LOW,
			           "data problem: the trace has no UUID for "
			           "device %d, so the processes' cards were "
			           "matched by ordinal; processes with different "
			           "%s each call their first card device 0, so "
			           "different cards were merged into one",
			           bad->device,
			           visible_devices(c->t, bad->device));
	}
	if (dv->conflict[0])
		ACT(advise(c, RANK_FREE),
		    "analyze each host's run apart (one process: vramtrace "
		    "analyze RUN/PID.vtrace); from one host, the driver gave "
		    "two cards one UUID");
	else if (dv->uuid[0])
		ACT(advise(c, RANK_FREE),
		    "analyze each run apart (one process: vramtrace analyze "
		    "RUN/PID.vtrace) and check each process's %s",
		    visible_devices(c->t, bad->device));
	else
		ACT(advise(c, RANK_FREE),
		    "analyze each process apart (vramtrace analyze "
		    "RUN/PID.vtrace), check each process's %s, and record "
		    "again with this vramtrace (its traces name every card "
		    "by UUID)",
		    visible_devices(c->t, bad->device));
	return 1;
}

/* No decisive failure: none, host_memory, or inconclusive when the root
 * died anyway. */
static void without_failure(struct ctx *c)
{
	const struct vrt_process *root = c->root;

	if (host_exhausted(&c->host)) {
		verdict_host(c);
		return;
	}
	if (!root || !died(root) || (c->serving && stopped(root))) {
		verdict_none(c);
		return;
	}
	exit_evidence(c, root);
	near_miss_evidence(c);
	if (c->r->recovered)
		verdict_inconclusive(
		        c, "recovered_then_died",
		        "every failed allocation was recovered, and the "
		        "process "
		        "then died of something else",
		        "read the server's log for the error it died of "
		        "(vramtrace record keeps the command's output)");
	else if (!c->serving && stopped(root))
		verdict_inconclusive(
		        c, "stopped_while_loading",
		        "the run was stopped while loading, before anything "
		        "failed: no budget was tested",
		        "record again and let the server load (and serve) "
		        "before stopping it");
	else if (!c->serving)
		verdict_inconclusive(
		        c, "died_while_loading",
		        "the server died while loading without any failed "
		        "allocation: the budget that broke is not in the trace",
		        root->exit_kind == VRT_EXIT_SIGNAL &&
		                        root->exit_code == 9
		                ? "read the server's log for the error it died "
		                  "of (vramtrace record keeps the command's "
		                  "output); a kill by signal 9 may be the "
		                  "kernel's OOM killer (dmesg)"
		                : "read the server's log for the error it died "
		                  "of (vramtrace record keeps the command's "
		                  "output)");
	else
		verdict_inconclusive(
		        c, "died_while_serving",
		        "the server died while serving without any failed "
		        "allocation",
		        "read the server's log for the error it died of "
		        "(vramtrace record keeps the command's output)");
}

/* A device failure: inconclusive where the evidence cannot single out a
 * budget, else the ladder's verdict. */
/* The driver's own count at the failure: what it called used beyond this
 * run's live bytes, past what other processes were already seen to hold
 * (the first probe, NVML), is someone else's, except what the run's own
 * stream-ordered pools can have kept of their frees (pool_kept_max):
 * that much is the run's, and is not counted as another process's. */
static void driver_count(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	uint64_t beyond;

	if (!f->have_info || f->total_bytes <= f->free_bytes + c->live)
		return;
	beyond = f->total_bytes - f->free_bytes - c->live;
	if (beyond <= c->other)
		return;
	c->pool_kept = beyond - c->other;
	if (c->pool_kept > f->pool_kept_max)
		c->pool_kept = f->pool_kept_max;
	if (beyond - c->pool_kept <= c->other)
		return;
	c->other = beyond - c->pool_kept;
	if (c->fd && c->other > c->fd->other_bytes)
		c->fd->other_bytes = c->other;
}

/* The run's pool kept enough freed bytes that, given back, the call would
 * have fit: no budget of the run's was too small, its allocator kept
 * memory it could not reuse (chunks too small for the call). Which budget
 * to cut is not in the trace; the allocator is the lever. */
static int pool_decides(const struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	return f->have_info && c->pool_kept >= VRT_DIAG_POOL_MIN_BYTES &&
	       f->free_bytes + c->pool_kept >= f->requested_bytes;
}

static void verdict_pool(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	struct advice *a;

	climb(c);
	verdict_inconclusive(
	        c, "pool_kept",
	        "the run's own stream-ordered pool can have held the memory "
	        "the call needed: freed bytes it keeps are counted used by the "
	        "driver, and pieces too small for the call fail it; the trace "
	        "does not see the pool trimmed, so a process that came and went "
	        "between NVML samples would look the same, and no budget of "
	        "the server's is shown too small",
	        "which budget needs the room: the driver does not say how "
	        "the pool's pieces are cut; record the same load with an "
	        "allocator that gives memory back (below) and analyze that "
	        "run");
	evidence(d, "pool_kept_bytes", f->device, VRT_DIAG_BYTES, c->pool_kept,
	         "the driver counted %s used beyond the run's live bytes and "
	         "other processes; the run's stream-ordered pool can have "
	         "kept up to %s of freed allocations",
	         SZ(c->pool_kept), SZ(f->pool_kept_max));
	evidence(d, "shortfall_bytes", f->device, VRT_DIAG_BYTES, c->shortfall,
	         "the call was %s short; with the pool's kept bytes given "
	         "back it would have fit",
	         SZ(c->shortfall));
	a = advise(c, RANK_FREE);
	ACT(a, "%srun with PyTorch's native allocator (unset "
	       "backend:cudaMallocAsync in PYTORCH_CUDA_ALLOC_CONF) or with "
	       "expandable_segments:True: both give cached memory back "
	       "before they fail",
	    engine_label(c->engine));
	COST(a, "none for serving; a different allocator's timings");
}

/* A process that is no server: it never listened, took no connection,
 * began no annotated request, neither its command line, its stacks nor a
 * log name an engine, and nothing it allocated went to a budget an
 * engine sizes (weights, a KV cache, even one inferred from a probe, a
 * profile run, CUDA graphs, communicators). */
static int not_server(const struct ctx *c)
{
	const struct vrt_replay *r = c->r;
	size_t i;
	unsigned k;

	if (r->have_first_listen || r->connections || r->requests ||
	    c->engine || c->serving)
		return 0;
	for (i = 0; i < r->ndevices; i++)
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			if (r->dev[i].phase[k].allocs &&
			    !vrt_replay_phase_is_demand(k))
				return 0;
	return 1;
}

/* The report of a plain program (a script, a test, a training job) that
 * ran out of memory: the failing call, where it was made and what held
 * the device, instead of a server's budgets. */
static void verdict_program(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const char *site = d->failing_site[0] ? d->failing_site : "the call";
	struct advice *a;

	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1;
	d->have_ladder = 0;
	d->not_server = 1;
	snprintf(d->detail, sizeof(d->detail), "not_a_server");
	evidence(d, "held_bytes", f->device, VRT_DIAG_BYTES, c->live,
	         "%s asked for %s on device %d with %s of %s held by this "
	         "run%s%s%s",
	         site, SZ(f->requested_bytes), f->device, SZ(c->live),
	         SZ(c->total), c->other ? " and " : "",
	         c->other ? SZ(c->other) : "",
	         c->other ? " by other processes" : "");
	common_failure_evidence(c);
	confidence(c, VRT_CONFIDENCE_MEDIUM,
	           "not a server: the process never listened, served no "
	           "request and runs no engine vramtrace knows, so the "
	           "server budgets (weights, KV cache, requests) do not "
	           "apply; the failing call and what held the device are the "
	           "evidence");
	ACT(advise(c, RANK_FREE),
	    "free what the program no longer needs before %s, or ask for "
	    "less at once: the call paths holding the device are listed "
	    "under the top allocation sites",
	    site);
	a = advise(c, RANK_ELSEWHERE);
	ACT(a, "run it on a card with more free memory (choose it with "
	       "CUDA_VISIBLE_DEVICES)");
	COST(a, "another card");
	/* A server of an engine vramtrace does not know, dying while it
	 * loads, looks the same until its phases have names. */
	if (f->phase == VRT_PHASE_unattributed)
		ACT(advise(c, RANK_ELSEWHERE),
		    "if it is a server that had not started listening yet, "
		    "name its phases: `vramtrace rules RUN` lists the call "
		    "paths no rule matched; add a rules file (--rules) or "
		    "annotate the code (vramtrace_phase_push)");
}

static void with_failure(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t want = 0;
	const struct vrt_diag_device *heavy;
	int misplaced;

	climb(c);
	if (not_server(c)) {
		verdict_program(c);
		return;
	}
	if (f->after_ready && !f->inflight && f->uncounted &&
	    vrt_replay_phase_is_demand(f->phase)) {
		verdict_inconclusive(
		        c, "requests_not_counted",
		        "the failure came while serving, over connections whose "
		        "requests could not be counted (a protocol this trace's "
		        "writer did not follow): how many were in flight is "
		        "unknown, so context and concurrency cannot be told "
		        "apart",
		        "record with this version of vramtrace, which counts "
		        "HTTP/2 and gRPC streams and infers the requests of "
		        "other protocols, or bracket each request with "
		        "vramtrace_request_begin/end");
		return;
	}
	if (f->after_ready && !f->inflight &&
	    vrt_replay_phase_is_demand(f->phase)) {
		verdict_inconclusive(
		        c, "no_request_in_flight",
		        "the failure came while serving but with no request in "
		        "flight: the requests that made the memory are not in "
		        "the trace",
		        "count requests: record the server's connections "
		        "(vramtrace record) or bracket each request with "
		        "vramtrace_request_begin/end");
		return;
	}
	if (!f->after_ready && f->phase == VRT_PHASE_unattributed) {
		verdict_inconclusive(
		        c, "unattributed",
		        "no rule named the failing call and it failed while "
		        "loading: it may be weights, a reserve or a warm-up "
		        "batch",
		        "name the phases: `vramtrace rules RUN` lists the call "
		        "paths no rule matched; add a rules file (--rules) or "
		        "annotate the code (vramtrace_phase_push)");
		return;
	}
	ladder_confidence(c);
	before_attach(c);
	heavy = not_sharded(c, &want);
	{
		uint64_t pids[2];
		size_t n, nidle;
		misplaced = misplaced_ranks(c, f->device, pids, 2, &n,
		                            &nidle) >= 0;
	}
	/* Ranks stacked on one card: whatever rung broke, the cure is
	 * their placement. */
	if (misplaced || (heavy && heavy->device == f->device) ||
	    d->rung == VRT_RUNG_WEIGHTS)
		verdict_weights(c);
	else if (d->rung == VRT_RUNG_BASELINE)
		verdict_other(c);
	else if (d->rung == VRT_RUNG_RESERVES)
		verdict_reserve(c);
	else if (d->rung == VRT_RUNG_ACTIVATIONS && !f->after_ready)
		verdict_batch(c);
	else if (d->rung == VRT_RUNG_ACTIVATIONS)
		verdict_context(c);
	else
		verdict_concurrency(c);
	if (f->inflight_inferred &&
	    (d->verdict == VRT_VERDICT_CONCURRENCY ||
	     d->verdict == VRT_VERDICT_KV_CACHE)) {
		evidence(d, "inflight_inferred", -1, VRT_DIAG_COUNT,
		         f->inflight_inferred,
		         "%" PRIu32 " of the %" PRIu32 " requests in flight were "
		         "inferred from turn-taking (a protocol that cannot be "
		         "read: TLS inside the server, a protocol of its own)",
		         f->inflight_inferred, f->inflight);
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "the requests in flight were inferred from "
		           "turn-taking, not read from the protocol: the count "
		           "is an estimate");
	}
	near_miss_evidence(c);
}

/* ---- the log alone --------------------------------------------------------
 *
 * analyze --log without a trace: the run was built from the log's numbers
 * (logrun.h). A number it does not print is not in the ladder; a verdict
 * that needs it is inconclusive, naming what is missing and the command
 * that records a trace of the same server.
 */

static const char *const rung_words[VRT_RUNG_COUNT] = {
        "what other processes held", "the weights",
        "the KV cache and the other reserves",
        "one request's activations", "the other requests in flight"};

/* What a trace would add, with the command that records it. */
static const char *record_words(const struct ctx *c, char *buf, size_t n)
{
	size_t len = strlen(c->d->record_command);

	if (len && len + 40 < n)
		snprintf(buf, n, "record a trace of the same server: %.*s",
		         (int)len, c->d->record_command);
	else if (len)
		snprintf(buf, n, "record a trace of the same server (the "
		                 "command line is under \"record\" below)");
	else
		snprintf(buf, n, "record a trace of the server: vramtrace "
		                 "record -o RUN -- <the server's command line> "
		                 "(the log does not print it)");
	return buf;
}

/* The rungs below and at rung the log gives no number for (baseline
 * aside: a card holding nothing else is the usual case), as words into
 * buf; 0 when it gives them all. */
static int rungs_missing(const struct ctx *c, int rung, char *buf, size_t n)
{
	size_t o = 0;
	int k, miss = 0;

	buf[0] = '\0';
	for (k = VRT_RUNG_WEIGHTS; k <= rung && k < VRT_RUNG_INFLIGHT; k++) {
		if (c->d->rungs_read & (1u << k))
			continue;
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s",
		                      miss ? ", " : "", rung_words[k]);
		miss++;
	}
	return miss;
}

/* A request's failure whose budgets the log does not print: which one
 * broke is not in it. Returns 1 when it decided (inconclusive). */
static int logonly_missing(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	char miss[200], why[VRT_DIAG_TEXT], get[VRT_DIAG_TEXT];

	if (!c->d->source_log || !f || f->device < 0)
		return 0;
	/* the engine's own words name the budget of a load step (weights,
	 * KV cache, graphs, warm-up): the ladder stands on them */
	if (!vrt_replay_phase_is_demand(f->phase))
		return 0;
	if (!rungs_missing(c, VRT_RUNG_RESERVES, miss, sizeof(miss)) &&
	    c->total) {
		/* the budgets are there; with requests in flight, their
		 * number decides between one long request and many */
		if (!f->after_ready || (c->log && c->log->inflight_counted))
			return 0;
		climb(c);
		verdict_inconclusive(
		        c, "requests_not_counted",
		        "the log does not count the requests in flight when it "
		        "failed (no metrics line before it): one long request "
		        "and many at once look alike",
		        record_words(c, get, sizeof(get)));
		return 1;
	}
	climb(c);
	snprintf(why, sizeof(why),
	         "the log names the failed allocation but not %.160s%s: which "
	         "budget left the request no room is not in it",
	         miss[0] ? miss : "the card's capacity",
	         miss[0] && !c->total ? ", nor the card's capacity" : "");
	verdict_inconclusive(c, "budgets_not_in_log", why,
	                     record_words(c, get, sizeof(get)));
	return 1;
}

/* After the verdict: what the log leaves open lowers the confidence. */
static void logonly_after(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	char miss[200];

	if (!d->source_log || !c->f)
		return;
	if (d->rung >= 0 && rungs_missing(c, d->rung, miss, sizeof(miss)))
		confidence(c, VRT_CONFIDENCE_LOW,
		           "the log does not print %s: the ladder below the "
		           "verdict's rung is incomplete, and the verdict rests "
		           "on what the engine said the failed allocation was "
		           "for",
		           miss);
	if (c->f->after_ready && c->log && !c->log->inflight_counted &&
	    d->verdict != VRT_VERDICT_INCONCLUSIVE)
		evidence(d, "inflight_assumed", -1, VRT_DIAG_COUNT,
		         c->f->inflight,
		         "the log does not count the requests running when it "
		         "failed: one is assumed");
}

/* No memory failure in the log: it says so, plainly. */
static void logonly_none(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	char get[VRT_DIAG_TEXT];

	if (!log->engine_known && !log->memory_lines) {
		verdict_inconclusive(
		        c, "not_an_engine_log",
		        "nothing in the log reads as an inference engine's "
		        "(vLLM, SGLang, llama.cpp, Ollama, TGI, TensorRT-LLM) "
		        "or as a memory error: there is no budget to read",
		        "give the server's own log (its stdout and stderr), or "
		        "record the server: vramtrace record -o RUN -- "
		        "<the server's command line>");
		evidence(d, "log_lines", -1, VRT_DIAG_COUNT, log->lines,
		         "%" PRIu64 " line%s read, none of them an engine's",
		         log->lines, log->lines == 1 ? "" : "s");
		return;
	}
	d->verdict = VRT_VERDICT_NONE;
	d->rung = -1;
	snprintf(d->detail, sizeof(d->detail), "no_memory_error");
	evidence(d, "log_lines", -1, VRT_DIAG_COUNT, log->lines,
	         "%" PRIu64 " line%s of %s's log read: no memory error in them",
	         log->lines, log->lines == 1 ? "" : "s",
	         log->engine[0] ? log->engine : "the engine");
	confidence(c, VRT_CONFIDENCE_MEDIUM,
	           "no memory error in the log; a log cut before the end, or "
	           "a failure another process printed, would not show");
	ACT(advise(c, RANK_FREE),
	    "nothing in the log says memory ran out; if the server died, its "
	    "log names another cause (or the part that names it was not "
	    "given: the whole log, or %s)",
	    record_words(c, get, sizeof(get)));
}

/* PyTorch's account in the fatal error: memory it reserved and could not
 * hand out (fragmentation: with expandable segments the call could have
 * had it), the other processes it named on the card. */
static void torch_account(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	struct advice *a;
	size_t i;

	for (i = 0; i < log->nother_pids; i++)
		if (!pid_in_run(c->t, log->other_pids[i]))
			add_other_pid(d, log->other_pids[i]);
	if (log->nother_pids && d->verdict != VRT_VERDICT_OTHER_PROCESSES)
		for (i = 0; i < log->nother_pids; i++)
			evidence(d, "other_pid", c->f->device, VRT_DIAG_PID,
			         log->other_pids[i],
			         "PyTorch names PID %" PRIu64 " with %s on the "
			         "card",
			         log->other_pids[i], SZ(log->other_pid_bytes[i]));
	if (!log->have_reserved || log->reserved_bytes < (256ull << 20))
		return;
	evidence(d, "reserved_unallocated_bytes", c->f->device, VRT_DIAG_BYTES,
	         log->reserved_bytes,
	         "PyTorch held %s reserved but unallocated (pieces of its "
	         "cache too small for the %s call)%s",
	         SZ(log->reserved_bytes), SZ(log->requested_bytes),
	         log->reserved_bytes + log->free_bytes >= log->requested_bytes
	                 ? ": with them the call would have fit"
	                 : "");
	if (log->reserved_bytes + log->free_bytes < log->requested_bytes)
		return;
	a = advise(c, RANK_FREE);
	ACT(a, "%slet PyTorch's cache grow in place: "
	       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (%s of "
	       "reserved pieces would then serve the %s call)",
	    engine_label(c->engine), SZ(log->reserved_bytes),
	    SZ(log->requested_bytes));
	COST(a, "none for serving (the cache maps pages instead of cutting "
	        "blocks)");
	confidence(c, VRT_CONFIDENCE_MEDIUM,
	           "fragmentation: PyTorch reserved %s it could not hand out, "
	           "enough for the call; the budget named is where memory "
	           "was short, expandable segments may be all it takes",
	           SZ(log->reserved_bytes));
}

/* ---- the engine's log ------------------------------------------------------
 *
 * What the engine printed (struct vrt_diag_log, diagnose.h a-f), kept
 * apart from the trace's own reasoning: the failure its fatal error names,
 * its configuration for the defaults, its ready line for the stage, a
 * budget refusal as the verdict, its numbers beside the rungs.
 */

const char *vrt_diagnose_log_flag_name(int bit)
{
	static const char *const names[VRT_DIAG_LOG_NFLAGS] = {
	        "engine",          "max_model_len",    "max_num_seqs",
	        "tensor_parallel", "memory_fraction", "max_total_tokens",
	        "gpu_layers",      "ubatch",           "batch_tokens",
	        "flash_attn"};
	return bit >= 0 && bit < VRT_DIAG_LOG_NFLAGS ? names[bit] : NULL;
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

/* a. The decisive failure: the one the log's fatal error names, else
 * replay's choice. */
static void log_decisive(struct ctx *c)
{
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay *r = c->r;
	size_t i = r->decisive;

	if (log && log->have_fatal_failure && log->fatal_failure < r->nfails &&
	    r->fails[log->fatal_failure].oom) {
		i = log->fatal_failure;
		c->d->log_fatal = 1;
	}
	if (i < r->nfails) {
		c->f = &r->fails[i];
		c->d->have_failure = 1;
		c->d->failure = i;
	}
}

/* c. The trace saw no request: a failure of a per-request phase after the
 * engine said it serves came while serving (a weights allocation or a
 * reserve stays the load's, as replay has it). */
static void log_stage(struct ctx *c)
{
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay_failure *f = c->f;

	c->serving = c->r->serving;
	if (!log || !log->have_ready || c->r->serving)
		return;
	if (!f) {
		c->serving = c->d->log_ready = log->ready_ts <= c->t->end_ns;
		return;
	}
	if (f->after_ready || f->ts < log->ready_ts ||
	    (!vrt_replay_phase_is_demand(f->phase) &&
	     f->phase != VRT_PHASE_unattributed))
		return;
	c->fcopy = *f;
	c->fcopy.after_ready = 1;
	c->f = &c->fcopy;
	c->serving = c->d->log_ready = 1;
}

/* The rung an engine number belongs to on the ladder. */
static void log_ladder(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	size_t i;

	if (!c->log || !d->have_ladder)
		return;
	for (i = 0; i < c->log->nnumbers; i++) {
		const struct vrt_diag_engine_number *n = &c->log->numbers[i];
		if (n->device != d->ladder_device || n->rung < 0 ||
		    n->rung >= VRT_RUNG_COUNT)
			continue;
		d->ladder[n->rung].have_engine = 1;
		d->ladder[n->rung].engine_bytes += n->engine_bytes;
	}
}

/* The ladder at a refusal: what the trace holds on the device, plus what
 * the engine wanted for the rung it was sizing, against the capacity the
 * engine sizes within. */
static void refusal_ladder(struct ctx *c, const struct vrt_diag_refusal *x)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_device *rd = &c->r->dev[x->device];
	uint64_t bytes[VRT_RUNG_COUNT], sum = 0;
	int k;

	bytes[VRT_RUNG_BASELINE] = c->fd ? c->fd->other_bytes : 0;
	bytes[VRT_RUNG_WEIGHTS] = rd->phase[VRT_PHASE_weights].peak_bytes;
	bytes[VRT_RUNG_RESERVES] =
	        rd->phase[VRT_PHASE_kv_cache].peak_bytes +
	        rd->phase[VRT_LOAD_PHASE_INFERRED_KV].peak_bytes +
	        rd->phase[VRT_PHASE_cuda_graph].peak_bytes +
	        rd->phase[VRT_PHASE_comm].peak_bytes;
	bytes[VRT_RUNG_ACTIVATIONS] = rd->phase[VRT_PHASE_profile].peak_bytes;
	bytes[VRT_RUNG_INFLIGHT] = 0;
	if (x->rung >= 0 && x->rung < VRT_RUNG_COUNT)
		bytes[x->rung] += x->needed_bytes;
	d->have_ladder = 1;
	d->ladder_device = x->device;
	d->capacity_bytes = x->budget_bytes ? x->budget_bytes : c->total;
	d->batch_rung = 1; /* at start-up: the profiling run's batch */
	for (k = 0; k < VRT_RUNG_COUNT; k++) {
		sum += bytes[k];
		d->ladder[k].bytes = bytes[k];
		d->ladder[k].cumulative = sum;
		d->ladder[k].fits = !d->capacity_bytes ||
		                    sum <= d->capacity_bytes;
	}
	log_ladder(c);
}

/* d, e. A budget refusal with no failed allocation behind it: the verdict
 * of that budget in the engine's terms. */
static void verdict_refusal(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_refusal *x = &c->log->refusal;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	size_t i;

	d->verdict = x->verdict;
	d->log_refusal = 1;
	d->rung = x->rung;
	d->device = x->device;
	d->have_failure = 0;
	snprintf(d->detail, sizeof(d->detail), "%s", x->detail);
	snprintf(d->stage, sizeof(d->stage), "%s", x->stage);
	if (x->device >= 0 && (size_t)x->device < c->r->ndevices) {
		c->fd = diag_dev(d, x->device);
		c->total = c->fd ? c->fd->total_bytes : 0;
		refusal_ladder(c, x);
		if (x->budget_bytes)
			evidence(d, "engine_budget_bytes", x->device,
			         VRT_DIAG_BYTES, x->budget_bytes,
			         "%s sizes its memory within %s of device %d's "
			         "%s: the ladder's capacity",
			         who, SZ(x->budget_bytes), x->device,
			         SZ(c->total));
	}
	for (i = 0; i < x->nevidence && d->nevidence < VRT_DIAG_MAX_ITEMS; i++)
		d->evidence[d->nevidence++] = x->evidence[i];
	for (i = 0; i < x->nactions; i++)
		action(d, "%s", x->actions[i]);
	for (i = 0; i < x->ncosts; i++)
		cost(d, "%s", x->costs[i]);
	if (c->root && died(c->root))
		exit_evidence(c, c->root);
	near_miss_evidence(c);
	if (x->agree == 0)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "%s refused for this budget (log line %u), but its "
		           "value for %s (%" PRIu64 ") and the trace's (%" PRIu64
		           ") disagree: a rule that misses, or memory outside "
		           "the traced calls",
		           who, x->line, x->flag, x->engine_value,
		           x->trace_value);
	else
		snprintf(d->confidence_reason, sizeof(d->confidence_reason),
		         "%s refused for this budget (log line %u)%s", who,
		         x->line,
		         x->agree == 1 ? " and the trace agrees with its value"
		                       : "; no failed allocation, the engine's "
		                         "own check");
}

/* d. A refusal that a failed allocation stands behind (or that came after
 * a failure replay took as fatal): the ladder's verdict and its actions
 * stand, with the engine's values beside them as evidence. */
static void refusal_beside(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_refusal *x = &c->log->refusal;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	size_t i;

	for (i = 0; i < x->nevidence && d->nevidence < VRT_DIAG_MAX_ITEMS; i++)
		d->evidence[d->nevidence++] = x->evidence[i];
	if (x->verdict != d->verdict)
		confidence(c, VRT_CONFIDENCE_MEDIUM,
		           "%s refused for its %s budget (log line %u, %s) where "
		           "the ladder names %s",
		           who, vrt_diagnose_verdict_name(x->verdict), x->line,
		           x->detail, vrt_diagnose_verdict_name(d->verdict));
}

/* f. The engine's numbers the trace disagrees with: on the ladder's device
 * (every device without a ladder); on the verdict's rung they make it less
 * sure. */
static void log_numbers(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	char key[48];
	size_t i;

	for (i = 0; i < c->log->nnumbers; i++) {
		const struct vrt_diag_engine_number *n = &c->log->numbers[i];
		if (!n->disagrees ||
		    (d->have_ladder && n->device != d->ladder_device))
			continue;
		snprintf(key, sizeof(key), "engine_%s_bytes", n->what);
		evidence(d, key, n->device, VRT_DIAG_BYTES, n->engine_bytes,
		         "device %d: %s printed %s of %s (log line %u), the "
		         "trace holds %s (%+.1f%%)",
		         n->device, who, SZ(n->engine_bytes), n->what, n->line,
		         SZ(n->traced_bytes), n->diff_percent);
		if (d->rung >= 0 && n->rung == d->rung)
			confidence(c, VRT_CONFIDENCE_MEDIUM,
			           "the %s rung is the verdict's, and %s's "
			           "%s on device %d (%s) differs from the "
			           "trace's (%s): the rung may be mis-measured",
			           vrt_diagnose_rung_name(d->rung), who, n->what,
			           n->device, SZ(n->engine_bytes),
			           SZ(n->traced_bytes));
	}
}

/* What the log decided, as evidence after the verdict's own. */
static void log_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay *r = c->r;
	char names[160] = "";
	size_t n = 0;
	int k;

	if (d->log_fatal) {
		const struct vrt_replay_failure *o =
		        r->decisive < r->nfails ? &r->fails[r->decisive] : NULL;
		if (o && r->decisive != d->failure)
			evidence(d, "log_fatal_failure", c->f->device,
			         VRT_DIAG_COUNT, log->fatal_line,
			         "%s; the trace alone would have taken the "
			         "failure at %.3fs (PID %" PRIu64 ")",
			         log->fatal_why,
			         (double)(o->ts - c->t->start_ns) / 1e9,
			         c->t->procs[o->proc].pid);
		else
			evidence(d, "log_fatal_failure", c->f->device,
			         VRT_DIAG_COUNT, log->fatal_line, "%s",
			         log->fatal_why);
	}
	if (log->have_unmatched_error && !d->log_refusal) {
		evidence(d, "log_error_unrecorded", -1, VRT_DIAG_COUNT,
		         log->unmatched_line,
		         "the engine's log reports a memory error (line %u: "
		         "%.160s) that matches no recorded failure",
		         log->unmatched_line, log->unmatched_error);
		if (d->verdict == VRT_VERDICT_NONE)
			confidence(c, VRT_CONFIDENCE_MEDIUM,
			           "the engine's log reports a memory error (line "
			           "%u) the trace did not record: an allocation "
			           "outside the hooked calls, or a process that "
			           "was not traced",
			           log->unmatched_line);
	}
	if (d->log_ready && d->source_log)
		evidence(d, "engine_ready", -1, VRT_DIAG_SECONDS_NS,
		         (uint64_t)(log->ready_ts - c->t->start_ns),
		         "the engine said it serves at log line %u: what came "
		         "after is the request stage",
		         log->ready_line);
	else if (d->log_ready)
		evidence(d, "engine_ready", -1, VRT_DIAG_SECONDS_NS,
		         (uint64_t)(log->ready_ts - c->t->start_ns),
		         "the engine said it serves at %.3fs (log line %u); the "
		         "trace saw no request, so what came after is the "
		         "request stage",
		         (double)(log->ready_ts - c->t->start_ns) / 1e9,
		         log->ready_line);
	for (k = 0; k < VRT_DIAG_LOG_NFLAGS; k++)
		if (d->flags_from_log & (1u << k))
			n += (size_t)snprintf(names + n, sizeof(names) - n,
			                      "%s%s", n ? ", " : "",
			                      vrt_diagnose_log_flag_name(k));
	if (d->flags_from_log)
		evidence(d, "flags_from_log", -1, VRT_DIAG_COUNT,
		         (uint64_t)__builtin_popcount(d->flags_from_log),
		         "the engine's log gave what the command line left at "
		         "its defaults: %s",
		         names);
	log_numbers(c);
}

/* --model-config: the model's description solved against the observed
 * budgets (model.c), before the verdict (its advice counts in tokens and
 * layers). */
static void model_solve(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_model_arith *m = &d->model;
	struct vrt_model_budget b;
	size_t k;

	if (!c->cfg)
		return;
	memset(&b, 0, sizeof(b));
	for (k = 0; k < d->ndevices; k++) {
		b.kv_reserve_bytes += d->devices[k].kv_bytes;
		b.weight_bytes += d->devices[k].weights_bytes;
		b.headroom_bytes += d->devices[k].headroom_bytes;
	}
	for (k = 0; k < c->t->nprocs; k++)
		vrt_model_budget_argv(&b, c->t->procs[k].argv,
		                      c->t->procs[k].argc);
	b.engine = vrt_model_engine(vrt_engine_name(d->flags.engine));
	b.context_len = d->flags.max_model_len;
	/* llama.cpp's -c is the whole cache, shared by its -np slots: a
	 * sequence holds -c / -np (its KV cache is -c tokens either way). */
	if (d->flags.engine == VRT_ENGINE_LLAMACPP && d->flags.max_num_seqs > 1)
		b.context_len /= d->flags.max_num_seqs;
	b.max_seqs = d->flags.max_num_seqs;
	b.tp = d->flags.tp;
	vrt_model_arith(m, c->cfg, &b);
}

/* The lines that say what the model arithmetic found. */
static void model_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_model_arith *m = &d->model;
	char how[VRT_DIAG_TEXT / 2];

	if (!m->have)
		return;
	vrt_model_kv_formula(&m->desc, how, sizeof(how));
	evidence(d, "kv_bytes_per_token", -1, VRT_DIAG_BYTES,
	         m->kv_bytes_per_token, "model: %s of KV per token (%s%s)",
	         SZ(m->kv_bytes_per_token), how,
	         m->kv_bytes_per_token > m->desc.kv_bytes_per_token
	                 ? "; copied on every tensor-parallel rank"
	                 : "");
	if (m->context_len &&
	    m->kv_bytes_per_token_at_context < m->kv_bytes_per_token)
		evidence(d, "kv_bytes_per_token_at_context", -1, VRT_DIAG_BYTES,
		         m->kv_bytes_per_token_at_context,
		         "at %" PRIu64 " tokens of context: %s of KV per token "
		         "(sliding-window layers hold at most their window)",
		         m->context_len, SZ(m->kv_bytes_per_token_at_context));
	if (m->state_bytes_per_seq)
		evidence(d, "state_bytes_per_sequence", -1, VRT_DIAG_BYTES,
		         m->state_bytes_per_seq,
		         "plus %s per sequence whatever its length (recurrent "
		         "state, cross-attention)",
		         SZ(m->state_bytes_per_seq));
	evidence(d, "kv_reserve_tokens", -1, VRT_DIAG_TOKENS,
	         m->kv_reserve_tokens,
	         "the observed KV reserve (%s) holds %" PRIu64 " tokens",
	         SZ(m->kv_reserve_bytes), m->kv_reserve_tokens);
	if (m->context_len && m->max_context_single == VRT_MODEL_UNBOUNDED)
		evidence(d, "max_concurrency_at_context", -1, VRT_DIAG_COUNT,
		         m->max_concurrency,
		         "reserve + headroom (%s) hold %" PRIu64
		         " sequences of %" PRIu64 " tokens, or one of any "
		         "length (every attention layer is windowed)",
		         SZ(m->kv_budget_bytes), m->max_concurrency,
		         m->context_len);
	else if (m->context_len)
		evidence(d, "max_concurrency_at_context", -1, VRT_DIAG_COUNT,
		         m->max_concurrency,
		         "reserve + headroom (%s) hold %" PRIu64
		         " sequences of %" PRIu64 " tokens, or one of %" PRIu64,
		         SZ(m->kv_budget_bytes), m->max_concurrency,
		         m->context_len, m->max_context_single);
	evidence(d, "expected_weight_bytes", -1, VRT_DIAG_BYTES,
	         m->expected_weight_bytes,
	         "weights: %.2fB parameters (%.2fB active per token) = %s "
	         "expected, %s observed",
	         (double)m->params_total / 1e9, (double)m->params_active / 1e9,
	         SZ(m->expected_weight_bytes), SZ(m->observed_weight_bytes));
}

/* The reason for a verdict nothing made less sure. */
static void high_reason(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	char how[96] = "";

	if (c->f)
		how_ended(how, sizeof(how), &c->t->procs[c->f->proc]);
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
			         "(line %u), its phase and the ladder of the log's "
			         "numbers agree",
			         c->log->fatal_line);
		else if (d->log_fatal)
			snprintf(d->confidence_reason,
			         sizeof(d->confidence_reason),
			         "the fatal failure the engine's log names (line "
			         "%u; PID %" PRIu64 " %s), its phase and the "
			         "ladder agree",
			         c->log->fatal_line, c->t->procs[c->f->proc].pid,
			         how);
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
	model_solve(&c);
	log_decisive(&c);
	log_stage(&c);
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
		c.fd = diag_dev(d, c.f->device);
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
		driver_count(&c);
		c.shortfall =
		        c.f->have_info && c.f->requested_bytes > c.f->free_bytes
		                ? c.f->requested_bytes - c.f->free_bytes
		                : c.f->requested_bytes;
	}
	/* A refusal is the verdict unless a failure the process did not
	 * survive stands behind the run's end. */
	refusal = log && log->have_refusal &&
	          (!c.f || (!c.f->fatal && !d->log_fatal));
	if (data_problem(&c))
		; /* inconclusive: the numbers cannot be read */
	else if (refusal)
		verdict_refusal(&c);
	else if (c.f && (c.f->family == VRT_FAM_PINNED ||
	                 c.f->family == VRT_FAM_REGISTERED))
		verdict_host(&c);
	else if (!c.f && d->source_log)
		logonly_none(&c);
	else if (!c.f)
		without_failure(&c);
	else if (c.f->device < 0 || (size_t)c.f->device >= r->ndevices)
		verdict_inconclusive(&c, "device_unknown",
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
		climb(&c);
		verdict_other(&c);
	} else if (pool_decides(&c))
		verdict_pool(&c);
	else if (logonly_missing(&c))
		; /* inconclusive: the log lacks the budgets */
	else
		with_failure(&c);
	logonly_after(&c);
	if (log && c.f)
		torch_account(&c);
	if (c.f && c.host.have && host_exhausted(&c.host) &&
	    d->verdict != VRT_VERDICT_HOST_MEMORY)
		evidence(d, "mem_available_min_bytes", -1, VRT_DIAG_BYTES,
		         c.host.min_available,
		         "host memory was nearly exhausted too (MemAvailable "
		         "%s)",
		         sz(&c, c.host.min_available));
	if (log && log->have_refusal && !refusal)
		refusal_beside(&c);
	if (log)
		log_evidence(&c);
	model_evidence(&c);
	emit_advice(&c);
	if (!d->confidence_reason[0])
		high_reason(&c);
	else if (d->log_fatal && d->confidence != VRT_CONFIDENCE_HIGH)
		snprintf(d->confidence_reason + strlen(d->confidence_reason),
		         sizeof(d->confidence_reason) -
		                 strlen(d->confidence_reason),
		         " (the fatal failure is the one the engine's log names, "
		         "line %u)",
		         log->fatal_line);
	if (d->source_log && (d->verdict == VRT_VERDICT_INCONCLUSIVE ||
	                      d->confidence != VRT_CONFIDENCE_HIGH)) {
		char rec[VRT_DIAG_TEXT];
		verify(d, "%s; then analyze it: vramtrace analyze RUN",
		       record_words(&c, rec, sizeof(rec)));
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
