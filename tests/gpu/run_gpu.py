#!/usr/bin/env python3
"""run_gpu.py — the GPU suite: real CUDA programs under `vramtrace record` on
a machine with an NVIDIA GPU, each report checked against what the program
did; one table; exit status 1 on any mismatch (python3 stdlib only).

    run_gpu.py --bundle DIR [--tmp-root DIR] [--keep]
    run_gpu.py --vramtrace EXE --preload LIB --prog NAME=PATH...
               [--cudart-lib DIR] [--dry-run --fake-dir DIR] [...]

A bundle (`./build.sh gpu-bundle`) holds bin/ (vramtrace and the programs),
lib/ (libvramtrace.so and the shared libraries they need) and cudart/
(libcudart.so.13 for the programs built with the dynamic runtime), so a
machine with the NVIDIA driver and python3 needs nothing else.

Cases (a program is skipped, with the reason, when it was not built):
  cudart_mem-{static,shared}[-ptds]   every allocation family through the
      CUDA runtime (tests/realcuda/cudart_mem.cu), two real OOMs
  gpu_driver vmm | pool | oom | multi the driver API reached by dlsym
      (tests/gpu/gpu_driver.c): virtual memory, pools, a device filled
      until the driver refuses (the failed call's free/total), two devices
  gpu_runtime graph | vmm-entry       CUDA-graph capture that allocates;
      VMM through cudaGetDriverEntryPointByVersion (PyTorch's route)
  torch                               when `import torch` works: a tensor
      allocated and freed, an OOM caught, empty_cache
  attach                              `vramtrace attach` (docs/attach.md)
      to tests/attach/attach_target running on the real driver with 4
      threads in a tight loop: the real driver's entry points hooked
      (any refused one is listed with the reason), every call of every
      thread recorded with none missing (dump_events --check), the
      program running on and exiting 0 after the detach
  torch attach                        when `import torch` works: a
      PyTorch process holding 256 MiB with the allocator's history on,
      attached: its segments in the snapshot, nothing blamed on other
      processes
Each program logs what it did (tests/gpu/evlog.h); the counts and bytes
per device and family, every OOM (API, bytes, and the free/total the
driver reported against the program's own reading) follow from the log
and are compared exactly with `vramtrace analyze --format json` (the
rules of tests/preload/run_case.py). Every resolver look-up is checked in
the resolver log (tests/realcuda/resolvelog_check.py).

--dry-run runs the same on the fake driver: the driver-API cases run for
real; the CUDA runtime cannot work there (it needs NVIDIA's private
tables), so its cases only check the look-ups and are listed as n/a. It
is how the table and the comparison are tested without a GPU.

Exit status: 0 every case matched, 1 a mismatch, 2 usage, 77 no GPU here.
"""
import argparse
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "preload"))
sys.path.insert(0, os.path.join(HERE, "..", "realcuda"))
import run_case  # noqa: E402
import resolvelog_check  # noqa: E402

RUN_TIMEOUT = 120
BUDGET_S = 300
# cudaErrorCallRequiresNewerDriver: the runtime on a driver without its
# private tables (the fake).
RUNTIME_ON_FAKE = 36
CUDART_VARIANTS = ("static", "static-ptds", "shared", "shared-ptds")
API_FAMILY = {
    "cuMemAlloc_v2": "device", "cuMemAllocPitch_v2": "device",
    "cuMemAllocAsync": "async", "cuMemAllocAsync_ptsz": "async",
    "cuMemAllocFromPoolAsync": "async",
    "cuMemAllocFromPoolAsync_ptsz": "async", "cuMemCreate": "vmm",
    "cuMemAllocManaged": "managed", "cuMemHostAlloc": "pinned",
    "cuMemAllocHost_v2": "pinned", "cuMemHostRegister_v2": "registered",
}
# The hooked exports gpu_driver looks up with dlsym.
DRIVER_DLSYM = ("cuMemGetInfo_v2", "cuMemAlloc_v2", "cuMemFree_v2",
                "cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                "cuMemFreeAsync", "cuMemAddressReserve", "cuMemAddressFree",
                "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap")
