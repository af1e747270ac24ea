"""The im2col/col2im kernels on strided views, with max-pool fills and every float dtype, per
device (tests/test_conv_fast.py covers contiguous inputs and the conv/pool VJPs)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import grilly as gp
from grilly.array import conv as C
from grilly.testing import assert_close

fixture_ok = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
GEOM = ((3, 2), (2, 1), (1, 2), (1, 2, 0, 3))


def _out(kernel, stride, dilation, pads, size):
    return tuple((size[a] + pads[2 * a] + pads[2 * a + 1] - dilation[a] * (kernel[a] - 1) - 1)
                 // stride[a] + 1 for a in (0, 1))


def _slices(kernel, stride, dilation, out):
    """Window (i, j)'s strided slice of the padded image, kw-major."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, stride, dilation, out
    return [(slice(i * dh, i * dh + sh * (ho - 1) + 1, sh), slice(j * dw, j * dw + sw * (wo - 1) + 1, sw))
            for j in range(kw) for i in range(kh)]


def _ref_im2col(x, kernel, stride, dilation, pads, fill, out):
    xp = np.pad(x, ((0, 0), (0, 0), pads[:2], pads[2:]), constant_values=fill)
    return np.stack([xp[:, :, a, b] for a, b in _slices(kernel, stride, dilation, out)], axis=2)


def _ref_col2im(g, kernel, stride, dilation, pads, size):
    pt, pb, pl, pr = pads
    y = np.zeros(g.shape[:2] + (size[0] + pt + pb, size[1] + pl + pr), g.dtype)
    for k, (a, b) in enumerate(_slices(kernel, stride, dilation, g.shape[3:])):
        y[:, :, a, b] += g[:, :, k]
    return y[:, :, pt:pt + size[0], pl:pl + size[1]]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("cm", [False, True])
def test_strided_views_and_lowest_fill(device, dtype, cm):
    """A permuted, reversed, stepped image and a transposed cotangent: no copy is needed, and
    the max-pool fill (the dtype's lowest finite value) comes out exactly."""
    rng = np.random.default_rng(2)
    base = rng.standard_normal((9, 3, 2, 20)).astype(dtype)
    x = gp.permute_dims(gp.asarray(base, device=device), (2, 1, 0, 3))[:, :, ::-1, 1::2]
    xh = base.transpose(2, 1, 0, 3)[:, :, ::-1, 1::2]
    size = xh.shape[2:]
    out = _out(*GEOM, size)
    fill = -float(np.finfo(dtype).max)
    ref = _ref_im2col(xh, *GEOM, fill, out)
    ref = ref.transpose(1, 2, 0, 3, 4) if cm else ref
    assert_close(C.im2col(x, *GEOM, fill, out, cm), ref, rtol=0, atol=0)
    g = rng.standard_normal(ref.shape[::-1]).astype(dtype)
    gv = gp.permute_dims(gp.asarray(g, device=device), (4, 3, 2, 1, 0))
    gt = g.transpose(4, 3, 2, 1, 0)
    want = _ref_col2im((gt.transpose(2, 0, 1, 3, 4) if cm else gt).astype(np.float64), *GEOM, size)
    tol = {"float16": 2e-3, "float32": 1e-6, "float64": 1e-13}[dtype]
    back = C.col2im(gv, *GEOM, size, cm)
    assert back.dtype == getattr(gp, dtype)
    assert_close(back, want.astype(dtype), rtol=tol, atol=tol)


