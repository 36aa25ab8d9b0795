/*
 * diagnose.c — the verdict of diagnose.h from a replayed trace: which
 * budget broke, the numbers that show it, and what to change in the
 * engine's own flags. Pure: reads the trace and the replay, writes only
 * *d; no I/O, no globals, single-threaded. Sentences are built here (they
 * carry the numbers); reports only print them.
 */
#include "diagnose.h"

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
	}
	return "none";
}

const char *vrt_diagnose_unit_name(int unit)
{
	static const char *const names[] = {"bytes", "count",  "seconds",
	                                    "pid",   "tokens", "percent"};
	return unit >= 0 && unit < 6 ? names[unit] : "count";
}

/* ---- formatting helpers -------------------------------------------------- */

static const char *gib(char *buf, size_t n, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, n, "%" PRIu64 " B", b);
	else if (b < (1ull << 20))
		snprintf(buf, n, "%.2f KiB", (double)b / 1024.0);
	else if (b < GIB)
		snprintf(buf, n, "%.2f MiB", (double)b / (1 << 20));
	else
		snprintf(buf, n, "%.2f GiB", (double)b / GIB);
	return buf;
}

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

/* The run's engine (from its root command, inherited by its workers)
 * and the numbers of its memory flags. */
static void run_flags(struct vrt_diagnosis *d, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	struct vrt_diag_flags *f = &d->flags;

	vrt_engine_of_run(&er, t);
	f->engine = er.engine;
	vrt_engine_uint(er.value[VRT_ENGINE_CONTEXT], &f->max_model_len);
	vrt_engine_uint(er.value[VRT_ENGINE_CONCURRENCY], &f->max_num_seqs);
	vrt_engine_uint(er.value[VRT_ENGINE_PARALLEL], &f->tp);
	vrt_engine_fraction_milli(er.value[VRT_ENGINE_MEM_FRACTION],
	                          &f->mem_util_milli);
	f->have_ngl = vrt_engine_uint(er.value[VRT_ENGINE_GPU_LAYERS], &f->ngl);
	if (f->engine == VRT_ENGINE_TGI)
		f->max_total_tokens = f->max_model_len;
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

struct ctx {
	struct vrt_diagnosis *d;
	const struct vrt_trace *t;
	const struct vrt_replay *r;
	const struct vrt_modelcfg *cfg;
	const struct vrt_replay_failure *f; /* the first OOM, or NULL */
	struct vrt_diag_device *fd;         /* its device's budget */
	uint64_t total, other, live, nonreq, shortfall;
	struct host_state host;
	int engine;
	char szbuf[8][32];
	unsigned szi;
};

static const char *sz(struct ctx *c, uint64_t b)
{
	c->szi = (c->szi + 1) % 8;
	return gib(c->szbuf[c->szi], sizeof(c->szbuf[0]), b);
}

static uint64_t live_sum(const struct vrt_replay_failure *f)
{
	uint64_t s = 0;
	unsigned k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		s += f->live_by_phase[k];
	return s;
}

static void common_failure_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const char *api = vrt_api_name(f->api);
	char where[32], pb[32];

	if (f->device >= 0)
		snprintf(where, sizeof(where), "on device %d", f->device);
	else
		snprintf(where, sizeof(where), "on the host");
	evidence(d, "requested_bytes", f->device, VRT_DIAG_BYTES,
	         f->requested_bytes,
	         "%s of %s failed %s at %.3fs (%s stage, phase %s, %" PRIu32
	         " request%s in flight)",
	         api ? api : "an allocation", SZ(f->requested_bytes), where,
	         (double)(f->ts - c->t->start_ns) / 1e9,
	         f->after_ready ? "request" : "load",
	         vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)),
	         f->inflight, f->inflight == 1 ? "" : "s");
	if (f->have_info && f->device >= 0)
		evidence(d, "free_bytes", f->device, VRT_DIAG_BYTES,
		         f->free_bytes, "the driver had %s free of %s",
		         SZ(f->free_bytes), SZ(f->total_bytes));
}

