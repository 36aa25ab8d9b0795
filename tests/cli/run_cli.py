#!/usr/bin/env python3
"""cli tests of the vramtrace command (suite 'cli').

    run_cli.py --vramtrace EXE --mktrace EXE --src DIR [--noop SO]
               [--artifacts DIR] GROUP

GROUP is one of golden, bad, usage, record, reports (Perfetto and
folded outputs checked against the JSON report; progress on a terminal),
model (--model-config and --explain against tests/data/models). The HTML
report has its own script, run_html.py. Traces are built at
test time by mktrace from the scripts in traces/, in a fresh temporary
directory that is also the cwd of every command, so outputs hold only
relative paths.

golden: each case's exit status, stdout and stderr are compared with
golden/<case>; VRAMTRACE_REGEN=1 rewrites those files instead.
Output is TAP.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

GOLDEN_CASES = [
    # name, script, vramtrace arguments
    ("basic.text", "basic.mkt", ["analyze", "run"]),
    ("basic.json", "basic.mkt", ["analyze", "--format", "json", "run"]),
    ("multi.text", "multi.mkt", ["analyze", "run"]),
    ("multi.json", "multi.mkt", ["analyze", "-f", "json", "run"]),
    ("truncated.text", "truncated.mkt", ["analyze", "run"]),
    ("truncated.json", "truncated.mkt", ["analyze", "--format=json", "run"]),
    ("multihost.text", "multihost.mkt", ["analyze", "runA", "runB"]),
    ("multihost.json", "multihost.mkt",
     ["analyze", "--format", "json", "runA", "runB/500.vtrace"]),
    ("phases.text", "phases.mkt", ["analyze", "run"]),
    ("phases.json", "phases.mkt", ["analyze", "-f", "json", "run"]),
    ("rules.text", "rules.mkt", ["analyze", "run"]),
    ("rules-reclass.text", "rules.mkt",
     ["analyze", "--rules", "rules/user.rules", "run"]),
    ("rules-reclass.json", "rules.mkt",
     ["analyze", "--rules=rules/user.rules", "-f", "json", "run"]),
    ("standby.text", "standby.mkt", ["analyze", "run"]),
    ("standby.json", "standby.mkt", ["analyze", "-f", "json", "run"]),
    ("inferred.text", "inferred.mkt", ["analyze", "run"]),
    ("inferred.json", "inferred.mkt", ["analyze", "-f", "json", "run"]),
    ("basic.perfetto", "basic.mkt", ["analyze", "-f", "perfetto", "run"]),
    ("multi.perfetto", "multi.mkt", ["analyze", "-f", "perfetto", "run"]),
    ("phases.perfetto", "phases.mkt",
     ["analyze", "--format=perfetto", "run"]),
    ("multihost.perfetto", "multihost.mkt",
     ["analyze", "-f", "perfetto", "runA", "runB"]),
    ("basic.folded", "basic.mkt", ["analyze", "-f", "folded", "run"]),
    ("multi.folded", "multi.mkt", ["analyze", "-f", "folded", "run"]),
    ("phases.folded", "phases.mkt", ["analyze", "--format", "folded", "run"]),
    ("rules-reclass.folded", "rules.mkt",
     ["analyze", "--rules", "rules/user.rules", "-f", "folded", "run"]),
    # compare: the same server before/after, recorded by another build at
    # other addresses (the call paths must still match by name)
    ("compare.text", "compare.mkt", ["compare", "runA", "runB"]),
    ("compare.json", "compare.mkt", ["compare", "-f", "json", "runA",
                                     "runB/900.vtrace"]),
    ("compare-same.text", "compare.mkt", ["compare", "runA", "runA"]),
    ("compare-devices.text", "compare.mkt", ["compare", "runV", "runS"]),
    ("compare-bad.text", "compare.mkt", ["compare", "runA",
                                         "runA/none.vtrace"]),
    ("table.text", "compare.mkt",
     ["table", "runA", "runB", "runV", "runS", "runT"]),
    ("table.csv", "compare.mkt",
     ["table", "--format=csv", "runA", "runB", "runV"]),
    ("table.json", "compare.mkt", ["table", "-f", "json", "runB", "runV"]),
    ("table-bad.text", "compare.mkt", ["table", "runA", "nothing-here"]),
    ("windows.text", "windows.mkt", ["analyze", "run"]),
    ("windows.json", "windows.mkt", ["analyze", "-f", "json", "run"]),
    # rules: the call paths no rule claims, or only an obsolete rule
    ("rules-unclaimed.text", "unclaimed.mkt", ["rules", "run"]),
    ("rules-unclaimed-top.text", "unclaimed.mkt",
     ["rules", "--top", "1", "run/900.vtrace"]),
    ("rules-plugin.text", "rules.mkt", ["rules", "run"]),
    ("rules-plugin-claimed.text", "rules.mkt",
     ["rules", "--rules", "rules/user.rules", "run"]),
    ("rules-bad.text", "rules.mkt",
     ["rules", "--rules", "rules/bad.rules", "run"]),
    # verdicts on engine-shaped runs (traces/verdict-*.mkt say each case)
    ("verdict-near-miss.text", "verdict-recovered.mkt", ["analyze", "runN"]),
    ("verdict-near-miss.json", "verdict-recovered.mkt",
     ["analyze", "-f", "json", "runN"]),
    ("verdict-recovered-fatal.text", "verdict-recovered.mkt",
     ["analyze", "runF"]),
    ("verdict-profile.text", "verdict-profile.mkt", ["analyze", "run"]),
    ("verdict-profile.json", "verdict-profile.mkt",
     ["analyze", "-f", "json", "run"]),
    ("verdict-graphs.text", "verdict-graphs.mkt", ["analyze", "run"]),
    ("verdict-llama-pool.text", "verdict-llama.mkt", ["analyze", "runP"]),
    ("verdict-listen-first.text", "verdict-llama.mkt", ["analyze", "runW"]),
    ("verdict-tp-spawn.text", "verdict-tp.mkt", ["analyze", "run"]),
    ("verdict-died-loading.text", "verdict-died.mkt", ["analyze", "run"]),
    ("verdict-keepalive.text", "verdict-keepalive.mkt", ["analyze", "run"]),
    # advice in each engine's terms, with the margin, cheapest first
    # (traces/advice.mkt; models/ holds the GGUF heads mkgguf.py writes)
    ("advice-vllm-context.text", "advice.mkt", ["analyze", "runKV"]),
    ("advice-vllm-margin.text", "advice.mkt",
     ["analyze", "--margin", "10", "runKV"]),
    ("advice-vllm-concurrency.json", "advice.mkt",
     ["analyze", "-f", "json", "runC"]),
    ("advice-sglang.text", "advice.mkt", ["analyze", "runSG"]),
    ("advice-tgi.text", "advice.mkt", ["analyze", "runTGI"]),
    ("advice-llama-weights.text", "advice.mkt",
     ["analyze", "--model-config", "models/llama3-70b-q4_k_m.gguf",
      "runLW"]),
    ("advice-llama-weights-bare.text", "advice.mkt", ["analyze", "runLW"]),
    ("advice-llama-ngl.text", "advice.mkt", ["analyze", "runLN"]),
    ("advice-llama-kv.text", "advice.mkt",
     ["analyze", "--model-config", "models/llama3-8b-q4_k_m.gguf", "runLK"]),
    ("advice-none-margin.text", "advice.mkt", ["analyze", "runN"]),
    ("advice-margin-bad.text", "advice.mkt",
     ["analyze", "--margin", "60", "runN"]),
    # the retest loop: B's verdict, whether it fixed A, the flags changed
    ("compare-fixed.text", "advice.mkt", ["compare", "runKV", "runFix"]),
    ("compare-fixed.json", "advice.mkt",
     ["compare", "-f", "json", "runKV", "runFix"]),
    ("compare-not-shown.text", "advice.mkt", ["compare", "runC", "runCap"]),
    ("compare-engines.text", "advice.mkt", ["compare", "runC", "runSG"]),
    ("table-verdicts.text", "advice.mkt",
     ["table", "runKV", "runFix", "runC", "runCap", "runSG", "runTGI",
      "runLW", "runLK", "runN"]),
    ("table-verdicts.csv", "advice.mkt",
     ["table", "-f", "csv", "runKV", "runFix", "runN"]),
    # numbers that cannot be: a data problem (traces/sanity.mkt)
    ("sanity-over-capacity.text", "sanity.mkt", ["analyze", "runO"]),
    ("sanity-identity.json", "sanity.mkt", ["analyze", "-f", "json",
                                            "runI"]),
    # plan: other settings predicted from one run (traces/plan.mkt)
    ("plan-vllm.text", "plan.mkt",
     ["plan", "--model-config", "model/config.json", "--set",
      "max-num-seqs=2,6", "--set", "gpu-memory-utilization=0.9,0.95",
      "runV"]),
    ("plan-vllm.json", "plan.mkt",
     ["plan", "-f", "json", "--model-config", "model/config.json", "--set",
      "max-num-seqs=2,6", "--set", "max-model-len=8192,524288", "runV"]),
    ("plan-vllm.csv", "plan.mkt",
     ["plan", "--format=csv", "--model-config", "model/config.json",
      "--set", "--gpu-memory-utilization=0.8,0.95", "runV"]),
    ("plan-explain.text", "plan.mkt",
     ["plan", "--model-config", "model/config.json", "--set",
      "gpu-memory-utilization=0.95", "--set", "max-num-seqs=6",
      "--explain", "runV"]),
    ("plan-unknown.text", "plan.mkt",
     ["plan", "--set", "max-model-len=4096,16384", "--set",
      "max-num-batched-tokens=4096", "runN"]),
    ("plan-sglang.text", "plan.mkt",
     ["plan", "--model-config", "model/config.json", "--margin", "10",
      "runS"]),
    ("plan-llama-explain.text", "plan.mkt",
     ["plan", "--model-config", "model/config.json", "--set",
      "c=16384,131072", "--set", "-np=2,8", "--objective", "context",
      "--explain", "runL"]),
    ("plan-bad.text", "plan.mkt", ["plan", "--set", "nosuch=1", "runV"]),
]

# The verdict each engine-shaped run must get, checked on its JSON report
# (independent of how the goldens word it): script, run, verdict, detail,
# stage, the decisive failure's index (None: none), and the fatal and
# recovered flags of its ooms[].
VERDICT_CASES = [
    ("verdict-recovered.mkt", "runN", "none", "near_miss", "request", None,
     [(False, True)]),
    ("verdict-recovered.mkt", "runF", "concurrency", "overlapping_requests",
     "request", 2, [(False, True), (False, False), (True, False)]),
    ("verdict-profile.mkt", "run", "concurrency", "batch_activations", "load",
     1, [(False, False), (True, False)]),
    ("verdict-graphs.mkt", "run", "kv_cache", "graph_capture_after_reserve",
     "load", 0, [(True, False)]),
    ("verdict-llama.mkt", "runP", "concurrency", "overlapping_requests",
     "request", 1, [(False, False), (True, False)]),
    ("verdict-llama.mkt", "runW", "weights", "card_too_small", "load", 0,
     [(True, False)]),
    ("verdict-tp.mkt", "run", "weights", "not_sharded", "load", 0,
     [(True, False)]),
    ("verdict-died.mkt", "run", "inconclusive", "died_while_loading", "load",
     None, []),
    ("verdict-keepalive.mkt", "run", "concurrency", "overlapping_requests",
     "request", 0, [(True, False)]),
]

# Bad inputs: file (made by bad.mkt or below) -> expected text in the error.
BAD_CASES = [
    ("bad/empty.vtrace", "not a trace: empty file"),
    ("bad/random.vtrace", "not a trace: not a zstd frame at byte 0"),
    ("bad/nocomplete.vtrace", "no complete frame: file ends inside its "
     "first frame (truncated at byte 0)"),
    ("bad/corrupt.vtrace", "corrupt frame: at byte "),
    ("bad/newer.vtrace", "unsupported trace: format version 6 is newer "
     "than this vramtrace supports (5)"),
    ("bad/magic.vtrace", "not a trace: bad magic in HEADER"),
    ("bad/noheader.vtrace", "not a trace: first record is type 6, not a "
     "HEADER"),
    ("bad/nochunk.vtrace", "corrupt record: event before any CHUNK in "
     "frame at byte "),
    ("bad/garbage.vtrace", "corrupt frame: bytes that are not a zstd frame "
     "at byte "),
    ("bad/emptydir", "no traces: no *.vtrace files in this directory"),
    ("bad/missing.vtrace", "cannot read: No such file or directory"),
    ("bad/badstack.vtrace", "corrupt record: malformed STACK in frame at "
     "byte "),
]


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        if cond:
            print(f"ok {self.n} - {name}")
        else:
            self.failed += 1
            print(f"not ok {self.n} - {name}")
            for line in str(detail).splitlines():
                print(f"# {line}")
        sys.stdout.flush()

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def run(args, cwd, env=None, timeout=30):
    p = subprocess.run(args, cwd=cwd, env=env, capture_output=True,
                       timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), \
        p.stderr.decode("utf-8", "replace")


def dense_script(path):
    """Writes a mktrace script: a vLLM-shaped server's hour-long load test
    on one card. It loads (14 GiB of weights, a profiling run's 512 MiB
    freed 1 us later, then 6 GiB of KV cache 0.5 s after), serves a request
    every 0.9 s (256 MiB of activations for 0.1 s), is marked every 15
    minutes and refuses one allocation at 30 minutes. Busy enough that the
    timeline's buckets widen to about 4 s: the profiling run and the KV
    cache share the first one, so no timeline point holds the profile
    bytes; the bucket's range does."""
    events = [(10_000, "meminfo 0 24Gi 24Gi"),
              (500_000, "alloc cuMemAlloc_v2 0 0x100000000 14Gi p=weights"),
              (2_000_000, "alloc cuMemAlloc_v2 0 0x200000000 512Mi "
                          "p=profile"),
              (2_000_001, "free cuMemFree_v2 -1 0x200000000"),
              (2_500_000, "alloc cuMemAlloc_v2 0 0x300000000 6Gi "
                          "p=kv_cache"),
              (3_000_000, "net listen 5 8000")]
    for k in range(4000):
        t = 5_000_000 + k * 900_000
        events += [(t, "net accept 9 5"),
                   (t + 1_000, "alloc cuMemAlloc_v2 0 0x400000000 256Mi "
                               "p=forward"),
                   (t + 100_000, "free cuMemFree_v2 -1 0x400000000"),
                   (t + 101_000, "net close 9 0")]
    for k, label in enumerate(("rate=1", "rate=2", "rate=4"), 1):
        events.append((k * 900_000_000 + 50, "mark " + label))
    events.append((1_800_000_500, "fail cuMemAlloc_v2 0 0 8Gi 2 3Gi 24Gi "
                                  "p=forward"))
    events.sort(key=lambda e: e[0])
    lines = ["file run/700.vtrace",
             "header 700 1 1700000000s 3000s host-a /usr/bin/python3 "
             "python3 -m vllm.entrypoints.openai.api_server --model m",
             "device 1 0 24Gi NVIDIA~L4 0102030405060708090a0b0c0d0e0f10",
             "chunk 700 3000s"]
    prev = 0
    for t, text in events:
        op, _, rest = text.partition(" ")
        lines.append(f"{op} {t - prev}us {rest}")
        prev = t
    lines += ["trailer 6610s", "write run/700.exit exit 0"]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def mktrace(opts, script, cwd):
    if script == "dense":
        dense_script(os.path.join(cwd, "dense.mkt"))
        path = os.path.join(cwd, "dense.mkt")
    else:
        path = os.path.join(opts.src, "traces", script)
    rc, out, err = run([opts.mktrace, path], cwd)
    if rc != 0:
        raise RuntimeError(f"mktrace {script} failed: {err}")
    if script == "advice.mkt":
        # the GGUF heads the advice reads (--model-config models/...)
        rc, out, err = run([sys.executable,
                            os.path.join(opts.src, "..", "data",
                                         "mkgguf.py"), "models"], cwd)
        if rc != 0:
            raise RuntimeError(f"mkgguf.py failed: {err}")


