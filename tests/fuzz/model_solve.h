/*
 * What the model fuzz targets do with a description that parsed: solve
 * it against each budget of a list (contexts, tensor-parallel copies, KV
 * blocks, KV types, engines) and print it in full (--explain's text and
 * the JSON object) and its KV formula into out. Included once by each
 * target; single-threaded.
 */
#ifndef VRT_FUZZ_MODEL_SOLVE_H
#define VRT_FUZZ_MODEL_SOLVE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/json.h"
#include "model/model.h"
#include "model/model_config.h"
#include "report/report.h"

struct solve_case {
	uint64_t ctx, tp, block;
	const char *kv_k, *kv_v; /* the engine's KV types ("" none) */
	int engine;              /* enum vrt_model_engine */
};

static void solve_cases(const struct vrt_model *m, FILE *out,
                        const struct solve_case *cases, size_t n,
                        uint64_t reserve, uint64_t headroom_step)
{
	struct vrt_model_arith *a = malloc(sizeof(*a));
	struct vrt_model_budget b;
	struct vrt_json w;
	char f[512];
	size_t i;

	if (!a)
		abort();
	for (i = 0; i < n; i++) {
		memset(&b, 0, sizeof(b));
		b.kv_reserve_bytes = reserve;
		b.headroom_bytes = headroom_step * i;
		b.context_len = cases[i].ctx;
		b.tp = cases[i].tp;
		b.block_tokens = cases[i].block;
		b.engine = cases[i].engine;
		snprintf(b.kv_dtype, sizeof(b.kv_dtype), "%s", cases[i].kv_k);
		snprintf(b.kv_dtype_v, sizeof(b.kv_dtype_v), "%s",
		         cases[i].kv_v);
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

#endif /* VRT_FUZZ_MODEL_SOLVE_H */
