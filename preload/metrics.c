/*
 * metrics.c — an optional Prometheus endpoint in the traced process, for
 * dashboards during a load test: VRAMTRACE_METRICS=127.0.0.1:PORT serves
 * the live-allocation table (live.h) in the text exposition format on
 * GET /metrics.
 *
 *   vramtrace_device_live_bytes{device,vendor,phase}  gauge
 *   vramtrace_device_used_bytes{device,vendor}        gauge (sum of phases)
 *   vramtrace_host_pinned_bytes                       gauge
 *   vramtrace_requests_inflight                       gauge
 *   vramtrace_ooms_total                              counter
 *   vramtrace_live_allocations                        gauge
 *   vramtrace_info{pid}                               gauge, always 1
 *
 * Only the loopback address is served: anything but 127.0.0.1 is refused
 * with one warning (the numbers describe the host's memory and the
 * endpoint has no authentication). Several processes of a traced tree
 * read the same variable: the first to bind a fixed port serves it, the
 * others print one warning and serve nothing. Port 0 gives every process
 * an ephemeral port of its own. A serving process writes its address
 * ("127.0.0.1:PORT\n") to "<run dir>/<pid>.metrics" and removes the file
 * when it stops.
 *
 * The endpoint starts with the process's first GPU event (vrt_entry_start,
 * so shells and wrappers of the tree never take the port) and is served by
 * a thread of ours ("vramtrace-met", all signals blocked, vrt_in_hook set
 * for its whole life so its own socket calls — listen, accept, close — are
 * never recorded as the server's). Every wait is bounded: poll() with
 * POLL_MS, a request of at most REQ_MAX bytes read and answered within
 * IO_MS each (and DRAIN_MS to let go of the connection), so a client that
 * stalls cannot stall the endpoint for long,
 * and the host never waits on it. All fds are O_CLOEXEC.
 *
 * Locks: m_mu/m_cv guard running/exited between the owner (start/stop,
 * called by the lifecycle with start_mu semantics of entry.c) and the
 * thread; the thread owns the sockets. The stop request is an eventfd.
 *
 * Every fd is registered with fds.c and every call on one is bracketed:
 * when the program closes or replaces one of them (close_range,
 * closefrom, dup2), the thread notices at its next poll, stops serving
 * with one warning and never touches the number again; a fork child
 * closes its copies only while they are still ours.
 */
#include "hook.h"
#include "live.h"

#include <vramtrace/trace_format.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS  500
#define IO_MS    1000
#define DRAIN_MS 200
#define STOP_MS  2500 /* > 2 * IO_MS + DRAIN_MS: a scrape finishes */
#define REQ_MAX  4096
#define OUT_MAX  (32 * 1024)

static pthread_mutex_t m_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t m_cv;
static pthread_t thread;
static int running, exited;
static struct vrt_fd wake = {-1, -1, 0}; /* the stop request (eventfd) */
static int port;   /* wanted; -1 when the option is unset or refused */
static int parsed; /* VRAMTRACE_METRICS looked at */
static char dir[PATH_MAX];
static char file_path[PATH_MAX + 32];
static char out[OUT_MAX]; /* the thread's response buffer */

/* "127.0.0.1:PORT" → port, or -1 with a warning. */
static int parse_address(const char *s)
{
	static const char host[] = "127.0.0.1:";
	char *end;
	if (strncmp(s, host, sizeof(host) - 1)) {
		vrt_capture_warn("VRAMTRACE_METRICS=%s: only 127.0.0.1:PORT is "
		                 "served (the endpoint has no authentication); "
		                 "not serving metrics\n",
		                 s);
		return -1;
	}
	errno = 0;
	long p = strtol(s + sizeof(host) - 1, &end, 10);
	if (errno || end == s + sizeof(host) - 1 || *end || p < 0 ||
	    p > 65535) {
		vrt_capture_warn("VRAMTRACE_METRICS=%s: not a port in [0, 65535]; "
		                 "not serving metrics\n",
		                 s);
		return -1;
	}
	return (int)p;
}

/* ---- the exposition ------------------------------------------------------ */

static const char *vendor_name(int v)
{
	return v == VRT_VENDOR_HIP ? "hip" : "cuda";
}

