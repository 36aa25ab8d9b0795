/*
 * sim_alloc.c — the device allocator models of sim_alloc.h, written from
 * the engines' documented behaviour (PyTorch's "CUDA semantics: memory
 * management" notes and its caching allocator's design; llama.cpp's
 * ggml-cuda pools), so that a profiler sees the driver calls a real engine
 * makes for the same tensors:
 *
 *   PyTorch caching: a request is rounded up to 512 bytes; <= 1 MiB comes
 *   from the small pool, carved from 2 MiB segments; larger from the large
 *   pool: a 20 MiB segment for requests under 10 MiB, else one segment of
 *   the request rounded up to 2 MiB. The smallest free cached block that
 *   fits is reused (no driver call) and split when the rest is worth
 *   keeping (>= 512 B small, > 1 MiB large). Freed blocks merge with free
 *   neighbours and stay cached. A refused cudaMalloc frees every cached
 *   segment that is wholly unused (release_cached_blocks) and is retried
 *   once; while a CUDA graph is being captured the cache is not released
 *   and the capture's allocations come from the graph's private pool.
 *   expandable_segments: per pool one address range of 9/8 of the card,
 *   pages of 2 MiB (small) or 20 MiB (large) created, mapped and given
 *   access as blocks need them, kept mapped when blocks are freed,
 *   unmapped and released when the cache is emptied.
 *   backend:cudaMallocAsync: one cuMemAllocAsync per tensor from the
 *   device's default pool, whose release threshold is UINT64_MAX (freed
 *   bytes stay in the pool, charged to the device, for later allocations
 *   that fit); a refusal is an OutOfMemoryError at once (no retry);
 *   empty_cache synchronizes and trims the pool to nothing.
 *   llama.cpp ggml_cuda_pool_vmm: a 32 GiB range reserved at first growth;
 *   each growth creates one handle of the missing bytes rounded up to the
 *   granularity, maps it at the pool's end, releases the handle (the
 *   mapping keeps it) and sets access; frees only move the top down.
 *   ggml_cuda_pool_leg: up to 256 cached buffers, exact or best fit,
 *   misses allocate 1.05x rounded to 256 B; frees go back to the list.
 *
 * The functions that make the driver calls carry the engines' own names
 * (C++ names, demangled by a profiler that has __cxa_demangle), so stacks
 * read as a real engine's would.
 *
 * Threads: one thread per allocator (see sim_alloc.h); the only shared
 * state is the annotate switch, set before any thread starts.
 */
#include "sim_alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_gpu.h"
#include "vramtrace.h"

#define MIB ((size_t)1 << 20)

/* PyTorch's caching allocator constants. */
#define K_MIN_BLOCK     ((size_t)512)
#define K_SMALL_SIZE    MIB
#define K_SMALL_BUFFER  (2 * MIB)
#define K_LARGE_BUFFER  (20 * MIB)
#define K_MIN_LARGE     (10 * MIB)
#define K_ROUND_LARGE   (2 * MIB)
/* llama.cpp's pools. */
#define VMM_POOL_MAX    ((size_t)1 << 35)
#define VMM_ALIGN       ((size_t)128)
#define LEG_BUFFERS     256

#define ROUND_UP(x, m) (((x) + (m) - 1) / (m) * (m))

/* The engines' names for the code that makes the driver calls; asm labels
 * give the C functions their C++ symbols. */
#define NAMED __attribute__((noinline, used, visibility("default")))

struct block {
	struct block *prev, *next; /* address order within the segment */
	struct segment *seg;
	uint64_t ptr;
	size_t size;
	int free;
};

struct segment {
	struct segment *next;
	struct block *head;
	uint64_t base;
	size_t size;
	int small, graph; /* which pool */
	/* expandable segments only */
	size_t page, npages;
	uint64_t *handles; /* 0: page not mapped */
};

struct live {
	uint64_t ptr;
	size_t size;
	struct block *b;
};

