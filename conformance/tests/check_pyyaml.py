#!/usr/bin/env python3
"""PyYAML (yaml.safe_load, YAML 1.1) reads case files with the Python types FORMAT.md promises.

usage: check_pyyaml.py [--format-md FORMAT.md [--harness ATTNCONF --backend BACKEND]]
                       ATTNCASE_SAMPLE_EXE WORKDIR [CASES_DIR...]

Runs `ATTNCASE_SAMPLE_EXE write WORKDIR` (the every-feature sample cases of the C writer), then
checks every *.yaml under WORKDIR and under each CASES_DIR against the v3 schema, field by field
and element by element, plus specific values of the samples (-0.0 keeps its sign, NaN/inf,
descriptions with ':' and '#', f16 bit patterns as ints, stride0 slices, kv_len, row_atol).

Cache cases (op: cache) are checked only at the top level here: their schema is their own.

With --format-md, every ```yaml block of FORMAT.md's "Examples" section is saved as
WORKDIR/format_md/<id>.yaml and must pass the same checks, load with the C reader
(`ATTNCASE_SAMPLE_EXE load`), and, with --harness, pass on BACKEND (`ATTNCONF run`): the
documented examples stay valid, correct files.
"""
import math
import os
import re
import subprocess
import sys

import yaml

CAPS = {'f32', 'f16', 'bf16', 'mask.bool', 'mask.additive', 'causal', 'causal.offset', 'gqa',
        'dv_ne_d', 'strided', 'scale', 'mask.broadcast', 'build_mask', 'window', 'lengths',
        'left_padding', 'sdpa.window', 'sdpa.lengths', 'sdpa.left_padding', 'mask.kv_len',
        'stride0', 'sdpa.softcap', 'sdpa.alibi', 'sdpa.sinks', 'sdpa.chunk', 'sdpa.segments',
        'sdpa.blocks', 'mask.chunk', 'mask.segments', 'mask.blocks'}


class Bad(Exception):
    pass


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def need(cond, where, what):
    if not cond:
        raise Bad('%s: %s' % (where, what))


def check_keys(d, where, required, optional=()):
    need(isinstance(d, dict), where, 'expected a mapping, got %r' % type(d).__name__)
    for k in d:
        need(k in required or k in optional, where, 'unknown key %r' % k)
    for k in required:
        need(k in d, where, 'missing key %r' % k)


def check_float(x, where):
    need(isinstance(x, float), where, 'expected a float, got %r (%s)' % (x, type(x).__name__))


def check_shape(s, where):
    need(isinstance(s, list) and len(s) <= 4 and all(is_int(e) and e >= 0 for e in s), where,
         'expected a list of 0..4 non-negative ints, got %r' % (s,))
    n = 1
    for e in s:
        n *= e
    return n


def check_tensor(t, where, name):
    check_keys(t, where, ('dtype', 'shape'),
               ('layout', 'stride0', 'row_pad', 'view', 'data', 'generate'))
    need(t['dtype'] in ('f32', 'f16', 'bf16', 'bool'), where + '.dtype', repr(t['dtype']))
    n = check_shape(t['shape'], where + '.shape')
    if 'view' in t:
        # v as the first Dv columns of k: no data of its own (format v3).
        need(name == 'v' and t['view'] == 'k_prefix' and list(t) == ['dtype', 'shape', 'view'],
             where + '.view', repr(t))
        return
    if 'row_pad' in t:
        need(is_int(t['row_pad']) and 1 <= t['row_pad'] <= 64 and len(t['shape']) == 4,
             where + '.row_pad', repr(t['row_pad']))
    if 'layout' in t:
        need(t['layout'] in ('bhld', 'blhd'), where + '.layout', repr(t['layout']))
    if 'stride0' in t:
        # [0], [1] or [0, 1] on a rank-4 q, k or v; data then holds the slice with extent 1
        # on those dimensions.
        s0 = t['stride0']
        need(s0 in ([0], [1], [0, 1]), where + '.stride0', repr(s0))
        need(name in ('q', 'k', 'v') and len(t['shape']) == 4, where + '.stride0',
             'only on a rank-4 q, k or v')
        for d in s0:
            n //= t['shape'][d] if t['shape'][d] else 1
    need(('data' in t) != ('generate' in t), where, 'exactly one of data and generate')
    if 'generate' in t:
        g = t['generate']
        check_keys(g, where + '.generate', ('kind', 'seed', 'lo', 'hi'))
        need(g['kind'] == 'uniform', where + '.generate.kind', repr(g['kind']))
        need(is_int(g['seed']) and 0 <= g['seed'] < 2 ** 64, where + '.generate.seed',
             repr(g['seed']))
        check_float(g['lo'], where + '.generate.lo')
        check_float(g['hi'], where + '.generate.hi')
        return
    data = t['data']
    need(isinstance(data, list) and len(data) == n, where + '.data',
         'expected a list of %d values' % n)
    for i, x in enumerate(data):
        w = '%s.data[%d]' % (where, i)
        if t['dtype'] == 'f32':
            check_float(x, w)
        elif t['dtype'] == 'bool':
            need(is_int(x) and 0 <= x <= 255, w, 'expected a byte 0..255, got %r' % (x,))
        else:  # f16 / bf16 bit patterns (0x%04x) are ints for YAML 1.1
            need(is_int(x) and 0 <= x <= 0xffff, w, 'expected a 16-bit int, got %r' % (x,))


