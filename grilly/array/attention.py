"""Fused attention beyond the Array API standard, used by grilly.nn.functional: ``attention``
(softmax(q k^T * scale + bias) v, with the row logsumexp) and ``attention_backward`` (the
gradients of q, k and v), one kernel each way (docs/kernels/attention.md).

Arrays are (N, H, L, E) queries, (N, H, S, E) keys, (N, H, S, Ev) values; ``bias`` is an
additive float array whose axes are each 1 or full (N, H, L, S) (-inf masks), ``drop`` a
dropout multiplier of shape (N, H, L, S) (0 or 1/(1-p)) applied to the probabilities,
``causal`` masks key j > query i. Not star-imported into the grilly namespace. A device whose
backend lacks the kernels, an array whose dtype they do not take (float32/float64, and float16
where the kernel declares ``takes_float16``; other kernels run float16 arrays in their float32
variant on float32 copies, each result rounded back once), or head dims above a kernel's
declared ``max_features``, gets the same result composed from namespace ops: FlashAttention-2
over key blocks of ``block``, so no (L, S) array is held beyond one block of scores (the
dropout multiplier aside); float16 arrays are composed on float32 copies too, each result
rounded once.

For float16 q, k and v, ``lse`` is float32 on every path (``lse_dtype``): the backward's
exp(s - lse) would otherwise see it off by float16's rounding (up to 2^-11 relative, which for
an lse of 30 is 0.015: p off by 1.5%), and ``attention_backward`` takes it as float32.
"""
from __future__ import annotations

from . import core
from . import dispatch as _dispatch
from . import dtypes as dt
from .array import Array

__all__ = ["attention", "attention_backward"]

_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)
# float16 and bfloat16 (autocast's attention): a kernel declaring takes_float16 /
# takes_bfloat16 takes the arrays as they are (float32 arithmetic, lse float32); others run
# their float32 variant on float32 copies. Either way its exps and sums are float32, as torch's
# autocast computes them, instead of the blockwise composition
_WIDENED = frozenset({"float16", "bfloat16"})


def lse_dtype(dtype):
    """The dtype of attention's lse for q of ``dtype``: float32 for float16 and bfloat16, else
    ``dtype``."""
    return dt.float32 if dtype.name in _WIDENED else dtype


def _kernel(dev, op: str, q: Array, v: Array):
    """The device's kernel for ``op`` where it takes these arrays, else None (compose): the
    dtypes of the contract (float16 too: as it is, or widened by _call), and head dims up to
    the kernel's ``max_features`` where it declares one (the Vulkan kernel holds a row's
    features in registers)."""
    kern = dev.kernels.get(op)
    name = q._dtype.name
    if kern is None or (name not in _DTYPES and name not in _WIDENED):
        return None
    limit = getattr(kern, "max_features", None)
    return None if limit is not None and max(q.shape[3], v.shape[3]) > limit else kern


def _call(kern, q: Array, arrays: tuple, args: tuple, lse_at: int = -1) -> tuple:
    """``kern`` over the arrays' buffers (None kept; float16 ones as float32 copies unless the
    kernel declares takes_float16), its results as Arrays of q's dtype (a float32 result
    rounded once), but result ``lse_at`` (lse) of lse_dtype's."""
    dev = q._device
    native = q._dtype.name not in _WIDENED or core.kernel_takes(kern, q._dtype, _DTYPES)
    wide = q._dtype if native else dt.float32
    # (lse, float32 for float16 q, is passed as it is)
    res = kern(*(None if a is None else core.astype_buf(a, wide) if a._dtype is q._dtype
                 else a._buf for a in arrays), *args)
    out = []
    for i, b in enumerate(res):
        if b is None or i == lse_at:
            out.append(None if b is None else core.wrap(b, lse_dtype(q._dtype), dev))
            continue
        r = core.wrap(b, wide, dev)
        if wide is not q._dtype:
            r = core.wrap(core.astype_buf(r, q._dtype), q._dtype, dev)
        out.append(r)
    return tuple(out)


