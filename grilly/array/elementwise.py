"""Elementwise functions and Array operators, declared once in a table.

Each entry names the op, which input dtypes it accepts, the dtype it computes in, and the dtype
it returns. Every op dispatches to the backend kernel of the same name, called as
``kernel(out_shape, out_dtype, *buffers)`` with inputs already promoted to one dtype, or, where
the device has no such kernel, to its default composition (grilly/array/composites.py).
"""
from __future__ import annotations

import sys

from . import dispatch
from .numpy_args import no_out
from . import dtypes as dt
from .array import Array
from .core import (as_compute_array, broadcast_shapes, common_device, composite, full_buf,
                   int_range, kernel, scalar_operand)

_ALL = frozenset(dt.ALL)
_NUMERIC = frozenset(d for d in dt.ALL if d.kind != "b")
_FLOAT = frozenset(d for d in dt.ALL if d.kind in "fc")
_REAL_FLOAT = frozenset(dt.REAL_FLOAT)
_REAL = frozenset(d for d in dt.ALL if d.kind in "iuf")
_INT = frozenset(dt.INTEGER)
_INT_BOOL = _INT | {dt.bool}
_BOOL = frozenset({dt.bool})


def _same(d):
    return d


def _to_bool(d):
    return dt.bool


def _to_float(d):
    """Integers compute in the default float (as NumPy and PyTorch do); floats stay."""
    return dt.float64 if d.kind in "iu" else d


# name: (accepted dtypes, compute dtype from promoted dtype, result dtype from compute dtype)
UNARY = {
    "abs": (_NUMERIC, _same, dt.complex_to_real),
    "acos": (_NUMERIC, _to_float, _same), "acosh": (_NUMERIC, _to_float, _same),
    "asin": (_NUMERIC, _to_float, _same), "asinh": (_NUMERIC, _to_float, _same),
    "atan": (_NUMERIC, _to_float, _same), "atanh": (_NUMERIC, _to_float, _same),
    "bitwise_invert": (_INT_BOOL, _same, _same),
    "ceil": (_REAL, _same, _same), "floor": (_REAL, _same, _same),
    "trunc": (_REAL, _same, _same), "round": (_NUMERIC, _same, _same),
    "conj": (_NUMERIC, _same, _same),
    "real": (_NUMERIC, _same, dt.complex_to_real), "imag": (_NUMERIC, _same, dt.complex_to_real),
    "cos": (_NUMERIC, _to_float, _same), "cosh": (_NUMERIC, _to_float, _same),
    "sin": (_NUMERIC, _to_float, _same), "sinh": (_NUMERIC, _to_float, _same),
    "tan": (_NUMERIC, _to_float, _same), "tanh": (_NUMERIC, _to_float, _same),
    "exp": (_NUMERIC, _to_float, _same), "expm1": (_NUMERIC, _to_float, _same),
    "log": (_NUMERIC, _to_float, _same), "log1p": (_NUMERIC, _to_float, _same),
    "log2": (_NUMERIC, _to_float, _same), "log10": (_NUMERIC, _to_float, _same),
    "sqrt": (_NUMERIC, _to_float, _same), "reciprocal": (_NUMERIC, _to_float, _same),
    "isfinite": (_ALL, _same, _to_bool), "isinf": (_ALL, _same, _to_bool),
    "isnan": (_ALL, _same, _to_bool),
    "logical_not": (_BOOL, _same, _same),
    "negative": (_NUMERIC, _same, _same), "positive": (_NUMERIC, _same, _same),
    "sign": (_NUMERIC, _same, _same), "signbit": (_REAL_FLOAT, _same, _to_bool),
    "square": (_NUMERIC, _same, _same),
}

