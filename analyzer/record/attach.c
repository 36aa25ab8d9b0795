/*
 * attach.c — attaching to one running process and detaching again
 * (attach.h; the agent's side is preload/agent.c, the protocol
 * common/attach_proto.h, the command cmd_attach.c).
 *
 * Preflight reads /proc and the libraries' files only: nothing of the
 * process is touched before every check passed, the first instructions of
 * every function to hook included (read with process_vm_readv and run
 * through the relocator without a trampoline address).
 *
 * Start: every thread seized and stopped (inject.c); a thread waiting in
 * a system call where it holds no lock is borrowed (retrying a little
 * while the process runs, since a busy process passes through such waits
 * often); on it, with the other threads running, dlopen(agent) and the
 * agent's entry, which returns the plan. The borrowed thread gets its
 * registers back; each function's trampoline is built for its slot. Then,
 * with every thread stopped and none with its instruction pointer inside
 * a range a jump replaces, nor a return address into one on the top of its
 * stack (else the threads run a moment and we look again), the
 * trampolines and the jumps are written through /proc/PID/mem and `live`
 * set; every thread is released.
 *
 * gdb (injector gdb, or auto when no thread can be borrowed): `gdb -p PID
 * -batch` calls dlopen and the entry instead (gdb runs the other threads
 * during its calls too); the hooks are then written by us as above.
 *
 * Detach: every thread stopped, the original bytes put back under the same
 * condition; then the threads run until none is inside a wrapper (its
 * vrt_in_hook, read at its thread pointer, or its instruction pointer in
 * the agent's code or pages; the agent's own threads excepted), and the
 * agent is told to end its session.
 */
#include "attach.h"

#include "elfsym.h"
#include "relocate.h"

#include <vramtrace/trace_format.h>

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CODE_MAX        4096 /* bytes of a function read, at most */
#define CODE_UNKNOWN    256  /* read when its size is unknown */
#define STACK_SCAN      (32u << 10)
#define STACK_ROOM      (64u << 10) /* a borrowed thread's stack, below */
#define PICK_TRIES      80
#define PATCH_TRIES     400
#define DRAIN_MS        10000
#define CALL_MS         30000
#define DONE_MS         10000
#define CAP_SYS_PTRACE  19

struct vrt_attach_library {
	uint32_t kind; /* enum vrt_attach_lib */
	char path[PATH_MAX];
	uint64_t bias;
	struct vrt_elf *elf;
};

