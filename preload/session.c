/*
 * session.c — the recording state machine of this process: when the trace
 * file is made, when the process records, stands by or stops, and the
 * services that run meanwhile. Hooks and the control endpoint call down
 * into it; it calls the services only through the callbacks they
 * registered (session.h), and the lifecycle (entry.c) drives it from the
 * constructor, the destructor, exit and the fork handlers.
 *
 * States (vrt_state, core.h; every hook reads it with one relaxed load):
 *
 *   INIT     before the constructor ran: hooks pass straight through.
 *   ARMED    options read and the run directory chosen. Nothing is made
 *            yet, so the processes of a traced tree that never touch GPU
 *            memory (shells, tokenizer workers) leave no file behind.
 *   ON       recording: the trace file "<pid>.vtrace" is open and the
 *            writer thread runs; hooks record every event.
 *   STANDBY  the live table only (VRAMTRACE_START=standby, or after `ctl
 *            stop`); standby.c keeps what a later snapshot needs.
 *   OFF      stopped for good in this image: shutdown, an exec, or any
 *            failure (vrt_capture_fail, sticky).
 *
 * Transitions:
 *
 *   INIT -> ARMED       vrt_session_arm, from the constructor.
 *   ARMED -> ON         vrt_session_start, at the first hooked event: the
 *                       run directory is checked (ours, writable by nobody
 *                       else: rundir.h), the trace made, then the services
 *                       started (the sampler first, then the control and
 *                       metrics endpoints).
 *   ARMED -> STANDBY    the same with VRAMTRACE_START=standby, without a
 *                       trace file; standby without a control endpoint is
 *                       a loss, so then -> OFF.
 *   ARMED -> OFF        the run directory refused, or no trace could be
 *                       made (the reason kept for the one warning).
 *   ARMED -> ON         vrt_session_root_exit, at the exit of the command
 *                       `record` started (VRAMTRACE_ROOT) when it made no
 *                       trace while others did: the writer alone, for its
 *                       header (command line) and trailer (exit status).
 *   STANDBY -> ON       vrt_session_record_start (`ctl start`, or an
 *                       allocation refused for memory in standby): the
 *                       trace is made if it was not, and starts with the
 *                       facts kept in standby and a snapshot of the live
 *                       allocations.
 *   ON -> STANDBY       vrt_session_record_stop (`ctl stop`): the trace
 *                       says so and is synced; the sampler goes on.
 *   any -> OFF          vrt_session_shutdown (destructor, _exit, before an
 *                       exec): the services are stopped, then the writer
 *                       writes its last frame and trailer, all bounded.
 *   OFF -> ARMED        vrt_session_exec_failed: the image goes on after a
 *                       failed exec; the next event makes a new file
 *                       (unless capture had failed). vrt_session_rearm:
 *                       the agent of `vramtrace attach`, attached again
 *                       after a detach, with its new run directory.
 *   ON|STANDBY -> ARMED vrt_session_after_fork_child: the child forgets
 *                       the parent's trace and threads; its first event
 *                       makes its own file.
 *
 * ON is set before the snapshot, so an allocation racing with it is in the
 * snapshot, recorded after it, or both (readers keep one). A hook that
 * races with a switch to OFF records one last event or passes through,
 * both harmless.
 *
 * Locks: start_mu serialises the transitions (and guards writer_open,
 * run_dir's arming, exec_pending); the fork prepare handler takes it so
 * that a child never inherits it held. The lazy start and the shutdown
 * before an exec run on the program's threads, inside hooks, holding
 * start_mu across cancellation points: cancellation is disabled around
 * them so a cancelled thread never leaves start_mu locked. Services start
 * with vrt_in_hook set, so their own sockets and files never come back
 * through our hooks.
 *
 * vfork: a vfork child shares our memory until it execs or exits and
 * atfork handlers do not run in it; vrt_session_is_self tells it apart
 * (its pid is not self_pid), so that nothing of the parent's is shut down
 * from it.
 */
#include "session.h"
#include "standby.h"
#include "rundir.h"

#include <vramtrace/trace_format.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STOP_TIMEOUT_MS 3000

