#!/usr/bin/env python3
"""run_cudart_real.py — NVIDIA's real CUDA runtime under the preload, on the
fake driver, no GPU; and the resolver log it is checked with (stdlib only).

    run_cudart_real.py --program EXE --vramtrace EXE --preload LIB
                       --fake-dir DIR --tmp-root DIR
    run_cudart_real.py --client EXE --vramtrace EXE --preload LIB
                       --fake-dir DIR --tmp-root DIR
    run_cudart_real.py --missing REASON        (exit 77: skipped)

--program: EXE is cudart_mem built by nvcc (one of: dynamic or static
runtime, with or without --default-stream per-thread). The runtime dlopens
libcuda.so.1 (the fake), dlsyms cuGetProcAddress_v2, asks it for
cuGetProcAddress, then asks that for some 440 entry points, some with the
per-thread-default-stream flag; then it needs the driver's private export
tables (cuGetExportTable), which the fake does not have and must not
emulate, so every runtime call fails. The look-ups are real, and they are
what is checked:
  1. EXE bare (FAKECUDA_DEBUG=1: the fake logs each resolver answer);
  2. EXE under `vramtrace record` with VRAMTRACE_RESOLVE_LOG=1;
  3. each runtime call returned the same code both times, and that code is
     cudaErrorCallRequiresNewerDriver (36), the runtime's answer to a
     driver without cuGetExportTable — the expected failure, asserted;
     the runtime did ask for cuGetExportTable and got CUDA_ERROR_NOT_FOUND;
  4. the runtime asked the driver for the same (name, version, flags), in
     the same order, with and without the preload;
  5. the resolver log (resolvelog_check.py): the one dlsym and every look-up
     of a hooked entry point answered with the preload's wrapper of the
     right export (_v2, _ptsz), every other look-up answered with the
     driver's very own pointer, call for call; and every allocation entry
     point libcudart offers was asked for, with flags 0 and 2 where it has
     a per-thread variant;
  6. no trace file: no memory call reached the driver.

--client: the resolver log itself, no toolkit needed. EXE is
tests/preload/client_cudart (libcudart's route, flags 0 and 2):
  1. under `vramtrace record` with the log on: one "<pid>.resolve", mode
     0600, that resolvelog_check.py accepts against the fake's own answers,
     with every per-thread look-up answered by a _ptsz wrapper;
  2. the same without the variable: no log;
  3. Python ctypes (dlsym on the driver's handle) that forks: the parent's
     look-ups in its file, the child's in a file of its own.

Exit status: 0 pass, 1 fail, 77 skip.
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

# The runtime's code for "the driver lacks an entry point this runtime
# needs": what libcudart 13 returns when cuGetExportTable is not found.
EXPECTED_ERROR = (36, "cudaErrorCallRequiresNewerDriver")
CUDA_ERROR_NOT_FOUND = 500


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
    err = p.stderr.decode(errors="replace")
    if p.returncode != 0:
        print(err[-3000:])
        raise Failure(f"{cmd[0]}: exit status {p.returncode}")
    return p.stdout.decode(errors="replace"), err


def calls(path):
    with open(path) as f:
        return [tuple(line.split()[1:3]) for line in f
                if line.startswith("call ")]


def lookups(answers):
    return [a[:4] for a in answers]


def check_variant(a, env, tmp):
    bare_out = os.path.join(tmp, "bare.txt")
    rec_out = os.path.join(tmp, "rec.txt")
    rundir = os.path.join(tmp, "run")
    _, bare_err = run([a.program, "--out", bare_out], env)
    renv = dict(env, VRAMTRACE_RESOLVE_LOG="1")
    _, rec_err = run([a.vramtrace, "record", "-o", rundir, "--", a.program,
                      "--out", rec_out], renv)

    # 3. the expected failure, identical with and without the preload
    want, got = calls(bare_out), calls(rec_out)
    if not want:
        raise Failure(f"{bare_out}: no calls logged")
    if want != got:
        raise Failure(f"calls differ under the preload: {want} vs {got}")
    odd = [c for c in want if int(c[1]) != EXPECTED_ERROR[0]]
    if odd:
        raise Failure(f"expected every runtime call to fail with "
                      f"{EXPECTED_ERROR[1]} ({EXPECTED_ERROR[0]}) on the "
                      f"fake driver, got {odd}")
    print(f"{len(want)} runtime calls, each {EXPECTED_ERROR[1]} "
          f"({EXPECTED_ERROR[0]}) with and without the preload (expected: "
          f"the fake driver has no cuGetExportTable)")
    bare_ans = resolvelog_check.parse_fake_answers(bare_err)
    rec_ans = resolvelog_check.parse_fake_answers(rec_err)
    if not any(n == "cuGetExportTable" and r == CUDA_ERROR_NOT_FOUND
               for n, _, _, r, _ in rec_ans):
        raise Failure("the runtime never asked for cuGetExportTable, or "
                      "got it: the cause of the failure is not the one "
                      "expected")

    # 4. the same look-ups, in the same order
    if lookups(bare_ans) != lookups(rec_ans):
        for i, (x, y) in enumerate(zip(bare_ans, rec_ans)):
            if x[:4] != y[:4]:
                print(f"  first difference at look-up {i}: {x} vs {y}")
                break
        raise Failure(f"the runtime asked differently under the preload "
                      f"({len(bare_ans)} look-ups bare, {len(rec_ans)} "
                      f"under the preload)")

    # 5. the resolver log
    logs = glob.glob(os.path.join(rundir, "*.resolve"))
    if len(logs) != 1:
        raise Failure(f"expected one resolver log in {rundir}, found "
                      f"{logs}")
    with open(logs[0]) as f:
        rows = resolvelog_check.parse_log(f.read())
    errors, wrapped = resolvelog_check.check(rows, driver_answers=rec_ans)
    if errors:
        for e in errors[:40]:
            print("  " + e)
        raise Failure(f"{len(errors)} resolver log error(s) in {logs[0]}")
    others = len(rows) - len(wrapped)
    print(f"{len(rows)} look-ups ({len(rec_ans)} through the resolver): "
          f"{len(wrapped)} answered with the preload's wrappers, {others} "
          f"passed through with the driver's own answer:")
    for via, name, version, flags, export in wrapped:
        version, flags = ("-" if v is None else v for v in (version, flags))
        print(f"  {via:20} {name:24} {version:>5} {flags:>1} -> {export}")

    # 6. nothing reached a memory entry point
    traces = glob.glob(os.path.join(rundir, "*.vtrace"))
    if traces:
        raise Failure(f"trace files written, but no memory call can have "
                      f"reached the driver: {traces}")


def logs(rundir):
    return sorted(glob.glob(os.path.join(rundir, "*.resolve")))


def dlsym_names(path):
    with open(path) as f:
        return [r["name"] for r in resolvelog_check.parse_log(f.read())
                if r["via"] == "dlsym"]


def check_client(a, env, tmp):
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
    ap.add_argument("--missing")
    ap.add_argument("--program")
    ap.add_argument("--client")
    ap.add_argument("--vramtrace")
    ap.add_argument("--preload")
    ap.add_argument("--fake-dir")
    ap.add_argument("--tmp-root")
    a = ap.parse_args()
    if a.missing:
        print(f"SKIP: {a.missing}")
        return 77
    if not (a.program or a.client) or not all(
            (a.vramtrace, a.preload, a.fake_dir, a.tmp_root)):
        ap.error("--program or --client, and --vramtrace, --preload, "
                 "--fake-dir and --tmp-root are required")
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "VRAMTRACE_OUT", "VRAMTRACE_RESOLVE_LOG"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = os.path.abspath(a.fake_dir) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env["FAKECUDA_DEBUG"] = "1"
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(a.preload)
    os.makedirs(a.tmp_root, exist_ok=True)
    name = os.path.basename(a.program or a.client)
    tmp = tempfile.mkdtemp(prefix=name + "-", dir=a.tmp_root)
    try:
        if a.program:
            check_variant(a, env, tmp)
        else:
            check_client(a, env, tmp)
    except Failure as e:
        print(f"FAIL {name}: {e}\nfiles kept in {tmp}")
        return 1
    print(f"PASS {name}")
    if not os.environ.get("VRT_TEST_KEEP"):
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
