/*
 * report_perfetto.c — the run as a Chrome trace event JSON file, which
 * ui.perfetto.dev and chrome://tracing open:
 *
 *   - one process per traced pid (named by its command line) with a slice
 *     for its lifetime and its marks as process-scoped instant events;
 *   - one synthetic process per device ("device 0: NVIDIA L4") holding a
 *     counter track per phase (Perfetto names them "live bytes <phase>"),
 *     from replay's downsampled timeline, and beside each the most and
 *     least the phase held in each of the timeline's buckets ("live bytes
 *     max <phase>", "live bytes min <phase>", from the bucket's start to
 *     its end) once the timeline is downsampled (a bucket wider than a
 *     nanosecond): it keeps a bucket's highest total, so a phase that rose
 *     and fell back while another grew (a profiling run's activations
 *     freed before the KV cache is reserved) shows only there;
 *   - a synthetic "vramtrace run" process with the requests-in-flight
 *     counter;
 *   - global instant events for the server becoming ready and for every
 *     out-of-memory failure (with its numbers as args).
 *
 * Synthetic processes use pids above Linux's pid_max (2^22), so they never
 * collide with a traced one. Timestamps are microseconds since the Unix
 * epoch in UTC (the run's wall clock; since its first HEADER when the
 * trace has none), printed exactly from nanoseconds. One event per line, so
 * the file diffs well.
 */
#include "base/names.h"
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "json.h"
#include "enginelog/logcheck.h"
#include "load/wallclock.h"

#define RUN_PID    1000000000u
#define DEVICE_PID 1000000001u /* + device index */

static void str(FILE *f, const char *s)
{
	struct vrt_json w;

	vrt_json_init(&w, f);
	vrt_json_string(&w, s ? s : "");
}

/* Nanoseconds as exact microseconds: "1030000.000". */
static void us(FILE *f, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	fprintf(f, "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", a / 1000u,
	        a % 1000u);
}

/* A time as microseconds since the Unix epoch (UTC), so the file lines up
 * with logs and other traces of the same moments; since the run's start
 * when the trace carries no wall clock. */
static void ts_us(FILE *f, const struct vrt_trace *t, int64_t ts)
{
	if (vrt_wallclock_known(t))
		us(f, vrt_wallclock_utc(t, ts));
	else
		us(f, ts - t->start_ns);
}

/* Starts an event: {"ph":"<ph>","name":<name>,"pid":P,"tid":P,"ts":T */
static void begin(FILE *f, int *first, const char *ph, const char *name,
                  uint64_t pid)
{
	fputs(*first ? "\n" : ",\n", f);
	*first = 0;
	fprintf(f, "{\"ph\":\"%s\",\"name\":", ph);
	str(f, name);
	fprintf(f, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, pid, pid);
}

static void meta(FILE *f, int *first, uint64_t pid, const char *what,
                 const char *name, int64_t sort_index)
{
	begin(f, first, "M", what, pid);
	fputs(",\"args\":{", f);
	if (name) {
		fputs("\"name\":", f);
		str(f, name);
	} else {
		fprintf(f, "\"sort_index\":%" PRId64, sort_index);
	}
	fputs("}}", f);
}

static void process_label(char *buf, size_t n, const struct vrt_process *p)
{
	size_t len = 0, j;

	buf[0] = '\0';
	for (j = 0; j < p->argc && len + 1 < n; j++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s",
		                        j ? " " : "", p->argv[j]);
	if (!p->argc && p->exe)
		snprintf(buf, n, "%s", p->exe);
}

static void processes(FILE *f, int *first, const struct vrt_trace *t)
{
	char label[256];
	size_t i;

	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		int64_t end = p->has_trailer ? p->end_mono_ns : t->end_ns;
		process_label(label, sizeof(label), p);
		meta(f, first, p->pid, "process_name", label, 0);
		meta(f, first, p->pid, "thread_name", "lifetime", 0);
		begin(f, first, "X", label, p->pid);
		fputs(",\"ts\":", f);
		ts_us(f, t, p->start_mono_ns);
		fputs(",\"dur\":", f);
		us(f, end > p->start_mono_ns ? end - p->start_mono_ns : 0);
		fprintf(f, ",\"args\":{\"events\":%" PRIu64 ",\"truncated\":%s",
		        p->events, p->truncated ? "true" : "false");
		if (p->exit_kind == VRT_EXIT_CODE)
			fprintf(f, ",\"exit_status\":%d", p->exit_code);
		else if (p->exit_kind == VRT_EXIT_SIGNAL)
			fprintf(f, ",\"exit_signal\":%d", p->exit_code);
		fputs("}}", f);
	}
}

