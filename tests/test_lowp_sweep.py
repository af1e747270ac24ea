"""float16 and bfloat16 across the whole namespace, on every device: each public function of
``grilly`` and ``grilly.nn.functional`` (and Array's methods and operators) called on float16 and
on bfloat16 arrays, against the same call on float32 arrays holding the same values, rounded to
the low dtype. Every input value is exact in float16 and bfloat16 alike (multiples of 1/16 of
magnitude under 4), so the float32 call sees exactly what the low call sees.

A result the float32 call returns as float32 must come back in the low dtype (NumPy keeps
float16; bfloat16 follows it), within ``ULPS`` of the low dtype (elementwise ops: 2; sums,
products and other accumulations: ``ACC``, looser, in units of the low dtype's spacing at the
largest magnitude of the reference, since a float16 accumulation rounds its partial sums);
integer and boolean results (argsort, comparisons, counts) must be equal. Ops that refuse low
precision (``REFUSE``: NumPy's linalg decompositions) must raise TypeError naming the op and
dtype on every device.
"""
from __future__ import annotations

import warnings

import ml_dtypes
import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
LOW = {"float16": (gp.float16, np.float16), "bfloat16": (gp.bfloat16, ml_dtypes.bfloat16)}
_R = np.random.default_rng(7)


def _vals(shape, kind: str = "any") -> np.ndarray:
    """Values exact in float16 and bfloat16: k/16, |k| < 64 (``pos``: 1/4..4; ``unit``: |x| < 1)."""
    if kind == "pos":
        k = _R.integers(4, 64, shape)
    elif kind == "unit":
        k = _R.integers(-15, 16, shape)
    else:
        k = _R.integers(-40, 41, shape)
    return (k / 16).astype(np.float32)


# the inputs each case draws on (float values; made into arrays of the swept dtype)
IN = {
    "a": _vals((3, 4)), "b": _vals((3, 4)), "p": _vals((3, 4), "pos"), "u": _vals((3, 4), "unit"),
    "v": _vals((5,)), "w": _vals((5,)), "sq": _vals((4, 4)), "col": _vals((3, 1)),
    "a3": _vals((2, 3, 4)), "img": _vals((2, 3, 6, 6)), "kern": _vals((4, 3, 3, 3)),
    "seq": _vals((2, 3, 8)), "k1": _vals((4, 3, 3)), "bias": _vals((4,)),
    "q": _vals((1, 2, 4, 8), "unit"), "kk": _vals((1, 2, 4, 8), "unit"),
    "vv": _vals((1, 2, 4, 8), "unit"), "lin_w": _vals((5, 4)), "pv": _vals((5,), "pos"),
    "prob": (_R.integers(1, 15, (3, 4)) / 16).astype(np.float32), "mat": np.array(
        [[4, 1, 0.5, 0], [1, 3, 0.25, 0.5], [0.5, 0.25, 2, 0], [0, 0.5, 0, 5]], np.float32),
}
IDX = np.array([2, 0, 1])          # integer operands stay integer
BOOL = np.array([[True, False, True, False]] * 3)
Z = np.zeros((3, 4), np.float32)
# ulps allowed by class (in the low dtype, of the reference result)
ULPS = 2
ACC = 8   # accumulations: in spacings of the low dtype at the reference's largest magnitude


def _c(fn, ins="a", tol="ew", low_ok=True):
    return (fn, tuple(ins.split(",")) if ins else (), tol, low_ok)


U = ["abs", "absolute", "cbrt", "ceil", "conj", "conjugate", "cos", "cosh", "deg2rad", "degrees",
     "exp", "exp2", "expm1", "fabs", "fix", "floor", "isfinite", "isinf", "isnan", "negative",
     "positive", "rad2deg", "radians", "real", "imag", "rint", "round", "around", "sign",
     "signbit", "sin", "sinc", "sinh", "square", "tan", "tanh", "trunc", "nan_to_num", "atan",
     "arctan", "asinh", "arcsinh"]
UP = ["log", "log10", "log1p", "log2", "sqrt", "reciprocal", "acosh", "arccosh"]
UU = ["acos", "arccos", "asin", "arcsin", "atanh", "arctanh"]
B = ["add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod",
     "maximum", "minimum", "fmax", "fmin", "copysign", "hypot", "atan2", "arctan2", "logaddexp",
     "logaddexp2", "heaviside", "equal", "not_equal", "less", "less_equal", "greater",
     "greater_equal", "isclose"]
CASES: dict[str, tuple] = {}
for _n in U:
    CASES[_n] = _c(lambda g, x, _n=_n: getattr(g, _n)(x))
for _n in UP:
    CASES[_n] = _c(lambda g, x, _n=_n: getattr(g, _n)(x), "p")
for _n in UU:
    CASES[_n] = _c(lambda g, x, _n=_n: getattr(g, _n)(x), "u")
for _n in B:
    CASES[_n] = _c(lambda g, x, y, _n=_n: getattr(g, _n)(x, y), "a,p")
