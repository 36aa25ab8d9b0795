/*
 * pystack.c — the calling thread's Python frames, read without the GIL.
 *
 * A hooked allocation usually happens while the thread has released the
 * GIL (PyTorch's bindings and ctypes do so around native calls), so we
 * take no lock and call no Python API on the hot path. The thread's own
 * state comes from PyGILState_GetThisThreadState(), which in 3.9–3.13 is
 * a pthread_getspecific() of the gilstate key: no lock, no allocation,
 * and the binding survives releasing the GIL (3.12+ also has a "current
 * tstate" TLS variable, but it is cleared when the GIL is released, so
 * it is the wrong source here). From there the frame chain is read as
 * py-spy and austin read it from outside, except that nothing can change
 * under us: the frames belong to this thread, which sits in our hook.
 *
 *   3.9, 3.10  tstate->frame, PyFrameObject via f_back; f_code, f_lasti
 *   3.11       tstate->cframe->current_frame, _PyInterpreterFrame via
 *              previous; f_code, prev_instr
 *   3.12       same, plus C-stack entry frames (owner CSTACK) to skip
 *   3.13       tstate->current_frame; f_executable, instr_ptr; offsets
 *              from _Py_DebugOffsets at the start of _PyRuntime
 *   other      0 frames (3.14 changed the layout of _Py_DebugOffsets
 *              itself; add it once checked against its headers)
 *
 * From 3.11 on, frames the interpreter calls "incomplete" (pushed, not
 * yet past _co_firsttraceable; this includes the __init__ shim of 3.12+)
 * are skipped as tracebacks skip them.
 *
 * Layouts for 3.9–3.12 are the tables below; pystack_layout.h lets a
 * unit test compare the active one with offsetof() over real headers.
 * Free-threaded and Py_TRACE_REFS builds change the object header and are
 * declined (0 frames).
 *
 * Safety. Every pointer read from the interpreter is checked for NULL,
 * alignment and a plausible user address before it is dereferenced, and
 * every object is type-checked by comparing its ob_type with the type
 * object found by dlsym (PyCode_Type, PyFrame_Type, PyUnicode_Type,
 * PyBytes_Type): a frame whose code is no code object is skipped (C-stack
 * entry frames), anything else that fails a check ends the walk or turns
 * a name into "?". Loops are bounded (frames
 * visited, line-table bytes, string characters). A check that each
 * pointer lies in a readable mapping would cost a syscall or a lookup per
 * read, which the hot path cannot pay; the interpreter's own structures
 * of the calling thread are trusted to be intact, the same assumption the
 * interpreter itself makes.
 *
 * Threads. vrt_pystack_init may run on several threads at once: the
 * first one looks (a flag, no lock, so a fork in the middle cannot leave
 * a held mutex behind), the others report "not yet". The result is
 * published with a release store of py_ready; capture and describe only
 * read state that is immutable after that store.
 *
 * Symbols are looked up with libc's dlsym(RTLD_DEFAULT): libpython loaded
 * globally, or a python executable built with --export-dynamic (CPython's
 * default for its static builds). A libpython opened with RTLD_LOCAL (an
 * embedding plugin) is found with dlopen(RTLD_NOLOAD) by its soname; that
 * reference is kept so the library cannot be unloaded under us.
 */
#include "core.h"
#include "pystack.h"
#include "pystack_layout.h"
#include "real.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* Frames visited per capture, counting skipped entry frames. */
#define WALK_EXTRA 64
/* Line-table bytes decoded per describe. A module's top-level code in a
 * very large file may exceed this; its line then falls back to
 * co_firstlineno. */
#define MAX_LINETABLE (1u << 20)
/* The range of user-space addresses on LP64 Linux (up to 56-bit VA). */
#define ADDR_MIN 4096u
#define ADDR_MAX (1ull << 56)

/* ---- layouts 3.9–3.12 (offsetof over each version's headers) ----------- */

