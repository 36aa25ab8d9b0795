/*
 * engine.c — the one table of engines and their flags (engine.h). The
 * spellings come from each engine's own argument parser: vLLM
 * (vllm/engine/arg_utils.py), SGLang (python/sglang/srt/server_args.py),
 * llama.cpp (common/arg.cpp), Ollama's runner (Go flags: one dash or
 * two), TGI (launcher/src/main.rs), TensorRT-LLM (tensorrt_llm/commands/
 * serve.py, click). Pure: no I/O; the tables are constant.
 */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "base/argv.h"
#include "cmdline.h"
#include "pathname.h"
#include "vramtrace/trace_format.h"

/* ---- the engines ---------------------------------------------------- */

/* Each setting as advice writes it, in enum vrt_engine_field order:
 * context, concurrency, memory fraction, tensor parallel, GPU layers,
 * pipeline parallel, batch tokens, physical batch, split mode. */
#define SETTINGS(ctx, seqs, frac, tp, ngl, pp, batch, ubatch, split)           \
	{                                                                      \
		ctx, seqs, frac, tp, ngl, pp, batch, ubatch, split             \
	}

/* clang-format off */
static const struct vrt_engine_info infos[VRT_ENGINE_COUNT] = {
	[VRT_ENGINE_UNKNOWN] = {
		NULL, "", "",
		SETTINGS("max context length", "max concurrent sequences",
		         "GPU memory fraction", "tensor-parallel size", NULL,
		         "pipeline-parallel size", "max tokens per batch", NULL,
		         NULL),
		0, NULL, NULL, 0},
	[VRT_ENGINE_VLLM] = {
		"vllm", "vLLM", "vLLM: ",
		SETTINGS("--max-model-len", "--max-num-seqs",
		         "--gpu-memory-utilization", "--tensor-parallel-size", NULL,
		         "--pipeline-parallel-size", "--max-num-batched-tokens",
		         NULL, NULL),
		0, "--enforce-eager",
		"--compilation-config '{\"max_cudagraph_capture_size\": N}'", 0},
	[VRT_ENGINE_SGLANG] = {
		"sglang", "SGLang", "SGLang: ",
		SETTINGS("--context-length", "--max-running-requests",
		         "--mem-fraction-static", "--tp", NULL, "--pp-size",
		         "--chunked-prefill-size", NULL, NULL),
		0, "--disable-cuda-graph", "--cuda-graph-max-bs N", 0},
	[VRT_ENGINE_LLAMACPP] = {
		"llama.cpp", "llama.cpp", "llama.cpp: ",
		SETTINGS("-c", "-np", NULL, NULL, "-ngl", NULL, "-b", "-ub",
		         "-sm"),
		0, NULL, NULL, 1},
	[VRT_ENGINE_TGI] = {
		"tgi", "TGI", "TGI: ",
		SETTINGS("--max-total-tokens", "--max-concurrent-requests",
		         "--cuda-memory-fraction", "--num-shard", NULL, NULL,
		         "--max-batch-prefill-tokens", NULL, NULL),
		0, "--cuda-graphs 0", "--cuda-graphs with fewer batch sizes", 1},
	[VRT_ENGINE_TRTLLM] = {
		"trtllm", "TensorRT-LLM", "TensorRT-LLM: ",
		SETTINGS("--max_seq_len", "--max_batch_size",
		         "--kv_cache_free_gpu_memory_fraction", "--tp_size", NULL,
		         "--pp_size", "--max_num_tokens", NULL, NULL),
		0, NULL, NULL, 0},
	/* Ollama's settings are environment variables and model options */
	[VRT_ENGINE_OLLAMA] = {
		"ollama", "Ollama", "Ollama: ",
		SETTINGS("OLLAMA_CONTEXT_LENGTH", "OLLAMA_NUM_PARALLEL", NULL, NULL,
		         "num_gpu", NULL, "num_batch", NULL, NULL),
		1, NULL, NULL, 1},
};
/* clang-format on */

const struct vrt_engine_info *vrt_engine_info(int engine)
{
	if (engine <= VRT_ENGINE_UNKNOWN || engine >= VRT_ENGINE_COUNT)
		engine = VRT_ENGINE_UNKNOWN;
	return &infos[engine];
}

