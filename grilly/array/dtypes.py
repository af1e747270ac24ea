"""The Array API dtypes, their categories and the type-promotion table."""
from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "DType", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128", "result_type",
    "can_cast", "dtype",
    "isdtype", "finfo", "iinfo",
]

from ..backends.dtypes import (  # noqa: F401  (the table; re-exported)
    ALL, COMPLEX, EXTENSION, INTEGER, REAL_FLOAT, STANDARD, DType, as_dtype, bfloat16, bool,
    complex64, complex128, complex_to_real, float16, float32, float64, from_name, from_numpy,
    int8, int16, int32, int64, real_to_complex, uint8, uint16, uint32, uint64,
)

_builtin_bool = type(True)


def _is_array(x) -> _builtin_bool:
    # an array is what carries a grilly dtype (this module sits below array.py)
    return not isinstance(x, DType) and isinstance(getattr(x, "dtype", None), DType)


def dtype(spec) -> DType:
    """NumPy's ``np.dtype``: the grilly dtype of ``spec`` (a name such as 'float32', a NumPy
    dtype or scalar type, or a grilly dtype)."""
    return as_dtype(spec, "dtype")


# Category predicates, as isdtype names them.
def is_bool(d: DType) -> _builtin_bool:
    return d.kind == "b"


def is_int(d: DType) -> _builtin_bool:
    return d.kind in "iu"


def is_float(d: DType) -> _builtin_bool:
    return d.kind in "fc"


def is_real_float(d: DType) -> _builtin_bool:
    return d.kind == "f"


def is_complex(d: DType) -> _builtin_bool:
    return d.kind == "c"


def is_numeric(d: DType) -> _builtin_bool:
    return d.kind != "b"


def is_real(d: DType) -> _builtin_bool:
    return d.kind in "iuf"


CATEGORIES = {
    "bool": is_bool,
    "signed integer": lambda d: d.kind == "i",
    "unsigned integer": lambda d: d.kind == "u",
    "integral": is_int,
    "real floating": is_real_float,
    "complex floating": is_complex,
    "numeric": is_numeric,
}


def isdtype(dtype: DType, kind) -> _builtin_bool:
    """Whether ``dtype`` is of ``kind`` (a dtype, a category name, or a tuple of them)."""
    if not isinstance(dtype, DType):
        raise TypeError(f"isdtype: expected a grilly dtype for 'dtype', got {dtype!r}")
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, DType):
        return dtype is kind
    if isinstance(kind, str):
        if kind not in CATEGORIES:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(CATEGORIES)}")
        return CATEGORIES[kind](dtype)
    raise TypeError(f"isdtype: 'kind' must be a dtype, a category string or a tuple, got {kind!r}")


# The promotion lattice: each chain lists dtypes a value of the kind can widen to, in order.
_SIGNED = (int8, int16, int32, int64)
_UNSIGNED = (uint8, uint16, uint32, uint64)
_FLOATS = (float16, float32, float64)


