/*
 * Which inference engine a command line starts, shared by the analyzer
 * (the retest table reads each engine's own flags) and the preload (the
 * `engine` label of its Prometheus metrics). Pure; thread-safe.
 */
#ifndef VRT_ENGINE_H
#define VRT_ENGINE_H

#include <stddef.h>

/* The engine of argv (argc strings): "vllm", "sglang", "llama.cpp",
 * "ollama", "tgi" or "trtllm", from the program's name (vllm,
 * llama-server, text-generation-launcher, trtllm-serve...) or, for a
 * Python interpreter, from its -m module or script (python -m
 * sglang.launch_server, python /usr/local/bin/vllm); NULL when none. */
const char *vrt_engine_detect(char *const *argv, size_t argc);

#endif /* VRT_ENGINE_H */
