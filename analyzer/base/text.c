/*
 * text.c — sizes and safe strings for people (text.h). The one place that
 * spells a binary unit or decides what a terminal may be sent; the callers
 * pick the range of units and the precision their line wants. Pure.
 */
#include "text.h"

#include <ctype.h>
#include <string.h>

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

/* A size's unit right after a number: "GiB", "MiB,", "B)"... */
static int unit_word(const char *s)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB",
	                                    "PiB", "EiB", "B"};
	size_t k, n;

	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		n = strlen(units[k]);
		if (!strncmp(s, units[k], n) &&
		    !isalnum((unsigned char)s[n]))
			return 1;
	}
	return 0;
}

/* The length of the word at s, a number and its unit counting as one
 * ("16.00 GiB" never folds between them). */
static size_t word_len(const char *s)
{
	size_t w = 0;

	for (;;) {
		while (s[w] && s[w] != ' ')
			w++;
		if (!w || !isdigit((unsigned char)s[w - 1]) || s[w] != ' ' ||
		    !unit_word(s + w + 1))
			return w;
		w++;
	}
}

void vrt_text_put_wrapped(FILE *f, const char *s, size_t col, size_t indent,
                          size_t width)
{
	size_t i = 0, w, room;

	if (!s)
		return;
	if (indent + 20 > width)
		width = indent + 20;
	while (s[i]) {
		/* the next word and the space before it */
		size_t sp = 0;
		while (s[i + sp] == ' ')
			sp++;
		w = word_len(s + i + sp);
		if (!w)
			break;
		room = col > width ? 0 : width - col;
		if (col > indent && sp + w > room) {
			fputc('\n', f);
			fprintf(f, "%*s", (int)indent, "");
			col = indent;
			sp = 0;
			while (s[i] == ' ')
				i++;
			room = width - col;
		}
		for (size_t k = 0; k < sp + w; k++) {
			if (col >= width && k >= sp) {
				/* a word longer than a whole line */
				fputc('\n', f);
				fprintf(f, "%*s", (int)indent, "");
				col = indent;
			}
			fputc(vrt_text_safe_char((unsigned char)s[i + k]), f);
			col++;
		}
		i += sp + w;
	}
}