VRT_TLS int vrt_in_hook;

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static char run_dir[PATH_MAX];
static char start_error[PATH_MAX + 320];
static int writer_open;  /* this process's trace file exists; start_mu */
static int exec_pending; /* the state an exec left; start_mu not needed:
                          * the exec hook's thread only */
static pid_t self_pid;
static _Atomic int warned; /* the capture warning was printed */

static const struct vrt_session_service *services[VRT_SESSION_MAX_SERVICES];
static int nservices;

int vrt_session_register(const struct vrt_session_service *svc)
{
	if (nservices == VRT_SESSION_MAX_SERVICES)
		return -ENOSPC;
	services[nservices++] = svc;
	return 0;
}

/* Starts the services that start with the mode. start_mu held. Without
 * them the trace still holds every call: one that cannot start (the
 * sampler) is not worth a warning that would read like lost data. */
static void start_with_mode(void)
{
	for (int i = 0; i < nservices; i++)
		if (services[i]->flags & VRT_SESSION_WITH_MODE)
			services[i]->start(run_dir);
}

/* Opens the trace if needed and records from now on. start_mu held. */
static int begin_recording(int snapshot)
{
	if (!writer_open) {
		/* A process that began in standby: its trace starts where
		 * a full recording's would have (standby.h). */
		uint64_t mono, wall;
		if (vrt_standby_origin(&mono, &wall))
			vrt_writer_set_origin(mono, wall, 1);
		int err = vrt_writer_start(
		        run_dir, (int)vrt_options_int(VRT_OPT_FLUSH_MS),
		        (int)vrt_options_int(VRT_OPT_ZSTD_LEVEL));
		if (err) {
			snprintf(start_error, sizeof(start_error),
			         "cannot create a trace in %s: %s", run_dir,
			         strerror(-err));
			vrt_capture_fail(start_error);
			return -1;
		}
		writer_open = 1;
	}
	/* ON before the snapshot: an allocation racing with it is then in
	 * the snapshot, or recorded after it, or both (readers keep one). */
	atomic_store(&vrt_state, VRT_STATE_ON);
	if (snapshot) /* the facts kept in standby, then the live set */
		vrt_standby_write();
	start_with_mode();
	return 0;
}

/* The run directory must be ours and writable by nobody else; when it
 * is not, capture fails with the reason. 0 or -1. start_mu held. */
static int trust_run_dir(void)
{
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST)
		return 0; /* the writer reports why it cannot create files */
	struct vrt_fd d =
	        vrt_fds_open(run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	if (d.fd < 0)
		return 0; /* a symlink or worse: refused the same way */
	char why[128];
	int bad = vrt_rundir_check(d.fd, geteuid(), why, sizeof(why));
	vrt_fds_close(&d);
	if (!bad)
		return 0;
	snprintf(start_error, sizeof(start_error),
	         "run directory %s refused: %s (another user could replace "
	         "its traces and sockets); not recording",
	         run_dir, why);
	vrt_capture_fail(start_error);
	return -1;
}

/* The services that do not start with the mode, in the order registered,
 * while the session is not OFF. In standby, one it cannot do without
 * that fails to start stops capture. start_mu held. */
static void start_others(int standby)
{
	const struct vrt_session_service *needed = NULL;
	int needed_err = 0;
	for (int i = 0; i < nservices; i++) {
		const struct vrt_session_service *s = services[i];
		if ((s->flags & VRT_SESSION_WITH_MODE) ||
		    atomic_load(&vrt_state) == VRT_STATE_OFF)
			continue;
		int err = s->start(run_dir);
		if (err && standby && !needed &&
		    (s->flags & VRT_SESSION_NEEDED_IN_STANDBY)) {
			needed = s;
			needed_err = err;
		}
	}
	if (needed) {
		snprintf(start_error, sizeof(start_error), "no %s in %s: %s",
		         needed->name, run_dir, strerror(-needed_err));
		vrt_capture_fail(start_error);
	}
}

void vrt_session_note_exit(int status)
{
	if (vrt_session_is_self())
		vrt_writer_set_exit(VRT_TRAILER_EXIT_CODE, status & 0xff);
}

static void on_exit_note(int status, void *arg)
{
	(void)arg;
	vrt_session_note_exit(status);
}

