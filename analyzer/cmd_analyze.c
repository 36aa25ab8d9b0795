/*
 * cmd_analyze.c — `vramtrace analyze PATH... [--format text|json|html|
 * perfetto|folded] [-o FILE] [--rules FILE] [--margin PCT]
 * [--model-config FILE [--kv-dtype T] [--explain]]`
 *
 * Parses its arguments into struct settings, then reads the rules (if
 * any), loads (load.c), attributes phases (attrib.c), replays (replay.c)
 * and formats (report_*.c). A rules file that does not parse is a data
 * error (exit 1) reported as "FILE:LINE: message". Prints the one-line error of
 * a failed load and one warning per truncated trace; writes the report to
 * stdout, or to FILE through FILE.tmp + fsync + rename so a reader never
 * sees half a report. Single-threaded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attrib.h"
#include "cmd.h"
#include "diagnose.h"
#include "load.h"
#include "model.h"
#include "progress.h"
#include "replay.h"
#include "report.h"
#include "rules.h"
#include "run.h"

enum format { FMT_TEXT, FMT_JSON, FMT_HTML, FMT_PERFETTO, FMT_FOLDED };

struct settings {
	enum format format;
	const char *output;       /* NULL: stdout */
	const char *rules;        /* --rules FILE, or NULL */
	const char *model_config; /* --model-config FILE, or NULL */
	const char *kv_dtype;     /* --kv-dtype NAME, or NULL */
	int explain;              /* --explain: the model in full */
	unsigned margin_pct;      /* --margin: advice keeps this spare */
	char **paths;
	int npaths;
};

enum {
	OPT_FORMAT = 1,
	OPT_OUTPUT,
	OPT_RULES,
	OPT_MODEL_CONFIG,
	OPT_KV_DTYPE,
	OPT_EXPLAIN,
	OPT_MARGIN
};

static const struct vrt_option options[] = {
        {"format", 'f', 1, OPT_FORMAT},
        {"output", 'o', 1, OPT_OUTPUT},
        {"rules", 0, 1, OPT_RULES},
        {"model-config", 0, 1, OPT_MODEL_CONFIG},
        {"kv-dtype", 0, 1, OPT_KV_DTYPE},
        {"explain", 0, 0, OPT_EXPLAIN},
        {"margin", 0, 1, OPT_MARGIN},
        {NULL, 0, 0, 0},
};

struct report_job {
	const struct settings *s;
	const struct vrt_trace *t;
	const struct vrt_replay *r;
	const struct vrt_diagnosis *dg;
};

static int write_job(FILE *f, const void *ctx)
{
	const struct report_job *j = ctx;

	switch (j->s->format) {
	case FMT_JSON:
		vrt_report_json_write(f, j->t, j->r, j->dg);
		return 0;
	case FMT_HTML:
		vrt_report_html_write(f, j->t, j->r, j->dg);
		return 0;
	case FMT_PERFETTO:
		vrt_report_perfetto_write(f, j->t, j->r);
		return 0;
	case FMT_FOLDED:
		return vrt_report_folded_write(f, j->t, j->r) ? -1 : 0;
	case FMT_TEXT:
		vrt_report_text_write(f, j->t, j->r, j->dg);
		return 0;
	}
	return 0;
}

static int parse(const struct vrt_cmd *self, int argc, char **argv,
                 struct settings *s, struct vrt_optstate *st)
{
	int id;