struct map {
	uint64_t lo, hi, off;
	char perms[5];
	char path[PATH_MAX];
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

static int fail(struct vrt_attach *a, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static int fail(struct vrt_attach *a, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(a->why, sizeof(a->why), "PID %d (%s): ", (int)a->pid,
	                 a->comm[0] ? a->comm : "?");
	va_start(ap, fmt);
	vsnprintf(a->why + n, sizeof(a->why) - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int fail_inject(struct vrt_attach *a, const char *what)
{
	/* in.why starts "PID N: " */
	const char *w = strstr(a->in.why, ": ");
	return fail(a, "%s: %s", what, w ? w + 2 : a->in.why);
}

/* ---- /proc --------------------------------------------------------------- */

static ssize_t read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	ssize_t r;
	while (got < len - 1 && (r = read(fd, buf + got, len - 1 - got)) != 0) {
		if (r < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		got += (size_t)r;
	}
	close(fd);
	buf[got] = 0;
	return (ssize_t)got;
}

/* The value after "Key:" in /proc/PID/status text, or NULL. */
static const char *status_field(const char *text, const char *key)
{
	size_t n = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (!strncmp(p, key, n) && p[n] == ':')
			return p + n + 1;
	return NULL;
}

static int read_maps(pid_t pid, struct map **out, size_t *n)
{
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct map m;
		unsigned long long lo, hi, off;
		int pos = 0;
		memset(&m, 0, sizeof(m));
		if (sscanf(line, "%llx-%llx %4s %llx %*s %*s%n", &lo, &hi,
		           m.perms, &off, &pos) < 4)
			continue;
		const char *p = line + pos;
		while (*p == ' ')
			p++;
		snprintf(m.path, sizeof(m.path), "%s", p);
		m.path[strcspn(m.path, "\n")] = 0;
		m.lo = lo;
		m.hi = hi;
		m.off = off;
		if (*n == cap) {
			cap = cap ? 2 * cap : 256;
			struct map *v = realloc(*out, cap * sizeof(**out));
			if (!v) {
				fclose(f);
				return -1;
			}
			*out = v;
		}
		(*out)[(*n)++] = m;
	}
	fclose(f);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Reads the process's memory without seizing it. */
static int peek(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {buf, len};
	struct iovec remote = {(void *)(uintptr_t)addr, len};
	ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return r == (ssize_t)len ? 0 : -1;
}

/* ---- rights ------------------------------------------------------------------ */

static int have_cap_ptrace(void)
{
	char text[4096];
	const char *v;
	if (read_text("/proc/self/status", text, sizeof(text)) < 0 ||
	    !(v = status_field(text, "CapEff")))
		return 0;
	unsigned long long caps = strtoull(v, NULL, 16);
	return (caps >> CAP_SYS_PTRACE) & 1;
}

static pid_t parent_of(pid_t pid)
{
	char path[64], text[4096];
	const char *v;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_text(path, text, sizeof(text)) < 0 ||
	    !(v = status_field(text, "PPid")))
		return -1;
	return (pid_t)atoi(v);
}

static int is_descendant(pid_t pid)
{
	pid_t self = getpid();
	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		pid = parent_of(pid);
		if (pid == self)
			return 1;
	}
	return 0;
}

static int check_rights(struct vrt_attach *a)
{
	char path[64], text[8192], scope_text[32];
	const char *v;
	int cap = have_cap_ptrace();
	snprintf(path, sizeof(path), "/proc/%d/status", (int)a->pid);
	if (read_text(path, text, sizeof(text)) < 0)
		return fail(a, "no such process");
	if ((v = status_field(text, "State"))) {
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v == 'Z' || *v == 'X')
			return fail(a, "the process has exited");
		if (*v == 'T' || *v == 't')
			return fail(a, "the process is stopped (job control or a "
			               "debugger): continue it first");
	}
	if ((v = status_field(text, "TracerPid")) && atoi(v) > 0) {
		char comm[64] = "";
		int tracer = atoi(v);
		snprintf(path, sizeof(path), "/proc/%d/comm", tracer);
		read_text(path, comm, sizeof(comm));
		comm[strcspn(comm, "\n")] = 0;
		return fail(a,
		            "it is already traced by PID %d (%s): a debugger "
		            "or another profiler holds it; detach that one first",
		            tracer, comm[0] ? comm : "?");
	}
	if ((v = status_field(text, "Uid"))) {
		unsigned r = 0, e = 0, s = 0;
		sscanf(v, "%u %u %u", &r, &e, &s);
		uid_t me = geteuid();
		if ((r != me || e != me || s != me) && !cap)
			return fail(a,
			            "it runs as uid %u and this is uid %u: only "
			            "its user, or one with CAP_SYS_PTRACE (root), "
			            "may attach",
			            e, (unsigned)me);
	}
	/* A process that made itself non-dumpable (or started set-uid) has
	 * its /proc files owned by root: ptrace refuses it. */
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d", (int)a->pid);
	if (!stat(path, &st) && st.st_uid == 0 && geteuid() != 0 && !cap)
		return fail(a, "it is not dumpable (prctl PR_SET_DUMPABLE 0, or "
		               "a set-uid start): ptrace refuses it");
	long scope = 0;
	if (read_text("/proc/sys/kernel/yama/ptrace_scope", scope_text,
	              sizeof(scope_text)) > 0)
		scope = strtol(scope_text, NULL, 10);
	if (scope >= 3)
		return fail(a, "Yama forbids every ptrace attach on this host "
		               "(kernel.yama.ptrace_scope=3, until reboot)");
	if (scope == 2 && !cap)
		return fail(a, "Yama allows only processes with CAP_SYS_PTRACE "
		               "to attach (kernel.yama.ptrace_scope=2): run as "
		               "root, or grant the capability (containers: "
		               "--cap-add SYS_PTRACE; docs/attach.md)");
	if (scope == 1 && !cap && !is_descendant(a->pid))
		return fail(a, "Yama allows attaching only to this command's own "
		               "children (kernel.yama.ptrace_scope=1): run as "
		               "root or with CAP_SYS_PTRACE, or set "
		               "kernel.yama.ptrace_scope=0 (docs/attach.md)");
	static const char *const ns[] = {"pid", "mnt"};
	for (int i = 0; i < 2; i++) {
		char mine[64] = "", theirs[64] = "";
		char p1[64], p2[64];
		snprintf(p1, sizeof(p1), "/proc/self/ns/%s", ns[i]);
		snprintf(p2, sizeof(p2), "/proc/%d/ns/%s", (int)a->pid, ns[i]);
		ssize_t l1 = readlink(p1, mine, sizeof(mine) - 1);
		ssize_t l2 = readlink(p2, theirs, sizeof(theirs) - 1);
		if (l1 > 0 && l2 > 0 && (l1 != l2 || memcmp(mine, theirs,
		                                            (size_t)l1)))
			return fail(a,
			            "it runs in another %s namespace (a "
			            "container): run vramtrace attach inside it "
			            "(kubectl exec, docker exec; docs/attach.md)",
			            i ? "mount" : "PID");
	}
	return 0;
}

/* ---- the process's program and libraries -------------------------------- */

static int check_arch(struct vrt_attach *a)
{
#ifndef __x86_64__
	return fail(a, "unsupported architecture: vramtrace attach supports "
	               "x86-64 only");
#else
	char path[64], why[256];
	struct vrt_elf *e;
	int is64;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)a->pid);
	if (vrt_elfsym_open(path, &e, why, sizeof(why)))
		return fail(a, "cannot read its program: %s", why);
	int m = vrt_elfsym_machine(e, &is64);
	vrt_elfsym_close(e);
	if (m != EM_X86_64 || !is64)
		return fail(a, "unsupported architecture: its program is not "
		               "x86-64 (ELF machine %d, %d-bit); vramtrace "
		               "attach supports x86-64 only",
		            m, is64 ? 64 : 32);
	return 0;
#endif
}

static struct vrt_attach_library *lib_of(struct vrt_attach *a, uint32_t kind)
{
	for (int i = 0; i < a->nlibs; i++)
		if (a->libs[i].kind == kind)
			return &a->libs[i];
	return NULL;
}

