/*
 * cmd_compare.c — `vramtrace compare A B [--format text|json] [-o FILE]
 * [--rules FILE]`: before (A) and after (B), each a run directory or one
 * trace file.
 *
 * Parses its arguments into struct settings, then loads and replays both
 * runs as analyze does (run.c; every call path at each device's peak is
 * kept, not only the top ones), compares them (diff.c), diagnoses each
 * (diagnose.c) and lists the settings that changed (retest.c), and
 * formats the result (report_compare.c). Differences are not errors: exit 0 whatever
 * changed; 1 when a run does not load; 2 for usage. Single-threaded.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "diagnose/diagnose.h"
#include "report/diff.h"
#include "report/report.h"
#include "diagnose/retest.h"
#include "rules.h"
#include "replay/run.h"

/* In the order of --format's names. */
enum format { FMT_TEXT, FMT_JSON };

static const char *const formats[] = {"text", "json", NULL};

struct settings {
	struct vrt_opts o; /* format, -o, rules */
	const char *a, *b;
};

static const struct vrt_option options[] = {
        VRT_OPTIONS_REPORT,
        VRT_OPTION_END,
};

struct job {
	const struct settings *s;
	const struct vrt_diff *d;
	const struct vrt_run *a, *b;
	const struct vrt_compare_verdicts *v;
};

static int write_job(FILE *f, const void *ctx)
{
	const struct job *j = ctx;

	if (j->s->o.format == FMT_JSON)
		vrt_report_compare_json(f, j->d, j->a, j->b, j->v);
	else
		vrt_report_compare_text(f, j->d, j->a, j->b, j->v);
	return 0;
}

int vrt_cmd_compare_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {.o = {.formats = formats,
	                           .min_pos = 2,
	                           .max_pos = 2,
	                           .few = "give two runs, A and B",
	                           .many = "too many runs (give A and B)"}};
	struct vrt_rules *rules = NULL;
	struct vrt_optstate st;
	struct vrt_run *runs = NULL;
	struct vrt_diff d;
	struct vrt_diagnosis *dg = NULL;
	struct vrt_retest_changes changes;
	struct vrt_compare_verdicts v;
	struct job job;
	int rc;

	memset(&st, 0, sizeof(st));
	memset(&d, 0, sizeof(d));
	memset(&changes, 0, sizeof(changes));
	if (vrt_main_parse(self, argc, argv, options, &s.o, NULL, &s, &st, &rc))
		goto out;
	s.a = st.pos[0];
	s.b = st.pos[1];
	rc = VRT_EXIT_FAIL;
	runs = calloc(2, sizeof(*runs));
	if (!runs) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.o.rules && !(rules = vrt_run_read_rules(s.o.rules)))
		goto out;
	/* Every call path at the peaks: a path that leaves a top-N list is
	 * not a path that disappeared. */
	if (vrt_run_open(&runs[0], s.a, rules, SIZE_MAX) ||
	    vrt_run_open(&runs[1], s.b, rules, SIZE_MAX))
		goto out;
	if (vrt_diff_run(&d, &runs[0].t, &runs[0].r, &runs[1].t, &runs[1].r)) {
		fprintf(stderr,
		        "vramtrace: error: %s: out of memory while "
		        "comparing\n",
		        s.b);
		goto out;
	}
	dg = calloc(2, sizeof(*dg));
	if (!dg || vrt_retest_flags_diff(&changes, &runs[0].t, &runs[1].t)) {
		fprintf(stderr,
		        "vramtrace: error: %s: out of memory while "
		        "comparing\n",
		        s.b);
		goto out;
	}
	vrt_diagnose_run(&dg[0], &runs[0].t, &runs[0].r, NULL);
	vrt_diagnose_run(&dg[1], &runs[1].t, &runs[1].r, NULL);
	v.a = &dg[0];
	v.b = &dg[1];
	v.changes = &changes;
	job.s = &s;
	job.d = &d;
	job.a = &runs[0];
	job.b = &runs[1];
	job.v = &v;
	rc = vrt_cmd_write(s.o.output, write_job, &job);
out:
	free(dg);
	vrt_retest_changes_free(&changes);
	vrt_diff_free(&d);
	if (runs) {
		vrt_run_close(&runs[0]);
		vrt_run_close(&runs[1]);
		free(runs);
	}
	if (rules)
		vrt_rules_free(rules);
	free(st.pos);
	return rc;
}
