/*
 * report_table.c — `vramtrace table`'s three outputs, formatting only
 * (retest.c parses the flags and reads the numbers). Rows stay in the
 * order the runs were given.
 *
 * Text: an aligned table, one line per run, "-" where a flag was not
 * given, "*" after a value the engine's log supplied (then a footnote);
 * the verdict `analyze` gives the run (with its detail), the highest peak
 * and the least headroom (with their device, "dN", when the run has
 * several); under each run an indented line splits each device's peak by
 * phase (each device with its own peak and headroom when there are
 * several), so a row stays narrow.
 *
 * CSV (RFC 4180, a header line, plain integers in bytes): run, engine,
 * verdict, detail, context_length, concurrency, memory_fraction,
 * tensor_parallel, gpu_layers, max_inflight, ooms, oom_stage, oom_phase,
 * exit_status, then per device index N present in any run
 * devN_peak_bytes, devN_headroom_bytes and devN_<phase>_bytes for every
 * phase live at some run's peak. Empty cells where a run has no such
 * value.
 *
 * JSON, schema "vramtrace-table/1" (keys are a contract; more may be
 * added):
 *
 *   { "schema": "vramtrace-table/1",
 *     "runs": [ { "run", "engine" (or null), "verdict", "detail",
 *                 "cmdline": [..], "processes",
 *                 "context_length", "concurrency", "memory_fraction",
 *                 "tensor_parallel", "gpu_layers"  (a number when the
 *                     flag's value is one, else the string as given; null
 *                     when not given),
 *                 "flags": { "<field>": "<option as spelled, e.g. -c;
 *                            "log" when the engine's log gave it>" },
 *                 "devices": [ { "id", "peak_bytes", "headroom_bytes"
 *                                (or null),
 *                                "peak_by_phase": {"<phase>": bytes} } ],
 *                 "max_inflight", "ooms",
 *                 "oom": { "stage": "load|request", "phase", "device",
 *                          "requested_bytes", "time_s" } or null,
 *                 "exit_status" (128+N for signal N; null unknown),
 *                 "exit_signal" (or null) } ] }
 */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "diagnose/retest.h"
#include "base/text.h"

/* A copy of s with control bytes as '?' (trace strings are untrusted). */
static char *safe_dup(const char *s)
{
	char *c = strdup(s ? s : "");
	size_t i;

	for (i = 0; c && c[i]; i++)
		c[i] = (char)vrt_text_safe_char((unsigned char)c[i]);
	return c;
}

static void exit_text(char *buf, size_t n, const struct vrt_retest_row *r)
{
	if (r->exit_kind == VRT_EXIT_CODE)
		snprintf(buf, n, "%d", r->exit_code);
	else if (r->exit_kind == VRT_EXIT_SIGNAL)
		snprintf(buf, n, "signal %d", r->exit_code);
	else
		snprintf(buf, n, "?");
}

/* ---- text --------------------------------------------------------------- */

enum {
	C_RUN,
	C_ENGINE,
	C_VERDICT,
	C_CTX,
	C_CONC,
	C_MEM,
	C_TP,
	C_NGL,
	C_PEAK,
	C_HEADROOM,
	C_INFLIGHT,
	C_OOM,
	C_EXIT,
	C_SPLIT,
	NCOLS
};

/* Short headers keep a row on one line; the footnote spells them out. */
static const char *const headers[NCOLS] = {
        "run",  "engine",   "verdict",   "ctx", "seqs", "mem", "tp", "ngl",
        "peak", "headroom", "in flight", "oom", "exit", "peak by phase",
};

/* Appends to a growing string; on failure the cell stays as it was. */
static void cat(char **s, const char *add)
{
	size_t n = *s ? strlen(*s) : 0;
	char *p = realloc(*s, n + strlen(add) + 1);

	if (!p)
		return;
	strcpy(p + n, add);
	*s = p;
}

static void split_cell(char **s, const struct vrt_retest_device *d)
{
	char b[32];
	size_t k;

	for (k = 0; k < d->nphases; k++) {
		if (k)
			cat(s, ", ");
		cat(s, d->phases[k].name);
		cat(s, " ");
		cat(s, vrt_text_bytes(b, sizeof(b), d->phases[k].bytes, 2));
	}
}

