"""attnconf_repro: the text of a self-contained reproducer for one attnconf sdpa case.

A finding on a third-party library becomes an upstream bug report when its maintainers can run
it without attnconf.  `attnconf repro` (PROTOCOL.md, "repro") sends an adapter the sdpa request
of one case plus what the case requires; the adapter answers with a Python script that needs
only the library and numpy:

    the inputs, embedded (the raw little-endian bytes the adapter received, zlib + base64, with
    the dtype, shape and strides that address them), as `INPUTS[name]`, objects with the
    attributes of attnconf_exec.Tensor (dtype, shape, strides, storage, array);
    the library's part, written by the adapter from the same decisions as its real call
    (imports and helpers at module level, then the body of `run_library()`, which returns
    (got, got_dtype): the output as a numpy array of its values, and the wire name of the dtype
    the library produced);
    a float64 numpy reference of SPEC.md's semantics for the request's parameters, embedded
    (not imported from attnconf);
    the comparison: expected against got (first differing element, max abs error, NaN counts),
    or for a must-reject case that the library accepted it; exit status 1 when they disagree
    beyond the case's tolerance, 0 otherwise.

An adapter calls script(header, inputs(req), ...) with a Library describing its part.
Standard library and numpy only; it does not import attnconf_exec (the JAX adapter, which has
its own framing, uses it too).
"""

import base64
import dataclasses
import textwrap
import zlib
from typing import Optional

import numpy as np

ELEMENT_SIZE = {"f32": 4, "f16": 2, "bf16": 2, "bool": 1}


@dataclasses.dataclass(frozen=True)
class Input:
    """One request tensor as the adapter received it: the dense buffer and its strides."""
    name: str
    dtype: str       # wire dtype: f32, f16, bf16, bool
    shape: tuple
    strides: tuple   # in elements
    data: bytes      # the payload, little-endian


@dataclasses.dataclass(frozen=True)
class Library:
    """The library-specific part of a reproducer.

    requires: what to install, e.g. "torch==2.15.0 numpy" (the docstring's run line);
    versions: the exact versions (the adapter's hello version);
    posed:    how the case is posed to the library, in words (one or more lines);
    setup:    module-level code: imports and helpers the call uses;
    call:     the body of run_library(): uses INPUTS and returns (got, got_dtype)."""
    requires: str
    versions: str
    posed: str
    setup: str
    call: str


def inputs(req) -> dict:
    """The Inputs of a request whose q, k, v, mask (mask may be None) have attnconf_exec.Tensor's
    dtype, shape, strides and storage."""
    out = {}
    for name in ("q", "k", "v", "mask"):
        t = getattr(req, name)
        if t is not None:
            out[name] = Input(name, t.dtype, tuple(t.shape), tuple(t.strides),
                              np.ascontiguousarray(t.storage).tobytes())
    return out


def dense_input(name: str, dtype: str, array) -> Input:
    """An Input for a row-major array (bf16 as uint16 bit patterns or any 2-byte dtype, bool as
    one byte per element)."""
    a = np.ascontiguousarray(array)
    if dtype == "bool":
        a = a.astype(np.uint8)
    elif a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    shape = tuple(int(n) for n in a.shape)
    strides = tuple(int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape)))
    return Input(name, dtype, shape, strides, a.tobytes())


# The tolerance and statuses a repro request's "expect" member carries (PROTOCOL.md, "repro").
STATUSES = ("ok", "einval", "edtype", "enomem", "enotsup", "ebackend")


