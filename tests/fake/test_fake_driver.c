/*
 * test_fake_driver.c — what a real program asks the fake driver beyond
 * memory, answered as a real driver would: cuDeviceGetAttribute per card
 * (three physical cards set up as an H100, an A100 and an L4, the last
 * without VMM), exported and through the resolver; each card's memory
 * when FAKECUDA_MEM is unset; pinned host memory page-aligned whatever
 * the size; managed memory that host code can write and that counts
 * against its device; streams that the stream-ordered calls accept until
 * destroyed; a device's current pool (cuDeviceSetMemPool) serving
 * cuMemAllocAsync; two processes on one card (FAKECUDA_SHARE) running
 * out of it together, and the card's memory back when one exits.
 * Linked with the fake directly; the environment comes
 * from meson (FAKECUDA_DEVICES=3, FAKECUDA_CARD=h100,a100,l4,
 * FAKECUDA_VMM=1,1,0).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_api_ext.h"

#define MIB (1ull << 20)

static int failures;

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond)) {                                             \
			fprintf(stderr, "%s:%d: failed: %s\n", __FILE__,   \
			        __LINE__, #cond);                          \
			failures++;                                        \
		}                                                          \
	} while (0)

static int attr(CUdevice_attribute a, int dev)
{
	int v = -12345;
	CHECK(cuDeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS);
	return v;
}

/* [cc major, minor, SMs, shared memory per block opt-in, per SM, VMM,
 * memory in MiB] of the three cards. */
static const int want[3][7] = {
        {9, 0, 132, 232448, 233472, 1, 81920},
        {8, 0, 108, 166912, 167936, 1, 81920},
        {8, 9, 58, 101376, 102400, 0, 23034},
};

static void check_cards(void)
{
	CUresult (*resolved)(int *, CUdevice_attribute, CUdevice) = NULL;
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	int v = 0;

	CHECK(cuGetProcAddress_v2("cuDeviceGetAttribute", (void **)&resolved,
	                          13000, 0, &st) == CUDA_SUCCESS);
	CHECK(st == CU_GET_PROC_ADDRESS_SUCCESS && resolved);
	for (int d = 0; d < 3; d++) {
		size_t total = 0;
		CHECK(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d) ==
		      want[d][0]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d) ==
		      want[d][1]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d) ==
		      want[d][2]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
		           d) == want[d][3]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
		           d) == want[d][4]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
		           d) == want[d][5]);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, d) ==
		      49152);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, d) == 1024);
		CHECK(attr(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, d) == 1);
		CHECK(cuDeviceTotalMem_v2(&total, d) == CUDA_SUCCESS &&
		      total == (size_t)want[d][6] * MIB);
		v = -1;
		CHECK(resolved && resolved(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
		                           d) == CUDA_SUCCESS &&
		      v == want[d][2]);
	}
	/* Attributes past the enumeration, attribute 0, a bad device. */
	CHECK(cuDeviceGetAttribute(&v, (CUdevice_attribute)FAKECUDA_DEVICE_ATTRIBUTE_MAX,
	                           0) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0) ==
	      CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                           3) == CUDA_ERROR_INVALID_DEVICE);
	CHECK(cuDeviceGetAttribute(NULL, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
	                           0) == CUDA_ERROR_INVALID_VALUE);
}

static void check_vmm(void)
{
	CUmemGenericAllocationHandle h = 0;
	CUmemAllocationProp prop;
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 2; /* the L4, FAKECUDA_VMM=...,0 */
	CHECK(cuMemCreate(&h, 2 * MIB, &prop, 0) == CUDA_ERROR_NOT_SUPPORTED);
	prop.location.id = 0;
	CHECK(cuMemCreate(&h, 2 * MIB, &prop, 0) == CUDA_SUCCESS);
	CHECK(cuMemRelease(h) == CUDA_SUCCESS);
}

static void check_pinned(void)
{
	const size_t sizes[] = {1, 24, 4095, 4097, 3 * MIB + 5};
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *a = NULL, *b = NULL;
		CHECK(cuMemHostAlloc(&a, sizes[i], 0) == CUDA_SUCCESS);
		CHECK(cuMemAllocHost_v2(&b, sizes[i]) == CUDA_SUCCESS);
		CHECK(a && (uintptr_t)a % page == 0);
		CHECK(b && (uintptr_t)b % page == 0);
		if (a && b) {
			memset(a, 0x5a, sizes[i]);
			memset(b, 0xa5, sizes[i]);
		}
		CHECK(cuMemFreeHost(a) == CUDA_SUCCESS);
		CHECK(cuMemFreeHost(b) == CUDA_SUCCESS);
	}
}

