/*
 * Unit test of folding (trace format 2, VRT_REC_REPEAT) in the capture
 * core, with no preload: threads record scripted sequences of events, the
 * writer streams them, and the raw trace is decoded here with nothing but
 * zstd and trace_format.h. Each scenario runs on a thread of its own (its
 * own chunks, told apart by tid) right after a writer pass, so no timed
 * pass falls inside it. Checks the exact records written: where a run of
 * identical allocate-then-free pairs is folded, where a different pair,
 * an interleaved event, a snapshot, a chunk boundary and the writer's
 * sweep end or flush it, that counts, bytes and timestamps add up, and
 * that with folding off every pair is written. TAP output.
 */
#include "clock.h"
#include "core.h"

#include <vramtrace/trace_format.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

static int test_no;
static int failures;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++test_no, what);
	if (!cond)
		failures++;
}

/* ---- recording --------------------------------------------------------- */

struct pair_spec {
	uint64_t size;
	uint32_t stack;
	uint64_t phase;
};

static uint64_t next_addr = 0x100000;

static void rec_alloc(uint64_t addr, const struct pair_spec *p)
{
	struct vrt_ev ev = {.rec = VRT_REC_ALLOC,
	                    .api = VRT_API_cuMemAlloc_v2,
	                    .device = 0,
	                    .addr = addr,
	                    .size = p->size,
	                    .stack = p->stack,
	                    .phase = p->phase};
	vrt_tbuf_event(&ev);
}

static void rec_free(uint64_t addr, const struct pair_spec *p)
{
	struct vrt_ev ev = {.rec = VRT_REC_FREE,
	                    .api = VRT_API_cuMemFree_v2,
	                    .device = VRT_DEVICE_UNKNOWN,
	                    .addr = addr,
	                    .phase = p->phase};
	vrt_tbuf_event(&ev);
}

/* n allocate-then-free pairs, each at a new address. */
static void pairs(int n, const struct pair_spec *p)
{
	for (int i = 0; i < n; i++) {
		uint64_t a = next_addr;
		next_addr += 0x1000;
		rec_alloc(a, p);
		rec_free(a, p);
	}
}

static void mark(const char *label)
{
	struct vrt_ev ev = {.rec = VRT_REC_MARK, .text = label};
	vrt_tbuf_event(&ev);
}

static void snapshot(int op)
{
	struct vrt_ev ev = {.rec = VRT_REC_SNAPSHOT, .op = (uint8_t)op};
	vrt_tbuf_event(&ev);
}

static const struct pair_spec P = {4096, 7, 0};
static const struct pair_spec P_SIZE = {8192, 7, 0};
static const struct pair_spec P_STACK = {4096, 8, 0};
static const struct pair_spec P_PHASE = {4096, 7, 13}; /* id 3, annotated */

/* ---- scenarios (one thread each) ---------------------------------------- */

#define EXACT_PAIRS    1000
#define BOUNDARY_PAIRS 60000
#define SWEEP_PAIRS    100
#define OFF_PAIRS      50

static char big_label[VRT_EV_TEXT_MAX + 1];

static void sc_exact(void)
{
	pairs(EXACT_PAIRS, &P);
}

static void sc_size(void)
{
	pairs(5, &P);
	pairs(1, &P_SIZE);
	pairs(3, &P);
}

static void sc_stack(void)
{
	pairs(5, &P);
	pairs(1, &P_STACK);
	pairs(3, &P);
}

static void sc_phase(void)
{
	pairs(5, &P);
	pairs(1, &P_PHASE);
	pairs(3, &P);
}

static void sc_interleave(void)
{
	pairs(3, &P);
	mark("between");
	pairs(3, &P);
}

/* An ALLOC that may start the next folded pair, then another event: the
 * run's REPEAT must come before that ALLOC. */
static void sc_tentative(void)
{
	pairs(3, &P);
	uint64_t a = next_addr;
	next_addr += 0x1000;
	rec_alloc(a, &P);
	mark("in between");
	rec_free(a, &P);
}

/* Allocate a, allocate b, free b, free a: the inner pairs fold (their
 * REPEAT after a's ALLOC, before its FREE), the outer calls stay. */
