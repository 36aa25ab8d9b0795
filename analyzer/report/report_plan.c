/*
 * report_plan.c — `vramtrace plan`'s outputs, formatting only (plan.c
 * measures and predicts). Rows stay in grid order, the last knob varying
 * fastest.
 *
 * Text: the run, its devices and traffic, then one line per configuration
 * with the device nearest to breaking: each budget in GiB tagged with its
 * source (m measured, l the engine's log, c the model config, r the
 * engine's rule, a an assumption; "?" unknown), the peak, the headroom,
 * whether it fits and what it buys (KV tokens, sequences of the context);
 * then the best row for the objective, the recorded settings predicted
 * against the measured peak, how each term is predicted, what is assumed
 * and what cannot be predicted, and with --explain one configuration's
 * arithmetic line by line.
 *
 * CSV (RFC 4180, plain integers in bytes): one line per configuration and
 * device.
 *
 * JSON, schema "vramtrace-plan/1" (keys are a contract, more may be added;
 * docs/plan.md lists them).
 */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/engine.h"
#include "json.h"
#include "plan/plan.h"
#include "base/text.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static const char source_tag[VRT_PLAN_SRC_COUNT] = {'m', 'l', 'c',
                                                    'r', 'a', '?'};

/* The device of a row nearest to breaking: the one that breaks, else the
 * least headroom. */
static size_t worst_device(const struct vrt_plan_row *r)
{
	size_t i, w = 0;

	for (i = 1; i < r->ndev; i++) {
		if (r->dev[i].over != r->dev[w].over) {
			if (r->dev[i].over)
				w = i;
			continue;
		}
		if (r->dev[i].headroom < r->dev[w].headroom)
			w = i;
	}
	return w;
}

static int knob_shown(const struct vrt_plan *p, int k)
{
	return p->axis[k].n > 0;
}

static const char *knob_title(const struct vrt_plan *p, int k)
{
	return p->spelling[k] ? p->spelling[k] : vrt_plan_knob_name(k);
}

/* The process whose command line names the engine's settings. */
static void command_line(FILE *f, const struct vrt_trace *t)
{
	struct vrt_engine_run er;
	const struct vrt_process *pr;
	size_t i;

	vrt_engine_of_run(&er, t);
	if (!t->nprocs)
		return;
	pr = &t->procs[er.proc != SIZE_MAX ? er.proc : er.root];
	fprintf(f, "  pid %" PRIu64 ":", pr->pid);
	for (i = 0; i < pr->argc; i++) {
		fputc(' ', f);
		vrt_text_put_safe(f, pr->argv[i], 200);
	}
	fputc('\n', f);
}

/* ---- text ------------------------------------------------------------- */

#define CELL 40
enum { MAX_COLS = VRT_PLAN_NKNOBS + 12 };

struct table {
	size_t ncols, nrows;
	char (*cell)[MAX_COLS][CELL]; /* nrows + 1 (the header) */
	size_t width[MAX_COLS];
};

static void term_cell(char *buf, const struct vrt_plan_term *t)
{
	if (t->source == VRT_PLAN_SRC_UNKNOWN)
		snprintf(buf, CELL, "?");
	else
		snprintf(buf, CELL, "%.2f%c", (double)t->bytes / GIB,
		         source_tag[t->source]);
}

