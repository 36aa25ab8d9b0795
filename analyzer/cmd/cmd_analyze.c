/*
 * cmd_analyze.c — `vramtrace analyze PATH... [--format text|json|html|
 * perfetto|folded] [-o FILE] [--rules FILE] [--margin PCT] [--log FILE | --no-log]
 * [--model-config FILE [--kv-dtype T] [--explain]]`, and `vramtrace
 * analyze --log FILE|-` with no PATH: the server's log alone, laid out as
 * the run it describes (logrun.c) and diagnosed like a trace (the same
 * report, its numbers the log's). A run directory that holds no trace but
 * record's output.log is analysed so too, with a warning.
 *
 * Parses its arguments into struct settings, then reads the rules (if
 * any), loads (load.c), attributes phases (attrib.c), replays (replay.c),
 * holds the engine's log against the run (the run directory's output.log
 * that `record` keeps, or --log FILE: enginelog.c, logcheck.c), diagnoses
 * with both (diagnose.c) and formats (report_*.c). A rules file that does
 * not parse is a data error (exit 1) reported as "FILE:LINE: message". Prints the one-line error of
 * a failed load and one warning per truncated trace; writes the report to
 * stdout, or to FILE through FILE.tmp + fsync + rename so a reader never
 * sees half a report. Single-threaded.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>
#include <time.h>

#include "replay/attrib.h"
#include "cmd.h"
#include "diagnose/diagnose.h"
#include "enginelog/enginelog.h"
#include "load/load.h"
#include "enginelog/logcheck.h"
#include "enginelog/logrun.h"
#include "model/model.h"
#include "model/model_read.h"
#include "base/progress.h"
#include "replay/replay.h"
#include "report/report.h"
#include "rules.h"
#include "replay/run.h"
#include "load/tracedir.h"
#include "load/wallclock.h"

/* In the order of --format's names. */
enum format { FMT_TEXT, FMT_JSON, FMT_HTML, FMT_PERFETTO, FMT_FOLDED };

static const char *const formats[] = {"text",     "json",   "html",
                                      "perfetto", "folded", NULL};

struct settings {
	struct vrt_opts o; /* format, -o, rules, model, margin, explain */
	const char *log;   /* --log FILE, or NULL */
	const char *log_name; /* the log in messages ("standard input") */
	int no_log;        /* --no-log */
	char **paths;
	int npaths;
};

enum { OPT_LOG = VRT_OPT_OWN, OPT_NO_LOG };

static const struct vrt_option options[] = {
        VRT_OPTIONS_REPORT,           VRT_OPTIONS_MODEL, {"log", 0, 1, OPT_LOG},
        {"no-log", 0, 0, OPT_NO_LOG}, VRT_OPTION_END,
};

struct report_job {
	const struct settings *s;
	const struct vrt_trace *t;
	const struct vrt_replay *r;
	const struct vrt_diagnosis *dg;
	const struct vrt_logcheck *lc; /* NULL: no engine log */
};

static int write_job(FILE *f, const void *ctx)
{
	const struct report_job *j = ctx;

	switch ((enum format)j->s->o.format) {
	case FMT_JSON:
		vrt_report_json_write(f, j->t, j->r, j->dg, j->lc);
		return 0;
	case FMT_HTML:
		vrt_report_html_write(f, j->t, j->r, j->dg, j->lc);
		return 0;
	case FMT_PERFETTO:
		vrt_report_perfetto_write(f, j->t, j->r, j->lc);
		return 0;
	case FMT_FOLDED:
		return vrt_report_folded_write(f, j->t, j->r) ? -1 : 0;
	case FMT_TEXT:
		vrt_report_text_write(f, j->t, j->r, j->dg, j->lc);
		return 0;
	}
	return 0;
}

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	struct settings *s = settings;

	(void)self;
	if (id == OPT_LOG)
		s->log = arg;
	else if (id == OPT_NO_LOG)
		s->no_log = 1;
	return 0;
}

/* The --model-config file read into *cfg; -1 after printing
 * "vramtrace: error: FILE: reason". */
