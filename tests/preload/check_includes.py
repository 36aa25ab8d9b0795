#!/usr/bin/env python3
"""check_includes.py — the preload's files include each other one way.

A part of the preload is a name: its header and the file that implements
it (name.h and name.c, or either alone). A part depends on every part
whose header one of its files includes ("name.h", found in the preload's
folder). A circle among the parts — a header whose implementation
includes, through any chain, the header itself — means two parts call
each other and neither can be read, tested or changed alone. This check
walks the parts of preload/*.c and preload/*.h and fails on every circle,
printing it as a chain of the files that make it.

Usage: check_includes.py DIR
Exit 0 with no circle, 1 with each circle listed.
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def graph(folder):
    """{part: {part it includes: the file that includes it}}"""
    files = sorted(f for f in os.listdir(folder)
                   if f.endswith(".c") or f.endswith(".h"))
    edges = {f[:-2]: {} for f in files}
    for f in files:
        with open(os.path.join(folder, f), encoding="utf-8") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            part = inc[:-2]
            if inc.endswith(".h") and inc in files and part != f[:-2]:
                edges[f[:-2]].setdefault(part, f)
    return edges


def circles(edges):
    """Strongly connected components of more than one part (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def one_circle(edges, comp):
    """A shortest circle through the component's first part, as the
    files that include the next part's header."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in edges[v]:
            if w not in members:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path = list(reversed(path)) + [start]
                return ["%s includes %s.h" % (edges[a][b], b)
                        for a, b in zip(path, path[1:])]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-3], file=sys.stderr)
        return 2
    edges = graph(sys.argv[1])
    found = circles(edges)
    for comp in found:
        print("circle among %d parts: %s" % (len(comp), " ".join(comp)))
        print("  for example: " + ", ".join(one_circle(edges, comp)))
    if found:
        return 1
    print("%d parts, no circle" % len(edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
