"""The backend conformance kit: helpers any backend's tests use to compare against numpy."""
from __future__ import annotations

import numpy as np

import grilly as gp


def to_numpy(x) -> np.ndarray:
    """Host copy of a grilly array (or pass numpy through)."""
    return np.asarray(x) if isinstance(x, gp.Array) else np.asarray(x)


def assert_close(actual, expected, rtol=None, atol=0.0, equal_nan=True) -> None:
    """Compare a grilly array with a numpy reference: same shape, dtype name and values."""
    a = to_numpy(actual)
    e = np.asarray(expected)
    assert a.shape == e.shape, f"shape {a.shape} != expected {e.shape}"
    assert a.dtype == e.dtype, f"dtype {a.dtype} != expected {e.dtype}"
    if rtol is None:
        rtol = {np.float32: 2e-6, np.complex64: 2e-6, np.float16: 1e-3}.get(e.dtype.type, 1e-12)
    if e.dtype.kind in "fc":
        np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(a, e)


def require(device, *kernels: str, dtypes=()) -> None:
    """Skip the calling test when ``device`` lacks a kernel or a dtype it needs (reported)."""
    import pytest

    from grilly.array.dtypes import from_numpy

    missing = [k for k in kernels if k not in device.kernels]
    missing += [str(np.dtype(d)) for d in dtypes
                if not device.backend.supports_dtype(device, from_numpy(np.dtype(d)))]
    if missing:
        pytest.skip(f"{device} lacks {', '.join(missing)}")