static void row_cells(char (*c)[CELL], const struct vrt_plan *p,
                      const struct vrt_plan_row *r, size_t index)
{
	const struct vrt_plan_device *d =
	        r->ndev ? &r->dev[worst_device(r)] : NULL;
	size_t n = 0;
	int k, unsure = 0;

	snprintf(c[n++], CELL, "%s%zu", r->best ? "* " : "", index);
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		if (knob_shown(p, k)) {
			if ((r->have >> k) & 1)
				vrt_plan_knob_value(c[n++], CELL, k,
				                    r->knob[k]);
			else
				snprintf(c[n++], CELL, "-");
		}
	if (d && r->ndev > 1)
		snprintf(c[n++], CELL, "%" PRId32 " of %zu", d->device,
		         r->ndev);
	else if (p->ndev > 1 || (r->ndev == 0 && p->ndev > 1))
		snprintf(c[n++], CELL, "%s", d ? "0" : "-");
	for (k = 0; k < VRT_PLAN_NTERMS; k++) {
		if (d)
			term_cell(c[n++], &d->term[k]);
		else
			snprintf(c[n++], CELL, "-");
		if (d && d->term[k].source == VRT_PLAN_SRC_UNKNOWN)
			unsure = 1;
	}
	if (d) {
		snprintf(c[n++], CELL, "%s%.2f", unsure ? ">=" : "",
		         (double)d->peak / GIB);
		if (d->over)
			snprintf(c[n++], CELL, "-%.2f",
			         (double)(d->peak - (d->capacity - d->other)) /
			                 GIB);
		else
			snprintf(c[n++], CELL, "%.2f",
			         (double)d->headroom / GIB);
	} else {
		snprintf(c[n++], CELL, "-");
		snprintf(c[n++], CELL, "-");
	}
	if (r->fit == VRT_PLAN_NO)
		snprintf(c[n++], CELL, "NO: %s",
		         vrt_plan_break_name(r->brk)
		                 ? vrt_plan_break_name(r->brk)
		                 : "?");
	else
		snprintf(c[n++], CELL, "%s", vrt_plan_fit_name(r->fit));
	if (r->have_tokens)
		snprintf(c[n++], CELL, "%" PRIu64, r->kv_tokens);
	else
		snprintf(c[n++], CELL, "?");
	if (p->engine == VRT_ENGINE_LLAMACPP ||
	    p->engine == VRT_ENGINE_OLLAMA) {
		if (r->max_concurrency)
			snprintf(c[n++], CELL, "%" PRIu64 " x %" PRIu64,
			         r->max_concurrency, r->context_per_seq);
		else
			snprintf(c[n++], CELL, "? x %" PRIu64,
			         r->context_per_seq);
	} else if (r->have_tokens && (r->have >> VRT_PLAN_CONTEXT) & 1) {
		snprintf(c[n++], CELL, "%" PRIu64, r->max_concurrency);
	} else {
		snprintf(c[n++], CELL, "?");
	}
}

static size_t header_cells(char (*c)[CELL], const struct vrt_plan *p)
{
	size_t n = 0;
	int k;

	snprintf(c[n++], CELL, "#");
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		if (knob_shown(p, k))
			snprintf(c[n++], CELL, "%s", knob_title(p, k));
	if (p->ndev > 1)
		snprintf(c[n++], CELL, "device");
	snprintf(c[n++], CELL, "weights");
	snprintf(c[n++], CELL, "activ.");
	snprintf(c[n++], CELL, "kv_cache");
	snprintf(c[n++], CELL, "graphs");
	snprintf(c[n++], CELL, "other");
	snprintf(c[n++], CELL, "requests");
	snprintf(c[n++], CELL, "peak");
	snprintf(c[n++], CELL, "headroom");
	snprintf(c[n++], CELL, "fits");
	snprintf(c[n++], CELL, "KV tokens");
	if (p->engine == VRT_ENGINE_LLAMACPP || p->engine == VRT_ENGINE_OLLAMA)
		snprintf(c[n++], CELL, "slots x ctx");
	else
		snprintf(c[n++], CELL, "seqs@ctx");
	return n;
}

