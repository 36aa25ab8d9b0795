/*
 * Fuzz target for the GGUF reader (gguf.c): the input is the head of a
 * GGUF file. It is parsed twice, as a whole file and as the first bytes
 * of a longer one (the two ways vrt_model_read calls it), and when it
 * parses, solved against budgets that reach every branch of the
 * arithmetic on what a GGUF can describe (no context, a long one, KV
 * blocks, tensor-parallel copies, quantized KV types) and printed in full
 * (--explain's text and the JSON object) into a memory stream. The
 * contract under test: any input gives an error message or a
 * description, never a crash, an out-of-bounds access, a leak or
 * undefined behaviour.
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer) as fuzz_gguf,
 * and with VRT_FUZZ_REPLAY as a plain program that runs each file (or
 * each file of each directory) named on its command line once: the
 * corpus replay of the default suite, over the files
 * tests/data/mkgguf.py writes at build time. Single-threaded, no state
 * kept across inputs.
 */
#include "model/gguf.h"
#include "model_solve.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void solve(const struct vrt_model *m, FILE *out)
{
	static const struct solve_case cases[] = {
	        {0, 0, 0, "", "", VRT_MODEL_ENGINE_LLAMACPP},
	        {131072, 2, 256, "q8_0", "q4_0", VRT_MODEL_ENGINE_LLAMACPP},
	        {1ull << 40, 8, 1, "f16", "", VRT_MODEL_ENGINE_LLAMACPP},
	};

	solve_cases(m, out, cases, sizeof(cases) / sizeof(cases[0]),
	            20ull << 30, 4ull << 30);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vrt_model *m = malloc(sizeof(*m));
	char msg[600], *buf = NULL;
	size_t len = 0;
	FILE *out;
	int truncated;

	if (!m)
		abort();
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	for (truncated = 0; truncated < 2; truncated++) {
		msg[0] = '\0';
		if (!vrt_gguf_parse(m, data, size, truncated, msg, sizeof(msg)))
			solve(m, out);
		else if (!msg[0])
			abort(); /* an error always says what */
	}
	fclose(out);
	free(buf);
	free(m);
	return 0;
}

#ifdef VRT_FUZZ_REPLAY
#include "replay_main.h"

int main(int argc, char **argv)
{
	return replay_main("fuzz_gguf", argc, argv);
}
#endif
