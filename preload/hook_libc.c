/*
 * hook_libc.c — our dlsym.
 *
 * Runtimes reach the CUDA driver by dlopen + dlsym, never by linking it:
 * libcudart looks up exactly one name, "cuGetProcAddress_v2", and Python
 * ctypes, NCCL and Triton look up each function on the driver's handle.
 * So dlsym is where our wrappers get handed out (hook_cuda.c decides; for
 * the HIP runtime's names, hook_hip.c).
 *
 * glibc's dlsym looks at its return address to know who is asking: for
 * RTLD_NEXT ("the next object after the caller") and RTLD_DEFAULT (the
 * caller's namespace and local scope). If our C function called it, the
 * caller would be libvramtrace and such look-ups would change meaning
 * (an allocator interposer asking for RTLD_NEXT "malloc" would get its own
 * malloc back). So dlsym is a tiny assembly stub: for those two pseudo
 * handles it jumps straight into libc with the caller's return address
 * intact, and only for real library handles — where the answer does not
 * depend on the caller — goes through C to substitute wrappers. A look-up
 * of a hooked name through RTLD_DEFAULT finds our own exported wrapper
 * anyway (the preload comes first in the global scope).
 *
 * Threads: any. The real pointer is set once (the constructor, or the
 * first dlsym if another library's constructor runs before ours) and only
 * ever to the same value, so a racy double initialisation is harmless.
 */
#include "hook.h"

#include <dlfcn.h>
#include <string.h>

void *(*vrt_real_dlsym)(void *, const char *);

void vrt_hook_libc_init(void)
{
	if (vrt_real_dlsym)
		return;
	/* dlvsym is not interposed, so this asks libc for the real one; the
	 * version names cover glibc before and after libdl moved into
	 * libc (2.34). */
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
	if (!p)
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 */
	vrt_real_dlsym = (void *(*)(void *, const char *))p;
}

/* dlsym on a real library handle: the answer does not depend on who asks,
 * so we may call libc from here and look at the result. */
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol);
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol)
{
	if (VRT_UNLIKELY(!vrt_real_dlsym)) {
		vrt_hook_libc_init();
		if (!vrt_real_dlsym)
			return NULL;
	}
	void *r = vrt_real_dlsym(handle, symbol);
	if (r && symbol && symbol[0] == 'c' && symbol[1] == 'u')
		return vrt_hook_cuda_dlsym(symbol, r);
	if (r && symbol && symbol[0] == 'h' && symbol[1] == 'i' &&
	    symbol[2] == 'p')
		return vrt_hook_hip_dlsym(symbol, r);
	return r;
}

/* Before initialisation, on an architecture without the stub: the caller
 * is lost, which only matters for RTLD_NEXT/RTLD_DEFAULT look-ups. */
VRT_HIDDEN void *vrt_libc_dlsym_slow(void *handle, const char *symbol);
VRT_HIDDEN void *vrt_libc_dlsym_slow(void *handle, const char *symbol)
{
	vrt_hook_libc_init();
	return vrt_real_dlsym ? vrt_real_dlsym(handle, symbol) : NULL;
}

/* RTLD_DEFAULT is 0 and RTLD_NEXT is -1 in glibc. */
#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "	testq %rdi, %rdi\n"
        "	je 1f\n"
        "	cmpq $-1, %rdi\n"
        "	je 1f\n"
        "	jmp vrt_libc_dlsym_handle\n"
        "1:	movq vrt_real_dlsym(%rip), %rax\n"
        "	testq %rax, %rax\n"
        "	je 2f\n"
        "	jmp *%rax\n"
        "2:	jmp vrt_libc_dlsym_slow\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "	cbz x0, 1f\n"
        "	cmn x0, #1\n"
        "	b.eq 1f\n"
        "	b vrt_libc_dlsym_handle\n"
        "1:	adrp x16, vrt_real_dlsym\n"
        "	ldr x16, [x16, :lo12:vrt_real_dlsym]\n"
        "	cbz x16, 2f\n"
        "	br x16\n"
        "2:	b vrt_libc_dlsym_slow\n"
        ".size dlsym, .-dlsym\n");
#else
void *dlsym(void *handle, const char *symbol)
{
	if (handle == RTLD_DEFAULT || handle == RTLD_NEXT)
		return vrt_libc_dlsym_slow(handle, symbol);
	return vrt_libc_dlsym_handle(handle, symbol);
}
#endif

