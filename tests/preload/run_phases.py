#!/usr/bin/env python3
"""run_phases.py — phase attribution end to end (python3 stdlib only).

Each scenario records a program under `vramtrace record` against the fake
driver and checks `vramtrace analyze --format json` exactly:

native      phase_native (llama.cpp function names, exported symbols):
            weights 3 allocs / 288 MiB, kv_cache 2 allocs (1 GiB by rule +
            32 MiB announced with the annotation API, which wins over the
            forward rule around it), forward 4 allocs / peak 64 MiB,
            unattributed 1 / 8 MiB, custom phase "scratch" 1 / 16 MiB, and
            the mark "serving".
user-rules  the same program with VRAMTRACE_RULES naming plain_helper as
            workspace: those 8 MiB move from unattributed to workspace,
            nothing else changes.
re-classify `analyze --rules FILE` on the first trace gives the same answer
            as recording with the file.
llama       examples/llama_sim (llama.cpp's names, resolver path, real
            connections on 127.0.0.1 from 5 client threads): weights 24 /
            240 MiB, kv_cache 1 / 320 MiB, forward 6 / peak 240 MiB, nothing
            unattributed, at most 5 in flight, one request's peak 48 MiB.
llama-pool  llama_sim with ggml's CUDA pool (--pool-mib) on a card where one
            request fits and four do not: the pool's allocations under
            llama_decode are forward (not workspace), 256 MiB at the peak,
            the one failure is the pool growing, in forward, and the
            diagnosis is concurrency.
llama-warmup llama_sim with the VMM pool and the start-up warm-up: the
            warm-up decode's first pool chunk (under
            common_init_from_params) is forward, and profile is the compute
            buffer alone, 1 / 92 MiB, as the log prints it.
inferred    examples/sim_server (no rule names its functions): the KV
            reserve made right after a free-memory probe is reported as
            "kv_cache (inferred)", 56 GiB.
tree        proc_tree: a fork child without exec (own file) and a
            posix_spawn'd child (exec, same run): 3 processes linked by
            ppid, 3 allocations, 15 MiB, every trace complete.
stress      stack_stress: 4 x 1 MiB weights through a library without frame
            pointers, 5 MiB forward under recursion 300 deep (past the
            cap), allocating signal handlers (synchronous and a storm):
            phases right, counts within the storm's bounds, no deadlock.
python      phase_python.py (vLLM's GPUModelRunner names and module path,
            ctypes, which releases the GIL while the hooks run; some calls
            by symbol, the rest through cuGetProcAddress): weights 2 /
            400 MiB, profile 2 / 300 MiB (one from under recursion past the
            cap), kv_cache 1 / 2 GiB, cuda_graph 1 / 24 MiB, forward 4 /
            peak 150 MiB; server ready before the first request; at most 3
            requests in flight; one request's forward peak 50 MiB.

Usage: run_phases.py --vramtrace EXE --preload LIB --fake-dir DIR
                     --native EXE --python-client PY --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import json
import os
import sys

from harness import check, options, record_env, run, scratch

MIB = 1 << 20


def record_and_analyze(args, tmp, name, prog, extra_env=None, rules=None,
                       ok_codes=(0,)):
    env = record_env(args, extra_env)
    out = os.path.join(tmp, name)
    run([args.vramtrace, "record", "-o", out, "--"] + prog, env,
        ok_codes=ok_codes)
    cmd = [args.vramtrace, "analyze", "--format", "json", out]
    if rules:
        cmd += ["--rules", rules]
    return json.loads(run(cmd, env)), out


def phases(report):
    dev = [d for d in report["devices"] if d.get("id") == 0]
    return dev[0]["phases"] if dev else {}


def expect_phase(ph, name, allocs, peak, label):
    got = ph.get(name, {})
    check(got.get("allocs") == allocs and got.get("peak_bytes") == peak,
          f"{label}: {name} allocs={allocs} peak={peak} "
          f"(got allocs={got.get('allocs')} peak={got.get('peak_bytes')})")


def native(args, tmp):
    rep, run_dir = record_and_analyze(args, tmp, "native", [args.native])
    ph = phases(rep)
    expect_phase(ph, "weights", 3, 288 * MIB, "native")
    expect_phase(ph, "kv_cache", 2, 1056 * MIB, "native")
    expect_phase(ph, "forward", 4, 64 * MIB, "native")
    expect_phase(ph, "unattributed", 1, 8 * MIB, "native")
    expect_phase(ph, "scratch", 1, 16 * MIB, "native")
    check([m.get("label") for m in rep.get("marks", [])] == ["serving"],
          "native: the mark 'serving' is reported")

    rules = os.path.join(tmp, "rules.txt")
    with open(rules, "w") as f:
        f.write("# user rules come before the built-in ones\n"
                "workspace native:plain_helper\n")
    rep2, _ = record_and_analyze(args, tmp, "native-rules", [args.native],
                                 {"VRAMTRACE_RULES": rules})
    ph2 = phases(rep2)
    expect_phase(ph2, "workspace", 1, 8 * MIB, "user rules")
    check("unattributed" not in ph2 or ph2["unattributed"]["allocs"] == 0,
          "user rules: nothing left unattributed")
    expect_phase(ph2, "weights", 3, 288 * MIB, "user rules")

    rep3 = json.loads(run([args.vramtrace, "analyze", "--format", "json",
                           "--rules", rules, run_dir], dict(os.environ)))
    ph3 = phases(rep3)
    expect_phase(ph3, "workspace", 1, 8 * MIB, "analyze --rules")
    expect_phase(ph3, "kv_cache", 2, 1056 * MIB, "analyze --rules")


def llama(args, tmp):
    rep, _ = record_and_analyze(args, tmp, "llama",
                                [args.llama, "-ngl", "24", "--layer-mib",
                                 "10", "-c", "2048", "--kv-kib-per-token",
                                 "160", "--act-mib", "48", "-np", "5"])
    ph = phases(rep)
    expect_phase(ph, "weights", 24, 240 * MIB, "llama_sim")
    expect_phase(ph, "kv_cache", 1, 320 * MIB, "llama_sim")
    expect_phase(ph, "forward", 6, 5 * 48 * MIB, "llama_sim")
    check("unattributed" not in ph or ph["unattributed"]["allocs"] == 0,
          "llama_sim: nothing unattributed")
    req = rep.get("requests", {})
    check(req.get("max_inflight") == 5,
          f"llama_sim: max_inflight 5 (got {req.get('max_inflight')!r})")
    check(req.get("single_request_peak_bytes") == 48 * MIB,
          "llama_sim: single request forward peak 48 MiB (got "
          f"{req.get('single_request_peak_bytes')!r})")
    check(isinstance(rep.get("server_ready_s"), (int, float)),
          "llama_sim: server ready time reported")
    # serve() is static: only the executable's .symtab names it.
    fwd = [t for t in rep.get("top_sites", []) if t.get("phase") == "forward"]
    names = [f.get("function") for t in fwd for f in t.get("frames", [])]
    check(names[:2] == ["llama_decode", "serve"],
          f"llama_sim: forward site is llama_decode <- serve (got {names[:3]})")


def llama_pool(args, tmp):
    """ggml's CUDA pool is per-request demand: forward, never workspace."""
    # 512 MiB of weights, a 256 MiB KV cache, then 4 slots on a 1200 MiB
    # card: each request in flight needs 64 MiB of activations and 128 MiB
    # of pool. One request alone fits (960 MiB); with four at once the pool
    # grows at the second and fails growing at the third.
    rep, _ = record_and_analyze(
        args, tmp, "llama-pool",
        [args.llama, "-ngl", "8", "--layer-mib", "64", "-c", "1024",
         "--kv-kib-per-token", "256", "--act-mib", "64", "--pool-mib", "128",
         "-np", "4"],
        {"FAKECUDA_MEM": str(1200 * MIB)}, ok_codes=(3,))
    ph = phases(rep)
    expect_phase(ph, "weights", 8, 512 * MIB, "llama pool")
    expect_phase(ph, "kv_cache", 1, 256 * MIB, "llama pool")
    # Activations 64 MiB x 3 (the first request's, freed; two at once)
    # and the pool grown twice, 2 x 128 MiB, kept: a peak of 384 MiB.
    expect_phase(ph, "forward", 5, 384 * MIB, "llama pool")
    check("workspace" not in ph,
          f"llama pool: nothing is workspace (got {sorted(ph)})")
    fwd = [t for t in rep.get("top_sites", []) if t.get("phase") == "forward"]
    pool_sites = [t for t in fwd
                  if [f.get("function") for f in t.get("frames", [])][:2]
                  == ["ggml_cuda_pool_leg_alloc", "llama_decode"]]
    check(sum(t.get("bytes", 0) for t in pool_sites) == 256 * MIB,
          "llama pool: the pool's 256 MiB at the peak is a forward site "
          f"under llama_decode (got {pool_sites})")
    fails = rep.get("failures", [])
    check(len(fails) == 1 and fails[0].get("phase") == "forward" and
          fails[0].get("requested_bytes") == 128 * MIB,
          f"llama pool: the one failure is the pool's 128 MiB, forward "
          f"(got {fails})")
    verdict = (rep.get("diagnosis") or {}).get("verdict")
    check(verdict == "concurrency",
          f"llama pool: one request fits, four do not: concurrency (got "
          f"{verdict!r})")