static const struct vrt_pylayout builtin[] = {
        {.version = 0x0309,
         .frames = VRT_PYFRAMES_OBJECT,
         .lines = VRT_PYLINES_LNOTAB,
         .tstate_frame = 24,
         .cframe_frame = -1,
         .frame_previous = 24,
         .frame_code = 32,
         .frame_instr = 104,
         .frame_owner = -1,
         .owner_cstack = -1,
         .code_filename = 104,
         .code_name = 112,
         .code_linetable = 120,
         .code_firstlineno = 40,
         .code_adaptive = 0,
         .code_firsttraceable = -1,
         .ob_type = 8,
         .bytes_size = 16,
         .bytes_sval = 32,
         .str_length = 16,
         .str_state = 32,
         .str_ascii_size = 48,
         .str_compact_size = 72},
        {.version = 0x030a,
         .frames = VRT_PYFRAMES_OBJECT,
         .lines = VRT_PYLINES_LINETABLE,
         .tstate_frame = 24,
         .cframe_frame = -1,
         .frame_previous = 24,
         .frame_code = 32,
         .frame_instr = 96,
         .frame_owner = -1,
         .owner_cstack = -1,
         .code_filename = 104,
         .code_name = 112,
         .code_linetable = 120,
         .code_firstlineno = 40,
         .code_adaptive = 0,
         .code_firsttraceable = -1,
         .ob_type = 8,
         .bytes_size = 16,
         .bytes_sval = 32,
         .str_length = 16,
         .str_state = 32,
         .str_ascii_size = 48,
         .str_compact_size = 72},
        {.version = 0x030b,
         .frames = VRT_PYFRAMES_INTERP,
         .lines = VRT_PYLINES_LOCATIONS,
         .tstate_frame = 56,
         .cframe_frame = 8,
         .frame_previous = 48,
         .frame_code = 32,
         .frame_instr = 56,
         .frame_owner = 69,
         .owner_cstack = -1,
         .code_filename = 112,
         .code_name = 128,
         .code_linetable = 136,
         .code_firstlineno = 72,
         .code_adaptive = 184,
         .code_firsttraceable = 168,
         .ob_type = 8,
         .bytes_size = 16,
         .bytes_sval = 32,
         .str_length = 16,
         .str_state = 32,
         .str_ascii_size = 48,
         .str_compact_size = 72},
        {.version = 0x030c,
         .frames = VRT_PYFRAMES_INTERP,
         .lines = VRT_PYLINES_LOCATIONS,
         .tstate_frame = 56,
         .cframe_frame = 0,
         .frame_previous = 8,
         .frame_code = 0,
         .frame_instr = 56,
         .frame_owner = 70,
         .owner_cstack = 3,
         .code_filename = 112,
         .code_name = 128,
         .code_linetable = 136,
         .code_firstlineno = 68,
         .code_adaptive = 192,
         .code_firsttraceable = 176,
         .ob_type = 8,
         .bytes_size = 16,
         .bytes_sval = 32,
         .str_length = 16,
         .str_state = 32,
         .str_ascii_size = 40,
         .str_compact_size = 56},
};

const struct vrt_pylayout *vrt_pystack_builtin(unsigned version)
{
	for (size_t i = 0; i < sizeof(builtin) / sizeof(builtin[0]); i++)
		if (builtin[i].version == version)
			return &builtin[i];
	return NULL;
}

/* ---- 3.13: _Py_DebugOffsets ------------------------------------------- */

/* The head of _Py_DebugOffsets as CPython 3.13.x lays it out (stable
 * within a minor version, not across them), up to the last part we use. */
