/*
 * fake_cuda.c — a fake libcuda.so.1 for the preload tests (no GPU needed).
 *
 * It answers the slice of the CUDA driver API that inference runtimes use
 * for memory, and behaves like the real driver where vramtrace can tell:
 *   - reached the way cudart 13 reaches it: dlopen + dlsym of
 *     cuGetProcAddress_v2, then every other name through the resolver, which
 *     maps a base name + cudaVersion + flags to a versioned export (flags 2
 *     picks the _ptsz export) and answers CUDA_ERROR_NOT_FOUND otherwise;
 *     linked -Wl,-Bsymbolic so the resolver's pointers are this library's
 *     own functions even when a preload defines the same names;
 *   - cuInit first, a per-thread current context, one primary context per
 *     device, several devices (FAKECUDA_DEVICES) with configurable capacity
 *     (FAKECUDA_MEM) and memory already used by "other processes"
 *     (FAKECUDA_USED), CUDA_ERROR_OUT_OF_MEMORY past capacity, free/total
 *     consistent with every allocation;
 *   - processes on one card (FAKECUDA_SHARE=FILE, the same file for every
 *     process of a run): each process publishes its live bytes per
 *     physical card in a slot of that file, and every process counts the
 *     other live slots as memory used by other processes, so two ranks
 *     placed on one card run out of it together as on a real card; a slot
 *     whose process is gone no longer counts (the real driver frees a
 *     process's memory when it exits, however it exits);
 *   - device pointers are fake: per-device bump ranges at (ordinal+1) << 43,
 *     512-byte aligned, never reused, never touched, so an "80 GiB" card
 *     fits on a laptop; VMM address reservations come from their own range;
 *   - pinned host memory is real, page-aligned memory as the real
 *     driver's is (callers touch it; ggml asserts its alignment), counted
 *     with registered ranges against FAKECUDA_HOST_MEM; managed memory is
 *     real memory too, since host code reads and writes it, but charged
 *     to its device like any device allocation; both are mapped, not
 *     reserved (see map_and_file), so an "80 GiB" allocation costs only
 *     the pages touched;
 *   - each card answers cuDeviceGetAttribute as an H100-, A100- or L4-like
 *     card does (FAKECUDA_CARD: compute capability, SMs, shared memory,
 *     L2, clocks; see g_cards), VMM support included (FAKECUDA_VMM=0: the
 *     attribute says no and cuMemCreate answers CUDA_ERROR_NOT_SUPPORTED);
 *   - streams made by cuStreamCreate are handles the memory calls accept,
 *     and every stream is always idle (there is no work to wait for);
 *   - VMM physical memory is returned when its handle has been released
 *     AND every mapping of it is unmapped, in either order;
 *   - stream-ordered pools keep freed bytes up to their release threshold
 *     (PyTorch's cudaMallocAsync backend sets it to UINT64_MAX) and give
 *     them back on a synchronize or cuMemPoolTrimTo (see
 *     struct CUmemPoolHandle_st); cuMemAllocAsync takes from the device's
 *     current pool (its default one until cuDeviceSetMemPool);
 *   - CUDA_VISIBLE_DEVICES as the real driver reads it: a comma list of
 *     physical indexes or UUID prefixes ("GPU-5a..."), renumbered from 0
 *     in the order given; the list stops at the first entry that names no
 *     card or a card already listed; an empty value hides every card;
 *     unset, every card is visible. Each card keeps its own capacity,
 *     name ("Fake GPU <physical index>") and UUID, which is unique per
 *     physical card and host (the host name is hashed into it). The fake
 *     NVML numbers cards physically, as the real one does.
 * Environment (read once, on cuInit or first use): FAKECUDA_DEVICES (1),
 * FAKECUDA_MEM ("80G"), FAKECUDA_USED ("0") — sizes with K/M/G/T suffix,
 * or a comma list, one per physical device, the last repeating —,
 * FAKECUDA_NAME ("Fake GPU"), FAKECUDA_HOST_MEM ("16G"), FAKECUDA_CARD
 * ("h100"; or "a100", "l4"; a comma list like FAKECUDA_MEM, which then
 * defaults to each card's memory), FAKECUDA_VMM ("1"; a comma list),
 * FAKECUDA_SHARE (unset: each process alone on its cards),
 * CUDA_VISIBLE_DEVICES, FAKECUDA_DEBUG (log calls to stderr; otherwise
 * the library never prints), FAKECUDA_NO_POINTER_QUERY (cuPointerGetAttribute
 * answers CUDA_ERROR_NOT_SUPPORTED: a driver that cannot tell an address's
 * device), FAKECUDA_BENCH (see below).
 *
 * Benchmark mode (FAKECUDA_BENCH=1, for tests/bench only): cuMemAlloc_v2
 * and cuMemFree_v2 take no lock and keep no table, so that what a
 * benchmark measures is the caller (and a preload), not this library's
 * mutex. Each thread hands out addresses from a window of its own
 * (FAKE_BENCH_WINDOW bytes, claimed once with an atomic counter; the
 * window wraps, and a thread never sees another thread's addresses);
 * every free of a non-zero pointer succeeds. Capacity is not charged, so
 * cuMemGetInfo and out-of-memory do not see these allocations. Every
 * other call behaves as without the variable. FAKECUDA_BENCH=reuse also
 * covers cuMemAllocAsync/cuMemFreeAsync and hands addresses back as a
 * caching pool does: a thread's freed block goes on a last-in-first-out
 * list of its size (rounded to 512 B) and the thread's next allocation of
 * that size takes it, so addresses repeat as they do under a real
 * driver's pool (per thread, no lock: a block freed by another thread is
 * not reused).
 *
 * Threads: any thread may call anything. One mutex (g_lock) guards all
 * mutable driver state: the allocation table (streams included), per-
 * device live bytes and bump pointers, VMM reservations and mappings,
 * pools (and each device's current one) and host bytes; mmap and munmap
 * of pinned and managed pages happen outside it.
 * The environment is parsed under pthread_once; g_inited is an atomic set
 * once by cuInit. The current context is a thread-local pointer. In
 * benchmark mode cuMemAlloc_v2/cuMemFree_v2 touch only thread-local state
 * and one atomic counter (g_bench_windows). Nothing here is
 * async-signal-safe, like the real driver.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_api.h"
#include "cuda_api_ext.h"
#include "fake_entries.h"

#define FAKE_MAX_DEV         64
#define FAKE_DEV_RANGE_SHIFT 43 /* 8 TiB of fake addresses per device */
#define FAKE_DEV_ALIGN       512u
#define FAKE_VA_BASE         0x780000000000ull
#define FAKE_VA_LIMIT        0x7c0000000000ull
#define FAKE_GRANULARITY     (2ull << 20)
#define FAKE_CTX_MAGIC       0xC7C7C7C7u
#define FAKE_POOL_MAGIC      0x9001900Du
#define FAKE_DRIVER_VERSION  13000
#define FAKE_BENCH_WINDOW    (1ull << 32) /* per-thread addresses, bench mode */

/* ---- configuration ---------------------------------------------------- */

/*
 * What a card answers besides its memory: the values NVIDIA publishes for
 * an H100 SXM5 80GB, an A100 SXM4 80GB and an L4 (compute capability,
 * SMs, shared memory per SM and per block with opt-in, L2, clocks, memory
 * bus), as cuDeviceGetAttribute reports them. Attributes not listed here
 * take the same value on all three (attr_value()).
 */
struct fake_card {
	const char *key;         /* FAKECUDA_CARD value */
	unsigned long long mem;  /* default capacity */
	int cc_major, cc_minor;
	int sms;
	int clock_khz, mem_clock_khz, bus_width;
	int l2_bytes, persisting_l2_bytes; /* the latter 3/4 of the L2 */
	int smem_per_sm, smem_optin; /* bytes */
	int threads_per_sm, blocks_per_sm;
	int pci_device_id;
};

static const struct fake_card g_cards[] = {
        {"h100", 80ull << 30, 9, 0, 132, 1980000, 2619000, 5120, 52428800,
         39321600, 233472, 232448, 2048, 32, 0x2330},
        {"a100", 80ull << 30, 8, 0, 108, 1410000, 1593000, 5120, 41943040,
         31457280, 167936, 166912, 2048, 32, 0x20b2},
        {"l4", 23034ull << 20, 8, 9, 58, 2040000, 6251000, 192, 50331648,
         37748736, 102400, 101376, 1536, 24, 0x27b8},
};

struct fake_dev {
	unsigned long long cap;  /* total bytes */
	unsigned long long used; /* bytes used by "other processes" */
	unsigned long long live; /* bytes this process holds (g_lock) */
	unsigned long long bump; /* next fake address (g_lock) */
	char name[64];
	CUuuid uuid;
	const struct fake_card *card;
	int vmm; /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
};

struct CUctx_st {
	unsigned magic;
	int ordinal;
	int refs; /* primary-context retain count (g_lock) */
};

#define FAKE_POOL_CHUNKS 256
#define FAKE_MAX_POOLS   64

/* A stream-ordered pool keeps what its frees return, as the real one does,
 * up to its release threshold (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, 0 by
 * default: then a free goes back to the device at once, where the real
 * driver waits for the next synchronize). Kept bytes stay charged to the
 * device (cuMemGetInfo does not count them free; NVML counts them as the
 * process's own) until a synchronize finds the pool above its threshold or
 * cuMemPoolTrimTo trims it. A kept free is a chunk: a later allocation
 * takes the smallest chunk it fits in and leaves the rest there, chunks
 * never join, so a pool can hold more than an allocation asks and still
 * not have room for it (the driver then asks the device, and fails when
 * the device is full: it does not trim the pool for it). */
