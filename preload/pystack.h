/*
 * pystack.c — the calling thread's Python frames, read without the GIL.
 *
 * PyTorch's bindings and ctypes release the GIL around native calls, so a
 * hook cannot take it (that can deadlock against the caller's locks) and
 * must not call any Python API. Instead the thread's own frame chain is
 * walked read-only, as py-spy and austin do from outside: its frames cannot
 * change while the thread sits in our hook. Struct layouts come from
 * _Py_DebugOffsets (3.13+, at the start of _PyRuntime) or from built-in
 * tables (3.9–3.12). Unknown versions, no interpreter in the process, or a
 * thread without a Python thread state: 0 frames, never a crash.
 *
 * No libpython link: symbols are found with dlsym(RTLD_DEFAULT, ...).
 */
#ifndef VRT_PYSTACK_H
#define VRT_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

/* One frame as captured: the code object and where in it the thread is.
 * The pair identifies the frame for interning; names and line come from
 * vrt_pystack_describe on first sight. */
struct vrt_pyframe {
	const void *code;
	int64_t lasti; /* instruction offset in code units (version-specific
	                * meaning; only describe() interprets it) */
};

/* Looks for an interpreter in the process and picks the layout. Cheap to
 * call again (returns the cached answer once an interpreter was found; a
 * process that loads libpython later is seen at a later call). Returns 1
 * if Python frames can be read, 0 if not. Not for the hot path before it
 * returned 1 once: until then each call repeats a few dlsym() lookups
 * (and dlopen(RTLD_NOLOAD) probes for a libpython loaded RTLD_LOCAL), so
 * callers rate-limit it. Thread-safe and lock-free: while one thread is
 * looking, another gets 0. */
int vrt_pystack_init(void);

/* The handle the interpreter's symbols were found through (RTLD_DEFAULT,
 * which is NULL, or a libpython's) into *handle: 1, or 0 before
 * vrt_pystack_init found one. */
int vrt_pystack_handle(void **handle);

/* Python version found, as 0xMMmm (0x030b for 3.11), or 0. */
unsigned vrt_pystack_version(void);

/*
 * Fills out[] with up to max frames of the calling thread, INNERMOST
 * first; returns the count (0 when unavailable, e.g. a thread that has no
 * Python thread state or runs no Python code). The thread need not hold
 * the GIL. Hot path: no malloc, no lock, no Python API, no reference
 * counts; bounded work (max frames plus a few skipped entry frames).
 * Callable from inside a hook.
 */
int vrt_pystack_capture(struct vrt_pyframe *out, int max);

/*
 * Names of a captured frame: the code object's file name and qualified
 * function name as UTF-8 (cut to fit, always NUL-terminated) and the line
 * number for lasti (the code object's first line if the line table cannot
 * be read). Reads the code object only (no API calls), so it is valid
 * while the frame is live: call it on the capturing thread before the hook
 * returns. Names are co_qualname from 3.11 on, co_name before ("load_model"
 * rather than "Worker.load_model"). No allocation, no lock. Returns 0, or
 * -1 if the object does not look like a code object (then both names are
 * "?" and *line is 0). A name that is not a readable str becomes "?".
 */
int vrt_pystack_describe(const struct vrt_pyframe *f, char *file,
                         size_t filelen, char *func, size_t funclen, int *line);

#endif /* VRT_PYSTACK_H */
