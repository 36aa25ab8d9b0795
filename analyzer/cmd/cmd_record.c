/*
 * cmd_record.c — `vramtrace record [-o DIR] -- CMD...`
 *
 * Finds libvramtrace.so, creates the run directory, runs CMD with
 * LD_PRELOAD and VRAMTRACE_OUT set (and VRAMTRACE_ROOT, CMD's pid: the
 * preload then leaves CMD's trace at its exit even when CMD itself made no
 * GPU call), waits for it like a shell does, writes "<DIR>/<pid>.exit"
 * and exits with CMD's status.
 *
 * Process trees: servers start engine and worker processes, and a worker
 * whose parent dies is orphaned. record is a child subreaper
 * (PR_SET_CHILD_SUBREAPER), so every orphan of the tree becomes its child:
 * it reaps every process of the tree (waitid(P_ALL) with WNOWAIT first, to
 * read the name of the zombie, then waitpid), writes "<pid>.exit" for each
 * and, when the tree had more than CMD itself, lists every exit on stderr
 * at the end. After CMD exits, the rest of the tree gets --wait-children
 * seconds (default 10); what still runs then is listed and left running
 * (never killed), so a stray daemon cannot hang record.
 *
 * Output: CMD's stdout and stderr go through logcap.c, which copies them
 * to ours unchanged and keeps them, timestamped, in "<DIR>/output.log"
 * (bounded by --log-max; --no-log leaves them alone).
 *
 * Signals: while CMD runs, SIGINT and SIGQUIT are ignored here (the
 * terminal sends them to CMD too, and CMD decides); SIGTERM and SIGHUP are
 * forwarded to CMD, since they are usually sent to this process alone.
 * They are blocked around fork so the handler never sees a child pid of 0;
 * the child restores default dispositions and the mask before exec, since
 * both survive exec. A CLOEXEC pipe tells the parent when exec failed.
 *
 * An existing run directory is used only when it is ours, not a symlink
 * and writable by nobody else (rundir.h), the same rule the preload and
 * `ctl` apply.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "base/paths.h"
#include "record/record_explain.h"
#include "rundir.h"
#include "record/logcap.h"
#include "vramtrace/trace_format.h"

#define PRELOAD_NAME "libvramtrace.so"

struct settings {
	const char *outdir; /* -o, or NULL */
	int wait_children;  /* --wait-children: seconds, after CMD exits */
	int standby;        /* --standby: start in standby (VRAMTRACE_START) */
	int redact;         /* --redact: VRAMTRACE_REDACT=1 */
	int no_log;         /* --no-log: no output.log */
	uint64_t log_max;   /* --log-max: bound of output.log, 0 default */
	char **cmd;
	int ncmd;
};

enum {
	OPT_OUTPUT = 1,
	OPT_WAIT_CHILDREN,
	OPT_STANDBY,
	OPT_REDACT,
	OPT_NO_LOG,
	OPT_LOG_MAX
};

#define WAIT_CHILDREN_DEFAULT 10
#define WAIT_CHILDREN_MAX     86400

