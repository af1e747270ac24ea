"""fft_c2c, fft_r2c and fft_c2r of the Vulkan backend (docs/kernels/linalg.md; shader
shaders/linalg/fft.comp): the transforms stay on the device.

An n-D transform is one 1-D pass per axis, each over the (pre, n, post) view of a contiguous
buffer (no transposing copies). A pass of length L = 2^t <= SMAX (what fits the device's
shared memory: 4096 complex64 elements, 2048 complex128 on NVIDIA; half on lavapipe) is one
dispatch of Stockham passes of radix 8 in registers; up to SMAX^2 it is two (the
four-step split L = n1 * n2: n2 transforms of length n1 with the twiddles W_L^(j2 k1) applied
on the way out, then n1 of length n2). Any other length n is Bluestein's: the DFT as a
circular convolution of length m = 2^t >= 2n - 1 with the chirp w_j = exp(-i pi j^2 / n),
two passes of length m (the chirp and the convolving spectrum, divided by m, are applied by
the first pass's load and store, the chirp again by the second's store).

Every table (the stage and four-step twiddles, the chirps, the convolving spectra) is computed
on the host in float64 from exact arguments (k / L, j^2 mod 2n) and rounded once, per device,
dtype and length, and kept (a cache bounded in lengths and bytes). The error is an FFT's:
about eps * log2(L) relative to the transform's norm (tests/test_fft_device.py).
"""
from __future__ import annotations

import math
import struct

import numpy as np

from .. import dtypes as _dt
from .kernels import astype, copy, from_host, keep_bounded, new_buffer
from .memory import Buffer, contiguous_strides

_WG = 256
LOGS_MAX = 12   # the shader's registers hold SMAX / 256 <= 16 elements a thread
LOGS_MIN = 10
_PC = struct.Struct("<19I2i5I2I")
_PC_R2C = struct.Struct("<6I2I")
_PLANS_MAX = 64   # tables kept per device
# and their bytes at most (beyond the one just made): Bluestein's tables of a length near 10^6
# are 50 MB, and 20 such lengths held 1 GB of device memory until the count bound cleared them
PLAN_BYTES = 256 << 20
_LIMIT = 2**31    # elements: the shader indexes in 32 bits
_NONE = -1
# workgroups a dispatch launches at most (each strides over the row groups past it: a grid
# of more than 65535 is not portable); a module constant so that tests can lower it
GROUPS_MAX = 65535


def _complex_of(dtype):
    """The complex dtype a transform of ``dtype`` computes in."""
    return _dt.complex128 if dtype.name in ("float64", "complex128") else _dt.complex64


def _logt(ctx, cdt) -> int:
    """log2 of the longest transform one workgroup can hold: TMAX elements and the shader's
    padding (one per 16) in the device's shared memory (4096 complex64 / 2048 complex128 in
    NVIDIA's 48 KB, half that in lavapipe's 32 KB)."""
    # (an element costs 17/16 of its size: rounding that down to itemsize for complex64 let
    # 4096 elements and their padding, 34816 bytes, claim lavapipe's 32768)
    fit = ctx.phys.max_shared * 16 // (cdt.itemsize * 17)
    return min(LOGS_MAX, fit.bit_length() - 1)


def _logs(log_l: int, logt: int) -> int:
    """The workgroup's size (log2 elements) for rows of 2^log_l: the row's own length, at least
    1024 elements (H200, one 4M-element complex64 pass: rows of 1024 in workgroups of 4096
    took 89 us, of 1024 56 us, of 512 77 us as a four-step pair; larger workgroups hold fewer
    of themselves per multiprocessor)."""
    return max(min(LOGS_MIN, logt), min(log_l, logt))


def _unit(num: np.ndarray, den: int) -> np.ndarray:
    """exp(-2 pi i num / den) in float64, from the exact fraction num / den reduced to [0, 1)."""
    f = (num % den) / den   # (num < 2^53, den a power of two or small: exact or one rounding)
    a = -2.0 * np.pi * f
    return np.cos(a) + 1j * np.sin(a)


