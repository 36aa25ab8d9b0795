/*
 * A ctypes-loadable probe over pystack.c: the interpreter is whatever
 * python runs ctypes_probe.py (often the main executable, not a loaded
 * libpython), and ctypes releases the GIL around the call.
 */
#include "pystack.h"

#include <stdio.h>

int vrt_probe(char *out, int len);

/* Captures the caller's frames and writes "func file:line|" for each into
 * out. Returns the frame count, or -1 when no interpreter was found. */
__attribute__((visibility("default"))) int vrt_probe(char *out, int len)
{
	struct vrt_pyframe f[32];
	if (!vrt_pystack_init())
		return -1;
	int n = vrt_pystack_capture(f, 32), o = 0;
	out[0] = '\0';
	for (int i = 0; i < n && o < len - 400; i++) {
		char file[256], func[128];
		int line;
		vrt_pystack_describe(&f[i], file, sizeof(file), func,
		                     sizeof(func), &line);
		o += snprintf(out + o, (size_t)(len - o), "%s %s:%d|", func,
		              file, line);
	}
	return n;
}
