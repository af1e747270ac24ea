"""The Array API linalg extension: decompositions are backend kernels; norms, outer, trace and
matrix_power are composed from other namespace functions."""
from __future__ import annotations

import math
from typing import Literal, NamedTuple

from ..array import dispatch
from ..array import dtypes as dt
from ..array.array import Array
from ..array.core import (as_compute_array, broadcast_shapes, call, check_array, common_device,
                          kernel, normalize_axes, normalize_axis, wrap)
from ..array.linear_algebra import matmul, matrix_transpose, numeric_pair, tensordot, vecdot

__all__ = [
    "EigResult", "EighResult", "LstsqResult", "QRResult", "SVDResult", "SlogdetResult", "cholesky",
    "cross", "det", "diagonal", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "trace", "vecdot", "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class EigResult(NamedTuple):
    eigenvalues: Array
    eigenvectors: Array


class LstsqResult(NamedTuple):
    solution: Array
    residuals: Array
    rank: Array
    singular_values: Array


class QRResult(NamedTuple):
    Q: Array
    R: Array


class SlogdetResult(NamedTuple):
    sign: Array
    logabsdet: Array


class SVDResult(NamedTuple):
    U: Array
    S: Array
    Vh: Array


def _ns():
    return dispatch.ns


def _float(x, op: str) -> Array:
    check_array(x, op)
    if x._dtype.kind not in "fc":
        raise TypeError(f"{op}: dtype {x._dtype.name} is not supported; expected a floating-point "
                        "array (cast integers with astype first)")
    return x


def _matrices(x, op: str, square: bool = False) -> Array:
    _float(x, op)
    if x.ndim < 2:
        raise ValueError(f"{op}: x must have at least 2 dimensions (..., M, N), got shape {x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise ValueError(f"{op}: x must be a stack of square matrices (..., M, M), "
                         f"got shape {x.shape}")
    return x


def _real_of(d: dt.DType) -> dt.DType:
    return dt.complex_to_real(d)


def _complex_of(d: dt.DType) -> dt.DType:
    return dt.complex64 if d in (dt.float16, dt.float32, dt.complex64) else dt.complex128


def _call(x: Array, op: str, *args):
    """Buffers of op's kernel on x's device, or of its default composition (the host path for
    the decompositions, grilly.array.host)."""
    return call(x._device, op, x, *args)


def cholesky(x: Array, /, *, upper: bool = False) -> Array:
    """Cholesky factor of Hermitian positive-definite matrices (lower, or upper when upper=True)."""
    _matrices(x, "cholesky", square=True)
    out = wrap(_call(x, "cholesky"), x._dtype, x._device)
    if upper:
        out = matrix_transpose(out)
        if x._dtype.kind == "c":
            out = _ns().conj(out)
    return out


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Cross product of 3-element vectors along axis, with broadcasting."""
    a, b, d, dev = numeric_pair("cross", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("cross: x1 and x2 must have at least one dimension")
    shape = broadcast_shapes(a.shape, b.shape, op="cross")
    ax = normalize_axis(axis, len(shape), "cross")
    if axis >= 0 and (a.ndim != b.ndim):
        raise ValueError("cross: a non-negative axis needs x1 and x2 of equal ndim; use a negative axis")
    for x, name in ((a, "x1"), (b, "x2")):
        i = ax - (len(shape) - x.ndim)
        if i < 0 or x.shape[i] != 3:
            raise ValueError(f"cross: {name} of shape {x.shape} must have size 3 along axis={axis}")
    n = len(shape)
    perm = tuple(i for i in range(n) if i != ax) + (ax,)
    pm, bt = kernel(dev, "permute"), kernel(dev, "broadcast_to")
    pshape = tuple(shape[i] for i in perm)
    out = call(dev, "cross", pshape, d, *(wrap(pm(bt(v._buf, shape), perm), d, dev) for v in (a, b)))
    inv_perm = tuple(perm.index(i) for i in range(n))
    return wrap(pm(out, inv_perm), d, dev)


def det(x: Array, /) -> Array:
    """Determinant of each square matrix in x."""
    _matrices(x, "det", square=True)
    return wrap(_call(x, "det"), x._dtype, x._device)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The offset diagonal of each matrix in x, shape (..., K)."""
    check_array(x, "diagonal")
    if x.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got shape {x.shape}")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"diagonal: offset must be an int, got {offset!r}")
    return wrap(_call(x, "diagonal", offset), x._dtype, x._device)


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and eigenvectors (complex) of general square matrices."""
    _matrices(x, "eig", square=True)
    c = _complex_of(x._dtype)
    w, v = _call(as_compute_array(x, c, x._device, "eig"), "eig")
    return EigResult(wrap(w, c, x._device), wrap(v, c, x._device))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues (complex) of general square matrices."""
    _matrices(x, "eigvals", square=True)
    c = _complex_of(x._dtype)
    return wrap(_call(as_compute_array(x, c, x._device, "eigvals"), "eigvals"),
                c, x._device)


def eigh(x: Array, /) -> EighResult:
    """Eigenvalues (real, ascending) and eigenvectors of Hermitian/symmetric matrices."""
    _matrices(x, "eigh", square=True)
    w, v = _call(x, "eigh")
    return EighResult(wrap(w, _real_of(x._dtype), x._device), wrap(v, x._dtype, x._device))


def eigvalsh(x: Array, /) -> Array:
    """Eigenvalues (real, ascending) of Hermitian/symmetric matrices."""
    _matrices(x, "eigvalsh", square=True)
    return wrap(_call(x, "eigvalsh"), _real_of(x._dtype), x._device)


def inv(x: Array, /) -> Array:
    """Inverse of each square matrix in x."""
    _matrices(x, "inv", square=True)
    return wrap(_call(x, "inv"), x._dtype, x._device)


def _max_min(x: Array, axis, keepdims: bool, largest: bool) -> Array:
    return (_ns().max if largest else _ns().min)(x, axis=axis, keepdims=keepdims)


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> Array:
    """Vector p-norm of x over axis (all axes by default)."""
    _float(x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"vector_norm: ord must be an int or float, got {ord!r}")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    if x._dtype is dt.float16 and ord not in (math.inf, -math.inf):
        # the powers and their sum overflow float16 long before the norm does: float32 inside
        r = vector_norm(as_compute_array(x, dt.float32, x._device, "vector_norm"), axis=axis,
                        keepdims=keepdims, ord=ord)
        return as_compute_array(r, dt.float16, x._device, "vector_norm")
    ns = _ns()
    rd = _real_of(x._dtype)
    a = ns.abs(x)
    if ord == math.inf or ord == -math.inf:
        if any(x.shape[i] == 0 for i in axes):
            raise ValueError(f"vector_norm: ord={ord} of an empty axis has no value")
        return _max_min(a, axes, keepdims, ord > 0)
    if ord == 0:
        nz = as_compute_array(ns.not_equal(a, 0), rd, x._device, "vector_norm")
        return ns.sum(nz, axis=axes, keepdims=keepdims)
    if ord == 1:
        return ns.sum(a, axis=axes, keepdims=keepdims)
    if ord == 2:
        return ns.sqrt(ns.sum(ns.multiply(a, a), axis=axes, keepdims=keepdims))
    p = as_compute_array(float(ord), rd, x._device, "vector_norm")
    s = ns.sum(ns.pow(a, p), axis=axes, keepdims=keepdims)
    return ns.pow(s, as_compute_array(1.0 / ord, rd, x._device, "vector_norm"))


def matrix_norm(x: Array, /, *, keepdims: bool = False,
                ord: int | float | Literal["fro", "nuc"] = "fro") -> Array:
    """Matrix norm of each matrix in x ('fro', 'nuc', 1, -1, 2, -2, inf, -inf)."""
    _matrices(x, "matrix_norm")
    ns = _ns()
    n = x.ndim
    if ord == "fro":
        return vector_norm(x, axis=(n - 2, n - 1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        r = ns.sum(s, axis=-1) if ord == "nuc" else _max_min(s, -1, False, ord == 2)
    elif ord in (1, -1, math.inf, -math.inf) and not isinstance(ord, bool):
        # 1-norms take column sums (axis -2), inf-norms row sums (axis -1)
        sums = ns.sum(ns.abs(x), axis=n - 2 if ord in (1, -1) else n - 1)
        r = _max_min(sums, -1, False, ord > 0)
    else:
        raise ValueError(f"matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    if keepdims:
        r = wrap(kernel(r._device, "reshape")(r._buf, r.shape + (1, 1)), r._dtype, r._device)
    return r


def _eye_like(x: Array) -> Array:
    n = x.shape[-1]
    dev = x._device
    e = call(dev, "eye", n, n, 0, x._dtype)
    return wrap(kernel(dev, "copy")(kernel(dev, "broadcast_to")(e, x.shape)), x._dtype, dev)


def matrix_power(x: Array, n: int, /) -> Array:
    """x raised to the integer power n (repeated squaring; n < 0 inverts first)."""
    check_array(x, "matrix_power")
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"matrix_power: n must be an int, got {n!r}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"matrix_power: x must be a stack of square matrices, got shape {x.shape}")
    if x._dtype.kind == "b":
        raise TypeError("matrix_power: dtype bool is not supported; expected a numeric array")
    if n < 0:
        if x._dtype.kind not in "fc":
            raise TypeError(f"matrix_power: n={n} < 0 inverts x, which needs a floating-point "
                            f"array; got dtype {x._dtype.name} (cast with astype first)")
        x, n = inv(x), -n
    if n == 0:
        return _eye_like(x)
    result, base = None, x
    while True:
        if n & 1:
            result = base if result is None else matmul(result, base)
        n >>= 1
        if not n:
            break
        base = matmul(base, base)
    if result is x:
        result = wrap(kernel(x._device, "copy")(x._buf), x._dtype, x._device)
    return result


def _rtol_buf(x: Array, rtol, op: str):
    """rtol as a real buffer broadcastable to x's batch shape (default max(M, N) * eps)."""
    rd = _real_of(x._dtype)
    if rtol is None:
        rtol = max(x.shape[-2:]) * dt.finfo(rd).eps
    if isinstance(rtol, Array):
        common_device(op, x, rtol)
        if rtol._dtype.kind not in "iuf":
            raise TypeError(f"{op}: rtol must be a real array, got dtype {rtol._dtype.name}")
        broadcast_shapes(rtol.shape, x.shape[:-2], op=op)
        if len(rtol.shape) > x.ndim - 2:
            raise ValueError(f"{op}: rtol of shape {rtol.shape} does not broadcast to the batch "
                             f"shape {x.shape[:-2]}")
        return as_compute_array(rtol, dt.float64, x._device, op)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)):
        raise TypeError(f"{op}: rtol must be a float, an array or None, got {rtol!r}")
    return wrap(kernel(x._device, "full")((), float(rtol), dt.float64), dt.float64, x._device)


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Rank of each matrix: singular values above rtol times the largest (int64)."""
    _matrices(x, "matrix_rank")
    return wrap(_call(x, "matrix_rank", _rtol_buf(x, rtol, "matrix_rank")), dt.int64, x._device)


def outer(x1: Array, x2: Array, /) -> Array:
    """Outer product of two 1-D arrays."""
    a, b, d, dev = numeric_pair("outer", x1, x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-D, got shapes {a.shape} and {b.shape}")
    rs = kernel(dev, "reshape")
    return _ns().multiply(wrap(rs(a._buf, (a.shape[0], 1)), d, dev),
                          wrap(rs(b._buf, (1, b.shape[0])), d, dev))


def pinv(x: Array, /, *, rtol: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverse of each matrix in x."""
    _matrices(x, "pinv")
    return wrap(_call(x, "pinv", _rtol_buf(x, rtol, "pinv")), x._dtype, x._device)


def qr(x: Array, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """QR decomposition of each matrix in x (mode 'reduced' or 'complete')."""
    _matrices(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = _call(x, "qr", mode)
    return QRResult(wrap(q, x._dtype, x._device), wrap(r, x._dtype, x._device))


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and natural log of the absolute determinant of each square matrix."""
    _matrices(x, "slogdet", square=True)
    s, la = _call(x, "slogdet")
    return SlogdetResult(wrap(s, x._dtype, x._device), wrap(la, _real_of(x._dtype), x._device))


def solve(x1: Array, x2: Array, /) -> Array:
    """Solution X of x1 @ X = x2 for square x1 (x2 of shape (M,) is one right-hand side)."""
    _float(x1, "solve")
    _float(x2, "solve")
    a, b, d, dev = numeric_pair("solve", x1, x2)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"solve: x1 must be a stack of square matrices, got shape {a.shape}")
    m = a.shape[-1]
    vec = b.ndim == 1
    if vec and b.shape[0] == m:
        b = wrap(kernel(dev, "reshape")(b._buf, (m, 1)), d, dev)
    bbuf = b._buf
    if len(bbuf.shape) < 2 or bbuf.shape[-2] != m:
        raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}; "
                         f"expected (M,) or (..., M, K) with M={m}")
    batch = broadcast_shapes(a.shape[:-2], tuple(bbuf.shape[:-2]), op="solve")
    out = call(dev, "solve", batch + (m, bbuf.shape[-1]), d, a, b)
    if vec:
        out = kernel(dev, "reshape")(out, batch + (m,))
    return wrap(out, d, dev)


def svd(x: Array, /, *, full_matrices: bool = True) -> SVDResult:
    """Singular value decomposition U, S, Vh of each matrix in x."""
    _matrices(x, "svd")
    u, s, vh = _call(x, "svd", bool(full_matrices))
    return SVDResult(wrap(u, x._dtype, x._device), wrap(s, _real_of(x._dtype), x._device),
                     wrap(vh, x._dtype, x._device))


def svdvals(x: Array, /) -> Array:
    """Singular values (descending) of each matrix in x."""
    _matrices(x, "svdvals")
    return wrap(_call(x, "svdvals"), _real_of(x._dtype), x._device)


def trace(x: Array, /, *, offset: int = 0, dtype: dt.DType | None = None) -> Array:
    """Sum along the offset diagonal of each matrix in x."""
    check_array(x, "trace")
    if x._dtype.kind == "b":
        raise TypeError("trace: dtype bool is not supported; expected a numeric array")
    return _ns().sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)

def lstsq(a: Array, b: Array, /, rcond: float | None = None, *,
          driver: str | None = None) -> LstsqResult:
    """Least-squares solution of a @ x = b (NumPy's and torch's lstsq, through the SVD):
    (solution, residuals, rank, singular_values)."""
    _matrices(a, "lstsq")
    _float(b, "lstsq")
    if driver not in (None, "gelsd", "gelss"):
        raise NotImplementedError(f"lstsq: driver {driver!r} is not supported (the SVD-based "
                                  "'gelsd'/'gelss' solution is always used)")
    m, n = a.shape[-2:]
    vec = b.ndim == 1
    if (vec and b.shape[0] != m) or (not vec and b.shape[-2] != m):
        raise ValueError(f"lstsq: b of shape {b.shape} does not match a of shape {a.shape} "
                         f"(expected (M,) or (..., M, K) with M={m})")
    if rcond is not None and rcond < 0:   # NumPy's -1: machine precision
        rcond = dt.finfo(_real_of(a._dtype)).eps
    ns = _ns()
    b2 = ns.expand_dims(b, axis=-1) if vec else b
    x = matmul(pinv(a, rtol=rcond), b2)
    rank = matrix_rank(a, rtol=rcond)
    # NumPy's residuals exist only for full column rank and M > N: a shape that depends on
    # the rank, read once on the host
    if m > n and bool(ns.all(ns.equal(rank, n))):
        r = ns.subtract(b2, matmul(a, x))
        res = ns.sum(ns.real(ns.multiply(r, ns.conj(r))), axis=-2)
    else:
        res = ns.zeros((0,), dtype=_real_of(x._dtype), device=x._device)
    return LstsqResult(x[..., 0] if vec else x, res, rank, svdvals(a))


def norm(x: Array, /, ord: int | float | str | None = None,
         axis: int | tuple[int, ...] | None = None, keepdims: bool = False, *,
         dim: int | tuple[int, ...] | None = None, keepdim: bool | None = None,
         dtype: dt.DType | None = None) -> Array:
    """Vector or matrix norm (NumPy's ``linalg.norm``; torch's ``dim``/``keepdim`` spellings):
    an int axis is a vector norm, two axes a matrix norm."""
    check_array(x, "norm")
    if dim is not None:
        if axis is not None:
            raise TypeError("norm: give axis or dim, not both")
        axis = dim
    if keepdim is not None:
        keepdims = keepdim
    if dtype is not None:
        x = as_compute_array(x, dt.as_dtype(dtype, "norm"), x._device, "norm")
    elif x._dtype.kind in "biu":   # NumPy computes the norm of integers in float64
        x = as_compute_array(x, dt.default_float(x._device), x._device, "norm")
    if axis is None:
        if ord is None:
            return vector_norm(x, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} without axis needs a 1-D or 2-D array, got "
                             f"shape {x.shape}")
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        if isinstance(ord, str):
            raise ValueError(f"norm: ord={ord!r} is a matrix norm; a vector norm takes a number")
        return vector_norm(x, axis=axes[0], keepdims=keepdims, ord=2 if ord is None else ord)
    if len(axes) != 2:
        raise ValueError(f"norm: axis must be an int or a pair of ints, got {axis!r}")
    a0, a1 = (normalize_axis(a, x.ndim, "norm") for a in axes)
    if a0 == a1:
        raise ValueError(f"norm: the two axes must differ, got {axis!r}")
    ns = _ns()
    r = matrix_norm(ns.moveaxis(x, (a0, a1), (-2, -1)), ord="fro" if ord is None else ord)
    if keepdims:
        for a in sorted((a0, a1)):
            r = ns.expand_dims(r, axis=a)
    return r


dispatch.export(globals(), "linalg.")
