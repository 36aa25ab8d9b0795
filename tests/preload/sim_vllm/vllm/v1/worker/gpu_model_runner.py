"""A stand-in for vLLM's GPUModelRunner: the same class and method names
and module path, allocating through the CUDA driver with ctypes, so the
built-in phase rules have real-looking Python frames to work on."""
import ctypes

MIB = 1 << 20


class GPUModelRunner:
    def __init__(self, cuda):
        self.cuda = cuda
        self.weights = []
        self.kv = []

    def _alloc(self, n):
        p = ctypes.c_uint64()
        r = self.cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n))
        if r != 0:
            raise RuntimeError(f"cuMemAlloc_v2 failed: {r}")
        return p.value

    def free(self, p):
        r = self.cuda.cuMemFree_v2(ctypes.c_uint64(p))
        if r != 0:
            raise RuntimeError(f"cuMemFree_v2 failed: {r}")

    def load_model(self):
        self.weights = [self._alloc(200 * MIB) for _ in range(2)]

    def profile_run(self):
        self.free(self._alloc(300 * MIB))

    def initialize_kv_cache(self):
        self.kv.append(self._alloc(2048 * MIB))

    def execute_model(self):
        return self._alloc(50 * MIB)
