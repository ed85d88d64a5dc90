#!/usr/bin/env python3
"""check_out_refuses.py — a command's output file that is not a regular file is refused.

Every --out (and fuzz --json) is written to a temporary file renamed over FILE, which would
replace a symbolic link, a FIFO or a device (/dev/null as root) with a regular file; so each
command must refuse such a FILE before it writes anything, exit non-zero with the writer's one
message, and leave it as it was (the device: /dev/null, or as root a null device of its own
in DIR, so that a regression cannot replace the system's) (a link still a link to the same, unchanged target; a FIFO
still a FIFO, never opened: the run is bounded by a timeout).

Usage: check_out_refuses.py --attnconf BIN --reference PLUGIN --dir DIR --kind KIND -- ARG...
KIND is symlink, fifo or device.  In ARG, @OUT@ becomes the target and @RESULTS@ a results
file of a small `attnconf run` made first (for report).  Exit 0 when refused as it should be.
"""
import argparse
import os
import shutil
import stat
import subprocess
import sys

MESSAGE = {"symlink": "exists and is a symbolic link, not a regular file",
           "fifo": "exists and is a FIFO, not a regular file",
           "device": "exists and is a device, not a regular file"}


def fail(msg):
    print(f"check_out_refuses: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--attnconf", required=True)
    p.add_argument("--reference", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--kind", required=True, choices=sorted(MESSAGE))
    p.add_argument("args", nargs="+")
    a = p.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    results = os.path.join(a.dir, "results.json")
    if any("@RESULTS@" in x for x in a.args):
        with open(results, "w") as f:
            r = subprocess.run([a.attnconf, "run", "--backend", a.reference, "--filter",
                                "sdpa.nomask.basic.f32", "--format", "json"], stdout=f,
                               timeout=60)
        if r.returncode != 0:
            fail(f"could not make {results} (exit {r.returncode})")

    target = os.path.join(a.dir, "target.txt")
    if a.kind == "symlink":
        out = os.path.join(a.dir, "out")
        with open(target, "w") as f:
            f.write("previous\n")
        os.symlink("target.txt", out)
    elif a.kind == "fifo":
        out = os.path.join(a.dir, "out")
        os.mkfifo(out)
    else:
        # As root a regression would rename a regular file over the device: the test's own
        # null device then, never the system's /dev/null, which only root could replace.
        out = "/dev/null"
        if os.geteuid() == 0:
            try:
                os.mknod(os.path.join(a.dir, "out"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
                out = os.path.join(a.dir, "out")
            except OSError as e:
                fail(f"running as root and cannot make a null device to test with: {e}")
        if not stat.S_ISCHR(os.lstat(out).st_mode):
            fail(f"{out} is not a character device here")

    cmd = [x.replace("@OUT@", out).replace("@RESULTS@", results) for x in a.args]
    try:
        r = subprocess.run([a.attnconf] + cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail(f"{cmd[0]} did not return within 60 s (a FIFO opened for writing blocks)")
    print(f"exit {r.returncode}\n--- stdout ---\n{r.stdout}--- stderr ---\n{r.stderr}")
    if r.returncode == 0:
        fail(f"{cmd[0]} accepted {out} ({a.kind}) as its output file")
    if MESSAGE[a.kind] not in r.stderr:
        fail(f"stderr does not say '{MESSAGE[a.kind]}'")

    if a.kind == "symlink":
        if not os.path.islink(out) or os.readlink(out) != "target.txt":
            fail(f"{out} is no longer a symbolic link to target.txt")
        with open(target) as f:
            if f.read() != "previous\n":
                fail(f"the link's target {target} was changed")
    elif a.kind == "fifo":
        if not stat.S_ISFIFO(os.lstat(out).st_mode):
            fail(f"{out} is no longer a FIFO")
    elif not stat.S_ISCHR(os.lstat(out).st_mode):
        fail(f"{out} is no longer a device")
    left = [n for n in os.listdir(a.dir) if n.startswith(".out.")]
    if left:
        fail(f"temporary files left behind: {left}")
    print("check_out_refuses: refused and untouched")


if __name__ == "__main__":
    main()
