"""attnconf exec adapter: mlx-lm's attention, called the way mlx-lm models call it.

What it validates: `mlx_lm.models.base.scaled_dot_product_attention` (which, without a
quantized cache, is `mx.fast.scaled_dot_product_attention`) and the batched mask builder
`mlx_lm.models.base.create_causal_mask`, on MLX's CPU device by default.

How cases are posed:
  * q, k, v become MLX arrays of the case's dtype (bf16 built bit-exactly from its bit
    patterns); a non-contiguous case stays a strided MLX view of the received buffer, as the
    reshape + transpose in mlx-lm's attention layers produce.
  * causal is mask="causal", the string mlx-lm's create_attention_mask returns (bottom-right
    in MLX).  An explicit offset other than Lk - Lq has no spelling in that API: ENOTSUP.  So
    has a causal flag together with a mask tensor (the API takes one `mask`): ENOTSUP.
  * bool and additive masks are passed unchanged as MLX arrays of their own dtype and shape:
    MLX does the broadcasting and the dtype check.
  * no scale: D**-0.5, the `self.scale = head_dim**-0.5` every mlx-lm attention layer passes
    (MLX itself has no default).
  * sinks (sdpa.sinks, SPEC clause 22): the function's own `sinks` argument, an MLX array of
    Hq values in q's dtype (a model's sinks are a weight of its dtype, as gpt-oss's; MLX
    refuses sinks that do not promote to the output type), passed on to
    mx.fast.scaled_dot_product_attention.  mlx-lm has no argument for the other terms
    (softcap, ALiBi, chunk, documents, blocks: its models build those in their own code or
    masks), so they are not claimed.
  * the output dtype is whatever MLX returned.
  * build_mask: create_causal_mask(lq, offset, window_size, right_padding = offset + lq -
    lengths, left_padding), the form mlx-lm's batched caches use.
  * the KV cache operations: mlx-lm's own cache objects (mlx_lm_cache.py).
  * repro (PROTOCOL.md): a reproducer script of one sdpa case, from the same plan() as the call.
Nothing is validated ahead of MLX: its ValueErrors are mapped to statuses (refusal_of).
An sdpa reply's "seconds" (what `attnconf bench` times) is attnconf_exec's default: the whole
sdpa handler, the conversions to and from MLX arrays included (mx.eval runs inside it).

Run (from the repository root, with a Python that has mlx and mlx-lm installed):

    attnconf run --backend 'exec:python3 conformance/adapters/mlx_lm_adapter.py' --cases cases
    ... --backend-option device=gpu     # MLX's GPU, where this MLX build has one
"""

import inspect
import re
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import attnconf_repro as repro_text  # noqa: E402
import mlx.core as mx
import mlx_lm
import numpy as np
from mlx_lm.models.base import create_causal_mask, scaled_dot_product_attention
from mlx_lm_cache import CacheOps  # the cache_* requests (mlx-lm's own cache objects)

DEVICES = {"cpu": mx.cpu, "gpu": mx.gpu}


def to_mx(t: ax.Tensor) -> mx.array:
    """The received tensor as an MLX array of its own dtype and strides."""
    flat = mx.array(t.storage)
    if t.dtype == "bf16":
        flat = flat.view(mx.bfloat16)
    elif t.dtype == "bool":
        flat = flat != 0  # the protocol's bool: any nonzero byte is true
    return mx.as_strided(flat, t.shape, t.strides)


def from_mx(a: mx.array):
    if a.dtype == mx.bfloat16:
        return "bf16", np.array(a.view(mx.uint16))
    if a.dtype in (mx.float32, mx.float16):
        return ("f32" if a.dtype == mx.float32 else "f16"), np.array(a)
    raise TypeError(f"MLX returned {a.dtype}, which the protocol cannot carry")


