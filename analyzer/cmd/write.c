/*
 * write.c — writing a command's report (every command's -o): a new path
 * or a regular file is written as FILE.tmp.XXXXXX (0600: a report holds
 * the full command line, like the trace), synced and renamed over FILE,
 * so a reader never sees half a report. An existing FIFO, character or
 * block device or socket is written directly and never replaced or
 * unlinked (`-o /dev/null` must leave /dev/null a device, and a FIFO's
 * reader must get the report); "-" is standard output. Single-threaded;
 * no globals.
 */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* An existing FIFO, device or socket, opened for writing as it is: no
 * O_CREAT, no O_TRUNC, never replaced. A FIFO waits for its reader, as a
 * shell's redirection would. NULL after printing the error. */
static FILE *open_direct(const char *output, const struct stat *st)
{
	int fd;
	FILE *f;

	if (S_ISSOCK(st->st_mode)) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		if (strlen(output) >= sizeof(a.sun_path)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot write: socket "
			        "path too long\n",
			        output);
			return NULL;
		}
		memcpy(a.sun_path, output, strlen(output) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			int e = errno;
			close(fd);
			fd = -1;
			errno = e;
		}
	} else {
		fd = open(output, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	}
	if (fd < 0) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		close(fd);
	}
	return f;
}

/* FILE.tmp.XXXXXX, created 0600 with O_EXCL: a stale one from a crash
 * never blocks the next write, and nobody else's file is reused. */
static FILE *open_tmp(const char *output, char **tmp)
{
	int fd;
	FILE *f;

	if (asprintf(tmp, "%s.tmp.XXXXXX", output) < 0) {
		*tmp = NULL;
		fprintf(stderr, "vramtrace: error: %s: out of memory\n",
		        output);
		return NULL;
	}
	fd = mkostemp(*tmp, O_CLOEXEC);
	if (fd < 0) {
		/* Name what the user gave (and its directory when that is
		 * what is missing), not the temporary file. */
		int e = errno;
		char *slash = strrchr(output, '/');
		if (e == ENOENT || e == ENOTDIR)
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %.*s %s\n",
			        output,
			        slash ? (int)(slash - output + (slash == output))
			              : 1,
			        slash ? output : ".",
			        e == ENOENT ? "does not exist"
			                    : "is not a directory");
		else
			fprintf(stderr,
			        "vramtrace: error: %s: cannot create: %s\n",
			        output, strerror(e));
		free(*tmp);
		*tmp = NULL;
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		fprintf(stderr, "vramtrace: error: %s: cannot create: %s\n",
		        *tmp, strerror(errno));
		close(fd);
		unlink(*tmp);
		free(*tmp);
		*tmp = NULL;
	}
	return f;
}

int vrt_cmd_write(const char *output, int (*fn)(FILE *f, const void *ctx),
                  const void *ctx)
{
	FILE *f = stdout;
	char *tmp = NULL;
	const char *name = "stdout";
	int rc = VRT_EXIT_FAIL, saved, direct = 0;
	struct stat st;

	if (output && !strcmp(output, "-"))
		output = NULL;
	if (output) {
		name = output;
		direct = stat(output, &st) == 0 && !S_ISREG(st.st_mode);
		if (direct && S_ISDIR(st.st_mode)) {
			fprintf(stderr,
			        "vramtrace: error: %s: cannot write: is a "
			        "directory\n",
			        output);
			return VRT_EXIT_FAIL;
		}
		f = direct ? open_direct(output, &st) : open_tmp(output, &tmp);
		if (!f)
			return VRT_EXIT_FAIL;
		if (tmp)
			name = tmp;
	}
	if (fn(f, ctx)) {
		fprintf(stderr, "vramtrace: error: %s: out of memory\n", name);
		goto out;
	}
	if (fflush(f) || ferror(f)) {
		saved = errno;
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        name, strerror(saved));
		goto out;
	}
	if (!tmp) {
		/* stdout, or a device, FIFO or socket written in place: no
		 * sync (they have nothing to sync), no rename. */
		rc = VRT_EXIT_OK;
		goto out;
	}
	if (fsync(fileno(f))) {
		fprintf(stderr, "vramtrace: error: %s: cannot sync: %s\n", tmp,
		        strerror(errno));
		goto out;
	}
	saved = fclose(f);
	f = NULL;
	if (saved || rename(tmp, output)) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        output, strerror(errno));
		goto out;
	}
	rc = VRT_EXIT_OK;
out:
	if (output && f && fclose(f) && !rc) {
		fprintf(stderr, "vramtrace: error: %s: cannot write: %s\n",
		        name, strerror(errno));
		rc = VRT_EXIT_FAIL;
	}
	if (tmp && rc)
		unlink(tmp); /* best effort: a stale .tmp is harmless */
	free(tmp);
	return rc;
}
