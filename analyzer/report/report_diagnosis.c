/*
 * report_diagnosis.c — the diagnosis (diagnose.c) as the text report's
 * opening block and as the JSON report's "diagnosis" object. Formatting
 * only: every sentence and number comes from struct vrt_diagnosis.
 */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "diagnose/diagnose.h"
#include "json.h"
#include "base/text.h"

/* Evidence lines shown in the text block; JSON has them all. */
#define TEXT_EVIDENCE 12

/* What each rung adds, for people. */
static const char *rung_label(const struct vrt_diagnosis *d, int rung)
{
	static const char *const labels[VRT_RUNG_COUNT] = {
	        "baseline (other processes, contexts)",
	        "+ weights",
	        "+ reserves (KV cache, graphs, buffers)",
	        "+ one request's activations",
	        "+ the other requests in flight",
	};
	if (rung == VRT_RUNG_ACTIVATIONS && d->batch_rung)
		return "+ the configured batch's activations";
	return labels[rung];
}

/* The ladder: one line per rung, its bytes, the running sum and whether
 * it fits the capacity; the verdict's rung marked; what the engine's log
 * printed for a rung beside it. */
static void ladder_text(FILE *f, const struct vrt_diagnosis *d)
{
	char b1[32], b2[32];
	int k;

	if (!d->have_ladder)
		return;
	fprintf(f, "  ladder on device %d (capacity %s%s):\n", d->ladder_device,
	        d->capacity_bytes
	                ? vrt_text_bytes(b1, sizeof(b1), d->capacity_bytes, 2)
	        : d->source_log ? "not in the log"
	                        : "unknown",
	        d->source_log ? "; every number read from the log" : "");
	for (k = 0; k < VRT_RUNG_COUNT; k++) {
		const struct vrt_diag_rung *x = &d->ladder[k];
		int unread = d->source_log && !x->bytes &&
		             !(d->rungs_read & (1u << k));
		fprintf(f, "    %-40s %12s  = %12s  %s%s", rung_label(d, k),
		        unread ? "not in log"
		               : vrt_text_bytes(b1, sizeof(b1), x->bytes, 2),
		        vrt_text_bytes(b2, sizeof(b2), x->cumulative, 2),
		        x->fits ? "fits" : "does not fit",
		        k == d->rung ? "  <- verdict" : "");
		if (x->have_engine)
			fprintf(f, "  (log: %s)",
			        vrt_text_bytes(b1, sizeof(b1), x->engine_bytes,
			                       2));
		fputc('\n', f);
	}
}

void vrt_report_diagnosis_text(FILE *f, const struct vrt_trace *t,
                               const struct vrt_diagnosis *d)
{
	const char *eng = vrt_engine_name(d->flags.engine);
	size_t i, col;

	(void)t;
	fprintf(f, "DIAGNOSIS: %s", vrt_diagnose_verdict_name(d->verdict));
	if (d->detail[0])
		fprintf(f, " (%s)", d->detail);
	if (d->verdict == VRT_VERDICT_NONE)
		fprintf(f, " - no allocation failed%s",
		        strcmp(d->detail, "near_miss") ? "" : " for good");
	else if (d->not_server && d->device >= 0) {
		fprintf(f, " - device %d", d->device);
	} else {
		fprintf(f, " - %s stage", d->stage);
		if (d->device >= 0)
			fprintf(f, ", device %d", d->device);
		else if (d->verdict == VRT_VERDICT_HOST_MEMORY)
			fprintf(f, ", host memory (not a VRAM problem)");
	}
	if (eng)
		fprintf(f, "; engine %s", eng);
	fputc('\n', f);
	/* Sentences fold at VRT_TEXT_WIDTH, each under its own start. */
	col = (size_t)fprintf(f, "  confidence: %s - ",
	                      vrt_diagnose_confidence_name(d->confidence));
	vrt_text_put_wrapped(f, d->confidence_reason, col, 4, VRT_TEXT_WIDTH);
	fputc('\n', f);
	ladder_text(f, d);
	for (i = 0; i < d->nevidence && i < TEXT_EVIDENCE; i++) {
		fputs("  - ", f);
		vrt_text_put_wrapped(f, d->evidence[i].text, 4, 4,
		                     VRT_TEXT_WIDTH);
		fputc('\n', f);
	}
	if (d->nevidence > TEXT_EVIDENCE)
		fprintf(f, "  - ... %zu more in --format json\n",
		        d->nevidence - TEXT_EVIDENCE);
	/* Each change with its cost under it, cheapest first. */
	for (i = 0; i < d->nactions; i++) {
		fputs(i ? "  or:     " : "  action: ", f);
		vrt_text_put_wrapped(f, d->actions[i], 10, 10, VRT_TEXT_WIDTH);
		fputc('\n', f);
		if (i < d->ncosts && d->costs[i][0]) {
			fputs("          cost: ", f);
			vrt_text_put_wrapped(f, d->costs[i], 16, 16,
			                     VRT_TEXT_WIDTH);
			fputc('\n', f);
		}
	}
	for (i = 0; i < d->nverify; i++) {
		fputs("  verify: ", f);
		vrt_text_put_wrapped(f, d->verify[i], 10, 10, VRT_TEXT_WIDTH);
		fputc('\n', f);
	}
	if (d->source_log && d->record_command[0]) {
		fputs("  record: ", f);
		vrt_text_put_safe(f, d->record_command, SIZE_MAX);
		fputc('\n', f);
	}
	fputc('\n', f);
	if (d->model.explain)
		vrt_report_model_text(f, &d->model);
}

