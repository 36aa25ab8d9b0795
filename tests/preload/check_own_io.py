#!/usr/bin/env python3
"""check_own_io.py — the preload's own code never calls a hooked name.

The preload defines libc's names (hook_libc.c: read, write, close,
accept4, recv, send, listen, dlsym, fork, exec..., hook_wait.c: the wait
family, entry.c: _exit, pthread_exit) and the GPU runtimes' (hook_cuda.c,
hook_hip.c). Inside the library such a name binds to our own hook, so a
call of ours by that name would re-enter the hooks: the preload's own I/O
goes through the real-libc table instead (preload/real.h, vrt_real.write).
This check holds every compiled object of the preload (the capture core,
the preload and the attach agent) to that: none may reference, as an
undefined symbol (nm -u), a name the preload exports as a hook. A hook's
call to another hook of its own file is resolved inside its object and
never shows; the agent's table of its libc wrappers' addresses lives in
hook_libc.c beside them.

The hooked names are what the built preload exports (nm -D), less the
public API (vramtrace_*). Objects are those under --objects whose source
is still in --sources (a file renamed away leaves its old object behind);
--exempt names objects by source file (real.c) that may reference them.

Usage: check_own_io.py --lib libvramtrace.so --objects DIR --sources DIR
                       [--exempt real.c]
Exit 0 when no object references a hooked name, 1 with each object and
name listed (or when no object is found), 77 when nm is missing.
"""
import argparse
import os
import shutil
import subprocess
import sys


def nm(args):
    return subprocess.run(["nm"] + args, check=True, capture_output=True,
                          text=True).stdout


def hooked_names(lib):
    names = set()
    for line in nm(["-D", "--defined-only", lib]).splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in "TtWiI":
            name = parts[2].split("@")[0]
            if not name.startswith("vramtrace_"):
                names.add(name)
    return names


def objects(folder):
    found = []
    for root, _dirs, files in os.walk(folder):
        for f in files:
            if f.endswith(".o"):
                found.append(os.path.join(root, f))
    return sorted(found)


def source_of(obj):
    """fds.c for .../libvrt_core.a.p/fds.c.o"""
    base = os.path.basename(obj)
    return base[:-2] if base.endswith(".c.o") else base


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--objects", required=True)
    ap.add_argument("--sources", required=True)
    ap.add_argument("--exempt", action="append", default=[])
    a = ap.parse_args()
    if not shutil.which("nm"):
        print("nm not found: skipped")
        return 77
    hooked = hooked_names(a.lib)
    if not {"write", "close", "read", "dlsym"} <= hooked:
        print("%s does not export the libc hooks it should" % a.lib)
        return 1
    objs = [o for o in objects(a.objects)
            if os.path.exists(os.path.join(a.sources, source_of(o)))]
    if not any(source_of(o) == "fds.c" for o in objs):
        print("no object of fds.c under %s: nothing was checked" % a.objects)
        return 1
    bad = 0
    for obj in objs:
        if source_of(obj) in a.exempt:
            continue
        refs = set()
        for line in nm(["-u", obj]).splitlines():
            parts = line.split()
            if parts:
                refs.add(parts[-1].split("@")[0])
        for name in sorted(refs & hooked):
            print("%s references %s, a name the preload hooks: call it "
                  "through the real-libc table (real.h: vrt_real.%s)" %
                  (os.path.relpath(obj, a.objects), name, name))
            bad += 1
    if bad:
        return 1
    print("%d objects, %d hooked names: none referenced for the preload's "
          "own use" % (len(objs), len(hooked)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