static void print_table(FILE *f, const struct vrt_plan *p)
{
	struct table t;
	int numeric[MAX_COLS];
	size_t i, j;

	memset(&t, 0, sizeof(t));
	t.nrows = p->nrows + 1;
	t.cell = calloc(t.nrows, sizeof(*t.cell));
	if (!t.cell) {
		fprintf(f, "(out of memory for the table)\n");
		return;
	}
	t.ncols = header_cells(t.cell[0], p);
	for (i = 0; i < p->nrows; i++)
		row_cells(t.cell[i + 1], p, &p->rows[i], i + 1);
	for (i = 0; i < t.nrows; i++)
		for (j = 0; j < t.ncols; j++) {
			size_t w = strlen(t.cell[i][j]);
			if (w > t.width[j])
				t.width[j] = w;
		}
	/* a column of numbers is right-aligned, header included */
	for (j = 0; j < t.ncols; j++) {
		numeric[j] = 1;
		for (i = 1; i < t.nrows; i++)
			if (strspn(t.cell[i][j], "0123456789.-*>=?xlmcra ") !=
			    strlen(t.cell[i][j]))
				numeric[j] = 0;
	}
	for (i = 0; i < t.nrows; i++) {
		fputc(' ', f);
		for (j = 0; j < t.ncols; j++) {
			int last = j + 1 == t.ncols;
			if (numeric[j])
				fprintf(f, " %*s", (int)t.width[j],
				        t.cell[i][j]);
			else if (last) /* no trailing blanks */
				fprintf(f, " %s", t.cell[i][j]);
			else
				fprintf(f, " %-*s", (int)t.width[j],
				        t.cell[i][j]);
		}
		fputc('\n', f);
	}
	free(t.cell);
}

static void settings_text(FILE *f, const struct vrt_plan *p,
                          const struct vrt_plan_row *r)
{
	char v[32];
	int k, first = 1;

	for (k = 0; k < VRT_PLAN_NKNOBS; k++) {
		if (!((r->have >> k) & 1) ||
		    (!knob_shown(p, k) && !r->recorded))
			continue;
		if (!knob_shown(p, k))
			continue;
		fprintf(f, "%s%s %s", first ? "" : " ", knob_title(p, k),
		        vrt_plan_knob_value(v, sizeof(v), k, r->knob[k]));
		first = 0;
	}
	if (first)
		fprintf(f, "the recorded settings");
}

static void devices_text(FILE *f, const struct vrt_trace *t,
                         const struct vrt_plan *p)
{
	char a[32], b[32], c[32];
	size_t i;

	for (i = 0; i < p->ndev; i++) {
		const struct vrt_plan_measure *m = &p->dev[i];
		const struct vrt_device *d = &t->devices[m->device];
		fprintf(f, "device %" PRId32 ": ", m->device);
		vrt_text_put_safe(f, d->name ? d->name : "?", 80);
		fprintf(f, ", %s, %s used by other processes; peak %s\n",
		        vrt_text_bytes(a, sizeof(a), m->capacity, 2),
		        vrt_text_bytes(b, sizeof(b), m->other, 2),
		        vrt_text_bytes(c, sizeof(c), m->peak, 2));
	}
}

static void explain_text(FILE *f, const struct vrt_plan *p,
                         const struct vrt_plan_row *r,
                         const struct vrt_plan_explain *ex, size_t index)
{
	size_t i;

	fprintf(f, "\nexplain: ");
	if (index)
		fprintf(f, "row %zu, ", index);
	settings_text(f, p, r);
	fprintf(f, "\n");
	for (i = 0; i < ex->n; i++)
		fprintf(f, "  %s\n", ex->line[i]);
	fprintf(f, "  => fits: %s%s%s\n", vrt_plan_fit_name(r->fit),
	        r->reason[0] ? " - " : "", r->reason);
}

