"""A stand-in for vLLM's GPUModelRunner: the same class and method names
and module path, allocating through the CUDA driver with ctypes, so the
built-in phase rules have real-looking Python frames to work on."""
import ctypes

MIB = 1 << 20


ALLOC_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                           ctypes.c_size_t)
FREE_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)


class GPUModelRunner:
    """Weights, profile and KV calls go by symbol (ctypes' dlsym); the
    forward and CUDA-graph paths call pointers obtained through
    cuGetProcAddress, as libcudart does."""

    def __init__(self, cuda):
        self.cuda = cuda
        self.weights = []
        self.kv = []
        get = cuda.cuGetProcAddress_v2
        get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                        ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]
        fn = ctypes.c_void_p()
        if get(b"cuMemAlloc", ctypes.byref(fn), 12000, 0, None) != 0:
            raise RuntimeError("cuGetProcAddress(cuMemAlloc) failed")
        self.resolved_alloc = ALLOC_T(fn.value)
        if get(b"cuMemFree", ctypes.byref(fn), 12000, 0, None) != 0:
            raise RuntimeError("cuGetProcAddress(cuMemFree) failed")
        self.resolved_free = FREE_T(fn.value)

    def _alloc(self, n):
        p = ctypes.c_uint64()
        r = self.cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))
        if r != 0:
            raise RuntimeError(f"cuMemAlloc_v2 failed: {r}")
        return p.value

    def _alloc_resolved(self, n):
        p = ctypes.c_uint64()
        r = self.resolved_alloc(ctypes.byref(p), n)
        if r != 0:
            raise RuntimeError(f"resolved cuMemAlloc failed: {r}")
        return p.value

    def free(self, p):
        r = self.resolved_free(p)
        if r != 0:
            raise RuntimeError(f"cuMemFree failed: {r}")

    def load_model(self):
        self.weights = [self._alloc(200 * MIB) for _ in range(2)]

    def profile_run(self):
        self.free(self._alloc(300 * MIB))

    def initialize_kv_cache(self):
        self.kv.append(self._alloc(2048 * MIB))

    def capture_model(self):
        self.graph_pool = self._alloc_resolved(24 * MIB)

    def execute_model(self):
        return self._alloc_resolved(50 * MIB)
