/*
 * hook_lib.c — what the CUDA and HIP interposition layers share: knowing
 * a runtime library when dlsym answers from it, finding the runtime's own
 * definition of a name, and keeping the real function behind each wrapper.
 *
 * A real pointer is set once per hook and only ever confirmed with the same
 * value: if a resolver later answers a hooked name with another function,
 * that answer passes through unwrapped rather than risk calling the wrong
 * variant (per-thread-stream versions and the like).
 *
 * Threads: any. The library's path and base are published once (CAS);
 * real pointers are atomics.
 */
#include "hook.h"
#include "live.h"
#include "standby.h"

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <string.h>

int vrt_hooklib_owns(struct vrt_hooklib *l, void *addr)
{
	Dl_info info;
	if (!dladdr(addr, &info) || !info.dli_fname)
		return 0;
	void *base = atomic_load(&l->base);
	if (base)
		return info.dli_fbase == base;
	const char *slash = strrchr(info.dli_fname, '/');
	const char *file = slash ? slash + 1 : info.dli_fname;
	if (strncmp(file, l->file_prefix, strlen(l->file_prefix)) != 0)
		return 0;
	int zero = 0;
	if (atomic_compare_exchange_strong(&l->path_set, &zero, 1)) {
		strncpy(l->path, info.dli_fname, sizeof(l->path) - 1);
		atomic_store(&l->base, info.dli_fbase);
	}
	return 1;
}

static void *handle_sym(const char *path, const char *name)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NULL;
	void *p = vrt_real_dlsym(h, name);
	dlclose(h); /* NOLOAD took a reference; give it back */
	return p;
}

void *vrt_hooklib_sym(struct vrt_hooklib *l, const char *name)
{
	vrt_hook_libc_init();
	if (!vrt_real_dlsym)
		return NULL;
	void *p = vrt_real_dlsym(RTLD_NEXT, name);
	if (p)
		return p;
	/* RTLD_NEXT misses a library loaded RTLD_LOCAL (cudart, ctypes,
	 * plugins); its own handle searches only it and its dependencies. */
	if (atomic_load(&l->path_set) && (p = handle_sym(l->path, name)))
		return p;
	for (const char *const *so = l->sonames; *so; so++)
		if ((p = handle_sym(*so, name)))
			return p;
	return NULL;
}

void *vrt_hooklib_real_slow(struct vrt_hooklib *l, int idx)
{
	void *p = vrt_hooklib_sym(l, l->hooks[idx].name);
	if (!p || p == l->hooks[idx].wrapper)
		return NULL;
	void *expected = NULL;
	atomic_compare_exchange_strong(&l->real[idx], &expected, p);
	return atomic_load(&l->real[idx]);
}

void *vrt_hooklib_substitute(struct vrt_hooklib *l, int idx, void *real)
{
	if (real == l->hooks[idx].wrapper)
		return real;
	void *expected = NULL;
	if (atomic_compare_exchange_strong(&l->real[idx], &expected, real) ||
	    expected == real)
		return l->hooks[idx].wrapper;
	return real;
}

int vrt_hooklib_find(const struct vrt_hooklib *l, const char *symbol)
{
	for (int i = 0; i < l->count; i++)
		if (!strcmp(l->hooks[i].name, symbol))
			return i;
	return -1;
}

void *vrt_hooklib_dlsym(struct vrt_hooklib *l, const char *symbol, void *addr)
{
	int idx = vrt_hooklib_find(l, symbol);
	if (idx < 0 || !vrt_hooklib_owns(l, addr))
		return addr;
	return vrt_hooklib_substitute(l, idx, addr);
}

void vrt_hook_record(struct vrt_ev *ev)
{
	int on = vrt_capture_on();
	if (on ? ev->rec != VRT_REC_FREE && ev->rec != VRT_REC_UNMAP &&
	                 ev->rec != VRT_REC_NET
	       : ev->rec == VRT_REC_ALLOC && vrt_standby_keeps_stack(ev->size))
		ev->stack = vrt_stack_capture();
	if (ev->rec != VRT_REC_MEMINFO && ev->rec != VRT_REC_NET)
		ev->phase = vrt_phase_current();
	vrt_live_event(ev);
	if (on)
		vrt_tbuf_event(ev);
	else
		vrt_standby_keep(ev);
}

void vrt_hook_alloc(int api, int dev, uint64_t addr, uint64_t size,
                    uint64_t aux)
{
	struct vrt_ev ev = {.rec = VRT_REC_ALLOC,
	                    .api = (uint8_t)api,
	                    .device = dev,
	                    .addr = addr,
	                    .size = size,
	                    .aux = aux};
	vrt_hook_record(&ev);
}

void vrt_hook_alloc_cur(int api, int (*cur_dev)(void), uint64_t addr,
                        uint64_t size, uint64_t aux)
{
	if (!vrt_capture_on()) {
		/* Standby: no driver call unless the metrics' peak per
		 * device needs the device now (live.h); a stack only for
		 * the large allocations, where the budgets are. */
		vrt_live_alloc(api,
		               vrt_live_tracking_peaks()
		                       ? cur_dev()
		                       : VRT_LIVE_DEVICE_LATER,
		               addr, size,
		               VRT_UNLIKELY(vrt_standby_keeps_stack(size))
		                       ? vrt_stack_capture()
		                       : 0,
		               vrt_phase_current());
		return;
	}
	vrt_hook_alloc(api, cur_dev(), addr, size, aux);
}

void vrt_hook_free(int api, int dev, uint64_t addr, uint64_t aux)
{
	if (!vrt_capture_on()) { /* standby: the table only */
		vrt_live_free(api, addr);
		return;
	}
	struct vrt_ev ev = {.rec = VRT_REC_FREE,
	                    .api = (uint8_t)api,
	                    .device = dev,
	                    .addr = addr,
	                    .aux = aux};
	vrt_hook_record(&ev);
}

void vrt_hook_fail(int api, int dev, uint64_t addr, uint64_t size,
                   uint64_t aux, uint32_t error, int cur_dev,
                   int (*mem_info)(uint64_t *free_b, uint64_t *total_b))
{
	struct vrt_ev ev = {.rec = VRT_REC_FAIL,
	                    .api = (uint8_t)api,
	                    .device = dev,
	                    .addr = addr,
	                    .size = size,
	                    .aux = aux,
	                    .error = error};
	int allocating = vrt_api_op((unsigned)api) == VRT_OP_ALLOC;
	/* Out of memory (CUDA and HIP both say 2) in standby: recorded
	 * anyway, with what led to it (standby.h). */
	int once = allocating && error == 2 &&
	           atomic_load(&vrt_state) == VRT_STATE_STANDBY &&
	           vrt_entry_record_start() == 0;
	if (allocating && dev >= 0 && dev == cur_dev && mem_info)
		ev.have_info =
		        (uint8_t)mem_info(&ev.free_bytes, &ev.total_bytes);
	vrt_hook_record(&ev);
	if (allocating && vrt_capture_on())
		vrt_writer_sync(1000);
	if (once)
		vrt_entry_record_stop();
}
