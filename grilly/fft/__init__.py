"""The Array API fft extension: transforms are backend kernels (fft_c2c, fft_r2c, fft_c2r,
fft_roll); hfft/ihfft, the two-axis forms (fft2, ...), hfftn/ihfftn and the frequency helpers
are composed. torch.fft's spellings work too: ``dim=`` for ``axis``/``axes`` (dispatch hands a
call with ``dim`` to ``_torch_form``) and ``norm=None`` (NumPy's too) for "backward"."""
from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Literal

from ..array import dispatch
from ..array import dtypes as dt
from ..array.array import Array
from ..array.core import (as_compute_array, call, check_array, normalize_axis, resolve_device,
                          wrap)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft", "ifft2",
           "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2", "irfftn", "rfft",
           "rfft2", "rfftfreq", "rfftn"]

_NORMS = ("backward", "ortho", "forward")
_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}
Norm = Literal["backward", "ortho", "forward"] | None


def _complex_of(d: dt.DType) -> dt.DType:
    return dt.complex64 if d in (dt.float16, dt.float32, dt.complex64) else dt.complex128


def _input(x, op: str, real: bool) -> Array:
    check_array(x, op)
    if x._dtype.kind in "biu":
        # integers and bools transform as the default floating dtype's values, as NumPy's and
        # torch's fft take them (the elementwise functions' int -> float rule)
        x = dispatch.ns.astype(x, dt.default_float(x._device))
    if real and x._dtype.kind != "f":
        raise TypeError(f"{op}: dtype {x._dtype.name} is not supported; expected a real "
                        "floating-point array")
    if x._dtype.kind not in "fc":
        raise TypeError(f"{op}: dtype {x._dtype.name} is not supported; expected a "
                        "floating-point array")
    if x.ndim == 0:
        raise ValueError(f"{op}: x must have at least one dimension")
    return x


def _norm(norm, op: str) -> str:
    if norm is None:   # NumPy's and torch's default spelled out
        return "backward"
    if norm not in _NORMS:
        raise ValueError(f"{op}: norm must be one of {_NORMS}, got {norm!r}")
    return norm


def _index(v, op: str, arg: str) -> int:
    """``v`` as a Python int: an int, a NumPy integer or a 0-d integer Array (``__index__``), as
    NumPy's and torch's fft take them; not a bool."""
    try:
        if isinstance(v, bool):
            raise TypeError
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}: {arg} must be an int, got {v!r}") from None


def _ints(seq, op: str, arg: str) -> tuple:
    """A sequence of ints (a tuple, list, shape or 1-d integer array) as a tuple."""
    if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
        raise TypeError(f"{op}: {arg} must be a sequence of ints, got {seq!r}")
    return tuple(_index(v, op, arg) for v in seq)


def _size(n, op: str, arg: str) -> int:
    n = _index(n, op, arg)
    if n < 1:
        raise ValueError(f"{op}: {arg} must be at least 1, got {n}")
    return n


def _plan(x: Array, s, axes, op: str, last=None, real: bool = False) -> tuple[tuple, tuple]:
    """Normalized (s, axes); ``last(m)`` gives the default size of the last axis (c2r);
    ``real``: a real transform (r2c, c2r), which needs at least one axis."""
    if s is not None:
        s = _ints(s, op, "s")
    if axes is None:
        if s is not None and len(s) > x.ndim:
            raise ValueError(f"{op}: s has {len(s)} sizes but x has only {x.ndim} dimensions")
        axes = tuple(range(x.ndim)) if s is None else tuple(range(x.ndim - len(s), x.ndim))
    axes = tuple(normalize_axis(a, x.ndim, op, "axes") for a in _ints(axes, op, "axes"))
    if len(set(axes)) != len(axes):
        raise ValueError(f"{op}: repeated axis in axes={axes}")
    if s is None:
        s = [x.shape[a] for a in axes]
        if last is not None and axes:
            s[-1] = last(x.shape[axes[-1]])
    else:
        if len(s) != len(axes):
            raise ValueError(f"{op}: s must be a sequence with one size per axis in {axes}")
        s = [x.shape[a] if v == -1 else _size(v, op, "s") for v, a in zip(s, axes)]
    for v in s:
        if v < 1:
            raise ValueError(f"{op}: invalid number of data points ({v}) along an axis")
    if real and not axes:
        # (the real transforms halve their last axis: there must be one; it was an IndexError)
        raise ValueError(f"{op}: axes must name at least one axis, got ()")
    return tuple(s), axes


def _c2c(x, s, axes, norm, op, inverse) -> Array:
    x = _input(x, op, False)
    s, axes = _plan(x, s, axes, op)
    c = _complex_of(x._dtype)
    xc = as_compute_array(x, c, x._device, op)
    return wrap(call(x._device, "fft_c2c", xc, s, axes, _norm(norm, op), inverse), c, x._device)


