"""NumPy's statistics, NaN-ignoring reductions, histograms, interpolation, signal helpers,
index helpers and set routines, composed of namespace functions (no kernels of their own), so
autograd, grilly.jit and every device take them as they take those.

Results follow NumPy 2 under grilly's promotion rules (docs/numpy.md). A function whose
result size depends on the data (bincount, histogram without range, argwhere, the *1d set
routines) reads what it needs on the host, as nonzero and unique_values do."""
from __future__ import annotations

import builtins
import math
import operator
from typing import Sequence

import numpy as np

from . import dispatch, segments
from . import dtypes as dt
from .array import Array
from .core import check_array, common_device
from .manipulation import normalize_axis
from .numpy_compat import _flat, _float_of, _index, _ints_arg, _no_out, _operand, _pair, resize

__all__ = [
    "argpartition", "argwhere", "average", "bartlett", "bincount", "blackman", "cbrt",
    "convolve", "corrcoef", "correlate", "cov", "digitize", "ediff1d", "exp2", "flatnonzero",
    "fmax", "fmin", "geomspace", "gradient", "hamming", "hanning", "heaviside", "histogram",
    "histogram2d", "histogram_bin_edges", "histogramdd",
    "c_", "choose", "compress", "extract", "index_exp", "indices", "interp", "intersect1d",
    "ix_", "mgrid", "ogrid", "r_", "s_",
    "lexsort", "logaddexp2", "logspace", "median",
    "nan_to_num", "nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
    "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd", "nansum",
    "nanvar", "partition", "percentile", "place", "polyfit", "polyval", "ptp", "put",
    "put_along_axis", "putmask", "quantile", "ravel_multi_index", "select", "setdiff1d",
    "setxor1d", "sinc", "trapezoid", "union1d", "unravel_index", "vander",
]

_ns = dispatch.ns


def _arr(x, op: str, arg: str = "a") -> Array:
    return check_array(x, op, arg)


# ---- averages and spread ---------------------------------------------------------------------
def average(a: Array, axis=None, weights: Array | None = None, returned: bool = False, *,
            keepdims: bool = False):
    """The (weighted) mean along ``axis``; with returned=True also the sum of the weights.
    Integers average in float64; weights summing to zero give inf/NaN (no ZeroDivisionError:
    that would read the data on the host)."""
    op = "average"
    _arr(a, op)
    if weights is None:
        avg = _ns.mean(_float_of(a, op), axis=axis, keepdims=keepdims)
        n = a.size // builtins.max(avg.size, 1) if a.size else 0
        scl = _ns.full(avg.shape, float(n), dtype=avg.dtype, device=a.device)
    else:
        # a sequence of weights is converted as NumPy converts it (ints stay ints)
        w = weights if isinstance(weights, Array) else _ns.asarray(np.asarray(weights),
                                                                    device=a.device)
        common_device(op, a, w)
        if a.dtype.kind in "fc" and w.dtype.kind in "fc":
            d = dt.promote(a.dtype, w.dtype, op)
        else:
            d = dt.float64
        a, w = _ns.astype(a, d), _ns.astype(w, d)
        if a.shape != w.shape:
            if axis is None:
                raise TypeError(f"{op}: axis must be specified when shapes of a and weights "
                                "differ")
            if w.ndim != 1:
                raise TypeError(f"{op}: 1D weights expected when shapes of a and weights differ")
            ax = normalize_axis(axis, a.ndim, op)
            if w.shape[0] != a.shape[ax]:
                raise ValueError(f"{op}: length of weights not compatible with specified axis")
            w = _ns.reshape(w, tuple(w.shape[0] if i == ax else 1 for i in range(a.ndim)))
            w = _ns.broadcast_to(w, a.shape)
        scl = _ns.sum(w, axis=axis, keepdims=keepdims)
        avg = _ns.divide(_ns.sum(_ns.multiply(a, w), axis=axis, keepdims=keepdims), scl)
    return (avg, _ns.broadcast_to(scl, avg.shape)) if returned else avg


def ptp(a: Array, axis=None, out=None, keepdims: bool = False) -> Array:
    """Range (maximum minus minimum) along ``axis``."""
    _no_out("ptp", out)
    _arr(a, "ptp")
    return _ns.subtract(_ns.max(a, axis=axis, keepdims=keepdims),
                        _ns.min(a, axis=axis, keepdims=keepdims))


def _last(a: Array, axis, op: str) -> tuple[Array, tuple]:
    """``a`` with the reduced ``axis`` (None, int or tuple) merged into one last axis, and the
    shape keepdims gives."""
    if axis is None:
        return _flat(a), (1,) * a.ndim
    given = [normalize_axis(x, a.ndim, op) for x in _ints_arg(axis, op, "axis")]
    axes = sorted(set(given))
    if len(axes) != len(given):
        raise ValueError(f"{op}: repeated axis in {axis!r}")
    keep = tuple(1 if i in axes else s for i, s in enumerate(a.shape))
    rest = [i for i in range(a.ndim) if i not in axes]
    moved = _ns.permute_dims(a, tuple(rest + axes))
    return _ns.reshape(moved, tuple(a.shape[i] for i in rest) + (-1,)), keep


_CONTINUOUS = {"linear": (1.0, 1.0), "hazen": (0.5, 0.5), "weibull": (0.0, 0.0),
               "median_unbiased": (1 / 3, 1 / 3), "normal_unbiased": (3 / 8, 3 / 8),
               "interpolated_inverted_cdf": (0.0, 1.0)}
# methods that pick one element (NumPy's result keeps the input's dtype: integers stay integers)
_DISCRETE = ("lower", "higher", "nearest", "inverted_cdf", "closest_observation")
_METHODS = tuple(_CONTINUOUS) + _DISCRETE + ("midpoint", "averaged_inverted_cdf")


def _lerp(a: Array, b: Array, t: Array) -> Array:
    """NumPy's lerp (exact at both ends)."""
    d = _ns.subtract(b, a)
    lo = _ns.add(a, _ns.multiply(d, t))
    hi = _ns.subtract(b, _ns.multiply(d, _ns.subtract(1, t)))
    return _ns.where(_ns.greater_equal(t, 0.5), hi, lo)


def _q_array(q, a: Array, op: str, scale: float) -> Array:
    """The quantiles ``q`` as an Array in the dtype NumPy computes them in (a Python number in
    ``a``'s float dtype, other host values in float64); range checked where host data."""
    if isinstance(q, Array):
        common_device(op, a, q)
        qa = _float_of(q, op)
        return _ns.divide(qa, scale) if scale != 1 else qa
    h = np.asarray(q, dtype=np.float64) / scale
    if h.dtype.kind not in "f" or np.any(~((h >= 0) & (h <= 1))):
        raise ValueError(f"{op}: quantiles must be in the range [0, {scale:g}], got {q!r}")
    d = a.dtype if isinstance(q, (int, float)) and a.dtype.kind == "f" else dt.float64
    return _ns.asarray(h, dtype=d, device=a.device)


def _quantile_weights(w, a: Array, axis, op: str) -> Array:
    """NumPy's quantile ``weights``: a's shape, or the shape of a's ``axis`` dimensions (in
    axis's order), broadcast to a's shape; non-negative (read on the host, as NumPy checks)."""
    w = w if isinstance(w, Array) else _ns.asarray(np.asarray(w, dtype=np.float64),
                                                   device=a.device)
    common_device(op, a, w)
    if w.dtype.kind not in "iuf":
        raise TypeError(f"{op}: weights must be real numbers, got {w.dtype}")
    if w.shape != a.shape:
        if axis is None:
            raise TypeError(f"{op}: axis must be specified when shapes of a and weights differ")
        axes = [normalize_axis(x, a.ndim, op) for x in _ints_arg(axis, op, "axis")]
        if w.shape != tuple(a.shape[x] for x in axes):
            raise ValueError(f"{op}: shape of weights {w.shape} must be consistent with the "
                             f"shape of a along axis {axis!r}")
        w = _ns.permute_dims(w, tuple(int(i) for i in np.argsort(axes)))
        w = _ns.broadcast_to(_ns.reshape(w, tuple(s if i in axes else 1
                                                  for i, s in enumerate(a.shape))), a.shape)
    if bool(_ns.any(_ns.less(w, 0))):
        raise ValueError(f"{op}: weights must be non-negative")
    return w


def _weighted_quantile(op: str, a: Array, qa: Array, w: Array, axis, keepdims: bool,
                       nan: bool) -> Array:
    """method='inverted_cdf' with weights: the first sorted element (of positive weight)
    where the weights' normalized running sum reaches q (NaN where the slice has a NaN; for
    the nan* functions, NaNs weigh nothing)."""
    y, keep = _last(a, axis, op)
    wl, _ = _last(_ns.astype(w, dt.float64), axis, op)
    n = y.shape[-1]
    if n == 0:
        raise ValueError(f"{op}: cannot compute a quantile of an empty slice")
    order = _ns.argsort(y, axis=-1, stable=True)   # NaNs sort last
    ys, ws = _ns.take_along_axis(y, order, axis=-1), _ns.take_along_axis(wl, order, axis=-1)
    isnan = _ns.isnan(ys) if ys.dtype.kind == "f" else None
    if nan and isnan is not None:
        ws = _ns.where(isnan, 0.0, ws)
    run = _ns.cumulative_sum(ws, axis=-1)
    total = run[..., -1:]   # the running sum's own end: the cdf ends at exactly 1
    allnan = (_ns.all(isnan, axis=-1, keepdims=True) if nan and isnan is not None
              else _ns.zeros(total.shape, dtype=dt.bool, device=a.device))
    if not bool(_ns.all(_ns.logical_or(allnan, _ns.logical_and(
            _ns.isfinite(total), _ns.greater(total, 0))))):
        raise ValueError(f"{op}: weights included NaN, inf or were all zero")
    cdf = _ns.divide(run, total)
    rest, qd = y.shape[:-1], qa.ndim
    qb = _ns.reshape(_ns.astype(qa, dt.float64), qa.shape + (1,) * (len(rest) + 1))
    reach = _ns.logical_and(_ns.greater(ws, 0), _ns.greater_equal(cdf, qb))
    at = _ns.arange(n, dtype=dt.int64, device=a.device)
    idx = _ns.min(_ns.where(reach, at, n - 1), axis=-1, keepdims=True)
    full = qa.shape + rest + (1,)
    r = _ns.take_along_axis(_ns.broadcast_to(_ns.reshape(ys, (1,) * qd + ys.shape),
                                             (1,) * qd + rest + (n,)), idx, axis=-1)
    if isnan is not None:
        bad = allnan if nan else isnan[..., -1:]
        r = _ns.where(_ns.broadcast_to(bad, full), float("nan"), r)
    r = _ns.reshape(r, qa.shape + rest)
    return _ns.reshape(r, qa.shape + keep) if keepdims else r


