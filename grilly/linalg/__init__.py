"""The Array API linalg extension: decompositions are backend kernels; norms, outer, trace and
matrix_power are composed from other namespace functions."""
from __future__ import annotations

import math
from typing import Literal, NamedTuple

import numpy as np

from ..array import dispatch
from ..array import dtypes as dt
from ..array.array import Array, view_of
from ..array.core import (as_compute_array, broadcast_shapes, call, check_array, common_device,
                          kernel, normalize_axes, normalize_axis, wrap)
from ..array.linear_algebra import matmul, matrix_transpose, numeric_pair, tensordot, vecdot

__all__ = [
    "EigResult", "EighResult", "LinAlgError", "LstsqResult", "QRResult", "SVDResult",
    "SlogdetResult", "cholesky", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
    "eigvalsh", "inv", "lstsq", "matmul",
    "matrix_norm", "multi_dot", "norm",
    "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv", "qr", "slogdet", "solve",
    "svd", "svdvals", "tensordot", "tensorinv", "tensorsolve", "trace", "vecdot", "vector_norm",
    "solve_triangular", "matrix_exp",
    "CholeskyExResult", "GeqrfResult", "InvExResult", "LUFactorExResult", "LUFactorResult",
    "LUResult", "SolveExResult", "cholesky_ex", "geqrf", "householder_product", "inv_ex", "lu",
    "lu_factor", "lu_factor_ex", "lu_solve", "lu_unpack", "solve_ex", "cholesky_solve",
    "cholesky_inverse", "vander", "LDLFactorResult", "LDLFactorExResult", "ldl_factor",
    "ldl_factor_ex", "ldl_solve",
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


LinAlgError = np.linalg.LinAlgError   # NumPy's class: grilly raises it where NumPy does


def _float(x, op: str) -> Array:
    """``x`` in a floating dtype: integer and bool arrays in float64, as NumPy computes them."""
    check_array(x, op)
    if x._dtype.kind not in "fc":
        return as_compute_array(x, dt.default_float(x._device), x._device, op)
    return x


def _matrices(x, op: str, square: bool = False) -> Array:
    x = _float(x, op)
    # NumPy's LinAlgError, which is a ValueError
    if x.ndim < 2:
        raise LinAlgError(f"{op}: x must have at least 2 dimensions (..., M, N), got shape "
                          f"{x.shape}")
    if square and x.shape[-1] != x.shape[-2]:
        raise LinAlgError(f"{op}: x must be a stack of square matrices (..., M, M), "
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
    x = _matrices(x, "cholesky", square=True)
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
    x = _matrices(x, "det", square=True)
    return wrap(_call(x, "det"), x._dtype, x._device)


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The offset diagonal of each matrix in x, shape (..., K)."""
    check_array(x, "diagonal")
    if x.ndim < 2:
        raise ValueError(f"diagonal: x must have at least 2 dimensions, got shape {x.shape}")
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise TypeError(f"diagonal: offset must be an int, got {offset!r}")
    # a view (written through, it changes x, as torch's; autograd rebases x after such a write)
    return view_of(x, _call(x, "diagonal", offset), "linalg.diagonal", (), {"offset": offset})


def eig(x: Array, /) -> EigResult:
    """Eigenvalues and eigenvectors (complex) of general square matrices."""
    x = _matrices(x, "eig", square=True)
    c = _complex_of(x._dtype)
    w, v = _call(as_compute_array(x, c, x._device, "eig"), "eig")
    return EigResult(wrap(w, c, x._device), wrap(v, c, x._device))


def eigvals(x: Array, /) -> Array:
    """Eigenvalues (complex) of general square matrices."""
    x = _matrices(x, "eigvals", square=True)
    c = _complex_of(x._dtype)
    return wrap(_call(as_compute_array(x, c, x._device, "eigvals"), "eigvals"),
                c, x._device)


def eigh(x: Array, /, *, UPLO: str = "L") -> EighResult:
    """Eigenvalues (real, ascending) and eigenvectors of Hermitian/symmetric matrices (NumPy's
    ``UPLO``: the triangle read, 'L' or 'U')."""
    x = _matrices(x, "eigh", square=True)
    w, v = _call(x, "eigh")
    return EighResult(wrap(w, _real_of(x._dtype), x._device), wrap(v, x._dtype, x._device))


def eigvalsh(x: Array, /, *, UPLO: str = "L") -> Array:
    """Eigenvalues (real, ascending) of Hermitian/symmetric matrices (``UPLO`` as eigh's)."""
    x = _matrices(x, "eigvalsh", square=True)
    return wrap(_call(x, "eigvalsh"), _real_of(x._dtype), x._device)


def inv(x: Array, /) -> Array:
    """Inverse of each square matrix in x."""
    x = _matrices(x, "inv", square=True)
    return wrap(_call(x, "inv"), x._dtype, x._device)


def _max_min(x: Array, axis, keepdims: bool, largest: bool) -> Array:
    return (_ns().max if largest else _ns().min)(x, axis=axis, keepdims=keepdims)


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> Array:
    """Vector p-norm of x over axis (all axes by default)."""
    x = _float(x, "vector_norm")
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
    x = _matrices(x, "matrix_norm")
    ns = _ns()
    n = x.ndim
    if ord == "fro":
        return vector_norm(x, axis=(n - 2, n - 1), keepdims=keepdims)
    if ord in ("nuc", 2, -2):
        s = svdvals(x)
        if ord == "nuc" or (ord == 2 and s.shape[-1] == 0):
            # an empty matrix's largest singular value is 0, as NumPy's norm(x, 2)
            r = ns.sum(s, axis=-1)
        else:
            r = _max_min(s, -1, False, ord == 2)
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
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:   # NumPy's LinAlgError (a ValueError)
        raise LinAlgError(f"matrix_power: x must be a stack of square matrices, got shape "
                          f"{x.shape}")
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


def matrix_rank(x: Array, /, *, rtol: float | Array | None = None, tol: float | Array | None = None,
                hermitian: bool = False) -> Array:
    """Rank of each matrix: singular values above rtol times the largest, or above NumPy's
    absolute ``tol`` (int64); of a 1-D array, 1 unless it is all zeros, as NumPy's."""
    x = _float(x, "matrix_rank")
    ns = _ns()
    if x.ndim < 2:   # NumPy's rank of a vector (or scalar)
        return ns.astype(ns.any(ns.not_equal(x, 0)), dt.int64)
    x = _matrices(x, "matrix_rank")
    if tol is not None:
        if rtol is not None:
            raise ValueError("matrix_rank: give tol or rtol, not both")
        s = svdvals(x)
        t = ns.expand_dims(tol, axis=-1) if isinstance(tol, Array) else tol
        return ns.sum(ns.astype(ns.greater(s, t), dt.int64), axis=-1)
    return wrap(_call(x, "matrix_rank", _rtol_buf(x, rtol, "matrix_rank")), dt.int64, x._device)


def outer(x1: Array, x2: Array, /) -> Array:
    """Outer product of two 1-D arrays."""
    a, b, d, dev = numeric_pair("outer", x1, x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"outer: x1 and x2 must be 1-D, got shapes {a.shape} and {b.shape}")
    rs = kernel(dev, "reshape")
    return _ns().multiply(wrap(rs(a._buf, (a.shape[0], 1)), d, dev),
                          wrap(rs(b._buf, (1, b.shape[0])), d, dev))


def pinv(x: Array, /, *, rtol: float | Array | None = None, hermitian: bool = False,
         rcond: float | Array | None = None) -> Array:
    """Moore-Penrose pseudo-inverse of each matrix in x (NumPy's ``rcond`` is ``rtol``)."""
    x = _matrices(x, "pinv")
    return wrap(_call(x, "pinv", _rtol_buf(x, rtol, "pinv")), x._dtype, x._device)


def qr(x: Array, /, *, mode: Literal["reduced", "complete"] = "reduced") -> QRResult:
    """QR decomposition of each matrix in x (mode 'reduced' or 'complete')."""
    x = _matrices(x, "qr")
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    q, r = _call(x, "qr", mode)
    return QRResult(wrap(q, x._dtype, x._device), wrap(r, x._dtype, x._device))


def slogdet(x: Array, /) -> SlogdetResult:
    """Sign and natural log of the absolute determinant of each square matrix."""
    x = _matrices(x, "slogdet", square=True)
    s, la = _call(x, "slogdet")
    return SlogdetResult(wrap(s, x._dtype, x._device), wrap(la, _real_of(x._dtype), x._device))


def solve(x1: Array, x2: Array, /) -> Array:
    """Solution X of x1 @ X = x2 for square x1 (x2 of shape (M,) is one right-hand side)."""
    x1 = _float(x1, "solve")
    x2 = _float(x2, "solve")
    a, b, d, dev = numeric_pair("solve", x1, x2)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:   # NumPy's LinAlgError (a ValueError)
        raise LinAlgError(f"solve: x1 must be a stack of square matrices, got shape {a.shape}")
    m = a.shape[-1]
    vec = b.ndim == 1
    if vec and b.shape[0] == m:
        b = wrap(kernel(dev, "reshape")(b._buf, (m, 1)), d, dev)
    bbuf = b._buf
    if len(bbuf.shape) < 2 or bbuf.shape[-2] != m:
        hint = ""
        if b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]):
            hint = ("; a batch of vectors (torch's and NumPy 1's reading) is solve(x1, x2, "
                    "left=True) or solve(x1, x2[..., None])[..., 0]")
        raise ValueError(f"solve: x2 of shape {b.shape} does not match x1 of shape {a.shape}; "
                         f"expected (M,) or (..., M, K) with M={m} (NumPy 2's rule){hint}")
    batch = broadcast_shapes(a.shape[:-2], tuple(bbuf.shape[:-2]), op="solve")
    out = call(dev, "solve", batch + (m, bbuf.shape[-1]), d, a, b)
    if vec:
        out = kernel(dev, "reshape")(out, batch + (m,))
    return wrap(out, d, dev)


def svd(x: Array, /, *, full_matrices: bool = True, compute_uv: bool = True,
        hermitian: bool = False) -> SVDResult:
    """Singular value decomposition U, S, Vh of each matrix in x (NumPy's ``compute_uv=False``:
    the singular values only)."""
    x = _matrices(x, "svd")
    u, s, vh = _call(x, "svd", bool(full_matrices))
    return SVDResult(wrap(u, x._dtype, x._device), wrap(s, _real_of(x._dtype), x._device),
                     wrap(vh, x._dtype, x._device))


def svdvals(x: Array, /) -> Array:
    """Singular values (descending) of each matrix in x."""
    x = _matrices(x, "svdvals")
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
    a = _matrices(a, "lstsq")
    b = _float(b, "lstsq")
    if driver not in (None, "gelsd", "gelss"):
        raise NotImplementedError(f"lstsq: driver {driver!r} is not supported (the SVD-based "
                                  "'gelsd'/'gelss' solution is always used)")
    m, n = a.shape[-2:]
    if b.ndim == 0:
        raise LinAlgError("lstsq: b must have 1 or more dimensions, (M,) or (..., M, K); got a "
                          "0-d array")
    if rcond is not None and (isinstance(rcond, bool) or not isinstance(rcond, (int, float))):
        raise TypeError(f"lstsq: rcond must be a float or None, got {rcond!r}")
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
    if dtype is not None:   # astype records, so the gradient reaches x (torch's dtype=)
        x = _ns().astype(_float(x, "norm"), dt.as_dtype(dtype, "norm"))
        if dispatch.hooks.cast is not None:   # and it runs in dtype under autocast too
            with dispatch.no_cast():
                return norm(x, ord, axis, keepdims)
    elif x._dtype.kind in "biu":   # NumPy computes the norm of integers in float64
        x = as_compute_array(x, dt.default_float(x._device), x._device, "norm")
    if axis is None:
        if ord is None:
            return vector_norm(x, keepdims=keepdims)
        if x.ndim not in (1, 2):
            raise ValueError(f"norm: ord={ord!r} without axis needs a 1-D or 2-D array, got "
                             f"shape {x.shape}")
        axis = tuple(range(x.ndim))
    if not isinstance(axis, (int, tuple, list)) or isinstance(axis, bool):
        raise TypeError(f"norm: axis must be an int or a pair of ints, got {axis!r}")
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


# ---- NumPy's keywords (dispatch.NUMPY_FORMS): composed of the canonical calls above -----------
def _uplo(x: Array, UPLO: str, op: str) -> Array:
    """x whose lower triangle is the Hermitian matrix NumPy's ``UPLO`` names."""
    if not isinstance(UPLO, str) or UPLO.upper() not in ("L", "U"):   # NumPy's and torch's
        raise ValueError(f"{op}: UPLO must be 'L' or 'U', got {UPLO!r}")  # take either case
    if UPLO.upper() == "L":
        return x
    x = _matrices(x, op, square=True)
    # the upper triangle of x is the lower triangle of its conjugate transpose
    t = matrix_transpose(x)
    return _ns().conj(t) if x._dtype.kind == "c" else t


def _eigh_np(x: Array, /, *, UPLO: str = "L") -> EighResult:
    return eigh(_uplo(x, UPLO, "eigh"))


def _eigvalsh_np(x: Array, /, *, UPLO: str = "L") -> Array:
    return eigvalsh(_uplo(x, UPLO, "eigvalsh"))


def _svd_np(x: Array, /, *, full_matrices: bool = True, compute_uv: bool = True,
            hermitian: bool = False, driver: str | None = None):
    _no_driver("svd", driver)
    # hermitian=True is NumPy's faster path to the same decomposition: the general one serves
    return svd(x, full_matrices=full_matrices) if compute_uv else svdvals(x)


def _svdvals_t(x: Array, /, *, driver: str | None = None) -> Array:
    _no_driver("svdvals", driver)
    return svdvals(x)


def _no_driver(op: str, driver) -> None:
    """torch's ``driver=`` picks a cuSOLVER routine (CUDA only; torch's CPU refuses it too)."""
    if driver is not None:
        raise NotImplementedError(f"{op}: driver={driver!r} is not supported (only None: "
                                  "grilly has one SVD algorithm)")


def _pinv_np(x: Array, /, *, rtol=None, hermitian: bool = False, rcond=None,
             atol=None) -> Array:
    if rcond is not None and rtol is not None:
        raise ValueError("pinv: give rcond or rtol, not both (the same parameter)")
    rtol = rcond if rcond is not None else rtol
    if atol is None:
        return pinv(x, rtol=rtol)
    # torch's atol: singular values up to max(atol, rtol * largest) count as zero
    x = _matrices(x, "pinv")
    ns = _ns()
    u, s, vh = svd(x, full_matrices=False)
    keep = ns.greater(s, _cutoff(x, s, atol, rtol, "pinv"))
    # 1 / s only where kept: a zero singular value must not reach the division (nor its gradient)
    inv_s = ns.where(keep, ns.divide(1.0, ns.where(keep, s, 1.0)), 0.0)
    vs = ns.multiply(ns.conj(matrix_transpose(vh)), ns.expand_dims(inv_s, axis=-2))
    return matmul(vs, ns.conj(matrix_transpose(u)))


def _cutoff(x: Array, s: Array, atol, rtol, op: str) -> Array:
    """torch's max(atol, rtol * s_max) per matrix, shape (..., 1); rtol is 0 where atol > 0 and
    rtol is not given, else max(M, N) * eps by default."""
    ns = _ns()
    rd = s._dtype

    def tol(v, name):
        if isinstance(v, Array):
            common_device(op, x, v)
            if v._dtype.kind not in "iuf":
                raise TypeError(f"{op}: {name} must be a real array, got dtype {v._dtype.name}")
            return ns.expand_dims(as_compute_array(v, rd, x._device, op), axis=-1)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{op}: {name} must be a float, an array or None, got {v!r}")
        return as_compute_array(float(v), rd, x._device, op)

    a = tol(atol, "atol")
    if rtol is None:
        r = ns.where(ns.greater(a, 0), 0.0, max(x.shape[-2:]) * dt.finfo(rd).eps)
    else:
        r = tol(rtol, "rtol")
    top = s[..., :1] if s.shape[-1] else ns.zeros(s.shape[:-1] + (1,), dtype=rd, device=s.device)
    return ns.maximum(a, ns.multiply(r, top))


def _matrix_rank_t(x: Array, /, *, rtol=None, tol=None, hermitian: bool = False,
                   atol=None) -> Array:
    if tol is not None:
        raise TypeError("matrix_rank: give tol or atol, not both (the same parameter)")
    x = _matrices(x, "matrix_rank")
    ns = _ns()
    s = svdvals(x)
    return ns.sum(ns.astype(ns.greater(s, _cutoff(x, s, atol, rtol, "matrix_rank")), dt.int64),
                  axis=-1)


def _qr_np(x: Array, /, *, mode: str = "reduced") -> Array | tuple[Array, Array]:
    if mode == "raw":   # NumPy's (h, tau): geqrf's reflectors, transposed (Fortran's order)
        a, tau = geqrf(x)
        return matrix_transpose(a), tau
    # NumPy's mode='r': R alone, the reduced one (torch returns an empty Q beside it)
    return qr(x, mode="reduced").R


def _either(op: str, name: str, value, tname: str, tvalue):
    """The value given as NumPy's ``name`` or torch's ``tname`` (None when neither)."""
    if tvalue is None:
        return value
    if value is not None:
        raise TypeError(f"{op}: give {name} or {tname}, not both (the same parameter)")
    return tuple(tvalue) if isinstance(tvalue, list) else tvalue


def _vector_norm_t(x: Array, /, *, ord: int | float = 2, axis=None, keepdims=None, dim=None,
                   keepdim=None, dtype=None) -> Array:
    axis = _either("vector_norm", "axis", axis, "dim", dim)
    keep = _either("vector_norm", "keepdims", keepdims, "keepdim", keepdim)
    if dtype is not None:   # torch's: x cast to dtype first, and run in it under autocast too
        x = _ns().astype(_float(x, "vector_norm"), dt.as_dtype(dtype, "vector_norm"))
        with dispatch.no_cast():
            return vector_norm(x, axis=axis, keepdims=bool(keep), ord=ord)
    return vector_norm(x, axis=axis, keepdims=bool(keep), ord=ord)


def _matrix_norm_t(x: Array, /, *, ord="fro", keepdims=None, dim=None, keepdim=None,
                   dtype=None) -> Array:
    keep = bool(_either("matrix_norm", "keepdims", keepdims, "keepdim", keepdim))
    dim = (-2, -1) if dim is None else dim
    if isinstance(dim, int) or len(dim) != 2:
        raise ValueError(f"matrix_norm: dim must be a pair of ints, got {dim!r}")
    x = _matrices(x, "matrix_norm")
    return norm(x, ord, axis=tuple(dim), keepdims=keep, dtype=dtype)


def _cross_t(x1: Array, x2: Array, /, *, axis=None, dim=None) -> Array:
    axis = _either("cross", "axis", axis, "dim", dim)
    return cross(x1, x2, axis=-1 if axis is None else axis)


def _diagonal_t(x: Array, /, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Array:
    check_array(x, "diagonal")
    d1, d2 = (normalize_axis(d, x.ndim, "diagonal") for d in (dim1, dim2))
    if d1 == d2:
        raise ValueError(f"diagonal: dim1 and dim2 must differ, got {dim1} and {dim2}")
    # torch's: the diagonal of the (dim1, dim2) planes, appended as the last axis
    return diagonal(_ns().moveaxis(x, (d1, d2), (-2, -1)), offset=offset)


def _solve_t(x1: Array, x2: Array, /, *, left: bool = True) -> Array:
    if left:
        return solve(x1, x2)
    # torch's left=False: X @ x1 = x2, i.e. x1^T X^T = x2^T (x2 of shape (M,) one row)
    a = _matrices(x1, "solve", square=True)
    b = _float(x2, "solve")
    if b.ndim == 1:
        return solve(matrix_transpose(a), b)
    return matrix_transpose(solve(matrix_transpose(a), matrix_transpose(b)))


def _solve_torch(x1: Array, x2: Array, /, *, left: bool = True) -> Array:
    """torch.linalg.solve (told by its ``left=``): x2 of shape x1.shape[:-1] is a batch of
    vectors, torch's rule (NumPy 2 would read a stack of matrices)."""
    a = _matrices(x1, "solve", square=True)
    b = _float(x2, "solve")
    if left and b.ndim > 1 and b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]):
        return _solve_t(a, _ns().expand_dims(b, axis=-1))[..., 0]
    return _solve_t(a, b, left=left)