/* ---- server readiness and requests in flight ---------------------------
 *
 * listen() says the server is ready; an accepted connection is a request
 * in flight until it is closed. Accepted fds are remembered in a bitmap
 * so close(), which every program calls all the time, costs one bit test
 * for the fds that are not ours. The CLOSE event is recorded before the
 * real close, so a racing accept() that reuses the number is always
 * stamped after it. close_range, closefrom, dup2 and dup3 over an
 * accepted fd close it too, and are recorded the same way; connections
 * that end with the process (exit) are not seen; the report says so.
 *
 * The same calls are where the program may take a number of ours (the
 * trace, the control and metrics sockets): each tells fds.c first, so
 * the preload never writes to or closes the program's new file at that
 * number. In a vfork child (a pid not ours) all of this is skipped: its
 * closes act on its own fd table, while every bitmap and table here is
 * the parent's.
 */

#include <vramtrace/trace_format.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <spawn.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_TRACKED_FD 65536

static _Atomic uint64_t accepted[MAX_TRACKED_FD / 64];

static void *next_fn(const char *name)
{
	vrt_hook_libc_init();
	return vrt_real_dlsym ? vrt_real_dlsym(RTLD_NEXT, name) : NULL;
}

/* The next definition of a libc function, looked up once (a race only
 * stores the same pointer twice). */
#define NEXT(fn)                                                               \
	static __typeof__(&fn) real_##fn;                                      \
	if (VRT_UNLIKELY(!real_##fn))                                          \
	real_##fn = (__typeof__(&fn))next_fn(#fn)

static void net_event(int op, int fd, uint64_t arg)
{
	struct vrt_ev ev = {.rec = VRT_REC_NET,
	                    .op = (uint8_t)op,
	                    .addr = (uint64_t)fd,
	                    .aux = arg};
	vrt_hook_record(&ev);
}

static int port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

VRT_EXPORT int listen(int fd, int backlog)
{
	NEXT(listen);
	int r = real_listen(fd, backlog);
	if (r == 0 && vrt_hook_enter()) {
		net_event(VRT_NET_LISTEN, fd, (uint64_t)port_of(fd));
		vrt_hook_leave();
	}
	return r;
}

static void accepted_fd(int fd, int listener)
{
	if (fd < 0 || fd >= MAX_TRACKED_FD || !vrt_hook_enter())
		return;
	atomic_fetch_or(&accepted[fd / 64], 1ull << (fd % 64));
	net_event(VRT_NET_ACCEPT, fd, (uint64_t)listener);
	vrt_hook_leave();
}

VRT_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	NEXT(accept);
	int r = real_accept(fd, addr, addrlen);
	accepted_fd(r, fd);
	return r;
}

VRT_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen,
                       int flags)
{
	NEXT(accept4);
	int r = real_accept4(fd, addr, addrlen, flags);
	accepted_fd(r, fd);
	return r;
}

/* The program is about to close (or replace) every fd in [lo, hi]: the
 * accepted connections among them end, and fds.c learns which of ours it
 * takes. Not in a vfork child. */
/* The bits of accepted[w] that lie in [lo, last]. */
static uint64_t word_mask(unsigned w, unsigned lo, unsigned last)
{
	uint64_t mask = ~0ull;
	if (w == lo / 64)
		mask &= ~0ull << (lo % 64);
	if (w == last / 64 && last % 64 != 63)
		mask &= (1ull << (last % 64 + 1)) - 1;
	return mask;
}

static int any_accepted(unsigned lo, unsigned last)
{
	for (unsigned w = lo / 64; lo <= last && w <= last / 64; w++)
		if (atomic_load_explicit(&accepted[w], memory_order_relaxed) &
		    word_mask(w, lo, last))
			return 1;
	return 0;
}

