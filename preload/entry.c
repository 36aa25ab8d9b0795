/*
 * entry.c — the lifecycle, and nowhere else: constructor, destructor,
 * _exit, pthread_atfork handlers, thread exit. What happens between start-
 * up and shutdown (when the trace is made, recording, standby, the
 * services that run meanwhile) is the session's (session.c); this file
 * sets things up, registers the services and drives the session.
 *
 * Constructor: reads the options, picks the run directory, sets up the
 * core (buffers, stacks, rules), registers the services (the control and
 * metrics endpoints, the sampler) and arms the session: the trace file and
 * the writer thread are only made at the first recorded event.
 *
 * Destructor (run by exit after atexit handlers and the destructors of
 * libraries loaded after us): shuts the session down, letting the writer
 * flush and write the trailer within a bounded time, then prints the one
 * warning if capture had stopped early. Hooks pass straight through after.
 *
 * _exit/_Exit (os._exit in Python, forked workers) skip the destructors, so
 * they are interposed to do the same flush before the real exit, noting the
 * status for the trailer first (exit() and a return from main reach an
 * on_exit handler the session registers, session.c). Before the shutdown,
 * the command `record` started leaves its trace if it made none
 * (vrt_session_root_exit).
 *
 * vfork: a vfork child shares our memory (and our helper threads' state)
 * until it execs or exits, and atfork handlers do not run in it, so its
 * pid differs from the session's. There _exit, _Exit and the destructor (a
 * child calling exit()) do nothing but exit: a shutdown there would close
 * the parent's trace and stop its threads' services. (Python's subprocess
 * vforks, and a failed exec ends its child with _exit.)
 *
 * Fork: the prepare handler takes the core's mutexes (and the session's)
 * so the child never inherits them held; the child forgets the parent's
 * buffered events, writer and services, closes what is still ours of the
 * parent's fds (fds.c), and is armed again: its first event starts its own
 * trace file.
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
 * writable by nobody else (rundir.h; the session checks it at its start);
 * otherwise recording is off with one warning and the program runs on.
 * That covers the default ./vramtrace-run-<pid> in a shared working
 * directory such as /tmp.
 *
 * The agent of `vramtrace attach` (libvramtrace_agent.so, built from this
 * file with VRT_AGENT) shares the set-up (vrt_entry_setup, called by its
 * attach entry in agent.c instead of a constructor), the fork handlers
 * (a child of an attached process records nothing), thread exit and the
 * destructor (a process that exits while attached ends its trace
 * cleanly); the run directory, _exit and pthread_exit are the preload's.
 *
 * Everything here runs in the constructor, the destructor, exit or the
 * fork handlers; the state it keeps (main_gone, exiting) is atomic.
 */
#include "clock.h"
#include "hook.h"
#include "live.h"
#include "real.h"
#include "rules.h"
#include "session.h"
#include "standby.h"

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
#include <time.h>
#include <unistd.h>

#define RULES_MAX (1u << 20)

static pthread_key_t exit_key;
#ifndef VRT_AGENT
static char run_dir[PATH_MAX];
/* When the constructor ran: the start of a trace made at exit (the root
 * of a recorded tree that made no GPU call, session.c). */
static uint64_t start_mono, start_wall;
/* Looked up by the constructor: a vfork child must not take the
 * loader's locks (dlsym) that a thread of its parent may hold. */
static void (*real__exit)(int);
static void watch_exit(void);
#endif

static void thread_exit(void *arg)
{
	(void)arg;
	vrt_tbuf_thread_exit();
}

/* The exit destructor only runs for threads with a key value set. glibc
 * keeps the values of the first 32 keys inside the thread descriptor, so
 * this does not allocate. */
static void on_claim(void)
{
	pthread_setspecific(exit_key, (void *)1);
}

/* The sampler as a service of the session: started with the mode (standby
 * keeps its readings), first of all, and first into a fork (it records
 * while inside NVML, whose lock comes before all of ours). */
static int sampler_start(const char *dir)
{
	(void)dir;
	return vrt_sampler_start((int)vrt_options_int(VRT_OPT_SAMPLE_MS),
	                         (int)vrt_options_int(VRT_OPT_NVML));
}

static const struct vrt_session_service sampler_service = {
        .name = "sampler",
        .flags = VRT_SESSION_WITH_MODE,
        .start = sampler_start,
        .stop = vrt_sampler_stop,
        .before_fork = vrt_sampler_before_fork,
        .after_fork_parent = vrt_sampler_after_fork_parent,
        .after_fork_child = vrt_sampler_after_fork_child,
};

static void before_fork(void)
{
	vrt_session_before_fork();
	vrt_writer_before_fork();
	vrt_stack_before_fork();
	vrt_tbuf_before_fork();
}

static void after_fork_parent(void)
{
	vrt_tbuf_after_fork_parent();
	vrt_stack_after_fork_parent();
	vrt_writer_after_fork_parent();
	vrt_session_after_fork_parent();
}

