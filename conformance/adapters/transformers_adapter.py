"""attnconf exec adapter: Hugging Face transformers' attention functions, mask builders and KV
caches, on the CPU, called the way transformers' models call them.

What it validates, one implementation per run (--backend-option attention=...):

    attention=sdpa    sdpa_attention_forward  (integrations/sdpa_attention.py)  name transformers-sdpa
    attention=eager   eager_attention_forward (models/llama, the one models copy) name transformers-eager
    attention=flex    flex_attention_forward  (integrations/flex_attention.py)  name transformers-flex

each fetched as a model fetches it, ALL_ATTENTION_FUNCTIONS.get_interface(impl, eager), with
config._attn_implementation = "sdpa" / "eager" / "flex_attention", so that the mask builders of
transformers.masking_utils dispatch to sdpa_mask / eager_mask / flex_attention_mask.
flex runs without torch.compile (TORCHDYNAMO_DISABLE=1): transformers compiles
flex_attention and create_block_mask per shape, about a minute a shape on this CPU, so the
run poses torch's eager flex_attention (its reference path) and the eager block-mask builder.

How an sdpa case is posed:
  * q, k, v are torch tensors of the case's dtype and strides (torch_adapter.to_torch), shape
    (B, H, L, D); the function is called as a decoder layer calls it,
    fn(layer, q, k, v, attention_mask, dropout=0.0, scaling=scale), with `layer` a minimal
    torch.nn.Module carrying what the functions read: is_causal (the case's causal flag),
    num_key_value_groups = Hq // Hkv (so GQA goes through repeat_kv / pack_gqa / enable_gqa
    as the function decides), layer_idx 0, eval mode.  The output, (B, Lq, H, Dv) as the
    functions return it, is transposed back; its dtype is what transformers produced.
  * scaling: the case's scale, else head_dim**-0.5, the `self.scaling` every model passes.
  * causal: the mask a model builds, create_causal_mask (create_sliding_window_causal_mask with
    a window) from inputs_embeds (B, Lq, 1) of q's dtype, the 2-D 0/1 attention_mask below and
    a cache that has seen `offset` tokens (the case's first keys), which is where transformers
    5 takes the causal offset from (get_query_offset / get_mask_sizes; cache_position is gone):
      - offset = Lk - Lq (bottom-right): a DynamicCache;
      - an explicit offset below Lk - Lq (a static key buffer): a StaticCache of Lk slots;
      - an offset above Lk - Lq, or below 0 (Lq > Lk): ENOTSUP, no cache says it.
    The cache only sizes the mask: attention reads the case's own k and v (the DynamicCache
    would return the same values; a StaticCache would return zeros where the case holds
    poison in the unwritten slots, which is what those cases test).
  * not causal: create_bidirectional_mask (an encoder's), with encoder_hidden_states (B, Lk, 1)
    when Lq != Lk; a window without causal is transformers' non-causal sliding window,
    create_bidirectional_sliding_window_mask (config.is_causal = False).
  * the sdpa mask parameters become a model's inputs: `lengths` (right padding) and
    `left_padding` the 2-D int64 attention_mask (B, max(Lk, entries)) of ones on the valid keys,
    `window` the config's sliding_window.  A negative lengths or left_padding entry has no
    0/1 spelling: EINEXPRESSIBLE.  An entry past Lk is a mask row wider than Lk.
  * a case mask (bool or additive) is the attention_mask argument of the attention function,
    unchanged in dtype, as a user with a custom 4-D mask passes it (create_causal_mask hands a
    4-D mask back as it is); a mask of rank < 4 gets leading axes of 1 (NumPy's own reading:
    transformers' custom masks are 4-D).  With lengths / left padding / a window as well, a
    bool mask without a head axis is the builders' and_mask_function overlay over the 2-D
    padding mask (the documented way to intersect a pattern); an additive or per-head mask
    then has no spelling beside a 2-D mask: ENOTSUP.
  * causal together with a mask tensor: the mask is passed with layer.is_causal = True, as a
    causal model with a user's 4-D mask does.
The terms of current models (SPEC clauses 20-22), where transformers has them:
  * softcap (sdpa.softcap), attention=eager and flex only: the attention function called with
    softcap=c, as Gemma 2's layers call it: eager is then Gemma 2's own eager_attention_forward
    (models/gemma2: tanh capping of the scaled scores before the mask), flex
    flex_attention_forward's softcap argument (its score_mod).  sdpa_attention_forward has no
    softcap: not claimed there.  Other terms of sdpa cases (ALiBi, sinks, chunks, documents,
    blocks) are not claimed: the attention functions take no such argument (ALiBi and sinks live
    in model code, the mask terms in the mask builders below).
  * build_mask's chunk (mask.chunk): create_chunked_causal_mask with config.attention_chunk_size
    (chunks counted from each row's left padding, which transformers reads off the 2-D
    attention_mask); chunk with a window has no builder: ENOTSUP.
  * build_mask's block_ids (mask.blocks): the builders' block_sequence_ids (the bidirectional
    blockwise overlay, OR-ed onto the causal pattern; negative = no block).
  * build_mask's segment_ids (mask.segments): packed sequences as transformers detects them,
    position_ids restarting at 0 at every document, with no attention_mask and no cache; a
    document whose tokens are not contiguous, a cache (offset > 0 or kv_len), or padding beside
    documents has no such spelling: ENOTSUP.
build_mask: the same builders, allow_is_causal_skip=False, over a cache that has seen `offset`
tokens (a StaticCache of kv_len slots when kv_len is given, else a DynamicCache), B = batch
when lengths or left padding are given (else 1); the keep mask is the builder's bool mask
(sdpa), its zero entries (eager's additive 0 / finfo.min mask) or the flex BlockMask's mask_mod
evaluated on its blocks.  The KV cache operations: transformers_cache.py.

repro (PROTOCOL.md): a reproducer script of one sdpa case, after the same check() as sdpa(), with
Layer, model_config, padding_mask, seen_cache, as_4d and model_mask embedded, so the script
builds the mask and calls the attention function as sdpa() does (a cache's own attend-step mask,
cache_mask_of, belongs to cache sequences, which have no reproducers).

Nothing is validated ahead of transformers: its exceptions are mapped to statuses (refusal_of).
An sdpa reply's "seconds" is the time of the attention function call alone.

Run (from the repository root, with a Python that has transformers and torch):

    attnconf run --backend 'exec:python3 conformance/adapters/transformers_adapter.py' \
        --cases cases --backend-option attention=eager
"""

