"""The ``Distribution`` base class, as torch.distributions.Distribution."""
from __future__ import annotations

import functools
import math
import operator

import numpy as np

from ..array import api as gp
from ..autograd import no_grad
from . import constraints
from .transforms import Transform
from .utils import as_param

__all__ = ["Distribution"]


def _shape_tuple(shape, where: str) -> tuple:
    # operator.index, not int(): a float size (2.5) is a TypeError, as torch.Size, never
    # truncated
    try:
        if isinstance(shape, int) or hasattr(shape, "__index__"):
            return (operator.index(shape),)
        return tuple(operator.index(s) for s in shape)
    except TypeError:
        raise TypeError(f"{where}: expected a shape (a tuple of ints), got {shape!r}") from None


def _arrays(obj):
    """The Arrays a distribution (or transform) holds, its nested ones' included."""
    for v in obj.__dict__.values():
        for x in (v if isinstance(v, list) else (v,)):
            if isinstance(x, gp.Array):
                yield x
            elif isinstance(x, (Distribution, Transform)):
                yield from _arrays(x)


def _moved(obj, device):
    """A copy of ``obj`` (a distribution, transform, list of them or Array) on ``device``."""
    if isinstance(obj, gp.Array):
        return obj.to_device(device)
    if isinstance(obj, list):
        return [_moved(v, device) for v in obj]
    if not isinstance(obj, (Distribution, Transform)):
        return obj
    new = object.__new__(type(obj))
    new.__dict__.update({k: _moved(v, device) for k, v in obj.__dict__.items()
                         if k != "_copies"})
    if "_cached_x_y" in new.__dict__:   # a transform's cache holds the old device's Arrays
        new._cached_x_y = (None, None)
    return new


def _follows_value(fn):
    """``fn(self, value)`` run on a copy of a placeless distribution (see ``_placed_like``) on
    the device of an Array ``value``."""
    @functools.wraps(fn)
    def method(self, value, *args, **kwargs):
        if isinstance(value, gp.Array):
            self = self._placed_like(value)
        return fn(self, value, *args, **kwargs)
    method._follows_value = True
    return method


