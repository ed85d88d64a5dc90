#!/usr/bin/env python3
"""bad_adapter.py -- TEST-ONLY exec adapter (PROTOCOL.md v1), correct or misbehaving on purpose.

    attnconf run --backend 'exec:python3 bad_adapter.py MODE [STATE_FILE | SECONDS]'

Standard library only.  MODE (argv[1]):

  ok            a correct adapter: f32 SDPA without mask tensors (causal, offset, GQA, Dv != D,
                strides, explicit scale and the sdpa.window / sdpa.lengths / sdpa.left_padding
                parameters included), computed in pure Python in double and
                rounded once to f32, small cases only; and build_mask (window, lengths, left
                padding).  Option `device` (default cpu; only cpu
                is accepted, anything else is refused in hello).
  die           exits (status 3) in the middle of every sdpa, after reading only the header
  fork_die      like die, after forking a child that sleeps 60 s holding stdout open (so the
                harness sees no EOF: it must notice the exit itself)
  hang          reads the sdpa request, then never replies
  garbage       answers sdpa with a line that is not JSON
  badnbytes     answers sdpa with an `out` whose nbytes is 4 bytes short of its shape
  short_payload answers sdpa with a correct header, then sends 1 byte less payload than its
                nbytes and hangs: the harness must time out saying how much of it came
  bad_strides   like ok, with the `out` strides argv[2] read as JSON (e.g. '[0,0,0,0]'), its
                nbytes and payload still the dense ones: a reply breaking the dense rule
  stdout_noise  prints a stray line on stdout before a correct sdpa reply
  refuse_hello  answers hello with status -1
  bad_caps      lists a capability that does not exist ("f64") in hello
  die_once      like die for the first sdpa of all runs sharing STATE_FILE (argv[2], created
                then), then like ok: proves the harness restarts the adapter and goes on
  close_stdin   closes its stdin right after the hello reply and exits (status 0): the
                harness's next write meets a closed pipe (SIGPIPE / EPIPE)
  timed         like ok, and every sdpa reply carries "seconds": the time.perf_counter() time
                of its computation (PROTOCOL.md), as `attnconf bench` needs; `ok` sends none
  bad_seconds   like ok, with "seconds": argv[2] read as JSON (e.g. -1, '"0.5"', 3600: not a
                number >= 0, or longer than the exchange took)
  long_error    answers every sdpa with an error whose text is LONG_ERROR (about 6 KB: a compiler
                command line, then the verdict at its end): the status ok would give for a case
                that must be rejected, else -5
  stride0       like ok, listing stride0 too (K/V broadcast on the batch or head axis), and it
                appends each sdpa's tensor descriptors to STATE_FILE (argv[2]), one JSON list a
                line: what the harness sent
  stride0wire   like stride0, listing stride0.wire too: stride-0 tensors then arrive as they
                are, strides 0 included, in a buffer of the span they address (its view()
                reads any strides)
  inexpressible answers every sdpa and build_mask with status -6 (EINEXPRESSIBLE: "its API
                cannot write this input"), whether the case must be rejected or not: the
                harness must grant UNEXPRESSIBLE only where a rejection is required
  pid           answers every sdpa with status -5 and the error "adapter pid N" (its process
                id): which process served which case (--restart)
  log           like ok, and it appends each sdpa and build_mask request header (its members,
                "tensors" left out) to STATE_FILE (argv[2]), one JSON object a line: what an
                adapter without the fifth-revision capabilities is sent
  terms         like log, listing the fifth-revision capabilities too (sdpa.softcap, sdpa.alibi,
                sdpa.sinks, sdpa.chunk, sdpa.segments, sdpa.blocks, mask.chunk, mask.segments,
                mask.blocks) and computing those terms (SPEC clauses 20-22)
  chatty        like ok, and it writes to stderr: "started, pid N" at start, and in every sdpa
                a three-line traceback-like block ending in "UserWarning: sdpa #K recompiled"
                (K counts this process's sdpa requests), as a library's warnings would be;
                its sdpa replies carry "seconds", like timed

If $BAD_ADAPTER_PIDS is set, every start appends its pid to that file (tests check that the
harness left no adapter running).
"""

