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
 * The real dlsym behind ours is the real-libc table's first entry
 * (real.h: vrt_real.dlsym, looked up by vrt_hooklib_init), which every
 * hook file uses.
 *
 * Threads: any.
 */
#include "hook.h"

#include <dlfcn.h>
#include <string.h>

/* dlsym on a real library handle: the answer does not depend on who asks,
 * so we may call libc from here and look at the result. */
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol);
VRT_HIDDEN void *vrt_libc_dlsym_handle(void *handle, const char *symbol)
{
	void *r = vrt_hooklib_real_dlsym(handle, symbol);
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
	return vrt_hooklib_real_dlsym(handle, symbol);
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
        "1:	movq vrt_real(%rip), %rax\n"
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
        "1:	adrp x16, vrt_real\n"
        "	ldr x16, [x16, :lo12:vrt_real]\n"
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
 * listen() says a socket serves (the record tells inet from unix, and a
 * library's own plumbing — NCCL, ZMQ, torch.distributed's store, Ray —
 * from a server: stack.c's vrt_stack_plumbing; the connections of such a
 * listener are not followed at all). Accepted connections are remembered
 * in a bitmap; each has a small state (conn.c: HTTP/1.x, HTTP/2 streams,
 * or turns of a protocol it cannot parse) that the read and write hooks
 * below feed with the bytes the server exchanges on it, and that says
 * when a request begins and ends (REQ_BEGIN, REQ_END, and ANSWER marks
 * for inferred ones). Every other fd — files, pipes, the GPU driver's own
 * descriptors, sockets we did not see accepted — costs those hooks one
 * bit test. close() (which every program calls all the time) costs the
 * same for fds that are not ours; the CLOSE event is recorded before the
 * real close, so a racing accept() that reuses the number is always
 * stamped after it. close_range, closefrom, dup2 and dup3 over an
 * accepted fd close it too, and are recorded the same way; connections
 * that end with the process (exit) are not seen; the report says so.
 *
 * A unix-socket connection's peer is asked (SO_PEERCRED): when it is a
 * process of this run (its environment names our run directory), the
 * connection is a hop between two processes of the run — a front
 * forwarding, a warm-up call — and the ACCEPT says so.
 *
 * Per connection: a spinlock byte taken around its state and its events,
 * so a request's BEGIN is always recorded before its END even when one
 * thread reads and another writes the connection. Events are recorded
 * with the lock held; nothing under it waits on anything but the tbuf
 * spinlock of the calling thread. Reads with MSG_PEEK are not fed: the
 * same bytes come again.
 *
 * The same calls are where the program may take a number of ours (the
 * trace, the control and metrics sockets): each tells fds.c first, so
 * the preload never writes to or closes the program's new file at that
 * number. In a vfork child (a pid not ours) all of this is skipped: its
 * closes act on its own fd table, while every bitmap and table here is
 * the parent's.
 */

#include "attach_proto.h"
#include "clock.h"
#include "conn.h"
#include "session.h"
#include "standby.h"

#include <vramtrace/trace_format.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <netinet/in.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAX_TRACKED_FD 65536

static _Atomic uint64_t accepted[MAX_TRACKED_FD / 64];
/* Listening fds that are a library's plumbing (set or cleared by each
 * listen() on the number, so a reused number is always right). */
static _Atomic uint64_t plumbing[MAX_TRACKED_FD / 64];

/* What we know of an accepted connection (valid while its bit is set). */
struct conn {
	_Atomic uint8_t lock;
	uint8_t kind;     /* enum vrt_net_kind */
	int32_t listener; /* the listening fd it came from */
	struct vrt_conn c;
};

_Static_assert(sizeof(struct conn) <= 256,
               "a connection's state stays within 256 bytes");

static struct conn conns[MAX_TRACKED_FD];

void *vrt_hook_libc_next(const char *name)
{
#ifdef VRT_AGENT
	/* In the agent these wrappers are reached through jumps written
	 * over libc's own functions: the real one is the trampoline
	 * (agent.c), never libc's entry, which jumps back here. */
	return vrt_agent_real(name);
#else
	return vrt_hooklib_real_dlsym(RTLD_NEXT, name);
#endif
}

/* The next definition of a libc function, looked up once (a race only
 * stores the same pointer twice). */
#define NEXT(fn)                                                               \
	static __typeof__(&fn) real_##fn;                                      \
	if (VRT_UNLIKELY(!real_##fn))                                          \
	real_##fn = (__typeof__(&fn))vrt_hook_libc_next(#fn)

static void conn_lock(struct conn *c)
{
	while (atomic_exchange_explicit(&c->lock, 1, memory_order_acquire))
		while (atomic_load_explicit(&c->lock, memory_order_relaxed))
			;
}

static void conn_unlock(struct conn *c)
{
	atomic_store_explicit(&c->lock, 0, memory_order_release);
}

static inline int bit_set(_Atomic uint64_t *map, int fd)
{
	return (unsigned)fd < MAX_TRACKED_FD &&
	       VRT_UNLIKELY(atomic_load_explicit(&map[fd / 64],
	                                         memory_order_relaxed) >>
	                            (fd % 64) &
	                    1);
}

/* An accepted connection of ours: one relaxed load and a bit test. */
static inline int tracked(int fd)
{
	return bit_set(accepted, fd);
}

static void record_net(int op, int fd, uint64_t arg, int kind, uint64_t busy)
{
	struct vrt_ev ev = {.rec = VRT_REC_NET,
	                    .op = (uint8_t)op,
	                    .kind = (uint8_t)kind,
	                    .addr = (uint64_t)fd,
	                    .aux = arg,
	                    .size = busy};
	vrt_hook_record(&ev);
}

/* A connection's event (conn.c), recorded for fd. */
static void conn_emit(void *arg, const struct vrt_conn_event *e)
{
	int fd = *(const int *)arg;
	struct vrt_ev ev = {.rec = VRT_REC_NET,
	                    .op = e->op,
	                    .addr = (uint64_t)fd,
	                    .aux = e->arg,
	                    .stream = e->stream,
	                    .nflags = e->flags,
	                    .val = e->val,
	                    .text = e->text_len ? e->text : NULL,
	                    .text_len = (uint16_t)e->text_len};
	vrt_hook_record(&ev);
}

/* A CLOSE ends the connection's state: the requests still in flight end
 * with it (an inferred one first, with its lag). */
static void conn_closed(int fd)
{
	struct conn *c = &conns[fd];
	conn_lock(c);
	uint64_t busy = vrt_conn_inflight(&c->c);
	int turns = c->c.proto == VRT_CONN_TURN || c->c.proto == VRT_CONN_TLS;
	vrt_conn_close(&c->c, vrt_clock_now(), conn_emit, &fd);
	record_net(VRT_NET_CLOSE, fd, 0, 0, turns ? 0 : busy);
	conn_unlock(c);
}

/* The port and family of a socket. */
static int sock_kind(int fd, int *port)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	*port = 0;
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return VRT_NET_KIND_OTHER;
	if (ss.ss_family == AF_INET) {
		*port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		return VRT_NET_KIND_INET;
	}
	if (ss.ss_family == AF_INET6) {
		*port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		return VRT_NET_KIND_INET;
	}
	return ss.ss_family == AF_UNIX ? VRT_NET_KIND_UNIX : VRT_NET_KIND_OTHER;
}

VRT_EXPORT int listen(int fd, int backlog)
{
	NEXT(listen);
	int r = real_listen(fd, backlog);
	if (r == 0 && vrt_hook_enter()) {
		int saved = errno; /* the unwinder's and dladdr's calls */
		int port, kind = sock_kind(fd, &port);
		int lib = vrt_stack_plumbing();
		if ((unsigned)fd < MAX_TRACKED_FD) {
			if (lib)
				atomic_fetch_or(&plumbing[fd / 64],
				                1ull << (fd % 64));
			else
				atomic_fetch_and(&plumbing[fd / 64],
				                 ~(1ull << (fd % 64)));
		}
		struct vrt_ev ev = {.rec = VRT_REC_NET,
		                    .op = VRT_NET_LISTEN,
		                    .kind = (uint8_t)kind,
		                    .addr = (uint64_t)fd,
		                    .aux = (uint64_t)port,
		                    .nflags = lib ? VRT_NET_F_INTERNAL : 0};
		vrt_hook_record(&ev);
		vrt_hook_leave();
		errno = saved;
	}
	return r;
}

/* Whether process pid belongs to this run: its environment names our run
 * directory. The last answer is kept (a front opens its connections to a
 * back end from one process). */
static int peer_in_run(pid_t pid)
{
	static _Atomic int64_t last; /* pid << 1 | answer */
	int64_t l = atomic_load_explicit(&last, memory_order_relaxed);
	if (l && (pid_t)(l >> 1) == pid)
		return (int)(l & 1);
	/* Children inherit our VRAMTRACE_OUT as it is (or the absolute run
	 * directory entry.c set when there was none). */
	const char *dir = vrt_options_str(VRT_OPT_OUT);
	if (!dir)
		dir = vrt_session_run_dir();
	size_t dlen = dir ? strlen(dir) : 0;
	int in = 0;
	if (dlen) {
		char path[32] = "/proc/", buf[16384];
		char digits[16];
		int nd = 0, at = 6;
		for (unsigned v = (unsigned)pid; v || !nd; v /= 10)
			digits[nd++] = (char)('0' + v % 10);
		while (nd)
			path[at++] = digits[--nd];
		memcpy(path + at, "/environ", 9);
		/* "VRAMTRACE_OUT=<dir>" among the first variables */
		ssize_t k = vrt_fds_read_path(path, buf, sizeof(buf));
		size_t have = k > 0 ? (size_t)k : 0;
		static const char key[] = "VRAMTRACE_OUT=";
		size_t kl = sizeof(key) - 1;
		for (size_t i = 0; !in && i + kl + dlen <= have; i++)
			in = (i == 0 || buf[i - 1] == 0) &&
			     !memcmp(buf + i, key, kl) &&
			     !memcmp(buf + i + kl, dir, dlen) &&
			     (i + kl + dlen == have || buf[i + kl + dlen] == 0 ||
			      (buf[i + kl + dlen] == '/' &&
			       (i + kl + dlen + 1 == have ||
			        buf[i + kl + dlen + 1] == 0)));
	}
	atomic_store_explicit(&last, (int64_t)pid << 1 | in,
	                      memory_order_relaxed);
	return in;
}

static void accepted_fd(int fd, int listener)
{
	if (fd < 0 || fd >= MAX_TRACKED_FD || bit_set(plumbing, listener) ||
	    !vrt_hook_enter())
		return;
	/* the host sees accept's errno, not that of the peer's look-ups
	 * (getsockopt, /proc/PID/environ) */
	int saved = errno;
	int port;
	struct conn *c = &conns[fd];
	struct vrt_ev ev = {.rec = VRT_REC_NET,
	                    .op = VRT_NET_ACCEPT,
	                    .addr = (uint64_t)fd,
	                    .aux = (uint64_t)listener};
	int kind = sock_kind(fd, &port);
	if (kind == VRT_NET_KIND_UNIX) {
		struct ucred cr;
		socklen_t len = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
		    cr.pid > 0) {
			ev.val = (uint64_t)cr.pid;
			if (peer_in_run(cr.pid))
				ev.nflags |= VRT_NET_F_PEER_RUN;
		}
	}
	ev.kind = (uint8_t)kind;
	conn_lock(c);
	c->kind = (uint8_t)kind;
	c->listener = listener;
	vrt_conn_init(&c->c);
	/* The state is ready before the bit says the fd is ours. */
	atomic_fetch_or(&accepted[fd / 64], 1ull << (fd % 64));
	vrt_hook_record(&ev);
	conn_unlock(c);
	vrt_hook_leave();
	errno = saved;
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

/* Bytes arrived on a tracked connection (p[0..got)). */
static void conn_read(int fd, const void *p, size_t got)
{
	int saved = errno;
	if (!got || !vrt_hook_enter()) {
		errno = saved;
		return;
	}
	struct conn *c = &conns[fd];
	conn_lock(c);
	/* Closed meanwhile (its bit cleared): not ours any more. */
	if (tracked(fd))
		vrt_conn_read(&c->c, p, got, vrt_clock_now(), conn_emit, &fd);
	conn_unlock(c);
	vrt_hook_leave();
	errno = saved;
}

/* The server wrote n bytes on a tracked connection: the first n of the
 * iovecs (one for write/send; NULL for bytes we cannot see). */
static void conn_write(int fd, const struct iovec *iov, int iovcnt, size_t n)
{
	int saved = errno;
	if (!n || !vrt_hook_enter()) {
		errno = saved;
		return;
	}
	struct conn *c = &conns[fd];
	conn_lock(c);
	if (tracked(fd)) {
		uint64_t now = vrt_clock_now();
		if (!iov) {
			vrt_conn_write(&c->c, NULL, n, now, conn_emit, &fd);
		} else {
			for (int i = 0; i < iovcnt && n; i++) {
				size_t k = iov[i].iov_len < n ? iov[i].iov_len
				                              : n;
				vrt_conn_write(&c->c,
				               (const uint8_t *)iov[i].iov_base,
				               k, now, conn_emit, &fd);
				n -= k;
			}
		}
	}
	conn_unlock(c);
	vrt_hook_leave();
	errno = saved;
}

static void conn_write1(int fd, const void *buf, ssize_t r)
{
	struct iovec v = {(void *)buf, r > 0 ? (size_t)r : 0};
	conn_write(fd, &v, 1, v.iov_len);
}

/* A scattered read that got r bytes: every segment it filled, in order
 * (HTTP/2 and TLS are read as frames: no byte may be missed). */
static void conn_readv(int fd, const struct iovec *iov, int iovcnt, ssize_t r)
{
	size_t left = r > 0 ? (size_t)r : 0;
	if (iovcnt <= 0 || !iov)
		return;
	for (int i = 0; i < iovcnt && left; i++) {
		size_t k = iov[i].iov_len < left ? iov[i].iov_len : left;
		if (k)
			conn_read(fd, iov[i].iov_base, k);
		left -= k;
	}
}

/*
 * The I/O calls servers make on their connections: asyncio and uvicorn
 * (send, recv, sendmsg), uvloop/libuv (read, write, writev), Rust hyper
 * (read, writev), cpp-httplib (send, recv), fortified builds (__read_chk,
 * __recv_chk, __recvfrom_chk). Each passes straight through for an fd
 * that is not a tracked connection; syscall() stands in when no next
 * definition can be found (a static libc, a look-up that failed).
 */

VRT_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	NEXT(read);
	ssize_t r = real_read ? real_read(fd, buf, count)
	                      : syscall(SYS_read, fd, buf, count);
	if (tracked(fd) && r > 0)
		conn_read(fd, buf, (size_t)r);
	return r;
}

VRT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen);
VRT_EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	NEXT(__read_chk);
	ssize_t r = real___read_chk ? real___read_chk(fd, buf, count, buflen)
	                            : syscall(SYS_read, fd, buf, count);
	if (tracked(fd) && r > 0)
		conn_read(fd, buf, (size_t)r);
	return r;
}

