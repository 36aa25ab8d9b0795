/*
 * sim_http.h — requests over 127.0.0.1 (or a unix socket) for the example
 * servers, both ends, in the protocols inference servers speak:
 *
 *   http1  HTTP/1.1 (the default; what follows describes it)
 *   grpc   gRPC over HTTP/2 with prior knowledge (h2c), as Triton's and
 *          TensorRT-LLM's gRPC endpoints and TGI's shards serve it: the
 *          load client puts each step's requests on ONE connection as
 *          streams; health checks are grpc.health.v1.Health/Check
 *   raw    a protocol of its own: length-prefixed messages (4 bytes, big
 *          endian), a request "G", "W" (warm-up) or "H" (health), the
 *          answer token messages then "E" (or "OK" / "LOADING")
 *   tls    HTTP/1.1 over TLS terminated inside the server (OpenSSL, a
 *          self-signed key made at start-up)
 *
 *
 * Server: sim_http_listen binds and listens (the moment a profiler calls
 * the server ready), then one thread of its own accepts connections and
 * reads requests (request line, headers, a Content-Length body; several
 * requests in turn on a keep-alive connection). GET /health is answered
 * there (503 "Loading model" while the server says it is loading, as
 * llama-server does); every other request is handed to the engine through
 * sim_http_next and answered when the engine calls sim_http_reply: with
 * Content-Length, or chunked (server-sent events) when the request asked
 * to stream. A request is "in flight" from its bytes arriving until its
 * response is written; a keep-alive connection between requests is idle.
 *
 * Load: sim_load_start runs a client in a thread of its own: optionally
 * waits for /health to answer 200, opens `idle` keep-alive connections
 * (each sends one GET /health and then stays open, unused, to the end, as
 * a client's connection pool leaves them), then runs each step of a plan:
 * that many requests at once, each on its own connection, each waiting
 * for its response; a step starts when the previous one is answered.
 *
 * Threads: the server thread owns every socket; sim_http_next and
 * sim_http_reply may be called from any one engine thread. The loader
 * thread and its per-request threads only touch their own sockets.
 */
#ifndef SIM_HTTP_H
#define SIM_HTTP_H

#include <pthread.h>

#define SIM_HTTP_MAX_STEPS 16

struct sim_http;

struct sim_http_req {
	int slot;      /* the connection */
	unsigned gen;  /* that connection's generation (slots are reused) */
	int stream;    /* "stream": true in the body (grpc: the stream id) */
	int id;        /* arrival order, from 0 */
	int warmup;    /* a warm-up call (TGI's Warmup RPC), not a request */
};

enum sim_proto { SIM_HTTP1 = 0, SIM_GRPC = 1, SIM_RAW = 2, SIM_TLS = 3 };

/* The protocol of this process's servers and load client from now on
 * (by name: http1, grpc, raw, tls). 0, or -1 for an unknown name (tls
 * without OpenSSL in the build). */
int sim_http_protocol(const char *name);

/* Listens on 127.0.0.1:port (0: any free port) and starts the server
 * thread; loading: answer 503 until sim_http_set_loading(h, 0). NULL on
 * error (printed). */
struct sim_http *sim_http_listen(int port, int loading);
/* The same on a unix socket at path (made anew), in protocol proto. */
struct sim_http *sim_http_listen_unix(const char *path, int proto,
                                      int loading);
int sim_http_port(const struct sim_http *h);
void sim_http_set_loading(struct sim_http *h, int loading);
/* Waits for the next request for the engine. 0, or -1 once stopped. */
int sim_http_next(struct sim_http *h, struct sim_http_req *r);
/* Answers r (200 and a small completion body); the server thread writes
 * it and closes the connection if the client asked to. */
void sim_http_reply(struct sim_http *h, const struct sim_http_req *r);
/* Answers r with an error status (500: a back end died), a JSON body. */
void sim_http_reply_status(struct sim_http *h, const struct sim_http_req *r,
                           int status);
/* Waits until every connection is closed by its client, then ends the
 * server thread and closes the listening socket. */
void sim_http_stop(struct sim_http *h);

/* One client exchange on a connection of its own, closed after the
 * answer: GET /health, or POST path (a completion, streamed or not).
 * The answer's status, or -1 (no server, or it died mid-answer). */
int sim_http_health(int port);
int sim_http_post(int port, const char *path, int stream);
/* One call of protocol proto on a connection of its own to a unix socket
 * (path) or 127.0.0.1:port (path NULL): what is "generate", "warmup" or
 * "health". 200 when answered (grpc: grpc-status 0), 503 while the server
 * loads, -1 when the connection failed or died. */
int sim_call(const char *unix_path, int port, int proto, const char *what);
/* n gRPC calls of what at once, as streams of one connection (a front
 * forwarding a batch, as TGI's router does to its shard); how many
 * answered OK. */
int sim_grpc_batch(const char *unix_path, int port, const char *what, int n);

struct sim_load {
	int port;
	int wait_ready;    /* poll GET /health until 200 first */
	int idle;          /* keep-alive connections left idle */
	const char *path;  /* the completion endpoint */
	int nsteps;
	int steps[SIM_HTTP_MAX_STEPS];
	int gated;         /* each step waits for sim_load_open */
	int failed;        /* requests without a complete 200 answer */
	/* private */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int opened;
};

/* Starts the loader thread; 0 or -1. */
int sim_load_start(struct sim_load *l);
/* With gated set: lets the next step of the plan start (the engine calls
 * it once it is ready for that step, e.g. after marking it). */
void sim_load_open(struct sim_load *l);
/* Waits for the plan to finish and the idle connections to close;
 * returns how many requests had no complete 200 answer (a server that
 * breaks its framing fails its run). */
int sim_load_join(struct sim_load *l);

#endif