/* Adds the library mapped at maps[i] (opened, its load bias computed). */
static int add_lib(struct vrt_attach *a, uint32_t kind, const struct map *maps,
                   size_t n, size_t i)
{
	char why[512];
	uint64_t vaddr, off;
	struct vrt_attach_library *l;
	if (lib_of(a, kind))
		return 0;
	void *v = realloc(a->libs, (size_t)(a->nlibs + 1) * sizeof(*a->libs));
	if (!v)
		return fail(a, "out of memory");
	a->libs = v;
	l = &a->libs[a->nlibs];
	memset(l, 0, sizeof(*l));
	l->kind = kind;
	snprintf(l->path, sizeof(l->path), "%s", maps[i].path);
	if (strstr(l->path, " (deleted)"))
		return fail(a, "%s was replaced on disk since the process "
		               "loaded it: its symbols cannot be read",
		            l->path);
	if (vrt_elfsym_open(l->path, &l->elf, why, sizeof(why)))
		return fail(a, "%s", why);
	a->nlibs++;
	if (vrt_elfsym_first_load(l->elf, &vaddr, &off))
		return fail(a, "%s: no loadable segment", l->path);
	for (size_t k = 0; k < n; k++)
		if (!strcmp(maps[k].path, maps[i].path) && maps[k].off == off) {
			l->bias = maps[k].lo - vaddr;
			return 0;
		}
	return fail(a, "%s: cannot find where it is loaded", l->path);
}

static int sym_addr(const struct vrt_attach_library *l, const char *name,
                    uint64_t *at, uint64_t *size)
{
	uint64_t v, sz;
	int ifunc;
	if (!l || vrt_elfsym_find(l->elf, name, &v, &sz, &ifunc) || ifunc)
		return -1;
	*at = l->bias + v;
	if (size)
		*size = sz;
	return 0;
}

/* The functions the agent hooks, by library: the driver's and the HIP
 * runtime's recorded calls (trace_format.h) and the libc functions of
 * attach_proto.h. */
struct fn {
	const char *name;
	uint32_t lib;
};

static const struct fn fns[] = {
#define X_API(id, name, fam, op)                                               \
	{#name, id < 64 ? VRT_ATTACH_LIB_CUDA : VRT_ATTACH_LIB_HIP},
        VRT_API_LIST(X_API)
#undef X_API
#define X_LIBC(name) {#name, VRT_ATTACH_LIB_LIBC},
                VRT_ATTACH_LIBC_HOOKS(X_LIBC)
#undef X_LIBC
};

static int is_agent_page(const struct map *maps, size_t n, uint64_t addr)
{
	for (size_t k = 0; k < n; k++)
		if (addr >= maps[k].lo && addr < maps[k].hi)
			return !maps[k].path[0] && !strcmp(maps[k].perms, "r-xp");
	return 0;
}

/* The function's code as the process has it: len bytes (fewer at the end
 * of its mapping). */
static size_t read_code(pid_t pid, uint64_t at, uint64_t size, uint8_t *buf)
{
	size_t want = size ? (size < CODE_MAX ? size : CODE_MAX) : CODE_UNKNOWN;
	if (want < 64)
		want = 64;
	if (!peek(pid, at, buf, want))
		return want;
	for (size_t n = want / 2; n >= 16; n /= 2)
		if (!peek(pid, at, buf, n))
			return n;
	return 0;
}

/* Each function to hook, as the process has it now, through the
 * relocator. The refused ones are listed in why; 0 when none. */
static int check_prologues(struct vrt_attach *a, const struct map *maps,
                           size_t n, int partial)
{
	char list[1536] = "";
	size_t used = 0;
	int refused = 0;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		uint64_t at, size;
		uint8_t code[CODE_MAX];
		struct vrt_reloc r;
		if (sym_addr(lib_of(a, fns[i].lib), fns[i].name, &at, &size))
			continue;
		size_t len = read_code(a->pid, at, size, code);
		if (!len)
			continue; /* unreadable: the agent will not find it */
		/* Hooked by an earlier attach whose command went away: its
		 * jump leads into the agent's page. */
		uint32_t skip = len >= 4 && code[0] == 0xf3 && code[1] == 0x0f &&
		                                code[2] == 0x1e && code[3] == 0xfa
		                        ? 4
		                        : 0;
		if (code[skip] == 0xe9) {
			int32_t d;
			memcpy(&d, code + skip + 1, 4);
			if (is_agent_page(maps, n, at + skip + 5 + (int64_t)d))
				continue;
		}
		if (!vrt_relocate(code, len, at, size, 0, 0, &r))
			continue;
		refused++;
		if (used < sizeof(list))
			used += (size_t)snprintf(list + used,
			                         sizeof(list) - used, "%s%s: %s",
			                         refused > 1 ? "; " : "",
			                         fns[i].name, r.why);
	}
	a->refused = refused;
	if (!refused || partial)
		return 0;
	return fail(a,
	            "cannot hook %d function%s, so nothing was changed in the "
	            "process (--partial hooks the others and leaves these "
	            "calls unseen): %s",
	            refused, refused == 1 ? "" : "s", list);
}

