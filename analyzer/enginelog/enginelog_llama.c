/*
 * enginelog_llama.c — llama.cpp's sentences (llama-server, llama-cli):
 * buffer sizes per device, the fit step and memory lines, its failures
 * and what they were for, the slots a request runs on. Ollama's runner
 * prints these too (enginelog_ollama.c). Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "CUDA0", "ROCm1", "Vulkan0", "MUSA0", "SYCL0": a GPU buffer and its
 * device; CPU, CPU_Mapped, CUDA_Host and the like are host memory. */
int vrt_enginelog_llama_gpu_buffer(const char *name, int32_t *dev)
{
	static const char *const gpus[] = {"CUDA", "ROCm", "Vulkan", "MUSA",
	                                   "SYCL", "CANN"};
	size_t k, n;

	for (k = 0; k < sizeof(gpus) / sizeof(gpus[0]); k++) {
		n = strlen(gpus[k]);
		if (!strncmp(name, gpus[k], n) &&
		    vrt_enginelog_scan_digit(name[n])) {
			*dev = (int32_t)atoi(name + n);
			return 1;
		}
	}
	if (!strcmp(name, "Metal")) {
		*dev = 0;
		return 1;
	}
	return 0;
}

/* llama.cpp: "<func>: <BUF> <what> buffer size = <MiB> MiB" (what: model,
 * KV, compute, output) and the older "<func>: <BUF> buffer size = ...". */
static int llama_buffer(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg,
	           *at = vrt_enginelog_scan_find(msg, " buffer size =");
	char words[3][48];
	int nw = 0, kind = 0;
	const char *p, *q, *name = NULL;
	double mib, tol;
	int32_t dev;
	size_t n;

	if (!at)
		return 0;
	for (q = at + 14; vrt_enginelog_scan_blank(*q); q++)
		;
	n = vrt_enginelog_scan_number(q, 0, 0, &mib, &tol);
	if (!n)
		return 0;
	while (vrt_enginelog_scan_blank(q[n]))
		n++;
	if (strncmp(q + n, "MiB", 3))
		return 0;
	/* the (up to three) words before " buffer size" */
	p = at;
	while (nw < 3 && p > msg) {
		const char *end = p, *b;
		while (end > msg && vrt_enginelog_scan_blank(end[-1]))
			end--;
		b = end;
		while (b > msg && !vrt_enginelog_scan_blank(b[-1]))
			b--;
		if (b == end)
			break;
		snprintf(words[nw], sizeof(words[0]), "%.*s", (int)(end - b),
		         b);
		nw++;
		p = b;
	}
	if (nw < 2)
		return 0;
	if (!strcmp(words[0], "model")) {
		kind = VRT_ELK_WEIGHTS;
		name = words[1];
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
	} else if (!strcmp(words[0], "KV") || !strcmp(words[0], "RS")) {
		kind = VRT_ELK_KV_BYTES; /* RS: a recurrent model's state */
		name = words[1];
		vrt_enginelog_record_step(
		        log, VRT_PHASE_profile); /* the compute buffers next */
	} else if (!strcmp(words[0], "compute")) {
		kind = VRT_ELK_ACTIVATION;
		name = words[1];
	} else if (vrt_enginelog_scan_find(words[1], "load_tensors")) {
		kind = VRT_ELK_WEIGHTS; /* "llm_load_tensors: CUDA0 buffer" */
		name = words[0];
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
	}
	if (!kind) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		return 1; /* output buffers and the like: not compared */
	}
	if (!vrt_enginelog_llama_gpu_buffer(name, &dev)) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 4);
		return 1; /* host memory */
	}
	return vrt_enginelog_record_fact(log, li, VRT_ENGINELOG_LLAMACPP, kind,
	                                 dev, mib * MIB, tol * MIB + 1, 1) < 0
	               ? -1
	               : 1;
}

/* llama.cpp's fit step and memory lines: the device list with its free
 * memory, the projection of what the model will use, the breakdown
 * printed at exit. Returns 1 when the line was one, -1 out of memory. */
