"""attnconf exec adapter: the ONNX `Attention` operator (ai.onnx opset 23 or 24) in onnxruntime.

What it validates: onnxruntime's CPUExecutionProvider running a one-node ONNX model built with
the `onnx` package and checked by `onnx.checker` (full check, i.e. ONNX's own type and shape
inference).  Whatever ORT picks to run the node is what is tested: its Attention kernel, or,
for type combinations that kernel does not register, ORT's expansion of the ONNX function body.

How cases are posed, as an ONNX user would:
  * q, k, v are the 4-D (B, H, L, D) inputs Q, K, V; GQA follows from the head counts.
  * an explicit scale is the `scale` attribute (a float32 attribute: ONNX rounds it); with
    none the attribute is omitted and ONNX's default 1/sqrt(D) applies.
  * soft-capping (sdpa.softcap, SPEC clause 20) is the `softcap` attribute, which ONNX applies
    to the scaled Q.K^T before the mask is added, as SPEC orders it; passed as given (no
    check ahead of ONNX).  ALiBi, sinks, chunks, documents and blocks have no Attention-23/24
    spelling and are not claimed.
  * causal is is_causal=1.  With Lk > Lq (a KV cache: offset Lk - Lq) the first Lk - Lq keys
    and values go in past_key / past_value and the last Lq in K / V (with present_key /
    present_value declared as outputs); with Lk == Lq there is no past.  Lq > Lk, or an
    explicit offset other than Lk - Lq, has no spelling in ONNX: ENOTSUP.  A mask tensor
    together with causal is passed as both (ONNX allows it).
  * a mask is `attn_mask` in the case's own dtype and shape (the model declares that element
    type); whatever ONNX's checker or ORT refuses is mapped to a status, nothing is checked
    ahead of them.
  * bf16 is not claimed: ORT's CPU provider has no bf16 Attention (ORT says NOT_IMPLEMENTED).
  * the output dtype is the one ORT returned.
  * build_mask runs ONNX's own masking: q = 0 and k = 0 make every score equal and v = the
    (Lk x Lk) identity, so each output row is the softmax weights (1/count on kept keys, 0 on
    masked ones) and keep = weights > 0.  The causal offset is `offset` past keys as above;
    lengths are nonpad_kv_seqlen (opset 24 only); window and left padding have no ONNX
    spelling in these opsets: ENOTSUP.
  * the sdpa parameter `lengths` (sdpa.lengths, opset 24 only) is nonpad_kv_seqlen, passed as
    given: ONNX aligns a causal diagonal to each sequence's end, which SPEC clause 19 does not,
    and the runs record where that shows.  The sdpa window and left padding are not claimed.  A row whose weights are NaN (a fully masked row gone
    NaN) has no readable keep mask: EBACKEND naming the row.
  * repro (PROTOCOL.md): a reproducer script of one case, from the same functions as the call.
Models are built in memory and cached by signature for the run.  An sdpa reply reports the
time of `InferenceSession.run` alone (attnconf_exec.timed): what `attnconf bench` measures.

Run (from the repository root, with a Python that has onnx and onnxruntime installed):

    attnconf run --backend 'exec:python3 conformance/adapters/onnxruntime_adapter.py' --cases cases
    ... --backend-option opset=24       # Attention-24 (adds nonpad_kv_seqlen: lengths)
"""

import inspect
import re
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import attnconf_repro as repro_text  # noqa: E402
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from onnxruntime.capi import onnxruntime_pybind11_state as ORT_ERRORS

ONNX_TYPE = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16,
             "bf16": TensorProto.BFLOAT16, "bool": TensorProto.BOOL}
WIRE_DTYPE = {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}
NODE_INPUTS = ("Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen")


def feed(t: ax.Tensor):
    """A received tensor as an ORT input of its own element type and shape (dense: ONNX has no
    strides; np.ascontiguousarray would make a 0-d mask 1-d)."""
    a = np.asarray(t.array, order="C")
    if t.dtype == "bf16":  # numpy has no bfloat16: hand ORT the bit patterns, typed
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(a, TensorProto.BFLOAT16)
    return a


