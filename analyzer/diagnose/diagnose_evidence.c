/*
 * diagnose_evidence.c — the evidence lines every verdict shares: the
 * failing call (what failed where, at what stage, whether fatal), how a
 * process ended, near-misses, a device's budgets, the memory of other
 * processes. The verdicts' own lines are theirs (diagnose_verdict.c).
 * Pure, single-threaded: writes only the diagnosis.
 */
#include "diagnose_internal.h"
#include "base/names.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

void vrt_diagnose_evidence(struct vrt_diagnosis *d, const char *key,
                           int32_t dev, int unit, uint64_t value,
                           const char *fmt, ...)
{
	struct vrt_diag_evidence *e;
	va_list ap;

	if (d->nevidence >= VRT_DIAG_MAX_ITEMS)
		return;
	e = &d->evidence[d->nevidence++];
	snprintf(e->key, sizeof(e->key), "%s", key);
	e->device = dev;
	e->unit = unit;
	e->value = value;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof(e->text), fmt, ap);
	va_end(ap);
}

void vrt_diagnose_evidence_exit(struct ctx *c, const struct vrt_process *p)
{
	char how[96];

	vrt_diagnose_how_ended(how, sizeof(how), p);
	vrt_diagnose_evidence(
	        c->d,
	        p->exit_kind == VRT_EXIT_SIGNAL ? "exit_signal" : "exit_status",
	        -1, VRT_DIAG_COUNT, (uint64_t)(int64_t)p->exit_code,
	        "PID %" PRIu64 " (%s) %s", p->pid,
	        p->argc && p->argv[0] ? p->argv[0] : "?", how);
}

/* ---- evidence ------------------------------------------------------------ */

void vrt_diagnose_evidence_failure(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_process *p = &c->t->procs[f->proc];
	const char *api = vrt_names_api(f->api, "an allocation");
	char where[32], pb[32], how[96];

	if (f->device >= 0)
		snprintf(where, sizeof(where), "on device %d", f->device);
	else if (f->family == VRT_FAM_PINNED || f->family == VRT_FAM_REGISTERED)
		snprintf(where, sizeof(where), "on the host");
	else
		snprintf(where, sizeof(where), "on an unknown device");
	if (d->source_log) {
		/* a log gives the failure's line, not a call */
		vrt_diagnose_how_ended(how, sizeof(how), p);
		vrt_diagnose_evidence(
		        d, "requested_bytes", f->device, VRT_DIAG_BYTES,
		        f->requested_bytes,
		        "the allocation the log's fatal error names (%s) "
		        "failed %s at log line %u (%s stage, phase %s, %" PRIu32
		        " request%s in flight)",
		        f->requested_bytes ? SZ(f->requested_bytes)
		                           : "size not printed",
		        where, c->log ? c->log->fatal_line : 0,
		        f->after_ready ? "request" : "load",
		        vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)),
		        f->inflight, f->inflight == 1 ? "" : "s");
		if (f->have_info && f->device >= 0)
			vrt_diagnose_evidence(
			        d, "free_bytes", f->device, VRT_DIAG_BYTES,
			        f->free_bytes,
			        c->free_estimated
			                ? "about %s free of %s (the capacity "
			                  "less "
			                  "what the log's lines account for)"
			                : "the engine printed %s free of %s",
			        SZ(f->free_bytes), SZ(f->total_bytes));
		vrt_diagnose_evidence(d, "fatal", f->device, VRT_DIAG_COUNT, 1,
		                      "the failure was fatal: the server %s",
		                      how);
		return;
	}
	if (d->not_server)
		vrt_diagnose_evidence(d, "requested_bytes", f->device,
		                      VRT_DIAG_BYTES, f->requested_bytes,
		                      "%s of %s failed %s at %.3fs", api,
		                      SZ(f->requested_bytes), where,
		                      (double)(f->ts - c->t->start_ns) / 1e9);
	else
		vrt_diagnose_evidence(
		        d, "requested_bytes", f->device, VRT_DIAG_BYTES,
		        f->requested_bytes,
		        "%s of %s failed %s at %.3fs (%s stage, phase %s, "
		        "%" PRIu32 " request%s in flight)",
		        api, SZ(f->requested_bytes), where,
		        (double)(f->ts - c->t->start_ns) / 1e9,
		        f->after_ready ? "request" : "load",
		        vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)),
		        f->inflight, f->inflight == 1 ? "" : "s");
	if (f->have_info && f->device >= 0)
		vrt_diagnose_evidence(d, "free_bytes", f->device,
		                      VRT_DIAG_BYTES, f->free_bytes,
		                      "the driver had %s free of %s",
		                      SZ(f->free_bytes), SZ(f->total_bytes));
	vrt_diagnose_how_ended(how, sizeof(how), p);
	if (f->fatal)
		vrt_diagnose_evidence(d, "fatal", f->device, VRT_DIAG_COUNT, 1,
		                      "the failure was fatal: PID %" PRIu64
		                      " did not "
		                      "recover from it and %s",
		                      p->pid, how);
	else
		vrt_diagnose_evidence(
		        d, "fatal", f->device, VRT_DIAG_COUNT, 0,
		        "PID %" PRIu64 " did not recover from the failure but "
		        "went on%s%s",
		        p->pid,
		        p->exit_kind == VRT_EXIT_NONE ? " (its exit status was "
		                                        "not recorded)"
		                                      : "; it later ",
		        p->exit_kind == VRT_EXIT_NONE ? "" : how);
}