def _quantile(op: str, a: Array, q, axis, method: str, keepdims: bool, nan: bool,
              scale: float = 1.0, weights=None) -> Array:
    _arr(a, op)
    if a.dtype.kind == "c":
        raise TypeError(f"{op}: a must be an array of real numbers")
    if method not in _METHODS:
        raise ValueError(f"{op}: method {method!r} is not supported; expected one of "
                         f"{', '.join(_METHODS)}")
    qa = _q_array(q, a, op, scale)
    if weights is not None:
        if method != "inverted_cdf":
            raise ValueError(f"{op}: only method 'inverted_cdf' supports weights, got "
                             f"{method!r}")
        return _weighted_quantile(op, a, qa, _quantile_weights(weights, a, axis, op), axis,
                                  keepdims, nan)
    x = _float_of(a, op)
    d = dt.promote(x.dtype, qa.dtype, op)
    x, qa = _ns.astype(x, d), _ns.astype(qa, d)
    pick = method in _DISCRETE and a.dtype.kind in "iuf"
    y, keep = _last(a if pick else x, axis, op)
    if y.shape[-1] == 0:
        raise ValueError(f"{op}: cannot compute a quantile of an empty slice")
    y = _ns.sort(y, axis=-1)   # NaNs sort last
    rest = y.shape[:-1]
    qd = qa.ndim
    qb = _ns.reshape(qa, qa.shape + (1,) * (len(rest) + 1))
    yb = _ns.reshape(y, (1,) * qd + y.shape)
    if nan:
        n = _ns.sum(_ns.astype(_ns.logical_not(_ns.isnan(y)), dt.int64), axis=-1, keepdims=True)
        nf = _ns.reshape(_ns.astype(n, d), (1,) * qd + rest + (1,))
    else:
        nf = float(y.shape[-1])
    last = _ns.subtract(nf, 1) if nan else nf - 1
    if method in _CONTINUOUS:
        al, be = _CONTINUOUS[method]
        v = _ns.subtract(_ns.add(_ns.multiply(nf, qb),
                                 _ns.add(al, _ns.multiply(qb, 1 - al - be))), 1)
    elif method in ("inverted_cdf", "averaged_inverted_cdf", "closest_observation"):
        # NumPy's virtual index n*q - 1 (closest_observation: half an order statistic less)
        v = _ns.subtract(_ns.multiply(nf, qb), 1.5 if method == "closest_observation" else 1)
    else:
        v = _ns.multiply(qb, last)
        if method == "lower":
            v = _ns.floor(v)
        elif method == "higher":
            v = _ns.ceil(v)
        elif method == "nearest":
            v = _ns.round(v)
    lo = _ns.floor(v)
    full = qa.shape + rest + (1,)
    yb = _ns.broadcast_to(yb, (1,) * qd + rest + (y.shape[-1],))
    if method in _DISCRETE:
        at = v
        if method != "lower" and method in ("inverted_cdf", "closest_observation"):
            # the element below a whole virtual index (an even order statistic for
            # closest_observation), else the one above
            whole = _ns.equal(v, lo)
            if method == "closest_observation":
                whole = _ns.logical_and(whole, _ns.equal(_ns.remainder(lo, 2), 1))
            at = _ns.where(whole, lo, _ns.add(lo, 1))
        at = _ns.maximum(_ns.minimum(at, last), 0)
        r = _ns.take_along_axis(yb, _ns.broadcast_to(_ns.astype(at, dt.int64), full), axis=-1)
    else:
        prev = _ns.clip(lo, 0, last) if nan else _ns.clip(lo, 0.0, last)
        nxt = _ns.minimum(_ns.maximum(_ns.add(lo, 1), 0), last) if nan else _ns.clip(
            _ns.add(lo, 1), 0.0, last)
        gamma = _ns.subtract(v, lo)
        if method == "midpoint":
            gamma = _ns.where(_ns.equal(gamma, 0), gamma, 0.5)
        elif method == "averaged_inverted_cdf":   # the two elements' mean at a whole index
            gamma = _ns.where(_ns.equal(gamma, 0), _ns.full_like(gamma, 0.5),
                              _ns.full_like(gamma, 1.0))
        i0 = _ns.broadcast_to(_ns.astype(prev, dt.int64), full)
        i1 = _ns.broadcast_to(_ns.astype(nxt, dt.int64), full)
        r = _lerp(_ns.take_along_axis(yb, i0, axis=-1), _ns.take_along_axis(yb, i1, axis=-1),
                  _ns.broadcast_to(gamma, full))
    if r.dtype.kind == "f":
        if nan:
            bad = _ns.equal(_ns.broadcast_to(_ns.reshape(n, (1,) * qd + rest + (1,)), full), 0)
        else:
            bad = _ns.broadcast_to(_ns.reshape(_ns.isnan(y[..., -1]), (1,) * qd + rest + (1,)),
                                   full)
        r = _ns.where(bad, float("nan"), r)
    r = _ns.reshape(r, qa.shape + rest)
    if keepdims:
        r = _ns.reshape(r, qa.shape + keep)
    return r


def quantile(a: Array, q, axis=None, out=None, overwrite_input: bool = False,
             method: str = "linear", keepdims: bool = False, *, weights=None) -> Array:
    """The ``q``-th quantiles (q in [0, 1]) of ``a`` along ``axis`` (q's dimensions first)."""
    _no_out("quantile", out)
    return _quantile("quantile", a, q, axis, method, keepdims, nan=False,
                     weights=weights)


def percentile(a: Array, q, axis=None, out=None, overwrite_input: bool = False,
               method: str = "linear", keepdims: bool = False, *, weights=None) -> Array:
    """The ``q``-th percentiles (q in [0, 100]) of ``a`` along ``axis``."""
    _no_out("percentile", out)
    return _quantile("percentile", a, q, axis, method, keepdims, nan=False, scale=100.0,
                     weights=weights)


def nanquantile(a: Array, q, axis=None, out=None, overwrite_input: bool = False,
                method: str = "linear", keepdims: bool = False, *, weights=None) -> Array:
    """quantile ignoring NaNs (NaN for an all-NaN slice)."""
    _no_out("nanquantile", out)
    return _quantile("nanquantile", a, q, axis, method, keepdims, nan=True,
                     weights=weights)


def nanpercentile(a: Array, q, axis=None, out=None, overwrite_input: bool = False,
                  method: str = "linear", keepdims: bool = False, *, weights=None) -> Array:
    """percentile ignoring NaNs (NaN for an all-NaN slice)."""
    _no_out("nanpercentile", out)
    return _quantile("nanpercentile", a, q, axis, method, keepdims, nan=True, scale=100.0,
                     weights=weights)