def _r2c(x, s, axes, norm, op) -> Array:
    x = _input(x, op, True)
    s, axes = _plan(x, s, axes, op, real=True)
    return wrap(call(x._device, "fft_r2c", x, s, axes, _norm(norm, op)),
                _complex_of(x._dtype), x._device)


def _c2r(x, s, axes, norm, op) -> Array:
    x = _input(x, op, False)
    s, axes = _plan(x, s, axes, op, last=lambda m: 2 * (m - 1), real=True)
    c = _complex_of(x._dtype)
    xc = as_compute_array(x, c, x._device, op)
    return wrap(call(x._device, "fft_c2r", xc, s, axes, _norm(norm, op)),
                dt.complex_to_real(c), x._device)


def fft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """One-dimensional discrete Fourier transform along axis."""
    return _c2c(x, None if n is None else (_size(n, "fft", "n"),), (axis,), norm, "fft", False)


def ifft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """One-dimensional inverse discrete Fourier transform along axis."""
    return _c2c(x, None if n is None else (_size(n, "ifft", "n"),), (axis,), norm, "ifft", True)


def fftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
         norm: Norm = "backward") -> Array:
    """n-dimensional discrete Fourier transform over axes."""
    return _c2c(x, s, axes, norm, "fftn", False)


def ifftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> Array:
    """n-dimensional inverse discrete Fourier transform over axes."""
    return _c2c(x, s, axes, norm, "ifftn", True)


def rfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """One-dimensional DFT of real input (non-negative frequencies only)."""
    return _r2c(x, None if n is None else (_size(n, "rfft", "n"),), (axis,), norm, "rfft")


def irfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """Inverse of rfft: real output of length n (default 2 * (m - 1))."""
    return _c2r(x, None if n is None else (_size(n, "irfft", "n"),), (axis,), norm, "irfft")


def rfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> Array:
    """n-dimensional DFT of real input (last axis halved)."""
    return _r2c(x, s, axes, norm, "rfftn")


def irfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> Array:
    """Inverse of rfftn: real output of sizes s."""
    return _c2r(x, s, axes, norm, "irfftn")


def hfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """DFT of a signal with Hermitian symmetry (real spectrum of length n)."""
    x = _input(x, "hfft", False)
    # checked here so that a bad n or axis names hfft, not the irfft it calls
    _plan(x, None if n is None else (_size(n, "hfft", "n"),), (axis,), "hfft", real=True)
    ns = dispatch.ns
    cd = _complex_of(x._dtype)
    # namespace calls throughout, so autograd records them (irfft and conj have rules)
    c = x if x._dtype is cd else ns.astype(x, cd)
    return irfft(ns.conj(c), n=n, axis=axis, norm=_SWAP[_norm(norm, "hfft")])


def ihfft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward") -> Array:
    """Inverse of hfft: the Hermitian half-spectrum of real input."""
    x = _input(x, "ihfft", True)
    _plan(x, None if n is None else (_size(n, "ihfft", "n"),), (axis,), "ihfft", real=True)
    return dispatch.ns.conj(rfft(x, n=n, axis=axis, norm=_SWAP[_norm(norm, "ihfft")]))


def fft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
         norm: Norm = "backward") -> Array:
    """Two-dimensional discrete Fourier transform (fftn over the last two axes)."""
    return dispatch.ns.fft.fftn(x, s=s, axes=axes, norm=norm)


def ifft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: Norm = "backward") -> Array:
    """Two-dimensional inverse discrete Fourier transform."""
    return dispatch.ns.fft.ifftn(x, s=s, axes=axes, norm=norm)


def rfft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: Norm = "backward") -> Array:
    """Two-dimensional DFT of real input (last axis halved)."""
    return dispatch.ns.fft.rfftn(x, s=s, axes=axes, norm=norm)


def irfft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: Norm = "backward") -> Array:
    """Inverse of rfft2: real output of sizes s."""
    return dispatch.ns.fft.irfftn(x, s=s, axes=axes, norm=norm)


def hfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
          norm: Norm = "backward") -> Array:
    """n-dimensional DFT of a Hermitian-symmetric signal given as its half (torch.fft.hfftn):
    the real spectrum, last axis of size s[-1] (default 2 * (m - 1))."""
    x = _input(x, "hfftn", False)
    _plan(x, s, axes, "hfftn", real=True)   # (errors name hfftn, not irfftn)
    ns = dispatch.ns
    cd = _complex_of(x._dtype)
    # the full signal's DFT is real, so it equals its conjugate: irfftn of conj(x), rescaled
    c = x if x._dtype is cd else ns.astype(x, cd)
    return ns.fft.irfftn(ns.conj(c), s=s, axes=axes, norm=_SWAP[_norm(norm, "hfftn")])


