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
  * No KV cache of the mlx-lm kind: flex has none.
  * Paged KV caches (SPEC clause 23, capability paged): PyTorch's experimental
    torch.nn.attention.experimental._paged_attention.PagedAttention, the paged cache built on
    flex.  Its physical cache is one (1, Hkv, n_pages * P, D) tensor: the harness's pool
    (num_pages, Hkv, P, D) permuted to (Hkv, num_pages, P, D) and its first two axes merged,
    a view when the pool is laid out page-major per head (vLLM's NHD pool is), else a copy.
    PagedAttention owns its page table (reserve() picks the pages), so the host's table is
    written into it as reserve() would have left it for those pages: page_table[b, j] =
    block_table[b][j] and physical_to_logical[b, page] = j for the row's first ceil(L_b / P)
    entries, capacity[b] = that many pages (an entry outside the pool is written into
    page_table as given, physical_to_logical cannot hold it: what the library then does is
    judged).  Two things the object cannot hold are NOT_SUPPORTED: a row needing more entries
    than its n_pages-wide table, and a row listing one page twice.
      - paged_append: PagedAttention.assign(batch_idx, input_pos, k, v, k_cache, v_cache)
        with input_pos = seq_lens[b] + t; rows with fewer new tokens (new_lens) go one
        assign per distinct count, the padding tokens left out; the pool as assign left it
        is returned (attnconf_exec sends the slots that changed).
      - paged_sdpa: a logical BlockMask from create_block_mask with BLOCK_SIZE (Lq, P) over
        max ceil(L_b / P) pages, whose mask_mod keeps for row b the real queries i < q_b and
        the keys kv_idx < L_b (kv_idx <= the query's position L_b - q_b + i when causal, and
        > position - W with a window), converted by convert_logical_block_mask(block_mask,
        kv_len=seq_lens), then flex_attention(q, k_cache, v_cache, block_mask=...,
        enable_gqa, scale), compiled or not as the run; softcap and ALiBi as score_mods made
        physical by get_score_mod, sinks by sink_renorm (as sdpa), chunk a mask_mod.
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

import math
import sys

sys.dont_write_bytecode = True  # the checkout's modules are imported, never cached in it
import attnconf_exec as ax  # noqa: E402  first: it protects the protocol channel from stray prints

import torch  # noqa: E402
import torch_adapter  # noqa: E402  # to_torch, from_torch, versions, refusal_of: the SDPA adapter's own
from torch._dynamo.exc import BackendCompilerFailed, TorchRuntimeError
from torch._inductor.exc import CppCompileError, LoweringException
from torch.nn.attention import flex_attention as flex_module
from torch.nn.attention.experimental._paged_attention import PagedAttention
from torch.nn.attention.flex_attention import (AuxRequest, and_masks, create_block_mask,
                                               create_mask, flex_attention, or_masks)

COMPILE = {"yes": True, "no": False}


def keep_mods(causal: bool, offset, window: int, lengths, left_padding, chunk=0,
              segment_ids=None, block_ids=None):
    """The mask_mods of the structural constraints, and whether any reads the batch index.
    segment_ids / block_ids: B lists of Lk ids, indexed by the query's position q_idx + offset
    (a query past the key buffer has no id: it keeps nothing of a document, and no block)."""
    mods = []
    pos_ids = {}
    for name, ids in (("segment_ids", segment_ids), ("block_ids", block_ids)):
        if ids is not None:
            pos_ids[name] = torch.tensor(ids, dtype=torch.int64)
    lk = next(iter(pos_ids.values())).shape[1] if pos_ids else 0

    def at_query(ids, b, q_idx):
        """(the id of the query's own position, whether that position is a key slot)."""
        pos = q_idx + offset
        inside = (pos >= 0) & (pos < lk)
        return ids[b, pos.clamp(0, lk - 1)], inside
    if causal:
        def causal_mod(b, h, q_idx, kv_idx):
            return kv_idx <= q_idx + offset
        if block_ids is not None:
            # Bidirectional blocks (Gemma 3's image tokens): a query in a block also sees the
            # block's later keys, or_masks over the causal mask_mod.
            blocks = pos_ids["block_ids"]

            def block_mod(b, h, q_idx, kv_idx):
                own, inside = at_query(blocks, b, q_idx)
                return inside & (own >= 0) & (blocks[b, kv_idx] == own)
            mods.append(or_masks(causal_mod, block_mod))
        else:
            mods.append(causal_mod)
    if segment_ids is not None:
        docs = pos_ids["segment_ids"]

        def document_mod(b, h, q_idx, kv_idx):
            own, inside = at_query(docs, b, q_idx)
            return inside & (docs[b, kv_idx] == own)
        mods.append(document_mod)
    if chunk:
        starts = torch.tensor(left_padding if left_padding is not None else [0],
                              dtype=torch.int64)

        def chunk_mod(b, h, q_idx, kv_idx):
            lp = starts[b] if left_padding is not None else starts[0]
            return (kv_idx - lp) // chunk == (q_idx + offset - lp) // chunk
        mods.append(chunk_mod)
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
    return mods, (lengths is not None or left_padding is not None or segment_ids is not None
                  or block_ids is not None)


def alibi_slopes(max_bias: float, hq: int):
    """ALiBi's slope of each query head from the maximum bias (SPEC clause 21, ggml's
    max_bias): n = 2^floor(log2 Hq), 2^(-max_bias (h+1) / n) for h < n, then the odd steps
    2^(-(max_bias/2) (2 (h - n) + 1) / n)."""
    n = 1
    while n * 2 <= hq:
        n *= 2
    return torch.tensor([2.0 ** (-max_bias * (h + 1) / n) if h < n else
                         2.0 ** (-(max_bias / 2) * (2 * (h - n) + 1) / n) for h in range(hq)],
                        dtype=torch.float32)


def flex_kwargs(q, k, mask, causal, causal_offset, window, lengths, left_padding, scale,
                softcap=0.0, alibi_max_bias=0.0, chunk=0, segment_ids=None, block_ids=None):
    """(kwargs, said): flex_attention's keyword arguments for a case, as a flex user writes
    them (q, k: the call's tensors; mask: the case's mask tensor or None; the rest the case's
    parameters, causal_offset None for bottom-right), and those arguments in words.  The
    score terms are one score_mod, in the order flex users (and transformers' flex
    integration) write them: soft-capping of the scaled score, then the ALiBi bias, then an
    additive mask."""
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
    mods, by_batch = keep_mods(causal, offset, window, lengths, left_padding, chunk,
                               segment_ids, block_ids)
    by_head = False
    terms = []  # (name, score term) applied in order
    if softcap:
        def softcap_term(score, b, h, q_idx, kv_idx):
            return softcap * torch.tanh(score / softcap)
        terms.append(softcap_term)
    if alibi_max_bias:
        slopes = alibi_slopes(alibi_max_bias, Hq)

        def alibi_term(score, b, h, q_idx, kv_idx):
            return score - slopes[h] * (q_idx + offset - kv_idx).abs()
        terms.append(alibi_term)
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
            terms.append(bias_mod)
    if len(terms) == 1:
        kwargs["score_mod"] = terms[0]
        said.append(f"score_mod={terms[0].__name__}")
    elif terms:
        def score_mod(score, b, h, q_idx, kv_idx):
            for term in terms:
                score = term(score, b, h, q_idx, kv_idx)
            return score
        kwargs["score_mod"] = score_mod
        said.append(f"score_mod=({' then '.join(t.__name__ for t in terms)})")
    if mods:
        mask_mod = mods[0] if len(mods) == 1 else and_masks(*mods)
        sizes = [B if by_batch else None, Hq if by_head else None, Lq, Lk]
        kwargs["block_mask"] = create_block_mask(mask_mod, *sizes, device=q.device)
        names = ", ".join(m.__name__ for m in mods)
        mod = names if len(mods) == 1 else f"and_masks({names})"
        said.append(f"block_mask=create_block_mask({mod}, {', '.join(map(str, sizes))}, "
                    "device='cpu')")
    return kwargs, ", ".join(said) or "no keyword arguments"


def sink_renorm(out, lse, sinks):
    """Attention sinks after the call, as transformers' flex integration adds them: flex has
    no sink argument, and a sink cannot be a score_mod (it is a logit with no key), so the
    output is renormalised with flex's log-sum-exp (natural log, f32): the softmax over the
    kept keys and the sink logit s_h is out * Z / (Z + e^s_h) = out * sigmoid(lse - s_h).  A
    row that keeps no key has lse = -inf and stays 0.  The product is f32; it is cast back to
    out's dtype, as transformers does (the user's step, not the library's upcast)."""
    sink = torch.tensor(sinks, dtype=torch.float32).view(1, -1, 1)
    return (out * torch.sigmoid(lse - sink).unsqueeze(-1)).to(out.dtype)


class TorchFlex:
    options = [
        ax.Option("compile", "yes", "yes: torch.compile(flex_attention, dynamic=False) "
                  "(inductor's CPU kernel); no: flex_attention uncompiled (PyTorch's math "
                  "reference path)"),
        torch_adapter.THREADS,
        torch_adapter.DEVICE_OPTION,
    ]

    def open(self, options):
        torch_adapter.set_device(options["device"])
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
        if torch_adapter.DEVICE == "cuda":
            name += "-cuda"  # compiled: inductor's Triton kernel
        caps = ["f32", "f16", "bf16", "mask.bool", "mask.additive", "mask.broadcast", "causal",
                "causal.offset", "gqa", "dv_ne_d", "strided", "stride0", "scale", "build_mask",
                "window", "lengths", "left_padding", "mask.kv_len", "sdpa.window",
                "sdpa.lengths", "sdpa.left_padding", "sdpa.softcap", "sdpa.alibi", "sdpa.sinks",
                "sdpa.chunk", "sdpa.segments", "sdpa.blocks", "mask.chunk", "mask.segments",
                "mask.blocks", "paged"]
        backend = "triton" if torch_adapter.DEVICE == "cuda" else "cpp"
        mode = f"torch.compile(dynamic=False), inductor {backend}" if self.compiled else "eager"
        self.name, self.threads = name, options["threads"]
        self.version = f"{torch_adapter.versions()}, threads {torch.get_num_threads()}, {mode}"
        return ax.Identity(name, self.version, caps)

    def sdpa(self, req: ax.SdpaRequest):
        q, k, v = (torch_adapter.to_torch(t) for t in (req.q, req.k, req.v))
        mask = None if req.mask is None else torch_adapter.to_torch(req.mask)
        kwargs, _ = flex_kwargs(q, k, mask, *terms_of(req))
        if req.sinks is None:
            return torch_adapter.from_torch(self.call(q, k, v, kwargs))
        kwargs["return_aux"] = AuxRequest(lse=True)
        out, aux = self.call(q, k, v, kwargs)
        return torch_adapter.from_torch(ax.timed(sink_renorm, out, aux.lse, req.sinks))

    def repro(self, req: ax.SdpaRequest, header: dict):
        """A reproducer (PROTOCOL.md "repro"): to_torch, keep_mods and flex_kwargs embedded, so
        the script builds the mask_mods, score_mod and BlockMask as sdpa() does, and calls
        flex_attention compiled or not as this run does."""
        params = ", ".join(source(x) for x in terms_of(req))
        flex = "torch.compile(flex_attention, dynamic=False)" if self.compiled else "flex_attention"
        body = [
            "mask = to_torch(INPUTS['mask'])" if req.mask is not None else "mask = None",
            f"kwargs, said = flex_kwargs(q, k, mask, {params})",
            "print(f'flex_attention(q, k, v, **kwargs), kwargs: {said}')",
            f"flex = {flex}",
        ]
        if req.sinks is None:
            body += ["with torch.no_grad():", "    out = flex(q, k, v, **kwargs)"]
        else:
            body += ["with torch.no_grad():",
                     "    out, aux = flex(q, k, v, return_aux=AuxRequest(lse=True), **kwargs)",
                     f"    out = sink_renorm(out, aux.lse, {source(req.sinks)})"]
        imports = ["from torch.nn.attention.flex_attention import AuxRequest, "
                   "and_masks, create_block_mask, flex_attention, or_masks"]
        q, k = torch_adapter.to_torch(req.q), torch_adapter.to_torch(req.k)
        mask = None if req.mask is None else torch_adapter.to_torch(req.mask)
        _, said = flex_kwargs(q, k, mask, *terms_of(req))
        how = [f"{flex}(q, k, v, **kwargs) under torch.no_grad(), kwargs from flex_kwargs below",
               "(each keep constraint a mask_mod from keep_mods, several combined with and_masks,",
               "bidirectional blocks or_masks over causal, a bool mask a mask_mod indexing it;",
               "softcap, ALiBi and an additive mask one score_mod, in that order):",
               said + "."]
        if req.sinks is not None:
            how.append("Sinks: return_aux=AuxRequest(lse=True), then sink_renorm (below).")
        return torch_adapter.repro_script(req, header, self.name, how, imports,
                                          [keep_mods, alibi_slopes, flex_kwargs, sink_renorm],
                                          body, self.threads, versions_text=self.version)

    def paged_append(self, req: ax.PagedAppendRequest):
        k, v = torch_adapter.to_torch(req.k), torch_adapter.to_torch(req.v)
        kc, vc, back = physical_cache(req.k_pages, req.v_pages)
        batch, s = k.shape[0], k.shape[2]
        new = req.new_lens if req.new_lens is not None else [s] * batch
        after = [length + n for length, n in zip(req.seq_lens, new)]
        pa = paged_table(kc.shape[2] // req.k_pages.shape[2], req.k_pages.shape[2],
                         req.block_table, after)
        # One assign per distinct count of new tokens: assign writes S tokens for every row
        # it is given, and the padding tokens t >= n_b must not be written.
        for n in sorted(set(new) - {0}):
            rows = [b for b in range(batch) if new[b] == n]
            idx = torch.tensor(rows, dtype=torch.int64)
            pos = torch.tensor([[req.seq_lens[b] + t for t in range(n)] for b in rows],
                               dtype=torch.int64)
            with torch.no_grad():
                ax.timed(pa.assign, idx, pos, k[idx, :, :n], v[idx, :, :n], kc, vc)
        return back(kc), back(vc)

    def paged_sdpa(self, req: ax.PagedRequest):
        q = torch_adapter.to_torch(req.q)
        kc, vc, _ = physical_cache(req.k_pages, req.v_pages)
        page = req.k_pages.shape[2]
        pa = paged_table(kc.shape[2] // page, page, req.block_table, req.seq_lens)
        batch, hq, lq = q.shape[0], q.shape[1], q.shape[2]
        qlens = torch.tensor(req.query_lens if req.query_lens is not None else [lq] * batch,
                             dtype=torch.int64)
        seq = torch.tensor(req.seq_lens, dtype=torch.int64)
        mods = [paged_rows_mod(seq, qlens)]
        if req.causal:
            mods.append(paged_causal_mod(seq, qlens))
        if req.window:
            mods.append(paged_window_mod(seq, qlens, req.window))
        if req.chunk:
            mods.append(paged_chunk_mod(seq, qlens, req.chunk))
        blocks = max([-(-n // page) for n in req.seq_lens] + [1])
        logical = create_block_mask(and_masks(*mods), batch, None, lq, blocks * page,
                                    device="cpu", BLOCK_SIZE=(max(lq, 1), page))
        kwargs = {"block_mask": pa.convert_logical_block_mask(logical, kv_len=seq)}
        if req.scale is not None:
            kwargs["scale"] = req.scale
        if hq != kc.shape[1]:
            kwargs["enable_gqa"] = True
        terms = paged_terms(seq, qlens, req.softcap, req.alibi_max_bias, hq)
        if terms is not None:
            kwargs["score_mod"] = pa.get_score_mod(terms, kv_len=seq)
        if req.sinks is None:
            return torch_adapter.from_torch(self.call(q, kc, vc, kwargs))
        kwargs["return_aux"] = AuxRequest(lse=True)
        out, aux = self.call(q, kc, vc, kwargs)
        return torch_adapter.from_torch(ax.timed(sink_renorm, out, aux.lse, req.sinks))

    def call(self, q, k, v, kwargs):
        if not self.compiled:
            with torch.no_grad():
                return ax.timed(torch_adapter.synced, self.flex, q, k, v, **kwargs)
        try:
            with torch.no_grad():
                out = ax.timed(torch_adapter.synced, self.flex, q, k, v, **kwargs)
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
        mods, per_row = keep_mods(True, req.offset, req.window, req.lengths, req.left_padding,
                                  req.chunk, req.segment_ids, req.block_ids)
        mask_mod = mods[0] if len(mods) == 1 else and_masks(*mods)
        keep = create_mask(mask_mod, req.batch if per_row else 1, 1, req.lq, lk,
                           device=torch_adapter.DEVICE)
        return keep.numpy()

    def refusal_of(self, exc):
        if isinstance(exc, IndexError):
            # PagedAttention checks no page index: one past the pool fails in its indexing
            # (assign's index_put, flex's gather), a value complaint.
            return ax.Refusal(ax.EINVAL, f"IndexError: {exc}")
        if isinstance(exc, BackendCompilerFailed):
            return compiler_refusal(exc)
        if isinstance(exc, TorchRuntimeError) and "got AssertionError(" in str(exc):
            # The uncompiled path traces its higher-order op with dynamo too; a failed
            # assertion there (its fake-tensor repr names dtypes) is flex's own failure.
            return ax.Refusal(ax.EBACKEND, " ".join(f"{type(exc).__name__}: {exc}".split()))
        return torch_adapter.refusal_of(exc)


def physical_cache(k_pages: ax.Tensor, v_pages: ax.Tensor):
    """PagedAttention's physical caches (1, Hkv, num_pages * P, D) of the harness's pool, and
    the function that turns such a cache back into the pool's (num_pages, Hkv, P, D) array."""
    def flat(t):
        pool = torch_adapter.to_torch(t)
        n, h, p, d = pool.shape
        heads_first = pool.permute(1, 0, 2, 3)
        try:
            return heads_first.view(1, h, n * p, d)  # vLLM's NHD layout: no copy
        except RuntimeError:
            return heads_first.reshape(1, h, n * p, d)
    n, p = k_pages.shape[0], k_pages.shape[2]

    def back(cache):
        pool = cache[0].reshape(cache.shape[1], n, p, cache.shape[3]).permute(1, 0, 2, 3)
        return torch_adapter.from_torch(pool)[1]
    return flat(k_pages), flat(v_pages), back


def paged_table(n_pages: int, page_size: int, rows: list, lengths: list) -> PagedAttention:
    """A PagedAttention whose page table is the harness's: row b's first ceil(L_b / P) entries,
    as reserve() would have left them had it picked those pages."""
    pa = PagedAttention(n_pages, page_size, max(len(rows), 1), device="cpu")
    used = set()
    for b, (row, length) in enumerate(zip(rows, lengths)):
        n = max(-(-length // page_size), 0)
        if n > n_pages:
            raise ax.Refusal(ax.ENOTSUP, f"row {b} needs {n} pages: PagedAttention's page table "
                             f"holds n_pages = {n_pages} per row")
        entries = row[:n]
        inside = [e for e in entries if 0 <= e < n_pages]
        if len(set(inside)) != len(inside):
            raise ax.Refusal(ax.ENOTSUP, f"row {b} lists one page twice: PagedAttention's "
                             "physical_to_logical holds one logical block per page and row")
        for j, page in enumerate(entries):
            pa.page_table[b, j] = page
            if 0 <= page < n_pages:
                pa.physical_to_logical[b, page] = j
        pa.capacity[b] = n * page_size
        used.update(inside)
    pa.empty_pages = [e for e in pa.empty_pages if e not in used]
    return pa


def paged_rows_mod(seq, qlens):
    """Row b's real queries (i < q_b) and keys (kv_idx < L_b), on logical positions."""
    def rows_mod(b, h, q_idx, kv_idx):
        return (q_idx < qlens[b]) & (kv_idx < seq[b])
    return rows_mod


def paged_causal_mod(seq, qlens):
    def causal_mod(b, h, q_idx, kv_idx):
        return kv_idx <= q_idx + seq[b] - qlens[b]
    return causal_mod


def paged_window_mod(seq, qlens, window):
    def window_mod(b, h, q_idx, kv_idx):
        return kv_idx > q_idx + seq[b] - qlens[b] - window
    return window_mod


def paged_chunk_mod(seq, qlens, chunk):
    def chunk_mod(b, h, q_idx, kv_idx):
        return kv_idx // chunk == (q_idx + seq[b] - qlens[b]) // chunk
    return chunk_mod


def paged_terms(seq, qlens, softcap, alibi_max_bias, hq):
    """softcap then ALiBi as one logical score_mod (None when neither is set)."""
    terms = []
    if softcap:
        def softcap_term(score, b, h, q_idx, kv_idx):
            return softcap * torch.tanh(score / softcap)
        terms.append(softcap_term)
    if alibi_max_bias:
        slopes = alibi_slopes(alibi_max_bias, hq)

        def alibi_term(score, b, h, q_idx, kv_idx):
            return score - slopes[h] * (q_idx + seq[b] - qlens[b] - kv_idx).abs()
        terms.append(alibi_term)
    if not terms:
        return None

    def score_mod(score, b, h, q_idx, kv_idx):
        for term in terms:
            score = term(score, b, h, q_idx, kv_idx)
        return score
    return score_mod


def terms_of(req: ax.SdpaRequest) -> tuple:
    """flex_kwargs's arguments after q, k and mask, from a request."""
    return (req.causal, req.causal_offset, req.window, req.lengths, req.left_padding, req.scale,
            req.softcap, req.alibi_max_bias, req.chunk, req.segment_ids, req.block_ids)


def source(x) -> str:
    """x (a parameter: None, a bool, a number, a list of them) as Python source; a non-finite
    float (a must-reject case's) as float('inf') and the like."""
    if isinstance(x, list):
        return "[" + ", ".join(source(e) for e in x) + "]"
    if isinstance(x, float) and not math.isfinite(x):
        return f"float({str(x)!r})"
    return repr(x)


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
