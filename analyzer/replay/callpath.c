/*
 * callpath.c — call paths in call order, and the frames that tell none
 * apart (callpath.h). Pure; no globals but constant tables.
 */
#include "callpath.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "pathname.h"
#include "vramtrace/trace_format.h"

/* Native frames of the interpreter running Python code: the Python
 * frames of the stack were executed inside the innermost of them. */
static int eval_frame(const char *fn)
{
	static const char *const eval[] = {"_PyEval_EvalFrame",
	                                   "PyEval_EvalCode", "_PyEval_Vector",
	                                   "PyEval_EvalFrame"};
	size_t i;

	for (i = 0; fn && i < sizeof(eval) / sizeof(eval[0]); i++)
		if (!strncmp(fn, eval[i], strlen(eval[i])))
			return 1;
	return 0;
}

/* Native frames that start the process: nothing runs outside them. */
static int entry_frame(const char *fn)
{
	return fn && (!strcmp(fn, "_start") ||
	              !strncmp(fn, "__libc_start", 12) || !strcmp(fn, "main") ||
	              !strncmp(fn, "Py_BytesMain", 12) ||
	              !strncmp(fn, "Py_RunMain", 10));
}

void vrt_callpath_order(const struct vrt_trace *t, uint32_t *fr, size_t n)
{
	size_t i, npy = 0, nat, at, first_py = n;
	uint32_t tmp[256];

	for (i = 0; i < n; i++)
		if (t->frames[fr[i]].kind == VRT_FRAME_PYTHON) {
			npy++;
			if (first_py == n)
				first_py = i;
		}
	/* The recorded layout is natives then Pythons; anything else (no
	 * Python frame, none native, already mixed) is left alone. */
	if (!npy || npy == n || first_py + npy != n || n > 256)
		return;
	nat = n - npy;
	at = nat;
	for (i = 0; i < nat; i++)
		if (eval_frame(vrt_load_str(t, t->frames[fr[i]].function))) {
			at = i;
			break;
		}
	if (at == nat)
		for (i = 0; i < nat; i++)
			if (entry_frame(vrt_load_str(t,
			                             t->frames[fr[i]].function))) {
				at = i;
				break;
			}
	if (at == nat)
		return;
	/* natives [0, at), Pythons, natives [at, nat) */
	memcpy(tmp, fr + nat, npy * sizeof(*fr));
	memmove(fr + at + npy, fr + at, (nat - at) * sizeof(*fr));
	memcpy(fr + at, tmp, npy * sizeof(*fr));
}

int vrt_callpath_plumbing(const struct vrt_trace *t, const struct vrt_frame *f)
{
	static const char *const libs[] = {
	        "libcuda.so",  "libcudart",  "libamdhip64",  "libhip",
	        "libc10",      "libtorch",   "libpython",    "python",
	        "libc.so",     "libc-",      "ld-linux",     "libffi",
	        "libstdc++",   "libvramtrace", "_ctypes"};
	const char *file, *base;
	size_t i;

	if (f->kind != VRT_FRAME_NATIVE)
		return 0;
	if (!f->function)
		return 1;
	file = vrt_load_str(t, f->file);
	if (!file)
		return 0;
	base = vrt_pathname_base(file);
	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++)
		if (!strncmp(base, libs[i], strlen(libs[i])))
			return 1;
	return 0;
}

int vrt_callpath_site(const struct vrt_trace *t, uint32_t stack, char *buf,
                      size_t n)
{
	uint32_t fr[256];
	size_t k = vrt_load_stack_frames(t, stack, fr, 256), i;
	int pass;

	buf[0] = '\0';
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < k; i++) {
			const struct vrt_frame *f = &t->frames[fr[i]];
			const char *fn = vrt_load_str(t, f->function);
			const char *file =
			        vrt_pathname_base(vrt_load_str(t, f->file));
			if ((f->kind == VRT_FRAME_PYTHON) != (pass == 0) ||
			    !fn || vrt_callpath_plumbing(t, f))
				continue;
			if (f->kind == VRT_FRAME_PYTHON && f->line)
				snprintf(buf, n, "%s (%s:%" PRIu64 ")", fn,
				         file ? file : "?", f->line);
			else
				snprintf(buf, n, "%s (%s)", fn,
				         file ? file : "?");
			return 0;
		}
	return -1;
}
