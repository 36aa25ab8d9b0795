/*
 * sim_log — the example servers' log lines in a real engine's format, so
 * `vramtrace record` keeps what a real server would have printed and
 * `vramtrace analyze` reads it (the formats come from each engine's
 * source; docs/logs.md names the versions):
 *
 *   --log-format vllm|sglang|llamacpp|tgi|trtllm|none   print that
 *                        engine's memory lines (default: the server's own
 *                        engine, vllm for serve_sim and llamacpp for
 *                        llama_sim; none: only the servers' terse lines
 *                        and the allocator's error text)
 *   --log-scale KIND=F   print KIND (weights, kv) F times the true value:
 *                        a deliberately wrong number for the tests
 *
 * The numbers printed are the server's: it passes them in. What an engine
 * decides (vLLM's start-up KV check, ...) is the server's behaviour; this
 * file only says it in the engine's words.
 *
 * Single-threaded: called from the servers' engine threads only, one
 * process at a time (each process of a multi-process server has its own
 * state, set from the same command line).
 */
#ifndef SIM_LOG_H
#define SIM_LOG_H

#include <stddef.h>

/* Where in the start-up (or serving) a failed allocation happened. */
enum sim_log_stage {
	SIM_LOG_IN_WEIGHTS = 1,
	SIM_LOG_IN_PROFILE = 2,
	SIM_LOG_IN_KV = 3,
	SIM_LOG_IN_FORWARD = 4,
	SIM_LOG_IN_GRAPHS = 5,
};

/* Which of a multi-process engine's processes this is: the lines each
 * one prints (vLLM: the API server its arguments and readiness, the
 * engine core its config and the KV cache's size, the workers their
 * ranks' numbers). SIM_LOG_ALL: one process prints everything. */
enum sim_log_process {
	SIM_LOG_ALL = 0,
	SIM_LOG_API = 1,
	SIM_LOG_CORE = 2,
	SIM_LOG_WORKER = 3,
};

/* The server's settings, printed the way the engine prints its config. */
struct sim_log_config {
	const char *format; /* the default --log-format: "vllm", ... */
	int process;        /* enum sim_log_process */
	const char *model;
	int max_model_len; /* vLLM --max-model-len, llama.cpp -c */
	int max_num_seqs;  /* vLLM --max-num-seqs, llama.cpp -np */
	double util;       /* memory fraction, 0: not the engine's */
	int tp;            /* tensor-parallel size */
	int layers;
	int batch_tokens;  /* tokens of the profiling (warmup) batch */
	double kv_kib;     /* the model's KV cache per token, all ranks */
};

/* Consumes the option at argv[*i] when it is one of the above (its value
 * too, *i moved past it). Returns 1 consumed, 0 not one, -1 a bad value
 * (an error was printed). */
int sim_log_option(int argc, char **argv, int *i);

/* Takes the settings (and the default format when no --log-format was
 * given) and prints this process's start-up lines. Call it before any
 * other sim_log_* but sim_log_option. */
void sim_log_start(const struct sim_log_config *c);

/* 1 when an engine's format is printed (not none). */
int sim_log_enabled(void);

/* The weights of one rank, loaded with free_before bytes free. */
void sim_log_weights(int rank, size_t bytes, size_t free_before);

/* llama.cpp's compute buffer (the worst-case graph's activations). */
void sim_log_compute(int rank, size_t bytes);

/* The KV cache of one rank (bytes allocated). */
void sim_log_kv(int rank, size_t bytes);

/* The engine-wide KV lines once every rank has its cache: min_bytes is
 * the smallest rank's (the tokens the engine can hold). */
void sim_log_kv_total(size_t min_bytes);

/* CUDA graphs captured on one rank. */
void sim_log_graphs(int rank, size_t bytes);

/* The engine found no memory at all for its KV cache (vLLM's "No
 * available memory for the cache blocks", SGLang's "Not enough memory.
 * Please try to increase --mem-fraction-static"). */
void sim_log_no_kv(int rank);

/* vLLM's start-up check failed: one request of max_model_len needs
 * `needed` bytes of KV cache on this rank, `available` are left. Prints
 * the engine's ValueError with its estimate of the longest length that
 * fits (blocks of 16 tokens). */
void sim_log_kv_refusal(int rank, double needed, double available);

/* The engine core lost a worker (it died): vLLM's "EngineCore
 * encountered a fatal error." */
void sim_log_core_failed(void);

/* llama-server's HTTP server is up on port before the model loads (it
 * answers 503 "Loading model" meanwhile). */
void sim_log_http_up(int port);

/* The server listens on port and serves (the model is loaded). */
void sim_log_ready(int port);

/* llama-server: a request's task launched on slot with its prompt's
 * tokens (nothing printed when tokens is 0, or for other engines). */
void sim_log_slot(int slot, int task, int tokens);

/* A failed allocation the server dies of: text is what the allocator's
 * engine says (sim_alloc_oom_text: PyTorch's OutOfMemoryError, ggml's
 * CUDA error), printed with the engine's framing (vLLM's worker
 * exception, SGLang's scheduler traceback, TGI's method error); NULL or
 * "" for a buffer llama.cpp could not allocate (its failed cudaMalloc and
 * what the load says of it). TGI's warm-up turns the profile stage's
 * failure into its own refusal. With --log-format none the text alone
 * goes to stderr. */
void sim_log_oom(int rank, int stage, size_t requested, const char *text);

#endif /* SIM_LOG_H */
