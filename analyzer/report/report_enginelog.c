/*
 * report_enginelog.c — the engine's log held against the trace
 * (logcheck.h) as the JSON report's "engine_log" object and "findings"
 * array, and as the text report's "engine log" block. Formatting only:
 * numbers and sentences come from the log and the check. Log text is
 * untrusted: the text block prints control bytes as '?', JSON escapes.
 */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "enginelog/logcheck.h"
#include "base/text.h"
#include "load/wallclock.h"

/* "time_s"/"time_utc" of a log line's wall-clock time (null when the
 * line carried none or the trace has no clock). */
static void line_time(struct vrt_json *w, const struct vrt_trace *t,
                      int64_t wall_ns)
{
	char buf[VRT_WALLCLOCK_TEXT];
	int have = wall_ns && vrt_wallclock_known(t);

	vrt_json_key(w, "time_s");
	if (have)
		vrt_json_seconds(w,
		                 vrt_wallclock_mono(t, wall_ns) - t->start_ns);
	else
		vrt_json_null(w);
	vrt_json_key(w, "time_utc");
	if (wall_ns)
		vrt_json_string(
		        w, vrt_wallclock_format(buf, sizeof(buf), wall_ns, 6));
	else
		vrt_json_null(w);
}

static void fraction(struct vrt_json *w, uint64_t milli)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64 ".%03" PRIu64, milli / 1000,
	         milli % 1000);
	vrt_json_number_text(w, buf);
}

/* The unit of a fact's value. */
static const char *fact_unit(int kind)
{
	switch (kind) {
	case VRT_ELK_KV_TOKENS:
		return "tokens";
	case VRT_ELK_KV_BLOCKS:
		return "blocks";
	case VRT_ELK_CONCURRENCY:
		return "x1000";
	}
	return "bytes";
}

