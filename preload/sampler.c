/*
 * sampler.c — what the allocation calls cannot tell: how full the device
 * is for everybody (other processes included) and how much host memory is
 * left. A thread ("vramtrace-smp", all signals blocked) wakes every
 * VRAMTRACE_SAMPLE_MS and records
 *
 *   HOST:   this process's RSS (/proc/self/statm) and the machine's
 *           MemAvailable, SwapTotal, SwapFree (/proc/meminfo);
 *   DEVICE: for each device of this process that NVML also lists
 *           (matched by uuid, since NVML numbers devices physically while
 *           CUDA_VISIBLE_DEVICES renumbers them for the process), the
 *           device's used/total bytes and the processes on it with their
 *           bytes.
 *
 * NVML (libnvidia-ml.so.1) is opened RTLD_LOCAL by this thread, never
 * from a hook; without it (or with VRAMTRACE_NVML=0) only HOST samples
 * are taken. Samples are chunk events of this thread's own buffer.
 *
 * In standby the thread goes on sampling and keeps its readings (the
 * first few and a ring of the latest) for the snapshot that starts the
 * next recording, which writes them as PAST records.
 *
 * Locks: s_mu/s_cv only to stop the thread; kept_mu over the kept
 * readings; the thread owns the rest.
 */
#include "clock.h"
#include "core.h"
#include "real.h"

#include <vramtrace/trace_format.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEVICES 64
#define MAX_PROCS   64

typedef int nvml_ret;
typedef struct nvml_dev *nvml_device;
struct nvml_memory {
	unsigned long long total, free, used;
};
struct nvml_process {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};

static struct {
	void *lib;
	nvml_ret (*init)(void);
	nvml_ret (*count)(unsigned int *);
	nvml_ret (*handle)(unsigned int, nvml_device *);
	nvml_ret (*uuid)(nvml_device, char *, unsigned int);
	nvml_ret (*memory)(nvml_device, struct nvml_memory *);
	nvml_ret (*procs)(nvml_device, unsigned int *, struct nvml_process *);
} nvml;

static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
/* Held by the sampler thread while it is inside NVML, and by fork's
 * prepare handler: a child must never inherit NVML's own locks taken by
 * a thread that does not exist there (its sampler would wait forever). */
static pthread_mutex_t nvml_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cv;
static pthread_t thread;
static int running, stopping, exited, interval;
static int want_nvml;

/* ---- host --------------------------------------------------------------- */

/* Through fds.c: the program may close every fd while we read. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
	struct vrt_fd fd = vrt_fds_open(path, O_RDONLY, 0);
	if (fd.fd < 0)
		return -1;
	ssize_t n, got = 0;
	while ((size_t)got < len - 1 &&
	       (n = vrt_fds_read(fd, buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	vrt_fds_close(&fd);
	buf[got > 0 ? got : 0] = 0;
	return got;
}

/* A "Name:   123 kB" line of /proc/meminfo, in bytes (0 if absent). */
static uint64_t meminfo_field(const char *text, const char *name)
{
	const char *p = strstr(text, name);
	if (!p)
		return 0;
	return strtoull(p + strlen(name), NULL, 10) * 1024;
}

/* Readings taken in standby, for the snapshot that starts a recording:
 * the first KEPT_FIRST of the image, then a ring of the latest. kept_mu
 * (the sampler thread stores, vrt_sampler_kept takes). */
#define KEPT_FIRST 4
#define KEPT_BLOB  512
struct kept_sample {
	uint64_t at;
	uint32_t len;
	uint8_t blob[KEPT_BLOB];
};
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct kept_sample kept_first[KEPT_FIRST], kept_ring[VRT_SAMPLER_KEPT];
static unsigned nkept_first, kept_next, nkept_ring, first_done;

static void keep(const uint8_t *blob, size_t len)
{
	if (len > KEPT_BLOB)
		return; /* a device with very many processes: not kept */
	pthread_mutex_lock(&kept_mu);
	struct kept_sample *k;
	if (!first_done && nkept_first < KEPT_FIRST) {
		k = &kept_first[nkept_first++];
	} else {
		first_done = 1;
		k = &kept_ring[kept_next];
		kept_next = (kept_next + 1) % VRT_SAMPLER_KEPT;
		if (nkept_ring < VRT_SAMPLER_KEPT)
			nkept_ring++;
	}
	k->at = vrt_clock_now();
	k->len = (uint32_t)len;
	memcpy(k->blob, blob, len);
	pthread_mutex_unlock(&kept_mu);
}

void vrt_sampler_kept(void (*fn)(uint64_t at, const uint8_t *blob, size_t len,
                                 void *arg),
                      void *arg)
{
	pthread_mutex_lock(&kept_mu);
	for (unsigned i = 0; i < nkept_first; i++)
		fn(kept_first[i].at, kept_first[i].blob, kept_first[i].len,
		   arg);
	unsigned start = (kept_next + VRT_SAMPLER_KEPT - nkept_ring) %
	                 VRT_SAMPLER_KEPT;
	for (unsigned i = 0; i < nkept_ring; i++) {
		const struct kept_sample *k =
		        &kept_ring[(start + i) % VRT_SAMPLER_KEPT];
		fn(k->at, k->blob, k->len, arg);
	}
	/* The first readings are the image's first only once. */
	first_done = first_done || nkept_first > 0;
	nkept_first = nkept_ring = kept_next = 0;
	pthread_mutex_unlock(&kept_mu);
}