BINARY = {
    "add": (_NUMERIC, _same, _same), "subtract": (_NUMERIC, _same, _same),
    "multiply": (_NUMERIC, _same, _same), "divide": (_NUMERIC, _to_float, _same),
    "floor_divide": (_REAL, _same, _same), "remainder": (_REAL, _same, _same),
    "pow": (_NUMERIC, _same, _same),
    "atan2": (_REAL_FLOAT, _same, _same), "copysign": (_REAL_FLOAT, _same, _same),
    "hypot": (_REAL_FLOAT, _same, _same), "logaddexp": (_REAL_FLOAT, _same, _same),
    "nextafter": (_REAL_FLOAT, _same, _same),
    "maximum": (_REAL, _same, _same), "minimum": (_REAL, _same, _same),
    "bitwise_and": (_INT_BOOL, _same, _same), "bitwise_or": (_INT_BOOL, _same, _same),
    "bitwise_xor": (_INT_BOOL, _same, _same),
    "bitwise_left_shift": (_INT, _same, _same), "bitwise_right_shift": (_INT, _same, _same),
    "logical_and": (_BOOL, _same, _same), "logical_or": (_BOOL, _same, _same),
    "logical_xor": (_BOOL, _same, _same),
    "equal": (_ALL, _same, _to_bool), "not_equal": (_ALL, _same, _to_bool),
    "less": (_REAL, _same, _to_bool), "less_equal": (_REAL, _same, _to_bool),
    "greater": (_REAL, _same, _to_bool), "greater_equal": (_REAL, _same, _to_bool),
}


def _with_bfloat16() -> None:
    """bfloat16 accepted by the ops a backend may run on it natively (bfloat16.ELEMENTWISE):
    a bfloat16 call reaches these functions only then (the dispatcher runs the others in
    float32)."""
    from .bfloat16 import ELEMENTWISE

    for table in (UNARY, BINARY):
        for name, (allowed, compute, result) in table.items():
            if name in ELEMENTWISE:
                table[name] = (allowed | {dt.bfloat16}, compute, result)


_with_bfloat16()


def _bad_dtype(op: str, d, allowed) -> TypeError:
    kinds = sorted({x.kind for x in allowed})
    names = {"b": "bool", "i": "signed integer", "u": "unsigned integer", "f": "real floating",
             "c": "complex floating"}
    return TypeError(f"{op}: dtype {d.name} is not supported; expected "
                     f"{', '.join(names[k] for k in kinds)}")


