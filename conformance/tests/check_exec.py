#!/usr/bin/env python3
"""check_exec.py -- ctest scenarios for `exec:` adapters and backend options (standard library).

    check_exec.py --harness ATTNCONF --cases DIR --workdir DIR [--python PY]
                  [--options-backend SO] SCENARIO

Each scenario runs the harness, asserts on exit status, per-case statuses (from --format json)
and messages, and on what was left behind (adapter processes, zombies).  It exits 0 or prints
what went wrong and exits 1.  The adapter is tests/adapters/bad_adapter.py (see its modes).
"""

import argparse
import collections
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER = os.path.join(HERE, "adapters", "bad_adapter.py")
F32_NOMASK = ["sdpa.nomask.basic.f32", "sdpa.nomask.d1.f32", "sdpa.nomask.large_logits_neg.f32",
              "sdpa.nomask.large_logits_pos.f32", "sdpa.nomask.lk113.f32"]
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAILED: " + what)


def backend(args, mode, *extra):
    words = [args.python, ADAPTER, mode] + list(extra)
    return "exec:" + " ".join(shlex.quote(w) for w in words)


def run(args, cmd, env=None, timeout=120, watch_zombies=False):
    """Run the harness; returns (rc, stdout, stderr, seconds, zombies seen)."""
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    zombies = set()
    if watch_zombies:
        seen = set()
        while p.poll() is None:
            now = set(zombie_children(p.pid))
            zombies |= now & seen  # seen twice, 0.2 s apart: not the instant before a reap
            seen = now
            time.sleep(0.2)
    so, se = p.communicate(timeout=timeout)
    secs = time.monotonic() - t0
    print("exit %d after %.1f s\n--- stdout ---\n%s--- stderr ---\n%s" % (p.returncode, secs, so,
                                                                          se), flush=True)
    return p.returncode, so, se, secs, zombies


def zombie_children(ppid):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z" and int(fields[1]) == ppid:
            out.append(int(d))
    return out


def results(args, json_path):
    with open(json_path) as f:
        doc = json.load(f)
    return doc, {r["id"]: r for r in doc["results"]}


def json_run(args, be, filt, *extra, env=None, watch_zombies=False, name="run"):
    out = os.path.join(args.workdir, name + ".json")
    if os.path.exists(out):
        os.remove(out)
    cmd = [args.harness, "run", "--backend", be, "--cases", args.cases, "--filter", filt,
           "--format", "json", "--out", out] + list(extra)
    rc, so, se, secs, z = run(args, cmd, env=env, watch_zombies=watch_zombies)
    doc, res = results(args, out) if os.path.exists(out) else ({}, {})
    return rc, so + se, secs, z, doc, res


def statuses(res, ids, status, msg_re=None):
    for i in ids:
        r = res.get(i)
        check(r is not None, "case %s ran" % i)
        if r is None:
            continue
        check(r["status"] == status, "%s is %s (got %s: %s)" % (i, status, r["status"],
                                                              r["message"]))
        if msg_re:
            check(re.search(msg_re, r["message"]) is not None,
                  "%s message matches %r (got %r)" % (i, msg_re, r["message"]))


def pid_env(args, name):
    """An empty pid file in the scenario's workdir and the environment that makes every adapter
    start append its pid to it."""
    pidfile = os.path.join(args.workdir, name + ".pids")
    open(pidfile, "w").close()
    return pidfile, dict(os.environ, BAD_ADAPTER_PIDS=pidfile)


def pids_gone(pidfile):
    """Every adapter the harness started is gone (killed or exited, and not left running)."""
    with open(pidfile) as f:
        pids = [int(x) for x in f.read().split()]
    check(len(pids) >= 1, "the adapter recorded its pid")
    for pid in pids:
        alive = True
        for _ in range(50):  # a killed process may take a moment to disappear
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                alive = False
                break
            time.sleep(0.05)
        check(not alive, "adapter pid %d is not running after the harness exited" % pid)
    return pids


# ---- scenarios -------------------------------------------------------------------------------

def s_ok(args):
    """A correct adapter passes real cases end to end; options reach hello; JSON records them."""
    pidfile, env = pid_env(args, "ok")
    rc, out, _, _, doc, res = json_run(args, backend(args, "ok"), "sdpa.nomask.*",
                                       "--backend-option", "device=cpu", env=env)
    check(rc == 0, "exit 0 (got %d)" % rc)
    check(len(pids_gone(pidfile)) == 1, "one adapter for the whole run, gone after `close`")
    statuses(res, F32_NOMASK, "PASS")
    statuses(res, ["sdpa.nomask.basic.f16", "sdpa.nomask.basic.bf16"], "NOT_SUPPORTED")
    check(doc.get("backend", {}).get("name") == "bad_adapter", "backend name from hello")
    check(doc.get("backend", {}).get("version") == "bad_adapter 1 (ok)", "version from hello")
    check(doc.get("backend_options") == "device=cpu", "backend_options recorded")
    # Strided inputs, causal with offset, GQA and a must-reject case through the same pipe.
    # The numpy adapter computes in Python loops: the families of large shapes (paths, sizes,
    # MLA) would take most of the test's minute without checking anything new here.
    rc, out, _, _, doc, res = json_run(args, backend(args, "ok"), "sdpa.*.f32", "--exclude",
                                       "sdpa.*paths.*", "--exclude", "sdpa.terms.mla.*",
                                       "--exclude", "sdpa.sizes.lk1025*", name="run2")
    check(rc == 0, "exit 0 on sdpa.*.f32 (got %d)" % rc)
    statuses(res, ["sdpa.strided.blhd_all.f32", "sdpa.scale.negative.f32",
                   "sdpa.fully_masked.lk0.f32", "sdpa.sizes.lk113_d80_dv64.f32"], "PASS")
    statuses(res, ["sdpa.invalid.head_dim_mismatch.f32"], "EXPECTED_ERROR", "shapes")
    # build_mask: every mask family, must-reject cases included (mask.terms needs the
    # fifth-revision capabilities: the terms scenario).
    rc, out, _, _, doc, res = json_run(args, backend(args, "ok"), "mask.*", "--exclude",
                                       "mask.terms.*", name="run3")
    check(rc == 0, "exit 0 on mask.* (got %d)" % rc)
    check(len(res) >= 10, "the mask families ran (%d cases)" % len(res))
    check(all(r["status"] in ("PASS", "EXPECTED_ERROR") for r in res.values()),
          "every mask case passes: %s" % sorted((i, r["status"]) for i, r in res.items()
                                                 if r["status"] not in ("PASS",
                                                                        "EXPECTED_ERROR")))
    check(sum(r["status"] == "EXPECTED_ERROR" for r in res.values()) >= 1,
          "a must-reject mask case is rejected through the pipe")


def s_params(args):
    """The sdpa mask parameters (SPEC clause 19) cross the protocol: window, lengths and left
    padding reach an adapter that lists them, and their must-reject cases are rejected there."""
    rc, out, _, _, doc, res = json_run(args, backend(args, "ok"),
                                       "sdpa.params.[wlci]*.f32", name="params")
    check(rc == 0, "exit 0 on the small f32 sdpa.params cases (got %d)" % rc)
    by = collections.Counter(r["status"] for r in res.values())
    check(by["PASS"] >= 6, "window, lengths and left-padding cases pass: %s" % dict(by))
    check(by["EXPECTED_ERROR"] >= 6, "invalid parameters are rejected by the adapter: %s" % dict(by))
    check(by["FAIL"] + by["ERROR"] == 0, "nothing fails: %s" % sorted(
        (i, r["status"], r["message"]) for i, r in res.items()
        if r["status"] in ("FAIL", "ERROR")))


