/*
 * cmd_plan.c — `vramtrace plan RUN [--model-config FILE] [--kv-dtype T]
 * [--set FLAG=V1,V2,...]... [--objective concurrency|context|throughput]
 * [--margin PCT] [--explain] [--format text|json|csv] [-o FILE]
 * [--rules FILE]`: which settings of the run's engine fit, predicted from
 * the run's measured budgets and the engine's sizing rule (plan.c,
 * docs/plan.md).
 *
 * Parses its arguments into struct settings, reads the model description
 * (model.h's entry point, so every format it reads works here), loads and
 * replays the run (run.c), measures it into a plan, makes the grid (the
 * --set values, else the neighbourhood of the recorded settings),
 * predicts every configuration and writes the report (report_plan.c).
 * A --set that names no setting of the engine, or a bad value, is a usage
 * error (exit 2); a run or model file that does not read is a data error
 * (exit 1). Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "diagnose/diagnose.h"
#include "diagnose/engine.h"
#include "model/model.h"
#include "model/model_read.h"
#include "plan/plan.h"
#include "report/report.h"
#include "rules.h"
#include "replay/run.h"

/* In the order of --format's names. */
enum format { FMT_TEXT, FMT_JSON, FMT_CSV };

static const char *const formats[] = {"text", "json", "csv", NULL};

#define MAX_SETS 16

struct settings {
	struct vrt_opts o; /* format, -o, rules, model, margin, explain */
	const char *sets[MAX_SETS];
	int nsets;
	int objective; /* enum vrt_plan_objective */
	const char *path;
};

enum { OPT_SET = VRT_OPT_OWN, OPT_OBJECTIVE };

static const struct vrt_option options[] = {
        VRT_OPTIONS_REPORT,     VRT_OPTIONS_MODEL,
        {"set", 0, 1, OPT_SET}, {"objective", 0, 1, OPT_OBJECTIVE},
        VRT_OPTION_END,
};

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	/* in enum vrt_plan_objective order */
	static const char *const objectives[] = {"concurrency", "context",
	                                         "throughput", NULL};
	struct settings *s = settings;

	if (id == OPT_SET) {
		if (s->nsets >= MAX_SETS)
			return vrt_main_usage_error(
			        self, "more than %d --set options", MAX_SETS);
		s->sets[s->nsets++] = arg;
	} else if (id == OPT_OBJECTIVE) {
		s->objective =
		        vrt_main_choice(self, "objective", arg, objectives);
		if (s->objective < 0)
			return VRT_EXIT_USAGE;
	}
	return 0;
}

struct job {
	const struct settings *s;
	const struct vrt_trace *t;
	const struct vrt_plan *p;
	const struct vrt_plan_row *explained;
	const struct vrt_plan_explain *ex;
	size_t index;
};

/* The plan knob of an engine setting (enum vrt_engine_field), or -1. */
static int knob_of_field(int field)
{
	switch (field) {
	case VRT_ENGINE_CONTEXT:
		return VRT_PLAN_CONTEXT;
	case VRT_ENGINE_CONCURRENCY:
		return VRT_PLAN_CONCURRENCY;
	case VRT_ENGINE_MEM_FRACTION:
		return VRT_PLAN_FRACTION;
	case VRT_ENGINE_PARALLEL:
		return VRT_PLAN_PARALLEL;
	case VRT_ENGINE_GPU_LAYERS:
		return VRT_PLAN_GPU_LAYERS;
	case VRT_ENGINE_BATCH_TOKENS:
		return VRT_PLAN_BATCH_TOKENS;
	case VRT_ENGINE_UBATCH:
		return VRT_PLAN_UBATCH;
	}
	return -1;
}

static int write_job(FILE *f, const void *ctx)
{
	const struct job *j = ctx;

	if (j->s->o.format == FMT_JSON)
		vrt_report_plan_json(f, j->t, j->p, j->s->path, j->explained,
		                     j->ex, j->index);
	else if (j->s->o.format == FMT_CSV)
		vrt_report_plan_csv(f, j->p);
	else
		vrt_report_plan_text(f, j->t, j->p, j->s->path, j->explained,
		                     j->ex, j->index);
	return 0;
}

/* --explain: the one configuration the grid names, else the best, else
 * the recorded settings. Returns its row index (1-based; 0: the recorded
 * row outside the grid). */