/* Formats the current numbers into out; returns the length. */
static size_t format_metrics(void)
{
	struct vrt_live_stats st;
	size_t n = 0;
	vrt_live_stats(&st);
#define PUT(...)                                                               \
	do {                                                                   \
		int k_ = snprintf(out + n, sizeof(out) - n, __VA_ARGS__);      \
		if (k_ > 0)                                                    \
			n += (size_t)k_ < sizeof(out) - n                      \
			             ? (size_t)k_                              \
			             : sizeof(out) - n - 1;                    \
	} while (0)
	PUT("# HELP vramtrace_device_live_bytes GPU memory this process "
	    "holds, by device and phase.\n"
	    "# TYPE vramtrace_device_live_bytes gauge\n");
	for (int d = 0; d < st.ndev; d++)
		for (unsigned p = 0; p < VRT_LIVE_PHASES; p++)
			PUT("vramtrace_device_live_bytes{device=\"%d\","
			    "vendor=\"%s\",phase=\"%s\"} %llu\n",
			    st.dev[d].device, vendor_name(st.dev[d].vendor),
			    vrt_phase_builtin_name(p),
			    (unsigned long long)st.dev[d].by_phase[p]);
	PUT("# HELP vramtrace_device_used_bytes GPU memory this process "
	    "holds on the device, all phases together.\n"
	    "# TYPE vramtrace_device_used_bytes gauge\n");
	for (int d = 0; d < st.ndev; d++)
		PUT("vramtrace_device_used_bytes{device=\"%d\",vendor=\"%s\"} "
		    "%llu\n",
		    st.dev[d].device, vendor_name(st.dev[d].vendor),
		    (unsigned long long)st.dev[d].bytes);
	PUT("# HELP vramtrace_host_pinned_bytes Page-locked host memory "
	    "(pinned and registered) this process holds.\n"
	    "# TYPE vramtrace_host_pinned_bytes gauge\n"
	    "vramtrace_host_pinned_bytes %llu\n"
	    "# HELP vramtrace_requests_inflight Accepted connections open "
	    "now.\n"
	    "# TYPE vramtrace_requests_inflight gauge\n"
	    "vramtrace_requests_inflight %llu\n"
	    "# HELP vramtrace_ooms_total Allocations refused for lack of "
	    "memory.\n"
	    "# TYPE vramtrace_ooms_total counter\n"
	    "vramtrace_ooms_total %llu\n"
	    "# HELP vramtrace_live_allocations Live allocations this process "
	    "holds.\n"
	    "# TYPE vramtrace_live_allocations gauge\n"
	    "vramtrace_live_allocations %llu\n"
	    "# HELP vramtrace_info The traced process serving these "
	    "numbers.\n"
	    "# TYPE vramtrace_info gauge\n"
	    "vramtrace_info{pid=\"%d\"} 1\n",
	    (unsigned long long)st.host_pinned_bytes,
	    (unsigned long long)st.inflight, (unsigned long long)st.ooms,
	    (unsigned long long)st.allocations, (int)getpid());
#undef PUT
	return n;
}

/* ---- HTTP, bounded ------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until deadline; 1 ready, 0 timeout or error.
 * (A poll of a number the program took reads nothing of its file; the
 * calls after it are bracketed.) */
static int wait_fd(struct vrt_fd fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = {.fd = fd.fd, .events = events};
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0 || errno != EINTR)
			return 0;
	}
}

static void send_all(struct vrt_fd fd, const char *buf, size_t len)
{
	int64_t deadline = now_ms() + IO_MS;
	size_t done = 0;
	while (done < len) {
		ssize_t w = vrt_fds_send(fd, buf + done, len - done,
		                         MSG_DONTWAIT);
		if (w > 0) {
			done += (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_fd(fd, POLLOUT, deadline))
				return; /* a client that does not read */
		} else {
			return;
		}
	}
}

static void respond(struct vrt_fd fd, const char *status, const char *type,
                    const char *body, size_t len)
{
	char head[256];
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.0 %s\r\nContent-Type: %s\r\n"
	                 "Content-Length: %zu\r\nConnection: close\r\n\r\n",
	                 status, type, len);
	send_all(fd, head, (size_t)n);
	send_all(fd, body, len);
}