int vrt_attach_preflight(struct vrt_attach *a, pid_t pid,
                         const struct vrt_attach_opts *o)
{
	char path[64], why[256];
	struct map *maps = NULL;
	size_t n = 0;
	int rc = -1;
	a->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (read_text(path, a->comm, sizeof(a->comm)) > 0)
		a->comm[strcspn(a->comm, "\n")] = 0;
	if (pid == getpid())
		return fail(a, "that is this command itself");
	if (check_rights(a) || check_arch(a))
		return -1;
	if (read_maps(pid, &maps, &n))
		return fail(a, "cannot read its memory map: %s",
		            strerror(errno));
	int gpu = 0;
	for (size_t i = 0; i < n; i++) {
		const char *b = base_name(maps[i].path);
		if (!strcmp(b, "libvramtrace.so")) {
			fail(a, "it already runs with the preload (vramtrace "
			        "record): control it with `vramtrace ctl %d`",
			     (int)pid);
			goto out;
		}
		if (maps[i].path[0] != '/')
			continue;
		if (starts(b, "libcuda.so") && add_lib(a, VRT_ATTACH_LIB_CUDA,
		                                       maps, n, i))
			goto out;
		if (starts(b, "libamdhip64.so") &&
		    add_lib(a, VRT_ATTACH_LIB_HIP, maps, n, i))
			goto out;
		if ((!strcmp(b, "libc.so.6") || (starts(b, "libc-") &&
		                                  strstr(b, ".so"))) &&
		    add_lib(a, VRT_ATTACH_LIB_LIBC, maps, n, i))
			goto out;
	}
	gpu = lib_of(a, VRT_ATTACH_LIB_CUDA) || lib_of(a, VRT_ATTACH_LIB_HIP);
	if (!gpu) {
		fail(a, "no GPU library is loaded (libcuda.so.1 or "
		        "libamdhip64.so): the process has not used the GPU yet, "
		        "or not through them; attach once it has");
		goto out;
	}
	struct vrt_attach_library *libc = lib_of(a, VRT_ATTACH_LIB_LIBC);
	if (!libc || sym_addr(libc, "dlopen", &a->dlopen_at, NULL) ||
	    sym_addr(libc, "dlerror", &a->dlerror_at, NULL)) {
		fail(a, "no glibc 2.34 or later (libc.so.6 with dlopen): the "
		        "agent cannot be loaded");
		goto out;
	}
	struct vrt_elf *agent;
	if (vrt_elfsym_open(o->agent, &agent, why, sizeof(why))) {
		fail(a, "the agent: %s", why);
		goto out;
	}
	vrt_elfsym_close(agent);
	if (vrt_relocate_init(why, sizeof(why))) {
		fail(a, "%s", why);
		goto out;
	}
	rc = check_prologues(a, maps, n, o->partial);
out:
	free(maps);
	return rc;
}

void vrt_attach_free(struct vrt_attach *a)
{
	for (int i = 0; i < a->nlibs; i++)
		vrt_elfsym_close(a->libs[i].elf);
	free(a->libs);
	a->libs = NULL;
	a->nlibs = 0;
	vrt_inject_free(&a->in);
}

/* ---- loading the agent ------------------------------------------------------ */

/* The settings the agent gets: the run directory, who attached, and the
 * VRAMTRACE_* options of this command's environment that shape a
 * recording. */
static void build_config(const struct vrt_attach_opts *o, char *cfg,
                         size_t len)
{
	extern char **environ;
	size_t n = (size_t)snprintf(cfg, len, "%s=%s\n%s=%d\n%s=%d\n",
	                            VRT_ATTACH_CFG_OUT, o->out_dir,
	                            VRT_ATTACH_CFG_ATTACHER, (int)getpid(),
	                            VRT_ATTACH_CFG_PYTHON, o->python);
	for (char **e = environ; e && *e && n < len; e++) {
		if (!starts(*e, "VRAMTRACE_") || starts(*e, "VRAMTRACE_OUT=") ||
		    starts(*e, "VRAMTRACE_START=") ||
		    starts(*e, "VRAMTRACE_ENABLE=") ||
		    starts(*e, "VRAMTRACE_PRELOAD=") ||
		    starts(*e, "VRAMTRACE_AGENT=") ||
		    starts(*e, "VRAMTRACE_METRICS") || strchr(*e, '\n') ||
		    strlen(*e) + 2 > len - n)
			continue;
		n += (size_t)snprintf(cfg + n, len - n, "%s\n", *e);
	}
}

