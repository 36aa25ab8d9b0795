/*
 * Replay: the time-ordered event stream of a trace in, batch by batch
 * (vrt_replay_begin, vrt_replay_feed per batch, vrt_replay_end); per-device,
 * per-family and per-phase budgets, peaks, requests in flight, marks, the
 * allocation sites live at each device's peak, and the list of failed
 * calls out. One pass: memory follows the live allocations, the distinct
 * (device, phase, stack) sites and the timelines' bounded points, never the
 * number of events.
 *
 * Device indexes: while streaming, events name devices in the loader's
 * order of first appearance; vrt_replay_end moves every per-device array
 * and device field of the result to the final order (t->device_remap), so
 * the finished result indexes t->devices as reports expect.
 *
 * Pure: no I/O, no printing, no globals. The result does not point into the
 * trace except through indexes (proc, device, strings), so a report needs
 * both.
 */
#ifndef VRT_REPLAY_H
#define VRT_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "load/load.h"
#include "vramtrace/trace_format.h"

/* Phase slots kept per device: the trace's phase indexes (load.h);
 * anything at or above folds into slot 0. */
#define VRT_REPLAY_MAX_PHASES VRT_LOAD_MAX_PHASES
/* Allocation sites kept per (device, phase) at the device's peak. */
#define VRT_REPLAY_TOP_SITES 5
/* Time buckets of a timeline: the run is cut into equal spans from its
 * start, and at most this many of them hold a change (the span doubles,
 * merging pairs of buckets, whenever more would: idle time costs no
 * resolution). Each keeps at most two points, the moment of its largest
 * value and its last state, so peaks are never lost and a timeline holds
 * at most 2 * VRT_REPLAY_SERIES_BUCKETS points whatever the trace's
 * length; and its range (vrt_replay_range). */
#define VRT_REPLAY_SERIES_BUCKETS 1000

/* The counters reported for a family, a phase, or reserved VA. */
struct vrt_counters {
	uint64_t allocs;
	uint64_t frees;
	uint64_t failed;
	uint64_t live_bytes; /* live now; at the end: live_bytes_end */
	uint64_t peak_bytes;
	int64_t peak_ts; /* when peak_bytes was first reached */
};

struct vrt_replay_device {
	struct vrt_counters fam[VRT_FAM_COUNT]; /* VRAM families + VA */
	struct vrt_counters phase[VRT_REPLAY_MAX_PHASES];
	uint64_t tracked_bytes; /* live sum of device/async/vmm/managed */
	uint64_t peak_bytes;    /* max of tracked_bytes */
	int64_t peak_ts;
	uint64_t peak_by_phase[VRT_REPLAY_MAX_PHASES];
	int have_baseline; /* a MEMINFO probe was seen */
	uint64_t baseline_used_bytes;
	int64_t baseline_ts;
	uint64_t probe_total_bytes; /* total of the first probe */
	/* Standby: the peak is the state a snapshot found (peak_ts is its
	 * time): the device held at least that much before recording began,
	 * maybe more — a lower bound, not a measured peak. */
	int peak_at_snapshot;
	/* the tracked bytes right after the latest snapshot that named the
	 * device (what the run held when recording began), and when */
	int have_snapshot;
	uint64_t snapshot_bytes;
	int64_t snapshot_ts;
	/* the most one request grew the per-request phases here while it was
	 * in flight alone (see vrt_replay.single_request_peak_bytes) */
	int have_single_request;
	uint64_t single_request_bytes;
	/* the timeline: live bytes by phase over time (downsampled, see
	 * VRT_REPLAY_SERIES_BUCKETS), in time order */
	struct vrt_replay_point *series;
	size_t nseries;
	/* beside it, the range of each bucket in which the device's bytes
	 * changed, in time order */
	struct vrt_replay_range *ranges;
	size_t nranges;
};

/* The live bytes of a device at one moment, right after an event. Before
 * its first point a device holds nothing; after its last point it holds
 * that point's bytes until the end of the run. */
struct vrt_replay_point {
	int64_t ts;
	uint64_t total; /* tracked bytes (the VRAM families) */
	uint64_t by_phase[VRT_REPLAY_MAX_PHASES];
};

/* The least and most bytes a device, and each of its phases, held at any
 * moment of one time bucket (the state it began with included). The points
 * keep a bucket's highest total; a phase can rise and fall back inside a
 * bucket while another grows (a profiling run's activations freed before
 * the KV cache is reserved): its range still shows it. */
