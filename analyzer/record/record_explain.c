/*
 * record_explain.c — after `record`'s command has exited, say why its run
 * directory holds no trace (record_explain.h).
 *
 * The causes, tried in this order:
 *   1. VRAMTRACE_ENABLE set to a false value: tracing was off.
 *   2. The dynamic loader refused the preload. Its message goes to the
 *      command's stderr, so this executable is run once more (a probe:
 *      `vramtrace --version`) with the same environment — the same
 *      LD_PRELOAD and library path the command got — and tracing off, its
 *      output read through a pipe within PROBE_MS; what the loader says
 *      there is about the preload alone, since this executable itself
 *      runs. DIR/output.log, when the run kept the command's output, is
 *      read too: a complaint there that names the preload counts as the
 *      preload's, any other one is named as the command's.
 *   3. --standby, and no `ctl start` came: nothing was to be written.
 *   4. Otherwise no traced process made a GPU memory call: the command and
 *      its exit status are named (127 and 126 with a shell's meaning).
 *
 * The loader's messages (glibc's elf/ code) look like:
 *   prog: error while loading shared libraries: libx.so.1: cannot open
 *         shared object file: No such file or directory
 *   prog: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found
 *         (required by /opt/vramtrace/lib/vramtrace/libvramtrace.so)
 *   ERROR: ld.so: object 'lib' from LD_PRELOAD cannot be preloaded (wrong
 *         ELF class: ELFCLASS32): ignored.
 *   prog: symbol lookup error: obj: undefined symbol: name
 *
 * Single-threaded; the probe is a child of ours, waited for by pid.
 */
#include "record_explain.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "logcap.h"
#include "load/readfile.h"
#include "vramtrace/trace_format.h"

#ifndef VRT_GLIBC_MIN
#define VRT_GLIBC_MIN "2.34"
#endif

#define PROBE_MS     5000
#define PROBE_MAX    8192
#define LOG_SCAN_MAX (16u << 20) /* bytes of output.log read at most */
#define WHY_MAX      1024

/* The text between after and the next stop within [s, end), copied into
 * out (n bytes); 0 when either is missing. */
static int between(const char *s, const char *end, const char *after,
                   const char *stop, char *out, size_t n)
{
	size_t la = strlen(after), ls = strlen(stop);
	const char *a = NULL, *b = NULL;

	for (const char *p = s; p + la <= end; p++)
		if (!memcmp(p, after, la)) {
			a = p + la;
			break;
		}
	if (!a)
		return 0;
	for (const char *p = a; p + ls <= end; p++)
		if (!memcmp(p, stop, ls)) {
			b = p;
			break;
		}
	if (!b)
		return 0;
	snprintf(out, n, "%.*s", (int)(b - a), a);
	return 1;
}

/* One line of output, [s, end): fills why when it is a loader complaint
 * (about preload, when it is not NULL and the loader names the object). */
static int loader_line(const char *s, const char *end, const char *preload,
                       char *why, size_t n)
{
	char a[512], b[512], c[512];
	const char *tail = end;

	static const char elsl[] = "error while loading shared libraries: ";

	if (between(s, end, elsl, ": ", a, sizeof(a))) {
		const char *err = strstr(s, elsl) + sizeof(elsl) - 1;
		snprintf(why, n, "the loader cannot %s %s (\"%.*s\")",
		         strstr(err, "cannot open shared object file") ? "find"
		                                                       : "load",
		         a, (int)(tail - err), err);
		return 1;
	}
	if (between(s, end, "version `", "' not found", a, sizeof(a)) &&
	    between(s, end, "(required by ", ")", b, sizeof(b))) {
		/* The file lacking the version comes before ": version". */
		const char *v = strstr(s, ": version `");
		const char *f = v;
		while (f > s && f[-1] != ' ')
			f--;
		snprintf(c, sizeof(c), "%.*s", v ? (int)(v - f) : 0, f);
		if (!strncmp(a, "GLIBC_", 6))
			snprintf(
			        why, n,
			        "%s needs glibc %s or newer, and the C library "
			        "here (%s) is older: version `%s' not found",
			        b, a + 6, c[0] ? c : "libc.so.6", a);
		else
			snprintf(why, n,
			         "%s needs version %s of %s, which that file "
			         "lacks",
			         b, a, c[0] ? c : "a library");
		return 1;
	}
	if (between(s, end, "object '", "' from ", a, sizeof(a)) &&
	    between(s, end, "cannot be preloaded (", "): ignored", b,
	            sizeof(b))) {
		/* Another entry of LD_PRELOAD, ignored: not why we have no
		 * trace. */
		if (preload && strcmp(a, preload))
			return 0;
		snprintf(why, n, "the loader ignored %s: %s", a, b);
		return 1;
	}
	if (between(s, end, "symbol lookup error: ", ": undefined symbol: ", a,
	            sizeof(a))) {
		const char *u = strstr(s, ": undefined symbol: ") + 20;
		snprintf(why, n, "%s: undefined symbol %.*s", a,
		         (int)(tail - u), u);
		return 1;
	}
	return 0;
}

int vrt_record_explain_loader(const char *text, size_t len, const char *preload,
                              char *why, size_t n)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		/* between() and strstr() above need a NUL-free line that
		 * ends before the buffer does: copy it. */
		char line[2048];
		size_t l = (size_t)(le - p) < sizeof(line) - 1
		                   ? (size_t)(le - p)
		                   : sizeof(line) - 1;
		memcpy(line, p, l);
		line[l] = '\0';
		if (strlen(line) == l &&
		    loader_line(line, line + l, preload, why, n))
			return 1;
		p = le + 1;
	}
	return 0;
}

