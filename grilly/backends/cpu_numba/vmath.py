"""Scalar math for the loops of Numba kernels, in forms LLVM vectorizes.

``vexp``: float32 takes the branch-free exp of the elementwise kernels (scalar_ops.exp__float32,
about 1.4 ulp; libm's expf is a scalar call that stops the loop from vectorizing: a row
softmax ran 10x slower than torch's on it); float64 keeps libm's exp.
"""
from __future__ import annotations

import math

from numba import types
from numba.extending import overload

from . import scalar_ops


def vexp(x):
    """exp(x), for use inside njit code."""
    return math.exp(x)


@overload(vexp)
def _vexp_impl(x):
    if x == types.float32:
        return scalar_ops.exp__float32
    return lambda x: math.exp(x)
