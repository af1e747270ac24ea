"""Every elementwise op of the contract over every dtype the array layer accepts for it, plus
broadcasting, scalars, strided inputs and where."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.array import dtypes as dt
from grilly.array.elementwise import BINARY, UNARY
from grilly.backends import contract
from grilly.testing import assert_close, on, rtol_for

from ._ops import MATH, reference, values


def _cases(table: dict, ops: tuple) -> list:
    out = []
    for op in ops:
        allowed = table[op][0]
        for d in (d for d in dt.ALL if d in allowed):
            out.append(pytest.param(op, d.name, marks=pytest.mark.kernels(op), id=f"{op}-{d.name}"))
    return out


def _expected_dtype(table: dict, op: str, d) -> tuple:
    """(compute dtype, result dtype) of ``op`` on ``d`` by the array layer's table."""
    _, compute, result = table[op]
    cd = compute(d)
    return cd, result(cd)


@pytest.mark.parametrize("op, dtype", _cases(UNARY, contract.UNARY_OPS))
def test_unary(device, op, dtype):
    d = dt.from_name(dtype)
    cd, rd = _expected_dtype(UNARY, op, d)
    x = values(op, d.np)
    got = getattr(gp, op)(on(device, x))
    want = reference(op, [x.astype(cd.np)], cd.np, rd.np)
    assert got.device == device
    assert_close(got, want, rtol=rtol_for(rd.np, "math" if op in MATH else "exact"))


@pytest.mark.parametrize("op, dtype", _cases(BINARY, contract.BINARY_OPS))
def test_binary(device, op, dtype):
    d = dt.from_name(dtype)
    cd, rd = _expected_dtype(BINARY, op, d)
    a, b = values(op, d.np), values(op, d.np, second=True)
    got = getattr(gp, op)(on(device, a), on(device, b))
    want = reference(op, [a.astype(cd.np), b.astype(cd.np)], cd.np, rd.np)
    assert got.device == device
    assert_close(got, want, rtol=rtol_for(rd.np, "math" if op in MATH else "exact"))


@pytest.mark.kernels("add", "multiply", "broadcast_to")
@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_broadcast(device, dtype):
    a = np.arange(6, dtype=dtype).reshape(3, 1, 2)
    b = np.arange(8, dtype=dtype).reshape(4, 2)
    assert_close(gp.add(on(device, a), on(device, b)), a + b)
    assert_close(on(device, a) * on(device, b[:1]), a * b[:1])


@pytest.mark.kernels("add", "multiply", "subtract", "divide", "full")
def test_python_scalars(device):
    a = np.array([1.5, -2.0, 3.25], dtype=np.float32)
    x = on(device, a)
    assert_close(x + 1, a + np.float32(1))
    assert_close(2.5 * x, np.float32(2.5) * a)
    assert_close(1 - x, np.float32(1) - a)
    assert_close(x / 4, a / np.float32(4))
    i = on(device, np.array([1, 2, 3], dtype=np.int8))
    assert_close(i * 3, np.array([3, 6, 9], dtype=np.int8))


@pytest.mark.kernels("exp", "add", "permute", "slice")
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64"])
def test_strided_inputs(device, dtype):
    a = (np.arange(24).reshape(4, 6) / 7).astype(dtype)
    x = on(device, a)
    t, s = x.T, x[::2, ::-3]   # a permuted and a strided, reversed view
    assert_close(gp.exp(t), np.exp(a.T.astype(np.complex128 if dtype[0] == "c" else np.float64))
                 .astype(dtype), rtol=rtol_for(dtype, "math"))
    assert_close(t + t, a.T + a.T)
    assert_close(gp.add(s, s), a[::2, ::-3] * 2)


@pytest.mark.kernels("where")
@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint32", "float16", "float32", "float64",
                                   "complex64", "complex128"])
def test_where(device, dtype):
    c = np.array([[True, False, True], [False, False, True]])
    a = values("add", np.dtype(dtype))[:6].reshape(2, 3)
    b = values("add", np.dtype(dtype), second=True)[:3]
    assert_close(gp.where(on(device, c), on(device, a), on(device, b)), np.where(c, a, b))
