/*
 * readfile.h — opening and reading the analyzer's input files safely: a
 * path that names a FIFO, a device or a socket is refused without
 * blocking (opening a FIFO for reading waits for a writer; /dev/zero
 * never ends), and a whole-file read is capped at a size the caller
 * chooses. Used by load.c for traces, tracedir.c for the exit files and
 * textfile.c for the small inputs (rules files, config.json, a GGUF's
 * head). Single-threaded use per call; no globals.
 */
#ifndef VRT_READFILE_H
#define VRT_READFILE_H

#include <stddef.h>

/* Rules files and Hugging Face config.json files are kilobytes; this is
 * far above any real one and far below what would exhaust memory. */
#define VRT_READFILE_TEXT_MAX (16u << 20)

/* Opens path read-only (O_CLOEXEC) when it is a regular file (a symlink to
 * one is fine). Returns the fd, or -1 with why filled: the system's
 * reason, or "not a regular file (a FIFO)". Never blocks on a FIFO. */
int vrt_readfile_open(const char *path, char *why, size_t whysz);

/* Reads the regular file at path whole into a NUL-terminated malloc'd
 * *text (*len bytes without the NUL) when it holds at most max bytes.
 * Returns 0, or -1 with why filled ("larger than 16 MiB", "not a regular
 * file (a character device)", "out of memory", the system's reason). */
int vrt_readfile_read(const char *path, size_t max, char **text, size_t *len,
                      char *why, size_t whysz);

#endif /* VRT_READFILE_H */