static void cells(char **c, const struct vrt_retest_row *r, const char *label)
{
	char b[64];
	size_t i;
	int k;
	static const int fields[] = {C_CTX, C_CONC, C_MEM, C_TP, C_NGL};

	c[C_RUN] = safe_dup(label);
	c[C_ENGINE] = safe_dup(r->engine ? r->engine : "-");
	c[C_VERDICT] = safe_dup(r->verdict[0] ? r->verdict : "-");
	if (r->detail[0]) {
		cat(&c[C_VERDICT], " (");
		cat(&c[C_VERDICT], r->detail);
		cat(&c[C_VERDICT], ")");
	}
	for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
		c[fields[k]] = safe_dup(r->value[k] ? r->value[k] : "-");
		/* "*": the engine's log said it, the command line did not */
		if (r->option[k] && !strcmp(r->option[k], VRT_RETEST_FROM_LOG))
			cat(&c[fields[k]], "*");
	}
	/* Several devices: the highest peak and the least headroom, with
	 * their device; every device is on the row's second line. */
	{
		size_t hi = 0, lo = SIZE_MAX;
		for (i = 0; i < r->ndev; i++) {
			if (r->dev[i].peak_bytes > r->dev[hi].peak_bytes)
				hi = i;
			if (r->dev[i].have_headroom &&
			    (lo == SIZE_MAX || r->dev[i].headroom_bytes <
			                               r->dev[lo].headroom_bytes))
				lo = i;
		}
		if (r->ndev) {
			c[C_PEAK] = safe_dup(vrt_text_bytes(
			        b, sizeof(b), r->dev[hi].peak_bytes, 2));
			if (r->ndev > 1) {
				snprintf(b, sizeof(b), " (d%d)", r->dev[hi].id);
				cat(&c[C_PEAK], b);
			}
		} else {
			c[C_PEAK] = safe_dup("-");
		}
		if (lo != SIZE_MAX) {
			c[C_HEADROOM] = safe_dup(vrt_text_bytes(
			        b, sizeof(b), r->dev[lo].headroom_bytes, 2));
			if (r->ndev > 1) {
				snprintf(b, sizeof(b), " (d%d)", r->dev[lo].id);
				cat(&c[C_HEADROOM], b);
			}
		} else {
			c[C_HEADROOM] = safe_dup("-");
		}
	}
	snprintf(b, sizeof(b), "%" PRIu32, r->max_inflight);
	c[C_INFLIGHT] = safe_dup(b);
	if (r->have_oom) {
		c[C_OOM] =
		        safe_dup(r->oom_after_ready ? "request/" : "load/");
		cat(&c[C_OOM], r->oom_phase);
	} else {
		c[C_OOM] = safe_dup("no");
	}
	exit_text(b, sizeof(b), r);
	c[C_EXIT] = safe_dup(b);
	if (r->ndev == 1) {
		split_cell(&c[C_SPLIT], &r->dev[0]);
	} else {
		for (i = 0; i < r->ndev; i++) {
			if (c[C_SPLIT])
				cat(&c[C_SPLIT], "; ");
			snprintf(b, sizeof(b), "d%d ", r->dev[i].id);
			cat(&c[C_SPLIT], b);
			cat(&c[C_SPLIT],
			    vrt_text_bytes(b, sizeof(b), r->dev[i].peak_bytes,
			                   2));
			if (r->dev[i].have_headroom) {
				cat(&c[C_SPLIT], " (headroom ");
				cat(&c[C_SPLIT],
				    vrt_text_bytes(b, sizeof(b),
				                   r->dev[i].headroom_bytes, 2));
				cat(&c[C_SPLIT], ")");
			}
			if (!r->dev[i].nphases)
				continue;
			cat(&c[C_SPLIT], ": ");
			split_cell(&c[C_SPLIT], &r->dev[i]);
		}
	}
	if (!c[C_SPLIT])
		c[C_SPLIT] = safe_dup("-");
}

/* The length of the directory part ("DIR/") all labels share, when
 * there are several and each has something after it; else 0. */