def check_row_checks(rc, shape, where):
    """{exact: [int, ...], finite: [int, ...]}: each key optional, at least one; every list
    strictly increasing, indices in 0..nrows-1 (nrows = product of all extents but the last),
    no row in both lists."""
    check_keys(rc, where, (), ('exact', 'finite'))
    need(rc, where, 'expected at least one of exact and finite')
    nrows = 1
    for e in shape[:-1]:
        nrows *= e
    seen = set()
    for key in ('exact', 'finite'):
        if key not in rc:
            continue
        rows = rc[key]
        need(isinstance(rows, list) and all(is_int(r) for r in rows), '%s.%s' % (where, key),
             'expected a list of ints, got %r' % (rows,))
        need(all(a < b for a, b in zip(rows, rows[1:])), '%s.%s' % (where, key),
             'not strictly increasing: %r' % (rows,))
        need(all(0 <= r < nrows for r in rows), '%s.%s' % (where, key),
             'index out of range 0..%d: %r' % (nrows - 1, rows))
        need(not seen.intersection(rows), '%s.%s' % (where, key), 'row in both lists')
        seen.update(rows)


def check_int_lists(p, path):
    for k in ('lengths', 'left_padding'):
        if k in p:
            need(isinstance(p[k], list) and p[k] and all(is_int(x) for x in p[k]),
                 '%s: params.%s' % (path, k), repr(p[k]))
    if 'lengths' in p and 'left_padding' in p:
        need(len(p['lengths']) == len(p['left_padding']), path + ': params',
             'lengths and left_padding differ in length')
    # Format v3: B rows of Lk ids each, as many rows as the padding lists have entries.
    rows = set()
    for k in ('segment_ids', 'block_ids'):
        if k in p:
            ids = p[k]
            need(isinstance(ids, list) and ids and
                 all(isinstance(r, list) and r and all(is_int(x) for x in r) for r in ids) and
                 len({len(r) for r in ids}) == 1, '%s: params.%s' % (path, k), repr(ids))
            rows.add(len(ids))
    for k in ('lengths', 'left_padding'):
        if k in p and rows:
            rows.add(len(p[k]))
    need(len(rows) <= 1, path + ': params', 'the per-sequence lists differ in length')
    if 'chunk' in p:
        need(is_int(p['chunk']), path + ': params.chunk', 'not an int')


def check_tolerance(tol, shape, where):
    """{ulps: float, row_atol: [float, ...]}: one finite, non-negative row_atol per output row
    (B*Hq*Lq, the product of all extents but the last)."""
    check_keys(tol, where, ('ulps', 'row_atol'))
    check_float(tol['ulps'], where + '.ulps')
    need(math.isfinite(tol['ulps']) and tol['ulps'] >= 0, where + '.ulps', repr(tol['ulps']))
    nrows = 1
    for e in shape[:-1]:
        nrows *= e
    ra = tol['row_atol']
    need(isinstance(ra, list) and len(ra) == nrows, where + '.row_atol',
         'expected a list of %d floats' % nrows)
    for i, x in enumerate(ra):
        check_float(x, '%s.row_atol[%d]' % (where, i))
        need(math.isfinite(x) and x >= 0, '%s.row_atol[%d]' % (where, i), repr(x))


