/*
 * The capture core: events, threads, bytes — no vendor types.
 *
 *   options.c  VRAMTRACE_* variables, read once at start
 *   tbuf.c     per-thread event buffers (chunks) and the chunk pool
 *   clock.c    event stamps and bounded-wait deadlines (clock.h)
 *   batch.c    the writer's re-encoding of chunks' ALLOC and FREE records
 *              into BATCH records
 *   writer.c   the writer thread: compresses chunks into zstd frames
 *
 * Interposition (hook_*.c) calls vrt_tbuf_event() from inside hooks; the
 * session (session.c) starts and stops the writer and the services, driven
 * by the lifecycle (entry.c). The core is a static
 * library so unit tests drive it without any preload.
 *
 * Conventions: functions returning int give 0 on success or a negative
 * errno; nothing here aborts, exits or prints on the hot path.
 */
#ifndef VRT_CORE_H
#define VRT_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define VRT_HIDDEN      __attribute__((visibility("hidden")))
#define VRT_EXPORT      __attribute__((visibility("default")))
#define VRT_LIKELY(x)   __builtin_expect(!!(x), 1)
#define VRT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VRT_TLS         __attribute__((tls_model("initial-exec"))) __thread

/* ---- options.c -------------------------------------------------------- */

enum vrt_option_id {
	VRT_OPT_ENABLE,      /* VRAMTRACE_ENABLE: 0 turns every hook into a
	                      * plain pass-through */
	VRT_OPT_OUT,         /* VRAMTRACE_OUT: run directory */
	VRT_OPT_FLUSH_MS,    /* VRAMTRACE_FLUSH_MS: frame interval */
	VRT_OPT_ZSTD_LEVEL,  /* VRAMTRACE_ZSTD_LEVEL */
	VRT_OPT_BUFFER_MB,   /* VRAMTRACE_BUFFER_MB: cap of buffered events */
	VRT_OPT_DEBUG,       /* VRAMTRACE_DEBUG: diagnostics on stderr */
	VRT_OPT_STACKS,      /* VRAMTRACE_STACKS: VRT_STACKS_* bits */
	VRT_OPT_STACK_DEPTH, /* VRAMTRACE_STACK_DEPTH */
	VRT_OPT_RULES,       /* VRAMTRACE_RULES: a phase rules file */
	VRT_OPT_SAMPLE_MS,   /* VRAMTRACE_SAMPLE_MS: sampler period, 0 off */
	VRT_OPT_NVML,        /* VRAMTRACE_NVML: device memory from NVML */
	VRT_OPT_START,       /* VRAMTRACE_START: 0 record, 1 standby */
	VRT_OPT_METRICS,     /* VRAMTRACE_METRICS: HOST:PORT */
	VRT_OPT_REDACT,      /* VRAMTRACE_REDACT: argument values as *** */
	VRT_OPT_FOLD,        /* VRAMTRACE_FOLD: REPEAT records for repeated
	                      * allocate-then-free pairs (default 1) */
	VRT_OPT_RESOLVE_LOG, /* VRAMTRACE_RESOLVE_LOG: <pid>.resolve, every
	                      * driver look-up and its answer (resolvelog.c) */
	VRT_OPT_STANDBY_STACK_KIB, /* VRAMTRACE_STANDBY_STACK_KIB: in standby,
	                            * allocations of at least this many KiB
	                            * keep their stack (default 1024) */
	VRT_OPT_BATCH,       /* VRAMTRACE_BATCH: BATCH records (batch.c) for
	                      * ALLOC and FREE events (default 1) */
	VRT_OPT_METRICS_PUBLIC, /* VRAMTRACE_METRICS_PUBLIC: 1 lets the
	                         * metrics bind another address than
	                         * loopback (metrics.c) */
	VRT_OPT_ENGINE,         /* VRAMTRACE_ENGINE: the metrics' engine
	                         * label, else read off the command line */
	VRT_OPT_ROOT,           /* VRAMTRACE_ROOT: the pid of the command
	                         * `vramtrace record` started (set by it) */
	VRT_OPT_TIME_US,        /* VRAMTRACE_TIME_US: how far an allocation's
	                         * time may be rounded down (batch.c) */
	VRT_OPT_COUNT
};

