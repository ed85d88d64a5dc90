#!/usr/bin/env python3
"""Write the synthetic bench result files of perf/tests/fixtures/ (perf-compare and perf-report
tests).  Times are drawn from a fixed seed, so the files are reproducible: rerun this after
changing it and commit the result (the ctest perf.fixtures_current checks they match).

    python3 perf/tests/make_fixtures.py [OUTDIR]     (default: perf/tests/fixtures)

Model: each shape has an ideal time (FLOPs / a backend's throughput, or K/V bytes / bandwidth
for decode); a repetition takes ideal * exp(N(0, 1.5 %)), and 1 in 12 also picks up an
outlier of +5..30 % (another tenant on a shared VM).  Runs:
  base.json         the reference run: cpu, reference (L1024 SKIPPED: over --max-gflop) and
                    onnxruntime-opset23 (one shape NOT_SUPPORTED)
  rerun.json        the same code again: fresh draws, nothing changed          -> not flagged
  slow10.json       cpu 10 % slower on every shape                             -> flagged
  slow3.json        cpu 3 % slower (below the 5 % threshold)                   -> not flagged
  status.json       cpu prefill.causal.L1024.f16 INCORRECT, the rest unchanged -> flagged
  othermachine.json another CPU with twice the limits and half the times       -> not flagged
  fewreps.json      cpu with 3 repetitions, 20 % slower                        -> too few reps
  decode.json       a memory-bound suite (GB/s), for perf-report
  wide.json         13 backends, more than one table of 12 columns holds (perf-report splits
                    each measure): base.json's three and ten cpu builds cpu-v01..cpu-v10, each
                    5 % slower than the one before
  partial.json      an edited suite: a backend and a shape missing, a shape added, one shape's
                    sizes changed under the same id                            -> listed only
  empty.json        base.json with no backend: nothing in common with it       -> refused
  curves.json       a cost-curve suite (perf-report's fits and cliffs): exact power laws (k = 2
                    for causal prefill, 1 for decode and a batch sweep) whose fit gives k to
                    rounding; prefill f16 with a 25 % rate drop from L 1024 to 2048 (a cliff),
                    decode f16 with a 15 % drop (not one), a curve whose times grow as Lk^1.3
                    against an expected 1 (off by 0.30), one whose rate dips 30 % at one size
                    and is back at the next (a cliff, marked as an isolated dip), a decode
                    curve with the read bandwidth beside each size (its GB/s 30 % lower at one
                    size with the bandwidth beside: not a cliff; its share of the bandwidth
                    25 % lower at the last: a cliff), one size SKIPPED, and the reference timed
                    at one size only (too few points to fit)
  curves-untimed.json  the same points, every one SKIPPED: nothing to fit   -> said so
  underload.json    base.json's machine with its FMA peak measured 25 % low (another run's
                    --peak under load): the same CPU model, the limits apart    -> told so
  bad-curve-*.json  cpu's decode-b1 f32 points alone, one edit each: a shape without its curve
                    (missing), two points at one size (twice), another head count (unlike), an
                    expected exponent of 1e300 (expect)
  paged.json        a paged suite (perf-report's paged / contiguous table): cpu's contiguous
                    decode at Lk 8192, pages of 16 at 0.80 of its bandwidth and pages of 128 at
                    1.00 (times exact), one paged shape INCORRECT; the reference with its paged
                    shapes NOT_SUPPORTED, and paged-only with its paged shapes timed but no
                    contiguous one (neither has a column)
  beside.json       a decode run whose cpu shapes have read_gbs_beside (20 and 25 GB/s; the
                    reference's none): perf-report's % of the bandwidth read beside a shape
  beside-all.json   its cpu backend alone: every memory-bound shape has the figure
  pages-base.json   a decode run recorded without bench --huge-pages (machine.huge_pages false)
  pages-huge.json   the same with it (true): perf-compare says the pages differ, perf-report
                    that the memory was on huge pages
  bad-*.json        broken files: perf-compare / perf-report must exit 2 naming file and key
Every file's onnxruntime-opset23 has "timing": "adapter" (an exec: adapter, timed by what it
reports), cpu "in-process", and the reference no "timing" (a file from before the key).
  hyperfine.json    whole-process timings as hyperfine --export-json writes them
"""
import copy
import json
import math
import os
import random
import statistics
import sys

