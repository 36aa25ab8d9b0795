#!/usr/bin/env python3
"""run_plan_proof.py — `vramtrace plan` against what really happens
(python3 stdlib only).

For each example server (vLLM-, SGLang- and llama.cpp-shaped) and for a
plain and a caching allocator: record the server once at its base
settings on the fake GPU, ask `vramtrace plan --format json` for a grid
of configurations, then record every configuration of the grid and
compare, row by row:

  * fits: the plan says yes or tight exactly when the recorded server ran
    through its traffic (exit 0), no exactly when it did not (out of
    memory, or the engine refused its settings);
  * peak: where both say it fits, the predicted peak of each device is
    within 5% of the recorded one.

It prints the table of predicted against recorded and emits TAP (one
subtest per configuration) or, with --format table, only the table and
an exit status of 1 when a row is wrong. --cases picks cases by name
(e.g. vllm-plain) for a quick subset.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

TOLERANCE = 0.05

# name, program, allocator flag value, base arguments, grid (engine flag,
# values), fake-driver environment. The grids are chosen to hold rows that
# fit, rows that break (in flight, reserves) and rows the engine refuses.
CASES = [
    ("vllm", "serve_sim",
     ["serve", "sim-model", "--model-size-gib", "14",
      "--gpu-memory-utilization", "0.9", "--max-model-len", "8192",
      "--max-num-seqs", "4", "--max-num-batched-tokens", "2048",
      "--act-kib-per-token", "256", "--kv-kib-per-token", "128",
      "--prompt-len", "4096", "--concurrent-requests", "6",
      "--cuda-graph-mib", "1024"],
     [("--gpu-memory-utilization", ["0.8", "0.9", "0.95"]),
      ("--max-num-seqs", ["2", "6"]),
      ("--max-model-len", ["8192", "524288"])]),
    ("sglang", "sglang_sim",
     ["--model-size-gib", "14", "--mem-fraction-static", "0.85",
      "--context-length", "8192", "--max-running-requests", "4",
      "--chunked-prefill-size", "8192", "--kv-kib-per-token", "128",
      "--act-kib-per-token", "256", "--prompt-len", "8192",
      "--concurrent-requests", "6", "--cuda-graph-max-bs", "64",
      "--cuda-graph-kib-per-bs", "16384"],
     [("--mem-fraction-static", ["0.15", "0.9", "0.93"]),
      ("--max-running-requests", ["2", "8"]),
      ("--cuda-graph-max-bs", ["64", "320"])]),
    ("llama", "llama_sim",
     ["-ngl", "32", "--model-layers", "32", "--layer-mib", "1536",
      "-c", "32768", "--kv-kib-per-token", "128",
      "--compute-kib-per-token", "2048", "-np", "4",
      "--concurrent-requests", "6", "--act-mib", "3072"],
     [("-ngl", ["16", "32"]), ("-c", ["32768", "262144"]),
      ("-np", ["2", "6"]), ("-ub", ["512", "2048"])]),
]
# the plain allocator, and each engine's caching one
ALLOCATORS = {"vllm": ["plain", "caching"], "sglang": ["plain", "caching"],
              "llama": ["plain", "pool-vmm"]}


def base_env(args):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FAKECUDA_", "FAKEHIP_", "FAKENVML_",
                                "VRAMTRACE_"))}
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env["FAKECUDA_MEM"] = "80G"
    # no sampler thread: the runs are short and their peaks exact
    env["VRAMTRACE_SAMPLE_MS"] = "0"
    return env


def with_flag(argv, flag, value):
    """argv with flag's value replaced (or appended)."""
    out = list(argv)
    for i, a in enumerate(out[:-1]):
        if a == flag:
            out[i + 1] = value
            return out
    return out + [flag, value]


