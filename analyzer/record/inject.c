/*
 * inject.c — the ptrace side of `vramtrace attach` (inject.h).
 *
 * Seizing: PTRACE_SEIZE every thread listed in /proc/PID/task with
 * PTRACE_O_TRACECLONE (a thread created by a seized one is seized from
 * birth and reports a stop), then PTRACE_INTERRUPT each and wait for its
 * stop; the listing is read again until it names no thread we lack.
 *
 * Events, whoever is waiting: a stop of a thread we asked to stop marks
 * it stopped; a signal-delivery stop keeps the signal, delivered when the
 * thread runs again (a thread we want running is continued with it at
 * once); a clone event adds the new thread, which reports its own stop;
 * an exit marks the thread gone (the process's main thread gone: it died).
 *
 * A call (vrt_inject_call): the borrowed thread's general registers and
 * extended state (NT_X86_XSTATE, else the FXSAVE area) are saved at its
 * first call. Its stack pointer moves below the 128-byte red zone and the
 * blob; a return address of 0 is pushed, so the function's return faults
 * at address 0 and the thread stops with SIGSEGV there, which is never
 * delivered. orig_rax is set to -1, so a system call the thread was
 * interrupted in is not restarted into our call; restoring the saved
 * registers (orig_rax and the -ERESTART* rax included) lets the kernel
 * restart it as it would have. While the call runs, every other thread
 * runs too: a lock the call needs (the loader's, malloc's) that another
 * thread held when we stopped it is released as it would be. The bytes
 * overwritten below the stack pointer are written back after each call.
 *
 * The borrowed thread is one waiting in a system call in which it holds
 * no lock a dlopen needs (vrt_inject_pick): futex only for waits on a
 * condition or a semaphore (FUTEX_WAIT_BITSET), not on a mutex.
 */
#include "inject.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XSTATE_MAX  (64u << 10)
#define RED_ZONE    128
#define CALL_MARGIN 512

struct vrt_inject_saved {
	struct user_regs_struct regs;
	unsigned xtype; /* NT_X86_XSTATE or NT_PRFPREG */
	size_t xlen;
	uint8_t xstate[XSTATE_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(struct vrt_inject *in, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static int fail(struct vrt_inject *in, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(in->why, sizeof(in->why), "PID %d: ", (int)in->pid);
	va_start(ap, fmt);
	vsnprintf(in->why + n, sizeof(in->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- time ------------------------------------------------------------------ */

static void mark_all_stopped(struct vrt_inject *in, int all)
{
	uint64_t t = now_ns();
	if (in->all_stopped && !all)
		in->all_stopped_ns += t - in->since;
	if (all && !in->all_stopped)
		in->since = t;
	in->all_stopped = all;
}

/* ---- threads --------------------------------------------------------------- */

static struct vrt_inject_thread *find(struct vrt_inject *in, pid_t tid)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->t[i].tid == tid)
			return &in->t[i];
	return NULL;
}

static struct vrt_inject_thread *add(struct vrt_inject *in, pid_t tid)
{
	struct vrt_inject_thread *t = find(in, tid);
	if (t) {
		if (t->state == VRT_INJECT_GONE) {
			memset(t, 0, sizeof(*t));
			t->tid = tid;
			t->state = VRT_INJECT_RUNNING;
		}
		return t;
	}
	if (in->n == in->cap) {
		size_t cap = in->cap ? 2 * in->cap : 64;
		void *p = realloc(in->t, cap * sizeof(*in->t));
		if (!p)
			return NULL;
		in->t = p;
		in->cap = cap;
	}
	t = &in->t[in->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->state = VRT_INJECT_RUNNING;
	return t;
}

static void cont(struct vrt_inject_thread *t)
{
	t->asked = 0;
	if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)t->sig) < 0) {
		if (errno == ESRCH) /* it died while stopped */
			t->state = VRT_INJECT_GONE;
		return;
	}
	t->sig = 0;
	t->state = VRT_INJECT_RUNNING;
}

/* One wait status of thread tid. want_running: threads that stop are
 * continued at once (a call is under way), except `keep`, whose stop is
 * returned through *kept_status. Returns 1 when it was keep's. */
static int on_event(struct vrt_inject *in, pid_t tid, int status,
                    int want_running, pid_t keep, int *kept_status)
{
	struct vrt_inject_thread *t = find(in, tid);
	if (!t) /* a thread born meanwhile whose clone event comes later */
		t = add(in, tid);
	if (!t)
		return 0;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		t->state = VRT_INJECT_GONE;
		return tid == keep ? (*kept_status = status, 1) : 0;
	}
	if (!WIFSTOPPED(status))
		return 0;
	int event = status >> 16, sig = WSTOPSIG(status);
	if (event == PTRACE_EVENT_CLONE) {
		unsigned long child = 0;
		if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &child) == 0 && child)
			add(in, (pid_t)child);
	} else if (event == 0 && tid != keep) {
		/* A signal for the program: delivered when it runs. */
		t->sig = sig;
	}
	t->state = VRT_INJECT_STOPPED;
	t->asked = 0;
	if (tid == keep && event == 0) {
		*kept_status = status;
		return 1;
	}
	if (want_running)
		cont(t);
	return 0;
}

