/*
 * retest.c — a run's row of the retest table (retest.h has the flags of
 * each engine). The engine tables below are the one place that knows
 * engine flag names; reports only print the fields. Pure: no I/O, no
 * printing. Single-threaded.
 */
#include "retest.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "enginelog.h"

struct flag {
	int field;
	const char *option; /* "--max-model-len" or "-c" */
};

struct engine {
	const char *name;
	const struct flag *flags; /* ends with option NULL */
};

static const struct flag vllm_flags[] = {
        {VRT_RETEST_CONTEXT, "--max-model-len"},
        {VRT_RETEST_CONCURRENCY, "--max-num-seqs"},
        {VRT_RETEST_MEM_FRACTION, "--gpu-memory-utilization"},
        {VRT_RETEST_PARALLEL, "--tensor-parallel-size"},
        {VRT_RETEST_PARALLEL, "-tp"},
        {0, NULL},
};

static const struct flag sglang_flags[] = {
        {VRT_RETEST_CONTEXT, "--context-length"},
        {VRT_RETEST_CONCURRENCY, "--max-running-requests"},
        {VRT_RETEST_MEM_FRACTION, "--mem-fraction-static"},
        {VRT_RETEST_PARALLEL, "--tp"},
        {VRT_RETEST_PARALLEL, "--tp-size"},
        {VRT_RETEST_PARALLEL, "--tensor-parallel-size"},
        {0, NULL},
};

static const struct flag llama_flags[] = {
        {VRT_RETEST_CONTEXT, "-c"},
        {VRT_RETEST_CONTEXT, "--ctx-size"},
        {VRT_RETEST_CONCURRENCY, "-np"},
        {VRT_RETEST_CONCURRENCY, "--parallel"},
        {VRT_RETEST_GPU_LAYERS, "-ngl"},
        {VRT_RETEST_GPU_LAYERS, "--n-gpu-layers"},
        {VRT_RETEST_GPU_LAYERS, "--gpu-layers"},
        {0, NULL},
};

static const struct flag tgi_flags[] = {
        {VRT_RETEST_CONTEXT, "--max-total-tokens"},
        {VRT_RETEST_CONCURRENCY, "--max-concurrent-requests"},
        {VRT_RETEST_MEM_FRACTION, "--cuda-memory-fraction"},
        {VRT_RETEST_PARALLEL, "--num-shard"},
        {0, NULL},
};

static const struct flag trtllm_flags[] = {
        {VRT_RETEST_CONTEXT, "--max_seq_len"},
        {VRT_RETEST_CONCURRENCY, "--max_batch_size"},
        {VRT_RETEST_MEM_FRACTION, "--kv_cache_free_gpu_memory_fraction"},
        {VRT_RETEST_PARALLEL, "--tp_size"},
        {0, NULL},
};

enum { E_VLLM, E_SGLANG, E_LLAMA, E_OLLAMA, E_TGI, E_TRTLLM, E_COUNT };

static const struct engine engines[E_COUNT] = {
        [E_VLLM] = {"vllm", vllm_flags},
        [E_SGLANG] = {"sglang", sglang_flags},
        [E_LLAMA] = {"llama.cpp", llama_flags},
        [E_OLLAMA] = {"ollama", llama_flags},
        [E_TGI] = {"tgi", tgi_flags},
        [E_TRTLLM] = {"trtllm", trtllm_flags},
};

static const char *const field_names[VRT_RETEST_NFIELDS] = {
        "context_length",  "concurrency", "memory_fraction",
        "tensor_parallel", "gpu_layers",
};

const char *vrt_retest_field_name(int field)
{
	if (field < 0 || field >= VRT_RETEST_NFIELDS)
		return NULL;
	return field_names[field];
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s && s[1] ? s + 1 : p ? p : "";
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A module or program name: "vllm", "vllm.entrypoints.openai.api_server",
 * "llama-server", "text_generation_server.cli" ... */
static int engine_of_name(const char *n)
{
	static const struct {
		const char *prefix;
		int engine;
	} names[] = {
	        {"vllm", E_VLLM},
	        {"sglang", E_SGLANG},
	        {"llama-", E_LLAMA},
	        {"llama_", E_LLAMA},
	        {"llama.cpp", E_LLAMA},
	        {"ollama", E_OLLAMA},
	        {"text-generation-", E_TGI},
	        {"text_generation_", E_TGI},
	        {"trtllm", E_TRTLLM},
	        {"tensorrt_llm", E_TRTLLM},
	};
	size_t i, len;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		len = strlen(names[i].prefix);
		/* "vllm" itself, "vllm.x", "vllm-x", "vllm_x": not "vllmx". */
		if (starts(n, names[i].prefix) &&
		    (names[i].prefix[len - 1] == '-' ||
		     names[i].prefix[len - 1] == '_' || n[len] == '\0' ||
		     n[len] == '.' || n[len] == '-' || n[len] == '_' ||
		     n[len] == ' '))
			return names[i].engine;
	}
	return -1;
}

