/*
 * The tree's metrics endpoint (metrics.c): the other processes of a run,
 * each serving its own numbers on a loopback port named in its
 * "<run dir>/<pid>.metrics", asked over 127.0.0.1 and merged with the
 * serving process's own into one exposition. For the metrics thread only
 * (not thread-safe, never from a hook).
 */
#ifndef VRT_METRICS_AGG_H
#define VRT_METRICS_AGG_H

#include <stddef.h>

/* The pid of another live process of the run whose address file in dir
 * names addr ("HOST:PORT"), or 0. */
int vrt_metrics_agg_owner(const char *dir, const char *addr);

/* own (len bytes: the serving process's exposition) merged with every
 * other process's of the run: one HELP and TYPE per metric family,
 * families in the order first seen, each family's samples together (the
 * text format requires it); lines that are not vramtrace's are dropped.
 * Returns an mmap'd buffer holding *out_len bytes (*cap mapped, for
 * vrt_metrics_agg_free), or NULL when no other process answered or
 * memory is short: the caller serves own alone. Takes at most AGG_MS. */
char *vrt_metrics_agg_collect(const char *dir, const char *own, size_t len,
                              size_t *out_len, size_t *cap);
void vrt_metrics_agg_free(char *buf, size_t cap);

#endif /* VRT_METRICS_AGG_H */
