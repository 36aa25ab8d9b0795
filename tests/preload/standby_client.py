#!/usr/bin/env python3
"""standby_client — a process started in standby that drives its own
control endpoint, so the test needs no timing:

  standby: alloc A 100 MiB (kept), alloc+free B 7 MiB; on device 1
  (FAKECUDA_DEVICES=2), E 30 MiB and an async F 20 MiB (kept)
  "status" must say standby with 100 MiB live on device 0 and 50 MiB on
  device 1 (standby asks the driver for a device only when read)
  "start"  -> recording (the trace opens with a snapshot: A)
  alloc C 50 MiB, "mark after-start"
  "stop"   -> standby
  alloc D 1 MiB (not recorded)
  a connection from another uid is refused (when run as root)

Prints the replies it got, one per line, and exits 0 if all were as
expected.
"""
import ctypes
import json
import os
import socket
import sys

MIB = 1 << 20
cuda = ctypes.CDLL("libcuda.so.1")
ctx = ctypes.c_void_p()
ctx1 = ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx1), 1) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0


def alloc(n):
    p = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(n)) == 0
    return p.value


def alloc_async(n):
    p = ctypes.c_uint64()
    assert cuda.cuMemAllocAsync(ctypes.byref(p), ctypes.c_size_t(n),
                                ctypes.c_void_p(0)) == 0
    return p.value


def ctl(cmd):
    path = os.path.join(os.environ["VRAMTRACE_OUT"], f"{os.getpid()}.ctl")
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    s.sendall(cmd.encode() + b"\n")
    data = b""
    while not data.endswith(b"\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    reply = data.decode().strip()
    print(f"{cmd}: {reply}", flush=True)
    return reply


ok = True
a = alloc(100 * MIB)
cuda.cuMemFree_v2(ctypes.c_uint64(alloc(7 * MIB)))
assert cuda.cuCtxSetCurrent(ctx1) == 0
e = alloc(30 * MIB)
f = alloc_async(20 * MIB)
assert cuda.cuCtxSetCurrent(ctx) == 0
st = json.loads(ctl("status"))
live = {d["id"]: d["live_bytes"] for d in st["devices"]}
ok &= st["state"] == "standby" and live == {0: 100 * MIB, 1: 50 * MIB}
ok &= ctl("start") == "ok recording"
ok &= ctl("start") == "ok already recording"
c = alloc(50 * MIB)
ok &= ctl("mark after-start") == "ok"
ok &= json.loads(ctl("status"))["state"] == "recording"
ok &= ctl("stop") == "ok standby"
d = alloc(1 * MIB)
ok &= ctl("bogus").startswith("error")

if os.geteuid() == 0:
    pid = os.fork()
    if pid == 0:
        os.setgid(65534)
        os.setuid(65534)
        try:
            ctl("status")
            os._exit(1)  # reached the endpoint: not refused
        except OSError:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    refused = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    print(f"other uid refused: {refused}", flush=True)
    ok &= refused
sys.exit(0 if ok else 1)
