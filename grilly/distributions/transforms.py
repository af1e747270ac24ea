"""Element-wise bijections for TransformedDistribution, as torch.distributions.transforms."""
from __future__ import annotations

import math

from ..array import api as gp
from ..nn import functional as F
from . import constraints
from .utils import clamp_probs, promote_all, sum_rightmost

__all__ = ["AffineTransform", "ComposeTransform", "ExpTransform", "PowerTransform",
           "SigmoidTransform", "SoftplusTransform", "TanhTransform", "Transform"]


class Transform:
    """An invertible map y = f(x) with log |det df/dx|."""

    bijective = True
    domain = constraints.real
    codomain = constraints.real
    sign = 1
    event_dim = 0
    _cache_size = 0

    def __init__(self, cache_size: int = 0) -> None:
        self._set_cache_size(cache_size)

    def _set_cache_size(self, cache_size: int) -> None:
        if cache_size not in (0, 1) or isinstance(cache_size, bool):
            raise ValueError(f"{type(self).__name__}: cache_size must be 0 or 1, got "
                             f"{cache_size!r}")
        self._cache_size = cache_size
        # the last (x, y) pair, matched by identity: log_prob of an rsample's own output
        # inverts to the exact x (a TanhTransform's atanh of a rounded 1.0 would be inf)
        self._cached_x_y = (None, None)

    def with_cache(self, cache_size: int = 1) -> "Transform":
        """This transform with the given cache size (a copy where it differs)."""
        if self._cache_size == cache_size:
            return self
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._set_cache_size(cache_size)
        return new

    def __call__(self, x):
        return self._through_cache(x, 0, self._call)

    def _inv_call(self, y):
        return self._through_cache(y, 1, self._inverse)

    def _through_cache(self, v, side: int, fn):
        """fn(v), or the other half of the cached (x, y) pair when ``v`` is its ``side``
        (0: x, 1: y); with a cache, the pair becomes v's."""
        if not self._cache_size:
            return fn(v)
        pair = self._cached_x_y
        if v is pair[side]:
            return pair[1 - side]
        out = fn(v)
        self._cached_x_y = (v, out) if side == 0 else (out, v)
        return out

    def forward_shape(self, shape) -> tuple:
        """The shape of the output for an input of ``shape``."""
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        """The shape of the input for an output of ``shape``."""
        return tuple(shape)

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
        self._cache_size = 0
        self.event_dim = transform.event_dim
        self.domain, self.codomain = transform.codomain, transform.domain

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self) -> Transform:
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def _inv_call(self, y):
        return self._inv(y)

    def _call(self, x):
        return self._inv._inverse(x)

    def _inverse(self, y):
        return self._inv._call(y)

    def forward_shape(self, shape) -> tuple:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape) -> tuple:
        return self._inv.forward_shape(shape)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

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

    def __init__(self, loc, scale, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.loc, self.scale = loc, scale
        self.event_dim = event_dim

    def forward_shape(self, shape) -> tuple:
        # the parameters broadcast with the input, as torch
        return gp.broadcast_shapes(tuple(shape), *[tuple(getattr(p, "shape", ()))
                                                   for p in (self.loc, self.scale)])

    inverse_shape = forward_shape

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


class SoftplusTransform(Transform):
    """y = log(1 + exp(x))."""

    codomain = constraints.positive

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        # log(exp(y) - 1) = y + log(1 - exp(-y)), finite for large y
        return y + gp.log(-gp.expm1(-y))

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class PowerTransform(Transform):
    """y = x ** exponent on the positive reals."""

    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent, cache_size: int = 0) -> None:
        super().__init__(cache_size)
        self.exponent = exponent

    @property
    def sign(self):
        e = self.exponent
        return gp.sign(e) if isinstance(e, gp.Array) else (1 if e > 0 else -1 if e < 0 else 0)

    def _call(self, x):
        return x ** self.exponent

    def _inverse(self, y):
        return y ** (1.0 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        # |exponent y / x|, with a number exponent taking x's dtype
        e = self.exponent if isinstance(self.exponent, gp.Array) else \
            promote_all(x, self.exponent)[1]
        return gp.log(gp.abs(e * y / x))

    def forward_shape(self, shape) -> tuple:
        return gp.broadcast_shapes(tuple(shape), tuple(getattr(self.exponent, "shape", ())))

    inverse_shape = forward_shape

    def __eq__(self, other) -> bool:
        # an Array exponent by identity (comparing values would read it back)
        if not isinstance(other, PowerTransform):
            return False
        a, b = self.exponent, other.exponent
        return a is b if isinstance(a, gp.Array) or isinstance(b, gp.Array) else a == b

    def __hash__(self) -> int:
        return hash(PowerTransform)


class ComposeTransform(Transform):
    """``parts`` applied in order: y = parts[-1](...parts[0](x))."""

    def __init__(self, parts, cache_size: int = 0) -> None:
        parts = list(parts)
        for p in parts:
            if not isinstance(p, Transform):
                raise TypeError("ComposeTransform: parts must be Transforms, got "
                                f"{type(p).__name__}")
        if cache_size:
            parts = [p.with_cache(cache_size) for p in parts]
        super().__init__(cache_size)
        self.parts = parts
        self.event_dim = max([p.event_dim for p in parts], default=0)
        if parts:
            self.domain, self.codomain = parts[0].domain, parts[-1].codomain

    @property
    def sign(self):
        s = 1
        for p in self.parts:
            s = s * p.sign
        return s

    @property
    def inv(self) -> Transform:
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else \
            ComposeTransform(self.parts, cache_size=cache_size)

    def _call(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def _inverse(self, y):
        for p in reversed(self.parts):
            y = p.inv(y)
        return y

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return gp.zeros_like(x)
        # the intermediates (free where the parts cache them)
        xs = [x]
        for p in self.parts[:-1]:
            xs.append(p(xs[-1]))
        xs.append(y)
        total = 0.0
        for p, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(p.log_abs_det_jacobian(a, b),
                                          self.event_dim - p.event_dim)
        return total

    def forward_shape(self, shape) -> tuple:
        for p in self.parts:
            shape = p.forward_shape(shape)
        return tuple(shape)

    def inverse_shape(self, shape) -> tuple:
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return tuple(shape)

    def __eq__(self, other) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash((ComposeTransform, len(self.parts)))

    def __repr__(self) -> str:
        inner = ",\n".join("    " + repr(p) for p in self.parts)
        return f"ComposeTransform(\n{inner}\n)"