import json
import math
import os
import struct
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
STATE = sys.argv[2] if len(sys.argv) > 2 else None  # die_once: a file; bad_*: JSON
EINVAL, EDTYPE, ENOMEM, ENOTSUP, EBACKEND, EINEXPRESSIBLE = -1, -2, -3, -4, -5, -6
FLT_MAX = 3.4028234663852886e38
# A compiler's error: its command line first, the verdict last (long_error).
LONG_ERROR = ("nvcc -O3 -std=c++17 " + " ".join("-I/opt/include/dir%03d" % i for i in range(300))
              + " -c kernel.cu: kernel.cu(42): error: identifier blockDimm is undefined")

inp = sys.stdin.buffer
out = sys.stdout.buffer


def log(msg):
    print("bad_adapter(%s): %s" % (MODE, msg), file=sys.stderr, flush=True)


def send(header, payload=b""):
    header = dict({"protocol": 1}, **header)
    out.write(json.dumps(header, separators=(",", ":")).encode() + b"\n" + payload)
    out.flush()


def read_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = inp.read(n - len(buf))
        if not chunk:
            raise EOFError("stdin closed inside a payload")
        buf += chunk
    return bytes(buf)


def read_request():
    line = inp.readline()
    if not line:
        return None, []
    header = json.loads(line)
    if header.get("protocol") != 1:
        raise ValueError("protocol is not 1")
    return header, header.get("tensors") or []


def read_payloads(tensors):
    return {t["name"]: (t, read_exact(t["nbytes"])) for t in tensors}


def error(status, text):
    send({"status": status, "error": text})


def hello(header):
    if MODE == "refuse_hello":
        error(EINVAL, "refusing hello on purpose")
        return
    options = header.get("options") or {}
    for key, value in options.items():
        if key != "device":
            error(EINVAL, "unknown option '%s' (this adapter takes: device)" % key)
            return
        if value != "cpu":
            error(EINVAL, "device '%s' is not available (cpu only)" % value)
            return
    caps = ["f32", "causal", "causal.offset", "gqa", "dv_ne_d", "strided", "scale",
            "build_mask", "window", "lengths", "left_padding", "mask.kv_len", "sdpa.window",
            "sdpa.lengths", "sdpa.left_padding"]
    if MODE == "bad_caps":
        caps.append("f64")
    if MODE in ("stride0", "stride0wire"):
        caps.append("stride0")
    if MODE == "stride0wire":
        caps.append("stride0.wire")
    if MODE == "terms":
        caps += TERM_CAPS
    send({"status": 0, "name": "bad_adapter", "version": "bad_adapter 1 (%s)" % MODE,
          "capabilities": caps,
          "options": [{"key": "device", "default": "cpu", "help": "cpu only (a test adapter)"}]})


TERM_CAPS = ["sdpa.softcap", "sdpa.alibi", "sdpa.sinks", "sdpa.chunk", "sdpa.segments",
             "sdpa.blocks", "mask.chunk", "mask.segments", "mask.blocks"]


def number(x):
    """A header float: a JSON number or "nan" / "inf" / "-inf" (PROTOCOL.md)."""
    return float(x)