void vrt_report_plan_text(FILE *f, const struct vrt_trace *t,
                          const struct vrt_plan *p, const char *label,
                          const struct vrt_plan_row *explained,
                          const struct vrt_plan_explain *ex,
                          size_t explained_index)
{
	const struct vrt_engine_info *e = vrt_engine_info(p->engine);
	char a[32], b[32];
	size_t i;
	int k;

	fprintf(f, "plan: ");
	vrt_text_put_safe(f, label, 200);
	fprintf(f, " - %s\n", e->label[0] ? e->label : "engine not recognised");
	command_line(f, t);
	devices_text(f, t, p);
	if (p->serving)
		fprintf(f,
		        "traffic: at most %" PRIu32
		        " request%s in flight (measured); one request %s\n",
		        p->load, p->load == 1 ? "" : "s",
		        p->have_single
		                ? (snprintf(a, sizeof(a), "grew %s alone",
		                            vrt_text_bytes(b, sizeof(b),
		                                           p->single, 2)),
		                   a)
		                : "was never alone in flight");
	else
		fprintf(f, "traffic: no request was served\n");
	fprintf(f, "settings recorded:");
	for (k = 0, i = 0; k < VRT_PLAN_NKNOBS; k++)
		if ((p->rec_have >> k) & 1)
			fprintf(f, "%s %s %s (%s)", i++ ? "," : "",
			        knob_title(p, k),
			        vrt_plan_knob_value(a, sizeof(a), k, p->rec[k]),
			        p->rec_from[k] ? p->rec_from[k] : "?");
	fprintf(f, "%s\n", p->rec_have ? "" : " none");
	if (p->have_model)
		fprintf(f, "model: %s (%s), %s of KV per token\n",
		        p->model.model_type[0] ? p->model.model_type : "?",
		        p->model.source,
		        vrt_text_bytes(a, sizeof(a),
		                       p->model.kv_bytes_per_token, 2));
	else
		fprintf(f, "model: none given (--model-config)\n");
	fprintf(f, "margin: %u%% of each device's capacity; objective: %s\n\n",
	        p->margin_pct, vrt_plan_objective_name(p->objective));
	print_table(f, p);
	fprintf(f,
	        "\n  GiB per device (the one nearest to breaking); m measured, "
	        "l engine log, c model config, r engine rule, a assumption, "
	        "? unknown\n");
	/* One line per reason, with every row it stands for: a grid whose
	 * rows break the same way says it once. */
	for (i = 0; i < p->nrows; i++) {
		size_t j, m;
		if ((p->rows[i].fit != VRT_PLAN_NO &&
		     p->rows[i].fit != VRT_PLAN_UNSURE) ||
		    !p->rows[i].reason[0])
			continue;
		for (j = 0; j < i; j++)
			if ((p->rows[j].fit == VRT_PLAN_NO ||
			     p->rows[j].fit == VRT_PLAN_UNSURE) &&
			    !strcmp(p->rows[j].reason, p->rows[i].reason))
				break;
		if (j < i)
			continue;
		fprintf(f, "  %zu", i + 1);
		for (m = i + 1; m < p->nrows; m++)
			if ((p->rows[m].fit == VRT_PLAN_NO ||
			     p->rows[m].fit == VRT_PLAN_UNSURE) &&
			    !strcmp(p->rows[m].reason, p->rows[i].reason))
				fprintf(f, ", %zu", m + 1);
		fprintf(f, ": %s\n", p->rows[i].reason);
	}
	if (p->best != SIZE_MAX) {
		fprintf(f, "\nbest for %s: row %zu (",
		        vrt_plan_objective_name(p->objective), p->best + 1);
		settings_text(f, p, &p->rows[p->best]);
		fprintf(f, ")\n");
	} else {
		fprintf(f, "\nbest for %s: none fits\n",
		        vrt_plan_objective_name(p->objective));
	}
	if (p->recorded.ndev) {
		const struct vrt_plan_measure *m = &p->dev[0];
		double pct =
		        m->peak ? 100.0 *
		                          ((double)p->recorded.dev[0].peak -
		                           (double)m->peak) /
		                          (double)m->peak
		                : 0;
		fprintf(f,
		        "recorded settings: predicted peak %s on device "
		        "%" PRId32 ", measured %s (%+.1f%%)%s\n",
		        vrt_text_bytes(a, sizeof(a), p->recorded.dev[0].peak,
		                       2),
		        m->device, vrt_text_bytes(b, sizeof(b), m->peak, 2),
		        pct,
		        p->failed
		                ? "; the run failed short of its traffic's peak"
		                : "");
	}
	fprintf(f, "\nhow each term is predicted:\n");
	for (k = 0; k < VRT_PLAN_NTERMS; k++)
		fprintf(f, "  %-12s %s\n", vrt_plan_term_name(k),
		        p->recorded.note[k][0] ? p->recorded.note[k] : "-");
	if (p->nassume) {
		fprintf(f, "assumed:\n");
		for (i = 0; i < p->nassume; i++)
			fprintf(f, "  - %s\n", p->assume[i]);
	}
	if (p->nunknown) {
		fprintf(f, "cannot predict:\n");
		for (i = 0; i < p->nunknown; i++)
			fprintf(f, "  - %s\n", p->unknown[i]);
	}
	if (explained && ex)
		explain_text(f, p, explained, ex, explained_index);
}