static void sleep_us(long us)
{
	struct timespec ts = {0, us * 1000};
	nanosleep(&ts, NULL);
}

static int any_asked(struct vrt_inject *in)
{
	for (size_t i = 0; i < in->n; i++)
		if (in->t[i].state == VRT_INJECT_RUNNING)
			return 1;
	return 0;
}

/* Waits until no thread is running, at most timeout_ms. */
static int wait_stopped(struct vrt_inject *in, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	int spins = 0, kept;
	while (any_asked(in)) {
		int status;
		pid_t tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid > 0) {
			on_event(in, tid, status, 0, 0, &kept);
			/* A thread born stopped; ask the others again. */
			for (size_t i = 0; i < in->n; i++)
				if (in->t[i].state == VRT_INJECT_RUNNING &&
				    !in->t[i].asked &&
				    ptrace(PTRACE_INTERRUPT, in->t[i].tid, 0,
				           0) == 0)
					in->t[i].asked = 1;
			spins = 0;
			continue;
		}
		if (tid < 0 && errno == ECHILD) {
			/* nothing left to wait for: every thread is gone */
			for (size_t i = 0; i < in->n; i++)
				if (in->t[i].state == VRT_INJECT_RUNNING)
					in->t[i].state = VRT_INJECT_GONE;
			break;
		}
		if (now_ns() > deadline)
			return fail(in, "threads did not stop within %d ms",
			            timeout_ms);
		if (++spins > 50)
			sleep_us(100);
	}
	return 0;
}

/* The thread ids now listed for the process, into *tids (malloc'd). */
static ssize_t list_tasks(pid_t pid, pid_t **tids)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	size_t n = 0, cap = 64;
	pid_t *v = malloc(cap * sizeof(*v));
	struct dirent *de;
	while (v && (de = readdir(d))) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (n == cap) {
			pid_t *w = realloc(v, 2 * cap * sizeof(*v));
			if (!w) {
				free(v);
				v = NULL;
				break;
			}
			v = w;
			cap *= 2;
		}
		v[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	*tids = v;
	return v ? (ssize_t)n : -1;
}

int vrt_inject_stop_all(struct vrt_inject *in, int timeout_ms)
{
	for (size_t i = 0; i < in->n; i++) {
		struct vrt_inject_thread *t = &in->t[i];
		if (t->state != VRT_INJECT_RUNNING || t->asked)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			t->asked = 1;
		else if (errno == ESRCH)
			t->state = VRT_INJECT_GONE;
	}
	if (wait_stopped(in, timeout_ms))
		return -1;
	struct vrt_inject_thread *main = find(in, in->pid);
	if (!main || main->state == VRT_INJECT_GONE)
		return fail(in, "the process exited");
	mark_all_stopped(in, 1);
	return 0;
}

