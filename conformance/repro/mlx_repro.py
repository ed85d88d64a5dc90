"""attnconf repro writer for the MLX plugins (conformance/backends/mlx/mlx_backend.cpp).

A C++ plugin cannot answer the exec protocol's repro request (PROTOCOL.md "repro"), so this
program answers it for the plugins `mlx` and `mlx-ops` (the request's "backend" member says
which): it speaks hello + repro over attnconf_exec and writes a Python script that poses the
case to MLX through mlx.core the way the plugin poses it through the C++ API.  It needs no MLX
itself: only the text is written (numpy, for the embedded inputs).

Each part of the script mirrors one function of mlx_backend.cpp:
  to_mx           mb_from_host + mb_dense: a dense MLX array of the buffer's physical order
                  (f16 / bf16 as uint16 bit patterns, then a view; bool as uint8 != 0), then
                  transpose to the logical axes and broadcast_to for stride-0 axes;
  the scale       mb_sdpa_impl: 1.0f / sqrtf((float)D) in float32, or the explicit scale
                  rounded to float32 (the C++ API takes a float);
  mlx             mb_compute, fused: mx.fast.scaled_dot_product_attention with mask "causal",
                  an array mask or none, on the plugin's device;
  mlx-ops         mb_compute, primitives (MLX's own test reference): repeat K/V over heads for
                  GQA, (q * scale) @ k^T, causal / bool mask by where(.., finfo(f32).min),
                  an additive mask added, softmax in float32 cast back, @ v;
  the output      mx.contiguous then eval; its dtype as MLX produced it.
Not reproduced (answered -4): an explicit causal offset (the plugin answers -4 itself), and a
causal flag with an array mask: the plugin hands both to the C++ API (mlx) or refuses them
itself (mlx-ops), and Python's single `mask=` argument has no way to say both.

Run by `attnconf repro --backend mlx ...` (conformance/repro/writers.tsv), or directly:
    attnconf repro --backend mlx --writer 'exec:python3 conformance/repro/mlx_repro.py' --case ID
"""

import os
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "adapters"))
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel
import attnconf_repro as repro_text  # noqa: E402

PLUGINS = ("mlx", "mlx-ops")

# to_mx: mb_from_host and mb_dense of mlx_backend.cpp, in Python.
TO_MX = '''
def to_mx(t):
    """The tensor as the plugin builds it (mb_from_host): a dense MLX array of the buffer's
    physical axis order, in the case's dtype (mb_dense), then transpose to the logical axes and
    broadcast_to over stride-0 axes, so MLX sees the same non-contiguous view."""
    shape, strides = list(t.shape), list(t.strides)
    if 0 in shape:
        return mx.zeros(shape, {"f32": mx.float32, "f16": mx.float16, "bf16": mx.bfloat16,
                                "bool": mx.bool_}[t.dtype])
    real = sorted((d for d in range(len(shape)) if shape[d] > 1 and strides[d] > 0),
                  key=lambda d: -strides[d])
    bcast = any(shape[d] > 1 and strides[d] == 0 for d in range(len(shape)))
    order = real + [d for d in range(len(shape)) if d not in real]
    buf_shape = [shape[d] if i < len(real) else 1 for i, d in enumerate(order)]
    dense = np.asarray(t.storage[:int(np.prod(buf_shape))]).reshape(buf_shape)
    if t.dtype == "f32":
        a = mx.array(dense)
    elif t.dtype in ("f16", "bf16"):
        a = mx.array(dense).view(mx.float16 if t.dtype == "f16" else mx.bfloat16)
    else:
        a = mx.not_equal(mx.array(dense), mx.array(0, mx.uint8))
    axes = [order.index(d) for d in range(len(shape))]
    if axes != list(range(len(shape))):
        a = mx.transpose(a, axes)
    if bcast:
        a = mx.broadcast_to(a, shape)
    return a
'''

# mb_compute of mlx-ops, in Python.
PRIMITIVES = '''
def primitives(q, k, v, mask, causal, scale):
    """mlx-ops's mb_compute: MLX's own primitive reference of its fused SDPA."""
    n_repeats = q.shape[-3] // k.shape[-3] if k.shape[-3] > 0 else 1
    if n_repeats > 1:
        k = mx.repeat(k, n_repeats, axis=1)
        v = mx.repeat(v, n_repeats, axis=1)
    p = mx.matmul(mx.multiply(q, mx.array(scale, q.dtype)), mx.transpose(k, (0, 1, 3, 2)))
    lowest = mx.array(mx.finfo(mx.float32).min, p.dtype)
    if causal:
        lq, lk = q.shape[2], k.shape[2]
        offset = lk - lq  # bottom-right
        qi = mx.expand_dims(mx.arange(offset, offset + lq), 1)
        ki = mx.expand_dims(mx.arange(0, lk), 0)
        p = mx.where(mx.greater_equal(qi, ki), p, lowest)
    elif mask is not None:
        p = mx.where(mask, p, lowest) if mask.dtype == mx.bool_ else mx.add(p, mask)
    scores = mx.softmax(p.astype(mx.float32), axis=-1).astype(p.dtype)
    return mx.matmul(scores, v)
'''


