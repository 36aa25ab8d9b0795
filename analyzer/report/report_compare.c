/*
 * report_compare.c — `vramtrace compare`'s two outputs, formatting only
 * (diff.c decides what matches and what changed).
 *
 * Text, for a person with ten seconds: the two runs, their verdicts, in one
 * line whether B fixed A's failure, the settings that changed, then one
 * line per device with its peak and headroom before → after and the
 * phases that moved it (largest change first), out-of-memory failures and
 * requests in flight, then per device a table of every phase's and
 * family's peak (A, B, delta, %), and the call paths whose bytes at the
 * peak changed most. Sizes are binary
 * units with two decimals; percentages are whole, of A.
 *
 * JSON, schema "vramtrace-compare/1": the keys are a contract (more may be
 * added), documented in docs/compare.md. Every comparison is {"a", "b",
 * "delta", "pct"}: bytes (or counts) in A and B, b - a, and the whole
 * percent of a (null when a is 0). Top level: "schema", "a" and "b" (the
 * runs), "verdicts" ({"a", "b"}: verdict, detail, stage, device,
 * confidence), "outcome" ({"fixed": true, false or null, "text"}),
 * "changes" (the settings that differ: {"flag", "a", "b", "source"}),
 * "summary" (the text's one-line summaries), "devices" (pairs, with
 * "peak", "headroom", "families", "phases"), "host", "requests", "ooms",
 * "sites" (every changed call path, largest change first) and
 * "sites_unchanged".
 *
 * Strings from the traces are untrusted: the text prints control bytes as
 * '?'.
 */
#include "base/names.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/diagnose.h"
#include "diff.h"
#include "diagnose/engine.h"
#include "json.h"
#include "pathname.h"
#include "diagnose/retest.h"
#include "replay/run.h"
#include "base/text.h"

/* Changed call paths printed by the text report (JSON lists all). */
#define TEXT_SITES 10
/* Frames printed per call path. */
#define TEXT_FRAMES 4
/* Failures listed per run by the text report. */
#define TEXT_OOMS 5
/* Phases named in a device's one-line summary. */
#define SUMMARY_PHASES 3

/* "+4.00 GiB", "-512.00 MiB", "0 B". */
static const char *signed_human(char *buf, size_t n, struct vrt_diff_pair p)
{
	char h[24];

	if (p.a == p.b)
		return vrt_text_bytes(buf, n, 0, 2);
	vrt_text_bytes(h, sizeof(h), p.b > p.a ? p.b - p.a : p.a - p.b, 2);
	snprintf(buf, n, "%c%s", p.b > p.a ? '+' : '-', h);
	return buf;
}

/* "+34%", "-11%", "0%", "new" (A had none), "-" (neither had any). */
static const char *pct_text(char *buf, size_t n, struct vrt_diff_pair p)
{
	int64_t pct;

	if (!vrt_diff_pct(p, &pct))
		snprintf(buf, n, "%s", p.b ? "new" : "-");
	else
		snprintf(buf, n, "%s%" PRId64 "%%", pct > 0 ? "+" : "", pct);
	return buf;
}

static const struct vrt_device *dev_of(const struct vrt_run *run, int32_t i)
{
	return i >= 0 && (size_t)i < run->t.ndevices ? &run->t.devices[i]
	                                             : NULL;
}

/* "device 0", "device 0 (device 1 in B)", "device 1 (only in A)". */
static void dev_label(char *buf, size_t n, const struct vrt_diff_device *d)
{
	if (d->a >= 0 && d->b >= 0 && d->a != d->b)
		snprintf(buf, n, "device %d (device %d in B)", d->a, d->b);
	else if (d->a >= 0 && d->b >= 0)
		snprintf(buf, n, "device %d", d->a);
	else if (d->a >= 0)
		snprintf(buf, n, "device %d (only in A)", d->a);
	else
		snprintf(buf, n, "device %d of B (only in B)", d->b);
}

static uint64_t absd(struct vrt_diff_pair p)
{
	return p.b > p.a ? p.b - p.a : p.a - p.b;
}

