/*
 * gen_trace — writes a large trace in the real format for the analyzer
 * benchmark (run_analyze_bench.py), through the capture core itself
 * (vrt_tbuf_event + the writer thread, as tests/unit/core drives it), so
 * the file is what the preload would write for the same events.
 *
 * The events are alloc/free pairs of a caching allocator: --live address
 * slots (each with a fixed address, reused after its free, on one of two
 * CUDA devices), sizes from 512 B to 16 MiB, each allocation with one of
 * --stacks call stacks (real stacks, captured through trace_frames.c).
 * As in a server, the thread works on one device for a while (a step of
 * 64 events, then the other device) under one annotated phase at a time
 * (the built-in phases and custom ones, the next every 4096 events),
 * allocating from the stacks of that phase; frees carry the phase current
 * when they happen. The sequence is a fixed
 * pseudo-random one, so
 * every run writes the same events; the run ends with some allocations
 * still live, like a server that exits without freeing.
 *
 *   gen_trace --out DIR [--events N] [--live N] [--stacks N]
 *
 * Prints one line: events, dropped, bytes, seconds, path. Exit 0, 1 on an
 * error (or dropped events), 2 usage. Single-threaded; the writer thread
 * is the core's.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_STACKS      4096
#define LEVELS          12 /* 2^12 distinct stacks available */
#define NDEV            2
#define SLOT_STRIDE     (32ull << 20)
#define SYNC_EVERY_MASK ((1ull << 17) - 1) /* a writer pass per 128K events */

typedef uint32_t (*trace_frames_fn)(void);
uint32_t trace_frames_walk(unsigned key, int levels, trace_frames_fn capture);

static const char *const phase_names[] = {
        "weights",       "kv_cache", "forward",      "profile",
        "cuda_graph",    "comm",     "workspace",    "sampler",
        "prefill",       "decode",   "lora_adapter", "spec_decode",
        "embedding",     "lm_head",  "rotary_cache", "moe_dispatch",
        "attn_metadata", "logits",   "detokenize",   "prefix_cache",
};
#define NPHASES (sizeof(phase_names) / sizeof(phase_names[0]))

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int usage(const char *msg)
{
	fprintf(stderr,
	        "gen_trace: %s\n"
	        "usage: gen_trace --out DIR [--events N] [--live N] "
	        "[--stacks N]\n",
	        msg);
	return 2;
}

int main(int argc, char **argv)
{
	uint64_t events = 10000000, live = 4096, nstacks = 300;
	const char *out = NULL;
	static uint32_t stack_id[MAX_STACKS];
	static uint64_t stack_phase[MAX_STACKS];
	uint64_t *slot_size;
	struct vrt_device_info devs[NDEV];
	struct timespec t0, t1;
	char path[4096];
	struct stat st;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage("option needs a value");
		i++;
		if (!strcmp(a, "--out"))
			out = v;
		else if (!strcmp(a, "--events"))
			events = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--live"))
			live = strtoull(v, NULL, 10);
		else if (!strcmp(a, "--stacks"))
			nstacks = strtoull(v, NULL, 10);
		else
			return usage("unknown option");
	}
	if (!out || !live || live > (1u << 20) || !nstacks ||
	    nstacks > MAX_STACKS)
		return usage("--out is required; --live 1..1048576, "
		             "--stacks 1..4096");
	slot_size = calloc(live, sizeof(*slot_size));
	if (!slot_size || (mkdir(out, 0700) && access(out, W_OK))) {
		fprintf(stderr, "gen_trace: error: %s: cannot create\n", out);
		return 1;
	}

	atomic_store(&vrt_state, VRT_STATE_ON);
	vrt_stack_init(VRT_STACKS_NATIVE, 64);
	/* A pool large enough that the writer never makes us drop; zstd at
	 * the preload's default level (VRAMTRACE_ZSTD_LEVEL). */
	if (vrt_tbuf_init(512u << 20) || vrt_writer_start(out, 100, 1)) {
		fprintf(stderr,
		        "gen_trace: error: %s: cannot start the "
		        "writer\n",
		        out);
		return 1;
	}
	memset(devs, 0, sizeof(devs));
	for (int d = 0; d < NDEV; d++) {
		devs[d].vendor = VRT_VENDOR_CUDA;
		devs[d].ordinal = d;
		devs[d].total_bytes = 80ull << 30;
		snprintf(devs[d].name, sizeof(devs[d].name), "Bench GPU %d", d);
		for (int b = 0; b < 16; b++)
			devs[d].uuid[b] = (unsigned char)(b * 17 + d * 101 + 1);
		devs[d].have_uuid = 1;
	}
	vrt_writer_devices(devs, NDEV);

	/* Each stack belongs to one phase, named as the annotation API
	 * names it. */
	for (uint64_t s = 0; s < nstacks; s++) {
		vrt_phase_push(phase_names[s % NPHASES]);
		stack_phase[s] = vrt_phase_current();
		vrt_phase_pop();
		stack_id[s] = trace_frames_walk((unsigned)s, LEVELS,
		                                vrt_stack_capture);
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < events; i++) {
		uint64_t r = next();
		int dev = (int)((i >> 6) % NDEV);
		/* a slot of this step's device (slot % NDEV == dev) */
		uint64_t s = (r % live) / NDEV * NDEV + (uint64_t)dev;
		/* this stretch's phase, and the stacks that belong to it */
		uint64_t nph = nstacks < NPHASES ? nstacks : NPHASES;
		uint64_t ph = (i >> 12) % nph, per = nstacks / nph;
		uint64_t phase = stack_phase[ph];
		if (s >= live)
			s = (uint64_t)dev;
		uint64_t addr = ((uint64_t)(dev + 1) << 44) + s * SLOT_STRIDE;
		struct vrt_ev ev = {.device = dev, .addr = addr};
		if (slot_size[s]) {
			ev.rec = VRT_REC_FREE;
			ev.api = VRT_API_cuMemFree_v2;
			ev.phase = phase;
			slot_size[s] = 0;
		} else {
			uint64_t k = ph + nph * ((r >> 32) % per);
			ev.rec = VRT_REC_ALLOC;
			ev.api = VRT_API_cuMemAlloc_v2;
			ev.size = 512ull << ((r >> 20) % 16);
			ev.stack = stack_id[k];
			ev.phase = phase;
			slot_size[s] = ev.size;
		}
		vrt_tbuf_event(&ev);
		/* A writer pass every 128K events, as a server's passes
		 * (every flush interval) hold what it made in that time: this
		 * loop makes events far faster than any server, and without
		 * it passes would grow with the machine's load (and the pool
		 * could overflow: dropped events fail the run). */
		if ((i & SYNC_EVERY_MASK) == SYNC_EVERY_MASK)
			vrt_writer_sync(60000);
	}
	vrt_writer_stop(60000);
	clock_gettime(CLOCK_MONOTONIC, &t1);

	snprintf(path, sizeof(path), "%s/%d%s", out, (int)getpid(),
	         VRT_TRACE_SUFFIX);
	if (stat(path, &st)) {
		fprintf(stderr, "gen_trace: error: %s: no trace written\n",
		        path);
		return 1;
	}
	printf("events %llu dropped %llu bytes %lld seconds %.2f path %s\n",
	       (unsigned long long)vrt_tbuf_events(),
	       (unsigned long long)vrt_tbuf_dropped(), (long long)st.st_size,
	       (double)(t1.tv_sec - t0.tv_sec) +
	               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	       path);
	free(slot_size);
	return vrt_tbuf_dropped() ? 1 : 0;
}