/* Traces in dir: 1 some, 0 none, -1 unreadable. */
static int count_traces(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t m = strlen(VRT_TRACE_SUFFIX);
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		if (l > m && !strcmp(de->d_name + l - m, VRT_TRACE_SUFFIX))
			n++;
	}
	closedir(d);
	return n > 0;
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Runs this executable (`--version`) with the command's environment and
 * tracing off; what it printed goes to out. 0, or -1 if it could not run. */
static int probe(char *out, size_t n, size_t *len)
{
	int pfd[2], status;
	long long deadline = now_ms() + PROBE_MS;
	pid_t pid;

	*len = 0;
	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		dup2(pfd[1], STDERR_FILENO);
		setenv("VRAMTRACE_ENABLE", "0", 1);
		execl("/proc/self/exe", "vramtrace", "--version", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		long long left = deadline - now_ms();
		struct pollfd p = {.fd = pfd[0], .events = POLLIN};
		ssize_t r;
		char sink[512];

		if (left <= 0 || poll(&p, 1, (int)left) == 0)
			break;
		if (*len + 1 < n)
			r = read(pfd[0], out + *len, n - 1 - *len);
		else
			r = read(pfd[0], sink, sizeof(sink));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (*len + 1 < n)
			*len += (size_t)r;
	}
	close(pfd[0]);
	/* Still running past the deadline: it is our own child. */
	if (waitpid(pid, &status, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	out[*len] = '\0';
	return 0;
}

/* The first loader complaint in DIR/output.log (record's copy of the
 * command's output, logcap.h): 1 and why filled when it names the
 * preload, 2 when it is about something else, 0 none (or no log: --no-log,
 * or a log that is not a regular file any more, never waited on). */
static int scan_log(const char *dir, const char *preload, char *why, size_t n)
{
	char path[4096], line[2048], err[128];
	size_t total = 0;
	FILE *f;
	int fd, rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, VRT_LOGCAP_NAME);
	fd = vrt_readfile_open(path, err, sizeof(err));
	if (fd < 0)
		return 0;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	while (total < LOG_SCAN_MAX && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		total += l;
		if (vrt_record_explain_loader(line, l, preload, why, n)) {
			rc = strstr(line, preload) ? 1 : 2;
			break;
		}
	}
	fclose(f);
	return rc;
}

static const char *command_line(char *const *cmd, char *out, size_t n)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; cmd[i] && used + 1 < n; i++) {
		int k = snprintf(out + used, n - used, "%s%s", i ? " " : "",
		                 cmd[i]);
		if (k < 0)
			break;
		used += (size_t)k;
	}
	if (used >= n && n > 4)
		strcpy(out + n - 4, "...");
	return out;
}

static int env_false(const char *v)
{
	return v && (!strcmp(v, "0") || !strcasecmp(v, "no") ||
	             !strcasecmp(v, "false") || !strcasecmp(v, "off"));
}

int vrt_record_explain_print(const struct vrt_record_outcome *o)
{
	char why[WHY_MAX], out[PROBE_MAX], cmd[512], st[64];
	const char *enable = getenv("VRAMTRACE_ENABLE");
	size_t len;
	int t = count_traces(o->dir), logged;

	if (t > 0)
		return 1;
	if (t < 0) {
		fprintf(stderr,
		        "vramtrace: error: %s: cannot list the run "
		        "directory: %s\n",
		        o->dir, strerror(errno));
		return 0;
	}
	if (env_false(enable)) {
		fprintf(stderr,
		        "vramtrace: error: %s: no trace: VRAMTRACE_ENABLE=%s "
		        "turned tracing off\n",
		        o->dir, enable);
		return 0;
	}
	if (!probe(out, sizeof(out), &len) &&
	    vrt_record_explain_loader(out, len, o->preload, why, sizeof(why))) {
		fprintf(stderr,
		        "vramtrace: error: %s: no trace: the preload %s could "
		        "not be loaded: %s; %s\n",
		        o->dir, o->preload, why,
		        strstr(why, "needs glibc")
		                ? "vramtrace needs glibc " VRT_GLIBC_MIN
		                  " or newer"
		                : "the portable bundle needs nothing but "
		                  "glibc " VRT_GLIBC_MIN " (docs/deploy.md)");
		return 0;
	}
	logged = scan_log(o->dir, o->preload, why, sizeof(why));
	if (logged == 1) {
		fprintf(stderr,
		        "vramtrace: error: %s: no trace: the preload %s could "
		        "not be loaded in the command: %s (from %s/%s)\n",
		        o->dir, o->preload, why, o->dir, VRT_LOGCAP_NAME);
		return 0;
	}
	if (logged == 2) {
		fprintf(stderr,
		        "vramtrace: error: %s: no trace: a program of the "
		        "command could not start: %s (from %s/%s)\n",
		        o->dir, why, o->dir, VRT_LOGCAP_NAME);
		return 0;
	}
	if (o->standby) {
		fprintf(stderr,
		        "vramtrace: error: %s: no trace: recording stayed in "
		        "standby (--standby) and no `vramtrace ctl %s start` "
		        "came\n",
		        o->dir, o->dir);
		return 0;
	}
	if (WIFSIGNALED(o->status))
		snprintf(st, sizeof(st), "was killed by signal %d",
		         WTERMSIG(o->status));
	else
		snprintf(st, sizeof(st), "exited with status %d%s",
		         WEXITSTATUS(o->status),
		         WEXITSTATUS(o->status) == 127
		                 ? " (a shell's \"command not found\")"
		         : WEXITSTATUS(o->status) == 126
		                 ? " (a shell's \"not executable\")"
		                 : "");
	fprintf(stderr,
	        "vramtrace: error: %s: no trace: no process made a GPU memory "
	        "call; `%s` %s\n",
	        o->dir, command_line(o->cmd, cmd, sizeof(cmd)), st);
	return 0;
}
