#!/usr/bin/env python3
"""run_explain.py — `record` never claims a trace it does not have: each
way a run ends without one gets its reason (python3 stdlib and a C
compiler).

missing     a preload built in the temporary directory against a stub
            library (libvrtstub.so.1), which is then hidden: the command
            cannot start (the loader's exit 127); record names
            libvrtstub.so.1 and says the preload could not be loaded.
version     the stub rebuilt without the symbol version the preload was
            linked against (VRTSTUB_2): record names the version and the
            file lacking it (glibc's GLIBC_2.34 reads the same way, and
            the unit test analyzer-record-explain parses that line).
cmdfail     the preload loads, but the command's own program needs the
            hidden stub: record reads the loader's line in DIR/output.log
            (its copy of the command's output) and names the library;
            with --no-log there is no such copy, and the line says only
            that no process made a GPU call (exit 127).
notfound    a command that does not exist: "command not found", exit 127,
            no run directory left behind.
shell127    `sh -c` of a command that does not exist: the shell's 127,
            explained as such, with no GPU call.
nogpu       a command that makes no GPU call and exits 3: record names it
            and its status, exits 3, and does not claim a trace.
disabled    VRAMTRACE_ENABLE=0: named as the reason.
standby     --standby and no `ctl start`: named as the reason.
traced      a run that allocates: "trace in DIR" as before.

Usage: run_explain.py --vramtrace EXE --preload LIB --llama EXE
                      --fake-dir DIR --cc CC --tmp-root DIR
Exit 0 pass, 1 fail.
"""
import os
import subprocess

from harness import check
import harness


def base_env(args, preload=None, libpath=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("VRAMTRACE_") and k != "LD_PRELOAD"}
    env["VRAMTRACE_PRELOAD"] = preload or os.path.abspath(args.preload)
    env["LD_LIBRARY_PATH"] = libpath or args.fake_dir
    return env


def record(args, tmp, name, cmd, env, opts=()):
    out = os.path.join(tmp, name)
    full = [args.vramtrace, "record", "-o", out, *opts, "--"] + cmd
    print("$ " + " ".join(full), flush=True)
    p = subprocess.run(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=60)
    print(p.stdout + p.stderr)
    return p, out


def no_trace_line(p, out):
    """The one line record printed about the missing trace."""
    lines = [l for l in p.stderr.splitlines()
             if l.startswith(f"vramtrace: error: {out}: no trace: ")]
    return lines[0] if len(lines) == 1 else ""


