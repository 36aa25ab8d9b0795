#!/usr/bin/env python3
"""run_standby_full.py — a run attached after load (`record --standby`, then
`vramtrace ctl RUN start` once the server listens) must give the same
answer as the same run recorded in full (python3 stdlib only; TAP output).

    run_standby_full.py --vramtrace EXE --preload LIB --fake-dir DIR
                        --serve-sim EXE --mp-server EXE --hold LIB
                        --tmp-root DIR GROUP

Each case is recorded twice, in full and in standby, under the same load;
the two `analyze --format json` reports must agree on: the live bytes of
every phase of every device at the end, the server-ready time (the server
listened in both or neither; where the server says when by its own clock,
mp_server, the report's time is that within 1 ms, in both runs), the most
requests in flight, every OOM (stage,
phase, requests in flight, device, bytes asked) and the diagnosis
(verdict, detail, stage) — whatever the diagnosis logic says, it must say
it for both.

GROUP:
demo     each verdict scenario of `vramtrace demo` (examples/serve_sim,
         the demo's flags): the server's first accept() is held
         (tests/preload/hold_accept.c) until `ctl start` has answered, so
         recording starts after it listens and before it serves; a
         scenario that fails while loading never listens: its OOM happens
         in standby and must be recorded anyway.
mp       tests/preload/mp_server: an API server process (HTTP/1.1,
         keep-alive) and an engine process (weights 10 GiB, KV 40 GiB,
         CUDA graphs 1 GiB, 8 GiB per request, phases from a rules file)
         on one 80 GiB card. Before `start`: six idle keep-alive
         connections and one request in flight; after: a second request,
         one alone, then four at once (the fourth does not fit). Also:
         the standby trace keeps the stacks of the loaded memory
         (top_sites name engine_load_weights, `analyze --rules` moves the
         KV reserve to another phase), the ready time matches the
         server's clock, `ctl status` in standby knows the capacity, and
         the idle connections never count.
restart  mp_server recorded start, stop, start, stop, start with load in
         between (some of it in standby): the end state and the OOM equal
         the full run's; allocations made while recording are counted
         once, those of the snapshots never.
oom      mp_server --oom-recovers in standby: four requests at once, the
         fourth refused for memory and answered 503 while still in
         standby; then `ctl start` and one more request: the OOM is in
         the report (request stage, forward, 4 in flight), as in the full
         run.

Every wait polls a bounded number of times; no fixed sleep decides a
result.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import re
import threading

from harness import Tap, poll, record_env

GIB = 1 << 30


tap = Tap()

RULES = """weights    native:engine_load_weights
kv_cache   native:engine_reserve_kv_cache
cuda_graph native:engine_capture_graphs
forward    native:engine_execute_model
"""


def env_for(a, extra=None):
    return record_env(a, {"FAKECUDA_MEM": "80G", **(extra or {})},
                      clean=("FAKECUDA_", "FAKEHIP_", "FAKENVML_",
                             "VRAMTRACE_", "HOLD_ACCEPT"))


def vt(a, *argv, env=None, timeout=60):
    return subprocess.run([a.vramtrace] + list(argv), env=env,
                          capture_output=True, text=True, timeout=timeout)


def analyze(a, run, env, *extra):
    p = vt(a, "analyze", "--format", "json", *extra, run, env=env)
    if p.returncode != 0:
        tap.ok(False, f"analyze {run}", p.stderr)
        return {}
    return json.loads(p.stdout)


def ctl(a, run, cmd, env):
    p = vt(a, "ctl", run, cmd, env=env, timeout=30)
    return p.returncode == 0, p.stdout + p.stderr


# ---- what must agree ----------------------------------------------------


def budgets(rep):
    """{device id: {phase: live bytes at the end}} (zeros left out)."""
    out = {}
    for d in rep.get("devices", []):
        out[d.get("id")] = {k: v.get("live_bytes_end")
                            for k, v in d.get("phases", {}).items()
                            if v.get("live_bytes_end")}
    return out


def ooms(rep):
    return [(o.get("stage"), o.get("phase"), o.get("inflight"),
             o.get("device"), o.get("requested_bytes"))
            for o in rep.get("ooms", [])]


def verdict(rep):
    d = rep.get("diagnosis") or {}
    return (d.get("verdict"), d.get("detail"), d.get("stage"))


def same(name, full, sb):
    tap.ok(budgets(full) == budgets(sb),
           f"{name}: the same budget per device and phase at the end",
           f"full    {budgets(full)}\nstandby {budgets(sb)}")
    # Two runs load at their own pace: the same moment of the run, not
    # the same second (ready_on_clock checks the time itself).
    rf, rs = full.get("server_ready_s"), sb.get("server_ready_s")
    tap.ok((rf is None) == (rs is None) and
           (rf is None or abs(rf - rs) < 1.0),
           f"{name}: the server ready in both or neither ({rf} / {rs})")
    mf = full.get("requests", {}).get("max_inflight")
    ms = sb.get("requests", {}).get("max_inflight")
    tap.ok(mf == ms, f"{name}: the same requests in flight at most "
                     f"({mf} / {ms})")
    tap.ok(ooms(full) == ooms(sb), f"{name}: the same OOMs",
           f"full    {ooms(full)}\nstandby {ooms(sb)}")
    tap.ok(verdict(full) == verdict(sb),
           f"{name}: the same diagnosis {verdict(full)}",
           f"standby {verdict(sb)}")


# ---- demo: examples/serve_sim -------------------------------------------

DEMO = [
    ("weights", {}, ["--gpu-memory-utilization", "0.9", "--model-size-gib",
                     "100"]),
    ("not_sharded", {"FAKECUDA_DEVICES": "2"},
     ["--gpu-memory-utilization", "0.9", "--model-size-gib", "100",
      "--tensor-parallel-size", "2", "--no-shard"]),
    ("kv_cache", {}, ["--gpu-memory-utilization", "0.95", "--max-model-len",
                      "131072", "--act-kib-per-token", "64"]),
    ("concurrency", {}, ["--gpu-memory-utilization", "0.9",
                         "--max-model-len", "8192", "--max-num-seqs", "16",
                         "--concurrent-requests", "8"]),
    ("host_memory", {"FAKECUDA_HOST_MEM": "2G"},
     ["--gpu-memory-utilization", "0.9", "--swap-space", "4"]),
    ("other_processes", {"FAKECUDA_USED": "30G",
                         "FAKENVML_PROCS": "0:4242:30G",
                         "VRAMTRACE_SAMPLE_MS": "10"},
     ["--gpu-memory-utilization", "0.9", "--load-ms", "200"]),
    ("none", {}, ["--gpu-memory-utilization", "0.9"]),
]


def demo_case(a, tmp, name, extra, args):
    env = env_for(a, extra)
    cmd = [a.serve_sim, "serve", "sim-model"] + args
    full = os.path.join(tmp, name + "-full")
    p = subprocess.run([a.vramtrace, "record", "-o", full, "--"] + cmd,
                       env=env, capture_output=True, text=True, timeout=100)
    sb = os.path.join(tmp, name + "-standby")
    hold = os.path.join(tmp, name + ".hold")
    senv = dict(env)
    senv["LD_PRELOAD"] = os.path.abspath(a.hold)
    senv["HOLD_ACCEPT"] = hold
    proc = subprocess.Popen([a.vramtrace, "record", "--standby", "-o", sb,
                             "--"] + cmd, env=senv, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    waiting = poll(lambda: os.path.exists(hold + ".waiting") or
                   proc.poll() is not None, tries=600, delay=0.05)
    started = None
    if os.path.exists(hold + ".waiting"):
        started, out = ctl(a, sb, "start", env)
        open(hold, "w").close()
    try:
        proc.communicate(timeout=100)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
    tap.ok(waiting and proc.returncode == p.returncode,
           f"{name}: both runs end alike (exit {p.returncode} / "
           f"{proc.returncode})")
    rf, rs = analyze(a, full, env), analyze(a, sb, env)
    if started is None:
        tap.ok(rf.get("server_ready_s") is None and
               rs.get("recording_start_s") is not None,
               f"{name}: it failed loading, in standby: recorded all the "
               f"same from the failure on")
    else:
        listen = rs.get("listen") or {}
        tap.ok(started and rs.get("recording_start_s") is not None and
               listen.get("time_s") is not None and
               listen["time_s"] < rs["recording_start_s"],
               f"{name}: recording started after the server listened",
               f"ready {rs.get('server_ready_s')}, recording "
               f"{rs.get('recording_start_s')}")
    same(name, rf, rs)
    return rf, rs


def group_demo(a, tmp):
    for name, extra, args in DEMO:
        demo_case(a, tmp, name, extra, args)


# ---- mp: tests/preload/mp_server ------------------------------------------


class Server:
    """mp_server under `vramtrace record` (standby or not) and its load."""

    def __init__(self, a, tmp, tag, standby, extra_args=(), env_extra=None):
        self.a, self.tag = a, tag
        self.run = os.path.join(tmp, tag)
        self.port_file = os.path.join(tmp, tag + ".port")
        rules = os.path.join(tmp, "rules.txt")
        with open(rules, "w") as f:
            f.write(RULES)
        self.env = env_for(a, {"VRAMTRACE_RULES": rules})
        self.env.update(env_extra or {})
        cmd = [a.vramtrace, "record"] + (["--standby"] if standby else []) + \
            ["-o", self.run, "--", a.mp_server, "--ipc",
             os.path.join(tmp, tag + ".ipc"), "--port-file",
             self.port_file] + list(extra_args)
        self.proc = subprocess.Popen(cmd, env=self.env,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        got = poll(lambda: os.path.exists(self.port_file) or
                   self.proc.poll() is not None, tries=600)
        fields = open(self.port_file).read().split() \
            if got and os.path.exists(self.port_file) else ["0", "0", "0"]
        self.port = int(fields[0])
        self.unix_ns, self.inet_ns = int(fields[1]), int(fields[2])
        self.idle = []

    def conn(self):
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    def ask(self, s, path):
        method = "GET" if path.startswith(("/health", "/quit")) else "POST"
        s.sendall(f"{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())

    def reply(self, s):
        """The status of one whole answer (Content-Length or chunked)."""
        data = b""
        while b"\r\n\r\n" not in data:
            b = s.recv(4096)
            if not b:
                return None
            data += b
        head, body = data.split(b"\r\n\r\n", 1)
        status = int(head.split()[1])
        if b"chunked" in head.lower():
            while not body.endswith(b"0\r\n\r\n"):
                b = s.recv(4096)
                if not b:
                    break
                body += b
        else:
            n = int(head.lower().split(b"content-length:")[1].split()[0])
            while len(body) < n:
                b = s.recv(4096)
                if not b:
                    break
                body += b
        return status

    def open_idle(self, n):
        for _ in range(n):
            s = self.conn()
            self.ask(s, "/health")
            self.reply(s)
            self.idle.append(s)  # keep-alive, idle from now on

    def send(self, path):
        """A request on a new connection; its answer is read later."""
        s = self.conn()
        self.ask(s, path)
        return s

    def wave(self, n, extra=""):
        """n requests at once with hold=n; their statuses."""
        socks = [self.send(f"/gen?hold={n}{extra}") for _ in range(n)]
        out = [None] * n

        def read(i):
            try:
                out[i] = self.reply(socks[i])
            except OSError:
                out[i] = None
            socks[i].close()
        ts = [threading.Thread(target=read, args=(i,)) for i in range(n)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        return out

    def quit(self):
        try:
            s = self.conn()
            self.ask(s, "/quit")
            self.reply(s)
            s.close()
        except OSError:
            pass

    def wait(self):
        for s in self.idle:
            s.close()
        try:
            out, _ = self.proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        return self.proc.returncode, out

    def ctl(self, cmd):
        return ctl(self.a, self.run, cmd, self.env)


def ready_on_clock(name, rep, srv):
    """The listen time is when the server's own clock says its TCP
    listen() returned: the event is stamped inside that call, so at most a
    little before (1 ms: a loaded machine), never after. Ready is later:
    the first request answered 2xx, not the listen."""
    got = None
    listen = rep.get("listen") or {}
    if listen.get("time_s") is not None:
        got = rep["run"]["start_monotonic_ns"] + \
            round(listen["time_s"] * 1e9)
    tap.ok(got is not None and 0 <= srv.inet_ns - got < 1000000,
           f"{name}: listening when the server's clock says it listened on "
           f"TCP (within {(srv.inet_ns - (got or 0)) / 1e3:.0f} us)")
    ready = rep.get("server_ready_s")
    tap.ok(ready is not None and listen.get("time_s") is not None and
           ready > listen["time_s"] and
           rep.get("server_ready_from") == "response",
           f"{name}: ready at the first request answered 2xx, after the "
           f"listen", (ready, listen))


def mp_load(srv, standby):
    """The load of group mp (see the top of the file)."""
    srv.open_idle(6)
    first = srv.send("/gen?hold=2")
    started = (True, "")
    if standby:
        # Read and held by the server before recording starts.
        poll(lambda: live_inflight(srv) >= 1, tries=200)
        started = srv.ctl("start")
    s2 = srv.send("/gen?hold=2&stream=1")
    codes = [srv.reply(first), srv.reply(s2)]
    first.close()
    s2.close()
    codes += srv.wave(1)
    codes += srv.wave(4)
    return started, codes


def live_inflight(srv):
    """Requests in flight, summed over the run's control sockets."""
    out = srv.ctl("status")[1]
    return sum(int(m) for m in re.findall(r"(\d+) in flight", out))


