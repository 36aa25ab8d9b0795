/*
 * bench_alloc — alloc+free pairs, for measuring what a profiler adds per
 * pair. With --api cuda (the default) the pairs are cuMemAlloc_v2 +
 * cuMemFree_v2, reaching the driver the way libcudart does (dlopen +
 * cuGetProcAddress); with --api malloc they are malloc + free (what
 * heaptrack hooks), called the same way from the same place. Either way
 * every thread makes --pairs pairs from one call site, --depth frames
 * below its start, with sizes cycling through --sizes values (--base +
 * k * 512, k < sizes; base 4096 and 8 sizes by default, so no pair
 * repeats the one before it; 1 makes every pair identical; --base 2097152
 * makes them large, as allocator segments are).
 *
 * Prints one line:
 *   "<threads> <depth> <pairs per thread> <wall ns/pair> <cpu ns/pair>"
 * wall ns/pair: wall time of the whole run divided by the pairs of one
 *   thread (what one thread's pair takes while all threads run);
 * cpu ns/pair: CPU time the calling threads spent (CLOCK_THREAD_CPUTIME_ID
 *   of each worker around its loop, summed) divided by all pairs. With
 *   more threads than cores the wall figure measures the scheduler; the
 *   CPU figure stays what one pair costs, so it is the one to compare.
 * Run it bare and under a profiler and subtract (run_all.py does).
 *
 * --mixed: the workload of a server whose allocator calls the driver for
 * every tensor (PyTorch with cudaMallocAsync): each pair's allocation comes
 * from one of --paths call paths (default 64, of depths --depth + 6 to
 * --depth + 29, picked pseudo-randomly, the same sequence every run), with
 * the size of its path (4 KiB to 4 MiB, spread evenly on a log scale,
 * multiples of 512 B), and is freed --ring allocations later (default 256:
 * a ring of that many live blocks, lifetimes interleaved). With --api cuda
 * the calls are cuMemAllocAsync + cuMemFreeAsync on the default stream;
 * run with FAKECUDA_BENCH=reuse, the fake driver hands freed addresses
 * out again as a pool does. The blocks left in the ring at the end are
 * freed too, so every allocation has its free.
 *
 * --mix wide: the same, but each allocation's size is drawn anew from
 * 1,024 values (4 KiB to 4 MiB on a log scale, whole bf16 elements: even
 * byte counts, most of them not multiples of 512), whatever its path, so
 * that a call path rarely repeats a size: what PyTorch's cudaMallocAsync
 * backend asks for when every tensor shape is a size.
 *
 * --mix serve: the allocations of a transformer's forward passes as an
 * inference server makes them with that backend, step after step: the
 * step's inputs (token ids, positions, KV slots, the block table, lengths),
 * then the same tensors in each of --layers layers (default 32; one call
 * path each: norms, QKV, rotary, attention and its log-sum-exp, output
 * projection, residuals, MLP), then the final norm, logits and sampling;
 * each tensor freed when eager PyTorch drops it (the residual stream
 * lives into the next layer). Shapes are a Llama-3-8B's (hidden 4096, 32
 * heads, 8 KV heads of 128, MLP 14336, vocabulary 128256, bf16, fp32
 * logits); sizes follow the step's batch and sequence length, which
 * change every step: decode steps of 1 to 64 sequences (requests join and
 * leave) whose context grows by one token a step, and one step in 16 a
 * chunk of a prefill (512 tokens, or a prompt's last chunk). --pairs counts
 * allocations (each one freed) as in the other mixes.
 *
 * --rate N paces each thread to N pairs a second (a server's rate, not a
 * tight loop: what a trace holds per event depends on the time between
 * events); the CPU figure leaves out the time asleep.
 *
 *   bench_alloc [--api cuda|malloc] [--threads N] [--pairs N] [--depth N]
 *               [--sizes N] [--base BYTES] [--mixed] [--mix fixed|wide|serve]
 *               [--paths N] [--ring N] [--layers N] [--rate N]
 *
 * Exit 0; 1 when the driver is missing or a call fails; 2 usage.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum api { API_CUDA, API_MALLOC };

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);

static CUresult (*cu_init)(unsigned);
static CUresult (*cu_retain)(CUcontext *, int);
static CUresult (*cu_set)(CUcontext);
static CUresult (*cu_alloc)(CUdeviceptr *, size_t);
static CUresult (*cu_free)(CUdeviceptr);
static CUresult (*cu_alloc_async)(CUdeviceptr *, size_t, void *);
static CUresult (*cu_free_async)(CUdeviceptr, void *);
static CUcontext ctx;
static long pairs = 200000;
static int depth = 40;
static long nsizes = 8;
static size_t base = 4096; /* --base: the first size */
static enum api api = API_CUDA;
static int mixed;
static unsigned npaths = 64;
static long ring = 256;
static double rate; /* pairs per second per thread, 0: as fast as it can */
static _Thread_local double pace_t0;
/* Volatile, so the compiler cannot see (and drop) a malloc+free pair. */
static void *(*volatile c_malloc)(size_t) = malloc;
static void (*volatile c_free)(void *) = free;

