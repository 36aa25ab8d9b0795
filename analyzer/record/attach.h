/*
 * attach.h — attaching to one running process (`vramtrace attach`,
 * docs/attach.md): the checks that refuse before anything is touched, the
 * agent loaded and started through the injector (inject.h), the inline
 * hooks written (relocate.h), and the detach that puts everything back.
 * The protocol with the agent is common/attach_proto.h.
 *
 * Functions return 0, or -1 with the reason in a->why (a sentence that
 * names the process, and the fix where there is one). Single-threaded.
 */
#ifndef VRT_ATTACH_H
#define VRT_ATTACH_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach_proto.h"
#include "inject.h"

enum vrt_attach_injector {
	VRT_ATTACH_AUTO = 0,   /* ours; gdb when ours finds no safe thread */
	VRT_ATTACH_PTRACE = 1, /* ours only */
	VRT_ATTACH_GDB = 2,    /* gdb batch mode loads and starts the agent */
};

struct vrt_attach_opts {
	char out_dir[PATH_MAX]; /* the run directory, absolute */
	char agent[PATH_MAX];   /* libvramtrace_agent.so, absolute */
	int injector;           /* enum vrt_attach_injector */
	int python;             /* take the Python snapshot (default 1) */
	int partial;            /* hook what can be hooked; list the rest */
};

/* What one attach or detach cost (CLOCK_MONOTONIC ns). */
struct vrt_attach_cost {
	uint64_t total_ns;   /* from the first ptrace call to the release */
	uint64_t stopped_ns; /* every thread stopped */
	uint64_t borrowed_ns; /* one thread in our calls, the others run */
	unsigned retries;    /* stops that found a thread in our way */
};

struct vrt_attach_library; /* attach.c */

struct vrt_attach {
	pid_t pid;
	char comm[64];
	uint64_t plan_at; /* the agent's plan in the process */
	struct vrt_attach_plan plan;
	struct vrt_inject in;
	const char *used; /* "ptrace" or "gdb" */
	int hooked, refused;
	struct vrt_attach_cost attach_cost, detach_cost;
	/* What preflight read: libraries and their symbols. */
	struct vrt_attach_library *libs;
	int nlibs;
	uint64_t dlopen_at, dlerror_at;
	char why[2048];
};

/* The checks before anything is touched: rights (ptrace, Yama, another
 * tracer, user, namespaces), architecture, a GPU library loaded, not
 * already traced by the preload, and the first instructions of every
 * function to hook (each refused one named, with why). */
int vrt_attach_preflight(struct vrt_attach *a, pid_t pid,
                         const struct vrt_attach_opts *o);

/* Loads and starts the agent, writes the hooks; on return the process
 * runs on, recording into o->out_dir. */
int vrt_attach_start(struct vrt_attach *a, const struct vrt_attach_opts *o);

/* How the session is going, by reading the agent's plan: 0 recording, 1
 * `vramtrace ctl stop` asked for a detach, 2 the session ended (the
 * agent's own decision), 3 the process is gone. */
int vrt_attach_poll(struct vrt_attach *a);

/* Puts the functions back, waits until no thread is inside a wrapper,
 * then has the agent end its recording. 0; 1 detached, but a thread was
 * still inside a wrapper after the wait (why says so; its call may miss
 * the trace); -1 failed. */
int vrt_attach_detach(struct vrt_attach *a);

void vrt_attach_free(struct vrt_attach *a);

#endif /* VRT_ATTACH_H */
