/*
 * Call paths as people read them: the recorded stack of an allocation
 * holds its native frames, innermost first, and then the Python frames of
 * the allocating thread, innermost first (the preload reads the two
 * separately). Reports show one path: the Python frames sit inside the
 * interpreter frame that ran them. And some frames are plumbing, code
 * every allocation of a kind runs through (the CUDA runtime, PyTorch's
 * allocator, the interpreter, the ctypes call gate and libffi, libc):
 * they tell no two paths apart, so summaries leave them out.
 *
 * Pure functions over the trace's tables; thread-safe for a trace nobody
 * modifies.
 */
#ifndef VRT_CALLPATH_H
#define VRT_CALLPATH_H

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"

/*
 * Puts the frames fr[0..n) of one stack (vrt_load_stack_frames's order)
 * in call order, innermost first: the Python frames go just inside the
 * innermost native frame of the interpreter's evaluation loop
 * (_PyEval_EvalFrame*, PyEval_EvalCode...), else just inside the process's
 * entry frames (_start, __libc_start_main...), else stay outermost. The
 * relative order of the Python frames and of the native frames is kept.
 * fr is rewritten in place; n frames stay n frames.
 */
void vrt_callpath_order(const struct vrt_trace *t, uint32_t *fr, size_t n);

/* 1 when frame f is plumbing (see above), or a native frame without a
 * name: neither tells two call paths apart. Python frames never are. */
int vrt_callpath_plumbing(const struct vrt_trace *t, const struct vrt_frame *f);

/*
 * The frame that says where a call was made, for a sentence: the
 * innermost Python frame ("grab (alloc.py:39)"), else the innermost named
 * native frame that is not plumbing ("llama_decode (libllama.so)"), into
 * buf. Returns 0, or -1 (buf "") when the stack names none.
 */
int vrt_callpath_site(const struct vrt_trace *t, uint32_t stack, char *buf,
                      size_t n);

#endif /* VRT_CALLPATH_H */