struct sim_alloc {
	int mode, dev, capturing;
	size_t total;
	struct segment *segs;     /* caching: every segment */
	struct segment *xseg[4];  /* expandable: [small + 2 * graph] */
	struct live *live;
	size_t nlive, caplive;
	struct sim_alloc_stats st;
	/* pool-vmm */
	uint64_t pool_addr;
	size_t pool_size, pool_used, gran;
	/* pool-leg */
	struct {
		uint64_t ptr;
		size_t size;
	} bufs[LEG_BUFFERS];
};

static int g_annotate; /* set once at start-up, before any thread */

void sim_alloc_annotate(int on)
{
	g_annotate = on;
}

void sim_alloc_phase_push(const char *phase)
{
	if (g_annotate)
		VRAMTRACE_PHASE_PUSH(phase);
}

void sim_alloc_phase_pop(void)
{
	if (g_annotate)
		VRAMTRACE_PHASE_POP();
}

static const char *const mode_names[] = {
        "plain", "caching", "expandable", "async", "pool-vmm", "pool-leg",
};

int sim_alloc_mode_of(const char *word)
{
	for (size_t i = 0; i < sizeof(mode_names) / sizeof(mode_names[0]); i++)
		if (!strcmp(word, mode_names[i]))
			return (int)i;
	return -1;
}

const char *sim_alloc_mode_name(int mode)
{
	return mode >= 0 && mode < (int)(sizeof(mode_names) /
	                                 sizeof(mode_names[0]))
	               ? mode_names[mode]
	               : "?";
}

/* ---- live tensors -------------------------------------------------------- */

static int live_add(struct sim_alloc *a, uint64_t ptr, size_t size,
                    struct block *b)
{
	if (a->nlive == a->caplive) {
		size_t n = a->caplive ? a->caplive * 2 : 64;
		struct live *l = realloc(a->live, n * sizeof(*l));
		if (!l)
			return -1;
		a->live = l;
		a->caplive = n;
	}
	a->live[a->nlive++] = (struct live){ptr, size, b};
	a->st.allocated += size;
	return 0;
}

/* Removes ptr's entry into *out; -1 when ptr is not live. */
static int live_take(struct sim_alloc *a, uint64_t ptr, struct live *out)
{
	for (size_t i = a->nlive; i-- > 0;)
		if (a->live[i].ptr == ptr) {
			*out = a->live[i];
			a->live[i] = a->live[--a->nlive];
			a->st.allocated -= out->size;
			return 0;
		}
	return -1;
}

/* ---- blocks (caching and expandable) ------------------------------------- */

static size_t round_size(size_t size)
{
	return size < K_MIN_BLOCK ? K_MIN_BLOCK : ROUND_UP(size, K_MIN_BLOCK);
}

static size_t allocation_size(size_t size)
{
	if (size <= K_SMALL_SIZE)
		return K_SMALL_BUFFER;
	if (size < K_MIN_LARGE)
		return K_LARGE_BUFFER;
	return ROUND_UP(size, K_ROUND_LARGE);
}

static struct block *new_block(struct segment *s, uint64_t ptr, size_t size)
{
	struct block *b = calloc(1, sizeof(*b));
	if (b) {
		b->seg = s;
		b->ptr = ptr;
		b->size = size;
		b->free = 1;
	}
	return b;
}

static int should_split(const struct sim_alloc *a, const struct block *b,
                        size_t size)
{
	size_t rest = b->size - size;
	if (b->seg->small || a->mode == SIM_ALLOC_EXPANDABLE)
		return rest >= K_MIN_BLOCK;
	return rest > K_SMALL_SIZE;
}

/* Takes size bytes from the start of free block b, leaving the rest free
 * when worth keeping. */
static int take_block(struct sim_alloc *a, struct block *b, size_t size)
{
	if (should_split(a, b, size)) {
		struct block *r =
		        new_block(b->seg, b->ptr + size, b->size - size);
		if (!r)
			return -1;
		r->prev = b;
		r->next = b->next;
		if (b->next)
			b->next->prev = r;
		b->next = r;
		b->size = size;
	}
	b->free = 0;
	return live_add(a, b->ptr, b->size, b);
}

