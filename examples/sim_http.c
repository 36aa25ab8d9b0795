/*
 * sim_http.c — the example servers' HTTP/1.1 server thread and load
 * client (sim_http.h).
 *
 * Server thread: poll() over a wake pipe, the listening socket and up to
 * MAX_CONN connections; it alone reads, writes and closes sockets. A
 * connection holds at most one request at a time (HTTP/1.1 without
 * pipelining: a client sends the next request after the response), so
 * bytes that arrive meanwhile wait in its buffer. Requests for the engine
 * go through `pending` (mutex + condition variable, consumed by
 * sim_http_next); answers come back through `replies` and a byte on the
 * wake pipe. `mu` guards pending, replies, loading and stop; the
 * connection table is the server thread's alone.
 *
 * Load client: one thread runs the plan; each request of a step is a
 * thread of its own with its own socket (blocking I/O, bounded by
 * SO_RCVTIMEO so a dead server cannot hang a test). Nothing is shared
 * between them but the port.
 */
#include "sim_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONN  256
#define MAX_QUEUE 512
#define BUF       4096

struct conn {
	int fd;        /* -1: free slot */
	unsigned gen;
	int busy;      /* a request is waiting for its answer */
	int close;     /* the client sent Connection: close */
	size_t len;
	char buf[BUF];
};

struct reply {
	int slot;
	unsigned gen;
	int stream;
	int status; /* 200, or an error's */
};

struct sim_http {
	int lfd, port, wake[2];
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int loading, stop, next_id;
	struct sim_http_req pending[MAX_QUEUE];
	int npending;
	struct reply replies[MAX_QUEUE];
	int nreplies;
	struct conn conns[MAX_CONN];
};

/* ---- socket helpers ------------------------------------------------------- */

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* recv() that retries an interrupted call; > 0, or -1 at the end of the
 * stream or on an error. */
static ssize_t recv_some(int fd, char *p, size_t n)
{
	ssize_t r;

	do
		r = recv(fd, p, n, 0);
	while (r < 0 && errno == EINTR);
	return r > 0 ? r : -1;
}

/* Case-insensitive search for a header line's name in [p, end). */
static const char *header(const char *p, const char *end, const char *name)
{
	size_t n = strlen(name);

	for (const char *q = p; q + n < end; q++)
		if ((q == p || q[-1] == '\n') && !strncasecmp(q, name, n) &&
		    q[n] == ':')
			return q + n + 1;
	return NULL;
}

static long header_num(const char *p, const char *end, const char *name)
{
	const char *v = header(p, end, name);
	return v ? strtol(v, NULL, 10) : -1;
}

static int header_has(const char *p, const char *end, const char *name,
                      const char *word)
{
	const char *v = header(p, end, name);
	const char *eol = v ? memchr(v, '\r', (size_t)(end - v)) : NULL;
	size_t n = strlen(word);

	for (; v && eol && v + n <= eol; v++)
		if (!strncasecmp(v, word, n))
			return 1;
	return 0;
}

/* ---- server ---------------------------------------------------------------- */

static void write_answer(struct conn *c, int status, int stream)
{
	char head[256], chunk[256];
	const char *events[] = {
	        "data: {\"choices\":[{\"text\":\"Hello\"}]}\n\n",
	        "data: {\"choices\":[{\"text\":\" world\"}]}\n\n",
	        "data: [DONE]\n\n",
	};
	const char *body =
	        status == 503
	                ? "{\"error\":{\"code\":503,\"message\":\"Loading "
	                  "model\",\"type\":\"unavailable_error\"}}"
	        : status != 200
	                ? "{\"error\":\"llama runner process has terminated\"}"
	                : "{\"object\":\"text_completion\",\"choices\":[{"
	                  "\"text\":\"Hello world\",\"finish_reason\":"
	                  "\"length\"}]}";
	const char *reason = status == 503   ? "Service Unavailable"
	                     : status != 200 ? "Internal Server Error"
	                                     : "OK";
	int n;

	if (stream && status == 200) {
		n = snprintf(head, sizeof(head),
		             "HTTP/1.1 200 OK\r\nContent-Type: "
		             "text/event-stream\r\nTransfer-Encoding: "
		             "chunked\r\n%s\r\n",
		             c->close ? "Connection: close\r\n" : "");
		if (send_all(c->fd, head, (size_t)n))
			return;
		/* One send per chunk: the framing arrives in pieces, as a
		 * streaming server writes it. */
		for (size_t i = 0; i < sizeof(events) / sizeof(events[0]);
		     i++) {
			n = snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n",
			             strlen(events[i]), events[i]);
			if (send_all(c->fd, chunk, (size_t)n))
				return;
		}
		send_all(c->fd, "0\r\n\r\n", 5);
		return;
	}
	n = snprintf(head, sizeof(head),
	             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	             "Content-Length: %zu\r\n%s\r\n%s",
	             status, reason, strlen(body),
	             c->close ? "Connection: close\r\n" : "", body);
	send_all(c->fd, head, (size_t)n);
}

