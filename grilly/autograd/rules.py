"""VJP rules, one per differentiable namespace function, written with namespace functions only.

A rule is ``rule(g, out, *args, **kw)``: ``g`` the gradient of the output (a tuple of them for
ops returning several arrays), ``out`` the output, ``args``/``kw`` the call's arguments. It
returns one gradient per positional argument (a list for a sequence argument, None where there
is none). Rules may return gradients in the broadcast shape or a wider dtype: the tape sums
them back over broadcast axes and casts them to the input's dtype.
"""
from __future__ import annotations

import math

from numpy.linalg import LinAlgError   # grilly.linalg's error (NumPy's class)

from ..array import dispatch
from ..array import segments as _segments
from ..array.array import Array
from ..array.core import normalize_axes, normalize_axis

__all__ = ["RULES", "rule_names"]


N = dispatch.ns   # the namespace's functions, looked up at call time


def _rg(a) -> bool:
    return isinstance(a, Array) and a.requires_grad


def _cj(a):
    if isinstance(a, complex):   # a Python scalar operand (x * 1j)
        return a.conjugate()
    return N.conj(a) if isinstance(a, Array) and a._dtype.kind == "c" else a


def _nonzero_or_one(a):
    """``a`` with its zeros replaced by ones (a safe denominator where the numerator is 0)."""
    return N.where(N.equal(a, 0), N.ones((), dtype=a.dtype, device=a.device), a)


def _zeros(g, *args):
    return tuple(N.zeros_like(g) if _rg(a) else None for a in args)


# ---- elementwise: d(out)/dx as a function of (x, out) -----------------------------------------
_UNARY = {
    "acos": lambda x, o: -1.0 / N.sqrt(1.0 - x * x),
    "acosh": lambda x, o: 1.0 / N.sqrt(x * x - 1.0),
    "asin": lambda x, o: 1.0 / N.sqrt(1.0 - x * x),
    "asinh": lambda x, o: 1.0 / N.sqrt(x * x + 1.0),
    "atan": lambda x, o: 1.0 / (1.0 + x * x),
    "atanh": lambda x, o: 1.0 / (1.0 - x * x),
    "cos": lambda x, o: -N.sin(x), "cosh": lambda x, o: N.sinh(x),
    "sin": lambda x, o: N.cos(x), "sinh": lambda x, o: N.cosh(x),
    "tan": lambda x, o: 1.0 + o * o, "tanh": lambda x, o: 1.0 - o * o,
    "exp": lambda x, o: o, "expm1": lambda x, o: o + 1.0,
    "log": lambda x, o: 1.0 / x, "log1p": lambda x, o: 1.0 / (1.0 + x),
    "log2": lambda x, o: 1.0 / (x * math.log(2.0)),
    "log10": lambda x, o: 1.0 / (x * math.log(10.0)),
    "sqrt": lambda x, o: 0.5 / o, "reciprocal": lambda x, o: -(o * o),
    "square": lambda x, o: 2.0 * x,
}


def _unary_rule(deriv):
    def rule(g, out, x):
        return (g * _cj(deriv(x, out)),)
    return rule


def _abs(g, out, x):
    # not holomorphic: for complex x the gradient is g * x/|x| (torch's sgn), not its conjugate
    return (g * N.sign(x),)


def _negative(g, out, x):
    return (-g,)


def _positive(g, out, x):
    return (g,)


def _conj(g, out, x):
    return (N.conj(g),)


def _real(g, out, x):
    return (g,)


def _imag(g, out, x):
    # imag(x) = (x - conj(x)) / 2i: a real g flows to the imaginary part (0 for real x)
    return (g * 1j,)


def _zero_unary(g, out, x, *a, **k):   # (round's decimals)
    return (N.zeros_like(g),)


def _sign(g, out, x):
    # piecewise constant for real x; for complex x, sgn(x) = x/|x| is differentiable (abs's
    # second derivative goes through it): PyTorch's sgn_backward, (g - sgn Re(g conj(sgn)))/|x|,
    # 0 where x == 0
    if x._dtype.kind != "c":
        return (N.zeros_like(g),)
    a = N.abs(x)
    gx = (g - out * N.real(g * N.conj(out))) / _nonzero_or_one(a)
    return (N.where(N.equal(a, 0), N.zeros((), dtype=gx.dtype, device=gx.device), gx),)


# binary: (d/dx1, d/dx2) each computed only when that argument requires grad
def _add(g, out, x1, x2):
    return (g if _rg(x1) else None, g if _rg(x2) else None)


def _subtract(g, out, x1, x2):
    return (g if _rg(x1) else None, -g if _rg(x2) else None)


def _multiply(g, out, x1, x2):
    return (g * _cj(x2) if _rg(x1) else None, g * _cj(x1) if _rg(x2) else None)


def _divide(g, out, x1, x2):
    if not isinstance(x1, Array) and x1 != 0:
        # c / x2 from the output alone, as torch's reciprocal: x2 may be written in place after
        return (None, -g * _cj(out * out / x1))
    gx1 = g / _cj(x2) if _rg(x1) or _rg(x2) else None
    return (gx1 if _rg(x1) else None, -gx1 * _cj(out) if _rg(x2) else None)


def _pow(g, out, x1, x2):
    gx1 = gx2 = None
    if _rg(x1):
        # x ** 0 has derivative 0 (torch's too), where 0 * x ** -1 would be NaN at x = 0: the
        # third derivative of x ** 2, say
        if isinstance(x2, Array):
            gx1 = g * _cj(N.where(x2 == 0, 0.0, x2 * x1 ** (x2 - 1)))
        else:
            gx1 = N.zeros_like(g) if x2 == 0 else g * _cj(x2 * x1 ** (x2 - 1))
    if _rg(x2):
        # x1 == 0 contributes nothing (the limit of out * log(x1) where out -> 0)
        safe = N.where(x1 == 0, N.ones_like(x1), x1) if isinstance(x1, Array) else x1
        lg = N.log(safe) if isinstance(safe, Array) else math.log(safe)
        gx2 = g * _cj(out * lg)
    return (gx1, gx2)


def _atan2(g, out, x1, x2):
    d = x1 * x1 + x2 * x2
    return (g * x2 / d if _rg(x1) else None, -g * x1 / d if _rg(x2) else None)


def _hypot(g, out, x1, x2):
    return (g * x1 / out if _rg(x1) else None, g * x2 / out if _rg(x2) else None)


