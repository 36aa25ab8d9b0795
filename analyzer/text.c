/*
 * text.c — sizes and safe strings for people (text.h). The one place that
 * spells a binary unit or decides what a terminal may be sent; the callers
 * pick the range of units and the precision their line wants. Pure.
 */
#include "text.h"

#include <stdint.h>

const char *vrt_text_bytes_in(char *buf, size_t n, double b, int decimals,
                              enum vrt_text_unit lo, enum vrt_text_unit hi)
{
	static const char *const unit[] = {"B",   "KiB", "MiB", "GiB",
	                                   "TiB", "PiB", "EiB"};
	int u;

	/* Dividing by powers of two is exact, so a size scaled step by step
	 * prints as one divided at once. */
	for (u = VRT_UNIT_B; u < (int)lo; u++)
		b /= 1024.0;
	while (b >= 1024.0 && u < (int)hi) {
		b /= 1024.0;
		u++;
	}
	if (u == VRT_UNIT_B)
		snprintf(buf, n, "%.0f B", b);
	else
		snprintf(buf, n, "%.*f %s", decimals, b, unit[u]);
	return buf;
}

const char *vrt_text_bytes(char *buf, size_t n, uint64_t b, int decimals)
{
	return vrt_text_bytes_in(buf, n, (double)b, decimals, VRT_UNIT_B,
	                         VRT_UNIT_EIB);
}

void vrt_text_put_safe(FILE *f, const char *s, size_t max)
{
	size_t i;

	for (i = 0; s && s[i] && i < max; i++)
		fputc(vrt_text_safe_char((unsigned char)s[i]), f);
	if (s && i == max && s[i])
		fputs("...", f);
}

void vrt_text_copy_safe(char *buf, size_t n, const char *s)
{
	size_t i;

	for (i = 0; s && s[i] && i + 1 < n; i++)
		buf[i] = (char)vrt_text_safe_char((unsigned char)s[i]);
	buf[i] = '\0';
}
