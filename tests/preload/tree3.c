/*
 * tree3 — a three-level process tree shaped like an inference server's
 * (API server, engine processes, workers), every branch reaching the
 * driver, and every way of starting a child that servers use:
 *
 *   root (1 MiB)
 *    +- fork, no exec ........................ forked   (2 MiB)
 *    |   +- posix_spawn, fresh environment ... spawned  (4 MiB)
 *    +- fork + execve, fresh environment ..... mid      (8 MiB)
 *    |   +- fork ............................. worker   (16 MiB)
 *    |       +- fork, outlives its parent .... orphan   (32 MiB)
 *    +- vfork + execve, fresh environment .... vforked  (64 MiB)
 *
 * "Fresh environment" holds neither LD_PRELOAD nor VRAMTRACE_OUT (only
 * PATH and LD_LIBRARY_PATH), like subprocess with env=... or os.execve
 * with a new dictionary: the preload must put them back. The orphan's
 * parent exits first, so only a subreaper (vramtrace record) reaps it.
 * Every process prints "tree3: ROLE PID PPID" once it has allocated.
 * Processes that are not record's own children are reaped by their
 * parents; record reaps (and writes "<pid>.exit" for) the root and the
 * orphan.
 *
 *   tree3 --straggler SECONDS   leaves a detached grandchild sleeping that
 *                               long and exits at once (record's bounded
 *                               wait for the rest of the tree)
 *   tree3 --alloc MIB           allocates and exits (a leaf for others)
 *
 * Exit 0 when every child exited 0.
 */
#include "cuda_api.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef __SANITIZE_ADDRESS__
/* In an ASan build (./build.sh sanitize) the preload, which needs the ASan
 * runtime, comes first in LD_PRELOAD, before this program's own runtime;
 * the sanitize mode allows that through ASAN_OPTIONS, but the children
 * started with a fresh environment do not inherit it, so the program
 * carries the same setting itself. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "verify_asan_link_order=0";
}
#endif

static void alloc_mib(int n, const char *role)
{
	CUcontext ctx;
	CUdeviceptr p;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc_v2(&p, (size_t)n << 20)) {
		fprintf(stderr, "tree3: %s: allocation failed\n", role);
		exit(1);
	}
	dprintf(1, "tree3: %s %d %d\n", role, (int)getpid(), (int)getppid());
}

static char *fresh_env[4];

/* PATH and LD_LIBRARY_PATH only: what a launcher passing a filtered
 * environment gives its children. */
static void make_fresh_env(void)
{
	static char ld[4096];
	int n = 0;
	const char *v = getenv("LD_LIBRARY_PATH");
	fresh_env[n++] = "PATH=/usr/bin:/bin";
	if (v && strlen(v) + 17 < sizeof(ld)) {
		snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", v);
		fresh_env[n++] = ld;
	}
	fresh_env[n] = NULL;
}

static int wait_ok(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

/* mid: allocates, forks a worker, which forks an orphan and leaves. */
static int mid(void)
{
	alloc_mib(8, "mid");
	pid_t worker = fork();
	if (worker == 0) {
		alloc_mib(16, "worker");
		int pfd[2];
		if (pipe(pfd))
			_exit(1);
		pid_t me = getpid();
		pid_t orphan = fork();
		if (orphan == 0) {
			close(pfd[0]);
			alloc_mib(32, "orphan");
			if (write(pfd[1], "x", 1) != 1)
				_exit(1);
			/* Outlive the worker (bounded: 5 s). */
			for (int i = 0; i < 500 && getppid() == me; i++)
				sleep_ms(10);
			_exit(0);
		}
		close(pfd[1]);
		char c;
		_exit(orphan > 0 && read(pfd[0], &c, 1) == 1 ? 0 : 1);
	}
	return worker > 0 && wait_ok(worker) ? 0 : 1;
}

static int forked(const char *self)
{
	alloc_mib(2, "forked");
	pid_t pid;
	char *args[] = {(char *)self, "--alloc-as", "4", "spawned", NULL};
	if (posix_spawn(&pid, self, NULL, NULL, args, fresh_env)) {
		fprintf(stderr, "tree3: posix_spawn failed\n");
		return 1;
	}
	return wait_ok(pid) ? 0 : 1;
}

static int straggler(int secs)
{
	pid_t mid_pid = fork();
	if (mid_pid == 0) {
		if (fork() == 0) {
			dprintf(1, "tree3: straggler %d %d\n", (int)getpid(),
			        (int)getppid());
			/* Like a daemon: let go of the caller's pipes. */
			int null = open("/dev/null", O_RDWR);
			for (int fd = 0; fd < 3 && null >= 0; fd++)
				dup2(null, fd);
			sleep_ms(secs * 1000);
			_exit(0);
		}
		_exit(0);
	}
	return mid_pid > 0 && wait_ok(mid_pid) ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *self = argv[0];
	make_fresh_env();
	if (argc == 3 && !strcmp(argv[1], "--straggler"))
		return straggler(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "--alloc")) {
		alloc_mib(atoi(argv[2]), "leaf");
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "--alloc-as")) {
		alloc_mib(atoi(argv[2]), argv[3]);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "--mid"))
		return mid();
	if (argc != 1) {
		fprintf(stderr, "usage: tree3 [--straggler S | --alloc MIB]\n");
		return 2;
	}

	alloc_mib(1, "root");
	int ok = 1;

	pid_t f = fork();
	if (f == 0)
		_exit(forked(self));

	pid_t m = fork();
	if (m == 0) {
		char *args[] = {(char *)self, "--mid", NULL};
		execve(self, args, fresh_env);
		_exit(127);
	}

	/* What Python's subprocess does: vfork, then execve in the child,
	 * which shares our memory until the exec. */
	char *vargs[] = {(char *)self, "--alloc-as", "64", "vforked", NULL};
	pid_t v = vfork();
	if (v == 0) {
		execve(self, vargs, fresh_env);
		_exit(127);
	}

	ok &= f > 0 && wait_ok(f);
	ok &= m > 0 && wait_ok(m);
	ok &= v > 0 && wait_ok(v);
	return ok ? 0 : 1;
}