def _check(op: str, q: Array, k: Array, v: Array, bias, drop, scale, block: int) -> None:
    for name, a in (("q", q), ("k", k), ("v", v)):
        core.check_array(a, op, name)
        if a.ndim != 4 or a._dtype is not q._dtype or q._dtype.kind != "f":
            raise TypeError(f"{op}: q, k and v must be 4-D (N, H, length, features) arrays of one "
                            f"real floating dtype, got {name} {a._dtype.name} {a.shape}")
    n, h, lq, e = q.shape
    s = k.shape[2]
    if k.shape != (n, h, s, e) or v.shape[:3] != (n, h, s):
        raise ValueError(f"{op}: expected q (N, H, L, E), k (N, H, S, E) and v (N, H, S, Ev), "
                         f"got {q.shape}, {k.shape} and {v.shape}")
    full = (n, h, lq, s)
    for name, a, bcast in (("bias", bias, True), ("drop", drop, False)):
        if a is None:
            continue
        core.check_array(a, op, name)
        ok = a.ndim == 4 and all(d == f or (bcast and d == 1) for d, f in zip(a.shape, full))
        if a._dtype is not q._dtype or not ok:
            raise ValueError(f"{op}: {name} must be {q._dtype.name} of shape {full}"
                             f"{' (or 1 on any axis)' if bcast else ''}, got {a._dtype.name} "
                             f"{a.shape}")
    if not isinstance(block, int) or isinstance(block, bool) or block < 1:
        raise ValueError(f"{op}: block must be a positive int, got {block!r}")
    core.common_device(op, q, k, v, *(a for a in (bias, drop) if a is not None))


def attention(q: Array, k: Array, v: Array, bias: Array | None = None, drop: Array | None = None,
              *, causal: bool = False, scale: float, block: int = 128) -> tuple:
    """(out (N, H, L, Ev), lse (N, H, L)): softmax(q k^T * scale + bias) (times ``drop``) v and
    each row's logsumexp (-inf, with a NaN output row, where every key is masked; float32 for
    float16 q)."""
    _check("attention", q, k, v, bias, drop, scale, block)
    args = (bool(causal), float(scale), int(block))
    dev = q._device
    kern = _kernel(dev, "attention", q, v)
    if kern is not None:
        return _call(kern, q, (q, k, v, bias, drop), args, lse_at=1)
    # float16: float32 arithmetic on float32 copies, each result rounded once (as a kernel's),
    # so lse keeps float32's accuracy on this path too
    out, lse = core.composite(dev, "attention")(dev, *_wide(q, (q, k, v, bias, drop)), *args)
    return _to(out, q._dtype), _to(lse, lse_dtype(q._dtype))


def attention_backward(g: Array, q: Array, k: Array, v: Array, bias: Array | None,
                       drop: Array | None, out: Array, lse: Array, *, causal: bool = False,
                       scale: float, block: int = 128, need: tuple = (True, True, True)) -> tuple:
    """(dq, dk, dv) of ``attention`` for the output gradient g, None where ``need`` (three
    bools) does not ask; fully masked rows give nothing. ``lse`` is attention's (float32 for
    float16 q)."""
    op = "attention_backward"
    _check(op, q, k, v, bias, drop, scale, block)
    for name, a, shape, want in (("g", g, out.shape, q._dtype),
                                 ("out", out, q.shape[:3] + v.shape[3:], q._dtype),
                                 ("lse", lse, q.shape[:3], lse_dtype(q._dtype))):
        core.check_array(a, op, name)
        if a._dtype is not want or a.shape != shape:
            raise ValueError(f"{op}: {name} must be {want.name} of shape {shape}, got "
                             f"{a._dtype.name} {a.shape}")
    core.common_device(op, q, g, out, lse)
    args = (bool(causal), float(scale), int(block), tuple(bool(x) for x in need))
    dev = q._device
    kern = _kernel(dev, op, q, v)
    if kern is not None:
        return _call(kern, q, (g, q, k, v, bias, drop, out, lse), args)
    ops = _wide(q, (g, q, k, v, bias, drop, out))
    lse = _to(lse, ops[1]._dtype)   # (float32 already for float16 q)
    return _as(q, core.composite(dev, op)(dev, *ops, lse, *args))


def _wide(q: Array, arrays: tuple) -> tuple:
    """``arrays`` (None kept) as the composition computes them: float32 copies for float16 q,
    else as they are."""
    if q._dtype.name not in _WIDENED:
        return arrays
    return tuple(None if a is None else _to(a, dt.float32) for a in arrays)


def _as(q: Array, results: tuple) -> tuple:
    """The composition's results in q's dtype (float16 q: computed on float32 copies)."""
    return tuple(None if r is None else _to(r, q._dtype) for r in results)


def _to(r: Array, dtype) -> Array:
    """``r`` in ``dtype`` (itself when it is)."""
    return r if r._dtype is dtype else _dispatch.ns.astype(r, dtype)


# ---- the composition: FlashAttention-2 over key blocks ---------------------------------------
def _blocks(lq: int, s: int, causal: bool, block: int):
    """The (j0, j1) key blocks some query can see."""
    end = min(s, lq) if causal else s
    return [(j0, min(j0 + block, end)) for j0 in range(0, end, block)]


