/*
 * main.c — the `vramtrace` command: the table of subcommands, the option
 * parser they share, and dispatch. Work happens in cmd_<name>.c; main only
 * maps a command line to one of them and returns its exit status.
 * Single-threaded.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "diagnose/diagnose.h"
#include "model/model.h"
#include "vramtrace/trace_format.h"

#ifndef VRT_VERSION
#define VRT_VERSION "unknown"
#endif
#ifndef VRT_GLIBC_MIN
#define VRT_GLIBC_MIN "unknown"
#endif

static const struct vrt_cmd commands[] = {
        {"record", vrt_cmd_record_run,
         "run a command with the preload and record its GPU memory calls",
         "record [-o DIR] [--standby] [--redact] [--wait-children S]\n"
         "       [--log-max SIZE | --no-log] -- CMD [ARG...]",
         "Runs CMD with libvramtrace.so preloaded; every process it starts\n"
         "writes DIR/<pid>.vtrace. Exits with CMD's exit status (128+N if a\n"
         "signal N killed it, 127 if CMD is not found).\n"
         "\n"
         "  -o, --output DIR  run directory (default: $VRAMTRACE_OUT, else\n"
         "                    ./vramtrace-run-YYYYmmdd-HHMMSS)\n"
         "  --standby         keep only the live-allocation table until\n"
         "                    `vramtrace ctl DIR start` (VRAMTRACE_START)\n"
         "  --redact          store the command lines with argument values\n"
         "                    as *** (VRAMTRACE_REDACT; engine sizes kept)\n"
         "  --wait-children S after CMD exits, wait at most S seconds for\n"
         "                    the rest of its process tree (default 10);\n"
         "                    record adopts orphans of the tree and writes\n"
         "                    DIR/<pid>.exit for each process it reaps\n"
         "  --log-max SIZE    CMD's stdout and stderr still reach ours and\n"
         "                    are kept in DIR/output.log, each line with\n"
         "                    its UTC time: at most SIZE (default 32M;\n"
         "                    K, M, G), the first quarter and the last\n"
         "                    part, with a line saying what was cut\n"
         "  --no-log          leave CMD's output alone (no output.log)\n"
         "  -h, --help        show this help\n"
         "\n"
         "Environment: VRAMTRACE_PRELOAD overrides the library to preload.\n"},
        {"attach", vrt_cmd_attach_run,
         "record a running process that was started without the preload",
         "attach PID [-o DIR] [--duration S] [--tree] [--partial]\n"
         "       [--injector auto|ptrace|gdb] [--no-python]",
         "Loads the recording agent into PID (ptrace; its own rights are\n"
         "needed), hooks the GPU driver's memory calls at their entry and\n"
         "records into DIR like `record`, with a snapshot of what PID held\n"
         "before. Detaches on --duration, Ctrl-C or `vramtrace ctl DIR\n"
         "stop`, leaving PID running as it was. Checks everything first and\n"
         "refuses, with the reason, before touching the process.\n"
         "\n"
         "  -o, --output DIR  run directory (default: ./vramtrace-attach-PID)\n"
         "  --duration S      detach after S seconds\n"
         "  --tree            also PID's descendants that use the GPU (one\n"
         "                    run: engine cores, tensor-parallel workers)\n"
         "  --partial         hook what can be hooked when some function's\n"
         "                    first instructions cannot be moved (their\n"
         "                    calls go unrecorded; listed in DIR/attach.txt)\n"
         "  --injector WHO    auto (default): vramtrace's own, gdb when no\n"
         "                    thread is waiting where it can be borrowed;\n"
         "                    ptrace: ours only; gdb: gdb batch mode\n"
         "  --no-python       no snapshot through the process's Python\n"
         "                    interpreter (torch.cuda.memory_snapshot)\n"
         "  -h, --help        show this help\n"
         "\n"
         "Environment: VRAMTRACE_AGENT overrides the agent library; the\n"
         "VRAMTRACE_* recording options (VRAMTRACE_STACKS...) are passed on.\n"
         "See docs/attach.md for the rights needed in containers.\n"},
        {"analyze", vrt_cmd_analyze_run,
         "replay traces into a per-device memory budget and failure list",
         "analyze PATH... [--format text|json|html|perfetto|folded]\n"
         "        [-o FILE] [--rules FILE] [--margin PCT] [--log FILE | --no-log]\n"
         "        [--model-config FILE [--kv-dtype T] [--explain]]\n"
         "   or: vramtrace analyze --log FILE|- [--format text|json|html] ...",
         "Each PATH is a run directory (all its *.vtrace files) or one\n"
         ".vtrace file; several runs (hosts) merge into one report.\n"
         "With --log and no PATH, the server's log alone is diagnosed (the\n"
         "quickest first step: a log pasted, piped or collected from a\n"
         "crashed pod; - reads standard input): the same report, every\n"
         "number read from the log, and what a trace would settle named.\n"
         "\n"
         "  -f, --format FMT   text (default), json (vramtrace-report/1),\n"
         "                     html (one self-contained page: timelines,\n"
         "                     budgets, diagnosis, top sites), perfetto\n"
         "                     (Chrome trace JSON for ui.perfetto.dev) or\n"
         "                     folded (the stacks live at each device's\n"
         "                     peak, for flamegraph.pl and speedscope)\n"
         "  -o, --output FILE  write the report to FILE (atomically,\n"
         "                     mode 0600; an existing FIFO or device is\n"
         "                     written in place; - is stdout)\n"
         "      --rules FILE   re-classify stacks into phases with the\n"
         "                     built-in rules plus FILE (FILE's rules\n"
         "                     first); annotations still win\n"
         "      --margin PCT   the share of each card the advice keeps\n"
         "                     free: every number it suggests (context,\n"
         "                     sequences, memory fraction, layers) leaves\n"
         "                     PCT percent of the card free at the peak,\n"
         "                     as plan's \"yes\" does, and a run whose\n"
         "                     headroom is below it is warned (default 5;\n"
         "                     0 to 50)\n"
         "      --model-config FILE  a Hugging Face config.json or a GGUF\n"
         "                     model file (only its metadata is read):\n"
         "                     adds the model arithmetic (KV bytes per\n"
         "                     token by layer type: full, sliding window,\n"
         "                     MLA, recurrent state per sequence; tokens\n"
         "                     the KV reserve holds; context x concurrency\n"
         "                     that fits; parameters and expected vs\n"
         "                     observed weights, quantization included),\n"
         "                     and advice in tokens, layers (-ngl) and\n"
         "                     GGUF quantizations\n"
         "      --kv-dtype T   the KV cache type: fp16, bf16, fp32, fp8,\n"
         "                     fp8_e4m3, fp8_e5m2, int8, fp8_ds_mla, q8_0,\n"
         "                     q4_0, q4_1, q5_0, q5_1, iq4_nl (default: the\n"
         "                     engine's flag, else the model's dtype)\n"
         "      --explain      print the model description in full and\n"
         "                     the KV arithmetic line by line\n"
         "      --log FILE     the server's log (vLLM, SGLang, llama.cpp,\n"
         "                     Ollama, TGI, TensorRT-LLM; - for standard\n"
         "                     input) to hold against the trace: its memory\n"
         "                     numbers beside the traced ones, its fatal\n"
         "                     error, its budget refusals; default:\n"
         "                     PATH/output.log that record keeps. Without\n"
         "                     PATH: the log alone\n"
         "      --no-log       ignore PATH/output.log\n"
         "  -h, --help         show this help\n"},
        {"compare", vrt_cmd_compare_run,
         "before/after of two runs: peaks by device, phase and call path",
         "compare A B [--format text|json] [-o FILE] [--rules FILE]",
         "A (before) and B (after) are each a run directory or one .vtrace\n"
         "file. Devices match by uuid, else by (host, vendor, ordinal); call\n"
         "paths by function and file names, so another build or load\n"
         "address still matches. Exits 0 whatever changed.\n"
         "\n"
         "  -f, --format FMT   text (default) or json (vramtrace-compare/1)\n"
         "  -o, --output FILE  write the comparison to FILE (atomically,\n"
         "                     mode 0600; an existing FIFO or device is\n"
         "                     written in place; - is stdout)\n"
         "      --rules FILE   re-classify both runs' stacks with FILE's\n"
         "                     rules in front of the built-in ones\n"
         "  -h, --help         show this help\n"},
        {"table", vrt_cmd_table_run,
         "the retest record: one row per run with its flags, peak and OOM",
         "table RUN... [--format text|json|csv] [-o FILE] [--rules FILE]",
         "One row per RUN (a run directory or one .vtrace file), in the\n"
         "order given: the engine and its context length, concurrency,\n"
         "memory fraction, tensor parallel and GPU layers flags read from\n"
         "the recorded command lines (vLLM, SGLang, llama.cpp, TGI,\n"
         "TensorRT-LLM), each device's peak split by phase, requests in\n"
         "flight, the first out-of-memory failure (stage, phase), exit "
         "status.\n"
         "\n"
         "  -f, --format FMT   text (default), csv or json "
         "(vramtrace-table/1)\n"
         "  -o, --output FILE  write the table to FILE (atomically,\n"
         "                     mode 0600; an existing FIFO or device is\n"
         "                     written in place; - is stdout)\n"
         "      --rules FILE   re-classify stacks with FILE's rules first\n"
         "  -h, --help         show this help\n"},
        {"plan", vrt_cmd_plan_run,
         "which settings fit: other settings predicted from one run",
         "plan RUN [--set FLAG=V1,V2,...]... [--model-config FILE]\n"
         "        [--kv-dtype T] [--objective concurrency|context|throughput]\n"
         "        [--margin PCT] [--explain] [--format text|json|csv] [-o FILE]\n"
         "        [--rules FILE]",
         "Predicts, for the engine recognised in RUN (a run directory or one\n"
         ".vtrace file: vLLM, SGLang, llama.cpp, TGI, TensorRT-LLM), the\n"
         "memory budget of other settings per device: weights, activations,\n"
         "KV cache (bytes and tokens), CUDA graphs, other fixed memory, the\n"
         "requests in flight, the peak, the headroom, whether it fits and\n"
         "which budget breaks. Each term comes from the run's measurements\n"
         "and the engine's sizing rule and says where it came from.\n"
         "\n"
         "      --set FLAG=V1,V2,...  values of one engine flag (with or\n"
         "                     without its dashes: max-model-len, -c,\n"
         "                     mem-fraction-static) or knob name; the grid\n"
         "                     is every combination (default: context and\n"
         "                     concurrency halved and doubled, the memory\n"
         "                     fraction 0.05 either side)\n"
         "      --model-config FILE  the model description (config.json):\n"
         "                     KV tokens and sequences, layers\n"
         "      --kv-dtype T   the KV cache type (with --model-config)\n"
         "      --objective O  the best row: concurrency (default), context\n"
         "                     or throughput\n"
         "      --margin PCT   headroom below which a fit is tight, in\n"
         "                     percent of each card (default 5; the same\n"
         "                     margin analyze sizes its advice by)\n"
         "      --explain      the arithmetic of one configuration: the one\n"
         "                     the --set values name, else the best\n"
         "  -f, --format FMT   text (default), json (vramtrace-plan/1), csv\n"
         "  -o, --output FILE  write the plan to FILE (atomically)\n"
         "      --rules FILE   re-classify stacks with FILE's rules first\n"
         "  -h, --help         show this help\n"},
        {"rules", vrt_cmd_rules_run,
         "the call paths no phase rule claims, to write the missing rule",
         "rules RUN... [--rules FILE] [--top N] | rules --builtin",
         "Lists the recorded allocating call paths that no phase rule\n"
         "claims, or that only a rule marked obsolete claims (an engine\n"
         "function since renamed), grouped by their named frames and\n"
         "ordered by the bytes they allocated, each with its frames as the\n"
         "rule patterns that would name them, innermost first. Several\n"
         "RUNs (run directories or .vtrace files) are read as one.\n"
         "Annotated allocations are left out: the annotation decides.\n"
         "\n"
         "      --rules FILE  your rules in front of the built-in ones (to\n"
         "                    check a rules file before using it)\n"
         "  -n, --top N       list the N largest groups (default 10; 0: "
         "all)\n"
         "      --builtin     print the built-in rules file and exit\n"
         "  -h, --help        show this help\n"},
        {"ctl", vrt_cmd_ctl_run,
         "control traced processes while they run: start, stop, mark, status",
         "ctl DIR|PID start|stop|mark LABEL|flush|status [--json]",
         "DIR reaches every process of a run directory (its <pid>.ctl\n"
         "sockets; processes that are gone are noted and skipped), PID one\n"
         "process (its run directory from its VRAMTRACE_OUT, else the\n"
         "default vramtrace-run-PID in its working directory).\n"
         "\n"
         "  start        record from now on (the trace begins with a\n"
         "               snapshot of every live allocation)\n"
         "  stop         back to standby (live-allocation table only)\n"
         "  mark LABEL   a timestamped mark in the trace: analyze reports\n"
         "               one window per mark\n"
         "  flush        write buffered events out now\n"
         "  status       state, events, devices and live bytes per phase\n"
         "\n"
         "      --json   print status answers as JSON, one line each\n"
         "  -h, --help   show this help\n"
         "\n"
         "Prints 'pid N: ANSWER' per process. Exit 0 when every reachable\n"
         "process answered ok, 1 when one did not or none was reachable.\n"},
        {"live", vrt_cmd_live_run,
         "a refreshing view of a recording run: bytes per device and phase",
         "live DIR|PID [--interval SEC] [--count N]",
         "Re-reads the run's traces every interval and shows, per device,\n"
         "used of total bytes and the live bytes of each phase, requests in\n"
         "flight, OOMs and the last one (from the control sockets when no\n"
         "trace has data yet, e.g. in standby). Full screen on a terminal\n"
         "(q quits); otherwise one line per refresh.\n"
         "\n"
         "  -n, --interval SEC  seconds between refreshes (default 1)\n"
         "  -c, --count N       stop after N refreshes\n"
         "  -h, --help          show this help\n"},
        {"demo", vrt_cmd_demo_run,
         "run the example server on the fake GPU through every OOM verdict",
         "demo [-o DIR]",
         "Records examples/serve_sim (a vLLM-shaped server) on the fake\n"
         "GPU once per verdict (weights, not sharded, kv_cache,\n"
         "concurrency, host_memory, other_processes, none) and prints\n"
         "each diagnosis. No GPU needed; runs from a build tree.\n"
         "\n"
         "  -o, --output DIR  keep the runs in DIR (default: a new\n"
         "                    directory under $TMPDIR or /tmp)\n"
         "  -h, --help        show this help\n"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_cmd_help(const struct vrt_cmd *c)
{
	printf("usage: vramtrace %s\n\n%s\n%s", c->usage, c->summary, c->help);
}

static void print_main_help(FILE *f)
{
	size_t i;

	fprintf(f, "usage: vramtrace [--version] [--help] COMMAND [ARGS]\n\n"
	           "GPU memory tracer for inference servers.\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i].name,
		        commands[i].summary);
	fprintf(f, "\nRun 'vramtrace help COMMAND' for its options.\n");
}

/* Optimal string alignment distance of a and b (edits, transpositions),
 * capped: anything past 3 counts as 3. */