struct debug_offsets_313 {
	char cookie[8];
	uint64_t version;
	uint64_t free_threaded;
	struct {
		uint64_t size, finalizing, interpreters_head;
	} runtime_state;
	struct {
		uint64_t size, id, next, threads_head, gc, imports_modules,
		        sysdict, builtins, ceval_gil, gil_runtime_state,
		        gil_runtime_state_enabled, gil_runtime_state_locked,
		        gil_runtime_state_holder;
	} interpreter_state;
	struct {
		uint64_t size, prev, next, interp, current_frame, thread_id,
		        native_thread_id, datastack_chunk, status;
	} thread_state;
	struct {
		uint64_t size, previous, executable, instr_ptr, localsplus,
		        owner;
	} interpreter_frame;
	struct {
		uint64_t size, filename, name, qualname, linetable, firstlineno,
		        argcount, localsplusnames, localspluskinds,
		        co_code_adaptive;
	} code_object;
	struct {
		uint64_t size, ob_type;
	} pyobject;
	struct {
		uint64_t size, tp_name, tp_repr, tp_flags;
	} type_object;
	struct {
		uint64_t size, ob_item, ob_size;
	} tuple_object, list_object;
	struct {
		uint64_t size, ma_keys, ma_values;
	} dict_object;
	struct {
		uint64_t size, ob_fval;
	} float_object;
	struct {
		uint64_t size, lv_tag, ob_digit;
	} long_object;
	struct {
		uint64_t size, ob_size, ob_sval;
	} bytes_object;
	struct {
		uint64_t size, state, length, asciiobject_size;
	} unicode_object;
};

/* An offset of a field that must lie inside an object of `size` bytes
 * (and `width` bytes wide); stored in *out. 0 ok, -1 implausible. */
static int take(uint16_t *out, uint64_t off, uint64_t size, unsigned width)
{
	if (size > 65535 || off + width > size)
		return -1;
	*out = (uint16_t)off;
	return 0;
}

static int layout_from_debug_offsets(const struct debug_offsets_313 *d,
                                     struct vrt_pylayout *l)
{
	memset(l, 0, sizeof(*l));
	l->version = 0x030d;
	l->frames = VRT_PYFRAMES_INTERP;
	l->lines = VRT_PYLINES_LOCATIONS;
	l->cframe_frame = -1;
	l->owner_cstack = 3; /* FRAME_OWNED_BY_CSTACK in 3.13 */
	uint16_t owner;
	uint64_t ts = d->thread_state.size, fs = d->interpreter_frame.size,
	         cs = d->code_object.size, us = d->unicode_object.size;
	if (take(&l->tstate_frame, d->thread_state.current_frame, ts, 8) ||
	    take(&l->frame_previous, d->interpreter_frame.previous, fs, 8) ||
	    take(&l->frame_code, d->interpreter_frame.executable, fs, 8) ||
	    take(&l->frame_instr, d->interpreter_frame.instr_ptr, fs, 8) ||
	    take(&owner, d->interpreter_frame.owner, fs, 1) ||
	    take(&l->code_filename, d->code_object.filename, cs, 8) ||
	    take(&l->code_name, d->code_object.qualname, cs, 8) ||
	    take(&l->code_linetable, d->code_object.linetable, cs, 8) ||
	    take(&l->code_firstlineno, d->code_object.firstlineno, cs, 4) ||
	    take(&l->code_adaptive, d->code_object.co_code_adaptive, cs, 2) ||
	    take(&l->ob_type, d->pyobject.ob_type, d->pyobject.size, 8) ||
	    take(&l->bytes_size, d->bytes_object.ob_size, d->bytes_object.size,
	         8) ||
	    take(&l->bytes_sval, d->bytes_object.ob_sval, d->bytes_object.size,
	         1) ||
	    take(&l->str_length, d->unicode_object.length, us, 8) ||
	    take(&l->str_state, d->unicode_object.state, us, 4) ||
	    take(&l->str_ascii_size, d->unicode_object.asciiobject_size, us, 0))
		return -1;
	l->frame_owner = (int16_t)owner;
	/* _co_firsttraceable is not published. In 3.13 (as in 3.11 and
	 * 3.12) it is the int followed by the co_extra pointer and then
	 * co_code_adaptive: without it the __init__ shim frame that
	 * CALL_ALLOC_AND_ENTER_INIT pushes would show as a Python frame. */
	if (l->code_adaptive < 16)
		return -1;
	l->code_firsttraceable = (int16_t)(l->code_adaptive - 16);
	/* PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject;
	 * PyUnicodeObject adds the data pointer. The debug offsets give the
	 * first and last size, which pins down the middle one. */
	if (us != (uint64_t)l->str_ascii_size + 24)
		return -1;
	l->str_compact_size = (uint16_t)(l->str_ascii_size + 16);
	return 0;
}

