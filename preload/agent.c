/*
 * agent.c — libvramtrace_agent.so, the recording side of `vramtrace
 * attach` (docs/attach.md): what entry.c's constructor is to the preload,
 * for a process that was started without it. The capture core, the
 * session, the wrappers (hook_cuda.c, hook_hip.c, hook_libc.c) and the
 * lifecycle's set-up (entry.c) are the preload's own, built again with
 * VRT_AGENT; this file adds the attach entry, the pages the injector fills,
 * the snapshot of what the process held before, and the agent's thread.
 *
 * The injector (analyzer/record/attach.c) calls vramtrace_agent_attach on a thread
 * of the program it borrowed, with the process's other threads running.
 * The first call sets the core up (vrt_entry_setup) and maps, near each
 * hooked library, a page of slots (attach_proto.h): per hooked function a
 * trampoline that for now jumps to the function itself, and a relay that
 * jumps to our wrapper. The wrappers' real functions point at the
 * trampolines from then on, for good, so a wrapper never calls a function
 * whose entry jumps back to it, whether the injector has relocated the
 * function's first instructions into the trampoline yet or not. Every call
 * starts a session (session.c) in the run directory the command chose,
 * and a thread of ours ("vramtrace-at") that waits for the injector's
 * `live`, takes the snapshot, then waits for `detach` (or for the attacher
 * to vanish) and ends the session. A process keeps its agent after a
 * detach (nothing of it runs then); the next attach finds it and starts a
 * new session.
 *
 * The libc wrappers: hook_libc.c's functions, compiled into this library,
 * keep libc's names but are local to it (the version script exports only
 * the entry). Their real functions come from vrt_agent_real; the
 * library's own reads, writes, closes... call those same functions
 * through the real-libc table (real.h), filled once the trampolines
 * exist, never the wrappers.
 *
 * Threads: the entry runs on the borrowed thread, one call at a time (the
 * injector's); the agent's thread owns the plan's agent-side flags. The
 * plan's flags are read and written with atomic builtins; the injector
 * writes its side while every thread is stopped, or as single aligned
 * stores.
 */
#include "attach_proto.h"
#include "cuda_api.h"
#include "hook.h"
#include "hook_table.h"
#include "live.h"
#include "real.h"
#include "session.h"

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#define PAGE            4096u
#define NEAR_STEP       (64u << 10)
#define NEAR_RANGE      (1ull << 30) /* pages within 1 GiB of a library */
#define LIVE_WAIT_MS    30000        /* for the injector's jumps */
#define WATCH_MS        50
#define MAX_SOCKETS     64 /* listening sockets adopted */
#define PY_OUT_MAX      (4u << 20) /* the Python snapshot's text, at most */
#define PY_TIMEOUT_MS   10000
#define MAX_FRAMES      64
#define REMAINDER_MIN   (2u << 20) /* below: noise, not a bucket */

VRT_EXPORT struct vrt_attach_plan *vramtrace_agent_attach(const char *config);

static struct vrt_attach_plan plan;
static char cfg[VRT_ATTACH_CONFIG_MAX + 2]; /* two NULs end it */
static int set_up;
static pid_t attacher;
static struct vrt_fd attacher_fd = VRT_FD_NONE;
static int want_python;

/* ---- configuration --------------------------------------------------------
 * cfg holds the lines "key=value" the injector passed, cut in place into
 * NUL-terminated keys and values. */

static const char *cfg_get(const char *key)
{
	size_t klen = strlen(key);
	for (const char *p = cfg; *p; p += strlen(p) + 1) {
		if (!strncmp(p, key, klen) && p[klen] == '=')
			return p + klen + 1;
	}
	return NULL;
}

static const char *cfg_option(const char *name, void *arg)
{
	(void)arg;
	return cfg_get(name);
}

/* Copies config into cfg, one NUL-terminated "key=value" per line. */
static void cfg_parse(const char *config)
{
	size_t n = strnlen(config, VRT_ATTACH_CONFIG_MAX);
	memcpy(cfg, config, n);
	cfg[n] = 0;
	for (size_t i = 0; i < n; i++)
		if (cfg[i] == '\n')
			cfg[i] = 0;
	cfg[n + 1] = 0;
}

/* ---- where things are ---------------------------------------------------- */

