"""Array API: linear_algebra functions (matmul, matrix_transpose, tensordot, vecdot)."""
from __future__ import annotations

from collections.abc import Sequence

from . import dispatch
from . import dtypes as dt
from .array import Array, view_of
from .core import (as_compute_array, broadcast_shapes, check_array, common_device, kernel,
                   normalize_axis, wrap)

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]


def numeric_pair(op: str, x1, x2):
    """Both operands checked, on one device, promoted to one numeric dtype."""
    check_array(x1, op, "x1")
    check_array(x2, op, "x2")
    dev = common_device(op, x1, x2)
    d = dt.promote(x1._dtype, x2._dtype, op)
    if d.kind == "b":
        raise TypeError(f"{op}: dtype bool is not supported; expected numeric arrays")
    return as_compute_array(x1, d, dev, op), as_compute_array(x2, d, dev, op), d, dev


def reshape_buf(x: Array, shape: tuple):
    return kernel(x._device, "reshape")(x._buf, tuple(shape))


def matmul(x1: Array, x2: Array, /) -> Array:
    """Matrix product of x1 and x2, with batch broadcasting and 1-D promotion."""
    a, b, d, dev = numeric_pair("matmul", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: 0-d arrays are not allowed; use multiply for scalars")
    sa, sb = a.shape, b.shape
    va, vb = len(sa) == 1, len(sb) == 1
    abuf = reshape_buf(a, (1,) + sa) if va else a._buf
    bbuf = reshape_buf(b, sb + (1,)) if vb else b._buf
    ma, mb = tuple(abuf.shape), tuple(bbuf.shape)
    if ma[-1] != mb[-2]:
        raise ValueError(f"matmul: inner dimensions differ: x1 has shape {sa} and x2 has shape "
                         f"{sb} (x1's last axis {ma[-1]} must equal x2's "
                         f"{'only' if vb else 'second-to-last'} axis {mb[-2]})")
    batch = broadcast_shapes(ma[:-2], mb[:-2], op="matmul")
    out = kernel(dev, "matmul")(batch + (ma[-2], mb[-1]), d, abuf, bbuf)
    if va or vb:
        shape = batch + (() if va else (ma[-2],)) + (() if vb else (mb[-1],))
        out = kernel(dev, "reshape")(out, shape)
    return wrap(out, d, dev)


def matrix_transpose(x: Array, /) -> Array:
    """Transpose of the last two axes of x (a view where the backend allows)."""
    check_array(x, "matrix_transpose")
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dimensions, got shape {x.shape}")
    n = x.ndim
    axes = tuple(range(n - 2)) + (n - 1, n - 2)
    return view_of(x, kernel(x._device, "permute")(x._buf, axes), "matrix_transpose")


def _axes_list(ax, ndim: int, name: str) -> tuple:
    if not isinstance(ax, Sequence) or isinstance(ax, str):
        raise TypeError(f"tensordot: {name} axes must be a sequence of ints, got {ax!r}")
    out = tuple(normalize_axis(a, ndim, "tensordot", "axes") for a in ax)
    if len(set(out)) != len(out):
        raise ValueError(f"tensordot: repeated axis in {name} axes {tuple(ax)}")
    return out


def tensordot(x1: Array, x2: Array, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Array:
    """Sum of products of x1 and x2 over the given axes (a permute, reshape and matmul)."""
    a, b, d, dev = numeric_pair("tensordot", x1, x2)
    if isinstance(axes, int) and not isinstance(axes, bool):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} must be between 0 and "
                             f"{min(a.ndim, b.ndim)} for shapes {a.shape} and {b.shape}")
        ax1 = tuple(range(a.ndim - axes, a.ndim))
        ax2 = tuple(range(axes))
    elif isinstance(axes, (tuple, list)) and len(axes) == 2:
        ax1 = _axes_list(axes[0], a.ndim, "x1")
        ax2 = _axes_list(axes[1], b.ndim, "x2")
        if len(ax1) != len(ax2):
            raise ValueError(f"tensordot: x1 and x2 need as many contracted axes, got {axes}")
    else:
        raise TypeError(f"tensordot: axes must be an int or a pair of axis sequences, got {axes!r}")
    for i, j in zip(ax1, ax2):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"tensordot: contracted axes differ in size: x1 axis {i} has "
                             f"{a.shape[i]}, x2 axis {j} has {b.shape[j]}")
    free1 = tuple(i for i in range(a.ndim) if i not in ax1)
    free2 = tuple(i for i in range(b.ndim) if i not in ax2)
    k = 1
    for i in ax1:
        k *= a.shape[i]
    m = 1
    for i in free1:
        m *= a.shape[i]
    n = 1
    for i in free2:
        n *= b.shape[i]
    perm, rs = kernel(dev, "permute"), kernel(dev, "reshape")
    am = rs(perm(a._buf, free1 + ax1), (m, k))
    bm = rs(perm(b._buf, ax2 + free2), (k, n))
    out = kernel(dev, "matmul")((m, n), d, am, bm)
    shape = tuple(a.shape[i] for i in free1) + tuple(b.shape[i] for i in free2)
    return wrap(rs(out, shape), d, dev)


def vecdot(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """Dot product of vectors along axis (x1 conjugated when complex), with broadcasting."""
    a, b, d, dev = numeric_pair("vecdot", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("vecdot: x1 and x2 must have at least one dimension")
    shape = broadcast_shapes(a.shape, b.shape, op="vecdot")
    ax = normalize_axis(axis, len(shape), "vecdot")
    # the contracted axis must match exactly: it is not broadcast
    for x, name in ((a, "x1"), (b, "x2")):
        i = ax - (len(shape) - x.ndim)
        if i < 0 or x.shape[i] != shape[ax]:
            raise ValueError(f"vecdot: {name} of shape {x.shape} has no axis of size {shape[ax]} "
                             f"at axis={axis} of the broadcast shape {shape}")
    if d.kind == "c":
        from .elementwise import conj

        a = conj(a)
    n = len(shape)
    perm = tuple(i for i in range(n) if i != ax) + (ax,)
    bt, pm, rs = kernel(dev, "broadcast_to"), kernel(dev, "permute"), kernel(dev, "reshape")
    k = shape[ax]
    rest = tuple(shape[i] for i in perm[:-1])
    abuf = rs(pm(bt(a._buf, shape), perm), rest + (1, k))
    bbuf = rs(pm(bt(b._buf, shape), perm), rest + (k, 1))
    out = kernel(dev, "matmul")(rest + (1, 1), d, abuf, bbuf)
    return wrap(rs(out, rest), d, dev)

def _vecdot_dim(x1: Array, x2: Array, /, *, axis: int | None = None,
                dim: int | None = None) -> Array:
    """torch.linalg.vecdot's ``dim=`` (gp.linalg.vecdot is this op), NumPy's ``axis``."""
    if dim is not None and axis is not None:
        raise TypeError("vecdot: give axis or dim, not both (the same parameter)")
    return vecdot(x1, x2, axis=-1 if dim is None and axis is None else
                  (dim if dim is not None else axis))


dispatch.NUMPY_FORMS["vecdot"] = (frozenset({"dim"}), _vecdot_dim)
dispatch.export(globals())
