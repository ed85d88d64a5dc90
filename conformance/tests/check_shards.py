#!/usr/bin/env python3
"""check_shards.py — one run split across machines: `run --shard K/N`, `list --shard K/N`,
`fuzz --seed-range A..B --shard K/N`, and `report` merging the shards.

  check_shards.py --attnconf BIN --backend REF.so --cases DIR --dir WORKDIR [--workflow YML]

Checked, for N in 1, 2, 3, 7:
- run: the N shards of a filtered reference run (sdpa, mask and cache cases) are disjoint, their
  union is exactly the unsharded run (no case missing, none twice, each result the same but for
  its time), every file records its shard and the whole selection, and `report` of the N files
  equals the unsharded run's report byte for byte (files given in any order);
- the same slices from a copy of those case files in another directory (the slice depends on
  the cases, not on where or in which order they are found); GTEST_TOTAL_SHARDS /
  GTEST_SHARD_INDEX give the slice --shard gives, --shard wins over them, and
  GTEST_SHARD_STATUS_FILE is created;
- list: over every committed case, the N slices (N = 3) are disjoint and their union is `list`;
  each slice's estimated cost is at most the average plus the largest case (balanced);
- fuzz: the seeds the N shards of --seed-range 1..7 record are disjoint and together 1..7;
- refused, with a message naming the problem: bad --shard values and GTEST_* values (exit 2), a
  --resume sidecar of another shard (exit 2), and in `report` (exit 1) overlapping shards (the
  same shard twice, or a case in two shards), a missing shard (named), shards with another
  version, other options, another case set or another shard count, shards mixed with an
  unsharded run of the same backend, and a shard that lost a case;
- with --workflow, the CI example: its matrix is every shard index, the report job merges every
  shard's file, and its shard step, run under bash -e with an attnconf that exits 0, 77, 1, 2 or
  3, passes for 0 and 77 (a slice all NOT_SUPPORTED checked nothing and failed nothing) and fails
  for the others, its results file left for the upload every time.
"""
import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

FILTERS = ["sdpa.causal.*", "mask.window.*", "cache.rotating.*"]
NS = [1, 2, 3, 7]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what, file=sys.stderr)
    return cond


