/*
 * enginelog_torch.c — what any Python engine prints when memory runs out:
 * PyTorch's OutOfMemoryError (the native and the cudaMallocAsync
 * allocator's, with the processes on the card), other Python memory
 * errors, and the traceback frames that say what the engine was doing.
 * Single-threaded per log.
 */
#include "enginelog_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *func;
	int phase; /* VRT_PHASE_*, or -2: a request's */
} tb_frames[] = {
        /* weights */
        {"load_model", VRT_PHASE_weights},
        {"load_weights", VRT_PHASE_weights},
        {"_load_weights", VRT_PHASE_weights},
        {"get_model", VRT_PHASE_weights},
        {"initialize_model", VRT_PHASE_weights},
        {"from_pretrained", VRT_PHASE_weights},
        {"load_state_dict", VRT_PHASE_weights},
        {"weight_loader", VRT_PHASE_weights},
        /* the KV cache */
        {"initialize_kv_cache", VRT_PHASE_kv_cache},
        {"_allocate_kv_cache", VRT_PHASE_kv_cache},
        {"_allocate_kv_cache_tensors", VRT_PHASE_kv_cache},
        {"initialize_kv_cache_tensors", VRT_PHASE_kv_cache},
        {"_init_cache", VRT_PHASE_kv_cache},
        {"init_memory_pool", VRT_PHASE_kv_cache},
        {"allocate_kv_cache", VRT_PHASE_kv_cache},
        {"_create_kv_cache_manager", VRT_PHASE_kv_cache},
        /* a profile / warm-up run of the configured batch */
        {"profile_run", VRT_PHASE_profile},
        {"_dummy_run", VRT_PHASE_profile},
        {"_dummy_sampler_run", VRT_PHASE_profile},
        {"_dummy_pooler_run", VRT_PHASE_profile},
        {"determine_available_memory", VRT_PHASE_profile},
        {"determine_num_available_blocks", VRT_PHASE_profile},
        {"profile_max_num_token", VRT_PHASE_profile},
        {"warmup", VRT_PHASE_profile},
        {"Warmup", VRT_PHASE_profile},
        {"_profile", VRT_PHASE_profile},
        /* CUDA graphs */
        {"capture_model", VRT_PHASE_cuda_graph},
        {"_capture_cudagraphs", VRT_PHASE_cuda_graph},
        {"capture", VRT_PHASE_cuda_graph},
        {"capture_end", VRT_PHASE_cuda_graph},
        {"capture_one_batch_size", VRT_PHASE_cuda_graph},
        {"init_cuda_graphs", VRT_PHASE_cuda_graph},
        {"_capture_graph", VRT_PHASE_cuda_graph},
        {"cuda_graph_warmup", VRT_PHASE_cuda_graph},
        /* serving: request handlers, the engine loop */
        {"create_chat_completion", -2},
        {"create_completion", -2},
        {"chat_completion_stream_generator", -2},
        {"chat_completion_full_generator", -2},
        {"completion_stream_generator", -2},
        {"run_engine_loop", -2},
        {"engine_step", -2},
        {"step_async", -2},
        {"run_busy_loop", -2},
        {"_process_engine_step", -2},
        {"event_loop_normal", -2},
        {"event_loop_overlap", -2},
        {"run_batch", -2},
        {"generate_request", -2},
        {"Prefill", -2},
        {"Decode", -2},
        {"_executor_loop", -2},
        {"_executor_loop_overlap", -2},
};

/* A traceback line: "Traceback (most recent call last):" opens one;
 * '  File "x.py", line N, in FUNC' names a frame. Returns 1 when the line
 * was one of them. */
int vrt_enginelog_torch_traceback(struct vrt_enginelog *log, const char *msg)
{
	const char *in;
	size_t k, n;

	while (vrt_enginelog_scan_blank(*msg))
		msg++;
	if (vrt_enginelog_scan_find(msg, "Traceback (most recent call last)")) {
		/* a chained exception keeps what the first one said */
		if (!(log->traceback & TB_SEEN))
			log->tb_phase = VRT_ELP_UNKNOWN;
		log->traceback |= TB_SEEN;
		return 1;
	}
	if (strncmp(msg, "File \"", 6) ||
	    !(in = vrt_enginelog_scan_find(msg, ", in ")))
		return 0;
	in += 5;
	n = strcspn(in, " \t");
	for (k = 0; k < sizeof(tb_frames) / sizeof(tb_frames[0]); k++) {
		if (strlen(tb_frames[k].func) != n ||
		    strncmp(in, tb_frames[k].func, n))
			continue;
		if (tb_frames[k].phase == -2)
			log->traceback |= TB_REQUEST;
		else
			log->tb_phase = tb_frames[k].phase;
		if (!strcmp(tb_frames[k].func, "_dummy_sampler_run"))
			log->traceback |= TB_SAMPLER;
	}
	log->traceback |= TB_SEEN;
	return 1;
}
/* PyTorch's OutOfMemoryError with the cudaMallocAsync backend: a first
 * line, then one line per number ("Requested               : 2.00 GiB",
 * "Free (according to CUDA): 512.00 MiB", ...), each filled into the
 * error the first line opened (log->last_oom_error). */
