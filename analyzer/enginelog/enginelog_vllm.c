/*
 * enginelog_vllm.c — vLLM's sentences (V0 and V1): its start-up steps, the
 * memory profile and KV cache lines, its arguments, readiness, requests
 * and running counts, its refusals and errors. Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* vLLM's start-up lines that say which step it is in. */
static void vllm_steps(struct vrt_enginelog *log, const char *msg)
{
	if (vrt_enginelog_scan_find(msg, "Starting to load model") ||
	    vrt_enginelog_scan_find(msg,
	                            "Loading safetensors checkpoint shards") ||
	    vrt_enginelog_scan_find(msg, "Loading weights took"))
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
	else if (vrt_enginelog_scan_find(msg, "Memory profiling takes"))
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
	else if (vrt_enginelog_scan_find(msg, "Capturing CUDA graph") ||
	         vrt_enginelog_scan_find(msg, "Capturing cudagraphs") ||
	         vrt_enginelog_scan_find(msg,
	                                 "Capturing the model for CUDA graphs"))
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
	else if (vrt_enginelog_scan_find(
	                 msg, "init engine (profile, create kv cache, warmup "
	                      "model) took"))
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
}

int vrt_enginelog_vllm_rule(struct vrt_enginelog *log,
                            const struct lineinfo *li)
{
	const char *msg = li->msg, *p;
	const int E = VRT_ENGINELOG_VLLM;
	struct cap c;
	struct vrt_enginelog_error *e;
	double v;

	if (vrt_enginelog_scan(msg, "Model loading took %f GiB", &c) ||
	    vrt_enginelog_scan(msg, "Loading model weights took %f GB", &c)) {
		vrt_enginelog_record_step(
		        log, VRT_PHASE_profile); /* the profile run is next */
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_WEIGHTS,
		                                 -1, c.v[0] * GIB,
		                                 c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "model weights take %z; non_torch_memory takes %z; "
	            "PyTorch activation peak memory takes %z; the rest of "
	            "the memory reserved for KV Cache is %f",
	            &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_WEIGHTS, -1,
		                              c.v[0], c.tol[0], 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_NON_TORCH, -1,
		                              c.v[1], c.tol[1], 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_ACTIVATION,
		                              -1, c.v[2], c.tol[2], 0) ||
		    (c.v[3] > 0 && vrt_enginelog_record_fact(
		                           log, li, E, VRT_ELK_KV_BYTES, -1,
		                           c.v[3] * GIB, c.tol[3] * GIB, 0)))
			return -1;
		return 1;
	}
	/* V0 0.6: "Memory profiling results: total_gpu_memory=79.22GiB
	 * initial_memory_usage=... peak_torch_memory=... non_torch_memory=
	 * ... kv_cache_size=60.00GiB gpu_memory_utilization=0.90" */
	if (vrt_enginelog_scan_find(msg, "Memory profiling results:")) {
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan(msg, "total_gpu_memory=%z", &c) &&
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, -1,
		                              c.v[0], c.tol[0], 0))
			return -1;
		if (vrt_enginelog_scan(msg, "kv_cache_size=%z", &c) &&
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BYTES, -1,
		                              c.v[0], c.tol[0], 0))
			return -1;
		/* the peak of the profile run, weights included */
		if (vrt_enginelog_scan(msg, "peak_torch_memory=%z", &c)) {
			uint64_t wb = 0;
			double act = c.v[0];
			if (vrt_enginelog_value(log, VRT_ELK_WEIGHTS, li->rank,
			                        &wb, NULL, NULL) &&
			    (double)wb < act)
				act -= (double)wb;
			if (vrt_enginelog_record_fact(log, li, E,
			                              VRT_ELK_ACTIVATION, -1,
			                              act, c.tol[0], 0))
				return -1;
		}
		if (vrt_enginelog_scan_keyval(msg,
		                              "gpu_memory_utilization=", &v))
			vrt_enginelog_record_config(
			        log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg, "total_gpu_memory (%z) x gpu_memory_utilization (%f)",
	            &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_MEM_FRACTION,
		                            c.v[1] * 1000);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, -1,
		                                 c.v[0], c.tol[0], 0) < 0
		               ? -1
		               : 1;
	}
	/* 0.10, 0.11: "Free memory on device (F/T GiB) on startup. Desired
	 * GPU memory utilization is (U, X GiB). Actual usage is W GiB for
	 * weight, A GiB for peak activation, N GiB for non-torch memory,
	 * and G GiB for CUDAGraph memory." (later: "C GiB for consumed
	 * memory (weights + non-torch), A GiB for peak activation, and G GiB
	 * for CUDAGraph memory") */
	if (vrt_enginelog_scan(
	            msg,
	            "Free memory on device%*(%f/%f GiB) on startup. Desired",
	            &c)) {
		double f = c.v[0], t = c.v[1];
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_FREE, -1,
		                              f * GIB, c.tol[0] * GIB, 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, -1,
		                              t * GIB, c.tol[1] * GIB, 0))
			return -1;
		if (vrt_enginelog_scan(msg, "memory utilization is (%f,", &c))
			vrt_enginelog_record_config(
			        log, E, VRT_ELC_MEM_FRACTION, c.v[0] * 1000);
		if (vrt_enginelog_scan(
		            msg,
		            "Actual usage is %f GiB for weight, %f GiB for "
		            "peak "
		            "activation, %f GiB for non-torch memory, and %f "
		            "GiB for CUDAGraph memory",
		            &c)) {
			if (vrt_enginelog_record_fact(
			            log, li, E, VRT_ELK_WEIGHTS, -1,
			            c.v[0] * GIB, c.tol[0] * GIB, 0) ||
			    vrt_enginelog_record_fact(
			            log, li, E, VRT_ELK_ACTIVATION, -1,
			            c.v[1] * GIB, c.tol[1] * GIB, 0) ||
			    vrt_enginelog_record_fact(
			            log, li, E, VRT_ELK_NON_TORCH, -1,
			            c.v[2] * GIB, c.tol[2] * GIB, 0) ||
			    vrt_enginelog_record_fact(log, li, E, VRT_ELK_GRAPH,
			                              -1, c.v[3] * GIB,
			                              c.tol[3] * GIB, 0))
				return -1;
		} else if (vrt_enginelog_scan(
		                   msg,
		                   "Actual usage is %f GiB for consumed memory "
		                   "%*, %f GiB for peak activation, and %f GiB "
		                   "for CUDAGraph memory",
		                   &c)) {
			if (vrt_enginelog_record_fact(
			            log, li, E, VRT_ELK_ACTIVATION, -1,
			            c.v[1] * GIB, c.tol[1] * GIB, 0) ||
			    vrt_enginelog_record_fact(log, li, E, VRT_ELK_GRAPH,
			                              -1, c.v[2] * GIB,
			                              c.tol[2] * GIB, 0))
				return -1;
		}
		return 1;
	}
	if (vrt_enginelog_scan(msg, "Available KV cache memory: %f GiB", &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BYTES,
		                                 -1, c.v[0] * GIB,
		                                 c.tol[0] * GIB, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(msg, "GPU KV cache size: %u tokens", &c)) {
		vrt_enginelog_record_step(
		        log, VRT_PHASE_cuda_graph); /* graph capture is next */
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_TOKENS,
		                                 -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(
	            msg, "Maximum concurrency for %u tokens per request: %fx",
	            &c)) {
		vrt_enginelog_record_config(log, E, VRT_ELC_MAX_MODEL_LEN,
		                            c.v[0]);
		return vrt_enginelog_record_fact(
		               log, li, E, VRT_ELK_CONCURRENCY, -1,
		               c.v[1] * 1000, c.tol[1] * 1000, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(msg, "# CUDA blocks: %u, # CPU blocks: %u",
	                       &c) ||
	    vrt_enginelog_scan(msg, "# GPU blocks: %u, # CPU blocks: %u", &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_cuda_graph);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_KV_BLOCKS,
		                                 -1, c.v[0], 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan(
	            msg, "Graph capturing finished in %f secs, took %f GiB",
	            &c)) {
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_GRAPH, -1,
		                                 c.v[1] * GIB, c.tol[1] * GIB,
		                                 0) < 0
		               ? -1
		               : 1;
	}
	if (vrt_enginelog_scan_find(msg, "LLM engine (v") &&
	    vrt_enginelog_scan_find(msg, "with config:")) {
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan_keyval(msg, "max_seq_len=", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_MODEL_LEN, v);
		if (vrt_enginelog_scan_keyval(msg, "tensor_parallel_size=", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_TP, v);
		return 1;
	}
	if ((p = vrt_enginelog_scan_find(msg, "non-default args: {"))) {
		vrt_enginelog_record_vote(log, E, 4);
		if (vrt_enginelog_scan_keyval(msg, "'max_model_len':", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_MODEL_LEN, v);
		if (vrt_enginelog_scan_keyval(msg, "'max_num_seqs':", &v))
			vrt_enginelog_record_config(log, E,
			                            VRT_ELC_MAX_NUM_SEQS, v);
		if (vrt_enginelog_scan_keyval(msg,
		                              "'gpu_memory_utilization':", &v))
			vrt_enginelog_record_config(
			        log, E, VRT_ELC_MEM_FRACTION, v * 1000);
		if (vrt_enginelog_scan_keyval(msg,
		                              "'tensor_parallel_size':", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_TP, v);
		if (vrt_enginelog_scan_keyval(msg, "'block_size':", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BLOCK_SIZE,
			                            v);
		if (vrt_enginelog_scan_keyval(msg,
		                              "'max_num_batched_tokens':", &v))
			vrt_enginelog_record_config(log, E, VRT_ELC_BATCH, v);
		vrt_enginelog_command_from_dict(log, E, "vllm serve", p + 18);
		return 1;
	}
	/* V1 raises "To serve at least one request with the models's max seq
	 * len (N), (X GiB KV cache is needed, ..." */
	if (vrt_enginelog_scan(
	            msg,
	            "max seq len (%u), (%f GiB KV cache is needed, which is "
	            "larger than the available KV cache memory (%f GiB)",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_KV_TOO_SMALL))) {
			e->max_model_len = (uint64_t)c.v[0];
			e->needed_bytes = (uint64_t)(c.v[1] * GIB);
			e->available_bytes = (uint64_t)(c.v[2] * GIB);
			e->have |= VRT_ELH_MAX_MODEL_LEN | VRT_ELH_NEEDED |
			           VRT_ELH_AVAILABLE;
			if (vrt_enginelog_scan(
			            msg, "estimated maximum model length is %u",
			            &c)) {
				e->suggested_max_model_len = (uint64_t)c.v[0];
				e->have |= VRT_ELH_SUGGESTED_LEN;
			}
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "The model's max seq len (%u) is larger than the maximum "
	            "number of tokens that can be stored in KV cache (%u)",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_KV_TOO_SMALL))) {
			e->max_model_len = (uint64_t)c.v[0];
			e->suggested_max_model_len = (uint64_t)c.v[1];
			e->have |=
			        VRT_ELH_MAX_MODEL_LEN | VRT_ELH_SUGGESTED_LEN;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	if (vrt_enginelog_scan_find(
	            msg, "No available memory for the cache blocks")) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_NO_KV_MEMORY)))
			vrt_enginelog_record_commit(log);
		return 1;
	}
	/* 0.11: "Free memory on device cuda:0 (F/T GiB) on startup is less
	 * than ..." (before: no device name) */
	if (vrt_enginelog_scan(
	            msg,
	            "Free memory on device%*(%f/%f GiB) on startup is less "
	            "than desired GPU memory utilization (%f, %f GiB)",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_FREE_BELOW_UTIL))) {
			struct cap d;
			e->free_bytes = (uint64_t)(c.v[0] * GIB);
			e->total_bytes = (uint64_t)(c.v[1] * GIB);
			e->mem_fraction_milli = (uint64_t)(c.v[2] * 1000 + 0.5);
			e->needed_bytes = (uint64_t)(c.v[3] * GIB);
			e->have |= VRT_ELH_FREE | VRT_ELH_TOTAL |
			           VRT_ELH_MEM_FRACTION | VRT_ELH_NEEDED;
			if (vrt_enginelog_scan(
			            msg, "Free memory on device cuda:%u", &d) ||
			    vrt_enginelog_scan(
			            msg, "Free memory on device rocm:%u", &d)) {
				e->device = (int32_t)d.v[0];
				e->have |= VRT_ELH_DEVICE;
			}
			e->phase = VRT_PHASE_weights; /* at start-up */
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* V1: "CUDA out of memory occurred when warming up sampler with N
	 * dummy requests. Please try lowering `max_num_seqs` or
	 * `gpu_memory_utilization`": the PyTorch error just before is its
	 * allocation. */
	if (vrt_enginelog_scan(
	            msg,
	            "out of memory occurred when warming up %*with %u dummy "
	            "requests",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_SAMPLER_WARMUP))) {
			struct vrt_enginelog_error *oom =
			        vrt_enginelog_record_last_error(
			                log, VRT_ELE_TORCH_OOM, 40);
			vrt_enginelog_record_inherit(e, oom);
			e->count = (uint64_t)c.v[0];
			e->have |= VRT_ELH_COUNT;
			/* the dummy requests are --max-num-seqs */
			if (!log->config_line[VRT_ELC_MAX_NUM_SEQS])
				vrt_enginelog_record_config(
				        log, E, VRT_ELC_MAX_NUM_SEQS, c.v[0]);
			e->phase = VRT_PHASE_profile;
			e->serving = 0;
			if (oom) {
				/* its allocation is this one: one error */
				*oom = *e;
				log->nerrors--;
			}
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* V0 and V1 metrics: "Running: 12 reqs, Swapped: 0 reqs, Pending: 0
	 * reqs" / "Running: 12 reqs, Waiting: 0 reqs" */
	if (vrt_enginelog_scan(msg, "Running: %u reqs", &c)) {
		vrt_enginelog_record_vote(log, E, 1);
		vrt_enginelog_record_running(log, (uint64_t)c.v[0]);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "Added request ")) {
		vrt_enginelog_record_request(log, li, E, 1);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "Starting vLLM API server")) {
		vrt_enginelog_record_ready(log, li, E, 1);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	vllm_steps(log, msg);
	return 0;
}
