#!/usr/bin/env python3
"""check_include_cycles.py — fail when the quoted #include graph of a source tree has a cycle.

    check_include_cycles.py [-I ROOT]... DIR...
    check_include_cycles.py --self-test

Every *.c and *.h file under the DIRs is a node; `#include "x"` is an edge to the file it names,
looked up relative to the including file's directory first, then in each ROOT in the order given
(`#include <...>` and names found nowhere are outside the graph: system and third-party
headers cannot include our files back).  A file reached through a ROOT outside the DIRs is
scanned too, so a cycle through a shared header is still seen.

Two graphs are checked:
  files    the edges as written;
  modules  a file's module is its name without .c/.h, wherever it lives, so x.c and
           include/.../x.h are one module x; x.c including x.h is no edge.  A private header
           that includes its module's public header and is included back (case.c ->
           case_internal.h -> case.h) is a module cycle, though the file graph has none: the
           layering is what has to be acyclic, not only the preprocessor's view.

Exit status 0 when neither graph has a cycle, 1 naming every cycle found (one per strongly
connected component, shortest first, with the #include lines that make it), 2 on bad usage.
--self-test runs the checker on small trees made for it (a file cycle, a module-only cycle, an
acyclic tree with a same-named header elsewhere) and exits 0 when it judges each right.
"""
import argparse
import io
import os
import re
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


def strip_comments(text):
    """The text with C and C++ comments blanked (newlines kept, so line numbers stay right);
    string and character literals are kept whole, so a "/*" inside one opens nothing."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '/' and text.startswith('/*', i):
            end = text.find('*/', i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:end]))
            i = end
        elif c == '/' and text.startswith('//', i):
            end = text.find('\n', i)
            end = n if end < 0 else end
            out.append(' ' * (end - i))
            i = end
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c and text[j] != '\n':
                j += 2 if text[j] == '\\' else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def includes(path):
    """(line, name) of each quoted #include of the file."""
    with open(path, encoding='utf-8', errors='replace') as f:
        text = strip_comments(f.read())
    return [(text.count('\n', 0, m.start()) + 1, m.group(1)) for m in INCLUDE.finditer(text)]


def resolve(name, including, roots):
    for base in [os.path.dirname(including)] + roots:
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.isfile(cand):
            return cand
    return None


def build_graph(dirs, roots):
    """{file: [(target, line, name)]} over the DIRs' sources and what they reach."""
    todo = []
    for d in dirs:
        for top, subdirs, files in os.walk(d):
            subdirs.sort()
            todo += [os.path.normpath(os.path.join(top, f)) for f in sorted(files)
                     if f.endswith(('.c', '.h'))]
    graph = {}
    while todo:
        path = todo.pop()
        if path in graph:
            continue
        graph[path] = []
        for line, name in includes(path):
            target = resolve(name, path, roots)
            if target:
                graph[path].append((target, line, name))
                todo.append(target)
    return graph


