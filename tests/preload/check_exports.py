#!/usr/bin/env python3
"""check_exports.py — the preload exports exactly the hooked GPU functions.

A hooked function reaches programs only when three lists agree: the one
table of hooked functions (preload/hook_table.h: VRT_CUDA_HOOKS and
VRT_HIP_HOOKS), the linker version script (preload/libvramtrace.map),
which keeps everything not named there inside the library, and what the
built library then exports. A wrapper added to the table but not to the
script is silently hidden (programs linked with -lcuda or -lamdhip64 never
reach it); a name left in the script after its row went is a stale
promise. So: the script's CUDA and HIP names ("cu*", "hip*") must be the
table's names, no more and no fewer, and the library's exported "cu*" and
"hip*" names (nm -D) must be the same set. The script's other names are
libc functions and the public API, which the table does not list: each of
them must be exported too (a definition the headers rename, as
_FILE_OFFSET_BITS=64 renames sendfile to sendfile64, would otherwise leave
a listed name hidden and its hook dead).

Usage: check_exports.py --table hook_table.h --map libvramtrace.map
                        [--lib libvramtrace.so]
Exit 0 when they agree, 1 with every difference listed, 77 when --lib is
given and nm is missing.
"""
import argparse
import re
import shutil
import subprocess
import sys

GPU = re.compile(r"^(cu|hip)[A-Za-z0-9_]*$")


def table_names(path):
    """Every export named by a row of VRT_CUDA_HOOKS or VRT_HIP_HOOKS."""
    text = open(path).read()
    names = []
    for macro in ("VRT_CUDA_HOOKS", "VRT_HIP_HOOKS"):
        m = re.search(r"#define\s+" + macro + r"\(X\)((?:[^\n]*\\\n)*[^\n]*)",
                      text)
        if not m:
            sys.exit(f"{path}: no #define {macro}(X)")
        rows = re.findall(r"\bX\(\s*([A-Za-z_][A-Za-z0-9_]*)", m.group(1))
        if not rows:
            sys.exit(f"{path}: {macro} has no rows")
        names += rows
    return names


def map_names(path):
    """The names of the version script's global: section."""
    text = re.sub(r"/\*.*?\*/", "", open(path).read(), flags=re.S)
    m = re.search(r"global:(.*?)(?:local:|\};)", text, re.S)
    if not m:
        sys.exit(f"{path}: no global: section")
    return re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*;", m.group(1))


def lib_names(path):
    """The dynamic symbols the library defines."""
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         text=True, stdout=subprocess.PIPE).stdout
    return [line.split()[-1] for line in out.splitlines() if line.split()]


def compare(what_a, a, what_b, b):
    """Lines naming what one set has and the other lacks."""
    lines = []
    for name in sorted(a - b):
        lines.append(f"{name}: in {what_a}, not in {what_b}")
    for name in sorted(b - a):
        lines.append(f"{name}: in {what_b}, not in {what_a}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("--map", required=True)
    ap.add_argument("--lib")
    a = ap.parse_args()
    table = table_names(a.table)
    script = map_names(a.map)
    errors = []
    for what, names in (("the hook table", table),
                        ("the version script", script)):
        for name in sorted({n for n in names if names.count(n) > 1}):
            errors.append(f"{name}: listed twice in {what}")
    gpu_script = {n for n in script if GPU.match(n)}
    errors += compare("the hook table", set(table), "the version script",
                      gpu_script)
    if a.lib:
        if not shutil.which("nm"):
            print("nm not found: cannot read the library's exports")
            return 77
        exported = set(lib_names(a.lib))
        gpu_lib = {n for n in exported if GPU.match(n)}
        errors += compare("the version script", gpu_script,
                          "the library's exports", gpu_lib)
        for name in sorted(set(script) - gpu_script - exported):
            errors.append(f"{name}: in the version script, not in the "
                          "library's exports")
    for e in errors:
        print(e)
    print(f"{len(table)} hooked functions, {len(script)} names in the "
          f"version script: {'differ' if errors else 'agree'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
