"""Random arrays for init and dropout, drawn from grilly.random's default generator (so
``_random.seed`` / ``nn.manual_seed`` make a model's initialization reproducible)."""
from __future__ import annotations

from .. import random as _random
from ..array import api as gp

__all__ = ["manual_seed", "uniform", "normal"]


def manual_seed(seed: int) -> None:
    """Seed grilly.random's default generator (used by nn.init and dropout)."""
    _random.seed(int(seed))


def uniform(shape, low: float = 0.0, high: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with values uniform in [low, high)."""
    return _random.uniform(low, high, tuple(shape), dtype=dtype or gp.float32, device=device)


def normal(shape, mean: float = 0.0, std: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with normal values."""
    return _random.normal(mean, std, tuple(shape), dtype=dtype or gp.float32, device=device)
