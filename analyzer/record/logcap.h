/*
 * The server's own output, kept by `record`: the command's stdout and
 * stderr still reach record's stdout and stderr unchanged, and are also
 * written to DIR/output.log, one line each with the UTC time record read
 * it and the stream:
 *
 *   2026-12-02T10:15:00.123456Z out INFO 12-02 10:15:00 [...] ...
 *   2026-12-02T10:15:00.123470Z err Traceback (most recent call last):
 *
 * Bounded: output.log keeps the first quarter of --log-max and the last
 * part, with one line saying what was cut between them:
 *
 *   <time> out --- vramtrace: N bytes (M lines) of output cut here: ...
 *
 * Never blocking the server: a copy thread moves the command's bytes to
 * record's stdout/stderr (with splice(2) for a pipe: no copy through user
 * space) and hands a copy (tee(2)) to a log thread through a pipe it never
 * waits on; when the log thread does not keep up (a slow disk, a busy
 * CPU) or cannot write (a full disk), what it could not take is counted
 * and marked in the log ("--- vramtrace: N bytes of output dropped here"),
 * and the command never waits for it.
 *
 * A stream that is a terminal is given to the command as a pseudo-terminal
 * of its own (a second one for stderr), so engines keep their terminal
 * behaviour — colours, line buffering — and the two streams stay apart; a
 * stream that is not a terminal is a pipe, as it would have been.
 *
 * Threads: record's main thread calls these in order (open, child in the
 * forked child, start, finish); the copy and writer threads are private
 * and run with every signal blocked.
 */
#ifndef VRT_LOGCAP_H
#define VRT_LOGCAP_H

#include <stddef.h>
#include <stdint.h>

#define VRT_LOGCAP_NAME        "output.log"
#define VRT_LOGCAP_MAX_DEFAULT (32ull << 20) /* --log-max default */
#define VRT_LOGCAP_MAX_MIN     (64ull << 10)

struct vrt_logcap;

struct vrt_logcap_stats {
	uint64_t bytes_in;      /* bytes the command wrote */
	uint64_t lines_in;      /* lines it wrote */
	uint64_t bytes_written; /* size of output.log */
	uint64_t bytes_cut;     /* left out between head and tail */
	uint64_t bytes_dropped; /* the log did not keep up (slow disk, busy CPU) */
	int write_errno;        /* the first failed write, 0 none */
};

/*
 * Creates DIR/output.log (new, 0600) and the pipes or pseudo-terminals
 * for the command's stdout and stderr. max_bytes bounds the file (0: the
 * default). Returns 0, or -1 with "what: reason" in err (record then runs
 * the command without keeping its output).
 */
int vrt_logcap_open(struct vrt_logcap **lc, const char *dir,
                    uint64_t max_bytes, char *err, size_t errn);

/* In the forked child, before exec: the command's stdout and stderr
 * become the capture's. Async-signal-safe. */
void vrt_logcap_child(const struct vrt_logcap *lc);

/* In record after fork: closes the child's ends and starts copying.
 * Returns 0, or -1 with the reason in err (the command's output then
 * goes nowhere: record says so). */
int vrt_logcap_start(struct vrt_logcap *lc, char *err, size_t errn);

/*
 * Once the command's tree was waited for: copies what is still in the
 * pipes (processes left running get at most a second), stops the
 * threads, writes the kept tail and the cut line, closes output.log and
 * frees lc. discard removes output.log instead (the command never ran).
 * stats (may be NULL) gets the numbers.
 */
void vrt_logcap_finish(struct vrt_logcap *lc, int discard,
                       struct vrt_logcap_stats *stats);

/* "64M", "512K", "1G", "1048576" as bytes; -1 when not a size. */
int vrt_logcap_parse_size(const char *s, uint64_t *bytes);

#endif /* VRT_LOGCAP_H */
