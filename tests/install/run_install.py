#!/usr/bin/env python3
"""run_install.py — `meson install` into a temporary directory (DESTDIR),
then vramtrace used from there as a new user would (python3 stdlib).

layout      bin/vramtrace, <libdir>/vramtrace/libvramtrace.so and the
            demo's parts, include/vramtrace.h and vramtrace/trace_format.h,
            <libdir>/pkgconfig/vramtrace.pc, share/doc/vramtrace/ with
            README.md and every file of docs/.
version     `vramtrace --version`: the project version, the trace format
            versions it reads (VRT_TRACE_VERSION_OLDEST to
            VRT_TRACE_VERSION of trace_format.h) and writes
            and the minimum glibc, which is exactly the newest GLIBC_x.y
            symbol version the installed preload needs (objdump -T).
record      the installed `record` preloads the installed library (found
            relative to bin/, not the build tree's, not VRAMTRACE_PRELOAD):
            the traced command prints its LD_PRELOAD.
demo        `vramtrace demo` from the install: every verdict's run
            diagnosed; each run keeps the server's output (output.log).
html        the installed `analyze --format html` of a demo run: one page
            with the style sheet and script compiled in
            (analyzer/report/html/).
plan        the installed `plan` of the demo's vLLM-shaped run: the
            recorded settings and their neighbours predicted.
pkg-config  --cflags and --variable=preload of the installed .pc; a
            program built with the installed header runs without the
            preload.

Usage: run_install.py --build DIR --source DIR --tmp-root DIR --cc CC
Exit 0 pass, 1 fail.
"""
import json
import os
import re
import shutil
import subprocess

from harness import check
import harness


def clean_env():
    env = dict(os.environ)
    for k in ("VRAMTRACE_PRELOAD", "VRAMTRACE_OUT", "LD_PRELOAD",
              "VRAMTRACE_METRICS"):
        env.pop(k, None)
    return env


def run(cmd, env=None, timeout=120, cwd=None):
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True,
                          env=env or clean_env(), timeout=timeout, cwd=cwd)


def options(build):
    with open(os.path.join(build, "meson-info",
                           "intro-buildoptions.json")) as f:
        return {o["name"]: o["value"] for o in json.load(f)}


def newest_glibc(path):
    out = subprocess.run(["objdump", "-T", path], stdout=subprocess.PIPE,
                         text=True).stdout
    vs = [tuple(int(x) for x in v.split("."))
          for v in re.findall(r"\bGLIBC_(\d+(?:\.\d+)+)\b", out)]
    return max(vs) if vs else None