def check_paged(d, path):
    """An op: paged case as PyYAML reads it: the keys of FORMAT.md's "Paged cases", the table
    and lengths as ints, the pool's f16/bf16 bit patterns as ints, every step's expectation."""
    check_keys(d, path, ('attnconf_case', 'id', 'description', 'rules', 'op', 'requires',
                         'params', 'pool', 'steps'))
    p = d['params']
    check_keys(p, path + ': params', ('dtype', 'batch', 'kv_heads', 'head_dim', 'page_size',
                                      'num_pages', 'block_table', 'seq_lens'), ('v_head_dim',))
    rows = p['block_table']
    need(isinstance(rows, list) and len(rows) == p['batch'] and
         all(isinstance(r, list) and r and len(r) == len(rows[0]) and all(is_int(x) for x in r)
             for r in rows), path + ': params.block_table', repr(rows))
    check_keys(d['pool'], path + ': pool', ('k_pages', 'v_pages'))
    for name, t in d['pool'].items():
        check_tensor(t, '%s: pool.%s' % (path, name), name)
    for i, st in enumerate(d['steps']):
        where = '%s: steps[%d]' % (path, i)
        need(st.get('op') in ('append', 'attend'), where + '.op', repr(st.get('op')))
        exp = st['expect']
        if 'error' in exp:
            need(exp['error'] in ('edtype', 'einval'), where + '.expect.error', repr(exp))
        elif st['op'] == 'append':
            check_keys(exp, where + '.expect', ('slots',))
            need(all(all(isinstance(pr, list) and len(pr) == 2 and all(is_int(x) for x in pr)
                         for pr in row) for row in exp['slots']), where + '.expect.slots',
                 'expected [page, slot] pairs')
        else:
            check_keys(exp, where + '.expect', ('out', 'tolerance'), ('row_checks',))
            for j, x in enumerate(exp['out']['data']):
                check_float(x, '%s.expect.out.data[%d]' % (where, j))
            check_tolerance(exp['tolerance'], exp['out']['shape'], where + '.expect.tolerance')


def check_case(d, path):
    need(isinstance(d, dict), path, 'not a mapping')
    need(is_int(d.get('attnconf_case')) and d['attnconf_case'] == 4, path, 'attnconf_case != 4')
    if d.get('op') == 'cache':
        return
    if d.get('op') == 'paged':
        check_paged(d, path)
        return
    check_keys(d, path, ('attnconf_case', 'id', 'description', 'rules', 'op', 'requires',
                         'params', 'expected'), ('inputs', 'tolerance'))
    need(isinstance(d['id'], str) and d['id'].count('.') >= 2, path + ': id', repr(d['id']))
    need(isinstance(d['description'], str) and d['description'], path + ': description',
         repr(d['description']))
    need(isinstance(d['rules'], list) and d['rules'] and
         all(isinstance(r, str) for r in d['rules']), path + ': rules', repr(d['rules']))
    need(isinstance(d['requires'], list) and all(isinstance(r, str) and r in CAPS
                                                 for r in d['requires']),
         path + ': requires', repr(d['requires']))
    op = d['op']
    need(op in ('sdpa', 'mask'), path + ': op', repr(op))
    p = d['params']
    exp = d['expected']
    check_keys(exp, path + ': expected', (), ('out', 'keep', 'error', 'row_checks'))
    need(len([k for k in exp if k != 'row_checks']) == 1, path + ': expected',
         'exactly one of out, keep, error')
    need('row_checks' not in exp or 'out' in exp, path + ': expected.row_checks',
         'only with expected.out')
    if op == 'sdpa':
        check_keys(p, path + ': params', ('causal',),
                   ('scale', 'causal_offset', 'window', 'lengths', 'left_padding', 'softcap',
                    'alibi_max_bias', 'sinks', 'chunk', 'segment_ids', 'block_ids'))
        need(isinstance(p['causal'], bool), path + ': params.causal', repr(p['causal']))
        for k in ('scale', 'softcap', 'alibi_max_bias'):
            if k in p:
                check_float(p[k], '%s: params.%s' % (path, k))
        if 'sinks' in p:
            need(isinstance(p['sinks'], list) and p['sinks'], path + ': params.sinks',
                 repr(p['sinks']))
            for i, x in enumerate(p['sinks']):
                check_float(x, '%s: params.sinks[%d]' % (path, i))
        for k in ('causal_offset', 'window'):
            if k in p:
                need(is_int(p[k]), '%s: params.%s' % (path, k), 'not an int')
        check_int_lists(p, path)
        check_keys(d['inputs'], path + ': inputs', ('q', 'k', 'v'), ('mask',))
        for name, t in d['inputs'].items():
            check_tensor(t, '%s: inputs.%s' % (path, name), name)
    else:
        need('inputs' not in d, path, 'inputs with op mask')
        check_keys(p, path + ': params', ('lq', 'offset'),
                   ('window', 'lengths', 'left_padding', 'kv_len', 'chunk', 'segment_ids',
                    'block_ids'))
        for k in ('lq', 'offset', 'window', 'kv_len'):
            if k in p:
                need(is_int(p[k]), '%s: params.%s' % (path, k), 'not an int')
        check_int_lists(p, path)
    if 'out' in exp:
        o = exp['out']
        check_keys(o, path + ': expected.out', ('dtype', 'shape', 'data'))
        n = check_shape(o['shape'], path + ': expected.out.shape')
        need(len(o['data']) == n, path + ': expected.out.data', 'length')
        for i, x in enumerate(o['data']):
            check_float(x, '%s: expected.out.data[%d]' % (path, i))
        if 'row_checks' in exp:
            check_row_checks(exp['row_checks'], o['shape'], path + ': expected.row_checks')
        check_tolerance(d['tolerance'], o['shape'], path + ': tolerance')
    else:
        need('tolerance' not in d, path, 'tolerance without expected.out')
    if 'keep' in exp:
        k = exp['keep']
        check_keys(k, path + ': expected.keep', ('shape', 'data'))
        n = check_shape(k['shape'], path + ': expected.keep.shape')
        need(len(k['data']) == n and all(is_int(x) and x in (0, 1) for x in k['data']),
             path + ': expected.keep.data', 'expected %d values 0/1' % n)
    if 'error' in exp:
        need(exp['error'] in ('edtype', 'einval'), path + ': expected.error', repr(exp['error']))