/* The one-line summary of a device: its peak before and after and the
 * phases (at the peak) that moved it most. */
static void summary_line(char *buf, size_t n, const struct vrt_diff_device *d)
{
	char lab[64], b1[32], b2[32], b3[32], b4[16];
	const struct vrt_diff_phase *top[SUMMARY_PHASES];
	size_t i, j, ntop = 0, len;

	dev_label(lab, sizeof(lab), d);
	len = (size_t)snprintf(buf, n, "peak on %s: %s → %s", lab,
	                       vrt_text_bytes(b1, sizeof(b1), d->peak.a, 2),
	                       vrt_text_bytes(b2, sizeof(b2), d->peak.b, 2));
	if (len >= n)
		return;
	if (d->peak.a == d->peak.b) {
		snprintf(buf + len, n - len, " (no change)");
		return;
	}
	len += (size_t)snprintf(buf + len, n - len, " (%s, %s)",
	                        signed_human(b3, sizeof(b3), d->peak),
	                        pct_text(b4, sizeof(b4), d->peak));
	for (i = 0; i < d->nphases; i++) {
		const struct vrt_diff_phase *p = &d->phases[i];
		if (!absd(p->at_peak))
			continue;
		for (j = ntop;
		     j > 0 && absd(top[j - 1]->at_peak) < absd(p->at_peak); j--)
			if (j < SUMMARY_PHASES)
				top[j] = top[j - 1];
		if (j < SUMMARY_PHASES) {
			top[j] = p;
			if (ntop < SUMMARY_PHASES)
				ntop++;
		}
	}
	for (i = 0; i < ntop && len < n; i++)
		len += (size_t)snprintf(
		        buf + len, n - len, "%s%s %s", i ? ", " : ": ",
		        top[i]->name,
		        signed_human(b3, sizeof(b3), top[i]->at_peak));
}

/* Devices by how much their peak changed, largest first (stable). */
static size_t *devices_by_change(const struct vrt_diff *d)
{
	size_t *o = malloc((d->ndev ? d->ndev : 1) * sizeof(*o)), i, j, x;

	if (!o)
		return NULL;
	for (i = 0; i < d->ndev; i++) {
		x = i;
		for (j = i; j > 0 &&
		            absd(d->dev[o[j - 1]].peak) < absd(d->dev[x].peak);
		     j--)
			o[j] = o[j - 1];
		o[j] = x;
	}
	return o;
}

/* The headroom analyze gives device i of a run, or NULL. */
static const struct vrt_diag_device *headroom_of(const struct vrt_diagnosis *d,
                                                 int32_t i)
{
	size_t k;

	for (k = 0; d && i >= 0 && k < d->ndevices; k++)
		if (d->devices[k].device == i && d->devices[k].total_bytes)
			return &d->devices[k];
	return NULL;
}

/* ---- text --------------------------------------------------------------- */

static void verdict_words(FILE *f, const struct vrt_diagnosis *d)
{
	vrt_text_put_safe(f, vrt_diagnose_verdict_name(d->verdict), 40);
	if (d->detail[0]) {
		fputs(" (", f);
		vrt_text_put_safe(f, d->detail, 48);
		fputc(')', f);
	}
	if (d->verdict != VRT_VERDICT_NONE) {
		fprintf(f, ", %s stage", d->stage);
		if (d->device >= 0)
			fprintf(f, ", device %d", d->device);
	}
}

/* The verdicts, whether B fixed A, the settings that changed and the
 * headroom of every device both runs budget. */
