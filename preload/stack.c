/*
 * stack.c — call stacks of recorded events.
 *
 * Capture (hook threads): the native stack with libunwind's unw_backtrace
 * (frames inside libvramtrace dropped) and the thread's Python frames
 * (pystack.c), unwound BEFORE any lock. A per-thread cache of recent
 * stacks (hash of the frames → stack id, 4-way set associative) answers
 * repeated call sites without touching shared state. On a miss, frames
 * are interned (native: by ip; Python: by code object and instruction,
 * with file, function and line copied on first sight while the frame is
 * live) and the path is walked through a global trie of (parent, frame)
 * → node, so each event stores one stack id (heaptrack and memray do the
 * same).
 *
 * Emission (writer thread): frames and nodes are append-only arrays of
 * fixed blocks whose entries never move; their counts are published with
 * release stores after an entry is complete. The writer reads entries it
 * has not written yet without a lock, resolves native symbols (dladdr,
 * demangled) off the hot path, classifies each node with the phase rules
 * and writes STRING, FRAME, STACK and PHASE records.
 *
 * Locks: stack_mu guards the three maps, the arena and appends to the
 * arrays; taken only on a cache miss, after unwinding. Writer-only state
 * (string table, emitted cursors, per-id rule indexes) has no lock.
 * Fork: stack_mu is taken in prepare; the child keeps the tables (its ids
 * stay valid) and re-emits every definition into its own trace file.
 */
#include "clock.h"
#include "core.h"
#include "pathname.h"
#include "pystack.h"
#include "real.h"
#include "rules.h"

#include <vramtrace/trace_format.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MAX_NATIVE    256
#define MAX_PY        128
#define CACHE_SETS    64 /* per-thread cache: sets of CACHE_WAYS stacks */
#define CACHE_WAYS    4
#define BLOCK_SHIFT   12
#define BLOCK_SIZE    (1u << BLOCK_SHIFT)
#define MAX_BLOCKS    4096
#define ARENA_BLOCK   (1u << 20)
#define PY_RECHECK_NS 1000000000ull

struct frame {
	uint8_t kind;
	int line;
	uint64_t ip;
	const char *file; /* python only, arena copies */
	const char *func;
};

struct node {
	uint32_t parent, frame;
	_Atomic uint16_t phase; /* set by the writer once classified */
};

struct slot {
	uint64_t a, b;
	uint32_t val; /* 0 = empty */
};

struct map {
	struct slot *slots;
	size_t cap, used;
};

/* Four ways per set, the most recently used first: a server's busy
 * thread allocates from tens of call paths in turn, which a direct-mapped
 * cache of the same size would keep evicting from each other (a miss
 * costs the trie walk, microseconds on a deep stack). */
struct cache {
	uint64_t hash[CACHE_SETS][CACHE_WAYS];
	uint32_t id[CACHE_SETS][CACHE_WAYS];
};
_Static_assert(sizeof(struct cache) <= VRT_TBUF_SCRATCH,
               "stack cache must fit the tbuf scratch area");

static int mode; /* VRT_STACKS_* bits */
static int depth = 64;
static uintptr_t self_lo, self_hi;  /* our own text, skipped */
static _Atomic int py_state;        /* 0 unknown, 1 found, 2 none yet */
static _Atomic uint64_t py_checked; /* when we last looked, ns */

static pthread_mutex_t stack_mu = PTHREAD_MUTEX_INITIALIZER;
static struct map native_map, py_map, trie;
static struct frame *fblk[MAX_BLOCKS];
static struct node *nblk[MAX_BLOCKS];
static _Atomic uint32_t nframes, nnodes; /* published counts */
static char *arena;
static size_t arena_left;

/* ---- small mmap-backed pieces (usable inside hooks) -------------------- */