int vrt_inject_seize(struct vrt_inject *in, pid_t pid)
{
	char path[64];
	in->pid = pid;
	in->memfd = -1;
	in->why[0] = 0;
	in->all_stopped_ns = in->borrowed_ns = 0;
	in->all_stopped = 0;
	for (int round = 0; round < 100; round++) {
		pid_t *tids;
		ssize_t n = list_tasks(pid, &tids);
		int added = 0;
		if (n < 0) {
			fail(in, "cannot list its threads: %s",
			     strerror(errno));
			goto undo;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (find(in, tids[i]))
				continue;
			if (ptrace(PTRACE_SEIZE, tids[i], 0,
			           (void *)(long)PTRACE_O_TRACECLONE) < 0) {
				if (errno == ESRCH)
					continue; /* ended meanwhile */
				fail(in, "ptrace(PTRACE_SEIZE) of thread %d: %s",
				     (int)tids[i], strerror(errno));
				free(tids);
				goto undo;
			}
			if (!add(in, tids[i])) {
				free(tids);
				fail(in, "out of memory");
				goto undo;
			}
			added++;
		}
		free(tids);
		if (vrt_inject_stop_all(in, 5000))
			goto undo;
		if (!added && round)
			break;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	in->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (in->memfd < 0) {
		fail(in, "%s: %s", path, strerror(errno));
		goto undo;
	}
	return 0;
undo:;
	char why[sizeof(in->why)];
	memcpy(why, in->why, sizeof(why));
	vrt_inject_release(in);
	memcpy(in->why, why, sizeof(why));
	return -1;
}

int vrt_inject_resume_all(struct vrt_inject *in)
{
	mark_all_stopped(in, 0);
	for (size_t i = 0; i < in->n; i++)
		if (in->t[i].state == VRT_INJECT_STOPPED &&
		    !(in->saved && i == in->borrowed))
			cont(&in->t[i]);
	return 0;
}

int vrt_inject_release(struct vrt_inject *in)
{
	int rc = 0;
	char why[sizeof(in->why)] = "";
	if (in->n && vrt_inject_stop_all(in, 5000)) {
		rc = -1;
		memcpy(why, in->why, sizeof(why));
	}
	if (in->saved && vrt_inject_return(in) && !rc) {
		rc = -1;
		memcpy(why, in->why, sizeof(why));
	}
	mark_all_stopped(in, 0);
	for (size_t i = 0; i < in->n; i++) {
		struct vrt_inject_thread *t = &in->t[i];
		if (t->state == VRT_INJECT_GONE)
			continue;
		ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->sig);
		t->state = VRT_INJECT_GONE;
	}
	/* Reap what the detach left reported (nothing is waited for). */
	int status;
	while (waitpid(-1, &status, __WALL | WNOHANG) > 0)
		;
	if (in->memfd >= 0)
		close(in->memfd);
	in->memfd = -1;
	in->n = 0;
	if (rc)
		memcpy(in->why, why, sizeof(why));
	return rc;
}

void vrt_inject_free(struct vrt_inject *in)
{
	free(in->t);
	free(in->saved);
	in->t = NULL;
	in->saved = NULL;
	in->n = in->cap = 0;
}

/* ---- registers ------------------------------------------------------------- */

int vrt_inject_regs(struct vrt_inject *in)
{
	for (size_t i = 0; i < in->n; i++) {
		struct vrt_inject_thread *t = &in->t[i];
		struct user_regs_struct r;
		if (t->state != VRT_INJECT_STOPPED)
			continue;
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0) {
			if (errno == ESRCH) {
				t->state = VRT_INJECT_GONE;
				continue;
			}
			return fail(in, "registers of thread %d: %s",
			            (int)t->tid, strerror(errno));
		}
		t->rip = r.rip;
		t->rsp = r.rsp;
		t->fs_base = r.fs_base;
		t->orig_rax = (long)r.orig_rax;
		t->rax = (long)r.rax;
		t->rsi = (long)r.rsi;
	}
	return 0;
}

void vrt_inject_comm(pid_t pid, pid_t tid, char *out, size_t len)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid,
	         (int)tid);
	out[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t r = read(fd, out, len - 1);
	close(fd);
	out[r > 0 ? r : 0] = 0;
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
}

/* Interrupted in a system call that will be restarted (or return EINTR). */
static int interrupted(long rax)
{
	return rax == -512 /* ERESTARTSYS */ || rax == -513 /* ERESTARTNOINTR */ ||
	       rax == -514 /* ERESTARTNOHAND */ ||
	       rax == -516 /* ERESTART_RESTARTBLOCK */ || rax == -EINTR;
}

