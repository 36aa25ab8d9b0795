/*
 * diagnose_ladder.c — which budget broke: the ladder at the decisive
 * failure (each rung's bytes against the capacity, the rung the failing
 * call was building), how sure it is, the numbers that cannot be (a data
 * problem), and the road from the failure (or its absence) to one verdict
 * of diagnose_verdict.c. Pure, single-threaded: writes only the diagnosis
 * and struct ctx.
 */
#include "diagnose_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the ladder ---------------------------------------------------------- */


/*
 * One request's activations at a request-stage failure (terms.one), and
 * what of them the memory kept from earlier requests covers (kept). The
 * memory a profiling or warm-up run holds is sized for the configured
 * batch and stays apart (llama.cpp's compute buffer), unless lone
 * requests grew nothing at all: then they drew on it (a caching allocator
 * that kept the profile run's blocks), and one request is that memory
 * over the configured sequences.
 */
static void one_request(struct ctx *c, uint64_t *kept)
{
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_replay_device *rd = &c->r->dev[f->device];
	struct terms *x = &c->x;
	uint64_t avg, seqs = c->d->flags.max_num_seqs;
	uint64_t prof = rd->phase[VRT_PHASE_profile].peak_bytes;

	*kept = x->cache;
	if (f->inflight <= 1) {
		/* The failing request was alone: what it drew on is all its
		 * own. */
		x->one = x->cache + x->growth;
		x->one_how = ONE_ONLY;
		return;
	}
	/* Requests draw on what is kept before the allocator grows; those
	 * past the engine's cap wait in its queue and draw on nothing. */
	avg = (x->cache + x->growth) / vrt_diagnose_running(c, f->inflight);
	if (rd->have_single_request && rd->single_request_bytes &&
	    rd->single_request_bytes >= avg) {
		x->one = rd->single_request_bytes;
		x->one_how = ONE_ALONE;
	} else if (rd->have_single_request && !rd->single_request_bytes &&
	           prof && seqs) {
		x->one = prof / seqs;
		x->one_how = ONE_CACHE;
		*kept += x->profile;
	} else {
		x->one = avg;
		x->one_how = ONE_AVERAGE;
	}
}

/*
 * The ladder at the decisive failure (diagnose.h): each rung's bytes, the
 * running sum against the capacity, the first rung that does not fit
 * (c->xrung) and the rung the failing call was building (c->frung).
 */