MACHINE = {"cpu_model": "Intel(R) Xeon(R) CPU @ 2.20GHz", "cores": 2,
           "mem_bytes": 25769803776, "fma_gflops": 181.3, "mem_read_gbs": 18.1,
           "limits_from": "measured"}
CONFIG = {"min_time_s": 0.5, "min_reps": 10, "max_reps": 1000, "warmup": 1,
          "threads_hint": None}
ESIZE = {"f32": 4, "f16": 2, "bf16": 2}
# Throughput of each backend: GFLOP/s for prefill per dtype, GB/s of K/V for decode.
PREFILL_RATE = {"cpu": {"f32": 70.0, "f16": 76.0}, "reference": {"f32": 1.3, "f16": 1.2},
                "onnxruntime-opset23": {"f32": 34.0, "f16": 53.0}}
DECODE_RATE = {"cpu": 10.5, "reference": 0.9}
REPS = {"cpu": 12, "reference": 10, "onnxruntime-opset23": 10}
VERSION = {"cpu": "0.1.0", "reference": "0.1.0", "onnxruntime-opset23": "1.22.0"}
OPTIONS = {"cpu": {"threads": "2"}, "reference": {}, "onnxruntime-opset23": {"opset": "23"}}
# How bench timed each backend: in process, or inside the exec: adapter.  The reference's
# record has no "timing", as in files written before the key existed (read as in-process).
TIMING = {"cpu": "in-process", "reference": None, "onnxruntime-opset23": "adapter"}
WIDE = ["cpu", "reference", "onnxruntime-opset23"] + [f"cpu-v{n:02d}" for n in range(1, 11)]


def kind(name):
    """The backend whose model a name uses (cpu-vNN: cpu's, NN x 5 % slower), and the factor."""
    if name.startswith("cpu-v"):
        return "cpu", 1 + 0.05 * int(name[5:])
    return name, 1.0


def sig(x, digits):
    """x rounded to `digits` significant digits (JSON stays short and libm-independent)."""
    return float(f"{x:.{digits}g}")


def prefill_shape(L, dtype):
    hq, hkv, d = 32, 8, 128
    pairs = hq * L * (L + 1) // 2
    return {"id": f"prefill.causal.L{L}.{dtype}", "dtype": dtype, "b": 1, "hq": hq, "hkv": hkv,
            "lq": L, "lk": L, "d": d, "dv": d, "causal": True, "window": 0, "bound": "compute",
            "via": "params", "visible_pairs": pairs, "flops": float(2 * (d + d) * pairs),
            "kv_bytes": hkv * L * (d + d) * ESIZE[dtype],
            "io_bytes": (2 * hq + 2 * hkv) * L * d * ESIZE[dtype]}


def decode_shape(lk, dtype):
    hq, hkv, d = 32, 8, 128
    pairs = hq * lk
    return {"id": f"decode.B1.Lk{lk}.{dtype}", "dtype": dtype, "b": 1, "hq": hq, "hkv": hkv,
            "lq": 1, "lk": lk, "d": d, "dv": d, "causal": False, "window": 0, "bound": "memory",
            "via": "params", "visible_pairs": pairs, "flops": float(2 * (d + d) * pairs),
            "kv_bytes": hkv * lk * (d + d) * ESIZE[dtype],
            "io_bytes": (2 * hq + 2 * hkv * lk) * d * ESIZE[dtype]}