dispatch.NUMPY_FORMS.update({
    "linalg.eigh": (frozenset({"UPLO"}), _eigh_np),
    "linalg.eigvalsh": (frozenset({"UPLO"}), _eigvalsh_np),
    "linalg.svd": (frozenset({"compute_uv", "hermitian", "driver"}), _svd_np),
    "linalg.pinv": (frozenset({"rcond", "hermitian", "atol"}), _pinv_np),
    "linalg.qr": (frozenset(), _qr_np),
    # torch.linalg's keywords, composed of the canonical calls in the same way
    "linalg.svdvals": (frozenset({"driver"}), _svdvals_t),
    "linalg.matrix_rank": (frozenset({"atol"}), _matrix_rank_t),
    "linalg.vector_norm": (frozenset({"dim", "keepdim", "dtype"}), _vector_norm_t),
    "linalg.matrix_norm": (frozenset({"dim", "keepdim", "dtype"}), _matrix_norm_t),
    "linalg.cross": (frozenset({"dim"}), _cross_t),
    "linalg.diagonal": (frozenset({"dim1", "dim2"}), _diagonal_t),
    "linalg.solve": (frozenset({"left"}), _solve_torch),
})
# NumPy's qr(mode='r') returns R alone and 'raw' is refused: told by the value, not a keyword
dispatch.NUMPY_CALLS["linalg.qr"] = lambda args, kw: kw.get("mode") in ("r", "raw")


