#!/usr/bin/env python3
"""run_logs.py — the engine's own words, end to end (python3 stdlib only).

The example servers print a real engine's log lines (--log-format, see
examples/sim_log.h); each scenario records one under `vramtrace record` on
the fake GPU and checks what `vramtrace analyze --format json` makes of the
output.log record kept beside the trace:

engine-numbers  serve_sim with vLLM's lines (two ranks): the report's
                engine numbers are the printed ones and the server's true
                ones (weights, KV cache), nothing disagrees, the config
                and readiness come from the log
wrong-number    the same with the weights printed 25% too high
                (--log-scale weights=1.25): flagged as a finding
fatal           the concurrency scenario's OutOfMemoryError: the log's
                fatal error names the recorded failure (size, device, time)
verdicts        the OOM scenarios of run_verdicts.py with vLLM's lines:
                the fatal error names the failure each died of, the
                engine's numbers agree with the trace
refusal         vLLM's start-up KV check refuses --max-model-len 131072
                (exit 1, no allocation failed): the verdict is kv_cache
                at the reserves rung, the KV vLLM wanted on it against its
                budget, with vLLM's estimated maximum model length beside
                the trace's, which agrees; with --no-log it is
                inconclusive (died while loading)
diagnosis       what the log decides in the diagnosis: the failure its
                fatal error names is the decisive one (two workers that
                both fail); the max model length it printed fills the
                flag the command line left out, so the action has a
                number; a KV cache printed 25% high stands beside the
                reserves rung and makes a graph-capture verdict on that
                rung less sure
sglang          SGLang's lines; a memory fraction that leaves nothing for
                the KV cache: SGLang's "increase --mem-fraction-static"
                refusal is the verdict, with the trace's fraction
llamacpp        llama_sim with llama-server's lines: model and KV buffers
                match the trace; a context that does not fit: ggml's
                failed cudaMalloc names the recorded failure
tgi, trtllm     TGI's and TensorRT-LLM's lines: KV tokens, config, ready
wallclock       two runs recorded one after another: run.start_utc
                increases and lies between the times the test read
align           a run recorded without `record` (plain LD_PRELOAD, the
                log redirected to a file, vLLM's local times in a zone
                5:30 east of UTC) given its log with --log: the engine's
                readiness lands on the trace's server-ready time
pty             record on a terminal gives the command a terminal for
                stdout and one for stderr (isatty), keeps them apart in
                output.log, and still copies them to its own terminal
bound           40 MB of output with --log-max 1M: output.log stays within
                1 MiB, keeps the first and last lines and says what was cut
table           `table` takes the flags a command line left at their
                defaults from the log, marked "*" (text) and "log" (JSON)
diskfull        output.log's writes fail (a file-size limit): the command
                runs to the end unharmed, record says the log stopped

Usage: run_logs.py --vramtrace EXE --preload LIB --fake-dir DIR
                   --serve-sim EXE --llama EXE --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import datetime
import json
import os
import pty
import select
import subprocess
import sys
import time

from harness import check, options, record_env, scratch

GIB = 1 << 30
MIB = 1 << 20


def utc_s(text):
    d = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ")
    return d.replace(tzinfo=datetime.timezone.utc).timestamp()


class Env:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.env = record_env(args, {"FAKECUDA_MEM": "80G"},
                              clean=("FAKECUDA_", "FAKEHIP_", "FAKENVML_"))

    def run(self, cmd, ok_codes=(0,), extra=None, timeout=100):
        env = dict(self.env)
        env.update(extra or {})
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
        if p.returncode not in ok_codes:
            print(p.stdout.decode(errors="replace") +
                  p.stderr.decode(errors="replace"))
            raise SystemExit(f"command failed with exit {p.returncode}")
        return p

    def record(self, name, cmd, code=0, extra=None, rec_args=()):
        out = os.path.join(self.tmp, name)
        self.run([self.args.vramtrace, "record", "-o", out] +
                 list(rec_args) + ["--"] + cmd, ok_codes=(code,),
                 extra=extra)
        return out

    def report(self, path, extra_args=(), extra=None):
        p = self.run([self.args.vramtrace, "analyze", "--format", "json",
                      path] + list(extra_args), extra=extra)
        return json.loads(p.stdout)


def facts(rep, kind):
    """{log device: value} of the engine log's facts of a kind (the last
    line of each device wins, as the report compares)."""
    out = {}
    for f in rep["engine_log"]["facts"]:
        if f["kind"] == kind:
            out[f["device"]] = f["value"]
    return out


def rows(rep, quantity):
    return [c for c in rep["engine_log"]["comparison"]
            if c["quantity"] == quantity]


def sim(e, *args):
    return [e.args.serve_sim, "serve", "sim-model", *args]


def test_engine_numbers(e):
    out = e.record("engine-numbers",
                   sim(e, "--tensor-parallel-size", "2",
                       "--log-format", "vllm"),
                   extra={"FAKECUDA_DEVICES": "2"})
    rep = e.report(out)
    g = rep["engine_log"]
    check(g is not None and g["engine"] == "vllm" and
          g["path"].endswith("output.log"),
          f"engine-numbers: the run's output.log read as vLLM's "
          f"({g and g['engine']})")
    # 14 GiB over two ranks: 7 GiB each, printed as vLLM's format_gib
    w = facts(rep, "weights")
    check(w == {0: 7 * GIB, 1: 7 * GIB},
          f"engine-numbers: weights printed per rank, 7.0 GiB each "
          f"(got {w})")
    devs = {d["id"]: d for d in rep["devices"]}
    for q, phase in (("weights", "weights"), ("kv_cache", "kv_cache")):
        rs = rows(rep, q)
        check(len(rs) == 2 and all(
            not r["flagged"] and
            abs(r["traced_bytes"] -
                devs[r["device"]]["phases"][phase]["peak_bytes"]) == 0
            for r in rs),
              f"engine-numbers: {q} beside the traced {phase} peak on "
              f"both devices, none disagrees ({rs})")
    kv = facts(rep, "kv_cache_bytes")
    true_kv = {d: devs[d]["phases"]["kv_cache"]["peak_bytes"] for d in devs}
    check(all(abs(kv[d] - true_kv[d]) <= GIB // 200 for d in (0, 1)),
          f"engine-numbers: the KV cache printed (2 decimals of GiB) is "
          f"the one allocated ({kv} vs {true_kv})")
    check(g["config"]["max_model_len"] == 8192 and
          g["config"]["tensor_parallel"] == 2 and
          g["config"]["memory_fraction"] == 0.9,
          f"engine-numbers: config from the log ({g['config']})")
    check(g["ready"] is not None and
          "Application startup complete" in g["ready"]["text"] and
          rep["server_ready_s"] is not None and
          abs(g["ready"]["time_s"] - rep["server_ready_s"]) < 0.5,
          "engine-numbers: the engine's readiness at the traced listen()")
    check(rep["findings"] == [], f"engine-numbers: no finding "
          f"({rep['findings']})")
    text = e.run([e.args.vramtrace, "analyze", out]).stdout.decode()
    check("engine log: " in text and "weights" in text and
          "DISAGREES" not in text,
          "engine-numbers: the text report shows the engine's numbers")
    pf = json.loads(e.run([e.args.vramtrace, "analyze", "-f", "perfetto",
                           out]).stdout)
    inst = [x for x in pf["traceEvents"] if x.get("cat") == "engine_log"]
    wl = [f for f in g["facts"] if f["kind"] == "weights"]
    check(wl and any(x["name"] == "weights" and
                     abs(x["ts"] / 1e6 - utc_s(wl[0]["time_utc"])) < 1e-3
                     for x in inst),
          "engine-numbers: Perfetto shows the log's lines at their UTC "
          "times")


def test_wrong_number(e):
    out = e.record("wrong-number",
                   sim(e, "--log-format", "vllm", "--log-scale",
                       "weights=1.25"))
    rep = e.report(out)
    rs = rows(rep, "weights")
    check(len(rs) == 1 and rs[0]["flagged"] and
          abs(rs[0]["difference_percent"] + 20.0) < 0.5,
          f"wrong-number: printed weights 25% high are flagged, the trace "
          f"20% less ({rs})")
    check(any(f["key"] == "engine_memory_disagrees" and "weights" in
              f["text"] for f in rep["findings"]),
          f"wrong-number: a finding says so ({rep['findings']})")
    check(not rows(rep, "kv_cache")[0]["flagged"],
          "wrong-number: the KV cache still agrees")


def test_fatal(e):
    out = e.record("fatal",
                   sim(e, "--gpu-memory-utilization", "0.9",
                       "--max-model-len", "8192", "--max-num-seqs", "16",
                       "--concurrent-requests", "8", "--log-format", "vllm"),
                   code=3)
    rep = e.report(out)
    g = rep["engine_log"]
    err = g["errors"][g["fatal_error"]] if g["fatal_error"] is not None \
        else {}
    check(err.get("kind") == "torch_oom" and
          err.get("requested_bytes") == 2 * GIB and err.get("device") == 0,
          f"fatal: the log's fatal error is PyTorch's OutOfMemoryError "
          f"for 2 GiB on GPU 0 ({err.get('text', '')[:120]})")
    idx = g["fatal_failure"]
    f = rep["failures"][idx] if idx is not None else {}
    check(f.get("oom") and f.get("requested_bytes") == 2 * GIB and
          f.get("device") == 0 and idx == len(rep["failures"]) - 1,
          f"fatal: it names the recorded failure, the last one "
          f"({idx}: {g['fatal_failure_match']})")
    check(err.get("time_s") is not None and
          0 <= err["time_s"] - f.get("time_s", 0) < 2.5,
          "fatal: the line's time follows the failure's")


def test_verdicts(e):
    """The OOM scenarios of run_verdicts.py again with vLLM's lines: the
    log's fatal error names the failure the server died of (its last),
    and the weights vLLM printed are the traced ones."""
    util = ["--gpu-memory-utilization", "0.9"]
    scen = [("v-weights", {}, util + ["--model-size-gib", "100"]),
            ("v-kv_cache", {}, ["--gpu-memory-utilization", "0.95",
                                "--max-model-len", "131072",
                                "--act-kib-per-token", "64"]),
            ("v-concurrency", {}, util + ["--max-model-len", "8192",
                                          "--max-num-seqs", "16",
                                          "--concurrent-requests", "8"]),
            ("v-other_processes", {"FAKECUDA_USED": "30G"}, util)]
    for name, extra, args in scen:
        out = e.record(name, sim(e, *args, "--log-format", "vllm"), code=3,
                       extra=extra)
        rep = e.report(out)
        g = rep["engine_log"]
        ooms = [i for i, f in enumerate(rep["failures"]) if f["oom"]]
        err = g["errors"][g["fatal_error"]] if g["fatal_error"] is not None \
            else {}
        check(err.get("kind") == "torch_oom" and ooms and
              g["fatal_failure"] == ooms[-1],
              f"{name}: the log's fatal error names the last failure "
              f"({g['fatal_failure']} of {ooms}: {g['fatal_failure_match']})")
        w = rows(rep, "weights")
        check(all(not r["flagged"] for r in w) and
              not any(f["key"] == "engine_memory_disagrees"
                      for f in rep["findings"]),
              f"{name}: the engine's numbers agree with the trace ({w})")


def test_refusal(e):
    args = sim(e, "--gpu-memory-utilization", "0.9",
               "--max-model-len", "131072", "--kv-kib-per-token", "512",
               "--log-format", "vllm")
    out = e.record("refusal", args, code=1)
    rep = e.report(out)
    d = rep["diagnosis"]
    g = rep["engine_log"]
    check(not rep["ooms"], "refusal: no allocation failed")
    check(d["verdict"] == "kv_cache" and
          d["detail"] == "max_model_len_exceeds_kv_cache" and
          d["stage"] == "load" and d["device"] == 0,
          f"refusal: verdict kv_cache, load stage, device 0 "
          f"({d['verdict']} {d['detail']} {d['stage']} {d['device']})")
    # 0.9 x 80 GiB - 14 GiB weights - 0.5 GiB profile = 57.5 GiB; 512 KiB
    # a token: 117760 tokens (whole blocks of 16)
    r = g["refusal"]
    check(r is not None and r["engine_value"] == 117760 and
          r["trace_value"] == 117760 and r["agree"] is True and
          r["flag"] == "--max-model-len" and r["applied"],
          f"refusal: vLLM's estimate 117760 beside the trace's, agreeing "
          f"({r})")
    ev = {x["key"]: x["value"] for x in d["evidence"]}
    check(ev.get("kv_needed_bytes") == 64 * GIB and
          ev.get("trace_kv_available_bytes") == int(0.9 * 80 * GIB) -
          14 * GIB - 512 * MIB,
          f"refusal: evidence in bytes ({ev})")
    check(any("--max-model-len 117760" in a for a in d["actions"]),
          f"refusal: the action in vLLM's flag ({d['actions']})")
    check(any("the trace agrees" in x["text"] for x in d["evidence"]),
          "refusal: the verdict says the trace agrees with the engine")
    text = e.run([e.args.vramtrace, "analyze", out]).stdout.decode()
    check(text.startswith("DIAGNOSIS: kv_cache (max_model_len_exceeds_kv_"
                          "cache)"),
          f"refusal: the text report opens with it ({text[:80]!r})")
    plain = e.report(out, ["--no-log"])
    check(d["from_log"] == {"fatal_failure": False, "refusal": True,
                            "ready": False,
                            "flags": ["max_num_seqs", "tensor_parallel"]},
          f"refusal: the diagnosis says the log decided ({d['from_log']})")
    lad = {x["rung"]: x for x in d["ladder"]}
    check(d["rung"] == "reserves" and d["capacity_bytes"] == 72 * GIB and
          lad["reserves"]["bytes"] == 64 * GIB and
          not lad["reserves"]["fits"] and lad["weights"]["fits"] and
          lad["weights"]["engine_bytes"] == 14 * GIB,
          f"refusal: the ladder within vLLM's 0.9 x 80 GiB, the 64 GiB it "
          f"wanted on the reserves rung ({d['rung']}, {d['ladder']})")
    check(plain["diagnosis"]["verdict"] == "inconclusive" and
          plain["diagnosis"]["detail"] == "died_while_loading" and
          plain["engine_log"] is None,
          "refusal: without the log the trace alone is inconclusive "
          "(died while loading)")


def test_diagnosis(e):
    # two tensor-parallel workers (vLLM's process layout) both fail a
    # request: the one the log's last OutOfMemoryError names is decisive
    out = e.record("log-fatal",
                   sim(e, "--distributed-executor-backend", "mp",
                       "--tensor-parallel-size", "2",
                       "--gpu-memory-utilization", "0.9",
                       "--max-model-len", "131072",
                       "--kv-kib-per-token", "1024"),
                   code=1, extra={"FAKECUDA_DEVICES": "2"})
    rep = e.report(out, extra={"FAKECUDA_DEVICES": "2"})
    d, g = rep["diagnosis"], rep["engine_log"]
    ooms = [i for i, f in enumerate(rep["failures"]) if f["oom"]]
    check(len(ooms) == 2 and g["fatal_failure"] in ooms and
          d["failure_index"] == g["fatal_failure"] and
          d["from_log"]["fatal_failure"] and
          "the engine's log names" in d["confidence_reason"] and
          any(x["key"] == "log_fatal_failure" for x in d["evidence"]),
          f"diagnosis: the failure the log names is decisive "
          f"({d['failure_index']} / {g['fatal_failure']} of {ooms}: "
          f"{d['confidence_reason']})")
    # the context is left at vLLM's default; one request of 8192 tokens
    # (16 GiB of activations) finds 4 GiB
    args = ["--gpu-memory-utilization", "0.95",
            "--act-kib-per-token", "2048"]
    out = e.record("log-flags", sim(e, *args), code=3)
    rep = e.report(out)
    d = rep["diagnosis"]
    check(d["detail"] == "context_too_long" and
          "max_model_len" in d["from_log"]["flags"] and
          d["flags"]["max_model_len"] == 8192 and
          any("(was 8192)" in a for a in d["actions"]),
          f"diagnosis: the log's max model length in the action "
          f"({d['from_log']}, {d['actions']})")
    plain = e.report(out, ["--no-log"])["diagnosis"]
    check(plain["from_log"] is None and
          plain["flags"]["max_model_len"] is None and
          not any("(was 8192)" in a for a in plain["actions"]),
          f"diagnosis: without the log no number ({plain['actions']})")
    # CUDA graphs after the KV reserve; the KV cache printed 25% high
    out = e.record("log-numbers",
                   sim(e, "--gpu-memory-utilization", "0.98",
                       "--cuda-graph-mib", "3072", "--log-scale",
                       "kv=1.25"), code=3)
    rep = e.report(out)
    d = rep["diagnosis"]
    lad = {x["rung"]: x for x in d["ladder"]}
    kv = [x for x in d["evidence"] if x["key"] == "engine_kv_cache_bytes"]
    check(d["detail"] == "graph_capture_after_reserve" and
          d["rung"] == "reserves" and d["confidence"] == "medium" and
          "reserves rung is the verdict's" in d["confidence_reason"] and
          kv and lad["reserves"]["engine_bytes"] == kv[0]["value"],
          f"diagnosis: the engine's KV cache beside the reserves rung, "
          f"disagreeing ({d['confidence']}: {d['confidence_reason']}; "
          f"{kv}, {lad.get('reserves')})")
    plain = e.report(out, ["--no-log"])["diagnosis"]
    check(plain["confidence"] == "high" and
          all(x["engine_bytes"] is None for x in plain["ladder"]),
          "diagnosis: without the log, high and nothing beside the rungs")
    # expandable segments: the driver is asked for pages, not the 8 GiB
    # tensor PyTorch's error names; the failure is still the one
    out = e.record("log-expandable",
                   sim(e, "--allocator", "expandable",
                       "--gpu-memory-utilization", "0.95",
                       "--max-model-len", "131072",
                       "--act-kib-per-token", "64"), code=3)
    rep = e.report(out)
    g = rep["engine_log"]
    f = rep["failures"][g["fatal_failure"]] \
        if g["fatal_failure"] is not None else {}
    check(f.get("oom") and f.get("requested_bytes") != 8 * GIB and
          "another size" in (g["fatal_failure_match"] or "") and
          rep["diagnosis"]["from_log"]["fatal_failure"] and
          not any(x["key"] == "fatal_error_unrecorded"
                  for x in rep["findings"]),
          f"diagnosis: an allocator's other size still names the failure "
          f"({g['fatal_failure_match']})")
    # another process holds 30 GiB: vLLM printed the KV cache it meant to
    # allocate, the allocation failed: not a rule that misses
    out = e.record("log-kv-failed", sim(e, "--allocator", "caching"),
                   code=3, extra={"FAKECUDA_USED": "30G"})
    rep = e.report(out)
    kv = rows(rep, "kv_cache")
    check(kv and kv[0]["allocation_failed"] and not kv[0]["flagged"] and
          not rep["findings"],
          f"diagnosis: a KV cache whose allocation failed is no "
          f"disagreement ({kv}, {rep['findings']})")


def test_sglang(e):
    out = e.record("sglang-ok",
                   sim(e, "--tensor-parallel-size", "2",
                       "--log-format", "sglang"),
                   extra={"FAKECUDA_DEVICES": "2"})
    rep = e.report(out)
    g = rep["engine_log"]
    check(g["engine"] == "sglang" and
          facts(rep, "weights") == {0: 7 * GIB, 1: 7 * GIB} and
          not any(c["flagged"] for c in g["comparison"]) and
          g["config"]["memory_fraction"] == 0.9 and
          "fired up" in (g["ready"] or {}).get("text", ""),
          f"sglang: weights per TP rank, nothing disagrees, config and "
          f"readiness ({facts(rep, 'weights')}, {g['config']})")
    # 0.2 x 80 GiB = 16 GiB for weights (14) and a 12 GiB profile: nothing
    # left for the KV cache
    out = e.record("sglang-refusal",
                   sim(e, "--gpu-memory-utilization", "0.2",
                       "--act-kib-per-token", "6144",
                       "--log-format", "sglang"), code=1)
    rep = e.report(out)
    d = rep["diagnosis"]
    r = rep["engine_log"]["refusal"]
    check(d["verdict"] == "kv_cache" and d["detail"] ==
          "mem_fraction_static" and r and r["flag"] ==
          "--mem-fraction-static" and r["trace_value"] is not None and
          r["trace_value"] > 0.2,
          f"sglang: the refusal is the verdict, with a larger static "
          f"fraction from the trace ({d['verdict']} {d['detail']} {r})")


def test_llamacpp(e):
    llama = e.args.llama
    out = e.record("llama-ok",
                   [llama, "-ngl", "32", "--layer-mib", "16", "-c", "4096",
                    "--kv-kib-per-token", "128", "-np", "2",
                    "--log-format", "llamacpp"])
    rep = e.report(out)
    g = rep["engine_log"]
    check(g["engine"] == "llama.cpp" and
          facts(rep, "weights") == {0: 512 * MIB} and
          facts(rep, "kv_cache_bytes") == {0: 512 * MIB} and
          facts(rep, "kv_cache_tokens") == {-1: 4096},
          f"llamacpp: model and KV buffers and cells as printed "
          f"({facts(rep, 'weights')}, {facts(rep, 'kv_cache_bytes')})")
    check(not any(c["flagged"] for c in g["comparison"]) and
          len(g["comparison"]) == 2,
          f"llamacpp: both agree with the trace ({g['comparison']})")
    check(g["config"]["context_size"] == 4096 and g["config"]["slots"] == 2
          and g["ready"] is not None,
          f"llamacpp: context, slots and readiness ({g['config']})")
    out = e.record("llama-oom",
                   [llama, "-ngl", "32", "--layer-mib", "16",
                    "-c", "131072", "--kv-kib-per-token", "1024",
                    "--log-format", "llamacpp"], code=3,
                   extra={"FAKECUDA_MEM": "24G"})
    rep = e.report(out)
    g = rep["engine_log"]
    idx = g["fatal_failure"]
    err = g["errors"][g["fatal_error"]]
    check(err["kind"] == "context_alloc" and
          err["requested_bytes"] == 128 * GIB and idx is not None and
          rep["failures"][idx]["requested_bytes"] == 128 * GIB,
          f"llamacpp: the context that does not fit names the failed "
          f"128 GiB allocation ({err['kind']}, {idx})")


def test_tgi_trtllm(e):
    out = e.record("tgi", sim(e, "--log-format", "tgi"))
    rep = e.report(out)
    g = rep["engine_log"]
    devs = rep["devices"]
    kv_tokens = devs[0]["phases"]["kv_cache"]["peak_bytes"] // (128 * 1024)
    check(g["engine"] == "tgi" and
          abs(facts(rep, "kv_cache_tokens").get(-1, 0) - kv_tokens) < 16 and
          g["config"]["max_model_len"] == 8192 and
          g["config"]["max_num_seqs"] == 256 and
          g["ready"] is not None and "Connected" in g["ready"]["text"],
          f"tgi: KV tokens, config and readiness ({g['config']})")
    out = e.record("trtllm", sim(e, "--log-format", "trtllm"))
    rep = e.report(out)
    g = rep["engine_log"]
    rs = rows(rep, "kv_cache")
    check(g["engine"] == "trtllm" and len(rs) == 1 and
          not rs[0]["flagged"] and g["config"]["max_model_len"] == 8192,
          f"trtllm: the KV cache allocated agrees with the trace ({rs})")


def test_wallclock(e):
    starts = []
    for i in range(2):
        before = time.time()
        out = e.record(f"wall-{i}", sim(e, "--concurrent-requests", "1"))
        after = time.time()
        rep = e.report(out)
        s = utc_s(rep["run"]["start_utc"])
        check(before - 0.5 <= s <= after,
              f"wallclock: run {i} started at {rep['run']['start_utc']}, "
              f"between {before:.3f} and {after:.3f}")
        check(rep["run"]["start_s"] == 0.0 and
              abs(utc_s(rep["devices"][0]["peak"]["time_utc"]) - s -
                  rep["devices"][0]["peak"]["time_s"]) < 1e-5,
              f"wallclock: run {i}: each *_utc is start_utc + its *_s")
        starts.append(s)
        time.sleep(0.05)
    check(starts[1] > starts[0], f"wallclock: the second start is later "
          f"({starts})")


def test_align(e):
    out = os.path.join(e.tmp, "align")
    os.makedirs(out)
    log = os.path.join(e.tmp, "align-server.log")
    env = dict(e.env)
    env["LD_PRELOAD"] = env["VRAMTRACE_PRELOAD"]
    env["VRAMTRACE_OUT"] = out
    env["TZ"] = "IST-5:30"
    with open(log, "wb") as f:
        subprocess.run(sim(e, "--log-format", "vllm", "--load-ms", "1500"),
                       env=env, stdout=f, stderr=subprocess.STDOUT,
                       timeout=100, check=True)
    p = subprocess.run([e.args.vramtrace, "analyze", "--format", "json",
                        out, "--log", log], env=dict(env, LD_PRELOAD=""),
                       stdout=subprocess.PIPE, timeout=100, check=True)
    rep = json.loads(p.stdout)
    g = rep["engine_log"]
    check(g is not None and g["path"] == log, "align: --log read")
    # vLLM prints whole seconds: its readiness line is at most a second
    # before the listen() (and the line after it)
    ready = g["ready"]["time_s"] if g["ready"] else None
    facts_t = [f["time_s"] for f in g["facts"] if f["kind"] == "weights"]
    sr = rep["server_ready_s"]
    check(ready is not None and sr is not None and -1.01 <= ready - sr <= 0.2,
          f"align: the engine's readiness ({ready}) lands on the traced "
          f"listen() ({sr})")
    wpeak = rep["devices"][0]["phases"]["weights"]["peak_bytes"]
    check(facts_t and sr is not None and facts_t[0] is not None and
          facts_t[0] >= sr - 3 and facts_t[0] < sr,
          f"align: the weights line lands before readiness, after the "
          f"1.5 s load ({facts_t}, {sr}, {wpeak})")


def test_pty(e):
    out = os.path.join(e.tmp, "pty")
    prog = ("import os,sys;"
            "print('stdout tty', os.isatty(1), flush=True);"
            "print('stderr tty', os.isatty(2), file=sys.stderr, flush=True)")
    cmd = [e.args.vramtrace, "record", "-o", out, "--", sys.executable, "-c",
           prog]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(cmd[0], cmd, e.env)
    seen = b""
    deadline = time.time() + 30
    while time.time() < deadline:
        r, _, _ = select.select([fd], [], [], 1)
        if not r:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    text = open(os.path.join(out, "output.log")).read()
    check(os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0,
          "pty: record exits 0")
    check("out stdout tty True" in text and "err stderr tty True" in text,
          f"pty: the command saw terminals on both streams, kept apart "
          f"in output.log ({text!r})")
    check(b"stdout tty True\r\n" in seen and b"stderr tty True" in seen,
          f"pty: and record's terminal showed them ({seen[-200:]!r})")
    out2 = os.path.join(e.tmp, "nopty")
    e.run([e.args.vramtrace, "record", "-o", out2, "--", sys.executable,
           "-c", prog])
    text = open(os.path.join(out2, "output.log")).read()
    check("out stdout tty False" in text and "err stderr tty False" in text,
          "pty: without a terminal the command gets pipes")


def test_bound(e):
    out = os.path.join(e.tmp, "bound")
    prog = ("import sys\n"
            "w = sys.stdout.write\n"
            "for i in range(400000):\n"
            "    w('line %08d ' % i + 'x' * 80 + '\\n')\n")
    p = e.run([e.args.vramtrace, "record", "-o", out, "--log-max", "1M",
               "--", sys.executable, "-c", prog])
    size = os.path.getsize(os.path.join(out, "output.log"))
    text = open(os.path.join(out, "output.log")).read()
    lines = text.splitlines()
    check(len(p.stdout) == 400000 * 95,
          f"bound: all {400000 * 95} bytes reached record's stdout "
          f"({len(p.stdout)})")
    check(size <= 1 << 20, f"bound: output.log within 1 MiB ({size})")
    # the log thread drops what it cannot take in time (the command never
    # waits for it), and says so (in the log, and record in its warning):
    # a loaded machine may drop some
    warn = [l for l in p.stderr.decode().splitlines()
            if "bytes of output were left out" in l]
    drops = int(warn[0].split(": ")[3].split()[0]) if warn else 0
    check(lines[0].endswith("line 00000000 " + "x" * 80) and
          (lines[-1].endswith("line 00399999 " + "x" * 80) or
           "dropped here" in lines[-1]),
          "bound: the first and the last line kept")
    # a drop is marked where it happened: the lines around the marker
    # are as far apart as the bytes it says were dropped (a line is 95)
    def num(line):
        k = line.find(" out line ")
        return int(line[k + 10:k + 18]) if k >= 0 else None
    placed = []
    for i, l in enumerate(lines):
        if "dropped here" not in l or not 0 < i < len(lines) - 1:
            continue
        a, b = num(lines[i - 1]), num(lines[i + 1])
        n = int(l.split("--- vramtrace: ")[1].split()[0])
        if a is not None and b is not None:
            placed.append(abs((b - a) * 95 - n) <= 2 * 95)
    check(all(placed), f"bound: each drop is marked where it happened "
          f"({len(placed)} marked)")
    cut = [l for l in lines if "--- vramtrace: " in l and "cut here" in l]
    whole = 400000 * (95 + 32)
    kept = int(cut[0].split("--- vramtrace: ")[1].split()[0]) + size \
        if cut else 0
    check(len(cut) == 1 and
          abs(kept + drops * (95 + 32) / 95 - whole) < whole / 20,
          f"bound: one line says how much was cut ({cut}, {drops} bytes "
          f"dropped)")


def test_table(e):
    """`table` fills the flags a command line left at their defaults from
    the engine's log, and marks them."""
    out = e.record("table", sim(e, "--log-format", "vllm"))
    rep = json.loads(e.run([e.args.vramtrace, "table", "--format", "json",
                            out]).stdout)
    r = rep["runs"][0]
    check(r["context_length"] == 8192 and r["concurrency"] == 256 and
          r["memory_fraction"] == 0.9 and r["tensor_parallel"] == 1 and
          r["flags"].get("context_length") == "log",
          f"table: columns from the log, marked as such ({r})")
    text = e.run([e.args.vramtrace, "table", out]).stdout.decode()
    check("8192*" in text and "* from the engine's log" in text,
          f"table: the text marks them ({text!r})")


