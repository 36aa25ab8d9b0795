/*
 * sim_http.h — HTTP/1.1 on 127.0.0.1 for the example servers, both ends:
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
	int stream;    /* "stream": true in the body */
	int id;        /* arrival order, from 0 */
};

/* Listens on 127.0.0.1:port (0: any free port) and starts the server
 * thread; loading: answer 503 until sim_http_set_loading(h, 0). NULL on
 * error (printed). */
struct sim_http *sim_http_listen(int port, int loading);
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
