/*
 * Compiled against NVIDIA's cuda.h when the toolkit is present: our own
 * prototypes (preload/cuda_api.h) are redeclared after cuda.h's, so the
 * compiler rejects any parameter or return type that differs. Built twice,
 * with and without CUDA_API_PER_THREAD_DEFAULT_STREAM, so the _ptsz
 * prototypes are checked too. The struct layouts and constants we rely on
 * are compared at run time with the values layout.c computes from our
 * declarations alone.
 */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>

#define VRT_HAVE_CUDA_H
#include "cuda_api.h"

#include "layout.h"

int main(void)
{
	struct vrt_layout theirs = {
	        .prop_size = sizeof(CUmemAllocationProp),
	        .prop_location_type =
	                offsetof(CUmemAllocationProp, location.type),
	        .prop_location_id = offsetof(CUmemAllocationProp, location.id),
	        .pool_props_size = sizeof(CUmemPoolProps),
	        .pool_location_id = offsetof(CUmemPoolProps, location.id),
	        .deviceptr_size = sizeof(CUdeviceptr),
	        .handle_size = sizeof(CUmemGenericAllocationHandle),
	        .uuid_size = sizeof(CUuuid),
	        .location_type_device = CU_MEM_LOCATION_TYPE_DEVICE,
	        .err_oom = CUDA_ERROR_OUT_OF_MEMORY,
	        .err_invalid_value = CUDA_ERROR_INVALID_VALUE,
	        .err_not_found = CUDA_ERROR_NOT_FOUND,
	        .err_invalid_context = CUDA_ERROR_INVALID_CONTEXT,
	        .ptds_flag = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
	        .symbol_not_found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
	        .ptr_attr_device_ordinal = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
	};
	struct vrt_layout ours;
	vrt_layout_ours(&ours);
	int bad = 0;
#define CHECK(f)                                                               \
	do {                                                                   \
		int same = theirs.f == ours.f;                                 \
		printf("%sok - %s (cuda.h %zu, ours %zu)\n",                   \
		       same ? "" : "not ", #f, (size_t)theirs.f,               \
		       (size_t)ours.f);                                        \
		bad |= !same;                                                  \
	} while (0)
	printf("1..16\n");
	CHECK(prop_size);
	CHECK(prop_location_type);
	CHECK(prop_location_id);
	CHECK(pool_props_size);
	CHECK(pool_location_id);
	CHECK(deviceptr_size);
	CHECK(handle_size);
	CHECK(uuid_size);
	CHECK(location_type_device);
	CHECK(err_oom);
	CHECK(err_invalid_value);
	CHECK(err_not_found);
	CHECK(err_invalid_context);
	CHECK(ptds_flag);
	CHECK(symbol_not_found);
	CHECK(ptr_attr_device_ordinal);
	return bad;
}
