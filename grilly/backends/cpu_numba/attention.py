"""CPU kernels of fused attention: ``attention`` (softmax(q k^T * scale + bias) v and the row
logsumexp) and ``attention_backward`` (the three gradients), FlashAttention-2 style
(docs/kernels/attention.md).

Queries run in blocks of BQ (backward: BQB) rows against keys in blocks of BK with an online
softmax, so the largest score array held is BQB x BK per thread; the GEMMs are microgemm's,
the exps vmath's. The forward runs one task per (batch, head, query block), the backward one
per (batch, head) (its key and value gradients gather over every query block). Scores of a
fully masked row are -inf: its output is NaN and its logsumexp -inf, and it adds nothing to
any gradient. Every array is typed with the 'A' layout and compiled once per dtype, whatever
strides a caller's views have.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit, types

from .microgemm import mgemm
from .pool import pool
from .reduce_ops import fmaxnum
from .vmath import vexp

# query rows and keys per block (the backward's query blocks larger: its dK and dV GEMMs take
# the block's rows as their K; 64 -> 256 took the encoder shape's backward from 38 to 31 ms)
BQ, BK = 128, 256
BQB = 256

_o = dict(cache=True, nogil=True, error_model="numpy")
_fm = dict(_o, fastmath={"reassoc", "contract"})


@njit(inline="always", **_fm)
def _scores(q, k, bias, has_bias, causal, scale, i0, j0, s, w):
    """s[:, :w] = q k^T * scale (+ bias) for query rows i0.. and keys j0..j0+w, -inf past the
    causal diagonal (key j > query i). ``s`` is C-contiguous: the row loops run over s[r], which
    LLVM vectorizes (a strided view's rows it does not)."""
    rows = q.shape[0]
    mgemm(False, True, scale, q, k, 0.0, s[:rows, :w])
    for r in range(rows):
        sr = s[r]
        if has_bias:
            br = bias[r]
            for c in range(w):
                sr[c] += br[c]
        if causal:
            for c in range(max(i0 + r + 1 - j0, 0), w):
                sr[c] = -np.inf


@njit(inline="always", **_fm)
def _fwd_block(q, k, v, bias, drop, has_bias, has_drop, causal, scale, out, lse, i0):
    """One query block: out rows and their logsumexp."""
    rows, ev = out.shape
    S = k.shape[0]
    dt = q.dtype.type
    s = np.empty((rows, BK), q.dtype)
    acc = np.zeros((rows, ev), q.dtype)[:, :]   # sliced: 'A', as mgemm's other operands
    m = np.full(rows, -np.inf, q.dtype)
    den = np.zeros(rows, q.dtype)
    jmax = min(S, i0 + rows) if causal else S
    for j0 in range(0, jmax, BK):
        j1 = min(j0 + BK, jmax)
        w = j1 - j0
        _scores(q, k[j0:j1], bias[:, j0:j1], has_bias, causal, scale, i0, j0, s, w)
        for r in range(rows):
            sr = s[r]
            mx = m[r]
            for c in range(w):     # a NaN score is skipped here but reaches den through exp
                mx = fmaxnum(mx, sr[c])
            if mx == -np.inf:       # nothing visible yet in this row
                for c in range(w):
                    sr[c] = 0
                continue
            alpha = vexp(dt(m[r] - mx))
            m[r] = mx
            t = dt(0)
            for c in range(w):
                e = vexp(dt(sr[c] - mx))
                sr[c] = e
                t += e
            den[r] = den[r] * alpha + t
            if alpha != 1:
                for e in range(ev):
                    acc[r, e] *= alpha
            if has_drop:
                dr = drop[r]
                for c in range(w):
                    sr[c] *= dr[j0 + c]
        mgemm(False, False, 1.0, s[:, :w], v[j0:j1], 1.0, acc)
    for r in range(rows):
        for e in range(ev):
            out[r, e] = acc[r, e] / den[r]
        lse[r] = m[r] + math.log(den[r]) if den[r] > 0 else -np.inf


def _fwd(t0, step, q, k, v, bias, drop, has_bias, has_drop, causal, scale, out, lse):
    N, H, L = q.shape[0], q.shape[1], q.shape[2]
    nq = (L + BQ - 1) // BQ
    for t in range(t0, N * H * nq, step):
        n, h, b = t // (H * nq), (t // nq) % H, t % nq
        i0 = b * BQ
        i1 = min(i0 + BQ, L)
        _fwd_block(q[n, h, i0:i1], k[n, h], v[n, h], bias[n, h, i0:i1], drop[n, h, i0:i1],
                   has_bias, has_drop, causal, scale, out[n, h, i0:i1], lse[n, h, i0:i1], i0)


@njit(inline="always", **_fm)
def _bwd_head(g, q, k, v, bias, drop, out, lse, has_bias, has_drop, causal, scale,
              dq, dk, dv):
    """The gradients of one (batch, head): dq, dk, dv are zeroed here and accumulated."""
    L, S = q.shape[0], k.shape[0]
    dt = q.dtype.type
    dq[:] = 0
    dk[:] = 0
    dv[:] = 0
    d = np.zeros(L, q.dtype)       # rowsum(g * out); 0 on fully masked rows
    for i in range(L):
        if lse[i] != -np.inf:
            t = dt(0)
            for e in range(out.shape[1]):
                t += g[i, e] * out[i, e]
            d[i] = t
    s = np.empty((BQB, BK), q.dtype)
    dp = np.empty((BQB, BK), q.dtype)
    for i0 in range(0, L, BQB):
        i1 = min(i0 + BQB, L)
        rows = i1 - i0
        jmax = min(S, i1) if causal else S
        for j0 in range(0, jmax, BK):
            j1 = min(j0 + BK, jmax)
            w = j1 - j0
            sb, pb = s[:rows, :w], dp[:rows, :w]
            _scores(q[i0:i1], k[j0:j1], bias[i0:i1, j0:j1], has_bias, causal, scale, i0, j0, s, w)
            mgemm(False, True, 1.0, g[i0:i1], v[j0:j1], 0.0, pb)   # dP = g v^T
            for r in range(rows):
                sr, pr = s[r], dp[r]
                ls = lse[i0 + r]
                if ls == -np.inf:
                    for c in range(w):
                        sr[c] = 0
                        pr[c] = 0
                    continue
                dr = d[i0 + r]
                if has_drop:
                    mr = drop[i0 + r]
                    for c in range(w):
                        p = vexp(dt(sr[c] - ls))
                        mk = mr[j0 + c]
                        sr[c] = p * mk                      # the kept probabilities
                        pr[c] = p * (pr[c] * mk - dr)       # dS
                else:
                    for c in range(w):
                        p = vexp(dt(sr[c] - ls))
                        sr[c] = p
                        pr[c] = p * (pr[c] - dr)
            mgemm(True, False, 1.0, sb, g[i0:i1], 1.0, dv[j0:j1])          # dV += P^T g
            mgemm(False, False, scale, pb, k[j0:j1], 1.0, dq[i0:i1])       # dQ += dS k s
            mgemm(True, False, scale, pb, q[i0:i1], 1.0, dk[j0:j1])        # dK += dS^T q s


def _bwd(t0, step, g, q, k, v, bias, drop, out, lse, has_bias, has_drop, causal, scale, dq, dk,
         dv):
    N, H = q.shape[0], q.shape[1]
    for t in range(t0, N * H, step):
        n, h = t // H, t % H
        _bwd_head(g[n, h], q[n, h], k[n, h], v[n, h], bias[n, h], drop[n, h], out[n, h],
                  lse[n, h], has_bias, has_drop, causal, scale, dq[n, h], dk[n, h], dv[n, h])


# every array argument is typed 'A' (any strides; bias and drop read-only broadcast views): one
# compiled body per dtype, and one per dispatcher, so an unused dtype is never compiled
def _sig(nb, bwd: bool) -> tuple:
    a4, a3 = types.Array(nb, 4, "A"), types.Array(nb, 3, "A")
    r4 = types.Array(nb, 4, "A", readonly=True)
    f, b, i = types.float64, types.boolean, types.int64
    if bwd:
        return (i, i, a4, a4, a4, a4, r4, r4, a4, a3, b, b, b, f, a4, a4, a4)
    return (i, i, a4, a4, a4, r4, r4, b, b, b, f, a4, a3)


_entry: dict = {}


def _compiled(pyfn, bwd: bool, dtype: np.dtype):
    """``pyfn``'s dispatcher for ``dtype``, its one body compiled (or loaded from the cache) and
    compiling switched off, so arrays of any layout convert to it instead of compiling more."""
    key = (pyfn, dtype)
    fn = _entry.get(key)
    if fn is None:
        fn = njit(**_fm)(pyfn)   # the inlined row loops need its reassociation
        fn.compile(_sig(types.float32 if dtype == np.float32 else types.float64, bwd))
        fn.disable_compile()
        _entry[key] = fn
    return fn


_workers: list = []   # [executor, the pid that made it]: a forked child makes its own


def _spread(fn, tasks: int, work: float, *args) -> None:
    """``fn(t0, step, *args)`` over ``tasks`` interleaved tasks on up to numba.get_num_threads()
    threads (the kernels release the GIL): a serial Numba body compiles in half the time of a
    prange one holding the same GEMMs, and interleaving balances causal masks. ``work`` (a
    multiply-add count) below a million runs on the calling thread alone."""
    nt = min(numba.get_num_threads(), tasks) if work >= 1e6 else 1
    if nt <= 1:
        fn(0, 1, *args)
        return
    if not _workers or _workers[1] != os.getpid() or _workers[0]._max_workers < nt - 1:
        _workers[:] = [ThreadPoolExecutor(nt - 1, thread_name_prefix="grilly-attention"),
                       os.getpid()]
    futs = [_workers[0].submit(fn, i, nt, *args) for i in range(1, nt)]
    fn(0, nt, *args)
    for f in futs:
        f.result()


def _w(a):
    """``a``, copied where it is read-only (the compiled bodies take writable views, so all
    their GEMMs share one microgemm specialization)."""
    return a if a.flags.writeable else np.array(a)


def _full(a, shape, dt):
    """``a`` broadcast to ``shape`` (a view), or a one-element stand-in when it is None."""
    if a is None:
        return np.broadcast_to(np.zeros((1, 1, 1, 1), dt), shape)
    return np.broadcast_to(a, shape)


def attention(q, k, v, bias, drop, causal, scale, block):
    """(out (N, H, L, Ev), lse (N, H, L)) of q (N, H, L, E), k (N, H, S, E), v (N, H, S, Ev),
    an additive bias broadcastable to (N, H, L, S) or None, a dropout multiplier (N, H, L, S)
    or None; ``block`` (the composition's key block) is not needed here."""
    q, k, v = _w(q), _w(k), _w(v)
    N, H, L, _ = q.shape
    S, ev = k.shape[2], v.shape[3]
    out = pool.empty((N, H, L, ev), q.dtype)
    lse = pool.empty((N, H, L), q.dtype)
    if out.size == 0:
        lse[...] = -np.inf
        return out, lse
    _spread(_compiled(_fwd, False, q.dtype), N * H * -(-L // BQ), N * H * L * S * (q.shape[3] + ev),
            q, k, v, _full(bias, (N, H, L, S), q.dtype), _full(drop, (N, H, L, S), q.dtype),
            bias is not None, drop is not None, bool(causal), float(scale), out, lse)
    return out, lse


def attention_backward(g, q, k, v, bias, drop, out, lse, causal, scale, block, need):
    """(dq, dk, dv) of ``attention`` for the output gradient g, None where ``need`` says no
    (the three come out of one pass, so all are computed)."""
    g, q, k, v, out, lse = (_w(a) for a in (g, q, k, v, out, lse))
    N, H, L, _ = q.shape
    S = k.shape[2]
    dq = pool.empty(q.shape, q.dtype)
    dk = pool.empty(k.shape, q.dtype)
    dv = pool.empty(v.shape, q.dtype)
    if dq.size or dk.size or dv.size:
        _spread(_compiled(_bwd, True, q.dtype), N * H, N * H * L * S * 2 * (q.shape[3] + v.shape[3]),
                g, q, k, v, _full(bias, (N, H, L, S), q.dtype), _full(drop, (N, H, L, S), q.dtype),
                out, lse, bias is not None, drop is not None, bool(causal), float(scale), dq, dk,
                dv)
    return tuple(a if n else None for a, n in zip((dq, dk, dv), need))


KERNELS: dict = {"attention": attention, "attention_backward": attention_backward}
