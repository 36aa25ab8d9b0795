/*
 * textfile.c — small input files read whole or by their head (textfile.h).
 *
 * A rules file or a config.json is kilobytes: it is read whole, capped at
 * VRT_READFILE_TEXT_MAX so that a wrong path (a log, an image) fails with
 * a reason instead of filling memory. A model file may be a GGUF of many
 * GiB whose metadata comes first, so its reader takes only a head of the
 * size the caller asks and says whether the file goes on: one byte past
 * the head is read for that, since a pipe or a file still growing has no
 * reliable size.
 *
 * Single-threaded use per call; no globals.
 */
#include "textfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "readfile.h"

/* read(2) until n bytes, the end of the file or an error: what was read
 * into *got. 0, or -1 with errno set. */
static int read_upto(int fd, uint8_t *b, size_t n, size_t *got)
{
	ssize_t r;

	*got = 0;
	while (*got < n) {
		r = read(fd, b + *got, n - *got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			break;
		*got += (size_t)r;
	}
	return 0;
}

enum vrt_load_status vrt_textfile_read(const char *path, char **text,
                                       size_t *len,
                                       struct vrt_load_error *err)
{
	char why[128];

	if (vrt_readfile_read(path, VRT_READFILE_TEXT_MAX, text, len, why,
	                      sizeof(why)))
		return vrt_load_fail(err,
		                     strcmp(why, "out of memory")
		                             ? VRT_LOAD_ERR_IO
		                             : VRT_LOAD_ERR_NOMEM,
		                     path, "%s", why);
	return VRT_LOAD_OK;
}

enum vrt_load_status vrt_textfile_head(const char *path, size_t max,
                                       uint8_t **buf, size_t *len, int *more,
                                       struct vrt_load_error *err)
{
	char why[128];
	int fd = vrt_readfile_open(path, why, sizeof(why));
	uint8_t *b = NULL, probe;
	size_t n = 0, got = 0;
	enum vrt_load_status s = VRT_LOAD_OK;

	*more = 0;
	if (fd < 0)
		return vrt_load_fail(err, VRT_LOAD_ERR_IO, path, "%s", why);
	b = malloc(max + 1);
	if (!b) {
		s = vrt_load_fail(err, VRT_LOAD_ERR_NOMEM, path,
		                  "buffer of %zu bytes", max + 1);
		goto out;
	}
	/* One byte more says whether the file goes on (a pipe or a file
	 * still growing has no reliable size). */
	if (read_upto(fd, b, max, &n) ||
	    (n == max && read_upto(fd, &probe, 1, &got))) {
		s = vrt_load_fail(err, VRT_LOAD_ERR_IO, path, "%s",
		                  strerror(errno));
		goto out;
	}
	*more = got > 0;
out:
	close(fd);
	if (s) {
		free(b);
		return s;
	}
	b[n] = 0;
	*buf = b;
	*len = n;
	return VRT_LOAD_OK;
}