def unary(op: str, x) -> Array:
    """Apply the unary elementwise op ``op`` to array ``x``."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array, got {type(x).__name__}")
    allowed, compute, result = UNARY[op]
    d = x._dtype
    if d not in allowed:
        raise _bad_dtype(op, d, allowed)
    cd = compute(d)
    if cd is not d:
        x = as_compute_array(x, cd, x._device, op)
    rd = result(cd)
    dev = x._device
    k = dev.kernels.get(op)
    if k is None:
        return composite(dev, op)(dev, x._buf.shape, rd, x)
    return Array._new(k(x._buf.shape, rd, x._buf), rd, dev)


_FAST: dict = {}   # op -> {dtype: result dtype}, for same-dtype operands the op takes as they are


_NONE: dict = {}


def binary(op: str, x1, x2) -> Array:
    """Apply the binary elementwise op ``op`` (with promotion and broadcasting)."""
    if type(x1) is Array and type(x2) is Array and x1._dtype is x2._dtype \
            and x1._device is x2._device:
        # the common case, without promotion: two arrays of one dtype on one device
        rd = _FAST.get(op, _NONE).get(x1._dtype)
        if rd is not None:
            sa, sb = x1._buf.shape, x2._buf.shape
            shape = sa if sa == sb else broadcast_shapes(sa, sb, op=op)
            dev = x1._device
            k = dev.kernels.get(op)
            if k is not None:
                return Array._new(k(shape, rd, x1._buf, x2._buf), rd, dev)
    elif type(x1) is Array and type(x2) in _SCALAR_KINDS:
        out = _scalar_fast(op, x1, x2, True)
        if out is not None:
            return out
    elif type(x2) is Array and type(x1) in _SCALAR_KINDS:
        out = _scalar_fast(op, x2, x1, False)
        if out is not None:
            return out
    if op in _COMPARE and (type(x1) is int or type(x2) is int):
        x, s, first = (x1, x2, True) if isinstance(x1, Array) else (x2, x1, False)
        out = _compare_out_of_range(op, x, s, first) if isinstance(x, Array) else None
        if out is not None:
            return out
    allowed, compute, result = BINARY[op]
    if isinstance(x1, Array):
        dev = x1._device
        if isinstance(x2, Array):
            if x2._device is not dev:
                common_device(op, x1, x2)
            d = x1._dtype if x1._dtype is x2._dtype else dt.promote(x1._dtype, x2._dtype, op)
        else:
            d = dt.scalar_result(x1._dtype, x2, op)
    elif isinstance(x2, Array):
        dev = x2._device
        d = dt.scalar_result(x2._dtype, x1, op)
    else:
        raise TypeError(f"{op}: at least one argument must be a grilly Array; got "
                        f"{type(x1).__name__} and {type(x2).__name__}")
    if d not in allowed:
        raise _bad_dtype(op, d, allowed)
    cd = compute(d)
    if cd is d:
        _FAST.setdefault(op, {})[d] = result(cd)
    a = x1 if isinstance(x1, Array) and x1._dtype is cd else _operand(x1, cd, dev, op)
    b = x2 if isinstance(x2, Array) and x2._dtype is cd else _operand(x2, cd, dev, op)
    sa, sb = a._buf.shape, b._buf.shape
    shape = sa if sa == sb or not sb else sb if not sa else broadcast_shapes(sa, sb, op=op)
    rd = result(cd)
    k = dev.kernels.get(op)
    if k is None:
        return composite(dev, op)(dev, shape, rd, a, b)
    return Array._new(k(shape, rd, a._buf, b._buf), rd, dev)


# Python scalar type -> the array dtype kinds it combines with without changing the dtype
_SCALAR_KINDS = {int: "iufc", float: "fc"}


# comparison -> (its result where the Python int is above the dtype's range, below it), for
# ``array op int``; ``int op array`` is the mirrored comparison
_COMPARE = {"less": (True, False), "less_equal": (True, False), "greater": (False, True),
            "greater_equal": (False, True), "equal": (False, False),
            "not_equal": (True, True)}
_MIRROR = {"less": "greater", "less_equal": "greater_equal", "greater": "less",
           "greater_equal": "less_equal", "equal": "equal", "not_equal": "not_equal"}


def _compare_out_of_range(op: str, x: Array, s, first: bool) -> Array | None:
    """``x op s`` (``s op x`` where not ``first``) for an integer array and a Python int outside
    its dtype's range: every element compares the same way, as in NumPy 2 (``int8_array < 1000``
    is all True), where arithmetic with that int raises OverflowError; None where it fits."""
    if type(s) is not int or x._dtype.kind not in "iu":
        return None
    lo, hi = int_range(x._dtype)
    if lo <= s <= hi:
        return None
    above, below = _COMPARE[op if first else _MIRROR[op]]
    dev = x._device
    return Array._new(full_buf(dev, x._buf.shape, above if s > hi else below, dt.bool),
                      dt.bool, dev)


def _scalar_fast(op: str, x: Array, s, x_first: bool) -> Array | None:
    """``binary(op, x, s)`` (or ``(s, x)``) for a Python int or float ``s`` that leaves x's
    dtype as it is, when the op has taken that dtype before; None sends the call the long way."""
    d = x._dtype
    if d.kind not in _SCALAR_KINDS[type(s)]:
        return None   # (a bool array and an int, an integer array and a float: the errors)
    if type(s) is int and op in _COMPARE and d.kind in "iu":
        out = _compare_out_of_range(op, x, s, x_first)
        if out is not None:
            return out
    rd = _FAST.get(op, _NONE).get(d)
    dev = x._device
    k = dev.kernels.get(op)
    if rd is None or k is None:
        return None
    c = scalar_operand(s, d, dev, op)._buf
    return Array._new(k(x._buf.shape, rd, x._buf, c) if x_first else k(x._buf.shape, rd, c, x._buf),
                      rd, dev)


def _operand(x, dtype, dev, op: str) -> Array:
    if isinstance(x, Array):
        return as_compute_array(x, dtype, dev, op)
    return scalar_operand(x, dtype, dev, op)


def _make_unary(op):
    def f(x: Array, /) -> Array:
        return unary(op, x)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"Elementwise {op.replace('_', ' ')} of x."
    return f


def _make_binary(op):
    def f(x1, x2, /) -> Array:
        return binary(op, x1, x2)
    f.__name__ = f.__qualname__ = op
    f.__doc__ = f"Elementwise {op.replace('_', ' ')} of x1 and x2, with broadcasting."
    return f


_mod = sys.modules[__name__]
for _n in UNARY:
    setattr(_mod, _n, _make_unary(_n))
for _n in BINARY:
    setattr(_mod, _n, _make_binary(_n))


def round(x: Array, /, decimals: int = 0, out=None) -> Array:   # noqa: A001 (the Array API's)
    """Round half to even to ``decimals`` places (NumPy's round: x * 10**decimals rounded,
    then divided; integers as they are); the Array API's round at decimals=0."""
    no_out("round", out)
    if isinstance(decimals, bool) or not hasattr(decimals, "__index__"):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    decimals = decimals.__index__()
    if decimals == 0:
        return unary("round", x)
    if isinstance(x, Array) and x._dtype.kind in "iu":
        if decimals > 0:
            return Array._new(kernel(x._device, "copy")(x._buf), x._dtype, x._device)
        raise NotImplementedError("round: negative decimals of an integer array are not "
                                  "supported")
    f = 10.0 ** decimals
    return binary("divide", unary("round", binary("multiply", x, f)), f)