/* Reads every VRAMTRACE_* variable with secure_getenv (a setuid program
 * sees none). A bad value keeps the default and prints one warning on
 * stderr. Call once, from the constructor. Not thread-safe. */
void vrt_options_init(void);
/* The same from another source: get(name, arg) gives a variable's value
 * or NULL (the agent of `vramtrace attach`: the settings the command
 * passed, which live as long as the table). */
void vrt_options_init_from(const char *(*get)(const char *name, void *arg),
                           void *arg);
long vrt_options_int(enum vrt_option_id id);
/* The string value, or NULL when unset. */
const char *vrt_options_str(enum vrt_option_id id);

/* ---- capture state ---------------------------------------------------- */

/* The states of a process's capture. session.c moves it (and says how);
 * vrt_capture_fail stops it from anywhere. */
enum vrt_state {
	VRT_STATE_INIT = 0,    /* before the constructor: hooks pass through */
	VRT_STATE_ON = 1,      /* recording */
	VRT_STATE_OFF = 2,     /* stopped (sticky): an error or shutdown */
	VRT_STATE_ARMED = 3,   /* options read; starts at the first event */
	VRT_STATE_STANDBY = 4, /* live table only; `ctl start` records */
};

/* Read on every hooked call with a relaxed load. */
extern _Atomic int vrt_state VRT_HIDDEN;

/* ARMED -> ON (or STANDBY) at the first hooked event: the session's start
 * (session.c: vrt_session_start, set by vrt_session_init before it arms),
 * so the hooks (hook.h: vrt_hook_enter) reach the session without
 * depending on it. 1 when hooks should now keep the live table. */
extern int (*vrt_state_start)(void) VRT_HIDDEN;

/* The re-entry guard of hooks (hook.h): set while the thread is inside a
 * hooked call or a session transition, so that what we do ourselves
 * (create the trace, bind a socket) is not recorded. Initial-exec TLS
 * (session.c). */
extern VRT_TLS int vrt_in_hook VRT_HIDDEN;

static inline int vrt_capture_on(void)
{
	return atomic_load_explicit(&vrt_state, memory_order_relaxed) ==
	       VRT_STATE_ON;
}

/* Helper threads (writer, sampler, control, metrics) set *flag first
 * thing; their starter waits for it (bounded, 200 ms), so no thread of
 * ours is still being set up by the runtime when the host forks next. */
void vrt_capture_thread_started(_Atomic int *flag);
void vrt_capture_wait_started(_Atomic int *flag);
/* A helper thread calls this last, before it returns: it is no longer one
 * of ours (its thread id may be reused by the program). */
void vrt_capture_thread_exiting(void);
/* In a forked child: the parent's helper threads do not exist here. */
void vrt_capture_forget_helpers(void);
/* 1 when every running thread of this process is a helper of ours (reads
 * /proc/self/task). Helper threads only. */
int vrt_capture_only_helpers_left(void);
/* Set by the lifecycle: called by helper threads each time they wake (at
 * least every few hundred ms while they run), never from a hook. */
extern void (*vrt_capture_tick)(void) VRT_HIDDEN;

/* Cancellation off for a stretch that waits or holds a lock across a
 * cancellation point (a condition wait, a write): a thread the program
 * cancels there would otherwise end holding our mutex, and every other
 * thread, the writer and exit would hang on it. Returns the state to
 * restore with vrt_capture_cancel_restore. */