def _promote_pair(a: DType, b: DType) -> DType | None:
    if a is b:
        return a
    ka, kb = a.kind, b.kind
    if (ka == "b") != (kb == "b") or (ka in "iu") != (kb in "iu"):
        # mixed kinds (bool with a number, an integer with a float), which the Array API leaves
        # unspecified: NumPy's result (int64 + float32 is float64, int8 + float16 float16), as
        # NumPy and torch both promote; bfloat16 has no such rule (as JAX's is weak-typed)
        if bfloat16 in (a, b):
            return None
        return from_numpy(np.result_type(a.np, b.np))
    if ka == "b" or kb == "b":
        return None
    if ka in "iu" and kb in "iu":
        if ka == kb:
            return a if a.itemsize >= b.itemsize else b
        s, u = (a, b) if ka == "i" else (b, a)
        if s.itemsize > u.itemsize:
            return s
        wide = {1: int16, 2: int32, 4: int64}.get(u.itemsize)
        return wide  # uint64 with a signed type has no promotion
    if ka in "iu" or kb in "iu":
        return None  # mixed integer and floating: not defined by the standard
    if {a, b} == {bfloat16, float16}:
        return float32   # neither holds the other (range vs precision): as JAX and torch
    # both floating (real or complex): the larger precision, complex if either is (bfloat16
    # with a wider float: the wider one)
    prec = max(a.itemsize // (2 if ka == "c" else 1), b.itemsize // (2 if kb == "c" else 1))
    if "c" in (ka, kb):
        return complex64 if prec <= 4 else complex128
    return {2: float16, 4: float32, 8: float64}[prec]


_TABLE = {(a, b): _promote_pair(a, b) for a in ALL + EXTENSION for b in ALL + EXTENSION}


def promote(a: DType, b: DType, op: str = "result_type") -> DType:
    """The promoted dtype of two dtypes, or TypeError naming the op."""
    r = _TABLE[(a, b)]
    if r is None:
        raise TypeError(f"{op}: no type promotion between {a.name} and {b.name}")
    return r


def result_type(*arrays_and_dtypes) -> DType:
    """The dtype that results from applying type promotion to the arguments."""
    dts, scalars = [], []
    for x in arrays_and_dtypes:
        if _is_array(x):
            dts.append(x.dtype)
        elif isinstance(x, DType):
            dts.append(x)
        elif isinstance(x, (_builtin_bool, int, float, complex)):
            scalars.append(x)
        else:
            dts.append(as_dtype(x, "result_type"))
    if not dts:
        if not scalars:
            raise ValueError("result_type: at least one array or dtype is required")
        raise TypeError("result_type: at least one array or dtype is required; got only scalars")
    r = dts[0]
    for d in dts[1:]:
        r = promote(r, d, "result_type")
    for s in scalars:
        r = scalar_result(r, s, "result_type")
    return r


def scalar_result(d: DType, s, op: str) -> DType:
    """The dtype of an operation between an array of dtype ``d`` and Python scalar ``s``."""
    if isinstance(s, _builtin_bool):
        return d
    # a scalar of a higher kind than the array's (the Array API leaves these unspecified):
    # NumPy's results, as a NumPy user writes ``arange(5) * 0.5`` or ``mask * 2``
    if isinstance(s, int):
        return int64 if d.kind == "b" else d
    if isinstance(s, float):
        return float64 if d.kind in "biu" else d
    if isinstance(s, complex):
        if d.kind in "biu":
            return complex128
        if d.kind == "f":
            return complex128 if d is float64 else complex64
        return d
    raise TypeError(f"{op}: expected an array or a Python scalar, got {type(s).__name__}")


def can_cast(from_, to) -> _builtin_bool:
    """Whether ``from_`` can be cast to ``to`` under the promotion rules."""
    if _is_array(from_):
        from_ = from_.dtype
    from_ = as_dtype(from_, "can_cast")
    to = as_dtype(to, "can_cast")
    if from_ is to:
        return True
    if from_.kind == "b":
        return to.kind == "b"
    if to.kind == "b":
        return False
    r = _TABLE[(from_, to)]
    return r is to


def default_float(device=None) -> DType:
    return float64


def default_int(device=None) -> DType:
    return int64


def default_complex(device=None) -> DType:
    return complex128




class finfo_object:
    """Machine limits of a floating dtype (Array API finfo)."""

    def __init__(self, d: DType):
        f = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.bits = int(f.bits)
        self.eps = float(f.eps)
        self.max = float(f.max)
        self.min = float(f.min)
        self.smallest_normal = float(f.smallest_normal)
        self.dtype = complex_to_real(d)

    def __repr__(self) -> str:
        return f"finfo(bits={self.bits}, eps={self.eps}, max={self.max}, dtype={self.dtype})"


class iinfo_object:
    """Machine limits of an integer dtype (Array API iinfo)."""

    def __init__(self, d: DType):
        f = np.iinfo(d.np)
        self.bits, self.max, self.min, self.dtype = int(f.bits), int(f.max), int(f.min), d

    def __repr__(self) -> str:
        return f"iinfo(bits={self.bits}, min={self.min}, max={self.max}, dtype={self.dtype})"


def _dtype_of(type_, op):
    if _is_array(type_):
        return type_.dtype
    return as_dtype(type_, op)


def finfo(type_) -> finfo_object:
    """Machine limits for floating-point data types."""
    d = _dtype_of(type_, "finfo")
    if not is_float(d):
        raise ValueError(f"finfo: expected a floating dtype, got {d.name}")
    return finfo_object(d)


def iinfo(type_) -> iinfo_object:
    """Machine limits for integer data types."""
    d = _dtype_of(type_, "iinfo")
    if not is_int(d):
        raise ValueError(f"iinfo: expected an integer dtype, got {d.name}")
    return iinfo_object(d)
