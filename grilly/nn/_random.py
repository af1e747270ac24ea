"""Random arrays for init and dropout. One seedable stream for grilly.nn (``manual_seed``).

TEMPORARY: draws on the host with Python's ``random`` until grilly.random lands; swap the two
primitives below for ``gp.random.Generator`` calls (the rest of nn only uses these)."""
from __future__ import annotations

import random as _pyrandom

import grilly as gp

__all__ = ["manual_seed", "uniform", "normal"]

_state = {"rng": _pyrandom.Random(0)}


def manual_seed(seed: int) -> None:
    """Seed the stream used by nn.init and dropout."""
    _state["rng"] = _pyrandom.Random(int(seed))


def _count(shape) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def uniform(shape, low: float = 0.0, high: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with values uniform in [low, high)."""
    r = _state["rng"]
    flat = [low + (high - low) * r.random() for _ in range(_count(shape))]
    return gp.reshape(gp.asarray(flat, dtype=dtype or gp.float32, device=device), tuple(shape))


def normal(shape, mean: float = 0.0, std: float = 1.0, *, dtype=None, device=None):
    """An Array of ``shape`` with normal values."""
    r = _state["rng"]
    flat = [r.gauss(mean, std) for _ in range(_count(shape))]
    return gp.reshape(gp.asarray(flat, dtype=dtype or gp.float32, device=device), tuple(shape))
