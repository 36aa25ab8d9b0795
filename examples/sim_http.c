/*
 * sim_http.c — the example servers' server thread and load client
 * (sim_http.h), in HTTP/1.1, gRPC (sim_h2.c's frames), a raw protocol of
 * their own and HTTP/1.1 over TLS.
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
 * SO_RCVTIMEO so a dead server cannot hang a test), except in gRPC, where
 * a step's requests are streams of one connection. Nothing is shared
 * between them but the port.
 *
 * A protocol other than HTTP/1.1 changes only how bytes become requests
 * and answers (take_request, write_answer, the client's exchange); a TLS
 * connection's bytes go through OpenSSL memory BIOs, so the poll loop stays
 * the same.
 */
#include "sim_http.h"
#include "sim_h2.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef SIM_HAVE_TLS
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#endif

#define MAX_CONN  256
#define MAX_QUEUE 512
#define BUF       16384

/* gRPC paths: the model call (Triton's; TGI's shards take Prefill), the
 * warm-up (TGI's) and the health check. */
#define GRPC_INFER   "/inference.GRPCInferenceService/ModelInfer"
#define GRPC_PREFILL "/generate.v2.TextGenerationService/Prefill"
#define GRPC_WARMUP  "/generate.v2.TextGenerationService/Warmup"
#define GRPC_HEALTH  "/grpc.health.v1.Health/Check"

static int g_proto = SIM_HTTP1;

struct conn {
	int fd;        /* -1: free slot */
	unsigned gen;
	int busy;      /* requests waiting for their answers */
	int close;     /* the client sent Connection: close */
	int proto;
	int h2_start;  /* gRPC: the client's preface was read */
	struct sim_hpack_dec dec;
	size_t len;
	char buf[BUF];
#ifdef SIM_HAVE_TLS
	SSL *ssl;
	BIO *rbio, *wbio;
#endif
};

struct reply {
	int slot;
	unsigned gen;
	int stream;
	int status; /* 200, or an error's */
};

struct sim_http {
	int lfd, port, wake[2], proto;
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

/* ---- TLS ------------------------------------------------------------------ */

#ifdef SIM_HAVE_TLS
static SSL_CTX *server_ctx, *client_ctx;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/* A self-signed EC key and certificate for 127.0.0.1, made at start-up. */
static void tls_init(void)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name;

	server_ctx = SSL_CTX_new(TLS_server_method());
	client_ctx = SSL_CTX_new(TLS_client_method());
	if (!key || !x || !server_ctx || !client_ctx)
		return;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_set_pubkey(x, key);
	name = X509_get_subject_name(x);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	                           (const unsigned char *)"127.0.0.1", -1, -1,
	                           0);
	X509_set_issuer_name(x, name);
	X509_sign(x, key, EVP_sha256());
	SSL_CTX_use_certificate(server_ctx, x);
	SSL_CTX_use_PrivateKey(server_ctx, key);
	SSL_CTX_set_verify(client_ctx, SSL_VERIFY_NONE, NULL);
	X509_free(x);
	EVP_PKEY_free(key);
}

static int tls_ready(void)
{
	pthread_once(&tls_once, tls_init);
	return server_ctx && client_ctx;
}
#endif

int sim_http_protocol(const char *name)
{
	if (!strcmp(name, "http1"))
		g_proto = SIM_HTTP1;
	else if (!strcmp(name, "grpc"))
		g_proto = SIM_GRPC;
	else if (!strcmp(name, "raw"))
		g_proto = SIM_RAW;
#ifdef SIM_HAVE_TLS
	else if (!strcmp(name, "tls") && tls_ready())
		g_proto = SIM_TLS;
#endif
	else
		return -1;
	return 0;
}

/* ---- server ---------------------------------------------------------------- */

