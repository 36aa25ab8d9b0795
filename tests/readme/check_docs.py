#!/usr/bin/env python3
"""check_docs.py — what README.md and docs/ claim, held against the program
(suite 'readme'; TAP; python3 stdlib only).

    check_docs.py --vramtrace EXE --src DIR

- the README is a front door: at most 250 lines; its first screen (40
  lines) says what vramtrace is and holds the two commands, `./build.sh
  demo` and `./build.sh test`, and where the built command is;
- every relative link of README.md and docs/*.md names a file that
  exists, and a README link's #anchor a heading of that file;
- every command `vramtrace --help` lists has its section in
  docs/commands.md and its row in the README's table; the --version
  line of both says the trace format versions the binary reads;
- every VRAMTRACE_* variable of preload/options.c has its row in
  docs/environment.md, and the README points there;
- the README's map of docs/ lists every page of docs/;
- the README leaves its places for the report (docs/report.md), attaching
  during a load test (docs/attach.md) and request counting
  (docs/requests.md).
"""
import argparse
import os
import re
import subprocess
import sys


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        print(("ok" if cond else "not ok") + f" {self.n} - {name}")
        if not cond:
            self.failed += 1
            for line in str(detail).splitlines():
                print("# " + line)
        sys.stdout.flush()

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def anchor(heading):
    """GitHub's anchor of a heading: lower case, punctuation out, spaces
    to dashes."""
    h = heading.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def headings(path):
    with open(path) as f:
        return {anchor(m.group(1)) for m in
                re.finditer(r"^#+ (.*)$", f.read(), re.M)}


def links(text):
    """(target, anchor) of every relative markdown link."""
    for m in re.finditer(r"\]\(([^)\s]+)\)", text):
        t = m.group(1)
        if re.match(r"^[a-z]+:", t) or t.startswith("#"):
            continue
        path, _, frag = t.partition("#")
        yield path, frag


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vramtrace", required=True)
    ap.add_argument("--src", required=True)
    a = ap.parse_args()
    tap = Tap()
    readme_path = os.path.join(a.src, "README.md")
    readme = open(readme_path).read()
    lines = readme.splitlines()
    docs = sorted(f for f in os.listdir(os.path.join(a.src, "docs"))
                  if f.endswith(".md"))

    tap.ok(len(lines) <= 250, f"README: at most 250 lines (has {len(lines)})")
    first = "\n".join(lines[:40])
    tap.ok("./build.sh demo" in first and "./build.sh test" in first and
           "build/analyzer/vramtrace" in first and
           "out of GPU memory" in first,
           "README: its first screen says what vramtrace is, the two "
           "commands and where the command lands", first)

    bad = []
    for name in ["README.md"] + ["docs/" + d for d in docs]:
        path = os.path.join(a.src, name)
        base = os.path.dirname(path)
        for target, frag in links(open(path).read()):
            t = os.path.normpath(os.path.join(base, target))
            if not os.path.exists(t):
                bad.append(f"{name}: {target} does not exist")
            elif frag and name == "README.md" and t.endswith(".md") and \
                    frag not in headings(t):
                bad.append(f"{name}: {target}#{frag}: no such heading")
    tap.ok(not bad, "every relative link of README.md and docs/ resolves",
           "\n".join(bad))

    out = subprocess.run([a.vramtrace, "--help"], stdout=subprocess.PIPE,
                         text=True).stdout
    cmds = re.findall(r"^  (\w+)\s{2,}", out, re.M)
    commands_md = open(os.path.join(a.src, "docs", "commands.md")).read()
    secs = headings(os.path.join(a.src, "docs", "commands.md"))
    missing = [c for c in cmds if c not in secs]
    tap.ok(cmds and not missing, "docs/commands.md: a section per command "
           f"of vramtrace --help ({cmds})", missing)
    table = [l for l in lines if l.startswith("| `")]
    missing = [c for c in cmds
               if not any(l.startswith(f"| `{c}") for l in table)]
    tap.ok(not missing, "README: a row per command, with its docs",
           missing)

    ver = subprocess.run([a.vramtrace, "--version"], stdout=subprocess.PIPE,
                         text=True).stdout
    m = re.search(r"reads versions (\d+) to (\d+)", ver)
    claim = f"({m.group(1)} to {m.group(2)})" if m else "?"
    tap.ok(m and f"reads {claim}" in " ".join(readme.split()) and
           f"reads {claim}" in " ".join(commands_md.split()),
           f"README and docs/commands.md say the trace formats --version "
           f"says: {claim}", ver)

    opts = open(os.path.join(a.src, "preload", "options.c")).read()
    names = sorted(set(re.findall(r'"(VRAMTRACE_[A-Z_]+)"', opts)))
    env_md = open(os.path.join(a.src, "docs", "environment.md")).read()
    missing = [n for n in names if f"| `{n}` |" not in env_md]
    tap.ok(names and not missing and "docs/environment.md" in readme,
           f"docs/environment.md: a row per VRAMTRACE_* variable "
           f"({len(names)}), the README points there", missing)

    missing = [d for d in docs if f"(docs/{d})" not in readme]
    tap.ok(not missing, "README: its map of docs/ lists every page",
           missing)
    places = {"Reading the report": "docs/report.md",
              "Attach during a load test": "docs/attach.md",
              "Requests in flight": "docs/requests.md"}
    wrong = [h for h, d in places.items()
             if f"## {h}" not in readme or d not in readme]
    tap.ok(not wrong, "README: its places for the report, attaching and "
           "request counting", wrong)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
