"""attnconf exec adapter: PyTorch's torch.nn.attention.flex_attention on the CPU.

What it validates: flex_attention as its users call it, in two variants, one run each:

    --backend-option compile=yes   torch.compile(flex_attention): inductor's C++ CPU
                                   template (gcc)                        name torch-flex
    --backend-option compile=no    flex_attention uncompiled: PyTorch's reference math
                                   path (scores materialised in f32)     name torch-flex-eager

How cases are posed, as a flex user writes them (flex has no mask tensor, causal flag or
padding argument: every constraint is a function the user writes):
  * q, k, v: torch tensors of the case's dtype with the harness's strides (torch_adapter's
    to_torch), shape (B, H, L, D).  GQA (Hq != Hkv) is enable_gqa=True; an explicit scale is
    scale=, none is flex's default 1/sqrt(D).
  * Every keep constraint is a mask_mod(b, h, q_idx, kv_idx), the constraints of a case
    combined with and_masks, turned into a BlockMask by create_block_mask (B=None / H=None,
    flex's broadcast, when the mask_mod does not depend on the batch / head index):
      - causal, bottom-right with the offset (SPEC clause 3): kv_idx <= q_idx + offset, the
        offset Lk - Lq unless the case gives one;
      - window W (clause 19/4): kv_idx > q_idx + offset - W, W keys counting the query itself
        (flex's own sliding-window example, q_idx - kv_idx <= W, keeps W + 1: the user picks
        the number, so it is written for SPEC's W);
      - lengths / left padding: kv_idx < lengths[b] / kv_idx >= left_padding[b], the arrays
        captured as tensors in the mask_mod (as flex's document-masking example captures its
        document ids);
      - a bool mask: the mask broadcast to (B, Hq, Lq, Lk) with Tensor.expand and indexed,
        mask[b, h, q_idx, kv_idx].
  * An additive mask is a score_mod, score + bias[b, h, q_idx, kv_idx], the bias broadcast
    the same way.  A causal flag with a mask tensor is posed as both (and_masks): flex has no
    flag that could refuse the pair.
  * No constraint: no block_mask (flex's default, every key visible).
  * build_mask (op: mask cases) is create_mask over the same mask_mods, (B, 1, Lq, Lk) with
    Lk = kv_len or offset + Lq; no argument is checked here, so what flex builds is judged.
  * No KV cache: flex has none.
  * repro (PROTOCOL.md): a reproducer script of one case, with keep_mods and flex_kwargs (the
    keyword arguments sdpa() passes) embedded, compiled or not as the run.
The parameters the user would pick (offset, window, lengths) are written into the mask_mod as
given: flex checks none of them, and neither does this adapter.

Compiled variant: torch.compile(flex_attention, dynamic=False), one inductor kernel per shape:
about 320 over the 339 sdpa cases, each a C++ compile of some 10-25 s on a 2-core machine.
dynamic=True would need about 270, but its kernels are other code: a bool mask with B = 2 and
Hq = 2 fails to compile there ('cur_kvSplitSize7' was not declared), not with static shapes.
Dynamo's recompile limit (8) is lifted and fail_on_recompile_limit_hit set, so no case falls
back to the uncompiled path at the limit; after a call that raises, torch.compiler.reset(),
because dynamo then skips flex_attention for the rest of the process; and a call that still
ran the uncompiled branch is reported as EBACKEND, never judged as the compiled kernel.
Inductor's caches go where TORCHINDUCTOR_CACHE_DIR says (PyTorch's default otherwise); the
ctest registration points it into the build tree, so that a rerun compiles nothing.
Threads: torch.set_num_threads(N) with --backend-option threads=N; absent, PyTorch's default.
An sdpa reply reports the time of the flex_attention call alone (the compiled variant's first
call for a shape includes its compilation).

Run (from the repository root, with a Python that has torch installed):

    attnconf run --backend 'exec:python3 conformance/adapters/torch_flex_adapter.py' \
        --cases cases --backend-option compile=yes
"""

import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import torch  # noqa: E402
import torch_adapter  # noqa: E402  # to_torch, from_torch, versions, refusal_of: the SDPA adapter's own
from torch._dynamo.exc import BackendCompilerFailed
from torch._inductor.exc import CppCompileError, LoweringException
from torch.nn.attention import flex_attention as flex_module
from torch.nn.attention.flex_attention import (and_masks, create_block_mask, create_mask,
                                               flex_attention)

COMPILE = {"yes": True, "no": False}


def keep_mods(causal: bool, offset, window: int, lengths, left_padding):
    """The mask_mods of the structural constraints, and whether any reads the batch index."""
    mods = []
    if causal:
        def causal_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + offset
        mods.append(causal_mod)
    if window:
        def window_mod(b, h, q_idx, kv_idx):
            return kv_idx > q_idx + offset - window
        mods.append(window_mod)
    if lengths is not None:
        valid = torch.tensor(lengths, dtype=torch.int64)

        def lengths_mod(b, h, q_idx, kv_idx):
            return kv_idx < valid[b]
        mods.append(lengths_mod)
    if left_padding is not None:
        first = torch.tensor(left_padding, dtype=torch.int64)

        def left_padding_mod(b, h, q_idx, kv_idx):
            return kv_idx >= first[b]
        mods.append(left_padding_mod)
    return mods, lengths is not None or left_padding is not None


