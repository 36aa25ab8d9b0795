/*
 * sim_log — the example servers' log lines in a real engine's format, so
 * `vramtrace record` keeps what a real server would have printed and
 * `vramtrace analyze` reads it (the formats come from each engine's
 * source; docs/logs.md names the versions):
 *
 *   --log-format vllm|sglang|llamacpp|tgi|trtllm   print that engine's
 *                        memory lines (default: none, the servers' own
 *                        terse lines only)
 *   --kv-kib-per-token K the model's KV cache per token: turns on the
 *                        engine's start-up check that the KV cache holds
 *                        one request of the maximum length (vLLM refuses
 *                        with its ValueError and exit 1, TGI with its
 *                        max_total_tokens error); also sizes the token
 *                        counts printed (default 128 KiB, Llama-3-8B's)
 *   --log-scale KIND=F   print KIND (weights, kv) F times the true value:
 *                        a deliberately wrong number for the tests
 *
 * Single-threaded: called from the servers' main threads only.
 */
#ifndef SIM_LOG_H
#define SIM_LOG_H

#include <stddef.h>

/* Where in the start-up a failed allocation happened. */
enum sim_log_stage {
	SIM_LOG_IN_WEIGHTS = 1,
	SIM_LOG_IN_PROFILE = 2,
	SIM_LOG_IN_KV = 3,
	SIM_LOG_IN_FORWARD = 4,
};

/* The server's settings, printed the way the engine prints its config. */
struct sim_log_config {
	const char *model;
	int max_model_len; /* vLLM --max-model-len, llama.cpp -c */
	int max_num_seqs;  /* vLLM --max-num-seqs, llama.cpp -np */
	double util;       /* memory fraction, 0: not the engine's */
	int tp;            /* tensor-parallel size */
	int layers;
	int batch_tokens;  /* tokens of the profiling (warmup) batch */
};

/* Consumes the option at argv[*i] when it is one of the above (its value
 * too, *i moved past it). Returns 1 consumed, 0 not one, -1 a bad value
 * (an error was printed). */
int sim_log_option(int argc, char **argv, int *i);

/* 1 when a --log-format was given. */
int sim_log_enabled(void);

void sim_log_start(const struct sim_log_config *c);
void sim_log_weights(int rank, size_t bytes, size_t free_before);
/* The KV cache of one rank (bytes allocated), after the engine's
 * profiling left `available`. */
void sim_log_kv(int rank, size_t bytes);

/*
 * The engine's KV check at start-up (with --kv-kib-per-token): when one
 * request of max_model_len needs more than `available` bytes, prints the
 * engine's refusal and returns 1 (the caller exits 1); else 0. Also the
 * refusal of an engine whose budget left nothing (available 0): SGLang's
 * "increase --mem-fraction-static".
 */
int sim_log_kv_check(int rank, double available);

void sim_log_ready(int port);

/* A failed allocation the server dies of: PyTorch's OutOfMemoryError for
 * the Python engines, ggml's messages for llama.cpp. */
void sim_log_oom(int rank, int stage, size_t requested, size_t free_b,
                 size_t total_b);

#endif /* SIM_LOG_H */
