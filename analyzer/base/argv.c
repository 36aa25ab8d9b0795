/*
 * argv.c — an option's value in a recorded command line (argv.h). Pure.
 */
#include "argv.h"

#include <string.h>

const char *vrt_argv_value(char *const *argv, size_t argc, size_t i,
                           const char *name)
{
	const char *a = i < argc ? argv[i] : NULL;
	size_t n = strlen(name);

	if (!a || strncmp(a, name, n))
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] == '\0' && i + 1 < argc)
		return argv[i + 1];
	return NULL;
}
