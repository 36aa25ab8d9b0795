#!/usr/bin/env python3
"""alloc.py — a plain program that is not a server: it asks the CUDA
driver for GPU memory, 1 GiB at a time, until the driver refuses, and
exits 1 with the driver's error. The README's quickstart records it on
the fake GPU (tests/fake/libcuda.so.1) to show what `vramtrace analyze`
says about your own program:

    LD_LIBRARY_PATH=build/tests/fake FAKECUDA_MEM=8G \\
        build/analyzer/vramtrace record -o run1 -- python3 examples/alloc.py

It reaches the driver the way Python code that calls it directly does
(ctypes: dlopen of libcuda.so.1, dlsym of each name), so it runs the same
on a real NVIDIA GPU. Options: --block-mib N (default 1024), --max N (at
most N blocks; 0, the default: until the driver refuses), --hold S (after
the last block, hold them S seconds before exiting 0), --until FILE (hold
them until FILE exists, at most --hold seconds).
"""
import argparse
import ctypes
import os
import sys
import time


def load_driver():
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        sys.exit(f"alloc.py: no CUDA driver ({e}); on the fake GPU, put "
                 "build/tests/fake on LD_LIBRARY_PATH")


def check(cuda, rc, what):
    if rc != 0:
        name = ctypes.c_char_p()
        cuda.cuGetErrorName(rc, ctypes.byref(name))
        sys.exit(f"alloc.py: {what} failed: "
                 f"{(name.value or b'?').decode()} ({rc})")


def grab(cuda, block):
    ptr = ctypes.c_ulonglong()
    return cuda.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(block))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--block-mib", type=int, default=1024)
    ap.add_argument("--max", type=int, default=0)
    ap.add_argument("--hold", type=float, default=0)
    ap.add_argument("--until")
    a = ap.parse_args()
    cuda = load_driver()
    check(cuda, cuda.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    check(cuda, cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    # The device's primary context, as the CUDA runtime (and so PyTorch)
    # uses it.
    check(cuda, cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev),
          "cuDevicePrimaryCtxRetain")
    check(cuda, cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    block, held = a.block_mib << 20, 0
    while a.max == 0 or held < a.max:
        check(cuda, grab(cuda, block), f"block {held + 1}")
        held += 1
        print(f"alloc.py: holding {held} x {a.block_mib} MiB", flush=True)
    end = time.monotonic() + a.hold
    while time.monotonic() < end:
        if a.until and os.path.exists(a.until):
            break
        time.sleep(min(0.05, max(0.0, end - time.monotonic())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