def sdpa_feeds(q, k, v, mask, lengths):
    """The Attention node's inputs for an sdpa call: Q, K, V (+ attn_mask, nonpad_kv_seqlen)
    and their ONNX element types."""
    feeds = {"Q": feed(q), "K": feed(k), "V": feed(v)}
    types = {"Q": ONNX_TYPE[q.dtype], "K": ONNX_TYPE[k.dtype], "V": ONNX_TYPE[v.dtype]}
    if mask is not None:
        feeds["attn_mask"], types["attn_mask"] = feed(mask), ONNX_TYPE[mask.dtype]
    if lengths is not None:  # only sent when claimed: opset 24
        feeds["nonpad_kv_seqlen"] = np.array(lengths, np.int64)
        types["nonpad_kv_seqlen"] = TensorProto.INT64
    return feeds, types


def split_past(feeds: dict, types: dict, causal: bool, attrs: dict):
    """ONNX's spelling of causal over a KV cache (Lq <= Lk): is_causal=1, with the first
    Lk - Lq keys and values as past_key / past_value and the last Lq as K / V."""
    if not causal:
        return feeds, types, attrs
    feeds, types = dict(feeds), dict(types)
    past = feeds["K"].shape[2] - feeds["Q"].shape[2]
    if past:
        k, v = feeds.pop("K"), feeds.pop("V")
        feeds.update(past_key=k[:, :, :past], K=k[:, :, past:],
                     past_value=v[:, :, :past], V=v[:, :, past:])
        types.update(past_key=types["K"], past_value=types["V"])
    return feeds, types, {**attrs, "is_causal": 1}


def dense(feeds: dict) -> dict:
    """The feeds as ORT takes them: numpy arrays made C-contiguous, OrtValues as they are."""
    return {n: np.asarray(a, order="C") if isinstance(a, np.ndarray) else a
            for n, a in feeds.items()}


def shapes_of(feeds: dict) -> dict:
    return {n: tuple(a.shape() if isinstance(a, ort.OrtValue) else a.shape)
            for n, a in feeds.items()}