/* Marks b free and merges it with free neighbours. */
static void free_block(struct block *b)
{
	struct block *n = b->next, *p = b->prev;

	b->free = 1;
	if (n && n->free) {
		b->size += n->size;
		b->next = n->next;
		if (n->next)
			n->next->prev = b;
		free(n);
	}
	if (p && p->free) {
		p->size += b->size;
		p->next = b->next;
		if (b->next)
			b->next->prev = p;
		free(b);
	}
}

/* ---- PyTorch caching allocator ------------------------------------------- */

/* The smallest free cached block of the pool that fits (no driver call). */
static struct block *get_free_block(struct sim_alloc *a, size_t size,
                                    int small)
{
	struct block *best = NULL;

	for (struct segment *s = a->segs; s; s = s->next) {
		if (s->small != small || s->graph != a->capturing)
			continue;
		for (struct block *b = s->head; b; b = b->next)
			if (b->free && b->size >= size &&
			    (!best || b->size < best->size))
				best = b;
	}
	return best;
}

int dca_alloc_block(struct sim_alloc *a, size_t seg_size, int small,
                    struct block **out)
        __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCaching"
                "Allocator11alloc_blockERNS2_11AllocParamsEb");
NAMED int dca_alloc_block(struct sim_alloc *a, size_t seg_size, int small,
                          struct block **out)
{
	struct segment *s;
	uint64_t p;
	int rc = sim_gpu_malloc(&p, seg_size);

	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->head = new_block(s, p, seg_size))) {
		free(s);
		sim_gpu_free(p);
		return -1;
	}
	s->base = p;
	s->size = seg_size;
	s->small = small;
	s->graph = a->capturing;
	s->next = a->segs;
	a->segs = s;
	a->st.reserved += seg_size;
	*out = s->head;
	return 0;
}

static void es_release_cached(struct sim_alloc *a);

int dca_release_cached_blocks(struct sim_alloc *a)
        __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCaching"
                "Allocator21release_cached_blocksEv");
NAMED int dca_release_cached_blocks(struct sim_alloc *a)
{
	struct segment **pp = &a->segs;

	while (*pp) {
		struct segment *s = *pp;
		if (!s->graph && s->head->free && !s->head->next) {
			*pp = s->next;
			sim_gpu_free(s->base);
			a->st.reserved -= s->size;
			free(s->head);
			free(s);
		} else {
			pp = &s->next;
		}
	}
	es_release_cached(a);
	return 1;
}

/* ---- PyTorch expandable segments ------------------------------------------ */

static struct segment *xseg_of(struct sim_alloc *a, int small)
{
	struct segment **slot = &a->xseg[small + 2 * a->capturing];
	struct segment *s;
	size_t page = small ? K_SMALL_BUFFER : K_LARGE_BUFFER;
	/* Address space for 9/8 of the card, as PyTorch reserves. */
	size_t npages = (a->total + a->total / 8 + page - 1) / page;

	if (*slot)
		return *slot;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->page = page;
	s->npages = npages ? npages : 1;
	s->size = s->npages * page;
	s->small = small;
	s->graph = a->capturing;
	s->handles = calloc(s->npages, sizeof(*s->handles));
	if (!s->handles || sim_gpu_va_reserve(&s->base, s->size) ||
	    !(s->head = new_block(s, s->base, s->size))) {
		free(s->handles);
		free(s);
		return NULL;
	}
	*slot = s;
	return s;
}

static void page_span(const struct segment *s, uint64_t ptr, size_t size,
                      size_t *first, size_t *end)
{
	*first = (ptr - s->base) / s->page;
	*end = (ptr - s->base + size + s->page - 1) / s->page;
}

static size_t unmapped_pages(const struct segment *s, uint64_t ptr,
                             size_t size)
{
	size_t first, end, n = 0;

	page_span(s, ptr, size, &first, &end);
	for (size_t i = first; i < end; i++)
		n += !s->handles[i];
	return n;
}

int es_map(struct sim_alloc *a, struct segment *s, size_t first, size_t end)
        __asm__("_ZN3c104cuda20CUDACachingAllocator6Native17Expandable"
                "Segment3mapENS2_12SegmentRangeE");
/* Creates every missing page of [first, end) before mapping any — a
 * refusal releases what this call created and leaves the segment as it
 * was — then maps them and gives each new run of pages access. */