CASES.update({
    "pow": _c(lambda g, x, y: g.pow(x, y), "p,a"),
    "power": _c(lambda g, x, y: g.power(x, y), "p,a"),
    "add_scalar": _c(lambda g, x: g.add(x, 1.5)),
    "multiply_scalar_0.1": _c(lambda g, x: x * 0.1),
    "rsub_scalar": _c(lambda g, x: 2 - x),
    "rtruediv_scalar": _c(lambda g, x: 1.0 / x, "p"),
    "pow_scalar": _c(lambda g, x: x ** 2),
    "gt_scalar": _c(lambda g, x: x > 0.5),
    "clip": _c(lambda g, x: g.clip(x, -1.0, 1.0)),
    "clip_arrays": _c(lambda g, x, lo, hi: g.clip(x, lo, hi), "a,u,p"),
    "where": _c(lambda g, x, y: g.where(x > 0, x, y), "a,b"),
    "where_scalar": _c(lambda g, x: g.where(x > 0, x, 0.0)),
    "round_decimals": _c(lambda g, x: g.round(x, decimals=1)),
    "allclose": _c(lambda g, x, y: g.allclose(x, y), "a,b"),
    "array_equal": _c(lambda g, x: g.array_equal(x, x)),
    "array_equiv": _c(lambda g, x: g.array_equiv(x, x)),
    # reductions
    **{f"{n}_{ax}": _c(lambda g, x, n=n, ax=ax: getattr(g, n)(x, axis=ax), "a", "acc")
       for n in ("sum", "prod", "mean", "nansum", "nanmean", "nanprod")
       for ax in (None, 0, 1)},
    **{f"{n}_{ax}": _c(lambda g, x, n=n, ax=ax: getattr(g, n)(x, axis=ax), "a", "acc")
       for n in ("std", "var", "nanstd", "nanvar", "median", "nanmedian", "average", "ptp")
       for ax in (None, 1)},
    **{f"{n}_{ax}": _c(lambda g, x, n=n, ax=ax: getattr(g, n)(x, axis=ax))
       for n in ("max", "min", "amax", "amin", "nanmax", "nanmin", "argmax", "argmin",
                 "nanargmax", "nanargmin", "all", "any", "count_nonzero")
       for ax in (None, 1)},
    "sum_keepdims": _c(lambda g, x: g.sum(x, axis=1, keepdims=True), "a", "acc"),
    "max_keepdims": _c(lambda g, x: g.max(x, axis=0, keepdims=True)),
    "mean_keepdims": _c(lambda g, x: g.mean(x, axis=(0, 1), keepdims=True), "a", "acc"),
    "var_correction": _c(lambda g, x: g.var(x, axis=0, correction=1), "a", "acc"),
    "sum_dim_torch": _c(lambda g, x: g.sum(x, dim=1, keepdim=True), "a", "acc"),
    **{f"{n}": _c(lambda g, x, n=n: getattr(g, n)(x, axis=1), "a", "acc")
       for n in ("cumsum", "cumprod", "cumulative_sum", "cumulative_prod", "nancumsum",
                 "nancumprod")},
    "cumsum_flat": _c(lambda g, x: g.cumsum(x), "a", "acc"),
    "percentile": _c(lambda g, x: g.percentile(x, 30.0, axis=1), "a", "acc"),
    "nanpercentile": _c(lambda g, x: g.nanpercentile(x, 30.0), "a", "acc"),
    "quantile": _c(lambda g, x: g.quantile(x, 0.3, axis=0), "a", "acc"),
    "nanquantile": _c(lambda g, x: g.nanquantile(x, 0.7), "a", "acc"),
    "diff": _c(lambda g, x: g.diff(x, axis=1)),
    "ediff1d": _c(lambda g, x: g.ediff1d(x), "v"),
    "gradient": _c(lambda g, x: g.gradient(x, axis=1)),
    "trapezoid": _c(lambda g, x: g.trapezoid(x, axis=1), "a", "acc"),
    "cov": _c(lambda g, x: g.cov(x), "a", "acc"),
    "corrcoef": _c(lambda g, x: g.corrcoef(x), "a", "acc"),
    "histogram": _c(lambda g, x: g.histogram(x, bins=4), "v", "acc"),
    "histogram_bin_edges": _c(lambda g, x: g.histogram_bin_edges(x, bins=4), "v", "acc"),
    "histogram2d": _c(lambda g, x, y: g.histogram2d(x, y, bins=3), "v,w", "acc"),
    "histogramdd": _c(lambda g, x: g.histogramdd(x, bins=2), "a", "acc"),
    "digitize": _c(lambda g, x, b: g.digitize(x, g.sort(b)), "a,v"),
    "searchsorted": _c(lambda g, x, b: g.searchsorted(g.sort(b), x), "v,w"),
    "bincount_weights": _c(lambda g, w: g.bincount(g.asarray([0, 1, 1, 3, 2], device=w.device),
                                                   weights=w), "v", "acc"),
    "interp": _c(lambda g, x, xp, fp: g.interp(x, g.sort(xp), fp), "a,v,w", "acc"),
    "polyval": _c(lambda g, p, x: g.polyval(p, x), "v,a", "acc"),
    "polyfit": _c(lambda g, x, y: g.polyfit(x, y, 1), "v,w", "acc"),
    "vander": _c(lambda g, x: g.vander(x, 3), "v", "acc"),
    "convolve": _c(lambda g, x, y: g.convolve(x, y), "v,w", "acc"),
    "correlate": _c(lambda g, x, y: g.correlate(x, y, "full"), "v,w", "acc"),
    # products
    "matmul": _c(lambda g, x, y: g.matmul(x, y.T), "a,b", "acc"),
    "matmul_op": _c(lambda g, x, y: x @ y, "a,sq", "acc"),
    "matmul_vec": _c(lambda g, x, y: g.matmul(x, y), "sq,bias", "acc"),
    "dot": _c(lambda g, x, y: g.dot(x, y), "v,w", "acc"),
    "vdot": _c(lambda g, x, y: g.vdot(x, y), "v,w", "acc"),
    "inner": _c(lambda g, x, y: g.inner(x, y), "a,b", "acc"),
    "outer": _c(lambda g, x, y: g.outer(x, y), "v,w"),
    "kron": _c(lambda g, x, y: g.kron(x, y), "col,v"),
    "tensordot": _c(lambda g, x, y: g.tensordot(x, y, axes=2), "a,b", "acc"),
    "vecdot": _c(lambda g, x, y: g.vecdot(x, y), "a,b", "acc"),
    "einsum": _c(lambda g, x, y: g.einsum("ij,kj->ik", x, y), "a,b", "acc"),
    "cross": _c(lambda g, x, y: g.cross(x[:, :3], y[:, :3]), "a,b", "acc"),
    "trace": _c(lambda g, x: g.trace(x), "sq", "acc"),
    # manipulation (exact: values only move)
    "reshape": _c(lambda g, x: g.reshape(x, (4, 3))),
    "ravel": _c(lambda g, x: g.ravel(x)),
    "transpose": _c(lambda g, x: g.transpose(x)),
    "permute_dims": _c(lambda g, x: g.permute_dims(x, (2, 0, 1)), "a3"),
    "swapaxes": _c(lambda g, x: g.swapaxes(x, 0, 2), "a3"),
    "moveaxis": _c(lambda g, x: g.moveaxis(x, 0, -1), "a3"),
    "rollaxis": _c(lambda g, x: g.rollaxis(x, 2), "a3"),
    "matrix_transpose": _c(lambda g, x: g.matrix_transpose(x), "a3"),
    "expand_dims": _c(lambda g, x: g.expand_dims(x, axis=1)),
    "squeeze": _c(lambda g, x: g.squeeze(x, axis=1), "col"),
    "flip": _c(lambda g, x: g.flip(x, axis=1)),
    "fliplr": _c(lambda g, x: g.fliplr(x)),
    "flipud": _c(lambda g, x: g.flipud(x)),
    "roll": _c(lambda g, x: g.roll(x, 2, axis=1)),
    "rot90": _c(lambda g, x: g.rot90(x)),
    "tile": _c(lambda g, x: g.tile(x, (2, 1))),
    "repeat": _c(lambda g, x: g.repeat(x, 2, axis=0)),
    "concat": _c(lambda g, x, y: g.concat([x, y], axis=1), "a,b"),
    "concatenate": _c(lambda g, x, y: g.concatenate([x, y]), "a,b"),
    "stack": _c(lambda g, x, y: g.stack([x, y]), "a,b"),
    "vstack": _c(lambda g, x, y: g.vstack([x, y]), "a,b"),
    "hstack": _c(lambda g, x, y: g.hstack([x, y]), "a,b"),
    "dstack": _c(lambda g, x, y: g.dstack([x, y]), "a,b"),
    "column_stack": _c(lambda g, x, y: g.column_stack([x, y]), "v,w"),
    "block": _c(lambda g, x, y: g.block([[x, y]]), "a,b"),
    "split": _c(lambda g, x: g.split(x, 2, axis=1)),
    "array_split": _c(lambda g, x: g.array_split(x, 3, axis=1)),
    "hsplit": _c(lambda g, x: g.hsplit(x, 2)),
    "vsplit": _c(lambda g, x: g.vsplit(x, 3)),
    "dsplit": _c(lambda g, x: g.dsplit(x, 2), "a3"),
    "unstack": _c(lambda g, x: g.unstack(x)),
    "broadcast_to": _c(lambda g, x: g.broadcast_to(x, (2, 3, 4))),
    "broadcast_arrays": _c(lambda g, x, y: g.broadcast_arrays(x, y), "col,v"),
    "atleast_1d": _c(lambda g, x: g.atleast_1d(x)),
    "atleast_2d": _c(lambda g, x: g.atleast_2d(x), "v"),
    "atleast_3d": _c(lambda g, x: g.atleast_3d(x)),
    "pad": _c(lambda g, x: g.pad(x, 1)),
    "pad_reflect": _c(lambda g, x: g.pad(x, 1, mode="reflect")),
    "resize": _c(lambda g, x: g.resize(x, (5, 3))),
    "append": _c(lambda g, x, y: g.append(x, y), "a,v"),
    "insert": _c(lambda g, x: g.insert(x, 1, 0.5, axis=1)),
    "delete": _c(lambda g, x: g.delete(x, 1, axis=1)),
    "trim_zeros": _c(lambda g, x: g.trim_zeros(g.concat([x * 0, x, x * 0])), "pv"),
    "diag": _c(lambda g, x: g.diag(x), "sq"),
    "diagflat": _c(lambda g, x: g.diagflat(x), "v"),
    "diagonal": _c(lambda g, x: g.diagonal(x), "sq"),
    "tril": _c(lambda g, x: g.tril(x), "sq"),
    "triu": _c(lambda g, x: g.triu(x, 1), "sq"),
    "copy": _c(lambda g, x: g.copy(x)),
    "take": _c(lambda g, x: g.take(x, g.asarray(IDX, device=x.device), axis=1)),
    "take_flat": _c(lambda g, x: g.take(x, [5, 0, 11])),
    "take_along_axis": _c(lambda g, x: g.take_along_axis(x, g.argsort(x, axis=1), axis=1)),
    "compress": _c(lambda g, x: g.compress([True, False, True], x, axis=0)),
    "extract": _c(lambda g, x: g.extract(x > 0, x)),
    "choose": _c(lambda g, x, y: g.choose(g.asarray(BOOL.astype(np.int64), device=x.device),
                                          [x, y]), "a,b"),
    "select": _c(lambda g, x, y: g.select([x > 0, y > 0], [x, y], 0.0), "a,b"),
    "fill_diagonal_copy": _c(lambda g, x: g.diag(g.diag(x)), "sq"),
    "nonzero": _c(lambda g, x: g.nonzero(x)),
    "argwhere": _c(lambda g, x: g.argwhere(x)),
    "flatnonzero": _c(lambda g, x: g.flatnonzero(x)),
    "meshgrid": _c(lambda g, x, y: g.meshgrid(x, y), "v,w"),
    # sorting, sets
    "sort": _c(lambda g, x: g.sort(x, axis=1)),
    "sort_desc": _c(lambda g, x: g.sort(x, axis=0, descending=True)),
    "argsort": _c(lambda g, x: g.argsort(x, axis=1, stable=True)),
    "partition": _c(lambda g, x: g.sort(g.partition(x, 2, axis=1), axis=1)),
    "argpartition": _c(lambda g, x: g.take_along_axis(x, g.argpartition(x, 2, axis=1), axis=1)[:, 2]),
    "lexsort": _c(lambda g, x, y: g.lexsort((x, y)), "v,w"),
    "topk": _c(lambda g, x: g.topk(x, 2)),
    "unique": _c(lambda g, x: g.unique(x)),
    "unique_values": _c(lambda g, x: g.unique_values(x)),
    "unique_counts": _c(lambda g, x: g.unique_counts(x)),
    "unique_inverse": _c(lambda g, x: g.unique_inverse(x)),
    "unique_all": _c(lambda g, x: g.unique_all(x)),
    "union1d": _c(lambda g, x, y: g.union1d(x, y), "v,w"),
    "intersect1d": _c(lambda g, x, y: g.intersect1d(x, x[1:] if True else y), "v,w"),
    "setdiff1d": _c(lambda g, x, y: g.setdiff1d(x, y), "v,w"),
    "setxor1d": _c(lambda g, x, y: g.setxor1d(x, y), "v,w"),
    "isin": _c(lambda g, x, y: g.isin(x, y), "a,v"),
    # linalg
    "linalg.matmul": _c(lambda g, x, y: g.linalg.matmul(x, y), "sq,mat", "acc"),
    "linalg.vector_norm": _c(lambda g, x: g.linalg.vector_norm(x, axis=1), "a", "acc"),
    "linalg.matrix_norm": _c(lambda g, x: g.linalg.matrix_norm(x), "a", "acc"),
    "linalg.norm": _c(lambda g, x: g.linalg.norm(x), "a", "acc"),
    "linalg.vecdot": _c(lambda g, x, y: g.linalg.vecdot(x, y), "a,b", "acc"),
    "linalg.tensordot": _c(lambda g, x, y: g.linalg.tensordot(x, y.T, axes=1), "a,b", "acc"),
    "linalg.outer": _c(lambda g, x, y: g.linalg.outer(x, y), "v,w"),
    "linalg.cross": _c(lambda g, x, y: g.linalg.cross(x[:, :3], y[:, :3]), "a,b", "acc"),
    "linalg.diagonal": _c(lambda g, x: g.linalg.diagonal(x), "sq"),
    "linalg.trace": _c(lambda g, x: g.linalg.trace(x), "sq", "acc"),
    "linalg.matrix_transpose": _c(lambda g, x: g.linalg.matrix_transpose(x)),
    "linalg.matrix_power": _c(lambda g, x: g.linalg.matrix_power(x, 2), "mat", "acc"),
    "linalg.multi_dot": _c(lambda g, x, y: g.linalg.multi_dot([x, y, x]), "sq,mat", "acc"),
    # fft: complex results (complex64 from float16, as NumPy's)
    "fft.fft": _c(lambda g, x: g.fft.fft(x), "v", "acc"),
    "fft.rfft": _c(lambda g, x: g.fft.rfft(x), "v", "acc"),
    "fft.fftn": _c(lambda g, x: g.fft.fftn(x), "a", "acc"),
    "fft.rfftn": _c(lambda g, x: g.fft.rfftn(x), "a", "acc"),
    "fft.ihfft": _c(lambda g, x: g.fft.ihfft(x), "v", "acc"),
    "fft.fftshift": _c(lambda g, x: g.fft.fftshift(x), "v"),
    "fft.ifftshift": _c(lambda g, x: g.fft.ifftshift(x), "v"),
    # creation with a low dtype
    "zeros_like": _c(lambda g, x: g.zeros_like(x)),
    "ones_like": _c(lambda g, x: g.ones_like(x)),
    "full_like": _c(lambda g, x: g.full_like(x, 1.5)),
    "empty_like_shape": _c(lambda g, x: g.empty_like(x).shape),
    "asarray_copy": _c(lambda g, x: g.asarray(x, copy=True)),
    "astype_f32_and_back": _c(lambda g, x: g.astype(g.astype(x, g.float32), x.dtype)),
    "logical_ops": _c(lambda g, x, y: (g.logical_and(x > 0, y > 0), g.logical_or(x > 0, y > 0),
                                       g.logical_xor(x > 0, y > 0), g.logical_not(x > 0)), "a,b"),
    "astype_int": _c(lambda g, x: g.astype(x, g.int32)),
    "astype_bool": _c(lambda g, x: g.astype(x, g.bool)),
    # Array methods and operators
    "op_add": _c(lambda g, x, y: x + y, "a,b"),
    "op_sub": _c(lambda g, x, y: x - y, "a,b"),
    "op_mul": _c(lambda g, x, y: x * y, "a,b"),
    "op_truediv": _c(lambda g, x, y: x / y, "a,p"),
    "op_floordiv": _c(lambda g, x, y: x // y, "a,p"),
    "op_mod": _c(lambda g, x, y: x % y, "a,p"),
    "op_pow": _c(lambda g, x, y: x ** y, "p,a"),
    "op_neg": _c(lambda g, x: -x),
    "op_abs": _c(lambda g, x: abs(x)),
    "op_cmp": _c(lambda g, x, y: (x < y, x <= y, x == y, x != y, x > y, x >= y), "a,b"),
    "op_iadd": _c(lambda g, x, y: _iop(x, y, "__iadd__"), "a,b"),
    "op_isub": _c(lambda g, x, y: _iop(x, y, "__isub__"), "a,b"),
    "op_imul": _c(lambda g, x, y: _iop(x, y, "__imul__"), "a,b"),
    "op_itruediv": _c(lambda g, x, y: _iop(x, y, "__itruediv__"), "a,p"),
    "op_iadd_scalar": _c(lambda g, x: _iop(x, 0.5, "__iadd__")),
    "getitem": _c(lambda g, x: (x[1], x[:, 1:3], x[..., ::-1], x[x > 0], x[[0, 2]])),
    "setitem": _c(lambda g, x, y: _setitem(x, y), "a,b"),
    "method_sum": _c(lambda g, x: x.sum(axis=0), "a", "acc"),
    "method_mean": _c(lambda g, x: x.mean(), "a", "acc"),
    "method_max": _c(lambda g, x: x.max(axis=1)),
    "method_cumsum": _c(lambda g, x: x.cumsum(axis=0), "a", "acc"),
    "method_reshape": _c(lambda g, x: x.reshape(2, 6)),
    "method_T": _c(lambda g, x: x.T),
    "method_flatten": _c(lambda g, x: x.flatten()),
    "method_clip": _c(lambda g, x: x.clip(-0.5, 0.5)),
    "method_round": _c(lambda g, x: x.round()),
    "method_sort": _c(lambda g, x: x.sort(axis=1) if False else g.sort(x)),
    "method_argsort": _c(lambda g, x: x.argsort(axis=1)),
    "method_tolist": _c(lambda g, x: np.asarray(x.tolist(), np.float32)),
    "method_item": _c(lambda g, x: x[0, 0].item()),
    "float_of": _c(lambda g, x: float(x[1, 1])),
})


def _iop(x, y, meth: str):
    x = x + 0   # a fresh array (the inputs are shared across cases)
    return getattr(x, meth)(y)


def _setitem(x, y):
    x = x + 0
    x[1] = y[0]
    x[:, 0] = 0.5
    x[x > 1] = y[x > 1]
    return x


NN = {
    **{f"F.{n}": _c(lambda g, x, n=n: getattr(F, n)(x)) for n in (
        "relu", "relu6", "elu", "selu", "celu", "gelu", "silu", "mish", "sigmoid", "tanh",
        "hardtanh", "hardsigmoid", "hardswish", "leaky_relu", "logsigmoid", "softplus",
        "softsign", "softshrink", "hardshrink", "tanhshrink", "erf", "erfc")},
    "F.threshold": _c(lambda g, x: F.threshold(x, 0.5, -1.0)),
    "F.glu": _c(lambda g, x: F.glu(x, dim=1)),
    "F.prelu": _c(lambda g, x, w: F.prelu(x, w[:1]), "a,pv"),
    "F.gelu_tanh": _c(lambda g, x: F.gelu(x, approximate="tanh")),
    "F.softmax": _c(lambda g, x: F.softmax(x, dim=1), "a", "acc"),
    "F.log_softmax": _c(lambda g, x: F.log_softmax(x, dim=1), "a", "acc"),
    "F.softmin": _c(lambda g, x: F.softmin(x, dim=1), "a", "acc"),
    "F.normalize": _c(lambda g, x: F.normalize(x, dim=1), "a", "acc"),
    "F.linear": _c(lambda g, x, w, b: F.linear(x, w, b), "a,lin_w,pv", "acc"),
    "F.bilinear": _c(lambda g, x, y, w: F.bilinear(x, y, g.stack([w, w * 0.5])), "a,b,sq", "acc"),
    "F.layer_norm": _c(lambda g, x: F.layer_norm(x, (4,)), "a", "acc"),
    "F.rms_norm": _c(lambda g, x: F.rms_norm(x, (4,)), "a", "acc"),
    "F.group_norm": _c(lambda g, x: F.group_norm(x, 1), "img", "acc"),
    "F.instance_norm": _c(lambda g, x: F.instance_norm(x), "img", "acc"),
    "F.batch_norm": _c(lambda g, x: F.batch_norm(x, None, None, training=True), "img", "acc"),
    "F.local_response_norm": _c(lambda g, x: F.local_response_norm(x, 2), "img", "acc"),
    "F.conv1d": _c(lambda g, x, w: F.conv1d(x, w, padding=1), "seq,k1", "acc"),
    "F.conv2d": _c(lambda g, x, w, b: F.conv2d(x, w, b, padding=1), "img,kern,bias", "acc"),
    "F.conv_transpose1d": _c(lambda g, x, w: F.conv_transpose1d(x, g.permute_dims(w, (1, 0, 2))),
                             "seq,k1", "acc"),
    "F.conv_transpose2d": _c(lambda g, x, w: F.conv_transpose2d(x, g.permute_dims(
        w, (1, 0, 2, 3))), "img,kern", "acc"),
    "F.max_pool1d": _c(lambda g, x: F.max_pool1d(x, 2), "seq"),
    "F.max_pool2d": _c(lambda g, x: F.max_pool2d(x, 2), "img"),
    "F.max_pool2d_with_indices": _c(lambda g, x: F.max_pool2d_with_indices(x, 2), "img"),
    "F.avg_pool1d": _c(lambda g, x: F.avg_pool1d(x, 2), "seq", "acc"),
    "F.avg_pool2d": _c(lambda g, x: F.avg_pool2d(x, 2), "img", "acc"),
    "F.adaptive_avg_pool2d": _c(lambda g, x: F.adaptive_avg_pool2d(x, 1), "img", "acc"),
    "F.adaptive_max_pool2d": _c(lambda g, x: F.adaptive_max_pool2d(x, 2), "img"),
    "F.lp_pool2d": _c(lambda g, x: F.lp_pool2d(x, 2, 2), "img", "acc"),
    "F.interpolate_nearest": _c(lambda g, x: F.interpolate(x, scale_factor=2), "img"),
    "F.interpolate_bilinear": _c(lambda g, x: F.interpolate(x, size=(4, 4), mode="bilinear"),
                                 "img", "acc"),
    "F.pixel_shuffle": _c(lambda g, x: F.pixel_shuffle(g.reshape(x, (2, 12, 3, 3)), 2), "img"),
    "F.pixel_unshuffle": _c(lambda g, x: F.pixel_unshuffle(x, 2), "img"),
    "F.unfold": _c(lambda g, x: F.unfold(x, 3), "img"),
    "F.fold": _c(lambda g, x: F.fold(F.unfold(x, 3), (6, 6), 3), "img", "acc"),
    "F.pad": _c(lambda g, x: F.pad(x, (1, 1))),
    "F.pad_reflect": _c(lambda g, x: F.pad(x, (1, 1), mode="reflect"), "seq"),
    "F.flatten": _c(lambda g, x: F.flatten(x, 1), "img"),
    "F.channel_shuffle": _c(lambda g, x: F.channel_shuffle(x[:, :2], 2), "img"),
    "F.dropout_eval": _c(lambda g, x: F.dropout(x, 0.5, training=False)),
    "F.embedding": _c(lambda g, w: F.embedding(g.asarray(IDX, device=w.device), w), "a"),
    "F.embedding_bag": _c(lambda g, w: F.embedding_bag(g.asarray([[0, 2], [1, 2]], device=w.device),
                                                       w), "a", "acc"),
    "F.cosine_similarity": _c(lambda g, x, y: F.cosine_similarity(x, y), "a,b", "acc"),
    "F.pairwise_distance": _c(lambda g, x, y: F.pairwise_distance(x, y), "a,b", "acc"),
    "F.pdist": _c(lambda g, x: F.pdist(x), "a", "acc"),
    "F.attention_scores": _c(lambda g, q, k: F.attention_scores(q, k), "q,kk", "acc"),
    "F.sdpa": _c(lambda g, q, k, v: F.scaled_dot_product_attention(q, k, v), "q,kk,vv", "acc"),
    "F.sdpa_causal": _c(lambda g, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                        "q,kk,vv", "acc"),
    "F.flash_attention2": _c(lambda g, q, k, v: F.flash_attention2(q, k, v), "q,kk,vv", "acc"),
    "F.grid_sample": _c(lambda g, x, gr: F.grid_sample(x, g.reshape(gr, (2, 4, 4, 2)),
                                                       align_corners=False), "img,q", "acc"),
    "F.affine_grid": _c(lambda g, t: F.affine_grid(g.reshape(t[0, 0, :3, :2], (1, 2, 3)),
                                                   (1, 1, 2, 2), align_corners=False), "q", "acc"),
    # losses (inputs low; integer targets stay integer)
    "F.mse_loss": _c(lambda g, x, y: F.mse_loss(x, y), "a,b", "acc"),
    "F.l1_loss": _c(lambda g, x, y: F.l1_loss(x, y), "a,b", "acc"),
    "F.smooth_l1_loss": _c(lambda g, x, y: F.smooth_l1_loss(x, y), "a,b", "acc"),
    "F.huber_loss": _c(lambda g, x, y: F.huber_loss(x, y), "a,b", "acc"),
    "F.cross_entropy": _c(lambda g, x: F.cross_entropy(x, g.asarray(IDX, device=x.device)),
                          "a", "acc"),
    "F.cross_entropy_none": _c(lambda g, x: F.cross_entropy(
        x, g.asarray(IDX, device=x.device), reduction="none"), "a", "acc"),
    "F.nll_loss": _c(lambda g, x: F.nll_loss(x, g.asarray(IDX, device=x.device)), "a", "acc"),
    "F.binary_cross_entropy": _c(lambda g, x, y: F.binary_cross_entropy(x, y), "prob,prob",
                                 "acc"),
    "F.binary_cross_entropy_with_logits": _c(
        lambda g, x, y: F.binary_cross_entropy_with_logits(x, y), "a,prob", "acc"),
    "F.kl_div": _c(lambda g, x, y: F.kl_div(x, y, reduction="batchmean"), "a,prob", "acc"),
    "F.soft_margin_loss": _c(lambda g, x, y: F.soft_margin_loss(x, y), "a,b", "acc"),
    "F.hinge_embedding_loss": _c(lambda g, x, y: F.hinge_embedding_loss(x, g.sign(y)), "a,b",
                                 "acc"),
    "F.margin_ranking_loss": _c(lambda g, x, y, z: F.margin_ranking_loss(x, y, g.sign(z)),
                                "v,w,v", "acc"),
    "F.poisson_nll_loss": _c(lambda g, x, y: F.poisson_nll_loss(x, y), "u,p", "acc"),
    "F.gaussian_nll_loss": _c(lambda g, x, y, v: F.gaussian_nll_loss(x, y, v), "a,b,p", "acc"),
    "F.cosine_embedding_loss": _c(lambda g, x, y: F.cosine_embedding_loss(
        x, y, g.asarray([1, -1, 1], device=x.device)), "a,b", "acc"),
    "F.triplet_margin_loss": _c(lambda g, x, y, z: F.triplet_margin_loss(x, y, z), "a,b,u", "acc"),
    "F.multi_margin_loss": _c(lambda g, x: F.multi_margin_loss(x, g.asarray(IDX, device=x.device)),
                              "a", "acc"),
    "F.multilabel_soft_margin_loss": _c(lambda g, x, y: F.multilabel_soft_margin_loss(
        x, g.astype(y > 0, x.dtype)), "a,b", "acc"),
    "F.one_hot_like": _c(lambda g, x: F.softmax(x, dim=-1).argmax(axis=1)),
}
CASES.update(NN)
# NumPy's linalg refuses float16 ("array type float16 is unsupported in linalg"): so do these
REFUSE = {
    "linalg.inv": lambda g, x: g.linalg.inv(x), "linalg.det": lambda g, x: g.linalg.det(x),
    "linalg.slogdet": lambda g, x: g.linalg.slogdet(x),
    "linalg.solve": lambda g, x: g.linalg.solve(x, x), "linalg.cholesky": lambda g, x: g.linalg.cholesky(x),
    "linalg.qr": lambda g, x: g.linalg.qr(x), "linalg.svd": lambda g, x: g.linalg.svd(x),
    "linalg.svdvals": lambda g, x: g.linalg.svdvals(x), "linalg.eig": lambda g, x: g.linalg.eig(x),
    "linalg.eigh": lambda g, x: g.linalg.eigh(x), "linalg.eigvals": lambda g, x: g.linalg.eigvals(x),
    "linalg.eigvalsh": lambda g, x: g.linalg.eigvalsh(x), "linalg.pinv": lambda g, x: g.linalg.pinv(x),
    "linalg.lstsq": lambda g, x: g.linalg.lstsq(x, x),
    "linalg.matrix_rank": lambda g, x: g.linalg.matrix_rank(x),
    "linalg.cond": lambda g, x: g.linalg.cond(x),
    "linalg.tensorinv": lambda g, x: g.linalg.tensorinv(x, ind=1),
    "linalg.tensorsolve": lambda g, x: g.linalg.tensorsolve(x, x[0]),
}


def _leaves(r) -> list:
    if isinstance(r, (tuple, list)):
        return [y for x in r for y in _leaves(x)]
    if hasattr(r, "_fields") or type(r).__name__.endswith("Result"):
        return [y for x in tuple(r) for y in _leaves(x)]
    return [r]


def _np(leaf):
    if isinstance(leaf, gp.Array):
        return np.asarray(leaf), leaf.dtype
    return np.asarray(leaf), None


def _run(name, device, dt):
    fn, ins, _, _ = CASES[name]
    args = [gp.asarray(IN[i].astype(dt), device=device) for i in ins]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(gp, *args)


def check_case(name, device, low):
    """Compare the case's low-dtype call with its float32 call; returns a list of problems."""
    gdt, ndt = LOW[low]
    _, _, tol, _ = CASES[name]
    ref = _leaves(_run(name, device, np.float32))
    got = _leaves(_run(name, device, ndt))
    assert len(got) == len(ref), (name, len(got), len(ref))
    for i, (g, r) in enumerate(zip(got, ref)):
        gv, gd = _np(g)
        rv, rd = _np(r)
        where = f"{name}[{i}]"
        if rd is None:   # Python values (shapes, bools, floats)
            if isinstance(r, float):
                assert abs(float(g) - r) <= 2 * abs(r) * float(gp.finfo(gdt).eps) + 1e-7, (where, g, r)
            else:
                assert np.array_equal(gv, rv), (where, g, r)
            continue
        assert gv.shape == rv.shape, (where, gv.shape, rv.shape)
        if rd == gp.float32:
            assert gd == gdt, f"{where}: result dtype {gd}, wanted {gdt} (float32 call: float32)"
        elif rd == gp.complex64:
            assert gd == gp.complex64, f"{where}: result dtype {gd}, wanted complex64"
        else:
            assert gd == rd, f"{where}: result dtype {gd}, wanted {rd}"
            if not gp.isdtype(rd, ("real floating", "complex floating")):
                assert np.array_equal(gv, rv), f"{where}: {gv} != {rv}"
                continue
        _close(where, gv, rv, ndt, tol)


def _close(where, got, ref, ndt, tol):
    if np.iscomplexobj(ref):
        _close(where, got.real, ref.real, ndt, tol)
        _close(where, got.imag, ref.imag, ndt, tol)
        return
    g = got.astype(np.float64)
    r64 = ref.astype(np.float64)
    r = ref.astype(np.float32).astype(ndt).astype(np.float64)   # the reference, rounded
    nan = np.isnan(g) & np.isnan(r)
    assert np.array_equal(np.isnan(g), np.isnan(r)), f"{where}: NaN at {np.isnan(g)} vs {np.isnan(r)}"
    g, r, r64 = g[~nan], r[~nan], r64[~nan]
    if g.size == 0:
        return
    eps = float(gp.finfo(gp.float16 if ndt is np.float16 else gp.bfloat16).eps)
    tiny = float(gp.finfo(gp.float16 if ndt is np.float16 else gp.bfloat16).smallest_normal)
    if tol == "acc":
        scale = max(np.max(np.abs(r64)), tiny)
        allowed = ACC * eps * scale
    else:
        allowed = ULPS * eps * np.maximum(np.abs(r64), tiny)
    with np.errstate(invalid="ignore"):
        err = np.abs(g - r)
    bad = ~((err <= allowed) | (g == r))
    assert not bad.any(), (f"{where}: got {g[bad][:4]} ref {r[bad][:4]} (err {err[bad][:4]}, "
                           f"allowed {np.broadcast_to(allowed, err.shape)[bad][:4]})")


@pytest.mark.parametrize("low", list(LOW))
@pytest.mark.parametrize("name", sorted(CASES))
def test_lowp_matches_float32(device, name, low):
    check_case(name, device, low)


@pytest.mark.parametrize("low", list(LOW))
@pytest.mark.parametrize("name", sorted(REFUSE))
def test_linalg_decompositions_refuse_16bit(device, name, low):
    """NumPy's linalg refuses float16, torch's both: a TypeError naming the op and the dtype, on
    every device (bfloat16 too, though every other op computes it in float32)."""
    x = gp.asarray(IN["mat"].astype(LOW[low][1]), device=device)
    with pytest.raises(TypeError, match=f"{name}: dtype {low} is not supported"):
        REFUSE[name](gp, x)
    REFUSE[name](gp, gp.astype(x, gp.float32))   # the cast the message asks for works


@pytest.mark.parametrize("low", list(LOW))
def test_linalg_16bit_through_norms_and_mixed(device, low):
    """The singular-value norms and negative matrix powers refuse as the decompositions do; a
    16-bit array with a float32 one promotes to float32 and solves there (NumPy's solve)."""
    x = gp.asarray(IN["mat"].astype(LOW[low][1]), device=device)
    for f in (lambda: gp.linalg.matrix_norm(x, ord=2), lambda: gp.linalg.norm(x, "nuc"),
              lambda: gp.linalg.matrix_power(x, -1)):
        with pytest.raises(TypeError, match=f"dtype {low} is not supported"):
            f()
    assert gp.linalg.matrix_norm(x).dtype == LOW[low][0]            # Frobenius: a sum
    assert gp.linalg.matrix_power(x, 2).dtype == LOW[low][0]        # products
    b = gp.asarray(IN["bias"], device=device)
    got = gp.linalg.solve(x, b)
    assert got.dtype == gp.float32
    ref = np.linalg.solve(IN["mat"].astype(np.float64), IN["bias"].astype(np.float64))
    np.testing.assert_allclose(np.asarray(got), ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("low", list(LOW))
def test_polyfit_16bit_in_float32(device, low):
    """polyfit solves by lstsq, which refuses 16-bit floats: it fits in float32 and returns the
    coefficients in the low dtype (rounded once)."""
    ndt = LOW[low][1]
    x, y = IN["v"].astype(ndt), IN["w"].astype(ndt)
    got = gp.polyfit(gp.asarray(x, device=device), gp.asarray(y, device=device), 2)
    assert got.dtype == LOW[low][0]
    ref = np.polyfit(x.astype(np.float64), y.astype(np.float64), 2)
    _close("polyfit", np.asarray(got), ref, ndt, "acc")


ASKED = {   # the op called with dtype= on a float32 (or float16) array
    "zeros_like": lambda x, d: gp.zeros_like(x, dtype=d),
    "ones_like": lambda x, d: gp.ones_like(x, dtype=d),
    "full_like": lambda x, d: gp.full_like(x, 0.1, dtype=d),
    "empty_like": lambda x, d: gp.empty_like(x, dtype=d),
    "sum": lambda x, d: gp.sum(x, axis=1, dtype=d),
    "sum_positional": lambda x, d: gp.sum(x, 1, d),
    "prod": lambda x, d: gp.prod(x, dtype=d),
    "nansum": lambda x, d: gp.nansum(x, dtype=d),
    "cumulative_sum": lambda x, d: gp.cumulative_sum(x, axis=1, dtype=d),
    "cumsum": lambda x, d: gp.cumsum(x, axis=0, dtype=d),
    "mean": lambda x, d: gp.mean(x, axis=0, dtype=d),
    "trace": lambda x, d: gp.linalg.trace(x[:, :3], dtype=d),
}


@pytest.mark.parametrize("src", ["float32", "float16", "int32"])
@pytest.mark.parametrize("low", list(LOW))
@pytest.mark.parametrize("name", sorted(ASKED))
def test_dtype_keyword_gives_low_dtype(device, name, low, src):
    """``dtype=`` a low dtype is the result's dtype whatever the input's: sum(x_float32,
    dtype=bfloat16) is bfloat16 (it came back float32), the values the float32 call's rounded."""
    gdt, ndt = LOW[low]
    x = gp.asarray(IN["a"] if src != "int32" else (IN["a"] * 16).astype(np.int32), device=device)
    x = gp.astype(x, getattr(gp, src))
    got = ASKED[name](x, gdt)
    assert got.dtype == gdt, (name, got.dtype)
    if name != "empty_like":
        ref = np.asarray(ASKED[name](x, gp.float32))
        _close(name, np.asarray(got), ref, ndt, "acc")


@pytest.mark.parametrize("low", list(LOW))
def test_python_scalars(device, low):
    """Python scalars take the low array's dtype (ints past int64 too: on Vulkan a bfloat16 array
    plus 2**70 raised 'expected number, got int'), as NumPy's float16 takes them."""
    gdt, ndt = LOW[low]
    h = IN["a"].astype(ndt)
    x = gp.asarray(h, device=device)
    for s in (2, -3, 2.5, 0.1, True, 2**70, 1e6):
        with np.errstate(over="ignore"):
            sv = np.float32(ndt(float(s)))   # the scalar in the array's dtype
        for got, ref in ((x + s, h.astype(np.float32) + sv), (s * x, sv * h.astype(np.float32)),
                         (gp.maximum(x, s), np.maximum(h.astype(np.float32), sv))):
            assert got.dtype == gdt, (s, got.dtype)
            with np.errstate(over="ignore"):
                _close(f"scalar {s!r}", np.asarray(got), ref, ndt, "ew")
        cmp = x > s
        assert cmp.dtype == gp.bool
        assert np.array_equal(np.asarray(cmp), h.astype(np.float32) > sv)
    full = gp.full((2,), 2**70, dtype=gdt, device=device)
    assert np.asarray(full).astype(np.float64)[0] == float(ndt(float(2**70)))


MIXED = ["float16", "bfloat16", "float32", "float64", "int8", "uint8", "int32", "bool"]


@pytest.mark.parametrize("low", list(LOW))
@pytest.mark.parametrize("other", MIXED)
def test_mixed_operands_promote(device, low, other):
    """A low array with every other dtype: the result dtype is result_type's (bfloat16 with an
    integer or bool array raises TypeError, docs/amp.md) and the values the float64 op's,
    rounded to it, for add, multiply, maximum, where and matmul."""
    gdt, ndt = LOW[low]
    odt = getattr(gp, other)
    h = IN["a"].astype(ndt)
    o = (IN["b"] * 4).astype(odt.np) if odt is not gp.bfloat16 else IN["b"].astype(ndt)
    x, y = gp.asarray(h, device=device), gp.asarray(o, device=device)
    if low == "bfloat16" and odt.kind in "biu":
        with pytest.raises(TypeError, match="bfloat16"):
            gp.result_type(x, y)
        with pytest.raises(TypeError, match="add: no type promotion"):
            gp.add(x, y)
        return
    want = gp.result_type(x, y)
    a64, b64 = h.astype(np.float64), o.astype(np.float64)
    wn = ml_dtypes.bfloat16 if want is gp.bfloat16 else want.np
    for name, got, ref in (("add", x + y, a64 + b64), ("multiply", x * y, a64 * b64),
                           ("maximum", gp.maximum(x, y), np.maximum(a64, b64)),
                           ("where", gp.where(x > 0, x, y), np.where(a64 > 0, a64, b64)),
                           ("matmul", x @ y.T, a64 @ b64.T)):
        assert got.dtype == want, (name, got.dtype, want)
        tol = "acc" if name == "matmul" else "ew"
        if wn in (np.float16, ml_dtypes.bfloat16):
            _close(name, np.asarray(got), ref, wn, tol)
        else:
            np.testing.assert_allclose(np.asarray(got).astype(np.float64), ref, rtol=1e-6,
                                       err_msg=name)


@pytest.mark.parametrize("low", list(LOW))
def test_host_and_dlpack_round_trips(device, low):
    """asarray of NumPy's float16 / ml_dtypes' bfloat16 and back, and DLPack both ways with
    torch, keep every bit (signed zeros, inf, NaN, subnormals)."""
    import torch

    gdt, ndt = LOW[low]
    h = np.array([1.5, -0.0, np.inf, -np.inf, np.nan, 65504, 6e-8, 1e-40, -3.25],
                 np.float32).astype(ndt)
    x = gp.asarray(h, device=device)
    assert x.dtype == gdt
    back = np.asarray(x)
    assert back.dtype == np.dtype(ndt) and np.array_equal(back.view(np.uint16), h.view(np.uint16))
    t = torch.from_dlpack(x)
    assert t.dtype == (torch.float16 if low == "float16" else torch.bfloat16)
    assert np.array_equal(t.view(torch.int16).numpy().view(np.uint16), h.view(np.uint16))
    y = gp.from_dlpack(t, device=device)
    assert y.dtype == gdt and np.array_equal(np.asarray(y).view(np.uint16), h.view(np.uint16))


def test_namespace_info_reports_16bit_kinds(device):
    """float16 and bfloat16 are not Array API dtypes, so dtypes() leaves them out; each is
    reported under its own kind (float16's was missing)."""
    info = gp.__array_namespace_info__()
    assert "float16" not in info.dtypes(device=device)
    assert info.dtypes(device=device, kind="float16") == {"float16": gp.float16}
    assert info.dtypes(device=device, kind="bfloat16") == {"bfloat16": gp.bfloat16}
    assert gp.isdtype(gp.float16, "real floating") and gp.isdtype(gp.bfloat16, "real floating")
