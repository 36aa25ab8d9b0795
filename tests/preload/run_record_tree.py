#!/usr/bin/env python3
"""run_record_tree.py — the run is the whole tree `vramtrace record`
started, and a run can be read while it records (python3 stdlib only).

root        vLLM's process layout (serve_sim --distributed-executor-backend
            mp, --tensor-parallel-size 2, --no-shard): the API server,
            which `record` started, makes no GPU call and dies when its
            engine core does. It is in the run all the same: its trace
            holds its command line (so the run's flags and engine are
            known without the engine's log) and its exit status; every
            process of the run has an exit status (the workers' from the
            engine core that reaped them), none is `exit ?`; and without
            the log the verdict is still not_sharded, from the root's
            --tensor-parallel-size.
exits       a traced child killed by SIGKILL and reaped by its traced
            parent (Python's subprocess): "signal 9" from the parent's wait;
            a process that leaves by os._exit(7), and one that returns 5
            from main, with the exit files `record` wrote removed: the
            status from their own trailers.
snapshot    a program in standby on device 1 of a driver that cannot tell
            an address's device (FAKECUDA_NO_POINTER_QUERY): after `ctl
            start`, every allocation it made before, the small ones whose
            device standby left for later too, is in the snapshot on
            device 1, none dropped.
running     examples/alloc.py holding its memory for seconds: analyzed
            while it runs, the process is "still running", nothing is
            TRUNCATED and nothing died; analyzed after, it exited 0.

Usage: run_record_tree.py --vramtrace EXE --preload LIB --fake-dir DIR
                          --bin-dir DIR --src DIR --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import json
import os
import signal
import subprocess
import sys
import time

from harness import check, options, poll, record_env, scratch


def env_of(args, extra=None):
    return record_env(args, extra=extra, clean=("FAKECUDA_", "FAKENVML_"),
                      drop=("VRAMTRACE_OUT", "LD_PRELOAD", "VRAMTRACE_ROOT"))


def analyze(args, out, *more, env=None, fmt="json"):
    p = subprocess.run([args.vramtrace, "analyze", "-f", fmt] + list(more)
                       + [out], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if fmt != "json":
        return p.returncode, p.stdout + p.stderr
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        print(p.stdout + p.stderr)
        return p.returncode, {}


def root(args, tmp):
    env = env_of(args, {"FAKECUDA_DEVICES": "2"})
    out = os.path.join(tmp, "root")
    sim = os.path.join(args.bin_dir, "serve_sim")
    cmd = [args.vramtrace, "record", "-o", out, "--", sim, "serve",
           "sim-model", "--distributed-executor-backend", "mp",
           "--model-size-gib", "100", "--tensor-parallel-size", "2",
           "--no-shard"]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    p.wait(timeout=100)
    check(p.returncode == 1, f"root: record exits 1 as vLLM's API server "
                             f"does (got {p.returncode})")
    rc, rep = analyze(args, out, "--no-log", env=env)
    procs = {x["pid"]: x for x in rep.get("run", {}).get("processes", [])}
    # record's child is the API server
    roots = [x for x in procs.values() if x["ppid"] == p.pid]
    check(len(roots) == 1 and roots[0]["cmdline"][1:3] ==
          ["serve", "sim-model"] and roots[0]["events"] == 0 and
          roots[0]["exit_status"] == 1,
          f"root: the API server, with no GPU call, is in the run with its "
          f"command line and exit 1 (got {roots})")
    check(procs and all(x["exit_status"] is not None
                        for x in procs.values()),
          "root: every process has an exit status "
          f"({[(x['pid'], x['exit_status']) for x in procs.values()]})")
    dg = rep.get("diagnosis", {})
    check(dg.get("engine") == "vllm" and
          dg.get("flags", {}).get("tensor_parallel") == 2 and
          dg.get("detail") == "not_sharded",
          f"root: without the log, the root's flags make it not_sharded "
          f"(got {dg.get('engine')}, {dg.get('flags')}, {dg.get('detail')})")
    rc, text = analyze(args, out, "--no-log", env=env, fmt="text")
    check("exit ?" not in text and "no exit status was recorded" not in text,
          "root: no process is `exit ?`")


ALLOC_THEN = """
import ctypes, os, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_ulonglong()
cuda.cuInit(0); cuda.cuDeviceGet(ctypes.byref(dev), 0)
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
cuda.cuCtxSetCurrent(ctx)
cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(1 << 30))
how = sys.argv[1]
if how == "_exit":
    os._exit(7)
if how == "hold":
    time.sleep(60)
sys.exit(5)
"""

PARENT = """
import subprocess, sys, time, os
kid = subprocess.Popen([sys.executable, "-c", sys.argv[1], "hold"])
d = os.environ["VRAMTRACE_OUT"]
for _ in range(300):
    if os.path.exists(os.path.join(d, f"{kid.pid}.vtrace")):
        break
    time.sleep(0.05)