static void *map_pages(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static uint32_t map_get(const struct map *m, uint64_t a, uint64_t b)
{
	if (!m->cap)
		return 0;
	for (size_t i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		const struct slot *s = &m->slots[i];
		if (!s->val)
			return 0;
		if (s->a == a && s->b == b)
			return s->val;
	}
}

static void map_insert(struct map *m, uint64_t a, uint64_t b, uint32_t val)
{
	for (size_t i = mix(a, b) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		struct slot *s = &m->slots[i];
		if (!s->val) {
			s->a = a;
			s->b = b;
			s->val = val;
			m->used++;
			return;
		}
	}
}

/* Makes room for one more entry (load below 1/2). 0 or -1. */
static int map_reserve(struct map *m)
{
	if ((m->used + 1) * 2 <= m->cap)
		return 0;
	size_t cap = m->cap ? m->cap * 2 : 4096;
	struct slot *slots = map_pages(cap * sizeof(struct slot));
	if (!slots)
		return -1;
	struct map bigger = {slots, cap, 0};
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].val)
			map_insert(&bigger, m->slots[i].a, m->slots[i].b,
			           m->slots[i].val);
	if (m->slots)
		munmap(m->slots, m->cap * sizeof(struct slot));
	*m = bigger;
	return 0;
}

static char *arena_copy(const char *s)
{
	size_t len = strlen(s) + 1;
	if (len > arena_left) {
		if (len > ARENA_BLOCK)
			return NULL;
		arena = map_pages(ARENA_BLOCK);
		arena_left = arena ? ARENA_BLOCK : 0;
		if (!arena)
			return NULL;
	}
	char *p = arena;
	memcpy(p, s, len);
	arena += len;
	arena_left -= len;
	return p;
}

static struct frame *frame_at(uint32_t id)
{
	uint32_t i = id - 1;
	return &fblk[i >> BLOCK_SHIFT][i & (BLOCK_SIZE - 1)];
}

static struct node *node_at(uint32_t id)
{
	uint32_t i = id - 1;
	return &nblk[i >> BLOCK_SHIFT][i & (BLOCK_SIZE - 1)];
}

/* Room for entry number count+1 in a block array; 0 or -1. */
static int block_reserve(void **blocks, uint32_t count, size_t entry)
{
	uint32_t b = count >> BLOCK_SHIFT;
	if (b >= MAX_BLOCKS)
		return -1;
	if (!blocks[b])
		blocks[b] = map_pages(BLOCK_SIZE * entry);
	return blocks[b] ? 0 : -1;
}

/* ---- set-up ------------------------------------------------------------ */

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		uintptr_t hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			self_lo = lo;
			self_hi = hi;
			return 1;
		}
	}
	return 0;
}

void vrt_stack_init(int stacks_mode, int max_depth)
{
	mode = stacks_mode;
	depth = max_depth < 1            ? 1
	        : max_depth > MAX_NATIVE ? MAX_NATIVE
	                                 : max_depth;
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&vrt_stack_init);
}

/* ---- capture ----------------------------------------------------------- */

/* Whether Python frames can be read. Looking for an interpreter costs
 * dlsym and dlopen probes, so a process without one looks again at most
 * once per PY_RECHECK_NS (it may load libpython later). */
static int python_ready(void)
{
	int s = atomic_load_explicit(&py_state, memory_order_relaxed);
	if (VRT_LIKELY(s == 1))
		return 1;
	uint64_t now = vrt_clock_now();
	if (s == 2 &&
	    now - atomic_load_explicit(&py_checked, memory_order_relaxed) <
	            PY_RECHECK_NS)
		return 0;
	atomic_store(&py_checked, now);
	int found = vrt_pystack_init();
	atomic_store(&py_state, found ? 1 : 2);
	return found;
}

/* Frame id for a native ip or a Python frame; 0 on exhaustion. Called
 * with stack_mu held. */
static uint32_t intern_frame(int kind, uint64_t a, uint64_t b,
                             const struct vrt_pyframe *pf)
{
	struct map *m = kind == VRT_FRAME_NATIVE ? &native_map : &py_map;
	uint32_t id = map_get(m, a, b);
	if (id)
		return id;
	uint32_t n = atomic_load_explicit(&nframes, memory_order_relaxed);
	if (map_reserve(m) ||
	    block_reserve((void **)fblk, n, sizeof(struct frame)))
		return 0;
	struct frame *f = frame_at(n + 1);
	memset(f, 0, sizeof(*f));
	f->kind = (uint8_t)kind;
	f->ip = a;
	if (kind == VRT_FRAME_PYTHON) {
		char file[512], func[256];
		int line = 0;
		if (vrt_pystack_describe(pf, file, sizeof(file), func,
		                         sizeof(func), &line) == 0) {
			f->file = arena_copy(file);
			f->func = arena_copy(func);
			f->line = line;
		}
	}
	map_insert(m, a, b, n + 1);
	atomic_store_explicit(&nframes, n + 1, memory_order_release);
	return n + 1;
}

