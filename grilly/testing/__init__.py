"""The backend conformance kit: numpy-referenced helpers and a device-parametrised test suite.

Run it with ``grilly conformance DEVICE`` or ``pytest --pyargs grilly.testing --grilly-device
DEVICE`` (docs/conformance.md). The helpers below are also used by grilly's own tests/.
"""
from __future__ import annotations

import numpy as np

# The kit's tolerances (relative), per dtype: "exact" ops (correctly rounded arithmetic) and
# "math" ops (library functions: exp, sin, ...). float64 allows a few ulp either way.
RTOL = {
    "exact": {"float16": 1e-3, "float32": 2e-6, "float64": 1e-12, "complex64": 2e-6,
              "complex128": 1e-12},
    "math": {"float16": 1e-3, "float32": 1e-5, "float64": 1e-12, "complex64": 1e-5,
             "complex128": 1e-12},
}


def to_numpy(x) -> np.ndarray:
    """Host copy of a grilly array (or pass numpy through)."""
    return np.asarray(x)


def rtol_for(dtype, kind: str = "exact") -> float:
    """The kit's relative tolerance for a (float or complex) dtype; 0 for exact dtypes."""
    return RTOL[kind].get(np.dtype(dtype).name, 0.0)


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


def on(device, a, dtype=None):
    """A numpy array (or nested list) as a grilly array on ``device``."""
    import grilly as gp   # here, not at import: the pytest11 plugin imports this package

    a = np.asarray(a) if dtype is None else np.asarray(a, dtype=dtype)
    return gp.asarray(a, device=device)


def float_dtype(device) -> str:
    """The float dtype a kit test that is not about dtypes runs in: float64 where ``device``
    holds it, else float32 (a device without float64, such as Vulkan without shaderFloat64,
    still runs the rules, errors and host round trips)."""
    from grilly.array.dtypes import from_numpy

    f64 = device.backend.supports_dtype(device, from_numpy(np.dtype(np.float64)))
    return "float64" if f64 else "float32"
