/*
 * standby.c — the facts a process in standby keeps, and the snapshot that
 * starts a recording (see standby.h for what is kept and why).
 *
 * Store: a fixed array of facts under one spinlock (kept_lock), filled by
 * hooks on any thread in standby; rare events (listen, fork/exec, the
 * first probe per device, the first request begun and answered) and a
 * ring of the latest request edges (one store per request begun or
 * ended), so the lock is never hot. The open request ids of the annotation API live
 * in a small table under its own spinlock (ids_lock), updated at every
 * bracket in both modes. The writing side (vrt_standby_write) runs under
 * session.c's start_mu: it moves the facts to out[] under kept_lock and
 * writes them with the lock released (writing may wait for the writer).
 *
 * Fork: the child starts empty (its facts are its own from its first
 * event on).
 */
#include "standby.h"
#include "hook.h"
#include "clock.h"
#include "live.h"

#include <vramtrace/trace_format.h>

#include <string.h>
#include <time.h>

#define MAX_KEPT  96 /* facts between two snapshots */
#define MAX_EDGES 256 /* the latest request edges of a standby stretch */
#define TEXT_KEPT 160
#define MAX_IDS   256 /* open annotated requests remembered */

struct kept {
	uint64_t at;
	uint8_t rec, op, kind, api, nflags;
	uint32_t stream;
	int32_t device;
	uint64_t addr, aux, free_bytes, total_bytes, held, val;
	char text[TEXT_KEPT];
};

static _Atomic int kept_lock, ids_lock;
static struct kept kept[MAX_KEPT];
static int nkept;
/* Request edges (a begin, an end, the close of a connection with a
 * request open): a ring of the latest, so a failure in another process
 * of the run can be told how many requests were in flight here then. */
static struct edge {
	uint64_t at;
	int32_t fd;
	uint32_t stream;
	uint16_t status;
	uint8_t op, nflags;
} edges[MAX_EDGES];
static unsigned edge_next, nedges;
static struct kept out[MAX_KEPT + MAX_EDGES]; /* the writer's copy;
                                                * start_mu */

/* One flag per fact taken once per image. */
static _Atomic int first_begin, first_end, first_ok, first_annotated;
static _Atomic uint8_t probed[2][VRT_LIVE_MAX_DEVICES]; /* by vendor */

static struct {
	uint64_t id;
	uint8_t used;
} ids[MAX_IDS];

static _Atomic int origin_set;
static uint64_t origin_mono, origin_wall;

_Atomic uint64_t vrt_standby_stack_min = UINT64_MAX;

static void spin_lock(_Atomic int *l)
{
	while (atomic_exchange_explicit(l, 1, memory_order_acquire))
		while (atomic_load_explicit(l, memory_order_relaxed))
			;
}