struct range {
	uintptr_t addr, lo, hi; /* lo, hi: the object holding addr */
	int exec_only;
};

static int object_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct range *r = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int holds = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD ||
		    (r->exec_only && !(ph->p_flags & PF_X)))
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
		holds |= r->addr >= a && r->addr < a + ph->p_memsz;
	}
	if (!holds)
		return 0;
	r->lo = lo;
	r->hi = hi;
	return 1;
}

/* The loaded object holding addr (its code only, or all of it): 0 and
 * [*lo, *hi), or -1. */
static int object_range(const void *addr, int exec_only, uintptr_t *lo,
                        uintptr_t *hi)
{
	struct range r = {(uintptr_t)addr, 0, 0, exec_only};
	if (!dl_iterate_phdr(object_of, &r))
		return -1;
	*lo = r.lo;
	*hi = r.hi;
	return 0;
}

/* A page within NEAR_RANGE of [lo, hi), so a 32-bit jump or displacement
 * reaches from anywhere in the object to anywhere in the page and back;
 * mapped read-write, or NULL. Tries the gaps below the object, then
 * above it, without replacing anything mapped. */
static uint8_t *near_page(uintptr_t lo, uintptr_t hi)
{
	uintptr_t down = lo & ~(uintptr_t)(NEAR_STEP - 1);
	uintptr_t up = (hi + NEAR_STEP - 1) & ~(uintptr_t)(NEAR_STEP - 1);
	for (uintptr_t k = 1; k * NEAR_STEP < NEAR_RANGE - (hi - lo); k++) {
		uintptr_t cand[2] = {down > k * NEAR_STEP ? down - k * NEAR_STEP
		                                          : 0,
		                     up + (k - 1) * NEAR_STEP};
		for (int i = 0; i < 2; i++) {
			if (!cand[i])
				continue;
			void *p = mmap((void *)cand[i], PAGE,
			               PROT_READ | PROT_WRITE,
			               MAP_PRIVATE | MAP_ANONYMOUS |
			                       MAP_FIXED_NOREPLACE,
			               -1, 0);
			if (p == (void *)cand[i])
				return p;
			/* A kernel without MAP_FIXED_NOREPLACE takes it as a
			 * hint and may map elsewhere: not near enough. */
			if (p != MAP_FAILED)
				munmap(p, PAGE);
		}
	}
	return NULL;
}

/* An absolute jump through the 8 bytes that follow it: jmp *0(%rip). */
static size_t put_abs_jump(uint8_t *p, uint64_t to)
{
	static const uint8_t op[6] = {0xff, 0x25, 0, 0, 0, 0};
	memcpy(p, op, sizeof(op));
	memcpy(p + 6, &to, 8);
	return 14;
}

static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};

/* ---- the hooks ------------------------------------------------------------ */

struct want {
	const char *name;
	void *wrapper;
	uint32_t lib;
	_Atomic(void *) *real; /* the runtime's real-function slot, or NULL */
};

/* The handle of a loaded library by its sonames, or NULL (not loaded). */
static void *loaded(const char *const *sonames)
{
	for (const char *const *so = sonames; *so; so++) {
		void *h = dlopen(*so, RTLD_NOW | RTLD_NOLOAD);
		if (h)
			return h;
	}
	return NULL;
}

/* Adds a hook of name found in handle to the plan (its slot comes
 * later). 0, or -1 when the plan is full. */
static int add_hook(void *handle, const struct want *w)
{
	void *target = vrt_hooklib_real_dlsym(handle, w->name);
	if (!target)
		return 0; /* this version of the library lacks it */
	/* A wrapper that is not our own code would be libc's function:
	 * its entry would jump back into itself. */
	if ((uintptr_t)w->wrapper < plan.text_lo ||
	    (uintptr_t)w->wrapper >= plan.text_hi)
		return 0;
	if (plan.nhooks == VRT_ATTACH_MAX_HOOKS)
		return -1;
	struct vrt_attach_hook *h = &plan.hooks[plan.nhooks++];
	snprintf(h->name, sizeof(h->name), "%s", w->name);
	h->lib = w->lib;
	h->target = (uint64_t)(uintptr_t)target;
	h->wrapper = (uint64_t)(uintptr_t)w->wrapper;
	return 0;
}