import os
import platform
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import numpy as np
import torch
import transformers
from transformers import DynamicCache, MistralConfig, StaticCache
from transformers.masking_utils import (
    create_bidirectional_mask,
    create_bidirectional_sliding_window_mask,
    create_causal_mask,
    create_chunked_causal_mask,
    create_sliding_window_causal_mask,
)
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward as gemma2_eager
from transformers.models.llama.modeling_llama import eager_attention_forward
from torch.nn.attention.flex_attention import BlockMask, create_mask

import torch_adapter
from torch_adapter import from_torch, to_torch
from transformers_cache import CacheOps, quanto_version

IMPLS = {"sdpa": "sdpa", "eager": "eager", "flex": "flex_attention"}


class Layer(torch.nn.Module):
    """What the attention functions read from a model's attention module, for q and k."""

    def __init__(self, causal: bool, q, k):
        super().__init__()
        hq = q.shape[1] if q.dim() == 4 else 1
        hkv = k.shape[1] if k.dim() == 4 and k.shape[1] else 1
        self.is_causal = causal
        self.num_key_value_groups = hq // hkv
        self.layer_idx = 0
        self.eval()


def model_config(impl: str, sliding_window=None, chunk_size=None, causal=True):
    """A one-layer decoder config: what the mask builders and the caches read from a model's."""
    cfg = MistralConfig(num_hidden_layers=1, num_attention_heads=1, num_key_value_heads=1,
                        hidden_size=8, head_dim=8, sliding_window=sliding_window)
    if chunk_size is not None:
        cfg.attention_chunk_size = chunk_size
    if not causal:
        cfg.is_causal = False
    cfg._attn_implementation = impl
    return cfg


