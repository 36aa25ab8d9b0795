/*
 * diagnose_verdict.c — each verdict (host memory, other processes,
 * weights, the KV reserve, one request's context, a warm-up batch,
 * concurrency, the stream-ordered pool, a plain program, inconclusive,
 * none): its detail, its own evidence lines and the levers it offers
 * (diagnose_advice.c). Which verdict applies is decided by
 * diagnose_ladder.c. Pure, single-threaded: writes only the diagnosis and
 * struct ctx.
 */
#include "diagnose_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- the verdicts -------------------------------------------------------- */

void vrt_diagnose_verdict_host(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay *r = c->r;
	struct advice *a;

	d->verdict = VRT_VERDICT_HOST_MEMORY;
	d->device = -1;
	if (c->f && c->f->device < 0 && c->log && c->log->host_pageable) {
		/* the log names a pageable host allocation: RAM ran out */
		snprintf(d->detail, sizeof(d->detail), "host_ram_exhausted");
		vrt_diagnose_evidence_failure(c);
	} else if (c->f && c->f->device < 0) {
		snprintf(d->detail, sizeof(d->detail), "pinned_alloc_failed");
		vrt_diagnose_evidence_failure(c);
		vrt_diagnose_evidence(
		        d, "pinned_peak_bytes", -1, VRT_DIAG_BYTES,
		        r->host_pinned_peak,
		        "page-locked host memory peaked at %s before the "
		        "failure (pinned + registered)",
		        SZ(r->host_pinned_peak));
	} else {
		snprintf(d->detail, sizeof(d->detail), "host_ram_exhausted");
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "no allocation failed: the host samples show "
		        "MemAvailable near zero");
	}
	if (c->host.have) {
		vrt_diagnose_evidence(
		        d, "mem_available_min_bytes", -1, VRT_DIAG_BYTES,
		        c->host.min_available,
		        "host MemAvailable fell to %s at %.3fs",
		        SZ(c->host.min_available),
		        (double)(c->host.min_ts - c->t->start_ns) / 1e9);
		if (c->host.swap_total)
			vrt_diagnose_evidence(
			        d, "swap_free_min_bytes", -1, VRT_DIAG_BYTES,
			        c->host.min_swap_free,
			        "swap: %s free of %s at the lowest",
			        SZ(c->host.min_swap_free),
			        SZ(c->host.swap_total));
	}
	vrt_diagnose_evidence(
	        d, "vram_ok", -1, VRT_DIAG_COUNT, 0,
	        "not a VRAM problem: the GPU allocations did not fail");
	a = vrt_diagnose_advise(c, RANK_UNKNOWN);
	ACT(a,
	    "%sreduce page-locked host buffers (%s); offload less to the "
	    "CPU, or give the machine more RAM",
	    vrt_diagnose_engine_label(c->engine),
	    c->engine == VRT_ENGINE_VLLM     ? "--swap-space, --cpu-offload-gb"
	    : c->engine == VRT_ENGINE_SGLANG ? "--cpu-offload-gb"
	    : c->engine == VRT_ENGINE_LLAMACPP
	            ? "--no-mmap/--mlock, --no-kv-offload"
	            : "swap space and CPU offload settings");
	COST(a, "less host-side swap/offload space: preempted sequences are "
	        "recomputed instead of swapped");
}

/* llama.cpp and Ollama size their memory by layers and context, not by a
 * fraction: what fits where avail is left. */
static int spread_engine(const struct ctx *c)
{
	return !vrt_diagnose_setting((struct ctx *)c, VRT_ENGINE_MEM_FRACTION);
}

void vrt_diagnose_verdict_other(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	uint64_t room = vrt_diagnose_sub0(c->total, c->other);
	struct advice *a;

	d->verdict = VRT_VERDICT_OTHER_PROCESSES;
	snprintf(d->detail, sizeof(d->detail), "device_shared");
	/* without the baseline the rest fits: the rung that broke */
	d->rung = VRT_RUNG_BASELINE;
	vrt_diagnose_ladder_failure_confidence(c);
	vrt_diagnose_evidence_failure(c);
	vrt_diagnose_evidence_others(c, c->f->device, c->other);
	vrt_diagnose_evidence(
	        d, "shortfall_bytes", c->f->device, VRT_DIAG_BYTES,
	        c->shortfall,
	        "the call was %s short; without the other processes it would "
	        "have fit",
	        SZ(c->shortfall));
	a = vrt_diagnose_advise(c, RANK_ELSEWHERE);
	ACT(a,
	    "free the card: wait for the other process%s%s to finish or "
	    "move %s to another GPU, or run on an empty GPU (%s)",
	    d->nother_pids == 1 ? "" : "es",
	    d->nother_pids ? " named above" : "",
	    d->nother_pids == 1 ? "it" : "them",
	    vrt_diagnose_visible_devices(c->t, c->f->device));
	COST(a, "waiting for the card, or another card");
	/* TensorRT-LLM's fraction is of the memory free after the weights
	 * and its profile run: other processes are outside it already, and
	 * no smaller fraction makes room for what failed before it. */
	if (!c->total || c->engine == VRT_ENGINE_TRTLLM)
		return;
	if (!spread_engine(c)) {
		uint64_t fit = vrt_diagnose_advice_fit(c, 1000, room,
		                                       c->total),
		         now;
		int dflt;
		now = vrt_diagnose_advice_fraction_now(c, &dflt);
		a = vrt_diagnose_advise(
		        c, now > fit ? 1.0 - (double)fit / (double)now
		                     : RANK_FREE);
		ACT(a,
		    "%sfit into what is left: %s %.2f (%s of %s is available "
		    "to "
		    "this run), %s",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_setting(c, VRT_ENGINE_MEM_FRACTION),
		    (double)vrt_diagnose_advice_util_down(fit) / 1000.0,
		    SZ(room), SZ(c->total), vrt_diagnose_margin_words(c));
		COST(a, "a smaller memory fraction holds fewer tokens at once "
		        "(more preemption under load)");
	} else if (!vrt_diagnose_advice_ngl(c, room, 0)) {
		a = vrt_diagnose_advise(c, RANK_UNKNOWN);
		ACT(a,
		    "%sfit into what is left (%s of %s): lower %s or offload "
		    "fewer layers (%s)",
		    vrt_diagnose_engine_label(c->engine), SZ(room),
		    SZ(c->total), vrt_diagnose_setting(c, VRT_ENGINE_CONTEXT),
		    vrt_diagnose_setting(c, VRT_ENGINE_GPU_LAYERS)
		            ? vrt_diagnose_setting(c, VRT_ENGINE_GPU_LAYERS)
		            : "GPU layers");
		COST(a, "a shorter context or layers on the CPU");
	}
}

