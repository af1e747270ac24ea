"""Result dtypes (promotion), result shapes (broadcasting), compute-follows-data (devices), and
the errors a NumPy user expects for bad input; and the contract's required kernels."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.array import dtypes as dt
from grilly.backends import contract
from grilly.testing import float_dtype, on

K = pytest.mark.kernels


@K(*contract.names(contract.REQUIRED), family="contract")
def test_required_kernels_provided(device):
    st = contract.status(device.kernels)
    missing = [n for n in contract.names(contract.REQUIRED) if st[n] != "provided"]
    assert not missing, f"{device} lacks required kernels: {' '.join(missing)}"


@K("add", "multiply", "astype", family="rules")
@pytest.mark.parametrize("a, b, want", [
    ("int8", "int16", "int16"), ("uint8", "int8", "int16"), ("uint32", "int64", "int64"),
    ("float32", "float64", "float64"), ("float16", "float32", "float32"),
    ("float32", "complex64", "complex64"), ("float64", "complex64", "complex128"),
    ("uint8", "uint16", "uint16")])
def test_promotion(device, a, b, want):
    x = on(device, np.ones(2, a))
    y = on(device, np.ones(2, b))
    assert (x + y).dtype == dt.from_name(want) == (y * x).dtype
    assert np.asarray(x + y).dtype == np.dtype(want)


@K("add", "multiply", "full", family="rules")
def test_python_scalar_keeps_dtype(device):
    for d in ("int8", "uint16", "float16", "float32", "complex64"):
        x = on(device, np.ones(3, d))
        assert (x + 1).dtype == dt.from_name(d)
        assert (2 * x).dtype == dt.from_name(d)


@K("add", "multiply", "astype", family="rules")
def test_cross_kind_promotion_is_numpys(device):
    """Arrays of different kinds (bool with a number, an integer with a float), which the Array
    API leaves unspecified, promote as NumPy's: the array layer casts both to NumPy's result
    dtype first, so a backend sees one dtype. A Python scalar of a higher kind too."""
    pairs = [("int16", "float32"), ("bool", "int32"), ("bool", "float32"), ("uint8", "int8")]
    if float_dtype(device) == "float64":
        pairs += [("int32", "float32"), ("int64", "float64")]
    for da, db in pairs:
        a, b = np.arange(1, 4).astype(da), np.linspace(0.5, 2.0, 3).astype(db)
        got = gp.add(on(device, a), on(device, b))
        want = a + b
        assert got.dtype == dt.from_numpy(want.dtype), (da, db, got.dtype)
        assert np.array_equal(np.asarray(got), want), (da, db)
    if float_dtype(device) == "float64":
        i = on(device, np.ones(2, "int32"))
        assert (i + 1.5).dtype == gp.float64 and np.asarray(i + 1.5).tolist() == [2.5, 2.5]


@K("add", "equal", "broadcast_to", family="rules")
@pytest.mark.parametrize("sa, sb", [((3, 1), (1, 4)), ((2, 3, 4), (4,)), ((), (2, 2)), ((0, 3), (1, 3)),
                                    ((5, 1, 2), (3, 1))])
def test_result_shapes(device, sa, sb):
    x, y = on(device, np.zeros(sa, np.float32)), on(device, np.zeros(sb, np.float32))
    want = np.broadcast_shapes(sa, sb)
    assert (x + y).shape == want and gp.equal(x, y).shape == want
    assert gp.equal(x, y).dtype == gp.bool


@K("from_host", "add", family="rules")
def test_cross_device_is_a_value_error(device):
    others = [d for d in gp.devices() if d != device]
    if not others:
        pytest.skip("only one device: nothing to mix with")
    f = float_dtype(device)   # (float32 where the device holds no float64)
    others = [d for d in others if float_dtype(d) == f] or others
    x, y = on(device, np.ones(2, f)), gp.asarray(np.ones(2, f), device=others[0])
    with pytest.raises(ValueError, match="different devices"):
        x + y
    with pytest.raises(ValueError):
        gp.matmul(x, y)
    z = y.to_device(device)
    assert z.device == device
    np.testing.assert_array_equal(np.asarray(x + z), [2.0, 2.0])


@K("add", "sum", "bitwise_and", family="rules")
def test_dtype_errors(device):
    f = on(device, np.ones(3, np.float32))
    with pytest.raises(TypeError, match="bitwise_and"):
        gp.bitwise_and(f, f)
    with pytest.raises(TypeError, match="logical_not"):
        gp.logical_not(f)
    with pytest.raises(TypeError):
        gp.sort(on(device, np.ones(3, np.complex64)))
    with pytest.raises(TypeError):
        gp.add(np.ones(3), np.ones(3))           # not grilly arrays
    with pytest.raises(TypeError):
        gp.asarray(np.ones(2, dtype="datetime64[s]"), device=device)


@K("add", "reshape", "max", family="rules")
def test_value_errors(device):
    f = float_dtype(device)
    x = on(device, np.ones((2, 3), f))
    with pytest.raises(ValueError, match="broadcast"):
        x + on(device, np.ones((4,), f))
    with pytest.raises(ValueError):
        gp.reshape(x, (4, 2))
    with pytest.raises(ValueError):
        gp.max(on(device, np.ones((0,), f)))
    with pytest.raises(ValueError):
        gp.matmul(x, x)
    with pytest.raises((ValueError, IndexError)):   # AxisError is both
        gp.sum(x, axis=2)
    with pytest.raises(ValueError):
        gp.sum(x, axis=(0, 0))
    with pytest.raises(ValueError):
        gp.full((-1,), 1.0, device=device)


@K("slice", family="rules")
def test_index_errors(device):
    x = on(device, np.ones((2, 3), float_dtype(device)))
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0]
    with pytest.raises(IndexError):
        x[:, -4]


@K("to_host", "from_host", family="storage")
def test_host_interop(device):
    f = float_dtype(device)
    a = np.arange(6.0, dtype=f).reshape(2, 3)
    x = on(device, a)
    assert x.tolist() == a.tolist() and float(x[1, 2]) == 5.0 and int(x[0, 1]) == 1
    np.testing.assert_array_equal(np.from_dlpack(x), a)
    assert gp.asarray([1, 2], device=device).dtype == gp.int64
    if f == "float64":   # Python floats are float64, which this device may not hold
        assert gp.asarray([1.0, 2], device=device).dtype == gp.float64
    assert gp.asarray([True], device=device).dtype == gp.bool
