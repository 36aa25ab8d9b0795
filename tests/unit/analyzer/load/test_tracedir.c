/*
 * Unit tests of tracedir.c and textfile.c on files made in a temporary
 * directory: a run's *.vtrace files listed in name order (other files
 * ignored), an empty or missing directory, the count for the progress
 * line, a FIFO named *.vtrace told apart without blocking, the skipped
 * note, each "<pid>.exit" form; and the small-file readers' text, head,
 * "goes on" flag and errors in the loader's words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../tap.h"
#include "load/textfile.h"
#include "load/tracedir.h"

static char dir[64];

static void put(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static int exit_of(const char *line, int *code)
{
	struct vrt_process pr;
	char path[256];

	put("77.exit", line);
	memset(&pr, 0, sizeof(pr));
	snprintf(path, sizeof(path), "%s/77.vtrace", dir);
	pr.path = path;
	pr.pid = 77;
	vrt_tracedir_read_exit(&pr);
	*code = pr.exit_code;
	return pr.exit_kind;
}

static void listing(void)
{
	char **names, why[128], path[256], *paths[2];
	struct vrt_trace t;
	size_t n;
	int code;

	EQ(vrt_tracedir_list(dir, &names, &n, why, sizeof(why)),
	   VRT_LOAD_ERR_NO_TRACES, "no traces yet");
	ok(strstr(why, "no *.vtrace files") != NULL, "why: %s", why);
	put("20.vtrace", "x");
	put("100.vtrace", "x");
	put("output.log", "x");
	put(".vtrace", "x");
	EQ(vrt_tracedir_list(dir, &names, &n, why, sizeof(why)), VRT_LOAD_OK,
	   "list");
	EQ(n, 2, "only *.vtrace, not a bare suffix");
	snprintf(path, sizeof(path), "%s/100.vtrace", dir);
	ok(n == 2 && !strcmp(names[0], path), "name order: %s",
	   n ? names[0] : "");
	vrt_tracedir_free(names, n);
	EQ(vrt_tracedir_list("/nonexistent-vramtrace-dir", &names, &n, why,
	                     sizeof(why)),
	   VRT_LOAD_ERR_IO, "a missing directory");

	paths[0] = dir;
	paths[1] = path;
	EQ(vrt_tracedir_count(paths, 2), 3, "two traces and one file");

	ok(!vrt_tracedir_irregular(path, why, sizeof(why)),
	   "a regular file is not skipped");
	snprintf(path, sizeof(path), "%s/fifo.vtrace", dir);
	ok(mkfifo(path, 0600) == 0, "mkfifo");
	ok(vrt_tracedir_irregular(path, why, sizeof(why)) &&
	           strstr(why, "FIFO") != NULL,
	   "a FIFO is skipped: %s", why);
	memset(&t, 0, sizeof(t));
	ok(!vrt_tracedir_skip(&t, path, why) && t.nskipped == 1 &&
	           strstr(t.skipped[0], "fifo.vtrace: not a regular file"),
	   "note: %s", t.nskipped ? t.skipped[0] : "");
	vrt_load_free(&t);
	unlink(path);

	EQ(exit_of("exit 3\n", &code), VRT_EXIT_CODE, "exit N");
	EQ(code, 3, "its code");
	EQ(exit_of("signal 9\n", &code), VRT_EXIT_SIGNAL, "signal N");
	EQ(code, 9, "its signal");
	EQ(exit_of("done\n", &code), VRT_EXIT_NONE, "not a line of ours");
	EQ(exit_of("signal 0\n", &code), VRT_EXIT_NONE, "no signal 0");
}

static void textfiles(void)
{
	struct vrt_load_error err;
	char path[256], *text = NULL;
	uint8_t *head = NULL;
	size_t len = 0;
	int more = -1;

	put("rules", "phase weights: load_weights\n");
	snprintf(path, sizeof(path), "%s/rules", dir);
	ok(vrt_textfile_read(path, &text, &len, &err) == VRT_LOAD_OK &&
	           len == 28 && !strcmp(text, "phase weights: load_weights\n"),
	   "whole text");
	free(text);
	ok(vrt_textfile_head(path, 5, &head, &len, &more, &err) ==
	                   VRT_LOAD_OK &&
	           len == 5 && more == 1 && !strcmp((char *)head, "phase"),
	   "head of 5, more");
	free(head);
	ok(vrt_textfile_head(path, 64, &head, &len, &more, &err) ==
	                   VRT_LOAD_OK &&
	           len == 28 && more == 0,
	   "head past the end, no more");
	free(head);
	snprintf(path, sizeof(path), "%s/missing", dir);
	memset(&err, 0, sizeof(err));
	EQ(vrt_textfile_read(path, &text, &len, &err), VRT_LOAD_ERR_IO,
	   "missing file");
	ok(!strcmp(err.path, path) &&
	           !strncmp(err.msg, "cannot read: ", 13),
	   "in the loader's words: %s", err.msg);
	snprintf(path, sizeof(path), "%s/fifo", dir);
	mkfifo(path, 0600);
	EQ(vrt_textfile_head(path, 8, &head, &len, &more, &err),
	   VRT_LOAD_ERR_IO, "a FIFO is refused, not waited on");
	unlink(path);
}

int main(void)
{
	static const char *const made[] = {"20.vtrace", "100.vtrace",
	                                   "output.log", ".vtrace",
	                                   "77.exit", "rules"};
	char path[256];

	snprintf(dir, sizeof(dir), "%s", "/tmp/vrt-tracedir-XXXXXX");
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	listing();
	textfiles();
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, made[i]);
		unlink(path);
	}
	if (rmdir(dir) != 0)
		printf("# could not remove %s\n", dir);
	printf("1..%d\n", ntests);
	return nfailed != 0;
}
