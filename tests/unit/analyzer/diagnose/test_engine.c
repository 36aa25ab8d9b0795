/*
 * Unit tests of engine.c: the engine recognised from each engine's real
 * command lines (vllm serve, python -m MODULE, console scripts, llama.cpp
 * programs, ollama runner, TGI, TensorRT-LLM), their memory flags in both
 * spellings with the last occurrence winning, multiprocessing workers that
 * are never an engine, the guess for programs it does not know (long
 * options only), and a run's engine taken from its root process and
 * inherited by its workers. TAP output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/engine.h"
#include "load/load.h"

#include "../tap.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define STR(a, b, name)                                                        \
	ok((a) && !strcmp((a), (b)), "%s (got '%s', want '%s')", name,         \
	   (a) ? (a) : "(null)", (b))

static void test_programs(void)
{
	struct vrt_engine_flags f;
	char *vllm[] = {"/usr/bin/python3",
	                "/usr/local/bin/vllm",
	                "serve",
	                "m",
	                "--max-model-len",
	                "8192",
	                "--max-model-len=4096",
	                "-tp",
	                "2",
	                "--max-num-batched-tokens",
	                "65536"};
	char *vllm_m[] = {"python3",
	                  "-m",
	                  "vllm.entrypoints.openai.api_server",
	                  "--gpu-memory-utilization",
	                  "0.98",
	                  "--pipeline-parallel-size",
	                  "2"};
	char *sg[] = {"python3",
	              "-m",
	              "sglang.launch_server",
	              "--context-length",
	              "32768",
	              "--max-running-requests",
	              "64",
	              "--mem-fraction-static=0.85",
	              "--tensor-parallel-size",
	              "4",
	              "--chunked-prefill-size",
	              "8192"};
	char *sg_tp[] = {"python3",   "-m", "sglang.launch_server", "--tp", "2",
	                 "--tp-size", "8"};
	char *ll[] = {"/opt/llama-server",
	              "-m",
	              "x.gguf",
	              "-c",
	              "4096",
	              "-np",
	              "8",
	              "-ngl",
	              "99",
	              "-b",
	              "2048",
	              "-ub",
	              "512",
	              "-sm",
	              "none"};
	char *ol[] = {"/usr/bin/ollama", "runner", "--model",      "blob",
	              "-ctx-size",       "8192",   "--parallel",   "4",
	              "-n-gpu-layers",   "33",     "--batch-size", "512"};
	char *tg[] = {"text-generation-launcher",
	              "--max-total-tokens",
	              "2048",
	              "--max-concurrent-requests",
	              "128",
	              "--num-shard",
	              "2",
	              "--max-batch-prefill-tokens",
	              "4096"};
	char *tgs[] = {"/opt/conda/bin/python",
	               "/opt/conda/bin/"
	               "text-generation-server",
	               "serve", "m"};
	char *trt[] = {"trtllm-serve",
	               "m",
	               "--max_batch_size",
	               "64",
	               "--max_num_tokens",
	               "8192",
	               "--tp_size",
	               "4",
	               "--kv_cache_free_gpu_memory_fraction",
	               "0.9",
	               "--max_seq_len",
	               "4096"};
	char *trtl[] = {"/usr/local/bin/trtllm-llmapi-launch", "trtllm-serve",
	                "m"};
	uint64_t v;

	ok(vrt_engine_parse_argv(&f, vllm, N(vllm)), "vllm serve: found");
	STR(vrt_engine_name(f.engine), "vllm",
	    "vllm serve (a console script run by python)");
	STR(f.value[VRT_ENGINE_CONTEXT], "4096",
	    "--max-model-len: the last of two occurrences wins");
	STR(f.option[VRT_ENGINE_CONTEXT], "--max-model-len", "option spelled");
	STR(f.value[VRT_ENGINE_PARALLEL], "2", "-tp");
	STR(f.value[VRT_ENGINE_BATCH_TOKENS], "65536",
	    "--max-num-batched-tokens");
	vrt_engine_parse_argv(&f, vllm_m, N(vllm_m));
	STR(vrt_engine_name(f.engine), "vllm", "python -m vllm.entrypoints...");
	ok(vrt_engine_fraction_milli(f.value[VRT_ENGINE_MEM_FRACTION], &v) &&
	           v == 980,
	   "--gpu-memory-utilization 0.98 is 980/1000");
	STR(f.value[VRT_ENGINE_PIPELINE], "2", "--pipeline-parallel-size");
	vrt_engine_parse_argv(&f, sg, N(sg));
	STR(vrt_engine_name(f.engine), "sglang", "python -m sglang");
	STR(f.value[VRT_ENGINE_PARALLEL], "4", "SGLang --tensor-parallel-size");
	STR(f.value[VRT_ENGINE_MEM_FRACTION], "0.85",
	    "--mem-fraction-static=0.85");
	STR(f.value[VRT_ENGINE_BATCH_TOKENS], "8192", "--chunked-prefill-size");
	vrt_engine_parse_argv(&f, sg_tp, N(sg_tp));
	STR(f.value[VRT_ENGINE_PARALLEL], "8",
	    "--tp then --tp-size: the last wins");
	vrt_engine_parse_argv(&f, ll, N(ll));
	STR(vrt_engine_name(f.engine), "llama.cpp", "llama-server");
	STR(f.value[VRT_ENGINE_CONTEXT], "4096", "-c");
	STR(f.value[VRT_ENGINE_CONCURRENCY], "8", "-np");
	STR(f.value[VRT_ENGINE_GPU_LAYERS], "99", "-ngl");
	STR(f.value[VRT_ENGINE_BATCH_TOKENS], "2048", "-b");
	STR(f.value[VRT_ENGINE_UBATCH], "512", "-ub");
	STR(f.value[VRT_ENGINE_SPLIT_MODE], "none", "-sm");
	vrt_engine_parse_argv(&f, ol, N(ol));
	STR(vrt_engine_name(f.engine), "ollama", "ollama runner");
	STR(f.value[VRT_ENGINE_CONTEXT], "8192", "Go flag -ctx-size");
	STR(f.value[VRT_ENGINE_CONCURRENCY], "4", "--parallel");
	STR(f.value[VRT_ENGINE_GPU_LAYERS], "33", "-n-gpu-layers");
	vrt_engine_parse_argv(&f, tg, N(tg));
	STR(vrt_engine_name(f.engine), "tgi", "text-generation-launcher");
	STR(f.value[VRT_ENGINE_BATCH_TOKENS], "4096",
	    "--max-batch-prefill-tokens");
	vrt_engine_parse_argv(&f, tgs, N(tgs));
	STR(vrt_engine_name(f.engine), "tgi",
	    "text-generation-server (a script python runs)");
	vrt_engine_parse_argv(&f, trt, N(trt));
	STR(vrt_engine_name(f.engine), "trtllm", "trtllm-serve");
	STR(f.value[VRT_ENGINE_CONCURRENCY], "64", "--max_batch_size");
	STR(f.value[VRT_ENGINE_BATCH_TOKENS], "8192", "--max_num_tokens");
	STR(f.value[VRT_ENGINE_PARALLEL], "4", "--tp_size");
	vrt_engine_parse_argv(&f, trtl, N(trtl));
	STR(vrt_engine_name(f.engine), "trtllm", "trtllm-llmapi-launch");
	ok(vrt_engine_uint("12", &v) && v == 12, "a whole number");
	ok(!vrt_engine_uint("auto", &v), "not a number");
	ok(!vrt_engine_fraction_milli("1.5", &v), "not a fraction");
}

static void test_unknown_and_workers(void)
{
	struct vrt_engine_flags f;
	char *bare[] = {"./serve", "--max-num-seqs",
	                "12",      "--tensor-parallel-size",
	                "2",       "-c",
	                "9"};
	char *spawn[] = {"/usr/bin/python3", "-c",
	                 "from multiprocessing.spawn import spawn_main; "
	                 "spawn_main(tracker_fd=5, pipe_handle=7)",
	                 "--multiprocessing-fork"};
	char *pyc[] = {"python3", "-c", "worker", "-c", "4096"};
	char *vllmx[] = {"vllmx", "--max-model-len", "1"};

	vrt_engine_parse_argv(&f, bare, N(bare));
	EQ(f.engine, VRT_ENGINE_UNKNOWN, "./serve is not recognised");
	STR(vrt_engine_name(f.guess), "vllm",
	    "guessed from vLLM's long options");
	STR(f.value[VRT_ENGINE_CONCURRENCY], "12", "--max-num-seqs read");
	ok(!f.value[VRT_ENGINE_CONTEXT],
	   "short options of an unknown program are not read");
	ok(vrt_engine_is_worker(spawn, N(spawn)), "spawn worker recognised");
	ok(!vrt_engine_parse_argv(&f, spawn, N(spawn)) && !f.engine && !f.guess,
	   "a multiprocessing worker is no engine and has no flags");
	vrt_engine_parse_argv(&f, pyc, N(pyc));
	ok(!f.engine && !f.guess && !f.value[VRT_ENGINE_CONTEXT],
	   "python -c code: no engine, -c is not llama.cpp's");
	vrt_engine_parse_argv(&f, vllmx, N(vllmx));
	EQ(f.engine, VRT_ENGINE_UNKNOWN, "vllmx is not vllm");
}

static void test_run(void)
{
	struct vrt_trace t;
	struct vrt_process procs[4];
	struct vrt_engine_run er;
	char *worker[] = {"/usr/bin/python3", "-c",
	                  "from multiprocessing.spawn import spawn_main; "
	                  "spawn_main(tracker_fd=5, pipe_handle=7)",
	                  "--multiprocessing-fork"};
	char *root[] = {"vllm", "serve",          "m", "--tensor-parallel-size",
	                "2",    "--max-num-seqs", "8"};
	char *client[] = {"python3", "bench.py", "--max-num-seqs", "99"};
	char *other[] = {"llama-server", "-c", "2048"};

	memset(&t, 0, sizeof(t));
	memset(procs, 0, sizeof(procs));
	/* The failing worker started first in the trace's order and the
	 * root later: the root still decides. */
	procs[0] = (struct vrt_process){.pid = 11,
	                                .ppid = 10,
	                                .argv = worker,
	                                .argc = N(worker),
	                                .start_mono_ns = 5};
	procs[1] = (struct vrt_process){.pid = 10,
	                                .ppid = 1,
	                                .argv = root,
	                                .argc = N(root),
	                                .start_mono_ns = 9};
	procs[2] = (struct vrt_process){.pid = 12,
	                                .ppid = 10,
	                                .argv = worker,
	                                .argc = N(worker),
	                                .start_mono_ns = 6};
	procs[3] = (struct vrt_process){.pid = 13,
	                                .ppid = 11,
	                                .argv = client,
	                                .argc = N(client),
	                                .start_mono_ns = 1};
	t.procs = procs;
	t.nprocs = 4;
	vrt_engine_of_run(&er, &t);
	STR(vrt_engine_name(er.engine), "vllm",
	    "run: the engine of the root command");
	ok(er.recognised && er.proc == 1 && er.root == 1,
	   "run: found in the root process");
	STR(er.value[VRT_ENGINE_PARALLEL], "2", "run: the root's TP flag");
	STR(er.value[VRT_ENGINE_CONCURRENCY], "8",
	    "run: the root's flag wins over a child's");
	/* Two roots: the earlier one is read first. */
	procs[3].ppid = 1;
	procs[3].argv = other;
	procs[3].argc = N(other);
	vrt_engine_of_run(&er, &t);
	STR(vrt_engine_name(er.engine), "llama.cpp",
	    "run: the first root recognised");
	ok(er.root == 3, "run: the earliest root first");
}

