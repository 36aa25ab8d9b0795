/*
 * run.c — the one streaming pass (load -> attribute -> replay, in batches)
 * every command runs; loading one run that way for the commands that put
 * several runs side by side (compare, table). The steps and messages are
 * analyze's: a file that fails to load is a data error naming the file and
 * byte; skipped and truncated files are warnings, and the rest of the run
 * is still reported. Writing the report is the command's (cmd/write.c).
 * Single-threaded; no globals.
 */
#include "run.h"

#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "rules.h"
#include "load/textfile.h"

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

	/* The loader's note says which: a file that is not a regular one,
	 * or one whose process died before its first flush. */
	for (i = 0; i < t->nskipped; i++)
		fprintf(stderr, "vramtrace: warning: %s; skipped%s\n",
		        t->skipped[i],
		        strstr(t->skipped[i], ": not a regular file (")
		                ? ""
		                : " (the process died before its first "
		                  "flush)");
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].running)
			fprintf(stderr,
			        "vramtrace: warning: %s: still being written "
			        "(pid %llu is running): the analysis covers what it "
			        "has written so far\n",
			        t->procs[i].path,
			        (unsigned long long)t->procs[i].pid);
		else if (t->procs[i].truncated)
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
	if (vrt_textfile_read(path, &text, &len, err)) {
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
