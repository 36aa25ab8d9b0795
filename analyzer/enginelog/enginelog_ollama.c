/*
 * enginelog_ollama.c — Ollama's own lines (Go's slog): the devices it
 * found, its estimate, the runner it starts and when the runner serves,
 * the runner's death, a request's prompt. Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Ollama's own lines (Go's slog: the message and its key=value pairs,
 * see ollama_prefix): the devices it found, its estimate, the runner it
 * starts and when the runner serves, the runner's death, the prompt of a
 * request. The runner's own output (llama.cpp's lines) goes through
 * vrt_enginelog_llama_rule. */
int vrt_enginelog_ollama_rule(struct vrt_enginelog *log,
                              const struct lineinfo *li)
{
	const char *msg = li->msg, *p;
	const int E = VRT_ENGINELOG_OLLAMA;
	struct vrt_enginelog_error *e;
	struct cap c;
	double v, t;

	if (strncmp(msg, "msg=", 4))
		return 0;
	/* msg="inference compute" id=GPU-... library=cuda ... total="23.6
	 * GiB" available="22.9 GiB" */
	if (vrt_enginelog_scan_find(msg, "inference compute")) {
		int32_t dev = -1;
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan(msg, "id=%u ", &c))
			dev = (int32_t)c.v[0];
		if (vrt_enginelog_scan(msg, "total=\"%z\"", &c)) {
			t = c.v[0];
			if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL,
			                              dev, t, c.tol[0], 0))
				return -1;
		}
		if (vrt_enginelog_scan(msg, "available=\"%z\"", &c) &&
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_FREE, dev,
		                              c.v[0], c.tol[0], 0))
			return -1;
		return 1;
	}
	/* msg=offload / msg="offload to cuda" ... memory.required.full="6.2
	 * GiB" memory.required.kv="1.0 GiB" memory.weights.total="4.1 GiB"
	 * memory.graph.full="560.0 MiB" (its estimate before it loads) */
	if (!strncmp(msg, "msg=offload", 11) ||
	    !strncmp(msg, "msg=\"offload to", 15)) {
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		if (vrt_enginelog_scan(msg, "memory.required.full=\"%z\"",
		                       &c) &&
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_PROJECTED, -1,
		                              c.v[0], c.tol[0], 0))
			return -1;
		if (vrt_enginelog_scan(msg, "layers.offload=%u", &c))
			vrt_enginelog_record_config(log, E, VRT_ELC_GPU_LAYERS,
			                            c.v[0]);
		return 1;
	}
	/* msg="starting llama server" cmd="..." (to 0.11), msg="starting
	 * runner" cmd="..." (0.12 to 0.24), msg="starting llama-server"
	 * cmd="..." (0.30 on): the runner's command line */
	if ((vrt_enginelog_scan_find(msg, "msg=\"starting llama server\"") ||
	     vrt_enginelog_scan_find(msg, "msg=\"starting runner\"") ||
	     vrt_enginelog_scan_find(msg, "msg=\"starting llama-server\"")) &&
	    (p = vrt_enginelog_scan_find(msg, "cmd=\""))) {
		size_t n = strcspn(p + 5, "\"");
		vrt_enginelog_record_vote(log, E, 4);
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		if (n < sizeof(log->command)) {
			snprintf(log->command, sizeof(log->command), "%.*s",
			         (int)n, p + 5);
			log->command_engine = E;
		}
		if (vrt_enginelog_scan_keyval(msg, "--ctx-size", &v) ||
		    vrt_enginelog_scan_keyval(msg, " -c", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_CTX_SIZE,
			                            v);
		if (vrt_enginelog_scan_keyval(msg, "--parallel", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_SLOTS, v);
		if (vrt_enginelog_scan_keyval(msg, "--n-gpu-layers", &v) ||
		    vrt_enginelog_scan_keyval(msg, "-ngl", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_GPU_LAYERS,
			                            v);
		if (vrt_enginelog_scan_keyval(msg, "--batch-size", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BATCH, v);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "llama runner started in %f seconds", &c) ||
	    vrt_enginelog_scan(msg, "llama-server started in %f seconds", &c)) {
		vrt_enginelog_record_ready(log, li, E, 2);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	/* msg="error loading llama server" error="llama runner process has
	 * terminated: <the runner's error>" (0.30 on: "llama-server process
	 * has terminated"): the runner's error is read as its own line */
	if (vrt_enginelog_scan_find(msg, "error loading llama server") ||
	    vrt_enginelog_scan_find(msg, "process has terminated")) {
		struct lineinfo inner = *li;
		char buf[VRT_ENGINELOG_TEXT];
		const char *q =
		        vrt_enginelog_scan_find(msg, "has terminated: ");
		size_t before = log->nerrors;
		int consumed = 0, r;
		vrt_enginelog_record_vote(log, E, 4);
		if (q) {
			q += 16;
			snprintf(buf, sizeof(buf), "%.*s",
			         (int)strcspn(q, "\""), q);
			inner.msg = buf;
			if ((r = vrt_enginelog_torch_rule(log, &inner)) < 0 ||
			    (!r &&
			     (r = vrt_enginelog_llama_errors(log, &inner)) < 0))
				return -1;
			consumed = r;
		}
		/* nothing it names was read, but it names memory */
		if (!consumed && log->nerrors == before &&
		    (vrt_enginelog_scan_find(msg, "out of memory") ||
		     vrt_enginelog_scan_find(msg, "unable to allocate") ||
		     vrt_enginelog_scan_find(msg, "cudaMalloc")) &&
		    (e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_RUNNER_DIED)))
			vrt_enginelog_record_commit(log);
		return 1;
	}
	/* the new engine's memory (0.11 on): msg="model weights"
	 * device=CUDA0 size="8.4 GiB", "kv cache", "compute graph" */
	{
		static const struct {
			const char *what;
			int kind;
		} mem[] = {{"msg=\"model weights\"", VRT_ELK_WEIGHTS},
		           {"msg=\"kv cache\"", VRT_ELK_KV_BYTES},
		           {"msg=\"compute graph\"", VRT_ELK_ACTIVATION}};
		size_t k;
		for (k = 0; k < sizeof(mem) / sizeof(mem[0]); k++) {
			int32_t dev;
			if (strncmp(msg, mem[k].what, strlen(mem[k].what)))
				continue;
			vrt_enginelog_record_vote(log, E, 4);
			vrt_enginelog_record_step(
			        log, mem[k].kind == VRT_ELK_WEIGHTS
			                     ? VRT_PHASE_weights
			             : mem[k].kind == VRT_ELK_KV_BYTES
			                     ? VRT_PHASE_kv_cache
			                     : VRT_PHASE_profile);
			if (vrt_enginelog_scan(msg, "device=%w", &c) &&
			    vrt_enginelog_llama_gpu_buffer(c.w[0], &dev) &&
			    vrt_enginelog_scan(msg, "size=\"%z\"", &c))
				return vrt_enginelog_record_fact(
				               log, li, E, mem[k].kind, dev,
				               c.v[0], c.tol[0], 0) < 0
				               ? -1
				               : 1;
			return 1;
		}
	}
	/* the scheduler could not place the model: "memory layout cannot be
	 * allocated", the runner's "insufficient memory - required
	 * allocations" */
	if (vrt_enginelog_scan_find(msg, "memory layout cannot be allocated") ||
	    vrt_enginelog_scan_find(
	            msg, "insufficient memory - required allocations")) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_OOM_OTHER))) {
			e->phase = VRT_PHASE_weights;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* msg="loading cache slot" id=0 cache=0 prompt=1802 used=0 */
	if (vrt_enginelog_scan_find(msg, "loading cache slot") &&
	    vrt_enginelog_scan_keyval(msg, "prompt=", &v)) {
		log->prompt_tokens = (uint64_t)v;
		vrt_enginelog_record_request(log, li, E, 1);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "Listening on ")) {
		vrt_enginelog_record_vote(log, E, 4);
		return 1;
	}
	return 0;
}
