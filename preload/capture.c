/*
 * capture.c — the capture state every hook reads, and the sticky stop.
 *
 * vrt_state moves INIT → ARMED (constructor) → ON (first recorded event,
 * writer started) → OFF (shutdown or any internal failure), and back to
 * ARMED only in a forked child. Hooks read it with a relaxed load: a hook
 * that races with the switch to OFF records one last event or passes
 * through, both harmless. The first failure reason is kept for the one
 * warning printed at exit.
 *
 * Helper threads (writer, sampler, control, metrics) register their
 * thread ids when they start and remove them when they end, so the
 * lifecycle can tell when every thread left is one of ours (the program's
 * main returned through pthread_exit and its last thread has ended: glibc
 * would exit the process now, but our threads keep it alive). The set is
 * a small array of atomics; the check reads /proc/self/task.
 */
#include "clock.h"
#include "core.h"
#include "real.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_HELPERS 16

_Atomic int vrt_state;
int (*vrt_state_start)(void);
static _Atomic(const char *) fail_reason;

void vrt_capture_fail(const char *reason)
{
	const char *none = NULL;
	atomic_compare_exchange_strong(&fail_reason, &none, reason);
	atomic_store(&vrt_state, VRT_STATE_OFF);
}

const char *vrt_capture_fail_reason(void)
{
	return atomic_load(&fail_reason);
}

void vrt_capture_forget_failure(void)
{
	atomic_store(&fail_reason, NULL);
}

void vrt_capture_warn(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "vramtrace: warning: pid %d: ",
	                 (int)getpid());
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(line))
		n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	/* Nothing to do if stderr is gone: the warning is lost. */
	while (vrt_real.write(STDERR_FILENO, line, (size_t)n) < 0 &&
	       errno == EINTR)
		;
}

static _Atomic pid_t helpers[MAX_HELPERS];
void (*vrt_capture_tick)(void);

void vrt_capture_thread_started(_Atomic int *flag)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < MAX_HELPERS; i++) {
		pid_t none = 0;
		if (atomic_compare_exchange_strong(&helpers[i], &none, tid))
			break;
	}
	atomic_store(flag, 1);
}

void vrt_capture_thread_exiting(void)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < MAX_HELPERS; i++) {
		pid_t me = tid;
		if (atomic_compare_exchange_strong(&helpers[i], &me, 0))
			break;
	}
}

void vrt_capture_forget_helpers(void)
{
	for (int i = 0; i < MAX_HELPERS; i++)
		atomic_store(&helpers[i], 0);
}

static int is_helper(pid_t tid)
{
	for (int i = 0; i < MAX_HELPERS; i++)
		if (atomic_load(&helpers[i]) == tid)
			return 1;
	return 0;
}

/* 1 when thread tid of this process is running (not a zombie: a main
 * thread that called pthread_exit stays listed as one until the process
 * ends). */
static int task_alive(const char *tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	struct vrt_fd f = vrt_fds_open(path, O_RDONLY, 0);
	if (f.fd < 0)
		return 0; /* gone between the listing and now */
	ssize_t n = vrt_fds_read(f, buf, sizeof(buf) - 1);
	vrt_fds_close(&f);
	if (n <= 0)
		return 1; /* unreadable: assume the program still runs */
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return !(p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'));
}

/* 1 (stop) at a thread of the program's: not a helper of ours, and
 * running. */
static int program_thread(const char *name, void *arg)
{
	(void)arg;
	if (name[0] < '0' || name[0] > '9')
		return 0;
	return !is_helper((pid_t)atoi(name)) && task_alive(name);
}

int vrt_capture_only_helpers_left(void)
{
	/* An unreadable listing counts as other threads. */
	return vrt_fds_each_name("/proc/self/task", program_thread, NULL) == 0;
}

void vrt_capture_wait_started(_Atomic int *flag)
{
	uint64_t t0 = vrt_clock_mono_ns();
	while (!atomic_load(flag)) {
		sched_yield();
		if (vrt_clock_mono_ns() - t0 > 200000000u)
			return; /* a slow start only loses the guarantee */
	}
}