static int detect_engine(char *const *argv, size_t argc)
{
	const char *prog;
	size_t i;
	int e;

	if (!argc || !argv[0])
		return -1;
	prog = base_name(argv[0]);
	if ((e = engine_of_name(prog)) >= 0)
		return e;
	if (!starts(prog, "python"))
		return -1;
	/* python [opts] -m MODULE ... or python [opts] SCRIPT ... */
	for (i = 1; i < argc && argv[i]; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc && argv[i + 1])
			return engine_of_name(argv[i + 1]);
		if (starts(argv[i], "-m") && argv[i][2])
			return engine_of_name(argv[i] + 2);
		if (!strcmp(argv[i], "-c"))
			return -1; /* code on the command line */
		if (argv[i][0] != '-')
			return engine_of_name(base_name(argv[i]));
	}
	return -1;
}

/* Reads the options of table fl from argv into f; with long_only, options
 * spelled with one dash are skipped. */
static void read_flags(struct vrt_retest_flags *f, const struct flag *fl,
                       int long_only, char *const *argv, size_t argc)
{
	size_t i, n;
	const struct flag *x;

	for (i = 1; i < argc && argv[i]; i++) {
		const char *a = argv[i];
		for (x = fl; x->option; x++) {
			if (long_only && x->option[1] != '-')
				continue;
			n = strlen(x->option);
			if (strncmp(a, x->option, n))
				continue;
			if (a[n] == '=') {
				f->value[x->field] = a + n + 1;
				f->option[x->field] = x->option;
			} else if (a[n] == '\0' && i + 1 < argc &&
			           argv[i + 1]) {
				f->value[x->field] = argv[i + 1];
				f->option[x->field] = x->option;
			} else {
				continue;
			}
			break;
		}
		/* The value of a matched option is not an option itself. */
		if (x->option && a[strlen(x->option)] == '\0')
			i++;
	}
}

int vrt_retest_parse_argv(struct vrt_retest_flags *f, char *const *argv,
                          size_t argc)
{
	int e = detect_engine(argv, argc), k, found;

	memset(f, 0, sizeof(*f));
	if (e >= 0) {
		f->engine = engines[e].name;
		read_flags(f, engines[e].flags, 0, argv, argc);
	} else {
		for (k = 0; k < E_COUNT; k++)
			read_flags(f, engines[k].flags, 1, argv, argc);
	}
	found = f->engine != NULL;
	for (k = 0; k < VRT_RETEST_NFIELDS; k++)
		found |= f->value[k] != NULL;
	return found;
}

/* ---- the row ------------------------------------------------------------ */

static int cmp_start(const void *pa, const void *pb, void *arg)
{
	const struct vrt_trace *t = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	if (t->procs[a].start_mono_ns != t->procs[b].start_mono_ns)
		return t->procs[a].start_mono_ns < t->procs[b].start_mono_ns
		               ? -1
		               : 1;
	return a < b ? -1 : a > b;
}

static int copy_argv(struct vrt_retest_row *row, const struct vrt_process *p)
{
	size_t i;

	row->argv = calloc(p->argc + 1, sizeof(char *));
	if (!row->argv)
		return -1;
	for (i = 0; i < p->argc; i++) {
		row->argv[i] = strdup(p->argv[i] ? p->argv[i] : "");
		if (!row->argv[i])
			return -1;
		row->argc++;
	}
	return 0;
}

static int flags_of_run(struct vrt_retest_row *row, const struct vrt_trace *t)
{
	struct vrt_retest_flags f;
	size_t *order, i;
	int k, rc = -1;
	const struct vrt_process *shown = NULL;

	if (!t->nprocs)
		return 0;
	order = malloc(t->nprocs * sizeof(*order));
	if (!order)
		return -1;
	for (i = 0; i < t->nprocs; i++)
		order[i] = i;
	qsort_r(order, t->nprocs, sizeof(*order), cmp_start, (void *)t);
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[order[i]];
		vrt_retest_parse_argv(&f, p->argv, p->argc);
		if (f.engine && !row->engine) {
			row->engine = f.engine;
			shown = p;
		}
		for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
			if (row->value[k] || !f.value[k])
				continue;
			row->value[k] = strdup(f.value[k]);
			if (!row->value[k])
				goto out;
			row->option[k] = f.option[k];
		}
	}
	rc = copy_argv(row, shown ? shown : &t->procs[order[0]]);
out:
	free(order);
	return rc;
}