/* Up to three recovered failures: evidence of thin headroom. */
void vrt_diagnose_evidence_near_miss(struct ctx *c)
{
	const struct vrt_replay *r = c->r;
	size_t i, n = 0;
	char where[32];

	for (i = 0; i < r->nfails && n < 3; i++) {
		const struct vrt_replay_failure *x = &r->fails[i];
		if (!x->oom || !x->recovered)
			continue;
		n++;
		if (x->device >= 0)
			snprintf(where, sizeof(where), "on device %d",
			         x->device);
		else
			snprintf(where, sizeof(where), "of host memory");
		vrt_diagnose_evidence(
		        c->d, "near_miss", x->device, VRT_DIAG_BYTES,
		        x->requested_bytes,
		        "near-miss at %.3fs: %s %s could not be had at once; "
		        "the allocator freed %s of its cache and got %s "
		        "(thin headroom)",
		        (double)(x->ts - c->t->start_ns) / 1e9,
		        SZ(x->requested_bytes), where, SZ(x->freed_bytes),
		        SZ(x->recovered_bytes));
	}
	if (r->recovered > n)
		vrt_diagnose_evidence(
		        c->d, "near_misses", -1, VRT_DIAG_COUNT, r->recovered,
		        "%" PRIu64 " near-misses in all (recovered failures)",
		        r->recovered);
}

void vrt_diagnose_evidence_budget(struct ctx *c,
                                  const struct vrt_diag_device *x)
{
	const struct vrt_replay_device *rd = &c->r->dev[x->device];
	uint64_t req = 0;
	unsigned k;

	/* the per-request phases (forward, workspace, pools, ...) at the
	 * device's peak, whatever a rule called them */
	for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
		if (vrt_replay_phase_is_demand(k))
			req += rd->peak_by_phase[k];
	if (c->d->source_log) {
		/* a log alone: what it printed, never a 0 for what it did
		 * not */
		unsigned rd_mask = c->d->rungs_read;
		char w[32], kv[32], rq[32];
		if (!(rd_mask & (1u << VRT_RUNG_WEIGHTS |
		                 1u << VRT_RUNG_RESERVES |
		                 1u << VRT_RUNG_ACTIVATIONS)))
			return;
		snprintf(w, sizeof(w), "%s",
		         rd_mask & 1u << VRT_RUNG_WEIGHTS ? SZ(x->weights_bytes)
		                                          : "not in the log");
		snprintf(kv, sizeof(kv), "%s",
		         rd_mask & 1u << VRT_RUNG_RESERVES ? SZ(x->kv_bytes)
		                                           : "not in the log");
		snprintf(rq, sizeof(rq), "%s",
		         rd_mask & 1u << VRT_RUNG_ACTIVATIONS
		                 ? SZ(req)
		                 : "not in the log");
		vrt_diagnose_evidence(c->d, "weights_bytes", x->device,
		                      VRT_DIAG_BYTES, x->weights_bytes,
		                      "device %d, as the log gives them: "
		                      "weights %s, KV cache "
		                      "%s, per-request phases %s of %s",
		                      x->device, w, kv, rq, SZ(x->total_bytes));
		return;
	}
	vrt_diagnose_evidence(
	        c->d, "weights_bytes", x->device, VRT_DIAG_BYTES,
	        x->weights_bytes,
	        "device %d: weights %s, KV cache %s, per-request phases %s "
	        "at the run peak of %s of %s",
	        x->device, SZ(x->weights_bytes), SZ(x->kv_bytes), SZ(req),
	        SZ(x->peak_bytes), SZ(x->total_bytes));
}

void vrt_diagnose_evidence_others(struct ctx *c, int32_t dev, uint64_t bytes)
{
	struct vrt_diagnosis *d = c->d;
	char pids[160] = "";
	size_t i, n = 0;

	for (i = 0; i < d->nother_pids; i++)
		n += (size_t)snprintf(pids + n, sizeof(pids) - n, "%s%" PRIu64,
		                      i ? ", " : "", d->other_pids[i]);
	vrt_diagnose_evidence(
	        d, "other_processes_bytes", dev, VRT_DIAG_BYTES, bytes,
	        "device %d: %s in use by other processes (memory the driver "
	        "counted that this run did not allocate)%s%s%s",
	        dev, SZ(bytes),
	        !n                    ? ""
	        : d->nother_pids == 1 ? " (PID "
	                              : " (PIDs ",
	        pids, n ? ")" : "");
	for (i = 0; i < d->nother_pids; i++)
		vrt_diagnose_evidence(
		        d, "other_pid", dev, VRT_DIAG_PID, d->other_pids[i],
		        "PID %" PRIu64 " holds memory on the card",
		        d->other_pids[i]);
}
