/*
 * sim_spawn.h — child processes started the way Python's multiprocessing
 * "spawn" starts them (vLLM's engine core and tensor-parallel workers):
 * the parent execs a fresh copy of its own executable whose command line
 * is
 *
 *   EXE -c "from multiprocessing.spawn import spawn_main;
 *           spawn_main(tracker_fd=N, pipe_handle=M)" --multiprocessing-fork
 *
 * and hands the child its settings through the pipe_handle descriptor (a
 * socket pair; it then carries the parent's and child's messages, one
 * line each). tracker_fd stands where the resource tracker's pipe would:
 * the write end of a pipe the child never writes.
 *
 * Threads: none of its own; a channel is used by one thread.
 */
#ifndef SIM_SPAWN_H
#define SIM_SPAWN_H

#include <stddef.h>
#include <sys/types.h>

struct sim_chan {
	int fd;
	size_t len;
	char buf[4096];
};

/* Starts a spawned child that receives args[0..nargs) as its settings.
 * Returns its pid (filling *chan), -1 on error. */
pid_t sim_spawn(const char *const *args, int nargs, struct sim_chan *chan);
/* In a child: 1 when argv is a spawn command line (then *chan is the
 * channel and *args, *nargs the settings, malloc'ed), 0 when it is not,
 * -1 when it is but the settings cannot be read. */
int sim_spawn_child(int argc, char **argv, struct sim_chan *chan,
                    char ***args, int *nargs);
/* One line each way; recv strips the newline. 0, or -1 (EOF, error). */
int sim_chan_send(struct sim_chan *c, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
int sim_chan_recv(struct sim_chan *c, char *line, size_t n);

#endif