def group_mp(a, tmp):
    two = {"FAKECUDA_DEVICES": "2"}  # the engine uses device 0 only
    full = Server(a, tmp, "mp-full", False, env_extra=two)
    tap.ok(full.port > 0, "mp: the full run serves")
    _, codes_f = mp_load(full, False)
    rc_f, _ = full.wait()
    sb = Server(a, tmp, "mp-standby", True, env_extra=two)
    tap.ok(sb.port > 0, "mp: the standby run serves")
    # In standby the table is there, and the capacity with it.
    st = vt(a, "ctl", sb.run, "status", "--json", env=sb.env).stdout
    tap.ok('"total_bytes":85899345920' in st,
           "mp: ctl status in standby knows the card's capacity",
           st)
    lv = vt(a, "live", sb.run, "--count", "1", env=sb.env).stdout
    tap.ok("80.0 GiB" in lv and "/?" not in lv,
           "mp: live in standby shows used/total", lv)
    started, codes_s = mp_load(sb, True)
    tap.ok(started[0], "mp: ctl start answered", started[1])
    rc_s, out_s = sb.wait()
    tap.ok(codes_f == codes_s and rc_f == rc_s == 3,
           f"mp: the same answers ({codes_f} / {codes_s}) and exits "
           f"({rc_f} / {rc_s})", out_s)
    rf, rs = analyze(a, full.run, full.env), analyze(a, sb.run, sb.env)
    same("mp", rf, rs)
    for tag, rep, srv in (("full", rf, full), ("standby", rs, sb)):
        ready_on_clock(f"mp {tag}", rep, srv)
        tap.ok(rep.get("server_ready_socket") == "inet",
               f"mp {tag}: the unix socket (engine channel) is not the "
               f"server")
        req = rep.get("requests", {})
        tap.ok(req.get("max_inflight") == 4,
               f"mp {tag}: 4 in flight at most, six idle keep-alive "
               f"connections never counted", req)
    req = rf.get("requests", {})
    tap.ok(req.get("not_http_connections") == 1 and req.get("http") == 7 and
           req.get("probes") == 6,
           "mp full: the engine's channel is no HTTP connection; the six "
           "health polls are probes", req)
    for tag, rep in (("full", rf), ("standby", rs)):
        devs = {d.get("id"): d for d in rep.get("devices", [])}
        d1 = devs.get(1, {})
        tap.ok(len(devs) == 2 and d1.get("total_bytes") == 80 * GIB and
               d1.get("live_bytes_end") == 0,
               f"mp {tag}: the device the run never allocated on is listed "
               f"with its capacity (the inventory at the first driver call)",
               {k: (v.get("name"), v.get("total_bytes")) for k, v in
                devs.items()})
    tap.ok(all(p.get("started_in_standby")
               for p in rs.get("run", {}).get("processes", [])) and
           not any(p.get("started_in_standby")
                   for p in rf.get("run", {}).get("processes", [])),
           "mp: the standby run's processes began in standby")
    sites = {s.get("phase"): s for s in rs.get("top_sites", [])}
    frames = json.dumps(sites.get("weights", {}))
    tap.ok("engine_load_weights" in frames,
           "mp standby: the loaded weights keep their call stack",
           frames[:400])
    other = os.path.join(tmp, "other-rules.txt")
    with open(other, "w") as f:
        f.write("workspace native:engine_reserve_kv_cache\n")
    rr = analyze(a, sb.run, sb.env, "--rules", other)
    got = budgets(rr).get(0, {})
    tap.ok(got.get("workspace") == 40 * GIB and "kv_cache" not in got,
           "mp standby: analyze --rules re-classifies what the snapshot "
           "held", got)