struct CUmemPoolHandle_st {
	unsigned magic;
	int ordinal;
	int is_default;
	int destroyed; /* pools are never freed: a stale handle stays readable
	                */
	unsigned long long threshold; /* release threshold (g_lock) */
	unsigned long long used;      /* live allocations from it */
	unsigned long long kept;      /* freed bytes it still holds */
	unsigned long long high;      /* most used + kept */
	unsigned long long chunk[FAKE_POOL_CHUNKS]; /* kept, by free */
	int nchunk;
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_inited;
static int g_ndev = 1;  /* visible devices (CUDA ordinals) */
static int g_nphys = 1; /* physical devices (FAKECUDA_DEVICES) */
static int g_debug;
static int g_bench; /* FAKECUDA_BENCH: lock-free cuMemAlloc/cuMemFree;
                     * 2 with "reuse" (freed addresses handed out again) */
static atomic_uint g_bench_windows; /* windows handed out (bench mode) */
static int g_no_ptr_query; /* FAKECUDA_NO_POINTER_QUERY: a driver that
                            * cannot tell an address's device */
static _Thread_local unsigned long long tls_bench_base, tls_bench_off;
static unsigned long long g_host_cap;
static unsigned long long g_host_live; /* pinned + registered (g_lock) */
static struct fake_dev g_dev[FAKE_MAX_DEV]; /* by CUDA ordinal */
static struct fake_dev g_phys[FAKE_MAX_DEV]; /* by physical index */
static int g_phys_of[FAKE_MAX_DEV];         /* ordinal -> physical */
static struct CUctx_st g_ctx[FAKE_MAX_DEV];
static struct CUmemPoolHandle_st g_default_pool[FAKE_MAX_DEV];
static struct CUmemPoolHandle_st *g_cur_pool[FAKE_MAX_DEV]; /* g_lock */
static struct CUmemPoolHandle_st *g_pools[FAKE_MAX_POOLS]; /* created */
static int g_npools;
static _Thread_local CUcontext tls_ctx;

/* FAKECUDA_SHARE: the run's processes on shared cards. Each process owns
 * one slot (claimed by compare-and-swap of its pid) and stores its live
 * bytes per physical card there; readers sum the other slots whose
 * process still exists. A forked child claims a slot of its own, and the
 * bytes it inherited in g_dev are its parent's, not its own (a real
 * child holds no memory of its parent's context). */
#define FAKE_SHARE_SLOTS 64
struct fake_share_slot {
	_Atomic int pid;
	_Atomic unsigned long long live[FAKE_MAX_DEV];
};
static struct fake_share_slot *g_share; /* FAKE_SHARE_SLOTS, or NULL */
static int g_share_fd = -1; /* its file, kept open for the charge lock */
static struct fake_share_slot *g_share_mine; /* g_lock */
static int g_share_tried;                    /* g_lock: a slot looked for */
static unsigned long long g_share_base[FAKE_MAX_DEV]; /* by ordinal: the
                                                       * bytes a fork
                                                       * inherited */

/* In a forked child: no slot yet, and what g_dev holds is the parent's. */
static void share_atfork_child(void)
{
	g_share_mine = NULL;
	g_share_tried = 0;
	for (int o = 0; o < FAKE_MAX_DEV; o++)
		g_share_base[o] = g_dev[o].live;
}

/* Checking that bytes fit and charging them is one step across the
 * run's processes, as on a real card: a POSIX record lock on the share
 * file (held by the process, not inherited by a fork; g_lock already
 * orders this process's threads). Taken with g_lock held. */
static void share_lock(int on)
{
	struct flock l = {.l_type = on ? F_WRLCK : F_UNLCK,
	                  .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	if (!g_share)
		return;
	while (fcntl(g_share_fd, F_SETLKW, &l) != 0 && errno == EINTR)
		;
}

/* This process's own live bytes on ordinal ord's card. */
static unsigned long long share_own(int ord)
{
	unsigned long long l = g_dev[ord].live;
	return l > g_share_base[ord] ? l - g_share_base[ord] : 0;
}

static void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbg(const char *fmt, ...)
{
	va_list ap;
	if (!g_debug)
		return;
	va_start(ap, fmt);
	fputs("fakecuda: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Parses "80G", "512M", "1048576", "1.5G" (binary units). Returns 0 on
 * success. */
static int parse_size(const char *s, size_t len, unsigned long long *out)
{
	char buf[64];
	char *end;
	double v;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	v = strtod(buf, &end);
	if (end == buf || v < 0)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		v *= 1024.0;
		end++;
		break;
	case 'm':
	case 'M':
		v *= 1024.0 * 1024;
		end++;
		break;
	case 'g':
	case 'G':
		v *= 1024.0 * 1024 * 1024;
		end++;
		break;
	case 't':
	case 'T':
		v *= 1024.0 * 1024 * 1024 * 1024;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0')
		return -1;
	*out = (unsigned long long)v;
	return 0;
}

/* Fills vals[0..n) from a comma list; the last value repeats. A malformed
 * entry keeps the default, as a driver ignores a bad tuning variable. */
static void parse_size_list(const char *env, unsigned long long dflt,
                            unsigned long long *vals, int n)
{
	const char *s = getenv(env);
	unsigned long long last = dflt;
	int i = 0;
	while (s && *s && i < n) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		unsigned long long v;
		if (parse_size(s, len, &v) == 0)
			last = v;
		vals[i++] = last;
		s = comma ? comma + 1 : NULL;
	}
	for (; i < n; i++)
		vals[i] = last;
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints. */
static void uuid_text(const CUuuid *u, char *out, size_t n)
{
	const unsigned char *b = (const unsigned char *)u->bytes;
	snprintf(out, n,
	         "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	         "%02x%02x%02x%02x%02x%02x",
	         b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
	         b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* The physical card one CUDA_VISIBLE_DEVICES entry names, or -1: an
 * index, or a unique prefix of a card's UUID. */
static int visible_entry(const char *e, size_t len)
{
	char tok[96], text[64];
	int found = -1;

	while (len && (*e == ' ' || *e == '\t'))
		e++, len--;
	while (len && (e[len - 1] == ' ' || e[len - 1] == '\t'))
		len--;
	if (!len || len >= sizeof(tok))
		return -1;
	memcpy(tok, e, len);
	tok[len] = '\0';
	if (tok[0] >= '0' && tok[0] <= '9') {
		char *end;
		long i = strtol(tok, &end, 10);
		return *end || i >= g_nphys ? -1 : (int)i;
	}
	if (strncmp(tok, "GPU-", 4))
		return -1;
	for (int p = 0; p < g_nphys; p++) {
		uuid_text(&g_phys[p].uuid, text, sizeof(text));
		if (strncmp(text, tok, len))
			continue;
		if (found >= 0)
			return -1; /* ambiguous */
		found = p;
	}
	return found;
}

/* The CUDA ordinals: every physical card, or those CUDA_VISIBLE_DEVICES
 * lists, in its order, up to its first bad entry. */
static void apply_visible(void)
{
	const char *s = getenv("CUDA_VISIBLE_DEVICES");
	int taken[FAKE_MAX_DEV] = {0};

	g_ndev = 0;
	if (!s) {
		for (int p = 0; p < g_nphys; p++)
			g_phys_of[g_ndev++] = p;
	}
	while (s && *s && g_ndev < FAKE_MAX_DEV) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		int p = visible_entry(s, len);
		if (p < 0 || taken[p])
			break;
		taken[p] = 1;
		g_phys_of[g_ndev++] = p;
		s = comma ? comma + 1 : NULL;
	}
	for (int i = 0; i < g_ndev; i++) {
		struct fake_dev *d = &g_dev[i];
		*d = g_phys[g_phys_of[i]];
		d->bump = (unsigned long long)(i + 1) << FAKE_DEV_RANGE_SHIFT;
		g_ctx[i] = (struct CUctx_st){FAKE_CTX_MAGIC, i, 0};
		g_default_pool[i] = (struct CUmemPoolHandle_st){
		        .magic = FAKE_POOL_MAGIC, .ordinal = i, .is_default = 1};
		g_cur_pool[i] = &g_default_pool[i];
	}
}

/* Fills cards[0..n) from FAKECUDA_CARD like parse_size_list; an unknown
 * name keeps the previous card (the first: an H100). */
static void parse_cards(const struct fake_card **cards, int n)
{
	const char *s = getenv("FAKECUDA_CARD");
	const struct fake_card *last = &g_cards[0];
	int i = 0;
	while (s && *s && i < n) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		for (size_t c = 0; c < sizeof(g_cards) / sizeof(g_cards[0]); c++)
			if (strlen(g_cards[c].key) == len &&
			    !strncasecmp(g_cards[c].key, s, len))
				last = &g_cards[c];
		cards[i++] = last;
		s = comma ? comma + 1 : NULL;
	}
	for (; i < n; i++)
		cards[i] = last;
}

/* Maps FAKECUDA_SHARE's file (created as needed, sized for every slot);
 * without it, or when it cannot be mapped, each process is alone. */
static void share_open(const char *path)
{
	size_t len = sizeof(struct fake_share_slot) * FAKE_SHARE_SLOTS;
	struct stat st;
	void *m;
	int fd;
	if (!path || !*path)
		return;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && (size_t)st.st_size < len &&
	    ftruncate(fd, (off_t)len) != 0) {
		close(fd);
		return;
	}
	m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED ||
	    pthread_atfork(NULL, NULL, share_atfork_child) != 0) {
		close(fd);
		return;
	}
	/* A slot under this pid is a former image's (before exec): the
	 * real driver freed its memory at the exec. */
	for (int i = 0; i < FAKE_SHARE_SLOTS; i++) {
		struct fake_share_slot *sl = &((struct fake_share_slot *)m)[i];
		if (atomic_load(&sl->pid) == (int)getpid())
			for (int j = 0; j < FAKE_MAX_DEV; j++)
				atomic_store(&sl->live[j], 0);
	}
	g_share_fd = fd;
	g_share = m;
}

/* A process that holds memory: it exists and is not a zombie (the real
 * driver frees a process's memory when it exits, reaped or not). */
static int pid_alive(int pid)
{
	char path[32], buf[128], *rp;
	ssize_t n;
	int fd;
	if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM))
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	/* "pid (comm) S ...": the state follows the last ')' */
	rp = strrchr(buf, ')');
	return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* Stores this process's own live bytes on ordinal ord's card in its
 * slot (claiming one first). g_lock held. */
static void share_put(int ord)
{
	int me;
	if (!g_share || ord < 0 || ord >= g_ndev)
		return;
	me = (int)getpid();
	for (int i = 0; !g_share_tried && i < FAKE_SHARE_SLOTS; i++) {
		struct fake_share_slot *sl = &g_share[i];
		int old = atomic_load(&sl->pid);
		if (old != me && old != 0 && pid_alive(old))
			continue;
		if (!atomic_compare_exchange_strong(&sl->pid, &old, me))
			continue;
		for (int j = 0; j < FAKE_MAX_DEV; j++)
			atomic_store(&sl->live[j], 0);
		g_share_mine = sl;
		break;
	}
	g_share_tried = 1;
	if (g_share_mine)
		atomic_store(&g_share_mine->live[g_phys_of[ord]],
		             share_own(ord));
}

/* Bytes the other live processes of the run hold on ordinal ord's card. */
static unsigned long long share_others(int ord)
{
	unsigned long long sum = 0;
	int me = (int)getpid();
	if (!g_share || ord < 0 || ord >= g_ndev)
		return 0;
	for (int i = 0; i < FAKE_SHARE_SLOTS; i++) {
		struct fake_share_slot *sl = &g_share[i];
		int pid = atomic_load(&sl->pid);
		if (pid == 0 || pid == me || !pid_alive(pid))
			continue;
		sum += atomic_load(&sl->live[g_phys_of[ord]]);
	}
	return sum;
}

static void parse_env(void)
{
	unsigned long long caps[FAKE_MAX_DEV], used[FAKE_MAX_DEV], host;
	unsigned long long vmm[FAKE_MAX_DEV];
	const struct fake_card *cards[FAKE_MAX_DEV];
	const char *s = getenv("FAKECUDA_DEVICES");
	const char *prefix = getenv("FAKECUDA_NAME");
	const char *bench = getenv("FAKECUDA_BENCH");
	char hostname[256] = "";
	unsigned hash = 2166136261u;
	g_debug = getenv("FAKECUDA_DEBUG") != NULL;
	g_no_ptr_query = getenv("FAKECUDA_NO_POINTER_QUERY") != NULL;
	g_bench = bench && *bench && strcmp(bench, "0") != 0;
	if (g_bench && !strcmp(bench, "reuse"))
		g_bench = 2;
	if (s && *s) {
		long n = strtol(s, NULL, 10);
		g_nphys = n < 0 ? 0 : n > FAKE_MAX_DEV ? FAKE_MAX_DEV : (int)n;
	}
	if (!prefix || !*prefix)
		prefix = "Fake GPU";
	parse_cards(cards, FAKE_MAX_DEV);
	if (getenv("FAKECUDA_MEM"))
		parse_size_list("FAKECUDA_MEM", 80ull << 30, caps, FAKE_MAX_DEV);
	else
		for (int i = 0; i < FAKE_MAX_DEV; i++)
			caps[i] = cards[i]->mem;
	parse_size_list("FAKECUDA_VMM", 1, vmm, FAKE_MAX_DEV);
	parse_size_list("FAKECUDA_USED", 0, used, FAKE_MAX_DEV);
	parse_size_list("FAKECUDA_HOST_MEM", 16ull << 30, &host, 1);
	g_host_cap = host;
	/* UUIDs unique per card and host, as real ones are: the host name
	 * (FNV-1a) goes into every byte. */
	gethostname(hostname, sizeof(hostname) - 1);
	for (const char *h = hostname; *h; h++)
		hash = (hash ^ (unsigned char)*h) * 16777619u;
	for (int i = 0; i < FAKE_MAX_DEV; i++) {
		struct fake_dev *d = &g_phys[i];
		d->cap = caps[i];
		d->used = used[i] > caps[i] ? caps[i] : used[i];
		d->card = cards[i];
		d->vmm = vmm[i] != 0;
		snprintf(d->name, sizeof(d->name), "%s %d", prefix, i);
		for (int b = 0; b < 16; b++)
			d->uuid.bytes[b] =
			        (char)(0x5a ^ (b * 29 + i * 101 + 7) ^
			               (hash >> (8 * (b % 4))));
	}
	apply_visible();
	share_open(getenv("FAKECUDA_SHARE"));
	dbg("%d of %d devices visible, cap[0]=%llu used[0]=%llu host=%llu",
	    g_ndev, g_nphys, g_dev[0].cap, g_dev[0].used, g_host_cap);
}

static void ensure_env(void)
{
	pthread_once(&g_once, parse_env);
}

/* Every entry point but the resolver, the version and the error names. */
static CUresult check_init(void)
{
	ensure_env();
	return atomic_load(&g_inited) ? CUDA_SUCCESS
	                              : CUDA_ERROR_NOT_INITIALIZED;
}

/* Device of the calling thread's current context. */
static CUresult current_dev(int *ord)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	*ord = tls_ctx->ordinal;
	return CUDA_SUCCESS;
}

