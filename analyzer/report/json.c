/*
 * json.c — the JSON writer behind report_json.c. Formatting only: a value
 * is placed after a comma, newline and indent as its container requires.
 * Numbers are integers (bytes, counts) or seconds printed from integer
 * nanoseconds, so no floating point rounding ever reaches a report.
 */
#include "json.h"

#include <inttypes.h>
#include <string.h>

void vrt_json_init(struct vrt_json *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->first[0] = 1;
}

static void indent(struct vrt_json *w)
{
	int i;
	fputc('\n', w->f);
	for (i = 0; i < w->depth; i++)
		fputs("  ", w->f);
}

/* Separator before a value (or a key) at the current depth. */
static void before_value(struct vrt_json *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (w->depth == 0)
		return;
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = 0;
	if (!w->oneline[w->depth])
		indent(w);
}

static void open_(struct vrt_json *w, char c)
{
	before_value(w);
	fputc(c, w->f);
	if (w->depth + 1 < VRT_JSON_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = 1;
	w->oneline[w->depth] = 0;
}

static void close_(struct vrt_json *w, char c)
{
	int empty = w->first[w->depth], oneline = w->oneline[w->depth];
	if (w->depth > 0)
		w->depth--;
	if (!empty && !oneline)
		indent(w);
	fputc(c, w->f);
}

void vrt_json_begin_object(struct vrt_json *w)
{
	open_(w, '{');
}

void vrt_json_end_object(struct vrt_json *w)
{
	close_(w, '}');
}

void vrt_json_begin_array(struct vrt_json *w)
{
	open_(w, '[');
}

void vrt_json_begin_array_oneline(struct vrt_json *w)
{
	open_(w, '[');
	w->oneline[w->depth] = 1;
}

void vrt_json_end_array(struct vrt_json *w)
{
	close_(w, ']');
}

/* Length of a valid UTF-8 sequence at s (of n bytes), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF. */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) ||
	    (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static void write_string(FILE *f, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	fputc('"', f);
	while (i < n) {
		unsigned char c = s[i];
		size_t l;
		switch (c) {
		case '"':
			fputs("\\\"", f);
			i++;
			continue;
		case '\\':
			fputs("\\\\", f);
			i++;
			continue;
		case '\n':
			fputs("\\n", f);
			i++;
			continue;
		case '\r':
			fputs("\\r", f);
			i++;
			continue;
		case '\t':
			fputs("\\t", f);
			i++;
			continue;
		case '\b':
			fputs("\\b", f);
			i++;
			continue;
		case '\f':
			fputs("\\f", f);
			i++;
			continue;
		}
		if (c < 0x20 || c == 0x7f) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		l = utf8_len(s + i, n - i);
		if (!l) {
			fputs("\\ufffd", f);
			i++;
			continue;
		}
		fwrite(s + i, 1, l, f);
		i += l;
	}
	fputc('"', f);
}

void vrt_json_key(struct vrt_json *w, const char *key)
{
	before_value(w);
	write_string(w->f, key, strlen(key));
	fputs(": ", w->f);
	w->after_key = 1;
}

void vrt_json_string(struct vrt_json *w, const char *s)
{
	if (!s) {
		vrt_json_null(w);
		return;
	}
	vrt_json_string_n(w, s, strlen(s));
}

void vrt_json_string_n(struct vrt_json *w, const char *s, size_t n)
{
	before_value(w);
	write_string(w->f, s, n);
}

/* v in decimal, written straight: a timeline is tens of thousands of
 * numbers, and fprintf parses its format for each one. */
static void put_uint(FILE *f, uint64_t v)
{
	char buf[24];
	size_t n = sizeof(buf);

	do {
		buf[--n] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite(buf + n, 1, sizeof(buf) - n, f);
}

void vrt_json_uint(struct vrt_json *w, uint64_t v)
{
	before_value(w);
	put_uint(w->f, v);
}

void vrt_json_int(struct vrt_json *w, int64_t v)
{
	before_value(w);
	fprintf(w->f, "%" PRId64, v);
}

void vrt_json_bool(struct vrt_json *w, int v)
{
	before_value(w);
	fputs(v ? "true" : "false", w->f);
}

void vrt_json_key_uint(struct vrt_json *w, const char *key, uint64_t v)
{
	vrt_json_key(w, key);
	vrt_json_uint(w, v);
}

void vrt_json_key_uint_or_null(struct vrt_json *w, const char *key, int have,
                               uint64_t v)
{
	vrt_json_key(w, key);
	if (have)
		vrt_json_uint(w, v);
	else
		vrt_json_null(w);
}

void vrt_json_null(struct vrt_json *w)
{
	before_value(w);
	fputs("null", w->f);
}

void vrt_json_seconds(struct vrt_json *w, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	uint64_t r = a % 1000000000u;
	char frac[9];
	int len = 9, i;

	before_value(w);
	for (i = 8; i >= 0; i--) {
		frac[i] = (char)('0' + r % 10);
		r /= 10;
	}
	while (len > 1 && frac[len - 1] == '0')
		len--;
	if (ns < 0)
		fputc('-', w->f);
	put_uint(w->f, a / 1000000000u);
	fputc('.', w->f);
	fwrite(frac, 1, (size_t)len, w->f);
}

/* RFC 8259 number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int is_number(const char *s)
{
	const char *p = s;

	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return 0;
	if (*p == '.') {
		if (!(*++p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return 0;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return *p == '\0' && p - s < 64;
}

void vrt_json_number_text(struct vrt_json *w, const char *s)
{
	if (!s) {
		vrt_json_null(w);
	} else if (is_number(s)) {
		before_value(w);
		fputs(s, w->f);
	} else {
		vrt_json_string(w, s);
	}
}

void vrt_json_finish(struct vrt_json *w)
{
	fputc('\n', w->f);
}
