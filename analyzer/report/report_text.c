/*
 * report_text.c — the summary a person reads in ten seconds: the run, the
 * server's readiness and requests in flight, one block per device (families,
 * phases, the peak split by phase), host page-locked memory, the call paths
 * holding each device's peak, marks, then every failed call on its own
 * line. Sizes are binary units with two decimals; times are seconds
 * since the run's first HEADER, whose wall-clock start (UTC) the first
 * line prints. Strings from the trace (exe, argv, device
 * names) are untrusted: control bytes are printed as '?' so a trace cannot
 * drive the terminal.
 */
#include "replay/callpath.h"
#include "diagnose/diagnose.h"
#include "enginelog/logcheck.h"
#include "base/names.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pathname.h"
#include "base/text.h"
#include "load/wallclock.h"

static const char *secs(char *buf, size_t n, const struct vrt_trace *t,
                        int64_t ts)
{
	int64_t d = ts - t->start_ns;
	uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;

	snprintf(buf, n, "%s%" PRIu64 ".%03" PRIu64 "s", d < 0 ? "-" : "",
	         a / 1000000000u, a / 1000000u % 1000u);
	return buf;
}

/* A process's command line from column col on, each argument cut at 60
 * bytes, folded at VRT_TEXT_WIDTH under its start. */
static void cmdline_wrapped(FILE *f, const struct vrt_process *p, size_t col)
{
	char *text = NULL;
	size_t len = 0, j;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return;
	for (j = 0; j < p->argc; j++) {
		if (j)
			fputc(' ', m);
		vrt_text_put_safe(m, p->argv[j], 60);
	}
	if (!p->argc)
		vrt_text_put_safe(m, p->exe, 60);
	if (!fclose(m))
		vrt_text_put_wrapped(f, text, col, col < 44 ? col : 8,
		                     VRT_TEXT_WIDTH);
	free(text);
}

static void run_summary(FILE *f, const struct vrt_trace *t)
{
	char b[32];
	size_t i, ntrunc = 0, nrunning = 0;

	fprintf(f, "run: %zu process%s, %" PRIu64 " event%s over %s",
	        t->nprocs, t->nprocs == 1 ? "" : "es", vrt_load_events(t),
	        vrt_load_events(t) == 1 ? "" : "s",
	        secs(b, sizeof(b), t, t->end_ns));
	if (t->nhosts > 1)
		fprintf(f, ", %zu hosts", t->nhosts);
	if (vrt_wallclock_known(t)) {
		char w[VRT_WALLCLOCK_TEXT];
		fprintf(f, "; started %s",
		        vrt_wallclock_format(w, sizeof(w),
		                             vrt_wallclock_utc(t, t->start_ns),
		                             3));
	}
	fputc('\n', f);
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		size_t col = (size_t)fprintf(f, "  pid %-7" PRIu64 " ", p->pid);
		if (t->nhosts > 1) {
			vrt_text_put_safe(f, p->host, 24);
			fputc(' ', f);
			col += strnlen(p->host ? p->host : "", 24) + 1;
		}
		if (p->exit_kind == VRT_EXIT_CODE)
			snprintf(b, sizeof(b), "exit %d", p->exit_code);
		else if (p->exit_kind == VRT_EXIT_SIGNAL)
			snprintf(b, sizeof(b), "signal %d", p->exit_code);
		else
			snprintf(b, sizeof(b), "exit ?");
		col += (size_t)fprintf(f, "%-10s %8" PRIu64 " event%s  ", b,
		                       p->events, p->events == 1 ? " " : "s");
		cmdline_wrapped(f, p, col);
		if (p->events_dropped)
			fprintf(f, "  (%" PRIu64 " events dropped)",
			        p->events_dropped);
		if (p->running) {
			fputs("  [still running]", f);
			nrunning++;
		} else if (p->truncated) {
			fputs("  [truncated: ", f);
			vrt_text_put_safe(f, p->trunc_reason, 160);
			fputc(']', f);
			ntrunc++;
		}
		fputc('\n', f);
	}
	if (nrunning)
		fprintf(f,
		        "STILL RECORDING: %zu of %zu processes are still "
		        "running; numbers cover what they had written so far "
		        "(VRAMTRACE_FLUSH_MS, 100 ms by default, behind).\n",
		        nrunning, t->nprocs);
	if (ntrunc)
		fprintf(f,
		        "TRUNCATED: %zu of %zu processes did not end cleanly; "
		        "numbers cover what was recorded.\n",
		        ntrunc, t->nprocs);
}

