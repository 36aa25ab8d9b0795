#!/usr/bin/env python3
"""run_case.py — one preload test case (python3 stdlib only).

    run_case.py --name NAME --fake-dir DIR --tmp-root DIR
                [--vramtrace EXE --preload LIB] [--kind workload|sigkill]
                [--env K=V]... [--reference PROGRAM] -- CLIENT [ARGS...]

workload kind:
  1. runs CLIENT --expect bare.json without the preload: the fake driver and
     the client's own checks must pass, and the client writes what the
     analyzer has to report (see workload.c for the rules);
  2. with --reference, runs that program (same ARGS) bare too: both
     expectations must be identical (the ctypes port against the C one);
  3. with --vramtrace: `vramtrace record -o RUN -- CLIENT ARGS --expect
     rec.json` (the client must pass and expect the same under the preload:
     the preload is transparent), then `vramtrace analyze RUN --format json`,
     compared exactly with the expectation (one file, or {"parts": [...]}
     merged: see load_expectation): per device (and vendor, where the
     expectation names it) and family allocs,
     frees, failed, peak_bytes, live_bytes_end (-1 = not checked), host
     families, device totals, the ooms (api, device, requested_bytes, and
     free_bytes: present, and equal where the expectation knows it), the
     number of failures, and run.truncated == false.
sigkill kind: the client writes a pid file once its trace holds data; this
  script SIGKILLs that pid 0.5 s later (bare, then under record); `vramtrace
  analyze` must exit 0 with run.truncated == true, and its text output must
  say "truncated". No assertion depends on timing.
Without --vramtrace only steps 1-2 run (the fake and the clients alone).

Exit status: 0 pass, 1 fail (a diff on stdout). Temporary files live under
--tmp-root and are removed on success (kept on failure, path printed, or
always with VRT_TEST_KEEP=1).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import options

COUNTERS = ("allocs", "frees", "failed", "peak_bytes", "live_bytes_end")
DEVICE_FAMS = ("device", "async", "vmm", "managed")
HOST_FAMS = ("pinned", "registered")
RUN_TIMEOUT = 100


class CaseFailure(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def run(cmd, env, what, timeout=RUN_TIMEOUT):
    log("$ " + " ".join(cmd))
    try:
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CaseFailure(f"{what}: timed out after {timeout} s")
    out, err = p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    if err.strip():
        log(err.rstrip()[-4000:])
    if p.returncode != 0:
        log(out.rstrip()[-4000:])
        raise CaseFailure(f"{what}: exit status {p.returncode}")
    return out


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise CaseFailure(f"{what}: {path}: {e}")


def load_expectation(path, what):
    """An expectation, or {"parts": [FILE...]} merged into one (a process
    running two workloads at once, CUDA and HIP): devices and ooms are
    concatenated, counters and failures summed; a host peak is checked
    only when a single part touched that family (overlapping peaks depend
    on scheduling)."""
    want = load_json(path, what)
    if "parts" not in want:
        return want
    parts = [load_json(p, what) for p in want["parts"]]
    merged = {"devices": [], "host": {"families": {}}, "ooms": [],
              "failures": 0, "truncated": False}
    for part in parts:
        merged["devices"] += part["devices"]
        merged["ooms"] += part["ooms"]
        merged["failures"] += part["failures"]
        merged["truncated"] = merged["truncated"] or part.get("truncated")
    for fam in HOST_FAMS:
        cs = [p["host"]["families"][fam] for p in parts]
        busy = [c for c in cs if c["allocs"] or c["failed"]]
        m = {k: sum(c[k] for c in cs) for k in COUNTERS}
        m["peak_bytes"] = busy[0]["peak_bytes"] if len(busy) == 1 else (
            0 if not busy else -1)
        merged["host"]["families"][fam] = m
    return merged


# ---- comparison ---------------------------------------------------------

def compare_counters(where, want, got, diffs):
    if got is None:
        if any(want[k] not in (0, -1) for k in COUNTERS):
            diffs.append(f"{where}: missing from the report, expected {want}")
        return
    for k in COUNTERS:
        if want[k] == -1:
            continue
        if k not in got:
            diffs.append(f"{where}.{k}: missing, expected {want[k]}")
        elif got[k] != want[k]:
            diffs.append(f"{where}.{k}: expected {want[k]}, got {got[k]}")


def compare(want, rep):
    """Returns the list of differences between expectation and report."""
    diffs = []
    rep_devs = {}
    for d in rep.get("devices") or []:
        rep_devs[d.get("id")] = d
    for wd in want["devices"]:
        i = wd["id"]
        rd = rep_devs.get(i)
        if rd is None:
            diffs.append(f"devices[id={i}]: missing from the report "
                         f"(report ids: {sorted(rep_devs, key=str)})")
            continue
        if "vendor" in wd and rd.get("vendor") != wd["vendor"]:
            diffs.append(f"devices[id={i}].vendor: expected "
                         f"{wd['vendor']}, got {rd.get('vendor')}")
        if rd.get("total_bytes") != wd["total_bytes"]:
            diffs.append(f"devices[id={i}].total_bytes: expected "
                         f"{wd['total_bytes']}, got {rd.get('total_bytes')}")
        fams = rd.get("families") or {}
        for fam in DEVICE_FAMS:
            compare_counters(f"devices[id={i}].families.{fam}",
                             wd["families"][fam], fams.get(fam), diffs)
    want_ids = {wd["id"] for wd in want["devices"]}
    for i, rd in rep_devs.items():
        if i not in want_ids:
            busy = {f: c for f, c in (rd.get("families") or {}).items()
                    if any(c.get(k) for k in COUNTERS)}
            if busy:
                diffs.append(f"devices[id={i}]: unexpected device with "
                             f"activity {busy}")
    host_fams = ((rep.get("host") or {}).get("families")) or {}
    for fam in HOST_FAMS:
        compare_counters(f"host.families.{fam}", want["host"]["families"][fam],
                         host_fams.get(fam), diffs)

    def key(o):
        return (o.get("api"), o.get("device"), o.get("requested_bytes"))
    got_ooms = list(rep.get("ooms") or [])
    for wo in want["ooms"]:
        match = [o for o in got_ooms if key(o) == key(wo)]
        if not match:
            diffs.append(f"ooms: missing {dict(zip(('api', 'device', 'requested_bytes'), key(wo)))}")
            continue
        o = match[0]
        got_ooms.remove(o)
        # Host OOMs have no driver-reported free bytes: the key must be
        # there, its value may be null.
        if "free_bytes" not in o or (wo["free_bytes"] >= 0 and
                                     o["free_bytes"] is None):
            diffs.append(f"ooms {key(wo)}: free_bytes absent")
        elif wo["free_bytes"] >= 0 and o["free_bytes"] != wo["free_bytes"]:
            diffs.append(f"ooms {key(wo)}: free_bytes expected "
                         f"{wo['free_bytes']}, got {o['free_bytes']}")
    for o in got_ooms:
        diffs.append(f"ooms: unexpected {key(o)}")
    failures = rep.get("failures")
    if not isinstance(failures, list):
        diffs.append("failures: missing from the report")
    elif len(failures) != want["failures"]:
        summary = sorted((f.get("api"), f.get("device"), f.get("error"))
                         for f in failures)
        diffs.append(f"failures: expected {want['failures']} entries, got "
                     f"{len(failures)}: {summary}")
    truncated = (rep.get("run") or {}).get("truncated")
    if truncated is not want.get("truncated", False):
        diffs.append(f"run.truncated: expected {want.get('truncated', False)}, "
                     f"got {truncated}")
    return diffs


# ---- the cases ----------------------------------------------------------

def workload_case(a, env, tmp):
    bare = os.path.join(tmp, "bare.json")
    run(a.client + ["--expect", bare], env, "client without the preload")
    want = load_expectation(bare, "expectation")
    if a.reference:
        ref = os.path.join(tmp, "reference.json")
        run([a.reference] + a.client_args + ["--expect", ref], env,
            "reference client")
        if load_expectation(ref, "reference expectation") != want:
            raise CaseFailure(f"expectation differs from the reference "
                              f"program's: {bare} vs {ref}")
        log("expectation identical to the reference client's")
    if not a.vramtrace:
        log("bare run passed; no vramtrace given, record step not run")
        return
    rundir = os.path.join(tmp, "run")
    rec = os.path.join(tmp, "rec.json")
    run([a.vramtrace, "record", "-o", rundir, "--"] + a.client +
        ["--expect", rec], env, "vramtrace record")
    rec_want = load_expectation(rec, "expectation under the preload")
    if rec_want != want:
        raise CaseFailure(f"the client saw different results under the "
                          f"preload: {bare} vs {rec}")
    out = run([a.vramtrace, "analyze", rundir, "--format", "json"], env,
              "vramtrace analyze")
    try:
        rep = json.loads(out)
    except ValueError as e:
        raise CaseFailure(f"analyze --format json: not JSON: {e}")
    with open(os.path.join(tmp, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    diffs = compare(want, rep)
    if diffs:
        log(f"MISMATCH between expectation ({bare}) and report "
            f"({os.path.join(tmp, 'report.json')}):")
        for d in diffs:
            log("  " + d)
        raise CaseFailure(f"{len(diffs)} difference(s)")
    log("report matches the expectation")


def kill_when_ready(proc, pidfile, what):
    """Waits for the pid file, lets the client run 0.5 s, SIGKILLs it."""
    deadline = time.monotonic() + 60
    while not os.path.exists(pidfile):
        if proc.poll() is not None:
            raise CaseFailure(f"{what}: exited ({proc.returncode}) before "
                              f"writing its pid file")
        if time.monotonic() > deadline:
            proc.kill()
            raise CaseFailure(f"{what}: no pid file after 60 s")
        time.sleep(0.02)
    with open(pidfile) as f:
        pid = int(f.read().strip())
    time.sleep(0.5)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        raise CaseFailure(f"{what}: pid {pid} gone before the kill")
    try:
        return proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise CaseFailure(f"{what}: still running 30 s after SIGKILL")


def sigkill_case(a, env, tmp):
    pidfile = os.path.join(tmp, "bare.pid")
    cmd = a.client + ["--mode", "sigkill", "--pidfile", pidfile]
    log("$ " + " ".join(cmd))
    rc = kill_when_ready(subprocess.Popen(cmd, env=env), pidfile,
                         "client without the preload")
    if rc != -signal.SIGKILL:
        raise CaseFailure(f"client without the preload: status {rc}, "
                          f"expected death by SIGKILL")
    if not a.vramtrace:
        log("bare run passed; no vramtrace given, record step not run")
        return
    rundir = os.path.join(tmp, "run")
    pidfile = os.path.join(tmp, "rec.pid")
    cmd = [a.vramtrace, "record", "-o", rundir, "--"] + a.client + [
        "--mode", "sigkill", "--pidfile", pidfile]
    log("$ " + " ".join(cmd))
    rc = kill_when_ready(subprocess.Popen(cmd, env=env), pidfile,
                         "vramtrace record")
    log(f"vramtrace record exited with {rc}")
    out = run([a.vramtrace, "analyze", rundir, "--format", "json"], env,
              "vramtrace analyze --format json")
    try:
        rep = json.loads(out)
    except ValueError as e:
        raise CaseFailure(f"analyze --format json: not JSON: {e}")
    truncated = (rep.get("run") or {}).get("truncated")
    if truncated is not True:
        raise CaseFailure(f"run.truncated: expected true, got {truncated}")
    text = run([a.vramtrace, "analyze", rundir], env, "vramtrace analyze")
    if "truncated" not in text.lower():
        log(text[-3000:])
        raise CaseFailure("text report does not mention 'truncated'")
    log("truncated trace reported as such")


def main():
    ap = options("--name", "--fake-dir", "--tmp-root",
                 description=__doc__.split("\n")[0])
    ap.add_argument("--vramtrace")
    ap.add_argument("--preload")
    ap.add_argument("--kind", choices=("workload", "sigkill"),
                    default="workload")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--reference")
    ap.add_argument("client", nargs="+")
    a = ap.parse_args()
    if a.client and a.client[0] == "--":
        a.client = a.client[1:]
    a.client_args = a.client[1:]
    if a.client[0].endswith(".py"):
        a.client = [sys.executable] + a.client

    env = dict(os.environ)
    for k in ("LD_PRELOAD", "VRAMTRACE_OUT"):
        env.pop(k, None)
    env["LD_LIBRARY_PATH"] = os.path.abspath(a.fake_dir) + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    for kv in a.env:
        k, _, v = kv.partition("=")
        env[k] = v
    if a.preload:
        env["VRAMTRACE_PRELOAD"] = os.path.abspath(a.preload)

    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=a.name + "-", dir=a.tmp_root)
    ok = False
    try:
        (sigkill_case if a.kind == "sigkill" else workload_case)(a, env, tmp)
        ok = True
    except CaseFailure as e:
        log(f"FAIL {a.name}: {e}")
    finally:
        if ok and not os.environ.get("VRT_TEST_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"files kept in {tmp}")
    if ok:
        log(f"PASS {a.name}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
