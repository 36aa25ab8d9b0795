/*
 * run.c — the one streaming pass (load -> attribute -> replay, in batches)
 * every command runs; loading one run that way for the commands that put
 * several runs side by side (compare, table); writing a report file
 * atomically. The steps and messages are analyze's: a file that fails to
 * load is a data error naming the file and byte; skipped and truncated
 * files are warnings, and the rest of the run is still reported.
 * Single-threaded; no globals.
 */
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attrib.h"
#include "cmd.h"
#include "rules.h"

int vrt_run_pass(struct vrt_trace *t, const struct vrt_rules *rules,
                 struct vrt_replay *r, struct vrt_load_error *err)
{
	struct vrt_event *batch = malloc(VRT_RUN_BATCH * sizeof(*batch));
	struct vrt_attrib *a = vrt_attrib_new(t, rules);
	int rc = VRT_RUN_PASS_NOMEM;
	size_t n;

	if (!batch || !a || vrt_replay_begin(r, t))
		goto out;
	for (;;) {
		if (vrt_load_next(t, batch, VRT_RUN_BATCH, &n, err)) {
			rc = VRT_RUN_PASS_LOAD;
			goto out;
		}
		if (!n)
			break;
		if (vrt_attrib_feed(a, t, batch, n) ||
		    vrt_replay_feed(r, t, batch, n))
			goto out;
	}
	if (vrt_replay_end(r, t))
		goto out;
	rc = VRT_RUN_PASS_OK;
out:
	vrt_attrib_free(a);
	free(batch);
	return rc;
}

int vrt_run_open(struct vrt_run *run, const char *path,
                 const struct vrt_rules *rules, size_t top_sites)
{
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	char *paths[1];
	int rc = -1;

	run->label = path;
	if (!err) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n", path);
		return -1;
	}
	/* vrt_load_open takes char *const *: it never writes the strings. */
	paths[0] = (char *)path;
	if (vrt_load_open(&run->t, paths, 1, err)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	}
	run->r.top_sites = top_sites;
	switch (vrt_run_pass(&run->t, rules, &run->r, err)) {
	case VRT_RUN_PASS_OK:
		break;
	case VRT_RUN_PASS_LOAD:
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	default:
		fprintf(stderr,
		        "vramtrace: error: %s: out of memory while "
		        "replaying\n",
		        path);
		goto out;
	}
	/* Truncation is known once the stream has ended. */
	vrt_run_warn(&run->t);
	rc = 0;
out:
	free(err);
	return rc;
}

void vrt_run_warn(const struct vrt_trace *t)
{
	size_t i;

	for (i = 0; i < t->nskipped; i++)
		fprintf(stderr,
		        "vramtrace: warning: %s; skipped (the process died "
		        "before its first flush)\n",
		        t->skipped[i]);
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].truncated)
			fprintf(stderr,
			        "vramtrace: warning: %s: truncated at byte "
			        "%lld: %s\n",
			        t->procs[i].path,
			        (long long)t->procs[i].trunc_offset,
			        t->procs[i].trunc_reason);
}

void vrt_run_close(struct vrt_run *run)
{
	vrt_replay_free(&run->r);
	vrt_load_free(&run->t);
}

struct vrt_rules *vrt_run_read_rules(const char *path)
{
	struct vrt_load_error *err = calloc(1, sizeof(*err));
	struct vrt_rules *rules = NULL;
	char *text = NULL, msg[512];
	size_t len = 0;

	if (!err) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n", path);
		return NULL;
	}
	if (vrt_load_text(path, &text, &len, err)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", err->path,
		        err->msg);
		goto out;
	}
	rules = vrt_rules_new_builtin();
	if (!rules) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n", path);
		goto out;
	}
	msg[0] = '\0';
	if (vrt_rules_parse(rules, text, len, path, msg, sizeof(msg)) < 0) {
		fprintf(stderr, "vramtrace: error: %s\n",
		        msg[0] ? msg : "rules file does not parse");
		vrt_rules_free(rules);
		rules = NULL;
	}
out:
	free(text);
	free(err);
	return rules;
}

int vrt_run_write(const char *output, int (*fn)(FILE *f, const void *ctx),
                  const void *ctx)
{
	FILE *f = stdout;
	char *tmp = NULL;
	int rc = VRT_EXIT_FAIL, saved;

	if (output) {
		if (asprintf(&tmp, "%s.tmp", output) < 0) {
			tmp = NULL;
			fprintf(stderr, "vramtrace: error: %s: out of memory\n",
			        output);
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
	if (fn(f, ctx)) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n",
		        output ? tmp : "stdout");
		goto out;
	}
	if (fflush(f) || ferror(f)) {
		saved = errno;
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output ? tmp : "stdout", strerror(saved));
		goto out;
	}
	if (!output) {
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
	if (saved || rename(tmp, output)) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		goto out;
	}
	rc = VRT_EXIT_OK;
out:
	if (output && f)
		fclose(f);
	if (tmp && rc)
		unlink(tmp); /* best effort: a stale .tmp is harmless */
	free(tmp);
	return rc;
}