def _scores(qs: Array, k: Array, bias, causal: bool, j0: int, j1: int) -> Array:
    """The biased scores (N, H, L, j1 - j0) of key block j0:j1 (qs: q already scaled)."""
    gp = _dispatch.ns
    s = gp.matmul(qs, gp.matrix_transpose(k[..., j0:j1, :]))
    if bias is not None:
        s = s + (bias if bias.shape[-1] == 1 else bias[..., j0:j1])
    if causal:
        r = gp.expand_dims(gp.arange(qs.shape[-2], device=qs.device), axis=1)
        c = gp.expand_dims(gp.arange(j0, j1, device=qs.device), axis=0)
        s = gp.where(c <= r, s, gp.asarray(-float("inf"), dtype=s.dtype, device=s.device))
    return s


def composed_attention(q: Array, k: Array, v: Array, bias, drop, causal: bool, scale: float,
                       block: int) -> tuple:
    """An online softmax over key blocks: a running row maximum m, denominator den and output."""
    gp = _dispatch.ns
    qs = q * scale
    n, h, lq, _ = q.shape
    ninf = gp.asarray(-float("inf"), dtype=q.dtype, device=q.device)
    zero = gp.zeros((), dtype=q.dtype, device=q.device)
    m = gp.full((n, h, lq, 1), -float("inf"), dtype=q.dtype, device=q.device)
    den = gp.zeros((n, h, lq, 1), dtype=q.dtype, device=q.device)
    acc = gp.zeros((n, h, lq, v.shape[3]), dtype=q.dtype, device=q.device)
    for j0, j1 in _blocks(lq, k.shape[2], causal, block):
        s = _scores(qs, k, bias, causal, j0, j1)
        m_new = gp.maximum(m, gp.max(s, axis=-1, keepdims=True))
        seen = m_new != ninf           # rows with a visible key so far: exp needs a finite max
        mb = gp.where(seen, m_new, zero)
        p = gp.exp(s - mb)
        alpha = gp.where(seen, gp.exp(m - mb), zero)
        den = den * alpha + gp.sum(p, axis=-1, keepdims=True)
        if drop is not None:
            p = p * drop[..., j0:j1]
        acc = acc * alpha + gp.matmul(p, v[..., j0:j1, :])
        m = m_new
    out = acc / den                    # 0 / 0: NaN on fully masked rows
    lse = gp.where(den > 0, m + gp.log(gp.where(den > 0, den, zero + 1)), ninf)
    return out, gp.reshape(lse, (n, h, lq))


def composed_attention_backward(g: Array, q: Array, k: Array, v: Array, bias, drop, out: Array,
                                lse: Array, causal: bool, scale: float, block: int,
                                need: tuple) -> tuple:
    """Per key block: P = exp(S - lse), dV = (P drop)^T g, dS = P (g v^T drop - rowsum(g out)),
    dQ += dS k scale, dK = dS^T q scale."""
    gp = _dispatch.ns
    n, h, lq, _ = q.shape
    sk = k.shape[2]
    zero = gp.zeros((), dtype=q.dtype, device=q.device)
    live = gp.expand_dims(lse != -float("inf"), axis=-1)
    g = gp.where(live, g, zero)
    ls = gp.where(live, gp.expand_dims(lse, axis=-1), zero)
    d = gp.sum(g * gp.where(live, out, zero), axis=-1, keepdims=True)
    qs = q * scale
    dq = gp.zeros(q.shape, dtype=q.dtype, device=q.device)
    dk = gp.zeros(k.shape, dtype=q.dtype, device=q.device)
    dv = gp.zeros(v.shape, dtype=q.dtype, device=q.device)
    dks, dvs, end = [], [], 0
    for j0, j1 in _blocks(lq, sk, causal, block):
        p = gp.where(live, gp.exp(_scores(qs, k, bias, causal, j0, j1) - ls), zero)
        pd = p if drop is None else p * drop[..., j0:j1]
        dvs.append(gp.matmul(gp.matrix_transpose(pd), g))
        dp = gp.matmul(g, gp.matrix_transpose(v[..., j0:j1, :]))
        ds = p * ((dp if drop is None else dp * drop[..., j0:j1]) - d)
        dq = dq + gp.matmul(ds, k[..., j0:j1, :])
        dks.append(gp.matmul(gp.matrix_transpose(ds), qs))
        end = j1
    if end < sk:                       # keys no query sees (causal): zero gradients
        dks.append(dk[..., end:, :])
        dvs.append(dv[..., end:, :])
    if dks:
        dk, dv = gp.concat(dks, axis=2), gp.concat(dvs, axis=2)
    return (dq * scale if need[0] else None, dk if need[1] else None, dv if need[2] else None)


# through the dispatcher (as "attention.<name>"): bfloat16 arrays compute in float32 there
_dispatch.export(globals(), "attention.")