static void budget_evidence(struct ctx *c, const struct vrt_diag_device *x)
{
	const struct vrt_replay_device *rd = &c->r->dev[x->device];
	uint64_t fwd = rd->phase[VRT_PHASE_forward].peak_bytes;

	evidence(c->d, "weights_bytes", x->device, VRT_DIAG_BYTES,
	         x->weights_bytes,
	         "device %d: weights %s, KV cache %s, forward peak %s, run "
	         "peak %s of %s",
	         x->device, SZ(x->weights_bytes), SZ(x->kv_bytes), SZ(fwd),
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

static void verdict_host(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay *r = c->r;

	d->verdict = VRT_VERDICT_HOST_MEMORY;
	d->device = -1;
	if (c->f && c->f->device < 0) {
		snprintf(d->detail, sizeof(d->detail), "pinned_alloc_failed");
		common_failure_evidence(c);
		evidence(d, "pinned_peak_bytes", -1, VRT_DIAG_BYTES,
		         r->host_pinned_peak,
		         "page-locked host memory peaked at %s before the "
		         "failure (pinned + registered)",
		         SZ(r->host_pinned_peak));
	} else
		snprintf(d->detail, sizeof(d->detail), "host_ram_exhausted");
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
	action(d,
	       "%sreduce page-locked host buffers (%s); offload less to the "
	       "CPU, or give the machine more RAM",
	       engine_label(c->engine),
	       c->engine == VRT_ENGINE_VLLM ? "--swap-space, --cpu-offload-gb"
	       : c->engine == VRT_ENGINE_SGLANG ? "--cpu-offload-gb"
	       : c->engine == VRT_ENGINE_LLAMACPP
	               ? "--no-mmap/--mlock, --no-kv-offload"
	               : "swap space and CPU offload settings");
	cost(d, "less host-side swap/offload space: preempted sequences are "
	        "recomputed instead of swapped");
}

static void verdict_other(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	uint64_t room = c->total > c->other ? c->total - c->other : 0;

	d->verdict = VRT_VERDICT_OTHER_PROCESSES;
	snprintf(d->detail, sizeof(d->detail), "device_shared");
	common_failure_evidence(c);
	other_processes_evidence(c, c->f->device, c->other);
	evidence(d, "shortfall_bytes", c->f->device, VRT_DIAG_BYTES,
	         c->shortfall,
	         "the call was %s short; without the other processes it would "
	         "have fit",
	         SZ(c->shortfall));
	action(d,
	       "free the card: wait for the other process%s%s to finish or "
	       "move %s to another GPU, or run on an empty GPU "
	       "(%s)",
	       d->nother_pids == 1 ? "" : "es",
	       d->nother_pids ? " named above" : "",
	       d->nother_pids == 1 ? "it" : "them",
	       visible_devices(c->t, c->f->device));
	if (c->total && flag_name(c->engine, N_UTIL))
		action(d,
		       "%sfit into what is left: %s %.2f (%s of %s "
		       "available to this run)",
		       engine_label(c->engine), flag_name(c->engine, N_UTIL),
		       (double)util_down(room * 1000 / c->total) / 1000.0,
		       SZ(room), SZ(c->total));
	else if (c->total)
		action(d,
		       "%sfit into what is left (%s of %s): lower %s or "
		       "offload fewer layers (-ngl)",
		       engine_label(c->engine), SZ(room), SZ(c->total),
		       flag_name(c->engine, N_CTX));
	cost(d, "waiting for the card, or another card; a smaller memory "
	        "fraction serves fewer tokens at once");
}

/* weights: detail not_sharded / card_too_small / weights_do_not_fit. */
static void verdict_weights(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *heavy = NULL;
	uint64_t sumw = 0, want, wlive = 0;
	size_t k, nrun = d->ndevices;
	int idle_others = 1;

	d->verdict = VRT_VERDICT_WEIGHTS;
	for (k = 0; k < d->ndevices; k++) {
		sumw += d->devices[k].weights_bytes;
		if (!heavy ||
		    d->devices[k].weights_bytes > heavy->weights_bytes)
			heavy = &d->devices[k];
	}
	if (c->f)
		wlive = c->f->live_by_phase[VRT_PHASE_weights] +
		        (c->f->phase == VRT_PHASE_weights
		                 ? c->f->requested_bytes
		                 : 0);
	for (k = 0; k < d->ndevices; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		if (x != heavy && x->peak_bytes * 10 > x->total_bytes)
			idle_others = 0;
	}
	want = d->flags.tp > nrun ? d->flags.tp : nrun;
	common_failure_evidence(c);
	if (heavy && want >= 2 && sumw &&
	    (double)heavy->weights_bytes >=
	            VRT_DIAG_SHARD_FRACTION * (double)sumw &&
	    idle_others) {
		snprintf(d->detail, sizeof(d->detail), "not_sharded");
		evidence(d, "weights_share_percent", heavy->device,
		         VRT_DIAG_PERCENT, heavy->weights_bytes * 100 / sumw,
		         "device %d holds %" PRIu64 "%% of the weights (%s) "
		         "while the run uses %" PRIu64 " devices",
		         heavy->device, heavy->weights_bytes * 100 / sumw,
		         SZ(heavy->weights_bytes), want);
		for (k = 0; k < d->ndevices; k++)
			if (&d->devices[k] != heavy)
				evidence(d, "idle_device_peak_bytes",
				         d->devices[k].device, VRT_DIAG_BYTES,
				         d->devices[k].peak_bytes,
				         "device %d peaked at %s of %s: nearly "
				         "empty",
				         d->devices[k].device,
				         SZ(d->devices[k].peak_bytes),
				         SZ(d->devices[k].total_bytes));
		if (d->flags.tp >= 2)
			evidence(d, "tensor_parallel", -1, VRT_DIAG_COUNT,
			         d->flags.tp,
			         "the command line asks for %s %" PRIu64,
			         flag_name(c->engine, N_TP), d->flags.tp);
		action(d,
		       "%sfix the sharding so each of the %" PRIu64
		       " devices loads its own slice: check that every "
		       "worker selects its own GPU (%s lists "
		       "%" PRIu64 " cards, %s %" PRIu64 ")",
		       engine_label(c->engine), want,
		       visible_devices(c->t, heavy->device), want,
		       flag_name(c->engine, N_TP), want);
		cost(d, "none: the cards were meant to share the weights");
		return;
	}
	/* The weights (with the call that failed, when it loaded weights)
	 * are nearly everything on the card. */
	if (c->f && wlive &&
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
	if (!flag_name(c->engine, N_TP))
		action(d,
		       "%soffload fewer layers to this GPU (-ngl below %s) or "
		       "make more GPUs visible (layers are split over all of "
		       "them)",
		       engine_label(c->engine),
		       d->flags.have_ngl ? "its current value"
		                         : "the layer count");
	else if (c->cfg && c->total) {
		uint64_t n = (c->cfg->weight_bytes * 10 / 8 + c->total - 1) /
		             c->total;
		uint64_t p2 = 2;
		while (p2 < n)
			p2 *= 2;
		action(d,
		       "%sshard the weights over %" PRIu64 " cards: %s %" PRIu64
		       " (the config's %s of weights "
		       "need at least %" PRIu64 " cards with 20%% left for "
		       "the KV cache)",
		       engine_label(c->engine), p2, flag_name(c->engine, N_TP),
		       p2, SZ(c->cfg->weight_bytes), n);
	} else
		action(d,
		       "%sshard the weights over more cards: %s 2 (or more; "
		       "--model-config tells how many), or offload fewer "
		       "layers to this GPU",
		       engine_label(c->engine), flag_name(c->engine, N_TP));
	action(d, "load lower-precision weights (fp8, int4 AWQ/GPTQ): half "
	          "or a quarter of the bytes");
	cost(d, "tensor parallelism adds communication between the cards");
	cost(d, "lower-precision weights may cost quality");
}

static void verdict_kv(struct ctx *c, int load_stage)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t util = d->flags.mem_util_milli, ctx = d->flags.max_model_len;
	uint64_t room = c->total > c->other + c->nonreq
	                        ? c->total - c->other - c->nonreq
	                        : 0;

	d->verdict = VRT_VERDICT_KV_CACHE;
	common_failure_evidence(c);
	if (c->fd)
		budget_evidence(c, c->fd);
	if (load_stage) {
		/* The reserve itself did not fit next to the weights. */
		snprintf(d->detail, sizeof(d->detail), "kv_reserve");
		evidence(d, "kv_reserve_requested_bytes", f->device,
		         VRT_DIAG_BYTES, f->requested_bytes,
		         "the KV cache reserve asked %s with %s left after "
		         "the weights: %s short",
		         SZ(f->requested_bytes), SZ(f->free_bytes),
		         SZ(c->shortfall));
	} else {
		snprintf(d->detail, sizeof(d->detail), "context_too_long");
		evidence(d, "single_request_bytes", f->device, VRT_DIAG_BYTES,
		         f->requested_bytes +
		                 f->live_by_phase[VRT_PHASE_forward],
		         "one request needed %s of activations; weights + KV "
		         "reserve left %s for it",
		         SZ(f->requested_bytes +
		            f->live_by_phase[VRT_PHASE_forward]),
		         SZ(room));
	}
	if (ctx && f->requested_bytes) {
		/* Activations and KV per sequence scale with its length. */
		uint64_t need =
		        f->requested_bytes +
		        (load_stage ? 0 : f->live_by_phase[VRT_PHASE_forward]);
		uint64_t have = load_stage ? f->free_bytes : room;
		uint64_t newctx = tokens_down(
		        (uint64_t)((double)ctx * (double)have / (double)need));
		if (newctx && newctx < ctx)
			action(d,
			       "%slower the context: %s %" PRIu64
			       " (was %" PRIu64 ")",
			       engine_label(c->engine),
			       flag_name(c->engine, N_CTX), newctx, ctx);
	} else
		action(d, "%slower %s", engine_label(c->engine),
		       flag_name(c->engine, N_CTX));
	if (c->total && flag_name(c->engine, N_UTIL)) {
		uint64_t cut = c->shortfall * 1000 / c->total + 1;
		if (util && util > cut)
			action(d,
			       "%sshrink the KV reserve: %s %.2f (was %.2f; "
			       "%s less KV cache)",
			       engine_label(c->engine),
			       flag_name(c->engine, N_UTIL),
			       (double)util_down(util - cut) / 1000.0,
			       (double)util / 1000.0, SZ(c->shortfall));
		else
			action(d, "%sshrink the KV reserve (%s) by %s",
			       engine_label(c->engine),
			       flag_name(c->engine, N_UTIL), SZ(c->shortfall));
	}
	cost(d, "shorter inputs: prompts longer than the new limit are "
	        "rejected");
	cost(d, "a smaller KV reserve holds fewer tokens at once (more "
	        "preemption under load)");
}

static void verdict_concurrency(struct ctx *c, uint64_t one)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t room = c->total > c->other + c->nonreq
	                        ? c->total - c->other - c->nonreq
	                        : 0;
	uint64_t fit = one ? room / one : 0;

	d->verdict = VRT_VERDICT_CONCURRENCY;
	snprintf(d->detail, sizeof(d->detail), "overlapping_requests");
	common_failure_evidence(c);
	if (c->fd)
		budget_evidence(c, c->fd);
	evidence(d, "single_request_peak_bytes", f->device, VRT_DIAG_BYTES, one,
	         "one request peaks at %s%s: it fits", SZ(one),
	         c->r->have_single_request &&
	                         one == c->r->single_request_peak_bytes
	                 ? " (measured alone)"
	                 : " (the requests in flight at the failure, on "
	                   "average)");
	evidence(d, "request_headroom_bytes", f->device, VRT_DIAG_BYTES, room,
	         "weights + KV cache + everything else leave %s for "
	         "requests on device %d",
	         SZ(room), f->device);
	evidence(d, "requests_that_fit", f->device, VRT_DIAG_COUNT, fit,
	         "%" PRIu64 " requests fit at once; %" PRIu32
	         " were in flight when it failed (at most %" PRIu32 ")",
	         fit, f->inflight, c->r->max_inflight);
	action(d, "%scap concurrent sequences: %s %" PRIu64 "%s",
	       engine_label(c->engine), flag_name(c->engine, N_SEQS),
	       fit ? fit : 1,
	       d->flags.max_num_seqs ? ""
	                             : " (or put a limit in front of "
	                               "the server)");
	if (flag_name(c->engine, N_TP))
		action(d, "add cards (%s 2) to serve more at once",
		       flag_name(c->engine, N_TP));
	else
		action(d, "add cards (every visible GPU takes a share of the "
		          "layers) to serve more at once");
	cost(d, "throughput: requests past the cap wait in the queue");
	cost(d, "more cards cost money and add communication");
}

static void verdict_none(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	size_t k;

	d->verdict = VRT_VERDICT_NONE;
	snprintf(d->detail, sizeof(d->detail), "fits");
	for (k = 0; k < d->ndevices; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		evidence(d, "headroom_bytes", x->device, VRT_DIAG_BYTES,
		         x->headroom_bytes,
		         "device %d: peak %s of %s, headroom %s (weights %s, "
		         "KV cache %s)",
		         x->device, SZ(x->peak_bytes), SZ(x->total_bytes),
		         SZ(x->headroom_bytes), SZ(x->weights_bytes),
		         SZ(x->kv_bytes));
		if (x->other_bytes >= VRT_DIAG_OTHER_MIN_BYTES)
			other_processes_evidence(c, x->device, x->other_bytes);
	}
	if (c->r->max_inflight)
		evidence(d, "max_inflight", -1, VRT_DIAG_COUNT,
		         c->r->max_inflight,
		         "at most %" PRIu32 " requests in flight",
		         c->r->max_inflight);
	action(d, "nothing to change: no allocation failed");
}

static void model_arith(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_diag_model *m = &d->model;
	const struct vrt_modelcfg *cfg = c->cfg;
	uint64_t head = 0;
	size_t k;

	if (!cfg || !cfg->kv_bytes_per_token)
		return;
	m->have = 1;
	m->kv_bytes_per_token = cfg->kv_bytes_per_token;
	for (k = 0; k < d->ndevices; k++) {
		m->kv_reserve_bytes += d->devices[k].kv_bytes;
		m->observed_weight_bytes += d->devices[k].weights_bytes;
		head += d->devices[k].headroom_bytes;
	}
	m->kv_reserve_tokens = m->kv_reserve_bytes / m->kv_bytes_per_token;
	m->kv_headroom_bytes = m->kv_reserve_bytes + head;
	m->max_tokens = m->kv_headroom_bytes / m->kv_bytes_per_token;
	m->context_len = d->flags.max_model_len ? d->flags.max_model_len
	                                        : cfg->max_positions;
	m->max_concurrency =
	        m->context_len ? m->max_tokens / m->context_len : 0;
	m->max_context_single = m->max_tokens;
	m->params = cfg->params;
	m->expected_weight_bytes = cfg->weight_bytes;
	evidence(d, "kv_bytes_per_token", -1, VRT_DIAG_BYTES,
	         m->kv_bytes_per_token,
	         "model: %s of KV per token (2 x %" PRIu64 " layers x %" PRIu64
	         " KV heads x %" PRIu64 " head dim x %u bytes %s)",
	         SZ(m->kv_bytes_per_token), cfg->layers, cfg->kv_heads,
	         cfg->head_dim, cfg->kv_bytes_per_elem, cfg->kv_dtype);
	evidence(d, "kv_reserve_tokens", -1, VRT_DIAG_TOKENS,
	         m->kv_reserve_tokens,
	         "the observed KV reserve (%s) holds %" PRIu64 " tokens",
	         SZ(m->kv_reserve_bytes), m->kv_reserve_tokens);
	if (m->context_len)
		evidence(d, "max_concurrency_at_context", -1, VRT_DIAG_COUNT,
		         m->max_concurrency,
		         "reserve + headroom hold %" PRIu64 " tokens: %" PRIu64
		         " sequences of %" PRIu64 " tokens, or one of %" PRIu64,
		         m->max_tokens, m->max_concurrency, m->context_len,
		         m->max_context_single);
	evidence(d, "expected_weight_bytes", -1, VRT_DIAG_BYTES,
	         m->expected_weight_bytes,
	         "weights: %.2fB parameters x %u bytes = %s expected, %s "
	         "observed",
	         (double)m->params / 1e9, cfg->weight_bytes_per_param,
	         SZ(m->expected_weight_bytes), SZ(m->observed_weight_bytes));
}

void vrt_diagnose_run(struct vrt_diagnosis *d, const struct vrt_trace *t,
                      const struct vrt_replay *r,
                      const struct vrt_modelcfg *cfg)
{
	struct ctx c;
	size_t i;

	memset(d, 0, sizeof(*d));
	memset(&c, 0, sizeof(c));
	c.d = d;
	c.t = t;
	c.r = r;
	c.cfg = cfg;
	d->device = -1;
	run_flags(d, t);
	c.engine = d->flags.engine;
	devices(d, t, r);
	host_samples(t, &c.host);
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].oom) {
			c.f = &r->fails[i];
			d->have_failure = 1;
			d->failure = i;
			break;
		}
	snprintf(d->stage, sizeof(d->stage), "%s",
	         c.f ? (c.f->after_ready ? "request" : "load")
	         : r->have_server_ready ? "request"
	                                : "load");
	if (c.f && c.f->device >= 0) {
		d->device = c.f->device;
		c.fd = diag_dev(d, c.f->device);
		c.total = c.fd ? c.fd->total_bytes : 0;
		if (!c.total && c.f->have_info)
			c.total = c.f->total_bytes;
		c.other = c.fd ? c.fd->other_bytes : 0;
		c.live = live_sum(c.f);
		/* The driver's own count at the failure: what it called used
		 * beyond this run's live bytes belongs to someone else. */
		if (c.f->have_info &&
		    c.f->total_bytes > c.f->free_bytes + c.live &&
		    c.f->total_bytes - c.f->free_bytes - c.live > c.other) {
			c.other = c.f->total_bytes - c.f->free_bytes - c.live;
			if (c.fd && c.other > c.fd->other_bytes)
				c.fd->other_bytes = c.other;
		}
		c.nonreq = c.live - c.f->live_by_phase[VRT_PHASE_forward];
		c.shortfall =
		        c.f->have_info && c.f->requested_bytes > c.f->free_bytes
		                ? c.f->requested_bytes - c.f->free_bytes
		                : c.f->requested_bytes;
	}
	if ((c.f && c.f->device < 0) || (!c.f && host_exhausted(&c.host)))
		verdict_host(&c);
	else if (!c.f)
		verdict_none(&c);
	else if (c.other >= VRT_DIAG_OTHER_MIN_BYTES &&
	         c.other * 20 >= c.total && c.other >= c.shortfall)
		verdict_other(&c);
	else if (!c.f->after_ready &&
	         (c.f->phase == VRT_PHASE_kv_cache ||
	          c.f->phase == VRT_LOAD_PHASE_INFERRED_KV))
		verdict_kv(&c, 1);
	else if (!c.f->after_ready || c.f->phase == VRT_PHASE_weights)
		verdict_weights(&c);
	else if (c.f->inflight <= 1)
		verdict_kv(&c, 0);
	else {
		/* One request's share: measured alone, unless the requests
		 * in flight at the failure were bigger on average. */
		uint64_t avg = (c.f->live_by_phase[VRT_PHASE_forward] +
		                c.f->requested_bytes) /
		               c.f->inflight;
		uint64_t one = r->have_single_request
		                       ? r->single_request_peak_bytes
		                       : c.f->requested_bytes;
		if (avg > one)
			one = avg;
		uint64_t room = c.total > c.other + c.nonreq
		                        ? c.total - c.other - c.nonreq
		                        : 0;
		if (one && one <= room)
			verdict_concurrency(&c, one);
		else
			verdict_kv(&c, 0);
	}
	if (c.f && c.host.have && host_exhausted(&c.host) &&
	    d->verdict != VRT_VERDICT_HOST_MEMORY)
		evidence(d, "mem_available_min_bytes", -1, VRT_DIAG_BYTES,
		         c.host.min_available,
		         "host memory was nearly exhausted too (MemAvailable "
		         "%s)",
		         sz(&c, c.host.min_available));
	model_arith(&c);
	if (d->verdict != VRT_VERDICT_NONE)
		verify(d, "re-run with the change and compare the two runs: "
		          "vramtrace compare OLD_RUN NEW_RUN");
	else
		verify(d, "after changing settings, record again and compare: "
		          "vramtrace compare OLD_RUN NEW_RUN");
}
