"""float16 reductions over long contiguous rows (on Vulkan the four-a-load rows of
reduce_vec4.comp, accumulated in float32, rounded once) on every device, against float64."""
import numpy as np
import pytest

import grilly as gp

_RNG = np.random.default_rng(5)
SHAPES = [(3, 4096), (64, 2048), (2, 1 << 18), (1, 1 << 20), (5, 1028)]


def _f16_ulps(got, ref) -> float:
    g, r = np.asarray(got).astype(np.float64), ref.astype(np.float16).astype(np.float64)
    return float(np.max(np.abs(g - r) / np.spacing(np.abs(r).astype(np.float16)).astype(np.float64)))


@pytest.mark.parametrize("shape", SHAPES)
def test_sum_prod_long_float16_rows(device, shape):
    x = _RNG.standard_normal(shape).astype(np.float16)
    got = gp.sum(gp.asarray(x, device=device), axis=1)
    assert got.dtype == gp.float16
    assert _f16_ulps(got, x.astype(np.float64).sum(axis=1)) <= 1
    p = (1 + _RNG.standard_normal(shape) / 4096).astype(np.float16)
    got = gp.prod(gp.asarray(p, device=device), axis=1, keepdims=True)
    assert got.shape == (shape[0], 1)
    assert _f16_ulps(got, p.astype(np.float64).prod(axis=1, keepdims=True)) <= 1


@pytest.mark.parametrize("shape", SHAPES)
def test_max_min_long_float16_rows(device, shape):
    x = _RNG.standard_normal(shape).astype(np.float16)
    x[0, shape[1] // 3] = np.float16(np.nan)   # NaN propagates (numpy's max/min)
    x[-1, -1] = np.float16(65504.0)
    a = gp.asarray(x, device=device)
    for op in ("max", "min"):
        got = np.asarray(getattr(gp, op)(a, axis=1))
        assert np.array_equal(got, getattr(np, op)(x, axis=1), equal_nan=True), op


def test_sum_over_outer_axes_float16(device):
    """A bias gradient's sum over (N, H, W) of an (N, C, H, W) float16 array."""
    x = _RNG.standard_normal((8, 16, 32, 32)).astype(np.float16)
    got = gp.sum(gp.asarray(x, device=device), axis=(0, 2, 3))
    assert _f16_ulps(got, x.astype(np.float64).sum(axis=(0, 2, 3))) <= 1
