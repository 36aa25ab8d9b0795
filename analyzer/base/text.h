/*
 * Text for people: sizes in binary units and untrusted strings made safe
 * for a terminal. Every report, `ctl`, `live`, the progress line and the
 * diagnosis's sentences write sizes and trace strings through these, so a
 * size reads the same everywhere and no string of a trace (a frame name,
 * a mark's label, a command line: all written by the traced process) can
 * move a terminal's cursor. Pure; no globals; safe from any thread.
 */
#ifndef VRT_TEXT_H
#define VRT_TEXT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Binary units, in order. */
enum vrt_text_unit {
	VRT_UNIT_B,
	VRT_UNIT_KIB,
	VRT_UNIT_MIB,
	VRT_UNIT_GIB,
	VRT_UNIT_TIB,
	VRT_UNIT_PIB,
	VRT_UNIT_EIB
};

/*
 * b bytes into buf (returned) in the largest unit from lo to hi that
 * leaves the number at 1 or more (lo when even that is below 1), with
 * decimals digits after the point: "1.50 GiB", "0.25 MiB" (lo MiB). In
 * bytes, always a whole number: "512 B". b may be fractional (predicted
 * sizes).
 */
const char *vrt_text_bytes_in(char *buf, size_t n, double b, int decimals,
                              enum vrt_text_unit lo, enum vrt_text_unit hi);

/* vrt_text_bytes_in from bytes to EiB: "512 B", "71.20 GiB". */
const char *vrt_text_bytes(char *buf, size_t n, uint64_t b, int decimals);

/* c, or '?' for a control byte (below 0x20, and DEL). */
static inline int vrt_text_safe_char(unsigned char c)
{
	return c < 0x20 || c == 0x7f ? '?' : c;
}

/* Writes s (NULL: nothing) with control bytes as '?', cut at max bytes
 * with "..." after when longer (SIZE_MAX: never cut). */
void vrt_text_put_safe(FILE *f, const char *s, size_t max);

/* The same into buf (n > 0): as much of s as fits, NUL-terminated, no
 * "..." mark. */
void vrt_text_copy_safe(char *buf, size_t n, const char *s);

/* The width text reports keep their prose to (a terminal's 100 columns
 * with room to spare is the common size); tables may be wider. */
#define VRT_TEXT_WIDTH 100

/*
 * Writes s (NULL: nothing) as vrt_text_put_safe does, folding it at
 * spaces so no line passes width columns: the first line continues from
 * column col (what the caller wrote before it on that line), the others
 * start with indent spaces. A word longer than a line is cut where the
 * line ends. Ends without a newline.
 */
void vrt_text_put_wrapped(FILE *f, const char *s, size_t col, size_t indent,
                          size_t width);

#endif /* VRT_TEXT_H */
