/*
 * entry.c — the lifecycle, and nowhere else: constructor, destructor,
 * pthread_atfork handlers, thread exit.
 *
 * Constructor: reads the options, picks the run directory and arms
 * capture. The trace file and the writer thread are only made at the
 * first recorded event (vrt_entry_start, from a hook), so processes of a
 * traced tree that never touch GPU memory (shells, tokenizer workers)
 * leave no file behind.
 *
 * Destructor (run by exit after atexit handlers and the destructors of
 * libraries loaded after us): switches capture off, lets the writer flush
 * and write the trailer within a bounded time, then prints the one
 * warning if capture had stopped early. Hooks pass straight through after.
 *
 * _exit/_Exit (os._exit in Python, forked workers) skip the destructors, so
 * they are interposed to do the same flush before the real exit.
 *
 * vfork: a vfork child shares our memory (and our helper threads' state)
 * until it execs or exits, and atfork handlers do not run in it, so its
 * pid differs from self_pid. There _exit, _Exit and the destructor (a
 * child calling exit()) do nothing but exit: a shutdown there would close
 * the parent's trace and stop its threads' services. (Python's subprocess
 * vforks, and a failed exec ends its child with _exit.)
 *
 * Fork: the prepare handler takes the core's mutexes so the child never
 * inherits them held; the child forgets the parent's buffered events and
 * writer, closes what is still ours of the parent's fds (fds.c), and is
 * armed again: its first event starts its own trace file.
 *
 * Cancellation: the lazy start (file creation, thread start) and the
 * shutdown before an exec run on the program's threads, inside hooks, with
 * start_mu held across cancellation points; cancellation is disabled
 * around them so a cancelled thread never leaves start_mu locked.
 *
 * pthread_exit from main: the process should end when its last thread
 * does, but our helper threads would keep it alive (and, blocking every
 * signal, ignore a SIGTERM sent to it). pthread_exit is interposed to
 * note that the main thread left; from then on the helpers' periodic tick
 * (vrt_capture_tick) looks whether every running thread is one of ours,
 * and if so a short-lived thread with no signal blocked calls exit(0) —
 * what glibc does when the last thread ends — so atexit handlers and our
 * destructor run, the trace ends cleanly, and a signal sent meanwhile
 * acts as it would have.
 *
 * The run directory (created 0700, or an existing one) must be ours and
 * writable by nobody else (rundir.h); otherwise recording is off with one
 * warning and the program runs on. That covers the default
 * ./vramtrace-run-<pid> in a shared working directory such as /tmp.
 *
 * start_mu serialises the lazy start; everything else is in the core.
 */
#include "hook.h"
#include "live.h"
#include "rules.h"
#include "standby.h"
#include "rundir.h"

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define STOP_TIMEOUT_MS 3000
#define RULES_MAX       (1u << 20)

VRT_TLS int vrt_in_hook;

static pthread_mutex_t start_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t exit_key;
static char run_dir[PATH_MAX];
static char start_error[PATH_MAX + 320];
static int exec_pending;
/* Looked up by the constructor: a vfork child must not take the
 * loader's locks (dlsym) that a thread of its parent may hold. */
static void (*real__exit)(int);
static void watch_exit(void);

static void thread_exit(void *arg)
{
	(void)arg;
	vrt_tbuf_thread_exit();
}

static int writer_open; /* this process's trace file exists; start_mu */

