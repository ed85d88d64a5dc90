#!/usr/bin/env python3
"""check_bench.py — run `attnconf bench` and check what it reports, independently of it.

  check_bench.py --suite FILE --out FILE.json --rc N [--status GLOB=STATUS]... [--via GLOB=VIA]...
                 [--message GLOB=REGEX]... [--filter GLOB]... [--timing TIMING]
                 [--median GLOB=LO:HI]... [--pidfile FILE] [--max-seconds S]
                 -- ATTNCONF bench ARGS...
  check_bench.py --peak --out FILE.json [--isa-env ISA --built LIST] -- ATTNCONF bench --peak

The command gets `--suite FILE --out FILE.json` appended (not with --peak), and each
`--filter GLOB`.  Checked:
  - the exit status;
  - the JSON document: exactly the keys of the bench format (perf/README.md), the machine's
    limits positive, every backend's "timing" (--timing, default in-process), one entry per
    (shape, dtype) of the suite in suite order (those a --filter selects, when given);
  - the work of every benchmark recomputed here from the suite YAML, key by key (a plain loop
    over the reference's keep rule, SPEC clauses 3, 4 and 19): visible_pairs, flops,
    kv_bytes, io_bytes;
  - each status (OK unless a --status GLOB matches the id) and its message (--message);
  - for OK memory-bound shapes, and for no other: read_gbs_beside positive from 1 to reps
    read_beside_passes, and the table's %limit of it (pct_limit stays of the machine's);
  - for OK: the repetitions (count within the limits, --min-time reached by their sum unless
    the backend's timing is "adapter", whose --min-time counts wall time), the statistics
    recomputed from times_s (median, min, IQR with linear interpolation), the rates from the
    median and the machine's limits, validated_rows = min(64, B*Hq*Lq), 0 <= max_err_ratio
    <= 1, a positive peak RSS, every time > 0, and LO <= median <= HI (seconds) for the ids a
    --median GLOB matches;
  - a table line on stdout for every benchmark with its status;
  - with --max-seconds, that bench finished within S seconds of wall time;
  - with --pidfile, that no process a misbehave backend forked (it writes their pids there,
    one a line) outlived bench (check_isolation.py's check).
With --peak: exit 0, positive numbers printed and in the JSON's "machine" object.  With
--isa-env ISA (auto|avx512|avx2|portable) the command runs with ATTNCONF_CPU_ISA=ISA and
machine.fma_isa must be the ISA the cpu backend would use: the widest of the ISA asked for, the
kernels this build has (--built, a comma-separated list of avx512 and avx2) and the flags of
/proc/cpuinfo (which Linux clears when the OS does not save the state); an ISA asked for that
the CPU or build lacks must be refused (exit 1, the reason on stderr).  Exit 77 (skipped) where
there is no /proc/cpuinfo to decide from.
"""
import argparse
import fnmatch
import json
import math
import re
import os
import subprocess
import sys
import time

import yaml

from check_isolation import leftovers

TOP = ["attnconf_bench", "suite", "suite_file", "label", "started", "machine", "config",
       "backends"]
MACHINE = ["cpu_model", "cores", "mem_bytes", "fma_gflops", "mem_read_gbs", "limits_from",
           "fma_isa", "read_buffer_bytes", "cpu_share", "cpu_signature", "thp_mode", "huge_pages"]
CONFIG = ["min_time_s", "min_reps", "max_reps", "warmup", "threads_hint", "max_gflop"]
BACKEND = ["name", "version", "options", "timing", "shapes"]
SHAPE = ["id", "dtype", "b", "hq", "hkv", "lq", "lk", "d", "dv", "causal", "window", "bound",
         "via", "status", "message", "visible_pairs", "flops", "kv_bytes", "io_bytes", "reps",
         "times_s", "median_s", "min_s", "iqr_s", "gflops", "kv_gbs", "pct_limit",
         "peak_rss_bytes", "validated_rows", "max_err_ratio", "huge_page_bytes"]
# A memory-bound shape timed OK also has the read bandwidth measured beside its repetitions.
BESIDE = ["read_gbs_beside", "read_beside_passes", "read_beside_huge_bytes"]
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}