def check_padding(lengths, left_padding):
    """EINEXPRESSIBLE for what padding_mask cannot say: a negative entry."""
    for name, entries in (("lengths", lengths), ("left_padding", left_padding)):
        if entries is not None and any(x < 0 for x in entries):
            raise ax.Refusal(ax.EINEXPRESSIBLE, f"{name} {list(entries)}: a 2-D 0/1 attention_mask "
                             "has no way to say a negative entry")


def padding_mask(batch: int, width: int, lengths, left_padding):
    """The 2-D 0/1 attention_mask (int64, as a tokenizer returns it) of lengths / left padding
    (entries >= 0: check_padding)."""
    if lengths is None and left_padding is None:
        return None
    width = max([width] + list(lengths or []) + list(left_padding or []))
    j = torch.arange(width)[None, :]
    keep = torch.ones((len(lengths if lengths is not None else left_padding), width), dtype=torch.bool)
    if lengths is not None:
        keep &= j < torch.tensor(lengths)[:, None]
    if left_padding is not None:
        keep &= j >= torch.tensor(left_padding)[:, None]
    return keep.to(torch.long)


def seen_cache(impl: str, kv_len: int, lq: int, offset: int, k, v):
    """A cache that has seen `offset` tokens (k, v: their keys and values), sized for Lk =
    kv_len after this step's lq: a DynamicCache when kv_len = offset + lq, else a StaticCache."""
    if kv_len == offset + lq:
        cache = DynamicCache()
    else:
        cache = StaticCache(config=model_config(impl), max_cache_len=kv_len)
    if offset:
        cache.update(k, v, 0)
    return cache


def as_4d(mask):
    """A case mask as the 4-D custom mask a model takes: leading axes of 1 below rank 4."""
    if mask.dim() < 4:
        mask = mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape))
    return mask


def model_mask(impl: str, q, k, v, mask, causal: bool, causal_offset, window: int, lengths,
               left_padding):
    """(attention_mask, layer.is_causal) as a model hands them to the attention function, for
    q, k, v, the case's mask tensor (or None) and its parameters (causal_offset None:
    bottom-right, Lk - Lq; window 0: none), built by transformers.masking_utils under
    config._attn_implementation = impl.  What has no spelling here (a negative padding entry,
    an offset outside 0..Lk - Lq, an additive or per-head mask beside padding) was refused
    before (the adapter's check)."""
    if q.dim() != 4 or k.dim() != 4:
        return mask, causal  # a must-reject rank: no builder takes it, the function gets it
    B, lq, lk = q.shape[0], q.shape[-2], k.shape[-2]
    pad = padding_mask(B, lk, lengths, left_padding)
    emb = torch.empty((B, lq, 1), dtype=q.dtype)
    overlay = {}
    if mask is not None:
        mask = as_4d(mask)
        if pad is None and not window:
            return mask, causal
        # A (batch, query, key) bool mask beside a 2-D one: the builders' documented overlay.
        custom = mask.expand(B, 1, lq, lk)
        overlay = {"and_mask_function": lambda b, h, i, j: custom[b, 0, i, j]}
    if not causal:
        cfg = model_config(impl, sliding_window=window or None, causal=False)
        ehs = {} if lq == lk else {"encoder_hidden_states": torch.empty((B, lk, 1), dtype=q.dtype)}
        build = create_bidirectional_sliding_window_mask if window else create_bidirectional_mask
        return build(config=cfg, inputs_embeds=emb, attention_mask=pad, **ehs, **overlay), False
    off = lk - lq if causal_offset is None else causal_offset
    cache = seen_cache(impl, lk, lq, off, k[:, :, :off], v[:, :, :off])
    cfg = model_config(impl, sliding_window=window or None)
    build = create_sliding_window_causal_mask if window else create_causal_mask
    return build(config=cfg, inputs_embeds=emb, attention_mask=pad, past_key_values=cache,
                 **overlay), True


def packed_positions(segment_ids) -> torch.Tensor:
    """The position_ids of packed sequences (B, L) for document ids: 0, 1, ... within each
    document, restarting at each new one, which is how transformers finds the documents.  A
    document whose tokens are not contiguous has no such spelling: ENOTSUP."""
    rows = []
    for row in segment_ids:
        pos, done = [], set()
        for j, doc in enumerate(row):
            if j and doc == row[j - 1]:
                pos.append(pos[-1] + 1)
                continue
            if doc in done:
                raise ax.Refusal(ax.ENOTSUP, f"document {doc} of segment_ids {list(row)} is not "
                                 "contiguous: position_ids restart per packed sequence")
            done.add(doc)
            pos.append(0)
        rows.append(pos)
    return torch.tensor(rows, dtype=torch.long)