/* What the server writes goes through TLS on a TLS connection. */
static int conn_send(struct conn *c, const void *p, size_t n)
{
#ifdef SIM_HAVE_TLS
	if (c->ssl) {
		char out[BUF];
		int k;
		if (n && SSL_write(c->ssl, p, (int)n) <= 0)
			return -1;
		while ((k = BIO_read(c->wbio, out, sizeof(out))) > 0)
			if (send_all(c->fd, out, (size_t)k))
				return -1;
		return 0;
	}
#endif
	return send_all(c->fd, p, n);
}

/* A raw-protocol message: 4-byte length, then the bytes. */
static int raw_send(struct conn *c, const char *msg)
{
	uint8_t b[256];
	size_t n = strlen(msg);

	b[0] = (uint8_t)(n >> 24);
	b[1] = (uint8_t)(n >> 16);
	b[2] = (uint8_t)(n >> 8);
	b[3] = (uint8_t)n;
	memcpy(b + 4, msg, n);
	return conn_send(c, b, 4 + n);
}

/* A gRPC answer on stream sid: headers, messages, the trailers (a
 * trailers-only answer for an error: grpc-status 14 UNAVAILABLE while the
 * server loads, 13 INTERNAL for a failure). */
static void grpc_answer(struct conn *c, uint32_t sid, int status, int nmsg)
{
	uint8_t block[256], buf[1024];
	size_t k, n = 0;

	if (status == 200) {
		k = sim_hpack_indexed(block, 8); /* :status 200 */
		k += sim_hpack_literal(block + k, 31, NULL,
		                       "application/grpc", 0, 0);
		n += sim_h2_frame(buf + n, SIM_H2_HEADERS, SIM_H2_END_HEADERS,
		                  sid, block, k);
		for (int i = 0; i < nmsg; i++) {
			static const uint8_t msg[] = {0, 0, 0, 0, 5,
			                              'h', 'e', 'l', 'l', 'o'};
			n += sim_h2_frame(buf + n, SIM_H2_DATA, 0, sid, msg,
			                  sizeof(msg));
		}
		k = sim_hpack_literal(block, 0, "grpc-status", "0", 0, 0);
	} else {
		k = sim_hpack_indexed(block, 8);
		k += sim_hpack_literal(block + k, 31, NULL,
		                       "application/grpc", 0, 0);
		k += sim_hpack_literal(block + k, 0, "grpc-status",
		                       status == 503 ? "14" : "13", 0, 0);
	}
	n += sim_h2_frame(buf + n, SIM_H2_HEADERS,
	                  SIM_H2_END_HEADERS | SIM_H2_END_STREAM, sid, block, k);
	conn_send(c, buf, n);
}

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

	if (c->proto == SIM_GRPC) {
		grpc_answer(c, (uint32_t)stream, status, 3);
		return;
	}
	if (c->proto == SIM_RAW) {
		if (status != 200) {
			raw_send(c, status == 503 ? "LOADING" : "X");
			return;
		}
		/* One message per token, written as they come. */
		raw_send(c, "THello");
		raw_send(c, "T world");
		raw_send(c, "E");
		return;
	}
	if (stream && status == 200) {
		n = snprintf(head, sizeof(head),
		             "HTTP/1.1 200 OK\r\nContent-Type: "
		             "text/event-stream\r\nTransfer-Encoding: "
		             "chunked\r\n%s\r\n",
		             c->close ? "Connection: close\r\n" : "");
		if (conn_send(c, head, (size_t)n))
			return;
		/* One send per chunk: the framing arrives in pieces, as a
		 * streaming server writes it. */
		for (size_t i = 0; i < sizeof(events) / sizeof(events[0]);
		     i++) {
			n = snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n",
			             strlen(events[i]), events[i]);
			if (conn_send(c, chunk, (size_t)n))
				return;
		}
		conn_send(c, "0\r\n\r\n", 5);
		return;
	}
	n = snprintf(head, sizeof(head),
	             "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
	             "Content-Length: %zu\r\n%s\r\n%s",
	             status, reason, strlen(body),
	             c->close ? "Connection: close\r\n" : "", body);
	conn_send(c, head, (size_t)n);
}

