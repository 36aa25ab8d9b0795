/*
 * bench_io — what the preload's read/write hooks cost on descriptors that
 * are not connections it follows: --calls pairs of write() and read() of
 * 64 bytes on a regular file (in a directory given with --dir) and on a
 * pipe, from one thread. Each hook tests one bit for such an fd; run the program
 * bare and under the preload and subtract (run_all.py does).
 *
 * Prints two lines, CPU ns per write+read pair (CLOCK_THREAD_CPUTIME_ID
 * around each loop, divided by --calls; the file's pair also makes two
 * lseek calls, which the preload does not hook):
 *   "file <ns per pair>"
 *   "pipe <ns per pair>"
 *
 *   bench_io --dir DIR [--calls N]
 *
 * Exit 0; 1 when a call fails; 2 usage.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int fail(const char *what)
{
	perror(what);
	return 1;
}

int main(int argc, char **argv)
{
	const char *dir = NULL;
	long calls = 1000000;
	char buf[64], path[4096];
	int fds[2], fd;
	double t0, file_ns, pipe_ns;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--dir"))
			dir = argv[i + 1];
		else if (!strcmp(argv[i], "--calls"))
			calls = atol(argv[i + 1]);
	}
	if (!dir || calls < 1) {
		fprintf(stderr, "usage: bench_io --dir DIR [--calls N]\n");
		return 2;
	}
	memset(buf, 'x', sizeof(buf));
	snprintf(path, sizeof(path), "%s/bench_io.dat", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(path);
	unlink(path);
	/* Write then read the same 64 bytes of the file (an lseek before
	 * each): the page cache, no growth, no disk. */
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++)
		if (lseek(fd, 0, SEEK_SET) < 0 ||
		    write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    lseek(fd, 0, SEEK_SET) < 0 ||
		    read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("file");
	file_ns = cpu_ns() - t0;
	close(fd);
	if (pipe(fds))
		return fail("pipe");
	t0 = cpu_ns();
	for (long i = 0; i < calls; i++)
		if (write(fds[1], buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    read(fds[0], buf, sizeof(buf)) != (ssize_t)sizeof(buf))
			return fail("pipe");
	pipe_ns = cpu_ns() - t0;
	printf("file %.2f\n", file_ns / (double)calls);
	printf("pipe %.2f\n", pipe_ns / (double)calls);
	return 0;
}
