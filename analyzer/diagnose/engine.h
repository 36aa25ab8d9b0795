/*
 * Engines: which inference engine a recorded command line runs, and the
 * settings that size its memory, read from its flags. One table for every
 * command that needs them (analyze's diagnosis, table, compare, plan), so
 * they all recognise the same engines and read a flag the same way.
 *
 * Recognised programs (the program's base name, or the module of
 * "python -m MODULE", or the script python runs):
 *
 *   vllm       vllm (vllm serve), vllm.entrypoints.openai.api_server
 *   sglang     sglang.launch_server (any sglang.* module)
 *   llama.cpp  llama-server, llama-cli, llama-* and llama_* programs
 *   ollama     ollama (ollama serve, ollama runner)
 *   tgi        text-generation-launcher, text-generation-server
 *   trtllm     trtllm-serve, trtllm-llmapi-launch, tensorrt_llm.*
 *
 * A multiprocessing worker (python -c "from multiprocessing.spawn import
 * spawn_main; ...", --multiprocessing-fork, the forkserver) is never an
 * engine: it is a child of one, and its command line says nothing about
 * the flags.
 *
 * Flags: "--flag value" and "--flag=value"; when a flag is given several
 * times the last one wins, as the engines' argument parsers (argparse,
 * click, llama.cpp's common_params, Go's flag package) do. The flags of
 * each engine are listed in engine.c (docs/compare.md has the table). A
 * program that is not recognised is read with every engine's long options
 * (never the short ones, which mean different things to different
 * programs); the engine whose option matched first is then its guess.
 *
 * Pure: no I/O, no globals but constant tables. Thread-safe.
 */
#ifndef VRT_ENGINE_H
#define VRT_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"

enum vrt_engine {
	VRT_ENGINE_UNKNOWN = 0,
	VRT_ENGINE_VLLM = 1,
	VRT_ENGINE_SGLANG = 2,
	VRT_ENGINE_LLAMACPP = 3,
	VRT_ENGINE_TGI = 4,
	VRT_ENGINE_TRTLLM = 5,
	VRT_ENGINE_OLLAMA = 6,
	VRT_ENGINE_COUNT = 7,
};

/* The settings read from flags. The first five are the retest table's
 * columns, in its order. */
enum vrt_engine_field {
	VRT_ENGINE_CONTEXT = 0,      /* max tokens of one sequence */
	VRT_ENGINE_CONCURRENCY = 1,  /* max sequences decoded together */
	VRT_ENGINE_MEM_FRACTION = 2, /* share of the card the engine sizes */
	VRT_ENGINE_PARALLEL = 3,     /* tensor-parallel degree */
	VRT_ENGINE_GPU_LAYERS = 4,   /* layers offloaded to the GPU */
	VRT_ENGINE_PIPELINE = 5,     /* pipeline-parallel degree */
	VRT_ENGINE_BATCH_TOKENS = 6, /* tokens in one forward batch */
	VRT_ENGINE_UBATCH = 7,       /* llama.cpp's physical batch */
	VRT_ENGINE_SPLIT_MODE = 8,   /* llama.cpp -sm: none keeps one GPU */
	VRT_ENGINE_FLASH_ATTN = 9,   /* llama.cpp -fa: on, off, auto */
	VRT_ENGINE_NFIELDS = 10,
};

/* What an engine is called and how its settings are written in advice. */
struct vrt_engine_info {
	const char *name;   /* "vllm": reports and JSON */
	const char *label;  /* "vLLM": sentences */
	const char *prefix; /* "vLLM: " in front of advice, "" unknown */
	/* The spelling of each setting in advice, NULL where the engine has
	 * none (llama.cpp sizes memory by -c, not by a fraction). */
	const char *setting[VRT_ENGINE_NFIELDS];
	/* Settings are environment variables or model options (Ollama):
	 * written NAME=VALUE instead of "--flag VALUE". */
	int env_style;
	/* Runs without CUDA graphs ("--enforce-eager"), NULL: no such flag. */
	const char *no_graphs;
	/* Fewer or smaller CUDA graphs, NULL: no such flag. */
	const char *graph_sizes;
	/* Uses every visible GPU unless told otherwise (llama.cpp splits the
	 * layers over them, TGI shards over them by default). */
	int spreads;
};

/* The engine and settings of one command line. value[] points into the
 * argv it was read from; option[] is the static spelling found. */
struct vrt_engine_flags {
	int engine; /* recognised from the program, else UNKNOWN */
	int guess;  /* unrecognised program: the engine whose long option
	               matched first, else UNKNOWN */
	const char *value[VRT_ENGINE_NFIELDS];
	const char *option[VRT_ENGINE_NFIELDS];
};

/* The engine and settings of a run. */
struct vrt_engine_run {
	int engine;     /* recognised, else the guess, else UNKNOWN */
	int recognised; /* engine came from a program, not a guess */
	int from_stacks; /* no command line named one: the recorded call
	                    stacks did (libllama/ggml frames, an engine's
	                    Python package) */
	size_t proc;    /* index of the process it came from; SIZE_MAX:
	                   none */
	size_t root;    /* the first process read: the run's root (0 when
	                   the run has no process) */
	const char *value[VRT_ENGINE_NFIELDS]; /* into the trace's argv */
	const char *option[VRT_ENGINE_NFIELDS];
};

/* The engine's table entry (VRT_ENGINE_UNKNOWN: generic words). Never
 * NULL. */
const struct vrt_engine_info *vrt_engine_info(int engine);

/* "vllm", ... or NULL for VRT_ENGINE_UNKNOWN. */
const char *vrt_engine_name(int engine);

/* "context_length", "concurrency", ...; NULL out of range. */
const char *vrt_engine_field_name(int field);

/* 1 when argv is a multiprocessing worker's (spawn, forkserver). */
int vrt_engine_is_worker(char *const *argv, size_t argc);

/* Recognises the engine of one command line and reads its flags into *f
 * (zeroed first). Returns 1 when it found an engine (or guess) or any
 * flag. */
int vrt_engine_parse_argv(struct vrt_engine_flags *f, char *const *argv,
                          size_t argc);

/*
 * The run's engine and settings: the processes are read root first (a
 * process whose parent is not in the run: the command `record` started),
 * then by start time; multiprocessing workers are skipped. The engine is
 * the first recognised (workers inherit it), else the first guess, else
 * the engine the recorded frames name most (a program embedding libllama,
 * llama-cpp-python, a script importing vllm: from_stacks); each setting
 * is the first process's that gives it. Never fails.
 */
void vrt_engine_of_run(struct vrt_engine_run *er, const struct vrt_trace *t);

/* The setting option (as spelled: "-c", "--ctx-size") sets for engine
 * (any engine's when UNKNOWN), or -1: lets two spellings of one setting
 * compare as one. */
int vrt_engine_field_of(int engine, const char *option);

/* The number a setting holds: 1 and *out set when value is a whole
 * number (or a decimal, truncated) in range, else 0. */
int vrt_engine_uint(const char *value, uint64_t *out);

/* A fraction in (0, 1] as thousandths: 1 and *milli set, else 0. */
int vrt_engine_fraction_milli(const char *value, uint64_t *milli);

#endif /* VRT_ENGINE_H */
