/*
 * ollama_sim — a front shaped like Ollama's server (`ollama serve`), for
 * the scenario corpus: it serves HTTP/1.1 on 127.0.0.1 from the start
 * (ready before any model is loaded), and the first completion request
 * loads the model the way Ollama does today: it starts llama.cpp's
 * llama-server as a child process on a port of its own (here llama_sim,
 * from this program's directory, with --listen-before-load --no-client
 * --port P and every argument after `--`), polls the child's GET /health
 * until it answers 200 (503 "Loading model" meanwhile), then forwards each
 * completion to the child's POST /completion over 127.0.0.1 and relays the
 * answer. When the child dies, every request still to answer gets a 500
 * ("llama runner process has terminated"), as Ollama's does.
 *
 * Its own client (a thread, sim_http.h's loader) sends the plan: one
 * request alone, then --concurrent-requests of the child's arguments at
 * once (default its -np, else 4), the same plan the child expects.
 *
 *   ollama_sim [--health-ms MS] -- LLAMA_SIM_ARGUMENTS
 *
 * Exit status: 0 when every request was answered 200, 1 otherwise, 2
 * usage. The child's own status is the trace's (vramtrace record keeps
 * each process's).
 *
 * Threads: the main thread takes requests and forks the child; one thread
 * per forwarded request writes and reads its own socket, then hands the
 * answer to sim_http_reply_status (safe from any thread).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim_http.h"

#define MAX_CHILD_ARGS 96
#define MAX_STEP       64

static struct {
	int health_ms;
	char *child_argv[MAX_CHILD_ARGS];
	int child_argc;
	int steps[2], nsteps;
} o = {.health_ms = 20};

static pid_t g_child = -1;
static int g_child_port;
static int g_child_dead; /* main thread only */

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* A free port on 127.0.0.1, as Ollama picks one for llama-server. */
static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t n = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

	if (fd < 0)
		return -1;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (!bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &n))
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int child_exited(void)
{
	int st;

	if (g_child_dead)
		return 1;
	if (g_child > 0 && waitpid(g_child, &st, WNOHANG) == g_child) {
		g_child_dead = 1;
		fprintf(stderr,
		        "time=0 level=ERROR source=sched.go msg=\"llama runner "
		        "process has terminated: %s %d\"\n",
		        WIFSIGNALED(st) ? "signal" : "exit status",
		        WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
	}
	return g_child_dead;
}

/* Starts llama-server (llama_sim) and waits until its /health says 200;
 * 0, or -1 when it died first. */
static int load_model(void)
{
	char exe[PATH_MAX], port[16], *argv[MAX_CHILD_ARGS + 8];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 16);
	int k = 0;

	if (n <= 0)
		return -1;
	exe[n] = '\0';
	strcpy(strrchr(exe, '/') + 1, "llama_sim");
	if ((g_child_port = free_port()) < 0)
		return -1;
	snprintf(port, sizeof(port), "%d", g_child_port);
	argv[k++] = exe;
	argv[k++] = "--listen-before-load";
	argv[k++] = "--no-client";
	argv[k++] = "--port";
	argv[k++] = port;
	for (int i = 0; i < o.child_argc; i++)
		argv[k++] = o.child_argv[i];
	argv[k] = NULL;
	fprintf(stderr,
	        "time=0 level=INFO source=server.go msg=\"starting "
	        "llama-server\" port=%d\n",
	        g_child_port);
	g_child = fork();
	if (g_child < 0)
		return -1;
	if (g_child == 0) {
		execv(exe, argv);
		_exit(127);
	}
	for (;;) {
		if (child_exited())
			return -1;
		if (sim_http_health(g_child_port) == 200)
			return 0;
		sleep_ms(o.health_ms);
	}
}

struct fwd {
	struct sim_http *http;
	struct sim_http_req req;
	pthread_t thread;
};