def check_samples(docs):
    d = docs['sdpa.sample.f32_every_feature']
    desc = d['description']
    need(': ' in desc and ' # ' in desc and '"quotes"' in desc and '\t' in desc and
         'ünïcödé' in desc, 'f32 sample', 'description %r' % desc)
    q = d['inputs']['q']['data']
    need(math.isnan(q[0]) and q[1] == math.inf and q[2] == -math.inf, 'f32 sample', 'specials')
    need(q[3] == 0.0 and math.copysign(1.0, q[3]) < 0, 'f32 sample', '-0.0 lost its sign')
    need(math.copysign(1.0, q[4]) > 0, 'f32 sample', '+0.0')
    need(q[5] == 1.40129846e-45, 'f32 sample', 'f32 subnormal %r' % q[5])
    out = d['expected']['out']['data']
    need(math.isnan(out[0]) and out[3] == 0.0 and math.copysign(1.0, out[3]) < 0,
         'f32 sample', 'expected specials')
    need(out[5] == 5e-324, 'f32 sample', 'f64 subnormal %r' % out[5])
    need(d['inputs']['k']['layout'] == 'blhd', 'f32 sample', 'layout')
    need(d['params'] == {'scale': 0.125, 'causal': False}, 'f32 sample', repr(d['params']))
    need(d['expected']['row_checks'] == {'exact': [1, 4], 'finite': [5]}, 'f32 sample',
         'row_checks %r' % (d['expected'].get('row_checks'),))
    need(list(d['expected']) == ['out', 'row_checks'], 'f32 sample', 'expected key order')
    h = docs['sdpa.sample.f16_causal_offset']
    need(h['inputs']['q']['data'][:3] == [0x3c00, 0xbc00, 0x7e01], 'f16 sample', 'bit patterns')
    need(h['inputs']['v']['generate']['seed'] == 2 ** 64 - 1, 'f16 sample', 'seed')
    need(h['params'] == {'causal': True, 'causal_offset': -1}, 'f16 sample', repr(h['params']))
    m = docs['mask.sample.lengths_left_padding']
    need(m['params']['lengths'] == [4, 3] and m['params']['left_padding'] == [0, 1],
         'mask sample', repr(m['params']))
    need(docs['sdpa.sample.mixed_dtype_error']['expected'] == {'error': 'edtype'},
         'error sample', 'expected')
    tol = d['tolerance']
    need(tol['ulps'] == 2.5 and tol['row_atol'][2] == 5e-324 and
         tol['row_atol'][3] == sys.float_info.max, 'f32 sample', 'tolerance %r' % (tol,))
    need(list(tol) == ['ulps', 'row_atol'], 'f32 sample', 'tolerance key order')
    w = docs['sdpa.sample.window_lengths_stride0']
    need(w['params'] == {'causal': True, 'window': 2, 'lengths': [5, 4], 'left_padding': [0, 1]},
         'stride0 sample', repr(w['params']))
    k, v = w['inputs']['k'], w['inputs']['v']
    need(k['stride0'] == [0] and k['shape'] == [2, 2, 5, 4] and len(k['data']) == 40,
         'stride0 sample', 'k holds the batch-0 slice: %r, %d values' % (k['shape'],
                                                                        len(k['data'])))
    need(v['stride0'] == [0, 1] and 'generate' in v, 'stride0 sample', repr(v))
    need(list(k) == ['dtype', 'shape', 'stride0', 'data'], 'stride0 sample', 'k key order')
    need(len(w['tolerance']['row_atol']) == 12, 'stride0 sample', 'one row_atol per row')
    kv = docs['mask.sample.kv_len']
    need(kv['params'] == {'lq': 2, 'offset': 3, 'lengths': [4], 'kv_len': 8}, 'kv_len sample',
         repr(kv['params']))
    need(kv['expected']['keep']['shape'] == [1, 1, 2, 8], 'kv_len sample', 'keep shape')


