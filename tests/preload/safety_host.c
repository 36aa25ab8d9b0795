/*
 * safety_host — a host program for run_safety.py: each mode stresses one
 * way a real program can treat the preload badly. The driver is reached
 * only through dlopen("libcuda.so.1") + dlsym, so dlclose can really
 * unload it.
 *
 *   fill N          N alloc/free pairs of varied sizes, then exit 3
 *   basic N         N allocations of 1 MiB, freed; exit 0
 *   gated N         reads one line from stdin first, then as basic; then
 *                   sleeps 300 ms (the control socket exists meanwhile)
 *   threads         64 threads allocating while 256 short-lived threads
 *                   allocate once and exit; prints "allocs N"
 *   fork            8 allocating threads; the main thread forks 5 times
 *                   (never while a thread is inside the driver),
 *                   each child makes 3 allocations and exits; prints
 *                   "child PID" for each
 *   exitrace        8 threads allocating without end; exit(7) after 20 ms
 *   dlreopen        3 times: dlopen, cuInit, alloc, free, dlclose
 *   rtldnext        dlopen(RTLD_GLOBAL), then 2 allocations through
 *                   dlsym(RTLD_NEXT, "cuMemAlloc_v2")
 *   crash LOG MS HOW    allocations of 1 MiB (freed) one at a time, each
 *                   logged to LOG as "A <seq> <CLOCK_MONOTONIC ns>" once it
 *                   returned; every 20 a pause of 100 ms. After MS ms a
 *                   thread logs "K <ns>" and does HOW: segv, abort or wait
 *                   (to be killed from outside)
 *   oomdie HOW      5 allocations of 1 MiB, then one of 1 TiB that fails;
 *                   right after the error: kill, segv or abort
 *   secure PRELOAD  prints "secure N" (AT_SECURE), dlopens PRELOAD, exit 0
 *
 * Lifecycle and fds (issue 13):
 *
 *   vfork           3 allocations; vfork, exec of a missing program and
 *                   _exit(127) in the child; 5 more allocations; exit 0
 *   cancel N        N rounds of 4 threads failing 1 TiB allocations in a
 *                   loop (with a pthread_testcancel), cancelled after 1 to
 *                   20 ms and joined; then one failed and 2 good
 *                   allocations; prints "rounds N", exit 0
 *   pthreadexit     2 allocations, a thread that makes 2 more after
 *                   100 ms, and main ends with pthread_exit
 *   pthreadexit-term  the same, with an atexit handler that prints
 *                   "atexit" and sleeps 30 s (to be ended by SIGTERM)
 *   closefds DIR range|from   3 allocations (prints "trace-fd T"), then
 *                   close_range(3, ~0) or closefrom(3), and DIR/app.log
 *                   opened (not O_CLOEXEC) at every number from 3 to 24,
 *                   so each number the preload had is the program's
 *                   file; 3 allocations; prints "ctl-thread" and
 *                   "met-thread" alive|gone (after waiting up to 5 s for
 *                   both to end); a forked child writes
 *                   "fork-child" through fd T ("fork-child-status S"), a
 *                   forked child execs sh to write "exec-child" to fd T
 *                   ("exec-child-status S"), and finally this process
 *                   execs sh to write "exec-self" to fd T (its exit
 *                   status is sh's)
 *   acceptclose     one allocation, then listens on 127.0.0.1, accepts 3
 *                   connections of its own (a request read on each; on
 *                   the first, 18 bytes before it are discarded with
 *                   recv(fd, NULL, 18, MSG_TRUNC), which the kernel
 *                   allows on TCP and the preload must not read),
 *                   then close_range over the
 *                   accepted fds and a 1 TiB allocation that fails (an
 *                   OOM with no request in flight); exit 0
 *   dup2 DIR        3 allocations, dup2 of DIR/app.log over the trace's
 *                   fd, "app-line" written through it, 3 allocations and
 *                   300 ms, "app-line-2" written; exit 0
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long devptr;
typedef int (*init_fn)(unsigned);
typedef int (*alloc_fn)(devptr *, size_t);
typedef int (*free_fn)(devptr);
typedef int (*retain_fn)(void **, int);
typedef int (*setctx_fn)(void *);

static void *lib;
static alloc_fn mem_alloc;
static free_fn mem_free;
static setctx_fn set_ctx;
static void *ctx; /* the primary context: current per thread */

