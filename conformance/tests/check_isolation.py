#!/usr/bin/env python3
"""check_isolation.py — run `attnconf run` on a misbehaving test backend and check that the
harness survived it: the exit status, a complete and valid JSON --out, the misbehaving case's
status and message, and that every other case still ran and passed.

  check_isolation.py --rc 1 --bad INDEX --status CRASH --message REGEX --out FILE -- CMD...

CMD is the harness command line without --format/--out (added here).  INDEX is the position
of the misbehaving case among the results (0-based); every other result must be PASS.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def leftovers(pidfile):
    """The failures for the processes a misbehave backend recorded in pidfile (one pid a
    line) that are still alive: none may outlive the harness (check_bench.py uses it too)."""
    fails = []
    pids = open(pidfile).read().split() if os.path.exists(pidfile) else []
    if not pids:
        fails.append(f"{pidfile}: the backend recorded no forked process")
    for pid in pids:
        try:  # dead, or a zombie nobody has reaped yet
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            fails.append(f"process {pid}, forked by the backend, outlived the run")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc", required=True, help="the exit status, or several: 0,1")
    ap.add_argument("--bad", type=int, required=True)
    ap.add_argument("--status", required=True)
    ap.add_argument("--message", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-results", type=int, default=3)
    # --bad -1: any case may be the misbehaving one (or none), but every case appears exactly
    # once under its own id, each PASS or the expected status and message.
    ap.add_argument("--pidfile", help="processes the backend forked (one pid a line): "
                    "none may be alive once the run is over")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    for f in (a.out, a.pidfile):
        if f and os.path.exists(f):
            os.remove(f)
    p = subprocess.run(a.cmd + ["--format", "json", "--out", a.out], capture_output=True,
                       text=True, timeout=600)
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    fails = []
    if str(p.returncode) not in a.rc.split(","):
        fails.append(f"exit {p.returncode}, expected {a.rc}")
    if re.search(r"Sanitizer|runtime error", p.stdout + p.stderr):
        fails.append("sanitizer report in the output")
    try:
        with open(a.out) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_isolation: --out {a.out} is not a complete JSON document: {e}")
        return 1
    res = doc["results"]
    if len(res) < a.min_results:
        fails.append(f"{len(res)} results, expected at least {a.min_results}")
    ids = [r["id"] for r in res]
    if len(set(ids)) != len(ids):
        fails.append(f"a case id appears twice: {ids}")
    for i, r in enumerate(res):
        if a.bad == -1 and r["status"] != "PASS":
            if r["status"] != a.status or not re.search(a.message, r["message"]):
                fails.append(f"{r['id']}: {r['status']} {r['message']!r}, expected PASS or "
                             f"{a.status} matching {a.message!r}")
        elif i == a.bad:
            if r["status"] != a.status:
                fails.append(f"{r['id']}: status {r['status']}, expected {a.status}")
            if not re.search(a.message, r["message"]):
                fails.append(f"{r['id']}: message {r['message']!r} does not match {a.message!r}")
        elif r["status"] != "PASS":
            fails.append(f"{r['id']}: status {r['status']} ({r['message']}), expected PASS: "
                         "a misbehaving case must cost only itself")
    if doc["summary"]["total"] != len(res):
        fails.append("summary.total does not count the results")
    if a.pidfile:
        fails += leftovers(a.pidfile)
    for f in fails:
        print("check_isolation: " + f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