/* ---- CSV --------------------------------------------------------------- */

void vrt_report_plan_csv(FILE *f, const struct vrt_plan *p)
{
	size_t i, j;
	int k;

	fprintf(f, "index,recorded,best");
	for (k = 0; k < VRT_PLAN_NKNOBS; k++)
		fprintf(f, ",%s", vrt_plan_knob_name(k));
	fprintf(f, ",device,capacity_bytes,other_processes_bytes");
	for (k = 0; k < VRT_PLAN_NTERMS; k++)
		fprintf(f, ",%s_bytes,%s_source", vrt_plan_term_name(k),
		        vrt_plan_term_name(k));
	fprintf(f, ",peak_bytes,headroom_bytes,fits,breaks,kv_tokens,"
	           "max_concurrency\n");
	for (i = 0; i < p->nrows; i++) {
		const struct vrt_plan_row *r = &p->rows[i];
		for (j = 0; j < r->ndev || (j == 0 && !r->ndev); j++) {
			const struct vrt_plan_device *d =
			        r->ndev ? &r->dev[j] : NULL;
			char v[32];
			fprintf(f, "%zu,%d,%d", i + 1, r->recorded, r->best);
			for (k = 0; k < VRT_PLAN_NKNOBS; k++)
				fprintf(f, ",%s",
				        (r->have >> k) & 1
				                ? vrt_plan_knob_value(
				                          v, sizeof(v), k,
				                          r->knob[k])
				                : "");
			if (d)
				fprintf(f, ",%" PRId32 ",%" PRIu64 ",%" PRIu64,
				        d->device, d->capacity, d->other);
			else
				fprintf(f, ",,,");
			for (k = 0; k < VRT_PLAN_NTERMS; k++) {
				if (d &&
				    d->term[k].source != VRT_PLAN_SRC_UNKNOWN)
					fprintf(f, ",%" PRIu64 ",%s",
					        d->term[k].bytes,
					        vrt_plan_source_name(
					                d->term[k].source));
				else
					fprintf(f, ",,%s", d ? "unknown" : "");
			}
			if (d)
				fprintf(f, ",%" PRIu64 ",%" PRIu64, d->peak,
				        d->headroom);
			else
				fprintf(f, ",,");
			fprintf(f, ",%s,%s,", vrt_plan_fit_name(r->fit),
			        vrt_plan_break_name(r->brk)
			                ? vrt_plan_break_name(r->brk)
			                : "");
			if (r->have_tokens)
				fprintf(f, "%" PRIu64 ",%" PRIu64, r->kv_tokens,
				        r->max_concurrency);
			else
				fprintf(f, ",");
			fputc('\n', f);
		}
	}
}

/* ---- JSON -----------------------------------------------------------------
 */

