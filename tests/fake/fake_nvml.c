/*
 * fake_nvml.c — a fake libnvidia-ml.so.1 for tests, answering the few
 * calls vramtrace's sampler makes, consistently with the fake CUDA driver
 * loaded in the same process:
 *
 *   nvmlInit_v2 / nvmlShutdown, nvmlDeviceGetCount_v2,
 *   nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID,
 *   nvmlDeviceGetMemoryInfo, nvmlDeviceGetComputeRunningProcesses_v3
 *
 * Memory: total = the fake card's capacity; used = what FAKECUDA_USED says
 * other processes hold plus what this process holds now (read from the
 * fake driver through fakecuda_device_state). Processes: this process
 * (with its live bytes, when non-zero) plus FAKENVML_PROCS, a list of
 * "ordinal:pid:size" entries ("0:4242:10G,1:4243:512M"). UUIDs are the
 * fake driver's, printed as NVML does ("GPU-xxxxxxxx-xxxx-...").
 * Without the fake driver loaded, nvmlInit_v2 fails (NVML_ERROR_UNINITIALIZED).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define MAX_DEV 16
#define MAX_PROCS 32

typedef int (*state_fn)(int, unsigned long long *, unsigned long long *,
                        unsigned long long *, unsigned char *);
typedef int (*count_fn)(void);

static state_fn state;
static int ndev;
static struct nvmlDevice_st {
	int ordinal;
} devs[MAX_DEV];

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlShutdown(void);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                     unsigned int *count,
                                                     nvmlProcessInfo_t *p);

nvmlReturn_t nvmlInit_v2(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!h)
		return NVML_ERROR_LIBRARY_NOT_FOUND;
	state = (state_fn)dlsym(h, "fakecuda_device_state");
	count_fn count = (count_fn)dlsym(h, "fakecuda_device_count");
	dlclose(h);
	if (!state || !count)
		return NVML_ERROR_UNINITIALIZED;
	ndev = count();
	if (ndev > MAX_DEV)
		ndev = MAX_DEV;
	for (int i = 0; i < ndev; i++)
		devs[i].ordinal = i;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!state)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = (unsigned)ndev;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (!state)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || i >= (unsigned)ndev)
		return NVML_ERROR_INVALID_ARGUMENT;
	*d = &devs[i];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
	unsigned long long cap, used, live;
	unsigned char u[16];
	if (!state || !d || !uuid || len < 41)
		return NVML_ERROR_INVALID_ARGUMENT;
	state(d->ordinal, &cap, &used, &live, u);
	snprintf(uuid, len,
	         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	         "%02x%02x%02x%02x%02x%02x",
	         u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
	         u[10], u[11], u[12], u[13], u[14], u[15]);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m)
{
	unsigned long long cap, used, live;
	unsigned char u[16];
	if (!state || !d || !m)
		return NVML_ERROR_INVALID_ARGUMENT;
	state(d->ordinal, &cap, &used, &live, u);
	m->total = cap;
	m->used = used + live > cap ? cap : used + live;
	m->free = cap - m->used;
	return NVML_SUCCESS;
}

static unsigned long long parse_size(const char *s, char **end)
{
	unsigned long long v = strtoull(s, end, 10);
	switch (**end) {
	case 'K': v <<= 10; (*end)++; break;
	case 'M': v <<= 20; (*end)++; break;
	case 'G': v <<= 30; (*end)++; break;
	case 'T': v <<= 40; (*end)++; break;
	}
	return v;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d,
                                                     unsigned int *count,
                                                     nvmlProcessInfo_t *p)
{
	nvmlProcessInfo_t all[MAX_PROCS];
	unsigned n = 0;
	unsigned long long cap, used, live;
	unsigned char u[16];
	if (!state || !d || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	state(d->ordinal, &cap, &used, &live, u);
	if (live)
		all[n++] = (nvmlProcessInfo_t){(unsigned)getpid(), live, 0, 0};
	const char *spec = getenv("FAKENVML_PROCS");
	while (spec && *spec && n < MAX_PROCS) {
		char *end;
		long ord = strtol(spec, &end, 10);
		if (*end != ':')
			break;
		unsigned long pid = strtoul(end + 1, &end, 10);
		if (*end != ':')
			break;
		unsigned long long bytes = parse_size(end + 1, &end);
		if (ord == d->ordinal)
			all[n++] = (nvmlProcessInfo_t){(unsigned)pid, bytes, 0,
			                               0};
		spec = *end == ',' ? end + 1 : end;
	}
	if (*count < n || !p) {
		*count = n;
		return n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
	}
	memcpy(p, all, n * sizeof(*p));
	*count = n;
	return NVML_SUCCESS;
}
