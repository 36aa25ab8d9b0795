#!/usr/bin/env python3
"""run_standby.py — standby, start, stop through the control endpoint.

Records standby_client.py with `record --standby` (see its docstring
for what it does), then checks `vramtrace analyze --format json`: only the
recording window counts — device 0 holds A (100 MiB, from the snapshot,
not counted as an allocation) and C (50 MiB, the one allocation counted)
at the end; device 1 holds E and F (50 MiB, from the snapshot); B and D
(made in standby) are not in the trace; the peak is 150 MiB; the mark is
there; the endpoint socket is gone after exit.

Usage: run_standby.py --vramtrace EXE --preload LIB --fake-dir DIR
                      --client PY --tmp-root DIR
"""
import glob
import json
import os
import subprocess
import sys

from harness import check, options, record_env, scratch

MIB = 1 << 20


def check_run(a, env, tmp):
    run = os.path.join(tmp, "run")
    p = subprocess.run([a.vramtrace, "record", "--standby", "-o", run, "--",
                        sys.executable, a.client], env=env, text=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=100)
    print(p.stdout)
    check(p.returncode == 0, "the client's own checks passed")
    check(not glob.glob(os.path.join(run, "*.ctl")),
          "no control socket left after exit")
    out = subprocess.run([a.vramtrace, "analyze", "--format", "json", run],
                         env=env, text=True, stdout=subprocess.PIPE,
                         timeout=100)
    check(out.returncode == 0, "analyze succeeds")
    rep = json.loads(out.stdout) if out.returncode == 0 else {}
    dev = [d for d in rep.get("devices", []) if d.get("id") == 0]
    fam = dev[0]["families"]["device"] if dev else {}
    check(fam.get("allocs") == 1, f"one allocation counted (got {fam})")
    check(fam.get("live_bytes_end") == 150 * MIB,
          f"150 MiB live at the end: snapshot + C (got {fam})")
    check(fam.get("peak_bytes") == 150 * MIB, f"peak 150 MiB (got {fam})")
    dev1 = [d for d in rep.get("devices", []) if d.get("id") == 1]
    fam1 = {}
    if dev1:
        fams = dev1[0]["families"]
        fam1 = {"device": fams.get("device", {}).get("live_bytes_end"),
                "async": fams.get("async", {}).get("live_bytes_end")}
    check(fam1 == {"device": 30 * MIB, "async": 20 * MIB},
          f"device 1 holds E and F from the snapshot (got {fam1})")
    labels = [m.get("label") for m in rep.get("marks", [])]
    check(labels == ["after-start"], f"the mark is recorded (got {labels})")


def main():
    a = options("--vramtrace", "--preload", "--fake-dir", "--client",
                "--tmp-root").parse_args()
    env = record_env(a, {"FAKECUDA_DEVICES": "2"})
    return scratch(a, "standby-", lambda tmp: check_run(a, env, tmp))


if __name__ == "__main__":
    sys.exit(main())