/* The runtime's memory calls, as hook_table.h lists them; its resolvers
 * are left alone: every pointer they hand out is a function whose entry
 * is hooked. */
static int add_runtime(struct vrt_hooklib *l, void *handle, uint32_t lib,
                       const char *skip_prefix)
{
	for (int i = 0; i < l->count; i++) {
		const struct vrt_hook *k = &l->hooks[i];
		if (!strncmp(k->name, skip_prefix, strlen(skip_prefix)))
			continue;
		struct want w = {k->name, k->wrapper, lib, &l->real[i]};
		if (add_hook(handle, &w))
			return -1;
	}
	return 0;
}

/* Maps the slot pages: the hooks of one library share a page near it.
 * Each slot starts as "endbr64; jmp target" (the trampoline) with the
 * relay "jmp wrapper" after it; the page is then made read-execute (the
 * injector writes it through the process's memory file). */
static int map_slots(uint32_t first, uint32_t end)
{
	if (first == end)
		return 0;
	uintptr_t lo, hi;
	if (object_range((void *)(uintptr_t)plan.hooks[first].target, 1, &lo,
	                 &hi))
		return -ENOENT;
	if ((end - first) * VRT_ATTACH_SLOT > PAGE ||
	    plan.npages == VRT_ATTACH_MAX_PAGES)
		return -ENOSPC;
	uint8_t *page = near_page(lo, hi);
	if (!page)
		return -ENOMEM;
	memset(page, 0xcc, PAGE); /* int3 where nothing is written */
	for (uint32_t i = first; i < end; i++) {
		struct vrt_attach_hook *h = &plan.hooks[i];
		uint8_t *slot = page + (i - first) * VRT_ATTACH_SLOT;
		memcpy(slot, endbr64, sizeof(endbr64));
		put_abs_jump(slot + sizeof(endbr64), h->target);
		put_abs_jump(slot + VRT_ATTACH_RELAY, h->wrapper);
		h->slot = (uint64_t)(uintptr_t)slot;
	}
	if (mprotect(page, PAGE, PROT_READ | PROT_EXEC))
		return -errno;
	plan.page[plan.npages++] = (uint64_t)(uintptr_t)page;
	return 0;
}

static void *libc_handle;

void *vrt_agent_real(const char *name)
{
	for (uint32_t i = 0; i < plan.nhooks; i++)
		if (plan.hooks[i].lib == VRT_ATTACH_LIB_LIBC && plan.hooks[i].slot &&
		    !strcmp(plan.hooks[i].name, name))
			return (void *)(uintptr_t)plan.hooks[i].slot;
	return libc_handle ? vrt_hooklib_real_dlsym(libc_handle, name) : NULL;
}

/* Points each runtime's real function at its trampoline. */
static void point_reals(struct vrt_hooklib *l, uint32_t lib)
{
	for (uint32_t i = 0; i < plan.nhooks; i++) {
		struct vrt_attach_hook *h = &plan.hooks[i];
		if (h->lib != lib || !h->slot)
			continue;
		int idx = vrt_hooklib_find(l, h->name);
		if (idx >= 0)
			atomic_store(&l->real[idx], (void *)(uintptr_t)h->slot);
	}
}

static const char *const cuda_names[] = {"libcuda.so.1", "libcuda.so", NULL};
static const char *const hip_names[] = {"libamdhip64.so.7", "libamdhip64.so.6",
                                        "libamdhip64.so.5", "libamdhip64.so",
                                        NULL};
static const char *const libc_names[] = {"libc.so.6", NULL};

/* The hooks and their pages, once per process. 0 or -errno, with the
 * reason in plan.message. */