static unsigned distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	unsigned d[3][64];

	if (la >= 63 || lb >= 63)
		return 3;
	/* Three rows: the one before the previous serves transpositions. */
	for (j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (i = 1; i <= la; i++) {
		unsigned *cur = d[i % 3], *prev = d[(i + 2) % 3],
		         *prev2 = d[(i + 1) % 3];
		cur[0] = (unsigned)i;
		for (j = 1; j <= lb; j++) {
			unsigned cost = a[i - 1] != b[j - 1], v;
			v = prev[j] + 1;
			if (cur[j - 1] + 1 < v)
				v = cur[j - 1] + 1;
			if (prev[j - 1] + cost < v)
				v = prev[j - 1] + cost;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < v)
				v = prev2[j - 2] + 1;
			cur[j] = v;
		}
	}
	return d[la % 3][lb] > 3 ? 3 : d[la % 3][lb];
}

/* Of the n names found every stride bytes from names (a field of an
 * array of structs; NULL names skipped), the one closest to what was
 * typed: within two edits (one for short names), or one it begins; NULL
 * when none is close or two are equally close. */
static const char *closest(const char *typed, const char *const *names,
                           size_t stride, size_t n)
{
	const char *best = NULL;
	unsigned bestd = 3, d;
	int tie = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		const char *name =
		        *(const char *const *)((const char *)names + i * stride);
		if (!name)
			continue;
		d = distance(typed, name);
		if (strlen(typed) >= 3 && !strncmp(name, typed, strlen(typed)))
			d = d < 1 ? d : 1;
		if (d > (strlen(name) <= 4 ? 1u : 2u))
			continue;
		if (d < bestd) {
			best = name;
			bestd = d;
			tie = 0;
		} else if (d == bestd) {
			tie = 1;
		}
	}
	return tie ? NULL : best;
}

