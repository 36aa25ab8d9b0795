#!/usr/bin/env python3
"""run_attach.py — `vramtrace attach` on processes started without the
preload, on the fake GPU (python3 stdlib only).

Cases (--case):
  basic    attach_target (cudart-style cached pointers, one entry through
           the PLT, 8 threads in a tight allocate/free loop) recorded for a
           second: the trace says it was attached, every thread's calls are
           there with none missing in between (dump_events --check), the
           process runs on, answers, and exits 0 when told; analyze reads
           the run; attach.txt names the backend.
  refuse   the checks that refuse before anything is touched: a driver
           whose entry points cannot be moved (tests/fake/odd: each named,
           the memory map unchanged, no run directory), --partial hooking
           the rest; no GPU library; a stopped process; a process with
           another tracer; a process under the preload; bad arguments.
  control  detach by `vramtrace ctl DIR stop`; gdb batch mode as the
           injector; --tree over a process and its two workers.
  cycles   --cycles N attach/detach cycles on one attach_target under
           load: every command exits 0 within its time, the process stays
           alive and exits 0 with its counts, and every cycle's trace
           holds each thread's calls with none missing between its first
           and last.
  pycycles the same for py_target.py (Python threads calling the driver
           through ctypes pointers), its snapshot taken at every attach.
  snapshot what was there before: attach_target's 1 GiB as before_attach
           (NVML's count for the process), shrunk by the frees of what it
           held (PREFREE); py_target's weights and KV cache named from the
           frames of the torch stand-in's allocator history, or one
           before_attach bucket without history; and a released KV cache
           leaving the run.
  serve    the Done-when case: examples/attach_sim/serve.py started
           without the preload, attached, one request alone, then four at
           once run the card out of memory: analyze says concurrency, with
           the weights and the KV reserve on the ladder from the snapshot,
           nothing charged to other processes.

Exits 77 (skipped) where this machine forbids ptrace or is not x86-64.
"""
import ctypes
import glob
import json
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "preload"))
from harness import check, options, poll, scratch  # noqa: E402

PTRACE_SEIZE = 0x4206


def ptrace_allowed():
    """Whether this process may ptrace a child of its own."""
    if platform.machine() != "x86_64":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    child = subprocess.Popen(["sleep", "5"])
    try:
        r = libc.ptrace(PTRACE_SEIZE, child.pid, None, None)
        return r == 0
    finally:
        child.kill()
        child.wait()


class Target:
    """attach_target (or py_target.py) started without the preload,
    commands on its stdin."""

    def __init__(self, a, tmp, args=(), fake_dir=None, env_extra=None,
                 python=False):
        env = dict(os.environ)
        for k in list(env):
            if k.startswith("VRAMTRACE_") or k == "LD_PRELOAD":
                env.pop(k)
        env["LD_LIBRARY_PATH"] = (fake_dir or a.fake_dir) + ":" + \
            env.get("LD_LIBRARY_PATH", "")
        env.update(env_extra or {})
        self.log = open(os.path.join(tmp, "target.out"), "w+")
        exe = [sys.executable, a.py_target] if python else [a.target]
        self.p = subprocess.Popen(exe + list(args),
                                  stdin=subprocess.PIPE, stdout=self.log,
                                  stderr=subprocess.STDOUT, text=True,
                                  env=env)
        self.pid = self.p.pid
        ok = poll(lambda: "ready" in self.output(), tries=100, delay=0.05)
        check(bool(ok), f"attach_target {' '.join(args)} is ready")

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def alive(self):
        return self.p.poll() is None

    def send(self, line, reply, tries=100):
        """Writes a command; waits for a line starting with reply."""
        n = len([x for x in self.output().splitlines()
                 if x.startswith(reply)])
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return poll(lambda: len([x for x in self.output().splitlines()
                                 if x.startswith(reply)]) > n,
                    tries=tries, delay=0.05)

    def counts(self):
        self.p.stdin.write("counts\n")
        self.p.stdin.flush()
        line = poll(lambda: [x for x in self.output().splitlines()
                             if x.startswith("counts")], tries=50,
                    delay=0.05)
        return line[-1] if line else None

    def stop(self):
        """Tells it to stop; its exit status and final counts."""
        try:
            self.p.stdin.write("stop\n")
            self.p.stdin.flush()
        except BrokenPipeError:
            pass
        try:
            rc = self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = "hung"
        final = [x for x in self.output().splitlines()
                 if x.startswith("final")]
        return rc, final[-1] if final else None

    def kill(self):
        if self.alive():
            self.p.kill()
            self.p.wait()