static void record(const uint8_t *blob, size_t len)
{
	if (!vrt_capture_on()) {
		keep(blob, len);
		return;
	}
	struct vrt_ev ev = {
	        .rec = VRT_REC_SAMPLE, .blob = blob, .blob_len = (uint32_t)len};
	vrt_tbuf_event(&ev);
}

static void sample_host(void)
{
	char statm[256], meminfo[8192];
	uint64_t rss = 0;
	if (read_file("/proc/self/statm", statm, sizeof(statm)) > 0) {
		unsigned long long size, resident;
		if (sscanf(statm, "%llu %llu", &size, &resident) == 2)
			rss = resident * (uint64_t)sysconf(_SC_PAGESIZE);
	}
	if (read_file("/proc/meminfo", meminfo, sizeof(meminfo)) <= 0)
		meminfo[0] = 0;
	uint8_t p[64];
	size_t n = vrt_put_uvarint(p, VRT_SAMPLE_HOST);
	n += vrt_put_uvarint(p + n, rss);
	n += vrt_put_uvarint(p + n, meminfo_field(meminfo, "MemAvailable:"));
	n += vrt_put_uvarint(p + n, meminfo_field(meminfo, "SwapTotal:"));
	n += vrt_put_uvarint(p + n, meminfo_field(meminfo, "SwapFree:"));
	record(p, n);
}

/* ---- devices (NVML) ------------------------------------------------------ */

static void *nvml_sym(const char *name)
{
	return vrt_real_dlsym(nvml.lib, name);
}

static int nvml_open(void)
{
	nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nvml.lib)
		return -1;
	nvml.init = (nvml_ret(*)(void))nvml_sym("nvmlInit_v2");
	nvml.count = (nvml_ret(*)(unsigned *))nvml_sym("nvmlDeviceGetCount_v2");
	nvml.handle = (nvml_ret(*)(unsigned, nvml_device *))nvml_sym(
	        "nvmlDeviceGetHandleByIndex_v2");
	nvml.uuid = (nvml_ret(*)(nvml_device, char *, unsigned))nvml_sym(
	        "nvmlDeviceGetUUID");
	nvml.memory = (nvml_ret(*)(nvml_device, struct nvml_memory *))nvml_sym(
	        "nvmlDeviceGetMemoryInfo");
	nvml.procs = (nvml_ret(*)(nvml_device, unsigned *,
	                          struct nvml_process *))
	        nvml_sym("nvmlDeviceGetComputeRunningProcesses_v3");
	if (!nvml.init || !nvml.count || !nvml.handle || !nvml.uuid ||
	    !nvml.memory || nvml.init() != 0) {
		/* No usable NVML: keep the library loaded (unloading a
		 * half-initialised one is riskier) and sample the host only. */
		nvml.init = NULL;
		return -1;
	}
	return 0;
}

static void uuid_text(const unsigned char u[16], char *out, size_t len)
{
	snprintf(out, len,
	         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	         "%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
	         u[10], u[11], u[12], u[13], u[14], u[15]);
}

static void sample_devices(void)
{
	struct vrt_device_info devs[MAX_DEVICES];
	int ndev = vrt_writer_known_devices(devs, MAX_DEVICES);
	unsigned count = 0;
	if (!ndev || nvml.count(&count) != 0)
		return;
	for (unsigned i = 0; i < count; i++) {
		nvml_device h;
		char uuid[96];
		if (nvml.handle(i, &h) != 0 || nvml.uuid(h, uuid, sizeof(uuid)))
			continue;
		const struct vrt_device_info *mine = NULL;
		for (int d = 0; d < ndev && !mine; d++) {
			char text[64];
			if (devs[d].vendor != VRT_VENDOR_CUDA ||
			    !devs[d].have_uuid)
				continue;
			uuid_text(devs[d].uuid, text, sizeof(text));
			if (!strcmp(text, uuid))
				mine = &devs[d];
		}
		struct nvml_memory m;
		if (!mine || nvml.memory(h, &m) != 0)
			continue;
		struct nvml_process procs[MAX_PROCS];
		unsigned np = MAX_PROCS;
		if (!nvml.procs || nvml.procs(h, &np, procs) != 0)
			np = 0;
		uint8_t p[VRT_EV_BLOB_MAX];
		size_t n = vrt_put_uvarint(p, VRT_SAMPLE_DEVICE);
		n += vrt_put_svarint(p + n, mine->ordinal);
		n += vrt_put_uvarint(p + n, m.used);
		n += vrt_put_uvarint(p + n, m.total);
		n += vrt_put_uvarint(p + n, np);
		for (unsigned k = 0; k < np; k++) {
			n += vrt_put_uvarint(p + n, procs[k].pid);
			n += vrt_put_uvarint(p + n, procs[k].used);
		}
		record(p, n);
	}
}