VRT_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	NEXT(readv);
	ssize_t r = real_readv ? real_readv(fd, iov, iovcnt)
	                       : syscall(SYS_readv, fd, iov, iovcnt);
	if (tracked(fd) && r > 0)
		conn_readv(fd, iov, iovcnt, r);
	return r;
}

/* A receive whose bytes are the stream's and in the caller's buffer: not
 * a peek (read again later), not MSG_TRUNC (the kernel discards the data
 * and returns the real length, which may exceed the buffer, or the
 * buffer may be NULL). */
static inline int recv_followed(int fd, ssize_t r, int flags)
{
	return r > 0 && !(flags & (MSG_PEEK | MSG_TRUNC)) && tracked(fd);
}

VRT_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	NEXT(recv);
	ssize_t r = real_recv ? real_recv(fd, buf, len, flags)
	                      : syscall(SYS_recvfrom, fd, buf, len, flags,
	                                NULL, NULL);
	if (recv_followed(fd, r, flags))
		conn_read(fd, buf, (size_t)r < len ? (size_t)r : len);
	return r;
}

VRT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
                              int flags);
VRT_EXPORT ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen,
                              int flags)
{
	NEXT(__recv_chk);
	ssize_t r = real___recv_chk
	                    ? real___recv_chk(fd, buf, len, buflen, flags)
	                    : syscall(SYS_recvfrom, fd, buf, len, flags, NULL,
	                              NULL);
	if (recv_followed(fd, r, flags))
		conn_read(fd, buf, (size_t)r < len ? (size_t)r : len);
	return r;
}