static void server(FILE *f, const struct vrt_trace *t,
                   const struct vrt_replay *r)
{
	char b[32], b2[32];

	if (r->have_server_ready)
		fprintf(f,
		        "server listening: %s (pid %" PRIu64 ", port %" PRIu64
		        ")\n",
		        secs(b, sizeof(b), t, r->server_ready_ts),
		        t->procs[r->server_ready_proc].pid, r->server_port);
	else
		fprintf(f, "server listening: never (no listen() recorded)\n");
	if (r->have_ready)
		fprintf(f, "server ready: %s (%s)\n",
		        secs(b, sizeof(b), t, r->ready_ts),
		        r->ready_from == VRT_READY_RESPONSE
		                ? "the first request answered 2xx"
		                : "the load phases ended, then a client "
		                  "connected");
	else if (r->have_server_ready)
		fprintf(f, "server ready: not seen (no request answered 2xx; "
		           "probes do not count)\n");
	int attached = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		attached |= t->procs[i].attached;
	if (r->have_recording_start)
		fprintf(f, "recording began at %s (%s: what was live then "
		           "came from a snapshot)\n",
		        secs(b, sizeof(b), t, r->recording_start_ts),
		        attached ? "vramtrace attach, into a process that ran "
		                   "without the preload"
		                 : "standby before");
	if (!r->connections && !r->requests && !r->probe_requests) {
		fprintf(f, "requests: none recorded\n");
		return;
	}
	/* One sentence folded at the prose width (it grows with what the
	 * run's protocols made of its connections). */
	char line[1024], tb[32];
	size_t n = 0;
#define APPEND(...)                                                            \
	do {                                                                   \
		if (n < sizeof(line))                                          \
			n += (size_t)snprintf(line + n, sizeof(line) - n,       \
			                      __VA_ARGS__);                    \
	} while (0)
	APPEND("requests: at most %" PRIu32 " in flight", r->max_inflight);
	if (r->max_inflight)
		APPEND(" (at %s)", secs(tb, sizeof(tb), t, r->max_inflight_ts));
	APPEND("; %" PRIu64 " connection%s, %" PRIu64 " HTTP request%s, "
	       "%" PRIu64 " annotated request%s",
	       r->connections, r->connections == 1 ? "" : "s",
	       r->http_requests, r->http_requests == 1 ? "" : "s",
	       r->requests, r->requests == 1 ? "" : "s");
	if (r->stream_requests)
		APPEND(" (%" PRIu64 " of them HTTP/2 stream%s)",
		       r->stream_requests, r->stream_requests == 1 ? "" : "s");
	if (r->inferred_requests)
		APPEND("; %" PRIu64 " inferred from turn-taking (a protocol "
		       "that cannot be read: counts are estimates)",
		       r->inferred_requests);
	if (r->probe_requests)
		APPEND("; %" PRIu64 " probe%s (health, readiness, metrics: "
		       "counted apart)",
		       r->probe_requests, r->probe_requests == 1 ? "" : "s");
	if (r->uncounted_connections)
		APPEND("; %" PRIu64 " connection%s whose requests could not "
		       "be counted",
		       r->uncounted_connections,
		       r->uncounted_connections == 1 ? "" : "s");
	if (r->forwarded_requests && r->forwarded_from_pid)
		APPEND("; %" PRIu64 " forwarded from PID %" PRIu64 " to PID "
		       "%" PRIu64 " (a hop inside the run: not counted again)",
		       r->forwarded_requests, r->forwarded_from_pid,
		       r->forwarded_proc_pid);
	else if (r->forwarded_requests)
		APPEND("; %" PRIu64 " forwarded to PID %" PRIu64 " (a back end "
		       "behind the server: not counted again)",
		       r->forwarded_requests, r->forwarded_proc_pid);
	vrt_text_put_wrapped(f, line, 0, 2, VRT_TEXT_WIDTH);
	fputc('\n', f);
	if (r->npaths) {
		size_t i, shown = 0;
		n = 0;
		APPEND("request paths:");
		for (i = 0; i < r->npaths && shown < 6; i++) {
			const struct vrt_replay_path *p = &r->paths[i];
			const char *text = p->text ? vrt_load_str(t, p->text)
			                           : NULL;
			char safe[72];
			if (!text)
				continue;
			vrt_text_copy_safe(safe, sizeof(safe), text);
			APPEND("%s%s x%" PRIu64 "%s", shown ? ", " : " ", safe,
			       p->requests, p->probe ? " (probe)" : "");
			shown++;
		}
		if (!shown)
			APPEND(" (not read)");
		vrt_text_put_wrapped(f, line, 0, 2, VRT_TEXT_WIDTH);
		fputc('\n', f);
	}
#undef APPEND
	if (r->serving)
		fprintf(f, "serving from: %s (the first request)\n",
		        secs(b, sizeof(b), t, r->serving_ts));
	if (r->have_single_request)
		fprintf(f,
		        "single-request peak: %s on device %d at %s (growth "
		        "while one request was in flight alone)\n",
		        vrt_text_bytes(b, sizeof(b),
		                       r->single_request_peak_bytes, 2),
		        r->single_request_peak_device,
		        secs(b2, sizeof(b2), t, r->single_request_peak_ts));
	else
		fprintf(f, "single-request peak: never one request in flight "
		           "alone\n");
}

