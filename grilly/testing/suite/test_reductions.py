"""Reductions, arg extremes, scans and the statistics composed from them."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close, on, rtol_for

K = pytest.mark.kernels

_DATA = np.array([[[1.5, -2.0, 3.0, 0.0], [4.0, 0.5, -1.0, 2.0], [-3.5, 1.0, 2.5, -0.5]],
                  [[0.0, 2.0, -1.5, 1.0], [1.0, -4.0, 0.5, 3.0], [2.0, 1.5, -2.5, 0.0]]])
_AXES = [None, 0, 2, (0, 2), ()]
_SUM_DEFAULT = {"b": np.int64, "i": np.int64, "u": np.uint64}


def _data(dtype: str) -> np.ndarray:
    d = np.dtype(dtype)
    if d.kind == "b":
        return _DATA > 0
    if d.kind == "u":
        return np.abs(_DATA * 2).astype(d)
    if d.kind == "c":
        return (_DATA + 0.5j * np.roll(_DATA, 1)).astype(d)
    return (_DATA * 2).astype(d) if d.kind == "i" else _DATA.astype(d)


def _ids(axes):
    return "all" if axes is None else str(axes).replace(" ", "")


@pytest.mark.parametrize("axis", _AXES, ids=_ids)
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "uint16", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
@pytest.mark.parametrize("op", [pytest.param(o, marks=K(o)) for o in ("sum", "prod")])
def test_sum_prod(device, op, dtype, axis):
    a = _data(dtype)
    want_dt = _SUM_DEFAULT.get(a.dtype.kind, a.dtype)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64 if a.dtype.kind == "f" else want_dt
    want = getattr(np, op)(a.astype(wide), axis=axis).astype(want_dt)
    got = getattr(gp, op)(on(device, a), axis=axis)
    assert_close(got, want, rtol=4 * rtol_for(a.dtype))
    kd = getattr(gp, op)(on(device, a), axis=axis, keepdims=True)
    assert kd.shape == getattr(np, op)(a, axis=axis, keepdims=True).shape


@pytest.mark.kernels("sum")
def test_sum_dtype_argument(device):
    a = np.full(300, 100, dtype=np.int8)
    assert_close(gp.sum(on(device, a), dtype=gp.int64), np.int64(30000))
    f = np.linspace(0, 1, 10001, dtype=np.float32)
    assert_close(gp.sum(on(device, f)), np.float32(np.sum(f.astype(np.float64))), rtol=1e-6)


@pytest.mark.parametrize("axis", _AXES, ids=_ids)
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("op", [pytest.param(o, marks=K(o)) for o in ("max", "min")])
def test_max_min(device, op, dtype, axis):
    a = _data(dtype)
    assert_close(getattr(gp, op)(on(device, a), axis=axis), getattr(np, op)(a, axis=axis))


@pytest.mark.kernels("max", "min")
def test_max_min_nan(device):
    a = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, -1.0]], dtype=np.float32)
    assert_close(gp.max(on(device, a), axis=1), np.max(a, axis=1))
    assert_close(gp.min(on(device, a), axis=0), np.min(a, axis=0))


@pytest.mark.parametrize("axis", _AXES, ids=_ids)
@pytest.mark.parametrize("dtype", ["bool", "int16", "float32", "complex64"])
@pytest.mark.parametrize("op", [pytest.param(o, marks=K(o)) for o in ("all", "any", "count_nonzero")])
def test_logical_reductions(device, op, dtype, axis):
    a = _data(dtype)
    a[0, 1] = 0
    want = np.asarray(getattr(np, op)(a, axis=axis))
    want = want.astype(np.int64) if op == "count_nonzero" else want
    assert_close(getattr(gp, op)(on(device, a), axis=axis), want)


@pytest.mark.parametrize("axis", [None, 0, 1, 2], ids=_ids)
@pytest.mark.parametrize("dtype", ["int8", "uint32", "float32", "float64"])
@pytest.mark.parametrize("op", [pytest.param(o, marks=K(o)) for o in ("argmax", "argmin")])
def test_arg_extremes(device, op, dtype, axis):
    a = _data(dtype)
    assert_close(getattr(gp, op)(on(device, a), axis=axis), getattr(np, op)(a, axis=axis).astype(np.int64))


@pytest.mark.kernels("argmax", "argmin")
def test_arg_extremes_ties_and_nan(device):
    a = np.array([[3.0, 1.0, 3.0, 1.0], [0.0, np.nan, 5.0, np.nan]])
    assert_close(gp.argmax(on(device, a), axis=1), np.argmax(a, axis=1))
    assert_close(gp.argmin(on(device, a), axis=1), np.argmin(a, axis=1))
    assert gp.argmax(on(device, a), axis=1, keepdims=True).shape == (2, 1)


@pytest.mark.parametrize("include_initial", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "complex64"])
@pytest.mark.parametrize("op", [pytest.param(o, marks=K(o)) for o in ("cumulative_sum", "cumulative_prod")])
def test_scans(device, op, dtype, axis, include_initial):
    a = _data(dtype)
    if op == "cumulative_prod" and a.dtype.kind in "iu":
        a = (a % 3).astype(a.dtype)   # no overflow
    want_dt = _SUM_DEFAULT.get(a.dtype.kind, a.dtype)
    wide = np.complex128 if a.dtype.kind == "c" else np.float64 if a.dtype.kind == "f" else want_dt
    npop = np.cumsum if op == "cumulative_sum" else np.cumprod
    want = npop(a.astype(wide), axis=axis)
    if include_initial:
        shape = list(a.shape)
        shape[axis] = 1
        want = np.concatenate([np.full(shape, 0 if op == "cumulative_sum" else 1, wide), want], axis=axis)
    got = getattr(gp, op)(on(device, a), axis=axis, include_initial=include_initial)
    assert_close(got, want.astype(want_dt), rtol=4 * rtol_for(a.dtype))


@pytest.mark.kernels("sum", "subtract", "multiply", "divide", "sqrt", family="reductions")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_statistics(device, dtype):
    a = _DATA.astype(dtype)
    x = on(device, a)
    r = rtol_for(dtype, "math")
    assert_close(gp.mean(x, axis=1), np.mean(a.astype(np.float64), axis=1).astype(dtype), rtol=r)
    assert_close(gp.var(x, axis=(0, 2), correction=1),
                 np.var(a.astype(np.float64), axis=(0, 2), ddof=1).astype(dtype), rtol=r)
    assert_close(gp.std(x), np.std(a.astype(np.float64)).astype(dtype), rtol=r)


@pytest.mark.kernels("sum", "prod", "any", "all", "count_nonzero", "cumulative_sum")
def test_empty(device):
    e = np.zeros((0, 3), dtype=np.float32)
    x = on(device, e)
    assert_close(gp.sum(x, axis=0), np.zeros(3, np.float32))
    assert_close(gp.prod(x, axis=0), np.ones(3, np.float32))
    assert_close(gp.any(x, axis=0), np.zeros(3, bool))
    assert_close(gp.all(x, axis=0), np.ones(3, bool))
    assert_close(gp.count_nonzero(x), np.int64(0))
    assert_close(gp.cumulative_sum(x, axis=0), e)


@K("segment_sum", "segment_max")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_segments(device, dtype):
    """Sums and maxima of runs of rows (grilly.array.segments): empty runs, a NaN, ties (exact
    small integers, so any order of the sums gives them), against a loop over the runs."""
    from grilly.array.segments import segment_max, segment_sum

    rng = np.random.default_rng(13)
    v = rng.integers(-3, 4, (40, 3)).astype(dtype)
    v[9, 1] = np.nan
    edges = np.array([0, 0, 5, 5, 6, 23, 40, 40])
    starts, ends = edges[:-1], edges[1:]
    runs = [v[a:b] for a, b in zip(starts, ends)]
    args = (on(device, v), on(device, starts), on(device, ends))
    assert_close(segment_sum(*args), np.stack([r.sum(0) if len(r) else np.zeros(3, dtype)
                                               for r in runs]))
    m, i = segment_max(*args, fill=-7.0)
    first = [a + np.argmax(np.where(np.isnan(r), np.inf, r), 0) if len(r) else [-1] * 3
             for r, a in zip(runs, starts)]
    assert_close(i, np.array(first, np.int64))
    assert_close(m, np.stack([r.max(0) if len(r) else np.full(3, -7.0, dtype) for r in runs]))
