/* Sizes, offsets and constants of the CUDA types vramtrace reads. */
#ifndef VRT_TEST_LAYOUT_H
#define VRT_TEST_LAYOUT_H
#include <stddef.h>
struct vrt_layout {
	size_t prop_size, prop_location_type, prop_location_id;
	size_t pool_props_size, pool_location_id;
	size_t deviceptr_size, handle_size, uuid_size;
	long location_type_device, err_oom, err_invalid_value, err_not_found,
	        err_invalid_context, ptds_flag, symbol_not_found,
	        ptr_attr_device_ordinal;
};
void vrt_layout_ours(struct vrt_layout *l);
#endif
