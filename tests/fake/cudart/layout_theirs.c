/* The layout list of layout.h over NVIDIA's headers (CUDA toolkit). */
#include <cuda_runtime_api.h>

#include "layout.h"

size_t vrt_cudart_layout_theirs(size_t *out)
{
	size_t n = 0;
#define S(t) out[n++] = sizeof(struct t);
#define F(t, f) out[n++] = offsetof(struct t, f);
	VRT_CUDART_LAYOUT(S, F)
#undef S
#undef F
	return n;
}
