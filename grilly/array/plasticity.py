"""One step of a weight-update rule without gradients (STDP, Hebbian, Oja) as one kernel: the
contract's ``plasticity_step`` updates the (P, Q) weight in place and writes the new traces,
so a rule attached to a layer costs one dispatch per step (grilly.nn.snn.plasticity).

With pre spikes/activities x (B, Q) and post y (B, P), batch means <.> over B:
  STDP:  u = u_old dp + x,  v = v_old dm + y      (pre and post traces; a missing old trace is 0)
         LTP = <y (x) u>,   LTD = <v (x) x>
         "stdp":      W + a_plus LTP - a_minus LTD
         "stdp_hard": clip(W + a_plus LTP - a_minus LTD, w_min, w_max)
         "stdp_soft": W + a_plus (w_max - W) LTP - a_minus (W - w_min) LTD
  "hebbian":  W + lr <y (x) x> - weight_decay W
  "oja":      W + lr (<y (x) x> - <y^2> W)
params: STDP (a_plus, a_minus, dp, dm, w_min, w_max); hebbian (lr, weight_decay); oja (lr,).
"""
from __future__ import annotations

from . import core
from . import dispatch as _dispatch
from .array import Array

__all__ = ["plasticity_step"]

RULES = ("stdp", "stdp_hard", "stdp_soft", "hebbian", "oja")
_KERNEL_DTYPES = frozenset({"float32", "float64"})   # what the kernels take (the contract)


def plasticity_step(w: Array, pre: Array, post: Array, pre_trace: Array | None = None,
                    post_trace: Array | None = None, *, rule: str, params: tuple) -> tuple | None:
    """Update ``w`` (P, Q) in place by one step of ``rule`` (see the module doc); returns the new
    (pre_trace, post_trace) for the STDP rules, None otherwise."""
    op = "plasticity_step"
    if rule not in RULES:
        raise ValueError(f"{op}: rule must be one of {RULES}, got {rule!r}")
    core.check_array(w, op, "w")
    if w._dtype.kind != "f" or w.ndim != 2:
        raise TypeError(f"{op}: w must be a real floating (P, Q) array, got {w._dtype.name} "
                        f"of shape {w.shape}")
    P, Q = w.shape
    for a, name, n in ((pre, "pre", Q), (post, "post", P), (pre_trace, "pre_trace", Q),
                       (post_trace, "post_trace", P)):
        if a is None:
            continue
        core.check_array(a, op, name)
        if a._dtype is not w._dtype:
            raise TypeError(f"{op}: {name} has dtype {a._dtype.name}, expected w's {w._dtype.name}")
        if a.ndim != 2 or a.shape[1] != n or a.shape[0] != pre.shape[0]:
            raise ValueError(f"{op}: {name} must have shape (batch, {n}) with pre's batch, got "
                             f"{a.shape}")
        core.common_device(op, w, a)
    if pre.ndim != 2 or pre.shape[0] < 1:
        raise ValueError(f"{op}: pre must be (batch, {Q}) with batch >= 1, got {pre.shape}")
    stdp = rule.startswith("stdp")
    p = tuple(float(v) for v in params) + (0.0,) * (6 - len(params))
    if len(p) != 6:
        raise ValueError(f"{op}: at most 6 params, got {len(params)}")
    dev = w._device
    outs = (None, None)
    if stdp:
        outs = tuple(core.wrap(core.kernel(dev, "empty")(a.shape, w._dtype), w._dtype, dev)
                     for a in (pre, post))
    args = (w, pre, post, pre_trace if stdp else None, post_trace if stdp else None, *outs)
    k = dev.kernels.get(op)
    if k is not None and w._dtype.name in _KERNEL_DTYPES:
        k(*[a._buf if a is not None else None for a in args], rule, p)
    else:
        core.composite(dev, op)(dev, *args, rule, p)
    return outs if stdp else None


def composed(w: Array, pre: Array, post: Array, ptr, qtr, pout, qout, rule: str,
             p: tuple) -> None:
    """plasticity_step from namespace ops, in the order of the module doc's equations."""
    from . import api as gp

    B = float(pre.shape[0])
    ap, am, dp, dm, lo, hi = p
    if rule.startswith("stdp"):
        u = pre if ptr is None else ptr * dp + pre
        v = post if qtr is None else qtr * dm + post
        pout[...] = u
        qout[...] = v
        ltp = gp.matmul(gp.matrix_transpose(post), u) / B
        ltd = gp.matmul(gp.matrix_transpose(v), pre) / B
        if rule == "stdp_soft":
            new = w + ap * (hi - w) * ltp - am * (w - lo) * ltd
        else:
            new = w + ap * ltp - am * ltd
            if rule == "stdp_hard":
                new = gp.clip(new, lo, hi)
    else:
        corr = gp.matmul(gp.matrix_transpose(post), pre) / B
        if rule == "oja":
            y2 = gp.mean(post * post, axis=0)
            new = w + ap * (corr - gp.reshape(y2, (-1, 1)) * w)
        else:
            new = w + ap * corr - am * w
    w[...] = gp.astype(new, w._dtype) if new._dtype is not w._dtype else new


_dispatch.export(globals(), "spiking.")