static int phase_used(const struct vrt_counters *c)
{
	return c->allocs || c->frees || c->peak_bytes;
}

/* One "C" event named name: every used phase of device i, its bytes from
 * v (NULL: zero). */
static void counter(FILE *f, int *first, const struct vrt_trace *t,
                    const struct vrt_replay_device *d, size_t i,
                    const char *name, int64_t ts, const uint64_t *v)
{
	char pb[32];
	unsigned k;
	int any = 0;

	begin(f, first, "C", name, DEVICE_PID + i);
	fputs(",\"ts\":", f);
	ts_us(f, t, ts);
	fputs(",\"args\":{", f);
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (!phase_used(&d->phase[k]))
			continue;
		fputs(any++ ? "," : "", f);
		str(f, vrt_load_phase_name(t, (unsigned)k, pb, sizeof(pb)));
		fprintf(f, ":%" PRIu64, v ? v[k] : 0);
	}
	fputs("}}", f);
}

/* The most and least of each phase per bucket of device i's timeline:
 * from a bucket's start, its range; at its end, when no bucket follows
 * at once, the state then (the device's last point before it), which
 * holds until the next bucket that changed. */
static void bucket_counters(FILE *f, int *first, const struct vrt_trace *t,
                            const struct vrt_replay *r, size_t i)
{
	const struct vrt_replay_device *d = &r->dev[i];
	int64_t w = r->series_bucket_ns;
	size_t j, p = 0;

	counter(f, first, t, d, i, "live bytes max", t->start_ns, NULL);
	counter(f, first, t, d, i, "live bytes min", t->start_ns, NULL);
	for (j = 0; j < d->nranges; j++) {
		const struct vrt_replay_range *g = &d->ranges[j];
		int64_t end = g->start_ts + w;
		counter(f, first, t, d, i, "live bytes max", g->start_ts,
		        g->max_by_phase);
		counter(f, first, t, d, i, "live bytes min", g->start_ts,
		        g->min_by_phase);
		if (j + 1 < d->nranges && d->ranges[j + 1].start_ts <= end)
			continue;
		if (end > t->end_ns)
			continue; /* the last bucket holds to the end */
		while (p + 1 < d->nseries && d->series[p + 1].ts < end)
			p++;
		counter(f, first, t, d, i, "live bytes max", end,
		        d->series[p].by_phase);
		counter(f, first, t, d, i, "live bytes min", end,
		        d->series[p].by_phase);
	}
}

static void devices(FILE *f, int *first, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	char label[256];
	size_t i, j;

	for (i = 0; i < t->ndevices && i < r->ndevices; i++) {
		const struct vrt_device *dv = &t->devices[i];
		const struct vrt_replay_device *d = &r->dev[i];
		if (!d->nseries)
			continue;
		snprintf(label, sizeof(label), "device %zu: %s%s%s", i,
		         dv->name ? dv->name : "(unnamed)",
		         t->nhosts > 1 ? " on " : "",
		         t->nhosts > 1 && dv->host ? dv->host : "");
		meta(f, first, DEVICE_PID + i, "process_name", label, 0);
		meta(f, first, DEVICE_PID + i, "process_sort_index", NULL,
		     (int64_t)i - 1000);
		counter(f, first, t, d, i, "live bytes", t->start_ns, NULL);
		for (j = 0; j < d->nseries; j++)
			counter(f, first, t, d, i, "live bytes",
			        d->series[j].ts, d->series[j].by_phase);
		/* Hold the last value to the end of the run. */
		if (d->series[d->nseries - 1].ts < t->end_ns)
			counter(f, first, t, d, i, "live bytes", t->end_ns,
			        d->series[d->nseries - 1].by_phase);
		if (r->series_bucket_ns > 1)
			bucket_counters(f, first, t, r, i);
	}
}

static void inflight(FILE *f, int *first, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	size_t i;

	meta(f, first, RUN_PID, "process_name", "vramtrace run", 0);
	meta(f, first, RUN_PID, "process_sort_index", NULL, -2000);
	if (!r->connections && !r->requests)
		return;
	begin(f, first, "C", "requests in flight", RUN_PID);
	fputs(",\"ts\":", f);
	ts_us(f, t, t->start_ns);
	fputs(",\"args\":{\"requests\":0}}", f);
	for (i = 0; i < r->ninflight_series; i++) {
		begin(f, first, "C", "requests in flight", RUN_PID);
		fputs(",\"ts\":", f);
		ts_us(f, t, r->inflight_series[i].ts);
		fprintf(f, ",\"args\":{\"requests\":%" PRIu32 "}}",
		        r->inflight_series[i].inflight);
	}
}

