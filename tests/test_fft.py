"""fft extension against numpy.fft (numpy computes in double: its result is cast to ours)."""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly import fft as gf
from grilly.testing import assert_close

FLOATS = [np.float32, np.float64]
CPLX = {np.float32: np.complex64, np.float64: np.complex128}


def rand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def close(actual, expected, like):
    tol = 1e-4 if np.dtype(like) in (np.float32, np.complex64) else 1e-10
    assert_close(actual, np.asarray(expected).astype(like), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_c2c(device, dtype, norm):
    c = CPLX[dtype]
    z = rand((3, 8), c)
    x = rand((3, 8), dtype)
    g = gp.asarray(z, device=device)
    close(gf.fft(g, norm=norm), np.fft.fft(z, norm=norm), c)
    close(gf.fft(gp.asarray(x, device=device), n=5, axis=0, norm=norm),
          np.fft.fft(x, n=5, axis=0, norm=norm), c)
    close(gf.ifft(g, n=11, norm=norm), np.fft.ifft(z, n=11, norm=norm), c)
    close(gf.fftn(g, norm=norm), np.fft.fftn(z, norm=norm), c)
    close(gf.ifftn(g, s=(4, 6), axes=(0, 1), norm=norm), np.fft.ifftn(z, s=(4, 6), axes=(0, 1), norm=norm), c)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("norm", ["backward", "ortho", "forward"])
def test_real(device, dtype, norm):
    c = CPLX[dtype]
    x = rand((4, 6), dtype)
    z = rand((4, 6), c)
    gx, gz = gp.asarray(x, device=device), gp.asarray(z, device=device)
    close(gf.rfft(gx, norm=norm), np.fft.rfft(x, norm=norm), c)
    close(gf.irfft(gz, norm=norm), np.fft.irfft(z, norm=norm), dtype)
    close(gf.irfft(gz, n=7, axis=0, norm=norm), np.fft.irfft(z, n=7, axis=0, norm=norm), dtype)
    close(gf.rfftn(gx, norm=norm), np.fft.rfftn(x, norm=norm), c)
    close(gf.irfftn(gz, s=(4, 9), axes=(0, 1), norm=norm),
          np.fft.irfftn(z, s=(4, 9), axes=(0, 1), norm=norm), dtype)
    close(gf.hfft(gz, norm=norm), np.fft.hfft(z, norm=norm), dtype)
    close(gf.ihfft(gx, n=5, norm=norm), np.fft.ihfft(x, n=5, norm=norm), c)


def test_dtypes_and_errors(device):
    x = gp.asarray(np.ones(4, np.float32), device=device)
    assert gf.fft(x).dtype == gp.complex64
    assert gf.irfft(gf.rfft(x)).dtype == gp.float32
    with pytest.raises(TypeError, match="rfft"):
        gf.rfft(gf.fft(x))
    # integers transform as float64 values, as NumPy's (tests/test_torch_hunt5.py)
    assert gf.fft(gp.asarray(np.ones(4, np.int64), device=device)).dtype == gp.complex128
    with pytest.raises(ValueError, match="n must be"):
        gf.fft(x, n=0)
    with pytest.raises(ValueError, match="norm"):
        gf.fft(x, norm="bad")
    with pytest.raises(IndexError):
        gf.fft(x, axis=2)


@pytest.mark.parametrize("n", [1, 7, 8])
def test_freq_shift(device, n):
    close(gf.fftfreq(n, d=0.5, device=device), np.fft.fftfreq(n, 0.5), np.float64)
    close(gf.rfftfreq(n, dtype=gp.float32, device=device), np.fft.rfftfreq(n), np.float32)
    assert gf.fftfreq(n, device=device).device == device
    x = rand((n, 5), np.float64)
    g = gp.asarray(x, device=device)
    close(gf.fftshift(g), np.fft.fftshift(x), np.float64)
    close(gf.ifftshift(g, axes=1), np.fft.ifftshift(x, axes=1), np.float64)
    close(gf.ifftshift(gf.fftshift(g, axes=(0,)), axes=[0]), x, np.float64)
    with pytest.raises(TypeError):
        gf.fftfreq(n, dtype=gp.int32)


@given(n=st.integers(1, 40))
def test_roundtrip_property(n):
    x = rand((n,), np.float64, n)
    g = gp.asarray(x)
    close(gf.irfft(gf.rfft(g), n=n), x, np.float64)
    close(gf.ifft(gf.fft(g)), x.astype(np.complex128), np.complex128)
