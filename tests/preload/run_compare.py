#!/usr/bin/env python3
"""run_compare.py — `compare` and `table` end to end (python3 stdlib only).

Records examples/llama_sim three times on the fake GPU under
`vramtrace record`, each run a separate process with its own load
addresses:

np2   -ngl 24 --layer-mib 10 -c 2048 --kv-kib-per-token 160 --act-mib 48
      -np 2: weights 240 MiB, KV 320 MiB, forward peak 2 x 48 MiB.
np6   the same with -np 6: forward peak 6 x 48 MiB.
oom   -np 8 on a card of 800 MiB: the sixth request in flight does not fit
      (request stage, phase forward); llama_sim exits 3.

Then checks exactly:
compare np2 np6   the device peak grows by 192 MiB, all of it forward; the
                  one changed call path is forward's llama_decode <- serve
                  (+192 MiB), matched by name although the two processes
                  had different addresses; weights and KV paths unchanged;
                  no OOM in either; the text's summary line says so.
table np2 np6 oom engine llama.cpp, -c 2048, -np 2/6/8, -ngl 24 as given
                  (and which option gave them), peaks, max in flight, OOM
                  stage and phase, exit status 0/0/3; csv has the same.

Usage: run_compare.py --vramtrace EXE --preload LIB --fake-dir DIR
                      --llama EXE --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import csv
import io
import json
import os
import sys

from harness import check, options, record_env, run, scratch

MIB = 1 << 20


def record(args, tmp, name, flags, want_rc=0, extra_env=None):
    env = record_env(args, extra_env)
    out = os.path.join(tmp, name)
    run([args.vramtrace, "record", "-o", out, "--", args.llama] + flags, env,
        (want_rc,))
    return out


BASE = ["-ngl", "24", "--layer-mib", "10", "-c", "2048",
        "--kv-kib-per-token", "160", "--act-mib", "48"]


def compare(args, np2, np6):
    env = dict(os.environ)
    doc = json.loads(run([args.vramtrace, "compare", "--format", "json",
                          np2, np6], env))
    check(doc.get("schema") == "vramtrace-compare/1", "compare: schema")
    devs = doc.get("devices", [])
    check(len(devs) == 1 and devs[0]["a"] and devs[0]["b"],
          f"compare: one device, in both runs (got {len(devs)})")
    d = devs[0]
    check(d["peak"]["a"] == 656 * MIB and d["peak"]["b"] == 848 * MIB and
          d["peak"]["delta"] == 192 * MIB,
          f"compare: peak 656 MiB -> 848 MiB (got {d['peak']})")
    fwd = d["phases"].get("forward", {})
    check(fwd.get("peak", {}).get("delta") == 192 * MIB and
          fwd.get("at_peak", {}).get("delta") == 192 * MIB and
          fwd["peak"]["pct"] == 200,
          f"compare: forward +192 MiB, +200% (got {fwd})")
    for ph, size in (("weights", 240 * MIB), ("kv_cache", 320 * MIB)):
        p = d["phases"].get(ph, {}).get("peak", {})
        check(p.get("a") == size and p.get("delta") == 0,
              f"compare: {ph} unchanged at {size} (got {p})")
    sites = doc.get("sites", [])
    got = [(s["phase"], s["change"], s["bytes"]["delta"]) for s in sites]
    check(got == [("forward", "grew", 192 * MIB)],
          f"compare: one call path changed, forward +192 MiB (got {got})")
    names = [f["function"] for f in sites[0]["frames"]] if sites else []
    check(names[:2] == ["llama_decode", "serve"],
          f"compare: it is llama_decode <- serve (got {names[:3]})")
    check(sites and sites[0]["allocs"]["a"] == 2 and
          sites[0]["allocs"]["b"] == 6,
          "compare: 2 -> 6 live allocations on that path")
    check(doc.get("sites_unchanged", 0) >= 2,
          "compare: the weights and KV paths match by name although the "
          f"processes' addresses differ (unchanged: "
          f"{doc.get('sites_unchanged')})")
    check(doc["ooms"] == {"a": [], "b": []}, "compare: no OOM in either")
    check(doc["requests"]["max_inflight"]["a"] == 2 and
          doc["requests"]["max_inflight"]["b"] == 6,
          f"compare: 2 -> 6 in flight (got {doc['requests']})")
    text = run([args.vramtrace, "compare", np2, np6], env)
    want = ("peak on device 0: 656.00 MiB → 848.00 MiB (+192.00 MiB, +29%): "
            "forward +192.00 MiB")
    check(want in text.splitlines(), f"compare: text summary '{want}'")


def table(args, runs):
    env = dict(os.environ)
    doc = json.loads(run([args.vramtrace, "table", "--format", "json"] +
                         runs, env))
    rows = doc.get("runs", [])
    check(doc.get("schema") == "vramtrace-table/1" and len(rows) == 3,
          f"table: schema, 3 rows (got {len(rows)})")
    want = [(2048, 2, 24), (2048, 6, 24), (2048, 8, 24)]
    got = [(r.get("context_length"), r.get("concurrency"),
            r.get("gpu_layers")) for r in rows]
    check(got == want, f"table: -c -np -ngl parsed exactly (got {got})")
    check(all(r["engine"] == "llama.cpp" and r["memory_fraction"] is None and
              r["flags"] == {"context_length": "-c", "concurrency": "-np",
                             "gpu_layers": "-ngl"} for r in rows),
          "table: engine llama.cpp, options as spelled")
    check([r["run"] for r in rows] == runs, "table: rows in the given order")
    peaks = [r["devices"][0]["peak_bytes"] if r["devices"] else None
             for r in rows]
    check(peaks == [656 * MIB, 848 * MIB, 800 * MIB],
          f"table: peaks 656/848/800 MiB (got {peaks})")
    check(rows[1]["devices"][0]["peak_by_phase"] ==
          {"weights": 240 * MIB, "kv_cache": 320 * MIB,
           "forward": 288 * MIB},
          f"table: phase split of the peak (got "
          f"{rows[1]['devices'][0]['peak_by_phase']})")
    inflight = [r["max_inflight"] for r in rows]
    check(inflight[:2] == [2, 6] and inflight[2] >= 6,
          f"table: max in flight 2, 6, >= 6 (got {inflight})")
    oom = [(r["oom"] or {}).get("stage") for r in rows]
    ph = [(r["oom"] or {}).get("phase") for r in rows]
    check(oom == [None, None, "request"] and ph[2] == "forward",
          f"table: OOM only in the third run, request/forward "
          f"(got {oom} {ph})")
    ex = [r["exit_status"] for r in rows]
    check(ex == [0, 0, 3], f"table: exit status 0, 0, 3 (got {ex})")
    out = run([args.vramtrace, "table", "--format", "csv"] + runs, env)
    rd = list(csv.DictReader(io.StringIO(out)))
    check([(r["context_length"], r["concurrency"], r["gpu_layers"],
            r["oom_stage"], r["exit_status"]) for r in rd] ==
          [("2048", "2", "24", "", "0"), ("2048", "6", "24", "", "0"),
           ("2048", "8", "24", "request", "3")],
          "table: csv has the same")
    text = run([args.vramtrace, "table"] + runs, env).splitlines()
    rows = [l for l in text if l.split()[:1] in (["np2"], ["np6"], ["oom"])]
    check(text[0].startswith("runs in ") and text[1].startswith("run ") and
          len(rows) == 3 and "request/forward" in rows[2],
          "table: text has the runs' directory, a header and one line per "
          "run")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--llama",
              "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        np2 = record(args, tmp, "np2", BASE + ["-np", "2"])
        np6 = record(args, tmp, "np6", BASE + ["-np", "6"])
        oom = record(args, tmp, "oom", BASE + ["-np", "8"], 3,
                     {"FAKECUDA_MEM": str(800 * MIB)})
        compare(args, np2, np6)
        table(args, [np2, np6, oom])

    return scratch(args, "compare-", body)


if __name__ == "__main__":
    sys.exit(main())
