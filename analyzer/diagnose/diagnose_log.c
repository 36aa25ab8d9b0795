/*
 * diagnose_log.c — the engine's log in the diagnosis: beside a trace (the
 * failure its fatal error names, its ready line for the stage, a budget
 * refusal as the verdict, its numbers beside the rungs, PyTorch's account
 * of its cache), and alone (analyze --log without a trace: what the log
 * does not print is not in the ladder). Pure, single-threaded: writes
 * only the diagnosis and struct ctx.
 */
#include "diagnose_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the log alone --------------------------------------------------------
 *
 * analyze --log without a trace: the run was built from the log's numbers
 * (logrun.h). A number it does not print is not in the ladder; a verdict
 * that needs it is inconclusive, naming what is missing and the command
 * that records a trace of the same server.
 */

static const char *const rung_words[VRT_RUNG_COUNT] = {
        "what other processes held", "the weights",
        "the KV cache and the other reserves",
        "one request's activations", "the other requests in flight"};

/* What a trace would add, with the command that records it. */
const char *vrt_diagnose_log_record_words(const struct ctx *c, char *buf,
                                          size_t n)
{
	size_t len = strlen(c->d->record_command);

	if (len && len + 40 < n)
		snprintf(buf, n, "record a trace of the same server: %.*s",
		         (int)len, c->d->record_command);
	else if (len)
		snprintf(buf, n, "record a trace of the same server (the "
		                 "command line is under \"record\" below)");
	else
		snprintf(buf, n, "record a trace of the server: vramtrace "
		                 "record -o RUN -- <the server's command line> "
		                 "(the log does not print it)");
	return buf;
}

/* The rungs below and at rung the log gives no number for (baseline
 * aside: a card holding nothing else is the usual case), as words into
 * buf; 0 when it gives them all. */
static int rungs_missing(const struct ctx *c, int rung, char *buf, size_t n)
{
	size_t o = 0;
	int k, miss = 0;

	buf[0] = '\0';
	for (k = VRT_RUNG_WEIGHTS; k <= rung && k < VRT_RUNG_INFLIGHT; k++) {
		if (c->d->rungs_read & (1u << k))
			continue;
		o += (size_t)snprintf(buf + o, o < n ? n - o : 0, "%s%s",
		                      miss ? ", " : "", rung_words[k]);
		miss++;
	}
	return miss;
}

/* A request's failure whose budgets the log does not print: which one
 * broke is not in it. Returns 1 when it decided (inconclusive). */
int vrt_diagnose_log_only_missing(struct ctx *c)
{
	const struct vrt_replay_failure *f = c->f;
	char miss[200], why[VRT_DIAG_TEXT], get[VRT_DIAG_TEXT];

	if (!c->d->source_log || !f || f->device < 0)
		return 0;
	/* the engine's own words name the budget of a load step (weights,
	 * KV cache, graphs, warm-up): the ladder stands on them */
	if (!vrt_replay_phase_is_demand(f->phase))
		return 0;
	if (!rungs_missing(c, VRT_RUNG_RESERVES, miss, sizeof(miss)) &&
	    c->total) {
		/* the budgets are there; with requests in flight, their
		 * number decides between one long request and many */
		if (!f->after_ready || (c->log && c->log->inflight_counted))
			return 0;
		vrt_diagnose_ladder_climb(c);
		vrt_diagnose_verdict_inconclusive(
		        c, "requests_not_counted",
		        "the log does not count the requests in flight when it "
		        "failed (no metrics line before it): one long request "
		        "and many at once look alike",
		        vrt_diagnose_log_record_words(c, get, sizeof(get)));
		return 1;
	}
	vrt_diagnose_ladder_climb(c);
	snprintf(why, sizeof(why),
	         "the log names the failed allocation but not %.160s%s: which "
	         "budget left the request no room is not in it",
	         miss[0] ? miss : "the card's capacity",
	         miss[0] && !c->total ? ", nor the card's capacity" : "");
	vrt_diagnose_verdict_inconclusive(
	        c, "budgets_not_in_log", why,
	        vrt_diagnose_log_record_words(c, get, sizeof(get)));
	return 1;
}

