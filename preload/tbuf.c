/*
 * tbuf.c — per-thread event buffers and the pool of chunks they fill.
 *
 * Each thread that records owns a struct vrt_tbuf (found through an
 * initial-exec TLS pointer) holding its current chunk. vrt_tbuf_event()
 * encodes one event straight into that chunk under the tbuf's spinlock,
 * which only the writer ever contends for (when it takes a partly filled
 * chunk every flush interval). So the hot path is: two plain stores for
 * the lock (an uncontended atomic exchange without membarrier), a clock
 * read and some varint stores — no malloc, no stdio, no global lock. The
 * thread's tbuf also holds live.c's pending allocation (vrt_tbuf_live).
 *
 * Folding (trace format 2, VRT_REC_REPEAT): when a thread's FREE names the
 * address of its immediately previous event in the chunk, an ALLOC (not
 * part of a SNAPSHOT), and the pair equals the chunk's previous pair, the
 * ALLOC's bytes (already encoded, at tent_off) are dropped and the pair is
 * counted instead. One REPEAT record is written for the run before the
 * thread's next event that does not fold (an ALLOC that may still fold
 * waits behind it, and the REPEAT is slid in before that ALLOC's bytes
 * when it does not), and before the chunk leaves the thread: when it is
 * full, at thread exit, and in the writer's sweep (which holds the lock).
 * The event counter counts every folded event.
 *
 * Clock: each event is stamped with vrt_clock_now() (clock.c: the TSC
 * where it is invariant, else clock_gettime); within a thread stamps never
 * go backwards (the previous stamp is a floor).
 *
 * Locks and ownership:
 *   tb->lock   spinlock: tb->cur, tb->last_ts and the folding state.
 *              Owner thread per event; writer in vrt_tbuf_collect.
 *              Where the kernel has membarrier(PRIVATE_EXPEDITED) the
 *              owner does not take it per event: it sets tb->busy (a
 *              plain store), and goes on if it then sees the lock free,
 *              else clears busy and takes the lock. The writer takes every
 *              tbuf's lock, then calls membarrier (which makes every
 *              owner's earlier stores visible, or makes it see the lock
 *              taken), then waits for each busy to clear before it reads
 *              the tbuf. So for the writer the lock still means the owner
 *              is out of its critical section, and the ordering promise
 *              below holds as it did, at two plain stores per event.
 *   mu         mutex: the full-chunk queue, the free pool, pool counters,
 *              the writer's wake flag. Taken once per chunk. Order:
 *              tb->lock may be held when taking mu, never the reverse.
 *   tbuf_list  append-only list of every tbuf ever made; nodes are never
 *              freed, so it is walked without a lock. A tbuf of an exited
 *              thread (in_use 0) is claimed again by a new thread.
 *
 * Ordering promise used by the trace's WATERMARK: a thread takes its
 * timestamp while holding tb->lock, and a full chunk is queued before
 * tb->lock is released; so once the writer has swept every tbuf and then
 * emptied the queue, it holds every event stamped before the sweep began
 * (folded pairs included: the sweep writes a pending REPEAT first). With
 * the TSC clock the writer lowers its watermark by vrt_clock_slack() to
 * cover a TSC read the CPU ran ahead of the lock.
 *
 * Chunk order: a chunk's first stamp is never below its thread's previous
 * one, and vrt_tbuf_collect hands chunks over sorted by (thread id, first
 * stamp), so the writer's BATCH encoding (batch.c), whose per-thread state
 * lasts across chunks, sees each thread's chunks in the order of their
 * events, as a reader will.
 *
 * Fork: vrt_tbuf_before_fork takes mu (and create_mu) so the child never
 * inherits them held; the child drops all buffered events (the parent's
 * trace has them) and resets every spinlock and busy flag, since the
 * threads that may have held one do not exist in the child.
 */
#include "clock.h"
#include "core.h"

#include <vramtrace/trace_format.h>

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VRT_EV_MAX    (192 + VRT_EV_BLOB_MAX)    /* room one record may take */
/* a whole REPEAT record: header, 4 fields, up to 8 templates of 9 */
#define REPEAT_MAX (2 + (4 + 9 * VRT_REPEAT_MAX_PERIOD) * VRT_UVARINT_MAX)
#define TBUF_BLOCK    64                         /* tbufs made per mmap */
#define POOL_WAIT_MS  1000

/* The fields of an allocate-then-free pair that a REPEAT repeats. */
struct fold_pair {
	uint64_t size, aux, free_aux, phase;
	int32_t device, free_device;
	uint32_t stack;
	uint8_t alloc_api, free_api;
};

#define HIST (2 * VRT_REPEAT_MAX_PERIOD) /* pairs remembered per thread */

/* The reader's registers for compact records (trace_format.h): the last
 * address and the alloc and free templates. */