def ihfftn(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] | None = None,
           norm: Norm = "backward") -> Array:
    """Inverse of hfftn: the Hermitian half-spectrum of real input (torch.fft.ihfftn)."""
    x = _input(x, "ihfftn", True)
    _plan(x, s, axes, "ihfftn", real=True)
    ns = dispatch.ns
    return ns.conj(ns.fft.rfftn(x, s=s, axes=axes, norm=_SWAP[_norm(norm, "ihfftn")]))


def hfft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
          norm: Norm = "backward") -> Array:
    """hfftn over the last two axes (torch.fft.hfft2)."""
    return dispatch.ns.fft.hfftn(x, s=s, axes=axes, norm=norm)


def ihfft2(x: Array, /, *, s: Sequence[int] | None = None, axes: Sequence[int] = (-2, -1),
           norm: Norm = "backward") -> Array:
    """ihfftn over the last two axes (torch.fft.ihfft2)."""
    return dispatch.ns.fft.ihfftn(x, s=s, axes=axes, norm=norm)


def _freq_dtype(dtype, op: str) -> dt.DType:
    d = dt.float64 if dtype is None else dt.as_dtype(dtype, op)
    if d.kind != "f":
        raise TypeError(f"{op}: dtype must be a real floating-point dtype, got {d.name}")
    return d


def fftfreq(n: int, /, *, d: float = 1.0, dtype: dt.DType | None = None, device=None) -> Array:
    """Sample frequencies of an n-point DFT with sample spacing d."""
    ns = dispatch.ns
    n = _size(n, "fftfreq", "n")
    fd = _freq_dtype(dtype, "fftfreq")
    dev = resolve_device(device)
    i = ns.arange(n, dtype=dt.int64, device=dev)
    # indices from (n + 1) // 2 on are the negative frequencies i - n
    neg = as_compute_array(ns.greater_equal(i, (n + 1) // 2), dt.int64, dev, "fftfreq")
    k = ns.subtract(i, ns.multiply(neg, n))
    return ns.divide(as_compute_array(k, fd, dev, "fftfreq"), float(d * n))


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: dt.DType | None = None, device=None) -> Array:
    """Non-negative sample frequencies of an n-point real DFT with sample spacing d."""
    ns = dispatch.ns
    n = _size(n, "rfftfreq", "n")
    fd = _freq_dtype(dtype, "rfftfreq")
    return ns.divide(ns.arange(n // 2 + 1, dtype=fd, device=resolve_device(device)), float(d * n))


def _shift(x, axes, op: str, sign: int) -> Array:
    check_array(x, op)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (str, bytes)) or not (hasattr(axes, "__iter__")
                                               or hasattr(type(axes), "__index__")):
        raise TypeError(f"{op}: axes must be an int, a sequence of ints or None, got {axes!r}")
    elif getattr(axes, "ndim", None) == 0 or not hasattr(axes, "__iter__"):
        axes = (_index(axes, op, "axes"),)   # one axis: an int, NumPy integer, 0-d array
    axes = tuple(normalize_axis(a, x.ndim, op, "axes") for a in _ints(axes, op, "axes"))
    shifts = tuple(sign * (x.shape[a] // 2) for a in axes)
    return wrap(call(x._device, "fft_roll", x, shifts, axes), x._dtype, x._device)


def fftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Shift the zero-frequency component to the center of the spectrum."""
    return _shift(x, axes, "fftshift", 1)


def ifftshift(x: Array, /, *, axes: int | Sequence[int] | None = None) -> Array:
    """Inverse of fftshift."""
    return _shift(x, axes, "ifftshift", -1)

_ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _torch_form(name: str):
    """torch.fft's call of ``name``: ``dim`` (an int, or a sequence for the n-axis forms) is
    NumPy's ``axis``/``axes``."""
    key = "axis" if name in _ONE_AXIS else "axes"

    def form(x, *args, dim=None, **kw):
        for k in ("keepdim", "unbiased"):   # dispatch's other torch keys: not fft's
            if k in kw:
                raise TypeError(f"{name}() got an unexpected keyword argument {k!r}")
        if key in kw:
            raise TypeError(f"{name}: got both {key} and dim (the same parameter)")
        if dim is not None:
            if key == "axes" and isinstance(dim, int) and not isinstance(dim, bool):
                dim = (dim,)
            kw[key] = dim
        return dispatch.OPS["fft." + name](x, *args, **kw)
    return form


dispatch.TORCH_FORMS.update({"fft." + n: _torch_form(n) for n in __all__
                             if n not in ("fftfreq", "rfftfreq")})
dispatch.export(globals(), "fft.")
