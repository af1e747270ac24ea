"""Reductions along a leading axis (columns: bias and layer-norm gradients, a mean over the
sequence) on every device against numpy. On Vulkan these take the per-invocation path with row
chunks and a second pass (vulkan/reductions.py), so the shapes cross its thresholds: an inner
axis of 32 or more, more than 128 rows, few and many outputs, strided and transposed views."""
import numpy as np
import pytest

import grilly as gp

# (shape, axis): few outputs with long columns (chunked), a mean over axis 1 of a 3-d array,
# a short column (unchunked), an inner axis just below the column threshold, many outputs
CASES = [((8192, 512), 0), ((4096, 40), 0), ((16, 256, 512), 1), ((129, 64), 0), ((100, 64), 0),
         ((2000, 31), 0), ((300, 33000), 0), ((64, 48, 96), (0, 1))]


def _bound(h, axis, n):
    return np.sum(np.abs(h.astype(np.float64)), axis=axis) * n * 2.0**-23 + 1e-30


@pytest.mark.parametrize("shape,axis", CASES)
def test_column_sum_mean_max_min(device, shape, axis):
    h = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    x = gp.asarray(h, device=device)
    red = np.prod([shape[a] for a in np.atleast_1d(axis)])
    ref = np.sum(h.astype(np.float64), axis=axis)
    assert np.all(np.abs(np.asarray(gp.sum(x, axis=axis)) - ref) <= _bound(h, axis, red))
    got = np.asarray(gp.mean(x, axis=axis))
    assert np.all(np.abs(got - ref / red) <= _bound(h, axis, red) / red)
    for op in ("max", "min"):
        np.testing.assert_array_equal(np.asarray(getattr(gp, op)(x, axis=axis)),
                                      getattr(np, op)(h, axis=axis))


@pytest.mark.parametrize("shape,axis", CASES[:3])
def test_column_reductions_keep_nan_ints_and_argmax(device, shape, axis):
    rng = np.random.default_rng(1)
    h = rng.standard_normal(shape).astype(np.float32)
    flat = h.reshape(-1)
    flat[rng.integers(0, flat.size, 5)] = np.nan   # NaN in a few columns, in any row chunk
    x = gp.asarray(h, device=device)
    for op in ("max", "min", "sum"):
        got, want = np.asarray(getattr(gp, op)(x, axis=axis)), getattr(np, op)(h, axis=axis)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    hi = rng.integers(-1000, 1000, shape).astype(np.int32)
    xi = gp.asarray(hi, device=device)
    np.testing.assert_array_equal(np.asarray(gp.sum(xi, axis=axis)),
                                  np.sum(hi, axis=axis, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(gp.max(xi, axis=axis)), np.max(hi, axis=axis))
    np.testing.assert_array_equal(np.asarray(gp.argmax(xi, axis=axis)), np.argmax(hi, axis=axis))


def test_column_sum_of_strided_and_transposed_views(device):
    h = np.random.default_rng(2).standard_normal((600, 300)).astype(np.float32)
    x = gp.asarray(h, device=device)
    for view, hv in ((x[::2, 1:], h[::2, 1:]), (gp.matrix_transpose(x), h.T)):
        for axis in (0, 1):
            got = np.asarray(gp.sum(view, axis=axis, keepdims=True))
            ref = np.sum(hv.astype(np.float64), axis=axis, keepdims=True)
            assert got.shape == ref.shape
            assert np.all(np.abs(got - ref) <= _bound(hv, axis, hv.shape[axis]).reshape(ref.shape))


@pytest.mark.parametrize("axes", [(0, 2, 3), (0, 3), (1, 3), (0, 1, 3)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_axes_apart_reduce_without_a_transposing_copy(monkeypatch, axes, dtype):
    """A reduction over axes that are not adjacent (a conv bias gradient's (0, 2, 3)) runs the
    last run of adjacent axes first, then the rest, on the Vulkan device: no copy of the input
    (float16 keeps its one float32-accumulated pass over a copy). Against numpy,
    sum/prod/max/min."""
    dev = [d for d in gp.devices() if str(d).startswith("vulkan")]
    if not dev:
        pytest.skip("no Vulkan device")
    from grilly.backends.vulkan import kernels

    copies = []
    real = kernels._cast_into
    def spy(dst, src, name):   # same-dtype copies only (int32 sums widen to int64 first)
        if dst.dtype is src.dtype:
            copies.append(1)
        return real(dst, src, name)

    monkeypatch.setattr(kernels, "_cast_into", spy)
    rng = np.random.default_rng(len(axes))
    x = (rng.standard_normal((6, 5, 8, 12)) * 2).astype(dtype)
    g = gp.asarray(x, device=dev[0])
    for name in ("sum", "prod", "max", "min"):
        copies.clear()
        got = np.asarray(getattr(gp, name)(g, axis=axes)).astype(np.float64)
        want = getattr(np, name)(x.astype(np.float64), axis=axes)
        if dtype == np.float16:
            want = want.astype(np.float16).astype(np.float64)
        tol = 2e-3 if dtype == np.float16 else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max(),
                                   err_msg=name)
        assert bool(copies) == (dtype == np.float16), (name, len(copies))
