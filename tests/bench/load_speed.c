/*
 * load_speed — how fast the streaming loader alone delivers a trace's
 * events: opens the paths with vrt_load_open, drains vrt_load_next into
 * one reused buffer and prints one line of figures: events, wall seconds,
 * events/s, CPU seconds (CLOCK_PROCESS_CPUTIME_ID: what a shared, busy
 * machine still measures fairly), events per CPU second, peak RSS
 * (getrusage), the late-event count and the most events held at once.
 *
 *   load_speed [--repeat N] PATH...
 *
 * With --repeat, the whole load runs N times and the fastest run counts
 * (peak RSS is the process's, over every run). Exit 0, 1 on a load error,
 * 2 usage. Single-threaded.
 */
#include "load/load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define BATCH 4096

static double now_s(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	static struct vrt_event buf[BATCH];
	struct vrt_load_error err;
	int repeat = 1, first = 1;
	double best = 0, best_cpu = 0;
	uint64_t events = 0, late = 0, held = 0, sum = 0;

	if (argc > 2 && !strcmp(argv[1], "--repeat")) {
		repeat = atoi(argv[2]);
		first = 3;
	}
	if (first >= argc || repeat < 1) {
		fprintf(stderr, "usage: load_speed [--repeat N] PATH...\n");
		return 2;
	}
	for (int r = 0; r < repeat; r++) {
		struct vrt_trace t;
		enum vrt_load_status st;
		size_t n;
		double t0 = now_s(CLOCK_MONOTONIC), secs, cpu;
		double c0 = now_s(CLOCK_PROCESS_CPUTIME_ID);

		memset(&t, 0, sizeof(t));
		memset(&err, 0, sizeof(err));
		st = vrt_load_open(&t, argv + first, (size_t)(argc - first),
		                   &err);
		while (!st) {
			st = vrt_load_next(&t, buf, BATCH, &n, &err);
			if (st || !n)
				break;
			/* Touch what a consumer reads, so nothing is skipped. */
			for (size_t i = 0; i < n; i++)
				sum += buf[i].size + (uint64_t)buf[i].stack;
		}
		secs = now_s(CLOCK_MONOTONIC) - t0;
		cpu = now_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		if (st) {
			fprintf(stderr, "load_speed: %s: %s\n", err.path,
			        err.msg);
			vrt_load_free(&t);
			return 1;
		}
		events = t.events_total;
		late = t.events_late;
		held = t.events_held_max;
		if (r == 0 || secs < best)
			best = secs;
		if (r == 0 || cpu < best_cpu)
			best_cpu = cpu;
		vrt_load_free(&t);
	}
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("events %llu seconds %.3f events_per_s %.0f cpu_seconds %.3f "
	       "events_per_cpu_s %.0f peak_rss_kib %ld late %llu held_max %llu "
	       "check %llu\n",
	       (unsigned long long)events, best,
	       best > 0 ? (double)events / best : 0.0, best_cpu,
	       best_cpu > 0 ? (double)events / best_cpu : 0.0, ru.ru_maxrss,
	       (unsigned long long)late, (unsigned long long)held,
	       (unsigned long long)(sum & 0xffff));
	return 0;
}