static int valid_dev(CUdevice dev)
{
	return dev >= 0 && dev < g_ndev;
}

/* ---- the allocation table (g_lock) ------------------------------------ */

enum space {
	SP_DEV = 1,    /* device pointers: device, pitch, async, managed */
	SP_PINNED = 2, /* host pointers from cuMemHostAlloc/AllocHost */
	SP_REG = 3,    /* registered host ranges, keyed by start */
	SP_HANDLE = 4, /* VMM physical handles */
	SP_VA = 5,     /* VMM address reservations, keyed by base */
	SP_MAP = 6,    /* VMM mappings, keyed by mapped address */
	SP_STREAM = 7, /* streams from cuStreamCreate, keyed by handle */
};

enum kind { K_DEVICE, K_ASYNC, K_MANAGED, K_HOST, K_VMM, K_VA };

struct entry {
	struct entry *next;
	unsigned long long key;
	unsigned long long size;
	unsigned long long aux; /* SP_MAP: handle; SP_HANDLE: live maps */
	int space;
	int dev;
	int kind;
	int released; /* SP_HANDLE: cuMemRelease seen */
};

static struct entry **g_buckets;
static size_t g_nbuckets;
static size_t g_nentries;
static unsigned long long g_next_handle = 0x100001;

static size_t bucket_of(int space, unsigned long long key, size_t n)
{
	unsigned long long h = (key ^ ((unsigned long long)space << 58)) *
	                       0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 20) & (n - 1);
}

static int table_grow(void)
{
	size_t n = g_nbuckets ? g_nbuckets * 2 : 4096;
	struct entry **b = calloc(n, sizeof(*b));
	if (!b)
		return -1;
	for (size_t i = 0; i < g_nbuckets; i++) {
		struct entry *e = g_buckets[i], *next;
		for (; e; e = next) {
			size_t j = bucket_of(e->space, e->key, n);
			next = e->next;
			e->next = b[j];
			b[j] = e;
		}
	}
	free(g_buckets);
	g_buckets = b;
	g_nbuckets = n;
	return 0;
}

static struct entry *table_find(int space, unsigned long long key)
{
	if (!g_nbuckets)
		return NULL;
	for (struct entry *e = g_buckets[bucket_of(space, key, g_nbuckets)]; e;
	     e = e->next)
		if (e->space == space && e->key == key)
			return e;
	return NULL;
}

static struct entry *table_add(int space, unsigned long long key,
                               unsigned long long size, int dev, int kind)
{
	struct entry *e;
	size_t i;
	if (g_nentries >= g_nbuckets && table_grow())
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = key;
	e->size = size;
	e->space = space;
	e->dev = dev;
	e->kind = kind;
	i = bucket_of(space, key, g_nbuckets);
	e->next = g_buckets[i];
	g_buckets[i] = e;
	g_nentries++;
	return e;
}

static void table_del(struct entry *victim)
{
	struct entry **pp =
	        &g_buckets[bucket_of(victim->space, victim->key, g_nbuckets)];
	for (; *pp; pp = &(*pp)->next) {
		if (*pp == victim) {
			*pp = victim->next;
			free(victim);
			g_nentries--;
			return;
		}
	}
}

/* First entry of a space that match() accepts; a linear scan, used only
 * for VMM entries, which are few. */
static struct entry *
table_scan(int space, int (*match)(const struct entry *, void *), void *arg)
{
	for (size_t i = 0; i < g_nbuckets; i++)
		for (struct entry *e = g_buckets[i]; e; e = e->next)
			if (e->space == space && match(e, arg))
				return e;
	return NULL;
}

/* ---- device allocations ----------------------------------------------- */

/* Memory held on ordinal ord's card by everything but this process:
 * FAKECUDA_USED and the run's other processes (FAKECUDA_SHARE); a forked
 * child's inherited bytes are its parent's, counted in the parent's
 * slot, so they come off here (live still holds them). */