static void table_head(FILE *f)
{
	fprintf(f, "  %-11s %8s %8s %7s %12s %10s %12s\n", "family", "allocs",
	        "frees", "failed", "peak", "at", "live at end");
}

static void table_row(FILE *f, const struct vrt_trace *t, const char *name,
                      const struct vrt_counters *c)
{
	char b1[32], b2[32], b3[32];

	fprintf(f,
	        "  %-11s %8" PRIu64 " %8" PRIu64 " %7" PRIu64
	        " %12s %10s %12s\n",
	        name, c->allocs, c->frees, c->failed,
	        vrt_text_bytes(b1, sizeof(b1), c->peak_bytes, 2),
	        c->peak_bytes ? secs(b2, sizeof(b2), t, c->peak_ts) : "-",
	        vrt_text_bytes(b3, sizeof(b3), c->live_bytes, 2));
}

static int used(const struct vrt_counters *c)
{
	return c->allocs || c->frees || c->failed || c->peak_bytes;
}

/* The phase table: as the family table, with room for longer names. */
static void phase_table(FILE *f, const struct vrt_trace *t,
                        const struct vrt_replay_device *d)
{
	char b1[32], b2[32], b3[32], pb[32];
	unsigned k;

	fprintf(f, "  %-20s %8s %8s %7s %12s %10s %12s\n", "phase", "allocs",
	        "frees", "failed", "peak", "at", "live at end");
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		const struct vrt_counters *c = &d->phase[k];
		const char *name;
		size_t w;
		if (!used(c))
			continue;
		name = vrt_load_phase_name(t, k, pb, sizeof(pb));
		w = strnlen(name, 20);
		fputs("  ", f);
		vrt_text_put_safe(f, name, 20);
		fprintf(f,
		        "%*s %8" PRIu64 " %8" PRIu64 " %7" PRIu64
		        " %12s %10s %12s\n",
		        (int)(20 - w), "", c->allocs, c->frees, c->failed,
		        vrt_text_bytes(b1, sizeof(b1), c->peak_bytes, 2),
		        c->peak_bytes ? secs(b2, sizeof(b2), t, c->peak_ts)
		                      : "-",
		        vrt_text_bytes(b3, sizeof(b3), c->live_bytes, 2));
	}
}

