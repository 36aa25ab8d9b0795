/*
 * wallclock.c — trace times as UTC (wallclock.h). The offset comes from
 * the clock pair of the run's earliest process: its HEADER read the wall
 * and monotonic clocks together, and every other process's times are
 * already on that monotonic clock (a multi-host run is aligned by load.c
 * through the same pairs, so the offset is the same for all of them).
 * Pure; no globals.
 */
#include "wallclock.h"

#include <stdio.h>
#include <string.h>

/* The process whose clock pair converts: the earliest with a wall clock. */
static const struct vrt_process *ref_proc(const struct vrt_trace *t)
{
	const struct vrt_process *best = NULL;
	size_t i;

	for (i = 0; t && i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		if (p->start_wall_ns <= 0)
			continue;
		if (!best || p->start_mono_ns < best->start_mono_ns)
			best = p;
	}
	return best;
}

int vrt_wallclock_known(const struct vrt_trace *t)
{
	return ref_proc(t) != NULL;
}

int64_t vrt_wallclock_utc(const struct vrt_trace *t, int64_t ts)
{
	const struct vrt_process *p = ref_proc(t);

	if (!p)
		return 0;
	return p->start_wall_ns + (ts - p->start_mono_ns);
}

int64_t vrt_wallclock_mono(const struct vrt_trace *t, int64_t wall_ns)
{
	const struct vrt_process *p = ref_proc(t);

	if (!p)
		return 0;
	return p->start_mono_ns + (wall_ns - p->start_wall_ns);
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
 * days_from_civil), so no time zone or libc state is involved. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

int64_t vrt_wallclock_timegm(int year, int mon, int day, int hour, int min,
                             int sec)
{
	if (year < 1900 || year > 9999 || mon < 1 || mon > 12 || day < 1 ||
	    day > 31 || hour < 0 || hour > 23 || min < 0 || min > 59 ||
	    sec < 0 || sec > 60)
		return INT64_MIN;
	return days_from_civil(year, (unsigned)mon, (unsigned)day) * 86400 +
	       hour * 3600 + min * 60 + sec;
}

const char *vrt_wallclock_format(char *buf, size_t n, int64_t wall_ns,
                                 int digits)
{
	int64_t sec = wall_ns / 1000000000, frac = wall_ns % 1000000000;
	int64_t days, rem;
	unsigned m, d;
	int y;

	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	days = sec / 86400;
	rem = sec % 86400;
	if (rem < 0) {
		rem += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	if (digits == 3)
		snprintf(buf, n, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", y, m, d,
		         (int)(rem / 3600), (int)(rem / 60 % 60),
		         (int)(rem % 60), (int)(frac / 1000000));
	else if (digits == 6)
		snprintf(buf, n, "%04d-%02u-%02uT%02d:%02d:%02d.%06dZ", y, m, d,
		         (int)(rem / 3600), (int)(rem / 60 % 60),
		         (int)(rem % 60), (int)(frac / 1000));
	else if (digits == 9)
		snprintf(buf, n, "%04d-%02u-%02uT%02d:%02d:%02d.%09dZ", y, m, d,
		         (int)(rem / 3600), (int)(rem / 60 % 60),
		         (int)(rem % 60), (int)frac);
	else
		snprintf(buf, n, "%04d-%02u-%02uT%02d:%02d:%02dZ", y, m, d,
		         (int)(rem / 3600), (int)(rem / 60 % 60),
		         (int)(rem % 60));
	return buf;
}

/* n decimal digits at s as a number, -1 when one is not a digit. */
static int digits_at(const char *s, int n)
{
	int v = 0, i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

size_t vrt_wallclock_parse(const char *s, size_t len, int64_t *wall_ns)
{
	int y, mo, d, h, mi, se;
	int64_t sec, frac = 0, scale = 100000000;
	size_t i = 19;

	if (len < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
	    s[13] != ':' || s[16] != ':')
		return 0;
	y = digits_at(s, 4);
	mo = digits_at(s + 5, 2);
	d = digits_at(s + 8, 2);
	h = digits_at(s + 11, 2);
	mi = digits_at(s + 14, 2);
	se = digits_at(s + 17, 2);
	if (y < 0 || mo < 0 || d < 0 || h < 0 || mi < 0 || se < 0)
		return 0;
	if (s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
			frac += (s[i] - '0') * scale;
			scale /= 10;
		}
		if (i == 20 || i > 29)
			return 0;
	}
	if (i >= len || s[i] != 'Z')
		return 0;
	sec = vrt_wallclock_timegm(y, mo, d, h, mi, se);
	/* nanoseconds since 1970 in 64 bits: years up to 2262 */
	if (sec == INT64_MIN || sec < 0 || sec > INT64_MAX / 1000000000 - 1)
		return 0;
	*wall_ns = sec * 1000000000 + frac;
	return i + 1;
}
