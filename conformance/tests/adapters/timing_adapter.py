#!/usr/bin/env python3
"""timing_adapter.py -- TEST-ONLY exec adapter on attnconf_exec.py (needs numpy), for the
"seconds" an sdpa reply reports (PROTOCOL.md) and `attnconf bench` times.

    attnconf bench --backend 'exec:PYTHON timing_adapter.py MODE' ...

f32 SDPA in numpy (float64, rounded once to f32): causal with or without an offset, GQA,
Dv != D, an explicit scale.  Every sdpa request first sleeps PAUSE_S (0.05 s): work the adapter
does outside its "library call".  MODE (argv[1]):

  helper   the call is wrapped in attnconf_exec.timed: the reply reports its time alone, so
           it stays well under PAUSE_S
  default  nothing is wrapped: the framework reports the time of the whole sdpa handler, the
           pause included, so never under PAUSE_S
"""

import math
import os
import sys
import time

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "adapters"))
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel

import numpy as np  # noqa: E402

MODE = sys.argv[1] if len(sys.argv) > 1 else "helper"
PAUSE_S = 0.05


def attention(q, k, v, causal, offset, scale):
    """softmax(scale q k^T, causal rows bottom-right unless offset is given) v, in float64."""
    b, hq, lq, d = q.shape
    hkv, lk = k.shape[1], k.shape[2]
    k = np.repeat(k, hq // hkv, axis=1)  # query head h uses kv head h // (Hq / Hkv)
    v = np.repeat(v, hq // hkv, axis=1)
    s = np.einsum("bhid,bhjd->bhij", q, k) * (1 / math.sqrt(d) if scale is None else scale)
    if causal:
        off = lk - lq if offset is None else offset
        keep = np.arange(lk)[None, :] <= off + np.arange(lq)[:, None]
        s = np.where(keep, s, -np.inf)
    m = s.max(axis=-1, keepdims=True)
    w = np.exp(s - np.where(np.isfinite(m), m, 0))  # a row that keeps nothing: all 0
    total = w.sum(axis=-1, keepdims=True)
    return np.einsum("bhij,bhjd->bhid", w, v) / np.where(total > 0, total, 1)


class TimingAdapter:
    options = []

    def open(self, options):
        if MODE not in ("helper", "default"):
            raise ax.Refusal(ax.EINVAL, f"mode {MODE!r}: expected helper or default")
        return ax.Identity(name=f"timing-{MODE}", version=f"timing_adapter 1 ({MODE})",
                           capabilities=["f32", "causal", "causal.offset", "gqa", "dv_ne_d",
                                         "scale"])

    def sdpa(self, req):
        if req.mask is not None or {req.q.dtype, req.k.dtype, req.v.dtype} != {"f32"}:
            raise ax.Refusal(ax.ENOTSUP, "f32 q, k, v without a mask only")
        time.sleep(PAUSE_S)  # the adapter's own work, outside the library call
        q, k, v = (np.asarray(t.array, np.float64) for t in (req.q, req.k, req.v))
        args = (q, k, v, req.causal, req.causal_offset, req.scale)
        out = ax.timed(attention, *args) if MODE == "helper" else attention(*args)
        return "f32", out.astype(np.float32)


if __name__ == "__main__":
    ax.serve(TimingAdapter())