static const struct vrt_option options[] = {
        {"output", 'o', 1, OPT_OUTPUT},
        {"wait-children", 0, 1, OPT_WAIT_CHILDREN},
        {"standby", 0, 0, OPT_STANDBY},
        {"redact", 0, 0, OPT_REDACT},
        {"no-log", 0, 0, OPT_NO_LOG},
        {"log-max", 0, 1, OPT_LOG_MAX},
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
 * absolute path, or prints why not (paths.h). */
static int find_preload(char *path)
{
	return vrt_paths_find_lib(PRELOAD_NAME, "VRAMTRACE_PRELOAD", path);
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

/* An existing run directory must be ours and writable by nobody else
 * (rundir.h): the preload would refuse it anyway, and another user who
 * can write there could swap traces or plant control sockets. It must not
 * be a symlink either (the preload opens it O_NOFOLLOW). 0, or -1 after
 * printing why. */
static int trust_rundir(const char *dir)
{
	char why[128];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr,
		        "vramtrace: error: %s: cannot record: %s\n", dir,
		        errno == ELOOP    ? "the run directory is a symlink"
		        : errno == ENOTDIR ? "not a directory"
		                           : strerror(errno));
		return -1;
	}
	if (vrt_rundir_check(fd, geteuid(), why, sizeof(why))) {
		fprintf(stderr,
		        "vramtrace: error: %s: cannot record: the run "
		        "directory is %s; use a directory of your own that "
		        "nobody else can write to (mode 0700)\n",
		        dir, why);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
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
		if (trust_rundir(dir))
			return -1;
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
	/* A traced parent that reaped the process wrote it already. */
	if (fd < 0 && errno == EEXIST)
		return;
	if (fd < 0 || write(fd, line, (size_t)n) != n) {
		/* The report then shows the exit status as unknown; the
		 * traces themselves are intact, so this is a warning. */
		fprintf(stderr, "vramtrace: warning: %s: cannot write: %s\n",
		        path, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
}

/* ---- the whole tree -------------------------------------------------- */

/* One process record reaped: what the end-of-run list says. */
struct reaped {
	pid_t pid;
	int status;
	char name[128];
};

struct tree {
	struct reaped *v;
	size_t n, cap;
};

/* What a process is called: CMD itself by its command line, others by
 * /proc/PID/comm (a zombie has no command line any more, but keeps that). */
static void proc_name(pid_t pid, pid_t main_pid, char *const *cmd, char *out,
                      size_t len)
{
	char path[64];
	int fd;
	ssize_t r = 0;

	out[0] = '\0';
	if (pid == main_pid) {
		size_t used = 0;
		for (int i = 0; cmd[i] && used + 1 < len; i++) {
			int k = snprintf(out + used, len - used, "%s%s",
			                 i ? " " : "", cmd[i]);
			if (k < 0)
				break;
			used += (size_t)k;
		}
		if (used >= len && len > 4)
			strcpy(out + len - 4, "...");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		do
			r = read(fd, out, len - 1);
		while (r < 0 && errno == EINTR);
		close(fd);
	}
	out[r > 0 ? r : 0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	if (!out[0])
		snprintf(out, len, "?");
}

static void tree_add(struct tree *t, pid_t pid, int status, const char *name)
{
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 16;
		struct reaped *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return; /* the exit file is written; only the list
			         * at the end misses this line */
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n].pid = pid;
	t->v[t->n].status = status;
	snprintf(t->v[t->n].name, sizeof(t->v[t->n].name), "%s", name);
	t->n++;
}

static void status_text(int status, char *out, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(out, len, "signal %d", WTERMSIG(status));
	else
		snprintf(out, len, "exit %d", WEXITSTATUS(status));
}

static long long mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The parent pid in /proc/PID/stat (after the parenthesised name, which
 * may itself hold spaces and parentheses), or -1. */
static pid_t stat_ppid(pid_t pid)
{
	char path[64], buf[512];
	int fd, ppid;
	ssize_t r;
	char *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	do
		r = read(fd, buf, sizeof(buf) - 1);
	while (r < 0 && errno == EINTR);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = '\0';
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

/* Prints every descendant of this process still running (found through
 * /proc: a grandchild whose parent lives is not our child yet). */
static void report_running(int wait_s)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	pid_t *pid = NULL, *ppid = NULL, *tmp;
	size_t n = 0, cap = 0;
	char name[64];

	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t pp;
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		pp = stat_ppid((pid_t)atoi(de->d_name));
		if (pp < 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			tmp = realloc(pid, cap * sizeof(*pid));
			if (!tmp)
				break;
			pid = tmp;
			tmp = realloc(ppid, cap * sizeof(*ppid));
			if (!tmp)
				break;
			ppid = tmp;
		}
		pid[n] = (pid_t)atoi(de->d_name);
		ppid[n] = pp;
		n++;
	}
	closedir(d);
	/* Breadth first from ourselves; a pid listed is set to 0. */
	{
		pid_t *queue = malloc((n + 1) * sizeof(*queue));
		size_t head = 0, tail = 0;
		if (queue) {
			queue[tail++] = getpid();
			while (head < tail) {
				pid_t p = queue[head++];
				for (size_t i = 0; i < n; i++) {
					if (ppid[i] != p || !pid[i])
						continue;
					proc_name(pid[i], 0, NULL, name,
					          sizeof(name));
					fprintf(stderr,
					        "vramtrace: pid %d (%s): still "
					        "running %ds after the command "
					        "exited; not waited for\n",
					        (int)pid[i], name, wait_s);
					if (tail <= n)
						queue[tail++] = pid[i];
					pid[i] = 0;
				}
			}
			free(queue);
		}
	}
	free(pid);
	free(ppid);
}

/* Reaps the whole tree: blocks until CMD (main_pid) exits, then waits at
 * most wait_s seconds for the rest. Writes "<pid>.exit" for each, sets
 * *main_status, and prints the list when there was more than CMD. */
static int wait_tree(const char *dir, pid_t main_pid, char *const *cmd,
                     int wait_s, int *main_status)
{
	struct tree t = {NULL, 0, 0};
	int main_done = 0, left = 0;
	long long deadline = 0;
	char name[128], st[32];

	for (;;) {
		siginfo_t si;
		int status;
		pid_t p;

		memset(&si, 0, sizeof(si));
		if (waitid(P_ALL, 0, &si,
		           WEXITED | WNOWAIT | (main_done ? WNOHANG : 0)) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				fprintf(stderr,
				        "vramtrace: error: waitid: %s\n",
				        strerror(errno));
			break;
		}
		if (si.si_pid == 0) {
			/* Children remain, none has exited yet. */
			struct timespec nap = {0, 20 * 1000 * 1000};
			if (mono_ms() >= deadline) {
				left = 1;
				break;
			}
			nanosleep(&nap, NULL);
			continue;
		}
		proc_name(si.si_pid, main_pid, cmd, name, sizeof(name));
		while ((p = waitpid(si.si_pid, &status, 0)) < 0 &&
		       errno == EINTR)
			;
		if (p < 0)
			continue;
		write_exit_file(dir, p, status);
		tree_add(&t, p, status, name);
		if (p == main_pid) {
			*main_status = status;
			main_done = 1;
			child_pid = 0;
			deadline = mono_ms() + (long long)wait_s * 1000;
		}
	}
	if (t.n > 1 || left) {
		for (size_t i = 0; i < t.n; i++) {
			status_text(t.v[i].status, st, sizeof(st));
			fprintf(stderr, "vramtrace: pid %d (%s): %s\n",
			        (int)t.v[i].pid, t.v[i].name, st);
		}
		if (left)
			report_running(wait_s);
	}
	free(t.v);
	return main_done ? 0 : -1;
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
	/* The preload in the command (and in what it execs in its place)
	 * knows it is the root: it leaves a trace at its exit even without a
	 * GPU call, so the run has its command line and flags. */
	{
		char pid[24];
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		setenv("VRAMTRACE_ROOT", pid, 1);
	}
	execvp(cmd[0], cmd);
	e = errno;
	/* If this write fails the parent sees exit 127 without a reason. */
	if (write(errfd, &e, sizeof(e)) < 0)
		e = 0;
	_exit(e == ENOENT ? 127 : 126);
}

/* ---- CMD's output ------------------------------------------------------ */

/* output.log and the ends for CMD's stdout and stderr, or NULL (--no-log,
 * or they could not be made: CMD then writes where we do, unkept). */
static struct vrt_logcap *output_open(const struct settings *s,
                                      const char *dir)
{
	struct vrt_logcap *lc;
	char err[300];

	if (s->no_log)
		return NULL;
	if (vrt_logcap_open(&lc, dir, s->log_max, err, sizeof(err))) {
		fprintf(stderr,
		        "vramtrace: warning: %s; the command's output is not "
		        "kept\n",
		        err);
		return NULL;
	}
	return lc;
}

static void output_start(struct vrt_logcap **lc)
{
	char err[300];

	if (*lc && vrt_logcap_start(*lc, err, sizeof(err))) {
		/* The command already holds our pipes: with nobody reading
		 * them its writes would block, so this is fatal for them. */
		fprintf(stderr,
		        "vramtrace: error: %s; the command's output is lost\n",
		        err);
		vrt_logcap_finish(*lc, 0, NULL);
		*lc = NULL;
	}
}

/* After the tree exited: output.log complete (or removed: discard). */
static void output_finish(struct vrt_logcap *lc, const char *dir, int discard)
{
	struct vrt_logcap_stats st;

	if (!lc)
		return;
	vrt_logcap_finish(lc, discard, &st);
	if (st.write_errno)
		fprintf(stderr,
		        "vramtrace: warning: %s/%s: cannot write: %s; the log "
		        "stops after %llu bytes\n",
		        dir, VRT_LOGCAP_NAME, strerror(st.write_errno),
		        (unsigned long long)st.bytes_written);
	else if (st.bytes_dropped)
		fprintf(stderr,
		        "vramtrace: warning: %s/%s: %llu bytes of output were "
		        "left out: its log did not keep up with the command\n",
		        dir, VRT_LOGCAP_NAME,
		        (unsigned long long)st.bytes_dropped);
}

static int run(const struct settings *s)
{
	char lib[PATH_MAX], dir[PATH_MAX], absdir[PATH_MAX];
	struct sigaction sa, ign;
	sigset_t block, old;
	int created, pfd[2], status = 0, e;
	struct vrt_logcap *lc = NULL;
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
	if (!realpath(dir, absdir) || set_env(lib, absdir) ||
	    (s->standby && setenv("VRAMTRACE_START", "standby", 1)) ||
	    (s->redact && setenv("VRAMTRACE_REDACT", "1", 1))) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", dir,
		        strerror(errno));
		return VRT_EXIT_FAIL;
	}
	if (pipe2(pfd, O_CLOEXEC)) {
		fprintf(stderr, "vramtrace: error: pipe: %s\n",
		        strerror(errno));
		return VRT_EXIT_FAIL;
	}
	lc = output_open(s, dir);
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
	/* Orphans of the tree become our children, so we can wait for them.
	 * Without it (a kernel before 3.4) they are reparented to init and
	 * only the processes still descending from CMD are waited for. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		fprintf(stderr,
		        "vramtrace: warning: cannot adopt orphaned processes: "
		        "%s\n",
		        strerror(errno));
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (lc)
			vrt_logcap_child(lc);
		exec_child(s->cmd, pfd[1], &old);
	}
	if (pid < 0) {
		e = errno;
		sigprocmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "vramtrace: error: fork: %s\n", strerror(e));
		close(pfd[0]);
		close(pfd[1]);
		vrt_logcap_finish(lc, created, NULL);
		return VRT_EXIT_FAIL;
	}
	output_start(&lc);
	child_pid = pid;
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGQUIT, &ign, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(pfd[1]);
	do
		r = read(pfd[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(pfd[0]);
	if (r != (ssize_t)sizeof(e)) {
		/* CMD runs: wait for it and every process of its tree. */
		e = wait_tree(dir, pid, s->cmd, s->wait_children, &status);
		output_finish(lc, dir, 0);
		if (e)
			return VRT_EXIT_FAIL;
		struct vrt_record_outcome out = {dir, lib, s->cmd, status,
		                                 s->standby};
		if (vrt_record_explain_print(&out))
			fprintf(stderr,
			        "vramtrace: trace in %s (analyze with: "
			        "vramtrace analyze %s)\n",
			        dir, dir);
		return WIFSIGNALED(status) ? 128 + WTERMSIG(status)
		                           : WEXITSTATUS(status);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "vramtrace: error: waitpid: %s\n",
			        strerror(errno));
			return VRT_EXIT_FAIL;
		}
	}
	child_pid = 0;
	output_finish(lc, dir, created);
	/* exec failed: CMD never ran. */
	fprintf(stderr, "vramtrace: error: %s: %s\n", s->cmd[0],
	        e == ENOENT ? "command not found" : strerror(e));
	/* Nothing ran: leave no empty run directory behind. */
	if (created)
		rmdir(dir);
	return e == ENOENT ? 127 : 126;
}

