/*
 * cmd_analyze.c — `vramtrace analyze PATH... [--format text|json] [-o FILE]`
 *
 * Parses its arguments into struct settings, then loads (load.c), replays
 * (replay.c) and formats (report_*.c). Prints the one-line error of a
 * failed load and one warning per truncated trace; writes the report to
 * stdout, or to FILE through FILE.tmp + fsync + rename so a reader never
 * sees half a report. Single-threaded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "load.h"
#include "replay.h"
#include "report.h"

enum format { FMT_TEXT, FMT_JSON };

struct settings {
	enum format format;
	const char *output; /* NULL: stdout */
	char **paths;
	int npaths;
};

enum { OPT_FORMAT = 1, OPT_OUTPUT };

static const struct vrt_option options[] = {
        {"format", 'f', 1, OPT_FORMAT},
        {"output", 'o', 1, OPT_OUTPUT},
        {NULL, 0, 0, 0},
};

static int write_report(const struct settings *s, const struct vrt_trace *t,
                        const struct vrt_replay *r)
{
	FILE *f = stdout;
	char *tmp = NULL;
	int rc = VRT_EXIT_FAIL, saved;

	if (s->output) {
		if (asprintf(&tmp, "%s.tmp", s->output) < 0) {
			tmp = NULL;
			fprintf(stderr, "vramtrace: error: %s: out of memory\n",
			        s->output);
			goto out;
		}
		f = fopen(tmp, "we");
		if (!f) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %s\n",
			        tmp, strerror(errno));
			goto out;
		}
	}
	if (s->format == FMT_JSON)
		vrt_report_json_write(f, t, r);
	else
		vrt_report_text_write(f, t, r);
	if (fflush(f) || ferror(f)) {
		saved = errno;
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        s->output ? tmp : "stdout", strerror(saved));
		goto out;
	}
	if (!s->output) {
		rc = VRT_EXIT_OK;
		goto out;
	}
	if (fsync(fileno(f))) {
		fprintf(stderr, "vramtrace: error: %s: cannot sync: %s\n", tmp,
		        strerror(errno));
		goto out;
	}
	saved = fclose(f);
	f = NULL;
	if (saved || rename(tmp, s->output)) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        s->output, strerror(errno));
		goto out;
	}
	rc = VRT_EXIT_OK;
out:
	if (s->output && f)
		fclose(f);
	if (tmp && rc)
		unlink(tmp); /* best effort: a stale .tmp is harmless */
	free(tmp);
	return rc;
}

static int parse(const struct vrt_cmd *self, int argc, char **argv,
                 struct settings *s, struct vrt_optstate *st)
{
	int id;

	st->argc = argc;
	st->argv = argv;
	while ((id = vrt_main_getopt(st, options, self)) > 0) {
		switch (id) {
		case OPT_FORMAT:
			if (!strcmp(st->arg, "text"))
				s->format = FMT_TEXT;
			else if (!strcmp(st->arg, "json"))
				s->format = FMT_JSON;
			else
				return vrt_main_usage_error(
				        self,
				        "unknown format '%s' (text or json)",
				        st->arg);
			break;
		case OPT_OUTPUT:
			s->output = st->arg;
			break;
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

int vrt_cmd_analyze_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {FMT_TEXT, NULL, NULL, 0};
	struct vrt_optstate st;
	struct vrt_trace t;
	struct vrt_replay r;
	struct vrt_load_error *err = NULL;
	size_t i;
	int rc;

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
	if (vrt_load_paths(&t, s.paths, (size_t)s.npaths, err)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	}
	for (i = 0; i < t.nskipped; i++)
		fprintf(stderr,
		        "vramtrace: warning: %s; skipped (the process died "
		        "before its first flush)\n",
		        t.skipped[i]);
	for (i = 0; i < t.nprocs; i++)
		if (t.procs[i].truncated)
			fprintf(stderr,
			        "vramtrace: warning: %s: truncated at byte "
			        "%lld: %s\n",
			        t.procs[i].path,
			        (long long)t.procs[i].trunc_offset,
			        t.procs[i].trunc_reason);
	if (vrt_replay_run(&r, &t)) {
		fprintf(stderr,
		        "vramtrace: error: %s: out of memory while "
		        "replaying\n",
		        s.paths[0]);
		goto out;
	}
	rc = write_report(&s, &t, &r);
out:
	vrt_replay_free(&r);
	vrt_load_free(&t);
	free(err);
	free(st.pos);
	return rc;
}
