/*
 * hook_env.c — children keep the preload when their environment is
 * replaced.
 *
 * A traced tree stays one run only while every child inherits LD_PRELOAD
 * and VRAMTRACE_OUT. Servers often start children with an environment of
 * their own making (subprocess with env=..., os.execve with a fresh
 * dictionary, a launcher that passes a filtered environment to its
 * shards), and those children would silently run untraced. So the exec
 * and posix_spawn wrappers (hook_libc.c) pass the new environment through
 * vrt_hook_env_fix: when capture is enabled in this process and the new
 * environment lacks our library in LD_PRELOAD or lacks VRAMTRACE_OUT, the
 * child gets a copy with them added (our path in front of any LD_PRELOAD
 * it already has; the run directory chosen by the constructor), and with
 * the other VRAMTRACE_* settings this process started with that the new
 * environment does not set, so the whole tree records alike. An
 * environment that sets VRAMTRACE_ENABLE to a false value is left alone:
 * that is how a program keeps a child out of the trace on purpose.
 *
 * Where it runs: in the exec wrappers, which may be called in a vfork
 * child (Python's subprocess uses vfork), where only async-signal-safe
 * work is allowed and the memory is the parent's. So the copy is built in
 * a buffer on the caller's stack (struct vrt_hook_env); only when it does
 * not fit and the caller is this process itself (not a vfork child) is
 * malloc used; otherwise the original environment passes unchanged.
 *
 * State: lib_path, out_entry and the saved settings are written once by
 * the constructor (vrt_hook_env_init) before any other thread of ours
 * exists, and only read afterwards.
 */
#include "hook.h"
#include "session.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LD_NAME  "LD_PRELOAD="
#define OUT_NAME "VRAMTRACE_OUT="
#define ENA_NAME "VRAMTRACE_ENABLE="

static char lib_path[PATH_MAX]; /* our library, absolute; "" = disabled */
static const char *lib_base;    /* its file name, inside lib_path */
static char out_entry[PATH_MAX + sizeof(OUT_NAME)];

/* The VRAMTRACE_* entries of our environment at start (but VRAMTRACE_OUT,
 * which out_entry states absolutely), copied: the program may change its
 * environment later. Ones that do not fit are not passed on. */
#define SAVED_MAX      32
#define SAVED_TEXT_MAX 8192
static char saved_text[SAVED_TEXT_MAX];
static char *saved[SAVED_MAX];
static size_t nsaved;

extern char **environ;

static void save_settings(void)
{
	size_t used = 0;
	nsaved = 0;
	for (char **e = environ; e && *e && nsaved < SAVED_MAX; e++) {
		size_t len = strlen(*e) + 1;
		if (strncmp(*e, "VRAMTRACE_", 10) || !strchr(*e, '=') ||
		    !strncmp(*e, OUT_NAME, strlen(OUT_NAME)) ||
		    used + len > sizeof(saved_text))
			continue;
		memcpy(saved_text + used, *e, len);
		saved[nsaved++] = saved_text + used;
		used += len;
	}
}

/* Whether env (n entries) sets the variable of entry "NAME=value". */
static int env_sets(char *const *env, size_t n, const char *entry)
{
	size_t len = (size_t)(strchr(entry, '=') - entry) + 1;
	for (size_t i = 0; i < n; i++)
		if (!strncmp(env[i], entry, len))
			return 1;
	return 0;
}