def build_model(types: dict, shapes: dict, attrs: dict, opset: int):
    """The one-node model: Attention over the inputs present (empty names for the optional
    inputs skipped before a present one), output Y (+ present_key / present_value when there
    is a past: ORT refuses a past_key without them), checked by onnx.checker (full check)."""
    names = [n if n in types else "" for n in NODE_INPUTS]
    while not names[-1]:
        names.pop()
    outputs = [("Y", types["Q"])]
    if "past_key" in types:
        outputs += [("present_key", types["K"]), ("present_value", types["V"])]
    graph = helper.make_graph(
        [helper.make_node("Attention", names, [n for n, _ in outputs], **attrs)],
        "attnconf",
        [helper.make_tensor_value_info(n, types[n], shapes[n]) for n in NODE_INPUTS if n in types],
        [helper.make_tensor_value_info(n, t, [None] * 4) for n, t in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model, full_check=True)
    return model


def new_session(model):
    so = ort.SessionOptions()
    so.log_severity_level = 4  # refusals come back as exceptions; keep stderr quiet
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


def ort_message(exc) -> str:
    """ORT's enforce failures quote a whole C++ signature; keep the file:line and the verdict."""
    text = " ".join(str(exc).split())
    m = re.search(r"([\w.]+\.(?:h|cc):\d+) .* was false\. (.*)", text)
    return f"onnxruntime: {m[2]} ({m[1]})" if m else f"onnxruntime: {text}"


class OnnxRuntimeAdapter:
    options = [ax.Option("opset", "23", "ai.onnx opset of the Attention node: 23 or 24")]

    def open(self, options):
        if options["opset"] not in ("23", "24"):
            raise ax.Refusal(ax.EINVAL, f"option opset={options['opset']!r}: expected 23 or 24")
        self.opset = int(options["opset"])
        self.sessions = {}
        caps = ["f32", "f16", "mask.bool", "mask.additive", "mask.broadcast", "causal", "gqa",
                "dv_ne_d", "scale", "build_mask", "sdpa.softcap"]
        if self.opset >= 24:
            caps += ["lengths", "sdpa.lengths"]
        self.identity_version = (f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, "
                                 f"Attention opset {self.opset}, CPUExecutionProvider")
        return ax.Identity(name=f"onnxruntime-opset{self.opset}", version=self.identity_version,
                           capabilities=caps)

    def session(self, types: dict, shapes: dict, attrs: dict):
        """A session for one Attention node with these inputs and attributes, built once."""
        key = (tuple(sorted(types.items())), tuple(sorted(shapes.items())),
               tuple(sorted(attrs.items())))
        if key not in self.sessions:
            self.sessions[key] = new_session(build_model(types, shapes, attrs, self.opset))
        return self.sessions[key]

    @staticmethod
    def check_causal(feeds: dict, causal: bool):
        """What split_past cannot say: Lq > Lk (a negative past length)."""
        if causal:
            lq, lk = feeds["Q"].shape[2], feeds["K"].shape[2]
            if lq > lk:
                raise ax.Refusal(ax.ENOTSUP, f"causal with Lq {lq} > Lk {lk}: no past length "
                                 "expresses a negative offset in ONNX")

    def attend(self, feeds: dict, types: dict, causal: bool, attrs: dict):
        """Run Attention on Q, K, V (+ attn_mask, nonpad_kv_seqlen), splitting a causal KV
        cache into past_key / past_value; returns Y."""
        self.check_causal(feeds, causal)
        feeds, types, attrs = split_past(feeds, types, causal, attrs)
        feeds = dense(feeds)
        session = self.session(types, shapes_of(feeds), attrs)
        # The reply's "seconds" (what `attnconf bench` times): session.run alone, not the
        # model built for a new signature nor the conversions around it.
        return ax.timed(session.run, ["Y"], feeds)[0]

    def plan(self, req: ax.SdpaRequest) -> dict:
        """The Attention node's attributes for req (the checks sdpa() makes before building
        it): one decision for the call and for its reproducer."""
        if req.causal and req.causal_offset is not None:
            lq, lk = req.q.shape[-2], req.k.shape[-2]
            if req.causal_offset != lk - lq:
                raise ax.Refusal(ax.ENOTSUP, f"causal offset {req.causal_offset} != Lk - Lq: "
                                 "ONNX's causal offset is the past length")
        attrs = {} if req.scale is None else {"scale": req.scale}
        if req.softcap:
            attrs["softcap"] = req.softcap
        return attrs

    def sdpa(self, req: ax.SdpaRequest):
        attrs = self.plan(req)
        feeds, types = sdpa_feeds(req.q, req.k, req.v, req.mask, req.lengths)
        y = self.attend(feeds, types, req.causal, attrs)
        if y.dtype not in WIRE_DTYPE:
            raise TypeError(f"onnxruntime returned {y.dtype}")
        return WIRE_DTYPE[y.dtype], y

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): the same plan, feeds, past split, model and
        session as sdpa(), the module's functions embedded as they are."""
        attrs = self.plan(req)
        feeds, _ = sdpa_feeds(req.q, req.k, req.v, req.mask, req.lengths)
        self.check_causal(feeds, req.causal)
        setup = "\n".join([
            "import numpy as np",
            "import onnx",
            "import onnxruntime as ort",
            "from onnx import TensorProto, helper",
            "",
            f"OPSET = {self.opset}",
            f"ATTRS = {attrs!r}",
            "ONNX_TYPE = {'f32': TensorProto.FLOAT, 'f16': TensorProto.FLOAT16, "
            "'bf16': TensorProto.BFLOAT16, 'bool': TensorProto.BOOL}",
            "WIRE_DTYPE = {np.dtype(np.float32): 'f32', np.dtype(np.float16): 'f16'}",
            f"NODE_INPUTS = {NODE_INPUTS!r}",
            "", "",
            *[inspect.getsource(f) + "\n" for f in
              (feed, sdpa_feeds, split_past, dense, shapes_of, build_model, new_session)],
        ])
        body = "\n".join([
            "feeds, types = sdpa_feeds(INPUTS['q'], INPUTS['k'], INPUTS['v'], INPUTS.get('mask'),",
            "                          LENGTHS)",
            "feeds, types, attrs = split_past(feeds, types, CAUSAL, ATTRS)",
            "feeds = dense(feeds)",
            "model = build_model(types, shapes_of(feeds), attrs, OPSET)",
            "print(f'onnxruntime {ort.__version__}, onnx {onnx.__version__}; the model:')",
            "print(onnx.printer.to_text(model.graph))",
            "y = new_session(model).run(['Y'], feeds)[0]",
            "return y, WIRE_DTYPE.get(y.dtype, str(y.dtype))",
        ])
        how = (f"a one-node ONNX model (Attention, ai.onnx opset {self.opset}, attributes "
               f"{attrs or 'none'}{' + is_causal=1' if req.causal else ''}) built with "
               "onnx.helper and\nchecked by onnx.checker (full check), run by onnxruntime's "
               "CPUExecutionProvider; Q, K, V (and attn_mask)\nin the case's dtype and shape; "
               "causal over Lk > Lq keys: the first Lk - Lq as past_key / past_value.")
        lib = repro_text.Library(
            requires=f"onnxruntime=={ort.__version__} onnx=={onnx.__version__} numpy",
            versions=self.identity_version, posed=how, setup=setup, call=body)
        name = f"onnxruntime-opset{self.opset}"
        return repro_text.script(header, repro_text.inputs(req), name, lib), "python"

    def build_mask(self, req: ax.MaskRequest):
        if req.window or req.left_padding is not None:
            raise ax.Refusal(ax.ENOTSUP, "window and left padding are not in Attention-23/24")
        batch, lk = (req.batch if req.lengths is not None else 1), req.offset + req.lq
        f32 = TensorProto.FLOAT
        feeds = {"Q": np.zeros((batch, 1, req.lq, 1), np.float32),
                 "K": np.zeros((batch, 1, lk, 1), np.float32),
                 "V": np.broadcast_to(np.eye(lk, dtype=np.float32), (batch, 1, lk, lk))}
        types = {"Q": f32, "K": f32, "V": f32}
        if req.lengths is not None:
            if self.opset < 24:
                raise ax.Refusal(ax.ENOTSUP, "lengths need nonpad_kv_seqlen (opset 24)")
            feeds["nonpad_kv_seqlen"] = np.array(req.lengths, np.int64)
            types["nonpad_kv_seqlen"] = TensorProto.INT64
        weights = self.attend(feeds, types, True, {})[:, 0]
        bad = np.argwhere(~np.isfinite(weights))
        if bad.size:
            b, i, _ = bad[0]
            raise ax.Refusal(ax.EBACKEND, f"softmax weights of batch {b} row {i} came out "
                             f"{weights[b, i].tolist()}: no keep mask can be read from them")
        return (weights > 0)[:, None]

    @staticmethod
    def refusal_of(exc):
        checker = (onnx.checker.ValidationError, onnx.shape_inference.InferenceError)
        if isinstance(exc, checker):
            message, refused = f"onnx.checker: {exc}", True
        elif isinstance(exc, (ORT_ERRORS.Fail, ORT_ERRORS.InvalidArgument,
                              ORT_ERRORS.NotImplemented, ORT_ERRORS.InvalidGraph)):
            # "... was false." is an ORT_ENFORCE / ORT_RETURN_IF_NOT input check
            message, refused = ort_message(exc), " was false. " in str(exc)
        else:
            return None
        text = str(exc)
        if re.search(r"Type Error|inconsistent type|bound to different types", text):
            return ax.Refusal(ax.EDTYPE, message)
        if isinstance(exc, ORT_ERRORS.NotImplemented) or "should not be used together" in text:
            return ax.Refusal(ax.ENOTSUP, message)  # valid input this ORT does not implement
        return ax.Refusal(ax.EINVAL if refused else ax.EBACKEND, message)

if __name__ == "__main__":
    ax.serve(OnnxRuntimeAdapter())
