/*
 * progress.c — the progress line of long analyses on stderr (see
 * progress.h). Only when stderr is a terminal (and not TERM=dumb, which
 * cannot erase a line): pipes, files and CI logs never see it, and stdout
 * never does. The line is rewritten in place ("\r", text, erase to end of
 * line) at most every VRT_PROGRESS_PERIOD_NS, starting only after
 * VRT_PROGRESS_DELAY_NS so a quick analysis prints nothing at all.
 * Single-threaded; the state lives in the caller's struct.
 */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "text.h"

#define VRT_PROGRESS_PERIOD_NS 100000000ll /* 10 redraws a second */
#define VRT_PROGRESS_DELAY_NS  500000000ll

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void draw(void *ctx, int stage, uint64_t done, uint64_t total,
                 uint64_t bytes)
{
	struct vrt_progress_term *pt = ctx;
	int64_t now = now_ns();
	char b[32];

	if (now - pt->start_ns < VRT_PROGRESS_DELAY_NS ||
	    (pt->shown && now - pt->last_ns < VRT_PROGRESS_PERIOD_NS))
		return;
	pt->last_ns = now;
	pt->shown = 1;
	switch (stage) {
	case VRT_PROGRESS_READ:
		vrt_text_bytes_in(b, sizeof(b), (double)bytes, 1, VRT_UNIT_B,
		                  VRT_UNIT_TIB);
		fprintf(stderr,
		        "\rvramtrace: reading %" PRIu64 "/%" PRIu64
		        " file%s, %s",
		        done, total, total == 1 ? "" : "s", b);
		if (pt->total_bytes >= bytes && pt->total_bytes)
			fprintf(stderr, " of %s (%d%%)",
			        vrt_text_bytes_in(b, sizeof(b),
			                          (double)pt->total_bytes, 1,
			                          VRT_UNIT_B, VRT_UNIT_TIB),
			        (int)(bytes * 100 / pt->total_bytes));
		fputs("\033[K", stderr);
		break;
	case VRT_PROGRESS_SORT:
		fprintf(stderr, "\rvramtrace: ordering %" PRIu64
		                " events\033[K",
		        total);
		break;
	case VRT_PROGRESS_REPLAY:
		fprintf(stderr, "\rvramtrace: replaying %d%%\033[K",
		        total ? (int)(done * 100 / total) : 100);
		break;
	}
	fflush(stderr);
}

void vrt_progress_init(struct vrt_progress_term *pt)
{
	const char *term = getenv("TERM");

	memset(pt, 0, sizeof(*pt));
	pt->start_ns = now_ns();
	if (!isatty(STDERR_FILENO) || (term && !strcmp(term, "dumb")))
		return;
	pt->sink.fn = draw;
	pt->sink.ctx = pt;
}

void vrt_progress_clear(struct vrt_progress_term *pt)
{
	if (!pt->shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	pt->shown = 0;
}
