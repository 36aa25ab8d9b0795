"""bench_python — alloc+free pairs from Python through ctypes (the GIL is
released around each call, as PyTorch's bindings do), from ~20 Python
frames, with sizes cycling through 8 values as bench_alloc's do.

    bench_python.py [PAIRS] [--threads N] [--api cuda|malloc] [--mixed]
                    [--mix fixed|wide|serve]

--api cuda (default): cuMemAlloc_v2 + cuMemFree_v2 of libcuda.so.1;
--api malloc: libc malloc + free (what heaptrack hooks), the same way.
--mixed: bench_alloc's mixed workload from Python: each allocation from
one of 64 call paths (Python functions, 6 to 29 frames below the ~20),
with its path's size (4 KiB to 4 MiB), freed 256 allocations later; with
--api cuda through cuMemAllocAsync + cuMemFreeAsync (run it with
FAKECUDA_BENCH=reuse, as bench_alloc --mixed). --mix wide: the same
with each allocation's size drawn anew from 1,024 values (4 KiB to 4 MiB,
even byte counts), as bench_alloc --mix wide; --mix serve: bench_alloc
--mix serve's forward passes (a Llama-3-8B's tensors per layer, sizes
following a batch and sequence length that change every step), each
tensor allocated from a Python function of its own (--mix fixed is
--mixed). PAIRS counts allocations, each freed.
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
ap.add_argument("--mix", choices=("fixed", "wide", "serve"))
a = ap.parse_args()
if a.mixed and not a.mix:
    a.mix = "fixed"
a.mixed = a.mix is not None
pairs = a.pairs
sizes = [ctypes.c_size_t(4096 + k * 512) for k in range(8)]
# The mixed workload's sizes by path, as bench_alloc's: 4 KiB to 4 MiB on
# a log scale, multiples of 512 B, in an order unlike the path number.
path_size = [0] * PATHS
for k in range(PATHS):
    j = (k * 37 + 11) % PATHS
    s = int(4096 * 2 ** (10.0 * j / (PATHS - 1)))
    path_size[k] = ctypes.c_size_t((s + 511) // 512 * 512)
# The wide mix's 1,024 sizes: 4 KiB to 4 MiB on a log scale, in whole
# bf16 elements.
WIDE = 1024
wide_size = [ctypes.c_size_t(2 * int(2048 * 2 ** (10.0 * k / (WIDE - 1))))
             for k in range(WIDE)]

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

def mix_alloc(size):
    """One allocation of size (a c_size_t); its address."""
    if a.api == "cuda":
        p = ctypes.c_uint64()
        if m_alloc(ctypes.byref(p), size, None):
            raise SystemExit("bench_python: cuMemAllocAsync failed")
        return p.value
    p = alloc(size)
    if not p:
        raise SystemExit("bench_python: malloc failed")
    return p


def mix_take(path, ring, slot, size):
    """The bottom of every path: size into ring[slot], after freeing what
    the slot held."""
    p = mix_alloc(size)
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


def mix_walk(path, bit, pad, ring, slot, size):
    if pad > 0:
        return mix_a(path, bit, pad - 1, ring, slot, size)
    if bit:
        f = mix_b if path & bit else mix_a
        return f(path, bit >> 1, 0, ring, slot, size)
    return mix_take(path, ring, slot, size)


# Two functions, one per bit of the path's number: each path is a
# different Python call stack.
def mix_a(path, bit, pad, ring, slot, size):
    return mix_walk(path, bit, pad, ring, slot, size)


def mix_b(path, bit, pad, ring, slot, size):
    return mix_walk(path, bit, pad, ring, slot, size)


def mix_loop(seed):
    setup()
    ring = [0] * RING
    r = (0x9e3779b97f4a7c15 * (seed + 1)) & (2 ** 64 - 1)
    for i in range(pairs):
        r ^= (r << 13) & (2 ** 64 - 1)
        r ^= r >> 7
        r ^= (r << 17) & (2 ** 64 - 1)
        path = r % PATHS
        size = wide_size[(r >> 16) % WIDE] if a.mix == "wide" \
            else path_size[path]
        mix_walk(path, PATHS >> 1, path * 7 % 24, ring, i % RING, size)
    for p in ring:
        if p:
            mix_free(p)


# ---- the serve mix -------------------------------------------------------
# A Llama-3-8B's shapes in bf16 (fp32 logits), as bench_alloc --mix serve.
HIDDEN, HEADS, KV_DIM, MLP_DIM, VOCAB = 4096, 32, 1024, 14336, 128256
BLOCK, BUDGET, LAYERS = 16, 512, 32


class Serve:
    """One thread's forward passes; each tensor comes from a method of
    its own (its Python call stack), freed when eager PyTorch would drop
    it. take() stops allocating once the thread made its pairs."""

    def __init__(self):
        self.made = 0

    def take(self, size):
        if self.made >= pairs:
            return 0
        self.made += 1
        return mix_alloc(ctypes.c_size_t(size))

    def drop(self, p):
        if p:
            mix_free(p)

    def ids(self, tok):
        return self.take(tok * 8)

    def positions(self, tok):
        return self.take(tok * 8)

    def slots(self, tok):
        return self.take(tok * 8)

    def block_table(self, b, length):
        return self.take(b * ((length + BLOCK - 1) // BLOCK) * 4)

    def seq_lens(self, b):
        return self.take(b * 4)

    def embed(self, tok):
        return self.take(tok * HIDDEN * 2)

    def input_norm(self, tok):
        return self.take(tok * HIDDEN * 2)

    def qkv_proj(self, tok):
        return self.take(tok * (HIDDEN + 2 * KV_DIM) * 2)

    def rotary(self, tok):
        return self.take(tok * HIDDEN * 2)

    def attention(self, tok):
        return self.take(tok * HIDDEN * 2)

    def softmax_lse(self, tok):
        return self.take(tok * HEADS * 4)

    def o_proj(self, tok):
        return self.take(tok * HIDDEN * 2)

    def residual(self, tok):
        return self.take(tok * HIDDEN * 2)

    def post_norm(self, tok):
        return self.take(tok * HIDDEN * 2)

    def gate_up(self, tok):
        return self.take(tok * MLP_DIM * 2 * 2)

    def act(self, tok):
        return self.take(tok * MLP_DIM * 2)

    def down_proj(self, tok):
        return self.take(tok * HIDDEN * 2)

    def residual2(self, tok):
        return self.take(tok * HIDDEN * 2)

    def final_norm(self, tok):
        return self.take(tok * HIDDEN * 2)

    def logits(self, b):
        return self.take(b * VOCAB * 4)

    def probs(self, b):
        return self.take(b * VOCAB * 4)

    def sample(self, b):
        return self.take(b * 8)

    def layer(self, tok, hidden):
        n1 = self.input_norm(tok)
        qkv = self.qkv_proj(tok)
        self.drop(n1)
        q = self.rotary(tok)
        att = self.attention(tok)
        self.drop(self.softmax_lse(tok))
        self.drop(q)
        self.drop(qkv)
        o = self.o_proj(tok)
        self.drop(att)
        r1 = self.residual(tok)
        self.drop(o)
        self.drop(hidden)
        n2 = self.post_norm(tok)
        gu = self.gate_up(tok)
        self.drop(n2)
        x = self.act(tok)
        self.drop(gu)
        d = self.down_proj(tok)
        self.drop(x)
        h = self.residual2(tok)
        self.drop(d)
        self.drop(r1)
        return h

    def step(self, b, tok, length):
        inputs = [self.ids(tok), self.positions(tok), self.slots(tok),
                  self.block_table(b, length), self.seq_lens(b)]
        h = self.embed(tok)
        for _ in range(LAYERS):
            h = self.layer(tok, h)
        f = self.final_norm(tok)
        self.drop(h)
        lg = self.logits(b)
        self.drop(f)
        pr = self.probs(b)
        self.drop(lg)
        nx = self.sample(b)
        self.drop(pr)
        self.drop(nx)
        for p in inputs:
            self.drop(p)


def serve_loop(seed):
    """bench_alloc's schedule: decode steps of a batch that changes by up
    to 2 sequences a step, its context growing a token a step; one step
    in 16 a prefill chunk (BUDGET tokens, or a prompt's last chunk)."""
    setup()
    s = Serve()
    r = (0x9e3779b97f4a7c15 * (seed + 1)) & (2 ** 64 - 1)
    b, length = 8, 512
    while s.made < pairs:
        r ^= (r << 13) & (2 ** 64 - 1)
        r ^= r >> 7
        r ^= (r << 17) & (2 ** 64 - 1)
        if r % 16 == 0:
            n = 1 + (r >> 8) % 4
            q = BUDGET // n if (r >> 12) % 4 else \
                16 + (r >> 16) % (BUDGET // n - 16)
            s.step(n, n * q, q)
            continue
        b = max(1, b + (r >> 8) % 5 - 2)
        b = min(b, 64)
        length += 1
        if length > 4096:
            length = 256 + (r >> 16) % 1024
        s.step(b, b, length)


def nest(d, k):
    if d <= 1:
        t0 = time.thread_time_ns()
        if a.mix == "serve":
            serve_loop(k)
        elif a.mixed:
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
