"""Elementwise reference table of the kit: the numpy function, the input domain and the
tolerance class of each op of the contract (the accepted dtypes come from the array layer)."""
from __future__ import annotations

import numpy as np

# op -> numpy function where the names differ
NP_NAME = {
    "acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh", "atan": "arctan",
    "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert", "pow": "power",
    "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift",
}

# library functions (a few ulp); everything else is exact or correctly rounded
MATH = frozenset({
    "acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "exp", "expm1", "log", "log10",
    "log1p", "log2", "sin", "sinh", "tan", "tanh", "atan2", "hypot", "logaddexp", "pow",
})
# ops whose reference is computed in the input dtype itself (numpy is exact there)
NATIVE = frozenset({"nextafter", "floor_divide", "remainder", "copysign"})

# real input values per op (then cast to the test dtype; unsigned dtypes take |v|)
_GRID = np.array([-2.5, -1.75, -1.0, -0.5, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.75])
DOMAIN = {
    "acos": np.linspace(-0.95, 0.95, 12), "asin": np.linspace(-0.95, 0.95, 12),
    "atanh": np.linspace(-0.9, 0.9, 12), "acosh": np.linspace(1.0, 6.0, 12),
    "log": np.linspace(0.125, 9.0, 12), "log2": np.linspace(0.125, 9.0, 12),
    "log10": np.linspace(0.125, 9.0, 12), "log1p": np.linspace(-0.75, 6.0, 12),
    "sqrt": np.linspace(0.0, 9.0, 12), "reciprocal": _GRID[_GRID != 0],
    "tan": np.linspace(-1.4, 1.4, 12), "exp": np.linspace(-5.0, 5.0, 12),
    "expm1": np.linspace(-3.0, 3.0, 12), "cosh": np.linspace(-4.0, 4.0, 12),
    "sinh": np.linspace(-4.0, 4.0, 12),
    "isnan": np.array([0.0, np.nan, np.inf, -np.inf, 1.5, -0.0]),
    "isinf": np.array([0.0, np.nan, np.inf, -np.inf, 1.5, -0.0]),
    "isfinite": np.array([0.0, np.nan, np.inf, -np.inf, 1.5, -0.0]),
    "signbit": np.array([0.0, -0.0, 1.5, -2.0, np.inf, -np.inf]),
}
# second operand per binary op (the first is the grid)
RHS = {
    "divide": np.array([1.0, 2.0, -4.0, 0.5, 3.0, -1.5, 8.0, 1.25, -2.0, 5.0, 0.75, 2.5]),
    "floor_divide": np.array([1.0, 2.0, -4.0, 3.0, 3.0, -1.0, 8.0, 2.0, -2.0, 5.0, 7.0, 2.0]),
    "remainder": np.array([1.0, 2.0, -4.0, 3.0, 3.0, -1.0, 8.0, 2.0, -2.0, 5.0, 7.0, 2.0]),
    "pow": np.array([2.0, 3.0, 1.0, 2.0, 4.0, 0.0, 3.0, 2.0, 1.0, 3.0, 2.0, 1.0]),
    "bitwise_left_shift": np.array([0, 1, 2, 3, 4, 5, 1, 2, 3, 0, 1, 2]),
    "bitwise_right_shift": np.array([0, 1, 2, 3, 4, 5, 1, 2, 3, 0, 1, 2]),
}
# integer inputs of ops with a restricted domain: (low, high)
_INT_RANGE = {"acos": (-1, 1), "asin": (-1, 1), "atanh": (0, 0), "acosh": (1, None),
              "log": (1, None), "log2": (1, None), "log10": (1, None), "log1p": (0, None),
              "sqrt": (0, None)}
_DEFAULT_RHS = np.array([1.0, -1.75, 2.0, -0.5, 0.0, 0.5, 0.25, 1.0, -3.0, 2.0, 3.0, -1.0])


def values(op: str, dtype: np.dtype, second: bool = False) -> np.ndarray:
    """Small test inputs of ``op`` in ``dtype`` (a fixed grid, no randomness)."""
    v = (RHS.get(op, _DEFAULT_RHS) if second else DOMAIN.get(op, _GRID)).astype(np.float64)
    if dtype.kind == "b":
        return (np.arange(v.size) % 3 == (1 if second else 0)) | (v > 1.0)
    if dtype.kind in "iu":
        finite = np.where(np.isfinite(v), v, 1.0)
        v = np.round(finite * (1 if op in ("pow", "square") or "shift" in op else 3))
        lo, hi = _INT_RANGE.get(op, (None, None))
        v = v if lo is None else np.clip(v, lo, hi)
        if op in ("floor_divide", "remainder") and second:
            v = np.where(v == 0, 1, v)
        if dtype.kind == "u":
            v = np.abs(v)
        if op == "pow" and not second:
            v = np.clip(v, -3, 3)
        return v.astype(dtype)
    if dtype.kind == "c":
        w = np.roll(v, 3) * 0.5 if op not in DOMAIN else np.zeros_like(v) + 0.25
        if op in ("acosh", "log", "log2", "log10", "sqrt"):
            w = w * 0.5
        return (v + 1j * w).astype(dtype)
    return v.astype(dtype)


def reference(op: str, args: list, compute: np.dtype, result: np.dtype) -> np.ndarray:
    """numpy's result for ``op`` on ``args`` (already in the compute dtype), evaluated in
    float64/complex128 for float inputs, then rounded to the result dtype."""
    fn = getattr(np, NP_NAME.get(op, op))
    if compute.kind in "fc" and op not in NATIVE:
        wide = np.complex128 if compute.kind == "c" else np.float64
        args = [a.astype(wide) for a in args]
    with np.errstate(all="ignore"):
        out = fn(*args)
    return np.asarray(out).astype(result)
