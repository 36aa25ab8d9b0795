/*
 * attach_proto.h — the contract between `vramtrace attach` (the injector,
 * analyzer/record/attach.c and inject.c) and the agent it loads into a running
 * process (libvramtrace_agent.so, preload/agent.c). Header only: both
 * sides include it and link nothing of the other.
 *
 * The injector calls, on one borrowed thread of the target,
 *
 *     dlopen(AGENT, RTLD_NOW | RTLD_LOCAL)
 *     VRT_ATTACH_ENTRY(const char *config)   -> struct vrt_attach_plan *
 *
 * config: lines "key=value" (VRT_ATTACH_CFG_*, and VRAMTRACE_* options as
 * the preload reads them from its environment), at most
 * VRT_ATTACH_CONFIG_MAX bytes. The entry sets the agent up (or takes it up
 * again after an earlier detach: a process keeps one agent for good), starts
 * a recording in the run directory, and fills the plan: for each driver
 * and libc entry point it wants hooked, the function's address, the
 * wrapper, and a slot in a page it mapped within reach of a 32-bit jump
 * (a trampoline that for now jumps to the function itself, then a relay
 * that jumps to the wrapper). It returns at once; no thread calls a
 * wrapper until the injector writes the jumps.
 *
 * The injector then relocates each function's first instructions into its
 * slot (the trampoline the wrapper calls as the real function), and, with
 * every thread of the target stopped and none inside a range it replaces,
 * writes a jump to the relay over the function's first bytes (after an
 * endbr64, which stays). It records what it did in each hook (state,
 * where, the bytes it replaced) and sets `live`. The agent's thread then
 * takes the snapshot of what the process held before the attach.
 *
 * Detach: the injector stops every thread again, puts the original bytes
 * back (retrying while a thread is inside a replaced range), lets the
 * threads run until none is inside a wrapper (the thread's vrt_in_hook,
 * read at its thread pointer + tls_in_hook, or its instruction pointer in
 * the agent's code or pages), then sets `detach`. The agent ends its
 * recording, its threads and descriptors, and sets `done`. The agent's
 * code and pages stay mapped (a thread may still return through them);
 * nothing of it runs or writes afterwards.
 *
 * When the injector goes away without detaching (killed), the agent sees
 * the attacher's pid gone, turns its hooks into plain pass-throughs (the
 * state every wrapper reads) and ends its recording the same way; the
 * jumps stay, and a later attach finds them recorded in the plan.
 *
 * All fields are written by one side at a time: the agent before it
 * returns from the entry, the injector while every thread is stopped or
 * through the flags below (plain 32-bit stores, read with atomic loads).
 */
#ifndef VRT_ATTACH_PROTO_H
#define VRT_ATTACH_PROTO_H

#include <stdint.h>

#define VRT_ATTACH_AGENT   "libvramtrace_agent.so"
#define VRT_ATTACH_ENTRY   "vramtrace_agent_attach"
#define VRT_ATTACH_MAGIC   0x41545256u /* "VRTA" */
#define VRT_ATTACH_VERSION 1u

#define VRT_ATTACH_CONFIG_MAX 4096
/* config keys */
#define VRT_ATTACH_CFG_OUT      "out"      /* the run directory, absolute */
#define VRT_ATTACH_CFG_ATTACHER "attacher" /* the injector's pid */
#define VRT_ATTACH_CFG_PYTHON   "python"   /* 0: no snapshot in Python */

#define VRT_ATTACH_MAX_HOOKS 64
#define VRT_ATTACH_MAX_PAGES 4
#define VRT_ATTACH_SLOT      128 /* bytes per hook in a page */
#define VRT_ATTACH_TRAMP_MAX 96  /* the trampoline's room in a slot */
#define VRT_ATTACH_RELAY     96  /* the relay's offset in a slot */
#define VRT_ATTACH_ORIG_MAX  32  /* bytes a jump may replace, at most */

/* What a hook is for: the analyzer says so when one is refused. */
enum vrt_attach_lib {
	VRT_ATTACH_LIB_CUDA = 1, /* libcuda.so.1: memory calls */
	VRT_ATTACH_LIB_HIP = 2,  /* libamdhip64.so: memory calls */
	VRT_ATTACH_LIB_LIBC = 3, /* libc: sockets (requests in flight) */
};

/* vrt_attach_hook.state, written by the injector. */
enum vrt_attach_state {
	VRT_ATTACH_UNTOUCHED = 0, /* the function runs as it was */
	VRT_ATTACH_PATCHED = 1,   /* the jump is in place */
	VRT_ATTACH_REFUSED = 2,   /* the relocator could not move it (why) */
};

struct vrt_attach_hook {
	char name[48];
	uint32_t lib;       /* enum vrt_attach_lib */
	uint32_t state;     /* enum vrt_attach_state */
	uint64_t target;    /* the function's entry */
	uint64_t wrapper;   /* ours */
	uint64_t slot;      /* trampoline at slot, relay at slot + RELAY */
	uint32_t patch_off; /* where the jump goes: 4 after an endbr64 */
	uint32_t patch_len; /* bytes replaced there (instructions moved) */
	uint8_t orig[VRT_ATTACH_ORIG_MAX]; /* those bytes, for detach */
	char why[160];                     /* REFUSED: the reason */
};

struct vrt_attach_plan {
	uint32_t magic, version, size; /* sizeof(struct vrt_attach_plan) */
	int32_t status;                /* 0 ready, else a negative errno */
	char message[256];             /* why not, when status != 0 */
	uint32_t session;              /* attaches so far in this process */
	uint32_t npages;
	uint64_t page[VRT_ATTACH_MAX_PAGES]; /* slot pages, each a page
	                                      * (4096 bytes) */
	uint64_t text_lo, text_hi; /* the agent's own code */
	int64_t tls_in_hook;       /* vrt_in_hook - the thread pointer */
	uint32_t nhooks;
	uint32_t pad;
	/* Flags (0/1). live, detach: the injector's; done, stop_requested,
	 * the agent's (stop_requested: `vramtrace ctl stop` asked for a
	 * detach). */
	uint32_t live, detach, done, stop_requested;
	char trace[512]; /* the trace file this session writes */
	struct vrt_attach_hook hooks[VRT_ATTACH_MAX_HOOKS];
};

/* The libc functions hooked for requests in flight (HTTP framing on
 * accepted connections, as the preload's hook_libc.c does), and for the
 * descriptors of our own the program might close. */
#define VRT_ATTACH_LIBC_HOOKS(X)                                               \
	X(listen) X(accept) X(accept4) X(read) X(readv) X(recv) X(recvfrom)    \
	X(recvmsg) X(write) X(writev) X(send) X(sendto) X(sendmsg) X(close)    \
	X(dup2) X(dup3)

#endif /* VRT_ATTACH_PROTO_H */