def test_kernels_match_cpu_bitwise(device):
    """col2im sums each pixel's windows in the CPU kernel's order, so float32 results are equal;
    large enough that the shader's grid-stride loop takes several turns on small devices."""
    rng = np.random.default_rng(3)
    geom = ((3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
    x = rng.standard_normal((8, 16, 64, 64)).astype(np.float32)
    out = _out(*geom, (64, 64))
    cols = C.im2col(gp.asarray(x, device=device), *geom, 0.0, out, True)
    assert_close(cols, _ref_im2col(x, *geom, 0.0, out).transpose(1, 2, 0, 3, 4), rtol=0, atol=0)
    g = rng.standard_normal(cols.shape).astype(np.float32)
    cpu = C.col2im(gp.asarray(g), *geom, (64, 64), True)
    assert_close(C.col2im(gp.asarray(g, device=device), *geom, (64, 64), True), cpu,
                 rtol=0, atol=0)


@fixture_ok
@given(kh=st.integers(1, 3), kw=st.integers(1, 3), sh=st.integers(1, 3), sw=st.integers(1, 3),
       dh=st.integers(1, 2), dw=st.integers(1, 2), p=st.integers(0, 2), h=st.integers(3, 7),
       w=st.integers(3, 7), cm=st.booleans())
def test_col2im_is_the_adjoint_on_device(device, kh, kw, sh, sw, dh, dw, p, h, w, cm):
    """<im2col(x), g> == <x, col2im(g)> (float64 where the device has it)."""
    kernel, stride, dilation, pads = (kh, kw), (sh, sw), (dh, dw), (p, 0, 0, p)
    if h + p < dh * (kh - 1) + 1 or w + p < dw * (kw - 1) + 1:
        return
    dt = "float64" if device.backend.supports_dtype(device, gp.float64) else "float32"
    out = _out(kernel, stride, dilation, pads, (h, w))
    rng = np.random.default_rng(h * 7 + w)
    x = rng.standard_normal((2, 3, h, w)).astype(dt)
    cols = C.im2col(gp.asarray(x, device=device), kernel, stride, dilation, pads, 0.0, out, cm)
    g = rng.standard_normal(cols.shape).astype(dt)
    back = C.col2im(gp.asarray(g, device=device), kernel, stride, dilation, pads, (h, w), cm)
    lhs, rhs = float(np.sum(np.asarray(cols) * g)), float(np.sum(x * np.asarray(back)))
    assert abs(lhs - rhs) < (1e-9 if dt == "float64" else 1e-3)


@pytest.mark.parametrize("kernel, stride, dilation, pads, size", [
    ((3, 3), (1, 1), (1, 1), (1, 1, 1, 1), (6, 8)),     # Wo 8: four outputs an invocation
    ((3, 3), (2, 2), (1, 1), (1, 1, 1, 1), (9, 15)),    # Wo 8, strided
    ((2, 3), (1, 2), (2, 1), (0, 1, 2, 1), (5, 13)),    # Wo 8, dilated, uneven padding
    ((1, 1), (1, 1), (1, 1), (0, 0, 0, 0), (3, 12)),    # Wo 12
    ((3, 3), (1, 1), (1, 1), (1, 1, 1, 1), (5, 7)),     # Wo 7: one output an invocation
])
@pytest.mark.parametrize("cm", [False, True])
def test_im2col_geometries(device, kernel, stride, dilation, pads, size, cm):
    """im2col against numpy across strides, dilations and padding, where rows of Wo split into
    fours (the Vulkan shader's four-output invocations) and where they do not."""
    rng = np.random.default_rng(sum(size))
    x = rng.standard_normal((3, 2, *size)).astype(np.float32)
    out = _out(kernel, stride, dilation, pads, size)
    ref = _ref_im2col(x, kernel, stride, dilation, pads, -1.5, out)
    ref = ref.transpose(1, 2, 0, 3, 4) if cm else ref
    got = C.im2col(gp.asarray(x, device=device), kernel, stride, dilation, pads, -1.5, out, cm)
    assert_close(got, ref, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("kernel, stride, pads, size", [
    ((3, 3), (1, 1), (1, 1, 1, 1), (5, 16)),    # Wo 16: eight 16-bit outputs an invocation
    ((3, 3), (2, 2), (1, 1, 1, 1), (7, 16)),    # Wo 8, strided; col2im rows even
    ((3, 3), (1, 1), (1, 1, 1, 1), (4, 12)),    # Wo 12: four an invocation
    ((2, 2), (1, 1), (0, 0, 0, 0), (4, 7)),     # Wo 6, W odd: one an invocation, single pixels
])
@pytest.mark.parametrize("cm", [False, True])
def test_im2col_vectors_and_col2im_pairs(device, dtype, kernel, stride, pads, size, cm):
    """im2col's vector stores (16- and 32-bit raw bits: 8 or 4 outputs an invocation) with a fill
    that is not zero, and col2im's pixel pairs (bfloat16, float32), against numpy."""
    import ml_dtypes

    host = ml_dtypes.bfloat16 if dtype == "bfloat16" else getattr(np, dtype)
    rng = np.random.default_rng(sum(size) + len(dtype))
    x = rng.standard_normal((2, 3, *size)).astype(host)
    dil = (1, 1)
    out = _out(kernel, stride, dil, pads, size)
    ref = _ref_im2col(x, kernel, stride, dil, pads, host(-1.5), out)
    ref = ref.transpose(1, 2, 0, 3, 4) if cm else ref
    got = C.im2col(gp.asarray(x, device=device), kernel, stride, dil, pads, -1.5, out, cm)
    assert got.dtype == getattr(gp, dtype)
    assert np.array_equal(np.asarray(got).view(np.uint16 if dtype != "float32" else np.uint32),
                          ref.view(np.uint16 if dtype != "float32" else np.uint32))
    g = rng.standard_normal(ref.shape).astype(host)
    gk = g.transpose(2, 0, 1, 3, 4) if cm else g   # (n, c, k, a, b) for the reference
    want = _ref_col2im(gk.astype(np.float64), kernel, stride, dil, pads, size)
    back = C.col2im(gp.asarray(g, device=device), kernel, stride, dil, pads, size, cm)
    assert back.dtype == getattr(gp, dtype)
    # one rounding of a float32 sum of at most 9 terms
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6}[dtype]
    assert_close(np.asarray(back).astype(np.float64), want, rtol=tol, atol=tol)
    cpu = C.col2im(gp.asarray(g), kernel, stride, dil, pads, size, cm)
    if dtype == "float32":   # the CPU kernel's order of the same float32 sum
        assert_close(back, cpu, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("size", [(5, 8), (4, 6), (4, 7)])   # H odd; W even; W odd
def test_max_pool_2x2_backward_pairs(device, dtype, size):
    """The 2x2/2 pool's gradient (Vulkan: pairs of positions per invocation, raw bits) lands
    on each window's first maximum and nowhere else, bit for bit, as numpy routes it."""
    import ml_dtypes

    if not device.backend.supports_dtype(device, getattr(gp, dtype)):
        pytest.skip(f"{device} has no {dtype}")
    host = ml_dtypes.bfloat16 if dtype == "bfloat16" else getattr(np, dtype)
    rng = np.random.default_rng(size[0] * 10 + size[1])
    x = rng.integers(-3, 4, (2, 3, *size)).astype(host)   # ties: the first maximum wins
    geom = ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0))
    out = (size[0] // 2, size[1] // 2)
    xd = gp.asarray(x, device=device)
    y, idx = C.max_pool2d(xd, *geom, out)
    g = (rng.standard_normal((2, 3, *out)) * 10).astype(host)
    got = np.asarray(C.max_pool2d_backward(gp.asarray(g, device=device), idx, *geom, size))
    want = np.zeros(x.shape, host)
    for a in range(out[0]):
        for b in range(out[1]):
            win = x[:, :, 2 * a:2 * a + 2, 2 * b:2 * b + 2].astype(np.float64)
            flat = win.reshape(2, 3, 4)   # row by row: (0,0), (0,1), (1,0), (1,1)
            first = flat.argmax(axis=2)
            for n in range(2):
                for c in range(3):
                    i, j = divmod(int(first[n, c]), 2)
                    want[n, c, 2 * a + i, 2 * b + j] = g[n, c, a, b]
    assert np.asarray(y).astype(np.float64).max() <= 3
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(host).itemsize]
    assert np.array_equal(got.view(bits), want.view(bits))


def _first_max_2x2(x: np.ndarray) -> tuple:
    """numpy's 2x2/2 max pool as pool.comp defines it: each window scanned row by row, the first
    maximum winning, a NaN over all; (the winners' values, their index j*2 + i)."""
    n, c, h, w = x.shape
    ho, wo = h // 2, w // 2
    y = np.zeros((n, c, ho, wo), x.dtype)
    idx = np.zeros((n, c, ho, wo), np.int32)
    for p in np.ndindex(n, c):
        for a in range(ho):
            for b in range(wo):
                win = [(i, j) for i in range(2) for j in range(2)]
                best = None
                for i, j in win:
                    v = float(x[p][2 * a + i, 2 * b + j])
                    if best is None or v > best[0] or (np.isnan(v) and not np.isnan(best[0])):
                        best = (v, i, j)
                _, i, j = best
                y[p][a, b] = x[p][2 * a + i, 2 * b + j]
                idx[p][a, b] = j * 2 + i
    return y, idx


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("size, offset", [((6, 8), 0), ((5, 12), 4), ((6, 8), 2), ((4, 6), 0),
                                          ((7, 9), 0)])
def test_max_pool_2x2_forward_pairs(device, dtype, size, offset):
    """The 2x2/2 pool's forward (Vulkan: pairs of outputs per invocation from one load a row,
    where W is a multiple of 4 and the input's offset too; else one output each): the first
    maximum of each window, NaN first, its bits and index exactly, ties and signed zeros
    included."""
    import ml_dtypes

    if not device.backend.supports_dtype(device, getattr(gp, dtype)):
        pytest.skip(f"{device} has no {dtype}")
    host = ml_dtypes.bfloat16 if dtype == "bfloat16" else getattr(np, dtype)
    rng = np.random.default_rng(size[0] * 10 + size[1] + offset)
    shape = (2, 3, *size)
    x = rng.integers(-3, 4, shape).astype(host)   # ties: the first maximum wins
    flat = x.reshape(-1)
    flat[::7] = -0.0
    flat[5::11] = np.nan
    flat[6::13] = -np.inf
    buf = np.concatenate([np.ones(offset, host), flat])
    xd = gp.reshape(gp.asarray(buf, device=device)[offset:], shape)
    geom = ((2, 2), (2, 2), (1, 1), (0, 0, 0, 0))
    y, idx = C.max_pool2d(xd, *geom, (size[0] // 2, size[1] // 2))
    want_y, want_idx = _first_max_2x2(x)
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[np.dtype(host).itemsize]
    got_y = np.asarray(y)
    nan = np.isnan(want_y.astype(np.float64))
    assert np.array_equal(np.isnan(got_y.astype(np.float64)), nan)
    assert np.array_equal(got_y.view(bits)[~nan], want_y.view(bits)[~nan])
    assert np.array_equal(np.asarray(idx), want_idx)
