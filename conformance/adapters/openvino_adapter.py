"""attnconf exec adapter: OpenVINO on the CPU plugin, one operator per run (--backend-option op=):

    op=sdpa    ScaledDotProductAttention-13, contiguous SDPA             name openvino-sdpa
    op=paged   PagedAttentionExtension, paged KV caches (SPEC clause 23) name openvino-paged
               (the default)

op=sdpa.  What it validates: a model of one ScaledDotProductAttention node (openvino.opset13),
compiled for "CPU".  The plugin decomposes the op into MatMul / Softmax and runs it as a Snippets
subgraph (its runtime model holds no SDPA kernel), so that is what is tested.  Posed as an
exported model (optimum-intel) holds it:
  * q, k, v are parameters of the case's dtypes, (B, H, L, D) with H and D static and B and the
    lengths dynamic; dense (the inputs are OpenVINO tensors: strided and stride-0 views are not
    claimed).  INFERENCE_PRECISION_HINT is f32 for f32 and f16 (f16 is converted to f32 inside
    and back: an f16 hint on a CPU without native f16 becomes bf16, narrower than asked) and
    bf16 for bf16.  The output dtype is the output tensor's element type, as OpenVINO gives it.
  * GQA: the op only numpy-broadcasts heads (Hkv = 1; Hq = 4 over Hkv = 2 is refused by shape
    inference), so K and V are repeated in the graph as transformers' repeat_kv exports it
    (Unsqueeze, Broadcast, Reshape: query head h reads kv head h // (Hq/Hkv)), as users' models
    have it.  Dv != D is the op's own.
  * the mask is a parameter of its own dtype and rank (extents 1 static, the rest dynamic):
    OpenVINO decides what it takes (a float mask must have q's type; at least 2-D or a scalar).
  * causal is the op's causal flag, which is top-left (key j kept for query i iff j <= i, as the
    operator's pseudo-code says): cases with Lq != Lk are posed that way (what users write) and
    fail; an explicit offset other than 0 cannot be said: ENOTSUP.  A mask with causal is passed
    with causal=True (the op then ignores the mask, as documented).
  * scale: a scalar parameter of q's type (the op's scale input is of type T), the case's value
    rounded to it; a finite scale or sink that overflows an f16/bf16 input: ENOTSUP; beyond the
    f32 range: UNEXPRESSIBLE.  No scale: the op's default 1/sqrt(D).
  * sinks: the op's sixth input (1, Hq, 1, 1) in q's type (opset13.scaled_dot_product_attention
    has no argument for it: the node factory makes the node); the mask and scale inputs before
    it are then a scalar 0 and 1/sqrt(D) when the case has none.
  * repro (PROTOCOL.md): a reproducer script from the same functions (build_sdpa, sdpa_feeds...).
One compiled model per signature (dtypes, heads, head sizes, mask dtype and rank, causal, which
inputs).  Window, lengths, padding, softcap, ALiBi, chunks, documents and blocks have no input.

Findings (openvino 2026.4.1, op=sdpa), for REPORT.md's OpenVINO section:
  * Clause 3: causal is top-left (documented: numpy.triu(-inf, k=1) over [L, S]); every causal
    case with Lq != Lk fails (a decode query sees key 0 alone; with Lq > Lk the rows that keep
    nothing get values).  There is no bottom-right spelling short of building the mask.  A
    mask with causal=True is accepted and silently ignored (documented).
  * Clause 9: a row that keeps no key is NaN (softmax of -inf, as the pseudo-code computes;
    the text says nothing of such rows).  Lk = 0 is accepted and the output is never written:
    it holds whatever the output buffer held (uninitialised memory, 1e21, -inf, denormals,
    different from run to run, in OpenVINO's own buffer; this adapter's is all-ones NaN).
  * Clause 10: NaN / inf in excluded K/V slots reaches the output under a bool mask, a -inf
    additive mask and the op's own causal flag (the mask is a -inf bias, P.V is dense).
  * Clause 2: scaled scores that overflow f32 (scale 1e38 .. FLT_MAX on ordinary q.k) give
    NaN rows; a NaN or infinite scale is accepted.  The scale input has q's type, so an f16
    model cannot hold a scale above 65504.
  * Clause 8: an additive mask must have q's type exactly ("Mixed input types are not
    supported"; documented: "type T or boolean"), so an f16/bf16 mask with f32 q is refused
    where SPEC widens it.  Mismatched q/k/v are refused (EDTYPE).  No upcast: f16 and bf16
    outputs come back in their dtype.
  * Clause 7: a rank-1 (Lk) mask is refused (documented: at least 2-D or a scalar).
  * Clause 1: mismatched batch sizes are broadcast (documented: numpy-broadcastable batch
    dimensions), D = 0 is accepted.  Clause 22: an infinite sink is accepted.
  * Conforming: GQA through repeat_kv (MQA included), Dv != D, bool / additive masks of every
    rank >= 2 and scalars, sinks (every sink case without Lq != Lk causal), default and explicit
    scales (negative
    and 0 included), large logits, f16 q.k beyond 65504, rounding, every f16/bf16 output dtype.

op=paged.  What it validates: the CPU plugin's kernel for `PagedAttentionExtension` (openvino.op.
_PagedAttentionExtension, OpenVINO's internal paged-attention op that OpenVINO GenAI's
SDPAToPagedAttention puts into every LLM it serves), run through a one-node model compiled for
"CPU".  The op appends the step's new tokens to the cache and attends in one call; it takes the
queries, keys and values of all sequences packed token by token, `past_lens` (keys cached before
the step), `subsequence_begins` (B + 1 offsets into the packed tokens), the block indices of
every sequence concatenated in `block_indices` with `block_indices_begins` (B + 1 offsets), the
caches (num_blocks, Hkv, block_size, D), `scale`, `sliding_window`, `alibi_slopes`,
`max_context_len`, `sinks` and inputs for features not used here (cache rotation, XAttention,
adaptive R-KV, QQ bias: empty).

How cases are posed, as an OpenVINO user would:
  * The cache inputs are Parameters of dynamic type and shape, and the node carries the rt_info
    k_head_size, num_k_heads, v_head_size, num_v_heads, as SDPAToPagedAttention leaves them:
    the plugin's ConvertPagedAttnInputs pass then sets the caches' type (KV_CACHE_PRECISION, or
    KEY_/VALUE_CACHE_PRECISION when the two pools differ) and shape [?, Hkv, 32, D].  The block
    size is the plugin's, 32, with no property to change it: a pool of any other page size is
    NOT_SUPPORTED (re-paging the pool would no longer test how the library pages).  The
    harness's pool is copied, bit for bit, into contiguous OpenVINO tensors of that layout
    (an NHD pool arrives as a permuted view), handed to the request, and read back after it.
  * dtypes: q, k, v in the case's dtype; INFERENCE_PRECISION_HINT f32 for f32 and f16 and bf16
    for bf16.  (An f16 hint on a CPU without AVX512-FP16 becomes bf16, and the plugin then
    stores an f16 cache as bf16; f32 is the hint under which an f16 cache stays f16.)
  * paged_append: one call with the new tokens (row b's first n_b) as key/value, past_lens =
    seq_lens, a dummy query (zeros, Hq = Hkv), max_context_len = the longest row after the
    append; the output is dropped and the pools are returned as OpenVINO left them
    (attnconf_exec sends every slot that changed, a stray write included).
  * paged_sdpa: row b's q_b queries with past_lens = L_b - q_b, and as the step's new keys and
    values the row's last q_b keys, read from the pool through the table: the op writes them
    back to the slots they came from (identical values; that pool is not returned).  The op
    is always causal (bottom-right per sequence, as clause 23), so causal = false is posed
    only where it changes nothing (q_b <= 1) and is NOT_SUPPORTED otherwise; a window or chunk
    without causal cannot be written (no causal flag to leave off): UNEXPRESSIBLE.  window is
    sliding_window (W keys, the query's own included, as clause 4's W); ALiBi is
    alibi_slopes, one per query head, computed from alibi_max_bias as clause 21's slopes;
    sinks is the sinks input (1, Hq, 1, 1) in the case's dtype; scale is the f32 scale input,
    1/sqrt(D) when the case gives none.  Softcap and chunk have no input: not claimed.
  * Rows are packed in order, every row included (a row with q_b = 0 or n_b = 0 is a
    subsequence of no tokens); output rows i >= q_b are the zeros of the reply's layout.
  * Inputs clause 23 requires rejected go to the library as they are: a table entry outside
    the pool, a length beyond the table (the sequence then lists fewer blocks than its
    length needs: its whole table row), a negative length (past_lens < 0), q_b > L_b (past_lens
    < 0; the keys at negative positions, which the pool cannot hold, are sent as zeros), mixed
    dtypes (the cache precision differs from q's).  A query or token count outside 0..Lq (0..S)
    has no spelling (the counts are row extents of the packed tensors), nor has a negative or
    non-finite alibi_max_bias (the op takes slopes) or a scale outside the f32 range:
    UNEXPRESSIBLE.
Models are compiled once per signature (dtypes, heads, head sizes, which optional inputs).

Run (from the repository root, with a Python that has numpy and openvino installed):

    attnconf run --backend 'exec:python3 conformance/adapters/openvino_adapter.py' --cases cases \
        --backend-option op=sdpa        # or op=paged
"""

