/*
 * interposer — a second LD_PRELOAD library, as sanitizers, allocators and
 * other profilers are: it interposes malloc, getpid, cuMemAlloc_v2 and
 * dlsym itself, finding each real one with dlsym(RTLD_NEXT, ...) (dlsym
 * through dlvsym). dlsym may call calloc before the real one is known: a
 * small static arena serves those calls. Prints its call counts at exit.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cuMemAlloc_v2(unsigned long long *p, size_t n);

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void (*real_free)(void *);
static pid_t (*real_getpid)(void);
static int (*real_alloc)(unsigned long long *, size_t);
static void *(*real_dlsym)(void *, const char *);
static atomic_long n_malloc, n_getpid, n_alloc, n_dlsym;

static _Alignas(16) char arena[65536];
static size_t arena_used;
static int resolving;

static void *find_dlsym(void)
{
	void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	return p ? p : dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
}

static void resolve(void)
{
	if (real_malloc || resolving)
		return;
	resolving = 1;
	real_dlsym = (void *(*)(void *, const char *))find_dlsym();
	real_calloc = (void *(*)(size_t, size_t))real_dlsym(RTLD_NEXT,
	                                                    "calloc");
	real_free = (void (*)(void *))real_dlsym(RTLD_NEXT, "free");
	real_malloc = (void *(*)(size_t))real_dlsym(RTLD_NEXT, "malloc");
	resolving = 0;
}

static void *from_arena(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (arena_used + n > sizeof(arena))
		return NULL;
	void *p = arena + arena_used;
	arena_used += n;
	return p;
}

void *malloc(size_t n)
{
	resolve();
	if (!real_malloc)
		return from_arena(n);
	atomic_fetch_add(&n_malloc, 1);
	return real_malloc(n);
}

void *calloc(size_t a, size_t b)
{
	resolve();
	if (!real_calloc)
		return from_arena(a * b); /* static: already zero */
	return real_calloc(a, b);
}

void free(void *p)
{
	if ((char *)p >= arena && (char *)p < arena + sizeof(arena))
		return;
	resolve();
	if (real_free)
		real_free(p);
}

pid_t getpid(void)
{
	if (!real_getpid)
		real_getpid = (pid_t(*)(void))dlsym(RTLD_NEXT, "getpid");
	atomic_fetch_add(&n_getpid, 1);
	return real_getpid();
}

int cuMemAlloc_v2(unsigned long long *p, size_t n)
{
	if (!real_alloc)
		real_alloc = (int (*)(unsigned long long *, size_t))dlsym(
		        RTLD_NEXT, "cuMemAlloc_v2");
	atomic_fetch_add(&n_alloc, 1);
	return real_alloc ? real_alloc(p, n) : 1;
}

void *dlsym(void *h, const char *name)
{
	if (!real_dlsym)
		real_dlsym = (void *(*)(void *, const char *))find_dlsym();
	atomic_fetch_add(&n_dlsym, 1);
	/* RTLD_NEXT must mean "after the caller", not "after us": answer it
	 * from the caller's place by forwarding with the caller's address,
	 * which glibc's dlsym cannot see through a wrapper. Interposers
	 * that wrap dlsym live with this; here RTLD_NEXT from inside this
	 * library is what every caller above wants anyway. */
	return real_dlsym(h, name);
}

__attribute__((destructor)) static void report(void)
{
	fprintf(stderr, "interposer: malloc %ld getpid %ld cuMemAlloc_v2 %ld "
	                "dlsym %ld\n",
	        atomic_load(&n_malloc), atomic_load(&n_getpid),
	        atomic_load(&n_alloc), atomic_load(&n_dlsym));
}
