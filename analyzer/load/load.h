/*
 * Loading traces: files, zstd frames and records in; a time-ordered stream
 * of events plus the process, device, string, frame, stack and phase
 * tables out. The stream is read in pieces (vrt_load_open, then
 * vrt_load_next until it delivers nothing): there is no whole-stream
 * array, so memory is bounded by what is in flight, not by the run.
 *
 * load.c is the only analyzer file that opens trace files or calls zstd.
 * Everything it reads is untrusted: every length is bounds-checked, sizes
 * announced by the input are never used to allocate, and no input can make
 * it assert or crash. Single-threaded; no globals.
 */
#ifndef VRT_LOAD_H
#define VRT_LOAD_H

#include <stddef.h>
#include <stdint.h>

/* Stable values: tests and callers may rely on them. */
enum vrt_load_status {
	VRT_LOAD_OK = 0,
	VRT_LOAD_ERR_IO = 1,         /* cannot open or read a path */
	VRT_LOAD_ERR_EMPTY = 2,      /* zero-byte file */
	VRT_LOAD_ERR_NOT_ZSTD = 3,   /* bytes that are not a zstd frame */
	VRT_LOAD_ERR_CORRUPT = 4,    /* a complete frame that fails to decode */
	VRT_LOAD_ERR_NO_FRAME = 5,   /* not even one complete frame */
	VRT_LOAD_ERR_NO_HEADER = 6,  /* first record is not a HEADER */
	VRT_LOAD_ERR_BAD_MAGIC = 7,  /* HEADER magic mismatch */
	VRT_LOAD_ERR_VERSION = 8,    /* format version newer than ours */
	VRT_LOAD_ERR_RECORD = 9,     /* malformed record in a complete frame */
	VRT_LOAD_ERR_NO_TRACES = 10, /* directory without *.vtrace files */
	VRT_LOAD_ERR_NOMEM = 11,     /* out of memory */
	VRT_LOAD_ERR_TOO_LARGE = 12, /* a frame decodes past the size cap */
};

/* Kinds of events (what record they came from). */
enum vrt_ev_kind {
	VRT_EV_ALLOC = 1,
	VRT_EV_FREE = 2,
	VRT_EV_MAP = 3,
	VRT_EV_UNMAP = 4,
	VRT_EV_FAIL = 5,
	VRT_EV_MEMINFO = 6,
	VRT_EV_MARK = 7,     /* extra = label (string index) */
	VRT_EV_NET = 8,      /* aux = enum vrt_net_op, addr = fd, size = arg,
	                        extra = enum vrt_net_kind (0: not written) |
	                        the path (string index, 0: none) << 2,
	                        phase = HTTP/2 stream, api = VRT_NET_F_*
	                        flags, stack = val (REQ_END inferred: the
	                        lag in microseconds; REQ_BEGIN: the path's
	                        hash; ACCEPT: the peer's pid): read them with
	                        the vrt_net_* accessors below */
	VRT_EV_PROC = 9,     /* aux = enum vrt_proc_op, addr = pid,
	                        extra = text (string index) */
	VRT_EV_REQUEST = 10, /* aux = 1 begin / 2 end, addr = request id */
	VRT_EV_SAMPLE = 11,  /* extra = index into vrt_trace.samples */
	VRT_EV_SNAPSHOT = 12, /* aux = 1 begin / 2 end (this process) */
	VRT_EV_REPEAT = 13,   /* folded alloc+free pairs (REPEAT record):
	                         api = alloc api, device, size, aux, stack,
	                         phase as an ALLOC; addr = number of pairs;
	                         extra = free api */
	VRT_EV_PREFREE = 14,  /* a free of memory held before an attach
	                         (PREFREE record): addr, size = the bytes the
	                         driver said it held, device where */
};

/* The appended fields of a NET event (trace_format.h), where the loader
 * keeps them in struct vrt_event. */
#define vrt_net_kind(e)   ((e)->extra & 3)
#define vrt_net_text(e)   ((e)->extra >> 2)
#define vrt_net_stream(e) ((e)->phase)
#define vrt_net_flags(e)  ((unsigned)(e)->api)
#define vrt_net_val(e)    ((e)->stack)

#define VRT_EV_HAVE_INFO 1 /* flags: FAIL carries the driver's free/total */
#define VRT_EV_SNAP 2 /* flags: an ALLOC of a standby snapshot, not a call;
                       * a NET ACCEPT / REQ_BEGIN or REQUEST begin of one:
                       * open at that moment, not new */
