#!/usr/bin/env python3
"""make_bundle.py — the portable bundle for containers:
vramtrace-VERSION-linux-ARCH.tar.gz, from a build directory, building
nothing (`./build.sh bundle` builds first).

The bundle is what `meson install` puts in a prefix (stripped), laid out
for unpacking anywhere (/opt/vramtrace in docs/deploy.md):

  bin/vramtrace                   the command (zstd and jansson linked in)
  lib/vramtrace/libvramtrace.so   the preload (zstd linked in; run path
                                  $ORIGIN as DT_RPATH)
  lib/vramtrace/libvramtrace_agent.so
                                  what `vramtrace attach` loads, and
  lib/vramtrace/libZydis.so.4.0   the decoder attach opens (when found)
  lib/vramtrace/libunwind.so.8    copied beside it with every other
  lib/vramtrace/liblzma.so.5      library it needs that is not glibc's
  lib/vramtrace/demo/             `vramtrace demo`'s server and fake driver
  lib/pkgconfig/vramtrace.pc      relocatable (${pcfiledir})
  include/                        the annotation header, the trace format
  share/doc/vramtrace/            README, docs, the Grafana dashboard, and
                                  licenses/ of the libraries copied in
  MANIFEST                        build host, glibc needed, every file

It refuses to write a bundle whose command needs a library beyond glibc
(it has no run path to find one), or whose files need a newer glibc than
`vramtrace --version` states.

Usage: make_bundle.py --build DIR --out DIR
Prints the path of the .tar.gz; exit 0, or 1 with the reason.
"""
import argparse
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

# The libraries of glibc itself: every target has them.
GLIBC = re.compile(r"^(libc|libm|libdl|libpthread|librt|libresolv|"
                   r"libutil|ld-linux[-\w.]*)\.so(\.\d+)*$|^linux-vdso")


def fail(msg):
    print(f"make_bundle: error: {msg}", file=sys.stderr)
    sys.exit(1)