static void verdicts_text(FILE *f, const struct vrt_diff *d,
                          const struct vrt_run *a, const struct vrt_run *b,
                          const struct vrt_compare_verdicts *v)
{
	char line[512], b1[32], b2[32];
	size_t i;
	int fixed, shown = 0;

	fputs("verdict: A ", f);
	verdict_words(f, v->a);
	fputs(" → B ", f);
	verdict_words(f, v->b);
	fputc('\n', f);
	vrt_retest_outcome(v->a, &a->r, v->b, &b->r, &fixed, line,
	                   sizeof(line));
	fputs("fixed: ", f);
	vrt_text_put_safe(f, line, sizeof(line));
	fputc('\n', f);
	fputs("changed:", f);
	for (i = 0; v->changes && i < v->changes->n; i++) {
		const struct vrt_retest_change *c = &v->changes->v[i];
		fputs(i ? "; " : " ", f);
		vrt_text_put_safe(f, c->name, 48);
		fputc(' ', f);
		vrt_text_put_safe(f, c->a[0] ? c->a : "(not given)", 64);
		fputs(" → ", f);
		vrt_text_put_safe(f, c->b[0] ? c->b : "(not given)", 64);
		if (strcmp(c->source, "command line"))
			fprintf(f, " (%s)", c->source);
	}
	if (!v->changes || !v->changes->n)
		fputs(" no setting (the same command line)", f);
	fputc('\n', f);
	for (i = 0; i < d->ndev; i++) {
		const struct vrt_diag_device *ha = headroom_of(v->a, d->dev[i].a);
		const struct vrt_diag_device *hb = headroom_of(v->b, d->dev[i].b);
		char lab[64];
		if (!ha && !hb)
			continue;
		dev_label(lab, sizeof(lab), &d->dev[i]);
		fprintf(f, "%s%s: %s → %s", shown++ ? "; " : "headroom: ", lab,
		        ha ? vrt_text_bytes(b1, sizeof(b1), ha->headroom_bytes,
		                            2)
		           : "-",
		        hb ? vrt_text_bytes(b2, sizeof(b2), hb->headroom_bytes,
		                            2)
		           : "-");
	}
	if (shown)
		fputc('\n', f);
}


static void run_line(FILE *f, const char *tag, const struct vrt_run *run)
{
	struct vrt_engine_run er;
	size_t i, j;

	vrt_engine_of_run(&er, &run->t);
	fprintf(f, "%s: ", tag);
	vrt_text_put_safe(f, run->label, 200);
	fprintf(f, "  %zu process%s", run->t.nprocs,
	        run->t.nprocs == 1 ? "" : "es");
	if (er.engine)
		fprintf(f, " (engine %s%s)", vrt_engine_name(er.engine),
		        er.from_stacks ? ", from its stacks" : "");
	for (i = 0; i < run->t.nprocs && i < 1; i++) {
		const struct vrt_process *p = &run->t.procs[i];
		fputs(": ", f);
		for (j = 0; j < p->argc; j++) {
			if (j)
				fputc(' ', f);
			vrt_text_put_safe(f, p->argv[j], 60);
		}
		if (!p->argc)
			vrt_text_put_safe(f, p->exe, 60);
	}
	if (run->t.nprocs > 1)
		fputs(", ...", f);
	fputc('\n', f);
}

static void oom_line(FILE *f, const char *tag, const struct vrt_run *run,
                     const struct vrt_replay_failure *x)
{
	char b1[32], pb[32];
	int64_t d = x->ts - run->t.start_ns;
	uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;

	fprintf(f, "  %s  %s%" PRIu64 ".%03" PRIu64 "s  ", tag,
	        d < 0 ? "-" : "", a / 1000000000u, a / 1000000u % 1000u);
	if (x->device >= 0)
		fprintf(f, "device %d", x->device);
	else
		fputs("host", f);
	fprintf(f, "  %s  %s stage, phase ",
	        vrt_text_bytes(b1, sizeof(b1), x->requested_bytes, 2),
	        x->after_ready ? "request" : "load");
	vrt_text_put_safe(
	        f, vrt_load_phase_name(&run->t, x->phase, pb, sizeof(pb)), 40);
	fprintf(f, ", %" PRIu32 " in flight\n", x->inflight);
}

