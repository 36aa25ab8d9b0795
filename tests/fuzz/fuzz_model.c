/*
 * Fuzz target for the model description: the input is a config.json's
 * bytes. It is read by vrt_model_config_parse and, when it parses,
 * solved against budgets that cross every branch of the arithmetic (no
 * context, a short and a long one, KV blocks, tensor-parallel copies,
 * quantized KV types, MLA's fp8 layout) and printed in full (--explain's
 * text and the JSON object) into a memory stream. The contract under
 * test: any input gives an error message or a description, never a
 * crash, an out-of-bounds access or undefined behaviour.
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer) as fuzz_model,
 * and with VRT_FUZZ_REPLAY as a plain program that runs each file named
 * on its command line once (the corpus replay of the default suite: the
 * published configs of tests/data). Single-threaded, no state kept
 * across inputs.
 */
#include "model_solve.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void solve(const struct vrt_model *m, FILE *out)
{
	static const struct solve_case cases[] = {
	        {0, 0, 0, "", "", 0},
	        {4096, 1, 16, "fp8", "", 1},
	        {131072, 8, 64, "q4_0", "", 2},
	        {1, 3, 1, "fp8_ds_mla", "", 3},
	        {1ull << 40, 2, 1000, "auto", "", 4},
	};

	solve_cases(m, out, cases, sizeof(cases) / sizeof(cases[0]),
	            40ull << 30, 8ull << 30);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vrt_model *m = malloc(sizeof(*m));
	char msg[600], *buf = NULL;
	size_t len = 0;
	FILE *out;

	if (!m)
		abort();
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	if (!vrt_model_config_parse(m, (const char *)data, size, msg,
	                            sizeof(msg)))
		solve(m, out);
	else if (!msg[0])
		abort(); /* an error always says what */
	fclose(out);
	free(buf);
	free(m);
	return 0;
}

#ifdef VRT_FUZZ_REPLAY
/* Runs each file named on the command line once. */
int main(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		size_t n;
		if (!f) {
			fprintf(stderr, "fuzz_model: %s: cannot open\n",
			        argv[i]);
			rc = 1;
			continue;
		}
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, n);
	}
	return rc;
}
#endif