static size_t explained_row(const struct vrt_plan *p,
                            const struct vrt_plan_row **row)
{
	if (p->nrows == 1) {
		*row = &p->rows[0];
		return 1;
	}
	if (p->best != SIZE_MAX) {
		*row = &p->rows[p->best];
		return p->best + 1;
	}
	*row = &p->recorded;
	return 0;
}

int vrt_cmd_plan_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s;
	struct vrt_rules *rules = NULL;
	struct vrt_optstate st;
	struct vrt_model *cfg = NULL;
	struct vrt_plan *p = NULL;
	struct vrt_plan_explain *ex = NULL;
	struct vrt_plan_row *row = NULL;
	struct vrt_run run;
	struct job job;
	char msg[600];
	int rc, i, opened = 0;

	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	memset(&run, 0, sizeof(run));
	s.o = (struct vrt_opts){.formats = formats,
	                        .min_pos = 1,
	                        .max_pos = 1,
	                        .few = "no run given",
	                        .many = "one run only"};
	if (vrt_main_parse(self, argc, argv, options, &s.o, own_option, &s, &st,
	                   &rc))
		goto out;
	if (s.o.kv_dtype && !s.o.model_config) {
		rc = vrt_main_usage_error(self,
		                          "--kv-dtype needs --model-config");
		goto out;
	}
	s.path = st.pos[0];
	rc = VRT_EXIT_FAIL;
	p = calloc(1, sizeof(*p));
	ex = calloc(1, sizeof(*ex));
	row = calloc(1, sizeof(*row));
	if (!p || !ex || !row) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.o.model_config) {
		if (!(cfg = malloc(sizeof(*cfg)))) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			goto out;
		}
		if (vrt_model_read(cfg, s.o.model_config, s.o.kv_dtype, msg,
		                   sizeof(msg))) {
			fprintf(stderr, "vramtrace: error: %s: %s\n",
			        s.o.model_config, msg);
			goto out;
		}
	}
	if (s.o.rules && !(rules = vrt_run_read_rules(s.o.rules)))
		goto out;
	opened = 1;
	if (vrt_run_open(&run, s.path, rules, 0))
		goto out;
	vrt_plan_measure(p, &run.t, &run.r, cfg);
	p->objective = s.objective;
	if (s.o.margin >= 0)
		p->margin_pct = (unsigned)s.o.margin;
	for (i = 0; i < s.nsets; i++)
		if (vrt_plan_set(p, s.sets[i], msg, sizeof(msg))) {
			rc = vrt_main_usage_error(self, "--set %s: %s",
			                          s.sets[i], msg);
			goto out;
		}
	if (!s.nsets) {
		/* The settings `analyze` advises for this run are rows of the
		 * grid, with the same margin. */
		struct vrt_diagnosis *dg = malloc(sizeof(*dg));
		struct vrt_diag_options dopt = {
		        s.o.margin >= 0 ? (unsigned)s.o.margin
		                        : VRT_DIAG_MARGIN_PCT,
		        NULL};
		if (dg) {
			vrt_diagnose_run_opts(dg, &run.t, &run.r, cfg, &dopt);
			for (size_t k = 0; k < dg->nsuggest; k++)
				vrt_plan_try(p, knob_of_field(dg->suggest[k].field),
				             dg->suggest[k].value);
			free(dg);
		}
		vrt_plan_default_grid(p);
	}
	switch (vrt_plan_run(p, msg, sizeof(msg))) {
	case 0:
		break;
	case -1:
		rc = vrt_main_usage_error(self, "%s", msg);
		goto out;
	default:
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	memset(&job, 0, sizeof(job));
	job.s = &s;
	job.t = &run.t;
	job.p = p;
	if (s.o.explain) {
		const struct vrt_plan_row *r;
		job.index = explained_row(p, &r);
		/* predicted again, this time with its arithmetic */
		vrt_plan_predict(p, r->knob, r->have, row, ex);
		row->best = r->best;
		job.explained = row;
		job.ex = ex;
	}
	rc = vrt_cmd_write(s.o.output, write_job, &job);
out:
	if (opened)
		vrt_run_close(&run);
	if (p)
		vrt_plan_free(p);
	free(p);
	free(ex);
	free(row);
	free(cfg);
	if (rules)
		vrt_rules_free(rules);
	free(st.pos);
	return rc;
}