def _logaddexp(g, out, x1, x2):
    return (g * N.exp(x1 - out) if _rg(x1) else None, g * N.exp(x2 - out) if _rg(x2) else None)


def _extremum(pick):
    # ties split the gradient evenly, as PyTorch does
    def rule(g, out, x1, x2):
        dt = out.dtype
        w1 = N.astype(pick(x1, x2), dt) + 0.5 * N.astype(N.equal(x1, x2), dt)
        return (g * w1 if _rg(x1) else None, g * (1.0 - w1) if _rg(x2) else None)
    return rule


def _copysign(g, out, x1, x2):
    return (g * N.sign(x1) * N.sign(out) if _rg(x1) else None,
            N.zeros_like(g) if _rg(x2) else None)


def _remainder(g, out, x1, x2):
    return (g if _rg(x1) else None, -g * N.floor_divide(x1, x2) if _rg(x2) else None)


def _clip(g, out, x, min=None, max=None):
    # from x alone (clipped again), as torch's clamp: the output may be written in place after
    out = N.clip(x, min, max)
    keep = N.equal(out, x)
    if not (_rg(min) or _rg(max)):
        return (g * N.astype(keep, g.dtype),)
    # array bounds that require grad take g where they won (torch's: max where both tie)
    z = N.zeros((), dtype=g.dtype, device=g.device)
    hit_max = N.logical_and(N.logical_not(keep), N.equal(out, max)) if _rg(max) else None
    gmax = None if hit_max is None else N.where(hit_max, g, z)
    gmin = None
    if _rg(min):
        hit_min = N.logical_and(N.logical_not(keep), N.equal(out, min))
        if hit_max is not None:
            hit_min = N.logical_and(hit_min, N.logical_not(hit_max))
        gmin = N.where(hit_min, g, z)
    return (g * N.astype(keep, g.dtype), gmin, gmax)


def _where(g, out, cond, x1, x2):
    z = N.zeros((), dtype=g.dtype, device=g.device)
    return (None, N.where(cond, g, z) if _rg(x1) else None,
            N.where(cond, z, g) if _rg(x2) else None)


def _astype(g, out, x, dtype, /, *, copy=True, device=None):
    return (g if device is None else g.to_device(x.device),)


# ---- reductions --------------------------------------------------------------------------------
def _keep(g, ndim, axis, keepdims):
    """``g`` with the reduced axes put back as length-1 axes (so it broadcasts against x)."""
    if keepdims:
        return g
    axes = normalize_axes(axis, ndim, "backward")
    if not axes:
        return g
    shape = list(g.shape)
    for a in axes:
        shape.insert(a, 1)
    return N.reshape(g, tuple(shape))


def _count(x, axis) -> int:
    n = 1
    for a in normalize_axes(axis, x.ndim, "backward"):
        n *= x.shape[a]
    return n


def _sum(g, out, x, /, *, axis=None, dtype=None, keepdims=False):
    return (N.broadcast_to(_keep(g, x.ndim, axis, keepdims), x.shape),)


def _mean(g, out, x, /, *, axis=None, keepdims=False):
    return (N.broadcast_to(_keep(g, x.ndim, axis, keepdims) / _count(x, axis), x.shape),)


def _prod(g, out, x, /, *, axis=None, dtype=None, keepdims=False):
    # d/dx_i is the product of the other elements: prefix times suffix products (not out / x,
    # which is 0/0 at a zero)
    axes = normalize_axes(axis, x.ndim, "backward")
    kept = [i for i in range(x.ndim) if i not in axes]
    order = (*kept, *axes)
    xt = N.permute_dims(x, order)
    flat = N.reshape(xt, xt.shape[:len(kept)] + (-1,))
    last, n = flat.ndim - 1, flat.shape[-1]
    before = _slice(N.cumulative_prod(flat, axis=last, include_initial=True), last, 0, n)
    after = N.flip(N.cumulative_prod(N.flip(flat, axis=last), axis=last, include_initial=True),
                   axis=last)
    others = N.reshape(before * _slice(after, last, 1, None), xt.shape)
    others = N.permute_dims(others, tuple(order.index(i) for i in range(x.ndim)))
    return (_keep(g, x.ndim, axis, keepdims) * others,)


def _max_min(g, out, x, /, *, axis=None, keepdims=False):
    # ties share the gradient evenly
    mask = N.astype(N.equal(x, _keep(out, x.ndim, axis, keepdims)), g.dtype)
    n = N.sum(mask, axis=axis, keepdims=True)
    return (mask * (_keep(g, x.ndim, axis, keepdims) / n),)


def _var(g, out, x, /, *, axis=None, correction=0.0, keepdims=False):
    m = N.mean(x, axis=axis, keepdims=True)
    return (_keep(g, x.ndim, axis, keepdims) * (2.0 / (_count(x, axis) - correction)) * (x - m),)


def _std(g, out, x, /, *, axis=None, correction=0.0, keepdims=False):
    m = N.mean(x, axis=axis, keepdims=True)
    o = _keep(out, x.ndim, axis, keepdims)
    # where std is 0, x - m is too: the gradient there is 0 (PyTorch's), not 0/0
    return (_keep(g, x.ndim, axis, keepdims) * (x - m)
            / ((_count(x, axis) - correction) * _nonzero_or_one(o)),)


def _logsumexp(g, out, x, /, *, axis=None, keepdims=False):
    return (_keep(g, x.ndim, axis, keepdims) * N.exp(x - _keep(out, x.ndim, axis, keepdims)),)


def _cumulative_sum(g, out, x, /, *, axis=None, dtype=None, include_initial=False):
    ax = 0 if axis is None else normalize_axis(axis, x.ndim, "backward")
    if include_initial:
        g = _slice(g, ax, 1, None)
    r = N.flip(N.cumulative_sum(N.flip(g, axis=ax), axis=ax), axis=ax)
    return (r,)


def _slice(a, axis, start, stop):
    return a[(slice(None),) * axis + (slice(start, stop),)]


# ---- linear algebra -----------------------------------------------------------------------------
def _mT(a):
    return N.matrix_transpose(a)


def _matmul(g, out, x1, x2):
    a = N.expand_dims(x1, axis=0) if x1.ndim == 1 else x1
    b = N.expand_dims(x2, axis=-1) if x2.ndim == 1 else x2
    # (x2's axis first: for two vectors g is 0-d and becomes (1, 1))
    if x2.ndim == 1:
        g = N.expand_dims(g, axis=-1)
    if x1.ndim == 1:
        g = N.expand_dims(g, axis=-2)
    gx1 = gx2 = None
    if _rg(x1):
        gx1 = N.matmul(g, _cj(_mT(b)))
    if _rg(x2):
        gx2 = N.matmul(_cj(_mT(a)), g)
        if x2.ndim == 1:
            gx2 = N.reshape(gx2, gx2.shape[:-1])
    return (gx1, gx2)