/* ---- interpreter discovery -------------------------------------------- */

typedef void *(*get_tstate_fn)(void);

static _Atomic int py_ready;
static _Atomic int py_busy; /* an init is looking (pid of the looker) */
static struct vrt_pylayout lay;
static get_tstate_fn get_tstate;
static const void *code_type, *frame_type, *unicode_type, *bytes_type;

/* "3.10.13 (main, ...)" → 0x030a, or 0. */
static unsigned parse_version(const char *s)
{
	if (!s || s[0] != '3' || s[1] != '.')
		return 0;
	unsigned minor = 0;
	const char *p = s + 2;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9' && minor < 1000)
		minor = minor * 10 + (unsigned)(*p++ - '0');
	return 0x0300u | minor;
}

static void *py_handle; /* where the interpreter was found */

/* Everything from one handle (RTLD_DEFAULT or a libpython). 1 found. */
static int look(void *h)
{
	get_tstate_fn gt;
	*(void **)&gt = vrt_real_dlsym(h, "PyGILState_GetThisThreadState");
	const void *ct = vrt_real_dlsym(h, "PyCode_Type");
	const void *ut = vrt_real_dlsym(h, "PyUnicode_Type");
	const void *bt = vrt_real_dlsym(h, "PyBytes_Type");
	const void *ft = vrt_real_dlsym(h, "PyFrame_Type");
	if (!gt || !ct || !ut || !bt)
		return 0;

	/* One interpreter: the symbols must come from one object. */
	Dl_info a, b;
	if (!dladdr((void *)ct, &a) || !dladdr((void *)ut, &b) ||
	    a.dli_fbase != b.dli_fbase)
		return 0;

	unsigned version = 0;
	struct vrt_pylayout l;
	const char *rt = vrt_real_dlsym(h, "_PyRuntime");
	const unsigned long *pv = vrt_real_dlsym(h, "Py_Version");
	if (rt && memcmp(rt, "xdebugpy", 8) == 0) {
		const struct debug_offsets_313 *d = (const void *)rt;
		version = (unsigned)(d->version >> 16);
		if (pv && (unsigned)(*pv >> 16) != version)
			return 0;
		if (version != 0x030d || d->free_threaded)
			return 0;
		if (layout_from_debug_offsets(d, &l))
			return 0;
	} else {
		if (pv) {
			version = (unsigned)(*pv >> 16);
		} else {
			/* Before 3.11 only the version string exists.
			 * Py_GetVersion formats into a static buffer (no
			 * allocation) and may be called before
			 * Py_Initialize. */
			const char *(*gv)(void);
			*(void **)&gv = vrt_real_dlsym(h, "Py_GetVersion");
			if (!gv)
				return 0;
			version = parse_version(gv());
		}
		const struct vrt_pylayout *b2 = vrt_pystack_builtin(version);
		if (!b2)
			return 0;
		/* Py_TRACE_REFS adds two pointers to every object header. */
		if (vrt_real_dlsym(h, "_Py_PrintReferences"))
			return 0;
		if (b2->frames == VRT_PYFRAMES_OBJECT && !ft)
			return 0;
		l = *b2;
	}

	lay = l;
	py_handle = h;
	get_tstate = gt;
	code_type = ct;
	unicode_type = ut;
	bytes_type = bt;
	frame_type = ft;
	return 1;
}

