"""The input check every SNN function and module shares (functional, encoders, losses,
plasticity): its own module, so that none of them imports another for it."""
from __future__ import annotations

from ...array import api as gp
from ...array.array import Array


def _check_input(x, op: str, arg: str = "input") -> Array:
    """``x`` itself where it is a real floating grilly Array; else TypeError naming ``op``."""
    if not isinstance(x, gp.Array):
        raise TypeError(f"{op}: expected a grilly Array for {arg!r}, got {type(x).__name__}")
    if not gp.isdtype(x.dtype, "real floating"):
        raise TypeError(f"{op}: {arg} must have a real floating dtype, got {x.dtype}")
    return x