#define MIB (1024ull * 1024ull)

static void die(const char *what)
{
	fprintf(stderr, "safety_host: %s\n", what);
	exit(1);
}

static void load(int flags)
{
	lib = dlopen("libcuda.so.1", flags);
	if (!lib)
		die(dlerror());
	init_fn init = (init_fn)dlsym(lib, "cuInit");
	retain_fn retain = (retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
	set_ctx = (setctx_fn)dlsym(lib, "cuCtxSetCurrent");
	mem_alloc = (alloc_fn)dlsym(lib, "cuMemAlloc_v2");
	mem_free = (free_fn)dlsym(lib, "cuMemFree_v2");
	if (!init || !retain || !set_ctx || !mem_alloc || !mem_free ||
	    init(0) || retain(&ctx, 0) || set_ctx(ctx))
		die("driver set-up failed");
}

/* The fake driver, like a real one, is not fork-safe: a child forked
 * while another thread holds its lock would wait forever. fork mode keeps
 * driver calls out of the fork (as an application must); what is tested
 * is that the preload's own locks survive it. */
static pthread_rwlock_t drv_lock;

static void one(size_t n)
{
	devptr p;
	pthread_rwlock_rdlock(&drv_lock);
	int bad = mem_alloc(&p, n) || mem_free(p);
	pthread_rwlock_unlock(&drv_lock);
	if (bad)
		die("alloc/free failed");
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static atomic_long allocs;
static atomic_int stop;

static void *alloc_loop(void *arg)
{
	long n = (long)(intptr_t)arg;
	set_ctx(ctx);
	for (long i = 0; (n == 0 || i < n) && !atomic_load(&stop); i++) {
		one(4096 + (size_t)(i % 7) * 4096);
		atomic_fetch_add(&allocs, 1);
	}
	return NULL;
}

static void *alloc_once(void *arg)
{
	(void)arg;
	set_ctx(ctx);
	one(MIB);
	atomic_fetch_add(&allocs, 1);
	return NULL;
}

static int mode_threads(void)
{
	pthread_t t[64];
	for (int i = 0; i < 64; i++)
		if (pthread_create(&t[i], NULL, alloc_loop,
		                   (void *)(intptr_t)500))
			die("pthread_create");
	for (int i = 0; i < 256; i++) {
		pthread_t s;
		if (pthread_create(&s, NULL, alloc_once, NULL))
			die("pthread_create");
		if (i % 2)
			pthread_detach(s);
		else
			pthread_join(s, NULL);
	}
	for (int i = 0; i < 64; i++)
		pthread_join(t[i], NULL);
	/* Detached ones may still be running: wait for their count. */
	for (int i = 0; i < 500 && atomic_load(&allocs) < 64 * 500 + 256; i++)
		usleep(10000);
	printf("allocs %ld\n", atomic_load(&allocs));
	return 0;
}

static int mode_fork(void)
{
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, alloc_loop, (void *)(intptr_t)0);
	for (int k = 0; k < 5; k++) {
		usleep(5000);
		fflush(stdout);
		pthread_rwlock_wrlock(&drv_lock);
		pid_t pid = fork();
		if (pid == 0) /* held by another tid's record: start afresh */
			pthread_rwlock_init(&drv_lock, NULL);
		else
			pthread_rwlock_unlock(&drv_lock);
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			for (int i = 0; i < 3; i++)
				one(MIB);
			exit(0);
		}
		printf("child %d\n", (int)pid);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st))
			die("child failed");
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int mode_exitrace(void)
{
	pthread_t t;
	for (int i = 0; i < 8; i++)
		pthread_create(&t, NULL, alloc_loop, (void *)(intptr_t)0);
	usleep(20000);
	exit(7);
}

