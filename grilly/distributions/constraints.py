"""Constraints on parameters and supports, as torch.distributions.constraints.

``check(value)`` returns a boolean Array (namespace ops, no host read) for an Array, and a NumPy
boolean array for host data (Python numbers, lists, NumPy arrays): the distributions validate
host-known parameters with the latter when they are built (see docs/distributions.md).
"""
from __future__ import annotations

import numpy as np

from ..array import api as gp

__all__ = ["Constraint", "boolean", "corr_cholesky", "dependent", "dependent_property", "greater_than",
           "greater_than_eq", "half_open_interval", "host_checkable", "independent",
           "integer_interval", "interval", "is_dependent", "less_than", "lower_cholesky",
           "lower_triangular", "multinomial", "nonnegative", "nonnegative_integer", "one_hot",
           "positive", "positive_definite", "positive_integer", "positive_semidefinite", "real",
           "real_vector", "simplex", "square", "symmetric", "unit_interval"]


def _xp(value):
    """The namespace of ``value``: grilly's for an Array, NumPy's for host data."""
    return gp if isinstance(value, gp.Array) else np


def _host(value):
    return value if isinstance(value, gp.Array) else np.asarray(value)


def _all_last(xp, c, n: int):
    """``c`` reduced with ``all`` over its last ``n`` axes."""
    return xp.all(c, axis=tuple(range(-n, 0))) if n else c


def host_checkable(constraint) -> bool:
    """Whether ``constraint``'s bounds are host numbers (no Array), so that checking host data
    against it reads nothing back from a device."""
    inner = getattr(constraint, "base_constraint", None)
    if inner is not None and not host_checkable(inner):
        return False
    return not any(isinstance(v, gp.Array) for v in vars(constraint).values())


class Constraint:
    """A region a value must lie in; ``check`` tells, per event, whether it does."""

    is_discrete = False
    event_dim = 0

    def check(self, value):
        """A boolean array: whether each event of ``value`` satisfies the constraint."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return type(self).__name__.lstrip("_") + "()"


class _Dependent(Constraint):
    """A placeholder for a support that depends on other variables (not checkable)."""

    def __init__(self, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        self.is_discrete = is_discrete
        self.event_dim = event_dim

    def __call__(self, *, is_discrete: bool = False, event_dim: int = 0) -> "_Dependent":
        return _Dependent(is_discrete=is_discrete, event_dim=event_dim)

    def check(self, value):
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint) -> bool:
    """Whether ``constraint`` is a dependent placeholder."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """A property whose value is a constraint that depends on the distribution's parameters."""

    def __init__(self, fn=None, *, is_discrete: bool = False, event_dim: int = 0) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn):
        return _DependentProperty(fn, is_discrete=self.is_discrete, event_dim=self.event_dim)


