/*
 * Unit test of fds.c, the preload's table of its own fds, with no preload
 * (so a close or dup2 here is one the hooks never saw, like a raw system
 * call): a number the program takes is refused and never closed by us,
 * whether the hooks reported it (vrt_fds_release) or only fstat can tell
 * (vrt_fds_check); fds 0-2 are never kept; a flush function runs once,
 * before the number is taken; a handle of a freed slot closes nothing.
 * TAP output.
 */
#include "core.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int test_no, failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static int flushed;

static void count_flush(void)
{
	flushed++;
}

int main(void)
{
	char dir[] = "/tmp/vrt-fds-XXXXXX", a[64], b[64];
	if (!mkdtemp(dir))
		return 1;
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);

	/* Reported by a closing hook: refused, not closed by us. */
	struct vrt_fd f = vrt_fds_open(a, O_WRONLY | O_CREAT, 0600);
	ok(f.fd > 2 && f.slot >= 0, "an fd of ours is registered, above 2");
	ok(vrt_fds_write_all(f, "x", 1) == 0 && vrt_fds_check(f),
	   "ours: written, checked");
	vrt_fds_set_flush(f, count_flush);
	ok(vrt_fds_any((unsigned)f.fd, (unsigned)f.fd) &&
	           !vrt_fds_any((unsigned)f.fd + 1, ~0u),
	   "vrt_fds_any finds it in its range only");
	ok(vrt_fds_release(0, ~0u, 1) == 1 && flushed == 1,
	   "a release over it flushes once, then takes it");
	ok(vrt_fds_release(0, ~0u, 1) == 1 && flushed == 1,
	   "a second release does not flush again");
	int prog = open(b, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	int num = f.fd;
	ok(dup2(prog, num) == num, "the program dup2s its file over it");
	ok(vrt_fds_write_all(f, "y", 1) == -EBADF && !vrt_fds_use(f),
	   "taken: no write, no use");
	ok(vrt_fds_close(&f) == -EBADF && is_open(num) && f.fd == -1,
	   "taken: not closed by us, the handle forgotten");
	close(num);
	close(prog);

	/* Behind the hooks: only fstat can tell. */
	f = vrt_fds_open(a, O_RDONLY, 0);
	num = f.fd;
	close(num);
	prog = open(b, O_RDONLY | O_CLOEXEC);
	ok(prog == num, "the program closes it and reuses the number");
	ok(!vrt_fds_check(f) && !vrt_fds_use(f),
	   "fstat shows another file: taken");
	ok(vrt_fds_close(&f) == -EBADF && is_open(prog),
	   "the program's file is not closed");
	close(prog);

	/* A freed slot reused: the old handle closes nothing. */
	f = vrt_fds_open(a, O_RDONLY, 0);
	struct vrt_fd old = f;
	ok(vrt_fds_close(&f) == 0, "a close of ours");
	struct vrt_fd g = vrt_fds_open(a, O_RDONLY, 0);
	ok(g.fd == old.fd, "the number is ours again");
	ok(vrt_fds_close(&old) == -EBADF && is_open(g.fd),
	   "a stale handle does not close the new fd");
	vrt_fds_close(&g);

	/* Fds 0-2: never kept there. */
	int saved = dup(0);
	close(0);
	f = vrt_fds_open(a, O_RDONLY, 0);
	ok(f.fd > 2 && !is_open(0), "an fd opened at 0 is moved above 2");
	vrt_fds_close(&f);
	dup2(saved, 0);
	close(saved);

	unlink(a);
	unlink(b);
	rmdir(dir);
	printf("1..%d\n", test_no);
	return failures != 0;
}