NONFINITE_SCALE_CASE = """attnconf_case: 4
id: sdpa.fixture.scale_%(name)s.f32
description: "A non-finite explicit scale (%(yaml)s) is rejected; it reaches an exec adapter as a string."
rules: [clause2.explicit_scale]
op: sdpa
requires: [f32, scale]
params: {scale: %(yaml)s, causal: false}
inputs:
  q: {dtype: f32, shape: [1, 1, 2, 4], generate: {kind: uniform, seed: 1, lo: -1.0e+00, hi: 1.0e+00}}
  k: {dtype: f32, shape: [1, 1, 3, 4], generate: {kind: uniform, seed: 2, lo: -1.0e+00, hi: 1.0e+00}}
  v: {dtype: f32, shape: [1, 1, 3, 4], generate: {kind: uniform, seed: 3, lo: -1.0e+00, hi: 1.0e+00}}
expected:
  error: einval
"""


def s_nonfinite_scale(args):
    """NaN and infinite scales cross the protocol as "nan"/"inf"/"-inf" (JSON has no such
    numbers) and reach the adapter, which rejects them as SPEC clause 2 requires."""
    cases = os.path.join(args.workdir, "cases")
    os.makedirs(cases, exist_ok=True)
    for name, text in (("nan", ".nan"), ("inf", ".inf"), ("neg_inf", "-.inf")):
        with open(os.path.join(cases, name + ".yaml"), "w") as f:
            f.write(NONFINITE_SCALE_CASE % {"name": name, "yaml": text})
    args.cases = cases
    rc, out, _, _, doc, res = json_run(args, backend(args, "ok"), "sdpa.fixture.*")
    check(rc == 0, "exit 0 (got %d): %s" % (rc, out[-400:]))
    statuses(res, ["sdpa.fixture.scale_nan.f32"], "EXPECTED_ERROR", r"scale nan is not finite")
    statuses(res, ["sdpa.fixture.scale_inf.f32"], "EXPECTED_ERROR", r"scale inf is not finite")
    statuses(res, ["sdpa.fixture.scale_neg_inf.f32"], "EXPECTED_ERROR",
             r"scale -inf is not finite")


def s_seconds(args):
    """An sdpa reply's optional "seconds" (PROTOCOL.md): a good one is accepted and changes
    nothing in `run`; one that is not a finite number >= 0, or is longer than the whole exchange
    took, breaks the protocol: that case is an ERROR naming the value, the next case a fresh
    adapter."""
    rc, out, _, _, _, res = json_run(args, backend(args, "timed"), "sdpa.nomask.*")
    check(rc == 0, "exit 0 with seconds in every reply (got %d)" % rc)
    statuses(res, F32_NOMASK, "PASS")
    bad = (("-1", r'"seconds" -1 is not a finite number >= 0'),
           ('"0.5"', r'"seconds" is a string, not a number of seconds'),
           ("null", r'"seconds" is null, not a number of seconds'),
           ("3600", r'"seconds" 3600 is longer than the whole exchange took \([0-9.e-]+ s\)'))
    for n, (value, msg) in enumerate(bad):
        rc, out, _, _, _, res = json_run(args, backend(args, "bad_seconds", value),
                                         "sdpa.nomask.*", name="bad%d" % n)
        check(rc == 1, "seconds %s: exit 1 (got %d)" % (value, rc))
        statuses(res, F32_NOMASK, "ERROR", r"^adapter failure: adapter reply: reply to sdpa: "
                 + msg)
        statuses(res, ["sdpa.nomask.basic.f16"], "NOT_SUPPORTED")


def s_die(args):
    """Dies in every sdpa: each case is an ERROR quoting the exit status and stderr, the run goes
    on (a fresh adapter per case), NOT_SUPPORTED cases still come after."""
    rc, out, _, _, _, res = json_run(args, backend(args, "die"), "sdpa.nomask.*")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, F32_NOMASK, "ERROR", r"^adapter failure: adapter exited with status 3: "
             r"bad_adapter\(die\): dying in the middle of sdpa$")
    statuses(res, ["sdpa.nomask.lk1025.f16"], "NOT_SUPPORTED")


def s_fork_die(args):
    """Forks a child that keeps stdout open, then dies: the exit status is quoted at once (not
    a timeout), and the child goes with the adapter's process group."""
    pidfile, env = pid_env(args, "fork_die")
    rc, out, secs, _, _, res = json_run(args, backend(args, "fork_die"), "sdpa.nomask.basic.f32",
                                        "--timeout", "30", env=env)
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.nomask.basic.f32"], "ERROR", r"^adapter failure: adapter exited with "
             r"status 3: bad_adapter\(fork_die\): dying in the middle of sdpa, a child holding "
             r"stdout$")
    check(secs < 20, "reported in seconds, not at the 30 s timeout (%.1f s)" % secs)
    pids_gone(pidfile)


def s_die_must_reject(args):
    """A crash in a case that must be rejected is an ERROR, never a correct rejection."""
    rc, out, _, _, _, res = json_run(args, backend(args, "die"),
                                     "sdpa.invalid.head_dim_mismatch.f32")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.invalid.head_dim_mismatch.f32"], "ERROR", r"^adapter failure: ")


def s_die_once(args):
    """Dies on the first sdpa only: that case is an ERROR, the restarted adapter passes the rest;
    the printed rerun command (with its exec: backend) re-runs the case, which now passes."""
    state = os.path.join(args.workdir, "die_once.state")
    if os.path.exists(state):
        os.remove(state)
    rc, out, _, _, _, res = json_run(args, backend(args, "die_once", state), "sdpa.nomask.*")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, F32_NOMASK[:1], "ERROR", r"adapter exited with status 3")
    statuses(res, F32_NOMASK[1:], "PASS")
    rerun = res.get(F32_NOMASK[0], {}).get("rerun", "")
    check("--backend 'exec:" in rerun, "rerun quotes the exec: backend (%r)" % rerun)
    rc, so, se, _, _ = run(args, ["sh", "-c", rerun])
    check(rc == 0 and re.search(r"PASS +%s" % re.escape(F32_NOMASK[0]), so) is not None,
          "the rerun command re-runs the case and it passes")


def s_hang(args):
    """Never replies: --timeout 1 turns each call into an ERROR within about a second, the
    adapters are killed (none left running, no zombie children while the run goes on)."""
    pidfile, env = pid_env(args, "hang")
    rc, out, secs, zombies, _, res = json_run(args, backend(args, "hang"), "sdpa.nomask.*",
                                              "--timeout", "1", env=env, watch_zombies=True)
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, F32_NOMASK, "ERROR", r"^adapter failure: adapter timed out after 1 s waiting "
             r"for the reply to sdpa \(adapter stderr: bad_adapter\(hang\): hanging in sdpa\)$")
    check(secs < 5 * 1 + 10, "finished in seconds (%.1f s)" % secs)
    check(not zombies, "no zombie children during the run (%s)" % sorted(zombies))
    pids = pids_gone(pidfile)
    check(len(pids) == len(F32_NOMASK), "one adapter per f32 case: the first, then a restart "
          "after each timed-out case but the last (%d pids)" % len(pids))


def s_interrupted(args):
    """The harness is interrupted (SIGINT, as Ctrl-C sends to the terminal's foreground group,
    which the adapter is not in) while a hung adapter is in flight: the harness takes the
    adapter's process group down before dying of the signal, so nothing is left running."""
    pidfile, env = pid_env(args, "interrupted")
    cmd = [args.harness, "run", "--backend", backend(args, "hang"), "--cases", args.cases,
           "--filter", "sdpa.nomask.basic.f32"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    for _ in range(200):  # until the adapter has started (it records its pid)
        if open(pidfile).read().strip():
            break
        time.sleep(0.05)
    time.sleep(0.3)  # into the hung sdpa call
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)
    check(p.returncode == -signal.SIGINT, "the harness died of SIGINT (rc %d)" % p.returncode)
    pids_gone(pidfile)


def s_garbage(args):
    rc, out, _, _, _, res = json_run(args, backend(args, "garbage"), "sdpa.nomask.basic.*")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.nomask.basic.f32"], "ERROR",
             r"adapter reply: header to sdpa is not a JSON object .*'this is not json'")