static int rule_torch_async(struct vrt_enginelog *log,
                            const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct vrt_enginelog_error *e;
	struct cap c;
	size_t i;

	while (vrt_enginelog_scan_blank(*msg))
		msg++;
	if (vrt_enginelog_scan(
	            msg, "Allocation on device %u would exceed allowed memory",
	            &c)) {
		if ((e = vrt_enginelog_record_error(log, li,
		                                    VRT_ENGINELOG_UNKNOWN,
		                                    VRT_ELE_TORCH_OOM))) {
			e->device = (int32_t)c.v[0];
			e->have |= VRT_ELH_DEVICE;
			log->last_oom_error = (int64_t)log->nerrors;
			log->nerrors++; /* its numbers follow */
		}
		return 1;
	}
	if (log->last_oom_error < 0 ||
	    (size_t)log->last_oom_error + 1 != log->nerrors)
		return 0;
	i = (size_t)log->last_oom_error;
	e = &log->errors[i];
	if (e->kind != VRT_ELE_TORCH_OOM)
		return 0;
	if (vrt_enginelog_scan_match(msg, "Requested%_: %z",
	                             (memset(&c, 0, sizeof(c)), &c))) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->have |= VRT_ELH_REQUESTED;
	} else if (vrt_enginelog_scan_match(msg, "Free (according to %*): %z",
	                                    (memset(&c, 0, sizeof(c)), &c))) {
		e->free_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_FREE;
	} else if (vrt_enginelog_scan_match(msg, "Device limit%_: %z",
	                                    (memset(&c, 0, sizeof(c)), &c))) {
		e->total_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_TOTAL;
	} else if (vrt_enginelog_scan_match(msg, "Currently allocated%_: %z",
	                                    (memset(&c, 0, sizeof(c)), &c))) {
		e->allocated_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_ALLOCATED;
	} else {
		return 0;
	}
	/* the same error printed again (re-raised elsewhere) counts once */
	if (e->have & VRT_ELH_FREE && vrt_enginelog_record_repeats(log, i)) {
		log->nerrors--;
		log->last_oom_error = -1;
	}
	return 1;
}

/* "Process 1234 has 10.00 GiB memory in use" for every process PyTorch
 * names (NVML's list for the device), and "Including non-PyTorch memory,
 * this process has X memory in use". */
static void torch_processes(struct vrt_enginelog_error *e, const char *msg)
{
	const char *at;
	struct cap c;

	for (at = msg; (at = vrt_enginelog_scan_find(at, "Process ")); at++) {
		memset(&c, 0, sizeof(c));
		if (!vrt_enginelog_scan_match(
		            at, "Process %u has %z memory in use", &c))
			continue;
		if (e->nothers < VRT_ENGINELOG_MAX_OTHERS) {
			e->others[e->nothers].pid = (int64_t)c.v[0];
			e->others[e->nothers].bytes = (uint64_t)c.v[1];
			e->nothers++;
		}
	}
	if (vrt_enginelog_scan(msg, "this process has %z memory in use", &c)) {
		e->process_bytes = (uint64_t)c.v[0];
		e->have |= VRT_ELH_PROCESS;
	}
}

/* Before PyTorch 2.2 the message lists every process on the card, this
 * one among them ("Process N has X memory in use", no "this process
 * has"): the one holding at least what PyTorch allocated and reserved
 * (its CUDA context on top) is this one, not another. */
static void torch_self(struct vrt_enginelog_error *e)
{
	uint64_t floor;
	unsigned k, best = VRT_ENGINELOG_MAX_OTHERS;

	if ((e->have & VRT_ELH_PROCESS) || !e->nothers ||
	    !(e->have & VRT_ELH_ALLOCATED))
		return;
	floor = e->allocated_bytes +
	        ((e->have & VRT_ELH_RESERVED) ? e->reserved_bytes : 0);
	for (k = 0; k < e->nothers; k++)
		if (e->others[k].bytes >= floor &&
		    (best == VRT_ENGINELOG_MAX_OTHERS ||
		     e->others[k].bytes < e->others[best].bytes))
			best = k;
	if (best == VRT_ENGINELOG_MAX_OTHERS)
		return;
	e->process_bytes = e->others[best].bytes;
	e->have |= VRT_ELH_PROCESS;
	if (e->pid < 0)
		e->pid = e->others[best].pid;
	e->others[best] = e->others[--e->nothers];
}