/* exit() and a return from main tell on_exit handlers the status. The
 * handler must run before the destructors (the trailer): the loader runs
 * a preload's constructor before libc registers the destructors' run, so
 * a handler registered there would come after them. It is registered
 * here, at the first event, once per process image (a fork child inherits
 * it). start_mu held. */
static void watch_exit_status(void)
{
	static int registered;

	if (!registered)
		registered = !on_exit(on_exit_note, NULL);
}

int vrt_session_start(void)
{
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&start_mu);
	if (atomic_load(&vrt_state) == VRT_STATE_ARMED && trust_run_dir()) {
		/* refused: vrt_state is OFF now */
	} else if (atomic_load(&vrt_state) == VRT_STATE_ARMED) {
		/* Our own sockets and files must not come back through our
		 * hooks (the control socket's listen() is no server). */
		int was_in = vrt_in_hook;
		vrt_in_hook = 1;
		watch_exit_status();
		int standby = vrt_options_int(VRT_OPT_START) == 1;
		if (standby) {
			vrt_standby_begin(1);
			atomic_store(&vrt_state, VRT_STATE_STANDBY);
			/* Standby keeps the sampler's readings (NVML: other
			 * processes) for the next snapshot. */
			start_with_mode();
		} else {
			begin_recording(0);
		}
		start_others(standby);
		vrt_in_hook = was_in;
	}
	int s = atomic_load(&vrt_state);
	pthread_mutex_unlock(&start_mu);
	vrt_capture_cancel_restore(cancel);
	return s == VRT_STATE_ON || s == VRT_STATE_STANDBY;
}

int vrt_session_record_start(void)
{
	pthread_mutex_lock(&start_mu);
	int s = atomic_load(&vrt_state), rc = -1;
	if (s == VRT_STATE_ON)
		rc = 1;
	else if (s == VRT_STATE_STANDBY)
		rc = begin_recording(1);
	pthread_mutex_unlock(&start_mu);
	return rc;
}

int vrt_session_snapshot(void)
{
	pthread_mutex_lock(&start_mu);
	int on = atomic_load(&vrt_state) == VRT_STATE_ON;
	if (on)
		vrt_standby_write();
	pthread_mutex_unlock(&start_mu);
	return on ? 0 : -1;
}

int vrt_session_record_stop(void)
{
	pthread_mutex_lock(&start_mu);
	if (atomic_load(&vrt_state) == VRT_STATE_ON)
		vrt_standby_write_stop(); /* readers: standby from here */
	int s = VRT_STATE_ON;
	int was_on = atomic_compare_exchange_strong(&vrt_state, &s,
	                                            VRT_STATE_STANDBY);
	pthread_mutex_unlock(&start_mu);
	if (!was_on)
		return 1;
	/* The sampler goes on: standby keeps its readings. */
	vrt_standby_begin(0);
	vrt_writer_sync(STOP_TIMEOUT_MS);
	return 0;
}

int vrt_session_shutdown(void)
{
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&start_mu);
	int was = atomic_exchange(&vrt_state, VRT_STATE_OFF);
	int open = writer_open;
	writer_open = 0;
	pthread_mutex_unlock(&start_mu);
	for (int i = 0; i < nservices; i++)
		services[i]->stop();
	if (open)
		vrt_writer_stop(STOP_TIMEOUT_MS);
	vrt_capture_cancel_restore(cancel);
	return was;
}

void vrt_session_warn(void)
{
	const char *why = vrt_capture_fail_reason();
	if (why && !atomic_exchange(&warned, 1))
		fprintf(stderr,
		        "vramtrace: warning: pid %d: capture stopped early: "
		        "%s\n",
		        (int)getpid(), why);
}

/* 1 when the run directory already holds a trace, none of them ours.
 * start_mu held. */
static int others_traced(void)
{
	char own[32];
	struct dirent *de;
	size_t n, m = strlen(VRT_TRACE_SUFFIX);
	int found = 0, mine = 0;
	DIR *d = opendir(run_dir);

	snprintf(own, sizeof(own), "%d.", (int)getpid());
	while (d && (de = readdir(d))) {
		n = strlen(de->d_name);
		if (n <= m || strcmp(de->d_name + n - m, VRT_TRACE_SUFFIX))
			continue;
		if (!strncmp(de->d_name, own, strlen(own)))
			mine = 1;
		else
			found = 1;
	}
	if (d)
		closedir(d);
	return found && !mine;
}