def s_badnbytes(args):
    rc, out, _, _, _, res = json_run(args, backend(args, "badnbytes"), "sdpa.nomask.d1.f32")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.nomask.d1.f32"], "ERROR",
             r"adapter reply: tensor 'out': nbytes 12 does not match f32 \(1,1,4,1\)")


def s_bad_strides(args):
    """A reply keeps the dense rule (PROTOCOL.md): out strides that repeat or skip elements are
    the adapter's protocol error (ERROR, naming them), not a FAIL blaming it for writing past
    its output; a stride on an extent of 1 is free, so that reply still passes."""
    case = "sdpa.causal.decode_lq1_lk5.f32"  # out (1,2,1,8), f32: dense strides [16,8,8,1]
    for i, strides in enumerate(["[0,0,0,0]", "[1000000,1,1,1]"]):
        rc, out, _, _, _, res = json_run(args, backend(args, "bad_strides", strides), case,
                                         name="bad_strides%d" % i)
        check(rc == 1, "strides %s: exit 1 (got %d)" % (strides, rc))
        statuses(res, [case], "ERROR",
                 r"^adapter failure: adapter reply: tensor 'out': strides %s are not the dense "
                 r"strides \[16,8,8,1\] of shape \(1,2,1,8\), nor a permutation of its axes"
                 % re.escape(strides))
    rc, out, _, _, _, res = json_run(args, backend(args, "bad_strides", "[1000000,8,5,1]"), case,
                                     name="bad_strides_free")
    check(rc == 0, "strides [1000000,8,5,1] (free where the extent is 1): exit 0 (got %d)" % rc)
    statuses(res, [case], "PASS")


def s_stdout_noise(args):
    rc, out, _, _, _, res = json_run(args, backend(args, "stdout_noise"), "sdpa.nomask.d1.f32")
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.nomask.d1.f32"], "ERROR",
             r"'loading weights\.\.\.' \(stdout must carry only the protocol; log to stderr\)")


def s_sigpipe(args):
    """The adapter closes its stdin and exits right after hello; the harness then writes a 4 MB
    request into a pipe nobody reads: EPIPE, not death by SIGPIPE."""
    pidfile, env = pid_env(args, "sigpipe")
    rc, out, secs, _, _, res = json_run(args, backend(args, "close_stdin"),
                                        "sdpa.sizes.lk1025_d256_dv256.f32", env=env)
    check(rc == 1, "exit 1, not killed by SIGPIPE (got %d)" % rc)
    statuses(res, ["sdpa.sizes.lk1025_d256_dv256.f32"], "ERROR",
             r"^adapter failure: adapter exited with status 0: .*closed stdin")
    pids_gone(pidfile)


def s_refuse_hello(args):
    cmd = [args.harness, "run", "--backend", backend(args, "refuse_hello"), "--cases", args.cases]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 1, "exit 1 (got %d)" % rc)
    check(re.search(r"attnconf: exec:.*bad_adapter\.py refuse_hello: adapter refused hello: "
                    r"refusing hello on purpose", se) is not None, "load error on stderr")
    check("PASS" not in so and "ERROR" not in so, "no case ran")


def s_option_refused(args):
    cmd = [args.harness, "run", "--backend", backend(args, "ok"), "--cases", args.cases,
           "--backend-option", "device=gpu"]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 1, "exit 1 (got %d)" % rc)
    check("adapter refused hello: device 'gpu' is not available (cpu only)" in se,
          "the adapter's refusal is quoted")


def s_bad_caps(args):
    cmd = [args.harness, "run", "--backend", backend(args, "bad_caps"), "--cases", args.cases]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 1, "exit 1 (got %d)" % rc)
    check("hello: unknown capability 'f64'" in se, "unknown capability named")


def s_no_such_command(args):
    cmd = [args.harness, "run", "--backend", "exec:/nonexistent/adapter --flag", "--cases",
           args.cases]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 1, "exit 1 (got %d)" % rc)
    check(re.search(r"exec:/nonexistent/adapter --flag: adapter exited with status 127: "
                    r".*/nonexistent/adapter: not found", se) is not None,
          "the shell's complaint is quoted")


def s_backend_info(args):
    cmd = [args.harness, "backend-info", "--backend", backend(args, "ok"), "--backend-option",
           "device=cpu"]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 0, "exit 0 (got %d)" % rc)
    check("name: bad_adapter\n" in so, "name")
    check("version: bad_adapter 1 (ok)\n" in so, "version")
    check("capabilities: f32, causal, causal.offset, gqa, dv_ne_d, strided, scale, build_mask, "
          "window, lengths, left_padding, sdpa.window, sdpa.lengths, sdpa.left_padding, mask.kv_len\n" in so,
          "capability names")
    check("  device (default: cpu): cpu only (a test adapter)\n" in so, "options with default "
          "and help")
    check(re.search(r"^path: .*bad_adapter\.py ok$", so, re.M) is not None,
          "path is the command line")


def s_options_rerun(args):
    """Part 1: a failing case's rerun command carries --backend-option (quoted) and re-runs the
    same configuration: the plugin reports the same options both times."""
    out = os.path.join(args.workdir, "options_rerun.json")
    cmd = [args.harness, "run", "--backend", args.options_backend, "--cases", args.cases,
           "--filter", "sdpa.nomask.basic.f32", "--backend-option", "mode=ok",
           "--backend-option", "label=it's a b", "--format", "json", "--out", out]
    rc, so, se, _, _ = run(args, cmd)
    check(rc == 1, "exit 1 (got %d)" % rc)
    doc, res = results(args, out)
    want = "options_test received mode=ok label=it's a b"
    statuses(res, ["sdpa.nomask.basic.f32"], "ERROR", re.escape(want))
    check(doc.get("backend_options") == "mode=ok,label=it's a b", "backend_options recorded")
    rerun = res["sdpa.nomask.basic.f32"]["rerun"]
    check("--backend-option mode=ok --backend-option 'label=it'\\''s a b'" in rerun,
          "rerun quotes the options (%r)" % rerun)
    rc, so, se, _, _ = run(args, ["sh", "-c", rerun])
    check(rc == 1 and want in so, "the rerun reproduces the options")
    check("(options mode=ok,label=it's a b)" in so, "text header names the options")


def chatty_log(pid, calls):
    """What bad_adapter.py chatty writes to stderr: its start, then a block per sdpa."""
    return "bad_adapter(chatty): started, pid %d\n" % pid + "".join(
        "bad_adapter(chatty): Traceback (most recent call last):\n"
        "  File \"kernel.py\", line %d, in sdpa\nUserWarning: sdpa #%d recompiled\n" % (k, k)
        for k in range(1, calls + 1))