/* PyTorch's OutOfMemoryError (CUDA, HIP): the current message and the one
 * before PyTorch 2.1. */
int vrt_enginelog_torch_rule(struct vrt_enginelog *log,
                             const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct cap c;
	struct vrt_enginelog_error *e;

	if (rule_torch_async(log, li))
		return 1;
	if (!vrt_enginelog_scan_find(msg, "out of memory. Tried to allocate "))
		return 0;
	e = vrt_enginelog_record_error(log, li, VRT_ENGINELOG_UNKNOWN,
	                               VRT_ELE_TORCH_OOM);
	if (!e)
		return 1;
	if (vrt_enginelog_scan(
	            msg,
	            "Tried to allocate %z. GPU %u has a total capacit%* of "
	            "%z of which %z is free",
	            &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->device = (int32_t)c.v[1];
		e->total_bytes = (uint64_t)c.v[2];
		e->free_bytes = (uint64_t)c.v[3];
		e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE | VRT_ELH_TOTAL |
		           VRT_ELH_FREE;
		if (vrt_enginelog_scan(
		            msg,
		            "Of the allocated memory %z is allocated by "
		            "PyTorch",
		            &c)) {
			e->allocated_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_ALLOCATED;
		}
		if (vrt_enginelog_scan(
		            msg, "with %z allocated in private pools", &c)) {
			e->private_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_PRIVATE;
		}
		if (vrt_enginelog_scan(
		            msg,
		            "and %z is reserved by PyTorch but unallocated",
		            &c)) {
			e->reserved_bytes = (uint64_t)c.v[0];
			e->have |= VRT_ELH_RESERVED;
		}
		torch_processes(e, msg);
		torch_self(e);
	} else if (vrt_enginelog_scan(
	                   msg,
	                   "Tried to allocate %z (GPU %u; %z total capacity; "
	                   "%z already allocated; %z free; %z reserved in "
	                   "total by PyTorch)",
	                   &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->device = (int32_t)c.v[1];
		e->total_bytes = (uint64_t)c.v[2];
		e->allocated_bytes = (uint64_t)c.v[3];
		e->free_bytes = (uint64_t)c.v[4];
		e->reserved_bytes =
		        c.v[5] > c.v[3] ? (uint64_t)(c.v[5] - c.v[3]) : 0;
		e->have |= VRT_ELH_REQUESTED | VRT_ELH_DEVICE | VRT_ELH_TOTAL |
		           VRT_ELH_FREE | VRT_ELH_ALLOCATED | VRT_ELH_RESERVED;
	} else if (vrt_enginelog_scan(msg, "Tried to allocate %z", &c)) {
		e->requested_bytes = (uint64_t)c.v[0];
		e->requested_tol = (uint64_t)c.tol[0];
		e->have |= VRT_ELH_REQUESTED;
	}
	vrt_enginelog_record_commit(log);
	return 1;
}

/* Other memory errors a Python engine raises: "CUDA error: out of
 * memory" (torch.AcceleratorError, a kernel launch), "RuntimeError: CUDA
 * out of memory" without numbers; PyTorch's host allocator out of host
 * memory ("DefaultCPUAllocator: can't allocate memory: you tried to
 * allocate N bytes"). */
int vrt_enginelog_torch_python_oom(struct vrt_enginelog *log,
                                   const struct lineinfo *li)
{
	const char *msg = li->msg;
	struct vrt_enginelog_error *e;
	struct cap c;

	if (vrt_enginelog_scan(
	            msg,
	            "DefaultCPUAllocator: can't allocate memory: you tried "
	            "to allocate %u bytes",
	            &c)) {
		vrt_enginelog_record_host_error(log, li, VRT_ENGINELOG_UNKNOWN,
		                                (uint64_t)c.v[0], 0);
		return 1;
	}

	if (!(vrt_enginelog_scan_find(msg,
	                              "Error: CUDA error: out of memory") ||
	      vrt_enginelog_scan_find(msg, "Error: CUDA out of memory") ||
	      vrt_enginelog_scan_find(msg, "Error: HIP out of memory") ||
	      vrt_enginelog_scan_find(msg, "Error: HIP error: out of memory")))
		return 0;
	if ((e = vrt_enginelog_record_error(log, li, VRT_ENGINELOG_UNKNOWN,
	                                    VRT_ELE_OOM_OTHER)))
		vrt_enginelog_record_commit(log);
	return 1;
}
