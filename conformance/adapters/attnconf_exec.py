"""attnconf_exec: the attnconf exec protocol, version 1, for Python adapters.

The protocol (conformance/include/attnconf/PROTOCOL.md) serves the backend interface of
backend.h over stdin/stdout.  This module does the transport so that an adapter only poses
cases to its library.  Standard library and numpy only.

Import it before anything that might print: at import, file descriptor 1 is re-pointed at
stderr and sys.stdout becomes sys.stderr, so no print (from Python or from a C++ library
writing to fd 1) can reach the protocol channel, which is a private duplicate of the original
stdout.

An adapter is any object with

    options: list[Option]                     # what hello accepts (may be empty); an
                                              # Option's applies= ties it to a variant
    open(options: dict[str, str]) -> Identity # on hello; every known key present (defaults
                                              # filled in); raise Refusal to decline
    sdpa(req: SdpaRequest) -> (dtype, array)  # dtype as produced: "f32", "f16" or "bf16"
                                              # (bf16: uint16 bit patterns)
and optionally
    build_mask(req: MaskRequest) -> array     # bool, (B, 1, Lq, Lk), Lk = kv_len or offset + Lq
    cache_create(p: CacheParams) -> handle    # the KV cache ops (PROTOCOL.md "Cache
    cache_update(h, k: Tensor, v: Tensor)     #  operations"); handles are any Python objects,
    cache_trim(h, n) -> int                   #  the module numbers them for the wire
    cache_make_mask(h, n, window, length) -> array  # bool (B, 1, n, length), before the
                                              #  update of n tokens
    cache_state(h) -> CacheState
    cache_filter(h, rows), cache_extend(h, other), cache_merge([h, ...]) -> handle,
    cache_prepare(h, left_padding, lengths), cache_finalize(h)
    refusal_of(exc) -> Refusal | None         # status and message for an exception the
                                              # library raised (None: not recognised)
    repro(req: SdpaRequest, header) -> (text, language)  # a reproducer of one case
                                              # (PROTOCOL.md "repro"; attnconf_repro.py)
    paged_append(req: PagedAppendRequest) -> (k_pages, v_pages)  # paged KV caches (PROTOCOL.md
                                              #  "Paged KV caches"): the whole pool after the
                                              #  append, as the library left it; the module
                                              #  sends the slots that differ from the pool sent
    paged_sdpa(req: PagedRequest) -> (dtype, array)  # as sdpa: out (B, Hq, Lq, Dv)

and serve(adapter) runs it until `close` or end of input.  Statuses: raise Refusal(status,
message) for a deliberate answer; a library's exception is mapped by refusal_of; otherwise
MemoryError is ENOMEM and anything else EBACKEND, with the exception's type and text.

Timing (PROTOCOL.md, the sdpa reply's "seconds", by which `attnconf bench` times an adapter):
every sdpa reply carries the time of the library's own call.  Inside `sdpa`, wrap that call in

    y = timed(session.run, ["Y"], feeds)      # returns session.run(["Y"], feeds)

and the reply reports the time.perf_counter() wall time of the wrapped calls of this request
(summed when there are several); nothing else the handler does (reading tensors, conversions,
building a model) counts.  A lazy library's call must finish inside it (mx.eval,
block_until_ready).  An adapter that wraps nothing gets the time of its whole `sdpa` handler,
its own conversions included (decoding the request and encoding the reply are never counted).
"""

import dataclasses
import json
import os
import re
import sys
import time
from typing import Callable, Optional

import numpy as np

# The protocol channel is the original stdout; everything else written to fd 1 goes to stderr.
_proto_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
sys.stdout = sys.stderr
_proto_in = sys.stdin.buffer

PROTOCOL = 1
MAX_HEADER = 1 << 20  # bytes, newline included

OK, EINVAL, EDTYPE, ENOMEM, ENOTSUP, EBACKEND = 0, -1, -2, -3, -4, -5
# Only for a case that must be rejected whose invalid input the library's API cannot write
# (PROTOCOL.md "Status -6"); on any other case the harness counts it a FAIL.
EINEXPRESSIBLE = -6