def _docstring(header: dict, backend: str, lib: Library, filename: str) -> str:
    case = header.get("case", "?")
    expect = header.get("expect") or {}
    status = expect.get("status", "ok")
    rules = ", ".join(header.get("rules") or []) or "(none listed)"
    desc = " ".join(str(header.get("description") or "").split())
    if status == "ok":
        wants = f"the output within {float(expect.get('atol') or 0):.3g} of SPEC.md's result"
    else:
        wants = f"a rejection ({status}): the library must refuse these inputs"
    params = [f"causal={bool(header.get('causal'))}"]
    if header.get("causal") and header.get("causal_offset") is not None:
        params.append(f"causal_offset={header['causal_offset']}")
    if header.get("scale") is not None:
        params.append(f"scale={header['scale']!r}")
    for key in ("window", "lengths", "left_padding", "softcap", "alibi_max_bias", "sinks",
                "chunk", "segment_ids", "block_ids"):
        if header.get(key):
            params.append(f"{key}={header[key]!r}")
    lines = [
        f"Reproducer: attnconf case {case} on {backend}.",
        "",
        *textwrap.wrap(f"What SPEC.md expects ({rules}): {desc}", 96),
        f"Required: {wants}.",
        f"Parameters: {', '.join(params)}.",
        "",
        f"Library: {lib.versions}",
        "How the case is posed:",
        *["    " + line for line in lib.posed.strip().splitlines()],
        "",
        f"Run: pip install {lib.requires}; python3 {filename}",
        "Exit status: 1 when the library disagrees with SPEC.md beyond the tolerance (or accepts",
        "inputs it must reject), 0 when it agrees.  The inputs are embedded (raw little-endian",
        "bytes, zlib + base64); the expected values come from the float64 numpy reference below,",
        "written from SPEC.md for these parameters.",
    ]
    return '"""' + "\n".join(lines).replace('"""', "'''").replace("\\", "\\\\") + '\n"""\n'


def _blob(data: bytes) -> str:
    text = base64.b64encode(zlib.compress(data, 9)).decode("ascii")
    return "\n".join("    " + repr(text[i:i + 96]) for i in range(0, len(text), 96)) or "    ''"


def _inputs_code(tensors: dict) -> str:
    out = []
    for t in tensors.values():
        out.append(f'INPUTS[{t.name!r}] = Tensor({t.name!r}, {t.dtype!r}, {list(t.shape)!r}, '
                   f'{list(t.strides)!r}, (\n{_blob(t.data)}))')
    return "\n".join(out)


# Module-level code of every reproducer, before the library's part: how the embedded inputs
# are decoded.  A Tensor mirrors attnconf_exec.Tensor, so the adapter's helpers read it alike.
_PRELUDE = '''
import base64
import sys
import zlib

import numpy as np

STORAGE = {"f32": np.dtype("<f4"), "f16": np.dtype("<f2"), "bf16": np.dtype("<u2"),
           "bool": np.dtype("u1")}


class Tensor:
    """One input as the library's caller received it: a dense little-endian buffer (`storage`,
    1-D) and the strides (in elements) that address it; bf16 is kept as uint16 bit patterns."""

    def __init__(self, name, dtype, shape, strides, blob):
        self.name, self.dtype = name, dtype
        self.shape, self.strides = tuple(shape), tuple(strides)
        self.storage = np.frombuffer(zlib.decompress(base64.b64decode("".join(blob))),
                                     STORAGE[dtype])

    @property
    def array(self):
        """The logical tensor (a read-only strided view; bool as np.bool_)."""
        item = self.storage.itemsize
        view = np.lib.stride_tricks.as_strided(
            self.storage, self.shape, [s * item for s in self.strides], writeable=False)
        return np.asarray(view != 0) if self.dtype == "bool" else view


def values(t):
    """A tensor's values as float64 (bf16 from its bit patterns, exactly)."""
    a = np.asarray(t.array)
    if t.dtype == "bf16":
        a = (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)


INPUTS = {}
'''

