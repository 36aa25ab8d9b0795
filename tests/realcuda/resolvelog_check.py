"""resolvelog_check.py — reads a resolver log (VRAMTRACE_RESOLVE_LOG=1,
`<run dir>/<pid>.resolve`, docs/resolve-log.md) and checks it against what
the preload must do, stated here independently of preload/hook_table.h:

  * a look-up of a hooked entry point, at a version that selects the ABI we
    wrap, that the driver answered, is answered with the preload's wrapper
    of exactly that export (the _ptsz one when the flags ask for the
    per-thread default stream), as dladdr says of the pointer the caller
    got;
  * every other look-up (other names, older versions, failures) passes
    the driver's answer through untouched: never a pointer into the
    preload, and, when the driver's own answers are known (the fake
    driver's FAKECUDA_DEBUG lines), the very same pointer, call for call;
  * a runtime asked for each (name, flags) in MUST_ASK at least once.

Used by run_cudart_real.py (the real libcudart on the fake driver) and
tests/gpu/run_gpu.py (the real libcudart on a real driver). Stdlib only.
"""
import re

PRELOAD_OBJECT = "libvramtrace.so"

# base name -> [(lowest cudaVersion, export we wrap)], newest first; the
# second column of PTSZ is the export for flags & 2.
HOOKED = {
    "cuMemAlloc": [(3020, "cuMemAlloc_v2")],
    "cuMemAllocPitch": [(3020, "cuMemAllocPitch_v2")],
    "cuMemFree": [(3020, "cuMemFree_v2")],
    "cuMemAllocAsync": [(0, "cuMemAllocAsync")],
    "cuMemAllocFromPoolAsync": [(0, "cuMemAllocFromPoolAsync")],
    "cuMemFreeAsync": [(0, "cuMemFreeAsync")],
    "cuMemAddressReserve": [(0, "cuMemAddressReserve")],
    "cuMemAddressFree": [(0, "cuMemAddressFree")],
    "cuMemCreate": [(0, "cuMemCreate")],
    "cuMemRelease": [(0, "cuMemRelease")],
    "cuMemMap": [(0, "cuMemMap")],
    "cuMemUnmap": [(0, "cuMemUnmap")],
    "cuMemAllocManaged": [(0, "cuMemAllocManaged")],
    "cuMemHostAlloc": [(0, "cuMemHostAlloc")],
    "cuMemAllocHost": [(3020, "cuMemAllocHost_v2")],
    "cuMemFreeHost": [(0, "cuMemFreeHost")],
    "cuMemHostRegister": [(6050, "cuMemHostRegister_v2")],
    "cuMemHostUnregister": [(0, "cuMemHostUnregister")],
    "cuMemGetInfo": [(3020, "cuMemGetInfo_v2")],
    "cuGetProcAddress": [(12000, "cuGetProcAddress_v2"),
                         (0, "cuGetProcAddress")],
}
PTSZ = {
    "cuMemAllocAsync": "cuMemAllocAsync_ptsz",
    "cuMemAllocFromPoolAsync": "cuMemAllocFromPoolAsync_ptsz",
    "cuMemFreeAsync": "cuMemFreeAsync_ptsz",
}
EXPORTS = {e for rows in HOOKED.values() for _, e in rows} | set(PTSZ.values())

# What libcudart 13 asks the driver for, for the allocation calls it offers
# (cudaMalloc*, cudaFree*, cudaHost*, pools, cudaMemGetInfo), and the
# resolver itself: flags 2 is the per-thread-default-stream look-up, made
# whatever the program was compiled with.
MUST_ASK = [
    ("cuGetProcAddress", 0), ("cuMemGetInfo", 0), ("cuMemAlloc", 0),
    ("cuMemAllocPitch", 0), ("cuMemFree", 0), ("cuMemAllocManaged", 0),
    ("cuMemAllocAsync", 0), ("cuMemAllocAsync", 2),
    ("cuMemAllocFromPoolAsync", 0), ("cuMemAllocFromPoolAsync", 2),
    ("cuMemFreeAsync", 0), ("cuMemFreeAsync", 2), ("cuMemHostAlloc", 0),
    ("cuMemFreeHost", 0), ("cuMemHostRegister", 0),
    ("cuMemHostUnregister", 0),
]

RESOLVERS = ("cuGetProcAddress", "cuGetProcAddress_v2")
FIELDS = ("via", "name", "version", "flags", "result", "status", "answer",
          "object", "symbol", "pointer")