static int plan_hooks(void)
{
	uintptr_t lo, hi;
	if (object_range((void *)vramtrace_agent_attach, 1, &lo, &hi))
		return -ENOENT;
	plan.text_lo = lo;
	plan.text_hi = hi;
	void *cuda = loaded(cuda_names), *hip = loaded(hip_names);
	libc_handle = loaded(libc_names);
	if (!cuda && !hip) {
		snprintf(plan.message, sizeof(plan.message),
		         "neither libcuda.so.1 nor libamdhip64.so is loaded");
		return -ENOENT;
	}
	uint32_t b0 = plan.nhooks, b1, b2, b3;
	int err = 0;
	if (cuda)
		err = add_runtime(vrt_hook_cuda_lib(), cuda, VRT_ATTACH_LIB_CUDA,
		                  "cuGetProcAddress");
	b1 = plan.nhooks;
	if (!err && hip)
		err = add_runtime(vrt_hook_hip_lib(), hip, VRT_ATTACH_LIB_HIP,
		                  "hipGetProcAddress");
	b2 = plan.nhooks;
	/* The libc wrappers of hook_libc.c: local to this library, so these
	 * are their addresses, not libc's (checked against our own code in
	 * add_hook). */
	for (int i = 0; !err && libc_handle && i < vrt_hook_libc_nwrappers;
	     i++) {
		struct want w = {vrt_hook_libc_wrappers[i].name,
		                 vrt_hook_libc_wrappers[i].fn,
		                 VRT_ATTACH_LIB_LIBC, NULL};
		err = add_hook(libc_handle, &w);
	}
	b3 = plan.nhooks;
	if (!err)
		err = map_slots(b0, b1);
	if (!err)
		err = map_slots(b1, b2);
	if (!err)
		err = map_slots(b2, b3);
	if (err) {
		snprintf(plan.message, sizeof(plan.message),
		         "cannot map the trampolines near the libraries: %s",
		         strerror(-err));
		return err;
	}
	point_reals(vrt_hook_cuda_lib(), VRT_ATTACH_LIB_CUDA);
	point_reals(vrt_hook_hip_lib(), VRT_ATTACH_LIB_HIP);
	/* The agent's own I/O from now on: libc's functions through their
	 * trampolines (until here, raw system calls: real.h). */
	vrt_real_fill(vrt_hook_libc_next);
	return 0;
}

/* ---- the attacher ---------------------------------------------------------- */

/* Watches the attacher with a pidfd (readable once it exits), else by
 * probing its pid. */
static void watch_attacher(pid_t pid)
{
	attacher = pid;
	vrt_fds_close(&attacher_fd);
#ifdef SYS_pidfd_open
	if (pid > 0)
		attacher_fd = vrt_fds_own((int)syscall(SYS_pidfd_open, pid, 0));
#endif
}

static int attacher_gone(void)
{
	if (attacher <= 0)
		return 0;
	if (attacher_fd.fd >= 0 && vrt_fds_use(attacher_fd)) {
		struct pollfd p = {.fd = attacher_fd.fd, .events = POLLIN};
		int r = poll(&p, 1, 0);
		vrt_fds_done(attacher_fd);
		if (r >= 0)
			return r > 0;
	}
	return kill(attacher, 0) < 0 && errno == ESRCH;
}

/* ---- what the process had open before the attach --------------------------- */

struct sockets {
	int n;
	struct {
		int fd;
		struct sockaddr_storage addr;
		socklen_t len;
	} listening[MAX_SOCKETS];
};

static int same_local(const struct sockaddr_storage *a, socklen_t alen,
                      const struct sockaddr_storage *b, socklen_t blen)
{
	if (a->ss_family != b->ss_family)
		return 0;
	if (a->ss_family == AF_UNIX)
		return alen == blen && !memcmp(a, b, alen);
	if (a->ss_family == AF_INET || a->ss_family == AF_INET6)
		/* the port: a listener on any address serves them all */
		return ((const struct sockaddr_in *)a)->sin_port ==
		       ((const struct sockaddr_in *)b)->sin_port;
	return 0;
}

/* First pass: the listening sockets. */
static int find_listener(const char *name, void *arg)
{
	struct sockets *s = arg;
	int fd = atoi(name), on = 0;
	socklen_t len = sizeof(on);
	if (name[0] < '0' || name[0] > '9' || vrt_fds_any((unsigned)fd,
	                                                  (unsigned)fd))
		return 0;
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) || !on ||
	    s->n == MAX_SOCKETS)
		return 0;
	s->listening[s->n].fd = fd;
	s->listening[s->n].len = sizeof(s->listening[s->n].addr);
	if (getsockname(fd, (struct sockaddr *)&s->listening[s->n].addr,
	                &s->listening[s->n].len))
		return 0;
	vrt_hook_libc_adopt(fd, -1);
	s->n++;
	return 0;
}