static const struct vrt_cmd *find_cmd(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int vrt_main_usage_error(const struct vrt_cmd *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vramtrace: error: %s%s", cmd ? cmd->name : "",
	        cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr,
		        "\nusage: vramtrace %s\nTry 'vramtrace %s --help'.\n",
		        cmd->usage, cmd->name);
	else
		fprintf(stderr, "\nusage: vramtrace [--version] [--help] "
		                "COMMAND [ARGS]\nTry 'vramtrace --help'.\n");
	return VRT_EXIT_USAGE;
}

int vrt_main_choice(const struct vrt_cmd *cmd, const char *what,
                    const char *arg, const char *const *names)
{
	char list[256];
	size_t n = 0, i, count = 0;

	for (i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return (int)i;
	while (names[count])
		count++;
	list[0] = 0;
	for (i = 0; i < count && n < sizeof(list); i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s",
		                      i == 0           ? ""
		                      : i + 1 == count ? " or "
		                                       : ", ",
		                      names[i]);
	vrt_main_usage_error(cmd, "unknown %s '%s' (%s)", what, arg, list);
	return -1;
}

static const struct vrt_option *find_long(const struct vrt_option *opts,
                                          const char *name, size_t len)
{
	for (; opts->id; opts++)
		if (opts->name && strlen(opts->name) == len &&
		    !strncmp(opts->name, name, len))
			return opts;
	return NULL;
}

static const struct vrt_option *find_short(const struct vrt_option *opts,
                                           char c)
{
	for (; opts->id; opts++)
		if (opts->short_name == c)
			return opts;
	return NULL;
}

int vrt_main_getopt(struct vrt_optstate *st, const struct vrt_option *opts,
                    const struct vrt_cmd *cmd)
{
	const struct vrt_option *o;
	const char *a, *eq;

	if (!st->pos) {
		st->pos = calloc((size_t)st->argc + 1, sizeof(char *));
		if (!st->pos) {
			fprintf(stderr, "vramtrace: error: out of memory\n");
			return VRT_OPT_ERROR;
		}
	}
	while (st->ind < st->argc) {
		a = st->argv[st->ind];
		if (!strcmp(a, "--")) {
			st->ind++;
			if (st->stop_at_positional) {
				st->rest = st->argv + st->ind;
				st->nrest = st->argc - st->ind;
				st->ind = st->argc;
				return VRT_OPT_END;
			}
			while (st->ind < st->argc)
				st->pos[st->npos++] = st->argv[st->ind++];
			return VRT_OPT_END;
		}
		if (a[0] != '-' || a[1] == '\0') {
			if (st->stop_at_positional) {
				st->rest = st->argv + st->ind;
				st->nrest = st->argc - st->ind;
				st->ind = st->argc;
				return VRT_OPT_END;
			}
			st->pos[st->npos++] = st->argv[st->ind++];
			continue;
		}
		st->ind++;
		st->arg = NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_cmd_help(cmd);
			return VRT_OPT_HELP;
		}
		if (a[1] == '-') {
			eq = strchr(a + 2, '=');
			o = find_long(opts, a + 2,
			              eq ? (size_t)(eq - a - 2)
			                 : strlen(a + 2));
			if (!o) {
				char typed[64];
				const char *near;
				size_t nopts = 0;
				while (opts[nopts].id)
					nopts++;
				snprintf(typed, sizeof(typed), "%.*s",
				         (int)(eq ? eq - a - 2 : (long)strlen(a + 2)),
				         a + 2);
				near = nopts ? closest(typed, &opts[0].name,
				                       sizeof(opts[0]), nopts)
				             : NULL;
				if (near)
					vrt_main_usage_error(
					        cmd,
					        "unknown option '%s' (did you mean "
					        "'--%s'?)",
					        a, near);
				else
					vrt_main_usage_error(
					        cmd, "unknown option '%s'", a);
				return VRT_OPT_ERROR;
			}
			if (!o->has_arg && eq) {
				vrt_main_usage_error(
				        cmd, "option '--%s' takes no value",
				        o->name);
				return VRT_OPT_ERROR;
			}
			if (o->has_arg)
				st->arg = eq ? eq + 1
				          : st->ind < st->argc
				                  ? st->argv[st->ind++]
				                  : NULL;
		} else {
			o = find_short(opts, a[1]);
			if (!o) {
				vrt_main_usage_error(cmd, "unknown option '%s'",
				                     a);
				return VRT_OPT_ERROR;
			}
			if (!o->has_arg && a[2]) {
				vrt_main_usage_error(cmd, "unknown option '%s'",
				                     a);
				return VRT_OPT_ERROR;
			}
			if (o->has_arg)
				st->arg = a[2] ? a + 2
				          : st->ind < st->argc
				                  ? st->argv[st->ind++]
				                  : NULL;
		}
		if (o->has_arg && !st->arg) {
			vrt_main_usage_error(cmd, "option '%s' needs a value",
			                     a);
			return VRT_OPT_ERROR;
		}
		return o->id;
	}
	return VRT_OPT_END;
}

