/*
 * mp_server — an inference server made of two processes, shaped like vLLM
 * V1 and SGLang: an API server process that speaks HTTP/1.1 and an engine
 * process that holds the GPU memory, talking over a unix socket.
 *
 *   API server  listens on a unix socket first (as ZMQ's ipc:// bind does;
 *               no HTTP server yet), starts the engine (posix_spawn of
 *               itself with --engine), accepts its connection (the engine
 *               speaks first, a ZMTP-like greeting: not HTTP), waits until
 *               the engine has loaded, then listens on 127.0.0.1 and writes
 *               "PORT UNIX_LISTEN_NS INET_LISTEN_NS" (CLOCK_MONOTONIC of
 *               its two listen() calls) to --port-file. It serves
 *               keep-alive HTTP/1.1 from one poll() loop (each connection
 *               reads with one of read, recv, readv, recvmsg, recvfrom and
 *               answers with one of writev, sendmsg, send + sendto, two
 *               writes, write + sendfile): GET /health at
 *               once; POST /gen?hold=N forwards one request to the engine
 *               and holds it until N requests are held, then all held ones
 *               finish (engine frees, answer written: Content-Length with
 *               writev, or chunked with one send() per chunk for
 *               &stream=1); GET /quit ends the server.
 *   engine      loads --layers weight tensors (--weights-gib in all),
 *               probes free memory, reserves --kv-gib of KV cache,
 *               captures --graphs-gib of CUDA graphs, then allocates
 *               --act-gib of activations per request until told to
 *               finish it. Out of memory: it tells the API server and
 *               exits 3 (the API server answers 500 to every held request
 *               and exits 3), or with --oom-recovers the API server
 *               answers that request 503, finishes the ones it holds and
 *               goes on.
 *
 * Phases come from the native function names, through a rules file
 * (engine_load_weights, engine_reserve_kv_cache, engine_capture_graphs,
 * engine_execute_model); linked with -lcuda (the fake) and exported
 * symbols so every frame is named.
 *
 * Exit: 0 after /quit, 2 usage, 3 out of memory, 1 anything else.
 */
#include "cuda_api.h"

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define GIB      (1024ull * 1024ull * 1024ull)
#define NOINLINE __attribute__((noinline, noclone))
#define MAX_CONN 64
#define MAX_REQ  64

static struct {
	double weights_gib, kv_gib, graphs_gib, act_gib;
	int layers, oom_recovers, engine;
	const char *ipc, *port_file;
} o = {10, 40, 1, 8, 10, 0, 0, NULL, NULL};

extern char **environ;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "mp_server: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* ---- engine ------------------------------------------------------------ */

/* Exported, so dladdr names them in the trace. */
void keep_frame(void);
CUresult engine_alloc(CUdeviceptr *p, size_t n);
void engine_load_weights(void);
void engine_reserve_kv_cache(void);
void engine_capture_graphs(void);
CUresult engine_execute_model(CUdeviceptr *p);

volatile int sink;
NOINLINE void keep_frame(void)
{
	sink++;
}

NOINLINE CUresult engine_alloc(CUdeviceptr *p, size_t n)
{
	CUresult r = cuMemAlloc_v2(p, n);
	keep_frame();
	return r;
}

static void must(CUresult r, const char *what)
{
	if (r == CUDA_ERROR_OUT_OF_MEMORY) {
		fprintf(stderr, "mp_server: engine: out of memory in %s\n",
		        what);
		exit(3);
	}
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "mp_server: engine: %s failed: %d\n", what,
		        (int)r);
		exit(1);
	}
}

NOINLINE void engine_load_weights(void)
{
	for (int i = 0; i < o.layers; i++) {
		CUdeviceptr p;
		must(engine_alloc(&p, (size_t)(o.weights_gib * GIB / o.layers)),
		     "engine_load_weights");
	}
	keep_frame();
}

