#!/usr/bin/env python3
"""run_load_bench.py — how fast the streaming loader (vrt_load_open +
vrt_load_next) delivers the events of a large trace, and its peak RSS
(python3 stdlib only).

gen_trace writes N events (default 10M) through the capture core, as for
run_analyze_bench.py; load_speed then loads the trace 3 times in one
process, pinned to one core (taskset -c 0) when taskset is there, and
reports the fastest run. Figures are from this machine only; machines are
shared and noisy.

    run_load_bench.py --gen EXE --load-speed EXE [--events N]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--load-speed", required=True)
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="vrt-load-bench-")
    try:
        run_dir = os.path.join(tmp, "run")
        g = subprocess.run([a.gen, "--out", run_dir, "--events",
                            str(a.events)], check=True, text=True,
                           stdout=subprocess.PIPE).stdout.split()
        f = dict(zip(g[0::2], g[1::2]))
        size = int(f["bytes"])
        pin = ["taskset", "-c", "0"] if shutil.which("taskset") else []
        out = subprocess.run(pin + [a.load_speed, "--repeat", str(a.runs),
                                    run_dir],
                             check=True, text=True,
                             stdout=subprocess.PIPE).stdout.split()
        r = dict(zip(out[0::2], out[1::2]))
        events = int(r["events"])
        print(f"{'figure':28} {'value':>16}")
        print(f"{'events delivered':28} {events:16,}")
        print(f"{'trace file':28} {size / 2**20:13.1f} MiB")
        print(f"{'core':28} {'cpu 0' if pin else 'any':>16}")
        print(f"{'load (best of ' + str(a.runs) + ')':28} "
              f"{float(r['seconds']):14.3f} s")
        print(f"{'events/s (wall)':28} {float(r['events_per_s']):16,.0f}")
        print(f"{'load CPU (best)':28} {float(r['cpu_seconds']):14.3f} s")
        print(f"{'events per CPU second':28} "
              f"{float(r['events_per_cpu_s']):16,.0f}")
        print(f"{'peak RSS':28} {int(r['peak_rss_kib']) / 1024:13.1f} MiB")
        print(f"{'late events':28} {int(r['late']):16,}")
        print(f"{'most events held at once':28} {int(r['held_max']):16,}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