# ---- NumPy's other linalg functions, composed ------------------------------------------------
def cond(x: Array, p: int | float | str | None = None) -> Array:
    """Condition number of each matrix (NumPy's ``linalg.cond``): the ratio of the extreme
    singular values for p None, 2 or -2, else ``norm(x, p) * norm(inv(x), p)``."""
    x = _matrices(x, "cond")
    ns = _ns()
    if p is None or (p in (2, -2) and not isinstance(p, bool)):
        s = svdvals(x)
        hi, lo = s[..., 0], s[..., -1]
        return ns.divide(lo, hi) if p == -2 else ns.divide(hi, lo)
    x = _matrices(x, "cond", square=True)
    return ns.multiply(norm(x, p, axis=(-2, -1)), norm(inv(x), p, axis=(-2, -1)))


def _chain_order(dims: list) -> list:
    """split[i][j]: where the cheapest product of matrices i..j splits (matrix-chain order)."""
    n = len(dims) - 1
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays, *, out=None) -> Array:
    """The product of two or more arrays in the cheapest order (NumPy's ``linalg.multi_dot``):
    a 1-D first array is a row vector, a 1-D last one a column vector."""
    from ..array.numpy_args import no_out
    no_out("multi_dot", out)
    arrs = list(arrays)
    if len(arrs) < 2:
        raise ValueError("multi_dot: arrays must have at least two elements")
    for a in arrs:
        check_array(a, "multi_dot", "arrays")
    ns = _ns()
    first, last = arrs[0].ndim == 1, arrs[-1].ndim == 1
    if first:
        arrs[0] = ns.reshape(arrs[0], (1, -1))
    if last:
        arrs[-1] = ns.reshape(arrs[-1], (-1, 1))
    for i, a in enumerate(arrs):
        if a.ndim != 2:
            raise ValueError(f"multi_dot: array {i} must be 2-D (1-D allowed first and last), "
                             f"got shape {a.shape}")
    split = _chain_order([arrs[0].shape[0]] + [a.shape[1] for a in arrs])

    def prod(i: int, j: int) -> Array:
        if i == j:
            return arrs[i]
        k = split[i][j]
        return matmul(prod(i, k), prod(k + 1, j))

    r = prod(0, len(arrs) - 1)
    if first and last:
        return ns.reshape(r, ())
    if first or last:
        return ns.reshape(r, (-1,))
    return r


def tensorinv(a: Array, ind: int = 2) -> Array:
    """The inverse of ``a`` under tensordot over its first ``ind`` axes (NumPy's tensorinv)."""
    check_array(a, "tensorinv")
    if isinstance(ind, bool) or not isinstance(ind, int) or ind <= 0:
        raise ValueError(f"tensorinv: ind must be a positive int, got {ind!r}")
    rows = math.prod(a.shape[:ind])
    ia = inv(_ns().reshape(a, (rows, -1)))
    return _ns().reshape(ia, a.shape[ind:] + a.shape[:ind])


def tensorsolve(a: Array, b: Array, axes: tuple[int, ...] | None = None) -> Array:
    """x with ``tensordot(a, x, x.ndim) == b`` (NumPy's tensorsolve; ``axes`` of a moved last)."""
    check_array(a, "tensorsolve", "a")
    check_array(b, "tensorsolve", "b")
    ns = _ns()
    if axes is not None:
        rest = [i for i in range(a.ndim) if i not in [normalize_axis(k, a.ndim, "tensorsolve")
                                                      for k in axes]]
        a = ns.permute_dims(a, tuple(rest) + tuple(normalize_axis(k, a.ndim, "tensorsolve")
                                                   for k in axes))
    xshape = a.shape[b.ndim:]
    n = math.prod(xshape)
    if a.size != n * n:
        raise LinAlgError(f"tensorsolve: a of shape {a.shape} must satisfy prod(a.shape[b.ndim:]) "
                          f"== prod(a.shape[:b.ndim]) for b of shape {b.shape}")
    x = solve(ns.reshape(a, (n, n)), ns.reshape(b, (-1,)))
    return ns.reshape(x, xshape)


