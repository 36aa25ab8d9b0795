/*
 * Retest rows: one replayed run in; the line an engineer writes down after
 * each restart out, for `vramtrace table`: the engine and the flags that
 * set its memory budget (parsed from the recorded command lines), the peak
 * of each device and its split by phase, requests in flight, the first
 * out-of-memory failure (stage, phase) and the exit status.
 *
 * Flags per engine ("--flag value" and "--flag=value"; the last one given
 * wins, as argparse does), in the order context length, concurrency,
 * memory fraction, tensor parallel (docs/compare.md has the table):
 *
 *   vllm       --max-model-len, --max-num-seqs, --gpu-memory-utilization,
 *              --tensor-parallel-size or -tp
 *   sglang     --context-length, --max-running-requests,
 *              --mem-fraction-static, --tp, --tp-size or
 *              --tensor-parallel-size
 *   llama.cpp  -c or --ctx-size, -np or --parallel; and GPU layers:
 *   (ollama)   -ngl, --n-gpu-layers or --gpu-layers
 *   tgi        --max-total-tokens, --max-concurrent-requests,
 *              --cuda-memory-fraction, --num-shard
 *   trtllm     --max_seq_len, --max_batch_size,
 *              --kv_cache_free_gpu_memory_fraction, --tp_size
 *
 * The engine is recognised from the program (vllm, llama-server, llama-*,
 * llama_*, ollama, text-generation-launcher/-server, trtllm-serve) or from
 * "python -m MODULE" / a script named like them. A program it does not
 * recognise is read with every engine's long options (the examples in
 * examples/ use vLLM's), never with the short ones.
 *
 * Pure: no I/O, no printing, no globals. A row copies what it keeps, so
 * the run can be released right after.
 */
#ifndef VRT_RETEST_H
#define VRT_RETEST_H

#include <stddef.h>
#include <stdint.h>

#include "load.h"
#include "replay.h"

enum vrt_retest_field {
	VRT_RETEST_CONTEXT = 0,
	VRT_RETEST_CONCURRENCY = 1,
	VRT_RETEST_MEM_FRACTION = 2,
	VRT_RETEST_PARALLEL = 3,
	VRT_RETEST_GPU_LAYERS = 4,
	VRT_RETEST_NFIELDS = 5,
};

#define VRT_RETEST_NAME 48

struct vrt_retest_flags {
	const char *engine;                     /* static name, or NULL */
	const char *value[VRT_RETEST_NFIELDS];  /* into argv; NULL: not given */
	const char *option[VRT_RETEST_NFIELDS]; /* static: the option found */
};

struct vrt_retest_phase {
	char name[VRT_RETEST_NAME];
	uint64_t bytes;
};

struct vrt_retest_device {
	int32_t id; /* index in the run's devices */
	uint64_t peak_bytes;
	struct vrt_retest_phase *phases; /* live at the peak, slot order */
	size_t nphases;
};

struct vrt_retest_row {
	const char *engine;              /* static, or NULL */
	char *value[VRT_RETEST_NFIELDS]; /* copies, or NULL */
	const char *option[VRT_RETEST_NFIELDS];
	char **argv; /* the command line the engine was found in (else the
	                first process's); copies */
	size_t argc;
	size_t nprocs;
	struct vrt_retest_device *dev;
	size_t ndev;
	uint32_t max_inflight;
	uint64_t ooms;
	int have_oom; /* the first out-of-memory failure: */
	int oom_after_ready;
	char oom_phase[VRT_RETEST_NAME];
	int32_t oom_device;
	uint64_t oom_requested;
	int64_t oom_time_ns; /* since the run's start */
	int exit_kind;       /* enum vrt_exit_kind of the first process that
	                        has an exit status */
	int exit_code;
};

/* Name of a field as reports spell it ("context_length", ...). */
const char *vrt_retest_field_name(int field);

/* Recognises the engine of one command line and reads its flags into *f
 * (zeroed first). Returns 1 when it found the engine or any flag. */
int vrt_retest_parse_argv(struct vrt_retest_flags *f, char *const *argv,
                          size_t argc);

/* Fills *row (zeroed first) from the run. Processes are read in order of
 * start; the engine is the first one recognised, each flag the first
 * process's that gives it. Returns 0, or -1 when out of memory (release
 * with vrt_retest_row_free either way). */
int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r);

void vrt_retest_row_free(struct vrt_retest_row *row);

struct vrt_enginelog;

/* The option name of a field the engine's log supplied (its option[]). */
#define VRT_RETEST_FROM_LOG "log"

/* Fills the fields (and the engine) the command lines left out from the
 * configuration the engine printed in its log (enginelog.h), their option
 * set to VRT_RETEST_FROM_LOG. Returns the fields filled, or -1 when out of
 * memory. */
int vrt_retest_from_log(struct vrt_retest_row *row,
                        const struct vrt_enginelog *log);

#endif /* VRT_RETEST_H */