def s_adapter_stderr(args):
    """--adapter-stderr FILE appends all of the adapter's stderr to FILE, byte for byte, after
    what FILE held: its start and every request's multi-line block, not only a last line; '-'
    passes it to attnconf's own stderr; without the option none of it shows.  A transport
    failure still quotes the last line, and FILE has every dead adapter's lines too."""
    for name in os.listdir(args.workdir):  # the logs of an earlier run: appended to, else
        if name.endswith(".log"):
            os.remove(os.path.join(args.workdir, name))
    log = os.path.join(args.workdir, "adapter.log")
    with open(log, "w") as f:
        f.write("kept from before\n")
    pidfile, env = pid_env(args, "chatty")
    rc, out, _, _, _, res = json_run(args, backend(args, "chatty"), "sdpa.nomask.*",
                                     "--adapter-stderr", log, env=env)
    check(rc == 0, "exit 0 (got %d)" % rc)
    statuses(res, F32_NOMASK, "PASS")
    pids = pids_gone(pidfile)
    text = open(log).read()
    want = "kept from before\n" + chatty_log(pids[0], len(F32_NOMASK))
    check(len(pids) == 1 and text == want, "FILE is what it held plus the adapter's whole "
          "stderr:\n--- got ---\n%s--- want ---\n%s" % (text, want))
    check("UserWarning" not in out, "none of it on attnconf's own stderr")

    small = "sdpa.nomask.[bd]*.f32"  # basic and d1: quick in pure Python
    pidfile, env = pid_env(args, "chatty_dash")
    cmd = [args.harness, "run", "--backend", backend(args, "chatty"), "--cases", args.cases,
           "--filter", small, "--adapter-stderr", "-"]
    rc, so, se, _, _ = run(args, cmd, env=env)
    pids = pids_gone(pidfile)
    check(rc == 0 and chatty_log(pids[0], 2) in se,
          "'-': the same on attnconf's stderr (rc %d)" % rc)
    check("UserWarning" not in so, "and not on its stdout (the results)")

    rc, out, _, _, _, res = json_run(args, backend(args, "chatty"), small, name="quiet")
    check(rc == 0 and "UserWarning" not in out and "started, pid" not in out,
          "without --adapter-stderr the adapter's stderr is not shown (rc %d)" % rc)

    dead = os.path.join(args.workdir, "die.log")
    rc, out, _, _, _, res = json_run(args, backend(args, "die"), small,
                                     "--adapter-stderr", dead, name="die")
    check(rc == 1, "die: exit 1 (got %d)" % rc)
    statuses(res, F32_NOMASK[:2], "ERROR", r"^adapter failure: adapter exited with status 3: "
             r"bad_adapter\(die\): dying in the middle of sdpa$")
    check(open(dead).read() == "bad_adapter(die): dying in the middle of sdpa\n" * 2,
          "die: FILE has each dead adapter's line")

    info = os.path.join(args.workdir, "info.log")
    pidfile, env = pid_env(args, "chatty_info")
    cmd = [args.harness, "backend-info", "--backend", backend(args, "chatty"),
           "--adapter-stderr", info]
    rc, so, se, _, _ = run(args, cmd, env=env)
    pids = pids_gone(pidfile)
    check(rc == 0 and open(info).read() == chatty_log(pids[0], 0),
          "backend-info: FILE has the adapter's start (rc %d)" % rc)

    fuzzed = os.path.join(args.workdir, "fuzz.log")
    cmd = [args.harness, "fuzz", "--backend", backend(args, "chatty"), "--count", "2",
           "--seed", "1", "--out-dir", os.path.join(args.workdir, "fuzz"),
           "--adapter-stderr", fuzzed]
    rc, so, se, _, _ = run(args, cmd)
    text = open(fuzzed).read() if os.path.exists(fuzzed) else ""
    check(rc in (0, 1) and text.startswith("bad_adapter(chatty): started, pid ")
          and "UserWarning: sdpa #1 recompiled\n" in text,
          "fuzz: FILE has the adapter's stderr (rc %d): %r" % (rc, text[:300]))

    benched = os.path.join(args.workdir, "bench.log")
    suite = os.path.join(HERE, "..", "..", "perf", "suites", "smoke.yaml")
    limits = os.path.join(HERE, "..", "..", "perf", "tests", "suites", "limits.json")
    cmd = [args.harness, "bench", "--backend", backend(args, "chatty"), "--suite", suite,
           "--filter", "smoke.offset.*.f32", "--limits", limits, "--min-time", "0.02",
           "--min-reps", "3", "--out", os.path.join(args.workdir, "bench.json"),
           "--adapter-stderr", benched]
    rc, so, se, _, _ = run(args, cmd)
    text = open(benched).read() if os.path.exists(benched) else ""
    # One adapter for the up-front load, one in each benchmark's child.
    check(rc == 0 and text.count("started, pid") >= 2 and "UserWarning: sdpa #4 recompiled\n"
          in text, "bench: FILE has every adapter's stderr (rc %d): %r" % (rc, text[:300]))

    # A plugin has no adapter: the option is refused rather than silently ignored.
    for words in (["run", "--backend", args.options_backend],
                  ["backend-info", "--backend", args.options_backend],
                  ["fuzz", "--backend", args.options_backend, "--count", "1"],
                  ["bench", "--backend", args.options_backend, "--suite", suite]):
        rc, so, se, _, _ = run(args, [args.harness] + words + ["--adapter-stderr", log])
        check(rc == 2 and "--adapter-stderr applies to exec: adapters (a plugin writes to "
              "attnconf's own stderr)" in se, "%s: refused for a plugin (rc %d)" % (words[0], rc))
    rc, so, se, _, _ = run(args, [args.harness, "run", "--backend", backend(args, "ok"),
                                  "--cases", args.cases, "--adapter-stderr",
                                  os.path.join(args.workdir, "no", "such", "dir.log")])
    check(rc == 2 and re.search(r"--adapter-stderr .*/no/such/dir\.log: No such file or "
                                r"directory", se) is not None,
          "an unopenable FILE is bad input: exit 2 (rc %d)" % rc)


def clipped(text):
    """common/clip.h on an ASCII text: its first 200 and last 600 bytes, and what was left out
    between them, when it is longer than 840 bytes."""
    if len(text) <= 840:
        return text
    return "%s [... %d bytes ...] %s" % (text[:200], len(text) - 800, text[-600:])


def s_long_error(args):
    """A backend's long error text (a compiler's: command line first, verdict last) keeps its
    head and its tail, with a marker saying how many bytes were left out, in the results (JSON
    and text) and in the report: the verdict is no longer cut off."""
    sys.dont_write_bytecode = True  # no __pycache__ in the checkout
    sys.path.insert(0, os.path.dirname(ADAPTER))
    sys.argv = [ADAPTER, "long_error"]
    import bad_adapter  # noqa: E402  only for its LONG_ERROR text
    text = bad_adapter.LONG_ERROR
    check(len(text) > 6000 and text.endswith("error: identifier blockDimm is undefined"),
          "the adapter's error is long and ends in the verdict")
    want = clipped(text)
    check(want.startswith("nvcc -O3") and " [... %d bytes ...] " % (len(text) - 800) in want,
          "the expected message keeps head, marker and tail")
    must_reject = "sdpa.invalid.head_dim_mismatch.f32"
    rc, out, _, _, doc, res = json_run(args, backend(args, "long_error"),
                                       "sdpa.nomask.basic.f32", "--filter", must_reject)
    check(rc == 1, "exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.nomask.basic.f32"], "ERROR",
             "^" + re.escape("backend returned ebackend (-5): " + want) + "$")
    statuses(res, [must_reject], "EXPECTED_ERROR",
             "^" + re.escape("rejected with einval as required: " + want) + "$")
    cmd = [args.harness, "run", "--backend", backend(args, "long_error"), "--cases", args.cases,
           "--filter", "sdpa.nomask.basic.f32"]
    rc, so, se, _, _ = run(args, cmd)
    check(("    backend returned ebackend (-5): " + want + "\n") in so,
          "the text output quotes the same message")
    json_path = os.path.join(args.workdir, "run.json")
    rc, so, se, _, _ = run(args, [args.harness, "report", json_path])
    # Markdown escapes the marker's brackets.
    check(rc == 0 and re.search(r"backend returned ebackend \(-5\): nvcc -O3 .* \\\[\.\.\. %d "
                                r"bytes \.\.\.\\\] .*error: identifier blockDimm is undefined$"
                                % (len(text) - 800), so, re.M) is not None,
          "the report quotes head, marker and verdict (rc %d)" % rc)


