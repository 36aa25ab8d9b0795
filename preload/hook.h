/*
 * Interposition layer internals shared by hook_*.c.
 *
 * vrt_hook_enter() decides whether a hooked call is recorded: not when
 * capture is off, and not when the thread is already inside a hook (a
 * driver calling one of its own exports, a signal handler interrupting
 * a hook); only the outermost call records. The flag lives in
 * initial-exec TLS, so reading it never allocates.
 */
#ifndef VRT_HOOK_H
#define VRT_HOOK_H

#include "core.h"

#include <vramtrace/trace_format.h>

static inline int vrt_hook_enter(void)
{
	if (vrt_in_hook)
		return 0;
	int s = atomic_load_explicit(&vrt_state, memory_order_relaxed);
	if (VRT_UNLIKELY(s != VRT_STATE_ON) && s != VRT_STATE_STANDBY &&
	    (s != VRT_STATE_ARMED || !vrt_state_start()))
		return 0;
	vrt_in_hook = 1;
	return 1;
}

/* hook_lib.c: one event from a hook. Always updates the live table;
 * when recording, also adds the call stack (for allocations, failures,
 * maps and probes) and the thread's announced phase, and writes it; in
 * standby, keeps what it says about the run (standby.h) and the stack of
 * a large allocation. */
void vrt_hook_record(struct vrt_ev *ev);

/* ---- hook_lib.c: what every runtime's wrappers share ------------------ */

/* A GPU runtime as the shared recording code asks it (its vendor ops):
 * each runtime's file fills one, with functions that call the runtime's
 * real entry points directly (never our wrappers, so the program's own
 * counters stay exact). Any thread, inside a hook. */
struct vrt_hook_vendor {
	int vendor; /* enum vrt_vendor */
	/* The calling thread's current device, or VRT_DEVICE_UNKNOWN. */
	int (*current_device)(void);
	/* The current device's free/total bytes: 1, or 0 when the runtime
	 * cannot say. */
	int (*mem_info)(size_t *free_b, size_t *total_b);
	/* How many devices the runtime sees, into *n: 1, or 0 when it cannot
	 * say. */
	int (*count)(int *n);
	/* What describes device ordinal in the inventory: its name (into buf,
	 * at most len - 1 bytes, NUL-terminated by the runtime), its total
	 * bytes, its 16-byte uuid (the runtime's uuid struct, 16 chars, is
	 * written at out). Each returns 1, or 0 when the runtime cannot say
	 * (the field stays empty). */
	int (*name)(int ordinal, char *buf, int len);
	int (*total)(int ordinal, size_t *bytes);
	int (*uuid)(int ordinal, void *out);
	/* The device of a device allocation by its address; < 0 when the
	 * runtime cannot say (for vrt_live_set_device_of: from the thread
	 * reading the live table, which may be one of ours; and from an
	 * attached agent's free hook, on the program's thread: its driver
	 * look-ups are cached, no dlsym per call). */
	int (*device_of)(uint64_t addr);
	/* The bytes of the device allocation that starts at addr: 1, or 0
	 * when the runtime cannot say. From the calling thread (its current
	 * context), before the allocation is freed. */
	int (*size_of)(uint64_t addr, uint64_t *size);
	_Atomic int inventory; /* 0 todo, 1 busy or done, 2+ failures */
};

/* hook_cuda.c, hook_hip.c: the two runtimes' ops. */
extern struct vrt_hook_vendor vrt_hook_cuda VRT_HIDDEN;
extern struct vrt_hook_vendor vrt_hook_hip VRT_HIDDEN;

/* Defines a runtime's ops as var, from the static functions its file
 * defines under these names. */
#define VRT_HOOK_VENDOR_DEFINE(var, vendor_id)                                 \
	struct vrt_hook_vendor var = {.vendor = vendor_id,                     \
	                              .current_device = cur_device,            \
	                              .mem_info = mem_info,                    \
	                              .count = device_count,                   \
	                              .name = device_name,                     \
	                              .total = device_total,                   \
	                              .uuid = device_uuid,                     \
	                              .device_of = device_of,                  \
	                              .size_of = size_of}

/* Names, totals and uuids of every device of v, queued once for the trace
 * (vrt_writer_devices) after the runtime answered a memory call (so it is
 * initialised); a failed count is tried again at a few later calls. */
void vrt_hook_inventory(struct vrt_hook_vendor *v);

/* The events every runtime's wrappers make, through vrt_hook_record; the
 * allocating ones take the inventory first, so a process whose first call
 * fails still names every device. */