/* Reads one request (headers only: a GET has no body) and answers it. */
static void serve(struct vrt_fd fd)
{
	char req[REQ_MAX + 1];
	size_t got = 0;
	int64_t deadline = now_ms() + IO_MS;
	for (;;) {
		req[got] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
		if (got == REQ_MAX) {
			static const char msg[] = "request too large\n";
			respond(fd, "431 Request Header Fields Too Large",
			        "text/plain", msg, sizeof(msg) - 1);
			return;
		}
		ssize_t r = vrt_fds_recv(fd, req + got, REQ_MAX - got,
		                         MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
		else if (r < 0 && errno == EINTR)
			continue;
		else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_fd(fd, POLLIN, deadline))
				return; /* too slow: drop the connection */
		} else {
			return; /* closed before a whole request */
		}
	}
	char *sp = strchr(req, ' ');
	char *path = sp ? sp + 1 : NULL;
	size_t plen = path ? strcspn(path, " ?\r\n") : 0;
	if (!sp || (size_t)(sp - req) != 3 || memcmp(req, "GET", 3)) {
		static const char msg[] = "only GET /metrics\n";
		respond(fd, "405 Method Not Allowed", "text/plain", msg,
		        sizeof(msg) - 1);
	} else if ((plen == 8 && !memcmp(path, "/metrics", 8)) ||
	           (plen == 1 && path[0] == '/')) {
		size_t len = format_metrics();
		respond(fd, "200 OK",
		        "text/plain; version=0.0.4; charset=utf-8", out, len);
	} else {
		static const char msg[] = "not found: try /metrics\n";
		respond(fd, "404 Not Found", "text/plain", msg,
		        sizeof(msg) - 1);
	}
}

/* Closing with unread input resets the connection, and the client may
 * lose the answer with it: say we are done, then read what is left for a
 * bounded time before closing. */
static void drain(struct vrt_fd fd)
{
	char buf[4096];
	size_t total = 0;
	int64_t deadline = now_ms() + DRAIN_MS;
	if (!vrt_fds_use(fd))
		return;
	shutdown(fd.fd, SHUT_WR);
	vrt_fds_done(fd);
	while (total < REQ_MAX * 16) {
		ssize_t r = vrt_fds_recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0)
			total += (size_t)r;
		else if (r < 0 && errno == EINTR)
			continue;
		else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!wait_fd(fd, POLLIN, deadline))
				return;
		} else {
			return; /* the client closed: done */
		}
	}
}

/* ---- the thread ---------------------------------------------------------- */

/* "<dir>/<pid>.metrics" with our address, written whole (tmp + rename) so
 * a reader never sees half of it. */
