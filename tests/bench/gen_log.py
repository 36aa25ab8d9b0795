#!/usr/bin/env python3
"""gen_log.py — a large engine log for the log reader's benchmark.

Grows one log of the corpus (default tests/data/logs/vllm/
v0.11-concurrency.log: a vLLM 0.11 server that served for a while, then
ran out of memory with 14 requests running) to about MIB mebibytes: its
start-up lines as they are, then its serving lines (uvicorn's access
lines, the periodic "Running: <n> reqs" metrics) repeated with the clock
moving one second a block, then its end (the fatal error) dated after
the last of them. The verdict, stage and numbers of the grown log are the
small one's (the requests counted grow with it).

    gen_log.py OUT [--mib N] [--log FILE]

python3 stdlib only; writes at disk speed (blocks formatted once).
"""
import argparse
import datetime
import os
import re
import sys

STAMP = re.compile(rb"(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)")
START = datetime.datetime(2026, 3, 11, 9, 3, 0)


def split(lines):
    """The log's header comments dropped; (start-up, serving, end)."""
    body = [ln for ln in lines if not ln.startswith(b"#")]
    ready = next(i for i, ln in enumerate(body)
                 if b"Application startup complete" in ln)
    fatal = next(i for i, ln in enumerate(body)
                 if b" ERROR " in ln and i > ready)
    return body[:ready + 1], body[ready + 1:fatal], body[fatal:]


def dated(lines, when):
    stamp = when.strftime("%m-%d %H:%M:%S").encode()
    return b"".join(STAMP.sub(stamp, ln, count=1) for ln in lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--mib", type=int, default=1024)
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--log", default=os.path.join(
        here, "..", "data", "logs", "vllm", "v0.11-concurrency.log"))
    a = ap.parse_args()
    with open(a.log, "rb") as f:
        lines = f.read().splitlines(keepends=True)
    head, serving, end = split(lines)
    # Blocks of the serving lines; the last block before the end is the
    # serving lines once, so the last metrics line before the failure is
    # the small log's.
    block_lines = serving * 64
    target = a.mib << 20
    with open(a.out, "wb", buffering=1 << 20) as out:
        out.write(b"".join(head))
        n = out.tell()
        when = START
        tail = dated(serving, when)
        mark = START.strftime("%m-%d %H:%M:%S").encode()
        block = dated(block_lines, START)
        while n + len(tail) < target:
            chunk = block.replace(
                mark, when.strftime("%m-%d %H:%M:%S").encode())
            out.write(chunk)
            n += len(chunk)
            when += datetime.timedelta(seconds=1)
        out.write(dated(serving, when))
        when += datetime.timedelta(seconds=1)
        out.write(dated(end, when))
    return 0


if __name__ == "__main__":
    sys.exit(main())
