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
 * It also holds what both runtimes' wrappers record, behind a small
 * vendor ops struct each runtime fills (hook.h: current device, free/total,
 * device count, name/total/uuid of a device, device of a pointer): the
 * inventory of devices, the events of a success, a failure with the
 * runtime's free/total and the sync that keeps it on disk, and standby's
 * deferral of the device of an allocation on the current device (asked
 * of its address only when the live table is read, never per call). The
 * wrappers' bodies are hook.h's VRT_HOOK_* macros around these.
 *
 * Every hook file looks real functions up with libc's dlsym, the first
 * entry of the real-libc table (real.h: vrt_real.dlsym): set once (the
 * constructor, or the first look-up if another library's constructor runs
 * before ours) and only ever to the same value, so a racy double
 * initialisation is harmless.
 *
 * Threads: any. The library's path and base are published once (CAS);
 * real and auxiliary pointers are atomics; a runtime's inventory is taken
 * once under a CAS flag (retried at a few later calls when the count
 * fails).
 */
#include "hook.h"
#include "live.h"
#include "real.h"
#include "session.h"
#include "standby.h"

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <string.h>

void vrt_hooklib_init(void)
{
	vrt_real_init_dlsym();
}

void *vrt_hooklib_real_dlsym(void *handle, const char *name)
{
	return vrt_real_dlsym(handle, name);
}

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
	vrt_hooklib_init();
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