NOINLINE void engine_reserve_kv_cache(void)
{
	CUdeviceptr p;
	size_t fr, to;
	must(cuMemGetInfo_v2(&fr, &to), "cuMemGetInfo_v2");
	must(engine_alloc(&p, (size_t)(o.kv_gib * GIB)),
	     "engine_reserve_kv_cache");
	keep_frame();
}

NOINLINE void engine_capture_graphs(void)
{
	CUdeviceptr p;
	must(engine_alloc(&p, (size_t)(o.graphs_gib * GIB)),
	     "engine_capture_graphs");
	keep_frame();
}

NOINLINE CUresult engine_execute_model(CUdeviceptr *p)
{
	CUresult r = engine_alloc(p, (size_t)(o.act_gib * GIB));
	keep_frame();
	return r;
}

static void put_line(int fd, const char *s)
{
	size_t n = strlen(s);
	if (write(fd, s, n) != (ssize_t)n)
		die("engine channel");
}

/* Commands, one per line: "R id" allocate, "F id" finish (free). */
static int engine_main(void)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	CUdeviceptr act[MAX_REQ] = {0};
	CUcontext ctx;
	char buf[4096];
	size_t have = 0;
	int fd;

	must(cuInit(0), "cuInit");
	must(cuDevicePrimaryCtxRetain(&ctx, 0), "retain");
	must(cuCtxSetCurrent(ctx), "set current");
	{
		size_t fr, to;
		must(cuMemGetInfo_v2(&fr, &to), "cuMemGetInfo_v2");
	}
	engine_load_weights();
	engine_reserve_kv_cache();
	engine_capture_graphs();
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", o.ipc);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("engine connect");
	/* The peer speaks first, and not HTTP (a ZMTP greeting). */
	if (write(fd, "\xff\0\0\0\0\0\0\0\1\x7f", 10) != 10)
		die("engine greeting");
	put_line(fd, "ready\n");
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *nl;
		if (r <= 0)
			return 0;
		have += (size_t)r;
		buf[have] = 0;
		while ((nl = strchr(buf, '\n'))) {
			int id = atoi(buf + 2);
			char out[64];
			*nl = 0;
			if (id < 0 || id >= MAX_REQ)
				id = 0;
			if (buf[0] == 'R') {
				CUresult e = engine_execute_model(&act[id]);
				if (e == CUDA_ERROR_OUT_OF_MEMORY) {
					snprintf(out, sizeof(out), "E %d\n", id);
					put_line(fd, out);
					if (!o.oom_recovers) {
						fprintf(stderr,
						        "mp_server: engine: out "
						        "of memory in "
						        "engine_execute_model\n");
						exit(3);
					}
					act[id] = 0;
				} else {
					must(e, "engine_execute_model");
					snprintf(out, sizeof(out), "A %d\n", id);
					put_line(fd, out);
				}
			} else if (buf[0] == 'F') {
				if (act[id])
					must(cuMemFree_v2(act[id]), "free");
				act[id] = 0;
				snprintf(out, sizeof(out), "D %d\n", id);
				put_line(fd, out);
			}
			have -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, have + 1);
		}
	}
}

/* ---- API server -------------------------------------------------------- */

struct conn {
	int fd;
	char buf[2048];
	size_t have;
	int held;   /* a request of it waits for its batch */
	int stream; /* answer chunked */
};

/* Slots keep their index (the engine knows a request by it); fd -1 is a
 * free slot. */
static struct conn conns[MAX_CONN];
static int engine_fd, held, hold_target;

