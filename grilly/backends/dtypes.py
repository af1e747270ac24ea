"""The dtype table: grilly's data types and their numpy twins.

A leaf module (it imports nothing of grilly) so that backends and the array layer share one
table; promotion, categories and finfo/iinfo live in grilly/array/dtypes.py.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

_builtin_bool = bool


class DType:
    """A grilly data type: a name, a kind and a size; ``np`` is its host (numpy) twin."""

    __slots__ = ("name", "kind", "itemsize", "np")

    def __init__(self, name: str, kind: str, host=None):
        self.name = name
        self.kind = kind  # 'b' bool, 'i' signed, 'u' unsigned, 'f' real float, 'c' complex
        self.np = np.dtype(name if host is None else host)
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"grilly.{self.name}"

    def __eq__(self, other: object) -> _builtin_bool:
        return self is other

    # identity, like __eq__; object's C-level hash keeps dtype-keyed lookups off the Python
    # stack (they happen on every op)
    __hash__ = object.__hash__

    def __reduce__(self):
        return (from_name, (self.name,))


bool = DType("bool", "b")
int8, int16, int32, int64 = (DType(f"int{b}", "i") for b in (8, 16, 32, 64))
uint8, uint16, uint32, uint64 = (DType(f"uint{b}", "u") for b in (8, 16, 32, 64))
float16, float32, float64 = (DType(f"float{b}", "f") for b in (16, 32, 64))
complex64, complex128 = DType("complex64", "c"), DType("complex128", "c")

ALL = (bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
       float16, float32, float64, complex64, complex128)
# float16 is carried for mixed precision but is not an Array API dtype.
STANDARD = tuple(d for d in ALL if d is not float16)
# bfloat16 (8 exponent bits, 8 significand bits; its host twin is ml_dtypes' numpy bfloat16) is
# a grilly extension: backends store it (2-byte elements) and convert it to and from float32
# (astype); the array layer computes every other op on it in float32 (grilly/array/bfloat16.py)
bfloat16 = DType("bfloat16", "f", ml_dtypes.bfloat16)
EXTENSION = (bfloat16,)
_BY_NAME = {d.name: d for d in ALL + EXTENSION}
_BY_NP = {d.np: d for d in ALL + EXTENSION}
# set once a bfloat16 dtype is asked for: until then the dispatcher skips its bfloat16 check
BFLOAT16_SEEN = [False]

INTEGER = (int8, int16, int32, int64, uint8, uint16, uint32, uint64)
REAL_FLOAT = (float16, float32, float64)
COMPLEX = (complex64, complex128)


def _seen(d: DType) -> DType:
    if d is bfloat16:
        BFLOAT16_SEEN[0] = True
    return d


def from_name(name: str) -> DType:
    """The grilly dtype called ``name``."""
    return _seen(_BY_NAME[name])


def from_numpy(npdt) -> DType:
    """The grilly dtype for a numpy dtype; TypeError when there is none."""
    try:
        return _seen(_BY_NP[np.dtype(npdt)])
    except (KeyError, TypeError):
        raise TypeError(f"grilly has no dtype for numpy dtype {npdt!r}") from None


def as_dtype(dtype, op: str = "dtype") -> DType:
    """Normalize a user's dtype argument (grilly dtype, numpy dtype or name) or raise TypeError."""
    if isinstance(dtype, DType):
        return _seen(dtype)
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _seen(_BY_NAME[dtype])
    try:
        return from_numpy(dtype)
    except TypeError:
        raise TypeError(f"{op}: expected a grilly dtype, got {dtype!r}") from None


def complex_to_real(d: DType) -> DType:
    """The real dtype of a complex dtype's parts (others unchanged)."""
    return {complex64: float32, complex128: float64}.get(d, d)


def real_to_complex(d: DType) -> DType:
    """The complex dtype with parts of dtype ``d`` (others unchanged)."""
    return {float32: complex64, float64: complex128, float16: complex64,
            bfloat16: complex64}.get(d, d)