CAPABILITIES = frozenset({
    "f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
    "causal.offset", "gqa", "dv_ne_d", "strided", "scale", "build_mask", "window", "lengths",
    "left_padding", "mask.kv_len", "stride0", "stride0.wire", "sdpa.window", "sdpa.lengths",
    "sdpa.left_padding", "sdpa.softcap", "sdpa.alibi", "sdpa.sinks", "sdpa.chunk",
    "sdpa.segments", "sdpa.blocks", "mask.chunk", "mask.segments", "mask.blocks",
    "cache.standard", "cache.rotating", "cache.chunked", "cache.quantized", "cache.batch",
    "cache.batch_rotating", "paged",
})

# Wire dtype -> storage dtype of its elements.  bf16 has no numpy type: it stays uint16 bit
# patterns (see bf16_to_f32 / f32_to_bf16); bool is one byte, any nonzero value true.
STORAGE = {
    "f32": np.dtype("<f4"),
    "f16": np.dtype("<f2"),
    "bf16": np.dtype("<u2"),
    "bool": np.dtype("u1"),
}


class Refusal(Exception):
    """A deliberate non-zero status with a one-line reason."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class ProtocolError(Exception):
    """The harness broke the protocol: nothing sensible can be answered, so the adapter exits."""


@dataclasses.dataclass(frozen=True)
class Option:
    """A hello option.  applies: None (the option always means something), or a function of the
    chosen values ({key: value} of every option, defaults filled in) telling whether it means
    anything for that choice, so that the hello reply (what `attnconf backend-info` lists)
    shows only the options of the variant chosen, and a value given for an option that does
    not apply is refused (EINVAL) instead of being silently ignored."""
    key: str
    default: Optional[str]
    help: str
    applies: Optional[Callable[[dict], bool]] = None


@dataclasses.dataclass(frozen=True)
class Identity:
    name: str                # [a-z0-9_-]{1,64}
    version: str             # exact versions of what is tested
    capabilities: list       # names from CAPABILITIES


@dataclasses.dataclass(frozen=True)
class Tensor:
    """A received tensor: `storage` holds the payload's elements in buffer order; element
    (i0, i1, ...) is storage[sum(i_d * strides[d])]."""
    name: str
    dtype: str
    shape: tuple
    strides: tuple           # in elements
    storage: np.ndarray      # 1-D, STORAGE[dtype]

    @property
    def array(self) -> np.ndarray:
        """The logical tensor as a numpy array: a read-only strided view of the payload
        (bf16 as uint16 patterns); bool tensors come out as np.bool_ (byte != 0)."""
        item = self.storage.itemsize
        view = np.lib.stride_tricks.as_strided(
            self.storage, self.shape, [s * item for s in self.strides], writeable=False)
        return np.asarray(view != 0) if self.dtype == "bool" else view


@dataclasses.dataclass(frozen=True)
class SdpaRequest:
    q: Tensor
    k: Tensor
    v: Tensor
    mask: Optional[Tensor]
    causal: bool
    causal_offset: Optional[int]  # None: bottom-right, Lk - Lq
    scale: Optional[float]        # None: 1/sqrt(D)
    # The mask parameters (SPEC clause 19); sent only to an adapter that lists sdpa.window /
    # sdpa.lengths / sdpa.left_padding, so the defaults are all another adapter ever sees.
    window: int = 0                       # 0: none; W >= 1 (with causal) keeps W keys
    lengths: Optional[list] = None        # [B]: batch row b keeps keys j < lengths[b]
    left_padding: Optional[list] = None   # [B]: batch row b keeps keys j >= left_padding[b]
    # The terms of current models (SPEC clauses 20-22), likewise sent only to an adapter that
    # lists sdpa.softcap / sdpa.alibi / sdpa.sinks / sdpa.chunk / sdpa.segments / sdpa.blocks.
    # Order for a kept key j of query i at p = causal offset + i: s = scale*q.k, then
    # softcap*tanh(s/softcap), then - m_h*|p - j|, then + mask; the sink joins the softmax.
    softcap: float = 0.0                  # 0: none; c > 0 (floats may be nan/inf: must-reject)
    alibi_max_bias: float = 0.0           # 0: none; ALiBi slopes from this maximum bias
    sinks: Optional[list] = None          # [Hq] floats: the sink logit of each query head
    chunk: int = 0                        # 0: none; C (with causal): keys of p's own chunk
    segment_ids: Optional[list] = None    # B lists of Lk ints: keys of p's own document
    block_ids: Optional[list] = None      # B lists of Lk ints (with causal): later keys of p's
                                          # bidirectional block are kept too (negative: none)


@dataclasses.dataclass(frozen=True)
class CacheParams:
    """cache_create's parameters (backend.h attnconf_cache_config; 0 / None where unused)."""
    kind: str                      # standard, rotating, chunked, quantized, batch, batch_rotating
    dtype: str                     # f32, f16, bf16
    batch: int
    kv_heads: int
    head_dim: int
    v_head_dim: int
    max_size: int = 0
    keep: int = 0
    chunk_size: int = 0
    group_size: int = 0
    bits: int = 0
    left_padding: Optional[list] = None


