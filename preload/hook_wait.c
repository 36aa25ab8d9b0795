/*
 * hook_wait.c — the wait family (waitpid, wait, wait4, waitid): every
 * process of a traced tree keeps the exit status of the traced children it
 * reaps, so a worker reaped by its own parent (vLLM's engine core reaps its
 * workers, Python's multiprocessing and subprocess reap theirs) is never
 * "exit ?" in a report. `vramtrace record` only sees its own command and
 * the orphans it adopts.
 *
 * After the real call reaped a child (a pid returned with a status, or
 * waitid's siginfo without WNOWAIT), and only when the run directory holds
 * that child's trace ("<pid>.vtrace": a process of the run), the hook
 * writes "<pid>.exit" beside it: "exit N" or "signal N", the format
 * `record` writes (trace_format.h). The file is made 0600 with
 * O_CREAT|O_EXCL|O_NOFOLLOW through a directory descriptor checked to be
 * ours and writable by nobody else (rundir.h), so a name planted there is
 * never written through; an existing file (record wrote it) is left alone.
 *
 * Threads: any program thread; no state of ours is touched but the run
 * directory's name (read-only after the constructor). The child's status
 * is read through our own variable when the caller passed NULL (serve_sim,
 * like many servers, reaps with waitpid(pid, NULL, 0)), and errno is the
 * real call's when we return. A vfork child calls none of these for the
 * parent (vrt_session_is_self). Nothing here blocks beyond the real call:
 * three file-system calls after a child was reaped.
 */
#include "hook.h"
#include "real.h"
#include "rundir.h"
#include "session.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The next definition of a libc function, looked up once (a race only
 * stores the same pointer twice). */
#define NEXT(fn)                                                               \
	static __typeof__(&fn) real_##fn;                                      \
	if (VRT_UNLIKELY(!real_##fn))                                          \
	real_##fn = (__typeof__(&fn))vrt_hooklib_real_dlsym(RTLD_NEXT, #fn)

/* "<pid>.exit" for a traced child pid that left with wait status st. */
static void note_child(pid_t pid, int st)
{
	const char *dir = vrt_session_run_dir();
	char name[32], line[32], why[64];
	int saved = errno, dfd, fd, n;

	if (pid <= 0 || !dir || !dir[0] || !vrt_session_is_self() ||
	    !(WIFEXITED(st) || WIFSIGNALED(st)))
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		goto out;
	snprintf(name, sizeof(name), "%d%s", (int)pid, VRT_TRACE_SUFFIX);
	if (vrt_rundir_check(dfd, geteuid(), why, sizeof(why)) ||
	    faccessat(dfd, name, F_OK, AT_SYMLINK_NOFOLLOW))
		goto close_dir;
	snprintf(name, sizeof(name), "%d.exit", (int)pid);
	n = WIFSIGNALED(st)
	            ? snprintf(line, sizeof(line), "signal %d\n", WTERMSIG(st))
	            : snprintf(line, sizeof(line), "exit %d\n",
	                       WEXITSTATUS(st));
	fd = openat(dfd, name,
	            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0) {
		/* A short write leaves a line the reader does not take: the
		 * status stays unknown, as without this file. */
		while (vrt_real.write(fd, line, (size_t)n) < 0 && errno == EINTR)
			;
		vrt_real.close(fd);
	}
close_dir:
	vrt_real.close(dfd);
out:
	errno = saved;
}

VRT_EXPORT pid_t waitpid(pid_t pid, int *wstatus, int options)
{
	NEXT(waitpid);
	int st = 0;
	pid_t r = real_waitpid
	                  ? real_waitpid(pid, &st, options)
	                  : (pid_t)syscall(SYS_wait4, pid, &st, options, NULL);
	if (r > 0) {
		note_child(r, st);
		if (wstatus)
			*wstatus = st;
	}
	return r;
}

VRT_EXPORT pid_t wait(int *wstatus)
{
	return waitpid(-1, wstatus, 0);
}

VRT_EXPORT pid_t wait4(pid_t pid, int *wstatus, int options,
                       struct rusage *usage)
{
	NEXT(wait4);
	int st = 0;
	pid_t r = real_wait4 ? real_wait4(pid, &st, options, usage)
	                     : (pid_t)syscall(SYS_wait4, pid, &st, options,
	                                      usage);
	if (r > 0) {
		note_child(r, st);
		if (wstatus)
			*wstatus = st;
	}
	return r;
}

VRT_EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *infop, int options)
{
	NEXT(waitid);
	int r = real_waitid ? real_waitid(idtype, id, infop, options)
	                    : (int)syscall(SYS_waitid, idtype, id, infop,
	                                   options, NULL);
	/* WNOWAIT leaves the child to be reaped later (and noted then). */
	if (r == 0 && infop && infop->si_pid > 0 && !(options & WNOWAIT) &&
	    (infop->si_code == CLD_EXITED || infop->si_code == CLD_KILLED ||
	     infop->si_code == CLD_DUMPED))
		note_child(infop->si_pid,
		           infop->si_code == CLD_EXITED
		                   ? (infop->si_status & 0xff) << 8
		                   : infop->si_status & 0x7f);
	return r;
}