# The float64 reference of SPEC.md for one sdpa call, and the comparison.  Written from SPEC.md
# (clauses 1-3, 6, 7, 9, 10, 19-22), independently of attnconf's C reference.
_REFERENCE = '''
def reference():
    """SPEC.md's output for INPUTS and the parameters above, in float64.

    out[b, h, i] = sum over kept keys j of softmax_j(scale * q[b,h,i] . k[b,h',j] + bias) v[b,h',j]
    with h' = h // (Hq // Hkv) (GQA repeats each kv head for consecutive query heads); a key is
    kept when the bool mask says so (a float mask is added, and only -inf excludes), when
    j <= offset + i under causal (offset = Lk - Lq unless given: bottom-right), when
    j > offset + i - WINDOW, when j < LENGTHS[b] and when j >= LEFT_PADDING[b]; a query that
    keeps no key gets 0; a key that is not kept contributes nothing, whatever its K and V hold
    (NaN and inf included).

    The terms of current models, with p = offset + i the query's absolute position (also
    without causal): CHUNK keeps only keys of p's chunk, counted from LEFT_PADDING[b];
    SEGMENT_IDS keeps only keys of p's document (none when p is not a key slot); BLOCK_IDS also
    keeps the later keys of p's bidirectional block (ids >= 0) past the causal cut, window,
    chunk, documents and padding still applying.  A kept key's score is
    scale * q.k, then SOFTCAP * tanh(s / SOFTCAP), then - m_h * |p - j| (ALiBi slope m_h of
    query head h from ALIBI_MAX_BIAS), then + bias; SINKS[h] joins the softmax as a logit with
    no value vector."""
    q, k, v = values(INPUTS["q"]), values(INPUTS["k"]), values(INPUTS["v"])
    b_, hq, lq, d = q.shape
    hkv, lk, dv = k.shape[1], k.shape[2], v.shape[3]
    scale = 1.0 / np.sqrt(d) if SCALE is None else SCALE
    keep = np.ones((b_, hq, lq, lk), bool)
    bias = np.zeros((b_, hq, lq, lk))
    if "mask" in INPUTS:
        m = INPUTS["mask"]
        if m.dtype == "bool":
            keep &= np.broadcast_to(m.array, keep.shape)
        else:
            bias = np.broadcast_to(values(m), keep.shape)
            keep &= bias != -np.inf
    i = np.arange(lq)[:, None]
    j = np.arange(lk)[None, :]
    offset = lk - lq if CAUSAL_OFFSET is None else CAUSAL_OFFSET
    p = offset + i  # each query's absolute position
    in_slot = (p >= 0) & (p < lk)
    slot = np.clip(p, 0, max(lk - 1, 0))
    for b in range(b_):
        lp = LEFT_PADDING[b] if LEFT_PADDING is not None else 0
        row = np.ones((lq, lk), bool)
        if LENGTHS is not None:
            row &= j < LENGTHS[b]
        row &= j >= lp
        if SEGMENT_IDS is not None and lk:
            seg = np.asarray(SEGMENT_IDS[b])
            row &= in_slot & (seg[slot] == seg[j])
        if CAUSAL:
            later = j > p
            cut = later
            if BLOCK_IDS is not None and lk:
                blk = np.asarray(BLOCK_IDS[b])
                cut = later & ~(in_slot & (blk[slot] >= 0) & (blk[slot] == blk[j]))
            if WINDOW:
                cut = cut | (~later & (j <= p - WINDOW))
            if CHUNK:
                cut = cut | ((p - lp) // CHUNK != (j - lp) // CHUNK)
            row &= ~cut
        keep[b] &= row
    out = np.zeros((b_, hq, lq, dv))
    n = 1
    while n * 2 <= hq:
        n *= 2
    for b in range(b_):
        for h in range(hq):
            kh = h // (hq // hkv)
            if h < n:
                slope = 2.0 ** (-ALIBI_MAX_BIAS * (h + 1) / n)
            else:
                slope = 2.0 ** (-(ALIBI_MAX_BIAS / 2) * (2 * (h - n) + 1) / n)
            for r in range(lq):
                kept = np.flatnonzero(keep[b, h, r])
                if kept.size == 0:
                    continue  # a row that keeps no key is 0, with or without a sink
                s = scale * (k[b, kh, kept] @ q[b, h, r])
                if SOFTCAP:
                    s = SOFTCAP * np.tanh(s / SOFTCAP)
                if ALIBI_MAX_BIAS:
                    s = s - slope * np.abs(p[r, 0] - kept)
                s = s + bias[b, h, r, kept]
                sink = -np.inf if SINKS is None else SINKS[h]
                mx = max(s.max(), sink)
                w = np.exp(s - mx)
                out[b, h, r] = (w / (w.sum() + np.exp(sink - mx))) @ v[b, kh, kept]
    return out


def rounded(x, dtype):
    """x (float64) rounded once to the nearest value of dtype, ties to even: what an exact row
    (the case's row_checks) is compared with."""
    if dtype == "f32":
        return x.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return x.astype(np.float16).astype(np.float64)
    # bf16: 8 significant bits, no numpy type; rounded directly from float64 (not via f32,
    # which could round twice)
    m, e = np.frexp(x)
    e = np.maximum(e, -125)  # bf16 subnormals have the spacing of the smallest normal binade
    with np.errstate(invalid="ignore", over="ignore"):
        out = np.ldexp(np.round(np.ldexp(x, 8 - e)), e - 8)
    return np.where(np.isfinite(x), out, x)


def main():
    try:
        got, got_dtype = run_library()
    except Exception as exc:  # the library refused the inputs
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:600]
        if EXPECT_STATUS != "ok":
            print(f"ok: the library rejected the inputs, as SPEC.md requires ({EXPECT_STATUS}): "
                  f"{text}")
            return 0
        print(f"MISMATCH: the library raised on valid inputs: {text}")
        return 1
    got = np.asarray(got)
    if EXPECT_STATUS != "ok":
        print(f"MISMATCH: the library accepted inputs SPEC.md requires it to reject "
              f"({EXPECT_STATUS}); it returned a {got_dtype} array of shape {list(got.shape)}")
        return 1
    want = reference()
    bad = 0
    if got_dtype != INPUTS["q"].dtype:
        print(f"MISMATCH: output dtype {got_dtype}, expected {INPUTS['q'].dtype} (q's dtype)")
        bad = 1
    if got.shape != want.shape:
        print(f"MISMATCH: output shape {list(got.shape)}, expected {list(want.shape)}")
        return 1
    g = got.astype(np.float64)
    rows = ROW_CHECKS or "c" * (want.size // max(want.shape[-1], 1))
    mode = np.repeat(np.frombuffer(rows.encode(), "S1"), want.shape[-1]).reshape(want.shape)
    close = mode == b"c"
    exact = mode == b"e"
    finite = mode == b"f"
    both = np.isfinite(g) & np.isfinite(want)
    # As attnconf compares: NaN only against NaN, an infinity only against the same one.
    same = (np.isnan(g) & np.isnan(want)) | (np.isinf(g) & (g == want))
    ok = np.where(close, same | (both & (np.abs(np.where(both, g - want, 0)) <= ATOL)), True)
    want_rounded = rounded(want, INPUTS["q"].dtype)
    ok &= np.where(exact, same | (g == want_rounded), True)
    ok &= np.where(finite, np.isfinite(g), True)
    err = np.abs(np.where(both & ~finite, g - want, 0))
    print(f"output {got_dtype} {list(got.shape)}: max abs error {err.max() if err.size else 0:.3g}"
          f" over the finite pairs (tolerance {ATOL:.3g}), NaN: got {int(np.isnan(g).sum())}, expected "
          f"{int(np.isnan(want[~finite]).sum())}, infinite: got {int(np.isinf(g).sum())}")
    if ok.all():
        print("ok: the library agrees with SPEC.md" if not bad else
              "the values agree; the dtype does not")
        return bad
    idx = tuple(int(x) for x in np.argwhere(~ok)[0])
    what = {b"c": f"required: within {ATOL:.3g}", b"e": "required: exactly, the result rounded once to "
            f"{INPUTS['q'].dtype}",
            b"f": "required: finite, its value implementation-defined"}[mode[idx]]
    expected = want_rounded[idx] if mode[idx] == b"e" else want[idx]
    print(f"MISMATCH: {int((~ok).sum())} of {ok.size} elements differ; first at {list(idx)}: "
          f"got {float(g[idx])!r}, expected {float(expected)!r} ({what})")
    return 1


if __name__ == "__main__":
    sys.exit(main())
'''