def s_restart(args):
    """--restart never|family|case: which adapter process served each case, from the pid the
    adapter puts in its error text, against the processes that really started (their pids
    recorded at start).  never: one for the run; family: one per family; case: one per case.
    A case not sent (NOT_SUPPORTED) starts nothing, and every adapter is gone at the end."""
    filt = ("sdpa.nomask.*", "--filter", "sdpa.causal.*")
    served = {}
    for policy in ("never", "family", "case"):
        pidfile, env = pid_env(args, "restart_" + policy)
        rc, out, _, _, doc, res = json_run(args, backend(args, "pid"), *filt, "--restart", policy,
                                           env=env, name="restart_" + policy)
        check(rc == 1, "%s: exit 1 (got %d)" % (policy, rc))
        ran = [r for r in doc.get("results", []) if r["status"] != "NOT_SUPPORTED"]
        pids = []
        for r in ran:
            m = re.fullmatch(r"backend returned ebackend \(-5\): adapter pid (\d+)", r["message"])
            check(r["status"] == "ERROR" and m is not None, "%s: %s names the adapter's pid (%s: %s)"
                  % (policy, r["id"], r["status"], r["message"]))
            pids.append((r["family"], int(m.group(1)) if m else 0))
        started = pids_gone(pidfile)
        families = sorted({f for f, _ in pids})
        check(families == ["sdpa.causal", "sdpa.nomask"] and len(pids) >= 8,
              "%s: cases of both families ran (%d)" % (policy, len(pids)))
        # Every process that served a case started once, in run order, and nothing else ran.
        order = []
        for _, p in pids:
            if not order or order[-1] != p:
                order.append(p)
        check(started == order, "%s: started %s, served %s" % (policy, started, order))
        served[policy] = pids
    check(len({p for _, p in served["never"]}) == 1, "never: one adapter for the run")
    fam = served["family"]
    check(all(len({p for f, p in fam if f == g}) == 1 for g in ("sdpa.causal", "sdpa.nomask"))
          and len({p for _, p in fam}) == 2, "family: one adapter per family: %s" % fam)
    check(len({p for _, p in served["case"]}) == len(served["case"]),
          "case: a different adapter for every case: %s" % served["case"])

    rc, so, se, _, _ = run(args, [args.harness, "run", "--backend", backend(args, "ok"),
                                  "--restart", "sometimes"])
    check(rc == 2 and "--restart: expected never, family or case: sometimes" in se,
          "an unknown policy is a usage error (rc %d)" % rc)
    rc, so, se, _, _ = run(args, [args.harness, "run", "--backend", args.options_backend,
                                  "--restart", "case"])
    check(rc == 2 and "--restart applies to exec: adapters" in se,
          "refused for a plugin (rc %d)" % rc)


EXPECT_FILE = """attnconf_expected: 1
backend: bad_adapter
version: "bad_adapter 1 (inexpressible)"
expect:
%s"""
EXPECT_ENTRY = """  - case: %s
    status: UNEXPRESSIBLE
    clause: %d
    reason: "the test adapter's API has no way to write this invalid input"
"""


def s_inexpressible(args):
    """Status -6 (EINEXPRESSIBLE) is UNEXPRESSIBLE only on a case that must be rejected: the
    test adapter answers it to every sdpa and build_mask, so its must-succeed cases FAIL saying
    why and its must-reject cases are UNEXPRESSIBLE, counted apart in the JSON summary and the
    summary line.  Under --expect an UNEXPRESSIBLE result conforms only where the file lists
    the case by id with that status; a glob entry is refused; the report lists the claims."""
    must_reject = {"sdpa.invalid.head_dim_mismatch.f32": 1,
                   "sdpa.params.invalid.lengths_negative.f32": 19,
                   "mask.invalid.lengths_over_lk": 5}
    must_succeed = ["sdpa.nomask.basic.f32", "mask.causal.offset0_l4"]
    filt = []
    for i in list(must_reject) + must_succeed:
        filt += ["--filter", i]
    rc, out, _, _, doc, res = json_run(args, backend(args, "inexpressible"), *filt[1:])
    check(rc == 1, "exit 1: the must-succeed cases fail (got %d)" % rc)
    statuses(res, must_succeed, "FAIL", r"^answered einexpressible on an input that must succeed "
             r"\(only an input that must be rejected can be unexpressible\): bad_adapter cannot "
             r"write")
    statuses(res, list(must_reject), "UNEXPRESSIBLE", r"^the backend cannot write this invalid "
             r"input in its API \(einexpressible, where einval is required\): bad_adapter cannot "
             r"write")
    summary = doc.get("summary", {})
    check(summary.get("UNEXPRESSIBLE") == 3 and summary.get("FAIL") == 2
          and summary.get("PASS") == 0 and summary.get("EXPECTED_ERROR") == 0,
          "summary counts UNEXPRESSIBLE apart: %s" % summary)
    check(re.search(r": 0 passed, 2 failed, 0 not supported, 3 unexpressible \(results in ", out)
          is not None, "the summary line counts them apart")

    reject_filt = []
    for i in must_reject:
        reject_filt += ["--filter", i]
    rc, out, _, _, doc, res = json_run(args, backend(args, "inexpressible"), *reject_filt[1:],
                                       name="reject_only")
    check(rc == 0, "only must-reject cases: neither passed nor failed, exit 0 (got %d)" % rc)

    def expect_run(name, entries, *extra):
        path = os.path.join(args.workdir, name + ".yaml")
        with open(path, "w") as f:
            f.write(EXPECT_FILE % "".join(entries))
        return json_run(args, backend(args, "inexpressible"), *filt[1:], "--expect", path,
                        *extra, name=name)

    listed = [EXPECT_ENTRY % (i, c) for i, c in must_reject.items()]
    fails = ["""  - case: [%s]
    status: FAIL
    clause: 2
    reason: "the test adapter answers einexpressible to everything"
""" % ", ".join(must_succeed)]
    rc, out, _, _, doc, res = expect_run("all_listed", fails + listed)
    check(rc == 0, "every claim listed: exit 0 (got %d)" % rc)
    check(doc.get("expectations", {}).get("unexpected") == 0, "nothing unexpected")
    rc, so, se, _, _ = run(args, [args.harness, "report",
                                  os.path.join(args.workdir, "all_listed.json")])
    check(rc == 0 and "\n#### Unexpressible (3 cases)\n" in so
          and "UNEXPRESSIBLE on 1 case. Observed: the test adapter's API has no way to write "
          "this invalid input." in so, "the report lists the claims (rc %d)" % rc)
    check("| **all** | **2 fail** / 2 + 3 unx |" in so, "the matrix counts them apart")

    rc, out, _, _, doc, res = expect_run("one_missing", fails + listed[:2])
    check(rc == 1, "a claim the file does not list: exit 1 (got %d)" % rc)
    check(doc.get("expectations", {}).get("unexpected") == 1, "one unexpected")
    missing = list(must_reject)[2]
    check(res.get(missing, {}).get("expected", {}).get("as_expected") is False,
          "%s is not as expected" % missing)

    rc, out, _, _, doc, res = expect_run("glob", fails + [EXPECT_ENTRY % ("sdpa.*.f32", 1)])
    check(rc == 2 and "case: 'sdpa.*.f32': an UNEXPRESSIBLE entry lists case ids, not globs "
          "(each claim is reviewed case by case)" in out, "a glob entry is refused (rc %d)" % rc)


def s_stride0_wire(args):
    """K/V broadcast with stride 0 (sdpa.layout.*stride0*): to an adapter that lists
    stride0.wire they go as they are, the real strides (0 included) over a buffer of the span
    they address, so its library sees the broadcast; to one that does not, as before, a dense
    copy with nbytes = numel x size.  Both compute the same, right, results."""
    ids = ["sdpa.layout.k_stride0_v_blhd.f32", "sdpa.layout.kv_stride0_batch.f32",
           "sdpa.layout.kv_stride0_both.f32", "sdpa.layout.kv_stride0_heads.f32"]  # run order
    dense, blhd = ([320, 160, 8, 1], 2560), ([320, 8, 16, 1], 2560)
    # (k, v) as (strides, nbytes) of a (2, 2, 20, 8) f32 tensor, case by case.
    want = {"stride0": [(dense, blhd), (dense, dense), (dense, dense), (dense, dense)],
            "stride0wire": [(([0, 0, 8, 1], 640), blhd),
                            (([0, 160, 8, 1], 1280), ([0, 160, 8, 1], 1280)),
                            (([0, 0, 8, 1], 640), ([0, 0, 8, 1], 640)),
                            (([160, 0, 8, 1], 1280), ([160, 0, 8, 1], 1280))]}
    for mode in ("stride0", "stride0wire"):
        sent = os.path.join(args.workdir, mode + ".sent")
        if os.path.exists(sent):
            os.remove(sent)
        filt = []
        for i in ids:
            filt += ["--filter", i]
        rc, out, _, _, doc, res = json_run(args, backend(args, mode, sent), *filt[1:], name=mode)
        check(rc == 0, "%s: exit 0 (got %d)" % (mode, rc))
        statuses(res, ids, "PASS")
        lines = [json.loads(x) for x in open(sent)] if os.path.exists(sent) else []
        check(len(lines) == len(ids), "%s: one sdpa per case (%d)" % (mode, len(lines)))
        for case, got, (k, v) in zip(ids, lines, want[mode]):
            t = {d["name"]: d for d in got}
            for name, (strides, nbytes) in (("k", k), ("v", v)):
                d = t.get(name, {})
                check(d.get("shape") == [2, 2, 20, 8] and d.get("strides") == strides
                      and d.get("nbytes") == nbytes,
                      "%s: %s %s sent as shape %s strides %s nbytes %s, expected strides %s "
                      "nbytes %d" % (mode, case, name, d.get("shape"), d.get("strides"),
                                     d.get("nbytes"), strides, nbytes))