def keep_of(mask, batch: int, lq: int, lk: int) -> np.ndarray:
    """The keep mask (B, 1, lq, lk) a built mask stands for, as the attention applies it."""
    if mask is None:
        # The is_causal skip: sdpa_attention_forward then uses is_causal=True (top-left) when
        # lq > 1 and no mask at all for a single query.
        keep = torch.ones((lq, lk), dtype=torch.bool)
        if lq > 1:
            keep = torch.tril(keep)
        keep = keep.expand(batch, 1, lq, lk)
    elif isinstance(mask, BlockMask):
        n, length = mask.seq_lengths
        elem = create_mask(mask.mask_mod, mask.kv_num_blocks.shape[0], 1, n, length, device="cpu")
        qb, kb = mask.BLOCK_SIZE
        blocks = mask.to_dense().bool().repeat_interleave(qb, -2).repeat_interleave(kb, -1)
        keep = elem & blocks[..., :n, :length]
    elif mask.dtype == torch.bool:
        keep = mask
    else:
        keep = mask == 0  # eager_mask: 0 where kept, finfo(dtype).min elsewhere
    return np.ascontiguousarray(keep.numpy())


def versions(impl: str) -> str:
    flex = ", flex_attention without torch.compile" if impl == "flex_attention" else ""
    quanto = quanto_version()
    return (f"transformers {transformers.__version__}, torch {torch.__version__}, numpy "
            f"{np.__version__}, python {platform.python_version()}, attention {impl}{flex}, "
            + (f"optimum-quanto {quanto}" if quanto else "no optimum-quanto"))


