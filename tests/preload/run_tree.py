#!/usr/bin/env python3
"""run_tree.py — whole process trees under `vramtrace record` (python3
stdlib only).

tree3       tests/preload/tree3.c: seven processes on three levels (fork,
            fork + execve with a fresh environment, posix_spawn with a
            fresh environment, vfork + execve with a fresh environment, an
            orphan whose parent exits first). Every process is traced into
            the one run: `analyze --format json` lists all seven with the
            right ppid, 7 allocations, 127 MiB live at the end, every trace
            complete; record reaps the command and the orphan (it is the
            subreaper of the tree), writes "<pid>.exit" for both, lists
            both exits on stderr, and exits 0.
python      Python's subprocess with env={...} (vfork + execve inside
            _posixsubprocess) starts a traced leaf; with
            VRAMTRACE_ENABLE=0 in that environment the leaf is left out.
straggler   a descendant that sleeps 60 s after the command exited:
            `record --wait-children 1` reports it as still running and
            returns within a few seconds with the command's status.

Usage: run_tree.py --vramtrace EXE --preload LIB --fake-dir DIR
                   --tree3 EXE --tmp-root DIR
Exit 0 pass, 1 fail (what differed is printed).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

from harness import check, options, record_env, scratch

MIB = 1 << 20


def base_env(args):
    return record_env(args, drop=("VRAMTRACE_OUT", "LD_PRELOAD"))


def record(args, out, prog, extra=None, timeout=60):
    cmd = [args.vramtrace, "record", "-o", out] + (extra or []) + ["--"]
    cmd += prog
    print("$ " + " ".join(cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=base_env(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout, text=True)
    return p, time.monotonic() - t0


def analyze(args, out):
    p = subprocess.run([args.vramtrace, "analyze", "--format", "json", out],
                       env=base_env(args), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60, text=True)
    if p.returncode != 0:
        print(p.stdout + p.stderr)
        raise SystemExit(f"analyze failed with exit {p.returncode}")
    return json.loads(p.stdout)


def roles_of(stdout):
    roles = {}
    for m in re.finditer(r"^tree3: ([\w-]+) (\d+) (\d+)$", stdout, re.M):
        roles[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return roles


def tree3(args, tmp):
    out = os.path.join(tmp, "tree3")
    p, _ = record(args, out, [args.tree3])
    print(p.stdout + p.stderr)
    check(p.returncode == 0, f"tree3: record exits 0 (got {p.returncode})")
    roles = roles_of(p.stdout)
    want = ["root", "forked", "spawned", "mid", "worker", "orphan",
            "vforked"]
    check(sorted(roles) == sorted(want),
          f"tree3: every process ran and allocated (got {sorted(roles)})")
    if sorted(roles) != sorted(want):
        return
    pid = {r: roles[r][0] for r in roles}
    rep = analyze(args, out)
    procs = {pr["pid"]: pr for pr in rep["run"]["processes"]}
    check(set(procs) == set(pid.values()),
          f"tree3: 7 processes traced into one run (got {sorted(procs)}, "
          f"want {sorted(pid.values())})")
    parent = {"forked": "root", "spawned": "forked", "mid": "root",
              "worker": "mid", "orphan": "worker", "vforked": "root"}
    for child, par in parent.items():
        got = procs.get(pid[child], {}).get("ppid")
        check(got == pid[par], f"tree3: {child}'s ppid is {par} "
              f"({pid[par]}; got {got})")
    root_ppid = procs.get(pid["root"], {}).get("ppid")
    check(root_ppid not in pid.values(), "tree3: root's parent is outside "
          "the tree (record)")
    dev = [d for d in rep["devices"] if d.get("id") == 0]
    fam = dev[0]["families"]["device"] if dev else {}
    check(fam.get("allocs") == 7 and fam.get("live_bytes_end") == 127 * MIB,
          f"tree3: 7 allocations, 127 MiB across the tree (got {fam})")
    check(not rep["run"]["truncated"], "tree3: every trace ends cleanly")
    # record reaps its own child and the orphan it adopted; the others
    # are reaped by their parents.
    for r in ("root", "orphan"):
        p_ = pid[r]
        ef = os.path.join(out, f"{p_}.exit")
        got = open(ef).read() if os.path.exists(ef) else None
        check(got == "exit 0\n", f"tree3: {p_}.exit says exit 0 ({r}; got "
              f"{got!r})")
        st = procs.get(p_, {}).get("exit_status")
        check(st == 0, f"tree3: analyze shows {r}'s exit status 0 "
              f"(got {st!r})")
        check(re.search(rf"^vramtrace: pid {p_} \(.*\): exit 0$", p.stderr,
                        re.M) is not None,
              f"tree3: record lists {r}'s exit ({p_})")
    check(re.search(rf"^vramtrace: pid {pid['root']} \(\S*tree3\): exit 0$",
                    p.stderr, re.M) is not None,
          "tree3: the command itself is named by its command line")


def python(args, tmp):
    script = (
        "import subprocess, sys\n"
        "env = {'PATH': '/usr/bin:/bin',\n"
        "       'LD_LIBRARY_PATH': sys.argv[2]}\n"
        "r = subprocess.run([sys.argv[1], '--alloc-as', '3', 'py-leaf'],\n"
        "                   env=env)\n"
        "env['VRAMTRACE_ENABLE'] = '0'\n"
        "r2 = subprocess.run([sys.argv[1], '--alloc-as', '5', 'off'],\n"
        "                    env=env)\n"
        "sys.exit(r.returncode or r2.returncode)\n")
    out = os.path.join(tmp, "python")
    p, _ = record(args, out, [sys.executable, "-c", script, args.tree3,
                              args.fake_dir])
    print(p.stdout + p.stderr)
    check(p.returncode == 0, f"python: record exits 0 (got {p.returncode})")
    roles = roles_of(p.stdout)
    if "py-leaf" not in roles or "off" not in roles:
        check(False, f"python: both leaves ran (got {roles})")
        return
    rep = analyze(args, out)
    procs = {pr["pid"]: pr for pr in rep["run"]["processes"]}
    leaf, off = roles["py-leaf"], roles["off"]
    check(leaf[0] in procs and procs[leaf[0]]["ppid"] == leaf[1],
          "python: the leaf started with env={...} is traced, ppid = the "
          f"Python process (got {procs})")
    check(off[0] not in procs,
          "python: VRAMTRACE_ENABLE=0 in the new environment keeps a "
          "child out")
    dev = [d for d in rep["devices"] if d.get("id") == 0]
    fam = dev[0]["families"]["device"] if dev else {}
    check(fam.get("live_bytes_end") == 3 * MIB,
          f"python: 3 MiB traced (got {fam})")


def straggler(args, tmp):
    out = os.path.join(tmp, "straggler")
    p, took = record(args, out, [args.tree3, "--straggler", "60"],
                     ["--wait-children", "1"])
    print(p.stdout + p.stderr)
    roles = roles_of(p.stdout)
    s = roles.get("straggler", (0, 0))[0]
    try:
        check(p.returncode == 0, f"straggler: record exits with the "
              f"command's status 0 (got {p.returncode})")
        check(took < 10, f"straggler: record returns after "
              f"--wait-children 1, not 60 s (took {took:.1f}s)")
        check(s > 0 and re.search(rf"^vramtrace: pid {s} \(tree3\): still "
                                  r"running", p.stderr, re.M) is not None,
              f"straggler: pid {s} reported as still running")
        check(not os.path.exists(os.path.join(out, f"{s}.exit")),
              "straggler: no exit file for a process still running")
    finally:
        if s > 0:
            try:
                os.kill(s, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    ap = options("--vramtrace", "--preload", "--fake-dir", "--tree3",
              "--tmp-root")
    args = ap.parse_args()

    def body(tmp):
        tree3(args, tmp)
        python(args, tmp)
        straggler(args, tmp)

    return scratch(args, "tree-", body)


if __name__ == "__main__":
    sys.exit(main())
