#!/usr/bin/env python3
"""run_metrics.py — the Prometheus endpoint (VRAMTRACE_METRICS) scraped
with curl while a recorded server runs (python3 stdlib and curl).

scrape      examples/llama_sim recorded with VRAMTRACE_METRICS=127.0.0.1:0
            (an ephemeral port, published in "<run dir>/<pid>.metrics"):
            scraped while 3 requests are in flight (--hold-ms) and after
            serving (--linger-ms). In flight the gauges equal the trace's
            peak by phase and max in flight; after serving, each phase's
            live bytes equal `analyze --format json`'s live_bytes_end,
            vramtrace_device_used_bytes is their sum, no OOM, 0 in flight,
            vramtrace_info names the pid. A stalled client does not stop
            the next scrape; an oversized request gets 431, a POST 405,
            another path 404. The address file is gone after exit.
refuse      VRAMTRACE_METRICS=0.0.0.0:PORT: one warning, nothing served,
            the run itself unchanged.
busy        a fixed port already taken: one warning, the run unchanged.
tree        tests/preload/tree3 (seven processes) with one fixed port: one
            process serves it, the six others warn once each (the setting
            reaches the children started with a fresh environment too).

Usage: run_metrics.py --vramtrace EXE --preload LIB --fake-dir DIR
                      --llama EXE --tree3 EXE --tmp-root DIR
Exit 0 pass, 1 fail, 77 skipped (no curl).
"""
import argparse
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

MIB = 1 << 20
ACT_MIB = 8
failures = []


def check(cond, what):
    print(("ok     " if cond else "FAILED ") + what, flush=True)
    if not cond:
        failures.append(what)


def base_env(args, metrics):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env.pop("VRAMTRACE_OUT", None)
    env.pop("LD_PRELOAD", None)
    env["VRAMTRACE_METRICS"] = metrics
    return env


