/*
 * cmd_record.c — `vramtrace record [-o DIR] -- CMD...`
 *
 * Finds libvramtrace.so, creates the run directory, runs CMD with
 * LD_PRELOAD and VRAMTRACE_OUT set, waits for it like a shell does, writes
 * "<DIR>/<pid>.exit" and exits with CMD's status.
 *
 * Signals: while CMD runs, SIGINT and SIGQUIT are ignored here (the
 * terminal sends them to CMD too, and CMD decides); SIGTERM and SIGHUP are
 * forwarded to CMD, since they are usually sent to this process alone.
 * They are blocked around fork so the handler never sees a child pid of 0;
 * the child restores default dispositions and the mask before exec, since
 * both survive exec. A CLOEXEC pipe tells the parent when exec failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "vramtrace/trace_format.h"

#ifndef VRT_INSTALL_LIBDIR
#define VRT_INSTALL_LIBDIR "/usr/local/lib"
#endif

#define PRELOAD_NAME "libvramtrace.so"

struct settings {
	const char *outdir; /* -o, or NULL */
	char **cmd;
	int ncmd;
};

enum { OPT_OUTPUT = 1 };

static const struct vrt_option options[] = {
        {"output", 'o', 1, OPT_OUTPUT},
        {NULL, 0, 0, 0},
};

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	int saved = errno;
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
	errno = saved;
}

/* Finds the library to preload; fills path (PATH_MAX bytes) with its
 * absolute path, or prints why not. */
static int find_preload(char *path)
{
	const char *env = getenv("VRAMTRACE_PRELOAD");
	char self[PATH_MAX], cand[PATH_MAX + 64], inst[PATH_MAX];
	ssize_t len;
	char *slash;

	if (env && *env) {
		if (access(env, R_OK) || !realpath(env, path)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot use "
			        "VRAMTRACE_PRELOAD: %s\n",
			        env, strerror(errno));
			return -1;
		}
		return 0;
	}
	cand[0] = '\0';
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len > 0) {
		self[len] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(cand, sizeof(cand), "%s/../preload/%s", self,
			         PRELOAD_NAME);
			if (!access(cand, R_OK) && realpath(cand, path))
				return 0;
		}
	}
	snprintf(inst, sizeof(inst), "%s/%s", VRT_INSTALL_LIBDIR, PRELOAD_NAME);
	if (!access(inst, R_OK) && realpath(inst, path))
		return 0;
	fprintf(stderr,
	        "vramtrace: error: %s: not found: looked in %s%s%s; set "
	        "VRAMTRACE_PRELOAD to its path\n",
	        PRELOAD_NAME, cand[0] ? cand : "", cand[0] ? " and " : "",
	        inst);
	return -1;
}

/* 1 if dir holds *.vtrace files, 0 if not, -1 on error. */
static int has_traces(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t m = strlen(VRT_TRACE_SUFFIX);
	int found = 0;

	if (!d)
		return -1;
	while (!found && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		found = n > m && !strcmp(de->d_name + n - m, VRT_TRACE_SUFFIX);
	}
	closedir(d);
	return found;
}

/* Creates the run directory; *created says whether it is new. */
static int make_rundir(const struct settings *s, char *dir, size_t n,
                       int *created)
{
	const char *want = s->outdir ? s->outdir : getenv("VRAMTRACE_OUT");
	struct stat st;

	*created = 0;
	if (want && *want) {
		snprintf(dir, n, "%s", want);
		if (!mkdir(dir, 0700)) {
			*created = 1;
			return 0;
		}
		if (errno != EEXIST || stat(dir, &st) || !S_ISDIR(st.st_mode)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create run "
			        "directory: %s\n",
			        dir,
			        errno == EEXIST ? "not a directory"
			                        : strerror(errno));
			return -1;
		}
		switch (has_traces(dir)) {
		case 0:
			return 0;
		case 1:
			fprintf(stderr,
			        "vramtrace: error: %s: cannot record: the "
			        "directory already holds traces; choose "
			        "another -o DIR\n",
			        dir);
			return -1;
		default:
			fprintf(stderr,
			        "vramtrace: error: %s: cannot list: %s\n", dir,
			        strerror(errno));
			return -1;
		}
	} else {
		char base[64];
		time_t now = time(NULL);
		struct tm tm;
		int i;

		localtime_r(&now, &tm);
		strftime(base, sizeof(base), "vramtrace-run-%Y%m%d-%H%M%S",
		         &tm);
		for (i = 1; i < 1000; i++) {
			if (i == 1)
				snprintf(dir, n, "%s", base);
			else
				snprintf(dir, n, "%s-%d", base, i);
			if (!mkdir(dir, 0700)) {
				*created = 1;
				return 0;
			}
			if (errno != EEXIST)
				break;
		}
		fprintf(stderr,
		        "vramtrace: error: %s: cannot create run directory: "
		        "%s\n",
		        dir, strerror(errno));
		return -1;
	}
}