static void device(FILE *f, const struct vrt_trace *t,
                   const struct vrt_replay *r, size_t i)
{
	const struct vrt_device *dv = &t->devices[i];
	const struct vrt_replay_device *d = &r->dev[i];
	char b1[32], b2[32];
	int fam, any = 0;
	unsigned k;

	fprintf(f, "\ndevice %zu: ", i);
	vrt_text_put_safe(f, dv->name ? dv->name : "(unnamed)", 80);
	fprintf(f, " (");
	if (t->nhosts > 1) {
		vrt_text_put_safe(f, dv->host, 40);
		fputs(", ", f);
	}
	fprintf(f, "ordinal %" PRId64, dv->ordinal);
	if (dv->have_total)
		fprintf(f, ", %s",
		        vrt_text_bytes(b1, sizeof(b1), dv->total_bytes, 2));
	if (dv->uuid[0])
		fprintf(f, ", %s", dv->uuid);
	fprintf(f, ")\n");
	for (fam = 0; fam < VRT_FAM_COUNT; fam++) {
		if (!vrt_replay_family_is_vram(fam) || !used(&d->fam[fam]))
			continue;
		if (!any++)
			table_head(f);
		table_row(f, t, vrt_names_family(fam), &d->fam[fam]);
	}
	if (!any)
		fprintf(f, "  no device memory allocated\n");
	else
		phase_table(f, t, d);
	if (d->peak_bytes) {
		fprintf(f, "  peak %s at %s:",
		        vrt_text_bytes(b1, sizeof(b1), d->peak_bytes, 2),
		        secs(b2, sizeof(b2), t, d->peak_ts));
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
			char pb[32];
			if (!d->peak_by_phase[k])
				continue;
			fputc(' ', f);
			vrt_text_put_safe(
			        f, vrt_load_phase_name(t, k, pb, sizeof(pb)),
			        40);
			fprintf(f, " %s",
			        vrt_text_bytes(b1, sizeof(b1),
			                       d->peak_by_phase[k], 2));
		}
		fprintf(f, "; live at end %s\n",
		        vrt_text_bytes(b1, sizeof(b1), d->tracked_bytes, 2));
		if (d->peak_at_snapshot && r->have_recording_start)
			fprintf(f, "  (the peak is what recording found at its "
			           "start: at least that much before recording "
			           "began)\n");
		else if (d->peak_at_snapshot)
			fprintf(f, "  (the peak is what a snapshot found at %s, "
			           "when recording went on after a stop: at least "
			           "that much while it was stopped)\n",
			        secs(b1, sizeof(b1), t, d->peak_ts));
	}
	if (d->have_baseline)
		fprintf(f, "  used before this run: %s (first probe at %s)\n",
		        vrt_text_bytes(b1, sizeof(b1), d->baseline_used_bytes,
		                       2),
		        secs(b2, sizeof(b2), t, d->baseline_ts));
	if (used(&d->fam[VRT_FAM_VA])) {
		const struct vrt_counters *c = &d->fam[VRT_FAM_VA];
		fprintf(f,
		        "  reserved VA (address space, not memory): %" PRIu64
		        " reserved, %" PRIu64 " freed, %" PRIu64
		        " failed, peak %s, at end %s\n",
		        c->allocs, c->frees, c->failed,
		        vrt_text_bytes(b1, sizeof(b1), c->peak_bytes, 2),
		        vrt_text_bytes(b2, sizeof(b2), c->live_bytes, 2));
	}
}

static void host(FILE *f, const struct vrt_trace *t, const struct vrt_replay *r)
{
	char b[32];

	if (!used(&r->host[VRT_FAM_PINNED]) &&
	    !used(&r->host[VRT_FAM_REGISTERED]))
		return;
	fprintf(f, "\nhost page-locked memory\n");
	table_head(f);
	if (used(&r->host[VRT_FAM_PINNED]))
		table_row(f, t, "pinned", &r->host[VRT_FAM_PINNED]);
	if (used(&r->host[VRT_FAM_REGISTERED]))
		table_row(f, t, "registered", &r->host[VRT_FAM_REGISTERED]);
	fprintf(f, "  pinned + registered peak %s\n",
	        vrt_text_bytes(b, sizeof(b), r->host_pinned_peak, 2));
}

/* Frames shown per site: python frames first (they name the engine's
 * step), then native ones, each innermost first; plumbing (callpath.h)
 * only when nothing else has a name. */
#define SITE_FRAMES 4

static void frame_line(FILE *f, const struct vrt_trace *t,
                       const struct vrt_frame *fr)
{
	const char *fn = vrt_load_str(t, fr->function);
	const char *file = vrt_pathname_base(vrt_load_str(t, fr->file));

	fputs("      ", f);
	if (fn) {
		vrt_text_put_safe(f, fn, 100);
		/* Call sites in one function differ only by offset. */
		if (fr->kind == VRT_FRAME_NATIVE && fr->offset)
			fprintf(f, "+0x%" PRIx64, fr->offset);
	} else if (fr->kind == VRT_FRAME_NATIVE && fr->ip)
		fprintf(f, "0x%" PRIx64, fr->ip);
	else
		fputs("??", f);
	if (file) {
		fputs("  ", f);
		vrt_text_put_safe(f, file, 60);
		if (fr->kind == VRT_FRAME_PYTHON && fr->line)
			fprintf(f, ":%" PRIu64, fr->line);
	}
	fputc('\n', f);
}

