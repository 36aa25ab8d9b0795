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
    advice:  --max-model-len 63488 (was 131072) | --gpu-memory-utilization
    evidence: log_fatal_failure near_miss
    confidence: high
    analyze: --no-log
    why:     the reasoning an engineer who knows the engine would give,
             continued on indented lines

`run` names a program of the build's examples/ and its arguments; `env`
adds fake-driver settings (FAKECUDA_MEM=80G unless given); `exit` is the
status `vramtrace record` must end with (the server's, 128+N for signal
N) — a different one means the server did not do what the scenario
describes, and the scenario is reported broken; `expect` is the verdict,
the detail ("-": any) and the stage of `vramtrace analyze --format
json`'s diagnosis. Optional: `evidence`, keys the diagnosis's evidence
must hold (what the engine's log added, for one: record keeps the
server's output in output.log and analyze reads it); `confidence`, the
level it must have; `analyze`, more arguments for analyze (--no-log: the
trace alone); `advice`, separated by " | ", what its actions must say, in
the engine's own terms (each a substring of one action).

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

KEYS = ("title", "run", "env", "exit", "expect", "advice", "evidence",
        "confidence", "analyze", "why")


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
    env.update(sc["envs"])
    out = os.path.join(tmp, sc["name"])
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
    d = json.loads(a.stdout).get("diagnosis") or {}
    got = [d.get("verdict") or "?", d.get("detail") or "?",
           d.get("stage") or "?"]
    keys = {e.get("key") for e in d.get("evidence", [])}
    missing = [k for k in sc["evidence"] if k not in keys]
    if missing:
        got.append("no evidence " + ",".join(missing))
    if sc.get("confidence") and d.get("confidence") != sc["confidence"]:
        got.append(f"confidence {d.get('confidence')}")
    missing = [w for w in sc["advice"]
               if not any(w in x for x in d.get("actions", []))]
    if missing:
        return got, ("advice lacks " + "; ".join(repr(m) for m in missing) +
                     " (actions: " + " / ".join(d.get("actions", [])) + ")")
    return got, ""


def right(want, got, note=""):
    """Verdict, detail and stage as expected, and nothing else wrong (the
    evidence, confidence or advice asked for)."""
    return got is not None and not note and len(got) == len(want) and all(
        w == "-" or w == g for w, g in zip(want, got))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--vramtrace", "--preload", "--fake-dir", "--bin-dir",
              "--tmp-root"):
        ap.add_argument(o, required=True)
    ap.add_argument("--dir", default=os.path.dirname(
        os.path.abspath(__file__)))
    ap.add_argument("--format", choices=("tap", "table"), default="table")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", action="store_true",
                    help="keep the recorded runs")
    ap.add_argument("names", nargs="*", help="only these scenarios")
    args = ap.parse_args()
    try:
        scs = [parse(p) for p in sorted(glob.glob(
            os.path.join(args.dir, "*.scn")))]
    except (OSError, ValueError) as e:
        print(f"run_scenarios: {e}", file=sys.stderr)
        return 2
    if args.names:
        scs = [s for s in scs if s["name"] in args.names]
    os.makedirs(args.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="scenarios-", dir=args.tmp_root)
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as ex:
        results = list(ex.map(lambda s: run_one(args, tmp, s), scs))
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
        print(f"{nright} of {len(scs)} right")
    if args.keep or nright < len(scs):
        print(f"# runs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    # In TAP the subtests carry the verdicts; the status says only that
    # the corpus ran.
    return 0 if args.format == "tap" or nright == len(scs) else 1


if __name__ == "__main__":
    sys.exit(main())
