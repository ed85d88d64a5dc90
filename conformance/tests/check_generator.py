#!/usr/bin/env python3
"""The generator of case format v2 (cases/FORMAT.md, "Generated inputs") in pure Python.

Checks, in order:
  1. the documented test vector (the same literals the Criterion test
     generator/format_md_test_vector asserts in C);
  2. with --format-md FILE: that FORMAT.md states exactly these literals, and that its Python
     snippet (the block after <!-- generator-snippet -->) runs and agrees with this file;
  3. with --c-tool EXE: that the C generator (attncase_sample gen ...) agrees bit for bit on
     more seeds, ranges and dtypes.
Exit status 0 on success, 1 with a message on the first mismatch.
"""
import argparse
import struct
import subprocess
import sys

# --- the generator, as FORMAT.md gives it -------------------------------------------------
M64 = (1 << 64) - 1


def splitmix64(seed):
    state = seed & M64
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def f32_bits(x):
    """binary64 -> binary32 bits, round to nearest even (struct 'f' uses the C conversion;
    it raises OverflowError exactly when the rounded value is infinite)."""
    try:
        return struct.unpack('<I', struct.pack('<f', x))[0]
    except OverflowError:
        return 0xff800000 if x < 0 else 0x7f800000


def f32_value(bits):
    return struct.unpack('<f', struct.pack('<I', bits))[0]


def f16_bits_from_f32(bits):
    """binary32 -> binary16 bits, RNE (struct 'e' rounds a double, here exactly an f32, and
    raises OverflowError exactly when the rounded value is infinite)."""
    try:
        return struct.unpack('<H', struct.pack('<e', f32_value(bits)))[0]
    except OverflowError:
        return 0xfc00 if bits >> 31 else 0x7c00


def bf16_bits_from_f32(bits):
    """binary32 -> bfloat16 bits, RNE; NaN stays a quiet NaN with its sign and top payload."""
    if (bits & 0x7fffffff) > 0x7f800000:
        return (bits >> 16) | 0x0040
    return (bits + 0x7fff + ((bits >> 16) & 1)) >> 16


def generate(dtype, seed, lo, hi, n):
    """The first n elements as bit patterns (f32: 32-bit, f16/bf16: 16-bit)."""
    out = []
    rng = splitmix64(seed)
    for _ in range(n):
        u = next(rng)
        t = (u >> 11) * 2.0 ** -53        # exact
        x = lo + (hi - lo) * t            # binary64: subtract, multiply, add, each rounded
        b = f32_bits(x)                   # first rounding: to binary32
        if dtype == 'f32':
            out.append(b)
        elif dtype == 'f16':
            out.append(f16_bits_from_f32(b))  # second rounding: to the tensor dtype
        elif dtype == 'bf16':
            out.append(bf16_bits_from_f32(b))
        else:
            raise ValueError(dtype)
    return out


# --- the documented test vector: seed 1, lo -1.0, hi 1.0 ----------------------------------
VECTOR_F32_BITS = [0x3e08516f, 0x3efbae37, 0x3f712746, 0xbde3e797]
VECTOR_F32_TEXT = ['1.33123145e-01', '4.91563529e-01', '9.42005515e-01', '-1.11281566e-01']
VECTOR_F16_BITS = [0x3043, 0x37dd, 0x3b89, 0xaf1f]
VECTOR_BF16_BITS = [0x3e08, 0x3efc, 0x3f71, 0xbde4]
# Double-rounding example (FORMAT.md): seed 18042, lo -1.0, hi 1.0, element 0.
DR_SEED, DR_F32_BITS, DR_F32_TEXT, DR_F16_BITS, DR_F16_SINGLE = \
    18042, 0x3e875000, '2.64282227e-01', 0x343a, 0x343b


def fail(msg):
    print('check_generator: ' + msg, file=sys.stderr)
    sys.exit(1)


def check_vector():
    got = generate('f32', 1, -1.0, 1.0, 4)
    if got != VECTOR_F32_BITS:
        fail('f32 vector %s != %s' % ([hex(b) for b in got], [hex(b) for b in VECTOR_F32_BITS]))
    text = ['%.8e' % f32_value(b) for b in got]
    if text != VECTOR_F32_TEXT:
        fail('f32 text %s != %s' % (text, VECTOR_F32_TEXT))
    if generate('f16', 1, -1.0, 1.0, 4) != VECTOR_F16_BITS:
        fail('f16 vector mismatch')
    if generate('bf16', 1, -1.0, 1.0, 4) != VECTOR_BF16_BITS:
        fail('bf16 vector mismatch')
    # The double-rounding example: f32 0x3e875000 is an f16 halfway point.
    if generate('f32', DR_SEED, -1.0, 1.0, 1) != [DR_F32_BITS] or \
            generate('f16', DR_SEED, -1.0, 1.0, 1) != [DR_F16_BITS]:
        fail('double-rounding example mismatch')
    x = next(splitmix64(DR_SEED)) >> 11
    x = -1.0 + (1.0 - -1.0) * (x * 2.0 ** -53)
    if struct.unpack('<H', struct.pack('<e', x))[0] != DR_F16_SINGLE:
        fail('double-rounding example: single rounding should give 0x%04x' % DR_F16_SINGLE)