static unsigned long long used_now(void)
{
	size_t free_b = 0, total = 0;
	cuMemGetInfo_v2(&free_b, &total);
	return total - free_b;
}

static void check_managed(void)
{
	CUdeviceptr m = 0;
	unsigned long long before = used_now();
	int ord = -1;
	CHECK(cuMemAllocManaged(&m, 64 * MIB, FAKECUDA_MEM_ATTACH_GLOBAL) ==
	      CUDA_SUCCESS);
	CHECK(used_now() == before + 64 * MIB);
	if (m) {
		unsigned char *p = (unsigned char *)(uintptr_t)m;
		p[0] = 1;
		p[64 * MIB - 1] = 2;
		CHECK(p[0] + p[64 * MIB - 1] == 3);
	}
	CHECK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	                            m) == CUDA_SUCCESS &&
	      ord == 0);
	CHECK(cuMemFree_v2(m) == CUDA_SUCCESS);
	CHECK(used_now() == before);
	/* Past the card: refused before anything is mapped. */
	CHECK(cuMemAllocManaged(&m, 1ull << 40, FAKECUDA_MEM_ATTACH_GLOBAL) ==
	      CUDA_ERROR_OUT_OF_MEMORY);
}

static void check_streams(void)
{
	CUstream s = NULL, p = NULL;
	CUdeviceptr a = 0;
	CHECK(cuStreamCreate(&s, 0) == CUDA_SUCCESS && s);
	CHECK(cuStreamCreateWithPriority(&p, 1, -3) == CUDA_SUCCESS && p);
	CHECK(cuStreamCreate(&s, 4) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuMemAllocAsync(&a, MIB, s) == CUDA_SUCCESS);
	CHECK(cuStreamQuery(s) == CUDA_SUCCESS);
	CHECK(cuStreamSynchronize(p) == CUDA_SUCCESS);
	CHECK(cuMemFreeAsync(a, p) == CUDA_SUCCESS);
	CHECK(cuStreamDestroy_v2(s) == CUDA_SUCCESS);
	CHECK(cuStreamDestroy_v2(s) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuMemAllocAsync(&a, MIB, s) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuStreamQuery(s) == CUDA_ERROR_INVALID_HANDLE);
	CHECK(cuStreamDestroy_v2(p) == CUDA_SUCCESS);
}

static void check_current_pool(void)
{
	CUmemoryPool pool = NULL, cur = NULL, dflt = NULL;
	CUmemPoolProps props;
	CUdeviceptr a = 0;
	unsigned long long used = 0;
	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CHECK(cuMemPoolCreate(&pool, &props) == CUDA_SUCCESS);
	CHECK(cuDeviceGetDefaultMemPool(&dflt, 0) == CUDA_SUCCESS);
	CHECK(cuDeviceGetMemPool(&cur, 0) == CUDA_SUCCESS && cur == dflt);
	CHECK(cuDeviceSetMemPool(1, pool) == CUDA_ERROR_INVALID_VALUE);
	CHECK(cuDeviceSetMemPool(0, pool) == CUDA_SUCCESS);
	CHECK(cuDeviceGetMemPool(&cur, 0) == CUDA_SUCCESS && cur == pool);
	CHECK(cuMemAllocAsync(&a, 3 * MIB, NULL) == CUDA_SUCCESS);
	CHECK(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
	                            &used) == CUDA_SUCCESS &&
	      used == 3 * MIB);
	CHECK(cuMemFreeAsync(a, NULL) == CUDA_SUCCESS);
	CHECK(cuMemPoolDestroy(pool) == CUDA_SUCCESS);
	CHECK(cuDeviceGetMemPool(&cur, 0) == CUDA_SUCCESS && cur == dflt);
}

/* A child process takes 30 GiB of device 0 (physical card 0, 80 GiB)
 * and waits; this process sees them held by another process, cannot take
 * 60 GiB beside them, and has them back once the child is gone. The 1
 * GiB this process holds at the fork is counted once, in this process's
 * slot: the child sees the card as its parent does. */