import inspect
import math
import re
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import attnconf_repro as repro_text  # noqa: E402
import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import openvino.opset13 as o13  # noqa: E402
import openvino.opset15 as ops  # noqa: E402
from openvino.op import _PagedAttentionExtension  # noqa: E402
from openvino.opset13.ops import _get_node_factory_opset13  # noqa: E402

BLOCK = 32  # the CPU plugin's cache block (ConvertPagedAttnInputs' block size for CPU)
FLT_MAX = 3.4028234663852886e38
OV_TYPE = {"f32": ov.Type.f32, "f16": ov.Type.f16, "bf16": ov.Type.bf16, "bool": ov.Type.boolean}
BITS = {"f32": np.dtype("<u4"), "f16": np.dtype("<u2"), "bf16": np.dtype("<u2")}
WIRE = {ov.Type.f32: "f32", ov.Type.f16: "f16", ov.Type.bf16: "bf16"}


def ov_tensor(dtype: str, array) -> ov.Tensor:
    """A contiguous OpenVINO tensor of `dtype` holding the bits of `array` (storage dtype of
    attnconf_exec: bf16 as uint16 patterns), copied bit for bit (NaN payloads included)."""
    a = np.asarray(array)
    t = ov.Tensor(OV_TYPE[dtype], list(a.shape))
    if a.size:
        t.data.view(BITS[dtype])[...] = np.ascontiguousarray(a).view(BITS[dtype])
    return t


