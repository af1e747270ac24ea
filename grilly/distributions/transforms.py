"""Element-wise bijections for TransformedDistribution, as torch.distributions.transforms."""
from __future__ import annotations

import math

import numpy as np

from ..array import api as gp
from ..nn import functional as F
from . import constraints
from .utils import clamp_probs, promote_all, sum_rightmost

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform",
           "ExpTransform", "IndependentTransform", "LowerCholeskyTransform", "PowerTransform",
           "ReshapeTransform",
           "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StackTransform",
           "StickBreakingTransform", "TanhTransform", "Transform"]


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
        if event_dim:   # acts on events of event_dim axes (what TransformedDistribution reads)
            self.domain = self.codomain = constraints.independent(constraints.real, event_dim)

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
            self.domain, self.codomain = self._end_constraints(parts)

    @staticmethod
    def _end_constraints(parts) -> tuple:
        """The composition's domain and codomain: the first part's domain and the last one's
        codomain, widened to the event axes the other parts act on (a part that reshapes or
        couples more axes downstream makes them one event)."""
        domain, codomain = parts[0].domain, parts[-1].codomain
        ev = parts[-1].codomain.event_dim
        for p in reversed(parts):
            ev = max(ev + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
        if ev > domain.event_dim:
            domain = constraints.independent(domain, ev - domain.event_dim)
        ev = parts[0].domain.event_dim
        for p in parts:
            ev = max(ev + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim)
        if ev > codomain.event_dim:
            codomain = constraints.independent(codomain, ev - codomain.event_dim)
        return domain, codomain

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
        # each part's log-det summed over the composition's event axes it does not reduce
        ev = self.domain.event_dim
        for p, a, b in zip(self.parts, xs[:-1], xs[1:]):
            total = total + sum_rightmost(p.log_abs_det_jacobian(a, b), ev - p.domain.event_dim)
            ev += p.codomain.event_dim - p.domain.event_dim
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


class AbsTransform(Transform):
    """y = |x| (not bijective: the inverse is the positive root)."""

    bijective = False
    codomain = constraints.positive

    def _call(self, x):
        return gp.abs(x)

    def _inverse(self, y):
        return y


class SoftmaxTransform(Transform):
    """y = softmax(x) over the last axis (not bijective: the inverse is log y)."""

    bijective = False
    event_dim = 1
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        return F.softmax(x, dim=-1)

    def _inverse(self, y):
        return gp.log(y)


def _stick_offsets(k: int, like):
    """log([k, k - 1, ..., 1]) in ``like``'s dtype and device: the shift that maps x = 0 to
    the simplex's centre."""
    return gp.asarray(np.log(np.arange(k, 0, -1, dtype=np.float64)), dtype=like.dtype,
                      device=like.device)


class StickBreakingTransform(Transform):
    """The stick-breaking map from R^K to the simplex of K + 1 entries."""

    event_dim = 1
    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        k = x.shape[-1]
        tiny = float(gp.finfo(x.dtype).smallest_normal)
        z = gp.clip(F.sigmoid(x - _stick_offsets(k, x)), tiny, 1.0 - float(gp.finfo(x.dtype).eps))
        left = gp.cumulative_prod(1.0 - z, axis=-1)     # the stick left after each break
        ones = gp.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        return gp.concat([z, ones], axis=-1) * gp.concat([ones, left], axis=-1)

    def _inverse(self, y):
        crop = y[..., :-1]
        left = gp.maximum(1.0 - gp.cumulative_sum(crop, axis=-1),
                          float(gp.finfo(y.dtype).smallest_normal))
        return gp.log(crop) - gp.log(left) + _stick_offsets(crop.shape[-1], y)

    def log_abs_det_jacobian(self, x, y):
        xs = x - _stick_offsets(x.shape[-1], x)
        return gp.sum(-xs - F.softplus(-xs) + gp.log(y[..., :-1]), axis=-1)

    def forward_shape(self, shape) -> tuple:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform.forward_shape: too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape) -> tuple:
        if len(shape) < 1:
            raise ValueError("StickBreakingTransform.inverse_shape: too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """An unconstrained square matrix to a lower triangular one with a positive diagonal (the
    strict lower triangle kept, the diagonal exponentiated)."""

    bijective = False   # the upper triangle is dropped (as torch)
    event_dim = 2
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    @staticmethod
    def _map_diagonal(x, fn):
        eye = gp.eye(x.shape[-1], dtype=x.dtype, device=x.device)
        return gp.tril(x, k=-1) + eye * fn(gp.linalg.diagonal(x))[..., None, :]

    def _call(self, x):
        return self._map_diagonal(x, gp.exp)

    def _inverse(self, y):
        return self._map_diagonal(y, gp.log)


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` axes to ``out_shape`` (same number of elements)."""

    def __init__(self, in_shape, out_shape, cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = tuple(in_shape), tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError(f"ReshapeTransform: in_shape {self.in_shape} and out_shape "
                             f"{self.out_shape} have different numbers of elements")
        super().__init__(cache_size)
        self.event_dim = len(self.in_shape)
        self.domain = constraints.independent(constraints.real, len(self.in_shape))
        self.codomain = constraints.independent(constraints.real, len(self.out_shape))

    def _call(self, x):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return gp.reshape(x, batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[:y.ndim - len(self.out_shape)])
        return gp.reshape(y, batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[:x.ndim - len(self.in_shape)])
        return gp.zeros(batch, dtype=x.dtype, device=x.device)

    def _split(self, shape, event: tuple, where: str) -> tuple:
        shape = tuple(shape)
        n = len(event)
        if len(shape) < n or shape[len(shape) - n:] != event:
            raise ValueError(f"ReshapeTransform.{where}: shape mismatch: expected {shape} to "
                             f"end with {event}")
        return shape[:len(shape) - n]

    def forward_shape(self, shape) -> tuple:
        return self._split(shape, self.in_shape, "forward_shape") + self.out_shape

    def inverse_shape(self, shape) -> tuple:
        return self._split(shape, self.out_shape, "inverse_shape") + self.in_shape

    def __eq__(self, other) -> bool:
        return (isinstance(other, ReshapeTransform) and self.in_shape == other.in_shape
                and self.out_shape == other.out_shape)

    def __hash__(self) -> int:
        return hash((ReshapeTransform, self.in_shape, self.out_shape))


class IndependentTransform(Transform):
    """``base_transform`` with its last ``reinterpreted_batch_ndims`` batch axes made event
    axes (its log-det summed over them)."""

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int,
                 cache_size: int = 0) -> None:
        if not isinstance(base_transform, Transform):
            raise TypeError("IndependentTransform: base_transform must be a Transform, got "
                            f"{type(base_transform).__name__}")
        n = reinterpreted_batch_ndims
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError("IndependentTransform: reinterpreted_batch_ndims must be a "
                             f"non-negative int, got {n!r}")
        super().__init__(cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = n
        self.event_dim = base_transform.event_dim + n
        self.domain = constraints.independent(base_transform.domain, n)
        self.codomain = constraints.independent(base_transform.codomain, n)

    @property
    def bijective(self) -> bool:
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        return sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y),
                             self.reinterpreted_batch_ndims)

    def forward_shape(self, shape) -> tuple:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape) -> tuple:
        return self.base_transform.inverse_shape(shape)

    def __eq__(self, other) -> bool:
        return (isinstance(other, IndependentTransform)
                and self.reinterpreted_batch_ndims == other.reinterpreted_batch_ndims
                and self.base_transform == other.base_transform)

    def __hash__(self) -> int:
        return hash((IndependentTransform, self.reinterpreted_batch_ndims))

    def __repr__(self) -> str:
        return f"IndependentTransform({self.base_transform!r}, {self.reinterpreted_batch_ndims})"


