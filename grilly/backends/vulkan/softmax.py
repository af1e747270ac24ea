"""softmax / log_softmax kernels of the Vulkan backend, ``(buf, axis) -> buf``
(docs/kernels/softmax.md; shader shaders/nn/softmax.comp), and the cross entropy against class
indices with its backward (shaders/nn/xent.comp).

One workgroup per row of the (outer, n, inner) view of the input (reductions.view3: a device
copy only when the axis cannot be expressed as strides). Rows that are contiguous float32 runs
whose length and offset are multiples of 4 take the vec4 path; every other layout reads
strided scalars, so no axis needs a transposing copy. float16 computes in float32.
"""
from __future__ import annotations

from .. import dtypes as _dt
from .kernels import astype, copy, new_buffer
from .reductions import dispatch, view3

_WG = 256
SUB_LANE_ELEMS = 16  # rows of at most this many elements per subgroup lane run one per subgroup
_DTYPES = {"float16", "float32", "float64"}  # float64 exp/log: shaders/math_f64.glsl


def _unsupported(op: str, buf) -> NotImplementedError:
    return NotImplementedError(
        f"{op}: dtype {buf.dtype.name} is not supported on Vulkan device {buf.ctx.phys.name!r} "
        "(GLSL has no float64 exp/log); use float32 or the cpu device")


def _kernel(op: str, log: int):
    def k(buf, axis: int):
        if buf.dtype.name not in _DTYPES:
            raise _unsupported(op, buf)
        out = new_buffer(buf.ctx, buf.shape, buf.dtype)
        if out.size == 0:
            return out
        x = view3(buf, (axis,))
        outer, n, inner = x.shape
        so, sl, si = x.strides
        rows = outer * inner
        vec = 4 if (buf.dtype.name == "float32" and inner == 1 and sl == 1 and n % 4 == 0
                    and (so % 4 == 0 or outer == 1) and x.offset % 4 == 0) else 1
        if rows >= 2**31 or out.size >= 2**31:
            raise ValueError(f"{op}: {out.size} elements exceed the Vulkan backend's 2**31 limit")
        bufs = [out, x, out, x] if vec == 4 else [out, x]
        # short rows: one subgroup per row, so a workgroup's lanes are not mostly idle
        sg = x.ctx.phys.subgroup_size
        sub = int(n <= SUB_LANE_ELEMS * sg and sg <= _WG)
        dispatch(x.ctx, f"softmax_{buf.dtype.name}", (log, 1, vec, sub), bufs, rows,
                 rows * (sg if sub else _WG),
                 (out.offset, x.offset), (outer, n, inner), ([0] * 3, (so, sl, si)))
        return out
    k.__name__ = op
    return k


# ---- cross entropy (shaders/nn/xent.comp) ------------------------------------------------------
def _xent_args(op: str, x, target):
    if x.dtype.name not in ("float32", "float64"):
        raise _unsupported(op, x)
    if x.size >= 2**31:
        raise ValueError(f"{op}: {x.size} elements exceed the Vulkan backend's 2**31 limit")
    xc = x if x.is_contiguous() else copy(x)
    t = target if target.dtype is _dt.int64 else astype(target, _dt.int64)
    t = t if t.is_contiguous() else copy(t)
    return xc, t


def _ignore_pc(ignore_index) -> tuple:
    """pc.shape[2:4]: (whether an ignore_index is given, its value): rows equal to it take no
    part, other rows out of range make the result NaN; without one, every row out of range
    takes no part."""
    return (0, 0) if ignore_index is None else (1, int(ignore_index))


def cross_entropy(x, target, mean, ignore_index=None):
    """0-d: the summed (``mean``: averaged) cross entropy of logits x (N, C) against class
    indices (rows equal to ignore_index take no part, other rows outside [0, C) make it NaN;
    without ignore_index every row outside takes no part); one workgroup, one dispatch."""
    xc, t = _xent_args("cross_entropy", x, target)
    out = new_buffer(x.ctx, (), x.dtype)
    n, c = x.shape
    dispatch(x.ctx, f"xent_{x.dtype.name}", (0, 1, int(bool(mean))), [out, xc, t, xc], n, _WG,
             (out.offset, xc.offset, 2 * t.offset, xc.offset), (n, c, *_ignore_pc(ignore_index)))
    return out


def cross_entropy_backward(x, target, g, mean, ignore_index=None):
    """The gradient (N, C) of ``cross_entropy`` for its 0-d output gradient g: one workgroup
    for the scale (g / count), then one invocation per row (NaN rows where out of range)."""
    xc, t = _xent_args("cross_entropy_backward", x, target)
    n, c = x.shape
    gx = new_buffer(x.ctx, (n, c), x.dtype)
    if gx.size == 0:
        return gx
    scale = new_buffer(x.ctx, (), x.dtype)
    variant = f"xent_{x.dtype.name}"
    shape = (n, c, *_ignore_pc(ignore_index))
    dispatch(x.ctx, variant, (1, 1, int(bool(mean))), [scale, xc, t, g], n, _WG,
             (scale.offset, xc.offset, 2 * t.offset, g.offset), shape)
    dispatch(x.ctx, variant, (2, 1, int(bool(mean))), [gx, xc, t, scale], n, n,
             (gx.offset, xc.offset, 2 * t.offset, scale.offset), shape)
    return gx


KERNELS: dict = {"softmax": _kernel("softmax", 0), "log_softmax": _kernel("log_softmax", 1),
                 "cross_entropy": cross_entropy, "cross_entropy_backward": cross_entropy_backward}