const char *vrt_engine_name(int engine)
{
	return vrt_engine_info(engine)->name;
}

static const char *const field_names[VRT_ENGINE_NFIELDS] = {
        "context_length",  "concurrency", "memory_fraction",
        "tensor_parallel", "gpu_layers",  "pipeline_parallel",
        "batch_tokens",    "ubatch",      "split_mode",
        "flash_attn",
};

const char *vrt_engine_field_name(int field)
{
	if (field < 0 || field >= VRT_ENGINE_NFIELDS)
		return NULL;
	return field_names[field];
}

/* ---- the flags ------------------------------------------------------ */

struct flag {
	int engine;
	int field;
	const char *option;
};

/* In engine order: an unrecognised program's guess is the engine of the
 * first long option that matches, so a flag two engines share goes to
 * the one listed first. */
static const struct flag flags[] = {
        {VRT_ENGINE_VLLM, VRT_ENGINE_CONTEXT, "--max-model-len"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_CONCURRENCY, "--max-num-seqs"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_MEM_FRACTION, "--gpu-memory-utilization"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_PARALLEL, "--tensor-parallel-size"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_PARALLEL, "-tp"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_PIPELINE, "--pipeline-parallel-size"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_PIPELINE, "-pp"},
        {VRT_ENGINE_VLLM, VRT_ENGINE_BATCH_TOKENS, "--max-num-batched-tokens"},

        {VRT_ENGINE_SGLANG, VRT_ENGINE_CONTEXT, "--context-length"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_CONCURRENCY, "--max-running-requests"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_MEM_FRACTION, "--mem-fraction-static"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_PARALLEL, "--tensor-parallel-size"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_PARALLEL, "--tp-size"},
        /* argparse takes the unique prefix; SGLang's docs write it */
        {VRT_ENGINE_SGLANG, VRT_ENGINE_PARALLEL, "--tp"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_PIPELINE, "--pipeline-parallel-size"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_PIPELINE, "--pp-size"},
        {VRT_ENGINE_SGLANG, VRT_ENGINE_BATCH_TOKENS, "--chunked-prefill-size"},

        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_CONTEXT, "-c"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_CONTEXT, "--ctx-size"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_CONCURRENCY, "-np"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_CONCURRENCY, "--parallel"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_GPU_LAYERS, "-ngl"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_GPU_LAYERS, "--n-gpu-layers"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_GPU_LAYERS, "--gpu-layers"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_BATCH_TOKENS, "-b"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_BATCH_TOKENS, "--batch-size"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_UBATCH, "-ub"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_UBATCH, "--ubatch-size"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_SPLIT_MODE, "-sm"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_SPLIT_MODE, "--split-mode"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_FLASH_ATTN, "-fa"},
        {VRT_ENGINE_LLAMACPP, VRT_ENGINE_FLASH_ATTN, "--flash-attn"},

        {VRT_ENGINE_TGI, VRT_ENGINE_CONTEXT, "--max-total-tokens"},
        {VRT_ENGINE_TGI, VRT_ENGINE_CONCURRENCY, "--max-concurrent-requests"},
        {VRT_ENGINE_TGI, VRT_ENGINE_MEM_FRACTION, "--cuda-memory-fraction"},
        {VRT_ENGINE_TGI, VRT_ENGINE_PARALLEL, "--num-shard"},
        {VRT_ENGINE_TGI, VRT_ENGINE_BATCH_TOKENS, "--max-batch-prefill-tokens"},

        {VRT_ENGINE_TRTLLM, VRT_ENGINE_CONTEXT, "--max_seq_len"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_CONCURRENCY, "--max_batch_size"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_MEM_FRACTION,
         "--kv_cache_free_gpu_memory_fraction"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_MEM_FRACTION,
         "--free_gpu_memory_fraction"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_PARALLEL, "--tp_size"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_PIPELINE, "--pp_size"},
        {VRT_ENGINE_TRTLLM, VRT_ENGINE_BATCH_TOKENS, "--max_num_tokens"},

        /* Ollama's runner: Go's flag package takes one dash or two */
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_CONTEXT, "--ctx-size"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_CONTEXT, "-ctx-size"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_CONCURRENCY, "--parallel"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_CONCURRENCY, "-parallel"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_GPU_LAYERS, "--n-gpu-layers"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_GPU_LAYERS, "-n-gpu-layers"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_BATCH_TOKENS, "--batch-size"},
        {VRT_ENGINE_OLLAMA, VRT_ENGINE_BATCH_TOKENS, "-batch-size"},
};