def build_info(build):
    info = os.path.join(build, "meson-info")
    try:
        opts = {o["name"]: o["value"] for o in json.load(
            open(os.path.join(info, "intro-buildoptions.json")))}
        version = json.load(open(os.path.join(
            info, "intro-projectinfo.json")))["version"]
    except (OSError, ValueError, KeyError) as e:
        fail(f"{build}: not a configured build directory ({e})")
    return opts, version


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    """[(soname, resolved path or None)] of ldd, glibc's left out."""
    p = subprocess.run(["ldd", path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True,
                       env={"PATH": os.environ.get("PATH", "/usr/bin")})
    out = []
    for line in p.stdout.splitlines():
        # "NAME => PATH (0xADDR)", "NAME => not found"; PATH may hold
        # spaces (a bundle made into "/tmp/my dist").
        m = re.match(r"^\s*(\S+)\s+=>\s+(.+?)(?:\s+\(0x[0-9a-f]+\))?\s*$",
                     line)
        if not m:
            continue
        name, where = m.group(1), m.group(2)
        if GLIBC.match(name):
            continue
        out.append((name, None if where.startswith("not found") else where))
    return out


def glibc_needed(path):
    """The newest GLIBC_x.y symbol version an ELF file needs, as a tuple."""
    p = subprocess.run(["objdump", "-T", path], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    best = (0,)
    for v in re.findall(r"\bGLIBC_(\d+(?:\.\d+)+)\b", p.stdout):
        best = max(best, tuple(int(x) for x in v.split(".")))
    return best


def copyright_of(path):
    """The Debian copyright file of the package shipping path, if any."""
    if not shutil.which("dpkg"):
        return None
    for cand in (path, os.path.realpath(path)):
        p = subprocess.run(["dpkg", "-S", cand], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if p.returncode == 0 and ":" in p.stdout:
            pkg = p.stdout.split(":")[0].strip()
            f = f"/usr/share/doc/{pkg}/copyright"
            if os.path.exists(f):
                return pkg, f
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    opts, version = build_info(args.build)
    arch = platform.machine()
    name = f"vramtrace-{version}-linux-{arch}"
    os.makedirs(args.out, exist_ok=True)
    # Absolute: `meson install -C BUILD --destdir D` takes a relative D
    # from inside the build directory, not from here.
    work = tempfile.mkdtemp(prefix="bundle-", dir=os.path.abspath(args.out))
    try:
        stage = os.path.join(work, "stage")
        p = subprocess.run(["meson", "install", "-C", args.build,
                            "--destdir", stage, "--no-rebuild", "--strip",
                            "--quiet"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            fail(f"meson install failed:\n{p.stdout}")
        prefix = stage + opts["prefix"]
        root = os.path.join(work, name)
        lib = os.path.join(root, "lib", "vramtrace")
        moves = [(opts["bindir"], "bin"),
                 (os.path.join(opts["libdir"], "vramtrace"),
                  "lib/vramtrace"),
                 (opts["includedir"], "include"),
                 (os.path.join(opts["datadir"], "doc", "vramtrace"),
                  "share/doc/vramtrace")]
        for src, dst in moves:
            s = os.path.join(prefix, src)
            if not os.path.isdir(s):
                fail(f"the install has no {src}/")
            shutil.move(s, os.path.join(root, dst))
        pc = os.path.join(root, "lib", "pkgconfig")
        os.makedirs(pc)
        with open(os.path.join(pc, "vramtrace.pc"), "w") as f:
            f.write("prefix=${pcfiledir}/../..\n"
                    "includedir=${prefix}/include\n"
                    "libdir=${prefix}/lib\n"
                    "preload=${libdir}/vramtrace/libvramtrace.so\n\n"
                    "Name: vramtrace\n"
                    "Description: GPU memory tracer for inference servers: "
                    "annotation API\n"
                    f"Version: {version}\n"
                    "Cflags: -I${includedir}\n")

        # The preload's libraries beyond glibc, beside it (its run path
        # is $ORIGIN); the command must need none.
        preload = os.path.join(lib, "libvramtrace.so")
        exe = os.path.join(root, "bin", "vramtrace")
        for so, where in needed(exe):
            fail(f"bin/vramtrace needs {so} ({where}): it must link "
                 "everything but glibc statically (libzstd-dev and "
                 "libjansson-dev ship the archives)")
        licenses = os.path.join(root, "share", "doc", "vramtrace",
                                "licenses")
        copied = []
        # `vramtrace attach` opens the Zydis decoder when it attaches
        # (analyzer/record/relocate.c looks beside the agent): it travels too.
        zydis = subprocess.run(["sh", "-c", "ldconfig -p | awk "
                                "'/libZydis\\.so\\.4\\.0 / {print $NF; "
                                "exit}'"], stdout=subprocess.PIPE,
                               text=True).stdout.strip()
        extra = [("libZydis.so.4.0", zydis)] if zydis else []
        for so, where in needed(preload) + extra:
            if not where:
                fail(f"libvramtrace.so needs {so}, which is not found "
                     "here")
            shutil.copyfile(where, os.path.join(lib, so))
            os.chmod(os.path.join(lib, so), 0o644)
            subprocess.run(["strip", "--strip-unneeded",
                            os.path.join(lib, so)], check=False)
            cr = copyright_of(where)
            if cr:
                os.makedirs(licenses, exist_ok=True)
                shutil.copyfile(cr[1], os.path.join(
                    licenses, f"{so}.copyright"))
            copied.append(f"{so} (from {where}"
                          f"{', Debian package ' + cr[0] if cr else ''})")
        # What the bundle runs resolves its libraries inside it: the
        # preload's run path also serves libunwind's liblzma (DT_RPATH of
        # the loading object), so each is checked as it is loaded.
        for rel in ("bin/vramtrace", "lib/vramtrace/libvramtrace.so",
                    "lib/vramtrace/demo/serve_sim"):
            for so, where in needed(os.path.join(root, rel)):
                if not where or not os.path.realpath(where).startswith(
                        os.path.realpath(root) + os.sep):
                    fail(f"{rel} needs {so} from outside the bundle "
                         f"({where})")

        # The glibc the files need, against what the command states.
        newest = max(glibc_needed(os.path.join(d, fn))
                     for d, _, files in os.walk(root) for fn in files
                     if not os.path.islink(os.path.join(d, fn)) and
                     is_elf(os.path.join(d, fn)))
        vout = subprocess.run([exe, "--version"], stdout=subprocess.PIPE,
                              text=True).stdout
        m = re.search(r"needs glibc (\d+(?:\.\d+)+)", vout)
        stated = tuple(int(x) for x in m.group(1).split(".")) if m else None
        if not stated or newest > stated:
            fail(f"the bundle's files need glibc "
                 f"{'.'.join(map(str, newest))}, but vramtrace --version "
                 f"states {m.group(1) if m else 'nothing'}")

        files = []
        for d, _, fs in os.walk(root):
            for fn in fs:
                f = os.path.join(d, fn)
                rel = os.path.relpath(f, root)
                if os.path.islink(f):
                    files.append(f"{rel} -> {os.readlink(f)}")
                else:
                    h = hashlib.sha256(open(f, "rb").read()).hexdigest()
                    files.append(f"{rel} {os.path.getsize(f)} sha256:{h}")
        ldd_v = subprocess.run(["ldd", "--version"], stdout=subprocess.PIPE,
                               text=True).stdout.splitlines()[0]
        src = subprocess.run(["git", "describe", "--always", "--dirty"],
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             cwd=os.path.dirname(os.path.abspath(
                                 __file__))).stdout.strip() or "unknown"
        with open(os.path.join(root, "MANIFEST"), "w") as f:
            f.write(f"{name}\n"
                    f"built on {platform.system()} {platform.release()} "
                    f"{arch}, {ldd_v}; source {src}\n"
                    f"needs glibc {'.'.join(map(str, stated))} or newer "
                    f"and nothing else\n"
                    f"copied beside the preload: "
                    f"{'; '.join(copied) or 'nothing'}\n\n")
            f.write("\n".join(sorted(files)) + "\n")

        tgz = os.path.join(args.out, f"{name}.tar.gz")
        tmp = tgz + ".tmp"

        def norm(ti):
            ti.uid = ti.gid = 0
            ti.uname = ti.gname = "root"
            return ti
        with tarfile.open(tmp, "w:gz") as t:
            t.add(root, arcname=name, filter=norm)
        os.replace(tmp, tgz)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(tgz)
    return 0


if __name__ == "__main__":
    sys.exit(main())