def test_diskfull(e):
    """A disk that refuses output.log's writes (a file-size limit makes
    them fail with EFBIG, as a full disk fails them with ENOSPC): the
    command runs to the end at full speed, record says the log stopped."""
    import resource
    out = os.path.join(e.tmp, "diskfull")
    prog = ("import sys\n"
            "for i in range(20000):\n"
            "    sys.stdout.write('line %08d ' % i + 'y' * 80 + '\\n')\n")

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    p = subprocess.run([e.args.vramtrace, "record", "-o", out, "--",
                        sys.executable, "-c", prog], env=e.env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=limit, timeout=100)
    err = p.stderr.decode()
    check(p.returncode == 0 and len(p.stdout) == 20000 * 95,
          f"diskfull: the command ran to the end, its output all reached "
          f"record's stdout (exit {p.returncode}, {len(p.stdout)} bytes)")
    check(os.path.getsize(os.path.join(out, "output.log")) <= 64 * 1024 and
          "output.log: cannot write" in err,
          f"diskfull: output.log stops at the limit and record says so "
          f"({err.strip()[:200]})")


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--serve-sim",
                 "--llama", "--tmp-root")
    ap.add_argument("only", nargs="*")
    args = ap.parse_args()
    tests = [("engine-numbers", test_engine_numbers),
             ("wrong-number", test_wrong_number), ("fatal", test_fatal),
             ("verdicts", test_verdicts),
             ("refusal", test_refusal), ("diagnosis", test_diagnosis),
             ("sglang", test_sglang),
             ("llamacpp", test_llamacpp), ("tgi-trtllm", test_tgi_trtllm),
             ("wallclock", test_wallclock), ("align", test_align),
             ("pty", test_pty), ("bound", test_bound),
             ("diskfull", test_diskfull), ("table", test_table)]

    def body(tmp):
        e = Env(args, tmp)
        for name, fn in tests:
            if not args.only or name in args.only:
                fn(e)
    return scratch(args, "logs-", body)


if __name__ == "__main__":
    sys.exit(main())