# ---- torch.linalg's functions NumPy lacks, composed --------------------------------------------
def solve_triangular(x1: Array, x2: Array, /, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Array:
    """Solution X of x1 @ X = x2 (X @ x1 = x2 when left=False) reading only x1's upper or lower
    triangle (its diagonal taken as ones when unitriangular), as torch.linalg.solve_triangular."""
    if not isinstance(upper, bool):
        raise TypeError(f"solve_triangular: upper must be a bool, got {upper!r}")
    a = _matrices(x1, "solve_triangular", square=True)
    ns = _ns()
    # the other triangle is never read, so its entries get no gradient either (torch's rule)
    if unitriangular:
        t = ns.triu(a, k=1) if upper else ns.tril(a, k=-1)
        t = ns.add(t, ns.eye(a.shape[-1], dtype=a.dtype, device=a.device))
    else:
        t = ns.triu(a) if upper else ns.tril(a)
    return _solve_t(t, x2, left=left)


# Higham (2005)'s [13/13] Pade approximant of exp and the 1-norm up to which it is accurate to
# float64's precision without scaling
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(x: Array, /) -> Array:
    """Matrix exponential of each square matrix (scaling and squaring with the [13/13] Pade
    approximant), as torch.linalg.matrix_exp; gradients flow through its matmuls and solve."""
    x = _matrices(x, "matrix_exp", square=True)
    ns = _ns()
    n = x.shape[-1]
    if x.size == 0:
        return ns.zeros(x.shape, dtype=x.dtype, device=x.device)
    # one power of two for the whole batch, read on the host: a shape of the computation
    norm1 = float(ns.max(matrix_norm(x.detach(), ord=1)))
    sq = 0
    if math.isfinite(norm1) and norm1 > _THETA13:
        sq = math.ceil(math.log2(norm1 / _THETA13))
    a = ns.divide(x, 2.0 ** sq) if sq else x
    b = _PADE13
    eye = ns.eye(n, dtype=x.dtype, device=x.device)
    a2 = matmul(a, a)
    a4 = matmul(a2, a2)
    a6 = matmul(a4, a2)
    u = matmul(a, ns.add(matmul(a6, b[13] * a6 + b[11] * a4 + b[9] * a2),
                         b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * eye))
    v = ns.add(matmul(a6, b[12] * a6 + b[10] * a4 + b[8] * a2),
               b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye)
    r = solve(ns.subtract(v, u), ns.add(v, u))
    for _ in range(sq):
        r = matmul(r, r)
    return r


# ---- torch.linalg's LU family, the _ex variants and Householder products, composed ----------
# Each is a loop of namespace calls over the columns (Gaussian elimination, Householder
# reflections), so gradients flow through them and every device runs them alike.
class LUFactorResult(NamedTuple):
    LU: Array
    pivots: Array


class LUFactorExResult(NamedTuple):
    LU: Array
    pivots: Array
    info: Array


class LUResult(NamedTuple):
    P: Array
    L: Array
    U: Array


class InvExResult(NamedTuple):
    inverse: Array
    info: Array


class CholeskyExResult(NamedTuple):
    L: Array
    info: Array


class SolveExResult(NamedTuple):
    result: Array
    info: Array


class GeqrfResult(NamedTuple):
    a: Array
    tau: Array


def _flag(value, op: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{op}: {name} must be a bool, got {value!r}")
    return value


def _mh(x: Array) -> Array:
    """The conjugate transpose of each matrix."""
    t = matrix_transpose(x)
    return _ns().conj(t) if x._dtype.kind == "c" else t


def _lu_core(a: Array, pivot: bool):
    """Gaussian elimination of the matrices a (..., M, N), with LAPACK getrf's partial pivoting
    (the first largest |x|, |re| + |im| for complex, as i?amax) when ``pivot``: (L below and U
    on and above the diagonal in one matrix, the row order perm (..., M) with a[perm] = L U,
    torch's 1-based int32 pivots (..., K), info: the first k with U[k-1, k-1] == 0, else 0)."""
    ns = _ns()
    m, n = a.shape[-2:]
    k = min(m, n)
    batch, dev = a.shape[:-2], a.device
    rows, cols = ns.arange(m, device=dev), ns.arange(n, device=dev)
    perm = ns.broadcast_to(rows, batch + (m,))
    info = ns.zeros(batch, dtype=dt.int32, device=dev)
    pivs = []
    for j in range(k):
        if pivot:
            c = a.detach()[..., :, j]
            mag = ns.abs(c) if c._dtype.kind != "c" else ns.add(ns.abs(ns.real(c)),
                                                                 ns.abs(ns.imag(c)))
            p = ns.argmax(ns.where(rows >= j, mag, -1.0), axis=-1)
            pe = ns.expand_dims(p, axis=-1)
            swap = ns.where(rows == j, pe, ns.where(rows == pe, j, rows))   # rows j and p
            a = ns.take_along_axis(a, ns.expand_dims(swap, axis=-1), axis=-2)
            perm = ns.take_along_axis(perm, swap, axis=-1)
            pivs.append(p)
        pv = a[..., j, j]
        zero = ns.equal(pv, 0)
        info = ns.where(ns.logical_and(ns.equal(info, 0), zero), j + 1, info)
        # with pivoting a zero pivot has a zero column below it: getrf skips its scaling
        den = ns.where(zero, 1.0, pv) if pivot else pv
        low = ns.where(rows > j, ns.divide(a[..., :, j], ns.expand_dims(den, axis=-1)), 0.0)
        right = ns.where(cols > j, a[..., j, :], 0.0)
        a = ns.subtract(a, ns.multiply(low[..., :, None], right[..., None, :]))
        a = ns.where(ns.logical_and(rows[:, None] > j, cols == j), low[..., :, None], a)
    if pivot and pivs:
        piv = ns.add(ns.stack(pivs, axis=-1), 1)
    else:
        piv = ns.broadcast_to(ns.arange(1, k + 1, device=dev), batch + (k,))
    return a, perm, ns.astype(piv, dt.int32), info


def _raise_info(info: Array, op: str, what: str) -> None:
    """LinAlgError (torch's check_errors=True) naming the first matrix whose info is > 0."""
    ns = _ns()
    if not bool(ns.any(ns.greater(info, 0))):
        return
    i = np.asarray(ns.to_device(info, "cpu"))
    at = tuple(int(v) for v in np.argwhere(i > 0)[0])
    where_ = f" (batch element {at})" if at else ""
    raise LinAlgError(f"{op}{where_}: " + what.format(int(i[at])))


_SINGULAR = ("U[{0},{0}] (1-based) of the LU factorization is zero: the matrix is singular")


def lu_factor_ex(A: Array, /, *, pivot: bool = True, check_errors: bool = False
                 ) -> LUFactorExResult:
    """torch.linalg.lu_factor_ex: the compact LU factorization of A (..., M, N) with torch's
    1-based int32 pivots, and info (..., ): 0, or k where U[k-1, k-1] is exactly zero."""
    a = _matrices(A, "lu_factor_ex")
    _flag(pivot, "lu_factor_ex", "pivot")
    lu_, _, piv, info = _lu_core(a, pivot)
    if _flag(check_errors, "lu_factor_ex", "check_errors"):
        _raise_info(info, "lu_factor_ex", _SINGULAR)
    return LUFactorExResult(lu_, piv, info)


def lu_factor(A: Array, /, *, pivot: bool = True) -> LUFactorResult:
    """torch.linalg.lu_factor: (LU, pivots) of A, raising LinAlgError where U has a zero on its
    diagonal (lu_factor_ex returns it in info instead)."""
    a = _matrices(A, "lu_factor")
    _flag(pivot, "lu_factor", "pivot")
    lu_, _, piv, info = _lu_core(a, pivot)
    _raise_info(info, "lu_factor", _SINGULAR + "; lu_factor_ex or lu factor it anyway")
    return LUFactorResult(lu_, piv)


def _unpack(lu_: Array, k: int):
    ns = _ns()
    m, n = lu_.shape[-2:]
    low = ns.add(ns.tril(lu_[..., :, :k], k=-1), ns.eye(m, k, dtype=lu_.dtype, device=lu_.device))
    return low, ns.triu(lu_[..., :k, :])


def _perm_matrix(perm: Array, dtype) -> Array:
    """P with P[perm[i], i] = 1, so that P @ a[perm] = a."""
    ns = _ns()
    rows = ns.arange(perm.shape[-1], device=perm.device)
    return ns.astype(ns.equal(ns.expand_dims(perm, axis=-2), rows[:, None]), dtype)


def lu(A: Array, /, *, pivot: bool = True) -> LUResult:
    """torch.linalg.lu: P (..., M, M), L (..., M, K) unit lower and U (..., K, N) upper with
    A = P @ L @ U (P is empty, shape (0,), when pivot=False)."""
    a = _matrices(A, "lu")
    _flag(pivot, "lu", "pivot")
    lu_, perm, _, _ = _lu_core(a, pivot)
    low, up = _unpack(lu_, min(a.shape[-2:]))
    p = _perm_matrix(perm, a.dtype) if pivot else _ns().zeros((0,), dtype=a.dtype,
                                                              device=a.device)
    return LUResult(p, low, up)


def _check_pivots(pivots, m: int, k: int, batch: tuple, op: str, values: bool = False) -> Array:
    if not isinstance(pivots, Array):
        raise TypeError(f"{op}: pivots must be a grilly Array, got {type(pivots).__name__}")
    if pivots._dtype.kind not in "iu":
        raise TypeError(f"{op}: pivots must be an integer array (torch's int32), got dtype "
                        f"{pivots._dtype.name}")
    if tuple(pivots.shape) != tuple(batch) + (k,):
        raise ValueError(f"{op}: pivots of shape {pivots.shape} must have shape "
                         f"{tuple(batch) + (k,)} (LU's batch shape and min(M, N))")
    ns = _ns()
    # the values are read on the host (as torch's lu_unpack does), which lu_solve skips: it
    # stays traceable by grilly.jit, as torch's lu_solve does not check them either
    if values and k and not bool(ns.all(ns.logical_and(ns.greater_equal(pivots, 1),
                                            ns.less_equal(pivots, m)))):
        raise ValueError(f"{op}: pivots must be 1-based row numbers in [1, {m}]")
    return pivots


def _perm_of(pivots: Array, m: int) -> Array:
    """The row order perm of LAPACK's interchanges: row j swapped with row pivots[j] - 1."""
    ns = _ns()
    rows = ns.arange(m, device=pivots.device)
    perm = ns.broadcast_to(rows, pivots.shape[:-1] + (m,))
    p0 = ns.subtract(ns.astype(pivots, dt.int64), 1)
    for j in range(pivots.shape[-1]):
        pe = p0[..., j:j + 1]
        perm = ns.take_along_axis(perm, ns.where(rows == j, pe, ns.where(rows == pe, j, rows)),
                                  axis=-1)
    return perm


def lu_unpack(LU: Array, pivots: Array, /, unpack_data: bool = True,
              unpack_pivots: bool = True) -> LUResult:
    """torch.lu_unpack: P, L, U of lu_factor's (LU, pivots) (empty arrays for the parts not
    unpacked)."""
    lu_ = _matrices(LU, "lu_unpack")
    m, n = lu_.shape[-2:]
    k = min(m, n)
    ns = _ns()
    empty = ns.zeros((0,), dtype=lu_.dtype, device=lu_.device)
    p = empty
    if _flag(unpack_pivots, "lu_unpack", "unpack_pivots"):
        piv = _check_pivots(pivots, m, k, lu_.shape[:-2], "lu_unpack", values=True)
        p = _perm_matrix(_perm_of(piv, m), lu_.dtype)
    low, up = _unpack(lu_, k) if _flag(unpack_data, "lu_unpack", "unpack_data") else (empty, empty)
    return LUResult(p, low, up)


def _rows(b: Array, idx: Array) -> Array:
    """b's rows (axis -2) in the order idx (..., M), batch shapes broadcast."""
    ns = _ns()
    batch = broadcast_shapes(b.shape[:-2], idx.shape[:-1], op="lu_solve")
    b = ns.broadcast_to(b, batch + b.shape[-2:])
    idx = ns.broadcast_to(idx, batch + idx.shape[-1:])
    return ns.take_along_axis(b, ns.expand_dims(idx, axis=-1), axis=-2)


def lu_solve(LU: Array, pivots: Array, B: Array | None = None, /, *, left: bool = True,
             adjoint: bool = False) -> Array:
    """torch.linalg.lu_solve: X with A X = B (X A = B when left=False; A^H for A when adjoint),
    A = P L U given by lu_factor's (LU, pivots); B (..., N, K), batch shapes broadcast."""
    if isinstance(LU, tuple) or B is None:   # SciPy's lu_solve((lu, piv), b)
        raise TypeError("lu_solve: takes torch's (LU, pivots, B); SciPy's lu_solve((lu, piv), "
                        "b) is lu_solve(lu, piv, b) with lu_factor's 1-based int32 pivots "
                        "(SciPy's are 0-based)")
    lu_ = _matrices(LU, "lu_solve", square=True)
    n = lu_.shape[-1]
    piv = _check_pivots(pivots, n, n, lu_.shape[:-2], "lu_solve")
    b = _float(B, "lu_solve")
    left = _flag(left, "lu_solve", "left")
    adjoint = _flag(adjoint, "lu_solve", "adjoint")
    if b.ndim < 2:
        raise LinAlgError(f"lu_solve: B must have at least 2 dimensions (..., N, K), got shape "
                          f"{b.shape}")
    if b.shape[-2 if left else -1] != n:
        want = "(..., N, K)" if left else "(..., K, N)"
        raise LinAlgError(f"lu_solve: B of shape {b.shape} does not match LU of shape "
                          f"{lu_.shape}; expected {want} with N={n}")
    if not left:   # X A = B is A^H X^H = B^H (X A^H = B: A X^H = B^H)
        return _mh(_lu_solve_left(lu_, _perm_of(piv, n), _mh(b), not adjoint))
    return _lu_solve_left(lu_, _perm_of(piv, n), b, adjoint)


def _lu_solve_left(lu_: Array, perm: Array, b: Array, adjoint: bool) -> Array:
    if not adjoint:   # A = P L U: X = U^-1 L^-1 (P^T B), P^T B being B's rows in perm's order
        y = solve_triangular(lu_, _rows(b, perm), upper=False, unitriangular=True)
        return solve_triangular(lu_, y, upper=True)
    h = _mh(lu_)   # A^H = U^H L^H P^T: X = P L^-H U^-H B (U^H lower, L^H unit upper)
    y = solve_triangular(h, solve_triangular(h, b, upper=False), upper=True, unitriangular=True)
    return _rows(y, _ns().argsort(perm, axis=-1))


def _solve_guarded(lu_: Array, perm: Array, info: Array, b: Array, left: bool) -> Array:
    """lu_solve where info == 0; NaN for the singular matrices (their U replaced by I before the
    triangular solves, which would raise)."""
    ns = _ns()
    ok = ns.expand_dims(ns.expand_dims(ns.equal(info, 0), axis=-1), axis=-1)
    safe = ns.where(ok, lu_, ns.eye(lu_.shape[-1], dtype=lu_.dtype, device=lu_.device))
    x = _mh(_lu_solve_left(safe, perm, _mh(b), True)) if not left else \
        _lu_solve_left(safe, perm, b, False)
    return ns.where(ok, x, math.nan)


def inv_ex(A: Array, /, *, check_errors: bool = False) -> InvExResult:
    """torch.linalg.inv_ex: (inverse, info) of square A; info is lu_factor_ex's (a singular
    matrix's inverse is NaN, where torch's holds infs), LinAlgError when check_errors."""
    a = _matrices(A, "inv_ex", square=True)
    lu_, perm, _, info = _lu_core(a, True)
    if _flag(check_errors, "inv_ex", "check_errors"):
        _raise_info(info, "inv_ex", _SINGULAR)
    eye = _ns().eye(a.shape[-1], dtype=a.dtype, device=a.device)
    return InvExResult(_solve_guarded(lu_, perm, info, eye, True), info)


def solve_ex(A: Array, B: Array, /, *, left: bool = True, check_errors: bool = False
             ) -> SolveExResult:
    """torch.linalg.solve_ex: (X, info) with A X = B (X A = B when left=False); B of shape
    (N,) or A.shape[:-1] is a (batch of) vector(s), torch's rule; info as lu_factor_ex's."""
    a = _matrices(A, "solve_ex", square=True)
    b = _float(B, "solve_ex")
    left = _flag(left, "solve_ex", "left")
    n = a.shape[-1]
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))
    ns = _ns()
    if vec:
        if not left:
            raise ValueError("solve_ex: a vector B with left=False is not supported (as "
                             "torch's); it is B / A.squeeze(-1)")
        b = ns.expand_dims(b, axis=-1)
    if b.ndim < 2 or b.shape[-2 if left else -1] != n:
        raise LinAlgError(f"solve_ex: B of shape {B.shape} does not match A of shape "
                          f"{a.shape}; expected (..., N, K){'' if left else ' transposed'} or "
                          f"a vector (N,) with N={n}")
    lu_, perm, _, info = _lu_core(a, True)
    if _flag(check_errors, "solve_ex", "check_errors"):
        _raise_info(info, "solve_ex", _SINGULAR)
    x = _solve_guarded(lu_, perm, info, b, left)
    return SolveExResult(x[..., 0] if vec else x, info)