static void strings(struct vrt_json *w, const char *key,
                    const char (*arr)[VRT_DIAG_TEXT], size_t n)
{
	size_t i;

	vrt_json_key(w, key);
	vrt_json_begin_array(w);
	for (i = 0; i < n; i++)
		vrt_json_string(w, arr[i]);
	vrt_json_end_array(w);
}

/* "ladder": [{rung, bytes, cumulative_bytes, fits}] on "ladder_device"
 * of "capacity_bytes"; "rung": the verdict's (null: none). */
static void ladder_json(struct vrt_json *w, const struct vrt_diagnosis *d)
{
	int k;

	vrt_json_key(w, "rung");
	if (d->rung >= 0)
		vrt_json_string(w, vrt_diagnose_rung_name(d->rung));
	else
		vrt_json_null(w);
	vrt_json_key(w, "ladder_device");
	if (d->have_ladder)
		vrt_json_int(w, d->ladder_device);
	else
		vrt_json_null(w);
	vrt_json_key_uint_or_null(w, "capacity_bytes",
	                          d->have_ladder && d->capacity_bytes,
	                          d->capacity_bytes);
	vrt_json_key(w, "ladder");
	vrt_json_begin_array(w);
	for (k = 0; d->have_ladder && k < VRT_RUNG_COUNT; k++) {
		vrt_json_begin_object(w);
		vrt_json_key(w, "rung");
		vrt_json_string(w, vrt_diagnose_rung_name(k));
		vrt_json_key(w, "bytes");
		vrt_json_uint(w, d->ladder[k].bytes);
		vrt_json_key(w, "cumulative_bytes");
		vrt_json_uint(w, d->ladder[k].cumulative);
		vrt_json_key(w, "fits");
		vrt_json_bool(w, d->ladder[k].fits);
		vrt_json_key(w, "engine_bytes"); /* the engine's log's */
		if (d->ladder[k].have_engine)
			vrt_json_uint(w, d->ladder[k].engine_bytes);
		else
			vrt_json_null(w);
		/* where the number comes from: the trace, the log, or
		 * nowhere (a log-only run whose log prints none) */
		vrt_json_key(w, "source");
		if (!d->source_log)
			vrt_json_string(w, "trace");
		else if (d->ladder[k].bytes || (d->rungs_read & (1u << k)))
			vrt_json_string(w, "log");
		else
			vrt_json_null(w);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

void vrt_report_log_flags_json(struct vrt_json *w, unsigned bits)
{
	int k;

	vrt_json_begin_array(w);
	for (k = 0; k < VRT_DIAG_LOG_NFLAGS; k++)
		if (bits & (1u << k))
			vrt_json_string(w, vrt_diagnose_log_flag_name(k));
	vrt_json_end_array(w);
}

/* "from_log": what the engine's log decided, null without a log. */
static void from_log_json(struct vrt_json *w, const struct vrt_diagnosis *d)
{
	vrt_json_key(w, "from_log");
	if (!d->have_log) {
		vrt_json_null(w);
		return;
	}
	vrt_json_begin_object(w);
	vrt_json_key(w, "fatal_failure"); /* the failure is the log's */
	vrt_json_bool(w, d->log_fatal);
	vrt_json_key(w, "refusal"); /* the verdict is its refusal */
	vrt_json_bool(w, d->log_refusal);
	vrt_json_key(w, "ready"); /* its ready line ended the load */
	vrt_json_bool(w, d->log_ready);
	vrt_json_key(w, "flags");
	vrt_report_log_flags_json(w, d->flags_from_log);
	vrt_json_end_object(w);
}

void vrt_report_diagnosis_json(struct vrt_json *w, const struct vrt_trace *t,
                               const struct vrt_diagnosis *d)
{
	const char *eng = vrt_engine_name(d->flags.engine);
	size_t i;

	vrt_json_begin_object(w);
	vrt_json_key(w, "verdict");
	vrt_json_string(w, vrt_diagnose_verdict_name(d->verdict));
	/* what the numbers are: a trace's (with its log), or the log's */
	vrt_json_key(w, "source");
	vrt_json_string(w, d->source_log ? "log" : "trace");
	vrt_json_key(w, "record_command");
	if (d->source_log && d->record_command[0])
		vrt_json_string(w, d->record_command);
	else
		vrt_json_null(w);
	vrt_json_key(w, "detail");
	vrt_json_string(w, d->detail);
	vrt_json_key(w, "stage");
	vrt_json_string(w, d->stage);
	vrt_json_key(w, "confidence");
	vrt_json_string(w, vrt_diagnose_confidence_name(d->confidence));
	vrt_json_key(w, "confidence_reason");
	vrt_json_string(w, d->confidence_reason);
	vrt_json_key(w, "device");
	if (d->device >= 0)
		vrt_json_int(w, d->device);
	else
		vrt_json_null(w);
	vrt_json_key(w, "failure_index"); /* into "failures" */
	if (d->have_failure)
		vrt_json_uint(w, d->failure);
	else
		vrt_json_null(w);
	/* where the decisive failure was called from: its site and stack */
	vrt_json_key(w, "failing_call");
	if (d->have_failure) {
		vrt_json_begin_object(w);
		vrt_json_key(w, "site");
		vrt_json_string(w, d->failing_site[0] ? d->failing_site : NULL);
		vrt_report_json_frames(w, t, d->failing_stack);
		vrt_json_end_object(w);
	} else {
		vrt_json_null(w);
	}
	vrt_json_key(w, "server");
	vrt_json_bool(w, !d->not_server);
	vrt_json_key(w, "engine");
	vrt_json_string(w, eng);
	vrt_json_key(w, "margin_percent");
	vrt_json_uint(w, d->margin_pct);
	vrt_json_key(w, "flags");
	vrt_json_begin_object(w);
	vrt_json_key_uint_or_null(w, "max_model_len",
	                          d->flags.max_model_len != 0,
	                          d->flags.max_model_len);
	vrt_json_key_uint_or_null(w, "max_num_seqs", d->flags.max_num_seqs != 0,
	                          d->flags.max_num_seqs);
	vrt_json_key_uint_or_null(w, "tensor_parallel", d->flags.tp != 0,
	                          d->flags.tp);
	vrt_json_key_uint_or_null(w, "pipeline_parallel", d->flags.pp != 0,
	                          d->flags.pp);
	vrt_json_key_uint_or_null(w, "batch_tokens", d->flags.batch_tokens != 0,
	                          d->flags.batch_tokens);
	vrt_json_key(w, "memory_fraction");
	if (d->flags.mem_util_milli)
		vrt_json_seconds(w, (int64_t)d->flags.mem_util_milli * 1000000);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
	vrt_json_key(w, "evidence");
	vrt_json_begin_array(w);
	for (i = 0; i < d->nevidence; i++) {
		const struct vrt_diag_evidence *e = &d->evidence[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "key");
		vrt_json_string(w, e->key);
		vrt_json_key(w, "device");
		if (e->device >= 0)
			vrt_json_int(w, e->device);
		else
			vrt_json_null(w);
		vrt_json_key(w, "value");
		vrt_json_uint(w, e->value);
		vrt_json_key(w, "unit");
		vrt_json_string(w, vrt_diagnose_unit_name(e->unit));
		vrt_json_key(w, "text");
		vrt_json_string(w, e->text);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	strings(w, "actions", d->actions, d->nactions);
	strings(w, "costs", d->costs, d->ncosts);
	strings(w, "verify", d->verify, d->nverify);
	vrt_json_key(w, "devices");
	vrt_json_begin_array(w);
	for (i = 0; i < d->ndevices; i++) {
		const struct vrt_diag_device *x = &d->devices[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "id");
		vrt_json_int(w, x->device);
		vrt_json_key(w, "total_bytes");
		vrt_json_uint(w, x->total_bytes);
		vrt_json_key(w, "other_processes_bytes");
		vrt_json_uint(w, x->other_bytes);
		vrt_json_key(w, "weights_bytes");
		vrt_json_uint(w, x->weights_bytes);
		vrt_json_key(w, "kv_cache_bytes");
		vrt_json_uint(w, x->kv_bytes);
		vrt_json_key(w, "peak_bytes");
		vrt_json_uint(w, x->peak_bytes);
		vrt_json_key(w, "headroom_bytes");
		vrt_json_uint(w, x->headroom_bytes);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key(w, "other_pids");
	vrt_json_begin_array(w);
	for (i = 0; i < d->nother_pids; i++)
		vrt_json_uint(w, d->other_pids[i]);
	vrt_json_end_array(w);
	vrt_json_key(w, "model");
	vrt_report_model_json(w, &d->model);
	ladder_json(w, d);
	from_log_json(w, d);
	vrt_json_end_object(w);
}