@dataclasses.dataclass(frozen=True)
class CacheState:
    """What the next attention sees: per row its offset and the absolute position of each of
    the L slots in time order (-1 = padding), keys (B, Hkv, L, D) and values (B, Hkv, L, Dv)
    as numpy arrays of the wire dtype's storage (bf16: uint16 bit patterns)."""
    offsets: list
    positions: list
    dtype: str
    keys: np.ndarray
    values: np.ndarray


@dataclasses.dataclass(frozen=True)
class MaskRequest:
    lq: int
    offset: int
    window: int                    # 0: none
    batch: int
    lengths: Optional[list]
    left_padding: Optional[list]
    kv_len: int = 0                # 0: Lk = offset + lq; else a static key buffer of kv_len slots
    # The terms of SdpaRequest of the same names, with causal and causal offset = offset; sent
    # only to an adapter that lists mask.chunk / mask.segments / mask.blocks.
    chunk: int = 0
    segment_ids: Optional[list] = None    # batch lists of Lk ints
    block_ids: Optional[list] = None


@dataclasses.dataclass(frozen=True)
class PagedRequest:
    """paged_sdpa (SPEC clause 23): sequence b's key p lives in page
    block_table[b][p // P], slot p % P of the pool (k_pages (num_pages, Hkv, P, D), v_pages
    (num_pages, Hkv, P, Dv), any strides: Tensor.array is the view); its query i < q_b
    (query_lens[b], or Lq when None) sits at position seq_lens[b] - q_b + i; rows i >= q_b are
    padding, their output exactly 0.  Entries past ceil(L_b / P), slots past L_b and pages no
    row lists are never to be read: they hold NaN, inf or stale values."""
    q: Tensor                      # (B, Hq, Lq, D)
    k_pages: Tensor
    v_pages: Tensor
    block_table: list              # B lists of table_width ints (unused entries: anything)
    table_width: int
    seq_lens: list                 # [B] L_b, the new tokens already appended
    query_lens: Optional[list]     # [B] q_b, or None: Lq for every row
    causal: bool                   # the query at p keeps keys j <= p
    window: int                    # 0: none; W (with causal): also drop j <= p - W
    scale: Optional[float]         # None: 1/sqrt(D)
    # The terms of SdpaRequest of the same names, sent only to an adapter listing their
    # capabilities too; ALiBi's p is the position above, chunk counts from position 0.
    softcap: float = 0.0
    alibi_max_bias: float = 0.0
    sinks: Optional[list] = None
    chunk: int = 0


@dataclasses.dataclass(frozen=True)
class PagedAppendRequest:
    """paged_append (SPEC clause 23): token t < n_b (new_lens[b], or S when None) of row b goes
    to position seq_lens[b] + t: page block_table[b][p // P], slot p % P.  Nothing else in the
    pool may change."""
    k: Tensor                      # (B, Hkv, S, D) new keys
    v: Tensor                      # (B, Hkv, S, Dv)
    k_pages: Tensor                # the pool before the append
    v_pages: Tensor
    block_table: list
    table_width: int
    seq_lens: list                 # [B] keys of row b BEFORE the append
    new_lens: Optional[list]       # [B] n_b, or None: S for every row


