"""harness.py — what the install tests share: one result line per check,
a temporary directory per run (kept when a check failed or VRT_TEST_KEEP
is set) and the exit status (0 pass, 1 fail). python3 stdlib."""
import argparse
import os
import shutil
import sys
import tempfile

failures = []


def check(cond, what):
    print(("ok     " if cond else "FAILED ") + what, flush=True)
    if not cond:
        failures.append(what)


def html_page(source, path):
    """Whether path is `analyze --format html`'s one self-contained page:
    the style sheet and script of analyzer/report/html/, compiled into the
    command, and the report's JSON document in it."""
    try:
        page = open(path).read()
    except OSError:
        return False
    parts = [open(os.path.join(source, "analyzer", "report", "html", f)).read()
             for f in ("style.css", "app.js")]
    return (page.startswith("<!DOCTYPE html>") and
            all(part.strip() in page for part in parts) and
            '"vramtrace-report/1"' in page)


def run(options, prefix, body):
    """Parses the required --options (and --tmp-root), calls body(args,
    tmp) in a fresh temporary directory and exits with the result."""
    ap = argparse.ArgumentParser()
    for o in options + ["--tmp-root"]:
        ap.add_argument(o, required=True)
    args = ap.parse_args()
    os.makedirs(args.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=args.tmp_root)
    try:
        body(args, tmp)
    finally:
        if failures or os.environ.get("VRT_TEST_KEEP"):
            print("files kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
    sys.exit(1 if failures else 0)