static void write_address_file(int bound_port)
{
	char tmp[PATH_MAX + 48], line[32];
	snprintf(file_path, sizeof(file_path), "%s/%d.metrics", dir,
	         (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", file_path);
	int n = snprintf(line, sizeof(line), "127.0.0.1:%d\n", bound_port);
	unlink(tmp);
	struct vrt_fd fd = vrt_fds_open(
	        tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
	int made = fd.fd >= 0, err = made ? 0 : -errno;
	if (!err)
		err = vrt_fds_write_all(fd, line, (size_t)n);
	if (made) {
		int c = vrt_fds_close(&fd);
		err = err ? err : c;
	}
	if (!err && rename(tmp, file_path) < 0)
		err = -errno;
	if (err) {
		/* The endpoint still serves; only its address is not
		 * published, which port 0 users need to know. */
		vrt_capture_warn("%s: cannot write the metrics address: %s\n",
		                 file_path, strerror(-err));
		if (made)
			unlink(tmp);
		file_path[0] = 0;
	}
}

static struct vrt_fd open_listener(void)
{
	struct vrt_fd lfd = vrt_fds_own(
	        socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	int fd = lfd.fd;
	if (fd < 0) {
		vrt_capture_warn("metrics: socket: %s; not serving metrics\n",
		                 strerror(errno));
		return lfd;
	}
	int one = 1;
	/* A restarted server must not wait out TIME_WAIT of its previous
	 * life's scrapes. It does not let two listeners share the port. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		int e = errno;
		if (e == EADDRINUSE)
			vrt_capture_warn(
			        "metrics: 127.0.0.1:%d is in use (another "
			        "traced process of this run serves it?); this "
			        "process serves no metrics "
			        "(VRAMTRACE_METRICS=127.0.0.1:0 gives each "
			        "process its own port)\n",
			        port);
		else
			vrt_capture_warn("metrics: 127.0.0.1:%d: %s; not "
			                 "serving metrics\n",
			                 port, strerror(e));
		vrt_fds_close(&lfd);
		return lfd;
	}
	write_address_file(ntohs(a.sin_port));
	return lfd;
}

static _Atomic int thread_started;

static void *metrics_main(void *arg)
{
	vrt_capture_thread_started(&thread_started);
	(void)arg;
	/* Our socket calls go through the preload's own listen/accept/close
	 * wrappers: this thread is never a hook's caller to record. */
	vrt_in_hook = 1;
	struct vrt_fd lfd = open_listener();
	int gone = 0;
	for (;;) {
		if (vrt_capture_tick)
			vrt_capture_tick();
		if (!vrt_fds_check(wake) ||
		    (lfd.fd >= 0 && !vrt_fds_check(lfd))) {
			gone = 1;
			break;
		}
		struct pollfd p[2] = {{.fd = wake.fd, .events = POLLIN},
		                      {.fd = lfd.fd, .events = POLLIN}};
		int r = poll(p, lfd.fd >= 0 ? 2 : 1, POLL_MS);
		if (r < 0 && errno != EINTR)
			break;
		if (r <= 0)
			continue;
		if ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL) ||
		    (p[0].revents && !vrt_fds_check(wake))) {
			gone = 1;
			break;
		}
		if (p[0].revents)
			break; /* the stop request */
		if (!(p[1].revents & POLLIN))
			continue;
		struct vrt_fd c = vrt_fds_accept(lfd, SOCK_NONBLOCK);
		if (c.fd < 0)
			continue;
		serve(c);
		drain(c);
		vrt_fds_close(&c);
	}
	if (gone)
		vrt_capture_warn("metrics: the program closed or replaced the "
		                 "endpoint's descriptors; not serving metrics "
		                 "any more\n");
	vrt_fds_close(&lfd);
	if (file_path[0])
		unlink(file_path);
	file_path[0] = 0;
	vrt_capture_thread_exiting();
	pthread_mutex_lock(&m_mu);
	exited = 1;
	pthread_cond_broadcast(&m_cv);
	pthread_mutex_unlock(&m_mu);
	return NULL;
}

int vrt_metrics_start(const char *run_dir)
{
	if (!parsed) {
		const char *s = vrt_options_str(VRT_OPT_METRICS);
		parsed = 1;
		port = s ? parse_address(s) : -1;
	}
	if (port < 0 || !run_dir)
		return 0;
	pthread_mutex_lock(&m_mu);
	if (running) {
		pthread_mutex_unlock(&m_mu);
		return 0;
	}
	if (strlen(run_dir) >= sizeof(dir)) {
		pthread_mutex_unlock(&m_mu);
		return -ENAMETOOLONG;
	}
	strcpy(dir, run_dir);
	wake = vrt_fds_own(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (wake.fd < 0) {
		int e = errno;
		pthread_mutex_unlock(&m_mu);
		return -e;
	}
	exited = 0;
	file_path[0] = 0;
	vrt_tbuf_cond_init(&m_cv);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&thread_started, 0);
	int err = pthread_create(&thread, NULL, metrics_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		vrt_capture_wait_started(&thread_started);
	if (err) {
		vrt_fds_close(&wake);
	} else {
		pthread_setname_np(thread, "vramtrace-met");
		running = 1;
	}
	pthread_mutex_unlock(&m_mu);
	return -err;
}

void vrt_metrics_stop(void)
{
	pthread_mutex_lock(&m_mu);
	if (!running) {
		pthread_mutex_unlock(&m_mu);
		return;
	}
	running = 0;
	uint64_t one = 1;
	/* The eventfd cannot be full after one write: nothing to handle.
	 * When the program took its number, nothing is written: the thread
	 * notices that at its next poll and ends by itself. */
	if (vrt_fds_write_all(wake, &one, sizeof(one)) < 0)
		one = 0;
	/* The thread sees the request at once, or after the scrape it is
	 * serving (bounded by IO_MS twice); past STOP_MS it is left to
	 * die with the process rather than hold up the host's exit. */
	struct timespec deadline;
	vrt_tbuf_deadline(&deadline, STOP_MS);
	while (!exited &&
	       pthread_cond_timedwait(&m_cv, &m_mu, &deadline) != ETIMEDOUT)
		;
	int done = exited;
	pthread_mutex_unlock(&m_mu);
	if (done) {
		pthread_join(thread, NULL);
		vrt_fds_close(&wake);
	} else {
		/* Still using the eventfd: leave it open for the thread. */
		pthread_detach(thread);
		wake = VRT_FD_NONE;
	}
}

void vrt_metrics_after_fork_child(void)
{
	/* The parent's thread does not exist here: close the child's copies
	 * of its fds. The child starts its own endpoint at its first event
	 * (a fixed port is then busy: one warning). */
	pthread_mutex_init(&m_mu, NULL);
	/* Our copy of the listening socket would keep the port bound (and
	 * queue connections nobody accepts) after the parent is gone: it is
	 * closed with every fd of ours (vrt_fds_after_fork_child), only
	 * while it is still ours. */
	wake = VRT_FD_NONE;
	running = 0;
	exited = 0;
	file_path[0] = 0;
}