static int read_model_config(const struct settings *s, struct vrt_model *cfg)
{
	char msg[600];

	if (!vrt_model_read(cfg, s->o.model_config, s->o.kv_dtype, msg,
	                    sizeof(msg)))
		return 0;
	fprintf(stderr, "vramtrace: error: %s: %s\n", s->o.model_config, msg);
	return -1;
}

/* The log to hold against the run: --log FILE, else output.log in the
 * (first) run directory when `record` left one there; NULL for none. *auto_
 * tells the second case (a log that cannot be read is then a warning). */
static char *log_path(const struct settings *s, int *auto_)
{
	struct stat st;
	char *p = NULL;

	*auto_ = 0;
	if (s->no_log)
		return NULL;
	if (s->log)
		return strdup(s->log);
	if (stat(s->paths[0], &st) || !S_ISDIR(st.st_mode) ||
	    asprintf(&p, "%s/output.log", s->paths[0]) < 0)
		return NULL;
	if (stat(p, &st) || !S_ISREG(st.st_mode)) {
		free(p);
		return NULL;
	}
	*auto_ = 1;
	return p;
}

/*
 * Reads the engine log at path into *log (a year for dates printed without
 * one and the local time zone from the run's start, so an engine's local
 * times land on UTC) and holds it against the run into *lc. Returns 0; 1
 * after a warning (a log found beside the run that cannot be read: the
 * run is analysed without it); -1 after printing the error.
 */
static int engine_log(const char *path, int auto_, struct vrt_enginelog *log,
                      struct vrt_logcheck *lc, const struct vrt_trace *t,
                      const struct vrt_replay *r, const struct vrt_model *cfg)
{
	struct vrt_enginelog_opts o = {0, 0};
	char err[300];
	time_t start;
	struct tm tm;

	if (vrt_wallclock_known(t)) {
		o.ref_wall_ns = vrt_wallclock_utc(t, t->start_ns);
		start = (time_t)(o.ref_wall_ns / 1000000000);
		/* Engines print local time; this machine's zone (TZ) is the
		 * best guess of the one the server ran in. */
		if (localtime_r(&start, &tm))
			o.tz_offset_s = (int32_t)tm.tm_gmtoff;
	}
	if (vrt_enginelog_read(log, path, &o, err, sizeof(err))) {
		fprintf(stderr, "vramtrace: %s: %s: %s\n",
		        auto_ ? "warning" : "error", path, err);
		vrt_enginelog_free(log);
		return auto_ ? 1 : -1;
	}
	vrt_logcheck_run(lc, log, path, t, r, cfg);
	return 0;
}

/* DIR/output.log when DIR is a directory that holds it and no *.vtrace
 * file (malloc'd), else NULL. */
static char *only_output_log(const char *dir)
{
	struct stat st;
	char *p = NULL;
	DIR *d;
	struct dirent *e;
	int traces = 0;

	if (stat(dir, &st) || !S_ISDIR(st.st_mode) || !(d = opendir(dir)))
		return NULL;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		traces += n > 7 && !strcmp(e->d_name + n - 7, ".vtrace");
	}
	closedir(d);
	if (traces || asprintf(&p, "%s/output.log", dir) < 0)
		return NULL;
	if (stat(p, &st) || !S_ISREG(st.st_mode)) {
		free(p);
		return NULL;
	}
	return p;
}

/*
 * analyze --log FILE without a trace: the log read (path "-": standard
 * input), the run it describes built (logrun.c), checked and diagnosed as
 * a trace with its log would be, and the report written. Returns the exit
 * code.
 */