static void close_conn(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->gen++;
	c->busy = 0;
	c->len = 0;
	sim_hpack_dec_free(&c->dec);
#ifdef SIM_HAVE_TLS
	if (c->ssl)
		SSL_free(c->ssl); /* frees its BIOs */
	c->ssl = NULL;
#endif
}

/* Queues a request for the engine, or answers it here (health; anything
 * while loading); returns 1 when queued. */
static int queue(struct sim_http *h, struct conn *c, int slot, int health,
                 int warmup, int stream, int *status)
{
	int queued = 0;

	pthread_mutex_lock(&h->mu);
	*status = h->loading ? 503 : 200;
	if (!health && !h->loading && h->npending < MAX_QUEUE) {
		h->pending[h->npending++] = (struct sim_http_req){
		        slot, c->gen, stream, h->next_id++, warmup};
		c->busy++;
		queued = 1;
		pthread_cond_signal(&h->cv);
	}
	pthread_mutex_unlock(&h->mu);
	return queued;
}

struct path_of {
	char path[128];
};

static void grpc_field(void *arg, const char *name, size_t nl,
                       const char *value, size_t vl)
{
	struct path_of *p = arg;
	if (nl == 5 && !memcmp(name, ":path", 5) && vl < sizeof(p->path)) {
		memcpy(p->path, value, vl);
		p->path[vl] = 0;
	}
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && !strcmp(s + n - k, suffix);
}

/* gRPC: the frames in c's buffer. Returns -1 when the connection must
 * close. */
static int take_grpc(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];
	size_t off = 0;

	if (!c->h2_start) {
		if (c->len < SIM_H2_PREFACE_LEN)
			return 0;
		if (memcmp(c->buf, SIM_H2_PREFACE, SIM_H2_PREFACE_LEN))
			return -1;
		off = SIM_H2_PREFACE_LEN;
		c->h2_start = 1;
		/* the server's preface: its SETTINGS */
		uint8_t f[9];
		conn_send(c, f, sim_h2_frame(f, SIM_H2_SETTINGS, 0, 0, NULL, 0));
	}
	for (;;) {
		int type, flags, status;
		uint32_t sid;
		const uint8_t *pl;
		size_t len, used;
		uint8_t out[64];
		if (!sim_h2_next_frame((uint8_t *)c->buf + off, c->len - off,
		                       &type, &flags, &sid, &pl, &len, &used))
			break;
		off += used;
		if (type == SIM_H2_SETTINGS && !(flags & SIM_H2_ACK)) {
			conn_send(c, out,
			          sim_h2_frame(out, SIM_H2_SETTINGS, SIM_H2_ACK,
			                       0, NULL, 0));
		} else if (type == SIM_H2_PING && !(flags & SIM_H2_ACK) &&
		           len == 8) {
			conn_send(c, out,
			          sim_h2_frame(out, SIM_H2_PING, SIM_H2_ACK, 0,
			                       pl, 8));
		} else if (type == SIM_H2_GOAWAY) {
			return -1;
		} else if (type == SIM_H2_HEADERS) {
			struct path_of p = {""};
			size_t skip = 0, pad = 0;
			if (flags & SIM_H2_PADDED) {
				pad = len ? pl[0] : 0;
				skip = 1;
			}
			if (flags & SIM_H2_PRIORITY)
				skip += 5;
			if (skip + pad > len ||
			    sim_hpack_decode(&c->dec, pl + skip,
			                     len - skip - pad, grpc_field, &p))
				return -1;
			int health = ends_with(p.path, "/Check") ||
			             ends_with(p.path, "/Health");
			if (!queue(h, c, slot, health,
			           ends_with(p.path, "/Warmup"), (int)sid,
			           &status))
				grpc_answer(c, sid, health ? 200 : status, 1);
		}
	}
	memmove(c->buf, c->buf + off, c->len - off);
	c->len -= off;
	return 0;
}

/* The raw protocol: whole messages in c's buffer, one at a time (the
 * client waits for the answer). */
