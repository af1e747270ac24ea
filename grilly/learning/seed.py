"""The seed API: ``grilly.Learning()``, numpy in and numpy out on one device (the default, or
``Learning(device=...)``), over grilly.learning's rules (docs/learning.md)."""
from __future__ import annotations

import numpy as np

from ..array import api as gp
from ..compute import Compute, _real
from .natural import natural_gradient as _natural
from .whitening import whiten as _whiten

__all__ = ["Learning", "VulkanLearning"]


def _pairs(params, fisher_info, anchors, op: str) -> list:
    """[(theta, theta*, F)] from the accepted argument forms (see Learning.ewc_penalty)."""
    def seq(v):
        return list(v) if isinstance(v, (list, tuple)) and v and not np.isscalar(v[0]) \
            and np.ndim(v[0]) > 0 else [v]
    f = seq(fisher_info)
    if anchors is None:
        p = list(params) if isinstance(params, (list, tuple)) and params and \
            isinstance(params[0], (list, tuple)) else [params]
        if len(p) == 2 and len(f) == 1 and all(np.ndim(t) > 0 for t in p):
            p = [tuple(params)]   # one (current, consolidated) pair given as two lists
        if not all(isinstance(t, (list, tuple)) and len(t) == 2 for t in p):
            raise TypeError(f"Learning.{op}: without anchors, params must be a (current, "
                            "consolidated) pair or a list of such pairs")
        cur, anc = [t[0] for t in p], [t[1] for t in p]
    else:
        cur, anc = seq(params), seq(anchors)
    if not len(cur) == len(anc) == len(f):
        raise ValueError(f"Learning.{op}: {len(cur)} parameters, {len(anc)} anchors and "
                         f"{len(f)} Fisher arrays must match")
    return list(zip(cur, anc, f))


class Learning(Compute):
    """The seed's learning-rule object (``grilly.Learning()``): numpy in, numpy out."""

    def ewc_penalty(self, params, fisher_info, weight: float = 1.0, anchors=None) -> float:
        """``weight / 2 * sum F (theta - theta*)^2``. ``params`` is a (current, consolidated)
        pair or a list of pairs, or the current parameters with ``anchors`` given."""
        weight = _real("Learning.ewc_penalty", "weight", weight)
        total = 0.0
        for t, a, f in _pairs(params, fisher_info, anchors, "ewc_penalty"):
            t, a, f = (self._in(v, "ewc_penalty", n) for v, n in ((t, "params"), (a, "anchors"),
                                                                   (f, "fisher_info")))
            if not t.shape == a.shape == f.shape:
                raise ValueError(f"Learning.ewc_penalty: parameter {t.shape}, anchor {a.shape} "
                                 f"and Fisher {f.shape} must have one shape")
            total += float(gp.sum(f * gp.square(t - a)))
        return 0.5 * weight * total

    def nlms_update(self, weights, input, error, step_size: float = 0.5,
                    eps: float = 1e-6) -> np.ndarray:
        """One NLMS step of a linear filter: ``w + mu e x / (eps + x . x)``; ``weights`` (d,)
        with a scalar error, or (k, d) with k errors."""
        step_size = _real("Learning.nlms_update", "step_size", step_size)
        eps = _real("Learning.nlms_update", "eps", eps)
        w = self._in(weights, "nlms_update", "weights")
        x = self._in(input, "nlms_update", "input")
        e = self._in(error, "nlms_update", "error")
        if x.ndim != 1 or w.shape[-1] != x.shape[0]:
            raise ValueError(f"Learning.nlms_update: input must be (d,) with d = weights' last "
                             f"axis, got input {x.shape} and weights {w.shape}")
        if w.ndim == 1:
            if e.size != 1:
                raise ValueError("Learning.nlms_update: a (d,) filter takes one error value")
            step = gp.reshape(e, ()) * x
        elif w.ndim == 2 and e.shape in ((w.shape[0],), (w.shape[0], 1)):
            step = gp.reshape(e, (-1, 1)) * gp.reshape(x, (1, -1))
        else:
            raise ValueError(f"Learning.nlms_update: weights {w.shape} and error {e.shape} do "
                             "not match ((d,) with a scalar, or (k, d) with k errors)")
        return self._out(w + (step_size / (eps + gp.sum(x * x))) * step)

    def whitening(self, data, eps: float = 1e-5) -> np.ndarray:
        """ZCA-whitened rows of ``data`` (n, d): zero mean, identity covariance."""
        eps = _real("Learning.whitening", "eps", eps)
        return self._out(_whiten(self._in(data, "whitening", "data"), eps))

    def natural_gradient(self, gradient, fisher_info, damping: float = 1e-8) -> np.ndarray:
        """``(F + damping I)^-1 g``: F diagonal (shaped like g) or a full (n, n) matrix."""
        damping = _real("Learning.natural_gradient", "damping", damping)
        return self._out(_natural(self._in(gradient, "natural_gradient", "gradient"),
                                  self._in(fisher_info, "natural_gradient", "fisher_info"),
                                  damping))


VulkanLearning = Learning   # the seed README's name for the same object