class MlxReproWriter(ax.ReproWriter):
    plugins = PLUGINS
    options = [ax.Option("device", "cpu", "the plugin's device option: cpu or gpu")]

    def open(self, options):
        if options["device"] not in ("cpu", "gpu"):
            raise ax.Refusal(ax.EINVAL, f"device={options['device']}: accepted values are cpu "
                             "and gpu")
        self.device = options["device"]
        # mb_capabilities
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "causal", "gqa", "dv_ne_d",
                "strided", "scale", "mask.broadcast"]
        return ax.Identity("mlx-repro", "attnconf repro writer for the mlx plugins", caps)

    def repro(self, req: ax.SdpaRequest, header: dict):
        plugin, version = self.plugin_of(header)
        if req.causal and req.causal_offset is not None:  # mb_sdpa_impl
            raise ax.Refusal(ax.ENOTSUP, "sdpa: an explicit causal offset is not expressible "
                             "through MLX's API (mask \"causal\" is always bottom-right)")
        if req.causal and req.mask is not None:
            what = ("the plugin passes both to the C++ API" if plugin == "mlx" else
                    "the plugin refuses them itself")
            raise ax.Refusal(ax.ENOTSUP, f"a causal flag with an array mask: {what}; Python's "
                             "single mask= argument cannot say both")
        # mb_sdpa_impl's scale, rounded to float32 as static_cast<float> does
        if req.scale is None:
            scale = "float(np.float32(1.0) / np.sqrt(np.float32(q.shape[-1])))"
            said = "1/sqrt(D) in float32"
        else:
            scale = f"float(np.float32({req.scale!r}))"
            said = "the scale rounded to float32"
        mask = "to_mx(INPUTS['mask'])" if req.mask is not None else "None"
        if plugin == "mlx":
            fused_mask = "'causal'" if req.causal else mask
            call = f"mx.fast.scaled_dot_product_attention(q, k, v, scale=scale, mask={fused_mask})"
            how = (f"{call} (the fused op, as\nmlx_backend.cpp calls mlx::core::fast::"
                   "scaled_dot_product_attention)")
        else:
            call = f"primitives(q, k, v, {mask}, {req.causal!r}, scale)"
            how = (f"{call}: MLX primitives as\nmlx_backend.cpp's mlx-ops builds them (MLX's own "
                   "test reference of the fused op)")
        setup = "\n".join([
            "import mlx.core as mx",
            "",
            f"mx.set_default_device(mx.{self.device})  # the plugin's device option",
            "WIRE = {mx.float32: 'f32', mx.float16: 'f16', mx.bfloat16: 'bf16'}",
            "",
            TO_MX,
            PRIMITIVES if plugin == "mlx-ops" else "",
        ])
        body = "\n".join([
            "q, k, v = to_mx(INPUTS['q']), to_mx(INPUTS['k']), to_mx(INPUTS['v'])",
            f"scale = {scale}",
            f"out = mx.contiguous({call})",
            "mx.eval(out)",
            "print(f'mlx {mx.__version__}, device {mx.default_device()}')",
            "return np.array(out.astype(mx.float32)).astype(np.float64), "
            "WIRE.get(out.dtype, str(out.dtype))",
        ])
        posed = ("q, k, v (and the mask): MLX arrays built as the plugin builds them (to_mx, "
                 "mirroring mb_from_host),\nstrided views included; scale: " + said +
                 f"; then\n{how}; on MLX's {self.device} device.")
        version = version or "mlx"
        lib = repro_text.Library(
            requires=f"mlx=={version.split()[-1]} numpy" if version.startswith("mlx ") else
            "mlx numpy", versions=f"{version} (attnconf plugin {plugin}, device {self.device})",
            posed=posed, setup=setup, call=body)
        return repro_text.script(header, repro_text.inputs(req), plugin, lib), "python"


if __name__ == "__main__":
    ax.serve(MlxReproWriter())