	st->argc = argc;
	st->argv = argv;
	while ((id = vrt_main_getopt(st, options, self)) > 0) {
		switch (id) {
		case OPT_FORMAT: {
			static const char *const formats[] = {
			        "text",     "json",   "html",
			        "perfetto", "folded", NULL};
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
				        self,
				        "unknown KV dtype '%s' (fp16, bf16, "
				        "fp32, fp8, fp8_e4m3, fp8_e5m2, int8, "
				        "fp8_ds_mla, q8_0, q4_0, q4_1, q5_0, "
				        "q5_1, iq4_nl)",
				        st->arg);
			s->kv_dtype = st->arg;
			break;
		case OPT_EXPLAIN:
			s->explain = 1;
			break;
		case OPT_MARGIN: {
			char *end;
			unsigned long v = strtoul(st->arg, &end, 10);
			if (end == st->arg || (*end && strcmp(end, "%")) ||
			    st->arg[0] == '-' || v > VRT_DIAG_MARGIN_MAX)
				return vrt_main_usage_error(
				        self,
				        "--margin takes a whole percent from 0 to "
				        "%d (got '%s')",
				        VRT_DIAG_MARGIN_MAX, st->arg);
			s->margin_pct = (unsigned)v;
			break;
		}
		}
	}
	if (id == VRT_OPT_HELP)
		return -1;
	if (id == VRT_OPT_ERROR)
		return VRT_EXIT_USAGE;
	if (st->npos == 0)
		return vrt_main_usage_error(self, "no trace given");
	s->paths = st->pos;
	s->npaths = st->npos;
	return VRT_EXIT_OK;
}

/* The --model-config file read into *cfg; -1 after printing
 * "vramtrace: error: FILE: reason". */
static int read_model_config(const struct settings *s, struct vrt_model *cfg)
{
	char msg[600];

	if (!vrt_model_read(cfg, s->model_config, s->kv_dtype, msg,
	                    sizeof(msg)))
		return 0;
	fprintf(stderr, "vramtrace: error: %s: %s\n", s->model_config, msg);
	return -1;
}

int vrt_cmd_analyze_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {.format = FMT_TEXT,
	                     .margin_pct = VRT_DIAG_MARGIN_PCT};
	struct vrt_rules *rules = NULL;
	struct vrt_optstate st;
	struct vrt_trace t;
	struct vrt_replay r;
	struct vrt_load_error *err = NULL;
	struct vrt_model *cfg = NULL;
	struct vrt_diagnosis *dg = NULL;
	struct vrt_progress_term pg;
	int rc, pass;

	memset(&st, 0, sizeof(st));
	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	rc = parse(self, argc, argv, &s, &st);
	if (rc) {
		rc = rc < 0 ? VRT_EXIT_OK : rc;
		goto out;
	}
	rc = VRT_EXIT_FAIL;
	err = calloc(1, sizeof(*err));
	if (!err) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.rules && !(rules = vrt_run_read_rules(s.rules)))
		goto out;
	if ((s.kv_dtype || s.explain) && !s.model_config) {
		rc = vrt_main_usage_error(self, "%s needs --model-config",
		                          s.kv_dtype ? "--kv-dtype"
		                                     : "--explain");
		goto out;
	}
	if (s.model_config &&
	    (!(cfg = malloc(sizeof(*cfg))) || read_model_config(&s, cfg))) {
		if (!cfg)
			fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	/* Long analyses show how far they got (stderr, terminals only). */
	vrt_progress_init(&pg);
	t.progress = &pg.sink;
	/* Folded stacks need every call path live at the peaks. */
	if (s.format == FMT_FOLDED)
		r.top_sites = SIZE_MAX;
	if (vrt_load_open(&t, s.paths, (size_t)s.npaths, err)) {
		vrt_progress_clear(&pg);
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	}
	pass = vrt_run_pass(&t, rules, &r, err);
	vrt_progress_clear(&pg);
	if (pass == VRT_RUN_PASS_LOAD) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	}
	if (pass) {
		fprintf(stderr,
		        "vramtrace: error: %s: out of memory while "
		        "replaying\n",
		        s.paths[0]);
		goto out;
	}
	/* Truncation is known once the stream has ended. */
	vrt_run_warn(&t);
	dg = malloc(sizeof(*dg));
	if (!dg) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	struct vrt_diag_options dopt = {s.margin_pct};
	vrt_diagnose_run_opts(dg, &t, &r, cfg, &dopt);
	dg->model.explain = s.explain;
	struct report_job job = {&s, &t, &r, dg};
	rc = vrt_run_write(s.output, write_job, &job);
out:
	free(cfg);
	free(dg);
	vrt_replay_free(&r);
	vrt_load_free(&t);
	if (rules)
		vrt_rules_free(rules);
	free(err);
	free(st.pos);
	return rc;
}
