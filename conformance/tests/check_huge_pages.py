#!/usr/bin/env python3
"""check_huge_pages.py -- ctest of `attnconf bench --huge-pages` (harness/bench/bench_pages.c).

    check_huge_pages.py ATTNCONF BACKEND PYTHON BAD_ADAPTER SUITE LIMITS WORKDIR MALLOC

MALLOC is "glibc" for a plain build, "asan" for one under AddressSanitizer, whose allocator
replaces malloc and ignores glibc's tunables: there bench must say so in a note, and the
in-process K and V are not held to the 16 MiB (the read loop's buffer and the adapter still are);
a plain build must print no such note.

Where the kernel's THP mode is `madvise` or `always`:
  - with --huge-pages, machine.huge_pages is true and the in-process benchmark of a shape whose
    K and V take 32 MiB had at least 16 MiB of its process on huge pages after the first call
    (malloc's, through the tunable), and at least 16 MiB of the read loop's buffer beside it
    (bench's own mapping, by madvise);
    an exec: adapter starts with glibc.malloc.hugetlb=1 in its GLIBC_TUNABLES, after what the
    caller's GLIBC_TUNABLES already held (a hugetlb=0 there: the later setting wins);
  - without it, machine.huge_pages is false, the adapter's environment lacks the tunable and,
    under `madvise`, neither the process nor the read loop's buffer had huge pages (so the flag
    is what gave them);
  - a GLIBC_TUNABLES with the tunable set by hand, without the flag, is not taken for it
    (machine.huge_pages false, the read loop's buffer not advised) and reaches the adapter as
    it was;
  - the limits file, which predates machine.huge_pages, draws no warning about pages.
Elsewhere (`never`, or no THP at all): --huge-pages is refused with exit 2 and the reason.
"""
import json
import os
import shlex
import subprocess
import sys

THP = "/sys/kernel/mm/transparent_hugepage/enabled"
TUNABLE = "glibc.malloc.hugetlb=1"


def thp_mode():
    try:
        line = open(THP).read()
    except OSError:
        return "unknown"
    return line[line.index("[") + 1:line.index("]")] if "[" in line else "unknown"


def main():
    attnconf, backend, python, adapter, suite, limits, work, malloc = sys.argv[1:9]
    if malloc not in ("glibc", "asan"):
        print(f"MALLOC must be glibc or asan, not {malloc!r}")
        return 2
    os.makedirs(work, exist_ok=True)
    fails = []
    mode = thp_mode()
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)

    def bench(huge, out, envfile, preset=None):
        e = dict(env)
        if preset is not None:
            e["GLIBC_TUNABLES"] = preset
        spy = f"exec:sh -c 'printf %s \"$GLIBC_TUNABLES\" > {shlex.quote(envfile)}; " \
              f"exec {shlex.quote(python)} {shlex.quote(adapter)} timed'"
        runs = [[attnconf, "bench", "--backend", backend, "--filter", "hp.decode.*"],
                [attnconf, "bench", "--backend", spy, "--filter", "hp.tiny.*"]]
        docs = []
        for k, cmd in enumerate(runs):
            o = f"{out}.{k}.json"
            if os.path.exists(o):
                os.remove(o)
            cmd += ["--suite", suite, "--limits", limits, "--min-time", "0.02", "--min-reps", "3",
                    "--out", o] + (["--huge-pages"] if huge else [])
            p = subprocess.run(cmd, env=e, capture_output=True, text=True, timeout=300)
            docs.append((p, json.load(open(o)) if p.returncode == 0 else None))
        return docs

    if mode not in ("madvise", "always"):
        p = subprocess.run([attnconf, "bench", "--peak", "--huge-pages"], env=env,
                           capture_output=True, text=True, timeout=120)
        if p.returncode != 2 or "transparent huge pages are" not in p.stderr:
            fails.append(f"THP mode {mode}: --huge-pages gave exit {p.returncode}, "
                         f"stderr {p.stderr!r}; expected exit 2 and the reason")
    else:
        for huge, preset in ((True, None), (True, "glibc.malloc.hugetlb=0"), (False, None),
                             (False, TUNABLE)):
            tag = f"{'huge' if huge else 'base'}{'-preset' if preset else ''}"
            envfile = os.path.join(work, f"{tag}.env")
            if os.path.exists(envfile):
                os.remove(envfile)
            docs = bench(huge, os.path.join(work, tag), envfile, preset)
            bad = [(p.returncode, p.stderr[-400:]) for p, d in docs if d is None]
            if bad:
                fails.append(f"{tag}: bench failed: {bad}")
                continue
            warned = [p.stderr for p, _ in docs if "huge pages; this run is" in p.stderr]
            if warned:
                fails.append(f"{tag}: a pages warning for a limits file that records none: "
                             f"{warned[0][-300:]!r}")
            noted = [p for p, _ in docs if "note: --huge-pages: this attnconf is built with "
                     "AddressSanitizer" in p.stderr]
            if len(noted) != (2 if huge and malloc == "asan" else 0):
                fails.append(f"{tag}: {len(noted)} of 2 runs noted that AddressSanitizer's "
                             f"malloc ignores the tunable; this build's malloc is {malloc}")
            (_, d), (_, dx) = docs
            for doc in (d, dx):
                m = doc["machine"]
                if m["huge_pages"] is not huge or m["thp_mode"] != mode:
                    fails.append(f"{tag}: machine huge_pages {m['huge_pages']}, thp_mode "
                                 f"{m['thp_mode']!r}; expected {huge}, {mode!r}")
            x = d["backends"][0]["shapes"][0]
            got = x["huge_page_bytes"]
            if x["status"] != "OK" or not isinstance(got, int):
                fails.append(f"{tag}: {x['id']} {x['status']} {x['message']!r}, "
                             f"huge_page_bytes {got!r}")
            elif huge and malloc == "glibc" and got < 16 << 20:
                fails.append(f"{tag}: {got} bytes on huge pages with --huge-pages; expected "
                             f"at least 16 MiB of the 32 MiB of K and V")
            elif not huge and not preset and mode == "madvise" and got != 0:
                fails.append(f"{tag}: {got} bytes on huge pages without --huge-pages (THP "
                             f"madvise: nothing asked for them)")
            rb = x.get("read_beside_huge_bytes")
            if not isinstance(rb, int) or (huge and rb < 16 << 20) or \
                    (not huge and mode == "madvise" and rb != 0):
                fails.append(f"{tag}: the read loop's buffer had {rb!r} bytes on huge pages")
            seen = open(envfile).read() if os.path.exists(envfile) else None
            want = (preset + ":" if preset else "") + TUNABLE if huge else (preset or "")
            if seen != want:
                fails.append(f"{tag}: the exec: adapter started with GLIBC_TUNABLES={seen!r}, "
                             f"expected {want!r}")
    for f in fails:
        print("FAIL:", f)
    print(f"THP mode {mode}: {'ok' if not fails else f'{len(fails)} failure(s)'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