VRT_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
                            struct sockaddr *src, socklen_t *srclen)
{
	NEXT(recvfrom);
	ssize_t r = real_recvfrom
	                    ? real_recvfrom(fd, buf, len, flags, src, srclen)
	                    : syscall(SYS_recvfrom, fd, buf, len, flags, src,
	                              srclen);
	if (recv_followed(fd, r, flags))
		conn_read(fd, buf, (size_t)r < len ? (size_t)r : len);
	return r;
}

VRT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len,
                                  size_t buflen, int flags,
                                  struct sockaddr *src, socklen_t *srclen);
VRT_EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t len,
                                  size_t buflen, int flags,
                                  struct sockaddr *src, socklen_t *srclen)
{
	NEXT(__recvfrom_chk);
	ssize_t r = real___recvfrom_chk
	                    ? real___recvfrom_chk(fd, buf, len, buflen, flags,
	                                          src, srclen)
	                    : syscall(SYS_recvfrom, fd, buf, len, flags, src,
	                              srclen);
	if (recv_followed(fd, r, flags))
		conn_read(fd, buf, (size_t)r < len ? (size_t)r : len);
	return r;
}

VRT_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	NEXT(recvmsg);
	ssize_t r = real_recvmsg ? real_recvmsg(fd, msg, flags)
	                         : syscall(SYS_recvmsg, fd, msg, flags);
	if (recv_followed(fd, r, flags) && msg)
		conn_readv(fd, msg->msg_iov, (int)msg->msg_iovlen, r);
	return r;
}

