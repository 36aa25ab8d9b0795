/*
 * cmd_table.c — `vramtrace table RUN... [--format text|json|csv] [-o FILE]
 * [--rules FILE]`: the retest record across runs, one row per RUN (a run
 * directory or one trace file) in the order given.
 *
 * Parses its arguments into struct settings, then loads and replays one
 * run at a time (run.c), keeps its row (retest.c; the flags its command
 * lines did not give from the engine's log, output.log, when the run
 * directory holds one) and releases the run,
 * so memory stays that of the largest run; then formats every row
 * (report_table.c). A run that does not load is a data error (exit 1).
 * Single-threaded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "cmd.h"
#include "enginelog/enginelog.h"
#include "enginelog/log_retest.h"
#include "report/report.h"
#include "diagnose/retest.h"
#include "rules.h"
#include "replay/run.h"

/* In the order of --format's names. */
enum format { FMT_TEXT, FMT_JSON, FMT_CSV };

static const char *const formats[] = {"text", "json", "csv", NULL};

struct settings {
	struct vrt_opts o; /* format, -o, rules */
	char **paths;
	int npaths;
};

static const struct vrt_option options[] = {
        VRT_OPTIONS_REPORT,
        VRT_OPTION_END,
};

/* A glob over a directory of runs (`table DIR/<star>`) also names what lies
 * beside them: the demo's logs, notes. Among several paths a regular file
 * that is not named *.vtrace is skipped with a warning (a trace file by
 * any other name still loads when given alone); the paths kept are moved
 * to the front. Returns how many are kept. */
static int skip_other_files(char **paths, int n)
{
	int i, kept = 0;
	size_t len;
	struct stat st;

	for (i = 0; i < n; i++) {
		len = strlen(paths[i]);
		if (n > 1 && !stat(paths[i], &st) && S_ISREG(st.st_mode) &&
		    (len < 7 || strcmp(paths[i] + len - 7, ".vtrace"))) {
			fprintf(stderr,
			        "vramtrace: warning: %s: not a run (neither a "
			        "run directory nor a .vtrace file): skipped\n",
			        paths[i]);
			continue;
		}
		paths[kept++] = paths[i];
	}
	return kept ? kept : n;
}

/* The flags the command lines left out, from the engine's log record kept
 * in the run directory (output.log), when there is one. A log that cannot
 * be read is a warning: the row keeps what the trace gives. */
static int from_log(struct vrt_retest_row *row, const char *path)
{
	struct vrt_enginelog log;
	char *p = NULL, err[300];
	struct stat st;
	int rc = 0;

	if (stat(path, &st) || !S_ISDIR(st.st_mode) ||
	    asprintf(&p, "%s/output.log", path) < 0)
		return 0;
	if (stat(p, &st) || !S_ISREG(st.st_mode)) {
		free(p);
		return 0;
	}
	if (vrt_enginelog_read(&log, p, NULL, err, sizeof(err)))
		fprintf(stderr, "vramtrace: warning: %s: %s\n", p, err);
	else if (vrt_retest_from_log(row, &log) < 0)
		rc = -1;
	vrt_enginelog_free(&log);
	free(p);
	return rc;
}

struct job {
	const struct settings *s;
	const struct vrt_retest_row *rows;
};

static int write_job(FILE *f, const void *ctx)
{
	const struct job *j = ctx;
	size_t n = (size_t)j->s->npaths;

	if (j->s->o.format == FMT_JSON)
		vrt_report_table_json(f, j->rows, j->s->paths, n);
	else if (j->s->o.format == FMT_CSV)
		vrt_report_table_csv(f, j->rows, j->s->paths, n);
	else
		vrt_report_table_text(f, j->rows, j->s->paths, n);
	return 0;
}

int vrt_cmd_table_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {
	        .o = {.formats = formats, .min_pos = 1, .few = "no run given"}};
	struct vrt_rules *rules = NULL;
	struct vrt_retest_row *rows = NULL;
	struct vrt_optstate st;
	struct vrt_run run;
	struct job job;
	size_t i, nrows = 0;
	int rc;

	memset(&st, 0, sizeof(st));
	if (vrt_main_parse(self, argc, argv, options, &s.o, NULL, &s, &st, &rc))
		goto out;
	s.paths = st.pos;
	s.npaths = skip_other_files(st.pos, st.npos);
	rc = VRT_EXIT_FAIL;
	rows = calloc((size_t)s.npaths, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.o.rules && !(rules = vrt_run_read_rules(s.o.rules)))
		goto out;
	for (i = 0; i < (size_t)s.npaths; i++) {
		int bad;
		memset(&run, 0, sizeof(run));
		bad = vrt_run_open(&run, s.paths[i], rules, 0);
		if (!bad && (vrt_retest_row(&rows[i], &run.t, &run.r) ||
		             from_log(&rows[i], s.paths[i]))) {
			fprintf(stderr, "vramtrace: error: %s: out of memory\n",
			        s.paths[i]);
			bad = 1;
		}
		nrows = i + 1;
		vrt_run_close(&run);
		if (bad)
			goto out;
	}
	job.s = &s;
	job.rows = rows;
	rc = vrt_cmd_write(s.o.output, write_job, &job);
out:
	for (i = 0; i < nrows; i++)
		vrt_retest_row_free(&rows[i]);
	free(rows);
	if (rules)
		vrt_rules_free(rules);
	free(st.pos);
	return rc;
}
