#!/usr/bin/env python3
"""run_race.py — request threads racing for memory: race_sim's 4 threads
allocate at the same moment, 3 fit and the 4th is refused. Run 20 times:
every run must be `concurrency` with 4 in flight and no memory of other
processes (the allocations that succeeded on the other threads just
before the failure are in the replay's live set at it)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import check, options, record_env, scratch  # noqa: E402

RUNS = 20


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--bin-dir",
                 "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        env = record_env(args, {"FAKECUDA_MEM": "80G"})
        got = []
        for i in range(RUNS):
            out = os.path.join(tmp, f"run{i}")
            subprocess.run([args.vramtrace, "record", "-o", out, "--",
                            os.path.join(args.bin_dir, "race_sim"),
                            "--weights-gib", "40", "--kv-gib", "24",
                            "--act-gib", "4.5", "--threads", "4"],
                           env=env, capture_output=True, timeout=120)
            p = subprocess.run([args.vramtrace, "analyze", "--format",
                                "json", out], capture_output=True,
                               text=True, timeout=120)
            try:
                rep = json.loads(p.stdout)
                d = rep["diagnosis"]
                ooms = rep.get("ooms") or [{}]
                got.append((d["verdict"], ooms[0].get("inflight"),
                            d["devices"][0].get("other_processes_bytes")))
            except (ValueError, KeyError, IndexError, TypeError):
                got.append(("unreadable", None, None))
        right = sum(1 for v, n, o in got
                    if v == "concurrency" and n == 4 and not o)
        check(right == RUNS,
              f"racing threads: concurrency with 4 in flight and no other "
              f"process's memory in {right} of {RUNS} runs "
              f"({sorted(set(got))})")

    return scratch(args, "race-", body)


if __name__ == "__main__":
    sys.exit(main())
