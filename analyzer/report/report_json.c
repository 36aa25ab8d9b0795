/*
 * report_json.c — the "vramtrace-report/1" document. The key structure is
 * the contract of docs/design.md; keys for data not collected yet are present
 * with null or empty values so consumers can rely on them. Bytes are exact
 * integers; times are seconds since the run's first HEADER ("*_s"), each
 * with the same moment in UTC beside it ("*_utc", ISO 8601 with
 * microseconds; null when the trace carries no wall clock).
 */
#include "report.h"

#include <inttypes.h>
#include <string.h>

#include "replay/callpath.h"
#include "json.h"
#include "enginelog/logcheck.h"
#include "base/names.h"
#include "load/wallclock.h"

static void counters(struct vrt_json *w, const char *key,
                     const struct vrt_counters *c)
{
	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	vrt_json_key(w, "allocs");
	vrt_json_uint(w, c->allocs);
	vrt_json_key(w, "frees");
	vrt_json_uint(w, c->frees);
	vrt_json_key(w, "failed");
	vrt_json_uint(w, c->failed);
	vrt_json_key(w, "peak_bytes");
	vrt_json_uint(w, c->peak_bytes);
	vrt_json_key(w, "live_bytes_end");
	vrt_json_uint(w, c->live_bytes);
	vrt_json_end_object(w);
}

static int counters_used(const struct vrt_counters *c)
{
	return c->allocs || c->frees || c->failed || c->peak_bytes;
}

/* Phases with activity; "unattributed" always, so the key never vanishes.
 * Evidence-based tags have their own key, "kv_cache (inferred)". */
static void phases(struct vrt_json *w, const struct vrt_trace *t,
                   const struct vrt_replay_device *d)
{
	char buf[32];
	unsigned k;

	vrt_json_key(w, "phases");
	vrt_json_begin_object(w);
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (k == 0 || counters_used(&d->phase[k]))
			counters(w, vrt_load_phase_name(t, k, buf, sizeof(buf)),
			         &d->phase[k]);
	vrt_json_end_object(w);
}

static void by_phase(struct vrt_json *w, const struct vrt_trace *t,
                     const char *key, const uint64_t *b)
{
	char buf[32];
	unsigned k;

	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (k == 0 || b[k]) {
			vrt_json_key(
			        w, vrt_load_phase_name(t, k, buf, sizeof(buf)));
			vrt_json_uint(w, b[k]);
		}
	}
	vrt_json_end_object(w);
}

static void seconds(struct vrt_json *w, const struct vrt_trace *t, int64_t ts)
{
	vrt_json_seconds(w, ts - t->start_ns);
}

/* "<name>_s" (seconds since the run started) and "<name>_utc" (the same
 * moment as ISO 8601 UTC, null when the trace has no wall clock) for
 * trace time ts, or both null when have is 0. */
static void times(struct vrt_json *w, const struct vrt_trace *t,
                  const char *name, int have, int64_t ts)
{
	char key[48], buf[VRT_WALLCLOCK_TEXT];

	snprintf(key, sizeof(key), "%s_s", name);
	vrt_json_key(w, key);
	if (have)
		seconds(w, t, ts);
	else
		vrt_json_null(w);
	snprintf(key, sizeof(key), "%s_utc", name);
	vrt_json_key(w, key);
	if (have && vrt_wallclock_known(t))
		vrt_json_string(w, vrt_wallclock_format(
		                           buf, sizeof(buf),
		                           vrt_wallclock_utc(t, ts), 6));
	else
		vrt_json_null(w);
}

