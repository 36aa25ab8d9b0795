/*
 * cmd_attach.c — `vramtrace attach PID [-o DIR] [--duration S] [--tree]
 * [--injector auto|ptrace|gdb] [--partial] [--no-python]`: records a
 * process that is already running and was started without the preload
 * (docs/attach.md). Checks first and refuses with the reason before
 * touching anything; attaches (attach.c), prints where it records, waits
 * for --duration, Ctrl-C (SIGINT, SIGTERM, SIGHUP) or `vramtrace ctl DIR
 * stop`, then detaches and leaves the process running as it was.
 *
 * --tree: the process and every descendant that has a GPU library loaded
 * (vLLM's engine core and workers, SGLang's schedulers), into one run.
 *
 * Exit: 0 recorded and detached (or the process ended meanwhile), 1 a
 * refusal or a failure (message printed), 2 usage. Single-threaded; the
 * signal handlers only set a flag.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record/attach.h"
#include "cmd.h"
#include "base/paths.h"
#include "rundir.h"

#define MAX_TARGETS 64
#define POLL_MS     100

struct settings {
	pid_t pid;
	const char *out;
	double duration; /* seconds; 0: until stopped */
	int tree;
	struct vrt_attach_opts o;
};

enum {
	OPT_DURATION = VRT_OPT_OWN,
	OPT_TREE,
	OPT_INJECTOR,
	OPT_PARTIAL,
	OPT_NO_PYTHON,
	OPT_OUT,
};

static const struct vrt_option options[] = {
        {"output", 'o', 1, OPT_OUT},
        {"duration", 0, 1, OPT_DURATION},
        {"tree", 0, 0, OPT_TREE},
        {"injector", 0, 1, OPT_INJECTOR},
        {"partial", 0, 0, OPT_PARTIAL},
        {"no-python", 0, 0, OPT_NO_PYTHON},
        VRT_OPTION_END,
};

static int own_option(const struct vrt_cmd *self, int id, const char *arg,
                      void *settings)
{
	static const char *const injectors[] = {"auto", "ptrace", "gdb", NULL};
	struct settings *s = settings;
	char *end;
	int k;
	switch (id) {
	case OPT_OUT:
		s->out = arg;
		break;
	case OPT_DURATION:
		s->duration = strtod(arg, &end);
		if (end == arg || *end || !(s->duration > 0) ||
		    s->duration > 1e7)
			return vrt_main_usage_error(
			        self, "--duration takes seconds (got '%s')",
			        arg);
		break;
	case OPT_TREE:
		s->tree = 1;
		break;
	case OPT_INJECTOR:
		k = vrt_main_choice(self, "injector", arg, injectors);
		if (k < 0)
			return VRT_EXIT_USAGE;
		s->o.injector = k;
		break;
	case OPT_PARTIAL:
		s->o.partial = 1;
		break;
	case OPT_NO_PYTHON:
		s->o.python = 0;
		break;
	}
	return 0;
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void catch_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the process tree ---------------------------------------------------- */

static int uses_gpu(pid_t pid)
{
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	int yes = 0;
	if (!f)
		return 0;
	while (!yes && fgets(line, sizeof(line), f))
		yes = strstr(line, "/libcuda.so") || strstr(line, "/libamdhip64.so");
	fclose(f);
	return yes;
}

static pid_t ppid_of(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	buf[r] = 0;
	const char *p = strrchr(buf, ')');
	int ppid;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -1;
	return (pid_t)ppid;
}

/* root and its descendants (breadth first), into pids; the count. */
static int descendants(pid_t root, pid_t *pids, int max)
{
	int n = 0, head = 0;
	pids[n++] = root;
	while (head < n) {
		pid_t p = pids[head++];
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d)) && n < max) {
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			pid_t c = (pid_t)atoi(de->d_name);
			if (ppid_of(c) == p)
				pids[n++] = c;
		}
		if (d)
			closedir(d);
	}
	return n;
}

/* ---- the run directory ----------------------------------------------------- */

