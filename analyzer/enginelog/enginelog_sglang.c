/*
 * enginelog_sglang.c — SGLang's sentences: its memory pool and weight
 * lines, readiness, batches and running requests, its errors.
 * Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int vrt_enginelog_sglang_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_SGLANG;
	unsigned rank = li->rank >= 0 && li->rank < 64 ? (unsigned)li->rank : 0;
	struct cap c;
	struct vrt_enginelog_error *e;
	double v;

	if (vrt_enginelog_scan(msg, "Load weight begin. avail mem=%f GB", &c)) {
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		log->sglang_avail[0][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_FREE, -1,
		                                 c.v[0] * GIB, c.tol[0] * GIB,
		                                 0) < 0
		               ? -1
		               : 1;
	}
	/* 0.4: "Load weight end. type=X, dtype=Y, avail mem=A GB, mem
	 * usage=W GB."; 0.5: "Load weight end. elapsed=S s, type=X,
	 * quant=Q, avail mem=A GB, mem usage=W GB." */
	if (vrt_enginelog_scan(msg, "Load weight end.%*mem usage=%f GB", &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_WEIGHTS,
		                                 -1, c.v[0] * GIB,
		                                 c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(msg, "Load weight end.%*avail mem=%f GB", &c)) {
		double before = (double)log->sglang_avail[0][rank] / 1000;
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		if (before > c.v[0])
			return vrt_enginelog_record_fact(
			               log, li, E, VRT_ELK_WEIGHTS, -1,
			               (before - c.v[0]) * GIB, 0.01 * GIB,
			               0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "KV Cache is allocated. #tokens: %u, K size: %f GB, V "
	            "size: %f GB",
	            &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS, -1,
		                              c.v[0], 0, 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		                              (c.v[1] + c.v[2]) * GIB,
		                              (c.tol[1] + c.tol[2]) * GIB, 0))
			return -1;
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg, "KV Cache is allocated. #tokens: %u, KV size: %f GB",
	            &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS, -1,
		                              c.v[0], 0, 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		                              c.v[1] * GIB, c.tol[1] * GIB, 0))
			return -1;
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg, "Capture cuda graph begin.%*avail mem=%f GB", &c)) {
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
		log->sglang_avail[1][rank] = (uint64_t)(c.v[0] * 1000 + 0.5);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "Capture cuda graph end.%*mem usage=%f GB",
	                       &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_GRAPH, -1,
		                                 c.v[0] * GIB, c.tol[0] * GIB,
		                                 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(msg, "Capture cuda graph end.%*avail mem=%f GB",
	                       &c)) {
		double before = (double)log->sglang_avail[1][rank] / 1000;
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		if (before > c.v[0])
			return vrt_enginelog_record_fact(
			               log, li, E, VRT_ELK_GRAPH, -1,
			               (before - c.v[0]) * GIB, 0.01 * GIB,
			               0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	/* a warning: SGLang uses the profiled value */
	if (vrt_enginelog_scan(
	            msg,
	            "max_total_tokens=%u is larger than the profiled value "
	            "%u",
	            &c)) {
		vrt_enginelog_record_vote(log, E, 4);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS,
		                                 -1, c.v[1], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan_find(msg, "max_total_num_tokens=")) {
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan_keyval(msg, "max_running_requests=", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_NUM_SEQS, v);
		if (vrt_enginelog_scan_keyval(msg, "context_len=", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_MODEL_LEN, v);
		if (vrt_enginelog_scan_keyval(msg, "chunked_prefill_size=", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BATCH, v);
		if (vrt_enginelog_scan_keyval(msg, "max_total_num_tokens=", &v))
			return vrt_enginelog_record_fact(log, li, E,
			                                 VRT_ELK_KV_TOKENS, -1,
			                                 v, 0, 0) < 0
			               ? -1
			               : 1;
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "server_args=ServerArgs(")) {
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan_keyval(msg, "mem_fraction_static=", &v))
			vrt_enginelog_record_config(
			        log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		if (vrt_enginelog_scan_keyval(msg, "tp_size=", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_TP, v);
		if (vrt_enginelog_scan_keyval(msg, "context_length=", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_MODEL_LEN, v);
		if (vrt_enginelog_scan_keyval(msg, "max_running_requests=", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_NUM_SEQS, v);
		if (vrt_enginelog_scan_keyval(msg, "page_size=", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BLOCK_SIZE,
			                            v);
		if (vrt_enginelog_scan_keyval(msg, "chunked_prefill_size=", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BATCH, v);
		vrt_enginelog_command_sglang(
		        log, vrt_enginelog_scan_find(msg, "ServerArgs(") + 11);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg,
	                            "Not enough memory. Please try to increase "
	                            "--mem-fraction-static")) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_MEM_FRACTION))) {
			if (vrt_enginelog_scan_keyval(
			            msg, "mem_fraction_static=", &v)) {
				e->mem_fraction_milli =
				        (uint64_t)(v * 1000 + 0.5);
				e->have |= VRT_ELH_MEM_FRACTION;
			}
			e->phase = VRT_PHASE_kv_cache;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* 0.5: "Loaded weights leave no GPU memory for the KV cache under
	 * --mem-fraction-static=F. Raise --mem-fraction-static above S
	 * (minimum viable = 1 - available/pre = M)." */
	if (vrt_enginelog_scan(
	            msg,
	            "Loaded weights leave no GPU memory for the KV cache "
	            "under --mem-fraction-static=%f",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_MEM_FRACTION))) {
			e->mem_fraction_milli = (uint64_t)(c.v[0] * 1000 + 0.5);
			e->have |= VRT_ELH_MEM_FRACTION;
			if (vrt_enginelog_scan(
			            msg, "Raise --mem-fraction-static above %f",
			            &c)) {
				e->suggested_fraction_milli =
				        (uint64_t)(c.v[0] * 1000 + 0.999);
				e->have |= VRT_ELH_SUGGESTED_FRACTION;
			}
			e->phase = VRT_PHASE_kv_cache;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* "Prefill batch. #new-seq: 1, #new-token: 1802, #cached-token: 0,
	 * token usage: 0.01, #running-req: 3, #queue-req: 0" and "Decode
	 * batch. #running-req: 4, #token: 8000, ..." */
	if (vrt_enginelog_scan_find(msg, "Prefill batch.") ||
	    vrt_enginelog_scan_find(msg, "Decode batch.")) {
		uint64_t run = 0, fresh = 0;
		vrt_enginelog_record_vote(log, E, 1);
		if (vrt_enginelog_scan_keyval(msg, "#running-req:", &v))
			run = (uint64_t)v;
		if (vrt_enginelog_scan_keyval(msg, "#new-seq:", &v)) {
			uint64_t k;
			fresh = (uint64_t)v;
			for (k = 0; k < fresh && k < 4096; k++)
				vrt_enginelog_record_request(log, li, E, 1);
		}
		if (vrt_enginelog_scan_keyval(msg, "#new-token:", &v))
			log->prompt_tokens = (uint64_t)v;
		vrt_enginelog_record_running(log, run + fresh);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	if (vrt_enginelog_scan_find(
	            msg, "The server is fired up and ready to roll")) {
		vrt_enginelog_record_ready(log, li, E, 2);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}