static void run(struct vrt_json *w, const struct vrt_trace *t)
{
	size_t i, j;
	int truncated = 0;

	vrt_json_key(w, "run");
	vrt_json_begin_object(w);
	/* The run's time origin on the CLOCK_MONOTONIC of its first host:
	 * every *_s is seconds after it (lines reports up with other
	 * monotonic logs of that host). */
	vrt_json_key(w, "start_monotonic_ns");
	vrt_json_int(w, t->start_ns);
	vrt_json_key(w, "processes");
	vrt_json_begin_array(w);
	for (i = 0; i < t->nprocs; i++) {
		const struct vrt_process *p = &t->procs[i];
		truncated |= p->truncated && !p->running;
		vrt_json_begin_object(w);
		vrt_json_key(w, "pid");
		vrt_json_uint(w, p->pid);
		vrt_json_key(w, "ppid");
		vrt_json_uint(w, p->ppid);
		vrt_json_key(w, "host");
		vrt_json_string(w, p->host);
		vrt_json_key(w, "exe");
		vrt_json_string(w, p->exe);
		vrt_json_key(w, "cmdline");
		vrt_json_begin_array(w);
		for (j = 0; j < p->argc; j++)
			vrt_json_string(w, p->argv[j]);
		vrt_json_end_array(w);
		/* Shell convention: 128+N when killed by signal N. */
		vrt_json_key(w, "exit_status");
		if (p->exit_kind == VRT_EXIT_CODE)
			vrt_json_int(w, p->exit_code);
		else if (p->exit_kind == VRT_EXIT_SIGNAL)
			vrt_json_int(w, 128 + (int64_t)p->exit_code);
		else
			vrt_json_null(w);
		vrt_json_key(w, "exit_signal");
		if (p->exit_kind == VRT_EXIT_SIGNAL)
			vrt_json_int(w, p->exit_code);
		else
			vrt_json_null(w);
		vrt_json_key(w, "complete");
		vrt_json_bool(w, !p->truncated);
		vrt_json_key(w, "running"); /* still recording */
		vrt_json_bool(w, p->running);
		vrt_json_key(w, "truncated_reason");
		if (p->truncated)
			vrt_json_string(w, p->trunc_reason);
		else
			vrt_json_null(w);
		vrt_json_key(w, "events");
		vrt_json_uint(w, p->events);
		vrt_json_key(w, "events_dropped");
		vrt_json_uint(w, p->events_dropped);
		times(w, t, "start", 1, p->start_mono_ns);
		vrt_json_key(w, "started_in_standby");
		vrt_json_bool(w, p->started_in_standby);
		if (p->attached) { /* only then: older reports stay as they are */
			vrt_json_key(w, "attached");
			vrt_json_bool(w, 1);
		}
		times(w, t, "end", p->has_trailer, p->end_mono_ns);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key(w, "hosts");
	vrt_json_begin_array(w);
	for (i = 0; i < t->nhosts; i++)
		vrt_json_string(w, t->hosts[i]);
	vrt_json_end_array(w);
	vrt_json_key(w, "events");
	vrt_json_uint(w, vrt_load_events(t));
	times(w, t, "start", t->nprocs > 0, t->start_ns);
	times(w, t, "end", t->nprocs > 0, t->end_ns);
	vrt_json_key(w, "duration_s");
	vrt_json_seconds(w, t->end_ns - t->start_ns);
	vrt_json_key(w, "truncated");
	vrt_json_bool(w, truncated || t->nskipped);
	vrt_json_key(w, "skipped_files");
	vrt_json_begin_array(w);
	for (i = 0; i < t->nskipped; i++)
		vrt_json_string(w, t->skipped[i]);
	vrt_json_end_array(w);
	vrt_json_end_object(w);
}

static void device(struct vrt_json *w, const struct vrt_trace *t,
                   const struct vrt_replay *r, size_t i)
{
	const struct vrt_device *dv = &t->devices[i];
	const struct vrt_replay_device *d = &r->dev[i];
	int fam;

	vrt_json_begin_object(w);
	vrt_json_key(w, "id");
	vrt_json_uint(w, i);
	vrt_json_key(w, "ordinal");
	vrt_json_int(w, dv->ordinal);
	vrt_json_key(w, "host");
	vrt_json_string(w, dv->host);
	vrt_json_key(w, "vendor");
	vrt_json_string(w, vrt_names_vendor(dv->vendor));
	vrt_json_key(w, "name");
	vrt_json_string(w, dv->name);
	vrt_json_key(w, "uuid");
	vrt_json_string(w, dv->uuid[0] ? dv->uuid : NULL);
	vrt_json_key(w, "total_bytes");
	if (dv->have_total)
		vrt_json_uint(w, dv->total_bytes);
	else if (d->have_baseline)
		vrt_json_uint(w, d->probe_total_bytes);
	else
		vrt_json_null(w);
	vrt_json_key(w, "baseline_used_bytes");
	if (d->have_baseline)
		vrt_json_uint(w, d->baseline_used_bytes);
	else
		vrt_json_null(w);
	phases(w, t, d);
	vrt_json_key(w, "families");
	vrt_json_begin_object(w);
	for (fam = 0; fam < VRT_FAM_COUNT; fam++)
		if (vrt_replay_family_is_vram(fam))
			counters(w, vrt_names_family(fam), &d->fam[fam]);
	vrt_json_end_object(w);
	counters(w, "reserved_va", &d->fam[VRT_FAM_VA]);
	vrt_json_key(w, "peak");
	vrt_json_begin_object(w);
	times(w, t, "time", d->peak_bytes != 0, d->peak_ts);
	vrt_json_key(w, "tracked_bytes");
	vrt_json_uint(w, d->peak_bytes);
	by_phase(w, t, "by_phase", d->peak_by_phase);
	/* found by a snapshot: a lower bound of what came before */
	vrt_json_key(w, "before_recording");
	vrt_json_bool(w, d->peak_at_snapshot);
	vrt_json_end_object(w);
	vrt_json_key(w, "live_bytes_end");
	vrt_json_uint(w, d->tracked_bytes);
	vrt_json_end_object(w);
}

static void host(struct vrt_json *w, const struct vrt_replay *r)
{
	vrt_json_key(w, "host");
	vrt_json_begin_object(w);
	vrt_json_key(w, "families");
	vrt_json_begin_object(w);
	counters(w, "pinned", &r->host[VRT_FAM_PINNED]);
	counters(w, "registered", &r->host[VRT_FAM_REGISTERED]);
	vrt_json_end_object(w);
	vrt_json_key(w, "pinned_peak_bytes");
	vrt_json_uint(w, r->host_pinned_peak);
	vrt_json_key(w, "rss_peak_bytes");
	vrt_json_null(w);
	vrt_json_end_object(w);
}

static void api_name(struct vrt_json *w, unsigned api)
{
	char buf[32];

	vrt_json_string(w, vrt_names_api_id(api, buf, sizeof(buf)));
}

static void failure(struct vrt_json *w, const struct vrt_trace *t,
                    const struct vrt_replay_failure *f, int oom_form)
{
	char buf[32];

	vrt_json_begin_object(w);
	times(w, t, "time", 1, f->ts);
	vrt_json_key(w, "pid");
	vrt_json_uint(w, t->procs[f->proc].pid);
	if (!oom_form) {
		vrt_json_key(w, "tid");
		vrt_json_uint(w, f->tid);
	}
	vrt_json_key(w, "device"); /* -1: host, or not known */
	vrt_json_int(w, f->device >= 0 ? f->device : -1);
	vrt_json_key(w, "api");
	api_name(w, f->api);
	if (!oom_form) {
		vrt_json_key(w, "family");
		vrt_json_string(w, vrt_names_family(f->family));
	}
	vrt_json_key(w, "requested_bytes");
	vrt_json_uint(w, f->requested_bytes);
	if (!oom_form) {
		vrt_json_key(w, "addr");
		vrt_json_uint(w, f->addr);
		vrt_json_key(w, "error");
		vrt_json_int(w, f->error);
		vrt_json_key(w, "error_name");
		vrt_json_string(
		        w, vrt_names_error(f->api, f->error, buf, sizeof(buf)));
		vrt_json_key(w, "oom");
		vrt_json_bool(w, f->oom);
	}
	vrt_json_key(w, "free_bytes");
	if (f->have_info)
		vrt_json_uint(w, f->free_bytes);
	else
		vrt_json_null(w);
	vrt_json_key(w, "total_bytes");
	if (f->have_info)
		vrt_json_uint(w, f->total_bytes);
	else
		vrt_json_null(w);
	vrt_json_key(w, "phase");
	vrt_json_string(w, vrt_load_phase_name(t, f->phase, buf, sizeof(buf)));
	if (oom_form) {
		/* "load" until the server serves (replay.h) */
		vrt_json_key(w, "stage");
		vrt_json_string(w, f->after_ready ? "request" : "load");
		vrt_json_key(w, "inflight");
		vrt_json_uint(w, f->inflight);
		vrt_json_key(w, "inflight_inferred");
		vrt_json_uint(w, f->inflight_inferred);
		vrt_json_key(w, "uncounted_connections");
		vrt_json_uint(w, f->uncounted);
		by_phase(w, t, "live_by_phase", f->live_by_phase);
		vrt_json_key(w, "fatal");
		vrt_json_bool(w, f->fatal);
		vrt_json_key(w, "recovered_by");
		if (f->recovered) {
			vrt_json_begin_object(w);
			times(w, t, "time", 1, f->recovered_ts);
			vrt_json_key(w, "api");
			api_name(w, f->recovered_api);
			vrt_json_key(w, "bytes");
			vrt_json_uint(w, f->recovered_bytes);
			vrt_json_key(w, "freed_bytes");
			vrt_json_uint(w, f->freed_bytes);
			vrt_json_end_object(w);
		} else
			vrt_json_null(w);
	}
	vrt_json_end_object(w);
}

static void requests(struct vrt_json *w, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	vrt_json_key(w, "requests");
	vrt_json_begin_object(w);
	vrt_json_key(w, "max_inflight");
	vrt_json_uint(w, r->max_inflight);
	times(w, t, "max_inflight", r->max_inflight != 0, r->max_inflight_ts);
	vrt_json_key(w, "single_request_peak_bytes");
	if (r->have_single_request)
		vrt_json_uint(w, r->single_request_peak_bytes);
	else
		vrt_json_null(w);
	vrt_json_key(w, "single_request_peak_device");
	if (r->have_single_request)
		vrt_json_int(w, r->single_request_peak_device);
	else
		vrt_json_null(w);
	times(w, t, "serving", r->serving, r->serving_ts); /* the first request's begin */
	vrt_json_key(w, "connections");
	vrt_json_uint(w, r->connections);
	vrt_json_key(w, "annotated");
	vrt_json_uint(w, r->requests);
	vrt_json_key(w, "http");
	vrt_json_uint(w, r->http_requests);
	vrt_json_key(w, "not_http_connections");
	vrt_json_uint(w, r->other_connections);
	vrt_json_key(w, "forwarded_http");
	vrt_json_uint(w, r->forwarded_requests);
	vrt_json_key(w, "forwarded_to_pid");
	if (r->forwarded_requests)
		vrt_json_uint(w, r->forwarded_proc_pid);
	else
		vrt_json_null(w);
	vrt_json_key(w, "forwarded_from_pid");
	if (r->forwarded_requests && r->forwarded_from_pid)
		vrt_json_uint(w, r->forwarded_from_pid);
	else
		vrt_json_null(w);
	vrt_json_key(w, "http2_streams");
	vrt_json_uint(w, r->stream_requests);
	vrt_json_key(w, "inferred");
	vrt_json_uint(w, r->inferred_requests);
	vrt_json_key(w, "probes");
	vrt_json_uint(w, r->probe_requests);
	vrt_json_key(w, "internal_rpcs");
	vrt_json_uint(w, r->internal_requests);
	vrt_json_key(w, "uncounted_connections");
	vrt_json_uint(w, r->uncounted_connections);
	vrt_json_key(w, "paths");
	vrt_json_begin_array(w);
	for (size_t i = 0; i < r->npaths; i++) {
		const struct vrt_replay_path *p = &r->paths[i];
		const char *text = p->text ? vrt_load_str(t, p->text) : NULL;
		vrt_json_begin_object(w);
		vrt_json_key(w, "path");
		if (text)
			vrt_json_string(w, text);
		else
			vrt_json_null(w);
		vrt_json_key(w, "requests");
		vrt_json_uint(w, p->requests);
		vrt_json_key(w, "probe");
		vrt_json_bool(w, p->probe);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	times(w, t, "first_request", r->have_first_request, r->first_request_ts);
	times(w, t, "first_response", r->have_first_response, r->first_response_ts);
	times(w, t, "first_ok_response", r->have_first_ok_response, r->first_ok_response_ts);
	vrt_json_end_object(w);
}

static void marks(struct vrt_json *w, const struct vrt_trace *t,
                  const struct vrt_replay *r)
{
	size_t i;

	vrt_json_key(w, "marks");
	vrt_json_begin_array(w);
	for (i = 0; i < r->nmarks; i++) {
		const struct vrt_replay_mark *e = &r->marks[i];
		const char *label = vrt_load_str(t, e->label);
		vrt_json_begin_object(w);
		times(w, t, "time", 1, e->ts);
		vrt_json_key(w, "pid");
		vrt_json_uint(w, t->procs[e->proc].pid);
		vrt_json_key(w, "label");
		vrt_json_string(w, label ? label : "");
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

/* The steps of a load test: one object per mark, to the next mark. */
static void windows(struct vrt_json *w, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	size_t i, j;

	vrt_json_key(w, "windows");
	vrt_json_begin_array(w);
	for (i = 0; i < r->nwindows; i++) {
		const struct vrt_replay_window *x = &r->windows[i];
		const char *label = vrt_load_str(t, x->mark.label);
		vrt_json_begin_object(w);
		vrt_json_key(w, "label");
		vrt_json_string(w, label ? label : "");
		vrt_json_key(w, "pid");
		vrt_json_uint(w, t->procs[x->mark.proc].pid);
		times(w, t, "start", 1, x->start_ts);
		times(w, t, "end", 1, x->end_ts);
		vrt_json_key(w, "max_inflight");
		vrt_json_uint(w, x->max_inflight);
		vrt_json_key(w, "ooms");
		vrt_json_uint(w, x->ooms);
		vrt_json_key(w, "devices");
		vrt_json_begin_array(w);
		for (j = 0; j < t->ndevices && j < r->ndevices; j++) {
			vrt_json_begin_object(w);
			vrt_json_key(w, "id");
			vrt_json_uint(w, j);
			vrt_json_key(w, "peak_bytes");
			vrt_json_uint(w, x->dev[j].peak_bytes);
			by_phase(w, t, "by_phase", x->dev[j].peak_by_phase);
			vrt_json_end_object(w);
		}
		vrt_json_end_array(w);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

/* The first listen() of the run: who, when, which port (null: none). */
static void listen_(struct vrt_json *w, const struct vrt_trace *t,
                    const struct vrt_replay *r)
{
	vrt_json_key(w, "listen");
	if (!r->have_server_ready) {
		vrt_json_null(w);
		return;
	}
	vrt_json_begin_object(w);
	vrt_json_key(w, "time_s");
	seconds(w, t, r->server_ready_ts);
	vrt_json_key(w, "pid");
	vrt_json_uint(w, t->procs[r->server_ready_proc].pid);
	vrt_json_key(w, "port");
	vrt_json_uint(w, r->server_port);
	vrt_json_end_object(w);
}

/* The phases a timeline names: every one that ever held memory or was
 * allocated from. */
static int timeline_phase(const struct vrt_counters *c)
{
	return c->allocs || c->frees || c->peak_bytes;
}

/* { "<phase>": [n numbers] } for the phases of d, the i-th number read
 * by at(base, i, slot). */
static void timeline_by_phase(struct vrt_json *w, const struct vrt_trace *t,
                              const struct vrt_replay_device *d,
                              const char *key, const void *base, size_t n,
                              uint64_t (*at)(const void *, size_t, unsigned))
{
	char buf[32];
	unsigned k;
	size_t i;

	vrt_json_key(w, key);
	vrt_json_begin_object(w);
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++) {
		if (!timeline_phase(&d->phase[k]))
			continue;
		vrt_json_key(w, vrt_load_phase_name(t, k, buf, sizeof(buf)));
		vrt_json_begin_array_oneline(w);
		for (i = 0; i < n; i++)
			vrt_json_uint(w, at(base, i, k));
		vrt_json_end_array(w);
	}
	vrt_json_end_object(w);
}

static uint64_t point_phase(const void *v, size_t i, unsigned k)
{
	return ((const struct vrt_replay_point *)v)[i].by_phase[k];
}

static uint64_t range_min(const void *v, size_t i, unsigned k)
{
	return ((const struct vrt_replay_range *)v)[i].min_by_phase[k];
}

static uint64_t range_max(const void *v, size_t i, unsigned k)
{
	return ((const struct vrt_replay_range *)v)[i].max_by_phase[k];
}

static void timeline_device(struct vrt_json *w, const struct vrt_trace *t,
                            const struct vrt_replay_device *d, size_t id)
{
	size_t i;

	vrt_json_begin_object(w);
	vrt_json_key(w, "id");
	vrt_json_uint(w, id);
	vrt_json_key(w, "points");
	vrt_json_begin_object(w);
	vrt_json_key(w, "time_s");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < d->nseries; i++)
		seconds(w, t, d->series[i].ts);
	vrt_json_end_array(w);
	timeline_by_phase(w, t, d, "by_phase", d->series, d->nseries,
	                  point_phase);
	vrt_json_end_object(w);
	vrt_json_key(w, "buckets");
	vrt_json_begin_object(w);
	vrt_json_key(w, "start_s");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < d->nranges; i++)
		seconds(w, t, d->ranges[i].start_ts);
	vrt_json_end_array(w);
	vrt_json_key(w, "min_total");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < d->nranges; i++)
		vrt_json_uint(w, d->ranges[i].min_total);
	vrt_json_end_array(w);
	vrt_json_key(w, "max_total");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < d->nranges; i++)
		vrt_json_uint(w, d->ranges[i].max_total);
	vrt_json_end_array(w);
	timeline_by_phase(w, t, d, "min_by_phase", d->ranges, d->nranges,
	                  range_min);
	timeline_by_phase(w, t, d, "max_by_phase", d->ranges, d->nranges,
	                  range_max);
	vrt_json_end_object(w);
	vrt_json_end_object(w);
}

/* Each device's live bytes by phase over time, as replay downsampled
 * them: "points" (the state right after the event at each time, held
 * until the next), and "buckets" (from each start, for bucket_s, the
 * least and most of the total and of each phase: what happened between
 * points); requests in flight the same way. Arrays of numbers stay on one
 * line each. */
static void timeline(struct vrt_json *w, const struct vrt_trace *t,
                     const struct vrt_replay *r)
{
	size_t i;

	vrt_json_key(w, "timeline");
	vrt_json_begin_object(w);
	vrt_json_key(w, "bucket_s");
	vrt_json_seconds(w, r->series_bucket_ns);
	vrt_json_key(w, "devices");
	vrt_json_begin_array(w);
	for (i = 0; i < t->ndevices && i < r->ndevices; i++)
		timeline_device(w, t, &r->dev[i], i);
	vrt_json_end_array(w);
	vrt_json_key(w, "inflight");
	vrt_json_begin_object(w);
	vrt_json_key(w, "time_s");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < r->ninflight_series; i++)
		seconds(w, t, r->inflight_series[i].ts);
	vrt_json_end_array(w);
	vrt_json_key(w, "requests");
	vrt_json_begin_array_oneline(w);
	for (i = 0; i < r->ninflight_series; i++)
		vrt_json_uint(w, r->inflight_series[i].inflight);
	vrt_json_end_array(w);
	vrt_json_end_object(w);
	vrt_json_end_object(w);
}