void vrt_diagnose_ladder_climb(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const uint64_t *live = f->live_by_phase;
	struct terms *x = &c->x;
	uint64_t req = f->requested_bytes, idle, serve, kept = 0, sum = 0;
	uint64_t bytes[VRT_RUNG_COUNT];
	int k;

	memset(x, 0, sizeof(*x));
	x->weights = live[VRT_PHASE_weights];
	x->kv = live[VRT_PHASE_kv_cache] + live[VRT_LOAD_PHASE_INFERRED_KV];
	x->graph = live[VRT_PHASE_cuda_graph];
	x->comm = live[VRT_PHASE_comm];
	x->profile = live[VRT_PHASE_profile];
	x->before = live[VRT_LOAD_PHASE_BEFORE_ATTACH];
	/* The per-request phases: what loading left there (a reserve), what
	 * a caching allocator kept from earlier requests, and what the
	 * requests in flight grew beyond that. In a load all of it is the
	 * load's. */
	idle = f->idle_demand_bytes < f->demand_bytes ? f->idle_demand_bytes
	                                              : f->demand_bytes;
	serve = f->after_ready ? f->serve_demand_bytes : idle;
	if (serve > idle) /* freed since: the rest is what is left */
		serve = idle;
	x->load_buffers = serve;
	x->cache = idle - serve;
	x->growth = f->demand_bytes - idle;
	switch (f->phase) {
	case VRT_PHASE_weights:
		x->weights += req;
		c->frung = VRT_RUNG_WEIGHTS;
		break;
	case VRT_PHASE_kv_cache:
	case VRT_LOAD_PHASE_INFERRED_KV:
		x->kv += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_cuda_graph:
		x->graph += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_comm:
		x->comm += req;
		c->frung = VRT_RUNG_RESERVES;
		break;
	case VRT_PHASE_profile:
		x->profile += req;
		c->frung = VRT_RUNG_ACTIVATIONS;
		d->batch_rung = 1;
		break;
	case VRT_PHASE_unattributed:
		if (!f->after_ready) {
			/* nothing named it: counted with what loading
			 * allocates, the ladder can only show it */
			x->load_buffers += req;
			c->frung = VRT_RUNG_RESERVES;
			break;
		}
		/* a request's, as below */
		__attribute__((fallthrough));
	default:
		if (!f->after_ready) {
			/* a per-request phase while loading: a warm-up run
			 * of the configured batch */
			x->profile += req;
			c->frung = VRT_RUNG_ACTIVATIONS;
			d->batch_rung = 1;
		} else {
			x->growth += req;
			c->frung = f->inflight <= 1 ? VRT_RUNG_ACTIVATIONS
			                            : VRT_RUNG_INFLIGHT;
		}
	}
	if (f->after_ready) {
		one_request(c, &kept);
		x->one_growth = vrt_diagnose_sub0(x->one, kept);
		if (x->one_growth > x->growth)
			x->one_growth = x->growth;
	}
	bytes[VRT_RUNG_BASELINE] = c->other;
	bytes[VRT_RUNG_WEIGHTS] = x->weights;
	bytes[VRT_RUNG_RESERVES] =
	        x->kv + x->graph + x->comm + x->load_buffers + x->before;
	bytes[VRT_RUNG_ACTIVATIONS] = x->profile + x->cache + x->one_growth;
	bytes[VRT_RUNG_INFLIGHT] = x->growth - x->one_growth;
	d->have_ladder = 1;
	d->ladder_device = f->device;
	d->capacity_bytes = c->total;
	c->xrung = -1;
	for (k = 0; k < VRT_RUNG_COUNT; k++) {
		sum += bytes[k];
		d->ladder[k].bytes = bytes[k];
		d->ladder[k].cumulative = sum;
		d->ladder[k].fits = !c->total || sum <= c->total;
		if (!d->ladder[k].fits && c->xrung < 0)
			c->xrung = k;
	}
	vrt_diagnose_log_ladder(c);
	/* What requests have: the capacity after everything held before
	 * them (a batch's profile memory too, unless they draw on it). */
	x->room = vrt_diagnose_sub0(
	        c->total, bytes[VRT_RUNG_BASELINE] + bytes[VRT_RUNG_WEIGHTS] +
	                          bytes[VRT_RUNG_RESERVES] +
	                          (x->one_how == ONE_CACHE || !f->after_ready
	                                   ? 0
	                                   : x->profile));
	/* The budget that broke: the first rung past the capacity, but no
	 * later than the one being built (a graph capture failing after a
	 * reserve is the reserve's, whatever came before it). */
	d->rung = c->xrung >= 0 && c->xrung < c->frung ? c->xrung : c->frung;
}

/* How sure a verdict on the failure can be: is it the one the process
 * did not survive? */
void vrt_diagnose_ladder_failure_confidence(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_process *p = &c->t->procs[f->proc];

	if (c->d->log_fatal)
		return; /* the engine's log says it died of this one */
	if (!f->fatal)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "PID %" PRIu64 " went on after this failure: the "
		        "program caught the error and carried on",
		        p->pid);
	else if (!vrt_diagnose_died(p) &&
	         !(c->root && vrt_diagnose_died(c->root)))
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "no exit status was recorded (record the run with "
		        "vramtrace record): the last failure PID %" PRIu64
		        " did not recover from is taken as fatal",
		        p->pid);
}

/* A process recorded from an attach: what it held before and the snapshot
 * could not attribute is its own (never another process's), counted with
 * the reserves; it decides nothing unless the budget that broke is among
 * weights and reserves, which it then cannot tell apart. */
static void before_attach(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	if (!c->x.before)
		return;
	vrt_diagnose_evidence(
	        c->d, "before_attach_bytes", f->device, VRT_DIAG_BYTES,
	        c->x.before,
	        "%s on device %d was held before vramtrace attach began "
	        "recording and could not be attributed (no allocator "
	        "snapshot named it): this process's own, counted with the "
	        "reserves",
	        SZ(c->x.before), f->device);
	if (c->d->rung == VRT_RUNG_WEIGHTS || c->d->rung == VRT_RUNG_RESERVES)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "%s held before the attach cannot be split into "
		        "weights and reserves, and the broken budget is "
		        "among them: record the server from its start "
		        "(vramtrace record) to tell them apart",
		        SZ(c->x.before));
}