/* One shared option into *o; 0, or VRT_EXIT_USAGE after the error. */
static int shared_option(const struct vrt_cmd *self, int id, const char *arg,
                         struct vrt_opts *o)
{
	char *end;
	unsigned long v;
	int f;

	switch (id) {
	case VRT_OPT_FORMAT:
		f = vrt_main_choice(self, "format", arg, o->formats);
		if (f < 0)
			return VRT_EXIT_USAGE;
		o->format = f;
		break;
	case VRT_OPT_OUTPUT:
		o->output = arg;
		break;
	case VRT_OPT_RULES:
		o->rules = arg;
		break;
	case VRT_OPT_MODEL_CONFIG:
		o->model_config = arg;
		break;
	case VRT_OPT_KV_DTYPE:
		if (vrt_model_dtype(arg, NULL))
			return vrt_main_usage_error(
			        self,
			        "unknown KV dtype '%s' (fp16, bf16, fp32, fp8, "
			        "fp8_e4m3, fp8_e5m2, int8, fp8_ds_mla, q8_0, "
			        "q4_0, q4_1, q5_0, q5_1, iq4_nl)",
			        arg);
		o->kv_dtype = arg;
		break;
	case VRT_OPT_MARGIN:
		v = strtoul(arg, &end, 10);
		if (end == arg || (*end && strcmp(end, "%")) || arg[0] == '-' ||
		    v > VRT_DIAG_MARGIN_MAX)
			return vrt_main_usage_error(
			        self,
			        "--margin takes a whole percent from 0 to %d "
			        "(got '%s')",
			        VRT_DIAG_MARGIN_MAX, arg);
		o->margin = (int)v;
		break;
	case VRT_OPT_EXPLAIN:
		o->explain = 1;
		break;
	}
	return 0;
}

