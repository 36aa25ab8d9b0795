#!/usr/bin/env python3
"""run_logonly.py — `vramtrace analyze --log FILE|-` without a trace (TAP).

The log-only path end to end, and its bad inputs:

  text, JSON and HTML from one log of tests/data/logs: the same verdict;
    JSON's "source" and diagnosis.source are "log"; exit 0
  standard input (--log -), from a file and from a pipe: the same report
  a run directory that holds only output.log: a warning, then the log's
    report
  a log no engine wrote: exit 0, inconclusive (not_an_engine_log)
  a log with no size line: nothing it did not print is said to be 0 B
  empty, binary, a directory, a missing file, a FIFO no writer opens:
    exit 1, one "vramtrace: error:" line naming the file
  a 10 MB line, invalid UTF-8, NUL bytes inside lines, CR line ends:
    exit 0, and the JSON report parses
  --format perfetto|folded and --rules: exit 2 (they need a trace)

Usage: run_logonly.py --vramtrace EXE --src DIR (tests/cli)
Exit 0 pass, 1 fail.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from run_cli import Tap  # the same TAP writer as the other cli tests


def run(args, stdin=None, timeout=60):
    t0 = time.monotonic()
    p = subprocess.run(args, input=stdin, capture_output=True,
                       timeout=timeout,
                       stdin=None if stdin is not None else
                       subprocess.DEVNULL)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"), time.monotonic() - t0)


def as_json(out):
    try:
        return json.loads(out)
    except ValueError:
        return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    vt = a.vramtrace
    logs = os.path.join(a.src, "..", "data", "logs")
    tap = Tap()
    tmp = tempfile.mkdtemp(prefix="vrt-logonly-")
    try:
        body(tap, vt, logs, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


def body(tap, vt, logs, tmp):
    log = os.path.join(logs, "vllm", "v0.11-context.log")
    with open(log, "rb") as f:
        raw = f.read()

    # One log in each format.
    rc, text, err, _ = run([vt, "analyze", "--log", log])
    tap.ok(rc == 0 and text.startswith(
        "DIAGNOSIS: kv_cache (context_too_long) - request stage"),
        "text: exit 0, the verdict and stage first", f"{rc}\n{text}{err}")
    tap.ok("every number read from the log" in text,
           "text: the ladder says its numbers come from the log", text)
    rc, out, err, _ = run([vt, "analyze", "--format", "json", "--log", log])
    j = as_json(out)
    tap.ok(rc == 0 and j is not None and j.get("source") == "log" and
           j["diagnosis"].get("source") == "log" and
           j["diagnosis"].get("verdict") == "kv_cache",
           "json: source log, diagnosis.source log, the same verdict",
           f"{rc}\n{out[:2000]}{err}")
    rc, html, err, _ = run([vt, "analyze", "--format", "html", "--log", log])
    tap.ok(rc == 0 and html.lstrip().lower().startswith("<!doctype html") and
           "context_too_long" in html,
           "html: a page with the verdict", f"{rc}\n{err}")

    # Standard input: from a file and from a pipe, the same report.
    with open(log, "rb") as f:
        p = subprocess.run([vt, "analyze", "--format", "json", "--log", "-"],
                           stdin=f, capture_output=True, timeout=60)
    js = as_json(p.stdout.decode("utf-8", "replace"))
    tap.ok(p.returncode == 0 and js is not None and
           js["diagnosis"] == j["diagnosis"],
           "--log - from a file: the same diagnosis",
           p.stderr.decode("utf-8", "replace"))
    rc, out, err, _ = run([vt, "analyze", "--format", "json", "--log", "-"],
                          stdin=raw)
    jp = as_json(out)
    tap.ok(rc == 0 and jp is not None and jp["diagnosis"] == j["diagnosis"],
           "--log - from a pipe: the same diagnosis", f"{rc}\n{err}")

    # A run directory holding only the log.
    rd = os.path.join(tmp, "run")
    os.mkdir(rd)
    shutil.copy(log, os.path.join(rd, "output.log"))
    rc, out, err, _ = run([vt, "analyze", rd])
    tap.ok(rc == 0 and "analysed alone" in err and
           out.replace(os.path.join(rd, "output.log"), log) == text,
           "a run directory with only output.log: a warning, the log's "
           "report", f"{rc}\n{err}")

    # A log with no size line (llama-server under Ollama at its default
    # verbosity): what it did not print is "not in log", never 0 B.
    rc, out, err, _ = run([vt, "analyze", "--log", os.path.join(
        logs, "ollama", "v0.32-default-verbosity.log")])
    tap.ok(rc == 0 and "budgets_not_in_log" in out and " 0 B" not in out,
           "no size in the log: nothing said to be 0 B", f"{rc}\n{out}{err}")

    # Not an engine's log.
    rc, out, err, _ = run([vt, "analyze", "--format", "json", "--log",
                           os.path.join(logs, "generic", "nginx.log")])
    jn = as_json(out)
    tap.ok(rc == 0 and jn is not None and
           jn["diagnosis"].get("verdict") == "inconclusive" and
           jn["diagnosis"].get("detail") == "not_an_engine_log",
           "a web server's log: exit 0, inconclusive (not_an_engine_log)",
           f"{rc}\n{out[:1500]}{err}")

    # Inputs refused: exit 1, one error line naming the file.
    def refused(path, words, name):
        rc, out, err, _ = run([vt, "analyze", "--log", path], timeout=30)
        lines = err.strip().splitlines()
        tap.ok(rc == 1 and out == "" and len(lines) == 1 and
               lines[0].startswith("vramtrace: error: " + path) and
               words in lines[0], name, f"{rc}\n{out[:500]}{err}")

    empty = os.path.join(tmp, "empty.log")
    open(empty, "wb").close()
    refused(empty, "the log is empty", "an empty file: exit 1")
    blank = os.path.join(tmp, "blank.log")
    with open(blank, "wb") as f:
        f.write(b"\n\n\n")
    refused(blank, "the log is empty", "blank lines only: exit 1")
    binary = os.path.join(tmp, "binary.log")
    with open(binary, "wb") as f:
        f.write(bytes((i * 37 + 11) % 256 for i in range(20000)))
    refused(binary, "not a text log", "binary bytes: exit 1")
    refused(tmp, "a directory", "a directory: exit 1")
    refused(os.path.join(tmp, "missing.log"), "No such file",
            "a missing file: exit 1")
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    t0 = time.monotonic()
    refused(fifo, "no writer", "a FIFO no writer opens: exit 1")
    tap.ok(time.monotonic() - t0 < 20, "the FIFO's wait is bounded",
           f"{time.monotonic() - t0:.1f} s")

    # Odd text: still a report, and JSON that parses.
    def odd(name, data, check=None):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        rc, out, err, took = run([vt, "analyze", "--format", "json",
                                  "--log", path])
        jo = as_json(out)
        good = rc == 0 and jo is not None and (check is None or check(jo))
        tap.ok(good, f"{name}: exit 0, JSON that parses ({took:.2f} s)",
               f"{rc}\n{out[:1500]}{err[:1500]}")

    odd("one-10MB-line.log", b"x" * 10_000_000 + b"\n")
    odd("long-line-then-oom.log",
        b"INFO " + b"y" * 3_000_000 + b"\n" + raw,
        lambda jo: jo["diagnosis"].get("verdict") == "kv_cache")
    bad = raw.replace(b"meta-llama/Llama-3.1-8B-Instruct",
                      b"meta-llama/\xff\xfeLlama\xc3\x28-8B")
    odd("invalid-utf8.log", bad,
        lambda jo: jo["diagnosis"].get("verdict") == "kv_cache")
    odd("nul-in-lines.log", raw.replace(b"INFO", b"IN\x00FO", 3),
        lambda jo: jo["diagnosis"].get("verdict") == "kv_cache")
    odd("crlf.log", raw.replace(b"\n", b"\r\n"),
        lambda jo: jo["diagnosis"] == j["diagnosis"])
    odd("no-final-newline.log", raw.rstrip(b"\n"),
        lambda jo: jo["diagnosis"].get("verdict") == "kv_cache")

    # Options that need a trace: usage errors.
    for args, name in (
            (["--format", "perfetto"], "--format perfetto"),
            (["--format", "folded"], "--format folded"),
            (["--rules", os.path.join(tmp, "x.rules")], "--rules")):
        rc, out, err, _ = run([vt, "analyze"] + args + ["--log", log])
        tap.ok(rc == 2 and "needs a trace" in err,
               f"{name} with a log alone: exit 2", f"{rc}\n{err}")


if __name__ == "__main__":
    sys.exit(main())
