#!/usr/bin/env python3
"""run_hip_standby.py — standby costs no HIP runtime call per allocation.

In standby the preload keeps allocations in its live table without asking
the runtime for the current device (hipGetDevice): the device is asked of
the allocation's address (hipPointerGetAttribute) only when the table is
read. hip_standby.c counts the hipGetDevice calls the fake runtime
answers while it makes N hipMalloc and N hipMallocAsync on device 1:

1. bare (no preload): the program's own count;
2. under the preload in standby: the same count, and `vramtrace ctl
   status` still puts the 2N MiB on HIP device 1;
3. under the preload recording: at least 2N more (the device is asked
   for every allocation recorded), which shows the counter sees the
   preload's calls at all.

Usage: run_hip_standby.py --client EXE --vramtrace EXE --preload LIB
                          --fake-dir DIR --tmp-root DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Tap, options

N = 64
MIB = 1 << 20


def run(a, env, on_ready=None):
    """Runs the client; returns (hipGetDevice calls, on_ready's value)."""
    p = subprocess.Popen([a.client, str(N)], env=env, text=True,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    calls, got = None, None
    try:
        for line in p.stdout:
            if line.startswith("getdevice "):
                calls = int(line.split()[1])
            elif line.strip() == "ready":
                got = on_ready() if on_ready else None
                p.stdin.write("go\n")
                p.stdin.flush()
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if p.returncode != 0:
        raise RuntimeError(f"hip_standby exited {p.returncode}")
    return calls, got


def main():
    a = options("--client", "--vramtrace", "--preload", "--fake-dir",
                "--tmp-root").parse_args()
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="hip-standby-", dir=a.tmp_root)
    t = Tap()
    base = dict(os.environ)
    base["LD_LIBRARY_PATH"] = a.fake_dir
    base["FAKEHIP_DEVICES"] = "2"
    for k in [k for k in base if k.startswith("VRAMTRACE_")]:
        del base[k]

    bare, _ = run(a, base)
    t.note(f"bare: {bare} hipGetDevice calls")

    def status(run_dir):
        r = subprocess.run([a.vramtrace, "ctl", run_dir, "status", "--json"],
                           text=True, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=30)
        return r.stdout

    env = dict(base, LD_PRELOAD=os.path.abspath(a.preload),
               VRAMTRACE_OUT=os.path.join(tmp, "standby"),
               VRAMTRACE_START="standby")
    standby, out = run(a, env, lambda: status(env["VRAMTRACE_OUT"]))
    t.ok(standby == bare, "standby asks the runtime for no current device",
         f"bare {bare}, standby {standby}")
    try:  # one process: one line of JSON
        st = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        st = {}
    devs = {(d.get("vendor"), d.get("id")): d.get("live_bytes")
            for d in st.get("devices", [])}
    t.ok(st.get("state") == "standby" and
         devs.get(("hip", 1)) == 2 * N * MIB,
         "standby's live bytes are on HIP device 1 (asked by address)",
         out)

    env = dict(base, LD_PRELOAD=os.path.abspath(a.preload),
               VRAMTRACE_OUT=os.path.join(tmp, "record"))
    rec, _ = run(a, env)
    t.ok(rec is not None and rec >= bare + 2 * N,
         "recording asks for the device of every allocation",
         f"bare {bare}, recording {rec}")
    rc = t.done()
    if rc == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
