/*
 * inject.h — a small ptrace injector: every thread of a process seized and
 * stopped, its memory read and written through /proc/PID/mem, and a
 * function called on one borrowed thread while the others run, with the
 * thread's registers (general and extended state) and the stack bytes it
 * used put back exactly afterwards (inject.c says how). x86-64 Linux only.
 *
 * Conventions: functions return 0 on success or -1 with the reason in
 * in->why ("PID 123: ..."). Not thread-safe: one injector per thread of
 * ours, and it waits for any child of this process (waitpid(-1)), so the
 * caller starts no child of its own while one is in use.
 */
#ifndef VRT_INJECT_H
#define VRT_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum vrt_inject_tstate { VRT_INJECT_RUNNING, VRT_INJECT_STOPPED,
                         VRT_INJECT_GONE };

struct vrt_inject_thread {
	pid_t tid;
	int state;     /* enum vrt_inject_tstate */
	int sig;       /* a signal to deliver when it runs again, or 0 */
	int asked;     /* interrupted, its stop not reported yet */
	uint64_t rip, rsp, fs_base;
	long orig_rax, rax, rsi; /* at the stop: the syscall it was in */
};

struct vrt_inject_saved; /* inject.c */

struct vrt_inject {
	pid_t pid;
	int memfd;
	struct vrt_inject_thread *t;
	size_t n, cap;
	struct vrt_inject_saved *saved; /* the borrowed thread's context */
	size_t borrowed;                /* its index, when saved */
	/* Time accounting (CLOCK_MONOTONIC ns): every thread stopped, and
	 * one thread borrowed while the others run. */
	uint64_t all_stopped_ns, borrowed_ns, since;
	int all_stopped;
	char why[512];
};

/* Seizes every thread of pid (PTRACE_SEIZE, following new threads) and
 * stops them all. On failure nothing stays seized. */
int vrt_inject_seize(struct vrt_inject *in, pid_t pid);

/* Stops every running thread (threads born meanwhile too) and waits until
 * each has stopped, at most timeout_ms. */
int vrt_inject_stop_all(struct vrt_inject *in, int timeout_ms);
/* Lets every stopped thread run again (delivering what it was stopped
 * with). */
int vrt_inject_resume_all(struct vrt_inject *in);
/* Detaches from every thread (stopping them first where needed); a
 * borrowed thread gets its context back first. Always ends the seizure;
 * -1 when a step failed (the reason in why). */
int vrt_inject_release(struct vrt_inject *in);

/* Refreshes each stopped thread's rip, rsp, fs_base and syscall fields. */
int vrt_inject_regs(struct vrt_inject *in);

/* The index of a thread that is waiting in a system call where it holds no
 * lock a dlopen could need (epoll, poll, select, sleeps, accept, reads,
 * waits on a condition), the process's main thread first, among threads
 * whose stack has room below (stack_ok), or -1. */
long vrt_inject_pick(struct vrt_inject *in,
                     int (*stack_ok)(uint64_t rsp, void *arg), void *arg);

/* Calls fn(args[0..nargs-1]) on thread idx (stopped) with the other
 * threads running, waits at most timeout_ms for its return, and puts
 * *ret. An argument equal to VRT_INJECT_BLOB is replaced by the address
 * of a copy of blob (bloblen bytes) placed on the thread's stack, below
 * its red zone. The stack bytes used are restored; the thread stays
 * stopped (borrowed) for further calls until vrt_inject_return. */
#define VRT_INJECT_BLOB 0xb10bb10bb10bb10bull
int vrt_inject_call(struct vrt_inject *in, size_t idx, uint64_t fn,
                    const uint64_t *args, int nargs, const void *blob,
                    size_t bloblen, uint64_t *ret, int timeout_ms);
/* Puts the borrowed thread's registers back as they were before its first
 * call (it is stopped, and resumes as if nothing happened). */
int vrt_inject_return(struct vrt_inject *in);

/* The process's memory. */
int vrt_inject_read(struct vrt_inject *in, uint64_t addr, void *buf,
                    size_t len);
int vrt_inject_write(struct vrt_inject *in, uint64_t addr, const void *buf,
                     size_t len);

/* The name of a thread (/proc/PID/task/TID/comm), "" when unreadable. */
void vrt_inject_comm(pid_t pid, pid_t tid, char *out, size_t len);

void vrt_inject_free(struct vrt_inject *in);

#endif /* VRT_INJECT_H */