static unsigned long long held_by_others(int ord)
{
	unsigned long long u = g_dev[ord].used + share_others(ord);
	u = u > g_share_base[ord] ? u - g_share_base[ord] : 0;
	return u > g_dev[ord].cap ? g_dev[ord].cap : u;
}

static int fits(const struct fake_dev *d, unsigned long long bytes)
{
	unsigned long long others = held_by_others((int)(d - g_dev));
	return bytes <= d->cap && others + d->live <= d->cap - bytes;
}

/* Takes bytes from the smallest kept chunk of pool p they fit in (the
 * rest of the chunk stays kept); 0 when none is big enough. g_lock held. */
static int pool_take(struct CUmemPoolHandle_st *p, unsigned long long bytes)
{
	int best = -1;
	for (int i = 0; i < p->nchunk; i++)
		if (p->chunk[i] >= bytes &&
		    (best < 0 || p->chunk[i] < p->chunk[best]))
			best = i;
	if (best < 0)
		return 0;
	p->chunk[best] -= bytes;
	p->kept -= bytes;
	if (!p->chunk[best])
		p->chunk[best] = p->chunk[--p->nchunk];
	return 1;
}

/* Gives kept chunks back to the device, last kept first, until the pool
 * reserves no more than keep bytes (what it lends out stays). g_lock held. */
static void pool_trim(struct CUmemPoolHandle_st *p, unsigned long long keep)
{
	while (p->nchunk && p->used + p->kept > keep) {
		unsigned long long c = p->chunk[--p->nchunk];
		p->kept -= c;
		g_dev[p->ordinal].live -= c;
		share_put(p->ordinal);
	}
}

/* Charges bytes on device ord and hands out a fresh fake address; a
 * stream-ordered allocation (pool set) first looks for room in what its
 * pool kept. */
static CUresult dev_alloc(CUdeviceptr *dptr, unsigned long long bytes, int ord,
                          int kind, struct CUmemPoolHandle_st *pool,
                          const char *api)
{
	struct fake_dev *d = &g_dev[ord];
	unsigned long long limit = (unsigned long long)(ord + 2)
	                           << FAKE_DEV_RANGE_SHIFT;
	unsigned long long step;
	struct entry *e;
	int taken;
	CUresult r = CUDA_SUCCESS;
	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	*dptr = 0;
	if (bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	step = (bytes + FAKE_DEV_ALIGN - 1) &
	       ~(unsigned long long)(FAKE_DEV_ALIGN - 1);
	pthread_mutex_lock(&g_lock);
	share_lock(1);
	taken = step <= limit - d->bump && pool && pool_take(pool, bytes);
	if (step > limit - d->bump || (!taken && !fits(d, bytes))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (!(e = table_add(SP_DEV, d->bump, bytes, ord, kind))) {
		r = CUDA_ERROR_OUT_OF_MEMORY; /* the fake's own malloc failed */
		if (taken) { /* what the pool lent goes back to the device */
			pool->kept += bytes;
			pool_trim(pool, 0);
		}
	} else {
		*dptr = d->bump;
		d->bump += step;
		if (!taken) /* kept bytes are charged already */
			d->live += bytes;
		share_put(ord);
		if (pool) {
			e->aux = (unsigned long long)(uintptr_t)pool;
			pool->used += bytes;
			if (pool->used + pool->kept > pool->high)
				pool->high = pool->used + pool->kept;
		}
	}
	share_lock(0);
	pthread_mutex_unlock(&g_lock);
	dbg("%s(%llu) dev %d -> %d 0x%llx", api, bytes, ord, (int)r,
	    (unsigned long long)*dptr);
	return r;
}

static CUresult dev_free(CUdeviceptr dptr, const char *api)
{
	CUresult r = CUDA_SUCCESS;
	struct entry *e;
	unsigned long long unmap = 0;
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_DEV, dptr);
	if (!e) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		if (e->kind == K_MANAGED)
			unmap = e->size;
		struct CUmemPoolHandle_st *p =
		        (struct CUmemPoolHandle_st *)(uintptr_t)e->aux;
		g_dev[e->dev].live -= e->size;
		if (p) {
			p->used -= e->size;
			if (p->threshold && p->nchunk < FAKE_POOL_CHUNKS) {
				p->chunk[p->nchunk++] = e->size;
				p->kept += e->size;
				g_dev[e->dev].live += e->size;
			}
		}
		share_put(e->dev);
		table_del(e);
	}
	pthread_mutex_unlock(&g_lock);
	if (unmap)
		munmap((void *)(uintptr_t)dptr, unmap);
	dbg("%s(0x%llx) -> %d", api, (unsigned long long)dptr, (int)r);
	return r;
}

/* Benchmark mode: a fresh address from this thread's window, no lock, no
 * table, no capacity check. The windows sit in the upper half of the
 * device's range (the normal bump pointer starts at the bottom); past the
 * last window they wrap around within that half. */
static CUresult bench_dev_alloc(CUdeviceptr *dptr, unsigned long long bytes,
                                int ord)
{
	unsigned long long step;
	if (!dptr || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	step = (bytes + FAKE_DEV_ALIGN - 1) &
	       ~(unsigned long long)(FAKE_DEV_ALIGN - 1);
	if (step > FAKE_BENCH_WINDOW)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!tls_bench_base) {
		unsigned half =
		        (unsigned)((1ull << (FAKE_DEV_RANGE_SHIFT - 1)) /
		                   FAKE_BENCH_WINDOW);
		unsigned w = atomic_fetch_add(&g_bench_windows, 1) % half;
		tls_bench_base = (1ull << (FAKE_DEV_RANGE_SHIFT - 1)) +
		                 (unsigned long long)w * FAKE_BENCH_WINDOW;
	}
	if (tls_bench_off + step > FAKE_BENCH_WINDOW)
		tls_bench_off = 0;
	*dptr = ((unsigned long long)(ord + 1) << FAKE_DEV_RANGE_SHIFT) +
	        tls_bench_base + tls_bench_off;
	tls_bench_off += step;
	return CUDA_SUCCESS;
}

/* FAKECUDA_BENCH=reuse: a thread's live blocks (address -> rounded size,
 * linear probing) and its freed blocks, one last-in-first-out list per
 * rounded size. Made on the thread's first allocation; a thread that
 * fills either table goes on without reuse for what does not fit. */
#define POOL_LIVE_BITS 15
#define POOL_CLASSES   1024
#define POOL_LIFO      32

struct bench_pool {
	struct {
		unsigned long long addr, step;
	} live[1u << POOL_LIVE_BITS];
	unsigned nlive;
	struct {
		unsigned long long step;
		unsigned n;
		unsigned long long addr[POOL_LIFO];
	} cls[POOL_CLASSES];
};

static _Thread_local struct bench_pool *tls_pool;

static unsigned pool_hash(unsigned long long v, unsigned bits)
{
	return (unsigned)(((v >> 9) * 0x9e3779b97f4a7c15ull) >> (64 - bits));
}

/* The free list of a rounded size, made when add and missing; NULL when
 * there is none (or no room for it). */
static unsigned long long *pool_class(struct bench_pool *bp,
                                      unsigned long long step, unsigned **n,
                                      int add)
{
	unsigned i = pool_hash(step << 9, 10);
	for (unsigned k = 0; k < POOL_CLASSES; k++, i = (i + 1) % POOL_CLASSES) {
		if (bp->cls[i].step == step) {
			*n = &bp->cls[i].n;
			return bp->cls[i].addr;
		}
		if (!bp->cls[i].step) {
			if (!add)
				return NULL;
			bp->cls[i].step = step;
			*n = &bp->cls[i].n;
			return bp->cls[i].addr;
		}
	}
	return NULL;
}

static void pool_track(struct bench_pool *bp, unsigned long long addr,
                       unsigned long long step)
{
	const unsigned cap = 1u << POOL_LIVE_BITS;
	if (bp->nlive >= cap / 2)
		return; /* full enough: this block is not reused */
	unsigned i = pool_hash(addr, POOL_LIVE_BITS);
	while (bp->live[i].addr)
		i = (i + 1) & (cap - 1);
	bp->live[i].addr = addr;
	bp->live[i].step = step;
	bp->nlive++;
}

/* Puts a block of this thread back on its size's list (backward-shift
 * deletion keeps the probe chains whole). */
static void pool_release(unsigned long long addr)
{
	const unsigned cap = 1u << POOL_LIVE_BITS;
	struct bench_pool *bp = tls_pool;
	if (!bp)
		return;
	unsigned i = pool_hash(addr, POOL_LIVE_BITS);
	while (bp->live[i].addr && bp->live[i].addr != addr)
		i = (i + 1) & (cap - 1);
	if (!bp->live[i].addr)
		return; /* another thread's, or untracked */
	unsigned long long step = bp->live[i].step, *lifo;
	unsigned *n;
	for (unsigned j = (i + 1) & (cap - 1); bp->live[j].addr;
	     j = (j + 1) & (cap - 1)) {
		unsigned h = pool_hash(bp->live[j].addr, POOL_LIVE_BITS);
		if (((j - h) & (cap - 1)) >= ((j - i) & (cap - 1))) {
			bp->live[i] = bp->live[j];
			i = j;
		}
	}
	bp->live[i].addr = 0;
	bp->nlive--;
	lifo = pool_class(bp, step, &n, 1);
	if (lifo && *n < POOL_LIFO)
		lifo[(*n)++] = addr;
}

/* Benchmark reuse mode: the last freed block of this size, else a fresh
 * address from the thread's window. */