class Distribution:
    """The base of every distribution: shapes, sampling, log_prob and validation."""

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True
    # names of the Array attributes whose leading axes are the batch axes (what expand broadcasts)
    _batch_params: tuple = ()
    # whether log_prob takes integer values as they are (category indices) rather than in the
    # parameters' floating dtype
    _integer_values = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        for name in ("log_prob", "cdf", "icdf"):
            fn = cls.__dict__.get(name)
            if fn is not None and not getattr(fn, "_follows_value", False):
                setattr(cls, name, _follows_value(fn))

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for distributions built without ``validate_args``."""
        if value not in (True, False):
            raise ValueError("Distribution.set_default_validate_args: value must be a bool")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = _shape_tuple(batch_shape, type(self).__name__)
        self._event_shape = _shape_tuple(event_shape, type(self).__name__)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_host_params()

    # ---- validation ---------------------------------------------------------------------------
    def _note_host(self, **params) -> None:
        """Keep the parameters given as host data (numbers, lists, NumPy arrays): validation
        checks their values; an Array's values are on its device and are not read back."""
        host = self.__dict__.setdefault("_host_params", {})
        for k, v in params.items():
            if v is not None and not isinstance(v, gp.Array):
                host[k] = v
            elif isinstance(v, gp.Array):
                self.__dict__["_placed"] = True

    def _placeless(self) -> bool:
        """Whether it was built from numbers alone: its parameters given as host data (noted
        by _note_host), or nested distributions that were, and transforms without Arrays."""
        if self.__dict__.get("_placed", False):
            return False
        # a subclass that never noted its parameters (one of a user's) is not moved
        known = bool(self.__dict__.get("_host_params"))
        for v in self.__dict__.values():
            for x in (v if isinstance(v, list) else (v,)):
                if isinstance(x, Distribution):
                    if not x._placeless():
                        return False
                    known = True
                if isinstance(x, Transform) and next(_arrays(x), None) is not None:
                    return False
        return known

    def _placed_like(self, x) -> "Distribution":
        """This distribution, or, where it was built from numbers alone (``Normal(0.0, 1.0)``)
        and ``x`` is an Array on another device, a copy with its parameters on x's device: as
        torch's CPU scalars combine with a CUDA tensor, so ``Normal(0., 1.).log_prob(z)`` and
        ``kl_divergence(q, Normal(0., 1.))`` work for z and q on any device."""
        if not isinstance(x, gp.Array):
            return self
        a = next(_arrays(self), None)
        if a is None or a.device == x.device or not self._placeless():
            return self
        # one copy per device (a prior built once is used every step: one upload, not one a
        # step)
        copies = self.__dict__.setdefault("_copies", {})
        c = copies.get(x.device)
        if c is None:
            c = copies[x.device] = _moved(self, x.device)
        return c

    def _check_host_params_early(self, validate_args) -> None:
        """Check the host parameters noted so far before building nested distributions (a
        Weibull's bad scale is reported as Weibull's, not as its base's)."""
        if self._validate_args if validate_args is None else validate_args:
            self._check_host_params()

    def _check_host_params(self) -> None:
        host = self.__dict__.get("_host_params", {})
        for name, constraint in self.arg_constraints.items():
            if name not in host or constraints.is_dependent(constraint):
                continue
            value = np.asarray(host[name], dtype=np.float64)
            ok = constraint.check(value)
            if not np.all(ok):
                raise ValueError(
                    f"{type(self).__name__}: expected parameter {name} (value of shape "
                    f"{value.shape}) to satisfy the constraint {constraint!r}, but found invalid "
                    f"values:\n{value}")

    def _validate_sample(self, value, op: str = "log_prob"):
        """``value`` as an Array, its shape checked against batch_shape + event_shape (and, for
        host data, its values against the support); an integer or bool Array takes the
        parameters' dtype (torch's log_prob of an integer tensor keeps float32). ``op`` names
        the method in errors."""
        name = f"{type(self).__name__}.{op}"
        if isinstance(value, gp.Array):
            like = self._like()
            if like is not None and not self._integer_values and not gp.isdtype(
                    value.dtype, ("real floating", "complex floating")):
                value = gp.astype(value, like.dtype)
        else:
            host = np.asarray(value, dtype=np.float64)
            like = self._like()
            value = as_param(host, like)
            support = self._host_support() if self._validate_args else None
            if support is not None and not np.all(support.check(host)):
                raise ValueError(f"{name}: expected value to be within the support "
                                 f"({support!r}) of the distribution, but found invalid "
                                 f"values:\n{host}")
        if not self._validate_args:
            return value
        shape, ev = tuple(value.shape), self._event_shape
        start = len(shape) - len(ev)
        if start < 0 or shape[start:] != ev:
            raise ValueError(f"{name}: the right-most size of value must match "
                             f"event_shape: {shape} vs {ev}")
        expected = self._batch_shape + ev
        for i, j in zip(reversed(shape), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"{name}: value is not broadcastable with "
                                 f"batch_shape+event_shape: {shape} vs {expected}")
        return value

    def _host_support(self):
        """The support, where host data can be checked against it without a device read: the
        class's, or a dependent one's value (a Categorical's integer_interval(0, K - 1), a
        TransformedDistribution's codomain) whose bounds are numbers, not Arrays."""
        support = getattr(type(self), "support", None)
        if constraints.is_dependent(support):
            support = self.support
        if not isinstance(support, constraints.Constraint) or constraints.is_dependent(support):
            return None
        return support if constraints.host_checkable(support) else None

    def _like(self):
        """An Array parameter (its dtype and device are those of values and draws)."""
        for k in self.arg_constraints:
            v = self.__dict__.get(k)
            if isinstance(v, gp.Array):
                return v
        return None

    # ---- shapes ------------------------------------------------------------------------------
    @property
    def batch_shape(self) -> tuple:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> tuple:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    def _extended_shape(self, sample_shape=()) -> tuple:
        return _shape_tuple(sample_shape, "sample_shape") + self._batch_shape + self._event_shape

    def expand(self, batch_shape, _instance=None) -> "Distribution":
        """A new distribution with its batch axes broadcast to ``batch_shape``."""
        batch_shape = _shape_tuple(batch_shape, f"{type(self).__name__}.expand")
        new = object.__new__(type(self)) if _instance is None else _instance
        new.__dict__.update(self.__dict__)
        nb = len(self._batch_shape)
        for name in self._batch_params:
            v = self.__dict__.get(name)
            if isinstance(v, gp.Array):
                new.__dict__[name] = gp.broadcast_to(v, batch_shape + tuple(v.shape[nb:]))
        new._batch_shape = batch_shape
        return new

    # ---- properties --------------------------------------------------------------------------
    arg_constraints: dict = {}
    support = None

    @property
    def mean(self):
        """The mean."""
        raise NotImplementedError(f"{type(self).__name__} has no mean")

    @property
    def mode(self):
        """The mode."""
        raise NotImplementedError(f"{type(self).__name__} has no mode")

    @property
    def variance(self):
        """The variance."""
        raise NotImplementedError(f"{type(self).__name__} has no variance")

    @property
    def stddev(self):
        """The standard deviation."""
        return gp.sqrt(self.variance)

    # ---- sampling and densities --------------------------------------------------------------
    def sample(self, sample_shape=()):
        """Draws of shape sample_shape + batch_shape + event_shape, without gradients."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Reparameterized draws: gradients flow to the parameters."""
        raise NotImplementedError(f"{type(self).__name__}.rsample: not reparameterizable")

    def sample_n(self, n: int):
        """``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value):
        """The log density (or mass) of ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.log_prob is not implemented")

    def cdf(self, value):
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.cdf is not implemented")

    def icdf(self, value):
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__}.icdf is not implemented")

    def entropy(self):
        """The entropy, per batch element."""
        raise NotImplementedError(f"{type(self).__name__}.entropy is not implemented")

    def perplexity(self):
        """exp(entropy)."""
        return gp.exp(self.entropy())

    def enumerate_support(self, expand: bool = True):
        """Every value of a discrete distribution's support, along a new leading axis."""
        raise NotImplementedError(f"{type(self).__name__}.enumerate_support is not implemented")

    def __repr__(self) -> str:
        parts = []
        for p in self.arg_constraints:
            v = self.__dict__.get(p)
            if not isinstance(v, gp.Array):
                continue
            # a one-element parameter is shown by value (a read, in repr only), as torch does
            shown = np.asarray(v).reshape(()).item() if math.prod(v.shape) == 1 \
                else tuple(v.shape)
            parts.append(f"{p}: {shown}")
        return f"{type(self).__name__}({', '.join(parts)})"
