/*
 * load_shim.c — TRANSITIONAL: the streaming interface of load.h
 * (vrt_load_open, vrt_load_open_buffer, vrt_load_next) over the whole-trace
 * loader (vrt_load_paths; vrt_load_buffer + vrt_load_finish). Everything is
 * loaded and ordered at open, then handed out in order; devices are in
 * their final order from the start (device_remap stays NULL). It notes the
 * replay's progress (events handed out of events loaded), as the streaming
 * loader notes its reading. Goes away once load.c streams. Single-threaded.
 */
#include "load.h"

#include <stdio.h>
#include <string.h>

#include "progress.h"

enum vrt_load_status vrt_load_open(struct vrt_trace *t, char *const *paths,
                                   size_t npaths, struct vrt_load_error *err)
{
	enum vrt_load_status st = vrt_load_paths(t, paths, npaths, err);

	t->events_total = 0;
	t->device_remap = NULL;
	return st;
}

enum vrt_load_status vrt_load_open_buffer(struct vrt_trace *t,
                                          const char *name,
                                          const uint8_t *buf, size_t len,
                                          struct vrt_load_error *err)
{
	enum vrt_load_status st = vrt_load_buffer(t, name, buf, len, err);

	t->events_total = 0;
	t->device_remap = NULL;
	if (st != VRT_LOAD_OK)
		return st;
	st = vrt_load_finish(t);
	if (st != VRT_LOAD_OK) {
		err->status = st;
		snprintf(err->path, sizeof(err->path), "%s", name);
		snprintf(err->msg, sizeof(err->msg), "%s: %s", name,
		         vrt_load_status_name(st));
	}
	return st;
}

enum vrt_load_status vrt_load_next(struct vrt_trace *t, struct vrt_event *out,
                                   size_t max, size_t *n,
                                   struct vrt_load_error *err)
{
	size_t k = t->nev > t->events_total ? t->nev - t->events_total : 0;

	(void)err;
	if (k > max)
		k = max;
	if (k)
		memcpy(out, t->ev + t->events_total, k * sizeof(*out));
	t->events_total += k;
	*n = k;
	if ((t->events_total & ~(uint64_t)0xffff) !=
	    ((t->events_total - k) & ~(uint64_t)0xffff))
		vrt_progress_note(t->progress, VRT_PROGRESS_REPLAY,
		                  t->events_total, t->nev, 0);
	return VRT_LOAD_OK;
}
