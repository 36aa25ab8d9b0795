#!/usr/bin/env python3
"""run_logcap_bench.py — does `vramtrace record` slow a chatty server?

tests/bench/spew writes MB megabytes (default 200) of 100-byte log lines
to stdout as fast as it can and times itself. It runs, RUNS times each:

  bare       spew > FILE                       (the baseline)
  record     vramtrace record -- spew > FILE   (stdout copied to FILE and
                                               kept in output.log)
  no-log     vramtrace record --no-log -- spew > FILE

and the table prints the median of each, its throughput, the slowdown
against bare, the noise (bare's own spread), how much output record's log
thread dropped (it never makes the command wait), and output.log's size
against its bound (--log-max, default 32 MiB). Nothing is asserted on
times: it measures and prints (docs/performance.md).

Usage: run_logcap_bench.py --vramtrace EXE --preload LIB --spew EXE
                           [--mb N] [--runs N]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run_once(cmd, out_path, res_path, env):
    with open(out_path, "wb") as out, open(out_path + ".err", "wb") as err:
        subprocess.run(cmd, stdout=out, stderr=err, env=env, check=True,
                       timeout=600)
    secs, nbytes = open(res_path).read().split()
    return float(secs), int(nbytes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--spew", required=True)
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="logcap-bench-")
    env = dict(os.environ)
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env.pop("VRAMTRACE_OUT", None)
    res = os.path.join(tmp, "result")
    out = os.path.join(tmp, "stdout")
    spew = [os.path.abspath(args.spew), str(args.mb), res]
    modes = {"bare": [], "record": [], "no-log": []}
    logsize, dropped = [], []
    try:
        for i in range(args.runs):
            for mode in modes:
                rundir = os.path.join(tmp, f"run-{mode}-{i}")
                if mode == "bare":
                    cmd = spew
                elif mode == "record":
                    cmd = [args.vramtrace, "record", "-o", rundir, "--"] + spew
                else:
                    cmd = [args.vramtrace, "record", "--no-log", "-o",
                           rundir, "--"] + spew
                secs, nbytes = run_once(cmd, out, res, env)
                if os.path.getsize(out) != nbytes:
                    raise SystemExit(f"{mode}: stdout holds "
                                     f"{os.path.getsize(out)} of {nbytes}")
                modes[mode].append(secs)
                if mode == "record":
                    log = os.path.join(rundir, "output.log")
                    logsize.append(os.path.getsize(log))
                    with open(log, "rb") as f:
                        dropped.append(sum(
                            int(l.split(b"--- vramtrace: ")[1].split()[0])
                            for l in f if b"bytes of output dropped" in l))
                if mode != "bare":
                    shutil.rmtree(rundir, ignore_errors=True)
        base = statistics.median(modes["bare"])
        noise = (max(modes["bare"]) - min(modes["bare"])) / base * 100
        print(f"spew: {args.mb} MiB of 100-byte lines to a file, "
              f"{args.runs} runs each (median)")
        print(f"{'mode':8} {'seconds':>9} {'MiB/s':>9} {'vs bare':>9}")
        for mode, ts in modes.items():
            m = statistics.median(ts)
            print(f"{mode:8} {m:9.3f} {args.mb / m:9.1f} "
                  f"{(m / base - 1) * 100:+8.1f}%")
        print(f"noise (bare's spread): {noise:.1f}%")
        print(f"output.log: lines the log thread could not take in time "
              f"(dropped, the command never waits): median "
              f"{statistics.median(dropped) / 2**20:.1f} MiB of {args.mb}")
        print(f"output.log: {max(logsize)} bytes, bound "
              f"{32 * 1024 * 1024} (--log-max default): "
              f"{'within' if max(logsize) <= 32 * 1024 * 1024 else 'OVER'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
