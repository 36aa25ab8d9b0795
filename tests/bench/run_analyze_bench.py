#!/usr/bin/env python3
"""run_analyze_bench.py — how fast `vramtrace analyze --format json` reads a
large trace, and how much memory it needs (python3 stdlib only).

gen_trace writes N events (default 10M: alloc/free pairs over a few
thousand live addresses, a few hundred stacks and phases, two devices)
through the capture core, so the file is in the real format. The analyzer
then runs on it 3 times, pinned to one core (taskset -c 0) when taskset is
there; the median wall time gives events/s. Peak RSS comes from
/usr/bin/time -v when present, else from getrusage(RUSAGE_CHILDREN) (the
largest child so far: the analyzer is by far the largest). Figures are
from this machine only; machines are shared and noisy.

    run_analyze_bench.py --gen EXE --vramtrace EXE [--events N]
"""
import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def analyze_once(cmd):
    """Runs the analyzer once; returns (seconds, peak RSS in KiB or None
    when only the RUSAGE_CHILDREN figure is available)."""
    timev = os.access("/usr/bin/time", os.X_OK)
    full = (["/usr/bin/time", "-v"] if timev else []) + cmd
    t0 = time.monotonic()
    p = subprocess.run(full, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"analyze failed with exit {p.returncode}")
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    return secs, int(m.group(1)) if m else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vrt-analyze-bench-")
    try:
        run_dir = os.path.join(tmp, "run")
        g = subprocess.run([a.gen, "--out", run_dir, "--events",
                            str(a.events)], check=True, text=True,
                           stdout=subprocess.PIPE).stdout.split()
        f = dict(zip(g[0::2], g[1::2]))
        events, size = int(f["events"]), int(f["bytes"])
        pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
        cmd = pin + [a.vramtrace, "analyze", "--format", "json", run_dir]
        runs = [analyze_once(cmd) for _ in range(a.runs)]
        secs = statistics.median(r[0] for r in runs)
        rss = [r[1] for r in runs if r[1] is not None]
        if rss:
            rss_kib, rss_src = max(rss), "/usr/bin/time -v"
        else:
            rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
            rss_src = "getrusage(RUSAGE_CHILDREN)"
        print(f"{'figure':28} {'value':>16}")
        print(f"{'events in trace':28} {events:16,}")
        print(f"{'trace file':28} {size / 2**20:13.1f} MiB")
        print(f"{'bytes per event':28} {size / events:16.2f}")
        print(f"{'core':28} {'cpu 0' if pin else 'any':>16}")
        print(f"{'analyze (median of ' + str(len(runs)) + ')':28} "
              f"{secs:14.2f} s")
        print(f"{'events/s':28} {events / secs:16,.0f}")
        print(f"{'peak RSS':28} {rss_kib / 1024:13.1f} MiB")
        print(f"{'peak RSS per 1M events':28} "
              f"{rss_kib / 1024 / (events / 1e6):13.1f} MiB")
        print(f"(generation: {f['seconds']} s; RSS from {rss_src})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
