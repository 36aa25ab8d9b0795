/*
 * The TAP output of the analyzer's unit tests: ok() prints one numbered
 * result, EQ compares two integers and shows both; main prints the plan
 * "1..ntests" at the end and exits non-zero when nfailed. Included by one
 * test program each (its state is the program's own).
 */
#ifndef VRT_TEST_TAP_H
#define VRT_TEST_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int ntests, nfailed;

__attribute__((format(printf, 2, 3))) static void ok(int cond,
                                                     const char *fmt, ...)
{
	va_list ap;

	ntests++;
	if (!cond)
		nfailed++;
	printf("%s %d - ", cond ? "ok" : "not ok", ntests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

#define EQ(a, b, name)                                                         \
	ok((unsigned long long)(a) == (unsigned long long)(b),                 \
	   "%s (got %llu, want %llu)", name, (unsigned long long)(a),          \
	   (unsigned long long)(b))

#endif /* VRT_TEST_TAP_H */