def cc(args, *argv):
    p = subprocess.run([args.cc, *argv], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if p.returncode:
        raise SystemExit(f"cc failed: {p.stdout}")


def build_stub(args, tmp, version):
    """libvrtstub.so.1 in tmp/stub, exporting vrt_stub_fn at version."""
    d = os.path.join(tmp, "stub")
    os.makedirs(d, exist_ok=True)
    src, vs = os.path.join(d, "stub.c"), os.path.join(d, "stub.map")
    with open(src, "w") as f:
        f.write("int vrt_stub_fn(void);\nint vrt_stub_fn(void) "
                "{ return 1; }\n")
    with open(vs, "w") as f:
        f.write(f"{version} {{ global: vrt_stub_fn; local: *; }};\n")
    cc(args, "-shared", "-fPIC", "-o", os.path.join(d, "libvrtstub.so.1"),
       "-Wl,-soname,libvrtstub.so.1", f"-Wl,--version-script={vs}", src)
    return d


def body(args, tmp):
    alloc = [args.llama, "-ngl", "2", "-np", "1"]

    # A preload that needs a library, then hidden.
    stub = build_stub(args, tmp, "VRTSTUB_2")
    src = os.path.join(tmp, "badpre.c")
    with open(src, "w") as f:
        f.write("int vrt_stub_fn(void);\n__attribute__((constructor)) "
                "static void init(void) { vrt_stub_fn(); }\n")
    bad = os.path.join(tmp, "badpre", "libbadpre.so")
    os.makedirs(os.path.dirname(bad))
    cc(args, "-shared", "-fPIC", "-o", bad, src, "-L" + stub,
       "-l:libvrtstub.so.1")
    src = os.path.join(tmp, "needstub.c")
    with open(src, "w") as f:
        f.write("int vrt_stub_fn(void);\nint main(void) "
                "{ return vrt_stub_fn() - 1; }\n")
    needstub = os.path.join(tmp, "needstub")
    cc(args, "-o", needstub, src, "-L" + stub, "-l:libvrtstub.so.1")
    os.rename(os.path.join(stub, "libvrtstub.so.1"),
              os.path.join(stub, "hidden"))
    p, out = record(args, tmp, "missing", alloc, base_env(args, bad))
    line = no_trace_line(p, out)
    check(p.returncode == 127, f"missing: the loader's exit 127 is "
          f"record's ({p.returncode})")
    check("could not be loaded" in line and bad in line and
          "libvrtstub.so.1" in line and "cannot find" in line,
          f"missing: names the preload and the missing library ({line!r})")
    check("trace in" not in p.stderr, "missing: claims no trace")

    # The preload loads; the command's program does not.
    p, out = record(args, tmp, "cmdfail", [needstub], base_env(args))
    line = no_trace_line(p, out)
    check(p.returncode == 127 and "a program of the command could not "
          "start" in line and "libvrtstub.so.1" in line and
          "output.log" in line and "could not be loaded" not in line,
          f"cmdfail: the command's own loader error, from output.log "
          f"({line!r})")
    p, out = record(args, tmp, "cmdfail-nolog", [needstub], base_env(args),
                    opts=["--no-log"])
    line = no_trace_line(p, out)
    check(p.returncode == 127 and "exited with status 127" in line and
          not os.path.exists(os.path.join(out, "output.log")),
          f"cmdfail: without output.log, only the status ({line!r})")

    # The same library without the version the preload needs.
    build_stub(args, tmp, "VRTSTUB_1")
    p, out = record(args, tmp, "version", alloc,
                    base_env(args, bad, args.fake_dir + ":" + stub))
    line = no_trace_line(p, out)
    check("could not be loaded" in line and "needs version VRTSTUB_2" in
          line and os.path.join(stub, "libvrtstub.so.1") in line,
          f"version: names the version and the file lacking it ({line!r})")
    check("trace in" not in p.stderr, "version: claims no trace")

    # A command that does not exist.
    p, out = record(args, tmp, "notfound", ["vrt-no-such-command-xyz"],
                    base_env(args))
    check(p.returncode == 127 and
          "vrt-no-such-command-xyz: command not found" in p.stderr and
          "trace in" not in p.stderr and not os.path.exists(out),
          "notfound: command not found, exit 127, no run directory")

    p, out = record(args, tmp, "shell127",
                    ["sh", "-c", "vrt-no-such-command-xyz"], base_env(args))
    line = no_trace_line(p, out)
    check(p.returncode == 127 and "no process made a GPU memory call" in
          line and "exited with status 127" in line and
          "command not found" in line,
          f"shell127: the shell's 127 explained ({line!r})")

    p, out = record(args, tmp, "nogpu", ["sh", "-c", "exit 3"],
                    base_env(args))
    line = no_trace_line(p, out)
    check(p.returncode == 3 and "no process made a GPU memory call" in
          line and "`sh -c exit 3` exited with status 3" in line and
          "trace in" not in p.stderr,
          f"nogpu: names the command and its status ({line!r})")

    env = base_env(args)
    env["VRAMTRACE_ENABLE"] = "0"
    p, out = record(args, tmp, "disabled", alloc, env)
    line = no_trace_line(p, out)
    check(p.returncode == 0 and "VRAMTRACE_ENABLE=0" in line,
          f"disabled: VRAMTRACE_ENABLE=0 named ({line!r})")

    p, out = record(args, tmp, "standby", alloc, base_env(args),
                    opts=["--standby"])
    line = no_trace_line(p, out)
    check(p.returncode == 0 and "standby" in line and "ctl" in line,
          f"standby: no `ctl start` named ({line!r})")

    p, out = record(args, tmp, "traced", alloc, base_env(args))
    check(p.returncode == 0 and f"trace in {out}" in p.stderr and
          "no trace" not in p.stderr, "traced: a real trace is announced")


if __name__ == "__main__":
    harness.run(["--vramtrace", "--preload", "--llama", "--fake-dir", "--cc"], "explain-", body)