struct vrt_replay_range {
	int64_t start_ts; /* the bucket's first nanosecond */
	uint64_t min_total, max_total;
	uint64_t min_by_phase[VRT_REPLAY_MAX_PHASES];
	uint64_t max_by_phase[VRT_REPLAY_MAX_PHASES];
};

/* Requests in flight from ts on (downsampled like a device timeline). */
struct vrt_replay_inflight {
	int64_t ts;
	uint32_t inflight;
};

/* One call path's share of a device's peak (heaptrack's "peak memory
 * consumers"): its live bytes and allocations at that moment. */
struct vrt_replay_site {
	int32_t device;
	uint32_t phase; /* phase slot */
	uint32_t stack; /* index into the trace's stacks (0: none) */
	uint64_t bytes;
	uint64_t allocs;
};

/* One device's numbers inside a window: the most tracked bytes it held,
 * and each phase's own most (phase slots; the phases need not peak at the
 * same moment). A window starts with what was live at its mark. */
struct vrt_replay_window_device {
	uint64_t peak_bytes;
	uint64_t peak_by_phase[VRT_REPLAY_MAX_PHASES];
};

/* A MARK event (copied: the events are gone once replayed). */
struct vrt_replay_mark {
	int64_t ts;
	uint32_t proc;  /* index into the trace's procs */
	uint32_t label; /* string index (0: none) */
};

/* The span from one MARK to the next (the last one: to the end of the
 * run), over every process of the run: the steps of a load test. */
struct vrt_replay_window {
	struct vrt_replay_mark mark; /* the MARK that opened it */
	int64_t start_ts, end_ts;
	uint32_t max_inflight; /* requests in flight, from the mark on */
	uint64_t ooms;         /* allocations refused for memory in it */
	struct vrt_replay_window_device *dev; /* one per trace device */
};

/* One process of the run, as its trace began. */
struct vrt_replay_proc {
	int started_in_standby; /* its capture began in standby: nothing but
	                         * kept facts before its first snapshot */
	uint64_t devices; /* bit d: it allocated device memory on trace
	                     device d (d < 64) */
	int have_snapshot;
	int64_t first_snapshot_ts; /* when it first recorded (a snapshot) */
	uint32_t snapshots;        /* how many it wrote */
};

struct vrt_replay_failure {
	int64_t ts;
	uint32_t proc;
	uint32_t tid;
	int32_t device; /* index into trace devices; -1: host, or
	                   a free of an unknown pointer */
	uint16_t api;
	int family; /* enum vrt_family, -1 for unknown apis */
	uint64_t requested_bytes;
	uint64_t addr;
	int64_t error;
	int oom; /* out of memory on an allocating call */
	int have_info;
	uint64_t free_bytes, total_bytes;
	uint32_t phase; /* phase slot of the failed call */
	uint32_t stack;
	/* Stage "request": the server was serving, not loading. It serves
	 * from the first request on (a listening socket alone is not enough:
	 * servers listen before they load); a weights allocation is always a
	 * load (on demand, a model swap), and so are the reserves sized
	 * after it (KV cache, profile run, graphs, communicators) and
	 * anything while no request is in flight, until a request in flight
	 * makes per-request allocations. */
	int after_ready;
	uint32_t inflight; /* requests in flight at that moment (those of
	                    * processes in standby then: by the request
	                    * edges they kept) */
	uint32_t inflight_inferred; /* ... of them, from turn-taking */
	/* connections open then whose requests could not be counted (their
	 * protocol was not followed: traces of older writers over HTTP/2 or
	 * TLS): the number in flight is unknown, not zero */
	uint32_t uncounted;
	/* the device's live bytes by phase slot when the call failed */
	uint64_t live_by_phase[VRT_REPLAY_MAX_PHASES];
	/* the per-request phases' live bytes (vrt_replay_phase_is_demand)
	 * at the failure, their level when the run was last idle (no
	 * request in flight; the same when none is in flight now), and
	 * their level when serving began (what loading left there: the
	 * rest of the idle level is memory a caching allocator kept from
	 * earlier requests) */
	uint64_t demand_bytes, idle_demand_bytes, serve_demand_bytes;
	/* The most the run's stream-ordered pools on the device can have
	 * kept of what they were given back: the async family's peak less
	 * its live bytes at the failure. A pool keeps freed bytes up to its
	 * release threshold (PyTorch's cudaMallocAsync backend sets it to
	 * UINT64_MAX), the driver counts them used, and a pool whose kept
	 * chunks are each too small refuses an allocation it has room for. */
	uint64_t pool_kept_max;
	/* Recovered: the same process (and thread) later allocated at least
	 * requested_bytes on the same device within seconds, as a caching
	 * allocator does after emptying its cache: the time, size and api of
	 * that allocation and what the process freed in between. */
	int recovered;
	int64_t recovered_ts;
	uint64_t recovered_bytes;
	uint16_t recovered_api;
	uint64_t freed_bytes;
	/* Fatal: the process's last unrecovered out-of-memory failure, and
	 * the process died (signal, non-zero exit, trace cut short), or its
	 * end is unknown and the run's root died, or nothing tells and it
	 * allocated nothing after the failure. */
	int fatal;
};

