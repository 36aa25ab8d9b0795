#!/usr/bin/env python3
"""run_log_bench.py — how fast `vramtrace analyze --log FILE` reads a large
engine log alone, and how much memory it needs (python3 stdlib only).

gen_log.py grows the corpus's vLLM 0.11 log of a server that served, then
ran out of memory, to --mib mebibytes (default 1024: about 8 million
lines, nearly all uvicorn access lines and metrics lines, as a server's
log is after a day). The analyzer runs on it --runs times (default 3),
pinned to one core (taskset -c 0) when taskset is there, writing its JSON
report; the median wall time and CPU time, and the peak RSS from /usr/bin/time -v
(else getrusage of the children), are printed with the target (issue 29:
at most 10 s and 64 MiB for 1 GiB). Each run's verdict must be the small
log's (concurrency, request stage): a fast wrong answer is no answer.

    run_log_bench.py --vramtrace EXE [--mib N] [--runs N] [--keep FILE]

Exit 0 when every run gave the right verdict (times are data, not
failures: the machine may be shared), 1 otherwise.
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET_S = 10.0
TARGET_RSS_MIB = 64.0


def analyze_log(vramtrace, path):
    """One run: (seconds, CPU seconds or None, peak RSS in MiB, the JSON
    report's diagnosis)."""
    timev = os.access("/usr/bin/time", os.X_OK)
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    cmd = (["/usr/bin/time", "-v"] if timev else []) + pin + [
        vramtrace, "analyze", "--format", "json", "--log", path]
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    secs = time.monotonic() - t0
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"analyze --log failed with exit {p.returncode}")
    cpu = None
    u = re.search(r"User time \(seconds\): ([\d.]+)", p.stderr)
    k = re.search(r"System time \(seconds\): ([\d.]+)", p.stderr)
    if u and k:
        cpu = float(u.group(1)) + float(k.group(1))
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    if m:
        rss = int(m.group(1)) / 1024
    else:
        rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return secs, cpu, rss, json.loads(p.stdout).get("diagnosis", {})


def measure(vramtrace, mib, runs, keep=None):
    """Generates the log, runs the analyzer; a dict of the figures."""
    tmp = tempfile.mkdtemp(prefix="log-bench-")
    path = keep or os.path.join(tmp, "server.log")
    try:
        if not (keep and os.path.exists(keep)):
            subprocess.run([sys.executable, os.path.join(HERE, "gen_log.py"),
                            path, "--mib", str(mib)], check=True)
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            lines = sum(chunk.count(b"\n") for chunk in
                        iter(lambda: f.read(1 << 24), b""))
        secs, cpus, rss, right = [], [], [], True
        for _ in range(runs):
            s, c, r, d = analyze_log(vramtrace, path)
            secs.append(s)
            if c is not None:
                cpus.append(c)
            rss.append(r)
            right = right and (d.get("verdict"), d.get("stage")) == (
                "concurrency", "request")
        return {"bytes": size, "lines": lines, "runs": runs,
                "secs": statistics.median(secs),
                "cpu_s": statistics.median(cpus) if cpus else None,
                "rss_mib": max(rss),
                "mib_per_s": size / 2**20 / statistics.median(secs),
                "right": right}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="the log here (made once, kept)")
    a = ap.parse_args()
    r = measure(a.vramtrace, a.mib, a.runs, a.keep)
    scale = 1024 / a.mib
    print(f"engine log: {r['bytes'] / 2**20:.0f} MiB, {r['lines']:,} lines; "
          f"median of {r['runs']} runs, one core")
    print(f"  wall {r['secs']:.2f} s ({r['mib_per_s']:.0f} MiB/s; "
          f"{r['secs'] * scale:.2f} s per GiB; target <= {TARGET_S:.0f} s)")
    if r["cpu_s"] is not None:
        print(f"  CPU {r['cpu_s']:.2f} s (user + system: what a busy "
              f"machine's wall time is made of)")
    print(f"  peak RSS {r['rss_mib']:.1f} MiB (target <= "
          f"{TARGET_RSS_MIB:.0f} MiB)")
    print(f"  verdict: {'right' if r['right'] else 'WRONG'} "
          f"(concurrency, request stage)")
    return 0 if r["right"] else 1


if __name__ == "__main__":
    sys.exit(main())
