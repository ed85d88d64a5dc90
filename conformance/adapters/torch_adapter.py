"""attnconf exec adapter: PyTorch's torch.nn.functional.scaled_dot_product_attention on the CPU.

What it validates: SDPA as a PyTorch user calls it, with the CPU kernel PyTorch picks or with
one forced through torch.nn.attention.sdpa_kernel:

    --backend-option kernel=default   PyTorch's own dispatch             name torch-sdpa
    --backend-option kernel=math      SDPBackend.MATH (the reference)    name torch-sdpa-math
    --backend-option kernel=flash     SDPBackend.FLASH_ATTENTION (CPU)   name torch-sdpa-flash

How cases are posed, as a PyTorch user would write them:
  * q, k, v are torch tensors of the case's dtype (bf16 as torch.bfloat16) laid out with the
    strides the harness sent (torch.as_strided over the received buffer), shape (B, H, L, D).
  * GQA (Hq != Hkv) is enable_gqa=True; PyTorch repeats the K/V heads itself.
  * a bool mask or an additive mask goes to attn_mask unchanged in shape and dtype (PyTorch
    broadcasts it and decides what a dtype it does not take means).
  * causal comes in two spellings, each its own run (--backend-option causal=...):
      - causal=flag (default): is_causal=True, the flag most code sets.  PyTorch documents it
        as top-left (key j kept for query i iff j <= i).  A bottom-right case (SPEC clause 3)
        is still posed that way, Lq != Lk included: that is what users write, and the cases
        where the two alignments differ show it.  An explicit offset other than 0 cannot be
        said: ENOTSUP.
      - causal=lower_right: attn_mask=torch.nn.attention.bias.causal_lower_right(Lq, Lk), the
        bottom-right form PyTorch provides.  Explicit offset Lk - Lq is that; explicit offset
        0 is is_causal=True; any other offset: ENOTSUP.
    A case with a mask and causal passes attn_mask= and is_causal=True together in either
    spelling: SDPA documents that it refuses the pair, so the rejection is PyTorch's own.
  * scale: scale=None (PyTorch's 1/sqrt(D)) or the number as given.
  * the sdpa mask parameters (window, lengths, left padding) are not claimed: SDPA has none.
  * build_mask and the KV cache are not offered: PyTorch has neither.
  * repro (PROTOCOL.md): a reproducer script of one case, from the same plan() as the call.
Threads: torch.set_num_threads(threads) with --backend-option threads=N; absent, PyTorch's
default (one per core).  An sdpa reply reports the time of the scaled_dot_product_attention
call alone (attnconf_exec.timed).

Run (from the repository root, with a Python that has torch installed):

    attnconf run --backend 'exec:python3 conformance/adapters/torch_adapter.py' --cases cases \
        --backend-option kernel=math --backend-option causal=lower_right
"""

import inspect
import re
import sys
import warnings

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import attnconf_repro as repro_text  # noqa: E402
import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

# efficient (memory-efficient attention) and cudnn are CUDA kernels: with device=cuda only.
KERNELS = {"default": None, "math": SDPBackend.MATH, "flash": SDPBackend.FLASH_ATTENTION,
           "efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
# Where tensors live (set_device, the `device` option): "cpu" unless a run asks for "cuda".
DEVICE = "cpu"
CAUSAL = ("flag", "lower_right")
TORCH_DTYPE = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
               "bool": torch.bool}
# The source location PyTorch appends to its C++ warnings: not part of the reason.
TRIGGERED = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")
WIRE = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}


def to_torch(t: ax.Tensor) -> torch.Tensor:
    """The received tensor in torch with the harness's strides (bf16 from its bit patterns)."""
    storage = np.array(t.storage)  # writable copy: torch shares it
    if t.dtype == "bool":
        base = torch.from_numpy(storage != 0)
    elif t.dtype == "bf16":
        base = torch.from_numpy(storage.view(np.int16)).view(torch.bfloat16)
    else:
        base = torch.from_numpy(storage)
    if DEVICE != "cpu":
        base = base.to(DEVICE)  # the same storage on the device: the strides below still hold
    if not t.shape:
        return base.reshape(()) if base.numel() == 1 else base
    return torch.as_strided(base, t.shape, t.strides)


