#!/usr/bin/env python3
"""run_all.py — every performance figure of vramtrace, side by side with
heaptrack, measured in one run on this machine, printed as one table:

    figure | vramtrace | heaptrack | target | verdict

1. Cost added per alloc+free pair (CPU ns of the calling threads, summed
   over threads, per pair; bench_alloc.c says why CPU and not wall time),
   at 1 and 8 threads, from one call site ~40 frames deep: vramtrace in
   standby, recording with stacks=none and stacks=native on the fake
   CUDA driver (FAKECUDA_BENCH=1: no lock, no table), and with
   stacks=native,python from ~20 Python frames (bench_python.py);
   heaptrack on malloc/free pairs made the same way (bench_alloc --api
   malloc), the same pair count, depth and threads. Each bare baseline is
   a row of its own. Also the whole process tree's CPU per pair: the
   preload's writer thread for vramtrace, heaptrack_interpret and zstd
   for heaptrack. In standby, pairs of 2 MiB (an allocator segment)
   keep their call stack (VRAMTRACE_STANDBY_STACK_KIB): their added cost
   is reported beside the small pairs'. With --io-bench, the cost of the
   preload's read/write hooks on a regular file and a pipe (bench_io.c:
   write+read pairs, bare and preloaded).
2. Bytes per event of the compressed trace of those same runs (events =
   2 x pairs), vramtrace's *.vtrace against heaptrack's .zst.
3. The mixed workload (bench_alloc --mixed, bench_python.py --mixed: a
   server whose allocator calls the driver for every tensor, as PyTorch
   with cudaMallocAsync: 64 call paths, sizes 4 KiB to 4 MiB, each block
   freed 256 allocations later, the fake driver reusing addresses as a
   pool does): added CPU per pair and bytes per event at 1 and 8 threads
   and from Python, vramtrace beside heaptrack on the same workload
   (malloc/free); the analyzer's events/s and peak RSS on its trace
   beside heaptrack_print's on heaptrack's. The same rows of cost and
   size for two more mixed workloads (--mix wide: each size drawn from
   1,024 values, so a call path rarely repeats one; --mix serve: a
   transformer's forward passes, the same tensors per layer, sizes
   following a batch and sequence length that change every step). Then
   the repeating, mixed and serving workloads paced to 10,000 events/s,
   as a server under load makes them: bytes per event, trace MB per hour
   and added CPU (whole process tree) at that rate.
4. The analyzer: `vramtrace analyze --format json` on two traces of
   --events events, pinned to one core: a server-like one written by
   gen_trace (random addresses over 4096 slots, 300 stacks, 20 phases, two
   devices), and the trace of the program heaptrack's trace comes from
   (bench_alloc's pairs, native stacks, VRAMTRACE_FOLD=0 so every event is
   in the file); against heaptrack_print on a heaptrack trace of the same
   event count, same pinning: events/s and peak RSS; and peak RSS at
   --events / 5 against --events (memory that does not grow with events
   gives ~1).
5. An engine's log alone: `vramtrace analyze --log` on a vLLM log of
   1 GiB (--quick: 128 MiB; run_log_bench.py), pinned: wall and CPU
   seconds per GiB, peak RSS, and whether the verdict is still right.

Medians of --runs runs (default 3), the configurations interleaved round
by round so that a change in load falls on all alike (the analyzers too:
vramtrace's two traces and heaptrack_print in turn); an analyzer run
that takes over 20 s is run once. Ratios inside one run are what to
trust on a shared, noisy machine. heaptrack missing: 'n/a' in its column.

    run_all.py --bench EXE --python-bench PY --preload LIB --fake-dir DIR
               --gen EXE --vramtrace EXE [--io-bench EXE] [--pairs N]
               [--python-pairs N] [--events N] [--mixed-events N]
               [--paced-seconds S] [--runs N] [--quick] [--json FILE]

python3 stdlib only. Exit 0 when the table was printed (verdicts are
data, not failures), 2 on usage errors.
"""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DEPTH = 40
LARGE = 2 << 20  # bytes of a "large" pair: an allocator segment
SLOW_ANALYZE_S = 20.0  # an analyzer run longer than this is not repeated
RESULT_RE = re.compile(r"^(\d+) (\d+) (\d+) ([\d.]+) ([\d.]+)$", re.M)
PY_RESULT_RE = re.compile(r"^(\d+) ([\d.]+) ([\d.]+)$", re.M)


class Failed(Exception):
    pass


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env=None, limit_as=None):
    """Runs cmd; returns (stdout, stderr, CPU seconds of the whole process
    tree that was waited for). Raises Failed on a non-zero exit."""
    def cap():
        if limit_as:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))
    c0 = children_cpu()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace",
                       preexec_fn=cap if limit_as else None)
    cpu = children_cpu() - c0
    if p.returncode != 0:
        # The program's last words, above /usr/bin/time -v's report.
        lines = p.stderr.split("\tCommand being timed")[0].strip()
        tail = (lines.splitlines() or p.stdout.strip().splitlines() or
                ["(no output)"])[-1]
        prog = next((os.path.basename(c) for c in cmd
                     if c not in ("taskset", "-c", "0", "-v") and
                     not c.endswith("/time")), cmd[0])
        raise Failed(f"{prog} exit {p.returncode}: {tail[:160]}")
    return p.stdout, p.stderr, cpu


def dir_bytes(pattern):
    return sum(os.path.getsize(f) for f in glob.glob(pattern))


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


