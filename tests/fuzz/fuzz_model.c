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
		const char *kv;
	} cases[] = {
	        {0, 0, 0, ""},
	        {4096, 1, 16, "fp8"},
	        {131072, 8, 64, "q4_0"},
	        {1, 3, 1, "fp8_ds_mla"},
	        {1ull << 40, 2, 1000, "auto"},
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
		b.kv_reserve_bytes = 40ull << 30;
		b.headroom_bytes = (8ull << 30) * i;
		b.context_len = cases[i].ctx;
		b.tp = cases[i].tp;
		b.block_tokens = cases[i].block;
		b.engine = (int)i % 5;
		snprintf(b.kv_dtype, sizeof(b.kv_dtype), "%s", cases[i].kv);
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