/* Second pass: connected sockets whose local end is a listener's. */
static int find_accepted(const char *name, void *arg)
{
	struct sockets *s = arg;
	int fd = atoi(name), on = 1;
	socklen_t len = sizeof(on);
	struct sockaddr_storage me, peer;
	socklen_t mlen = sizeof(me), plen = sizeof(peer);
	if (name[0] < '0' || name[0] > '9' ||
	    vrt_fds_any((unsigned)fd, (unsigned)fd) ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) || on ||
	    getsockname(fd, (struct sockaddr *)&me, &mlen) ||
	    getpeername(fd, (struct sockaddr *)&peer, &plen))
		return 0;
	for (int i = 0; i < s->n; i++)
		if (same_local(&me, mlen, &s->listening[i].addr,
		               s->listening[i].len)) {
			vrt_hook_libc_adopt(fd, s->listening[i].fd);
			break;
		}
	return 0;
}

/* The server was listening before the attach, and some connections were
 * open: said so before anything else (their requests begin with the next
 * bytes read; one half-read at the attach is taken from there). */
static void adopt_sockets(void)
{
	struct sockets s;
	s.n = 0;
	vrt_fds_each_name("/proc/self/fd", find_listener, &s);
	if (s.n)
		vrt_fds_each_name("/proc/self/fd", find_accepted, &s);
}

/* ---- what the process held before the attach -------------------------------
 *
 * After the jumps are written (`live`), so every allocation from then on is
 * recorded or in the table: PyTorch's segments, when the process runs
 * PyTorch, each with the stack its allocator recorded (or the phase
 * before_attach, or cuda_graph for a graph's private pool); then, per
 * device, what the process holds beyond the table (NVML's count for this
 * process, else the driver's used bytes, an upper bound) as one
 * before_attach allocation at VRT_BEFORE_ATTACH_ADDR; then a SNAPSHOT of the
 * table (session.c). Frees of what no snapshot named shrink that
 * allocation (vrt_agent_freed). */

/* torch.cuda.memory_snapshot(), one line per segment: "DEVICE ADDRESS
 * TOTAL ALLOCATED GRAPH" \x1d then frames "FILE\x1eNAME\x1eLINE"
 * separated by \x1f, innermost first (PyTorch's order): the segment's own,
 * else those of its largest block in use. */
static const char py_snapshot[] =
        "def _vramtrace_segments():\n"
        "    import sys\n"
        "    t = sys.modules.get('torch')\n"
        "    cuda = getattr(t, 'cuda', None) if t is not None else None\n"
        "    if cuda is None or not cuda.is_initialized():\n"
        "        return ''\n"
        "    out = []\n"
        "    for s in cuda.memory_snapshot():\n"
        "        fr = s.get('frames') or []\n"
        "        best = None\n"
        "        for b in s.get('blocks', ()):\n"
        "            if b.get('state') == 'active_allocated' and "
        "b.get('frames') and (best is None or "
        "b.get('size', 0) > best.get('size', 0)):\n"
        "                best = b\n"
        "        if not fr and best is not None:\n"
        "            fr = best['frames']\n"
        "        pool = s.get('segment_pool_id') or (0, 0)\n"
        "        graph = 1 if tuple(pool) != (0, 0) else 0\n"
        "        fs = '\\x1f'.join('%s\\x1e%s\\x1e%d' % (f.get('filename', "
        "'?'), f.get('name', '?'), int(f.get('line', 0) or 0)) for f in "
        "fr[:64])\n"
        "        out.append('%d %d %d %d %d\\x1d%s' % (int(s.get('device', "
        "0)), int(s['address']), int(s['total_size']), "
        "int(s.get('allocated_size', 0)), graph, fs))\n"
        "    return '\\n'.join(out)\n"
        "try:\n"
        "    result = _vramtrace_segments()\n"
        "except Exception as e:\n"
        "    result = 'error %s: %s' % (type(e).__name__, e)\n";

static int segments_seen;

/* One segment line: into the table, unless it is there already (freed
 * and allocated again since the attach, or allocated since). */