static CUresult bench_pool_alloc(CUdeviceptr *dptr, unsigned long long bytes,
                                 int ord)
{
	unsigned long long step, *lifo;
	unsigned *n;
	if (!dptr || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!tls_pool && !(tls_pool = calloc(1, sizeof(*tls_pool))))
		return CUDA_ERROR_OUT_OF_MEMORY;
	step = (bytes + FAKE_DEV_ALIGN - 1) &
	       ~(unsigned long long)(FAKE_DEV_ALIGN - 1);
	lifo = pool_class(tls_pool, step, &n, 0);
	if (lifo && *n) {
		*dptr = lifo[--*n];
	} else {
		CUresult r = bench_dev_alloc(dptr, bytes, ord);
		if (r != CUDA_SUCCESS)
			return r;
	}
	pool_track(tls_pool, *dptr, step);
	return CUDA_SUCCESS;
}

/* The second half of an allocation of real memory (pinned or managed:
 * host code touches it) whose bytes the caller has charged under g_lock:
 * the pages are mapped (outside the lock), not reserved, so only touched
 * pages cost anything, page-aligned as the real driver's are, and never
 * filled by the C library (MALLOC_PERTURB_ would write every byte of a
 * malloc'd block); then the mapping is filed in the table. NULL when
 * either fails, the charge given back. */
static void *map_and_file(int space, int dev, int kind,
                          unsigned long long bytes,
                          unsigned long long *charge)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int ok;
	pthread_mutex_lock(&g_lock);
	ok = p != MAP_FAILED && table_add(space, (uintptr_t)p, bytes, dev, kind);
	if (!ok)
		*charge -= bytes;
	if (space == SP_DEV)
		share_put(dev);
	pthread_mutex_unlock(&g_lock);
	if (!ok && p != MAP_FAILED)
		munmap(p, bytes);
	return ok ? p : NULL;
}

/* Managed memory, charged to device ord like any device allocation. */
static CUresult managed_alloc(CUdeviceptr *dptr, unsigned long long bytes,
                              int ord)
{
	struct fake_dev *d = &g_dev[ord];
	void *p = NULL;
	int fit;
	*dptr = 0;
	pthread_mutex_lock(&g_lock);
	share_lock(1);
	fit = fits(d, bytes);
	if (fit)
		d->live += bytes;
	share_put(ord);
	share_lock(0);
	pthread_mutex_unlock(&g_lock);
	if (fit && (p = map_and_file(SP_DEV, ord, K_MANAGED, bytes, &d->live)))
		*dptr = (uintptr_t)p;
	dbg("cuMemAllocManaged(%llu) dev %d -> %p", bytes, ord, p);
	return p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (g_bench == 2)
		return bench_pool_alloc(dptr, bytesize, ord);
	if (g_bench)
		return bench_dev_alloc(dptr, bytesize, ord);
	return dev_alloc(dptr, bytesize, ord, K_DEVICE, NULL, "cuMemAlloc_v2");
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
                            size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
	int ord;
	size_t pitch;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
	     ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (WidthInBytes + 511) & ~(size_t)511;
	r = dev_alloc(dptr, (unsigned long long)pitch * Height, ord, K_DEVICE, NULL,
	              "cuMemAllocPitch_v2");
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (dptr == 0)
		return CUDA_SUCCESS; /* cudaFree(0) idiom: nothing happens */
	if (g_bench == 2)
		pool_release(dptr);
	if (g_bench)
		return CUDA_SUCCESS; /* benchmark mode keeps no table */
	return dev_free(dptr, "cuMemFree_v2");
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
                           unsigned int flags)
{
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!dptr || bytesize == 0 ||
	    (flags != 1 && flags != 2)) /* ATTACH_GLOBAL or ATTACH_HOST */
		return CUDA_ERROR_INVALID_VALUE;
	return managed_alloc(dptr, bytesize, ord);
}

/* The device of a device allocation, by its start address (the real
 * driver also answers for addresses inside it; vramtrace asks for starts
 * only). Benchmark mode keeps no table: the address range tells. Like the
 * strictest reading of the driver's documentation, a thread with no
 * current context gets CUDA_ERROR_INVALID_CONTEXT. */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
                               CUdeviceptr ptr)
{
	CUresult r = check_init();
	struct entry *e;
	if (r != CUDA_SUCCESS)
		return r;
	if (g_no_ptr_query)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!data || attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		return CUDA_ERROR_INVALID_VALUE;
	if (g_bench) {
		unsigned long long ord = (ptr >> FAKE_DEV_RANGE_SHIFT) - 1;
		if (ptr >> FAKE_DEV_RANGE_SHIFT == 0 || ord >= (unsigned)g_ndev)
			return CUDA_ERROR_INVALID_VALUE;
		*(int *)data = (int)ord;
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_DEV, ptr);
	if (e)
		*(int *)data = e->dev;
	pthread_mutex_unlock(&g_lock);
	dbg("cuPointerGetAttribute(DEVICE_ORDINAL, 0x%llx) -> %d", ptr,
	    e ? 0 : 1);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* For the fake NVML only (not a CUDA call): the state of a device. */
int fakecuda_device_count(void);
int fakecuda_device_state(int ordinal, unsigned long long *cap,
                          unsigned long long *used_by_others,
                          unsigned long long *live, unsigned char uuid[16]);

int fakecuda_device_count(void)
{
	ensure_env();
	return g_nphys;
}

/* By physical index, as NVML numbers cards: a card this process cannot
 * see (CUDA_VISIBLE_DEVICES) holds none of its bytes. */
int fakecuda_device_state(int phys, unsigned long long *cap,
                          unsigned long long *used_by_others,
                          unsigned long long *live, unsigned char uuid[16])
{
	const struct fake_dev *d;
	int ord;

	ensure_env();
	if (phys < 0 || phys >= g_nphys)
		return -1;
	for (ord = 0; ord < g_ndev && g_phys_of[ord] != phys; ord++)
		;
	pthread_mutex_lock(&g_lock);
	d = ord < g_ndev ? &g_dev[ord] : &g_phys[phys];
	*cap = d->cap;
	*used_by_others = ord < g_ndev ? held_by_others(ord) : d->used;
	*live = ord < g_ndev ? d->live : 0;
	memcpy(uuid, d->uuid.bytes, 16);
	pthread_mutex_unlock(&g_lock);
	return 0;
}

/* The allocation that starts at dptr (vramtrace asks for starts only). */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize,
                                 CUdeviceptr dptr)
{
	CUresult r = check_init();
	struct entry *e;
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&g_lock);
	e = g_bench ? NULL : table_find(SP_DEV, dptr);
	if (e) {
		if (pbase)
			*pbase = dptr;
		if (psize)
			*psize = (size_t)e->size;
	}
	pthread_mutex_unlock(&g_lock);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

#ifdef FAKE_ODD_PROLOGUES
FAKE_BODY_DECL(CUresult, cuMemGetInfo_v2, (size_t *, size_t *));
#endif
CUresult FAKE_ODD_BODY(cuMemGetInfo_v2)(size_t *free_bytes, size_t *total)
{
	int ord;
	struct fake_dev *d;
	unsigned long long others;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!free_bytes || !total)
		return CUDA_ERROR_INVALID_VALUE;
	d = &g_dev[ord];
	pthread_mutex_lock(&g_lock);
	*total = d->cap;
	others = held_by_others(ord);
	*free_bytes = others + d->live >= d->cap ? 0 : d->cap - others - d->live;
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

/* ---- stream-ordered allocations and pools ----------------------------- */

/* A stream handle: one of the special ones, or one cuStreamCreate made
 * and nobody destroyed (the table knows; a handle is never read). */
static int valid_stream(CUstream s)
{
	int found;
	if (s == NULL || s == FAKECUDA_STREAM_LEGACY ||
	    s == FAKECUDA_STREAM_PER_THREAD)
		return 1;
	pthread_mutex_lock(&g_lock);
	found = table_find(SP_STREAM, (uintptr_t)s) != NULL;
	pthread_mutex_unlock(&g_lock);
	return found;
}

/* A created stream is a byte of heap, for a unique address that is never
 * read, and a table entry keyed by it (its device; no flags or priority
 * are kept: nobody asks). */
static CUresult stream_create(CUstream *ph, unsigned int flags)
{
	void *h;
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!ph || (flags & ~1u)) /* CU_STREAM_NON_BLOCKING */
		return CUDA_ERROR_INVALID_VALUE;
	if (!(h = malloc(1)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&g_lock);
	if (!table_add(SP_STREAM, (uintptr_t)h, 0, ord, 0))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&g_lock);
	if (r != CUDA_SUCCESS)
		free(h);
	else
		*ph = h;
	dbg("cuStreamCreate(%u) -> %d %p", flags, (int)r, h);
	return r;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return stream_create(phStream, Flags);
}

/* Priorities are accepted and forgotten: nothing runs to order. */
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
                                    int priority)
{
	(void)priority;
	return stream_create(phStream, flags);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
	struct entry *e;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&g_lock);
	e = hStream ? table_find(SP_STREAM, (uintptr_t)hStream) : NULL;
	if (e)
		table_del(e);
	pthread_mutex_unlock(&g_lock);
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	free(hStream);
	return CUDA_SUCCESS;
}

/* Every stream is idle: there is never work in flight. */
CUresult cuStreamQuery(CUstream hStream)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	return valid_stream(hStream) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	return cuStreamQuery(hStream);
}

