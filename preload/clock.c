/*
 * clock.c — the preload's clocks: the stamp of every event, and the
 * monotonic deadlines of the core's bounded waits.
 *
 * Stamps are CLOCK_MONOTONIC nanoseconds. Where the CPU's TSC is invariant
 * (constant_tsc and nonstop_tsc) and the kernel itself reads it, events
 * read the TSC and convert it with (tsc, ns, mult) that the writer thread
 * measures against clock_gettime every pass (vrt_clock_calibrate) and
 * publishes under a sequence counter (vrt_clock_conv.seq: odd while it
 * writes). A reader (vrt_clock_now, inline in clock.h: one per hooked
 * call) that finds the sequence odd, the parameters unset, or older than
 * CLK_STALE_NS of ticks asks clock_gettime instead. A pass re-bases the
 * conversion at a fresh clock_gettime reading, so the error stays within
 * the rate error over one pass (well under a microsecond); tbuf.c keeps a
 * thread's stamps from going backwards (the previous stamp is a floor).
 * With the TSC the writer lowers its watermark by vrt_clock_slack() to
 * cover a TSC read the CPU ran ahead of the tbuf lock.
 *
 * Ownership: vrt_clock_tsc_ok is set once by vrt_clock_init, before any
 * thread records, and read-only after. The conversion is written only by
 * the writer thread, inside its pass (under writer.c's pass_mu, which
 * fork waits for, so a child never inherits it half written); the anchor
 * is the writer's alone.
 *
 * Bounded waits: condition variables of the core wait on CLOCK_MONOTONIC
 * (vrt_clock_cond_init), so a wall clock step cannot stretch them.
 */
#include "clock.h"

#include <fcntl.h>
#include <string.h>

#define CLK_STALE_NS  1000000000ull /* extrapolate the TSC this far at most */
#define CLK_WINDOW_NS 1000000000ull /* rate measured over about this */
#define CLK_MIN_NS    10000000ull   /* and never over less */
#define CLK_SLACK_NS  2000ull

static pthread_condattr_t mono_attr;

#if defined(__x86_64__)
int vrt_clock_tsc_ok;
struct vrt_clock_conv vrt_clock_conv;
static uint64_t anchor_tsc, anchor_ns; /* writer only */

/* Whether the file's first bytes contain every word of want (each
 * preceded by a space or the start of a line). */
static int file_has(const char *path, const char *const *want, int nwant)
{
	char buf[16384];
	struct vrt_fd fd = vrt_fds_open(path, O_RDONLY, 0);
	if (fd.fd < 0)
		return -1;
	ssize_t n = vrt_fds_read(fd, buf, sizeof(buf) - 1);
	vrt_fds_close(&fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	for (int i = 0; i < nwant; i++) {
		size_t l = strlen(want[i]);
		const char *p = buf;
		int found = 0;
		while ((p = strstr(p, want[i]))) {
			if ((p == buf || p[-1] == ' ' || p[-1] == '\n') &&
			    (p[l] == ' ' || p[l] == '\n' || p[l] == 0)) {
				found = 1;
				break;
			}
			p += l;
		}
		if (!found)
			return 0;
	}
	return 1;
}

/* The TSC is used only where it ticks at one rate in every power state
 * and the kernel's own clock is built on it (so both agree). */
static void tsc_init(void)
{
	static const char *const flags[] = {"constant_tsc", "nonstop_tsc"};
	static const char *const sources[] = {"tsc", "kvm-clock",
	                                      "hyperv_clocksource_tsc_page"};
	vrt_clock_tsc_ok = 0;
	if (file_has("/proc/cpuinfo", flags, 2) != 1)
		return;
	int src = 0;
	for (int i = 0; i < 3 && src != 1; i++)
		src = file_has("/sys/devices/system/clocksource/clocksource0/"
		               "current_clocksource",
		               &sources[i], 1);
	if (src == 0)
		return; /* hpet, acpi_pm...: the kernel distrusts the TSC */
	vrt_clock_tsc_ok = 1;
}

/* One (tsc, ns) pair read as close together as we can: the tightest of
 * three tries, the TSC taken mid-way. */
static void clock_pair(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	*tsc = *ns = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t a = __builtin_ia32_rdtsc();
		uint64_t n = vrt_clock_mono_ns();
		uint64_t b = __builtin_ia32_rdtsc();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ns = n;
		}
	}
}

void vrt_clock_calibrate(void)
{
	if (!vrt_clock_tsc_ok)
		return;
	uint64_t tsc, ns;
	clock_pair(&tsc, &ns);
	if (!anchor_ns || ns < anchor_ns || tsc <= anchor_tsc) {
		anchor_tsc = tsc;
		anchor_ns = ns;
		return;
	}
	uint64_t dn = ns - anchor_ns, dt = tsc - anchor_tsc;
	if (dn < CLK_MIN_NS)
		return;
	uint64_t mult = (uint64_t)(((unsigned __int128)dn << 32) / dt);
	/* Odd while writing: readers then ask clock_gettime. Release stores
	 * (no fences: the thread sanitizer does not model them), so a
	 * reader that sees a new field also sees the odd sequence. */
	struct vrt_clock_conv *c = &vrt_clock_conv;
	uint32_t s = atomic_load_explicit(&c->seq, memory_order_relaxed);
	atomic_store_explicit(&c->seq, s + 1, memory_order_relaxed);
	atomic_store_explicit(&c->tsc, tsc, memory_order_release);
	atomic_store_explicit(&c->ns, ns, memory_order_release);
	atomic_store_explicit(&c->mult, mult, memory_order_release);
	atomic_store_explicit(
	        &c->stale,
	        (uint64_t)(((unsigned __int128)CLK_STALE_NS << 32) / mult),
	        memory_order_release);
	atomic_store_explicit(&c->seq, s + 2, memory_order_release);
	if (dn >= CLK_WINDOW_NS) {
		anchor_tsc = tsc;
		anchor_ns = ns;
	}
}

uint64_t vrt_clock_slack(void)
{
	return vrt_clock_tsc_ok ? CLK_SLACK_NS : 0;
}

void vrt_clock_after_fork_child(void)
{
	/* The writer that held these is gone; the parameters stay right
	 * (one machine, one TSC) and the child's writer goes on from them. */
	anchor_ns = 0;
}
#else
static void tsc_init(void)
{
}

void vrt_clock_calibrate(void)
{
}

uint64_t vrt_clock_slack(void)
{
	return 0;
}

void vrt_clock_after_fork_child(void)
{
}
#endif

void vrt_clock_init(void)
{
	tsc_init();
	vrt_clock_calibrate(); /* the first anchor; no thread yet */
	pthread_condattr_init(&mono_attr);
	pthread_condattr_setclock(&mono_attr, CLOCK_MONOTONIC);
}

void vrt_clock_cond_init(pthread_cond_t *cv)
{
	pthread_cond_init(cv, &mono_attr);
}

void vrt_clock_deadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}
