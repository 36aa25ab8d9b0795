#!/usr/bin/env python3
"""run_resolve_log.py — the resolver log itself (VRAMTRACE_RESOLVE_LOG),
with no CUDA toolkit: on the fake driver (stdlib only).

    run_resolve_log.py --client EXE --vramtrace EXE --preload LIB
                       --fake-dir DIR --tmp-root DIR

  1. tests/preload/client_cudart (libcudart's route, flags 0 and 2) under
     `vramtrace record` with the log on: one "<pid>.resolve", mode 0600,
     that resolvelog_check.py accepts against the fake's own answers
     (FAKECUDA_DEBUG), with every per-thread look-up answered by a _ptsz
     wrapper;
  2. the same without the variable: no log;
  3. Python ctypes (dlsym on the driver's handle) that forks: the parent's
     look-ups in its file, the child's in a file of its own.
Exit status: 0 pass, 1 fail.
"""
import argparse
import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resolvelog_check  # noqa: E402

FORK_SCRIPT = r"""
import ctypes, os, sys
lib = ctypes.CDLL("libcuda.so.1")
lib.cuMemAlloc_v2
pid = os.fork()
if pid == 0:
    lib.cuMemFree_v2
    os._exit(0)
os.waitpid(pid, 0)
lib.cuMemGetInfo_v2
print(pid)
"""


class Failure(Exception):
    pass


def run(cmd, env):
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    if p.returncode != 0:
        print(p.stderr.decode(errors="replace")[-3000:])
        raise Failure(f"{cmd[0]}: exit status {p.returncode}")
    return p.stdout.decode(), p.stderr.decode(errors="replace")


def logs(rundir):
    return sorted(glob.glob(os.path.join(rundir, "*.resolve")))


def dlsym_names(path):
    with open(path) as f:
        return [r["name"] for r in resolvelog_check.parse_log(f.read())
                if r["via"] == "dlsym"]


def check(a, env, tmp):
    # 1. the cudart-style client
    rundir = os.path.join(tmp, "run1")
    _, err = run([a.vramtrace, "record", "-o", rundir, "--", a.client,
                  "--devices", "1"], dict(env, VRAMTRACE_RESOLVE_LOG="1"))
    found = logs(rundir)
    if len(found) != 1:
        raise Failure(f"expected one resolver log, found {found}")
    mode = stat.S_IMODE(os.stat(found[0]).st_mode)
    if mode != 0o600:
        raise Failure(f"{found[0]}: mode {oct(mode)}, expected 0o600")
    with open(found[0]) as f:
        rows = resolvelog_check.parse_log(f.read())
    ptsz = [(n, 2) for n in resolvelog_check.PTSZ]
    errors, wrapped = resolvelog_check.check(
        rows, driver_answers=resolvelog_check.parse_fake_answers(err),
        must_ask=[("cuGetProcAddress", 0), ("cuMemAlloc", 0)] + ptsz,
        must_dlsym=["cuGetProcAddress_v2"])
    if errors:
        for e in errors[:30]:
            print("  " + e)
        raise Failure(f"{len(errors)} error(s) in {found[0]}")
    got_ptsz = {w[4] for w in wrapped if w[4].endswith("_ptsz")}
    if got_ptsz != set(resolvelog_check.PTSZ.values()):
        raise Failure(f"_ptsz wrappers handed out: {sorted(got_ptsz)}")
    print(f"client_cudart: {len(rows)} look-ups, {len(wrapped)} wrapped")

    # 2. off by default
    rundir = os.path.join(tmp, "run2")
    run([a.vramtrace, "record", "-o", rundir, "--", a.client, "--devices",
         "1"], env)
    if logs(rundir):
        raise Failure(f"a resolver log without VRAMTRACE_RESOLVE_LOG: "
                      f"{logs(rundir)}")

    # 3. ctypes, fork
    rundir = os.path.join(tmp, "run3")
    out, _ = run([a.vramtrace, "record", "-o", rundir, "--", sys.executable,
                  "-c", FORK_SCRIPT], dict(env, VRAMTRACE_RESOLVE_LOG="1"))
    child = out.strip().splitlines()[-1]
    child_log = os.path.join(rundir, f"{child}.resolve")
    parent_logs = [p for p in logs(rundir) if p != child_log]
    if not os.path.exists(child_log) or len(parent_logs) != 1:
        raise Failure(f"expected the parent's and the child's ({child}) "
                      f"logs, found {logs(rundir)}")
    want = {parent_logs[0]: ["cuMemAlloc_v2", "cuMemGetInfo_v2"],
            child_log: ["cuMemFree_v2"]}
    for path, names in want.items():
        got = dlsym_names(path)
        if got != names:
            raise Failure(f"{path}: dlsym look-ups {got}, expected {names}")
    print("fork: the parent's and the child's look-ups in their own files")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--client", "--vramtrace", "--preload", "--fake-dir",
                "--tmp-root"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args()
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "VRAMTRACE_OUT", "VRAMTRACE_RESOLVE_LOG"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = os.path.abspath(a.fake_dir) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["FAKECUDA_DEBUG"] = "1"
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(a.preload)
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="resolve-log-", dir=a.tmp_root)
    try:
        check(a, env, tmp)
    except Failure as e:
        print(f"FAIL: {e}\nfiles kept in {tmp}")
        return 1
    print("PASS")
    if not os.environ.get("VRT_TEST_KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
