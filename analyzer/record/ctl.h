/*
 * The client side of the control endpoint: finding the UNIX sockets of a
 * run ("<run dir>/<pid>.ctl") or of one process, sending one command line
 * and reading the one-line answer, and reading a `status` answer.
 *
 * The protocol (served by the preload; control_proto.h is its one
 * definition): one command per connection; the client writes one line
 * ("start", "stop", "mark LABEL", "flush", "status"), the server answers
 * one line ("ok ...", "error MESSAGE", or for status one JSON object) and
 * closes. The server admits the same uid or root only.
 *
 * Used by `vramtrace ctl` and `vramtrace live`. Single-threaded; no
 * globals. Answers are untrusted input: lengths are capped and the JSON is
 * parsed defensively.
 */
#ifndef VRT_CTL_H
#define VRT_CTL_H

#include <stddef.h>
#include <stdint.h>

/* Connecting and reading the answer each give up after this long. */
#define VRT_CTL_TIMEOUT_MS 2000
/* Longest answer accepted (a status of many devices fits easily). */
#define VRT_CTL_MAX_ANSWER (256 * 1024)

/* One traced process's control socket. */
struct vrt_ctl_target {
	uint64_t pid;
	char path[4096];
};

/* Outcome of vrt_ctl_request. */
enum vrt_ctl_result {
	VRT_CTL_ANSWERED = 0, /* *answer holds the line */
	VRT_CTL_GONE = 1,     /* nobody listens: the process is gone */
	VRT_CTL_DENIED = 2,   /* the socket refused us (another user's) */
	VRT_CTL_TIMEOUT = 3,  /* no connection or no answer in time */
	VRT_CTL_FAILED = 4,   /* anything else; see the message */
	VRT_CTL_UNTRUSTED = 5, /* refused: the directory, the socket file or
	                        * the process listening is not ours */
};

/*
 * Every "<pid>.ctl" of directory dir, in pid order, into *targets
 * (malloc'd; *n may be 0). Returns 0, or -1 with "<reason>" in err (the
 * directory cannot be read, or is not ours or is writable by others).
 */
int vrt_ctl_list_dir(const char *dir, struct vrt_ctl_target **targets,
                     size_t *n, char *err, size_t errsz);

/*
 * The run directory of process pid: VRAMTRACE_OUT from its environment
 * (relative to its working directory), else the preload's default
 * "vramtrace-run-<pid>" in its working directory (or, for a child forked
 * after its parent chose the default, the nearest ancestor's whose
 * directory exists). Returns 0, or -1 with "<reason>" in err (no such
 * process, not readable, or not traced: its memory map, when readable,
 * holds no libvramtrace.so).
 */
int vrt_ctl_run_dir(uint64_t pid, char *dir, size_t dirsz, char *err,
                    size_t errsz);

/*
 * Connects to socket path, writes line plus '\n', reads one line (without
 * its newline; NUL-terminated, malloc'd into *answer) within timeout_ms
 * for the connection and again for the answer. On anything but
 * VRT_CTL_ANSWERED, err holds a short reason ("connection refused").
 * Refuses (VRT_CTL_UNTRUSTED) a socket whose directory is not ours or is
 * writable by others, a socket file not ours, or a listening process of
 * another uid than ours or root's.
 */
enum vrt_ctl_result vrt_ctl_request(const char *path, const char *line,
                                    int timeout_ms, char **answer, char *err,
                                    size_t errsz);

#define VRT_CTL_MAX_DEVICES 16
#define VRT_CTL_MAX_PHASES  32

struct vrt_ctl_device {
	int64_t id;      /* ordinal as the process sees it */
	char vendor[16]; /* "cuda", "hip" */
	uint64_t live_bytes;
	uint64_t total_bytes; /* the device's capacity; 0 unknown */
	size_t nphases;
	struct {
		char name[32];
		uint64_t bytes;
	} phases[VRT_CTL_MAX_PHASES];
};

/* A parsed `status` answer. */
struct vrt_ctl_status {
	uint64_t pid, ppid;
	int recording; /* 1 "recording", 0 "standby" */
	char state[32];
	char trace[4096]; /* "" when null */
	uint64_t events, dropped, inflight, ooms, pinned_bytes;
	size_t ndev;
	struct vrt_ctl_device dev[VRT_CTL_MAX_DEVICES];
};

/* Parses a status answer; missing numbers read as 0, devices and phases
 * past the caps are dropped. Returns 0, or -1 (not a JSON object, or no
 * "pid" / "state") with the reason in err. */
int vrt_ctl_parse_status(const char *json, struct vrt_ctl_status *st, char *err,
                         size_t errsz);

#endif /* VRT_CTL_H */
