#!/usr/bin/env python3
"""run_schema.py — every key of the `vramtrace-report/1` JSON report is
written down in docs/design.md (TAP; python3 stdlib only).

Makes every trace of tests/cli/traces with mktrace, runs `vramtrace analyze
--format json` on each run plain, with a model config and --explain, and
with an engine log (so the diagnosis's model block and engine_log are
filled), walks every key of every answer and checks that docs/design.md
names it in quotes. Keys that are names of data (the phases of a
by-phase map, the families, the engine log's config) are checked as the
names they are. The keys report_json.c writes as literals are checked too,
so a key no trace reaches still has to be listed.

    run_schema.py --vramtrace EXE --mktrace EXE --src DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

# Maps keyed by phase name: their keys are data, documented as "<phase>".
PHASE_MAPS = {"phases", "by_phase", "live_by_phase", "min_by_phase",
              "max_by_phase"}


def walk(value, parent, keys):
    if isinstance(value, dict):
        for k, v in value.items():
            if parent not in PHASE_MAPS:
                keys.add(k)
            walk(v, k, keys)
    elif isinstance(value, list):
        for v in value:
            walk(v, parent, keys)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--mktrace", required=True)
    ap.add_argument("--src", required=True, help="tests/cli")
    a = ap.parse_args()
    a.vramtrace = os.path.abspath(a.vramtrace)
    a.mktrace = os.path.abspath(a.mktrace)
    a.src = os.path.abspath(a.src)
    root = os.path.dirname(os.path.dirname(os.path.abspath(a.src)))
    data = os.path.join(root, "tests", "data")
    with open(os.path.join(root, "docs", "design.md")) as f:
        doc = f.read()
    n = 0
    failed = 0

    def ok(cond, name, detail=""):
        nonlocal n, failed
        n += 1
        failed += not cond
        print(f"{'ok' if cond else 'not ok'} {n} - {name}")
        if not cond and detail:
            for line in detail.splitlines():
                print(f"# {line}")

    keys = set()
    answers = 0
    with tempfile.TemporaryDirectory(prefix="vrt-schema-") as tmp:
        traces = os.path.join(a.src, "traces")
        for script in sorted(os.listdir(traces)):
            if script.endswith(".mkt"):
                subprocess.run([a.mktrace, os.path.join(traces, script)],
                               cwd=tmp, capture_output=True, check=False)
        runs = sorted(d for d in os.listdir(tmp)
                      if os.path.isdir(os.path.join(tmp, d)))
        variants = [
            [],
            ["--model-config",
             os.path.join(data, "models", "deepseek-r1.json"), "--explain"],
            ["--log", os.path.join(data, "logs", "vllm", "v0.11.log")],
            ["--log",
             os.path.join(data, "logs", "vllm", "v0.11-kv-refusal.log"),
             "--model-config", os.path.join(data, "llama3-8b.config.json")],
        ]
        for run in runs:
            for extra in variants:
                p = subprocess.run([a.vramtrace, "analyze", "--format",
                                    "json"] + extra + [run], cwd=tmp,
                                   capture_output=True, text=True,
                                   timeout=60)
                if p.returncode != 0:
                    continue
                report = json.loads(p.stdout)
                if report.get("schema") != "vramtrace-report/1":
                    continue
                answers += 1
                walk(report, None, keys)
    ok(answers >= 20 and {"diagnosis", "engine_log", "model"} <= keys,
       f"analyze --format json answered on {answers} runs and variants, "
       "the model and the engine log among them")
    src = os.path.join(root, "analyzer", "report", "report_json.c")
    with open(src) as f:
        literal = set(re.findall(r'vrt_json_key\(\s*&?w,\s*"([^"]+)"\)',
                                 f.read()))
    ok(len(literal) > 50, f"{len(literal)} literal keys in report_json.c")
    keys |= literal
    for k in sorted(keys):
        ok(f'"{k}"' in doc, f'docs/design.md lists "{k}"')
    print(f"1..{n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
