"""attnconf exec adapter: OpenVINO's PagedAttentionExtension on the CPU plugin (paged KV caches,
SPEC.md clause 23, capability paged).

What it validates: the CPU plugin's kernel for `PagedAttentionExtension` (openvino.op.
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

    attnconf run --backend 'exec:python3 conformance/adapters/openvino_adapter.py' --cases cases
"""

import math
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import numpy as np  # noqa: E402
import openvino as ov  # noqa: E402
import openvino.opset15 as ops  # noqa: E402
from openvino.op import _PagedAttentionExtension  # noqa: E402

BLOCK = 32  # the CPU plugin's cache block (ConvertPagedAttnInputs' block size for CPU)
FLT_MAX = 3.4028234663852886e38
OV_TYPE = {"f32": ov.Type.f32, "f16": ov.Type.f16, "bf16": ov.Type.bf16}
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


class OpenVinoPaged:
    options = []

    def __init__(self):
        self.models = {}

    def open(self, options):
        return ax.Identity(
            name="openvino-paged",
            version=f"openvino {ov.get_version()}, CPU plugin, PagedAttentionExtension",
            capabilities=["f32", "f16", "bf16", "gqa", "dv_ne_d", "strided", "scale", "causal",
                          "sdpa.window", "sdpa.alibi", "sdpa.sinks", "paged"])

    def sdpa(self, req):
        raise ax.Refusal(ax.ENOTSUP, "this adapter serves paged KV caches only "
                         "(PagedAttentionExtension); contiguous SDPA is not posed")

    def model(self, qtype, kc_type, vc_type, hq, hkv, d, dv, alibi=False, sinks=False):
        key = (qtype, kc_type, vc_type, hq, hkv, d, dv, alibi, sinks)
        if key not in self.models:
            self.models[key] = Model(*key)
        return self.models[key]

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
        """OpenVINO raises RuntimeError for everything: a cache-type complaint is a dtype
        error, a shape complaint a value error, the rest EBACKEND (the default)."""
        text, low = str(exc), str(exc).lower()
        if isinstance(exc, RuntimeError):
            if "expect kvcache type" in text or ("precision" in low and "mismatch" in low):
                return ax.Refusal(ax.EDTYPE, text)
            if "incompatible" in low or "shape" in low:
                return ax.Refusal(ax.EINVAL, text)
        return None


if __name__ == "__main__":
    ax.serve(OpenVinoPaged())