static void answer(struct conn *c, int status, const char *body)
{
	char head[256];
	const char *reason = status == 200 ? "OK" : "Error";
	if (c->stream && status == 200) {
		/* SSE over chunked transfer encoding, a send() per chunk. */
		char chunk[128];
		int n = snprintf(head, sizeof(head),
		                 "HTTP/1.1 200 OK\r\nContent-Type: "
		                 "text/event-stream\r\nTransfer-Encoding: "
		                 "chunked\r\n\r\n");
		if (send(c->fd, head, (size_t)n, MSG_NOSIGNAL) < 0)
			return;
		for (int k = 0; k < 3; k++) {
			n = snprintf(chunk, sizeof(chunk),
			             "%x\r\ndata: token%d\n\n\r\n", 14, k);
			if (send(c->fd, chunk, (size_t)n, MSG_NOSIGNAL) < 0)
				return;
		}
		(void)send(c->fd, "0\r\n\r\n", 5, MSG_NOSIGNAL);
		return;
	}
	int n = snprintf(head, sizeof(head),
	                 "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	                 "Content-Length: %zu\r\n\r\n",
	                 status, reason, strlen(body));
	struct iovec v[2] = {{head, (size_t)n}, {(void *)body, strlen(body)}};
	struct msghdr m = {.msg_iov = v, .msg_iovlen = 2};
	/* Servers answer with any of these; each connection its own. */
	switch (c->fd % 5) {
	case 3: { /* headers, then the body from a file (sendfile) */
		int f = memfd_create("body", MFD_CLOEXEC);
		off_t off = 0;
		if (f >= 0 && write(f, body, strlen(body)) ==
		                      (ssize_t)strlen(body) &&
		    write(c->fd, head, (size_t)n) == n)
			(void)sendfile(c->fd, f, &off, strlen(body));
		if (f >= 0)
			close(f);
		break;
	}
	case 0:
		(void)writev(c->fd, v, 2);
		break;
	case 1:
		(void)sendmsg(c->fd, &m, MSG_NOSIGNAL);
		break;
	case 2: /* headers, then the body on its own */
		if (send(c->fd, head, (size_t)n, MSG_NOSIGNAL) == n)
			(void)sendto(c->fd, body, strlen(body), MSG_NOSIGNAL,
			             NULL, 0);
		break;
	default:
		if (write(c->fd, head, (size_t)n) == n)
			(void)write(c->fd, body, strlen(body));
	}
}

/* Reads what a client sent, with one of the calls servers use. */
static ssize_t take(struct conn *c)
{
	char *p = c->buf + c->have;
	size_t room = sizeof(c->buf) - 1 - c->have;
	struct iovec v = {p, room};
	struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
	switch (c->fd % 5) {
	case 0:
		return read(c->fd, p, room);
	case 1:
		return recv(c->fd, p, room, 0);
	case 2:
		return readv(c->fd, &v, 1);
	case 3:
		return recvmsg(c->fd, &m, 0);
	default:
		return recvfrom(c->fd, p, room, 0, NULL, NULL);
	}
}

static char ebuf[4096];
static size_t ehave;

/* Waits for the engine's next line into line; returns its letter, or 0
 * when the engine is gone. */
static int engine_wait(char *line, size_t cap)
{
	for (;;) {
		char *nl = memchr(ebuf, '\n', ehave);
		if (nl) {
			size_t n = (size_t)(nl - ebuf);
			if (n >= cap)
				n = cap - 1;
			memcpy(line, ebuf, n);
			line[n] = 0;
			ehave -= (size_t)(nl + 1 - ebuf);
			memmove(ebuf, nl + 1, ehave);
			return line[0]; /* "A id", "D id", "E id", "ready" */
		}
		ssize_t r = recv(engine_fd, ebuf + ehave, sizeof(ebuf) - ehave,
		                 0);
		if (r <= 0)
			return 0;
		ehave += (size_t)r;
	}
}

static void fail_all(int status)
{
	for (int i = 0; i < MAX_CONN; i++)
		if (conns[i].fd >= 0 && conns[i].held) {
			conns[i].stream = 0;
			answer(&conns[i], status, "out of memory\n");
		}
	exit(3);
}