static void spin_unlock(_Atomic int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

void vrt_standby_begin(int first_event)
{
	struct timespec wall;
	long kib = vrt_options_int(VRT_OPT_STANDBY_STACK_KIB);
	atomic_store_explicit(&vrt_standby_stack_min, (uint64_t)kib << 10,
	                      memory_order_relaxed);
	if (!first_event)
		return;
	clock_gettime(CLOCK_REALTIME, &wall);
	origin_mono = vrt_clock_now();
	origin_wall = (uint64_t)wall.tv_sec * 1000000000u +
	              (uint64_t)wall.tv_nsec;
	atomic_store(&origin_set, 1);
}

int vrt_standby_origin(uint64_t *mono_ns, uint64_t *wall_ns)
{
	if (!atomic_load(&origin_set))
		return 0;
	*mono_ns = origin_mono;
	*wall_ns = origin_wall;
	return 1;
}

/* Appends a fact (dropped when the store is full: the earliest are the
 * ones a report needs — the first listen, the first children). */
static void keep(const struct kept *k)
{
	spin_lock(&kept_lock);
	if (nkept < MAX_KEPT)
		kept[nkept++] = *k;
	spin_unlock(&kept_lock);
}

/* Once per image: 1 for the first caller. */
static int first(_Atomic int *flag)
{
	return !atomic_load_explicit(flag, memory_order_relaxed) &&
	       !atomic_exchange(flag, 1);
}

static void keep_probe(const struct vrt_ev *ev, struct kept *k)
{
	int v = vrt_api_vendor(ev->api) == VRT_VENDOR_HIP;
	if (ev->device < 0 || ev->device >= VRT_LIVE_MAX_DEVICES ||
	    atomic_load_explicit(&probed[v][ev->device],
	                         memory_order_relaxed) ||
	    atomic_exchange(&probed[v][ev->device], 1))
		return;
	k->device = ev->device;
	k->api = ev->api;
	k->free_bytes = ev->free_bytes;
	k->total_bytes = ev->total_bytes;
	/* What the process held on the device then: a reader of the trace
	 * cannot know it (it never saw those allocations come and go). */
	k->held = vrt_live_device_bytes(vrt_api_vendor(ev->api), ev->device);
	keep(k);
}

static void keep_edge(const struct vrt_ev *ev)
{
	uint64_t now = vrt_clock_now();
	spin_lock(&kept_lock);
	struct edge *e = &edges[edge_next];
	edge_next = (edge_next + 1) % MAX_EDGES;
	if (nedges < MAX_EDGES)
		nedges++;
	e->at = now;
	e->fd = (int32_t)ev->addr;
	e->stream = ev->stream;
	e->nflags = ev->nflags;
	e->op = ev->op;
	e->status = ev->op == VRT_NET_REQ_END ? (uint16_t)ev->aux : 0;
	spin_unlock(&kept_lock);
}

void vrt_standby_keep(const struct vrt_ev *ev)
{
	struct kept k;
	memset(&k, 0, sizeof(k));
	k.rec = ev->rec;
	k.op = ev->op;
	k.kind = ev->kind;
	k.addr = ev->addr;
	k.aux = ev->aux;
	k.nflags = ev->nflags;
	k.stream = ev->stream;
	k.val = ev->val;
	switch (ev->rec) {
	case VRT_REC_NET: {
		int ok = ev->aux >= 200 && ev->aux < 300, want = 0;
		/* Probes and plumbing are never in flight. */
		int counted = !(ev->nflags &
		                (VRT_NET_F_PROBE | VRT_NET_F_INTERNAL));
		if ((ev->op == VRT_NET_REQ_BEGIN && counted) ||
		    (ev->op == VRT_NET_REQ_END && counted) ||
		    (ev->op == VRT_NET_CLOSE && ev->size))
			keep_edge(ev);
		if (ev->op == VRT_NET_LISTEN)
			want = 1;
		else if (ev->op == VRT_NET_REQ_BEGIN && counted)
			want = first(&first_begin);
		else if (ev->op == VRT_NET_REQ_END)
			want = first(&first_end) | (ok && first(&first_ok));
		if (!want)
			return;
		break;
	}
	case VRT_REC_PROC:
		if (ev->text)
			strncpy(k.text, ev->text, TEXT_KEPT - 1);
		break;
	case VRT_REC_REQUEST:
		if (ev->op != 1 || !first(&first_annotated))
			return;
		break;
	case VRT_REC_MEMINFO:
		k.at = vrt_clock_now();
		keep_probe(ev, &k);
		return;
	default:
		return;
	}
	k.at = vrt_clock_now();
	keep(&k);
}

void vrt_standby_request(int op, uint64_t id)
{
	unsigned h = (unsigned)((id * 0x9e3779b97f4a7c15ull) >> 56);
	spin_lock(&ids_lock);
	for (unsigned i = 0; i < MAX_IDS; i++) {
		unsigned j = (h + i) % MAX_IDS;
		if (op == 1 && !ids[j].used) {
			ids[j].id = id;
			ids[j].used = 1;
			break;
		}
		if (op == 2 && ids[j].used && ids[j].id == id) {
			ids[j].used = 0;
			break;
		}
	}
	spin_unlock(&ids_lock);
}

/* ---- writing ------------------------------------------------------------- */

static void write_fact(const struct kept *k)
{
	struct vrt_ev ev = {.rec = k->rec,
	                    .op = k->op,
	                    .kind = k->kind,
	                    .nflags = k->nflags,
	                    .stream = k->stream,
	                    .val = k->val,
	                    .api = k->api,
	                    .past = 1,
	                    .at = k->at,
	                    .device = k->device,
	                    .addr = k->addr,
	                    .aux = k->aux,
	                    .size = k->held,
	                    .free_bytes = k->free_bytes,
	                    .total_bytes = k->total_bytes,
	                    .text = k->rec == VRT_REC_PROC ? k->text : NULL};
	vrt_tbuf_event(&ev);
}

static void write_sample(uint64_t at, const uint8_t *blob, size_t len,
                         void *arg)
{
	(void)arg;
	struct vrt_ev ev = {.rec = VRT_REC_SAMPLE,
	                    .past = 1,
	                    .at = at,
	                    .blob = blob,
	                    .blob_len = (uint32_t)len};
	vrt_tbuf_event(&ev);
}

static void snapshot_alloc(const struct vrt_ev *ev, void *arg)
{
	(void)arg;
	vrt_tbuf_event(ev);
}

/* The connection walker (hook_libc.c's), set once by the constructor. */
static void (*_Atomic each_conn)(vrt_standby_conn_fn, vrt_standby_req_fn,
                                 void *);

void vrt_standby_set_conns(void (*each)(vrt_standby_conn_fn conn,
                                        vrt_standby_req_fn req, void *arg))
{
	atomic_store(&each_conn, each);
}

static void snapshot_conn(int fd, int listener, int kind, void *arg)
{
	(void)arg;
	struct vrt_ev ev = {.rec = VRT_REC_NET,
	                    .op = VRT_NET_ACCEPT,
	                    .kind = (uint8_t)kind,
	                    .addr = (uint64_t)fd,
	                    .aux = (uint64_t)(listener >= 0 ? listener : 0)};
	vrt_tbuf_event(&ev);
}

static void snapshot_req(int fd, uint32_t stream, unsigned flags, void *arg)
{
	(void)arg;
	struct vrt_ev rq = {.rec = VRT_REC_NET,
	                    .op = VRT_NET_REQ_BEGIN,
	                    .addr = (uint64_t)fd,
	                    .stream = stream,
	                    .nflags = (uint8_t)flags};
	vrt_tbuf_event(&rq);
}

void vrt_standby_write(void)
{
	int n;
	spin_lock(&kept_lock);
	n = nkept;
	memcpy(out, kept, (size_t)n * sizeof(out[0]));
	nkept = 0;
	for (unsigned i = 0; i < nedges; i++) {
		const struct edge *e =
		        &edges[(edge_next + MAX_EDGES - nedges + i) % MAX_EDGES];
		struct kept *k = &out[n++];
		memset(k, 0, sizeof(*k));
		k->at = e->at;
		k->rec = VRT_REC_NET;
		k->op = e->op;
		k->addr = (uint64_t)e->fd;
		k->stream = e->stream;
		k->nflags = e->nflags;
		k->aux = e->status;
	}
	nedges = edge_next = 0;
	spin_unlock(&kept_lock);
	/* In time order (a handful: insertion sort). */
	for (int i = 1; i < n; i++) {
		struct kept k = out[i];
		int j = i;
		while (j > 0 && out[j - 1].at > k.at) {
			out[j] = out[j - 1];
			j--;
		}
		out[j] = k;
	}
	for (int i = 0; i < n; i++)
		write_fact(&out[i]);
	vrt_sampler_kept(write_sample, NULL);

	struct vrt_ev mark = {.rec = VRT_REC_SNAPSHOT, .op = 1};
	vrt_tbuf_event(&mark);
	vrt_live_each(snapshot_alloc, NULL);
	void (*each)(vrt_standby_conn_fn, vrt_standby_req_fn, void *) =
	        atomic_load(&each_conn);
	if (each)
		each(snapshot_conn, snapshot_req, NULL);
	spin_lock(&ids_lock);
	uint64_t open_ids[MAX_IDS];
	int nids = 0;
	for (int i = 0; i < MAX_IDS; i++)
		if (ids[i].used)
			open_ids[nids++] = ids[i].id;
	spin_unlock(&ids_lock);
	for (int i = 0; i < nids; i++) {
		struct vrt_ev rq = {.rec = VRT_REC_REQUEST,
		                    .op = 1,
		                    .addr = open_ids[i]};
		vrt_tbuf_event(&rq);
	}
	mark.op = 2;
	vrt_tbuf_event(&mark);
}

void vrt_standby_write_stop(void)
{
	struct vrt_ev mark = {.rec = VRT_REC_SNAPSHOT, .op = 3};
	vrt_tbuf_event(&mark);
}

void vrt_standby_after_fork_child(void)
{
	atomic_store(&kept_lock, 0);
	atomic_store(&ids_lock, 0);
	nkept = 0;
	nedges = edge_next = 0;
	memset(ids, 0, sizeof(ids));
	memset((void *)probed, 0, sizeof(probed));
	atomic_store(&first_begin, 0);
	atomic_store(&first_end, 0);
	atomic_store(&first_ok, 0);
	atomic_store(&first_annotated, 0);
	atomic_store(&origin_set, 0);
}
