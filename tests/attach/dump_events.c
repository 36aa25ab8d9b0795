/*
 * dump_events — one line per event of the traces given, for the attach
 * tests' checks: "KIND API TID SIZE ADDR FLAGS PHASE", KIND as alloc, free,
 * fail, meminfo, net, snapshot, other; API by name; FLAGS the loader's
 * (VRT_EV_SNAP 2: part of a snapshot); PHASE its name. A line
 * "header PID FLAGS" per process at the end (FLAGS 2: attached). Exit 0, 1
 * on a load error.
 *
 * dump_events --check TRACE...: each trace on its own (one attach), the
 * calls of attach_target checked per thread: its k-th allocation asks for
 * ((k % 1024) << 3 | t) + 1 bytes, so consecutive recorded allocations of
 * a thread (device, and pinned apart) must have consecutive k, each
 * followed by the free of its address before the next (the first event
 * may be the free of an allocation made before the attach, the last
 * allocation may lack its free: the window's edges; a REPEAT record's
 * pairs count as consecutive). Prints per trace
 * "TRACE allocs A frees F pinned P threads T gaps G unpaired U" and the
 * totals; exit 1 when a gap or an unpaired event is found.
 */
#include "load/load.h"

#include <vramtrace/trace_format.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define BATCH 4096

static const char *kind(int k)
{
	switch (k) {
	case VRT_EV_ALLOC:
		return "alloc";
	case VRT_EV_FREE:
		return "free";
	case VRT_EV_FAIL:
		return "fail";
	case VRT_EV_MEMINFO:
		return "meminfo";
	case VRT_EV_NET:
		return "net";
	case VRT_EV_SNAPSHOT:
		return "snapshot";
	case VRT_EV_REPEAT:
		return "repeat";
	default:
		return "other";
	}
}

/* One thread's state for one api family (device or pinned). */
struct seq {
	uint32_t tid;
	int fam; /* 0 device, 1 pinned */
	int have;          /* an allocation seen */
	uint64_t k, t;     /* the last allocation's number and thread bits */
	uint64_t open;     /* its address, 0 once freed */
	int events;
};

#define MAX_SEQ 4096

struct check {
	struct seq s[MAX_SEQ];
	int n;
	uint64_t allocs, frees, pinned, gaps, unpaired;
};

static struct seq *seq_of(struct check *c, uint32_t tid, int fam)
{
	for (int i = 0; i < c->n; i++)
		if (c->s[i].tid == tid && c->s[i].fam == fam)
			return &c->s[i];
	if (c->n == MAX_SEQ)
		return NULL;
	struct seq *q = &c->s[c->n++];
	memset(q, 0, sizeof(*q));
	q->tid = tid;
	q->fam = fam;
	return q;
}

static void check_event(struct check *c, const struct vrt_event *e)
{
	int fam;
	if (e->api == VRT_API_cuMemAlloc_v2 || e->api == VRT_API_cuMemFree_v2)
		fam = 0;
	else if (e->api == VRT_API_cuMemAllocHost_v2 ||
	         e->api == VRT_API_cuMemFreeHost)
		fam = 1;
	else
		return;
	if (e->flags & VRT_EV_SNAP)
		return;
	struct seq *q = seq_of(c, e->tid, fam);
	if (!q)
		return;
	if (e->kind == VRT_EV_REPEAT) {
		/* addr pairs folded, the first of the size given, each
		 * freed before the thread's next call. */
		uint64_t k = (e->size - 1) >> 3, t = (e->size - 1) & 7;
		c->allocs += fam == 0 ? e->addr : 0;
		c->pinned += fam == 1 ? e->addr : 0;
		c->frees += e->addr;
		if (q->open)
			c->unpaired++;
		if (q->have && (k != (q->k + 1) % 1024 || t != q->t))
			c->gaps++;
		q->have = 1;
		q->k = (k + e->addr - 1) % 1024;
		q->t = t;
		q->open = 0;
	} else if (e->kind == VRT_EV_ALLOC) {
		uint64_t k = (e->size - 1) >> 3, t = (e->size - 1) & 7;
		c->allocs += fam == 0;
		c->pinned += fam == 1;
		if (q->open) /* the last one was never freed */
			c->unpaired++;
		if (q->have && (k != (q->k + 1) % 1024 || t != q->t))
			c->gaps++;
		q->have = 1;
		q->k = k;
		q->t = t;
		q->open = e->addr;
	} else if (e->kind == VRT_EV_FREE) {
		c->frees++;
		if (q->open ? e->addr != q->open : q->events > 0)
			c->unpaired++;
		q->open = 0;
	}
	q->events++;
}