NAMED int es_map(struct sim_alloc *a, struct segment *s, size_t first,
                 size_t end)
{
	uint64_t *fresh = calloc(end - first, sizeof(*fresh));
	int rc = fresh ? 0 : -1;
	size_t i, run;

	for (i = first; i < end && !rc; i++)
		if (!s->handles[i])
			rc = sim_gpu_create(&fresh[i - first], s->page, a->dev);
	if (rc) {
		for (i = first; fresh && i < end; i++)
			if (fresh[i - first])
				sim_gpu_release(fresh[i - first]);
		free(fresh);
		return rc;
	}
	for (i = first; i < end; i++)
		if (fresh[i - first]) {
			sim_gpu_map(s->base + i * s->page, s->page,
			            fresh[i - first]);
			s->handles[i] = fresh[i - first];
			a->st.reserved += s->page;
		}
	for (i = first; i < end; i = run + 1) {
		if (!fresh[i - first]) {
			run = i;
			continue;
		}
		for (run = i; run + 1 < end && fresh[run + 1 - first]; run++)
			;
		sim_gpu_set_access(s->base + i * s->page,
		                   (run + 1 - i) * s->page, a->dev);
	}
	free(fresh);
	return 0;
}

int es_unmap(struct sim_alloc *a, struct segment *s, size_t first,
             size_t end)
        __asm__("_ZN3c104cuda20CUDACachingAllocator6Native17Expandable"
                "Segment5unmapENS2_12SegmentRangeE");
NAMED int es_unmap(struct sim_alloc *a, struct segment *s, size_t first,
                   size_t end)
{
	for (size_t i = first; i < end; i++)
		if (s->handles[i]) {
			sim_gpu_unmap(s->base + i * s->page, s->page);
			sim_gpu_release(s->handles[i]);
			s->handles[i] = 0;
			a->st.reserved -= s->page;
		}
	return 0;
}

/* Unmaps every mapped page no live block touches (the expandable form of
 * release_cached_blocks); graph pools keep theirs. */
static void es_release_cached(struct sim_alloc *a)
{
	for (int k = 0; k < 2; k++) {
		struct segment *s = a->xseg[k];
		unsigned char *used;
		if (!s || !(used = calloc(s->npages, 1)))
			continue;
		for (struct block *b = s->head; b; b = b->next) {
			size_t first, end;
			if (b->free)
				continue;
			page_span(s, b->ptr, b->size, &first, &end);
			memset(used + first, 1, end - first);
		}
		for (size_t i = 0; i < s->npages; i++)
			if (s->handles[i] && !used[i])
				es_unmap(a, s, i, i + 1);
		free(used);
	}
}

/* The free block that fits and needs the fewest new pages (the smallest
 * such block, then the lowest address), so mapped cache is used first. */
static struct block *es_candidate(struct segment *s, size_t size)
{
	struct block *best = NULL;
	size_t best_new = 0;

	for (struct block *b = s->head; b; b = b->next) {
		size_t n;
		if (!b->free || b->size < size)
			continue;
		n = unmapped_pages(s, b->ptr, size);
		if (!best || n < best_new ||
		    (n == best_new && b->size < best->size)) {
			best = b;
			best_new = n;
		}
	}
	return best;
}

static int es_try(struct sim_alloc *a, struct segment *s, size_t size,
                  struct block **out)
{
	struct block *b = es_candidate(s, size);
	size_t first, end;
	int rc;

	if (!b)
		return SIM_GPU_OOM; /* the reserved range itself is full */
	page_span(s, b->ptr, size, &first, &end);
	rc = es_map(a, s, first, end);
	if (!rc)
		*out = b;
	return rc;
}

int dca_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
        __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCaching"
                "Allocator6mallocEamP11CUstream_st");
/* One way to get a new block for a request: a new segment (caching) or
 * more pages of the expandable segment. */
struct want {
	size_t size;
	int small;
	struct segment *xs; /* expandable only */
	struct block *b;
};

static int new_segment(struct sim_alloc *a, struct want *w)
{
	return dca_alloc_block(a, allocation_size(w->size), w->small, &w->b);
}