def terms_error(h, causal, hq, b, lk):
    """The reason the fifth-revision terms of request h are invalid (SPEC clauses 20-22), or
    None.  hq: query heads (None for build_mask); b, lk: the id lists' rows and columns."""
    for name in ("softcap", "alibi_max_bias"):
        x = number(h.get(name, 0.0))
        if not (math.isfinite(x) and x >= 0):
            return "%s %r must be finite and >= 0" % (name, x)
    sinks = h.get("sinks")
    if sinks is not None and (len(sinks) != hq or not all(math.isfinite(number(x))
                                                           for x in sinks)):
        return "sinks: %d finite values expected" % hq
    chunk = h.get("chunk", 0)
    if chunk < 0 or ((chunk or h.get("block_ids") is not None) and not causal):
        return "chunk %d / block_ids: chunk must be >= 0, and both need causal" % chunk
    for name in ("segment_ids", "block_ids"):
        ids = h.get(name)
        if ids is not None and (len(ids) != b or any(len(row) != lk for row in ids)):
            return "%s: %d rows of %d ids expected" % (name, b, lk)
    return None


def kept(h, causal, offset, b, i, j, lk):
    """Whether query i of batch row b keeps key j (causal offset `offset`): causal, window,
    lengths, left_padding and the fifth-revision chunk, segment_ids and block_ids, as
    attnref_sdpa_key_kept."""
    window, chunk = h.get("window") or 0, h.get("chunk") or 0
    lengths, left = h.get("lengths"), h.get("left_padding")
    seg, blk = h.get("segment_ids"), h.get("block_ids")
    if (lengths is not None and j >= lengths[b]) or (left is not None and j < left[b]):
        return False
    p = offset + i
    in_slot = 0 <= p < lk
    if seg is not None and (not in_slot or seg[b][p] != seg[b][j]):
        return False
    if not causal:
        return True
    later = j > p
    if later and not (blk is not None and in_slot and blk[b][p] >= 0 and blk[b][p] == blk[b][j]):
        return False
    if not later and window and j <= p - window:
        return False
    lp = left[b] if left is not None else 0
    if chunk and (j - lp) // chunk != (p - lp) // chunk:
        return False
    return True


def alibi_slope(max_bias, hq, h):
    n = 1
    while n * 2 <= hq:
        n *= 2
    if h < n:
        return 2.0 ** (-max_bias * (h + 1) / n)
    return 2.0 ** (-(max_bias / 2) * (2 * (h - n) + 1) / n)


