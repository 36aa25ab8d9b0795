/*
 * readfile.c — regular files only, read with a cap (readfile.h).
 *
 * The open is O_NONBLOCK so that a FIFO (or a terminal, or a device)
 * named where a file was expected returns at once; fstat on the opened
 * fd then decides, so a path swapped between a check and the open cannot
 * slip a FIFO through. A regular file ignores O_NONBLOCK, which is
 * cleared anyway before the fd is handed out.
 */
#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kind_of(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISDIR(m))
		return "a directory";
	return "not a file";
}

int vrt_readfile_open(const char *path, char *why, size_t whysz)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	int fl;

	if (fd < 0) {
		/* A UNIX socket cannot be opened at all: say what it is. */
		if (errno == ENXIO && stat(path, &st) == 0)
			snprintf(why, whysz, "not a regular file (%s)",
			         kind_of(st.st_mode));
		else
			snprintf(why, whysz, "%s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whysz, "not a regular file (%s)",
		         kind_of(st.st_mode));
		close(fd);
		return -1;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

static void too_large(char *why, size_t whysz, size_t max)
{
	if (max >= (1u << 20) && max % (1u << 20) == 0)
		snprintf(why, whysz, "larger than %zu MiB", max >> 20);
	else
		snprintf(why, whysz, "larger than %zu bytes", max);
}

int vrt_readfile_read(const char *path, size_t max, char **text, size_t *len,
                      char *why, size_t whysz)
{
	struct stat st;
	size_t cap, n = 0;
	char *b = NULL, *nb;
	int fd = vrt_readfile_open(path, why, whysz), rc = -1;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0) {
		snprintf(why, whysz, "%s", strerror(errno));
		goto out;
	}
	if (st.st_size > 0 && (uint64_t)st.st_size > max) {
		too_large(why, whysz, max);
		goto out;
	}
	/* st_size is a hint only: the file may still be growing, so the
	 * cap is checked on what is read (one byte past it says "more"). */
	cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
	if (cap > max + 1)
		cap = max + 1;
	b = malloc(cap + 1);
	if (!b) {
		snprintf(why, whysz, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t r;
		if (n == cap) {
			if (cap > max) {
				too_large(why, whysz, max);
				goto out;
			}
			cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
			nb = realloc(b, cap + 1);
			if (!nb) {
				snprintf(why, whysz, "out of memory");
				goto out;
			}
			b = nb;
		}
		r = read(fd, b + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			snprintf(why, whysz, "%s", strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		too_large(why, whysz, max);
		goto out;
	}
	b[n] = '\0';
	*text = b;
	*len = n;
	b = NULL;
	rc = 0;
out:
	free(b);
	close(fd);
	return rc;
}