def bits_of(t: ov.Tensor, dtype: str) -> np.ndarray:
    """A copy of tensor t's elements in attnconf_exec's storage dtype."""
    return np.array(t.data.view(BITS[dtype])).view(ax.STORAGE[dtype])


def alibi_slopes(max_bias: float, hq: int) -> np.ndarray:
    """SPEC clause 21's slopes (Press et al.'s get_slopes), one per query head."""
    n = 2 ** int(math.floor(math.log2(hq)))
    return np.array([2.0 ** (-max_bias * (h + 1) / n) if h < n else
                     2.0 ** (-(max_bias / 2) * (2 * (h - n) + 1) / n) for h in range(hq)],
                    np.float32)


# ---- ScaledDotProductAttention (op=sdpa) ----------------------------------------------------
# What sdpa() calls, and what a reproducer embeds as it is (inspect.getsource): numpy, openvino,
# o13 and the constants OV_TYPE, BITS and WIRE only, nothing of attnconf.

def to_ov(t):
    """A received tensor (dtype, array: attnconf_exec.Tensor or a reproducer's Tensor) as a
    dense OpenVINO tensor of its own element type and shape: floats copied bit for bit (bf16
    from its bit patterns, NaN payloads kept), bool as OpenVINO boolean (nonzero byte: true)."""
    a = np.asarray(t.array, order="C")  # (np.ascontiguousarray makes a 0-d array 1-d)
    if t.dtype == "bool":
        return ov.Tensor(np.array(a, dtype=bool))
    out = ov.Tensor(OV_TYPE[t.dtype], list(a.shape))
    if a.size:
        out.data.view(BITS[t.dtype])[...] = a.view(BITS[t.dtype])
    return out


def typed(dtype, values, shape):
    """float values as an OpenVINO tensor of `dtype` (f32 / f16: numpy's rounding; bf16: the
    float32 value rounded to nearest even), what a user's Constant or input of q's type holds."""
    x = np.asarray(values, np.float64).reshape(shape)
    if dtype != "bf16":
        return ov.Tensor(np.array(x, dtype={"f32": np.float32, "f16": np.float16}[dtype]))
    with np.errstate(over="ignore", invalid="ignore"):
        b = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = np.where(np.isnan(x), (b >> 16) | 0x40, (b + 0x7FFF + ((b >> 16) & 1)) >> 16)
    out = ov.Tensor(ov.Type.bf16, list(x.shape))
    if x.size:
        out.data.view(np.uint16)[...] = bits.astype(np.uint16)
    return out


def repeat_kv(x, n_rep):
    """transformers' repeat_kv as an exported model holds it: (B, Hkv, L, D) -> Unsqueeze ->
    Broadcast (B, Hkv, n_rep, L, D) -> Reshape (B, Hkv * n_rep, L, D), so that query head h
    reads kv head h // n_rep (the op itself only broadcasts Hkv = 1)."""
    shape = o13.shape_of(x)
    dims = [o13.gather(shape, o13.constant(np.array([i])), o13.constant(np.array(0)))
            for i in range(4)]
    rep = o13.constant(np.array([n_rep], np.int64))
    grown = o13.broadcast(o13.unsqueeze(x, o13.constant(np.array([2]))),
                          o13.concat([dims[0], dims[1], rep, dims[2], dims[3]], 0))
    heads = o13.multiply(dims[1], rep)
    return o13.reshape(grown, o13.concat([dims[0], heads, dims[2], dims[3]], 0), False)