def _vecdot(g, out, x1, x2, /, *, axis=-1):
    ge = N.expand_dims(g, axis=axis if axis < 0 else axis - max(x1.ndim, x2.ndim))
    # vecdot is sum(conj(x1) * x2): holomorphic in x2, antiholomorphic in x1
    return (_cj(ge) * x2 if _rg(x1) else None, ge * x1 if _rg(x2) else None)


def _matrix_transpose(g, out, x):
    return (_mT(g),)


def _adj(a):
    """The conjugate transpose of each matrix (the transpose of a real one)."""
    return _cj(_mT(a))


def _outer(g, out, x1, x2):
    return (N.matmul(g, _cj(x2)) if _rg(x1) else None,
            N.matmul(_mT(g), _cj(x1)) if _rg(x2) else None)


def _tensordot(g, out, x1, x2, /, *, axes=2):
    if isinstance(axes, int):
        a1 = list(range(x1.ndim - axes, x1.ndim))
        a2 = list(range(axes))
    else:
        a1 = [normalize_axis(a, x1.ndim, "backward") for a in axes[0]]
        a2 = [normalize_axis(a, x2.ndim, "backward") for a in axes[1]]
    f1 = [i for i in range(x1.ndim) if i not in a1]
    f2 = [i for i in range(x2.ndim) if i not in a2]
    n1, n2 = len(f1), len(f2)
    gx1 = gx2 = None
    if _rg(x1):
        # g (f1, f2) . x2 over f2 -> (f1, a2-order); then put the axes back in x1's order
        # x2's remaining axes come in x2's order; each stands for its partner axis of x1
        r = N.tensordot(g, _cj(x2), axes=(list(range(n1, n1 + n2)), f2))
        order = f1 + [a1[a2.index(j)] for j in sorted(a2)]
        gx1 = N.permute_dims(r, tuple(order.index(i) for i in range(x1.ndim)))
    if _rg(x2):
        r = N.tensordot(_cj(x1), g, axes=(f1, list(range(n1))))
        order = [a2[a1.index(j)] for j in sorted(a1)] + f2
        gx2 = N.permute_dims(r, tuple(order.index(i) for i in range(x2.ndim)))
    return (gx1, gx2)


def _trace(g, out, x, /, *, offset=0, dtype=None):
    n, m = x.shape[-2], x.shape[-1]
    eye = N.eye(n, m, k=offset, dtype=g.dtype, device=g.device)
    return (N.expand_dims(N.expand_dims(g, axis=-1), axis=-1) * eye,)


def _inv(g, out, x):
    ot = _cj(_mT(out))
    return (-N.matmul(N.matmul(ot, g), ot),)


def _det(g, out, x):
    ge = N.expand_dims(N.expand_dims(g, axis=-1), axis=-1)
    try:
        ginv = _cj(_mT(N.linalg.inv(x)))
    except LinAlgError:
        # a singular matrix still has a derivative, its cofactor matrix (PyTorch's too): the SVD
        # form below, taken only here as its own derivative is undefined at equal singular values
        return (ge * _det_cofactors(x),)
    return (ge * _cj(N.expand_dims(N.expand_dims(out, axis=-1), axis=-1)) * ginv,)


def _det_cofactors(x):
    """conj(cofactor matrix of x) = conj(det(U) det(Vh)) U diag(prod_{j != i} s_j) Vh, from the
    SVD, defined for singular x (no division by a singular value)."""
    u, s, vh = N.linalg.svd(x, full_matrices=False)
    before = N.cumulative_prod(s, axis=-1, include_initial=True)[..., :-1]
    after = N.flip(N.cumulative_prod(N.flip(s, axis=-1), axis=-1, include_initial=True)[..., :-1],
                   axis=-1)
    phase = _cj(N.linalg.det(u) * N.linalg.det(vh))
    return N.expand_dims(N.expand_dims(phase, axis=-1), axis=-1) * N.matmul(
        u * N.expand_dims(before * after, axis=-2), vh)


def _slogdet(g, out, x):
    gsign, glog = g
    if x._dtype.kind == "c":
        # the sign (a phase) is differentiable for complex x: PyTorch's slogdet_backward,
        # conj(glog - i imag(gsign conj(sign))) inv(x)^H, with i imag(t) = (t - conj(t)) / 2
        t = gsign * N.conj(out[0])
        glog = glog + 0.5 * (t - N.conj(t))
    ginv = _adj(N.linalg.inv(x))
    return (N.expand_dims(N.expand_dims(glog, axis=-1), axis=-1) * ginv,)


def _solve(g, out, x1, x2):
    vec = x2.ndim == 1
    gb = N.linalg.solve(_adj(x1), N.expand_dims(g, axis=-1) if vec else g)
    ga = None
    if _rg(x1):
        o = N.expand_dims(out, axis=-1) if vec else out
        ga = -N.matmul(gb, _adj(o))
    if vec:
        gb = N.reshape(gb, gb.shape[:-1])
    return (ga, gb if _rg(x2) else None)


def _cholesky(g, out, x, /, *, upper=False):
    # upper=True returned L^H, so its gradient is g^H
    low = _adj(out) if upper else out
    gl = _adj(g) if upper else g
    linv = N.linalg.inv(low)
    # PyTorch's cholesky_backward: L^-H pi*(tril(L^H gL)) L^-1, pi*(X) = (X + X^H - diag X) / 2
    # (Hermitian off the diagonal; a complex diagonal keeps its imaginary part, as PyTorch's)
    p = N.tril(N.matmul(_adj(low), gl))
    p = 0.5 * (p + _adj(N.tril(p, k=-1)))
    return (N.matmul(N.matmul(_adj(linv), p), linv),)