def cholesky_ex(A: Array, /, *, upper: bool = False, check_errors: bool = False
                ) -> CholeskyExResult:
    """torch.linalg.cholesky_ex: (L, info) of Hermitian A (its lower triangle read); info: 0, or
    the order k of the first leading minor that is not positive-definite (that matrix's L is
    NaN), LinAlgError when check_errors."""
    a = _matrices(A, "cholesky_ex", square=True)
    upper = _flag(upper, "cholesky_ex", "upper")
    ns = _ns()
    n = a.shape[-1]
    rows = ns.arange(n, device=a.device)
    # the factorization itself, column by column (differentiable as it goes): the batched
    # kernel would raise for a matrix whose last pivots round to <= 0 in its own order of
    # operations but not in this one, where this function must only report it in info
    w = ns.tril(a)
    w = ns.add(w, _mh(ns.tril(w, k=-1)))
    if a.requires_grad:
        # the lower triangle's values with the gradient of the Hermitian part, as torch's
        # (the gradient a symmetric matrix, each off-diagonal pair sharing it)
        h = ns.multiply(ns.add(a, _mh(a)), 0.5)
        w = ns.add(h, ns.subtract(w, h).detach())
    info = ns.zeros(a.shape[:-2], dtype=dt.int32, device=a.device)
    cols = []
    for j in range(n):
        d = ns.real(w[..., j, j])
        bad = ns.logical_not(ns.greater(d, 0))   # NaN too
        info = ns.where(ns.logical_and(ns.equal(info, 0), bad), j + 1, info)
        s = ns.sqrt(ns.where(bad, 1.0, d))
        c = ns.where(rows > j, ns.divide(w[..., :, j], ns.expand_dims(s, axis=-1)), 0.0)
        cols.append(ns.where(rows == j, ns.expand_dims(ns.astype(s, a.dtype), axis=-1), c))
        cc = ns.conj(c) if c._dtype.kind == "c" else c
        w = ns.subtract(w, ns.multiply(c[..., :, None], cc[..., None, :]))
    if _flag(check_errors, "cholesky_ex", "check_errors"):
        _raise_info(info, "cholesky_ex", "the leading minor of order {0} is not "
                    "positive-definite")
    ok = ns.expand_dims(ns.expand_dims(ns.equal(info, 0), axis=-1), axis=-1)
    fac = ns.stack(cols, axis=-1) if n else ns.zeros_like(a)
    fac = _mh(fac) if upper else fac
    return CholeskyExResult(ns.where(ok, fac, math.nan), info)