static double now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* With --rate: sleeps until pair i is due (checked every 16 pairs). */
static void pace(long i)
{
	if (rate <= 0 || i % 16)
		return;
	if (!pace_t0)
		pace_t0 = now(CLOCK_MONOTONIC);
	double due = pace_t0 + (double)i / rate * 1e9;
	double left = due - now(CLOCK_MONOTONIC);
	if (left > 0) {
		struct timespec ts = {(time_t)(left / 1e9),
		                      (long)((long long)left % 1000000000LL)};
		nanosleep(&ts, NULL);
	}
}

static __attribute__((noinline)) void loop(void)
{
	if (api == API_MALLOC) {
		for (long i = 0; i < pairs; i++) {
			pace(i);
			void *p = c_malloc(base + (size_t)(i % nsizes) * 512);
			if (!p) {
				fprintf(stderr, "bench_alloc: malloc failed\n");
				exit(1);
			}
			c_free(p);
		}
		return;
	}
	for (long i = 0; i < pairs; i++) {
		CUdeviceptr p;
		pace(i);
		if (cu_alloc(&p, base + (size_t)(i % nsizes) * 512) ||
		    cu_free(p)) {
			fprintf(stderr, "bench_alloc: driver call failed\n");
			exit(1);
		}
	}
}

/* ---- the mixed workloads ------------------------------------------ */

enum mix_kind { MIX_FIXED, MIX_WIDE, MIX_SERVE };

/* One thread's state: its ring of live blocks (fixed, wide) or its
 * tensors (serve), its random sequence, and the allocation being made. */
struct mix {
	uint64_t rng;
	uint64_t *ring; /* ring entries: the address, 0 when empty */
	uint64_t want;  /* the size mix_leaf allocates */
	long made;      /* allocations made */
};

static enum mix_kind mix_kind = MIX_FIXED;
static int layers = 32;
static uint64_t path_size[256];
#define WIDE_SIZES 1024
static uint64_t wide_size[WIDE_SIZES];

static uint64_t mix_next(struct mix *m)
{
	m->rng ^= m->rng << 13;
	m->rng ^= m->rng >> 7;
	m->rng ^= m->rng << 17;
	return m->rng;
}

static void fail_call(const char *what)
{
	fprintf(stderr, "bench_alloc: %s failed\n", what);
	exit(1);
}

static void mix_free(uint64_t p)
{
	if (api == API_MALLOC)
		c_free((void *)(uintptr_t)p);
	else if (cu_free_async(p, NULL))
		fail_call("cuMemFreeAsync");
}

/* The bottom of every path: allocate m->want bytes into *slot, after
 * freeing the block the slot held (a ring slot: allocated ring
 * allocations ago). */
static __attribute__((noinline)) void mix_leaf(struct mix *m, uint64_t *slot)
{
	uint64_t p;
	if (api == API_MALLOC) {
		p = (uint64_t)(uintptr_t)c_malloc(m->want);
		if (!p)
			fail_call("malloc");
	} else {
		CUdeviceptr d;
		if (cu_alloc_async(&d, m->want, NULL))
			fail_call("cuMemAllocAsync");
		p = d;
	}
	if (*slot)
		mix_free(*slot);
	*slot = p;
	m->made++;
}

static void mix_walk(unsigned path, unsigned bits, int pad, struct mix *m,
                     uint64_t *slot);

/* Two functions, one per bit of the path's number, so each path is a
 * different call stack; noinline and a use after the call keep each level
 * a frame of its own. */
