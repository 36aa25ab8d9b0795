/*
 * logcheck.c — a parsed engine log held against the replayed trace
 * (logcheck.h): the engine's numbers beside the traced ones, the failure
 * its fatal error names, its readiness on the trace's clock, its
 * configuration as diagnosis flags, and a budget refusal as a verdict in
 * the engine's own terms. Sentences are built here with their numbers;
 * reports only print them. Pure: reads the log, the trace and the
 * replay, writes only the result; single-threaded.
 */
#include "logcheck.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "logrun.h"
#include "base/names.h"
#include "base/text.h"
#include "load/wallclock.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

const char *vrt_logcheck_quantity_name(int q)
{
	static const char *const names[VRT_LCQ_N] = {"weights", "kv_cache",
	                                             "activations",
	                                             "cuda_graphs"};
	return q >= 0 && q < VRT_LCQ_N ? names[q] : "unknown";
}

/* The engine as people write it. */
static const char *engine_title(int engine)
{
	switch (engine) {
	case VRT_ENGINELOG_VLLM:
		return "vLLM";
	case VRT_ENGINELOG_SGLANG:
		return "SGLang";
	case VRT_ENGINELOG_LLAMACPP:
		return "llama.cpp";
	case VRT_ENGINELOG_TGI:
		return "TGI";
	case VRT_ENGINELOG_TRTLLM:
		return "TensorRT-LLM";
	}
	return "the engine";
}

/* Rotating buffers for sizes inside one sentence. */
struct sz {
	char buf[8][32];
	unsigned i;
};

static const char *size(struct sz *z, uint64_t b)
{
	char *s = z->buf[z->i++ % 8];

	/* Engines log MiB and GiB: below a MiB, exact bytes. */
	if (b < (1ull << 20))
		return vrt_text_bytes_in(s, 32, (double)b, 0, VRT_UNIT_B,
		                         VRT_UNIT_B);
	return vrt_text_bytes_in(s, 32, (double)b, 2, VRT_UNIT_MIB,
	                         VRT_UNIT_GIB);
}

/* ---- devices ------------------------------------------------------------ */

static int touched(const struct vrt_replay *r, size_t d)
{
	const struct vrt_replay_device *x = &r->dev[d];
	int f;

	if (x->have_baseline)
		return 1;
	for (f = 0; f < VRT_FAM_COUNT; f++)
		if (x->fam[f].allocs || x->fam[f].failed)
			return 1;
	return 0;
}

static size_t ndev(const struct vrt_trace *t, const struct vrt_replay *r)
{
	return t->ndevices < r->ndevices ? t->ndevices : r->ndevices;
}

/* The trace device a log's device or rank means: the first host's device
 * with that ordinal (what the engine's process saw); a line that named
 * none means the run's only device, else its first one used. */
static int32_t trace_device(const struct vrt_trace *t,
                            const struct vrt_replay *r, int32_t log_dev)
{
	size_t i, n = ndev(t, r), used = 0;
	int32_t first = -1;

	for (i = 0; i < n; i++) {
		if (!touched(r, i))
			continue;
		if (first < 0)
			first = (int32_t)i;
		used++;
		if (log_dev >= 0 && t->devices[i].ordinal == log_dev &&
		    t->devices[i].host_idx == 0)
			return (int32_t)i;
	}
	return log_dev < 0 || used == 1 ? first : -1;
}

static uint64_t dev_total(const struct vrt_trace *t, const struct vrt_replay *r,
                          int32_t d)
{
	if (d < 0 || (size_t)d >= ndev(t, r))
		return 0;
	if (t->devices[d].have_total)
		return t->devices[d].total_bytes;
	return r->dev[d].have_baseline ? r->dev[d].probe_total_bytes : 0;
}

static uint64_t traced(const struct vrt_replay *r, int32_t d, int q)
{
	const struct vrt_replay_device *x = &r->dev[d];

	switch (q) {
	case VRT_LCQ_WEIGHTS:
		return x->phase[VRT_PHASE_weights].peak_bytes;
	case VRT_LCQ_KV:
		return x->phase[VRT_PHASE_kv_cache].peak_bytes +
		       x->phase[VRT_LOAD_PHASE_INFERRED_KV].peak_bytes;
	case VRT_LCQ_ACTIVATIONS:
		return x->phase[VRT_PHASE_profile].peak_bytes;
	case VRT_LCQ_GRAPHS:
		return x->phase[VRT_PHASE_cuda_graph].peak_bytes;
	}
	return 0;
}

/* 1 when an allocation of quantity q failed for lack of memory on device
 * d: the engine printed what it meant to allocate, the trace holds what
 * it had before the failure. */
static int failed_on(const struct vrt_replay *r, int32_t d, int q)
{
	size_t i;

	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *f = &r->fails[i];
		uint32_t ph = f->phase;
		if (!f->oom || f->device != d)
			continue;
		if ((q == VRT_LCQ_WEIGHTS && ph == VRT_PHASE_weights) ||
		    (q == VRT_LCQ_KV && (ph == VRT_PHASE_kv_cache ||
		                         ph == VRT_LOAD_PHASE_INFERRED_KV)) ||
		    (q == VRT_LCQ_ACTIVATIONS && ph == VRT_PHASE_profile) ||
		    (q == VRT_LCQ_GRAPHS && ph == VRT_PHASE_cuda_graph))
			return 1;
	}
	return 0;
}

/* ---- findings ------------------------------------------------------------ */