static int discover(void)
{
	if (look(RTLD_DEFAULT))
		return 1;
	/* A libpython loaded with RTLD_LOCAL. The reference taken here is
	 * kept on success: our pointers into it must stay valid. */
	for (int minor = 9; minor <= 13; minor++) {
		char name[32];
		memcpy(name, "libpython3.", 11);
		int n = 11;
		if (minor >= 10)
			name[n++] = (char)('0' + minor / 10);
		name[n++] = (char)('0' + minor % 10);
		memcpy(name + n, ".so.1.0", 8);
		void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
		if (!h)
			continue;
		if (look(h))
			return 1;
		dlclose(h);
	}
	return 0;
}

int vrt_pystack_init(void)
{
	if (atomic_load_explicit(&py_ready, memory_order_acquire))
		return 1;
	int me = (int)getpid();
	int other = 0;
	if (!atomic_compare_exchange_strong(&py_busy, &other, me)) {
		/* Another thread is looking, or one was when this process
		 * was forked from its parent (then nobody will finish here:
		 * take over). */
		if (other == me ||
		    !atomic_compare_exchange_strong(&py_busy, &other, me))
			return atomic_load_explicit(&py_ready,
			                            memory_order_acquire);
	}
	int found = atomic_load_explicit(&py_ready, memory_order_acquire);
	if (!found && discover()) {
		atomic_store_explicit(&py_ready, 1, memory_order_release);
		found = 1;
	}
	atomic_store_explicit(&py_busy, 0, memory_order_release);
	return found;
}

int vrt_pystack_handle(void **handle)
{
	if (!atomic_load_explicit(&py_ready, memory_order_acquire))
		return 0;
	*handle = py_handle; /* RTLD_DEFAULT is NULL */
	return 1;
}

unsigned vrt_pystack_version(void)
{
	return atomic_load_explicit(&py_ready, memory_order_acquire)
	               ? lay.version
	               : 0;
}

const struct vrt_pylayout *vrt_pystack_layout(void)
{
	return atomic_load_explicit(&py_ready, memory_order_acquire) ? &lay
	                                                             : NULL;
}

/* ---- reading ---------------------------------------------------------- */

static inline int ptr_ok(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	return a >= ADDR_MIN && a < ADDR_MAX && (a & 7) == 0;
}

static inline const char *rd_ptr(const char *base, unsigned off)
{
	const char *p;
	memcpy(&p, base + off, sizeof(p));
	return p;
}

static inline int is_type(const char *obj, const void *type)
{
	return ptr_ok(obj) && rd_ptr(obj, lay.ob_type) == type;
}

int vrt_pystack_capture(struct vrt_pyframe *out, int max)
{
	if (!atomic_load_explicit(&py_ready, memory_order_acquire) || max <= 0)
		return 0;
	const char *ts = get_tstate();
	if (!ptr_ok(ts))
		return 0;
	const char *fr = rd_ptr(ts, lay.tstate_frame);
	if (lay.cframe_frame >= 0) {
		if (!ptr_ok(fr))
			return 0;
		fr = rd_ptr(fr, (unsigned)lay.cframe_frame);
	}

	int n = 0;
	int budget = max + WALK_EXTRA;
	if (lay.frames == VRT_PYFRAMES_OBJECT) {
		while (n < max && budget-- > 0 && is_type(fr, frame_type)) {
			const char *code = rd_ptr(fr, lay.frame_code);
			if (!is_type(code, code_type))
				break;
			int lasti;
			memcpy(&lasti, fr + lay.frame_instr, sizeof(lasti));
			out[n].code = code;
			out[n].lasti = lasti;
			n++;
			fr = rd_ptr(fr, lay.frame_previous);
		}
		return n;
	}

	while (n < max && budget-- > 0 && ptr_ok(fr)) {
		const char *code = rd_ptr(fr, lay.frame_code);
		const char *next = rd_ptr(fr, lay.frame_previous);
		signed char owner = (signed char)fr[lay.frame_owner];
		/* C-stack entry frames (3.12: the interpreter trampoline,
		 * 3.13: None) and anything that is not a code object are
		 * not Python frames. */
		if (owner == lay.owner_cstack || !is_type(code, code_type)) {
			fr = next;
			continue;
		}
		const char *first = code + lay.code_adaptive;
		const char *instr = rd_ptr(fr, lay.frame_instr);
		int64_t lasti =
		        (int64_t)((uintptr_t)instr - (uintptr_t)first) / 2;
		/* A frame pushed but not yet started is "incomplete" to the
		 * interpreter, which hides it from tracebacks; so do we. */
		if (owner != 1 /* FRAME_OWNED_BY_GENERATOR */) {
			int ft = 0;
			if (lay.code_firsttraceable >= 0)
				memcpy(&ft, code + lay.code_firsttraceable,
				       sizeof(ft));
			if (lasti < ft) {
				fr = next;
				continue;
			}
		}
		out[n].code = code;
		out[n].lasti = lasti;
		n++;
		fr = next;
	}
	return n;
}