VMM_ASK = [(n, 0) for n in ("cuMemCreate", "cuMemRelease", "cuMemMap",
                            "cuMemUnmap", "cuMemAddressReserve",
                            "cuMemAddressFree")]


class Case:
    def __init__(self, name, prog, args, kind, must_ask=(), needs=None):
        self.name, self.prog, self.args = name, prog, args
        self.kind = kind          # runtime | driver | torch
        self.must_ask = list(must_ask)
        self.needs = needs        # "cudart-lib" for the shared runtime
        self.rows, self.notes, self.mismatch, self.status = [], [], [], ""


def cases():
    out = []
    for v in CUDART_VARIANTS:
        out.append(Case(f"cudart {v}", f"cudart_mem-{v}", [], "runtime",
                        resolvelog_check.MUST_ASK,
                        "cudart-lib" if v.startswith("shared") else None))
    for c in ("vmm", "pool", "oom", "multi"):
        out.append(Case(f"driver {c}", "gpu_driver", ["--case", c],
                        "driver"))
    out.append(Case("graph capture", "gpu_runtime", ["--case", "graph"],
                    "runtime", resolvelog_check.MUST_ASK))
    out.append(Case("vmm entry point", "gpu_runtime",
                    ["--case", "vmm-entry"], "runtime",
                    resolvelog_check.MUST_ASK + VMM_ASK))
    out.append(Case("pytorch", "torch", [], "torch",
                    [("cuMemAlloc", 0), ("cuMemFree", 0)]))
    out.append(Case("attach", "attach_target", ["--threads", "4"],
                    "attach"))
    out.append(Case("torch attach", "torch", [], "torch-attach"))
    return out


# ---- the program's log -> the expected report --------------------------

def zero():
    return dict.fromkeys(run_case.COUNTERS, 0)


def expectation(lines):
    """run_case.compare's expectation (plus reserved_va per device and each
    OOM's total) from evlog lines; also the calls that failed without an
    oom line after them (unexpected failures)."""
    devs, host, live = {}, {f: zero() for f in run_case.HOST_FAMS}, {}
    va = collections.defaultdict(zero)
    want = {"devices": [], "host": {"families": host}, "ooms": [],
            "failures": 0, "truncated": False}
    unexpected = []
    for i, words in enumerate(lines):
        kind = words[0]
        if kind == "device":
            d = int(words[1])
            devs.setdefault(d, {"id": d, "total_bytes": int(words[2]),
                                "families": {f: zero() for f in
                                             run_case.DEVICE_FAMS}})
        elif kind == "alloc":
            fam, dev, size, ident = words[1], words[2], int(words[3]), words[4]
            if ident in live:
                raise ValueError(f"evlog: {ident} allocated twice")
            c = counter(devs, host, va, fam, dev)
            c["allocs"] += 1
            c["live_bytes_end"] += size
            c["peak_bytes"] = max(c["peak_bytes"], c["live_bytes_end"])
            live[ident] = (c, size)
        elif kind == "free":
            c, size = live.pop(words[1])
            c["frees"] += 1
            c["live_bytes_end"] -= size
        elif kind == "oom":
            api, dev = words[1], int(words[2])
            counter(devs, host, va, API_FAMILY[api], dev)["failed"] += 1
            want["ooms"].append({"api": api, "device": dev,
                                 "requested_bytes": int(words[3]),
                                 "free_bytes": int(words[4]),
                                 "total_bytes": int(words[5])})
            want["failures"] += 1
        elif kind == "call" and words[2] != "0":
            if i + 1 >= len(lines) or lines[i + 1][0] != "oom":
                unexpected.append(f"{words[1]} returned {words[2]} "
                                  f"{words[3]}")
    want["devices"] = [devs[d] for d in sorted(devs)]
    return want, dict(va), unexpected