FAKE_LINE = re.compile(r"fakecuda: cuGetProcAddress\((.*), (-?\d+), (\d+)\) "
                       r"-> (-?\d+) (\S+)$")


def expected_export(name, version, flags):
    """The wrapper the preload must hand out for this look-up, or None."""
    for low, export in HOOKED.get(name, []):
        if version >= low:
            if flags & 2 and name in PTSZ:
                return PTSZ[name]
            return export
    return None


def parse_log(text):
    """The log's look-ups as dicts (FIELDS; numbers as int, '-' as None)."""
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        parts = line.split(" ")
        if len(parts) != len(FIELDS):
            raise ValueError(f"line {n}: {len(parts)} fields, expected "
                             f"{len(FIELDS)}: {line!r}")
        row = dict(zip(FIELDS, parts))
        for k in ("version", "flags", "result", "status"):
            row[k] = None if row[k] == "-" else int(row[k])
        if row["name"] == '""':
            row["name"] = ""
        row["line"] = n
        rows.append(row)
    return rows


def parse_fake_answers(stderr_text):
    """The fake driver's resolver answers (FAKECUDA_DEBUG=1), in order:
    (name, version, flags, result, pointer)."""
    out = []
    for line in stderr_text.splitlines():
        m = FAKE_LINE.match(line.strip())
        if m:
            ptr = m.group(5)
            out.append((m.group(1), int(m.group(2)), int(m.group(3)),
                        int(m.group(4)), "(nil)" if ptr == "(nil)" else
                        hex(int(ptr, 16))))
    return out


def _ptr(s):
    return s if s == "(nil)" else hex(int(s, 16))


def check(rows, driver_answers=None, must_ask=MUST_ASK, must_dlsym=()):
    """Returns (errors, wrapped): the differences from the rules above (and
    a hooked export in must_dlsym that no dlsym asked for), and the
    wrapped look-ups as (via, name, version, flags, export)."""
    errors, wrapped = [], []
    asked = set()
    resolves = [r for r in rows if r["via"] in RESOLVERS]
    for r in rows:
        where = f"line {r['line']} ({r['via']} {r['name']!r} " \
                f"{r['version']} {r['flags']})"
        if r["via"] == "dlsym":
            want = r["name"] if r["name"] in EXPORTS else None
        elif r["via"] in RESOLVERS:
            asked.add((r["name"], r["flags"] & 2))
            want = (expected_export(r["name"], r["version"], r["flags"])
                    if r["result"] == 0 and r["answer"] != "none" else None)
        else:
            errors.append(f"{where}: unknown via {r['via']!r}")
            continue
        if want:
            if (r["answer"], r["object"], r["symbol"]) != (
                    "wrapper", PRELOAD_OBJECT, want):
                errors.append(f"{where}: expected the preload's {want}, "
                              f"the caller got {r['answer']} "
                              f"{r['object']}:{r['symbol']}")
            else:
                wrapped.append((r["via"], r["name"], r["version"],
                                r["flags"], want))
        elif r["answer"] == "wrapper" or r["object"] == PRELOAD_OBJECT:
            errors.append(f"{where}: not a hooked entry point, but the "
                          f"caller got {r['object']}:{r['symbol']}")
    if driver_answers is not None:
        if len(driver_answers) != len(resolves):
            errors.append(f"{len(resolves)} resolver look-ups in the log, "
                          f"{len(driver_answers)} answered by the driver")
        for r, (name, version, flags, result, ptr) in zip(resolves,
                                                          driver_answers):
            where = f"line {r['line']} ({r['name']!r})"
            if (r["name"], r["version"], r["flags"], r["result"]) != (
                    name, version, flags, result):
                errors.append(f"{where}: the log says {r['name']!r} "
                              f"{r['version']} {r['flags']} -> "
                              f"{r['result']}, the driver answered "
                              f"{name!r} {version} {flags} -> {result}")
            elif r["answer"] != "wrapper" and _ptr(r["pointer"]) != ptr:
                errors.append(f"{where}: the caller got {r['pointer']}, "
                              f"the driver answered {ptr}")
    dlsyms = {r["name"] for r in rows if r["via"] == "dlsym"}
    for name in must_dlsym:
        if name not in dlsyms:
            errors.append(f"the program's dlsym of {name} is not in the log")
    for name, flags in must_ask:
        if (name, flags) not in asked:
            errors.append(f"the runtime never asked for {name} with flags "
                          f"{flags}")
    return errors, wrapped