def from_torch(out: torch.Tensor):
    """(wire dtype, numpy array) of a result, in the dtype PyTorch produced."""
    if out.dtype not in WIRE:
        raise ax.Refusal(ax.EBACKEND, f"torch produced dtype {out.dtype}, which the protocol cannot carry")
    out = out.detach().cpu().contiguous()
    if out.dtype == torch.bfloat16:
        return "bf16", out.view(torch.int16).numpy().view(np.uint16)
    return WIRE[out.dtype], out.numpy()


def versions() -> str:
    import platform
    text = (f"torch {torch.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
            f"cpu capability {torch.backends.cpu.get_cpu_capability()}")
    if DEVICE == "cuda":
        text += (f", device {torch.cuda.get_device_name()} (CUDA {torch.version.cuda}, cuDNN "
                 f"{torch.backends.cudnn.version()})")
    return text


DEVICE_OPTION = ax.Option("device", "cpu", "cpu, or cuda: tensors on the CUDA GPU (refused where "
                          "torch sees none); not registered in CI (tools/device-check runs it)")


def set_device(value):
    """The device option of a torch adapter: "cpu", or "cuda" (ENOTSUP without a GPU)."""
    global DEVICE
    if value not in ("cpu", "cuda"):
        raise ax.Refusal(ax.EINVAL, f"option device={value!r}: expected cpu or cuda")
    if value == "cuda":
        if not torch.cuda.is_available():
            raise ax.Refusal(ax.ENOTSUP, "option device=cuda: torch sees no CUDA device")
        torch.set_default_device("cuda")  # tensors the adapters build themselves follow
    DEVICE = value


def synced(f, *args, **kwargs):
    """f(*args, **kwargs), waiting for the GPU when on one (so ax.timed times the kernel)."""
    out = f(*args, **kwargs)
    if DEVICE != "cpu":
        torch.cuda.synchronize()
    return out


THREADS = ax.Option("threads", None, "torch.set_num_threads(N); absent: PyTorch's default")


def set_threads(value):
    """The threads option (THREADS) of a torch adapter: torch.set_num_threads(N), or nothing."""
    if value is None:
        return
    if not re.fullmatch(r"[1-9][0-9]{0,3}", value):
        raise ax.Refusal(ax.EINVAL, f"option threads={value!r}: expected an integer from 1 "
                         "to 9999")
    torch.set_num_threads(int(value))