def counter(devs, host, va, fam, dev):
    if dev == "host":
        return host[fam]
    if fam == "reserved_va":
        return va[int(dev)]
    return devs[int(dev)]["families"][fam]


def read_evlog(path):
    try:
        with open(path) as f:
            return [line.split() for line in f if line.strip()]
    except OSError:
        return []


# ---- running a case ----------------------------------------------------

def run(cmd, env, timeout=RUN_TIMEOUT):
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout} s"
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"))


def fmt_bytes(n):
    if n is None:
        return "-"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n} B"


def run_one(a, c, env, tmp):
    """Runs case c; fills c.rows, c.notes, c.mismatch, c.status."""
    cmd = program_cmd(a, c)
    if isinstance(cmd, str):
        c.status = f"skipped: {cmd}"
        return
    if c.kind in ("attach", "torch-attach"):
        run_attach(a, c, cmd, env, tmp)
        return
    work = os.path.join(tmp, c.name.replace(" ", "-"))
    os.makedirs(work)
    rundir, evpath = os.path.join(work, "run"), os.path.join(work, "ev.log")
    cenv = dict(env, VRAMTRACE_RESOLVE_LOG="1")
    if c.needs == "cudart-lib" and a.cudart_lib:
        cenv["LD_LIBRARY_PATH"] = a.cudart_lib + ":" + cenv.get(
            "LD_LIBRARY_PATH", "")
    rc, out, err = run([a.vramtrace, "record", "-o", rundir, "--"] + cmd +
                       ["--out", evpath], cenv)
    lines = read_evlog(evpath)
    calls = [w for w in lines if w[0] == "call"]
    if c.kind == "runtime" and calls and calls[0][2] != "0":
        code = int(calls[0][2])
        if a.dry_run and code == RUNTIME_ON_FAKE:
            c.status = "n/a: the CUDA runtime needs NVIDIA's driver"
            # It stopped after its start-up look-ups.
            c.must_ask = resolvelog_check.MUST_ASK
        else:
            c.mismatch.append(f"the runtime's first call failed: "
                              f"{calls[0][1]} {code} {calls[0][3]}")
        check_resolve(c, rundir)
        return
    for w in lines:
        if w[0] == "skip":
            c.notes.append("skipped part: " + " ".join(w[1:]))
    if rc != 0:
        c.mismatch.append(f"exit status {rc}: {err.strip()[-500:]}")
    if not lines:
        c.mismatch.append("the program logged nothing")
        return
    if c.kind == "torch":
        rep = analyze(a, c, rundir, env)
        if rep is not None:
            torch_checks(c, lines, rep)
    else:
        try:
            want, va, unexpected = expectation(lines)
        except (ValueError, KeyError, IndexError) as e:
            c.mismatch.append(f"the program's log {evpath}: {e!r}")
            return
        for u in unexpected:
            c.mismatch.append("unexpected failure: " + u)
        rep = analyze(a, c, rundir, env)
        if rep is not None:
            compare(c, want, va, rep)
    check_resolve(c, rundir)


# A PyTorch process for `torch attach`: 256 MiB held with the history on,
# then it waits for a line on stdin.
TORCH_HOLD = ("import sys, torch\n"
              "torch.cuda.memory._record_memory_history()\n"
              "x = torch.empty(256 << 20, dtype=torch.uint8, device='cuda')\n"
              "torch.cuda.synchronize()\n"
              "print('ready', flush=True)\n"
              "sys.stdin.readline()\n"
              "print('final 0 0', flush=True)\n")