static void site_frames(FILE *f, const struct vrt_trace *t, uint32_t stack)
{
	uint32_t fr[256];
	size_t n = vrt_load_stack_frames(t, stack, fr, 256), i, shown = 0;
	int pass;

	if (!n) {
		fputs("      (no stack recorded)\n", f);
		return;
	}
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < n && shown < SITE_FRAMES; i++) {
			const struct vrt_frame *x = &t->frames[fr[i]];
			int py = x->kind == VRT_FRAME_PYTHON;
			if (pass == 2 ? shown || py
			              : py != (pass == 0) ||
			                        vrt_callpath_plumbing(t, x))
				continue;
			frame_line(f, t, x);
			shown++;
		}
	}
	if (n > shown)
		fprintf(f, "      ... %zu more frame%s\n", n - shown,
		        n - shown == 1 ? "" : "s");
}

/* A program that is no server ran out of memory (diagnose.h): what
 * failed, where it was called from and what the device held, first. */
static void program_lead(FILE *f, const struct vrt_trace *t,
                         const struct vrt_replay *r,
                         const struct vrt_diagnosis *dg)
{
	const struct vrt_replay_failure *x = &r->fails[dg->failure];
	const struct vrt_process *p = &t->procs[x->proc];
	const struct vrt_device *dv =
	        x->device >= 0 && (size_t)x->device < t->ndevices
	                ? &t->devices[x->device]
	                : NULL;
	uint32_t fr[256];
	size_t n = vrt_load_stack_frames(t, dg->failing_stack, fr, 256), i;
	size_t shown = 0, left = 0;
	uint64_t live = 0;
	char b1[32], b2[32], b3[32], eb[64];
	unsigned k;

	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		live += x->live_by_phase[k];
	fprintf(f, "OUT OF MEMORY in pid %" PRIu64 " (", p->pid);
	for (i = 0; i < p->argc && i < 4; i++) {
		if (i)
			fputc(' ', f);
		vrt_text_put_safe(f, i ? p->argv[i]
		                       : vrt_pathname_base_or_empty(p->argv[i]),
		                  40);
	}
	fprintf(f, "%s), a program that is not a server\n",
	        p->argc > 4 ? " ..." : "");
	fputs("  ", f);
	vrt_text_put_safe(f, dg->failing_site[0] ? dg->failing_site
	                                         : "a call without a named "
	                                           "frame",
	                  SIZE_MAX);
	fprintf(f, " asked for %s on device %d (%s) at %s: %s\n",
	        vrt_text_bytes(b1, sizeof(b1), x->requested_bytes, 2),
	        (int)x->device, vrt_names_api(x->api, "an allocation"),
	        secs(b2, sizeof(b2), t, x->ts),
	        vrt_names_error(x->api, x->error, eb, sizeof(eb)));
	fprintf(f, "  device %d", (int)x->device);
	if (dv) {
		fputs(" (", f);
		vrt_text_put_safe(f, dv->name ? dv->name : "unnamed", 40);
		if (dv->have_total)
			fprintf(f, ", %s",
			        vrt_text_bytes(b1, sizeof(b1), dv->total_bytes,
			                       2));
		fputc(')', f);
	}
	fprintf(f, " then: %s held by this run",
	        vrt_text_bytes(b1, sizeof(b1), live, 2));
	if (x->have_info)
		fprintf(f, ", %s free of %s (the driver's count)",
		        vrt_text_bytes(b2, sizeof(b2), x->free_bytes, 2),
		        vrt_text_bytes(b3, sizeof(b3), x->total_bytes, 2));
	fputc('\n', f);
	if (!n) {
		fputs("  (no stack recorded)\n\n", f);
		return;
	}
	vrt_callpath_order(t, fr, n);
	fputs("  its stack, innermost first:\n", f);
	for (i = 0; i < n; i++) {
		const struct vrt_frame *y = &t->frames[fr[i]];
		if (vrt_callpath_plumbing(t, y) || shown == 8) {
			left++;
			continue;
		}
		frame_line(f, t, y);
		shown++;
	}
	if (left)
		fprintf(f, "      (%zu frame%s of the interpreter, the runtime "
		           "and libraries left out; --format json has them)\n",
		        left, left == 1 ? "" : "s");
	fputc('\n', f);
}

