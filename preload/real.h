/*
 * real.h — the real libc functions behind the preload's own I/O (real.c).
 *
 * The preload defines libc's names (hook_libc.c: read, write, close,
 * accept4, recv, send, listen, dlsym...): a call by that name from inside
 * the library goes to our own hook. So the preload's own reads, writes,
 * closes, sockets and look-ups go through this one table instead —
 * `vrt_real.write(fd, buf, n)` — and never through a hooked name; which
 * calls are ours is plain in the code, and none can re-enter a hook.
 * tests/preload/check_own_io.py fails the build's tests when an object of
 * the preload references a hooked name for its own use.
 *
 * Every entry is usable from the start: until vrt_real_fill runs (another
 * library's constructor before ours, the agent before its trampolines
 * exist, a unit test that links the core alone), an entry is a raw system
 * call (syscall(SYS_write, ...)), and dlsym is libc's own found with
 * dlvsym. vrt_real_fill stores each function the hooks' own resolver
 * gives (the next definition after the preload; the agent's trampolines)
 * once; an entry is one aligned pointer, written whole, so a thread that
 * reads it during the store gets either function. Nothing here locks or
 * allocates: vfork children and signal handlers may call any entry.
 */
#ifndef VRT_REAL_H
#define VRT_REAL_H

#include <sys/socket.h>
#include <sys/types.h>

/* The calls the preload makes for itself, by libc's names. dlsym is not
 * in the list: it is the table's first field, filled by
 * vrt_real_init_dlsym (hook_libc.c's dlsym stub reads it at offset 0). */
#define VRT_REAL_LIBC(X)                                                       \
	X(read, ssize_t, (int fd, void *buf, size_t len))                      \
	X(write, ssize_t, (int fd, const void *buf, size_t len))               \
	X(close, int, (int fd))                                                \
	X(recv, ssize_t, (int fd, void *buf, size_t len, int flags))           \
	X(send, ssize_t, (int fd, const void *buf, size_t len, int flags))     \
	X(accept4, int,                                                        \
	  (int fd, struct sockaddr *addr, socklen_t *len, int flags))          \
	X(listen, int, (int fd, int backlog))

struct vrt_real_libc {
	void *(*dlsym)(void *handle, const char *name);
#define VRT_REAL_FIELD(name, ret, args) ret(*name) args;
	VRT_REAL_LIBC(VRT_REAL_FIELD)
#undef VRT_REAL_FIELD
};

extern struct vrt_real_libc vrt_real __attribute__((visibility("hidden")));

/* Looks libc's dlsym up (dlvsym, which is not interposed) into
 * vrt_real.dlsym; idempotent, any thread. */
void vrt_real_init_dlsym(void);
/* libc's dlsym(handle, name), NULL when libc's could not be found. The
 * hooks' look-ups call this rather than read vrt_real.dlsym: an ASan build
 * checks reads of another file's global against shadow memory, and our
 * dlsym runs while ASan itself starts up (its interceptors look libc's
 * functions up through it); only real.c and hook_libc.c's assembly stub
 * read the entry directly. Any thread. */
void *vrt_real_dlsym(void *handle, const char *name);

/* Fills every other entry from next(name) (NULL: the entry stays the raw
 * system call). The preload's constructor, and the agent once its
 * trampolines exist; both pass hook_libc.c's resolver. */
void vrt_real_fill(void *(*next)(const char *name));

#endif /* VRT_REAL_H */