static void facts(struct vrt_json *w, const struct vrt_trace *t,
                  const struct vrt_enginelog *log)
{
	size_t i;

	vrt_json_key(w, "facts");
	vrt_json_begin_array(w);
	for (i = 0; i < log->nfacts; i++) {
		const struct vrt_enginelog_fact *f = &log->facts[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "kind");
		vrt_json_string(w, vrt_enginelog_kind_name(f->kind));
		vrt_json_key(w, "device");
		vrt_json_int(w, f->device);
		vrt_json_key(w, "value");
		vrt_json_uint(w, f->value);
		vrt_json_key(w, "unit");
		vrt_json_string(w, fact_unit(f->kind));
		vrt_json_key(w, "line");
		vrt_json_uint(w, f->line);
		line_time(w, t, f->wall_ns);
		vrt_json_key(w, "text");
		vrt_json_string(w, f->text);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

static void config(struct vrt_json *w, const struct vrt_logcheck *lc)
{
	const struct vrt_enginelog *log = lc->log;
	int k;

	vrt_json_key(w, "config");
	vrt_json_begin_object(w);
	for (k = 0; k < VRT_ELC_NFIELDS; k++) {
		vrt_json_key(w, vrt_enginelog_config_name(k));
		if (!log->config_line[k])
			vrt_json_null(w);
		else if (k == VRT_ELC_MEM_FRACTION)
			fraction(w, log->config[k]);
		else
			vrt_json_uint(w, log->config[k]);
	}
	vrt_json_end_object(w);
	/* the diagnosis flags the command lines did not give */
	vrt_json_key(w, "flags_from_log");
	vrt_report_log_flags_json(w, lc->flags_from_log);
}

static void errors(struct vrt_json *w, const struct vrt_trace *t,
                   const struct vrt_enginelog *log)
{
	size_t i;

	vrt_json_key(w, "errors");
	vrt_json_begin_array(w);
	for (i = 0; i < log->nerrors; i++) {
		const struct vrt_enginelog_error *e = &log->errors[i];
		unsigned h = e->have;
		vrt_json_begin_object(w);
		vrt_json_key(w, "kind");
		vrt_json_string(w, vrt_enginelog_error_name(e->kind));
		vrt_json_key(w, "refusal");
		vrt_json_bool(w, vrt_enginelog_is_refusal(e->kind));
		vrt_json_key(w, "fatal");
		vrt_json_bool(w, log->have_fatal && log->fatal == i);
		vrt_json_key(w, "line");
		vrt_json_uint(w, e->line);
		line_time(w, t, e->wall_ns);
		vrt_json_key(w, "device");
		if (h & VRT_ELH_DEVICE)
			vrt_json_int(w, e->device);
		else
			vrt_json_null(w);
		vrt_json_key(w, "pid");
		if (e->pid >= 0)
			vrt_json_int(w, e->pid);
		else
			vrt_json_null(w);
		vrt_json_key_uint_or_null(w, "requested_bytes",
		                          h & VRT_ELH_REQUESTED,
		                          e->requested_bytes);
		vrt_json_key_uint_or_null(w, "total_bytes", h & VRT_ELH_TOTAL,
		                          e->total_bytes);
		vrt_json_key_uint_or_null(w, "free_bytes", h & VRT_ELH_FREE,
		                          e->free_bytes);
		vrt_json_key_uint_or_null(w, "allocated_bytes",
		                          h & VRT_ELH_ALLOCATED,
		                          e->allocated_bytes);
		vrt_json_key_uint_or_null(w, "reserved_unallocated_bytes",
		                          h & VRT_ELH_RESERVED,
		                          e->reserved_bytes);
		vrt_json_key_uint_or_null(w, "kv_needed_bytes",
		                          h & VRT_ELH_NEEDED, e->needed_bytes);
		vrt_json_key_uint_or_null(w, "kv_available_bytes",
		                          h & VRT_ELH_AVAILABLE,
		                          e->available_bytes);
		vrt_json_key_uint_or_null(w, "max_model_len",
		                          h & VRT_ELH_MAX_MODEL_LEN,
		                          e->max_model_len);
		vrt_json_key_uint_or_null(w, "suggested_max_model_len",
		                          h & VRT_ELH_SUGGESTED_LEN,
		                          e->suggested_max_model_len);
		vrt_json_key_uint_or_null(w, "tokens", h & VRT_ELH_TOKENS,
		                          e->tokens);
		vrt_json_key_uint_or_null(w, "private_pool_bytes",
		                          h & VRT_ELH_PRIVATE,
		                          e->private_bytes);
		vrt_json_key_uint_or_null(w, "process_bytes",
		                          h & VRT_ELH_PROCESS,
		                          e->process_bytes);
		vrt_json_key(w, "other_processes");
		vrt_json_begin_array(w);
		for (unsigned k = 0; k < e->nothers; k++) {
			vrt_json_begin_object(w);
			vrt_json_key(w, "pid");
			vrt_json_int(w, e->others[k].pid);
			vrt_json_key(w, "bytes");
			vrt_json_uint(w, e->others[k].bytes);
			vrt_json_end_object(w);
		}
		vrt_json_end_array(w);
		vrt_json_key(w, "phase");
		if (e->phase >= 0) {
			char pb[32];
			vrt_json_string(
			        w, vrt_load_phase_name(t, (unsigned)e->phase,
			                               pb, sizeof(pb)));
		} else {
			vrt_json_null(w);
		}
		vrt_json_key(w, "recovered");
		vrt_json_bool(w, e->recovered);
		vrt_json_key(w, "serving");
		vrt_json_bool(w, e->serving);
		vrt_json_key_uint_or_null(w, "running", h & VRT_ELH_RUNNING,
		                          e->running);
		vrt_json_key_uint_or_null(w, "prompt_tokens",
		                          h & VRT_ELH_PROMPT, e->prompt_tokens);
		vrt_json_key_uint_or_null(w, "warmup_requests",
		                          h & VRT_ELH_COUNT, e->count);
		vrt_json_key(w, "suggested_memory_fraction");
		if (h & VRT_ELH_SUGGESTED_FRACTION)
			fraction(w, e->suggested_fraction_milli);
		else
			vrt_json_null(w);
		vrt_json_key(w, "memory_fraction");
		if (h & VRT_ELH_MEM_FRACTION)
			fraction(w, e->mem_fraction_milli);
		else
			vrt_json_null(w);
		vrt_json_key(w, "text");
		vrt_json_string(w, e->text);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

static void comparison(struct vrt_json *w, const struct vrt_logcheck *lc)
{
	size_t i;

	vrt_json_key(w, "comparison");
	vrt_json_begin_array(w);
	for (i = 0; i < lc->nrows; i++) {
		const struct vrt_logcheck_row *x = &lc->rows[i];
		char pct[32];
		vrt_json_begin_object(w);
		vrt_json_key(w, "quantity");
		vrt_json_string(w, vrt_logcheck_quantity_name(x->quantity));
		vrt_json_key(w, "device");
		vrt_json_int(w, x->device);
		vrt_json_key(w, "log_device");
		vrt_json_int(w, x->log_device);
		vrt_json_key(w, "engine_bytes");
		vrt_json_uint(w, x->engine_bytes);
		vrt_json_key(w, "traced_bytes");
		vrt_json_uint(w, x->traced_bytes);
		vrt_json_key(w, "difference_percent");
		snprintf(pct, sizeof(pct), "%.1f", x->diff_percent);
		vrt_json_number_text(w, pct);
		vrt_json_key(w, "flagged");
		vrt_json_bool(w, x->flagged);
		vrt_json_key(w, "allocation_failed");
		vrt_json_bool(w, x->allocation_failed);
		vrt_json_key(w, "line");
		vrt_json_uint(w, x->line);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

static void refusal(struct vrt_json *w, const struct vrt_logcheck *lc)
{
	const struct vrt_diag_refusal *x = &lc->refusal;

	vrt_json_key(w, "refusal");
	if (!lc->have_refusal) {
		vrt_json_null(w);
		return;
	}
	vrt_json_begin_object(w);
	vrt_json_key(w, "verdict");
	vrt_json_string(w, vrt_diagnose_verdict_name(x->verdict));
	vrt_json_key(w, "detail");
	vrt_json_string(w, x->detail);
	vrt_json_key(w, "stage");
	vrt_json_string(w, x->stage);
	vrt_json_key(w, "device");
	vrt_json_int(w, x->device);
	vrt_json_key(w, "error");
	vrt_json_uint(w, lc->refusal_error);
	vrt_json_key(w, "flag");
	vrt_json_string(w, x->flag);
	vrt_json_key(w, "engine_value");
	if (!x->have_engine_value)
		vrt_json_null(w);
	else if (x->fraction)
		fraction(w, x->engine_value);
	else
		vrt_json_uint(w, x->engine_value);
	vrt_json_key(w, "trace_value");
	if (!x->have_trace_value)
		vrt_json_null(w);
	else if (x->fraction)
		fraction(w, x->trace_value);
	else
		vrt_json_uint(w, x->trace_value);
	vrt_json_key(w, "agree");
	if (x->agree < 0)
		vrt_json_null(w);
	else
		vrt_json_bool(w, x->agree);
	vrt_json_key(w, "applied");
	vrt_json_bool(w, lc->refusal_applied);
	vrt_json_end_object(w);
}

void vrt_report_enginelog_json(struct vrt_json *w, const struct vrt_trace *t,
                               const struct vrt_logcheck *lc)
{
	const struct vrt_enginelog *log;

	vrt_json_key(w, "engine_log");
	if (!lc || !lc->log) {
		vrt_json_null(w);
		vrt_json_key(w, "findings");
		vrt_json_begin_array(w);
		vrt_json_end_array(w);
		return;
	}
	log = lc->log;
	vrt_json_begin_object(w);
	vrt_json_key(w, "path");
	vrt_json_string(w, lc->path);
	vrt_json_key(w, "engine");
	vrt_json_string(w, vrt_enginelog_engine_name(log->engine));
	vrt_json_key(w, "lines");
	vrt_json_uint(w, log->lines);
	vrt_json_key(w, "cut_bytes");
	vrt_json_uint(w, log->cut_bytes);
	vrt_json_key(w, "facts_dropped");
	vrt_json_uint(w, log->facts_dropped);
	vrt_json_key(w, "log_only"); /* no trace: the run is the log's */
	vrt_json_bool(w, lc->log_only);
	vrt_json_key(w, "requests"); /* request lines */
	vrt_json_uint(w, log->requests);
	vrt_json_key_uint_or_null(w, "running", log->have_running,
	                          log->running);
	vrt_json_key_uint_or_null(w, "max_running", log->have_running,
	                          log->max_running);
	vrt_json_key(w, "command");
	if (log->command[0])
		vrt_json_string(w, log->command);
	else
		vrt_json_null(w);
	vrt_json_key(w, "model");
	if (log->model[0])
		vrt_json_string(w, log->model);
	else
		vrt_json_null(w);
	facts(w, t, log);
	config(w, lc);
	vrt_json_key(w, "ready");
	if (log->have_ready) {
		vrt_json_begin_object(w);
		vrt_json_key(w, "line");
		vrt_json_uint(w, log->ready_line);
		line_time(w, t, log->ready_wall_ns);
		vrt_json_key(w, "text");
		vrt_json_string(w, log->ready_text);
		vrt_json_end_object(w);
	} else {
		vrt_json_null(w);
	}
	errors(w, t, log);
	vrt_json_key(w, "fatal_error");
	if (log->have_fatal)
		vrt_json_uint(w, log->fatal);
	else
		vrt_json_null(w);
	/* the failure the fatal error names: an index into "failures" */
	vrt_json_key(w, "fatal_failure");
	if (lc->have_fatal_failure)
		vrt_json_uint(w, lc->fatal_failure);
	else
		vrt_json_null(w);
	vrt_json_key(w, "fatal_failure_match");
	if (lc->have_fatal_failure)
		vrt_json_string(w, lc->fatal_match);
	else
		vrt_json_null(w);
	comparison(w, lc);
	refusal(w, lc);
	vrt_json_end_object(w);
	vrt_json_key(w, "findings");
	vrt_json_begin_array(w);
	for (size_t i = 0; i < lc->nfindings; i++) {
		vrt_json_begin_object(w);
		vrt_json_key(w, "key");
		vrt_json_string(w, lc->findings[i].key);
		vrt_json_key(w, "device");
		vrt_json_int(w, lc->findings[i].device);
		vrt_json_key(w, "text");
		vrt_json_string(w, lc->findings[i].text);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

/* ---- text ---------------------------------------------------------------- */

/* s cut at max bytes ("..." after), folded at the text width with
 * indent spaces on its further lines, starting at column indent. */
static void put_cut(FILE *f, const char *s, size_t max, size_t indent)
{
	char buf[512];
	size_t n = s ? strlen(s) : 0;

	if (max > sizeof(buf) - 4)
		max = sizeof(buf) - 4;
	snprintf(buf, sizeof(buf), "%.*s%s", (int)(n < max ? n : max),
	         s ? s : "", n > max ? "..." : "");
	vrt_text_put_wrapped(f, buf, indent, indent, VRT_TEXT_WIDTH);
}

static void when(FILE *f, const struct vrt_trace *t, int64_t wall_ns)
{
	char buf[VRT_WALLCLOCK_TEXT];

	if (!wall_ns)
		return;
	if (vrt_wallclock_known(t))
		fprintf(f, " at %.3fs",
		        (double)(vrt_wallclock_mono(t, wall_ns) - t->start_ns) /
		                1e9);
	fprintf(f, " (%s)", vrt_wallclock_format(buf, sizeof(buf), wall_ns, 3));
}

/* The words for a fact in the log-only listing. */
static const char *fact_words(int kind)
{
	switch (kind) {
	case VRT_ELK_WEIGHTS:
		return "weights";
	case VRT_ELK_KV_BYTES:
		return "KV cache";
	case VRT_ELK_ACTIVATION:
		return "activations";
	case VRT_ELK_GRAPH:
		return "CUDA graphs";
	case VRT_ELK_TOTAL:
		return "capacity";
	case VRT_ELK_NON_TORCH:
		return "non-PyTorch memory";
	case VRT_ELK_FREE:
		return "free before loading";
	case VRT_ELK_PROJECTED:
		return "projected use";
	}
	return NULL;
}

/* "  config: max_model_len 8192, memory_fraction 0.90" (what the log
 * printed), or nothing. */
static void config_text(FILE *f, const struct vrt_enginelog *log)
{
	int k, any = 0;

	for (k = 0; k < VRT_ELC_NFIELDS; k++) {
		if (!log->config_line[k])
			continue;
		fputs(any++ ? ", " : "  config: ", f);
		if (k == VRT_ELC_MEM_FRACTION)
			fprintf(f, "%s %.2f", vrt_enginelog_config_name(k),
			        (double)log->config[k] / 1000);
		else
			fprintf(f, "%s %" PRIu64, vrt_enginelog_config_name(k),
			        log->config[k]);
	}
	if (any)
		fputc('\n', f);
}

/* analyze --log without a trace: what was read from the log, line by
 * line, in place of the trace's sections. */
static void logonly_text(FILE *f, const struct vrt_trace *t,
                         const struct vrt_logcheck *lc)
{
	const struct vrt_enginelog *log = lc->log;
	char b1[32];
	size_t i;
	int dev;

	fputs("read from the log: ", f);
	vrt_text_put_safe(f, lc->path, 200);
	fprintf(f,
	        " (%s, %" PRIu64 " lines); nothing was traced: every "
	        "number above is the log's\n",
	        vrt_enginelog_engine_name(log->engine)
	                ? vrt_enginelog_engine_name(log->engine)
	                : "no engine recognised",
	        log->lines);
	/* the memory numbers, device by device ("-1": lines naming none) */
	for (dev = -1; dev < 64; dev++) {
		int first = 1;
		for (i = 0; i < log->nfacts; i++) {
			const struct vrt_enginelog_fact *x = &log->facts[i];
			const char *what = fact_words(x->kind);
			uint64_t v;
			uint32_t line;
			size_t j;
			int later = 0;
			if (x->device != dev || !what)
				continue;
			/* one entry per kind: the value the log ends with */
			for (j = i + 1; j < log->nfacts; j++)
				later |= log->facts[j].kind == x->kind &&
				         log->facts[j].device == dev;
			if (later && !x->additive)
				continue;
			if (x->additive) {
				int seen = 0;
				for (j = 0; j < i; j++)
					seen |= log->facts[j].kind == x->kind &&
					        log->facts[j].device == dev;
				if (seen)
					continue;
			}
			if (!vrt_enginelog_value(log, x->kind, dev, &v, NULL,
			                         &line))
				continue;
			if (first && dev < 0)
				fputs("  no device named:", f);
			else if (first)
				fprintf(f, "  device %d:", dev);
			fprintf(f, "%s %s %s (line %u)", first ? "" : ",", what,
			        vrt_text_bytes(b1, sizeof(b1), v, 2), line);
			first = 0;
		}
		if (!first)
			fputc('\n', f);
	}
	config_text(f, log);
	if (log->have_ready) {
		fprintf(f, "  ready: log line %u: ", log->ready_line);
		vrt_text_put_safe(f, log->ready_text, 120);
		fputc('\n', f);
	} else {
		fputs("  ready: the log never says the server serves\n", f);
	}
	fprintf(f, "  requests: %" PRIu64 " request line%s", log->requests,
	        log->requests == 1 ? "" : "s");
	if (log->have_running)
		fprintf(f,
		        "; the engine counted %" PRIu64 " running last (at "
		        "most %" PRIu64 ")",
		        log->running, log->max_running);
	fputc('\n', f);
	for (i = 0; i < log->nerrors; i++)
		if (log->errors[i].recovered) {
			fprintf(f, "  recovered: log line %u: ",
			        log->errors[i].line);
			vrt_text_put_safe(f, log->errors[i].text, 160);
			fputs(" (the engine carried on)\n", f);
		}
	if (log->have_fatal) {
		const struct vrt_enginelog_error *e = &log->errors[log->fatal];
		fprintf(f, "  fatal error: log line %u: ", e->line);
		vrt_text_put_safe(f, e->text, 240);
		fputc('\n', f);
	} else {
		fputs("  fatal error: none (no memory error in the log)\n", f);
	}
	(void)t;
}

void vrt_report_enginelog_text(FILE *f, const struct vrt_trace *t,
                               const struct vrt_logcheck *lc)
{
	const struct vrt_enginelog *log;
	char b1[32], b2[32];
	size_t i;

	if (!lc || !lc->log)
		return;
	log = lc->log;
	if (lc->log_only) {
		logonly_text(f, t, lc);
		return;
	}
	fputs("\nengine log: ", f);
	vrt_text_put_safe(f, lc->path, 200);
	fprintf(f, " (%s, %" PRIu64 " lines",
	        vrt_enginelog_engine_name(log->engine)
	                ? vrt_enginelog_engine_name(log->engine)
	                : "engine not recognised",
	        log->lines);
	if (log->cut_bytes)
		fprintf(f, ", %s cut by record",
		        vrt_text_bytes(b1, sizeof(b1), log->cut_bytes, 2));
	fputs(")\n", f);
	if (lc->nrows)
		fprintf(f, "  %-12s %4s %12s %12s %8s\n", "the engine's", "dev",
		        "printed", "traced", "diff");
	for (i = 0; i < lc->nrows; i++) {
		const struct vrt_logcheck_row *x = &lc->rows[i];
		fprintf(f, "  %-12s %4d %12s %12s %+7.1f%%%s\n",
		        vrt_logcheck_quantity_name(x->quantity), x->device,
		        vrt_text_bytes(b1, sizeof(b1), x->engine_bytes, 2),
		        vrt_text_bytes(b2, sizeof(b2), x->traced_bytes, 2),
		        x->diff_percent,
		        x->flagged             ? "  DISAGREES"
		        : x->allocation_failed ? "  (its allocation failed)"
		                               : "");
	}
	config_text(f, log);
	if (log->have_ready) {
		fprintf(f, "  ready: log line %u", log->ready_line);
		when(f, t, log->ready_wall_ns);
		fputs(": ", f);
		vrt_text_put_safe(f, log->ready_text, 120);
		fputc('\n', f);
	} else {
		fputs("  ready: never said\n", f);
	}
	if (log->have_fatal) {
		const struct vrt_enginelog_error *e = &log->errors[log->fatal];
		fprintf(f, "  fatal error: log line %u", e->line);
		when(f, t, e->wall_ns);
		fputs(":\n    ", f);
		put_cut(f, e->text, 240, 4);
		fputc('\n', f);
		if (lc->have_fatal_failure) {
			fputs("    ", f);
			put_cut(f, lc->fatal_match, 320, 4);
			fputc('\n', f);
		}
	}
	for (i = 0; i < lc->nfindings; i++) {
		fputs("  FINDING: ", f);
		put_cut(f, lc->findings[i].text, 400, 11);
		fputc('\n', f);
	}
}
