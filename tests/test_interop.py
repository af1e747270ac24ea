"""DLPack interop: export to numpy, import from numpy, generic producers and grilly itself."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import assert_close


class Producer:
    """A DLPack producer that is not a numpy array."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.complex64, np.bool_])
def test_numpy_roundtrip(device, dtype):
    h = (np.arange(12).reshape(3, 4) % 3).astype(dtype)
    if not device.backend.supports_dtype(device, gp.asarray(h).dtype):
        pytest.skip(f"{device} has no {h.dtype}")
    g = gp.asarray(h, device=device)
    assert g.__dlpack_device__()[0] == 1
    back = np.from_dlpack(g)
    np.testing.assert_array_equal(back, h)
    assert back.dtype == h.dtype
    assert_close(gp.from_dlpack(h, device=device), h)
    assert_close(gp.from_dlpack(Producer(h), device=device), h)


def test_strided_and_copy_semantics():
    h = np.arange(24.0).reshape(4, 6)[::2, 1::2]
    g = gp.from_dlpack(h)
    assert_close(g, h)
    base = np.arange(3.0)
    shared = gp.from_dlpack(base)
    copied = gp.from_dlpack(base, copy=True)
    base[0] = 42
    assert shared.tolist()[0] == 42 and copied.tolist()[0] == 0
    x = gp.asarray([1.0, 2.0])
    assert gp.from_dlpack(x) is x
    y = gp.from_dlpack(x, copy=True)
    assert y is not x and y.tolist() == [1.0, 2.0]
    assert_close(gp.from_dlpack(gp.matrix_transpose(gp.asarray(h))), h.T)
    assert np.from_dlpack(gp.asarray(h), copy=True).flags.writeable


def test_errors():
    with pytest.raises(TypeError, match="from_dlpack"):
        gp.from_dlpack([1, 2, 3])
    with pytest.raises(ValueError, match="copy"):
        gp.from_dlpack(np.ones(2), copy="yes")
    with pytest.raises(ValueError, match="stream"):
        gp.asarray([1.0]).__dlpack__(stream=3)