class ReproWriter:
    """The frame of a repro writer (PROTOCOL.md "repro"): an adapter that answers only repro
    requests, each for one of the plugins it knows (`plugins`, matched to the request's
    backend.name).  A subclass gives plugins, open() and repro()."""

    plugins: tuple = ()

    def sdpa(self, req):
        raise Refusal(ENOTSUP, "a repro writer answers repro only")

    def plugin_of(self, header: dict) -> tuple:
        """(name, version) of the plugin the request is for (the version "" when the request
        gives none); EINVAL for a plugin this writer does not know."""
        be = header.get("backend") or {}
        plugin = be.get("name")
        if plugin not in self.plugins:
            raise Refusal(EINVAL, f"backend {plugin!r}: this writer knows "
                          f"{', '.join(self.plugins)}")
        return plugin, be.get("version") or ""


def bf16_to_f32(bits) -> np.ndarray:
    """bfloat16 bit patterns -> float32, exactly (bf16 is the top half of an f32)."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x) -> np.ndarray:
    """float32 -> bfloat16 bit patterns, round to nearest even; NaN stays a (quiet) NaN."""
    f = np.asarray(x, np.float32)
    b = f.view(np.uint32).astype(np.uint64)  # the rounding carry must not wrap
    rounded = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(f), ((b >> 16) | 0x40).astype(np.uint16), rounded)


# ---- framing -------------------------------------------------------------------------------

def _read_exact(n: int) -> bytes:
    data = _proto_in.read(n)
    if len(data) != n:
        raise ProtocolError(f"payload ended after {len(data)} of {n} bytes")
    return data


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _decode_tensor(desc) -> Tensor:
    try:
        name, dtype, shape, nbytes = desc["name"], desc["dtype"], desc["shape"], desc["nbytes"]
    except (KeyError, TypeError) as e:
        raise ProtocolError(f"tensor descriptor lacks {e}: {desc!r}") from None
    if dtype not in STORAGE:
        raise ProtocolError(f"tensor {name}: unknown dtype {dtype!r}")
    if not (isinstance(shape, list) and len(shape) <= 4 and all(_is_int(n) and n >= 0 for n in shape)):
        raise ProtocolError(f"tensor {name}: bad shape {shape!r}")
    numel = int(np.prod(shape, dtype=np.int64))
    row_major = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
    strides = desc.get("strides", row_major)
    if not (isinstance(strides, list) and len(strides) == len(shape)
            and all(_is_int(s) and s >= 0 for s in strides)):
        raise ProtocolError(f"tensor {name}: bad strides {strides!r}")
    # stride0.wire (PROTOCOL.md): an axis broadcast with stride 0 is sent once, so the buffer
    # holds the span the strides address, not numel elements; else it holds numel exactly.
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if numel else 0
    broadcast = any(n > 1 and s == 0 for n, s in zip(shape, strides))
    held = span if numel and broadcast else numel
    if nbytes != held * STORAGE[dtype].itemsize:
        raise ProtocolError(f"tensor {name}: nbytes {nbytes} does not match shape {shape} "
                            f"strides {strides} {dtype}")
    if span > held:
        raise ProtocolError(f"tensor {name}: strides {strides} address outside its buffer")
    storage = np.frombuffer(_read_exact(nbytes), STORAGE[dtype])
    return Tensor(name, dtype, tuple(shape), tuple(strides), storage)


def _read_message():
    """The next (header, {name: Tensor}), or None at end of input."""
    line = _proto_in.readline(MAX_HEADER + 1)
    if not line:
        return None
    if not line.endswith(b"\n") or len(line) > MAX_HEADER:
        raise ProtocolError("request header is not one line of at most 1 MiB")
    try:
        header = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"request header is not JSON: {e}") from None
    if not isinstance(header, dict) or header.get("protocol") != PROTOCOL:
        raise ProtocolError(f"not a protocol {PROTOCOL} message: {line[:200]!r}")
    descs = header.get("tensors") or []
    if not isinstance(descs, list):
        raise ProtocolError("'tensors' is not a list")
    tensors = {}
    for desc in descs:  # payloads follow in descriptor order
        t = _decode_tensor(desc)
        tensors[t.name] = t
    return header, tensors


def _write_message(header: dict, tensors=()) -> None:
    """tensors: (name, wire dtype, contiguous array in its storage dtype)."""
    header = {"protocol": PROTOCOL, **header}
    if tensors:
        header["tensors"] = [
            {"name": n, "dtype": d, "shape": list(a.shape), "nbytes": a.nbytes} for n, d, a in tensors]
    _proto_out.write(json.dumps(header, separators=(",", ":"), allow_nan=False).encode() + b"\n")
    for _, _, a in tensors:
        _proto_out.write(a.tobytes())
    _proto_out.flush()


def _wire_array(dtype: str, array) -> np.ndarray:
    """The reply payload of `array` as `dtype`: never a conversion, only a byte-order and layout
    change, so the dtype reported is the one the library produced.  (np.asarray with order="C",
    not np.ascontiguousarray, which turns a 0-d array into a 1-d one.)"""
    st = STORAGE[dtype]
    array = np.asarray(array)
    if dtype == "bool":
        if array.dtype != np.bool_:
            raise TypeError(f"a bool reply needs a numpy bool array, not {array.dtype}")
        return np.asarray(array, dtype=st, order="C")
    if array.dtype.kind != st.kind or array.dtype.itemsize != st.itemsize:
        raise TypeError(f"a {dtype} reply needs numpy {st}, not {array.dtype}")
    return np.asarray(array, dtype=st, order="C")


# ---- requests -------------------------------------------------------------------------------

def _one_line(text: str, head: int = 1000, tail: int = 3000) -> str:
    """text on one line; a long one keeps its head and its tail (a compiler's verdict is at the
    end), with a marker between, as the harness keeps head and tail of what it stores
    (PROTOCOL.md)."""
    text = re.sub(r"\s+", " ", text).strip() or "(no message)"
    if len(text) <= head + tail + 40:
        return text
    return f"{text[:head]} [... {len(text) - head - tail} characters ...] {text[-tail:]}"


def _hello(adapter, header) -> dict:
    given = header.get("options") or {}
    known = {o.key: o for o in adapter.options}
    for key, value in given.items():
        if key not in known:
            listing = ", ".join(sorted(known)) or "none: this adapter takes no options"
            raise Refusal(EINVAL, f"unknown option '{key}' (known options: {listing})")
        if not isinstance(value, str):
            raise Refusal(EINVAL, f"option '{key}': value {value!r} is not a string")
    options = {k: o.default for k, o in known.items()} | given
    applying = [o for o in adapter.options if o.applies is None or o.applies(dict(options))]
    idle = [k for k in given if k not in {o.key for o in applying}]
    if idle:
        chosen = ", ".join(f"{o.key}={options[o.key]}" for o in applying
                           if options[o.key] is not None) or "the defaults"
        raise Refusal(EINVAL, f"option '{idle[0]}' does not apply with {chosen} (options that "
                      f"apply: {', '.join(o.key for o in applying) or 'none'})")
    ident = adapter.open(options)
    unknown = set(ident.capabilities) - CAPABILITIES
    if unknown or not re.fullmatch(r"[a-z0-9_-]{1,64}", ident.name):
        raise ValueError(f"adapter bug: name {ident.name!r}, unknown capabilities {sorted(unknown)}")
    return {"status": OK, "name": ident.name, "version": ident.version,
            "capabilities": list(ident.capabilities),
            "options": [{"key": o.key, "default": o.default, "help": o.help}
                        for o in applying]}


# The seconds timed() measured during the request being answered; None: it was not called.
_timed_seconds = None


def timed(fn, *args, **kwargs):
    """fn(*args, **kwargs), its wall time (time.perf_counter) added to the "seconds" the
    current sdpa reply reports: wrap the library's own call in it (see the module's doc)."""
    global _timed_seconds
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    _timed_seconds = (_timed_seconds or 0.0) + (time.perf_counter() - t0)
    return result


def _float(x) -> float:
    """A header float: a JSON number, or one of "nan", "inf", "-inf" (PROTOCOL.md)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ProtocolError(f"{x!r} is not a number")
    try:
        return float(x)
    except ValueError:
        raise ProtocolError(f"{x!r} is not a number") from None