/* ---- describe --------------------------------------------------------- */

/* Appends code point c as UTF-8 if it fits in [*o, end); 0 or -1 full. */
static int put_utf8(char **o, char *end, uint32_t c)
{
	char *p = *o;
	if (c < 0x80) {
		if (end - p < 1)
			return -1;
		*p++ = (char)c;
	} else if (c < 0x800) {
		if (end - p < 2)
			return -1;
		*p++ = (char)(0xc0 | (c >> 6));
		*p++ = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		if (end - p < 3)
			return -1;
		*p++ = (char)(0xe0 | (c >> 12));
		*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
		*p++ = (char)(0x80 | (c & 0x3f));
	} else {
		if (c > 0x10ffff)
			c = 0xfffd;
		if (end - p < 4)
			return -1;
		*p++ = (char)(0xf0 | (c >> 18));
		*p++ = (char)(0x80 | ((c >> 12) & 0x3f));
		*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
		*p++ = (char)(0x80 | (c & 0x3f));
	}
	*o = p;
	return 0;
}

/* Copies a str object into buf as UTF-8 (cut at a character boundary).
 * Compact strings only: code objects' names and file names always are.
 * 0, or -1 with buf = "?" when the object is not a readable str. */
static int read_str(const char *s, char *buf, size_t len)
{
	if (!len)
		return 0;
	char *o = buf, *end = buf + len - 1;
	uint32_t state;
	int64_t n;
	if (!is_type(s, unicode_type))
		goto bad;
	memcpy(&state, s + lay.str_state, sizeof(state));
	memcpy(&n, s + lay.str_length, sizeof(n));
	unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1,
	         ascii = (state >> 6) & 1;
	if (!compact || n < 0 || (kind != 1 && kind != 2 && kind != 4) ||
	    (ascii && kind != 1))
		goto bad;
	const unsigned char *d =
	        (const unsigned char *)s +
	        (ascii ? lay.str_ascii_size : lay.str_compact_size);
	/* At most len-1 characters can fit; read no further. */
	if ((uint64_t)n > len)
		n = (int64_t)len;
	for (int64_t i = 0; i < n; i++) {
		uint32_t c;
		if (kind == 1) {
			c = d[i];
		} else if (kind == 2) {
			uint16_t u;
			memcpy(&u, d + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, d + 4 * i, 4);
		}
		if (put_utf8(&o, end, c))
			break;
	}
	*o = '\0';
	return 0;
bad:
	buf[0] = len > 1 ? '?' : '\0';
	if (len > 1)
		buf[1] = '\0';
	return -1;
}