def median(a: Array, axis=None, out=None, overwrite_input: bool = False,
           keepdims: bool = False) -> Array:
    """Median along ``axis`` (the mean of the two middle values for an even count; NaN where
    a slice holds NaN)."""
    op = "median"
    _no_out(op, out)
    _arr(a, op)
    y, keep = _last(_float_of(a, op), axis, op)
    n = y.shape[-1]
    if n == 0:
        raise ValueError(f"{op}: cannot compute the median of an empty slice")
    y = _ns.sort(y, axis=-1)
    mid = y[..., (n - 1) // 2:n // 2 + 1]
    r = _ns.where(_ns.isnan(y[..., -1]), float("nan"), _ns.mean(mid, axis=-1))
    return _ns.reshape(r, keep) if keepdims else r


def nanmedian(a: Array, axis=None, out=None, overwrite_input: bool = False,
              keepdims: bool = False) -> Array:
    """Median ignoring NaNs (NaN for an all-NaN slice)."""
    _no_out("nanmedian", out)
    return _quantile("nanmedian", a, 0.5, axis, "linear", keepdims, nan=True)


# ---- NaN-ignoring reductions -----------------------------------------------------------------
def _filled(a: Array, value) -> Array:
    """``a`` with its NaNs replaced by ``value`` (integers have none)."""
    if a.dtype.kind not in "fc":
        return a
    return _ns.where(_ns.isnan(a), value, a)


def nansum(a: Array, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
           where=None) -> Array:
    """Sum treating NaNs as zero (``initial`` added, ``where`` selecting, as np.sum's)."""
    _no_out("nansum", out)
    return _ns.sum(_filled(_arr(a, "nansum"), 0), axis=axis, dtype=dtype, keepdims=keepdims,
                   initial=initial, where=where)


def nanprod(a: Array, axis=None, dtype=None, out=None, keepdims: bool = False, initial=None,
            where=None) -> Array:
    """Product treating NaNs as one (``initial`` multiplied in, ``where`` selecting)."""
    _no_out("nanprod", out)
    return _ns.prod(_filled(_arr(a, "nanprod"), 1), axis=axis, dtype=dtype, keepdims=keepdims,
                    initial=initial, where=where)


def nancumsum(a: Array, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running sum treating NaNs as zero (of the flattened array when axis is None)."""
    from .numpy_compat import cumsum
    return cumsum(_filled(_arr(a, "nancumsum"), 0), axis, dtype, out)


def nancumprod(a: Array, axis: int | None = None, dtype=None, out=None) -> Array:
    """Running product treating NaNs as one (of the flattened array when axis is None)."""
    from .numpy_compat import cumprod
    return cumprod(_filled(_arr(a, "nancumprod"), 1), axis, dtype, out)


def _nanext(op: str, a: Array, axis, keepdims: bool, largest: bool, initial=None,
            where=None) -> Array:
    _arr(a, op)
    f = _ns.max if largest else _ns.min
    if a.dtype.kind not in "fc":
        return f(a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    nan = _ns.isnan(a)
    if initial is not None:   # NumPy's fmax/fmin reduction: NaNs are skipped, initial stays
        m = dispatch.OPS["logical_not"](nan)
        if where is not None and where is not True:
            m = _ns.logical_and(m, _where(where, a, op))
        return f(a, axis=axis, keepdims=keepdims, initial=initial, where=m)
    if where is not None and where is not True:
        raise ValueError(f"{op}: where= needs initial= (the extreme of an empty selection is "
                         "undefined)")
    r = f(_ns.where(nan, -math.inf if largest else math.inf, a), axis=axis, keepdims=keepdims)
    return _ns.where(_ns.all(nan, axis=axis, keepdims=keepdims), float("nan"), r)


def _where(where, a: Array, op: str) -> Array:
    from .statistical import where_mask
    return where_mask(where, a, op)


def nanmax(a: Array, axis=None, out=None, keepdims: bool = False, initial=None,
           where=None) -> Array:
    """Maximum ignoring NaNs (NaN for an all-NaN slice; ``initial`` and ``where`` as np.max's)."""
    _no_out("nanmax", out)
    return _nanext("nanmax", a, axis, keepdims, True, initial, where)


def nanmin(a: Array, axis=None, out=None, keepdims: bool = False, initial=None,
           where=None) -> Array:
    """Minimum ignoring NaNs (NaN for an all-NaN slice; ``initial`` and ``where`` as np.min's)."""
    _no_out("nanmin", out)
    return _nanext("nanmin", a, axis, keepdims, False, initial, where)


def _nanarg(op: str, a: Array, axis, keepdims: bool, largest: bool) -> Array:
    _arr(a, op)
    f = _ns.argmax if largest else _ns.argmin
    if a.dtype.kind not in "fc":
        return f(a, axis=axis, keepdims=keepdims)
    nan = _ns.isnan(a)
    if bool(_ns.any(_ns.all(nan, axis=axis))):   # NumPy's error: one host read
        raise ValueError(f"{op}: all-NaN slice encountered")
    return f(_ns.where(nan, -math.inf if largest else math.inf, a), axis=axis,
             keepdims=keepdims)


def nanargmax(a: Array, axis: int | None = None, out=None, *, keepdims: bool = False) -> Array:
    """Index of the maximum ignoring NaNs; ValueError for an all-NaN slice (read on the host)."""
    _no_out("nanargmax", out)
    return _nanarg("nanargmax", a, axis, keepdims, True)


def nanargmin(a: Array, axis: int | None = None, out=None, *, keepdims: bool = False) -> Array:
    """Index of the minimum ignoring NaNs; ValueError for an all-NaN slice (read on the host)."""
    _no_out("nanargmin", out)
    return _nanarg("nanargmin", a, axis, keepdims, False)


def _selected(x: Array, where, op: str) -> Array:
    """Where x is not NaN and ``where`` selects it."""
    ok = _ns.logical_not(_ns.isnan(x))
    return ok if where is None or where is True else _ns.logical_and(ok, _where(where, x, op))


def nanmean(a: Array, axis=None, dtype=None, out=None, keepdims: bool = False, *,
            where=None) -> Array:
    """Mean of the non-NaN (and ``where``-selected) elements (NaN for a slice of none)."""
    op = "nanmean"
    _no_out(op, out)
    x = _float_of(_arr(a, op), op)
    if dtype is not None:
        x = _ns.astype(x, dtype)
    ok = _selected(x, where, op)
    cnt = _ns.sum(_ns.astype(ok, x.dtype), axis=axis, keepdims=keepdims)
    return _ns.divide(_ns.sum(_ns.where(ok, x, 0), axis=axis, keepdims=keepdims), cnt)


def nanvar(a: Array, axis=None, dtype=None, out=None, ddof: float = 0,
           keepdims: bool = False, *, where=None) -> Array:
    """Variance of the non-NaN (and ``where``-selected) elements, dividing by count - ddof
    (NaN where that is <= 0)."""
    op = "nanvar"
    _no_out(op, out)
    x = _float_of(_arr(a, op), op)
    if dtype is not None:
        x = _ns.astype(x, dtype)
    ok = _selected(x, where, op)
    cnt = _ns.sum(_ns.astype(ok, x.dtype), axis=axis, keepdims=True)
    m = _ns.divide(_ns.sum(_ns.where(ok, x, 0), axis=axis, keepdims=True), cnt)
    dev = _ns.where(ok, _ns.subtract(x, m), 0)
    sq = _ns.sum(_ns.real(_ns.multiply(dev, _ns.conj(dev))) if x.dtype.kind == "c"
                 else _ns.multiply(dev, dev), axis=axis, keepdims=keepdims)
    dof = _ns.subtract(_ns.sum(_ns.astype(ok, sq.dtype), axis=axis, keepdims=keepdims), ddof)
    return _ns.where(_ns.less_equal(dof, 0), float("nan"), _ns.divide(sq, dof))


def nanstd(a: Array, axis=None, dtype=None, out=None, ddof: float = 0,
           keepdims: bool = False, *, where=None) -> Array:
    """Standard deviation of the non-NaN (and ``where``-selected) elements (sqrt of nanvar)."""
    return _ns.sqrt(nanvar(a, axis, dtype, out, ddof, keepdims, where=where))


# ---- covariance ------------------------------------------------------------------------------
def _rows(m: Array, rowvar: bool, dtype, op: str, arg: str) -> Array:
    _arr(m, op, arg)
    if m.ndim > 2:
        raise ValueError(f"{op}: {arg} has more than 2 dimensions")
    x = _ns.astype(m, dtype)
    if x.ndim < 2:
        x = _ns.reshape(x, (1, -1))
    if not rowvar and x.shape[0] != 1:
        x = _ns.matrix_transpose(x)
    return x


def cov(m: Array, y: Array | None = None, rowvar: bool = True, bias: bool = False,
        ddof: int | None = None, fweights: Array | None = None,
        aweights: Array | None = None, *, dtype=None, correction=None) -> Array:
    """Covariance matrix of the variables in the rows (columns when rowvar=False) of ``m``
    (and ``y``), float64 by default as NumPy; squeezed as NumPy's. torch's ``correction=``
    selects torch.cov (rows are the variables, in m's own dtype)."""
    op = "cov"
    if correction is not None:
        given = [k for k, v in (("y", y), ("rowvar", None if rowvar is True else rowvar),
                                ("bias", bias or None), ("ddof", ddof), ("dtype", dtype))
                 if v is not None]
        if given:
            raise TypeError(f"cov: torch's correction= does not combine with NumPy's "
                            f"{', '.join(given)}; use ddof= for NumPy's cov")
        return dispatch.TORCH_FORMS["cov"](m, correction=correction, fweights=fweights,
                                           aweights=aweights)
    _arr(m, op, "m")
    if dtype is None:
        cplx = m.dtype.kind == "c" or (y is not None and y.dtype.kind == "c")
        dtype = dt.complex128 if cplx else dt.float64
    else:   # np.float32, "float32", a grilly dtype
        dtype = dt.as_dtype(dtype, op)
        if dtype.kind not in "fc":
            raise TypeError(f"{op}: dtype must be a floating or complex dtype, got {dtype}")
    x = _rows(m, rowvar, dtype, op, "m")
    if x.shape[0] == 0:
        return _ns.zeros((0, 0), dtype=dtype, device=m.device)
    if y is not None:
        common_device(op, m, y)
        x = _ns.concat([x, _rows(y, rowvar, dtype, op, "y")], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    w = None
    rd = dt.float64 if dtype is dt.complex128 else dtype
    for name, v in (("fweights", fweights), ("aweights", aweights)):
        if v is not None:
            _arr(v, op, name)
            if v.ndim != 1 or v.shape[0] != x.shape[1]:
                raise RuntimeError(f"{op}: incompatible numbers of samples and {name}")
            if name == "fweights" and v.dtype.kind not in "iu":
                raise TypeError(f"{op}: fweights must be integer")
            if bool(_ns.any(_ns.less(v, 0))):   # read on the host, as NumPy and torch check
                raise ValueError(f"{op}: {name} cannot be negative")
            v = _ns.astype(v, rd)
            w = v if w is None else _ns.multiply(w, v)
    avg, wsum = average(x, axis=1, weights=None if w is None else
                        _ns.astype(w, dtype) if dtype is not rd else w, returned=True)
    wsum = wsum[0]
    if w is None:
        fact = float(builtins.max(x.shape[1] - ddof, 0))
    elif ddof == 0:
        fact = _ns.real(wsum) if wsum.dtype.kind == "c" else wsum
    elif aweights is None:
        fact = _ns.subtract(_ns.real(wsum) if wsum.dtype.kind == "c" else wsum, ddof)
    else:
        ws = _ns.real(wsum) if wsum.dtype.kind == "c" else wsum
        fact = _ns.subtract(ws, _ns.divide(_ns.multiply(ddof, _ns.sum(
            _ns.multiply(w, _ns.astype(aweights, rd)))), ws))
    if isinstance(fact, Array):
        fact = _ns.where(_ns.less_equal(fact, 0), 0.0, fact)
    xc = _ns.subtract(x, _ns.reshape(avg, (-1, 1)))
    xt = _ns.matrix_transpose(xc if w is None else _ns.multiply(xc, _ns.astype(w, dtype)))
    c = _ns.matmul(xc, _ns.conj(xt) if dtype.kind == "c" else xt)
    inv = _ns.divide(1.0, fact) if isinstance(fact, Array) else (
        1.0 / fact if fact else math.inf)
    c = _ns.multiply(c, _ns.astype(inv, dtype) if isinstance(inv, Array) else inv)
    axes = tuple(i for i, s in enumerate(c.shape) if s == 1)
    return _ns.squeeze(c, axis=axes) if axes else c


def corrcoef(x: Array, y: Array | None = None, rowvar: bool = True, *, dtype=None) -> Array:
    """Pearson correlation coefficients (cov normalized by the standard deviations, clipped
    to [-1, 1])."""
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return _ns.divide(c, c)
    d = _ns.linalg.diagonal(c)
    sd = _ns.sqrt(_ns.real(d) if d.dtype.kind == "c" else d)
    if c.dtype.kind == "c":
        sd = _ns.astype(sd, c.dtype)
    c = _ns.divide(_ns.divide(c, _ns.reshape(sd, (-1, 1))), _ns.reshape(sd, (1, -1)))
    if c.dtype.kind == "c":
        return c
    return _ns.clip(c, -1.0, 1.0)


# ---- histograms and binning ------------------------------------------------------------------
def _count_into(idx: Array, nbins: int, weights: Array | None, wd) -> Array:
    """Per-bin counts of the bin indices ``idx`` (indices outside [0, nbins) count nowhere), or
    weight sums in float64 cast to ``wd``: a stable sort brings each bin's elements together in
    their index order, so a bin's weights add in np.bincount's order (segment_sum); memory is
    O(n + nbins), where a one-hot mask took O(n nbins)."""
    bins = _ns.arange(nbins, dtype=dt.int64, device=idx.device)
    if weights is None:
        keys = _ns.sort(idx)
        return _ns.subtract(_ns.searchsorted(keys, bins, side="right"),
                            _ns.searchsorted(keys, bins, side="left"))
    order, starts, ends = segments.sorted_runs(idx, nbins)
    w = _ns.take(weights, order)
    # in float64 (complex: its parts apart, as np.histogram adds them)
    w = _ns.astype(w, dt.complex128 if w.dtype.kind == "c" else dt.float64)
    return _ns.astype(segments.segment_sum(w, starts, ends), wd)


_BIN_RULES = ("auto", "doane", "fd", "rice", "scott", "sqrt", "stone", "sturges")


def _host_pair(x: Array) -> tuple:
    """x's minimum and maximum as NumPy scalars of x's dtype (one host read)."""
    h = np.asarray(_ns.stack([_ns.min(x), _ns.max(x)]))
    return h[0], h[1]


def _outer_edges(x: Array, range, op: str) -> tuple:
    """NumPy's outer edges: ``range``, or the data's minimum and maximum (read on the host), or
    (0, 1) for no data; widened by 0.5 each way where they are equal."""
    if range is not None:
        lo, hi = range
        if lo > hi:
            raise ValueError(f"{op}: max must be larger than min in range parameter")
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"{op}: supplied range of [{lo}, {hi}] is not finite")
    elif x.size == 0:
        lo, hi = 0, 1
    else:
        lo, hi = _host_pair(x)
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"{op}: autodetected range of [{lo}, {hi}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _spread(lo, hi):
    """hi - lo as NumPy computes a range (integers without overflow)."""
    if isinstance(lo, np.integer) or isinstance(hi, np.integer):
        return int(hi) - int(lo)
    return np.subtract(hi, lo)


def _rule_width(rule: str, x: Array, hd, bounds: tuple):
    """The bin width NumPy's estimator ``rule`` gives for the (range-trimmed) data x, from
    statistics computed on the device and read as scalars (``hd``: x's NumPy dtype)."""
    n = x.size
    lo, hi = _host_pair(x)
    ptp = _spread(lo, hi)
    if rule == "sqrt":
        return ptp / np.sqrt(n)
    if rule == "sturges":
        return ptp / (np.log2(n) + 1.0)
    if rule == "rice":
        return ptp / (2.0 * n ** (1.0 / 3))
    if rule == "scott":
        return (24.0 * np.pi ** 0.5 / n) ** (1.0 / 3.0) * np.asarray(_ns.std(x))[()]
    if rule == "fd":
        p = np.asarray(_ns.percentile(x, [75, 25]))
        return 2.0 * (p[0] - p[1]) * n ** (-1.0 / 3.0)
    if rule == "auto":
        fd, sturges = _rule_width("fd", x, hd, bounds), _rule_width("sturges", x, hd, bounds)
        return min(max(fd, _rule_width("sqrt", x, hd, bounds) / 2), sturges)
    if rule == "doane":
        if n <= 2:
            return 0.0
        sg1 = np.sqrt(6.0 * (n - 2) / ((n + 1.0) * (n + 3)))
        xf = _float_of(x, "histogram")
        sigma = _ns.std(xf)
        if not np.asarray(sigma)[()] > 0.0:
            return 0.0
        g1 = np.asarray(_ns.mean(_ns.pow(_ns.divide(_ns.subtract(xf, _ns.mean(xf)), sigma), 3)))
        return ptp / (1.0 + np.log2(n) + np.log2(1.0 + np.absolute(g1[()]) / sg1))
    # stone: the count minimising the estimated L2 risk, over 1..max(100, sqrt(n)) bins, each
    # bin count from one searchsorted of every candidate's edges in the sorted data
    if n <= 1 or ptp == 0:
        return 0
    top = builtins.max(100, int(np.sqrt(n)))
    et = _edge_type(bounds, hd)
    cand = [np.linspace(bounds[0], bounds[1], k + 1, endpoint=True, dtype=et) for k in
            builtins.range(1, top + 1)]
    flat = np.concatenate(cand)
    cd = dt.promote(_float_of(x, "histogram").dtype, dt.as_dtype(flat.dtype.name), "histogram")
    below = np.asarray(_ns.searchsorted(_ns.sort(_ns.astype(x, cd)),
                                        _ns.asarray(flat, dtype=cd, device=x.device)))
    best, best_j, at = None, None, 0
    for k in builtins.range(1, top + 1):
        pos = below[at:at + k + 1].copy()
        pos[-1] = n   # the last bin is closed (the data are trimmed to the range)
        pk = np.diff(pos) / n
        j = (2 - (n + 1) * pk.dot(pk)) / (ptp / k)
        if best_j is None or j < best_j:
            best, best_j = k, j
        at += k + 1
    return ptp / best


def _edge_type(bounds: tuple, hd):
    """NumPy's dtype of equal-width edges: that of the bounds and the data, integers as float."""
    t = np.result_type(bounds[0], bounds[1], hd)
    return np.result_type(t, float) if t.kind in "iub" else t


def _bin_edges(x: Array, bins, range, weights, op: str) -> Array:
    """The bin edges of the flat data x, as NumPy's histogram computes them."""
    hd = np.dtype(x.dtype.name)
    if isinstance(bins, str):
        if bins not in _BIN_RULES:
            raise ValueError(f"{op}: {bins!r} is not a valid estimator for `bins`; expected one "
                             f"of {', '.join(_BIN_RULES)}")
        if weights is not None:
            raise TypeError(f"{op}: automated estimation of the number of bins is not "
                            "supported for weighted data")
        bounds = _outer_edges(x, range, op)
        if range is not None:   # the estimators see the data inside the range only
            x = x[_ns.logical_and(_ns.greater_equal(x, bounds[0]), _ns.less_equal(x, bounds[1]))]
        nb = 1
        if x.size:
            width = _rule_width(bins, x, hd, bounds)
            if width:
                if hd.kind in "iu" and width < 1:
                    width = 1
                nb = int(np.ceil(_spread(*bounds) / width))
    elif np.ndim(bins) == 0 and not isinstance(bins, Array):
        try:
            nb = operator.index(bins)
        except TypeError:
            raise TypeError(f"{op}: `bins` must be an integer, a string, or an array") from None
        if nb < 1:
            raise ValueError(f"{op}: `bins` must be positive, when an integer")
        bounds = _outer_edges(x, range, op)
    else:
        edges = _operand(bins, x, op, "bins") if not isinstance(bins, Array) else bins
        if edges.ndim != 1:
            raise ValueError(f"{op}: `bins` must be 1d, when an array")
        if not bool(_ns.all(_ns.greater_equal(edges[1:], edges[:-1]))):
            raise ValueError(f"{op}: `bins` must increase monotonically, when an array")
        return edges
    edges_h = np.linspace(bounds[0], bounds[1], nb + 1, endpoint=True,
                          dtype=_edge_type(bounds, hd))
    if np.any(edges_h[:-1] >= edges_h[1:]):
        raise ValueError(f"{op}: too many bins for data range; cannot create {nb} finite-sized "
                         "bins")
    return _ns.asarray(edges_h, device=x.device)


def _flat_weights(weights, a: Array, op: str) -> Array | None:
    if weights is None:
        return None
    _arr(weights, op, "weights")
    if weights.shape != a.shape:
        raise ValueError(f"{op}: weights should have the same shape as a")
    return _flat(weights)


def histogram_bin_edges(a: Array, bins=10, range=None, weights=None) -> Array:
    """The edges np.histogram would use: ``bins`` a count, edges, or an estimator's name
    ('auto', 'fd', 'doane', 'rice', 'scott', 'sqrt', 'stone', 'sturges'; read on the host)."""
    op = "histogram_bin_edges"
    x = _flat(_arr(a, op))
    return _bin_edges(x, bins, range, _flat_weights(weights, a, op), op)


def _bin_index(x: Array, edges: Array, op: str) -> Array:
    """Each x's bin among ``edges`` (the last bin closed), -1 outside them."""
    nb = edges.shape[0] - 1
    cd = dt.promote(_float_of(x, op).dtype, _float_of(edges, op).dtype, op)
    xf, ef = _ns.astype(x, cd), _ns.astype(edges, cd)
    idx = _ns.subtract(_ns.searchsorted(ef, xf, side="right"), 1)
    idx = _ns.where(_ns.equal(xf, ef[-1]), nb - 1, idx)
    valid = _ns.logical_and(_ns.greater_equal(xf, ef[0]), _ns.less_equal(xf, ef[-1]))
    return _ns.where(valid, idx, -1)


def histogram(a: Array, bins=10, range=None, density: bool | None = None,
              weights: Array | None = None) -> tuple[Array, Array]:
    """Counts of ``a``'s elements in ``bins`` (a count over ``range``, monotonic edges, or an
    estimator's name) and the bin edges; without ``range`` the data's minimum and maximum are
    read on the host."""
    op = "histogram"
    x = _flat(_arr(a, op))
    weights = _flat_weights(weights, a, op)
    edges = _bin_edges(x, bins, range, weights, op)
    nb = edges.shape[0] - 1
    wd = None if weights is None else weights.dtype
    counts = _count_into(_bin_index(x, edges, op), nb, weights, wd)
    if density:
        cf = _ns.astype(counts, dt.float64) if counts.dtype.kind in "iu" else counts
        widths = _ns.diff(_ns.astype(edges, cf.dtype))
        counts = _ns.divide(_ns.divide(cf, widths), _ns.sum(cf))
    return counts, edges


def _sample(sample, op: str) -> Array:
    """histogramdd's sample as an (N, D) Array: an (N, D) Array, or D arrays of N values."""
    if isinstance(sample, Array):
        return _ns.reshape(sample, (-1, 1)) if sample.ndim == 1 else sample
    cols = [_arr(c, op, "sample") for c in sample]
    if not cols:
        raise ValueError(f"{op}: sample must hold at least one coordinate array")
    d = cols[0].dtype
    for c in cols[1:]:
        d = dt.promote(d, c.dtype, op)
    return _ns.stack([_ns.astype(c, d) for c in cols], axis=1)


def histogramdd(sample, bins=10, range=None, density: bool | None = None,
                weights: Array | None = None) -> tuple[Array, list]:
    """The D-dimensional histogram of N points (an (N, D) Array or D arrays): float64 counts
    (weight sums) and the D edge arrays; each axis's ``bins`` a count or edges."""
    op = "histogramdd"
    s = _sample(sample, op)
    if s.ndim != 2:
        raise ValueError(f"{op}: sample must be an (N, D) array or a sequence of D arrays, got "
                         f"shape {s.shape}")
    n, d = s.shape
    if weights is not None:
        _arr(weights, op, "weights")
        if weights.shape != (n,):
            raise ValueError(f"{op}: weights must hold one value per sample ({n}), got shape "
                             f"{weights.shape}")
    try:
        m = len(bins)
    except TypeError:
        m = None
    if m is None:
        bins = [bins] * d
    elif m != d:
        raise ValueError(f"{op}: the dimension of bins must be equal to the dimension of the "
                         "sample x")
    if range is None:
        range = [None] * d
    elif len(range) != d:
        raise ValueError(f"{op}: range must hold one (min, max) pair per dimension ({d})")
    edges, key, valid = [], None, None
    for i in builtins.range(d):
        col = s[:, i]
        b = bins[i]
        if isinstance(b, str):
            raise TypeError(f"{op}: `bins[{i}]` must be an integer or an array (estimators are "
                            "histogram's)")
        if not isinstance(b, Array) and np.ndim(b) == 0:
            try:
                k = operator.index(b)
            except TypeError:
                raise TypeError(f"{op}: `bins[{i}]` must be an integer, when a scalar") from None
            if k < 1:
                raise ValueError(f"{op}: `bins[{i}]` must be positive, when an integer")
            lo, hi = _outer_edges(col, range[i], op)
            e = _ns.asarray(np.linspace(lo, hi, k + 1), device=s.device)
        else:
            e = _operand(b, col, op, "bins") if not isinstance(b, Array) else b
            if e.ndim != 1:
                raise ValueError(f"{op}: `bins[{i}]` must be a scalar or a 1d array")
            if not bool(_ns.all(_ns.greater_equal(e[1:], e[:-1]))):
                raise ValueError(f"{op}: `bins[{i}]` must be monotonically increasing, when an "
                                 "array")
        edges.append(e)
        j = _bin_index(col, e, op)
        ok = _ns.greater_equal(j, 0)
        key = j if key is None else _ns.add(_ns.multiply(key, e.shape[0] - 1), j)
        valid = ok if valid is None else _ns.logical_and(valid, ok)
    shape = tuple(e.shape[0] - 1 for e in edges)
    total = math.prod(shape)
    w = None if weights is None else weights
    h = _count_into(_ns.where(valid, key, -1), total, w, dt.float64)
    h = _ns.reshape(_ns.astype(h, dt.float64), shape)
    if density:
        h = _ns.divide(h, _ns.sum(h))
        for i, e in enumerate(edges):
            widths = _ns.diff(_ns.astype(e, dt.float64))
            h = _ns.divide(h, _ns.reshape(widths, tuple(-1 if k == i else 1
                                                          for k in builtins.range(d))))
    return h, edges


def histogram2d(x: Array, y: Array, bins=10, range=None, density: bool | None = None,
                weights: Array | None = None) -> tuple[Array, Array, Array]:
    """The 2-D histogram of the points (x, y): float64 counts and the x and y edges (histogramdd
    of the pair; ``bins`` a count, a pair of counts or edges, or one edge array for both)."""
    try:
        m = len(bins)
    except TypeError:
        m = 1
    if m not in (1, 2):   # NumPy: one edge array serves both axes
        bins = [bins, bins]
    h, (ex, ey) = histogramdd([x, y], bins, range, density, weights)
    return h, ex, ey


def bincount(x: Array, weights: Array | None = None, minlength: int = 0) -> Array:
    """Occurrences of each value 0..max(x) of the non-negative 1-D integer ``x`` (weight sums
    with ``weights``, in float64); its maximum is read on the host for the result's length."""
    op = "bincount"
    _arr(x, op, "x")
    if x.ndim != 1:
        raise ValueError(f"{op}: object too deep for desired array (x must be 1-D)")
    if x.dtype.kind not in "iub":
        raise TypeError(f"{op}: cannot cast array data from {x.dtype.name} to int64")
    (minlength,) = _ints_arg(minlength, op, "minlength")
    if minlength < 0:
        raise ValueError(f"{op}: 'minlength' must not be negative")
    xi = _ns.astype(x, dt.int64)
    if x.size:
        lo, hi = (int(v) for v in np.asarray(_ns.stack([_ns.min(xi), _ns.max(xi)])))
        if lo < 0:
            raise ValueError(f"{op}: the first argument must be non-negative")
    else:
        hi = -1
    n = builtins.max(hi + 1, minlength)
    if weights is not None:
        _arr(weights, op, "weights")
        if weights.shape != x.shape:
            raise ValueError(f"{op}: the weights and list don't have the same length")
    return _count_into(xi, n, weights, dt.float64)


def digitize(x: Array, bins: Array, right: bool = False) -> Array:
    """Index of the bin of each ``x`` (searchsorted on increasing or decreasing 1-D ``bins``;
    their direction is read on the host)."""
    op = "digitize"
    if not isinstance(x, Array) and isinstance(bins, Array):   # a number or a list of them
        x = _ns.asarray(np.asarray(x), device=bins.device)
    _arr(x, op, "x")
    bins = _operand(bins, x, op, "bins")
    if bins.ndim != 1:
        raise ValueError(f"{op}: bins must be 1-dimensional")
    if x.dtype.kind == "c":
        raise TypeError(f"{op}: x may not be complex")
    side = "left" if right else "right"
    d = bins[1:] if bins.shape[0] > 1 else bins
    inc = bool(_ns.all(_ns.greater_equal(d, bins[:-1]))) if bins.shape[0] > 1 else True
    if not inc and not bool(_ns.all(_ns.less_equal(d, bins[:-1]))):
        raise ValueError(f"{op}: bins must be monotonically increasing or decreasing")
    if inc:
        return _ns.searchsorted(bins, x, side=side)
    return _ns.subtract(bins.shape[0], _ns.searchsorted(_ns.flip(bins), x, side=side))


# ---- elementwise -----------------------------------------------------------------------------
def nan_to_num(x: Array, copy: bool = True, nan: float = 0.0, posinf: float | None = None,
               neginf: float | None = None) -> Array:
    """NaN replaced by ``nan``, infinities by ``posinf``/``neginf`` (the dtype's largest and
    smallest finite values by default); complex parts each."""
    _arr(x, "nan_to_num", "x")
    if x.dtype.kind not in "fc":
        return _ns.asarray(x, copy=True)
    if x.dtype.kind == "c":
        re = nan_to_num(_ns.real(x), nan=nan, posinf=posinf, neginf=neginf)
        im = nan_to_num(_ns.imag(x), nan=nan, posinf=posinf, neginf=neginf)
        return _ns.add(_ns.astype(re, x.dtype), _ns.multiply(_ns.astype(im, x.dtype), 1j))
    fi = dt.finfo(x.dtype)
    hi = fi.max if posinf is None else posinf
    lo = fi.min if neginf is None else neginf
    r = _ns.where(_ns.isnan(x), float(nan), x)
    r = _ns.where(_ns.logical_and(_ns.isinf(x), _ns.greater(x, 0)), float(hi), r)
    return _ns.where(_ns.logical_and(_ns.isinf(x), _ns.less(x, 0)), float(lo), r)


def heaviside(x1: Array, x2, /) -> Array:
    """0 where x1 < 0, x2 where x1 == 0, 1 where x1 > 0 (NaN stays NaN)."""
    x1, x2 = _pair(x1, x2, "heaviside")
    x1, x2 = _float_of(x1, "heaviside"), _float_of(x2, "heaviside")
    r = _ns.where(_ns.less(x1, 0), 0.0, _ns.where(_ns.greater(x1, 0), 1.0, x2))
    return _ns.where(_ns.isnan(x1), x1, r)


def _fext(op: str, x1, x2, largest: bool) -> Array:
    x1, x2 = _pair(x1, x2, op)
    f = _ns.maximum if largest else _ns.minimum
    if x1.dtype.kind not in "fc" and x2.dtype.kind not in "fc":
        return f(x1, x2)
    r = f(x1, x2)
    return _ns.where(_ns.isnan(x2), x1, _ns.where(_ns.isnan(x1), x2, r))


def fmax(x1: Array, x2, /) -> Array:
    """Elementwise maximum ignoring NaNs (NaN only where both are)."""
    return _fext("fmax", x1, x2, True)


def fmin(x1: Array, x2, /) -> Array:
    """Elementwise minimum ignoring NaNs (NaN only where both are)."""
    return _fext("fmin", x1, x2, False)


def cbrt(x: Array, /) -> Array:
    """Real cube root (negative for negative x)."""
    x = _float_of(_arr(x, "cbrt", "x"), "cbrt")
    return _ns.multiply(_ns.sign(x), _ns.pow(_ns.abs(x), 1.0 / 3.0))


def exp2(x: Array, /) -> Array:
    """2 ** x."""
    x = _float_of(_arr(x, "exp2", "x"), "exp2")
    return _ns.pow(2.0, x)


def logaddexp2(x1: Array, x2, /) -> Array:
    """log2(2**x1 + 2**x2), without overflow."""
    x1, x2 = _pair(x1, x2, "logaddexp2")
    ln2 = math.log(2.0)
    x1, x2 = _float_of(x1, "logaddexp2"), _float_of(x2, "logaddexp2")
    return _ns.divide(_ns.logaddexp(_ns.multiply(x1, ln2), _ns.multiply(x2, ln2)), ln2)


def sinc(x: Array, /) -> Array:
    """sin(pi x) / (pi x), 1 at 0 (differentiable there)."""
    x = _float_of(_arr(x, "sinc", "x"), "sinc")
    low = x.dtype == dt.float16
    if low:   # pi x rounded to float16 puts sin(pi k) far from 0: float32 inside, rounded once
        x = _ns.astype(x, dt.float32)
    zero = _ns.equal(x, 0)
    y = _ns.multiply(_ns.where(zero, 1.0, x), math.pi)
    r = _ns.where(zero, 1.0, _ns.divide(_ns.sin(y), y))
    return _ns.astype(r, dt.float16) if low else r


# ---- polynomials ------------------------------------------------------------------------------
def polyval(p, x) -> Array:
    """The polynomial with coefficients ``p`` (highest power first; a 2-D ``p`` holds one
    polynomial per column) at ``x``, by Horner's scheme (NumPy's polyval)."""
    op = "polyval"
    if not isinstance(p, Array) and not isinstance(x, Array):
        raise TypeError(f"{op}: p or x must be a grilly Array")
    if isinstance(p, Array):
        x = _operand(x, p, op, "x")
    else:
        p = _operand(p, x, op, "p")
    d = dt.result_type(p.dtype, x.dtype)
    y = _ns.zeros_like(x, dtype=d)
    for i in range(p.shape[0] if p.ndim else 1):
        y = y * x + (p[i] if p.ndim else p)
    return y


def polyfit(x: Array, y: Array, deg: int, rcond=None, full: bool = False, w=None,
            cov: bool = False):
    """Least-squares polynomial of degree ``deg`` through (x, y), highest power first (NumPy's
    polyfit: the column-scaled Vandermonde system solved by lstsq); ``full=True`` also returns
    (residuals, rank, singular_values, rcond)."""
    op = "polyfit"
    if cov:
        raise NotImplementedError(f"{op}: cov=True is not supported")
    _arr(x, op, "x")
    (deg,) = _ints_arg(deg, op, "deg")
    if deg < 0:
        raise ValueError(f"{op}: expected deg >= 0, got {deg}")
    y = _operand(y, x, op, "y")
    if x.ndim != 1:
        raise TypeError(f"{op}: expected a 1-D vector for x, got shape {x.shape}")
    if x.shape[0] == 0:
        raise TypeError(f"{op}: expected a non-empty vector for x")
    if y.ndim not in (1, 2):
        raise TypeError(f"{op}: expected a 1-D or 2-D array for y, got shape {y.shape}")
    if x.shape[0] != y.shape[0]:
        raise TypeError(f"{op}: expected x and y to have the same length, got {x.shape[0]} "
                        f"and {y.shape[0]}")
    d = dt.result_type(_float_of(x, op).dtype, _float_of(y, op).dtype)
    if rcond is None:
        rcond = x.shape[0] * dt.finfo(d).eps
    low = d if d is dt.float16 else None   # linalg refuses float16: float32 inside, rounded once
    d = dt.float32 if low else d
    x, y = _ns.astype(x, d), _ns.astype(y, d)
    lhs, rhs = vander(x, deg + 1), y
    if w is not None:
        w = _operand(w, x, op, "w")
        if w.ndim != 1:
            raise TypeError(f"{op}: expected a 1-D array for weights w, got shape {w.shape}")
        if w.shape[0] != y.shape[0]:
            raise TypeError(f"{op}: expected w and y to have the same length")
        w = _ns.astype(w, d)
        lhs = lhs * w[:, None]
        rhs = rhs * (w[:, None] if y.ndim == 2 else w)
    scale = _ns.sqrt(_ns.sum(lhs * lhs, axis=0))   # unit columns: a better conditioned system
    c, resids, rank, sv = _ns.linalg.lstsq(lhs / scale, rhs, rcond)
    c = c / (scale[:, None] if c.ndim == 2 else scale)
    if low:
        c, resids, sv = (_ns.astype(a, low) for a in (c, resids, sv))
    return (c, resids, rank, sv, rcond) if full else c


# ---- interpolation, signals, calculus ---------------------------------------------------------
def interp(x: Array, xp: Array, fp: Array, left=None, right=None, period=None) -> Array:
    """Piecewise-linear interpolation of (xp, fp) at ``x`` (xp increasing; with ``period``,
    any order, x and xp taken modulo the period); in fp's float dtype (NumPy's is float64)."""
    op = "interp"
    if period is not None:
        if isinstance(period, bool) or not isinstance(period, (int, float, np.integer,
                                                                np.floating)):
            raise TypeError(f"{op}: period must be a number, got {type(period).__name__}")
        if period == 0:
            raise ValueError(f"{op}: period must be a non-zero value")
        period = builtins.abs(float(period))
        left = right = None   # (NumPy ignores them with a period)
    if not isinstance(x, Array):   # a number or a list of them, on the data points' device
        like = next((v for v in (xp, fp) if isinstance(v, Array)), None)
        x = _ns.asarray(np.asarray(x), device=None if like is None else like.device)
    _arr(x, op, "x")
    xp, fp = _operand(xp, x, op, "xp"), _operand(fp, x, op, "fp")
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError(f"{op}: data points must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError(f"{op}: fp and xp are not of the same length")
    if xp.shape[0] == 0:
        raise ValueError(f"{op}: array of sample points is empty")
    fd = _float_of(fp, op).dtype
    xd = dt.promote(_float_of(x, op).dtype, _float_of(xp, op).dtype, op)
    xv, xpv, fv = _ns.astype(x, xd), _ns.astype(xp, xd), _ns.astype(fp, fd)
    if period is not None:   # one period of sorted points, closed by a point each side
        xv, xpv = _ns.remainder(xv, period), _ns.remainder(xpv, period)
        order = _ns.argsort(xpv, stable=True)
        xpv, fv = _ns.take(xpv, order), _ns.take(fv, order)
        xpv = _ns.concat([_ns.subtract(xpv[-1:], period), xpv, _ns.add(xpv[:1], period)])
        fv = _ns.concat([fv[-1:], fv, fv[:1]])
    n = xpv.shape[0]
    if n == 1:
        j0 = j1 = _ns.zeros(x.shape, dtype=dt.int64, device=x.device)
        y = _ns.broadcast_to(fv[0], x.shape)
    else:
        j0 = _ns.clip(_ns.subtract(_ns.searchsorted(xpv, xv, side="right"), 1), 0, n - 2)
        j1 = _ns.add(j0, 1)
        x0, x1 = _ns.take(xpv, _flat(j0)), _ns.take(xpv, _flat(j1))
        f0, f1 = _ns.take(fv, _flat(j0)), _ns.take(fv, _flat(j1))
        slope = _ns.divide(_ns.subtract(f1, f0), _ns.astype(_ns.subtract(x1, x0), fd))
        y = _ns.add(_ns.multiply(slope, _ns.astype(_ns.subtract(_flat(xv), x0), fd)), f0)
        y = _ns.where(_ns.equal(_flat(xv), x1), f1, y)
        y = _ns.reshape(y, x.shape)
    lv = fv[0] if left is None else left
    rv = fv[-1] if right is None else right
    y = _ns.where(_ns.less(xv, xpv[0]), lv, y)
    return _ns.where(_ns.greater(xv, xpv[-1]), rv, y)


def _windows(a: Array, m: int, length: int) -> Array:
    """(length, m) windows a[k:k+m] of a zero-padded 1-D ``a`` (a gather, then rows)."""
    idx = [k + j for k in range(length) for j in range(m)]
    return _ns.reshape(_ns.take(a, _index(idx, a.device)), (length, m))


def _correlate_full(a: Array, v: Array) -> Array:
    la, lv = a.shape[0], v.shape[0]
    z = _ns.zeros((lv - 1,), dtype=a.dtype, device=a.device)
    ap = _ns.concat([z, a, z]) if lv > 1 else a
    return _ns.matmul(_windows(ap, lv, la + lv - 1), v)


def _signal(op: str, a, v, mode: str, conj: bool) -> Array:
    a, v = _pair(a, v, op)
    if a.ndim != 1 or v.ndim != 1:
        raise ValueError(f"{op}: object too deep for desired array (a and v must be 1-D)")
    if a.shape[0] == 0 or v.shape[0] == 0:
        raise ValueError(f"{op}: {'a' if a.shape[0] == 0 else 'v'} cannot be empty")
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"{op}: mode must be one of 'valid', 'same', or 'full', got {mode!r}")
    d = dt.promote(a.dtype, v.dtype, op)
    if d.kind == "b":
        d = dt.int64
    a, v = _ns.astype(a, d), _ns.astype(v, d)
    if conj and d.kind == "c":
        v = _ns.conj(v)
    full = _correlate_full(a, v)
    la, lv = a.shape[0], v.shape[0]
    n = la + lv - 1
    if mode == "full":
        return full
    if mode == "valid":
        k = builtins.max(la, lv) - builtins.min(la, lv) + 1
        start = builtins.min(la, lv) - 1
    else:
        k = builtins.max(la, lv)
        start = (n - k) // 2 if la >= lv or not conj else (n - k + 1) // 2
    return full[start:start + k]


def correlate(a: Array, v: Array, mode: str = "valid") -> Array:
    """Cross-correlation of 1-D sequences: c[k] = sum_n a[n + k] * conj(v[n])."""
    return _signal("correlate", a, v, mode, conj=True)


def convolve(a: Array, v: Array, mode: str = "full") -> Array:
    """Discrete linear convolution of 1-D sequences (modes full, same, valid)."""
    _arr(v, "convolve", "v") if isinstance(v, Array) else None
    vv = _ns.flip(v) if isinstance(v, Array) else v
    return _signal("convolve", a, vv, mode, conj=False)


def gradient(f: Array, *varargs, axis=None, edge_order: int = 1):
    """Second-order central differences inside, one-sided (edge_order 1 or 2) at the ends;
    spacings as scalars or coordinate arrays per axis. One axis: an array, else a tuple."""
    op = "gradient"
    _arr(f, op, "f")
    axes = tuple(range(f.ndim)) if axis is None else tuple(
        normalize_axis(a, f.ndim, op) for a in _ints_arg(axis, op, "axis"))
    if edge_order not in (1, 2):
        raise ValueError(f"{op}: 'edge_order' greater than 2 not supported")
    if len(varargs) == 0:
        dx = [1.0] * len(axes)
    elif len(varargs) == 1 and not isinstance(varargs[0], Array) and np.ndim(varargs[0]) == 0:
        dx = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes):
        dx = list(varargs)
    else:
        raise TypeError(f"{op}: invalid number of arguments")
    y = _float_of(f, op)
    out = []
    for ax, h in zip(axes, dx):
        n = y.shape[ax]
        if n < edge_order + 1:
            raise ValueError(f"{op}: shape of array too small to calculate a numerical gradient,"
                             " at least (edge_order + 1) elements are required")
        sl = lambda s, e: y[(slice(None),) * ax + (slice(s, e),)]   # noqa: E731
        if isinstance(h, Array) or np.ndim(h):
            h = _operand(h, y, op, "varargs")
            if h.ndim != 1 or h.shape[0] != n:
                raise ValueError(f"{op}: when 1d, distances must match the length of the "
                                 "corresponding dimension")
            out.append(_grad_coords(y, ax, _ns.astype(_float_of(h, op), y.dtype), edge_order, sl))
            continue
        h = float(h)
        mid = _ns.divide(_ns.subtract(sl(2, None), sl(None, -2)), 2.0 * h)
        if edge_order == 1:
            first = _ns.divide(_ns.subtract(sl(1, 2), sl(0, 1)), h)
            last = _ns.divide(_ns.subtract(sl(n - 1, n), sl(n - 2, n - 1)), h)
        else:
            first = _ns.divide(_ns.add(_ns.add(_ns.multiply(sl(0, 1), -1.5),
                                               _ns.multiply(sl(1, 2), 2.0)),
                                       _ns.multiply(sl(2, 3), -0.5)), h)
            last = _ns.divide(_ns.add(_ns.add(_ns.multiply(sl(n - 3, n - 2), 0.5),
                                              _ns.multiply(sl(n - 2, n - 1), -2.0)),
                                      _ns.multiply(sl(n - 1, n), 1.5)), h)
        out.append(_ns.concat([first, mid, last], axis=ax))
    return out[0] if len(out) == 1 else tuple(out)


def _grad_coords(y: Array, ax: int, x: Array, edge_order: int, sl) -> Array:
    """NumPy's non-uniform gradient along ``ax`` for coordinates ``x``."""
    n = y.shape[ax]
    shp = [1] * y.ndim
    shp[ax] = -1
    d = _ns.diff(x)
    r = lambda v: _ns.reshape(v, tuple(shp))   # noqa: E731
    mul, add, div, sub = _ns.multiply, _ns.add, _ns.divide, _ns.subtract
    dx1, dx2 = r(d[:-1]), r(d[1:])
    a = div(_ns.negative(dx2), mul(dx1, add(dx1, dx2)))
    b = div(sub(dx2, dx1), mul(dx1, dx2))
    c = div(dx1, mul(dx2, add(dx1, dx2)))
    mid = add(add(mul(a, sl(None, -2)), mul(b, sl(1, -1))), mul(c, sl(2, None)))
    if edge_order == 1:
        first = div(sub(sl(1, 2), sl(0, 1)), d[0])
        last = div(sub(sl(n - 1, n), sl(n - 2, n - 1)), d[-1])
    else:
        d1, d2 = d[0], d[1]
        a0 = div(_ns.negative(add(mul(d1, 2.0), d2)), mul(d1, add(d1, d2)))
        b0 = div(add(d1, d2), mul(d1, d2))
        c0 = div(_ns.negative(d1), mul(d2, add(d1, d2)))
        first = add(add(mul(a0, sl(0, 1)), mul(b0, sl(1, 2))), mul(c0, sl(2, 3)))
        d1, d2 = d[-2], d[-1]
        a1 = div(d2, mul(d1, add(d1, d2)))
        b1 = div(_ns.negative(add(d2, d1)), mul(d1, d2))
        c1 = div(add(mul(d2, 2.0), d1), mul(d2, add(d1, d2)))
        last = add(add(mul(a1, sl(n - 3, n - 2)), mul(b1, sl(n - 2, n - 1))),
                   mul(c1, sl(n - 1, n)))
    return _ns.concat([first, mid, last], axis=ax)


def trapezoid(y: Array, x: Array | None = None, dx: float = 1.0, axis: int = -1) -> Array:
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (samples at ``x``, or ``dx``
    apart)."""
    op = "trapezoid"
    _arr(y, op, "y")
    yf = _float_of(y, op)
    ax = normalize_axis(axis, y.ndim, op)
    n = y.shape[ax]
    sl = lambda v, s, e: v[(slice(None),) * ax + (slice(s, e),)]   # noqa: E731
    if x is None:
        d = float(dx)
    else:
        x = _ns.astype(_float_of(_operand(x, yf, op, "x"), op), yf.dtype)
        if x.ndim == 1:
            d = _ns.reshape(_ns.diff(x), tuple(-1 if i == ax else 1 for i in range(y.ndim)))
        else:
            d = _ns.diff(x, axis=ax)
    avg = _ns.divide(_ns.add(sl(yf, 1, n), sl(yf, 0, n - 1)), 2.0)
    return _ns.sum(_ns.multiply(d, avg), axis=ax)


def ediff1d(ary: Array, to_end=None, to_begin=None) -> Array:
    """Differences of consecutive elements of the flattened ``ary`` (to_begin/to_end joined,
    in ``ary``'s dtype)."""
    op = "ediff1d"
    x = _flat(_arr(ary, op, "ary"))
    parts = []
    for name, v in (("to_begin", to_begin), ("to_end", to_end)):
        if v is None:
            parts.append(None)
            continue
        v = _operand(v, x, op, name)
        if not dt.can_cast(v.dtype, x.dtype) and not (v.dtype.kind == x.dtype.kind):
            raise TypeError(f"{op}: dtype of `{name}` must be compatible with input `ary` under "
                            "the `same_kind` rule")
        parts.append(_flat(_ns.astype(v, x.dtype)))
    d = _ns.subtract(x[1:], x[:-1]) if x.dtype.kind != "b" else _ns.not_equal(x[1:], x[:-1])
    seq = [p for p in (parts[0], d, parts[1]) if p is not None]
    return _ns.concat(seq) if len(seq) > 1 else d


# ---- creation --------------------------------------------------------------------------------
def logspace(start, stop, num: int = 50, endpoint: bool = True, base: float = 10.0, dtype=None,
             axis: int = 0, *, device=None) -> Array:
    """``base ** linspace(start, stop, num)`` (float64 by default)."""
    if axis != 0:
        raise NotImplementedError("logspace: only axis=0 (scalar start and stop) is supported")
    y = _ns.linspace(float(start), float(stop), num, endpoint=endpoint, dtype=dt.float64,
                     device=device)
    r = _ns.pow(float(base), y)
    return r if dtype is None else _ns.astype(r, dtype)


def geomspace(start, stop, num: int = 50, endpoint: bool = True, dtype=None, axis: int = 0, *,
              device=None) -> Array:
    """Numbers spaced evenly on a log scale from ``start`` to ``stop`` (exact endpoints; both
    negative gives negative numbers)."""
    op = "geomspace"
    if axis != 0:
        raise NotImplementedError(f"{op}: only axis=0 (scalar start and stop) is supported")
    start, stop = float(start), float(stop)
    if start == 0 or stop == 0:
        raise ValueError(f"{op}: geometric sequence cannot include zero")
    sign = 1.0
    if start < 0 and stop < 0:
        start, stop, sign = -start, -stop, -1.0
    elif start < 0 or stop < 0:
        raise NotImplementedError(f"{op}: start and stop of opposite signs (complex results) "
                                  "are not supported")
    r = _ns.pow(10.0, _ns.linspace(math.log10(start), math.log10(stop), num, endpoint=endpoint,
                                   dtype=dt.float64, device=device))
    if num > 0:
        pos = list(range(num))
        vals = [r[i] for i in pos]
        vals[0] = _ns.asarray(start, dtype=dt.float64, device=device)
        if endpoint and num > 1:
            vals[-1] = _ns.asarray(stop, dtype=dt.float64, device=device)
        r = _ns.stack(vals)
    r = _ns.multiply(r, sign)
    return r if dtype is None else _ns.astype(r, dtype)


def vander(x: Array, N: int | None = None, increasing: bool = False) -> Array:
    """Vandermonde matrix: columns x**(N-1), ..., x**0 (the other way when increasing)."""
    op = "vander"
    _arr(x, op, "x")
    if x.ndim != 1:
        raise ValueError(f"{op}: x must be a one-dimensional array or sequence")
    n = x.shape[0] if N is None else _ints_arg(N, op, "N")[0]
    m = x.shape[0]
    if n == 0:
        return _ns.zeros((m, 0), dtype=x.dtype, device=x.device)
    d = dt.int64 if x.dtype.kind == "b" else x.dtype
    ones = _ns.ones((m, 1), dtype=d, device=x.device)
    cols = _ns.concat([ones, _ns.broadcast_to(_ns.reshape(_ns.astype(x, d), (m, 1)),
                                              (m, n - 1))], axis=1) if n > 1 else ones
    v = _ns.cumulative_prod(cols, axis=1)
    return v if increasing else _ns.flip(v, axis=1)


def indices(dimensions: Sequence[int], dtype=int, sparse: bool = False, *, device=None):
    """Grid of the index of each position along each axis: one array of shape
    (len(dimensions), *dimensions), or a tuple of broadcastable arrays when sparse."""
    dims = _ints_arg(dimensions, "indices", "dimensions")
    d = dt.int64 if dtype is int else dt.as_dtype(dtype, "indices")
    out = []
    for i, n in enumerate(dims):
        shp = tuple(n if j == i else 1 for j in range(len(dims)))
        out.append(_ns.reshape(_ns.arange(n, dtype=d, device=device), shp))
    if sparse:
        return tuple(out)
    if not dims:
        return _ns.zeros((0,), dtype=d, device=device)
    return _ns.stack([_ns.broadcast_to(o, dims) for o in out])


def ix_(*args):
    """Open mesh of 1-D index sequences (bool ones as their nonzero positions), for
    ``a[ix_(rows, cols)]`` cross-product indexing."""
    out = []
    k = len(args)
    for i, s in enumerate(args):
        if not isinstance(s, Array):
            h = np.asarray(s)
            if h.size == 0:
                h = h.astype(np.int64)
            s = _ns.asarray(h)
        if s.ndim != 1:
            raise ValueError("ix_: cross index must be 1 dimensional")
        if s.dtype.kind == "b":
            (s,) = _ns.nonzero(s)
        out.append(_ns.reshape(s, tuple(-1 if j == i else 1 for j in range(k))))
    return tuple(out)


class _Grid:
    """``mgrid[...]``/``ogrid[...]``: NumPy's dense or open grid of slices (a complex step is
    a point count, as in linspace), built on the host and placed on the default device."""

    def __init__(self, grid, name: str):
        self._grid, self._name = grid, name

    def __getitem__(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        if not all(isinstance(k, slice) for k in keys):
            raise TypeError(f"{self._name}: expected slices such as {self._name}[0:3, 0:1:5j], "
                            f"got {key!r}")
        h = self._grid[key]
        if isinstance(h, (tuple, list)):
            return tuple(_ns.asarray(a) for a in h)
        return _ns.asarray(h)

    def __repr__(self) -> str:
        return f"grilly.{self._name}"


mgrid = _Grid(np.mgrid, "mgrid")
ogrid = _Grid(np.ogrid, "ogrid")
s_ = np.s_   # a slice object maker: no arrays involved
index_exp = np.index_exp


class _Concat:
    """``r_[...]``/``c_[...]``: NumPy's concatenation of arrays, scalars and slices (slices as
    arange, or linspace for a complex step) along the first axis, or for ``c_`` as columns
    along the last. NumPy's string directives ('0,2', 'r', 'c') are not supported."""

    def __init__(self, columns: bool):
        self._columns = columns
        self._name = "c_" if columns else "r_"

    def __getitem__(self, key):
        keys = key if isinstance(key, tuple) else (key,)
        like = next((k for k in keys if isinstance(k, Array)), None)
        dev = None if like is None else like.device
        parts = []
        for k in keys:
            if isinstance(k, str):
                raise NotImplementedError(f"{self._name}: string directives such as {k!r} are "
                                          "not supported; use concatenate or stack")
            if isinstance(k, slice):
                a = _ns.asarray(np.r_[k], device=dev)
            elif isinstance(k, Array):
                common_device(self._name, like, k)
                a = k
            elif like is not None and not isinstance(k, np.ndarray) and np.ndim(k) == 0:
                a = _operand(k, like, self._name, "item")   # a scalar takes the arrays' dtype
            else:
                a = _ns.asarray(k, device=dev)
            if self._columns:
                a = _ns.reshape(a, (-1, 1)) if a.ndim < 2 else a
            elif a.ndim == 0:
                a = _ns.reshape(a, (1,))
            parts.append(a)
        return _ns.concat(parts, axis=-1 if self._columns else 0)

    def __repr__(self) -> str:
        return f"grilly.{self._name}"


r_ = _Concat(columns=False)
c_ = _Concat(columns=True)


def _order(order: str, op: str) -> bool:
    """Whether ``order`` is NumPy's 'F' (the first axis varies fastest) rather than 'C'."""
    if order not in ("C", "F"):
        raise ValueError(f"{op}: order must be 'C' or 'F', got {order!r}")
    return order == "F"


def unravel_index(indices, shape: Sequence[int], order: str = "C") -> tuple:
    """The coordinates in an array of ``shape`` of flat ``indices`` (Python ints for an int);
    the bounds are checked as NumPy's, an Array's by one host read."""
    op = "unravel_index"
    dims = _ints_arg(shape, op, "shape")
    fortran = _order(order, op)
    total = math.prod(dims)
    if not isinstance(indices, Array):
        h = np.asarray(indices)
        if h.dtype.kind not in "iu":
            raise TypeError(f"{op}: only int indices permitted")
        if h.size and (h.min() < 0 or h.max() >= total):
            raise ValueError(f"{op}: index {int(h.max() if h.max() >= total else h.min())} is "
                             f"out of bounds for array with size {total}")
        if h.ndim == 0:
            return tuple(int(v) for v in np.unravel_index(int(h), dims, order=order))
        indices = _ns.asarray(h.astype(np.int64))
    if indices.dtype.kind not in "iu":
        raise TypeError(f"{op}: only int indices permitted")
    if indices.size:
        # a flat index past the end would wrap into valid-looking coordinates: NumPy's error
        lo, hi = int(_ns.min(indices)), int(_ns.max(indices))
        if lo < 0 or hi >= total:
            raise ValueError(f"{op}: index {hi if hi >= total else lo} is out of bounds for "
                             f"array with size {total}")
    out = []
    rem = _ns.astype(indices, dt.int64)
    for n in (dims if fortran else reversed(dims)):
        out.append(_ns.remainder(rem, n) if n else rem)
        rem = _ns.floor_divide(rem, n) if n else rem
    return tuple(out) if fortran else tuple(reversed(out))


def ravel_multi_index(multi_index, dims: Sequence[int], mode: str = "raise",
                      order: str = "C") -> Array:
    """Flat indices of the coordinates ``multi_index`` in an array of shape ``dims`` (mode
    'wrap' or 'clip'; 'raise' reads the coordinates on the host to check them)."""
    op = "ravel_multi_index"
    dims = _ints_arg(dims, op, "dims")
    fortran = _order(order, op)
    if len(multi_index) != len(dims):
        raise ValueError(f"{op}: parameter multi_index must be a sequence of length {len(dims)}")
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    dev = next((m.device for m in multi_index if isinstance(m, Array)), None)
    flat = None
    stride = 1
    axes = list(zip(multi_index, dims, modes))
    for m, n, md in (axes if fortran else reversed(axes)):
        c = m if isinstance(m, Array) else _ns.asarray(np.asarray(m, dtype=np.int64), device=dev)
        c = _ns.astype(c, dt.int64)
        if md == "wrap":
            c = _ns.remainder(c, n)
        elif md == "clip":
            c = _ns.clip(c, 0, n - 1)
        elif md == "raise":
            h = np.asarray(c)
            if h.size and (h.min() < 0 or h.max() >= n):
                raise ValueError(f"{op}: invalid entry in coordinates array")
        else:
            raise ValueError(f"{op}: clipmode must be one of 'clip', 'raise', or 'wrap'")
        term = _ns.multiply(c, stride)
        flat = term if flat is None else _ns.add(flat, term)
        stride *= n
    return flat


# ---- searching, sorting, placing --------------------------------------------------------------
def argwhere(a: Array) -> Array:
    """Indices of the nonzero elements, one row per element (data-dependent size)."""
    _arr(a, "argwhere")
    if a.ndim == 0:
        a = _ns.reshape(a, (1,))
        return _ns.zeros((int(_ns.count_nonzero(a)), 0), dtype=dt.int64, device=a.device)
    return _ns.stack(list(_ns.nonzero(a)), axis=1)


def flatnonzero(a: Array) -> Array:
    """Indices of the nonzero elements of the flattened ``a``."""
    return _ns.nonzero(_flat(_arr(a, "flatnonzero")))[0]


def _flat_positions(a: Array, ind, op: str, mode: str) -> Array:
    h = ind if isinstance(ind, Array) else _ns.asarray(np.asarray(ind, dtype=np.int64),
                                                       device=a.device)
    h = _ns.astype(_flat(h), dt.int64)
    n = a.size
    if mode == "wrap":
        return _ns.remainder(h, n)
    if mode == "clip":
        return _ns.clip(h, 0, n - 1)
    if mode != "raise":
        raise ValueError(f"{op}: clipmode must be one of 'clip', 'raise', or 'wrap'")
    hv = np.asarray(h)
    if hv.size and (hv.min() < -n or hv.max() >= n):
        raise IndexError(f"{op}: index {int(hv.max() if hv.max() >= n else hv.min())} is out "
                         f"of bounds for axis 0 with size {n}")
    return _ns.remainder(h, n) if n else h


def put(a: Array, ind, v, mode: str = "raise") -> None:
    """Write ``v`` (repeated as needed) at the flat positions ``ind`` of ``a``, in place
    (mode 'raise' reads the positions on the host to check them)."""
    op = "put"
    _arr(a, op)
    pos = _flat_positions(a, ind, op, mode)
    if pos.size == 0:
        return None
    vals = resize(_flat(_ns.astype(_operand(v, a, op, "v"), a.dtype)), (pos.size,))
    a[unravel_index(pos, a.shape)] = vals
    return None


def putmask(a: Array, mask: Array, values) -> None:
    """Write ``values`` (repeated over the flat positions) where ``mask``, in place."""
    op = "putmask"
    _arr(a, op)
    _arr(mask, op, "mask")
    if mask.shape != a.shape:
        raise ValueError(f"{op}: mask and data must be the same size")
    v = _ns.reshape(resize(_flat(_ns.astype(_operand(values, a, op, "values"), a.dtype)),
                           (a.size,)), a.shape)
    a[...] = _ns.where(_ns.astype(mask, dt.bool), v, a)
    return None


def place(arr: Array, mask: Array, vals) -> None:
    """Write the first N of ``vals`` (repeated as needed) into the N positions where ``mask``
    is true, in order, in place."""
    op = "place"
    _arr(arr, op, "arr")
    _arr(mask, op, "mask")
    if mask.size != arr.size:
        raise ValueError(f"{op}: mask and data must be the same size")
    v = _flat(_ns.astype(_operand(vals, arr, op, "vals"), arr.dtype))
    m = _ns.astype(_flat(mask), dt.bool)
    if v.size == 0:
        if bool(_ns.any(m)):
            raise ValueError(f"{op}: cannot insert from an empty array")
        return None
    k = _ns.remainder(_ns.subtract(_ns.cumulative_sum(_ns.astype(m, dt.int64)), 1), v.size)
    k = _ns.where(m, k, 0)
    arr[...] = _ns.reshape(_ns.where(m, _ns.take(v, k), _flat(arr)), arr.shape)
    return None


def put_along_axis(arr: Array, indices: Array, values, axis: int | None) -> None:
    """Write ``values`` at ``indices`` along ``axis`` (matched index by index elsewhere), in
    place (NumPy's put_along_axis; axis None: of the flattened array)."""
    op = "put_along_axis"
    _arr(arr, op, "arr")
    _arr(indices, op, "indices")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError(f"{op}: when axis=None, indices must have a single dimension")
        return put(arr, indices, values, mode="wrap")
    if indices.ndim != arr.ndim:
        raise ValueError(f"{op}: indices and arr must have the same number of dimensions")
    ax = normalize_axis(axis, arr.ndim, op)
    shape = np.broadcast_shapes(tuple(1 if i == ax else s for i, s in enumerate(arr.shape)),
                                tuple(1 if i == ax else s for i, s in enumerate(indices.shape)))
    shape = tuple(indices.shape[ax] if i == ax else s for i, s in enumerate(shape))
    key = []
    for d, n in enumerate(shape):
        if d == ax:
            key.append(_ns.broadcast_to(_ns.remainder(_ns.astype(indices, dt.int64),
                                                      arr.shape[ax]), shape))
        else:
            s = [1] * len(shape)
            s[d] = n
            key.append(_ns.broadcast_to(_ns.reshape(_ns.arange(n, dtype=dt.int64,
                                                               device=arr.device), tuple(s)),
                                        shape))
    v = _ns.broadcast_to(_ns.astype(_operand(values, arr, op, "values"), arr.dtype), shape)
    arr[tuple(key)] = v
    return None


def _kth(kth, n: int, op: str) -> None:
    for k in _ints_arg(kth, op, "kth"):
        if not -n <= k < n:
            raise ValueError(f"{op}: kth(={k}) out of bounds ({n})")


def partition(a: Array, kth, axis: int | None = -1, kind: str = "introselect",
              order=None) -> Array:
    """``a`` with the element at each ``kth`` position where a sort puts it, smaller ones
    before (here: fully sorted, a valid partition)."""
    _arr(a, "partition")
    if axis is None:
        a, axis = _flat(a), 0
    ax = normalize_axis(axis, a.ndim, "partition")
    _kth(kth, a.shape[ax], "partition")
    return _ns.sort(a, axis=ax)


def argpartition(a: Array, kth, axis: int | None = -1, kind: str = "introselect",
                 order=None) -> Array:
    """Indices that partition ``a`` at ``kth`` (here: a stable argsort, a valid one)."""
    _arr(a, "argpartition")
    if axis is None:
        a, axis = _flat(a), 0
    ax = normalize_axis(axis, a.ndim, "argpartition")
    _kth(kth, a.shape[ax], "argpartition")
    return _ns.argsort(a, axis=ax)


def lexsort(keys, axis: int = -1) -> Array:
    """Indices sorting by several keys, the last key primary (stable)."""
    op = "lexsort"
    if isinstance(keys, Array):
        if keys.ndim == 0:
            raise TypeError(f"{op}: need sequence of keys with len > 0 in lexsort")
        keys = [keys[i] for i in range(keys.shape[0])]
    keys = list(keys)
    if not keys:
        raise TypeError(f"{op}: need sequence of keys with len > 0 in lexsort")
    for i, k in enumerate(keys):
        _arr(k, op, f"keys[{i}]")
        if k.shape != keys[0].shape:
            raise ValueError(f"{op}: all keys need to be the same shape")
    ax = normalize_axis(axis, keys[0].ndim, op)
    idx = _ns.argsort(keys[0], axis=ax, stable=True)
    for k in keys[1:]:
        kk = _ns.take_along_axis(k, idx, axis=ax)
        idx = _ns.take_along_axis(idx, _ns.argsort(kk, axis=ax, stable=True), axis=ax)
    return idx


def select(condlist: Sequence[Array], choicelist: Sequence, default=0) -> Array:
    """From the first true condition's choice, elementwise (``default`` where none is)."""
    op = "select"
    if len(condlist) != len(choicelist):
        raise ValueError(f"{op}: list of cases must be same length as list of conditions")
    if not condlist:
        raise ValueError(f"{op}: select with an empty condition list is not possible")
    like = next((c for c in choicelist if isinstance(c, Array)), None)
    if like is None:
        like = _arr(condlist[0], op, "condlist[0]")
    for i, c in enumerate(condlist):
        _arr(c, op, f"condlist[{i}]")
        if c.dtype.kind != "b":
            raise TypeError(f"{op}: invalid entry {i} in condlist: should be boolean ndarray")
    out = default if not isinstance(default, Array) else default
    for c, v in zip(reversed(condlist), reversed(choicelist)):
        out = _ns.where(c, v, out)
    if not isinstance(out, Array):
        out = _ns.asarray(out, device=like.device)
    return out


def _truth(condition, like: Array, op: str) -> Array:
    """``condition`` (an Array or array_like) as a flat bool Array on like's device."""
    c = condition if isinstance(condition, Array) else _ns.asarray(np.asarray(condition),
                                                                     device=like.device)
    common_device(op, like, c)
    return c if c.dtype.kind == "b" else _ns.astype(c, dt.bool)


def compress(condition, a: Array, axis: int | None = None, out=None) -> Array:
    """The slices of ``a`` along ``axis`` (of the flattened a when None) where the 1-D
    ``condition`` is true (positions read on the host; a true entry past the end is an
    IndexError, as NumPy's)."""
    op = "compress"
    _no_out(op, out)
    _arr(a, op)
    c = _truth(condition, a, op)
    if c.ndim != 1:
        raise ValueError(f"{op}: condition must be a 1-d array, got shape {c.shape}")
    (pos,) = _ns.nonzero(c)
    if axis is None:
        return _ns.take(_ns.reshape(a, (-1,)), pos)
    if a.ndim == 0:
        raise ValueError(f"{op}: a must have at least one dimension for an axis")
    return _ns.take(a, pos, axis=normalize_axis(axis, a.ndim, op))


def extract(condition, arr: Array) -> Array:
    """The elements of the flattened ``arr`` where the flattened ``condition`` is true."""
    op = "extract"
    _arr(arr, op, "arr")
    (pos,) = _ns.nonzero(_ns.reshape(_truth(condition, arr, op), (-1,)))
    return _ns.take(_ns.reshape(arr, (-1,)), pos)


def choose(a, choices, out=None, mode: str = "raise") -> Array:
    """Elementwise ``choices[a]`` (a and the choices broadcast together); ``mode`` 'raise'
    (entries outside [0, n) are a ValueError, checked on the host), 'wrap' or 'clip'."""
    op = "choose"
    _no_out(op, out)
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"{op}: mode must be one of 'raise', 'wrap', 'clip', got {mode!r}")
    if isinstance(choices, Array):
        if choices.ndim == 0:
            raise ValueError(f"{op}: choices must be a sequence of arrays, got a 0-d array")
        choices = [choices[i] for i in builtins.range(choices.shape[0])]
    like = a if isinstance(a, Array) else next((c for c in choices if isinstance(c, Array)),
                                               None)
    dev = like.device if like is not None else None
    idx = a if isinstance(a, Array) else _ns.asarray(np.asarray(a), device=dev)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"{op}: a must hold integer indices, got {idx.dtype}")
    n = len(choices)
    if n == 0:
        raise ValueError(f"{op}: choices must not be empty")
    # arrays decide the dtype; Python scalars fit it, as NumPy 2's weak scalars do
    arrays = [c if isinstance(c, Array) else _ns.asarray(np.asarray(c), device=idx.device)
              for c in choices if not isinstance(c, (bool, int, float, complex))]
    d = None
    for c in arrays:
        common_device(op, idx, c)
        d = c.dtype if d is None else dt.promote(d, c.dtype, op)
    if d is None:
        d = _ns.asarray(np.asarray(choices)).dtype
    for c in choices:
        if isinstance(c, (bool, int, float, complex)):
            d = dt.scalar_result(d, c, op)
    cs = [_ns.full((), c, dtype=d, device=idx.device) if isinstance(c, (bool, int, float,
                                                                        complex))
          else _ns.astype(c if isinstance(c, Array) else
                          _ns.asarray(np.asarray(c), device=idx.device), d) for c in choices]
    shape = _ns.broadcast_shapes(idx.shape, *(c.shape for c in cs))
    if mode == "raise":
        if idx.size and bool(_ns.any(_ns.logical_or(_ns.less(idx, 0),
                                                    _ns.greater_equal(idx, n)))):
            raise ValueError(f"{op}: invalid entry in choice array (a must be in [0, {n}))")
    elif mode == "wrap":
        idx = _ns.remainder(idx, n)
    else:
        idx = _ns.clip(idx, 0, n - 1)
    stacked = _ns.stack([_ns.broadcast_to(c, shape) for c in cs])
    at = _ns.reshape(_ns.astype(_ns.broadcast_to(idx, shape), dt.int64), (1,) + shape)
    return _ns.reshape(_ns.take_along_axis(stacked, at, axis=0), shape)


# ---- sets ------------------------------------------------------------------------------------
def union1d(ar1: Array, ar2: Array) -> Array:
    """Sorted unique values in either array."""
    a, b = _pair(ar1, ar2, "union1d")
    return _ns.unique_values(_ns.concat([_flat(a), _flat(b)]))


def intersect1d(ar1: Array, ar2: Array, assume_unique: bool = False,
                return_indices: bool = False):
    """Sorted unique values in both arrays (with their first indices in each when
    return_indices)."""
    op = "intersect1d"
    a, b = _pair(ar1, ar2, op)
    if return_indices:
        ua, ia = _ns.unique_all(_flat(a))[:2]
        ub, ib = _ns.unique_all(_flat(b))[:2]
        keep = _ns.isin(ua, ub)
        vals = ua[keep]
        return vals, ia[keep], ib[_ns.isin(ub, vals)]
    ua = _flat(a) if assume_unique else _ns.unique_values(a)
    vals = ua[_ns.isin(ua, _flat(b))]
    return _ns.sort(vals) if assume_unique else vals


def setdiff1d(ar1: Array, ar2: Array, assume_unique: bool = False) -> Array:
    """Sorted unique values of ``ar1`` not in ``ar2`` (ar1 as it is when assume_unique)."""
    a, b = _pair(ar1, ar2, "setdiff1d")
    ua = _flat(a) if assume_unique else _ns.unique_values(a)
    return ua[_ns.isin(ua, _flat(b), invert=True)]


def setxor1d(ar1: Array, ar2: Array, assume_unique: bool = False) -> Array:
    """Sorted unique values in exactly one of the arrays."""
    a, b = _pair(ar1, ar2, "setxor1d")
    u = union1d(a, b)
    return u[_ns.logical_xor(_ns.isin(u, _flat(a)), _ns.isin(u, _flat(b)))]


# ---- windows ---------------------------------------------------------------------------------
def _window(M: int, op: str, f, device) -> Array:
    (M,) = _ints_arg(M, op, "M")
    if M < 1:
        return _ns.zeros((0,), dtype=dt.float64, device=device)
    if M == 1:
        return _ns.ones((1,), dtype=dt.float64, device=device)
    n = _ns.arange(1 - M, M, 2, dtype=dt.float64, device=device)
    return f(n, M)


def hamming(M: int, *, device=None) -> Array:
    """The Hamming window of M points."""
    return _window(M, "hamming", lambda n, m: _ns.add(0.54, _ns.multiply(
        _ns.cos(_ns.multiply(n, math.pi / (m - 1))), 0.46)), device)


def hanning(M: int, *, device=None) -> Array:
    """The Hann window of M points."""
    return _window(M, "hanning", lambda n, m: _ns.add(0.5, _ns.multiply(
        _ns.cos(_ns.multiply(n, math.pi / (m - 1))), 0.5)), device)


def blackman(M: int, *, device=None) -> Array:
    """The Blackman window of M points."""
    def f(n, m):
        c = _ns.cos(_ns.multiply(n, math.pi / (m - 1)))
        c2 = _ns.cos(_ns.multiply(n, 2.0 * math.pi / (m - 1)))
        return _ns.add(_ns.add(0.42, _ns.multiply(c, 0.5)), _ns.multiply(c2, 0.08))
    return _window(M, "blackman", f, device)


def bartlett(M: int, *, device=None) -> Array:
    """The Bartlett (triangular) window of M points."""
    def f(n, m):
        k = _ns.arange(1 - m, m, 2, dtype=dt.float64, device=n.device)
        return _ns.where(_ns.less_equal(k, 0), _ns.add(1.0, _ns.divide(k, m - 1)),
                         _ns.subtract(1.0, _ns.divide(k, m - 1)))
    return _window(M, "bartlett", f, device)


dispatch.export(globals())
