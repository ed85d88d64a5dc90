"""The KV cache operations of the mlx-lm exec adapter (PROTOCOL.md "Cache operations").

Each case's cache is one of mlx-lm's own cache objects (mlx_lm.models.cache: KVCache,
RotatingKVCache, ChunkedKVCache, QuantizedKVCache, BatchKVCache), driven the way mlx-lm's
models drive them:
  * update: cache.update_and_fetch(k, v); what it returns is what the layer attends to.
  * make_mask (before the update, as the models build it): cache.make_mask(N, ...) with
    return_array where the method takes it; None (no mask) becomes all-true and "causal" a
    bottom-right causal mask over the `length` slots the harness announces.  The chunked cache
    has no make_mask: the mask is the one Llama 4's model builds (maybe_trim_front first, then
    same-chunk and causal).  A rotating cache's single-token mask with a model window is
    built by mlx-lm over the ring buffer's physical order; it is reordered to time order with
    the permutation the update is about to make.
  * state: the slots in time order (the rotating cache's own _temporal_order), their absolute
    positions from the cache's offset (and keep), dequantized values for the quantized cache
    (mx.dequantize with the cache's group_size and bits).
  * trim, filter, extend, merge, prepare, finalize: the cache's own methods.  lengths given to
    prepare become the right padding mlx-lm's finalize takes (appended - length per row).
Nothing is validated ahead of mlx-lm: a negative trim, for one, is passed on as it is.
"""

import numpy as np

import attnconf_exec as ax

import mlx.core as mx
from mlx_lm.models import cache as mc

MX_DTYPES = {"f32": mx.float32, "f16": mx.float16, "bf16": mx.bfloat16}
KINDS = ("standard", "rotating", "chunked", "quantized", "batch", "batch_rotating")


class Handle:
    def __init__(self, p: ax.CacheParams, cache):
        self.p = p
        self.c = cache
        self.lengths = None   # prepare(lengths): the valid lengths of right-padded prompts
        self.appended = 0     # tokens appended since prepare


def _wire(dtype: str, a: mx.array) -> np.ndarray:
    if dtype == "bf16":
        return np.array(a.view(mx.uint16))
    return np.array(a)


def _rot_perm_after_single(c: mc.RotatingKVCache):
    """Physical slot order -> time order of a rotating cache's buffer after a single-token
    update (the in-place path), computed from its state before the update."""
    size = c.keys.shape[2] if c.keys is not None else 0
    prev, idx = c.offset, c._idx
    if c.keys is None or (prev >= size and size < c.max_size):
        size += min(c.step, c.max_size - prev)
        idx = prev
    if size > c.max_size:
        size, idx = c.max_size, c.max_size
    if idx == c.max_size:
        idx = c.keep
    idx += 1
    if idx == size or idx >= prev + 1:
        return list(range(min(size, prev + 1)))
    return list(range(c.keep)) + list(range(idx, size)) + list(range(c.keep, idx))