def flex_kwargs(q, k, mask, causal, causal_offset, window, lengths, left_padding, scale):
    """(kwargs, said): flex_attention's keyword arguments for a case, as a flex user writes
    them (q, k: the call's tensors; mask: the case's mask tensor or None; the rest the case's
    parameters, causal_offset None for bottom-right), and those arguments in words."""
    kwargs = {}
    if scale is not None:
        kwargs["scale"] = scale
    if q.dim() >= 3 and k.dim() == q.dim() and q.shape[-3] != k.shape[-3]:
        kwargs["enable_gqa"] = True
    said = [f"{key}={value!r}" for key, value in kwargs.items()]
    if q.dim() != 4 or k.dim() != 4:
        # No mask can be built for such a shape: flex_attention itself says what it takes.
        return kwargs, ", ".join(said) or "no keyword arguments"
    B, Hq, Lq = q.shape[0], q.shape[1], q.shape[2]
    Lk = k.shape[2]
    offset = Lk - Lq if causal_offset is None else causal_offset
    mods, by_batch = keep_mods(causal, offset, window, lengths, left_padding)
    by_head = False
    if mask is not None:
        by_batch = by_batch or (mask.dim() == 4 and mask.shape[0] != 1)
        by_head = mask.dim() >= 3 and mask.shape[-3] != 1
        full = mask.expand(B, Hq, Lq, Lk)
        if mask.dtype == torch.bool:
            def bool_mod(b, h, q_idx, kv_idx):
                return full[b, h, q_idx, kv_idx]
            mods.append(bool_mod)
        else:
            def bias_mod(score, b, h, q_idx, kv_idx):
                return score + full[b, h, q_idx, kv_idx]
            kwargs["score_mod"] = bias_mod
            said.append("score_mod=bias_mod")
    if mods:
        mask_mod = mods[0] if len(mods) == 1 else and_masks(*mods)
        sizes = [B if by_batch else None, Hq if by_head else None, Lq, Lk]
        kwargs["block_mask"] = create_block_mask(mask_mod, *sizes, device="cpu")
        names = ", ".join(m.__name__ for m in mods)
        mod = names if len(mods) == 1 else f"and_masks({names})"
        said.append(f"block_mask=create_block_mask({mod}, {', '.join(map(str, sizes))}, "
                    "device='cpu')")
    return kwargs, ", ".join(said) or "no keyword arguments"


