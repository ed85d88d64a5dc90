#!/usr/bin/env python3
"""attnconf exec adapter for JAX's ``jax.nn.dot_product_attention`` (exec protocol v1).

Run it through the harness:

    attnconf run --backend 'exec:/path/to/venv/bin/python3 conformance/adapters/jax_adapter.py' \
        --cases cases [--backend-option implementation=xla]

Self-contained: standard library + numpy + jax only (the repro op also imports
attnconf_repro.py, beside this file). JAX runs with its defaults (x64 disabled);
set JAX_PLATFORMS=cpu in the environment to keep it on the CPU.

How each case is posed, as a JAX user would write it:
  * q, k, v arrive as (B, H, L, D) views and are handed to JAX in its (B, L, H, D) layout
    (q.transpose(0, 2, 1, 3)); K and V keep Hkv heads, GQA is JAX's own (N a multiple of K).
  * a bool mask goes to ``mask=``, an additive (float) mask to ``bias=``, both unchanged in
    shape and dtype (JAX does the broadcasting and the dtype handling).
  * causal: ``is_causal=True``, the flag a JAX user sets for causal attention.  A plain causal
    case (bottom-right, SPEC clause 3) is always posed that way, Lq != Lk included: JAX keeps
    key j for query i iff j <= i (top-left), and a case where the two alignments differ is
    exactly what should show it.  An explicit offset can only be said when it is 0 (what
    is_causal means); any other explicit offset is answered ENOTSUP (-4).
  * scale: ``scale=None`` or the number as given.
  * the sdpa mask parameters (SPEC clause 19): ``lengths`` is ``key_value_seq_lengths`` (int32,
    one per batch row), ``window`` W is ``local_window_size=(W - 1, 0)`` (W keys counting the
    query itself, measured from JAX's own causal diagonal), both passed as given, invalid
    values included.  JAX has no left padding: ``sdpa.left_padding`` is not claimed.
  * build_mask is not offered: JAX has no public mask-builder.
  * repro (PROTOCOL.md): a reproducer script of one case (attnconf_repro.py builds the text),
    from the same plan() as the call.
Errors raised by JAX are mapped to status codes; nothing is validated ahead of JAX.
An sdpa reply reports, as "seconds", the time of the dot_product_attention call until its
result is ready (block_until_ready), the conversions to and from JAX arrays excluded: what
`attnconf bench` measures.
"""

import json
import os
import sys
import time
import traceback

sys.dont_write_bytecode = True  # attnconf_repro is imported from the checkout, never cached in it

PROTOCOL = 1
MAX_HEADER = 1 << 20

# Keep the protocol channel private: fd 1 is re-pointed at stderr so that anything printed by
# Python code or by XLA's C++ goes to stderr; replies are written to a duplicate of the
# original stdout.
_proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
os.dup2(2, 1)
sys.stdout = sys.stderr
_proto_in = sys.stdin.buffer

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # CPU unless the user says otherwise

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

EINVAL, EDTYPE, ENOMEM, ENOTSUP, EBACKEND = -1, -2, -3, -4, -5

_WIRE_DTYPES = {
    "f32": (np.dtype("<f4"), 4),
    "f16": (np.dtype("<f2"), 2),
    "bf16": (np.dtype(jnp.bfloat16), 2),
    "bool": (np.dtype("u1"), 1),
}
_NP_TO_WIRE = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(jnp.bfloat16): "bf16",
    np.dtype(np.bool_): "bool",
}

IMPLEMENTATIONS = ("xla", "cudnn")  # as documented by jax.nn.dot_product_attention


class ProtocolError(Exception):
    """The request breaks the protocol: the adapter gives up (exits non-zero)."""


