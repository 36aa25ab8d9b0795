#!/usr/bin/env python3
"""run_hip_real.py — the real HIP runtime under the preload (stdlib only).

    run_hip_real.py --client EXE|--missing --vramtrace EXE --preload LIB
                    --tmp-root DIR

With --missing (the build found no libamdhip64) it exits 77: meson counts
the test as skipped. Otherwise:
  1. runs CLIENT bare: it calls every hooked HIP function on the real
     runtime (no AMD GPU needed) and writes "<api> <code> <recorded>" per
     call; it must exit 0;
  2. runs it under `vramtrace record`: it must exit 0 and every call must
     return exactly the code it returned bare (the preload forwards the
     runtime's results unchanged);
  3. `vramtrace analyze --format json` must exit 0, and its failures must be
     exactly the failed calls marked recorded, each with the same api and
     error code (NULL frees and failed probes are no events), and the
     failed hipMemCreate is charged to the device its HIP 5 prop names.
Exit status: 0 pass, 1 fail, 77 skip.
"""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import options


def run(cmd, env):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    err = p.stderr.decode(errors="replace").strip()
    if err:
        print(err[-3000:], flush=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {cmd[0]}: exit status {p.returncode}")
    return p.stdout.decode(errors="replace")


def rows(path):
    with open(path) as f:
        return [tuple(line.split()) for line in f if line.strip()]


def main():
    ap = options("--vramtrace", "--preload", "--tmp-root",
                 description=__doc__.split("\n")[0])
    ap.add_argument("--client")
    ap.add_argument("--missing", action="store_true")
    a = ap.parse_args()
    if a.missing or not a.client:
        print("SKIP: the real HIP runtime (libamdhip64) is not installed")
        return 77
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "VRAMTRACE_OUT", "LD_LIBRARY_PATH"):
        env.pop(k, None)
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(a.preload)
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="hip-real-", dir=a.tmp_root)
    bare, rec = os.path.join(tmp, "bare.txt"), os.path.join(tmp, "rec.txt")
    rundir = os.path.join(tmp, "run")
    run([a.client, "--out", bare], env)
    run([a.vramtrace, "record", "-o", rundir, "--", a.client, "--out", rec],
        env)
    want, got = rows(bare), rows(rec)
    for line in want:
        print("  " + " ".join(line))
    if want != got:
        print("FAIL: results differ under the preload:")
        for w, g in zip(want, got):
            if w != g:
                print(f"  bare {w} vs preload {g}")
        return 1
    rep = json.loads(run([a.vramtrace, "analyze", rundir, "--format",
                          "json"], env))
    expected = collections.Counter(
        (api, int(code)) for api, code, recorded in want
        if code != "0" and recorded == "1")
    failures = collections.Counter(
        (f.get("api"), f.get("error")) for f in rep.get("failures") or [])
    if failures != expected:
        print(f"FAIL: failures in the trace {sorted(failures.items())}, "
              f"expected {sorted(expected.items())}")
        return 1
    # hipMemCreate's device comes from its prop (HIP 5 layout, device 1).
    devs = {d.get("id"): d for d in rep.get("devices") or []}
    for f in rep.get("failures") or []:
        if f.get("api") != "hipMemCreate":
            continue
        d = devs.get(f.get("device")) or {}
        if (d.get("vendor"), d.get("ordinal")) != ("hip", 1):
            print(f"FAIL: hipMemCreate failure on {d or f.get('device')}, "
                  f"expected HIP device 1 (the prop's location)")
            return 1
    print(f"PASS: {len(want)} calls forwarded unchanged, "
          f"{sum(expected.values())} failures recorded")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
