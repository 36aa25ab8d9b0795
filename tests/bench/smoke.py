#!/usr/bin/env python3
"""smoke.py — the benchmark program runs end to end (python3 stdlib only).

`./build.sh bench` is not part of the test suite (it takes minutes and its
figures need a quiet machine), so a mistake in how it runs a workload only
shows as an "n/a" row much later. This runs run_all.py with tiny counts and
without heaptrack, and checks that it exits 0, that no configuration
failed (no "note:" line) and that every figure of vramtrace's own is a
number. It judges no speed.

Usage: smoke.py RUN_ALL_ARGS...   (run_all.py's required options)
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory(prefix="vrt-bench-smoke-") as tmp:
        out = os.path.join(tmp, "figures.json")
        cmd = [sys.executable, os.path.join(here, "run_all.py")] + \
            sys.argv[1:] + ["--pairs", "4000", "--python-pairs", "400",
                            "--events", "40000", "--mixed-events", "40000",
                            "--paced-seconds", "0.3", "--runs", "1",
                            "--no-heaptrack", "--json", out]
        p = subprocess.run(cmd, text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=600)
        fails = []
        if p.returncode != 0:
            fails.append(f"run_all.py exited {p.returncode}")
        fails += [line for line in p.stdout.splitlines()
                  if line.startswith("note:")]
        try:
            figs = json.load(open(out))["figures"]
        except (OSError, ValueError) as e:
            figs = {}
            fails.append(f"no figures: {e}")
        fails += [f"{k}: no figure" for k, v in sorted(figs.items())
                  if v is None and "heaptrack" not in k]
    for f in fails:
        print("FAILED " + f)
    if fails:
        print(p.stdout)
        return 1
    print(f"ok     {len(figs)} figures, every configuration ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