static int make_dir(const struct settings *s, uid_t owner, gid_t group,
                    char *abs)
{
	char dir[PATH_MAX];
	if (s->out)
		snprintf(dir, sizeof(dir), "%s", s->out);
	else
		snprintf(dir, sizeof(dir), "vramtrace-attach-%d", (int)s->pid);
	if (mkdir(dir, 0700) && errno != EEXIST) {
		fprintf(stderr, "vramtrace: error: %s: cannot create: %s\n",
		        dir, strerror(errno));
		return -1;
	}
	if (!realpath(dir, abs)) {
		fprintf(stderr, "vramtrace: error: %s: %s\n", dir,
		        strerror(errno));
		return -1;
	}
	/* The agent writes there as the process's user; root attaching to
	 * another user's process hands the directory over. */
	if (owner != geteuid() && chown(abs, owner, group)) {
		fprintf(stderr, "vramtrace: error: %s: cannot give it to uid %u: "
		                "%s\n",
		        abs, (unsigned)owner, strerror(errno));
		return -1;
	}
	int dfd = open(abs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	char why[128];
	if (dfd < 0 || vrt_rundir_check(dfd, owner, why, sizeof(why))) {
		fprintf(stderr,
		        "vramtrace: error: %s: run directory refused: %s\n", abs,
		        dfd < 0 ? strerror(errno) : why);
		if (dfd >= 0)
			close(dfd);
		return -1;
	}
	close(dfd);
	return 0;
}

static void owner_of(pid_t pid, uid_t *uid, gid_t *gid)
{
	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	*uid = geteuid();
	*gid = getegid();
	if (!stat(path, &st)) {
		*uid = st.st_uid;
		*gid = st.st_gid;
	}
}

/* ---- reporting -------------------------------------------------------------- */

static const char *lib_name(uint32_t lib)
{
	return lib == VRT_ATTACH_LIB_CUDA  ? "CUDA driver"
	       : lib == VRT_ATTACH_LIB_HIP ? "HIP runtime"
	                                   : "libc";
}

static void say_attached(const struct vrt_attach *a)
{
	int by_lib[4] = {0};
	for (uint32_t i = 0; i < a->plan.nhooks; i++)
		if (a->plan.hooks[i].state == VRT_ATTACH_PATCHED &&
		    a->plan.hooks[i].lib < 4)
			by_lib[a->plan.hooks[i].lib]++;
	fprintf(stderr,
	        "vramtrace: attached to PID %d (%s) with %s: %d functions "
	        "hooked inline (",
	        (int)a->pid, a->comm, a->used, a->hooked);
	for (uint32_t l = 1, first = 1; l < 4; l++)
		if (by_lib[l]) {
			fprintf(stderr, "%s%d %s", first ? "" : ", ", by_lib[l],
			        lib_name(l));
			first = 0;
		}
	fprintf(stderr, "); threads stopped %.2f ms in all\n",
	        (double)a->attach_cost.stopped_ns / 1e6);
	for (uint32_t i = 0; i < a->plan.nhooks; i++)
		if (a->plan.hooks[i].state == VRT_ATTACH_REFUSED)
			fprintf(stderr,
			        "vramtrace: warning: PID %d: %s not hooked (%s): "
			        "its calls are not recorded\n",
			        (int)a->pid, a->plan.hooks[i].name,
			        a->plan.hooks[i].why);
}

/* attach.txt in the run: what was hooked and how, per process. */
static void write_note(const char *dir, const struct vrt_attach *a, int n)
{
	char path[PATH_MAX + 16];
	snprintf(path, sizeof(path), "%s/attach.txt", dir);
	FILE *f = fopen(path, "ae");
	if (!f)
		return; /* a note for people: the traces say what matters */
	for (int k = 0; k < n; k++) {
		const struct vrt_attach *x = &a[k];
		fprintf(f,
		        "pid %d (%s): backend inline hooks (CUPTI not used), "
		        "injector %s, %d hooked, %d refused, attach %.3f ms "
		        "(stopped %.3f ms, thread borrowed %.3f ms)\n",
		        (int)x->pid, x->comm, x->used, x->hooked, x->refused,
		        (double)x->attach_cost.total_ns / 1e6,
		        (double)x->attach_cost.stopped_ns / 1e6,
		        (double)x->attach_cost.borrowed_ns / 1e6);
		for (uint32_t i = 0; i < x->plan.nhooks; i++) {
			const struct vrt_attach_hook *h = &x->plan.hooks[i];
			fprintf(f, "  %-28s %-11s %s%s\n", h->name,
			        lib_name(h->lib),
			        h->state == VRT_ATTACH_PATCHED ? "hooked"
			        : h->state == VRT_ATTACH_REFUSED ? "refused: "
			                                         : "not hooked",
			        h->state == VRT_ATTACH_REFUSED ? h->why : "");
		}
	}
	fclose(f);
}

/* ---- the command -------------------------------------------------------------- */

int vrt_cmd_attach_run(const struct vrt_cmd *self, int argc, char **argv)
{
	struct settings s;
	struct vrt_optstate st;
	struct vrt_attach *a = NULL;
	pid_t pids[MAX_TARGETS];
	int rc, n = 0, live = 0, failed = 0;
	char *end;

	memset(&s, 0, sizeof(s));
	memset(&st, 0, sizeof(st));
	s.o.python = 1;
	if (vrt_main_parse(self, argc, argv, options, NULL, own_option, &s, &st,
	                   &rc))
		goto out;
	if (st.npos != 1) {
		rc = vrt_main_usage_error(self, st.npos ? "one PID at a time "
		                                          "(--tree takes its "
		                                          "descendants)"
		                                        : "no PID given");
		goto out;
	}
	long v = strtol(st.pos[0], &end, 10);
	if (end == st.pos[0] || *end || v <= 0 || v > 0x7fffffff) {
		rc = vrt_main_usage_error(self, "not a process id: '%s'",
		                          st.pos[0]);
		goto out;
	}
	s.pid = (pid_t)v;
	rc = VRT_EXIT_FAIL;
	if (vrt_paths_find_lib(VRT_ATTACH_AGENT, "VRAMTRACE_AGENT", s.o.agent))
		goto out;
	if (s.tree) {
		pid_t all[MAX_TARGETS];
		int m = descendants(s.pid, all, MAX_TARGETS);
		for (int i = 0; i < m; i++)
			if (uses_gpu(all[i]))
				pids[n++] = all[i];
		if (!n) {
			fprintf(stderr,
			        "vramtrace: error: PID %d: no process of its "
			        "tree (%d) has a GPU library loaded\n",
			        (int)s.pid, m);
			goto out;
		}
	} else {
		pids[n++] = s.pid;
	}
	a = calloc((size_t)n, sizeof(*a));
	if (!a)
		goto out;
	uid_t uid;
	gid_t gid;
	owner_of(pids[0], &uid, &gid);
	/* Every check before anything is touched. */
	for (int i = 0; i < n; i++)
		if (vrt_attach_preflight(&a[i], pids[i], &s.o)) {
			fprintf(stderr, "vramtrace: error: %s\n", a[i].why);
			goto out;
		}
	if (make_dir(&s, uid, gid, s.o.out_dir))
		goto out;
	catch_signals();
	for (int i = 0; i < n && !stop_signal; i++) {
		if (vrt_attach_start(&a[i], &s.o)) {
			fprintf(stderr, "vramtrace: error: %s\n", a[i].why);
			failed = 1;
			break;
		}
		say_attached(&a[i]);
		live++;
	}
	write_note(s.o.out_dir, a, live);
	if (live && !failed)
		fprintf(stderr,
		        "vramtrace: recording into %s; %s`vramtrace ctl %s "
		        "stop` or Ctrl-C detaches\n",
		        s.o.out_dir,
		        s.duration > 0 ? "until --duration ends, or " : "",
		        s.o.out_dir);
	int active[MAX_TARGETS];
	for (int i = 0; i < n; i++)
		active[i] = i < live;
	double until = s.duration > 0 ? now_s() + s.duration : 0;
	while (live && !failed) {
		int stop = stop_signal || (until && now_s() >= until);
		for (int i = 0; i < n; i++) {
			if (!active[i])
				continue;
			int state = vrt_attach_poll(&a[i]);
			if (state == 3) {
				fprintf(stderr,
				        "vramtrace: PID %d ended while "
				        "recorded\n",
				        (int)a[i].pid);
				active[i] = 0;
				live--;
				continue;
			}
			if (!stop && state == 0)
				continue;
			int d = vrt_attach_detach(&a[i]);
			if (d < 0) {
				fprintf(stderr, "vramtrace: error: %s\n",
				        a[i].why);
				failed = 1;
			} else {
				if (d > 0)
					fprintf(stderr,
					        "vramtrace: warning: %s\n",
					        a[i].why);
				fprintf(stderr,
				        "vramtrace: detached from PID %d: "
				        "threads stopped %.2f ms\n",
				        (int)a[i].pid,
				        (double)a[i].detach_cost.stopped_ns /
				                1e6);
			}
			active[i] = 0;
			live--;
		}
		if (live)
			usleep(POLL_MS * 1000);
	}
	/* A failure while attaching: those attached are put back. */
	for (int i = 0; i < n; i++)
		if (active[i] && vrt_attach_detach(&a[i]) < 0)
			fprintf(stderr, "vramtrace: error: %s\n", a[i].why);
	if (!failed)
		fprintf(stderr, "vramtrace: analyze the run with: vramtrace "
		                "analyze %s\n",
		        s.o.out_dir);
	rc = failed ? VRT_EXIT_FAIL : VRT_EXIT_OK;
out:
	for (int i = 0; a && i < n; i++)
		vrt_attach_free(&a[i]);
	free(a);
	free(st.pos);
	return rc;
}