VRT_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
	NEXT(write);
	ssize_t r = real_write ? real_write(fd, buf, count)
	                       : syscall(SYS_write, fd, buf, count);
	if (tracked(fd) && r > 0)
		conn_write1(fd, buf, r);
	return r;
}

VRT_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	NEXT(writev);
	ssize_t r = real_writev ? real_writev(fd, iov, iovcnt)
	                        : syscall(SYS_writev, fd, iov, iovcnt);
	if (tracked(fd) && r > 0 && iov)
		conn_write(fd, iov, iovcnt, (size_t)r);
	return r;
}

VRT_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	NEXT(send);
	ssize_t r = real_send ? real_send(fd, buf, len, flags)
	                      : syscall(SYS_sendto, fd, buf, len, flags, NULL,
	                                0);
	if (tracked(fd) && r > 0)
		conn_write1(fd, buf, r);
	return r;
}

VRT_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                          const struct sockaddr *dst, socklen_t dstlen)
{
	NEXT(sendto);
	ssize_t r = real_sendto
	                    ? real_sendto(fd, buf, len, flags, dst, dstlen)
	                    : syscall(SYS_sendto, fd, buf, len, flags, dst,
	                              dstlen);
	if (tracked(fd) && r > 0)
		conn_write1(fd, buf, r);
	return r;
}

