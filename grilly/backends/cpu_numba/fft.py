"""CPU kernels: fft. Numba cannot compile FFTs, so these call scipy.fft on the host buffers
(scipy keeps single precision: float32/complex64 in, complex64/float32 out)."""
from __future__ import annotations

import numpy as np
from numba import config


class _LazyScipyFFT:
    # importing scipy.fft costs ~0.4 s; pay it on the first transform, not at start-up
    def __getattr__(self, name):
        import scipy.fft

        return getattr(scipy.fft, name)


sfft = _LazyScipyFFT()

_WORKERS = config.NUMBA_NUM_THREADS


def _prep(buf):
    # scipy has no half-precision transform
    return buf.astype(np.float32) if buf.dtype == np.float16 else buf


def fft_c2c(buf, s: tuple, axes: tuple, norm: str, inverse: bool):
    """Complex n-D (inverse) DFT over ``axes``, each cropped/zero-padded to ``s``."""
    f = sfft.ifftn if inverse else sfft.fftn
    return np.ascontiguousarray(f(_prep(buf), s=s, axes=axes, norm=norm, workers=_WORKERS))


def fft_r2c(buf, s: tuple, axes: tuple, norm: str):
    """Real-input n-D DFT; the last of ``axes`` keeps s[-1] // 2 + 1 frequencies."""
    return np.ascontiguousarray(sfft.rfftn(_prep(buf), s=s, axes=axes, norm=norm, workers=_WORKERS))


def fft_c2r(buf, s: tuple, axes: tuple, norm: str):
    """Inverse of fft_r2c: real output whose sizes along ``axes`` are ``s``."""
    return np.ascontiguousarray(sfft.irfftn(_prep(buf), s=s, axes=axes, norm=norm, workers=_WORKERS))


def fft_roll(buf, shifts: tuple, axes: tuple):
    """A copy of ``buf`` rolled by ``shifts`` along ``axes`` (elements wrap around)."""
    return np.roll(buf, shifts, axes) if axes else buf.copy()


KERNELS = {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r, "fft_roll": fft_roll}