static int mode_dlreopen(void)
{
	for (int k = 0; k < 3; k++) {
		load(RTLD_NOW | RTLD_LOCAL);
		one(MIB);
		if (dlclose(lib))
			die("dlclose");
	}
	return 0;
}

static int mode_rtldnext(void)
{
	load(RTLD_NOW | RTLD_GLOBAL);
	alloc_fn next = (alloc_fn)dlsym(RTLD_NEXT, "cuMemAlloc_v2");
	if (!next)
		die("dlsym(RTLD_NEXT, cuMemAlloc_v2) found nothing");
	for (int i = 0; i < 2; i++) {
		devptr p;
		if (next(&p, MIB) || mem_free(p))
			die("alloc through RTLD_NEXT failed");
	}
	return 0;
}

static int log_fd = -1;
static long crash_ms;
static const char *crash_how;

static void log_line(const char *s)
{
	size_t n = strlen(s);
	if (write(log_fd, s, n) != (ssize_t)n)
		die("log write");
}

static void fault(const char *how)
{
	static int *volatile nowhere;
	if (!strcmp(how, "segv"))
		*nowhere = 1;
	else if (!strcmp(how, "abort"))
		abort();
	else if (!strcmp(how, "kill"))
		kill(getpid(), SIGKILL);
}

static void *crasher(void *arg)
{
	(void)arg;
	usleep((useconds_t)crash_ms * 1000);
	char line[64];
	snprintf(line, sizeof(line), "K %llu\n", (unsigned long long)now_ns());
	log_line(line);
	fault(crash_how);
	return NULL;
}

static int mode_crash(const char *path)
{
	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0)
		die("log open");
	pthread_t t;
	pthread_create(&t, NULL, crasher, NULL);
	uint64_t end = now_ns() + 10000000000ull;
	for (long i = 1; now_ns() < end; i++) {
		one(MIB);
		char line[64];
		snprintf(line, sizeof(line), "A %ld %llu\n", i,
		         (unsigned long long)now_ns());
		log_line(line);
		if (i % 20 == 0)
			usleep(100000);
	}
	return 0;
}

static int mode_oomdie(const char *how)
{
	load(RTLD_NOW);
	for (int i = 0; i < 5; i++) {
		devptr p;
		if (mem_alloc(&p, MIB))
			die("alloc");
	}
	devptr p;
	if (mem_alloc(&p, 1ull << 40) == 0)
		die("the 1 TiB allocation succeeded");
	fault(how);
	return 0;
}

/* ---- lifecycle and fds ------------------------------------------------ */

static int mode_vfork(void)
{
	for (int i = 0; i < 3; i++)
		one(MIB);
	char *argv[] = {"/nonexistent/vramtrace-no-such-program", NULL};
	pid_t pid = vfork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 127)
		die("the vfork child did not exit 127");
	for (int i = 0; i < 5; i++)
		one(MIB);
	return 0;
}

static void *fail_loop(void *arg)
{
	(void)arg;
	set_ctx(ctx);
	for (;;) {
		devptr p;
		pthread_testcancel();
		if (mem_alloc(&p, 1ull << 40) == 0)
			mem_free(p);
	}
	return NULL;
}

static int mode_cancel(long rounds)
{
	unsigned r = (unsigned)getpid();
	for (long k = 0; k < rounds; k++) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			if (pthread_create(&t[i], NULL, fail_loop, NULL))
				die("pthread_create");
		r = r * 1103515245u + 12345u;
		usleep(1000 + (r >> 8) % 20000);
		for (int i = 0; i < 4; i++)
			pthread_cancel(t[i]);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
	}
	devptr p;
	if (mem_alloc(&p, 1ull << 40) == 0)
		die("the 1 TiB allocation succeeded");
	one(MIB);
	one(MIB);
	printf("rounds %ld\n", rounds);
	return 0;
}