static void ooms_text(FILE *f, const struct vrt_diff *d,
                      const struct vrt_run *a, const struct vrt_run *b)
{
	const struct vrt_run *runs[2] = {a, b};
	size_t i, k, shown;

	if (!d->ooms.a && !d->ooms.b) {
		fprintf(f, "out of memory: none in either run\n");
		return;
	}
	fprintf(f, "out of memory: %" PRIu64 " in A, %" PRIu64 " in B\n",
	        d->ooms.a, d->ooms.b);
	for (k = 0; k < 2; k++) {
		const struct vrt_replay *r = &runs[k]->r;
		for (i = shown = 0; i < r->nfails; i++) {
			if (!r->fails[i].oom)
				continue;
			if (shown++ < TEXT_OOMS)
				oom_line(f, k ? "B" : "A", runs[k],
				         &r->fails[i]);
		}
		if (shown > TEXT_OOMS)
			fprintf(f, "  %s  ... %zu more\n", k ? "B" : "A",
			        shown - TEXT_OOMS);
	}
}

static void row(FILE *f, const char *name, struct vrt_diff_pair p)
{
	char b1[32], b2[32], b3[32], b4[16];
	size_t w = strnlen(name, 20);

	fputs("  ", f);
	vrt_text_put_safe(f, name, 20);
	fprintf(f, "%*s %12s %12s %12s %6s\n", (int)(20 - w), "",
	        vrt_text_bytes(b1, sizeof(b1), p.a, 2),
	        vrt_text_bytes(b2, sizeof(b2), p.b, 2),
	        signed_human(b3, sizeof(b3), p), pct_text(b4, sizeof(b4), p));
}

static void device_text(FILE *f, const struct vrt_diff_device *d,
                        const struct vrt_run *a, const struct vrt_run *b)
{
	const struct vrt_device *dv = dev_of(a, d->a), *da = dv,
	                        *db = dev_of(b, d->b);
	char lab[64], b1[32], b2[32];
	size_t i;
	int fam;

	if (!dv)
		dv = db;
	dev_label(lab, sizeof(lab), d);
	fprintf(f, "\n%s: ", lab);
	vrt_text_put_safe(f, dv && dv->name ? dv->name : "(unnamed)", 80);
	if (dv) {
		fprintf(f, " (ordinal %" PRId64, dv->ordinal);
		/* Each run's capacity: the same card in both, one figure; a
		 * card that differs (another host, another model), both. */
		if (da && db && da->have_total && db->have_total &&
		    da->total_bytes != db->total_bytes)
			fprintf(f, ", %s in A, %s in B",
			        vrt_text_bytes(b1, sizeof(b1), da->total_bytes,
			                       2),
			        vrt_text_bytes(b2, sizeof(b2), db->total_bytes,
			                       2));
		else if (dv->have_total || (db && db->have_total))
			fprintf(f, ", %s",
			        vrt_text_bytes(b1, sizeof(b1),
			                       dv->have_total ? dv->total_bytes
			                                      : db->total_bytes,
			                       2));
		fputc(')', f);
	}
	fputc('\n', f);
	fprintf(f, "  %-20s %12s %12s %12s %6s\n", "phase", "A peak", "B peak",
	        "delta", "%");
	for (i = 0; i < d->nphases; i++)
		row(f, d->phases[i].name, d->phases[i].peak);
	fputs("  family\n", f);
	for (fam = 0; fam < VRT_FAM_COUNT; fam++)
		if (vrt_replay_family_is_vram(fam) &&
		    (d->fam[fam].a || d->fam[fam].b))
			row(f, vrt_names_family(fam), d->fam[fam]);
	row(f, "device peak", d->peak);
}

static void frames_text(FILE *f, const struct vrt_trace *t, uint32_t stack)
{
	uint32_t fr[256];
	size_t n = vrt_load_stack_frames(t, stack, fr, 256), i, shown = 0;
	int pass;

	if (!n) {
		fputs("      (no stack recorded)\n", f);
		return;
	}
	/* Python frames first (they name the engine's step), as analyze. */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n && shown < TEXT_FRAMES; i++) {
			const struct vrt_frame *x = &t->frames[fr[i]];
			const char *fn = vrt_load_str(t, x->function);
			const char *file = vrt_load_str(t, x->file);
			if ((x->kind == VRT_FRAME_PYTHON) != (pass == 0))
				continue;
			fputs("      ", f);
			vrt_text_put_safe(f, fn ? fn : "??", 100);
			if (file) {
				fputs("  ", f);
				vrt_text_put_safe(f, vrt_pathname_base(file),
				                  60);
			}
			fputc('\n', f);
			shown++;
		}
	if (n > shown)
		fprintf(f, "      ... %zu more frame%s\n", n - shown,
		        n - shown == 1 ? "" : "s");
}