def sccs(nodes, succ):
    """Tarjan's strongly connected components (iterative: a deep tree must not hit the
    recursion limit)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(succ[w])))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


def shortest_cycle(comp, succ):
    """A shortest cycle inside one component (breadth-first from each member), as a node list
    whose last element is followed by the first."""
    members, best = set(comp), None
    for start in sorted(comp):
        prev, frontier, found = {start: None}, [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(succ[v]):
                    if w == start:
                        found = v
                        break
                    if w in members and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        if found is None:
            continue
        path, v = [], found
        while v is not None:
            path.append(v)
            v = prev[v]
        path.reverse()
        if best is None or len(path) < len(best):
            best = path
    return best


def cycles(succ):
    """(shortest cycle, every member of its component) per cyclic component."""
    found = []
    for comp in sccs(sorted(succ), succ):
        if len(comp) > 1 or comp[0] in succ[comp[0]]:
            found.append((shortest_cycle(comp, succ), sorted(comp)))
    return sorted(found, key=lambda c: (len(c[0]), c[0]))


def module_of(path):
    return os.path.splitext(os.path.basename(path))[0]


def check(dirs, roots):
    for d in dirs + roots:
        if not os.path.isdir(d):
            print(f'check_include_cycles: {d}: not a directory', file=sys.stderr)
            return 2
    graph = build_graph(dirs, [os.path.normpath(r) for r in roots])
    show = lambda p: os.path.relpath(p)

    file_succ = {f: {t for t, _, _ in edges} for f, edges in graph.items()}
    mod_succ, mod_why = {}, {}
    for f, edges in graph.items():
        mod_succ.setdefault(module_of(f), set())
        for t, line, name in edges:
            a, b = module_of(f), module_of(t)
            if a != b:
                mod_succ[a].add(b)
                mod_succ.setdefault(b, set())
                mod_why.setdefault((a, b), f'{show(f)}:{line}: #include "{name}"')

    bad = 0
    for cyc, comp in cycles(file_succ):
        bad += 1
        loop = cyc + [cyc[0]]
        print('file cycle: ' + ' -> '.join(show(p) for p in loop))
        if len(comp) > len(cyc):
            print(f'  (one of the cycles among {len(comp)} files: '
                  + ', '.join(show(p) for p in comp) + ')')
    for cyc, comp in cycles(mod_succ):
        bad += 1
        loop = cyc + [cyc[0]]
        print('module cycle: ' + ' -> '.join(loop))
        for a, b in zip(loop, loop[1:]):
            print(f'  {mod_why[(a, b)]}')
        if len(comp) > len(cyc):
            print(f'  (one of the cycles among {len(comp)} modules: ' + ', '.join(comp) + ')')
    if bad:
        print(f'check_include_cycles: {bad} cycle(s) in {len(graph)} files, '
              f'{len(mod_succ)} modules', file=sys.stderr)
        return 1
    print(f'no include cycles: {len(graph)} files, {len(mod_succ)} modules')
    return 0


def self_test():
    """Each tree: {path: text}, the roots, the exit status and lines the output must hold."""
    trees = [
        ('file cycle', {'src/a.h': '#include "b.h"\n', 'src/b.h': '#include "a.h"\n'}, [], 1,
         ['file cycle: ', 'module cycle: a -> b -> a']),
        # x.c -> x_impl.h -> inc/x.h: no file repeats, but modules x and x_impl depend on each
        # other; the include in the comment and the one in the string are no edges.
        ('module cycle', {'src/x.c': '#include "x_impl.h"\n',
                          'src/x_impl.h': '/* #include "y.h" */\n#include "x.h"\n',
                          'inc/x.h': 'const char *s = "#include \\"x_impl.h\\"";\n'},
         ['inc'], 1, ['module cycle: x -> x_impl -> x', 'src/x_impl.h:2: #include "x.h"']),
        ('acyclic', {'src/x.c': '#include "x.h"\n#include "util.h"\n', 'inc/x.h': '\n',
                     'src/util.h': '#include <x.h>\n', 'src/y.h': '// #include "y.h"\n'},
         ['inc'], 0, ['no include cycles: 4 files, 3 modules']),
    ]
    bad = 0
    for name, files, roots, want_rc, want_lines in trees:
        with tempfile.TemporaryDirectory() as tmp:
            for rel, text in files.items():
                os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
                with open(os.path.join(tmp, rel), 'w') as f:
                    f.write(text)
            out = io.StringIO()
            with redirect_stdout(out), redirect_stderr(out):
                rc = check([os.path.join(tmp, 'src')], [os.path.join(tmp, r) for r in roots])
        text = out.getvalue()
        missing = [w for w in want_lines if w not in text]
        if rc != want_rc or missing:
            bad += 1
            print(f'self-test {name}: exit {rc} (want {want_rc}), missing {missing}:\n{text}')
    print('self-test: ' + ('FAILED' if bad else 'ok'))
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-I', dest='roots', action='append', default=[], metavar='ROOT',
                    help='directory a quoted include is also looked up in (in order)')
    ap.add_argument('--self-test', action='store_true')
    ap.add_argument('dirs', nargs='*', metavar='DIR')
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if not args.dirs:
        ap.error('at least one DIR is needed')
    return check(args.dirs, args.roots)


if __name__ == '__main__':
    sys.exit(main())
