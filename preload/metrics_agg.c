/*
 * metrics_agg.c — one scrape of a fixed metrics port shows the whole
 * process tree (metrics_agg.h). The process holding the port (metrics.c)
 * lists the run directory's "<pid>.metrics" files, asks each other live
 * process that serves on loopback for its exposition (GET /metrics over
 * 127.0.0.1, MEMBER_MS each, AGG_MS in all, MEMBERS_MAX processes and
 * BODY_MAX bytes each at most) and merges them with its own.
 *
 * Only loopback addresses of files in the run directory are asked, and
 * only lines naming a vramtrace_ metric are kept, so a stale file whose
 * port another program took since adds nothing. Memory comes from one
 * mmap per scrape, unmapped after the answer is sent.
 *
 * Every fd (the run directory's listing, an address file, a connection)
 * is registered with fds.c and used through its brackets, like
 * metrics.c's: a number the program takes is never used or closed by us
 * again, and a fork child closes its copy of a connection being made only
 * while it is still ours (vrt_fds_after_fork_child).
 *
 * Threads: the metrics thread alone.
 */
#include "metrics_agg.h"
#include "clock.h"
#include "core.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MEMBERS_MAX 64
#define MEMBER_MS   500
#define AGG_MS      2000
#define BODY_MAX    (64 * 1024)
#define TEXT_MAX    ((MEMBERS_MAX + 1) * BODY_MAX)
#define LINES_MAX   (TEXT_MAX / 32)
#define FAMILIES    64

/* Waits for events on fd until deadline: 1 ready, 0 not. */
static int ready(int fd, short events, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - vrt_clock_mono_ms();
		struct pollfd p = {.fd = fd, .events = events};
		if (left <= 0)
			return 0;
		int r = poll(&p, 1, (int)left);
		if (r > 0)
			return 1;
		if (r == 0 || errno != EINTR)
			return 0;
	}
}

/* connect() on a registered socket, bracketed: 0 or -1 with errno. */
static int connect_fd(struct vrt_fd fd, const struct sockaddr_in *a)
{
	if (!vrt_fds_use(fd)) {
		errno = EBADF;
		return -1;
	}
	int r = connect(fd.fd, (const struct sockaddr *)a, sizeof(*a));
	int e = errno;
	vrt_fds_done(fd);
	errno = e;
	return r;
}

/* Whether the non-blocking connect on fd succeeded, bracketed. */
static int connected(struct vrt_fd fd)
{
	int err = 0;
	socklen_t elen = sizeof(err);
	if (!vrt_fds_use(fd))
		return 0;
	int r = getsockopt(fd.fd, SOL_SOCKET, SO_ERROR, &err, &elen);
	vrt_fds_done(fd);
	return r == 0 && err == 0;
}

/* The body of GET /metrics from 127.0.0.1:port, moved to the start of
 * buf (max bytes); its length, or -1. */