/* Two spellings of one setting compare as one (compare's changed flags). */
static void test_field_of(void)
{
	EQ(vrt_engine_field_of(VRT_ENGINE_LLAMACPP, "-c"), VRT_ENGINE_CONTEXT,
	   "field_of: llama.cpp -c is the context");
	EQ(vrt_engine_field_of(VRT_ENGINE_LLAMACPP, "--ctx-size"),
	   VRT_ENGINE_CONTEXT, "field_of: so is --ctx-size");
	EQ(vrt_engine_field_of(VRT_ENGINE_SGLANG, "--tp"), VRT_ENGINE_PARALLEL,
	   "field_of: SGLang --tp");
	EQ(vrt_engine_field_of(VRT_ENGINE_VLLM, "-c"), -1,
	   "field_of: -c is not vLLM's");
	EQ(vrt_engine_field_of(VRT_ENGINE_UNKNOWN, "--max-num-seqs"),
	   VRT_ENGINE_CONCURRENCY, "field_of: any engine's when unknown");
	EQ(vrt_engine_field_of(VRT_ENGINE_VLLM, NULL), -1, "field_of: NULL");
}

int main(void)
{
	test_field_of();
	test_programs();
	test_unknown_and_workers();
	test_run();
	printf("1..%d\n", ntests);
	return nfailed ? 1 : 0;
}