/* After the verdict: what the log leaves open lowers the confidence. */
void vrt_diagnose_log_only_after(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	char miss[200];

	if (!d->source_log || !c->f)
		return;
	if (d->rung >= 0 && rungs_missing(c, d->rung, miss, sizeof(miss)))
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_LOW,
		        "the log does not print %s: the ladder below the "
		        "verdict's rung is incomplete, and the verdict rests "
		        "on what the engine said the failed allocation was "
		        "for",
		        miss);
	if (c->f->after_ready && c->log && !c->log->inflight_counted &&
	    d->verdict != VRT_VERDICT_INCONCLUSIVE)
		vrt_diagnose_evidence(
		        d, "inflight_assumed", -1, VRT_DIAG_COUNT,
		        c->f->inflight,
		        "the log does not count the requests running when it "
		        "failed: one is assumed");
}

/* No memory failure in the log: it says so, plainly. */
void vrt_diagnose_log_only_none(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	char get[VRT_DIAG_TEXT];

	if (!log->engine_known && !log->memory_lines) {
		vrt_diagnose_verdict_inconclusive(
		        c, "not_an_engine_log",
		        "nothing in the log reads as an inference engine's "
		        "(vLLM, SGLang, llama.cpp, Ollama, TGI, TensorRT-LLM) "
		        "or as a memory error: there is no budget to read",
		        "give the server's own log (its stdout and stderr), or "
		        "record the server: vramtrace record -o RUN -- "
		        "<the server's command line>");
		vrt_diagnose_evidence(
		        d, "log_lines", -1, VRT_DIAG_COUNT, log->lines,
		        "%" PRIu64 " line%s read, none of them an engine's",
		        log->lines, log->lines == 1 ? "" : "s");
		return;
	}
	d->verdict = VRT_VERDICT_NONE;
	d->rung = -1;
	snprintf(d->detail, sizeof(d->detail), "no_memory_error");
	vrt_diagnose_evidence(
	        d, "log_lines", -1, VRT_DIAG_COUNT, log->lines,
	        "%" PRIu64 " line%s of %s's log read: no memory error in them",
	        log->lines, log->lines == 1 ? "" : "s",
	        log->engine[0] ? log->engine : "the engine");
	vrt_diagnose_confidence(
	        c, VRT_CONFIDENCE_MEDIUM,
	        "no memory error in the log; a log cut before the end, or "
	        "a failure another process printed, would not show");
	ACT(vrt_diagnose_advise(c, RANK_FREE),
	    "nothing in the log says memory ran out; if the server died, its "
	    "log names another cause (or the part that names it was not "
	    "given: the whole log, or %s)",
	    vrt_diagnose_log_record_words(c, get, sizeof(get)));
}

/* PyTorch's account in the fatal error: memory it reserved and could not
 * hand out (fragmentation: with expandable segments the call could have
 * had it), the other processes it named on the card. */