static size_t common_dir(char *const *labels, size_t n)
{
	size_t len, i, k;

	if (n < 2)
		return 0;
	len = strlen(labels[0]);
	for (i = 1; i < n; i++) {
		for (k = 0; k < len && labels[i][k] == labels[0][k]; k++)
			;
		len = k;
	}
	while (len && labels[0][len - 1] != '/')
		len--;
	for (i = 0; i < n; i++)
		if (!labels[i][len])
			return 0;
	return len;
}

void vrt_report_table_text(FILE *f, const struct vrt_retest_row *rows,
                           char *const *labels, size_t nrows)
{
	char **c = calloc((nrows + 1) * NCOLS, sizeof(char *));
	size_t w[NCOLS], i, cut;
	int one_engine;
	int k;

	if (!c) {
		/* Leaves the stream in error, which the caller reports. */
		fputs("out of memory\n", f);
		return;
	}
	for (k = 0; k < NCOLS; k++)
		c[k] = safe_dup(headers[k]);
	/* Runs given as DIR/<star> share DIR/, and a retest keeps its
	 * engine: say each once, above, rather than on every row. */
	cut = common_dir(labels, nrows);
	one_engine = nrows > 1;
	for (i = 1; i < nrows; i++)
		one_engine &= !strcmp(rows[i].engine ? rows[i].engine : "",
		                      rows[0].engine ? rows[0].engine : "");
	if (cut || one_engine) {
		fputs(cut ? "runs in " : "runs", f);
		for (i = 0; i < cut; i++)
			fputc(vrt_text_safe_char((unsigned char)labels[0][i]), f);
		if (one_engine)
			fprintf(f, "%sengine %s", cut ? ", " : " of ",
			        rows[0].engine ? rows[0].engine : "not known");
		fputc('\n', f);
	}
	for (i = 0; i < nrows; i++)
		cells(&c[(i + 1) * NCOLS], &rows[i], labels[i] + cut);
	for (k = 0; k < NCOLS; k++) {
		w[k] = 0;
		for (i = 0; i <= nrows; i++) {
			const char *s = c[i * NCOLS + k];
			size_t n = s ? strlen(s) : 0;
			if (n > w[k])
				w[k] = n;
		}
	}
	/* Each row on one line; what its peak held, by device and phase,
	 * on a second, indented line (the header has none). */
	for (i = 0; i <= nrows; i++) {
		for (k = 0; k < NCOLS - 1; k++) {
			const char *s = c[i * NCOLS + k];
			if (k == C_ENGINE && one_engine)
				continue;
			if (k == NCOLS - 2)
				fprintf(f, "%s\n", s ? s : "");
			else
				fprintf(f, "%-*s  ", (int)w[k], s ? s : "");
		}
		if (i) {
			fputs("    ", f);
			vrt_text_put_wrapped(f, c[i * NCOLS + C_SPLIT], 4, 6,
			                     VRT_TEXT_WIDTH);
			fputc('\n', f);
		}
	}
	vrt_text_put_wrapped(f,
	                     "ctx: context length, seqs: concurrent sequences, "
	                     "mem: memory fraction, tp: tensor parallel, ngl: "
	                     "GPU layers; under each run: its peak by device "
	                     "and phase",
	                     0, 0, VRT_TEXT_WIDTH);
	fputc('\n', f);
	for (i = 0; i < nrows; i++)
		for (k = 0; k < VRT_RETEST_NFIELDS; k++)
			if (rows[i].option[k] &&
			    !strcmp(rows[i].option[k], VRT_RETEST_FROM_LOG)) {
				fputs("* from the engine's log (the command line "
				      "left the flag at its default)\n",
				      f);
				i = nrows;
				break;
			}
	for (i = 0; i < (nrows + 1) * NCOLS; i++)
		free(c[i]);
	free(c);
}

/* ---- csv ---------------------------------------------------------------- */

