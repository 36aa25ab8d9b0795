/*
 * real.c — the table of real libc functions the preload calls for its own
 * I/O (real.h says why and when it is filled).
 *
 * Until filled, each entry is the raw system call, so a call of ours from
 * a constructor that runs before the preload's, from the agent before it
 * has its trampolines, or from a unit test without any hook still works.
 * dlsym has no system call: its first use looks libc's own up.
 */
#include "real.h"

#include <dlfcn.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

static ssize_t sys_read(int fd, void *buf, size_t len)
{
	return syscall(SYS_read, fd, buf, len);
}

static ssize_t sys_write(int fd, const void *buf, size_t len)
{
	return syscall(SYS_write, fd, buf, len);
}

static int sys_close(int fd)
{
	return (int)syscall(SYS_close, fd);
}

static ssize_t sys_recv(int fd, void *buf, size_t len, int flags)
{
	return syscall(SYS_recvfrom, fd, buf, len, flags, NULL, NULL);
}

static ssize_t sys_send(int fd, const void *buf, size_t len, int flags)
{
	return syscall(SYS_sendto, fd, buf, len, flags, NULL, 0);
}

static int sys_accept4(int fd, struct sockaddr *addr, socklen_t *len,
                       int flags)
{
	return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

static int sys_listen(int fd, int backlog)
{
	return (int)syscall(SYS_listen, fd, backlog);
}

static void *first_dlsym(void *handle, const char *name);

struct vrt_real_libc vrt_real = {
        .dlsym = first_dlsym,
#define VRT_REAL_RAW(name, ret, args) .name = sys_##name,
        VRT_REAL_LIBC(VRT_REAL_RAW)
#undef VRT_REAL_RAW
};

_Static_assert(offsetof(struct vrt_real_libc, dlsym) == 0,
               "hook_libc.c's dlsym stub reads the first field");

void vrt_real_init_dlsym(void)
{
	if (vrt_real.dlsym != first_dlsym)
		return;
	/* dlvsym is not interposed, so this asks libc for the real one; the
	 * version names cover glibc before and after libdl moved into
	 * libc (2.34). */
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 */
	if (p)
		vrt_real.dlsym = (void *(*)(void *, const char *))p;
}

/* The entry before the look-up: makes it, then answers (NULL when libc's
 * dlsym cannot be found). */
static void *first_dlsym(void *handle, const char *name)
{
	vrt_real_init_dlsym();
	if (vrt_real.dlsym == first_dlsym)
		return NULL;
	return vrt_real.dlsym(handle, name);
}

void *vrt_real_dlsym(void *handle, const char *name)
{
	return vrt_real.dlsym(handle, name);
}

void vrt_real_fill(void *(*next)(const char *name))
{
	void *p;
#define VRT_REAL_SET(name, ret, args)                                          \
	if ((p = next(#name)))                                                 \
		vrt_real.name = (ret(*) args)p;
	VRT_REAL_LIBC(VRT_REAL_SET)
#undef VRT_REAL_SET
}