static void *forward(void *arg)
{
	struct fwd *f = arg;
	int status = sim_http_post(g_child_port, "/completion", f->req.stream);

	sim_http_reply_status(f->http, &f->req, status == 200 ? 200 : 500);
	return NULL;
}

/* One step of the plan: n requests, all forwarded at once. */
static void serve_step(struct sim_http *http, int n, int *loaded)
{
	struct fwd f[MAX_STEP];
	int running[MAX_STEP] = {0};

	for (int i = 0; i < n; i++) {
		f[i].http = http;
		if (sim_http_next(http, &f[i].req))
			exit(1);
	}
	if (!*loaded) {
		*loaded = 1;
		if (load_model())
			g_child_dead = 1;
	}
	for (int i = 0; i < n; i++) {
		if (child_exited() ||
		    pthread_create(&f[i].thread, NULL, forward, &f[i]))
			sim_http_reply_status(http, &f[i].req, 500);
		else
			running[i] = 1;
	}
	for (int i = 0; i < n; i++)
		if (running[i])
			pthread_join(f[i].thread, NULL);
}

static int usage(const char *msg)
{
	fprintf(stderr,
	        "ollama_sim: %s\nusage: ollama_sim [--health-ms MS] -- "
	        "LLAMA_SIM_ARGUMENTS\n",
	        msg);
	return 2;
}

static int parse(int argc, char **argv)
{
	int i, np = 0, conc = 0;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage("a simulated Ollama server");
			exit(0);
		}
		if (!strcmp(argv[i], "--health-ms") && i + 1 < argc)
			o.health_ms = atoi(argv[++i]);
		else
			return usage("unknown option");
	}
	if (i < argc)
		i++;
	for (; i < argc; i++) {
		if (o.child_argc >= MAX_CHILD_ARGS)
			return usage("too many arguments");
		o.child_argv[o.child_argc++] = argv[i];
		if (i + 1 < argc && (!strcmp(argv[i], "-np") ||
		                     !strcmp(argv[i], "--parallel")))
			np = atoi(argv[i + 1]);
		if (i + 1 < argc && !strcmp(argv[i], "--concurrent-requests"))
			conc = atoi(argv[i + 1]);
	}
	/* llama_sim's own plan: one request, then --concurrent-requests
	 * (default -np, else 4) at once. */
	conc = conc ? conc : np ? np : 4;
	if (o.health_ms < 1 || conc < 1 || conc > MAX_STEP)
		return usage("value out of range");
	o.steps[o.nsteps++] = 1;
	if (conc > 1)
		o.steps[o.nsteps++] = conc;
	return 0;
}

int main(int argc, char **argv)
{
	struct sim_load load = {.wait_ready = 1, .path = "/api/generate"};
	struct sim_http *http;
	int loaded = 0, failed, st;

	if (parse(argc, argv))
		return 2;
	signal(SIGPIPE, SIG_IGN);
	if (!(http = sim_http_listen(0, 0)))
		return 1;
	fprintf(stderr,
	        "time=0 level=INFO source=routes.go msg=\"Listening on "
	        "127.0.0.1:%d (version 0.12.0)\"\n",
	        sim_http_port(http));
	load.port = sim_http_port(http);
	load.nsteps = o.nsteps;
	memcpy(load.steps, o.steps, sizeof(o.steps));
	if (sim_load_start(&load))
		return 1;
	for (int s = 0; s < o.nsteps; s++)
		serve_step(http, o.steps[s], &loaded);
	failed = sim_load_join(&load);
	sim_http_stop(http);
	if (g_child > 0 && !g_child_dead)
		waitpid(g_child, &st, 0);
	if (failed) {
		fprintf(stderr, "ollama_sim: %d requests got no complete answer\n",
		        failed);
		return 1;
	}
	printf("ollama_sim: served %d requests\n",
	       o.steps[0] + (o.nsteps > 1 ? o.steps[1] : 0));
	return 0;
}
