/*
 * fds.h — the file descriptors the preload opened, and whether each one
 * is still ours (fds.c says how the program's closes are kept off them).
 *
 * A low part: it calls libc through the real-libc table (real.h) and
 * nothing else of the preload, so every other part may use it (clock.c
 * reads its CPU flags through it).
 */
#ifndef VRT_FDS_H
#define VRT_FDS_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

/* A descriptor of ours and its slot in the ownership table (fds.c): the
 * program may close or replace the number at any time, and from then on
 * it is not ours to read, write or close. slot -1: not in the table
 * (unguarded; only when the table is full). */
struct vrt_fd {
	int fd;
	int slot;
	unsigned gen; /* the slot's use: a stale handle matches nothing */
};
#define VRT_FD_NONE ((struct vrt_fd){-1, -1, 0})

/* Registers fd (the result of an open/socket/accept call; -1 passes
 * through) with its device and inode, moved above 2 if it was 0, 1 or 2
 * (the original number is closed). Any thread, no malloc. */
struct vrt_fd vrt_fds_own(int fd);
/* open/openat with O_CLOEXEC, registered; .fd -1 with errno on failure. */
struct vrt_fd vrt_fds_open(const char *path, int flags, mode_t mode);
struct vrt_fd vrt_fds_openat(struct vrt_fd dir, const char *name, int flags,
                             mode_t mode);
/* fn is called (once, on the program's thread, in its closing hook) just
 * before the program takes f's number, while it is still ours: a bounded
 * last flush. */
void vrt_fds_set_flush(struct vrt_fd f, void (*fn)(void));
/* Brackets one system call on f.fd: use returns 1 when the number is
 * still ours (done must follow), 0 when the program took it (no call may
 * be made). Keep the bracket to one call: a closing hook waits for it. */
int vrt_fds_use(struct vrt_fd f);
void vrt_fds_done(struct vrt_fd f);
/* 1 when f is not taken and fstat still shows the file we opened; a
 * mismatch (a raw close or dup2 behind the hooks) marks it taken. One
 * fstat: for helper threads, never the allocation path. */
int vrt_fds_check(struct vrt_fd f);
/* Closes f only while it is ours, forgets it either way and sets *f to
 * VRT_FD_NONE. 0, -EBADF when it was not ours any more, or -errno. */
int vrt_fds_close(struct vrt_fd *f);
/* read() with EINTR retry and write() of everything, bracketed; -EBADF /
 * errno EBADF when the number was taken. */
ssize_t vrt_fds_read(struct vrt_fd f, void *buf, size_t len);
int vrt_fds_write_all(struct vrt_fd f, const void *buf, size_t len);
/* One recv / send (MSG_NOSIGNAL added) / accept4 (SOCK_CLOEXEC added; the
 * new fd registered), bracketed; errno EBADF when the number was taken. */
ssize_t vrt_fds_recv(struct vrt_fd f, void *buf, size_t len, int flags);
ssize_t vrt_fds_send(struct vrt_fd f, const void *buf, size_t len, int flags);
struct vrt_fd vrt_fds_accept(struct vrt_fd f, int flags);
/* A small file read whole, through a registered fd opened and closed
 * here: at most max bytes into buf (not NUL-terminated); its length, or
 * -1 with errno. For helper threads and the constructor. */
ssize_t vrt_fds_read_path(const char *path, void *buf, size_t max);
/* Calls fn(name, arg) for each entry of the directory at path (".." and
 * "." included), through a registered fd, until fn returns nonzero: that
 * value, 0 when the listing ended, -1 with errno when the directory could
 * not be opened or read (or the program took its number). */
int vrt_fds_each_name(const char *path, int (*fn)(const char *name, void *arg),
                      void *arg);

/* Closing hooks: the program is about to close or replace every number in
 * [lo, hi]; ours among them are taken from now on. First calls their
 * flush functions (vrt_fds_set_flush) when may_flush (0 from a thread
 * already inside a hook, such as a signal handler that interrupted one:
 * the flush takes the writer's lock); then waits (bounded, no
 * cancellation point) for a thread of ours inside a bracket on one of
 * them. Returns how many were ours. Not in a vfork child. */
int vrt_fds_release(unsigned lo, unsigned hi, int may_flush);
/* 1 when a registered fd of ours lies in [lo, hi] (a scan of the table,
 * no system call). */
int vrt_fds_any(unsigned lo, unsigned hi);
/* Bit fd % 64 set for every number ever registered: a close() of any
 * other number skips vrt_fds_release with one load. */
extern _Atomic uint64_t vrt_fds_mask __attribute__((visibility("hidden")));
static inline int vrt_fds_maybe_ours(int fd)
{
	return fd >= 0 && (atomic_load_explicit(&vrt_fds_mask,
	                                        memory_order_relaxed) >>
	                   (fd % 64)) &
	                          1;
}

/* In a forked child, after the modules forgot their descriptors: closes
 * every registered one that is still ours (the parent's threads do not
 * exist here) and empties the table. */
void vrt_fds_after_fork_child(void);

#endif /* VRT_FDS_H */