static void sc_nested(void)
{
	for (int i = 0; i < 4; i++) {
		uint64_t a = next_addr, b = next_addr + 0x1000;
		next_addr += 0x2000;
		rec_alloc(a, &P);
		rec_alloc(b, &P);
		rec_free(b, &P);
		rec_free(a, &P);
	}
}

/* A snapshot's ALLOCs are not calls: never folded with a FREE. */
static void sc_snapshot(void)
{
	pairs(2, &P);
	snapshot(1);
	for (int i = 0; i < 3; i++) {
		uint64_t a = next_addr;
		next_addr += 0x1000;
		rec_alloc(a, &P);
		rec_free(a, &P);
	}
	snapshot(2);
}

/* Runs of pairs between big MARKs: many chunks fill up mid-run. */
static void sc_boundary(void)
{
	for (int i = 0; i < BOUNDARY_PAIRS / 10; i++) {
		pairs(10, &P);
		mark(big_label);
	}
}

/* Three sizes in turn: once the cycle was written twice, it folds. */
#define CYCLES 30
static const struct pair_spec P_C3 = {12288, 7, 0};

static void sc_cycle(void)
{
	for (int i = 0; i < CYCLES; i++) {
		pairs(1, &P);
		pairs(1, &P_SIZE);
		pairs(1, &P_C3);
	}
}

/* Allocations whose address delta or size does not pack (version 3):
 * written in full, the others compact; then their frees. */
#define PACK_N 5
static const uint64_t pack_addr[PACK_N] = {
        0x7f0000000000ull, 0x7f0000000000ull + (20ull << 20),
        0x7f0000000000ull + (20ull << 20) + (1ull << 62) + 1,
        0x7f0000000000ull + (20ull << 20) + (1ull << 62) + 1 + 512,
        0x7f0000000000ull + (20ull << 20) + (1ull << 62) + 1 + 1024};
static const uint64_t pack_size[PACK_N] = {4096, 20ull << 20, 4096,
                                           (1ull << 59) + 1, 4096};
static const char pack_compact[] = "0100101011"; /* per record */

static void sc_pack(void)
{
	vrt_tbuf_set_fold(0);
	for (int i = 0; i < PACK_N; i++) {
		struct pair_spec p = {pack_size[i], 7, 0};
		rec_alloc(pack_addr[i], &p);
	}
	for (int i = 0; i < PACK_N; i++)
		rec_free(pack_addr[i], &P);
	vrt_tbuf_set_fold(1);
}

static void sc_off(void)
{
	vrt_tbuf_set_fold(0);
	pairs(OFF_PAIRS, &P);
	vrt_tbuf_set_fold(1);
}

struct scenario {
	const char *name;
	void (*fn)(void);
	pid_t tid;
};

static struct scenario scenarios[] = {
        {"exact", sc_exact, 0},           {"size", sc_size, 0},
        {"stack", sc_stack, 0},           {"phase", sc_phase, 0},
        {"interleave", sc_interleave, 0}, {"tentative", sc_tentative, 0},
        {"nested", sc_nested, 0},         {"snapshot", sc_snapshot, 0},
        {"boundary", sc_boundary, 0},     {"off", sc_off, 0},
        {"cycle", sc_cycle, 0},           {"pack", sc_pack, 0},
};
#define NSC ((int)(sizeof(scenarios) / sizeof(scenarios[0])))

static void *run_scenario(void *arg)
{
	struct scenario *s = arg;
	s->tid = (pid_t)syscall(SYS_gettid);
	s->fn();
	vrt_tbuf_thread_exit();
	return NULL;
}

/* ---- decoding ---------------------------------------------------------- */

struct rec {
	unsigned type;
	int compact; /* read from an ALLOC_C or FREE_C */
	pid_t tid;
	uint32_t chunk; /* which CHUNK record it followed */
	uint64_t ts;
	uint64_t api, addr, size, aux, stack, phase, op;
	int64_t device;
	/* REPEAT: its first template in the fields above and here, every
	 * template in tp */
	uint64_t count, span, free_api, free_aux, period;
	int64_t free_device;
	struct {
		uint64_t api, free_api, size, aux, free_aux, stack, phase;
		int64_t device, free_device;
	} tp[VRT_REPEAT_MAX_PERIOD];
};