static void seed_segment(char *line)
{
	char *frames = strchr(line, '\x1d');
	int dev, graph;
	unsigned long long addr, total, used;
	if (!frames)
		return;
	*frames++ = 0;
	if (sscanf(line, "%d %llu %llu %llu %d", &dev, &addr, &total, &used,
	           &graph) != 5 ||
	    !addr || !total || vrt_live_has(VRT_API_cuMemAlloc_v2, addr))
		return;
	const char *file[MAX_FRAMES], *func[MAX_FRAMES];
	int lines[MAX_FRAMES], n = 0;
	for (char *f = frames; f && *f && n < MAX_FRAMES;) {
		char *next = strchr(f, '\x1f');
		if (next)
			*next++ = 0;
		char *a = strchr(f, '\x1e'), *b = a ? strchr(a + 1, '\x1e') : NULL;
		if (a && b) {
			*a = *b = 0;
			file[n] = f;
			func[n] = a + 1;
			lines[n] = atoi(b + 1);
			n++;
		}
		f = next;
	}
	/* Innermost first as PyTorch gives them; a stack goes outermost
	 * first. */
	for (int i = 0; i < n / 2; i++) {
		const char *t = file[i];
		file[i] = file[n - 1 - i];
		file[n - 1 - i] = t;
		t = func[i];
		func[i] = func[n - 1 - i];
		func[n - 1 - i] = t;
		int l = lines[i];
		lines[i] = lines[n - 1 - i];
		lines[n - 1 - i] = l;
	}
	uint32_t stack = n ? vrt_stack_python(file, func, lines, n) : 0;
	uint64_t phase = graph    ? vrt_phase_named("cuda_graph")
	                 : stack ? 0
	                         : vrt_phase_named(VRT_BEFORE_ATTACH_PHASE);
	vrt_live_alloc(VRT_API_cuMemAlloc_v2, dev, addr, total, stack, phase);
	segments_seen++;
}

static void seed_python(void)
{
	char *out = malloc(PY_OUT_MAX);
	if (!out)
		return;
	int rc = vrt_pyrun(py_snapshot, out, PY_OUT_MAX, PY_TIMEOUT_MS);
	if (vrt_options_int(VRT_OPT_DEBUG))
		vrt_capture_warn("attach: Python snapshot: %d, %zu bytes\n", rc,
		                 rc == 1 ? strlen(out) : (size_t)0);
	if (rc == 1 && strncmp(out, "error ", 6) != 0) {
		for (char *line = out; line && *line;) {
			char *next = strchr(line, '\n');
			if (next)
				*next++ = 0;
			seed_segment(line);
			line = next;
		}
	} else if (rc == 1 || rc < 0) {
		vrt_capture_warn("PyTorch's segments were not read (%s): what "
		                 "it held before the attach is one bucket\n",
		                 rc == -2 ? "the interpreter did not answer in "
		                            "time"
		                 : rc == 1 ? out
		                           : "the interpreter failed");
	}
	free(out);
}

/* The remainder on each device: what the process holds there beyond the
 * table. */
static _Atomic uint64_t held_before[VRT_LIVE_MAX_DEVICES];
static _Atomic int prefree_on;

/* The driver's used bytes on device ordinal (every process's), through a
 * primary context the process already made active; 0 and *used, else
 * -1. From the agent's thread, which has no context of its own. */
static int driver_used(int ordinal, uint64_t *used)
{
	struct vrt_hooklib *l = vrt_hook_cuda_lib();
	CUresult (*get)(CUdevice *, int) = vrt_hooklib_sym(l, "cuDeviceGet");
	CUresult (*state)(CUdevice, unsigned *, int *) =
	        vrt_hooklib_sym(l, "cuDevicePrimaryCtxGetState");
	CUresult (*retain)(CUcontext *, CUdevice) =
	        vrt_hooklib_sym(l, "cuDevicePrimaryCtxRetain");
	CUresult (*release)(CUdevice) =
	        vrt_hooklib_sym(l, "cuDevicePrimaryCtxRelease_v2");
	CUresult (*set)(CUcontext) = vrt_hooklib_sym(l, "cuCtxSetCurrent");
	CUdevice dev;
	CUcontext ctx;
	unsigned flags;
	int active = 0, rc = -1;
	size_t free_b, total_b;
	if (!get || !state || !retain || !release || !set ||
	    get(&dev, ordinal) || state(dev, &flags, &active) || !active ||
	    retain(&ctx, dev))
		return -1;
	if (!set(ctx)) {
		if (vrt_hook_cuda.mem_info(&free_b, &total_b) &&
		    total_b >= free_b) {
			*used = total_b - free_b;
			rc = 0;
		}
		set(NULL);
	}
	release(dev);
	return rc;
}