def _sdpa_request(header, tensors) -> SdpaRequest:
    """The SdpaRequest of an sdpa (or repro) request."""
    if not {"q", "k", "v"} <= tensors.keys():
        raise ProtocolError(f"sdpa without q, k and v (got {sorted(tensors)})")
    offset, scale = header.get("causal_offset"), header.get("scale")
    sinks = header.get("sinks")
    return SdpaRequest(tensors["q"], tensors["k"], tensors["v"], tensors.get("mask"),
                       causal=bool(header.get("causal")),
                       causal_offset=None if offset is None else int(offset),
                       scale=None if scale is None else float(scale),
                       window=int(header.get("window") or 0),
                       lengths=header.get("lengths"), left_padding=header.get("left_padding"),
                       softcap=_float(header.get("softcap", 0.0)),
                       alibi_max_bias=_float(header.get("alibi_max_bias", 0.0)),
                       sinks=None if sinks is None else [_float(x) for x in sinks],
                       chunk=int(header.get("chunk") or 0),
                       segment_ids=header.get("segment_ids"), block_ids=header.get("block_ids"))


def _repro(adapter, header, tensors) -> dict:
    """The reply members of a repro request (PROTOCOL.md "repro"): an sdpa request plus "case"
    and "expect", answered with the text of a reproducer.  The adapter's
    repro(req: SdpaRequest, header: dict) -> (text, language) writes it (attnconf_repro.py
    builds the text); an adapter without one answers ENOTSUP."""
    if not hasattr(adapter, "repro"):
        raise Refusal(ENOTSUP, "this adapter writes no reproducers (it has no repro)")
    text, language = adapter.repro(_sdpa_request(header, tensors), header)
    members = {"script": text, "language": language}
    size = len(json.dumps(members, separators=(",", ":")).encode()) + 64
    if size > MAX_HEADER:
        raise Refusal(ENOTSUP, f"the reproducer takes {size} bytes: more than the 1 MiB a "
                      "reply header holds")
    return members