static void finding(struct vrt_logcheck *lc, const char *key, int32_t dev,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void finding(struct vrt_logcheck *lc, const char *key, int32_t dev,
                    const char *fmt, ...)
{
	struct vrt_logcheck_finding *f;
	va_list ap;

	if (lc->nfindings >= VRT_LOGCHECK_MAX_FINDINGS)
		return;
	f = &lc->findings[lc->nfindings++];
	snprintf(f->key, sizeof(f->key), "%s", key);
	f->device = dev;
	va_start(ap, fmt);
	vsnprintf(f->text, sizeof(f->text), fmt, ap);
	va_end(ap);
}

static const int quantity_kind[VRT_LCQ_N] = {
        VRT_ELK_WEIGHTS, VRT_ELK_KV_BYTES, VRT_ELK_ACTIVATION, VRT_ELK_GRAPH};

static const char *const quantity_phase[VRT_LCQ_N] = {
        "weights", "kv_cache", "profile", "cuda_graph"};

static void compare_row(struct vrt_logcheck *lc, const struct vrt_trace *t,
                        const struct vrt_replay *r, int q, int32_t log_dev)
{
	const struct vrt_enginelog *log = lc->log;
	struct vrt_logcheck_row *row;
	uint64_t v, tol, allow;
	uint32_t line;
	int32_t d = trace_device(t, r, log_dev);
	size_t i;
	struct sz z = {.i = 0};
	const char *who = engine_title(log->engine);

	if (d < 0 || lc->nrows >= VRT_LOGCHECK_MAX_ROWS ||
	    !vrt_enginelog_value(log, quantity_kind[q], log_dev, &v, &tol,
	                         &line) ||
	    !v)
		return;
	/* A device already compared from a line that named it wins over
	 * the lines that named none. */
	for (i = 0; i < lc->nrows; i++)
		if (lc->rows[i].quantity == q && lc->rows[i].device == d)
			return;
	row = &lc->rows[lc->nrows++];
	row->quantity = q;
	row->device = d;
	row->log_device = log_dev;
	row->engine_bytes = v;
	row->engine_tol = tol;
	row->traced_bytes = traced(r, d, q);
	row->line = line;
	row->diff_percent = ((double)row->traced_bytes - (double)v) * 100.0 /
	                    (double)v;
	allow = v * VRT_LOGCHECK_TOLERANCE_PCT / 100;
	if (tol > allow)
		allow = tol;
	row->flagged = row->traced_bytes > v + allow ||
	               row->traced_bytes + allow < v;
	if (row->flagged && row->traced_bytes < v && failed_on(r, d, q)) {
		/* less traced because its allocation failed: no rule missed */
		row->allocation_failed = 1;
		row->flagged = 0;
	}
	if (!row->flagged)
		return;
	if (!row->traced_bytes)
		finding(lc, "engine_memory_untraced", d,
		        "device %d: %s printed %s of %s (log line %u); the trace "
		        "tagged nothing as %s: no rule recognised these "
		        "allocations, or they were made outside the hooked calls",
		        d, who, size(&z, v), vrt_logcheck_quantity_name(q), line,
		        quantity_phase[q]);
	else if (row->traced_bytes < v)
		finding(lc, "engine_memory_disagrees", d,
		        "device %d: %s printed %s of %s (log line %u), the trace "
		        "tagged %s as %s, %.1f%% less: part of it carries another "
		        "phase (a rule that misses) or was allocated outside the "
		        "hooked calls",
		        d, who, size(&z, v), vrt_logcheck_quantity_name(q), line,
		        size(&z, row->traced_bytes), quantity_phase[q],
		        -row->diff_percent);
	else
		finding(lc, "engine_memory_disagrees", d,
		        "device %d: %s printed %s of %s (log line %u), the trace "
		        "tagged %s as %s, %.1f%% more: allocations of another "
		        "kind carry this phase, or the engine does not count "
		        "them (another process of the run on this device)",
		        d, who, size(&z, v), vrt_logcheck_quantity_name(q), line,
		        size(&z, row->traced_bytes), quantity_phase[q],
		        row->diff_percent);
}

static void compare(struct vrt_logcheck *lc, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	int q, seen[65];
	int32_t dv;
	size_t i;

	for (q = 0; q < VRT_LCQ_N; q++) {
		memset(seen, 0, sizeof(seen));
		/* the lines that named a device first, then the others */
		for (i = 0; i < lc->log->nfacts; i++) {
			const struct vrt_enginelog_fact *f = &lc->log->facts[i];
			if (f->kind == quantity_kind[q] && f->device >= 0 &&
			    f->device < 64)
				seen[f->device + 1] = 1;
			else if (f->kind == quantity_kind[q] && f->device < 0)
				seen[0] = 1;
		}
		for (dv = 0; dv < 64; dv++)
			if (seen[dv + 1])
				compare_row(lc, t, r, q, dv);
		if (seen[0])
			compare_row(lc, t, r, q, -1);
	}
}

/* ---- the failure the fatal error names ------------------------------------ */

int vrt_logcheck_fatal_failure(const struct vrt_enginelog *log,
                               const struct vrt_trace *t,
                               const struct vrt_replay *r, size_t *index,
                               char *why)
{
	const struct vrt_enginelog_error *e;
	int64_t limit = 0;
	int best_pid = 0, found = 0;
	size_t i, best = 0, loose = SIZE_MAX;
	struct sz z = {.i = 0};

	if (!log->have_fatal)
		return 0;
	e = &log->errors[log->fatal];
	if (vrt_enginelog_is_refusal(e->kind) && !(e->have & VRT_ELH_REQUESTED))
		return 0; /* the engine refused; no driver call failed */
	/* The line is printed after the failed call: a failure later than
	 * the line (plus the seconds the engine's clock rounds away) is not
	 * the one it names. */
	if (e->wall_ns && vrt_wallclock_known(t))
		limit = vrt_wallclock_mono(t, e->wall_ns) + 2000000000ll;
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *f = &r->fails[i];
		int pid_ok;
		if (!f->oom || f->device < 0)
			continue;
		if (e->have & VRT_ELH_REQUESTED) {
			uint64_t a = f->requested_bytes, b = e->requested_bytes;
			uint64_t d = a > b ? a - b : b - a;
			if (d > e->requested_tol + b / 1000)
				continue;
		}
		if ((e->have & VRT_ELH_DEVICE) &&
		    (size_t)f->device < t->ndevices &&
		    t->devices[f->device].ordinal != e->device)
			continue;
		if (limit && f->ts > limit)
			continue;
		pid_ok = e->pid >= 0 && t->procs[f->proc].pid == (uint64_t)e->pid;
		/* the latest that fits; a failure of the printing process wins
		 * over a later one of another */
		if (!found || pid_ok >= best_pid) {
			best = i;
			best_pid = pid_ok;
			found = 1;
		}
	}
	/* No call of the tensor's size: a caching allocator asks the
	 * driver for other sizes (expandable segments map pages). The
	 * printing process's last unrecovered failure on that device, no
	 * later than the line, is the one. */
	for (i = 0; !found && (e->have & VRT_ELH_REQUESTED) && i < r->nfails;
	     i++) {
		const struct vrt_replay_failure *f = &r->fails[i];
		if (f->oom && !f->recovered && f->device >= 0 &&
		    (!(e->have & VRT_ELH_DEVICE) ||
		     ((size_t)f->device < t->ndevices &&
		      t->devices[f->device].ordinal == e->device)) &&
		    (!limit || f->ts <= limit) &&
		    (e->pid < 0 || t->procs[f->proc].pid == (uint64_t)e->pid))
			loose = i;
	}
	if (!found && loose < r->nfails) {
		best = loose;
		found = 2;
	}
	if (!found)
		return 0;
	*index = best;
	if (why) {
		const struct vrt_replay_failure *f = &r->fails[best];
		const char *api = vrt_names_api(f->api, "allocation");
		if (found == 2)
			snprintf(why, VRT_LOGCHECK_TEXT,
			         "the log's fatal error (line %u, %s, %s) is "
			         "the "
			         "failed %s of %s on device %d at %.3fs: the "
			         "allocator asked the driver for another size; "
			         "device, process and time agree",
			         e->line, vrt_enginelog_error_name(e->kind),
			         size(&z, e->requested_bytes), api,
			         size(&z, f->requested_bytes), f->device,
			         (double)(f->ts - t->start_ns) / 1e9);
		else
			snprintf(
			        why, VRT_LOGCHECK_TEXT,
			        "the log's fatal error (line %u, %s) is the "
			        "failed %s of %s on device %d at %.3fs: %s%s%s "
			        "agree",
			        e->line, vrt_enginelog_error_name(e->kind), api,
			        size(&z, f->requested_bytes), f->device,
			        (double)(f->ts - t->start_ns) / 1e9,
			        e->have & VRT_ELH_REQUESTED ? "size, " : "",
			        e->have & VRT_ELH_DEVICE ? "device, " : "",
			        limit ? "time" : "order");
	}
	return 1;
}

