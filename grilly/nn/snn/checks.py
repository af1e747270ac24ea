"""The checks SNN functions and modules share (the input of functional, encoders, losses and
plasticity; the step mode of SpikingJelly's layers): their own module, so that none of them
imports another for them."""
from __future__ import annotations

import numbers

from ...array import api as gp
from ...array.array import Array


def _check_input(x, op: str, arg: str = "input") -> Array:
    """``x`` itself where it is a real floating grilly Array; else TypeError naming ``op``."""
    if not isinstance(x, gp.Array):
        raise TypeError(f"{op}: expected a grilly Array for {arg!r}, got {type(x).__name__}")
    if not gp.isdtype(x.dtype, "real floating"):
        raise TypeError(f"{op}: {arg} must have a real floating dtype, got {x.dtype}")
    return x


def _check_mode(step_mode, op: str) -> str:
    """``step_mode`` where it is 's' or 'm' (SpikingJelly's); else ValueError naming ``op``."""
    if step_mode not in ("s", "m"):
        raise ValueError(f"{op}: step_mode must be 's' (one step per call) or 'm' (a (T, B, ...) "
                         f"sequence per call), got {step_mode!r}")
    return step_mode


def _check_kernel(kernel, op: str, arg: str = "kernel_size") -> tuple:
    """A convolution's kernel size, an int or a pair of ints, as a pair of positive ints;
    else TypeError/ValueError naming ``op`` and ``arg``."""
    pair = tuple(kernel) if isinstance(kernel, (tuple, list)) else (kernel, kernel)
    if len(pair) != 2 or any(isinstance(k, bool) or not isinstance(k, numbers.Integral)
                             for k in pair):
        raise TypeError(f"{op}: {arg} must be an int or a pair of ints, got {kernel!r}")
    if any(k < 1 for k in pair):
        raise ValueError(f"{op}: {arg} must be positive, got {kernel!r}")
    return int(pair[0]), int(pair[1])
