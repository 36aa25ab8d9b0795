/*
 * bench_io — what the preload's read/write hooks cost: on descriptors that
 * are not connections it follows, --calls pairs of write() and read() of
 * 64 bytes on a regular file (in a directory given with --dir) and on a
 * pipe, from one thread (each hook tests one bit for such an fd); and on
 * an accepted TCP connection it follows, --requests requests of a client
 * of the same thread: gRPC calls as HTTP/2 streams of one connection
 * (HEADERS and DATA in, HEADERS, DATA and trailers out, the path indexed
 * after the first), and a protocol of its own whose requests are inferred
 * by turns (a length-prefixed message in, two out). Run the program bare
 * and under the preload and subtract (run_all.py does).
 *
 * Prints, CPU ns per write+read pair or per request (CLOCK_THREAD_CPUTIME_ID
 * around each loop, divided by the count; the file's pair also makes two
 * lseek calls, which the preload does not hook; a request's time includes
 * the client's calls, which the preload does not follow):
 *   "file <ns per pair>"
 *   "pipe <ns per pair>"
 *   "h2 <ns per request>"
 *   "turns <ns per request>"
 *   "conn_state <bytes>"   (sizeof the preload's per-connection state)
 *
 *   bench_io --dir DIR [--calls N] [--requests N]
 *
 * Exit 0; 1 when a call fails; 2 usage.
 */
#include "conn.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int fail(const char *what)
{
	perror(what);
	return 1;
}

/* An accepted connection (the server's side, which the preload follows)
 * and the client's end of it; 0 or -1. */
