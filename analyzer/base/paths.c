/*
 * paths.c — the directories of an install, relative to this executable
 * and as configured (paths.h). Single-threaded; no allocation.
 */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VRT_INSTALL_LIBDIR
#define VRT_INSTALL_LIBDIR "/usr/local/lib"
#endif
#ifndef VRT_PKGLIBDIR_REL
#define VRT_PKGLIBDIR_REL "lib/vramtrace"
#endif

int vrt_paths_self_dir(char *out)
{
	ssize_t len = readlink("/proc/self/exe", out, PATH_MAX - 1);
	char *slash;

	if (len <= 0)
		return -1;
	out[len] = '\0';
	slash = strrchr(out, '/');
	if (!slash) {
		errno = ENOENT;
		return -1;
	}
	*slash = '\0';
	return 0;
}

int vrt_paths_join(char *out, const char *a, const char *b)
{
	int k = snprintf(out, PATH_MAX, "%s/%s", a, b);
	return k < 0 || k >= PATH_MAX ? -1 : 0;
}

static int add(char dirs[][PATH_MAX], int n, const char *a, const char *b,
               const char *sub)
{
	char cand[PATH_MAX];

	if (snprintf(cand, sizeof(cand), "%s%s%s%s%s", a, b[0] ? "/" : "", b,
	             sub[0] ? "/" : "", sub) >= (int)sizeof(cand))
		return n;
	for (int i = 0; i < n; i++)
		if (!strcmp(dirs[i], cand))
			return n;
	memcpy(dirs[n], cand, strlen(cand) + 1);
	return n + 1;
}

int vrt_paths_install_dirs(const char *sub, char dirs[][PATH_MAX])
{
	char self[PATH_MAX], up[PATH_MAX + 4];
	int n = 0;

	if (!vrt_paths_self_dir(self)) {
		snprintf(up, sizeof(up), "%s/..", self);
		/* A libdir given absolute at configure time has no
		 * relative form: only the configured place then. */
		if (VRT_PKGLIBDIR_REL[0] != '/')
			n = add(dirs, n, up, VRT_PKGLIBDIR_REL, sub);
		n = add(dirs, n, up, "lib/vramtrace", sub);
	}
	return add(dirs, n, VRT_INSTALL_LIBDIR "/vramtrace", "", sub);
}

int vrt_paths_find_lib(const char *name, const char *env_name, char *path)
{
	const char *env = getenv(env_name);
	char self[PATH_MAX], dirs[VRT_PATHS_MAX + 1][PATH_MAX];
	char cand[PATH_MAX], looked[(VRT_PATHS_MAX + 1) * 128];
	int n = 0;
	size_t used = 0;

	if (env && *env) {
		if (access(env, R_OK) || !realpath(env, path)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot use %s: %s\n", env,
			        env_name, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!vrt_paths_self_dir(self) &&
	    !vrt_paths_join(dirs[n], self, "../preload"))
		n++;
	n += vrt_paths_install_dirs("", dirs + n);
	looked[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (!vrt_paths_join(cand, dirs[i], name) && !access(cand, R_OK) &&
		    realpath(cand, path))
			return 0;
		if (used < sizeof(looked))
			used += (size_t)snprintf(looked + used,
			                         sizeof(looked) - used, "%s%s",
			                         i ? ", " : "", dirs[i]);
	}
	fprintf(stderr,
	        "vramtrace: error: %s: not found: looked in %s; set %s to "
	        "its path\n",
	        name, looked, env_name);
	return -1;
}