def llama_warmup(args, tmp):
    """The warm-up's pool chunk is a decode's, not the compute buffer's."""
    rep, _ = record_and_analyze(
        args, tmp, "llama-warmup",
        [args.llama, "-ngl", "8", "--layer-mib", "64", "-c", "1024",
         "--kv-kib-per-token", "256", "--act-mib", "64", "--compute-mib",
         "92", "--warmup", "--allocator", "pool-vmm", "-np", "1"],
        {"FAKECUDA_MEM": str(4096 * MIB)})
    ph = phases(rep)
    expect_phase(ph, "profile", 1, 92 * MIB, "llama warm-up")
    warm = [t for t in rep.get("top_sites", [])
            if "common_init_from_params" in
            [f.get("function") for f in t.get("frames", [])]
            and any((f.get("function") or "").startswith("ggml_cuda_pool")
                    for f in t.get("frames", []))]
    check(warm and all(t.get("phase") == "forward" for t in warm),
          "llama warm-up: the warm-up's pool chunk is forward (got "
          f"{[(t.get('phase'), t.get('bytes')) for t in warm]})")


def inferred(args, tmp):
    rep, _ = record_and_analyze(args, tmp, "inferred", [args.sim_server])
    ph = phases(rep)
    got = ph.get("kv_cache (inferred)", {})
    # 90% of 80 GiB minus 14 GiB of weights (cut into 130 tensors, so a
    # few bytes less) and 2 GiB of activations: 56 GiB and a little.
    check(got.get("allocs") == 1 and
          56 << 30 <= got.get("peak_bytes", 0) < (56 << 30) + MIB,
          "sim_server: the KV reserve after a free-memory probe is "
          f"'kv_cache (inferred)', 56 GiB (got {got!r})")
    check("kv_cache" not in ph, "sim_server: nothing claims a rule's kv_cache")