VRT_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	NEXT(sendmsg);
	ssize_t r = real_sendmsg ? real_sendmsg(fd, msg, flags)
	                         : syscall(SYS_sendmsg, fd, msg, flags);
	if (tracked(fd) && r > 0 && msg)
		conn_write(fd, msg->msg_iov, (int)msg->msg_iovlen, (size_t)r);
	return r;
}

/* A body sent from a file: its bytes count, unseen. The build's
 * _FILE_OFFSET_BITS=64 makes <sys/sendfile.h> name sendfile "sendfile64",
 * so both exported names are spelled out (programs built either way call
 * one of them; on LP64 they take the same arguments). */
static ssize_t sendfile_hook(ssize_t r, int out_fd)
{
	if (tracked(out_fd) && r > 0)
		conn_write(out_fd, NULL, 0, (size_t)r);
	return r;
}

/* One definition per exported name (asm label), each resolving its own
 * next definition. */
#define SENDFILE_HOOK(fn, name)                                                \
	VRT_EXPORT ssize_t fn(int out_fd, int in_fd, off_t *offset,            \
	                      size_t count) __asm__(name);                     \
	VRT_EXPORT ssize_t fn(int out_fd, int in_fd, off_t *offset,            \
	                      size_t count)                                    \
	{                                                                      \
		static __typeof__(&fn) real;                                   \
		if (VRT_UNLIKELY(!real))                                       \
			real = (__typeof__(&fn))vrt_hook_libc_next(name);      \
		return sendfile_hook(                                          \
		        real ? real(out_fd, in_fd, offset, count)              \
		             : syscall(SYS_sendfile, out_fd, in_fd, offset,    \
		                       count),                                 \
		        out_fd);                                               \
	}