# Where each sentence of a diagnosis starts, and the indent its folded
# lines take (the text report folds prose at 100 columns).
PROSE = (("  - ", 4), ("  confidence: ", 4), ("  action: ", 10),
         ("  or:     ", 10), ("          cost: ", 16), ("  verify: ", 10))


def unfold(text):
    """The lines of a text report with each folded sentence joined back
    into one line."""
    out, indent = [], None
    for line in text.splitlines():
        start = next((k for p, k in PROSE if line.startswith(p)), None)
        if (start is None and indent is not None and out and
                line.startswith(" " * indent) and
                not line.startswith(" " * (indent + 1))):
            out[-1] += " " + line.strip()
            continue
        indent = start
        out.append(line)
    return out


def sanitizer_report(err):
    # ASan exits 1 like a data error: look at what it printed.
    return "Sanitizer" in err or "runtime error:" in err


def transcript(rc, out, err):
    s = f"exit {rc}\n--- stdout\n{out}"
    if err:
        s += f"--- stderr\n{err}"
    return s


def group_golden(opts, tap):
    regen = os.environ.get("VRAMTRACE_REGEN") == "1"
    for name, script, args in GOLDEN_CASES:
        with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
            mktrace(opts, script, tmp)
            rc, out, err = run([opts.vramtrace] + args, tmp)
        got = transcript(rc, out, err)
        path = os.path.join(opts.src, "golden", name)
        if regen:
            with open(path, "w") as f:
                f.write(got)
            tap.ok(True, f"golden {name} (regenerated)")
            continue
        try:
            with open(path) as f:
                want = f.read()
        except FileNotFoundError:
            want = None
        if want == got:
            tap.ok(True, f"golden {name}")
        else:
            import difflib
            diff = "".join(difflib.unified_diff(
                (want or "").splitlines(True), got.splitlines(True),
                "golden/" + name, "actual"))
            tap.ok(False, f"golden {name}",
                   diff or "missing golden file (VRAMTRACE_REGEN=1)")
        if name.endswith(".json") and rc == 0:
            import json
            try:
                doc = json.loads(out)
                good = doc.get("schema") == {
                    "compare": "vramtrace-compare/1",
                    "table": "vramtrace-table/1",
                    "plan": "vramtrace-plan/1"}.get(
                        args[0], "vramtrace-report/1")
            except ValueError as e:
                good, doc = False, e
            tap.ok(good, f"golden {name} parses with its schema", doc)
    compare_checks(opts, tap)
    builtin_checks(opts, tap)
    verdict_checks(opts, tap)