/* A Python frame known by its names only (vrt_stack_python): keyed apart
 * from the captured ones (whose keys are code objects' addresses) by the
 * top bit. stack_mu held. */
static uint32_t intern_named(const char *file, const char *func, int line)
{
	uint64_t a = 0xcbf29ce484222325ull;
	for (const char *c = file; *c; c++)
		a = (a ^ (unsigned char)*c) * 0x100000001b3ull;
	a = mix(a, 0x2f);
	for (const char *c = func; *c; c++)
		a = (a ^ (unsigned char)*c) * 0x100000001b3ull;
	a |= 1ull << 63;
	uint32_t id = map_get(&py_map, a, (uint64_t)(unsigned)line);
	if (id)
		return id;
	uint32_t n = atomic_load_explicit(&nframes, memory_order_relaxed);
	if (map_reserve(&py_map) ||
	    block_reserve((void **)fblk, n, sizeof(struct frame)))
		return 0;
	struct frame *f = frame_at(n + 1);
	memset(f, 0, sizeof(*f));
	f->kind = VRT_FRAME_PYTHON;
	f->ip = a;
	f->file = arena_copy(file);
	f->func = arena_copy(func);
	f->line = line;
	map_insert(&py_map, a, (uint64_t)(unsigned)line, n + 1);
	atomic_store_explicit(&nframes, n + 1, memory_order_release);
	return n + 1;
}

static uint32_t intern_node(uint32_t parent, uint32_t frame)
{
	uint32_t id = map_get(&trie, parent, frame);
	if (id)
		return id;
	uint32_t n = atomic_load_explicit(&nnodes, memory_order_relaxed);
	if (map_reserve(&trie) ||
	    block_reserve((void **)nblk, n, sizeof(struct node)))
		return 0;
	struct node *nd = node_at(n + 1);
	nd->parent = parent;
	nd->frame = frame;
	atomic_store_explicit(&nd->phase, 0, memory_order_relaxed);
	map_insert(&trie, parent, frame, n + 1);
	atomic_store_explicit(&nnodes, n + 1, memory_order_release);
	return n + 1;
}

uint32_t vrt_stack_python(const char *const *file, const char *const *func,
                          const int *line, int n)
{
	uint32_t node = 0;
	if (n > MAX_PY)
		n = MAX_PY;
	pthread_mutex_lock(&stack_mu);
	for (int i = 0; i < n; i++) {
		uint32_t f = intern_named(file[i] ? file[i] : "?",
		                          func[i] ? func[i] : "?", line[i]);
		uint32_t next = f ? intern_node(node, f) : 0;
		if (!next)
			break;
		node = next;
	}
	pthread_mutex_unlock(&stack_mu);
	return node;
}