static void closing(unsigned lo, unsigned hi)
{
	unsigned last = hi < MAX_TRACKED_FD - 1 ? hi : MAX_TRACKED_FD - 1;
	int acc = lo < MAX_TRACKED_FD && any_accepted(lo, last);
	/* Scans first: the pid check is a system call. */
	if ((!acc && !vrt_fds_any(lo, hi)) || !vrt_entry_is_self())
		return;
	vrt_fds_release(lo, hi, !vrt_in_hook);
	if (!acc)
		return;
	for (unsigned w = lo / 64; w <= last / 64; w++) {
		uint64_t mask = word_mask(w, lo, last);
		if (!(atomic_load_explicit(&accepted[w],
		                           memory_order_relaxed) &
		      mask))
			continue;
		uint64_t was = atomic_fetch_and(&accepted[w], ~mask) & mask;
		while (was) {
			int fd = (int)(w * 64 + (unsigned)__builtin_ctzll(was));
			was &= was - 1;
			if (vrt_hook_enter()) {
				net_event(VRT_NET_CLOSE, fd, 0);
				vrt_hook_leave();
			}
		}
	}
}

static inline int is_accepted(int fd)
{
	return fd >= 0 && fd < MAX_TRACKED_FD &&
	       (atomic_load_explicit(&accepted[fd / 64],
	                             memory_order_relaxed) &
	        (1ull << (fd % 64)));
}

VRT_EXPORT int close(int fd)
{
	NEXT(close);
	if (VRT_UNLIKELY(!real_close))
		return (int)syscall(SYS_close, fd);
	if (VRT_UNLIKELY(is_accepted(fd) || vrt_fds_maybe_ours(fd)))
		closing((unsigned)fd, (unsigned)fd);
	return real_close(fd);
}

VRT_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	NEXT(close_range);
	/* CLOSE_RANGE_CLOEXEC only marks the fds: ours are O_CLOEXEC
	 * already, and nothing is closed now. */
	if (!(flags & CLOSE_RANGE_CLOEXEC) && first <= last)
		closing(first, last);
	if (VRT_UNLIKELY(!real_close_range))
		return (int)syscall(SYS_close_range, first, last, flags);
	return real_close_range(first, last, flags);
}

VRT_EXPORT void closefrom(int lowfd)
{
	NEXT(closefrom);
	closing(lowfd > 0 ? (unsigned)lowfd : 0u, ~0u);
	if (VRT_UNLIKELY(!real_closefrom)) {
		syscall(SYS_close_range, lowfd > 0 ? (unsigned)lowfd : 0u, ~0u,
		        0);
		return;
	}
	real_closefrom(lowfd);
}

/* dup2/dup3 close newfd first when oldfd is valid and differs. */
static void replacing(int oldfd, int newfd)
{
	if (newfd >= 0 && oldfd != newfd &&
	    (is_accepted(newfd) || vrt_fds_maybe_ours(newfd)) &&
	    fcntl(oldfd, F_GETFD) >= 0)
		closing((unsigned)newfd, (unsigned)newfd);
}

VRT_EXPORT int dup2(int oldfd, int newfd)
{
	NEXT(dup2);
	replacing(oldfd, newfd);
	if (VRT_UNLIKELY(!real_dup2))
		return (int)syscall(SYS_dup2, oldfd, newfd);
	return real_dup2(oldfd, newfd);
}

VRT_EXPORT int dup3(int oldfd, int newfd, int flags)
{
	NEXT(dup3);
	replacing(oldfd, newfd);
	if (VRT_UNLIKELY(!real_dup3))
		return (int)syscall(SYS_dup3, oldfd, newfd, flags);
	return real_dup3(oldfd, newfd, flags);
}

/* ---- children: fork, exec, posix_spawn ----------------------------------
 *
 * A forked child gets its own trace (entry.c's fork handler); the parent
 * records which pid it made. Before an exec replaces the image, the trace
 * is flushed and closed (entry.c); if the exec fails, recording goes on
 * in a new file. vfork is not interposed: a wrapper returning in a vfork
 * child would clobber the parent's stack. A vfork child that execs is
 * recognised (its pid is not ours) and passes straight through, since it
 * shares the parent's memory and must not touch the parent's trace.
 *
 * Every exec and posix_spawn passes the child's environment through
 * hook_env.c, so a child started with a replaced environment (no
 * LD_PRELOAD, no VRAMTRACE_OUT) is still traced into the same run.
 */

static void proc_event(int op, pid_t pid, const char *path)
{
	if (!vrt_hook_enter_if_on())
		return;
	struct vrt_ev ev = {.rec = VRT_REC_PROC,
	                    .op = (uint8_t)op,
	                    .addr = (uint64_t)(pid > 0 ? pid : 0),
	                    .text = path};
	vrt_tbuf_event(&ev);
	vrt_hook_leave();
}