def _sdpa(adapter, header, tensors):
    """(reply members, reply tensors) of an sdpa request; members hold "seconds"."""
    global _timed_seconds
    req = _sdpa_request(header, tensors)
    _timed_seconds = None
    t0 = time.perf_counter()
    dtype, out = adapter.sdpa(req)
    handler = time.perf_counter() - t0
    seconds = handler if _timed_seconds is None else _timed_seconds
    if dtype not in ("f32", "f16", "bf16"):
        raise TypeError(f"adapter bug: output dtype {dtype!r}")
    return {"seconds": seconds}, [("out", dtype, _wire_array(dtype, out))]


def _build_mask(adapter, header):
    if not hasattr(adapter, "build_mask"):
        raise Refusal(ENOTSUP, "this adapter has no build_mask")
    req = MaskRequest(int(header["lq"]), int(header["offset"]), int(header.get("window") or 0),
                      int(header.get("batch") or 1), header.get("lengths"), header.get("left_padding"),
                      int(header.get("kv_len") or 0), int(header.get("chunk") or 0),
                      header.get("segment_ids"), header.get("block_ids"))
    return [("keep", "bool", _wire_array("bool", adapter.build_mask(req)))]


def _int_rows(x, what):
    if x is None:
        return None
    if not (isinstance(x, list) and all(_is_int(e) for e in x)):
        raise ProtocolError(f"{what} is not a list of integers: {x!r}"[:300])
    return x


def _paged_members(header):
    """The members both paged requests share (PROTOCOL.md "Paged KV caches")."""
    width = header.get("table_width")
    table = header.get("block_table")
    if not _is_int(width) or not isinstance(table, list):
        raise ProtocolError("a paged request without table_width and block_table")
    return dict(block_table=[_int_rows(r, "a block_table row") for r in table],
                table_width=width, seq_lens=_int_rows(header.get("seq_lens"), "seq_lens"))


def _paged_sdpa(adapter, header, tensors):
    """(reply members, reply tensors) of a paged_sdpa request, timed as sdpa."""
    global _timed_seconds
    if not hasattr(adapter, "paged_sdpa"):
        raise Refusal(ENOTSUP, "this adapter has no paged_sdpa")
    if not {"q", "k_pages", "v_pages"} <= tensors.keys():
        raise ProtocolError(f"paged_sdpa without q, k_pages and v_pages (got {sorted(tensors)})")
    scale, sinks = header.get("scale"), header.get("sinks")
    req = PagedRequest(tensors["q"], tensors["k_pages"], tensors["v_pages"],
                       **_paged_members(header),
                       query_lens=_int_rows(header.get("query_lens"), "query_lens"),
                       causal=bool(header.get("causal")), window=int(header.get("window") or 0),
                       scale=None if scale is None else _float(scale),
                       softcap=_float(header.get("softcap", 0.0)),
                       alibi_max_bias=_float(header.get("alibi_max_bias", 0.0)),
                       sinks=None if sinks is None else [_float(x) for x in sinks],
                       chunk=int(header.get("chunk") or 0))
    _timed_seconds = None
    t0 = time.perf_counter()
    dtype, out = adapter.paged_sdpa(req)
    handler = time.perf_counter() - t0
    if dtype not in ("f32", "f16", "bf16"):
        raise TypeError(f"adapter bug: output dtype {dtype!r}")
    seconds = handler if _timed_seconds is None else _timed_seconds
    return {"seconds": seconds}, [("out", dtype, _wire_array(dtype, out))]


