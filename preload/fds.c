/*
 * fds.c — the file descriptors the preload opened, and whether each one
 * is still ours.
 *
 * A program may close every descriptor it did not open itself (a daemon's
 * close_range or closefrom, a close() loop, a subprocess child) or dup2
 * over any number, and then reuse the number for its own log file, pipe
 * or socket. A write or close through that number afterwards would land
 * in the program's file. So every descriptor the preload keeps is
 * registered here with the (st_dev, st_ino) it had when we opened it:
 *
 *   - the hooks of close, close_range, closefrom, dup2 and dup3
 *     (hook_libc.c) call vrt_fds_release before the real call: each
 *     registered number in the range is marked taken, and the hook waits
 *     (bounded) for a thread of ours that is between its check and its
 *     system call on that number;
 *   - every read, write, accept or close of ours goes through
 *     vrt_fds_use/vrt_fds_done (or the helpers built on them), which
 *     refuse a taken number; a raw system call bypasses the hooks, so the
 *     long-lived users also compare the device and inode (vrt_fds_check:
 *     the writer once per frame, the endpoints once per poll);
 *   - vrt_fds_close closes only a number still ours, and forgets it.
 *
 * A taken number is never used or closed by us again; its owner stops
 * (the writer: recording off with one warning; the control and metrics
 * endpoints: the service off with one warning). Our numbers are also kept
 * off 0, 1 and 2, which daemons replace most often.
 *
 * Threads: any, hooks included: no lock, no malloc. A slot is claimed by
 * a CAS on its state; its fd, device and inode are written before the
 * state is published (release) and read after it (acquire). taken and
 * busy are sequentially consistent: a hook stores taken then reads busy,
 * a user stores busy then reads taken (Dekker), so either the user sees
 * the number taken or the hook sees the user busy and waits for it.
 *
 * Every system call here that libc's hooked names would make goes through
 * the real-libc table (real.h): our own closes, reads and writes never
 * pass through the preload's hooks. This file calls no other part of the
 * preload (its bounded wait reads CLOCK_MONOTONIC itself), so every part
 * may use it, the clock included.
 *
 * Fork: a child starts with every slot of the parent. The lifecycle's
 * child handlers close what their modules hold (verified), then
 * vrt_fds_after_fork_child closes what remains verified-ours (a helper
 * thread's short-lived descriptor, whose thread does not exist here) and
 * empties the table.
 */
#include "fds.h"
#include "real.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SLOTS 32
/* How long a closing hook waits for a thread of ours that is between its
 * check and its system call on the number. The call itself, once in the
 * kernel, holds the old file and cannot reach the program's new one, so
 * only that short window needs covering; a thread of ours blocked inside
 * a receive or a write to a stalled disk is past it. */
#define RELEASE_WAIT_NS 200000000L

enum { FREE = 0, CLAIMED = 1, LIVE = 2 };

struct slot {
	_Atomic int state;
	_Atomic int taken;
	_Atomic int busy;
	_Atomic int fd; /* relaxed: scans may read it while it is reused */
	_Atomic unsigned gen; /* bumped at each claim */
	dev_t dev;
	ino_t ino;
	void (*_Atomic flush)(void); /* called once before it is taken */
};

static struct slot slots[SLOTS];
_Atomic uint64_t vrt_fds_mask;

/* CLOCK_MONOTONIC in ns, for the bounded wait of vrt_fds_release. */
static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The slot of a handle, or NULL when it is unguarded. */
static struct slot *slot_of(struct vrt_fd f)
{
	if (f.slot < 0 || f.slot >= SLOTS)
		return NULL;
	struct slot *s = &slots[f.slot];
	if (atomic_load_explicit(&s->state, memory_order_acquire) != LIVE ||
	    atomic_load_explicit(&s->fd, memory_order_relaxed) != f.fd ||
	    atomic_load_explicit(&s->gen, memory_order_relaxed) != f.gen)
		return NULL;
	return s;
}

