"""softmax / log_softmax kernels of the Vulkan backend, ``(buf, axis) -> buf``
(docs/kernels/softmax.md; shader shaders/nn/softmax.comp).

One workgroup per row of the (outer, n, inner) view of the input (reductions.view3: a device
copy only when the axis cannot be expressed as strides). Rows that are contiguous float32 runs
whose length and offset are multiples of 4 take the vec4 path; every other layout reads
strided scalars, so no axis needs a transposing copy. float16 computes in float32.
"""
from __future__ import annotations

from .kernels import new_buffer
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


KERNELS: dict = {"softmax": _kernel("softmax", 0), "log_softmax": _kernel("log_softmax", 1)}