static void json_settings(struct vrt_json *w, const struct vrt_plan_row *r)
{
	char v[32];
	int k;

	vrt_json_begin_object(w);
	for (k = 0; k < VRT_PLAN_NKNOBS; k++) {
		if (!((r->have >> k) & 1))
			continue;
		vrt_json_key(w, vrt_plan_knob_name(k));
		vrt_json_number_text(
		        w, vrt_plan_knob_value(v, sizeof(v), k, r->knob[k]));
	}
	vrt_json_end_object(w);
}

static void json_row(struct vrt_json *w, const struct vrt_plan_row *r,
                     size_t index)
{
	size_t i;
	int k;

	vrt_json_begin_object(w);
	vrt_json_key(w, "index");
	if (index)
		vrt_json_uint(w, index);
	else
		vrt_json_null(w);
	vrt_json_key(w, "recorded");
	vrt_json_bool(w, r->recorded);
	vrt_json_key(w, "best");
	vrt_json_bool(w, r->best);
	vrt_json_key(w, "settings");
	json_settings(w, r);
	vrt_json_key(w, "fits");
	vrt_json_string(w, vrt_plan_fit_name(r->fit));
	vrt_json_key(w, "breaks");
	if (vrt_plan_break_name(r->brk))
		vrt_json_string(w, vrt_plan_break_name(r->brk));
	else
		vrt_json_null(w);
	vrt_json_key(w, "reason");
	if (r->reason[0])
		vrt_json_string(w, r->reason);
	else
		vrt_json_null(w);
	vrt_json_key(w, "requests_in_flight");
	vrt_json_uint(w, r->inflight);
	vrt_json_key(w, "kv_tokens");
	if (r->have_tokens)
		vrt_json_uint(w, r->kv_tokens);
	else
		vrt_json_null(w);
	vrt_json_key(w, "max_concurrency");
	if (r->have_tokens && r->max_concurrency)
		vrt_json_uint(w, r->max_concurrency);
	else
		vrt_json_null(w);
	vrt_json_key(w, "context_per_sequence");
	if (r->context_per_seq)
		vrt_json_uint(w, r->context_per_seq);
	else
		vrt_json_null(w);
	vrt_json_key(w, "devices");
	vrt_json_begin_array(w);
	for (i = 0; i < r->ndev; i++) {
		const struct vrt_plan_device *d = &r->dev[i];
		vrt_json_begin_object(w);
		vrt_json_key(w, "id");
		vrt_json_int(w, d->device);
		vrt_json_key(w, "capacity_bytes");
		vrt_json_uint(w, d->capacity);
		vrt_json_key(w, "other_processes_bytes");
		vrt_json_uint(w, d->other);
		vrt_json_key(w, "terms");
		vrt_json_begin_object(w);
		for (k = 0; k < VRT_PLAN_NTERMS; k++) {
			const struct vrt_plan_term *t = &d->term[k];
			vrt_json_key(w, vrt_plan_term_name(k));
			vrt_json_begin_object(w);
			vrt_json_key(w, "bytes");
			if (t->source == VRT_PLAN_SRC_UNKNOWN)
				vrt_json_null(w);
			else
				vrt_json_uint(w, t->bytes);
			vrt_json_key(w, "source");
			vrt_json_string(w, vrt_plan_source_name(t->source));
			vrt_json_key(w, "in_peak");
			vrt_json_bool(w, t->held);
			vrt_json_end_object(w);
		}
		vrt_json_end_object(w);
		vrt_json_key(w, "loading_peak_bytes");
		vrt_json_uint(w, d->load_peak);
		vrt_json_key(w, "peak_bytes");
		vrt_json_uint(w, d->peak);
		vrt_json_key(w, "headroom_bytes");
		vrt_json_uint(w, d->headroom);
		vrt_json_key(w, "fits");
		vrt_json_bool(w, !d->over);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_end_object(w);
}

static void json_lines(struct vrt_json *w, const char (*lines)[VRT_PLAN_NOTE],
                       size_t n)
{
	size_t i;

	vrt_json_begin_array(w);
	for (i = 0; i < n; i++)
		vrt_json_string(w, lines[i]);
	vrt_json_end_array(w);
}

void vrt_report_plan_json(FILE *f, const struct vrt_trace *t,
                          const struct vrt_plan *p, const char *label,
                          const struct vrt_plan_row *explained,
                          const struct vrt_plan_explain *ex,
                          size_t explained_index)
{
	struct vrt_engine_run er;
	struct vrt_json w;
	char v[32];
	size_t i;
	int k;

	vrt_engine_of_run(&er, t);
	vrt_json_init(&w, f);
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "schema");
	vrt_json_string(&w, "vramtrace-plan/1");
	vrt_json_key(&w, "run");
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "path");
	vrt_json_string(&w, label);
	vrt_json_key(&w, "engine");
	if (vrt_engine_name(p->engine))
		vrt_json_string(&w, vrt_engine_name(p->engine));
	else
		vrt_json_null(&w);
	vrt_json_key(&w, "cmdline");
	vrt_json_begin_array(&w);
	if (t->nprocs) {
		const struct vrt_process *pr =
		        &t->procs[er.proc != SIZE_MAX ? er.proc : er.root];
		for (i = 0; i < pr->argc; i++)
			vrt_json_string(&w, pr->argv[i] ? pr->argv[i] : "");
	}
	vrt_json_end_array(&w);
	vrt_json_key(&w, "devices");
	vrt_json_begin_array(&w);
	for (i = 0; i < p->ndev; i++) {
		const struct vrt_plan_measure *m = &p->dev[i];
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "id");
		vrt_json_int(&w, m->device);
		vrt_json_key(&w, "name");
		vrt_json_string(&w, t->devices[m->device].name
		                            ? t->devices[m->device].name
		                            : "");
		vrt_json_key(&w, "capacity_bytes");
		vrt_json_uint(&w, m->capacity);
		vrt_json_key(&w, "other_processes_bytes");
		vrt_json_uint(&w, m->other);
		vrt_json_key(&w, "measured");
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "weights_bytes");
		vrt_json_uint(&w, m->weights);
		vrt_json_key(&w, "kv_cache_bytes");
		vrt_json_uint(&w, m->kv);
		vrt_json_key(&w, "profile_bytes");
		vrt_json_uint(&w, m->profile);
		vrt_json_key(&w, "profile_at_peak_bytes");
		vrt_json_uint(&w, m->profile_held);
		vrt_json_key(&w, "cuda_graph_bytes");
		vrt_json_uint(&w, m->graphs);
		vrt_json_key(&w, "comm_bytes");
		vrt_json_uint(&w, m->comm);
		vrt_json_key(&w, "loading_residue_bytes");
		vrt_json_uint(&w, m->residue);
		vrt_json_key(&w, "requests_at_peak_bytes");
		vrt_json_uint(&w, m->demand_peak - m->residue);
		vrt_json_key(&w, "peak_bytes");
		vrt_json_uint(&w, m->peak);
		vrt_json_key(&w, "peak_s");
		vrt_json_seconds(&w, m->peak_ts);
		vrt_json_end_object(&w);
		vrt_json_end_object(&w);
	}
	vrt_json_end_array(&w);
	vrt_json_key(&w, "failed");
	vrt_json_bool(&w, p->failed);
	vrt_json_key(&w, "requests_in_flight");
	vrt_json_uint(&w, p->load);
	vrt_json_key(&w, "single_request_bytes");
	if (p->have_single)
		vrt_json_uint(&w, p->single);
	else
		vrt_json_null(&w);
	vrt_json_end_object(&w);
	vrt_json_key(&w, "model");
	if (p->have_model) {
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "source");
		vrt_json_string(&w, p->model.source);
		vrt_json_key(&w, "model_type");
		vrt_json_string(&w, p->model.model_type);
		vrt_json_key(&w, "layers");
		vrt_json_uint(&w, p->model.layers);
		vrt_json_key(&w, "kv_bytes_per_token");
		vrt_json_uint(&w, p->model.kv_bytes_per_token);
		vrt_json_key(&w, "kv_block_tokens");
		vrt_json_uint(&w, p->block_tokens);
		vrt_json_end_object(&w);
	} else {
		vrt_json_null(&w);
	}
	vrt_json_key(&w, "margin_percent");
	vrt_json_uint(&w, p->margin_pct);
	vrt_json_key(&w, "objective");
	vrt_json_string(&w, vrt_plan_objective_name(p->objective));
	vrt_json_key(&w, "knobs");
	vrt_json_begin_array(&w);
	for (k = 0; k < VRT_PLAN_NKNOBS; k++) {
		if (!((p->rec_have >> k) & 1) && !p->axis[k].n)
			continue;
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "name");
		vrt_json_string(&w, vrt_plan_knob_name(k));
		vrt_json_key(&w, "flag");
		if (p->spelling[k])
			vrt_json_string(&w, p->spelling[k]);
		else
			vrt_json_null(&w);
		vrt_json_key(&w, "recorded");
		if ((p->rec_have >> k) & 1)
			vrt_json_number_text(&w,
			                     vrt_plan_knob_value(v, sizeof(v),
			                                         k, p->rec[k]));
		else
			vrt_json_null(&w);
		vrt_json_key(&w, "recorded_from");
		if (p->rec_from[k])
			vrt_json_string(&w, p->rec_from[k]);
		else
			vrt_json_null(&w);
		vrt_json_key(&w, "values");
		vrt_json_begin_array(&w);
		for (i = 0; i < p->axis[k].n; i++)
			vrt_json_number_text(
			        &w, vrt_plan_knob_value(v, sizeof(v), k,
			                                p->axis[k].v[i]));
		vrt_json_end_array(&w);
		vrt_json_end_object(&w);
	}
	vrt_json_end_array(&w);
	vrt_json_key(&w, "terms");
	vrt_json_begin_object(&w);
	for (k = 0; k < VRT_PLAN_NTERMS; k++) {
		vrt_json_key(&w, vrt_plan_term_name(k));
		vrt_json_string(&w, p->recorded.note[k]);
	}
	vrt_json_end_object(&w);
	vrt_json_key(&w, "assumptions");
	json_lines(&w, p->assume, p->nassume);
	vrt_json_key(&w, "unknown");
	json_lines(&w, p->unknown, p->nunknown);
	vrt_json_key(&w, "recorded");
	json_row(&w, &p->recorded, 0);
	vrt_json_key(&w, "configurations");
	vrt_json_begin_array(&w);
	for (i = 0; i < p->nrows; i++)
		json_row(&w, &p->rows[i], i + 1);
	vrt_json_end_array(&w);
	vrt_json_key(&w, "best");
	if (p->best != SIZE_MAX)
		vrt_json_uint(&w, p->best + 1);
	else
		vrt_json_null(&w);
	vrt_json_key(&w, "explain");
	if (explained && ex) {
		vrt_json_begin_object(&w);
		vrt_json_key(&w, "index");
		if (explained_index)
			vrt_json_uint(&w, explained_index);
		else
			vrt_json_null(&w);
		vrt_json_key(&w, "lines");
		vrt_json_begin_array(&w);
		for (i = 0; i < ex->n; i++)
			vrt_json_string(&w, ex->line[i]);
		vrt_json_end_array(&w);
		vrt_json_end_object(&w);
	} else {
		vrt_json_null(&w);
	}
	vrt_json_end_object(&w);
	vrt_json_finish(&w);
}
