/*
 * tracedir.h — a run directory as the loader reads it: which files in it
 * are traces and in what order, the files given that must not be opened
 * (FIFOs, devices), the note kept for a file left out, and the
 * "<pid>.exit" line `vramtrace record` writes beside a trace.
 *
 * load.c calls in here while it opens a run; nothing here decodes a trace
 * or calls back into load.c. Statuses are load.h's, with the reason in a
 * caller's buffer (the caller names the path in its error). Single-
 * threaded use per call; no globals.
 */
#ifndef VRT_TRACEDIR_H
#define VRT_TRACEDIR_H

#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* The paths of the *.vtrace files in directory path ("<path>/<name>"), in
 * name order so that a report never depends on readdir order, into a
 * malloc'd *names of *n (free with vrt_tracedir_free). Returns
 * VRT_LOAD_OK with *n > 0; VRT_LOAD_ERR_IO (cannot list it),
 * VRT_LOAD_ERR_NO_TRACES or VRT_LOAD_ERR_NOMEM with why filled and
 * nothing to free. */
enum vrt_load_status vrt_tracedir_list(const char *path, char ***names,
                                       size_t *n, char *why, size_t whysz);

/* Releases a list of vrt_tracedir_list. */
void vrt_tracedir_free(char **names, size_t n);

/* The trace files paths name (a directory's *.vtrace files, 1 for
 * anything else, a directory that cannot be listed included): the
 * progress line's total only, so it never fails. */
uint64_t vrt_tracedir_count(char *const *paths, size_t npaths);

/* 1 when path exists but is not a regular file that could be read (a FIFO
 * named *.vtrace, a device), with why filled as opening it would say; 0
 * for anything else (a regular file, or one stat cannot see: opening it
 * says why). Never opens a FIFO for reading, so it never blocks. */
int vrt_tracedir_irregular(const char *path, char *why, size_t whysz);

/* Adds "<path>: <why>" to t->skipped (files of a run not loaded). -1 when
 * out of memory (t unchanged). */
int vrt_tracedir_skip(struct vrt_trace *t, const char *path, const char *why);

/* Fills pr->exit_kind and pr->exit_code from "<dir of pr->path>/<pid>.exit"
 * ("exit N" or "signal N"); anything else (no such file, not a regular
 * file, not a line of ours) leaves them unknown. */
void vrt_tracedir_read_exit(struct vrt_process *pr);

/* The bytes of the traces the paths name: a regular file's size, a
 * directory's *.vtrace files' sizes (what a load will read; progress). */
uint64_t vrt_tracedir_bytes(char *const *paths, size_t npaths);

/* Without an exit status: sets pr->running when pr->host is this host and
 * pr->pid is a live process with libvramtrace.so mapped (the process is
 * still recording). Call after the header (host and pid) is read. */
void vrt_tracedir_read_running(struct vrt_process *pr);

#endif /* VRT_TRACEDIR_H */
