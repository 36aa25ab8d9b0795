/*
 * enginelog_trtllm.c — TensorRT-LLM's sentences: the KV cache and memory
 * lines, readiness, running requests, errors. Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int vrt_enginelog_trtllm_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_TRTLLM;
	struct cap c;
	struct vrt_enginelog_error *e;

	/* "[MemUsageChange] Allocated 41.11 GiB for max tokens in paged KV
	 * cache (524288)." (later without "in paged KV cache") */
	if (vrt_enginelog_scan(msg, "Allocated %f GiB for max tokens%*(%u)",
	                       &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		                              c.v[0] * GIB, c.tol[0] * GIB,
		                              0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS, -1,
		                              c.v[1], 0, 0))
			return -1;
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "Memory usage when calculating max tokens in paged kv "
	            "cache: total: %f GiB, available: %f GiB",
	            &c))
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, -1,
		                                 c.v[0] * GIB, c.tol[0] * GIB,
		                                 0) < 0
		               ? -1
		               : 1;
	/* the PyTorch backend's estimation */
	if (vrt_enginelog_scan(
	            msg,
	            "Memory used after loading model weights (inside torch) "
	            "in memory usage profiling: %f GiB",
	            &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_profile);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_WEIGHTS,
		                                 -1, c.v[0] * GIB,
		                                 c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "Peak memory during memory usage profiling (torch + "
	            "non-torch): %f GiB",
	            &c)) {
		double v;
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan_keyval(msg, "fraction is set", &v))
			vrt_enginelog_record_config(
			        log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		/* the KV cache it is about to allocate */
		if (vrt_enginelog_scan(
		            msg,
		            "available KV cache memory when calculating max "
		            "tokens: %f GiB",
		            &c))
			log->kv_plan = (uint64_t)(c.v[0] * GIB);
		if (vrt_enginelog_scan(msg, "device total memory %f GiB", &c) &&
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, -1,
		                              c.v[0] * GIB, c.tol[0] * GIB, 0))
			return -1;
		return 1;
	}
	if (vrt_enginelog_scan(msg, "Number of tokens per block: %u", &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_BLOCK_SIZE, c.v[0]);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "max_seq_len=%u, max_num_requests=%u",
	                       &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_MAX_MODEL_LEN,
		                            c.v[0]);
		vrt_enginelog_record_config(log, E, VRT_ELC_MAX_NUM_SEQS,
		                            c.v[1]);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "Loaded engine size: %u MiB", &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_WEIGHTS,
		                                 -1, c.v[0] * MIB, MIB, 0) < 0
		               ? -1
		               : 1;
	}
	/* "iter = 5559, host_step_time = 62.5ms, num_scheduled_requests: 5" */
	if (vrt_enginelog_scan(msg, "num_scheduled_requests: %u", &c)) {
		vrt_enginelog_record_vote(log, E, 1);
		vrt_enginelog_record_running(log, (uint64_t)c.v[0]);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	/* "Executor creation failed due to insufficient GPU memory" and "The
	 * following component could not be created: KV cache" */
	if (vrt_enginelog_scan_find(msg, "due to insufficient GPU memory") ||
	    vrt_enginelog_scan(
	            msg, "The following component could not be created: %*",
	            &c)) {
		int kv = vrt_enginelog_scan_find(msg, "KV cache") != NULL;
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_EXECUTOR))) {
			if (kv)
				e->phase = VRT_PHASE_kv_cache;
			if (kv && log->kv_plan) {
				e->requested_bytes = log->kv_plan;
				e->requested_tol = (uint64_t)(0.005 * GIB);
				e->have |= VRT_ELH_REQUESTED;
			}
			if (vrt_enginelog_scan(msg, "%z required", &c) ||
			    vrt_enginelog_scan(msg, "requested %z", &c)) {
				e->requested_bytes = (uint64_t)c.v[0];
				e->requested_tol = (uint64_t)c.tol[0];
				e->have |= VRT_ELH_REQUESTED;
			}
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	if (li->level_error && vrt_enginelog_scan_find(msg, "out of memory") &&
	    (vrt_enginelog_scan_find(msg, "TensorRT-LLM") || log->engine == E ||
	     log->votes[E])) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_OOM_OTHER)))
			vrt_enginelog_record_commit(log);
		return 1;
	}
	return 0;
}