def kept(s, b, i, j):
    """attnref_sdpa_key_kept: causal (offset default Lk - Lq), window, lengths, left padding."""
    off = s.get("causal_offset", s["lk"] - s["lq"])
    if s.get("causal") and j > off + i:
        return False
    w = s.get("window", 0)
    if w and j <= off + i - w:
        return False
    if "lengths" in s and j >= s["lengths"][b]:
        return False
    if "left_padding" in s and j < s["left_padding"][b]:
        return False
    return True


def work(s, dtype):
    es = ESIZE[dtype]
    d, dv = s["head_dim"], s.get("v_head_dim", s["head_dim"])
    b_, hq, hkv, lq, lk = s["batch"], s["q_heads"], s["kv_heads"], s["lq"], s["lk"]
    pairs = keys = 0
    for b in range(b_):
        used = set()
        for i in range(lq):
            for j in range(lk):
                if kept(s, b, i, j):
                    pairs += 1
                    used.add(j)
        keys += len(used)
    return {"visible_pairs": pairs * hq, "flops": float(pairs * hq * (2 * d + 2 * dv)),
            "kv_bytes": keys * hkv * (d + dv) * es,
            "io_bytes": (b_ * hq * lq * (d + dv) + b_ * hkv * lk * (d + dv)) * es}


