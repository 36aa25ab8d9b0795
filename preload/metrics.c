/*
 * metrics.c — an optional Prometheus endpoint in the traced process, for
 * dashboards during a load test and for a cluster's Prometheus:
 * VRAMTRACE_METRICS=HOST:PORT serves the live-allocation table (live.h) in
 * the text exposition format on GET /metrics.
 *
 *   vramtrace_device_live_bytes{device,vendor,phase}  gauge
 *   vramtrace_device_used_bytes{device,vendor}        gauge (sum of phases)
 *   vramtrace_device_peak_bytes{device,vendor}        gauge: the most held
 *                                     since the previous scrape (live.h)
 *   vramtrace_device_capacity_bytes{device,vendor}    gauge: the driver's
 *                                     total for the device
 *   vramtrace_host_pinned_bytes                       gauge
 *   vramtrace_requests_inflight                       gauge
 *   vramtrace_ooms_total                              counter
 *   vramtrace_live_allocations                        gauge
 *   vramtrace_info{version}                           gauge, always 1
 *
 * Every series also has the labels pid, rank (RANK, else LOCAL_RANK, as
 * torchrun and the engines' launchers set them, else the first device the
 * process holds memory on) and engine (VRAMTRACE_ENGINE, else read off
 * the command line by common/cmdline.c; the process that reads it exports
 * it, so its workers, started as `python -c ...`, carry it too).
 *
 * Addresses: loopback (127.0.0.1:PORT) by default. Another address
 * (0.0.0.0:9464 for a pod's Prometheus) only with
 * VRAMTRACE_METRICS_PUBLIC=1, and then with one warning, from the process
 * that binds it, that the endpoint has no authentication; without it the
 * setting is refused with one warning. Both warnings come at the
 * process's first GPU event, like the endpoint itself (vrt_session_start),
 * so shells and wrappers of the tree say nothing and never take the port.
 *
 * A tree on one fixed port (tensor-parallel workers): the first process
 * to bind it serves the tree's endpoint; every other one serves its own
 * numbers on a loopback port of its own (127.0.0.1:0) and the tree's
 * endpoint adds them to each scrape (metrics_agg.c), so one scrape shows
 * every process, told apart by pid and rank. A process without the port
 * tries it again every RETRY_MS, so another one takes over when the
 * tree's endpoint exits. A port held by a program outside the tree (no
 * "<pid>.metrics" of the run names it) gets one warning. Port 0 gives
 * every process an ephemeral port of its own and no aggregation. A
 * serving process writes the address it serves ("HOST:PORT\n") to
 * "<run dir>/<pid>.metrics" and removes the file when it stops.
 *
 * The endpoint is served by a thread of ours ("vramtrace-met", all signals
 * blocked, vrt_in_hook set for its whole life so its own socket calls —
 * listen, accept, connect, close — are never recorded as the server's).
 * Every wait is bounded: poll() with POLL_MS, a request of at most REQ_MAX
 * bytes read and answered within IO_MS each (and DRAIN_MS to let go of the
 * connection), the tree's other processes asked within AGG_MS, so a client
 * that stalls cannot stall the endpoint for long, and the host never waits
 * on it. All fds are O_CLOEXEC.
 *
 * Locks: m_mu/m_cv guard running/exited between the owner (start/stop,
 * called by the session, session.c, under its start_mu) and the
 * thread; the thread owns the sockets. The stop request is an eventfd.
 * vrt_metrics_init runs in the constructor, before any thread of ours:
 * what it sets (the address, the labels) is read-only afterwards.
 *
 * Every fd (the listening sockets, a scrape's connection, the tree's
 * connections to its other processes, the address files) is registered
 * with fds.c and every call on one is bracketed: when the program closes
 * or replaces one of them (close_range, closefrom, dup2), the thread
 * notices at its next poll, stops serving with one warning and never
 * touches the number again; a fork child closes its copies only while
 * they are still ours (vrt_fds_after_fork_child).
 */
#include "clock.h"
#include "hook.h"
#include "live.h"
#include "cmdline.h"
#include "metrics_agg.h"
#include "real.h"
#include "session.h"

#include <vramtrace/trace_format.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define POLL_MS    500
#define IO_MS      1000
#define DRAIN_MS   200
#define STOP_MS    2500 /* > 2 * IO_MS + DRAIN_MS: a scrape finishes */
#define REQ_MAX    4096
#define OUT_MAX    (32 * 1024)
#define RETRY_MS   2000 /* a process without the fixed port tries again */
#define SIBLING_MS 1000 /* how long to wait for the port's holder */

#ifndef VRT_VERSION
#define VRT_VERSION "unknown"
#endif

