#!/usr/bin/env python3
"""run_nvcc.py — programs built by nvcc, run on the fake CUDA runtime and
cuBLAS (tests/fake/cudart) over the fake driver, bare and under
`vramtrace record`; each trace checked allocation by allocation
(python3 stdlib only).

    run_nvcc.py --case NAME --prog NAME=PATH... --vramtrace EXE
                --preload LIB --fake-dir DIR --rt-dir DIR --tmp-root DIR
    run_nvcc.py --missing REASON        (exit 77: skipped)

Each case (CASES below) runs one program with one card of the fake driver
(FAKECUDA_CARD) and checks, as TAP:
  1. the program passes its own checks bare: every runtime call returned
     what a CUDA runtime returns (the program exits 1 otherwise);
  2. the same under `vramtrace record`, with the same calls and results
     in the same order (the preload is transparent), and the runtime's
     look-ups in the resolver log as libcudart 13 makes them (one dlsym
     of cuGetProcAddress_v2, every allocation entry point through the
     resolver, each answered with the preload's wrapper:
     tests/realcuda/resolvelog_check.py);
  3. `vramtrace analyze --format json` against the program's log
     (rt_common.h: alloc/free/oom/fail lines): per device and family,
     host family, the OOMs and the number of failures, exactly
     (tests/gpu/run_gpu.py's expectation, tests/preload/run_case.py's
     comparison);
  4. per step: each step of the program is a phase of its own, so each
     phase's allocations, frees, failures, peak and bytes live at the end
     are those of the calls made in that step, and no allocation is
     outside one (none the runtime or cuBLAS made on their own);
  5. the "value" lines the case expects (the card's properties as the
     runtime reports them, shared-memory limits, ...);
  6. stderr: the fake runtime's notices are exactly the expected ones (a
     call it does not emulate is reported once).

Exit status: 0 pass, 1 fail, 77 skip.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "preload"))
sys.path.insert(0, os.path.join(HERE, "..", "gpu"))
sys.path.insert(0, os.path.join(HERE, "..", "realcuda"))
import harness  # noqa: E402
import resolvelog_check  # noqa: E402
import run_case  # noqa: E402
import run_gpu  # noqa: E402

MIB = 1 << 20
# What each card answers (the fake driver's FAKECUDA_CARD), as published
# for an H100 SXM5 80GB, an A100 SXM4 80GB and an L4.
CARDS = {
    "h100": {"cc": "9.0", "sms": "132", "smem_per_block": "49152",
             "smem_per_block_optin": "232448", "smem_per_sm": "233472",
             "threads_per_sm": "2048", "l2": "52428800",
             "total_mem": str(80 << 30), "warp": "32", "vmm": "1",
             "pools": "1", "managed": "1"},
    "a100": {"cc": "8.0", "sms": "108", "smem_per_block": "49152",
             "smem_per_block_optin": "166912", "smem_per_sm": "167936",
             "threads_per_sm": "2048", "l2": "41943040",
             "total_mem": str(80 << 30), "warp": "32", "vmm": "1",
             "pools": "1", "managed": "1"},
    "l4": {"cc": "8.9", "sms": "58", "smem_per_block": "49152",
           "smem_per_block_optin": "101376", "smem_per_sm": "102400",
           "threads_per_sm": "1536", "l2": "50331648",
           "total_mem": str(23034 * MIB), "warp": "32", "vmm": "1",
           "pools": "1", "managed": "1"},
}
# cuBLAS's default workspace pool: ":4096:2:16:8" (8 MiB + 128 KiB),
# 32 MiB on compute capability 9.x; CUBLAS_WORKSPACE_CONFIG overrides.
POOL_DEFAULT = (4096 * 2 + 16 * 8) * 1024
POOL_HOPPER = 32 * MIB
STUB_NOTICE = ("fakecudart: cudaMalloc3DArray is not emulated: "
               "cudaErrorNotSupported")


def props(card, **over):
    want = dict(CARDS[card], devices="1", device="0")
    want.update(over)
    return want


def smem(card, big):
    optin = CARDS[card]["smem_per_block_optin"]
    return {"smem_optin": optin, "func_max_dynamic": optin,
            "smem_100k": big}


# name: (program, --case, environment, extra arguments, values, stderr)
CASES = {
    "memory": ("rt_memory", "memory", {}, [], {}, []),
    "memory-ptds": ("rt_memory-ptds", "memory", {}, [], {}, []),
    "props": [
        ("rt_memory", "props", {"FAKECUDA_CARD": "h100"}, [], props("h100"),
         []),
        ("rt_memory", "props", {"FAKECUDA_CARD": "a100"}, [], props("a100"),
         []),
        ("rt_memory", "props", {"FAKECUDA_CARD": "l4", "FAKECUDA_VMM": "0"},
         [], props("l4", vmm="0"), []),
        ("rt_memory", "props", {"FAKECUDA_DEVICES": "3",
                                "FAKECUDA_CARD": "l4,h100",
                                "FAKECUDA_MEM": "20G"},
         [], props("l4", devices="3", total_mem=str(20 << 30)), []),
    ],
    "kernels": ("rt_kernels", "kernels", {}, [], {}, [STUB_NOTICE]),
    "graph": ("rt_kernels", "graph", {}, [], {}, []),
    "smem": [
        ("rt_kernels", "smem", {"FAKECUDA_CARD": "h100"}, [],
         smem("h100", "cudaSuccess"), []),
        ("rt_kernels", "smem", {"FAKECUDA_CARD": "a100"}, [],
         smem("a100", "cudaSuccess"), []),
        ("rt_kernels", "smem", {"FAKECUDA_CARD": "l4"}, [],
         smem("l4", "cudaErrorInvalidValue"), []),
    ],
    "cublas": [
        ("rt_cublas", "gemm", {"FAKECUDA_CARD": "h100"},
         ["--pool", str(POOL_HOPPER)], {}, []),
        ("rt_cublas", "gemm", {"FAKECUDA_CARD": "a100"},
         ["--pool", str(POOL_DEFAULT)], {}, []),
        ("rt_cublas", "gemm", {"FAKECUDA_CARD": "l4",
                               "CUBLAS_WORKSPACE_CONFIG": ":4096:8"},
         ["--pool", str(32 * MIB)], {}, []),
        ("rt_cublas", "gemm", {"FAKECUDA_CARD": "a100",
                               "CUBLAS_WORKSPACE_CONFIG": ":0:0"},
         ["--pool", "0"], {}, []),
    ],
}


def calls(lines):
    return [tuple(w[1:3]) for w in lines if w[0] == "call"]


def expectation(lines):
    """run_gpu's expectation, with the "fail" lines counted as failures of
    their family; and each step's phase counters (device memory)."""
    want, _, _ = run_gpu.expectation(lines)
    for w in lines:
        if w[0] == "fail":
            want["failures"] += 1
            run_gpu.counter({d["id"]: d for d in want["devices"]},
                            want["host"]["families"], {}, w[2],
                            w[3])["failed"] += 1
    phases, live, step = {}, {}, None
    for w in lines:
        if w[0] == "step":
            step = w[1]
            phases.setdefault(step, run_gpu.zero())
        elif w[0] == "alloc" and w[2] != "host":
            c = phases.setdefault(step or "unattributed", run_gpu.zero())
            c["allocs"] += 1
            c["live_bytes_end"] += int(w[3])
            c["peak_bytes"] = max(c["peak_bytes"], c["live_bytes_end"])
            live[w[4]] = (c, int(w[3]))
        elif w[0] == "free" and w[1] in live:
            c, size = live.pop(w[1])
            c["frees"] += 1
            c["live_bytes_end"] -= size
        elif w[0] == "oom":
            phases.setdefault(step or "unattributed",
                              run_gpu.zero())["failed"] += 1
    return want, phases


