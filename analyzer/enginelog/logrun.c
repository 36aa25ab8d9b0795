/*
 * logrun.c — the engine's log laid out as the run it describes
 * (logrun.h): items (a device's capacity probe, an allocation of a phase,
 * the server's ready line, requests in flight, the failed allocation) are
 * collected with the log line they come from, put in line order, given
 * times, and replayed by replay.c like a trace's events.
 *
 * Pure: reads the parsed log, writes only *lr; single-threaded.
 */
#include "logrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vramtrace/trace_format.h"

/* One event to be, with the log line it comes from. */
struct item {
	uint32_t line;
	uint32_t seq; /* the order items of one line were made in */
	int64_t wall_ns; /* 0: the line had no time */
	uint8_t kind;    /* VRT_EV_* */
	int32_t device;  /* trace device, -1 host / none */
	uint64_t size, aux, addr;
	uint32_t phase;
	uint16_t api;
	uint8_t flags;
	uint32_t extra;
};

struct builder {
	struct vrt_logrun *lr;
	const struct vrt_enginelog *log;
	struct item *items;
	size_t n, cap;
	int32_t ord[VRT_LOGRUN_MAX_DEVICES]; /* ordinal of each device */
	size_t ndev;
	int32_t fail_ord; /* the failing device's ordinal, -1 none */
	uint32_t limit;   /* lines after the fatal error do not count */
	uint64_t next_addr;
};

static int add(struct builder *b, const struct item *it)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct item *p = realloc(b->items, cap * sizeof(*p));
		if (!p)
			return -1;
		b->items = p;
		b->cap = cap;
	}
	b->items[b->n] = *it;
	b->items[b->n].seq = (uint32_t)b->n;
	b->n++;
	return 0;
}

int32_t vrt_logrun_device(const struct vrt_logrun *lr, int32_t ordinal)
{
	size_t i;

	for (i = 0; i < lr->t.ndevices; i++)
		if (lr->t.devices[i].ordinal == ordinal)
			return (int32_t)i;
	return -1;
}

/* The device of ordinal o (its index is the ordinal, so the report's
 * "device N" is the log's GPU N; the devices below it are there, empty),
 * added when new; -1 past the table. */
static int32_t device_of(struct builder *b, int32_t o)
{
	if (o < 0)
		o = b->fail_ord >= 0 ? b->fail_ord : 0;
	if (o >= VRT_LOGRUN_MAX_DEVICES)
		return -1;
	while (b->ndev <= (size_t)o) {
		b->ord[b->ndev] = (int32_t)b->ndev;
		b->ndev++;
	}
	return o;
}

/* An allocation of phase on the device of ordinal o at line. */
static int alloc_at(struct builder *b, uint32_t line, int64_t wall, int32_t o,
                    uint64_t bytes, uint32_t phase, int freed)
{
	struct item it;
	int32_t d = device_of(b, o);

	if (!bytes || d < 0)
		return 0;
	memset(&it, 0, sizeof(it));
	it.line = line;
	it.wall_ns = wall;
	it.kind = VRT_EV_ALLOC;
	it.device = d;
	it.size = bytes;
	it.phase = phase;
	it.api = VRT_API_cuMemAlloc_v2;
	it.addr = b->next_addr += 0x10000;
	if (add(b, &it))
		return -1;
	if (!freed)
		return 0;
	it.kind = VRT_EV_FREE;
	it.api = VRT_API_cuMemFree_v2;
	it.size = 0;
	it.device = -1;
	return add(b, &it);
}

/* The value of kind for ordinal o: the lines that named it, else those
 * that named no device (for the failing device, or every device when
 * the run has one); 0 when the log printed none before the limit. *line:
 * the last line. */
