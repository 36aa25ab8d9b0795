/*
 * client_hip_dl.c — the HIP workload through the runtime's handle, the way
 * Python ctypes, plugin loaders and HIP 6.2's entry-point API reach it:
 * dlopen("libamdhip64.so.6", RTLD_LOCAL), then
 *   --route dlsym    every name with dlsym on that handle;
 *   --route getproc  one dlsym of "hipGetProcAddress", and every name
 *                    through it: flags 0 for the first pass, flags 2 (per
 *                    thread default stream) for the second.
 * The runtime is RTLD_LOCAL, so a preload that looks real functions up
 * with dlsym(RTLD_NEXT) finds nothing and must use the runtime's handle.
 *
 * Under vramtrace (LD_PRELOAD names libvramtrace) the client also checks
 * what it was handed: the preload's wrapper for every hooked name, the
 * runtime's own function for the others, and the runtime's "_spt" export,
 * unwrapped, where flags 2 selects one. Single-threaded.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hip_workload.h"

#define HIP_VERSION_ASKED 602

typedef hipError_t (*getproc_fn)(const char *, void **, int, uint64_t,
                                 hipDriverProcAddressQueryResult *);

static void *rt;
static getproc_fn getproc;

static const char *const hooked[] = {
        "hipMalloc",         "hipExtMallocWithFlags", "hipMallocPitch",
        "hipFree",           "hipMallocAsync",        "hipMallocFromPoolAsync",
        "hipFreeAsync",      "hipMemAddressReserve",  "hipMemAddressFree",
        "hipMemCreate",      "hipMemRelease",         "hipMemMap",
        "hipMemUnmap",       "hipMallocManaged",      "hipHostMalloc",
        "hipMallocHost",     "hipHostFree",           "hipFreeHost",
        "hipHostRegister",   "hipHostUnregister",     "hipMemGetInfo",
        "hipGetProcAddress",
};

static int is_hooked(const char *name)
{
	for (size_t i = 0; i < sizeof(hooked) / sizeof(hooked[0]); i++)
		if (!strcmp(hooked[i], name))
			return 1;
	return 0;
}

static const char *lib_of(void *p)
{
	Dl_info info;
	if (!p || !dladdr(p, &info) || !info.dli_fname)
		return "?";
	const char *slash = strrchr(info.dli_fname, '/');
	return slash ? slash + 1 : info.dli_fname;
}

/* Under the preload: hooked names come from it, the rest from the
 * runtime. */
static int check_owner(const char *name, void *p)
{
	const char *pre = getenv("LD_PRELOAD");
	const char *lib = lib_of(p);
	if (!pre || !strstr(pre, "vramtrace"))
		return 0;
	int want_preload = is_hooked(name);
	int in_preload = strstr(lib, "vramtrace") != NULL;
	if (want_preload != in_preload ||
	    (!in_preload && strncmp(lib, "libamdhip64", 11) != 0)) {
		fprintf(stderr, "client_hip_dl: %s resolved into %s\n", name,
		        lib);
		return -1;
	}
	return 0;
}

static int resolve(const char *name, uint64_t flags, void **out)
{
	hipDriverProcAddressQueryResult st =
	        HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	*out = NULL;
	if (!getproc) {
		*out = dlsym(rt, name);
		if (!*out) {
			fprintf(stderr, "client_hip_dl: dlsym %s: %s\n", name,
			        dlerror());
			return -1;
		}
	} else {
		hipError_t r =
		        getproc(name, out, HIP_VERSION_ASKED, flags, &st);
		if (r != hipSuccess || !*out ||
		    st != HIP_GET_PROC_ADDRESS_SUCCESS) {
			fprintf(stderr,
			        "client_hip_dl: hipGetProcAddress(%s): %d, "
			        "status %d\n",
			        name, (int)r, (int)st);
			return -1;
		}
	}
	return check_owner(name, *out);
}

static int resolve_all(struct hip_fns *fns, uint64_t flags)
{
	void *p;
	memset(fns, 0, sizeof(*fns));
#define RESOLVE(name)                                                          \
	if (resolve(#name, flags, &p))                                         \
		return -1;                                                     \
	fns->name = (__typeof__(fns->name))(uintptr_t)p;
	HWL_FN_LIST(RESOLVE)
#undef RESOLVE
	return 0;
}

/* The resolver's answers beyond the workload's names. */
static int check_resolver(void)
{
	hipDriverProcAddressQueryResult st = HIP_GET_PROC_ADDRESS_SUCCESS;
	void *p = (void *)1, *spt = NULL, *self = NULL;
	hipError_t r =
	        getproc("hipNoSuchFunction", &p, HIP_VERSION_ASKED, 0, &st);
	if (r != hipErrorInvalidValue || p ||
	    st != HIP_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) {
		fprintf(stderr, "client_hip_dl: unknown name: %d %p %d\n",
		        (int)r, p, (int)st);
		return -1;
	}
	/* flags 2 answers the _spt export, never wrapped. */
	r = getproc("hipStreamSynchronize", &spt, HIP_VERSION_ASKED, 2, &st);
	if (r != hipSuccess || spt != dlsym(rt, "hipStreamSynchronize_spt")) {
		fprintf(stderr, "client_hip_dl: flags 2 did not answer _spt\n");
		return -1;
	}
	/* The resolver through itself, as a loader asks for it. */
	r = getproc("hipGetProcAddress", &self, HIP_VERSION_ASKED, 0, &st);
	if (r != hipSuccess || !self) {
		fprintf(stderr, "client_hip_dl: hipGetProcAddress: %d\n",
		        (int)r);
		return -1;
	}
	getproc = (getproc_fn)(uintptr_t)self;
	return 0;
}

int main(int argc, char **argv)
{
	struct hip_fns f0, f1;
	const char *route = "dlsym";
	char **args = calloc((size_t)argc + 1, sizeof(*args));
	int n = 0;

	if (!args)
		return 1;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--route") && i + 1 < argc)
			route = argv[++i];
		else
			args[n++] = argv[i];
	}
	rt = dlopen("libamdhip64.so.6", RTLD_NOW | RTLD_LOCAL);
	if (!rt) {
		fprintf(stderr, "client_hip_dl: %s\n", dlerror());
		return 1;
	}
	if (!strcmp(route, "getproc")) {
		getproc = (getproc_fn)(uintptr_t)dlsym(rt, "hipGetProcAddress");
		if (!getproc ||
		    check_owner("hipGetProcAddress",
		                (void *)(uintptr_t)getproc) ||
		    check_resolver())
			return 1;
	} else if (strcmp(route, "dlsym") != 0) {
		fprintf(stderr, "client_hip_dl: unknown route %s\n", route);
		return 2;
	}
	if (resolve_all(&f0, 0) || resolve_all(&f1, 2))
		return 1;
	int rc = hwl_main(n, args, &f0, &f1);
	free(args);
	return rc;
}