class CacheOps:
    """Mixed into the adapter class: the cache_* methods attnconf_exec.serve calls.  The
    adapter provides to_mx (a received tensor as an MLX array of its dtype and strides)."""

    CACHE_CAPABILITIES = ["cache.standard", "cache.rotating", "cache.chunked",
                          "cache.quantized", "cache.batch", "cache.batch_rotating"]

    def cache_create(self, p: ax.CacheParams):
        if p.kind not in KINDS:
            raise ax.Refusal(ax.ENOTSUP, f"cache kind {p.kind} is not posed to mlx-lm here")
        lp = list(p.left_padding) if p.left_padding is not None else [0] * p.batch
        make = {
            "standard": lambda: mc.KVCache(),
            "rotating": lambda: mc.RotatingKVCache(max_size=p.max_size, keep=p.keep),
            "chunked": lambda: mc.ChunkedKVCache(p.chunk_size),
            "quantized": lambda: mc.QuantizedKVCache(group_size=p.group_size, bits=p.bits),
            "batch": lambda: mc.BatchKVCache(lp),
            "batch_rotating": lambda: mc.BatchRotatingKVCache(p.max_size, lp),
        }
        return Handle(p, make[p.kind]())

    def cache_update(self, h: Handle, k: ax.Tensor, v: ax.Tensor):
        keys, values = h.c.update_and_fetch(self.to_mx(k), self.to_mx(v))
        mx.eval(keys, values)
        h.appended += k.shape[2]

    def cache_trim(self, h: Handle, n: int) -> int:
        return int(h.c.trim(n))

    def cache_make_mask(self, h: Handle, n: int, window: int, length: int):
        c, B = h.c, h.p.batch
        win = window or None
        if h.p.kind == "chunked":
            c.maybe_trim_front()
            start, off, cs = c.start_position, c.offset, c.chunk_size
            linds = mx.arange(start, off + n)
            rinds = mx.arange(off, off + n)[:, None]
            mask = ((linds // cs) == (rinds // cs)) & (linds <= rinds)
        elif h.p.kind == "batch":
            mask = c.make_mask(n, window_size=win)
        elif h.p.kind == "batch_rotating":
            mask = c.make_mask(n, window_size=win)
            if n == 1 and (c.rotated or c._idx >= c.max_size):
                # mlx-lm rolls the decode mask onto the ring's physical order after the
                # update (slot idx + 1 first); time order is the inverse roll.
                idx = 0 if c._idx >= c.max_size else c._idx
                mask = mx.roll(mask, shift=-(idx + 1), axis=-1)
        elif h.p.kind == "rotating":
            mask = c.make_mask(n, window_size=win, return_array=True)
            if n == 1 and mask is not None:
                perm = _rot_perm_after_single(c)
                if len(perm) == mask.shape[-1]:
                    mask = mx.take(mask, mx.array(perm), axis=-1)
        else:
            mask = c.make_mask(n, return_array=True, window_size=win)
        if mask is None:
            keep = np.ones((B, 1, n, length), dtype=bool)
        elif isinstance(mask, str):
            keep = np.tril(np.ones((n, length), dtype=bool), k=length - n)
            keep = np.broadcast_to(keep, (B, 1, n, length))
        else:
            keep = np.array(mask.astype(mx.bool_))
            keep = keep.reshape((1,) * (4 - keep.ndim) + keep.shape)  # (n, L) or (L,) too
            keep = np.broadcast_to(keep, (B, 1) + keep.shape[-2:])
        return np.ascontiguousarray(keep)

    def cache_state(self, h: Handle) -> ax.CacheState:
        p, c = h.p, h.c
        B, H = p.batch, p.kv_heads
        if p.kind in ("batch", "batch_rotating"):
            B = int(c.offset.shape[0])
        empty = c.keys is None
        if p.kind == "rotating" and not empty:
            keys, values = c._temporal_order(c.keys), c._temporal_order(c.values)
        elif p.kind == "batch_rotating" and not empty:
            keys, values = c.keys_and_values()
            if c.rotated:  # the ring in time order, without changing the cache
                keys = mx.roll(c.keys, -c._idx, axis=2)
                values = mx.roll(c.values, -c._idx, axis=2)
        elif p.kind == "quantized" and not empty:
            kq, vq = c.keys_and_values() if hasattr(c, "keys_and_values") else (c.keys, c.values)
            keys = mx.dequantize(*kq, group_size=c.group_size, bits=c.bits)
            values = mx.dequantize(*vq, group_size=c.group_size, bits=c.bits)
            keys, values = keys[..., :c.offset, :], values[..., :c.offset, :]
        elif not empty:
            keys, values = c.keys_and_values() if p.kind != "standard" else (
                c.keys[..., :c.offset, :], c.values[..., :c.offset, :])
        if empty:
            dt = MX_DTYPES[p.dtype]
            keys = mx.zeros((B, H, 0, p.head_dim), dt)
            values = mx.zeros((B, H, 0, p.v_head_dim), dt)
        keys, values = keys.astype(MX_DTYPES[p.dtype]), values.astype(MX_DTYPES[p.dtype])
        mx.eval(keys, values)
        T = keys.shape[2]
        if p.kind in ("batch", "batch_rotating"):
            offsets = [int(o) for o in c.offset.tolist()]
            lp = [max(0, int(x)) for x in c.left_padding.tolist()]
            positions = [[o - T + j if j >= l else -1 for j in range(T)]
                         for o, l in zip(offsets, lp)]
        else:
            off = int(c.offset)
            keep = p.keep if p.kind == "rotating" else 0
            if keep and off > T:
                row = list(range(keep)) + list(range(off - (T - keep), off))
            else:
                row = list(range(off - T, off))
            offsets, positions = [off] * B, [row] * B
        return ax.CacheState(offsets, positions, p.dtype, _wire(p.dtype, keys),
                             _wire(p.dtype, values))

    def cache_filter(self, h: Handle, rows):
        h.c.filter(mx.array(rows))
        h.p = ax.CacheParams(**{**h.p.__dict__, "batch": len(rows)})

    def cache_extend(self, h: Handle, other: Handle):
        h.c.extend(other.c)
        h.p = ax.CacheParams(**{**h.p.__dict__, "batch": h.p.batch + other.p.batch})

    def cache_merge(self, hs):
        first = hs[0]
        kind = {"standard": "batch", "rotating": "batch_rotating"}.get(first.p.kind)
        if kind is None:
            raise ax.Refusal(ax.ENOTSUP, f"merging {first.p.kind} caches is not posed here")
        merged = type(first.c).merge([h.c for h in hs])
        p = ax.CacheParams(**{**first.p.__dict__, "kind": kind, "batch": len(hs)})
        return Handle(p, merged)

    def cache_prepare(self, h: Handle, left_padding, lengths):
        if left_padding is not None:
            h.c.prepare(left_padding=list(left_padding))
        if lengths is not None and h.p.kind == "batch_rotating":
            # mlx-lm's own form: the lengths, with a right padding that only says "there is"
            h.c.prepare(lengths=list(lengths), right_padding=[1] * len(lengths))
        elif lengths is not None:
            h.lengths, h.appended = list(lengths), 0

    def cache_finalize(self, h: Handle):
        if h.lengths is not None:
            right = [max(0, h.appended - n) for n in h.lengths]
            h.c.prepare(right_padding=right)
            h.lengths = None
        h.c.finalize()