/* Opens the trace if needed and records from now on. start_mu held. */
static int begin_recording(int snapshot)
{
	if (!writer_open) {
		/* A process that began in standby: its trace starts where
		 * a full recording's would have (standby.h). */
		uint64_t mono, wall;
		if (vrt_standby_origin(&mono, &wall))
			vrt_writer_set_origin(mono, wall);
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
	/* Without samples the trace still holds every call: a sampler that
	 * cannot start is not worth a warning that would read like lost
	 * data. */
	vrt_sampler_start((int)vrt_options_int(VRT_OPT_SAMPLE_MS),
	                  (int)vrt_options_int(VRT_OPT_NVML));
	return 0;
}

/* The run directory must be ours and writable by nobody else; when it
 * is not, capture fails with the reason. 0 or -1. start_mu held. */
static int trust_run_dir(void)
{
	if (mkdir(run_dir, 0700) < 0 && errno != EEXIST)
		return 0; /* the writer reports why it cannot create files */
	struct vrt_fd d = vrt_fds_open(run_dir, O_RDONLY | O_DIRECTORY |
	                                                O_NOFOLLOW, 0);
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

int vrt_entry_start(void)
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
		int standby = vrt_options_int(VRT_OPT_START) == 1;
		if (standby) {
			vrt_standby_begin(1);
			atomic_store(&vrt_state, VRT_STATE_STANDBY);
			/* Standby keeps the sampler's readings (NVML: other
			 * processes) for the next snapshot. */
			vrt_sampler_start(
			        (int)vrt_options_int(VRT_OPT_SAMPLE_MS),
			        (int)vrt_options_int(VRT_OPT_NVML));
		} else {
			begin_recording(0);
		}
		int err = atomic_load(&vrt_state) == VRT_STATE_OFF
		                  ? 0
		                  : vrt_control_start(run_dir);
		/* Dashboards only: no endpoint is no loss of data. */
		if (atomic_load(&vrt_state) != VRT_STATE_OFF)
			vrt_metrics_start(run_dir);
		if (err && standby) {
			/* Standby without a way to start is just a loss. */
			snprintf(start_error, sizeof(start_error),
			         "no control endpoint in %s: %s", run_dir,
			         strerror(-err));
			vrt_capture_fail(start_error);
		}
		vrt_in_hook = was_in;
	}
	int s = atomic_load(&vrt_state);
	pthread_mutex_unlock(&start_mu);
	vrt_capture_cancel_restore(cancel);
	return s == VRT_STATE_ON || s == VRT_STATE_STANDBY;
}

int vrt_entry_record_start(void)
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

int vrt_entry_record_stop(void)
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

/* The exit destructor only runs for threads with a key value set. glibc
 * keeps the values of the first 32 keys inside the thread descriptor, so
 * this does not allocate. */
static void on_claim(void)
{
	pthread_setspecific(exit_key, (void *)1);
}

static pid_t self_pid;

int vrt_entry_is_self(void)
{
	return getpid() == self_pid;
}

const char *vrt_entry_run_dir(void)
{
	return run_dir;
}

/* Everything off, with bounded waits: the control endpoint, the sampler,
 * then the writer's last frame and trailer. Returns the state it left.
 * Cancellation is off throughout (an exec hook calls this on the
 * program's thread). */
static int shut_down(void)
{
	int cancel = vrt_capture_cancel_off();
	pthread_mutex_lock(&start_mu);
	int was = atomic_exchange(&vrt_state, VRT_STATE_OFF);
	int open = writer_open;
	writer_open = 0;
	pthread_mutex_unlock(&start_mu);
	vrt_control_stop();
	vrt_metrics_stop();
	vrt_sampler_stop();
	if (open)
		vrt_writer_stop(STOP_TIMEOUT_MS);
	vrt_capture_cancel_restore(cancel);
	return was;
}

static _Atomic int warned; /* the capture warning was printed */

/* The one warning, if capture stopped early: at exit, or before an exec
 * replaces this image (the new one knows nothing of it). */
static void warn_once(void)
{
	const char *why = vrt_capture_fail_reason();
	if (why && !atomic_exchange(&warned, 1))
		fprintf(stderr,
		        "vramtrace: warning: pid %d: capture stopped early: "
		        "%s\n",
		        (int)getpid(), why);
}

void vrt_entry_before_exec(void)
{
	exec_pending = shut_down();
	warn_once();
}

void vrt_entry_exec_failed(void)
{
	/* Still this image: go on as before; after a closed trace, into a
	 * new file at the next event. */
	if ((exec_pending == VRT_STATE_ON || exec_pending == VRT_STATE_ARMED ||
	     exec_pending == VRT_STATE_STANDBY) &&
	    !vrt_capture_fail_reason())
		atomic_store(&vrt_state, VRT_STATE_ARMED);
	exec_pending = 0;
}