def _literal(x) -> str:
    """A header float (a number, or "nan" / "inf" / "-inf") as Python source."""
    x = float(x)
    return repr(x) if np.isfinite(x) else f"float({str(x)!r})"


def script(header: dict, tensors: dict, backend: str, lib: Library,
           filename: Optional[str] = None) -> str:
    """The reproducer's text for a repro request `header` (the sdpa members plus "case",
    "expect", and optionally "description" and "rules"), its Inputs `tensors` (inputs()),
    the backend's name and the library's part."""
    expect = header.get("expect") or {}
    status = expect.get("status", "ok")
    if status not in STATUSES:
        raise ValueError(f"repro: expect.status {status!r} is not one of {', '.join(STATUSES)}")
    atol = expect.get("atol")
    if status == "ok" and not (isinstance(atol, (int, float)) and atol >= 0):
        raise ValueError(f"repro: expect.atol {atol!r} is not a number >= 0 (needed for an "
                         "ok case)")
    rows = expect.get("row_checks")
    if rows is not None and not (isinstance(rows, str) and set(rows) <= set("cef")):
        raise ValueError(f"repro: expect.row_checks {rows!r} is not a string of c, e, f")
    case = str(header.get("case") or "case")
    filename = filename or f"repro_{case.replace('.', '_').replace('*', '_')}.py"
    scale, sinks = header.get("scale"), header.get("sinks")
    params = "\n".join([
        f"CASE = {case!r}",
        f"CAUSAL = {bool(header.get('causal'))!r}",
        f"CAUSAL_OFFSET = {header.get('causal_offset')!r}",
        f"SCALE = {'None' if scale is None else _literal(scale)}",
        f"WINDOW = {int(header.get('window') or 0)!r}",
        f"LENGTHS = {header.get('lengths')!r}",
        f"LEFT_PADDING = {header.get('left_padding')!r}",
        f"SOFTCAP = {_literal(header.get('softcap') or 0)}",
        f"ALIBI_MAX_BIAS = {_literal(header.get('alibi_max_bias') or 0)}",
        f"SINKS = {'None' if sinks is None else '[' + ', '.join(map(_literal, sinks)) + ']'}",
        f"CHUNK = {int(header.get('chunk') or 0)!r}",
        f"SEGMENT_IDS = {header.get('segment_ids')!r}",
        f"BLOCK_IDS = {header.get('block_ids')!r}",
        f"EXPECT_STATUS = {status!r}  # 'ok': a result is required; else the rejection required",
        f"ATOL = {float(atol if atol is not None else 0)!r}  # the largest error the case allows "
        "any element",
        f"ROW_CHECKS = {rows!r}  # per output row: c within ATOL, e exactly the result rounded "
        "once, f finite; None: all c",
    ])
    body = textwrap.indent(lib.call.strip("\n"), "    ")
    return "".join([
        "#!/usr/bin/env python3\n",
        _docstring(header, backend, lib, filename),
        "from __future__ import annotations  # the library helpers' annotations are not needed\n",
        _PRELUDE,
        "\n", params, "\n\n",
        _inputs_code(tensors), "\n\n",
        "# ---- the library, called as attnconf called it ----\n",
        lib.setup.strip("\n"), "\n\n\n",
        "def run_library():\n", body, "\n\n\n",
        "# ---- SPEC.md's semantics, and the comparison ----\n",
        _REFERENCE,
    ])