def group_restart(a, tmp):
    full = Server(a, tmp, "rs-full", False)
    sb = Server(a, tmp, "rs-standby", True)
    tap.ok(full.port > 0 and sb.port > 0, "restart: both serve")
    codes = {}
    for srv, standby in ((full, False), (sb, True)):
        c = []
        if standby:
            c.append(srv.ctl("start")[0])
        c += srv.wave(2)
        if standby:
            c.append(srv.ctl("stop")[0])
        c += srv.wave(1)  # in standby
        if standby:
            c.append(srv.ctl("start")[0])
        c += srv.wave(2)
        if standby:
            c.append(srv.ctl("stop")[0])
            c.append(srv.ctl("start")[0])
        c += srv.wave(4)
        codes[standby] = [x for x in c if x is not True]
        srv.wait()
    tap.ok(codes[False] == codes[True],
           f"restart: the same answers {codes[False]} / {codes[True]}")
    rf, rs = analyze(a, full.run, full.env), analyze(a, sb.run, sb.env)
    same("restart", rf, rs)
    ready_on_clock("restart standby", rs, sb)
    ph = {d.get("id"): d.get("phases", {}) for d in rs.get("devices", [])}
    p0 = ph.get(0, {})
    fwd = p0.get("forward", {})
    tap.ok(all(p0.get(k, {}).get("allocs") == 0 and
               p0.get(k, {}).get("frees") == 0
               for k in ("weights", "kv_cache", "cuda_graph")),
           "restart: what snapshots held is never counted as allocated",
           p0)
    # Recorded: 2 + 2 + 3 allocations (the fourth of the last wave
    # failed), 2 + 2 frees; the wave of one in standby is not counted.
    tap.ok(fwd.get("allocs") == 7 and fwd.get("frees") == 4 and
           fwd.get("failed") == 1,
           "restart: each recorded allocation counted once", fwd)
    tap.ok(rs.get("recording_start_s") is not None,
           "restart: recording began late")