#define VRT_EV_PAST 4 /* flags: a fact kept in standby (PAST record): ts
                       * is when it happened, and it may be delivered
                       * after later events */

/*
 * One event, kept compact (64 bytes). Field use per kind (and above for
 * MARK, NET, PROC, REQUEST):
 *   ALLOC   addr, size, aux (stream/pool/flags; VMM handle is addr)
 *   FREE    addr, aux; device -1 means "the allocation's"
 *   MAP     addr, size, aux = VMM handle
 *   UNMAP   addr, size
 *   FAIL    addr, size, aux = error code, extra = index in fails[]
 *   MEMINFO addr = free bytes, size = total bytes; aux = the bytes the
 *           process held on the device then (PAST only)
 * ts is absolute CLOCK_MONOTONIC ns, shifted onto the first host's clock
 * when the run spans several hosts.
 */
struct vrt_event {
	int64_t ts;
	uint64_t addr;
	uint64_t size;
	uint64_t aux;
	uint32_t proc; /* index into vrt_trace.procs */
	uint32_t tid;
	int32_t device; /* index into vrt_trace.devices, or -1 (host/none) */
	uint32_t phase; /* index into vrt_trace.phases (0 = unattributed) */
	uint32_t extra;
	uint32_t stack;    /* index into vrt_trace.stacks (0 = no stack) */
	uint16_t api;      /* enum vrt_api */
	uint8_t kind;      /* enum vrt_ev_kind */
	uint8_t flags;     /* VRT_EV_HAVE_INFO */
	uint8_t phase_src; /* enum vrt_phase_source of phase */
};

/*
 * Stacks, shared by every file of a load: frames with the same names
 * (python: file, function, line; native: module, symbol, offset) are one
 * frame, and call paths made of the same frames are one stack, whatever
 * process recorded them. stacks[0] is the empty path; a stack's parent
 * always has a smaller index, so a forward loop sees parents first.
 */
struct vrt_frame {
	uint8_t kind;      /* enum vrt_frame_kind */
	uint32_t function; /* string index: python qualified name or native
	                      symbol; 0 unknown */
	uint32_t file;     /* string index: python file or native module */
	uint64_t line;     /* python line; 0 for native frames */
	uint64_t offset;   /* native: ip - symbol start */
	uint64_t ip;       /* native: kept only when the symbol is unknown */
};

struct vrt_stack {
	uint32_t parent; /* 0 = root */
	uint32_t frame;  /* index into vrt_trace.frames */
	uint32_t depth;  /* frames on the path, 1 for a root's child */
};

/*
 * Phases as the analyzer names them: index 0..VRT_PHASE_BUILTIN_MAX are
 * the fixed ids of trace_format.h, VRT_LOAD_PHASE_INFERRED_KV is kv_cache
 * tagged by evidence (reported "kv_cache (inferred)"),
 * VRT_LOAD_PHASE_BEFORE_ATTACH what an attach found held, custom names from
 * PHASE records or rules follow. At most VRT_LOAD_MAX_PHASES; names past
 * that share the last index, "other".
 */
#define VRT_LOAD_PHASE_INFERRED_KV      8
#define VRT_LOAD_PHASE_INFERRED_KV_NAME "kv_cache (inferred)"
/* What a process held before `vramtrace attach` and the snapshot could not
 * attribute (trace_format.h's VRT_BEFORE_ATTACH_PHASE): the process's own,
 * loading's, never a request's. */
#define VRT_LOAD_PHASE_BEFORE_ATTACH    9
#define VRT_LOAD_MAX_PHASES             32

struct vrt_failinfo {
	uint64_t free_bytes;
	uint64_t total_bytes;
};

struct vrt_device {
	char *host;      /* host of the first process that named it */
	int vendor;      /* enum vrt_vendor, 0 when unknown */
	int64_t ordinal; /* as the first process that named it saw it */
	uint64_t total_bytes;
	int have_total;
	char *name;        /* NULL when no DEVICE record named it */
	char uuid[64];     /* "GPU-xxxxxxxx-...", or "" */
	unsigned host_idx; /* order of first appearance of its host */
	uint64_t pid;      /* the first process that named it */
	/* Processes of the run disagree about this card: one names it
	 * (by its UUID) with another name or capacity, or from another
	 * host. conflict says how, for people; "" when they agree. */
	char conflict[200];
};