SNIPPET_MARK = '<!-- generator-snippet -->'


def check_format_md(path):
    """FORMAT.md states the vector, and its Python snippet runs and agrees with this file.
    Returns the snippet's generate function."""
    with open(path, encoding='utf-8') as f:
        doc = f.read()
    wanted = (['0x%08x' % b for b in VECTOR_F32_BITS] + VECTOR_F32_TEXT +
              ['0x%04x' % b for b in VECTOR_F16_BITS] + ['0x%04x' % b for b in VECTOR_BF16_BITS] +
              ['seed %d' % DR_SEED, '0x%08x' % DR_F32_BITS, DR_F32_TEXT, '0x%04x' % DR_F16_BITS,
               '0x%04x' % DR_F16_SINGLE])
    for w in wanted:
        if w not in doc:
            fail('%s does not state the test vector value %s' % (path, w))
    at = doc.find(SNIPPET_MARK)
    if at < 0:
        fail('%s: no %s' % (path, SNIPPET_MARK))
    start = doc.find('```python\n', at)
    end = doc.find('\n```', start + 1)
    if start < 0 or end < 0:
        fail('%s: no python block after %s' % (path, SNIPPET_MARK))
    ns = {}
    try:
        exec(compile(doc[start + len('```python\n'):end], path + ' (generator snippet)', 'exec'), ns)
    except Exception as e:  # includes the snippet's own asserts
        fail('%s: the generator snippet fails: %r' % (path, e))
    return ns['generate']


RUNS = [
    ('f32', 1, -1.0, 1.0, 64),
    ('f16', 1, -1.0, 1.0, 64),
    ('bf16', 1, -1.0, 1.0, 64),
    ('f32', 0, 0.0, 1.0, 257),
    ('f16', 17, -4.0, 4.0, 257),
    ('bf16', 17, -4.0, 4.0, 257),
    ('f16', M64, -1e-3, 1e-3, 100),          # largest seed, f16 subnormals
    ('f16', 12345, -70000.0, 70000.0, 200),  # f16 overflow to +-inf
    ('bf16', 99, -3e38, 3e38, 200),
    ('f32', 7, -1e-40, 1e-40, 100),          # f32 subnormals
    ('f32', 8, -1e39, 1e39, 100),            # f32 overflow to +-inf
    ('f32', 5, 0.1, 0.30000000000000004, 100),
    ('f16', 3, 2.5, 2.5, 10),                # lo == hi
    ('f16', DR_SEED, -1.0, 1.0, 64),         # element 0 is the double-rounding example
]


def check_snippet(gen):
    for dtype, seed, lo, hi, n in RUNS:
        if gen(dtype, seed, lo, hi, n) != generate(dtype, seed, lo, hi, n):
            fail('the FORMAT.md snippet disagrees for %s seed %d [%r, %r)' % (dtype, seed, lo, hi))


def check_c_tool(exe):
    for dtype, seed, lo, hi, n in RUNS:
        args = [exe, 'gen', dtype, str(seed), repr(lo), repr(hi), str(n)]
        res = subprocess.run(args, capture_output=True, text=True)
        if res.returncode != 0:
            fail('%s failed (%d): %s' % (' '.join(args), res.returncode, res.stderr))
        got = [int(line, 16) for line in res.stdout.split()]
        want = generate(dtype, seed, lo, hi, n)
        if got != want:
            i = next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) \
                if len(got) == len(want) else -1
            fail('C and Python disagree for %s seed %d [%r, %r): element %d' %
                 (dtype, seed, lo, hi, i))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('--format-md', help='path of cases/FORMAT.md')
    ap.add_argument('--c-tool', help='path of the attncase_sample executable')
    a = ap.parse_args()
    check_vector()
    if a.format_md:
        check_snippet(check_format_md(a.format_md))
    if a.c_tool:
        check_c_tool(a.c_tool)
    print('check_generator: ok')


if __name__ == '__main__':
    main()