static int set_env(const char *lib, const char *absdir)
{
	const char *prev = getenv("LD_PRELOAD");
	char *v = NULL;
	int r;

	if (prev && *prev)
		r = asprintf(&v, "%s:%s", lib, prev);
	else
		r = asprintf(&v, "%s", lib);
	if (r < 0)
		return -1;
	r = setenv("LD_PRELOAD", v, 1) || setenv("VRAMTRACE_OUT", absdir, 1);
	free(v);
	return r ? -1 : 0;
}

static void write_exit_file(const char *dir, pid_t pid, int status)
{
	char path[PATH_MAX + 32], line[32];
	int fd, n;

	snprintf(path, sizeof(path), "%s/%d.exit", dir, (int)pid);
	if (WIFSIGNALED(status))
		n = snprintf(line, sizeof(line), "signal %d\n",
		             WTERMSIG(status));
	else
		n = snprintf(line, sizeof(line), "exit %d\n",
		             WEXITSTATUS(status));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	          0600);
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		/* The report then shows the exit status as unknown; the
		 * traces themselves are intact, so this is a warning. */
		fprintf(stderr, "vramtrace: warning: %s: cannot write: %s\n",
		        path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

/* In the child: restore what exec inherits, exec, report errno. */
static void exec_child(char **cmd, int errfd, const sigset_t *mask)
{
	int e;

	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(cmd[0], cmd);
	e = errno;
	/* If this write fails the parent sees exit 127 without a reason. */
	if (write(errfd, &e, sizeof(e)) < 0)
		e = 0;
	_exit(e == ENOENT ? 127 : 126);
}

static int run(const struct settings *s)
{
	char lib[PATH_MAX], dir[PATH_MAX], absdir[PATH_MAX];
	struct sigaction sa, ign;
	sigset_t block, old;
	int created, pfd[2], status, e, rc;
	ssize_t r;
	pid_t pid;

	if (find_preload(lib))
		return VRT_EXIT_FAIL;
	if (strpbrk(lib, ": \t\n")) {
		fprintf(stderr,
		        "vramtrace: error: %s: cannot preload: LD_PRELOAD "
		        "cannot hold a path with ':' or spaces\n",
		        lib);
		return VRT_EXIT_FAIL;
	}
	if (make_rundir(s, dir, sizeof(dir), &created))
		return VRT_EXIT_FAIL;
	if (!realpath(dir, absdir) || set_env(lib, absdir)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", dir,
		        strerror(errno));
		return VRT_EXIT_FAIL;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		fprintf(stderr, "vramtrace: error: pipe: %s\n",
		        strerror(errno));
		return VRT_EXIT_FAIL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		exec_child(s->cmd, pfd[1], &old);
	}
	if (pid < 0) {
		e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "vramtrace: error: fork: %s\n", strerror(e));
		close(pfd[0]);
		close(pfd[1]);
		return VRT_EXIT_FAIL;
	}
	child_pid = pid;
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pfd[1]);
	do
		r = read(pfd[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "vramtrace: error: waitpid: %s\n",
			        strerror(errno));
			return VRT_EXIT_FAIL;
		}
	}
	child_pid = 0;
	if (r == (ssize_t)sizeof(e)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", s->cmd[0],
		        e == ENOENT ? "command not found" : strerror(e));
		/* Nothing ran: leave no empty run directory behind. */
		if (created)
			rmdir(dir);
		return e == ENOENT ? 127 : 126;
	}
	write_exit_file(dir, pid, status);
	fprintf(stderr,
	        "vramtrace: trace in %s (analyze with: vramtrace "
	        "analyze %s)\n",
	        dir, dir);
	if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = WEXITSTATUS(status);
	return rc;
}

int vrt_cmd_record_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {NULL, NULL, 0};
	struct vrt_optstate st;
	int id, rc;

	memset(&st, 0, sizeof(st));
	st.argc = argc;
	st.argv = argv;
	st.stop_at_positional = 1;
	while ((id = vrt_main_getopt(&st, options, self)) > 0)
		if (id == OPT_OUTPUT)
			s.outdir = st.arg;
	if (id == VRT_OPT_HELP) {
		rc = VRT_EXIT_OK;
	} else if (id == VRT_OPT_ERROR) {
		rc = VRT_EXIT_USAGE;
	} else if (st.nrest == 0) {
		rc = vrt_main_usage_error(self, "no command to record");
	} else {
		s.cmd = st.rest;
		s.ncmd = st.nrest;
		rc = run(&s);
	}
	free(st.pos);
	return rc;
}
