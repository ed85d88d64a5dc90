#!/usr/bin/env python3
"""Run a command whose stdout is a pipe that nobody reads any more (what `CMD | head -1` leaves
once head has its line) and check that it ends quietly: exit status RC, nothing on stderr (no
traceback).  The pipe's read end is closed before the command starts, so every write fails with
EPIPE: deterministic, where `CMD | head -1` races the reader against the writer.

    check_closed_stdout.py --rc RC -- CMD [ARG...]

Exit 0 when the command did, 1 when not (saying how).  Python 3 standard library only.
"""
import argparse
import os
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rc", type=int, required=True)
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run(a.cmd, stdout=w, stderr=subprocess.PIPE, timeout=50)
    finally:
        os.close(w)
    err = p.stderr.decode(errors="replace")
    print("exit %d\n--- stderr ---\n%s" % (p.returncode, err))
    if p.returncode != a.rc or err:
        print("expected exit %d and nothing on stderr" % a.rc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
