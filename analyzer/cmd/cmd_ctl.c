/*
 * cmd_ctl.c — `vramtrace ctl DIR|PID start|stop|mark LABEL|flush|status
 * [--json]`: controls traced processes while they run (turn recording on
 * for a load test, tag its steps with marks, ask what they hold).
 *
 * DIR reaches every "<pid>.ctl" of a run directory; a socket nobody
 * listens on any more (its process is gone) is noted and skipped. PID
 * reaches one process through its run directory (ctl.h). Prints one line
 * per process, "pid N: ANSWER"; status answers are summarised (or printed
 * raw with --json). Exits 0 when every reachable process answered "ok" (or
 * a status), 1 when one did not or none was reachable, 2 on usage errors.
 * Single-threaded.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "control_proto.h"
#include "record/ctl.h"
#include "base/text.h"

struct settings {
	const char *target; /* DIR or PID */
	char line[VRT_CONTROL_LINE_MAX]; /* the command line sent, as long
	                                  * as the server reads one */
	int status;         /* the command is status */
	int json;           /* --json: status answers as they came */
};

enum { OPT_JSON = VRT_OPT_OWN };

static const struct vrt_option options[] = {
        {"json", 0, 0, OPT_JSON},
        VRT_OPTION_END,
};

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	struct settings *s = settings;

	(void)self;
	(void)arg;
	if (id == OPT_JSON)
		s->json = 1;
	return 0;
}

/* The target and the command from the positionals; 0 or VRT_EXIT_USAGE. */
static int parse_command(const struct vrt_cmd *self, struct settings *s,
                         const struct vrt_optstate *st)
{
	const char *cmd;
	size_t len = 0;
	int i;

	if (st->npos < 2)
		return vrt_main_usage_error(self, st->npos ? "no command given"
		                                           : "no run given");
	s->target = st->pos[0];
	cmd = st->pos[1];
	if (!strcmp(cmd, VRT_CONTROL_MARK)) {
		if (st->npos < 3)
			return vrt_main_usage_error(self, "mark needs a label");
		/* The words of the label, joined by spaces. */
		len = (size_t)snprintf(s->line, sizeof(s->line), "%s",
		                       VRT_CONTROL_MARK);
		for (i = 2; i < st->npos; i++) {
			if (strpbrk(st->pos[i], "\n\r"))
				return vrt_main_usage_error(
				        self, "a label is one line");
			len += (size_t)snprintf(s->line + len,
			                        len < sizeof(s->line)
			                                ? sizeof(s->line) - len
			                                : 0,
			                        " %s", st->pos[i]);
		}
		if (len >= sizeof(s->line) - 1)
			return vrt_main_usage_error(
			        self, "label too long (a command is at most %d "
			              "bytes with its newline)",
			        VRT_CONTROL_LINE_MAX);
		return VRT_EXIT_OK;
	}
	if (strcmp(cmd, VRT_CONTROL_START) && strcmp(cmd, VRT_CONTROL_STOP) &&
	    strcmp(cmd, VRT_CONTROL_FLUSH) && strcmp(cmd, VRT_CONTROL_STATUS))
		return vrt_main_usage_error(self,
		                            "unknown command '%s' (start, "
		                            "stop, mark, flush, status)",
		                            cmd);
	if (st->npos > 2)
		return vrt_main_usage_error(self, "%s takes no arguments", cmd);
	snprintf(s->line, sizeof(s->line), "%s", cmd);
	s->status = !strcmp(cmd, VRT_CONTROL_STATUS);
	return VRT_EXIT_OK;
}

static void print_status(uint64_t pid, const struct vrt_ctl_status *st)
{
	char b[32];
	size_t i, k;

	printf("pid %" PRIu64 ": %s", pid,
	       st->recording ? "recording" : "standby (not recording)");
	printf(", %" PRIu64 " events", st->events);
	if (st->dropped)
		printf(" (%" PRIu64 " dropped)", st->dropped);
	printf(", %" PRIu64 " in flight, %" PRIu64 " OOM%s", st->inflight,
	       st->ooms, st->ooms == 1 ? "" : "s");
	if (st->trace[0]) {
		printf(", trace ");
		vrt_text_put_safe(stdout, st->trace, SIZE_MAX);
	}
	putchar('\n');
	for (i = 0; i < st->ndev; i++) {
		const struct vrt_ctl_device *d = &st->dev[i];
		printf("  dev %" PRId64 " (", d->id);
		vrt_text_put_safe(stdout, d->vendor[0] ? d->vendor : "?",
		                  SIZE_MAX);
		printf("): %s live",
		       vrt_text_bytes(b, sizeof(b), d->live_bytes, 2));
		for (k = 0; k < d->nphases; k++) {
			if (!d->phases[k].bytes)
				continue;
			printf("%s", k ? ", " : ": ");
			vrt_text_put_safe(stdout, d->phases[k].name, SIZE_MAX);
			printf(" %s", vrt_text_bytes(b, sizeof(b),
			                             d->phases[k].bytes, 2));
		}
		putchar('\n');
	}
	if (st->pinned_bytes)
		printf("  pinned host memory: %s\n",
		       vrt_text_bytes(b, sizeof(b), st->pinned_bytes, 2));
}