/* The compact state of the chunk being read (trace_format.h). */
static struct {
	uint64_t addr;
	struct rec a, f;
	int have_a, have_f;
} cs;

static struct rec *recs;
static size_t nrecs, caprecs;
static uint64_t trailer_events, trailer_dropped;
static int bad;

static struct rec *add_rec(void)
{
	if (nrecs == caprecs) {
		caprecs = caprecs ? caprecs * 2 : 4096;
		recs = realloc(recs, caprecs * sizeof(*recs));
		if (!recs)
			exit(1);
	}
	memset(&recs[nrecs], 0, sizeof(*recs));
	return &recs[nrecs++];
}

static void parse(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	static uint64_t ts;
	static pid_t tid;
	static uint32_t chunk;
	while (p < end) {
		unsigned type = *p++;
		uint64_t len, v = 0;
		if (vrt_get_uvarint(&p, end, &len) || len > (size_t)(end - p)) {
			bad = 1;
			return;
		}
		const uint8_t *q = p, *qe = p + len;
		p += len;
		uint64_t dts = 0;
		struct rec *r;
		switch (type) {
		case VRT_REC_CHUNK:
			memset(&cs, 0, sizeof(cs));
			vrt_get_uvarint(&q, qe, &v);
			tid = (pid_t)v;
			vrt_get_uvarint(&q, qe, &ts);
			chunk++;
			continue;
		case VRT_REC_TRAILER:
			vrt_get_uvarint(&q, qe, &v);
			vrt_get_uvarint(&q, qe, &v);
			vrt_get_uvarint(&q, qe, &trailer_events);
			vrt_get_uvarint(&q, qe, &trailer_dropped);
			continue;
		case VRT_REC_ALLOC:
		case VRT_REC_FREE:
		case VRT_REC_ALLOC_C:
		case VRT_REC_FREE_C:
		case VRT_REC_REPEAT:
			break;
		case VRT_REC_MARK:
		case VRT_REC_SNAPSHOT:
			memset(&cs, 0, sizeof(cs));
			break;
		default:
			memset(&cs, 0, sizeof(cs));
			continue;
		}
		r = add_rec();
		r->type = type;
		r->tid = tid;
		r->chunk = chunk;
		if (vrt_get_uvarint(&q, qe, &dts))
			bad = 1;
		ts += dts;
		r->ts = ts;
		switch (type) {
		case VRT_REC_ALLOC_C:
		case VRT_REC_FREE_C: {
			uint64_t d = 0;
			int alloc = type == VRT_REC_ALLOC_C;
			if (!(alloc ? cs.have_a : cs.have_f))
				bad = 1;
			*r = alloc ? cs.a : cs.f;
			r->type = alloc ? VRT_REC_ALLOC : VRT_REC_FREE;
			r->compact = 1;
			r->tid = tid;
			r->chunk = chunk;
			r->ts = ts;
			vrt_get_uvarint(&q, qe, &d);
			cs.addr += (uint64_t)vrt_unpack_s(d);
			r->addr = cs.addr;
			if (alloc) {
				vrt_get_uvarint(&q, qe, &r->size);
				r->size = vrt_unpack_u(r->size);
				if (vrt_get_uvarint(&q, qe, &r->stack))
					bad = 1;
			}
			break;
		}
		case VRT_REC_ALLOC:
		case VRT_REC_FREE:
			r->compact = 0;
			vrt_get_uvarint(&q, qe, &r->api);
			vrt_get_svarint(&q, qe, &r->device);
			vrt_get_uvarint(&q, qe, &r->addr);
			if (type == VRT_REC_ALLOC)
				vrt_get_uvarint(&q, qe, &r->size);
			vrt_get_uvarint(&q, qe, &r->aux);
			vrt_get_uvarint(&q, qe, &r->stack);
			if (vrt_get_uvarint(&q, qe, &r->phase))
				bad = 1;
			cs.addr = r->addr;
			if (type == VRT_REC_ALLOC) {
				cs.a = *r;
				cs.have_a = 1;
			} else {
				cs.f = *r;
				cs.have_f = 1;
			}
			break;
		case VRT_REC_SNAPSHOT:
			vrt_get_uvarint(&q, qe, &r->op);
			break;
		case VRT_REC_REPEAT:
			vrt_get_uvarint(&q, qe, &r->count);
			vrt_get_uvarint(&q, qe, &r->span);
			vrt_get_uvarint(&q, qe, &r->period);
			if (r->period < 1 || r->period > VRT_REPEAT_MAX_PERIOD) {
				bad = 1;
				break;
			}
			for (uint64_t k = 0; k < r->period; k++) {
				vrt_get_uvarint(&q, qe, &r->tp[k].api);
				vrt_get_uvarint(&q, qe, &r->tp[k].free_api);
				vrt_get_svarint(&q, qe, &r->tp[k].device);
				vrt_get_svarint(&q, qe, &r->tp[k].free_device);
				vrt_get_uvarint(&q, qe, &r->tp[k].size);
				vrt_get_uvarint(&q, qe, &r->tp[k].aux);
				vrt_get_uvarint(&q, qe, &r->tp[k].free_aux);
				vrt_get_uvarint(&q, qe, &r->tp[k].stack);
				if (vrt_get_uvarint(&q, qe, &r->tp[k].phase))
					bad = 1;
			}
			r->api = r->tp[0].api;
			r->free_api = r->tp[0].free_api;
			r->device = r->tp[0].device;
			r->free_device = r->tp[0].free_device;
			r->size = r->tp[0].size;
			r->aux = r->tp[0].aux;
			r->free_aux = r->tp[0].free_aux;
			r->stack = r->tp[0].stack;
			r->phase = r->tp[0].phase;
			break;
		}
	}
}

