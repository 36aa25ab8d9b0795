/*
 * resolvelog.c — the resolver log (VRAMTRACE_RESOLVE_LOG=1): one line per
 * look-up of a driver function by the host, through our cuGetProcAddress
 * wrappers or dlsym on the driver's handle, saying what was asked, what the
 * driver answered and what the caller got: our wrapper or the driver's own
 * function. It shows, on a real runtime and without a GPU, which entry
 * points the runtime will call through the hooks and that nothing else was
 * touched (tests/realcuda/).
 *
 * "<run dir>/<pid>.resolve", text, one look-up a line (docs/resolve-log.md):
 *   via name version flags result status answer object symbol pointer
 * object and symbol are what dladdr says of the pointer the caller got,
 * so they are evidence independent of our own bookkeeping.
 *
 * Cost: off by default, when a look-up reads one option. Look-ups happen a
 * few hundred times at a runtime's start-up, never per allocation.
 *
 * Threads: any. A spin lock is held to open the file and write one line;
 * its word is the pid of the holder, so a fork child that inherited it
 * held (by a parent's thread, which does not exist in the child) takes it
 * over, and opens a file of its own. The file is opened O_APPEND with
 * O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600, at the first look-up. If it
 * cannot be made, the log is given up for this process in silence: it is
 * a debugging aid, and the host must not hear about it.
 */
#include "hook.h"
#include "real.h"
#include "session.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WORD_MAX 160 /* bytes of a name kept in a line */

static _Atomic int log_lock; /* 0 free, else the holder's pid */
static int log_fd = -1;      /* log_lock */
static pid_t log_pid;        /* the process log_fd belongs to; log_lock */

static void lock(pid_t self)
{
	for (;;) {
		int v = 0;
		if (atomic_compare_exchange_weak(&log_lock, &v, (int)self))
			return;
		/* Held in the parent when it forked us: that holder is gone. */
		if (v != 0 && v != (int)self &&
		    atomic_compare_exchange_strong(&log_lock, &v, (int)self))
			return;
		sched_yield();
	}
}

static void unlock(void)
{
	atomic_store(&log_lock, 0);
}

/* "<pid>.resolve", or "<pid>-N.resolve" when a file of a past process
 * with the same pid is there. log_lock held. */
static int open_log(pid_t self)
{
	const char *dir = vrt_session_run_dir();
	if (!dir || !dir[0])
		return -1;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -1;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	int fd = -1;
	for (int i = 0; i < 10 && fd < 0; i++) {
		char name[64];
		if (i == 0)
			snprintf(name, sizeof(name), "%d.resolve", (int)self);
		else
			snprintf(name, sizeof(name), "%d-%d.resolve", (int)self,
			         i);
		fd = openat(dfd, name,
		            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		                    O_CLOEXEC | O_APPEND,
		            0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	vrt_real.close(dfd);
	if (fd >= 0) {
		static const char head[] =
		        "# vramtrace resolver log: via name version flags "
		        "result status answer object symbol pointer\n";
		if (vrt_real.write(fd, head, sizeof(head) - 1) < 0) {
			/* The lines that follow will fail the same way and
			 * be dropped the same way; nothing to undo. */
		}
	}
	return fd;
}

int vrt_resolvelog_on(void)
{
	return vrt_options_int(VRT_OPT_RESOLVE_LOG) != 0;
}

/* Appends s, with anything that is not a printable non-space ASCII byte
 * as '?', so that every line splits on single spaces. */
static size_t put_word(char *p, size_t room, const char *s)
{
	size_t n = 0;
	if (!s)
		s = "(null)";
	else if (!s[0])
		s = "\"\"";
	for (; *s && n + 1 < room && n < WORD_MAX; s++, n++)
		p[n] = (*s > ' ' && *s < 0x7f) ? *s : '?';
	return n;
}

static size_t put_num(char *p, size_t room, long long v)
{
	int k = v == VRT_RESOLVELOG_NONE ? snprintf(p, room, " -")
	                                 : snprintf(p, room, " %lld", v);
	return k < 0 ? 0 : (size_t)k < room ? (size_t)k : room - 1;
}

void vrt_resolvelog_note(const char *via, const char *name, long long version,
                         long long flags, long long result, long long status,
                         int wrapped, const void *ptr)
{
	char line[1024]; /* 3 + 2 words of WORD_MAX, 4 numbers, a pointer */
	size_t n = 0, room = sizeof(line) - 1;
	n += put_word(line + n, room - n, via);
	line[n++] = ' ';
	n += put_word(line + n, room - n, name);
	n += put_num(line + n, room - n, version);
	n += put_num(line + n, room - n, flags);
	n += put_num(line + n, room - n, result);
	n += put_num(line + n, room - n, status);
	const char *answer = !ptr ? "none" : wrapped ? "wrapper" : "driver";
	const char *object = "-", *symbol = "-";
	Dl_info info;
	if (ptr && dladdr(ptr, &info)) {
		if (info.dli_fname) {
			const char *slash = strrchr(info.dli_fname, '/');
			object = slash ? slash + 1 : info.dli_fname;
		}
		if (info.dli_sname)
			symbol = info.dli_sname;
	}
	const char *words[] = {answer, object, symbol};
	for (size_t i = 0; i < 3 && n + 2 < room; i++) {
		line[n++] = ' ';
		n += put_word(line + n, room - n, words[i]);
	}
	int k = snprintf(line + n, room - n, " %p\n", ptr);
	n += k < 0 ? 0 : (size_t)k < room - n ? (size_t)k : room - n - 1;
	if (line[n - 1] != '\n')
		line[n++] = '\n';

	pid_t self = getpid();
	lock(self);
	if (log_pid != self) {
		/* The parent's file, inherited by a fork: not ours to write. */
		if (log_fd >= 0)
			vrt_real.close(log_fd);
		log_fd = open_log(self);
		log_pid = self;
	}
	if (log_fd >= 0) {
		const char *p = line;
		size_t left = n;
		while (left) {
			ssize_t w = vrt_real.write(log_fd, p, left);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break; /* disk full and the like: a lost line */
			p += w;
			left -= (size_t)w;
		}
	}
	unlock();
}
