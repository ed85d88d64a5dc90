#!/usr/bin/env python3
"""check_exec_py.py -- ctest scenarios for conformance/adapters/attnconf_exec.py itself (the
Python side of the exec protocol), run by the standard library.

    check_exec_py.py --python PY --workdir DIR [--harness ATTNCONF --cases DIR] SCENARIO

PY is a Python that can import attnconf_exec (it needs numpy); the adapters run under it, this
script does not.  Each scenario asserts on what an adapter wrote and left behind, prints what
went wrong and exits 1, or exits 0.
"""

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ADAPTER_DIRS = [os.path.join(ROOT, "conformance", "adapters"), os.path.join(HERE, "adapters")]
FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAILED: " + what)


def adapter_env(**extra):
    """The environment an adapter is run in here: the caller's, less what would hide the
    behaviour under test (PYTHONDONTWRITEBYTECODE, PYTHONWARNINGS)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONWARNINGS", "PYTHONPYCACHEPREFIX")}
    env.update(extra)
    return env


def talk(args, adapter, lines, flags=(), env=None, adapter_args=()):
    """Run `adapter` under args.python with the request lines on its stdin (then end of
    input); returns (exit status, stdout lines, stderr)."""
    cmd = [args.python] + list(flags) + [adapter] + list(adapter_args)  # adapter may be "-c"
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, input="".join(line + "\n" for line in lines), capture_output=True,
                       text=True, env=env if env is not None else adapter_env(), timeout=60)
    print("exit %d\n--- stdout ---\n%s--- stderr ---\n%s" % (p.returncode, p.stdout, p.stderr),
          flush=True)
    return p.returncode, p.stdout.splitlines(), p.stderr


# ---- scenarios -------------------------------------------------------------------------------

def checkout_imports(tree, folder):
    """The module-level imports in `tree` of a module that lives in the checkout: one beside the
    script in `folder`, or attnconf_exec (which test adapters take from conformance/adapters)."""
    local = {f[:-3] for f in os.listdir(folder) if f.endswith(".py")} | {"attnconf_exec"}
    for node in tree.body:
        names = []
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module.split(".")[0]]
        if set(names) & local:
            yield node


def sets_no_bytecode(node):
    return (isinstance(node, ast.Assign) and len(node.targets) == 1
            and ast.unparse(node.targets[0]) == "sys.dont_write_bytecode"
            and isinstance(node.value, ast.Constant) and node.value.value is True)


def s_no_bytecode(args):
    """The project's adapters write no __pycache__ into the checkout.  Every adapter script that
    imports a module of the checkout sets sys.dont_write_bytecode first (read from its source);
    and a real one, tests/adapters/timing_adapter.py on the checkout's attnconf_exec, answers a
    hello with bytecode writing enabled and leaves no .pyc for any file of the checkout."""
    scripts = 0
    for folder in ADAPTER_DIRS:
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            if not name.endswith(".py"):
                continue
            with open(path) as f:
                source = f.read()
            if "__main__" not in source:
                continue  # a module, imported by a script after the script's own setting
            tree = ast.parse(source, path)
            first = next(checkout_imports(tree, folder), None)
            if first is None:
                continue
            scripts += 1
            before = [n for n in tree.body if n.lineno < first.lineno]
            check(any(sets_no_bytecode(n) for n in before),
                  "%s:%d: imports a module of the checkout without `sys.dont_write_bytecode = "
                  "True` before it: its __pycache__ is written into the checkout"
                  % (os.path.relpath(path, ROOT), first.lineno))
    check(scripts >= 4, "found the adapter scripts on attnconf_exec (got %d)" % scripts)

    # PYTHONPYCACHEPREFIX mirrors each source's absolute path under the prefix, so what the
    # adapter would have written beside the checkout's files shows up under prefix/ROOT, and the
    # checkout itself is left alone (tests run in parallel).  Python's own start-up modules may
    # land elsewhere under the prefix: those are not the checkout's.
    prefix = os.path.join(args.workdir, "pycache")
    shutil.rmtree(prefix, ignore_errors=True)
    os.makedirs(prefix)
    rc, out, _ = talk(args, os.path.join(HERE, "adapters", "timing_adapter.py"),
                      ['{"protocol": 1, "op": "hello", "options": {}}',
                       '{"protocol": 1, "op": "close"}'],
                      env=adapter_env(PYTHONPYCACHEPREFIX=prefix))
    check(rc == 0, "timing_adapter.py exits 0 (got %d)" % rc)
    check(len(out) == 1 and '"status":0' in out[0], "timing_adapter.py answers hello with status 0")
    written = []
    for dirpath, _, files in os.walk(prefix + ROOT):
        # A virtual environment inside the build tree (tools/install-thirdparty's) sits under
        # the checkout too, but its packages are Python's, not the checkout's files.
        if "site-packages" not in dirpath.split(os.sep):
            written += [os.path.join(dirpath, f) for f in files]
    check(not written, "no bytecode of the checkout's files written (got %s)" % written)


# What the README's skeleton imports as "the library under test": SDPA in float64, its result
# rounded once to f32 (the dtype it produces).
MYLIB = """import numpy as np
__version__ = "1.0"
def attention(q, k, v):
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((w / w.sum(axis=-1, keepdims=True)) @ v).astype(np.float32)
"""


def s_readme_skeleton(args):
    """The minimal adapter of conformance/adapters/README.md, as printed there, runs: over a
    stand-in library it passes the f32 cases that need nothing more, and every case needing a
    capability it does not list is NOT_SUPPORTED."""
    with open(os.path.join(ROOT, "conformance", "adapters", "README.md")) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    check(len(blocks) == 1, "the README has one python block (got %d)" % len(blocks))
    if not blocks:
        return
    adapter = os.path.join(args.workdir, "my_adapter.py")
    with open(adapter, "w") as f:
        f.write(blocks[0])
    with open(os.path.join(args.workdir, "mylib.py"), "w") as f:
        f.write(MYLIB)
    out = os.path.join(args.workdir, "run.json")
    if os.path.exists(out):
        os.remove(out)
    # The checkout's attnconf_exec by PYTHONPATH, as an adapter outside the tree takes the
    # installed one; -B: none of it cached in the checkout.
    be = "exec:env PYTHONPATH=%s %s -B %s" % (os.path.join(ROOT, "conformance", "adapters"),
                                              args.python, adapter)
    cmd = [args.harness, "run", "--backend", be, "--cases", args.cases,
           "--filter", "sdpa.nomask.*", "--format", "json", "--out", out]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, capture_output=True, text=True, env=adapter_env(), timeout=120)
    print("exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr), flush=True)
    check(p.returncode == 0, "exit 0 (got %d)" % p.returncode)
    if not os.path.exists(out):
        check(False, "the run wrote %s" % out)
        return
    with open(out) as f:
        got = {r["id"]: r["status"] for r in json.load(f)["results"]}
    want = {"sdpa.nomask.basic.f32": "PASS", "sdpa.nomask.d1.f32": "PASS",
            "sdpa.nomask.lk113.f32": "PASS", "sdpa.nomask.large_logits_neg.f32": "NOT_SUPPORTED",
            "sdpa.nomask.basic.f16": "NOT_SUPPORTED", "sdpa.nomask.basic.bf16": "NOT_SUPPORTED"}
    for case, status in want.items():
        check(got.get(case) == status, "%s is %s (got %s)" % (case, status, got.get(case)))


def hello(options):
    return json.dumps({"protocol": 1, "op": "hello", "options": options})


def s_options(args):
    """Option.applies: the hello reply lists only the options of the variant chosen (the
    defaults' variant, then another), an option without applies= in both; a value given for an
    option of the other variant and an unknown key are refused by name; open() still gets
    every key.  Then the same through `attnconf backend-info`."""
    adapter = os.path.join(HERE, "adapters", "options_adapter.py")
    variant = {"key": "variant", "default": "a", "help": "a or b"}
    shared = {"key": "shared", "default": None, "help": "any variant"}
    alpha = {"key": "alpha", "default": "1", "help": "variant a's knob"}
    beta = {"key": "beta", "default": None, "help": "variant b's knob"}
    rc, out, _ = talk(args, adapter, [hello({}), hello({"variant": "b", "beta": "7"}),
                                      hello({"variant": "b", "alpha": "3"}),
                                      hello({"alpha": "3", "beta": "7"}), hello({"gamma": "1"}),
                                      json.dumps({"protocol": 1, "op": "close"})])
    check(rc == 0, "exit 0 (got %d)" % rc)
    replies = [json.loads(line) for line in out]
    check(len(replies) == 5, "five replies (got %d)" % len(replies))
    if len(replies) != 5:
        return
    a, b, b_alpha, a_beta, unknown = replies
    check(a.get("status") == 0 and a.get("name") == "options-a", "default hello: options-a")
    check(a.get("options") == [variant, alpha, shared],
          "default hello lists variant, alpha, shared (got %s)" % a.get("options"))
    check(a.get("version") == "variant=a,alpha=1,beta=None,shared=None",
          "open() gets every key, defaults filled in (got %r)" % a.get("version"))
    check(b.get("status") == 0 and b.get("name") == "options-b", "variant=b: options-b")
    check(b.get("options") == [variant, beta, shared],
          "variant=b lists variant, beta, shared (got %s)" % b.get("options"))
    check(b.get("version") == "variant=b,alpha=1,beta=7,shared=None",
          "variant=b: open() gets beta=7 (got %r)" % b.get("version"))
    check(b_alpha == {"protocol": 1, "status": -1, "error": "option 'alpha' does not apply with "
                      "variant=b (options that apply: variant, beta, shared)"},
          "alpha with variant=b is refused by name (got %s)" % b_alpha)
    check(a_beta == {"protocol": 1, "status": -1, "error": "option 'beta' does not apply with "
                     "variant=a, alpha=3 (options that apply: variant, alpha, shared)"},
          "beta with the default variant is refused by name (got %s)" % a_beta)
    check(unknown == {"protocol": 1, "status": -1, "error": "unknown option 'gamma' (known "
                      "options: alpha, beta, shared, variant)"},
          "an unknown key is refused as before (got %s)" % unknown)

    be = "exec:%s -B %s" % (args.python, adapter)
    for given, want in ((["variant=b"], ["variant", "beta", "shared"]),
                        ([], ["variant", "alpha", "shared"])):
        cmd = [args.harness, "backend-info", "--backend", be]
        for kv in given:
            cmd += ["--backend-option", kv]
        print("$ " + " ".join(cmd), flush=True)
        p = subprocess.run(cmd, capture_output=True, text=True, env=adapter_env(), timeout=60)
        print("exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr), flush=True)
        check(p.returncode == 0, "backend-info %s: exit 0 (got %d)" % (given, p.returncode))
        listed = re.findall(r"^  ([a-z]+) \(default: ", p.stdout, re.M)
        check(listed == want, "backend-info %s lists %s (got %s)" % (given, want, listed))


# Runs the adapter argv[1] as __main__ and, once it has exited (atexit: after serve() is done,
# before the interpreter finalizes its modules, where an open file would be collected), looks
# for a descriptor still open on the adapter's original stdout, the protocol channel, and says
# so on stderr; the exit status stays the adapter's, and finalization goes on.  fd 1
# itself was re-pointed at stderr by attnconf_exec, and the test gives stdout and stderr
# different pipes.
CHANNEL_GUARD = """import atexit, os, runpy, sys
first = os.fstat(1)
def still_open():
    for fd in sorted(int(n) for n in os.listdir("/proc/self/fd")):
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (first.st_dev, first.st_ino):
            os.write(2, b"protocol channel still open at exit: fd %d\\n" % fd)
atexit.register(still_open)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def s_channel_closed(args):
    """serve() closes its protocol channel on every way out: `close`, end of input, a protocol
    error (exit 2), and an exception escaping it (KeyboardInterrupt from open()).  Each runs
    under -X dev -W error::ResourceWarning: no ResourceWarning on stderr, and (the part that
    does not hang on when the interpreter happens to finalize the module) no descriptor left
    on the channel once the adapter has exited."""
    adapter = os.path.join(HERE, "adapters", "options_adapter.py")
    close = json.dumps({"protocol": 1, "op": "close"})
    paths = [("close", [hello({}), close], 0, 1),
             ("end of input", [hello({})], 0, 1),
             ("protocol error", [hello({}), "not json"], 2, 1),
             ("KeyboardInterrupt", [hello({"variant": "interrupt"})], -2, 0)]
    for what, lines, want_rc, replies in paths:
        rc, out, err = talk(args, "-c", lines, adapter_args=[CHANNEL_GUARD, adapter],
                            flags=["-B", "-X", "dev", "-W", "error::ResourceWarning"])
        check(rc == want_rc, "%s: exit %d (got %d)" % (what, want_rc, rc))
        check(len(out) == replies, "%s: %d reply (got %d)" % (what, replies, len(out)))
        check("ResourceWarning" not in err, "%s: no ResourceWarning on stderr" % what)
        check("still open" not in err, "%s: the protocol channel is closed at exit" % what)


SCENARIOS = {k[2:]: v for k, v in globals().items() if k.startswith("s_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True, help="a Python that can import attnconf_exec")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--harness", help="attnconf, for the scenarios that run it")
    ap.add_argument("--cases", help="the golden cases, likewise")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.workdir = os.path.join(args.workdir, args.scenario)
    os.makedirs(args.workdir, exist_ok=True)
    SCENARIOS[args.scenario](args)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