static int log_only(const struct vrt_cmd *self, struct settings *s,
                    const char *path)
{
	struct vrt_enginelog *log = NULL;
	struct vrt_logrun *lr = NULL;
	struct vrt_logcheck *lc = NULL;
	struct vrt_diag_log *dl = NULL;
	struct vrt_diagnosis *dg = NULL;
	struct vrt_model *cfg = NULL;
	const char *name = strcmp(path, "-") ? path : "standard input";
	char err[300];
	int rc = VRT_EXIT_FAIL, read_ok = 0;

	if (s->o.format == FMT_PERFETTO || s->o.format == FMT_FOLDED)
		return vrt_main_usage_error(self,
		                            "--format %s needs a trace (a log "
		                            "alone gives text, json or html)",
		                            formats[s->o.format]);
	if (s->o.rules)
		return vrt_main_usage_error(self, "--rules re-classifies a "
		                                  "trace's call stacks: it needs "
		                                  "a trace");
	if ((s->o.kv_dtype || s->o.explain) && !s->o.model_config)
		return vrt_main_usage_error(self, "%s needs --model-config",
		                            s->o.kv_dtype ? "--kv-dtype"
		                                          : "--explain");
	s->log_name = name;
	log = calloc(1, sizeof(*log));
	lr = calloc(1, sizeof(*lr));
	lc = calloc(1, sizeof(*lc));
	dl = calloc(1, sizeof(*dl));
	dg = malloc(sizeof(*dg));
	if (!log || !lr || !lc || !dl || !dg) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s->o.model_config &&
	    (!(cfg = malloc(sizeof(*cfg))) || read_model_config(s, cfg))) {
		if (!cfg)
			fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (!strcmp(path, "-") && isatty(0))
		fprintf(stderr, "vramtrace: reading the log from the terminal: "
		                "paste it, then press Ctrl-D\n");
	{
		/* Dates printed without a year (vLLM's) take the year nearest
		 * to now, in this machine's zone (TZ), as with a trace's. */
		struct vrt_enginelog_opts o = {0, 0};
		struct timespec now;
		struct tm tm;
		if (!clock_gettime(CLOCK_REALTIME, &now)) {
			o.ref_wall_ns = (int64_t)now.tv_sec * 1000000000;
			if (localtime_r(&now.tv_sec, &tm))
				o.tz_offset_s = (int32_t)tm.tm_gmtoff;
		}
		if (vrt_enginelog_read(log, path, &o, err, sizeof(err))) {
			fprintf(stderr, "vramtrace: error: %s: %s\n", name, err);
			goto out;
		}
	}
	read_ok = 1;
	if (!log->lines || log->bytes <= log->lines) {
		fprintf(stderr, "vramtrace: error: %s: the log is empty\n", name);
		goto out;
	}
	if (log->binary_lines * 2 > log->lines) {
		fprintf(stderr,
		        "vramtrace: error: %s: not a text log: %" PRIu64 " of "
		        "%" PRIu64 " lines hold binary bytes (NUL or control "
		        "characters); give the server's log, or a run directory "
		        "for a trace\n",
		        name, log->binary_lines, log->lines);
		goto out;
	}
	if (vrt_logcheck_logonly_diagnose(lc, lr, dl, dg, log, name, cfg,
	                                  s->o.margin < 0
	                                          ? VRT_DIAG_MARGIN_PCT
	                                          : (unsigned)s->o.margin)) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	dg->model.explain = s->o.explain;
	{
		struct report_job job = {s, &lr->t, &lr->r, dg, lc};
		rc = vrt_cmd_write(s->o.output, write_job, &job);
	}
out:
	if (read_ok)
		vrt_enginelog_free(log);
	if (lr)
		vrt_logrun_free(lr);
	free(log);
	free(lr);
	free(lc);
	free(dl);
	free(dg);
	free(cfg);
	return rc;
}

/* Where an HTML report goes without -o: DIR/report.html for a run
 * directory, FILE.html beside a trace file FILE.vtrace. malloc'd, or
 * NULL when out of memory. */
static char *html_path(const char *path)
{
	struct stat st;
	size_t n = strlen(path);
	char *out = NULL;

	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		if (asprintf(&out, "%s%sreport.html", path,
		             n && path[n - 1] == '/' ? "" : "/") < 0)
			return NULL;
		return out;
	}
	if (n > 7 && !strcmp(path + n - 7, ".vtrace"))
		n -= 7;
	if (asprintf(&out, "%.*s.html", (int)n, path) < 0)
		return NULL;
	return out;
}

