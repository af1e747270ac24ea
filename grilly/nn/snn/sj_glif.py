"""SpikingJelly's ``neuron.GatedLIFNode`` (GLIF, Yao et al. 2022): a LIF neuron whose leak, input
conductance and reset are gated blends, every gate and constant a learnable logit passed
through a sigmoid. Multi-step only, over exactly T steps."""
from __future__ import annotations

import math
import numbers

from ... import random as _random
from ...array import api as gp
from ...array.defaults import float_or_default

from ...array.array import Array
from ..functional import sigmoid as _sigmoid
from ..parameter import Parameter
from . import base
from .surrogate import Sigmoid, check_surrogate

__all__ = ["GatedLIFNode"]


def _logit(p: float) -> float:
    return -math.log(1.0 / p - 1.0)


def _fraction(v, name: str, op: str) -> float:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not 0.0 < v < 1.0:
        raise ValueError(f"{op}: {name} must be a float in (0, 1), got {v!r}")
    return float(v)


class GatedLIFNode(base.MemoryModule):
    """SpikingJelly's ``neuron.GatedLIFNode(T, inplane=None, init_linear_decay=None,
    init_v_subreset=None, init_tau=0.25, init_v_threshold=0.5, init_conduct=0.5,
    surrogate_function=Sigmoid(), step_mode='m')``. With a, b, g (the gates alpha, beta, gamma)
    and tau, thr, d (linear decay), r (sub-reset), c[t] (conductance) the sigmoids of their
    Parameters (one per channel with ``inplane``, channel axis 1 of (N, C, H, W) steps):

        v[t] = (1 - a (1 - tau)) v[t-1] (1 - g s[t-1]) - (1 - a) d + x[t] (1 - b (1 - c[t]))
               - (1 - g) r s[t-1];   s[t] = surrogate(v[t] - thr)

    s[-1] = 0 at every call; v carries over calls until ``reset()``. alpha, beta, gamma start
    uniform in (-0.1, 0.1) (gp.random), the others at the logits of their init values
    (init_linear_decay defaults to init_v_threshold / (2 T), init_v_subreset to
    init_v_threshold); SpikingJelly's keys."""

    def __init__(self, T: int, inplane: int | None = None,  # noqa: N803
                 init_linear_decay: float | None = None, init_v_subreset: float | None = None,
                 init_tau: float = 0.25, init_v_threshold: float = 0.5, init_conduct: float = 0.5,
                 surrogate_function=None, step_mode: str = "m", dtype=None) -> None:
        op = "GatedLIFNode"
        if isinstance(T, bool) or not isinstance(T, numbers.Integral) or T < 1:
            raise ValueError(f"{op}: T must be an int >= 1, got {T!r}")
        if inplane is not None and (isinstance(inplane, bool)
                                    or not isinstance(inplane, numbers.Integral) or inplane < 1):
            raise ValueError(f"{op}: inplane must be None or an int >= 1, got {inplane!r}")
        if step_mode != "m":
            raise ValueError(f"{op}: step_mode must be 'm' (a T-step sequence), got {step_mode!r}")
        thr = _fraction(init_v_threshold, "init_v_threshold", op)
        inits = {
            "tau": _fraction(init_tau, "init_tau", op),
            "v_threshold": thr,
            "linear_decay": _fraction(thr / (2 * T) if init_linear_decay is None
                                      else init_linear_decay, "init_linear_decay", op),
            "v_subreset": _fraction(thr if init_v_subreset is None else init_v_subreset,
                                    "init_v_subreset", op),
        }
        conduct = _fraction(init_conduct, "init_conduct", op)
        super().__init__()
        self.step_mode = "m"
        self.surrogate_function = (Sigmoid(4.0) if surrogate_function is None
                                   else check_surrogate(surrogate_function, op))
        self.T, self.inplane = int(T), inplane
        self.register_memory("v", 0.0)
        self.register_memory("u", 0.0)
        dtype = float_or_default(dtype)
        shape = () if inplane is None else (int(inplane),)
        for name in ("alpha", "beta", "gamma"):
            setattr(self, name, Parameter(gp.astype(
                _random.uniform(-0.1, 0.1, shape), dtype)))
        for name, v in inits.items():
            setattr(self, name, Parameter(gp.full(shape, _logit(v), dtype=dtype)))
        self.conduct = Parameter(gp.full((self.T, *shape), _logit(conduct), dtype=dtype))

    def supported_step_mode(self) -> tuple:
        """('m',): GLIF runs whole T-step sequences."""
        return ("m",)

    def _gate(self, p: Array) -> Array:
        g = _sigmoid(p)
        return g if self.inplane is None else gp.reshape(g, (1, -1, 1, 1))

    def multi_step_forward(self, x_seq: Array) -> Array:
        """The (T, ...) spikes of a T-step sequence ((T, N, C, H, W) with ``inplane``)."""
        op = "GatedLIFNode"
        if not isinstance(x_seq, Array) or x_seq.ndim < 2 or x_seq.shape[0] != self.T:
            raise ValueError(f"{op}: x_seq must be an Array (T, N, ...) with T = {self.T}, got "
                             f"{getattr(x_seq, 'shape', type(x_seq).__name__)}")
        if self.inplane is not None and (x_seq.ndim != 5 or x_seq.shape[2] != self.inplane):
            raise ValueError(f"{op}: with inplane={self.inplane} x_seq must be (T, N, "
                             f"{self.inplane}, H, W), got {x_seq.shape}")
        a, b, g = self._gate(self.alpha), self._gate(self.beta), self._gate(self.gamma)
        tau, thr = self._gate(self.tau), self._gate(self.v_threshold)
        d, r = self._gate(self.linear_decay), self._gate(self.v_subreset)
        leak = 1.0 - a * (1.0 - tau)
        v = self.v
        if not isinstance(v, Array):
            v = gp.full_like(x_seq[0], float(v))
        spike = gp.zeros_like(x_seq[0])
        out = []
        for t, x in enumerate(gp.unstack(x_seq, axis=0)):
            c = self._gate(self.conduct[t])
            v_new = (leak * v - (1.0 - a) * d + x * (1.0 - b * (1.0 - c))
                     - leak * v * g * spike - (1.0 - g) * r * spike)
            spike = self.surrogate_function(v_new - thr)
            v = v_new
            out.append(spike)
        self.v, self.u = v, v
        return gp.stack(out, axis=0)

    def extra_repr(self) -> str:
        return f"T={self.T}, inplane={self.inplane}, step_mode='m'"
