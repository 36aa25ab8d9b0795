/*
 * tracedir.c — the files of a run directory (tracedir.h).
 *
 * A run is a directory where each traced process wrote "<pid>.vtrace"
 * (docs/design.md, Trace format); `vramtrace record` adds "<pid>.exit"
 * for the command it started. Only the suffix makes a trace, and names are
 * sorted: readdir order differs between file systems and runs, and the
 * loader breaks timestamp ties by file order, so an unsorted listing
 * could change a report.
 *
 * A path named *.vtrace may still be a FIFO or a device, which would
 * block or never end if read; vrt_tracedir_irregular asks readfile.c,
 * which refuses them without blocking, so the loader can note and skip
 * them. The exit file goes through the same capped reader: 64 bytes are
 * plenty for "signal 9".
 *
 * Single-threaded use per call; no globals.
 */
#include "tracedir.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "readfile.h"
#include "vramtrace/trace_format.h"

static int has_suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), m = strlen(suf);
	return n > m && !strcmp(s + n - m, suf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

enum vrt_load_status vrt_tracedir_list(const char *path, char ***names,
                                       size_t *n, char *why, size_t whysz)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char **v = NULL;
	size_t nv = 0, cap = 0;
	enum vrt_load_status s = VRT_LOAD_OK;

	*names = NULL;
	*n = 0;
	if (!d) {
		snprintf(why, whysz, "%s", strerror(errno));
		return VRT_LOAD_ERR_IO;
	}
	while ((de = readdir(d))) {
		if (!has_suffix(de->d_name, VRT_TRACE_SUFFIX))
			continue;
		if (vrt_array_grow((void **)&v, &cap, nv + 1, sizeof(*v)) ||
		    asprintf(&v[nv], "%s%s%s", path,
		             has_suffix(path, "/") ? "" : "/",
		             de->d_name) < 0) {
			snprintf(why, whysz, "listing");
			s = VRT_LOAD_ERR_NOMEM;
			goto out;
		}
		nv++;
	}
	if (nv == 0) {
		snprintf(why, whysz, "no *%s files in this directory",
		         VRT_TRACE_SUFFIX);
		s = VRT_LOAD_ERR_NO_TRACES;
		goto out;
	}
	qsort(v, nv, sizeof(*v), cmp_str);
	*names = v;
	*n = nv;
	v = NULL;
	nv = 0;
out:
	vrt_tracedir_free(v, nv);
	closedir(d);
	return s;
}

void vrt_tracedir_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

uint64_t vrt_tracedir_count(char *const *paths, size_t npaths)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < npaths; i++) {
		DIR *d = opendir(paths[i]);
		struct dirent *de;
		if (!d) {
			n++;
			continue;
		}
		while ((de = readdir(d)))
			n += has_suffix(de->d_name, VRT_TRACE_SUFFIX);
		closedir(d);
	}
	return n;
}

uint64_t vrt_tracedir_bytes(char *const *paths, size_t npaths)
{
	uint64_t n = 0;
	struct stat st;
	char p[4200];
	size_t i;

	for (i = 0; i < npaths; i++) {
		DIR *d;
		struct dirent *de;
		if (stat(paths[i], &st))
			continue;
		if (S_ISREG(st.st_mode)) {
			n += (uint64_t)st.st_size;
			continue;
		}
		if (!S_ISDIR(st.st_mode) || !(d = opendir(paths[i])))
			continue;
		while ((de = readdir(d)))
			if (has_suffix(de->d_name, VRT_TRACE_SUFFIX) &&
			    (size_t)snprintf(p, sizeof(p), "%s/%s", paths[i],
			                     de->d_name) < sizeof(p) &&
			    !stat(p, &st) && S_ISREG(st.st_mode))
				n += (uint64_t)st.st_size;
		closedir(d);
	}
	return n;
}

int vrt_tracedir_irregular(const char *path, char *why, size_t whysz)
{
	struct stat st;
	int fd;

	if (stat(path, &st) < 0 || S_ISREG(st.st_mode))
		return 0;
	/* The same words and checks as opening it would give. */
	fd = vrt_readfile_open(path, why, whysz);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return 1;
}

int vrt_tracedir_skip(struct vrt_trace *t, const char *path, const char *why)
{
	char *note;

	if (vrt_array_grow((void **)&t->skipped, &t->cap_skipped,
	                   t->nskipped + 1, sizeof(*t->skipped)) ||
	    asprintf(&note, "%s: %s", path, why) < 0)
		return -1;
	t->skipped[t->nskipped++] = note;
	return 0;
}

void vrt_tracedir_read_exit(struct vrt_process *pr)
{
	char path[4200], why[128], *line = NULL;
	const char *slash = strrchr(pr->path, '/');
	int dirlen = slash ? (int)(slash - pr->path) : 1;
	size_t len;
	int code;

	snprintf(path, sizeof(path), "%.*s/%" PRIu64 ".exit", dirlen,
	         slash ? pr->path : ".", pr->pid);
	/* Absent, not a regular file or not a line of ours: the exit
	 * status stays unknown. */
	if (vrt_readfile_read(path, 64, &line, &len, why, sizeof(why)))
		return;
	if (sscanf(line, "exit %d", &code) == 1 && code >= 0) {
		pr->exit_kind = VRT_EXIT_CODE;
		pr->exit_code = code;
	} else if (sscanf(line, "signal %d", &code) == 1 && code > 0) {
		pr->exit_kind = VRT_EXIT_SIGNAL;
		pr->exit_code = code;
	}
	free(line);
}

void vrt_tracedir_read_running(struct vrt_process *pr)
{
	char host[256] = "", path[64], line[4096];
	FILE *f;

	pr->running = 0;
	if (pr->exit_kind != VRT_EXIT_NONE || !pr->host || !pr->pid ||
	    pr->pid > (uint64_t)INT32_MAX ||
	    gethostname(host, sizeof(host) - 1) || strcmp(host, pr->host))
		return;
	/* The pid alone could be another process by now: it must still
	 * have the preload mapped. */
	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/maps", pr->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (!pr->running && fgets(line, sizeof(line), f))
		pr->running = strstr(line, "/libvramtrace") != NULL;
	fclose(f);
}
