#!/usr/bin/env python3
"""check_resume.py — `attnconf run --out FILE` saves the results so far to FILE.partial.json
after every case, and `--resume` continues an interrupted run from it.

  check_resume.py --attnconf BIN --backend HANG.so --cases DIR --filter GLOB --dir WORKDIR

HANG.so is misbehave_hang (the reference, except that the 2nd sdpa call of each worker hangs).
With a large --case-timeout the run hangs on the 2nd case; once the sidecar holds the 1st the
harness (and its process group, the worker) is killed with SIGKILL.  Checked: the sidecar is
valid JSON with complete=false and >= 1 result, an existing FILE is untouched, `report` refuses
the sidecar, --resume refuses a sidecar made with other backend options / another backend, a
corrupt one and one of another schema version (exit 2, naming the file), and then completes
the run: FILE has every selected case exactly once, complete=true, and the sidecar is gone.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnconf", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--filter", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    out = os.path.join(a.dir, "r.json")
    side = out + ".partial.json"
    with open(out, "w") as f:
        f.write("previous results\n")
    base = [a.attnconf, "run", "--backend", a.backend, "--cases", a.cases, "--filter", a.filter,
            "--format", "json", "--out", out]
    fails = []

    # 1. Kill a run midway (the 2nd case hangs) once the sidecar exists.
    p = subprocess.Popen(base + ["--case-timeout", "600"], start_new_session=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not os.path.exists(side) and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.2)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    try:
        with open(side) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_resume: sidecar {side} missing or not valid JSON after SIGKILL: {e}")
        return 1
    if doc.get("complete") is not False:
        fails.append(f"sidecar complete={doc.get('complete')!r}, expected false")
    if len(doc["results"]) < 1:
        fails.append("sidecar holds no result")
    if doc["summary"]["total"] != len(doc["results"]):
        fails.append("sidecar summary.total does not count its results")
    with open(out) as f:
        if f.read() != "previous results\n":
            fails.append("the killed run touched the existing FILE")

    # 2. report refuses a partial file.
    r = subprocess.run([a.attnconf, "report", "--out", os.path.join(a.dir, "R.md"), side],
                       capture_output=True, text=True)
    if r.returncode != 1 or "results incomplete" not in r.stderr:
        fails.append(f"report of the sidecar: exit {r.returncode}, stderr {r.stderr!r}")

    # 3. --resume refuses mismatched or broken sidecars (exit 2, naming the file).
    good = open(side).read()
    variants = {
        "backend options": lambda d: d.__setitem__("backend_options", "threads=4"),
        "backend": lambda d: d["backend"].__setitem__("name", "someone_else"),
        "filter": lambda d: d.__setitem__("filter", "other.*"),
        "version 2": lambda d: d.__setitem__("attnconf_results", 2),
    }
    for what, change in variants.items():
        d = json.loads(good)
        change(d)
        with open(side, "w") as f:
            json.dump(d, f)
        r = subprocess.run(base + ["--case-timeout", "2", "--resume"], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 2 or side not in r.stderr:
            fails.append(f"--resume with {what} changed: exit {r.returncode}, expected 2 naming "
                         f"the sidecar; stderr {r.stderr!r}")
    with open(side, "w") as f:
        f.write(good[: len(good) // 2])
    r = subprocess.run(base + ["--case-timeout", "2", "--resume"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 2 or side not in r.stderr or "not valid JSON" not in r.stderr:
        fails.append(f"--resume with a corrupt sidecar: exit {r.returncode}, stderr {r.stderr!r}")
    # The real --backend-option check: a run with other options is refused before any backend
    # loads (misbehave takes no options; the sidecar check comes first).
    with open(side, "w") as f:
        f.write(good)
    r = subprocess.run(base + ["--case-timeout", "2", "--resume", "--backend-option", "x=1"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 2 or "backend options" not in r.stderr:
        fails.append(f"--resume with --backend-option x=1: exit {r.returncode}, stderr "
                     f"{r.stderr!r}")
    with open(out) as f:
        if f.read() != "previous results\n":
            fails.append("a refused --resume touched the existing FILE")

    # 4. --resume completes the run (the case that hangs now times out after 2 s).
    r = subprocess.run(base + ["--case-timeout", "2", "--resume"], capture_output=True,
                       text=True, timeout=300)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    if r.returncode not in (0, 1):
        fails.append(f"--resume: exit {r.returncode}")
    if "--resume:" not in r.stderr or "kept" not in r.stderr:
        fails.append("--resume did not say what it kept")
    want = subprocess.run([a.attnconf, "list", "--cases", a.cases, "--filter", a.filter],
                          capture_output=True, text=True).stdout.split("\n")
    want = sorted(line.split()[0] for line in want if line.strip())
    try:
        with open(out) as f:
            fin = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_resume: FILE {out} is not a complete JSON document: {e}")
        return 1
    ids = [x["id"] for x in fin["results"]]
    if sorted(ids) != want:
        fails.append(f"final results {ids}, expected each of {want} exactly once")
    if fin.get("complete") is not True:
        fails.append(f"final complete={fin.get('complete')!r}, expected true")
    if fin["summary"]["total"] != len(ids):
        fails.append("final summary.total does not count the results")
    first = doc["results"][0]
    kept = [x for x in fin["results"] if x["id"] == first["id"]]
    if not kept or kept[0]["seconds"] != first["seconds"]:
        fails.append(f"{first['id']}: not kept from the sidecar (it ran again)")
    if os.path.exists(side):
        fails.append("the sidecar is still there after the run completed")

    # 5. --resume without a sidecar starts from scratch, saying so.
    r = subprocess.run(base + ["--case-timeout", "2", "--resume"], capture_output=True,
                       text=True, timeout=300)
    if "starting from scratch" not in r.stderr or r.returncode not in (0, 1):
        fails.append(f"--resume without a sidecar: exit {r.returncode}, stderr {r.stderr!r}")

    for f in fails:
        print(f"check_resume: {f}")
    if not fails:
        print("check_resume: ok")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