static int llama_memory_lines(struct vrt_enginelog *log,
                              const struct lineinfo *li)
{
	const int E = VRT_ENGINELOG_LLAMACPP;
	const char *msg = li->msg, *p;
	struct cap c;
	int32_t dev;
	char name[32];

	/* "using device CUDA0 (NVIDIA ...) (0000:01:00.0) - 23000 MiB free" */
	if (vrt_enginelog_scan(msg, "using device %w (%*) - %u MiB free", &c) &&
	    vrt_enginelog_llama_gpu_buffer(c.w[0], &dev)) {
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_FREE, dev,
		                                 c.v[0] * MIB, MIB, 0) < 0
		               ? -1
		               : 1;
	}
	/* "  - CUDA0 (NVIDIA ...):  24117 total,  20903 used,   2870 free vs.
	 * target of   1024": what the fit step projects per device; used +
	 * free is the device's free memory now. */
	if (vrt_enginelog_scan(
	            msg, "- %w (%*): %u total, %u used, %f free vs. target",
	            &c) &&
	    vrt_enginelog_llama_gpu_buffer(c.w[0], &dev)) {
		double freenow = c.v[1] + c.v[2];
		if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL, dev,
		                              c.v[0] * MIB, MIB, 0) ||
		    vrt_enginelog_record_fact(log, li, E, VRT_ELK_PROJECTED,
		                              dev, c.v[1] * MIB, MIB, 0) ||
		    (freenow > 0 &&
		     vrt_enginelog_record_fact(log, li, E, VRT_ELK_FREE, dev,
		                               freenow * MIB, MIB, 0)))
			return -1;
		return 1;
	}
	/* "projected to use 899 MiB of device memory vs. 16140 MiB of free
	 * device memory" (every device together) */
	if (vrt_enginelog_scan(
	            msg,
	            "projected to use %u MiB%*vs%*%u MiB of free device "
	            "memory",
	            &c)) {
		vrt_enginelog_record_vote(log, E, 4);
		return vrt_enginelog_record_fact(log, li, E, VRT_ELK_PROJECTED,
		                                 -1, c.v[0] * MIB, MIB, 0) < 0
		               ? -1
		               : 1;
	}
	/* "| - CUDA0 (RTX 3090) | 24124 = 23845 + (17542 = 10579 + 6566 +
	 * 396) + 12 |": total = free + (self = model + context + compute) +
	 * unaccounted, in MiB */
	if ((p = vrt_enginelog_scan_find(msg, "| - ")) ||
	    (p = vrt_enginelog_scan_find(msg, "|   - "))) {
		while (*p == '|' || vrt_enginelog_scan_blank(*p) || *p == '-')
			p++;
		vrt_enginelog_scan_word(p, name, sizeof(name));
		if (vrt_enginelog_llama_gpu_buffer(name, &dev) &&
		    vrt_enginelog_scan(p, "| %u = %u + (%u = %u + %u + %u)",
		                       &c)) {
			if (vrt_enginelog_record_fact(log, li, E, VRT_ELK_TOTAL,
			                              dev, c.v[0] * MIB, MIB,
			                              0))
				return -1;
			return 1;
		}
	}
	return 0;
}