def analyze(args, out):
    p = subprocess.run([args.vramtrace, "analyze", "--format", "json", out],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        raise SystemExit(f"analyze failed with exit {p.returncode}")
    return json.loads(p.stdout)


def curl(url, timeout=5):
    p = subprocess.run(["curl", "-sS", "-m", str(timeout), "-w",
                        "\n%{http_code}", url], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout + 5)
    if p.returncode != 0:
        return None, p.stderr
    body, _, code = p.stdout.rpartition("\n")
    return int(code), body


def parse(text):
    """{(name, frozenset(labels)): value}"""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^(\w+)(?:\{(.*)\})? (\S+)$', line)
        if not m:
            out[("BAD", line)] = 0
            continue
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = int(m.group(3))
    return out


def phases_of(sample, dev="0"):
    return {dict(k[1])["phase"]: v for k, v in sample.items()
            if k[0] == "vramtrace_device_live_bytes" and
            dict(k[1]).get("device") == dev}


def scalar(sample, name):
    vals = [v for k, v in sample.items() if k[0] == name]
    return vals[0] if len(vals) == 1 else None


def used(sample, dev="0"):
    vals = [v for k, v in sample.items()
            if k[0] == "vramtrace_device_used_bytes" and
            dict(k[1]).get("device") == dev]
    return vals[0] if len(vals) == 1 else None


def raw(port, data, timeout=5):
    """Sends data on a fresh connection; returns the status line."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        got = b""
        while b"\r\n" not in got:
            b = s.recv(4096)
            if not b:
                break
            got += b
        return got.split(b"\r\n")[0].decode(errors="replace")
    except OSError as e:
        return f"error {e}"
    finally:
        s.close()


def scrape(args, tmp):
    out = os.path.join(tmp, "scrape")
    log = os.path.join(tmp, "scrape.out")
    cmd = [args.vramtrace, "record", "-o", out, "--", args.llama, "-ngl",
           "4", "--layer-mib", "10", "-c", "1024", "--kv-kib-per-token",
           "64", "--act-mib", str(ACT_MIB), "-np", "3", "--hold-ms", "2000",
           "--linger-ms", "5000"]
    print("$ " + " ".join(cmd), flush=True)
    with open(log, "w") as lf:
        proc = subprocess.Popen(cmd, env=base_env(args, "127.0.0.1:0"),
                                stdout=lf, stderr=subprocess.STDOUT)
    inflight_sample = end_sample = None
    addr = None
    port = 0
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            files = glob.glob(os.path.join(out, "*.metrics"))
            if files and not addr:
                addr = open(files[0]).read().strip()
                port = int(addr.rsplit(":", 1)[1])
            if not addr:
                time.sleep(0.05)
                continue
            served = "served" in open(log).read()
            code, body = curl(f"http://{addr}/metrics")
            if code != 200:
                time.sleep(0.05)
                continue
            s = parse(body)
            ph = phases_of(s)
            settled = (ph.get("unattributed") == 0 and
                       used(s) == sum(ph.values()))
            n = scalar(s, "vramtrace_requests_inflight")
            if (not inflight_sample and settled and n == 3 and
                    ph.get("forward") == 3 * ACT_MIB * MIB):
                inflight_sample = s
            if served and settled and n == 0:
                end_sample = s
                break
            time.sleep(0.05)
        check(addr is not None and re.match(r"^127\.0\.0\.1:\d+$", addr),
              f"scrape: <pid>.metrics names the address (got {addr!r})")
        check(inflight_sample is not None,
              "scrape: a scrape while 3 requests were in flight")
        check(end_sample is not None, "scrape: a scrape after serving")
        if port and proc.poll() is None:
            # Robustness, while the server lingers.
            stalled = socket.create_connection(("127.0.0.1", port))
            t0 = time.monotonic()
            code, _ = curl(f"http://{addr}/metrics")
            took = time.monotonic() - t0
            stalled.close()
            check(code == 200 and took < 4, "scrape: a stalled client "
                  f"delays the next scrape by a bounded time ({took:.1f}s)")
            st = raw(port, b"GET /" + b"a" * 8000 + b" HTTP/1.0\r\n\r\n")
            check(" 431 " in st, f"scrape: an oversized request gets 431 "
                  f"({st!r})")
            st = raw(port, b"POST /metrics HTTP/1.0\r\n\r\n")
            check(" 405 " in st, f"scrape: POST gets 405 ({st!r})")
            code, _ = curl(f"http://{addr}/other")
            check(code == 404, f"scrape: another path gets 404 ({code})")
        else:
            check(False, "scrape: the server was still lingering for the "
                  "robustness checks")
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    print(open(log).read())
    check(rc == 0, f"scrape: record exits 0 (got {rc})")
    check(not glob.glob(os.path.join(out, "*.metrics")),
          "scrape: the address file is removed at exit")
    if not inflight_sample or not end_sample:
        return
    rep = analyze(args, out)
    dev = [d for d in rep["devices"] if d.get("id") == 0][0]
    live = {k: v["live_bytes_end"] for k, v in dev["phases"].items()}
    got = phases_of(end_sample)
    want = {ph: live.get(ph, 0) for ph in got}
    check(got == want and set(live) <= set(got),
          f"scrape: live bytes per phase after serving match the trace's "
          f"live_bytes_end (metrics {got}, trace {live})")
    total = sum(live.values())
    check(used(end_sample) == total and total > 0,
          f"scrape: vramtrace_device_used_bytes is the sum ({total}; got "
          f"{used(end_sample)})")
    peak = dev["peak"]["by_phase"]
    got = phases_of(inflight_sample)
    check(got == {ph: peak.get(ph, 0) for ph in got} and
          set(peak) <= set(got),
          f"scrape: in flight, the gauges are the trace's peak by phase "
          f"(metrics {got}, trace {peak})")
    check(scalar(inflight_sample, "vramtrace_requests_inflight") ==
          rep["requests"]["max_inflight"] == 3,
          "scrape: requests in flight match the trace's max (3)")
    check(scalar(end_sample, "vramtrace_ooms_total") == len(rep["ooms"]) == 0,
          "scrape: vramtrace_ooms_total matches the trace (0)")
    check(scalar(end_sample, "vramtrace_host_pinned_bytes") == 0,
          "scrape: no pinned host memory")
    pids = [pr["pid"] for pr in rep["run"]["processes"]]
    info = [dict(k[1]).get("pid") for k in end_sample
            if k[0] == "vramtrace_info"]
    check(info == [str(pids[0])] and len(pids) == 1,
          f"scrape: vramtrace_info names the traced pid (got {info}, "
          f"trace {pids})")
    check(not any(k[0] == "BAD" for k in end_sample),
          "scrape: every line is valid exposition format")


def run_quick(args, tmp, name, metrics, prog):
    out = os.path.join(tmp, name)
    cmd = [args.vramtrace, "record", "-o", out, "--"] + prog
    print("$ VRAMTRACE_METRICS=" + metrics + " " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=base_env(args, metrics),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60, text=True)
    print(p.stdout + p.stderr)
    return p, out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def refuse(args, tmp):
    port = free_port()
    p, out = run_quick(args, tmp, "refuse", f"0.0.0.0:{port}",
                       [args.llama, "-ngl", "2", "-np", "1"])
    check(p.returncode == 0, "refuse: the run is unchanged")
    n = p.stderr.count("only 127.0.0.1:PORT is served")
    check(n == 1, f"refuse: one warning for 0.0.0.0 (got {n})")
    rep = analyze(args, out)
    check(len(rep["run"]["processes"]) == 1, "refuse: the trace is there")


def busy(args, tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        p, out = run_quick(args, tmp, "busy", f"127.0.0.1:{port}",
                           [args.llama, "-ngl", "2", "-np", "1"])
    finally:
        s.close()
    check(p.returncode == 0, "busy: the run is unchanged")
    n = p.stderr.count(f"127.0.0.1:{port} is in use")
    check(n == 1, f"busy: one warning for a port in use (got {n})")


def tree(args, tmp):
    port = free_port()
    p, out = run_quick(args, tmp, "tree", f"127.0.0.1:{port}", [args.tree3])
    check(p.returncode == 0, "tree: the run is unchanged")
    n = p.stderr.count(f"127.0.0.1:{port} is in use")
    check(n == 6, f"tree: one of 7 processes serves the port, 6 warn "
          f"(got {n} warnings)")
    rep = analyze(args, out)
    check(len(rep["run"]["processes"]) == 7, "tree: 7 processes traced")


def main():
    ap = argparse.ArgumentParser()
    for o in ("--vramtrace", "--preload", "--fake-dir", "--llama", "--tree3",
              "--tmp-root"):
        ap.add_argument(o, required=True)
    args = ap.parse_args()
    if not shutil.which("curl"):
        print("curl not found: skipped")
        return 77
    os.makedirs(args.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="metrics-", dir=args.tmp_root)
    try:
        scrape(args, tmp)
        refuse(args, tmp)
        busy(args, tmp)
        tree(args, tmp)
    finally:
        if failures or os.environ.get("VRT_TEST_KEEP"):
            print("files kept in " + tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