class TorchFlex:
    options = [
        ax.Option("compile", "yes", "yes: torch.compile(flex_attention, dynamic=False) "
                  "(inductor's CPU kernel); no: flex_attention uncompiled (PyTorch's math "
                  "reference path)"),
        torch_adapter.THREADS,
    ]

    def open(self, options):
        if options["compile"] not in COMPILE:
            raise ax.Refusal(ax.EINVAL, f"option compile={options['compile']!r}: expected "
                             f"one of {', '.join(COMPILE)}")
        torch_adapter.set_threads(options["threads"])
        self.compiled = COMPILE[options["compile"]]
        if self.compiled:
            # One graph per shape: at the default limit the ninth would run uncompiled.
            torch._dynamo.config.recompile_limit = 1 << 20
            torch._dynamo.config.accumulated_recompile_limit = 1 << 20
            torch._dynamo.config.fail_on_recompile_limit_hit = True
            self.flex = torch.compile(flex_attention, dynamic=False)
            name = "torch-flex"
        else:
            self.flex = flex_attention
            name = "torch-flex-eager"
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
                "causal.offset", "gqa", "dv_ne_d", "strided", "stride0", "scale", "build_mask",
                "window", "lengths", "left_padding", "mask.kv_len", "sdpa.window",
                "sdpa.lengths", "sdpa.left_padding"]
        mode = "torch.compile(dynamic=False), inductor cpp" if self.compiled else "eager"
        self.name, self.threads = name, options["threads"]
        self.version = f"{torch_adapter.versions()}, threads {torch.get_num_threads()}, {mode}"
        return ax.Identity(name, self.version, caps)

    def sdpa(self, req: ax.SdpaRequest):
        q, k, v = (torch_adapter.to_torch(t) for t in (req.q, req.k, req.v))
        mask = None if req.mask is None else torch_adapter.to_torch(req.mask)
        kwargs, _ = flex_kwargs(q, k, mask, req.causal, req.causal_offset, req.window,
                                req.lengths, req.left_padding, req.scale)
        return torch_adapter.from_torch(self.call(q, k, v, kwargs))

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): to_torch, keep_mods and flex_kwargs embedded, so
        the script builds the mask_mods, score_mod and BlockMask as sdpa() does, and calls
        flex_attention compiled or not as this run does."""
        params = (f"causal={req.causal!r}, causal_offset={req.causal_offset!r}, "
                  f"window={req.window!r}, lengths={req.lengths!r}, "
                  f"left_padding={req.left_padding!r}, scale={req.scale!r}")
        flex = "torch.compile(flex_attention, dynamic=False)" if self.compiled else "flex_attention"
        body = [
            "mask = to_torch(INPUTS['mask'])" if req.mask is not None else "mask = None",
            f"kwargs, said = flex_kwargs(q, k, mask, {params})",
            "print(f'flex_attention(q, k, v, **kwargs), kwargs: {said}')",
            f"flex = {flex}",
            "with torch.no_grad():",
            "    out = flex(q, k, v, **kwargs)",
        ]
        imports = ["from torch.nn.attention.flex_attention import and_masks, create_block_mask, "
                   "flex_attention"]
        q, k = torch_adapter.to_torch(req.q), torch_adapter.to_torch(req.k)
        mask = None if req.mask is None else torch_adapter.to_torch(req.mask)
        _, said = flex_kwargs(q, k, mask, req.causal, req.causal_offset, req.window,
                              req.lengths, req.left_padding, req.scale)
        how = [f"{flex}(q, k, v, **kwargs) under torch.no_grad(), kwargs from flex_kwargs below",
               "(each keep constraint a mask_mod from keep_mods, several combined with and_masks,",
               "a bool mask a mask_mod indexing it, an additive one a score_mod adding it):",
               said + "."]
        return torch_adapter.repro_script(req, header, self.name, how, imports,
                                          [keep_mods, flex_kwargs], body, self.threads,
                                          versions_text=self.version)

    def call(self, q, k, v, kwargs):
        if not self.compiled:
            with torch.no_grad():
                return ax.timed(self.flex, q, k, v, **kwargs)
        try:
            with torch.no_grad():
                out = ax.timed(self.flex, q, k, v, **kwargs)
        except Exception:
            # An exception raised while dynamo traces flex_attention (its own argument checks
            # included) makes dynamo skip the function from then on ("Failed to handle graph
            # break gracefully"): every later call of the process would run flex_attention's
            # uncompiled branch.  Each case gets the compiler as a fresh process has it.
            torch.compiler.reset()
            raise
        # The uncompiled branch marks its performance warning as shown: a call that went
        # there was not the compiled kernel, whatever it returned.
        if "flex_attention_performance" in flex_module._WARNINGS_SHOWN:
            flex_module._WARNINGS_SHOWN.discard("flex_attention_performance")
            torch.compiler.reset()
            raise ax.Refusal(ax.EBACKEND, "torch.compile(flex_attention) ran flex_attention's "
                             "uncompiled branch for this call")
        return out

    def build_mask(self, req: ax.MaskRequest):
        lk = req.kv_len or req.offset + req.lq
        per_row = req.lengths is not None or req.left_padding is not None
        mods, _ = keep_mods(True, req.offset, req.window, req.lengths, req.left_padding)
        mask_mod = mods[0] if len(mods) == 1 else and_masks(*mods)
        keep = create_mask(mask_mod, req.batch if per_row else 1, 1, req.lq, lk, device="cpu")
        return keep.numpy()

    def refusal_of(self, exc):
        if isinstance(exc, BackendCompilerFailed):
            return compiler_refusal(exc)
        return torch_adapter.refusal_of(exc)


def compiler_refusal(exc: BackendCompilerFailed) -> ax.Refusal:
    """The status of a failure inside torch.compile.  Only an argument check of a lowering (a
    ValueError, or a NotImplementedError: a documented gap) is an answer about the input; a
    failed assertion or a C++ compile error is the compiler's own failure, EBACKEND, whatever
    words its message holds (a 'dtype' in an assertion is no dtype rejection)."""
    inner = exc.inner_exception
    if isinstance(inner, CppCompileError):
        # The command line fills the message; the first diagnostic is what says why.
        first = next((line.split("error:", 1)[1].strip() for line in inner.output.splitlines()
                      if "error:" in line), "(no diagnostic)")
        return ax.Refusal(ax.EBACKEND, f"{type(exc).__name__}: CppCompileError: {first}")
    text = " ".join(f"{type(exc).__name__}: {type(inner).__name__}: {inner}".split())
    if isinstance(inner, LoweringException):
        # Its text is "Type: message" of the lowering's exception, then the operator's args.
        cause, _, why = str(inner).split("\n", 1)[0].partition(": ")
        if cause == "NotImplementedError":
            return ax.Refusal(ax.ENOTSUP, text)
        if cause == "ValueError":
            return ax.Refusal(ax.EDTYPE if "dtype" in why else ax.EINVAL, text)
    return ax.Refusal(ax.EBACKEND, text)


if __name__ == "__main__":
    ax.serve(TorchFlex())
