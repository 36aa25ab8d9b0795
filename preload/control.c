/*
 * control.c — the control endpoint of a traced process: a UNIX stream
 * socket "<run dir>/<pid>.ctl" (mode 0600), served by a thread of ours
 * ("vramtrace-ctl", all signals blocked), so `vramtrace ctl` can start and
 * stop recording, mark the trace and read the live budget while a load
 * test runs.
 *
 * Protocol (control_proto.h, shared with the client): one command per
 * connection; the client writes one line, we answer one line and close.
 * Commands: start, stop, mark LABEL, flush, status (a line of JSON). Only
 * a peer with our uid (or root) is served: SO_PEERCRED is checked before
 * reading anything.
 *
 * The thread polls with a timeout so a stop request is seen within
 * POLL_MS; every read and write on a connection is bounded by a socket
 * timeout, so a client that stalls cannot stall the endpoint for long.
 *
 * The run directory is checked before the socket is made (rundir.h: ours,
 * writable by nobody else) and the socket is bound through
 * /proc/self/fd/N of that checked directory descriptor, so the check and
 * the bind see the same directory (and paths too long for sun_path fit).
 * Every fd of ours is registered with fds.c: when the program closes
 * the listening socket (close_range, closefrom, dup2 over it) the thread
 * notices at its next poll (an invalid or foreign fd), never accepts on
 * or closes the number again, removes the socket file and ends with one
 * warning instead of spinning.
 */
#include "control_proto.h"
#include "hook.h"
#include "live.h"
#include "real.h"
#include "rundir.h"
#include "session.h"

#include <vramtrace/trace_format.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define POLL_MS      200

static pthread_t thread;
static int running;
static _Atomic int stopping;
static struct vrt_fd lfd = {-1, -1, 0}; /* the listening socket */
static char sock_path[PATH_MAX];

/* Binds fd to name in the checked directory dfd (through /proc/self/fd, so
 * the directory bound in is the one checked). 0 or -errno. */
static int bind_in(int fd, struct vrt_fd dfd, const char *name)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/%s",
	         dfd.fd, name);
	if (!vrt_fds_use(dfd))
		return -EBADF;
	/* The socket file must not be reachable by others even for an
	 * instant: create it under a restrictive umask. */
	mode_t old = umask(0177);
	int err = bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ? -errno : 0;
	umask(old);
	vrt_fds_done(dfd);
	return err;
}

