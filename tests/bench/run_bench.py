#!/usr/bin/env python3
"""run_bench.py — what the preload adds per alloc+free pair, on the fake
driver: bare, then under the preload in standby (live table only), and
recording with stacks none / native / native,python, at 1 and 8 threads (native stacks ~40 frames deep, one
repeated call site), and from Python through ctypes. Every figure comes
from this one run on this machine; compare the ratios, not the absolute
numbers (machines are shared and noisy). Each configuration runs 3 times
and the median is kept. The figure is CPU time of the calling threads per
pair (bench_alloc.c says why), on the fake driver's benchmark mode
(FAKECUDA_BENCH=1), so the driver's own lock does not swamp it.
run_all.py prints these figures and the rest beside heaptrack's.

    run_bench.py --bench EXE --python-bench PY --preload LIB --fake-dir DIR
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile


def median_ns(cmd, env, field):
    vals = []
    for _ in range(3):
        out = subprocess.run(cmd, env=env, check=True, text=True,
                             stdout=subprocess.PIPE).stdout.split()
        vals.append(float(out[field]))
    return statistics.median(vals)


def preload_env(env, preload, stacks, out):
    """The environment of one configuration: standby keeps only the live
    table; the others record with the given stacks."""
    env["LD_PRELOAD"] = os.path.abspath(preload)
    env["VRAMTRACE_OUT"] = out
    if stacks == "standby":
        env["VRAMTRACE_START"] = "standby"
    else:
        env["VRAMTRACE_STACKS"] = stacks


def main():
    ap = argparse.ArgumentParser()
    for o in ("--bench", "--python-bench", "--preload", "--fake-dir"):
        ap.add_argument(o, required=True)
    ap.add_argument("--pairs", type=int, default=200000)
    a = ap.parse_args()
    base = dict(os.environ)
    base["LD_LIBRARY_PATH"] = a.fake_dir
    base["FAKECUDA_MEM"] = "80G"
    base["FAKECUDA_BENCH"] = "1"
    tmp = tempfile.mkdtemp(prefix="vrt-bench-")
    configs = [("bare", None), ("standby", "standby"),
               ("stacks=none", "none"), ("stacks=native", "native"),
               ("stacks=native,python", "native,python")]
    print(f"{'configuration':24} {'threads':>7} {'cpu ns/pair':>9} "
          f"{'added ns':>9} {'ratio':>6}")
    for threads in (1, 8):
        bare = None
        for name, stacks in configs:
            env = dict(base)
            if stacks is not None:
                preload_env(env, a.preload, stacks,
                            os.path.join(tmp, f"{threads}-{stacks}"))
            ns = median_ns([a.bench, "--threads", str(threads), "--pairs",
                            str(a.pairs // threads), "--depth", "40"],
                           env, 4)
            if bare is None:
                bare = ns
            print(f"{name:24} {threads:7} {ns:9.1f} {ns - bare:9.1f} "
                  f"{ns / bare:6.2f}")
    bare = None
    for name, stacks in configs:
        env = dict(base)
        if stacks is not None:
            preload_env(env, a.preload, stacks,
                        os.path.join(tmp, f"py-{stacks}"))
        ns = median_ns([sys.executable, a.python_bench, "50000"], env, 2)
        if bare is None:
            bare = ns
        print(f"{'python ' + name:24} {1:7} {ns:9.1f} {ns - bare:9.1f} "
              f"{ns / bare:6.2f}")
    subprocess.run(["rm", "-rf", tmp])
    return 0


if __name__ == "__main__":
    sys.exit(main())