def builtin_checks(opts, tap):
    """`vramtrace rules --builtin` prints the rules file the build
    embeds, byte for byte."""
    path = os.path.join(opts.src, "..", "..", "common", "builtin.rules")
    with open(path) as f:
        want = f.read()
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        rc, out, err = run([opts.vramtrace, "rules", "--builtin"], tmp)
    tap.ok(rc == 0 and out == want and err == "",
           "rules --builtin prints common/builtin.rules",
           f"exit {rc}, {len(out)} of {len(want)} bytes, stderr {err!r}")


def verdict_checks(opts, tap):
    """The verdicts of VERDICT_CASES, read from the JSON report."""
    for script, run_dir, verdict, detail, stage, index, ooms in VERDICT_CASES:
        with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
            mktrace(opts, script, tmp)
            rc, out, err = run([opts.vramtrace, "analyze", "-f", "json",
                                run_dir], tmp)
        doc = json.loads(out) if rc == 0 else {}
        d = doc.get("diagnosis") or {}
        got = (d.get("verdict"), d.get("detail"), d.get("stage"),
               d.get("failure_index"))
        tap.ok(got == (verdict, detail, stage, index),
               f"verdict {script} {run_dir}: {verdict} ({detail}), "
               f"{stage} stage", f"got {got}\n{err}")
        flags = [(o.get("fatal"), o.get("recovered_by") is not None)
                 for o in doc.get("ooms", [])]
        tap.ok(flags == ooms, f"verdict {script} {run_dir}: fatal and "
               "recovered failures", f"got {flags}, want {ooms}")
        rungs = [x.get("rung") for x in d.get("ladder", [])]
        tap.ok(d.get("confidence") in ("high", "medium", "low") and
               d.get("confidence_reason") and
               rungs in ([], ["baseline", "weights", "reserves",
                              "activations", "in_flight"]),
               f"verdict {script} {run_dir}: confidence and ladder",
               f"{d.get('confidence')!r} {d.get('confidence_reason')!r} "
               f"{rungs}")