void vrt_hook_alloc(struct vrt_hook_vendor *v, int api, int dev, uint64_t addr,
                    uint64_t size, uint64_t aux);
void vrt_hook_free(int api, int dev, uint64_t addr, uint64_t aux);
/* vrt_hook_alloc for an allocation on the caller's current device, asked
 * of v only when recording. In standby the live table keeps the device
 * for later (v->device_of), so that standby costs no runtime call. */
void vrt_hook_alloc_cur(struct vrt_hook_vendor *v, int api, uint64_t addr,
                        uint64_t size, uint64_t aux);
/* MAP or UNMAP (rec) of a virtual range; the reader finds the device. */
void vrt_hook_map(int rec, int api, uint64_t addr, uint64_t size,
                  uint64_t offset, uint64_t handle);
/* The program's own free/total probe of the current device. */
void vrt_hook_meminfo(struct vrt_hook_vendor *v, int api, uint64_t free_b,
                      uint64_t total_b);

/* A failed call (error: the runtime's code). For an allocation on the
 * caller's current device, the runtime's free/total is asked right away;
 * and the frame is closed and synced before the host sees the error, so a
 * host that dies next still leaves it on disk. An allocation refused for
 * lack of memory in standby is recorded all the same: the process records
 * for this call (kept facts, a snapshot, the failure), then goes back to
 * standby. */
void vrt_hook_fail(struct vrt_hook_vendor *v, int api, int dev, uint64_t addr,
                   uint64_t size, uint64_t aux, uint32_t error);
/* The device a failed free is charged to: a successful free is charged to
 * its allocation's device by the reader, but a failed one names no known
 * allocation, so it goes to the device the caller was working on. */
static inline int vrt_hook_fail_device(struct vrt_hook_vendor *v, int dev)
{
	return dev == VRT_DEVICE_UNKNOWN ? v->current_device() : dev;
}

/*
 * The bodies of the wrappers, one for each shape of call, shared by the
 * runtimes. A runtime's file defines, before using them:
 *   VRT_HOOK_RT        "OK, NI, V": its success code, its code for "no
 *                      real function" and its struct vrt_hook_vendor;
 *   VRT_HOOK_REAL(f)   the real function behind our wrapper f, or NULL.
 * A wrapper's body is then one of VRT_HOOK_ALLOC, VRT_HOOK_ALLOC2,
 * VRT_HOOK_ALLOC_CUR, VRT_HOOK_FREE, VRT_HOOK_MAP, VRT_HOOK_MEMINFO, with
 * the wrapper's own name f (its API id is VRT_API_<f>) and its arguments
 * args, parenthesised as the call passes them. Each answers NI when the
 * real function cannot be found, passes the call through when the thread
 * is already inside a hook (or capture is off), returns exactly what the
 * runtime returned, and records the outcome.
 */
#define VRT_HOOK_CALL_(NI, f, args, skip)                                      \
	__typeof__(&f) real_ = VRT_HOOK_REAL(f);                               \
	if (VRT_UNLIKELY(!real_))                                              \
		return NI;                                                     \
	if ((skip) || !vrt_hook_enter())                                       \
		return real_ args;                                             \
	vrt_tbuf_call(1);                                                      \
	__typeof__(real_ args) r_ = real_ args

/* An allocation on device dev (evaluated once, after the call) handing out
 * out_expr; a success that hands out no pointer (HIP's answer to a
 * zero-byte request) allocated nothing and is no event. ok_size is the
 * size recorded for a success, fail_size for a failure (they differ for
 * pitched allocations). */
#define VRT_HOOK_ALLOC2_(OK, NI, V, f, args, dev, out_expr, ok_size,           \
                         fail_size, aux_expr)                                  \
	do {                                                                   \
		VRT_HOOK_CALL_(NI, f, args, 0);                                \
		int dev_ = (dev);                                              \
		uint64_t out_ = r_ == OK ? (uint64_t)(out_expr) : 0;           \
		if (out_)                                                      \
			vrt_hook_alloc(V, VRT_API_##f, dev_, out_, (ok_size),  \
			               (aux_expr));                            \
		else if (r_ != OK)                                             \
			vrt_hook_fail(V, VRT_API_##f, dev_, 0, (fail_size),    \
			              (aux_expr), (uint32_t)r_);               \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

#define VRT_HOOK_ALLOC_(OK, NI, V, f, args, dev, out_expr, size_expr,          \
                        aux_expr)                                              \
	VRT_HOOK_ALLOC2_(OK, NI, V, f, args, dev, out_expr, size_expr,         \
	                 size_expr, aux_expr)

/* An allocation on the caller's current device: asked of the runtime only
 * when recording (vrt_hook_alloc_cur) or for a failure. */
