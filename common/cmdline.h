/*
 * Which inference engine a command line starts: shared by the analyzer
 * (analyzer/diagnose/engine.c adds each engine's flags) and the preload (the
 * `engine` label of its Prometheus metrics), so both name an engine the
 * same way. Pure; thread-safe.
 */
#ifndef VRT_CMDLINE_H
#define VRT_CMDLINE_H

#include <stddef.h>

/* 1 when argv is a Python multiprocessing worker's (spawn, forkserver):
 * a child of an engine, whose command line names none. */
int vrt_cmdline_is_worker(char *const *argv, size_t argc);

/* The engine of argv (argc strings): "vllm", "sglang", "llama.cpp",
 * "ollama", "tgi" or "trtllm", from the program's base name (vllm,
 * llama-server, text-generation-launcher, trtllm-serve...) or, for a
 * Python interpreter, from its -m module or the script it runs (a console
 * script such as vllm runs as python SCRIPT); NULL for none and for a
 * multiprocessing worker. */
const char *vrt_cmdline_engine(char *const *argv, size_t argc);

#endif /* VRT_CMDLINE_H */