class TransformersAdapter(CacheOps):
    options = [ax.Option("attention", "sdpa", "the attention function: sdpa "
                         "(sdpa_attention_forward), eager (eager_attention_forward) or flex "
                         "(flex_attention_forward, without torch.compile)")]
    model_config = staticmethod(model_config)
    keep_of = staticmethod(keep_of)

    def open(self, options):
        if options["attention"] not in IMPLS:
            raise ax.Refusal(ax.EINVAL, f"option attention={options['attention']!r}: expected "
                             f"one of {', '.join(IMPLS)}")
        self.impl = IMPLS[options["attention"]]
        if self.impl == "flex_attention":
            # torch reads it at every torch.compile: the compiles transformers asks for then
            # return the function as it is (eager flex_attention, eager create_block_mask).
            os.environ["TORCHDYNAMO_DISABLE"] = "1"
        self.attention = ALL_ATTENTION_FUNCTIONS.get_interface(self.impl, eager_attention_forward)
        self.pending = None  # (keep, built mask) of the last cache_make_mask: see cache_mask_of
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
                "causal.offset", "gqa", "dv_ne_d", "strided", "stride0", "scale", "build_mask",
                "window", "lengths", "left_padding", "mask.kv_len", "sdpa.window",
                "sdpa.lengths", "sdpa.left_padding", "mask.chunk", "mask.segments",
                "mask.blocks"] + self.cache_capabilities()
        if self.impl in ("eager", "flex_attention"):
            caps.append("sdpa.softcap")
        self.name = "transformers-" + options["attention"]
        return ax.Identity(self.name, versions(self.impl), caps)

    @staticmethod
    def check(req: ax.SdpaRequest):
        """The refusals of what model_mask cannot pose (in the order a model would meet them):
        a negative padding entry (EINEXPRESSIBLE), a per-head or additive mask beside padding or
        a window, a causal offset outside 0..Lk - Lq given to a mask builder (ENOTSUP)."""
        if len(req.q.shape) != 4 or len(req.k.shape) != 4:
            return
        check_padding(req.lengths, req.left_padding)
        padded = req.lengths is not None or req.left_padding is not None
        if req.mask is not None:
            if not padded and not req.window:
                return  # the mask goes to the function as it is: no builder sees the case
            mask = as_4d(to_torch(req.mask))
            if mask.dtype != torch.bool or mask.dim() != 4 or mask.shape[1] != 1:
                raise ax.Refusal(ax.ENOTSUP, "a per-head or additive mask with lengths, left "
                                 "padding or a window: transformers takes one attention_mask "
                                 "(2-D padding or 4-D custom) and only (batch, query, key) "
                                 "boolean overlays beside a 2-D one")
        lq, lk = req.q.shape[-2], req.k.shape[-2]
        off = lk - lq if req.causal_offset is None else req.causal_offset
        if req.causal and (off < 0 or off > lk - lq):
            raise ax.Refusal(ax.ENOTSUP, f"causal offset {off} with Lq {lq}, Lk {lk}: transformers "
                             "takes the offset from a cache's seen tokens, 0..Lk - Lq")

    @staticmethod
    def scaling(req: ax.SdpaRequest) -> float:
        """The scaling a model passes: the case's scale, else head_dim**-0.5."""
        return req.q.shape[-1] ** -0.5 if req.scale is None else req.scale

    def sdpa(self, req: ax.SdpaRequest):
        q, k, v = to_torch(req.q), to_torch(req.k), to_torch(req.v)
        with torch.no_grad():
            native = self.cache_mask_of(req)
            if native is not None:
                mask, causal = native[0], True
            else:
                self.check(req)
                mask, causal = model_mask(self.impl, q, k, v, None if req.mask is None else
                                          to_torch(req.mask), req.causal, req.causal_offset,
                                          req.window, req.lengths, req.left_padding)
            attention, extra = self.attention_for(req)
            out, _ = ax.timed(attention, Layer(causal, q, k), q, k, v, mask,
                              dropout=0.0, scaling=self.scaling(req), **extra)
        return from_torch(out.transpose(1, 2) if out.dim() == 4 else out)

    def attention_for(self, req: ax.SdpaRequest):
        """(attention function, its extra keyword arguments): a soft-capped case goes as Gemma 2
        calls attention, softcap=c, to Gemma 2's eager function under eager."""
        if not req.softcap:
            return self.attention, {}
        fn = gemma2_eager if self.impl == "eager" else self.attention
        return fn, {"softcap": req.softcap}

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): check() first (a case sdpa() refuses is refused
        alike), then model_mask and its helpers embedded, so the script builds the mask with
        transformers.masking_utils and calls the attention function as sdpa() does."""
        self.check(req)
        fn = {"sdpa": "sdpa_attention_forward", "eager": "eager_attention_forward",
              "flex_attention": "flex_attention_forward"}.get(self.impl, self.impl)
        params = (f"causal={req.causal!r}, causal_offset={req.causal_offset!r}, "
                  f"window={req.window!r}, lengths={req.lengths!r}, "
                  f"left_padding={req.left_padding!r}")
        softcap = f", softcap={req.softcap!r}" if req.softcap else ""
        getter = ("gemma2_eager" if req.softcap and self.impl == "eager" else
                  f"ALL_ATTENTION_FUNCTIONS.get_interface({self.impl!r}, eager_attention_forward)")
        body = [
            "mask = to_torch(INPUTS['mask'])" if req.mask is not None else "mask = None",
            f"attention = {getter}",
            "with torch.no_grad():",
            f"    attention_mask, is_causal = model_mask({self.impl!r}, q, k, v, mask, {params})",
            "    out, _ = attention(Layer(is_causal, q, k), q, k, v, attention_mask, dropout=0.0,",
            f"                       scaling={self.scaling(req)!r}{softcap})",
            "out = out.transpose(1, 2) if out.dim() == 4 else out",
            "print(f'transformers {transformers.__version__}: {attention.__name__}, attention_mask '",
            "      f'{type(attention_mask).__name__} {list(getattr(attention_mask, \"shape\", []))} '",
            "      f'{getattr(attention_mask, \"dtype\", \"\")}, is_causal {is_causal}')",
        ]
        imports = [
            *(["import os", "",
               "# transformers compiles flex_attention and create_block_mask; the run did not.",
               "os.environ['TORCHDYNAMO_DISABLE'] = '1'"] if self.impl == "flex_attention"
              else []),
            "import transformers",
            "from transformers import DynamicCache, MistralConfig, StaticCache",
            "from transformers.masking_utils import (create_bidirectional_mask,",
            "    create_bidirectional_sliding_window_mask, create_causal_mask,",
            "    create_sliding_window_causal_mask)",
            "from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS",
            "from transformers.models.llama.modeling_llama import eager_attention_forward",
            *(["from transformers.models.gemma2.modeling_gemma2 import eager_attention_forward "
               "as gemma2_eager"] if req.softcap and self.impl == "eager" else []),
        ]
        how = [
            f"{fn} (ALL_ATTENTION_FUNCTIONS.get_interface({self.impl!r}, ...)) called as a "
            "decoder layer calls it,",
            "attention(layer, q, k, v, attention_mask, dropout=0.0, scaling=...), layer a minimal "
            "module (Layer below);",
            "attention_mask and is_causal from model_mask below: masking_utils' builders over a "
            "one-layer config",
            "(sliding_window = the window), a 2-D 0/1 padding mask and a cache that has seen the "
            "causal offset's",
            "tokens; a case mask of its own passed as the 4-D custom mask (or and_mask_function "
            "beside padding).",
        ]
        return torch_adapter.repro_script(
            req, header, self.name, how, imports,
            [Layer, model_config, padding_mask, seen_cache, as_4d, model_mask], body, None,
            library=f"transformers=={transformers.__version__}", versions_text=versions(self.impl))

    def cache_mask_of(self, req: ax.SdpaRequest):
        """The mask the cache built for this attend step (cache_make_mask, then cache_update and
        cache_state, then this sdpa with its keep mask): a model's layer gets the builder's own
        mask (additive for eager, a BlockMask for flex, None for sdpa's is_causal), not the
        boolean keep mask the protocol carries."""
        pending, self.pending = self.pending, None
        if pending is None or req.mask is None or req.mask.dtype != "bool" or req.causal:
            return None
        keep, built = pending
        if req.mask.array.shape != keep.shape or not np.array_equal(req.mask.array, keep):
            return None
        return (built,)

    def build_mask(self, req: ax.MaskRequest):
        padded = req.lengths is not None or req.left_padding is not None
        ids = req.segment_ids is not None or req.block_ids is not None
        B = req.batch if padded or ids else 1
        check_padding(req.lengths, req.left_padding)
        lk = req.kv_len or req.offset + req.lq
        pad = padding_mask(B, lk, req.lengths, req.left_padding)
        seen = torch.zeros((B, 1, req.offset, 1))
        cache = seen_cache(self.impl, lk, req.lq, req.offset, seen, seen)
        if req.chunk and req.window:
            raise ax.Refusal(ax.ENOTSUP, "chunk with a window: transformers has no builder of "
                             "both (create_chunked_causal_mask or the sliding-window one)")
        cfg = model_config(self.impl, sliding_window=req.window or None,
                           chunk_size=req.chunk or None)
        build = (create_chunked_causal_mask if req.chunk else
                 create_sliding_window_causal_mask if req.window else create_causal_mask)
        extra = {}
        if req.block_ids is not None:
            extra["block_sequence_ids"] = torch.tensor(req.block_ids, dtype=torch.long)
        if req.segment_ids is not None:
            extra["position_ids"] = packed_positions(req.segment_ids)
            if padded or req.offset or lk != req.lq:
                raise ax.Refusal(ax.ENOTSUP, "documents beside padding or a cache: transformers "
                                 "detects packed sequences only from position_ids with no "
                                 "attention_mask and no cache")
            cache = None
        mask = build(config=cfg, inputs_embeds=torch.empty((B, req.lq, 1)), attention_mask=pad,
                     past_key_values=cache, allow_is_causal_skip=False, **extra)
        return keep_of(mask, B, req.lq, lk)

    @staticmethod
    def refusal_of(exc):
        # transformers' own checks word a dtype mismatch as "scalar type" or "same type" too.
        return torch_adapter.refusal_of(
            exc, r"dtype|scalar type|Expected .*(float|bool|Half|BFloat16)|same type")


if __name__ == "__main__":
    ax.serve(TransformersAdapter())
