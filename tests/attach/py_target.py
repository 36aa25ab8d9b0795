#!/usr/bin/env python3
"""py_target.py — a Python process started without the preload, for the
attach tests: the torch stand-in of examples/attach_sim (its allocator's
history on unless --no-history) holds the weights and the KV cache of a
vLLM-shaped runner before anything attaches; then --threads threads call
the driver through ctypes, by pointers the resolver handed out once
(cuGetProcAddress, as libcudart keeps them), in a tight allocate/free
loop, each with its own counter.

Thread t's k-th allocation asks for ((k % 1024) << 3 | t) + 1 bytes, as
attach_target's do, so dump_events --check reads the trace the same way.

stdin, one command per line: "counts" prints "counts A0 A1 ..." (each
thread's allocations so far); "release" frees the KV cache (memory held
before an attach: its free shrinks what the snapshot found); "stop" ends
the threads, prints "final A0 A1 ..." and exits 0. It prints "ready PID"
once the loops run; the main thread waits in a read.
"""
import argparse
import ctypes
import os
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "attach_sim"))
import torch  # noqa: E402
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402

ALLOC = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                         ctypes.c_size_t)
FREE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)


def resolved(lib, name):
    get = lib.cuGetProcAddress_v2
    get.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p),
                    ctypes.c_int, ctypes.c_uint64, ctypes.c_void_p]
    p = ctypes.c_void_p()
    if get(name.encode(), ctypes.byref(p), 12000, 0, None) or not p.value:
        raise RuntimeError(f"cuGetProcAddress({name}) failed")
    return p.value


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--weights-mib", type=int, default=1024)
    ap.add_argument("--kv-mib", type=int, default=2048)
    ap.add_argument("--no-history", action="store_true")
    a = ap.parse_args()
    if not a.no_history:
        torch.cuda.memory._record_memory_history()
    runner = GPUModelRunner(4)
    runner.load_model(a.weights_mib)
    runner.initialize_kv_cache(a.kv_mib)
    lib = torch.cuda._driver()
    alloc = ALLOC(resolved(lib, "cuMemAlloc"))
    free = FREE(resolved(lib, "cuMemFree"))
    counts = [0] * a.threads
    stopping = threading.Event()

    def loop(t):
        torch.cuda._driver()  # the context current on this thread
        p = ctypes.c_uint64()
        k = 0
        while not stopping.is_set():
            if alloc(ctypes.byref(p), ((k % 1024) << 3 | t) + 1) or \
                    free(p.value):
                print(f"thread {t}: call failed", flush=True)
                os._exit(3)
            k += 1
            counts[t] = k

    threads = [threading.Thread(target=loop, args=(t,))
               for t in range(a.threads)]
    for th in threads:
        th.start()
    print(f"ready {os.getpid()}", flush=True)
    for line in sys.stdin:
        if line.startswith("counts"):
            print("counts " + " ".join(map(str, counts)), flush=True)
        elif line.startswith("release"):
            runner.kv_caches = []
            torch.cuda.empty_cache()
            print("released", flush=True)
        elif line.startswith("stop"):
            break
    stopping.set()
    for th in threads:
        th.join()
    print("final " + " ".join(map(str, counts)) + " 0", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