static void decode_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		bad = 1;
		return;
	}
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc((size_t)size);
	size_t got = fread(buf, 1, (size_t)size, f);
	fclose(f);
	size_t cap = 1 << 24;
	uint8_t *out = malloc(cap);
	for (size_t off = 0; off < got;) {
		size_t fsz = ZSTD_findFrameCompressedSize(buf + off, got - off);
		if (ZSTD_isError(fsz)) {
			bad = 1;
			break;
		}
		size_t n = ZSTD_decompress(out, cap, buf + off, fsz);
		if (ZSTD_isError(n)) {
			bad = 1;
			break;
		}
		parse(out, n);
		off += fsz;
	}
	free(out);
	free(buf);
}

/* ---- checks ------------------------------------------------------------ */

/* The records of one scenario, in file order, as a string: A F R<n> M S. */
static void sequence(pid_t tid, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	for (size_t i = 0; i < nrecs && o + 24 < cap; i++) {
		const struct rec *r = &recs[i];
		if (r->tid != tid)
			continue;
		switch (r->type) {
		case VRT_REC_ALLOC:
			o += (size_t)snprintf(out + o, cap - o, "A ");
			break;
		case VRT_REC_FREE:
			o += (size_t)snprintf(out + o, cap - o, "F ");
			break;
		case VRT_REC_MARK:
			o += (size_t)snprintf(out + o, cap - o, "M ");
			break;
		case VRT_REC_SNAPSHOT:
			o += (size_t)snprintf(out + o, cap - o, "S ");
			break;
		case VRT_REC_REPEAT:
			o += (size_t)snprintf(out + o, cap - o, "R%llu ",
			                      (unsigned long long)r->count);
			break;
		}
	}
	if (o)
		out[o - 1] = 0;
}

static void expect_seq(const struct scenario *s, const char *want)
{
	char got[1024], what[1200];
	sequence(s->tid, got, sizeof(got));
	int same = !strcmp(got, want);
	snprintf(what, sizeof(what), "%s: records are \"%.48s%s\"", s->name,
	         want, strlen(want) > 48 ? "..." : "");
	ok(same, what);
	if (!same)
		printf("# got \"%s\"\n", got);
}

struct totals {
	uint64_t allocs, frees, bytes, events, repeats;
	int ts_back, orphan_repeat, repeat_fields;
};

/* The records of thread tid in time order: its chunks by their first
 * record's time (a full chunk the writer queued can land in the file after
 * the thread's next one), each chunk's records in file order. Returns the
 * count; *out is malloc'd. */
static const struct rec *by_time_recs;