/* ---- configuration --------------------------------------------------------- */

unsigned vrt_logcheck_flags(const struct vrt_enginelog *log,
                            struct vrt_diag_flags *f)
{
	const uint32_t *at = log->config_line;
	const uint64_t *v = log->config;
	unsigned got = 0;

	memset(f, 0, sizeof(*f));
	/* the engines numbered alike in both tables (enginelog.h) */
	if (log->engine > VRT_ENGINELOG_UNKNOWN &&
	    log->engine < VRT_ENGINELOG_NENGINES) {
		f->engine = log->engine;
		got |= VRT_DIAG_LOG_ENGINE;
	}
	if (at[VRT_ELC_MAX_MODEL_LEN] || at[VRT_ELC_CTX_SIZE]) {
		f->max_model_len = at[VRT_ELC_MAX_MODEL_LEN]
		                           ? v[VRT_ELC_MAX_MODEL_LEN]
		                           : v[VRT_ELC_CTX_SIZE];
		got |= VRT_DIAG_LOG_CTX;
	}
	if (at[VRT_ELC_MAX_NUM_SEQS] || at[VRT_ELC_SLOTS]) {
		f->max_num_seqs = at[VRT_ELC_MAX_NUM_SEQS]
		                          ? v[VRT_ELC_MAX_NUM_SEQS]
		                          : v[VRT_ELC_SLOTS];
		got |= VRT_DIAG_LOG_SEQS;
	}
	if (at[VRT_ELC_TP]) {
		f->tp = v[VRT_ELC_TP];
		got |= VRT_DIAG_LOG_TP;
	}
	if (at[VRT_ELC_MEM_FRACTION] && v[VRT_ELC_MEM_FRACTION] <= 1000) {
		f->mem_util_milli = v[VRT_ELC_MEM_FRACTION];
		got |= VRT_DIAG_LOG_UTIL;
	}
	if (log->engine == VRT_ENGINELOG_TGI && at[VRT_ELC_MAX_MODEL_LEN]) {
		f->max_total_tokens = v[VRT_ELC_MAX_MODEL_LEN];
		got |= VRT_DIAG_LOG_TOTAL_TOKENS;
	}
	if (at[VRT_ELC_GPU_LAYERS]) {
		f->ngl = v[VRT_ELC_GPU_LAYERS];
		f->have_ngl = 1;
		got |= VRT_DIAG_LOG_NGL;
	}
	if (at[VRT_ELC_UBATCH]) {
		f->ubatch = v[VRT_ELC_UBATCH];
		got |= VRT_DIAG_LOG_UBATCH;
	}
	if (at[VRT_ELC_BATCH]) {
		f->batch_tokens = v[VRT_ELC_BATCH];
		got |= VRT_DIAG_LOG_BATCH;
	}
	if (at[VRT_ELC_FLASH_ATTN]) {
		f->flash_attn = (int)v[VRT_ELC_FLASH_ATTN];
		got |= VRT_DIAG_LOG_FLASH_ATTN;
	}
	return got;
}

/* ---- budget refusals ----------------------------------------------------- */

static void ev(struct vrt_diag_refusal *x, const char *key, int unit,
               uint64_t value, const char *fmt, ...)
        __attribute__((format(printf, 5, 6)));
