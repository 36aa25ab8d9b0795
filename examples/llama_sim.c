/*
 * llama_sim — a native server shaped like llama.cpp's llama-server, for
 * the phase tests and the demo. Its functions carry llama.cpp's names (and
 * are exported, so a profiler can name them), it reaches the CUDA driver
 * as libcudart does (dlopen + cuGetProcAddress), and it serves real TCP
 * connections on 127.0.0.1:
 *
 *   llama_model_load            --n-layers tensors of --layer-mib MiB
 *   llama_kv_cache_init         --ctx-size x --kv-kib-per-token KiB
 *   listen on 127.0.0.1 (port 0 unless --port), then --clients client
 *   threads connect at once; each request runs llama_decode, holding
 *   --act-mib MiB of activations until its connection closes. The first
 *   request is served alone, the rest together.
 *
 *   --ladder 1,2,4,8  instead: a load test's concurrency ladder, each step
 *                     (that many clients at once) after a mark
 *                     "concurrency=N" (VRAMTRACE_MARK: a no-op without
 *                     the preload)
 *   --hold-ms N       every step keeps its requests in flight (their
 *                     activations allocated) for N ms before answering
 *   --linger-ms N     stays alive N ms after serving everything (after
 *                     printing "served"), its memory still allocated, so
 *                     a test can scrape the metrics endpoint
 *
 *   --log-format llamacpp  llama-server's own log lines (sim_log.h)
 *
 * Exit status: 0 served everything, 2 usage, 3 CUDA out of memory, 4 no
 * driver.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "sim_log.h"
#include "vramtrace.h"

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);

#define MIB         (1024ull * 1024ull)
#define NOINLINE    __attribute__((noinline, noclone, used))
#define MAX_CLIENTS 64
#define MAX_STEPS   16

static struct {
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, int);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free_)(CUdeviceptr);
} cu;

static struct {
	int n_layers, layer_mib, ctx_size, kv_kib, act_mib, clients, port;
	int hold_ms, linger_ms, nsteps, steps[MAX_STEPS];
} o = {32, 16, 4096, 128, 64, 4, 0, 0, 0, 0, {0}};

/* The functions a profiler must see, exported by name. */
void llama_model_load(void);
void llama_kv_cache_init(void);
CUdeviceptr llama_decode(void);
volatile int llama_sim_sink;

static void oom(const char *where, int stage, size_t bytes)
{
	sim_log_oom(0, stage, bytes, 0, 0);
	fprintf(stderr, "llama_sim: CUDA out of memory in %s\n", where);
	exit(3);
}

NOINLINE void llama_model_load(void)
{
	for (int i = 0; i < o.n_layers; i++) {
		CUdeviceptr p;
		if (cu.alloc(&p, (size_t)o.layer_mib * MIB))
			oom("llama_model_load", SIM_LOG_IN_WEIGHTS,
			    (size_t)o.layer_mib * MIB);
	}
	llama_sim_sink++;
}

NOINLINE void llama_kv_cache_init(void)
{
	CUdeviceptr p;
	if (cu.alloc(&p, (size_t)o.ctx_size * (size_t)o.kv_kib * 1024))
		oom("llama_kv_cache_init", SIM_LOG_IN_KV,
		    (size_t)o.ctx_size * (size_t)o.kv_kib * 1024);
	llama_sim_sink++;
}

NOINLINE CUdeviceptr llama_decode(void)
{
	CUdeviceptr p;
	if (cu.alloc(&p, (size_t)o.act_mib * MIB))
		oom("llama_decode", SIM_LOG_IN_FORWARD, (size_t)o.act_mib * MIB);
	llama_sim_sink++;
	return p;
}

static void *client(void *arg)
{
	int port = (int)(intptr_t)arg;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	char c;
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    read(fd, &c, 1) != 1)
		fprintf(stderr, "llama_sim: client could not be served\n");
	if (fd >= 0)
		close(fd);
	return NULL;
}

/* Accepts n connections, decodes for each while all are open, then
 * answers and closes them one by one. */