/* How sure the ladder's verdict is. */
static void ladder_confidence(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	if (!c->total && c->d->source_log)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "the log does not print device %d's capacity: the "
		        "ladder cannot tell which rung overflowed, so the "
		        "verdict is the budget the engine said the failed "
		        "allocation was for",
		        f->device);
	else if (!c->total)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "the capacity of device %d is unknown: the ladder "
		        "cannot tell which rung overflowed",
		        f->device);
	else if (c->xrung < 0 && c->d->source_log)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "the log's numbers on device %d add up to %s of %s: "
		        "what overflowed is memory the log does not account "
		        "for, so the failing allocation's own rung is named",
		        f->device,
		        SZ(c->d->ladder[VRT_RUNG_COUNT - 1].cumulative),
		        SZ(c->total));
	else if (c->xrung < 0)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "the traced memory on device %d adds up to %s of "
		        "%s: what overflowed is memory the trace does not "
		        "see (allocations outside the traced calls, "
		        "fragmentation), so the failing call's own rung is "
		        "named",
		        f->device,
		        SZ(c->d->ladder[VRT_RUNG_COUNT - 1].cumulative),
		        SZ(c->total));
	vrt_diagnose_ladder_failure_confidence(c);
	if (f->phase == VRT_LOAD_PHASE_INFERRED_KV)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "the KV reserve was inferred (a large allocation "
		        "right after a free-memory probe), not named by a "
		        "rule");
	if (c->xrung > c->frung)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "the ladder first overflows at %s, but the failing "
		        "call was building %s, which is named",
		        vrt_diagnose_rung_name(c->xrung),
		        vrt_diagnose_rung_name(c->frung));
}

/* ---- sanity: numbers that cannot be ------------------------------------ */

/*
 * A data problem: a device whose traced peak (managed memory aside,
 * which may oversubscribe) is above its capacity, or a card the run's
 * processes disagree about (load.c: one UUID, two names, capacities or
 * hosts). No budget can be read from such numbers: the verdict is
 * inconclusive, naming the likely cause. Returns 1 when it found one.
 */
int vrt_diagnose_ladder_data_problem(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *bad = NULL;
	const struct vrt_device *dv;
	size_t k;

	for (k = 0; k < d->ndevices && !bad; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		uint64_t managed = c->r->dev[x->device]
		                           .fam[VRT_FAM_MANAGED]
		                           .peak_bytes;
		dv = &c->t->devices[x->device];
		if (dv->conflict[0] ||
		    (x->total_bytes && x->peak_bytes > x->total_bytes &&
		     x->peak_bytes - managed > x->total_bytes))
			bad = x;
	}
	if (!bad)
		return 0;
	dv = &c->t->devices[bad->device];
	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1;
	if (dv->conflict[0]) {
		snprintf(d->detail, sizeof(d->detail),
		         "device_identity_conflict");
		vrt_diagnose_evidence(
		        d, "device_identity_conflict", bad->device,
		        VRT_DIAG_COUNT, 1,
		        "data problem: the processes disagree about device "
		        "%d (%s): %s",
		        bad->device, dv->uuid, dv->conflict);
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "data problem: one card identity (UUID %s) stands "
		        "for different cards, so no device's budget can be "
		        "trusted: runs from different hosts were merged, or "
		        "a driver reported one UUID for several cards",
		        dv->uuid);
	} else {
		snprintf(d->detail, sizeof(d->detail), "peak_over_capacity");
		vrt_diagnose_evidence(
		        d, "peak_over_capacity", bad->device, VRT_DIAG_BYTES,
		        bad->peak_bytes,
		        "data problem: device %d's %s peak of %s is above "
		        "its capacity of %s: no card holds that much",
		        bad->device, d->source_log ? "logged" : "traced",
		        SZ(bad->peak_bytes), SZ(bad->total_bytes));
		if (d->source_log) {
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_LOW,
			        "data problem: the memory the log's lines "
			        "print "
			        "for device %d adds up to more than the card "
			        "it "
			        "names: the lines come from different runs or "
			        "cards (a log pieced together, ranks mixed up)",
			        bad->device);
			ACT(vrt_diagnose_advise(c, RANK_FREE),
			    "give the log of one run of one server; with "
			    "ranks, "
			    "the lines with their process prefixes");
			return 1;
		}
		if (dv->uuid[0])
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_LOW,
			        "data problem: what the processes hold on "
			        "card %s adds up to more than it has: runs "
			        "recorded at other times or on other hosts "
			        "were merged into one analysis, or a driver "
			        "that ignores %s gave different cards one "
			        "identity",
			        dv->uuid,
			        vrt_diagnose_visible_devices(c->t,
			                                     bad->device));
		else
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_LOW,
			        "data problem: the trace has no UUID for "
			        "device %d, so the processes' cards were "
			        "matched by ordinal; processes with different "
			        "%s each call their first card device 0, so "
			        "different cards were merged into one",
			        bad->device,
			        vrt_diagnose_visible_devices(c->t,
			                                     bad->device));
	}
	if (dv->conflict[0])
		ACT(vrt_diagnose_advise(c, RANK_FREE),
		    "analyze each host's run apart (one process: vramtrace "
		    "analyze RUN/PID.vtrace); from one host, the driver gave "
		    "two cards one UUID");
	else if (dv->uuid[0])
		ACT(vrt_diagnose_advise(c, RANK_FREE),
		    "analyze each run apart (one process: vramtrace analyze "
		    "RUN/PID.vtrace) and check each process's %s",
		    vrt_diagnose_visible_devices(c->t, bad->device));
	else
		ACT(vrt_diagnose_advise(c, RANK_FREE),
		    "analyze each process apart (vramtrace analyze "
		    "RUN/PID.vtrace), check each process's %s, and record "
		    "again with this vramtrace (its traces name every card "
		    "by UUID)",
		    vrt_diagnose_visible_devices(c->t, bad->device));
	return 1;
}