def householder_product(A: Array, tau: Array, /) -> Array:
    """torch.linalg.householder_product: the first N columns of H_1 ... H_K, H_i = I - tau_i
    v_i v_i^H with v_i column i of A (..., M, N) below the diagonal and 1 on it."""
    a = _matrices(A, "householder_product")
    check_array(tau, "householder_product", "tau")
    m, n = a.shape[-2:]
    if m < n:
        raise LinAlgError(f"householder_product: A of shape {a.shape} must have "
                          "A.shape[-2] >= A.shape[-1]")
    if tau.ndim != a.ndim - 1 or tuple(tau.shape[:-1]) != tuple(a.shape[:-2]) or \
            tau.shape[-1] > n:
        raise ValueError(f"householder_product: tau of shape {tau.shape} must have shape "
                         f"(*A.shape[:-2], K) with K <= {n}, for A of shape {a.shape}")
    ns = _ns()
    d = dt.result_type(a._dtype, _float(tau, "householder_product")._dtype)
    a, t = ns.astype(a, d), ns.astype(tau, d)
    rows = ns.arange(m, device=a.device)
    q = ns.eye(m, n, dtype=d, device=a.device)
    # H_1 (H_2 (... (H_K E))): each reflector applied to the M x N block from the left
    for i in range(tau.shape[-1] - 1, -1, -1):
        v = ns.where(rows > i, a[..., :, i], ns.astype(rows == i, d))
        vh = ns.conj(v) if d.kind == "c" else v
        w = ns.sum(ns.multiply(vh[..., :, None], q), axis=-2)   # v^H q, (..., N)
        q = ns.subtract(q, ns.multiply(ns.multiply(t[..., i, None, None], v[..., :, None]),
                                       w[..., None, :]))
    return q


def geqrf(A: Array, /) -> GeqrfResult:
    """torch.geqrf (LAPACK's): R on and above the diagonal of ``a`` and the Householder vectors
    below it, with tau, such that householder_product(a, tau) is the reduced Q."""
    a = _matrices(A, "geqrf")
    ns = _ns()
    m, n = a.shape[-2:]
    cplx = a._dtype.kind == "c"
    rows, cols = ns.arange(m, device=a.device), ns.arange(n, device=a.device)
    taus = []
    for j in range(min(m, n)):
        col = a[..., :, j]
        alpha = a[..., j, j]
        below = ns.where(rows > j, col, 0.0)
        xnorm = vector_norm(below, axis=-1)
        ar = ns.real(alpha) if cplx else alpha
        flat = ns.equal(xnorm, 0)
        if cplx:   # zlarfg: H = I only when alpha is real too
            flat = ns.logical_and(flat, ns.equal(ns.imag(alpha), 0))
        # dlarfg/zlarfg: beta = -sign(Re alpha) * ||(alpha, x)||, real
        nrm = vector_norm(ns.where(rows >= j, col, 0.0), axis=-1)
        beta = ns.astype(ns.where(ns.greater_equal(ar, 0), ns.negative(nrm), nrm), a.dtype)
        beta = ns.where(flat, alpha, beta)
        tau = ns.where(flat, 0.0, ns.divide(ns.subtract(beta, alpha), ns.where(flat, 1.0, beta)))
        v = ns.divide(below, ns.expand_dims(ns.where(flat, 1.0, ns.subtract(alpha, beta)),
                                            axis=-1))
        vfull = ns.where(rows == j, 1.0, v)
        vh = ns.conj(vfull) if cplx else vfull
        # H^H (conj(tau)) applied to the columns on the right
        th = ns.conj(tau) if cplx else tau
        w = ns.sum(ns.multiply(vh[..., :, None], a), axis=-2)
        upd = ns.multiply(ns.multiply(th[..., None, None], vfull[..., :, None]), w[..., None, :])
        a = ns.subtract(a, ns.where(cols > j, upd, 0.0))
        newcol = ns.where(rows == j, ns.expand_dims(beta, axis=-1), ns.where(rows > j, v, col))
        a = ns.where(cols == j, newcol[..., :, None], a)
        taus.append(tau)
    tau = ns.stack(taus, axis=-1) if taus else ns.zeros(a.shape[:-2] + (0,), dtype=a.dtype,
                                                        device=a.device)
    return GeqrfResult(a, tau)


def cholesky_solve(B: Array, L: Array, /, upper: bool = False) -> Array:
    """torch.cholesky_solve: X with A X = B for A = L L^H (U^H U when upper), L's triangle
    read; B (..., N, K), batch shapes broadcast. The gradient reaches that triangle only."""
    low = _matrices(L, "cholesky_solve", square=True)
    b = _float(B, "cholesky_solve")
    upper = _flag(upper, "cholesky_solve", "upper")
    n = low.shape[-1]
    if b.ndim < 2 or b.shape[-2] != n:
        raise LinAlgError(f"cholesky_solve: B of shape {b.shape} does not match L of shape "
                          f"{low.shape}; expected (..., N, K) with N={n}")
    h = _mh(low)
    if upper:   # U^H U X = B
        return solve_triangular(low, solve_triangular(h, b, upper=False), upper=True)
    return solve_triangular(h, solve_triangular(low, b, upper=False), upper=True)


def cholesky_inverse(L: Array, /, upper: bool = False) -> Array:
    """torch.cholesky_inverse: the inverse of A = L L^H (U^H U when upper) from its Cholesky
    factor."""
    low = _matrices(L, "cholesky_inverse", square=True)
    eye = _ns().eye(low.shape[-1], dtype=low.dtype, device=low.device)
    return cholesky_solve(eye, low, upper=upper)


# ---- LDL^T (Bunch-Kaufman), as LAPACK's sytrf/sytrs with uplo "L" --------------------------
class LDLFactorResult(NamedTuple):
    LD: Array
    pivots: Array


class LDLFactorExResult(NamedTuple):
    LD: Array
    pivots: Array
    info: Array


_BK_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0   # Bunch-Kaufman's growth bound


def _row(x: Array, idx: Array) -> Array:
    """Row idx (...,) of each matrix of x (..., N, K): (..., K)."""
    ns = _ns()
    i = ns.broadcast_to(ns.expand_dims(ns.expand_dims(idx, axis=-1), axis=-1),
                        x.shape[:-2] + (1, x.shape[-1]))
    return ns.take_along_axis(x, i, axis=-2)[..., 0, :]