def pool_writes(before_k: Tensor, before_v: Tensor, k_pages, v_pages):
    """The paged_append reply of a pool the library left as k_pages / v_pages (arrays of the
    pool's logical shape, in its storage dtype): every (page, slot) whose bytes differ from the
    pool sent, in K or V at any head, bit for bit (a NaN rewritten as another NaN counts), in
    (page, slot) order, with its K and V rows.  Returns (members, tensors)."""
    rows = []
    changed = None
    for before, after in ((before_k, k_pages), (before_v, v_pages)):
        st = STORAGE[before.dtype]
        after = np.asarray(after)
        if after.shape != before.shape or after.dtype.itemsize != st.itemsize or \
                after.dtype.kind not in (st.kind, "u", "i", "f"):
            raise TypeError(f"adapter bug: {before.name} came back {after.dtype} "
                            f"{list(after.shape)}, expected {st} {list(before.shape)}")
        bits = np.dtype(f"<u{st.itemsize}")
        old = np.ascontiguousarray(before.array).view(bits)
        new = np.ascontiguousarray(after).view(bits)
        diff = (old != new).any(axis=(1, 3))  # (num_pages, P)
        changed = diff if changed is None else changed | diff
        rows.append(np.ascontiguousarray(after).view(st))
    pairs = np.argwhere(changed)
    k_slots = rows[0][pairs[:, 0], :, pairs[:, 1], :]  # (m, Hkv, D)
    v_slots = rows[1][pairs[:, 0], :, pairs[:, 1], :]
    return ({"writes": [[int(p), int(s)] for p, s in pairs]},
            [("k_slots", before_k.dtype, np.ascontiguousarray(k_slots)),
             ("v_slots", before_v.dtype, np.ascontiguousarray(v_slots))])


def _paged_append(adapter, header, tensors):
    if not hasattr(adapter, "paged_append"):
        raise Refusal(ENOTSUP, "this adapter has no paged_append")
    if not {"k", "v", "k_pages", "v_pages"} <= tensors.keys():
        raise ProtocolError(f"paged_append without k, v, k_pages and v_pages "
                            f"(got {sorted(tensors)})")
    req = PagedAppendRequest(tensors["k"], tensors["v"], tensors["k_pages"], tensors["v_pages"],
                             **_paged_members(header),
                             new_lens=_int_rows(header.get("new_lens"), "new_lens"))
    k_pages, v_pages = adapter.paged_append(req)
    return pool_writes(req.k_pages, req.v_pages, k_pages, v_pages)


_CACHE_OPS = ("cache_create", "cache_update", "cache_trim", "cache_make_mask", "cache_state",
              "cache_destroy", "cache_filter", "cache_extend", "cache_merge", "cache_prepare",
              "cache_finalize")