/* heaptrack_print's "peak memory consumers", per device and phase. */
static void sites(FILE *f, const struct vrt_trace *t,
                  const struct vrt_replay *r)
{
	size_t i;
	int32_t dev = -1;
	int any = 0;

	for (i = 0; i < r->nsites; i++)
		any |= r->sites[i].stack != 0;
	if (!any)
		return;
	fprintf(f,
	        "\ntop allocation sites at each device's peak (largest "
	        "first, %d per phase)\n",
	        VRT_REPLAY_TOP_SITES);
	for (i = 0; i < r->nsites; i++) {
		const struct vrt_replay_site *x = &r->sites[i];
		char b1[32], b2[32], pb[32];
		if (x->device != dev) {
			const struct vrt_replay_device *d = &r->dev[x->device];
			dev = x->device;
			fprintf(f, "device %d: peak %s at %s\n", dev,
			        vrt_text_bytes(b1, sizeof(b1), d->peak_bytes,
			                       2),
			        secs(b2, sizeof(b2), t, d->peak_ts));
		}
		fputs("  ", f);
		vrt_text_put_safe(
		        f, vrt_load_phase_name(t, x->phase, pb, sizeof(pb)),
		        40);
		fprintf(f, "  %s in %" PRIu64 " allocation%s\n",
		        vrt_text_bytes(b1, sizeof(b1), x->bytes, 2), x->allocs,
		        x->allocs == 1 ? "" : "s");
		site_frames(f, t, x->stack);
	}
}

static void marks(FILE *f, const struct vrt_trace *t,
                  const struct vrt_replay *r)
{
	size_t i;

	if (!r->nmarks)
		return;
	fprintf(f, "\nmarks\n");
	for (i = 0; i < r->nmarks; i++) {
		const struct vrt_replay_mark *e = &r->marks[i];
		char b[32];
		fprintf(f, "  %s  pid %" PRIu64 "  ",
		        secs(b, sizeof(b), t, e->ts), t->procs[e->proc].pid);
		vrt_text_put_safe(f, vrt_load_str(t, e->label), 120);
		fputc('\n', f);
	}
}

/* The steps of a load test: one row per window and device, the peak of
 * the device and of each phase that held memory in some window. */
static void windows(FILE *f, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	int show[VRT_REPLAY_MAX_PHASES] = {0};
	size_t i, j;
	unsigned k;

	if (!r->nwindows)
		return;
	for (i = 0; i < r->nwindows; i++)
		for (j = 0; j < r->ndevices; j++)
			for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
				show[k] |=
				        r->windows[i].dev[j].peak_by_phase[k] !=
				        0;
	fprintf(f, "\nwindows (from each mark to the next; peaks per device "
	           "and phase)\n");
	fprintf(f, "  %-20s %9s %9s %9s %5s %4s %11s", "window", "start", "end",
	        "in flight", "ooms", "dev", "peak");
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		char pb[32], name[32];
		if (!show[k])
			continue;
		vrt_text_copy_safe(name, 13,
		                   vrt_load_phase_name(t, k, pb, sizeof(pb)));
		fprintf(f, " %12s", name);
	}
	fputc('\n', f);
	for (i = 0; i < r->nwindows; i++) {
		const struct vrt_replay_window *x = &r->windows[i];
		char label[21], b1[32], b2[32];

		vrt_text_copy_safe(label, sizeof(label),
		                   vrt_load_str(t, x->mark.label));
		fprintf(f, "  %-20s %9s", label,
		        secs(b1, sizeof(b1), t, x->start_ts));
		fprintf(f, " %9s %9" PRIu32 " %5" PRIu64,
		        secs(b2, sizeof(b2), t, x->end_ts), x->max_inflight,
		        x->ooms);
		for (j = 0; j < r->ndevices; j++) {
			if (j)
				fprintf(f, "  %-20s %9s %9s %9s %5s", "", "",
				        "", "", "");
			fprintf(f, " %4zu %11s", j,
			        vrt_text_bytes(b1, sizeof(b1),
			                       x->dev[j].peak_bytes, 2));
			for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
				if (show[k])
					fprintf(f, " %12s",
					        vrt_text_bytes(
					                b1, sizeof(b1),
					                x->dev[j].peak_by_phase
					                        [k],
					                2));
			fputc('\n', f);
		}
		if (!r->ndevices)
			fputc('\n', f);
	}
}

