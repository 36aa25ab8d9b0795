#!/usr/bin/env python3
"""trace_fields.py — where the bytes of a trace go: each field's share of
the compressed size of a .vtrace file.

    trace_fields.py [--level N] TRACE.vtrace

Each zstd frame of the file is decoded and its records parsed (the hot
path's ALLOC, FREE, ALLOC_C and FREE_C records of format 1 to 3, and the
BATCH records of formats 4 and 5, column by column). Then the fields are blanked
(their bytes set to zero) one group after another, in the order below,
and every frame is compressed again at the writer's level, frame by
frame as the writer cut them: what a group's blanking saves is its share.
The shares add up to the file's compressed size, less what stays when
everything is blank (frame headers, checksums, the few records nothing
here names): the "frame overhead" row.

Groups: address (addresses, address deltas; BATCH: aaddr, faddr, addr),
time (dts; BATCH: time), call site (api, device, aux, stack, phase; BATCH:
asite, fsite, def), size (BATCH: size, and sizelo, sizenew in format 5),
kind (BATCH: kind), record
headers (type and length of every record, a BATCH's header fields), other
records (everything else: CHUNK, REPEAT, STACK, ...).

Prints one line per group: raw bytes per event, compressed bytes per
event, share. Events: ALLOC and FREE events (a BATCH's count each, its
pairs twice).
python3 stdlib and the zstd command. Exit 0, 1 when the file does not
parse, 2 usage.
"""
import argparse
import subprocess
import sys

REC_CHUNK, REC_ALLOC, REC_FREE = 6, 7, 8
REC_ALLOC_C, REC_FREE_C, REC_BATCH = 23, 24, 30
GROUPS = ["address", "time", "call site", "size", "kind",
          "record headers", "other records"]
# Fields of the hot path's records, in order, and their groups.
ROWS = {
    REC_ALLOC: ["time", "call site", "call site", "address", "size",
                "call site", "call site", "call site"],
    REC_FREE: ["time", "call site", "call site", "address", "call site",
               "call site", "call site"],
    REC_ALLOC_C: ["time", "address", "size", "call site"],
    REC_FREE_C: ["time", "address"],
}
# BATCH columns: kind time asite fsite size aaddr faddr addr def
# (version 4); kind time asite fsite size sizelo sizenew aaddr faddr addr
# def (version 5).
COLS = {4: ["kind", "time", "call site", "call site", "size", "address",
            "address", "address", "call site"],
        5: ["kind", "time", "call site", "call site", "size", "size",
            "size", "address", "address", "address", "call site"]}
REC_HEADER = 1


class Bad(Exception):
    pass


def uv(b, i, end):
    v = s = 0
    while True:
        if i >= end or s > 63:
            raise Bad("varint past its record")
        x = b[i]
        i += 1
        v |= (x & 0x7F) << s
        s += 7
        if x < 0x80:
            return v, i


def frames(data):
    """Splits a file into its zstd frames (magic, header, blocks,
    checksum), as the decoder would find them."""
    out, i = [], 0
    while i + 6 <= len(data):
        if data[i:i + 4] != b"\x28\xb5\x2f\xfd":
            raise Bad(f"not a zstd frame at byte {i}")
        fhd = data[i + 4]
        j = i + 5
        single = (fhd >> 5) & 1
        if not single:
            j += 1  # window descriptor
        j += (0, 1, 2, 4)[fhd & 3]  # dictionary id
        fcs = (fhd >> 6) & 3
        j += (1 if single else 0, 2, 4, 8)[fcs]
        while True:
            if j + 3 > len(data):
                raise Bad("frame cut short")
            h = data[j] | data[j + 1] << 8 | data[j + 2] << 16
            last, btype, size = h & 1, (h >> 1) & 3, h >> 3
            j += 3 + (1 if btype == 1 else size)
            if last:
                break
        if (fhd >> 2) & 1:
            j += 4  # checksum
        out.append(data[i:j])
        i = j
    return out


