"""bench_python — alloc+free pairs from Python through ctypes (the GIL is
released around each call, as PyTorch's bindings do), from ~20 Python
frames, with sizes cycling through 8 values as bench_alloc's do.

    bench_python.py [PAIRS] [--threads N] [--api cuda|malloc] [--mixed]

--api cuda (default): cuMemAlloc_v2 + cuMemFree_v2 of libcuda.so.1;
--api malloc: libc malloc + free (what heaptrack hooks), the same way.
--mixed: bench_alloc's mixed workload from Python: each allocation from
one of 64 call paths (Python functions, 6 to 29 frames below the ~20),
with its path's size (4 KiB to 4 MiB), freed 256 allocations later; with
--api cuda through cuMemAllocAsync + cuMemFreeAsync (run it with
FAKECUDA_BENCH=reuse, as bench_alloc --mixed).
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

PATHS = 64
RING = 256

ap = argparse.ArgumentParser()
ap.add_argument("pairs", type=int, nargs="?", default=50000)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--api", choices=("cuda", "malloc"), default="cuda")
ap.add_argument("--mixed", action="store_true")
a = ap.parse_args()
pairs = a.pairs
sizes = [ctypes.c_size_t(4096 + k * 512) for k in range(8)]
# The mixed workload's sizes by path, as bench_alloc's: 4 KiB to 4 MiB on
# a log scale, multiples of 512 B, in an order unlike the path number.
path_size = [0] * PATHS
for k in range(PATHS):
    j = (k * 37 + 11) % PATHS
    s = int(4096 * 2 ** (10.0 * j / (PATHS - 1)))
    path_size[k] = ctypes.c_size_t((s + 511) // 512 * 512)

if a.api == "cuda":
    cuda = ctypes.CDLL("libcuda.so.1")
    ctx = ctypes.c_void_p()
    assert cuda.cuInit(0) == 0
    assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    if a.mixed:
        m_alloc, m_free = cuda.cuMemAllocAsync, cuda.cuMemFreeAsync
        m_alloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                            ctypes.c_void_p]
        m_free.argtypes = [ctypes.c_uint64, ctypes.c_void_p]
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2

    def setup():
        assert cuda.cuCtxSetCurrent(ctx) == 0

    def loop():
        setup()
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

    def setup():
        pass

    def loop():
        for i in range(pairs):
            p = alloc(sizes[i & 7])
            if not p:
                raise SystemExit("bench_python: malloc failed")
            free(p)


# ---- the mixed workload ------------------------------------------------

def mix_take(path, ring, slot):
    """The bottom of every path: the path's size into ring[slot], after
    freeing what the slot held."""
    if a.api == "cuda":
        p = ctypes.c_uint64()
        if m_alloc(ctypes.byref(p), path_size[path], None):
            raise SystemExit("bench_python: cuMemAllocAsync failed")
        p = p.value
    else:
        p = alloc(path_size[path])
        if not p:
            raise SystemExit("bench_python: malloc failed")
    old = ring[slot]
    if old:
        mix_free(old)
    ring[slot] = p


def mix_free(p):
    if a.api == "cuda":
        if m_free(p, None):
            raise SystemExit("bench_python: cuMemFreeAsync failed")
    else:
        free(p)


def mix_walk(path, bit, pad, ring, slot):
    if pad > 0:
        return mix_a(path, bit, pad - 1, ring, slot)
    if bit:
        f = mix_b if path & bit else mix_a
        return f(path, bit >> 1, 0, ring, slot)
    return mix_take(path, ring, slot)


# Two functions, one per bit of the path's number: each path is a
# different Python call stack.
def mix_a(path, bit, pad, ring, slot):
    return mix_walk(path, bit, pad, ring, slot)


def mix_b(path, bit, pad, ring, slot):
    return mix_walk(path, bit, pad, ring, slot)


def mix_loop(seed):
    setup()
    ring = [0] * RING
    r = (0x9e3779b97f4a7c15 * (seed + 1)) & (2 ** 64 - 1)
    for i in range(pairs):
        r ^= (r << 13) & (2 ** 64 - 1)
        r ^= r >> 7
        r ^= (r << 17) & (2 ** 64 - 1)
        path = r % PATHS
        mix_walk(path, PATHS >> 1, path * 7 % 24, ring, i % RING)
    for p in ring:
        if p:
            mix_free(p)


def nest(d, k):
    if d <= 1:
        t0 = time.thread_time_ns()
        if a.mixed:
            mix_loop(k)
        else:
            loop()
        return time.thread_time_ns() - t0
    return nest(d - 1, k)


cpu = [0] * a.threads


def worker(k):
    cpu[k] = nest(20, k)


t0 = time.perf_counter_ns()
ts = [threading.Thread(target=worker, args=(k,)) for k in range(a.threads)]
for t in ts:
    t.start()
for t in ts:
    t.join()
wall = time.perf_counter_ns() - t0
print(pairs, "%.1f" % (wall / pairs), "%.1f" % (sum(cpu) / pairs / a.threads))
sys.exit(0)
