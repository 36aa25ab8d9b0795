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
#include "gguf.h"
#include "json.h"
#include "model.h"
#include "report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void solve(const struct vrt_model *m, FILE *out)
{
	static const struct {
		uint64_t ctx, tp, block;
		const char *k, *v;
	} cases[] = {
	        {0, 0, 0, "", ""},
	        {131072, 2, 256, "q8_0", "q4_0"},
	        {1ull << 40, 8, 1, "f16", ""},
	};
	struct vrt_model_arith *a = malloc(sizeof(*a));
	struct vrt_model_budget b;
	struct vrt_json w;
	char f[512];
	size_t i;

	if (!a)
		abort();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&b, 0, sizeof(b));
		b.kv_reserve_bytes = 20ull << 30;
		b.headroom_bytes = (4ull << 30) * i;
		b.context_len = cases[i].ctx;
		b.tp = cases[i].tp;
		b.block_tokens = cases[i].block;
		b.engine = VRT_MODEL_ENGINE_LLAMACPP;
		snprintf(b.kv_dtype, sizeof(b.kv_dtype), "%s", cases[i].k);
		snprintf(b.kv_dtype_v, sizeof(b.kv_dtype_v), "%s", cases[i].v);
		vrt_model_arith(a, m, &b);
		a->explain = 1;
		vrt_report_model_text(out, a);
		vrt_json_init(&w, out);
		vrt_report_model_json(&w, a);
		vrt_json_finish(&w);
	}
	vrt_model_kv_formula(m, f, sizeof(f));
	fputs(f, out);
	free(a);
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