static uint64_t value_for(const struct builder *b, int kind, int32_t o,
                          uint32_t *line, int64_t *wall)
{
	const struct vrt_enginelog *log = b->log;
	uint64_t named = 0, unnamed = 0;
	uint32_t ln = 0, lu = 0;
	int64_t wn = 0, wu = 0;
	int have_n = 0, have_u = 0;
	size_t i;

	for (i = 0; i < log->nfacts; i++) {
		const struct vrt_enginelog_fact *f = &log->facts[i];
		if (f->kind != kind || (b->limit && f->line > b->limit))
			continue;
		if (f->device == o) {
			named = f->additive ? named + f->value : f->value;
			ln = f->line;
			wn = f->wall_ns;
			have_n = 1;
		} else if (f->device < 0) {
			unnamed = f->additive ? unnamed + f->value : f->value;
			lu = f->line;
			wu = f->wall_ns;
			have_u = 1;
		}
	}
	if (have_n) {
		*line = ln;
		*wall = wn;
		return named;
	}
	if (have_u && (o == b->fail_ord || b->ndev <= 1 || b->fail_ord < 0)) {
		*line = lu;
		*wall = wu;
		return unnamed;
	}
	return 0;
}

/* The log's own processes (a PyTorch message names them among the
 * others on the card). */
static int own(const struct vrt_enginelog *log, int64_t pid)
{
	size_t i;

	for (i = 0; i < log->npids; i++)
		if (log->pids[i] == pid)
			return 1;
	return 0;
}