static void *late_allocs(void *arg)
{
	(void)arg;
	set_ctx(ctx);
	usleep(100000);
	one(MIB);
	one(MIB);
	return NULL;
}

static void sleep_at_exit(void)
{
	printf("atexit\n");
	fflush(stdout);
	sleep(30);
}

static int mode_pthreadexit(int term)
{
	one(MIB);
	one(MIB);
	if (term)
		atexit(sleep_at_exit);
	pthread_t t;
	if (pthread_create(&t, NULL, late_allocs, NULL))
		die("pthread_create");
	pthread_exit(NULL);
}

/* The fd whose /proc/self/fd link ends in ".vtrace", or -1. */
static int trace_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;
	while (d && found < 0 && (de = readdir(d))) {
		char path[300], link[4096];
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		ssize_t n = readlink(path, link, sizeof(link) - 1);
		if (n > 7 && !memcmp(link + n - 7, ".vtrace", 7))
			found = atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether a thread of this process has that name. */
static int thread_alive(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int found = 0;
	while (d && !found && (de = readdir(d))) {
		char path[300], comm[64] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		         de->d_name);
		FILE *f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				found = !strncmp(comm, name, strlen(name));
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return found;
}

static int wait_status(pid_t pid)
{
	int st;
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int mode_closefds(const char *dir, const char *how)
{
	for (int i = 0; i < 3; i++)
		one(MIB);
	int t = trace_fd();
	if (t < 0)
		die("no trace fd");
	printf("trace-fd %d\n", t);
	if (!strcmp(how, "range")) {
		if (close_range(3, ~0u, 0))
			die("close_range");
	} else {
		closefrom(3);
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/app.log", dir);
	for (int fd = -1; fd < 24;) {
		fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd < 0)
			die("open app.log");
	}
	for (int i = 0; i < 3; i++)
		one(MIB);
	/* The endpoints poll every 200 and 500 ms: give them 5 s to see
	 * their sockets gone. */
	for (int i = 0; i < 100 && (thread_alive("vramtrace-ctl") ||
	                            thread_alive("vramtrace-met"));
	     i++)
		usleep(50000);
	printf("ctl-thread %s\n",
	       thread_alive("vramtrace-ctl") ? "alive" : "gone");
	printf("met-thread %s\n",
	       thread_alive("vramtrace-met") ? "alive" : "gone");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		static const char m[] = "fork-child\n";
		_exit(write(t, m, sizeof(m) - 1) == sizeof(m) - 1 ? 0 : 1);
	}
	printf("fork-child-status %d\n", wait_status(pid));
	char cmd[64];
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		snprintf(cmd, sizeof(cmd), "echo exec-child >&%d", t);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(126);
	}
	printf("exec-child-status %d\n", wait_status(pid));
	fflush(stdout);
	snprintf(cmd, sizeof(cmd), "echo exec-self >&%d", t);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	die("exec sh");
	return 1;
}

static int mode_acceptclose(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int cl[3], ac[3], lo = 1 << 30, hi = -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* Recording starts here, so the preload's own fds lie below the
	 * range closed later. */
	one(MIB);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 8) || getsockname(l, (struct sockaddr *)&a, &len))
		die("listen");
	for (int i = 0; i < 3; i++) {
		cl[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (cl[i] < 0 ||
		    connect(cl[i], (struct sockaddr *)&a, sizeof(a)))
			die("connect");
		ac[i] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
		if (ac[i] < 0)
			die("accept");
		/* A request on each: the preload counts requests in flight
		 * (bytes received, no answer yet), not connections. */
		char req[] = "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
		             "Content-Length: 0\r\n\r\n",
		     junk[] = "discarded-18-bytes", buf[96];
		if (i == 0) {
			size_t left = sizeof(junk) - 1;
			if (write(cl[i], junk, left) != (ssize_t)left)
				die("junk");
			while (left) {
				ssize_t k = recv(ac[i], NULL, left, MSG_TRUNC);
				if (k <= 0)
					die("recv MSG_TRUNC");
				left -= (size_t)k;
			}
		}
		if (write(cl[i], req, sizeof(req) - 1) != (ssize_t)sizeof(req) - 1 ||
		    read(ac[i], buf, sizeof(buf)) <= 0)
			die("request");
		lo = ac[i] < lo ? ac[i] : lo;
		hi = ac[i] > hi ? ac[i] : hi;
	}
	if (close_range((unsigned)lo, (unsigned)hi, 0))
		die("close_range");
	devptr p;
	if (mem_alloc(&p, 1ull << 40) == 0)
		die("the 1 TiB allocation succeeded");
	return 0;
}

