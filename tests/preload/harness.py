"""harness.py — what the Python drivers of the preload tests share
(python3 stdlib only; the run_*.py of this directory import it, running
with it as their own directory).

- Reporting: check() / skip() print one "ok" / "FAILED" / "skip" line per
  check and keep the failures; Tap prints the same as TAP for the drivers
  meson reads as TAP.
- options(): the argument parser with the options a driver requires.
- record_env(): the environment `vramtrace record` runs a test program in:
  the fake drivers first on the library path and the preload under test.
- run(): a command with its output captured, stopping the driver when it
  exits otherwise than expected.
- scratch(): the driver's temporary directory under --tmp-root, kept when
  a check failed (or VRT_TEST_KEEP is set), and the exit status.
- poll(): a bounded wait for a condition.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

failures = []


def check(cond, what):
    """One check: "ok     WHAT" or "FAILED WHAT"; returns cond."""
    print(("ok     " if cond else "FAILED ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def skip(what):
    print("skip   " + what, flush=True)


class Tap:
    """Numbered "ok N - name" lines; a failure's detail as # lines."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        print(("ok" if cond else "not ok") + f" {self.n} - {name}")
        if not cond:
            self.failed += 1
            for line in str(detail).splitlines():
                print(f"# {line}")
        sys.stdout.flush()
        return cond

    def note(self, msg):
        for line in str(msg).splitlines():
            print(f"# {line}")
        sys.stdout.flush()

    def done(self):
        """The plan line; the exit status."""
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def poll(fn, tries=150, delay=0.1):
    """fn() until it returns a true value, at most tries times."""
    for _ in range(tries):
        v = fn()
        if v:
            return v
        time.sleep(delay)
    return None


def options(*required, **kw):
    """An argument parser with each of required ("--vramtrace", ...) as a
    required option; the driver adds its own and parses."""
    ap = argparse.ArgumentParser(**kw)
    for o in required:
        ap.add_argument(o, required=True)
    return ap


def record_env(args, extra=None, clean=(), drop=("VRAMTRACE_OUT",)):
    """The caller's environment with the fake drivers (args.fake_dir) first
    on the library path and the preload under test (args.preload) named
    for `vramtrace record`. drop: variables removed (a run directory or
    preload of the caller's must not leak in); clean: prefixes of
    variables removed (the fakes' and vramtrace's settings, for a driver
    that sets its own); extra: set last."""
    env = {k: v for k, v in os.environ.items()
           if not (clean and k.startswith(tuple(clean)))}
    for k in drop:
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + os.environ.get(
        "LD_LIBRARY_PATH", "")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env.update(extra or {})
    return env


def run(cmd, env, ok_codes=(0,), timeout=100):
    """Runs cmd (printed first); its stdout. Another exit status than
    ok_codes prints both outputs and stops the driver."""
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, text=True)
    if p.returncode not in ok_codes:
        print(p.stdout + p.stderr)
        raise SystemExit(f"command failed with exit {p.returncode}")
    return p.stdout


def scratch(args, prefix, body):
    """body(tmp) in a new directory under args.tmp_root; the exit status:
    1 when a check failed (the directory is then kept and named), else 0."""
    os.makedirs(args.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=prefix, dir=args.tmp_root)
    try:
        body(tmp)
    finally:
        if failures or os.environ.get("VRT_TEST_KEEP"):
            print("files kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0