/* No decisive failure: none, host_memory, or inconclusive when the root
 * died anyway. */
void vrt_diagnose_ladder_without_failure(struct ctx *c)
{
	const struct vrt_process *root = c->root;

	if (vrt_diagnose_host_exhausted(&c->host)) {
		vrt_diagnose_verdict_host(c);
		return;
	}
	if (!root || !vrt_diagnose_died(root) ||
	    (c->serving && vrt_diagnose_stopped(root))) {
		vrt_diagnose_verdict_none(c);
		return;
	}
	vrt_diagnose_evidence_exit(c, root);
	vrt_diagnose_evidence_near_miss(c);
	if (c->r->recovered)
		vrt_diagnose_verdict_inconclusive(
		        c, "recovered_then_died",
		        "every failed allocation was recovered, and the "
		        "process "
		        "then died of something else",
		        "read the server's log for the error it died of "
		        "(vramtrace record keeps the command's output)");
	else if (!c->serving && vrt_diagnose_stopped(root))
		vrt_diagnose_verdict_inconclusive(
		        c, "stopped_while_loading",
		        "the run was stopped while loading, before anything "
		        "failed: no budget was tested",
		        "record again and let the server load (and serve) "
		        "before stopping it");
	else if (!c->serving)
		vrt_diagnose_verdict_inconclusive(
		        c, "died_while_loading",
		        "the server died while loading without any failed "
		        "allocation: the budget that broke is not in the trace",
		        root->exit_kind == VRT_EXIT_SIGNAL &&
		                        root->exit_code == 9
		                ? "read the server's log for the error it died "
		                  "of (vramtrace record keeps the command's "
		                  "output); a kill by signal 9 may be the "
		                  "kernel's OOM killer (dmesg)"
		                : "read the server's log for the error it died "
		                  "of (vramtrace record keeps the command's "
		                  "output)");
	else
		vrt_diagnose_verdict_inconclusive(
		        c, "died_while_serving",
		        "the server died while serving without any failed "
		        "allocation",
		        "read the server's log for the error it died of "
		        "(vramtrace record keeps the command's output)");
}

/* A device failure: inconclusive where the evidence cannot single out a
 * budget, else the ladder's verdict. */
/* The driver's own count at the failure: what it called used beyond this
 * run's live bytes, past what other processes were already seen to hold
 * (the first probe, NVML), is someone else's, except what the run's own
 * stream-ordered pools can have kept of their frees (pool_kept_max):
 * that much is the run's, and is not counted as another process's. */
void vrt_diagnose_ladder_driver_count(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	uint64_t beyond;

	if (!f->have_info || f->total_bytes <= f->free_bytes + c->live)
		return;
	beyond = f->total_bytes - f->free_bytes - c->live;
	if (beyond <= c->other)
		return;
	c->pool_kept = beyond - c->other;
	if (c->pool_kept > f->pool_kept_max)
		c->pool_kept = f->pool_kept_max;
	if (beyond - c->pool_kept <= c->other)
		return;
	c->other = beyond - c->pool_kept;
	if (c->fd && c->other > c->fd->other_bytes)
		c->fd->other_bytes = c->other;
}

/* The run's pool kept enough freed bytes that, given back, the call would
 * have fit: no budget of the run's was too small, its allocator kept
 * memory it could not reuse (chunks too small for the call). Which budget
 * to cut is not in the trace; the allocator is the lever. */
int vrt_diagnose_ladder_pool_decides(const struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;

	return f->have_info && c->pool_kept >= VRT_DIAG_POOL_MIN_BYTES &&
	       f->free_bytes + c->pool_kept >= f->requested_bytes;
}

