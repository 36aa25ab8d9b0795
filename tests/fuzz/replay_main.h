/*
 * The corpus replay of a fuzz target (built with VRT_FUZZ_REPLAY): each
 * argument is a file, or a directory whose files are all run, in name
 * order so a failure is reproducible, once through
 * LLVMFuzzerTestOneInput. Files are read up to VRT_FUZZ_REPLAY_MAX bytes.
 * Included once by each target; single-threaded.
 */
#ifndef VRT_FUZZ_REPLAY_MAIN_H
#define VRT_FUZZ_REPLAY_MAIN_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define VRT_FUZZ_REPLAY_MAX (1 << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *name, const char *path)
{
	static uint8_t buf[VRT_FUZZ_REPLAY_MAX];
	FILE *f = fopen(path, "rb");

	if (!f) {
		fprintf(stderr, "%s: %s: cannot open\n", name, path);
		return 1;
	}
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	return 0;
}

static int replay_main(const char *name, int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			struct dirent **ents;
			int n = scandir(argv[i], &ents, NULL, alphasort);
			if (n < 0) {
				fprintf(stderr, "%s: %s: cannot list\n", name,
				        argv[i]);
				return 1;
			}
			for (int j = 0; j < n; j++) {
				char path[4096];
				if (ents[j]->d_name[0] != '.') {
					snprintf(path, sizeof(path), "%s/%s",
					         argv[i], ents[j]->d_name);
					rc |= replay_file(name, path);
				}
				free(ents[j]);
			}
			free(ents);
		} else {
			rc |= replay_file(name, argv[i]);
		}
	}
	return rc;
}

#endif /* VRT_FUZZ_REPLAY_MAIN_H */