static void check_share(void)
{
	const unsigned long long gib = 1ull << 30;
	size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
	CUdeviceptr p = 0, held = 0;
	int go[2], done[2];
	char c = 0;
	pid_t pid;

	CHECK(cuMemAlloc_v2(&held, gib) == CUDA_SUCCESS);
	CHECK(cuMemGetInfo_v2(&free0, &total) == CUDA_SUCCESS);
	CHECK(pipe(go) == 0 && pipe(done) == 0);
	pid = fork();
	if (pid == 0) {
		CUdeviceptr q = 0;
		size_t f = 0, t = 0;
		int ok = cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS && f == free0;
		ok = cuMemAlloc_v2(&q, 30 * gib) == CUDA_SUCCESS && ok;
		ok = write(go[1], ok ? "y" : "n", 1) == 1 && ok;
		ok = read(done[0], &c, 1) == 1 && ok;
		_exit(ok ? 0 : 1);
	}
	CHECK(pid > 0 && read(go[0], &c, 1) == 1 && c == 'y');
	CHECK(cuMemGetInfo_v2(&free1, &total) == CUDA_SUCCESS);
	CHECK(free1 + 30 * gib == free0);
	CHECK(free0 > 60 * gib && free1 < 60 * gib);
	CHECK(cuMemAlloc_v2(&p, 60 * gib) == CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(write(done[1], "x", 1) == 1);
	if (pid > 0) {
		siginfo_t si;
		int st = -1;
		/* exited, not yet reaped: a zombie holds no memory */
		memset(&si, 0, sizeof(si));
		CHECK(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0 &&
		      si.si_pid == pid && si.si_status == 0);
		CHECK(cuMemGetInfo_v2(&free2, &total) == CUDA_SUCCESS);
		CHECK(free2 == free0);
		CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		      WEXITSTATUS(st) == 0);
	}
	CHECK(cuMemGetInfo_v2(&free2, &total) == CUDA_SUCCESS);
	CHECK(free2 == free0);
	CHECK(cuMemAlloc_v2(&p, 60 * gib) == CUDA_SUCCESS);
	CHECK(cuMemFree_v2(p) == CUDA_SUCCESS);
	CHECK(cuMemFree_v2(held) == CUDA_SUCCESS);
}

/* Two processes filling the L4 card (device 2) with 16 MiB blocks at
 * once, 20 times: together they never hold more than it has free, as on
 * a real card (checking and charging is one step across processes). */
static void check_share_race(void)
{
	const unsigned long long blk = 16ull << 20;
	size_t free0 = 0, total = 0;
	CUcontext ctx;
	int worst = 0;

	CHECK(cuDevicePrimaryCtxRetain(&ctx, 2) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
	CHECK(cuMemGetInfo_v2(&free0, &total) == CUDA_SUCCESS);
	for (int round = 0; round < 20; round++) {
		int out[2], go[2];
		pid_t pid[2];
		unsigned long long got = 0, n = 0;
		CHECK(pipe(out) == 0 && pipe(go) == 0);
		for (int k = 0; k < 2; k++) {
			pid[k] = fork();
			if (pid[k] == 0) {
				CUdeviceptr q;
				char c;
				unsigned long long held = 0;
				close(go[1]); /* EOF once the parent closes */
				if (read(go[0], &c, 1) != 1)
					_exit(1);
				while (cuMemAlloc_v2(&q, blk) == CUDA_SUCCESS)
					held += blk;
				if (write(out[1], &held, sizeof(held)) !=
				    (ssize_t)sizeof(held))
					_exit(1);
				/* hold the bytes until both have counted */
				if (read(go[0], &c, 1) < 0)
					_exit(1);
				_exit(0);
			}
		}
		CHECK(write(go[1], "gg", 2) == 2);
		for (int k = 0; k < 2; k++)
			if (read(out[0], &n, sizeof(n)) == (ssize_t)sizeof(n))
				got += n;
		close(go[1]); /* both children see EOF and exit */
		for (int k = 0; k < 2; k++)
			if (pid[k] > 0)
				waitpid(pid[k], NULL, 0);
		close(go[0]);
		close(out[0]);
		close(out[1]);
		if (got > free0)
			worst++;
	}
	CHECK(worst == 0);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

int main(void)
{
	CUcontext ctx;
	char dir[] = "/tmp/fake-share-XXXXXX", path[64];
	/* Before the driver's first call: it reads the environment once. */
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/cards", dir);
	setenv("FAKECUDA_SHARE", path, 1);
	CHECK(cuInit(0) == CUDA_SUCCESS);
	CHECK(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
	CHECK(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
	check_cards();
	check_vmm();
	check_pinned();
	check_managed();
	check_streams();
	check_current_pool();
	check_share();
	check_share_race();
	unlink(path);
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("fake driver: cards, pinned alignment, managed, streams, "
	       "current pool, shared cards: ok\n");
	return 0;
}
