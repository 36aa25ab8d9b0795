/*
 * tbuf.c — per-thread event buffers and the pool of chunks they fill.
 *
 * Each thread that records owns a struct vrt_tbuf (found through an
 * initial-exec TLS pointer) holding its current chunk. vrt_tbuf_event()
 * encodes one event into that chunk under the tbuf's spinlock, which only
 * the writer ever contends for (when it takes a partly filled chunk every
 * flush interval). So the hot path is: one uncontended atomic exchange, a
 * clock read and some varint stores — no malloc, no stdio, no global lock.
 *
 * Locks and ownership:
 *   tb->lock   spinlock: tb->cur, tb->last_ts. Owner thread per event;
 *              writer in vrt_tbuf_collect.
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
 * emptied the queue, it holds every event stamped before the sweep began.
 *
 * Fork: vrt_tbuf_before_fork takes mu (and create_mu) so the child never
 * inherits them held; the child drops all buffered events (the parent's
 * trace has them) and resets every spinlock, since the threads that may
 * have held one do not exist in the child.
 */
#include "core.h"

#include <vramtrace/trace_format.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VRT_EV_MAX   (192 + VRT_EV_BLOB_MAX) /* room one record may take */
#define TBUF_BLOCK   64                      /* tbufs made per mmap */
#define POOL_WAIT_MS 1000

struct vrt_tbuf {
	_Atomic int lock;
	_Atomic int in_use;
	pid_t tid;
	uint64_t last_ts;
	struct vrt_chunk *cur;
	_Atomic uint64_t events; /* written by the owner only */
	struct vrt_tbuf *next;
	/* Owner-only scratch for other modules (stack.c's cache of recent
	 * stacks); survives reuse by a later thread, which is harmless for
	 * a cache of global ids. */
	_Alignas(64) uint8_t scratch[VRT_TBUF_SCRATCH];
};

static struct vrt_tbuf *_Atomic tbuf_list;
static VRT_TLS struct vrt_tbuf *my_tb;

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
static pthread_condattr_t mono_attr;
static uint64_t exited_events; /* events of tbufs handed back; under mu */

uint64_t vrt_tbuf_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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

int vrt_tbuf_init(size_t max_bytes)
{
	pthread_condattr_init(&mono_attr);
	pthread_condattr_setclock(&mono_attr, CLOCK_MONOTONIC);
	pthread_cond_init(&pool_cv, &mono_attr);
	pthread_cond_init(&writer_cv, &mono_attr);
	pool_max = max_bytes / VRT_CHUNK_BYTES;
	if (pool_max < 4)
		pool_max = 4;
	return 0;
}

void vrt_tbuf_cond_init(pthread_cond_t *cv)
{
	pthread_cond_init(cv, &mono_attr);
}

void vrt_tbuf_deadline(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
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
			vrt_tbuf_deadline(&deadline, POOL_WAIT_MS);
			have_deadline = 1;
		}
		writer_kicked = 1;
		pthread_cond_signal(&writer_cv);
		if (pthread_cond_timedwait(&pool_cv, &mu, &deadline) ==
		    ETIMEDOUT)
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
	spin_unlock(&t->lock);
	my_tb = t;
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

/* Encodes type | len | payload at dst; returns bytes used. */
static size_t put_record(uint8_t *dst, unsigned type, const uint8_t *payload,
                         size_t len)
{
	size_t n = 0;
	dst[n++] = (uint8_t)type;
	n += put_u(dst + n, len);
	memcpy(dst + n, payload, len);
	return n + len;
}

static size_t put_text(uint8_t *p, const char *s)
{
	size_t len = s ? strnlen(s, VRT_EV_TEXT_MAX) : 0;
	size_t n = put_u(p, len);
	if (len)
		memcpy(p + n, s, len);
	return n + len;
}