uint32_t vrt_stack_capture(void)
{
	if (!mode)
		return 0;
	void *ips[MAX_NATIVE + 8];
	struct vrt_pyframe py[MAX_PY];
	int nat = 0, npy = 0;
	if (mode & VRT_STACKS_NATIVE) {
		int got = unw_backtrace(ips, depth + 8);
		/* Drop our own frames (the hook and what it called). */
		int skip = 0;
		while (skip < got && (uintptr_t)ips[skip] >= self_lo &&
		       (uintptr_t)ips[skip] < self_hi)
			skip++;
		nat = got - skip;
		if (nat > depth)
			nat = depth;
		memmove(ips, ips + skip, (size_t)nat * sizeof(ips[0]));
	}
	if ((mode & VRT_STACKS_PYTHON) && python_ready())
		npy = vrt_pystack_capture(py, depth < MAX_PY ? depth : MAX_PY);
	if (!nat && !npy)
		return 0;

	uint64_t h = 0x84222325cbf29ce4ull;
	for (int i = 0; i < npy; i++)
		h = mix(h, mix((uint64_t)(uintptr_t)py[i].code,
		               (uint64_t)py[i].lasti));
	/* Four independent lanes: one mix per frame in a single chain
	 * would make 40 frames 40 multiply latencies in a row. */
	uint64_t l[4] = {h, h ^ 1, h ^ 2, h ^ 3};
	for (int i = 0; i < nat; i++)
		l[i & 3] = (l[i & 3] ^ (uint64_t)(uintptr_t)ips[i]) *
		           0x9e3779b97f4a7c15ull;
	h = mix(mix(l[0], l[1]), mix(l[2], mix(l[3], (uint64_t)nat)));
	h |= 1;
	struct cache *c = vrt_tbuf_scratch();
	unsigned set = (unsigned)(h >> 40) & (CACHE_SETS - 1);
	if (c) {
		uint64_t *hs = c->hash[set];
		uint32_t *ids = c->id[set];
		if (hs[0] == h)
			return ids[0];
		for (int w = 1; w < CACHE_WAYS; w++) {
			if (hs[w] != h)
				continue;
			uint32_t id = ids[w];
			memmove(&hs[1], &hs[0], (size_t)w * sizeof(hs[0]));
			memmove(&ids[1], &ids[0], (size_t)w * sizeof(ids[0]));
			hs[0] = h;
			ids[0] = id;
			return id;
		}
	}

	/* Root first: Python outer → inner, then native outer → inner. */
	uint32_t node = 0;
	pthread_mutex_lock(&stack_mu);
	for (int i = npy - 1; i >= 0; i--) {
		uint32_t f = intern_frame(VRT_FRAME_PYTHON,
		                          (uint64_t)(uintptr_t)py[i].code,
		                          (uint64_t)py[i].lasti + 1, &py[i]);
		uint32_t next = f ? intern_node(node, f) : 0;
		if (!next)
			break;
		node = next;
	}
	for (int i = nat - 1; i >= 0; i--) {
		uint32_t f = intern_frame(VRT_FRAME_NATIVE,
		                          (uint64_t)(uintptr_t)ips[i], 0, NULL);
		uint32_t next = f ? intern_node(node, f) : 0;
		if (!next)
			break;
		node = next;
	}
	pthread_mutex_unlock(&stack_mu);
	if (c && node) {
		memmove(&c->hash[set][1], &c->hash[set][0],
		        (CACHE_WAYS - 1) * sizeof(c->hash[set][0]));
		memmove(&c->id[set][1], &c->id[set][0],
		        (CACHE_WAYS - 1) * sizeof(c->id[set][0]));
		c->hash[set][0] = h;
		c->id[set][0] = node;
	}
	return node;
}

/* ---- emission (writer thread only) ------------------------------------- */

struct str_ent {
	char *s;
	uint32_t id;
	struct str_ent *next;
};

static struct {
	struct str_ent **buckets;
	size_t nbuckets;
	uint32_t nstrings;
	uint32_t frames_done, nodes_done;
	int *frame_rule, *node_rule; /* by id, grown with realloc */
	size_t frame_cap, node_cap;
	unsigned char custom_done[256];
	struct vrt_rules *rules;
	char *(*demangle)(const char *, char *, size_t *, int *);
	int demangle_looked;
} em;

/* Modules and Python files of plumbing (vrt_stack_plumbing): substrings
 * of a module's file name, of a Python frame's file. */
static const char *const plumbing_modules[] = {
	"libnccl", "libzmq", "libtorch", "libc10", "libgloo", "libmpi",
	"libucp", "libucs", "libuct", "_raylet", "libtensorpipe",
};
static const char *const plumbing_py[] = {
	"torch/distributed/", "/zmq/", "/ray/", "multiprocessing/connection.py",
	"multiprocessing/managers.py", "multiprocessing/resource_sharer.py",
};

static int any_in(const char *s, const char *const *list, size_t n)
{
	for (size_t i = 0; s && i < n; i++)
		if (strstr(s, list[i]))
			return 1;
	return 0;
}

int vrt_stack_plumbing(void)
{
	void *ips[64];
	int got = unw_backtrace(ips, 64);
	for (int i = 0; i < got; i++) {
		Dl_info info;
		if ((uintptr_t)ips[i] >= self_lo && (uintptr_t)ips[i] < self_hi)
			continue;
		if (dladdr(ips[i], &info) && info.dli_fname &&
		    any_in(vrt_pathname_base(info.dli_fname), plumbing_modules,
		           sizeof(plumbing_modules) /
		                   sizeof(plumbing_modules[0])))
			return 1;
	}
	if (!python_ready())
		return 0;
	struct vrt_pyframe py[MAX_PY];
	int npy = vrt_pystack_capture(py, MAX_PY);
	for (int i = 0; i < npy; i++) {
		char file[256], func[64];
		int line;
		if (vrt_pystack_describe(&py[i], file, sizeof(file), func,
		                         sizeof(func), &line) == 0 &&
		    any_in(file, plumbing_py,
		           sizeof(plumbing_py) / sizeof(plumbing_py[0])))
			return 1;
	}
	return 0;
}

