/*
 * layout_check.c — the fake runtime's structures (cudart_api.h) laid out
 * as NVIDIA's (cuda_runtime_api.h): every size and field offset of
 * layout.h's list compared, one TAP line each. Built only where a CUDA
 * toolkit is present.
 */
#include <stdio.h>

#include "layout.h"

#define MAX_ENTRIES 512

int main(void)
{
	static size_t ours[MAX_ENTRIES], theirs[MAX_ENTRIES];
	static const char *names[MAX_ENTRIES];
	size_t n = vrt_cudart_layout_ours(ours, names);
	size_t m = vrt_cudart_layout_theirs(theirs);
	int bad = 0;

	printf("1..%zu\n", n);
	for (size_t i = 0; i < n && i < m; i++) {
		int same = ours[i] == theirs[i];
		printf("%sok %zu - %s (ours %zu, CUDA's %zu)\n", same ? "" : "not ",
		       i + 1, names[i], ours[i], theirs[i]);
		bad |= !same;
	}
	return bad || n != m;
}
