"""Random arrays for init and dropout, drawn from grilly.random's default generator (so
``_random.seed`` / ``nn.manual_seed`` make a model's initialization reproducible)."""
from __future__ import annotations

from .. import random as _random
from ..array import api as gp
from ..array.defaults import float_or_default

__all__ = ["check_generator", "manual_seed", "uniform", "normal"]


def manual_seed(seed: int) -> None:
    """Seed grilly.random's default generator (used by nn.init and dropout)."""
    _random.seed(int(seed))


def check_generator(generator, op: str) -> None:
    """TypeError naming ``op`` unless ``generator`` is None or a grilly.random.Generator."""
    if generator is not None and not isinstance(generator, _random.Generator):
        raise TypeError(f"{op}: generator must be a grilly.random.Generator, got "
                        f"{type(generator).__name__}")


def _source(generator, op: str):
    """``generator`` (a grilly.random.Generator), or the module's default stream for None."""
    check_generator(generator, op)
    return _random if generator is None else generator


def uniform(shape, low: float = 0.0, high: float = 1.0, *, dtype=None, device=None,
            generator=None, op: str = "uniform"):
    """An Array of ``shape`` with values uniform in [low, high) (from ``generator`` if given;
    bfloat16 ones drawn in float32 and rounded, so ``high`` itself may occur)."""
    dtype = float_or_default(dtype)
    if dtype == gp.bfloat16:
        # grilly.random refuses bfloat16 uniforms (rounding can reach high); an initializer
        # (nn.Linear(..., dtype=bfloat16)) takes the rounded float32 draw, as torch fills one
        u = _source(generator, op).uniform(low, high, tuple(shape), dtype=gp.float32,
                                           device=device)
        return gp.astype(u, dtype)
    return _source(generator, op).uniform(low, high, tuple(shape), dtype=dtype, device=device)


def normal(shape, mean: float = 0.0, std: float = 1.0, *, dtype=None, device=None,
           generator=None, op: str = "normal"):
    """An Array of ``shape`` with normal values (from ``generator`` if given)."""
    return _source(generator, op).normal(mean, std, tuple(shape), dtype=float_or_default(dtype),
                                         device=device)