int vrt_cmd_record_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s = {NULL, WAIT_CHILDREN_DEFAULT, 0, 0, 0, 0, NULL, 0};
	struct vrt_optstate st;
	int id, rc;

	memset(&st, 0, sizeof(st));
	st.argc = argc;
	st.argv = argv;
	st.stop_at_positional = 1;
	while ((id = vrt_main_getopt(&st, options, self)) > 0)
		if (id == OPT_OUTPUT) {
			s.outdir = st.arg;
		} else if (id == OPT_STANDBY) {
			s.standby = 1;
		} else if (id == OPT_REDACT) {
			s.redact = 1;
		} else if (id == OPT_NO_LOG) {
			s.no_log = 1;
		} else if (id == OPT_LOG_MAX) {
			if (vrt_logcap_parse_size(st.arg, &s.log_max) ||
			    s.log_max < VRT_LOGCAP_MAX_MIN) {
				id = VRT_OPT_ERROR;
				vrt_main_usage_error(
				        self,
				        "--log-max: not a size of at least 64K: "
				        "%s",
				        st.arg);
				break;
			}
		} else if (id == OPT_WAIT_CHILDREN) {
			char *end;
			long v;
			errno = 0;
			v = strtol(st.arg, &end, 10);
			if (errno || end == st.arg || *end || v < 0 ||
			    v > WAIT_CHILDREN_MAX) {
				id = VRT_OPT_ERROR;
				vrt_main_usage_error(
				        self,
				        "--wait-children: not a number of "
				        "seconds in [0, %d]: %s",
				        WAIT_CHILDREN_MAX, st.arg);
				break;
			}
			s.wait_children = (int)v;
		}
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