static void serve(int srv, int port, int n)
{
	pthread_t t[MAX_CLIENTS];
	int conn[MAX_CLIENTS];
	CUdeviceptr act[MAX_CLIENTS];
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, client, (void *)(intptr_t)port);
	for (int i = 0; i < n; i++)
		conn[i] = accept(srv, NULL, NULL);
	for (int i = 0; i < n; i++)
		act[i] = llama_decode();
	if (o.hold_ms > 0) {
		struct timespec d = {o.hold_ms / 1000,
		                     (long)(o.hold_ms % 1000) * 1000000};
		while (nanosleep(&d, &d))
			;
	}
	for (int i = 0; i < n; i++) {
		if (write(conn[i], "x", 1) != 1)
			fprintf(stderr, "llama_sim: lost a client\n");
		cu.free_(act[i]);
		close(conn[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static int resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL))
		return -1;
	return get("cuInit", (void **)&cu.init, 12000, 0, NULL) ||
	       get("cuDevicePrimaryCtxRetain", (void **)&cu.retain, 12000, 0,
	           NULL) ||
	       get("cuCtxSetCurrent", (void **)&cu.set_current, 12000, 0,
	           NULL) ||
	       get("cuMemAlloc", (void **)&cu.alloc, 12000, 0, NULL) ||
	       get("cuMemFree", (void **)&cu.free_, 12000, 0, NULL);
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: llama_sim [-ngl N] [--layer-mib M] [-c|--ctx-size T]\n"
	        "                 [--kv-kib-per-token K] [--act-mib M] "
	        "[-np|--parallel N] [--port P]\n"
	        "                 [--ladder N,N,...] [--hold-ms MS] "
	        "[--linger-ms MS]\n"
	        "                 [--log-format llamacpp]\n");
	return 2;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage();
			return 0;
		}
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(a, "--ladder")) {
			char *s = argv[++i], *end;
			for (o.nsteps = 0; *s && o.nsteps < MAX_STEPS;) {
				long n = strtol(s, &end, 10);
				if (end == s || n < 1 || n > MAX_CLIENTS ||
				    (*end && *end != ','))
					return usage();
				o.steps[o.nsteps++] = (int)n;
				s = *end == ',' ? end + 1 : end;
			}
			if (*s || !o.nsteps)
				return usage();
			continue;
		}
		int v = atoi(argv[++i]);
		if (!strcmp(a, "-ngl"))
			o.n_layers = v;
		else if (!strcmp(a, "--layer-mib"))
			o.layer_mib = v;
		else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size"))
			o.ctx_size = v;
		else if (!strcmp(a, "--kv-kib-per-token"))
			o.kv_kib = v;
		else if (!strcmp(a, "--act-mib"))
			o.act_mib = v;
		else if (!strcmp(a, "-np") || !strcmp(a, "--parallel"))
			o.clients = v;
		else if (!strcmp(a, "--port"))
			o.port = v;
		else if (!strcmp(a, "--hold-ms"))
			o.hold_ms = v;
		else if (!strcmp(a, "--linger-ms"))
			o.linger_ms = v;
		else if (i--, sim_log_option(argc, argv, &i) <= 0)
			return usage(); /* not --log-format either */
	}
	if (o.clients < 1 || o.clients > MAX_CLIENTS || o.n_layers < 0)
		return usage();
	CUcontext ctx;
	if (resolve() || cu.init(0) || cu.retain(&ctx, 0) ||
	    cu.set_current(ctx)) {
		fprintf(stderr, "llama_sim: no usable CUDA driver\n");
		return 4;
	}
	sim_log_start(&(struct sim_log_config){"sim-model.gguf", o.ctx_size,
	                                       o.clients, 0, 1, o.n_layers, 0});
	llama_model_load();
	sim_log_weights(0, (size_t)o.n_layers * (size_t)o.layer_mib * MIB, 0);
	llama_kv_cache_init();
	sim_log_kv(0, (size_t)o.ctx_size * (size_t)o.kv_kib * 1024);

	int srv = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
	                        .sin_port = htons((uint16_t)o.port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(a);
	if (srv < 0 || bind(srv, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(srv, MAX_CLIENTS) < 0 ||
	    getsockname(srv, (struct sockaddr *)&a, &len) < 0) {
		perror("llama_sim: listen");
		return 1;
	}
	int port = ntohs(a.sin_port);
	printf("llama_sim: listening on 127.0.0.1:%d\n", port);
	fflush(stdout);
	sim_log_ready(port);
	int served = 0;
	if (o.nsteps) {
		for (int i = 0; i < o.nsteps; i++) {
			char label[32];
			snprintf(label, sizeof(label), "concurrency=%d",
			         o.steps[i]);
			VRAMTRACE_MARK(label);
			serve(srv, port, o.steps[i]);
			served += o.steps[i];
		}
	} else {
		serve(srv, port, 1);
		if (o.clients > 1)
			serve(srv, port, o.clients);
		served = 1 + (o.clients > 1 ? o.clients : 0);
	}
	close(srv);
	printf("llama_sim: served %d requests\n", served);
	fflush(stdout);
	if (o.linger_ms > 0) {
		struct timespec d = {o.linger_ms / 1000,
		                     (long)(o.linger_ms % 1000) * 1000000};
		while (nanosleep(&d, &d))
			;
	}
	return 0;
}