struct tmpl {
	uint64_t aux, phase;
	int32_t device;
	uint32_t stack; /* the free template's only */
	uint8_t api, have;
};

struct compact {
	uint64_t addr;
	struct tmpl a, f;
};
struct vrt_tbuf {
	_Atomic uint32_t calling; /* vrt_tbuf_call: a hooked call is on */
	_Atomic int lock;
	_Atomic int busy; /* owner inside its fast path (see own_lock) */
	_Atomic int in_use;
	pid_t tid;
	uint64_t last_ts;
	struct vrt_chunk *cur;
	_Atomic uint64_t events; /* written by the owner only */
	struct vrt_tbuf *next;
	/* Folding, under lock; reset when a chunk starts. tent: the chunk's
	 * last record is an ALLOC (at tent_off) that a FREE may still fold;
	 * rep_count > 0: that many pairs folded, their REPEAT not written
	 * yet (it belongs before the tentative ALLOC, if any). Compared field by field, never as whole
	 * structs built on the stack (a partial store then a wide load
	 * stalls the CPU). */
	uint8_t tent, in_snapshot;
	uint32_t tent_off;
	uint64_t tent_addr, tent_ts, tent_prev_ts;
	uint64_t rep_count, rep_prev_ts, rep_first_ts, rep_end_ts;
	struct fold_pair tent_pair;
	/* The chunk's last pairs (written or folded), newest at
	 * hist[(hpos - 1) % 8]; a run folds pairs that repeat the cycle of
	 * the rep_period pairs before its first one (rep_tmpl, in order). */
	struct fold_pair hist[HIST];
	uint8_t nhist, hpos, rep_period;
	struct fold_pair rep_tmpl[VRT_REPEAT_MAX_PERIOD];
	/* Compact encoding state (trace_format.h: ALLOC_C, FREE_C), as a
	 * reader will have it after the chunk's last record; cs_tent: as it
	 * was before the tentative ALLOC (restored when that ALLOC folds). */
	struct compact cs, cs_tent;
	uint64_t chunk_seq; /* chunks installed so far (vrt_chunk.seq) */
	/* Owner-written per-thread area of live.c (pending allocation). */
	_Alignas(64) uint8_t live[VRT_TBUF_LIVE];
	/* Owner-only scratch for other modules (stack.c's cache of recent
	 * stacks); survives reuse by a later thread, which is harmless for
	 * a cache of global ids. */
	_Alignas(64) uint8_t scratch[VRT_TBUF_SCRATCH];
};

static struct vrt_tbuf *_Atomic tbuf_list;
static VRT_TLS struct vrt_tbuf *my_tb;
VRT_TLS _Atomic uint32_t *vrt_tbuf_calling;

static pthread_mutex_t create_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_cv;   /* a chunk came back to the pool */
static pthread_cond_t writer_cv; /* the writer has work */
static int writer_kicked;
static struct vrt_chunk *pool_free;
static struct vrt_chunk *q_head, *q_tail;
static size_t pool_made, pool_max;
static _Atomic uint64_t dropped;

void (*vrt_tbuf_on_claim)(void);
static uint64_t exited_events; /* events of tbufs handed back; under mu */
static int fold_on = 1;

