#!/usr/bin/env python3
"""run_readme.py — the README's commands on a fresh copy of the source, as
a new user types them (suite 'readme'; TAP; python3 stdlib only).

    run_readme.py --src DIR --tmp-root DIR

The copy holds the files git tracks (and new ones not ignored), as a
clone has them: no build directory. HOME is a directory of the test's
own, so `~` in the docs' commands never reaches the machine's. Blocks are
read from the files, each the fenced `sh` block after a
`<!-- readme-test: NAME -->` line, and run line by line with bash from the
copy's root, exactly as written:

  first-screen (README)  `./build.sh demo` (the build from nothing, then
                         every verdict of the demo); `./build.sh test` is
                         what runs this test, so it is only asked for its
                         place in `./build.sh --help`;
  quickstart (README)    a plain program recorded on the fake GPU,
                         analyzed as text (the lines the README shows,
                         pid aside) and as HTML (run1/report.html);
  install (install.md)   into ~/.local, --version, the demo from there;
  bundle (install.md)    into build/ and a relative directory, unpacked
                         and run; then once more into an absolute one.

Skipped when the source is not a git checkout (nothing tells a clone's
files from build outputs) or git is missing.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def ok(self, cond, name, detail=""):
        self.n += 1
        print(("ok" if cond else "not ok") + f" {self.n} - {name}")
        if not cond:
            self.failed += 1
            for line in str(detail)[-3000:].splitlines():
                print("# " + line)
        sys.stdout.flush()
        return cond

    def done(self):
        print(f"1..{self.n}")
        return 1 if self.failed else 0


def blocks(path):
    """{name: [command lines]} of the marked blocks of path, each
    backslash-continued line joined."""
    text = open(path).read()
    out = {}
    for m in re.finditer(r"<!-- readme-test: ([\w-]+) -->\s*```sh\n(.*?)```",
                         text, re.S):
        cmds, cur = [], ""
        for line in m.group(2).splitlines():
            if line.rstrip().endswith("\\"):
                cur += line.rstrip()[:-1] + " "
                continue
            cur += line
            if cur.strip():
                cmds.append(cur.strip())
            cur = ""
        out[m.group(1)] = cmds
    return out


def fresh_copy(src, dst):
    p = subprocess.run(["git", "-C", src, "ls-files", "-z", "--cached",
                        "--others", "--exclude-standard"],
                       stdout=subprocess.PIPE)
    if p.returncode != 0:
        return False
    for rel in p.stdout.decode().split("\0"):
        if not rel:
            continue
        s = os.path.join(src, rel)
        if not os.path.isfile(s) or os.path.islink(s):
            continue  # deleted in the work tree, or a link
        d = os.path.join(dst, rel)
        os.makedirs(os.path.dirname(d), exist_ok=True)
        shutil.copy2(s, d)
    return True


def sh(cmd, cwd, env, timeout=1500):
    """One command line as typed: exit status and both outputs."""
    print("$ " + cmd, flush=True)
    p = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout


def shown_lines(readme):
    """The report lines the README's quickstart shows (the fenced block
    after the quickstart's own), each made comparable."""
    fenced, inside, cur = [], False, []
    for line in readme.split("<!-- readme-test: quickstart -->", 1)[-1] \
            .splitlines():
        if line.startswith("```"):
            if inside:
                fenced.append(cur)
            inside, cur = not inside, []
            if len(fenced) == 2:
                break
            continue
        if inside:
            cur.append(line)
    return [norm(l) for l in fenced[1]] if len(fenced) == 2 else []


