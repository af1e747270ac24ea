"""The backend object itself: every kernel's signature takes the contract's call, the optional
hooks (info, stats, profile, native_bfloat16, capture) return what docs/backends.md says, and a
traced function (grilly.jit, through the backend's ``capture`` where it has one) replays new
inputs correctly."""
from __future__ import annotations

import numpy as np
import pytest

import grilly as gp
from grilly.backends import contract
from grilly.testing import float_dtype, on

K = pytest.mark.kernels


@K(*contract.names(), family="contract")
def test_kernel_signatures(device):
    """Each kernel can be called the way the array layer calls it (a wrong signature otherwise
    shows up as a TypeError deep in some op)."""
    bad = [p for op, fn in device.kernels.items()
           if (p := contract.signature_problem(op, getattr(fn, "__wrapped__", fn)))]
    assert not bad, f"{device.backend.name!r}: " + "; ".join(bad)


@K("from_host", family="hooks")
def test_optional_hooks(device):
    b = device.backend
    info = b.info(device)
    assert isinstance(info, dict), f"{b.name!r}: info(device) returned {type(info).__name__}, " \
                                   "expected a dict"
    for hook in ("stats", "profile"):
        got = getattr(b, hook)(device)
        assert isinstance(got, dict), f"{b.name!r}: {hook}(device) returned " \
                                      f"{type(got).__name__}, expected a dict"
    bad = {k: v for k, v in b.stats(device).items()
           if not isinstance(k, str) or not isinstance(v, (int, np.integer)) or isinstance(v, bool)}
    assert not bad, f"{b.name!r}: stats(device) must map names to ints; not so: {bad}"
    from grilly.array.bfloat16 import DEVICE_NATIVE

    native = set(b.native_bfloat16(device))
    unknown = native - DEVICE_NATIVE - contract.BFLOAT16_ELEMENTWISE
    assert not unknown, f"{b.name!r}: native_bfloat16(device) names ops that cannot run " \
                        f"natively on bfloat16: {sorted(unknown)} (allowed: grilly.array." \
                        "bfloat16.DEVICE_NATIVE and contract.BFLOAT16_ELEMENTWISE)"
    cap = b.capture(device)
    if cap is not None:
        lacks = [m for m in ("begin", "end", "abort", "run") if not callable(getattr(cap, m, None))]
        assert not lacks, f"{b.name!r}: capture(device) returned a {type(cap).__name__} " \
                          f"without {', '.join(lacks)} (it needs begin(), end() -> handle, " \
                          "abort() and run(handle))"


@K("exp", "multiply", "add", family="jit")
def test_jit_replays_new_inputs(device):
    """grilly.jit traces on the first call and replays later ones; a replay must compute with
    the new inputs (a backend's capture: run(handle) re-executes the recorded kernels)."""
    import grilly.jit

    dt = float_dtype(device)

    @grilly.jit
    def f(x, y):
        return gp.exp(x) * y + x

    rng = np.random.default_rng(0)
    for k in range(4):
        a, c = rng.standard_normal(5).astype(dt), rng.standard_normal(5).astype(dt)
        got = np.asarray(f(on(device, a), on(device, c)))
        want = np.exp(a.astype(np.float64)) * c + a
        cap = device.backend.capture(device) is not None
        np.testing.assert_allclose(
            got, want.astype(dt), rtol=1e-5 if dt == "float32" else 1e-12,
            err_msg=f"call {k} of a traced function on {device} ("
                    + ("replayed through the backend's capture: run(handle) must run the "
                       "recorded kernels again on the new inputs)" if cap and k > 1 else
                       "traced eagerly)" if k == 0 else "replayed)"))