/* Which of the paths given process pr came from: the path itself (a
 * trace file) or the directory holding it; -1 when none. */
static int path_of(const struct settings *s, const struct vrt_process *pr)
{
	int i;

	for (i = 0; i < s->npaths; i++) {
		size_t n = strlen(s->paths[i]);
		if (!strcmp(pr->path, s->paths[i]) ||
		    (!strncmp(pr->path, s->paths[i], n) &&
		     (pr->path[n] == '/' || (n && s->paths[i][n - 1] == '/'))))
			return i;
	}
	return -1;
}

/* Several paths merge into one run when they are its parts (one per host,
 * or processes of one machine at the same time). Two paths of one host
 * whose processes ran at different times are two recordings: merged, each
 * card would carry both runs' memory. Known only when every process of
 * both ended cleanly (a trace without its end may run on). Prints the
 * usage error and returns 1 for the first such pair. */
static int separate_runs(const struct vrt_cmd *self, const struct settings *s,
                         const struct vrt_trace *t)
{
	int64_t lo[2], hi[2];
	int i, j, k, seen[2], open_end[2];
	size_t p;

	for (i = 0; i < s->npaths; i++)
		for (j = i + 1; j < s->npaths; j++) {
			const char *host = NULL;
			int shared = 1;
			seen[0] = seen[1] = open_end[0] = open_end[1] = 0;
			for (p = 0; p < t->nprocs; p++) {
				const struct vrt_process *pr = &t->procs[p];
				int a = path_of(s, pr);
				if (a != i && a != j)
					continue;
				k = a == j;
				if (!host)
					host = pr->host;
				shared &= host && pr->host &&
				          !strcmp(host, pr->host);
				open_end[k] |= !pr->has_trailer;
				if (!seen[k] || pr->start_mono_ns < lo[k])
					lo[k] = pr->start_mono_ns;
				if (!seen[k] || pr->end_mono_ns > hi[k])
					hi[k] = pr->end_mono_ns;
				seen[k] = 1;
			}
			if (!seen[0] || !seen[1] || !shared || open_end[0] ||
			    open_end[1] || (hi[0] >= lo[1] && hi[1] >= lo[0]))
				continue;
			k = hi[0] < lo[1];
			vrt_main_usage_error(
			        self,
			        "%s and %s are separate recordings of %s (%s "
			        "ended %.1f s before %s began): analyze one at a "
			        "time, compare them with `vramtrace compare %s "
			        "%s`, or list them with `vramtrace table %s %s`",
			        s->paths[i], s->paths[j], host,
			        s->paths[k ? i : j],
			        (double)(k ? lo[1] - hi[0] : lo[0] - hi[1]) / 1e9,
			        s->paths[k ? j : i], s->paths[i], s->paths[j],
			        s->paths[i], s->paths[j]);
			return 1;
		}
	return 0;
}

