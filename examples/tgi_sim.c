/*
 * tgi_sim — a server shaped like Hugging Face TGI's three programs, for
 * the scenario corpus: the launcher, a shard and the router.
 *
 *   launcher  (this program, no GPU) makes a private directory for the
 *             shard's socket, starts the shard (serve_sim, the model's GPU
 *             work, serving gRPC on the unix socket, as TGI's Python
 *             shards serve text-generation-server's gRPC on
 *             /tmp/text-generation-server-0), waits for the socket, then
 *             starts the router, and exits with the router's status (or
 *             the shard's, when it died first)
 *   router    (this program with --router, no GPU) calls the shard's
 *             Warmup RPC first — a failed warm-up ends it, as TGI's router
 *             gives up — then serves HTTP/1.1 on 127.0.0.1 to a client of
 *             its own (--request-steps: that many requests at once, in
 *             turn), forwarding each step's requests to the shard as
 *             Prefill calls on one HTTP/2 connection
 *
 * Usage: tgi_sim [--request-steps N,N...] -- SHARD_ARGS...
 * SHARD_ARGS are serve_sim's (its model, sizes, flags); the launcher adds
 * the socket, --protocol grpc, --warmup-rpc and the steps. serve_sim is
 * looked for beside this program.
 *
 * Exit status: 0 all answered, 1 the warm-up or a request failed, 2 usage.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim_http.h"

extern char **environ;

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts))
		;
}

static int parse_steps(const char *v, int *steps)
{
	int n = 0;
	while (*v && n < SIM_HTTP_MAX_STEPS) {
		char *end;
		long x = strtol(v, &end, 10);
		if (end == v || x < 1 || x > 64 || (*end && *end != ','))
			return -1;
		steps[n++] = (int)x;
		v = *end ? end + 1 : end;
	}
	return n ? n : -1;
}

static int router(const char *uds, const char *steps_arg)
{
	struct sim_load load = {.path = "/generate", .wait_ready = 1};
	struct sim_http_req reqs[64];
	struct sim_http *http;
	int failed = 0;

	load.nsteps = parse_steps(steps_arg, load.steps);
	if (load.nsteps < 0)
		return 2;
	if (sim_call(uds, 0, SIM_GRPC, "warmup") != 200) {
		fprintf(stderr, "ERROR text_generation_router: Warmup: the "
		                "shard failed its warm-up (it may have run out "
		                "of memory): Server error: transport error\n");
		return 1;
	}
	if (!(http = sim_http_listen(0, 0)))
		return 1;
	load.port = sim_http_port(http);
	printf("INFO text_generation_router::server: Connected\n");
	fflush(stdout);
	if (sim_load_start(&load))
		return 1;
	for (int s = 0; s < load.nsteps; s++) {
		int n = load.steps[s], ok;
		for (int i = 0; i < n; i++)
			if (sim_http_next(http, &reqs[i]))
				return 1;
		ok = sim_grpc_batch(uds, 0, "prefill", n);
		for (int i = 0; i < n; i++)
			sim_http_reply_status(http, &reqs[i],
			                      i < ok ? 200 : 500);
	}
	failed = sim_load_join(&load);
	sim_http_stop(http);
	return failed ? 1 : 0;
}

static pid_t spawn(char **argv)
{
	pid_t pid;
	return posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) ? -1 : pid;
}

int main(int argc, char **argv)
{
	const char *steps = "1,4";
	char self[PATH_MAX], shard[PATH_MAX + 16], dir[] = "/tmp/tgi-sim-XXXXXX";
	char uds[sizeof(dir) + 32];
	char *sargv[128];
	int i = 1, n = 0, st = 0;
	pid_t spid, rpid;

	if (argc >= 4 && !strcmp(argv[1], "--router"))
		return router(argv[2], argv[3]);
	if (argc > i + 1 && !strcmp(argv[i], "--request-steps")) {
		steps = argv[i + 1];
		i += 2;
	}
	if (i >= argc || strcmp(argv[i], "--") || argc - i > 100) {
		fprintf(stderr, "usage: tgi_sim [--request-steps N,N...] -- "
		                "SHARD_ARGS...\n");
		return 2;
	}
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0 || !mkdtemp(dir))
		return 1;
	self[k] = 0;
	snprintf(shard, sizeof(shard), "%s", self);
	char *slash = strrchr(shard, '/');
	strcpy(slash ? slash + 1 : shard, "serve_sim");
	snprintf(uds, sizeof(uds), "%s/shard-0", dir);
	sargv[n++] = shard;
	for (int j = i + 1; j < argc; j++)
		sargv[n++] = argv[j];
	char *extra[] = {"--protocol", "grpc", "--uds", uds, "--warmup-rpc",
	                 "--request-steps", (char *)steps, NULL};
	for (int j = 0; extra[j]; j++)
		sargv[n++] = extra[j];
	sargv[n] = NULL;
	printf("INFO text_generation_launcher: Starting shard rank=0\n");
	fflush(stdout);
	if ((spid = spawn(sargv)) < 0)
		return 1;
	/* the shard is ready when its socket is there */
	for (;;) {
		struct stat sb;
		if (!stat(uds, &sb))
			break;
		if (waitpid(spid, &st, WNOHANG) == spid) {
			fprintf(stderr, "ERROR text_generation_launcher: Shard "
			                "0 failed to start\n");
			rmdir(dir);
			return 1;
		}
		sleep_ms(10);
	}
	printf("INFO text_generation_launcher: Shard ready in 0.5s "
	       "rank=0\n");
	fflush(stdout);
	char *rargv[] = {self, "--router", uds, (char *)steps, NULL};
	if ((rpid = spawn(rargv)) < 0)
		return 1;
	int rst = 0;
	while (waitpid(rpid, &rst, 0) < 0 && errno == EINTR)
		;
	/* a router that gave up leaves the shard to the launcher */
	if (!WIFEXITED(rst) || WEXITSTATUS(rst)) {
		if (waitpid(spid, &st, WNOHANG) == 0) {
			kill(spid, SIGTERM);
			waitpid(spid, &st, 0);
		}
	} else {
		while (waitpid(spid, &st, 0) < 0 && errno == EINTR)
			;
	}
	unlink(uds);
	rmdir(dir);
	if (WIFEXITED(rst) && WEXITSTATUS(rst) == 0)
		return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
	return 1;
}