static inline int vrt_capture_cancel_off(void)
{
	int old = PTHREAD_CANCEL_ENABLE;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

static inline void vrt_capture_cancel_restore(int old)
{
	int ignored;
	pthread_setcancelstate(old, &ignored);
}

/* Stops capture for good and keeps the first reason (a static string) for
 * the one warning printed at exit. Safe from any thread. */
void vrt_capture_fail(const char *reason);
const char *vrt_capture_fail_reason(void);
/* In a forked child: the reason was the parent's to report (the state
 * stays as it was). */
void vrt_capture_forget_failure(void);

/* One "vramtrace: warning: pid N: ..." line on stderr right now, without
 * stdio (a hook may be on the stack): for a service of ours that stops
 * while the program runs. fmt ends with a newline. Any thread. */
void vrt_capture_warn(const char *fmt, ...)
        __attribute__((format(printf, 1, 2)));

/* ---- fds.c: fds.h ------------------------------------------------------ */

#include "fds.h"

/* ---- tbuf.c ----------------------------------------------------------- */

/* One event as hooks describe it; tbuf encodes it per trace_format.h. */
struct vrt_ev {
	uint8_t rec; /* VRT_REC_ALLOC, FREE, MAP, UNMAP, FAIL, MEMINFO, MARK,
	              * NET, PROC, REQUEST */
	uint8_t api;
	uint8_t have_info;
	uint8_t op;   /* NET, PROC, REQUEST */
	uint8_t kind; /* NET LISTEN/ACCEPT: enum vrt_net_kind (0: none) */
	uint8_t nflags;   /* NET: VRT_NET_F_* */
	uint16_t text_len; /* text's length when it is not NUL-terminated */
	uint32_t stream;  /* NET: HTTP/2 stream */
	uint8_t past; /* written as a PAST record of rec, at time `at`
	               * (NET, PROC, MEMINFO, SAMPLE) */
	uint64_t at;
	int32_t device;
	uint32_t error;
	uint32_t stack; /* stack id (stack.c), 0 none */
	uint64_t phase; /* encoded phase (trace_format.h), 0 unattributed */
	uint64_t addr, size, aux, offset, handle; /* size: for MEMINFO the
	                                           * held bytes of a PAST one;
	                                           * for a NET CLOSE 1 when a
	                                           * request was in flight */
	uint64_t free_bytes, total_bytes;
	uint64_t val;        /* NET: the record's val field */
	const char *text;    /* MARK label, PROC path, NET request path; cut
	                      * to VRT_EV_TEXT_MAX */
	const uint8_t *blob; /* SAMPLE: the encoded payload after dts */
	uint32_t blob_len;   /* at most VRT_EV_BLOB_MAX (longer: dropped) */
};

#define VRT_EV_TEXT_MAX 256
#define VRT_EV_BLOB_MAX 1024

/* Chunk of encoded events from one thread; handed to the writer whole. */
struct vrt_chunk {
	struct vrt_chunk *next;
	uint32_t len; /* bytes used in data */
	uint32_t cap;
	/* What orders a thread's chunks (vrt_tbuf_collect): its thread id,
	 * the time in its CHUNK record, the tbuf that filled it and its
	 * place among that tbuf's chunks. */
	pid_t tid;
	uint64_t t0;
	const void *owner;
	uint64_t seq;
	uint8_t data[];
};

#define VRT_CHUNK_BYTES (64u * 1024u)

/* Sets up the chunk pool; max_bytes caps the memory held by chunks waiting
 * for the writer. 0 or -errno. */
int vrt_tbuf_init(size_t max_bytes);

/* Appends one event to the calling thread's chunk. Callable from inside a
 * hook on any thread: no malloc, no stdio; takes only this thread's
 * spinlock (and the queue mutex once per chunk). When the pool is
 * exhausted it waits a bounded time for the writer, then drops the event
 * and counts it. */
void vrt_tbuf_event(const struct vrt_ev *ev);

/* A per-thread area of VRT_TBUF_SCRATCH bytes (zeroed when first made,
 * kept across thread reuse), or NULL if no buffer could be made. Owner
 * thread only; hot-path safe. */
#define VRT_TBUF_SCRATCH 4096
void *vrt_tbuf_scratch(void);

/* A per-thread area of VRT_TBUF_LIVE bytes for live.c (zeroed when first
 * made, kept across thread reuse and visible to other threads through
 * vrt_tbuf_live_each), or NULL. Owner thread writes; hot-path safe. */
#define VRT_TBUF_LIVE 64
void *vrt_tbuf_live(void);
/* Calls fn for the area of every tbuf ever made (in use or not). Any
 * thread; no lock taken (tbufs are never freed). */
void vrt_tbuf_live_each(void (*fn)(void *area, void *arg), void *arg);

/* Folding of repeated allocate-then-free pairs into REPEAT records (on
 * unless set to 0). Set before events are recorded. */
void vrt_tbuf_set_fold(int on);

/* Moves every non-empty chunk to *out as a list in which each thread's
 * chunks come in the order it filled them (batch.c relies on it).
 * Writer thread only. */
void vrt_tbuf_collect(struct vrt_chunk **out);

/* A hooked GPU call in progress on this thread, from before the runtime's
 * call until its event is recorded: a thread whose allocation failed waits
 * (vrt_tbuf_wait_calls) for the calls other threads have in progress, so
 * an allocation the driver had counted when it answered the failure's
 * free-memory probe is stamped before the failure, never after it (the
 * replay would otherwise take it for another process's memory). Points
 * into the thread's tbuf; NULL until it has one. Hot path: one TLS load
 * and one store. */
extern VRT_TLS _Atomic uint32_t *vrt_tbuf_calling VRT_HIDDEN;
void vrt_tbuf_call_first(void); /* a thread's first call: its tbuf */
static inline void vrt_tbuf_call(uint32_t on)
{
	_Atomic uint32_t *p = vrt_tbuf_calling;
	if (VRT_LIKELY(p))
		atomic_store_explicit(p, on,
		                      on ? memory_order_relaxed
		                         : memory_order_release);
	else if (on)
		vrt_tbuf_call_first();
}
/* Waits until no other thread is inside a hooked call it was in when this
 * was called, at most max_ns. From the failing call's hook. */
void vrt_tbuf_wait_calls(uint64_t max_ns);

/* Returns chunks to the pool. Writer thread only. */
void vrt_tbuf_release(struct vrt_chunk *list);

/* Called on a thread when it takes a buffer (its first event, or the
 * first after vrt_tbuf_thread_exit), so the lifecycle can arrange for
 * vrt_tbuf_thread_exit at thread exit. Must not allocate. */
extern void (*vrt_tbuf_on_claim)(void) VRT_HIDDEN;

/* Flushes the calling thread's chunk to the full queue and lets a later
 * thread reuse its buffer. From the thread-exit destructor. */
void vrt_tbuf_thread_exit(void);

/* In a forked child: forget other threads' buffers and the queued chunks
 * (they belong to the parent's trace). */
void vrt_tbuf_after_fork_child(void);
void vrt_tbuf_before_fork(void);
void vrt_tbuf_after_fork_parent(void);

/* Writer side: sleeps until kicked or timeout_ms passes; 1 if kicked. */
int vrt_tbuf_writer_wait(int timeout_ms);
/* Wakes the writer now (a flush is due). Any thread, no lock held. */
void vrt_tbuf_kick(void);

uint64_t vrt_tbuf_events(void);  /* events encoded so far */
uint64_t vrt_tbuf_dropped(void); /* events dropped */

/* ---- batch.c ---------------------------------------------------------- */

/* BATCH records on (default) or off (the chunks go out as the hot path
 * wrote them). Before recording starts. */
void vrt_batch_set(int on);

/* The unit BATCH times are rounded to: the power of two of ns nearest
 * to us microseconds (0: exact). Before recording starts. */
void vrt_batch_set_time_us(long us);

/* Before the chunks of a writer pass go through vrt_batch_chunk: what
 * other threads did in the pass (their records other than allocations
 * and frees, and, when two threads or more allocated, every address),
 * and floor, the previous pass's watermark (0 for the first), so that
 * no time is rounded past any of it. Writer thread only. */
void vrt_batch_pass(const struct vrt_chunk *chunks, uint64_t floor);

/* Takes one chunk (data as tbuf.c wrote it) into its thread's output
 * for the frame: its ALLOC and FREE records re-encoded as BATCH records
 * (the same chunk as it came when batching is off or it does not parse),
 * a thread's chunks of a frame under one CHUNK record. Each thread's
 * chunks must come in the order it filled them, after vrt_batch_pass for
 * their pass. Writer thread only. */
void vrt_batch_chunk(const uint8_t *data, size_t len);

/* Bytes the outputs hold, about. */
size_t vrt_batch_pending(void);

/* Hands every thread's output to feed (a thread's whole output in one
 * call), then empties them: the frame is closing. Writer thread only. */
void vrt_batch_emit(void (*feed)(const void *data, size_t len));

/* Forgets every thread's batch state and output: a new trace file
 * starts. Writer thread, or before it starts. */
void vrt_batch_reset(void);

/* ---- stack.c ---------------------------------------------------------- */

#define VRT_STACKS_NATIVE 1
#define VRT_STACKS_PYTHON 2

/* From the constructor: which stacks to capture (VRT_STACKS_* bits, 0 for
 * none) and how many frames of each at most. */
void vrt_stack_init(int mode, int max_depth);

/* The calling thread's stack id (0 when stacks are off or nothing could
 * be captured). From inside a hook: unwinds first, then takes stack_mu
 * only when this call site is not in the thread's cache. */
uint32_t vrt_stack_capture(void);

/* Whether the calling thread is inside a library's own plumbing: a
 * native frame in NCCL, ZMQ, libtorch (torch.distributed's stores, gloo),
 * MPI, UCX or Ray's core, or a Python frame of torch.distributed, zmq,
 * ray or multiprocessing's connections. For listen(), which is rare: it
 * unwinds and asks the loader for each frame's module (dladdr) whatever
 * the stacks setting, and takes no lock of ours. */
int vrt_stack_plumbing(void);

/* Writer thread: writes STRING/FRAME/STACK/PHASE records for every frame
 * and stack made since the last call, through emit. */
typedef void (*vrt_stack_emit_fn)(unsigned type, const uint8_t *payload,
                                  size_t len);
void vrt_stack_emit(vrt_stack_emit_fn emit);

/* A stack of Python frames named by file, function and line, outermost
 * first (n at most 128): its id, made as a captured one is, so the rules
 * classify it. For frames another allocator recorded (the agent's
 * snapshot of PyTorch's segments), never the hot path. 0 when nothing
 * could be made. */
uint32_t vrt_stack_python(const char *const *file, const char *const *func,
                          const int *line, int n);

/* The phase id the writer's rules gave a stack, or 0 (unattributed, or
 * not classified yet). Any thread. */
unsigned vrt_stack_phase(uint32_t stack);

/* The rules that tag new stacks (owned by the caller; NULL: none). Set
 * before the writer starts. */
struct vrt_rules;
void vrt_stack_set_rules(struct vrt_rules *rules);

/* A new trace file starts: every string, frame and stack is written into
 * it again (ids stay). Writer thread not running (vrt_writer_start). */
void vrt_stack_new_file(void);

void vrt_stack_before_fork(void);
void vrt_stack_after_fork_parent(void);
void vrt_stack_after_fork_child(void);

/* ---- sampler.c -------------------------------------------------------- */

/* Starts the sampler thread ("vramtrace-smp", all signals blocked): every
 * interval_ms a HOST sample, and with use_nvml a DEVICE sample per device
 * of this process that NVML also lists (matched by uuid). 0 or -errno. */
int vrt_sampler_start(int interval_ms, int use_nvml);
/* Stops it, waiting at most one interval. Idempotent. */
void vrt_sampler_stop(void);
/* What the sampler read while not recording (standby): fn for each
 * reading kept, oldest first (at: when; blob: the SAMPLE payload after
 * dts), then they are forgotten. The last VRT_SAMPLER_KEPT readings and
 * the first few are kept. Any thread but the sampler's. */
#define VRT_SAMPLER_KEPT 48
void vrt_sampler_kept(void (*fn)(uint64_t at, const uint8_t *blob, size_t len,
                                 void *arg),
                      void *arg);
/* In a forked child: the thread does not exist here. */
/* fork: the prepare handler waits for the sampler to leave NVML (taken
 * before every other vramtrace lock: the sampler records while in it). */
void vrt_sampler_before_fork(void);
void vrt_sampler_after_fork_parent(void);
void vrt_sampler_after_fork_child(void);

/* The bytes NVML says this process holds on the device with this uuid (16
 * raw bytes, the driver's): 1 and *bytes, or 0 when NVML cannot say (no
 * NVML, the device or this process not listed: another PID namespace).
 * Takes the sampler's NVML lock; any thread but a hook's. */
int vrt_sampler_own_bytes(const unsigned char uuid[16], uint64_t *bytes);

/* ---- pyrun.c (the agent only) ----------------------------------------- */

/* Runs code (Python statements that leave a str in `result`) in the
 * process's interpreter, on a thread of ours holding the GIL, waiting at
 * most timeout_ms: 1 and the text (cut to len - 1 bytes) in out; 0 no
 * interpreter (or it is finalizing); -1 it failed; -2 it did not finish in
 * time (its answer is dropped when it does). One call at a time; not from
 * a hook. */
int vrt_pyrun(const char *code, char *out, size_t len, int timeout_ms);

/* ---- symbols.c -------------------------------------------------------- */

/* Name of the function containing ip in the module loaded from path at
 * base, from the file's .symtab (for what dladdr cannot name); sets
 * *offset. NULL when unknown. Writer thread only. */
const char *vrt_symbols_lookup(const char *path, uintptr_t base, uintptr_t ip,
                               uint64_t *offset);

/* ---- phase.c ---------------------------------------------------------- */

/* The annotation stack of the calling thread (vramtrace_phase_push/pop).
 * push/pop are for the application's own calls, not for hooks. */
void vrt_phase_push(const char *name);
void vrt_phase_pop(void);
/* The encoded phase of name as the recorder itself decides it (source
 * ANNOTATION: no reader re-classifies it), a fixed or a custom one; for
 * what the agent of `vramtrace attach` seeds. Not for hooks. */
uint64_t vrt_phase_named(const char *name);
/* Encoded phase (trace_format.h) the thread announced, or 0. Hot path:
 * one TLS read. */
uint64_t vrt_phase_current(void);
/* Writer thread: PHASE records for custom names not yet declared. */
void vrt_phase_emit(vrt_stack_emit_fn emit);
/* A new trace file: custom phases are declared in it again. */
void vrt_phase_new_file(void);
void vrt_phase_after_fork_child(void);

/* ---- writer.c --------------------------------------------------------- */

/* A device as the driver describes it; written once into the trace. */
struct vrt_device_info {
	int vendor; /* enum vrt_vendor */
	int ordinal;
	uint64_t total_bytes;
	char name[96];
	unsigned char uuid[16];
	int have_uuid;
};

/* Creates "<dir>/<pid>.vtrace" (0600, O_EXCL|O_NOFOLLOW), writes the header
 * and starts the writer thread (all signals blocked, named vramtrace-wr).
 * 0 or -errno; on error nothing is left running. */
int vrt_writer_start(const char *dir, int flush_ms, int zstd_level);

/* The start time the next vrt_writer_start writes in the header, instead
 * of the moment it runs: when the process's capture began (standby: the
 * header then says so), or when it started (the root's trace made at its
 * exit, standby 0). */
void vrt_writer_set_origin(uint64_t mono_ns, uint64_t wall_ns, int standby);

/* Header flags (VRT_HEADER_*) every later vrt_writer_start adds. Set
 * before the start. */
void vrt_writer_set_flags(uint64_t flags);

/* Copies the known device inventory (all vendors) into out; returns the
 * count. Any thread. */
int vrt_writer_known_devices(struct vrt_device_info *out, int max);

/* Queues the device inventory of one vendor for the trace (copied; every
 * entry has the vendor of devs[0]): it replaces that vendor's earlier
 * list and keeps the other vendor's. Any thread. */
void vrt_writer_devices(const struct vrt_device_info *devs, int n);

/* Closes the current frame with everything recorded so far, syncs it to
 * disk, and returns when done or after timeout_ms. Used after a failed
 * allocation, so a host that dies next still leaves the event on disk.
 * Call with no lock held. */
void vrt_writer_sync(int timeout_ms);

/* Final flush, trailer, close; waits at most timeout_ms for the writer.
 * A writer still busy then finishes on its own and closes the file itself.
 * Idempotent. */
void vrt_writer_stop(int timeout_ms);

/* Waits at most timeout_ms for a writer that a stop left finishing on its
 * own; 0 when none is left, -EBUSY otherwise. */
int vrt_writer_wait_orphan(int timeout_ms);

/* How this process is leaving, for the trailer (kind: enum vrt_exit_kind
 * of trace_format.h, VRT_TRAILER_EXIT_*; code: the status or signal).
 * From the exit paths, before vrt_writer_stop. Any thread. */
void vrt_writer_set_exit(int kind, int code);

/* In a forked child: the parent's writer thread does not exist here;
 * forget it (the child starts its own with vrt_writer_start). */
void vrt_writer_after_fork_child(void);
void vrt_writer_before_fork(void);
void vrt_writer_after_fork_parent(void);

#endif /* VRT_CORE_H */
