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
    shared = gp.from_dlpack(base, device="cpu")  # host memory is shared only with the cpu device
    copied = gp.from_dlpack(base, copy=True, device="cpu")
    base[0] = 42
    assert shared.tolist()[0] == 42 and copied.tolist()[0] == 0
    x = gp.asarray([1.0, 2.0], device="cpu")
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


def test_dlpack_export_shares_device_memory(device):
    h = np.arange(12, dtype=np.float32).reshape(3, 4)
    y = gp.asarray(h, device=device) * 2  # pending device work: the export must sync first
    e = np.from_dlpack(y, copy=False)
    np.testing.assert_array_equal(e, h * 2)
    assert e.flags.writeable and np.shares_memory(np.from_dlpack(y), e)
    e[0, 0] = 42.0  # writes through the export reach the device array
    assert float(gp.sum(y)) == float((h * 2).sum()) + 42.0
    assert np.asarray(y)[0, 0] == 42.0
    private = np.from_dlpack(y, copy=True)
    private[0, 0] = -1.0
    assert np.asarray(y)[0, 0] == 42.0
    v = gp.matrix_transpose(y)[::-1, 1:]  # a strided, reversed view exports as one too
    np.testing.assert_array_equal(np.from_dlpack(v, copy=False), np.asarray(y).T[::-1, 1:])
    assert np.from_dlpack(gp.asarray(np.zeros((0, 3), np.float32), device=device)).shape == (0, 3)


def test_dlpack_export_keeps_memory_alive(device):
    import gc

    y = gp.asarray(np.arange(64, dtype=np.float32), device=device) + 1
    e = np.from_dlpack(y, copy=False)
    del y
    gc.collect()
    # same-size arrays would take the freed block first: the export must still own it
    others = [gp.full((64,), 9.0, dtype=gp.float32, device=device) + 1 for _ in range(4)]
    gp.sum(others[-1]).item()
    np.testing.assert_array_equal(e, np.arange(64, dtype=np.float32) + 1)


def test_dlpack_copy_false_without_host_visible_memory(device, monkeypatch):
    if device.backend.name == "cpu":
        pytest.skip("cpu memory is host memory")
    x = gp.asarray(np.arange(4.0, dtype=np.float32), device=device)
    chunk = x._buf.alloc.chunk
    monkeypatch.setattr(chunk, "host", None)  # the kernel's answer for unmapped memory
    assert device.kernels["host_view"](x._buf) is None
    monkeypatch.undo()
    monkeypatch.setitem(device.kernels, "host_view", lambda buf: None)
    with pytest.raises(BufferError, match="copy=False.*not host-visible"):
        x.__dlpack__(copy=False)
    c = np.from_dlpack(x)  # copy=None falls back to a private copy
    c[0] = 5.0
    assert np.asarray(x)[0] == 0.0


def test_dlpack_copy_argument():
    with pytest.raises(ValueError, match="__dlpack__: copy"):
        gp.asarray([1.0]).__dlpack__(copy="yes")


def test_copy_copy_and_pickle_are_independent_copies(device):
    import copy
    import pickle

    # copy.copy aliased the buffer (writing the copy wrote the original; numpy copies) and
    # pickle failed on numba/cffi internals
    h = np.arange(6.0, dtype=np.float32)[::-2]
    a = gp.asarray(h, device=device)
    a.requires_grad_()
    for b in (copy.copy(a), pickle.loads(pickle.dumps(a))):
        assert b is not a and b.dtype == a.dtype and b.device == a.device and b.requires_grad
        b = b.detach()
        b[0] = -1.0
        assert_close(a.detach(), h)
        assert_close(b, np.concatenate([[-1.0], h[1:]]).astype(np.float32))


def test_format_spec_of_a_0d_array(device):
    # numpy formats a 0-d array's value: f"{np.asarray(3.14159):.2f}" == "3.14"
    assert f"{gp.asarray(3.14159, device=device):.2f}" == f"{np.asarray(3.14159):.2f}"
    assert f"{gp.asarray(7, device=device):>4d}" == "   7"
    x = gp.asarray([1.0, 2.0], device=device)
    assert f"{x}" == str(x)
    with pytest.raises(TypeError, match="format"):
        f"{x:.2f}"


def test_asarray_copy_of_a_dlpack_object_is_a_copy(device):
    """asarray(copy=True) of an object taken through DLPack (a torch tensor) did not copy."""
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.0, 2.0], dtype=torch.float64)
    a = gp.asarray(t, copy=True, device=device)
    t[0] = 99.0
    assert a.tolist() == [1.0, 2.0]