static void seed_remainder(void)
{
	struct vrt_device_info devs[VRT_LIVE_MAX_DEVICES];
	vrt_hook_inventory(&vrt_hook_cuda);
	int n = vrt_writer_known_devices(devs, VRT_LIVE_MAX_DEVICES);
	uint64_t phase = vrt_phase_named(VRT_BEFORE_ATTACH_PHASE);
	for (int i = 0; i < n; i++) {
		const struct vrt_device_info *d = &devs[i];
		uint64_t own = 0, live, again;
		if (d->vendor != VRT_VENDOR_CUDA || d->ordinal < 0 ||
		    d->ordinal >= VRT_LIVE_MAX_DEVICES)
			continue;
		/* The table read on both sides of the count: what the
		 * program frees meanwhile is not taken for memory of before
		 * (the larger reading counts). */
		live = vrt_live_device_bytes(VRT_VENDOR_CUDA, d->ordinal);
		if (!(d->have_uuid && vrt_sampler_own_bytes(d->uuid, &own)) &&
		    driver_used(d->ordinal, &own))
			continue; /* nothing known of this device */
		again = vrt_live_device_bytes(VRT_VENDOR_CUDA, d->ordinal);
		if (again > live)
			live = again;
		/* Less than a driver page is the program's calls racing
		 * with the count, not memory of before. */
		if (own < live + REMAINDER_MIN)
			continue;
		atomic_store(&held_before[d->ordinal], own - live);
		vrt_live_alloc(VRT_API_cuMemAlloc_v2, d->ordinal,
		               VRT_BEFORE_ATTACH_ADDR(d->ordinal), own - live, 0,
		               phase);
		atomic_store(&prefree_on, 1);
	}
}

static void take_snapshot(void)
{
	segments_seen = 0;
	for (int d = 0; d < VRT_LIVE_MAX_DEVICES; d++)
		atomic_store(&held_before[d], 0);
	if (want_python)
		seed_python();
	seed_remainder();
	vrt_session_snapshot();
}

int vrt_agent_prefree(struct vrt_hook_vendor *v, int api, uint64_t addr,
                      struct vrt_prefree *out)
{
	int fam = vrt_api_family((unsigned)api);
	if (!atomic_load_explicit(&prefree_on, memory_order_relaxed) ||
	    (fam != VRT_FAM_DEVICE && fam != VRT_FAM_ASYNC) ||
	    vrt_live_has(api, addr) || !v->size_of(addr, &out->size))
		return 0;
	out->device = v->device_of(addr);
	return out->device >= 0 && out->device < VRT_LIVE_MAX_DEVICES;
}

void vrt_agent_freed(int api, uint64_t addr, const struct vrt_prefree *pf)
{
	struct vrt_ev ev = {.rec = VRT_REC_PREFREE,
	                    .api = (uint8_t)api,
	                    .device = pf->device,
	                    .addr = addr,
	                    .size = pf->size};
	vrt_hook_record(&ev);
	/* The table's remainder shrinks the same way (status, metrics). */
	_Atomic uint64_t *r = &held_before[pf->device];
	uint64_t have = atomic_load(r), left;
	do
		left = have > pf->size ? have - pf->size : 0;
	while (!atomic_compare_exchange_weak(r, &have, left));
	if (have) {
		uint64_t at = VRT_BEFORE_ATTACH_ADDR(pf->device);
		vrt_live_free(VRT_API_cuMemAlloc_v2, at);
		if (left)
			vrt_live_alloc(VRT_API_cuMemAlloc_v2, pf->device, at,
			               left, 0,
			               vrt_phase_named(VRT_BEFORE_ATTACH_PHASE));
	}
}

/* ---- the agent's thread ----------------------------------------------------- */

/* How long the agent waits for a writer still finishing its file (with
 * the stop's own wait, within the attacher's 10 s for the end). */
#define AGENT_WRITER_WAIT_MS 6000

static _Atomic int thread_started;

static uint32_t flag(const uint32_t *f)
{
	return __atomic_load_n(f, __ATOMIC_ACQUIRE);
}