void vrt_diagnose_log_torch_account(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	struct advice *a;
	size_t i;

	for (i = 0; i < log->nother_pids; i++)
		if (!vrt_diagnose_pid_in_run(c->t, log->other_pids[i]))
			vrt_diagnose_add_other_pid(d, log->other_pids[i]);
	if (log->nother_pids && d->verdict != VRT_VERDICT_OTHER_PROCESSES)
		for (i = 0; i < log->nother_pids; i++)
			vrt_diagnose_evidence(d, "other_pid", c->f->device,
			                      VRT_DIAG_PID, log->other_pids[i],
			                      "PyTorch names PID %" PRIu64
			                      " with %s on the "
			                      "card",
			                      log->other_pids[i],
			                      SZ(log->other_pid_bytes[i]));
	if (!log->have_reserved || log->reserved_bytes < (256ull << 20))
		return;
	vrt_diagnose_evidence(
	        d, "reserved_unallocated_bytes", c->f->device, VRT_DIAG_BYTES,
	        log->reserved_bytes,
	        "PyTorch held %s reserved but unallocated (pieces of its "
	        "cache too small for the %s call)%s",
	        SZ(log->reserved_bytes), SZ(log->requested_bytes),
	        log->reserved_bytes + log->free_bytes >= log->requested_bytes
	                ? ": with them the call would have fit"
	                : "");
	if (log->reserved_bytes + log->free_bytes < log->requested_bytes)
		return;
	a = vrt_diagnose_advise(c, RANK_FREE);
	ACT(a,
	    "%slet PyTorch's cache grow in place: "
	    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (%s of "
	    "reserved pieces would then serve the %s call)",
	    vrt_diagnose_engine_label(c->engine), SZ(log->reserved_bytes),
	    SZ(log->requested_bytes));
	COST(a, "none for serving (the cache maps pages instead of cutting "
	        "blocks)");
	vrt_diagnose_confidence(
	        c, VRT_CONFIDENCE_MEDIUM,
	        "fragmentation: PyTorch reserved %s it could not hand out, "
	        "enough for the call; the budget named is where memory "
	        "was short, expandable segments may be all it takes",
	        SZ(log->reserved_bytes));
}

/* ---- the engine's log ------------------------------------------------------
 *
 * What the engine printed (struct vrt_diag_log, diagnose.h a-f), kept
 * apart from the trace's own reasoning: the failure its fatal error names,
 * its configuration for the defaults, its ready line for the stage, a
 * budget refusal as the verdict, its numbers beside the rungs.
 */

const char *vrt_diagnose_log_flag_name(int bit)
{
	static const char *const names[VRT_DIAG_LOG_NFLAGS] = {
	        "engine",          "max_model_len",    "max_num_seqs",
	        "tensor_parallel", "memory_fraction", "max_total_tokens",
	        "gpu_layers",      "ubatch",           "batch_tokens",
	        "flash_attn"};
	return bit >= 0 && bit < VRT_DIAG_LOG_NFLAGS ? names[bit] : NULL;
}

/* a. The decisive failure: the one the log's fatal error names, else
 * replay's choice. */
void vrt_diagnose_log_decisive(struct ctx *c)
{
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay *r = c->r;
	size_t i = r->decisive;

	if (log && log->have_fatal_failure && log->fatal_failure < r->nfails &&
	    r->fails[log->fatal_failure].oom) {
		i = log->fatal_failure;
		c->d->log_fatal = 1;
	}
	if (i < r->nfails) {
		c->f = &r->fails[i];
		c->d->have_failure = 1;
		c->d->failure = i;
	}
}

/* c. The trace saw no request: a failure of a per-request phase after the
 * engine said it serves came while serving (a weights allocation or a
 * reserve stays the load's, as replay has it). */
void vrt_diagnose_log_stage(struct ctx *c)
{
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay_failure *f = c->f;

	c->serving = c->r->serving;
	if (!log || !log->have_ready || c->r->serving)
		return;
	if (!f) {
		c->serving = c->d->log_ready = log->ready_ts <= c->t->end_ns;
		return;
	}
	if (f->after_ready || f->ts < log->ready_ts ||
	    (!vrt_replay_phase_is_demand(f->phase) &&
	     f->phase != VRT_PHASE_unattributed))
		return;
	c->fcopy = *f;
	c->fcopy.after_ready = 1;
	c->f = &c->fcopy;
	c->serving = c->d->log_ready = 1;
}

/* The rung an engine number belongs to on the ladder. */
void vrt_diagnose_log_ladder(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	size_t i;

	if (!c->log || !d->have_ladder)
		return;
	for (i = 0; i < c->log->nnumbers; i++) {
		const struct vrt_diag_engine_number *n = &c->log->numbers[i];
		if (n->device != d->ladder_device || n->rung < 0 ||
		    n->rung >= VRT_RUNG_COUNT)
			continue;
		d->ladder[n->rung].have_engine = 1;
		d->ladder[n->rung].engine_bytes += n->engine_bytes;
	}
}

/* The ladder at a refusal: what the trace holds on the device, plus what
 * the engine wanted for the rung it was sizing, against the capacity the
 * engine sizes within. */
static void refusal_ladder(struct ctx *c, const struct vrt_diag_refusal *x)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_device *rd = &c->r->dev[x->device];
	uint64_t bytes[VRT_RUNG_COUNT], sum = 0;
	int k;

	bytes[VRT_RUNG_BASELINE] = c->fd ? c->fd->other_bytes : 0;
	bytes[VRT_RUNG_WEIGHTS] = rd->phase[VRT_PHASE_weights].peak_bytes;
	bytes[VRT_RUNG_RESERVES] =
	        rd->phase[VRT_PHASE_kv_cache].peak_bytes +
	        rd->phase[VRT_LOAD_PHASE_INFERRED_KV].peak_bytes +
	        rd->phase[VRT_PHASE_cuda_graph].peak_bytes +
	        rd->phase[VRT_PHASE_comm].peak_bytes;
	bytes[VRT_RUNG_ACTIVATIONS] = rd->phase[VRT_PHASE_profile].peak_bytes;
	bytes[VRT_RUNG_INFLIGHT] = 0;
	if (x->rung >= 0 && x->rung < VRT_RUNG_COUNT)
		bytes[x->rung] += x->needed_bytes;
	d->have_ladder = 1;
	d->ladder_device = x->device;
	d->capacity_bytes = x->budget_bytes ? x->budget_bytes : c->total;
	d->batch_rung = 1; /* at start-up: the profiling run's batch */
	for (k = 0; k < VRT_RUNG_COUNT; k++) {
		sum += bytes[k];
		d->ladder[k].bytes = bytes[k];
		d->ladder[k].cumulative = sum;
		d->ladder[k].fits = !d->capacity_bytes ||
		                    sum <= d->capacity_bytes;
	}
	vrt_diagnose_log_ladder(c);
}