class Reject(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _versions():
    import platform
    import jaxlib
    backend = jax.default_backend()
    return (f"jax {jax.__version__}, jaxlib {jaxlib.__version__}, numpy {np.__version__}, "
            f"python {platform.python_version()}, backend {backend} "
            f"({', '.join(str(d) for d in jax.devices())}), x64 "
            f"{'enabled' if jax.config.jax_enable_x64 else 'disabled'}")


# ---------------------------------------------------------------------------------------------
# framing

def _read_exact(n):
    chunks = []
    while n > 0:
        b = _proto_in.read(n)
        if not b:
            raise EOFError("stdin closed in the middle of a payload")
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_message():
    """Returns (header, {name: ndarray}) or None at end of input."""
    line = _proto_in.readline(MAX_HEADER + 1)
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise ProtocolError("request header longer than 1 MiB or not newline-terminated")
    header = json.loads(line.decode("utf-8"))
    if not isinstance(header, dict):
        raise ProtocolError("request header is not a JSON object")
    if header.get("protocol") != PROTOCOL:
        raise ProtocolError(f"unsupported protocol {header.get('protocol')!r} (this adapter speaks 1)")
    tensors = {}
    for desc in header.get("tensors") or []:
        name, dt = desc["name"], desc["dtype"]
        shape = [int(s) for s in desc["shape"]]
        if dt not in _WIRE_DTYPES:
            raise ProtocolError(f"tensor {name}: unknown dtype {dt!r}")
        npdt, size = _WIRE_DTYPES[dt]
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        nbytes = int(desc["nbytes"])
        if nbytes != numel * size:
            raise ProtocolError(f"tensor {name}: nbytes {nbytes} != {numel} x {size}")
        raw = _read_exact(nbytes)
        strides = desc.get("strides")
        if strides is None:
            strides = [int(np.prod(shape[d + 1:], dtype=np.int64)) for d in range(len(shape))]
        tensors[name] = (dt, decode(dt, shape, strides, raw), (tuple(shape), tuple(strides), raw))
    return header, tensors


def decode(dt, shape, strides, raw):
    """A received payload as a contiguous numpy array of its dtype (bf16 as jnp.bfloat16)."""
    npdt, _ = _WIRE_DTYPES[dt]
    flat = np.frombuffer(raw, dtype=npdt)
    if dt == "bool":
        flat = flat != 0  # one byte, any non-zero value is true
    numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if numel == 0:
        return np.zeros(shape, dtype=flat.dtype)
    arr = np.lib.stride_tricks.as_strided(
        flat, shape=shape, strides=[int(s) * flat.itemsize for s in strides])
    return np.ascontiguousarray(arr)


def to_jax(a):
    """(B, H, L, D) -> JAX's (B, L, H, D); unbatched rank-3 (H, L, D) -> JAX's (T, N, H)."""
    if a.ndim == 4:
        return a.transpose(0, 2, 1, 3)
    if a.ndim == 3:
        return a.transpose(1, 0, 2)
    return a


def from_jax(out):
    """JAX's output layout back to (B, H, L, D) (the inverse of to_jax)."""
    if out.ndim == 4:
        return out.transpose(0, 2, 1, 3)
    if out.ndim == 3:
        return out.transpose(1, 0, 2)
    return out


def write_message(header, tensors=()):
    header = dict(header)
    header["protocol"] = PROTOCOL
    payload = []
    if tensors:
        descs = []
        for name, arr in tensors:
            arr = np.ascontiguousarray(arr)
            wire = _NP_TO_WIRE[arr.dtype]
            if wire == "bool":
                arr = arr.astype(np.uint8)
            elif arr.dtype.byteorder == ">":
                arr = arr.astype(arr.dtype.newbyteorder("<"))
            data = arr.tobytes()
            descs.append({"name": name, "dtype": wire, "shape": list(arr.shape),
                          "nbytes": len(data)})
            payload.append(data)
        header["tensors"] = descs
    line = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"
    _proto_out.write(line + b"".join(payload))
    _proto_out.flush()


def reply_error(status, message):
    msg = " ".join(str(message).split()) or "error"
    write_message({"status": status, "error": msg[:4000]})


# ---------------------------------------------------------------------------------------------
# operations

class Adapter:
    def __init__(self):
        self.implementation = None

    def hello(self, header):
        options = header.get("options") or {}
        impl = None
        device = "cpu"
        for key, value in options.items():
            if key == "implementation":
                if value not in IMPLEMENTATIONS:
                    raise Reject(EINVAL, f"option implementation={value!r} not accepted: "
                                 f"expected one of {', '.join(IMPLEMENTATIONS)}")
                impl = value
                # A valid value this machine cannot serve is refused now (status -4), not
                # turned into an ERROR in every case: cuDNN needs a CUDA device.
                if impl == "cudnn" and jax.default_backend() != "gpu":
                    raise Reject(ENOTSUP, "option implementation=cudnn: no CUDA device "
                                 f"(jax backend {jax.default_backend()})")
            elif key == "device":
                # JAX picks its platform at import (JAX_PLATFORMS, "cpu" unless set): the option
                # only checks that the run is where it says, so a GPU run cannot silently be a
                # CPU one.  tools/device-check sets JAX_PLATFORMS=cuda.
                if value not in ("cpu", "gpu"):
                    raise Reject(EINVAL, f"option device={value!r}: expected cpu or gpu")
                if jax.default_backend() != value:
                    raise Reject(ENOTSUP, f"option device={value}: jax runs on "
                                 f"{jax.default_backend()} (set JAX_PLATFORMS=cuda for the GPU)")
                device = value
            else:
                raise Reject(EINVAL, f"unknown option {key!r} (this adapter knows: "
                             "implementation, device)")
        self.implementation = impl
        write_message({
            "status": 0,
            # Another implementation is another thing under test: its own name (and its own
            # expected-results file).
            "name": ("jax" if impl is None else f"jax-{impl}")
                    + ("-gpu" if device == "gpu" else ""),
            "version": _versions(),
            "capabilities": ["f32", "f16", "bf16", "mask.bool", "mask.additive",
                             "mask.broadcast", "causal", "causal.offset", "gqa", "strided",
                             "scale", "sdpa.window", "sdpa.lengths"],
            "options": [{"key": "implementation", "default": None,
                         "help": "jax.nn.dot_product_attention implementation=: xla or cudnn; "
                                 "absent = None (JAX's default, currently xla)"},
                        {"key": "device", "default": "cpu",
                         "help": "cpu or gpu: where the run must be (JAX_PLATFORMS chooses it; "
                                 "gpu is refused unless jax runs there)"}],
        })

    def plan(self, header, tensors):
        """The keyword arguments of the dot_product_attention call, each as (value, source):
        the value sdpa() passes and the expression a reproducer writes for it.  One set of
        decisions for both, so the reproducer calls JAX exactly as the run did."""
        for need in ("q", "k", "v"):
            if need not in tensors:
                raise ProtocolError(f"sdpa request without tensor {need}")
        kwargs = {"implementation": (self.implementation, repr(self.implementation))}
        scale = header.get("scale")
        if scale is not None:
            kwargs["scale"] = (float(scale), repr(float(scale)))
        if tensors.get("mask") is not None:
            mdt, m = tensors["mask"][:2]
            # a bool mask goes to mask=, a float one to bias=
            kwargs["mask" if mdt == "bool" else "bias"] = (
                jnp.asarray(m), "jnp.asarray(decode_input(INPUTS['mask']))")
        if header.get("lengths") is not None:
            lengths = header["lengths"]
            kwargs["key_value_seq_lengths"] = (jnp.asarray(lengths, dtype=jnp.int32),
                                               f"jnp.asarray({lengths!r}, dtype=jnp.int32)")
        if header.get("window"):
            w = (int(header["window"]) - 1, 0)
            kwargs["local_window_size"] = (w, repr(w))
        if header.get("causal"):
            off = header.get("causal_offset")
            # jax.nn.dot_product_attention(is_causal=True) keeps j <= i (top-left): that is
            # the explicit offset 0, and what a JAX user gets when asking for causal.
            if off is not None and off != 0:
                raise Reject(ENOTSUP, f"explicit causal offset {off}: jax's is_causal has "
                             "no offset (it is top-left, offset 0)")
            kwargs["is_causal"] = (True, "True")
        return kwargs

    def sdpa(self, header, tensors):
        kwargs = {key: value for key, (value, _) in self.plan(header, tensors).items()}
        q, k, v = (tensors[n][1] for n in ("q", "k", "v"))
        try:
            jq, jk, jv = (jax.block_until_ready(jnp.asarray(to_jax(a))) for a in (q, k, v))
            # The reply's "seconds" (PROTOCOL.md; what `attnconf bench` times): the call and
            # its completion (JAX dispatches asynchronously), not the conversions around it.
            t0 = time.perf_counter()
            out = jax.block_until_ready(jax.nn.dot_product_attention(jq, jk, jv, **kwargs))
            seconds = time.perf_counter() - t0
            out = np.asarray(out)
        except Exception as e:  # noqa: BLE001 - every JAX failure becomes a status code
            raise Reject(map_exception(e), describe_exception(e)) from e

        out = from_jax(out)
        if out.dtype not in _NP_TO_WIRE or out.dtype == np.bool_:
            raise Reject(EBACKEND, f"jax produced dtype {out.dtype}, which the protocol cannot carry")
        write_message({"status": 0, "seconds": seconds}, [("out", out)])

    def repro(self, header, tensors):
        """PROTOCOL.md "repro": a reproducer of the case, from the same plan, decode, to_jax
        and from_jax as sdpa()."""
        import inspect
        import attnconf_repro as repro_text
        call = ", ".join(["q, k, v"] + [f"{key}={src}" for key, (_, src)
                                         in self.plan(header, tensors).items()])
        setup = "\n".join([
            "import os",
            "os.environ.setdefault('JAX_PLATFORMS', 'cpu')  # as attnconf ran it",
            "import jax",
            "import jax.numpy as jnp",
            "",
            "_WIRE_DTYPES = {'f32': (np.dtype('<f4'), 4), 'f16': (np.dtype('<f2'), 2),",
            "                'bf16': (np.dtype(jnp.bfloat16), 2), 'bool': (np.dtype('u1'), 1)}",
            "_NP_TO_WIRE = {np.dtype(np.float32): 'f32', np.dtype(np.float16): 'f16',",
            "               np.dtype(jnp.bfloat16): 'bf16'}",
            "",
            "",
            inspect.getsource(decode),
            "",
            "def decode_input(t):",
            "    return decode(t.dtype, list(t.shape), list(t.strides), t.storage.tobytes())",
            "",
            "",
            inspect.getsource(to_jax),
            "",
            inspect.getsource(from_jax),
        ])
        body = "\n".join([
            "q, k, v = (jnp.asarray(to_jax(decode_input(INPUTS[n]))) for n in ('q', 'k', 'v'))",
            f"out = jax.nn.dot_product_attention({call})",
            "out = from_jax(np.asarray(jax.block_until_ready(out)))",
            "print(f'jax {jax.__version__}, backend {jax.default_backend()}')",
            "return out.astype(np.float64), _NP_TO_WIRE.get(out.dtype, str(out.dtype))",
        ])
        how = ("q, k, v: numpy arrays of the case's dtype (bf16 as jnp.bfloat16), transposed from "
               "(B, H, L, D) to JAX's\n(B, L, H, D) (to_jax) and the output back (from_jax); "
               f"then\njax.nn.dot_product_attention({call}).")
        lib = repro_text.Library(
            requires=f"jax=={jax.__version__} jaxlib=={__import__('jaxlib').__version__} numpy",
            versions=_versions(), posed=how, setup=setup, call=body)
        inputs = {n: repro_text.Input(n, t[0], *t[2]) for n, t in tensors.items()}
        name = "jax" if self.implementation is None else f"jax-{self.implementation}"
        text = repro_text.script(header, inputs, name, lib)
        if len(json.dumps(text)) + 64 > MAX_HEADER:
            raise Reject(ENOTSUP, f"the reproducer takes {len(json.dumps(text))} bytes: more "
                         "than the 1 MiB a reply header holds")
        write_message({"status": 0, "language": "python", "script": text})


def describe_exception(e):
    text = f"{type(e).__name__}: {e}"
    if not str(e):  # a bare `assert` inside JAX: say where it fired
        tb = traceback.extract_tb(e.__traceback__)
        if tb:
            f = tb[-1]
            text += f"(at {os.path.basename(f.filename)}:{f.lineno} `{f.line}`)"
    return text


def map_exception(e):
    text = f"{type(e).__name__}: {e}"
    if isinstance(e, MemoryError) or "RESOURCE_EXHAUSTED" in text or "out of memory" in text.lower():
        return ENOMEM
    if isinstance(e, NotImplementedError):
        return ENOTSUP
    if isinstance(e, (ValueError, TypeError)):
        # JAX's argument checks: "<x> dtype should be ..." is a dtype rejection; shape, rank,
        # head-count and broadcast errors are ValueError/TypeError too.
        if "dtype" in str(e):
            return EDTYPE
        return EINVAL
    return EBACKEND


def main():
    adapter = Adapter()
    while True:
        try:
            msg = read_message()
        except (ProtocolError, ValueError, KeyError, TypeError, EOFError) as e:
            # A request we cannot frame: its payload length is unknown, so no reply can be
            # trusted.  Say why on stderr (the harness quotes the last line) and stop.
            print(f"jax_adapter: bad request: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
        if msg is None:
            return 0
        header, tensors = msg
        op = header.get("op")
        try:
            if op == "hello":
                adapter.hello(header)
            elif op == "sdpa":
                adapter.sdpa(header, tensors)
            elif op == "repro":
                adapter.repro(header, tensors)
            elif op == "close":
                return 0
            else:
                raise Reject(EINVAL, f"unknown op {op!r}")
        except Reject as r:
            reply_error(r.status, str(r))
        except ProtocolError as e:
            print(f"jax_adapter: bad request: {e}", file=sys.stderr)
            return 2
        except Exception as e:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            reply_error(EBACKEND, f"adapter failure: {type(e).__name__}: {e}")


if __name__ == "__main__":
    sys.exit(main())