static pthread_mutex_t m_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t m_cv;
static pthread_t thread;
static int running, exited;
static struct vrt_fd wake = {-1, -1, 0}; /* the stop request (eventfd) */
static int port;   /* wanted; -1 when the option is unset or refused */
static int parsed; /* VRAMTRACE_METRICS looked at */
static struct sockaddr_in want; /* the address to serve (port as wanted) */
static char want_text[32];      /* it, as "HOST:PORT" */
static int public_bind;         /* want is not loopback (opted in) */
static char refusal[512];       /* the warning of a refused setting */
static char env_rank[16];       /* RANK / LOCAL_RANK, "" when unset */
static char engine[32];         /* the engine label, "" when unknown */
static int dev_rank = -1;       /* the first device holding memory */
static int tree_port;           /* the thread serves the fixed port */
static char dir[PATH_MAX];
static char file_path[PATH_MAX + 32];
static char out[OUT_MAX]; /* the thread's response buffer */

/* "HOST:PORT" (IPv4) → port, and want/want_text set; or -1 with the
 * warning kept in refusal, printed at the first GPU event. */
static int parse_address(const char *s)
{
	char host[INET_ADDRSTRLEN];
	const char *colon = strrchr(s, ':');
	char *end;

	if (!colon || (size_t)(colon - s) >= sizeof(host)) {
		snprintf(refusal, sizeof(refusal),
		         "VRAMTRACE_METRICS=%s: not HOST:PORT (e.g. "
		         "127.0.0.1:9464); not serving metrics\n",
		         s);
		return -1;
	}
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	errno = 0;
	long p = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || p < 0 || p > 65535) {
		snprintf(refusal, sizeof(refusal),
		         "VRAMTRACE_METRICS=%s: not a port in [0, 65535]; not "
		         "serving metrics\n",
		         s);
		return -1;
	}
	memset(&want, 0, sizeof(want));
	want.sin_family = AF_INET;
	want.sin_port = htons((uint16_t)p);
	if (inet_pton(AF_INET, host, &want.sin_addr) != 1) {
		snprintf(refusal, sizeof(refusal),
		         "VRAMTRACE_METRICS=%s: %s is not an IPv4 address; not "
		         "serving metrics\n",
		         s, host);
		return -1;
	}
	public_bind = (ntohl(want.sin_addr.s_addr) >> 24) != 127;
	if (public_bind && !vrt_options_int(VRT_OPT_METRICS_PUBLIC)) {
		snprintf(refusal, sizeof(refusal),
		         "VRAMTRACE_METRICS=%s: serving another address than "
		         "127.0.0.1 needs VRAMTRACE_METRICS_PUBLIC=1 (the "
		         "endpoint has no authentication); not serving "
		         "metrics\n",
		         s);
		return -1;
	}
	snprintf(want_text, sizeof(want_text), "%s:%ld", host, p);
	return (int)p;
}

/* A label value as it may be printed: [A-Za-z0-9._-], at most n - 1. */
static void label_value(char *dst, size_t n, const char *v)
{
	size_t i = 0;
	for (; v && v[i] && i + 1 < n; i++)
		dst[i] = isalnum((unsigned char)v[i]) || v[i] == '.' ||
		                         v[i] == '_' || v[i] == '-'
		                 ? v[i]
		                 : '_';
	dst[i] = '\0';
}

/* The engine of this process's own command line (cmdline.c), read from
 * /proc/self/cmdline; NULL when none. */
static const char *engine_of_self(void)
{
	static char buf[4096];
	char *argv[64];
	size_t argc = 0;
	ssize_t r = vrt_fds_read_path("/proc/self/cmdline", buf,
	                              sizeof(buf) - 1);
	if (r < 0)
		return NULL;
	size_t len = (size_t)r;
	buf[len] = '\0';
	for (size_t i = 0; i < len && argc < 64; i += strlen(buf + i) + 1)
		argv[argc++] = buf + i;
	return vrt_cmdline_engine(argv, argc);
}

void vrt_metrics_init(void)
{
	const char *s = vrt_options_str(VRT_OPT_METRICS);
	parsed = 1;
	port = s ? parse_address(s) : -1;
	if (port < 0)
		return;
	/* Before the first allocation, so every free finds its
	 * allocation counted (live.h). */
	vrt_live_track_peaks();
	const char *r = secure_getenv("RANK");
	if (!r || !*r)
		r = secure_getenv("LOCAL_RANK");
	label_value(env_rank, sizeof(env_rank), r);
	const char *e = vrt_options_str(VRT_OPT_ENGINE);
	if (!e && (e = engine_of_self()))
		/* Workers started as `python -c ...` name no engine: they
		 * take this one from the environment (before hook_env.c
		 * saves the settings children get back). */
		setenv("VRAMTRACE_ENGINE", e, 0);
	label_value(engine, sizeof(engine), e);
}

