/*
 * proc_tree — a parent that allocates, forks a child that allocates and
 * leaves with _exit (no exec: it must get a trace file of its own), and
 * spawns itself with posix_spawn (exec: the new image traces itself into
 * the same run directory, found through the inherited environment).
 *
 *   parent: 3 MiB;  fork child: 5 MiB;  spawned child: 7 MiB
 */
#include "cuda_api.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void alloc_mib(int n)
{
	CUcontext ctx;
	CUdeviceptr p;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc_v2(&p, (size_t)n << 20)) {
		fprintf(stderr, "proc_tree: allocation failed\n");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--spawned")) {
		alloc_mib(7);
		return 0;
	}
	alloc_mib(3);
	pid_t child = fork();
	if (child == 0) {
		alloc_mib(5);
		_exit(0);
	}
	int st;
	waitpid(child, &st, 0);
	pid_t spawned;
	char *args[] = {argv[0], "--spawned", NULL};
	if (posix_spawn(&spawned, argv[0], NULL, NULL, args, environ)) {
		fprintf(stderr, "proc_tree: posix_spawn failed\n");
		return 1;
	}
	int st2;
	waitpid(spawned, &st2, 0);
	printf("proc_tree: parent %d, forked %d, spawned %d\n", (int)getpid(),
	       (int)child, (int)spawned);
	return WIFEXITED(st) && WIFEXITED(st2) && !WEXITSTATUS(st) &&
	                       !WEXITSTATUS(st2)
	               ? 0
	               : 1;
}
