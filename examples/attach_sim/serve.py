#!/usr/bin/env python3
"""serve.py — a vLLM-shaped HTTP server over the torch stand-in, to be
started WITHOUT the preload and recorded by `vramtrace attach` (README
"Attach during a load test", docs/attach.md).

    LD_LIBRARY_PATH=<fake driver dir> FAKECUDA_MEM=16G \\
        python3 examples/attach_sim/serve.py --port 0

Start-up as vLLM's: the weights (--weights-mib, in --layers tensors), a
profiling forward pass freed and given back (empty_cache), the KV cache
reserve (--kv-mib); then it serves POST /v1/completions on 127.0.0.1,
each request holding --act-mib MiB of activations for --decode-s seconds.
With the allocator's history on (default; --no-history turns it off) the
memory a later attach finds is named by the frames PyTorch keeps. Prints
"ready PORT PID" once it listens.

Many requests at once run the card out of memory: the request's thread
logs PyTorch's OutOfMemoryError and the server ends (exit 1), as vLLM's
engine does on an unhandled one.
"""
import argparse
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402  (the stand-in beside this file)
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        body = b"ok\n" if self.path == "/health" else b"not found\n"
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0") or 0)
        self.rfile.read(n)
        try:
            self.server.runner.execute_model(self.server.act_mib,
                                             self.server.decode_s)
        except torch.OutOfMemoryError as e:
            print(f"ERROR torch.OutOfMemoryError: {e}", flush=True)
            os._exit(1)
        body = b'{"choices": [{"text": "ok"}]}\n'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--weights-mib", type=int, default=6144)
    ap.add_argument("--kv-mib", type=int, default=7168)
    ap.add_argument("--act-mib", type=int, default=1536)
    ap.add_argument("--decode-s", type=float, default=1.0)
    ap.add_argument("--no-history", action="store_true")
    a = ap.parse_args()
    if not a.no_history:
        torch.cuda.memory._record_memory_history()
    runner = GPUModelRunner(a.layers)
    runner.load_model(a.weights_mib)
    runner.profile_run(a.act_mib)
    runner.initialize_kv_cache(a.kv_mib)
    srv = ThreadingHTTPServer(("127.0.0.1", a.port), Handler)
    srv.daemon_threads = True
    srv.runner, srv.act_mib, srv.decode_s = runner, a.act_mib, a.decode_s
    print(f"ready {srv.server_address[1]} {os.getpid()}", flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "api"
    sys.exit(main())