enum vrt_exit_kind {
	VRT_EXIT_NONE = 0,
	VRT_EXIT_CODE = 1,
	VRT_EXIT_SIGNAL = 2
};

struct vrt_process {
	char *path; /* the trace file */
	uint64_t pid, ppid;
	char *host, *exe;
	char **argv;
	size_t argc;
	int64_t start_wall_ns;
	int64_t start_mono_ns; /* aligned like event timestamps */
	int has_trailer;
	int64_t end_mono_ns; /* aligned; valid when has_trailer */
	uint64_t trailer_flags, events_written, events_dropped;
	char *note;
	int truncated; /* cut inside a frame, or no TRAILER */
	int64_t trunc_offset;
	char trunc_reason[160];
	uint64_t events; /* events decoded from this file */
	int started_in_standby; /* HEADER flag VRT_HEADER_STANDBY: capture
	                         * began in standby (only kept facts before
	                         * its first snapshot) */
	int attached; /* HEADER flag VRT_HEADER_ATTACHED: `vramtrace attach`
	               * began the capture in a running process */
	int exit_kind;   /* enum vrt_exit_kind, from "<pid>.exit" */
	int exit_code;   /* exit status or signal number */
	/* How it ended in words, when no exit status was recorded but
	 * something else says (a run built from its log: logrun.h); NULL
	 * otherwise. Not owned. */
	const char *ended;
	int running;     /* no exit status, and on this host its pid still
	                  * runs with the preload: a trace still being
	                  * written (its end is no death) */
};

/*
 * Sampler readings (SAMPLE records), in the order they were read; a SAMPLE
 * event's extra is its index, and its ts, proc and device are filled in
 * when the event is delivered (devices remapped at the end of the stream).
 * DEVICE: device is an index into vrt_trace.devices; used/total are the
 *   whole device's bytes (every process); the processes on the device are
 *   sample_pids[first_pid .. first_pid + npids) as (pid, used_bytes).
 * HOST: device is -1; used = the process's RSS, total = MemAvailable,
 *   swap_total / swap_free as read.
 */
struct vrt_sample {
	int64_t ts;
	uint32_t proc;  /* index into vrt_trace.procs (who sampled) */
	uint8_t kind;   /* enum vrt_sample_kind */
	int32_t device; /* index into vrt_trace.devices, -1 for HOST */
	uint64_t used, total;
	uint64_t swap_total, swap_free;
	uint32_t first_pid, npids;
};

struct vrt_sample_pid {
	uint64_t pid, used_bytes;
};

struct vrt_progress;

struct vrt_trace {
	struct vrt_sample *samples;
	size_t nsamples, cap_samples;
	struct vrt_sample_pid *sample_pids;
	size_t nsample_pids, cap_sample_pids;
	struct vrt_failinfo *fails;
	size_t nfails, cap_fails;
	struct vrt_process *procs;
	size_t nprocs, cap_procs;
	struct vrt_device *devices;
	size_t ndevices, cap_devices;
	char **hosts; /* distinct hosts, order of first appearance */
	size_t nhosts;
	int64_t *host_shift; /* per host: ns added to its monotonic times */
	char **strs;         /* interned strings; strs[0] is NULL ("none") */
	size_t nstrs, cap_strs;
	struct vrt_frame *frames; /* frames[0]: the unknown frame */
	size_t nframes, cap_frames;
	struct vrt_stack *stacks; /* stacks[0]: the empty path */
	size_t nstacks, cap_stacks;
	char *phases[VRT_LOAD_MAX_PHASES]; /* names; see VRT_LOAD_PHASE_* */
	size_t nphases;
	void *intern;   /* the loader's state, starting with the lookup
	                 * tables of intern.h (opaque) */
	char **skipped; /* "<file>: <reason>" of files not loaded: a
	                 * directory's files that died before their first
	                 * frame, and paths that are not regular files */
	size_t nskipped, cap_skipped;
	uint32_t *device_remap; /* see vrt_load_next; NULL: none moved */
	uint64_t events_total;  /* events delivered so far (a REPEAT is one) */
	uint64_t events_late;   /* delivered after a later one (a writer
	                         * that broke its WATERMARK promise) */
	uint64_t events_held_max; /* most events read and not yet delivered
	                           * at once (what bounds memory) */
	int64_t start_ns; /* earliest HEADER start_mono_ns (aligned) */
	int64_t end_ns;   /* latest event, trailer or header time */
	/* In (set before vrt_load_paths): NULL, or a callback told how far
	 * loading got (progress.h). */
	const struct vrt_progress *progress;
};