def refusal_of(exc, dtype_words=r"dtype|Expected .*(float|bool|Half|BFloat16)"):
    """The status of an exception torch raised: ENOMEM for an allocation failure, ENOTSUP for
    "No available kernel" (a forced kernel that cannot take the input), EDTYPE for an argument
    error whose text matches dtype_words, EINVAL for any other argument error; None (a crash of
    the library, EBACKEND) for the rest."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    if isinstance(exc, MemoryError) or "DefaultCPUAllocator: can't allocate" in text:
        return ax.Refusal(ax.ENOMEM, text)
    if "No available kernel" in text:
        return ax.Refusal(ax.ENOTSUP, text)
    if isinstance(exc, (RuntimeError, ValueError, TypeError, IndexError)):
        if re.search(dtype_words, text):
            return ax.Refusal(ax.EDTYPE, text)
        return ax.Refusal(ax.EINVAL, text)
    return None


def repro_script(req: ax.SdpaRequest, header: dict, name: str, how: list, imports: list,
                 helpers: list, body: list, threads, library: str = "", versions_text: str = ""):
    """(text, "python") of a reproducer (attnconf_repro.script) for a torch adapter: the torch
    part every one of them shares (numpy and torch imported, torch.set_num_threads when the
    run set threads, to_torch embedded, q, k, v made from INPUTS; after the call the torch
    version printed and `out` returned as float64 values with its wire dtype), around the
    adapter's own: `imports` (lines), `helpers` (functions and classes, embedded with
    inspect.getsource), `body` (lines of run_library() that leave the result in `out`) and
    `how` (lines saying how the call is posed).  library: what else to install, with its
    version (e.g. "transformers==5.23.0"); versions_text: the hello version, if not versions()."""
    setup = "\n".join([
        "import numpy as np",
        "import torch",
        *imports,
        "",
        "WIRE = {torch.float32: 'f32', torch.float16: 'f16', torch.bfloat16: 'bf16'}",
        f"DEVICE = {DEVICE!r}  # where the run put its tensors (to_torch reads it)",
        *([f"torch.set_num_threads({threads})"] if threads else []),
        "",
        "",
        "\n\n".join(inspect.getsource(fn) for fn in [to_torch, *helpers]),
    ])
    call = "\n".join([
        "q, k, v = to_torch(INPUTS['q']), to_torch(INPUTS['k']), to_torch(INPUTS['v'])",
        *body,
        "print(f'torch {torch.__version__}, cpu capability '",
        "      f'{torch.backends.cpu.get_cpu_capability()}')",
        "return out.detach().to(torch.float64).numpy(), WIRE.get(out.dtype, str(out.dtype))",
    ])
    posed = [
        "q, k, v: torch tensors of the case's dtype over the embedded buffers, with the "
        "strides attnconf",
        "passed (torch.as_strided; bf16 from its bit patterns), shape (B, H, L, D);",
        *how,
    ]
    requires = " ".join([f"torch=={torch.__version__.split('+')[0]}", *([library] if library else []),
                         "numpy"])
    lib = repro_text.Library(requires=requires, versions=versions_text or versions(),
                             posed="\n".join(posed), setup=setup, call=call)
    return repro_text.script(header, repro_text.inputs(req), name, lib), "python"


class TorchSdpa:
    options = [
        ax.Option("kernel", "default", "the SDPA kernel: default (PyTorch's dispatch), math "
                  "(SDPBackend.MATH), flash (SDPBackend.FLASH_ATTENTION), and with "
                  "device=cuda efficient (EFFICIENT_ATTENTION) or cudnn (CUDNN_ATTENTION)"),
        ax.Option("causal", "flag", "how causal is said: flag (is_causal=True, top-left) or "
                  "lower_right (attn_mask=causal_lower_right(Lq, Lk), bottom-right)"),
        THREADS,
        DEVICE_OPTION,
    ]

    def open(self, options):
        set_device(options["device"])
        if options["kernel"] not in KERNELS:
            raise ax.Refusal(ax.EINVAL, f"option kernel={options['kernel']!r}: expected "
                             f"one of {', '.join(KERNELS)}")
        if options["causal"] not in CAUSAL:
            raise ax.Refusal(ax.EINVAL, f"option causal={options['causal']!r}: expected "
                             f"one of {', '.join(CAUSAL)}")
        set_threads(options["threads"])
        self.kernel = KERNELS[options["kernel"]]
        self.threads = options["threads"]
        self.lower_right = options["causal"] == "lower_right"
        name = "torch-sdpa" + ("" if self.kernel is None else "-" + options["kernel"])
        if self.lower_right:
            name += "-lower-right"
        if DEVICE == "cuda":
            name += "-cuda"
        self.name = name
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
                "causal.offset", "gqa", "dv_ne_d", "strided", "stride0", "scale"]
        return ax.Identity(name, versions(), caps)

    def causal_kwargs(self, req: ax.SdpaRequest, lq: int, lk: int) -> dict:
        """plan()'s causal part: {keyword: (value, source)}."""
        off = req.causal_offset
        if req.mask is not None:
            # SDPA's own rule (documented): attn_mask and is_causal together are refused.  Both
            # are passed, so the rejection is PyTorch's, in either spelling.
            return {"attn_mask": (to_torch(req.mask), "to_torch(INPUTS['mask'])"),
                    "is_causal": (True, "True")}
        if self.lower_right:
            if off is None or off == lk - lq:
                return {"attn_mask": (causal_lower_right(lq, lk), f"causal_lower_right({lq}, {lk})")}
            if off == 0:
                return {"is_causal": (True, "True")}
            raise ax.Refusal(ax.ENOTSUP, f"explicit causal offset {off}: PyTorch says only "
                             f"0 (is_causal) and Lk - Lq = {lk - lq} (causal_lower_right)")
        if off is None or off == 0:
            return {"is_causal": (True, "True")}
        raise ax.Refusal(ax.ENOTSUP, f"explicit causal offset {off}: is_causal has no offset "
                         "(it is top-left, offset 0)")

    def plan(self, req: ax.SdpaRequest) -> dict:
        """The keyword arguments of the scaled_dot_product_attention call for req, each as
        (value, source): the value sdpa() passes, and the expression a reproducer writes for it
        (over its INPUTS and the helpers repro() embeds).  One set of decisions for both, so the
        reproducer calls PyTorch exactly as the run did."""
        kwargs = {}
        if req.scale is not None:
            kwargs["scale"] = (req.scale, repr(req.scale))
        qs, ks = req.q.shape, req.k.shape
        if len(qs) >= 3 and len(ks) == len(qs) and qs[-3] != ks[-3]:
            kwargs["enable_gqa"] = (True, "True")
        if req.causal:
            kwargs.update(self.causal_kwargs(req, qs[-2], ks[-2]))
        elif req.mask is not None:
            kwargs["attn_mask"] = (to_torch(req.mask), "to_torch(INPUTS['mask'])")
        return kwargs

    def sdpa(self, req: ax.SdpaRequest):
        q, k, v = to_torch(req.q), to_torch(req.k), to_torch(req.v)
        kwargs = {key: value for key, (value, _) in self.plan(req).items()}
        # A forced kernel that cannot take the inputs says why only in UserWarnings, then
        # raises "No available kernel": the warnings become part of the refusal's text.
        with torch.no_grad(), warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                if self.kernel is None:
                    out = ax.timed(synced, F.scaled_dot_product_attention, q, k, v, **kwargs)
                else:
                    with sdpa_kernel(self.kernel):
                        out = ax.timed(synced, F.scaled_dot_product_attention, q, k, v,
                                       **kwargs)
            except RuntimeError as e:
                why = [TRIGGERED.sub("", str(w.message)).strip(" :") for w in seen
                       if issubclass(w.category, UserWarning)]
                why = [w for w in why if w and not w.endswith("kernel not used because")]
                if why and "No available kernel" in str(e):
                    raise RuntimeError(f"{e} ({'; '.join(why)})") from e
                raise
        return from_torch(out)

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): the same to_torch, plan and kernel as sdpa()."""
        call = ", ".join(["q, k, v"] + [f"{key}={src}" for key, (_, src) in self.plan(req).items()])
        kernel = "" if self.kernel is None else f", sdpa_kernel(SDPBackend.{self.kernel.name})"
        imports = ["import torch.nn.functional as F",
                   "from torch.nn.attention import SDPBackend, sdpa_kernel",
                   "from torch.nn.attention.bias import causal_lower_right"]
        body = [f"with torch.no_grad(){kernel}:",
                f"    out = F.scaled_dot_product_attention({call})"]
        how = [f"F.scaled_dot_product_attention({call})" + (
            f" under sdpa_kernel(SDPBackend.{self.kernel.name})" if self.kernel else
            " (PyTorch's own kernel choice)") + "."]
        return repro_script(req, header, self.name, how, imports, [], body, self.threads)

    def refusal_of(self, exc):
        return refusal_of(exc)


if __name__ == "__main__":
    ax.serve(TorchSdpa())