int vrt_main_parse(const struct vrt_cmd *self, int argc, char **argv,
                   const struct vrt_option *opts, struct vrt_opts *o,
                   vrt_own_option_fn own, void *settings,
                   struct vrt_optstate *st, int *status)
{
	int id, rc = 0;

	st->argc = argc;
	st->argv = argv;
	if (o)
		o->margin = -1;
	while (!rc && (id = vrt_main_getopt(st, opts, self)) > 0)
		rc = id < VRT_OPT_OWN ? shared_option(self, id, st->arg, o)
		                      : own(self, id, st->arg, settings);
	if (!rc && id == VRT_OPT_HELP)
		rc = -1;
	else if (!rc && id == VRT_OPT_ERROR)
		rc = VRT_EXIT_USAGE;
	else if (!rc && o && st->npos < o->min_pos)
		rc = vrt_main_usage_error(self, "%s", o->few);
	else if (!rc && o && o->max_pos && st->npos > o->max_pos)
		rc = vrt_main_usage_error(self, "%s", o->many);
	*status = rc < 0 ? VRT_EXIT_OK : rc;
	return rc != 0;
}

int main(int argc, char **argv)
{
	const struct vrt_cmd *cmd;

	if (argc < 2)
		return vrt_main_usage_error(NULL, "no command given");
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		print_main_help(stdout);
		return VRT_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("vramtrace %s\n"
		       "trace format: reads versions %d to %d, writes %d\n"
		       "preload: needs glibc %s or newer\n",
		       VRT_VERSION, VRT_TRACE_VERSION_OLDEST, VRT_TRACE_VERSION,
		       VRT_TRACE_VERSION, VRT_GLIBC_MIN);
		return VRT_EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc < 3 || !strcmp(argv[2], "--help") ||
		    !strcmp(argv[2], "-h")) {
			print_main_help(stdout);
			return VRT_EXIT_OK;
		}
		cmd = find_cmd(argv[2]);
		if (!cmd) {
			const char *near =
			        closest(argv[2], &commands[0].name,
			                sizeof(commands[0]), NCOMMANDS);
			return vrt_main_usage_error(
			        NULL, "unknown command '%s'%s%s%s", argv[2],
			        near ? " (did you mean '" : "", near ? near : "",
			        near ? "'?)" : "");
		}
		print_cmd_help(cmd);
		return VRT_EXIT_OK;
	}
	cmd = find_cmd(argv[1]);
	if (!cmd) {
		const char *near = argv[1][0] == '-'
		                           ? NULL
		                           : closest(argv[1], &commands[0].name,
		                                     sizeof(commands[0]),
		                                     NCOMMANDS);
		if (near)
			return vrt_main_usage_error(
			        NULL, "unknown command '%s' (did you mean '%s'?)",
			        argv[1], near);
		return vrt_main_usage_error(NULL,
		                            argv[1][0] == '-'
		                                    ? "unknown option '%s'"
		                                    : "unknown command '%s'",
		                            argv[1]);
	}
	return cmd->run(cmd, argc - 2, argv + 2);
}