static void after_fork_child(void)
{
	vrt_tbuf_after_fork_child();
	vrt_stack_after_fork_child();
	vrt_phase_after_fork_child();
	vrt_writer_after_fork_child();
	vrt_live_after_fork_child();
	/* The services and standby; the child armed again. */
	vrt_session_after_fork_child();
	/* After every module forgot its fds: close those still ours. */
	vrt_fds_after_fork_child();
	vrt_capture_forget_helpers();
#ifdef VRT_AGENT
	/* A child of an attached process inherits the jumps into our
	 * wrappers, but no `vramtrace attach` watches it: it records
	 * nothing, and its wrappers pass every call straight through. */
	vrt_capture_fail("not recorded: a child forked after the attach");
	vrt_capture_forget_failure();
#endif
}

#ifndef VRT_AGENT
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

#endif

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

int vrt_entry_setup(void)
{
	if (pthread_key_create(&exit_key, thread_exit) != 0 ||
	    vrt_tbuf_init((size_t)vrt_options_int(VRT_OPT_BUFFER_MB) << 20)) {
		fprintf(stderr, "vramtrace: warning: cannot set up capture; "
		                "not recording\n");
		return -1;
	}
	vrt_tbuf_set_fold((int)vrt_options_int(VRT_OPT_FOLD));
	vrt_batch_set((int)vrt_options_int(VRT_OPT_BATCH));
	vrt_batch_set_time_us(vrt_options_int(VRT_OPT_TIME_US));
	vrt_stack_init((int)vrt_options_int(VRT_OPT_STACKS),
	               (int)vrt_options_int(VRT_OPT_STACK_DEPTH));
	load_rules();
	vrt_tbuf_on_claim = on_claim;
	vrt_live_set_stack_phase(vrt_stack_phase);
	/* Standby keeps an allocation on the current device without its
	 * device: the live table asks each runtime by address. */
	vrt_live_set_device_of(vrt_hook_cuda.vendor, vrt_hook_cuda.device_of);
	vrt_live_set_device_of(vrt_hook_hip.vendor, vrt_hook_hip.device_of);
	vrt_standby_set_conns(vrt_hook_libc_each_conn);
	/* Stopped in this order at shutdown; the sampler starts first
	 * (with the mode). */
	vrt_session_register(&vrt_control_service);
#ifndef VRT_AGENT
	vrt_session_register(&vrt_metrics_service);
#endif
	vrt_session_register(&sampler_service);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	return 0;
}

#ifndef VRT_AGENT
__attribute__((constructor)) static void vrt_entry_init(void)
{
	vrt_hooklib_init();
	/* The preload's own I/O: libc's functions after ours (real.h). */
	vrt_real_fill(vrt_hook_libc_next);
	vrt_session_init();
	real__exit = (void (*)(int))vrt_hooklib_real_dlsym(RTLD_NEXT, "_exit");
	vrt_capture_tick = watch_exit;
	{
		struct timespec w;
		clock_gettime(CLOCK_REALTIME, &w);
		start_wall = (uint64_t)w.tv_sec * 1000000000u +
		             (uint64_t)w.tv_nsec;
		start_mono = vrt_clock_now();
	}
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
	vrt_session_set_run_dir(run_dir);
	if (vrt_entry_setup())
		return;
	vrt_metrics_init();
	vrt_hook_env_init(run_dir);
	vrt_session_arm();
	if (vrt_options_int(VRT_OPT_DEBUG))
		fprintf(stderr, "vramtrace: pid %d armed, run directory %s\n",
		        (int)getpid(), run_dir);
}
#endif

__attribute__((destructor)) static void vrt_entry_fini(void)
{
	/* A vfork child calling exit(): everything here is the parent's. */
	if (!vrt_session_is_self())
		return;
#ifndef VRT_AGENT
	/* (an attached process is no root of a recorded tree) */
	vrt_session_root_exit(start_mono, start_wall);
#endif
	int was = vrt_session_shutdown();
	vrt_session_warn();
	if (vrt_options_int(VRT_OPT_DEBUG) && was == VRT_STATE_ON)
		fprintf(stderr,
		        "vramtrace: pid %d: %llu events, %llu dropped\n",
		        (int)getpid(), (unsigned long long)vrt_tbuf_events(),
		        (unsigned long long)vrt_tbuf_dropped());
}

#ifndef VRT_AGENT
__attribute__((noreturn)) static void real_exit(int status)
{
	void (*real)(int) = real__exit;
	if (!real)
		real = (void (*)(int))vrt_hooklib_real_dlsym(RTLD_NEXT, "_exit");
	if (real)
		real(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* The same as the destructor, for processes that leave through _exit; a
 * vfork child (a failed exec in Python's subprocess) just exits. */
__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	vrt_session_note_exit(status);
	vrt_entry_fini();
	real_exit(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	vrt_session_note_exit(status);
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
	if (!real)
		real = (void (*)(void *))vrt_hooklib_real_dlsym(RTLD_NEXT,
		                                                "pthread_exit");
	if (syscall(SYS_gettid) == getpid() && vrt_session_is_self())
		atomic_store(&main_gone, 1);
	if (real)
		real(ret);
	/* No libc to end the thread through: should never happen. */
	for (;;)
		syscall(SYS_exit, 0);
}
#endif