static void set_flag(uint32_t *f)
{
	__atomic_store_n(f, 1, __ATOMIC_RELEASE);
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static void *agent_main(void *arg)
{
	(void)arg;
	vrt_capture_thread_started(&thread_started);
	int waited = 0;
	while (!flag(&plan.live) && !flag(&plan.detach) && !attacher_gone() &&
	       waited < LIVE_WAIT_MS) {
		sleep_ms(2);
		waited += 2;
	}
	if (flag(&plan.live) && !flag(&plan.detach)) {
		adopt_sockets();
		take_snapshot();
		while (!flag(&plan.detach) && !attacher_gone()) {
			if (atomic_load(&vrt_state) != VRT_STATE_ON &&
			    !flag(&plan.stop_requested))
				set_flag(&plan.stop_requested);
			sleep_ms(WATCH_MS);
		}
	}
	/* Detached, or the attacher is gone (killed): every wrapper passes
	 * straight through from here (the state they read), the trace ends
	 * with its trailer, the services' threads and descriptors go. */
	atomic_store(&prefree_on, 0);
	vrt_session_shutdown();
	/* The process goes on: a last frame still being written (a slow
	 * disk's fdatasync) gets its time, so the file is closed before the
	 * attacher is told the recording has ended. */
	vrt_writer_wait_orphan(AGENT_WRITER_WAIT_MS);
	vrt_session_warn();
	vrt_fds_close(&attacher_fd);
	set_flag(&plan.done);
	vrt_capture_thread_exiting();
	return NULL;
}

static int start_thread(void)
{
	pthread_attr_t attr;
	pthread_t t;
	sigset_t all, old;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&thread_started, 0);
	int err = pthread_create(&t, &attr, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		return -err;
	pthread_setname_np(t, "vramtrace-at");
	vrt_capture_wait_started(&thread_started);
	return 0;
}

/* ---- the entry ------------------------------------------------------------- */

static struct vrt_attach_plan *fail(int err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static struct vrt_attach_plan *fail(int err, const char *fmt, ...)
{
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(plan.message, sizeof(plan.message), fmt, ap);
		va_end(ap);
	}
	plan.status = err;
	return &plan;
}

struct vrt_attach_plan *vramtrace_agent_attach(const char *config)
{
	plan.magic = VRT_ATTACH_MAGIC;
	plan.version = VRT_ATTACH_VERSION;
	plan.size = sizeof(plan);
	plan.status = 0;
	plan.message[0] = 0;
	if (plan.session && !flag(&plan.done))
		return fail(-EBUSY, "already attached (session %u is running)",
		            plan.session);
	if (!config)
		return fail(-EINVAL, "no configuration");
	cfg_parse(config);
	const char *out = cfg_get(VRT_ATTACH_CFG_OUT);
	const char *who = cfg_get(VRT_ATTACH_CFG_ATTACHER);
	const char *py = cfg_get(VRT_ATTACH_CFG_PYTHON);
	if (!out || out[0] != '/' || strlen(out) >= PATH_MAX)
		return fail(-EINVAL, "no absolute run directory");
	want_python = !py || strcmp(py, "0") != 0;
	vrt_options_init_from(cfg_option, NULL);
	if (!set_up) {
		vrt_hooklib_init();
		vrt_session_init();
		if (vrt_entry_setup())
			return fail(-ENOMEM, "cannot set up capture");
		int err = plan_hooks();
		if (err)
			return fail(err, NULL);
		vrt_writer_set_flags(VRT_HEADER_ATTACHED);
		set_up = 1;
	}
	if (vrt_session_rearm(out) ||
	    (vrt_live_reset(), !vrt_session_start()))
		return fail(-EIO, "cannot record in %s: %s", out,
		            vrt_capture_fail_reason()
		                    ? vrt_capture_fail_reason()
		                    : "the session did not start");
	watch_attacher(who ? (pid_t)atoi(who) : 0);
	__atomic_store_n(&plan.live, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&plan.detach, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&plan.done, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&plan.stop_requested, 0, __ATOMIC_RELEASE);
	plan.tls_in_hook = (int64_t)((char *)&vrt_in_hook -
	                             (char *)__builtin_thread_pointer());
	plan.session++;
	int err = start_thread();
	if (err) {
		vrt_session_shutdown();
		set_flag(&plan.done);
		return fail(err, "cannot start the agent's thread: %s",
		            strerror(-err));
	}
	return &plan;
}