DECODE = r"""
import io, sys
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, sys.argv[1])
import attnconf_exec as ax
import numpy as np
def decode(desc, payload):
    ax._proto_in = io.BytesIO(payload)
    return ax._decode_tensor(desc)
row = np.arange(3, dtype="<f4").tobytes()
t = decode({"name": "k", "dtype": "f32", "shape": [2, 3], "strides": [0, 1], "nbytes": 12}, row)
assert t.array.strides == (0, 4) and (t.array == [[0, 1, 2], [0, 1, 2]]).all(), t.array
t = decode({"name": "k", "dtype": "f32", "shape": [2, 3], "nbytes": 24}, row + row)
assert t.array.strides == (12, 4) and t.strides == (3, 1)
for desc in ({"name": "k", "dtype": "f32", "shape": [2, 3], "strides": [0, 1], "nbytes": 24},
             {"name": "k", "dtype": "f32", "shape": [2, 3], "strides": [3, 1], "nbytes": 12},
             {"name": "k", "dtype": "f32", "shape": [2, 3], "strides": [4, 1], "nbytes": 24}):
    try:
        decode(desc, row + row)
    except ax.ProtocolError as e:
        print("refused:", e, file=sys.stderr)
    else:
        raise AssertionError("accepted %r" % desc)
print("decoder ok", file=sys.stderr)
"""


def s_attnconf_exec_stride0(args):
    """attnconf_exec.py's decoder (the adapters' helper, needs numpy): a stride-0 tensor's
    payload is its addressed span, and Tensor.array is the broadcast view (byte stride 0);
    a dense one still holds numel elements; a span that does not match nbytes is refused.
    End to end, an adapter on it that lists stride0.wire gets K/V as broadcast views and passes
    the stride-0 cases; one that does not gets dense copies and passes them too."""
    adapters = os.path.join(HERE, "..", "adapters")
    p = subprocess.run([args.python, "-c", DECODE, adapters], capture_output=True, text=True)
    print(p.stderr)
    check(p.returncode == 0 and "decoder ok" in p.stderr and p.stderr.count("refused:") == 3,
          "the decoder's unit checks")
    script = os.path.join(HERE, "adapters", "broadcast_adapter.py")
    ids = ["sdpa.layout.kv_stride0_batch.f32", "sdpa.layout.kv_stride0_both.f32",
           "sdpa.layout.kv_stride0_heads.f32"]  # run order
    want = {"wire": [([0, 160, 8, 1], 320, [0, 640, 32, 4]), ([0, 0, 8, 1], 160, [0, 0, 32, 4]),
                     ([160, 0, 8, 1], 320, [640, 0, 32, 4])],
            "dense": [([320, 160, 8, 1], 640, [1280, 640, 32, 4])] * 3}
    for mode in ("wire", "dense"):
        log = os.path.join(args.workdir, mode + ".log")
        if os.path.exists(log):
            os.remove(log)
        be = "exec:" + " ".join(shlex.quote(w) for w in (args.python, script, mode, log))
        filt = []
        for i in ids:
            filt += ["--filter", i]
        rc, out, _, _, doc, res = json_run(args, be, *filt[1:], name=mode)
        check(rc == 0, "%s: exit 0 (got %d)" % (mode, rc))
        statuses(res, ids, "PASS")
        lines = [json.loads(x) for x in open(log)] if os.path.exists(log) else []
        check(len(lines) == len(ids), "%s: one sdpa per case (%d)" % (mode, len(lines)))
        for case, got, (strides, held, view) in zip(ids, lines, want[mode]):
            for name in ("k", "v"):
                check(got[name] == {"strides": strides, "held": held, "view_strides": view},
                      "%s: %s %s: got %s, expected strides %s, %d elements held, view strides "
                      "%s" % (mode, case, name, got[name], strides, held, view))


# ---- the terms of current models (ABI v1 fifth revision, SPEC clauses 20-22) -----------------

def _vals(n, seed):
    """n small values, exact in f32 (multiples of 1/16 in [-1, 1])."""
    return [((seed * 7919 + i * 104729) % 33 - 16) / 16.0 for i in range(n)]


def _alibi_slope(max_bias, hq, h):
    n = 1
    while n * 2 <= hq:
        n *= 2
    e = max_bias * (h + 1) / n if h < n else (max_bias / 2) * (2 * (h - n) + 1) / n
    return 2.0 ** -e