/* From the device's current pool (cuDeviceSetMemPool; its default pool
 * unless changed), as the real cuMemAllocAsync does. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize,
                            CUstream hStream, const char *api)
{
	struct CUmemPoolHandle_st *pool;
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_stream(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (g_bench == 2)
		return bench_pool_alloc(dptr, bytesize, ord);
	pthread_mutex_lock(&g_lock);
	pool = g_cur_pool[ord];
	pthread_mutex_unlock(&g_lock);
	return dev_alloc(dptr, bytesize, ord, K_ASYNC, pool, api);
}

static CUresult alloc_pool(CUdeviceptr *dptr, size_t bytesize,
                           CUmemoryPool pool, CUstream hStream, const char *api)
{
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_stream(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (!pool || pool->magic != FAKE_POOL_MAGIC || pool->destroyed)
		return CUDA_ERROR_INVALID_VALUE;
	return dev_alloc(dptr, bytesize, pool->ordinal, K_ASYNC, pool, api);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream, const char *api)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!valid_stream(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	if (dptr == 0)
		return CUDA_SUCCESS; /* like cuMemFree_v2(0) */
	if (g_bench == 2) {
		pool_release(dptr);
		return CUDA_SUCCESS;
	}
	return dev_free(dptr, api);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream, "cuMemAllocAsync");
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                              CUstream hStream)
{
	return alloc_async(dptr, bytesize, hStream, "cuMemAllocAsync_ptsz");
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
                                 CUmemoryPool pool, CUstream hStream)
{
	return alloc_pool(dptr, bytesize, pool, hStream,
	                  "cuMemAllocFromPoolAsync");
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
                                      CUmemoryPool pool, CUstream hStream)
{
	return alloc_pool(dptr, bytesize, pool, hStream,
	                  "cuMemAllocFromPoolAsync_ptsz");
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, "cuMemFreeAsync");
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, "cuMemFreeAsync_ptsz");
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pool_out = &g_default_pool[dev];
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_lock);
	*pool = g_cur_pool[dev];
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

static int valid_pool(CUmemoryPool pool);

/* A pool becomes its device's current one: cuMemAllocAsync takes from it
 * from now on. */
CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	if (!valid_pool(pool) || pool->ordinal != dev)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	g_cur_pool[dev] = pool;
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct CUmemPoolHandle_st *p;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pool || !poolProps ||
	    poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(poolProps->location.id))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_lock);
	p = g_npools < FAKE_MAX_POOLS ? calloc(1, sizeof(*p)) : NULL;
	if (p)
		g_pools[g_npools++] = p;
	pthread_mutex_unlock(&g_lock);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (struct CUmemPoolHandle_st){.magic = FAKE_POOL_MAGIC,
	                                 .ordinal = poolProps->location.id};
	*pool = p;
	return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pool || pool->magic != FAKE_POOL_MAGIC || pool->is_default ||
	    pool->destroyed)
		return CUDA_ERROR_INVALID_VALUE;
	/* Kept allocated so a stale handle is detected, not dereferenced
	 * after free. A device whose current pool it was goes back to its
	 * default pool. */
	pthread_mutex_lock(&g_lock);
	pool->destroyed = 1;
	if (g_cur_pool[pool->ordinal] == pool)
		g_cur_pool[pool->ordinal] = &g_default_pool[pool->ordinal];
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

static int valid_pool(CUmemoryPool pool)
{
	return pool && pool->magic == FAKE_POOL_MAGIC && !pool->destroyed;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_pool(pool) || !value)
		return CUDA_ERROR_INVALID_VALUE;
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		return CUDA_SUCCESS; /* reuse policy: the fake always reuses */
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		pthread_mutex_lock(&g_lock);
		memcpy(&pool->threshold, value, sizeof(pool->threshold));
		pthread_mutex_unlock(&g_lock);
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		return CUDA_SUCCESS; /* a reset: the fake keeps one high mark */
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                               void *value)
{
	unsigned long long v;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_pool(pool) || !value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = pool->threshold; break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		v = pool->used + pool->kept;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = pool->high; break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = pool->used; break;
	default: r = CUDA_ERROR_INVALID_VALUE; break;
	}
	pthread_mutex_unlock(&g_lock);
	if (r == CUDA_SUCCESS)
		memcpy(value, &v, sizeof(v));
	return r;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_pool(pool))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	pool_trim(pool, minBytesToKeep);
	pthread_mutex_unlock(&g_lock);
	return CUDA_SUCCESS;
}

/* A synchronize is where the real driver gives a pool's bytes above its
 * release threshold back to the device. */
static void sync_pools(void)
{
	pthread_mutex_lock(&g_lock);
	for (int i = 0; i < g_ndev; i++)
		pool_trim(&g_default_pool[i], g_default_pool[i].threshold);
	for (int i = 0; i < g_npools; i++)
		if (!g_pools[i]->destroyed)
			pool_trim(g_pools[i], g_pools[i]->threshold);
	pthread_mutex_unlock(&g_lock);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!valid_stream(hStream))
		return CUDA_ERROR_INVALID_HANDLE;
	sync_pools();
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return cuStreamSynchronize(hStream);
}

CUresult cuCtxSynchronize(void)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	sync_pools();
	return CUDA_SUCCESS;
}

/* ---- virtual memory management ---------------------------------------- */

static unsigned long long g_va_bump = FAKE_VA_BASE; /* g_lock */

struct range {
	unsigned long long lo, hi;
};

static int va_covers(const struct entry *e, void *arg)
{
	const struct range *r = arg;
	return r->lo >= e->key && r->hi <= e->key + e->size;
}

static int map_overlaps(const struct entry *e, void *arg)
{
	const struct range *r = arg;
	return r->lo < e->key + e->size && e->key < r->hi;
}

CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                       const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = FAKE_GRANULARITY;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                             CUdeviceptr addr, unsigned long long flags)
{
	unsigned long long align, base;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!ptr || size == 0 || size % FAKE_GRANULARITY || flags ||
	    (alignment & (alignment - 1)))
		return CUDA_ERROR_INVALID_VALUE;
	*ptr = 0;
	align = alignment > FAKE_GRANULARITY ? alignment : FAKE_GRANULARITY;
	pthread_mutex_lock(&g_lock);
	/* The address hint is only a hint; the fake never honours it. */
	base = (g_va_bump + align - 1) & ~(align - 1);
	if (base + size > FAKE_VA_LIMIT || base + size < base) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (!table_add(SP_VA, base, size, -1, K_VA)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		g_va_bump = base + size;
		*ptr = base;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemAddressReserve(%zu) -> %d 0x%llx", size, (int)r,
	    (unsigned long long)*ptr);
	return r;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct entry *e;
	struct range rg = {ptr, ptr + size};
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_VA, ptr);
	if (!e || e->size != size || table_scan(SP_MAP, map_overlaps, &rg))
		r = CUDA_ERROR_INVALID_VALUE;
	else
		table_del(e);
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemAddressFree(0x%llx, %zu) -> %d", (unsigned long long)ptr,
	    size, (int)r);
	return r;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct fake_dev *d;
	int ord;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!handle || !prop || flags || size == 0 || size % FAKE_GRANULARITY ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	ord = prop->location.id;
	if (!valid_dev(ord))
		return CUDA_ERROR_INVALID_DEVICE;
	d = &g_dev[ord];
	if (!d->vmm)
		return CUDA_ERROR_NOT_SUPPORTED; /* FAKECUDA_VMM=0 */
	*handle = 0;
	pthread_mutex_lock(&g_lock);
	share_lock(1);
	if (!fits(d, size)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (!table_add(SP_HANDLE, g_next_handle, size, ord, K_VMM)) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*handle = g_next_handle;
		g_next_handle += 0x10;
		d->live += size;
		share_put(ord);
	}
	share_lock(0);
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemCreate(%zu, dev %d) -> %d 0x%llx", size, ord, (int)r,
	    (unsigned long long)*handle);
	return r;
}

/* Returns the physical bytes of a handle once released and unmapped. */
static void handle_maybe_drop(struct entry *h)
{
	if (h->released && h->aux == 0) {
		g_dev[h->dev].live -= h->size;
		share_put(h->dev);
		table_del(h);
	}
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct entry *h;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	pthread_mutex_lock(&g_lock);
	h = table_find(SP_HANDLE, handle);
	if (!h || h->released) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		h->released = 1;
		handle_maybe_drop(h);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemRelease(0x%llx) -> %d", (unsigned long long)handle, (int)r);
	return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct entry *h, *m;
	struct range rg = {ptr, ptr + size};
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (size == 0 || flags || ptr % FAKE_GRANULARITY ||
	    size % FAKE_GRANULARITY || offset % FAKE_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	h = table_find(SP_HANDLE, handle);
	if (!h || h->released || offset > h->size || size > h->size - offset ||
	    !table_scan(SP_VA, va_covers, &rg) ||
	    table_scan(SP_MAP, map_overlaps, &rg)) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else if (!(m = table_add(SP_MAP, ptr, size, h->dev, K_VMM))) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		m->aux = handle;
		h->aux++;
	}
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemMap(0x%llx, %zu, handle 0x%llx) -> %d",
	    (unsigned long long)ptr, size, (unsigned long long)handle, (int)r);
	return r;
}

/* Unmaps every mapping inside [ptr, ptr+size); a range that cuts a mapping
 * or covers none is an error, and then nothing is unmapped. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct range rg = {ptr, ptr + size};
	struct entry *m;
	unsigned long long covered = 0;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < g_nbuckets; i++)
		for (m = g_buckets[i]; m; m = m->next)
			if (m->space == SP_MAP && map_overlaps(m, &rg)) {
				if (m->key < rg.lo || m->key + m->size > rg.hi)
					r = CUDA_ERROR_INVALID_VALUE;
				covered++;
			}
	if (covered == 0)
		r = CUDA_ERROR_INVALID_VALUE;
	while (r == CUDA_SUCCESS &&
	       (m = table_scan(SP_MAP, map_overlaps, &rg))) {
		struct entry *h = table_find(SP_HANDLE, m->aux);
		table_del(m);
		if (h) {
			h->aux--;
			handle_maybe_drop(h);
		}
	}
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemUnmap(0x%llx, %zu) -> %d", (unsigned long long)ptr, size,
	    (int)r);
	return r;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
                        const CUmemAccessDesc *desc, size_t count)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	return desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- host memory ------------------------------------------------------ */