/* Varints of the 3.11+ location table: 6-bit groups, bit 6 continues. */
static uint32_t varint(const uint8_t *p, size_t n, size_t *i)
{
	uint32_t v = 0;
	unsigned shift = 0;
	while (*i < n && shift < 32) {
		uint8_t b = p[(*i)++];
		v |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int32_t svarint(const uint8_t *p, size_t n, size_t *i)
{
	uint32_t u = varint(p, n, i);
	return (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
}

/* 3.11+: entries of (bit 7 set) code:4 length-1:3, then code-specific
 * bytes; lasti in code units. -1: no line. */
static int line_locations(const uint8_t *p, size_t n, int line, int64_t lasti)
{
	int64_t addr = 0;
	size_t i = 0;
	while (i < n) {
		uint8_t b = p[i];
		if (!(b & 0x80))
			return -1;
		unsigned code = (b >> 3) & 15;
		int64_t end = addr + (b & 7) + 1;
		i++;
		int delta = 0;
		if (code == 13 || code == 14) /* no columns, long form */
			delta = svarint(p, n, &i);
		else if (code >= 10 && code <= 12) /* one line forms */
			delta = (int)code - 10;
		line += delta;
		if (lasti < end)
			return code == 15 ? -1 : line;
		addr = end;
		while (i < n && !(p[i] & 0x80))
			i++;
	}
	return -1;
}

/* 3.10 (PEP 626): pairs (byte delta, signed line delta; -128 no line);
 * addresses in bytes. -1: no line. */
static int line_linetable(const uint8_t *p, size_t n, int line, int64_t addrq)
{
	int64_t addr = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		int sd = p[i];
		int ld = (signed char)p[i + 1];
		if (ld != -128)
			line += ld;
		addr += sd;
		if (sd && addrq < addr)
			return ld == -128 ? -1 : line;
	}
	return -1;
}

/* 3.9: co_lnotab pairs (byte delta, signed line delta). */
static int line_lnotab(const uint8_t *p, size_t n, int line, int64_t addrq)
{
	int64_t addr = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		addr += p[i];
		if (addr > addrq)
			break;
		line += (signed char)p[i + 1];
	}
	return line;
}

static int line_of(const char *code, int64_t lasti, int first)
{
	const char *t = rd_ptr(code, lay.code_linetable);
	if (!is_type(t, bytes_type))
		return -1;
	int64_t n;
	memcpy(&n, t + lay.bytes_size, sizeof(n));
	if (n < 0)
		return -1;
	if (n > (int64_t)MAX_LINETABLE)
		n = MAX_LINETABLE;
	const uint8_t *p = (const uint8_t *)t + lay.bytes_sval;
	switch (lay.lines) {
	case VRT_PYLINES_LOCATIONS:
		return lasti < 0 ? first
		                 : line_locations(p, (size_t)n, first, lasti);
	case VRT_PYLINES_LINETABLE: /* f_lasti counts 2-byte code units */
		return lasti < 0
		               ? first
		               : line_linetable(p, (size_t)n, first, lasti * 2);
	case VRT_PYLINES_LNOTAB: /* f_lasti is a byte offset */
		return lasti < 0 ? first
		                 : line_lnotab(p, (size_t)n, first, lasti);
	}
	return -1;
}

int vrt_pystack_describe(const struct vrt_pyframe *f, char *file,
                         size_t filelen, char *func, size_t funclen, int *line)
{
	const char *code = f->code;
	if (!atomic_load_explicit(&py_ready, memory_order_acquire) ||
	    !is_type(code, code_type)) {
		read_str(NULL, file, filelen);
		read_str(NULL, func, funclen);
		*line = 0;
		return -1;
	}
	read_str(rd_ptr(code, lay.code_filename), file, filelen);
	read_str(rd_ptr(code, lay.code_name), func, funclen);
	int first;
	memcpy(&first, code + lay.code_firstlineno, sizeof(first));
	int l = line_of(code, f->lasti, first);
	*line = l >= 0 ? l : first;
	return 0;
}
