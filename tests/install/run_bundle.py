#!/usr/bin/env python3
"""run_bundle.py — the portable bundle (tools/make_bundle.py) unpacked into
an empty directory and used with a library path that holds nothing but
the fake driver (python3 stdlib, ldd, objdump).

make        make_bundle.py writes vramtrace-VERSION-linux-ARCH.tar.gz; it
            unpacks into an empty directory as one top directory.
ldd         with LD_LIBRARY_PATH = a directory holding only the fake
            libcuda.so.1: bin/vramtrace needs glibc alone; the preload's
            libunwind.so.8 and liblzma.so.5 resolve inside the bundle;
            libzstd is linked in (not needed at all); nothing else.
glibc       no file of the bundle needs a glibc newer than MANIFEST and
            `vramtrace --version` state.
maps        a process running with the bundle's preload maps libunwind and
            liblzma from the bundle, none from the system.
record      the bundle's `record` (no VRAMTRACE_PRELOAD) traces
            examples/llama_sim on the fake driver with that library path;
            the bundle's `analyze` reads the trace: one process, the
            weights and KV cache phases named (native stacks, through the
            bundled libunwind); the run's output.log holds the program's
            output and analyze reads it (engine_log: llama.cpp).
html        the bundle's `analyze --format html` writes one self-contained
            page: the HTML, style sheet and script compiled into the
            command (analyzer/report/html/) with the report's JSON in it.
plan        the bundle's `plan` predicts the recorded run's settings and
            their neighbours from that run (llama.cpp's rule).

docs        docs/deploy.md's recipes against this bundle: every
            /opt/vramtrace/... path it names exists in the bundle, every
            VRAMTRACE_* variable it names is one the preload reads
            (preload/options.c) or record's VRAMTRACE_PRELOAD; every YAML
            block parses (PyYAML); the Deployment's env names are defined,
            its $(VAR) references come after their definitions, its mounts
            name its volumes, LD_PRELOAD lies in the bundle's mount and
            VRAMTRACE_OUT in the runs' mount, the metrics port of
            VRAMTRACE_METRICS is the container port the PodMonitor scrapes;
            the Ray --runtime-env-json is JSON with known variables; the
            systemd unit passes `systemd-analyze verify` (its program
            replaced by one that exists).

Usage: run_bundle.py --build DIR --source DIR --llama EXE --fake-dir DIR
                     --tmp-root DIR
Exit 0 pass, 1 fail.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

from harness import check
import harness

GLIBC = re.compile(r"^(libc|libm|libdl|libpthread|librt|ld-linux[-\w.]*)"
                   r"\.so(\.\d+)*$|^linux-vdso")


def env_with(libpath):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VRAMTRACE_") and k not in
           ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["LD_LIBRARY_PATH"] = libpath
    return env


def ldd(path, env):
    p = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, env=env)
    print(p.stdout)
    out = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^\s*(\S+)\s+=>\s+(\S+)", line)
        if m:
            out[m.group(1)] = m.group(2)
        m = re.match(r"^\s*(/\S+)\s+\(", line)
        if m:
            out[os.path.basename(m.group(1))] = m.group(1)
    return out


def newest_glibc(path):
    out = subprocess.run(["objdump", "-T", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    vs = [tuple(int(x) for x in v.split("."))
          for v in re.findall(r"\bGLIBC_(\d+(?:\.\d+)+)\b", out)]
    return max(vs) if vs else (0,)


def body(args, tmp):
    out = os.path.join(tmp, "out")
    p = subprocess.run([sys.executable, os.path.join(
        args.source, "tools", "make_bundle.py"), "--build", args.build,
        "--out", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, timeout=300)
    print(p.stdout + p.stderr)
    tgz = p.stdout.strip()
    check(p.returncode == 0 and re.search(
        r"/vramtrace-[\w.]+-linux-\w+\.tar\.gz$", tgz) is not None,
        f"make: writes vramtrace-VERSION-linux-ARCH.tar.gz ({tgz})")
    if p.returncode:
        return
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    with tarfile.open(tgz) as t:
        names = t.getnames()
        t.extractall(empty)
    tops = {n.split("/")[0] for n in names}
    check(len(tops) == 1, f"make: one top directory ({sorted(tops)})")
    root = os.path.join(empty, sorted(tops)[0])
    exe = os.path.join(root, "bin", "vramtrace")
    preload = os.path.join(root, "lib", "vramtrace", "libvramtrace.so")

    # A library path holding nothing but the fake driver.
    fake = os.path.join(tmp, "fake-only")
    os.mkdir(fake)
    shutil.copy(os.path.join(args.fake_dir, "libcuda.so.1"), fake)
    check(os.listdir(fake) == ["libcuda.so.1"],
          "the library path holds only the fake libcuda.so.1")
    env = env_with(fake)

    deps = ldd(exe, env)
    extra = [n for n in deps if not GLIBC.match(n)]
    check(not extra, f"ldd: bin/vramtrace needs glibc alone (also: {extra})")
    deps = ldd(preload, env)
    inside = os.path.realpath(root) + os.sep
    for so in ("libunwind.so.8", "liblzma.so.5"):
        where = deps.get(so, "")
        check(os.path.realpath(where).startswith(inside),
              f"ldd: the preload's {so} resolves inside the bundle "
              f"({where})")
    check(not any(n.startswith("libzstd") for n in deps),
          "ldd: libzstd is linked into the preload, not needed")
    outside = [f"{n} => {w}" for n, w in deps.items()
               if not GLIBC.match(n) and
               not os.path.realpath(w).startswith(inside)]
    check(not outside, f"ldd: nothing else from the system ({outside})")

    manifest = open(os.path.join(root, "MANIFEST")).read()
    vout = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                          text=True, env=env).stdout
    m = re.search(r"needs glibc (\d+(?:\.\d+)+)", vout)
    stated = tuple(int(x) for x in m.group(1).split(".")) if m else None
    newest = max(newest_glibc(f) for f in glob.glob(
        os.path.join(root, "**"), recursive=True)
        if os.path.isfile(f) and not os.path.islink(f) and
        open(f, "rb").read(4) == b"\x7fELF")
    check(stated is not None and newest <= stated and
          f"needs glibc {m.group(1)} or newer" in manifest,
          f"glibc: the bundle needs at most {stated} (newest symbol "
          f"version: {newest}), as MANIFEST says")

    # What a process with the bundle's preload really maps.
    maps_env = dict(env)
    maps_env["LD_PRELOAD"] = preload
    maps_env["VRAMTRACE_ENABLE"] = "0"
    p = subprocess.run(["cat", "/proc/self/maps"], stdout=subprocess.PIPE,
                       text=True, env=maps_env)
    mapped = {line.split()[-1] for line in p.stdout.splitlines()
              if re.search(r"lib(unwind|lzma|zstd)", line)}
    check(mapped and all(os.path.realpath(f).startswith(inside)
                         for f in mapped) and
          any("libunwind.so.8" in f for f in mapped) and
          any("liblzma.so.5" in f for f in mapped),
          f"maps: libunwind and liblzma mapped from the bundle only "
          f"({sorted(mapped)})")

    # record and analyze from the bundle.
    run_dir = os.path.join(tmp, "run")
    cmd = [exe, "record", "-o", run_dir, "--", args.llama, "-ngl", "4",
           "--layer-mib", "8", "-c", "512", "--kv-kib-per-token", "64",
           "-np", "1"]
    print("$ LD_LIBRARY_PATH=" + fake + " " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=120)
    print(p.stdout + p.stderr)
    check(p.returncode == 0 and "trace in" in p.stderr,
          "record: the bundle's record traces the program")
    p = subprocess.run([exe, "analyze", "--format", "json", run_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=120)
    rep = json.loads(p.stdout) if p.returncode == 0 else {}
    procs = rep.get("run", {}).get("processes", [])
    check(len(procs) == 1, f"analyze: one process traced ({len(procs)})")
    dev = (rep.get("devices") or [{}])[0]
    ph = dev.get("phases", {})
    check(ph.get("weights", {}).get("peak_bytes") == 4 * 8 << 20 and
          ph.get("kv_cache", {}).get("peak_bytes") == 512 * 64 << 10,
          "analyze: weights and KV cache named from native stacks "
          f"({ {k: v.get('peak_bytes') for k, v in ph.items()} })")
    log = os.path.join(run_dir, "output.log")
    text = open(log, errors="replace").read() if os.path.exists(log) else ""
    elog = rep.get("engine_log") or {}
    check("load_tensors:" in text and elog.get("engine") == "llama.cpp",
          f"record: output.log holds the program's output, and analyze "
          f"reads it (engine_log: {elog.get('engine')})")
    html(args, env, exe, run_dir, tmp)
    plan(env, exe, run_dir)
    docs(args, tmp, root)


def html(args, env, exe, run_dir, tmp):
    out = os.path.join(tmp, "report.html")
    p = subprocess.run([exe, "analyze", "--format", "html", "-o", out,
                        run_dir], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, env=env,
                       timeout=120)
    check(p.returncode == 0 and harness.html_page(args.source, out),
          f"html: one page with the compiled-in style sheet and script and "
          f"the report's JSON ({p.returncode}: {p.stderr.strip()})")


def plan(env, exe, run_dir):
    p = subprocess.run([exe, "plan", "--format", "json", run_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=120)
    rep = json.loads(p.stdout) if p.returncode == 0 else {}
    rows = rep.get("configurations") or []
    rec = [r for r in rows if r.get("recorded")]
    check(len(rows) > 1 and len(rec) == 1 and
          rec[0].get("settings", {}).get("context_length") == 512 and
          rec[0].get("fits") == "yes",
          f"plan: the recorded settings (-c 512) and their neighbours "
          f"predicted ({len(rows)} rows; {p.returncode}: "
          f"{p.stderr.strip()})")


def known_variables(source):
    text = open(os.path.join(source, "preload", "options.c")).read()
    return set(re.findall(r'"(VRAMTRACE_[A-Z_]+)"', text)) | {
        "VRAMTRACE_PRELOAD"}


def blocks(text, lang):
    return re.findall(r"```" + lang + r"\n(.*?)```", text, re.S)


def docs(args, tmp, root):
    text = open(os.path.join(args.source, "docs", "deploy.md")).read()
    known = known_variables(args.source)
    named = set(re.findall(r"\bVRAMTRACE_[A-Z_]+[A-Z]\b", text))
    check(named and named <= known, f"docs: every VRAMTRACE_ variable is "
          f"the preload's (unknown: {sorted(named - known)})")
    paths = set(re.findall(r"/opt/vramtrace/[\w./-]*[\w/]", text))
    missing = [p for p in paths if not os.path.exists(
        os.path.join(root, p[len("/opt/vramtrace/"):]))]
    check(paths and not missing, f"docs: every /opt/vramtrace path is in "
          f"the bundle (missing: {sorted(missing)})")

    try:
        import yaml
    except ImportError:
        check(False, "docs: PyYAML (python3-yaml) is installed")
        return
    docs_ = []
    for b in blocks(text, "yaml"):
        try:
            docs_.append(yaml.safe_load(b))
        except yaml.YAMLError as e:
            check(False, f"docs: a YAML block parses ({e})")
    check(len(docs_) == len(blocks(text, "yaml")) >= 2,
          f"docs: {len(docs_)} YAML blocks parse")
    dep = [d for d in docs_ if d.get("kind") == "Deployment"]
    mon = [d for d in docs_ if d.get("kind") == "PodMonitor"]
    check(len(dep) == 1 and len(mon) == 1,
          "docs: a Deployment and a PodMonitor")
    if not dep or not mon:
        return
    spec = dep[0]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    env = c["env"]
    seen, order_ok = set(), True
    for e in env:
        for ref in re.findall(r"\$\((\w+)\)", str(e.get("value", ""))):
            order_ok &= ref in seen
        seen.add(e["name"])
    names = {e["name"] for e in env}
    check(order_ok, "docs: every $(VAR) of the env is defined before it")
    check({n for n in names if n.startswith("VRAMTRACE_")} <= known and
          "LD_PRELOAD" in names, f"docs: the env names are the preload's "
          f"({sorted(names)})")
    vols = {v["name"] for v in spec["volumes"]}
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"] +
              [m for ic in spec.get("initContainers", [])
               for m in ic["volumeMounts"]]}
    check(set(mounts) <= vols, f"docs: the mounts name the pod's volumes "
          f"({sorted(set(mounts) - vols)} undefined)")
    val = {e["name"]: e.get("value", "") for e in env}
    pre = val.get("LD_PRELOAD", "")
    check(pre.startswith(mounts.get("vramtrace", "?") + "/") and
          os.path.exists(os.path.join(root, os.path.relpath(
              pre, mounts.get("vramtrace", "/")))),
          f"docs: LD_PRELOAD ({pre}) is the bundle's preload in its mount")
    check(val.get("VRAMTRACE_OUT", "").startswith(
        mounts.get("runs", "?") + "/"),
          "docs: VRAMTRACE_OUT lies in the runs' volume")
    port = {p["name"]: p["containerPort"] for p in c["ports"]}
    mport = mon[0]["spec"]["podMetricsEndpoints"][0]["port"]
    check(val.get("VRAMTRACE_METRICS", "").endswith(
        f":{port.get(mport)}") and
          val.get("VRAMTRACE_METRICS_PUBLIC") == "1" and
          mon[0]["spec"]["selector"]["matchLabels"] ==
          dep[0]["spec"]["template"]["metadata"]["labels"],
          "docs: the PodMonitor scrapes the pod's metrics port, opted in")

    # Ray's runtime environment, as the shell passes it.
    m = re.search(r"--runtime-env-json '([^']*)'", text)
    try:
        renv = json.loads(m.group(1)) if m else {}
    except ValueError:
        renv = {}
    ev = renv.get("env_vars", {})
    check(set(ev) == {"LD_PRELOAD", "VRAMTRACE_OUT"} and os.path.exists(
        os.path.join(root, ev["LD_PRELOAD"][len("/opt/vramtrace/"):])),
          f"docs: the Ray runtime env is JSON naming the preload ({renv})")

    # The systemd unit, its program replaced by one that exists.
    units = blocks(text, "ini")
    sa = shutil.which("systemd-analyze")
    if units and sa:
        unit = re.sub(r"^ExecStart=\S+", "ExecStart=/bin/true", units[0],
                      flags=re.M)
        path = os.path.join(tmp, "vramtrace-doc.service")
        with open(path, "w") as f:
            f.write(unit)
        p = subprocess.run([sa, "verify", path], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=60)
        check(p.returncode == 0 and not p.stdout.strip(),
              f"docs: systemd-analyze verify accepts the unit "
              f"({p.stdout.strip()!r})")
        envs = re.findall(r"^Environment=(\w+)=", units[0], re.M)
        check(envs and all(e == "LD_PRELOAD" or e in known for e in envs),
              f"docs: the unit's Environment= names are known ({envs})")
    else:
        print(f"skip   docs: systemd unit ({'no ini block' if not units else 'no systemd-analyze'})")


if __name__ == "__main__":
    harness.run(["--build", "--source", "--llama", "--fake-dir"], "bundle-", body)