/* ---- the exposition ------------------------------------------------------ */

static const char *vendor_name(int v)
{
	return v == VRT_VENDOR_HIP ? "hip" : "cuda";
}

/* The driver's total for a device of this process's table, or 0. */
static uint64_t capacity_of(const struct vrt_device_info *inv, int ninv,
                            int vendor, int device)
{
	for (int i = 0; i < ninv; i++)
		if (inv[i].vendor == vendor && inv[i].ordinal == device)
			return inv[i].total_bytes;
	return 0;
}

/* Formats the current numbers into out; returns the length. Starts a new
 * peak window (live.h). */
static size_t format_metrics(void)
{
	static struct vrt_device_info inv[64];
	struct vrt_live_stats st;
	uint64_t peak[VRT_LIVE_MAX_DEVICES];
	char lbl[128], rank[16];
	size_t n = 0;
	vrt_live_take_peaks(peak);
	vrt_live_stats(&st);
	int ninv = vrt_writer_known_devices(inv, 64);
	/* The rank: the launcher's, else the first device this process
	 * held memory on (kept, so the series keeps its name). */
	if (dev_rank < 0)
		for (int d = 0; d < st.ndev; d++)
			if (st.dev[d].bytes) {
				dev_rank = st.dev[d].device;
				break;
			}
	if (env_rank[0])
		snprintf(rank, sizeof(rank), "%s", env_rank);
	else if (dev_rank >= 0)
		snprintf(rank, sizeof(rank), "%d", dev_rank);
	else
		rank[0] = '\0';
	snprintf(lbl, sizeof(lbl), "pid=\"%d\",rank=\"%s\",engine=\"%s\"",
	         (int)getpid(), rank, engine);
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
			PUT("vramtrace_device_live_bytes{%s,device=\"%d\","
			    "vendor=\"%s\",phase=\"%s\"} %llu\n",
			    lbl, st.dev[d].device,
			    vendor_name(st.dev[d].vendor),
			    vrt_phase_builtin_name(p),
			    (unsigned long long)st.dev[d].by_phase[p]);
	PUT("# HELP vramtrace_device_used_bytes GPU memory this process "
	    "holds on the device, all phases together.\n"
	    "# TYPE vramtrace_device_used_bytes gauge\n");
	for (int d = 0; d < st.ndev; d++)
		PUT("vramtrace_device_used_bytes{%s,device=\"%d\","
		    "vendor=\"%s\"} %llu\n",
		    lbl, st.dev[d].device, vendor_name(st.dev[d].vendor),
		    (unsigned long long)st.dev[d].bytes);
	PUT("# HELP vramtrace_device_peak_bytes The most GPU memory this "
	    "process held on the device since the previous scrape.\n"
	    "# TYPE vramtrace_device_peak_bytes gauge\n");
	for (int d = 0; d < st.ndev; d++) {
		int dev = st.dev[d].device;
		uint64_t p = dev < VRT_LIVE_MAX_DEVICES ? peak[dev] : 0;
		/* The table and the counters are read apart: never below
		 * what is held now. */
		PUT("vramtrace_device_peak_bytes{%s,device=\"%d\","
		    "vendor=\"%s\"} %llu\n",
		    lbl, dev, vendor_name(st.dev[d].vendor),
		    (unsigned long long)(p > st.dev[d].bytes
		                                 ? p
		                                 : st.dev[d].bytes));
	}
	PUT("# HELP vramtrace_device_capacity_bytes The device's memory, as "
	    "its driver reports it.\n"
	    "# TYPE vramtrace_device_capacity_bytes gauge\n");
	for (int d = 0; d < st.ndev; d++) {
		uint64_t cap = capacity_of(inv, ninv, st.dev[d].vendor,
		                           st.dev[d].device);
		if (cap)
			PUT("vramtrace_device_capacity_bytes{%s,device=\"%d\","
			    "vendor=\"%s\"} %llu\n",
			    lbl, st.dev[d].device,
			    vendor_name(st.dev[d].vendor),
			    (unsigned long long)cap);
	}
	PUT("# HELP vramtrace_host_pinned_bytes Page-locked host memory "
	    "(pinned and registered) this process holds.\n"
	    "# TYPE vramtrace_host_pinned_bytes gauge\n"
	    "vramtrace_host_pinned_bytes{%s} %llu\n"
	    "# HELP vramtrace_requests_inflight Requests in flight now on "
	    "accepted connections (HTTP/1 requests, HTTP/2 streams, turns "
	    "of other protocols).\n"
	    "# TYPE vramtrace_requests_inflight gauge\n"
	    "vramtrace_requests_inflight{%s} %llu\n"
	    "# HELP vramtrace_ooms_total Allocations refused for lack of "
	    "memory.\n"
	    "# TYPE vramtrace_ooms_total counter\n"
	    "vramtrace_ooms_total{%s} %llu\n"
	    "# HELP vramtrace_live_allocations Live allocations this process "
	    "holds.\n"
	    "# TYPE vramtrace_live_allocations gauge\n"
	    "vramtrace_live_allocations{%s} %llu\n"
	    "# HELP vramtrace_info The traced process serving these "
	    "numbers.\n"
	    "# TYPE vramtrace_info gauge\n"
	    "vramtrace_info{%s,version=\"%s\"} 1\n",
	    lbl, (unsigned long long)st.host_pinned_bytes, lbl,
	    (unsigned long long)st.inflight, lbl, (unsigned long long)st.ooms,
	    lbl, (unsigned long long)st.allocations, lbl, VRT_VERSION);
#undef PUT
	return n;
}

