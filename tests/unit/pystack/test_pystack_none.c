/*
 * pystack.c in a process with no Python: init finds nothing, capture
 * returns 0 frames, describe refuses a pointer that is no code object.
 * TAP output.
 */
#include "pystack.h"

#include <stdio.h>
#include <string.h>

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

int main(void)
{
	struct vrt_pyframe f[8];
	ok(vrt_pystack_init() == 0, "no interpreter found");
	ok(vrt_pystack_init() == 0, "looking again finds none either");
	ok(vrt_pystack_version() == 0, "version 0");
	ok(vrt_pystack_capture(f, 8) == 0, "capture gives 0 frames");

	static const long not_code[8];
	struct vrt_pyframe bogus = {.code = not_code, .lasti = 0};
	char file[16], func[16];
	int line = -1;
	ok(vrt_pystack_describe(&bogus, file, sizeof(file), func, sizeof(func),
	                        &line) == -1,
	   "describe refuses what is no code object");
	ok(strcmp(file, "?") == 0 && strcmp(func, "?") == 0 && line == 0,
	   "and leaves placeholder names");
	printf("1..%d\n", test_no);
	return failures ? 1 : 0;
}
