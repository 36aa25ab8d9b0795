/*
 * pystack_layout.h — the CPython struct offsets pystack.c reads through.
 *
 * Internal to pystack.c; exposed only so a unit test can compare the
 * active layout with offsetof() over the interpreter's own headers. All
 * offsets are in bytes from the start of the object. x86_64 and aarch64
 * are both LP64 and share every table.
 */
#ifndef VRT_PYSTACK_LAYOUT_H
#define VRT_PYSTACK_LAYOUT_H

#include <stdint.h>

enum vrt_pyframe_kind {
	VRT_PYFRAMES_OBJECT = 1, /* 3.9, 3.10: PyFrameObject via f_back */
	VRT_PYFRAMES_INTERP = 2, /* 3.11+: _PyInterpreterFrame via previous */
};

enum vrt_pyline_kind {
	VRT_PYLINES_LNOTAB = 1,    /* 3.9: co_lnotab, byte addresses */
	VRT_PYLINES_LINETABLE = 2, /* 3.10: co_linetable (PEP 626) */
	VRT_PYLINES_LOCATIONS = 3, /* 3.11+: Objects/locations.md */
};

struct vrt_pylayout {
	unsigned version; /* 0xMMmm */
	uint8_t frames;   /* enum vrt_pyframe_kind */
	uint8_t lines;    /* enum vrt_pyline_kind */

	/* PyThreadState: frame (3.9/3.10), cframe (3.11/3.12) or
	 * current_frame (3.13+). */
	uint16_t tstate_frame;
	/* _PyCFrame.current_frame, -1 when tstate_frame is the frame. */
	int16_t cframe_frame;

	/* PyFrameObject or _PyInterpreterFrame. */
	uint16_t frame_previous; /* f_back / previous */
	uint16_t frame_code;     /* f_code / f_executable */
	uint16_t frame_instr;    /* int f_lasti (3.9/3.10); prev_instr
	                          * (3.11/3.12); instr_ptr (3.13+) */
	int16_t frame_owner;     /* char owner, -1 before 3.11 */
	int16_t owner_cstack;    /* owner value of C-stack entry frames,
	                          * -1 when there are none (3.11) */

	/* PyCodeObject. */
	uint16_t code_filename;
	uint16_t code_name;      /* co_qualname (3.11+), co_name before */
	uint16_t code_linetable; /* co_linetable, co_lnotab in 3.9 */
	uint16_t code_firstlineno;
	uint16_t code_adaptive;      /* co_code_adaptive (3.11+), 0 before */
	int16_t code_firsttraceable; /* _co_firsttraceable, -1 unknown */

	/* PyObject, PyBytesObject, PyASCIIObject. */
	uint16_t ob_type;
	uint16_t bytes_size;
	uint16_t bytes_sval;
	uint16_t str_length;
	uint16_t str_state;
	uint16_t str_ascii_size;   /* sizeof(PyASCIIObject) */
	uint16_t str_compact_size; /* sizeof(PyCompactUnicodeObject) */
};

/* The built-in table for version 0xMMmm (3.9–3.12), or NULL. */
const struct vrt_pylayout *vrt_pystack_builtin(unsigned version);

/* The layout in use after vrt_pystack_init() returned 1, else NULL. */
const struct vrt_pylayout *vrt_pystack_layout(void);

#endif /* VRT_PYSTACK_LAYOUT_H */