int vrt_sampler_own_bytes(const unsigned char uuid[16], uint64_t *bytes)
{
	char want[64];
	unsigned count = 0;
	int found = 0;
	uuid_text(uuid, want, sizeof(want));
	pthread_mutex_lock(&nvml_mu);
	if (!nvml.lib)
		nvml_open();
	if (nvml.init && nvml.procs && nvml.count(&count) == 0) {
		for (unsigned i = 0; i < count && !found; i++) {
			nvml_device h;
			char uuid_s[96];
			struct nvml_process procs[MAX_PROCS];
			unsigned np = MAX_PROCS;
			if (nvml.handle(i, &h) != 0 ||
			    nvml.uuid(h, uuid_s, sizeof(uuid_s)) != 0 ||
			    strcmp(uuid_s, want) != 0)
				continue;
			if (nvml.procs(h, &np, procs) != 0)
				break;
			for (unsigned k = 0; k < np && !found; k++)
				if (procs[k].pid == (unsigned)getpid()) {
					*bytes = procs[k].used;
					found = 1;
				}
			break;
		}
	}
	pthread_mutex_unlock(&nvml_mu);
	return found;
}

/* ---- the thread ---------------------------------------------------------- */

static _Atomic int thread_started;

static void *sampler_main(void *arg)
{
	vrt_capture_thread_started(&thread_started);
	(void)arg;
	pthread_mutex_lock(&nvml_mu);
	if (want_nvml)
		nvml_open();
	pthread_mutex_unlock(&nvml_mu);
	for (;;) {
		/* Recording, or standby (2 is VRT_STATE_OFF: stopped for
		 * good). */
		if (atomic_load(&vrt_state) == VRT_STATE_OFF)
			break;
		sample_host();
		pthread_mutex_lock(&nvml_mu);
		if (nvml.init)
			sample_devices();
		pthread_mutex_unlock(&nvml_mu);
		struct timespec deadline;
		vrt_clock_deadline(&deadline, interval);
		pthread_mutex_lock(&s_mu);
		while (!stopping &&
		       pthread_cond_timedwait(&s_cv, &s_mu, &deadline) !=
		               ETIMEDOUT)
			;
		int stop = stopping;
		pthread_mutex_unlock(&s_mu);
		if (stop)
			break;
	}
	/* Hand this thread's last samples to the writer. */
	vrt_tbuf_thread_exit();
	vrt_capture_thread_exiting();
	pthread_mutex_lock(&s_mu);
	exited = 1;
	pthread_cond_broadcast(&s_cv);
	pthread_mutex_unlock(&s_mu);
	return NULL;
}

int vrt_sampler_start(int interval_ms, int use_nvml)
{
	if (interval_ms <= 0)
		return 0;
	pthread_mutex_lock(&s_mu);
	if (running) {
		pthread_mutex_unlock(&s_mu);
		return 0;
	}
	interval = interval_ms;
	want_nvml = use_nvml;
	stopping = exited = 0;
	vrt_clock_cond_init(&s_cv);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	atomic_store(&thread_started, 0);
	int err = pthread_create(&thread, NULL, sampler_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!err)
		vrt_capture_wait_started(&thread_started);
	if (!err) {
		pthread_setname_np(thread, "vramtrace-smp");
		running = 1;
	}
	pthread_mutex_unlock(&s_mu);
	return -err;
}

void vrt_sampler_stop(void)
{
	pthread_mutex_lock(&s_mu);
	if (!running) {
		pthread_mutex_unlock(&s_mu);
		return;
	}
	stopping = 1;
	running = 0;
	pthread_cond_broadcast(&s_cv);
	/* The thread checks the flag between samples. A sample is a few file
	 * reads and NVML calls, but NVML can stall (a GPU falling off the
	 * bus): wait a bounded time, then leave the thread be rather than
	 * hold up the host's exit. */
	struct timespec deadline;
	vrt_clock_deadline(&deadline, 2000);
	while (!exited &&
	       pthread_cond_timedwait(&s_cv, &s_mu, &deadline) != ETIMEDOUT)
		;
	int done = exited;
	pthread_mutex_unlock(&s_mu);
	if (done)
		pthread_join(thread, NULL);
	else
		pthread_detach(thread);
}

void vrt_sampler_before_fork(void)
{
	pthread_mutex_lock(&nvml_mu);
}

void vrt_sampler_after_fork_parent(void)
{
	pthread_mutex_unlock(&nvml_mu);
}

void vrt_sampler_after_fork_child(void)
{
	pthread_mutex_init(&kept_mu, NULL);
	nkept_first = nkept_ring = kept_next = first_done = 0;
	pthread_mutex_init(&nvml_mu, NULL);
	pthread_mutex_init(&s_mu, NULL);
	running = 0;
	stopping = 0;
}
