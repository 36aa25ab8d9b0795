/*
 * sim_spawn.c — multiprocessing-spawn-shaped children (sim_spawn.h).
 *
 * The parent forks and the child execs /proc/self/exe with the spawn
 * command line; the settings follow on the channel as "ARGS n" and n
 * lines. Descriptors the child must keep across exec are made without
 * FD_CLOEXEC in the child only. Nothing here is shared between threads.
 */
#include "sim_spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define SPAWN_CODE                                                          \
	"from multiprocessing.spawn import spawn_main; "                    \
	"spawn_main(tracker_fd=%d, pipe_handle=%d)"

pid_t sim_spawn(const char *const *args, int nargs, struct sim_chan *chan)
{
	int sv[2], tr[2];
	char code[160];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	if (pipe2(tr, O_CLOEXEC)) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		char *argv[5];
		/* The child's ends survive exec; the parent's do not. */
		fcntl(sv[1], F_SETFD, 0);
		fcntl(tr[1], F_SETFD, 0);
		snprintf(code, sizeof(code), SPAWN_CODE, tr[1], sv[1]);
		argv[0] = (char *)args[0];
		argv[1] = "-c";
		argv[2] = code;
		argv[3] = "--multiprocessing-fork";
		argv[4] = NULL;
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	close(sv[1]);
	close(tr[1]);
	/* The tracker pipe is only ever read to its end; closing our read
	 * end now is harmless, as the child never writes it. */
	close(tr[0]);
	if (pid < 0) {
		close(sv[0]);
		return -1;
	}
	memset(chan, 0, sizeof(*chan));
	chan->fd = sv[0];
	if (sim_chan_send(chan, "ARGS %d", nargs)) {
		close(sv[0]);
		return -1;
	}
	for (int i = 0; i < nargs; i++)
		if (sim_chan_send(chan, "%s", args[i])) {
			close(sv[0]);
			return -1;
		}
	return pid;
}

int sim_spawn_child(int argc, char **argv, struct sim_chan *chan,
                    char ***args, int *nargs)
{
	int tracker, handle, n;
	char line[4096];
	char **v;

	if (argc != 4 || strcmp(argv[1], "-c") ||
	    strcmp(argv[3], "--multiprocessing-fork") ||
	    sscanf(argv[2], SPAWN_CODE, &tracker, &handle) != 2)
		return 0;
	memset(chan, 0, sizeof(*chan));
	chan->fd = handle;
	fcntl(handle, F_SETFD, FD_CLOEXEC);
	fcntl(tracker, F_SETFD, FD_CLOEXEC);
	if (sim_chan_recv(chan, line, sizeof(line)) ||
	    sscanf(line, "ARGS %d", &n) != 1 || n < 1 || n > 256)
		return -1;
	v = calloc((size_t)n + 1, sizeof(*v));
	if (!v)
		return -1;
	for (int i = 0; i < n; i++)
		if (sim_chan_recv(chan, line, sizeof(line)) ||
		    !(v[i] = strdup(line)))
			return -1;
	*args = v;
	*nargs = n;
	return 1;
}

int sim_chan_send(struct sim_chan *c, const char *fmt, ...)
{
	char line[4096];
	va_list ap;
	int n;
	size_t off = 0;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 1)
		return -1;
	line[n++] = '\n';
	while (off < (size_t)n) {
		ssize_t w = send(c->fd, line + off, (size_t)n - off,
		                 MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

int sim_chan_recv(struct sim_chan *c, char *line, size_t n)
{
	for (;;) {
		char *nl = memchr(c->buf, '\n', c->len);
		ssize_t r;
		if (nl) {
			size_t k = (size_t)(nl - c->buf);
			if (k >= n)
				return -1;
			memcpy(line, c->buf, k);
			line[k] = '\0';
			memmove(c->buf, nl + 1, c->len - k - 1);
			c->len -= k + 1;
			return 0;
		}
		if (c->len == sizeof(c->buf))
			return -1;
		r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
}