class _IndependentConstraint(Constraint):
    """A constraint whose last ``reinterpreted_batch_ndims`` batch axes become event axes."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        self.base_constraint = base_constraint
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    @property
    def is_discrete(self) -> bool:
        return self.base_constraint.is_discrete

    @property
    def event_dim(self) -> int:
        return self.base_constraint.event_dim + self.reinterpreted_batch_ndims

    def check(self, value):
        result = self.base_constraint.check(value)
        return _all_last(_xp(result), result, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value):
        value = _host(value)
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete = True
    event_dim = 1

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return xp.all((value == 0) | (value == 1), axis=-1) & (xp.sum(value, axis=-1) == 1)


class _IntegerInterval(Constraint):
    is_discrete = True

    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return (xp.floor(value) == value) & (self.lower_bound <= value) \
            & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"IntegerInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _IntegerGreaterThan(Constraint):
    is_discrete = True

    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def check(self, value):
        value = _host(value)
        return (_xp(value).floor(value) == value) & (value >= self.lower_bound)

    def __repr__(self) -> str:
        return f"IntegerGreaterThan(lower_bound={self.lower_bound})"


class _Multinomial(Constraint):
    """Non-negative counts (the last axis) summing to at most ``upper_bound``."""

    is_discrete = True
    event_dim = 1

    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return xp.all(value >= 0, axis=-1) & (xp.sum(value, axis=-1) <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Multinomial(upper_bound={self.upper_bound})"


class _Real(Constraint):
    def check(self, value):
        value = _host(value)
        return value == value   # False for NaN only


class _GreaterThan(Constraint):
    def __init__(self, lower_bound) -> None:
        self.lower_bound = lower_bound

    def check(self, value):
        return self.lower_bound < _host(value)

    def __repr__(self) -> str:
        return f"GreaterThan(lower_bound={self.lower_bound})"


class _GreaterThanEq(_GreaterThan):
    def check(self, value):
        return self.lower_bound <= _host(value)

    def __repr__(self) -> str:
        return f"GreaterThanEq(lower_bound={self.lower_bound})"


class _LessThan(Constraint):
    def __init__(self, upper_bound) -> None:
        self.upper_bound = upper_bound

    def check(self, value):
        return _host(value) < self.upper_bound

    def __repr__(self) -> str:
        return f"LessThan(upper_bound={self.upper_bound})"


class _Interval(Constraint):
    def __init__(self, lower_bound, upper_bound) -> None:
        self.lower_bound, self.upper_bound = lower_bound, upper_bound

    def check(self, value):
        value = _host(value)
        return (self.lower_bound <= value) & (value <= self.upper_bound)

    def __repr__(self) -> str:
        return f"Interval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _HalfOpenInterval(_Interval):
    def check(self, value):
        value = _host(value)
        return (self.lower_bound <= value) & (value < self.upper_bound)

    def __repr__(self) -> str:
        return f"HalfOpenInterval(lower_bound={self.lower_bound}, upper_bound={self.upper_bound})"


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return xp.all(value >= 0, axis=-1) & (xp.abs(xp.sum(value, axis=-1) - 1) < 1e-6)


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return xp.full(value.shape[:-2], value.shape[-2] == value.shape[-1], dtype=xp.bool)


class _Symmetric(_Square):
    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        if value.shape[-2] != value.shape[-1]:
            return xp.full(value.shape[:-2], False, dtype=xp.bool)
        sym = xp.abs(value - xp.swapaxes(value, -1, -2)) <= 1e-6 * (1 + xp.abs(value)) \
            if xp is np else gp.abs(value - gp.matrix_transpose(value)) <= 1e-6 * (1 + gp.abs(value))
        return _all_last(xp, sym, 2)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        return _all_last(xp, xp.tril(value) == value, 2)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        tril = _all_last(xp, xp.tril(value) == value, 2)
        diag = value.diagonal(axis1=-2, axis2=-1) if xp is np else gp.linalg.diagonal(value)
        return tril & xp.all(diag > 0, axis=-1)


class _CorrCholesky(_LowerCholesky):
    """The lower Cholesky factor of a correlation matrix: unit-norm rows."""

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        n = value.shape[-1]
        tol = float((np.finfo if xp is np else gp.finfo)(value.dtype).eps) * n * 10
        norm = xp.sqrt(xp.sum(value * value, axis=-1))
        return super().check(value) & xp.all(xp.abs(norm - 1.0) <= tol, axis=-1)


class _PositiveDefinite(_Symmetric):
    strict = True

    def check(self, value):
        value = _host(value)
        xp = _xp(value)
        sym = super().check(value)
        if value.shape[-2] != value.shape[-1]:
            return sym
        ev = xp.linalg.eigvalsh(value)
        return sym & (xp.all(ev > 0, axis=-1) if self.strict else xp.all(ev >= 0, axis=-1))


class _PositiveSemidefinite(_PositiveDefinite):
    strict = False


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
multinomial = _Multinomial
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
square = _Square()
symmetric = _Symmetric()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
positive_definite = _PositiveDefinite()
positive_semidefinite = _PositiveSemidefinite()
