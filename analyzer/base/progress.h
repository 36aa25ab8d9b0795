/*
 * Progress of long analyses: the loader and the replay report how far they
 * got through a callback; progress.c draws it as one line on stderr,
 * updated in place, when stderr is a terminal.
 *
 * The producers (load.c, replay.c) stay free of I/O: they only call
 * vrt_progress_note, which does nothing for a NULL sink. Single-threaded.
 */
#ifndef VRT_PROGRESS_H
#define VRT_PROGRESS_H

#include <stdint.h>

enum vrt_progress_stage {
	VRT_PROGRESS_READ = 1,   /* done/total: files; bytes: read so far */
	VRT_PROGRESS_SORT = 2,   /* ordering the events of every file */
	VRT_PROGRESS_REPLAY = 3, /* done/total: events */
};

/* A sink: fn(ctx, stage, done, total, bytes). Producers call it every so
 * often (every frame, every few thousand events); the sink decides how
 * often to draw. */
struct vrt_progress {
	void (*fn)(void *ctx, int stage, uint64_t done, uint64_t total,
	           uint64_t bytes);
	void *ctx;
};

static inline void vrt_progress_note(const struct vrt_progress *p, int stage,
                                     uint64_t done, uint64_t total,
                                     uint64_t bytes)
{
	if (p && p->fn)
		p->fn(p->ctx, stage, done, total, bytes);
}

/* The terminal line: "vramtrace: reading 3/12 files, 1.2 GiB of 4.8 GiB
 * (25%)" then
 * "vramtrace: replaying 45%", redrawn at most every 100 ms and only once
 * the analysis has run for half a second, so quick ones print nothing. */
struct vrt_progress_term {
	struct vrt_progress sink; /* pass &sink to the producers */
	int64_t start_ns, last_ns;
	int shown; /* a line is on the terminal now */
	uint64_t total_bytes; /* what reading will read (0: unknown), set
	                       * by the caller: "1.2 GiB of 4.8 GiB" */
};

/* Sets up pt; its sink stays inert (fn NULL) unless stderr is a
 * terminal. */
void vrt_progress_init(struct vrt_progress_term *pt);

/* Erases the line, if one is shown, before other output goes to stderr;
 * drawing resumes at the next note. */
void vrt_progress_clear(struct vrt_progress_term *pt);

#endif /* VRT_PROGRESS_H */