static int check(char **paths, int n)
{
	static struct vrt_event buf[BATCH];
	static struct check c;
	uint64_t tot[5] = {0};
	for (int i = 0; i < n; i++) {
		struct vrt_trace t;
		struct vrt_load_error err;
		enum vrt_load_status st;
		size_t got;
		memset(&t, 0, sizeof(t));
		memset(&err, 0, sizeof(err));
		memset(&c, 0, sizeof(c));
		st = vrt_load_open(&t, paths + i, 1, &err);
		while (!st && !(st = vrt_load_next(&t, buf, BATCH, &got,
		                                   &err)) &&
		       got)
			for (size_t k = 0; k < got; k++)
				check_event(&c, &buf[k]);
		vrt_load_free(&t);
		if (st) {
			fprintf(stderr, "dump_events: %s: %s\n", err.path,
			        err.msg);
			return 1;
		}
		printf("%s allocs %" PRIu64 " frees %" PRIu64 " pinned %" PRIu64
		       " threads %d gaps %" PRIu64 " unpaired %" PRIu64 "\n",
		       paths[i], c.allocs, c.frees, c.pinned, c.n, c.gaps,
		       c.unpaired);
		tot[0] += c.allocs;
		tot[1] += c.frees;
		tot[2] += c.pinned;
		tot[3] += c.gaps;
		tot[4] += c.unpaired;
	}
	printf("total allocs %" PRIu64 " frees %" PRIu64 " pinned %" PRIu64
	       " gaps %" PRIu64 " unpaired %" PRIu64 "\n",
	       tot[0], tot[1], tot[2], tot[3], tot[4]);
	return tot[3] || tot[4] ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "--check"))
		return check(argv + 2, argc - 2);
	static struct vrt_event buf[BATCH];
	struct vrt_trace t;
	struct vrt_load_error err;
	enum vrt_load_status st;
	size_t n;
	if (argc < 2) {
		fprintf(stderr, "usage: dump_events TRACE...\n");
		return 2;
	}
	memset(&t, 0, sizeof(t));
	memset(&err, 0, sizeof(err));
	st = vrt_load_open(&t, argv + 1, (size_t)(argc - 1), &err);
	while (!st && !(st = vrt_load_next(&t, buf, BATCH, &n, &err)) && n)
		for (size_t i = 0; i < n; i++) {
			const struct vrt_event *e = &buf[i];
			const char *api = vrt_api_name(e->api);
			printf("%s %s %u %" PRIu64 " %" PRIx64 " %u %s\n",
			       kind(e->kind), api ? api : "-", e->tid, e->size,
			       e->addr, e->flags,
			       e->phase < t.nphases && t.phases[e->phase]
			               ? t.phases[e->phase]
			               : "?");
		}
	if (st) {
		fprintf(stderr, "dump_events: %s: %s\n", err.path, err.msg);
		vrt_load_free(&t);
		return 1;
	}
	for (size_t i = 0; i < t.nprocs; i++)
		printf("header %" PRIu64 " %d\n", t.procs[i].pid,
		       t.procs[i].attached ? VRT_HEADER_ATTACHED : 0);
	vrt_load_free(&t);
	return 0;
}