def _vector_norm(g, out, x, /, *, axis=None, keepdims=False, ord=2):
    # at zeros (kinks), the gradient is 0 as PyTorch's, not 0/0
    ge = _keep(g, x.ndim, axis, keepdims)
    o = _keep(out, x.ndim, axis, keepdims)
    if ord == 0:
        return (N.zeros_like(x),)   # a count of nonzeros: piecewise constant
    if ord == 2:
        return (ge * x / _nonzero_or_one(o),)
    if ord == 1:
        return (ge * N.sign(x),)
    if ord in (math.inf, -math.inf):
        mask = N.astype(N.equal(N.abs(x), o), g.dtype)
        return (ge * N.sign(x) * mask / N.sum(mask, axis=axis, keepdims=True),)
    p = float(ord)
    z = N.zeros((), dtype=g.dtype, device=g.device)
    live = N.logical_and(N.not_equal(x, 0), N.not_equal(o, 0))
    r = N.abs(_nonzero_or_one(x)) / _nonzero_or_one(o)
    return (ge * N.sign(x) * N.where(live, r ** (p - 1.0), z),)


def _matrix_norm(g, out, x, /, *, keepdims=False, ord="fro"):
    if ord != "fro":
        raise NotImplementedError(f"matrix_norm backward: ord={ord!r} is not supported (only 'fro')")
    ge = g if keepdims else N.expand_dims(N.expand_dims(g, axis=-1), axis=-1)
    o = out if keepdims else N.expand_dims(N.expand_dims(out, axis=-1), axis=-1)
    return (ge * x / _nonzero_or_one(o),)


def _eigh(g, out, x):
    w, v = out
    gw, gv = g
    vt = _adj(v)
    d = N.expand_dims(w, axis=-2) - N.expand_dims(w, axis=-1)
    n = w.shape[-1]
    eye = N.eye(n, dtype=w.dtype, device=w.device)
    f = (1.0 - eye) / (d + eye)  # 1/(w_j - w_i) off the diagonal, 0 on it
    inner = f * N.matmul(vt, gv)
    inner = inner + N.expand_dims(gw, axis=-2) * eye
    ga = N.matmul(N.matmul(v, inner), vt)
    return (0.5 * (ga + _adj(ga)),)


# ---- manipulation -------------------------------------------------------------------------------
def _reshape(g, out, x, /, shape=None, *, copy=None):
    return (N.reshape(g, x.shape),)


def _same_shape(g, out, x, *a, **k):
    return (N.reshape(g, x.shape),)


def _broadcast_to(g, out, x, /, shape=None):
    return (g,)


def _permute_dims(g, out, x, /, axes):
    axes = [normalize_axis(a, x.ndim, "backward") for a in axes]
    return (N.permute_dims(g, tuple(axes.index(i) for i in range(x.ndim))),)


def _flip(g, out, x, /, *, axis=None):
    return (N.flip(g, axis=axis),)


def _roll(g, out, x, /, shift, *, axis=None):
    neg = tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift
    return (N.roll(g, neg, axis=axis),)


def _moveaxis(g, out, x, source, destination, /):
    return (N.moveaxis(g, destination, source),)


def _concat(g, out, arrays, /, *, axis=0):
    if axis is None:
        g = N.reshape(g, (-1,))
        res, start = [], 0
        for a in arrays:
            res.append(N.reshape(g[start:start + a.size], a.shape) if _rg(a) else None)
            start += a.size
        return (res,)
    ax = normalize_axis(axis, out.ndim, "backward")
    res, start = [], 0
    for a in arrays:
        n = a.shape[ax]
        res.append(_slice(g, ax, start, start + n) if _rg(a) else None)
        start += n
    return (res,)


def _stack(g, out, arrays, /, *, axis=0, dim=None):
    ax = normalize_axis(axis if dim is None else dim, out.ndim, "backward")
    return ([g[(slice(None),) * ax + (i,)] if _rg(a) else None for i, a in enumerate(arrays)],)


def _unstack(g, out, x, /, *, axis=0):
    return (N.stack(list(g), axis=axis),)


def _broadcast_arrays(g, out, *arrays):
    return tuple(gi if _rg(a) else None for gi, a in zip(g, arrays))


def _tile(g, out, x, repetitions, /):
    reps = (repetitions,) if isinstance(repetitions, int) else tuple(repetitions)
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    xs = (1,) * (nd - x.ndim) + x.shape
    split = []
    for r, s in zip(reps, xs):
        split += [r, s]
    t = N.reshape(g, tuple(split))
    t = N.sum(t, axis=tuple(range(0, 2 * nd, 2)))
    return (N.reshape(t, x.shape),)


def _scatter_add(x, axis: int, idx, g):
    """Zeros like ``x`` plus ``g`` added at positions ``idx`` (1-D, along ``axis``; negative
    ones wrap), repeats accumulating in index order (array/segments.scatter_add_rows)."""
    n = x.shape[axis]
    idx = N.reshape(idx, (-1,))
    idx = N.where(idx < 0, idx + n, idx)
    return N.moveaxis(_segments.scatter_add_rows(n, idx, N.moveaxis(g, axis, 0)), 0, axis)


def _take(g, out, x, indices, /, *, axis=None):
    if axis is None:
        flat = N.reshape(x, (-1,))
        return (N.reshape(_scatter_add(flat, 0, indices, g), x.shape),)
    ax = normalize_axis(axis, x.ndim, "backward")
    return (_scatter_add(x, ax, indices, g),)


def _has_array_index(key) -> bool:
    ks = key if isinstance(key, tuple) else (key,)
    return any(isinstance(k, Array) and k.dtype.kind in "iu" for k in ks)


def _getitem(g, out, x, key):
    ks = key if isinstance(key, tuple) else (key,)
    arr = [i for i, k in enumerate(ks) if isinstance(k, Array) and k.dtype.kind in "iu"]
    if not arr:
        gx = N.zeros_like(x, dtype=g.dtype)
        gx[key] = g
        return (gx, None)
    if len(arr) == 1 and all(isinstance(k, slice) and k == slice(None) for i, k in enumerate(ks)
                             if i != arr[0]) and ks[arr[0]].ndim == 1 and Ellipsis not in ks:
        ax = arr[0]
        return (_scatter_add(x, ax, ks[ax], g), None)
    # general advanced index: find each output element's flat source position by indexing an
    # array of positions with the same key, then scatter-add there
    pos = N.reshape(N.arange(x.size, device=g.device), x.shape)[key]
    flat = _scatter_add(N.reshape(x, (-1,)), 0, N.reshape(pos, (-1,)), N.reshape(g, (-1,)))
    return (N.reshape(flat, x.shape), None)


def _setitem(g, out, x, key, value):
    gx = gv = None
    if _rg(x):
        gx = N.asarray(g, copy=True)
        gx[key] = 0
    if _rg(value):
        gv = g[key]
    return (gx, None, gv)


def _to_device(g, out, x, device, /, *, stream=None):
    return (g.to_device(x.device),)