struct vrt_fd vrt_fds_own(int fd)
{
	struct vrt_fd f = {fd, -1, 0};
	if (fd < 0)
		return f;
	if (fd <= 2) {
		/* A daemon's dup2(devnull, 1) must not land on our file. */
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		if (hi >= 0) {
			vrt_real.close(fd);
			f.fd = fd = hi;
		}
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return f; /* cannot happen for a fresh fd: then unguarded */
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		int free_ = FREE;
		if (!atomic_compare_exchange_strong(&s->state, &free_, CLAIMED))
			continue;
		atomic_store_explicit(&s->fd, fd, memory_order_relaxed);
		f.gen = atomic_fetch_add_explicit(&s->gen, 1,
		                                  memory_order_relaxed) +
		        1;
		s->dev = st.st_dev;
		s->ino = st.st_ino;
		atomic_store(&s->taken, 0);
		atomic_store(&s->busy, 0);
		atomic_store(&s->flush, NULL);
		atomic_fetch_or(&vrt_fds_mask, 1ull << (fd % 64));
		atomic_store_explicit(&s->state, LIVE, memory_order_release);
		f.slot = i;
		return f;
	}
	/* More than SLOTS at once never happens (we hold a handful); the fd
	 * then works unguarded rather than not at all. */
	return f;
}

void vrt_fds_set_flush(struct vrt_fd f, void (*fn)(void))
{
	struct slot *s = slot_of(f);
	if (s)
		atomic_store(&s->flush, fn);
}

/* 1 with *s for a handle whose slot is live, 0 for an unguarded fd (no
 * slot: used as it is), -1 for none or a stale handle. */
static int lookup(struct vrt_fd f, struct slot **s)
{
	*s = f.fd < 0 ? NULL : slot_of(f);
	if (*s)
		return 1;
	return f.fd >= 0 && f.slot < 0 ? 0 : -1;
}

int vrt_fds_use(struct vrt_fd f)
{
	struct slot *s;
	int k = lookup(f, &s);
	if (k <= 0)
		return k == 0;
	atomic_fetch_add(&s->busy, 1);
	if (atomic_load(&s->taken)) {
		atomic_fetch_sub(&s->busy, 1);
		return 0;
	}
	return 1;
}

void vrt_fds_done(struct vrt_fd f)
{
	struct slot *s = slot_of(f);
	if (s)
		atomic_fetch_sub(&s->busy, 1);
}

int vrt_fds_check(struct vrt_fd f)
{
	struct slot *s;
	int k = lookup(f, &s);
	if (k <= 0)
		return k == 0;
	if (atomic_load(&s->taken))
		return 0;
	struct stat st;
	if (fstat(f.fd, &st) < 0 || st.st_dev != s->dev ||
	    st.st_ino != s->ino) {
		/* Closed or replaced behind the hooks (a raw system call). */
		atomic_store(&s->taken, 1);
		return 0;
	}
	return 1;
}

int vrt_fds_close(struct vrt_fd *f)
{
	struct vrt_fd g = *f;
	*f = VRT_FD_NONE;
	if (g.fd < 0)
		return -EBADF;
	struct slot *s = slot_of(g);
	if (!s && g.slot >= 0)
		return -EBADF; /* already forgotten: not ours to close */
	int ours = vrt_fds_check(g);
	/* Forget the slot first: a closing hook of the program's that runs
	 * meanwhile must not find it. */
	if (s)
		atomic_store_explicit(&s->state, FREE, memory_order_release);
	if (!ours)
		return -EBADF;
	return vrt_real.close(g.fd) < 0 ? -errno : 0;
}

int vrt_fds_any(unsigned lo, unsigned hi)
{
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) !=
		            LIVE)
			continue;
		unsigned fd = (unsigned)atomic_load_explicit(
		        &s->fd, memory_order_relaxed);
		if (fd >= lo && fd <= hi)
			return 1;
	}
	return 0;
}

int vrt_fds_release(unsigned lo, unsigned hi, int may_flush)
{
	int n = 0;
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) !=
		            LIVE)
			continue;
		unsigned fd = (unsigned)atomic_load_explicit(
		        &s->fd, memory_order_relaxed);
		if (fd < lo || fd > hi)
			continue;
		/* The owner's last word while the number is still ours (the
		 * writer puts what it holds on disk, bounded). */
		void (*flush)(void) = atomic_exchange(&s->flush, NULL);
		if (flush && may_flush && !atomic_load(&s->taken))
			flush();
		atomic_store(&s->taken, 1);
		n++;
		/* sched_yield, not a sleep: a hook must not become a
		 * cancellation point the program did not expect. */
		uint64_t t0 = mono_ns();
		while (atomic_load(&s->busy) > 0 &&
		       mono_ns() - t0 < RELEASE_WAIT_NS)
			sched_yield();
	}
	return n;
}

struct vrt_fd vrt_fds_open(const char *path, int flags, mode_t mode)
{
	return vrt_fds_own(open(path, flags | O_CLOEXEC, mode));
}

