/* The same facts as with_cuda_h.c, from our declarations alone. */
#include "cuda_api.h"
#include "layout.h"

void vrt_layout_ours(struct vrt_layout *l)
{
	l->prop_size = sizeof(CUmemAllocationProp);
	l->prop_location_type = offsetof(CUmemAllocationProp, location.type);
	l->prop_location_id = offsetof(CUmemAllocationProp, location.id);
	l->pool_props_size = sizeof(CUmemPoolProps);
	l->pool_location_id = offsetof(CUmemPoolProps, location.id);
	l->deviceptr_size = sizeof(CUdeviceptr);
	l->handle_size = sizeof(CUmemGenericAllocationHandle);
	l->uuid_size = sizeof(CUuuid);
	l->location_type_device = CU_MEM_LOCATION_TYPE_DEVICE;
	l->err_oom = CUDA_ERROR_OUT_OF_MEMORY;
	l->err_invalid_value = CUDA_ERROR_INVALID_VALUE;
	l->err_not_found = CUDA_ERROR_NOT_FOUND;
	l->err_invalid_context = CUDA_ERROR_INVALID_CONTEXT;
	l->ptds_flag = VRT_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	l->symbol_not_found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	l->ptr_attr_device_ordinal = CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL;
}