# name: (rule, saves its output)
RULES: dict = {}
for _n, _d in _UNARY.items():
    RULES[_n] = (_unary_rule(_d), True)
for _n in ("ceil", "floor", "trunc", "round"):
    RULES[_n] = (_zero_unary, False)
RULES.update({
    "sign": (_sign, True),
    "abs": (_abs, False),
    "negative": (_negative, False), "positive": (_positive, False), "conj": (_conj, False),
    "real": (_real, False), "imag": (_imag, False),
    "add": (_add, False), "subtract": (_subtract, False), "multiply": (_multiply, False),
    "divide": (_divide, True), "pow": (_pow, True), "atan2": (_atan2, False),
    "hypot": (_hypot, True), "logaddexp": (_logaddexp, True),
    "maximum": (_extremum(lambda a, b: N.greater(a, b)), True),
    "minimum": (_extremum(lambda a, b: N.less(a, b)), True),
    "copysign": (_copysign, True), "remainder": (_remainder, False),
    "floor_divide": (lambda g, out, x1, x2: _zeros(g, x1, x2), False),
    "clip": (_clip, False), "where": (_where, False), "astype": (_astype, False),
    "sum": (_sum, False), "mean": (_mean, False), "prod": (_prod, True),
    "max": (_max_min, True), "min": (_max_min, True), "var": (_var, False),
    "std": (_std, True), "logsumexp": (_logsumexp, True),
    "cumulative_sum": (_cumulative_sum, False),
    "matmul": (_matmul, False), "vecdot": (_vecdot, False),
    "matrix_transpose": (_matrix_transpose, False), "tensordot": (_tensordot, False),
    "reshape": (_reshape, False), "expand_dims": (_same_shape, False),
    "squeeze": (_same_shape, False), "broadcast_to": (_broadcast_to, False),
    "permute_dims": (_permute_dims, False), "flip": (_flip, False), "roll": (_roll, False),
    "moveaxis": (_moveaxis, False), "concat": (_concat, True), "stack": (_stack, True),
    "unstack": (_unstack, True), "broadcast_arrays": (_broadcast_arrays, True),
    "tile": (_tile, False), "take": (_take, False),
    "linalg.inv": (_inv, True), "linalg.det": (_det, True), "linalg.slogdet": (_slogdet, True),
    "linalg.solve": (_solve, True), "linalg.cholesky": (_cholesky, True),
    "linalg.vector_norm": (_vector_norm, True), "linalg.matrix_norm": (_matrix_norm, True),
    "linalg.eigh": (_eigh, True), "linalg.trace": (_trace, False),
    "linalg.matmul": (_matmul, False), "linalg.vecdot": (_vecdot, False),
    "linalg.matrix_transpose": (_matrix_transpose, False),
    "linalg.tensordot": (_tensordot, False), "linalg.outer": (_outer, False),
    # reached through Array methods rather than the namespace
    "__getitem__": (_getitem, False), "__setitem__": (_setitem, False),
    "to_device": (_to_device, False),
})
SEQ = frozenset({"concat", "stack"})



# ---- rules added as the namespace grew ----------------------------------------------------------
def _tril(g, out, x, /, *, k=0):
    return (N.tril(g, k=k),)


def _triu(g, out, x, /, *, k=0):
    return (N.triu(g, k=k),)


def _pad_axis(g, ax, before: int, after: int):
    parts = []
    shape = list(g.shape)
    for n in (before, after):
        shape[ax] = n
        parts.append(N.zeros(tuple(shape), dtype=g.dtype, device=g.device) if n else None)
    seq = [p for p in (parts[0], g, parts[1]) if p is not None]
    return N.concat(seq, axis=ax) if len(seq) > 1 else g


def _diff(g, out, x, /, *, axis=-1, n=1, prepend=None, append=None):
    ax = normalize_axis(axis, x.ndim, "backward")
    for _ in range(n):
        # out_i = y_{i+1} - y_i, so dy_j = g_{j-1} - g_j
        g = _pad_axis(g, ax, 1, 0) - _pad_axis(g, ax, 0, 1)
    start = 0
    if prepend is not None:
        start = prepend.shape[ax] if isinstance(prepend, Array) and prepend.ndim else 1
    return (_slice(g, ax, start, start + x.shape[ax]),)


def _cumulative_prod(g, out, x, /, *, axis=None, dtype=None, include_initial=False):
    ax = 0 if axis is None else normalize_axis(axis, x.ndim, "backward")
    if include_initial:
        g, out = _slice(g, ax, 1, None), _slice(out, ax, 1, None)
    # sum_{i>=k} g_i out_i / x_k holds up to the first zero along the axis; at the first zero
    # the division is replaced by the cumulative product with that zero set to 1; after it, 0
    zero = N.equal(x, 0)
    seen = N.cumulative_sum(N.astype(zero, x.dtype), axis=ax)
    one = N.ones((), dtype=x.dtype, device=x.device)
    first = N.logical_and(zero, N.equal(seen, 1))
    before = N.flip(N.cumulative_sum(N.flip(g * out, axis=ax), axis=ax), axis=ax)
    skipped = N.cumulative_prod(N.where(first, one, x), axis=ax)
    at = N.flip(N.cumulative_sum(N.flip(g * skipped, axis=ax), axis=ax), axis=ax)
    z = N.zeros((), dtype=before.dtype, device=x.device)
    return (N.where(N.equal(seen, 0), before / N.where(zero, one, x), N.where(first, at, z)),)


def _take_along_axis(g, out, x, indices, /, *, axis=-1):
    ax = normalize_axis(axis, x.ndim, "backward")
    n = x.shape[ax]
    hit = N.equal(N.expand_dims(indices, axis=-1), N.arange(n, device=g.device))
    gx = N.sum(N.astype(hit, g.dtype) * N.expand_dims(g, axis=-1), axis=ax)
    return (N.moveaxis(gx, -1, ax), None)


def _repeat(g, out, x, repeats, /, *, axis=None):
    base = N.reshape(x, (-1,)) if axis is None else x
    ax = 0 if axis is None else normalize_axis(axis, x.ndim, "backward")
    idx = N.repeat(N.arange(base.shape[ax], device=g.device), repeats)
    return (N.reshape(_scatter_add(base, ax, idx, g), x.shape), None)