/* Waits in which the thread holds no lock a dlopen needs. */
static int safe_wait(const struct vrt_inject_thread *t)
{
	switch (t->orig_rax) {
	case SYS_epoll_wait:
	case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
	case SYS_epoll_pwait2:
#endif
	case SYS_poll:
	case SYS_ppoll:
	case SYS_select:
	case SYS_pselect6:
	case SYS_nanosleep:
	case SYS_clock_nanosleep:
	case SYS_pause:
	case SYS_rt_sigsuspend:
	case SYS_rt_sigtimedwait:
	case SYS_wait4:
	case SYS_waitid:
	case SYS_accept:
	case SYS_accept4:
	case SYS_read:
	case SYS_readv:
	case SYS_recvfrom:
	case SYS_recvmsg:
		return 1;
	case SYS_futex:
		return (t->rsi & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET;
	default:
		return 0;
	}
}

long vrt_inject_pick(struct vrt_inject *in,
                     int (*stack_ok)(uint64_t rsp, void *arg), void *arg)
{
	long best = -1;
	if (vrt_inject_regs(in))
		return -1;
	for (size_t i = 0; i < in->n; i++) {
		const struct vrt_inject_thread *t = &in->t[i];
		char comm[32];
		if (t->state != VRT_INJECT_STOPPED || t->sig ||
		    t->orig_rax < 0 || !interrupted(t->rax) || !safe_wait(t) ||
		    (stack_ok && !stack_ok(t->rsp, arg)))
			continue;
		vrt_inject_comm(in->pid, t->tid, comm, sizeof(comm));
		if (!strncmp(comm, "vramtrace-", 10))
			continue; /* an agent's thread of an earlier attach */
		if (t->tid == in->pid)
			return (long)i;
		if (best < 0)
			best = (long)i;
	}
	return best;
}

/* ---- memory ---------------------------------------------------------------- */

int vrt_inject_read(struct vrt_inject *in, uint64_t addr, void *buf,
                    size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(in->memfd, (char *)buf + done, len - done,
		                  (off_t)(addr + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(in, "cannot read %zu bytes at 0x%llx: %s",
			            len, (unsigned long long)addr,
			            r < 0 ? strerror(errno) : "end of memory");
		done += (size_t)r;
	}
	return 0;
}

int vrt_inject_write(struct vrt_inject *in, uint64_t addr, const void *buf,
                     size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pwrite(in->memfd, (const char *)buf + done,
		                   len - done, (off_t)(addr + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return fail(in, "cannot write %zu bytes at 0x%llx: %s",
			            len, (unsigned long long)addr,
			            r < 0 ? strerror(errno) : "end of memory");
		done += (size_t)r;
	}
	return 0;
}

/* ---- calls ----------------------------------------------------------------- */

static int save_context(struct vrt_inject *in, size_t idx)
{
	struct vrt_inject_saved *s = in->saved;
	pid_t tid = in->t[idx].tid;
	if (!s && !(s = in->saved = malloc(sizeof(*s))))
		return fail(in, "out of memory");
	if (ptrace(PTRACE_GETREGS, tid, 0, &s->regs) < 0)
		return fail(in, "registers of thread %d: %s", (int)tid,
		            strerror(errno));
	struct iovec iov = {s->xstate, sizeof(s->xstate)};
	s->xtype = NT_X86_XSTATE;
	if (ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_X86_XSTATE, &iov) <
	    0) {
		/* No XSAVE: the FXSAVE area holds the x87 and SSE state. */
		iov.iov_len = sizeof(s->xstate);
		s->xtype = NT_PRFPREG;
		if (ptrace(PTRACE_GETREGSET, tid, (void *)(long)NT_PRFPREG,
		           &iov) < 0)
			return fail(in, "floating-point state of thread %d: %s",
			            (int)tid, strerror(errno));
	}
	s->xlen = iov.iov_len;
	in->borrowed = idx;
	return 0;
}

static int restore_context(struct vrt_inject *in)
{
	struct vrt_inject_saved *s = in->saved;
	pid_t tid = in->t[in->borrowed].tid;
	struct iovec iov = {s->xstate, s->xlen};
	if (ptrace(PTRACE_SETREGS, tid, 0, &s->regs) < 0 ||
	    ptrace(PTRACE_SETREGSET, tid, (void *)(long)s->xtype, &iov) < 0)
		return fail(in, "cannot restore the registers of thread %d: "
		                "%s",
		            (int)tid, strerror(errno));
	return 0;
}

int vrt_inject_return(struct vrt_inject *in)
{
	if (!in->saved)
		return 0;
	int rc = restore_context(in);
	in->t[in->borrowed].sig = 0; /* our SIGSEGV: never delivered */
	free(in->saved);
	in->saved = NULL;
	return rc;
}

int vrt_inject_call(struct vrt_inject *in, size_t idx, uint64_t fn,
                    const uint64_t *args, int nargs, const void *blob,
                    size_t bloblen, uint64_t *ret, int timeout_ms)
{
	struct vrt_inject_thread *t = &in->t[idx];
	if (idx >= in->n || t->state != VRT_INJECT_STOPPED || nargs > 6)
		return fail(in, "no thread to call on");
	if (in->saved && in->borrowed != idx)
		return fail(in, "another thread is borrowed");
	if (!in->saved && save_context(in, idx))
		return -1;
	struct user_regs_struct r = in->saved->regs;
	uint64_t sp = (r.rsp - RED_ZONE - bloblen) & ~15ull;
	uint64_t blob_at = sp;
	sp = ((sp - CALL_MARGIN) & ~15ull) - 8;
	size_t keep = (size_t)(r.rsp - sp);
	uint8_t *old = malloc(keep);
	uint64_t zero = 0;
	if (!old)
		return fail(in, "out of memory");
	if (vrt_inject_read(in, sp, old, keep) ||
	    (bloblen && vrt_inject_write(in, blob_at, blob, bloblen)) ||
	    vrt_inject_write(in, sp, &zero, sizeof(zero))) {
		free(old);
		return -1;
	}
	unsigned long long *reg[6] = {&r.rdi, &r.rsi, &r.rdx,
	                              &r.rcx, &r.r8,  &r.r9};
	for (int i = 0; i < nargs; i++)
		*reg[i] = args[i] == VRT_INJECT_BLOB ? blob_at : args[i];
	r.rip = fn;
	r.rsp = sp;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1;
	int rc = -1;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, &r) < 0) {
		fail(in, "cannot set the registers of thread %d: %s",
		     (int)t->tid, strerror(errno));
		goto restore;
	}
	/* Every other thread runs while the call does. */
	vrt_inject_resume_all(in);
	uint64_t start = now_ns();
	uint64_t deadline = start + (uint64_t)timeout_ms * 1000000u;
	t->sig = 0;
	cont(t);
	int status = 0, spins = 0;
	for (;;) {
		int st;
		pid_t tid = waitpid(-1, &st, __WALL | WNOHANG);
		if (tid > 0) {
			if (on_event(in, tid, st, 1, t->tid, &status))
				break;
			spins = 0;
			continue;
		}
		if (tid < 0 && errno == ECHILD) {
			fail(in, "the process exited during the call");
			goto out;
		}
		if (now_ns() > deadline) {
			/* Still inside the function: its registers cannot be
			 * put back under it (it may hold a lock), so the
			 * thread is left to finish it. */
			fail(in, "the call did not return within %d ms (thread "
			         "%d is left inside it)",
			     timeout_ms, (int)t->tid);
			free(in->saved);
			in->saved = NULL;
			goto out;
		}
		if (++spins > 50)
			sleep_us(100);
	}
	in->borrowed_ns += now_ns() - start;
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		fail(in, "the process ended during the call");
		goto out;
	}
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0) {
		fail(in, "registers of thread %d: %s", (int)t->tid,
		     strerror(errno));
		goto out;
	}
	if (WSTOPSIG(status) != SIGSEGV || r.rip != 0) {
		/* A fault inside the function: nothing of ours to undo
		 * safely but the registers. */
		fail(in, "the call stopped with signal %d at 0x%llx",
		     WSTOPSIG(status), (unsigned long long)r.rip);
		t->sig = 0;
		goto restore;
	}
	*ret = r.rax;
	t->sig = 0;
	rc = 0;
restore:
	if (vrt_inject_write(in, sp, old, keep))
		rc = -1;
out:
	free(old);
	return rc;
}