void vrt_stack_set_rules(struct vrt_rules *rules)
{
	em.rules = rules;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t put_str(uint8_t *p, const char *s, size_t max)
{
	size_t len = strnlen(s, max);
	size_t n = vrt_put_uvarint(p, len);
	memcpy(p + n, s, len);
	return n + len;
}

/* String id for s, writing its STRING record the first time. 0 for NULL
 * or on allocation failure (the name is then simply missing). */
static uint32_t string_id(const char *s, vrt_stack_emit_fn emit)
{
	if (!s || !*s)
		return 0;
	if (!em.buckets) {
		em.nbuckets = 4096;
		em.buckets = calloc(em.nbuckets, sizeof(*em.buckets));
		if (!em.buckets)
			return 0;
	}
	size_t b = str_hash(s) & (em.nbuckets - 1);
	for (struct str_ent *e = em.buckets[b]; e; e = e->next)
		if (!strcmp(e->s, s))
			return e->id;
	struct str_ent *e = malloc(sizeof(*e));
	char *copy = e ? strdup(s) : NULL;
	if (!copy) {
		free(e);
		return 0;
	}
	e->s = copy;
	e->id = ++em.nstrings;
	e->next = em.buckets[b];
	em.buckets[b] = e;
	uint8_t p[VRT_UVARINT_MAX * 2 + 4096];
	size_t n = vrt_put_uvarint(p, e->id);
	n += put_str(p + n, s, 4096);
	emit(VRT_REC_STRING, p, n);
	return e->id;
}

static int grow_ints(int **arr, size_t *cap, size_t need)
{
	if (need < *cap)
		return 0;
	size_t ncap = *cap ? *cap : 4096;
	while (ncap <= need)
		ncap *= 2;
	int *p = realloc(*arr, ncap * sizeof(int));
	if (!p)
		return -1;
	for (size_t i = *cap; i < ncap; i++)
		p[i] = VRT_RULE_NONE;
	*arr = p;
	*cap = ncap;
	return 0;
}

static const char *demangled(const char *sym, char *buf, size_t len)
{
	if (!em.demangle_looked) {
		em.demangle_looked = 1;
		*(void **)&em.demangle =
		        vrt_real_dlsym(RTLD_DEFAULT, "__cxa_demangle");
	}
	if (!em.demangle || sym[0] != '_' || sym[1] != 'Z')
		return sym;
	int status = 0;
	char *out = em.demangle(sym, NULL, NULL, &status);
	if (!out || status)
		return sym;
	strncpy(buf, out, len - 1);
	buf[len - 1] = 0;
	free(out);
	return buf;
}

static void emit_frame(uint32_t id, vrt_stack_emit_fn emit)
{
	const struct frame *f = frame_at(id);
	struct vrt_rule_frame rf = {.kind = f->kind};
	uint8_t p[64];
	/* The demangled name lives here until the rules have matched it. */
	char buf[1024];
	size_t n = vrt_put_uvarint(p, id);
	n += vrt_put_uvarint(p + n, f->kind);
	if (f->kind == VRT_FRAME_NATIVE) {
		Dl_info info;
		const char *sym = NULL, *mod = NULL;
		uint64_t off = 0;
		/* A return address may point just past a call at the end of
		 * its function: look up the byte before it. */
		if (dladdr((void *)(uintptr_t)(f->ip - 1), &info)) {
			mod = info.dli_fname;
			const char *raw = info.dli_sname;
			if (raw) {
				off = f->ip -
				      (uint64_t)(uintptr_t)info.dli_saddr;
			} else {
				/* Static, hidden or not exported: the
				 * file's own symbol table may know. */
				raw = vrt_symbols_lookup(
				        mod, (uintptr_t)info.dli_fbase,
				        (uintptr_t)(f->ip - 1), &off);
				off += 1;
			}
			if (raw)
				sym = demangled(raw, buf, sizeof(buf));
		}
		rf.function = sym;
		rf.file = mod;
		uint32_t mid = string_id(mod, emit);
		uint32_t sid = string_id(sym, emit);
		n += vrt_put_uvarint(p + n, f->ip);
		n += vrt_put_uvarint(p + n, mid);
		n += vrt_put_uvarint(p + n, sid);
		n += vrt_put_uvarint(p + n, off);
	} else {
		rf.function = f->func;
		rf.file = f->file;
		uint32_t fid = string_id(f->file, emit);
		uint32_t sid = string_id(f->func, emit);
		n += vrt_put_uvarint(p + n, fid);
		n += vrt_put_uvarint(p + n, sid);
		n += vrt_put_uvarint(p + n,
		                     (uint64_t)(f->line > 0 ? f->line : 0));
	}
	emit(VRT_REC_FRAME, p, n);
	if (!grow_ints(&em.frame_rule, &em.frame_cap, id))
		em.frame_rule[id] = em.rules ? vrt_rules_match(em.rules, &rf)
		                             : VRT_RULE_NONE;
}

static void emit_phase_name(unsigned phase, vrt_stack_emit_fn emit)
{
	if (phase < VRT_PHASE_FIRST_CUSTOM || phase >= 256 ||
	    em.custom_done[phase])
		return;
	const char *name = vrt_rules_phase_name(em.rules, phase);
	if (!name)
		return;
	em.custom_done[phase] = 1;
	uint8_t p[VRT_UVARINT_MAX * 2 + 128];
	size_t n = vrt_put_uvarint(p, phase);
	n += put_str(p + n, name, 127);
	emit(VRT_REC_PHASE, p, n);
}

static void emit_node(uint32_t id, vrt_stack_emit_fn emit)
{
	const struct node *nd = node_at(id);
	int rule = VRT_RULE_NONE;
	if (nd->parent && nd->parent < em.node_cap)
		rule = em.node_rule[nd->parent];
	if (nd->frame < em.frame_cap && em.frame_rule[nd->frame] < rule)
		rule = em.frame_rule[nd->frame];
	if (!grow_ints(&em.node_rule, &em.node_cap, id))
		em.node_rule[id] = rule;
	unsigned phase = em.rules && rule != VRT_RULE_NONE
	                         ? vrt_rules_phase(em.rules, rule)
	                         : VRT_PHASE_unattributed;
	emit_phase_name(phase, emit);
	atomic_store_explicit(&node_at(id)->phase, (uint16_t)phase,
	                      memory_order_relaxed);
	uint8_t p[VRT_UVARINT_MAX * 4];
	size_t n = vrt_put_uvarint(p, id);
	n += vrt_put_uvarint(p + n, nd->parent);
	n += vrt_put_uvarint(p + n, nd->frame);
	n += vrt_put_uvarint(p + n, vrt_phase_encode(phase, VRT_SRC_RULE));
	emit(VRT_REC_STACK, p, n);
}

unsigned vrt_stack_phase(uint32_t stack)
{
	if (!stack ||
	    stack > atomic_load_explicit(&nnodes, memory_order_acquire))
		return 0;
	return atomic_load_explicit(&node_at(stack)->phase,
	                            memory_order_relaxed);
}

void vrt_stack_emit(vrt_stack_emit_fn emit)
{
	uint32_t nf = atomic_load_explicit(&nframes, memory_order_acquire);
	uint32_t nn = atomic_load_explicit(&nnodes, memory_order_acquire);
	while (em.frames_done < nf)
		emit_frame(++em.frames_done, emit);
	while (em.nodes_done < nn)
		emit_node(++em.nodes_done, emit);
}

void vrt_stack_before_fork(void)
{
	pthread_mutex_lock(&stack_mu);
}

void vrt_stack_after_fork_parent(void)
{
	pthread_mutex_unlock(&stack_mu);
}

void vrt_stack_new_file(void)
{
	/* The string table restarts with the file (ids are per file); the
	 * entries of the last one are freed. */
	for (size_t b = 0; b < em.nbuckets; b++)
		for (struct str_ent *e = em.buckets[b], *next; e; e = next) {
			next = e->next;
			free(e->s);
			free(e);
		}
	free(em.buckets);
	em.buckets = NULL;
	em.nbuckets = 0;
	em.nstrings = 0;
	em.frames_done = em.nodes_done = 0;
	memset(em.custom_done, 0, sizeof(em.custom_done));
}

void vrt_stack_after_fork_child(void)
{
	pthread_mutex_init(&stack_mu, NULL);
	/* The child's trace is a new file (vrt_writer_start says so). */
}
