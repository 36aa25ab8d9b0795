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
refuse      VRAMTRACE_METRICS=0.0.0.0:PORT without VRAMTRACE_METRICS_PUBLIC:
            one warning, nothing served, the run itself unchanged.
public      VRAMTRACE_METRICS=0.0.0.0:PORT with VRAMTRACE_METRICS_PUBLIC=1
            (reached through 127.0.0.1): served, one warning that it has no
            authentication, the address file names 0.0.0.0:PORT; the
            program run as `llama-server` with RANK=3 gets the labels
            engine="llama.cpp" and rank="3" on every series.
busy        a fixed port held by another program: one warning, the run
            unchanged, the process serves on a loopback port of its own;
            once the port is free it takes it over.
tree        tests/preload/tree3 (seven processes) with one fixed port: no
            process warns (the others serve loopback ports of their own and
            the one on the fixed port adds them); seven processes traced.
pair        tests/preload/tp_pair, two ranks on two 24 GiB devices, on
            0.0.0.0:PORT (opted in): one scrape of the port shows both
            processes, each metric family once, pid and rank (the device:
            0 and 1) and engine (VRAMTRACE_ENGINE) on every series, 64 MiB
            used each, the capacity 24 GiB, the peak since the last scrape
            80 MiB (a 16 MiB spike freed before the scrape) and on the
            next scrape 64 MiB.
dashboard   docs/grafana-vramtrace.json parses, has panels for the budget
            by phase, the capacity and the OOMs, and every vramtrace_
            metric its queries use is one the pair's scrape served.

Usage: run_metrics.py --vramtrace EXE --preload LIB --fake-dir DIR
                      --llama EXE --tree3 EXE --tp-pair EXE
                      --dashboard JSON --tmp-root DIR
Exit 0 pass, 1 fail, 77 skipped (no curl).
"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

from harness import check, options, record_env, scratch

MIB = 1 << 20
ACT_MIB = 8


def base_env(args, metrics):
    return record_env(args, {"VRAMTRACE_METRICS": metrics},
                      drop=("VRAMTRACE_OUT", "LD_PRELOAD"))


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
    n = p.stderr.count("needs VRAMTRACE_METRICS_PUBLIC=1")
    check(n == 1, f"refuse: one warning for 0.0.0.0 (got {n})")
    check(not glob.glob(os.path.join(out, "*.metrics")),
          "refuse: nothing served")
    rep = analyze(args, out)
    check(len(rep["run"]["processes"]) == 1, "refuse: the trace is there")