/* Every held request finishes: the engine frees, then each is answered. */
static void finish_batch(void)
{
	char line[64], cmd[32];
	for (int i = 0; i < MAX_CONN; i++) {
		if (conns[i].fd < 0 || !conns[i].held)
			continue;
		snprintf(cmd, sizeof(cmd), "F %d\n", i);
		if (send(engine_fd, cmd, strlen(cmd), MSG_NOSIGNAL) < 0 ||
		    engine_wait(line, sizeof(line)) != 'D')
			fail_all(500);
		answer(&conns[i], 200, "done\n");
		conns[i].held = 0;
	}
	held = 0;
}

/* A complete request on connection i. Returns 1 to quit. */
static int request(int i, const char *req)
{
	struct conn *c = &conns[i];
	char line[64], cmd[32];
	const char *q;

	if (!strncmp(req, "GET /health", 11)) {
		answer(c, 200, "ok\n");
		return 0;
	}
	if (!strncmp(req, "GET /quit", 9)) {
		answer(c, 200, "bye\n");
		return 1;
	}
	if (strncmp(req, "POST /gen", 9)) {
		answer(c, 404, "no\n");
		return 0;
	}
	q = strstr(req, "hold=");
	hold_target = q ? atoi(q + 5) : 1;
	c->stream = strstr(req, "stream=1") != NULL;
	snprintf(cmd, sizeof(cmd), "R %d\n", i);
	if (send(engine_fd, cmd, strlen(cmd), MSG_NOSIGNAL) < 0)
		fail_all(500);
	int got = engine_wait(line, sizeof(line));
	if (got == 'E' && o.oom_recovers) {
		/* Refused; the ones held so far run as a smaller batch. */
		c->stream = 0;
		answer(c, 503, "out of memory, retry\n");
		finish_batch();
		return 0;
	}
	if (got != 'A') {
		c->held = 1;
		fail_all(500);
	}
	c->held = 1;
	if (++held >= hold_target)
		finish_batch();
	return 0;
}