def _cache(adapter, caches: dict, op: str, header, tensors):
    """One cache request: (reply members, reply tensors).  caches maps wire id -> handle."""
    def handle(key="cache"):
        i = header.get(key)
        if not _is_int(i) or i not in caches:
            raise Refusal(EINVAL, f"{op}: no cache {i!r}")
        return caches[i]

    def new_id(h):
        i = max(caches, default=-1) + 1
        caches[i] = h
        return {"cache": i}

    if op == "cache_destroy":
        caches.pop(header.get("cache"), None)
        return {}, []
    if not hasattr(adapter, op):
        raise Refusal(ENOTSUP, f"this adapter has no {op}")
    fn = getattr(adapter, op)
    if op == "cache_create":
        p = header.get("params") or {}
        return new_id(fn(CacheParams(**{f.name: p.get(f.name, f.default)
                                         for f in dataclasses.fields(CacheParams)}))), []
    if op == "cache_merge":
        ids = header.get("caches") or []
        return new_id(fn([handle_of(caches, i, op) for i in ids])), []
    h = handle()
    if op == "cache_update":
        if not {"k", "v"} <= tensors.keys():
            raise ProtocolError("cache_update without k and v")
        fn(h, tensors["k"], tensors["v"])
        return {}, []
    if op == "cache_trim":
        return {"trimmed": int(fn(h, int(header["n"])))}, []
    if op == "cache_make_mask":
        keep = fn(h, int(header["n"]), int(header.get("window") or 0), int(header["length"]))
        return {}, [("keep", "bool", _wire_array("bool", keep))]
    if op == "cache_state":
        st = fn(h)
        keys, values = np.asarray(st.keys), np.asarray(st.values)
        members = {"batch": int(keys.shape[0]), "length": int(keys.shape[2]),
                   "offsets": [int(o) for o in st.offsets],
                   "positions": [[int(x) for x in row] for row in st.positions]}
        which = header.get("tensor")
        if which is None:
            return members, []
        if which not in ("keys", "values"):
            raise Refusal(EINVAL, f"cache_state: tensor {which!r}")
        return members, [(which, st.dtype, _wire_array(st.dtype, keys if which == "keys" else values))]
    if op == "cache_filter":
        fn(h, [int(r) for r in header["rows"]])
    elif op == "cache_extend":
        fn(h, handle("other"))
    elif op == "cache_prepare":
        fn(h, header.get("left_padding"), header.get("lengths"))
    else:  # cache_finalize
        fn(h)
    return {}, []


def handle_of(caches: dict, i, op: str):
    if not _is_int(i) or i not in caches:
        raise Refusal(EINVAL, f"{op}: no cache {i!r}")
    return caches[i]


def _refusal(adapter, exc) -> Refusal:
    if isinstance(exc, Refusal):
        return exc
    refusal = adapter.refusal_of(exc) if hasattr(adapter, "refusal_of") else None
    if refusal is not None:
        return refusal
    return Refusal(ENOMEM if isinstance(exc, MemoryError) else EBACKEND,
                   f"{type(exc).__name__}: {exc}")


def _close_channel() -> None:
    try:
        _proto_out.close()
    except OSError:  # the harness stopped reading: the unsent rest cannot reach it anyway
        pass


def serve(adapter) -> None:
    """Answer requests until `close` or end of input, then exit with status 0.  A request that
    breaks the protocol ends the process with status 2 and the reason on stderr.  The protocol
    channel is closed on every way out, an exception escaping included: left to the
    interpreter's shutdown, it would be an unclosed file (ResourceWarning under -X dev)."""
    opened = False
    caches = {}
    try:
        while (msg := _read_message()) is not None:
            header, tensors = msg
            op = header.get("op")
            if op == "close":
                break
            try:
                if op == "hello":
                    opened = False
                    caches.clear()
                    _write_message(_hello(adapter, header))
                    opened = True
                    continue
                if not opened:
                    raise Refusal(EBACKEND, f"'{op}' before a successful hello")
                members = {}
                if op == "sdpa":
                    members, reply = _sdpa(adapter, header, tensors)
                elif op == "build_mask":
                    reply = _build_mask(adapter, header)
                elif op == "repro":
                    members, reply = _repro(adapter, header, tensors), []
                elif op == "paged_sdpa":
                    members, reply = _paged_sdpa(adapter, header, tensors)
                elif op == "paged_append":
                    members, reply = _paged_append(adapter, header, tensors)
                elif op in _CACHE_OPS:
                    members, reply = _cache(adapter, caches, op, header, tensors)
                    _write_message({"status": OK, **members}, reply)
                    continue
                else:
                    raise Refusal(EINVAL, f"unknown op {op!r}")
            except ProtocolError:
                raise
            except Exception as exc:  # every library failure becomes a status, never a crash
                refusal = _refusal(adapter, exc)
                _write_message({"status": refusal.status, "error": _one_line(str(refusal))})
                continue
            _write_message({"status": OK, **members}, reply)
    except ProtocolError as e:
        print(f"attnconf_exec: protocol error: {e}", file=sys.stderr)
        sys.exit(2)
    finally:
        _close_channel()
    sys.exit(0)
