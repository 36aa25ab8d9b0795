#!/usr/bin/env python3
"""run_verdicts.py — one recorded run per OOM verdict (python3 stdlib only).

Each scenario runs examples/serve_sim (a vLLM-shaped server: vLLM's flags,
tensor-parallel ranks on their own devices, pinned swap space, real
connections on 127.0.0.1) under `vramtrace record` on the fake GPU, then
checks `vramtrace analyze --format json`'s "diagnosis": the exact verdict,
detail, stage, device and evidence numbers, and that the text report opens
with the verdict.

weights         100 GiB of weights on an 80 GiB card: the 26th 3.125 GiB
                layer fails with 1.875 GiB free (card_too_small)
not_sharded     the same model with --tensor-parallel-size 2 on two cards,
                but rank 0 loads everything (--no-shard): device 0 holds
                100% of the weights, device 1 nothing
kv_cache        --max-model-len 131072 at --gpu-memory-utilization 0.95:
                the first request alone needs 8 GiB of activations where
                the KV reserve left 4.125 GiB (context_too_long)
concurrency     8 requests at once, 2 GiB each, 8.5 GiB of headroom: one
                fits, 4 fit, the fifth fails (--max-num-seqs 2: two
                leave the 5% margin, 4 GiB of the card, free)
host_memory     --swap-space 4 with 2 GiB of pinnable host memory: the
                17th 128 MiB pinned block fails; not a VRAM problem
other_processes 30 GiB held by PID 4242 (FAKECUDA_USED, fake NVML): the
                57.5 GiB KV reserve fails 21.5 GiB short
none            defaults: everything fits, 512 MiB headroom

--runtime hip runs the same scenarios with serve_sim --runtime hip against
the fake HIP runtime (FAKEHIP_* instead of FAKECUDA_*) and expects the same
verdict, detail, stage and evidence numbers, on devices of vendor "hip".
AMD has no NVML: other_processes sees the 30 GiB (FAKEHIP_USED) through the
runtime's free/total, without a PID.

Usage: run_verdicts.py --vramtrace EXE --preload LIB --fake-dir DIR
                       --serve-sim EXE --tmp-root DIR [--runtime cuda|hip]
Exit 0 pass, 1 fail (what differed is printed).
"""
import json
import os
import sys

from harness import check, options, record_env, run, scratch

GIB = 1 << 30
MIB = 1 << 20


def kv_reserve(util, total, weights, profile):
    # serve_sim's own double arithmetic (Python floats are C doubles).
    return int(util * total - weights - profile)


def fake_env(args, env_extra):
    """The scenario's fake-driver settings, written FAKECUDA_*; on HIP
    they go to the fake HIP runtime's FAKEHIP_* and NVML's are dropped."""
    env = {"FAKECUDA_MEM": "80G"}
    env.update(env_extra)
    if args.runtime == "cuda":
        return env
    return {k.replace("FAKECUDA_", "FAKEHIP_"): v for k, v in env.items()
            if not k.startswith("FAKENVML_")}


def scenario(args, tmp, name, env_extra, sim_args, exit_code):
    env = record_env(args, fake_env(args, env_extra),
                     clean=("FAKECUDA_", "FAKEHIP_", "FAKENVML_"))
    out = os.path.join(tmp, name)
    run([args.vramtrace, "record", "-o", out, "--", args.serve_sim,
         "serve", "sim-model"] + sim_args + ["--runtime", args.runtime],
        env, ok_codes=(exit_code,))
    rep = json.loads(run([args.vramtrace, "analyze", "--format", "json",
                          out], env))
    text = run([args.vramtrace, "analyze", out], env)
    d = rep.get("diagnosis") or {}
    ev = {}
    for e in d.get("evidence", []):
        ev.setdefault(e.get("key"), e.get("value"))
    first = text.splitlines()[0] if text else ""
    check(first.startswith("DIAGNOSIS: " + d.get("verdict", "?")),
          f"{name}: the text report opens with the verdict (got {first!r})")
    for key in ("verdict", "detail", "stage", "evidence", "actions",
                "costs", "verify", "devices"):
        check(key in d, f"{name}: diagnosis has '{key}'")
    check(any("vramtrace compare" in v for v in d.get("verify", [])),
          f"{name}: verify names vramtrace compare")
    devs = rep.get("devices", [])
    name_prefix = "Fake AMD GPU" if args.runtime == "hip" else "Fake GPU"
    check(devs and all(x.get("vendor") == args.runtime and
                       (x.get("name") or "").startswith(name_prefix)
                       for x in devs),
          f"{name}: devices are {args.runtime} ones (got "
          f"{[(x.get('vendor'), x.get('name')) for x in devs]})")
    if args.runtime == "hip":
        check("CUDA" not in text and "cuMem" not in text,
              f"{name}: no CUDA wording in a HIP run's report")
    return d, ev


def expect(name, d, ev, verdict, detail, stage, device, numbers):
    check(d.get("verdict") == verdict,
          f"{name}: verdict {verdict} (got {d.get('verdict')!r})")
    check(d.get("detail") == detail,
          f"{name}: detail {detail} (got {d.get('detail')!r})")
    check(d.get("stage") == stage,
          f"{name}: stage {stage} (got {d.get('stage')!r})")
    check(d.get("device") == device,
          f"{name}: device {device} (got {d.get('device')!r})")
    for key, want in numbers.items():
        check(ev.get(key) == want,
              f"{name}: evidence {key} = {want} (got {ev.get(key)!r})")


