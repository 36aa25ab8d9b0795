/*
 * tp_pair — a tensor-parallel server in miniature, for the metrics of a
 * process tree: rank 0 (this process) and --ranks - 1 forked ranks, each
 * on the device of its rank, like vLLM's workers.
 *
 * Each rank holds --mib MiB, allocates --spike-mib MiB more and frees them
 * at once (a spike no scrape sees live), prints
 * "tp_pair: rank R pid P ready", then waits until --hold-file exists (at
 * most 30 s) and frees everything. Rank 0 waits for the others. Exit 0
 * when every rank allocated and exited 0.
 */
#include "cuda_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int rank_main(int rank, size_t mib, size_t spike, const char *hold)
{
	CUcontext ctx;
	CUdeviceptr keep, tmp;
	struct timespec nap = {0, 20 * 1000 * 1000};

	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, rank) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc_v2(&keep, mib << 20) ||
	    cuMemAlloc_v2(&tmp, spike << 20) || cuMemFree_v2(tmp)) {
		fprintf(stderr, "tp_pair: rank %d: allocation failed\n", rank);
		return 1;
	}
	dprintf(1, "tp_pair: rank %d pid %d ready\n", rank, (int)getpid());
	for (int i = 0; i < 1500 && access(hold, F_OK); i++)
		nanosleep(&nap, NULL);
	return cuMemFree_v2(keep) ? 1 : 0;
}

int main(int argc, char **argv)
{
	int ranks = 2, ok = 1;
	size_t mib = 64, spike = 16;
	const char *hold = NULL;
	pid_t pids[8];

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--ranks"))
			ranks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mib"))
			mib = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--spike-mib"))
			spike = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--hold-file"))
			hold = argv[i + 1];
	}
	if (!hold || ranks < 1 || ranks > 8) {
		fprintf(stderr, "usage: tp_pair --hold-file F [--ranks N<=8] "
		                "[--mib M] [--spike-mib S]\n");
		return 2;
	}
	for (int r = 1; r < ranks; r++) {
		pids[r] = fork();
		if (pids[r] == 0)
			_exit(rank_main(r, mib, spike, hold));
		if (pids[r] < 0)
			return 1;
	}
	ok = rank_main(0, mib, spike, hold) == 0;
	for (int r = 1; r < ranks; r++) {
		int st;
		while (waitpid(pids[r], &st, 0) < 0)
			;
		ok = ok && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return ok ? 0 : 1;
}