def _keeps(p, causal, off, b, i, j, lk):
    """The keep rule of backend.h attnconf_sdpa_args (fifth revision) for query i at p = off + i
    of batch row b and key j; p["..."] the case's params."""
    pos = off + i
    lp = (p.get("left_padding") or [0] * (b + 1))[b]
    if p.get("lengths") is not None and j >= p["lengths"][b] or j < lp:
        return False
    seg, blk = p.get("segment_ids"), p.get("block_ids")
    if seg is not None and not (0 <= pos < lk and seg[b][pos] == seg[b][j]):
        return False
    if not causal:
        return True
    if j > pos:
        return blk is not None and 0 <= pos < lk and blk[b][pos] >= 0 and \
            blk[b][pos] == blk[b][j] and (not p.get("chunk") or
                                          (pos - lp) // p["chunk"] == (j - lp) // p["chunk"])
    if p.get("window") and j <= pos - p["window"]:
        return False
    return not p.get("chunk") or (pos - lp) // p["chunk"] == (j - lp) // p["chunk"]


def _yaml(x):
    """x as a YAML flow value (JSON is one, but for the spelling of infinity)."""
    return json.dumps(x).replace("Infinity", ".inf")


def _terms_sdpa_case(cid, p, shape, requires, error=None):
    """An f32 sdpa fixture case with params p; expected computed here in double."""
    (B, Hq, Lq, D), Hkv, Lk, Dv = shape
    q, k, v = _vals(B * Hq * Lq * D, 1), _vals(B * Hkv * Lk * D, 2), _vals(B * Hkv * Lk * Dv, 3)
    causal = p.get("causal", False)
    off = Lk - Lq
    out, nrows = [], B * Hq * Lq
    for b in range(B):
        for h in range(Hq):
            hk = h // (Hq // Hkv)
            m = _alibi_slope(p["alibi_max_bias"], Hq, h) if p.get("alibi_max_bias") else 0.0
            for i in range(Lq):
                logits = {}
                for j in range(Lk):
                    if not _keeps(p, causal, off, b, i, j, Lk):
                        continue
                    s = sum(q[((b * Hq + h) * Lq + i) * D + d] * k[((b * Hkv + hk) * Lk + j) * D + d]
                            for d in range(D)) / math.sqrt(D)
                    if p.get("softcap"):
                        s = p["softcap"] * math.tanh(s / p["softcap"])
                    logits[j] = s - m * abs(off + i - j)
                if not logits:
                    out += [0.0] * Dv
                    continue
                sink = p["sinks"][h] if p.get("sinks") else -math.inf
                mx = max(list(logits.values()) + [sink])
                w = {j: math.exp(s - mx) for j, s in logits.items()}
                tot = sum(w.values()) + math.exp(sink - mx)
                out += [sum(wj * v[((b * Hkv + hk) * Lk + j) * Dv + e] for j, wj in w.items())
                        / tot for e in range(Dv)]
    f = lambda xs: "[" + ", ".join("%.8e" % x for x in xs) + "]"
    params = ", ".join("%s: %s" % (key, _yaml(val)) for key, val in p.items())
    if error:
        expected = "expected:\n  error: %s\n" % error
    else:
        expected = ("expected:\n  out: {dtype: f32, shape: %s, data: [%s]}\n"
                    "tolerance: {ulps: 5.0e-01, row_atol: %s}\n"
                    % (_yaml([B, Hq, Lq, Dv]), ", ".join("%.16e" % x for x in out),
                       "[" + ", ".join(["1.0e-06"] * nrows) + "]"))
    return ("attnconf_case: 4\nid: %s\ndescription: \"exec fixture: the fifth-revision terms "
            "reach the adapter.\"\nrules: [clause20.terms]\nop: sdpa\nrequires: %s\n"
            "params: {%s}\ninputs:\n  q: {dtype: f32, shape: %s, data: %s}\n"
            "  k: {dtype: f32, shape: %s, data: %s}\n  v: {dtype: f32, shape: %s, data: %s}\n%s"
            % (cid, _yaml(requires).replace('"', ""), params,
               _yaml([B, Hq, Lq, D]), f(q), _yaml([B, Hkv, Lk, D]), f(k),
               _yaml([B, Hkv, Lk, Dv]), f(v), expected))


def _terms_mask_case(cid, p, requires):
    lq, off = p["lq"], p["offset"]
    lk = off + lq
    rows = len((p.get("segment_ids") or p.get("block_ids") or [[0]]))
    keep = [1 if _keeps(p, True, off, b, i, j, lk) else 0
            for b in range(rows) for i in range(lq) for j in range(lk)]
    params = ", ".join("%s: %s" % (key, _yaml(val)) for key, val in p.items())
    return ("attnconf_case: 4\nid: %s\ndescription: \"exec fixture: the fifth-revision mask "
            "terms reach the adapter.\"\nrules: [clause20.terms]\nop: mask\nrequires: %s\n"
            "params: {%s}\nexpected:\n  keep: {shape: %s, data: %s}\n"
            % (cid, _yaml(requires).replace('"', ""), params, _yaml([rows, 1, lq, lk]),
               _yaml(keep)))


SEG = [[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]]
BLK = [[-1, 3, 3, 3, -1], [5, 5, -1, 2, 2]]
ALL = {"causal": True, "softcap": 0.75, "alibi_max_bias": 8.0, "sinks": [0.5, -1.25, 2.0],
       "chunk": 3, "left_padding": [1, 0], "segment_ids": SEG, "block_ids": [[-1, 3, 3, 3, 3],
                                                                              [5, 5, -1, 2, 2]]}
# id -> (params, shape ((B, Hq, Lq, D), Hkv, Lk, Dv), requires beyond f32, expected error);
# run order is id order.
TERM_SDPA = {
    "sdpa.fixture.terms_all": (ALL, ((2, 3, 3, 4), 1, 5, 4), [
        "causal", "gqa", "sdpa.left_padding", "sdpa.softcap", "sdpa.alibi", "sdpa.sinks",
        "sdpa.chunk", "sdpa.segments", "sdpa.blocks"], None),
    "sdpa.fixture.terms_alibi": ({"causal": True, "alibi_max_bias": 8.0},
                                 ((1, 3, 3, 4), 1, 5, 4), ["causal", "gqa", "sdpa.alibi"], None),
    "sdpa.fixture.terms_blocks": ({"causal": True, "block_ids": BLK}, ((2, 2, 3, 4), 1, 5, 4),
                                  ["causal", "gqa", "sdpa.blocks"], None),
    "sdpa.fixture.terms_chunk": ({"causal": True, "chunk": 2, "left_padding": [1]},
                                 ((1, 2, 3, 4), 2, 5, 4),
                                 ["causal", "sdpa.left_padding", "sdpa.chunk"], None),
    "sdpa.fixture.terms_plain": ({"causal": True}, ((1, 2, 3, 4), 2, 5, 4), ["causal"], None),
    "sdpa.fixture.terms_segments": ({"causal": False, "segment_ids": SEG},
                                    ((2, 2, 3, 4), 2, 5, 4), ["sdpa.segments"], None),
    "sdpa.fixture.terms_sinks": ({"causal": True, "sinks": [0.5, -1.25]}, ((1, 2, 3, 4), 2, 5, 4),
                                 ["causal", "sdpa.sinks"], None),
    "sdpa.fixture.terms_softcap": ({"causal": False, "softcap": 0.5}, ((1, 2, 3, 4), 2, 5, 4),
                                   ["sdpa.softcap"], None),
    "sdpa.fixture.terms_softcap_inf": ({"causal": False, "softcap": math.inf},
                                       ((1, 2, 3, 4), 2, 5, 4), ["sdpa.softcap"], "einval"),
}
TERM_MASK = {
    "mask.fixture.terms_blocks": ({"lq": 3, "offset": 2, "block_ids": BLK},
                                  ["build_mask", "mask.blocks"]),
    "mask.fixture.terms_chunk": ({"lq": 3, "offset": 2, "chunk": 2}, ["build_mask", "mask.chunk"]),
    "mask.fixture.terms_plain": ({"lq": 3, "offset": 2}, ["build_mask"]),
    "mask.fixture.terms_segments": ({"lq": 3, "offset": 2, "segment_ids": SEG},
                                    ["build_mask", "mask.segments"]),
}
# The request members of the first and later revisions: every header has these (and only
# these, plus what the case sets among the fifth revision's).
SDPA_KEYS = {"protocol", "op", "causal", "causal_offset", "scale"}
MASK_KEYS = {"protocol", "op", "lq", "offset", "window", "batch", "lengths", "left_padding"}


def _write_term_cases(args):
    cases = os.path.join(args.workdir, "cases")
    os.makedirs(cases, exist_ok=True)
    for cid, (p, shape, req, err) in TERM_SDPA.items():
        with open(os.path.join(cases, cid + ".yaml"), "w") as f:
            f.write(_terms_sdpa_case(cid, p, shape, ["f32"] + req, err))
    for cid, (p, req) in TERM_MASK.items():
        with open(os.path.join(cases, cid + ".yaml"), "w") as f:
            f.write(_terms_mask_case(cid, p, req))
    return cases


def _sent(p, op):
    """The fifth-revision members a request for a case with params p carries (its wire form)."""
    names = ("softcap", "alibi_max_bias", "sinks", "chunk", "segment_ids", "block_ids")
    want = {n: p[n] for n in names if n in p}
    if want.get("softcap") == math.inf:
        want["softcap"] = "inf"  # JSON has no infinity (PROTOCOL.md)
    if op == "sdpa" and "left_padding" in p:
        want["left_padding"] = p["left_padding"]
    return want


def s_terms(args):
    """The terms of ABI v1's fifth revision cross the protocol (PROTOCOL.md "sdpa",
    "build_mask"): to an adapter that lists sdpa.softcap ... mask.blocks, each member the case
    sets arrives, with its value (softcap inf as the string "inf", sinks as numbers, the id
    lists as B rows of Lk), and no member the case does not set; the adapter computes them and
    passes, and rejects the invalid one.  An adapter without those capabilities is sent none of
    those cases (NOT_SUPPORTED), and the requests it does get carry exactly the members of the
    earlier revisions.  A request whose id rows outgrow the 1 MiB header is not sent (ERROR).
    Without the bridge's fifth-revision members, every term case here FAILs."""
    # The golden families first: bad_adapter's pure-Python terms against the reference's
    # cases (f32 without a mask tensor: what it computes; the rest is NOT_SUPPORTED).
    golden = args.cases
    rc, out, _, _, doc, res = json_run(args, backend(args, "terms",
                                                     os.path.join(args.workdir, "golden.sent")),
                                       "sdpa.terms.*.f32", "--filter", "mask.terms.*",
                                       name="golden")
    by = collections.Counter(r["status"] for r in res.values())
    check(rc == 0 and by["PASS"] >= 40 and by["EXPECTED_ERROR"] >= 5
          and by["FAIL"] + by["ERROR"] == 0,
          "golden sdpa.terms.*.f32 / mask.terms.* through the pipe: %s" % dict(by))
    args.cases = _write_term_cases(args)
    ids = sorted(TERM_SDPA) + sorted(TERM_MASK)
    for mode in ("terms", "log"):
        sent = os.path.join(args.workdir, mode + ".sent")
        if os.path.exists(sent):
            os.remove(sent)
        rc, out, _, _, doc, res = json_run(args, backend(args, mode, sent), "*.fixture.terms_*",
                                           name=mode)
        lines = [json.loads(x) for x in open(sent)] if os.path.exists(sent) else []
        if mode == "terms":
            check(rc == 0, "terms: exit 0 (got %d)" % rc)
            statuses(res, [i for i in ids if i != "sdpa.fixture.terms_softcap_inf"], "PASS")
            statuses(res, ["sdpa.fixture.terms_softcap_inf"], "EXPECTED_ERROR",
                     r"softcap inf must be finite")
            expect = ids
        else:
            check(rc == 0, "log: exit 0 (got %d)" % rc)
            statuses(res, ["sdpa.fixture.terms_plain", "mask.fixture.terms_plain"], "PASS")
            statuses(res, [i for i in ids if not i.endswith("_plain")], "NOT_SUPPORTED",
                     r"^backend lacks (sdpa|mask)\.")
            expect = ["mask.fixture.terms_plain", "sdpa.fixture.terms_plain"]
        # mask cases run before sdpa ones (case-id order)
        expect = sorted(expect)
        check(len(lines) == len(expect), "%s: one request per case sent (%d of %d)"
              % (mode, len(lines), len(expect)))
        for cid, got in zip(expect, lines):
            op = "sdpa" if cid.startswith("sdpa.") else "build_mask"
            p = TERM_SDPA[cid][0] if op == "sdpa" else TERM_MASK[cid][0]
            want = _sent(p, op)
            base = SDPA_KEYS if op == "sdpa" else MASK_KEYS
            extra = {key: val for key, val in got.items() if key not in base}
            check(got.get("op") == op and base <= got.keys() and extra == want,
                  "%s: %s sent the members %s beyond the earlier revisions', expected %s"
                  % (mode, cid, extra, want))
    # Id rows too long for one header (64 rows of 8192 ids: about 1.5 MB of JSON) are never
    # sent: the case is an ERROR naming the size, and the adapter saw nothing.
    huge = os.path.join(args.workdir, "huge")
    os.makedirs(huge, exist_ok=True)
    row = "[" + ", ".join(["0"] * 8192) + "]"
    gen = "generate: {kind: uniform, seed: %d, lo: -1.0e+00, hi: 1.0e+00}"
    with open(os.path.join(huge, "huge.yaml"), "w") as f:
        f.write("attnconf_case: 4\nid: sdpa.fixture.terms_huge_ids\ndescription: \"exec fixture: "
                "id rows too long for a header.\"\nrules: [clause20.terms]\nop: sdpa\n"
                "requires: [f32, sdpa.segments]\nparams: {causal: false, segment_ids: [%s]}\n"
                "inputs:\n  q: {dtype: f32, shape: [64, 1, 1, 1], %s}\n"
                "  k: {dtype: f32, shape: [64, 1, 8192, 1], %s}\n"
                "  v: {dtype: f32, shape: [64, 1, 8192, 1], %s}\nexpected:\n  error: einval\n"
                % (", ".join([row] * 64), gen % 1, gen % 2, gen % 3))
    args.cases = huge
    sent = os.path.join(args.workdir, "huge.sent")
    if os.path.exists(sent):
        os.remove(sent)
    rc, out, _, _, doc, res = json_run(args, backend(args, "terms", sent), "sdpa.fixture.*",
                                       name="huge")
    check(rc == 1, "huge: exit 1 (got %d)" % rc)
    statuses(res, ["sdpa.fixture.terms_huge_ids"], "ERROR", r"^adapter failure: exec: the sdpa "
             r"request header would be \d+ bytes, over the protocol's 1 MiB$")
    check(not os.path.exists(sent) or os.path.getsize(sent) == 0, "huge: nothing was sent")
    args.cases = golden


PARSE_TERMS = r"""
import sys
sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, sys.argv[1])
import attnconf_exec as ax
import numpy as np
t = ax.Tensor("q", "f32", (1,), (1,), np.zeros(1, "<f4"))
base = {"protocol": 1, "op": "sdpa", "causal": True, "causal_offset": None, "scale": None}
r = ax._sdpa_request(base, {"q": t, "k": t, "v": t})
assert (r.softcap, r.alibi_max_bias, r.sinks, r.chunk, r.segment_ids, r.block_ids) == \
    (0.0, 0.0, None, 0, None, None), r
h = dict(base, softcap=30.0, alibi_max_bias="inf", sinks=[0.5, "-inf", "nan"], chunk=4,
         segment_ids=[[0, 0, 1]], block_ids=[[-1, 2, 2]])
r = ax._sdpa_request(h, {"q": t, "k": t, "v": t})
assert r.softcap == 30.0 and r.alibi_max_bias == float("inf") and r.chunk == 4, r
assert r.sinks[:2] == [0.5, float("-inf")] and r.sinks[2] != r.sinks[2], r.sinks
assert r.segment_ids == [[0, 0, 1]] and r.block_ids == [[-1, 2, 2]], r
for bad in ({"softcap": [1]}, {"sinks": [True]}, {"alibi_max_bias": "big"}):
    try:
        ax._sdpa_request(dict(base, **bad), {"q": t, "k": t, "v": t})
    except ax.ProtocolError as e:
        print("refused:", e, file=sys.stderr)
    else:
        raise AssertionError("accepted %r" % bad)
class A:
    def build_mask(self, req):
        self.req = req
        return np.zeros((1, 1, 1, 3), bool)
a = A()
ax._build_mask(a, {"lq": 1, "offset": 2, "window": 0, "batch": 1, "lengths": None,
                   "left_padding": None})
assert (a.req.chunk, a.req.segment_ids, a.req.block_ids) == (0, None, None), a.req
ax._build_mask(a, {"lq": 1, "offset": 2, "window": 0, "batch": 1, "lengths": None,
                   "left_padding": None, "chunk": 2, "segment_ids": [[1, 1, 2]],
                   "block_ids": [[0, 0, -1]]})
assert (a.req.chunk, a.req.segment_ids, a.req.block_ids) == (2, [[1, 1, 2]], [[0, 0, -1]])
assert {"sdpa.softcap", "sdpa.alibi", "sdpa.sinks", "sdpa.chunk", "sdpa.segments",
        "sdpa.blocks", "mask.chunk", "mask.segments", "mask.blocks"} <= ax.CAPABILITIES
print("terms ok", file=sys.stderr)
"""


def s_attnconf_exec_terms(args):
    """attnconf_exec.py reads the fifth-revision members into SdpaRequest / MaskRequest (their
    defaults when absent; "inf" / "-inf" / "nan" strings as floats; anything else that is not a
    number is a protocol error) and accepts their capability names in an Identity."""
    adapters = os.path.join(HERE, "..", "adapters")
    p = subprocess.run([args.python, "-c", PARSE_TERMS, adapters], capture_output=True, text=True)
    print(p.stderr)
    check(p.returncode == 0 and "terms ok" in p.stderr and p.stderr.count("refused:") == 3,
          "attnconf_exec reads the terms")


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", required=True)
    ap.add_argument("--cases", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--options-backend")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.workdir = os.path.join(args.workdir, args.scenario)
    os.makedirs(args.workdir, exist_ok=True)
    SCENARIOS[args.scenario](args)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
