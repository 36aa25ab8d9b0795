/* The layout list of layout.h over the fake runtime's own declarations
 * (cudart_api.h), with each entry's name. */
#include "cuda_api.h"
#include "cudart_api.h"
#include "layout.h"

size_t vrt_cudart_layout_ours(size_t *out, const char **names)
{
	size_t n = 0;
#define S(t)                                                                   \
	names[n] = "sizeof(struct " #t ")";                                    \
	out[n++] = sizeof(struct t);
#define F(t, f)                                                                \
	names[n] = #t "." #f;                                                  \
	out[n++] = offsetof(struct t, f);
	VRT_CUDART_LAYOUT(S, F)
#undef S
#undef F
	return n;
}