static void close_conn(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->gen++;
	c->busy = 0;
	c->len = 0;
}

/* Parses one complete request from c's buffer, if there is one: answers
 * /health here, queues the rest for the engine. */
static void take_request(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];
	char *end, *eol;
	long body;
	size_t used;
	int health, loading, stream;

	if (c->busy || c->fd < 0)
		return;
	end = memmem(c->buf, c->len, "\r\n\r\n", 4);
	if (!end)
		return;
	end += 4;
	body = header_num(c->buf, end, "Content-Length");
	if (body < 0)
		body = 0;
	used = (size_t)(end - c->buf) + (size_t)body;
	if (used > c->len)
		return;
	eol = memchr(c->buf, '\r', (size_t)(end - c->buf));
	health = eol && memmem(c->buf, (size_t)(eol - c->buf), " /health",
	                       8) != NULL;
	stream = memmem(end, (size_t)body, "\"stream\": true", 14) != NULL ||
	         memmem(end, (size_t)body, "\"stream\":true", 13) != NULL;
	c->close = header_has(c->buf, end, "Connection", "close");
	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
	pthread_mutex_lock(&h->mu);
	loading = h->loading;
	if (!health && !loading && h->npending < MAX_QUEUE) {
		h->pending[h->npending++] = (struct sim_http_req){
		        slot, c->gen, stream, h->next_id++};
		c->busy = 1;
		pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	if (c->busy)
		return;
	write_answer(c, loading ? 503 : 200, 0);
	if (c->close)
		close_conn(c);
	else
		take_request(h, slot);
}

static void accept_conn(struct sim_http *h)
{
	int fd = accept(h->lfd, NULL, NULL);

	if (fd < 0)
		return;
	for (int i = 0; i < MAX_CONN; i++)
		if (h->conns[i].fd < 0) {
			h->conns[i].fd = fd;
			h->conns[i].len = 0;
			h->conns[i].busy = 0;
			return;
		}
	close(fd); /* more clients than this example serves */
}

static void read_conn(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];
	ssize_t r = recv_some(c->fd, c->buf + c->len, sizeof(c->buf) - c->len);

	if (r < 0) {
		/* The client is gone; an unanswered request dies with it. */
		close_conn(c);
		return;
	}
	c->len += (size_t)r;
	take_request(h, slot);
}

static void write_replies(struct sim_http *h)
{
	struct reply rs[MAX_QUEUE];
	int n;
	char drain[64];

	while (read(h->wake[0], drain, sizeof(drain)) == (ssize_t)sizeof(drain))
		;
	pthread_mutex_lock(&h->mu);
	n = h->nreplies;
	memcpy(rs, h->replies, (size_t)n * sizeof(rs[0]));
	h->nreplies = 0;
	pthread_mutex_unlock(&h->mu);
	for (int i = 0; i < n; i++) {
		struct conn *c = &h->conns[rs[i].slot];
		if (c->fd < 0 || c->gen != rs[i].gen)
			continue; /* its client left before the answer */
		write_answer(c, rs[i].status, rs[i].stream);
		c->busy = 0;
		if (c->close)
			close_conn(c);
		else
			take_request(h, rs[i].slot);
	}
}