def group_oom(a, tmp):
    reps = {}
    for standby in (False, True):
        srv = Server(a, tmp, "oom-" + ("standby" if standby else "full"),
                     standby, ["--oom-recovers"])
        srv.open_idle(2)
        codes = srv.wave(4)
        ok_start = srv.ctl("start")[0] if standby else True
        codes += srv.wave(1)
        srv.quit()
        rc, out = srv.wait()
        tap.ok(sorted(codes) == [200, 200, 200, 200, 503] and rc == 0 and
               ok_start,
               f"oom {'standby' if standby else 'full'}: the fourth request "
               f"refused (503), the server goes on (codes {codes}, "
               f"exit {rc})", out)
        reps[standby] = analyze(a, srv.run, srv.env)
        ready_on_clock(f"oom {'standby' if standby else 'full'}",
                       reps[standby], srv)
    tap.ok(ooms(reps[True]) == [("request", "forward", 4, 0, 8 * GIB)],
           "oom: the OOM that happened in standby is in the report",
           ooms(reps[True]))
    same("oom", reps[False], reps[True])


def main():
    ap = argparse.ArgumentParser()
    for o in ("--vramtrace", "--preload", "--fake-dir", "--serve-sim",
              "--mp-server", "--hold", "--tmp-root"):
        ap.add_argument(o, required=True)
    ap.add_argument("group", choices=("demo", "mp", "restart", "oom"))
    a = ap.parse_args()
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f"standby-full-{a.group}-",
                           dir=a.tmp_root)
    try:
        {"demo": group_demo, "mp": group_mp, "restart": group_restart,
         "oom": group_oom}[a.group](a, tmp)
    finally:
        if tap.failed or os.environ.get("VRT_TEST_KEEP"):
            print(f"# files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
