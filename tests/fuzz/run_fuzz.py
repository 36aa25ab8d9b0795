#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time (the `slow` suite).

    run_fuzz.py FUZZER CORPUS_DIR ARTIFACT_DIR [SEED...]

The committed corpus, plus any SEED files kept elsewhere in the tree (the
built-in rules file; a directory: each of its files), is copied to a
scratch directory first, so new inputs never land in the source tree. FUZZ_SECONDS (default 60) bounds the run.
Prints one line, "NAME: N executions, M crashes in S s", and exits 1 when
the fuzzer found a crash (the input is kept under ARTIFACT_DIR).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    fuzzer, corpus, artifacts = sys.argv[1:4]
    seeds = sys.argv[4:]
    name = os.path.basename(fuzzer)
    seconds = int(os.environ.get("FUZZ_SECONDS", "60"))
    os.makedirs(artifacts, exist_ok=True)
    prefix = os.path.join(artifacts, name + "-")
    before = set(os.listdir(artifacts))
    with tempfile.TemporaryDirectory() as scratch:
        work = os.path.join(scratch, "corpus")
        shutil.copytree(corpus, work)
        for seed in seeds:
            for path in ([os.path.join(seed, f) for f in
                          sorted(os.listdir(seed))]
                         if os.path.isdir(seed) else [seed]):
                shutil.copy(path, os.path.join(
                    work, "seed-" + os.path.basename(seed) + "-" +
                    os.path.basename(path)))
        t0 = time.monotonic()
        p = subprocess.run(
            [fuzzer, work, f"-max_total_time={seconds}", "-timeout=10",
             "-print_final_stats=1", f"-artifact_prefix={prefix}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace")
        elapsed = time.monotonic() - t0
    m = re.findall(r"stat::number_of_executed_units:\s*(\d+)", p.stdout)
    execs = int(m[-1]) if m else 0
    new = sorted(set(os.listdir(artifacts)) - before)
    crashes = [f for f in new if f.startswith(name + "-")]
    if p.returncode != 0 and not crashes:
        crashes = ["(exit %d)" % p.returncode]
    if crashes:
        sys.stdout.write(p.stdout[-8000:])
        for c in crashes:
            print(f"{name}: crash input: {os.path.join(artifacts, c)}")
    print(f"{name}: {execs} executions, {len(crashes)} crashes "
          f"in {elapsed:.0f} s")
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
