#!/usr/bin/env python3
"""run_scenarios.py — the scenario corpus: record each example-server run,
diagnose it, compare with the verdict its situation deserves (python3
stdlib only).

Each tests/scenarios/*.scn file is one scenario:

    # comment
    title:   what happens, in a line
    run:     serve_sim serve sim-model --allocator caching ...
    env:     FAKECUDA_DEVICES=2 FAKECUDA_HOST_MEM=2G
    exit:    3
    expect:  kv_cache context_too_long request
    advice:  --max-model-len 2048 (was 131072) | --gpu-memory-utilization
    noadvice: -fa on
    evidence: log_fatal_failure near_miss
    confidence: high
    analyze: --no-log
    why:     the reasoning an engineer who knows the engine would give,
             continued on indented lines

`run` names a program of the build's examples/ and its arguments; `env`
adds fake-driver settings (FAKECUDA_MEM=80G unless given; the run's
processes share their cards through FAKECUDA_SHARE, a file of the run's
own, so two processes on one card run out of it together); `exit` is the
status `vramtrace record` must end with (the server's, 128+N for signal
N) — a different one means the server did not do what the scenario
describes, and the scenario is reported broken; `expect` is the verdict,
the detail ("-": any) and the stage of `vramtrace analyze --format
json`'s diagnosis. Optional: `evidence`, keys the diagnosis's evidence
must hold (what the engine's log added, for one: record keeps the
server's output in output.log and analyze reads it); `confidence`, the
level it must have; `analyze`, more arguments for analyze (--no-log: the
trace alone); `advice`, separated by " | ", what its actions must say, in
the engine's own terms (each a substring of one action); `noadvice`, what
no action may say (a context the failing prompt does not fit in, a flag
already set).

Log-only rows (--logs DIR): every DIR/<engine>/<version>.log whose
header (its leading "#" lines) says what its situation deserves is
diagnosed from the log alone, piped to `vramtrace analyze --log -
--format json` (the header left out), and shown as a row "log:ENGINE/
NAME" beside the recorded scenarios. The header's first line names the
engine's version and the source files its format comes from; then:

    # expect:     VERDICT DETAIL STAGE
    # numbers:    capacity=39.38GiB weights=7.64GiB inflight=12 ...
    # confidence: medium
    # advice:     --max-num-seqs 9 | expandable_segments
    # noadvice:   lower the context | -fa on
    # evidence:   reserved_unallocated_bytes
    # exit:       1   (analyze's exit status; default 0)

numbers are checked against the report: capacity, requested, baseline,
weights, reserves, activations, in_flight (the ladder's rungs, bytes with
their unit, within 1%), inflight (requests in flight at the failure),
running and requests (the engine's count, its request lines), ready_line,
fatal (the kind of the log's fatal error), kv_tokens, engine, other_pid.
--logs-only runs the log rows alone (no preload, no recording).

Output: --format tap (for meson: one subtest per scenario, exit 0 once
they all ran), or table: one row per scenario (expected, got,
right/wrong) and the count right, exit 0 when every scenario is right, 1
otherwise. Exit 2: usage or a malformed scenario file.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

KEYS = ("title", "run", "env", "exit", "expect", "advice", "noadvice",
        "evidence", "confidence", "analyze", "why")


def parse(path):
    sc = {"name": os.path.splitext(os.path.basename(path))[0]}
    key = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t":
                if key is None:
                    raise ValueError(f"{path}:{n}: continuation without a key")
                sc[key] += " " + line.strip()
                continue
            k, sep, v = line.partition(":")
            k = k.strip()
            if not sep or k not in KEYS:
                raise ValueError(f"{path}:{n}: expected one of {KEYS}")
            key = k
            sc[k] = v.strip()
    for k in ("run", "exit", "expect"):
        if k not in sc:
            raise ValueError(f"{path}: missing '{k}'")
    want = sc["expect"].split()
    if len(want) != 3:
        raise ValueError(f"{path}: expect is VERDICT DETAIL STAGE")
    sc["want"] = want
    sc["argv"] = shlex.split(sc["run"])
    sc["envs"] = dict(e.split("=", 1) for e in shlex.split(sc.get("env", "")))
    sc["exit"] = int(sc["exit"])
    sc["evidence"] = sc.get("evidence", "").split()
    sc["advice"] = [a.strip() for a in sc.get("advice", "").split(" | ")
                    if a.strip()]
    sc["noadvice"] = [a.strip() for a in sc.get("noadvice", "").split(" | ")
                      if a.strip()]
    sc["analyze"] = shlex.split(sc.get("analyze", ""))
    return sc


def base_env(args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FAKECUDA_", "FAKEHIP_", "FAKENVML_",
                                "VRAMTRACE_"))}
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env["FAKECUDA_MEM"] = "80G"
    return env


def run_one(args, tmp, sc):
    """Records and diagnoses one scenario; returns (got, note)."""
    env = base_env(args)
    out = os.path.join(tmp, sc["name"])
    env["FAKECUDA_SHARE"] = out + ".cards"
    env.update(sc["envs"])
    prog = os.path.join(args.bin_dir, sc["argv"][0])
    cmd = [args.vramtrace, "record", "--wait-children", "5", "-o", out,
           "--", prog] + sc["argv"][1:]
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return None, "the recorded run did not end within 60 s"
    with open(out + ".log", "w") as f:
        f.write(p.stdout)
    if p.returncode != sc["exit"]:
        return None, (f"broken: the run exited {p.returncode}, the scenario "
                      f"says {sc['exit']} (log: {out}.log)")
    a = subprocess.run([args.vramtrace, "analyze", "--format", "json", out]
                       + sc["analyze"],
                       env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if a.returncode != 0:
        return None, "analyze failed: " + a.stderr.strip()
    got, bad = judge(json.loads(a.stdout).get("diagnosis") or {}, sc)
    return got, "; ".join(bad)


def judge(d, sc):
    """The diagnosis d against the scenario: (got: verdict, detail, stage
    and what else differs in what it must hold — evidence, confidence —,
    bad: the advice it lacks or must not give)."""
    got = [d.get("verdict") or "?", d.get("detail") or "?",
           d.get("stage") or "?"]
    keys = {e.get("key") for e in d.get("evidence", [])}
    missing = [k for k in sc["evidence"] if k not in keys]
    if missing:
        got.append("no evidence " + ",".join(missing))
    if sc.get("confidence") and d.get("confidence") != sc["confidence"]:
        got.append(f"confidence {d.get('confidence')}")
    actions = d.get("actions", [])
    bad = []
    missing = [w for w in sc["advice"] if not any(w in x for x in actions)]
    if missing:
        bad.append("advice lacks " + "; ".join(repr(m) for m in missing) +
                   " (actions: " + " / ".join(actions) + ")")
    wrong = [w for w in sc.get("noadvice", []) if any(w in x for x in actions)]
    if wrong:
        bad.append("advice offers " + "; ".join(repr(m) for m in wrong) +
                   " (actions: " + " / ".join(actions) + ")")
    return got, bad


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30,
         "TiB": 1 << 40}


def parse_log(path, root):
    """A corpus log: its header (expect, numbers, ...) and its body."""
    name = os.path.relpath(path, root)[:-4]
    sc = {"name": "log:" + name, "path": path, "evidence": [], "advice": [],
          "numbers": {}, "exit": 0, "log": True}
    body = []
    header = True
    with open(path, "rb") as f:
        raw = f.read()
    for line in raw.split(b"\n"):
        if header and line.startswith(b"#"):
            text = line[1:].decode("utf-8", "replace").strip()
            k, sep, v = text.partition(":")
            k, v = k.strip(), v.strip()
            if not sep or k not in ("expect", "numbers", "confidence",
                                    "advice", "noadvice", "evidence",
                                    "exit", "case"):
                continue
            if k == "expect":
                sc["want"] = v.split()
            elif k == "numbers":
                for kv in v.split():
                    a, _, b = kv.partition("=")
                    sc["numbers"][a] = b
            elif k == "evidence":
                sc["evidence"] = v.split()
            elif k in ("advice", "noadvice"):
                sc[k] = [a.strip() for a in v.split(" | ") if a.strip()]
            elif k == "exit":
                sc["exit"] = int(v)
            else:
                sc[k] = v
            continue
        header = False
        body.append(line)
    sc["body"] = b"\n".join(body)
    if "want" not in sc or len(sc["want"]) != 3:
        return None
    return sc


def size_of(text):
    for u in ("TiB", "GiB", "MiB", "KiB", "B"):
        if text.endswith(u):
            return float(text[:-len(u)]) * UNITS[u]
    return float(text)


def check_numbers(report, want):
    """The numbers of want that report does not hold, as words."""
    d = report.get("diagnosis") or {}
    log = report.get("engine_log") or {}
    rungs = {r.get("rung"): r for r in d.get("ladder", [])}
    ooms = report.get("ooms") or []
    errs = log.get("errors") or []
    fatal = errs[log["fatal_error"]] if log.get("fatal_error") is not None \
        else {}
    got = {
        "capacity": d.get("capacity_bytes"),
        "requested": fatal.get("requested_bytes"),
        "baseline": (rungs.get("baseline") or {}).get("bytes"),
        "weights": (rungs.get("weights") or {}).get("bytes"),
        "reserves": (rungs.get("reserves") or {}).get("bytes"),
        "activations": (rungs.get("activations") or {}).get("bytes"),
        "in_flight": (rungs.get("in_flight") or {}).get("bytes"),
        "inflight": ooms[0].get("inflight") if ooms else None,
        "running": log.get("running"),
        "requests": log.get("requests"),
        "ready_line": (log.get("ready") or {}).get("line"),
        "fatal": fatal.get("kind"),
        "engine": d.get("engine"),
        "kv_tokens": next((x.get("value") for x in
                           reversed(log.get("facts") or [])
                           if x.get("kind") == "kv_cache_tokens"), None),
    }
    bad = []
    for k, v in want.items():
        if k == "other_pid":
            if int(v) not in (d.get("other_pids") or []):
                bad.append(f"other_pid {v} not named")
            continue
        if k not in got:
            bad.append(f"unknown number {k}")
            continue
        g = got[k]
        if k in ("fatal", "engine"):
            if str(g) != v:
                bad.append(f"{k} {g} (want {v})")
            continue
        if g is None:
            bad.append(f"{k} not in the report (want {v})")
            continue
        w = size_of(v)
        if abs(float(g) - w) > max(w * 0.01, 0.6 * (1 << 20) if
                                   v[-1] == "B" else 0.5):
            bad.append(f"{k} {g} (want {v})")
    return bad


def run_log(args, sc):
    """Diagnoses one corpus log from standard input; returns (got,
    note)."""
    a = subprocess.run([args.vramtrace, "analyze", "--log", "-", "--format",
                        "json"], input=sc["body"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if a.returncode != sc["exit"]:
        return None, (f"analyze exited {a.returncode} (want {sc['exit']}): "
                      + a.stderr.decode("utf-8", "replace").strip())
    if sc["exit"]:
        return sc["want"], ""
    report = json.loads(a.stdout)
    d = report.get("diagnosis") or {}
    got, bad = judge(d, sc)
    if d.get("source") != "log":
        return got, "diagnosis.source is not \"log\""
    return got, "; ".join(check_numbers(report, sc["numbers"]) + bad)


def right(want, got, note=""):
    """Verdict, detail and stage as expected, and nothing else wrong (the
    evidence, confidence or advice asked for)."""
    return got is not None and not note and len(got) == len(want) and all(
        w == "-" or w == g for w, g in zip(want, got))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--vramtrace", required=True)
    for o in ("--preload", "--fake-dir", "--bin-dir", "--tmp-root"):
        ap.add_argument(o)
    ap.add_argument("--dir", default=os.path.dirname(
        os.path.abspath(__file__)))
    ap.add_argument("--format", choices=("tap", "table"), default="table")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", action="store_true",
                    help="keep the recorded runs")
    ap.add_argument("--logs", help="the log corpus (tests/data/logs): "
                    "log-only rows beside the recorded ones")
    ap.add_argument("--logs-only", action="store_true",
                    help="only the log corpus's rows")
    ap.add_argument("names", nargs="*", help="only these scenarios")
    args = ap.parse_args()
    try:
        scs = [] if args.logs_only else [parse(p) for p in sorted(glob.glob(
            os.path.join(args.dir, "*.scn")))]
        if args.logs:
            for p in sorted(glob.glob(os.path.join(args.logs, "*",
                                                   "*.log"))):
                sc = parse_log(p, args.logs)
                if sc:
                    scs.append(sc)
    except (OSError, ValueError) as e:
        print(f"run_scenarios: {e}", file=sys.stderr)
        return 2
    if args.names:
        scs = [s for s in scs if s["name"] in args.names]
    if not args.logs_only and not (args.preload and args.fake_dir and
                                   args.bin_dir and args.tmp_root):
        print("run_scenarios: --preload, --fake-dir, --bin-dir and "
              "--tmp-root are needed for the recorded scenarios",
              file=sys.stderr)
        return 2
    tmp = None
    if args.tmp_root:
        os.makedirs(args.tmp_root, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix="scenarios-", dir=args.tmp_root)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        results = list(ex.map(lambda s: run_log(args, s) if s.get("log")
                              else run_one(args, tmp, s), scs))
    nright = sum(right(s["want"], g, n) for s, (g, n) in zip(scs, results))
    if args.format == "tap":
        print(f"1..{len(scs)}")
        for i, (s, (got, note)) in enumerate(zip(scs, results), 1):
            ok = right(s["want"], got, note)
            print(f"{'ok' if ok else 'not ok'} {i} - {s['name']}: expected "
                  f"{'/'.join(s['want'])}, got "
                  f"{'/'.join(got) if got else note}")
            if not ok:
                print(f"# {s.get('title', '')}")
                print(f"# why: {s.get('why', '')}")
                if got and note:
                    print(f"# {note}")
    else:
        w = max(len(s["name"]) for s in scs) if scs else 8
        print(f"{'scenario':<{w}}  {'expected':<42} {'got':<42} result")
        for s, (got, note) in zip(scs, results):
            ok = right(s["want"], got, note)
            print(f"{s['name']:<{w}}  {'/'.join(s['want']):<42} "
                  f"{'/'.join(got) if got else note:<42} "
                  f"{'right' if ok else 'WRONG'}")
            if not ok and got and note:
                print(f"{'':<{w}}  # {note}")
        nlog = sum(1 for s in scs if s.get("log"))
        lright = sum(right(s["want"], g, n) for s, (g, n) in zip(scs, results)
                     if s.get("log"))
        print(f"{nright} of {len(scs)} right ({lright} of {nlog} from the "
              f"log alone, {nright - lright} of {len(scs) - nlog} "
              f"recorded)")
    if tmp and (args.keep or nright < len(scs)):
        print(f"# runs kept in {tmp}")
    elif tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    # In TAP the subtests carry the verdicts; the status says only that
    # the corpus ran.
    return 0 if args.format == "tap" or nright == len(scs) else 1


if __name__ == "__main__":
    sys.exit(main())