static void take_raw(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];

	while (!c->busy && c->len >= 4) {
		size_t n = (size_t)(uint8_t)c->buf[0] << 24 |
		           (size_t)(uint8_t)c->buf[1] << 16 |
		           (size_t)(uint8_t)c->buf[2] << 8 | (uint8_t)c->buf[3];
		int status;
		if (c->len < 4 + n || !n)
			return;
		char kind = c->buf[4];
		memmove(c->buf, c->buf + 4 + n, c->len - 4 - n);
		c->len -= 4 + n;
		if (queue(h, c, slot, kind == 'H', kind == 'W', 0, &status))
			return;
		raw_send(c, status == 503 ? "LOADING" : "OK");
	}
}

/* Parses one complete request from c's buffer, if there is one: answers
 * /health here, queues the rest for the engine. */
static void take_request(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];
	char *end, *eol;
	long body;
	size_t used;
	int health, stream, status;

	if (c->fd < 0)
		return;
	if (c->proto == SIM_GRPC) {
		if (take_grpc(h, slot))
			close_conn(c);
		return;
	}
	if (c->proto == SIM_RAW) {
		take_raw(h, slot);
		return;
	}
	if (c->busy)
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
	int warmup = eol && memmem(c->buf, (size_t)(eol - c->buf),
	                           " /warmup", 8) != NULL;
	stream = memmem(end, (size_t)body, "\"stream\": true", 14) != NULL ||
	         memmem(end, (size_t)body, "\"stream\":true", 13) != NULL;
	c->close = header_has(c->buf, end, "Connection", "close");
	memmove(c->buf, c->buf + used, c->len - used);
	c->len -= used;
	if (queue(h, c, slot, health, warmup, stream, &status))
		return;
	write_answer(c, health && status == 200 ? 200 : status, 0);
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
			struct conn *c = &h->conns[i];
			c->fd = fd;
			c->len = 0;
			c->busy = 0;
			c->proto = h->proto;
			c->h2_start = 0;
#ifdef SIM_HAVE_TLS
			if (h->proto == SIM_TLS) {
				c->ssl = SSL_new(server_ctx);
				c->rbio = BIO_new(BIO_s_mem());
				c->wbio = BIO_new(BIO_s_mem());
				SSL_set_bio(c->ssl, c->rbio, c->wbio);
				SSL_set_accept_state(c->ssl);
			}
#endif
			return;
		}
	close(fd); /* more clients than this example serves */
}

/* Bytes from the socket into c's buffer (decrypted on TLS): how many, or
 * -1 when the client is gone. */
static ssize_t conn_recv(struct conn *c)
{
	char raw[BUF];
	ssize_t r = recv_some(c->fd, raw, sizeof(raw));

	if (r < 0)
		return -1;
#ifdef SIM_HAVE_TLS
	if (c->ssl) {
		int k;
		size_t got = 0;
		BIO_write(c->rbio, raw, (int)r);
		while (c->len + got < sizeof(c->buf) &&
		       (k = SSL_read(c->ssl, c->buf + c->len + got,
		                     (int)(sizeof(c->buf) - c->len - got))) > 0)
			got += (size_t)k;
		/* handshake records and tickets go out */
		if (conn_send(c, NULL, 0))
			return -1;
		if (!got && SSL_get_error(c->ssl, -1) == SSL_ERROR_ZERO_RETURN)
			return -1;
		c->len += got;
		return (ssize_t)got;
	}
#endif
	if ((size_t)r > sizeof(c->buf) - c->len)
		return -1;
	memcpy(c->buf + c->len, raw, (size_t)r);
	c->len += (size_t)r;
	return r;
}