static int cmp_time(const void *pa, const void *pb)
{
	const size_t *a = pa, *b = pb;
	uint64_t ta = by_time_recs[a[1]].ts, tb = by_time_recs[b[1]].ts;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a[0] < b[0] ? -1 : a[0] > b[0];
}

static size_t in_time_order(pid_t tid, size_t **out)
{
	/* pairs (file index, index of its chunk's first record) */
	size_t n = 0, *v = malloc(2 * sizeof(*v) * (nrecs + 1));
	uint32_t chunk = 0;
	size_t first = 0;
	for (size_t i = 0; v && i < nrecs; i++) {
		if (recs[i].tid != tid)
			continue;
		if (!n || recs[i].chunk != chunk) {
			chunk = recs[i].chunk;
			first = i;
		}
		v[2 * n] = i;
		v[2 * n + 1] = first;
		n++;
	}
	by_time_recs = recs;
	if (v)
		qsort(v, n, 2 * sizeof(*v), cmp_time);
	for (size_t i = 0; v && i < n; i++)
		v[i] = v[2 * i];
	*out = v;
	return v ? n : 0;
}

/* Counts a scenario's allocations, frees and bytes with every REPEAT
 * expanded, and checks the contract's promises: timestamps never go back
 * within a chunk, the span fits, and every REPEAT follows, in its thread
 * (in the same chunk or an earlier one), a full ALLOC+FREE pair with the
 * fields it repeats. */
static struct totals count(pid_t tid)
{
	struct totals t = {0};
	uint64_t last_ts = 0;
	uint32_t chunk = 0;
	const struct rec *pa = NULL, *pf = NULL; /* last full pair */
	const struct rec *prev = NULL;
	size_t *order, n = in_time_order(tid, &order);
	for (size_t o = 0; o < n; o++) {
		const struct rec *r = &recs[order[o]];
		if (r->chunk != chunk) {
			chunk = r->chunk;
			last_ts = 0;
			prev = NULL;
		}
		if (r->ts < last_ts)
			t.ts_back = 1;
		last_ts = r->ts;
		switch (r->type) {
		case VRT_REC_ALLOC:
			t.allocs++;
			t.bytes += r->size;
			t.events++;
			break;
		case VRT_REC_FREE:
			t.frees++;
			t.events++;
			if (prev && prev->type == VRT_REC_ALLOC &&
			    prev->addr == r->addr) {
				pa = prev;
				pf = r;
			}
			break;
		case VRT_REC_REPEAT:
			t.repeats++;
			t.allocs += r->count;
			t.frees += r->count;
			for (uint64_t k = 0; k < r->period; k++)
				t.bytes += (r->count / r->period +
				            (k < r->count % r->period)) *
				           r->tp[k].size;
			t.events += 2 * r->count;
			if (!pa)
				t.orphan_repeat = 1;
			else if (r->period > 1)
				t.repeat_fields |= r->count == 0 ||
				                   r->span > r->ts - pf->ts;
			else if (r->api != pa->api || r->free_api != pf->api ||
			         r->device != pa->device ||
			         r->free_device != pf->device ||
			         r->size != pa->size || r->aux != pa->aux ||
			         r->free_aux != pf->aux ||
			         r->stack != pa->stack ||
			         r->phase != pa->phase || r->count == 0 ||
			         r->span > r->ts - pf->ts)
				t.repeat_fields = 1;
			break;
		default:
			t.events++;
		}
		prev = r;
	}
	free(order);
	return t;
}

static struct scenario *find(const char *name)
{
	for (int i = 0; i < NSC; i++)
		if (!strcmp(scenarios[i].name, name))
			return &scenarios[i];
	return NULL;
}