VRT_EXPORT pid_t fork(void)
{
	NEXT(fork);
	pid_t pid = real_fork();
	if (pid > 0)
		proc_event(VRT_PROC_FORK, pid, NULL);
	return pid;
}

VRT_EXPORT int posix_spawn(pid_t *pid, const char *path,
                           const posix_spawn_file_actions_t *fa,
                           const posix_spawnattr_t *attr, char *const argv[],
                           char *const envp[])
{
	NEXT(posix_spawn);
	struct vrt_hook_env env;
	int r = real_posix_spawn(pid, path, fa, attr, argv,
	                         vrt_hook_env_fix(envp, &env));
	vrt_hook_env_release(&env);
	if (r == 0 && pid)
		proc_event(VRT_PROC_SPAWN, *pid, path);
	return r;
}

VRT_EXPORT int posix_spawnp(pid_t *pid, const char *file,
                            const posix_spawn_file_actions_t *fa,
                            const posix_spawnattr_t *attr, char *const argv[],
                            char *const envp[])
{
	NEXT(posix_spawnp);
	struct vrt_hook_env env;
	int r = real_posix_spawnp(pid, file, fa, attr, argv,
	                          vrt_hook_env_fix(envp, &env));
	vrt_hook_env_release(&env);
	if (r == 0 && pid)
		proc_event(VRT_PROC_SPAWN, *pid, file);
	return r;
}

/* Records the exec and closes the trace; returns whether it did. */
static int before_exec(const char *path)
{
	if (!vrt_entry_is_self())
		return 0;
	proc_event(VRT_PROC_EXEC, 0, path);
	vrt_entry_before_exec();
	return 1;
}

/* The exec itself, with the environment the child gets: ours added
 * where envp lacks it (hook_env.c). fx_ is on this stack, so this works in
 * a vfork child too. */
#define EXEC_BODY(call, path, envp)                                            \
	do {                                                                   \
		struct vrt_hook_env fx_;                                       \
		char *const *env_ = vrt_hook_env_fix(envp, &fx_);              \
		int closed_ = before_exec(path);                               \
		int r_ = call;                                                 \
		int err_ = errno;                                              \
		vrt_hook_env_release(&fx_);                                    \
		if (closed_)                                                   \
			vrt_entry_exec_failed();                               \
		errno = err_;                                                  \
		return r_;                                                     \
	} while (0)

extern char **environ;

VRT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	NEXT(execve);
	EXEC_BODY(real_execve(path, argv, env_), path, envp);
}

VRT_EXPORT int execv(const char *path, char *const argv[])
{
	/* execve with our own environment, which the program may have
	 * stripped of our variables (unsetenv, os.environ.pop). */
	NEXT(execve);
	EXEC_BODY(real_execve(path, argv, env_), path, environ);
}

VRT_EXPORT int execvp(const char *file, char *const argv[])
{
	NEXT(execvpe);
	EXEC_BODY(real_execvpe(file, argv, env_), file, environ);
}

VRT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	NEXT(execvpe);
	EXEC_BODY(real_execvpe(file, argv, env_), file, envp);
}

VRT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	NEXT(fexecve);
	EXEC_BODY(real_fexecve(fd, argv, env_), "(fexecve)", envp);
}

/* The execl family calls execve inside libc, where we cannot see it, so
 * each is rebuilt here over the vector forms above. */
#define EXECL_MAX_ARGS 4096
#define COLLECT_ARGS(first, ap, argv, n)                                       \
	do {                                                                   \
		argv[0] = (char *)(first);                                     \
		n = 1;                                                         \
		while (argv[n - 1] && n < EXECL_MAX_ARGS)                      \
			argv[n++] = va_arg(ap, char *);                        \
		if (argv[n - 1]) {                                             \
			va_end(ap);                                            \
			errno = E2BIG;                                         \
			return -1;                                             \
		}                                                              \
	} while (0)

VRT_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX_ARGS];
	int n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	va_end(ap);
	return execv(path, argv);
}

VRT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[EXECL_MAX_ARGS];
	int n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	va_end(ap);
	return execvp(file, argv);
}

VRT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX_ARGS];
	int n;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}