def timed(shape, ideal, reps, rng, machine):
    """A timed shape; rng None: every repetition takes exactly `ideal`."""
    times = []
    for _ in range(reps):
        t = ideal if rng is None else ideal * math.exp(rng.gauss(0, 0.015))
        if rng is not None and rng.random() < 1 / 12:
            t *= 1 + rng.uniform(0.05, 0.30)
        times.append(sig(t, 6))
    med = statistics.median(times)
    q = statistics.quantiles(times, n=4, method="inclusive")
    gflops, gbs = shape["flops"] / med / 1e9, shape["kv_bytes"] / med / 1e9
    limit = machine["fma_gflops"] if shape["bound"] == "compute" else machine["mem_read_gbs"]
    rate = gflops if shape["bound"] == "compute" else gbs
    s = dict(shape, status="OK", message="", reps=reps, times_s=times, median_s=med,
             min_s=min(times), iqr_s=sig(q[2] - q[0], 4), gflops=sig(gflops, 4),
             kv_gbs=sig(gbs, 4), pct_limit=sig(100 * rate / limit, 4),
             peak_rss_bytes=3 * shape["io_bytes"] + (40 << 20), validated_rows=64,
             max_err_ratio=0.21)
    return s


def untimed(shape, status, message):
    return dict(shape, status=status, message=message, reps=0, times_s=[], median_s=None,
                min_s=None, iqr_s=None, gflops=None, kv_gbs=None, pct_limit=None,
                peak_rss_bytes=None, validated_rows=0, max_err_ratio=None)


def run(suite, label, seed, machine=MACHINE, slow=None, reps=None, time_scale=1.0, status=None,
        names=None):
    """One bench file.  slow: {backend: factor}; reps: {backend: n}; status: {(backend, id):
    (STATUS, message)} replacing a shape's outcome; names: the backends, when not the suite's."""
    rng = random.Random(seed)
    slow, reps, status = slow or {}, reps or {}, status or {}
    backends = []
    names = names or (["cpu", "reference", "onnxruntime-opset23"] if suite == "prefill" else
                      ["cpu", "reference"])
    for name in names:
        k, factor = kind(name)
        shapes = []
        if suite == "prefill":
            geo = [prefill_shape(L, dt) for L in (256, 1024) for dt in ("f32", "f16")]
        else:
            geo = [decode_shape(lk, dt) for lk in (1024, 8192) for dt in ("f32", "f16")]
        for g in geo:
            n = reps.get(name, REPS[k])
            if suite == "prefill":
                ideal = g["flops"] / (PREFILL_RATE[k][g["dtype"]] * 1e9)
            else:
                ideal = g["kv_bytes"] / (DECODE_RATE[k] * 1e9) * (1.1 if g["dtype"] ==
                                                                 "f32" else 1.0)
            ideal *= slow.get(name, 1.0) * time_scale * factor
            key = (name, g["id"])
            if k == "reference" and g["flops"] > 5e9:
                shapes.append(untimed(g, "SKIPPED",
                                      f"over --max-gflop 5 ({g['flops'] / 1e9:.1f} GFLOP)"))
            elif k == "onnxruntime-opset23" and g["id"] == "prefill.causal.L1024.f16":
                shapes.append(untimed(g, "NOT_SUPPORTED",
                                      "backend lacks capability sdpa.causal_offset"))
            elif key in status:
                st, msg = status[key]
                s = timed(g, ideal, n, rng, machine)
                s.update(status=st, message=msg)
                shapes.append(s)
            else:
                shapes.append(timed(g, ideal, n, rng, machine))
        be = {"name": name, "version": VERSION[k], "options": OPTIONS[k]}
        if TIMING[k]:
            be["timing"] = TIMING[k]
        backends.append(dict(be, shapes=shapes))
    return {"attnconf_bench": 1, "suite": suite, "suite_file": f"perf/suites/{suite}.yaml",
            "label": label, "started": "2026-12-01T01:02:03Z", "machine": machine,
            "config": CONFIG, "backends": backends}