class MlxLmAdapter(CacheOps):
    options = [ax.Option("device", "cpu", "MLX device: cpu or gpu")]
    to_mx = staticmethod(to_mx)

    def open(self, options):
        device = options["device"]
        if device not in DEVICES:
            raise ax.Refusal(ax.EINVAL, f"option device={device!r}: expected cpu or gpu")
        if not mx.is_available(DEVICES[device]):
            raise ax.Refusal(ax.ENOTSUP, f"device={device}: this MLX build has no {device} device")
        mx.set_default_device(DEVICES[device])
        self.device = device
        self.name = "mlx-lm" if device == "cpu" else f"mlx-lm-{device}"
        self.version = f"mlx-lm {mlx_lm.__version__}, mlx {mx.__version__}, device {device}"
        return ax.Identity(
            name=self.name,
            version=self.version,
            capabilities=["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast",
                          "causal", "gqa", "dv_ne_d", "strided", "scale", "build_mask", "window",
                          "lengths", "left_padding", "sdpa.sinks"] + self.CACHE_CAPABILITIES)

    def plan(self, req: ax.SdpaRequest) -> dict:
        """The keyword arguments of the scaled_dot_product_attention call, each as (value,
        source): the value sdpa() passes and the expression a reproducer writes for it.  One
        set of decisions for both, so the reproducer calls mlx-lm exactly as the run did."""
        if req.causal:
            lq, lk = req.q.shape[-2], req.k.shape[-2]
            if req.causal_offset not in (None, lk - lq):
                raise ax.Refusal(ax.ENOTSUP, f"causal offset {req.causal_offset} != Lk - Lq: "
                                 "mlx-lm's mask='causal' is always bottom-right")
            if req.mask is not None:
                raise ax.Refusal(ax.ENOTSUP, "mlx-lm takes one mask: 'causal' or an array, "
                                 "not both")
            mask = ("causal", "'causal'")
        elif req.mask is None:
            mask = (None, "None")
        else:
            mask = (to_mx(req.mask), "to_mx(INPUTS['mask'])")
        scale = req.q.shape[-1] ** -0.5 if req.scale is None else req.scale
        plan = {"cache": (None, "None"), "scale": (scale, repr(scale)), "mask": mask}
        if req.sinks is not None:
            src = "[" + ", ".join(f"float({str(x)!r})" if not np.isfinite(x) else repr(x)
                                  for x in req.sinks) + "]"
            dt = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}.get(req.q.dtype,
                                                                              "float32")
            plan["sinks"] = (mx.array(req.sinks, dtype=mx.float32).astype(getattr(mx, dt)),
                             f"mx.array({src}, dtype=mx.float32).astype(mx.{dt})")
        return plan

    def sdpa(self, req: ax.SdpaRequest):
        kwargs = {key: value for key, (value, _) in self.plan(req).items()}
        out = scaled_dot_product_attention(to_mx(req.q), to_mx(req.k), to_mx(req.v), **kwargs)
        mx.eval(out)
        return from_mx(out)

    def repro(self, req: ax.SdpaRequest, header: dict):
        """PROTOCOL.md "repro": a reproducer of the case, from the same plan and to_mx as
        sdpa() (an sdpa case only: the cache cases are not reproduced)."""
        call = ", ".join(["q, k, v"] + [f"{key}={src}" for key, (_, src) in self.plan(req).items()])
        setup = "\n".join([
            "import mlx.core as mx",
            "import mlx_lm",
            "from mlx_lm.models.base import scaled_dot_product_attention",
            "",
            f"mx.set_default_device(mx.{self.device})",
            "WIRE = {mx.float32: 'f32', mx.float16: 'f16', mx.bfloat16: 'bf16'}",
            "",
            "",
            inspect.getsource(to_mx),
        ])
        body = "\n".join([
            "q, k, v = to_mx(INPUTS['q']), to_mx(INPUTS['k']), to_mx(INPUTS['v'])",
            f"out = scaled_dot_product_attention({call})",
            "mx.eval(out)",
            "print(f'mlx-lm {mlx_lm.__version__}, mlx {mx.__version__}, device {mx.default_device()}')",
            "return np.array(out.astype(mx.float32)).astype(np.float64), "
            "WIRE.get(out.dtype, str(out.dtype))",
        ])
        how = ("q, k, v: MLX arrays of the case's dtype over the embedded buffers, with the "
               "strides attnconf passed\n(mx.as_strided; bf16 from its bit patterns); then "
               f"mlx_lm.models.base.scaled_dot_product_attention({call})\non MLX's "
               f"{self.device} device (without a quantized cache: mx.fast.scaled_dot_product_attention).")
        lib = repro_text.Library(
            requires=f"mlx-lm=={mlx_lm.__version__} mlx=={mx.__version__} numpy",
            versions=self.version, posed=how, setup=setup, call=body)
        return repro_text.script(header, repro_text.inputs(req), self.name, lib), "python"

    def build_mask(self, req: ax.MaskRequest):
        right = None if req.lengths is None else mx.array(
            [req.offset + req.lq - n for n in req.lengths])
        left = None if req.left_padding is None else mx.array(req.left_padding)
        keep = create_causal_mask(req.lq, req.offset, window_size=req.window or None,
                                  right_padding=right, left_padding=left)
        if keep.ndim == 2:  # no per-sequence arguments: one (Lq, offset + Lq) plane
            keep = keep.reshape(1, 1, *keep.shape)
        return np.array(keep)

    @staticmethod
    def refusal_of(exc):
        # MLX reports every argument check as a ValueError; the dtype ones say so.
        if isinstance(exc, ValueError):
            dtype = re.search(r"must promote|unsupported type", str(exc), re.IGNORECASE)
            return ax.Refusal(ax.EDTYPE if dtype else ax.EINVAL, f"mlx: {exc}")
        return None


if __name__ == "__main__":
    ax.serve(MlxLmAdapter())
