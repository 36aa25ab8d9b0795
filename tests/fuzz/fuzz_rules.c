/*
 * Fuzz target for the rules parser and matcher (common/rules.c): the input
 * is a rules file; it is parsed in front of the built-in rules and, when it
 * parses, a few fixed frames are matched. The contract under test is "never
 * crash, never read out of bounds, errors are one 'name:line: ...' line".
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer) as fuzz_rules,
 * and with VRT_FUZZ_REPLAY as a plain program that runs each file named on
 * its command line once (the corpus replay of the default test suite).
 */
#include "rules.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct vrt_rule_frame frames[] = {
	        {1, "GPUModelRunner.load_model",
	         "/x/vllm/v1/worker/gpu_model_runner.py"},
	        {1, "load_model", "/x/a.py"},
	        {0, "llama_context::decode(llama_batch const&)",
	         "/l/libllama.so"},
	        {0, "at::cuda::(anonymous namespace)::getNewWorkspace()", NULL},
	        {0, NULL, NULL},
	};
	struct vrt_rules *r = vrt_rules_new_builtin();
	if (!r)
		return 0;
	char err[256];
	int n = vrt_rules_parse(r, (const char *)data, size, "fuzz", err,
	                        sizeof(err));
	if (n < 0) {
		if (strncmp(err, "fuzz:", 5) != 0 || strchr(err, '\n'))
			abort();
	} else {
		int m = vrt_rules_match_stack(
		        r, frames, sizeof(frames) / sizeof(frames[0]));
		if (!vrt_rules_phase_name(r, vrt_rules_phase(r, m)))
			abort();
		for (int i = 0; i < n; i++) {
			if (!vrt_rules_describe(r, i) ||
			    !vrt_rules_origin(r, i))
				abort();
		}
	}
	vrt_rules_free(r);
	return 0;
}

#ifdef VRT_FUZZ_REPLAY
int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			fprintf(stderr, "fuzz_rules: %s: cannot open\n",
			        argv[i]);
			return 1;
		}
		static uint8_t buf[1 << 20];
		size_t n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return 0;
}
#endif