def has_action(d, text):
    return any(text in a for a in d.get("actions", []))


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--serve-sim",
                 "--tmp-root")
    ap.add_argument("--runtime", choices=("cuda", "hip"), default="cuda")
    args = ap.parse_args()
    hip = args.runtime == "hip"
    util = ["--gpu-memory-utilization", "0.9"]

    def body(tmp):
        layer = 100 * GIB // 32
        d, ev = scenario(args, tmp, "weights", {},
                         util + ["--model-size-gib", "100"], 3)
        expect("weights", d, ev, "weights", "card_too_small", "load", 0,
               {"requested_bytes": layer,
                "free_bytes": 80 * GIB - 25 * layer,
                "weights_loaded_bytes": 26 * layer,
                "weights_bytes": 25 * layer})
        check(has_action(d, "vLLM: shard the weights over more cards: "
                         "--tensor-parallel-size 2"),
              "weights: action --tensor-parallel-size 2")

        d, ev = scenario(args, tmp, "not_sharded", {"FAKECUDA_DEVICES": "2"},
                         util + ["--model-size-gib", "100",
                                 "--tensor-parallel-size", "2",
                                 "--no-shard"], 3)
        expect("not_sharded", d, ev, "weights", "not_sharded", "load", 0,
               {"requested_bytes": layer,
                "weights_share_percent": 100,
                "idle_device_peak_bytes": 0,
                "tensor_parallel": 2})
        check(len(d.get("devices", [])) == 2,
              "not_sharded: both devices in the diagnosis")

        total = 80 * GIB
        kv = kv_reserve(0.95, total, 14 * GIB, 2048 * 64 * 1024)
        d, ev = scenario(args, tmp, "kv_cache", {},
                         ["--gpu-memory-utilization", "0.95",
                          "--max-model-len", "131072",
                          "--act-kib-per-token", "64"], 3)
        expect("kv_cache", d, ev, "kv_cache", "context_too_long",
               "request", 0,
               {"requested_bytes": 8 * GIB,
                "free_bytes": total - 14 * GIB - kv,
                "single_request_bytes": 8 * GIB,
                "weights_bytes": 14 * GIB})
        # The margin keeps 5% of the card (4 GiB) free: 131072 x (4.125
        # - 4) GiB / 8 GiB = 2048; the reserve frees 8 + 4 - 4.125 GiB:
        # 0.95 - 0.099 = 0.851, to 0.85
        check(has_action(d, "--max-model-len 2048 (was 131072)"),
              f"kv_cache: action --max-model-len 2048 (got "
              f"{d.get('actions')})")
        check(has_action(d, "--gpu-memory-utilization 0.85 (was 0.95)"),
              "kv_cache: action --gpu-memory-utilization 0.85")
        check(len(d.get("costs", [])) == len(d.get("actions", [])),
              "kv_cache: a cost for every action")

        kv = kv_reserve(0.9, total, 14 * GIB, 2048 * 256 * 1024)
        d, ev = scenario(args, tmp, "concurrency", {},
                         util + ["--max-model-len", "8192",
                                 "--max-num-seqs", "16",
                                 "--concurrent-requests", "8"], 3)
        room = total - 14 * GIB - kv
        expect("concurrency", d, ev, "concurrency", "overlapping_requests",
               "request", 0,
               {"requested_bytes": 2 * GIB,
                "free_bytes": room - 4 * 2 * GIB,
                "single_request_peak_bytes": 2 * GIB,
                "request_headroom_bytes": room,
                "requests_that_fit": room // (2 * GIB)})
        check(room // (2 * GIB) == 4, "concurrency: 4 requests fit")
        # (8.5 - 4) GiB / 2 GiB: two leave the 4 GiB margin free
        check(has_action(d, "vLLM: cap concurrent sequences: "
                         "--max-num-seqs 2 (was 16)"),
              f"concurrency: action --max-num-seqs 2 (got "
              f"{d.get('actions')})")

        d, ev = scenario(args, tmp, "host_memory",
                         {"FAKECUDA_HOST_MEM": "2G"},
                         util + ["--swap-space", "4"], 3)
        expect("host_memory", d, ev, "host_memory", "pinned_alloc_failed",
               "load", None,
               {"requested_bytes": 128 * MIB,
                "pinned_peak_bytes": 2 * GIB,
                "vram_ok": 0})

        kv = kv_reserve(0.9, total, 14 * GIB, 2048 * 256 * 1024)
        d, ev = scenario(args, tmp, "other_processes",
                         {"FAKECUDA_USED": "30G",
                          "FAKENVML_PROCS": "0:4242:30G",
                          "VRAMTRACE_SAMPLE_MS": "10"},
                         util + ["--load-ms", "200"], 3)
        numbers = {"requested_bytes": kv,
                   "free_bytes": 36 * GIB,
                   "other_processes_bytes": 30 * GIB,
                   "shortfall_bytes": kv - 36 * GIB}
        if not hip:
            numbers["other_pid"] = 4242
        expect("other_processes", d, ev, "other_processes", "device_shared",
               "load", 0, numbers)
        pids = [] if hip else [4242]
        check(d.get("other_pids", []) == pids,
              f"other_processes: PIDs {pids} named (got "
              f"{d.get('other_pids')})")
        check(not any("kill" in a for a in d.get("actions", [])),
              "other_processes: never suggests killing them")

        d, ev = scenario(args, tmp, "none", {}, util, 0)
        headroom = total - 14 * GIB - kv - 4 * 2 * GIB
        expect("none", d, ev, "none", "fits", "request", None,
               {"headroom_bytes": headroom,
                "max_inflight": 4,
                "headroom_below_margin": headroom})
        check(has_action(d, "keeps less than the 5% margin"),
              f"none: 512 MiB of 80 GiB is below the margin (got "
              f"{d.get('actions')})")

    return scratch(args, f"verdicts-{args.runtime}-", body)


if __name__ == "__main__":
    sys.exit(main())