static void reply(struct vrt_fd fd, const char *text)
{
	size_t len = strlen(text), done = 0;
	while (done < len) {
		ssize_t w = vrt_fds_send(fd, text + done, len - done, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		done += (size_t)w;
	}
}

static const char *vendor_name(int v)
{
	return v == VRT_VENDOR_HIP ? "hip" : "cuda";
}

static void status(struct vrt_fd fd)
{
	struct vrt_live_stats st;
	vrt_live_stats(&st);
	char buf[8192];
	size_t n = 0;
	int state = atomic_load(&vrt_state);
#define PUT(...)                                                               \
	do {                                                                   \
		int k_ = snprintf(buf + n, sizeof(buf) - n, __VA_ARGS__);      \
		if (k_ > 0)                                                    \
			n += (size_t)k_ < sizeof(buf) - n                      \
			             ? (size_t)k_                              \
			             : sizeof(buf) - n - 1;                    \
	} while (0)
#define K VRT_CONTROL_KEY
	/* clang-format off: one key a line */
	PUT("{" K(VRT_CONTROL_K_PID) "%d,"
	    K(VRT_CONTROL_K_PPID) "%d,"
	    K(VRT_CONTROL_K_STATE) "\"%s\","
	    K(VRT_CONTROL_K_EVENTS) "%llu,"
	    K(VRT_CONTROL_K_DROPPED) "%llu,"
	    K(VRT_CONTROL_K_INFLIGHT) "%llu,"
	    K(VRT_CONTROL_K_OOMS) "%llu,"
	    K(VRT_CONTROL_K_PINNED) "%llu,"
	    K(VRT_CONTROL_K_ALLOCATIONS) "%llu,"
	    K(VRT_CONTROL_K_DEVICES) "[",
	    (int)getpid(), (int)getppid(),
	    state == VRT_STATE_ON ? VRT_CONTROL_STATE_RECORDING
	                          : VRT_CONTROL_STATE_STANDBY,
	    (unsigned long long)vrt_tbuf_events(),
	    (unsigned long long)vrt_tbuf_dropped(),
	    (unsigned long long)st.inflight, (unsigned long long)st.ooms,
	    (unsigned long long)st.host_pinned_bytes,
	    (unsigned long long)st.allocations);
	/* clang-format on */
	/* Capacity from the device inventory (standby has it too). */
	struct vrt_device_info inv[VRT_LIVE_MAX_DEVICES];
	int ninv = vrt_writer_known_devices(inv, VRT_LIVE_MAX_DEVICES);
	for (int d = 0; d < st.ndev; d++) {
		unsigned long long total = 0;
		for (int k = 0; k < ninv; k++)
			if (inv[k].vendor == st.dev[d].vendor &&
			    inv[k].ordinal == st.dev[d].device)
				total = inv[k].total_bytes;
		/* clang-format off */
		PUT("%s{" K(VRT_CONTROL_K_ID) "%d,"
		    K(VRT_CONTROL_K_VENDOR) "\"%s\","
		    K(VRT_CONTROL_K_LIVE) "%llu,"
		    K(VRT_CONTROL_K_TOTAL) "%llu,"
		    K(VRT_CONTROL_K_PHASES) "{",
		    d ? "," : "", st.dev[d].device,
		    vendor_name(st.dev[d].vendor),
		    (unsigned long long)st.dev[d].bytes, total);
		/* clang-format on */
		int first = 1;
		for (unsigned p = 0; p < VRT_LIVE_PHASES; p++) {
			if (!st.dev[d].by_phase[p])
				continue;
			PUT("%s\"%s\":%llu", first ? "" : ",",
			    vrt_phase_builtin_name(p),
			    (unsigned long long)st.dev[d].by_phase[p]);
			first = 0;
		}
		PUT("}}");
	}
	PUT("]}\n");
#undef K
#undef PUT
	reply(fd, buf);
}

/* Runs one command line; answers on fd. */
static void command(struct vrt_fd fd, char *line)
{
	const size_t mark_len = sizeof(VRT_CONTROL_MARK) - 1;
	char *nl = strpbrk(line, "\r\n");
	if (nl)
		*nl = 0;
	if (!strcmp(line, VRT_CONTROL_START)) {
		int was = vrt_session_record_start();
		reply(fd, was < 0 ? VRT_CONTROL_ERROR " cannot start recording\n"
		          : was > 0 ? VRT_CONTROL_OK " already recording\n"
		                    : VRT_CONTROL_OK " recording\n");
	} else if (!strcmp(line, VRT_CONTROL_STOP)) {
		reply(fd, vrt_session_record_stop()
		                  ? VRT_CONTROL_OK " already standby\n"
		                  : VRT_CONTROL_OK " standby\n");
	} else if (!strncmp(line, VRT_CONTROL_MARK, mark_len) &&
	           (line[mark_len] == ' ' || !line[mark_len])) {
		const char *label = line[mark_len] ? line + mark_len + 1 : "";
		if (!vrt_capture_on()) {
			reply(fd, VRT_CONTROL_OK " not recording (standby): no "
			                         "mark\n");
			return;
		}
		struct vrt_ev ev = {.rec = VRT_REC_MARK, .text = label};
		vrt_tbuf_event(&ev);
		reply(fd, VRT_CONTROL_OK "\n");
	} else if (!strcmp(line, VRT_CONTROL_FLUSH)) {
		vrt_writer_sync(2000);
		reply(fd, VRT_CONTROL_OK "\n");
	} else if (!strcmp(line, VRT_CONTROL_STATUS)) {
		status(fd);
	} else {
		reply(fd, VRT_CONTROL_ERROR " unknown command (start, stop, "
		                            "mark LABEL, flush, status)\n");
	}
}

static void serve(struct vrt_fd fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	/* Just accepted, not yet reachable by the program's closes. */
	if (getsockopt(fd.fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != geteuid() && cred.uid != 0)) {
		reply(fd, VRT_CONTROL_ERROR " permission denied\n");
		return;
	}
	struct timeval tv = {.tv_sec = 2};
	setsockopt(fd.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char line[VRT_CONTROL_LINE_MAX + 1];
	size_t got = 0;
	while (got < VRT_CONTROL_LINE_MAX && !memchr(line, '\n', got)) {
		ssize_t r = vrt_fds_recv(fd, line + got,
		                         VRT_CONTROL_LINE_MAX - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	line[got] = 0;
	if (got)
		command(fd, line);
}

static _Atomic int thread_started;

/* The listening socket is no longer ours: say so once, forget it. */
static void socket_gone(void)
{
	vrt_capture_warn("the program closed or replaced the control "
	                 "socket's descriptor (fd %d); `vramtrace ctl` cannot "
	                 "reach this process any more\n",
	                 lfd.fd);
	vrt_fds_close(&lfd);
	unlink(sock_path);
}

static void *control_main(void *arg)
{
	vrt_capture_thread_started(&thread_started);
	(void)arg;
	/* Not a hook: but the commands reach the core as if from one, and
	 * our own socket calls (close) must not be recorded. */
	vrt_in_hook = 1;
	while (!atomic_load(&stopping)) {
		if (vrt_capture_tick)
			vrt_capture_tick();
		if (!vrt_fds_check(lfd)) {
			socket_gone();
			break;
		}
		struct pollfd p = {.fd = lfd.fd, .events = POLLIN};
		int r = poll(&p, 1, POLL_MS);
		if (r < 0 && errno != EINTR) {
			socket_gone();
			break;
		}
		if (r <= 0)
			continue;
		if (p.revents & (POLLERR | POLLHUP | POLLNVAL)) {
			socket_gone();
			break;
		}
		struct vrt_fd c = vrt_fds_accept(lfd, SOCK_NONBLOCK);
		if (c.fd < 0) {
			int e = errno;
			if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR ||
			    e == ECONNABORTED || e == EPROTO)
				continue;
			if (e == EMFILE || e == ENFILE || e == ENOBUFS ||
			    e == ENOMEM) {
				/* Out of fds or memory for a while: wait
				 * rather than spin on a readable socket. */
				poll(NULL, 0, POLL_MS);
				continue;
			}
			socket_gone(); /* EBADF, ENOTSOCK, EINVAL: not ours */
			break;
		}
		/* Served with blocking calls bounded by socket timeouts. */
		int fl = fcntl(c.fd, F_GETFL);
		if (fl >= 0)
			fcntl(c.fd, F_SETFL, fl & ~O_NONBLOCK);
		serve(c);
		vrt_fds_close(&c);
	}
	vrt_capture_thread_exiting();
	return NULL;
}

static int control_start(const char *dir)
{
	if (running)
		return 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct vrt_fd dfd = vrt_fds_open(dir, O_RDONLY | O_DIRECTORY |
	                                              O_NOFOLLOW, 0);
	if (dfd.fd < 0)
		return -errno;
	char name[64], why[128];
	if (vrt_rundir_check(dfd.fd, geteuid(), why, sizeof(why))) {
		vrt_fds_close(&dfd);
		return -EPERM;
	}
	snprintf(name, sizeof(name), "%d" VRT_CONTROL_SUFFIX, (int)getpid());
	/* Non-blocking: accept never waits with the number in use (a
	 * closing hook of the program would wait for it). */
	lfd = vrt_fds_own(
	        socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (lfd.fd < 0) {
		int e = errno;
		vrt_fds_close(&dfd);
		return -e;
	}
	/* A socket file left by a dead process of the same pid is stale. */
	snprintf(sock_path, sizeof(sock_path), "%s/%s", dir, name);
	if (vrt_fds_use(dfd)) {
		unlinkat(dfd.fd, name, 0);
		vrt_fds_done(dfd);
	}
	int err = bind_in(lfd.fd, dfd, name);
	vrt_fds_close(&dfd);
	if (!err && vrt_real.listen(lfd.fd, 8) < 0)
		err = -errno;
	if (err) {
		vrt_fds_close(&lfd);
		return err;
	}
	atomic_store(&stopping, 0);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&thread_started, 0);
	err = -pthread_create(&thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		vrt_capture_wait_started(&thread_started);
	if (err) {
		vrt_fds_close(&lfd);
		unlink(sock_path);
		return err;
	}
	pthread_setname_np(thread, "vramtrace-ctl");
	running = 1;
	return 0;
}

static void control_stop(void)
{
	if (!running)
		return;
	atomic_store(&stopping, 1);
	/* The thread notices within POLL_MS, or after the command it is
	 * serving (bounded by the socket timeouts). */
	pthread_join(thread, NULL);
	/* Already forgotten when the program took the number (the thread
	 * removed the socket file then). */
	if (lfd.fd >= 0) {
		vrt_fds_close(&lfd);
		unlink(sock_path);
	}
	running = 0;
}

static void control_after_fork_child(void)
{
	/* The parent's thread and socket are the parent's: forget them
	 * (our copy of the fd is closed with the others, while ours). */
	lfd = VRT_FD_NONE;
	running = 0;
}

/* Standby without a way to start recording is just a loss. */
const struct vrt_session_service vrt_control_service = {
        .name = "control endpoint",
        .flags = VRT_SESSION_NEEDED_IN_STANDBY,
        .start = control_start,
        .stop = control_stop,
        .after_fork_child = control_after_fork_child,
};