/* The devices the run asked to use: tensor x pipeline parallel degree,
 * the devices it allocated on, and for engines that spread over every
 * visible GPU (llama.cpp, Ollama, TGI without --num-shard) the devices
 * visible on the host of dev (unless told to keep to one: -sm none). */
static uint64_t devices_wanted(struct ctx *c, int32_t dev)
{
	const struct vrt_diagnosis *d = c->d;
	uint64_t want = d->ndevices, par = d->flags.tp ? d->flags.tp : 1;
	size_t i, visible = 0;

	par *= d->flags.pp ? d->flags.pp : 1;
	if (par > want)
		want = par;
	if (vrt_engine_info(c->engine)->spreads && !d->flags.tp &&
	    !d->flags.one_device && dev >= 0 && (size_t)dev < c->t->ndevices) {
		for (i = 0; i < c->t->ndevices; i++)
			visible += c->t->devices[i].host_idx ==
			           c->t->devices[dev].host_idx;
		if (visible > want)
			want = visible;
	}
	return want;
}

/* The device holding VRT_DIAG_SHARD_FRACTION of the weights of a run that
 * asked for several devices while the others stayed nearly empty, or
 * NULL. *want: the devices it asked for. */
const struct vrt_diag_device *vrt_diagnose_verdict_not_sharded(struct ctx *c,
                                                               uint64_t *want)
{
	const struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *heavy = NULL;
	uint64_t sumw = 0;
	size_t k;

	for (k = 0; k < d->ndevices; k++) {
		sumw += d->devices[k].weights_bytes;
		if (!heavy ||
		    d->devices[k].weights_bytes > heavy->weights_bytes)
			heavy = &d->devices[k];
	}
	if (!heavy || !sumw)
		return NULL;
	*want = devices_wanted(c, heavy->device);
	if (*want < 2 || (double)heavy->weights_bytes <
	                         VRT_DIAG_SHARD_FRACTION * (double)sumw)
		return NULL;
	/* A log that does not print the other ranks' lines apart (each
	 * sees its card as GPU 0) does not show an unsharded run */
	if (d->source_log && d->ndevices < *want)
		return NULL;
	for (k = 0; k < d->ndevices; k++) {
		const struct vrt_diag_device *x = &d->devices[k];
		if (x != heavy && x->peak_bytes * 10 > x->total_bytes)
			return NULL;
	}
	return heavy;
}

/* Ranks of a run stacked on one device while another visible device
 * stayed idle (a per-worker CUDA_VISIBLE_DEVICES naming the same card, a
 * launcher that ignores the local rank): two processes or more allocated
 * on dev and on no other device, and a device of the same host that no
 * process allocated on. A run whose parallel size is known to be 1 has no
 * ranks to place. Returns the first idle device (its trace index), or -1;
 * the ranks' PIDs into pids (at most max), their count into *n, and the
 * idle devices' count into *nidle. */
int32_t vrt_diagnose_verdict_misplaced_ranks(const struct ctx *c, int32_t dev,
                                             uint64_t *pids, size_t max,
                                             size_t *n, size_t *nidle)
{
	const struct vrt_replay *r = c->r;
	const struct vrt_trace *t = c->t;
	uint64_t used = 0;
	int32_t idle = -1;
	size_t i, k;

	*n = *nidle = 0;
	if (dev < 0 || dev >= 64 || (size_t)dev >= t->ndevices ||
	    (c->d->flags.tp == 1 && c->d->flags.pp <= 1))
		return -1;
	for (i = 0; i < r->nprocs && i < t->nprocs; i++) {
		used |= r->procs[i].devices;
		if (r->procs[i].devices != 1ull << dev)
			continue;
		if (*n < max)
			pids[*n] = t->procs[i].pid;
		++*n;
	}
	if (*n < 2)
		return -1;
	for (k = 0; k < t->ndevices && k < r->ndevices && k < 64; k++)
		if ((int32_t)k != dev && !(used >> k & 1) &&
		    t->devices[k].host_idx == t->devices[dev].host_idx &&
		    !r->dev[k].peak_bytes) {
			if (idle < 0)
				idle = (int32_t)k;
			++*nidle;
		}
	return idle;
}

/* "401 and 402", "401, 402 and 403" (n PIDs, at most max in v). */
static void pid_list(char *buf, size_t len, const uint64_t *v, size_t n,
                     size_t max)
{
	size_t i, o = 0;

	buf[0] = '\0';
	for (i = 0; i < n && i < max && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64,
		                      !i                           ? ""
		                      : i + 1 == (n < max ? n : max) ? " and "
		                                                     : ", ",
		                      v[i]);
	if (n > max && o < len)
		snprintf(buf + o, len - o, " and %zu more", n - max);
}

/* What one device holding the weights looks like: its share, and every
 * other device of its host the run could see, used or not. */
static void shard_evidence(struct ctx *c, const struct vrt_diag_device *heavy,
                           uint64_t sumw, uint64_t want)
{
	struct vrt_diagnosis *d = c->d;
	size_t k;

	if (sumw)
		vrt_diagnose_evidence(
		        d, "weights_share_percent", heavy->device,
		        VRT_DIAG_PERCENT, heavy->weights_bytes * 100 / sumw,
		        "device %d holds %" PRIu64 "%% of the weights (%s) "
		        "while the run asked for %" PRIu64 " devices",
		        heavy->device, heavy->weights_bytes * 100 / sumw,
		        SZ(heavy->weights_bytes), want);
	for (k = 0; k < c->t->ndevices && k < c->r->ndevices; k++) {
		const struct vrt_diag_device *x =
		        vrt_diagnose_dev(d, (int32_t)k);
		uint64_t tot = vrt_diagnose_dev_total(c->t, c->r, k);
		if ((int32_t)k == heavy->device ||
		    c->t->devices[k].host_idx !=
		            c->t->devices[heavy->device].host_idx)
			continue;
		vrt_diagnose_evidence(
		        d, "idle_device_peak_bytes", (int32_t)k, VRT_DIAG_BYTES,
		        x ? x->peak_bytes : 0,
		        "device %zu peaked at %s of %s: %s", k,
		        SZ(x ? x->peak_bytes : 0), SZ(tot),
		        x ? "nearly empty"
		          : "visible to the run, never allocated on");
	}
}

