#!/usr/bin/env python3
"""check_floors.py — the harness's include floors, checked on the sources.

The build already refuses an include of a room it does not link (each room's library exports
only <room>/include/); this check also refuses the links that would make such an include
compile: a room may name in #include "<room>/..." only the rooms of its floor table below, a
plain #include "x.h" must be a private header in the including file's own folder, and no
include climbs with "../".  Usage: check_floors.py HARNESS_DIR.  Exit 1 lists every violation.
"""
import os
import re
import sys

# Each room and the rooms it may include (its floors below); README.md beside the harness shows
# the same table.  "" is the harness folder itself (attnconf.c, the command table).
ALLOWED = {
    "common": set(),
    "backend": {"common"},
    "results": {"common"},
    "run": {"backend", "results", "common"},
    "report": {"results", "common"},
    "fuzz": {"run", "backend", "results", "common"},
    "bench": {"run", "backend", "results", "common"},
    "perf": {"common"},
    "": {"run", "report", "fuzz", "bench", "perf", "common"},
}
# Includes outside the harness: the case library, the reference and the ABI header.
EXTERNAL = ("attncase/", "attnref/", "attnconf/")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def room_of(rel):
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else ""


def check(root):
    bad = []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            room = room_of(rel)
            if room not in ALLOWED:
                bad.append(f"{rel}: folder {room!r} is not a room of the floor table")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                line = text.count("\n", 0, m.start()) + 1
                where = f"{rel}:{line}: #include \"{inc}\""
                if inc.startswith(EXTERNAL):
                    continue
                if ".." in inc.split("/"):
                    bad.append(f"{where}: climbs out of its folder")
                    continue
                if "/" in inc:
                    target = inc.split("/")[0]
                    if target != room and target not in ALLOWED[room]:
                        bad.append(f"{where}: room {room or '(top)'!r} may not include room "
                                   f"{target!r} (allowed: {sorted(ALLOWED[room]) or 'none'})")
                    elif not os.path.exists(os.path.join(root, target, "include", inc)):
                        bad.append(f"{where}: not a public header of room {target!r}")
                    continue
                if not os.path.exists(os.path.join(dirpath, inc)):
                    bad.append(f"{where}: a plain include must be a private header beside it")
    return bad


def main():
    if len(sys.argv) != 2:
        print("usage: check_floors.py HARNESS_DIR", file=sys.stderr)
        return 2
    bad = check(sys.argv[1])
    for b in bad:
        print(b)
    print(f"check_floors: {len(bad)} violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