static int api_main(const char *self)
{
	struct sockaddr_un ua = {.sun_family = AF_UNIX};
	struct sockaddr_in ia = {.sin_family = AF_INET};
	socklen_t ilen = sizeof(ia);
	char line[64];
	uint64_t unix_ns, inet_ns;
	int ufd, ifd, status;
	pid_t engine;

	/* The engine's channel first (ZMQ binds its ipc:// sockets before
	 * any HTTP server exists). */
	ufd = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(ua.sun_path, sizeof(ua.sun_path), "%s", o.ipc);
	unlink(o.ipc);
	if (ufd < 0 || bind(ufd, (struct sockaddr *)&ua, sizeof(ua)) < 0 ||
	    listen(ufd, 1) < 0)
		die("ipc listen");
	unix_ns = mono_ns();
	{
		char w[16], k[16], g[16], a[16], l[16];
		snprintf(w, sizeof(w), "%g", o.weights_gib);
		snprintf(k, sizeof(k), "%g", o.kv_gib);
		snprintf(g, sizeof(g), "%g", o.graphs_gib);
		snprintf(a, sizeof(a), "%g", o.act_gib);
		snprintf(l, sizeof(l), "%d", o.layers);
		char *argv[] = {(char *)self, "--engine", "--ipc",
		                (char *)o.ipc, "--weights-gib", w, "--kv-gib",
		                k, "--graphs-gib", g, "--act-gib", a,
		                "--layers", l,
		                o.oom_recovers ? "--oom-recovers" : NULL, NULL};
		if (posix_spawn(&engine, self, NULL, NULL, argv, environ))
			die("spawn engine");
	}
	engine_fd = accept(ufd, NULL, NULL);
	if (engine_fd < 0)
		die("engine accept");
	{
		char greet[10];
		size_t got = 0;
		while (got < sizeof(greet)) {
			ssize_t r = read(engine_fd, greet + got,
			                 sizeof(greet) - got);
			if (r <= 0)
				goto engine_died;
			got += (size_t)r;
		}
	}
	if (engine_wait(line, sizeof(line)) != 'r')
		goto engine_died;

	ifd = socket(AF_INET, SOCK_STREAM, 0);
	ia.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ifd < 0 || bind(ifd, (struct sockaddr *)&ia, sizeof(ia)) < 0 ||
	    listen(ifd, MAX_CONN) < 0 ||
	    getsockname(ifd, (struct sockaddr *)&ia, &ilen) < 0)
		die("http listen");
	inet_ns = mono_ns();
	{
		char tmp[4096];
		FILE *f;
		snprintf(tmp, sizeof(tmp), "%s.tmp", o.port_file);
		f = fopen(tmp, "w");
		if (!f)
			die("port file");
		fprintf(f, "%d %llu %llu\n", ntohs(ia.sin_port),
		        (unsigned long long)unix_ns,
		        (unsigned long long)inet_ns);
		fclose(f);
		rename(tmp, o.port_file);
	}
	for (int i = 0; i < MAX_CONN; i++)
		conns[i].fd = -1;
	for (;;) {
		struct pollfd p[MAX_CONN + 1];
		int slot[MAX_CONN + 1], np = 1;
		p[0].fd = ifd;
		p[0].events = POLLIN;
		for (int i = 0; i < MAX_CONN; i++) {
			if (conns[i].fd < 0)
				continue;
			p[np].fd = conns[i].fd;
			p[np].events = POLLIN;
			slot[np++] = i;
		}
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		if (p[0].revents & POLLIN) {
			int fd = accept4(ifd, NULL, NULL, SOCK_CLOEXEC);
			int i = 0;
			while (i < MAX_CONN && conns[i].fd >= 0)
				i++;
			if (fd >= 0 && i == MAX_CONN)
				close(fd);
			else if (fd >= 0) {
				memset(&conns[i], 0, sizeof(conns[0]));
				conns[i].fd = fd;
			}
		}
		for (int k = 1; k < np; k++) {
			int i = slot[k];
			struct conn *c = &conns[i];
			char *end;
			ssize_t r;
			if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = take(c);
			if (r <= 0) {
				if (!c->held) {
					close(c->fd);
					c->fd = -1;
				}
				continue;
			}
			c->have += (size_t)r;
			c->buf[c->have] = 0;
			end = strstr(c->buf, "\r\n\r\n");
			if (!end)
				continue;
			*end = 0;
			c->have = 0;
			if (request(i, c->buf)) {
				close(ifd);
				close(engine_fd);
				waitpid(engine, &status, 0);
				return 0;
			}
		}
	}
engine_died:
	waitpid(engine, &status, 0);
	fprintf(stderr, "mp_server: the engine died while loading\n");
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--engine")) {
			o.engine = 1;
			continue;
		}
		if (!strcmp(a, "--oom-recovers")) {
			o.oom_recovers = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "mp_server: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--ipc"))
			o.ipc = v;
		else if (!strcmp(a, "--port-file"))
			o.port_file = v;
		else if (!strcmp(a, "--weights-gib"))
			o.weights_gib = atof(v);
		else if (!strcmp(a, "--kv-gib"))
			o.kv_gib = atof(v);
		else if (!strcmp(a, "--graphs-gib"))
			o.graphs_gib = atof(v);
		else if (!strcmp(a, "--act-gib"))
			o.act_gib = atof(v);
		else if (!strcmp(a, "--layers"))
			o.layers = atoi(v);
		else {
			fprintf(stderr, "mp_server: unknown option %s\n", a);
			return 2;
		}
	}
	if (!o.ipc || (!o.engine && !o.port_file) || o.layers < 1) {
		fprintf(stderr, "usage: mp_server --ipc PATH --port-file FILE "
		                "[--weights-gib G] [--kv-gib G] [--graphs-gib G] "
		                "[--act-gib G] [--layers N] [--oom-recovers]\n");
		return 2;
	}
	if (o.engine)
		return engine_main();
	{
		static char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0)
			die("readlink /proc/self/exe");
		self[n] = 0;
		return api_main(self);
	}
}
