/*
 * hold_accept — a library preloaded after libvramtrace.so into a server
 * whose load a test wants to start later: the server's first accept()
 * (or accept4) first creates "$HOLD_ACCEPT.waiting", then waits until
 * the file $HOLD_ACCEPT exists (polling every 10 ms, at most 60 s), then
 * accepts. Clients that connected meanwhile wait in the listen backlog.
 * So a test can switch recording on (`vramtrace ctl DIR start`) after the
 * server listens and before it serves anything. Without HOLD_ACCEPT set
 * it does nothing.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static void hold(void)
{
	static int done;
	const char *f = getenv("HOLD_ACCEPT");
	char w[4096];
	int fd;

	if (!f || done)
		return;
	done = 1;
	snprintf(w, sizeof(w), "%s.waiting", f);
	fd = open(w, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 6000 && access(f, F_OK) != 0; i++)
		usleep(10000);
}

int accept(int s, struct sockaddr *a, socklen_t *l)
{
	int (*next)(int, struct sockaddr *, socklen_t *) =
	        (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT,
	                                                            "accept");
	hold();
	return next ? next(s, a, l) : -1;
}

int accept4(int s, struct sockaddr *a, socklen_t *l, int flags)
{
	int (*next)(int, struct sockaddr *, socklen_t *, int) =
	        (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(
	                RTLD_NEXT, "accept4");
	hold();
	return next ? next(s, a, l, flags) : -1;
}