/* A process that is no server: it never listened, took no connection,
 * began no annotated request, neither its command line, its stacks nor a
 * log name an engine, and nothing it allocated went to a budget an
 * engine sizes (weights, a KV cache, even one inferred from a probe, a
 * profile run, CUDA graphs, communicators). */
static int not_server(const struct ctx *c)
{
	const struct vrt_replay *r = c->r;
	size_t i;
	unsigned k;

	if (r->have_first_listen || r->connections || r->requests ||
	    c->engine || c->serving)
		return 0;
	for (i = 0; i < r->ndevices; i++)
		for (k = 0; k < VRT_REPLAY_MAX_PHASES; k++)
			if (r->dev[i].phase[k].allocs &&
			    !vrt_replay_phase_is_demand(k))
				return 0;
	return 1;
}

void vrt_diagnose_ladder_with_failure(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t want = 0;
	const struct vrt_diag_device *heavy;
	int misplaced;

	vrt_diagnose_ladder_climb(c);
	if (not_server(c)) {
		vrt_diagnose_verdict_program(c);
		return;
	}
	if (f->after_ready && !f->inflight && f->uncounted &&
	    vrt_replay_phase_is_demand(f->phase)) {
		vrt_diagnose_verdict_inconclusive(
		        c, "requests_not_counted",
		        "the failure came while serving, over connections "
		        "whose "
		        "requests could not be counted (a protocol this "
		        "trace's "
		        "writer did not follow): how many were in flight is "
		        "unknown, so context and concurrency cannot be told "
		        "apart",
		        "record with this version of vramtrace, which counts "
		        "HTTP/2 and gRPC streams and infers the requests of "
		        "other protocols, or bracket each request with "
		        "vramtrace_request_begin/end");
		return;
	}
	if (f->after_ready && !f->inflight &&
	    vrt_replay_phase_is_demand(f->phase)) {
		vrt_diagnose_verdict_inconclusive(
		        c, "no_request_in_flight",
		        "the failure came while serving but with no request in "
		        "flight: the requests that made the memory are not in "
		        "the trace",
		        "count requests: record the server's connections "
		        "(vramtrace record) or bracket each request with "
		        "vramtrace_request_begin/end");
		return;
	}
	if (!f->after_ready && f->phase == VRT_PHASE_unattributed) {
		vrt_diagnose_verdict_inconclusive(
		        c, "unattributed",
		        "no rule named the failing call and it failed while "
		        "loading: it may be weights, a reserve or a warm-up "
		        "batch",
		        "name the phases: `vramtrace rules RUN` lists the call "
		        "paths no rule matched; add a rules file (--rules) or "
		        "annotate the code (vramtrace_phase_push)");
		return;
	}
	ladder_confidence(c);
	before_attach(c);
	heavy = vrt_diagnose_verdict_not_sharded(c, &want);
	{
		uint64_t pids[2];
		size_t n, nidle;
		misplaced = vrt_diagnose_verdict_misplaced_ranks(
		                    c, f->device, pids, 2, &n, &nidle) >= 0;
	}
	/* Ranks stacked on one card: whatever rung broke, the cure is
	 * their placement. */
	if (misplaced || (heavy && heavy->device == f->device) ||
	    d->rung == VRT_RUNG_WEIGHTS)
		vrt_diagnose_verdict_weights(c);
	else if (d->rung == VRT_RUNG_BASELINE)
		vrt_diagnose_verdict_other(c);
	else if (d->rung == VRT_RUNG_RESERVES)
		vrt_diagnose_verdict_reserve(c);
	else if (d->rung == VRT_RUNG_ACTIVATIONS && !f->after_ready)
		vrt_diagnose_verdict_batch(c);
	else if (d->rung == VRT_RUNG_ACTIVATIONS)
		vrt_diagnose_verdict_context(c);
	else
		vrt_diagnose_verdict_concurrency(c);
	if (f->inflight_inferred &&
	    (d->verdict == VRT_VERDICT_CONCURRENCY ||
	     d->verdict == VRT_VERDICT_KV_CACHE)) {
		vrt_diagnose_evidence(
		        d, "inflight_inferred", -1, VRT_DIAG_COUNT,
		        f->inflight_inferred,
		        "%" PRIu32 " of the %" PRIu32
		        " requests in flight were "
		        "inferred from turn-taking (a protocol that cannot be "
		        "read: TLS inside the server, a protocol of its own)",
		        f->inflight_inferred, f->inflight);
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "the requests in flight were inferred from "
		        "turn-taking, not read from the protocol: the count "
		        "is an estimate");
	}
	vrt_diagnose_evidence_near_miss(c);
}
