"""Array API: set functions. Unique values come sorted; every NaN is a distinct value."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import as_compute_array, call, check_array, common_device, kernel, wrap

__all__ = ["isin", "unique_all", "unique_counts", "unique_inverse", "unique_values"]

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _unique(x: Array, op: str):
    check_array(x, op)
    dev = x._device
    values, index, inverse, counts = call(dev, "unique", x)
    inverse = kernel(dev, "reshape")(inverse, x.shape)
    i64 = dt.int64
    return (wrap(values, x._dtype, dev), wrap(index, i64, dev), wrap(inverse, i64, dev),
            wrap(counts, i64, dev))


def unique_all(x: Array, /) -> UniqueAllResult:
    """Unique values of x with first indices, inverse indices (shaped like x) and counts."""
    return UniqueAllResult(*_unique(x, "unique_all"))


def unique_counts(x: Array, /) -> UniqueCountsResult:
    """Unique values of x and how often each occurs."""
    v, _, _, c = _unique(x, "unique_counts")
    return UniqueCountsResult(v, c)


def unique_inverse(x: Array, /) -> UniqueInverseResult:
    """Unique values of x and the indices (shaped like x) that rebuild x from them."""
    v, _, inv, _ = _unique(x, "unique_inverse")
    return UniqueInverseResult(v, inv)


def unique_values(x: Array, /) -> Array:
    """The sorted unique values of x."""
    return _unique(x, "unique_values")[0]


def isin(x1, x2, /, *, invert: bool = False) -> Array:
    """Whether each element of x1 occurs in x2 (NaN never does); a list or NumPy array beside
    an Array is converted onto its device, as NumPy's array_like."""
    seq = (list, tuple, np.ndarray)
    if isinstance(x1, seq) and isinstance(x2, Array):
        x1 = dispatch.ns.asarray(np.asarray(x1), device=x2._device)
    elif isinstance(x2, seq) and isinstance(x1, Array):
        x2 = dispatch.ns.asarray(np.asarray(x2), device=x1._device)
    arrays = [a for a in (x1, x2) if isinstance(a, Array)]
    if not arrays:
        raise TypeError("isin: at least one of x1 and x2 must be an array")
    for name, a in (("x1", x1), ("x2", x2)):
        if not isinstance(a, (Array, int)) or isinstance(a, bool) and not isinstance(a, Array):
            raise TypeError(f"isin: {name} must be an array or a Python int, got {type(a).__name__}")
    dev = common_device("isin", *arrays)
    if len(arrays) == 2:
        d = dt.promote(x1._dtype, x2._dtype, "isin")
    else:
        d = dt.scalar_result(arrays[0]._dtype, x2 if arrays[0] is x1 else x1, "isin")
    a = as_compute_array(x1, d, dev, "isin")
    b = as_compute_array(x2, d, dev, "isin")
    return wrap(call(dev, "isin", a, b, bool(invert)), dt.bool, dev)


dispatch.export(globals())
