/*
 * enginelog_scan.c — the pattern language the engines' sentences are
 * read with (enginelog.c's opening says it: literal text, %f %u %z %w %*
 * and blanks), the numbers and sizes it reads, and the text helpers the
 * parts share; the quick tests of a message's byte pairs, which spare
 * most searches in lines no rule reads, are inline in
 * enginelog_internal.h. Pure; single-threaded per log.
 */
#include "enginelog_internal.h"

#include <stdint.h>
#include <string.h>

/* ---- the pattern scanner --------------------------------------------- */

/* A decimal at s (sign allowed when sign, thousands commas when commas);
 * returns the bytes read (0: none), the value and half its last digit. */
size_t vrt_enginelog_scan_number(const char *s, int sign, int commas, double *v,
                                 double *tol)
{
	size_t i = 0;
	double x = 0, scale = 1;
	int neg = 0, digits = 0;

	if (sign && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	for (;; i++) {
		if (vrt_enginelog_scan_digit(s[i])) {
			x = x * 10 + (s[i] - '0');
			digits++;
		} else if (commas && s[i] == ',' && digits &&
		           vrt_enginelog_scan_digit(s[i + 1]) &&
		           vrt_enginelog_scan_digit(s[i + 2]) &&
		           vrt_enginelog_scan_digit(s[i + 3]) &&
		           !vrt_enginelog_scan_digit(s[i + 4])) {
			continue;
		} else {
			break;
		}
	}
	if (!digits)
		return 0;
	if (s[i] == '.' && vrt_enginelog_scan_digit(s[i + 1]))
		for (i++; vrt_enginelog_scan_digit(s[i]); i++) {
			scale /= 10;
			x += (s[i] - '0') * scale;
		}
	if (digits > 18)
		return 0;
	*v = neg ? -x : x;
	*tol = scale / 2;
	return i;
}

/* A size with its unit at s: bytes and half its last digit in bytes.
 * Engines that print "GB" mean GiB (vLLM, SGLang divide by 2^30). */
static size_t size_at(const char *s, double *bytes, double *tol)
{
	static const struct {
		const char *unit;
		double mul;
	} units[] = {{"GiB", GIB},  {"MiB", MIB},  {"KiB", 1024.0},
	             {"TiB", GIB * 1024.0}, {"GB", GIB}, {"MB", MIB},
	             {"KB", 1024.0}, {"bytes", 1}, {"B", 1}};
	double v, t;
	size_t i = vrt_enginelog_scan_number(s, 0, 1, &v, &t), k;

	if (!i)
		return 0;
	while (vrt_enginelog_scan_blank(s[i]))
		i++;
	for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		size_t n = strlen(units[k].unit);
		if (!strncmp(s + i, units[k].unit, n) &&
		    !(s[i + n] >= 'a' && s[i + n] <= 'z')) {
			*bytes = v * units[k].mul;
			*tol = t * units[k].mul + 1;
			return i + n;
		}
	}
	return 0;
}

size_t vrt_enginelog_scan_word(const char *s, char *out, size_t n)
{
	size_t i = 0;

	while (s[i] && !vrt_enginelog_scan_blank(s[i]) && s[i] != ',' &&
	       s[i] != ':' && s[i] != ';' && s[i] != ')' && s[i] != '(') {
		if (i + 1 < n)
			out[i] = s[i];
		i++;
	}
	out[i < n ? i : n - 1] = '\0';
	return i;
}

/* Matches pattern p against the text at s, exactly from s. */
int vrt_enginelog_scan_match(const char *s, const char *p, struct cap *c)
{
	while (*p) {
		if (*p == ' ') {
			if (!vrt_enginelog_scan_blank(*s))
				return 0;
			while (vrt_enginelog_scan_blank(*s))
				s++;
			p++;
			continue;
		}
		if (*p != '%') {
			if (*s != *p)
				return 0;
			s++;
			p++;
			continue;
		}
		p++;
		if (*p == '*') {
			/* Lazily: the shortest skip that lets the rest match.
			 */
			int nv = c->nv, nw = c->nw;
			for (;; s++) {
				c->nv = nv;
				c->nw = nw;
				if (vrt_enginelog_scan_match(s, p + 1, c))
					return 1;
				if (!*s)
					return 0;
			}
		}
		if (*p == '_') {
			/* optional blanks ("%6u" pads with spaces) */
			while (vrt_enginelog_scan_blank(*s))
				s++;
			p++;
			continue;
		}
		if (*p == 'w') {
			size_t n;
			if (c->nw >= 2)
				return 0;
			n = vrt_enginelog_scan_word(s, c->w[c->nw],
			                            sizeof(c->w[0]));
			if (!n)
				return 0;
			c->nw++;
			s += n;
		} else {
			size_t n = 0;
			if (c->nv >= SCAN_MAX)
				return 0;
			if (*p == 'f')
				n = vrt_enginelog_scan_number(
				        s, 1, 0, &c->v[c->nv], &c->tol[c->nv]);
			else if (*p == 'u')
				n = vrt_enginelog_scan_number(
				        s, 0, 1, &c->v[c->nv], &c->tol[c->nv]);
			else if (*p == 'z')
				n = size_at(s, &c->v[c->nv], &c->tol[c->nv]);
			if (!n)
				return 0;
			c->nv++;
			s += n;
		}
		p++;
	}
	return 1;
}

/* The rest of vrt_enginelog_scan, once the pattern's literal start (n
 * bytes) may be in msg. */
int vrt_enginelog_scan_from(const char *msg, const char *p, size_t n,
                            struct cap *c)
{
	char lit[VRT_ENGINELOG_SCAN_LIT];
	const char *at;

	memcpy(lit, p, n);
	lit[n] = '\0';
	for (at = msg; (at = strstr(at, lit)); at++) {
		memset(c, 0, sizeof(*c));
		if (vrt_enginelog_scan_match(at, p, c))
			return 1;
	}
	return 0;
}

/* The number after key (a word boundary before it) in msg. */
int vrt_enginelog_scan_keyval(const char *msg, const char *key, double *v)
{
	size_t n = strlen(key);
	const char *at;
	double tol;

	for (at = msg; (at = vrt_enginelog_scan_find(at, key)); at++) {
		const char *q = at + n;
		if (at > msg &&
		    (vrt_enginelog_scan_digit(at[-1]) ||
		     (at[-1] >= 'a' && at[-1] <= 'z') || at[-1] == '_'))
			continue;
		while (vrt_enginelog_scan_blank(*q) || *q == '"' || *q == '\'')
			q++;
		if (!strncmp(q, "Some(", 5))
			q += 5;
		if (vrt_enginelog_scan_number(q, 0, 1, v, &tol))
			return 1;
	}
	return 0;
}