#define VRT_REPLAY_MAX_PATHS 32

/* What said the server was ready (vrt_replay.server_ready_from). */
enum vrt_replay_ready {
	VRT_READY_NONE = 0,
	VRT_READY_RESPONSE = 1, /* a request (not a probe) answered 2xx */
	VRT_READY_LOAD_END = 2, /* the load phases ended, then a client
	                         * connected (no request could be parsed) */
};

struct vrt_replay {
	size_t ndevices;
	struct vrt_replay_device *dev;           /* one per trace device */
	struct vrt_counters host[VRT_FAM_COUNT]; /* pinned, registered */
	uint64_t host_pinned_bytes;              /* live pinned + registered */
	uint64_t host_pinned_peak;
	int64_t host_pinned_peak_ts;
	struct vrt_replay_failure *fails;
	size_t nfails;
	uint64_t unmatched_frees; /* frees/releases/unmaps of unknown
	                             addresses */
	uint64_t ooms;
	uint64_t recovered; /* out-of-memory failures recovered */
	/* The failure a verdict rests on: the earliest fatal one, else the
	 * earliest unrecovered out-of-memory failure; SIZE_MAX when none. */
	size_t decisive;
	/* Serving: a request began (whatever counts them), and when. */
	int serving;
	int64_t serving_ts;
	/* The server's socket, settled at the end: the run's first listen()
	 * on an inet socket that is no library's plumbing; without one, the
	 * first unix socket listened on by a process that then served
	 * requests over unix connections; for traces that do not tell
	 * families apart, the first listen(). A unix socket alone (ZMQ
	 * ipc:// between an API server and its engine) is no server. Facts
	 * kept in standby count at the time they happened. Listening is not
	 * being ready: servers listen before they load (llama-server answers
	 * 503 meanwhile). */
	int have_server_ready;
	int64_t server_ready_ts;
	uint32_t server_ready_proc;
	uint64_t server_port;
	int server_ready_kind; /* enum vrt_net_kind of that socket */
	/* Readiness, settled at the end: the first request that is not a
	 * probe answered 2xx; without one, when the load phases ended, if a
	 * client connected after that and no load failed after it (a server
	 * whose requests cannot be parsed). The engine's ready line, when its
	 * log is given, is the diagnosis's (diagnose.c). */
	int have_ready;
	int ready_from; /* enum vrt_replay_ready */
	int64_t ready_ts;
	/* the first listen() of any kind, and when */
	int have_first_listen;
	int64_t first_listen_ts;
	/* Requests actually handled (HTTP/1.x framing or annotation
	 * brackets), facts kept in standby included: the first begun, the
	 * first answered, the first answered with a 2xx status (an engine
	 * answering 503 while it loads has not served yet). */
	int have_first_request;
	int64_t first_request_ts;
	int have_first_response;
	int64_t first_response_ts;
	uint32_t first_response_status;
	int have_first_ok_response;
	int64_t first_ok_response_ts;
	/* Requests in flight: per process, open REQUEST begin/end pairs when
	 * the process annotates requests, else HTTP/1.x requests on its
	 * accepted connections (NET REQ_BEGIN to REQ_END or CLOSE: idle
	 * keep-alive connections count zero), and for traces of writers that
	 * do not follow requests, open accepted connections (never two of
	 * these, so an annotated server is not counted twice: from a
	 * process's first REQUEST event on, its connections and HTTP
	 * requests stop counting, those still open included). */
	uint32_t inflight; /* at the end */
	uint32_t max_inflight;
	int64_t max_inflight_ts;
	uint64_t connections;   /* accepted connections seen */
	uint64_t requests;      /* annotated requests begun */
	uint64_t http_requests; /* HTTP/1.x requests begun */
	/* connections whose first bytes were not HTTP/1.x (HTTP/2, gRPC,
	 * TLS, ZMQ): nothing on them was counted */
	uint64_t other_connections;
	/* HTTP/1.x requests a back end received from a front that forwards
	 * them (a process listening on its own inet socket below one that
	 * listens too: Ollama's llama-server under its server); not counted
	 * in flight, the front's are. The first such back end's PID. */
	uint64_t forwarded_requests;
	uint64_t forwarded_proc_pid;
	/* ... and the process that forwarded them, where the connection
	 * named it (a unix socket's peer; 0: an ancestor, by the rule
	 * above) */
	uint64_t forwarded_from_pid;
	/* Probes (health, readiness, metrics, metadata polls: reqpath.h):
	 * counted apart, never in flight, never serving. */
	uint64_t probe_requests;
	/* requests inferred from turn-taking (a protocol that cannot be
	 * parsed: TLS inside the server, a protocol of its own, WebSocket) */
	uint64_t inferred_requests;
	/* HTTP/2 streams (gRPC calls) among the requests */
	uint64_t stream_requests;
	/* RPCs of a cluster runtime's own (Ray's), not requests */
	uint64_t internal_requests;
	/* connections whose requests could not be counted */
	uint64_t uncounted_connections;
	/* the request paths seen, by how many requests named each (string
	 * index into the trace's strings; the most named first, at most
	 * VRT_REPLAY_MAX_PATHS) */
	struct vrt_replay_path {
		uint32_t text;
		uint32_t hash;
		uint64_t requests;
		int probe;
	} *paths;
	size_t npaths;
	/* The single-request peak: the most one request grew the
	 * per-request phases of a device (above their level when it began)
	 * while it was in flight alone from its start; 0 when a caching
	 * allocator served it from memory it kept. */
	int have_single_request;
	uint64_t single_request_peak_bytes;
	int32_t single_request_peak_device;
	int64_t single_request_peak_ts;
	struct vrt_replay_mark *marks; /* in time order */
	size_t nmarks;
	/* one window per mark, in time order (see vrt_replay_window) */
	struct vrt_replay_window *windows;
	size_t nwindows;
	/* sites live at each device's peak: by device, then phase slot,
	 * then bytes (largest first); at most VRT_REPLAY_TOP_SITES per
	 * (device, phase) */
	struct vrt_replay_site *sites;
	size_t nsites;
	/* In (set before vrt_replay_begin): sites kept per (device, phase);
	 * 0 means VRT_REPLAY_TOP_SITES, SIZE_MAX every site (compare). */
	size_t top_sites;
	/* requests in flight over time (same downsampling as the device
	 * timelines) */
	struct vrt_replay_inflight *inflight_series;
	size_t ninflight_series;
	/* the timelines' bucket width in ns at the end (a power of two) */
	int64_t series_bucket_ns;
	/* Recording started late (standby and `ctl start`, or an allocation
	 * refused in standby): the first snapshot of a process that began in
	 * standby (a process that recorded from its start and was stopped
	 * later does not start late), and per process (one per trace
	 * process, by index). */
	int have_recording_start;
	int64_t recording_start_ts;
	struct vrt_replay_proc *procs;
	size_t nprocs;
	/* Private: the replay in progress (between begin and end). */
	void *priv;
};

