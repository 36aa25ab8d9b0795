/*
 * session.h — the recording session of this process (session.c): the
 * state machine that hooks and the control endpoint call down into, and
 * the services that start and stop with it.
 *
 * The state itself is vrt_state (core.h), read by every hook with one
 * relaxed load; only session.c moves it, except the sticky stop
 * (vrt_capture_fail, any module). session.c says what each state means
 * and which call moves it where.
 *
 * Services (the control endpoint, the metrics endpoint, the sampler)
 * register once from the constructor; the session then starts and stops
 * them through their callbacks and never calls them by name.
 */
#ifndef VRT_SESSION_H
#define VRT_SESSION_H

#include "core.h"

/* The hooks' re-entry guard is vrt_in_hook (core.h), defined here. */

/* ---- services ----------------------------------------------------------- */

/* Started with the mode: when the session enters standby or recording,
 * and again each time recording starts (start must then be idempotent).
 * Such services start before the others. */
#define VRT_SESSION_WITH_MODE 1u
/* Standby cannot do without it: when its start fails in standby, capture
 * stops (a process in standby that cannot be told to record only loses
 * time). */
#define VRT_SESSION_NEEDED_IN_STANDBY 2u

struct vrt_session_service {
	const char *name; /* for the warning: "control endpoint" */
	unsigned flags;   /* VRT_SESSION_* */
	/* 0 or -errno; run_dir is the session's. Called with start_mu held
	 * and vrt_in_hook set, only while the session is not OFF. */
	int (*start)(const char *run_dir);
	/* Bounded; idempotent. From shutdown, on any thread. */
	void (*stop)(void);
	/* Fork handlers, each optional: before_fork runs before the
	 * session's own lock is taken, after_fork_parent after it is
	 * released; after_fork_child must forget the parent's threads and
	 * descriptors (fds.c closes what is still ours afterwards). */
	void (*before_fork)(void);
	void (*after_fork_parent)(void);
	void (*after_fork_child)(void);
};

/* Adds svc (not copied: static storage) to the services; shutdown stops
 * them in the order registered. From the constructor, before
 * vrt_session_arm. Not thread-safe. At most VRT_SESSION_MAX_SERVICES. */
#define VRT_SESSION_MAX_SERVICES 8
int vrt_session_register(const struct vrt_session_service *svc);

/* ---- lifecycle (entry.c) ------------------------------------------------ */

/* entry.c: sets up the capture core (buffers, stacks, the rules), the
 * live table's helpers and the services, and installs the fork handlers,
 * from the options read. 0, or -1 after one warning (not recording). From
 * the constructor (the preload) or the first attach (the agent), once. */
int vrt_entry_setup(void);

/* First thing in the constructor: this process is the one the preload
 * initialised (vrt_session_is_self). */
void vrt_session_init(void);
/* The run directory (absolute; copied), as soon as it is chosen. From the
 * constructor. */
void vrt_session_set_run_dir(const char *dir);
/* INIT -> ARMED: capture is set up; the first hooked event starts the
 * session. From the constructor. */
void vrt_session_arm(void);

/* OFF (or INIT) -> ARMED for a session of this image in dir (copied),
 * the last one's failure forgotten: the agent, at each attach (after a
 * detach the session is OFF and its trace closed). 0, or -1 when the
 * session is neither. Any thread but a hook's. */
int vrt_session_rearm(const char *dir);

/* Shutdown: OFF from any state, the services stopped, the trace's last
 * frame and trailer written, each within a bounded time. Returns the state
 * it left. Cancellation is off throughout (an exec hook calls it on the
 * program's thread). Any thread. */
int vrt_session_shutdown(void);
/* The one "capture stopped early" warning, when capture stopped early;
 * printed once per process image. */
void vrt_session_warn(void);

/* The status this process leaves with, for its trailer: from the _exit
 * hooks, and from an on_exit handler the session registers when it
 * starts. Nothing in a vfork child (its exit is not ours). */
void vrt_session_note_exit(int status);

/* At the exit of the command `vramtrace record` started (VRAMTRACE_ROOT
 * is our pid) that never made a trace: when the run holds a trace of
 * another process, makes ours now, its header dated start_mono/start_wall
 * (the constructor's time), so the run has its root's command line, and
 * the trailer its exit status. From the exit paths, before shutdown. */
void vrt_session_root_exit(uint64_t start_mono, uint64_t start_wall);

/* Fork handlers, in entry.c's pthread_atfork handlers: before_fork takes
 * the session's lock after the services' before_fork; after_fork_parent
 * releases it, then the services' after_fork_parent; after_fork_child
 * runs the services' and standby's child handlers and arms the child
 * again (its first event starts its own trace). */
void vrt_session_before_fork(void);
void vrt_session_after_fork_parent(void);
void vrt_session_after_fork_child(void);

/* ---- for the hooks and the control endpoint ----------------------------- */

/* ARMED -> ON (or STANDBY with VRAMTRACE_START=standby) at the first
 * hooked event, with the services; 1 when hooks should now keep the live
 * table (recording or standby). From a hook (hook.h: vrt_hook_enter). */
int vrt_session_start(void);

/* STANDBY -> ON: the trace gets the facts kept in standby and a snapshot
 * of the live allocations first. 0 on switching, 1 if already recording,
 * -1 on failure. ON -> STANDBY: 0 on switching, 1 if not recording. From
 * the control thread, and from a hook only for an allocation refused in
 * standby (hook_lib.c); both waits are bounded. */
int vrt_session_record_start(void);
int vrt_session_record_stop(void);

/* While recording: a SNAPSHOT of the live table now (what the agent of
 * `vramtrace attach` found held before it, seeded into the table, with
 * everything allocated since). 0, or -1 when not recording. Not from a
 * hook. */
int vrt_session_snapshot(void);

/* exec: the trace is flushed and closed before the image is replaced (the
 * one warning printed); after a failed exec, a process that was recording
 * or could record is ARMED again (a new file at its next event). From the
 * exec hooks, on the program's thread. */
void vrt_session_before_exec(void);
void vrt_session_exec_failed(void);

/* 1 in the process the preload initialised (or a fork child of it), 0 in
 * a vfork child, which shares our memory but is not us. Any thread. */
int vrt_session_is_self(void);
/* The absolute run directory; "" until armed (capture disabled). */
const char *vrt_session_run_dir(void);

/* ---- the services entry.c registers --------------------------------------
 * Defined by each service's file; session.c never names them. */

/* control.c: the endpoint "<dir>/<pid>.ctl" and its thread. */
extern const struct vrt_session_service vrt_control_service VRT_HIDDEN;
/* metrics.c: the Prometheus endpoint of VRAMTRACE_METRICS and its
 * thread; its start does nothing when the variable is unset (or refused)
 * and returns at once (the thread binds and serves). */
extern const struct vrt_session_service vrt_metrics_service VRT_HIDDEN;
/* metrics.c, from the constructor (before hook_env.c saves the settings
 * children get back): reads VRAMTRACE_METRICS and the labels, and when
 * the metrics are on, turns on the live table's peaks (live.h) and
 * exports the engine read off the command line (VRAMTRACE_ENGINE). */
void vrt_metrics_init(void);

#endif /* VRT_SESSION_H */