/* llama.cpp's failures and the lines that say what they were for. */
int vrt_enginelog_llama_errors(struct vrt_enginelog *log,
                               const struct lineinfo *li)
{
	const int E = VRT_ENGINELOG_LLAMACPP;
	const char *msg = li->msg;
	struct vrt_enginelog_error *e, *p;
	struct cap c;
	int32_t dev;

	if (vrt_enginelog_scan(
	            msg,
	            "allocating %f MiB on device %u: cudaMalloc failed: "
	            "out of memory",
	            &c) ||
	    vrt_enginelog_scan(
	            msg,
	            "allocating %f MiB on device %u: hipMalloc failed: "
	            "out of memory",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_CUDA_MALLOC))) {
			e->requested_bytes = (uint64_t)(c.v[0] * MIB + 0.5);
			e->requested_tol = (uint64_t)(c.tol[0] * MIB) + 1;
			e->device = (int32_t)c.v[1];
			e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* "alloc_tensor_range: failed to allocate CUDA0 buffer of size N"
	 * after the cudaMalloc line (its exact size), and
	 * "ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size
	 * N" (a compute buffer); a CPU buffer is host memory. */
	if (vrt_enginelog_scan(msg, "failed to allocate %w buffer of size %u",
	                       &c)) {
		int gpu = vrt_enginelog_llama_gpu_buffer(c.w[0], &dev);
		int compute = vrt_enginelog_scan_find(msg, "gallocr") != NULL;
		p = vrt_enginelog_record_last_error(log, VRT_ELE_CUDA_MALLOC,
		                                    4);
		if (!gpu) {
			vrt_enginelog_record_host_error(log, li, E,
			                                (uint64_t)c.v[0], 0);
			return 1;
		}
		if (p) {
			/* the same allocation: its exact size */
			p->requested_bytes = (uint64_t)c.v[0];
			p->requested_tol = MIB / 100 + 1;
			if (compute)
				p->phase = VRT_PHASE_profile;
			return 1;
		}
		if ((e = vrt_enginelog_record_error(
		             log, li, E,
		             compute ? VRT_ELE_COMPUTE_ALLOC
		                     : VRT_ELE_CUDA_MALLOC))) {
			e->requested_bytes = (uint64_t)c.v[0];
			e->device = dev;
			e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE;
			if (compute)
				e->phase = VRT_PHASE_profile;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	/* ggml's host buffers: "ggml_backend_cpu_buffer_type_alloc_buffer:
	 * failed to allocate buffer of size N" is fatal; pinned memory that
	 * cannot be had falls back to pageable memory (recovered). */
	if (vrt_enginelog_scan(
	            msg,
	            "cpu_buffer_type_alloc_buffer: failed to allocate "
	            "buffer of size %u",
	            &c)) {
		vrt_enginelog_record_host_error(log, li, E, (uint64_t)c.v[0],
		                                0);
		return 1;
	}
	if (vrt_enginelog_scan(
	            msg,
	            "host_malloc: %*failed to allocate %f MiB of pinned "
	            "memory",
	            &c)) {
		vrt_enginelog_record_host_error(
		        log, li, E, (uint64_t)(c.v[0] * MIB + 0.5), 1);
		return 1;
	}
	if ((vrt_enginelog_scan(msg, "CUDA error: out of memory", &c) ||
	     vrt_enginelog_scan(msg, "ROCm error: out of memory", &c) ||
	     vrt_enginelog_scan(msg, "MUSA error: out of memory", &c)) &&
	    !vrt_enginelog_scan_find(msg, "current device")) {
		if ((e = vrt_enginelog_record_error(log, li, E,
		                                    VRT_ELE_CUDA_ERROR))) {
			log->last_oom_error = (int64_t)log->nerrors;
			vrt_enginelog_record_commit(log);
		}
		return 1;
	}
	if (vrt_enginelog_scan(msg, "current device: %u, in function %w", &c)) {
		if (log->last_oom_error >= 0 &&
		    (size_t)log->last_oom_error < log->nerrors) {
			e = &log->errors[log->last_oom_error];
			if (!(e->have & VRT_ELH_DEVICE)) {
				e->device = (int32_t)c.v[0];
				e->have |= VRT_ELH_DEVICE;
			}
			/* the pools hold a step's temporaries */
			if (vrt_enginelog_scan_find(c.w[0], "pool"))
				e->phase = e->serving ? VRT_PHASE_forward
				                      : VRT_PHASE_profile;
		}
		log->last_oom_error = -1;
		return 1;
	}
	/* "sched_reserve: compute buffer allocation failed, retrying without
	 * pipeline parallelism": llama.cpp carries on (recovered). */
	if (vrt_enginelog_scan_find(msg, "allocation failed, retrying")) {
		if ((p = vrt_enginelog_record_last_error(log, 0, 6)) &&
		    !vrt_enginelog_is_refusal(p->kind))
			p->recovered = 1;
		vrt_enginelog_record_vote(log, E, 4);
		return 1;
	}
	/* The summary lines: what the failed allocation was for. */
	{
		int kind = 0, phase = VRT_ELP_UNKNOWN;
		if (vrt_enginelog_scan_find(
		            msg, "failed to allocate compute buffers") ||
		    vrt_enginelog_scan_find(
		            msg, "failed to allocate compute pp buffers")) {
			kind = VRT_ELE_COMPUTE_ALLOC;
			phase = VRT_PHASE_profile;
		} else if (vrt_enginelog_scan_find(
		                   msg,
		                   "failed to allocate buffer for kv cache") ||
		           vrt_enginelog_scan_find(
		                   msg, "failed to initialize the context")) {
			kind = VRT_ELE_CONTEXT_ALLOC;
			phase = VRT_PHASE_kv_cache;
		} else if (vrt_enginelog_scan(
		                   msg, "unable to allocate %w buffer", &c)) {
			/* "error loading model: unable to allocate CUDA0
			 * buffer" (llama_model_load, Ollama's runners); a CPU
			 * buffer's failure was host memory, said before */
			if (!vrt_enginelog_llama_gpu_buffer(c.w[0], &dev))
				return 1;
			kind = VRT_ELE_WEIGHTS_ALLOC;
			phase = VRT_PHASE_weights;
		}
		if (kind) {
			p = vrt_enginelog_record_last_error(log, 0, 10);
			if (p && (p->kind == VRT_ELE_CUDA_MALLOC ||
			          p->kind == VRT_ELE_CUDA_ERROR))
				;
			else if (p && p->kind == kind)
				return 1; /* said again by its caller */
			else
				p = NULL;
			if ((e = vrt_enginelog_record_error(log, li, E,
			                                    kind))) {
				vrt_enginelog_record_inherit(e, p);
				e->phase = phase;
				if (p) {
					p->phase = phase;
					p->recovered = 0;
				}
				vrt_enginelog_record_commit(log);
			}
			return 1;
		}
	}
	return 0;
}

/* llama-server's slots: a task launched on a slot is a request in flight
 * until the slot releases it; a prompt's tokens. */
static int llama_slots(struct vrt_enginelog *log, const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	unsigned id;

	if (!vrt_enginelog_scan(msg, "slot %*: id %u | task %f | %*", &c) &&
	    !vrt_enginelog_scan(msg, "slot %*: id %u | task %f", &c))
		return 0;
	id = (unsigned)c.v[0];
	vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
	if (vrt_enginelog_scan_find(msg, "processing task") ||
	    vrt_enginelog_scan_find(msg, "launch_slot")) {
		if (id < 64 && !(log->slots_busy & (1ull << id))) {
			log->slots_busy |= 1ull << id;
			vrt_enginelog_record_request(log, li,
			                             VRT_ENGINELOG_LLAMACPP, 1);
		}
		vrt_enginelog_record_running(
		        log, (uint64_t)__builtin_popcountll(log->slots_busy));
	} else if (vrt_enginelog_scan_find(msg, "stop processing") ||
	           vrt_enginelog_scan_find(msg, "release")) {
		if (id < 64)
			log->slots_busy &= ~(1ull << id);
		vrt_enginelog_record_running(
		        log, (uint64_t)__builtin_popcountll(log->slots_busy));
	}
	if (vrt_enginelog_scan(msg, "n_prompt_tokens = %u", &c) ||
	    vrt_enginelog_scan(msg, "task.n_tokens = %u", &c) ||
	    vrt_enginelog_scan(msg, "prompt tokens = %u", &c))
		log->prompt_tokens = (uint64_t)c.v[0];
	return 1;
}

int vrt_enginelog_llama_rule(struct vrt_enginelog *log,
                             const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	int r;

	if ((r = llama_buffer(log, li)) != 0)
		return r < 0 ? -1 : 1;
	if ((r = vrt_enginelog_llama_errors(log, li)) != 0 ||
	    (r = llama_memory_lines(log, li)) != 0)
		return r < 0 ? -1 : 1;
	if (llama_slots(log, li))
		return 1;
	/* "llama_kv_cache: size = 4096.00 MiB ( 4096 cells, 32 layers, 4/4
	 * seqs)": cells per stream, n_seq_max / n_stream; the cache holds
	 * cells x streams tokens (a unified cache is one stream). */
	if (vrt_enginelog_scan(
	            msg,
	            "llama_kv_cache%*: size = %f MiB (%_%u cells, %u layers, "
	            "%u/%u seqs)",
	            &c)) {
		vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
		                            VRT_ELC_SLOTS, c.v[3]);
		vrt_enginelog_record_step(log, VRT_PHASE_profile);
		return vrt_enginelog_record_fact(
		               log, li, VRT_ENGINELOG_LLAMACPP,
		               VRT_ELK_KV_TOKENS, -1,
		               c.v[1] * (c.v[4] ? c.v[4] : 1), 0, 0) < 0
		               ? -1
		               : 1;
	}
	if (strncmp(msg, "llama_context:", 14) == 0 ||
	    strncmp(msg, "llama_new_context_with_model:", 29) == 0 ||
	    strncmp(msg, "llama_init_from_model:", 22) == 0) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		vrt_enginelog_record_step(log, VRT_PHASE_kv_cache);
		if (vrt_enginelog_scan(msg, ": n_ctx = %u", &c))
			vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
			                            VRT_ELC_CTX_SIZE, c.v[0]);
		else if (vrt_enginelog_scan(msg, ": n_ctx_per_seq = %u", &c))
			vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
			                            VRT_ELC_MAX_MODEL_LEN,
			                            c.v[0]);
		else if (vrt_enginelog_scan(msg, ": n_seq_max = %u", &c))
			vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
			                            VRT_ELC_SLOTS, c.v[0]);
		else if (vrt_enginelog_scan(msg, ": n_ubatch = %u", &c))
			vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
			                            VRT_ELC_UBATCH, c.v[0]);
		else if (vrt_enginelog_scan(msg, ": n_batch = %u", &c))
			vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
			                            VRT_ELC_BATCH, c.v[0]);
		else if (vrt_enginelog_scan(msg, ": flash_attn = %w", &c))
			vrt_enginelog_record_config(
			        log, VRT_ENGINELOG_LLAMACPP, VRT_ELC_FLASH_ATTN,
			        !strcmp(c.w[0], "1") ||
			                        !strcmp(c.w[0], "enabled")
			                ? 1
			                : 0);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "offloaded %u/%u layers to GPU", &c)) {
		vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
		                            VRT_ELC_GPU_LAYERS, c.v[0]);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "n_slots = %u", &c)) {
		vrt_enginelog_record_config(log, VRT_ENGINELOG_LLAMACPP,
		                            VRT_ELC_SLOTS, c.v[0]);
		return 1;
	}
	if (!strncmp(msg, "llama_model_loader:", 19) ||
	    !strncmp(msg, "load_tensors:", 13)) {
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		if (vrt_enginelog_scan(msg, "tensors from %w", &c) &&
		    !log->model[0])
			snprintf(log->model, sizeof(log->model), "%s", c.w[0]);
		return 1;
	}
	if (vrt_enginelog_scan(msg, "load_model: loading model '%*'", &c)) {
		const char *q = strchr(msg, '\'');
		size_t n = q ? strcspn(q + 1, "'") : 0;
		if (q && n < sizeof(log->model))
			snprintf(log->model, sizeof(log->model), "%.*s", (int)n,
			         q + 1);
		vrt_enginelog_record_step(log, VRT_PHASE_weights);
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 2);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "sched_reserve:") ||
	    vrt_enginelog_scan_find(msg, "graph_reserve:")) {
		vrt_enginelog_record_step(log, VRT_PHASE_profile);
		vrt_enginelog_record_vote(log, VRT_ENGINELOG_LLAMACPP, 1);
		return 1;
	}
	/* Ready: "model loaded" (main: before, "srv    llama_server:" now),
	 * then the listening line that follows it: "server is listening
	 * on" (main:), "listening on http://" (llama_server:), the old JSON
	 * server's "HTTP server listening". The server's HTTP thread is up
	 * before the model loads ("HTTP server is listening, hostname: "):
	 * not ready. */
	if (vrt_enginelog_scan_find(msg, "server is listening on") ||
	    (vrt_enginelog_scan_find(msg, "listening on http") &&
	     !vrt_enginelog_scan_find(msg, "router")) ||
	    !strcmp(msg, "HTTP server listening")) {
		vrt_enginelog_record_ready(log, li, VRT_ENGINELOG_LLAMACPP, 3);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, ": model loaded") ||
	    !strcmp(msg, "model loaded")) {
		vrt_enginelog_record_ready(log, li, VRT_ENGINELOG_LLAMACPP, 2);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	if (vrt_enginelog_scan_find(msg, "all slots are idle")) {
		vrt_enginelog_record_ready(log, li, VRT_ENGINELOG_LLAMACPP, 1);
		vrt_enginelog_record_step(log, VRT_PHASE_forward);
		return 1;
	}
	return 0;
}