static void sites_text(FILE *f, const struct vrt_diff *d,
                       const struct vrt_run *a, const struct vrt_run *b)
{
	size_t i;

	if (!d->nsites && !d->sites_same)
		return;
	fprintf(f, "\nallocation sites at each device's peak (matched by "
	           "function and file names; largest change first)\n");
	for (i = 0; i < d->nsites && i < TEXT_SITES; i++) {
		const struct vrt_diff_site *s = &d->sites[i];
		char lab[64], b1[32], b2[32], b3[32];
		dev_label(lab, sizeof(lab), &d->dev[s->dev]);
		fprintf(f, "  %s  ", lab);
		vrt_text_put_safe(f, s->phase, 40);
		fprintf(f, "  %s %s", vrt_diff_change_name(s->change),
		        signed_human(b1, sizeof(b1), s->bytes));
		if (s->bytes.a && s->bytes.b)
			fprintf(f,
			        ": %s in %" PRIu64 " → %s in %" PRIu64
			        " allocation%s\n",
			        vrt_text_bytes(b2, sizeof(b2), s->bytes.a, 2),
			        s->allocs.a,
			        vrt_text_bytes(b3, sizeof(b3), s->bytes.b, 2),
			        s->allocs.b, s->allocs.b == 1 ? "" : "s");
		else
			fprintf(f, " in %" PRIu64 " allocation%s\n",
			        s->allocs.a + s->allocs.b,
			        s->allocs.a + s->allocs.b == 1 ? "" : "s");
		if (s->stack_b)
			frames_text(f, &b->t, s->stack_b);
		else
			frames_text(f, &a->t, s->stack_a);
	}
	if (d->nsites > TEXT_SITES)
		fprintf(f,
		        "  ... %zu more changed site%s (--format json lists "
		        "all)\n",
		        d->nsites - TEXT_SITES,
		        d->nsites - TEXT_SITES == 1 ? "" : "s");
	fprintf(f, "  %zu changed, %zu unchanged\n", d->nsites, d->sites_same);
}

void vrt_report_compare_text(FILE *f, const struct vrt_diff *d,
                             const struct vrt_run *a, const struct vrt_run *b,
                             const struct vrt_compare_verdicts *v)
{
	char line[512], b1[32], b2[32];
	size_t *order = devices_by_change(d), i;

	run_line(f, "A", a);
	run_line(f, "B", b);
	if (v)
		verdicts_text(f, d, a, b, v);
	fputc('\n', f);
	for (i = 0; i < d->ndev; i++) {
		summary_line(line, sizeof(line), &d->dev[order ? order[i] : i]);
		fprintf(f, "%s\n", line);
	}
	if (!d->ndev)
		fprintf(f, "no devices in either run\n");
	ooms_text(f, d, a, b);
	fprintf(f, "requests in flight: at most %" PRIu32 " → %" PRIu32,
	        (uint32_t)d->max_inflight.a, (uint32_t)d->max_inflight.b);
	if (d->have_single_request_a || d->have_single_request_b)
		fprintf(f, "; single-request peak %s → %s",
		        d->have_single_request_a
		                ? vrt_text_bytes(b1, sizeof(b1),
		                                 d->single_request.a, 2)
		                : "-",
		        d->have_single_request_b
		                ? vrt_text_bytes(b2, sizeof(b2),
		                                 d->single_request.b, 2)
		                : "-");
	fputc('\n', f);
	if (d->pinned_peak.a || d->pinned_peak.b)
		fprintf(f, "host pinned + registered peak: %s → %s\n",
		        vrt_text_bytes(b1, sizeof(b1), d->pinned_peak.a, 2),
		        vrt_text_bytes(b2, sizeof(b2), d->pinned_peak.b, 2));
	for (i = 0; i < d->ndev; i++)
		device_text(f, &d->dev[i], a, b);
	sites_text(f, d, a, b);
	free(order);
}