void vrt_session_root_exit(uint64_t start_mono, uint64_t start_wall)
{
	long root = vrt_options_int(VRT_OPT_ROOT);

	if (root <= 0 || root != (long)getpid() || !vrt_session_is_self())
		return;
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&start_mu);
	if (atomic_load(&vrt_state) == VRT_STATE_ARMED && others_traced() &&
	    !trust_run_dir()) {
		int was_in = vrt_in_hook;
		vrt_in_hook = 1;
		/* The writer alone: services would only stop again. */
		vrt_writer_set_origin(start_mono, start_wall, 0);
		if (!vrt_writer_start(run_dir,
		                      (int)vrt_options_int(VRT_OPT_FLUSH_MS),
		                      (int)vrt_options_int(VRT_OPT_ZSTD_LEVEL))) {
			writer_open = 1;
			atomic_store(&vrt_state, VRT_STATE_ON);
		}
		vrt_in_hook = was_in;
	}
	pthread_mutex_unlock(&start_mu);
	vrt_capture_cancel_restore(cancel);
}

void vrt_session_before_exec(void)
{
	exec_pending = vrt_session_shutdown();
	/* The new image knows nothing of it. */
	vrt_session_warn();
}

void vrt_session_exec_failed(void)
{
	/* Still this image: go on as before; after a closed trace, into a
	 * new file at the next event. */
	if ((exec_pending == VRT_STATE_ON || exec_pending == VRT_STATE_ARMED ||
	     exec_pending == VRT_STATE_STANDBY) &&
	    !vrt_capture_fail_reason())
		atomic_store(&vrt_state, VRT_STATE_ARMED);
	exec_pending = 0;
}

void vrt_session_init(void)
{
	self_pid = getpid();
	vrt_state_start = vrt_session_start;
}

void vrt_session_set_run_dir(const char *dir)
{
	snprintf(run_dir, sizeof(run_dir), "%s", dir);
}

void vrt_session_arm(void)
{
	atomic_store(&vrt_state, VRT_STATE_ARMED);
}

int vrt_session_rearm(const char *dir)
{
	pthread_mutex_lock(&start_mu);
	int s = atomic_load(&vrt_state);
	int ok = (s == VRT_STATE_OFF || s == VRT_STATE_INIT) && !writer_open;
	if (ok) {
		snprintf(run_dir, sizeof(run_dir), "%s", dir);
		vrt_capture_forget_failure();
		atomic_store(&warned, 0);
		exec_pending = 0;
		atomic_store(&vrt_state, VRT_STATE_ARMED);
	}
	pthread_mutex_unlock(&start_mu);
	return ok ? 0 : -1;
}

int vrt_session_is_self(void)
{
	return getpid() == self_pid;
}

const char *vrt_session_run_dir(void)
{
	return run_dir;
}

void vrt_session_before_fork(void)
{
	for (int i = 0; i < nservices; i++)
		if (services[i]->before_fork)
			services[i]->before_fork();
	pthread_mutex_lock(&start_mu);
}

void vrt_session_after_fork_parent(void)
{
	pthread_mutex_unlock(&start_mu);
	for (int i = 0; i < nservices; i++)
		if (services[i]->after_fork_parent)
			services[i]->after_fork_parent();
}

void vrt_session_after_fork_child(void)
{
	for (int i = 0; i < nservices; i++)
		if (services[i]->after_fork_child)
			services[i]->after_fork_child();
	vrt_standby_after_fork_child();
	pthread_mutex_init(&start_mu, NULL);
	self_pid = getpid();
	writer_open = 0;
	int s = atomic_load(&vrt_state);
	if (s == VRT_STATE_ON || s == VRT_STATE_STANDBY)
		atomic_store(&vrt_state, VRT_STATE_ARMED);
	/* Capture stopped in the parent stays off here, and the parent
	 * alone prints its warning. */
	vrt_capture_forget_failure();
	atomic_store(&warned, 0);
}