/* d, e. A budget refusal with no failed allocation behind it: the verdict
 * of that budget in the engine's terms. */
void vrt_diagnose_log_refusal(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_refusal *x = &c->log->refusal;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	size_t i;

	d->verdict = x->verdict;
	d->log_refusal = 1;
	d->rung = x->rung;
	d->device = x->device;
	d->have_failure = 0;
	snprintf(d->detail, sizeof(d->detail), "%s", x->detail);
	snprintf(d->stage, sizeof(d->stage), "%s", x->stage);
	if (x->device >= 0 && (size_t)x->device < c->r->ndevices) {
		c->fd = vrt_diagnose_dev(d, x->device);
		c->total = c->fd ? c->fd->total_bytes : 0;
		refusal_ladder(c, x);
		if (x->budget_bytes)
			vrt_diagnose_evidence(
			        d, "engine_budget_bytes", x->device,
			        VRT_DIAG_BYTES, x->budget_bytes,
			        "%s sizes its memory within %s of device %d's "
			        "%s: the ladder's capacity",
			        who, SZ(x->budget_bytes), x->device,
			        SZ(c->total));
	}
	for (i = 0; i < x->nevidence && d->nevidence < VRT_DIAG_MAX_ITEMS; i++)
		d->evidence[d->nevidence++] = x->evidence[i];
	for (i = 0; i < x->nactions; i++)
		vrt_diagnose_action(d, "%s", x->actions[i]);
	for (i = 0; i < x->ncosts; i++)
		vrt_diagnose_cost(d, "%s", x->costs[i]);
	if (c->root && vrt_diagnose_died(c->root))
		vrt_diagnose_evidence_exit(c, c->root);
	vrt_diagnose_evidence_near_miss(c);
	if (x->agree == 0)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "%s refused for this budget (log line %u), but its "
		        "value for %s (%" PRIu64 ") and %s (%" PRIu64
		        ") disagree: %s",
		        who, x->line, x->flag, x->engine_value,
		        d->source_log ? "its other numbers'" : "the trace's",
		        x->trace_value,
		        d->source_log ? "a line the reader misses, or memory "
		                        "the log does not print"
		                      : "a rule that misses, or memory outside "
		                        "the traced calls");
	else
		snprintf(d->confidence_reason, sizeof(d->confidence_reason),
		         "%s refused for this budget (log line %u)%s", who,
		         x->line,
		         x->agree != 1 ? "; no failed allocation, the engine's "
		                         "own check"
		         : d->source_log ? " and its other numbers agree with "
		                           "its value"
		                         : " and the trace agrees with its value");
}

/* d. A refusal that a failed allocation stands behind (or that came after
 * a failure replay took as fatal): the ladder's verdict and its actions
 * stand, with the engine's values beside them as evidence. */
void vrt_diagnose_log_refusal_beside(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_refusal *x = &c->log->refusal;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	size_t i;

	for (i = 0; i < x->nevidence && d->nevidence < VRT_DIAG_MAX_ITEMS; i++)
		d->evidence[d->nevidence++] = x->evidence[i];
	if (x->verdict != d->verdict)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "%s refused for its %s budget (log line %u, %s) where "
		        "the ladder names %s",
		        who, vrt_diagnose_verdict_name(x->verdict), x->line,
		        x->detail, vrt_diagnose_verdict_name(d->verdict));
}

/* f. The engine's numbers the trace disagrees with: on the ladder's device
 * (every device without a ladder); on the verdict's rung they make it less
 * sure. */