/* ---- json --------------------------------------------------------------- */

static void pair(struct vrt_json *w, const char *key, struct vrt_diff_pair p)
{
	int64_t pct;

	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	vrt_json_key(w, "a");
	vrt_json_uint(w, p.a);
	vrt_json_key(w, "b");
	vrt_json_uint(w, p.b);
	vrt_json_key(w, "delta");
	vrt_json_int(w, vrt_diff_delta(p));
	vrt_json_key(w, "pct");
	if (vrt_diff_pct(p, &pct))
		vrt_json_int(w, pct);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
}

static void run_json(struct vrt_json *w, const char *key,
                     const struct vrt_run *run)
{
	const struct vrt_replay *r = &run->r;
	size_t i, j;

	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	vrt_json_key(w, "path");
	vrt_json_string(w, run->label);
	vrt_json_key(w, "processes");
	vrt_json_begin_array(w);
	for (i = 0; i < run->t.nprocs; i++) {
		const struct vrt_process *p = &run->t.procs[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "pid");
		vrt_json_uint(w, p->pid);
		vrt_json_key(w, "cmdline");
		vrt_json_begin_array(w);
		for (j = 0; j < p->argc; j++)
			vrt_json_string(w, p->argv[j]);
		vrt_json_end_array(w);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key(w, "ooms");
	vrt_json_uint(w, r->ooms);
	vrt_json_key(w, "max_inflight");
	vrt_json_uint(w, r->max_inflight);
	vrt_json_key(w, "single_request_peak_bytes");
	if (r->have_single_request)
		vrt_json_uint(w, r->single_request_peak_bytes);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
}

static void device_id_json(struct vrt_json *w, const char *key,
                           const struct vrt_run *run, int32_t i)
{
	const struct vrt_device *dv = dev_of(run, i);

	vrt_json_key(w, key);
	if (!dv) {
		vrt_json_null(w);
		return;
	}
	vrt_json_begin_object(w);
	vrt_json_key(w, "id");
	vrt_json_int(w, i);
	vrt_json_key(w, "name");
	vrt_json_string(w, dv->name);
	vrt_json_key(w, "host");
	vrt_json_string(w, dv->host);
	vrt_json_key(w, "vendor");
	vrt_json_string(w, vrt_names_vendor(dv->vendor));
	vrt_json_key(w, "ordinal");
	vrt_json_int(w, dv->ordinal);
	vrt_json_key(w, "uuid");
	if (dv->uuid[0])
		vrt_json_string(w, dv->uuid);
	else
		vrt_json_null(w);
	vrt_json_key(w, "total_bytes");
	if (dv->have_total)
		vrt_json_uint(w, dv->total_bytes);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
}

/* {"a", "b"}: each run's headroom on the device, null where it has none. */
static void headroom_json(struct vrt_json *w, const struct vrt_diff_device *d,
                          const struct vrt_compare_verdicts *v)
{
	const struct vrt_diag_device *ha = v ? headroom_of(v->a, d->a) : NULL;
	const struct vrt_diag_device *hb = v ? headroom_of(v->b, d->b) : NULL;

	vrt_json_key(w, "headroom");
	vrt_json_begin_object(w);
	vrt_json_key(w, "a");
	if (ha)
		vrt_json_uint(w, ha->headroom_bytes);
	else
		vrt_json_null(w);
	vrt_json_key(w, "b");
	if (hb)
		vrt_json_uint(w, hb->headroom_bytes);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
}

static void verdict_json(struct vrt_json *w, const char *key,
                         const struct vrt_diagnosis *d)
{
	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	vrt_json_key(w, "verdict");
	vrt_json_string(w, vrt_diagnose_verdict_name(d->verdict));
	vrt_json_key(w, "detail");
	vrt_json_string(w, d->detail);
	vrt_json_key(w, "stage");
	vrt_json_string(w, d->stage);
	vrt_json_key(w, "device");
	if (d->device >= 0)
		vrt_json_int(w, d->device);
	else
		vrt_json_null(w);
	vrt_json_key(w, "confidence");
	vrt_json_string(w, vrt_diagnose_confidence_name(d->confidence));
	vrt_json_end_object(w);
}

/* "verdicts", "outcome" and "changes". */
static void verdicts_json(struct vrt_json *w, const struct vrt_run *a,
                          const struct vrt_run *b,
                          const struct vrt_compare_verdicts *v)
{
	char line[512];
	size_t i;
	int fixed;

	vrt_json_key(w, "verdicts");
	vrt_json_begin_object(w);
	verdict_json(w, "a", v->a);
	verdict_json(w, "b", v->b);
	vrt_json_end_object(w);
	vrt_retest_outcome(v->a, &a->r, v->b, &b->r, &fixed, line,
	                   sizeof(line));
	vrt_json_key(w, "outcome");
	vrt_json_begin_object(w);
	vrt_json_key(w, "fixed");
	if (fixed < 0)
		vrt_json_null(w);
	else
		vrt_json_bool(w, fixed);
	vrt_json_key(w, "text");
	vrt_json_string(w, line);
	vrt_json_end_object(w);
	vrt_json_key(w, "changes");
	vrt_json_begin_array(w);
	for (i = 0; v->changes && i < v->changes->n; i++) {
		const struct vrt_retest_change *c = &v->changes->v[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "flag");
		vrt_json_string(w, c->name);
		vrt_json_key(w, "a");
		if (c->a[0])
			vrt_json_string(w, c->a);
		else
			vrt_json_null(w);
		vrt_json_key(w, "b");
		if (c->b[0])
			vrt_json_string(w, c->b);
		else
			vrt_json_null(w);
		vrt_json_key(w, "source");
		vrt_json_string(w, c->source);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

static void device_json(struct vrt_json *w, const struct vrt_diff_device *d,
                        const struct vrt_run *a, const struct vrt_run *b,
                        const struct vrt_compare_verdicts *v)
{
	size_t i;
	int fam;

	vrt_json_begin_object(w);
	device_id_json(w, "a", a, d->a);
	device_id_json(w, "b", b, d->b);
	pair(w, "peak", d->peak);
	headroom_json(w, d, v);
	vrt_json_key(w, "families");
	vrt_json_begin_object(w);
	for (fam = 0; fam < VRT_FAM_COUNT; fam++)
		if (vrt_replay_family_is_vram(fam))
			pair(w, vrt_names_family(fam), d->fam[fam]);
	vrt_json_end_object(w);
	vrt_json_key(w, "phases");
	vrt_json_begin_object(w);
	for (i = 0; i < d->nphases; i++) {
		vrt_json_key(w, d->phases[i].name);
		vrt_json_begin_object(w);
		pair(w, "peak", d->phases[i].peak);
		pair(w, "at_peak", d->phases[i].at_peak);
		vrt_json_end_object(w);
	}
	vrt_json_end_object(w);
	vrt_json_end_object(w);
}

static void ooms_json(struct vrt_json *w, const char *key,
                      const struct vrt_run *run)
{
	const struct vrt_replay *r = &run->r;
	char pb[32];
	size_t i;

	vrt_json_key(w, key);
	vrt_json_begin_array(w);
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		const char *api = vrt_names_api(x->api, NULL);
		if (!x->oom)
			continue;
		vrt_json_begin_object(w);
		vrt_json_key(w, "time_s");
		vrt_json_seconds(w, x->ts - run->t.start_ns);
		vrt_json_key(w, "pid");
		vrt_json_uint(w, run->t.procs[x->proc].pid);
		vrt_json_key(w, "device");
		if (x->device >= 0)
			vrt_json_int(w, x->device);
		else
			vrt_json_null(w);
		vrt_json_key(w, "api");
		vrt_json_string(w, api);
		vrt_json_key(w, "requested_bytes");
		vrt_json_uint(w, x->requested_bytes);
		vrt_json_key(w, "stage");
		vrt_json_string(w, x->after_ready ? "request" : "load");
		vrt_json_key(w, "phase");
		vrt_json_string(w, vrt_load_phase_name(&run->t, x->phase, pb,
		                                       sizeof(pb)));
		vrt_json_key(w, "inflight");
		vrt_json_uint(w, x->inflight);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

static void frames_json(struct vrt_json *w, const struct vrt_trace *t,
                        uint32_t stack)
{
	uint32_t fr[256];
	size_t n = vrt_load_stack_frames(t, stack, fr, 256), i;

	vrt_json_key(w, "frames");
	vrt_json_begin_array(w);
	for (i = 0; i < n; i++) {
		const struct vrt_frame *x = &t->frames[fr[i]];
		const char *file = vrt_load_str(t, x->file);
		vrt_json_begin_object(w);
		vrt_json_key(w, "function");
		vrt_json_string(w, vrt_load_str(t, x->function));
		vrt_json_key(w, "file");
		vrt_json_string(w, vrt_pathname_base(file));
		vrt_json_key(w, "kind");
		vrt_json_string(w, x->kind == VRT_FRAME_PYTHON ? "python"
		                                               : "native");
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

void vrt_report_compare_json(FILE *f, const struct vrt_diff *d,
                             const struct vrt_run *a, const struct vrt_run *b,
                             const struct vrt_compare_verdicts *v)
{
	struct vrt_json w;
	char line[512];
	size_t *order = devices_by_change(d), i;

	vrt_json_init(&w, f);
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "schema");
	vrt_json_string(&w, "vramtrace-compare/1");
	run_json(&w, "a", a);
	run_json(&w, "b", b);
	if (v)
		verdicts_json(&w, a, b, v);
	vrt_json_key(&w, "summary");
	vrt_json_begin_array(&w);
	for (i = 0; i < d->ndev; i++) {
		summary_line(line, sizeof(line), &d->dev[order ? order[i] : i]);
		vrt_json_string(&w, line);
	}
	vrt_json_end_array(&w);
	vrt_json_key(&w, "devices");
	vrt_json_begin_array(&w);
	for (i = 0; i < d->ndev; i++)
		device_json(&w, &d->dev[i], a, b, v);
	vrt_json_end_array(&w);
	vrt_json_key(&w, "host");
	vrt_json_begin_object(&w);
	pair(&w, "pinned_peak", d->pinned_peak);
	vrt_json_end_object(&w);
	vrt_json_key(&w, "requests");
	vrt_json_begin_object(&w);
	pair(&w, "max_inflight", d->max_inflight);
	pair(&w, "single_request_peak_bytes", d->single_request);
	vrt_json_end_object(&w);
	vrt_json_key(&w, "ooms");
	vrt_json_begin_object(&w);
	ooms_json(&w, "a", a);
	ooms_json(&w, "b", b);
	vrt_json_end_object(&w);
	vrt_json_key(&w, "sites");
	vrt_json_begin_array(&w);
	for (i = 0; i < d->nsites; i++) {
		const struct vrt_diff_site *s = &d->sites[i];
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "device");
		vrt_json_uint(&w, s->dev);
		vrt_json_key(&w, "phase");
		vrt_json_string(&w, s->phase);
		vrt_json_key(&w, "change");
		vrt_json_string(&w, vrt_diff_change_name(s->change));
		pair(&w, "bytes", s->bytes);
		pair(&w, "allocs", s->allocs);
		if (s->stack_b)
			frames_json(&w, &b->t, s->stack_b);
		else
			frames_json(&w, &a->t, s->stack_a);
		vrt_json_end_object(&w);
	}
	vrt_json_end_array(&w);
	vrt_json_key(&w, "sites_unchanged");
	vrt_json_uint(&w, d->sites_same);
	vrt_json_end_object(&w);
	vrt_json_finish(&w);
	free(order);
}