/* The stack of a thread to borrow has room below its pointer. */
static int stack_ok(uint64_t rsp, void *arg)
{
	const struct vrt_attach *a = arg;
	struct map *maps;
	size_t n;
	int ok = 0;
	if (read_maps(a->pid, &maps, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (rsp > maps[i].lo && rsp <= maps[i].hi) {
			ok = rsp - maps[i].lo >= STACK_ROOM ||
			     !strcmp(maps[i].path, "[stack]");
			break;
		}
	free(maps);
	return ok;
}

/* Reads a NUL-terminated string of the process at addr. */
static void read_string(struct vrt_attach *a, uint64_t addr, char *out,
                        size_t len)
{
	out[0] = 0;
	if (!addr)
		return;
	for (size_t i = 0; i + 1 < len; i++) {
		if (vrt_inject_read(&a->in, addr + i, out + i, 1)) {
			out[i] = 0;
			return;
		}
		if (!out[i])
			return;
	}
	out[len - 1] = 0;
}

static int read_plan(struct vrt_attach *a)
{
	if (peek(a->pid, a->plan_at, &a->plan, sizeof(a->plan)))
		return fail(a, "cannot read the agent's plan at 0x%llx",
		            (unsigned long long)a->plan_at);
	if (a->plan.magic != VRT_ATTACH_MAGIC ||
	    a->plan.version != VRT_ATTACH_VERSION ||
	    a->plan.size != sizeof(a->plan))
		return fail(a, "the agent loaded is of another version than "
		               "this vramtrace (a process keeps the first agent "
		               "it loaded: restart it to use this one)");
	return 0;
}

static int write_field(struct vrt_attach *a, size_t off, const void *v,
                       size_t len)
{
	if (vrt_inject_write(&a->in, a->plan_at + off, v, len))
		return fail_inject(a, "cannot write the agent's plan");
	return 0;
}

#define FIELD(f) offsetof(struct vrt_attach_plan, f)

static int set_flag(struct vrt_attach *a, size_t off)
{
	uint32_t one = 1;
	return write_field(a, off, &one, sizeof(one));
}

/* dlopen and the entry on a borrowed thread: a->plan_at. */
static int load_with_ptrace(struct vrt_attach *a,
                            const struct vrt_attach_opts *o)
{
	char cfg[VRT_ATTACH_CONFIG_MAX], msg[512], why[256];
	uint64_t handle = 0, base = 0, value, size;
	int ifunc;
	long idx = -1;
	struct vrt_elf *agent;
	for (int tries = 0; tries < PICK_TRIES; tries++) {
		idx = vrt_inject_pick(&a->in, stack_ok, a);
		if (idx >= 0)
			break;
		a->attach_cost.retries++;
		vrt_inject_resume_all(&a->in);
		sleep_ms(tries < 20 ? 1 : tries < 50 ? 5 : 20);
		if (vrt_inject_stop_all(&a->in, 5000))
			return fail_inject(a, "cannot stop its threads");
	}
	if (idx < 0)
		return fail(a, "no thread is waiting in a system call where it "
		               "can be borrowed without risk (every thread "
		               "busy): try again, or --injector gdb");
	uint64_t args[2] = {VRT_INJECT_BLOB, 2 /* RTLD_NOW | RTLD_LOCAL */};
	if (vrt_inject_call(&a->in, (size_t)idx, a->dlopen_at, args, 2,
	                    o->agent, strlen(o->agent) + 1, &handle, CALL_MS))
		return fail_inject(a, "dlopen of the agent");
	if (!handle) {
		uint64_t err = 0;
		vrt_inject_call(&a->in, (size_t)idx, a->dlerror_at, NULL, 0,
		                NULL, 0, &err, CALL_MS);
		read_string(a, err, msg, sizeof(msg));
		return fail(a, "the process could not load the agent: %s",
		            msg[0] ? msg : "dlopen failed");
	}
	/* A glibc handle is its link_map, whose first field is the load
	 * bias. */
	if (vrt_inject_read(&a->in, handle, &base, sizeof(base)))
		return fail_inject(a, "reading the agent's handle");
	if (vrt_elfsym_open(o->agent, &agent, why, sizeof(why)))
		return fail(a, "the agent: %s", why);
	int found = !vrt_elfsym_find(agent, VRT_ATTACH_ENTRY, &value, &size,
	                             &ifunc);
	vrt_elfsym_close(agent);
	if (!found)
		return fail(a, "the agent has no %s", VRT_ATTACH_ENTRY);
	build_config(o, cfg, sizeof(cfg));
	args[0] = VRT_INJECT_BLOB;
	if (vrt_inject_call(&a->in, (size_t)idx, base + value, args, 1, cfg,
	                    strlen(cfg) + 1, &a->plan_at, CALL_MS))
		return fail_inject(a, "starting the agent");
	/* The borrowed thread resumes where it was, when released. */
	if (vrt_inject_return(&a->in))
		return fail_inject(a, "returning the borrowed thread");
	return 0;
}

/* "..." with " and \ escaped, for a C string literal in gdb. */
static void quoted(char *out, size_t len, const char *s)
{
	size_t n = 0;
	out[n++] = '"';
	for (; *s && n + 4 < len; s++) {
		if (*s == '\n') {
			out[n++] = '\\';
			out[n++] = 'n';
			continue;
		}
		if (*s == '"' || *s == '\\')
			out[n++] = '\\';
		out[n++] = *s;
	}
	out[n++] = '"';
	out[n] = 0;
}

static int have_gdb(void)
{
	const char *path = getenv("PATH");
	char cand[PATH_MAX];
	if (!path)
		path = "/usr/bin:/bin";
	while (*path) {
		size_t l = strcspn(path, ":");
		snprintf(cand, sizeof(cand), "%.*s/gdb", (int)l, path);
		if (!access(cand, X_OK))
			return 1;
		path += l + (path[l] == ':');
	}
	return 0;
}

/* dlopen and the entry through `gdb -p PID -batch`: a->plan_at from the
 * value gdb prints for the entry's call. */
static int load_with_gdb(struct vrt_attach *a, const struct vrt_attach_opts *o)
{
	char cfg[VRT_ATTACH_CONFIG_MAX], q[2 * VRT_ATTACH_CONFIG_MAX + 8];
	char c1[2 * PATH_MAX + 64], c2[sizeof(q) + 64], pid[16];
	int out[2];
	if (!have_gdb())
		return fail(a, "gdb is not installed (--injector gdb)");
	build_config(o, cfg, sizeof(cfg));
	quoted(q, sizeof(q), o->agent);
	snprintf(c1, sizeof(c1), "call (void *)dlopen(%s, 2)", q);
	quoted(q, sizeof(q), cfg);
	snprintf(c2, sizeof(c2), "print (void *)%s(%s)", VRT_ATTACH_ENTRY, q);
	snprintf(pid, sizeof(pid), "%d", (int)a->pid);
	if (pipe2(out, O_CLOEXEC))
		return fail(a, "pipe: %s", strerror(errno));
	pid_t child = fork();
	if (child < 0)
		return fail(a, "fork: %s", strerror(errno));
	if (child == 0) {
		dup2(out[1], 1);
		dup2(out[1], 2);
		execlp("gdb", "gdb", "-p", pid, "-batch", "-nx", "-q", "-ex",
		       "set confirm off", "-ex", "set pagination off", "-ex", c1,
		       "-ex", c2, "-ex", "detach", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	char text[16384];
	size_t got = 0;
	ssize_t r;
	while ((r = read(out[0], text + got, sizeof(text) - 1 - got)) > 0 ||
	       (r < 0 && errno == EINTR))
		if (r > 0)
			got += (size_t)r;
	text[got] = 0;
	close(out[0]);
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	/* The last "$N = (void *) 0x..." is the entry's answer. */
	const char *p = text, *last = NULL;
	while ((p = strstr(p, "(void *) 0x")))
		last = p++;
	if (!last)
		return fail(a, "gdb could not load the agent: %.400s", text);
	a->plan_at = strtoull(last + 9, NULL, 16);
	return 0;
}

/* ---- hooks --------------------------------------------------------------------- */

struct patch {
	int hook;
	struct vrt_reloc r;
	uint8_t orig[VRT_ATTACH_ORIG_MAX];
};

/* Builds each untouched hook's trampoline for its slot (the function's
 * code read again: the agent may have been asked about another copy). */
static int plan_patches(struct vrt_attach *a, struct patch *p, int *np,
                        int partial)
{
	char list[1024] = "";
	size_t used = 0;
	*np = 0;
	a->refused = 0;
	for (uint32_t i = 0; i < a->plan.nhooks && i < VRT_ATTACH_MAX_HOOKS;
	     i++) {
		struct vrt_attach_hook *h = &a->plan.hooks[i];
		uint64_t at, size = 0;
		uint8_t code[CODE_MAX];
		h->name[sizeof(h->name) - 1] = 0;
		if (h->state == VRT_ATTACH_PATCHED)
			continue;
		if (sym_addr(lib_of(a, h->lib), h->name, &at, &size) ||
		    at != h->target)
			size = 0; /* not the file's symbol: its size unknown */
		size_t len = 0;
		if (vrt_inject_read(&a->in, h->target, code,
		                    size ? (size < CODE_MAX ? size : CODE_MAX)
		                         : CODE_UNKNOWN) == 0)
			len = size ? (size < CODE_MAX ? size : CODE_MAX)
			           : CODE_UNKNOWN;
		else if (vrt_inject_read(&a->in, h->target, code, 64) == 0)
			len = 64;
		struct patch *x = &p[*np];
		x->hook = (int)i;
		if (!len || vrt_relocate(code, len, h->target, size, h->slot,
		                         h->slot + VRT_ATTACH_RELAY, &x->r)) {
			h->state = VRT_ATTACH_REFUSED;
			snprintf(h->why, sizeof(h->why), "%s",
			         len ? x->r.why : "its code is unreadable");
			a->refused++;
			if (used < sizeof(list))
				used += (size_t)snprintf(
				        list + used, sizeof(list) - used,
				        "%s%s: %s", a->refused > 1 ? "; " : "",
				        h->name, len ? x->r.why : "unreadable");
			continue;
		}
		memcpy(x->orig, code + x->r.skip, x->r.moved);
		(*np)++;
	}
	if (a->refused && !partial)
		return fail(a, "cannot hook %d function%s: %s", a->refused,
		            a->refused == 1 ? "" : "s", list);
	return 0;
}

/* Whether a thread is where a write into [lo, hi) must not happen: its
 * instruction pointer strictly inside, or a word strictly inside on the
 * top of its stack (a return address, a signal frame's saved pointer). */
static int in_range(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v > lo && v < hi;
}

struct span {
	uint64_t lo, hi; /* lo itself is a safe place to be */
};

static int thread_in(struct vrt_attach *a, const struct vrt_inject_thread *t,
                     const struct span *s, int ns, uint64_t *stack)
{
	for (int k = 0; k < ns; k++)
		if (in_range(t->rip, s[k].lo, s[k].hi))
			return 1;
	size_t words = STACK_SCAN / 8;
	if (vrt_inject_read(&a->in, t->rsp, stack, STACK_SCAN)) {
		/* near the stack's top end: what is there */
		for (words = STACK_SCAN / 16; words >= 8; words /= 2)
			if (!vrt_inject_read(&a->in, t->rsp, stack, words * 8))
				break;
		if (words < 8)
			return 0;
	}
	for (size_t w = 0; w < words; w++)
		for (int k = 0; k < ns; k++)
			if (in_range(stack[w], s[k].lo, s[k].hi))
				return 1;
	return 0;
}

/* With every thread stopped: 1 when none is in the way of the spans. */
static int clear_of(struct vrt_attach *a, const struct span *s, int ns)
{
	uint64_t *stack = malloc(STACK_SCAN);
	int clear = 1;
	if (!stack || vrt_inject_regs(&a->in)) {
		free(stack);
		return 0;
	}
	for (size_t i = 0; i < a->in.n && clear; i++) {
		const struct vrt_inject_thread *t = &a->in.t[i];
		if (t->state == VRT_INJECT_STOPPED && thread_in(a, t, s, ns, stack))
			clear = 0;
	}
	free(stack);
	return clear;
}

/* Stops every thread until none is in the way of the spans (the threads
 * run a moment between tries): 0 with every thread stopped. */
static int stop_clear_of(struct vrt_attach *a, const struct span *s, int ns,
                         struct vrt_attach_cost *cost)
{
	for (int tries = 0; tries < PATCH_TRIES; tries++) {
		if (vrt_inject_stop_all(&a->in, 5000))
			return fail_inject(a, "cannot stop its threads");
		if (clear_of(a, s, ns))
			return 0;
		cost->retries++;
		vrt_inject_resume_all(&a->in);
		sleep_ms(tries < 100 ? 1 : 5);
	}
	return fail(a, "a thread stayed inside the code to be changed for %d "
	               "tries",
	            PATCH_TRIES);
}

static int write_hooks(struct vrt_attach *a, struct patch *p, int np)
{
	struct span s[2 * VRT_ATTACH_MAX_HOOKS] = {{0, 0}};
	int ns = 0;
	for (int k = 0; k < np; k++) {
		const struct vrt_attach_hook *h = &a->plan.hooks[p[k].hook];
		uint64_t lo = h->target + p[k].r.skip;
		s[ns++] = (struct span){lo, lo + p[k].r.moved};
		/* the slot's old trampoline, entered or not */
		s[ns++] = (struct span){h->slot - 1,
		                        h->slot + VRT_ATTACH_TRAMP_MAX};
	}
	if (stop_clear_of(a, s, ns, &a->attach_cost))
		return -1;
	for (int k = 0; k < np; k++) {
		struct vrt_attach_hook *h = &a->plan.hooks[p[k].hook];
		uint64_t lo = h->target + p[k].r.skip;
		if (vrt_inject_write(&a->in, h->slot, p[k].r.tramp,
		                     p[k].r.tramp_len) ||
		    vrt_inject_write(&a->in, lo, p[k].r.patch, p[k].r.moved))
			return fail_inject(a, "writing a hook");
		h->state = VRT_ATTACH_PATCHED;
		h->patch_off = p[k].r.skip;
		h->patch_len = p[k].r.moved;
		memcpy(h->orig, p[k].orig, p[k].r.moved);
		size_t off = FIELD(hooks) + (size_t)p[k].hook * sizeof(*h);
		if (write_field(a, off, h, sizeof(*h)))
			return -1;
		a->hooked++;
	}
	for (uint32_t i = 0; i < a->plan.nhooks; i++) {
		struct vrt_attach_hook *h = &a->plan.hooks[i];
		int mine = 0;
		for (int k = 0; k < np; k++)
			mine |= p[k].hook == (int)i;
		if (h->state == VRT_ATTACH_PATCHED && !mine)
			a->hooked++; /* left by an earlier attach */
		if (h->state == VRT_ATTACH_REFUSED &&
		    write_field(a, FIELD(hooks) + i * sizeof(*h), h,
		                sizeof(*h)))
			return -1;
	}
	return set_flag(a, FIELD(live));
}

/* After a failure once the agent runs: it ends its session (nothing was
 * hooked, or the hooks go back first). */
static void abandon(struct vrt_attach *a)
{
	if (a->plan_at && a->in.memfd >= 0)
		set_flag(a, FIELD(detach));
}

int vrt_attach_start(struct vrt_attach *a, const struct vrt_attach_opts *o)
{
	struct patch *p = NULL;
	int np = 0, rc = -1;
	uint64_t t0 = now_ns();
	int gdb = o->injector == VRT_ATTACH_GDB;
	a->used = gdb ? "gdb" : "ptrace";
	if (!gdb && vrt_inject_seize(&a->in, a->pid))
		return fail_inject(a, "cannot attach");
	if (!gdb && load_with_ptrace(a, o)) {
		if (o->injector != VRT_ATTACH_AUTO || a->plan_at ||
		    !have_gdb() || !strstr(a->why, "every thread busy"))
			goto out;
		/* No safe thread: gdb borrows one its own way. */
		vrt_inject_release(&a->in);
		gdb = 1;
		a->used = "gdb";
	}
	if (gdb) {
		if (load_with_gdb(a, o))
			goto out;
		if (vrt_inject_seize(&a->in, a->pid)) {
			fail_inject(a, "cannot attach after gdb");
			goto out;
		}
	}
	if (read_plan(a))
		goto out;
	if (a->plan.status) {
		fail(a, "the agent refused to start: %s", a->plan.message);
		goto out;
	}
	p = calloc(VRT_ATTACH_MAX_HOOKS, sizeof(*p));
	if (!p) {
		fail(a, "out of memory");
		goto out;
	}
	if (plan_patches(a, p, &np, o->partial) || write_hooks(a, p, np)) {
		abandon(a);
		goto out;
	}
	rc = 0;
out:
	free(p);
	if (a->in.memfd >= 0 && vrt_inject_release(&a->in) && !rc)
		rc = fail_inject(a, "releasing its threads");
	a->attach_cost.total_ns = now_ns() - t0;
	a->attach_cost.stopped_ns = a->in.all_stopped_ns;
	a->attach_cost.borrowed_ns = a->in.borrowed_ns;
	return rc;
}

int vrt_attach_poll(struct vrt_attach *a)
{
	uint32_t flags[4];
	if (kill(a->pid, 0) < 0 && errno == ESRCH)
		return 3;
	if (peek(a->pid, a->plan_at + FIELD(live), flags, sizeof(flags)))
		return 3; /* the process is exiting */
	if (flags[2]) /* done */
		return 2;
	return flags[3] ? 1 : 0; /* stop_requested */
}

/* Whether a thread is inside one of our wrappers: its vrt_in_hook set, or
 * its instruction pointer in the agent's code or pages. The agent's own
 * threads are always there and are not asked. */
static int in_wrapper(struct vrt_attach *a, const struct vrt_inject_thread *t)
{
	char comm[32];
	int32_t in_hook = 0;
	vrt_inject_comm(a->pid, t->tid, comm, sizeof(comm));
	if (!strncmp(comm, "vramtrace-", 10))
		return 0;
	if (t->rip >= a->plan.text_lo && t->rip < a->plan.text_hi)
		return 1;
	for (uint32_t k = 0; k < a->plan.npages; k++)
		if (t->rip >= a->plan.page[k] && t->rip < a->plan.page[k] + 4096)
			return 1;
	if (t->fs_base &&
	    !vrt_inject_read(&a->in, t->fs_base + (uint64_t)a->plan.tls_in_hook,
	                     &in_hook, sizeof(in_hook)) &&
	    in_hook)
		return 1;
	return 0;
}

/* Lets the threads run until none is inside a wrapper (no new call
 * enters one once the jumps are gone); every thread stopped on return. */
static int drain(struct vrt_attach *a)
{
	uint64_t deadline = now_ns() + (uint64_t)DRAIN_MS * 1000000u;
	for (;;) {
		int inside = 0;
		if (vrt_inject_regs(&a->in))
			return fail_inject(a, "reading its threads");
		for (size_t i = 0; i < a->in.n && !inside; i++)
			if (a->in.t[i].state == VRT_INJECT_STOPPED)
				inside = in_wrapper(a, &a->in.t[i]);
		if (!inside)
			return 0;
		if (now_ns() > deadline)
			return fail(a, "a thread stayed inside a wrapper for %d "
			               "s",
			            DRAIN_MS / 1000);
		a->detach_cost.retries++;
		vrt_inject_resume_all(&a->in);
		sleep_ms(1);
		if (vrt_inject_stop_all(&a->in, 5000))
			return fail_inject(a, "cannot stop its threads");
	}
}

int vrt_attach_detach(struct vrt_attach *a)
{
	struct span s[VRT_ATTACH_MAX_HOOKS] = {{0, 0}};
	int ns = 0, rc = -1;
	uint64_t t0 = now_ns();
	if (vrt_inject_seize(&a->in, a->pid))
		return fail_inject(a, "cannot attach to detach");
	if (read_plan(a))
		goto out;
	for (uint32_t i = 0; i < a->plan.nhooks; i++) {
		const struct vrt_attach_hook *h = &a->plan.hooks[i];
		if (h->state == VRT_ATTACH_PATCHED)
			s[ns++] = (struct span){h->target + h->patch_off,
			                        h->target + h->patch_off +
			                                h->patch_len};
	}
	if (stop_clear_of(a, s, ns, &a->detach_cost))
		goto out;
	for (uint32_t i = 0; i < a->plan.nhooks; i++) {
		struct vrt_attach_hook *h = &a->plan.hooks[i];
		if (h->state != VRT_ATTACH_PATCHED)
			continue;
		if (vrt_inject_write(&a->in, h->target + h->patch_off, h->orig,
		                     h->patch_len)) {
			fail_inject(a, "restoring a function");
			goto out;
		}
		h->state = VRT_ATTACH_UNTOUCHED;
		if (write_field(a, FIELD(hooks) + i * sizeof(*h) +
		                        offsetof(struct vrt_attach_hook, state),
		                &h->state, sizeof(h->state)))
			goto out;
	}
	/* A thread still inside a wrapper after the wait records its call
	 * into a session that has ended: said, and the detach goes on. */
	int warn = drain(a) ? 1 : 0;
	if (set_flag(a, FIELD(detach)))
		goto out;
	rc = warn;
out:
	if (vrt_inject_release(&a->in) && rc >= 0)
		rc = fail_inject(a, "releasing its threads");
	a->detach_cost.total_ns = now_ns() - t0;
	a->detach_cost.stopped_ns = a->in.all_stopped_ns;
	if (rc < 0)
		return rc;
	/* The agent ends its recording on its own thread. */
	for (uint64_t end = now_ns() + (uint64_t)DONE_MS * 1000000u;
	     now_ns() < end;) {
		int st = vrt_attach_poll(a);
		if (st >= 2)
			return rc;
		sleep_ms(5);
	}
	return fail(a, "the agent did not end its recording within %d s",
	            DONE_MS / 1000);
}