class _Plan:
    """The device tables of 1-D transforms of one length n and dtype (one buffer: the shader
    reads them through one binding), and where each starts."""

    def __init__(self, ctx, cdt, n: int):
        logt = self.logt = _logt(ctx, cdt)
        smax = 1 << logt
        pow2 = n & (n - 1) == 0
        self.m = n if pow2 else 1 << (2 * n - 2).bit_length()   # Bluestein's length
        if self.m > smax * smax:
            raise NotImplementedError(
                f"fft: a transform of length {n} along one axis is not supported on Vulkan "
                f"device {ctx.phys.name!r} ({cdt.name}: up to {smax * smax} when a power of "
                f"two, {smax * smax // 2} otherwise); use the cpu device")
        parts = [_unit(np.arange(smax), smax)]   # pass twiddles W_TMAX^k
        at = smax
        self.tw = None
        if self.m > smax:   # four-step twiddles of W_m: low and high parts of the exponent
            self.tw = (at, at + smax)
            parts += [_unit(np.arange(smax), self.m),
                      _unit(np.arange(self.m // smax) * smax, self.m)]
            at += smax + self.m // smax
        self.bluestein = None
        if not pow2:
            j = np.arange(n, dtype=np.int64)
            q = (j * j) % (2 * n)   # exp(-i pi j^2 / n) = W_(2n)^(j^2 mod 2n)
            w = _unit(q, 2 * n)
            offs = []
            for chirp in (w, np.conj(w)):   # forward, inverse
                b = np.zeros(self.m, np.complex128)
                b[:n] = np.conj(chirp)
                b[self.m - n + 1:] = np.conj(chirp[1:][::-1])
                spec = np.fft.fft(b) / self.m   # (the second pass's 1/m)
                offs.append((at, at + n))
                parts += [chirp, spec]
                at += n + self.m
            self.bluestein = offs   # per direction: (chirp offset, spectrum offset)
        self.tables = from_host(ctx, np.concatenate(parts).astype(cdt.np), cdt)
        self.nbytes = self.tables.size * cdt.itemsize


def _plan(ctx, cdt, n: int) -> _Plan:
    plans = ctx.__dict__.setdefault("_fft_plans", {})
    p = plans.get((cdt.name, n))
    if p is None:
        p = _Plan(ctx, cdt, n)
        if sum(q.nbytes for q in plans.values()) + p.nbytes > PLAN_BYTES:
            plans.clear()   # (tables still in use stay alive: the recorder holds them)
        p = keep_bounded(plans, (cdt.name, n), p, _PLANS_MAX)
    return p


def _scale_bits(cdt, scale: float) -> tuple:
    if cdt.name == "complex128":
        return struct.unpack("<2I", struct.pack("<d", scale))
    return struct.unpack("<I", struct.pack("<f", scale)) + (0,)


def _dispatch(ctx, cdt, dst: Buffer, src: Buffer, plan: _Plan, log_l: int, rows: int, mid: int,
              inner: int, inp: tuple, gin: tuple, nvalid: int, herm_n: int, out: tuple,
              gout: tuple, nout: int, pre: int, post: int, tw: bool, inv: bool,
              scale: float) -> None:
    """One dispatch of fft.comp (its header says what each argument means)."""
    logs = _logs(log_l, plan.logt)
    per = (1 << logs) >> log_l
    groups = -(-rows // per)
    tw_log, tw_lo, tw_hi = ((plan.m.bit_length() - 1, *plan.tw) if tw else (0, 0, 0))
    pc = _PC.pack(rows, log_l, mid, inner, src.offset + inp[0], inp[1], inp[2], inp[3], *gin,
                  nvalid, dst.offset + out[0], out[1], out[2], out[3], *gout, nout, herm_n,
                  pre, post, tw_log, tw_lo, tw_hi, plan.tables.offset, int(inv),
                  *_scale_bits(cdt, scale))
    key = (f"fft_{cdt.name}", (logs, 1, plan.logt))   # (constant 1: common.glsl's NDIM)
    pipe = ctx.pipelines.get(key) or ctx.pipeline(*key)
    ctx.recorder.dispatch_allocs(pipe, [dst.alloc, src.alloc, plan.tables.alloc], pc,
                                 min(groups, GROUPS_MAX) * _WG, 1)


def _pow2_pass(ctx, cdt, dst, src, plan, length: int, pre_rows: int, post: int, inp: tuple,
               out: tuple, nvalid: int, herm_n: int, nout: int, pre: int, post_t: int,
               inv: bool, scale: float) -> None:
    """Transform rows (b, i) of length ``length`` (a power of two): element g of row (b, i) at
    src + inp[0] + b inp[1] + i inp[2] + g inp[3], result k to the same form in ``out``."""
    t = length.bit_length() - 1
    if t <= plan.logt:
        _dispatch(ctx, cdt, dst, src, plan, t, pre_rows * post, 1, post, inp, (1, 0), nvalid,
                  herm_n, out, (1, 0), nout, pre, post_t, False, inv, scale)
        return
    t2 = (t + 1) // 2
    n1, n2 = 1 << (t - t2), 1 << t2
    # the first half's results, row (b, i) as an (n1, n2) block: k1 * n2 + j2
    tmp = new_buffer(ctx, (pre_rows * post * length,), cdt)
    blk = (0, post * length, length, 1)
    _dispatch(ctx, cdt, tmp, src, plan, t - t2, pre_rows * n2 * post, n2, post, inp, (n2, 1),
              nvalid, herm_n, blk, (n2, 1), length, pre, _NONE, True, inv, 1.0)
    _dispatch(ctx, cdt, dst, tmp, plan, t2, pre_rows * n1 * post, n1, post, blk, (1, n2),
              length, 0, out, (n1, 1), nout, _NONE, post_t, False, inv, scale)


def _axis_pass(src: Buffer, axis: int, n: int, inv: bool, scale: float, herm: bool = False,
               keep: int | None = None) -> Buffer:
    """The 1-D DFT of length ``n`` along ``axis`` of contiguous complex ``src`` (cropped or
    zero-padded to n; ``herm``: src holds a Hermitian half spectrum), times ``scale``; the
    result keeps the first ``keep`` (default n) entries along the axis."""
    ctx, cdt = src.ctx, src.dtype
    shape = src.shape
    n_in = shape[axis]
    keep = n if keep is None else keep
    out_shape = shape[:axis] + (keep,) + shape[axis + 1:]
    pre, post = math.prod(shape[:axis]), math.prod(shape[axis + 1:])
    plan = _plan(ctx, cdt, n)
    if max(src.size, pre * post * plan.m) >= _LIMIT:
        raise ValueError(f"fft: {max(src.size, pre * post * plan.m)} elements exceed the Vulkan "
                         f"backend's 2**31 limit")
    dst = new_buffer(ctx, out_shape, cdt)
    if dst.size == 0:
        return dst
    inp = (0, n_in * post, 1, post)
    out = (0, keep * post, 1, post)
    herm_n = n if herm else 0
    nvalid = n_in if herm else min(n_in, n)
    if plan.bluestein is None:
        _pow2_pass(ctx, cdt, dst, src, plan, n, pre, post, inp, out, nvalid, herm_n, keep,
                   _NONE, _NONE, inv, scale)
        return dst
    m = plan.m
    chirp, spec = plan.bluestein[int(inv)]
    conv = new_buffer(ctx, (pre * post * m,), cdt)
    rows = (0, post * m, 1, post)   # conv as (pre, m, post)
    _pow2_pass(ctx, cdt, conv, src, plan, m, pre, post, inp, rows, nvalid, herm_n, m,
               chirp, spec, False, 1.0)
    _pow2_pass(ctx, cdt, dst, conv, plan, m, pre, post, rows, out, m, 0, keep, _NONE, chirp,
               True, scale)
    return dst


def _scale(norm: str, n: int, inverse: bool) -> float:
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _contiguous_complex(buf: Buffer, cdt) -> Buffer:
    if buf.dtype is not cdt:
        return astype(buf, cdt)
    return buf if buf.is_contiguous() else copy(buf)


def _checked(op: str, buf: Buffer):
    cdt = _complex_of(buf.dtype)
    if cdt.name == "complex128" and not buf.ctx.phys.features.get("shaderFloat64", False):
        raise NotImplementedError(f"{op}: complex128 needs shaderFloat64, which Vulkan device "
                                  f"{buf.ctx.phys.name!r} lacks; use complex64 or the cpu device")
    return cdt


def fft_c2c(buf: Buffer, s: tuple, axes: tuple, norm: str, inverse: bool) -> Buffer:
    """Complex n-D (inverse) DFT over ``axes``, each cropped/zero-padded to ``s``."""
    x = _contiguous_complex(buf, _checked("fft_c2c", buf))
    if not axes:
        return copy(x)
    for n, a in zip(s, axes):
        x = _axis_pass(x, a, n, inverse, _scale(norm, n, inverse))
    return x


def _pairs(buf: Buffer, cdt, axis: int, n: int) -> Buffer | None:
    """``buf``'s real values along its last axis, ``axis``, as complex pairs x[2k] + i x[2k+1]
    (a view of the same memory), or None where they are not such pairs: an odd length n or
    input length, another axis, a layout that is not contiguous or starts mid-pair."""
    shape = buf.shape
    if n % 2 or axis != len(shape) - 1 or shape[axis] % 2 or not buf.is_contiguous():
        return None
    real = _dt.complex_to_real(cdt)
    if buf.dtype is not real:
        buf = astype(buf, real)   # (float16 input: computed in float32)
    if buf.offset % 2:
        return None
    view = shape[:-1] + (shape[-1] // 2,)
    return Buffer(buf.ctx, buf.alloc, buf.offset // 2, view, contiguous_strides(view), cdt)


def _r2c_pairs(z: Buffer, n: int, scale: float) -> Buffer:
    """The real DFT of length n = 2N (its N + 1 frequencies) from z, the real input as N
    complex pairs along its last axis: a complex DFT of length N, then fft_r2c.comp."""
    ctx, cdt = z.ctx, z.dtype
    half = n // 2
    zf = _axis_pass(z, len(z.shape) - 1, half, False, 1.0)
    out = new_buffer(ctx, z.shape[:-1] + (half + 1,), cdt)
    rows = math.prod(z.shape[:-1])
    if out.size == 0:
        return out
    tables = ctx.__dict__.setdefault("_fft_r2c", {})
    tw = tables.get((cdt.name, n))
    if tw is None:   # W_n^k, k = 0..N
        tw = keep_bounded(tables, (cdt.name, n), from_host(
            ctx, _unit(np.arange(half + 1), n).astype(cdt.np), cdt), _PLANS_MAX)
    pc = _PC_R2C.pack(rows, half, zf.offset, out.offset, tw.offset, 0,
                      *_scale_bits(cdt, scale))
    key = (f"fft_r2c_{cdt.name}", ())
    pipe = ctx.pipelines.get(key) or ctx.pipeline(*key)
    ctx.recorder.dispatch_allocs(pipe, [out.alloc, zf.alloc, tw.alloc], pc,
                                 min(out.size, GROUPS_MAX * _WG), 1)
    return out


def fft_r2c(buf: Buffer, s: tuple, axes: tuple, norm: str) -> Buffer:
    """Real-input n-D DFT; the last of ``axes`` keeps s[-1] // 2 + 1 frequencies (transformed
    first: the other passes then run on half the data). An even length along the array's last
    axis is a complex DFT of half the length on the values' pairs (no conversion to complex)."""
    cdt = _checked("fft_r2c", buf)
    n, scale = s[-1], _scale(norm, s[-1], False)
    z = _pairs(buf, cdt, axes[-1], n)
    if z is not None:
        x = _r2c_pairs(z, n, scale)
    else:
        x = _axis_pass(_contiguous_complex(buf, cdt), axes[-1], n, False, scale,
                       keep=n // 2 + 1)
    for n, a in zip(s[:-1], axes[:-1]):
        x = _axis_pass(x, a, n, False, _scale(norm, n, False))
    return x


def fft_c2r(buf: Buffer, s: tuple, axes: tuple, norm: str) -> Buffer:
    """Inverse of fft_r2c: real output whose sizes along ``axes`` are ``s``; the last axis's
    input is a Hermitian half spectrum (its imaginary parts at 0 and n / 2 are ignored, as
    NumPy's)."""
    cdt = _checked("fft_c2r", buf)
    x = _contiguous_complex(buf, cdt)
    for n, a in zip(s[:-1], axes[:-1]):
        x = _axis_pass(x, a, n, True, _scale(norm, n, True))
    n = s[-1]
    x = _axis_pass(x, axes[-1], n, True, _scale(norm, n, True), herm=True)
    return astype(x, _dt.complex_to_real(cdt))


KERNELS: dict = {"fft_c2c": fft_c2c, "fft_r2c": fft_r2c, "fft_c2r": fft_c2r}