static int cmp_items(const void *a, const void *b)
{
	const struct item *x = a, *y = b;

	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* argv from a command line (split at blanks, quotes kept together). */
static int split_command(struct vrt_logrun *lr, const char *cmd)
{
	size_t n = strlen(cmd), i = 0, o = 0;
	char quote = 0;
	int start = 1;

	lr->args = malloc(n + 2);
	if (!lr->args)
		return -1;
	lr->proc.argc = 0;
	for (i = 0; i < n; i++) {
		char c = cmd[i];
		if (!quote && (c == ' ' || c == '\t')) {
			if (!start) {
				lr->args[o++] = '\0';
				start = 1;
			}
			continue;
		}
		if (!quote && (c == '\'' || c == '"')) {
			quote = c;
			continue;
		}
		if (quote && c == quote) {
			quote = 0;
			continue;
		}
		if (start) {
			if (lr->proc.argc + 1 >= VRT_LOGRUN_MAX_ARGS)
				break;
			lr->argv[lr->proc.argc++] = lr->args + o;
			start = 0;
		}
		lr->args[o++] = c;
	}
	lr->args[o] = '\0';
	lr->proc.argv = lr->argv;
	return 0;
}

/* The program an engine's server runs as, when the log prints no command
 * line (its engine is then recognised from it as from a trace's). */
static const char *program(int engine)
{
	switch (engine) {
	case VRT_ENGINELOG_VLLM:
		return "vllm serve";
	case VRT_ENGINELOG_SGLANG:
		return "python -m sglang.launch_server";
	case VRT_ENGINELOG_LLAMACPP:
		return "llama-server";
	case VRT_ENGINELOG_TGI:
		return "text-generation-launcher";
	case VRT_ENGINELOG_TRTLLM:
		return "trtllm-serve";
	case VRT_ENGINELOG_OLLAMA:
		return "ollama serve";
	}
	return "";
}

/* The process: the printing process's pid, its command line; a fatal
 * error is how it ended. */
static int process(struct builder *b, const struct vrt_enginelog_error *e)
{
	struct vrt_logrun *lr = b->lr;
	const struct vrt_enginelog *log = b->log;
	const char *cmd = log->command;
	struct vrt_process *p = &lr->proc;

	memset(p, 0, sizeof(*p));
	snprintf(lr->host, sizeof(lr->host), "log");
	p->host = lr->host;
	p->pid = e && e->pid > 0 ? (uint64_t)e->pid
	         : log->npids     ? (uint64_t)log->pids[0]
	                          : 0;
	/* Ollama's log prints its runner's command: the server is what
	 * `record` runs (and whose settings advice names). */
	if (log->engine == VRT_ENGINELOG_OLLAMA || !cmd[0])
		cmd = program(log->engine);
	snprintf(lr->command, sizeof(lr->command), "%s",
	         log->engine == VRT_ENGINELOG_OLLAMA ? "ollama serve"
	         : log->command[0]                   ? log->command
	                                             : "");
	if (split_command(lr, cmd))
		return -1;
	if (e) {
		/* It died of the error the log ends with: no exit status
		 * is in a log. */
		p->exit_kind = VRT_EXIT_NONE;
		p->truncated = 1;
		p->ended = "died of the error its log ends with";
	}
	return 0;
}

/* Where the failure's allocation was, and for what. */
static uint32_t failure_phase(const struct vrt_enginelog_error *e, int serving)
{
	switch (e->kind) {
	case VRT_ELE_WEIGHTS_ALLOC:
		return VRT_PHASE_weights;
	case VRT_ELE_CONTEXT_ALLOC:
		return VRT_PHASE_kv_cache;
	case VRT_ELE_COMPUTE_ALLOC:
	case VRT_ELE_SAMPLER_WARMUP:
		return VRT_PHASE_profile;
	}
	if (e->phase >= 0)
		return (uint32_t)e->phase;
	return serving ? VRT_PHASE_forward : VRT_PHASE_unattributed;
}

/* The fatal error as a failed allocation, with what PyTorch said the
 * process held at that moment; the requests in flight. */
static int failure(struct builder *b, const struct vrt_enginelog_error *e)
{
	struct vrt_logrun *lr = b->lr;
	const struct vrt_enginelog *log = b->log;
	int host = e->kind == VRT_ELE_HOST_ALLOC;
	int32_t d = host ? -1 : device_of(b, b->fail_ord);
	uint32_t phase, wl = 0;
	uint64_t w, k, g, gl, kept = 0, act = 0, nontorch = 0;
	int64_t ww = 0;
	struct item it;
	uint32_t i, n;
	int serving;

	phase = failure_phase(e, e->serving);
	/* A weights load, a reserve, a warm-up stay the load's whatever came
	 * before; the rest after the ready line (or in a request) is
	 * serving. */
	serving = e->serving && vrt_replay_phase_is_demand(phase);
	if (e->serving && phase == VRT_PHASE_unattributed)
		phase = VRT_PHASE_forward;
	lr->serving = serving;
	w = value_for(b, VRT_ELK_WEIGHTS, b->fail_ord, &wl, &ww);
	k = value_for(b, VRT_ELK_KV_BYTES, b->fail_ord, &wl, &ww);
	gl = value_for(b, VRT_ELK_GRAPH, b->fail_ord, &wl, &ww);
	g = (e->have & VRT_ELH_PRIVATE) ? e->private_bytes : gl;
	if (e->have & VRT_ELH_PRIVATE && e->private_bytes > gl)
		/* PyTorch's private pools hold the graphs */
		if (alloc_at(b, e->line, e->wall_ns, b->fail_ord,
		             e->private_bytes - gl, VRT_PHASE_cuda_graph, 0))
			return -1;
	if (g)
		lr->rungs_read |= 1u << VRT_RUNG_RESERVES;
	/* PyTorch's account: allocated (private pools in it), reserved but
	 * unallocated, the process with non-PyTorch memory. What weights,
	 * KV cache and graphs do not explain is the failing phase's. */
	if (e->have & VRT_ELH_ALLOCATED && w) {
		uint64_t known = w + k + g;
		act = e->allocated_bytes > known ? e->allocated_bytes - known : 0;
		lr->rungs_read |= 1u << VRT_RUNG_ACTIVATIONS;
		if (serving)
			lr->rungs_read |= 1u << VRT_RUNG_INFLIGHT;
	} else if (e->have & VRT_ELH_ALLOCATED && !serving &&
	           phase == VRT_PHASE_weights) {
		/* loading the weights: what is allocated is what loaded */
		act = e->allocated_bytes > k + g ? e->allocated_bytes - k - g : 0;
		lr->rungs_read |= 1u << VRT_RUNG_WEIGHTS;
	} else if (e->have & VRT_ELH_ALLOCATED) {
		/* The process holds it, the log does not say what for: held
		 * since loading, unnamed (so the driver's count is not taken
		 * for another process's), no rung's number. */
		uint64_t held = e->allocated_bytes > k + g
		                        ? e->allocated_bytes - k - g
		                        : 0;
		if (held && alloc_at(b, e->wall_ns ? 0 : 0, 0, b->fail_ord, held,
		                     VRT_PHASE_unattributed, 0))
			return -1;
	}
	if (e->have & VRT_ELH_PROCESS)
		lr->rungs_read |= 1u << VRT_RUNG_BASELINE; /* NVML's list */
	if (e->have & VRT_ELH_RESERVED)
		kept = e->reserved_bytes;
	if ((e->have & VRT_ELH_PROCESS) && (e->have & VRT_ELH_ALLOCATED) &&
	    e->process_bytes > e->allocated_bytes + kept) {
		uint64_t nt = value_for(b, VRT_ELK_NON_TORCH, b->fail_ord, &wl,
		                        &ww);
		nontorch = e->process_bytes - e->allocated_bytes - kept;
		nontorch = nontorch > nt ? nontorch - nt : 0;
	}
	if (nontorch && alloc_at(b, e->line, e->wall_ns, b->fail_ord,
	                         nontorch, VRT_PHASE_comm, 0))
		return -1;
	if (serving) {
		/* the requests in flight: the engine's count, else one */
		n = (e->have & VRT_ELH_RUNNING) && e->running
		            ? (uint32_t)(e->running > 4096 ? 4096 : e->running)
		            : 1;
		lr->inflight_counted = (e->have & VRT_ELH_RUNNING) && e->running;
		/* an engine that runs one sequence at a time had one */
		if (!lr->inflight_counted &&
		    ((log->config_line[VRT_ELC_SLOTS] &&
		      log->config[VRT_ELC_SLOTS] == 1) ||
		     (log->config_line[VRT_ELC_MAX_NUM_SEQS] &&
		      log->config[VRT_ELC_MAX_NUM_SEQS] == 1))) {
			n = 1;
			lr->inflight_counted = 1;
		}
		lr->inflight = n;
		for (i = 0; i < n; i++) {
			memset(&it, 0, sizeof(it));
			it.line = e->line;
			it.wall_ns = e->wall_ns;
			it.kind = VRT_EV_REQUEST;
			it.device = -1;
			it.aux = 1;
			it.addr = i + 1;
			if (add(b, &it))
				return -1;
		}
	}
	/* What PyTorch holds beyond the engine's budgets is the activations
	 * of the run that failed (a profile run, the requests); beside a
	 * reserve's or the weights' own allocation it is named nothing (not
	 * the reserve being sized); loading the weights, it is the weights
	 * loaded so far. */
	if (act && alloc_at(b, e->line, e->wall_ns, b->fail_ord, act,
	                    phase == VRT_PHASE_profile ||
	                                    phase == VRT_PHASE_weights || serving
	                            ? phase
	                            : VRT_PHASE_unattributed,
	                    0))
		return -1;
	if (kept && alloc_at(b, e->line, e->wall_ns, b->fail_ord, kept,
	                     serving                       ? VRT_PHASE_forward
	                     : phase == VRT_PHASE_profile ? phase
	                                                  : VRT_PHASE_unattributed,
	                     0))
		return -1;
	memset(&it, 0, sizeof(it));
	it.line = e->line;
	it.wall_ns = e->wall_ns;
	it.kind = VRT_EV_FAIL;
	it.device = d;
	it.api = host ? VRT_API_cuMemHostAlloc : VRT_API_cuMemAlloc_v2;
	it.size = e->requested_bytes;
	it.aux = 2; /* out of memory */
	it.phase = phase;
	if (!host && (e->have & (VRT_ELH_FREE | VRT_ELH_TOTAL)) ==
	                     (VRT_ELH_FREE | VRT_ELH_TOTAL)) {
		lr->failinfo[0].free_bytes = e->free_bytes;
		lr->failinfo[0].total_bytes = e->total_bytes;
		it.flags = VRT_EV_HAVE_INFO;
		it.extra = 0;
	}
	lr->have_failure = 1;
	lr->failure_line = e->line;
	return add(b, &it);
}

/* Capacity and what other processes held, per device. */
static void capacity(struct builder *b, const struct vrt_enginelog_error *e,
                     uint64_t *total, uint64_t *other, size_t d)
{
	const struct vrt_enginelog *log = b->log;
	int32_t o = b->ord[d];
	uint32_t l;
	int64_t w;
	uint64_t fr;
	size_t i;

	*total = value_for(b, VRT_ELK_TOTAL, o, &l, &w);
	*other = 0;
	for (i = 0; i < log->nerrors; i++) {
		const struct vrt_enginelog_error *x = &log->errors[i];
		int32_t xo = (x->have & VRT_ELH_DEVICE) ? x->device : b->fail_ord;
		if (xo != o || !(x->have & VRT_ELH_TOTAL))
			continue;
		*total = x->total_bytes;
		if (x->kind == VRT_ELE_FREE_BELOW_UTIL &&
		    x->total_bytes > x->free_bytes)
			*other = x->total_bytes - x->free_bytes;
	}
	fr = value_for(b, VRT_ELK_FREE, o, &l, &w);
	if (*total && fr && fr < *total && *total - fr > *other)
		*other = *total - fr;
	if (e && o == b->fail_ord) {
		uint64_t sum = 0;
		for (i = 0; i < e->nothers; i++)
			if (!own(log, e->others[i].pid))
				sum += e->others[i].bytes;
		if (sum > *other)
			*other = sum;
	}
}

int vrt_logrun_build(struct vrt_logrun *lr, const struct vrt_enginelog *log)
{
	struct builder b;
	const struct vrt_enginelog_error *e = NULL;
	struct vrt_event *ev = NULL;
	static const struct {
		int kind, phase, transient, rung;
	} rungs[] = {
	        {VRT_ELK_WEIGHTS, VRT_PHASE_weights, 0, VRT_RUNG_WEIGHTS},
	        {VRT_ELK_KV_BYTES, VRT_PHASE_kv_cache, 0, VRT_RUNG_RESERVES},
	        {VRT_ELK_GRAPH, VRT_PHASE_cuda_graph, 0, VRT_RUNG_RESERVES},
	        {VRT_ELK_NON_TORCH, VRT_PHASE_comm, 0, VRT_RUNG_RESERVES},
	        {VRT_ELK_ACTIVATION, VRT_PHASE_profile, 1,
	         VRT_RUNG_ACTIVATIONS},
	};
	int64_t first_wall = 0, last = 0;
	size_t i, k;
	int rc = -1;

	memset(lr, 0, sizeof(*lr));
	memset(&b, 0, sizeof(b));
	b.lr = lr;
	b.log = log;
	b.fail_ord = -1;
	if (log->have_fatal)
		e = &log->errors[log->fatal];
	/* A refusal is no failed allocation unless it carries one (the
	 * cudaMalloc behind llama.cpp's context). */
	if (e && vrt_enginelog_is_refusal(e->kind) &&
	    !(e->have & VRT_ELH_REQUESTED))
		e = NULL;
	if (e && e->kind != VRT_ELE_HOST_ALLOC)
		b.fail_ord = (e->have & VRT_ELH_DEVICE) && e->device >= 0
		                     ? e->device
		                     : 0;
	if (e)
		b.limit = e->line;
	/* The devices: the failing one (or the one a refusal names), then
	 * every one a line named. */
	if (b.fail_ord < 0 && log->have_fatal &&
	    log->errors[log->fatal].kind != VRT_ELE_HOST_ALLOC)
		b.fail_ord = (log->errors[log->fatal].have & VRT_ELH_DEVICE) &&
		                             log->errors[log->fatal].device >= 0
		                     ? log->errors[log->fatal].device
		                     : 0;
	if (b.fail_ord >= 0)
		device_of(&b, b.fail_ord);
	for (i = 0; i < log->nfacts; i++)
		if (log->facts[i].device >= 0 && log->facts[i].device < 64 &&
		    log->facts[i].kind != VRT_ELK_KV_TOKENS &&
		    log->facts[i].kind != VRT_ELK_KV_BLOCKS &&
		    log->facts[i].kind != VRT_ELK_CONCURRENCY)
			device_of(&b, log->facts[i].device);
	if (!b.ndev && log->nfacts)
		device_of(&b, 0);
	if (process(&b, e))
		goto out;
	/* Allocations of what the engine printed, per device. A refusal of
	 * the KV cache (vLLM's max seq len check) comes before the cache is
	 * allocated: the bytes it printed as available were never taken. */
	int kv_refused = log->have_fatal &&
	                 log->errors[log->fatal].kind == VRT_ELE_KV_TOO_SMALL;
	for (i = 0; i < b.ndev; i++)
		for (k = 0; k < sizeof(rungs) / sizeof(rungs[0]); k++) {
			uint32_t line = 0;
			int64_t wall = 0;
			uint64_t v;
			if (kv_refused && rungs[k].kind == VRT_ELK_KV_BYTES)
				continue;
			v = value_for(&b, rungs[k].kind, b.ord[i], &line, &wall);
			/* a llama.cpp compute buffer stays allocated; a
			 * profile run's peak (vLLM, TensorRT-LLM) was freed */
			int transient = rungs[k].transient &&
			                log->engine != VRT_ENGINELOG_LLAMACPP &&
			                log->engine != VRT_ENGINELOG_OLLAMA;
			if (!v)
				continue;
			if ((int32_t)i == 0 || b.ord[i] == b.fail_ord)
				lr->rungs_read |= 1u << rungs[k].rung;
			if (alloc_at(&b, line, wall, b.ord[i], v,
			             (uint32_t)rungs[k].phase, transient))
				goto out;
		}
	if (log->have_ready && (!e || log->ready_line < e->line)) {
		struct item it;
		memset(&it, 0, sizeof(it));
		it.line = log->ready_line;
		it.wall_ns = log->ready_wall_ns;
		it.kind = VRT_EV_NET;
		it.device = -1;
		it.aux = VRT_NET_LISTEN;
		it.addr = 3;
		it.size = VRT_NET_KIND_INET;
		if (add(&b, &it))
			goto out;
	}
	if (e && failure(&b, e))
		goto out;
	/* The devices, their capacity and first probe. */
	lr->t.devices = lr->devs;
	lr->t.ndevices = b.ndev;
	for (i = 0; i < b.ndev; i++) {
		struct vrt_device *dv = &lr->devs[i];
		uint64_t total, other;
		capacity(&b, e, &total, &other, i);
		dv->host = lr->host;
		dv->ordinal = b.ord[i];
		dv->pid = lr->proc.pid;
		if (total) {
			dv->total_bytes = total;
			dv->have_total = 1;
		}
		if (total && other) {
			struct item it;
			memset(&it, 0, sizeof(it));
			it.line = 0;
			it.kind = VRT_EV_MEMINFO;
			it.device = (int32_t)i;
			it.api = VRT_API_cuMemGetInfo_v2;
			it.addr = total - other; /* free */
			it.size = total;
			if (add(&b, &it))
				goto out;
			if ((int32_t)i == 0 || b.ord[i] == b.fail_ord)
				lr->rungs_read |= 1u << VRT_RUNG_BASELINE;
		}
	}
	if (b.n)
		qsort(b.items, b.n, sizeof(*b.items), cmp_items);
	/* Times: the log's wall clock, kept in order; else a millisecond a
	 * line. */
	for (i = 0; i < b.n; i++)
		if (b.items[i].wall_ns) {
			first_wall = b.items[i].wall_ns;
			break;
		}
	if (log->first_wall_ns && (!first_wall || log->first_wall_ns < first_wall))
		first_wall = log->first_wall_ns;
	lr->have_wall = first_wall != 0;
	ev = calloc(b.n ? b.n : 1, sizeof(*ev));
	if (!ev)
		goto out;
	for (i = 0; i < b.n; i++) {
		const struct item *it = &b.items[i];
		int64_t ts = lr->have_wall
		                     ? (it->wall_ns ? it->wall_ns - first_wall
		                                    : last)
		                     : (int64_t)it->line * 1000000;
		if (ts < last)
			ts = last;
		last = ts;
		ev[i].ts = ts;
		ev[i].kind = it->kind;
		ev[i].device = it->device;
		ev[i].size = it->size;
		ev[i].aux = it->aux;
		ev[i].addr = it->addr;
		ev[i].phase = it->phase;
		ev[i].api = it->api;
		ev[i].flags = it->flags;
		ev[i].extra = it->extra;
	}
	lr->proc.events = b.n;
	lr->proc.start_wall_ns = first_wall;
	lr->t.procs = &lr->proc;
	lr->t.nprocs = 1;
	lr->t.fails = lr->failinfo;
	lr->t.nfails = 1;
	lr->t.start_ns = 0;
	lr->t.end_ns = last;
	lr->t.events_total = b.n;
	if (vrt_replay_begin(&lr->r, &lr->t) ||
	    vrt_replay_feed(&lr->r, &lr->t, ev, b.n) ||
	    vrt_replay_end(&lr->r, &lr->t))
		goto out;
	rc = 0;
out:
	free(ev);
	free(b.items);
	if (rc)
		vrt_logrun_free(lr);
	return rc;
}

void vrt_logrun_free(struct vrt_logrun *lr)
{
	vrt_replay_free(&lr->r);
	free(lr->args);
	lr->args = NULL;
}