static __attribute__((noinline)) void mix_a(unsigned path, unsigned bits,
                                            int pad, struct mix *m,
                                            uint64_t *slot)
{
	mix_walk(path, bits, pad, m, slot);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void mix_b(unsigned path, unsigned bits,
                                            int pad, struct mix *m,
                                            uint64_t *slot)
{
	mix_walk(path, bits, pad, m, slot);
	__asm__ volatile("" ::: "memory");
}

/* pad plain levels, then one level per bit of the path number. */
static __attribute__((noinline)) void mix_walk(unsigned path, unsigned bits,
                                               int pad, struct mix *m,
                                               uint64_t *slot)
{
	if (pad > 0)
		mix_a(path, bits, pad - 1, m, slot);
	else if (bits > 1)
		(path & bits ? mix_b : mix_a)(path, bits >> 1, 0, m, slot);
	else
		mix_leaf(m, slot);
	__asm__ volatile("" ::: "memory");
}

static unsigned path_top(unsigned n)
{
	unsigned top = 1;
	while (top < n)
		top <<= 1;
	return top;
}

/* Allocates size bytes from path into *slot (which must be empty), unless
 * the thread made its allocations already. Depth: 0 to 23 more levels,
 * by path. */
static void mix_alloc(struct mix *m, unsigned path, unsigned top,
                      uint64_t size, uint64_t *slot)
{
	if (m->made >= pairs)
		return;
	pace(m->made);
	m->want = size;
	mix_walk(path, top, (int)(path * 7 % 24), m, slot);
}

static void mix_loop(struct mix *m)
{
	unsigned top = path_top(npaths);
	for (long i = 0; i < pairs; i++) {
		uint64_t r = mix_next(m);
		unsigned path = (unsigned)(r % npaths);
		uint64_t size = mix_kind == MIX_WIDE
		                        ? wide_size[(r >> 16) % WIDE_SIZES]
		                        : path_size[path];
		pace(i);
		m->want = size;
		mix_walk(path, top, (int)(path * 7 % 24), m, &m->ring[i % ring]);
	}
	for (long i = 0; i < ring; i++)
		if (m->ring[i])
			mix_free(m->ring[i]);
}

/* The serve mix: one path per tensor of a decoder layer (and around the
 * layers); shapes of a Llama-3-8B in bf16. */
enum { T_IDS, T_POS, T_SLOTS, T_BLOCKS, T_LENS, T_EMBED, T_NORM1, T_QKV,
       T_ROT, T_ATTN, T_LSE, T_OPROJ, T_RES1, T_NORM2, T_GATEUP, T_ACT,
       T_DOWN, T_RES2, T_FNORM, T_LOGITS, T_PROBS, T_NEXT, T_COUNT };
#define HIDDEN  4096ull
#define HEADS   32ull
#define KV_DIM  1024ull /* 8 KV heads of 128 */
#define MLP_DIM 14336ull
#define VOCAB   128256ull
#define BLOCK   16ull /* tokens per KV cache block */
#define BUDGET  512ull /* tokens of a prefill chunk */

static void drop(uint64_t *slot)
{
	if (*slot)
		mix_free(*slot);
	*slot = 0;
}

/* One forward pass of b sequences, tok tokens in all, each sequence's
 * context len tokens long: the step's inputs (token ids, positions, KV
 * slots, block table, lengths), the layers, the logits and sampling. */
static void serve_step(struct mix *m, uint64_t b, uint64_t tok, uint64_t len)
{
	uint64_t t[T_COUNT] = {0}, act = tok * HIDDEN * 2;
	unsigned top = path_top(T_COUNT);
	mix_alloc(m, T_IDS, top, tok * 8, &t[T_IDS]);
	mix_alloc(m, T_POS, top, tok * 8, &t[T_POS]);
	mix_alloc(m, T_SLOTS, top, tok * 8, &t[T_SLOTS]);
	mix_alloc(m, T_BLOCKS, top, b * ((len + BLOCK - 1) / BLOCK) * 4,
	          &t[T_BLOCKS]);
	mix_alloc(m, T_LENS, top, b * 4, &t[T_LENS]);
	mix_alloc(m, T_EMBED, top, act, &t[T_RES2]);
	for (int l = 0; l < layers; l++) {
		mix_alloc(m, T_NORM1, top, act, &t[T_NORM1]);
		mix_alloc(m, T_QKV, top, tok * (HIDDEN + 2 * KV_DIM) * 2,
		          &t[T_QKV]);
		drop(&t[T_NORM1]);
		mix_alloc(m, T_ROT, top, act, &t[T_ROT]);
		mix_alloc(m, T_ATTN, top, act, &t[T_ATTN]);
		mix_alloc(m, T_LSE, top, tok * HEADS * 4, &t[T_LSE]);
		drop(&t[T_LSE]);
		drop(&t[T_ROT]);
		drop(&t[T_QKV]);
		mix_alloc(m, T_OPROJ, top, act, &t[T_OPROJ]);
		drop(&t[T_ATTN]);
		mix_alloc(m, T_RES1, top, act, &t[T_RES1]);
		drop(&t[T_OPROJ]);
		drop(&t[T_RES2]);
		mix_alloc(m, T_NORM2, top, act, &t[T_NORM2]);
		mix_alloc(m, T_GATEUP, top, tok * MLP_DIM * 2 * 2, &t[T_GATEUP]);
		drop(&t[T_NORM2]);
		mix_alloc(m, T_ACT, top, tok * MLP_DIM * 2, &t[T_ACT]);
		drop(&t[T_GATEUP]);
		mix_alloc(m, T_DOWN, top, act, &t[T_DOWN]);
		drop(&t[T_ACT]);
		mix_alloc(m, T_RES2, top, act, &t[T_RES2]);
		drop(&t[T_DOWN]);
		drop(&t[T_RES1]);
	}
	mix_alloc(m, T_FNORM, top, act, &t[T_FNORM]);
	drop(&t[T_RES2]);
	mix_alloc(m, T_LOGITS, top, b * VOCAB * 4, &t[T_LOGITS]);
	drop(&t[T_FNORM]);
	mix_alloc(m, T_PROBS, top, b * VOCAB * 4, &t[T_PROBS]);
	drop(&t[T_LOGITS]);
	mix_alloc(m, T_NEXT, top, b * 8, &t[T_NEXT]);
	drop(&t[T_PROBS]);
	for (int k = 0; k < T_COUNT; k++)
		drop(&t[k]);
}

/* Steps until the thread made its allocations: decode steps whose batch
 * changes by up to 2 sequences a step and whose context grows a token a
 * step (the batch turns over past 4,096), and one step in 16 a chunk of
 * a prefill: a full chunk of BUDGET tokens (3 in 4) or a prompt's last
 * chunk of 16 to BUDGET - 1 tokens, of 1 to 4 prompts. */
static void serve_loop(struct mix *m)
{
	uint64_t b = 8, len = 512;
	while (m->made < pairs) {
		uint64_t r = mix_next(m);
		if (r % 16 == 0) {
			uint64_t n = 1 + (r >> 8) % 4;
			uint64_t q = (r >> 12) % 4 ? BUDGET / n
			                           : 16 + (r >> 16) % (BUDGET / n - 16);
			serve_step(m, n, n * q, q);
			continue;
		}
		b += (r >> 8) % 5;
		b = b > 2 ? b - 2 : 1;
		if (b > 64)
			b = 64;
		if (++len > 4096)
			len = 256 + (r >> 16) % 1024;
		serve_step(m, b, b, len);
	}
}

/* 2^x for 0 <= x < 1, to a few parts in a thousand (no libm). */
static double exp2_frac(double x)
{
	return 1 + x * (0.6951 + x * (0.2262 + x * 0.0787));
}

/* Sizes by path: 4 KiB to 4 MiB on a log scale, in multiples of 512 B,
 * in an order that does not follow the path number; and the wide mix's
 * 1,024 sizes over the same range, in whole bf16 elements. */
static void mix_sizes(void)
{
	for (unsigned k = 0; k < npaths; k++) {
		unsigned j = (k * 37 + 11) % npaths;
		double e = npaths > 1 ? 10.0 * j / (npaths - 1) : 0;
		int ip = (int)e;
		uint64_t s = (uint64_t)((double)(4096u << ip) *
		                        exp2_frac(e - ip));
		path_size[k] = (s + 511) / 512 * 512;
	}
	for (unsigned k = 0; k < WIDE_SIZES; k++) {
		double e = 10.0 * k / (WIDE_SIZES - 1);
		int ip = (int)e;
		uint64_t s = (uint64_t)((double)(2048u << ip) *
		                        exp2_frac(e - ip));
		wide_size[k] = s * 2;
	}
}

/* Calls loop() from depth nested frames, so stacks are ~depth deep. */
static __attribute__((noinline)) void nest(int d, volatile int *guard,
                                           struct mix *m)
{
	if (d <= 1) {
		if (m && mix_kind == MIX_SERVE)
			serve_loop(m);
		else if (m)
			mix_loop(m);
		else
			loop();
	} else {
		nest(d - 1, guard, m);
	}
	(*guard)++; /* not a tail call */
}

struct job {
	double cpu; /* out: the CPU ns its loop took */
	struct mix mix;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	volatile int guard = 0;
	double t0;
	if (api == API_CUDA)
		cu_set(ctx);
	t0 = now(CLOCK_THREAD_CPUTIME_ID);
	nest(depth, &guard, mixed ? &j->mix : NULL);
	j->cpu = now(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

static int usage(void)
{
	fprintf(stderr, "usage: bench_alloc [--api cuda|malloc] [--threads N] "
	                "[--pairs N] [--depth N] [--sizes N] [--base BYTES] [--mixed] "
	                "[--mix fixed|wide|serve] [--paths N] [--ring N] "
	                "[--layers N] [--rate N]\n");
	return 2;
}

/* Resolves the driver entry points the loop uses; 0 on success. */
static int open_driver(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	proc_fn get = h ? (proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL) ||
	    get("cuInit", (void **)&cu_init, 12000, 0, NULL) ||
	    get("cuDevicePrimaryCtxRetain", (void **)&cu_retain, 12000, 0,
	        NULL) ||
	    get("cuCtxSetCurrent", (void **)&cu_set, 12000, 0, NULL) ||
	    get("cuMemAlloc", (void **)&cu_alloc, 12000, 0, NULL) ||
	    get("cuMemFree", (void **)&cu_free, 12000, 0, NULL) ||
	    get("cuMemAllocAsync", (void **)&cu_alloc_async, 12000, 0, NULL) ||
	    get("cuMemFreeAsync", (void **)&cu_free_async, 12000, 0, NULL) ||
	    cu_init(0) ||
	    cu_retain(&ctx, 0))
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	int threads = 1;
	pthread_t t[256];
	static struct job jobs[256];
	double wall, cpu_sum = 0;
	for (int i = 1; i < argc; i += 2) {
		if (!strcmp(argv[i], "--mixed")) {
			mixed = 1;
			i--;
			continue;
		}
		if (i + 1 >= argc)
			return usage();
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--pairs"))
			pairs = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--depth"))
			depth = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--sizes"))
			nsizes = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--base"))
			base = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--paths"))
			npaths = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mix") &&
		         !strcmp(argv[i + 1], "fixed"))
			mixed = 1, mix_kind = MIX_FIXED;
		else if (!strcmp(argv[i], "--mix") &&
		         !strcmp(argv[i + 1], "wide"))
			mixed = 1, mix_kind = MIX_WIDE;
		else if (!strcmp(argv[i], "--mix") &&
		         !strcmp(argv[i + 1], "serve"))
			mixed = 1, mix_kind = MIX_SERVE;
		else if (!strcmp(argv[i], "--layers"))
			layers = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--ring"))
			ring = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--rate"))
			rate = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--api") &&
		         !strcmp(argv[i + 1], "cuda"))
			api = API_CUDA;
		else if (!strcmp(argv[i], "--api") &&
		         !strcmp(argv[i + 1], "malloc"))
			api = API_MALLOC;
		else
			return usage();
	}
	if (threads < 1 || threads > 256 || pairs < 1 || depth < 1 ||
	    nsizes < 1 || nsizes > 1024 || base < 1 || npaths < 1 || npaths > 256 ||
	    ring < 1 || ring > 1000000 || layers < 1 || layers > 1000 ||
	    rate < 0)
		return usage();
	mix_sizes();
	if (api == API_CUDA && open_driver()) {
		fprintf(stderr, "bench_alloc: no CUDA driver\n");
		return 1;
	}
	wall = now(CLOCK_MONOTONIC);
	for (int i = 0; i < threads; i++) {
		jobs[i].mix.rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (mixed && !(jobs[i].mix.ring = calloc((size_t)ring, 8))) {
			fprintf(stderr, "bench_alloc: out of memory\n");
			return 1;
		}
	}
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, &jobs[i])) {
			fprintf(stderr, "bench_alloc: cannot start a thread\n");
			return 1;
		}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		cpu_sum += jobs[i].cpu;
	}
	wall = now(CLOCK_MONOTONIC) - wall;
	printf("%d %d %ld %.1f %.1f\n", threads, depth, pairs,
	       wall / (double)pairs, cpu_sum / ((double)pairs * threads));
	return 0;
}
