/*
 * Where the installed parts of vramtrace are, seen from the running
 * `vramtrace`: the preload (record) and the demo's example server and fake
 * driver (demo). An install is found relative to the executable first, so
 * one that was moved (the bundle unpacked anywhere, a DESTDIR staging
 * tree) keeps working; the directory configured at build time comes last.
 * A build tree is not an install: callers look there themselves first.
 */
#ifndef VRT_PATHS_H
#define VRT_PATHS_H

#include <limits.h>
#include <stddef.h>

#define VRT_PATHS_MAX 3

/* The directory holding the running executable, into out (PATH_MAX
 * bytes); 0, or -1 with errno set. */
int vrt_paths_self_dir(char *out);

/* out = a "/" b, into PATH_MAX bytes; 0, or -1 when it does not fit. */
int vrt_paths_join(char *out, const char *a, const char *b);

/* Fills dirs with the install directories that may hold the part, in the
 * order to try them: <exe>/../<libdir>/vramtrace/SUB (meson install),
 * <exe>/../lib/vramtrace/SUB (the bundle) and <prefix>/<libdir>/vramtrace/
 * SUB (as configured), without repeats. sub is "" for the directory
 * itself. Returns the count (at most VRT_PATHS_MAX). */
int vrt_paths_install_dirs(const char *sub, char dirs[][PATH_MAX]);

/* Finds one of vramtrace's libraries (the preload, the attach agent) and
 * puts its absolute path in path (PATH_MAX bytes): the variable env_name
 * when set, else next to this executable in a build tree (../preload/),
 * else an install's directory. 0, or -1 after printing why not. */
int vrt_paths_find_lib(const char *name, const char *env_name, char *path);

#endif /* VRT_PATHS_H */