def wait_for(pred, seconds, step=0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def start(args, out, log, prog, env):
    cmd = [args.vramtrace, "record", "-o", out, "--"] + prog
    print("$ " + " ".join(cmd), flush=True)
    with open(log, "w") as lf:
        return subprocess.Popen(cmd, env=env, stdout=lf,
                                stderr=subprocess.STDOUT)


def finish(proc, log):
    try:
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = open(log).read()
    print(text)
    return rc, text


def address_files(out):
    return {os.path.basename(f): open(f).read().strip()
            for f in glob.glob(os.path.join(out, "*.metrics"))}


def public(args, tmp):
    port = free_port()
    out, log = os.path.join(tmp, "public"), os.path.join(tmp, "public.out")
    link = os.path.join(tmp, "llama-server")
    os.symlink(os.path.abspath(args.llama), link)
    env = base_env(args, f"0.0.0.0:{port}")
    env["VRAMTRACE_METRICS_PUBLIC"] = "1"
    env["RANK"] = "3"
    proc = start(args, out, log, [link, "-ngl", "2", "-np", "1",
                                  "--linger-ms", "3000"], env)
    files = wait_for(lambda: address_files(out), 20)
    check(files and list(files.values()) == [f"0.0.0.0:{port}"],
          f"public: the address file names 0.0.0.0:{port} ({files})")
    code, body = curl(f"http://127.0.0.1:{port}/metrics")
    sample = parse(body) if code == 200 else {}
    labels = {frozenset((k, v) for k, v in ls if k in ("rank", "engine"))
              for _, ls in sample}
    check(code == 200 and labels == {frozenset({("rank", "3"),
                                                ("engine", "llama.cpp")})},
          f"public: served; rank 3 (RANK) and engine llama.cpp (the "
          f"program's name) on every series ({labels})")
    rc, text = finish(proc, log)
    check(rc == 0, "public: the run is unchanged")
    n = text.count("without authentication")
    check(n == 1, f"public: one warning that it is unauthenticated ({n})")


def busy(args, tmp):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    out, log = os.path.join(tmp, "busy"), os.path.join(tmp, "busy.out")
    proc = start(args, out, log, [args.llama, "-ngl", "2", "-np", "1",
                                  "--linger-ms", "6000"],
                 base_env(args, f"127.0.0.1:{port}"))
    try:
        own = wait_for(lambda: address_files(out), 20)
        warned = wait_for(lambda: "is in use by a program outside" in
                          open(log).read(), 5)
    finally:
        s.close()
    check(own and re.match(r"^127\.0\.0\.1:\d+$", list(own.values())[0])
          and list(own.values())[0] != f"127.0.0.1:{port}",
          f"busy: serves a loopback port of its own meanwhile ({own})")
    check(warned, "busy: warns that the port is taken")
    took = wait_for(lambda: curl(f"http://127.0.0.1:{port}/metrics")[0] ==
                    200, 5, 0.2)
    check(took, "busy: takes the port over once it is free")
    rc, text = finish(proc, log)
    check(rc == 0, "busy: the run is unchanged")
    n = text.count(f"127.0.0.1:{port} is in use")
    check(n == 1, f"busy: one warning for a port in use (got {n})")


def tree(args, tmp):
    port = free_port()
    p, out = run_quick(args, tmp, "tree", f"127.0.0.1:{port}", [args.tree3])
    check(p.returncode == 0, "tree: the run is unchanged")
    n = p.stderr.count("metrics:")
    check(n == 0, f"tree: no process of the seven warns (got {n})")
    rep = analyze(args, out)
    check(len(rep["run"]["processes"]) == 7, "tree: 7 processes traced")


def pair(args, tmp):
    """Returns the first scrape's samples (for the dashboard)."""
    port = free_port()
    out, log = os.path.join(tmp, "pair"), os.path.join(tmp, "pair.out")
    hold = os.path.join(tmp, "pair.hold")
    env = base_env(args, f"0.0.0.0:{port}")
    env.update(VRAMTRACE_METRICS_PUBLIC="1", VRAMTRACE_ENGINE="vllm",
               FAKECUDA_DEVICES="2", FAKECUDA_MEM="24G")
    proc = start(args, out, log, [args.tp_pair, "--ranks", "2", "--mib",
                                  "64", "--spike-mib", "16",
                                  "--hold-file", hold], env)
    first = second = {}
    try:
        ready = wait_for(lambda: dict(re.findall(
            r"tp_pair: rank (\d) pid (\d+) ready", open(log).read()))
            if open(log).read().count("ready") == 2 and
            len(address_files(out)) == 2 else None, 30)
        check(ready is not None, f"pair: both ranks ready ({ready})")
        code, body = curl(f"http://127.0.0.1:{port}/metrics")
        first = parse(body) if code == 200 else {}
        print(body)
        code2, body2 = curl(f"http://127.0.0.1:{port}/metrics")
        second = parse(body2) if code2 == 200 else {}
        for fam in ("vramtrace_device_used_bytes", "vramtrace_info",
                    "vramtrace_device_peak_bytes"):
            check(body.count(f"# HELP {fam} ") == 1 and
                  body.count(f"# TYPE {fam} ") == 1,
                  f"pair: {fam} has one HELP and one TYPE")
        check(not any(k[0] == "BAD" for k in first),
              "pair: every line is valid exposition format")
    finally:
        open(hold, "w").close()
    rc, text = finish(proc, log)
    check(rc == 0, "pair: the run is unchanged")
    check(text.count("without authentication") == 1 and
          text.count("metrics:") == 1,
          "pair: the port's one warning, no other")
    if not ready or not first:
        return first

    def by_pid(sample, name):
        return {dict(k[1])["pid"]: (dict(k[1]), v) for k, v in sample.items()
                if k[0] == name}
    info = by_pid(first, "vramtrace_info")
    want_pids = {pid: rank for rank, pid in ready.items()}
    check(set(info) == set(want_pids),
          f"pair: one scrape shows both processes ({sorted(info)})")
    check(all(info[p][0].get("rank") == want_pids[p] and
              info[p][0].get("engine") == "vllm" for p in info),
          f"pair: rank is each process's device, engine from "
          f"VRAMTRACE_ENGINE ({ {p: info[p][0] for p in info} })")
    check(all({"pid", "rank", "engine"} <= {k for k, _ in ls}
              for _, ls in first),
          "pair: pid, rank and engine on every series")
    used = by_pid(first, "vramtrace_device_used_bytes")
    check(all(used.get(p, ({}, 0))[1] == 64 * MIB and
              used[p][0].get("device") == want_pids[p] for p in want_pids),
          f"pair: 64 MiB used by each, on its own device "
          f"({ {p: (l.get('device'), v) for p, (l, v) in used.items()} })")
    cap = by_pid(first, "vramtrace_device_capacity_bytes")
    check(all(cap.get(p, ({}, 0))[1] == 24 << 30 for p in want_pids),
          f"pair: the capacity of each device is 24 GiB "
          f"({ {p: v for p, (_, v) in cap.items()} })")
    pk1 = {p: v for p, (_, v) in by_pid(first,
                                        "vramtrace_device_peak_bytes").items()}
    pk2 = {p: v for p, (_, v) in by_pid(second,
                                        "vramtrace_device_peak_bytes").items()}
    check(pk1 == {p: 80 * MIB for p in want_pids},
          f"pair: the peak since start holds the freed 16 MiB spike ({pk1})")
    check(pk2 == {p: 64 * MIB for p in want_pids},
          f"pair: the next scrape's peak starts from what is live ({pk2})")
    return first


def dashboard(args, sample):
    try:
        d = json.load(open(args.dashboard))
    except (OSError, ValueError) as e:
        check(False, f"dashboard: {args.dashboard} parses ({e})")
        return
    check(True, "dashboard: parses as JSON")
    panels = []

    def walk(ps):
        for p in ps:
            panels.append(p)
            walk(p.get("panels", []))
    walk(d.get("panels", []))
    exprs = {p.get("title", ""): [t.get("expr", "")
                                  for t in p.get("targets", [])]
             for p in panels}
    alltext = " ".join(e for es in exprs.values() for e in es)
    check(d.get("title") and len(panels) >= 3 and
          all(p.get("title") for p in panels),
          f"dashboard: a title and titled panels ({len(panels)})")
    for what, pat in (("budget by phase",
                       r"by \((\w+, )*phase\b.*vramtrace_device_live_bytes"),
                      ("capacity", r"vramtrace_device_capacity_bytes"),
                      ("OOMs", r"vramtrace_ooms_total"),
                      ("peak", r"vramtrace_device_peak_bytes")):
        check(any(re.search(pat, e) for es in exprs.values() for e in es),
              f"dashboard: a query for the {what}")
    served = {k[0] for k in sample}
    used = set(re.findall(r"\bvramtrace_[a-z_]+", alltext))
    check(used and used <= served,
          f"dashboard: every metric it queries is served "
          f"(missing: {sorted(used - served)})")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--llama", "--tree3",
              "--tp-pair", "--dashboard", "--tmp-root")
    args = ap.parse_args()
    if not shutil.which("curl"):
        print("curl not found: skipped")
        return 77

    def body(tmp):
        scrape(args, tmp)
        refuse(args, tmp)
        public(args, tmp)
        busy(args, tmp)
        tree(args, tmp)
        dashboard(args, pair(args, tmp))

    return scratch(args, "metrics-", body)


if __name__ == "__main__":
    sys.exit(main())