def yaml_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(x for x in dirnames if not x.startswith('.'))
        for f in sorted(filenames):
            if f.endswith('.yaml') and not f.startswith('.'):
                yield os.path.join(dirpath, f)


def format_md_examples(path, out_dir):
    """Save each ```yaml block of the Examples section as out_dir/<id>.yaml; return the paths."""
    with open(path, encoding='utf-8') as f:
        text = f.read()
    need('\n## Examples\n' in text, path, 'no "## Examples" section')
    section = text.split('\n## Examples\n', 1)[1].split('\n## ', 1)[0]
    blocks = re.findall(r'^```yaml\n(.*?)^```$', section, re.S | re.M)
    need(len(blocks) >= 3, path, 'expected at least 3 yaml examples, found %d' % len(blocks))
    os.makedirs(out_dir, exist_ok=True)
    for f in yaml_files(out_dir):
        os.remove(f)
    paths = []
    for b in blocks:
        m = re.search(r'^id: (\S+)$', b, re.M)
        need(m is not None, path, 'an example without an id:\n' + b)
        p = os.path.join(out_dir, m.group(1) + '.yaml')
        with open(p, 'w', encoding='utf-8') as f:
            f.write(b)
        paths.append(p)
    return paths


def main():
    args = sys.argv[1:]
    opts = {}
    while args and args[0] in ('--format-md', '--harness', '--backend'):
        if len(args) < 2:
            print(__doc__, file=sys.stderr)
            return 2
        opts[args[0]] = args[1]
        args = args[2:]
    if len(args) < 2 or ('--harness' in opts) != ('--backend' in opts):
        print(__doc__, file=sys.stderr)
        return 2
    exe, work = args[0], args[1]
    os.makedirs(work, exist_ok=True)
    for f in yaml_files(work):
        os.remove(f)
    subprocess.run([exe, 'write', work], check=True, stdout=subprocess.DEVNULL)
    docs = {}
    count = 0
    roots = [work] + args[2:]
    try:
        if '--format-md' in opts:
            md_dir = work + '_format_md'
            examples = format_md_examples(opts['--format-md'], md_dir)
            r = subprocess.run([exe, 'load'] + examples, capture_output=True, text=True)
            need(r.returncode == 0, opts['--format-md'], 'an example does not load: ' + r.stderr)
            if '--harness' in opts:
                r = subprocess.run([opts['--harness'], 'run', '--backend', opts['--backend'],
                                    '--cases', md_dir], capture_output=True, text=True)
                need(r.returncode == 0, opts['--format-md'],
                     'an example does not pass on the backend:\n' + r.stdout + r.stderr)
            roots.append(md_dir)
        for root in roots:
            for path in yaml_files(root):
                with open(path, encoding='utf-8') as f:
                    d = yaml.safe_load(f)
                check_case(d, path)
                count += 1
                if root == work:
                    docs[d['id']] = d
        need(len(docs) == 8, work, 'expected 8 sample cases, found %d' % len(docs))
        check_samples(docs)
    except Bad as e:
        print('check_pyyaml: %s' % e, file=sys.stderr)
        return 1
    print('check_pyyaml: %d files ok' % count)
    return 0


if __name__ == '__main__':
    sys.exit(main())