def tree(args, tmp):
    rep, _ = record_and_analyze(args, tmp, "tree", [args.proc_tree])
    procs = rep["run"]["processes"]
    check(len(procs) == 3, f"proc_tree: 3 processes traced (got "
          f"{len(procs)})")
    pids = {p["pid"] for p in procs}
    parent = [p for p in procs if p["ppid"] not in pids]
    check(len(parent) == 1 and all(p["ppid"] == parent[0]["pid"]
                                   for p in procs if p is not parent[0]),
          "proc_tree: both children name the parent as ppid")
    dev = [d for d in rep["devices"] if d.get("id") == 0][0]
    fam = dev["families"]["device"]
    check(fam["allocs"] == 3 and fam["live_bytes_end"] == 15 * MIB,
          f"proc_tree: 3 allocations, 15 MiB across the tree (got {fam})")
    check(not rep["run"]["truncated"],
          "proc_tree: every trace ends cleanly (_exit flushes too)")


def stress(args, tmp):
    rep, _ = record_and_analyze(args, tmp, "stress", [args.stress])
    ph = phases(rep)
    expect_phase(ph, "weights", 4, 4 * MIB, "stress (through a library "
                 "without frame pointers)")
    expect_phase(ph, "forward", 1, 5 * MIB, "stress (recursion past the cap)")
    dev = [d for d in rep["devices"] if d.get("id") == 0][0]
    allocs = dev["families"]["device"]["allocs"]
    fixed = 4 + 1 + 10 + 20000
    check(allocs == fixed, f"stress: {fixed} device allocs (got {allocs})")
    marks = len(rep.get("marks", []))
    # Handlers that interrupt a hook pass through unrecorded, so how many
    # marks survive depends on timing: only the bound is checked.
    check(marks <= 2000, f"stress: at most 2000 marks (got {marks})")
    check(not rep["run"]["truncated"], "stress: trace complete")


def python(args, tmp):
    rep, _ = record_and_analyze(args, tmp, "python",
                                [sys.executable, args.python_client])
    ph = phases(rep)
    expect_phase(ph, "weights", 2, 400 * MIB, "python")
    expect_phase(ph, "profile", 2, 300 * MIB, "python")
    expect_phase(ph, "kv_cache", 1, 2048 * MIB, "python")
    expect_phase(ph, "cuda_graph", 1, 24 * MIB, "python")
    expect_phase(ph, "forward", 4, 150 * MIB, "python")
    ready = rep.get("server_ready_s")
    check(isinstance(ready, (int, float)) and ready >= 0,
          f"python: server_ready_s is a time (got {ready!r})")
    req = rep.get("requests", {})
    check(req.get("max_inflight") == 3,
          f"python: max_inflight 3 (got {req.get('max_inflight')!r})")
    check(req.get("single_request_peak_bytes") == 50 * MIB,
          "python: single request forward peak 50 MiB (got "
          f"{req.get('single_request_peak_bytes')!r})")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--native",
              "--llama", "--proc-tree", "--sim-server", "--stress",
              "--python-client", "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        native(args, tmp)
        llama(args, tmp)
        llama_pool(args, tmp)
        llama_warmup(args, tmp)
        inferred(args, tmp)
        tree(args, tmp)
        stress(args, tmp)
        python(args, tmp)

    return scratch(args, "phases-", body)


if __name__ == "__main__":
    sys.exit(main())