static size_t encode_event(uint8_t *p, const struct vrt_ev *ev, uint64_t dts)
{
	size_t n = 0;
	n += put_u(p + n, dts);
	switch (ev->rec) {
	case VRT_REC_MEMINFO:
		n += put_s(p + n, ev->device);
		n += put_u(p + n, ev->free_bytes);
		n += put_u(p + n, ev->total_bytes);
		n += put_u(p + n, ev->stack);
		n += put_u(p + n, ev->api);
		return n;
	case VRT_REC_MARK:
		return n + put_text(p + n, ev->text);
	case VRT_REC_NET:
		n += put_u(p + n, ev->op);
		n += put_u(p + n, ev->addr);
		n += put_u(p + n, ev->aux);
		return n;
	case VRT_REC_PROC:
		n += put_u(p + n, ev->op);
		n += put_u(p + n, ev->addr);
		return n + put_text(p + n, ev->text);
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

void *vrt_tbuf_scratch(void)
{
	struct vrt_tbuf *t = tbuf_self();
	return t ? t->scratch : NULL;
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
	spin_lock(&t->lock);
	struct vrt_chunk *c = t->cur;
	if (VRT_UNLIKELY(!c || c->cap - c->len < VRT_EV_MAX)) {
		/* Queue the full chunk before dropping the lock (see the
		 * ordering promise above), then wait for a fresh one without
		 * it, so the writer can still sweep this tbuf. */
		t->cur = NULL;
		if (c)
			queue_push(c);
		spin_unlock(&t->lock);
		c = pool_get();
		if (!c) {
			atomic_fetch_add_explicit(&dropped, 1,
			                          memory_order_relaxed);
			return;
		}
		spin_lock(&t->lock);
		/* Only this thread installs chunks, so cur is still NULL. */
		t->cur = c;
	}
	uint64_t now = vrt_tbuf_now();
	uint8_t payload[VRT_EV_MAX];
	if (c->len == 0) {
		size_t n = 0;
		n += put_u(payload + n, (uint64_t)t->tid);
		n += put_u(payload + n, now);
		c->len += (uint32_t)put_record(c->data + c->len, VRT_REC_CHUNK,
		                               payload, n);
		t->last_ts = now;
	}
	uint64_t dts = now >= t->last_ts ? now - t->last_ts : 0;
	t->last_ts = now;
	size_t n = encode_event(payload, ev, dts);
	c->len += (uint32_t)put_record(c->data + c->len, ev->rec, payload, n);
	atomic_store_explicit(
	        &t->events,
	        atomic_load_explicit(&t->events, memory_order_relaxed) + 1,
	        memory_order_relaxed);
	spin_unlock(&t->lock);
}

void vrt_tbuf_collect(struct vrt_chunk **out)
{
	struct vrt_chunk *head = NULL, **tail = &head;
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next) {
		/* Always through the lock, never an unlocked peek at cur: a
		 * thread installs a chunk and reads the clock under its lock,
		 * and a peek could see the old NULL while that thread's stamp
		 * is already older than the sweep. Taking the lock orders the
		 * two, which is what the watermark promise rests on. */
		spin_lock(&t->lock);
		struct vrt_chunk *c = t->cur;
		if (c && c->len) {
			t->cur = NULL;
			c->next = NULL;
			*tail = c;
			tail = &c->next;
		}
		spin_unlock(&t->lock);
	}
	pthread_mutex_lock(&mu);
	*tail = q_head;
	q_head = q_tail = NULL;
	pthread_mutex_unlock(&mu);
	*out = head;
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

void vrt_tbuf_writer_wait(int timeout_ms)
{
	struct timespec deadline;
	vrt_tbuf_deadline(&deadline, timeout_ms);
	pthread_mutex_lock(&mu);
	while (!writer_kicked) {
		if (pthread_cond_timedwait(&writer_cv, &mu, &deadline) ==
		    ETIMEDOUT)
			break;
	}
	writer_kicked = 0;
	pthread_mutex_unlock(&mu);
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
	if (c && c->len)
		queue_push(c);
	spin_unlock(&t->lock);
	if (c && !c->len)
		vrt_tbuf_release(c);
	pthread_mutex_lock(&mu);
	exited_events += atomic_exchange(&t->events, 0);
	pthread_mutex_unlock(&mu);
	my_tb = NULL;
	atomic_store(&t->in_use, 0);
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
	pthread_cond_init(&pool_cv, &mono_attr);
	pthread_cond_init(&writer_cv, &mono_attr);
	writer_kicked = 0;
	/* Every buffered event belongs to the parent's trace. */
	struct vrt_chunk *drop = q_head;
	q_head = q_tail = NULL;
	for (struct vrt_tbuf *t = atomic_load(&tbuf_list); t; t = t->next) {
		atomic_store(&t->lock, 0);
		atomic_store(&t->events, 0);
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
}
