#!/usr/bin/env python3
"""safety_vfork.py — a Python host for run_safety.py: 3 allocations of 1 MiB
(freed) through ctypes on the fake driver, then a subprocess whose program
does not exist (CPython 3.10+ starts it with vfork, and the child reports the
failed exec and leaves through _exit), then 5 more allocations. Prints
"vfork True|False" (subprocess._USE_VFORK, where the interpreter has it) and
exits 0."""
import ctypes as C
import subprocess
import sys

lib = C.CDLL("libcuda.so.1")
ctx = C.c_void_p()
if lib.cuInit(0) or lib.cuDevicePrimaryCtxRetain(C.byref(ctx), 0) or \
        lib.cuCtxSetCurrent(ctx):
    sys.exit("safety_vfork: driver set-up failed")


def one():
    p = C.c_ulonglong()
    if lib.cuMemAlloc_v2(C.byref(p), C.c_size_t(1 << 20)) or \
            lib.cuMemFree_v2(p):
        sys.exit("safety_vfork: alloc/free failed")


for _ in range(3):
    one()
try:
    subprocess.run(["/nonexistent/vramtrace-no-such-program"])
    sys.exit("safety_vfork: the missing program ran")
except FileNotFoundError:
    pass
for _ in range(5):
    one()
print("vfork", getattr(subprocess, "_USE_VFORK", False))