def clip(x: Array, /, min=None, max=None) -> Array:
    """Clamp each element of x to [min, max]; the result has x, min and max broadcast together."""
    if not isinstance(x, Array):
        raise TypeError(f"clip: expected a grilly Array, got {type(x).__name__}")
    if x._dtype not in _REAL:
        raise _bad_dtype("clip", x._dtype, _REAL)
    out = x
    for name, bound, op in (("min", min, "maximum"), ("max", max, "minimum")):
        if bound is None:
            continue
        if isinstance(bound, Array):
            common_device("clip", x, bound)
            if bound._dtype.kind != x._dtype.kind and not (
                    bound._dtype.kind in "iu" and x._dtype.kind in "iu"):
                raise TypeError(f"clip: {name} of dtype {bound._dtype.name} does not match x's "
                                f"{x._dtype.name}")
        elif isinstance(bound, bool) or not isinstance(bound, (int, float)):
            raise TypeError(f"clip: {name} must be an array, a real scalar or None")
        elif isinstance(bound, float) and x._dtype.kind in "iu":
            raise TypeError(f"clip: a float {name} cannot clip an integer array")
        elif x._dtype.kind in "iu":
            # a bound past the dtype's range clips nothing on that side (NumPy's answer)
            info = dt.iinfo(x._dtype)
            bound = info.min if bound < info.min else info.max if bound > info.max else bound
        out = binary(op, out, as_compute_array(bound, x._dtype, x._device, "clip"))
    if out is x:
        out = Array._new(kernel(x._device, "copy")(x._buf), x._dtype, x._device)
    return out


def _clip_positional(x: Array, /, min=None, max=None) -> Array:  # noqa: A002
    """clip with its bounds passed on positionally: the recorder differentiates positional
    Arrays, so ``clip(x, min=t)`` gives t its gradient too (torch's ``clamp(x, min=t)``)."""
    return dispatch.OPS["clip"](x, min, max)


def _clip_bound_grad(args: tuple, kw: dict) -> bool:
    # (asked on every clip call: no generator, and nothing to look at without keywords)
    return bool(kw) and (getattr(kw.get("min"), "requires_grad", False)
                         or getattr(kw.get("max"), "requires_grad", False))


dispatch.NUMPY_FORMS["clip"] = (frozenset(), _clip_positional)
dispatch.NUMPY_CALLS["clip"] = _clip_bound_grad

__all__ = sorted([*UNARY, *BINARY, "clip"])

dispatch.export(globals())
