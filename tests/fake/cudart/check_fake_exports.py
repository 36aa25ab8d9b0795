#!/usr/bin/env python3
"""check_fake_exports.py — the fake CUDA runtime and cuBLAS export what
NVIDIA's libraries export, under the same version node.

A program built by nvcc binds each runtime call to name@libcudart.so.13
(and cuBLAS calls to name@libcublas.so.13); the loader refuses a library
without the node and stops at the first call whose name is missing. So
for each pair FAKE=REAL: the defined dynamic symbols of FAKE, with their
versions (nm -D), must be those of REAL, no more and no fewer.

Usage: check_fake_exports.py FAKE=REAL...
Exit 0 when each pair agrees, 1 with the differences listed, 77 when nm
or a REAL library is missing (no toolkit: nothing to compare with).
"""
import shutil
import subprocess
import sys


def exports(path):
    out = subprocess.run(["nm", "-D", "--defined-only", path],
                         stdout=subprocess.PIPE, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def main():
    if len(sys.argv) < 2 or any("=" not in a for a in sys.argv[1:]):
        print(__doc__.split("\n\n")[-2], file=sys.stderr)
        return 2
    if not shutil.which("nm"):
        print("SKIP: nm not found")
        return 77
    bad = 0
    for pair in sys.argv[1:]:
        fake, real = pair.split("=", 1)
        try:
            want = exports(real)
        except (OSError, subprocess.CalledProcessError) as e:
            print(f"SKIP: {real}: {e}")
            return 77
        got = exports(fake)
        missing, extra = sorted(want - got), sorted(got - want)
        for name in missing:
            print(f"{fake}: missing {name}")
        for name in extra:
            print(f"{fake}: not in {real}: {name}")
        bad |= bool(missing or extra)
        print(f"{'FAIL' if missing or extra else 'ok'} {fake}: "
              f"{len(got)} exports, {len(want)} in {real}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
