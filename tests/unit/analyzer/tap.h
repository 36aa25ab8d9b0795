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

/* Each side is evaluated once: a call under test runs once. */
#define EQ(a, b, name)                                                         \
	do {                                                                   \
		unsigned long long eq_a_ = (unsigned long long)(a);            \
		unsigned long long eq_b_ = (unsigned long long)(b);            \
		ok(eq_a_ == eq_b_, "%s (got %llu, want %llu)", name, eq_a_,    \
		   eq_b_);                                                     \
	} while (0)

#endif /* VRT_TEST_TAP_H */