static int more_pages(struct sim_alloc *a, struct want *w)
{
	return es_try(a, w->xs, w->size, &w->b);
}

/* Tries; on a refusal frees every wholly unused cached segment (or page)
 * and tries once more. PyTorch skips that while a graph is captured. */
static int try_twice(struct sim_alloc *a,
                     int (*attempt)(struct sim_alloc *, struct want *),
                     struct want *w)
{
	int rc = attempt(a, w);

	if (rc == SIM_GPU_OOM && !a->capturing &&
	    dca_release_cached_blocks(a)) {
		rc = attempt(a, w);
		if (!rc)
			a->st.retries++;
	}
	return rc;
}

NAMED int dca_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
{
	struct want w = {round_size(bytes), 0, NULL, NULL};
	int rc = 0;

	w.small = w.size <= K_SMALL_SIZE;
	if (a->mode == SIM_ALLOC_EXPANDABLE) {
		/* Mapped cache first, then new pages (es_candidate). */
		if (!(w.xs = xseg_of(a, w.small)))
			return -1;
		rc = try_twice(a, more_pages, &w);
	} else if (!(w.b = get_free_block(a, w.size, w.small))) {
		rc = try_twice(a, new_segment, &w);
	}
	if (rc)
		return rc;
	if (take_block(a, w.b, w.size))
		return -1;
	*ptr = w.b->ptr;
	return 0;
}

/* ---- PyTorch backend:cudaMallocAsync --------------------------------------- */

int cma_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
        __asm__("_ZN3c104cuda20CUDACachingAllocator15CudaMallocAsync11"
                "mallocAsyncEPPvamP11CUstream_st");
NAMED int cma_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
{
	int rc = sim_gpu_malloc_async(ptr, bytes);

	if (rc)
		return rc;
	a->st.reserved += bytes;
	return live_add(a, *ptr, bytes, NULL);
}

void cma_free(struct sim_alloc *a, uint64_t ptr, size_t bytes)
        __asm__("_ZN3c104cuda20CUDACachingAllocator15CudaMallocAsync9"
                "freeAsyncEPv");
NAMED void cma_free(struct sim_alloc *a, uint64_t ptr, size_t bytes)
{
	sim_gpu_free_async(ptr);
	a->st.reserved -= bytes;
}

/* ---- llama.cpp pools ------------------------------------------------------- */

int vmm_pool_alloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
        __asm__("_ZN18ggml_cuda_pool_vmm5allocEmPm");
NAMED int vmm_pool_alloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
{
	size_t size = ROUND_UP(bytes, VMM_ALIGN);
	size_t avail = a->pool_size - a->pool_used;

	if (size > avail) {
		size_t grow = ROUND_UP(size - avail, a->gran);
		uint64_t h;
		int rc;
		if (a->pool_size + grow > VMM_POOL_MAX)
			return SIM_GPU_OOM; /* GGML_ASSERT in llama.cpp */
		rc = sim_gpu_create(&h, grow, a->dev);
		if (rc)
			return rc;
		if (!a->pool_addr &&
		    (rc = sim_gpu_va_reserve(&a->pool_addr, VMM_POOL_MAX))) {
			sim_gpu_release(h);
			return rc;
		}
		sim_gpu_map(a->pool_addr + a->pool_size, grow, h);
		/* The mapping keeps the memory; the handle is not needed. */
		sim_gpu_release(h);
		sim_gpu_set_access(a->pool_addr + a->pool_size, grow, a->dev);
		a->pool_size += grow;
		a->st.reserved += grow;
	}
	*ptr = a->pool_addr + a->pool_used;
	a->pool_used += size;
	return live_add(a, *ptr, size, NULL);
}

void vmm_pool_free(struct sim_alloc *a, uint64_t ptr, size_t size)
        __asm__("_ZN18ggml_cuda_pool_vmm4freeEPvm");
/* Frees must come in reverse order (llama.cpp asserts it): the top moves
 * down, the physical memory stays mapped. */
