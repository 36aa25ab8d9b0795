#!/usr/bin/env python3
"""What a newcomer trips on, command by command (suite 'cli'; TAP).

    run_newcomer.py --vramtrace EXE --mktrace EXE --src DIR GROUP

GROUP commands: `help --help`; `-o` into a directory that does not
exist names that directory; `demo -o` refuses a directory that already
holds its runs, and keeps its logs inside each run; `table DIR/*` skips
the files beside the runs; `compare` shows each run's capacity; `rules`
never offers the ctypes call gate as a rule; `live` and `ctl` on a
directory that is no run or a process that is not traced say so at once;
`analyze A B` of two recordings of one host at different times refuses to
merge them.

Each check was failing before the fix it belongs to. Traces are written
by mktrace from scripts given here, in a temporary directory that is the
cwd of every command.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_cli import Tap, parse_args, run  # noqa: E402


def sanitizer(exe):
    """"asan", "tsan" or None: how the program under test was built (a
    sanitizer build runs the cli suite too)."""
    p = subprocess.run(["ldd", exe], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    for name in ("asan", "tsan"):
        if f"lib{name}" in p.stdout:
            return name
    return None


def mkt(opts, tmp, name, text):
    """Writes the mktrace script name.mkt into tmp and runs it there."""
    path = os.path.join(tmp, name + ".mkt")
    with open(path, "w") as f:
        f.write(text)
    rc, out, err = run([opts.mktrace, path], tmp)
    if rc != 0:
        raise RuntimeError(f"mktrace {name} failed: {err}")


# One llama-server run on an NVIDIA L4 of 24 GiB (host-a) and one on a
# 48 GiB card of the same ordinal and no UUID: compare matches the two by
# (host, vendor, ordinal), and each has its own capacity. The allocations
# of runC come through Python's ctypes call gate.
TWO_CARDS = """
file runS/10.vtrace
header 10 1 1700000000s 1000s host-a /usr/bin/llama-server llama-server -m m.gguf -c 4096
device 1 0 24Gi NVIDIA~L4 -
chunk 10 1000s
alloc 10ms cuMemAlloc_v2 0 0x100000000 6Gi p=weights
trailer 1001s
write runS/10.exit exit 0
file runL/20.vtrace
header 20 1 1700001000s 2000s host-a /usr/bin/llama-server llama-server -m m.gguf -c 8192
device 1 0 48Gi NVIDIA~L40S -
chunk 20 2000s
alloc 10ms cuMemAlloc_v2 0 0x100000000 6Gi p=weights
alloc 10ms cuMemAlloc_v2 0 0x300000000 4Gi p=kv_cache
trailer 2001s
write runL/20.exit exit 0
file runC/30.vtrace
header 30 1 1700002000s 3000s host-a /usr/bin/python3 python3 myjob.py
device 1 0 24Gi NVIDIA~L4 -
string 1 /usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so
string 2 _ctypes_callproc
string 3 /usr/lib/x86_64-linux-gnu/libffi.so.8
string 4 ffi_call
string 5 myjob.py
string 6 grab
string 7 main
frame 1 native 0x7f0000001000 3 4 0x20
frame 2 native 0x7f0000002000 1 2 0x40
frame 3 py 5 6 12
frame 4 py 5 7 30
stack 1 0 4
stack 2 1 3
stack 3 2 2
stack 4 3 1
chunk 30 3000s
alloc 10ms cuMemAlloc_v2 0 0x100000000 2Gi s=4
trailer 3001s
write runC/30.exit exit 0
"""


# A plain Python program, not a server: it asks the driver for 1 GiB at a
# time through ctypes until the 8 GiB card is full, then exits 1. Its
# stacks are what CPython 3.11 and ctypes give: libffi's unnamed frames
# innermost, the ctypes gate, the interpreter, and the Python frames of
# the script last (the preload reads them apart). Its output.log is the
# program's own.
PROGRAM = """
file prog/600.vtrace
header 600 1 1700000000s 6000s host-a /usr/bin/python3 python3 alloc.py
device 1 0 8Gi Fake~GPU~0 00112233445566778899aabbccddeeff
string 1 /lib/x86_64-linux-gnu/libffi.so.8
string 2 ffi_call
string 3 /usr/lib/python3.11/lib-dynload/_ctypes.cpython-311-x86_64-linux-gnu.so
string 4 _ctypes_callproc
string 5 /usr/lib/libpython3.11.so.1.0
string 6 _PyEval_EvalFrameDefault
string 7 PyEval_EvalCode
string 8 /usr/bin/python3
string 9 _start
string 10 /lib/x86_64-linux-gnu/libc.so.6
string 11 __libc_start_main
string 12 alloc.py
string 13 grab
string 14 main
string 15 <module>
frame 1 native 0x7f0000001f7a 1 0 0
frame 2 native 0x7f0000001000 1 2 0xcd
frame 3 native 0x7f0000002000 3 4 0x31a
frame 4 native 0x7f0000003000 5 6 0x2e53
frame 5 native 0x7f0000004000 5 7 0x224
frame 6 native 0x7f0000005000 10 11 0x85
frame 7 native 0x401000 8 9 0x21
frame 8 py 12 13 21
frame 9 py 12 14 40
frame 10 py 12 15 47
stack 1 0 10
stack 2 1 9
stack 3 2 8
stack 4 3 7
stack 5 4 6
stack 6 5 5
stack 7 6 4
stack 8 7 3
stack 9 8 2
stack 10 9 1
chunk 600 6000s
alloc 10ms cuMemAlloc_v2 0 0x100000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x140000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x180000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x1c0000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x200000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x240000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x280000000 1Gi s=10
alloc 1ms cuMemAlloc_v2 0 0x2c0000000 1Gi s=10
fail 1ms cuMemAlloc_v2 0 0 1Gi 2 0 8Gi s=10
trailer 6001s
write prog/600.exit exit 1
write prog/output.log 2023-11-14T22:13:20.010000Z out alloc.py: holding 1 x 1024 MiB
append prog/output.log 2023-11-14T22:13:20.020000Z err alloc.py: block 9 failed: CUDA_ERROR_OUT_OF_MEMORY (2)
"""


# A job recorded from its start, stopped with `ctl stop` at 4 s, then an
# allocation refused in standby: the preload writes a snapshot and the
# failure. Recording began at 0 s, not at that snapshot.
STOPPED = """
file stop/800.vtrace
header 800 1 1700000000s 8000s host-a /usr/bin/python3 python3 job.py
device 1 0 8Gi Fake~GPU~0 00112233445566778899aabbccddeeff
chunk 800 8000s
alloc 10ms cuMemAlloc_v2 0 0x100000000 2Gi
snapshot 4s stop
snapshot 20ms begin
alloc 0 cuMemAlloc_v2 0 0x100000000 2Gi
alloc 0 cuMemAlloc_v2 0 0x200000000 5Gi
snapshot 0 end
fail 0 cuMemAlloc_v2 0 0 4Gi 2 1Gi 8Gi
trailer 8005s
write stop/800.exit exit 1
"""


def progress_checks(opts, tap, tmp):
    """A long analysis on a terminal says how much of how much it read."""
    import pty
    if not opts.gen:
        tap.ok(True, "# SKIP no gen_trace for the progress check")
        return
    # long enough to show progress (half a second); fewer under a
    # sanitizer, which slows the analysis down as much
    events = "10000000" if not sanitizer(opts.vramtrace) else "2000000"
    rc, out, err = run([opts.gen, "--out", "big", "--events", events],
                       tmp, timeout=240)
    master, slave = pty.openpty()
    t0 = time.monotonic()
    subprocess.run([opts.vramtrace, "analyze", "-f", "json", "big"],
                   cwd=tmp, stdout=subprocess.DEVNULL, stderr=slave,
                   timeout=120)
    took = time.monotonic() - t0
    os.close(slave)
    os.set_blocking(master, False)
    data = b""
    try:
        while True:
            d = os.read(master, 65536)
            if not d:
                break
            data += d
    except (BlockingIOError, OSError):
        pass
    os.close(master)
    text = data.decode("utf-8", "replace")
    reading = [l for l in text.split("\r") if "reading" in l]
    # Progress starts after half a second: a machine fast enough to read
    # it all sooner shows none, and that is right too.
    tap.ok((reading and all(" of " in l and "%)" in l for l in reading)) or
           (not reading and took < 0.6),
           "progress: bytes read of the total", (text[:400], took))


def group_reports(opts, tap):
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-new-") as tmp:
        mkt(opts, tmp, "stop", STOPPED)
        rc, out, err = run([exe, "analyze", "stop"], tmp)
        rc2, out2, _ = run([exe, "analyze", "-f", "json", "stop"], tmp)
        rep = json.loads(out2) if rc2 == 0 else {}
        tap.ok(rc == 0 and "recording began" not in out and
               "recording started" not in out and
               rep.get("recording_start_s", 0) is None,
               "ctl stop, then an OOM in standby: recording still began "
               "at 0 s", out)
        progress_checks(opts, tap, tmp)
        mkt(opts, tmp, "prog", PROGRAM)
        rc, out, err = run([exe, "analyze", "prog"], tmp)
        lines = out.splitlines()
        tap.ok(rc == 0 and lines and lines[0].startswith(
            "OUT OF MEMORY in pid 600 (python3 alloc.py), a program that "
            "is not a server") and
            "grab (alloc.py:21) asked for 1.00 GiB on device 0" in lines[1],
            "a program that is no server: the report leads with the "
            "failing call", out[:600])
        stack = lines[lines.index("  its stack, innermost first:") + 1:][:3] \
            if "  its stack, innermost first:" in lines else []
        tap.ok([l.split()[0] for l in stack] == ["grab", "main",
                                                "<module>"],
               "... then its stack, Python frames first, plumbing left out",
               "\n".join(stack))
        tap.ok("inconclusive (not_a_server)" in out and
               "ladder" not in out and "server ready" not in out and
               "requests:" not in out and "engine log" not in out and
               "load stage" not in out.split("run:")[0],
               "... and no ladder, stage, readiness, requests or engine "
               "log", out)
        rc, out, err = run([exe, "analyze", "-f", "json", "prog"], tmp)
        dg = json.loads(out)["diagnosis"] if rc == 0 else {}
        fc = dg.get("failing_call") or {}
        tap.ok(dg.get("detail") == "not_a_server" and
               dg.get("server") is False and dg.get("ladder") == [] and
               fc.get("site") == "grab (alloc.py:21)" and
               [f["function"] for f in fc.get("frames", [])][:3] ==
               [None, "ffi_call", "_ctypes_callproc"],
               "json: not_a_server, server false, the failing call's site "
               "and frames", json.dumps(dg)[:800])
        # Call order: the Python frames inside the interpreter's
        # evaluation loop that ran them, never above the process's entry.
        names = [f["function"] for f in fc.get("frames", [])]
        tap.ok(names.index("grab") == names.index(
            "_PyEval_EvalFrameDefault") - 3 and
            names.index("<module>") < names.index("_start"),
            "json frames in call order: Python frames inside the "
            "interpreter", names)
        rc, out, err = run([exe, "analyze", "-f", "folded", "prog"], tmp)
        path = out.strip().rsplit(" ", 1)[0].split(";") if rc == 0 else []
        tap.ok(path[:3] == ["[unattributed]", "_start",
                            "__libc_start_main"] and
               "<module> (alloc.py:47)" in path and
               path.index("<module> (alloc.py:47)") >
               path.index("_PyEval_EvalFrameDefault") and
               path[-1].startswith("0x"),
               "folded: root first, the Python frames inside the "
               "interpreter, not above _start", out)
        # The HTML report: next to the run, the path said.
        rc, out, err = run([exe, "analyze", "-f", "html", "prog"], tmp)
        page = os.path.join(tmp, "prog", "report.html")
        tap.ok(rc == 0 and out == "" and os.path.exists(page) and
               "prog/report.html" in err,
               "html without -o: written next to the run, its path said, "
               "nothing on the terminal", f"exit {rc}\n{out[:200]}{err}")
        rc, out, err = run([exe, "analyze", "-f", "html", "-o", "-",
                            "prog"], tmp)
        tap.ok(rc == 0 and out.startswith("<!DOCTYPE html>"),
               "html -o -: standard output", out[:100])


# vLLM with --tensor-parallel-size 2 on two cards: everything lands on
# device 0, device 1 is never allocated on. 78.125 GiB of weights: a size
# that printf rounds to 78.12 and a naive JavaScript toFixed to 78.13. The
# run lasts 3 ms, so the timeline's ticks are less than a millisecond
# apart. Its output.log holds vLLM's lines in vLLM's format.
IDLE = """
file tp/700.vtrace
header 700 1 1700000000s 7000s host-a /usr/bin/python3 python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2
device 1 0 80Gi Fake~GPU~0 00112233445566778899aabbccddeeff
device 1 1 80Gi Fake~GPU~1 ffeeddccbbaa99887766554433221100
chunk 700 7000s
meminfo 100us 0 80Gi 80Gi
alloc 1ms cuMemAlloc_v2 0 0x100000000 78Gi p=weights
alloc 1ms cuMemAlloc_v2 0 0x1000000000 128Mi p=weights
fail 1ms cuMemAlloc_v2 0 0 4Gi 2 1920Mi 80Gi p=weights
trailer 7000003us
write tp/700.exit exit 1
write tp/output.log 2023-11-14T22:13:20.000100Z out (EngineCore_DP0 pid=700) INFO 11-14 22:13:20 [gpu_model_runner.py:2634] Model loading took 78.1 GiB and 0.250000 seconds
append tp/output.log 2023-11-14T22:13:20.000200Z out (EngineCore_DP0 pid=700) INFO 11-14 22:13:20 [kv_cache_utils.py:1091] Maximum concurrency for 8,192 tokens per request: 3.25x
append tp/output.log 2023-11-14T22:13:20.002900Z out (EngineCore_DP0 pid=700) ERROR 11-14 22:13:20 [multiproc_executor.py:671] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB. GPU 0 has a total capacity of 80.00 GiB of which 1.88 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in use. Of the allocated memory 78.12 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
"""

PAGE_JS = r"""
function t(sel) { var e = document.querySelector(sel); return e ? e.innerText : null; }
function all(sel) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) { return e.textContent; }); }
var log = document.getElementById('engine-log');
var logBody = log ? log.querySelector('.body') : null;
return {
  rendered: document.body.getAttribute('data-rendered'),
  lead: t('#failing-call'),
  chips: t('#summary'),
  ladder: document.querySelectorAll('table.ladder').length,
  costs: all('ul.costs li'),
  siteSummary: all('table.sites summary'),
  logHidden: log ? log.hidden : true,
  logText: logBody ? logBody.innerText : '',
  logOverflow: logBody ? logBody.scrollWidth - logBody.clientWidth : 0,
  pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth,
  idleBudget: t('.budget.idle[data-device="1"]'),
  idleTimeline: t('#timelines .device.idle[data-device="1"]'),
  budgets: all('.budget .label'),
  utc: all('#timelines svg text.utc')
};
"""


def group_html(opts, tap):
    import shutil
    from run_html import WebDriver
    chromium = next((shutil.which(n) for n in
                     ("chromium", "chromium-browser", "google-chrome")
                     if shutil.which(n)), None)
    chromedriver = shutil.which("chromedriver")
    if not chromium or not chromedriver:
        print("1..0 # SKIP chromium or chromedriver not installed")
        return "skip"
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-new-") as tmp:
        mkt(opts, tmp, "prog", PROGRAM)
        mkt(opts, tmp, "tp", IDLE)
        wd = WebDriver(chromium, chromedriver, tmp)
        try:
            pages = {}
            for run_dir in ("prog", "tp"):
                rc, out, err = run([exe, "analyze", "-f", "html", run_dir],
                                   tmp)
                wd.go("file://" + os.path.join(tmp, run_dir,
                                               "report.html"))
                wd.settle()
                pages[run_dir] = wd.js(PAGE_JS)
            p = pages["prog"]
            tap.ok(p["rendered"] == "ok" and p["lead"] and
                   "grab (alloc.py:21) asked for 1.00 GiB" in p["lead"] and
                   "grab  alloc.py:21" in p["lead"] and
                   "ffi" not in p["lead"],
                   "html, a program: the failing call and its stack lead",
                   json.dumps(p)[:1500])
            tap.ok("no server listened" not in (p["chips"] or "") and
                   p["ladder"] == 0 and p["logHidden"] and
                   "" not in p["costs"],
                   "html, a program: no server chip, ladder, engine log or "
                   "empty cost", json.dumps(p)[:1500])
            tap.ok(p["siteSummary"] and p["siteSummary"][0].startswith(
                "grab (alloc.py:21) \u2190 main (alloc.py:40)"),
                "html top sites: a path's summary leads with the frames "
                "that tell it apart, not libffi's addresses",
                p["siteSummary"])
            q = pages["tp"]
            tap.ok(q["idleBudget"] and "idle" in q["idleBudget"] and
                   "80.00 GiB" in q["idleBudget"] and q["idleTimeline"],
                   "html: the idle second card is drawn (budget and "
                   "timeline)", json.dumps(q)[:1500])
            tap.ok(not q["logHidden"] and "3.25x" in q["logText"] and
                   "x1000" not in q["logText"] and
                   "device -1" not in q["logText"] and
                   "fatal error 0" not in q["logText"].lower() and
                   q["logOverflow"] <= 0 and q["pageOverflow"] <= 0,
                   "html engine's log: read for people, nothing off the "
                   "page", json.dumps(q)[:2500])
            rc, out, err = run([exe, "analyze", "tp"], tmp)
            tap.ok("78.12 GiB" in out and
                   any("78.12 GiB" in b for b in q["budgets"]) and
                   not any("78.13" in b for b in q["budgets"]),
                   "text and html round 78.125 GiB the same",
                   q["budgets"])
            utc = q["utc"][1:]  # the row's "UTC" label first
            tap.ok(len(utc) >= 3 and len(set(utc)) == len(utc),
                   "the UTC labels under a 3 ms timeline all differ",
                   q["utc"])
        finally:
            wd.close()


# vllm serve --tensor-parallel-size 2 as `record` leaves it: the root
# command made no GPU call (its trace has a header and a trailer with its
# exit status), the two spawned workers both landed on device 0 (a
# per-worker CUDA_VISIBLE_DEVICES=0), the second's weights fail there;
# device 1, in every worker's inventory, stays idle. The engine core
# reaped the workers and wrote their exit files.
MISPLACED = """
file tp/400.vtrace
header 400 1 1700000000s 4000s host-a /usr/bin/python3 python3 /usr/local/bin/vllm serve m --tensor-parallel-size 2
trailer 4009s +0101
write tp/400.exit exit 1
file tp/401.vtrace
header 401 400 1700000001s 4001s host-a /usr/bin/python3 /usr/bin/python3 -c from~multiprocessing.spawn~import~spawn_main;~spawn_main(tracker_fd=5,~pipe_handle=7) --multiprocessing-fork
device 1 0 80Gi NVIDIA~H100~80GB~HBM3 00112233445566778899aabbccddeeff
device 1 1 80Gi NVIDIA~H100~80GB~HBM3 ffeeddccbbaa99887766554433221100
chunk 401 4001s
meminfo 100ms 0 80Gi 80Gi
alloc 100ms cuMemAlloc_v2 0 0x7f0000000000 25Gi p=weights
alloc 100ms cuMemAlloc_v2 0 0x7f1000000000 25Gi p=weights
trailer 4008s +0100
write tp/401.exit signal 15
file tp/402.vtrace
header 402 400 1700000001s 4001s host-a /usr/bin/python3 /usr/bin/python3 -c from~multiprocessing.spawn~import~spawn_main;~spawn_main(tracker_fd=5,~pipe_handle=8) --multiprocessing-fork
device 1 0 80Gi NVIDIA~H100~80GB~HBM3 00112233445566778899aabbccddeeff
device 1 1 80Gi NVIDIA~H100~80GB~HBM3 ffeeddccbbaa99887766554433221100
chunk 402 4002s
meminfo 100ms 0 30Gi 80Gi
alloc 100ms cuMemAlloc_v2 0 0x7f2000000000 25Gi p=weights
fail 100ms cuMemAlloc_v2 0 0 25Gi 2 5Gi 80Gi p=weights
trailer 4008s +0101
"""

# One vLLM process with --tensor-parallel-size 2 whose weights fill both
# cards: the advice shards over more cards than it already had.
TOO_BIG = """
file big/500.vtrace
header 500 1 1700000000s 5000s host-a /usr/bin/python3 python3 -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2
device 1 0 80Gi NVIDIA~H100~80GB~HBM3 00112233445566778899aabbccddeeff
device 1 1 80Gi NVIDIA~H100~80GB~HBM3 ffeeddccbbaa99887766554433221100
chunk 500 5000s
alloc 100ms cuMemAlloc_v2 0 0x7f0000000000 70Gi p=weights
alloc 100ms cuMemAlloc_v2 1 0x7e0000000000 70Gi p=weights
fail 100ms cuMemAlloc_v2 0 0 20Gi 2 10Gi 80Gi p=weights
trailer 5001s
write big/500.exit exit 1
"""

# A program embedding libllama (llama-cpp-python): its command line names
# no engine, its stacks do.
EMBEDDED = """
file emb/600.vtrace
header 600 1 1700000000s 6000s host-a /usr/bin/python3 python3 chat.py --model m.gguf
device 1 0 24Gi NVIDIA~L4 0102030405060708090a0b0c0d0e0f10
string 1 /usr/lib/python3/site-packages/llama_cpp/lib/libllama.so
string 2 llama_model_load_from_file
string 3 /usr/lib/python3/site-packages/llama_cpp/lib/libggml-cuda.so
string 4 ggml_backend_cuda_buffer_type_alloc_buffer
string 5 /usr/lib/python3/site-packages/llama_cpp/llama.py
string 6 Llama.__init__
frame 1 native 0x7f0000001000 1 2 0x10
frame 2 native 0x7f1000001000 3 4 0x20
frame 3 py 5 6 372
stack 1 0 3
stack 2 1 1
stack 3 2 2 weights
chunk 600 6000s
alloc 100ms cuMemAlloc_v2 0 0x100000000 12Gi s=3
fail 100ms cuMemAlloc_v2 0 0 14Gi 2 12Gi 24Gi s=3
trailer 6001s
write emb/600.exit exit 1
"""


def group_tree(opts, tap):
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-new-") as tmp:
        mkt(opts, tmp, "tp", MISPLACED)
        rc, out, err = run([exe, "analyze", "-f", "json", "tp"], tmp)
        rep = json.loads(out) if rc == 0 else {}
        dg = rep.get("diagnosis", {})
        texts = [e["text"] for e in dg.get("evidence", [])]
        acts = dg.get("actions", [])
        tap.ok(dg.get("verdict") == "weights" and
               dg.get("detail") == "not_sharded" and
               any("the ranks in PIDs 401 and 402 are both on device 0; "
                   "device 1 is idle" in t for t in texts),
               "misplaced ranks: weights (not_sharded), the ranks and the "
               "idle card named", json.dumps(dg)[:1500])
        tap.ok(acts and "CUDA_VISIBLE_DEVICES" in acts[0] and
               not any("--tensor-parallel-size" in a for a in acts),
               "misplaced ranks: the action places them, never a parallel "
               "size the run already has", acts)
        procs = rep.get("run", {}).get("processes", [])
        root = [p for p in procs if p["pid"] == 400]
        tap.ok(root and root[0]["cmdline"][-2:] ==
               ["--tensor-parallel-size", "2"] and
               dg.get("engine") == "vllm" and
               (dg.get("flags") or {}).get("tensor_parallel") == 2,
               "the root command's trace gives the run its engine and flags",
               json.dumps(procs)[:800])
        ex = {p["pid"]: (p["exit_status"], p["exit_signal"]) for p in procs}
        tap.ok(ex == {400: (1, None), 401: (128 + 15, 15), 402: (1, None)},
               "every process's exit: the exit file first (a signal), "
               "else the trailer's own", ex)
        rc, out, err = run([exe, "analyze", "tp"], tmp)
        tap.ok("exit ?" not in out and "no exit status was recorded" not in
               out, "no worker is exit ?", out[:2000])
        # Without the root's trace and its flags: the ranks still tell.
        os.remove(os.path.join(tmp, "tp", "400.vtrace"))
        rc, out, err = run([exe, "analyze", "-f", "json", "--no-log", "tp"],
                           tmp)
        dg = json.loads(out).get("diagnosis", {}) if rc == 0 else {}
        tap.ok(dg.get("detail") == "not_sharded" and
               not any("--tensor-parallel-size" in a
                       for a in dg.get("actions", [])),
               "misplaced ranks without the root's flags: not_sharded "
               "still", json.dumps(dg)[:800])
        mkt(opts, tmp, "big", TOO_BIG)
        rc, out, err = run([exe, "analyze", "-f", "json", "big"], tmp)
        acts = json.loads(out)["diagnosis"]["actions"] if rc == 0 else []
        tap.ok(any("--tensor-parallel-size 4" in a for a in acts) and
               not any("--tensor-parallel-size 2" in a for a in acts),
               "weights do not fit at tensor parallel 2: shard over 4, "
               "never the 2 it had", acts)
        # The engine from the stacks, in every command that names it.
        mkt(opts, tmp, "emb", EMBEDDED)
        rc, out, err = run([exe, "analyze", "-f", "json", "emb"], tmp)
        dg = json.loads(out)["diagnosis"] if rc == 0 else {}
        tap.ok(dg.get("engine") == "llama.cpp" and
               any(" -ngl " in a or "-ngl" in a for a in dg.get("actions",
                                                                [])),
               "engine from the stacks: analyze names llama.cpp and its "
               "flags", json.dumps(dg)[:1200])
        rc, out, err = run([exe, "table", "-f", "json", "emb"], tmp)
        rows = json.loads(out)["runs"] if rc == 0 else [{}]
        tap.ok(rows[0].get("engine") == "llama.cpp",
               "engine from the stacks: table", out[:400])
        rc, out, err = run([exe, "plan", "emb"], tmp)
        tap.ok(rc in (0, 1) and "llama.cpp" in out.split("\n")[0],
               "engine from the stacks: plan", out[:400] + err)
        rc, out, err = run([exe, "compare", "emb", "emb"], tmp)
        tap.ok(rc == 0 and "llama.cpp" in out,
               "engine from the stacks: compare", out[:600])


def group_commands(opts, tap):
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-new-") as tmp:
        mkt(opts, tmp, "two", TWO_CARDS)

        rc, out, err = run([exe, "help", "--help"], tmp)
        tap.ok(rc == 0 and out.startswith("usage: vramtrace") and
               err == "", "help --help: the usage, exit 0",
               f"exit {rc}\n{err}")

        # -o into a missing directory names that directory, not the
        # temporary file the report goes through.
        rc, out, err = run([exe, "analyze", "-o", "nodir/report.txt",
                            "runS"], tmp)
        tap.ok(rc == 1 and err.strip() ==
               "vramtrace: error: nodir/report.txt: cannot create: nodir "
               "does not exist" and ".tmp." not in err,
               "-o into a missing directory names the directory", err)
        rc, out, err = run([exe, "analyze", "-o", "two.mkt/report.txt",
                            "runS"], tmp)
        tap.ok(rc == 1 and "two.mkt is not a directory" in err,
               "-o under a file says it is not a directory", err)

        # compare: the capacity of each run's card.
        rc, out, err = run([exe, "compare", "runS", "runL"], tmp)
        tap.ok(rc == 0 and "24.00 GiB in A, 48.00 GiB in B" in out,
               "compare shows A's and B's capacity", out)

        # table over a glob that also names files beside the runs.
        with open(os.path.join(tmp, "runS.log"), "w") as f:
            f.write("the demo's log\n")
        rc, out, err = run([exe, "table", "runL", "runS", "runS.log"], tmp)
        rows = [l for l in out.splitlines() if l.startswith("run")]
        tap.ok(rc == 0 and len(rows) == 4 and
               "runS.log: not a run" in err and "skipped" in err,
               "table DIR/*: a file beside the runs is skipped with a "
               "warning", f"exit {rc}\n{out}{err}")
        rc, out, err = run([exe, "table", "runS.log"], tmp)
        tap.ok(rc == 1 and "not a trace" in err,
               "table of that file alone is still an error", err)

        # rules: the ctypes call gate and libffi are plumbing, not rules.
        rc, out, err = run([exe, "rules", "runC"], tmp)
        tap.ok(rc == 0 and "_ctypes_callproc" not in out and
               "ffi_call" not in out and "py:grab in myjob.py" in out,
               "rules never offers the ctypes call gate", out)

        # live and ctl: a directory that is no run, a process not traced.
        os.mkdir(os.path.join(tmp, "notes"))
        with open(os.path.join(tmp, "notes", "todo.txt"), "w") as f:
            f.write("x\n")
        rc, out, err = run([exe, "live", "--count", "2", "notes"], tmp,
                           timeout=20)
        tap.ok(rc == 1 and "notes: not a run directory" in err,
               "live on a directory that is no run says so at once",
               f"exit {rc}\n{out}{err}")
        sleeper = subprocess.Popen(["sleep", "60"])
        try:
            for cmd in (["live", "--count", "2"], ["ctl"]):
                args = [exe] + cmd + [str(sleeper.pid)] + (
                    ["status"] if cmd == ["ctl"] else [])
                rc, out, err = run(args, tmp, timeout=20)
                tap.ok(rc == 1 and f"pid {sleeper.pid}: not traced" in err
                       and "gone" not in out,
                       f"{cmd[0]} on a process that is not traced says so",
                       f"exit {rc}\n{out}{err}")
        finally:
            sleeper.kill()
            sleeper.wait()

        # analyze A B: two recordings of host-a at different times.
        rc, out, err = run([exe, "analyze", "runS", "runL"], tmp)
        tap.ok(rc == 2 and out == "" and
               "separate recordings" in err and
               "vramtrace compare runS runL" in err,
               "analyze A B of two separate recordings refuses to merge "
               "them", f"exit {rc}\n{out}{err}")


def group_demo(opts, tap):
    exe = opts.vramtrace
    if sanitizer(exe) == "tsan":
        # the demo records with the preload, which the thread sanitizer
        # build does not run (its preload suite is not among tsan's)
        print("1..0 # SKIP the demo runs the preload: not in a tsan build")
        return "skip"
    with tempfile.TemporaryDirectory(prefix="vrt-new-") as tmp:
        rc, out, err = run([exe, "demo", "-o", "d"], tmp, timeout=300)
        tap.ok(rc == 0, "demo -o d runs", f"exit {rc}\n{err}")
        d = os.path.join(tmp, "d")
        beside = [n for n in os.listdir(d)
                  if not os.path.isdir(os.path.join(d, n))]
        tap.ok(not beside and os.path.exists(os.path.join(d, "none",
                                                          "demo.log")),
               "demo keeps its logs inside each run, nothing beside them",
               beside)
        runs = sorted(os.path.join("d", n) for n in os.listdir(d))
        rc, out, err = run([exe, "table", "-f", "json"] + runs, tmp)
        tap.ok(rc == 0 and len(json.loads(out)["runs"]) == 7,
               "table d/* reads every demo run", f"exit {rc}\n{err}")
        # Lines a terminal can show: prose folds at 100 columns, rows of
        # the text report stay under 120, the table's under 150.
        wide = []
        for r in runs:
            rc, out, err = run([exe, "analyze", r], tmp)
            wide += [l for l in out.splitlines() if len(l) > 120]
        tap.ok(not wide, "analyze of every demo run: no line past 120 "
               "columns", "\n".join(wide[:5]))
        rc, out, err = run([exe, "table"] + runs, tmp)
        wide = [l for l in out.splitlines() if len(l) > 150]
        tap.ok(rc == 0 and not wide and out.startswith(
            "runs in d/, engine vllm"),
            "table of the demo's runs: no line past 150 columns",
            "\n".join(wide[:5]))
        # plan tries what analyze advises, and says each reason once
        rc, out, err = run([exe, "analyze", "-f", "json", "d/concurrency"],
                           tmp)
        acts = json.loads(out)["diagnosis"]["actions"] if rc == 0 else []
        seqs = [a.split("--max-num-seqs ")[1].split()[0] for a in acts
                if "--max-num-seqs " in a]
        rc, out, err = run([exe, "plan", "-f", "json", "d/concurrency"], tmp)
        plan = json.loads(out) if rc == 0 else {}
        rows = plan.get("configurations", [])
        tried = {str(r.get("settings", {}).get("concurrency"))
                 for r in rows}
        tap.ok(seqs and seqs[0] in tried and len(rows) <= 16 and
               plan.get("best") is not None,
               "plan on the demo's concurrency run tries analyze's "
               "--max-num-seqs, in a short grid with a best row",
               f"advised {seqs}, tried {sorted(tried)}, {len(rows)} rows, "
               f"best {plan.get('best')}")
        # One definition of "fits with the margin": the cap analyze
        # sizes, at the run's other settings, is a row plan says fits
        # (not "tight": 5% of the card free at the peak in both).
        same = [r for r in rows if seqs and
                str(r.get("settings", {}).get("concurrency")) == seqs[0]
                and r["settings"].get("context_length") == 8192 and
                r["settings"].get("memory_fraction") == 0.9]
        tap.ok(same and all(r.get("fits") == "yes" for r in same) and
               plan.get("margin_percent") == 5,
               "plan says analyze's --max-num-seqs fits with the margin, "
               "not tight", json.dumps(same)[:1200])
        rc, out, err = run([exe, "plan", "d/concurrency"], tmp)
        notes = [l.split(": ", 1)[1] for l in out.splitlines()
                 if l.startswith("  ") and ": device " in l and
                 "past its" in l]
        tap.ok(notes and len(notes) == len(set(notes)),
               "plan: each footnote once, with the rows it stands for",
               out[-1500:])
        rc, out, err = run([exe, "demo", "-o", "d"], tmp, timeout=300)
        tap.ok(rc == 1 and "already holds a demo run" in err and
               out == "", "demo -o into its own earlier output refuses",
               f"exit {rc}\n{out}{err}")


def main():
    def add(ap):
        ap.add_argument("--gen")
        ap.add_argument("group", choices=["commands", "demo", "reports",
                                          "html", "tree"])
    opts = parse_args(add)
    if opts.gen:
        opts.gen = os.path.abspath(opts.gen)
    tap = Tap()
    if globals()["group_" + opts.group](opts, tap) == "skip":
        return 0
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