static int conn_pair(int *server, int *client)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 4) || getsockname(l, (struct sockaddr *)&a, &len))
		return -1;
	*client = socket(AF_INET, SOCK_STREAM, 0);
	if (*client < 0 || connect(*client, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	*server = accept(l, NULL, NULL);
	close(l);
	setsockopt(*client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return *server < 0 ? -1 : 0;
}

/* Reads exactly n bytes. */
static int read_n(int fd, uint8_t *p, size_t n)
{
	while (n) {
		ssize_t r = recv(fd, p, n, 0);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static size_t frame(uint8_t *out, int type, int flags, uint32_t sid,
                    const void *pl, size_t n)
{
	out[0] = 0;
	out[1] = (uint8_t)(n >> 8);
	out[2] = (uint8_t)n;
	out[3] = (uint8_t)type;
	out[4] = (uint8_t)flags;
	out[5] = (uint8_t)(sid >> 24);
	out[6] = (uint8_t)(sid >> 16);
	out[7] = (uint8_t)(sid >> 8);
	out[8] = (uint8_t)sid;
	memcpy(out + 9, pl, n);
	return 9 + n;
}

/* gRPC calls on one HTTP/2 connection; CPU ns per call, < 0 on error. */
static double h2_loop(long n)
{
	static const char path[] = "/inference.GRPCInferenceService/ModelInfer";
	static const uint8_t msg[] = {0, 0, 0, 0, 3, 'g', 'e', 'n'};
	uint8_t first[128], next[8], req[256], resp[256], in[512];
	size_t fl = 0, rl = 0, reql, k;
	int s, c;

	if (conn_pair(&s, &c))
		return -1;
	/* :method POST, :scheme http, :path (a literal with incremental
	 * indexing the first time, then the dynamic table's entry) */
	first[fl++] = 0x83;
	first[fl++] = 0x86;
	first[fl++] = 0x44;
	first[fl++] = (uint8_t)(sizeof(path) - 1);
	memcpy(first + fl, path, sizeof(path) - 1);
	fl += sizeof(path) - 1;
	memcpy(next, "\x83\x86\xbe", 3);
	/* the answer: :status 200; a message; trailers grpc-status 0 */
	uint8_t status[] = {0x88}, trailers[] = {0x00, 11, 'g', 'r', 'p', 'c',
	                                          '-', 's', 't', 'a', 't', 'u',
	                                          's', 1, '0'};
	memcpy(in, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
	k = 24 + frame(in + 24, 4, 0, 0, NULL, 0);
	if (send(c, in, k, 0) != (ssize_t)k || read_n(s, in, k))
		return -1;
	double t0 = cpu_ns();
	for (long i = 0; i < n; i++) {
		uint32_t sid = (uint32_t)(2 * i + 1) & 0x7fffffff;
		reql = frame(req, 1, 4, sid, i ? next : first, i ? 3 : fl);
		reql += frame(req + reql, 0, 1, sid, msg, sizeof(msg));
		rl = frame(resp, 1, 4, sid, status, sizeof(status));
		rl += frame(resp + rl, 0, 0, sid, msg, sizeof(msg));
		rl += frame(resp + rl, 1, 5, sid, trailers, sizeof(trailers));
		if (send(c, req, reql, 0) != (ssize_t)reql ||
		    read_n(s, in, reql) ||
		    send(s, resp, rl, 0) != (ssize_t)rl || read_n(c, in, rl))
			return -1;
	}
	double t = cpu_ns() - t0;
	close(c);
	close(s);
	return t / (double)n;
}

/* A protocol of its own: a message in, two out, by turns. */
static double turns_loop(long n)
{
	static const uint8_t req[] = {0, 0, 0, 4, 'G', 'e', 'n', '!'};
	static const uint8_t tok[] = {0, 0, 0, 2, 'T', 'x'};
	static const uint8_t end[] = {0, 0, 0, 1, 'E'};
	uint8_t in[64];
	int s, c;

	if (conn_pair(&s, &c))
		return -1;
	double t0 = cpu_ns();
	for (long i = 0; i < n; i++)
		if (send(c, req, sizeof(req), 0) != (ssize_t)sizeof(req) ||
		    read_n(s, in, sizeof(req)) ||
		    send(s, tok, sizeof(tok), 0) != (ssize_t)sizeof(tok) ||
		    send(s, end, sizeof(end), 0) != (ssize_t)sizeof(end) ||
		    read_n(c, in, sizeof(tok) + sizeof(end)))
			return -1;
	double t = cpu_ns() - t0;
	close(c);
	close(s);
	return t / (double)n;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	long calls = 1000000, requests = 10000;
	char buf[64], path[4096];
	int fds[2], fd;
	double t0, file_ns, pipe_ns;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--calls"))
			calls = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--requests"))
			requests = atol(argv[i + 1]);
	}
	if (!dir || calls < 1 || requests < 1) {
		fprintf(stderr, "usage: bench_io --dir DIR [--calls N] "
		                "[--requests N]\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	snprintf(path, sizeof(path), "%s/bench_io.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(path);
	unlink(path);
	/* Write then read the same 64 bytes of the file (an lseek before
	 * each): the page cache, no growth, no disk. */
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++)
		if (lseek(fd, 0, SEEK_SET) < 0 ||
		    write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    lseek(fd, 0, SEEK_SET) < 0 ||
		    read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("file");
	file_ns = cpu_ns() - t0;
	close(fd);
	if (pipe(fds))
		return fail("pipe");
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++)
		if (write(fds[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    read(fds[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("pipe");
	pipe_ns = cpu_ns() - t0;
	printf("file %.2f\n", file_ns / (double)calls);
	printf("pipe %.2f\n", pipe_ns / (double)calls);
	double h2 = h2_loop(requests), tt = turns_loop(requests);
	if (h2 < 0 || tt < 0)
		return fail("connection");
	printf("h2 %.2f\n", h2);
	printf("turns %.2f\n", tt);
	/* the preload's slot: the state, a lock byte, the family and the
	 * listening fd (hook_libc.c's struct conn) */
	printf("conn_state %zu\n", sizeof(struct vrt_conn) + 8);
	return 0;
}
