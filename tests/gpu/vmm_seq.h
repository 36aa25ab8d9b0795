/*
 * vmm_seq.h — one virtual-memory sequence on the CUDA driver API, shared by
 * gpu_driver.c (functions from dlsym) and gpu_runtime.cu (functions from
 * cudaGetDriverEntryPointByVersion, PyTorch's route), logged with evlog.h.
 *
 * On device dev: reserve 8 granules of address space; create handles of 3
 * and 2 granules; map both and set access; then unmap before release for
 * the first and release before unmap for the second (its memory returns at
 * the unmap); free the address range. The report must show vmm: 2 allocs,
 * 2 frees, a peak of 5 granules; reserved address space: 1 of 8 granules.
 *
 * Include after the CUDA declarations (cuda.h, or cuda_api.h and
 * cuda_api_ext.h) and evlog.h. Single-threaded.
 */
#ifndef VRT_TEST_VMM_SEQ_H
#define VRT_TEST_VMM_SEQ_H

#include <string.h>

struct vmm_fns {
	CUresult (*granularity)(size_t *, const CUmemAllocationProp *,
	                        CUmemAllocationGranularity_flags);
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
	                    unsigned long long);
	CUresult (*address_free)(CUdeviceptr, size_t);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
	                   const CUmemAllocationProp *, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUresult (*map)(CUdeviceptr, size_t, size_t,
	                CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*unmap)(CUdeviceptr, size_t);
	CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *,
	                       size_t);
	/* the driver's name of a code, for the log */
	const char *(*errname)(CUresult);
};

static CUresult vmm_logged(const struct vmm_fns *f, const char *api, CUresult r)
{
	evlog_call(api, (int)r, f->errname(r));
	return r;
}

#define VMM_CALL(f, api, ...) vmm_logged((f), #api, (f)->api(__VA_ARGS__))

/* Returns 0 when every call succeeded. */
static int vmm_sequence(const struct vmm_fns *f, int dev)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc access;
	size_t g = 0;
	CUdeviceptr va = 0;
	CUmemGenericAllocationHandle a = 0, b = 0;
	int bad = 0;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

	if (VMM_CALL(f, granularity, &g, &prop,
	             CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
	    !g)
		return 1;
	if (VMM_CALL(f, reserve, &va, 8 * g, 0, 0, 0) != CUDA_SUCCESS)
		return 1;
	evlog_alloc("reserved_va", dev, 8ull * g, evlog_id(va));
	if (VMM_CALL(f, create, &a, 3 * g, &prop, 0) == CUDA_SUCCESS)
		evlog_alloc("vmm", dev, 3ull * g, evlog_id(a));
	else
		bad = 1;
	if (VMM_CALL(f, create, &b, 2 * g, &prop, 0) == CUDA_SUCCESS)
		evlog_alloc("vmm", dev, 2ull * g, evlog_id(b));
	else
		bad = 1;
	if (!bad) {
		bad |= VMM_CALL(f, map, va, 3 * g, 0, a, 0) != CUDA_SUCCESS;
		bad |= VMM_CALL(f, map, va + 3 * g, 2 * g, 0, b, 0) !=
		       CUDA_SUCCESS;
		bad |= VMM_CALL(f, set_access, va, 5 * g, &access, 1) !=
		       CUDA_SUCCESS;
		/* a: unmapped, then released: its memory returns at release */
		bad |= VMM_CALL(f, unmap, va, 3 * g) != CUDA_SUCCESS;
		if (VMM_CALL(f, release, a) == CUDA_SUCCESS)
			evlog_free(evlog_id(a));
		/* b: released while mapped: its memory returns at the unmap */
		bad |= VMM_CALL(f, release, b) != CUDA_SUCCESS;
		if (VMM_CALL(f, unmap, va + 3 * g, 2 * g) == CUDA_SUCCESS)
			evlog_free(evlog_id(b));
	}
	if (VMM_CALL(f, address_free, va, 8 * g) == CUDA_SUCCESS)
		evlog_free(evlog_id(va));
	return bad;
}

#endif /* VRT_TEST_VMM_SEQ_H */