static void csv_cell(FILE *f, const char *s, int first)
{
	size_t i;

	if (!first)
		fputc(',', f);
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n") && s[0] != ' ' &&
	    (!s[0] || s[strlen(s) - 1] != ' ')) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (i = 0; s[i]; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

static void csv_uint(FILE *f, uint64_t v)
{
	fprintf(f, ",%" PRIu64, v);
}

/* Phase names live at some run's peak, in order of first appearance. */
struct names {
	char (*v)[VRT_RETEST_NAME];
	size_t n;
};

static void names_add(struct names *ns, const char *name)
{
	size_t i;
	void *p;

	for (i = 0; i < ns->n; i++)
		if (!strcmp(ns->v[i], name))
			return;
	p = realloc(ns->v, (ns->n + 1) * sizeof(*ns->v));
	if (!p)
		return; /* the column is left out; the stream stays valid */
	ns->v = p;
	snprintf(ns->v[ns->n++], VRT_RETEST_NAME, "%s", name);
}

static const struct vrt_retest_device *find_dev(const struct vrt_retest_row *r,
                                                int32_t id)
{
	size_t i;

	for (i = 0; i < r->ndev; i++)
		if (r->dev[i].id == id)
			return &r->dev[i];
	return NULL;
}

void vrt_report_table_csv(FILE *f, const struct vrt_retest_row *rows,
                          char *const *labels, size_t nrows)
{
	struct names ns = {NULL, 0};
	int32_t maxdev = -1, dv;
	size_t i, j, k;
	char b[64];
	int fi;

	for (i = 0; i < nrows; i++)
		for (j = 0; j < rows[i].ndev; j++) {
			const struct vrt_retest_device *d = &rows[i].dev[j];
			if (d->id > maxdev)
				maxdev = d->id;
			for (k = 0; k < d->nphases; k++)
				names_add(&ns, d->phases[k].name);
		}
	fputs("run,engine,verdict,detail", f);
	for (fi = 0; fi < VRT_RETEST_NFIELDS; fi++)
		fprintf(f, ",%s", vrt_retest_field_name(fi));
	fputs(",max_inflight,ooms,oom_stage,oom_phase,exit_status", f);
	for (dv = 0; dv <= maxdev; dv++) {
		fprintf(f, ",dev%d_peak_bytes,dev%d_headroom_bytes", dv, dv);
		for (k = 0; k < ns.n; k++) {
			snprintf(b, sizeof(b), "dev%d_%s_bytes", dv, ns.v[k]);
			csv_cell(f, b, 0);
		}
	}
	fputc('\n', f);
	for (i = 0; i < nrows; i++) {
		const struct vrt_retest_row *r = &rows[i];
		csv_cell(f, labels[i], 1);
		csv_cell(f, r->engine, 0);
		csv_cell(f, r->verdict, 0);
		csv_cell(f, r->detail, 0);
		for (fi = 0; fi < VRT_RETEST_NFIELDS; fi++)
			csv_cell(f, r->value[fi], 0);
		fprintf(f, ",%" PRIu32 ",%" PRIu64, r->max_inflight, r->ooms);
		csv_cell(f,
		         r->have_oom ? r->oom_after_ready ? "request" : "load"
		                     : NULL,
		         0);
		csv_cell(f, r->have_oom ? r->oom_phase : NULL, 0);
		if (r->exit_kind == VRT_EXIT_CODE)
			fprintf(f, ",%d", r->exit_code);
		else if (r->exit_kind == VRT_EXIT_SIGNAL)
			fprintf(f, ",%d", 128 + r->exit_code);
		else
			fputc(',', f);
		for (dv = 0; dv <= maxdev; dv++) {
			const struct vrt_retest_device *d = find_dev(r, dv);
			if (d)
				csv_uint(f, d->peak_bytes);
			else
				fputc(',', f);
			if (d && d->have_headroom)
				csv_uint(f, d->headroom_bytes);
			else
				fputc(',', f);
			for (k = 0; k < ns.n; k++) {
				size_t p;
				uint64_t v = 0;
				for (p = 0; d && p < d->nphases; p++)
					if (!strcmp(d->phases[p].name, ns.v[k]))
						v = d->phases[p].bytes;
				if (d)
					csv_uint(f, v);
				else
					fputc(',', f);
			}
		}
		fputc('\n', f);
	}
	free(ns.v);
}

/* ---- json --------------------------------------------------------------- */

static void row_json(struct vrt_json *w, const struct vrt_retest_row *r,
                     const char *label)
{
	size_t i, k;
	int fi;

	vrt_json_begin_object(w);
	vrt_json_key(w, "run");
	vrt_json_string(w, label);
	vrt_json_key(w, "engine");
	if (r->engine)
		vrt_json_string(w, r->engine);
	else
		vrt_json_null(w);
	vrt_json_key(w, "verdict");
	vrt_json_string(w, r->verdict);
	vrt_json_key(w, "detail");
	vrt_json_string(w, r->detail);
	vrt_json_key(w, "cmdline");
	vrt_json_begin_array(w);
	for (i = 0; i < r->argc; i++)
		vrt_json_string(w, r->argv[i]);
	vrt_json_end_array(w);
	vrt_json_key(w, "processes");
	vrt_json_uint(w, r->nprocs);
	for (fi = 0; fi < VRT_RETEST_NFIELDS; fi++) {
		vrt_json_key(w, vrt_retest_field_name(fi));
		vrt_json_number_text(w, r->value[fi]);
	}
	vrt_json_key(w, "flags");
	vrt_json_begin_object(w);
	for (fi = 0; fi < VRT_RETEST_NFIELDS; fi++)
		if (r->option[fi]) {
			vrt_json_key(w, vrt_retest_field_name(fi));
			vrt_json_string(w, r->option[fi]);
		}
	vrt_json_end_object(w);
	vrt_json_key(w, "devices");
	vrt_json_begin_array(w);
	for (i = 0; i < r->ndev; i++) {
		const struct vrt_retest_device *d = &r->dev[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "id");
		vrt_json_int(w, d->id);
		vrt_json_key(w, "peak_bytes");
		vrt_json_uint(w, d->peak_bytes);
		vrt_json_key(w, "headroom_bytes");
		if (d->have_headroom)
			vrt_json_uint(w, d->headroom_bytes);
		else
			vrt_json_null(w);
		vrt_json_key(w, "peak_by_phase");
		vrt_json_begin_object(w);
		for (k = 0; k < d->nphases; k++) {
			vrt_json_key(w, d->phases[k].name);
			vrt_json_uint(w, d->phases[k].bytes);
		}
		vrt_json_end_object(w);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key(w, "max_inflight");
	vrt_json_uint(w, r->max_inflight);
	vrt_json_key(w, "ooms");
	vrt_json_uint(w, r->ooms);
	vrt_json_key(w, "oom");
	if (r->have_oom) {
		vrt_json_begin_object(w);
		vrt_json_key(w, "stage");
		vrt_json_string(w, r->oom_after_ready ? "request" : "load");
		vrt_json_key(w, "phase");
		vrt_json_string(w, r->oom_phase);
		vrt_json_key(w, "device");
		if (r->oom_device >= 0)
			vrt_json_int(w, r->oom_device);
		else
			vrt_json_null(w);
		vrt_json_key(w, "requested_bytes");
		vrt_json_uint(w, r->oom_requested);
		vrt_json_key(w, "time_s");
		vrt_json_seconds(w, r->oom_time_ns);
		vrt_json_end_object(w);
	} else {
		vrt_json_null(w);
	}
	vrt_json_key(w, "exit_status");
	if (r->exit_kind == VRT_EXIT_CODE)
		vrt_json_int(w, r->exit_code);
	else if (r->exit_kind == VRT_EXIT_SIGNAL)
		vrt_json_int(w, 128 + (int64_t)r->exit_code);
	else
		vrt_json_null(w);
	vrt_json_key(w, "exit_signal");
	if (r->exit_kind == VRT_EXIT_SIGNAL)
		vrt_json_int(w, r->exit_code);
	else
		vrt_json_null(w);
	vrt_json_end_object(w);
}

void vrt_report_table_json(FILE *f, const struct vrt_retest_row *rows,
                           char *const *labels, size_t nrows)
{
	struct vrt_json w;
	size_t i;

	vrt_json_init(&w, f);
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "schema");
	vrt_json_string(&w, "vramtrace-table/1");
	vrt_json_key(&w, "runs");
	vrt_json_begin_array(&w);
	for (i = 0; i < nrows; i++)
		row_json(&w, &rows[i], labels[i]);
	vrt_json_end_array(&w);
	vrt_json_end_object(&w);
	vrt_json_finish(&w);
}