def vt(a, *args, timeout=60):
    p = subprocess.run([a.vramtrace] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout,
                       env={k: v for k, v in os.environ.items()
                            if k not in ("VRAMTRACE_OUT", "LD_PRELOAD")})
    return p.returncode, p.stdout + p.stderr


def check_trace(a, files, what):
    """dump_events --check over files: no call missing; the totals."""
    p = subprocess.run([a.dump, "--check"] + files, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    check(p.returncode == 0,
          f"{what}: every thread's calls are there, none missing ({last})")
    m = re.search(r"allocs (\d+) frees (\d+) pinned (\d+)", last)
    return tuple(int(x) for x in m.groups()) if m else (0, 0, 0)


def header_attached(a, files):
    p = subprocess.run([a.dump] + files, stdout=subprocess.PIPE, text=True,
                       timeout=300)
    heads = [x for x in p.stdout.splitlines() if x.startswith("header")]
    return heads and all(x.split()[2] == "2" for x in heads)


# ---- cases -------------------------------------------------------------------

def fds_and_threads(pid):
    """The process's open descriptors (number -> what) and thread names."""
    fds = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            fds[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            pass
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            names.append(open(f"/proc/{pid}/task/{tid}/comm").read().strip())
        except OSError:
            pass
    return fds, sorted(names)


def case_basic(a, tmp):
    t = Target(a, tmp, ["--threads", "8", "--hold-mib", "1024"])
    before = fds_and_threads(t.pid)
    run = os.path.join(tmp, "run")
    rc, out = vt(a, "attach", str(t.pid), "-o", run, "--duration", "1")
    print(out)
    check(rc == 0, "attach --duration 1 exits 0")
    check("functions hooked inline" in out and "detached from" in out,
          "it says what it hooked and that it detached")
    files = glob.glob(os.path.join(run, "*.vtrace"))
    check(len(files) == 1, f"one trace ({files})")
    check(header_attached(a, files), "the trace says it began by attach")
    allocs, frees, pinned = check_trace(a, files, "one attach")
    check(allocs > 1000 and frees > 1000,
          f"the cached pointers' calls were recorded ({allocs} allocations)")
    check(pinned > 0, f"the PLT entry's calls were recorded ({pinned})")
    note = open(os.path.join(run, "attach.txt")).read() \
        if os.path.exists(os.path.join(run, "attach.txt")) else ""
    check("backend inline hooks" in note and "cuMemFreeHost" in note,
          "attach.txt names the backend and the hooks")
    check(t.alive(), "the process runs on after the detach")
    check(bool(t.counts()), "and answers")
    after = fds_and_threads(t.pid)
    new = {fd: what for fd, what in after[0].items()
           if before[0].get(fd) != what}
    # libunwind, which the agent loaded and which stays loaded with it,
    # keeps one pipe for checking the memory it reads (docs/attach.md).
    check(all(w.startswith("pipe:") for w in new.values()) and
          len(new) <= 2,
          f"the agent's descriptors (trace, control socket, pidfd) are "
          f"closed ({new})")
    check(after[1] == before[1] and
          not any(n.startswith("vramtrace-") for n in after[1]),
          f"its threads have ended ({after[1]})")
    rc2, out2 = vt(a, "analyze", run)
    check(rc2 == 0 and "device 0" in out2, "analyze reads the run")
    rc, final = t.stop()
    check(rc == 0 and final, f"the process exits 0 when told ({rc}, {final})")


def fn_bytes(pid, names):
    """The first 16 bytes of each named export of the process's libcuda."""
    maps = open(f"/proc/{pid}/maps").read().splitlines()
    lib = [m for m in maps if "libcuda.so" in m]
    if not lib:
        return {}
    path = lib[0].split()[-1]
    base = min(int(m.split("-")[0], 16) for m in lib
               if m.split()[-1] == path and m.split()[2] == "00000000")
    out = subprocess.run(["nm", "-D", "--defined-only", path],
                         stdout=subprocess.PIPE, text=True).stdout
    syms = {x.split()[2]: int(x.split()[0], 16) for x in out.splitlines()
            if len(x.split()) == 3}
    got = {}
    with open(f"/proc/{pid}/mem", "rb") as mem:
        for n in names:
            if n in syms:
                mem.seek(base + syms[n])
                got[n] = mem.read(16)
    return got


def case_refuse(a, tmp):
    odd = ["cuMemHostUnregister", "cuMemGetInfo_v2", "cuMemHostRegister_v2"]
    t = Target(a, tmp, ["--threads", "2"], fake_dir=a.odd_dir)
    before_maps = open(f"/proc/{t.pid}/maps").read()
    before = fn_bytes(t.pid, odd + ["cuMemAlloc_v2", "read"])
    run = os.path.join(tmp, "odd")
    rc, out = vt(a, "attach", str(t.pid), "-o", run, "--duration", "0.2")
    print(out)
    check(rc == 1, "attach refuses a driver it cannot hook (exit 1)")
    check(all(n in out for n in odd),
          "the refusal names each function it cannot move")
    check("shorter" in out and "reads the bytes" in out and
          "branch" in out, "and says why for each")
    # The files mapped: the same set (anonymous memory may change on its
    # own, a thread's arena or stack; no library may appear).
    def files(maps):
        return sorted({m.split()[-1] for m in maps.splitlines()
                       if len(m.split()) >= 6 and m.split()[-1].startswith("/")})
    after_maps = open(f"/proc/{t.pid}/maps").read()
    check(files(after_maps) == files(before_maps) and
          "libvramtrace" not in after_maps,
          "the process's mapped files are unchanged (no agent loaded)")
    check(fn_bytes(t.pid, odd + ["cuMemAlloc_v2", "read"]) == before,
          "its functions' first bytes are unchanged")
    check(not os.path.exists(run), "no run directory was made")
    run2 = os.path.join(tmp, "partial")
    rc, out = vt(a, "attach", str(t.pid), "-o", run2, "--duration", "0.5",
                 "--partial")
    print(out)
    check(rc == 0 and "not hooked" in out,
          "--partial attaches and warns for each function left out")
    note = open(os.path.join(run2, "attach.txt")).read() \
        if os.path.exists(os.path.join(run2, "attach.txt")) else ""
    check(note.count("refused:") == 3, "attach.txt lists the three refused")
    files = glob.glob(os.path.join(run2, "*.vtrace"))
    allocs, _, _ = check_trace(a, files, "--partial")
    check(allocs > 0, "the hooked calls were recorded")
    check(fn_bytes(t.pid, odd + ["cuMemAlloc_v2", "read"]) == before,
          "after the detach every function is as it was")
    rc, final = t.stop()
    check(rc == 0, f"the process exits 0 ({rc})")

    # No GPU library.
    sl = subprocess.Popen(["sleep", "60"])
    rc, out = vt(a, "attach", str(sl.pid), "-o", os.path.join(tmp, "x"))
    check(rc == 1 and "no GPU library" in out,
          f"a process without a GPU library is refused ({out.strip()})")
    # Stopped.
    t2 = Target(a, tmp, ["--threads", "1"])
    os.kill(t2.pid, signal.SIGSTOP)
    poll(lambda: proc_state(t2.pid) == "T", tries=200, delay=0.01)
    rc, out = vt(a, "attach", str(t2.pid), "-o", os.path.join(tmp, "x"))
    check(rc == 1 and "stopped" in out,
          f"a stopped process is refused ({out.strip()})")
    os.kill(t2.pid, signal.SIGCONT)
    # Another tracer: this driver seizes it.
    libc = ctypes.CDLL(None, use_errno=True)
    seized = libc.ptrace(PTRACE_SEIZE, t2.pid, None, None) == 0
    if seized:
        rc, out = vt(a, "attach", str(t2.pid), "-o",
                     os.path.join(tmp, "x"))
        check(rc == 1 and f"traced by PID {os.getpid()}" in out,
              f"a process another tracer holds is refused ({out.strip()})")
    t2.kill()
    sl.kill()
    sl.wait()
    # Under the preload.
    env = dict(os.environ, LD_PRELOAD=a.preload,
               VRAMTRACE_OUT=os.path.join(tmp, "pre"),
               LD_LIBRARY_PATH=a.fake_dir)
    pre = subprocess.Popen([a.target, "--threads", "1"], env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True)
    pre.stdout.readline()
    rc, out = vt(a, "attach", str(pre.pid), "-o", os.path.join(tmp, "x"))
    check(rc == 1 and "preload" in out,
          f"a process under the preload is refused ({out.strip()})")
    pre.stdin.write("stop\n")
    pre.stdin.close()
    pre.wait(timeout=30)
    # Usage.
    rc, out = vt(a, "attach", "nope")
    check(rc == 2, "a PID that is no number is a usage error")
    rc, out = vt(a, "attach")
    check(rc == 2, "no PID is a usage error")
    rc, out = vt(a, "attach", "999999999")
    check(rc in (1, 2), f"an impossible PID is refused ({out.strip()})")
    check(not os.path.exists(os.path.join(tmp, "x")),
          "no refusal made a run directory")


def case_control(a, tmp):
    t = Target(a, tmp, ["--threads", "4"])
    run = os.path.join(tmp, "ctl")
    p = subprocess.Popen([a.vramtrace, "attach", str(t.pid), "-o", run],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    ok = poll(lambda: glob.glob(os.path.join(run, "*.ctl")), tries=100,
              delay=0.05)
    check(bool(ok), "the agent's control socket appears")
    time.sleep(0.3)
    rc, out = vt(a, "ctl", run, "status")
    check(rc == 0 and "recording" in out, f"ctl status answers ({out})")
    rc, out = vt(a, "ctl", run, "stop")
    try:
        out2, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out2, _ = p.communicate()
    print(out2)
    check(p.returncode == 0 and "detached" in out2,
          "`vramtrace ctl DIR stop` detaches")
    check(not glob.glob(os.path.join(run, "*.ctl")),
          "the control socket is gone after the detach")
    check_trace(a, glob.glob(os.path.join(run, "*.vtrace")), "ctl stop")
    check(t.alive(), "the process runs on")
    # gdb batch mode as the injector.
    if not any(os.access(os.path.join(d, "gdb"), os.X_OK)
               for d in os.environ.get("PATH", "").split(":")):
        print("skip   gdb is not installed: no gdb injector check")
    else:
        run = os.path.join(tmp, "gdb")
        rc, out = vt(a, "attach", str(t.pid), "-o", run, "--duration",
                     "0.5", "--injector", "gdb", timeout=120)
        print(out)
        check(rc == 0 and "with gdb" in out, "--injector gdb attaches")
        check_trace(a, glob.glob(os.path.join(run, "*.vtrace")), "gdb")
        check(t.alive(), "the process runs on after gdb")
    rc, final = t.stop()
    check(rc == 0, f"the process exits 0 ({rc})")
    # --tree: a server and its two workers, one run.
    t3 = Target(a, tmp, ["--threads", "2", "--spawn", "2"])
    poll(lambda: len(children_with(t3.pid, "libcuda")) == 2, tries=300,
         delay=0.01)
    run = os.path.join(tmp, "tree")
    rc, out = vt(a, "attach", str(t3.pid), "-o", run, "--duration", "0.5",
                 "--tree")
    print(out)
    check(rc == 0 and out.count("attached to PID") == 3,
          "--tree attaches to the process and its two workers")
    files = glob.glob(os.path.join(run, "*.vtrace"))
    check(len(files) == 3, f"three traces in one run ({len(files)})")
    check_trace(a, files, "--tree")
    rc, final = t3.stop()
    check(rc == 0 and "children 2 ok" in t3.output(),
          "the process and its workers exit 0")


def analyze_json(a, run):
    p = subprocess.run([a.vramtrace, "analyze", "--format", "json", run],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    try:
        return json.loads(p.stdout)
    except ValueError:
        print(p.stdout + p.stderr)
        return {}


def phase_end(rep, phase, dev=0):
    """A phase's live bytes at the end of the run on device dev."""
    for d in rep.get("devices", []):
        if d.get("id") == dev:
            return d.get("phases", {}).get(phase, {}).get("live_bytes_end",
                                                          0)
    return None


def proc_state(pid):
    """The state letter of /proc/PID/stat ("" when gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def children_with(pid, lib):
    """The children of PID that have lib mapped."""
    out = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            kids = open(task).read().split()
        except OSError:
            continue
        for k in kids:
            try:
                if lib in open(f"/proc/{k}/maps").read():
                    out.append(int(k))
            except OSError:
                pass
    return out


def attach_until(a, pid, run, during, *extra):
    """attach PID until `vramtrace ctl RUN stop`, calling during() once
    the agent records; the attach command's exit status and output."""
    p = subprocess.Popen([a.vramtrace, "attach", str(pid), "-o", run] +
                         list(extra), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    poll(lambda: glob.glob(os.path.join(run, "*.ctl")), tries=200,
         delay=0.05)
    time.sleep(0.5)  # the snapshot
    during()
    time.sleep(0.3)
    vt(a, "ctl", run, "stop")
    try:
        out, _ = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    print(out)
    return p.returncode, out


def case_snapshot(a, tmp):
    GIB, MIB = 1 << 30, 1 << 20
    # A C program: NVML's count for it is all there is to know.
    t = Target(a, tmp, ["--threads", "2", "--hold-mib", "1024"])
    run = os.path.join(tmp, "c")
    rc, out = attach_until(a, t.pid, run,
                           lambda: (t.send("release", "released"),
                                    t.send("release", "released")))
    check(rc == 0, "attach to a C program holding 1 GiB")
    rep = analyze_json(a, run)
    before = None
    for d in rep.get("devices", []):
        if d.get("id") == 0:
            before = d.get("phases", {}).get("before_attach", {})
    # NVML's count and the table are read a moment apart while two
    # threads allocate: a few KiB either way.
    check(before and abs(before.get("peak_bytes", 0) - GIB) < MIB,
          f"the bucket is the 1 GiB it held ({before})")
    check(before and abs(before.get("peak_bytes", 0) -
                         before.get("live_bytes_end", 0) - 512 * MIB) < 1024,
          f"two frees of what it held (PREFREE) shrink it by 512 MiB "
          f"({before})")
    diag = rep.get("diagnosis", {})
    check(diag.get("verdict") != "other_processes",
          f"nothing is blamed on other processes ({diag.get('verdict')})")
    t.stop()
    # Python with the allocator's history: its segments named.
    t = Target(a, tmp, ["--threads", "2"], python=True)
    run = os.path.join(tmp, "py")
    rc, out = attach_until(a, t.pid, run,
                           lambda: t.send("release", "released"))
    check(rc == 0, "attach to a Python program using the torch stand-in")
    rep = analyze_json(a, run)
    w = None
    for d in rep.get("devices", []):
        if d.get("id") == 0:
            w = d.get("phases", {})
    print(json.dumps(w))
    check(w and w.get("weights", {}).get("live_bytes_end") == GIB,
          "its weights (1 GiB) are named weights from the frames the "
          "allocator kept")
    check(w and w.get("kv_cache", {}).get("peak_bytes") == 2 * GIB,
          "its KV cache (2 GiB) is named kv_cache")
    check(w and w.get("kv_cache", {}).get("live_bytes_end") == 0,
          "and its release leaves the run (the segments' frees)")
    check(w and not w.get("before_attach", {}).get("peak_bytes"),
          "nothing is left unattributed")
    rc, final = t.stop()
    check(rc == 0, f"the Python program exits 0 ({rc})")
    # Without the history: one bucket of its own.
    t = Target(a, tmp, ["--threads", "1", "--no-history"], python=True)
    run = os.path.join(tmp, "nohist")
    rc, out = vt(a, "attach", str(t.pid), "-o", run, "--duration", "1")
    check(rc == 0, "attach without the allocator's history")
    rep = analyze_json(a, run)
    check(phase_end(rep, "before_attach") == 3 * GIB,
          "its 3 GiB of segments are before_attach "
          f"({phase_end(rep, 'before_attach')})")
    t.stop()


def case_serve(a, tmp):
    env = dict(os.environ, LD_LIBRARY_PATH=a.fake_dir, FAKECUDA_MEM="16G")
    for k in list(env):
        if k.startswith("VRAMTRACE_") or k == "LD_PRELOAD":
            env.pop(k)
    log = open(os.path.join(tmp, "serve.out"), "w+")
    srv = subprocess.Popen([sys.executable, a.serve, "--port", "0"],
                           stdout=log, stderr=subprocess.STDOUT, env=env)

    def ready():
        log.flush()
        log.seek(0)
        m = re.search(r"ready (\d+) (\d+)", log.read())
        return m and (int(m.group(1)), int(m.group(2)))
    got = poll(ready, tries=200, delay=0.05)
    check(bool(got), "the example server started without the preload")
    if not got:
        srv.kill()
        return
    port, pid = got
    run = os.path.join(tmp, "serve")
    p = subprocess.Popen([a.vramtrace, "attach", str(pid), "-o", run],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    poll(lambda: glob.glob(os.path.join(run, "*.ctl")), tries=200,
         delay=0.05)
    time.sleep(0.5)

    def post():
        import urllib.request
        try:
            urllib.request.urlopen(urllib.request.Request(
                f"http://127.0.0.1:{port}/v1/completions", data=b"{}"),
                timeout=30).read()
        except Exception:
            pass  # the server dies of the out-of-memory error
    post()
    ths = [threading.Thread(target=post) for _ in range(4)]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    try:
        rc_srv = srv.wait(timeout=30)
    except subprocess.TimeoutExpired:
        srv.kill()
        rc_srv = "running"
    check(rc_srv == 1, f"four requests at once ran it out of memory (exit "
          f"{rc_srv})")
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    print(out)
    check(p.returncode == 0 and "ended while recorded" in out,
          "attach saw the server end and exited 0")
    rep = analyze_json(a, run)
    diag = rep.get("diagnosis", {})
    print(json.dumps(diag, indent=1)[:3000])
    check(diag.get("verdict") == "concurrency",
          f"the verdict is concurrency ({diag.get('verdict')})")
    ladder = {r.get("rung"): r.get("bytes") for r in diag.get("ladder", [])}
    GIB = 1 << 30
    check(ladder.get("weights") == 6 * GIB,
          f"the weights (6 GiB) are on the ladder from the snapshot "
          f"({ladder.get('weights')})")
    check((ladder.get("reserves") or 0) >= 7 * GIB,
          f"so is the KV reserve (7 GiB) ({ladder.get('reserves')})")
    check(not ladder.get("baseline"),
          f"nothing is charged to other processes ({ladder.get('baseline')})")


def case_cycles(a, tmp, python=False):
    t = Target(a, tmp, ["--threads", "4"] if python else
               ["--threads", "8", "--hold-mib", "512"], python=python)
    slow = []
    failed = 0
    t0 = time.monotonic()
    for i in range(a.cycles):
        run = os.path.join(tmp, f"c{i:03d}")
        start = time.monotonic()
        try:
            rc, out = vt(a, "attach", str(t.pid), "-o", run, "--duration",
                         "0.02", timeout=60)
        except subprocess.TimeoutExpired:
            rc, out = "hung", ""
        if rc != 0:
            failed += 1
            print(f"cycle {i}: exit {rc}\n{out}")
            if not t.alive():
                break
        slow.append(time.monotonic() - start)
    print(f"{len(slow)} cycles in {time.monotonic() - t0:.1f}s, the "
          f"slowest {max(slow) if slow else 0:.2f}s")
    check(failed == 0, f"{a.cycles} attach/detach cycles, each exit 0 "
          f"({failed} failed)")
    check(t.alive(), "the process is alive after every cycle")
    check(bool(t.counts()), "and answers")
    files = sorted(glob.glob(os.path.join(tmp, "c*", "*.vtrace")))
    check(len(files) == a.cycles, f"one trace per cycle ({len(files)})")
    allocs, frees, pinned = check_trace(a, files, f"{a.cycles} cycles")
    rc, final = t.stop()
    check(rc == 0 and final, f"the process exits 0 ({rc}, {final})")
    total = sum(int(x) for x in final.split()[1:-1]) if final else 0
    check(0 < allocs <= total, f"the recorded allocations ({allocs}) are "
          f"among the {total} the threads counted")
    if python:
        rep = analyze_json(a, os.path.dirname(files[-1])) if files else {}
        check(phase_end(rep, "weights") == 1 << 30,
              "the last cycle's snapshot still names the weights")


def main():
    ap = options("--vramtrace", "--target", "--py-target", "--serve",
                 "--dump", "--fake-dir", "--odd-dir", "--preload",
                 "--tmp-root", "--case")
    ap.add_argument("--cycles", type=int, default=200)
    a = ap.parse_args()
    if not ptrace_allowed():
        print("skip: ptrace is not permitted here (or not x86-64)")
        return 77
    cases = {"basic": case_basic, "refuse": case_refuse,
             "control": case_control, "cycles": case_cycles,
             "pycycles": lambda a, tmp: case_cycles(a, tmp, python=True),
             "snapshot": case_snapshot, "serve": case_serve}
    return scratch(a, f"attach-{a.case}-", lambda tmp: cases[a.case](a, tmp))


if __name__ == "__main__":
    sys.exit(main())