void vrt_tbuf_set_fold(int on)
{
	fold_on = on != 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void spin_lock(_Atomic int *l)
{
	for (unsigned n = 0;; n++) {
		if (!atomic_exchange_explicit(l, 1, memory_order_acquire))
			return;
		while (atomic_load_explicit(l, memory_order_relaxed)) {
			if (n++ > 200)
				sched_yield();
			else
				cpu_relax();
		}
	}
}

static void spin_unlock(_Atomic int *l)
{
	atomic_store_explicit(l, 0, memory_order_release);
}

static _Atomic int asym_on; /* membarrier registered: owner fast path */

static long membarrier(int cmd)
{
#ifdef SYS_membarrier
	return syscall(SYS_membarrier, cmd, 0, 0);
#else
	(void)cmd;
	errno = ENOSYS;
	return -1;
#endif
}

/* Registers for membarrier(PRIVATE_EXPEDITED); 1 when owners may take the
 * fast path. From init and in a fork child (one thread there). */
static int asym_setup(void)
{
	long q = membarrier(MEMBARRIER_CMD_QUERY);
	return q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	       membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
}

/* The owner's side of tb->lock: 1 on the fast path (busy set and the lock
 * seen free), 0 holding the lock itself. The compiler must not sink the
 * busy store below the lock load; the CPU may, which the writer's
 * membarrier settles. */
static inline int own_lock(struct vrt_tbuf *t)
{
	if (VRT_LIKELY(atomic_load_explicit(&asym_on, memory_order_relaxed))) {
		atomic_store_explicit(&t->busy, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		if (VRT_LIKELY(!atomic_load_explicit(&t->lock,
		                                     memory_order_acquire)))
			return 1;
		atomic_store_explicit(&t->busy, 0, memory_order_release);
	}
	spin_lock(&t->lock);
	return 0;
}

static inline void own_unlock(struct vrt_tbuf *t, int fast)
{
	if (fast)
		atomic_store_explicit(&t->busy, 0, memory_order_release);
	else
		spin_unlock(&t->lock);
}

int vrt_tbuf_init(size_t max_bytes)
{
	atomic_store(&asym_on, asym_setup());
	vrt_clock_init();
	vrt_clock_cond_init(&pool_cv);
	vrt_clock_cond_init(&writer_cv);
	pool_max = max_bytes / VRT_CHUNK_BYTES;
	if (pool_max < 4)
		pool_max = 4;
	return 0;
}

/* A fresh chunk, or NULL after POOL_WAIT_MS when the writer cannot keep up
 * (or has stopped). Called with no tbuf lock held. */
static struct vrt_chunk *pool_get(void)
{
	struct timespec deadline;
	int have_deadline = 0;
	pthread_mutex_lock(&mu);
	for (;;) {
		if (pool_free) {
			struct vrt_chunk *c = pool_free;
			pool_free = c->next;
			pthread_mutex_unlock(&mu);
			c->next = NULL;
			c->len = 0;
			return c;
		}
		if (pool_made < pool_max) {
			pool_made++;
			pthread_mutex_unlock(&mu);
			struct vrt_chunk *c = mmap(
			        NULL, VRT_CHUNK_BYTES, PROT_READ | PROT_WRITE,
			        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (c == MAP_FAILED) {
				pthread_mutex_lock(&mu);
				pool_made--;
				pthread_mutex_unlock(&mu);
				return NULL;
			}
			c->next = NULL;
			c->len = 0;
			c->cap = VRT_CHUNK_BYTES - sizeof(struct vrt_chunk);
			return c;
		}
		if (!vrt_capture_on())
			break;
		if (!have_deadline) {
			vrt_clock_deadline(&deadline, POOL_WAIT_MS);
			have_deadline = 1;
		}
		writer_kicked = 1;
		pthread_cond_signal(&writer_cv);
		/* A cancellation acted on inside this wait would end the
		 * program's thread holding mu. */
		int cancel = vrt_capture_cancel_off();
		int r = pthread_cond_timedwait(&pool_cv, &mu, &deadline);
		vrt_capture_cancel_restore(cancel);
		if (r == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* Queues a chunk for the writer; called with mu NOT held. */
static void queue_push(struct vrt_chunk *c)
{
	c->next = NULL;
	pthread_mutex_lock(&mu);
	if (q_tail)
		q_tail->next = c;
	else
		q_head = c;
	q_tail = c;
	writer_kicked = 1;
	pthread_cond_signal(&writer_cv);
	pthread_mutex_unlock(&mu);
}

static void list_push(struct vrt_tbuf *t)
{
	struct vrt_tbuf *head = atomic_load(&tbuf_list);
	do {
		t->next = head;
	} while (!atomic_compare_exchange_weak(&tbuf_list, &head, t));
}

static struct vrt_tbuf *tbuf_claim(void)
{
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next) {
		int free_ = 0;
		if (atomic_load_explicit(&t->in_use, memory_order_relaxed) ==
		            0 &&
		    atomic_compare_exchange_strong(&t->in_use, &free_, 1))
			return t;
	}
	pthread_mutex_lock(&create_mu);
	struct vrt_tbuf *block = mmap(
	        NULL, TBUF_BLOCK * sizeof(struct vrt_tbuf),
	        PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (block == MAP_FAILED) {
		pthread_mutex_unlock(&create_mu);
		return NULL;
	}
	atomic_store(&block[0].in_use, 1);
	for (int i = TBUF_BLOCK - 1; i >= 0; i--)
		list_push(&block[i]);
	pthread_mutex_unlock(&create_mu);
	return &block[0];
}

static struct vrt_tbuf *tbuf_self(void)
{
	struct vrt_tbuf *t = my_tb;
	if (VRT_LIKELY(t != NULL))
		return t;
	t = tbuf_claim();
	if (!t)
		return NULL;
	t->tid = (pid_t)syscall(SYS_gettid);
	/* Under the lock: the writer may be sweeping this tbuf right now
	 * (a recycled one stays on tbuf_list), and it reads cur only with
	 * the lock held. */
	spin_lock(&t->lock);
	t->cur = NULL;
	t->last_ts = 0;
	t->tent = t->nhist = t->in_snapshot = 0;
	t->rep_count = 0;
	spin_unlock(&t->lock);
	my_tb = t;
	atomic_store(&t->calling, 0);
	vrt_tbuf_calling = &t->calling;
	if (vrt_tbuf_on_claim)
		vrt_tbuf_on_claim();
	return t;
}

static size_t put_u(uint8_t *p, uint64_t v)
{
	return vrt_put_uvarint(p, v);
}

static size_t put_s(uint8_t *p, int64_t v)
{
	return vrt_put_svarint(p, v);
}

static size_t put_text(uint8_t *p, const char *s, size_t given)
{
	size_t len = given ? (given < VRT_EV_TEXT_MAX ? given : VRT_EV_TEXT_MAX)
	             : s  ? strnlen(s, VRT_EV_TEXT_MAX)
	                  : 0;
	size_t n = put_u(p, len);
	if (len)
		memcpy(p + n, s, len);
	return n + len;
}

/* Records are encoded in place: type at p[0], the payload from p[2], and
 * the length put at p[1] afterwards (moving the payload along in the rare
 * case its length needs more than one byte). Returns the record's size. */
static size_t close_record(uint8_t *p, unsigned type, size_t len)
{
	p[0] = (uint8_t)type;
	if (VRT_LIKELY(len < 0x80)) {
		p[1] = (uint8_t)len;
		return 2 + len;
	}
	uint8_t hdr[VRT_UVARINT_MAX];
	size_t k = put_u(hdr, len);
	memmove(p + 1 + k, p + 2, len);
	memcpy(p + 1, hdr, k);
	return 1 + k + len;
}

/* An event's payload after its dts. */
static size_t encode_body(uint8_t *p, const struct vrt_ev *ev)
{
	size_t n = 0;
	switch (ev->rec) {
	case VRT_REC_MEMINFO:
		n += put_s(p + n, ev->device);
		n += put_u(p + n, ev->free_bytes);
		n += put_u(p + n, ev->total_bytes);
		n += put_u(p + n, ev->stack);
		n += put_u(p + n, ev->api);
		if (ev->past)
			n += put_u(p + n, ev->size); /* held */
		return n;
	case VRT_REC_MARK:
		return n + put_text(p + n, ev->text, ev->text_len);
	case VRT_REC_NET:
		n += put_u(p + n, ev->op);
		n += put_u(p + n, ev->addr);
		n += put_u(p + n, ev->aux);
		/* The appended fields, as far as one is not 0. */
		if (ev->stream || ev->nflags || ev->val || ev->text) {
			n += put_u(p + n, ev->kind);
			n += put_u(p + n, ev->stream);
			n += put_u(p + n, ev->nflags);
			n += put_u(p + n, ev->val);
			if (ev->text)
				n += put_text(p + n, ev->text, ev->text_len);
		} else if (ev->kind) {
			n += put_u(p + n, ev->kind);
		}
		return n;
	case VRT_REC_PROC:
		n += put_u(p + n, ev->op);
		n += put_u(p + n, ev->addr);
		return n + put_text(p + n, ev->text, ev->text_len);
	case VRT_REC_SAMPLE:
		memcpy(p + n, ev->blob, ev->blob_len);
		return n + ev->blob_len;
	case VRT_REC_SNAPSHOT:
		return n + put_u(p + n, ev->op);
	case VRT_REC_REQUEST:
		n += put_u(p + n, ev->op);
		n += put_u(p + n, ev->addr);
		return n;
	}
	n += put_u(p + n, ev->api);
	n += put_s(p + n, ev->device);
	n += put_u(p + n, ev->addr);
	switch (ev->rec) {
	case VRT_REC_ALLOC:
		n += put_u(p + n, ev->size);
		n += put_u(p + n, ev->aux);
		break;
	case VRT_REC_FREE:
		n += put_u(p + n, ev->aux);
		break;
	case VRT_REC_MAP:
		n += put_u(p + n, ev->size);
		n += put_u(p + n, ev->offset);
		n += put_u(p + n, ev->handle);
		break;
	case VRT_REC_UNMAP:
	case VRT_REC_PREFREE:
		n += put_u(p + n, ev->size);
		break;
	case VRT_REC_FAIL:
		n += put_u(p + n, ev->size);
		n += put_u(p + n, ev->aux);
		n += put_u(p + n, ev->error);
		n += put_u(p + n, ev->have_info);
		n += put_u(p + n, ev->free_bytes);
		n += put_u(p + n, ev->total_bytes);
		break;
	}
	n += put_u(p + n, ev->stack);
	n += put_u(p + n, ev->phase);
	return n;
}

/* dts, then the payload; a PAST event wraps its record (trace_format.h). */
static size_t encode_event(uint8_t *p, const struct vrt_ev *ev, uint64_t dts)
{
	size_t n = put_u(p, dts);
	if (ev->past) {
		n += put_u(p + n, ev->rec);
		n += put_u(p + n, ev->at);
	}
	return n + encode_body(p + n, ev);
}

void *vrt_tbuf_scratch(void)
{
	struct vrt_tbuf *t = tbuf_self();
	return t ? t->scratch : NULL;
}

void *vrt_tbuf_live(void)
{
	struct vrt_tbuf *t = tbuf_self();
	return t ? t->live : NULL;
}

void vrt_tbuf_live_each(void (*fn)(void *area, void *arg), void *arg)
{
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next)
		fn(t->live, arg);
}

/* Writes the pending REPEAT, if any: before the tentative ALLOC when there
 * is one (its dts already counts from the REPEAT's time), else at the end.
 * The room was kept free by the check in vrt_tbuf_event. tb->lock held. */
static void fold_flush(struct vrt_tbuf *t, struct vrt_chunk *c)
{
	if (!t->rep_count)
		return;
	uint8_t rec[REPEAT_MAX];
	size_t n = 2;
	n += put_u(rec + n, t->rep_end_ts - t->rep_prev_ts);
	n += put_u(rec + n, t->rep_count);
	n += put_u(rec + n, t->rep_end_ts - t->rep_first_ts);
	n += put_u(rec + n, t->rep_period);
	for (unsigned j = 0; j < t->rep_period; j++) {
		const struct fold_pair *p = &t->rep_tmpl[j];
		n += put_u(rec + n, p->alloc_api);
		n += put_u(rec + n, p->free_api);
		n += put_s(rec + n, p->device);
		n += put_s(rec + n, p->free_device);
		n += put_u(rec + n, p->size);
		n += put_u(rec + n, p->aux);
		n += put_u(rec + n, p->free_aux);
		n += put_u(rec + n, p->stack);
		n += put_u(rec + n, p->phase);
	}
	n = close_record(rec, VRT_REC_REPEAT, n - 2);
	uint32_t at = t->tent ? t->tent_off : c->len;
	if (t->tent) {
		memmove(c->data + at + n, c->data + at, c->len - at);
		t->tent_off += (uint32_t)n;
	}
	memcpy(c->data + at, rec, n);
	c->len += (uint32_t)n;
	t->rep_count = 0;
}

/* Field by field (see the note on struct vrt_tbuf); size first, the field
 * that differs most often. */
static inline int pair_eq(const struct fold_pair *a, const struct fold_pair *b)
{
	return a->size == b->size && a->stack == b->stack &&
	       a->alloc_api == b->alloc_api && a->free_api == b->free_api &&
	       a->device == b->device && a->free_device == b->free_device &&
	       a->aux == b->aux && a->free_aux == b->free_aux &&
	       a->phase == b->phase;
}

/* The pair k back in the chunk's history (1 = the newest). */
static inline const struct fold_pair *hist_back(const struct vrt_tbuf *t,
                                                unsigned k)
{
	return &t->hist[(t->hpos - k) & (HIST - 1)];
}

static inline void hist_push(struct vrt_tbuf *t, const struct fold_pair *p)
{
	t->hist[t->hpos & (HIST - 1)] = *p;
	t->hpos = (uint8_t)((t->hpos + 1) & (HIST - 1));
	if (t->nhist < HIST)
		t->nhist++;
}

/* Whether pair p (the tentative ALLOC and the FREE of it) folds: it
 * continues the running cycle, or starts one. A run of period 1 starts
 * when p repeats the pair before it; a longer cycle only once the chunk
 * wrote it twice in a row (so a pair that came once between runs of
 * another does not start a cycle that ends at once), the shortest first. */
static int fold_match(struct vrt_tbuf *t, const struct fold_pair *p)
{
	if (t->rep_count)
		return pair_eq(p, &t->rep_tmpl[t->rep_count % t->rep_period]);
	for (unsigned k = 1; k <= VRT_REPEAT_MAX_PERIOD; k++) {
		if (t->nhist < 2 * k - 1)
			break;
		if (!pair_eq(p, hist_back(t, k)))
			continue;
		unsigned j = 1;
		while (j < k && pair_eq(hist_back(t, j), hist_back(t, j + k)))
			j++;
		if (j < k)
			continue;
		t->rep_period = (uint8_t)k;
		for (j = 0; j < k; j++)
			t->rep_tmpl[j] = *hist_back(t, k - j);
		return 1;
	}
	return 0;
}

/* Encodes an ALLOC or FREE at p (compact when the chunk's template
 * allows, else in full by encode_event), updates the registers, and
 * returns its record type; *len gets the payload length. */
static unsigned encode_hot(struct compact *cs, uint8_t *p,
                           const struct vrt_ev *ev, uint64_t dts,
                           size_t *len)
{
	int alloc = ev->rec == VRT_REC_ALLOC;
	struct tmpl *t = alloc ? &cs->a : &cs->f;
	uint32_t stack = alloc ? 0 : ev->stack; /* ALLOC_C carries its own */
	unsigned type;

	uint64_t pd, ps = 0;
	if (t->have && ev->api == t->api && ev->device == t->device &&
	    ev->aux == t->aux && ev->phase == t->phase && stack == t->stack &&
	    vrt_pack_s((int64_t)(ev->addr - cs->addr), &pd) &&
	    (!alloc || vrt_pack_u(ev->size, &ps))) {
		size_t n = put_u(p, dts);
		n += put_u(p + n, pd);
		if (alloc) {
			n += put_u(p + n, ps);
			n += put_u(p + n, ev->stack);
		}
		*len = n;
		type = alloc ? VRT_REC_ALLOC_C : VRT_REC_FREE_C;
	} else {
		*len = encode_event(p, ev, dts);
		t->api = ev->api;
		t->device = ev->device;
		t->aux = ev->aux;
		t->phase = ev->phase;
		t->stack = stack;
		t->have = 1;
		type = ev->rec;
	}
	cs->addr = ev->addr;
	return type;
}

static void count_event(struct vrt_tbuf *t)
{
	atomic_store_explicit(
	        &t->events,
	        atomic_load_explicit(&t->events, memory_order_relaxed) + 1,
	        memory_order_relaxed);
}

void vrt_tbuf_event(const struct vrt_ev *ev)
{
	if (VRT_UNLIKELY(ev->blob_len > VRT_EV_BLOB_MAX))
		return;
	struct vrt_tbuf *t = tbuf_self();
	if (VRT_UNLIKELY(!t)) {
		atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
		return;
	}
	int fast = own_lock(t);
	struct vrt_chunk *c = t->cur;
	if (VRT_UNLIKELY(!c || c->cap - c->len < VRT_EV_MAX + REPEAT_MAX)) {
		/* Queue the full chunk before dropping the lock (see the
		 * ordering promise above), then wait for a fresh one without
		 * it, so the writer can still sweep this tbuf. */
		t->cur = NULL;
		if (c) {
			fold_flush(t, c);
			queue_push(c);
		}
		own_unlock(t, fast);
		c = pool_get();
		if (!c) {
			atomic_fetch_add_explicit(&dropped, 1,
			                          memory_order_relaxed);
			return;
		}
		fast = own_lock(t);
		/* Only this thread installs chunks, so cur is still NULL. */
		c->owner = t;
		c->seq = t->chunk_seq++;
		t->cur = c;
	}
	/* Read once the event is known not to fold: a folded pair takes its
	 * ALLOC's time (see fold_flush), and the clock is the dearest part
	 * of a folded pair (rdtsc alone is ~40 cycles on some CPUs). A fresh
	 * chunk has no tentative ALLOC, so it never folds its first event. */
	uint64_t now = 0;
	int have_now = c->len == 0;
	if (have_now) {
		/* Never below the thread's previous chunk either: a reader
		 * decodes a thread's BATCH records in time order, which must
		 * be the order they were written in. */
		now = vrt_clock_now();
		if (VRT_UNLIKELY(now < t->last_ts))
			now = t->last_ts;
		uint8_t *p = c->data;
		size_t n = put_u(p + 2, (uint64_t)t->tid);
		n += put_u(p + 2 + n, now);
		c->len = (uint32_t)close_record(p, VRT_REC_CHUNK, n);
		c->tid = t->tid;
		c->t0 = now;
		t->last_ts = now;
		/* The pair history stays: a cycle that ran in the thread's
		 * previous chunk folds from the first pair of this one (a
		 * REPEAT carries every field of its cycle). */
		t->tent = 0;
		t->rep_count = 0;
		memset(&t->cs, 0, sizeof(t->cs));
	}
	if (ev->rec == VRT_REC_FREE && t->tent && ev->addr == t->tent_addr &&
	    ev->stack == 0 && ev->phase == t->tent_pair.phase) {
		struct fold_pair pr = t->tent_pair;
		pr.free_api = ev->api;
		pr.free_device = ev->device;
		pr.free_aux = ev->aux;
		t->tent = 0;
		if (t->rep_count && !fold_match(t, &pr)) {
			/* The run ends: its REPEAT goes before that ALLOC,
			 * and the pair may start the next run. */
			t->tent = 1;
			fold_flush(t, c);
			t->tent = 0;
		}
		if (fold_match(t, &pr)) {
			/* Forget the ALLOC, count both. */
			c->len = t->tent_off;
			t->cs = t->cs_tent;
			if (!t->rep_count) {
				t->rep_prev_ts = t->tent_prev_ts;
				t->rep_first_ts = t->tent_ts;
			}
			t->rep_count++;
			t->rep_end_ts = t->tent_ts; /* = last_ts: no clock */
			hist_push(t, &pr);
			count_event(t);
			own_unlock(t, fast);
			return;
		}
		hist_push(t, &pr);
	} else if (t->rep_count &&
	           (t->tent || ev->rec != VRT_REC_ALLOC || t->in_snapshot)) {
		/* Anything but an ALLOC that may start the next folded pair
		 * ends the run. */
		fold_flush(t, c);
	}
	if (!have_now)
		now = vrt_clock_now();
	if (VRT_UNLIKELY(now < t->last_ts))
		now = t->last_ts; /* never backwards within a thread */

	uint32_t off = c->len;
	uint8_t *p = c->data + off;
	size_t n;
	if (ev->rec == VRT_REC_ALLOC || ev->rec == VRT_REC_FREE) {
		struct compact before = t->cs;
		unsigned type = encode_hot(&t->cs, p + 2, ev,
		                           now - t->last_ts, &n);
		c->len += (uint32_t)close_record(p, type, n);
		t->cs_tent = before;
	} else {
		n = encode_event(p + 2, ev, now - t->last_ts);
		c->len += (uint32_t)close_record(
		        p, ev->past ? VRT_REC_PAST : ev->rec, n);
		/* Any other record resets the compact state. */
		memset(&t->cs, 0, sizeof(t->cs));
	}
	if (ev->rec == VRT_REC_ALLOC && fold_on && !t->in_snapshot) {
		t->tent = 1;
		t->tent_off = off;
		t->tent_addr = ev->addr;
		t->tent_ts = now;
		t->tent_prev_ts = t->last_ts;
		t->tent_pair.alloc_api = (uint8_t)ev->api;
		t->tent_pair.device = ev->device;
		t->tent_pair.size = ev->size;
		t->tent_pair.aux = ev->aux;
		t->tent_pair.stack = ev->stack;
		t->tent_pair.phase = ev->phase;
	} else {
		t->tent = 0;
		if (ev->rec == VRT_REC_SNAPSHOT)
			t->in_snapshot = ev->op == 1;
	}
	t->last_ts = now;
	count_event(t);
	own_unlock(t, fast);
}

/* Takes t's chunk (flushing a pending REPEAT into it first) and appends
 * it to *tail. tb->lock held by the writer, owner out of its fast path. */
static void take(struct vrt_tbuf *t, struct vrt_chunk ***tail)
{
	struct vrt_chunk *c = t->cur;
	if (c && c->len) {
		fold_flush(t, c);
		t->cur = NULL;
		c->next = NULL;
		**tail = c;
		*tail = &c->next;
	}
}

static int chunk_before(const struct vrt_chunk *a, const struct vrt_chunk *b)
{
	if (a->tid != b->tid)
		return a->tid < b->tid;
	if (a->t0 != b->t0)
		return a->t0 < b->t0;
	if (a->owner != b->owner)
		return (uintptr_t)a->owner < (uintptr_t)b->owner;
	return a->seq < b->seq;
}

/* Sorts a list by thread id, then time: merge sort, no allocation. A pass
 * hands over a thread's current chunk before its full ones (and a chunk
 * it filled while the sweep went on after them), and a thread id the
 * kernel gave again to a new thread may come with another tbuf, so
 * without this a thread's chunks would not be in the order of their
 * events. */
static struct vrt_chunk *chunk_sort(struct vrt_chunk *list)
{
	if (!list || !list->next)
		return list;
	struct vrt_chunk *slow = list, *fast = list->next;
	while (fast && fast->next) {
		slow = slow->next;
		fast = fast->next->next;
	}
	struct vrt_chunk *b = slow->next, *a = list, *head = NULL,
	                 **tail = &head;
	slow->next = NULL;
	a = chunk_sort(a);
	b = chunk_sort(b);
	while (a && b) {
		struct vrt_chunk **pick = chunk_before(b, a) ? &b : &a;
		*tail = *pick;
		tail = &(*pick)->next;
		*pick = (*pick)->next;
	}
	*tail = a ? a : b;
	return head;
}

void vrt_tbuf_collect(struct vrt_chunk **out)
{
	struct vrt_chunk *head = NULL, **tail = &head;
	struct vrt_tbuf *first = atomic_load(&tbuf_list);
	/* Always through the lock, never an unlocked peek at cur: a
	 * thread installs a chunk and reads the clock under its lock,
	 * and a peek could see the old NULL while that thread's stamp
	 * is already older than the sweep. Taking the lock orders the
	 * two, which is what the watermark promise rests on. */
	if (atomic_load(&asym_on)) {
		for (struct vrt_tbuf *t = first; t; t = t->next)
			spin_lock(&t->lock);
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
			/* Cannot happen once registered; should it, owners
			 * take the lock from now on, and the few already in
			 * their fast path get time to finish. */
			atomic_store(&asym_on, 0);
			usleep(20000);
		}
		for (struct vrt_tbuf *t = first; t; t = t->next) {
			unsigned n = 0;
			while (atomic_load_explicit(&t->busy,
			                            memory_order_acquire)) {
				if (n++ > 200)
					sched_yield();
				else
					cpu_relax();
			}
			take(t, &tail);
			spin_unlock(&t->lock);
		}
	} else {
		for (struct vrt_tbuf *t = first; t; t = t->next) {
			spin_lock(&t->lock);
			take(t, &tail);
			spin_unlock(&t->lock);
		}
	}
	pthread_mutex_lock(&mu);
	*tail = q_head;
	q_head = q_tail = NULL;
	pthread_mutex_unlock(&mu);
	*out = chunk_sort(head);
}

void vrt_tbuf_release(struct vrt_chunk *list)
{
	if (!list)
		return;
	struct vrt_chunk *last = list;
	while (last->next)
		last = last->next;
	pthread_mutex_lock(&mu);
	last->next = pool_free;
	pool_free = list;
	pthread_cond_broadcast(&pool_cv);
	pthread_mutex_unlock(&mu);
}

int vrt_tbuf_writer_wait(int timeout_ms)
{
	struct timespec deadline;
	vrt_clock_deadline(&deadline, timeout_ms);
	pthread_mutex_lock(&mu);
	while (!writer_kicked) {
		if (pthread_cond_timedwait(&writer_cv, &mu, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	int kicked = writer_kicked;
	writer_kicked = 0;
	pthread_mutex_unlock(&mu);
	return kicked;
}

void vrt_tbuf_kick(void)
{
	pthread_mutex_lock(&mu);
	writer_kicked = 1;
	pthread_cond_signal(&writer_cv);
	pthread_mutex_unlock(&mu);
}

void vrt_tbuf_thread_exit(void)
{
	struct vrt_tbuf *t = my_tb;
	if (!t)
		return;
	spin_lock(&t->lock);
	struct vrt_chunk *c = t->cur;
	t->cur = NULL;
	if (c && c->len) {
		fold_flush(t, c);
		queue_push(c);
	}
	spin_unlock(&t->lock);
	if (c && !c->len)
		vrt_tbuf_release(c);
	pthread_mutex_lock(&mu);
	exited_events += atomic_exchange(&t->events, 0);
	pthread_mutex_unlock(&mu);
	my_tb = NULL;
	vrt_tbuf_calling = NULL;
	atomic_store(&t->calling, 0);
	atomic_store(&t->in_use, 0);
}

void vrt_tbuf_call_first(void)
{
	if (tbuf_self() && vrt_tbuf_calling)
		atomic_store_explicit(vrt_tbuf_calling, 1,
		                      memory_order_relaxed);
}

void vrt_tbuf_wait_calls(uint64_t max_ns)
{
	uint64_t end = vrt_clock_mono_ns() + max_ns;
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next) {
		if (t == my_tb)
			continue;
		/* A tbuf is never freed (recycled tbufs stay on the list): its
		 * flag may be read whoever owns it now. */
		while (atomic_load_explicit(&t->calling, memory_order_acquire)) {
			if (vrt_clock_mono_ns() > end)
				return;
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		}
	}
}

uint64_t vrt_tbuf_events(void)
{
	pthread_mutex_lock(&mu);
	uint64_t n = exited_events;
	pthread_mutex_unlock(&mu);
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next)
		n += atomic_load_explicit(&t->events, memory_order_relaxed);
	return n;
}

uint64_t vrt_tbuf_dropped(void)
{
	return atomic_load(&dropped);
}

void vrt_tbuf_before_fork(void)
{
	pthread_mutex_lock(&create_mu);
	pthread_mutex_lock(&mu);
}

void vrt_tbuf_after_fork_parent(void)
{
	pthread_mutex_unlock(&mu);
	pthread_mutex_unlock(&create_mu);
}

void vrt_tbuf_after_fork_child(void)
{
	pthread_mutex_init(&create_mu, NULL);
	pthread_mutex_init(&mu, NULL);
	vrt_clock_cond_init(&pool_cv);
	vrt_clock_cond_init(&writer_cv);
	writer_kicked = 0;
	/* Every buffered event belongs to the parent's trace. */
	struct vrt_chunk *drop = q_head;
	q_head = q_tail = NULL;
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next) {
		atomic_store(&t->lock, 0);
		atomic_store(&t->busy, 0);
		atomic_store(&t->events, 0);
		t->rep_count = 0;
		t->tent = t->nhist = t->in_snapshot = 0;
		if (t->cur) {
			t->cur->next = drop;
			drop = t->cur;
			t->cur = NULL;
		}
		if (t != my_tb)
			atomic_store(&t->in_use, 0);
	}
	while (drop) {
		struct vrt_chunk *next = drop->next;
		drop->next = pool_free;
		pool_free = drop;
		drop = next;
	}
	if (my_tb)
		my_tb->tid = (pid_t)syscall(SYS_gettid);
	exited_events = 0;
	atomic_store(&dropped, 0);
	vrt_clock_after_fork_child();
	if (atomic_load(&asym_on))
		atomic_store(&asym_on, asym_setup());
}