class Bench:
    def __init__(self, a):
        self.a = a
        self.tmp = tempfile.mkdtemp(prefix="vrt-bench-all-")
        self.notes = []
        self.n = 0
        self.heaptrack = shutil.which("heaptrack") if not a.no_heaptrack \
            else None
        self.heaptrack_print = shutil.which("heaptrack_print") \
            if self.heaptrack else None
        self.timev = "/usr/bin/time" if os.access("/usr/bin/time",
                                                  os.X_OK) else None
        self.pin = ["taskset", "-c", "0"] if shutil.which("taskset") \
            else []
        base = dict(os.environ)
        for k in list(base):
            if k.startswith("VRAMTRACE_") or k in ("LD_PRELOAD",):
                del base[k]
        base["LD_LIBRARY_PATH"] = os.path.abspath(a.fake_dir) + \
            (":" + base["LD_LIBRARY_PATH"] if base.get("LD_LIBRARY_PATH")
             else "")
        base["FAKECUDA_MEM"] = "80G"
        base["FAKECUDA_BENCH"] = "1"
        self.base = base

    def fresh(self, tag):
        self.n += 1
        return os.path.join(self.tmp, f"{self.n:03d}-{tag}")

    def note(self, msg):
        if msg not in self.notes:
            self.notes.append(msg)

    # ---- one measured program run ------------------------------------

    def once(self, prog, tool, stacks, threads, pairs, sizes=8,
             base=4096, mixed=False, rate=None):
        """One run. prog: 'c' (bench_alloc) or 'py' (bench_python);
        tool: None (bare), 'vramtrace' or 'heaptrack'; base: the first
        size of bench_alloc's pairs; mixed: a mixed workload (True or
        'fixed', 'wide', 'serve': bench_alloc's --mix); rate:
        pairs a second per thread (bench_alloc only). Returns a dict: cpu
        (calling threads, ns/pair), proc (process tree CPU ns/pair), bytes
        (trace size), events, path."""
        per = max(1, pairs // threads)
        mix = mixed if isinstance(mixed, str) else "fixed"
        api = "malloc" if tool == "heaptrack" or stacks == "malloc" \
            else "cuda"
        if prog == "c":
            cmd = [self.a.bench, "--api", api, "--threads", str(threads),
                   "--pairs", str(per), "--depth", str(DEPTH)]
            cmd += (["--mix", mix] if mixed
                    else ["--sizes", str(sizes), "--base", str(base)])
            if rate:
                cmd += ["--rate", str(rate)]
        else:
            cmd = [sys.executable, self.a.python_bench, str(per),
                   "--threads", str(threads), "--api", api]
            if mixed:
                cmd += ["--mix", mix]
        env = dict(self.base)
        if mixed:
            env["FAKECUDA_BENCH"] = "reuse"  # addresses come back
        out = None
        if tool == "vramtrace":
            out = self.fresh(f"vrt-{prog}-{threads}")
            env["LD_PRELOAD"] = os.path.abspath(self.a.preload)
            env["VRAMTRACE_OUT"] = out
            if stacks == "standby":
                env["VRAMTRACE_START"] = "standby"
            else:
                env["VRAMTRACE_STACKS"] = stacks
        elif tool == "heaptrack":
            out = self.fresh(f"ht-{prog}-{threads}")
            cmd = [self.heaptrack, "-o", out] + cmd
        stdout, stderr, tree = run(cmd, env)
        if "cannot be preloaded" in stderr:
            raise Failed(f"the preload did not load: "
                         f"{stderr.strip().splitlines()[0][:160]}")
        m = (RESULT_RE if prog == "c" else PY_RESULT_RE).findall(stdout)
        if not m:
            raise Failed(f"no result line from {' '.join(cmd[:3])}")
        cpu = float(m[-1][-1])
        total = per * threads
        for line in stderr.splitlines():
            if line.startswith("vramtrace: warning"):
                self.note(line.strip())
        r = {"cpu": cpu, "proc": tree * 1e9 / total, "events": 2 * total,
             "bytes": None, "path": out}
        if tool == "vramtrace" and stacks != "standby":
            r["bytes"] = dir_bytes(os.path.join(out, "*.vtrace"))
        elif tool == "heaptrack":
            r["bytes"] = dir_bytes(out + ".*")
        if r["bytes"] == 0:
            raise Failed(f"{tool} wrote no trace")
        return r

    def measure(self, configs, runs=None):
        """Runs every configuration runs times, round-robin (one run of
        each, then the next round), so that a change in the machine's load
        falls on all of them alike. configs: {key: (prog, tool, stacks,
        threads, pairs, sizes[, {once()'s keywords: base, mixed,
        rate}])}. Returns {key: median result or None}; a configuration
        that fails once is dropped, with a note."""
        got = {k: [] for k in configs}
        dead = set()
        for _ in range(runs or self.a.runs):
            for k, c in configs.items():
                if k in dead:
                    continue
                try:
                    kw = c[-1] if isinstance(c[-1], dict) else {}
                    got[k].append(self.once(*c[:6], **kw))
                except Failed as e:
                    self.note(f"{c[1] or 'bare'} {c[2] or ''} {c[3]} thr: "
                              f"{e}")
                    dead.add(k)
        out = {}
        for k, rs in got.items():
            if k in dead or not rs:
                out[k] = None
                continue
            keep = dict(rs[0])
            for f in ("cpu", "proc", "bytes"):
                keep[f] = median(r[f] for r in rs)
            keep["paths"] = [r["path"] for r in rs]
            out[k] = keep
        return out

    def io(self, preload):
        """bench_io once, bare or under the preload: {'file': ns,
        'pipe': ns} per write+read pair."""
        env = dict(self.base)
        out = self.fresh("io")
        os.makedirs(out, exist_ok=True)
        if preload:
            env["LD_PRELOAD"] = os.path.abspath(self.a.preload)
            env["VRAMTRACE_OUT"] = os.path.join(out, "run")
        stdout, _, _ = run([self.a.io_bench, "--dir", out, "--calls",
                            str(self.a.io_calls)], env)
        got = dict(line.split() for line in stdout.splitlines()
                   if len(line.split()) == 2)
        return {k: float(v) for k, v in got.items()}

    def events_in(self, run_dir):
        """(allocations, frees, dropped events) the analyzer counts on the
        devices of a run directory, or None when it cannot say. Counted
        as allocations and frees, not records, so that folded pairs count
        as what they stand for."""
        try:
            stdout, _, _ = run([self.a.vramtrace, "analyze", "--format",
                                "json", run_dir])
            j = json.loads(stdout)
            allocs = frees = 0
            for d in j["devices"]:
                for fam in d["families"].values():
                    allocs += fam["allocs"]
                    frees += fam["frees"]
            dropped = sum(p.get("events_dropped", 0)
                          for p in j["run"].get("processes", []))
            return allocs, frees, dropped
        except (Failed, ValueError, KeyError, TypeError,
                AttributeError) as e:
            self.note(f"could not count the events of a trace: {e}")
            return None

    def heaptrack_allocs(self, path):
        """Allocations a heaptrack trace holds ('+' lines), or None."""
        try:
            p = subprocess.run(["zstd", "-dc", path],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
        except OSError:
            return None
        if p.returncode:
            return None
        return p.stdout.count(b"\n+ ") + p.stdout.startswith(b"+ ")

    # ---- the analyzers -----------------------------------------------

    def heaptrack_trace(self, out, args, env, pairs, cmds, info, what):
        """heaptrack records bench_alloc --api malloc ARGS making pairs
        pairs into out.*; heaptrack_print of it goes into cmds and info
        under 'ht' (a failure is a note)."""
        if not self.heaptrack_print:
            return
        try:
            run([self.heaptrack, "-o", out, self.a.bench, "--api", "malloc",
                 "--pairs", str(pairs), "--depth", str(DEPTH)] + args, env)
            trace = glob.glob(out + ".*")
            if not trace:
                raise Failed("heaptrack wrote no trace")
            cmds["ht"] = [self.heaptrack_print, "-f", trace[0]]
            info["ht"] = {"events": 2 * pairs,
                          "bytes": os.path.getsize(trace[0])}
        except Failed as e:
            self.note(f"heaptrack_print, {what}: {e}")

    def timed_rounds(self, cmds, what=""):
        """Runs each command of {key: cmd} --runs times, in turn round by
        round; a run over SLOW_ANALYZE_S is not repeated. Returns {key:
        (median seconds, max peak RSS KiB, runs)}."""
        runs = {k: [] for k in cmds}
        for rnd in range(self.a.runs):
            for k, cmd in cmds.items():
                if k not in runs or (rnd and runs[k] and
                                     runs[k][0][0] >= SLOW_ANALYZE_S):
                    continue
                try:
                    runs[k].append(self.timed(cmd, self.a.mem_limit))
                except Failed as e:
                    self.note(f"{cmd[0]}{what}: {e}")
                    del runs[k]
        return {k: (median(r[0] for r in rs),
                    max((r[1] for r in rs if r[1] is not None),
                        default=None), len(rs))
                for k, rs in runs.items() if rs}

    def mixed_analyzers(self, events):
        """vramtrace analyze on the trace of bench_alloc --mixed making
        events / 2 pairs (native stacks), and heaptrack_print on
        heaptrack's trace of the same workload through malloc, timed in
        turn round by round. Returns {'v': ..., 'ht': ...} as
        analyzers() does."""
        pairs = max(1, events // 2)
        v, ht = self.fresh("mix-an"), self.fresh("ht-mix-an")
        cmds, info, got = {}, {}, {}
        env = dict(self.base, FAKECUDA_BENCH="reuse")
        try:
            try:
                run([self.a.bench, "--api", "cuda", "--mixed", "--pairs",
                     str(pairs), "--depth", str(DEPTH)],
                    dict(env, LD_PRELOAD=os.path.abspath(self.a.preload),
                         VRAMTRACE_OUT=v, VRAMTRACE_STACKS="native"))
                cmds["v"] = [self.a.vramtrace, "analyze", "--format",
                             "json", v]
                info["v"] = {"events": 2 * pairs, "bytes": dir_bytes(
                    os.path.join(v, "*.vtrace"))}
            except Failed as e:
                self.note(f"vramtrace analyze, mixed trace: {e}")
            self.heaptrack_trace(ht, ["--mixed"], env, pairs, cmds, info,
                                 "mixed trace")
            for k, (secs, rss, n) in self.timed_rounds(
                    cmds, f" on the mixed trace, {events:,} events").items():
                got[k] = dict(info[k], secs=secs, rss=rss, runs=n)
        finally:
            shutil.rmtree(v, ignore_errors=True)
            for f in glob.glob(ht + "*"):
                os.unlink(f)
        return {k: got.get(k) for k in ("v", "ht")}

    def timed(self, cmd, limit_as=None):
        """(seconds, peak RSS KiB or None) of one run, pinned."""
        full = self.pin + ([self.timev, "-v"] if self.timev else []) + cmd
        t0 = time.monotonic()
        _, stderr, _ = run(full, limit_as=limit_as)
        secs = time.monotonic() - t0
        m = re.search(r"Maximum resident set size \(kbytes\): (\d+)",
                      stderr)
        return secs, int(m.group(1)) if m else None

    def analyzers(self, events):
        """The three analyzer runs on traces of `events` events, timed
        round by round (one run of each, then the next round) so that a
        change in the machine's speed falls on all alike: 'gen' (vramtrace
        analyze, gen_trace's server-like trace), 'same' (vramtrace
        analyze, the trace of bench_alloc: the program heaptrack's trace
        comes from, native stacks, VRAMTRACE_FOLD=0 so that every event is
        in the file) and 'ht' (heaptrack_print on heaptrack's trace of
        bench_alloc --api malloc). Returns {key: {secs (median), rss (KiB,
        max), runs, events, bytes} or None}; a run over SLOW_ANALYZE_S is
        not repeated."""
        cmds, info, got = {}, {}, {}
        gen, same, ht = self.fresh("gen"), self.fresh("sp"), \
            self.fresh("ht-gen")
        pairs = events // 2
        try:
            try:
                stdout, _, _ = run([self.a.gen, "--out", gen, "--events",
                                    str(events)])
                g = stdout.split()
                f = dict(zip(g[0::2], g[1::2]))
                cmds["gen"] = [self.a.vramtrace, "analyze", "--format",
                               "json", gen]
                info["gen"] = {"events": int(f["events"]),
                               "bytes": int(f["bytes"])}
            except (Failed, KeyError, ValueError) as e:
                self.note(f"vramtrace analyze, {events:,} events: {e}")
            try:
                env = dict(self.base,
                           LD_PRELOAD=os.path.abspath(self.a.preload),
                           VRAMTRACE_OUT=same, VRAMTRACE_FOLD="0",
                           VRAMTRACE_STACKS="native")
                run([self.a.bench, "--api", "cuda", "--pairs", str(pairs),
                     "--depth", str(DEPTH)], env)
                cmds["same"] = [self.a.vramtrace, "analyze", "--format",
                                "json", same]
                info["same"] = {"events": 2 * pairs, "bytes": dir_bytes(
                    os.path.join(same, "*.vtrace"))}
            except Failed as e:
                self.note(f"vramtrace analyze, bench_alloc trace, "
                          f"{events:,} events: {e}")
            self.heaptrack_trace(ht, [], self.base, pairs, cmds, info,
                                 f"{events:,} events")
            for k, (secs, rss, n) in self.timed_rounds(
                    cmds, f" on {events:,} events").items():
                got[k] = dict(info[k], secs=secs, rss=rss, runs=n)
        finally:
            shutil.rmtree(gen, ignore_errors=True)
            shutil.rmtree(same, ignore_errors=True)
            for f in glob.glob(ht + "*"):
                os.unlink(f)
        return {k: got.get(k) for k in ("gen", "same", "ht")}


# ---- the table ---------------------------------------------------------

def fmt(v, unit="", nd=0):
    if v is None:
        return "n/a"
    if isinstance(v, str):
        return v
    if unit == "/s":
        return f"{v / 1e6:.2f} M/s"
    return f"{v:,.{nd}f}{unit}"


def rate(r):
    """Events/s of an analyzer run (None when it failed)."""
    return r and r["events"] / r["secs"]


def rss(r):
    """Peak RSS of an analyzer run, MiB."""
    return r and r["rss"] and r["rss"] / 1024


def ratio(x, y):
    return rss(x) / rss(y) if rss(x) and rss(y) else None


def mixed_rows(a, b, rows, size_rows, fig, mix, label, prefix, what):
    """One mixed workload: added CPU per pair (calling threads and whole
    process tree) at 1 and 8 threads and from Python, and bytes per event
    beside heaptrack's (into size_rows)."""
    rows.append(f"{label} workload, added CPU ns per pair, calling "
                f"threads ({what}; vramtrace: cuMemAllocAsync/FreeAsync, "
                f"the fake driver reusing addresses; heaptrack: "
                f"malloc/free)")
    ht_c1 = None  # heaptrack's bytes/event on the C workload, 1 thread
    for prog, th in (("c", 1), ("c", 8), ("py", 1)):
        P = a.pairs if prog == "c" else a.python_pairs
        where = f"{th} thr" if prog == "c" else "from Python"
        stacks = "native" if prog == "c" else "native,python"
        print(f"measuring the {label} workload, {where}...",
              file=sys.stderr, flush=True)
        mx = {"mixed": mix}
        cf = {"bare": (prog, None, None, th, P, 8, mx),
              "v": (prog, "vramtrace", stacks, th, P, 8, mx)}
        if b.heaptrack:
            cf.update(ht_bare=(prog, None, "malloc", th, P, 8, mx),
                      ht=(prog, "heaptrack", None, th, P, 8, mx))
        m = b.measure(cf)
        bare, r, ht_bare, ht = m["bare"], m["v"], m.get("ht_bare"), \
            m.get("ht")
        add, ht_add = added(r, bare), added(ht, ht_bare)
        key = f"{prefix}_{prog}_{th}"
        fig[f"{key}_bare"] = bare and bare["cpu"]
        fig[f"{key}_added"] = add
        fig[f"{key}_heaptrack_added"] = ht_add
        fig[f"{key}_proc_added"] = added(r, bare, "proc")
        fig[f"{key}_heaptrack_proc_added"] = added(ht, ht_bare, "proc")
        rows.append((f"bare pair cost, {label}, {where}",
                     fmt(bare and bare["cpu"], " ns", 1),
                     fmt(ht_bare and ht_bare["cpu"], " ns", 1), "—", "—"))
        rows.append((f"stacks={stacks}, {label}, {where}",
                     fmt(add, " ns", 1), fmt(ht_add, " ns", 1), "—", "—"))
        rows.append((f"whole process tree, {label}, {where}",
                     fmt(added(r, bare, "proc"), " ns", 0),
                     fmt(added(ht, ht_bare, "proc"), " ns", 0), "—", "—"))
        bpe = hbpe = None
        mark = ""
        if r is not None and r["bytes"] is not None:
            bpe = r["bytes"] / r["events"]
            counted = b.events_in(r["paths"][0])
            pairs = r["events"] // 2
            if counted and (counted[0] != pairs or counted[1] != pairs or
                            counted[2]):
                b.note(f"{label} {where}: the analyzer counts "
                       f"{counted[0]:,} allocations, {counted[1]:,} frees "
                       f"({counted[2]:,} events dropped) of {pairs:,} "
                       f"pairs made")
        if ht is not None and ht["bytes"] is not None:
            made = ht["events"] // 2
            got = b.heaptrack_allocs(ht["paths"][0] + ".zst") if \
                os.path.exists(ht["paths"][0] + ".zst") else made
            if got is not None and got < made * 0.9:
                b.note(f"heaptrack, {label} {where}: its trace holds "
                       f"{got:,} of the {made:,} allocations made (it did "
                       f"not see them), so its size is not comparable; "
                       f"the target uses its 1-thread figure from C "
                       f"(marked C)")
            else:
                hbpe = ht["bytes"] / ht["events"]
        if prog == "c" and th == 1:
            ht_c1 = hbpe
        if hbpe is None and prog == "py" and ht_c1 is not None:
            hbpe, mark = ht_c1, " C"
        fig[f"{key}_bytes_per_event"] = bpe
        fig[f"{key}_heaptrack_bytes_per_event"] = hbpe
        size_rows.append((f"{label}, {where}", fmt(bpe, "", 4),
                          fmt(hbpe, "", 4) + mark, "<= heaptrack",
                          verdict(None if bpe is None or hbpe is None
                                  else bpe <= hbpe)))


# The mixed workloads: (name for bench_alloc --mix, label in the rows,
# prefix of their figures, what the section's heading says of it).
MIXES = (
    ("fixed", "mixed", "mixed",
     "64 call paths, a size each from 4 KiB to 4 MiB, each block freed "
     "256 allocations later"),
    ("wide", "wide sizes", "mixed_wide",
     "the same paths and ring, each size drawn from 1,024 values, 4 KiB "
     "to 4 MiB"),
    ("serve", "serving shapes", "mixed_serve",
     "a Llama-3-8B's forward passes, 32 layers, sizes following a batch "
     "and sequence length that change every step"),
)


def mixed_section(a, b, rows, fig):
    """The mixed workloads' rows: cost and size of each, the analyzer on
    the first one's trace, and the repeating, mixed and serving workloads
    paced to 10,000 events/s."""
    size_rows = []
    for mix, label, prefix, what in MIXES:
        mixed_rows(a, b, rows, size_rows, fig, mix, label, prefix, what)
    rows.append(f"mixed workloads, compressed trace, bytes per event "
                f"({2 * a.pairs:,} events; {2 * a.python_pairs:,} from "
                f"Python)")
    rows += size_rows

    # The analyzer on the mixed workload's trace, at two sizes.
    if not a.no_analyzer:
        rows.append("mixed workload, analyzer pinned to one core: "
                    "vramtrace analyze --format json vs heaptrack_print")
        small = max(2, a.mixed_events // 5)
        print(f"analyzer, mixed: {a.mixed_events:,} events...",
              file=sys.stderr, flush=True)
        big = b.mixed_analyzers(a.mixed_events)
        print(f"analyzer, mixed: {small:,} events...", file=sys.stderr,
              flush=True)
        sm = b.mixed_analyzers(small)

        ev, hev = rate(big["v"]), rate(big["ht"])
        fig.update(mixed_analyze_events_per_s=ev,
                   mixed_heaptrack_print_events_per_s=hev,
                   mixed_analyze_rss_mib=rss(big["v"]),
                   mixed_heaptrack_print_rss_mib=rss(big["ht"]),
                   mixed_analyze_rss_ratio=ratio(big["v"], sm["v"]),
                   mixed_heaptrack_print_rss_ratio=ratio(big["ht"],
                                                         sm["ht"]))
        n = f"{2 * max(1, a.mixed_events // 2):,}"
        rows.append((f"events/s, mixed, {n} events", fmt(ev, "/s"),
                     fmt(hev, "/s"), ">= 2 x heaptrack_print",
                     verdict(None if ev is None or hev is None
                             else ev >= 2 * hev)))
        rows.append((f"peak RSS, mixed, {n} events",
                     fmt(rss(big["v"]), " MiB", 0),
                     fmt(rss(big["ht"]), " MiB", 0), "—", "—"))
        rt = ratio(big["v"], sm["v"])
        rows.append((f"peak RSS ratio, mixed, {n} / "
                     f"{2 * max(1, small // 2):,} events", fmt(rt, "", 2),
                     fmt(ratio(big["ht"], sm["ht"]), "", 2),
                     "<= 1.2 (~1)",
                     verdict(None if rt is None else rt <= 1.2)))

    # Both workloads at a server's rate.
    ev_rate = 10000
    pairs = max(16, int(ev_rate / 2 * a.paced_seconds))
    rows.append(f"at {ev_rate:,} events/s (paced, 1 thread, native "
                f"stacks, {a.paced_seconds:g} s each): what a server "
                f"under load pays")
    for name, mixed, key in (("repeating", False, "paced_repeating"),
                             ("mixed", True, "paced_mixed"),
                             ("serving shapes", "serve", "paced_serve")):
        print(f"measuring {name} at {ev_rate:,} events/s...",
              file=sys.stderr, flush=True)
        r2 = ev_rate // 2
        kw = {"mixed": mixed, "rate": r2}
        cf = {"bare": ("c", None, None, 1, pairs, 8, kw),
              "v": ("c", "vramtrace", "native", 1, pairs, 8, kw)}
        if b.heaptrack:
            cf.update(ht_bare=("c", None, "malloc", 1, pairs, 8, kw),
                      ht=("c", "heaptrack", None, 1, pairs, 8, kw))
        m = b.measure(cf, runs=1)
        r, ht = m["v"], m.get("ht")
        bpe = r and r["bytes"] is not None and r["bytes"] / r["events"]
        hbpe = ht and ht["bytes"] is not None and ht["bytes"] / ht["events"]
        mbh = bpe and bpe * ev_rate * 3600 / 1e6
        hmbh = hbpe and hbpe * ev_rate * 3600 / 1e6
        # Added CPU of the whole process tree per pair, times pairs/s.
        cpu = added(r, m["bare"], "proc")
        hcpu = added(ht, m.get("ht_bare"), "proc")
        core = cpu is not None and cpu * r2 / 1e9 * 100
        hcore = hcpu is not None and hcpu * r2 / 1e9 * 100
        fig.update({f"{key}_bytes_per_event": bpe or None,
                    f"{key}_heaptrack_bytes_per_event": hbpe or None,
                    f"{key}_mb_per_hour": mbh or None,
                    f"{key}_heaptrack_mb_per_hour": hmbh or None,
                    f"{key}_core_percent": core if core is not False
                    else None,
                    f"{key}_heaptrack_core_percent": hcore
                    if hcore is not False else None})
        rows.append((f"{name}: bytes per event", fmt(bpe or None, "", 3),
                     fmt(hbpe or None, "", 3), "—", "—"))
        rows.append((f"{name}: trace MB per hour", fmt(mbh or None, "", 0),
                     fmt(hmbh or None, "", 0), "—", "—"))
        rows.append((f"{name}: added CPU, % of one core",
                     fmt(core if core is not False else None, " %", 2),
                     fmt(hcore if hcore is not False else None, " %", 2),
                     "—", "—"))


def verdict(ok):
    if ok is None:
        return "—"
    return "met" if ok else "NOT met"


def added(r, bare, key="cpu"):
    if r is None or bare is None or r[key] is None or bare[key] is None:
        return None
    return r[key] - bare[key]


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = "?"
    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        pass
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({model}), Linux "
            f"{platform.release()}, load average {load}")


def log_section(a, rows, fig):
    """`vramtrace analyze --log` on a server's log of 1 GiB (--quick:
    128 MiB), pinned: wall and CPU time, peak RSS, the verdict."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import run_log_bench
    mib = 128 if a.quick else 1024
    print(f"engine log: {mib} MiB...", file=sys.stderr, flush=True)
    r = run_log_bench.measure(a.vramtrace, mib, a.runs)
    per_gib = r["secs"] * 1024 / mib
    fig.update(log_s_per_gib=per_gib, log_rss_mib=r["rss_mib"],
               log_right=r["right"])
    rows.append(f"an engine's log alone: vramtrace analyze --log (vLLM "
                f"log of {mib} MiB, {r['lines']:,} lines), pinned to one "
                f"core")
    rows.append((f"wall s per GiB{' (from 128 MiB)' if mib != 1024 else ''}"
                 f", verdict {'right' if r['right'] else 'WRONG'}",
                 fmt(per_gib, " s", 2), "n/a", "<= 10 s",
                 verdict(r["right"] and per_gib <= run_log_bench.TARGET_S)))
    if r["cpu_s"] is not None:
        rows.append(("CPU s per GiB (user + system)",
                     fmt(r["cpu_s"] * 1024 / mib, " s", 2), "n/a", "—",
                     "—"))
    rows.append(("peak RSS", fmt(r["rss_mib"], " MiB", 1), "n/a",
                 "<= 64 MiB",
                 verdict(r["rss_mib"] <= run_log_bench.TARGET_RSS_MIB)))


def main():
    ap = argparse.ArgumentParser(
        description="vramtrace vs heaptrack: one table of every figure")
    for o in ("--bench", "--python-bench", "--preload", "--fake-dir",
              "--gen", "--vramtrace"):
        ap.add_argument(o, required=True)
    ap.add_argument("--io-bench", default=None,
                    help="bench_io (read/write on a file and a pipe); "
                    "its rows are left out without it")
    ap.add_argument("--pairs", type=int, default=None,
                    help="alloc+free pairs per configuration, all threads "
                    "together (default 1000000; --quick 200000)")
    ap.add_argument("--python-pairs", type=int, default=None,
                    help="the same from Python (default 100000; --quick "
                    "20000)")
    ap.add_argument("--events", type=int, default=None,
                    help="events of the analyzer's trace (default "
                    "50000000; --quick 5000000); the memory row also "
                    "runs one fifth of it")
    ap.add_argument("--mixed-events", type=int, default=None,
                    help="events of the mixed workload's trace that the "
                    "analyzers read (default 10000000; --quick 2000000); "
                    "the memory row also runs one fifth of it")
    ap.add_argument("--paced-seconds", type=float, default=None,
                    help="length of each run paced to 10,000 events/s "
                    "(default 10; --quick 3)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true",
                    help="smaller counts, for a fast look")
    ap.add_argument("--no-heaptrack", action="store_true")
    ap.add_argument("--no-analyzer", action="store_true",
                    help="skip the analyzer rows")
    ap.add_argument("--mem-limit", type=float, default=16,
                    help="address-space cap of one analyzer run, GiB "
                    "(default 16): a run over it is reported as failed")
    ap.add_argument("--json", help="also write every figure to FILE")
    a = ap.parse_args()
    a.pairs = a.pairs or (200_000 if a.quick else 1_000_000)
    a.python_pairs = a.python_pairs or (20_000 if a.quick else 100_000)
    a.events = a.events or (5_000_000 if a.quick else 50_000_000)
    a.io_calls = 100_000 if a.quick else 500_000
    a.mixed_events = a.mixed_events or (2_000_000 if a.quick
                                        else 10_000_000)
    a.paced_seconds = a.paced_seconds or (3 if a.quick else 10)
    a.mem_limit = int(a.mem_limit * 2**30)
    if a.pairs < 8 or a.python_pairs < 8 or a.events < 10 or \
            a.mixed_events < 10 or a.paced_seconds <= 0 or a.runs < 1:
        ap.error("counts must be positive")

    for f in (a.bench, a.python_bench, a.preload, a.gen, a.vramtrace):
        if not os.path.exists(f):
            ap.error(f"{f}: no such file (build first)")
    b = Bench(a)
    t_start = time.monotonic()
    rows = []  # (figure, vramtrace, heaptrack, target, verdict) or str
    fig = {}
    try:
        now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        print(f"vramtrace performance, {now}", flush=True)
        print(machine())
        print(f"heaptrack: {b.heaptrack or 'not installed (n/a)'}; "
              f"pinning: {'taskset -c 0' if b.pin else 'none'}; "
              f"medians of {a.runs}")
        print(f"pairs: {a.pairs:,} per configuration ({a.python_pairs:,} "
              f"from Python), stack depth ~{DEPTH}, one call site; "
              f"analyzer trace: {a.events:,} events", flush=True)

        # ---- 1. cost per pair ----------------------------------------
        rows.append("added CPU ns per alloc+free pair, calling threads "
                    "(bare = no profiler; vramtrace: cuMemAlloc/Free on "
                    "the fake driver, heaptrack: malloc/free)")
        proc_rows = []
        size_rows = []
        for th in (1, 8):
            print(f"measuring {th} thread(s)...", file=sys.stderr,
                  flush=True)
            P, Q = a.pairs, a.python_pairs
            L = max(8, P // 10)  # large pairs: fewer, each unwinds
            cf = {"bare": ("c", None, None, th, P, 8),
                  "standby": ("c", "vramtrace", "standby", th, P, 8),
                  "bare_large": ("c", None, None, th, L, 8,
                                 {"base": LARGE}),
                  "standby_large": ("c", "vramtrace", "standby", th, L, 8,
                                    {"base": LARGE}),
                  "none": ("c", "vramtrace", "none", th, P, 8),
                  "native": ("c", "vramtrace", "native", th, P, 8),
                  "py_bare": ("py", None, None, th, Q, 8),
                  "py": ("py", "vramtrace", "native,python", th, Q, 8)}
            if b.heaptrack:
                cf.update(ht_bare=("c", None, "malloc", th, P, 8),
                          ht=("c", "heaptrack", None, th, P, 8),
                          pht_bare=("py", None, "malloc", th, Q, 8),
                          pht=("py", "heaptrack", None, th, Q, 8))
            m = b.measure(cf)
            bare, ht_bare, ht = m["bare"], m.get("ht_bare"), m.get("ht")
            ht_add = added(ht, ht_bare)
            ht_proc = added(ht, ht_bare, "proc")
            rows.append((f"bare pair cost, {th} thr",
                         fmt(bare and bare["cpu"], " ns", 1),
                         fmt(ht_bare and ht_bare["cpu"], " ns", 1),
                         "—", "—"))
            fig[f"bare_{th}"] = bare and bare["cpu"]
            fig[f"heaptrack_bare_{th}"] = ht_bare and ht_bare["cpu"]
            fig[f"heaptrack_added_{th}"] = ht_add
            for name, stacks, limit in (("standby", "standby", 20),
                                        ("stacks=none", "none", 100),
                                        ("stacks=native", "native", 1000)):
                r = m[stacks]
                add = added(r, bare)
                fig[f"{stacks}_added_{th}"] = add
                if stacks == "standby":
                    rows.append((f"{name}, {th} thr", fmt(add, " ns", 1),
                                 "n/a (no standby)", f"<= {limit} ns",
                                 verdict(None if add is None
                                         else add <= limit)))
                    # Allocations of VRAMTRACE_STANDBY_STACK_KIB (1 MiB)
                    # or more keep their stack in standby: reported.
                    ladd = added(m["standby_large"], m["bare_large"])
                    fig[f"standby_large_added_{th}"] = ladd
                    rows.append((f"standby, 2 MiB pairs (stack kept), "
                                 f"{th} thr", fmt(ladd, " ns", 1),
                                 "n/a (no standby)", "reported", "—"))
                    continue
                ok = None if add is None else add <= limit and (
                    ht_add is None or add < ht_add)
                rows.append((f"{name}, {th} thr", fmt(add, " ns", 1),
                             fmt(ht_add, " ns", 1),
                             f"<= {limit} ns, < heaptrack", verdict(ok)))
                padd = added(r, bare, "proc")
                fig[f"{stacks}_proc_added_{th}"] = padd
                proc_rows.append((f"{name}, {th} thr", fmt(padd, " ns", 0),
                                  fmt(ht_proc, " ns", 0), "< heaptrack",
                                  verdict(None if padd is None or
                                          ht_proc is None
                                          else padd < ht_proc)))
                if r is not None and r["bytes"] is not None:
                    counted = b.events_in(r["paths"][0])
                    pairs = r["events"] // 2
                    if counted and (counted[0] != pairs or
                                    counted[1] != pairs or counted[2]):
                        b.note(f"{name} {th} thr: the analyzer counts "
                               f"{counted[0]:,} allocations, "
                               f"{counted[1]:,} frees ({counted[2]:,} "
                               f"events dropped) of {pairs:,} pairs made")
                    bpe = r["bytes"] / r["events"]
                    hbpe = ht["bytes"] / ht["events"] if ht and \
                        ht["bytes"] is not None else None
                    fig[f"{stacks}_bytes_per_event_{th}"] = bpe
                    fig[f"heaptrack_bytes_per_event_{th}"] = hbpe
                    size_rows.append((f"{name}, {th} thr", fmt(bpe, "", 4),
                                      fmt(hbpe, "", 4),
                                      "<= 4, < heaptrack",
                                      verdict(bpe <= 4 and (
                                          hbpe is None or bpe < hbpe))))
            # native + Python frames, from bench_python.py
            pbare, pr = m["py_bare"], m["py"]
            pht_bare, pht = m.get("pht_bare"), m.get("pht")
            padd = added(pr, pbare)
            pht_add = added(pht, pht_bare)
            fig[f"python_bare_{th}"] = pbare and pbare["cpu"]
            fig[f"native_python_added_{th}"] = padd
            fig[f"heaptrack_python_added_{th}"] = pht_add
            rows.append((f"bare pair from Python, {th} thr",
                         fmt(pbare and pbare["cpu"], " ns", 1),
                         fmt(pht_bare and pht_bare["cpu"], " ns", 1),
                         "—", "—"))
            rows.append((f"stacks=native,python, {th} thr",
                         fmt(padd, " ns", 1),
                         fmt(pht_add, " ns", 1) + (" *" if pht_add
                                                   is not None else ""),
                         "<= 3000 ns",
                         verdict(None if padd is None else padd <= 3000)))

        # ---- read/write on fds that are not followed connections ------
        if a.io_bench:
            print("measuring read/write...", file=sys.stderr, flush=True)
            got = {False: [], True: []}
            for _ in range(a.runs):
                for pre in (False, True):
                    try:
                        got[pre].append(b.io(pre))
                    except Failed as e:
                        b.note(f"bench_io: {e}")
            rows.append("CPU ns per write+read pair of 64 bytes on "
                        "descriptors the preload does not follow (one "
                        "bit test per call)")
            for kind, what in (("file", "regular file"), ("pipe", "pipe")):
                bare = median(r.get(kind) for r in got[False])
                pre = median(r.get(kind) for r in got[True])
                add = None if bare is None or pre is None else pre - bare
                fig[f"io_{kind}_bare"] = bare
                fig[f"io_{kind}_added"] = add
                rows.append((f"{what}: bare", fmt(bare, " ns", 1), "—",
                             "—", "—"))
                # Two hooked calls per pair; a syscall's own noise is
                # tens of ns, so the verdict allows for it.
                rows.append((f"{what}: added by the preload",
                             fmt(add, " ns", 1), "n/a", "<= 20 ns",
                             verdict(None if add is None else add <= 20)))
            rows.append("CPU ns per request on an accepted TCP connection "
                        "the preload follows (client and server in one "
                        "thread; 10,000 requests)")
            for kind, what in (("h2", "gRPC over HTTP/2, streams of "
                                      "one connection"),
                               ("turns", "a protocol of its own, "
                                         "requests by turns")):
                bare = median(r.get(kind) for r in got[False])
                pre = median(r.get(kind) for r in got[True])
                add = None if bare is None or pre is None else pre - bare
                fig[f"io_{kind}_bare"] = bare
                fig[f"io_{kind}_added"] = add
                rows.append((f"{what}: bare", fmt(bare, " ns", 0), "—",
                             "—", "—"))
                rows.append((f"{what}: added by the preload",
                             fmt(add, " ns", 0), "n/a", "<= 2000 ns",
                             verdict(None if add is None
                                     else add <= 2000)))
            state = median(r.get("conn_state") for r in got[True])
            fig["conn_state_bytes"] = state
            rows.append(("per-connection state of the preload",
                         fmt(state, " B", 0), "n/a", "<= 256 B",
                         verdict(None if state is None else state <= 256)))

        rows.append("added CPU ns per pair, whole process tree (vramtrace: "
                    "+ writer thread; heaptrack: + heaptrack_interpret, "
                    "zstd)")
        rows += proc_rows

        # ---- 2. trace size -------------------------------------------
        rows.append(f"compressed trace, bytes per event ({2 * a.pairs:,} "
                    f"events, sizes cycling through 8 values)")
        rows += size_rows
        print("measuring identical pairs...", file=sys.stderr, flush=True)
        cf = {"v": ("c", "vramtrace", "native", 1, a.pairs, 1)}
        if b.heaptrack:
            cf["h"] = ("c", "heaptrack", None, 1, a.pairs, 1)
        m = b.measure(cf, runs=1)
        r1, h1 = m["v"], m.get("h")
        bpe = r1["bytes"] / r1["events"] if r1 and r1["bytes"] else None
        hbpe = h1["bytes"] / h1["events"] if h1 and h1["bytes"] else None
        fig["native_bytes_per_event_identical_1"] = bpe
        fig["heaptrack_bytes_per_event_identical_1"] = hbpe
        rows.append(("stacks=native, 1 thr, identical pairs",
                      fmt(bpe, "", 4), fmt(hbpe, "", 4),
                      "<= 4, < heaptrack",
                      verdict(None if bpe is None else bpe <= 4 and (
                          hbpe is None or bpe < hbpe))))

        # ---- 3. the mixed workload ---------------------------------
        mixed_section(a, b, rows, fig)

        # ---- 4. analyzer ---------------------------------------------
        if not a.no_analyzer:
            small = max(1, a.events // 5)
            rows.append(f"analyzer, pinned to one core: vramtrace analyze "
                        f"--format json vs heaptrack_print")
            print(f"analyzer: {a.events:,} events...", file=sys.stderr,
                  flush=True)
            r = b.analyzers(a.events)
            big, same, hbig = r["gen"], r["same"], r["ht"]
            print(f"analyzer: {small:,} events...", file=sys.stderr,
                  flush=True)
            r = b.analyzers(small)
            sm, hsm = r["gen"], r["ht"]

            ev, hev, sev = rate(big), rate(hbig), rate(same)
            fig.update(analyze_events_per_s=ev,
                       analyze_same_program_events_per_s=sev,
                       heaptrack_print_events_per_s=hev,
                       analyze_rss_mib=rss(big),
                       heaptrack_print_rss_mib=rss(hbig),
                       analyze_rss_ratio=ratio(big, sm),
                       heaptrack_print_rss_ratio=ratio(hbig, hsm))
            big_n = f"{(big or hbig or {'events': a.events})['events']:,}"
            rows.append((f"events/s, {big_n} events, server-like trace",
                         fmt(ev, "/s"), fmt(hev, "/s"),
                         ">= 20 M/s, > heaptrack",
                         verdict(None if ev is None else ev >= 20e6 and (
                             hev is None or ev > hev))))
            rows.append((f"events/s, {big_n} events, same program",
                         fmt(sev, "/s"), fmt(hev, "/s"),
                         ">= 20 M/s, > heaptrack",
                         verdict(None if sev is None else sev >= 20e6 and (
                             hev is None or sev > hev))))
            rows.append((f"wall s, {big_n} events (runs)",
                         fmt(big and big["secs"], " s", 2) +
                         (f" ({big['runs']})" if big else ""),
                         fmt(hbig and hbig["secs"], " s", 2) +
                         (f" ({hbig['runs']})" if hbig else ""), "—", "—"))
            rows.append((f"peak RSS, {big_n} events",
                         fmt(rss(big), " MiB", 0), fmt(rss(hbig), " MiB", 0),
                         "—", "—"))
            rows.append((f"peak RSS, {small:,} events",
                         fmt(rss(sm), " MiB", 0), fmt(rss(hsm), " MiB", 0),
                         "—", "—"))
            rt = ratio(big, sm)
            rows.append((f"peak RSS ratio, {big_n} / {small:,} events",
                         fmt(rt, "", 2), fmt(ratio(hbig, hsm), "", 2),
                         "<= 1.2 (~1)",
                         verdict(None if rt is None else rt <= 1.2)))
            if big:
                fig["analyze_trace_bytes_per_event"] = \
                    big["bytes"] / big["events"]

        # ---- 5. an engine's log alone (run_log_bench.py) ---------------
        if not a.no_analyzer:
            log_section(a, rows, fig)
    finally:
        shutil.rmtree(b.tmp, ignore_errors=True)

    # ---- print ---------------------------------------------------------
    head = ("figure", "vramtrace", "heaptrack", "target", "verdict")
    w = [len(h) for h in head]
    for r in rows:
        if not isinstance(r, str):
            w = [max(x, len(c)) for x, c in zip(w, r)]
    line = "-+-".join("-" * x for x in w)
    print()
    print(" | ".join(h.ljust(x) for h, x in zip(head, w)))
    print(line)
    for r in rows:
        if isinstance(r, str):
            print(f"-- {r}")
        else:
            print(" | ".join([r[0].ljust(w[0])] +
                             [c.rjust(x) for c, x in zip(r[1:3], w[1:3])] +
                             [c.ljust(x) for c, x in zip(r[3:], w[3:])]))
    print(line)
    met = sum(1 for r in rows if not isinstance(r, str) and r[4] == "met")
    missed = sum(1 for r in rows
                 if not isinstance(r, str) and r[4] == "NOT met")
    print(f"{met} met, {missed} NOT met; {time.monotonic() - t_start:.0f} s")
    print("* heaptrack from Python: malloc/free through ctypes, native "
          "stacks only (heaptrack records no Python frames)")
    for n in b.notes:
        print(f"note: {n}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"date": datetime.datetime.now().isoformat(),
                       "machine": machine(), "pairs": a.pairs,
                       "python_pairs": a.python_pairs,
                       "events": a.events, "figures": fig,
                       "notes": b.notes}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
