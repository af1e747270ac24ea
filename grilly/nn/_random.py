"""Random arrays for init and dropout, drawn from grilly.random's default generator (so
``gp.random.seed`` / ``nn.manual_seed`` make a model's initialization reproducible)."""
from __future__ import annotations

import grilly as gp

__all__ = ["manual_seed", "uniform", "normal"]


def manual_seed(seed: int) -> None:
    """Seed grilly.random's default generator (used by nn.init and dropout)."""
    gp.random.seed(int(seed))


def uniform(shape, low: float = 0.0, high: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with values uniform in [low, high)."""
    return gp.random.uniform(low, high, tuple(shape), dtype=dtype or gp.float32, device=device)


def normal(shape, mean: float = 0.0, std: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with normal values."""
    return gp.random.normal(mean, std, tuple(shape), dtype=dtype or gp.float32, device=device)