def _meshgrid(g, out, *arrays, indexing="xy", sparse=False, copy=True):
    n = len(arrays)
    res = []
    for i, (gi, a) in enumerate(zip(g, arrays)):
        own = 1 - i if indexing == "xy" and n >= 2 and i < 2 else i
        res.append(N.sum(gi, axis=tuple(k for k in range(n) if k != own)) if _rg(a) else None)
    return tuple(res)


def _sort(g, out, x, /, *, axis=-1, descending=False, stable=True, kind=None):
    if axis is None:   # NumPy's flattened sort: the rule of the flat array's
        (gx,) = _sort(g, out, N.reshape(x, (-1,)), axis=0, descending=descending)
        return (N.reshape(gx, x.shape),)
    idx = N.argsort(x, axis=axis, descending=descending, stable=True)
    inv = N.argsort(idx, axis=axis, stable=True)
    return (N.take_along_axis(g, inv, axis=axis),)


def _topk(g, out, x, k, /, *, axis=-1, largest=True, sorted=True):
    # the values' gradient goes back to the positions the indices name; indices have none
    if x.ndim == 0:
        return (N.reshape(g[0], ()), None)
    return (_take_along_axis(g[0], None, x, out[1], axis=axis)[0], None)


def _cross(g, out, x1, x2, /, *, axis=-1):
    return (N.linalg.cross(_cj(x2), g, axis=axis) if _rg(x1) else None,
            N.linalg.cross(g, _cj(x1), axis=axis) if _rg(x2) else None)


def _diagonal(g, out, x, /, *, offset=0):
    n, m = x.shape[-2], x.shape[-1]
    length = g.shape[-1]
    eye = N.eye(n, m, k=offset, dtype=g.dtype, device=g.device)
    if offset >= 0:
        return (N.expand_dims(_pad_axis(g, g.ndim - 1, 0, n - length), axis=-1) * eye,)
    return (N.expand_dims(_pad_axis(g, g.ndim - 1, 0, m - length), axis=-2) * eye,)


def _matrix_power(g, out, x, n, /):
    if n == 0:
        return (N.zeros_like(x), None)
    base = x if n > 0 else N.linalg.inv(x)
    k = abs(n)
    bt = _adj(base)
    powers = [None] * k  # powers[i] = bt ** i
    powers[0] = N.broadcast_to(N.eye(x.shape[-1], dtype=g.dtype, device=g.device), x.shape)
    for i in range(1, k):
        powers[i] = N.matmul(powers[i - 1], bt)
    gb = N.zeros_like(x)
    for i in range(k):
        gb = gb + N.matmul(N.matmul(powers[i], g), powers[k - 1 - i])
    if n > 0:
        return (gb, None)
    return (-N.matmul(N.matmul(bt, gb), bt), None)


def _svdvals(g, out, x):
    u, _, vh = N.linalg.svd(x, full_matrices=False)
    return (N.matmul(u * N.expand_dims(g, axis=-2), vh),)


def _eigvalsh(g, out, x):
    _, v = N.linalg.eigh(x)
    return (N.matmul(v * N.expand_dims(g, axis=-2), _adj(v)),)


def _matrix_norm_full(g, out, x, /, *, keepdims=False, ord="fro"):
    if ord == "fro":
        return _matrix_norm(g, out, x, keepdims=keepdims, ord=ord)
    ge = g if keepdims else N.expand_dims(N.expand_dims(g, axis=-1), axis=-1)
    if ord == "nuc":
        u, _, vh = N.linalg.svd(x, full_matrices=False)
        return (ge * N.matmul(u, vh),)
    if ord in (2, -2):
        u, _, vh = N.linalg.svd(x, full_matrices=False)
        i = 0 if ord == 2 else -1
        return (ge * N.matmul(u[..., :, i:i + 1 if i == 0 else None], vh[..., i:i + 1 if i == 0
                                                                         else None, :]),)
    if ord in (1, -1, math.inf, -math.inf):
        ax = -2 if ord in (1, -1) else -1
        sums = N.sum(N.abs(x), axis=ax, keepdims=True)
        mask = N.astype(N.equal(sums, N.expand_dims(N.expand_dims(out, axis=-1), axis=-1)
                                if not keepdims else out), g.dtype)
        mask = mask / N.sum(mask, axis=-1 if ax == -2 else -2, keepdims=True)
        return (ge * mask * N.sign(x),)
    raise NotImplementedError(f"matrix_norm backward: ord={ord!r} is not supported")


RULES.update({
    "tril": (_tril, False), "triu": (_triu, False), "diff": (_diff, False),
    "cumulative_prod": (_cumulative_prod, True), "take_along_axis": (_take_along_axis, False),
    "repeat": (_repeat, False), "meshgrid": (_meshgrid, True), "sort": (_sort, False),
    "topk": (_topk, True),
    "linalg.cross": (_cross, False), "linalg.diagonal": (_diagonal, False),
    "linalg.matrix_power": (_matrix_power, False), "linalg.svdvals": (_svdvals, False),
    "linalg.eigvalsh": (_eigvalsh, False), "linalg.matrix_norm": (_matrix_norm_full, True),
})

# ---- fft: each transform's adjoint is the opposite transform with the norm direction swapped ----
_FFT_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho", None: "forward"}


def _fft_axes(x, s, axes) -> tuple:
    """The forward call's transformed axes (non-negative) and their sizes (s; -1 keeps x's)."""
    if axes is None:
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(normalize_axis(a, x.ndim, "backward") for a in axes)
    sizes = ([x.shape[a] for a in axes] if s is None
             else [x.shape[a] if v == -1 else v for v, a in zip(s, axes)])
    return axes, sizes


def _fft_fit(g, axes, sizes):
    """``g`` cropped or zero-padded at the end along each of ``axes`` to ``sizes``."""
    for ax, n in zip(axes, sizes):
        m = g.shape[ax]
        g = _slice(g, ax, 0, n) if m > n else _pad_axis(g, ax, 0, n - m) if m < n else g
    return g


def _c2c(g, x, axes, norm, inverse):
    # y = c F P x (P crops/pads to s): x's gradient is P^T c F^H g, F^H the unnormalized
    # opposite transform; c F^H is that transform with the norm direction swapped
    f = N.fft.fftn if inverse else N.fft.ifftn
    return (_fft_fit(f(g, axes=axes, norm=_FFT_SWAP[norm]), axes, [x.shape[a] for a in axes]),)