#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

/* ---- recognising the program --------------------------------------- */

/* common/cmdline.c recognises the program (the preload names engines the
 * same way); here its name becomes the table's index. */
int vrt_engine_is_worker(char *const *argv, size_t argc)
{
	return vrt_cmdline_is_worker(argv, argc);
}

static int detect(char *const *argv, size_t argc)
{
	const char *name = vrt_cmdline_engine(argv, argc);

	for (int e = 1; name && e < VRT_ENGINE_COUNT; e++)
		if (!strcmp(infos[e].name, name))
			return e;
	return VRT_ENGINE_UNKNOWN;
}

/* Reads the options of engine e (every engine's long options when e is
 * UNKNOWN) from argv into f. Each argument is looked up once, in table
 * order, so the last occurrence of a setting wins. */
static void read_flags(struct vrt_engine_flags *f, int e, char *const *argv,
                       size_t argc)
{
	size_t i, k;

	for (i = 1; i < argc && argv[i]; i++) {
		if (argv[i][0] != '-')
			continue;
		for (k = 0; k < NFLAGS; k++) {
			const struct flag *x = &flags[k];
			const char *v;
			if (e ? x->engine != e : x->option[1] != '-')
				continue;
			v = vrt_argv_value(argv, argc, i, x->option);
			if (!v)
				continue;
			f->value[x->field] = v;
			f->option[x->field] = x->option;
			if (!e && !f->guess)
				f->guess = x->engine;
			if (i + 1 < argc && v == argv[i + 1])
				i++; /* the value is not an option itself */
			break;
		}
	}
}

int vrt_engine_parse_argv(struct vrt_engine_flags *f, char *const *argv,
                          size_t argc)
{
	int k, found;

	memset(f, 0, sizeof(*f));
	if (vrt_engine_is_worker(argv, argc))
		return 0;
	f->engine = detect(argv, argc);
	read_flags(f, f->engine, argv, argc);
	found = f->engine || f->guess;
	for (k = 0; k < VRT_ENGINE_NFIELDS; k++)
		found |= f->value[k] != NULL;
	return found;
}

/* ---- the run --------------------------------------------------------- */

static int is_root(const struct vrt_trace *t, size_t i)
{
	size_t k;

	for (k = 0; k < t->nprocs; k++)
		if (k != i && t->procs[k].pid == t->procs[i].ppid)
			return 0;
	return 1;
}

struct order_ctx {
	const struct vrt_trace *t;
	const uint8_t *root;
};