static void *server_thread(void *arg)
{
	struct sim_http *h = arg;
	struct pollfd pf[MAX_CONN + 2];
	int slot_of[MAX_CONN + 2];

	for (;;) {
		int n = 0, open = 0, stop, waiting;
		pf[n++] = (struct pollfd){h->wake[0], POLLIN, 0};
		pf[n++] = (struct pollfd){h->lfd, POLLIN, 0};
		for (int i = 0; i < MAX_CONN; i++)
			if (h->conns[i].fd >= 0) {
				open++;
				slot_of[n] = i;
				pf[n++] = (struct pollfd){h->conns[i].fd,
				                          POLLIN, 0};
			}
		pthread_mutex_lock(&h->mu);
		stop = h->stop;
		waiting = h->nreplies;
		pthread_mutex_unlock(&h->mu);
		if (stop && !open && !waiting)
			return NULL;
		if (poll(pf, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		if (pf[0].revents)
			write_replies(h);
		if (pf[1].revents & POLLIN)
			accept_conn(h);
		for (int k = 2; k < n; k++)
			if (pf[k].revents &&
			    h->conns[slot_of[k]].fd == pf[k].fd)
				read_conn(h, slot_of[k]);
	}
}

static void wake(struct sim_http *h)
{
	ssize_t r;

	do
		r = write(h->wake[1], "w", 1);
	while (r < 0 && errno == EINTR);
}

struct sim_http *sim_http_listen(int port, int loading)
{
	struct sim_http *h = calloc(1, sizeof(*h));
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(a);
	int one = 1;

	if (!h)
		return NULL;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 ||
	    setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(h->lfd, 128) < 0 ||
	    getsockname(h->lfd, (struct sockaddr *)&a, &len) < 0 ||
	    pipe2(h->wake, O_CLOEXEC | O_NONBLOCK)) {
		perror("listen on 127.0.0.1");
		free(h);
		return NULL;
	}
	h->port = ntohs(a.sin_port);
	h->loading = loading;
	for (int i = 0; i < MAX_CONN; i++)
		h->conns[i].fd = -1;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if (pthread_create(&h->thread, NULL, server_thread, h)) {
		perror("server thread");
		free(h);
		return NULL;
	}
	return h;
}

int sim_http_port(const struct sim_http *h)
{
	return h->port;
}

void sim_http_set_loading(struct sim_http *h, int loading)
{
	pthread_mutex_lock(&h->mu);
	h->loading = loading;
	pthread_mutex_unlock(&h->mu);
}

int sim_http_next(struct sim_http *h, struct sim_http_req *r)
{
	int rc = -1;

	pthread_mutex_lock(&h->mu);
	while (!h->npending && !h->stop)
		pthread_cond_wait(&h->cv, &h->mu);
	if (h->npending) {
		*r = h->pending[0];
		memmove(h->pending, h->pending + 1,
		        (size_t)--h->npending * sizeof(h->pending[0]));
		rc = 0;
	}
	pthread_mutex_unlock(&h->mu);
	return rc;
}

void sim_http_reply_status(struct sim_http *h, const struct sim_http_req *r,
                           int status)
{
	pthread_mutex_lock(&h->mu);
	if (h->nreplies < MAX_QUEUE)
		h->replies[h->nreplies++] =
		        (struct reply){r->slot, r->gen, r->stream, status};
	pthread_mutex_unlock(&h->mu);
	wake(h);
}

void sim_http_reply(struct sim_http *h, const struct sim_http_req *r)
{
	sim_http_reply_status(h, r, 200);
}

void sim_http_stop(struct sim_http *h)
{
	pthread_mutex_lock(&h->mu);
	h->stop = 1;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	wake(h);
	pthread_join(h->thread, NULL);
	close(h->lfd);
	close(h->wake[0]);
	close(h->wake[1]);
	free(h);
}

/* ---- load client ------------------------------------------------------------ */

static int dial(int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	struct timeval tv = {30, 0};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Reads one response: status line, headers, then the body by its
 * framing (Content-Length or chunked). Returns the status, -1 on error. */
static int read_response(int fd)
{
	char buf[BUF];
	size_t len = 0;
	char *end = NULL;
	int status;

	while (!end) {
		ssize_t r = recv_some(fd, buf + len, sizeof(buf) - len - 1);
		if (r < 0)
			return -1;
		len += (size_t)r;
		end = memmem(buf, len, "\r\n\r\n", 4);
		if (!end && len >= sizeof(buf) - 1)
			return -1;
	}
	end += 4;
	if (sscanf(buf, "HTTP/1.1 %d", &status) != 1)
		return -1;
	if (header_has(buf, end, "Transfer-Encoding", "chunked")) {
		/* Reads until the last chunk's "0\r\n\r\n". */
		size_t have = len - (size_t)(end - buf);
		memmove(buf, end, have);
		len = have;
		while (!(len >= 5 && !memcmp(buf + len - 5, "0\r\n\r\n", 5))) {
			ssize_t r;
			if (len >= sizeof(buf) - 1) {
				memmove(buf, buf + len - 8, 8);
				len = 8;
			}
			r = recv_some(fd, buf + len, sizeof(buf) - len - 1);
			if (r < 0)
				return -1;
			len += (size_t)r;
		}
		return status;
	}
	long want = header_num(buf, end, "Content-Length");
	size_t have = len - (size_t)(end - buf);
	while (want > 0 && have < (size_t)want) {
		ssize_t r = recv_some(fd, buf, sizeof(buf));
		if (r < 0)
			return -1;
		have += (size_t)r;
	}
	return status;
}

static int get_health(int fd, int keep_alive)
{
	char req[128];
	int n = snprintf(req, sizeof(req),
	                 "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n",
	                 keep_alive ? "" : "Connection: close\r\n");

	return send_all(fd, req, (size_t)n) ? -1 : read_response(fd);
}

struct one_request {
	pthread_t t;
	int port, stream, status;
	const char *path;
};

static void *request_thread(void *arg);

int sim_http_health(int port)
{
	int fd = dial(port), status;

	if (fd < 0)
		return -1;
	status = get_health(fd, 0);
	close(fd);
	return status;
}

int sim_http_post(int port, const char *path, int stream)
{
	struct one_request q = {.port = port, .stream = stream, .path = path};

	request_thread(&q);
	return q.status;
}

static void *request_thread(void *arg)
{
	struct one_request *q = arg;
	char req[512], body[160];
	int fd = dial(q->port), n;

	q->status = -1;
	if (fd < 0)
		return NULL;
	n = snprintf(body, sizeof(body),
	             "{\"model\": \"sim-model\", \"prompt\": \"Hello\", "
	             "\"max_tokens\": 16, \"stream\": %s}",
	             q->stream ? "true" : "false");
	n = snprintf(req, sizeof(req),
	             "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
	             "application/json\r\nContent-Length: %d\r\nConnection: "
	             "close\r\n\r\n%s",
	             q->path, n, body);
	/* A server that dies mid-request (the point of some runs) just ends
	 * this client. */
	if (!send_all(fd, req, (size_t)n))
		q->status = read_response(fd);
	close(fd);
	return NULL;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static void *load_thread(void *arg)
{
	struct sim_load *l = arg;
	int idle[MAX_CONN];
	int nidle = 0;

	while (l->wait_ready) {
		int fd = dial(l->port), st = fd < 0 ? -1 : get_health(fd, 0);
		if (fd >= 0)
			close(fd);
		if (st == 200)
			break;
		sleep_ms(5);
	}
	for (int i = 0; i < l->idle && nidle < MAX_CONN; i++) {
		int fd = dial(l->port);
		if (fd >= 0 && get_health(fd, 1) > 0)
			idle[nidle++] = fd;
		else if (fd >= 0)
			close(fd);
	}
	for (int s = 0; s < l->nsteps; s++) {
		struct one_request q[MAX_QUEUE / 4];
		int n = l->steps[s] < MAX_QUEUE / 4 ? l->steps[s]
		                                    : MAX_QUEUE / 4;
		pthread_mutex_lock(&l->mu);
		while (l->gated && l->opened <= s)
			pthread_cond_wait(&l->cv, &l->mu);
		pthread_mutex_unlock(&l->mu);
		for (int i = 0; i < n; i++) {
			q[i] = (struct one_request){0, l->port, i % 2, -1,
			                            l->path};
			if (pthread_create(&q[i].t, NULL, request_thread, &q[i]))
				q[i].port = -1;
		}
		for (int i = 0; i < n; i++) {
			if (q[i].port >= 0)
				pthread_join(q[i].t, NULL);
			l->failed += q[i].status != 200;
		}
	}
	for (int i = 0; i < nidle; i++)
		close(idle[i]);
	return NULL;
}

int sim_load_start(struct sim_load *l)
{
	pthread_mutex_init(&l->mu, NULL);
	pthread_cond_init(&l->cv, NULL);
	l->opened = 0;
	l->failed = 0;
	return pthread_create(&l->thread, NULL, load_thread, l) ? -1 : 0;
}

void sim_load_open(struct sim_load *l)
{
	pthread_mutex_lock(&l->mu);
	l->opened++;
	pthread_cond_broadcast(&l->cv);
	pthread_mutex_unlock(&l->mu);
}

int sim_load_join(struct sim_load *l)
{
	pthread_join(l->thread, NULL);
	return l->failed;
}