/* not_sharded because the ranks share a card: name them and the idle
 * card, and place them (never a parallel size the run already has). */
static void ranks_misplaced(struct ctx *c, int32_t dev, int32_t idle,
                            const uint64_t *pids, size_t n, size_t nidle)
{
	struct vrt_diagnosis *d = c->d;
	const char *tp = vrt_diagnose_flag_name(c->engine, N_TP);
	const struct vrt_diag_device *fd = vrt_diagnose_dev(d, dev);
	uint64_t sumw = 0;
	char list[160];
	struct advice *a;
	size_t k;

	snprintf(d->detail, sizeof(d->detail), "not_sharded");
	for (k = 0; k < d->ndevices; k++)
		sumw += d->devices[k].weights_bytes;
	if (fd)
		shard_evidence(c, fd, sumw, n);
	pid_list(list, sizeof(list), pids, n, 8);
	vrt_diagnose_evidence(
	        d, "ranks_on_one_device", dev, VRT_DIAG_COUNT, n,
	        "the ranks in PIDs %s are %s on device %d; device %d is idle%s "
	        "(visible to the run, nothing allocated on it)",
	        list, n == 2 ? "both" : "all", dev, idle,
	        nidle > 1 ? " and so are others" : "");
	if (d->flags.tp >= 2 && tp)
		vrt_diagnose_evidence(d, "tensor_parallel", -1, VRT_DIAG_COUNT,
		                      d->flags.tp,
		                      "the run asks for %s %" PRIu64
		                      ": the size is right, the "
		                      "placement is not",
		                      tp, d->flags.tp);
	a = vrt_diagnose_advise(c, RANK_FREE);
	ACT(a,
	    "%splace each rank on its own GPU: PIDs %s %s opened device %d "
	    "while device %d stayed idle; give every worker all the run's "
	    "cards (CUDA_VISIBLE_DEVICES=%d,%d on the whole run, or unset) "
	    "and let the launcher pick each rank's device from its local rank",
	    vrt_diagnose_engine_label(c->engine), list, n == 2 ? "both" : "all",
	    dev, idle, dev < idle ? dev : idle, dev < idle ? idle : dev);
	COST(a, "none: the idle card was meant to hold a rank");
}