void *vrt_hooklib_aux(struct vrt_hooklib *l, _Atomic(void *) *slot,
                      const char *name)
{
	void *p = atomic_load_explicit(slot, memory_order_relaxed);
	if (VRT_LIKELY(p != NULL))
		return p;
	p = vrt_hooklib_sym(l, name);
	if (p)
		atomic_store(slot, p);
	return p;
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
	                 ev->rec != VRT_REC_NET && ev->rec != VRT_REC_PREFREE
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

/* ---- vendor ops: what both runtimes' wrappers record ------------------- */

#define INVENTORY_MAX 64

/* The inventory itself, out of line: its device array stays off the
 * stack frame of every call that finds it taken. s: the state seen. */
__attribute__((noinline)) static void take_inventory(struct vrt_hook_vendor *v,
                                                     int s)
{
	if (!atomic_compare_exchange_strong(&v->inventory, &s, 1))
		return;
	int n = 0;
	if (!v->count(&n) || n <= 0) {
		/* Try again at a later call, a few times at most. */
		atomic_store(&v->inventory, s == 0 ? 2 : s + 1);
		return;
	}
	struct vrt_device_info devs[INVENTORY_MAX];
	if (n > INVENTORY_MAX)
		n = INVENTORY_MAX;
	memset(devs, 0, sizeof(devs));
	for (int i = 0; i < n; i++) {
		struct vrt_device_info *d = &devs[i];
		d->vendor = v->vendor;
		d->ordinal = i;
		v->name(i, d->name, (int)sizeof(d->name) - 1);
		size_t bytes = 0;
		if (v->total(i, &bytes))
			d->total_bytes = bytes;
		d->have_uuid = v->uuid(i, d->uuid);
	}
	vrt_writer_devices(devs, n);
}

void vrt_hook_inventory(struct vrt_hook_vendor *v)
{
	int s = atomic_load_explicit(&v->inventory, memory_order_relaxed);
	if (VRT_UNLIKELY(s != 1) && s <= 4)
		take_inventory(v, s);
}

static void alloc_event(int api, int dev, uint64_t addr, uint64_t size,
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

void vrt_hook_alloc(struct vrt_hook_vendor *v, int api, int dev, uint64_t addr,
                    uint64_t size, uint64_t aux)
{
	vrt_hook_inventory(v);
	alloc_event(api, dev, addr, size, aux);
}

/* The device each thread was last seen on, per vendor, plus one (0:
 * not asked yet, -1: asked, none): the fallback of an allocation whose
 * device standby asks for later, should the runtime not be able to say
 * then. */
static VRT_TLS int thread_device[3];

static int current_device(struct vrt_hook_vendor *v)
{
	int d = v->current_device();
	if (v->vendor > 0 && v->vendor < 3)
		thread_device[v->vendor] = d >= 0 ? d + 1 : -1;
	return d;
}

/* Standby: the device kept for later, with the thread's device as the
 * fallback when it is known without asking (the thread recorded before,
 * or the metrics asked): standby makes no runtime call of its own. */
static int device_later(struct vrt_hook_vendor *v)
{
	int t = v->vendor > 0 && v->vendor < 3 ? v->vendor : 0;
	int d = t && thread_device[t] > 0 ? thread_device[t] - 1 : -1;
	return d >= 0 ? VRT_LIVE_DEVICE_LATER_ON(d) : VRT_LIVE_DEVICE_LATER;
}

void vrt_hook_alloc_cur(struct vrt_hook_vendor *v, int api, uint64_t addr,
                        uint64_t size, uint64_t aux)
{
	vrt_hook_inventory(v);
	if (!vrt_capture_on()) {
		/* Standby: no runtime call unless the metrics' peak per
		 * device needs the device now (live.h); a stack only for the
		 * large allocations, where the budgets are. */
		int keep = VRT_UNLIKELY(vrt_standby_keeps_stack(size));
		int d = vrt_live_tracking_peaks() ? current_device(v) : -1;
		vrt_live_alloc(api, d >= 0 ? d : device_later(v), addr, size,
		               keep ? vrt_stack_capture() : 0,
		               vrt_phase_current());
		return;
	}
	alloc_event(api, current_device(v), addr, size, aux);
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

void vrt_hook_map(int rec, int api, uint64_t addr, uint64_t size,
                  uint64_t offset, uint64_t handle)
{
	struct vrt_ev ev = {.rec = (uint8_t)rec,
	                    .api = (uint8_t)api,
	                    .device = VRT_DEVICE_UNKNOWN,
	                    .addr = addr,
	                    .size = size,
	                    .offset = offset,
	                    .handle = handle};
	vrt_hook_record(&ev);
}

void vrt_hook_meminfo(struct vrt_hook_vendor *v, int api, uint64_t free_b,
                      uint64_t total_b)
{
	vrt_hook_inventory(v);
	struct vrt_ev ev = {.rec = VRT_REC_MEMINFO,
	                    .api = (uint8_t)api,
	                    .device = v->current_device(),
	                    .free_bytes = free_b,
	                    .total_bytes = total_b};
	vrt_hook_record(&ev);
}

void vrt_hook_fail(struct vrt_hook_vendor *v, int api, int dev, uint64_t addr,
                   uint64_t size, uint64_t aux, uint32_t error)
{
	struct vrt_ev ev = {.rec = VRT_REC_FAIL,
	                    .api = (uint8_t)api,
	                    .device = dev,
	                    .addr = addr,
	                    .size = size,
	                    .aux = aux,
	                    .error = error};
	int allocating = vrt_api_op((unsigned)api) == VRT_OP_ALLOC;
	/* A process whose first call fails still names every device. */
	vrt_hook_inventory(v);
	/* The free/total probe speaks of the current device only. */
	int cur = allocating && dev >= 0 ? v->current_device()
	                                 : VRT_DEVICE_UNKNOWN;
	/* Out of memory (CUDA and HIP both say 2) in standby: recorded
	 * anyway, with what led to it (standby.h). */
	int once = allocating && error == 2 &&
	           atomic_load(&vrt_state) == VRT_STATE_STANDBY &&
	           vrt_session_record_start() == 0;
	size_t free_b, total_b;
	if (allocating && dev >= 0 && dev == cur &&
	    v->mem_info(&free_b, &total_b)) {
		ev.have_info = 1;
		ev.free_bytes = free_b;
		ev.total_bytes = total_b;
		/* What other threads had allocated when the driver answered
		 * is recorded before this failure (vrt_tbuf_call): their calls
		 * in progress are waited for, 100 ms at most (a thread the
		 * scheduler left off a busy machine's cores for a while). */
		vrt_tbuf_wait_calls(100000000);
	}
	vrt_hook_record(&ev);
	if (allocating && vrt_capture_on())
		vrt_writer_sync(1000);
	if (once)
		vrt_session_record_stop();
}