static void instants(FILE *f, int *first, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	char pb[32], eb[32];
	size_t i;

	if (r->have_server_ready) {
		begin(f, first, "i", "server listening",
		      t->procs[r->server_ready_proc].pid);
		fputs(",\"s\":\"g\",\"ts\":", f);
		ts_us(f, t, r->server_ready_ts);
		fprintf(f, ",\"args\":{\"port\":%" PRIu64 "}}", r->server_port);
	}
	if (r->have_ready) {
		begin(f, first, "i", "server ready",
		      t->procs[r->have_server_ready ? r->server_ready_proc : 0]
		              .pid);
		fputs(",\"s\":\"g\",\"ts\":", f);
		ts_us(f, t, r->ready_ts);
		fprintf(f, ",\"args\":{\"from\":\"%s\"}}",
		        r->ready_from == VRT_READY_RESPONSE ? "response"
		                                            : "load_end");
	}
	for (i = 0; i < r->nmarks; i++) {
		const struct vrt_replay_mark *e = &r->marks[i];
		const char *label = vrt_load_str(t, e->label);
		begin(f, first, "i", label ? label : "", t->procs[e->proc].pid);
		fputs(",\"s\":\"p\",\"cat\":\"mark\",\"ts\":", f);
		ts_us(f, t, e->ts);
		fputs("}", f);
	}
	for (i = 0; i < r->nfails; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		const char *api = vrt_names_api(x->api, "(unknown api)");
		if (!x->oom)
			continue;
		begin(f, first, "i", "out of memory", t->procs[x->proc].pid);
		fputs(",\"s\":\"g\",\"cat\":\"oom\",\"ts\":", f);
		ts_us(f, t, x->ts);
		fprintf(f, ",\"args\":{\"device\":%" PRId32 ",\"api\":",
		        x->device >= 0 ? x->device : -1);
		str(f, api);
		fprintf(f, ",\"requested_bytes\":%" PRIu64, x->requested_bytes);
		if (x->have_info)
			fprintf(f,
			        ",\"free_bytes\":%" PRIu64
			        ",\"total_bytes\":%" PRIu64,
			        x->free_bytes, x->total_bytes);
		fputs(",\"error\":", f);
		str(f, vrt_names_error(x->api, x->error, eb, sizeof(eb)));
		fprintf(f, ",\"stage\":\"%s\",\"phase\":",
		        x->after_ready ? "request" : "load");
		str(f, vrt_load_phase_name(t, x->phase, pb, sizeof(pb)));
		fprintf(f, ",\"inflight\":%" PRIu32 "}}", x->inflight);
	}
}

/* One engine log line at its wall-clock time, on the run's track. */
static void log_instant(FILE *f, int *first, const char *name, int64_t wall,
                        uint32_t line, const char *text)
{
	begin(f, first, "i", name, RUN_PID);
	fputs(",\"s\":\"g\",\"cat\":\"engine_log\",\"ts\":", f);
	us(f, wall);
	fprintf(f, ",\"args\":{\"line\":%u,\"text\":", line);
	str(f, text);
	fputs("}}", f);
}

/* The engine log's lines that carry a wall-clock time, as instants of
 * the "vramtrace run" track: its memory numbers, readiness and errors
 * beside the trace's own events. */
static void log_lines(FILE *f, int *first, const struct vrt_trace *t,
                      const struct vrt_logcheck *lc)
{
	const struct vrt_enginelog *log = lc ? lc->log : NULL;
	size_t i;

	if (!log || !vrt_wallclock_known(t))
		return;
	for (i = 0; i < log->nfacts; i++)
		if (log->facts[i].wall_ns)
			log_instant(f, first,
			            vrt_enginelog_kind_name(log->facts[i].kind),
			            log->facts[i].wall_ns, log->facts[i].line,
			            log->facts[i].text);
	for (i = 0; i < log->nerrors; i++)
		if (log->errors[i].wall_ns)
			log_instant(f, first,
			            vrt_enginelog_error_name(log->errors[i].kind),
			            log->errors[i].wall_ns, log->errors[i].line,
			            log->errors[i].text);
	if (log->have_ready && log->ready_wall_ns)
		log_instant(f, first, "engine ready", log->ready_wall_ns,
		            log->ready_line, log->ready_text);
}

void vrt_report_perfetto_write(FILE *f, const struct vrt_trace *t,
                               const struct vrt_replay *r,
                               const struct vrt_logcheck *lc)
{
	int first = 1;

	fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":"
	      "\"vramtrace\"},\"traceEvents\":[",
	      f);
	processes(f, &first, t);
	inflight(f, &first, t, r);
	devices(f, &first, t, r);
	instants(f, &first, t, r);
	log_lines(f, &first, t, lc);
	fputs("\n]}\n", f);
}