static void before_fork(void)
{
	vrt_sampler_before_fork();
	pthread_mutex_lock(&start_mu);
	vrt_writer_before_fork();
	vrt_stack_before_fork();
	vrt_tbuf_before_fork();
}

static void after_fork_parent(void)
{
	vrt_tbuf_after_fork_parent();
	vrt_stack_after_fork_parent();
	vrt_writer_after_fork_parent();
	pthread_mutex_unlock(&start_mu);
	vrt_sampler_after_fork_parent();
}

static void after_fork_child(void)
{
	vrt_tbuf_after_fork_child();
	vrt_stack_after_fork_child();
	vrt_phase_after_fork_child();
	vrt_writer_after_fork_child();
	vrt_sampler_after_fork_child();
	vrt_control_after_fork_child();
	vrt_metrics_after_fork_child();
	vrt_live_after_fork_child();
	vrt_standby_after_fork_child();
	/* After every module forgot its fds: close those still ours. */
	vrt_fds_after_fork_child();
	vrt_capture_forget_helpers();
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

/* The run directory, absolute: children that change directory still
 * write next to their parent. Exported to the environment when we chose
 * it, so the whole process tree shares one run. */
static int choose_run_dir(void)
{
	const char *out = vrt_options_str(VRT_OPT_OUT);
	char name[64];
	if (!out) {
		snprintf(name, sizeof(name), "vramtrace-run-%d", (int)getpid());
		out = name;
	}
	if (out[0] == '/') {
		if (strlen(out) >= sizeof(run_dir))
			return -ENAMETOOLONG;
		strcpy(run_dir, out);
	} else {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return -errno;
		if ((size_t)snprintf(run_dir, sizeof(run_dir), "%s/%s", cwd,
		                     out) >= sizeof(run_dir))
			return -ENAMETOOLONG;
	}
	if (!vrt_options_str(VRT_OPT_OUT))
		setenv("VRAMTRACE_OUT", run_dir, 1);
	return 0;
}

/* The rules file: a regular file of at most RULES_MAX bytes, read
 * without blocking on a FIFO or a device. malloc'd text, or NULL with
 * *why set. */
static char *read_rules(const char *path, size_t *len, const char **why)
{
	struct vrt_fd f = vrt_fds_open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY,
	                               0);
	struct stat st;
	char *text = NULL;
	*why = NULL;
	if (f.fd < 0 || fstat(f.fd, &st) < 0)
		*why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (st.st_size > (off_t)RULES_MAX - 1)
		*why = "larger than 1 MiB";
	else if (!(text = malloc((size_t)st.st_size + 2)))
		*why = "out of memory";
	*len = 0;
	if (text) {
		/* What the file held when we looked: a file still growing
		 * is read up to that size. */
		ssize_t r;
		while (*len < (size_t)st.st_size &&
		       (r = vrt_fds_read(f, text + *len,
		                         (size_t)st.st_size - *len)) > 0)
			*len += (size_t)r;
		text[*len] = 0;
	}
	if (f.fd >= 0)
		vrt_fds_close(&f);
	return text;
}

/* The rules that tag stacks: the built-in sets, with VRAMTRACE_RULES in
 * front. A bad file keeps the built-ins and warns once. */
static void load_rules(void)
{
	struct vrt_rules *rules = vrt_rules_new_builtin();
	const char *path = vrt_options_str(VRT_OPT_RULES);
	if (rules && path) {
		char err[512];
		const char *why;
		size_t len;
		char *text = read_rules(path, &len, &why);
		if (!text) {
			fprintf(stderr,
			        "vramtrace: warning: VRAMTRACE_RULES=%s: %s; "
			        "using the built-in rules\n",
			        path, why);
		} else if (vrt_rules_parse(rules, text, len, path, err,
		                           sizeof(err)) < 0) {
			fprintf(stderr,
			        "vramtrace: warning: %s; using the built-in "
			        "rules\n",
			        err);
		}
		free(text);
	}
	vrt_stack_set_rules(rules);
}

