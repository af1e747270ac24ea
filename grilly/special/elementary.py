"""torch.special's elementary functions: logit, xlogy, xlog1py and entr, with torch's
gradients (xlogy's x-gradient is log y also where x == 0, as torch's)."""
from __future__ import annotations

import math

from ..array import api as gp
from ..array import dispatch as _dispatch
from ..array.array import Array
from ..autograd import Function
from .gamma import _floating

__all__ = ["entr", "logit", "xlog1py", "xlogy"]


def _pair(x, y, op: str):
    """x and y as Arrays of one floating dtype on one device (a Python number takes the other's)."""
    if not isinstance(x, Array) and not isinstance(y, Array):
        raise TypeError(f"{op}: expected at least one grilly Array, got {type(x).__name__} "
                        f"and {type(y).__name__}")
    for v, name in ((x, "input"), (y, "other")):
        if not isinstance(v, (Array, int, float)) or isinstance(v, bool):
            raise TypeError(f"{op}: {name} must be a grilly Array or a real number, got "
                            f"{type(v).__name__}")
    like = x if isinstance(x, Array) else y
    like = _floating(like, op)
    x = _floating(x, op) if isinstance(x, Array) else gp.full_like(like, float(x))
    y = _floating(y, op) if isinstance(y, Array) else gp.full_like(like, float(y))
    dt = gp.result_type(x, y)
    return gp.astype(x, dt, copy=False), gp.astype(y, dt, copy=False)


class _XLog(Function):
    """x * log(y) (or log1p(y)), 0 where x == 0 unless y is NaN; d/dx = log(y), d/dy = x / y."""

    @staticmethod
    def forward(ctx, x, y, one_p):
        ctx.save_for_backward(x, y)
        ctx.one_p = one_p
        ly = gp.log1p(y) if one_p else gp.log(y)
        out = gp.where(x == 0, 0.0, x * ly)
        return gp.where(gp.isnan(y), math.nan, out)

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        ly = gp.log1p(y) if ctx.one_p else gp.log(y)
        # torch: the x-gradient is 0 where x == 0 and y is at the log's pole or below
        gx = gp.where((x == 0) & ((y <= -1.0) if ctx.one_p else (y <= 0.0)), 0.0, ly)
        gy = x / (1.0 + y if ctx.one_p else y)
        return g * gx, g * gy, None


@_dispatch.policy("xlogy")   # torch's one kernel: no autocast inside (amp.policy)
def xlogy(x, y) -> Array:
    """x * log(y), 0 where x == 0 (unless y is NaN): torch.special.xlogy, scipy.special.xlogy."""
    x, y = _pair(x, y, "xlogy")
    return _XLog.apply(x, y, False)


@_dispatch.policy("xlog1py")
def xlog1py(x, y) -> Array:
    """x * log1p(y), 0 where x == 0 (unless y is NaN): torch.special.xlog1py."""
    x, y = _pair(x, y, "xlog1py")
    return _XLog.apply(x, y, True)


@_dispatch.policy("logit")
def logit(x: Array, eps: float | None = None) -> Array:
    """log(x / (1 - x)), x clamped to [eps, 1 - eps] first where eps is given (torch.logit;
    scipy.special.logit). The gradient is 0 where the clamp acts, as torch's."""
    x = _floating(x, "logit")
    if eps is not None:
        if not isinstance(eps, (int, float)) or isinstance(eps, bool):
            raise TypeError(f"logit: eps must be a number or None, got {type(eps).__name__}")
        x = gp.clip(x, float(eps), 1.0 - float(eps))
    # log x - log1p(-x): no rounding of 1 - x near 0, none of x / (1 - x) near 1
    return gp.log(x) - gp.log1p(-x)


@_dispatch.policy("entr")
def entr(x: Array) -> Array:
    """-x log(x) elementwise: 0 at 0, -inf below (torch.special.entr, scipy.special.entr)."""
    x = _floating(x, "entr")
    pos = gp.where(x > 0, x, 1.0)
    # zeros_like: two Python scalars in a where would make NumPy's float64 (x's dtype, as torch)
    out = gp.where(x > 0, -x * gp.log(pos), gp.where(x == 0, gp.zeros_like(x), -math.inf))
    return gp.where(gp.isnan(x), math.nan, out)