int main(void)
{
	char dir[] = "/tmp/vrt-fold-XXXXXX";
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp\n");
		return 1;
	}
	memset(big_label, 'x', VRT_EV_TEXT_MAX);
	printf("1..28\n");
	atomic_store(&vrt_state, VRT_STATE_ON);
	/* The records as the hot path wrote them (test_batch.c reads
	 * the BATCH records the writer makes of them by default). */
	vrt_batch_set(0);
	ok(vrt_tbuf_init(16u << 20) == 0, "tbuf init");
	/* A long flush interval: passes come only when asked for (or when
	 * a chunk fills), never in the middle of a short scenario. */
	ok(vrt_writer_start(dir, 10000, 1) == 0, "writer starts");

	char path[256];
	snprintf(path, sizeof(path), "%s/%d%s", dir, (int)getpid(),
	         VRT_TRACE_SUFFIX);

	/* The event clock (the TSC where it is invariant, converted with
	 * what the writer measures every pass) against CLOCK_MONOTONIC:
	 * each reading bracketed by two clock_gettime calls, the loose
	 * brackets (a preemption in between) skipped. */
	usleep(700 * 1000); /* a few writer wakes: calibrated */
	int tight = 0, off = 0, back = 0;
	uint64_t prev = 0, worst = 0;
	for (int i = 0; i < 200000 && tight < 20000; i++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		uint64_t now = vrt_clock_now();
		clock_gettime(CLOCK_MONOTONIC, &b);
		uint64_t lo =
		        (uint64_t)a.tv_sec * 1000000000u + (uint64_t)a.tv_nsec;
		uint64_t hi =
		        (uint64_t)b.tv_sec * 1000000000u + (uint64_t)b.tv_nsec;
		if (now < prev)
			back++;
		prev = now;
		if (hi - lo > 2000)
			continue;
		tight++;
		uint64_t d = now < lo ? lo - now : now > hi ? now - hi : 0;
		if (d > worst)
			worst = d;
		if (d > 5000)
			off++;
	}
	ok(tight > 1000 && off == 0 && back == 0,
	   "the event clock agrees with CLOCK_MONOTONIC within 5 us");
	if (off || back || tight <= 1000)
		printf("# tight %d, off %d, backwards %d, worst %llu ns\n",
		       tight, off, back, (unsigned long long)worst);

	/* The writer's sweep: a pending REPEAT goes out with the chunk. */
	pid_t sweep_tid = 0;
	{
		struct scenario sw = {"sweep", NULL, 0};
		vrt_writer_sync(5000);
		sw.tid = (pid_t)syscall(SYS_gettid);
		sweep_tid = sw.tid;
		pairs(SWEEP_PAIRS, &P);
		vrt_writer_sync(5000);
		decode_file(path);
		struct totals t = count(sweep_tid);
		ok(t.allocs == SWEEP_PAIRS && t.frees == SWEEP_PAIRS &&
		           t.repeats == 1,
		   "sweep: the pending run is in the file after a writer pass");
		nrecs = 0;
		pairs(SWEEP_PAIRS, &P);
		vrt_tbuf_thread_exit();
	}

	for (int i = 0; i < NSC; i++) {
		vrt_writer_sync(5000);
		pthread_t th;
		pthread_create(&th, NULL, run_scenario, &scenarios[i]);
		pthread_join(th, NULL);
	}
	vrt_writer_stop(5000);
	nrecs = 0;
	decode_file(path);
	ok(!bad, "the trace decodes");

	expect_seq(find("exact"), "A F R999");
	struct totals t = count(find("exact")->tid);
	ok(t.allocs == EXACT_PAIRS && t.frees == EXACT_PAIRS &&
	           t.bytes == (uint64_t)EXACT_PAIRS * P.size,
	   "exact: allocations, frees and bytes match the calls");
	ok(!t.ts_back && !t.orphan_repeat && !t.repeat_fields,
	   "exact: REPEAT fields and times agree with the pair");

	expect_seq(find("size"), "A F R4 A F A F R2");
	expect_seq(find("stack"), "A F R4 A F A F R2");
	expect_seq(find("phase"), "A F R4 A F A F R2");
	expect_seq(find("interleave"), "A F R2 M R3");
	expect_seq(find("tentative"), "A F R2 A M F");
	expect_seq(find("nested"), "A A F F A R1 F A R1 F A R1 F");
	expect_seq(find("snapshot"), "A F R1 S A F A F A F S");
	expect_seq(find("cycle"), "A F A F A F A F A F R85");
	{
		struct totals c = count(find("cycle")->tid);
		ok(c.allocs == 3 * CYCLES && c.frees == 3 * CYCLES &&
		           c.bytes == (uint64_t)CYCLES *
		                              (P.size + P_SIZE.size +
		                               P_C3.size),
		   "cycle: one REPEAT of period 3 counts every pair's bytes");
	}
	char all_pairs[OFF_PAIRS * 4];
	for (int i = 0; i < OFF_PAIRS; i++)
		memcpy(all_pairs + 4 * i, "A F ", 4);
	all_pairs[OFF_PAIRS * 4 - 1] = 0;
	expect_seq(find("off"), all_pairs);
	{
		struct totals o = count(find("off")->tid);
		ok(o.allocs == OFF_PAIRS && o.frees == OFF_PAIRS &&
		           o.repeats == 0,
		   "fold off: every pair written in full, no REPEAT");
	}

	{
		pid_t tid = find("pack")->tid;
		char got[2 * PACK_N + 1] = {0};
		int k = 0, exact = 1;
		for (size_t i = 0; i < nrecs && k < 2 * PACK_N; i++) {
			const struct rec *r = &recs[i];
			if (r->tid != tid)
				continue;
			int j = k % PACK_N;
			exact &= r->addr == pack_addr[j] &&
			         (k >= PACK_N || r->size == pack_size[j]);
			got[k++] = r->compact ? '1' : '0';
		}
		ok(k == 2 * PACK_N && exact,
		   "pack: every address and size decodes exactly");
		ok(!strcmp(got, pack_compact),
		   "pack: what does not pack is written in full");
		if (strcmp(got, pack_compact))
			printf("# got %s\n", got);
	}

	struct totals b = count(find("boundary")->tid);
	uint32_t chunks = 0, last = 0;
	for (size_t i = 0; i < nrecs; i++)
		if (recs[i].tid == find("boundary")->tid &&
		    recs[i].chunk != last) {
			last = recs[i].chunk;
			chunks++;
		}
	ok(chunks > 3, "boundary: the scenario spans several chunks");
	{
		/* The history outlives the chunk: in time order, after its
		 * first pair the thread writes no pair in full again (an
		 * ALLOC can end a chunk whose sweep took it before its FREE:
		 * that FREE then opens the next chunk, alone). */
		size_t *order, n = in_time_order(find("boundary")->tid, &order);
		uint32_t full = 0;
		const struct rec *before = NULL;
		for (size_t o = 0; o < n; o++) {
			const struct rec *r = &recs[order[o]];
			if (before && before->chunk == r->chunk &&
			    before->type == VRT_REC_ALLOC &&
			    r->type == VRT_REC_FREE && before->addr == r->addr)
				full++;
			before = r;
		}
		free(order);
		ok(n && full == 1,
		   "boundary: a run folds on in the thread's next chunks");
		if (full != 1)
			printf("# %u pairs written in full\n", full);
	}
	ok(b.allocs == BOUNDARY_PAIRS && b.frees == BOUNDARY_PAIRS &&
	           b.bytes == (uint64_t)BOUNDARY_PAIRS * P.size,
	   "boundary: counts and bytes match across chunk boundaries");
	ok(!b.orphan_repeat && !b.repeat_fields && !b.ts_back,
	   "boundary: every REPEAT follows a full pair of its thread");

	struct totals s = count(sweep_tid);
	ok(s.allocs == 2 * SWEEP_PAIRS && s.frees == 2 * SWEEP_PAIRS &&
	           s.repeats == 2 && !s.orphan_repeat,
	   "sweep: the run goes on after the pass, as a REPEAT of its own");

	uint64_t events = s.events;
	for (int i = 0; i < NSC; i++)
		events += count(scenarios[i].tid).events;
	ok(trailer_events == events && trailer_dropped == 0,
	   "trailer counts every folded event");
	int all_ok = 1;
	for (int i = 0; i < NSC; i++) {
		struct totals x = count(scenarios[i].tid);
		all_ok = all_ok && !x.ts_back && !x.orphan_repeat &&
		         !x.repeat_fields;
	}
	ok(all_ok, "no scenario breaks the REPEAT contract");
	if (trailer_events != events)
		printf("# trailer %llu, decoded %llu\n",
		       (unsigned long long)trailer_events,
		       (unsigned long long)events);
	unlink(path);
	rmdir(dir);
	free(recs);
	return failures ? 1 : 0;
}