def _r2c(g, x, axes, sizes, norm):
    # y = (first n // 2 + 1 entries of) c F P x for real x: zero-pad g back to n, adjoint, real
    last = axes[-1]
    g = _pad_axis(g, last, 0, sizes[-1] - g.shape[last])
    r = N.fft.ifftn(g, axes=axes, norm=_FFT_SWAP[norm])
    return (N.real(_fft_fit(r, axes, [x.shape[a] for a in axes])),)


def _c2r(g, x, axes, norm):
    # PyTorch's fft_c2r_backward: the forward transform of g (norm swapped), halved spectrum,
    # with the entries whose mirror images the forward filled in by symmetry counted twice
    last = axes[-1]
    n = g.shape[last]
    r = N.fft.rfftn(g, axes=axes, norm=_FFT_SWAP[norm])
    h = r.shape[last]
    if n - h > 0:
        w = [1.0] * h
        w[1:1 + n - h] = [2.0] * (n - h)
        shape = [1] * r.ndim
        shape[last] = h
        r = r * N.reshape(N.asarray(w, dtype=N.real(r).dtype, device=r.device), tuple(shape))
    return (_fft_fit(r, axes, [x.shape[a] for a in axes]),)


def _fft1(g, out, x, /, *, n=None, axis=-1, norm="backward"):
    return _c2c(g, x, _fft_axes(x, None, (axis,))[0], norm, False)


def _ifft1(g, out, x, /, *, n=None, axis=-1, norm="backward"):
    return _c2c(g, x, _fft_axes(x, None, (axis,))[0], norm, True)


def _fftn(g, out, x, /, *, s=None, axes=None, norm="backward"):
    return _c2c(g, x, _fft_axes(x, s, axes)[0], norm, False)


def _ifftn(g, out, x, /, *, s=None, axes=None, norm="backward"):
    return _c2c(g, x, _fft_axes(x, s, axes)[0], norm, True)


def _rfft1(g, out, x, /, *, n=None, axis=-1, norm="backward"):
    return _r2c(g, x, *_fft_axes(x, None if n is None else (n,), (axis,)), norm)


def _rfftn(g, out, x, /, *, s=None, axes=None, norm="backward"):
    return _r2c(g, x, *_fft_axes(x, s, axes), norm)


def _irfft1(g, out, x, /, *, n=None, axis=-1, norm="backward"):
    return _c2r(g, x, _fft_axes(x, None, (axis,))[0], norm)


def _irfftn(g, out, x, /, *, s=None, axes=None, norm="backward"):
    return _c2r(g, x, _fft_axes(x, s, axes)[0], norm)


def _fftshift(g, out, x, /, *, axes=None):
    return (N.fft.ifftshift(g, axes=axes),)


def _ifftshift(g, out, x, /, *, axes=None):
    return (N.fft.fftshift(g, axes=axes),)


RULES.update({
    "fft.fft": (_fft1, False), "fft.ifft": (_ifft1, False), "fft.fftn": (_fftn, False),
    "fft.ifftn": (_ifftn, False), "fft.rfft": (_rfft1, False), "fft.rfftn": (_rfftn, False),
    "fft.irfft": (_irfft1, False), "fft.irfftn": (_irfftn, False),
    "fft.fftshift": (_fftshift, False), "fft.ifftshift": (_ifftshift, False),
})


def rule_names() -> list:
    """Names of every op with a VJP rule."""
    return sorted(RULES)


# ---- decompositions: qr, svd, pinv, eig, eigvals --------------------------------------------------
# Formulas follow PyTorch's FunctionsManual.cpp (svd, pinv, eig) and TensorFlow's QrGrad; the
# matrix_rank output is an integer, so it has no rule.
def _rsolve_h(x, r):
    """``x @ inv(r)^H``, by solving ``r Z = x^H`` (no inverse formed)."""
    return _adj(N.linalg.solve(r, _adj(x)))


def _qr_deep(q, r, gq, gr):
    """QR VJP for m >= n (q: m x n, r: n x n)."""
    qgq = N.matmul(_adj(q), gq)
    rgr = N.matmul(r, _adj(gr))
    low = N.tril(qgq - _adj(qgq) + rgr - _adj(rgr))
    return N.matmul(q, gr + _rsolve_h(low, r)) + _rsolve_h(gq - N.matmul(q, qgq), r)


def _qr(g, out, x, /, *, mode="reduced"):
    q, r = out
    gq, gr = g
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        raise ValueError(f"linalg.qr backward: mode='complete' with more rows than columns "
                         f"(shape {x.shape}) is not differentiable (the extra columns of Q are "
                         "arbitrary); use mode='reduced'")
    if m >= n:
        return (_qr_deep(q, r, gq, gr),)
    # wide: x = [X | Y] with X = Q U square; Y = Q V contributes Q gV and shifts gQ
    y = x[..., :, m:]
    gv = gr[..., :, m:]
    gx = _qr_deep(q, r[..., :, :m], gq + N.matmul(y, _adj(gv)), gr[..., :, :m])
    return (N.concat([gx, N.matmul(q, gv)], axis=-1),)


def _svd(g, out, x, /, *, full_matrices=True):
    u, s, vh = out
    gu, gs, gvh = g
    m, n = x.shape[-2], x.shape[-1]
    if full_matrices and m != n:
        raise ValueError(f"linalg.svd backward: full_matrices=True with a non-square input (shape "
                         f"{x.shape}) is not differentiable (the extra singular vectors are "
                         "arbitrary); use full_matrices=False")
    k = s.shape[-1]
    eye = N.eye(k, dtype=s.dtype, device=s.device)
    uhgu = N.matmul(_adj(u), gu)
    uhgu = uhgu - _adj(uhgu)
    vhgv = N.matmul(vh, _adj(gvh))
    vhgv = vhgv - _adj(vhgv)
    s2 = s * s
    # E_ij = s_j^2 - s_i^2 off the diagonal, 1 on it (the skew terms vanish there)
    e = N.expand_dims(s2, axis=-2) - N.expand_dims(s2, axis=-1) + eye
    sr, sc = N.expand_dims(s, axis=-2), N.expand_dims(s, axis=-1)
    ga = (uhgu * sr + sc * vhgv) / e + N.expand_dims(gs, axis=-2) * eye
    if u._dtype.kind == "c":
        ga = ga + eye * uhgu / (2.0 * sc)
    if m > n:
        gus = gu / sr
        ga = N.matmul(u, ga) + gus - N.matmul(u, N.matmul(_adj(u), gus))
        return (N.matmul(ga, vh),)
    if m < n:
        sgvh = gvh / sc
        ga = N.matmul(ga, vh) + sgvh - N.matmul(N.matmul(sgvh, _adj(vh)), vh)
        return (N.matmul(u, ga),)
    return (N.matmul(N.matmul(u, ga), vh),)