struct vrt_fd vrt_fds_openat(struct vrt_fd dir, const char *name, int flags,
                             mode_t mode)
{
	if (!vrt_fds_use(dir)) {
		errno = EBADF;
		return VRT_FD_NONE;
	}
	int fd = openat(dir.fd, name, flags | O_CLOEXEC, mode);
	int e = errno;
	vrt_fds_done(dir);
	errno = e;
	return vrt_fds_own(fd);
}

ssize_t vrt_fds_read(struct vrt_fd f, void *buf, size_t len)
{
	if (!vrt_fds_use(f)) {
		errno = EBADF;
		return -1;
	}
	ssize_t r;
	do
		r = vrt_real.read(f.fd, buf, len);
	while (r < 0 && errno == EINTR);
	int e = errno;
	vrt_fds_done(f);
	errno = e;
	return r;
}

int vrt_fds_write_all(struct vrt_fd f, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		if (!vrt_fds_use(f))
			return -EBADF;
		ssize_t w = vrt_real.write(f.fd, p, len);
		int e = errno;
		vrt_fds_done(f);
		if (w < 0) {
			if (e == EINTR)
				continue;
			return -e;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

ssize_t vrt_fds_recv(struct vrt_fd f, void *buf, size_t len, int flags)
{
	if (!vrt_fds_use(f)) {
		errno = EBADF;
		return -1;
	}
	ssize_t r = vrt_real.recv(f.fd, buf, len, flags);
	int e = errno;
	vrt_fds_done(f);
	errno = e;
	return r;
}

ssize_t vrt_fds_send(struct vrt_fd f, const void *buf, size_t len, int flags)
{
	if (!vrt_fds_use(f)) {
		errno = EBADF;
		return -1;
	}
	ssize_t r = vrt_real.send(f.fd, buf, len, flags | MSG_NOSIGNAL);
	int e = errno;
	vrt_fds_done(f);
	errno = e;
	return r;
}

struct vrt_fd vrt_fds_accept(struct vrt_fd f, int flags)
{
	if (!vrt_fds_use(f)) {
		errno = EBADF;
		return VRT_FD_NONE;
	}
	int c = vrt_real.accept4(f.fd, NULL, NULL, flags | SOCK_CLOEXEC);
	int e = errno;
	vrt_fds_done(f);
	errno = e;
	return vrt_fds_own(c);
}

ssize_t vrt_fds_read_path(const char *path, void *buf, size_t max)
{
	struct vrt_fd f = vrt_fds_open(path, O_RDONLY, 0);
	size_t len = 0;
	ssize_t r = 0;
	if (f.fd < 0)
		return -1;
	while (len < max &&
	       (r = vrt_fds_read(f, (char *)buf + len, max - len)) > 0)
		len += (size_t)r;
	int e = errno;
	vrt_fds_close(&f);
	if (r < 0) {
		errno = e;
		return -1;
	}
	return (ssize_t)len;
}

int vrt_fds_each_name(const char *path, int (*fn)(const char *name, void *arg),
                      void *arg)
{
	struct vrt_fd d = vrt_fds_open(path, O_RDONLY | O_DIRECTORY, 0);
	/* Aligned for the kernel's records (their 64-bit fields). */
	_Alignas(8) char buf[4096];
	int rc = 0, e = 0;
	if (d.fd < 0)
		return -1;
	while (!rc) {
		if (!vrt_fds_use(d)) {
			e = EBADF;
			break;
		}
		long n = syscall(SYS_getdents64, d.fd, buf, sizeof(buf));
		e = errno;
		vrt_fds_done(d);
		if (n <= 0) {
			e = n < 0 ? e : 0;
			break;
		}
		for (long off = 0; off < n && !rc;) {
			/* struct linux_dirent64 */
			const char *rec = buf + off;
			unsigned short reclen;
			memcpy(&reclen, rec + 16, sizeof(reclen));
			rc = fn(rec + 19, arg);
			off += reclen;
		}
	}
	vrt_fds_close(&d);
	if (!rc && e) {
		errno = e;
		return -1;
	}
	return rc;
}

void vrt_fds_after_fork_child(void)
{
	for (int i = 0; i < SLOTS; i++) {
		struct slot *s = &slots[i];
		if (atomic_load(&s->state) == LIVE) {
			/* The parent's threads do not exist here: nobody is
			 * busy, and each of their fds is closed when it is
			 * still the file they opened. */
			atomic_store(&s->busy, 0);
			struct vrt_fd f = {atomic_load(&s->fd), i,
			                   atomic_load(&s->gen)};
			vrt_fds_close(&f);
		}
		atomic_store(&s->state, FREE);
	}
	atomic_store(&vrt_fds_mask, 0);
}