static void read_conn(struct sim_http *h, int slot)
{
	struct conn *c = &h->conns[slot];

	if (conn_recv(c) < 0) {
		/* The client is gone; an unanswered request dies with it. */
		close_conn(c);
		return;
	}
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
		if (c->busy)
			c->busy--;
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

/* Starts the server thread on the listening socket h->lfd. */
static struct sim_http *serve(struct sim_http *h, int loading)
{
	if (pipe2(h->wake, O_CLOEXEC | O_NONBLOCK)) {
		perror("pipe");
		close(h->lfd);
		free(h);
		return NULL;
	}
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
	h->proto = g_proto;
	h->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 ||
	    setsockopt(h->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(h->lfd, 128) < 0 ||
	    getsockname(h->lfd, (struct sockaddr *)&a, &len) < 0) {
		perror("listen on 127.0.0.1");
		free(h);
		return NULL;
	}
	h->port = ntohs(a.sin_port);
	return serve(h, loading);
}

struct sim_http *sim_http_listen_unix(const char *path, int proto,
                                      int loading)
{
	struct sim_http *h = calloc(1, sizeof(*h));
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	if (!h || strlen(path) >= sizeof(a.sun_path)) {
		free(h);
		return NULL;
	}
	strcpy(a.sun_path, path);
	unlink(path);
	h->proto = proto;
	h->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (h->lfd < 0 || bind(h->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(h->lfd, 128) < 0) {
		perror(path);
		free(h);
		return NULL;
	}
	return serve(h, loading);
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

/* A client's connection: its socket, and its TLS when the protocol has. */
struct client {
	int fd;
	int proto;
#ifdef SIM_HAVE_TLS
	SSL *ssl;
#endif
};

static int set_timeout(int fd)
{
	struct timeval tv = {30, 0};
	return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/* A connected socket to a unix socket (path) or 127.0.0.1:port. */
static int dial_fd(const char *unix_path, int port)
{
	struct sockaddr_un u = {.sun_family = AF_UNIX};
	struct sockaddr_in in = {.sin_family = AF_INET,
	                         .sin_port = htons((uint16_t)port)};
	struct sockaddr *a = (struct sockaddr *)&in;
	socklen_t len = sizeof(in);
	int fd;

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (unix_path) {
		if (strlen(unix_path) >= sizeof(u.sun_path))
			return -1;
		strcpy(u.sun_path, unix_path);
		a = (struct sockaddr *)&u;
		len = sizeof(u);
	}
	fd = socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	set_timeout(fd);
	if (connect(fd, a, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void client_close(struct client *c)
{
#ifdef SIM_HAVE_TLS
	if (c->ssl) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
		c->ssl = NULL;
	}
#endif
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* Connects in protocol proto (the TLS handshake; gRPC's preface and
 * SETTINGS); 0 or -1. */
static int client_open(struct client *c, const char *unix_path, int port,
                       int proto)
{
	c->proto = proto;
#ifdef SIM_HAVE_TLS
	c->ssl = NULL;
#endif
	c->fd = dial_fd(unix_path, port);
	if (c->fd < 0)
		return -1;
#ifdef SIM_HAVE_TLS
	if (proto == SIM_TLS) {
		if (!tls_ready() || !(c->ssl = SSL_new(client_ctx)) ||
		    SSL_set_fd(c->ssl, c->fd) != 1 || SSL_connect(c->ssl) != 1) {
			client_close(c);
			return -1;
		}
	}
#endif
	if (proto == SIM_GRPC) {
		uint8_t b[SIM_H2_PREFACE_LEN + 9];
		memcpy(b, SIM_H2_PREFACE, SIM_H2_PREFACE_LEN);
		sim_h2_frame(b + SIM_H2_PREFACE_LEN, SIM_H2_SETTINGS, 0, 0, NULL,
		             0);
		if (send_all(c->fd, (const char *)b, sizeof(b))) {
			client_close(c);
			return -1;
		}
	}
	return 0;
}

static int client_send(struct client *c, const void *p, size_t n)
{
#ifdef SIM_HAVE_TLS
	if (c->ssl)
		return SSL_write(c->ssl, p, (int)n) == (int)n ? 0 : -1;
#endif
	return send_all(c->fd, p, n);
}

static ssize_t client_recv(struct client *c, char *p, size_t n)
{
#ifdef SIM_HAVE_TLS
	if (c->ssl) {
		int k = SSL_read(c->ssl, p, (int)n);
		return k > 0 ? k : -1;
	}
#endif
	return recv_some(c->fd, p, n);
}

/* Reads one response: status line, headers, then the body by its
 * framing (Content-Length or chunked). Returns the status, -1 on error. */
static int read_response(struct client *cl)
{
	char buf[BUF];
	size_t len = 0;
	char *end = NULL;
	int status;

	while (!end) {
		ssize_t r = client_recv(cl, buf + len, sizeof(buf) - len - 1);
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
			r = client_recv(cl, buf + len, sizeof(buf) - len - 1);
			if (r < 0)
				return -1;
			len += (size_t)r;
		}
		return status;
	}
	long want = header_num(buf, end, "Content-Length");
	size_t have = len - (size_t)(end - buf);
	while (want > 0 && have < (size_t)want) {
		ssize_t r = client_recv(cl, buf, sizeof(buf));
		if (r < 0)
			return -1;
		have += (size_t)r;
	}
	return status;
}

/* gRPC: the calls on streams sids[0..n) of one connection, sent together;
 * waits for every one to end. status[i]: 200 for grpc-status 0, 503 for
 * 14 (UNAVAILABLE), else -1. Returns how many ended. */
struct grpc_status {
	int *st;
};

static void trailer_field(void *arg, const char *name, size_t nl,
                          const char *value, size_t vl)
{
	int *st = arg;
	if (nl == 11 && !memcmp(name, "grpc-status", 11))
		*st = vl == 1 && value[0] == '0'   ? 200
		      : vl == 2 && !memcmp(value, "14", 2) ? 503
		                                           : -1;
}

static int grpc_calls(struct client *cl, const char *path, int n,
                      int *status)
{
	struct sim_hpack_enc enc = {.n = 0};
	struct sim_hpack_dec dec;
	uint8_t *out = malloc((size_t)n * 512 + 64);
	char *in = malloc(BUF * 2);
	size_t k = 0, len = 0;
	int ended = 0;

	memset(&dec, 0, sizeof(dec));
	if (!out || !in || n <= 0) {
		free(out);
		free(in);
		return 0;
	}
	for (int i = 0; i < n; i++) {
		uint8_t block[256];
		size_t b = sim_hpack_indexed(block, 3); /* :method POST */
		b += sim_hpack_indexed(block + b, 6);    /* :scheme http */
		b += sim_hpack_path(&enc, block + b, path);
		b += sim_hpack_literal(block + b, 1, NULL, "127.0.0.1", 0, 0);
		b += sim_hpack_literal(block + b, 31, NULL, "application/grpc",
		                       0, 0);
		b += sim_hpack_literal(block + b, 0, "te", "trailers", 0, 0);
		static const uint8_t msg[] = {0, 0, 0, 0, 3, 'g', 'e', 'n'};
		uint32_t sid = (uint32_t)(2 * i + 1);
		k += sim_h2_frame(out + k, SIM_H2_HEADERS, SIM_H2_END_HEADERS,
		                  sid, block, b);
		k += sim_h2_frame(out + k, SIM_H2_DATA, SIM_H2_END_STREAM, sid,
		                  msg, sizeof(msg));
		status[i] = -1;
	}
	if (client_send(cl, out, k))
		goto done;
	while (ended < n) {
		int type, flags;
		uint32_t sid;
		const uint8_t *pl;
		size_t plen, used;
		ssize_t r;
		if (!sim_h2_next_frame((uint8_t *)in, len, &type, &flags, &sid,
		                       &pl, &plen, &used)) {
			if (len == BUF * 2)
				goto done;
			r = client_recv(cl, in + len, BUF * 2 - len);
			if (r < 0)
				goto done;
			len += (size_t)r;
			continue;
		}
		if (type == SIM_H2_SETTINGS && !(flags & SIM_H2_ACK)) {
			uint8_t ack[9];
			client_send(cl, ack,
			            sim_h2_frame(ack, SIM_H2_SETTINGS, SIM_H2_ACK,
			                         0, NULL, 0));
		} else if (type == SIM_H2_HEADERS && sid && sid % 2 &&
		           sid / 2 < (uint32_t)n) {
			int *st = &status[sid / 2];
			if (sim_hpack_decode(&dec, pl, plen, trailer_field, st))
				goto done;
			if (flags & SIM_H2_END_STREAM)
				ended++;
		} else if (type == SIM_H2_DATA && (flags & SIM_H2_END_STREAM)) {
			ended++;
		} else if (type == SIM_H2_RST_STREAM || type == SIM_H2_GOAWAY) {
			goto done;
		}
		memmove(in, in + used, len - used);
		len -= used;
	}
done:
	sim_hpack_dec_free(&dec);
	free(out);
	free(in);
	return ended;
}

/* The raw protocol: one message, then the answer's until its last. */
static int raw_call(struct client *cl, char kind)
{
	char msg[64], in[BUF];
	size_t len = 0;
	int n = snprintf(msg + 4, sizeof(msg) - 4,
	                 "%c{\"prompt\": \"Hello\"}", kind);

	msg[0] = msg[1] = 0;
	msg[2] = (char)(n >> 8);
	msg[3] = (char)n;
	if (client_send(cl, msg, (size_t)n + 4))
		return -1;
	for (;;) {
		while (len >= 4) {
			size_t m = (size_t)(uint8_t)in[0] << 24 |
			           (size_t)(uint8_t)in[1] << 16 |
			           (size_t)(uint8_t)in[2] << 8 | (uint8_t)in[3];
			if (len < 4 + m)
				break;
			int last = m && (in[4] == 'E' || in[4] == 'O' ||
			                 in[4] == 'L' || in[4] == 'X');
			int st = m && (in[4] == 'E' || in[4] == 'O') ? 200
			         : m && in[4] == 'L'               ? 503
			                                           : -1;
			memmove(in, in + 4 + m, len - 4 - m);
			len -= 4 + m;
			if (last)
				return st;
		}
		if (len == sizeof(in))
			return -1;
		ssize_t r = client_recv(cl, in + len, sizeof(in) - len);
		if (r < 0)
			return -1;
		len += (size_t)r;
	}
}

/* One exchange on an open connection: what is "generate", "prefill",
 * "warmup" or "health"; HTTP/1.x keeps the connection open when
 * keep_alive. */
static int exchange(struct client *cl, const char *what, const char *http_path,
                    int stream, int keep_alive)
{
	char req[512], body[160];
	int n, health = !strcmp(what, "health");

	if (cl->proto == SIM_GRPC) {
		int st = -1;
		const char *path = health                      ? GRPC_HEALTH
		                   : !strcmp(what, "warmup")  ? GRPC_WARMUP
		                   : !strcmp(what, "prefill") ? GRPC_PREFILL
		                                              : GRPC_INFER;
		return grpc_calls(cl, path, 1, &st) == 1 ? st : -1;
	}
	if (cl->proto == SIM_RAW)
		return raw_call(cl, health                     ? 'H'
		                    : !strcmp(what, "warmup") ? 'W'
		                                              : 'G');
	if (health) {
		n = snprintf(req, sizeof(req),
		             "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n",
		             keep_alive ? "" : "Connection: close\r\n");
	} else {
		n = snprintf(body, sizeof(body),
		             "{\"model\": \"sim-model\", \"prompt\": \"Hello\", "
		             "\"max_tokens\": 16, \"stream\": %s}",
		             stream ? "true" : "false");
		n = snprintf(req, sizeof(req),
		             "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		             "Content-Type: application/json\r\nContent-Length: "
		             "%d\r\n%s\r\n%s",
		             !strcmp(what, "warmup") ? "/warmup" : http_path, n,
		             keep_alive ? "" : "Connection: close\r\n", body);
	}
	/* A server that dies mid-request (the point of some runs) just ends
	 * this client. */
	return client_send(cl, req, (size_t)n) ? -1 : read_response(cl);
}

int sim_call(const char *unix_path, int port, int proto, const char *what)
{
	struct client cl;
	int st;

	if (client_open(&cl, unix_path, port, proto))
		return -1;
	st = exchange(&cl, what, "/completion", 0, 0);
	client_close(&cl);
	return st;
}

int sim_grpc_batch(const char *unix_path, int port, const char *what, int n)
{
	struct client cl;
	int st[MAX_QUEUE / 4], ok = 0, ended;

	if (n > MAX_QUEUE / 4)
		n = MAX_QUEUE / 4;
	if (client_open(&cl, unix_path, port, SIM_GRPC))
		return 0;
	ended = grpc_calls(&cl,
	                   !strcmp(what, "prefill") ? GRPC_PREFILL : GRPC_INFER,
	                   n, st);
	client_close(&cl);
	for (int i = 0; i < ended && i < n; i++)
		ok += st[i] == 200;
	return ok;
}

int sim_http_health(int port)
{
	return sim_call(NULL, port, g_proto, "health");
}

struct one_request {
	pthread_t t;
	int port, stream, status;
	const char *path;
};

static void *request_thread(void *arg)
{
	struct one_request *q = arg;
	struct client cl;

	q->status = -1;
	if (client_open(&cl, NULL, q->port, g_proto))
		return NULL;
	q->status = exchange(&cl, "generate", q->path, q->stream, 0);
	client_close(&cl);
	return NULL;
}

int sim_http_post(int port, const char *path, int stream)
{
	struct one_request q = {.port = port, .stream = stream, .path = path};

	request_thread(&q);
	return q.status;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

/* One step of the plan: n requests at once (gRPC: n streams of one
 * connection); returns how many failed. */
static int run_step(struct sim_load *l, int n)
{
	struct one_request q[MAX_QUEUE / 4];
	int failed = 0;

	if (n > MAX_QUEUE / 4)
		n = MAX_QUEUE / 4;
	if (g_proto == SIM_GRPC) {
		struct client cl;
		int st[MAX_QUEUE / 4];
		if (client_open(&cl, NULL, l->port, SIM_GRPC))
			return n;
		int ended = grpc_calls(&cl, GRPC_INFER, n, st);
		client_close(&cl);
		for (int i = 0; i < n; i++)
			failed += i >= ended || st[i] != 200;
		return failed;
	}
	for (int i = 0; i < n; i++) {
		q[i] = (struct one_request){0, l->port, i % 2, -1, l->path};
		if (pthread_create(&q[i].t, NULL, request_thread, &q[i]))
			q[i].port = -1;
	}
	for (int i = 0; i < n; i++) {
		if (q[i].port >= 0)
			pthread_join(q[i].t, NULL);
		failed += q[i].status != 200;
	}
	return failed;
}

static void *load_thread(void *arg)
{
	struct sim_load *l = arg;
	struct client idle[MAX_CONN];
	int nidle = 0;

	while (l->wait_ready && sim_http_health(l->port) != 200)
		sleep_ms(5);
	for (int i = 0; i < l->idle && nidle < MAX_CONN; i++) {
		struct client *c = &idle[nidle];
		if (client_open(c, NULL, l->port, g_proto))
			continue;
		if (exchange(c, "health", "/health", 0, 1) > 0)
			nidle++;
		else
			client_close(c);
	}
	for (int s = 0; s < l->nsteps; s++) {
		pthread_mutex_lock(&l->mu);
		while (l->gated && l->opened <= s)
			pthread_cond_wait(&l->cv, &l->mu);
		pthread_mutex_unlock(&l->mu);
		l->failed += run_step(l, l->steps[s]);
	}
	for (int i = 0; i < nidle; i++)
		client_close(&idle[i]);
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
