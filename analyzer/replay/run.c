/*
 * run.c — the one streaming pass (load -> attribute -> replay, in batches)
 * every command runs; loading one run that way for the commands that put
 * several runs side by side (compare, table); writing a report file
 * atomically. The steps and messages are analyze's: a file that fails to
 * load is a data error naming the file and byte; skipped and truncated
 * files are warnings, and the rest of the run is still reported.
 *
 * Reports (vrt_run_write, for every command's -o): a new path or a
 * regular file is written as FILE.tmp.XXXXXX (0600: a report holds the
 * full command line, like the trace), synced and renamed over FILE, so a
 * reader never sees half a report. An existing FIFO, character or block
 * device or socket is written directly and never replaced or unlinked
 * (`-o /dev/null` must leave /dev/null a device, and a FIFO's reader
 * must get the report); "-" is standard output. Single-threaded; no
 * globals.
 */
#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "attrib.h"
#include "cmd/cmd.h"
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

/* An existing FIFO, device or socket, opened for writing as it is: no
 * O_CREAT, no O_TRUNC, never replaced. A FIFO waits for its reader, as a
 * shell's redirection would. NULL after printing the error. */
static FILE *open_direct(const char *output, const struct stat *st)
{
	int fd;
	FILE *f;

	if (S_ISSOCK(st->st_mode)) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		if (strlen(output) >= sizeof(a.sun_path)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot write: socket "
			        "path too long\n",
			        output);
			return NULL;
		}
		memcpy(a.sun_path, output, strlen(output) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			int e = errno;
			close(fd);
			fd = -1;
			errno = e;
		}
	} else {
		fd = open(output, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		close(fd);
	}
	return f;
}

/* FILE.tmp.XXXXXX, created 0600 with O_EXCL: a stale one from a crash
 * never blocks the next write, and nobody else's file is reused. */
static FILE *open_tmp(const char *output, char **tmp)
{
	int fd;
	FILE *f;

	if (asprintf(tmp, "%s.tmp.XXXXXX", output) < 0) {
		*tmp = NULL;
		fprintf(stderr, "vramtrace: error: %s: out of memory\n",
		        output);
		return NULL;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		/* Name what the user gave (and its directory when that is
		 * what is missing), not the temporary file. */
		int e = errno;
		char *slash = strrchr(output, '/');
		if (e == ENOENT || e == ENOTDIR)
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %.*s %s\n",
			        output,
			        slash ? (int)(slash - output + (slash == output))
			              : 1,
			        slash ? output : ".",
			        e == ENOENT ? "does not exist"
			                    : "is not a directory");
		else
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %s\n",
			        output, strerror(e));
		free(*tmp);
		*tmp = NULL;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "vramtrace: error: %s: cannot create: %s\n",
		        *tmp, strerror(errno));
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
	}
	return f;
}

int vrt_run_write(const char *output, int (*fn)(FILE *f, const void *ctx),
                  const void *ctx)
{
	FILE *f = stdout;
	char *tmp = NULL;
	const char *name = "stdout";
	int rc = VRT_EXIT_FAIL, saved, direct = 0;
	struct stat st;

	if (output && !strcmp(output, "-"))
		output = NULL;
	if (output) {
		name = output;
		direct = stat(output, &st) == 0 && !S_ISREG(st.st_mode);
		if (direct && S_ISDIR(st.st_mode)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot write: is a "
			        "directory\n",
			        output);
			return VRT_EXIT_FAIL;
		}
		f = direct ? open_direct(output, &st) : open_tmp(output, &tmp);
		if (!f)
			return VRT_EXIT_FAIL;
		if (tmp)
			name = tmp;
	}
	if (fn(f, ctx)) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n", name);
		goto out;
	}
	if (fflush(f) || ferror(f)) {
		saved = errno;
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        name, strerror(saved));
		goto out;
	}
	if (!tmp) {
		/* stdout, or a device, FIFO or socket written in place: no
		 * sync (they have nothing to sync), no rename. */
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
	if (output && f && fclose(f) && !rc) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        name, strerror(errno));
		rc = VRT_EXIT_FAIL;
	}
	if (tmp && rc)
		unlink(tmp); /* best effort: a stale .tmp is harmless */
	free(tmp);
	return rc;
}