def check_phases(tap, phases, rep):
    devs = rep.get("devices") or []
    got = (devs[0].get("phases") or {}) if devs else {}
    diffs = []
    for name, w in phases.items():
        g = got.get(name)
        run_case.compare_counters(f"phases.{name}", w, g, diffs)
    for name, g in got.items():
        if name not in phases and g.get("allocs"):
            diffs.append(f"phases.{name}: {g['allocs']} allocation(s) "
                         f"outside the program's steps: {g}")
    tap.ok(not diffs, f"every step's allocations, phase by phase "
           f"({len(phases)} steps)", "\n".join(diffs))


def check_resolve(tap, rundir):
    """The runtime reached the driver as libcudart 13 does: one dlsym of
    cuGetProcAddress_v2, every allocation entry point through the
    resolver (flags 2 too), each answered with the preload's wrapper."""
    logs = sorted(f for f in os.listdir(rundir) if f.endswith(".resolve"))
    if len(logs) != 1:
        tap.ok(False, "one resolver log", f"found {logs}")
        return
    with open(os.path.join(rundir, logs[0])) as f:
        rows = resolvelog_check.parse_log(f.read())
    errors, wrapped = resolvelog_check.check(
        rows, must_ask=resolvelog_check.MUST_ASK,
        must_dlsym=["cuGetProcAddress_v2"])
    tap.ok(not errors and wrapped,
           f"the driver reached as libcudart does: {len(rows)} look-ups, "
           f"{len(wrapped)} answered with the preload's wrappers",
           "\n".join(errors[:20]))


