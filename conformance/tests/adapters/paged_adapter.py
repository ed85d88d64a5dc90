#!/usr/bin/env python3
"""paged_adapter.py -- TEST-ONLY exec adapter on attnconf_exec.py (needs numpy) for paged KV
caches (PROTOCOL.md "Paged KV caches", SPEC clause 23), correct or broken on purpose.

    attnconf run --backend 'exec:PYTHON paged_adapter.py MODE [LOG]' ...

f32 only.  paged_append scatters each new token into page block_table[b][p // P], slot p % P of
a copy of the pool and returns the copy (attnconf_exec sends the slots that changed);
paged_sdpa gathers each row's first L_b keys into contiguous K/V and computes attention in
float64, rounded once to f32.  Both refuse what clause 23 says must be refused.  MODE
(argv[1]):

  ok           as above
  last_full    paged_sdpa reads the last page whole (P slots): the stale tail enters the softmax
  stray        paged_append also writes each new token into the slot after it (when that slot
               is in the same page): a byte outside the new tokens' slots changes
  row0         paged_append writes through row 0's block table for every row (a shared-prefix
               page written by the wrong sequence)
  bad_writes   paged_append replies writes [[num_pages, 0]] (a page outside the pool)

LOG (argv[2], optional): each paged request's members ("tensors" left out, the pool's strides
added) are appended to it, one JSON object a line.
"""

import json
import math
import os
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "adapters"))
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel

import numpy as np  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
LOG = sys.argv[2] if len(sys.argv) > 2 else None
FLT_MAX = 3.4028234663852886e38


def einval(msg):
    raise ax.Refusal(ax.EINVAL, msg)


def log(kind, req):
    if not LOG:
        return
    members = {k: v for k, v in vars(req).items() if not isinstance(v, ax.Tensor)}
    members["op"] = kind
    members["pool_strides"] = list(req.k_pages.strides)
    with open(LOG, "a") as f:
        f.write(json.dumps(members) + "\n")


def pool_shape(req):
    """(num_pages, Hkv, P, D, Dv) after the checks every paged call shares."""
    kp, vp = req.k_pages, req.v_pages
    if len(kp.shape) != 4 or len(vp.shape) != 4 or kp.shape[:3] != vp.shape[:3]:
        einval(f"k_pages {list(kp.shape)} and v_pages {list(vp.shape)} are not one pool")
    if req.table_width < 1:
        einval(f"table_width {req.table_width} < 1")
    return kp.shape + (vp.shape[3],)


