"""bench_python — alloc+free pairs from Python through ctypes (the GIL is
released around each call, as PyTorch's bindings do), from ~20 Python
frames, with sizes cycling through 8 values as bench_alloc's do.

    bench_python.py [PAIRS] [--threads N] [--api cuda|malloc]

--api cuda (default): cuMemAlloc_v2 + cuMemFree_v2 of libcuda.so.1;
--api malloc: libc malloc + free (what heaptrack hooks), the same way.
Every thread makes PAIRS pairs (default 50000). Prints
"<pairs per thread> <wall ns/pair> <cpu ns/pair>": wall time of the
whole run per pair of one thread, and the CPU time of the calling
threads (time.thread_time_ns around each loop, summed) per pair of all
threads; the CPU figure is the one to compare (see bench_alloc.c)."""
import argparse
import ctypes
import sys
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("pairs", type=int, nargs="?", default=50000)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--api", choices=("cuda", "malloc"), default="cuda")
a = ap.parse_args()
pairs = a.pairs
sizes = [ctypes.c_size_t(4096 + k * 512) for k in range(8)]

if a.api == "cuda":
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2

    def loop():
        assert cuda.cuCtxSetCurrent(ctx) == 0
        p = ctypes.c_uint64()
        ref = ctypes.byref(p)
        for i in range(pairs):
            if alloc(ref, sizes[i & 7]) or free(p):
                raise SystemExit("bench_python: driver call failed")
else:
    libc = ctypes.CDLL(None)
    alloc, free = libc.malloc, libc.free
    alloc.restype = ctypes.c_void_p
    alloc.argtypes = [ctypes.c_size_t]
    free.restype = None
    free.argtypes = [ctypes.c_void_p]

    def loop():
        for i in range(pairs):
            p = alloc(sizes[i & 7])
            if not p:
                raise SystemExit("bench_python: malloc failed")
            free(p)


def nest(d):
    if d <= 1:
        t0 = time.thread_time_ns()
        loop()
        return time.thread_time_ns() - t0
    return nest(d - 1)


cpu = [0] * a.threads


def worker(k):
    cpu[k] = nest(20)


t0 = time.perf_counter_ns()
ts = [threading.Thread(target=worker, args=(k,)) for k in range(a.threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
wall = time.perf_counter_ns() - t0
print(pairs, "%.1f" % (wall / pairs), "%.1f" % (sum(cpu) / pairs / a.threads))
sys.exit(0)