static void ev(struct vrt_diag_refusal *x, const char *key, int unit,
               uint64_t value, const char *fmt, ...)
{
	struct vrt_diag_evidence *e;
	va_list ap;

	if (x->nevidence >= sizeof(x->evidence) / sizeof(x->evidence[0]))
		return;
	e = &x->evidence[x->nevidence++];
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->device = x->device;
	e->unit = unit;
	e->value = value;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

static void act(struct vrt_diag_refusal *x, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void act(struct vrt_diag_refusal *x, const char *fmt, ...)
{
	va_list ap;

	if (x->nactions >= sizeof(x->actions) / sizeof(x->actions[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(x->actions[x->nactions++], VRT_LOGCHECK_TEXT, fmt, ap);
	va_end(ap);
}

static void cost(struct vrt_diag_refusal *x, const char *text)
{
	if (x->ncosts < sizeof(x->costs) / sizeof(x->costs[0]))
		snprintf(x->costs[x->ncosts++], VRT_LOGCHECK_TEXT, "%s", text);
}

/* Rounds down to a multiple of q (at least q when n is). */
static uint64_t down(uint64_t n, uint64_t q)
{
	return q && n >= q ? n - n % q : n;
}

/* What the refusal builders share. */
struct rctx {
	struct vrt_logcheck *lc;
	const struct vrt_trace *t;
	const struct vrt_replay *r;
	const struct vrt_model *cfg;
	const struct vrt_enginelog_error *e;
	struct vrt_diag_refusal *x;
	int32_t d;      /* the device */
	uint64_t total; /* its capacity */
	uint64_t peak;  /* this run's tracked peak on it */
	uint64_t other; /* memory of other processes on it */
	uint64_t util;  /* the memory fraction in force, x1000 (0 unknown) */
	const char *who;
	const char *by; /* "the trace", or "the log's numbers" without one */
	int log_only;   /* there is no trace: the run is the log's */
	struct sz z;
};

/* The KV bytes per token: the model config's (split over the tensor-
 * parallel ranks) when given, else the engine's own (needed / length). */
static uint64_t bytes_per_token(const struct rctx *c, uint64_t needed,
                                uint64_t len, const char **source)
{
	uint64_t tp = c->lc->flags.tp ? c->lc->flags.tp : 1;

	if (c->cfg && c->cfg->kv_bytes_per_token) {
		*source = "the model config's";
		return c->cfg->kv_bytes_per_token / tp;
	}
	*source = "the engine's";
	return len ? needed / len : 0;
}

/* vLLM: the KV cache one request of max_model_len needs does not fit in
 * what profiling left (V1), or the KV cache holds fewer tokens than
 * max_model_len (V0). */
static void refusal_vllm_kv(struct rctx *c)
{
	const struct vrt_enginelog_error *e = c->e;
	struct vrt_diag_refusal *x = c->x;
	const struct vrt_enginelog *log = c->lc->log;
	uint64_t len = e->max_model_len, needed = e->needed_bytes;
	uint64_t avail = e->available_bytes, bpt, ours = 0, our_len = 0;
	uint64_t block = log->config_line[VRT_ELC_BLOCK_SIZE]
	                         ? log->config[VRT_ELC_BLOCK_SIZE]
	                         : 16;
	uint64_t kvb = 0, kvt = 0;
	const char *src;

	x->verdict = VRT_VERDICT_KV_CACHE;
	x->rung = VRT_RUNG_RESERVES;
	snprintf(x->detail, sizeof(x->detail), "max_model_len_exceeds_kv_cache");
	snprintf(x->flag, sizeof(x->flag), "--max-model-len");
	if (!(e->have & VRT_ELH_NEEDED) &&
	    vrt_enginelog_value(log, VRT_ELK_KV_BYTES, -1, &kvb, NULL, NULL) &&
	    (e->have & VRT_ELH_SUGGESTED_LEN) && e->suggested_max_model_len) {
		/* V0: the KV cache it sized holds suggested tokens */
		kvt = e->suggested_max_model_len;
		avail = kvb;
		needed = len * (kvb / kvt);
	}
	bpt = bytes_per_token(c, needed, len, &src);
	x->needed_bytes = needed;
	x->budget_bytes = c->total * c->util / 1000;
	if (c->total && c->util &&
	    c->total * c->util / 1000 > c->peak) {
		ours = c->total * c->util / 1000 - c->peak;
		our_len = bpt ? down(ours / bpt, block) : 0;
	}
	ev(x, "engine_refusal", VRT_DIAG_COUNT, e->line,
	   "%s refused to start (log line %u): --max-model-len %" PRIu64
	   " needs %s of KV cache for one request, %s is available",
	   c->who, e->line, len, size(&c->z, needed), size(&c->z, avail));
	if (needed)
		ev(x, "kv_needed_bytes", VRT_DIAG_BYTES, needed,
		   "%s: one request of %" PRIu64 " tokens needs %s of KV cache "
		   "(%" PRIu64 " bytes per token)",
		   c->who, len, size(&c->z, needed), len ? needed / len : 0);
	ev(x, "kv_available_bytes", VRT_DIAG_BYTES, avail,
	   "%s: %s available for the KV cache after weights and activations",
	   c->who, size(&c->z, avail));
	if (ours)
		ev(x, "trace_kv_available_bytes", VRT_DIAG_BYTES, ours,
		   "by %s: %.2f x %s on device %d - %s peak before the "
		   "KV cache (weights %s, activations %s) = %s for the KV cache",
		   c->by, (double)c->util / 1000, size(&c->z, c->total), c->d,
		   size(&c->z, c->peak),
		   size(&c->z,
		        c->r->dev[c->d].phase[VRT_PHASE_weights].peak_bytes),
		   size(&c->z,
		        c->r->dev[c->d].phase[VRT_PHASE_profile].peak_bytes),
		   size(&c->z, ours));
	x->have_engine_value = (e->have & VRT_ELH_SUGGESTED_LEN) != 0;
	x->engine_value = e->suggested_max_model_len;
	x->have_trace_value = our_len > 0;
	x->trace_value = our_len;
	x->agree = -1;
	if (x->have_engine_value && x->have_trace_value) {
		uint64_t a = our_len, b = e->suggested_max_model_len;
		x->agree = (a > b ? a - b : b - a) * 100 <=
		           b * VRT_LOGCHECK_TOLERANCE_PCT;
	}
	if (x->have_engine_value)
		ev(x, "engine_suggested_max_model_len", VRT_DIAG_TOKENS,
		   e->suggested_max_model_len,
		   "%s estimates the maximum model length at %" PRIu64
		   "; %s: %s holds %" PRIu64 " tokens at %s %" PRIu64
		   " bytes per token",
		   c->who, e->suggested_max_model_len,
		   x->agree == 1   ? (c->log_only ? "the log's other numbers agree"
		                                  : "the trace agrees")
		   : x->agree == 0 ? (c->log_only ? "the log's other numbers "
		                                    "disagree"
		                                  : "the trace disagrees")
		                   : (c->log_only ? "the log's other numbers "
		                                    "cannot tell"
		                                  : "the trace cannot tell"),
		   ours ? size(&c->z, ours) : "its measure", our_len, src,
		   bpt);
	if (x->have_trace_value)
		ev(x, "trace_max_model_len", VRT_DIAG_TOKENS, our_len,
		   "%s: --max-model-len %" PRIu64,
		   c->log_only ? "the estimate from the log's other numbers"
		               : "the trace's estimate",
		   our_len);
	if (x->have_engine_value && x->have_trace_value)
		act(x,
		    "%s: lower the context: --max-model-len %" PRIu64
		    " (the engine's estimate; %s: %" PRIu64 ")",
		    c->who,
		    e->suggested_max_model_len < our_len ? e->suggested_max_model_len
		                                         : our_len,
		    c->log_only ? "from its other numbers" : "the trace's",
		    our_len);
	else if (x->have_engine_value || x->have_trace_value)
		act(x, "%s: lower the context: --max-model-len %" PRIu64, c->who,
		    x->have_engine_value ? e->suggested_max_model_len : our_len);
	else
		act(x, "%s: lower --max-model-len", c->who);
	if (c->total && needed) {
		uint64_t want = (c->peak + needed) * 1000 / c->total + 1;
		if (want <= 980 && want > c->util)
			act(x,
			    "%s: or raise --gpu-memory-utilization to %.2f (the "
			    "full context's %s of KV cache on top of the %s "
			    "peak)",
			    c->who, (double)(want + 9 - (want + 9) % 10) / 1000,
			    size(&c->z, needed), size(&c->z, c->peak));
	}
	cost(x, "shorter inputs: prompts longer than the new limit are "
	        "rejected");
	cost(x, "a larger memory fraction leaves less of the card to other "
	        "processes");
}

static void refusal_vllm_util(struct rctx *c)
{
	const struct vrt_enginelog_error *e = c->e;
	struct vrt_diag_refusal *x = c->x;

	x->verdict = c->other >= VRT_DIAG_OTHER_MIN_BYTES
	                     ? VRT_VERDICT_OTHER_PROCESSES
	                     : VRT_VERDICT_KV_CACHE;
	x->rung = x->verdict == VRT_VERDICT_OTHER_PROCESSES
	                  ? VRT_RUNG_BASELINE
	                  : VRT_RUNG_RESERVES;
	x->budget_bytes = c->total * c->util / 1000;
	snprintf(x->detail, sizeof(x->detail), "%s",
	         e->kind == VRT_ELE_NO_KV_MEMORY ? "no_kv_cache_memory"
	                                         : "free_memory_below_fraction");
	snprintf(x->flag, sizeof(x->flag), "--gpu-memory-utilization");
	x->fraction = 1;
	if (e->kind == VRT_ELE_FREE_BELOW_UTIL) {
		ev(x, "engine_refusal", VRT_DIAG_COUNT, e->line,
		   "%s refused to start (log line %u): %s free of %s, less than "
		   "--gpu-memory-utilization %.2f asks (%s)",
		   c->who, e->line, size(&c->z, e->free_bytes),
		   size(&c->z, e->total_bytes),
		   (double)e->mem_fraction_milli / 1000,
		   size(&c->z, e->needed_bytes));
		if (e->total_bytes) {
			x->trace_value = down(e->free_bytes * 1000 / e->total_bytes,
			                      10);
			x->have_trace_value = x->trace_value > 0;
		}
		if (c->other)
			ev(x, "other_processes_bytes", VRT_DIAG_BYTES, c->other,
			   "by %s: %s of device %d was in use before this "
			   "run allocated",
			   c->by, size(&c->z, c->other), c->d);
	} else {
		ev(x, "engine_refusal", VRT_DIAG_COUNT, e->line,
		   "%s refused to start (log line %u): no memory left for the "
		   "KV cache after weights and activations",
		   c->who, e->line);
		if (c->total) {
			x->trace_value = (c->peak * 1000 / c->total) + 50;
			x->trace_value += 9 - (x->trace_value + 9) % 10;
			x->have_trace_value = x->trace_value <= 980;
			ev(x, "peak_bytes", VRT_DIAG_BYTES, c->peak,
			   "by %s: weights and activations peaked at %s "
			   "of %s on device %d",
			   c->by, size(&c->z, c->peak), size(&c->z, c->total), c->d);
		}
	}
	x->agree = -1;
	if (x->have_trace_value)
		act(x, "%s: set --gpu-memory-utilization %.2f", c->who,
		    (double)x->trace_value / 1000);
	else
		act(x, "%s: free the card, or load a smaller model", c->who);
	cost(x, "a different memory fraction changes how many tokens the KV "
	        "cache holds");
}

static void refusal_sglang(struct rctx *c)
{
	const struct vrt_enginelog_error *e = c->e;
	struct vrt_diag_refusal *x = c->x;
	uint64_t free_after = 0, min = 0;

	x->verdict = VRT_VERDICT_KV_CACHE;
	x->rung = VRT_RUNG_RESERVES;
	x->budget_bytes =
	        c->total * (e->have & VRT_ELH_MEM_FRACTION ? e->mem_fraction_milli
	                                                   : c->util) /
	        1000;
	snprintf(x->detail, sizeof(x->detail), "mem_fraction_static");
	snprintf(x->flag, sizeof(x->flag), "--mem-fraction-static");
	x->fraction = 1;
	ev(x, "engine_refusal", VRT_DIAG_COUNT, e->line,
	   "%s refused to start (log line %u): no room for the KV cache "
	   "within --mem-fraction-static%s%.2f; it asks to increase it",
	   c->who, e->line, e->have & VRT_ELH_MEM_FRACTION ? " " : "",
	   e->have & VRT_ELH_MEM_FRACTION
	           ? (double)e->mem_fraction_milli / 1000
	           : 0.0);
	if (c->total > c->other + c->peak) {
		/* SGLang sizes the KV cache as what is free after the weights
		 * minus (1 - fraction) of the card: it needs more than the
		 * fraction the weights and others already use. */
		free_after = c->total - c->other - c->peak;
		min = 1000 - free_after * 1000 / c->total;
		x->trace_value = min + 50 + 9 - (min + 50 + 9) % 10;
		x->have_trace_value = x->trace_value <= 950;
		ev(x, "trace_free_after_weights_bytes", VRT_DIAG_BYTES,
		   free_after,
		   "by %s: %s free of %s on device %d after the run's "
		   "peak (%s: weights and what start-up held) and other "
		   "processes (%s): a fraction above %.2f leaves room for the "
		   "KV cache",
		   c->by, size(&c->z, free_after), size(&c->z, c->total), c->d,
		   size(&c->z, c->peak), size(&c->z, c->other),
		   (double)min / 1000);
	}
	x->agree = -1;
	if (e->have & VRT_ELH_SUGGESTED_FRACTION) {
		/* the engine's floor: a KV cache of nothing; 0.05 more
		 * leaves it a twentieth of the card */
		uint64_t want = e->suggested_fraction_milli + 50;
		want += 9 - (want + 9) % 10;
		x->have_engine_value = 1;
		x->engine_value = e->suggested_fraction_milli;
		ev(x, "engine_suggested_fraction", VRT_DIAG_PERCENT,
		   e->suggested_fraction_milli / 10,
		   "%s: the weights leave the KV cache nothing below "
		   "--mem-fraction-static %.3f",
		   c->who, (double)e->suggested_fraction_milli / 1000);
		if (x->have_trace_value) {
			uint64_t a = x->trace_value, b2 = want;
			x->agree = (a > b2 ? a - b2 : b2 - a) <= 50;
		}
		if (want <= 980) {
			act(x,
			    "%s: raise --mem-fraction-static to %.2f (above the "
			    "engine's floor of %.3f, so the KV cache gets about "
			    "5%% of the card)",
			    c->who, (double)want / 1000,
			    (double)e->suggested_fraction_milli / 1000);
			cost(x, "a larger static fraction leaves less memory for "
			        "activations");
			act(x,
			    "%s: or shard the weights (--tp-size 2) or load "
			    "lower-precision weights (--quantization fp8)",
			    c->who);
			cost(x, "more cards, or some quality");
			return;
		}
	}
	if (x->have_trace_value)
		act(x,
		    "%s: raise --mem-fraction-static to %.2f (the engine's "
		    "advice; the trace's value)",
		    c->who, (double)x->trace_value / 1000);
	else
		act(x,
		    "%s: the weights leave too little of the card: shard them "
		    "(--tp 2) or load lower-precision weights",
		    c->who);
	cost(x, "a larger static fraction leaves less memory for activations");
}

static void refusal_llama(struct rctx *c)
{
	const struct vrt_enginelog_error *e = c->e;
	struct vrt_diag_refusal *x = c->x;
	const struct vrt_enginelog *log = c->lc->log;
	uint64_t ctx = log->config_line[VRT_ELC_CTX_SIZE]
	                       ? log->config[VRT_ELC_CTX_SIZE]
	                       : c->lc->flags.max_model_len;
	uint64_t room = c->total > c->other + c->peak
	                        ? c->total - c->other - c->peak
	                        : 0;

	x->verdict = VRT_VERDICT_KV_CACHE;
	x->rung = VRT_RUNG_RESERVES;
	if (e->have & VRT_ELH_REQUESTED)
		x->needed_bytes = e->requested_bytes;
	snprintf(x->detail, sizeof(x->detail), "context_does_not_fit");
	snprintf(x->flag, sizeof(x->flag), "-c");
	ev(x, "engine_refusal", VRT_DIAG_COUNT, e->line,
	   "%s could not create its context (log line %u)%s%s%s", c->who,
	   e->line, e->have & VRT_ELH_REQUESTED ? ": " : "",
	   e->have & VRT_ELH_REQUESTED ? size(&c->z, e->requested_bytes) : "",
	   e->have & VRT_ELH_REQUESTED ? " did not fit" : "");
	if ((e->have & VRT_ELH_REQUESTED) && ctx && e->requested_bytes) {
		uint64_t per = e->requested_bytes / ctx;
		x->trace_value = per ? down(room / per, 256) : 0;
		x->have_trace_value = x->trace_value > 0;
		ev(x, "trace_room_bytes", VRT_DIAG_BYTES, room,
		   "by %s: %s free on device %d after the weights: "
		   "about %" PRIu64 " tokens of context at %" PRIu64
		   " bytes each",
		   c->by, size(&c->z, room), c->d, x->trace_value, per);
	}
	x->agree = -1;
	if (x->have_trace_value)
		act(x, "%s: lower the context: -c %" PRIu64 " (was %" PRIu64 ")",
		    c->who, x->trace_value, ctx);
	else
		act(x, "%s: lower the context (-c) or offload fewer layers "
		       "(-ngl)",
		    c->who);
	cost(x, "shorter inputs: prompts longer than the context are "
	        "rejected");
}

static void refusal_tgi(struct rctx *c)
{
	const struct vrt_enginelog_error *e = c->e;
	struct vrt_diag_refusal *x = c->x;
	const struct vrt_enginelog *log = c->lc->log;

	x->have_engine_value = 0;
	x->agree = -1;
	if (e->kind == VRT_ELE_PREFILL_TOKENS) {
		const struct vrt_replay_failure *f = NULL;
		size_t i;
		/* the warmup's batch is the configured batch's activations */
		x->verdict = VRT_VERDICT_CONCURRENCY;
		x->rung = VRT_RUNG_ACTIVATIONS;
		snprintf(x->detail, sizeof(x->detail),
		         "max_batch_prefill_tokens");
		snprintf(x->flag, sizeof(x->flag), "--max-batch-prefill-tokens");
		ev(x, "engine_refusal", VRT_DIAG_TOKENS, e->tokens,
		   "%s refused at warmup (log line %u): a prefill batch of "
		   "%" PRIu64 " tokens does not fit; it asks to decrease "
		   "--max-batch-prefill-tokens",
		   c->who, e->line, e->tokens);
		for (i = 0; i < c->r->nfails; i++)
			if (c->r->fails[i].oom && c->r->fails[i].have_info)
				f = &c->r->fails[i];
		if (f && f->requested_bytes) {
			uint64_t room = f->free_bytes +
			                f->live_by_phase[VRT_PHASE_forward] +
			                f->live_by_phase[VRT_PHASE_profile];
			uint64_t need = f->requested_bytes +
			                f->live_by_phase[VRT_PHASE_forward] +
			                f->live_by_phase[VRT_PHASE_profile];
			x->trace_value = down((uint64_t)((double)e->tokens *
			                                 (double)room /
			                                 (double)need),
			                      256);
			x->have_trace_value = x->trace_value > 0;
		}
		if (x->have_trace_value)
			act(x,
			    "%s: cap the prefill batch: --max-batch-prefill-"
			    "tokens %" PRIu64 " (was %" PRIu64 ")",
			    c->who, x->trace_value, e->tokens);
		else
			act(x, "%s: lower --max-batch-prefill-tokens below "
			       "%" PRIu64,
			    c->who, e->tokens);
		cost(x, "throughput: long prompts are prefilled in more steps");
		return;
	}
	x->verdict = VRT_VERDICT_KV_CACHE;
	x->rung = VRT_RUNG_RESERVES;
	snprintf(x->detail, sizeof(x->detail), "max_total_tokens");
	snprintf(x->flag, sizeof(x->flag), "--max-total-tokens");
	ev(x, "engine_refusal", VRT_DIAG_TOKENS, e->tokens,
	   "%s refused to start (log line %u): the KV cache cannot hold "
	   "one request of max_total_tokens=%" PRIu64,
	   c->who, e->line, e->tokens);
	if (log->config_line[VRT_ELC_MAX_BATCH_TOKENS]) {
		x->trace_value = log->config[VRT_ELC_MAX_BATCH_TOKENS];
		x->have_trace_value = 1;
	} else {
		uint64_t kvt;
		if (vrt_enginelog_value(log, VRT_ELK_KV_TOKENS, -1, &kvt, NULL,
		                        NULL)) {
			x->trace_value = kvt;
			x->have_trace_value = 1;
		}
	}
	if (x->have_trace_value)
		act(x, "%s: lower --max-total-tokens to %" PRIu64
		       " (what the KV cache holds)",
		    c->who, x->trace_value);
	else
		act(x, "%s: lower --max-total-tokens", c->who);
	cost(x, "shorter inputs and outputs per request");
}

static void refusal(struct vrt_logcheck *lc, const struct vrt_trace *t,
                    const struct vrt_replay *r,
                    const struct vrt_model *cfg)
{
	const struct vrt_enginelog *log = lc->log;
	struct rctx c;
	size_t i, n = ndev(t, r);

	if (!log->have_fatal ||
	    !vrt_enginelog_is_refusal(log->errors[log->fatal].kind))
		return;
	memset(&c, 0, sizeof(c));
	c.lc = lc;
	c.t = t;
	c.r = r;
	c.cfg = cfg;
	c.e = &log->errors[log->fatal];
	c.x = &lc->refusal;
	c.who = engine_title(c.e->engine ? c.e->engine : log->engine);
	c.log_only = lc->log_only;
	c.by = lc->log_only ? "the log's own numbers" : "the trace";
	memset(c.x, 0, sizeof(*c.x));
	lc->refusal_error = log->fatal;
	c.x->line = c.e->line;
	/* The device: the one the error names, else the one that holds the
	 * most weights. */
	c.d = (c.e->have & VRT_ELH_DEVICE) ? trace_device(t, r, c.e->device)
	                                   : -1;
	for (i = 0; c.d < 0 && i < n; i++) {
		uint64_t w = r->dev[i].phase[VRT_PHASE_weights].peak_bytes;
		if (touched(r, i) &&
		    (c.d < 0 ||
		     w > r->dev[c.d].phase[VRT_PHASE_weights].peak_bytes))
			c.d = (int32_t)i;
	}
	for (i = 0; c.d < 0 && i < n; i++)
		if (touched(r, i))
			c.d = (int32_t)i;
	if (c.d >= 0) {
		c.total = dev_total(t, r, c.d);
		c.peak = r->dev[c.d].peak_bytes;
		c.other = r->dev[c.d].have_baseline
		                  ? r->dev[c.d].baseline_used_bytes
		                  : 0;
	}
	c.util = lc->flags.mem_util_milli;
	if (!c.util && log->engine == VRT_ENGINELOG_VLLM)
		c.util = 900; /* vLLM's default --gpu-memory-utilization */
	c.x->device = c.d;
	/* before the engine said it serves: start-up */
	snprintf(c.x->stage, sizeof(c.x->stage), "%s",
	         log->have_ready && log->ready_line < c.e->line ? "request"
	                                                         : "load");
	switch (c.e->kind) {
	case VRT_ELE_KV_TOO_SMALL:
		refusal_vllm_kv(&c);
		break;
	case VRT_ELE_NO_KV_MEMORY:
	case VRT_ELE_FREE_BELOW_UTIL:
		refusal_vllm_util(&c);
		break;
	case VRT_ELE_MEM_FRACTION:
		refusal_sglang(&c);
		break;
	case VRT_ELE_CONTEXT_ALLOC:
		refusal_llama(&c);
		break;
	default:
		refusal_tgi(&c);
		break;
	}
	lc->have_refusal = 1;
}

/* ---- the whole check --------------------------------------------------- */

void vrt_logcheck_run(struct vrt_logcheck *lc, const struct vrt_enginelog *log,
                      const char *path, const struct vrt_trace *t,
                      const struct vrt_replay *r,
                      const struct vrt_model *cfg)
{
	struct sz z = {.i = 0};

	memset(lc, 0, sizeof(*lc));
	lc->log = log;
	lc->path = path;
	struct vrt_diag_flags printed;
	unsigned bits;

	vrt_diagnose_flags(&lc->flags, t);
	bits = vrt_logcheck_flags(log, &printed);
	lc->flags_from_log = vrt_diagnose_fill_flags(&lc->flags, &printed, bits);
	compare(lc, t, r);
	lc->have_fatal_failure = vrt_logcheck_fatal_failure(
	        log, t, r, &lc->fatal_failure, lc->fatal_match);
	if (log->have_fatal && !lc->have_fatal_failure &&
	    !vrt_enginelog_is_refusal(log->errors[log->fatal].kind)) {
		const struct vrt_enginelog_error *e = &log->errors[log->fatal];
		finding(lc, "fatal_error_unrecorded", -1,
		        "the engine's fatal error (log line %u, %s%s%s) matches "
		        "no recorded failure: the allocation went through a "
		        "call the preload does not hook, or its process was not "
		        "traced",
		        e->line, vrt_enginelog_error_name(e->kind),
		        e->have & VRT_ELH_REQUESTED ? ", " : "",
		        e->have & VRT_ELH_REQUESTED
		                ? size(&z, e->requested_bytes)
		                : "");
	}
	if (log->have_ready && log->ready_wall_ns && vrt_wallclock_known(t)) {
		lc->have_ready = 1;
		lc->ready_ts = vrt_wallclock_mono(t, log->ready_wall_ns);
	}
	refusal(lc, t, r, cfg);
}

void vrt_logcheck_run_logonly(struct vrt_logcheck *lc,
                              const struct vrt_enginelog *log,
                              const char *path, const struct vrt_logrun *lr,
                              const struct vrt_model *cfg)
{
	struct vrt_diag_flags printed;
	unsigned bits;

	memset(lc, 0, sizeof(*lc));
	lc->log = log;
	lc->path = path;
	lc->log_only = 1;
	lc->lr = lr;
	vrt_diagnose_flags(&lc->flags, &lr->t);
	bits = vrt_logcheck_flags(log, &printed);
	lc->flags_from_log = vrt_diagnose_fill_flags(&lc->flags, &printed, bits);
	if (lr->have_failure && lr->r.nfails) {
		const struct vrt_enginelog_error *e = &log->errors[log->fatal];
		lc->have_fatal_failure = 1;
		lc->fatal_failure = 0;
		snprintf(lc->fatal_match, sizeof(lc->fatal_match),
		         "the log's fatal error (line %u, %s) is the failed "
		         "allocation the run is built around",
		         e->line, vrt_enginelog_error_name(e->kind));
	}
	if (log->have_ready) {
		size_t i;
		/* the ready line is the run's listen() */
		lc->have_ready = 1;
		lc->ready_ts = lr->t.end_ns;
		for (i = 0; i < lr->r.nfails; i++)
			lc->ready_ts = lr->r.fails[i].ts;
		if (lr->r.have_server_ready)
			lc->ready_ts = lr->r.server_ready_ts;
	}
	refusal(lc, &lr->t, &lr->r, cfg);
}

/* The rung of the ladder each compared quantity is a budget of. */
static const int quantity_rung[VRT_LCQ_N] = {
        VRT_RUNG_WEIGHTS, VRT_RUNG_RESERVES, VRT_RUNG_ACTIVATIONS,
        VRT_RUNG_RESERVES};

void vrt_logcheck_diag(const struct vrt_logcheck *lc, struct vrt_diag_log *out)
{
	const struct vrt_enginelog *log = lc->log;
	size_t i;

	memset(out, 0, sizeof(*out));
	snprintf(out->engine, sizeof(out->engine), "%s",
	         engine_title(log->engine));
	if (lc->have_fatal_failure) {
		out->have_fatal_failure = 1;
		out->fatal_failure = lc->fatal_failure;
		out->fatal_line = log->errors[log->fatal].line;
		snprintf(out->fatal_why, sizeof(out->fatal_why), "%s",
		         lc->fatal_match);
	} else if (log->have_fatal &&
	           !vrt_enginelog_is_refusal(log->errors[log->fatal].kind)) {
		out->have_unmatched_error = 1;
		out->unmatched_line = log->errors[log->fatal].line;
		snprintf(out->unmatched_error, sizeof(out->unmatched_error),
		         "%s", log->errors[log->fatal].text);
	}
	out->printed = vrt_logcheck_flags(log, &out->flags);
	out->have_ready = lc->have_ready;
	out->ready_ts = lc->ready_ts;
	out->ready_line = log->ready_line;
	out->have_refusal = lc->have_refusal;
	out->refusal = lc->refusal;
	if (log->have_fatal) {
		const struct vrt_enginelog_error *e = &log->errors[log->fatal];
		unsigned k;
		if ((e->have & VRT_ELH_RESERVED) && (e->have & VRT_ELH_FREE) &&
		    (e->have & VRT_ELH_REQUESTED)) {
			out->have_reserved = 1;
			out->reserved_bytes = e->reserved_bytes;
			out->requested_bytes = e->requested_bytes;
			out->free_bytes = e->free_bytes;
		}
		for (k = 0; k < e->nothers &&
		            out->nother_pids < VRT_DIAG_MAX_PIDS;
		     k++) {
			size_t j;
			int mine = 0;
			for (j = 0; j < log->npids; j++)
				mine |= log->pids[j] == e->others[k].pid;
			if (mine || e->others[k].pid <= 0)
				continue;
			out->other_pids[out->nother_pids] =
			        (uint64_t)e->others[k].pid;
			out->other_pid_bytes[out->nother_pids++] =
			        e->others[k].bytes;
		}
		out->host_pageable = e->kind == VRT_ELE_HOST_ALLOC &&
		                     !strstr(e->text, "pinned");
		if ((e->have & VRT_ELH_PROMPT) && e->serving) {
			out->prompt_known = 1;
			out->prompt_tokens = e->prompt_tokens;
		}
	}
	if (lc->log_only && lc->lr) {
		const struct vrt_logrun *lr = lc->lr;
		const struct vrt_enginelog_error *e =
		        log->have_fatal ? &log->errors[log->fatal] : NULL;
		out->log_only = 1;
		out->rungs_read = lr->rungs_read;
		out->inflight_counted = lr->inflight_counted;
		out->engine_known = log->engine != VRT_ENGINELOG_UNKNOWN;
		out->memory_lines = log->nfacts > 0 || log->nerrors > 0;
		out->lines = log->lines;
		out->fatal_line = e ? e->line : 0;
		/* The same server under record: its command line as the log
		 * gives it; quoted where a word needs it. */
		if (lr->command[0]) {
			size_t n = (size_t)snprintf(out->record_command,
			                            sizeof(out->record_command),
			                            "vramtrace record -o RUN --");
			for (i = 0; i < lr->proc.argc && n < sizeof(out->record_command);
			     i++) {
				const char *a = lr->proc.argv[i];
				int q = strpbrk(a, " \t'\"$`\\") != NULL;
				n += (size_t)snprintf(out->record_command + n,
				                      sizeof(out->record_command) - n,
				                      q ? " '%s'" : " %s", a);
			}
			if (log->engine == VRT_ENGINELOG_OLLAMA)
				snprintf(out->record_command,
				         sizeof(out->record_command),
				         "vramtrace record -o RUN -- ollama serve");
		}
	}
	for (i = 0; i < lc->nrows && out->nnumbers < VRT_DIAG_LOG_NUMBERS;
	     i++) {
		const struct vrt_logcheck_row *x = &lc->rows[i];
		struct vrt_diag_engine_number *n = &out->numbers[out->nnumbers++];
		n->rung = quantity_rung[x->quantity];
		snprintf(n->what, sizeof(n->what), "%s",
		         vrt_logcheck_quantity_name(x->quantity));
		n->device = x->device;
		n->engine_bytes = x->engine_bytes;
		n->traced_bytes = x->traced_bytes;
		n->diff_percent = x->diff_percent;
		n->disagrees = x->flagged;
		n->line = x->line;
	}
}

int vrt_logcheck_logonly_diagnose(struct vrt_logcheck *lc,
                                  struct vrt_logrun *lr,
                                  struct vrt_diag_log *dl,
                                  struct vrt_diagnosis *dg,
                                  const struct vrt_enginelog *log,
                                  const char *path,
                                  const struct vrt_model *cfg,
                                  unsigned margin_pct)
{
	struct vrt_diag_options o = {margin_pct, dl};

	if (vrt_logrun_build(lr, log))
		return -1;
	vrt_logcheck_run_logonly(lc, log, path, lr, cfg);
	vrt_logcheck_diag(lc, dl);
	vrt_diagnose_run_opts(dg, &lr->t, &lr->r, cfg, &o);
	lc->refusal_applied = dg->log_refusal;
	return 0;
}
