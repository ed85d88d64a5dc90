#!/usr/bin/env python3
"""check_md_table_width.py — no Markdown table wider than a limit (12 columns by default).

  check_md_table_width.py [--max N] FILE.md...

A table is a GFM pipe table: a row of cells, then a delimiter row (`| --- | ---: |`), then rows
until a blank line or another block.  Its width is the largest cell count of any of its rows, so
a row that outgrows a narrow header counts; such a row is also reported on its own, because a
GFM renderer drops the cells past the header's (a Total column silently lost).  Cells are split
at unescaped pipes the way GFM splits them before it parses inlines (a `\\|` inside a code span
is still one cell); fenced code blocks are skipped.

Exit 0 when every table fits, 1 listing each offender (FILE:LINE, its width, the heading above
it), 2 for a usage error or an unreadable file.  Python 3 standard library only.
"""
import argparse
import re
import sys

DELIM_CELL = re.compile(r"^:?-+:?$")
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")


def split_cells(line):
    """The cells of one table row, or None when the line has no unescaped pipe."""
    s = line.strip()
    cells, cur, i, pipes = [], [], 0, 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            cur.append(s[i:i + 2])
            i += 2
            continue
        if ch == "|":
            pipes += 1
            cells.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    cells.append("".join(cur))
    if pipes == 0:
        return None
    # A leading or trailing pipe opens or closes the row; it does not start an empty cell.
    if s.startswith("|"):
        cells.pop(0)
    if s.endswith("|") and not s.endswith("\\|"):
        cells.pop()
    return [c.strip() for c in cells]


def is_delimiter(cells):
    return bool(cells) and all(DELIM_CELL.match(c) for c in cells)


def ends_table(line):
    return (not line.strip() or FENCE.match(line) or HEADING.match(line)
            or line.lstrip().startswith(">"))


def scan(lines):
    """Yield (line number, width, header width, heading, heading line, odd rows) per table;
    odd rows: (line number, cells) of the rows whose cell count is not the header's."""
    heading, heading_line = "(no heading)", 0
    fence = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and not line.strip()[len(m.group(1)):].strip():
                fence = None
            i += 1
            continue
        if m:
            fence = m.group(1)
            i += 1
            continue
        h = HEADING.match(line)
        if h:
            heading, heading_line = (h.group(2) or "").strip() or "(empty heading)", i + 1
            i += 1
            continue
        head = split_cells(line)
        delim = split_cells(lines[i + 1]) if head is not None and i + 1 < len(lines) else None
        if head is None or delim is None or not is_delimiter(delim):
            i += 1
            continue
        start, width, odd = i + 1, max(len(head), len(delim)), []
        if len(delim) != len(head):
            odd.append((i + 2, len(delim)))
        i += 2
        while i < len(lines) and not ends_table(lines[i]):
            row = split_cells(lines[i])
            n = len(row) if row is not None else 1
            width = max(width, n)
            if n > len(head):
                odd.append((i + 1, n))
            i += 1
        yield start, width, len(head), heading, heading_line, odd


def main():
    ap = argparse.ArgumentParser(description="Fail on Markdown tables wider than --max columns.")
    ap.add_argument("--max", type=int, default=12, help="widest table allowed (default 12)")
    ap.add_argument("files", nargs="+", metavar="FILE.md")
    a = ap.parse_args()
    if a.max < 1:
        ap.error("--max must be at least 1")
    bad = 0
    for path in a.files:
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (OSError, UnicodeDecodeError) as e:
            print(f"check_md_table_width: {path}: {e}", file=sys.stderr)
            return 2
        ntables, widest, file_bad = 0, 0, 0
        for start, width, hwidth, heading, hline, odd in scan(lines):
            ntables += 1
            widest = max(widest, width)
            where = f'under "{heading}" (line {hline})' if hline else "before any heading"
            if width > a.max:
                file_bad += 1
                print(f"{path}:{start}: table of {width} columns (limit {a.max}) {where}")
            for row_line, n in odd:
                file_bad += 1
                print(f"{path}:{row_line}: row of {n} cells in a table whose header has {hwidth} "
                      f"(line {start}) {where}: a renderer drops the cells past the header's")
        bad += file_bad
        if not file_bad:
            print(f"{path}: {ntables} tables, the widest {widest} columns: none over {a.max}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