/* Frames innermost first, as heaptrack prints a backtrace. */
#define JSON_SITE_FRAMES 64

void vrt_report_json_frames(struct vrt_json *w, const struct vrt_trace *t,
                            uint32_t stack)
{
	uint32_t fr[256];
	size_t n = vrt_load_stack_frames(t, stack, fr, 256), i;

	/* In call order (Python frames inside the interpreter that ran
	 * them), then cut. */
	vrt_callpath_order(t, fr, n);
	if (n > JSON_SITE_FRAMES)
		n = JSON_SITE_FRAMES;

	vrt_json_key(w, "frames");
	vrt_json_begin_array(w);
	for (i = 0; i < n; i++) {
		const struct vrt_frame *x = &t->frames[fr[i]];
		vrt_json_begin_object(w);
		vrt_json_key(w, "function");
		vrt_json_string(w, vrt_load_str(t, x->function));
		vrt_json_key(w, "file");
		vrt_json_string(w, vrt_load_str(t, x->file));
		vrt_json_key(w, "line");
		if (x->kind == VRT_FRAME_PYTHON && x->line)
			vrt_json_uint(w, x->line);
		else
			vrt_json_null(w);
		vrt_json_key(w, "kind");
		vrt_json_string(w, x->kind == VRT_FRAME_PYTHON ? "python"
		                                               : "native");
		if (x->kind == VRT_FRAME_NATIVE) {
			vrt_json_key(w, "offset");
			vrt_json_uint(w, x->offset);
		}
		if (x->kind == VRT_FRAME_NATIVE && !x->function && x->ip) {
			vrt_json_key(w, "ip");
			vrt_json_uint(w, x->ip);
		}
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
	vrt_json_key(w, "depth");
	vrt_json_uint(w, stack < t->nstacks ? t->stacks[stack].depth : 0);
}

static void top_sites(struct vrt_json *w, const struct vrt_trace *t,
                      const struct vrt_replay *r)
{
	size_t i;

	vrt_json_key(w, "top_sites");
	vrt_json_begin_array(w);
	for (i = 0; i < r->nsites; i++) {
		const struct vrt_replay_site *x = &r->sites[i];
		char buf[32];
		vrt_json_begin_object(w);
		vrt_json_key(w, "device");
		vrt_json_int(w, x->device);
		vrt_json_key(w, "phase");
		vrt_json_string(
		        w, vrt_load_phase_name(t, x->phase, buf, sizeof(buf)));
		vrt_json_key(w, "bytes");
		vrt_json_uint(w, x->bytes);
		vrt_json_key(w, "allocs");
		vrt_json_uint(w, x->allocs);
		vrt_report_json_frames(w, t, x->stack);
		vrt_json_end_object(w);
	}
	vrt_json_end_array(w);
}

void vrt_report_json_write(FILE *f, const struct vrt_trace *t,
                           const struct vrt_replay *r,
                           const struct vrt_diagnosis *dg,
                           const struct vrt_logcheck *lc)
{
	struct vrt_json w;
	size_t i;

	vrt_json_init(&w, f);
	vrt_json_begin_object(&w);
	vrt_json_key(&w, "schema");
	vrt_json_string(&w, "vramtrace-report/1");
	/* "trace", or "log": no trace, the run is the one the log
	 * describes (analyze --log without a trace) */
	vrt_json_key(&w, "source");
	vrt_json_string(&w, lc && lc->log_only ? "log" : "trace");
	run(&w, t);
	times(&w, t, "server_ready", r->have_ready, r->ready_ts);
	vrt_json_key(&w, "server_ready_from");
	if (r->have_ready)
		vrt_json_string(&w, r->ready_from == VRT_READY_RESPONSE
		                            ? "response"
		                            : "load_end");
	else
		vrt_json_null(&w);
	vrt_json_key(&w, "server_ready_socket");
	if (r->have_server_ready && r->server_ready_kind)
		vrt_json_string(&w, r->server_ready_kind == VRT_NET_KIND_INET
		                            ? "inet"
		                            : "unix");
	else
		vrt_json_null(&w);
	times(&w, t, "recording_start", r->have_recording_start,
	      r->recording_start_ts);
	vrt_json_key(&w, "devices");
	vrt_json_begin_array(&w);
	for (i = 0; i < t->ndevices && i < r->ndevices; i++)
		device(&w, t, r, i);
	vrt_json_end_array(&w);
	host(&w, r);
	requests(&w, t, r);
	vrt_json_key(&w, "ooms");
	vrt_json_begin_array(&w);
	for (i = 0; i < r->nfails; i++)
		if (r->fails[i].oom)
			failure(&w, t, &r->fails[i], 1);
	vrt_json_end_array(&w);
	vrt_json_key(&w, "failures");
	vrt_json_begin_array(&w);
	for (i = 0; i < r->nfails; i++)
		failure(&w, t, &r->fails[i], 0);
	vrt_json_end_array(&w);
	vrt_json_key(&w, "unmatched_frees");
	vrt_json_uint(&w, r->unmatched_frees);
	marks(&w, t, r);
	top_sites(&w, t, r);
	windows(&w, t, r);
	listen_(&w, t, r);
	timeline(&w, t, r);
	vrt_json_key(&w, "diagnosis");
	if (dg)
		vrt_report_diagnosis_json(&w, t, dg);
	else
		vrt_json_null(&w);
	vrt_report_enginelog_json(&w, t, lc);
	vrt_json_end_object(&w);
	vrt_json_finish(&w);
}