def check_row(req, b, length, npages, page):
    """Row b's table entries covering positions 0..length-1 (SPEC clause 23)."""
    if length < 0:
        einval(f"row {b}: length {length} < 0")
    used = -(-length // page)
    if used > req.table_width:
        einval(f"row {b}: {length} keys need {used} pages, the table has {req.table_width}")


def check_pages(req, b, first, last, npages, page):
    """Entries of row b holding positions first..last-1 name pages of the pool."""
    for j in range(first // page, -(-last // page)):
        e = req.block_table[b][j]
        if not 0 <= e < npages:
            einval(f"row {b}: block_table[{j}] = {e} is outside the pool of {npages} pages")


class PagedAdapter:
    options = []

    def open(self, options):
        return ax.Identity(name="paged-test", version=f"paged_adapter 1 ({MODE})",
                           capabilities=["f32", "gqa", "dv_ne_d", "strided", "scale", "causal",
                                         "paged"])

    def sdpa(self, req):
        raise ax.Refusal(ax.ENOTSUP, "this test adapter serves paged calls only")

    def paged_append(self, req):
        log("paged_append", req)
        if {req.k.dtype, req.v.dtype, req.k_pages.dtype, req.v_pages.dtype} != {"f32"}:
            raise ax.Refusal(ax.EDTYPE, "k, v and the pool must all be f32")
        npages, hkv, page, d, dv = pool_shape(req)
        k, v = req.k.array, req.v.array
        if len(k.shape) != 4 or len(v.shape) != 4 or k.shape[:3] != v.shape[:3] or \
                k.shape[1] != hkv or k.shape[3] != d or v.shape[3] != dv:
            einval(f"k {list(k.shape)} / v {list(v.shape)} do not fit the pool")
        batch, s = k.shape[0], k.shape[2]
        new = req.new_lens if req.new_lens is not None else [s] * batch
        for b in range(batch):
            if not 0 <= new[b] <= s:
                einval(f"row {b}: new_lens {new[b]} outside 0..{s}")
            check_row(req, b, req.seq_lens[b], npages, page)
            check_row(req, b, req.seq_lens[b] + new[b], npages, page)
            check_pages(req, b, req.seq_lens[b], req.seq_lens[b] + new[b], npages, page)
        kp = np.array(req.k_pages.array)  # a writable copy: the library's pool
        vp = np.array(req.v_pages.array)
        for b in range(batch):
            table = req.block_table[0 if MODE == "row0" else b]
            for t in range(new[b]):
                p = req.seq_lens[b] + t
                pg, sl = table[p // page], p % page
                if not 0 <= pg < npages:
                    einval(f"row {b}: page {pg} outside the pool")
                kp[pg, :, sl, :] = k[b, :, t, :]
                vp[pg, :, sl, :] = v[b, :, t, :]
                if MODE == "stray" and sl + 1 < page:
                    kp[pg, :, sl + 1, :] = k[b, :, t, :]
        return kp, vp

    def paged_sdpa(self, req):
        log("paged_sdpa", req)
        if {req.q.dtype, req.k_pages.dtype, req.v_pages.dtype} != {"f32"}:
            raise ax.Refusal(ax.EDTYPE, "q and the pool must all be f32")
        npages, hkv, page, d, dv = pool_shape(req)
        q = np.asarray(req.q.array, np.float64)
        if len(q.shape) != 4 or q.shape[3] != d or q.shape[1] % hkv:
            einval(f"q {list(q.shape)} does not fit the pool (Hkv {hkv}, D {d})")
        batch, hq, lq = q.shape[:3]
        if req.window < 0 or (req.window and not req.causal):
            einval(f"window {req.window} needs causal and >= 0")
        if req.scale is not None and not (math.isfinite(req.scale) and abs(req.scale) <= FLT_MAX):
            einval(f"scale {req.scale} is not a finite f32")
        scale = 1 / math.sqrt(d) if req.scale is None else req.scale
        qlens = req.query_lens if req.query_lens is not None else [lq] * batch
        kp = np.asarray(req.k_pages.array, np.float64)
        vp = np.asarray(req.v_pages.array, np.float64)
        out = np.zeros((batch, hq, lq, dv))
        for b in range(batch):
            length, qb = req.seq_lens[b], qlens[b]
            check_row(req, b, length, npages, page)
            check_pages(req, b, 0, length, npages, page)
            if not 0 <= qb <= min(lq, length):
                einval(f"row {b}: query_lens {qb} outside 0..min(Lq, L_b)")
            n = -(-length // page)
            pages = req.block_table[b][:n]
            # (Hkv, n * P, D): the row's pages in order, then its first L_b slots
            keys = np.concatenate([kp[pg] for pg in pages], axis=1) if n else kp[:0, :, :0]
            vals = np.concatenate([vp[pg] for pg in pages], axis=1) if n else vp[:0, :, :0]
            seen = n * page if MODE == "last_full" else length
            for h in range(hq):
                g = h // (hq // hkv)
                for i in range(qb):
                    pos = length - qb + i
                    j = np.arange(seen)
                    keep = np.ones(seen, bool)
                    if req.causal:
                        keep &= j <= pos
                    if req.window:
                        keep &= j > pos - req.window
                    if not keep.any():
                        continue
                    s = keys[g, j[keep]] @ q[b, h, i] * scale
                    w = np.exp(s - s.max())
                    out[b, h, i] = w @ vals[g, j[keep]] / w.sum()
        return "f32", out.astype(np.float32)


if __name__ == "__main__":
    adapter = PagedAdapter()
    if MODE == "bad_writes":
        # A reply the harness must refuse: a page outside the pool, one k/v row for it.
        def bad(adapter_, header, tensors):
            kp, vp = tensors["k_pages"], tensors["v_pages"]
            row_k = np.zeros((1,) + (kp.shape[1], kp.shape[3]), np.float32)
            row_v = np.zeros((1,) + (vp.shape[1], vp.shape[3]), np.float32)
            return ({"writes": [[kp.shape[0], 0]]},
                    [("k_slots", "f32", row_k), ("v_slots", "f32", row_v)])
        ax._paged_append = bad
    ax.serve(adapter)