def curve_point(curve, x, dtype, t, kind, reps=3, beside=None):
    """One shape of the curves fixture, timed exactly t seconds on every repetition (beside: the
    read bandwidth bench measured beside it, GB/s)."""
    hkv, d = 8, 128
    if kind == "prefill":
        hq, b, lq, lk = 8, 1, x, x
        pairs = hq * x * (x + 1) // 2
    elif kind == "decode":
        hq, b, lq, lk = 32, 1, 1, x
        pairs = hq * x
    else:  # batch sweep of decode at Lk 8192
        hq, b, lq, lk = 32, x, 1, 8192
        pairs = b * hq * lk
    bound = "compute" if kind == "prefill" else "memory"
    g = {"id": f"curves.{curve}.{x}.{dtype}", "dtype": dtype, "b": b, "hq": hq, "hkv": hkv,
         "lq": lq, "lk": lk, "d": d, "dv": d, "causal": kind == "prefill", "window": 0,
         "bound": bound, "curve": curve, "via": "params", "visible_pairs": pairs,
         "flops": float(2 * (d + d) * pairs), "kv_bytes": b * hkv * lk * (d + d) * ESIZE[dtype],
         "io_bytes": (b * hq * lq * 2 + b * hkv * lk * 2) * d * ESIZE[dtype]}
    if t is None:
        return untimed(g, "SKIPPED", "over --max-gflop 3 (9.1 GFLOP)")
    gflops, gbs = g["flops"] / t / 1e9, g["kv_bytes"] / t / 1e9
    rate, limit = (gflops, MACHINE["fma_gflops"]) if bound == "compute" else \
        (gbs, MACHINE["mem_read_gbs"])
    if beside is not None:
        limit = beside
    p = dict(g, status="OK", message="", reps=reps, times_s=[t] * reps, median_s=t, min_s=t,
             iqr_s=0.0, gflops=gflops, kv_gbs=gbs, pct_limit=100 * rate / limit,
             peak_rss_bytes=3 * g["io_bytes"] + (40 << 20), validated_rows=64,
             max_err_ratio=0.2)
    if beside is not None:
        p.update(read_gbs_beside=beside, read_beside_passes=5)
    return p


def curves_file():
    """The cost-curve fixture (see the top comment): times are exact, no noise."""
    curves = [{"name": "prefill-causal", "x": "lk", "expect": 2.0},
              {"name": "decode-b1", "x": "lk", "expect": 1.0},
              {"name": "decode-slow", "x": "lk", "expect": 1.0},
              {"name": "decode-dip", "x": "lk", "expect": 1.0},
              {"name": "decode-beside", "x": "lk", "expect": 1.0},
              {"name": "batch-decode", "x": "batch", "expect": 1.0}]
    cpu, ref = [], []
    for L in (128, 256, 512, 1024, 2048, 4096):
        cpu.append(curve_point("prefill-causal", L, "f32", 3e-8 * L * L, "prefill"))
    for L in (128, 256, 512, 1024, 2048, 4096):
        # The rate drops 25 % from 1024 to 2048 and stays there: one cliff.
        t = 2.5e-8 * L * L / (0.75 if L >= 2048 else 1)
        cpu.append(curve_point("prefill-causal", L, "f16", t, "prefill"))
    for lk in (1024, 2048, 4096, 8192, 16384, 32768):
        cpu.append(curve_point("decode-b1", lk, "f32", 8e-7 * lk, "decode"))
    for lk in (1024, 2048, 4096, 8192, 16384, 32768):
        # A 15 % drop from 4096 to 8192: under the 20 % rule.
        t = 4.4e-7 * lk / (0.85 if lk >= 8192 else 1)
        cpu.append(curve_point("decode-b1", lk, "f16", t, "decode"))
    for lk in (1024, 2048, 4096, 8192, 16384, 32768):
        # k = 1.3 where 1 is expected: each doubling loses 19 % of the rate (no cliff).
        cpu.append(curve_point("decode-slow", lk, "f32", 6e-8 * lk ** 1.3, "decode"))
    for lk in (1024, 2048, 4096, 8192, 16384):
        # One slow size (30 % below the rate around it): a cliff, back at the next size.
        t = 8e-7 * lk / (0.7 if lk == 4096 else 1)
        cpu.append(curve_point("decode-dip", lk, "f32", t, "decode"))
    for lk in (1024, 2048, 4096, 8192, 16384):
        # 40 GB/s beside 50 read; at 4096 both 30 % lower (another tenant: not a cliff), at 16384
        # the share of the bandwidth beside 25 % lower (a cliff).
        t = lk * 8 * 256 * 4 / 40e9 / (0.7 if lk == 4096 else 0.75 if lk == 16384 else 1)
        cpu.append(curve_point("decode-beside", lk, "f32", t, "decode",
                               beside=35.0 if lk == 4096 else 50.0))
    for b in (1, 2, 4, 8, 16):
        cpu.append(curve_point("batch-decode", b, "f32", 6e-3 * b if b != 16 else None, "batch"))
    ref.append(curve_point("prefill-causal", 128, "f32", 0.026, "prefill", reps=10))
    ref.append(curve_point("prefill-causal", 256, "f32", None, "prefill"))
    backends = [{"name": "cpu", "version": "0.1.0", "options": {"threads": "2"},
                 "timing": "in-process", "shapes": cpu},
                {"name": "reference", "version": "0.1.0", "options": {}, "shapes": ref}]
    return {"attnconf_bench": 1, "suite": "curves", "suite_file": "perf/suites/curves.yaml",
            "label": "synthetic cost curves", "started": "2026-12-01T01:02:03Z",
            "curves": curves, "machine": MACHINE,
            "config": dict(CONFIG, min_reps=3), "backends": backends}