#define VRT_HOOK_ALLOC_CUR_(OK, NI, V, f, args, out_expr, size_expr, aux_expr) \
	do {                                                                   \
		VRT_HOOK_CALL_(NI, f, args, 0);                                \
		uint64_t out_ = r_ == OK ? (uint64_t)(out_expr) : 0;           \
		if (out_)                                                      \
			vrt_hook_alloc_cur(V, VRT_API_##f, out_, (size_expr),  \
			                   (aux_expr));                        \
		else if (r_ != OK)                                             \
			vrt_hook_fail(V, VRT_API_##f, (V)->current_device(),   \
			              0, (size_expr), (aux_expr),              \
			              (uint32_t)r_);                           \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* A free of addr_expr on device dev; a NULL free is not an event. In the
 * agent of `vramtrace attach`, a device pointer its recording has not seen
 * allocated is asked about before the call (its size and device, gone
 * after it) and its free recorded as a PREFREE (agent.c). */
#ifdef VRT_AGENT
struct vrt_prefree {
	uint64_t size;
	int device;
};
int vrt_agent_prefree(struct vrt_hook_vendor *v, int api, uint64_t addr,
                      struct vrt_prefree *out);
void vrt_agent_freed(int api, uint64_t addr, const struct vrt_prefree *pf);
#define VRT_HOOK_PRE_(V, f, addr)                                              \
	struct vrt_prefree pf_;                                                \
	int pre_ = vrt_agent_prefree(V, VRT_API_##f, (addr), &pf_)
#define VRT_HOOK_FREED_(f, dev, addr, aux)                                     \
	(pre_ ? vrt_agent_freed(VRT_API_##f, (addr), &pf_)                     \
	      : vrt_hook_free(VRT_API_##f, (dev), (addr), (aux)))
#else
#define VRT_HOOK_PRE_(V, f, addr) (void)0
#define VRT_HOOK_FREED_(f, dev, addr, aux)                                     \
	vrt_hook_free(VRT_API_##f, (dev), (addr), (aux))
#endif

#define VRT_HOOK_FREE_(OK, NI, V, f, args, dev, addr_expr, aux_expr)           \
	do {                                                                   \
		__typeof__(&f) real_ = VRT_HOOK_REAL(f);                       \
		if (VRT_UNLIKELY(!real_))                                      \
			return NI;                                             \
		if ((addr_expr) == 0 || !vrt_hook_enter())                     \
			return real_ args;                                     \
		VRT_HOOK_PRE_(V, f, (addr_expr));                              \
		vrt_tbuf_call(1); /* in progress, as VRT_HOOK_CALL_ */         \
		__typeof__(real_ args) r_ = real_ args;                        \
		int dev_ = (dev);                                              \
		if (r_ == OK)                                                  \
			VRT_HOOK_FREED_(f, dev_, (addr_expr), (aux_expr));     \
		else                                                           \
			vrt_hook_fail(                                         \
			        V, VRT_API_##f, vrt_hook_fail_device(V, dev_), \
			        (addr_expr), 0, (aux_expr), (uint32_t)r_);     \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* A MAP or UNMAP (rec) of [addr, addr + size); a failure is charged to
 * the current device with the handle as its aux. */
#define VRT_HOOK_MAP_(OK, NI, V, f, args, rec, addr, size, offset, handle)     \
	do {                                                                   \
		VRT_HOOK_CALL_(NI, f, args, 0);                                \
		if (r_ == OK)                                                  \
			vrt_hook_map(rec, VRT_API_##f, (addr), (size),         \
			             (offset), (handle));                      \
		else                                                           \
			vrt_hook_fail(V, VRT_API_##f, (V)->current_device(),   \
			              (addr), (size), (handle), (uint32_t)r_); \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* The program's free/total probe. */
#define VRT_HOOK_MEMINFO_(OK, NI, V, f, args, free_p, total_p)                 \
	do {                                                                   \
		VRT_HOOK_CALL_(NI, f, args, 0);                                \
		if (r_ == OK && (free_p) && (total_p))                         \
			vrt_hook_meminfo(V, VRT_API_##f, *(free_p),            \
			                 *(total_p));                          \
		vrt_hook_leave();                                              \
		return r_;                                                     \
	} while (0)

/* The bodies with the runtime's VRT_HOOK_RT in front (expanded into its
 * three arguments before the body macro sees them). */
#define VRT_HOOK_APPLY_(m, ...) m(__VA_ARGS__)
#define VRT_HOOK_ALLOC(...)                                                    \
	VRT_HOOK_APPLY_(VRT_HOOK_ALLOC_, VRT_HOOK_RT, __VA_ARGS__)
#define VRT_HOOK_ALLOC2(...)                                                   \
	VRT_HOOK_APPLY_(VRT_HOOK_ALLOC2_, VRT_HOOK_RT, __VA_ARGS__)
#define VRT_HOOK_ALLOC_CUR(...)                                                \
	VRT_HOOK_APPLY_(VRT_HOOK_ALLOC_CUR_, VRT_HOOK_RT, __VA_ARGS__)
#define VRT_HOOK_FREE(...)                                                     \
	VRT_HOOK_APPLY_(VRT_HOOK_FREE_, VRT_HOOK_RT, __VA_ARGS__)
#define VRT_HOOK_MAP(...)                                                      \
	VRT_HOOK_APPLY_(VRT_HOOK_MAP_, VRT_HOOK_RT, __VA_ARGS__)
#define VRT_HOOK_MEMINFO(...)                                                  \
	VRT_HOOK_APPLY_(VRT_HOOK_MEMINFO_, VRT_HOOK_RT, __VA_ARGS__)

/* Like vrt_hook_enter, but never starts the writer: for events that only
 * matter in a process that is recording anyway (fork, exec), so that
 * shells and wrappers of a traced tree leave no file. */
static inline int vrt_hook_enter_if_on(void)
{
	if (vrt_in_hook || !vrt_capture_on())
		return 0;
	vrt_in_hook = 1;
	return 1;
}

static inline void vrt_hook_leave(void)
{
	vrt_tbuf_call(0);
	vrt_in_hook = 0;
}

/* ---- hook_env.c: children keep the preload ---------------------------- */

#define VRT_HOOK_ENV_VEC 1024

/* Room for a child's environment with our variables added; lives on the
 * caller's stack (a vfork child must not malloc). */
struct vrt_hook_env {
	char *vec[VRT_HOOK_ENV_VEC];
	char ld[2 * 4096 + 64]; /* the new LD_PRELOAD entry */
	void *heap;             /* vec when it did not fit (malloc) */
};

/* From the constructor, once capture is enabled: our library's path and
 * the run directory (copied) that children must inherit. Not called:
 * environments pass unchanged. */
void vrt_hook_env_init(const char *run_dir);
/* envp, or a copy in b that adds our LD_PRELOAD entry, VRAMTRACE_OUT and
 * our other VRAMTRACE_* settings where envp lacks them (not when envp
 * sets VRAMTRACE_ENABLE false).
 * Async-signal-safe in a vfork child (stack only: when the copy does not
 * fit, envp itself); may malloc in this process. Release b after the
 * call that used the result returned. */
char *const *vrt_hook_env_fix(char *const envp[], struct vrt_hook_env *b);
void vrt_hook_env_release(struct vrt_hook_env *b);

/* hook_libc.c: calls conn for every accepted connection still open (its
 * listening fd, enum vrt_net_kind), then req for each request in flight
 * on it (its HTTP/2 stream or 0, its VRT_NET_F_* flags), each connection
 * under its lock: the functions must not do I/O on it. For the
 * snapshot. */
void vrt_hook_libc_each_conn(void (*conn)(int fd, int listener, int kind,
                                          void *arg),
                             void (*req)(int fd, uint32_t stream,
                                         unsigned flags, void *arg),
                             void *arg);

/* hook_libc.c, for the agent: announces a socket the program opened before
 * the attach — a listening one (listener < 0: its LISTEN event) or one it
 * accepted from listener (tracked from now on, as at its accept; its first
 * bytes read begin a request). From the agent's thread. */
void vrt_hook_libc_adopt(int fd, int listener);

/* agent.c: the function a libc wrapper calls as the real one: the
 * trampoline of the hooked function, else libc's own. Never NULL for a
 * function libc has. */
void *vrt_agent_real(const char *name);

/* hook_libc.c: the next definition of libc function name, as the libc
 * wrappers find theirs (after the preload; in the agent, the trampoline:
 * vrt_agent_real). The resolver the real-libc table is filled with
 * (real.h: vrt_real_fill). NULL when none is found (yet). */
void *vrt_hook_libc_next(const char *name);

/* hook_libc.c, in the agent: its libc wrappers by name
 * (VRT_ATTACH_LIBC_HOOKS), whose entries agent.c plans jumps to. Their
 * addresses are taken where they are defined, so no other file of the
 * preload names a hooked libc function. */
struct vrt_hook_libc_wrapper {
	const char *name;
	void *fn;
};
extern const struct vrt_hook_libc_wrapper vrt_hook_libc_wrappers[];
extern const int vrt_hook_libc_nwrappers;

/* hook_lib.c: the libc dlsym behind our interposed one (hook_libc.c) is
 * the real-libc table's first entry (real.h: vrt_real.dlsym), looked up
 * by vrt_hooklib_init. */
void vrt_hooklib_init(void);
/* libc's dlsym(handle, name) (after vrt_hooklib_init), NULL when libc's
 * could not be found. Any thread. */
void *vrt_hooklib_real_dlsym(void *handle, const char *name);

/* ---- hook_lib.c: a runtime library whose exports we wrap --------------- */

struct vrt_hook {
	const char *name; /* the library's export, and our wrapper's name */
	void *wrapper;
	const char *base; /* CUDA: the name a resolver is asked for */
	int min_version;  /* CUDA: lowest cudaVersion answered with it */
	int ptsz;         /* CUDA: the per-thread-default-stream variant */
};

struct vrt_hooklib {
	const char *file_prefix;      /* "libcuda.so": how dladdr names it */
	const char *const *sonames;   /* NULL-terminated, for RTLD_NOLOAD */
	const struct vrt_hook *hooks; /* by hook id */
	_Atomic(void *) *real;        /* real functions, by hook id */
	int count;
	_Atomic(void *) base; /* load address, once seen */
	_Atomic int path_set;
	char path[512];
};

/* Whether addr lies in the library (recognised by file name, then by
 * load address). Calls dladdr: not for the per-call hot path. */
int vrt_hooklib_owns(struct vrt_hooklib *l, void *addr);
/* The library's own definition of name, never ours; NULL if none. */
void *vrt_hooklib_sym(struct vrt_hooklib *l, const char *name);
void *vrt_hooklib_real_slow(struct vrt_hooklib *l, int idx);
/* Our wrapper for hook idx if real may be recorded as its real function
 * (first answer, or the same again), else real itself. */
void *vrt_hooklib_substitute(struct vrt_hooklib *l, int idx, void *real);
/* Hook id of an export name, or -1. */
int vrt_hooklib_find(const struct vrt_hooklib *l, const char *symbol);
/* dlsym's answer for symbol, with our wrapper when the library gave it. */
void *vrt_hooklib_dlsym(struct vrt_hooklib *l, const char *symbol, void *addr);

/* A function of the library we call ourselves (not a hooked one), looked
 * up on first use and kept in *slot. NULL when the library lacks it. */
void *vrt_hooklib_aux(struct vrt_hooklib *l, _Atomic(void *) *slot,
                      const char *name);

/* The real function behind hook idx (looked up on first use). */
static inline void *vrt_hooklib_real(struct vrt_hooklib *l, int idx)
{
	void *p = atomic_load_explicit(&l->real[idx], memory_order_relaxed);
	return VRT_LIKELY(p != NULL) ? p : vrt_hooklib_real_slow(l, idx);
}

/* resolvelog.c: the resolver log (VRAMTRACE_RESOLVE_LOG). on: whether it is
 * wanted (one option read). note: appends one look-up — via is the
 * function the caller used, version/flags/result/status the arguments and
 * codes (VRT_RESOLVELOG_NONE: not part of that call), wrapped whether ptr
 * is our wrapper, ptr what the caller got. Any thread, inside a hook;
 * takes a spin lock and writes: for look-ups, not for the per-call path. */
#define VRT_RESOLVELOG_NONE (-0x7fffffffffffffffLL - 1)
int vrt_resolvelog_on(void);
void vrt_resolvelog_note(const char *via, const char *name, long long version,
                         long long flags, long long result, long long status,
                         int wrapped, const void *ptr);

/* hook_cuda.c: if symbol is a hooked driver export and addr is the
 * driver's definition of it, returns our wrapper; else addr. Called by
 * dlsym for every successful look-up of a name starting with "cu". */
void *vrt_hook_cuda_dlsym(const char *symbol, void *addr);

/* hook_cuda.c, hook_hip.c: the runtime's table (its hooks, by the ids of
 * hook_table.h, and their real functions), for the agent, which points
 * the real functions at its trampolines before any wrapper runs. */
struct vrt_hooklib *vrt_hook_cuda_lib(void);
struct vrt_hooklib *vrt_hook_hip_lib(void);

/* hook_hip.c: the same for the HIP runtime: our wrapper when symbol is a
 * hooked export and addr is libamdhip64's definition of it; else addr.
 * Called by dlsym for every successful look-up of a name starting with
 * "hip". */
void *vrt_hook_hip_dlsym(const char *symbol, void *addr);

#endif /* VRT_HOOK_H */