static long fetch(int port, char *buf, size_t max, int64_t deadline)
{
	static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	size_t got = 0;
	struct vrt_fd fd = vrt_fds_own(
	        socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));

	if (fd.fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	/* A poll of a number the program took reads nothing of its file;
	 * the calls after it are bracketed. */
	if ((connect_fd(fd, &a) < 0 &&
	     (errno != EINPROGRESS || !ready(fd.fd, POLLOUT, deadline) ||
	      !connected(fd))) ||
	    vrt_fds_send(fd, req, sizeof(req) - 1, MSG_DONTWAIT) !=
	            (ssize_t)(sizeof(req) - 1))
		goto fail;
	while (got < max) {
		ssize_t r = vrt_fds_recv(fd, buf + got, max - got,
		                         MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			break;
		else if (errno == EINTR)
			continue;
		else if ((errno != EAGAIN && errno != EWOULDBLOCK) ||
		         !ready(fd.fd, POLLIN, deadline))
			goto fail;
	}
	vrt_fds_close(&fd);
	/* "HTTP/1.0 200 OK\r\n...\r\n\r\nbody": a whole answer only. */
	if (got == max || got < 13 || memcmp(buf, "HTTP/1.", 7) ||
	    memcmp(buf + 8, " 200 ", 5))
		return -1;
	for (size_t i = 0; i + 4 <= got; i++)
		if (!memcmp(buf + i, "\r\n\r\n", 4)) {
			memmove(buf, buf + i + 4, got - i - 4);
			return (long)(got - i - 4);
		}
	return -1;
fail:
	vrt_fds_close(&fd);
	return -1;
}

/* "<pid>.metrics" → pid, else 0. */
static int pid_of_name(const char *n)
{
	char *end;
	long pid = strtol(n, &end, 10);
	return pid > 0 && pid < (1L << 30) && end != n &&
	                       !strcmp(end, ".metrics")
	               ? (int)pid
	               : 0;
}

/* The address in dir/<pid>.metrics, into out. */
static int read_address(const char *dir, const char *name, char *out, size_t n)
{
	char path[4352];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ssize_t r = vrt_fds_read_path(path, out, n - 1);
	if (r <= 0)
		return -1;
	out[r] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

static int alive(int pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

struct owner_scan {
	const char *dir, *addr;
};

/* The pid of a live process of the run (not us) serving the address. */
static int owner_of(const char *name, void *arg)
{
	const struct owner_scan *o = arg;
	int pid = pid_of_name(name);
	char a[64];
	return pid && pid != getpid() &&
	                       !read_address(o->dir, name, a, sizeof(a)) &&
	                       !strcmp(a, o->addr) && alive(pid)
	               ? pid
	               : 0;
}

int vrt_metrics_agg_owner(const char *dir, const char *addr)
{
	struct owner_scan o = {dir, addr};
	int pid = vrt_fds_each_name(dir, owner_of, &o);
	return pid > 0 ? pid : 0;
}

struct line {
	uint32_t off, len;
	uint16_t fam;
	uint8_t kind; /* 0 HELP, 1 TYPE, 2 sample */
};

struct merge {
	const char *text;
	struct line *lines;
	size_t nlines;
	struct {
		const char *name;
		size_t len;
	} fam[FAMILIES];
	int nfam;
};

static int family(struct merge *m, const char *name, size_t len)
{
	for (int i = 0; i < m->nfam; i++)
		if (m->fam[i].len == len && !memcmp(m->fam[i].name, name, len))
			return i;
	if (m->nfam == FAMILIES)
		return -1;
	m->fam[m->nfam].name = name;
	m->fam[m->nfam].len = len;
	return m->nfam++;
}

/* Indexes the lines of text[off, off + len) by family. */
static void index_lines(struct merge *m, size_t off, size_t len)
{
	const char *t = m->text, *end = t + off + len;
	for (const char *p = t + off; p < end && m->nlines < LINES_MAX;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end, *name = p;
		int kind = 2;
		if (le - p > 7 &&
		    (!memcmp(p, "# HELP ", 7) || !memcmp(p, "# TYPE ", 7))) {
			kind = p[2] == 'H' ? 0 : 1;
			name = p + 7;
		}
		size_t nlen = 0;
		while (name + nlen < le && name[nlen] != ' ' &&
		       name[nlen] != '{')
			nlen++;
		int f = nlen > 10 && !memcmp(name, "vramtrace_", 10)
		                ? family(m, name, nlen)
		                : -1;
		if (f >= 0)
			m->lines[m->nlines++] = (struct line){
			        (uint32_t)(p - t), (uint32_t)(le - p),
			        (uint16_t)f, (uint8_t)kind};
		p = le + 1;
	}
}

/* One scrape's gathering: the other processes' bodies appended to text. */
struct gather {
	const char *dir;
	char *text;
	size_t used, members;
	int64_t deadline;
};

/* Asks the process of one "<pid>.metrics" for its numbers; 1 (stop) when
 * the scrape has enough members or no time left. */
static int gather_one(const char *name, void *arg)
{
	struct gather *g = arg;
	int pid = pid_of_name(name), port;
	char a[64], *end;
	if (g->members >= MEMBERS_MAX || vrt_clock_mono_ms() >= g->deadline)
		return 1;
	if (!pid || pid == getpid() ||
	    read_address(g->dir, name, a, sizeof(a)) ||
	    strncmp(a, "127.0.0.1:", 10) || !alive(pid))
		return 0;
	port = (int)strtol(a + 10, &end, 10);
	if (*end || port <= 0 || port > 65535)
		return 0;
	int64_t until = vrt_clock_mono_ms() + MEMBER_MS;
	long got = fetch(port, g->text + g->used, BODY_MAX,
	                 until < g->deadline ? until : g->deadline);
	if (got <= 0)
		return 0;
	/* Each body ends its last line. */
	g->used += (size_t)got;
	if (g->text[g->used - 1] != '\n')
		g->text[g->used++] = '\n';
	g->members++;
	return 0;
}

char *vrt_metrics_agg_collect(const char *dir, const char *own, size_t len,
                              size_t *out_len, size_t *cap)
{
	size_t size = 2 * (size_t)TEXT_MAX + LINES_MAX * sizeof(struct line);
	char *text, *out;
	struct merge *m;
	size_t n = 0;

	if (len > BODY_MAX)
		return NULL;
	/* Reserved, not committed: only the pages written cost memory. */
	text = mmap(NULL, size + sizeof(*m), PROT_READ | PROT_WRITE,
	            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (text == MAP_FAILED)
		return NULL;
	out = text + TEXT_MAX;
	m = (struct merge *)(out + TEXT_MAX);
	m->lines = (struct line *)(m + 1);
	m->text = text;
	memcpy(text, own, len);
	struct gather g = {dir, text, len, 0, vrt_clock_mono_ms() + AGG_MS};
	/* An unreadable directory gathers nobody: own alone is served. */
	vrt_fds_each_name(dir, gather_one, &g);
	if (!g.members) {
		munmap(text, size + sizeof(*m));
		return NULL;
	}
	size_t used = g.used;
	index_lines(m, 0, used);
	for (int f = 0; f < m->nfam; f++)
		for (int kind = 0; kind < 3; kind++) {
			int once = kind < 2;
			for (size_t i = 0; i < m->nlines; i++) {
				const struct line *l = &m->lines[i];
				if (l->fam != f || l->kind != kind)
					continue;
				memcpy(out + n, text + l->off, l->len);
				n += l->len;
				out[n++] = '\n';
				if (once)
					break;
			}
		}
	/* The merged text is no longer than the texts it came from. */
	memmove(text, out, n);
	*out_len = n;
	*cap = size + sizeof(*m);
	return text;
}

void vrt_metrics_agg_free(char *buf, size_t cap)
{
	munmap(buf, cap);
}