/* Filled on failure; msg holds "<what>: <reason>" (with "at byte N"). */
struct vrt_load_error {
	enum vrt_load_status status;
	char path[4096];
	char msg[512];
};

/* Fills err (status s, path, msg "<status name>: <printf of fmt>", cut to
 * fit) and returns s: the one way this loader and the readers of other
 * input files (textfile.h) word an error. */
__attribute__((format(printf, 4, 5))) enum vrt_load_status
vrt_load_fail(struct vrt_load_error *err, enum vrt_load_status s,
              const char *path, const char *fmt, ...);

/*
 * Streaming (one pass, memory bounded by live metadata, not by events):
 *
 *   vrt_load_open(&t, paths, n, &err);          headers, first metadata
 *   while (!(st = vrt_load_next(&t, buf, cap, &n, &err)) && n)
 *           ... n events, in time order (ties: file order, then record
 *               order), indexes valid in t's tables when delivered ...
 *   (st != VRT_LOAD_OK: a data error, err filled)
 *   vrt_load_free(&t);
 *
 * Events are delivered in timestamp order across every file (a k-way merge
 * of the files; inside a file, events are released up to each WATERMARK).
 * The process, string, frame, stack and phase tables only grow while
 * events are delivered (an index never changes meaning). Device indexes
 * are assigned in order of first appearance while streaming; once
 * vrt_load_next has reported the end (*n == 0 with VRT_LOAD_OK), devices
 * are ordered by (host, ordinal) and t->device_remap[i] is the final index
 * of the device that earlier events named i (device_remap is NULL when
 * no index moved). Per-file summaries (procs[].events, truncation,
 * trailer) are complete only at the end.
 *
 * t must be zeroed (progress may be set) and holds one stream. A record
 * whose fields are malformed may be found only when its event is due, so
 * an error can come after events were delivered; every later call returns
 * it again. An event of a writer that broke its WATERMARK promise (earlier
 * than what was already delivered) is delivered as soon as it is read and
 * counted in t->events_late.
 */
enum vrt_load_status vrt_load_open(struct vrt_trace *t, char *const *paths,
                                   size_t npaths, struct vrt_load_error *err);

/* The same for one in-memory trace (tests, fuzzing); buf must outlive t's
 * stream. name is used in messages only. */
enum vrt_load_status vrt_load_open_buffer(struct vrt_trace *t,
                                          const char *name,
                                          const uint8_t *buf, size_t len,
                                          struct vrt_load_error *err);

/* Up to max next events into out; *n says how many (0: no more events). */
enum vrt_load_status vrt_load_next(struct vrt_trace *t, struct vrt_event *out,
                                   size_t max, size_t *n,
                                   struct vrt_load_error *err);

/* Releases everything t holds (safe after any failure). */
void vrt_load_free(struct vrt_trace *t);

/* Events the run's processes made: procs[].events summed (a REPEAT's
 * folded pairs count as the allocations and frees they were). */
uint64_t vrt_load_events(const struct vrt_trace *t);

/* A string of the trace by index, NULL for 0 or out of range. */
const char *vrt_load_str(const struct vrt_trace *t, uint32_t idx);

/* Name of a phase index: the trace's table, else the fixed names of
 * trace_format.h (hand-made traces in tests), else "phase-N" in buf.
 * Never NULL. "kv_cache (inferred)" for VRT_LOAD_PHASE_INFERRED_KV. */
const char *vrt_load_phase_name(const struct vrt_trace *t, unsigned phase,
                                char *buf, size_t bufsz);

/* Frame indexes of a stack, innermost first; returns how many were
 * written (at most max). Safe for any stack index (0 frames if bad). */
size_t vrt_load_stack_frames(const struct vrt_trace *t, uint32_t stack,
                             uint32_t *frames, size_t max);

/* Short name of a status ("corrupt frame", ...), never NULL. */
const char *vrt_load_status_name(enum vrt_load_status s);

#endif /* VRT_LOAD_H */