/* weights: detail not_sharded / card_too_small / weights_do_not_fit. */
void vrt_diagnose_verdict_weights(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_diag_device *heavy;
	const struct vrt_model *m = d->model.have ? &d->model.desc : NULL;
	uint64_t sumw = 0, want = 0, wlive = c->x.weights;
	uint64_t room = vrt_diagnose_sub0(c->total, c->other);
	struct advice *a;
	size_t k;

	d->verdict = VRT_VERDICT_WEIGHTS;
	for (k = 0; k < d->ndevices; k++)
		sumw += d->devices[k].weights_bytes;
	vrt_diagnose_evidence_failure(c);
	{
		uint64_t pids[8];
		size_t n, nidle;
		int32_t idle = vrt_diagnose_verdict_misplaced_ranks(
		        c, c->f->device, pids, 8, &n, &nidle);
		if (idle >= 0) {
			ranks_misplaced(c, c->f->device, idle, pids, n, nidle);
			return;
		}
	}
	heavy = vrt_diagnose_verdict_not_sharded(c, &want);
	if (heavy) {
		snprintf(d->detail, sizeof(d->detail), "not_sharded");
		shard_evidence(c, heavy, sumw, want);
		if (d->flags.tp >= 2)
			vrt_diagnose_evidence(
			        d, "tensor_parallel", -1, VRT_DIAG_COUNT,
			        d->flags.tp,
			        "the command line asks for %s %" PRIu64,
			        vrt_diagnose_flag_name(c->engine, N_TP),
			        d->flags.tp);
		a = vrt_diagnose_advise(c, RANK_FREE);
		if (vrt_diagnose_flag_name(c->engine, N_TP))
			ACT(a,
			    "%sfix the sharding so each of the %" PRIu64
			    " devices loads its own slice: check that every "
			    "worker selects its own GPU (%s lists "
			    "%" PRIu64 " cards, %s %" PRIu64 ")",
			    vrt_diagnose_engine_label(c->engine), want,
			    vrt_diagnose_visible_devices(c->t, heavy->device),
			    want, vrt_diagnose_flag_name(c->engine, N_TP),
			    want);
		else
			ACT(a,
			    "%sspread the layers over the %" PRIu64
			    " visible devices: check the split settings "
			    "(llama.cpp -sm, -ts, -mg) and %s",
			    vrt_diagnose_engine_label(c->engine), want,
			    vrt_diagnose_visible_devices(c->t, heavy->device));
		COST(a, "none: the cards were meant to share the weights");
		if (d->rung != VRT_RUNG_WEIGHTS)
			vrt_diagnose_confidence(
			        c, VRT_CONFIDENCE_MEDIUM,
			        "the failure came at the %s rung; the "
			        "unsharded weights are what left it no "
			        "room",
			        vrt_diagnose_rung_name(d->rung));
		return;
	}
	/* The weights (with the call that failed, when it loaded weights)
	 * are nearly everything on the card. */
	if (wlive &&
	    wlive * 10 >= (c->live + c->f->requested_bytes + c->other) * 9) {
		snprintf(d->detail, sizeof(d->detail), "card_too_small");
		vrt_diagnose_evidence(
		        d, "weights_loaded_bytes", c->f->device, VRT_DIAG_BYTES,
		        wlive,
		        "weights alone fill device %d: %s loaded or "
		        "requested of %s",
		        c->f->device, SZ(wlive), SZ(c->total));
	} else
		snprintf(d->detail, sizeof(d->detail), "weights_do_not_fit");
	if (c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	if (!vrt_diagnose_flag_name(c->engine, N_TP)) {
		/* llama.cpp and Ollama: fewer layers on this GPU, a smaller
		 * GGUF, more GPUs. What the layers may use: the card less
		 * other processes and the compute buffer of a warm-up. */
		uint64_t avail = vrt_diagnose_sub0(room, c->x.profile);
		uint64_t kv_ctx = d->model.have ? d->model.kv_bytes_per_token *
		                                          d->model.context_len
		                                : 0;
		uint64_t cards = devices_wanted(c, c->f->device) + 1;
		vrt_diagnose_advice_ngl(c, avail, 1);
		uint64_t per = vrt_diagnose_advice_fit(c, 1, avail, 1);
		vrt_diagnose_advice_quant(c, vrt_diagnose_sub0(avail, kv_ctx));
		if (m && per)
			cards = (m->weight_bytes + kv_ctx + per - 1) / per;
		vrt_diagnose_advice_cards(c, cards > 1 ? cards : 2,
		                          "to keep every layer on a GPU");
		return;
	}
	if (m && c->total) {
		/* The cards the weights need, each keeping 20% for the KV
		 * cache and the margin spare. */
		uint64_t per = vrt_diagnose_advice_fit(c, 1, c->total / 10 * 8,
		                                       1);
		uint64_t n = per ? (m->weight_bytes + per - 1) / per : 2,
		         p2 = 2;
		while (p2 < n)
			p2 *= 2;
		/* never the parallel size the run already had */
		while (p2 <= d->flags.tp)
			p2 *= 2;
		a = vrt_diagnose_advise(c, RANK_HARDWARE);
		ACT(a,
		    "%sshard the weights over %" PRIu64 " cards: %s %" PRIu64
		    " (the config's %s of weights need at least %" PRIu64
		    " cards with 20%% of each left for the KV cache, %s)",
		    vrt_diagnose_engine_label(c->engine), p2,
		    vrt_diagnose_flag_name(c->engine, N_TP), p2,
		    SZ(m->weight_bytes), n, vrt_diagnose_margin_words(c));
		COST(a, "%" PRIu64 " cards instead of one; tensor parallelism "
		        "adds communication between them",
		     p2);
		vrt_diagnose_advice_cpu_offload(c, per);
	} else {
		a = vrt_diagnose_advise(c, RANK_HARDWARE);
		ACT(a,
		    "%sshard the weights over more cards: %s %" PRIu64
		    " (or more; --model-config tells how many)",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_flag_name(c->engine, N_TP),
		    d->flags.tp >= 2 ? d->flags.tp * 2 : 2);
		COST(a, "tensor parallelism adds communication between the "
		        "cards");
	}
	vrt_diagnose_advice_quant(c, room);
}

/* kv_cache at the reserves rung: the KV reserve itself, or a graph
 * capture / communicator setup the reserve left no room for. */
void vrt_diagnose_verdict_reserve(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const struct vrt_engine_info *e = vrt_engine_info(c->engine);
	int graph = f->phase == VRT_PHASE_cuda_graph,
	    comm = f->phase == VRT_PHASE_comm, kv_call;
	uint64_t need;
	struct advice *a;

	d->verdict = VRT_VERDICT_KV_CACHE;
	vrt_diagnose_evidence_failure(c);
	if (c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	if (graph || comm) {
		snprintf(d->detail, sizeof(d->detail), "%s%s",
		         graph ? "graph_capture" : "comm",
		         c->x.kv ? "_after_reserve" : "_buffers");
		vrt_diagnose_evidence(
		        d, "reserve_bytes", f->device, VRT_DIAG_BYTES, c->x.kv,
		        "%s asked %s with %s free after the KV cache reserve "
		        "(%s) was sized: the reserve left no room for it",
		        graph ? "CUDA graph capture" : "communicator setup",
		        SZ(f->requested_bytes), SZ(f->free_bytes), SZ(c->x.kv));
		vrt_diagnose_advice_fraction(
		        c,
		        vrt_diagnose_advice_to_free(c, f->requested_bytes,
		                                    f->free_bytes),
		        graph ? "for the graph capture"
		              : "for the communicators");
		if (graph && e->no_graphs) {
			a = vrt_diagnose_advise(c, RANK_EAGER);
			ACT(a, "%srun without CUDA graphs: %s",
			    vrt_diagnose_engine_label(c->engine), e->no_graphs);
			COST(a,
			     "without CUDA graphs every decode step launches "
			     "its kernels one by one: slower decoding");
		}
		if (graph && e->graph_sizes) {
			a = vrt_diagnose_advise(c, RANK_GRAPHS);
			ACT(a, "%scapture fewer graph sizes: %s",
			    vrt_diagnose_engine_label(c->engine),
			    e->graph_sizes);
			COST(a, "batches larger than the largest graph run "
			        "without one: slower decoding at high load");
		}
		return;
	}
	/* The reserve itself did not fit next to the weights (or, when a
	 * later call failed, left it no room). */
	snprintf(d->detail, sizeof(d->detail), "kv_reserve");
	kv_call = f->phase == VRT_PHASE_kv_cache ||
	          f->phase == VRT_LOAD_PHASE_INFERRED_KV;
	need = kv_call ? f->requested_bytes : c->x.kv;
	if (f->free_bytes >= need && c->free_estimated)
		vrt_diagnose_evidence(
		        d, "kv_reserve_requested_bytes", f->device,
		        VRT_DIAG_BYTES, need,
		        "the KV cache reserve %s %s; the log's numbers leave "
		        "%s after the weights: what else held the card is not "
		        "in the log",
		        kv_call ? "asked" : "holds", SZ(need),
		        SZ(f->free_bytes));
	else
		vrt_diagnose_evidence(
		        d, "kv_reserve_requested_bytes", f->device,
		        VRT_DIAG_BYTES, need,
		        "the KV cache reserve %s %s with %s left after the "
		        "weights: %s short",
		        kv_call ? "asked" : "holds", SZ(need),
		        SZ(f->free_bytes), SZ(c->shortfall));
	if (spread_engine(c)) {
		/* llama.cpp's KV cache grows with -c: the context that fits,
		 * a quantized cache, or fewer layers on the GPU. */
		vrt_diagnose_advice_scale(
		        c, VRT_ENGINE_CONTEXT, d->flags.max_model_len, 0,
		        f->free_bytes, need, "lower the context",
		        "the KV cache's bytes");
		vrt_diagnose_advice_kv_quant(
		        c, vrt_diagnose_advice_to_free(c, need, f->free_bytes));
		if (vrt_diagnose_setting(c, VRT_ENGINE_GPU_LAYERS) &&
		    d->model.have)
			vrt_diagnose_advice_ngl(
			        c, vrt_diagnose_sub0(c->total, c->other), 0);
		return;
	}
	/* The engines that size the reserve as a fraction of the card. */
	vrt_diagnose_advice_fraction(
	        c, vrt_diagnose_advice_to_free(c, need, f->free_bytes),
	        "so the reserve fits what the weights leave");
}

/* A request's failure whose size the log does not print (a pool's growth
 * refused): what the requests needed is not known, only that it was more
 * than the room left. The advice names the levers without sizing them:
 * fewer tokens per step (half as many), and for several requests, fewer
 * of them at once. Returns 1 when it gave the advice. */
static int unsized_advice(struct ctx *c, uint32_t inflight)
{
	const struct vrt_diag_flags *fl = &c->d->flags;
	int field = vrt_diagnose_setting(c, VRT_ENGINE_UBATCH)
	                    ? VRT_ENGINE_UBATCH
	                    : VRT_ENGINE_BATCH_TOKENS;
	uint64_t v = field == VRT_ENGINE_UBATCH ? fl->ubatch : fl->batch_tokens;
	struct advice *a;
	char b[96];

	if (!c->d->source_log || c->f->requested_bytes)
		return 0;
	if (!v && c->engine == VRT_ENGINE_LLAMACPP)
		v = 512;
	vrt_diagnose_evidence(
	        c->d, "request_need_unknown", c->f->device, VRT_DIAG_BYTES,
	        c->x.room,
	        "the log does not print how much the failing step asked: "
	        "more than the %s the weights and reserves left",
	        SZ(c->x.room));
	if (vrt_diagnose_setting(c, field)) {
		a = vrt_diagnose_advise(c, 0.25);
		if (v)
			ACT(a,
			    "%sfewer tokens per step: %s (was %" PRIu64 "): a "
			    "step's temporaries grow with its tokens; halve it "
			    "and re-run, the log does not say by how much it "
			    "was short%s",
			    vrt_diagnose_engine_label(c->engine),
			    vrt_diagnose_set_to(b, sizeof(b), c, field,
			                        v / 2 >= 32 ? v / 2 : 32),
			    v,
			    field == VRT_ENGINE_UBATCH
			            ? " (-b, the logical batch, may stay)"
			            : "");
		else
			ACT(a,
			    "%sfewer tokens per step: lower %s (half the value "
			    "the engine runs with, then re-run)",
			    vrt_diagnose_engine_label(c->engine),
			    vrt_diagnose_setting(c, field));
		COST(a, "long prompts are prefilled in more steps: lower "
		        "prefill throughput");
	}
	if (inflight > 1 && vrt_diagnose_setting(c, VRT_ENGINE_CONCURRENCY)) {
		a = vrt_diagnose_advise(c, 1.0 / (double)inflight);
		ACT(a,
		    "%sfewer requests at once: %s (%" PRIu32 " were in flight "
		    "when it failed)",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_set_to(b, sizeof(b), c, VRT_ENGINE_CONCURRENCY,
		                        inflight - 1),
		    inflight);
		COST(a, "requests past the cap wait in the queue (lower "
		        "throughput)");
	}
	vrt_diagnose_confidence(
	        c, VRT_CONFIDENCE_MEDIUM,
	        "the log does not print the failing step's size: the "
	        "budget is the one the failure was building, the advice "
	        "is not sized");
	return 1;
}

/* kv_cache at the activations rung of a request: one request does not
 * fit next to the reserves. */
void vrt_diagnose_verdict_context(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t one = c->x.one, room = c->x.room;

	d->verdict = VRT_VERDICT_KV_CACHE;
	snprintf(d->detail, sizeof(d->detail), "context_too_long");
	vrt_diagnose_evidence_failure(c);
	if (c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	if (unsized_advice(c, f->inflight))
		return;
	vrt_diagnose_evidence(
	        d, "single_request_bytes", f->device, VRT_DIAG_BYTES, one,
	        "one request needed %s of activations%s; weights + KV "
	        "reserve left %s for it",
	        SZ(one),
	        c->x.one_how == ONE_ONLY ? ""
	        : c->x.one_how == ONE_ALONE
	                ? " (measured alone)"
	                : " (the requests in flight, on average)",
	        SZ(room));
	/* llama.cpp's per-step temporaries are bounded by -ub (a prompt is
	 * processed -ub tokens at a time); the context bounds them only
	 * through attention scores, which flash attention does not keep */
	if (c->engine == VRT_ENGINE_LLAMACPP && d->flags.flash_attn)
		;
	else if (d->flags.max_model_len)
		vrt_diagnose_advice_scale(
		        c, VRT_ENGINE_CONTEXT, d->flags.max_model_len, 0, room,
		        one, "lower the context", "one request's activations");
	else if (c->engine != VRT_ENGINE_LLAMACPP) {
		struct advice *a = vrt_diagnose_advise(c, RANK_UNKNOWN);
		ACT(a, "%slower %s: one request needed %s where %s is left",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_setting(c, VRT_ENGINE_CONTEXT), SZ(one),
		    SZ(room));
		COST(a, "shorter inputs: prompts longer than the new limit are "
		        "rejected");
	}
	/* A long prompt's activations grow with the tokens of a step, which
	 * the batch setting caps (chunked prefill, llama.cpp's -ub). */
	vrt_diagnose_advice_step_tokens(c, room, one, "a step's activations");
	if (spread_engine(c))
		vrt_diagnose_advice_kv_quant(
		        c, vrt_diagnose_advice_to_free(c, one, room));
	else
		vrt_diagnose_advice_fraction(
		        c, vrt_diagnose_advice_to_free(c, one, room),
		        "for one request's activations");
}

/* concurrency at the activations rung of a load: the profiling or
 * warm-up run of the configured batch does not fit. */
void vrt_diagnose_verdict_batch(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t need = c->x.profile, have = c->x.room;
	int field = vrt_diagnose_setting(c, VRT_ENGINE_UBATCH)
	                    ? VRT_ENGINE_UBATCH
	                    : VRT_ENGINE_BATCH_TOKENS;
	uint64_t batch = field == VRT_ENGINE_UBATCH ? d->flags.ubatch
	                                            : d->flags.batch_tokens;
	char pb[32], left[64];
	struct advice *a;
	uint64_t pct;

	d->verdict = VRT_VERDICT_CONCURRENCY;
	snprintf(d->detail, sizeof(d->detail), "batch_activations");
	vrt_diagnose_evidence_failure(c);
	if (c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	/* Without the card's capacity (a log that never prints it) the room
	 * left is unknown, not nothing: no number is sized from it. */
	if (c->total)
		snprintf(left, sizeof(left), "%s", SZ(have));
	else
		snprintf(left, sizeof(left), "what the capacity leaves (not "
		                             "known)");
	vrt_diagnose_evidence(
	        d, "batch_activation_bytes", f->device, VRT_DIAG_BYTES, need,
	        "the %s run (phase %s: a dummy forward of the configured "
	        "batch) needed at least %s of activations; weights and "
	        "reserves left %s",
	        f->phase == VRT_PHASE_profile ? "profiling" : "warm-up",
	        vrt_load_phase_name(c->t, f->phase, pb, sizeof(pb)), SZ(need),
	        left);
	if (batch)
		vrt_diagnose_evidence(
		        d, "batch_tokens", -1, VRT_DIAG_TOKENS, batch,
		        "the command line sizes the batch at %s %" PRIu64
		        " tokens",
		        vrt_diagnose_setting(c, field), batch);
	pct = c->total && need ? vrt_diagnose_advice_fit(c, 100, have, need) : 0;
	if (!c->total ||
	    !vrt_diagnose_advice_scale(c, field, batch, 0, have, need,
	                               "fewer tokens per batch",
	                               "the batch's activations")) {
		a = vrt_diagnose_advise(c, RANK_UNKNOWN);
		/* a share below a tenth is no setting to type (as
		 * vrt_diagnose_advice_step_tokens) */
		if (vrt_diagnose_setting(c, field) && pct >= 10)
			ACT(a,
			    "%slower %s to about %" PRIu64 "%% of its current "
			    "value: the configured batch needed %s, %s is left "
			    "(%s)",
			    vrt_diagnose_engine_label(c->engine),
			    vrt_diagnose_setting(c, field), pct, SZ(need),
			    SZ(have), vrt_diagnose_margin_words(c));
		else if (vrt_diagnose_setting(c, field))
			ACT(a, "%slower %s: the configured batch needed %s%s",
			    vrt_diagnose_engine_label(c->engine),
			    vrt_diagnose_setting(c, field), SZ(need),
			    c->total ? "" : " (the room for it is not known: no "
			                    "capacity)");
		else
			ACT(a, "%slower the tokens per batch",
			    vrt_diagnose_engine_label(c->engine));
		COST(a, "smaller batches: long prompts are prefilled in more "
		        "steps (lower prefill throughput)");
	}
	/* one sequence is the fewest: no lever below it */
	if (d->flags.max_num_seqs != 1 &&
	    (!c->total ||
	     !vrt_diagnose_advice_scale(c, VRT_ENGINE_CONCURRENCY,
	                                d->flags.max_num_seqs, 0, have, need,
	                                "fewer sequences per batch",
	                                "the batch's activations")) &&
	    vrt_diagnose_setting(c, VRT_ENGINE_CONCURRENCY)) {
		a = vrt_diagnose_advise(c, RANK_UNKNOWN);
		ACT(a, "%sfewer sequences per batch: %s",
		    vrt_diagnose_engine_label(c->engine),
		    vrt_diagnose_setting(c, VRT_ENGINE_CONCURRENCY));
		COST(a, "fewer sequences share a step (lower throughput)");
	}
	if (c->x.kv && c->total)
		vrt_diagnose_advice_fraction(
		        c, vrt_diagnose_advice_to_free(c, need, have),
		        "for the batch's activations");
}

/* concurrency at the in-flight rung: one request fits, the overlap of
 * those in flight does not. */
void vrt_diagnose_verdict_concurrency(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	uint64_t one = c->x.one, room = c->x.room;
	uint64_t fit = one ? room / one : 0;
	uint64_t demand = one * vrt_diagnose_running(c, f->inflight);

	d->verdict = VRT_VERDICT_CONCURRENCY;
	snprintf(d->detail, sizeof(d->detail), "overlapping_requests");
	vrt_diagnose_evidence_failure(c);
	if (unsized_advice(c, f->inflight))
		return;
	if (c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	if (c->x.one_how == ONE_CACHE)
		vrt_diagnose_evidence(
		        d, "single_request_peak_bytes", f->device,
		        VRT_DIAG_BYTES, one,
		        "one request peaks at about %s: alone it grew nothing, "
		        "drawing on the %s a profiling / warm-up run left "
		        "cached, taken as the activations of %" PRIu64
		        " sequences",
		        SZ(one),
		        SZ(c->r->dev[f->device]
		                   .phase[VRT_PHASE_profile]
		                   .peak_bytes),
		        d->flags.max_num_seqs);
	else
		vrt_diagnose_evidence(
		        d, "single_request_peak_bytes", f->device,
		        VRT_DIAG_BYTES, one,
		        "one request peaks at %s%s: it fits", SZ(one),
		        c->x.one_how == ONE_ALONE
		                ? " (measured alone)"
		                : " (the requests in flight at the failure, on "
		                  "average)");
	vrt_diagnose_evidence(
	        d, "request_headroom_bytes", f->device, VRT_DIAG_BYTES, room,
	        "weights + KV cache + everything else leave %s for "
	        "requests on device %d",
	        SZ(room), f->device);
	vrt_diagnose_evidence(
	        d, "requests_that_fit", f->device, VRT_DIAG_COUNT, fit,
	        "%" PRIu64 " request%s fit%s at once; %" PRIu32
	        " %s in flight when it failed (at most %" PRIu32 ")%s",
	        fit, fit == 1 ? "" : "s", fit == 1 ? "s" : "", f->inflight,
	        f->inflight == 1 ? "was" : "were", c->r->max_inflight,
	        vrt_diagnose_running(c, f->inflight) < f->inflight
	                ? "; the engine runs its cap of them at once, the "
	                  "rest wait in its queue"
	                : "");
	vrt_diagnose_advice_seqs(
	        c, vrt_diagnose_advice_fit(c, 1, room, one ? one : 1),
	        f->inflight);
	/* What a step holds grows with its tokens: fewer tokens per step
	 * (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size,
	 * TGI --max-batch-prefill-tokens, llama.cpp -ub). */
	vrt_diagnose_advice_step_tokens(
	        c, room, demand, "the activations of the requests in flight");
	if (spread_engine(c))
		vrt_diagnose_advice_kv_quant(
		        c, vrt_diagnose_advice_to_free(c, demand, room));
	else
		vrt_diagnose_advice_fraction(
		        c, vrt_diagnose_advice_to_free(c, demand, room),
		        "for the requests in flight");
	vrt_diagnose_advice_cards(c, 2, "to serve more at once");
	if (c->x.one_how != ONE_ALONE)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "one request's activations were not measured alone: "
		        "%s",
		        c->x.one_how == ONE_CACHE
		                ? "lone requests drew on memory a profiling "
		                  "run left cached"
		                : "estimated as the requests in flight at "
		                  "the failure, on average");
}


/* inconclusive: detail, why, and what would tell. */

void vrt_diagnose_verdict_inconclusive(struct ctx *c, const char *detail,
                                       const char *why, const char *get)
{
	struct vrt_diagnosis *d = c->d;
	char rec[VRT_DIAG_TEXT];

	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1; /* the ladder is shown, but names no budget */
	snprintf(d->detail, sizeof(d->detail), "%s", detail);
	if (c->f)
		vrt_diagnose_evidence_failure(c);
	if (c->f && c->fd)
		vrt_diagnose_evidence_budget(c, c->fd);
	vrt_diagnose_confidence(c, VRT_CONFIDENCE_LOW, "%s", why);
	/* without a trace, what would tell is a trace */
	if (d->source_log && strcmp(detail, "not_an_engine_log"))
		get = vrt_diagnose_log_record_words(c, rec, sizeof(rec));
	ACT(vrt_diagnose_advise(c, RANK_FREE), "%s", get);
}

/* Room to leave on the tightest device so the margin is spare again:
 * fewer bytes reserved (the memory fraction, llama.cpp's context or a
 * quantized KV cache). */
static void restore_margin(struct ctx *c, uint64_t need_free, const char *why)
{
	struct vrt_diagnosis *d = c->d;
	uint64_t kv = vrt_diagnose_advice_kv_bytes(c);

	if (!spread_engine(c)) {
		vrt_diagnose_advice_fraction(c, need_free, why);
	} else if (kv > need_free && d->flags.max_model_len) {
		/* The context whose KV cache is need_free smaller: the scale
		 * takes the margin off once more, so have gives it back. */
		uint64_t have = kv - need_free + vrt_diagnose_margin_bytes(c);
		vrt_diagnose_advice_scale(c, VRT_ENGINE_CONTEXT,
		                          d->flags.max_model_len, 0, have, kv,
		                          "lower the context",
		                          "the KV cache's bytes");
	}
	if (spread_engine(c))
		vrt_diagnose_advice_kv_quant(c, need_free);
}

void vrt_diagnose_verdict_none(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	struct vrt_diag_device *tight = NULL;
	uint64_t need_free = 0, want;
	struct advice *a;
	size_t k;

	d->verdict = VRT_VERDICT_NONE;
	snprintf(d->detail, sizeof(d->detail), "%s",
	         c->r->recovered ? "near_miss" : "fits");
	for (k = 0; k < d->ndevices; k++) {
		struct vrt_diag_device *x = &d->devices[k];
		vrt_diagnose_evidence(
		        d, "headroom_bytes", x->device, VRT_DIAG_BYTES,
		        x->headroom_bytes,
		        "device %d: peak %s of %s, headroom %s (weights %s, "
		        "KV cache %s)",
		        x->device, SZ(x->peak_bytes), SZ(x->total_bytes),
		        SZ(x->headroom_bytes), SZ(x->weights_bytes),
		        SZ(x->kv_bytes));
		if (x->other_bytes >= VRT_DIAG_OTHER_MIN_BYTES)
			vrt_diagnose_evidence_others(c, x->device,
			                             x->other_bytes);
		/* The device furthest below the margin (vrt_diag_fits_margin's
		 * bytes, as plan's "tight"). */
		want = vrt_diag_margin_bytes(x->total_bytes, d->margin_pct);
		if (x->headroom_bytes < want &&
		    want - x->headroom_bytes > need_free) {
			need_free = want - x->headroom_bytes;
			tight = x;
		}
	}
	if (c->r->max_inflight)
		vrt_diagnose_evidence(d, "max_inflight", -1, VRT_DIAG_COUNT,
		                      c->r->max_inflight,
		                      "at most %" PRIu32 " request%s in flight",
		                      c->r->max_inflight,
		                      c->r->max_inflight == 1 ? "" : "s");
	if (tight)
		vrt_diagnose_evidence(
		        d, "headroom_below_margin", tight->device,
		        VRT_DIAG_BYTES, tight->headroom_bytes,
		        "device %d: the headroom of %s is below the %d%% "
		        "margin (%s of %s): a longer prompt, another request "
		        "or a fragmented cache can fail",
		        tight->device, SZ(tight->headroom_bytes),
		        vrt_diagnose_margin_pct(c),
		        SZ(vrt_diag_margin_bytes(tight->total_bytes,
		                                 d->margin_pct)),
		        SZ(tight->total_bytes));
	vrt_diagnose_evidence_near_miss(c);
	if (tight) {
		c->fd = tight;
		c->total = tight->total_bytes;
	}
	if (c->r->recovered) {
		a = vrt_diagnose_advise(c, RANK_FREE);
		ACT(a, "nothing failed for good, but the headroom is thin: the "
		       "allocator had to empty its cache to carry on; leave "
		       "more room before the load grows");
		COST(a, "emptying the cache stalls the server (it synchronizes "
		        "and frees before retrying)");
		if (!need_free)
			for (k = 0; k < c->r->nfails; k++)
				if (c->r->fails[k].recovered &&
				    c->r->fails[k].requested_bytes > need_free)
					need_free =
					        c->r->fails[k].requested_bytes;
		if (!c->total && d->ndevices) {
			c->fd = &d->devices[0];
			c->total = c->fd->total_bytes;
		}
		restore_margin(c, need_free, "to keep the margin spare");
	} else if (tight) {
		a = vrt_diagnose_advise(c, RANK_FREE);
		ACT(a,
		    "nothing failed, but device %d keeps less than the %d%% "
		    "margin (%s free of %s): leave more room before the load "
		    "grows",
		    tight->device, vrt_diagnose_margin_pct(c),
		    SZ(tight->headroom_bytes), SZ(tight->total_bytes));
		restore_margin(c, need_free, "to keep the margin spare");
	} else {
		a = vrt_diagnose_advise(c, RANK_FREE);
		ACT(a,
		    "nothing to change: no allocation failed and every "
		    "device keeps the %d%% margin spare",
		    vrt_diagnose_margin_pct(c));
	}
	if (c->root && c->root->running)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "the run is still recording: nothing has failed so "
		        "far, and a load still to come may change that");
	else if (c->root && c->root->exit_kind == VRT_EXIT_NONE &&
	         !c->root->has_trailer)
		vrt_diagnose_confidence(
		        c, VRT_CONFIDENCE_MEDIUM,
		        "the run's end was not recorded (no exit status, no "
		        "clean end)");
}

void vrt_diagnose_verdict_pool(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	struct advice *a;

	vrt_diagnose_ladder_climb(c);
	vrt_diagnose_verdict_inconclusive(
	        c, "pool_kept",
	        "the run's own stream-ordered pool can have held the memory "
	        "the call needed: freed bytes it keeps are counted used by the "
	        "driver, and pieces too small for the call fail it; the trace "
	        "does not see the pool trimmed, so a process that came and "
	        "went "
	        "between NVML samples would look the same, and no budget of "
	        "the server's is shown too small",
	        "which budget needs the room: the driver does not say how "
	        "the pool's pieces are cut; record the same load with an "
	        "allocator that gives memory back (below) and analyze that "
	        "run");
	vrt_diagnose_evidence(
	        d, "pool_kept_bytes", f->device, VRT_DIAG_BYTES, c->pool_kept,
	        "the driver counted %s used beyond the run's live bytes and "
	        "other processes; the run's stream-ordered pool can have "
	        "kept up to %s of freed allocations",
	        SZ(c->pool_kept), SZ(f->pool_kept_max));
	vrt_diagnose_evidence(
	        d, "shortfall_bytes", f->device, VRT_DIAG_BYTES, c->shortfall,
	        "the call was %s short; with the pool's kept bytes given "
	        "back it would have fit",
	        SZ(c->shortfall));
	a = vrt_diagnose_advise(c, RANK_FREE);
	ACT(a,
	    "%srun with PyTorch's native allocator (unset "
	    "backend:cudaMallocAsync in PYTORCH_CUDA_ALLOC_CONF) or with "
	    "expandable_segments:True: both give cached memory back "
	    "before they fail",
	    vrt_diagnose_engine_label(c->engine));
	COST(a, "none for serving; a different allocator's timings");
}

/* The report of a plain program (a script, a test, a training job) that
 * ran out of memory: the failing call, where it was made and what held
 * the device, instead of a server's budgets. */
void vrt_diagnose_verdict_program(struct ctx *c)
{
	struct vrt_diagnosis *d = c->d;
	const struct vrt_replay_failure *f = c->f;
	const char *site = d->failing_site[0] ? d->failing_site : "the call";
	struct advice *a;

	d->verdict = VRT_VERDICT_INCONCLUSIVE;
	d->rung = -1;
	d->have_ladder = 0;
	d->not_server = 1;
	snprintf(d->detail, sizeof(d->detail), "not_a_server");
	vrt_diagnose_evidence(
	        d, "held_bytes", f->device, VRT_DIAG_BYTES, c->live,
	        "%s asked for %s on device %d with %s of %s held by this "
	        "run%s%s%s",
	        site, SZ(f->requested_bytes), f->device, SZ(c->live),
	        SZ(c->total), c->other ? " and " : "",
	        c->other ? SZ(c->other) : "",
	        c->other ? " by other processes" : "");
	vrt_diagnose_evidence_failure(c);
	vrt_diagnose_confidence(
	        c, VRT_CONFIDENCE_MEDIUM,
	        "not a server: the process never listened, served no "
	        "request and runs no engine vramtrace knows, so the "
	        "server budgets (weights, KV cache, requests) do not "
	        "apply; the failing call and what held the device are the "
	        "evidence");
	ACT(vrt_diagnose_advise(c, RANK_FREE),
	    "free what the program no longer needs before %s, or ask for "
	    "less at once: the call paths holding the device are listed "
	    "under the top allocation sites",
	    site);
	a = vrt_diagnose_advise(c, RANK_ELSEWHERE);
	ACT(a, "run it on a card with more free memory (choose it with "
	       "CUDA_VISIBLE_DEVICES)");
	COST(a, "another card");
	/* A server of an engine vramtrace does not know, dying while it
	 * loads, looks the same until its phases have names. */
	if (f->phase == VRT_PHASE_unattributed)
		ACT(vrt_diagnose_advise(c, RANK_ELSEWHERE),
		    "if it is a server that had not started listening yet, "
		    "name its phases: `vramtrace rules RUN` lists the call "
		    "paths no rule matched; add a rules file (--rules) or "
		    "annotate the code (vramtrace_phase_push)");
}
