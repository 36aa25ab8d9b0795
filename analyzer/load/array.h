/*
 * array.h — growing a malloc'd array by doubling, shared by the loader's
 * modules (load.c, intern.c, tracedir.c). Header only and static inline:
 * the loader grows its run buffers per event, where a call would show.
 * No globals; safe from any thread on arrays it owns.
 */
#ifndef VRT_ARRAY_H
#define VRT_ARRAY_H

#include <stdint.h>
#include <stdlib.h>

/* Grows *arr (of *cap elements of size sz) to hold at least need, from 64
 * elements up by doubling. 0, or -1 (arr and cap unchanged) when out of
 * memory or when the size would overflow. */
static inline int vrt_array_grow(void **arr, size_t *cap, size_t need,
                                 size_t sz)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / sz)
			return -1;
		ncap *= 2;
	}
	p = realloc(*arr, ncap * sz);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

#endif /* VRT_ARRAY_H */
