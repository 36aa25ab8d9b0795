/*
 * Fuzz target for trace decoding and everything downstream of it: the
 * input is one trace file's bytes (zstd frames of records). It is opened
 * with vrt_load_open_buffer and streamed through the analyzer's one pass
 * (vrt_run_pass: attributed to phases with the built-in rules, replayed),
 * diagnosed, planned (`vramtrace plan`'s default grid), and written in
 * every report format to a sink that keeps nothing (sink.h), so a
 * malformed trace that decodes reaches each consumer of the trace as
 * `vramtrace analyze` would. The contract under test is "any input: a
 * status or a report, never a crash, an out-of-bounds access or
 * undefined behaviour".
 *
 * An input that does not start with the zstd magic is taken twice: as is
 * (the loader must refuse it) and as the content of one zstd frame the
 * target compresses itself, so mutations of raw records reach the record
 * decoder instead of failing the frame checksum. The corpus holds both
 * kinds: whole trace files and decompressed record streams.
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer) as fuzz_trace,
 * and with VRT_FUZZ_REPLAY as a plain program that runs each file named on
 * its command line once (the corpus replay of the default test suite).
 * Single-threaded; the only state kept across inputs is the sink
 * stream and the rules.
 */
#include "sink.h"
#include "replay/attrib.h"
#include "diagnose/diagnose.h"
#include "load/load.h"
#include "plan/plan.h"
#include "replay/replay.h"
#include "report/report.h"
#include "rules.h"
#include "replay/run.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* `vramtrace plan` on the trace: its neighbourhood predicted, every
 * format written, one row explained. */
static void plan_one(FILE *sink, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	struct vrt_plan *p = calloc(1, sizeof(*p));
	struct vrt_plan_explain *ex = calloc(1, sizeof(*ex));
	struct vrt_plan_row *row = calloc(1, sizeof(*row));
	char msg[256];

	if (!p || !ex || !row)
		goto out;
	vrt_plan_measure(p, t, r, NULL);
	vrt_plan_default_grid(p);
	if (vrt_plan_run(p, msg, sizeof(msg)))
		goto out;
	vrt_plan_predict(p, p->rec, p->rec_have, row, ex);
	vrt_report_plan_text(sink, t, p, "fuzz", row, ex, 0);
	vrt_report_plan_json(sink, t, p, "fuzz", row, ex, 0);
	vrt_report_plan_csv(sink, p);
out:
	if (p)
		vrt_plan_free(p);
	free(p);
	free(ex);
	free(row);
}

static void run_one(const uint8_t *data, size_t size)
{
	static FILE *sink;
	static struct vrt_rules *rules;
	struct vrt_trace t;
	struct vrt_replay r;
	struct vrt_load_error err;
	struct vrt_diagnosis *dg = NULL;

	if (!sink)
		sink = fuzz_sink();
	if (!rules)
		rules = vrt_rules_new_builtin();
	if (!sink || !rules)
		abort();
	memset(&t, 0, sizeof(t));
	memset(&r, 0, sizeof(r));
	memset(&err, 0, sizeof(err));
	enum vrt_load_status st =
	        vrt_load_open_buffer(&t, "fuzz.vtrace", data, size, &err);
	if (st != VRT_LOAD_OK) {
		/* A failure names its status and says what went wrong. */
		if (st != err.status || !err.msg[0] ||
		    !memchr(err.msg, 0, sizeof(err.msg)))
			abort();
		goto out;
	}
	/* Every site, so the folded report has what it needs. */
	r.top_sites = SIZE_MAX;
	switch (vrt_run_pass(&t, rules, &r, &err)) {
	case VRT_RUN_PASS_OK:
		break;
	case VRT_RUN_PASS_LOAD:
		/* A data error mid-stream is reported like one at open. */
		if (!err.status || !err.msg[0] ||
		    !memchr(err.msg, 0, sizeof(err.msg)))
			abort();
		goto out;
	default:
		goto out;
	}
	dg = malloc(sizeof(*dg));
	if (!dg)
		goto out;
	vrt_diagnose_run(dg, &t, &r, NULL);
	vrt_report_text_write(sink, &t, &r, dg, NULL);
	vrt_report_json_write(sink, &t, &r, dg, NULL);
	vrt_report_html_write(sink, &t, &r, dg, NULL);
	vrt_report_perfetto_write(sink, &t, &r, NULL);
	(void)vrt_report_folded_write(sink, &t, &r);
	/* Reports without a diagnosis take other paths. */
	vrt_report_text_write(sink, &t, &r, NULL, NULL);
	plan_one(sink, &t, &r);
	fflush(sink);
out:
	free(dg);
	vrt_replay_free(&r);
	vrt_load_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t magic[4] = {0x28, 0xb5, 0x2f, 0xfd};

	run_one(data, size);
	if (size >= sizeof(magic) && !memcmp(data, magic, sizeof(magic)))
		return 0;
	size_t cap = ZSTD_compressBound(size);
	uint8_t *z = malloc(cap);
	if (!z)
		return 0;
	size_t n = ZSTD_compress(z, cap, data, size, 1);
	if (!ZSTD_isError(n))
		run_one(z, n);
	free(z);
	return 0;
}

#ifdef VRT_FUZZ_REPLAY
#include "replay_main.h"

int main(int argc, char **argv)
{
	return replay_main("fuzz_trace", argc, argv);
}
#endif