def compare_checks(opts, tap):
    """What the compare and table goldens show, asserted on their JSON."""
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        mktrace(opts, "compare.mkt", tmp)
        rc, out, err = run([opts.vramtrace, "compare", "-f", "json", "runA",
                            "runB"], tmp)
        doc = json.loads(out) if rc == 0 else {}
        got = sorted((s["phase"], s["change"], s["bytes"]["delta"])
                     for s in doc.get("sites", []))
        want = sorted([("forward", "grew", 4 << 30),
                       ("kv_cache", "shrank", -(3 << 29)),
                       ("workspace", "disappeared", -(512 << 20)),
                       ("workspace", "appeared", 256 << 20)])
        tap.ok(got == want and doc.get("sites_unchanged") == 1,
               "compare: call paths match by name across builds and "
               "addresses", f"exit {rc}\n{got}\n{err}")
        dev = doc.get("devices", [{}])[0]
        tap.ok(dev.get("peak", {}).get("delta") == (9 << 28) and
               dev["phases"]["forward"]["at_peak"]["delta"] == 4 << 30 and
               doc["ooms"]["a"][0]["stage"] == "request" and
               not doc["ooms"]["b"],
               "compare: device peak, forward growth and OOMs", dev)
        rc, out, err = run([opts.vramtrace, "table", "-f", "json", "runA",
                            "runB", "runV", "runS", "runT"], tmp)
        rows = json.loads(out)["runs"] if rc == 0 else []
        keys = ("engine", "context_length", "concurrency",
                "memory_fraction", "tensor_parallel", "gpu_layers")
        got = [tuple(r[k] for k in keys) for r in rows]
        want = [("llama.cpp", 8192, 2, None, None, None),
                ("llama.cpp", 4096, 6, None, None, 99),
                ("vllm", 32768, 64, 0.9, 2, None),
                ("sglang", 4096, 16, 0.8, 1, None),
                ("tgi", 2048, 128, None, 1, None)]
        tap.ok(got == want, "table: engines and flags parsed", got)
        tap.ok([(r["oom"] or {}).get("stage") for r in rows] ==
               ["request", None, "load", None, None] and
               [r["exit_status"] for r in rows] == [0, 0, 137, 0, 0],
               "table: OOM stage and exit status", rows)