def run_one(a, tap, tmp, i, spec):
    prog, case, env_extra, extra, values, notices = spec
    exe = a.progs.get(prog)
    label = f"{prog} {case} " + " ".join(f"{k}={v}" for k, v in
                                         sorted(env_extra.items()))
    tap.note(label)
    if not exe:
        tap.ok(False, f"{label}: program not built")
        return
    env = harness.record_env(a, extra=dict(env_extra),
                             clean=("FAKECUDA_", "VRAMTRACE_",
                                    "CUBLAS_WORKSPACE_CONFIG"))
    env["LD_LIBRARY_PATH"] = os.path.abspath(a.rt_dir) + ":" + \
        env["LD_LIBRARY_PATH"]
    out = {}
    for mode in ("bare", "record"):
        log = os.path.join(tmp, f"{i}-{mode}.log")
        cmd = [exe, "--case", case] + extra + ["--out", log]
        run_env = env
        if mode == "record":
            rundir = os.path.join(tmp, f"{i}-run")
            cmd = [a.vramtrace, "record", "-o", rundir, "--"] + cmd
            run_env = dict(env, VRAMTRACE_RESOLVE_LOG="1")
        p = subprocess.run(cmd, env=run_env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=100)
        notes = [ln for ln in p.stderr.splitlines()
                 if ln.startswith(("fakecudart:", "fakecublas:"))]
        tap.ok(p.returncode == 0, f"{mode}: the program's own checks pass",
               p.stderr[-2000:])
        tap.ok(sorted(notes) == sorted(notices),
               f"{mode}: the fake runtime's notices are {notices}",
               "\n".join(notes))
        out[mode] = run_gpu.read_evlog(log)
    check_resolve(tap, rundir)
    bare, rec = calls(out["bare"]), calls(out["record"])
    tap.ok(bare and bare == rec,
           f"the same {len(bare)} calls and results under the preload",
           f"bare {len(bare)}, recorded {len(rec)}")
    p = subprocess.run([a.vramtrace, "analyze", rundir, "--format", "json",
                        "--no-log"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=100)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        tap.ok(False, "vramtrace analyze: JSON", p.stderr[-2000:])
        return
    want, phases = expectation(out["record"])
    diffs = run_case.compare(want, rep)
    tap.ok(not diffs, "devices, families, host memory, OOMs and failures "
           "as the program's log says", "\n".join(diffs))
    check_phases(tap, phases, rep)
    got = {w[1]: " ".join(w[2:]) for w in out["record"] if w[0] == "value"}
    for k, v in sorted(values.items()):
        tap.ok(got.get(k) == v, f"value {k} = {v}", f"got {got.get(k)}")


def main():
    ap = harness.options(description=__doc__.split("\n")[0])
    for o in ("--case", "--vramtrace", "--preload", "--fake-dir", "--rt-dir",
              "--tmp-root"):
        ap.add_argument(o)
    ap.add_argument("--prog", action="append", default=[])
    ap.add_argument("--missing")
    a = ap.parse_args()
    if a.missing:
        print(f"1..0 # SKIP {a.missing}")
        return 77
    if a.case not in CASES or not all((a.vramtrace, a.preload, a.fake_dir,
                                       a.rt_dir, a.tmp_root)):
        ap.error(f"--case ({', '.join(CASES)}), --vramtrace, --preload, "
                 f"--fake-dir, --rt-dir and --tmp-root are required")
    a.progs = dict(p.split("=", 1) for p in a.prog)
    specs = CASES[a.case]
    specs = specs if isinstance(specs, list) else [specs]
    tap = harness.Tap()
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"nvcc-{a.case}-", dir=a.tmp_root)
    for i, spec in enumerate(specs):
        run_one(a, tap, tmp, i, spec)
    if tap.failed or os.environ.get("VRT_TEST_KEEP"):
        tap.note("files kept in " + tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