def quantile(xs, p):
    """GSL's gsl_stats_quantile_from_sorted_data: linear interpolation at (n - 1) p."""
    xs = sorted(xs)
    h = (len(xs) - 1) * p
    lo = math.floor(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def rules(items):
    out = []
    for r in items or []:
        glob, _, val = r.partition("=")
        out.append((glob, val))
    return out


def lookup(rs, ident, default):
    for glob, val in rs:
        if fnmatch.fnmatchcase(ident, glob):
            return val
    return default


# What each ISA needs, as the cpu backend checks it (backends/cpu/cpu_options.c).
ISA_FLAGS = {"avx512": {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512dq", "avx512vl"},
             "avx2": {"avx2", "fma"}}
ISA_LABEL = {"avx512": "avx512f", "avx2": "avx2+fma", "portable": "portable"}


def expected_isa(asked, built):
    """The fma_isa label bench --peak must report, or None when it must refuse."""
    flags = set()
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    order = ["avx512", "avx2", "portable"]
    have = [i for i in order if i == "portable" or (i in built and ISA_FLAGS[i] <= flags)]
    if asked == "auto":
        return ISA_LABEL[have[0]]
    return ISA_LABEL[asked] if asked in have else None


def check_peak(a, p, fails):
    if a.isa_env:
        want = expected_isa(a.isa_env, (a.built or "").split(","))
        if want is None:
            if p.returncode != 1 or "lacks" not in p.stderr:
                fails.append(f"ATTNCONF_CPU_ISA={a.isa_env} on a CPU or build without it: exit "
                             f"{p.returncode}, expected 1 and a reason naming what it lacks")
            return
        got = json.load(open(a.out)).get("machine", {}).get("fma_isa")
        if got != want:
            fails.append(f"machine.fma_isa = {got!r}, expected {want!r} (ATTNCONF_CPU_ISA="
                         f"{a.isa_env}, built: {a.built})")
        if f"f32 FMA ({want}," not in p.stdout:
            fails.append(f"no 'f32 FMA ({want}, ...' line")
    if p.returncode != 0:
        fails.append(f"exit {p.returncode}, expected 0")
    for what, unit in (("f32 FMA", "GFLOP/s"), ("memory read", "GB/s")):
        m = re.search(re.escape(what) + r" .*: ([0-9.]+) " + re.escape(unit), p.stdout)
        if not m or not float(m.group(1)) > 0:
            fails.append(f"no positive '{what} ... {unit}' line")
    doc = json.load(open(a.out))
    m = doc.get("machine", {})
    for k in ("fma_gflops", "mem_read_gbs", "cores", "mem_bytes", "read_buffer_bytes"):
        if not (isinstance(m.get(k), (int, float)) and m[k] > 0):
            fails.append(f"machine.{k} = {m.get(k)!r}, expected a positive number")
    if not (isinstance(m.get("cpu_share"), float) and 0 < m["cpu_share"] <= 1.05):
        fails.append(f"machine.cpu_share = {m.get('cpu_share')!r}, expected a share of the CPUs")
    if m.get("limits_from") != "measured":
        fails.append(f"machine.limits_from = {m.get('limits_from')!r}")


def check_bench(a, p, fails):
    if p.returncode != a.rc:
        fails.append(f"exit {p.returncode}, expected {a.rc}")
    suite = yaml.safe_load(open(a.suite))
    doc = json.load(open(a.out))
    if list(doc) != TOP:
        fails.append(f"top-level keys {list(doc)}, expected {TOP}")
    if doc["attnconf_bench"] != 1 or doc["suite"] != suite["name"]:
        fails.append("attnconf_bench / suite wrong")
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["started"]):
        fails.append(f"started = {doc['started']!r}")
    m, cfg = doc["machine"], doc["config"]
    if list(m) != MACHINE or list(cfg) != CONFIG:
        fails.append(f"machine keys {list(m)} / config keys {list(cfg)}")
    if not (m["fma_gflops"] > 0 and m["mem_read_gbs"] > 0 and m["cores"] >= 1):
        fails.append("machine limits not positive")
    if m["thp_mode"] not in ("always", "madvise", "never", "unknown") or \
            not isinstance(m["huge_pages"], bool):
        fails.append(f"machine thp_mode {m['thp_mode']!r} / huge_pages {m['huge_pages']!r}")
    ids = [(s, f"{s['id']}.{dt}", dt) for s in suite["shapes"] for dt in s["dtypes"]]
    if a.filter:
        ids = [x for x in ids if any(fnmatch.fnmatchcase(x[1], g) for g in a.filter)]
    for be in doc["backends"]:
        if list(be) != BACKEND:
            fails.append(f"{be.get('name')}: backend keys {list(be)}, expected {BACKEND}")
        if be.get("timing") != a.timing:
            fails.append(f"{be.get('name')}: timing {be.get('timing')!r}, expected {a.timing!r}")
        got = [x["id"] for x in be["shapes"]]
        if got != [i for _, i, _ in ids]:
            fails.append(f"{be['name']}: benchmarks {got}, expected every (shape, dtype) in "
                         "suite order")
            continue
        for (s, ident, dt), x in zip(ids, be["shapes"]):
            where = f"{be['name']} {ident}"
            keys = SHAPE + (BESIDE if x.get("bound") == "memory" and x.get("status") == "OK"
                            else [])
            if list(x) != keys:
                fails.append(f"{where}: keys {list(x)}, expected {keys}")
                continue
            for k, v in work(s, dt).items():
                if x[k] != v:
                    fails.append(f"{where}: {k} = {x[k]}, recomputed {v}")
            want = lookup(rules(a.status), ident, "OK")
            if x["status"] != want:
                fails.append(f"{where}: status {x['status']} ({x['message']}), expected {want}")
            rx = lookup(rules(a.message), ident, None)
            if rx and not re.search(rx, x["message"]):
                fails.append(f"{where}: message {x['message']!r} does not match {rx!r}")
            via = lookup(rules(a.via), ident, "params")
            if x["via"] != via:
                fails.append(f"{where}: via {x['via']}, expected {via}")
            if not re.search(r"^" + re.escape(be["name"]) + r" +" + re.escape(ident) + r" +" +
                             x["status"] + r"\b", p.stdout, re.M):
                fails.append(f"{where}: no table line with its status on stdout")
            if x["status"] != "OK":
                if x["median_s"] is not None or x["reps"] != 0:
                    fails.append(f"{where}: {x['status']} with measurements")
                continue
            t = x["times_s"]
            if x["reps"] != len(t) or not cfg["min_reps"] <= len(t) <= cfg["max_reps"]:
                fails.append(f"{where}: reps {x['reps']}, {len(t)} times")
                continue
            # An adapter's times are what it reports; --min-time counts the wall time of its
            # requests, transport included, which the file does not hold.
            if (sum(t) < cfg["min_time_s"] and len(t) < cfg["max_reps"]
                    and be["timing"] == "in-process"):
                fails.append(f"{where}: stopped at {sum(t)} s, below --min-time")
            med = quantile(t, 0.5)
            checks = {"median_s": med, "min_s": min(t),
                      "iqr_s": quantile(t, 0.75) - quantile(t, 0.25),
                      "gflops": x["flops"] / med / 1e9, "kv_gbs": x["kv_bytes"] / med / 1e9}
            lim = m["mem_read_gbs"] if x["bound"] == "memory" else m["fma_gflops"]
            rate = checks["kv_gbs"] if x["bound"] == "memory" else checks["gflops"]
            checks["pct_limit"] = 100 * rate / lim
            for k, v in checks.items():
                if not close(x[k], v):
                    fails.append(f"{where}: {k} = {x[k]}, recomputed {v}")
            if x["bound"] == "memory":
                # At least the pass after the first repetition, at most one after each.
                if not (x["read_gbs_beside"] > 0 and 1 <= x["read_beside_passes"] <= len(t)):
                    fails.append(f"{where}: read_gbs_beside {x['read_gbs_beside']} from "
                                 f"{x['read_beside_passes']} passes, expected a positive "
                                 f"rate from 1 to {len(t)} passes")
                pct = 100 * x["kv_gbs"] / x["read_gbs_beside"]
                if not re.search(r"^" + re.escape(be["name"]) + r" +" + re.escape(ident) +
                                 rf" +OK .* {pct:.1f}% .*\n    %limit of "
                                 rf"{x['read_gbs_beside']:.1f} GB/s read beside it",
                                 p.stdout, re.M):
                    fails.append(f"{where}: the table's %limit is not {pct:.1f} (of the "
                                 f"{x['read_gbs_beside']:.1f} GB/s read beside it)")
            rows = min(64, s["batch"] * s["q_heads"] * s["lq"])
            if x["validated_rows"] != rows:
                fails.append(f"{where}: validated_rows {x['validated_rows']}, expected {rows}")
            if not 0 <= x["max_err_ratio"] <= 1:
                fails.append(f"{where}: max_err_ratio {x['max_err_ratio']}")
            if not x["peak_rss_bytes"] > 0:
                fails.append(f"{where}: peak_rss_bytes {x['peak_rss_bytes']}")
            if not (isinstance(x["huge_page_bytes"], int) and x["huge_page_bytes"] >= 0):
                fails.append(f"{where}: huge_page_bytes {x['huge_page_bytes']}")
            if not all(v > 0 for v in t):
                fails.append(f"{where}: a time that is not positive in {t}")
            bounds = lookup(rules(a.median), ident, None)
            if bounds:
                lo, hi = (float(v) for v in bounds.split(":"))
                if not lo <= med <= hi:
                    fails.append(f"{where}: median {med} s, expected {lo} to {hi} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rc", type=int, default=0)
    ap.add_argument("--peak", action="store_true")
    ap.add_argument("--status", action="append")
    ap.add_argument("--message", action="append")
    ap.add_argument("--via", action="append")
    ap.add_argument("--filter", action="append")
    ap.add_argument("--timing", default="in-process", choices=["in-process", "adapter"])
    ap.add_argument("--median", action="append")
    ap.add_argument("--pidfile")
    ap.add_argument("--max-seconds", type=float)
    ap.add_argument("--isa-env", choices=["auto", "avx512", "avx2", "portable"])
    ap.add_argument("--built")
    ap.add_argument("cmd", nargs="+")
    a = ap.parse_args()
    env = None
    if a.isa_env:
        if not os.path.exists("/proc/cpuinfo"):
            print("no /proc/cpuinfo: cannot tell which ISA the peak must use")
            return 77
        env = dict(os.environ, ATTNCONF_CPU_ISA=a.isa_env)
    cmd = a.cmd + ["--out", a.out] + ([] if a.peak else ["--suite", a.suite])
    for g in a.filter or []:
        cmd += ["--filter", g]
    if a.pidfile and os.path.exists(a.pidfile):
        os.remove(a.pidfile)
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    took = time.monotonic() - t0
    sys.stdout.write(p.stdout)
    sys.stderr.write(p.stderr)
    fails = []
    if re.search(r"Sanitizer|runtime error", p.stdout + p.stderr):
        fails.append("sanitizer report in the output")
    if a.max_seconds is not None and took > a.max_seconds:
        fails.append(f"bench took {took:.1f} s, expected at most {a.max_seconds} s")
    if a.pidfile:
        fails += leftovers(a.pidfile)
    try:
        (check_peak if a.peak else check_bench)(a, p, fails)
    except (OSError, ValueError, KeyError, TypeError) as e:
        fails.append(f"cannot check the results: {e!r}")
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
