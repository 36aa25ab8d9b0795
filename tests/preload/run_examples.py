#!/usr/bin/env python3
"""run_examples.py — the example servers do what real engines do, as a
profiler sees it (python3 stdlib only): each run is recorded on the fake
GPU and its `vramtrace analyze --format json` report checked for the
driver calls and facts the engine would leave.

caching      PyTorch's caching allocator: 5 requests' activations take 4
             driver calls (a cached segment is reused), nothing is ever
             given back to the driver, and the stacks carry c10's names
recovered    a refused cudaMalloc, the cached segment freed, the retry
             served: one failure, one free, exit 0
expandable   pages through cuMemCreate/cuMemMap (family vmm), no
             cuMemAlloc, address space reserved
async        backend:cudaMallocAsync: stream-ordered calls (family async),
             every request's tensor freed again
pool-vmm     llama.cpp's VMM pool: grows three times (warm-up, one
             request, a batch of 4), never shrinks; ggml's names
pool-leg     llama.cpp's legacy pool: buffers never given back
annotate     --annotate none: no phase comes from the annotation API
tp-procs     --distributed-executor-backend mp: API server plus two
             workers with multiprocessing-spawn command lines, children of
             one engine core; a worker's refusal ends the tree with 1
listen       llama-server's listen-before-load: ready before the weights
             fail, /health polled (503) while loading
ollama       load on the first request: ready, then the load fails with
             the request waiting
keepalive    idle keep-alive connections are accepted and stay open

Usage: run_examples.py --vramtrace EXE --preload LIB --fake-dir DIR
                       --bin-dir DIR --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import json
import os
import re
import subprocess
import sys

from harness import check, options, record_env, scratch

SPAWN = re.compile(r"from multiprocessing\.spawn import spawn_main; "
                   r"spawn_main\(tracker_fd=\d+, pipe_handle=\d+\)$")



def record(args, tmp, name, argv, exit_code=0, env_extra=None):
    env = record_env(args, {"FAKECUDA_MEM": "80G", **(env_extra or {})},
                     clean=("FAKECUDA_", "FAKEHIP_", "FAKENVML_",
                            "VRAMTRACE_"))
    out = os.path.join(tmp, name)
    cmd = [args.vramtrace, "record", "-o", out, "--",
           os.path.join(args.bin_dir, argv[0])] + argv[1:]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=100)
    check(p.returncode == exit_code,
          f"{name}: exit {exit_code} (got {p.returncode})")
    if p.returncode != exit_code:
        print(p.stdout)
    a = subprocess.run([args.vramtrace, "analyze", "--format", "json", out],
                       env=env, stdout=subprocess.PIPE, text=True,
                       timeout=100)
    return json.loads(a.stdout), p.stdout


def fam(rep, name, dev=0):
    return rep["devices"][dev]["families"].get(name, {})


def phase(rep, name, dev=0):
    return rep["devices"][dev]["phases"].get(name, {})


def functions(rep, phase_name):
    return [f.get("function") or "" for t in rep.get("top_sites", [])
            if t.get("phase") == phase_name for f in t.get("frames", [])]


def serve_sim_runs(args, tmp):
    rep, _ = record(args, tmp, "caching",
                    ["serve_sim", "serve", "m", "--allocator", "caching"])
    dev = fam(rep, "device")
    check(phase(rep, "forward").get("allocs") == 4,
          f"caching: 5 requests, 4 driver allocations (got "
          f"{phase(rep, 'forward').get('allocs')})")
    check(dev.get("frees") == 0,
          f"caching: nothing given back to the driver (got "
          f"{dev.get('frees')} frees)")
    names = functions(rep, "forward")
    check(any(n.startswith("c10::cuda::CUDACachingAllocator::Native::"
                           "DeviceCachingAllocator::malloc") for n in names),
          f"caching: stacks name PyTorch's allocator (got {names[:4]})")

    rep, _ = record(args, tmp, "recovered",
                    ["serve_sim", "serve", "m", "--allocator", "caching",
                     "--gpu-memory-utilization", "0.98",
                     "--act-kib-per-token", "512", "--prompt-len", "4096",
                     "--concurrent-requests", "1"])
    dev = fam(rep, "device")
    check(dev.get("failed") == 1 and dev.get("frees") == 1,
          f"recovered: one refusal, the cached segment freed (got "
          f"{dev.get('failed')} failed, {dev.get('frees')} frees)")
    check(len(rep.get("ooms", [])) == 1 and
          rep["ooms"][0].get("phase") == "forward",
          "recovered: the refusal is a request's activations")
    check(phase(rep, "forward").get("allocs") == 1 and
          phase(rep, "forward").get("peak_bytes") == 2 << 30,
          "recovered: the retry allocated the request's 2 GiB")

    rep, _ = record(args, tmp, "expandable",
                    ["serve_sim", "serve", "m", "--allocator", "expandable"])
    check(fam(rep, "device").get("allocs", 0) == 0 and
          fam(rep, "vmm").get("allocs", 0) > 3000,
          f"expandable: only VMM pages (got device "
          f"{fam(rep, 'device').get('allocs')}, vmm "
          f"{fam(rep, 'vmm').get('allocs')})")
    check(rep["devices"][0].get("reserved_va", {}).get("peak_bytes", 0) ==
          90 << 30,
          "expandable: 9/8 of the card reserved as address space")

    rep, _ = record(args, tmp, "async",
                    ["serve_sim", "serve", "m", "--allocator", "async"])
    a = fam(rep, "async")
    check(fam(rep, "device").get("allocs", 0) == 0 and
          a.get("allocs") == 39 and a.get("frees") == 6,
          f"async: 39 stream-ordered allocations, profile and 5 requests "
          f"freed (got {a.get('allocs')}/{a.get('frees')})")

    rep, _ = record(args, tmp, "annotate-none",
                    ["serve_sim", "serve", "m", "--annotate", "none"])
    named = [p for p in ("weights", "forward", "profile")
             if phase(rep, p).get("allocs")]
    check(not named, f"annotate none: no annotated phase (got {named})")

    rep, _ = record(args, tmp, "tp-procs",
                    ["serve_sim", "serve", "m",
                     "--distributed-executor-backend", "mp",
                     "--tensor-parallel-size", "2"],
                    env_extra={"FAKECUDA_DEVICES": "2"})
    procs = rep["run"]["processes"]
    api = [p for p in procs if p["cmdline"][1:2] == ["serve"]]
    workers = [p for p in procs if len(p["cmdline"]) == 4 and
               p["cmdline"][1] == "-c" and SPAWN.match(p["cmdline"][2]) and
               p["cmdline"][3] == "--multiprocessing-fork"]
    check(len(api) == 1 and len(workers) == 2,
          f"tp-procs: an API server and two spawned workers (got "
          f"{[p['cmdline'][:2] for p in procs]})")
    if len(api) == 1 and len(workers) == 2:
        core = workers[0]["ppid"]
        check(workers[1]["ppid"] == core and core != api[0]["pid"],
              "tp-procs: both workers are children of one engine core")
    check(all(phase(rep, "weights", d).get("peak_bytes") == 7 << 30
              for d in (0, 1)),
          "tp-procs: each worker holds half of the weights")

    rep, _ = record(args, tmp, "tp-procs-oom",
                    ["serve_sim", "serve", "m",
                     "--distributed-executor-backend", "mp",
                     "--tensor-parallel-size", "2", "--model-size-gib",
                     "100", "--no-shard"], exit_code=1,
                    env_extra={"FAKECUDA_DEVICES": "2"})
    spawned = {p["pid"] for p in rep["run"]["processes"]
               if p["cmdline"][1:2] == ["-c"]}
    ooms = rep.get("ooms", [])
    check(ooms and all(o.get("pid") in spawned for o in ooms),
          "tp-procs-oom: the refusal is in a spawned worker")

    rep, _ = record(args, tmp, "keepalive",
                    ["serve_sim", "serve", "m", "--idle-connections", "5",
                     "--concurrent-requests", "1"])
    check(rep["requests"].get("connections", 0) >= 7,
          f"keepalive: health, 5 idle, 1 request connections (got "
          f"{rep['requests'].get('connections')})")


def visible_devices_runs(args, tmp):
    """Two servers of one recording, each given its own card with
    CUDA_VISIBLE_DEVICES (as a launcher pins a replica): each calls its
    card device 0, as with the real driver, and the cards stay apart in
    the analysis because each carries its own UUID (the fake driver
    renumbers the visible cards and keeps their physical identity)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FAKECUDA_", "FAKEHIP_", "FAKENVML_",
                                "VRAMTRACE_", "CUDA_VISIBLE_DEVICES"))}
    env["LD_LIBRARY_PATH"] = args.fake_dir + ":" + env.get(
        "LD_LIBRARY_PATH", "")
    env["VRAMTRACE_PRELOAD"] = os.path.abspath(args.preload)
    env["FAKECUDA_DEVICES"] = "2"
    env["FAKECUDA_MEM"] = "80G,96G"
    sim = os.path.join(args.bin_dir, "serve_sim")
    out = os.path.join(tmp, "visible")
    script = (f"CUDA_VISIBLE_DEVICES=1 {sim} serve b "
              f"--gpu-memory-utilization 0.9 & "
              f"CUDA_VISIBLE_DEVICES=0 {sim} serve a "
              f"--gpu-memory-utilization 0.9 & wait")
    cmd = [args.vramtrace, "record", "-o", out, "--", "/bin/sh", "-c",
           script]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=100)
    check(p.returncode == 0, f"visible: exit 0 (got {p.returncode})")
    a = subprocess.run([args.vramtrace, "analyze", "--format", "json", out],
                       env=env, stdout=subprocess.PIPE, text=True,
                       timeout=100)
    rep = json.loads(a.stdout)
    devs = rep.get("devices", [])
    names = sorted(d.get("name") for d in devs)
    uuids = {d.get("uuid") for d in devs}
    check(names == ["Fake GPU 0", "Fake GPU 1"] and len(uuids) == 2,
          f"visible: two cards, each its own UUID (got {names}, {uuids})")
    check(all(d.get("ordinal") == 0 for d in devs),
          "visible: each process calls its card device 0")
    check(all(d["peak"]["tracked_bytes"] <= d["total_bytes"] for d in devs),
          "visible: no card holds more than it has")
    totals = sorted(d.get("total_bytes") for d in devs)
    check(totals == [80 << 30, 96 << 30],
          f"visible: each card keeps its own capacity (got {totals})")
    dg = rep.get("diagnosis") or {}
    check(dg.get("verdict") == "none" and
          dg.get("detail") not in ("peak_over_capacity",
                                   "device_identity_conflict"),
          f"visible: no data problem (got {dg.get('verdict')}, "
          f"{dg.get('detail')})")
    env["CUDA_VISIBLE_DEVICES"] = ""
    p = subprocess.run([sim, "serve", "m"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=60)
    check(p.returncode != 0,
          f"visible: CUDA_VISIBLE_DEVICES='' hides every card (exit "
          f"{p.returncode})")


def llama_runs(args, tmp):
    common = ["-ngl", "8", "--layer-mib", "64", "-c", "1024",
              "--kv-kib-per-token", "128", "--act-mib", "256", "-np", "4"]
    rep, _ = record(args, tmp, "pool-vmm",
                    ["llama_sim", "--allocator", "pool-vmm", "--warmup"] +
                    common)
    v = fam(rep, "vmm")
    check(v.get("allocs") == 3 and
          v.get("live_bytes_end") == v.get("peak_bytes"),
          f"pool-vmm: grows 3 times, never shrinks (got {v.get('allocs')} "
          f"handles, {v.get('live_bytes_end')} of {v.get('peak_bytes')} "
          f"live at the end)")
    check(v.get("live_bytes_end") == 4 * 256 << 20,
          "pool-vmm: the pool ends as large as the batch of 4 needed")
    # The rules give the pool the phase of the decode that grows it.
    names = functions(rep, "forward")
    check("ggml_cuda_pool_vmm::alloc(unsigned long, unsigned long*)" in names
          and "llama_context::decode(llama_batch const&)" in names,
          f"pool-vmm: stacks name llama.cpp's pool (got {names[:5]})")

    rep, _ = record(args, tmp, "pool-leg",
                    ["llama_sim", "--allocator", "pool-leg", "--warmup"] +
                    common)
    d = fam(rep, "device")
    check(d.get("frees") == 0 and d.get("allocs") == 8 + 1 + 3,
          f"pool-leg: weights, KV and 3 pool buffers, none given back "
          f"(got {d.get('allocs')}/{d.get('frees')})")

    rep, out = record(args, tmp, "listen",
                      ["llama_sim", "--listen-before-load", "--load-ms",
                       "100", "-ngl", "90", "--layer-mib", "1024"],
                      exit_code=3)
    ooms = rep.get("ooms", [])
    listen = rep.get("listen") or {}
    check(listen.get("time_s") is not None and ooms and
          ooms[0].get("phase") == "weights" and
          ooms[0]["time_s"] > listen["time_s"],
          "listen: listening before the weights fail")
    check(rep.get("server_ready_s") is None,
          "listen: never ready (listening is not being ready; /health "
          "polls answered 503 are probes)")
    check(rep["requests"].get("connections", 0) > 2 and
          rep["requests"].get("probes", 0) > 2 and
          rep["requests"].get("http") == 0 and
          rep["requests"].get("serving_s") is None,
          "listen: /health polled while loading, counted apart as probes")

    rep, _ = record(args, tmp, "ollama",
                    ["llama_sim", "--load-on-request", "-ngl", "90",
                     "--layer-mib", "1024"], exit_code=3)
    ooms = rep.get("ooms", [])
    listen = rep.get("listen") or {}
    check(ooms and ooms[0].get("phase") == "weights" and
          ooms[0].get("inflight") == 1 and
          ooms[0]["time_s"] > (listen.get("time_s") or 1e9) and
          rep.get("server_ready_s") is None,
          "ollama: the weights fail after listening, a request waiting")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--bin-dir",
              "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        serve_sim_runs(args, tmp)
        visible_devices_runs(args, tmp)
        llama_runs(args, tmp)

    return scratch(args, "examples-", body)


if __name__ == "__main__":
    sys.exit(main())
