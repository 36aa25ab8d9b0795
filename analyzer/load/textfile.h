/*
 * textfile.h — the analyzer's small input files other than traces: a
 * rules file (`--rules`), a model's config.json or the head of a GGUF
 * (`--model-config`). Read through readfile.h, so a FIFO or a device
 * given as one is refused without blocking, with errors in the loader's
 * words (load.h: status, path, "<status name>: <reason>"), so a command
 * reports a bad rules file as it reports a bad trace. Single-threaded use
 * per call; no globals.
 */
#ifndef VRT_TEXTFILE_H
#define VRT_TEXTFILE_H

#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* Reads a whole small text file into a NUL-terminated malloc'd *text
 * (*len bytes without the NUL): a regular file of at most
 * VRT_READFILE_TEXT_MAX bytes (readfile.h). VRT_LOAD_OK, or
 * VRT_LOAD_ERR_IO / VRT_LOAD_ERR_NOMEM with err filled. */
enum vrt_load_status vrt_textfile_read(const char *path, char **text,
                                       size_t *len,
                                       struct vrt_load_error *err);

/* Reads at most max bytes from the start of the file at path into a
 * malloc'd *buf (NUL-terminated, so a small text file reads as text);
 * *more: 1 when the file goes on past them. Same convention. */
enum vrt_load_status vrt_textfile_head(const char *path, size_t max,
                                       uint8_t **buf, size_t *len, int *more,
                                       struct vrt_load_error *err);

#endif /* VRT_TEXTFILE_H */