static int mode_dup2(const char *dir)
{
	for (int i = 0; i < 3; i++)
		one(MIB);
	int t = trace_fd();
	if (t < 0)
		die("no trace fd");
	char path[4096];
	snprintf(path, sizeof(path), "%s/app.log", dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || dup2(fd, t) != t)
		die("dup2 app.log");
	static const char l1[] = "app-line\n", l2[] = "app-line-2\n";
	if (write(t, l1, sizeof(l1) - 1) != sizeof(l1) - 1)
		die("write");
	for (int i = 0; i < 3; i++)
		one(MIB);
	usleep(300000);
	if (write(t, l2, sizeof(l2) - 1) != sizeof(l2) - 1)
		die("write");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	pthread_rwlockattr_t ra;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setkind_np(
	        &ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&drv_lock, &ra);
	if (argc < 2)
		die("usage: safety_host MODE [ARGS]");
	const char *m = argv[1];
	if (!strcmp(m, "secure") && argc > 2) {
		printf("secure %lu\n", getauxval(AT_SECURE));
		if (!dlopen(argv[2], RTLD_NOW))
			die(dlerror());
		return 0;
	}
	if (!strcmp(m, "oomdie") && argc > 2)
		return mode_oomdie(argv[2]);
	if (!strcmp(m, "dlreopen"))
		return mode_dlreopen();
	if (!strcmp(m, "rtldnext"))
		return mode_rtldnext();
	load(RTLD_NOW);
	if (!strcmp(m, "fill") && argc > 2) {
		long n = atol(argv[2]);
		unsigned r = 12345;
		for (long i = 0; i < n; i++) {
			r = r * 1103515245u + 12345u;
			one(4096 + (r >> 8) % (64 * MIB));
		}
		return 3;
	}
	if ((!strcmp(m, "basic") || !strcmp(m, "gated")) && argc > 2) {
		if (m[0] == 'g') {
			char buf[16];
			if (!fgets(buf, sizeof(buf), stdin))
				die("no go line");
		}
		for (long i = 0; i < atol(argv[2]); i++)
			one(MIB);
		if (m[0] == 'g')
			usleep(300000);
		return 0;
	}
	if (!strcmp(m, "threads"))
		return mode_threads();
	if (!strcmp(m, "fork"))
		return mode_fork();
	if (!strcmp(m, "exitrace"))
		return mode_exitrace();
	if (!strcmp(m, "vfork"))
		return mode_vfork();
	if (!strcmp(m, "cancel") && argc > 2)
		return mode_cancel(atol(argv[2]));
	if (!strcmp(m, "pthreadexit") || !strcmp(m, "pthreadexit-term"))
		return mode_pthreadexit(m[11] == '-');
	if (!strcmp(m, "closefds") && argc > 3)
		return mode_closefds(argv[2], argv[3]);
	if (!strcmp(m, "acceptclose"))
		return mode_acceptclose();
	if (!strcmp(m, "dup2") && argc > 2)
		return mode_dup2(argv[2]);
	if (!strcmp(m, "crash") && argc > 4) {
		crash_ms = atol(argv[3]);
		crash_how = argv[4];
		return mode_crash(argv[2]);
	}
	die("unknown mode");
}