/* ---- HTTP, bounded ------------------------------------------------------- */

/* Waits for events on fd until deadline; 1 ready, 0 timeout or error.
 * (A poll of a number the program took reads nothing of its file; the
 * calls after it are bracketed.) */
static int wait_fd(struct vrt_fd fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - vrt_clock_mono_ms();
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
	int64_t deadline = vrt_clock_mono_ms() + IO_MS;
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
	int64_t deadline = vrt_clock_mono_ms() + IO_MS;
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
		size_t len = format_metrics(), cap = 0;
		/* The tree's endpoint: every process of the run, merged. */
		char *all = tree_port && port
		                    ? vrt_metrics_agg_collect(dir, out, len,
		                                              &len, &cap)
		                    : NULL;
		respond(fd, "200 OK",
		        "text/plain; version=0.0.4; charset=utf-8",
		        all ? all : out, len);
		if (all)
			vrt_metrics_agg_free(all, cap);
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
	int64_t deadline = vrt_clock_mono_ms() + DRAIN_MS;
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

/* "<dir>/<pid>.metrics" with the address served, written whole (tmp +
 * rename) so a reader never sees half of it. */
static void write_address_file(const struct sockaddr_in *a)
{
	char tmp[PATH_MAX + 48], line[48], host[INET_ADDRSTRLEN];
	snprintf(file_path, sizeof(file_path), "%s/%d.metrics", dir,
	         (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", file_path);
	if (!inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host)))
		snprintf(host, sizeof(host), "127.0.0.1");
	int n = snprintf(line, sizeof(line), "%s:%d\n", host,
	                 (int)ntohs(a->sin_port));
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

/* A listening socket on *a (its port filled in when 0), registered
 * with fds.c in *sock; 0 or -errno. */
static int listen_on(struct sockaddr_in *a, struct vrt_fd *sock)
{
	struct vrt_fd lfd = vrt_fds_own(
	        socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	int one = 1, e = 0;
	socklen_t len = sizeof(*a);
	if (lfd.fd < 0)
		return -errno;
	/* Four calls that never block, on the socket made just now: a
	 * closing hook of the program waits for them as for one. */
	if (!vrt_fds_use(lfd)) {
		vrt_fds_close(&lfd);
		return -EBADF;
	}
	/* A restarted server must not wait out TIME_WAIT of its previous
	 * life's scrapes. It does not let two listeners share the port. */
	setsockopt(lfd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd.fd, (struct sockaddr *)a, sizeof(*a)) < 0 ||
	    vrt_real.listen(lfd.fd, 16) < 0 ||
	    getsockname(lfd.fd, (struct sockaddr *)a, &len) < 0)
		e = errno;
	vrt_fds_done(lfd);
	if (e) {
		vrt_fds_close(&lfd);
		return -e;
	}
	*sock = lfd;
	return 0;
}

/* The fixed address, as this process's endpoint (in *sock), with the
 * warning a public address gets; -errno when it is taken or cannot be
 * bound. */
static int take_fixed(struct vrt_fd *sock)
{
	struct sockaddr_in a = want;
	int err = listen_on(&a, sock);
	if (err)
		return err;
	tree_port = port != 0;
	write_address_file(&a);
	if (public_bind)
		vrt_capture_warn("metrics: serving %s to every host that can "
		                 "reach it, without authentication "
		                 "(VRAMTRACE_METRICS_PUBLIC=1)\n",
		                 want_text);
	return 0;
}

/* From the loopback socket *lfd to the fixed port, when it is free: 1
 * when *lfd is now the fixed port's socket (the loopback one closed), 0
 * when the port is still taken (*lfd unchanged). */
static int take_over(struct vrt_fd *lfd)
{
	struct vrt_fd fixed;
	if (take_fixed(&fixed))
		return 0;
	vrt_fds_close(lfd);
	*lfd = fixed;
	return 1;
}

static struct vrt_fd open_listener(void)
{
	struct sockaddr_in a;
	struct vrt_fd lfd = VRT_FD_NONE;
	int err = take_fixed(&lfd);
	if (!err)
		return lfd;
	if (err != -EADDRINUSE || port == 0) {
		vrt_capture_warn("metrics: %s: %s; not serving metrics\n",
		                 want_text, strerror(-err));
		return VRT_FD_NONE;
	}
	/* Taken: our numbers on a loopback port of our own, which the
	 * process holding the fixed one adds to its scrapes. */
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	err = listen_on(&a, &lfd);
	if (err) {
		vrt_capture_warn("metrics: 127.0.0.1:0: %s; not serving "
		                 "metrics\n",
		                 strerror(-err));
		return VRT_FD_NONE;
	}
	write_address_file(&a);
	/* Who has the port: a process of this run names it in its address
	 * file (which may lag its bind by a moment), or it has just left
	 * and the port is free again, or a stranger has it. */
	int64_t deadline = vrt_clock_mono_ms() + SIBLING_MS;
	for (;;) {
		if (vrt_metrics_agg_owner(dir, want_text) > 0 ||
		    take_over(&lfd))
			return lfd;
		/* A poll of a number the program took reads nothing of its
		 * file; the thread's loop notices the loss. */
		struct pollfd p = {.fd = wake.fd, .events = POLLIN};
		if (vrt_clock_mono_ms() >= deadline || poll(&p, 1, 100) > 0)
			break;
	}
	vrt_capture_warn("metrics: %s is in use by a program outside this "
	                 "run; this process serves its metrics on "
	                 "127.0.0.1:%d (in %s) and tries %s again every %d "
	                 "s\n",
	                 want_text, (int)ntohs(a.sin_port), file_path,
	                 want_text, RETRY_MS / 1000);
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
	int64_t retry = vrt_clock_mono_ms() + RETRY_MS;
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
		if (r > 0 &&
		    ((p[0].revents | p[1].revents) & (POLLERR | POLLNVAL) ||
		     (p[0].revents && !vrt_fds_check(wake)))) {
			gone = 1;
			break;
		}
		if (r > 0 && p[0].revents)
			break; /* the stop request */
		/* Without the fixed port (another process of the tree, or
		 * a stranger, has it): take it over once it is free. The
		 * events read were the old socket's. */
		if (lfd.fd >= 0 && !tree_port && port &&
		    vrt_clock_mono_ms() >= retry) {
			retry = vrt_clock_mono_ms() + RETRY_MS;
			if (take_over(&lfd))
				continue;
		}
		if (r <= 0 || !(p[1].revents & POLLIN))
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

static int metrics_start(const char *run_dir)
{
	if (!parsed)
		vrt_metrics_init();
	if (refusal[0]) {
		/* Once per process, at its first GPU event (a fork child of
		 * a process that warned already says nothing). */
		vrt_capture_warn("%s", refusal);
		refusal[0] = 0;
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
	vrt_clock_cond_init(&m_cv);
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

static void metrics_stop(void)
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
	vrt_clock_deadline(&deadline, STOP_MS);
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

static void metrics_after_fork_child(void)
{
	/* The parent's thread does not exist here: close the child's copies
	 * of its fds. The child starts its own endpoint at its first event
	 * (a fixed port is then the parent's: the child serves a loopback
	 * port of its own, which the parent's scrapes include). */
	pthread_mutex_init(&m_mu, NULL);
	/* Our copy of the listening socket would keep the port bound (and
	 * queue connections nobody accepts) after the parent is gone: it is
	 * closed with every fd of ours (vrt_fds_after_fork_child), only
	 * while it is still ours. */
	wake = VRT_FD_NONE;
	running = 0;
	exited = 0;
	tree_port = 0;
	/* The child's rank is its own first device, not the parent's. */
	dev_rank = -1;
	file_path[0] = 0;
}

/* Dashboards only: no endpoint is no loss of data. */
const struct vrt_session_service vrt_metrics_service = {
        .name = "metrics endpoint",
        .start = metrics_start,
        .stop = metrics_stop,
        .after_fork_child = metrics_after_fork_child,
};
