#!/usr/bin/env python3
"""broadcast_adapter.py -- TEST-ONLY exec adapter on attnconf_exec.py (needs numpy), for K/V
broadcast with stride 0 (PROTOCOL.md "stride0.wire").

    attnconf run --backend 'exec:PYTHON broadcast_adapter.py MODE LOG' ...

f32 SDPA in numpy (float64, rounded once to f32), GQA included, no mask.  MODE (argv[1]):

  wire   lists stride0 and stride0.wire: stride-0 K/V arrive as they are
  dense  lists stride0 only: they arrive as dense copies

Every sdpa appends to LOG (argv[2]) one JSON object a line: for k and v, the strides sent (in
elements), how many elements the payload held, and the byte strides of Tensor.array, the view
an adapter hands its library.
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

MODE, LOG = sys.argv[1], sys.argv[2]


class BroadcastAdapter:
    options = []

    def open(self, options):
        caps = ["f32", "gqa", "strided", "stride0"] + (["stride0.wire"] if MODE == "wire" else [])
        return ax.Identity(name="broadcast", version=f"broadcast_adapter 1 ({MODE})",
                           capabilities=caps)

    def sdpa(self, req):
        if req.mask is not None or req.causal or {req.q.dtype, req.k.dtype, req.v.dtype} != {"f32"}:
            raise ax.Refusal(ax.ENOTSUP, "f32 q, k, v without a mask or causal only")
        with open(LOG, "a") as f:
            f.write(json.dumps({t.name: {"strides": list(t.strides), "held": int(t.storage.size),
                                         "view_strides": list(t.array.strides)}
                                for t in (req.k, req.v)}) + "\n")
        q, k, v = (np.asarray(t.array, np.float64) for t in (req.q, req.k, req.v))
        hq, hkv = q.shape[1], k.shape[1]
        k, v = np.repeat(k, hq // hkv, axis=1), np.repeat(v, hq // hkv, axis=1)
        scale = 1 / math.sqrt(q.shape[-1]) if req.scale is None else req.scale
        s = np.einsum("bhid,bhjd->bhij", q, k) * scale
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        out = np.einsum("bhij,bhjd->bhid", w, v) / w.sum(axis=-1, keepdims=True)
        return "f32", out.astype(np.float32)


if __name__ == "__main__":
    ax.serve(BroadcastAdapter())