__attribute__((constructor)) static void vrt_entry_init(void)
{
	vrt_hook_libc_init();
	self_pid = getpid();
	if (vrt_real_dlsym)
		real__exit = (void (*)(int))vrt_real_dlsym(RTLD_NEXT, "_exit");
	vrt_capture_tick = watch_exit;
	vrt_options_init();
	if (!vrt_options_int(VRT_OPT_ENABLE))
		return;
	int err = choose_run_dir();
	if (err) {
		fprintf(stderr,
		        "vramtrace: warning: no run directory (%s); not "
		        "recording\n",
		        strerror(-err));
		return;
	}
	if (pthread_key_create(&exit_key, thread_exit) != 0 ||
	    vrt_tbuf_init((size_t)vrt_options_int(VRT_OPT_BUFFER_MB) << 20)) {
		fprintf(stderr, "vramtrace: warning: cannot set up capture; "
		                "not recording\n");
		return;
	}
	vrt_tbuf_set_fold((int)vrt_options_int(VRT_OPT_FOLD));
	vrt_batch_set((int)vrt_options_int(VRT_OPT_BATCH));
	vrt_stack_init((int)vrt_options_int(VRT_OPT_STACKS),
	               (int)vrt_options_int(VRT_OPT_STACK_DEPTH));
	load_rules();
	vrt_tbuf_on_claim = on_claim;
	vrt_live_set_stack_phase(vrt_stack_phase);
	vrt_hook_vendors_init();
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	vrt_metrics_init();
	vrt_hook_env_init(run_dir);
	atomic_store(&vrt_state, VRT_STATE_ARMED);
	if (vrt_options_int(VRT_OPT_DEBUG))
		fprintf(stderr, "vramtrace: pid %d armed, run directory %s\n",
		        (int)getpid(), run_dir);
}

__attribute__((destructor)) static void vrt_entry_fini(void)
{
	/* A vfork child calling exit(): everything here is the parent's. */
	if (!vrt_entry_is_self())
		return;
	int was = shut_down();
	warn_once();
	if (vrt_options_int(VRT_OPT_DEBUG) && was == VRT_STATE_ON)
		fprintf(stderr,
		        "vramtrace: pid %d: %llu events, %llu dropped\n",
		        (int)getpid(), (unsigned long long)vrt_tbuf_events(),
		        (unsigned long long)vrt_tbuf_dropped());
}

__attribute__((noreturn)) static void real_exit(int status)
{
	void (*real)(int) = real__exit;
	if (!real && vrt_real_dlsym)
		real = (void (*)(int))vrt_real_dlsym(RTLD_NEXT, "_exit");
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* The same as the destructor, for processes that leave through _exit; a
 * vfork child (a failed exec in Python's subprocess) just exits. */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	vrt_entry_fini();
	real_exit(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	vrt_entry_fini();
	real_exit(status);
}

/* ---- pthread_exit from main ---------------------------------------------
 *
 * main_gone: the main thread called pthread_exit. exiting: the exit thread
 * was started (once). */
static _Atomic int main_gone, exiting;

static void *exit_main(void *arg)
{
	(void)arg;
	/* What the program's last thread would have done, with no signal
	 * blocked, so that one sent now acts as it would have. */
	sigset_t none;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	exit(0);
}

/* Helper threads' tick: once main has gone and only our threads remain,
 * end the process as glibc would have when its last thread ended. */
static void watch_exit(void)
{
	if (!atomic_load(&main_gone) || atomic_load(&exiting) ||
	    !vrt_capture_only_helpers_left() ||
	    atomic_exchange(&exiting, 1))
		return;
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, exit_main, NULL) != 0)
		atomic_store(&exiting, 0); /* try again at the next tick */
	pthread_attr_destroy(&attr);
}

__attribute__((visibility("default"), noreturn)) void pthread_exit(void *ret)
{
	static void (*real)(void *);
	if (!real && vrt_real_dlsym)
		real = (void (*)(void *))vrt_real_dlsym(RTLD_NEXT,
		                                        "pthread_exit");
	if (syscall(SYS_gettid) == getpid() && vrt_entry_is_self())
		atomic_store(&main_gone, 1);
	if (real)
		real(ret);
	/* No libc to end the thread through: should never happen. */
	for (;;)
		syscall(SYS_exit, 0);
}
