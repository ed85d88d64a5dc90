"""The KV cache operations of the transformers exec adapter (PROTOCOL.md "Cache operations").

Each case's cache is one of transformers' own (transformers.cache_utils), one layer (index 0),
driven the way a decoder layer drives it:
  * standard: DynamicCache() (DynamicLayer);
  * rotating: DynamicCache(config) of a config with sliding_window = max_size
    (DynamicSlidingWindowLayer); keep > 0 has no counterpart (ENOTSUP);
  * chunked: DynamicCache(config) of a config with attention_chunk_size = chunk_size (also a
    DynamicSlidingWindowLayer: transformers stores chunked layers like sliding ones);
  * quantized: QuantizedCache("quanto", config, nbits=bits, q_group_size=group_size,
    residual_length=1), when optimum-quanto is installed (axis 0: groups of consecutive
    head-dim values, as clause 17); residual_length 1 flushes every update into the quantized
    store, so the state is the quantizer's, not a full-precision residual; quanto has no 8 bits
    (ENOTSUP).
  * batch, batch_rotating: not offered.  transformers' caches are batched but keep no padding
    per row: a model's padding is its 2-D attention_mask, not cache state (SPEC.md clause 18).
Operations:
  * update: cache.update(k, v, 0); what it returns is what the layer attends to.
  * make_mask (before the update, as a model builds it): create_causal_mask (standard,
    quantized), create_sliding_window_causal_mask (a window; rotating with sliding_window =
    the model's window or max_size) or create_chunked_causal_mask (chunked) over the cache,
    with inputs_embeds (B, N, 1) of the cache dtype; the keep mask as keep_of reads it.  The
    attend step's sdpa then gets the built mask itself (TransformersAdapter.cache_mask_of).
  * state: after an update, the keys and values that update returned (what the attention
    sees: a sliding layer returns its window - 1 stored tokens plus the new ones, and keeps
    only window - 1); after any other operation, the layer's stored keys and values.  The
    quantized cache reports its store, dequantized (QuantizedLayer._dequantize), plus any
    residual (the update itself returns its own tokens unquantized: SPEC.md clause 17).  The offset is the layer's get_seq_length (a sliding layer's cumulative_length),
    the slots the newest offset - L .. offset - 1.
  * trim(n): cache.crop(-n) (transformers 5: a negative crop removes that many tokens, a
    positive one is refused); the result is the drop in get_seq_length.
Nothing is validated ahead of transformers: a negative trim, for one, is crop(+n).
"""

from importlib.metadata import PackageNotFoundError, version

import torch

import attnconf_exec as ax

from transformers import DynamicCache, QuantizedCache
from transformers.masking_utils import (
    create_causal_mask,
    create_chunked_causal_mask,
    create_sliding_window_causal_mask,
)

from torch_adapter import TORCH_DTYPE, from_torch, to_torch


def quanto_version():
    """optimum-quanto's version, or None when it is not installed.  Not imported here:
    importing it loads (and on first use builds) its C++ extension, which takes longer than
    the rest of the adapter's start, and transformers imports it when a quantized cache is made."""
    try:
        return version("optimum-quanto")
    except PackageNotFoundError:
        return None


class Handle:
    def __init__(self, p: ax.CacheParams, cache):
        self.p = p
        self.c = cache
        self.view = None  # (keys, values) the last update returned, until another op

    @property
    def layer(self):
        return self.c.layers[0] if self.c.layers else None


class CacheOps:
    """Mixed into the adapter class: the cache_* methods attnconf_exec.serve calls.  The
    adapter provides impl (config._attn_implementation), model_config (a one-layer config)
    and keep_of (the keep mask a built mask stands for)."""

    def cache_capabilities(self):
        caps = ["cache.standard", "cache.rotating", "cache.chunked"]
        return caps + (["cache.quantized"] if quanto_version() else [])

    def cache_create(self, p: ax.CacheParams):
        model_config = self.model_config
        self.pending = None
        if p.kind == "standard":
            return Handle(p, DynamicCache())
        if p.kind == "rotating":
            if p.keep:
                raise ax.Refusal(ax.ENOTSUP, f"keep {p.keep}: transformers' sliding-window "
                                 "layer keeps no leading tokens")
            return Handle(p, DynamicCache(config=model_config(self.impl, sliding_window=p.max_size)))
        if p.kind == "chunked":
            return Handle(p, DynamicCache(config=model_config(self.impl, chunk_size=p.chunk_size)))
        if p.kind == "quantized" and quanto_version():
            if p.bits not in (2, 4):
                raise ax.Refusal(ax.ENOTSUP, f"bits {p.bits}: the quanto backend quantizes to "
                                 "2 or 4 bits only")
            return Handle(p, QuantizedCache("quanto", model_config(self.impl), nbits=p.bits,
                                            q_group_size=p.group_size, residual_length=1))
        raise ax.Refusal(ax.ENOTSUP, f"cache kind {p.kind} is not posed to transformers here")

    def cache_update(self, h: Handle, k: ax.Tensor, v: ax.Tensor):
        with torch.no_grad():
            h.view = h.c.update(to_torch(k), to_torch(v), 0)

    def cache_trim(self, h: Handle, n: int) -> int:
        self.pending, h.view = None, None
        before = h.c.get_seq_length(0)
        h.c.crop(-n)
        return int(before - h.c.get_seq_length(0))

    def cache_make_mask(self, h: Handle, n: int, window: int, length: int):
        model_config, p, impl = self.model_config, h.p, self.impl
        if p.kind == "chunked":
            cfg, build = model_config(impl, chunk_size=p.chunk_size), create_chunked_causal_mask
        else:
            w = window or (p.max_size if p.kind == "rotating" else 0)
            cfg = model_config(impl, sliding_window=w or None)
            build = create_sliding_window_causal_mask if w else create_causal_mask
        emb = torch.empty((p.batch, n, 1), dtype=TORCH_DTYPE[p.dtype])
        with torch.no_grad():
            built = build(config=cfg, inputs_embeds=emb, attention_mask=None, past_key_values=h.c)
            keep = self.keep_of(built, p.batch, n, length)
        self.pending = (keep, built)
        return keep

    def stored(self, h: Handle):
        layer = h.layer
        if layer is None or not layer.is_initialized:
            return None
        if h.p.kind == "quantized":
            keys = layer._dequantize(layer._quantized_keys)
            values = layer._dequantize(layer._quantized_values)
            if layer.keys.dim() == 4:  # the full-precision residual, if any
                keys, values = torch.cat([keys, layer.keys], -2), torch.cat([values, layer.values], -2)
            return keys, values
        return layer.keys, layer.values

    def cache_state(self, h: Handle) -> ax.CacheState:
        p = h.p
        kv = h.view if h.view is not None and p.kind != "quantized" else self.stored(h)
        if kv is None:
            dt = TORCH_DTYPE[p.dtype]
            kv = (torch.zeros((p.batch, p.kv_heads, 0, p.head_dim), dtype=dt),
                  torch.zeros((p.batch, p.kv_heads, 0, p.v_head_dim), dtype=dt))
        keys, values = (t.to(TORCH_DTYPE[p.dtype]) for t in kv)
        off, length = int(h.c.get_seq_length(0)), keys.shape[-2]
        _, kw = from_torch(keys)
        _, vw = from_torch(values)
        rows = keys.shape[0]
        return ax.CacheState([off] * rows, [list(range(off - length, off))] * rows, p.dtype, kw, vw)

