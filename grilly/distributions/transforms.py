"""Element-wise bijections for TransformedDistribution, as torch.distributions.transforms."""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F
from . import constraints
from .utils import clamp_probs, promote_all, sum_rightmost

__all__ = ["AffineTransform", "ExpTransform", "SigmoidTransform", "TanhTransform", "Transform"]


class Transform:
    """An invertible map y = f(x) with log |det df/dx|."""

    bijective = True
    domain = constraints.real
    codomain = constraints.real
    sign = 1
    event_dim = 0

    def __call__(self, x):
        return self._call(x)

    @property
    def inv(self) -> "Transform":
        """The inverse transform."""
        return _InverseTransform(self)

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """log |dy/dx| (element-wise; summed over event axes by the caller)."""
        raise NotImplementedError

    def __eq__(self, other) -> bool:
        # parameterless transforms are equal by class, as torch's (kl_divergence compares them)
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return type(self).__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform: Transform) -> None:
        self._inv = transform
        self.event_dim = transform.event_dim
        self.domain, self.codomain = transform.codomain, transform.domain

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def _call(self, x):
        return self._inv._inverse(x)

    def _inverse(self, y):
        return self._inv._call(y)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def __eq__(self, other) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    def __hash__(self) -> int:
        return hash((_InverseTransform, self._inv))


class ExpTransform(Transform):
    """y = exp(x)."""

    codomain = constraints.positive

    def _call(self, x):
        return gp.exp(x)

    def _inverse(self, y):
        return gp.log(y)

    def log_abs_det_jacobian(self, x, y):
        return x


class AffineTransform(Transform):
    """y = loc + scale * x."""

    def __init__(self, loc, scale, event_dim: int = 0) -> None:
        self.loc, self.scale = loc, scale
        self.event_dim = event_dim

    @property
    def sign(self):
        return gp.sign(self.scale) if isinstance(self.scale, gp.Array) else \
            (1 if self.scale > 0 else -1 if self.scale < 0 else 0)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale if isinstance(self.scale, gp.Array) else promote_all(x, self.scale)[1]
        ladj = gp.broadcast_to(gp.log(gp.abs(scale)), gp.broadcast_shapes(
            tuple(x.shape), tuple(scale.shape)))
        return sum_rightmost(ladj, self.event_dim)

    def __eq__(self, other) -> bool:
        # Array parameters by identity (comparing values would read them back from the device)
        def same(a, b):
            if isinstance(a, gp.Array) or isinstance(b, gp.Array):
                return a is b
            return a == b
        return (isinstance(other, AffineTransform) and self.event_dim == other.event_dim
                and same(self.loc, other.loc) and same(self.scale, other.scale))

    def __hash__(self) -> int:
        return hash((AffineTransform, self.event_dim))

    def __repr__(self) -> str:
        return "AffineTransform()"


class SigmoidTransform(Transform):
    """y = sigmoid(x)."""

    codomain = constraints.unit_interval

    def _call(self, x):
        return clamp_probs(F.sigmoid(x))

    def _inverse(self, y):
        y = clamp_probs(y)
        return gp.log(y) - gp.log1p(-y)

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """y = tanh(x)."""

    codomain = constraints.interval(-1.0, 1.0)

    def _call(self, x):
        return gp.tanh(x)

    def _inverse(self, y):
        return gp.atanh(y)

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) without cancellation, as torch
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))