class _PiecewiseTransform(Transform):
    """Element-wise transforms applied to pieces of an axis (CatTransform, StackTransform)."""

    def __init__(self, tseq, dim: int, cache_size: int) -> None:
        name = type(self).__name__
        tseq = list(tseq)
        for t in tseq:
            if not isinstance(t, Transform):
                raise TypeError(f"{name}: tseq must hold Transforms, got {type(t).__name__}")
            if t.event_dim:
                raise NotImplementedError(f"{name}: transforms with event_dim > 0 ({t!r}) are "
                                          "not supported")
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"{name}: dim must be an int, got {dim!r}")
        super().__init__(cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else tseq
        self.dim = dim
        doms = {repr(t.domain) for t in tseq}
        cods = {repr(t.codomain) for t in tseq}
        # one constraint where the pieces share it; else real (a looser check, never a wrong
        # error)
        self.domain = tseq[0].domain if len(doms) == 1 else constraints.real
        self.codomain = tseq[0].codomain if len(cods) == 1 else constraints.real

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    def _axis(self, x) -> int:
        if not -x.ndim <= self.dim < x.ndim:
            raise IndexError(f"{type(self).__name__}: dim {self.dim} out of range for an input "
                             f"of {x.ndim} dimensions")
        return self.dim % x.ndim

    def _map(self, fn, *arrays):
        """fn(transform, *pieces) per piece, the results joined back along the axis."""
        raise NotImplementedError

    def _call(self, x):
        return self._map(lambda t, a: t(a), x)

    def _inverse(self, y):
        return self._map(lambda t, b: t.inv(b), y)

    def log_abs_det_jacobian(self, x, y):
        return self._map(lambda t, a, b: t.log_abs_det_jacobian(a, b), x, y)


class CatTransform(_PiecewiseTransform):
    """``tseq[k]`` applied to the k-th piece (``lengths[k]`` long, 1 by default) of axis
    ``dim``, the results concatenated."""

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else \
            [int(n) for n in lengths]
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"CatTransform: lengths ({len(self.lengths)}) must match "
                             f"transforms ({len(self.transforms)})")

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else CatTransform(
            self.transforms, self.dim, self.lengths, cache_size)

    def _map(self, fn, *arrays):
        axis = self._axis(arrays[0])
        total = sum(self.lengths)
        if arrays[0].shape[axis] != total:
            raise ValueError(f"CatTransform: the input's size along dim {self.dim} is "
                             f"{arrays[0].shape[axis]}, not the lengths' total {total}")
        out, start = [], 0
        for t, n in zip(self.transforms, self.lengths):
            idx = (slice(None),) * axis + (slice(start, start + n),)
            out.append(fn(t, *[a[idx] for a in arrays]))
            start += n
        return gp.concat(out, axis=axis)


class StackTransform(_PiecewiseTransform):
    """``tseq[k]`` applied to index k of axis ``dim``, the results stacked."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else StackTransform(
            self.transforms, self.dim, cache_size)

    def _map(self, fn, *arrays):
        axis = self._axis(arrays[0])
        if arrays[0].shape[axis] != len(self.transforms):
            raise ValueError(f"StackTransform: the input's size along dim {self.dim} is "
                             f"{arrays[0].shape[axis]}, not the {len(self.transforms)} "
                             "transforms")
        out = []
        for k, t in enumerate(self.transforms):
            idx = (slice(None),) * axis + (k,)
            out.append(fn(t, *[a[idx] for a in arrays]))
        return gp.stack(out, axis=axis)