static int devices_of_run(struct vrt_retest_row *row, const struct vrt_trace *t,
                          const struct vrt_replay *r)
{
	size_t i;
	unsigned k;
	char buf[32];

	row->dev = calloc(r->ndevices ? r->ndevices : 1, sizeof(*row->dev));
	if (!row->dev)
		return -1;
	for (i = 0; i < r->ndevices; i++) {
		const struct vrt_replay_device *d = &r->dev[i];
		struct vrt_retest_device *x = &row->dev[row->ndev++];
		x->id = (int32_t)i;
		x->peak_bytes = d->peak_bytes;
		x->phases = calloc(VRT_REPLAY_MAX_PHASES, sizeof(*x->phases));
		if (!x->phases)
			return -1;
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
			struct vrt_retest_phase *p;
			if (!d->peak_by_phase[k])
				continue;
			p = &x->phases[x->nphases++];
			snprintf(p->name, sizeof(p->name), "%s",
			         vrt_load_phase_name(t, k, buf, sizeof(buf)));
			p->bytes = d->peak_by_phase[k];
		}
	}
	return 0;
}

int vrt_retest_row(struct vrt_retest_row *row, const struct vrt_trace *t,
                   const struct vrt_replay *r)
{
	size_t i;
	char buf[32];

	memset(row, 0, sizeof(*row));
	row->nprocs = t->nprocs;
	if (flags_of_run(row, t) || devices_of_run(row, t, r))
		return -1;
	row->max_inflight = r->max_inflight;
	row->ooms = r->ooms;
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		if (!x->oom)
			continue;
		row->have_oom = 1;
		row->oom_after_ready = x->after_ready;
		snprintf(row->oom_phase, sizeof(row->oom_phase), "%s",
		         vrt_load_phase_name(t, x->phase, buf, sizeof(buf)));
		row->oom_device = x->device;
		row->oom_requested = x->requested_bytes;
		row->oom_time_ns = x->ts - t->start_ns;
		break;
	}
	for (i = 0; i < t->nprocs; i++)
		if (t->procs[i].exit_kind != VRT_EXIT_NONE) {
			row->exit_kind = t->procs[i].exit_kind;
			row->exit_code = t->procs[i].exit_code;
			break;
		}
	return 0;
}

void vrt_retest_row_free(struct vrt_retest_row *row)
{
	size_t i;
	int k;

	for (k = 0; k < VRT_RETEST_NFIELDS; k++)
		free(row->value[k]);
	for (i = 0; i < row->argc; i++)
		free(row->argv[i]);
	free(row->argv);
	for (i = 0; i < row->ndev; i++)
		free(row->dev[i].phases);
	free(row->dev);
	memset(row, 0, sizeof(*row));
}

int vrt_retest_from_log(struct vrt_retest_row *row,
                        const struct vrt_enginelog *log)
{
	/* the log's field for each of ours, and llama.cpp's alternative */
	static const int from[VRT_RETEST_NFIELDS][2] = {
	        [VRT_RETEST_CONTEXT] = {VRT_ELC_MAX_MODEL_LEN, VRT_ELC_CTX_SIZE},
	        [VRT_RETEST_CONCURRENCY] = {VRT_ELC_MAX_NUM_SEQS, VRT_ELC_SLOTS},
	        [VRT_RETEST_MEM_FRACTION] = {VRT_ELC_MEM_FRACTION, -1},
	        [VRT_RETEST_PARALLEL] = {VRT_ELC_TP, -1},
	        [VRT_RETEST_GPU_LAYERS] = {VRT_ELC_GPU_LAYERS, -1},
	};
	char buf[32];
	int k, n = 0;

	if (!row->engine)
		row->engine = vrt_enginelog_engine_name(log->engine);
	for (k = 0; k < VRT_RETEST_NFIELDS; k++) {
		int f = from[k][0];
		if (row->value[k])
			continue;
		/* llama.cpp's context is the whole n_ctx, as -c gives it */
		if (log->engine == VRT_ENGINELOG_LLAMACPP && from[k][1] >= 0 &&
		    log->config_line[from[k][1]])
			f = from[k][1];
		else if (!log->config_line[f] && from[k][1] >= 0)
			f = from[k][1];
		if (f < 0 || !log->config_line[f])
			continue;
		if (f == VRT_ELC_MEM_FRACTION)
			snprintf(buf, sizeof(buf), "%.2f",
			         (double)log->config[f] / 1000);
		else
			snprintf(buf, sizeof(buf), "%" PRIu64, log->config[f]);
		row->value[k] = strdup(buf);
		if (!row->value[k])
			return -1;
		row->option[k] = VRT_RETEST_FROM_LOG;
		n++;
	}
	return n;
}