def _swap_rows(x: Array, i: Array, j: Array) -> Array:
    """x (..., N, K) with rows i and j (...,) exchanged in each matrix."""
    ns = _ns()
    rows = ns.arange(x.shape[-2], device=x.device)
    ie, je = ns.expand_dims(i, axis=-1), ns.expand_dims(j, axis=-1)
    order = ns.where(rows == ie, je, ns.where(rows == je, ie, rows))
    return ns.take_along_axis(x, ns.broadcast_to(ns.expand_dims(order, axis=-1), x.shape),
                              axis=-2)


def _ldl_core(a: Array):
    """Bunch-Kaufman's diagonal pivoting of symmetric a (..., N, N) (its lower triangle read),
    step by step as LAPACK's sytf2 with uplo "L", each matrix taking its own 1x1 or 2x2 pivots:
    (LD, torch's 1-based int32 pivots (negative on both columns of a 2x2 block), info)."""
    ns = _ns()
    n = a.shape[-1]
    batch, dev = a.shape[:-2], a.device
    rows = ns.arange(n, device=dev)
    col = ns.reshape(rows, (n, 1))
    w = ns.tril(a)
    w = ns.add(w, matrix_transpose(ns.tril(w, k=-1)))   # the symmetric matrix, whole
    info = ns.zeros(batch, dtype=dt.int32, device=dev)
    skip = ns.zeros(batch, dtype=dt.bool, device=dev)   # k is a 2x2 block's second column
    piv, last = [], None
    for k in range(n):
        act = ns.logical_not(skip)
        ck = w[..., :, k]
        akk = ns.abs(w[..., k, k])
        below = ns.where(rows > k, ns.abs(ck), -1.0)
        imax = ns.argmax(below, axis=-1)
        colmax = ns.maximum(ns.max(below, axis=-1), 0.0)
        zero = ns.logical_or(ns.equal(ns.maximum(akk, colmax), 0.0), ns.isnan(akk))
        # the largest off-diagonal magnitude in row imax of the trailing matrix
        r = ns.abs(_row(w, imax))
        rowmax = ns.max(ns.where(ns.logical_and(rows >= k, rows != ns.expand_dims(imax, axis=-1)),
                                 r, 0.0), axis=-1)
        aii = ns.abs(ns.take_along_axis(diagonal(w), ns.expand_dims(imax, axis=-1),
                                        axis=-1)[..., 0])
        keep = ns.logical_or(zero, ns.greater_equal(akk, _BK_ALPHA * colmax))
        keep = ns.logical_or(keep, ns.greater_equal(   # (sytf2's expression, rounded as it)
            akk, _BK_ALPHA * colmax * (colmax / ns.where(rowmax > 0, rowmax, 1.0))))
        swap1 = ns.logical_and(ns.logical_not(keep), ns.greater_equal(aii, _BK_ALPHA * rowmax))
        two = ns.logical_and(act, ns.logical_not(ns.logical_or(keep, swap1)))
        kp = ns.where(keep, k, imax)
        kk = ns.where(two, k + 1, k)
        kp = ns.where(act, kp, kk)   # (a second column: nothing to exchange)
        # exchange rows and columns kk and kp of the trailing matrix only (columns < k hold
        # earlier multipliers, which sytf2 leaves in place)
        order = ns.where(rows == ns.expand_dims(kk, -1), ns.expand_dims(kp, -1),
                         ns.where(rows == ns.expand_dims(kp, -1), ns.expand_dims(kk, -1), rows))
        p = ns.take_along_axis(w, ns.broadcast_to(ns.expand_dims(order, -1), w.shape), axis=-2)
        p = ns.take_along_axis(p, ns.broadcast_to(ns.expand_dims(order, -2), w.shape), axis=-1)
        w = ns.where(ns.logical_and(col >= k, rows >= k), p, w)
        one = ns.logical_and(act, ns.logical_not(ns.logical_or(two, zero)))
        # a 1x1 pivot: x = column k below the diagonal, trailing -= x x^T / akk, column /= akk
        d11 = 1.0 / ns.where(one, w[..., k, k], 1.0)
        x = ns.where(rows > k, w[..., :, k], 0.0)
        x = ns.where(ns.expand_dims(one, -1), x, 0.0)
        w = ns.subtract(w, ns.expand_dims(ns.expand_dims(d11, -1), -1)
                        * x[..., :, None] * x[..., None, :])
        w = ns.where(ns.logical_and(ns.logical_and(col > k, rows == k), ns.expand_dims(
            ns.expand_dims(one, -1), -1)), ns.expand_dims(x * ns.expand_dims(d11, -1), -1), w)
        if k + 1 < n:   # a 2x2 pivot on columns k, k + 1 (sytf2's formulas)
            t2 = ns.expand_dims(two, -1)
            d21 = ns.where(two, w[..., k + 1, k], 1.0)
            e11 = w[..., k + 1, k + 1] / d21
            e22 = w[..., k, k] / d21
            den = ns.where(two, e11 * e22 - 1.0, 1.0)
            s = ns.expand_dims((1.0 / den) / d21, -1)
            x = ns.where(ns.logical_and(rows > k + 1, t2), w[..., :, k], 0.0)
            y = ns.where(ns.logical_and(rows > k + 1, t2), w[..., :, k + 1], 0.0)
            wk = s * (ns.expand_dims(e11, -1) * x - y)
            wk1 = s * (ns.expand_dims(e22, -1) * y - x)
            w = ns.subtract(w, x[..., :, None] * wk[..., None, :]
                            + y[..., :, None] * wk1[..., None, :])
            low2 = ns.logical_and(col > k + 1, ns.expand_dims(t2, -1))
            w = ns.where(ns.logical_and(low2, rows == k), ns.expand_dims(wk, -1), w)
            w = ns.where(ns.logical_and(low2, rows == k + 1), ns.expand_dims(wk1, -1), w)
        info = ns.where(ns.logical_and(ns.logical_and(act, zero), ns.equal(info, 0)), k + 1,
                        info)
        pk = ns.where(two, -(kp + 1), kp + 1)
        pk = pk if last is None else ns.where(skip, last, pk)
        piv.append(pk)
        last, skip = pk, two
    pivots = ns.astype(ns.stack(piv, axis=-1), dt.int32) if n else \
        ns.zeros(batch + (0,), dtype=dt.int32, device=dev)
    return ns.tril(w), pivots, ns.astype(info, dt.int32)


def _ldl_blocks(pivots: Array) -> Array:
    """Whether each column k is the second of a 2x2 block (pivots[k] < 0 with k not itself a
    second column)."""
    ns = _ns()
    second = []
    for k in range(pivots.shape[-1]):
        second.append(ns.zeros(pivots.shape[:-1], dtype=dt.bool, device=pivots.device) if not k
                      else ns.logical_and(ns.less(pivots[..., k - 1], 0),
                                          ns.logical_not(second[-1])))
    return second


def _ldl_solve_core(ld: Array, pivots: Array, b: Array) -> Array:
    """X with A X = B, A = P L D L^T P^T as ldl_factor's (LD, pivots) give it (sytrs, uplo
    "L"); ld (..., N, N), pivots (..., N) and b (..., N, K) of one batch shape."""
    ns = _ns()
    n = ld.shape[-1]
    rows = ns.arange(n, device=ld.device)
    second = _ldl_blocks(pivots)
    pv = ns.astype(pivots, dt.int64)
    kp = ns.where(pv > 0, pv - 1, -pv - 1)

    def bcast(v):   # a per-matrix flag or value (...,) against b's rows (..., 1, 1)
        return ns.expand_dims(ns.expand_dims(v, axis=-1), axis=-1)

    def lcol(j, low):   # column j of L below row low, as (..., N, 1)
        return ns.expand_dims(ns.where(rows > low, ld[..., :, j], 0.0), axis=-1)

    # L D Y = P^T B, column by column
    for k in range(n):
        one = ns.greater(pv[..., k], 0)
        first = ns.logical_and(ns.logical_not(one), ns.logical_not(second[k]))
        kk = ns.where(first, min(k + 1, n - 1), k)
        kpe = ns.where(ns.logical_or(one, first), kp[..., k], kk)
        b = _swap_rows(b, kk, kpe)
        bk = b[..., k:k + 1, :]
        b1 = ns.subtract(b, lcol(k, k) * bk)
        # (each branch's divisors guarded: the branch not taken must not give NaN gradients)
        b1 = ns.where(rows[:, None] == k, bk / bcast(ns.where(one, ld[..., k, k], 1.0)), b1)
        b = ns.where(bcast(one), b1, b)
        if k + 1 < n:
            bk1 = b[..., k + 1:k + 2, :]
            b2 = ns.subtract(b, lcol(k, k + 1) * bk + lcol(k + 1, k + 1) * bk1)
            f = ns.where(first, ld[..., k + 1, k], 1.0)
            e11 = bcast(ld[..., k, k] / f)
            e22 = bcast(ld[..., k + 1, k + 1] / f)
            den = ns.where(bcast(first), e11 * e22 - 1.0, 1.0)
            u, v = bk / bcast(f), bk1 / bcast(f)
            b2 = ns.where(rows[:, None] == k, (e22 * u - v) / den, b2)
            b2 = ns.where(rows[:, None] == k + 1, (e11 * v - u) / den, b2)
            b = ns.where(bcast(first), b2, b)
    # L^T P^T X = Y, from the last column back
    for k in range(n - 1, -1, -1):
        one = ns.greater(pv[..., k], 0)
        # (nothing for a 2x2 block's first column: its second one did both)
        tail = ns.sum(lcol(k, k) * b, axis=-2, keepdims=True)
        b = ns.where(ns.logical_and(rows[:, None] == k, bcast(ns.logical_or(one, second[k]))),
                     ns.subtract(b, tail), b)
        if k > 0:   # the second column of a 2x2 block updates its first too
            tail0 = ns.sum(lcol(k - 1, k) * b, axis=-2, keepdims=True)
            b = ns.where(ns.logical_and(rows[:, None] == k - 1, bcast(second[k])),
                         ns.subtract(b, tail0), b)
        k0 = ns.full(pv.shape[:-1], k, dtype=dt.int64, device=ld.device)
        b = _swap_rows(b, k0, ns.where(ns.logical_or(one, second[k]), kp[..., k], k0))
    return b


