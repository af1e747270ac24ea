"""torch's default floating dtype (``torch.set_default_dtype``): the one place that holds it.

It governs what torch's default dtype governs: grilly.nn's parameters and buffers, nn.init's
scratch draws, the torch-style float factories (``gp.rand``, ``gp.randn``, ``gp.normal`` of
numbers, ``grilly.utils.zeros``...) and grilly.distributions' parameters given as Python floats.
It does NOT change the Array API creation functions (``gp.zeros``, ``gp.asarray(1.5)``,
``gp.arange``, ``gp.tensor`` of Python floats), which follow NumPy (float64), nor
``__array_namespace_info__().default_dtypes()``, nor grilly.random's NumPy-style Generator
methods (float32 unless ``dtype=``).

The value is process-global, as torch's: one module attribute, read when a module or array is
built (never per op); setting it is one assignment (atomic under the GIL), and a thread that
builds a model while another sets it sees one of the two values, as in torch.
"""
from __future__ import annotations

from .dtypes import DType, bfloat16, dtype, float16, float32, float64, isdtype

__all__ = ["get_default_dtype", "set_default_dtype", "float_or_default"]

_ACCEPTED = (float32, float64, float16, bfloat16)   # torch's: its floating dtypes
_default: DType = float32


def get_default_dtype() -> DType:
    """The default floating dtype (float32 unless ``set_default_dtype`` changed it)."""
    return _default


def set_default_dtype(d) -> None:
    """Set the default floating dtype to float32, float64, float16 or bfloat16 (torch's
    accepted ones); any other dtype is a TypeError."""
    global _default
    try:
        d = d if isinstance(d, DType) else dtype(d)
    except TypeError:
        raise TypeError(f"set_default_dtype: expected a grilly dtype, got {d!r}") from None
    if not isdtype(d, "real floating") or d not in _ACCEPTED:
        raise TypeError(f"set_default_dtype: only floating point types are supported as the "
                        f"default type, got {d}")
    _default = d


def float_or_default(d=None) -> DType:
    """``d`` when given, else the default floating dtype (for a ``dtype=None`` argument)."""
    return _default if d is None else d