def paged_file():
    """The paged fixture: every repetition of a shape takes exactly its ideal time."""
    def shape(dtype, page_size, t, status="OK"):
        g = decode_shape(8192, dtype)
        if page_size:
            g = dict(g, id=f"paged.P{page_size}.B1.Lk8192.{dtype}", page_size=page_size)
        if status != "OK":
            return untimed(g, status, "backend lacks capability paged" if status ==
                           "NOT_SUPPORTED" else "row 0: error 9.1x the clause-13 bound")
        return timed(g, t, 5, None, MACHINE)
    cpu, ref, only = [], [], []
    for dt, t in (("f32", 4.0e-3), ("f16", 2.5e-3)):
        cpu += [shape(dt, 0, t), shape(dt, 16, t / 0.8),
                shape(dt, 128, t, "INCORRECT" if dt == "f16" else "OK")]
        ref += [shape(dt, 0, 20 * t), shape(dt, 16, 0, "NOT_SUPPORTED"),
                shape(dt, 128, 0, "NOT_SUPPORTED")]
        only += [shape(dt, 0, 0, "NOT_SUPPORTED"), shape(dt, 16, 2 * t),
                 shape(dt, 128, 2 * t)]
    return {"attnconf_bench": 1, "suite": "paged", "suite_file": "perf/suites/paged.yaml",
            "label": "paged fixture", "started": "2026-12-01T01:02:03Z", "machine": MACHINE,
            "config": CONFIG,
            "backends": [{"name": "cpu", "version": "0.1.0", "options": OPTIONS["cpu"],
                          "timing": "in-process", "shapes": cpu},
                         {"name": "reference", "version": "0.1.0", "options": {},
                          "shapes": ref},
                         {"name": "paged-only", "version": "0.1.0", "options": {},
                          "timing": "adapter", "shapes": only}]}