def body(args, tmp):
    dest = os.path.join(tmp, "dest")
    p = run(["meson", "install", "-C", args.build, "--destdir", dest,
             "--no-rebuild", "--quiet"])
    check(p.returncode == 0, f"meson install exits 0 ({p.stdout}"
          f"{p.stderr})")
    if p.returncode:
        return
    opt = options(args.build)
    prefix = dest + opt["prefix"]
    libdir = os.path.join(prefix, opt["libdir"])
    pkglib = os.path.join(libdir, "vramtrace")
    exe = os.path.join(prefix, opt["bindir"], "vramtrace")
    preload = os.path.join(pkglib, "libvramtrace.so")

    # layout
    for f in (exe, preload, os.path.join(pkglib, "demo", "serve_sim"),
              os.path.join(pkglib, "demo", "libcuda.so.1"),
              os.path.join(pkglib, "demo", "libnvidia-ml.so.1"),
              os.path.join(prefix, opt["includedir"], "vramtrace.h"),
              os.path.join(prefix, opt["includedir"], "vramtrace",
                           "trace_format.h"),
              os.path.join(libdir, "pkgconfig", "vramtrace.pc")):
        check(os.path.exists(f), "layout: " + os.path.relpath(f, dest))
    docdir = os.path.join(prefix, opt["datadir"], "doc", "vramtrace")
    docs = ["README.md"] + sorted(os.listdir(os.path.join(args.source,
                                                          "docs")))
    missing = [d for d in docs if not os.path.exists(os.path.join(docdir,
                                                                  d))]
    check(not missing, f"layout: README.md and every file of docs/ in "
          f"{os.path.relpath(docdir, dest)} (missing: {missing})")
    check(not os.path.exists(os.path.join(libdir, "libcuda.so.1")),
          "layout: the fake driver is not on the library path")

    # version
    p = run([exe, "--version"])
    fmt = open(os.path.join(args.source, "include", "vramtrace",
                            "trace_format.h")).read()
    tv = re.search(r"#define VRT_TRACE_VERSION\s+(\d+)", fmt).group(1)
    old = re.search(r"#define VRT_TRACE_VERSION_OLDEST\s+(\d+)",
                    fmt).group(1)
    proj = re.search(r"version:\s*'([^']+)'",
                     open(os.path.join(args.source, "meson.build")).read())
    print(p.stdout)
    check(p.returncode == 0 and p.stdout.startswith(
        f"vramtrace {proj.group(1)}\n"), "version: names the version")
    check(f"reads versions {old} to {tv}, writes {tv}" in p.stdout,
          f"version: the trace format versions it reads ({old} to {tv}) "
          f"and writes ({tv}), as trace_format.h says")
    m = re.search(r"needs glibc (\d+(?:\.\d+)+) or newer", p.stdout)
    need = newest_glibc(preload)
    stated = tuple(int(x) for x in m.group(1).split(".")) if m else None
    check(need is not None and stated == need,
          f"version: the minimum glibc it states ({stated}) is the newest "
          f"the preload needs (objdump -T: {need})")

    # record finds the installed preload
    run_dir = os.path.join(tmp, "run")
    p = run([exe, "record", "-o", run_dir, "--", "sh", "-c",
             'echo "LD_PRELOAD=$LD_PRELOAD"'])
    got = re.search(r"LD_PRELOAD=(\S*)", p.stdout)
    got = got.group(1).split(":")[0] if got else ""
    check(os.path.realpath(got) == os.path.realpath(preload),
          f"record: preloads the installed library (got {got!r})")

    # the demo from the install
    demo_dir = os.path.join(tmp, "demo")
    p = run([exe, "demo", "-o", demo_dir], cwd=tmp, timeout=300)
    print(p.stdout[-2000:] + p.stderr[-2000:])
    check(p.returncode == 0, f"demo: exits 0 (got {p.returncode})")
    for verdict in ("weights", "kv_cache", "concurrency", "host_memory",
                    "other_processes", "none"):
        check(f"DIAGNOSIS: {verdict}" in p.stdout,
              f"demo: the {verdict} run is diagnosed {verdict}")
    p = run([exe, "analyze", "--format", "json",
             os.path.join(demo_dir, "none")])
    procs = json.loads(p.stdout)["run"]["processes"] if not p.returncode \
        else []
    server = os.path.join(pkglib, "demo", "serve_sim")
    check(procs and all((pr.get("cmdline") or [""])[0] == server
                        for pr in procs),
          f"demo: runs the installed server ({[pr.get('cmdline') for pr in procs]})")
    check(os.path.getsize(os.path.join(demo_dir, "none", "output.log")) > 0
          if os.path.exists(os.path.join(demo_dir, "none", "output.log"))
          else False, "demo: the run keeps the server's output (output.log)")

    # the HTML page and plan, from the install alone
    page_path = os.path.join(tmp, "none.html")
    p = run([exe, "analyze", "--format", "html", "-o", page_path,
             os.path.join(demo_dir, "none")], cwd=tmp)
    check(p.returncode == 0 and harness.html_page(args.source, page_path),
          f"html: one page, its style sheet and script compiled in "
          f"({p.returncode}: {p.stderr.strip()})")
    p = run([exe, "plan", "--format", "json", os.path.join(demo_dir, "none")],
            cwd=tmp)
    rows = json.loads(p.stdout).get("configurations", []) \
        if p.returncode == 0 else []
    check(len(rows) > 1 and sum(1 for r in rows if r.get("recorded")) == 1,
          f"plan: the demo run's settings and their neighbours predicted "
          f"({len(rows)} rows; {p.returncode}: {p.stderr.strip()[-300:]})")

    # pkg-config and the header
    if shutil.which("pkg-config"):
        env = clean_env()
        env["PKG_CONFIG_PATH"] = os.path.join(libdir, "pkgconfig")
        p = run(["pkg-config", "--variable=preload", "vramtrace"], env=env)
        check(p.stdout.strip() == os.path.join(
            opt["prefix"], opt["libdir"], "vramtrace", "libvramtrace.so"),
            f"pkg-config: preload variable ({p.stdout.strip()})")
        p = run(["pkg-config", "--cflags", "vramtrace"], env=env)
        check(p.stdout.strip() == "-I" + os.path.join(
            opt["prefix"], opt["includedir"]),
            f"pkg-config: cflags ({p.stdout.strip()})")
    src = os.path.join(tmp, "annot.c")
    with open(src, "w") as f:
        f.write('#include <vramtrace.h>\n'
                'int main(void) { VRAMTRACE_PHASE_PUSH("weights");\n'
                '  VRAMTRACE_MARK("x"); VRAMTRACE_PHASE_POP(); return 0; }\n')
    prog = os.path.join(tmp, "annot")
    p = run([args.cc, "-I", os.path.join(prefix, opt["includedir"]), src,
             "-o", prog])
    check(p.returncode == 0 and run([prog]).returncode == 0,
          "header: a program annotated with the installed header builds "
          f"and runs without the preload {p.stderr}")


if __name__ == "__main__":
    harness.run(["--build", "--source", "--cc"], "install-", body)