def norm(line):
    """A report line without what changes from run to run: the pid and
    the times."""
    line = re.sub(r"pid \d+", "pid N", line)
    return re.sub(r"\d+\.\d+s\b", "T", line).rstrip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--tmp-root", required=True)
    a = ap.parse_args()
    tap = Tap()
    if not shutil.which("git") or not os.path.isdir(
            os.path.join(a.src, ".git")) and not os.path.isfile(
            os.path.join(a.src, ".git")):
        print("1..0 # SKIP not a git checkout")
        return 0
    os.makedirs(a.tmp_root, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="readme-", dir=a.tmp_root)
    clone, home = os.path.join(tmp, "vramtrace"), os.path.join(tmp, "home")
    os.makedirs(home)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("VRAMTRACE_", "FAKECUDA_", "FAKEHIP_",
                                "FAKENVML_", "MESON", "BUILD_DIR",
                                "LD_PRELOAD", "LD_LIBRARY_PATH"))}
    env["HOME"] = home
    keep = False
    try:
        if not tap.ok(fresh_copy(a.src, clone), "a fresh copy of the source"):
            return tap.done()
        readme = open(os.path.join(clone, "README.md")).read()
        rb = blocks(os.path.join(clone, "README.md"))
        ib = blocks(os.path.join(clone, "docs", "install.md"))
        first = rb.get("first-screen", [])
        tap.ok([c.split("#")[0].strip() for c in first] ==
               ["./build.sh demo", "./build.sh test"],
               "the first screen's two commands", first)

        rc, out = sh(first[0].split("#")[0], clone, env)
        verdicts = ["weights", "not_sharded", "kv_cache", "concurrency",
                    "host_memory", "other_processes", "none"]
        missing = [v for v in verdicts if f"DIAGNOSIS: " not in out or
                   f" {v}: " not in out]
        if not tap.ok(rc == 0 and not missing and
                      os.path.exists(os.path.join(clone, "build", "analyzer",
                                                  "vramtrace")),
                      "./build.sh demo on a fresh copy: builds, every "
                      "verdict diagnosed", f"exit {rc} missing {missing}\n"
                      + out[-3000:]):
            keep = True
            return tap.done()
        rc, out = sh("./build.sh --help", clone, env)
        tap.ok(rc == 0 and "./build.sh test" in out,
               "./build.sh test is a mode build.sh documents", out)

        q = rb.get("quickstart", [])
        results = [sh(c, clone, env, timeout=300) for c in q]
        tap.ok(len(q) == 3 and results[0][0] == 1 and
               os.path.exists(os.path.join(clone, "run1", "output.log")),
               "quickstart: record runs the program on the fake GPU and "
               "exits with its status (1)", results[:1])
        got = [norm(l) for l in results[1][1].splitlines()] \
            if len(results) > 1 else []
        want = shown_lines(readme)
        missing = [l for l in want if l not in got]
        tap.ok(want and results[1][0] == 0 and not missing,
               "quickstart: analyze prints the lines the README shows",
               "missing:\n" + "\n".join(missing) + "\ngot:\n" +
               "\n".join(got[:20]))
        tap.ok(len(results) > 2 and results[2][0] == 0 and
               os.path.getsize(os.path.join(clone, "run1",
                                            "report.html")) > 10000 and
               "run1/report.html" in results[2][1],
               "quickstart: the HTML page next to the run, its path said",
               results[2:])

        for c in ib.get("install", []):
            rc, out = sh(c.split("  #")[0], clone, env)
            tap.ok(rc == 0, f"install: {c}", out)
        tap.ok(os.access(os.path.join(home, ".local", "bin", "vramtrace"),
                         os.X_OK) and
               os.path.isdir(os.path.join(home, "vramtrace-demo", "none")),
               "install: into ~/.local, the demo from there")

        for c in ib.get("bundle", []):
            rc, out = sh(c.split("  #")[0], clone, env)
            tap.ok(rc == 0, f"bundle: {c}", out)
        tap.ok(any(f.endswith(".tar.gz") for f in os.listdir(
            os.path.join(clone, "dist"))),
            "bundle: into a relative directory")
        absdir = os.path.join(tmp, "absolute dist")
        rc, out = sh(f"./build.sh bundle '{absdir}'", clone, env)
        tap.ok(rc == 0 and any(f.endswith(".tar.gz")
                               for f in os.listdir(absdir)),
               "bundle: into an absolute directory", out)
    finally:
        if tap.failed or keep or os.environ.get("VRT_TEST_KEEP"):
            print(f"# files kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return tap.done()


if __name__ == "__main__":
    sys.exit(main())
