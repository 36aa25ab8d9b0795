/*
 * spew — a server that logs as fast as it can: MB megabytes of 100-byte
 * lines to stdout, in 64 KiB writes, then its own time for them (the
 * first write to the last, monotonic) into RESULT as "seconds bytes".
 * The logcap benchmark runs it bare and under `vramtrace record` and
 * compares the times (run_logcap_bench.py).
 *
 * Usage: spew MB RESULT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char block[64 * 100 * 10]; /* 640 lines of 100 bytes */
	struct timespec a, b;
	long long total, done = 0;
	size_t i;
	FILE *f;

	if (argc != 3)
		return 2;
	total = atoll(argv[1]) * 1024 * 1024;
	for (i = 0; i < sizeof(block); i += 100) {
		snprintf(block + i, 101, "INFO 12-02 10:15:00 [spew.c:1] line "
		                         "%06zu of a server that logs fast %-30s",
		         i / 100, "xxxxxxxxxxxxxxxxxxxxxxx");
		block[i + 99] = '\n';
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (done < total) {
		size_t n = sizeof(block);
		ssize_t w = write(1, block, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		done += w;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	f = fopen(argv[2], "w");
	if (!f)
		return 1;
	fprintf(f, "%.6f %lld\n",
	        (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9,
	        done);
	return fclose(f) ? 1 : 0;
}