NAMED void vmm_pool_free(struct sim_alloc *a, uint64_t ptr, size_t size)
{
	a->pool_used -= size;
	if (ptr != a->pool_addr + a->pool_used)
		fprintf(stderr, "sim_alloc: pool-vmm: frees out of order\n");
}

int leg_pool_alloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
        __asm__("_ZN18ggml_cuda_pool_leg5allocEmPm");
NAMED int leg_pool_alloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
{
	int best = -1;
	size_t look;
	int rc;

	for (int i = 0; i < LEG_BUFFERS; i++)
		if (a->bufs[i].ptr && a->bufs[i].size >= bytes &&
		    (best < 0 || a->bufs[i].size < a->bufs[best].size))
			best = i;
	if (best >= 0) {
		*ptr = a->bufs[best].ptr;
		look = a->bufs[best].size;
		a->bufs[best].ptr = 0;
		return live_add(a, *ptr, look, NULL);
	}
	look = ROUND_UP((size_t)(1.05 * (double)bytes), 256);
	rc = sim_gpu_malloc(ptr, look);
	if (rc)
		return rc;
	a->st.reserved += look;
	return live_add(a, *ptr, look, NULL);
}

void leg_pool_free(struct sim_alloc *a, uint64_t ptr, size_t size)
        __asm__("_ZN18ggml_cuda_pool_leg4freeEPvm");
NAMED void leg_pool_free(struct sim_alloc *a, uint64_t ptr, size_t size)
{
	for (int i = 0; i < LEG_BUFFERS; i++)
		if (!a->bufs[i].ptr) {
			a->bufs[i].ptr = ptr;
			a->bufs[i].size = size;
			return;
		}
	/* The list is full: this buffer goes back to the driver. */
	sim_gpu_free(ptr);
	a->st.reserved -= size;
}

/* ---- the allocator -------------------------------------------------------- */

struct sim_alloc *sim_alloc_new(int mode, int dev)
{
	struct sim_alloc *a;

	if ((mode == SIM_ALLOC_ASYNC && !sim_gpu_has_async()) ||
	    ((mode == SIM_ALLOC_EXPANDABLE || mode == SIM_ALLOC_POOL_VMM) &&
	     !sim_gpu_has_vmm())) {
		fprintf(stderr,
		        "sim_alloc: the %s runtime lacks the calls --allocator "
		        "%s needs\n",
		        sim_gpu_name(), sim_alloc_mode_name(mode));
		return NULL;
	}
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->mode = mode;
	a->dev = dev;
	a->total = sim_gpu_total(dev);
	if (mode == SIM_ALLOC_POOL_VMM &&
	    (sim_gpu_granularity(&a->gran, dev) || !a->gran)) {
		free(a);
		return NULL;
	}
	/* PyTorch's lazy_init_device: the pool keeps what is freed. */
	if (mode == SIM_ALLOC_ASYNC)
		sim_gpu_pool_keep(dev);
	return a;
}

int sim_alloc_malloc(struct sim_alloc *a, size_t bytes, uint64_t *ptr)
{
	int rc;

	*ptr = 0;
	switch (a->mode) {
	case SIM_ALLOC_CACHING:
	case SIM_ALLOC_EXPANDABLE:
		return dca_malloc(a, bytes, ptr);
	case SIM_ALLOC_ASYNC:
		return cma_malloc(a, bytes, ptr);
	case SIM_ALLOC_POOL_VMM:
		return vmm_pool_alloc(a, bytes, ptr);
	case SIM_ALLOC_POOL_LEG:
		return leg_pool_alloc(a, bytes, ptr);
	default:
		rc = sim_gpu_malloc(ptr, bytes);
		if (!rc) {
			a->st.reserved += bytes;
			rc = live_add(a, *ptr, bytes, NULL);
		}
		return rc;
	}
}

void sim_alloc_free(struct sim_alloc *a, uint64_t ptr)
{
	struct live l;

	if (live_take(a, ptr, &l))
		return;
	switch (a->mode) {
	case SIM_ALLOC_CACHING:
	case SIM_ALLOC_EXPANDABLE:
		free_block(l.b);
		break;
	case SIM_ALLOC_ASYNC:
		cma_free(a, ptr, l.size);
		break;
	case SIM_ALLOC_POOL_VMM:
		vmm_pool_free(a, ptr, l.size);
		break;
	case SIM_ALLOC_POOL_LEG:
		leg_pool_free(a, ptr, l.size);
		break;
	default:
		sim_gpu_free(ptr);
		a->st.reserved -= l.size;
		break;
	}
}