/*
 * Starts replaying t's stream into *r, which must be zeroed (top_sites
 * may be set); t must be open (t->start_ns known). Then vrt_replay_feed
 * with each batch of events in stream order (n may be 0), and
 * vrt_replay_end once the stream has ended (t's tables, devices and
 * device_remap final). Each returns 0, or -1 when out of memory; release
 * *r with vrt_replay_free in every case (also without an end). *r is
 * complete only after vrt_replay_end: some of it (peak splits, the last
 * timeline points, the sites) is settled there.
 */
int vrt_replay_begin(struct vrt_replay *r, const struct vrt_trace *t);
int vrt_replay_feed(struct vrt_replay *r, const struct vrt_trace *t,
                    const struct vrt_event *ev, size_t n);
int vrt_replay_end(struct vrt_replay *r, const struct vrt_trace *t);

void vrt_replay_free(struct vrt_replay *r);

/* Slot of a phase id in the per-device phase arrays. */
unsigned vrt_replay_phase_slot(uint32_t phase);

/* 1 for the per-request phases: unattributed, forward, workspace and
 * custom phases (what a request grows, whatever a rule called it); 0 for
 * weights and the reserves an engine sizes (kv_cache, inferred KV,
 * profile, cuda_graph, comm). */
int vrt_replay_phase_is_demand(unsigned slot);

/* 1 for the VRAM families summed into a device's tracked bytes. */
int vrt_replay_family_is_vram(int family);

#endif /* VRT_REPLAY_H */
