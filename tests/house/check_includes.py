#!/usr/bin/env python3
"""check_includes.py SRCDIR — the analyzer's rooms and the direction of its
includes.

analyzer/ is one folder per stage (a room); a file includes only from its
own room and the rooms below it. ROOMS below is the order: each room with
the rooms it may call directly; what those may call, it may call too.
analyzer/README.md draws the same order.

Fails, naming the file and line, when
  - a file sits directly in analyzer/ (other than meson.build, README.md) or
    in a folder that is not a room;
  - an `#include "..."` of an analyzer file names no file (a header of
    another room is included by its room's path, "load/load.h");
  - an include goes to a room that is not below the file's own;
  - the files of a room that must stay without a circle (CIRCLE_FREE)
    include each other in a circle;
  - a folder of tests/unit/analyzer/ is not a room (the unit tests mirror
    the rooms).
Includes of common/ and include/ are below every room. Prints one line per
fault and exits 1, or prints what it checked and exits 0.
"""
import os
import re
import sys

sys.dont_write_bytecode = True

# Each room: the rooms it may call directly (the order is their closure).
ROOMS = {
    "base": [],
    "load": ["base"],
    "record": ["load"],
    "model": ["load"],
    "replay": ["load"],
    "diagnose": ["replay", "model"],
    "enginelog": ["diagnose"],
    "plan": ["diagnose"],
    "report": ["enginelog", "plan"],
    "cmd": ["report", "record"],
}
# Rooms whose files form no circle among themselves: the model room's
# readers produce the description and its arithmetic reads it.
CIRCLE_FREE = ["model"]
TOP_FILES = {"meson.build", "README.md"}
# Where an include may also resolve: below every room.
LOWER = ["common", "include"]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def below(room, seen=None):
    """The rooms below room (the closure of ROOMS), or raises on a circle
    in the order itself."""
    seen = seen or []
    if room in seen:
        raise ValueError("the room order has a circle: " +
                         " -> ".join(seen + [room]))
    out = set()
    for r in ROOMS[room]:
        out.add(r)
        out |= below(r, seen + [room])
    return out


def find_circle(graph):
    """A circle of graph (node -> set of nodes) as a list, or None."""
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if not state.get(m):
                c = visit(m, path + [m])
                if c:
                    return c
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            c = visit(n, [n])
            if c:
                return c
    return None


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[0])
    src = os.path.abspath(sys.argv[1])
    top = os.path.join(src, "analyzer")
    faults = []
    try:
        allowed = {r: below(r) for r in ROOMS}
    except ValueError as e:
        print(f"tests/house/check_includes.py: {e}")
        return 1

    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if os.path.isdir(path):
            if name not in ROOMS:
                faults.append(f"analyzer/{name}/: a folder that is not a "
                              f"room ({', '.join(ROOMS)})")
        elif name not in TOP_FILES:
            faults.append(f"analyzer/{name}: a file outside the rooms "
                          f"(move it into the room of its stage)")

    files = []
    for room in ROOMS:
        for d, dirs, names in os.walk(os.path.join(top, room)):
            dirs.sort()
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    files.append(os.path.join(d, n))

    def room_of(path):
        rel = os.path.relpath(path, top).split(os.sep)
        return rel[0] if len(rel) > 1 and rel[0] in ROOMS else None

    graphs = {r: {} for r in CIRCLE_FREE}
    where = {}  # (module, module) -> the first include between them
    nincl = 0
    for path in files:
        rel = os.path.relpath(path, src)
        room = room_of(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for no, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            cands = [os.path.join(os.path.dirname(path), name),
                     os.path.join(top, name)]
            target = next((os.path.normpath(c) for c in cands
                           if os.path.isfile(c)), None)
            if target is None:
                if any(os.path.isfile(os.path.join(src, d, name))
                       for d in LOWER):
                    continue
                faults.append(f'{rel}:{no}: #include "{name}" names no '
                              f"file (another room's header is included "
                              f'by its path, "load/load.h")')
                continue
            if os.path.commonpath([target, top]) != top:
                continue
            nincl += 1
            to = room_of(target)
            if to is None:
                faults.append(f'{rel}:{no}: #include "{name}" is not in '
                              f"a room")
            elif to != room and to not in allowed[room]:
                faults.append(f'{rel}:{no}: #include "{name}" goes up or '
                              f"across: {room}/ may include "
                              f"{', '.join(sorted(allowed[room])) or 'none'}"
                              f", not {to}/")
            elif to == room and room in graphs:
                a = os.path.splitext(os.path.basename(path))[0]
                b = os.path.splitext(os.path.basename(target))[0]
                if a != b:
                    graphs[room].setdefault(a, set()).add(b)
                    graphs[room].setdefault(b, set())
                    where.setdefault((a, b), f'{rel}:{no}: #include "{name}"')

    for room, graph in graphs.items():
        c = find_circle(graph)
        if c:
            faults.append(f"{where[(c[-2], c[-1])]} closes a circle "
                          f"among the files of {room}/: " + " -> ".join(c))

    tests = os.path.join(src, "tests", "unit", "analyzer")
    if os.path.isdir(tests):
        for name in sorted(os.listdir(tests)):
            if os.path.isdir(os.path.join(tests, name)) and \
                    name not in ROOMS:
                faults.append(f"tests/unit/analyzer/{name}/: not a room "
                              f"of analyzer/")

    for f in faults:
        print(f)
    if faults:
        print(f"{len(faults)} fault(s)")
        return 1
    print(f"{len(files)} files in {len(ROOMS)} rooms, {nincl} includes "
          f"between analyzer files, all downward; no circle in "
          f"{', '.join(CIRCLE_FREE)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