static void failures(FILE *f, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	size_t i;
	int apiw = 0;

	if (!r->nfails) {
		fprintf(f, "\nno failed calls\n");
		return;
	}
	fprintf(f, "\nfailed calls: %zu (%" PRIu64 " out of memory)\n",
	        r->nfails, r->ooms);
	/* the call's column as wide as its longest name; what the failure
	 * meant goes on a line of its own, so rows stay narrow */
	for (i = 0; i < r->nfails; i++) {
		size_t n = strlen(vrt_names_api(r->fails[i].api,
		                                "(unknown api)"));
		if ((int)n > apiw)
			apiw = (int)n;
	}
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		const char *api = vrt_names_api(x->api, "(unknown api)");
		char b1[32], b2[32], b3[32], dev[16];

		if (x->device >= 0)
			snprintf(dev, sizeof(dev), "dev %d", x->device);
		else if (x->family == VRT_FAM_PINNED ||
		         x->family == VRT_FAM_REGISTERED)
			snprintf(dev, sizeof(dev), "host");
		else
			snprintf(dev, sizeof(dev), "dev ?");
		if (x->requested_bytes)
			vrt_text_bytes(b2, sizeof(b2), x->requested_bytes, 2);
		else if (x->addr)
			snprintf(b2, sizeof(b2), "ptr 0x%" PRIx64, x->addr);
		else
			snprintf(b2, sizeof(b2), "-");
		fprintf(f, "  %s  pid %" PRIu64 "  %-6s %-*s %s",
		        secs(b1, sizeof(b1), t, x->ts), t->procs[x->proc].pid,
		        dev, apiw, api, b2);
		fprintf(f, "  %s",
		        vrt_names_error(x->api, x->error, b3, sizeof(b3)));
		if (x->have_info)
			fprintf(f, "  driver: %s free of %s",
			        vrt_text_bytes(b1, sizeof(b1), x->free_bytes,
			                       2),
			        vrt_text_bytes(b2, sizeof(b2), x->total_bytes,
			                       2));
		if (x->oom) {
			char pb[32];
			fprintf(f, "\n      [%s stage, phase ",
			        x->after_ready ? "request" : "load");
			vrt_text_put_safe(f,
			                  vrt_load_phase_name(t, x->phase, pb,
			                                      sizeof(pb)),
			                  40);
			fprintf(f, ", %" PRIu32 " in flight", x->inflight);
			if (x->recovered)
				fprintf(f,
				        "; recovered at %s: %s after %s freed]",
				        secs(b1, sizeof(b1), t,
				             x->recovered_ts),
				        vrt_text_bytes(b2, sizeof(b2),
				                       x->recovered_bytes, 2),
				        vrt_text_bytes(b3, sizeof(b3),
				                       x->freed_bytes, 2));
			else
				fprintf(f, "%s]", x->fatal ? "; fatal" : "");
		}
		fputc('\n', f);
	}
}

void vrt_report_text_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *dg,
                           const struct vrt_logcheck *lc)
{
	size_t i;

	int server_run = !dg || !dg->not_server;

	if (!server_run && dg->failure < r->nfails)
		program_lead(f, t, r, dg);
	if (dg)
		vrt_report_diagnosis_text(f, t, dg);
	if (lc && lc->log_only) {
		/* no trace: what the log said, not a run's tables */
		vrt_report_enginelog_text(f, t, lc);
		return;
	}

	run_summary(f, t);
	/* A program that is no server has no readiness, requests or
	 * engine's log to show. */
	if (server_run) {
		server(f, t, r);
		vrt_report_enginelog_text(f, t, lc);
	}
	for (i = 0; i < t->ndevices && i < r->ndevices; i++)
		device(f, t, r, i);
	host(f, t, r);
	sites(f, t, r);
	marks(f, t, r);
	windows(f, t, r);
	failures(f, t, r);
	if (r->unmatched_frees)
		fprintf(f, "\nfrees of unknown addresses: %" PRIu64 "\n",
		        r->unmatched_frees);
}