time.sleep(0.3)
kid.kill()
kid.wait()
print(kid.pid, flush=True)
"""


def exits(args, tmp):
    env = env_of(args)
    out = os.path.join(tmp, "killed")
    p = subprocess.run([args.vramtrace, "record", "-o", out, "--",
                        sys.executable, "-c", PARENT, ALLOC_THEN], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=60)
    kid = int(p.stdout.split()[0]) if p.stdout.split() else 0
    exitf = os.path.join(out, f"{kid}.exit")
    check(os.path.exists(exitf) and open(exitf).read() == "signal 9\n",
          f"exits: the parent's wait wrote the killed child's exit file "
          f"({p.stderr[-300:]})")
    rc, rep = analyze(args, out, env=env)
    procs = {x["pid"]: x for x in rep.get("run", {}).get("processes", [])}
    check(procs.get(kid, {}).get("exit_signal") == 9,
          f"exits: the killed child is signal 9 in the report "
          f"({procs.get(kid)})")
    for how, want in (("_exit", 7), ("return", 5)):
        out = os.path.join(tmp, "own" + how)
        p = subprocess.run([args.vramtrace, "record", "-o", out, "--",
                            sys.executable, "-c", ALLOC_THEN, how], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=60)
        for name in os.listdir(out):
            if name.endswith(".exit"):
                os.remove(os.path.join(out, name))
        rc, rep = analyze(args, out, env=env)
        got = [x["exit_status"] for x in rep["run"]["processes"]]
        check(p.returncode == want and got == [want],
              f"exits: {how}: its own trailer says exit {want} (got "
              f"{p.returncode}, {got})")


STANDBY_PROG = """
import ctypes, os, sys, time
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx, p = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_ulonglong()
cuda.cuInit(0); cuda.cuDeviceGet(ctypes.byref(dev), 1)
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
cuda.cuCtxSetCurrent(ctx)
for size in [64 << 10] * 8 + [1 << 30]:
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) == 0
ready, go = sys.argv[1], sys.argv[2]
open(ready, "w").close()
for _ in range(600):
    if os.path.exists(go):
        break
    time.sleep(0.05)
"""


def snapshot(args, tmp):
    """A driver that cannot tell an address's device: what standby kept
    is in the snapshot all the same, on the device it was made on."""
    env = env_of(args, {"FAKECUDA_DEVICES": "2",
                        "FAKECUDA_NO_POINTER_QUERY": "1"})
    out = os.path.join(tmp, "snap")
    ready, go = os.path.join(tmp, "snap.ready"), os.path.join(tmp, "snap.go")
    cmd = [args.vramtrace, "record", "--standby", "-o", out, "--",
           sys.executable, "-c", STANDBY_PROG, ready, go]
    print("$ " + " ".join(cmd[:6]), flush=True)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        poll(lambda: os.path.exists(ready), tries=300, delay=0.05)
        c = subprocess.run([args.vramtrace, "ctl", out, "start"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=30)
        check(c.returncode == 0, f"snapshot: ctl start ({c.stdout}"
                                 f"{c.stderr})")
    finally:
        open(go, "w").close()
        p.wait(timeout=60)
    rc, rep = analyze(args, out, env=env)
    live = {d["name"]: d["live_bytes_end"] for d in rep.get("devices", [])}
    check(live.get("Fake GPU 1") == (1 << 30) + 8 * (64 << 10) and
          not live.get("Fake GPU 0"),
          f"snapshot: every allocation kept on the device it was made on, "
          f"small ones too (got {live})")


def running(args, tmp):
    env = env_of(args, {"FAKECUDA_MEM": "8G"})
    out = os.path.join(tmp, "running")
    go = os.path.join(tmp, "running.go")
    # held until the checks below are done (at most 120 s)
    cmd = [args.vramtrace, "record", "-o", out, "--", sys.executable,
           os.path.join(args.src, "examples", "alloc.py"), "--max", "2",
           "--hold", "120", "--until", go]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        def flushed():
            rc, rep = analyze(args, out, env=env)
            devs = rep.get("devices", [])
            return rep if devs and devs[0]["peak"]["tracked_bytes"] else None
        rep = poll(flushed, tries=60, delay=0.1) or {}
        pr = rep.get("run", {}).get("processes", [{}])
        dg = rep.get("diagnosis", {})
        check(pr and pr[0].get("running") is True and
              rep["run"]["truncated"] is False and
              dg.get("verdict") == "none",
              f"running: still recording, not truncated, nothing died "
              f"(got {pr}, {dg.get('verdict')}/{dg.get('detail')})")
        rc, text = analyze(args, out, env=env, fmt="text")
        check("STILL RECORDING" in text and "TRUNCATED" not in text and
              "died" not in text, "running: the text report says so")
    finally:
        open(go, "w").close()
        p.wait(timeout=60)
    rc, rep = analyze(args, out, env=env)
    pr = rep.get("run", {}).get("processes", [{}])
    check(pr[0].get("running") is False and pr[0].get("exit_status") == 0,
          f"running: once it ended, it exited 0 (got {pr})")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--bin-dir",
                 "--src", "--tmp-root")
    args = ap.parse_args()
    for k in ("vramtrace", "preload", "fake_dir", "bin_dir", "src"):
        setattr(args, k, os.path.abspath(getattr(args, k)))

    def body(tmp):
        root(args, tmp)
        exits(args, tmp)
        snapshot(args, tmp)
        running(args, tmp)
    return scratch(args, "record-tree-", body)


if __name__ == "__main__":
    sys.exit(main())
