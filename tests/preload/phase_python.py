#!/usr/bin/env python3
"""phase_python — a Python "inference server" for the phase tests.

Loads weights, profiles, reserves the KV cache (GPUModelRunner, named and
placed like vLLM's), then listens on 127.0.0.1 and serves requests: first
one alone, then three at once (all three connections open together), each
request holding 50 MiB of activations while its connection is open.
Expected (checked by run_phases.py): weights 2 allocs / 400 MiB,
profile 2 / 300 MiB (the second under recursion 200 deep), kv_cache 1 /
2 GiB, cuda_graph 1 / 24 MiB, forward 4 allocs with a peak of 150 MiB, server ready before the first request, at most 3 in flight, one
request's forward peak 50 MiB, a mark "concurrency=3".
"""
import ctypes
import os
import socket
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "sim_vllm"))
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402

cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0



def deep(n):
    """Recursion far past the stack depth cap, then a profile run."""
    return runner.profile_run() if n == 0 else deep(n - 1)


runner = GPUModelRunner(cuda)
runner.load_model()
runner.profile_run()
deep(200)
runner.initialize_kv_cache()
runner.capture_model()

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(8)
port = srv.getsockname()[1]


def clients(n, ready):
    conns = [socket.create_connection(("127.0.0.1", port), timeout=30)
             for _ in range(n)]
    for c in conns:  # one HTTP/1.1 request each (counted in flight)
        c.sendall(b"POST /generate HTTP/1.1\r\nHost: x\r\n\r\n")
    for c in conns:
        c.recv(1)  # the server answers once all n are being served
        c.close()
    ready.set()


def serve(n):
    done = threading.Event()
    t = threading.Thread(target=clients, args=(n, done))
    t.start()
    open_conns = [srv.accept()[0] for _ in range(n)]
    for c in open_conns:
        c.recv(256)
    acts = [runner.execute_model() for _ in open_conns]
    for c, a in zip(open_conns, acts):
        runner.free(a)  # a finished request frees, then is answered
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
        c.close()
    t.join(30)


serve(1)
mark = getattr(ctypes.CDLL(None), "vramtrace_mark", None)
if mark:
    mark(b"concurrency=3")
serve(3)
srv.close()
print("phase_python: served 4 requests")