def _ldl_input(A: Array, op: str, hermitian) -> Array:
    a = _matrices(A, op, square=True)
    _flag(hermitian, op, "hermitian")
    if a._dtype.kind == "c":
        raise NotImplementedError(f"{op}: complex matrices are not supported (real symmetric "
                                  "ones only)")
    return a


def ldl_factor_ex(A: Array, /, *, hermitian: bool = False, check_errors: bool = False
                  ) -> LDLFactorExResult:
    """torch.linalg.ldl_factor_ex: the compact LDL^T factorization of symmetric A (..., N, N)
    (its lower triangle read) with Bunch-Kaufman pivoting, as LAPACK's sytrf: (LD, pivots,
    info), pivots 1-based int32, negative on both columns of a 2x2 block of D; info: 0, or k
    where D[k-1, k-1] is exactly zero."""
    a = _ldl_input(A, "ldl_factor_ex", hermitian)
    ld, piv, info = _ldl_core(a)
    if _flag(check_errors, "ldl_factor_ex", "check_errors"):
        _raise_info(info, "ldl_factor_ex", _SINGULAR_D)
    return LDLFactorExResult(ld, piv, info)


_SINGULAR_D = "D[{0},{0}] (1-based) of the LDL factorization is zero: the matrix is singular"


def ldl_factor(A: Array, /, *, hermitian: bool = False) -> LDLFactorResult:
    """torch.linalg.ldl_factor: (LD, pivots) of symmetric A, raising LinAlgError where D has
    a zero block (ldl_factor_ex returns it in info instead)."""
    a = _ldl_input(A, "ldl_factor", hermitian)
    ld, piv, info = _ldl_core(a)
    _raise_info(info, "ldl_factor", _SINGULAR_D + "; ldl_factor_ex factors it anyway")
    return LDLFactorResult(ld, piv)


def ldl_solve(LD: Array, pivots: Array, B: Array, /, *, hermitian: bool = False) -> Array:
    """torch.linalg.ldl_solve: X with A X = B for the A that ldl_factor's (LD, pivots) stand
    for; B (..., N, K), batch shapes broadcast."""
    ld = _ldl_input(LD, "ldl_solve", hermitian)
    n = ld.shape[-1]
    piv = _check_pivots(pivots, n, n, ld.shape[:-2], "ldl_solve")
    b = _float(B, "ldl_solve")
    if b.ndim < 2 or b.shape[-2] != n:
        raise LinAlgError(f"ldl_solve: B of shape {b.shape} does not match LD of shape "
                          f"{ld.shape}; expected (..., {n}, K)")
    ns = _ns()
    batch = broadcast_shapes(ld.shape[:-2], b.shape[:-2], op="ldl_solve")
    d = dt.result_type(ld._dtype, b._dtype)
    return _ldl_solve_core(ns.broadcast_to(ns.astype(ld, d), batch + (n, n)),
                           ns.broadcast_to(piv, batch + (n,)),
                           ns.broadcast_to(ns.astype(b, d), batch + b.shape[-2:]))


def vander(x: Array, /, *, N: int | None = None) -> Array:
    """torch.linalg.vander: columns x**0, x**1, ..., x**(N-1) of each vector in x (..., n),
    shape (..., n, N) (NumPy's vander with increasing=True, batched)."""
    check_array(x, "vander")
    if x.ndim < 1:
        raise ValueError("vander: x must have at least one dimension, got a 0-d array")
    if x._dtype.kind == "b":
        raise TypeError("vander: dtype bool is not supported (as torch's); expected a numeric "
                        "array")
    n = x.shape[-1] if N is None else N
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:   # torch's bound
        raise ValueError(f"vander: N must be an int greater than 1, got {n!r}")
    ns = _ns()
    col = ns.expand_dims(x, axis=-1)
    ones = ns.ones(x.shape + (1,), dtype=x._dtype, device=x.device)
    # a running product, as torch's: no pow, so x = 0 has a finite gradient
    return ns.cumulative_prod(ns.concat([ones, ns.broadcast_to(col, x.shape + (n - 1,))],
                                        axis=-1), axis=-1)


# ---- float16 and bfloat16: NumPy's linalg refuses float16 ("array type float16 is unsupported
# in linalg") and torch's both 16-bit floats, for the decompositions and what is made of them;
# so does grilly, on every device, before the bfloat16 dispatch would widen the arguments
_DECOMPOSITIONS = ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "lstsq",
                   "matrix_rank", "pinv", "qr", "slogdet", "solve", "svd", "svdvals", "cond",
                   "tensorinv", "tensorsolve", "solve_triangular", "matrix_exp", "lu", "lu_factor",
                   "lu_factor_ex", "lu_solve", "lu_unpack", "inv_ex", "solve_ex", "cholesky_ex",
                   "householder_product", "geqrf", "cholesky_solve", "cholesky_inverse",
                   "ldl_factor", "ldl_factor_ex", "ldl_solve")
_SVD_ORDS = ("nuc", 2, -2)


def _refuse_16bit(op: str, *arrays) -> None:
    """TypeError naming ``op`` when the float arrays among ``arrays`` promote to float16 or
    bfloat16 (solve(float32, float16) computes in float32, as NumPy's)."""
    ds = [d for d in (getattr(a, "_dtype", None) for a in arrays) if d is not None and d.kind in "fc"]
    if ds:
        d = dt.result_type(*ds)
        if d is dt.float16 or d is dt.bfloat16:
            raise TypeError(f"linalg.{op}: dtype {d.name} is not supported (as in numpy.linalg "
                            "and torch.linalg, decompositions take float32, float64 or complex "
                            "arrays); cast with astype(x, float32) first")


def _refuse_decomposition(op: str):
    return lambda args, kw: _refuse_16bit(op, *args[:2])


def _svd_ord(ord) -> bool:
    return ord in _SVD_ORDS and not isinstance(ord, bool)


def _refuse_matrix_norm(args, kw) -> None:
    if _svd_ord(kw.get("ord")):   # the 2-norms and the nuclear norm are singular values
        _refuse_16bit("matrix_norm", *args[:1])


def _refuse_norm(args, kw) -> None:
    ord = args[1] if len(args) > 1 else kw.get("ord")
    axis = args[2] if len(args) > 2 else kw.get("axis", kw.get("dim"))
    x = args[0] if args else None
    two = (axis is None and getattr(x, "ndim", 0) == 2) or (
        isinstance(axis, (tuple, list)) and len(axis) == 2)
    if _svd_ord(ord) and two and kw.get("dtype") is None:
        _refuse_16bit("norm", x)


def _refuse_matrix_power(args, kw) -> None:
    if len(args) > 1 and isinstance(args[1], int) and args[1] < 0:   # an inverse
        _refuse_16bit("matrix_power", args[0])


for _op in _DECOMPOSITIONS:
    dispatch.REFUSE["linalg." + _op] = _refuse_decomposition(_op)
dispatch.REFUSE.update({"linalg.matrix_norm": _refuse_matrix_norm, "linalg.norm": _refuse_norm,
                        "linalg.matrix_power": _refuse_matrix_power})

dispatch.export(globals(), "linalg.")