static int cmp_order(const void *pa, const void *pb, void *arg)
{
	const struct order_ctx *o = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	int64_t sa = o->t->procs[a].start_mono_ns,
	        sb = o->t->procs[b].start_mono_ns;

	if (o->root[a] != o->root[b])
		return o->root[a] ? -1 : 1;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The engine whose code the frame is: a native frame in its libraries or
 * named like its C API, a Python frame in its package; UNKNOWN else. */
static int engine_of_frame(const struct vrt_trace *t, const struct vrt_frame *f)
{
	static const struct {
		int engine;
		int python; /* the pattern is a Python file's path part */
		const char *part;
	} marks[] = {
	        {VRT_ENGINE_LLAMACPP, 0, "libllama"},
	        {VRT_ENGINE_LLAMACPP, 0, "libggml"},
	        {VRT_ENGINE_LLAMACPP, 1, "/llama_cpp/"},
	        {VRT_ENGINE_VLLM, 1, "/vllm/"},
	        {VRT_ENGINE_SGLANG, 1, "/sglang/"},
	        {VRT_ENGINE_TGI, 1, "/text_generation_server/"},
	        {VRT_ENGINE_TRTLLM, 1, "/tensorrt_llm/"},
	};
	const char *file = vrt_load_str(t, f->file);
	const char *fn = vrt_load_str(t, f->function);
	const char *base = vrt_pathname_base(file);
	size_t k;

	if (f->kind == VRT_FRAME_NATIVE && fn &&
	    (!strncmp(fn, "llama_", 6) || !strncmp(fn, "ggml_", 5)))
		return VRT_ENGINE_LLAMACPP;
	for (k = 0; k < sizeof(marks) / sizeof(marks[0]); k++) {
		if ((f->kind == VRT_FRAME_PYTHON) != marks[k].python || !file)
			continue;
		if (marks[k].python ? strstr(file, marks[k].part) != NULL
		                    : base && !strncmp(base, marks[k].part,
		                                       strlen(marks[k].part)))
			return marks[k].engine;
	}
	return VRT_ENGINE_UNKNOWN;
}

/* The engine the run's recorded frames name most, or UNKNOWN. */
static int engine_of_frames(const struct vrt_trace *t)
{
	size_t votes[VRT_ENGINE_COUNT] = {0}, i;
	int e, best = VRT_ENGINE_UNKNOWN;

	for (i = 1; i < t->nframes; i++)
		votes[engine_of_frame(t, &t->frames[i])]++;
	for (e = 1; e < VRT_ENGINE_COUNT; e++)
		if (votes[e] > votes[best] || (!best && votes[e]))
			best = e;
	return best;
}

void vrt_engine_of_run(struct vrt_engine_run *er, const struct vrt_trace *t)
{
	struct vrt_engine_flags f;
	struct order_ctx o = {t, NULL};
	size_t *order = NULL, i, n = t->nprocs;
	uint8_t *root = NULL;
	int guess = VRT_ENGINE_UNKNOWN, k;
	size_t guess_proc = SIZE_MAX;

	memset(er, 0, sizeof(*er));
	er->proc = SIZE_MAX;
	if (n) {
		order = malloc(n * sizeof(*order));
		root = malloc(n);
	}
	/* Out of memory: the processes in trace order, which is start
	 * order for a directory `record` wrote. */
	if (order && root) {
		for (i = 0; i < n; i++) {
			order[i] = i;
			root[i] = (uint8_t)is_root(t, i);
		}
		o.root = root;
		qsort_r(order, n, sizeof(*order), cmp_order, &o);
	}
	if (n && order && root)
		er->root = order[0];
	for (i = 0; i < n; i++) {
		size_t p = order && root ? order[i] : i;
		const struct vrt_process *pr = &t->procs[p];
		vrt_engine_parse_argv(&f, pr->argv, pr->argc);
		if (f.engine && !er->recognised) {
			er->engine = f.engine;
			er->recognised = 1;
			er->proc = p;
		}
		if (f.guess && !guess) {
			guess = f.guess;
			guess_proc = p;
		}
		for (k = 0; k < VRT_ENGINE_NFIELDS; k++) {
			if (er->value[k] || !f.value[k])
				continue;
			er->value[k] = f.value[k];
			er->option[k] = f.option[k];
		}
	}
	if (!er->recognised && guess) {
		er->engine = guess;
		er->proc = guess_proc;
	} else if (!er->recognised) {
		er->engine = engine_of_frames(t);
		er->from_stacks = er->engine != VRT_ENGINE_UNKNOWN;
	}
	free(order);
	free(root);
}

int vrt_engine_field_of(int engine, const char *option)
{
	size_t k;

	for (k = 0; option && k < NFLAGS; k++)
		if ((!engine || flags[k].engine == engine) &&
		    !strcmp(flags[k].option, option))
			return flags[k].field;
	return -1;
}

/* ---- numbers --------------------------------------------------------- */

int vrt_engine_uint(const char *value, uint64_t *out)
{
	char *end;
	double x;

	if (!value || !*value)
		return 0;
	x = strtod(value, &end);
	if (end == value || *end || !(x >= 0) || x > 1e15)
		return 0;
	*out = (uint64_t)x;
	return 1;
}

int vrt_engine_fraction_milli(const char *value, uint64_t *milli)
{
	char *end;
	double x;

	if (!value || !*value)
		return 0;
	x = strtod(value, &end);
	if (end == value || *end || !(x > 0) || x > 1.0)
		return 0;
	*milli = (uint64_t)(x * 1000.0 + 0.5);
	return 1;
}
