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
        tap.ok(rc == 0 and len(rows) == 3 and
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
        rc, out, err = run([exe, "demo", "-o", "d"], tmp, timeout=300)
        tap.ok(rc == 1 and "already holds a demo run" in err and
               out == "", "demo -o into its own earlier output refuses",
               f"exit {rc}\n{out}{err}")


def main():
    def add(ap):
        ap.add_argument("group", choices=["commands", "demo"])
    opts = parse_args(add)
    tap = Tap()
    globals()["group_" + opts.group](opts, tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