def _pinv(g, out, x, /, *, rtol=None):
    # valid where the rank is locally constant (full-rank inputs)
    p, ph, gh = out, _adj(out), _adj(g)
    m, n = x.shape[-2], x.shape[-1]
    if m <= n:
        k = N.matmul(gh, p)
        kph = N.matmul(k, ph)
        r = (-_adj(N.matmul(p, k)) + kph - N.matmul(N.matmul(x, p), kph)
             + N.matmul(N.matmul(ph, p), gh - N.matmul(k, x)))
    else:
        k = N.matmul(p, gh)
        phk = N.matmul(ph, k)
        r = (-_adj(N.matmul(k, p)) + N.matmul(N.matmul(gh - N.matmul(x, k), p), ph) + phk
             - N.matmul(N.matmul(phk, p), x))
    return (r,)


def _eig_grad(w, v, gw, gv):
    """PyTorch's linalg_eig_backward (unit-norm eigenvectors; gauge-invariant losses only)."""
    vh = _adj(v)
    n = w.shape[-1]
    eye = N.eye(n, dtype=w.dtype, device=w.device)
    gwd = N.expand_dims(gw, axis=-2) * eye
    if gv is None:
        return N.linalg.solve(vh, N.matmul(gwd, vh))
    vhgv = N.matmul(vh, gv)
    re = N.real(N.linalg.diagonal(vhgv))
    r = vhgv - N.matmul(vh, v * N.expand_dims(re, axis=-2))
    wc = N.conj(w)
    r = r / (N.expand_dims(wc, axis=-2) - N.expand_dims(wc, axis=-1) + eye)
    r = r * (1.0 - eye) + gwd
    return N.linalg.solve(vh, N.matmul(r, vh))


def _eig(g, out, x):
    w, v = out
    gw, gv = g
    return (_eig_grad(w, v, gw, gv),)


def _eigvals(g, out, x):
    w, v = N.linalg.eig(x)
    return (_eig_grad(w, v, g, None),)


RULES.update({
    "linalg.qr": (_qr, True), "linalg.svd": (_svd, True), "linalg.pinv": (_pinv, True),
    "linalg.eig": (_eig, True), "linalg.eigvals": (_eigvals, False),
})


def _softmax(g, out, x, axis=-1):
    ax = normalize_axis(axis, max(x.ndim, 1), "softmax") if x.ndim else None
    return (out * (g - N.sum(g * out, axis=ax, keepdims=True)),)


def _log_softmax(g, out, x, axis=-1):
    ax = normalize_axis(axis, max(x.ndim, 1), "log_softmax") if x.ndim else None
    return (g - N.exp(out) * N.sum(g, axis=ax, keepdims=True),)


RULES.update({"fused.softmax": (_softmax, True), "fused.log_softmax": (_log_softmax, True)})


def _row_segments(starts, ends, k: int) -> tuple:
    """For each of k rows, the ordered, disjoint run holding it (the last run starting at or
    before it) and whether it lies in that run; None when there are no runs."""
    if starts.shape[0] == 0:
        return None
    pos = N.arange(k, dtype=N.int64, device=starts.device)
    seg = N.clip(N.searchsorted(starts, pos, side="right") - 1, min=0)
    return seg, N.logical_and(N.greater_equal(pos, N.take(starts, seg)),
                              N.less(pos, N.take(ends, seg)))


def _segment_grad(g, x, rows, keep=None):
    """x's gradient: each row gets its run's g (where ``keep``), rows outside every run 0."""
    if rows is None:
        return N.zeros_like(x, dtype=g.dtype)
    seg, inside = rows
    gr = N.take(g, seg, axis=0)
    mask = N.reshape(inside, (-1,) + (1,) * (g.ndim - 1))
    if keep is not None:
        mask = N.logical_and(mask, keep)
    return N.where(mask, gr, N.zeros((), dtype=g.dtype, device=g.device))


def _segment_sum(g, out, values, starts, ends):
    return (_segment_grad(g, values, _row_segments(starts, ends, values.shape[0])), None, None)


def _segment_max(g, out, values, starts, ends, *, fill=0.0):
    # the gradient goes to the first maximal row of each run and column (torch's embedding_bag)
    k = values.shape[0]
    rows = _row_segments(starts, ends, k)
    keep = None
    if rows is not None:
        pos = N.reshape(N.arange(k, dtype=N.int64, device=values.device),
                        (-1,) + (1,) * (values.ndim - 1))
        keep = N.equal(N.take(out[1], rows[0], axis=0), pos)
    return (_segment_grad(g[0], values, rows, keep), None, None)


RULES.update({"segments.segment_sum": (_segment_sum, False),
              "segments.segment_max": (_segment_max, True)})


# ---- what each rule reads of its saved arrays ---------------------------------------------------
# (function._saved: a write in place into one of them before backward is then torch's
# RuntimeError, not a wrong gradient); every rule not named reads its array arguments, and its
# output where it saves it
_READS = {
    "none": ("ceil", "floor", "trunc", "round", "floor_divide", "negative", "positive",
             "conj", "real", "imag", "add", "subtract", "astype", "sum", "mean",
             "cumulative_sum", "reshape", "expand_dims", "squeeze", "broadcast_to",
             "permute_dims", "flip", "roll", "moveaxis", "concat", "stack", "unstack",
             "broadcast_arrays", "tile", "matrix_transpose", "linalg.matrix_transpose",
             "__getitem__", "__setitem__", "to_device", "linalg.trace", "tril", "triu", "diff",
             "repeat", "linalg.diagonal", "fft.fftshift", "fft.ifftshift"),
    "out": ("exp", "expm1", "tan", "tanh", "sqrt", "reciprocal", "fused.softmax",
            "fused.log_softmax"),
    "args": tuple(n for n in _UNARY if n not in ("exp", "expm1", "tan", "tanh", "sqrt",
                                                 "reciprocal")),
    "cross": ("multiply", "matmul", "linalg.matmul", "vecdot", "linalg.vecdot", "linalg.outer",
              "tensordot", "linalg.tensordot"),
    "divide": ("divide",), "pow": ("pow",),
}
_KIND = {n: k for k, names in _READS.items() for n in names}
# RULES[name] = (rule, saves its output, what it reads)
for _n, (_r, _s) in list(RULES.items()):
    RULES[_n] = (_r, _s, _KIND.get(_n, "all"))