static void log_numbers(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const char *who = c->log->engine[0] ? c->log->engine : "the engine";
	char key[48];
	size_t i;

	for (i = 0; i < c->log->nnumbers; i++) {
		const struct vrt_diag_engine_number *n = &c->log->numbers[i];
		if (!n->disagrees ||
		    (d->have_ladder && n->device != d->ladder_device))
			continue;
		snprintf(key, sizeof(key), "engine_%s_bytes", n->what);
		vrt_diagnose_evidence(
		        d, key, n->device, VRT_DIAG_BYTES, n->engine_bytes,
		        "device %d: %s printed %s of %s (log line %u), the "
		        "trace holds %s (%+.1f%%)",
		        n->device, who, SZ(n->engine_bytes), n->what, n->line,
		        SZ(n->traced_bytes), n->diff_percent);
		if (d->rung >= 0 && n->rung == d->rung)
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_MEDIUM,
			        "the %s rung is the verdict's, and %s's "
			        "%s on device %d (%s) differs from the "
			        "trace's (%s): the rung may be mis-measured",
			        vrt_diagnose_rung_name(d->rung), who, n->what,
			        n->device, SZ(n->engine_bytes),
			        SZ(n->traced_bytes));
	}
}

/* What the log decided, as evidence after the verdict's own. */
void vrt_diagnose_log_evidence(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_log *log = c->log;
	const struct vrt_replay *r = c->r;
	char names[160] = "";
	size_t n = 0;
	int k;

	if (d->log_fatal) {
		const struct vrt_replay_failure *o =
		        r->decisive < r->nfails ? &r->fails[r->decisive] : NULL;
		if (o && r->decisive != d->failure)
			vrt_diagnose_evidence(
			        d, "log_fatal_failure", c->f->device,
			        VRT_DIAG_COUNT, log->fatal_line,
			        "%s; the trace alone would have taken the "
			        "failure at %.3fs (PID %" PRIu64 ")",
			        log->fatal_why,
			        (double)(o->ts - c->t->start_ns) / 1e9,
			        c->t->procs[o->proc].pid);
		else
			vrt_diagnose_evidence(d, "log_fatal_failure",
			                      c->f->device, VRT_DIAG_COUNT,
			                      log->fatal_line, "%s",
			                      log->fatal_why);
	}
	if (log->have_unmatched_error && !d->log_refusal) {
		vrt_diagnose_evidence(
		        d, "log_error_unrecorded", -1, VRT_DIAG_COUNT,
		        log->unmatched_line,
		        "the engine's log reports a memory error (line %u: "
		        "%.160s) that matches no recorded failure",
		        log->unmatched_line, log->unmatched_error);
		if (d->verdict == VRT_VERDICT_NONE)
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_MEDIUM,
			        "the engine's log reports a memory error (line "
			        "%u) the trace did not record: an allocation "
			        "outside the hooked calls, or a process that "
			        "was not traced",
			        log->unmatched_line);
	}
	if (d->log_ready && d->source_log)
		vrt_diagnose_evidence(
		        d, "engine_ready", -1, VRT_DIAG_SECONDS_NS,
		        (uint64_t)(log->ready_ts - c->t->start_ns),
		        "the engine said it serves at log line %u: what came "
		        "after is the request stage",
		        log->ready_line);
	else if (d->log_ready)
		vrt_diagnose_evidence(
		        d, "engine_ready", -1, VRT_DIAG_SECONDS_NS,
		        (uint64_t)(log->ready_ts - c->t->start_ns),
		        "the engine said it serves at %.3fs (log line %u); the "
		        "trace saw no request, so what came after is the "
		        "request stage",
		        (double)(log->ready_ts - c->t->start_ns) / 1e9,
		        log->ready_line);
	for (k = 0; k < VRT_DIAG_LOG_NFLAGS; k++)
		if (d->flags_from_log & (1u << k))
			n += (size_t)snprintf(names + n, sizeof(names) - n,
			                      "%s%s", n ? ", " : "",
			                      vrt_diagnose_log_flag_name(k));
	if (d->flags_from_log)
		vrt_diagnose_evidence(
		        d, "flags_from_log", -1, VRT_DIAG_COUNT,
		        (uint64_t)__builtin_popcount(d->flags_from_log),
		        "the engine's log gave what the command line left at "
		        "its defaults: %s",
		        names);
	log_numbers(c);
}
