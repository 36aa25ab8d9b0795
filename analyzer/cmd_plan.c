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
#include "model.h"
#include "plan.h"
#include "report.h"
#include "rules.h"
#include "run.h"

enum format { FMT_TEXT, FMT_JSON, FMT_CSV };

#define MAX_SETS 16

struct settings {
	enum format format;
	const char *output;       /* NULL: stdout */
	const char *rules;        /* --rules FILE, or NULL */
	const char *model_config; /* --model-config FILE, or NULL */
	const char *kv_dtype;     /* --kv-dtype NAME, or NULL */
	const char *sets[MAX_SETS];
	int nsets;
	int objective; /* enum vrt_plan_objective */
	int margin;    /* percent, -1: the default */
	int explain;
	const char *path;
};

enum {
	OPT_FORMAT = 1,
	OPT_OUTPUT,
	OPT_RULES,
	OPT_MODEL_CONFIG,
	OPT_KV_DTYPE,
	OPT_SET,
	OPT_OBJECTIVE,
	OPT_MARGIN,
	OPT_EXPLAIN
};

static const struct vrt_option options[] = {
        {"format", 'f', 1, OPT_FORMAT},
        {"output", 'o', 1, OPT_OUTPUT},
        {"rules", 0, 1, OPT_RULES},
        {"model-config", 0, 1, OPT_MODEL_CONFIG},
        {"kv-dtype", 0, 1, OPT_KV_DTYPE},
        {"set", 0, 1, OPT_SET},
        {"objective", 0, 1, OPT_OBJECTIVE},
        {"margin", 0, 1, OPT_MARGIN},
        {"explain", 0, 0, OPT_EXPLAIN},
        {NULL, 0, 0, 0},
};

/* Returns 0 to go on, -1 after --help, or VRT_EXIT_USAGE. */
static int parse(const struct vrt_cmd *self, int argc, char **argv,
                 struct settings *s, struct vrt_optstate *st)
{
	int id;

	st->argc = argc;
	st->argv = argv;
	while ((id = vrt_main_getopt(st, options, self)) > 0) {
		switch (id) {
		case OPT_FORMAT: {
			static const char *const formats[] = {"text", "json",
			                                      "csv", NULL};
			int f = vrt_main_choice(self, "format", st->arg,
			                        formats);
			if (f < 0)
				return VRT_EXIT_USAGE;
			s->format = (enum format)f;
			break;
		}
		case OPT_OUTPUT:
			s->output = st->arg;
			break;
		case OPT_RULES:
			s->rules = st->arg;
			break;
		case OPT_MODEL_CONFIG:
			s->model_config = st->arg;
			break;
		case OPT_KV_DTYPE:
			if (vrt_model_dtype(st->arg, NULL))
				return vrt_main_usage_error(
				        self, "unknown KV dtype '%s'", st->arg);
			s->kv_dtype = st->arg;
			break;
		case OPT_SET:
			if (s->nsets >= MAX_SETS)
				return vrt_main_usage_error(
				        self, "more than %d --set options",
				        MAX_SETS);
			s->sets[s->nsets++] = st->arg;
			break;
		case OPT_OBJECTIVE: {
			/* in enum vrt_plan_objective order */
			static const char *const objectives[] = {
			        "concurrency", "context", "throughput", NULL};
			int o = vrt_main_choice(self, "objective", st->arg,
			                        objectives);
			if (o < 0)
				return VRT_EXIT_USAGE;
			s->objective = o;
			break;
		}
		case OPT_MARGIN: {
			char *end;
			long m = strtol(st->arg, &end, 10);
			if (end == st->arg || (*end && strcmp(end, "%")) ||
			    m < 0 || m > 50)
				return vrt_main_usage_error(
				        self,
				        "--margin is a percentage from 0 to "
				        "50, "
				        "not '%s'",
				        st->arg);
			s->margin = (int)m;
			break;
		}
		case OPT_EXPLAIN:
			s->explain = 1;
			break;
		}
	}
	if (id == VRT_OPT_HELP)
		return -1;
	if (id == VRT_OPT_ERROR)
		return VRT_EXIT_USAGE;
	if (st->npos != 1)
		return vrt_main_usage_error(self, st->npos ? "one run only"
		                                           : "no run given");
	if (s->kv_dtype && !s->model_config)
		return vrt_main_usage_error(self,
		                            "--kv-dtype needs --model-config");
	s->path = st->pos[0];
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

static int write_job(FILE *f, const void *ctx)
{
	const struct job *j = ctx;

	if (j->s->format == FMT_JSON)
		vrt_report_plan_json(f, j->t, j->p, j->s->path, j->explained,
		                     j->ex, j->index);
	else if (j->s->format == FMT_CSV)
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
	s.margin = -1;
	rc = parse(self, argc, argv, &s, &st);
	if (rc) {
		rc = rc < 0 ? VRT_EXIT_OK : rc;
		goto out;
	}
	rc = VRT_EXIT_FAIL;
	p = calloc(1, sizeof(*p));
	ex = calloc(1, sizeof(*ex));
	row = calloc(1, sizeof(*row));
	if (!p || !ex || !row) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.model_config) {
		if (!(cfg = malloc(sizeof(*cfg)))) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			goto out;
		}
		if (vrt_model_read(cfg, s.model_config, s.kv_dtype, msg,
		                   sizeof(msg))) {
			fprintf(stderr, "vramtrace: error: %s: %s\n",
			        s.model_config, msg);
			goto out;
		}
	}
	if (s.rules && !(rules = vrt_run_read_rules(s.rules)))
		goto out;
	opened = 1;
	if (vrt_run_open(&run, s.path, rules, 0))
		goto out;
	vrt_plan_measure(p, &run.t, &run.r, cfg);
	p->objective = s.objective;
	if (s.margin >= 0)
		p->margin_pct = (unsigned)s.margin;
	for (i = 0; i < s.nsets; i++)
		if (vrt_plan_set(p, s.sets[i], msg, sizeof(msg))) {
			rc = vrt_main_usage_error(self, "--set %s: %s",
			                          s.sets[i], msg);
			goto out;
		}
	if (!s.nsets)
		vrt_plan_default_grid(p);
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
	if (s.explain) {
		const struct vrt_plan_row *r;
		job.index = explained_row(p, &r);
		/* predicted again, this time with its arithmetic */
		vrt_plan_predict(p, r->knob, r->have, row, ex);
		row->best = r->best;
		job.explained = row;
		job.ex = ex;
	}
	rc = vrt_run_write(s.output, write_job, &job);
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