def build_sdpa(qt, kt, vt, hq, hkv, hv, d, dv, mask, causal, scale, sinks):
    """The model an OpenVINO user's graph holds around the op, as an exported model poses it:
    parameters q (B, Hq, Lq, D), k (B, Hkv, Lk, D), v (B, Hv, Lk, Dv) of their own types, B and
    the lengths dynamic; K / V repeated in the graph (repeat_kv) when their heads divide Hq
    and differ from it; mask: None or (element type, rank-pattern) for a parameter of its own
    type whose extents 1 are static and the rest dynamic; scale (bool): a scalar parameter of
    q's type; sinks (bool): a (1, Hq, 1, 1) parameter of q's type, the op's sixth input (no
    opset13.scaled_dot_product_attention argument takes it: made by the node factory)."""
    params = {}

    def param(name, shape, et):
        params[name] = o13.parameter(shape, et, name=name)
        return params[name]

    q = param("q", [-1, hq, -1, d], OV_TYPE[qt])
    k = param("k", [-1, hkv, -1, d], OV_TYPE[kt])
    v = param("v", [-1, hv, -1, dv], OV_TYPE[vt])
    if hkv and hq != hkv and hq % hkv == 0:
        k = repeat_kv(k, hq // hkv)
    if hv and hq != hv and hq % hv == 0:
        v = repeat_kv(v, hq // hv)
    m = None if mask is None else param("mask", list(mask[1]), OV_TYPE[mask[0]])
    s = param("scale", [], OV_TYPE[qt]) if scale else None
    if not sinks:
        node = o13.scaled_dot_product_attention(q, k, v, m, s, causal=causal)
    else:
        if m is None:  # what opset13.scaled_dot_product_attention passes for "no mask"
            m = o13.convert_like(o13.constant(np.array(0, np.int32)), q)
        if s is None:  # the op's default, 1/sqrt(D) in q's type
            s = o13.convert_like(o13.constant(np.array(1 / np.sqrt(d), np.float32)), q)
        sink = param("sinks", [1, hq, 1, 1], OV_TYPE[qt])
        node = _get_node_factory_opset13().create(
            "ScaledDotProductAttention", [x.output(0) for x in (q, k, v, m, s, sink)],
            {"causal": causal})
    return ov.Model([node.output(0)], list(params.values()), "attnconf_sdpa")


def compile_sdpa(core, model, qt):
    """The model compiled for the CPU plugin with INFERENCE_PRECISION_HINT f32 for f32 and f16
    (an f16 hint on a CPU without native f16 becomes bf16, narrower than asked) and bf16 for
    bf16 (f32 would widen it)."""
    return core.compile_model(model, "CPU",
                              {"INFERENCE_PRECISION_HINT": "bf16" if qt == "bf16" else "f32"})


def sdpa_feeds(q, k, v, mask, scale, sinks):
    """The inputs of build_sdpa's model: q, k, v, mask as they came (to_ov), the scale and the
    sinks in q's type."""
    feeds = {"q": to_ov(q), "k": to_ov(k), "v": to_ov(v)}
    if mask is not None:
        feeds["mask"] = to_ov(mask)
    if scale is not None:
        feeds["scale"] = typed(q.dtype, scale, [])
    if sinks is not None:
        feeds["sinks"] = typed(q.dtype, sinks, [1, len(sinks), 1, 1])
    return feeds


def infer(compiled, feeds, shape):
    """One inference: (the output's wire dtype or its OpenVINO type name, a copy of its
    elements in storage form: bf16 as uint16 bit patterns).  The output tensor of `shape`
    (B, Hq, Lq, Dv) is ours, every byte 0xFF (a NaN in each float type) before the call, as the
    harness poisons a plugin's output: an element OpenVINO leaves unwritten reads the same
    NaN on every run, never what the allocator happened to hold."""
    req = compiled.create_infer_request()
    for name, t in feeds.items():
        req.set_tensor(name, t)
    et = compiled.output(0).get_element_type()
    if et in WIRE:
        out = ov.Tensor(et, list(shape))
        if out.get_size():
            out.data.view(np.uint8)[...] = 0xFF
        req.set_output_tensor(0, out)
    req.infer()
    out = req.get_output_tensor(0)
    dtype = WIRE.get(out.element_type)
    if dtype is None:
        return str(out.element_type), np.array(out.data)
    return dtype, np.array(out.data.view(BITS[dtype]))


class Model:
    """One compiled PagedAttentionExtension and its parameters."""

    def __init__(self, qtype, kc_type, vc_type, hq, hkv, d, dv, alibi, sinks):
        i32, f32 = ov.Type.i32, ov.Type.f32
        params = []

        def param(name, shape, et):
            p = ops.parameter(shape, et, name=name)
            params.append(p)
            return p

        def const(values, dtype):
            return ops.constant(np.array(values, dtype))

        qt = OV_TYPE[qtype]
        dyn = ov.PartialShape.dynamic(4)
        inputs = [
            param("query", [-1, hq * d], qt), param("key", [-1, hkv * d], qt),
            param("value", [-1, hkv * dv], qt),
            param("key_cache", dyn, ov.Type.dynamic), param("value_cache", dyn, ov.Type.dynamic),
            param("past_lens", [-1], i32), param("subsequence_begins", [-1], i32),
            param("block_indices", [-1], i32), param("block_indices_begins", [-1], i32),
            param("scale", [], f32), param("sliding_window", [], i32),
            param("alibi_slopes", [hq], f32) if alibi else const([], np.float32),
            param("max_context_len", [], i32),
            # per sequence (the CPU kernel reads one entry per row; a scalar fails with B > 1)
            param("score_aggregation_window", [-1], i32),
            const([], np.int32), const([], np.int32), const([], np.float32),  # cache rotation
            const([], np.float32), const(0, np.int32), const(0, np.int32),  # XAttention
            param("sinks", [1, hq, 1, 1], qt) if sinks else const([], np.float32),
            const(0, np.int32), const([], np.int32), const([], np.int32),  # adaptive R-KV
            const([], np.int32), const([], np.int32),
            const([], np.uint8), const([], np.int32)]  # token_type_ids, qq_bias(_begins)
        node = _PagedAttentionExtension([x.output(0) for x in inputs])
        rt = node.get_rt_info()
        rt["k_head_size"], rt["num_k_heads"] = d, hkv
        rt["v_head_size"], rt["num_v_heads"] = dv, hkv
        model = ov.Model([node.output(0)], params, "attnconf_paged")
        config = {"INFERENCE_PRECISION_HINT": "bf16" if qtype == "bf16" else "f32",
                  "KEY_CACHE_PRECISION": kc_type, "VALUE_CACHE_PRECISION": vc_type}
        self.compiled = ov.Core().compile_model(model, "CPU", config)
        self.names = {p.get_friendly_name() for p in params}

    def run(self, feeds: dict):
        """The output tensor of one inference; the cache tensors in feeds are written in place."""
        req = self.compiled.create_infer_request()
        for name, value in feeds.items():
            if name in self.names:
                req.set_tensor(name, value if isinstance(value, ov.Tensor) else ov.Tensor(value))
        ax.timed(req.infer)
        return req.get_output_tensor(0)


def value_in(dtype, x) -> float:
    """x as the op receives it in `dtype` (typed's rounding), back as a Python float."""
    bits = np.array(typed(dtype, x, []).data.view(BITS[dtype]))
    return float(ax.bf16_to_f32(bits) if dtype == "bf16" else bits.view(ax.STORAGE[dtype]))


def literal(x) -> str:
    """None, a float or a list of floats as Python source (nan and the infinities included)."""
    if x is None:
        return "None"
    if isinstance(x, list):
        return "[" + ", ".join(literal(e) for e in x) + "]"
    return repr(float(x)) if math.isfinite(x) else f"float({str(float(x))!r})"


OPS = ("sdpa", "paged")
SDPA_CAPS = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
             "causal.offset",
             "gqa", "dv_ne_d", "scale", "sdpa.sinks"]
PAGED_CAPS = ["f32", "f16", "bf16", "gqa", "dv_ne_d", "strided", "scale", "causal",
              "sdpa.window", "sdpa.alibi", "sdpa.sinks", "paged"]


def versions(op):
    what = ("ScaledDotProductAttention-13" if op == "sdpa" else "PagedAttentionExtension")
    return f"openvino {ov.get_version()}, CPU plugin, {what}"


class OpenVino:
    options = [ax.Option("op", "paged", "the operator posed: sdpa (ScaledDotProductAttention-13, "
                         "contiguous SDPA) or paged (PagedAttentionExtension, paged KV caches)")]

    def __init__(self):
        self.models = {}
        self.core = ov.Core()

    def open(self, options):
        if options["op"] not in OPS:
            raise ax.Refusal(ax.EINVAL, f"option op={options['op']!r}: expected one of "
                             f"{', '.join(OPS)}")
        self.op = options["op"]
        return ax.Identity(name=f"openvino-{self.op}", version=versions(self.op),
                           capabilities=SDPA_CAPS if self.op == "sdpa" else PAGED_CAPS)

    # ---- op=sdpa ----

    def plan(self, req: ax.SdpaRequest) -> dict:
        """build_sdpa's signature and the scale / sinks for req: the decisions sdpa() and
        repro() share, and the refusals made before OpenVINO sees anything."""
        q, k, v = req.q, req.k, req.v
        if len(q.shape) != 4 or len(k.shape) != 4 or len(v.shape) != 4:
            raise ax.Refusal(ax.EINEXPRESSIBLE, "q, k, v not all 4-D")
        lq, lk = q.shape[2], k.shape[2]
        if req.causal and req.causal_offset not in (None, 0) and \
                not (req.causal_offset == lk - lq == 0):
            raise ax.Refusal(ax.ENOTSUP, f"causal offset {req.causal_offset}: the op's causal "
                             "is top-left (offset 0), with no other offset")
        if req.scale is not None and math.isfinite(req.scale) and abs(req.scale) > FLT_MAX:
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"scale {req.scale}: the scale input has q's "
                             "type, which holds no value beyond the f32 range")
        for what, xs in (("scale", [] if req.scale is None else [req.scale]),
                         ("sink", req.sinks or [])):
            for x in xs:
                if math.isfinite(x) and not math.isfinite(value_in(q.dtype, x)):
                    raise ax.Refusal(ax.ENOTSUP, f"{what} {x}: the op takes it in q's type "
                                     f"{q.dtype}, where it overflows")
        mask = None if req.mask is None else \
            (req.mask.dtype, tuple(1 if n == 1 else -1 for n in req.mask.shape))
        signature = dict(qt=q.dtype, kt=k.dtype, vt=v.dtype, hq=q.shape[1], hkv=k.shape[1],
                         hv=v.shape[1], d=q.shape[3], dv=v.shape[3], mask=mask,
                         causal=req.causal, scale=req.scale is not None,
                         sinks=req.sinks is not None)
        return {"signature": signature, "scale": req.scale, "sinks": req.sinks}

    def sdpa(self, req: ax.SdpaRequest):
        if self.op != "sdpa":
            raise ax.Refusal(ax.ENOTSUP, "op=paged serves paged KV caches only "
                             "(PagedAttentionExtension); contiguous SDPA is op=sdpa")
        plan = self.plan(req)
        sig = plan["signature"]
        key = ("sdpa",) + tuple(sorted(sig.items()))
        if key not in self.models:
            self.models[key] = compile_sdpa(self.core, build_sdpa(**sig), sig["qt"])
        feeds = sdpa_feeds(req.q, req.k, req.v, req.mask, plan["scale"], plan["sinks"])
        want = (req.q.shape[0], req.q.shape[1], req.q.shape[2], req.v.shape[3])
        dtype, out = ax.timed(infer, self.models[key], feeds, want)
        if dtype not in ("f32", "f16", "bf16"):
            raise ax.Refusal(ax.EBACKEND, f"output element type {dtype}")
        if tuple(out.shape) != want:
            raise ax.Refusal(ax.EBACKEND, f"OpenVINO accepted the inputs and returned an output "
                             f"of shape {list(out.shape)}, not (B, Hq, Lq, Dv) = {list(want)}")
        return dtype, out.view(ax.STORAGE[dtype])

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): the same plan, model, compilation and inputs as
        sdpa(), the module's functions embedded as they are."""
        if self.op != "sdpa":
            raise ax.Refusal(ax.ENOTSUP, "op=paged writes no reproducers (repro is sdpa only)")
        plan = self.plan(req)
        sig = plan["signature"]
        setup = "\n".join([
            "import numpy as np",
            "import openvino as ov",
            "import openvino.opset13 as o13",
            "from openvino.opset13.ops import _get_node_factory_opset13",
            "",
            "OV_TYPE = {'f32': ov.Type.f32, 'f16': ov.Type.f16, 'bf16': ov.Type.bf16, "
            "'bool': ov.Type.boolean}",
            "BITS = {'f32': np.dtype('<u4'), 'f16': np.dtype('<u2'), 'bf16': np.dtype('<u2')}",
            "WIRE = {ov.Type.f32: 'f32', ov.Type.f16: 'f16', ov.Type.bf16: 'bf16'}",
            f"SIGNATURE = {sig!r}",
            f"SCALE_INPUT = {literal(plan['scale'])}",
            f"SINKS_INPUT = {literal(plan['sinks'])}",
            "", "",
            *[inspect.getsource(f) + "\n" for f in
              (to_ov, typed, repeat_kv, build_sdpa, compile_sdpa, sdpa_feeds, infer)],
        ])
        body = "\n".join([
            "core = ov.Core()",
            "compiled = compile_sdpa(core, build_sdpa(**SIGNATURE), SIGNATURE['qt'])",
            "feeds = sdpa_feeds(INPUTS['q'], INPUTS['k'], INPUTS['v'], INPUTS.get('mask'),",
            "                   SCALE_INPUT, SINKS_INPUT)",
            "shape = INPUTS['q'].shape[:3] + INPUTS['v'].shape[3:]",
            "dtype, out = infer(compiled, feeds, shape)",
            "print(f'openvino {ov.get_version()}, CPU plugin, INFERENCE_PRECISION_HINT '",
            "      f\"{compiled.get_property('INFERENCE_PRECISION_HINT').to_string()}\")",
            "if dtype == 'bf16':",
            "    out = (out.astype(np.uint32) << 16).view(np.float32)",
            "elif dtype in ('f32', 'f16'):",
            "    out = out.view({'f32': np.float32, 'f16': np.float16}[dtype])",
            "return out.astype(np.float64), dtype",
        ])
        how = ("a model of one ScaledDotProductAttention-13 node (opset13), compiled for the CPU "
               "plugin with\nINFERENCE_PRECISION_HINT "
               f"{'bf16' if sig['qt'] == 'bf16' else 'f32'}; q, k, v (and the mask) as "
               "parameters of the case's dtype and shape (B and the\nlengths dynamic)"
               f"{'; causal=True (the op is top-left)' if req.causal else ''}"
               f"{'; scale a scalar input of q type' if sig['scale'] else ''}"
               f"{'; sinks the sixth input (1, Hq, 1, 1)' if sig['sinks'] else ''}"
               f"{'; K/V repeated in the graph (repeat_kv)' if sig['hq'] != sig['hkv'] else ''}.")
        lib = repro_text.Library(requires=f"openvino=={ov.get_version().split('-')[0]} numpy",
                                 versions=versions("sdpa"), posed=how, setup=setup, call=body)
        return repro_text.script(header, repro_text.inputs(req), "openvino-sdpa", lib), "python"

    # ---- op=paged ----

    def model(self, qtype, kc_type, vc_type, hq, hkv, d, dv, alibi=False, sinks=False):
        key = (qtype, kc_type, vc_type, hq, hkv, d, dv, alibi, sinks)
        if key not in self.models:
            self.models[key] = Model(*key)
        return self.models[key]

    def require_paged(self):
        if self.op != "paged":
            raise ax.Refusal(ax.ENOTSUP, "op=sdpa serves contiguous SDPA only; paged KV caches "
                             "are op=paged")

    @staticmethod
    def pool(req):
        """(num_pages, Hkv, P, D, Dv) of the request's pool, P = 32 or NOT_SUPPORTED."""
        kp, vp = req.k_pages, req.v_pages
        if len(kp.shape) != 4 or len(vp.shape) != 4:
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"pools of rank {len(kp.shape)} / "
                             f"{len(vp.shape)}: the cache inputs are 4-D")
        for name, t in (("k_pages", kp), ("v_pages", vp)):
            if t.shape[2] != BLOCK:
                raise ax.Refusal(ax.ENOTSUP, f"{name} page size {t.shape[2]}: the CPU plugin's "
                                 f"cache blocks hold {BLOCK} tokens (no property changes it)")
        return kp.shape + (vp.shape[3],)

    @staticmethod
    def blocks(req, b, length, npages_needed=None):
        """Row b's block indices for a sequence of `length` keys: its first ceil(length / P)
        entries, or the whole row when the table is shorter (a length beyond the table)."""
        n = max(-(-length // BLOCK), 0) if npages_needed is None else npages_needed
        return list(req.block_table[b][:min(n, len(req.block_table[b]))])

    def paged_append(self, req: ax.PagedAppendRequest):
        self.require_paged()
        npages, hkv, _, d, dv = self.pool(req)
        k, v = req.k.array, req.v.array
        if len(k.shape) != 4 or len(v.shape) != 4:
            raise ax.Refusal(ax.EINEXPRESSIBLE, "new keys/values not 4-D")
        batch, s = k.shape[0], k.shape[2]
        new = req.new_lens if req.new_lens is not None else [s] * batch
        for b in range(batch):
            if not 0 <= new[b] <= s:
                raise ax.Refusal(ax.EINEXPRESSIBLE, f"row {b}: new_lens {new[b]} outside 0..{s}: "
                                 "the step's token count is the row extent of the packed "
                                 "key/value tensors")
        past = [int(x) for x in req.seq_lens]
        # The step's tokens, packed: token t of row b is row sum(n_<b) + t, heads side by side.
        kt = np.concatenate([np.transpose(k[b, :, :new[b], :], (1, 0, 2)).reshape(new[b], hkv * d)
                             for b in range(batch)] or [np.zeros((0, hkv * d), k.dtype)])
        vt = np.concatenate([np.transpose(v[b, :, :new[b], :], (1, 0, 2)).reshape(new[b], hkv * dv)
                             for b in range(batch)] or [np.zeros((0, hkv * dv), v.dtype)])
        tokens = kt.shape[0]
        model = self.model(req.k.dtype, req.k_pages.dtype, req.v_pages.dtype, hkv, hkv,
                           k.shape[3], v.shape[3])
        rows = [self.blocks(req, b, past[b] + new[b]) for b in range(batch)]
        kc = ov_tensor(req.k_pages.dtype, req.k_pages.array)
        vc = ov_tensor(req.v_pages.dtype, req.v_pages.array)
        model.run({
            "query": ov_tensor(req.k.dtype, np.zeros((tokens, hkv * k.shape[3]), kt.dtype)),
            "key": ov_tensor(req.k.dtype, kt), "value": ov_tensor(req.v.dtype, vt),
            "key_cache": kc, "value_cache": vc,
            **self.sequences(past, new, rows),
            "scale": np.array(1 / math.sqrt(max(k.shape[3], 1)), np.float32),
            "sliding_window": np.array(0, np.int32),
            "max_context_len": np.array(max([p + n for p, n in zip(past, new)] + [0]), np.int32)})
        return (bits_of(kc, req.k_pages.dtype).reshape(req.k_pages.shape),
                bits_of(vc, req.v_pages.dtype).reshape(req.v_pages.shape))

    @staticmethod
    def sequences(past, tokens, rows):
        """past_lens, subsequence_begins, block_indices, block_indices_begins and the
        per-sequence score_aggregation_window (0: no score aggregation)."""
        return {"past_lens": np.array(past, np.int32),
                "subsequence_begins": np.cumsum([0] + list(tokens)).astype(np.int32),
                "block_indices": np.array([e for r in rows for e in r], np.int32),
                "block_indices_begins": np.cumsum([0] + [len(r) for r in rows]).astype(np.int32),
                "score_aggregation_window": np.zeros(len(past), np.int32)}

    def paged_sdpa(self, req: ax.PagedRequest):
        self.require_paged()
        npages, hkv, _, d, dv = self.pool(req)
        q = req.q.array
        if len(q.shape) != 4:
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"q of rank {len(q.shape)}: the query is 4-D")
        batch, hq, lq, dq = q.shape
        qlens = req.query_lens if req.query_lens is not None else [lq] * batch
        for b in range(batch):
            if not 0 <= qlens[b] <= lq:
                raise ax.Refusal(ax.EINEXPRESSIBLE, f"row {b}: query_lens {qlens[b]} outside "
                                 f"0..{lq}: the query count is the row extent of the packed "
                                 "query tensor")
        if not req.causal and (req.window or req.chunk):
            raise ax.Refusal(ax.EINEXPRESSIBLE, "a window or chunk without causal: "
                             "PagedAttentionExtension is always causal (no flag to leave off)")
        if not req.causal and any(x > 1 for x in qlens):
            raise ax.Refusal(ax.ENOTSUP, "causal = false with query_lens > 1: "
                             "PagedAttentionExtension is always causal")
        if req.softcap or req.chunk:
            raise ax.Refusal(ax.ENOTSUP, "softcap and chunk have no PagedAttentionExtension input")
        if not -2**31 <= req.window < 2**31:
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"window {req.window}: sliding_window is int32")
        if req.scale is not None and math.isfinite(req.scale) and abs(req.scale) > FLT_MAX:
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"scale {req.scale}: the scale input is f32")
        alibi = None
        if req.alibi_max_bias:
            if req.alibi_max_bias < 0:
                raise ax.Refusal(ax.EINEXPRESSIBLE, f"alibi_max_bias {req.alibi_max_bias}: the op "
                                 "takes slopes, and the slopes of a negative max_bias are "
                                 "ordinary positive numbers")
            with np.errstate(all="ignore"):
                alibi = alibi_slopes(req.alibi_max_bias, hq)
        # the row's last q_b keys and values: the step's "new" tokens, read through the table
        kp, vp = req.k_pages.array, req.v_pages.array
        seq = [int(x) for x in req.seq_lens]
        past = [seq[b] - qlens[b] for b in range(batch)]
        keys, vals = [], []
        for b in range(batch):
            for p in range(past[b], seq[b]):
                j = p // BLOCK if p >= 0 else -1
                page = req.block_table[b][j] if 0 <= j < len(req.block_table[b]) else -1
                inside = 0 <= page < npages
                keys.append(kp[page, :, p % BLOCK, :] if inside else np.zeros((hkv, d), kp.dtype))
                vals.append(vp[page, :, p % BLOCK, :] if inside else np.zeros((hkv, dv), vp.dtype))
        tokens = len(keys)
        kt = np.array(keys, kp.dtype).reshape(tokens, hkv * d)
        vt = np.array(vals, vp.dtype).reshape(tokens, hkv * dv)
        qt = np.concatenate([np.transpose(q[b, :, :qlens[b], :], (1, 0, 2))
                             .reshape(qlens[b], hq * dq) for b in range(batch)]
                            or [np.zeros((0, hq * dq), q.dtype)])
        model = self.model(req.q.dtype, req.k_pages.dtype, req.v_pages.dtype, hq, hkv, d, dv,
                           alibi is not None, req.sinks is not None)
        rows = [self.blocks(req, b, seq[b]) for b in range(batch)]
        scale = 1 / math.sqrt(d) if req.scale is None else req.scale
        feeds = {"query": ov_tensor(req.q.dtype, qt),
                 "key": ov_tensor(req.k_pages.dtype, kt), "value": ov_tensor(req.v_pages.dtype, vt),
                 "key_cache": ov_tensor(req.k_pages.dtype, kp),
                 "value_cache": ov_tensor(req.v_pages.dtype, vp),
                 **self.sequences(past, qlens, rows),
                 "scale": np.array(scale, np.float32),
                 "sliding_window": np.array(req.window, np.int32),
                 "max_context_len": np.array(max(seq + [0]), np.int32)}
        if alibi is not None:
            feeds["alibi_slopes"] = alibi
        if req.sinks is not None:
            sinks = np.array(req.sinks, np.float32).reshape(1, hq, 1, 1)
            feeds["sinks"] = ov_tensor(req.q.dtype, sinks if req.q.dtype == "f32" else
                                       sinks.astype(np.float16) if req.q.dtype == "f16" else
                                       ax.f32_to_bf16(sinks))
        out_t = model.run(feeds)
        dtype = WIRE.get(out_t.element_type)
        if dtype is None:
            raise ax.Refusal(ax.EBACKEND, f"output element type {out_t.element_type}")
        got = bits_of(out_t, dtype)
        if got.shape != (tokens, hq * dv):
            raise ax.Refusal(ax.EBACKEND, f"output {list(got.shape)} for {tokens} tokens of "
                             f"{hq} heads x {dv}: expected [{tokens}, {hq * dv}]")
        out = np.zeros((batch, hq, lq, dv), ax.STORAGE[dtype])
        row = 0
        for b in range(batch):
            out[b, :, :qlens[b], :] = got[row:row + qlens[b]].reshape(qlens[b], hq, dv) \
                .transpose(1, 0, 2)
            row += qlens[b]
        return dtype, out

    def refusal_of(self, exc):
        """OpenVINO raises RuntimeError for everything: a type check (the op's element-type
        merge, a cache-type complaint) is a dtype error, a shape check a value error, the rest
        EBACKEND (the default)."""
        text, low = str(exc), str(exc).lower()
        if isinstance(exc, RuntimeError):
            # The paged executor the plugin builds for a CPU without native bf16 (its AVX2
            # one) takes f32 caches only: bf16 caches are a feature of other CPUs, not a
            # wrong dtype in the call.
            if "all_of(ov::element::f32, key_cache_type, value_cache_type)" in text:
                return ax.Refusal(ax.ENOTSUP, "bf16 KV caches: on this CPU (no native bf16) the "
                                  "plugin's paged executor takes f32 caches only; "
                                  + ov_message(text))
            if "element::type::merge" in low or "expect kvcache type" in text or \
                    ("precision" in low and "mismatch" in low):
                return ax.Refusal(ax.EDTYPE, ov_message(text))
            if "incompatible" in low or "shape" in low or "correctness" in low:
                return ax.Refusal(ax.EINVAL, ov_message(text))
        return None


def ov_message(text: str) -> str:
    """OpenVINO's check failures quote the whole node; keep the check, its place and the
    verdict after the node's description."""
    text = " ".join(text.split())
    m = re.search(r"Check '([^']*)' failed at (\S+?):?(\d+)?:", text)
    if not m:
        return f"openvino: {text}"
    tail = text.rsplit("):", 1)[-1].strip() if "):" in text else ""
    return f"openvino: check '{m[1]}' failed ({m[2]}{':' + m[3] if m[3] else ''})" + \
        (f": {tail}" if tail else "")


if __name__ == "__main__":
    ax.serve(OpenVino())
