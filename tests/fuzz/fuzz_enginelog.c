/*
 * Fuzz target for the engine-log reader and the log-only path downstream
 * of it (`vramtrace analyze --log FILE` without a trace): the input is a
 * log file's bytes. It is read as the command reads it (vrt_enginelog_read
 * on a file descriptor: line splitting, the line cap, paste noise, wrapped
 * lines), the run it describes is built (logrun.c), checked and diagnosed,
 * and every report format the log-only path offers is written. The
 * contract under test is "any bytes: a report, never a crash, an
 * out-of-bounds access or undefined behaviour", and the JSON report of any
 * log parses as JSON (a log's bytes reach it as strings: model names,
 * commands, error text).
 *
 * Built two ways: with libFuzzer (clang -fsanitize=fuzzer) as
 * fuzz_enginelog, and with VRT_FUZZ_REPLAY as a plain program that runs
 * each file (or each file of each directory) named on its command line once
 * (the corpus replay of the default test suite, over tests/data/logs too).
 * Single-threaded; the only state kept across inputs is the sink
 * stream.
 */
#include "sink.h"
#include "diagnose/diagnose.h"
#include "enginelog/enginelog.h"
#include "enginelog/logcheck.h"
#include "enginelog/logrun.h"
#include "report/report.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The bytes as a file the reader opens by name, as the command does. */
static int as_file(const uint8_t *data, size_t size, char *path, size_t n)
{
	int fd = memfd_create("fuzz-log", MFD_CLOEXEC);
	size_t off = 0;

	if (fd < 0)
		return -1;
	while (off < size) {
		ssize_t w = write(fd, data + off, size - off);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	snprintf(path, n, "/proc/self/fd/%d", fd);
	return fd;
}

/* The JSON report into memory, then parsed: abort when it is no JSON. */
static void json_checked(const struct vrt_trace *t,
                         const struct vrt_replay *r,
                         const struct vrt_diagnosis *dg,
                         const struct vrt_logcheck *lc)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	json_error_t e;

	if (!m)
		return;
	vrt_report_json_write(m, t, r, dg, lc);
	if (fclose(m)) {
		free(buf);
		return;
	}
	json_t *j = json_loadb(buf, len, 0, &e);
	if (!j) {
		fprintf(stderr, "fuzz_enginelog: the JSON report does not parse: "
		                "%s (line %d, column %d)\n",
		        e.text, e.line, e.column);
		abort();
	}
	json_decref(j);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *sink;
	struct vrt_enginelog *log = calloc(1, sizeof(*log));
	struct vrt_logrun *lr = calloc(1, sizeof(*lr));
	struct vrt_logcheck *lc = calloc(1, sizeof(*lc));
	struct vrt_diag_log *dl = calloc(1, sizeof(*dl));
	struct vrt_diagnosis *dg = malloc(sizeof(*dg));
	struct vrt_enginelog_opts o = {0, 0};
	char path[64], err[300];
	int fd = -1, read_ok = 0;

	if (!sink)
		sink = fuzz_sink();
	if (!sink)
		abort();
	if (!log || !lr || !lc || !dl || !dg)
		goto out;
	fd = as_file(data, size, path, sizeof(path));
	if (fd < 0)
		goto out;
	/* A fixed "now" (2026-03-01 UTC), so a replay is reproducible. */
	o.ref_wall_ns = INT64_C(1772323200) * 1000000000;
	if (vrt_enginelog_read(log, path, &o, err, sizeof(err))) {
		if (!err[0] || !memchr(err, 0, sizeof(err)))
			abort();
		goto out;
	}
	read_ok = 1;
	/* What the command refuses before building a run. */
	if (!log->lines || log->bytes <= log->lines ||
	    log->binary_lines * 2 > log->lines)
		goto out;
	if (vrt_logcheck_logonly_diagnose(lc, lr, dl, dg, log, "fuzz.log", NULL,
	                                  VRT_DIAG_MARGIN_PCT))
		goto out;
	if (!vrt_diagnose_verdict_name(dg->verdict))
		abort();
	vrt_report_text_write(sink, &lr->t, &lr->r, dg, lc);
	vrt_report_html_write(sink, &lr->t, &lr->r, dg, lc);
	json_checked(&lr->t, &lr->r, dg, lc);
	fflush(sink);
out:
	if (fd >= 0)
		close(fd);
	if (read_ok)
		vrt_enginelog_free(log);
	if (lr)
		vrt_logrun_free(lr);
	free(log);
	free(lr);
	free(lc);
	free(dl);
	free(dg);
	return 0;
}

#ifdef VRT_FUZZ_REPLAY
#include "replay_main.h"

int main(int argc, char **argv)
{
	return replay_main("fuzz_enginelog", argc, argv);
}
#endif
