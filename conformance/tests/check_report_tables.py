#!/usr/bin/env python3
"""check_report_tables.py — no table that `attnconf report` or `attnconf perf-report` writes is
wider than 12 columns (REPORT.md is read on pages and in terminals), checked on the inputs other
tests use, by check_md_table_width.py.

  check_report_tables.py --attnconf BIN --cases DIR --backend SO... --expect SO YAML
                         --perf-fixtures DIR --dir WORKDIR [--max N]

`attnconf report`: every golden case run on each --backend, and on the --expect backend judged
against its expected-results file (a third-party section, as the real third-party runs get).
REPORT.md has 11 real backends, the most one 12-column matrix holds; the first --backend's
results are also copied under ten more names, so the matrix must split to fit.
`attnconf perf-report`: the arguments of perf/tests/check_report.cmake, and wide.json (13
backends) against base.json.  --max: the limit handed to the checker (to see it fail).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, ok=(0,)):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in ok:
        sys.exit(f"check_report_tables: {' '.join(cmd)} exited {p.returncode}:\n"
                 f"{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnconf", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--backend", action="append", required=True)
    ap.add_argument("--expect", nargs=2, metavar=("SO", "YAML"), required=True)
    ap.add_argument("--perf-fixtures", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--max", default="12")
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    res = os.path.join(a.dir, "results")
    os.makedirs(res)

    files = []
    for k, so in enumerate(a.backend + [a.expect[0]]):
        out = os.path.join(res, f"{k:02d}.json")
        extra = ["--expect", a.expect[1]] if so == a.expect[0] else []
        # A mutant's failures are its expected result: exit 1 is fine, no JSON is not.
        run([a.attnconf, "run", "--backend", so, "--cases", a.cases, *extra, "--format", "json",
             "--out", out], ok=(0, 1))
        files.append(out)
    with open(files[0], encoding="utf-8") as f:
        first = json.load(f)
    if first["backend"]["name"].startswith("mutant_"):
        sys.exit("check_report_tables: the first --backend must be a real one (it is copied)")
    for n in range(1, 11):
        name = f"{first['backend']['name']}-copy{n:02d}"
        doc = dict(first, backend=dict(first["backend"], name=name))
        path = os.path.join(res, f"copy{n:02d}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        files.append(path)
    report = os.path.join(a.dir, "report.md")
    run([a.attnconf, "report", "--command", "tools/run-suite", "--out", report, *files])

    fx = a.perf_fixtures
    perf = os.path.join(a.dir, "perf.md")
    run([a.attnconf, "perf-report", f"{fx}/slow10.json", f"{fx}/decode.json", "--baseline",
         f"{fx}/base.json", "--plot", "plots/prefill.svg", "--plot", "plots/extra.svg",
         "--hyperfine", f"{fx}/hyperfine.json", "--note", "Recorded on a 2-core machine.",
         "--out", perf])
    wide = os.path.join(a.dir, "perf-wide.md")
    run([a.attnconf, "perf-report", f"{fx}/wide.json", "--baseline", f"{fx}/base.json",
         "--out", wide])

    p = subprocess.run([sys.executable, os.path.join(HERE, "check_md_table_width.py"), "--max",
                        a.max, report, perf, wide], stdout=subprocess.PIPE, text=True)
    print(p.stdout, end="")
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