/* Sends the command to one process; returns 1 answered ok, 0 gone, -1
 * failed (its line printed either way). */
static int one(const struct settings *s, const struct vrt_ctl_target *x)
{
	struct vrt_ctl_status st;
	enum vrt_ctl_result res;
	char *answer = NULL, err[256];
	const size_t ok_len = sizeof(VRT_CONTROL_OK) - 1;
	int rc = -1;

	res = vrt_ctl_request(x->path, s->line, VRT_CTL_TIMEOUT_MS, &answer,
	                      err, sizeof(err));
	if (res == VRT_CTL_GONE) {
		printf("pid %" PRIu64 ": gone\n", x->pid);
		return 0;
	}
	if (res != VRT_CTL_ANSWERED) {
		printf("pid %" PRIu64 ": error %s\n", x->pid, err);
		return -1;
	}
	if (s->status && answer[0] == '{') {
		if (s->json) {
			printf("%s\n", answer);
			rc = 1;
		} else if (vrt_ctl_parse_status(answer, &st, err,
		                                sizeof(err))) {
			printf("pid %" PRIu64 ": error %s\n", x->pid, err);
		} else {
			print_status(x->pid, &st);
			rc = 1;
		}
	} else {
		printf("pid %" PRIu64 ": ", x->pid);
		vrt_text_put_safe(stdout, answer, SIZE_MAX);
		putchar('\n');
		rc = !strncmp(answer, VRT_CONTROL_OK, ok_len) &&
		                     (answer[ok_len] == '\0' ||
		                      answer[ok_len] == ' ')
		             ? 1
		             : -1;
	}
	free(answer);
	return rc;
}

/* 1 when dir is a run directory that holds traces: with nothing left
 * to answer, its run has ended. */
static int has_traces(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int found = 0;

	while (d && !found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		found = n > 7 && !strcmp(de->d_name + n - 7, ".vtrace");
	}
	if (d)
		closedir(d);
	return found;
}

/* The sockets named by the target: a run directory's, or a pid's. */
static int find_targets(const char *target, struct vrt_ctl_target **v,
                        size_t *n)
{
	struct stat sb;
	char err[256], dir[4096];
	const char *p;
	uint64_t pid = 0;

	if (stat(target, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		if (vrt_ctl_list_dir(target, v, n, err, sizeof(err))) {
			fprintf(stderr, "vramtrace: error: %s: %s\n", target,
			        err);
			return -1;
		}
		return 0;
	}
	for (p = target; *p >= '0' && *p <= '9' && pid < UINT64_MAX / 10; p++)
		pid = pid * 10 + (uint64_t)(*p - '0');
	if (*p || !pid) {
		fprintf(stderr,
		        "vramtrace: error: %s: neither a run directory nor a "
		        "process id\n",
		        target);
		return -1;
	}
	if (vrt_ctl_run_dir(pid, dir, sizeof(dir), err, sizeof(err))) {
		fprintf(stderr, "vramtrace: error: pid %" PRIu64 ": %s\n", pid,
		        err);
		return -1;
	}
	*v = calloc(1, sizeof(**v));
	if (!*v) {
		fprintf(stderr, "vramtrace: error: out of memory\n");
		return -1;
	}
	(*v)->pid = pid;
	*n = 1;
	if ((size_t)snprintf((*v)->path, sizeof((*v)->path),
	                     "%s/%" PRIu64 VRT_CONTROL_SUFFIX, dir,
	                     pid) >= sizeof((*v)->path)) {
		fprintf(stderr, "vramtrace: error: pid %" PRIu64 ": %s\n", pid,
		        "run directory path too long");
		return -1;
	}
	return 0;
}

int vrt_cmd_ctl_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s;
	struct vrt_optstate st;
	struct vrt_ctl_target *v = NULL;
	size_t n = 0, i, reached = 0, failed = 0;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	if (vrt_main_parse(self, argc, argv, options, NULL, own_option, &s, &st,
	                   &rc))
		goto out;
	rc = parse_command(self, &s, &st);
	if (rc)
		goto out;
	rc = VRT_EXIT_FAIL;
	if (find_targets(s.target, &v, &n))
		goto out;
	for (i = 0; i < n; i++) {
		int r = one(&s, &v[i]);
		reached += r != 0;
		failed += r < 0;
	}
	fflush(stdout);
	if (!reached) {
		if (has_traces(s.target))
			fprintf(stderr,
			        "vramtrace: error: %s: this run has ended: no "
			        "traced process of it is running (analyze it: "
			        "vramtrace analyze %s)\n",
			        s.target, s.target);
		else
			fprintf(stderr,
			        "vramtrace: error: %s: no traced process %s\n",
			        s.target,
			        n ? "answered" : "has a control socket");
		goto out;
	}
	rc = failed ? VRT_EXIT_FAIL : VRT_EXIT_OK;
out:
	free(v);
	free(st.pos);
	return rc;
}
