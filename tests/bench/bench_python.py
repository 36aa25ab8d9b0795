"""bench_python — alloc+free pairs from Python through ctypes (the GIL is
released around each call, as PyTorch's bindings do), from ~20 Python
frames. Prints "<pairs> <ns/pair>"."""
import ctypes
import sys
import time

pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 50000
cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
p = ctypes.c_uint64()
ref = ctypes.byref(p)
size = ctypes.c_size_t(4096)


def loop():
    for _ in range(pairs):
        alloc(ref, size)
        free(p)


def nest(d):
    if d <= 1:
        t0 = time.perf_counter_ns()
        loop()
        return time.perf_counter_ns() - t0
    return nest(d - 1)


print(pairs, "%.1f" % (nest(20) / pairs))