SENDFILE_HOOK(vrt_hook_sendfile, "sendfile")
SENDFILE_HOOK(vrt_hook_sendfile64, "sendfile64")

/* The agent of `vramtrace attach`: sockets the program opened before the
 * attach, announced as if their listen() and accept() had been seen. */
void vrt_hook_libc_adopt(int fd, int listener)
{
	if (listener < 0) {
		if (vrt_hook_enter()) {
			int port, kind = sock_kind(fd, &port);
			record_net(VRT_NET_LISTEN, fd, (uint64_t)port, kind, 0);
			vrt_hook_leave();
		}
	} else if (!tracked(fd)) {
		accepted_fd(fd, listener);
	}
}

struct each_req {
	int fd;
	void (*req)(int fd, uint32_t stream, unsigned flags, void *arg);
	void *arg;
};

static void each_req(void *arg, uint32_t stream, unsigned flags)
{
	struct each_req *x = arg;
	x->req(x->fd, stream, flags, x->arg);
}

void vrt_hook_libc_each_conn(void (*conn)(int fd, int listener, int kind,
                                          void *arg),
                             void (*req)(int fd, uint32_t stream,
                                         unsigned flags, void *arg),
                             void *arg)
{
	for (int w = 0; w < MAX_TRACKED_FD / 64; w++) {
		uint64_t bits = atomic_load(&accepted[w]);
		while (bits) {
			int fd = w * 64 + __builtin_ctzll(bits);
			bits &= bits - 1;
			struct conn *c = &conns[fd];
			conn_lock(c);
			if (tracked(fd)) {
				struct each_req x = {fd, req, arg};
				conn(fd, c->listener, c->kind, arg);
				vrt_conn_each_open(&c->c, each_req, &x);
			}
			conn_unlock(c);
		}
	}
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
	if ((!acc && !vrt_fds_any(lo, hi)) || !vrt_session_is_self())
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
				conn_closed(fd);
				vrt_hook_leave();
			}
		}
	}
}

static inline int is_accepted(int fd)
{
	return tracked(fd);
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
 * A forked child gets its own trace (the fork handlers, entry.c and
 * session.c); the parent records which pid it made. Before an exec
 * replaces the image, the trace is flushed and closed (session.c); if the
 * exec fails, recording goes on
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
	if (!vrt_session_is_self())
		return 0;
	proc_event(VRT_PROC_EXEC, 0, path);
	vrt_session_before_exec();
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
			vrt_session_exec_failed();                               \
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

#ifdef VRT_AGENT
#define X_WRAPPER(fn) {#fn, (void *)&fn},
const struct vrt_hook_libc_wrapper vrt_hook_libc_wrappers[] = {
        VRT_ATTACH_LIBC_HOOKS(X_WRAPPER)};
#undef X_WRAPPER
const int vrt_hook_libc_nwrappers = (int)(sizeof(vrt_hook_libc_wrappers) /
                                          sizeof(vrt_hook_libc_wrappers[0]));
#endif
