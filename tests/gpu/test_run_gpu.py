#!/usr/bin/env python3
"""test_run_gpu.py — the GPU suite's own logic without running anything
(TAP): a program's log turned into the expected report, a matching report
passing, and one counter, one OOM's free bytes or one reserved range off
being a MISMATCH row in the table."""
import copy
import io
import os
import sys
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_gpu  # noqa: E402

LOG = """prog gpu_driver-test driver default
call cuInit 0 CUDA_SUCCESS
device 0 8589934592
device 1 4294967296
alloc device 0 3145728 0x1
alloc device 0 5242880 0x2
free 0x1
alloc device 1 1048576 0x3
alloc reserved_va 0 16777216 0x4
alloc vmm 0 6291456 0x5
free 0x5
free 0x4
alloc pinned host 4096 0x6
call cuMemAlloc_v2 2 CUDA_ERROR_OUT_OF_MEMORY
oom cuMemAlloc_v2 0 1073741824 1000 8589934592
call cuMemFree_v2 1 CUDA_ERROR_INVALID_VALUE
"""

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    failed += not cond
    print(f"{'ok' if cond else 'not ok'} {n} - {what}")


def report_for(want, va):
    """The report vramtrace analyze would write for exactly this run."""
    devs = []
    for d in want["devices"]:
        devs.append({"id": d["id"], "total_bytes": d["total_bytes"],
                     "families": copy.deepcopy(d["families"]),
                     "reserved_va": dict(va.get(d["id"],
                                                run_gpu.zero()))})
    return {"devices": devs, "host": copy.deepcopy(want["host"]),
            "ooms": [dict(o) for o in want["ooms"]],
            "failures": [{} for _ in range(want["failures"])],
            "run": {"truncated": False}}


def table(case):
    buf = io.StringIO()
    with redirect_stdout(buf):
        run_gpu.print_table([case], "")
    return buf.getvalue()


lines = [w.split() for w in LOG.splitlines()]
want, va, unexpected = run_gpu.expectation(lines)
d0 = want["devices"][0]["families"]["device"]
ok(d0 == {"allocs": 2, "frees": 1, "failed": 1, "peak_bytes": 8388608,
          "live_bytes_end": 5242880}, f"device 0 counters {d0}")
ok(want["devices"][1]["families"]["device"]["live_bytes_end"] == 1048576,
   "device 1 has its own counters")
ok(want["devices"][0]["families"]["vmm"]["peak_bytes"] == 6291456,
   "vmm peak")
ok(va[0]["allocs"] == 1 and va[0]["peak_bytes"] == 16777216
   and va[0]["live_bytes_end"] == 0, f"reserved range {va[0]}")
ok(want["host"]["families"]["pinned"]["live_bytes_end"] == 4096,
   "host pinned family")
ok(want["failures"] == 1 and want["ooms"][0]["free_bytes"] == 1000
   and want["ooms"][0]["total_bytes"] == 8589934592, "the OOM")
ok(unexpected == ["cuMemFree_v2 returned 1 CUDA_ERROR_INVALID_VALUE"],
   f"a failure with no oom line is unexpected: {unexpected}")

case = run_gpu.Case("t", "gpu_driver", [], "driver")
run_gpu.compare(case, want, va, report_for(want, va))
ok(not case.mismatch, f"the matching report passes: {case.mismatch}")
ok("MISMATCH" not in table(case), "and its table says ok")

for what, poke in [
        ("one alloc too many",
         lambda r: r["devices"][0]["families"]["device"].update(allocs=3)),
        ("the OOM's free bytes",
         lambda r: r["ooms"][0].update(free_bytes=999)),
        ("the OOM's total bytes",
         lambda r: r["ooms"][0].update(total_bytes=1)),
        ("a reserved range never freed",
         lambda r: r["devices"][0]["reserved_va"].update(frees=0)),
        ("a host family peak",
         lambda r: r["host"]["families"]["pinned"].update(peak_bytes=1)),
]:
    rep = report_for(want, va)
    poke(rep)
    case = run_gpu.Case("t", "gpu_driver", [], "driver")
    run_gpu.compare(case, want, va, rep)
    text = table(case)
    ok(case.mismatch and "MISMATCH" in text,
       f"{what}: a mismatch ({case.mismatch[:1]})")

# PyTorch: one 256 MiB segment allocated and freed, OOMs retried.
TORCH = [w.split() for w in """prog torch-2 torch default
device 0 1000
meminfo 900 1000
alloc device 0 268435456 tensor
free tensor
oom-caught 2000""".splitlines()]


def torch_report(oom_apis):
    fam = {"allocs": 1, "frees": 1, "failed": len(oom_apis),
           "peak_bytes": 268435456, "live_bytes_end": 0}
    return {"devices": [{"id": 0, "families": {"device": fam}}],
            "ooms": [{"device": 0, "api": api, "requested_bytes": 2097152,
                      "free_bytes": 900, "total_bytes": 1000}
                     for api in oom_apis]}


for what, rep, good in [
        ("two retried OOMs", torch_report(["cuMemAlloc_v2"] * 2), True),
        ("no OOM", torch_report([]), False),
        ("an OOM on another API", torch_report(["cuMemAllocAsync"]), False)]:
    case = run_gpu.Case("torch", "torch", [], "torch")
    run_gpu.torch_checks(case, TORCH, rep)
    ok(bool(case.mismatch) != good and
       ("MISMATCH" in table(case)) != good,
       f"pytorch, {what}: {'ok' if good else 'a mismatch'} "
       f"({case.mismatch[:1]})")

print(f"1..{n}")
sys.exit(1 if failed else 0)
