/*
 * enginelog_tgi.c — Text Generation Inference's sentences: the
 * launcher's and the shards' memory lines, warm-up, readiness, requests
 * and errors. Its Args are read in enginelog_command.c. Single-threaded
 * per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int vrt_enginelog_tgi_rule(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	const int E = VRT_ENGINELOG_TGI;
	struct cap c;
	struct vrt_enginelog_error *e;
	size_t n = strlen(msg);

	if (vrt_enginelog_scan(msg, "KV-cache blocks: %u, size: %u", &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_BLOCK_SIZE, c.v[1]);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BLOCKS, -1,
		                              c.v[0], 0, 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS, -1,
		                              c.v[0] * c.v[1], 0, 0))
			return -1;
		return 1;
	}
	if (vrt_enginelog_scan(msg, "Setting max batch total tokens to %u",
	                       &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_MAX_BATCH_TOKENS,
		                            c.v[0]);
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg, "Not enough memory to handle %u prefill tokens", &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_PREFILL_TOKENS))) {
			e->tokens = (uint64_t)c.v[0];
			e->have |= VRT_ELH_TOKENS;
			e->phase = VRT_PHASE_profile;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg, "Not enough memory to handle `max_total_tokens=%u`",
	            &c)) {
		if ((e = vrt_enginelog_record_error(
		             log, li, E, VRT_ELE_MAX_TOTAL_TOKENS))) {
			e->tokens = (uint64_t)c.v[0];
			e->have |= VRT_ELH_TOKENS;
			e->phase = VRT_PHASE_kv_cache;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* the shard's warm-up and its serving methods ("Method Warmup
	 * encountered an error.", "Method Decode ...") */
	if (vrt_enginelog_scan(msg, "Method %w encountered an error", &c)) {
		vrt_enginelog_record_vote(log, E, 4);
		if (!strcmp(c.w[0], "Warmup"))
			vrt_enginelog_record_step(log, VRT_PHASE_profile);
		else if (!strcmp(c.w[0], "Prefill") ||
		         !strcmp(c.w[0], "Decode"))
			log->traceback |= TB_REQUEST;
		return 1;
	}
	/* the router: "generate{...}: text_generation_router::server: ...:
	 * Success" for every request answered */
	if (n >= 7 && !strcmp(msg + n - 7, "Success") &&
	    (vrt_enginelog_scan_find(msg, "text_generation_router") ||
	     log->engine == E || log->votes[E])) {
		vrt_enginelog_record_request(log, li, E, 1);
		return 1;
	}
	if (n >= 9 && !strcmp(msg + n - 9, "Connected") &&
	    (n == 9 || msg[n - 10] == ' ')) {
		vrt_enginelog_record_ready(log, li, E, 2);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}