void vrt_hook_env_init(const char *run_dir)
{
	Dl_info info;
	char abs[PATH_MAX];
	const char *p;

	lib_path[0] = '\0';
	if (!run_dir || !dladdr((void *)vrt_hook_env_init, &info) ||
	    !info.dli_fname || !info.dli_fname[0])
		return;
	/* A relative LD_PRELOAD entry would break in a child that changes
	 * directory, so the child gets the absolute path. */
	p = realpath(info.dli_fname, abs) ? abs : info.dli_fname;
	if (p[0] != '/' || strlen(p) >= sizeof(lib_path) ||
	    strpbrk(p, ": \t\n") ||
	    strlen(run_dir) + sizeof(OUT_NAME) > sizeof(out_entry))
		return; /* not expressible in LD_PRELOAD: inherit as is */
	strcpy(out_entry, OUT_NAME);
	strcat(out_entry, run_dir);
	strcpy(lib_path, p);
	lib_base = strrchr(lib_path, '/') + 1;
	save_settings();
}

static int has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Whether an LD_PRELOAD value (entries separated by ':' or spaces, as
 * ld.so reads it) names a file called like ours. Matching the file name,
 * not the whole path, accepts another copy of the same preload. */
static int names_us(const char *v)
{
	size_t nb = strlen(lib_base);
	while (*v) {
		size_t n = strcspn(v, ": \t");
		const char *base = v;
		for (size_t i = 0; i < n; i++)
			if (v[i] == '/')
				base = v + i + 1;
		if ((size_t)(v + n - base) == nb && !memcmp(base, lib_base, nb))
			return 1;
		v += n;
		if (*v)
			v++;
	}
	return 0;
}

static int is_false(const char *v)
{
	static const char *const no[] = {"0", "no", "false", "off"};
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (!strcasecmp(v, no[i]))
			return 1;
	return 0;
}

char *const *vrt_hook_env_fix(char *const envp[], struct vrt_hook_env *b)
{
	static char *const empty[] = {NULL};
	char *const *env = envp ? envp : empty;
	const char *ld = NULL;
	int have_out = 0;
	size_t n = 0;

	b->heap = NULL;
	if (!lib_path[0])
		return envp;
	for (; env[n]; n++) {
		if (has_prefix(env[n], LD_NAME))
			ld = env[n] + strlen(LD_NAME);
		else if (has_prefix(env[n], OUT_NAME))
			have_out = 1;
		else if (has_prefix(env[n], ENA_NAME) &&
		         is_false(env[n] + strlen(ENA_NAME)))
			return envp;
	}
	int need_ld = !ld || !names_us(ld);
	size_t missing = 0;
	for (size_t i = 0; i < nsaved; i++)
		missing += !env_sets(env, n, saved[i]);
	if (!need_ld && have_out && !missing)
		return envp;

	/* n entries, the ones added, and the NULL. */
	size_t want = n + 2 + missing + 1;
	char **vec = b->vec;
	if (want > VRT_HOOK_ENV_VEC) {
		if (!vrt_session_is_self())
			return envp; /* a vfork child: no malloc */
		vec = b->heap = malloc(want * sizeof(*vec));
		if (!vec)
			return envp;
	}
	char *ld_entry = NULL;
	if (need_ld) {
		size_t len = strlen(LD_NAME) + strlen(lib_path) + 1 +
		             (ld ? strlen(ld) + 1 : 0);
		if (len > sizeof(b->ld)) {
			free(b->heap);
			b->heap = NULL;
			return envp; /* an absurd LD_PRELOAD: leave it be */
		}
		ld_entry = b->ld;
		strcpy(ld_entry, LD_NAME);
		strcat(ld_entry, lib_path);
		if (ld && *ld) {
			strcat(ld_entry, ":");
			strcat(ld_entry, ld);
		}
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		vec[k++] = (ld_entry && has_prefix(env[i], LD_NAME)) ? ld_entry
		                                                     : env[i];
	if (ld_entry && !ld)
		vec[k++] = ld_entry;
	if (!have_out)
		vec[k++] = out_entry;
	for (size_t i = 0; i < nsaved && missing; i++)
		if (!env_sets(env, n, saved[i]))
			vec[k++] = saved[i];
	vec[k] = NULL;
	return vec;
}

void vrt_hook_env_release(struct vrt_hook_env *b)
{
	free(b->heap);
	b->heap = NULL;
}