def beside_file():
    """A decode run whose cpu shapes have the read bandwidth bench measured beside their
    repetitions (read_gbs_beside: their % of limit is of it) and whose reference shapes, as in
    a file from before that figure, have none (their % is of the machine's 18.1 GB/s).  Every
    repetition takes exactly its time."""
    cpu, ref = [], []
    for lk, dt, t, bw in ((1024, "f32", 1.0e-3, 20.0), (8192, "f16", 3.2e-3, 25.0)):
        g = decode_shape(lk, dt)
        cpu.append(dict(timed(g, t, 5, None, MACHINE), read_gbs_beside=bw,
                        read_beside_passes=2))
        ref.append(timed(g, 10 * t, 5, None, MACHINE))
    return {"attnconf_bench": 1, "suite": "decode", "suite_file": "perf/suites/decode.yaml",
            "label": "read bandwidth beside", "started": "2026-12-01T01:02:03Z",
            "machine": MACHINE, "config": CONFIG,
            "backends": [{"name": "cpu", "version": "0.1.0", "options": OPTIONS["cpu"],
                          "timing": "in-process", "shapes": cpu},
                         {"name": "reference", "version": "0.1.0", "options": {},
                          "shapes": ref}]}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                             "fixtures")
    os.makedirs(out, exist_ok=True)
    other = dict(MACHINE, cpu_model="AMD EPYC 9654 96-Core Processor", cores=4,
                 fma_gflops=362.6, mem_read_gbs=36.2)
    incorrect = {("cpu", "prefill.causal.L1024.f16"):
                 ("INCORRECT", "row 17 of q head 3: error 3.2x the clause-13 bound")}
    files = {
        "base.json": run("prefill", "base (commit a1b2c3d)", 1),
        "rerun.json": run("prefill", "rerun of a1b2c3d", 2),
        "slow10.json": run("prefill", "cpu slowdown=0.10", 3, slow={"cpu": 1.10}),
        "slow3.json": run("prefill", "cpu slowdown=0.03", 4, slow={"cpu": 1.03}),
        "status.json": run("prefill", "broken f16 kernel", 5, status=incorrect),
        "othermachine.json": run("prefill", "a1b2c3d on a bigger machine", 6, machine=other,
                                 time_scale=0.5),
        "underload.json": run("prefill", "rerun of a1b2c3d, its limits measured under load", 17,
                              machine=dict(MACHINE, fma_gflops=MACHINE["fma_gflops"] * 0.75)),
        "fewreps.json": run("prefill", "3 repetitions", 7, slow={"cpu": 1.20},
                            reps={"cpu": 3}),
        "decode.json": run("decode", "base (commit a1b2c3d)", 8),
        "wide.json": run("prefill", "thirteen backends", 12, names=WIDE),
        "pages-base.json": run("decode", "4 KiB pages", 15,
                               machine=dict(MACHINE, thp_mode="madvise", huge_pages=False)),
        "pages-huge.json": run("decode", "bench --huge-pages", 16,
                               machine=dict(MACHINE, thp_mode="madvise", huge_pages=True)),
    }
    files["curves.json"] = curves_file()
    files["paged.json"] = paged_file()
    files["beside.json"] = beside_file()
    only = beside_file()
    only["backends"] = only["backends"][:1]
    only["label"] = "read bandwidth beside, cpu only"
    files["beside-all.json"] = only
    bad = beside_file()
    bad["backends"][0]["shapes"][1]["read_gbs_beside"] = 0
    files["bad-beside.json"] = bad
    bad = curves_file()
    bad["backends"][0]["shapes"][2]["curve"] = "nosuch"
    files["bad-curve.json"] = bad
    # A curve's points must be alike but for its size, one per size and dtype, as bench checks a
    # suite; a hand-edited file gets a field error (cpu's decode-b1 f32 points: Lk 1024 ... 32768).
    def small_curves(edit):
        f = curves_file()
        f["backends"] = [dict(f["backends"][0], shapes=[
            sh for sh in f["backends"][0]["shapes"]
            if sh["curve"] == "decode-b1" and sh["dtype"] == "f32"])]
        edit(f, f["backends"][0]["shapes"])
        return f
    files["bad-curve-missing.json"] = small_curves(lambda f, sh: sh[1].pop("curve"))
    files["bad-curve-twice.json"] = small_curves(
        lambda f, sh: sh[2].update(lk=sh[1]["lk"], id="curves.decode-b1.copy.f32"))
    files["bad-curve-unlike.json"] = small_curves(lambda f, sh: sh[3].update(hq=16))
    files["bad-curve-expect.json"] = small_curves(lambda f, sh: f["curves"][1].update(expect=1e300))
    files["curves-untimed.json"] = small_curves(lambda f, sh: sh.__setitem__(
        slice(None), [untimed(x, "SKIPPED", "over --max-gflop 3") for x in sh]))
    base = files["base.json"]
    # The suite changed: the reference not run, cpu lost one shape and gained one, and one
    # shape's geometry was edited under the same id.
    part = run("prefill", "edited suite", 10)
    del part["backends"][1]
    cpu = part["backends"][0]["shapes"]
    del cpu[3]
    extra = timed(prefill_shape(2048, "f32"), 0.98, 12, random.Random(11), MACHINE)
    cpu.append(extra)
    ort = part["backends"][1]["shapes"]
    ort[0] = dict(ort[0], hq=16, visible_pairs=ort[0]["visible_pairs"] // 2)
    files["partial.json"] = part
    bad = copy.deepcopy(base)
    del bad["machine"]["fma_gflops"]
    files["bad-missing-key.json"] = bad
    bad = copy.deepcopy(base)
    bad["backends"][0]["shapes"][1]["times_s"] = "0.1 0.2"
    files["bad-type.json"] = bad
    bad = copy.deepcopy(base)
    bad["backends"][0]["shapes"][0]["reps"] = 13
    files["bad-reps.json"] = bad
    bad = copy.deepcopy(base)
    bad["backends"][2]["shapes"][0]["status"] = "FAST"
    files["bad-status.json"] = bad
    bad = copy.deepcopy(base)
    bad["backends"][2]["timing"] = "pipe"
    files["bad-timing.json"] = bad
    # cpu's and the reference's shapes renamed, twice: more one-sided shapes than perf-compare
    # lists; onnxruntime-opset23's kept, so the runs still have shapes in common.
    ren = copy.deepcopy(base)
    for be in ren["backends"][:2]:
        be["shapes"] = [dict(x, id=x["id"] + sfx) for sfx in (".a", ".b") for x in be["shapes"]]
    files["renamed.json"] = ren
    # A run that timed nothing: no shape in common with any other, which perf-compare refuses.
    files["empty.json"] = dict(copy.deepcopy(base), label="no backend", backends=[])
    bad = copy.deepcopy(base)
    bad["machine"]["huge_pages"] = "yes"
    files["bad-huge-pages.json"] = bad
    bad = copy.deepcopy(base)
    bad["backends"][0]["shapes"][0]["times_s"] = [0.0] * bad["backends"][0]["shapes"][0]["reps"]
    files["bad-zero-time.json"] = bad
    bad = paged_file()
    bad["backends"][0]["shapes"][1]["page_size"] = 0
    files["bad-page-size.json"] = bad
    # hyperfine --export-json of two commands (perf/hyperfine), for perf-report --hyperfine.
    rng = random.Random(9)
    results = []
    # The cpu run fails a case every time (exit 1): still timed (hyperfine -i), and said so.
    for cmd, ideal, code in (("build/default/conformance/attnconf run --backend reference "
                              "--cases cases --format json", 41.0, 0),
                             ("build/default/conformance/attnconf run --backend cpu --cases "
                              "cases --format json", 12.5, 1)):
        times = [sig(ideal * math.exp(rng.gauss(0, 0.02)), 6) for _ in range(5)]
        results.append({"command": cmd, "mean": sig(statistics.mean(times), 6),
                        "stddev": sig(statistics.stdev(times), 4),
                        "median": statistics.median(times), "user": sig(ideal * 1.8, 4),
                        "system": sig(ideal * 0.1, 4), "min": min(times), "max": max(times),
                        "times": times, "exit_codes": [code] * 5})
    files["hyperfine.json"] = {"results": results}
    for name, doc in files.items():
        with open(os.path.join(out, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