void sim_alloc_empty_cache(struct sim_alloc *a)
{
	if (a->mode == SIM_ALLOC_CACHING || a->mode == SIM_ALLOC_EXPANDABLE)
		dca_release_cached_blocks(a);
	else if (a->mode == SIM_ALLOC_ASYNC)
		sim_gpu_pool_trim(a->dev);
}

void sim_alloc_capture(struct sim_alloc *a, int on)
{
	a->capturing = on != 0;
}

void sim_alloc_stats(const struct sim_alloc *a, struct sim_alloc_stats *st)
{
	*st = a->st;
}

size_t sim_alloc_oom_text(const struct sim_alloc *a, size_t bytes, char *buf,
                          size_t n)
{
	char req[32], tot[32], fre[32], use[32], alc[32], cac[32];
	size_t free_b, total_b;
	const char *rt = sim_gpu_name();
	int len = 0;

	if (!n)
		return 0;
	buf[0] = '\0';
	sim_gpu_mem_info(&free_b, &total_b);
	sim_gpu_size(req, sizeof(req), (double)bytes);
	sim_gpu_size(tot, sizeof(tot), (double)total_b);
	sim_gpu_size(fre, sizeof(fre), (double)free_b);
	sim_gpu_size(use, sizeof(use), (double)a->st.reserved);
	sim_gpu_size(alc, sizeof(alc), (double)a->st.allocated);
	sim_gpu_size(cac, sizeof(cac),
	             (double)(a->st.reserved - a->st.allocated));
	switch (a->mode) {
	case SIM_ALLOC_PLAIN:
	case SIM_ALLOC_CACHING:
	case SIM_ALLOC_EXPANDABLE:
		/* Without caching (plain) nothing is reserved but unallocated:
		 * PyTorch says the same with PYTORCH_NO_CUDA_MEMORY_CACHING. */
		len = snprintf(
		        buf, n,
		        "torch.OutOfMemoryError: %s out of memory. Tried to "
		        "allocate %s. GPU %d has a total capacity of %s of "
		        "which %s is free. Including non-PyTorch memory, this "
		        "process has %s memory in use. Of the allocated memory "
		        "%s is allocated by PyTorch, and %s is reserved by "
		        "PyTorch but unallocated. If reserved but unallocated "
		        "memory is large try setting "
		        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
		        "avoid fragmentation.  See documentation for Memory "
		        "Management  (https://pytorch.org/docs/stable/notes/"
		        "cuda.html#environment-variables)\n",
		        rt, req, a->dev, tot, fre, use, alc, cac);
		break;
	case SIM_ALLOC_ASYNC:
		len = snprintf(buf, n,
		               "torch.OutOfMemoryError: Allocation on device %d "
		               "would exceed allowed memory. (out of memory)\n"
		               "Currently allocated     : %s\n"
		               "Requested               : %s\n"
		               "Device limit            : %s\n"
		               "Free (according to %s): %s\n",
		               a->dev, alc, req, tot, rt, fre);
		break;
	case SIM_ALLOC_POOL_VMM:
	case SIM_ALLOC_POOL_LEG:
		len = snprintf(
		        buf, n,
		        "%s error: out of memory\n"
		        "  current device: %d, in function alloc at "
		        "ggml/src/ggml-cuda/ggml-cuda.cu\n  %s\n",
		        sim_gpu_ggml_name(), a->dev,
		        a->mode == SIM_ALLOC_POOL_VMM
		                ? "cuMemCreate(&handle, reserve_size, &prop, 0)"
		                : "ggml_cuda_device_malloc(&ptr, "
		                  "look_ahead_size, device)");
		break;
	default:
		break;
	}
	if (len < 0)
		len = 0;
	return (size_t)len < n ? (size_t)len : n - 1;
}