static int host_fits(unsigned long long bytes)
{
	return bytes <= g_host_cap && g_host_live <= g_host_cap - bytes;
}

static CUresult host_alloc(void **pp, size_t bytesize, const char *api)
{
	void *p = NULL;
	int fit;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!pp || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	*pp = NULL;
	pthread_mutex_lock(&g_lock);
	fit = host_fits(bytesize);
	if (fit)
		g_host_live += bytesize;
	pthread_mutex_unlock(&g_lock);
	if (fit && (p = map_and_file(SP_PINNED, -1, K_HOST, bytesize,
	                             &g_host_live)))
		*pp = p;
	r = p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	dbg("%s(%zu) -> %d %p", api, bytesize, (int)r, p);
	return r;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	if (Flags & ~0xfu)
		return CUDA_ERROR_INVALID_VALUE;
	return host_alloc(pp, bytesize, "cuMemHostAlloc");
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	return host_alloc(pp, bytesize, "cuMemAllocHost_v2");
}

FAKE_BODY_DECL(CUresult, cuMemFreeHost, (void *));
CUresult FAKE_BODY(cuMemFreeHost)(void *p)
{
	struct entry *e;
	unsigned long long size = 0;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p)
		return CUDA_SUCCESS; /* like free(NULL) */
	pthread_mutex_lock(&g_lock);
	e = table_find(SP_PINNED, (uintptr_t)p);
	if (!e) {
		r = CUDA_ERROR_INVALID_VALUE;
	} else {
		size = e->size;
		g_host_live -= size;
		table_del(e);
	}
	pthread_mutex_unlock(&g_lock);
	if (r == CUDA_SUCCESS)
		munmap(p, size);
	dbg("cuMemFreeHost(%p) -> %d", p, (int)r);
	return r;
}

#ifdef FAKE_ODD_PROLOGUES
FAKE_BODY_DECL(CUresult, cuMemHostRegister_v2, (void *, size_t, unsigned));
#endif
CUresult FAKE_ODD_BODY(cuMemHostRegister_v2)(void *p, size_t bytesize,
                                             unsigned int Flags)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p || bytesize == 0 || (Flags & ~0xfu))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&g_lock);
	if (table_find(SP_REG, (uintptr_t)p) ||
	    table_find(SP_PINNED, (uintptr_t)p))
		r = FAKECUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	else if (!host_fits(bytesize) ||
	         !table_add(SP_REG, (uintptr_t)p, bytesize, -1, K_HOST))
		r = CUDA_ERROR_OUT_OF_MEMORY;
	else
		g_host_live += bytesize;
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemHostRegister_v2(%p, %zu) -> %d", p, bytesize, (int)r);
	return r;
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	return cuMemHostRegister_v2(p, bytesize, Flags);
}

#ifdef FAKE_ODD_PROLOGUES
FAKE_BODY_DECL(CUresult, cuMemHostUnregister, (void *));
#endif
CUresult FAKE_ODD_BODY(cuMemHostUnregister)(void *p)
{
	struct entry *e;
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!tls_ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_lock(&g_lock);
	e = p ? table_find(SP_REG, (uintptr_t)p) : NULL;
	if (!e) {
		r = FAKECUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	} else {
		g_host_live -= e->size;
		table_del(e);
	}
	pthread_mutex_unlock(&g_lock);
	dbg("cuMemHostUnregister(%p) -> %d", p, (int)r);
	return r;
}

/* ---- init, devices, contexts ------------------------------------------ */

CUresult cuInit(unsigned int Flags)
{
	ensure_env();
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (g_ndev == 0)
		return CUDA_ERROR_NO_DEVICE;
	atomic_store(&g_inited, 1);
	return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = FAKE_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = g_ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(ordinal))
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	snprintf(name, (size_t)len, "%s", g_dev[dev].name);
	return CUDA_SUCCESS;
}

/* The value of attribute a on device ordinal ord: the card's own, or
 * what every card since Volta answers alike; 0 for an attribute no card
 * here has (a capability it lacks). */
static int attr_value(int ord, int a)
{
	const struct fake_dev *d = &g_dev[ord];
	const struct fake_card *c = d->card;
	switch (a) {
	case 1: return 1024;                    /* MAX_THREADS_PER_BLOCK */
	case 2: case 3: return 1024;            /* MAX_BLOCK_DIM_X, _Y */
	case 4: return 64;                      /* MAX_BLOCK_DIM_Z */
	case 5: return 2147483647;              /* MAX_GRID_DIM_X */
	case 6: case 7: return 65535;           /* MAX_GRID_DIM_Y, _Z */
	case 8: return 49152;                   /* SHARED_MEMORY_PER_BLOCK */
	case 9: return 65536;                   /* TOTAL_CONSTANT_MEMORY */
	case 10: return 32;                     /* WARP_SIZE */
	case 11: return 2147483647;             /* MAX_PITCH */
	case 12: return 65536;                  /* REGISTERS_PER_BLOCK */
	case 13: return c->clock_khz;           /* CLOCK_RATE */
	case 14: return 512;                    /* TEXTURE_ALIGNMENT */
	case 15: return 1;                      /* GPU_OVERLAP */
	case 16: return c->sms;                 /* MULTIPROCESSOR_COUNT */
	case 19: return 1;                      /* CAN_MAP_HOST_MEMORY */
	case 30: return 512;                    /* SURFACE_ALIGNMENT */
	case 31: return 1;                      /* CONCURRENT_KERNELS */
	case 32: return 1;                      /* ECC_ENABLED */
	case 33: return 0x18 + ord;             /* PCI_BUS_ID */
	case 36: return c->mem_clock_khz;       /* MEMORY_CLOCK_RATE */
	case 37: return c->bus_width;           /* GLOBAL_MEMORY_BUS_WIDTH */
	case 38: return c->l2_bytes;            /* L2_CACHE_SIZE */
	case 39: return c->threads_per_sm;      /* MAX_THREADS_PER_MULTIPROC. */
	case 40: return 2;                      /* ASYNC_ENGINE_COUNT */
	case 41: return 1;                      /* UNIFIED_ADDRESSING */
	case 51: return 32;                     /* TEXTURE_PITCH_ALIGNMENT */
	case 75: return c->cc_major;            /* COMPUTE_CAPABILITY_MAJOR */
	case 76: return c->cc_minor;            /* COMPUTE_CAPABILITY_MINOR */
	case 78: return 1;                      /* STREAM_PRIORITIES_SUPPORTED */
	case 79: case 80: return 1;             /* GLOBAL/LOCAL_L1_CACHE */
	case 81: return c->smem_per_sm;         /* SHARED_MEMORY_PER_MULTIPROC. */
	case 82: return 65536;                  /* REGISTERS_PER_MULTIPROC. */
	case 83: return 1;                      /* MANAGED_MEMORY */
	case 85: return ord;                    /* MULTI_GPU_BOARD_GROUP_ID */
	case 87: return 2;                      /* SINGLE_TO_DOUBLE_PERF_RATIO */
	case 89: return 1;                      /* CONCURRENT_MANAGED_ACCESS */
	case 90: return 1;                      /* COMPUTE_PREEMPTION_SUPPORTED */
	case 91: return 1;                      /* CAN_USE_HOST_POINTER_FOR_REG. */
	case 95: return 1;                      /* COOPERATIVE_LAUNCH */
	case 97: return c->smem_optin;          /* SHARED_MEMORY_PER_BLOCK_OPTIN */
	case 99: return 1;                      /* HOST_REGISTER_SUPPORTED */
	case 102: return d->vmm;                /* VIRTUAL_MEMORY_MANAGEMENT */
	case 103: return d->vmm;                /* HANDLE_TYPE_POSIX_FD */
	case 106: return c->blocks_per_sm;      /* MAX_BLOCKS_PER_MULTIPROC. */
	case 108: return c->persisting_l2_bytes; /* MAX_PERSISTING_L2_CACHE */
	case 109: return 134213632;             /* MAX_ACCESS_POLICY_WINDOW */
	case 111: return 1024;                  /* RESERVED_SHARED_MEM_PER_BLOCK */
	case 113: return 1;                     /* READ_ONLY_HOST_REGISTER */
	case 115: return 1;                     /* MEMORY_POOLS_SUPPORTED */
	case 119: return 1;                     /* MEMPOOL_HANDLE_TYPES (POSIX fd) */
	case 120: return c->cc_major >= 9;      /* CLUSTER_LAUNCH */
	case 125: return 1;                     /* IPC_EVENT_SUPPORTED */
	case 126: return c->cc_major >= 9 ? 4 : 1; /* MEM_SYNC_DOMAIN_COUNT */
	case 131: return -1;                    /* NUMA_ID: none */
	case 139: return c->pci_device_id << 16 | 0x10de; /* GPU_PCI_DEVICE_ID */
	default: return 0;
	}
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
                              CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pi || (int)attrib < 1 ||
	    (int)attrib >= FAKECUDA_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*pi = attr_value(dev, (int)attrib);
	return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = g_dev[dev].cap;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	*uuid = g_dev[dev].uuid;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid(uuid, dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags,
                                    int *active)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_lock);
	*active = g_ctx[dev].refs > 0;
	pthread_mutex_unlock(&g_lock);
	*flags = 0;
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_lock);
	g_ctx[dev].refs++;
	pthread_mutex_unlock(&g_lock);
	*pctx = &g_ctx[dev];
	return CUDA_SUCCESS;
}

