/*
 * sim_server — a program that allocates GPU memory the way an inference
 * server does, for the README's first command and for tests:
 *
 *   1. load weights      (many cuMemAlloc_v2, sized like layer tensors)
 *   2. probe free memory (cuMemGetInfo_v2), then reserve the KV cache as
 *      --gpu-memory-utilization of the card minus what is used
 *   3. serve requests    (per request: activations via cuMemAllocAsync,
 *                         freed when the request ends)
 *
 * It reaches the driver exactly as libcudart does: dlopen("libcuda.so.1"),
 * one dlsym of "cuGetProcAddress_v2", and every other function through
 * it. Run it on a real GPU or on the fake driver of tests/fake.
 *
 * Exit status: 0 served everything, 2 usage, 3 out of memory (like a
 * server that dies on CUDA OOM), 4 driver missing or failing.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef CUresult (*proc_fn)(const char *, void **, int, uint64_t, int *);

static struct {
	CUresult (*init)(unsigned);
	CUresult (*retain)(CUcontext *, int);
	CUresult (*set_current)(CUcontext);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free_)(CUdeviceptr);
	CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*free_async)(CUdeviceptr, CUstream);
	CUresult (*mem_info)(size_t *, size_t *);
} cu;

struct opts {
	double weights_gib;
	double util;
	int max_num_seqs;
	int requests;
	int max_model_len;
};

static int usage(const char *msg)
{
	fprintf(stderr,
	        "sim_server: %s\n"
	        "usage: sim_server [--model-size-gib G] "
	        "[--gpu-memory-utilization F]\n"
	        "                  [--max-num-seqs N] [--max-model-len T] "
	        "[--requests N]\n",
	        msg);
	return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help")) {
			usage("simulated inference server");
			exit(0);
		}
		if (!v)
			return usage("option needs a value");
		char *end;
		double d = strtod(v, &end);
		if (*end || d < 0)
			return usage("bad number");
		if (!strcmp(a, "--model-size-gib"))
			o->weights_gib = d;
		else if (!strcmp(a, "--gpu-memory-utilization"))
			o->util = d;
		else if (!strcmp(a, "--max-num-seqs"))
			o->max_num_seqs = (int)d;
		else if (!strcmp(a, "--max-model-len"))
			o->max_model_len = (int)d;
		else if (!strcmp(a, "--requests"))
			o->requests = (int)d;
		else
			return usage("unknown option");
		i++;
	}
	return 0;
}

static int resolve(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "sim_server: %s\n", dlerror());
		return -1;
	}
	proc_fn get = (proc_fn)dlsym(h, "cuGetProcAddress_v2");
	if (!get || get("cuGetProcAddress", (void **)&get, 12000, 0, NULL))
		return -1;
	struct {
		const char *name;
		void **slot;
	} names[] = {
	        {"cuInit", (void **)&cu.init},
	        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain},
	        {"cuCtxSetCurrent", (void **)&cu.set_current},
	        {"cuMemAlloc", (void **)&cu.alloc},
	        {"cuMemFree", (void **)&cu.free_},
	        {"cuMemAllocAsync", (void **)&cu.alloc_async},
	        {"cuMemFreeAsync", (void **)&cu.free_async},
	        {"cuMemGetInfo", (void **)&cu.mem_info},
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (get(names[i].name, names[i].slot, 12000, 0, NULL) ||
		    !*names[i].slot)
			return -1;
	return 0;
}

#define GIB (1024.0 * 1024.0 * 1024.0)

int main(int argc, char **argv)
{
	struct opts o = {.weights_gib = 14,
	                 .util = 0.9,
	                 .max_num_seqs = 4,
	                 .requests = 16,
	                 .max_model_len = 8192};
	if (parse(argc, argv, &o))
		return 2;
	CUcontext ctx;
	if (resolve() || cu.init(0) || cu.retain(&ctx, 0) ||
	    cu.set_current(ctx)) {
		fprintf(stderr, "sim_server: no usable CUDA driver\n");
		return 4;
	}
	/* 1. Weights: 32 layers of 4 tensors each plus embeddings. */
	size_t weights = (size_t)(o.weights_gib * GIB);
	size_t per_tensor = weights / (32 * 4 + 2);
	CUdeviceptr p;
	for (int t = 0; t < 32 * 4 + 2; t++) {
		CUresult r = cu.alloc(&p, per_tensor);
		if (r) {
			fprintf(stderr,
			        "sim_server: CUDA out of memory loading "
			        "weights "
			        "(tensor %d, error %d)\n",
			        t, r);
			return 3;
		}
	}
	/* 2. KV cache: what the utilisation target leaves after weights and
	 * an activation reserve. */
	size_t free_b, total_b;
	cu.mem_info(&free_b, &total_b);
	size_t act = (size_t)o.max_model_len * 256 * 1024; /* per sequence */
	double target = o.util * (double)total_b;
	double used = (double)(total_b - free_b);
	double kv = target - used - (double)act;
	if (kv < 0)
		kv = 0;
	CUdeviceptr kv_ptr;
	if (cu.alloc(&kv_ptr, (size_t)kv)) {
		fprintf(stderr, "sim_server: CUDA out of memory reserving the "
		                "KV cache\n");
		return 3;
	}
	printf("sim_server: weights %.2f GiB, KV cache %.2f GiB, ready\n",
	       (double)weights / GIB, kv / GIB);
	fflush(stdout);
	/* 3. Requests, max_num_seqs at a time. */
	CUdeviceptr live[256];
	int n = o.max_num_seqs > 256 ? 256 : o.max_num_seqs;
	for (int done = 0; done < o.requests; done += n) {
		int batch = o.requests - done < n ? o.requests - done : n;
		for (int i = 0; i < batch; i++)
			if (cu.alloc_async(&live[i], act, NULL)) {
				fprintf(stderr,
				        "sim_server: CUDA out of memory with "
				        "%d "
				        "requests in flight\n",
				        i + 1);
				return 3;
			}
		for (int i = 0; i < batch; i++)
			cu.free_async(live[i], NULL);
	}
	printf("sim_server: served %d requests\n", o.requests);
	return 0;
}