def run(cmd, env=None, rc=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    if rc is not None and p.returncode != rc:
        failures.append("%s: exit %d, expected %d\n%s%s" % (" ".join(cmd), p.returncode, rc,
                                                            p.stdout[-2000:], p.stderr[-2000:]))
        print("FAIL: " + failures[-1], file=sys.stderr)
    return p


def load(path):
    with open(path) as f:
        return json.load(f)


def save(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)


def summarise(doc):
    """Recount a results document's summary after an edit (the reader checks it)."""
    s = {k: 0 for k in doc["summary"]}
    for r in doc["results"]:
        s[r["status"]] += 1
    s["total"] = len(doc["results"])
    doc["summary"] = s


def ids(doc):
    return [r["id"] for r in doc["results"]]


def strip_time(r):
    return {k: v for k, v in r.items() if k != "seconds"}


def check_workflow(path):
    """The documented CI example: a matrix over every shard index, and a merge of all files."""
    try:
        import yaml
    except ImportError:
        print("check_shards: no PyYAML: the workflow is not checked", file=sys.stderr)
        return
    with open(path) as f:
        wf = yaml.safe_load(f)
    n = int(wf["env"]["SHARDS"])
    jobs = wf["jobs"]
    check(jobs["shard"]["strategy"]["matrix"]["shard"] == list(range(n)),
          "workflow: the matrix covers shards 0..%d" % (n - 1))
    runs = " ".join(st.get("run", "") for st in jobs["shard"]["steps"])
    check('--shard "${{ matrix.shard }}/$SHARDS"' in runs and "--format json --out" in runs,
          "workflow: each job runs attnconf run --shard K/N --format json --out")
    check(jobs["report"]["needs"] == "shard", "workflow: the report job waits for the shards")
    runs = " ".join(st.get("run", "") for st in jobs["report"]["steps"])
    check("attnconf\" report" in runs and "results/*.json" in runs,
          "workflow: the report job merges every shard's file")
    check_workflow_statuses(wf)


def check_workflow_statuses(wf):
    """The shard job's run step under bash -e (as Actions runs it), with an attnconf that exits
    with each status run can give: 77 (the whole slice NOT_SUPPORTED) passes the step like 0, and
    writes its file for the report; 1, 2 and 3 fail it."""
    steps = [st for st in wf["jobs"]["shard"]["steps"] if "--shard" in st.get("run", "")]
    if not check(len(steps) == 1, "workflow: one step of the shard job runs --shard"):
        return
    script = steps[0]["run"].replace("${{ matrix.shard }}", "2")
    check("${{" not in script, "workflow: the shard step uses only ${{ matrix.shard }}")
    work = tempfile.mkdtemp(prefix="check_shards_wf.")
    try:
        fake = os.path.join(work, "attnconf")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\n'
                    'while [ $# -gt 0 ]; do [ "$1" = --out ] && : > "$2"; shift; done\n'
                    'exit "$FAKE_RC"\n')
        os.chmod(fake, 0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("GTEST_")}
        env.update({k: str(v) for k, v in wf["env"].items()})
        env["PATH"] = work + os.pathsep + env.get("PATH", "")
        for status, want in [(0, 0), (77, 0), (1, 1), (2, 2), (3, 3)]:
            out = os.path.join(work, "results-2.json")
            if os.path.exists(out):
                os.remove(out)
            env["FAKE_RC"] = str(status)
            p = subprocess.run(["bash", "--noprofile", "--norc", "-e", "-c", script], cwd=work,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            check(p.returncode == want, "workflow: the shard step exits %d when attnconf run "
                  "exits %d, expected %d\n%s" % (p.returncode, status, want, p.stdout))
            check(os.path.exists(out), "workflow: attnconf run exiting %d: no results file "
                  "to upload" % status)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--attnconf", required=True)
    ap.add_argument("--backend", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--workflow", help="examples/ci-shards/attnconf-shards.yml: its matrix "
                    "covers shards 0..SHARDS-1, each runs --shard K/N, and report merges them")
    a = ap.parse_args()
    shutil.rmtree(a.dir, ignore_errors=True)
    os.makedirs(a.dir)
    d = a.dir
    env = {k: v for k, v in os.environ.items() if not k.startswith("GTEST_")}
    sel = []
    for g in FILTERS:
        sel += ["--filter", g]
    base = [a.attnconf, "run", "--backend", a.backend, "--cases", a.cases] + sel
    report = [a.attnconf, "report", "--command", "attnconf report RESULTS"]

    # ---- the unsharded run and its report ----
    full = os.path.join(d, "full.json")
    run(base + ["--format", "json", "--out", full], env, 0)
    fdoc = load(full)
    fids = ids(fdoc)
    check(len(fids) >= 20 and len(set(fids)) == len(fids), "the full run: %d cases" % len(fids))
    check("shard" not in fdoc, "an unsharded run records no shard")
    kinds = {i.split(".")[0] for i in fids}
    check(kinds == {"sdpa", "mask", "cache"}, "the selection mixes sdpa, mask and cache: %s" % kinds)
    want = run(report + [full], env, 0).stdout
    byid = {r["id"]: strip_time(r) for r in fdoc["results"]}

    selection = None
    for n in NS:
        files, seen = [], []
        for k in range(n):
            out = os.path.join(d, "s%d_%d.json" % (k, n))
            run(base + ["--shard", "%d/%d" % (k, n), "--format", "json", "--out", out], env, 0)
            doc = load(out)
            files.append(out)
            sh = doc.get("shard", {})
            check(sh.get("index") == k and sh.get("total") == n and sh.get("selected") == len(fids),
                  "shard %d/%d records {index, total, selected}: %s" % (k, n, sh))
            selection = selection or sh.get("selection")
            check(sh.get("selection") == selection, "shard %d/%d: one selection digest" % (k, n))
            seen += ids(doc)
            for r in doc["results"]:
                check(strip_time(r) == byid.get(r["id"]),
                      "shard %d/%d: %s as in the full run" % (k, n, r["id"]))
        check(sorted(seen) == sorted(fids),
              "N=%d: the shards' union is the full run (missing %s, twice %s)"
              % (n, sorted(set(fids) - set(seen)),
                 sorted({i for i in seen if seen.count(i) > 1})))
        got = run(report + files, env, 0).stdout
        check(got == want, "N=%d: the merged report equals the unsharded one byte for byte" % n)
        random.Random(n).shuffle(files)
        got = run(report + files, env, 0).stdout
        check(got == want, "N=%d: the merged report, files in another order" % n)

    # ---- where the cases are found does not matter; the gtest variables ----
    moved = os.path.join(d, "moved")
    os.makedirs(moved)
    for i, cid in enumerate(sorted(fids, reverse=True)):
        fam = ".".join(cid.split(".")[:2])
        shutil.copy(os.path.join(a.cases, fam, cid + ".yaml"),
                    os.path.join(moved, "%03d_%s.yaml" % (i, cid)))
    for k in range(3):
        ref = ids(load(os.path.join(d, "s%d_3.json" % k)))
        p = run([a.attnconf, "run", "--backend", a.backend, "--cases", moved] + sel +
                ["--shard", "%d/3" % k, "--format", "json"], env, 0)
        check(ids(json.loads(p.stdout)) == ref, "shard %d/3 from another directory" % k)
        status = os.path.join(d, "status%d" % k)
        genv = dict(env, GTEST_TOTAL_SHARDS="3", GTEST_SHARD_INDEX=str(k),
                    GTEST_SHARD_STATUS_FILE=status)
        p = run(base + ["--format", "json"], genv, 0)
        doc = json.loads(p.stdout)
        check(ids(doc) == ref and doc["shard"]["index"] == k,
              "GTEST_SHARD_INDEX=%d GTEST_TOTAL_SHARDS=3 is --shard %d/3" % (k, k))
        check(os.path.exists(status), "GTEST_SHARD_STATUS_FILE created")
        p = run(base + ["--shard", "%d/7" % k, "--format", "json"], genv, 0)
        check(json.loads(p.stdout)["shard"]["total"] == 7, "--shard wins over GTEST_*")

    # ---- list: every committed case, N = 3 ----
    every = run([a.attnconf, "list", "--cases", a.cases], env, 0).stdout.splitlines()
    seen = []
    for k in range(3):
        p = run([a.attnconf, "list", "--cases", a.cases, "--shard", "%d/3" % k], env, 0)
        seen += p.stdout.splitlines()
        m = re.search(r"shard %d/3: (\d+) of (\d+) cases, cost (\d+) of (\d+) \(largest case (\d+)\)"
                      % k, p.stderr)
        check(m is not None, "list --shard %d/3 states its cost: %s" % (k, p.stderr))
        if m:
            cnt, total, cost, tcost, largest = map(int, m.groups())
            check(total == len(every), "list --shard: %d of %d" % (total, len(every)))
            check(cost <= tcost / 3 + largest, "shard %d/3 is balanced: %d <= %d/3 + %d"
                  % (k, cost, tcost, largest))
    check(sorted(seen) == sorted(every) and len(every) > 100,
          "list: the 3 shards' union is every case (%d of %d)" % (len(seen), len(every)))

    # ---- fuzz: seeds ----
    for n in NS:
        got = []
        for k in range(n):
            js = os.path.join(d, "fz%d_%d.json" % (k, n))
            run([a.attnconf, "fuzz", "--backend", a.backend, "--seed-range", "1..7", "--shard",
                 "%d/%d" % (k, n), "--count", "1", "--out-dir", os.path.join(d, "fz"), "--json",
                 js], env, 0)
            doc = load(js)
            check(doc.get("seed_range") == "1..7" and doc.get("shard") == {"index": k, "total": n},
                  "fuzz shard %d/%d records its range and shard" % (k, n))
            got += doc.get("seeds", [])
        check(sorted(got, key=int) == [str(s) for s in range(1, 8)],
              "fuzz N=%d: the shards' seeds are 1..7, each once: %s" % (n, got))

    # ---- usage errors ----
    for bad in ["3/3", "1/0", "x", "-1/2", "1/2/3", "0/10001", " 0/2"]:
        p = run(base + ["--shard", bad], env, 2)
        check("--shard: expected K/N" in p.stderr, "--shard %r refused with the reason" % bad)
    for genv, why in [({"GTEST_TOTAL_SHARDS": "3"}, "GTEST_SHARD_INDEX is not"),
                      ({"GTEST_SHARD_INDEX": "0"}, "GTEST_TOTAL_SHARDS is not"),
                      ({"GTEST_TOTAL_SHARDS": "3", "GTEST_SHARD_INDEX": "3"}, "GTEST_SHARD_INDEX=3"),
                      ({"GTEST_TOTAL_SHARDS": "two", "GTEST_SHARD_INDEX": "0"},
                       "GTEST_TOTAL_SHARDS=two")]:
        p = run(base, dict(env, **genv), 2)
        check(why in p.stderr, "%s refused: %s" % (genv, p.stderr[:300]))
    p = run([a.attnconf, "fuzz", "--backend", a.backend, "--seed-range", "1..7", "--shard", "7/7",
             "--count", "1"], env, 2)
    check("--shard: expected K/N" in p.stderr, "fuzz --shard 7/7 refused")
    # --resume from a sidecar of another shard
    rs = os.path.join(d, "resume.json")
    side = load(os.path.join(d, "s0_3.json"))
    side["complete"] = False
    save(side, rs + ".partial.json")
    p = run(base + ["--shard", "1/3", "--format", "json", "--out", rs, "--resume"], env, 2)
    check("made with shard 0/3, this run has shard 1/3" in p.stderr, "--resume of another shard")

    # ---- report refuses ----
    s3 = [os.path.join(d, "s%d_3.json" % k) for k in range(3)]

    def refused(files, pattern, what):
        p = run(report + files, env, 1)
        check(re.search(pattern, p.stderr) is not None,
              "report refuses %s: %s" % (what, p.stderr.strip()))

    refused([s3[0], s3[1], s3[1], s3[2]], r"shard 1/3 is also .*overlapping shards",
            "the same shard twice")
    two = load(s3[0])
    extra = load(s3[1])["results"][0]
    two["results"].append(extra)
    summarise(two)
    save(two, os.path.join(d, "overlap.json"))
    refused([os.path.join(d, "overlap.json"), s3[1], s3[2]],
            r"case \"%s\" .* is in shard 0/3 .* and in shard 1/3 .*overlapping shards"
            % re.escape(extra["id"]), "a case in two shards")
    refused([s3[0], s3[2]], r"shard 1/3 missing", "a missing shard (named)")
    s7 = [os.path.join(d, "s%d_7.json" % k) for k in range(7)]
    refused(s7[:2] + s7[4:], r"shards 2/7, 3/7 missing", "two missing shards (named)")
    for field, value, pattern in [("version", "9.9", r"version"),
                                  ("options", "threads=2", r"options")]:
        doc = load(s3[1])
        if field == "version":
            doc["backend"]["version"] = value
        else:
            doc["backend_options"] = value
        save(doc, os.path.join(d, "edit.json"))
        refused([s3[0], os.path.join(d, "edit.json"), s3[2]], pattern, "another " + field)
    other = os.path.join(d, "other1_3.json")
    run([a.attnconf, "run", "--backend", a.backend, "--cases", a.cases, "--filter",
         "sdpa.causal.*", "--shard", "1/3", "--format", "json", "--out", other], env, 0)
    refused([s3[0], other, s3[2]], r"shards of different runs or case sets", "another case set")
    refused([s3[0], os.path.join(d, "s1_2.json")], r"one of 3 shards.*one count|shard 1/2 here",
            "another shard count")
    refused([full, s3[0], s3[1], s3[2]], r"not both", "shards mixed with an unsharded run")
    lost = load(s3[2])
    lost["results"].pop()
    summarise(lost)
    save(lost, os.path.join(d, "lost.json"))
    refused([s3[0], s3[1], os.path.join(d, "lost.json")], r"a shard lost or gained cases",
            "a shard that lost a case")
    bad = load(s3[0])
    bad["shard"]["index"] = 3
    save(bad, os.path.join(d, "badidx.json"))
    refused([os.path.join(d, "badidx.json")], r"field \"shard.index\"", "a shard index >= total")

    if a.workflow:
        check_workflow(a.workflow)
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        return 1
    print("check_shards: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
