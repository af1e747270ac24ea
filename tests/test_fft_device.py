"""The transforms on every device against numpy.fft in float64 (a normwise bound: an FFT's error
is relative to the transform's norm, about eps * log2(n)), with the lengths that take each of
the Vulkan kernel's paths (one shared-memory pass, the four-step split, Bluestein's convolution
of both sizes), and the Vulkan transforms staying on the device."""
import math

import numpy as np
import pytest

import grilly as gp

EPS = {"complex64": 2.0**-24, "complex128": 2.0**-53}
REAL = {"complex64": np.float32, "complex128": np.float64}


def _cx(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _check(got, want, dtype, n):
    got = np.asarray(got)
    assert got.shape == want.shape
    err = np.linalg.norm(got - want) / np.linalg.norm(want)
    # a radix-2 FFT in float32 rounding: a few eps per pass; Bluestein's adds its two passes
    bound = 3 * EPS[dtype] * (2 * math.log2(max(n, 2)) + 8)
    assert err <= bound, (err, bound)


# lengths: 1; powers of two through one pass and (past 4096 / 2048) the four-step split; other
# lengths through Bluestein (12345 and 5000: a convolution past one pass)
LENGTHS = [1, 2, 7, 16, 100, 4096, 8192, 5000]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", LENGTHS)
def test_c2c_lengths(device, dtype, n):
    rng = np.random.default_rng(n)
    x = _cx(rng, (2, n), dtype)
    a = gp.asarray(x, device=device)
    x64 = x.astype(np.complex128)
    _check(gp.fft.fft(a), np.fft.fft(x64), dtype, n)
    _check(gp.fft.ifft(a, norm="ortho"), np.fft.ifft(x64, norm="ortho"), dtype, n)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_layouts_and_sizes(device, dtype):
    """Axes other than the last, strided views, cropping and zero padding, n-D, every norm."""
    rng = np.random.default_rng(1)
    x = _cx(rng, (4, 6, 10), dtype)
    a = gp.asarray(x, device=device)
    x64 = x.astype(np.complex128)
    _check(gp.fft.fftn(a, s=(5, 16), axes=(0, 2)), np.fft.fftn(x64, s=(5, 16), axes=(0, 2)),
           dtype, 80)
    _check(gp.fft.ifftn(a, axes=(1,), norm="forward"),
           np.fft.ifftn(x64, axes=(1,), norm="forward"), dtype, 6)
    _check(gp.fft.fft(a, n=3, axis=0), np.fft.fft(x64, n=3, axis=0), dtype, 3)
    _check(gp.fft.fft(a[:, ::2, 1:], axis=1), np.fft.fft(x64[:, ::2, 1:], axis=1), dtype, 3)
    _check(gp.fft.fftn(a), np.fft.fftn(x64), dtype, 240)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_real_transforms(device, dtype):
    """rfft/irfft with the output length even, odd, shorter and longer than the input's
    spectrum (Bluestein and the split for the Hermitian half too), hfft and ihfft."""
    rng = np.random.default_rng(2)
    r = rng.standard_normal((3, 7, 9)).astype(REAL[dtype])
    ar = gp.asarray(r, device=device)
    r64 = r.astype(np.float64)
    _check(gp.fft.rfft(ar), np.fft.rfft(r64), dtype, 9)
    _check(gp.fft.rfft(ar, n=16), np.fft.rfft(r64, n=16), dtype, 16)
    _check(gp.fft.rfftn(ar, s=(4, 12), axes=(0, 1)), np.fft.rfftn(r64, s=(4, 12), axes=(0, 1)),
           dtype, 48)
    _check(gp.fft.ihfft(ar), np.fft.ihfft(r64), dtype, 9)
    z = _cx(rng, (3, 7, 5), dtype)
    az = gp.asarray(z, device=device)
    z64 = z.astype(np.complex128)
    for n in (None, 9, 3, 20):
        _check(gp.fft.irfft(az, n=n), np.fft.irfft(z64, n=n), dtype, n or 8)
    _check(gp.fft.irfftn(az, s=(6, 11), axes=(0, 2), norm="ortho"),
           np.fft.irfftn(z64, s=(6, 11), axes=(0, 2), norm="ortho"), dtype, 66)
    _check(gp.fft.hfft(az, n=8), np.fft.hfft(z64, n=8), dtype, 8)
    big = _cx(rng, (2, 4097), dtype)   # irfft of length 8192: the split
    _check(gp.fft.irfft(gp.asarray(big, device=device)), np.fft.irfft(big.astype(np.complex128)),
           dtype, 8192)
    rb = rng.standard_normal((1, 12345)).astype(REAL[dtype])   # Bluestein past one pass
    _check(gp.fft.rfft(gp.asarray(rb, device=device)), np.fft.rfft(rb.astype(np.float64)),
           dtype, 12345)


def test_float16_input(device):
    h = np.random.default_rng(3).standard_normal((2, 16)).astype(np.float16)
    y = gp.fft.rfft(gp.asarray(h, device=device))
    assert y.dtype == gp.complex64
    _check(y, np.fft.rfft(h.astype(np.float64)), "complex64", 16)


def test_vulkan_transforms_stay_on_the_device(device):
    if not str(device).startswith("vulkan"):
        pytest.skip("the Vulkan kernels")
    x = gp.asarray(_cx(np.random.default_rng(4), (3, 100), "complex64"), device=device)
    gp.fft.fft(x)   # (the tables of length 100 are made and uploaded once)
    before = gp.device_stats(device)
    y = gp.fft.irfft(gp.fft.rfft(gp.fft.ifft(gp.fft.fft(x)).real))
    after = gp.device_stats(device)
    assert after["host_round_trips"] == before["host_round_trips"]
    assert after["downloads"] == before["downloads"]
    assert y.shape == (3, 100)


def test_vulkan_length_limit(device):
    if not str(device).startswith("vulkan"):
        pytest.skip("the Vulkan kernels")
    x = gp.zeros((1, 3), dtype=gp.complex64, device=device)
    with pytest.raises(NotImplementedError, match="fft: a transform of length 16777217"):
        gp.fft.fft(x, n=2**24 + 1)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_rfft_of_pairs(device, dtype):
    """rfft along the last axis with even lengths: (on Vulkan) a complex DFT of half the length
    on the values' pairs, then the split into the real transform's frequencies: the lengths
    through each path (one pass, Bluestein's half 5 and 4999, the four-step half 8192),
    cropping and zero padding of even inputs, a view starting mid-array, every norm."""
    rng = np.random.default_rng(7)
    real = REAL[dtype]
    for shape, n in (((3, 16), None), ((2, 10), None), ((1, 9998), None), ((2, 16384), None),
                     ((3, 12), 8), ((3, 6), 20), ((2, 3, 8), None)):
        x = rng.standard_normal(shape).astype(real)
        for norm in ("backward", "ortho", "forward"):
            _check(gp.fft.rfft(gp.asarray(x, device=device), n=n, norm=norm),
                   np.fft.rfft(x.astype(np.float64), n=n, norm=norm), dtype, n or shape[-1])
    x = rng.standard_normal((4, 18)).astype(real)
    a = gp.asarray(x, device=device)
    flat = x.ravel()
    b = gp.asarray(flat, device=device)
    for view, ref in ((a[1:, 2:], x[1:, 2:]), (a[:, 1:17], x[:, 1:17]), (a[2], x[2]),
                      (b[1:33], flat[1:33]), (b[2:34], flat[2:34])):   # mid-pair, on a pair
        _check(gp.fft.rfft(view), np.fft.rfft(ref.astype(np.float64)), dtype, ref.shape[-1])
    _check(gp.fft.rfftn(a), np.fft.rfftn(x.astype(np.float64)), dtype, 72)
    if str(device).startswith("vulkan"):   # (the pairs' kernel ran)
        assert any(k[0].startswith("fft_r2c") for k in a._buf.ctx.pipelines)