def group_bad(opts, tap):
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        mktrace(opts, "bad.mkt", tmp)
        open(os.path.join(tmp, "bad/empty.vtrace"), "wb").close()
        with open(os.path.join(tmp, "bad/random.vtrace"), "wb") as f:
            f.write(bytes((i * 97 + 13) % 256 for i in range(4096)))
        os.mkdir(os.path.join(tmp, "bad/emptydir"))
        with open(os.path.join(tmp, "bad/emptydir/notes.txt"), "w") as f:
            f.write("no traces here\n")
        for path, want in BAD_CASES:
            for fmt in ("text", "json"):
                rc, out, err = run([opts.vramtrace, "analyze", "--format",
                                    fmt, path], tmp)
                lines = err.splitlines()
                good = (rc == 1 and out == "" and len(lines) == 1 and
                        lines[0].startswith(
                            f"vramtrace: error: {path}: ") and
                        want in lines[0])
                tap.ok(good, f"bad input {path} ({fmt})",
                       f"exit {rc}\nstdout: {out!r}\nstderr: {err!r}\n"
                       f"want: {want!r}")
        # A bad file among good ones still fails the whole analysis, and
        # names the bad file.
        mktrace(opts, "multi.mkt", tmp)
        rc, out, err = run([opts.vramtrace, "analyze", "run",
                            "bad/corrupt.vtrace"], tmp)
        tap.ok(rc == 1 and err.startswith(
            "vramtrace: error: bad/corrupt.vtrace: corrupt frame"),
            "bad file after a good run", err)
        # Inside a run directory, a file whose process died before its
        # first flush (empty, or no complete frame) is skipped with a
        # warning; the rest of the run is analysed.
        shutil.copytree(os.path.join(tmp, "run"), os.path.join(tmp, "mixed"))
        open(os.path.join(tmp, "mixed/999.vtrace"), "wb").close()
        with open(os.path.join(tmp, "mixed/998.vtrace"), "wb") as f:
            f.write(b"\x28\xb5\x2f\xfd\x04")
        rc, out, err = run([opts.vramtrace, "analyze", "-f", "json",
                            "mixed"], tmp)
        warned = [l for l in err.splitlines() if "skipped" in l]
        report = json.loads(out) if rc == 0 else {}
        tap.ok(rc == 0 and len(warned) == 2 and
               report["run"]["truncated"] is True and
               len(report["run"]["skipped_files"]) == 2 and
               len(report["run"]["processes"]) >= 1,
               "dead-before-first-flush files skipped in a run directory",
               f"exit {rc}\nstderr: {err!r}")
        # ... but a directory of nothing else is still an error.
        os.mkdir(os.path.join(tmp, "onlydead"))
        open(os.path.join(tmp, "onlydead/1.vtrace"), "wb").close()
        rc, out, err = run([opts.vramtrace, "analyze", "onlydead"], tmp)
        tap.ok(rc == 1 and err.startswith(
            "vramtrace: error: onlydead/1.vtrace: not a trace: empty file"),
            "a directory with only dead files is an error", err)
        # A rules file that does not parse is a data error naming its
        # line; one that cannot be read names the file.
        mktrace(opts, "rules.mkt", tmp)
        for rules, want in (("rules/bad.rules",
                             "vramtrace: error: rules/bad.rules:2: "),
                            ("rules/none.rules",
                             "vramtrace: error: rules/none.rules: cannot "
                             "read: ")):
            rc, out, err = run([opts.vramtrace, "analyze", "--rules", rules,
                                "run"], tmp)
            lines = err.splitlines()
            tap.ok(rc == 1 and out == "" and len(lines) == 1 and
                   lines[0].startswith(want), f"bad rules file {rules}",
                   f"exit {rc}\nstdout: {out!r}\nstderr: {err!r}")
        # Every prefix (and flipped bytes) of a trace with stacks, phases,
        # marks and requests: exit 0 or 1, never a crash.
        mktrace(opts, "phases.mkt", tmp)
        data = open(os.path.join(tmp, "run/700.vtrace"), "rb").read()
        crashes = []
        for cut in range(0, len(data), max(1, len(data) // 97)):
            for i, mode in ((cut, "cut"), (cut, "flip")):
                p = os.path.join(tmp, "bad/stacks.vtrace")
                with open(p, "wb") as f:
                    if mode == "cut":
                        f.write(data[:cut])
                    else:
                        m = bytearray(data)
                        m[i] ^= 0xff
                        f.write(m)
                rc, out, err = run([opts.vramtrace, "analyze", "-f", "json",
                                    "bad/stacks.vtrace"], tmp)
                if rc not in (0, 1) or sanitizer_report(err):
                    crashes.append((mode, i, rc, err))
        tap.ok(not crashes, "prefixes and flipped bytes of a trace with "
               "stacks: exit 0 or 1", crashes)
        # Every prefix of a good trace: exit 0 or 1, never a crash.
        mktrace(opts, "basic.mkt", tmp)
        data = open(os.path.join(tmp, "run/100.vtrace"), "rb").read()
        crashes = []
        for cut in range(0, len(data), max(1, len(data) // 97)):
            p = os.path.join(tmp, "bad/prefix.vtrace")
            with open(p, "wb") as f:
                f.write(data[:cut])
            rc, out, err = run([opts.vramtrace, "analyze",
                                "bad/prefix.vtrace"], tmp)
            if rc not in (0, 1) or sanitizer_report(err):
                crashes.append((cut, rc, err))
        tap.ok(not crashes, "every prefix of a trace: exit 0 or 1", crashes)
        # Flipped bytes: never a crash.
        crashes = []
        for i in range(0, len(data), max(1, len(data) // 61)):
            mutated = bytearray(data)
            mutated[i] ^= 0xff
            p = os.path.join(tmp, "bad/flip.vtrace")
            with open(p, "wb") as f:
                f.write(mutated)
            rc, out, err = run([opts.vramtrace, "analyze", "-f", "json",
                                "bad/flip.vtrace"], tmp)
            if rc not in (0, 1) or sanitizer_report(err):
                crashes.append((i, rc, err))
        tap.ok(not crashes, "flipped bytes: exit 0 or 1", crashes)


def group_usage(opts, tap):
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        for args, want_rc, stream in [
            ([], 2, "err"),
            (["bogus"], 2, "err"),
            (["--bogus"], 2, "err"),
            (["analyze"], 2, "err"),
            (["analyze", "--format", "xml", "x"], 2, "err"),
            (["analyze", "--format"], 2, "err"),
            (["analyze", "--nope", "x"], 2, "err"),
            (["record"], 2, "err"),
            (["record", "-o"], 2, "err"),
            (["help", "bogus"], 2, "err"),
            (["compare"], 2, "err"),
            (["compare", "a"], 2, "err"),
            (["compare", "a", "b", "c"], 2, "err"),
            (["compare", "--format", "csv", "a", "b"], 2, "err"),
            (["table"], 2, "err"),
            (["table", "--format", "xml", "a"], 2, "err"),
            (["table", "--bogus", "a"], 2, "err"),
            (["rules"], 2, "err"),
            (["rules", "--builtin", "run"], 2, "err"),
            (["rules", "--builtin", "--rules", "f"], 2, "err"),
            (["rules", "--top", "-1", "run"], 2, "err"),
            (["rules", "--top"], 2, "err"),
        ]:
            rc, out, err = run([exe] + args, tmp)
            lines = err.splitlines()
            good = (rc == want_rc and out == "" and len(lines) >= 2 and
                    lines[0].startswith("vramtrace: error: ") and
                    any(l.startswith("usage: vramtrace") for l in lines))
            tap.ok(good, f"usage error: vramtrace {' '.join(args)}",
                   f"exit {rc}\nstdout: {out!r}\nstderr: {err!r}")
        for args in (["--help"], ["-h"], ["help"], ["help", "analyze"],
                     ["help", "record"], ["analyze", "--help"],
                     ["compare", "--help"], ["help", "table"],
                     ["rules", "--help"], ["help", "rules"],
                     ["record", "--help"], ["record", "-h", "--", "x"]):
            rc, out, err = run([exe] + args, tmp)
            tap.ok(rc == 0 and out.startswith("usage: vramtrace") and
                   err == "", f"help: vramtrace {' '.join(args)}",
                   f"exit {rc}\nstdout: {out!r}\nstderr: {err!r}")
        rc, out, err = run([exe, "--version"], tmp)
        tap.ok(rc == 0 and out.startswith("vramtrace ") and err == "",
               "--version", out + err)
        # a near miss of a command or long option is named
        for args, want in [
            (["analyse", "run"], "unknown command 'analyse' (did you mean "
             "'analyze'?)"),
            (["tabel", "a"], "(did you mean 'table'?)"),
            (["help", "comapre"], "(did you mean 'compare'?)"),
            (["analyze", "--model-conifg", "x", "run"],
             "unknown option '--model-conifg' (did you mean "
             "'--model-config'?)"),
            (["analyze", "--marign=5", "run"], "(did you mean '--margin'?)"),
            (["frobnicate"], "unknown command 'frobnicate'\n"),
            (["analyze", "--margin", "51", "run"],
             "--margin takes a whole percent from 0 to 50 (got '51')"),
            (["analyze", "--margin", "-3", "run"], "(got '-3')"),
            # the options analyze and plan share are parsed once
            (["plan", "--margin", "51", "run"],
             "--margin takes a whole percent from 0 to 50 (got '51')"),
            (["plan", "--kv-dtype", "fp7", "run"],
             "unknown KV dtype 'fp7' (fp16, bf16"),
            (["plan", "--objective", "speed", "run"],
             "unknown objective 'speed' (concurrency, context or "
             "throughput)"),
            (["compare", "a", "b", "c"], "too many runs (give A and B)"),
            (["analyze", "--log", "x", "--no-log", "run"],
             "--log and --no-log exclude each other"),
            # a mark label longer than the server reads is refused here
            (["ctl", "run", "mark", "x" * 600],
             "label too long (a command is at most 512 bytes"),
            (["ctl", "run", "mark"], "mark needs a label"),
        ]:
            rc, out, err = run([exe] + args, tmp)
            tap.ok(rc == 2 and want in err,
                   f"usage: vramtrace {' '.join(args)} says {want!r}",
                   f"exit {rc}\nstderr: {err!r}")


def group_model(opts, tap):
    """--model-config and --explain on a vLLM run (model.mkt: tensor
    parallel 2, fp8 KV cache in blocks of 64, 32768-token context, 40 GiB
    of KV reserve and 54 GiB of headroom over two cards)."""
    exe = opts.vramtrace
    data = os.path.join(os.path.dirname(opts.src.rstrip("/")), "data",
                        "models")
    GiB = 1 << 30
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        mktrace(opts, "model.mkt", tmp)
        ds = os.path.join(data, "deepseek-r1.json")
        rc, out, err = run([exe, "analyze", "--model-config", ds,
                            "--explain", "run"], tmp)
        want = [
            "  - model: 68.62 KiB of KV per token (61 MLA layers x 576 "
            "latent x 1 B fp8; copied on every tensor-parallel rank)",
            "MODEL",
            "    KV cache: K fp8, V fp8 (--kv-cache-dtype)",
            "    mla: 61 layers x 576 B per token x 2 copies across the "
            "ranks = 68.62 KiB per token",
            "    experts: 256 routed, 8 per token, 1 shared, in 58 of 61 "
            "layers",
        ]
        lines = unfold(out)
        missing = [w for w in want if w not in lines]
        tap.ok(rc == 0 and not missing, "model: DeepSeek-R1 explained "
               "(MLA latent on both ranks, fp8 from the engine's flag)",
               f"exit {rc}\nmissing: {missing}\n{out}\n{err}")
        # Gemma 2: half the layers windowed at 4096 (+ one block of 64).
        gm = os.path.join(data, "gemma-2-9b.json")
        rc, out, err = run([exe, "analyze", "-f", "json", "--model-config",
                            gm, "--explain", "run"], tmp)
        m = json.loads(out)["diagnosis"]["model"] if rc == 0 else {}
        per_layer = 8 * (256 + 256)  # fp8: 1 byte an element
        seq = 21 * 32768 * per_layer + 21 * (4096 + 64) * per_layer
        budget = 40 * GiB + 54 * GiB
        got = {k: m.get(k) for k in (
            "context_len", "kv_block_tokens", "tensor_parallel",
            "kv_bytes_per_token", "sequence_bytes_at_context",
            "kv_reserve_tokens", "kv_budget_bytes",
            "max_concurrency_at_context", "max_context_single")}
        want = {"context_len": 32768, "kv_block_tokens": 64,
                "tensor_parallel": 2, "kv_bytes_per_token": 42 * per_layer,
                "sequence_bytes_at_context": seq,
                "kv_reserve_tokens": 40 * GiB * 32768 // seq,
                "kv_budget_bytes": budget,
                "max_concurrency_at_context": budget // seq,
                "max_context_single":
                    (budget - 21 * 4160 * per_layer) // (21 * per_layer)
                    // 64 * 64}
        tap.ok(got == want, "model: Gemma 2's windows solved in JSON",
               f"exit {rc}\ngot  {got}\nwant {want}\n{err}")
        d = m.get("description", {})
        tap.ok([(g["kind"], g["window"]) for g in d.get("layer_groups", [])]
               == [("full", None), ("sliding", 4096)] and
               d.get("tied_embeddings") is True and
               d.get("kv_dtype") == {"k": "fp8", "v": "fp8",
                                     "from": "--kv-cache-dtype"} and
               abs(d.get("params", {}).get("total", 0) / 9.24e9 - 1) < 0.02
               and len(m.get("explain", [])) >= 5,
               "model: the description and the explain lines in JSON", m)
        rc, out, err = run([exe, "analyze", "-f", "json", "--model-config",
                            gm, "run"], tmp)
        m = json.loads(out)["diagnosis"]["model"] if rc == 0 else {}
        tap.ok(rc == 0 and "explain" not in m and "description" in m,
               "model: no explain lines without --explain", m)
        rc, out, err = run([exe, "analyze", "-f", "json", "run"], tmp)
        tap.ok(rc == 0 and json.loads(out)["diagnosis"]["model"] is None,
               "model: null without --model-config", err)
        # --kv-dtype beats the engine's flag: q8_0's 18 blocks of 34 B.
        rc, out, err = run([exe, "analyze", "-f", "json", "--model-config",
                            ds, "--kv-dtype", "q8_0", "run"], tmp)
        m = json.loads(out)["diagnosis"]["model"] if rc == 0 else {}
        tap.ok(m.get("kv_bytes_per_token") == 61 * 18 * 34 * 2,
               "model: --kv-dtype q8_0 over --kv-cache-dtype fp8",
               f"exit {rc}\n{m.get('kv_bytes_per_token')}\n{err}")
        # Errors: usage (exit 2) and an unusable config (exit 1).
        for args, want_rc, want in (
                (["--explain", "run"], 2,
                 "vramtrace: error: analyze: --explain needs "
                 "--model-config"),
                (["--model-config", gm, "--kv-dtype", "fp7", "run"], 2,
                 "vramtrace: error: analyze: unknown KV dtype 'fp7'"),
                (["--model-config", "bad.json", "run"], 1,
                 "vramtrace: error: bad.json: not a usable model config: "
                 "missing key \"vocab_size\""),
                (["--model-config", "none.json", "run"], 1,
                 "vramtrace: error: none.json: cannot read")):
            with open(os.path.join(tmp, "bad.json"), "w") as f:
                f.write('{"num_hidden_layers": 2, "hidden_size": 64, '
                        '"num_attention_heads": 4}')
            rc, out, err = run([exe, "analyze"] + args, tmp)
            tap.ok(rc == want_rc and out == "" and err.startswith(want),
                   f"model: error {' '.join(args[:2])}",
                   f"exit {rc}\nstderr: {err!r}\nwant: {want!r}")


def group_record(opts, tap):
    exe = opts.vramtrace
    env = dict(os.environ)
    env.pop("VRAMTRACE_OUT", None)
    env.pop("LD_PRELOAD", None)
    env["VRAMTRACE_PRELOAD"] = opts.noop
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        def exitfile(d):
            files = [f for f in os.listdir(os.path.join(tmp, d))
                     if f.endswith(".exit")]
            if len(files) != 1:
                return None
            return open(os.path.join(tmp, d, files[0])).read()

        rc, out, err = run([exe, "record", "-o", "r1", "--", "sh", "-c",
                            "exit 3"], tmp, env)
        tap.ok(rc == 3, "record: exit status passes through", err)
        tap.ok(exitfile("r1") == "exit 3\n", "record: .exit file",
               exitfile("r1"))
        # The no-op preload writes no trace: record says so, and why.
        tap.ok(err == "vramtrace: error: r1: no trace: no process made a "
               "GPU memory call; `sh -c exit 3` exited with status 3\n",
               "record: no trace claimed without one", err)
        st = os.stat(os.path.join(tmp, "r1"))
        tap.ok(st.st_mode & 0o777 == 0o700, "record: run dir mode 0700",
               oct(st.st_mode))
        ef = [f for f in os.listdir(os.path.join(tmp, "r1"))
              if f.endswith(".exit")][0]
        tap.ok(os.stat(os.path.join(tmp, "r1", ef)).st_mode & 0o777 == 0o600,
               "record: .exit mode 0600")

        rc, out, err = run([exe, "record", "-o", "r2", "sh", "-c",
                            "kill -TERM $$"], tmp, env)
        tap.ok(rc == 128 + signal.SIGTERM, "record: killed by signal -> "
               "128+n", f"exit {rc}: {err}")
        tap.ok(exitfile("r2") == f"signal {int(signal.SIGTERM)}\n",
               "record: .exit file for a signal", exitfile("r2"))

        rc, out, err = run([exe, "record", "-o", "r3", "--",
                            "vramtrace-no-such-command"], tmp, env)
        tap.ok(rc == 127 and "command not found" in err,
               "record: command not found -> 127", f"exit {rc}: {err}")
        tap.ok(not os.path.exists(os.path.join(tmp, "r3")),
               "record: no run dir left when nothing ran")

        env2 = dict(env, LD_PRELOAD="/previous.so")
        rc, out, err = run([exe, "record", "-o", "r4", "--", "sh", "-c",
                            'printf "%s|%s" "$LD_PRELOAD" "$VRAMTRACE_OUT"'
                            ' > env.txt'], tmp, env2)
        got = open(os.path.join(tmp, "env.txt")).read() if rc == 0 else ""
        want = (os.path.realpath(opts.noop) + ":/previous.so|" +
                os.path.realpath(os.path.join(tmp, "r4")))
        tap.ok(got == want, "record: LD_PRELOAD and VRAMTRACE_OUT exported",
               f"got {got!r}\nwant {want!r}")

        env3 = dict(env, VRAMTRACE_OUT="r5")
        rc, out, err = run([exe, "record", "true"], tmp, env3)
        tap.ok(rc == 0 and exitfile("r5") == "exit 0\n",
               "record: VRAMTRACE_OUT names the run dir", err)

        open(os.path.join(tmp, "r5", "123.vtrace"), "w").close()
        rc, out, err = run([exe, "record", "-o", "r5", "true"], tmp, env)
        tap.ok(rc == 1 and err.startswith("vramtrace: error: r5: ") and
               "-o" in err, "record: dir with traces refused", err)

        sub = os.path.join(tmp, "defaults")
        os.mkdir(sub)
        rc1, _, err1 = run([exe, "record", "true"], sub, env)
        rc2, _, err2 = run([exe, "record", "true"], sub, env)
        dirs = sorted(os.listdir(sub))
        tap.ok(rc1 == 0 and rc2 == 0 and len(dirs) == 2 and
               all(d.startswith("vramtrace-run-") for d in dirs),
               "record: default run dir names, never reused",
               f"{dirs} {err1} {err2}")

        rc, out, err = run([exe, "record", "-o", "r6", "true"], tmp,
                           dict(env, VRAMTRACE_PRELOAD="/nonexistent.so"))
        tap.ok(rc == 1 and err.startswith(
            "vramtrace: error: /nonexistent.so: ") and len(
                err.splitlines()) == 1, "record: missing preload", err)

        # SIGTERM to vramtrace reaches the command; SIGINT does not kill
        # vramtrace itself (the command gets it from the terminal).
        p = subprocess.Popen([exe, "record", "-o", "r7", "--", "sleep",
                              "20"], cwd=tmp, env=env,
                             stderr=subprocess.PIPE)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        time.sleep(0.2)
        alive = p.poll() is None
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = None
        p.stderr.close()
        tap.ok(alive, "record: SIGINT ignored by vramtrace")
        if b"__tsan_init" in open(exe, "rb").read():
            # ThreadSanitizer defers a signal's handler to the thread's
            # next intercepted call, which record, blocked waiting for
            # its child, does not make in time.
            tap.ok(True, "record: SIGTERM forwarded to the command "
                   "# SKIP vramtrace built with TSan")
        else:
            tap.ok(rc == 128 + signal.SIGTERM and
                   exitfile("r7") == f"signal {int(signal.SIGTERM)}\n",
                   "record: SIGTERM forwarded to the command", f"exit {rc}")

        # With the real preload (when it is built): CMD runs under it. The
        # preload writes a trace only at a process's first GPU event, so a
        # shell leaves just the .exit file (the preload suite covers
        # traces of programs that use the fake drivers).
        real = os.path.join(os.path.dirname(os.path.dirname(exe)),
                            "preload", "libvramtrace.so")
        blob = open(real, "rb").read() if os.path.exists(real) else b""
        sanitized = b"__asan_init" in blob or b"__tsan_init" in blob
        if sanitized:
            # A sanitizer-built preload cannot go into an uninstrumented
            # sh: its runtime must be loaded first.
            tap.ok(True, "record with the real preload "
                   "# SKIP preload built with a sanitizer")
        elif os.path.exists(real):
            env4 = dict(env)
            env4.pop("VRAMTRACE_PRELOAD")
            rc, out, err = run([exe, "record", "-o", "r8", "--", "sh", "-c",
                                "exit 4"], tmp, env4)
            tap.ok(rc == 4 and exitfile("r8") == "exit 4\n",
                   "record with the real preload", err)
        else:
            tap.ok(True, "record with the real preload "
                   "# SKIP preload not built")


def utc_us(text):
    """Microseconds since the epoch of an ISO 8601 UTC time such as the
    JSON report's "*_utc" ("2023-11-14T22:13:20.170000Z")."""
    import datetime
    d = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    d = d.replace(tzinfo=datetime.timezone.utc)
    return (d - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
            ) // datetime.timedelta(microseconds=1)


def perfetto_checks(opts, tap, tmp, script, args):
    """The Perfetto JSON parses and holds the tracks the JSON report
    implies: a process per pid, a counter per used phase of each device,
    requests in flight, one instant per OOM and mark, server ready."""
    rc, out, err = run([opts.vramtrace, "analyze", "-f", "perfetto"] + args,
                       tmp)
    try:
        doc = json.loads(out)
    except ValueError as e:
        tap.ok(False, f"perfetto {script}: parses", f"{e}\n{err}")
        return
    rc2, out2, _ = run([opts.vramtrace, "analyze", "-f", "json"] + args,
                       tmp)
    rep = json.loads(out2)
    ev = doc.get("traceEvents", [])
    names = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name"}
    pids = [p["pid"] for p in rep["run"]["processes"]]
    tap.ok(rc == 0 and all(p in names for p in pids) and
           all(isinstance(e.get("ts", 0), (int, float)) for e in ev),
           f"perfetto {script}: a process per traced pid", names)
    problems = []
    for d in rep["devices"]:
        used = {k for k, v in d["phases"].items()
                if v["allocs"] or v["frees"] or v["peak_bytes"]}
        if not used:
            continue
        pid = [p for p, n in names.items()
               if n.startswith(f"device {d['id']}: ")]
        cs = [e for e in ev if e["ph"] == "C" and pid and
              e["pid"] == pid[0] and e["name"] == "live bytes"]
        # Downsampled: each phase's most per bucket reaches its peak
        # (a phase that rose and fell back inside a bucket included).
        if rep["timeline"]["bucket_s"] > 1e-9:
            mx = [e for e in ev if e["ph"] == "C" and pid and
                  e["pid"] == pid[0] and e["name"] == "live bytes max"]
            mn = [e for e in ev if e["ph"] == "C" and pid and
                  e["pid"] == pid[0] and e["name"] == "live bytes min"]
            top = {k: max((e["args"][k] for e in mx), default=None)
                   for k in used}
            if top != {k: d["phases"][k]["peak_bytes"] for k in used} or \
                    len(mn) != len(mx):
                problems.append((d["id"], "max per bucket", top))
        if not cs or any(set(e["args"]) != used for e in cs):
            problems.append((d["id"], used, cs[:1]))
            continue
        # The counters reach the device's peak, split as the report says.
        tops = [e for e in cs if sum(e["args"].values()) ==
                d["peak"]["tracked_bytes"]]
        want = {k: v for k, v in d["peak"]["by_phase"].items() if v}
        if not tops or {k: v for k, v in tops[0]["args"].items()
                        if v} != want:
            problems.append((d["id"], "peak", want))
        if sorted(e["ts"] for e in cs) != [e["ts"] for e in cs]:
            problems.append((d["id"], "time order"))
    tap.ok(not problems, f"perfetto {script}: counter tracks per device "
           "and phase reach each peak", problems)
    inst = [e for e in ev if e["ph"] == "i"]
    ooms = [e for e in inst if e.get("cat") == "oom"]
    marks = [e for e in inst if e.get("cat") == "mark"]
    ready = [e for e in inst if e["name"] == "server ready"]
    want_ready = rep["server_ready_s"]
    # Perfetto's timestamps are UTC microseconds since the epoch: the same
    # moments as the JSON report's "*_utc".
    tap.ok(len(ooms) == len(rep["ooms"]) and
           all(e["s"] == "g" for e in ooms) and
           all(abs(e["ts"] - utc_us(o["time_utc"])) < 1 for e, o in
               zip(ooms, rep["ooms"])) and
           [e["name"] for e in marks] ==
           [m["label"] for m in rep["marks"]] and
           all(e["s"] == "p" for e in marks) and
           len(ready) == (want_ready is not None) and
           (not ready or abs(ready[0]["ts"] -
                             utc_us(rep["server_ready_utc"])) < 1),
           f"perfetto {script}: instants for OOMs, marks, server ready",
           inst)
    reqs = [e for e in ev if e["ph"] == "C" and
            e["name"] == "requests in flight"]
    has_req = rep["requests"]["connections"] or rep["requests"]["annotated"]
    tap.ok((max((e["args"]["requests"] for e in reqs), default=0) ==
            rep["requests"]["max_inflight"]) and bool(reqs) == bool(has_req),
           f"perfetto {script}: requests in flight counter", reqs[:4])


def folded_checks(opts, tap, tmp, script, args):
    """Folded stacks: "frames count" lines whose counts sum, per device, to
    the bytes live at its peak; the phase is the first frame."""
    rc, out, err = run([opts.vramtrace, "analyze", "-f", "folded"] + args,
                       tmp)
    rc2, out2, _ = run([opts.vramtrace, "analyze", "-f", "json"] + args,
                       tmp)
    rep = json.loads(out2)
    peaks = {d["id"]: d["peak"]["tracked_bytes"] for d in rep["devices"]
             if d["peak"]["tracked_bytes"]}
    sums, bad = {}, []
    for line in out.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        dev = next(iter(peaks)) if len(peaks) == 1 else None
        if len(peaks) > 1 and frames and frames[0].startswith("[device "):
            dev = int(frames.pop(0)[8:-1])
        if not count.isdigit() or not frames[0].startswith("[") or \
                dev is None:
            bad.append(line)
            continue
        sums[dev] = sums.get(dev, 0) + int(count)
    tap.ok(rc == 0 and not bad and sums == peaks,
           f"folded {script}: every byte live at each peak, phase first",
           f"exit {rc}\n{err}\nbad: {bad}\nsums {sums}\npeaks {peaks}")


def ended_checks(opts, tap):
    """live and ctl on a run whose processes have all ended: live counts
    no request in flight and says the run ended (with what was in flight
    when it stopped); ctl says the run ended instead of "no control
    socket"; a run still being written (no trailer, no exit status, on
    another host) is not called ended."""
    exe = opts.vramtrace
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        mktrace(opts, "advice.mkt", tmp)
        mktrace(opts, "truncated.mkt", tmp)
        rc, out, err = run([exe, "live", "runC", "--count", "1",
                            "--interval", "0.1"], tmp)
        tap.ok(rc == 0 and " inflight 0 " in out and
               "ended (8 in flight when it stopped)" in out,
               "live: an ended run has no request in flight", out + err)
        rc, out, err = run([exe, "live", "run", "--count", "1",
                            "--interval", "0.1"], tmp)
        tap.ok(rc == 0 and "ended" not in out,
               "live: a run still writing is not ended", out + err)
        rc, out, err = run([exe, "ctl", "runC", "status"], tmp)
        tap.ok(rc == 1 and "runC: this run has ended: no traced process "
               "of it is running (analyze it: vramtrace analyze runC)" in err,
               "ctl: a finished run has ended", err)


def group_reports(opts, tap):
    ended_checks(opts, tap)
    with tempfile.TemporaryDirectory(prefix="vrt-cli-") as tmp:
        for script, args in (("basic.mkt", ["run"]),
                             ("multi.mkt", ["run"]),
                             ("phases.mkt", ["run"]),
                             ("multihost.mkt", ["runA", "runB"]),
                             ("html.mkt", ["run"]), ("dense", ["run"])):
            shutil.rmtree(os.path.join(tmp, "run"), ignore_errors=True)
            mktrace(opts, script, tmp)
            perfetto_checks(opts, tap, tmp, script, args)
            folded_checks(opts, tap, tmp, script, args)
        # Progress goes to stderr only when it is a terminal, and never
        # for a quick analysis: the report itself is unchanged.
        import pty
        master, slave = pty.openpty()
        t0 = time.monotonic()
        p = subprocess.run([opts.vramtrace, "analyze", "run"], cwd=tmp,
                           stdout=subprocess.PIPE, stderr=slave, timeout=30)
        took = time.monotonic() - t0
        os.close(slave)
        os.set_blocking(master, False)
        try:
            tty = os.read(master, 4096)
        except (BlockingIOError, OSError):
            tty = b""
        os.close(master)
        rc, out, err = run([opts.vramtrace, "analyze", "run"], tmp)
        # "Quick" is under the progress line's delay (0.5 s); a sanitizer
        # build on a busy machine may take longer, and then may show it.
        tap.ok(p.returncode == 0 and p.stdout.decode() == out and
               (tty == b"" or took >= 0.5),
               "stderr a terminal: same report, no progress line for a "
               "quick analysis", (tty, took))


def parse_args(add):
    """The options every cli test script takes (--vramtrace, --mktrace,
    --src), and those add(parser) adds; programs as absolute paths."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--mktrace", required=True)
    ap.add_argument("--src", required=True)
    add(ap)
    opts = ap.parse_args()
    opts.vramtrace = os.path.abspath(opts.vramtrace)
    opts.mktrace = os.path.abspath(opts.mktrace)
    return opts


def main():
    def add(ap):
        ap.add_argument("--noop")
        ap.add_argument("group", choices=["golden", "bad", "usage", "record",
                                          "reports", "model"])
    opts = parse_args(add)
    if opts.noop:
        opts.noop = os.path.abspath(opts.noop)
    tap = Tap()
    globals()["group_" + opts.group](opts, tap)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