def spans(raw, ver):
    """(group, start, end) of every field of the decoded frame raw, and
    the events it holds; ver: [the file's format version], set by its
    HEADER."""
    out, i, n, events = [], 0, len(raw), 0
    while i < n:
        t = raw[i]
        start = i
        plen, i = uv(raw, i + 1, n)
        end = i + plen
        if end > n:
            raise Bad("record past its frame")
        if t == REC_HEADER and plen > 8:
            ver[0], _ = uv(raw, i + 8, end)
        if t in ROWS:
            out.append(("record headers", start, i))
            events += 1
            for g in ROWS[t]:
                j = i
                _, i = uv(raw, i, end)
                out.append((g, j, i))
            if i < end:
                out.append(("other records", i, end))
        elif t == REC_BATCH:
            cols = COLS[5 if ver[0] >= 5 else 4]
            _, i = uv(raw, i, end)
            cnt, i = uv(raw, i, end)
            _, i = uv(raw, i, end)
            if ver[0] >= 5:
                pairs, i = uv(raw, i, end)
                cnt += pairs  # a pair is an allocation and a free
            lens = []
            for _ in range(len(cols) - 1):
                ln, i = uv(raw, i, end)
                lens.append(ln)
            out.append(("record headers", start, i))
            events += cnt
            for g, ln in zip(cols, lens + [end - i - sum(lens)]):
                if ln < 0 or i + ln > end:
                    raise Bad("BATCH columns past the record")
                out.append((g, i, i + ln))
                i += ln
        else:
            out.append(("other records", start, end))
        i = end
    return out, events


def compress(parts, level):
    total = 0
    for p in parts:
        r = subprocess.run(["zstd", f"-{level}", "-c", "-q", "--no-check"],
                           input=bytes(p), stdout=subprocess.PIPE,
                           check=True)
        total += len(r.stdout) + 4  # the writer's frames carry a checksum
    return total


def main():
    ap = argparse.ArgumentParser(
        description="each field's share of a trace's compressed size")
    ap.add_argument("trace")
    ap.add_argument("--level", type=int, default=1,
                    help="zstd level, as VRAMTRACE_ZSTD_LEVEL (default 1)")
    a = ap.parse_args()
    try:
        data = open(a.trace, "rb").read()
        raws, fields, events, ver = [], [], 0, [1]
        for f in frames(data):
            r = subprocess.run(["zstd", "-dc", "-q"], input=f,
                               stdout=subprocess.PIPE, check=True).stdout
            sp, ev = spans(r, ver)
            raws.append(bytearray(r))
            fields.append(sp)
            events += ev
    except (OSError, Bad, subprocess.CalledProcessError) as e:
        print(f"trace_fields: error: {a.trace}: {e}", file=sys.stderr)
        return 1
    if not events:
        print(f"trace_fields: error: {a.trace}: no ALLOC or FREE events",
              file=sys.stderr)
        return 1
    raw_by = {g: 0 for g in GROUPS}
    for sp in fields:
        for g, x, y in sp:
            raw_by[g] += y - x
    size = compress(raws, a.level)
    print(f"{a.trace}: {len(data):,} bytes, {events:,} events, "
          f"{len(data) / events:.3f} bytes per event "
          f"(recompressed at level {a.level}: {size / events:.3f})")
    print(f"{'field':<16} {'raw B/ev':>9} {'zstd B/ev':>10} {'share':>7}")
    prev = size
    for g in GROUPS:
        for raw, sp in zip(raws, fields):
            for h, x, y in sp:
                if h == g:
                    raw[x:y] = bytes(y - x)
        now = compress(raws, a.level)
        print(f"{g:<16} {raw_by[g] / events:>9.3f} "
              f"{(prev - now) / events:>10.3f} "
              f"{100 * (prev - now) / size:>6.1f}%")
        prev = now
    print(f"{'frame overhead':<16} {'':>9} {prev / events:>10.3f} "
          f"{100 * prev / size:>6.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
