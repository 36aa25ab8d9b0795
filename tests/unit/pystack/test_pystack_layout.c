/*
 * The layout pystack.c reads through, compared with offsetof() over the
 * linked interpreter's own structs (Py_BUILD_CORE internal headers). For
 * 3.9–3.12 this checks the built-in table; for 3.13 the offsets parsed
 * from _Py_DebugOffsets. Skips where the internal headers are not
 * installed. TAP output.
 */
#include <Python.h>

#if PY_VERSION_HEX >= 0x030b0000
#if defined(__has_include)
#if __has_include("internal/pycore_frame.h")
#include "internal/pycore_frame.h"
#define HAVE_STRUCTS 1
#endif
#endif
#else
#include <frameobject.h>
#define HAVE_STRUCTS 1
#endif

#include "pystack.h"
#include "pystack_layout.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static int test_no;
static int failures;

static void same(long have, long want, const char *what)
{
	int good = have == want;
	printf("%sok %d - %s", good ? "" : "not ", ++test_no, what);
	if (!good)
		printf(" (table %ld, headers %ld)", have, want);
	printf("\n");
	if (!good)
		failures++;
}

int main(void)
{
#ifndef HAVE_STRUCTS
	printf("1..0 # SKIP internal headers of Python %s not installed\n",
	       PY_VERSION);
	return 0;
#else
	/* Also keeps libpython linked: nothing else here calls into it. */
	const char *v = Py_GetVersion();
	printf("# Python %.*s\n", (int)strcspn(v, " \n"), v);
	if (!vrt_pystack_init()) {
		printf("not ok 1 - interpreter found\n1..1\n");
		return 1;
	}
	const struct vrt_pylayout *l = vrt_pystack_layout();
	same(l->version, PY_VERSION_HEX >> 16, "version");

#if PY_VERSION_HEX < 0x030b0000
	same(l->frames, VRT_PYFRAMES_OBJECT, "frame objects");
	same(l->tstate_frame, offsetof(PyThreadState, frame), "tstate frame");
	same(l->cframe_frame, -1, "no cframe");
	same(l->frame_previous, offsetof(PyFrameObject, f_back), "f_back");
	same(l->frame_code, offsetof(PyFrameObject, f_code), "f_code");
	same(l->frame_instr, offsetof(PyFrameObject, f_lasti), "f_lasti");
	same(l->code_name, offsetof(PyCodeObject, co_name), "co_name");
#if PY_VERSION_HEX >= 0x030a0000
	same(l->lines, VRT_PYLINES_LINETABLE, "PEP 626 line table");
	same(l->code_linetable, offsetof(PyCodeObject, co_linetable),
	     "co_linetable");
#else
	same(l->lines, VRT_PYLINES_LNOTAB, "lnotab");
	same(l->code_linetable, offsetof(PyCodeObject, co_lnotab), "co_lnotab");
#endif
#else
	same(l->frames, VRT_PYFRAMES_INTERP, "interpreter frames");
	same(l->lines, VRT_PYLINES_LOCATIONS, "location table");
#if PY_VERSION_HEX < 0x030d0000
	same(l->tstate_frame, offsetof(PyThreadState, cframe), "tstate cframe");
	same(l->cframe_frame, offsetof(_PyCFrame, current_frame),
	     "cframe current_frame");
	same(l->frame_code, offsetof(_PyInterpreterFrame, f_code), "f_code");
	same(l->frame_instr, offsetof(_PyInterpreterFrame, prev_instr),
	     "prev_instr");
#else
	same(l->tstate_frame, offsetof(PyThreadState, current_frame),
	     "tstate current_frame");
	same(l->cframe_frame, -1, "no cframe");
	same(l->frame_code, offsetof(_PyInterpreterFrame, f_executable),
	     "f_executable");
	same(l->frame_instr, offsetof(_PyInterpreterFrame, instr_ptr),
	     "instr_ptr");
#endif
	same(l->frame_previous, offsetof(_PyInterpreterFrame, previous),
	     "previous");
	same(l->frame_owner, offsetof(_PyInterpreterFrame, owner), "owner");
#if PY_VERSION_HEX >= 0x030c0000
	same(l->owner_cstack, FRAME_OWNED_BY_CSTACK, "FRAME_OWNED_BY_CSTACK");
#endif
	same(l->frame_owner >= 0 ? 1 : 0, 1, "owner present");
	same(l->code_name, offsetof(PyCodeObject, co_qualname), "co_qualname");
	same(l->code_linetable, offsetof(PyCodeObject, co_linetable),
	     "co_linetable");
	same(l->code_adaptive, offsetof(PyCodeObject, co_code_adaptive),
	     "co_code_adaptive");
	same(l->code_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable),
	     "_co_firsttraceable");
#endif
	same(l->code_filename, offsetof(PyCodeObject, co_filename),
	     "co_filename");
	same(l->code_firstlineno, offsetof(PyCodeObject, co_firstlineno),
	     "co_firstlineno");
	same(l->ob_type, offsetof(PyObject, ob_type), "ob_type");
	same(l->bytes_size, offsetof(PyVarObject, ob_size), "bytes ob_size");
	same(l->bytes_sval, offsetof(PyBytesObject, ob_sval), "bytes ob_sval");
	same(l->str_length, offsetof(PyASCIIObject, length), "str length");
	same(l->str_state, offsetof(PyASCIIObject, state), "str state");
	same(l->str_ascii_size, sizeof(PyASCIIObject), "sizeof PyASCIIObject");
	same(l->str_compact_size, sizeof(PyCompactUnicodeObject),
	     "sizeof PyCompactUnicodeObject");

	/* The state bits pystack.c decodes: kind 2..4, compact 5, ascii 6. */
	{
		PyASCIIObject a;
		memset(&a, 0, sizeof(a));
		a.state.kind = 7;
		unsigned s;
		memcpy(&s, (char *)&a + offsetof(PyASCIIObject, state), 4);
		same((s >> 2) & 7, 7, "state.kind bits");
		memset(&a, 0, sizeof(a));
		a.state.compact = 1;
		memcpy(&s, (char *)&a + offsetof(PyASCIIObject, state), 4);
		same(s, 1u << 5, "state.compact bit");
		memset(&a, 0, sizeof(a));
		a.state.ascii = 1;
		memcpy(&s, (char *)&a + offsetof(PyASCIIObject, state), 4);
		same(s, 1u << 6, "state.ascii bit");
	}
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
#endif
}