def view(desc, data):
    """A function (b, h, l, d) -> float for an f32 tensor described with strides."""
    values = struct.unpack("<%df" % (len(data) // 4), data)
    shape = desc["shape"]
    strides = desc.get("strides")
    if strides is None:
        strides = [0] * len(shape)
        s = 1
        for d in range(len(shape) - 1, -1, -1):
            strides[d] = s
            s *= max(shape[d], 1)
    return lambda i: values[sum(a * b for a, b in zip(i, strides))]


def sdpa(header, tensors):
    """Returns (status, error, out_descriptor, payload)."""
    window = header.get("window", 0)
    lengths, left = header.get("lengths"), header.get("left_padding")
    if window < 0 or (window and not header.get("causal")):
        return EINVAL, "window %d: must be >= 0 and needs causal" % window, None, b""
    if "mask" in tensors:
        return ENOTSUP, "masks are not supported", None, b""
    q, k, v = (tensors[n][0] for n in ("q", "k", "v"))
    if any(t["dtype"] != "f32" for t in (q, k, v)):
        return (EDTYPE if len({t["dtype"] for t in (q, k, v)}) > 1 else ENOTSUP,
                "f32 only", None, b"")
    if any(len(t["shape"]) != 4 for t in (q, k, v)):
        return EINVAL, "q, k, v must be rank 4", None, b""
    (B, Hq, Lq, D), (Bk, Hkv, Lk, Dk), (Bv, Hv, Lv, Dv) = q["shape"], k["shape"], v["shape"]
    if Bk != B or Bv != B or Dk != D or Hv != Hkv or Lv != Lk or Hkv == 0 or Hq % Hkv or D < 1:
        return EINVAL, "shapes q %s k %s v %s do not match" % (q["shape"], k["shape"],
                                                               v["shape"]), None, b""
    Q, K, V = (view(tensors[n][0], tensors[n][1]) for n in ("q", "k", "v"))
    scale = header.get("scale")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)  # "nan"/"inf" strings too
    if not math.isfinite(scale):
        return EINVAL, "scale %r is not finite" % scale, None, b""
    if abs(scale) > FLT_MAX:
        return EINVAL, "scale %r is outside the f32 range (SPEC clause 2)" % scale, None, b""
    for name, arr in (("lengths", lengths), ("left_padding", left)):
        if arr is not None and (len(arr) != B or any(x < 0 or x > Lk for x in arr)):
            return EINVAL, "%s: %d entries in 0..%d expected" % (name, B, Lk), None, b""
    causal = bool(header.get("causal"))
    why = terms_error(header, causal, Hq, B, Lk)
    if why:
        return EINVAL, why, None, b""
    softcap = number(header.get("softcap", 0.0))
    max_bias = number(header.get("alibi_max_bias", 0.0))
    sinks = header.get("sinks")
    offset = header.get("causal_offset")
    offset = Lk - Lq if offset is None else offset
    group = Hq // Hkv
    result = []
    for b in range(B):
        for h in range(Hq):
            hk = h // group
            slope = alibi_slope(max_bias, Hq, h) if max_bias else 0.0
            for i in range(Lq):
                keys = [j for j in range(Lk) if kept(header, causal, offset, b, i, j, Lk)]
                if not keys:
                    result.extend([0.0] * Dv)
                    continue
                logits = []
                for j in keys:
                    s = scale * sum(Q((b, h, i, d)) * K((b, hk, j, d)) for d in range(D))
                    if softcap:
                        s = softcap * math.tanh(s / softcap)
                    logits.append(s - slope * abs(offset + i - j))
                sink = number(sinks[h]) if sinks is not None else -math.inf
                m = max(logits + [sink])
                w = [math.exp(x - m) for x in logits]
                total = sum(w) + math.exp(sink - m)
                for e in range(Dv):
                    result.append(sum(wj * V((b, hk, j, e)) for wj, j in zip(w, keys)) / total)
    payload = struct.pack("<%df" % len(result), *result)
    desc = {"name": "out", "dtype": "f32", "shape": [B, Hq, Lq, Dv], "nbytes": len(payload)}
    return 0, "", desc, payload


def build_mask(h):
    """Returns (status, error, keep_descriptor, payload): the attnref/mask.h semantics."""
    lq, offset, window, batch = h["lq"], h["offset"], h["window"], h["batch"]
    lengths, left = h.get("lengths"), h.get("left_padding")
    kv_len = h.get("kv_len") or 0
    lk = kv_len if kv_len else offset + lq
    if lq < 0 or offset < 0 or window < 0:
        return EINVAL, "lq, offset and window must be >= 0", None, b""
    if kv_len and kv_len < offset + lq:
        return EINVAL, "kv_len %d is below offset + lq = %d" % (kv_len, offset + lq), None, b""
    per_seq = lengths is not None or left is not None
    per_seq = per_seq or h.get("segment_ids") is not None or h.get("block_ids") is not None
    if per_seq and batch < 1:
        return EINVAL, "batch must be >= 1 with lengths or left_padding", None, b""
    for name, arr in (("lengths", lengths), ("left_padding", left)):
        if arr is not None and (len(arr) != batch or any(x < 0 or x > lk for x in arr)):
            return EINVAL, "%s entries must be in 0..%d" % (name, lk), None, b""
    why = terms_error(h, True, None, batch, lk)
    if why:
        return EINVAL, why, None, b""
    B = batch if per_seq else 1
    keep = bytearray()
    for b in range(B):
        for i in range(lq):
            for j in range(lk):
                keep.append(1 if kept(h, True, offset, b, i, j, lk) else 0)
    desc = {"name": "keep", "dtype": "bool", "shape": [B, 1, lq, lk], "nbytes": len(keep)}
    return 0, "", desc, bytes(keep)


SDPA_CALLS = 0


def log_request(header):
    if MODE in ("log", "terms"):
        with open(STATE, "a") as f:
            f.write(json.dumps({k: v for k, v in header.items() if k != "tensors"}) + "\n")


def serve_sdpa(header, tensor_list):
    global SDPA_CALLS
    SDPA_CALLS += 1
    if MODE == "chatty":
        log("Traceback (most recent call last):")
        print('  File "kernel.py", line %d, in sdpa' % SDPA_CALLS, file=sys.stderr)
        print("UserWarning: sdpa #%d recompiled" % SDPA_CALLS, file=sys.stderr, flush=True)
    if MODE == "fork_die":
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        log("dying in the middle of sdpa, a child holding stdout")
        os._exit(3)
    if MODE == "die" or (MODE == "die_once" and STATE and not os.path.exists(STATE)):
        if MODE == "die_once":
            open(STATE, "w").close()
        log("dying in the middle of sdpa")
        os._exit(3)
    tensors = read_payloads(tensor_list)
    log_request(header)
    if MODE in ("stride0", "stride0wire"):
        with open(STATE, "a") as f:
            f.write(json.dumps(tensor_list) + "\n")
    if MODE == "pid":
        error(EBACKEND, "adapter pid %d" % os.getpid())
        return
    if MODE == "inexpressible":
        error(EINEXPRESSIBLE, "bad_adapter cannot write this sdpa input in its API")
        return
    if MODE == "hang":
        log("hanging in sdpa")
        while True:
            time.sleep(3600)
    if MODE == "garbage":
        out.write(b"this is not json\n")
        out.flush()
        return
    t0 = time.perf_counter()
    status, text, desc, payload = sdpa(header, tensors)
    seconds = time.perf_counter() - t0
    if MODE == "long_error":
        status, text = status or EBACKEND, LONG_ERROR
    if status != 0:
        error(status, text)
        return
    reply = {"status": 0, "tensors": [desc]}
    if MODE in ("timed", "chatty"):
        reply["seconds"] = seconds
    if MODE == "bad_seconds":
        reply["seconds"] = json.loads(STATE)
    if MODE == "bad_strides":
        desc["strides"] = json.loads(STATE)
    if MODE == "badnbytes":
        desc["nbytes"] -= 4
        payload = payload[:-4]
    if MODE == "stdout_noise":
        out.write(b"loading weights...\n")
    if MODE == "short_payload":
        send(reply, payload[:-1])
        log("sent %d of %d payload bytes, hanging" % (len(payload) - 1, len(payload)))
        while True:
            time.sleep(3600)
    send(reply, payload)


def main():
    pids = os.environ.get("BAD_ADAPTER_PIDS")
    if pids:
        with open(pids, "a") as f:
            f.write("%d\n" % os.getpid())
    if MODE == "chatty":
        log("started, pid %d" % os.getpid())
    if os.environ.get("ATTNCONF_PROTOCOL") != "1":
        log("ATTNCONF_PROTOCOL is not 1")
        return 4
    while True:
        header, tensor_list = read_request()
        if header is None:
            return 0
        op = header.get("op")
        if op == "hello":
            hello(header)
            if MODE == "close_stdin":
                os.close(0)
                log("closed stdin, exiting")
                return 0
        elif op == "sdpa":
            serve_sdpa(header, tensor_list)
        elif op == "build_mask" and MODE == "inexpressible":
            error(EINEXPRESSIBLE, "bad_adapter cannot write these mask parameters in its API")
        elif op == "build_mask":
            log_request(header)
            status, text, desc, payload = build_mask(header)
            if status != 0:
                error(status, text)
            else:
                send({"status": 0, "tensors": [desc]}, payload)
        elif op == "close":
            return 0
        else:
            read_payloads(tensor_list)
            error(ENOTSUP, "op %s is not supported" % op)


if __name__ == "__main__":
    sys.exit(main())
