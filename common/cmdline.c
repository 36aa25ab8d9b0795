/*
 * cmdline.c — the engine a command line starts (cmdline.h). The names are
 * analyzer/diagnose/engine.c's table names.
 */
#include "cmdline.h"

#include <string.h>

#include "pathname.h"

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* A module or program name: "vllm", "vllm.entrypoints.openai.api_server",
 * "llama-server", "text_generation_server.cli" ... */
static const char *engine_of_name(const char *n)
{
	static const struct {
		const char *prefix;
		const char *engine;
	} names[] = {
	        {"vllm", "vllm"},
	        {"sglang", "sglang"},
	        {"llama-", "llama.cpp"},
	        {"llama_", "llama.cpp"},
	        {"llama.cpp", "llama.cpp"},
	        {"ollama", "ollama"},
	        {"text-generation-", "tgi"},
	        {"text_generation_", "tgi"},
	        {"trtllm", "trtllm"},
	        {"tensorrt_llm", "trtllm"},
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t len = strlen(names[i].prefix);
		char last = names[i].prefix[len - 1];
		if (!starts(n, names[i].prefix))
			continue;
		/* "vllm" itself, "vllm.x", "vllm-x", "vllm_x": not
		 * "vllmx". */
		if (last == '-' || last == '_' || n[len] == '\0' ||
		    n[len] == '.' || n[len] == '-' || n[len] == '_' ||
		    n[len] == ' ')
			return names[i].engine;
	}
	return NULL;
}

int vrt_cmdline_is_worker(char *const *argv, size_t argc)
{
	for (size_t i = 1; i < argc; i++) {
		if (!argv[i])
			continue;
		if (!strcmp(argv[i], "--multiprocessing-fork"))
			return 1;
		/* python -c "from multiprocessing.spawn import spawn_main;
		 * spawn_main(...)" and the forkserver's
		 * "from multiprocessing.forkserver import main; ..." */
		if (!strcmp(argv[i], "-c") && i + 1 < argc && argv[i + 1] &&
		    strstr(argv[i + 1], "from multiprocessing."))
			return 1;
	}
	return 0;
}

const char *vrt_cmdline_engine(char *const *argv, size_t argc)
{
	const char *prog, *e;

	if (!argc || !argv[0] || vrt_cmdline_is_worker(argv, argc))
		return NULL;
	prog = vrt_pathname_base_or_empty(argv[0]);
	if ((e = engine_of_name(prog)))
		return e;
	if (!starts(prog, "python"))
		return NULL;
	/* python [opts] -m MODULE ... or python [opts] SCRIPT ... */
	for (size_t i = 1; i < argc && argv[i]; i++) {
		if (!strcmp(argv[i], "-m") && i + 1 < argc && argv[i + 1])
			return engine_of_name(argv[i + 1]);
		if (starts(argv[i], "-m") && argv[i][2])
			return engine_of_name(argv[i] + 2);
		if (!strcmp(argv[i], "-c"))
			return NULL; /* code on the command line */
		if (argv[i][0] != '-')
			return engine_of_name(vrt_pathname_base_or_empty(argv[i]));
	}
	return NULL;
}