def record(args, tmp, name, prog, argv):
    """Records one run; returns (exit status, device peaks or None)."""
    run_dir = os.path.join(tmp, name)
    cmd = [args.vramtrace, "record", "--wait-children", "5", "-o", run_dir,
           "--", os.path.join(args.bin_dir, prog)] + argv
    p = subprocess.run(cmd, env=base_env(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    with open(run_dir + ".log", "w") as f:
        f.write(" ".join(cmd) + "\n" + p.stdout)
    a = subprocess.run([args.vramtrace, "analyze", "--format", "json",
                        run_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    peaks = None
    if a.returncode == 0:
        doc = json.loads(a.stdout)
        peaks = {d["id"]: d["peak"]["tracked_bytes"]
                 for d in doc.get("devices", [])}
    return p.returncode, peaks, run_dir


def plan(args, run_dir, grid):
    cmd = [args.vramtrace, "plan", "--format", "json", "--model-config",
           args.model_config, run_dir]
    for flag, values in grid:
        cmd += ["--set", flag + "=" + ",".join(values)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {p.returncode}: "
                           f"{p.stderr}")
    return json.loads(p.stdout)


def run_case(args, tmp, engine, prog, base, grid, allocator):
    """Returns a list of result rows for one (engine, allocator)."""
    name = f"{engine}-{allocator}"
    base = base + ["--allocator", allocator]
    rc, _, base_dir = record(args, tmp, name + "-base", prog, base)
    if rc != 0:
        return [(name, 0, "base run", None, None, None, None,
                 f"the base run exited {rc} (log: {base_dir}.log)")]
    doc = plan(args, base_dir, grid)
    flag_of = {k["name"]: k["flag"] for k in doc["knobs"] if k["flag"]}
    jobs = []
    for row in doc["configurations"]:
        argv = list(base)
        label = []
        for knob, value in row["settings"].items():
            flag = flag_of.get(knob)
            if flag and any(flag == g[0] for g in grid):
                argv = with_flag(argv, flag, str(value))
                label.append(f"{flag} {value}")
        jobs.append((row, argv, " ".join(label)))
    results = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(record, args, tmp, f"{name}-{row['index']}", prog,
                          argv) for row, argv, _ in jobs]
        for (row, argv, label), fut in zip(jobs, futs):
            rc, peaks, run_dir = fut.result()
            pred_fit = row["fits"] in ("yes", "tight")
            rec_fit = rc == 0
            pred = {d["id"]: d["peak_bytes"] for d in row["devices"]}
            note = ""
            ok = pred_fit == rec_fit and row["fits"] != "unsure"
            worst = None
            if ok and pred_fit and rec_fit:
                for dev, p_bytes in pred.items():
                    r_bytes = (peaks or {}).get(dev)
                    if not r_bytes:
                        ok, note = False, f"device {dev} not recorded"
                        continue
                    err = (p_bytes - r_bytes) / r_bytes
                    if worst is None or abs(err) > abs(worst):
                        worst = err
                    if abs(err) > TOLERANCE:
                        ok = False
                        note = f"device {dev} off by {err:+.1%}"
            elif not ok:
                note = (f"plan says {row['fits']}"
                        f"{' (' + row['breaks'] + ')' if row['breaks'] else ''}"
                        f", the run exited {rc} (log: {run_dir}.log)")
            results.append((name, row["index"], label,
                            pred.get(0), (peaks or {}).get(0),
                            (row["fits"], row["breaks"]), rc,
                            note if not ok else "", ok, worst))
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for o in ("--vramtrace", "--preload", "--fake-dir", "--bin-dir",
              "--model-config", "--tmp-root"):
        ap.add_argument(o, required=True)
    ap.add_argument("--format", choices=("tap", "table"), default="table")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cases", default="",
                    help="comma-separated case names (engine-allocator)")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    want = set(filter(None, args.cases.split(",")))
    os.makedirs(args.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="plan-proof-", dir=args.tmp_root)
    rows = []
    for engine, prog, base, grid in CASES:
        for allocator in ALLOCATORS[engine]:
            if want and f"{engine}-{allocator}" not in want:
                continue
            rows += run_case(args, tmp, engine, prog, base, grid, allocator)
    gib = 1 << 30
    lines = [f"{'case':<15} {'#':>3} {'settings':<58} {'predicted':>9} "
             f"{'recorded':>9} {'diff':>6} {'plan':<16} {'run':>4} result"]
    for r in rows:
        name, idx, label, pred, rec, fits, rc, note = r[:8]
        ok = r[8] if len(r) > 8 else False
        worst = r[9] if len(r) > 9 else None
        p = f"{pred / gib:.2f}" if pred else "-"
        q = f"{rec / gib:.2f}" if rec else "-"
        d = f"{worst:+.1%}" if worst is not None else "-"
        plan_s = (f"{fits[0]}" + (f":{fits[1]}" if fits and fits[1] else "")
                  if fits else "-")
        lines.append(f"{name:<15} {idx:>3} {label:<58} {p:>9} {q:>9} "
                     f"{d:>6} {plan_s:<16} {rc if rc is not None else '-':>4} "
                     f"{'right' if ok else 'WRONG ' + note}")
    nright = sum(1 for r in rows if len(r) > 8 and r[8])
    worst_all = max((abs(r[9]) for r in rows if len(r) > 9 and r[9]
                     is not None), default=0.0)
    summary = (f"{nright} of {len(rows)} configurations right; largest peak "
               f"error {worst_all:.2%} (tolerance {TOLERANCE:.0%})")
    if args.format == "tap":
        print(f"1..{len(rows)}")
        for n, (r, line) in enumerate(zip(rows, lines[1:]), 1):
            ok = len(r) > 8 and r[8]
            print(f"{'ok' if ok else 'not ok'} {n} - {line}")
        print("# " + lines[0])
        for line in lines[1:]:
            print("# " + line)
        print("# " + summary)
    else:
        print("\n".join(lines))
        print(summary)
    if args.keep or nright < len(rows):
        print(f"# runs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if args.format == "tap" or nright == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
