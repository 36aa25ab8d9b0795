/*
 * pathname.c — the last component of a path (pathname.h). Used by the
 * analyzer's reports and by cmdline.c, which the preload links too: no
 * allocation, no globals.
 */
#include "pathname.h"

#include <string.h>

const char *vrt_pathname_base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s && s[1] ? s + 1 : p;
}

const char *vrt_pathname_base_or_empty(const char *p)
{
	return p ? vrt_pathname_base(p) : "";
}