/* Drops one reference. The real driver destroys the context (and its
 * memory) at zero; the fake keeps both, so a test that releases early still
 * sees its allocations. */
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!valid_dev(dev))
		return CUDA_ERROR_INVALID_DEVICE;
	pthread_mutex_lock(&g_lock);
	if (g_ctx[dev].refs > 0)
		g_ctx[dev].refs--;
	else
		r = CUDA_ERROR_INVALID_CONTEXT;
	pthread_mutex_unlock(&g_lock);
	return r;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (ctx && (ctx < &g_ctx[0] || ctx >= &g_ctx[g_ndev] ||
	            ctx->magic != FAKE_CTX_MAGIC))
		return CUDA_ERROR_INVALID_CONTEXT;
	tls_ctx = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult r = check_init();
	if (r != CUDA_SUCCESS)
		return r;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = tls_ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	int ord;
	CUresult r = current_dev(&ord);
	if (r != CUDA_SUCCESS)
		return r;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = ord;
	return CUDA_SUCCESS;
}

/* ---- errors ----------------------------------------------------------- */

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} g_errors[] = {
        {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
        {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE",
         "invalid argument"},
        {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
        {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED",
         "initialization error"},
        {CUDA_ERROR_DEINITIALIZED, "CUDA_ERROR_DEINITIALIZED",
         "driver shutting down"},
        {CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE",
         "no CUDA-capable device is detected"},
        {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE",
         "invalid device ordinal"},
        {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT",
         "invalid device context"},
        {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE",
         "invalid resource handle"},
        {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND",
         "named symbol not found"},
        {FAKECUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
         "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
         "part or all of the requested memory range is already mapped"},
        {FAKECUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
         "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
         "pointer does not correspond to a registered memory region"},
        {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED",
         "operation not supported"},
        {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static CUresult error_lookup(CUresult error, const char **pStr, int text)
{
	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	for (size_t i = 0; i < sizeof(g_errors) / sizeof(g_errors[0]); i++) {
		if (g_errors[i].code == error) {
			*pStr = text ? g_errors[i].text : g_errors[i].name;
			return CUDA_SUCCESS;
		}
	}
	*pStr = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	return error_lookup(error, pStr, 0);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	return error_lookup(error, pStr, 1);
}

/* ---- the resolver ----------------------------------------------------- */

/*
 * One row per (base name, version that introduced this variant). For a
 * base name the resolver takes the newest row whose version is <=
 * cudaVersion; rows of one name are listed newest first. ptsz is the
 * per-thread-default-stream export, chosen when flags has bit 2.
 */
#define FN(f) ((void *)(uintptr_t) & (f))
static const struct proc {
	const char *name;
	int version;
	void *fn;
	void *ptsz;
} g_procs[] = {
        {"cuGetProcAddress", 12000, FN(cuGetProcAddress_v2), NULL},
        {"cuGetProcAddress", 11030, FN(cuGetProcAddress), NULL},
        {"cuInit", 2000, FN(cuInit), NULL},
        {"cuDriverGetVersion", 2020, FN(cuDriverGetVersion), NULL},
        {"cuDeviceGet", 2000, FN(cuDeviceGet), NULL},
        {"cuDeviceGetCount", 2000, FN(cuDeviceGetCount), NULL},
        {"cuDeviceGetName", 2000, FN(cuDeviceGetName), NULL},
        {"cuDeviceGetAttribute", 2000, FN(cuDeviceGetAttribute), NULL},
        {"cuDeviceTotalMem", 3020, FN(cuDeviceTotalMem_v2), NULL},
        {"cuDeviceGetUuid", 11040, FN(cuDeviceGetUuid_v2), NULL},
        {"cuDeviceGetUuid", 9020, FN(cuDeviceGetUuid), NULL},
        {"cuDevicePrimaryCtxRetain", 7000, FN(cuDevicePrimaryCtxRetain), NULL},
        {"cuDevicePrimaryCtxGetState", 7000, FN(cuDevicePrimaryCtxGetState),
         NULL},
        {"cuDevicePrimaryCtxRelease", 11000, FN(cuDevicePrimaryCtxRelease_v2),
         NULL},
        {"cuCtxSetCurrent", 4000, FN(cuCtxSetCurrent), NULL},
        {"cuCtxGetCurrent", 4000, FN(cuCtxGetCurrent), NULL},
        {"cuCtxGetDevice", 2000, FN(cuCtxGetDevice), NULL},
        {"cuCtxSynchronize", 2000, FN(cuCtxSynchronize), NULL},
        {"cuStreamSynchronize", 2000, FN(cuStreamSynchronize),
         FN(cuStreamSynchronize_ptsz)},
        {"cuStreamCreate", 2000, FN(cuStreamCreate), NULL},
        {"cuStreamCreateWithPriority", 5050, FN(cuStreamCreateWithPriority),
         NULL},
        {"cuStreamDestroy", 4000, FN(cuStreamDestroy_v2), NULL},
        {"cuStreamQuery", 2000, FN(cuStreamQuery), FN(cuStreamQuery_ptsz)},
        {"cuPointerGetAttribute", 4000, FN(cuPointerGetAttribute), NULL},
        {"cuGetErrorName", 6000, FN(cuGetErrorName), NULL},
        {"cuGetErrorString", 6000, FN(cuGetErrorString), NULL},
        {"cuMemGetInfo", 3020, FN(cuMemGetInfo_v2), NULL},
        {"cuMemAlloc", 3020, FN(cuMemAlloc_v2), NULL},
        {"cuMemAllocPitch", 3020, FN(cuMemAllocPitch_v2), NULL},
        {"cuMemFree", 3020, FN(cuMemFree_v2), NULL},
        {"cuMemAllocManaged", 6000, FN(cuMemAllocManaged), NULL},
        {"cuMemAllocAsync", 11020, FN(cuMemAllocAsync),
         FN(cuMemAllocAsync_ptsz)},
        {"cuMemAllocFromPoolAsync", 11020, FN(cuMemAllocFromPoolAsync),
         FN(cuMemAllocFromPoolAsync_ptsz)},
        {"cuMemFreeAsync", 11020, FN(cuMemFreeAsync), FN(cuMemFreeAsync_ptsz)},
        {"cuDeviceGetDefaultMemPool", 11020, FN(cuDeviceGetDefaultMemPool),
         NULL},
        {"cuDeviceGetMemPool", 11020, FN(cuDeviceGetMemPool), NULL},
        {"cuDeviceSetMemPool", 11020, FN(cuDeviceSetMemPool), NULL},
        {"cuMemPoolCreate", 11020, FN(cuMemPoolCreate), NULL},
        {"cuMemPoolDestroy", 11020, FN(cuMemPoolDestroy), NULL},
        {"cuMemPoolSetAttribute", 11020, FN(cuMemPoolSetAttribute), NULL},
        {"cuMemPoolGetAttribute", 11020, FN(cuMemPoolGetAttribute), NULL},
        {"cuMemPoolTrimTo", 11020, FN(cuMemPoolTrimTo), NULL},
        {"cuMemGetAllocationGranularity", 10020,
         FN(cuMemGetAllocationGranularity), NULL},
        {"cuMemAddressReserve", 10020, FN(cuMemAddressReserve), NULL},
        {"cuMemAddressFree", 10020, FN(cuMemAddressFree), NULL},
        {"cuMemCreate", 10020, FN(cuMemCreate), NULL},
        {"cuMemRelease", 10020, FN(cuMemRelease), NULL},
        {"cuMemMap", 10020, FN(cuMemMap), NULL},
        {"cuMemUnmap", 10020, FN(cuMemUnmap), NULL},
        {"cuMemSetAccess", 10020, FN(cuMemSetAccess), NULL},
        {"cuMemHostAlloc", 2020, FN(cuMemHostAlloc), NULL},
        {"cuMemAllocHost", 3020, FN(cuMemAllocHost_v2), NULL},
        {"cuMemFreeHost", 2000, FN(cuMemFreeHost), NULL},
        {"cuMemHostRegister", 6050, FN(cuMemHostRegister_v2), NULL},
        {"cuMemHostRegister", 4000, FN(cuMemHostRegister), NULL},
        {"cuMemHostUnregister", 4000, FN(cuMemHostUnregister), NULL},
};
#undef FN

static CUresult resolve(const char *symbol, void **pfn, int cudaVersion,
                        cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
	const struct proc *hit = NULL;
	int known = 0;
	CUdriverProcAddressQueryResult st =
	        CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	CUresult r = CUDA_ERROR_NOT_FOUND;
	ensure_env();
	if (pfn)
		*pfn = NULL;
	if (!symbol || !pfn || (flags & ~(cuuint64_t)3)) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (size_t i = 0; i < sizeof(g_procs) / sizeof(g_procs[0]); i++) {
		if (strcmp(g_procs[i].name, symbol))
			continue;
		known = 1;
		if (g_procs[i].version <= cudaVersion) {
			hit = &g_procs[i];
			break;
		}
	}
	if (hit) {
		*pfn = (flags &
		        VRT_CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) &&
		                       hit->ptsz
		               ? hit->ptsz
		               : hit->fn;
		st = CU_GET_PROC_ADDRESS_SUCCESS;
		r = CUDA_SUCCESS;
	} else if (known) {
		st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	}
out:
	if (status)
		*status = st;
	dbg("cuGetProcAddress(%s, %d, %llu) -> %d %p",
	    symbol ? symbol : "(null)", cudaVersion, (unsigned long long)flags,
	    (int)r, pfn ? *pfn : NULL);
	return r;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                          cuuint64_t flags)
{
	return resolve(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                             cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
	return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}