int vrt_cmd_analyze_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {.o = {.formats = formats, .min_pos = 0}};
	struct vrt_rules *rules = NULL;
	struct vrt_optstate st;
	struct vrt_trace t;
	struct vrt_replay r;
	struct vrt_load_error *err = NULL;
	struct vrt_model *cfg = NULL;
	struct vrt_diagnosis *dg = NULL;
	struct vrt_progress_term pg;
	struct vrt_enginelog *log = NULL;
	struct vrt_logcheck *lc = NULL;
	struct vrt_diag_log *dl = NULL;
	char *lpath = NULL;
	int rc, pass, have_log = 0, auto_log;

	memset(&st, 0, sizeof(st));
	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	if (vrt_main_parse(self, argc, argv, options, &s.o, own_option, &s, &st,
	                   &rc))
		goto out;
	if (s.log && s.no_log) {
		rc = vrt_main_usage_error(self, "--log and --no-log exclude "
		                                "each other");
		goto out;
	}
	s.paths = st.pos;
	s.npaths = st.npos;
	if (!s.npaths && !s.log) {
		rc = vrt_main_usage_error(self, "no trace given (a run "
		                                "directory or .vtrace file; or "
		                                "--log FILE for the server's log "
		                                "alone)");
		goto out;
	}
	if (!s.npaths) {
		rc = log_only(self, &s, s.log);
		goto out;
	}
	rc = VRT_EXIT_FAIL;
	err = calloc(1, sizeof(*err));
	if (!err) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	if (s.o.rules && !(rules = vrt_run_read_rules(s.o.rules)))
		goto out;
	if ((s.o.kv_dtype || s.o.explain) && !s.o.model_config) {
		rc = vrt_main_usage_error(self, "%s needs --model-config",
		                          s.o.kv_dtype ? "--kv-dtype"
		                                       : "--explain");
		goto out;
	}
	if (s.o.model_config &&
	    (!(cfg = malloc(sizeof(*cfg))) || read_model_config(&s, cfg))) {
		if (!cfg)
			fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	/* Long analyses show how far they got (stderr, terminals only). */
	vrt_progress_init(&pg);
	if (pg.sink.fn)
		pg.total_bytes =
		        vrt_tracedir_bytes(s.paths, (size_t)s.npaths);
	t.progress = &pg.sink;
	/* Folded stacks need every call path live at the peaks. */
	if (s.o.format == FMT_FOLDED)
		r.top_sites = SIZE_MAX;
	if (vrt_load_open(&t, s.paths, (size_t)s.npaths, err)) {
		char *ol = NULL;
		vrt_progress_clear(&pg);
		/* a run directory with record's log but no trace (the
		 * server never loaded the preload): the log alone */
		if (s.npaths == 1 && !s.no_log && !s.log &&
		    (ol = only_output_log(s.paths[0]))) {
			fprintf(stderr,
			        "vramtrace: warning: %s: no trace in the run "
			        "directory (%s); its output.log is analysed "
			        "alone\n",
			        s.paths[0], err->msg);
			rc = log_only(self, &s, ol);
			free(ol);
			goto out;
		}
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
	if (s.npaths > 1 && separate_runs(self, &s, &t)) {
		rc = VRT_EXIT_USAGE;
		goto out;
	}
	/* Truncation is known once the stream has ended. */
	vrt_run_warn(&t);
	dg = malloc(sizeof(*dg));
	if (!dg) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		goto out;
	}
	lpath = log_path(&s, &auto_log);
	if (lpath) {
		int e;
		log = calloc(1, sizeof(*log));
		lc = calloc(1, sizeof(*lc));
		dl = calloc(1, sizeof(*dl));
		if (!log || !lc || !dl) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			goto out;
		}
		e = engine_log(lpath, auto_log, log, lc, &t, &r, cfg);
		if (e < 0)
			goto out;
		have_log = e == 0;
		if (have_log)
			vrt_logcheck_diag(lc, dl);
	}
	{
		struct vrt_diag_options dopt = {s.o.margin < 0
		                                        ? VRT_DIAG_MARGIN_PCT
		                                        : (unsigned)s.o.margin,
		                                have_log ? dl : NULL};
		vrt_diagnose_run_opts(dg, &t, &r, cfg, &dopt);
	}
	dg->model.explain = s.o.explain;
	if (have_log)
		lc->refusal_applied = dg->log_refusal;
	struct report_job job = {&s, &t, &r, dg, have_log ? lc : NULL};
	if (s.o.format == FMT_HTML && !s.o.output) {
		/* A page is for a browser, not a terminal: next to the
		 * run, and say where. */
		char *page = html_path(s.paths[0]);
		if (!page) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			goto out;
		}
		rc = vrt_cmd_write(page, write_job, &job);
		if (rc == VRT_EXIT_OK)
			fprintf(stderr,
			        "vramtrace: HTML report written to %s (open it "
			        "in a browser; -o FILE writes it elsewhere, -o - "
			        "to standard output)\n",
			        page);
		free(page);
		goto out;
	}
	rc = vrt_cmd_write(s.o.output, write_job, &job);
out:
	if (have_log)
		vrt_enginelog_free(log);
	free(log);
	free(lc);
	free(dl);
	free(lpath);
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