def run_attach(a, c, cmd, env, tmp):
    """`vramtrace attach` to a program running on the driver, then its
    trace checked (dump_events --check) and the program's exit."""
    work = os.path.join(tmp, c.name.replace(" ", "-"))
    os.makedirs(work)
    rundir = os.path.join(work, "run")
    agent = os.path.join(os.path.dirname(os.path.abspath(a.preload)),
                         "libvramtrace_agent.so")
    if not os.path.exists(agent):
        c.status = "skipped: no libvramtrace_agent.so beside the preload"
        return
    aenv = dict(env, VRAMTRACE_AGENT=agent)
    aenv.pop("VRAMTRACE_PRELOAD", None)
    p = subprocess.Popen(cmd, env=aenv, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    line = p.stdout.readline()
    if not line.startswith("ready"):
        p.kill()
        c.mismatch.append(f"the program did not start: {line.strip()}")
        return
    rc, out, err = run([a.vramtrace, "attach", str(p.pid), "-o", rundir,
                        "--duration", "2", "--partial"], aenv)
    c.notes += [x for x in (out + err).splitlines() if "not hooked" in x]
    try:
        tail, _ = p.communicate("stop\n", timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        tail = "(hung)"
    if rc != 0 and "not permitted" in out + err:
        c.status = "skipped: ptrace is not permitted here"
        return
    if rc != 0:
        c.mismatch.append(f"vramtrace attach: exit {rc}: "
                          f"{(out + err).strip()[-500:]}")
        return
    if p.returncode != 0 or "final" not in tail:
        c.mismatch.append(f"the program after the detach: exit "
                          f"{p.returncode}, {tail.strip()[-200:]}")
    traces = glob.glob(os.path.join(rundir, "*.vtrace"))
    if c.kind == "attach":
        dump = a.progs.get("dump_events")
        if not dump:
            c.notes.append("dump_events not in the bundle: calls not "
                           "checked")
        else:
            drc, dout, _ = run([dump, "--check"] + traces, env)
            last = dout.strip().splitlines()[-1] if dout.strip() else ""
            c.rows.append(("0", "calls", last,
                           "ok" if drc == 0 else "MISMATCH"))
            if drc != 0:
                c.mismatch.append("calls missing from the trace: " + last)
    rep = analyze(a, c, rundir, env)
    if rep is None:
        return
    verdict = (rep.get("diagnosis") or {}).get("verdict")
    if verdict == "other_processes":
        c.mismatch.append("what the process held was blamed on other "
                          "processes")
    held = sum((d.get("live_bytes_end") or 0)
               for d in rep.get("devices") or [])
    c.rows.append(("all", "live at end", fmt_bytes(held),
                   "ok" if held or c.kind == "attach" else "MISMATCH"))
    if c.kind == "torch-attach" and held < (256 << 20):
        c.mismatch.append(f"the snapshot holds {fmt_bytes(held)}, less "
                          f"than the 256 MiB tensor")


def program_cmd(a, c):
    """The command for case c, or why it cannot run here."""
    if c.kind in ("torch", "torch-attach"):
        r = subprocess.run([sys.executable, "-c", "import torch; "
                            "assert torch.cuda.is_available()"],
                           stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            return "python3 cannot import torch with CUDA here"
        if c.kind == "torch-attach":
            return [sys.executable, "-c", TORCH_HOLD]
        return [sys.executable, os.path.join(HERE, "torch_check.py")]
    path = a.progs.get(c.prog)
    if not path or not os.path.exists(path):
        return f"{c.prog} was not built (needs nvcc where it is built)"
    if c.needs == "cudart-lib" and not a.cudart_lib and not a.system_cudart:
        return "libcudart.so.13 is not available here"
    return [path] + c.args


def analyze(a, c, rundir, env):
    rc, out, err = run([a.vramtrace, "analyze", rundir, "--format", "json"],
                       env)
    if rc != 0:
        c.mismatch.append(f"vramtrace analyze: exit status {rc}: "
                          f"{err.strip()[-300:]}")
        return None
    try:
        return json.loads(out)
    except ValueError as e:
        c.mismatch.append(f"vramtrace analyze: not JSON: {e}")
        return None


def compare(c, want, va, rep):
    diffs = run_case.compare(want, rep)
    devs = {d.get("id"): d for d in rep.get("devices") or []}
    for d, w in sorted(va.items()):
        got = (devs.get(d) or {}).get("reserved_va") or {}
        for k in run_case.COUNTERS:
            if got.get(k) != w[k]:
                diffs.append(f"devices[id={d}].reserved_va.{k}: expected "
                             f"{w[k]}, got {got.get(k)}")
    for wo in want["ooms"]:
        got = [o for o in rep.get("ooms") or []
               if (o.get("api"), o.get("device"), o.get("requested_bytes"))
               == (wo["api"], wo["device"], wo["requested_bytes"])]
        if got and wo["total_bytes"] >= 0 and \
                got[0].get("total_bytes") != wo["total_bytes"]:
            diffs.append(f"ooms {wo['api']}: total_bytes expected "
                         f"{wo['total_bytes']}, got "
                         f"{got[0].get('total_bytes')}")
    c.mismatch += diffs
    # The table: every family with activity, expected or reported.
    for wd in want["devices"]:
        rd = devs.get(wd["id"]) or {}
        fams = dict(wd["families"], reserved_va=va.get(wd["id"], zero()))
        for fam, w in fams.items():
            got = (rd.get("families") or {}).get(fam) if fam != \
                "reserved_va" else rd.get("reserved_va")
            add_row(c, str(wd["id"]), fam, w, got or {}, diffs,
                    f"devices[id={wd['id']}].{'' if fam == 'reserved_va' else 'families.'}{fam}")
    host = (rep.get("host") or {}).get("families") or {}
    for fam, w in want["host"]["families"].items():
        add_row(c, "host", fam, w, host.get(fam) or {}, diffs,
                f"host.families.{fam}")
    for wo in want["ooms"]:
        got = [o for o in rep.get("ooms") or []
               if (o.get("api"), o.get("requested_bytes")) ==
               (wo["api"], wo["requested_bytes"])]
        o = got[0] if got else {}
        bad = any(d.startswith("ooms") and wo["api"] in d for d in diffs) \
            or not got
        c.rows.append((str(wo["device"]), "oom " + wo["api"],
                       f"asked {fmt_bytes(wo['requested_bytes'])}; driver "
                       f"free/total {fmt_bytes(o.get('free_bytes'))}/"
                       f"{fmt_bytes(o.get('total_bytes'))}; program read "
                       f"{fmt_bytes(wo['free_bytes']) if wo['free_bytes'] >= 0 else '-'}",
                       "MISMATCH" if bad else "ok"))


def add_row(c, dev, fam, want, got, diffs, prefix):
    if not any(want.values()) and not any(got.get(k) for k in
                                          run_case.COUNTERS):
        return
    vals = (f"allocs {got.get('allocs', '-')}  frees "
            f"{got.get('frees', '-')}  failed {got.get('failed', '-')}  "
            f"peak {fmt_bytes(got.get('peak_bytes'))}  live at end "
            f"{fmt_bytes(got.get('live_bytes_end'))}")
    bad = [d for d in diffs if d.startswith(prefix + ".") or
           d.startswith(prefix + ":")]
    c.rows.append((dev, fam, vals, "MISMATCH" if bad else "ok"))


def check_resolve(c, rundir):
    logs = glob.glob(os.path.join(rundir, "*.resolve"))
    rows = []
    for path in logs:
        with open(path) as f:
            rows += resolvelog_check.parse_log(f.read())
    if c.kind == "driver":
        errors, wrapped = resolvelog_check.check(rows, must_ask=[],
                                                 must_dlsym=DRIVER_DLSYM)
    else:
        errors, wrapped = resolvelog_check.check(rows, must_ask=c.must_ask)
    c.mismatch += ["resolver: " + e for e in errors[:20]]
    c.rows.append(("-", "resolver", f"{len(rows)} look-ups, "
                   f"{len(wrapped)} answered with wrappers",
                   "MISMATCH" if errors else "ok"))


def torch_checks(c, lines, rep):
    """PyTorch's caching allocator retries a failed cudaMalloc after freeing
    its cache, a number of times that depends on its version: the OOM
    counts are checked as at least one, the rest exactly."""
    meminfo = [w for w in lines if w[0] == "meminfo"]
    total = int(meminfo[0][2]) if meminfo else None
    asked = int(next(w for w in lines if w[0] == "oom-caught")[1]) if any(
        w[0] == "oom-caught" for w in lines) else None
    if asked is None:
        c.mismatch.append("torch did not raise OutOfMemoryError")
    dev = next((d for d in rep.get("devices") or [] if d.get("id") == 0),
               {})
    fam = (dev.get("families") or {}).get("device") or {}
    want = {"allocs": 1, "frees": 1, "peak_bytes": 256 << 20,
            "live_bytes_end": 0}
    diffs = [f"device family {k}: expected {v}, got {fam.get(k)}"
             for k, v in want.items() if fam.get(k) != v]
    ooms = [o for o in rep.get("ooms") or [] if o.get("device") == 0]
    if not ooms:
        diffs.append("no OOM in the report")
    for o in ooms:
        if o.get("api") != "cuMemAlloc_v2" or asked is None or \
                (o.get("requested_bytes") or 0) < asked or \
                o.get("total_bytes") != total or o.get("free_bytes") is None:
            diffs.append(f"OOM {o.get('api')} of "
                         f"{o.get('requested_bytes')} (free "
                         f"{o.get('free_bytes')}, total "
                         f"{o.get('total_bytes')}): expected cuMemAlloc_v2 "
                         f"of at least {asked}, total {total}")
    c.mismatch += diffs
    add_row(c, "0", "device", dict(want, failed=len(ooms)), fam,
            ["devices[id=0].families.device." + d for d in diffs
             if d.startswith("device family")],
            "devices[id=0].families.device")
    if ooms:
        o = ooms[-1]
        c.rows.append(("0", f"oom x{len(ooms)} {o.get('api')}",
                       f"asked {fmt_bytes(o.get('requested_bytes'))}; "
                       f"driver free/total {fmt_bytes(o.get('free_bytes'))}"
                       f"/{fmt_bytes(o.get('total_bytes'))}",
                       "MISMATCH" if any(d.startswith("OOM") for d in diffs)
                       else "ok"))


# ---- the machine -------------------------------------------------------

def probe(a, env):
    """(ok, text): whether a driver and a GPU are here, and what they are."""
    path = a.progs.get("gpu_driver")
    if not path:
        return False, "gpu_driver was not built"
    rc, out, err = run([path, "--case", "probe"], env, timeout=60)
    text = (out + err).strip()
    if rc != 0:
        return False, text or f"gpu_driver --case probe: exit {rc}"
    ok = " devices " in text.splitlines()[0] and \
        not text.splitlines()[0].endswith(" devices 0")
    return ok, text


def needs_bundle_libs(a, env):
    """Whether vramtrace or the preload miss a library this host lacks
    (then the bundle's lib/ copies are used; otherwise the host's own,
    which its other programs use too)."""
    rc, _, _ = run([a.vramtrace, "--help"], env, timeout=30)
    if rc != 0:
        return True
    penv = dict(env, LD_PRELOAD=a.preload, VRAMTRACE_ENABLE="0")
    rc, _, err = run(["sh", "-c", "true"], penv, timeout=30)
    return rc != 0 or "cannot be preloaded" in err


def print_table(all_cases, header):
    """One line per family (and OOM, and resolver log) of each case, the
    reported values and ok/MISMATCH; then every mismatch in words."""
    print(header)
    lines = [("case", "dev", "what", "reported", "result")]
    for c in all_cases:
        if c.status:
            lines.append((c.name, "", "", c.status, ""))
        for row in c.rows:
            lines.append((c.name,) + row)
        for n in c.notes:
            lines.append((c.name, "", "note", n, ""))
    widths = [max(len(line[i]) for line in lines) for i in range(4)]
    for line in lines:
        print("  ".join(f"{v:{w}}" for v, w in zip(line, widths)) +
              "  " + line[4])
    bad = [c for c in all_cases if c.mismatch]
    for c in bad:
        print(f"\nMISMATCH in {c.name}:")
        for m in c.mismatch:
            print("  " + m)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bundle")
    ap.add_argument("--vramtrace")
    ap.add_argument("--preload")
    ap.add_argument("--prog", action="append", default=[],
                    metavar="NAME=PATH")
    ap.add_argument("--cudart-lib")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--fake-dir")
    ap.add_argument("--tmp-root")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--expect-mismatch", action="store_true",
                    help="self-test: exit 0 only if the run reports a "
                         "mismatch (and 1 if it does not)")
    a = ap.parse_args()
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "VRAMTRACE_OUT", "VRAMTRACE_RESOLVE_LOG"):
        env.pop(k, None)
    a.progs = dict(p.split("=", 1) for p in a.prog)
    if a.bundle:
        b = os.path.abspath(a.bundle)
        a.vramtrace = a.vramtrace or os.path.join(b, "bin", "vramtrace")
        a.preload = a.preload or os.path.join(b, "lib", "libvramtrace.so")
        for p in glob.glob(os.path.join(b, "bin", "*")):
            a.progs.setdefault(os.path.basename(p), p)
        if os.path.isdir(os.path.join(b, "cudart")):
            a.cudart_lib = a.cudart_lib or os.path.join(b, "cudart")
        if needs_bundle_libs(a, env):
            env["LD_LIBRARY_PATH"] = os.path.join(b, "lib") + (
                ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
                else "")
    if not a.vramtrace or not a.preload:
        ap.error("--bundle, or --vramtrace and --preload, are required")
    if a.dry_run:
        if not a.fake_dir:
            ap.error("--dry-run needs --fake-dir")
        env["LD_LIBRARY_PATH"] = os.path.abspath(a.fake_dir) + (
            ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH")
            else "")
        env.setdefault("FAKECUDA_DEVICES", "2")
        env.setdefault("FAKECUDA_MEM", "8G,4G")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(a.preload)
    a.system_cudart = subprocess.run(
        ["sh", "-c", "ldconfig -p 2>/dev/null | grep -q libcudart.so.13"]
    ).returncode == 0
    rc, _, err = run([a.vramtrace, "--help"], env, timeout=30)
    if rc != 0:
        print(f"error: {a.vramtrace} does not run here (exit {rc}): "
              f"{err.strip()[-500:]}")
        return 2
    ok, machine = probe(a, env)
    if not ok:
        print(f"SKIP: no NVIDIA GPU here ({machine}); the GPU suite did not "
              f"run")
        return 77
    start = time.monotonic()
    root = a.tmp_root or tempfile.gettempdir()
    os.makedirs(root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="vramtrace-gpu-", dir=root)
    all_cases = cases()
    for c in all_cases:
        print(f"running {c.name} ...", flush=True)
        run_one(a, c, env, tmp)
    took = time.monotonic() - start
    header = (f"\nvramtrace GPU suite{' (DRY RUN on the fake driver)' if a.dry_run else ''}: "
              f"{took:.1f} s\n{machine}\n")
    bad = print_table(all_cases, header)
    if took > BUDGET_S:
        print(f"\nnote: the suite took {took:.0f} s, more than its "
              f"{BUDGET_S} s budget")
    if bad or a.keep:
        print(f"\nfiles kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    idle = [c for c in all_cases if c.status and not c.mismatch]
    print(f"\n{len(all_cases) - len(bad) - len(idle)} cases matched, "
          f"{len(idle)} n/a or skipped, {len(bad)} MISMATCH")
    if a.expect_mismatch:
        print("expected a mismatch: " + ("reported, exit 1 -> 0" if bad
                                         else "NONE reported"))
        return 0 if bad else 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
