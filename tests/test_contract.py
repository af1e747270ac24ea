"""The backend contract (grilly.backends.contract): the built-in backends provide every required
kernel and nothing outside the contract; the composed tier is exactly the array layer's
composite registry; and a "mini" backend holding only the required kernels (the cpu backend's)
runs every composed op equal to numpy, while an optional op names itself and the device."""
import contextlib
import math

import numpy as np
import pytest

import grilly as gp
from grilly.array import composites, conv, core, fused
from grilly.backends import Backend, Device, contract, hookimpl
from grilly.backends.cpu_numba.backend import CpuBackend

REQUIRED = set(contract.names(contract.REQUIRED))
COMPOSED = set(contract.names(contract.COMPOSED))


def test_required_is_small():
    assert len(REQUIRED) <= 40


@pytest.mark.parametrize("name", sorted({d.backend.name for d in gp.devices()} & {"cpu", "vulkan"}))
def test_builtin_backend_kernels(name):
    dev = next(d for d in gp.devices() if d.backend.name == name)
    have = set(dev.kernels)
    assert REQUIRED - have == set(), f"{name} lacks required kernels"
    assert have - set(contract.KERNELS) == set(), f"{name} has kernels outside the contract"


def test_composed_tier_is_the_composite_registry():
    assert set(core.COMPOSITES) == COMPOSED
    assert set(composites.COMPOSITES) == COMPOSED


# ---- the minimal backend -------------------------------------------------------------------
class Mini(Backend):
    """The cpu backend's kernels, filtered to the required tier."""

    name = "mini"
    priority = -100   # never the default device

    def __init__(self):
        self._devices = [Device(self, 0, "required kernels only")]

    def devices(self):
        return self._devices

    def kernels(self):
        return {n: k for n, k in CpuBackend().kernels().items() if n in REQUIRED}


class MiniPlugin:
    @hookimpl
    def grilly_backends(self):
        return [Mini()]


@pytest.fixture(scope="module")
def mini():
    gp.backends.register(MiniPlugin(), name="mini-plugin")
    try:
        dev = gp.backends.registry.device("mini")
        assert set(dev.kernels) == REQUIRED
        yield dev
    finally:
        gp.backends.unregister(name="mini-plugin")


def _edge(dtype: str) -> np.ndarray:
    """Edge values of ``dtype``: zeros of both signs, infinities, NaN, extremes, ordinary."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return np.array([True, False, False, True, True, False])
    if d.kind in "iu":
        i = np.iinfo(d)
        v = [0, 1, 3, i.max, i.max - 1, 2, 0, i.min]
        if d.kind == "i":
            v += [-1, -7, i.min + 1]
        return np.array(v, d)
    f = np.finfo(d if d.kind == "f" else np.dtype(d.char.lower()))
    real = [0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, f.tiny / 4, -f.max, 1.5, 0.0]
    if d.kind == "f":
        return np.array(real, d)
    imag = [0.0, -0.0, np.nan, 1.0, 0.0, -np.inf, 2.0, 0.0, 3.0, 0.0, -0.0]
    return (np.array(real) + 1j * np.array(imag)).astype(d)


REAL = ["int8", "uint8", "int32", "int64", "uint64", "float16", "float32", "float64"]
ALL = ["bool", *REAL, "complex64", "complex128"]


def _same(got, want) -> None:
    """Equal dtype, shape and values, NaN equal to NaN and -0.0 told from 0.0."""
    g = np.asarray(got)
    want = np.asarray(want)
    assert g.dtype == want.dtype, (g.dtype, want.dtype)
    assert g.shape == want.shape, (g.shape, want.shape)
    np.testing.assert_array_equal(g, want)
    if want.dtype.kind in "fc":
        for part in (np.real, np.imag) if want.dtype.kind == "c" else (np.real,):
            gp_, wp = part(g), part(want)
            ok = np.isnan(wp) | (np.signbit(gp_) == np.signbit(wp))
            assert ok.all(), "signed zero differs"


def _on(dev, h):
    return gp.asarray(h, device=dev)


def _grid(dtype):
    """Every pair of edge values: (a, b) of shape (n, n)."""
    v = _edge(dtype)
    return np.repeat(v[:, None], v.size, 1), np.repeat(v[None, :], v.size, 0)


# ---- checks, one per composed op -------------------------------------------------------------
def _unary(op, kinds):
    def check(dev):
        for dtype in ALL:
            x = _edge(dtype)
            if np.dtype(dtype).kind not in kinds:
                continue
            _same(getattr(gp, op)(_on(dev, x)), getattr(np, op)(x))
    return check


def _complex_needs_kernel(op):
    def check(dev):
        _unary(op, "iuf")(dev)
        for dtype in ("complex64", "complex128"):
            with pytest.raises(NotImplementedError, match=f"{op}.*mini"):
                getattr(gp, op)(_on(dev, _edge(dtype)))
    return check


def _binary(op, kinds):
    def check(dev):
        for dtype in ALL:
            if np.dtype(dtype).kind not in kinds:
                continue
            a, b = _grid(dtype)
            _same(getattr(gp, op)(_on(dev, a), _on(dev, b)), getattr(np, op)(a, b))
            # broadcasting and a Python scalar
            _same(getattr(gp, op)(_on(dev, a[:, :1]), _on(dev, b[0])), getattr(np, op)(a[:, :1], b[0]))
        if "i" in kinds:
            h = np.array([1, 5, 3])
            _same(getattr(gp, op)(_on(dev, h), 3), getattr(np, op)(h, 3))
    return check


def _creation(dev):
    cpu = gp.backends.registry.device("cpu")
    cases = [("arange", (5,), {}), ("arange", (1.5, 7.25, 0.75), {}), ("arange", (10, -3, -3), {}),
             ("arange", (0.1, 1.0, 0.1), {"dtype": gp.float32}), ("arange", (3, 3), {}),
             ("arange", (2, 250, 3), {"dtype": gp.uint8}), ("arange", (0, 5), {"dtype": gp.float16}),
             ("linspace", (0, 1, 7), {}), ("linspace", (-2.5, 3.0, 11), {"endpoint": False}),
             ("linspace", (0, 1, 5), {"dtype": gp.float32}), ("linspace", (1j, 2 + 3j, 4), {}),
             ("linspace", (0, 1, 0), {}), ("eye", (3,), {}), ("eye", (2, 5), {"k": 2}),
             ("eye", (4, 3), {"k": -1, "dtype": gp.int8}), ("eye", (3,), {"k": 7, "dtype": gp.bool}),
             ("eye", (0, 2), {})]
    for op, args, kw in cases:
        got = getattr(gp, op)(*args, device=dev, **kw)
        _same(got, np.asarray(getattr(gp, op)(*args, device=cpu, **kw)))   # the cpu kernel's numbers
    _same(gp.arange(1.5, 7.25, 0.75, device=dev), np.arange(1.5, 7.25, 0.75))
    _same(gp.linspace(-2.5, 3.0, 11, device=dev), np.linspace(-2.5, 3.0, 11))
    _same(gp.eye(4, 3, k=-1, device=dev), np.eye(4, 3, k=-1))


def _reduction(op):
    def check(dev):
        for dtype in ALL:
            x = _edge(dtype)[:6].reshape(2, 3)
            for h in (x, np.zeros((0, 3), x.dtype), x[:1]):
                for axis in (None, 0, 1, (0, 1)):
                    for keepdims in (False, True):
                        got = getattr(gp, op)(_on(dev, h), axis=axis, keepdims=keepdims)
                        want = getattr(np, op)(h, axis=axis, keepdims=keepdims)
                        _same(got, np.asarray(want, np.int64 if op == "count_nonzero" else bool))
    return check


def _arg(op):
    def check(dev):
        cases = {d: [_edge(d)] for d in ["bool", *REAL]}
        cases["float64"] += [np.array([1.0, 3.0, np.nan, 3.0, np.nan]), np.array([-0.0, 0.0, -0.0])]
        cases["int32"].append(np.array([2, 9, 9, -4, -4], np.int32))
        for dtype, arrays in cases.items():
            for x in arrays:
                for h in (x, x[:6].reshape(2, 3) if x.size >= 6 else x, np.array(x[1])):
                    axes = [None] + list(range(h.ndim))
                    for axis in axes:
                        for keepdims in (False, True):
                            got = getattr(gp, op)(_on(dev, h), axis=axis, keepdims=keepdims)
                            _same(got, getattr(np, op)(h, axis=axis, keepdims=keepdims))
    return check


def _cumulative_prod(dev):
    for dtype in ALL:
        x = _edge(dtype)[:6]
        if np.dtype(dtype).kind == "f":
            x = np.where(np.isfinite(x), x, 1.5).astype(dtype)   # keep it readable
        x2 = x.reshape(2, 3)
        for h, axis in ((x, 0), (x2, 0), (x2, 1), (np.zeros((2, 0), x.dtype), 1)):
            for init in (False, True):
                got = gp.cumulative_prod(_on(dev, h), axis=axis, include_initial=init)
                want = np.cumulative_prod(h, axis=axis, include_initial=init)
                _same(got, want)
    x = np.array([3.0, np.inf, 0.0, np.nan, -0.0, 2.0])
    _same(gp.cumulative_prod(_on(dev, x)), np.cumulative_prod(x))


def _normalize_indices(dev):
    x = np.arange(10.0)
    for idx in ([0, -1, 3, -10, 9], [], [[1, -2], [-3, 4]]):
        i = np.array(idx, np.int32)
        _same(_on(dev, x)[_on(dev, i)], x[i])
    for bad in ([1, 10, -11], [-11]):
        with pytest.raises(IndexError, match=f"index {bad[-1] if bad == [-11] else 10} is out"):
            _on(dev, x)[_on(dev, np.array(bad))]
    _same(gp.take(_on(dev, x), _on(dev, np.array([-1, 2], np.uint8 if False else np.int8))),
          np.take(x, [-1, 2]))


def _repeat_indices(dev):
    x = np.array([1.5, -0.0, np.nan, 4.0])
    for r in ([2, 0, 3, 1], [0, 0, 0, 0], [1, 1, 1, 1]):
        for dtype in (np.int64, np.uint8, np.int16):
            rep = np.array(r, dtype)
            _same(gp.repeat(_on(dev, x), _on(dev, rep)), np.repeat(x, rep))
    m = np.arange(6).reshape(2, 3)
    _same(gp.repeat(_on(dev, m), _on(dev, np.array([2, 0, 1])), axis=1), np.repeat(m, [2, 0, 1], 1))
    with pytest.raises(ValueError, match="negative"):
        gp.repeat(_on(dev, x), _on(dev, np.array([1, -1, 0, 0])))


def _nonzero(dev):
    for dtype in ALL:
        x = _edge(dtype)
        for h in (x, x[:6].reshape(2, 3), np.zeros((0, 2), x.dtype), x[:6].reshape(1, 2, 3)):
            got = gp.nonzero(_on(dev, h))
            want = np.nonzero(h)
            assert len(got) == len(want)
            for g, w in zip(got, want):
                _same(g, w.astype(np.int64))


def _diagonal(dev):
    for shape in ((3, 4), (4, 3), (2, 3, 3), (0, 3), (3, 0), (1, 1)):
        x = np.arange(math.prod(shape), dtype=np.float32).reshape(shape)
        for k in range(-4, 5):
            _same(gp.linalg.diagonal(_on(dev, x), offset=k), np.diagonal(x, k, -2, -1))
    x = np.arange(12.0).reshape(3, 4)
    _same(gp.linalg.trace(_on(dev, x), offset=1), np.trace(x, 1))


def _unique(dev):
    for dtype in ["bool", *REAL]:
        x = np.concatenate([_edge(dtype), _edge(dtype)[::-1]])
        for h in (x, x.reshape(2, -1), x[:0]):
            r = gp.unique_all(_on(dev, h))
            w = np.unique_all(h)
            for g, ww in zip(r, w):
                _same(g, np.asarray(ww).astype(np.int64) if ww.dtype.kind in "iu"
                      and ww is not w.values else ww)
    with pytest.raises(NotImplementedError, match="mini"):
        gp.unique_values(_on(dev, _edge("complex128")))


def _isin(dev):
    for dtype in ALL:
        v = _edge(dtype)
        a, b = v.reshape(-1, 1)[:8], v[2:5]
        for inv in (False, True):
            _same(gp.isin(_on(dev, a), _on(dev, b), invert=inv), np.isin(a, b, invert=inv))
            _same(gp.isin(_on(dev, v), _on(dev, v[:0]), invert=inv), np.isin(v, v[:0], invert=inv))
    _same(gp.isin(_on(dev, np.array([1, 4, 9])), 4), np.isin([1, 4, 9], 4))


def _cross(dev):
    rng = np.random.default_rng(0)
    for dtype in ("int32", "float32", "float64", "complex128"):
        a = rng.integers(-9, 9, (4, 3)).astype(dtype)
        b = rng.integers(-9, 9, (2, 1, 3)).astype(dtype)
        _same(gp.linalg.cross(_on(dev, a), _on(dev, b)), np.cross(a, b))
    a = np.array([[1.0, np.inf, -0.0], [np.nan, 2.0, 3.0]])
    b = np.array([[0.0, 1.0, 2.0], [1.0, -0.0, 0.5]])
    _same(gp.linalg.cross(_on(dev, a.T), _on(dev, b.T), axis=0), np.cross(a.T, b.T, axis=0))


def _fft_roll(dev):
    for shape in ((5,), (4, 3), (0, 3), (2, 3, 4)):
        x = np.arange(math.prod(shape), dtype=np.float64).reshape(shape)
        for axes in (None, 0, (-1,), tuple(range(len(shape)))):
            _same(gp.fft.fftshift(_on(dev, x), axes=axes), np.fft.fftshift(x, axes=axes))
            _same(gp.fft.ifftshift(_on(dev, x), axes=axes), np.fft.ifftshift(x, axes=axes))


def _softmax(log):
    def check(dev):
        rng = np.random.default_rng(1)
        for dtype in ("float32", "float64"):
            x = rng.normal(size=(3, 5)).astype(dtype)
            x[0, 1] = -np.inf
            for axis in (0, 1, -1):
                m = x - x.max(axis=axis, keepdims=True)
                e = np.exp(m)
                want = m - np.log(e.sum(axis=axis, keepdims=True)) if log else e / e.sum(
                    axis=axis, keepdims=True)
                f = fused.log_softmax if log else fused.softmax
                got = np.asarray(f(_on(dev, x), axis=axis))
                np.testing.assert_allclose(got, want, rtol=4 * np.finfo(dtype).eps, atol=0)
    return check


def _batch_norm(dev):
    """Training-mode batch norm and its gradients composed from required kernels."""
    from grilly.array import normalization
    from test_norm_kernels import np_batch_norm
    rng = np.random.default_rng(6)
    x, w, b, g = (rng.normal(size=s) for s in ((5, 3, 4), (3,), (3,), (5, 3, 4)))
    want, wgrads = np_batch_norm(x, w, b, 1e-5, g)
    got = normalization.batch_norm(_on(dev, x), _on(dev, w), _on(dev, b), 1e-5)
    for a, ref in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), ref, rtol=1e-12, atol=1e-12)
    grads = normalization.batch_norm_backward(_on(dev, g), _on(dev, x), got[1], got[2],
                                              _on(dev, w), (True, True, True))
    for a, ref in zip(grads, wgrads):
        np.testing.assert_allclose(np.asarray(a), ref, rtol=1e-11, atol=1e-12)


def _batch_norm_update(dev):
    """The running statistics composed from required kernels, against float64 numpy."""
    from grilly.array import normalization
    rng = np.random.default_rng(7)
    rm, rv, mean, inv = (rng.uniform(0.5, 2.0, 5) for _ in range(4))
    a, b = _on(dev, rm), _on(dev, rv)
    normalization.batch_norm_update(a, b, _on(dev, mean), _on(dev, inv), 0.1, 1e-5, 8)
    np.testing.assert_allclose(np.asarray(a), rm * 0.9 + mean * 0.1, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(b), rv * 0.9 + (1 / inv**2 - 1e-5) * (8 / 7) * 0.1,
                               rtol=1e-13)


def _linear(dev):
    """linear and its backward composed from matmul, add and sum, against float64 numpy."""
    from grilly.array import dense
    rng = np.random.default_rng(5)
    x, w, b, g = (rng.normal(size=s) for s in ((6, 4), (3, 4), (3,), (6, 3)))
    np.testing.assert_allclose(np.asarray(dense.linear(_on(dev, x), _on(dev, w), _on(dev, b))),
                               x @ w.T + b, rtol=1e-13)
    got = dense.linear_backward(_on(dev, g), _on(dev, x), _on(dev, w), (True, True, True))
    for a, want in zip(got, (g @ w, g.T @ x, g.sum(axis=0))):
        np.testing.assert_allclose(np.asarray(a), want, rtol=1e-13)
    gx, gw, gb = dense.linear_backward(_on(dev, g), _on(dev, x), _on(dev, w), (False, True, False))
    assert gx is None and gb is None and gw is not None


def _cross_entropy(dev):
    """The composed cross entropy (ignored rows, both reductions) and its gradient."""
    from test_softmax import np_cross_entropy
    rng = np.random.default_rng(3)
    x, t = rng.normal(size=(9, 5)), rng.integers(0, 5, 9)
    t[4] = -100
    for mean in (True, False):
        want, wg = np_cross_entropy(x, t, mean)
        xd, td = _on(dev, x), _on(dev, t)
        np.testing.assert_allclose(float(fused.cross_entropy(xd, td, mean=mean)), want, rtol=1e-13)
        got = fused.cross_entropy_backward(xd, td, _on(dev, np.array(2.0)), mean=mean)
        np.testing.assert_allclose(np.asarray(got), 2 * wg, rtol=1e-12, atol=1e-15)


def _layer_norm(dev):
    """Layer norm and its gradients composed from required kernels."""
    from grilly.array import normalization
    from test_layer_norm import np_layer_norm, np_layer_norm_backward
    rng = np.random.default_rng(7)
    x, w, b, g = (rng.normal(size=s) for s in ((5, 6), (6,), (6,), (5, 6)))
    got = normalization.layer_norm(_on(dev, x), _on(dev, w), _on(dev, b), 1e-5)
    for a, ref in zip(got, np_layer_norm(x, w, b, 1e-5)):
        np.testing.assert_allclose(np.asarray(a), ref, rtol=1e-12, atol=1e-12)
    grads = normalization.layer_norm_backward(_on(dev, g), _on(dev, x), got[1], got[2],
                                              _on(dev, w), (True, True, True))
    for a, ref in zip(grads, np_layer_norm_backward(g, x, w, 1e-5)):
        np.testing.assert_allclose(np.asarray(a), ref, rtol=1e-11, atol=1e-12)


def _attention(dev):
    """Attention and its gradients composed from required kernels (mask, causal, dropout)."""
    from grilly.array import attention
    from test_attention_kernels import np_attention, np_attention_backward
    rng = np.random.default_rng(8)
    q, k, v, g = (rng.normal(size=s) for s in ((2, 2, 5, 3), (2, 2, 6, 3), (2, 2, 6, 4),
                                               (2, 2, 5, 4)))
    bias = rng.normal(size=(2, 1, 1, 6))
    drop = (rng.random((2, 2, 5, 6)) > 0.3) / 0.7
    for causal in (False, True):
        on = [_on(dev, a) for a in (q, k, v, bias, drop)]
        out, lse = attention.attention(*on, causal=causal, scale=0.7, block=4)
        want, want_lse = np_attention(q, k, v, bias, drop, causal, 0.7)
        np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(np.asarray(lse), want_lse, rtol=1e-12, atol=1e-13)
        grads = attention.attention_backward(_on(dev, g), *on, out, lse, causal=causal,
                                             scale=0.7, block=4)
        for a, ref in zip(grads, np_attention_backward(g, q, k, v, bias, drop, causal, 0.7)):
            np.testing.assert_allclose(np.asarray(a), ref, rtol=1e-11, atol=1e-12)


def _relu_backward(dev):
    """The composed ReLU gradient: g where y > 0 (zero at 0, -0.0 and NaN)."""
    rng = np.random.default_rng(4)
    y = np.maximum(rng.normal(size=(6, 7)), 0)
    y[0, :3] = (0.0, -0.0, np.nan)
    g = rng.normal(size=(6, 7))
    got = fused.relu_backward(_on(dev, g), _on(dev, y))
    np.testing.assert_array_equal(np.asarray(got), np.where(y > 0, g, 0))


def _conv(adjoint):
    def check(dev):
        cpu = gp.backends.registry.device("cpu")
        rng = np.random.default_rng(2)
        args = ((3, 2), (1, 2), (1, 1), (1, 0, 2, 1))
        if not adjoint:
            x = rng.normal(size=(2, 3, 6, 7)).astype(np.float32)
            out = (5, 5)
            for cm in (False, True):
                got = conv.im2col(_on(dev, x), *args, 0.0, out, cm)
                want = conv.im2col(_on(cpu, x), *args, 0.0, out, cm)
                _same(got, np.asarray(want))
        else:
            g = rng.normal(size=(2, 3, 6, 5, 5)).astype(np.float64)
            got = conv.col2im(_on(dev, g), *args, (6, 7))
            want = conv.col2im(_on(cpu, g), *args, (6, 7))
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-13, atol=1e-13)
    return check


def _conv2d(dev):
    """conv2d and its backward composed from required kernels, against float64 numpy."""
    from test_conv2d_fused import CONV_CASES, _out, np_conv2d, np_conv2d_grads
    rng = np.random.default_rng(7)
    for xs, ws, stride, dilation, pads, groups in (CONV_CASES[1], CONV_CASES[3]):
        x, w, b = rng.normal(size=xs), rng.normal(size=ws), rng.normal(size=ws[0])
        out = _out(xs, ws, stride, dilation, pads)
        gy = rng.normal(size=(xs[0], ws[0]) + out)
        y = conv.conv2d(_on(dev, x), _on(dev, w), _on(dev, b), stride, dilation, pads, groups, out)
        np.testing.assert_allclose(np.asarray(y), np_conv2d(x, w, b, stride, dilation, pads, groups),
                                   rtol=1e-12, atol=1e-12)
        got = conv.conv2d_backward(_on(dev, gy), _on(dev, x), _on(dev, w), stride, dilation, pads,
                                   groups, (True, True, True))
        for g, want in zip(got, np_conv2d_grads(gy, x, w, stride, dilation, pads, groups)):
            np.testing.assert_allclose(np.asarray(g), want, rtol=1e-11, atol=1e-11)


def _max_pool(dev):
    """max_pool2d (ties, -inf, NaN) and its backward composed from required kernels."""
    from test_conv2d_fused import np_max_pool, np_max_unpool
    rng = np.random.default_rng(8)
    x = rng.integers(-2, 2, (2, 2, 7, 6)).astype(float)
    x[0, 1, 3, 3], x[1, 0, 0, 0] = np.nan, -np.inf
    geom = ((3, 2), (2, 2), (1, 1), (1, 1, 1, 0))
    want_y, want_i = np_max_pool(x, *geom)
    y, idx = conv.max_pool2d(_on(dev, x), *geom, want_y.shape[2:])
    np.testing.assert_array_equal(np.asarray(y), want_y)
    np.testing.assert_array_equal(np.asarray(idx), want_i)
    g = rng.normal(size=want_y.shape)
    got = conv.max_pool2d_backward(_on(dev, g), idx, *geom, x.shape[2:])
    np.testing.assert_allclose(np.asarray(got), np_max_unpool(g, want_i, *geom, x.shape[2:]),
                               rtol=1e-13)


def _optim(op):
    """The composition on the required kernels equals the cpu kernel over three steps."""
    from grilly.array import optim_steps

    kws = {"sgd_step": [dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01,
                             nesterov=False, maximize=True), dict(lr=0.1, momentum=0.9,
                                                                    nesterov=True)],
           "adam_step": [dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1),
                         dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8, weight_decay=0.1,
                              decoupled=True, maximize=True)],
           "rmsprop_step": [dict(lr=0.01, alpha=0.9, eps=1e-8, momentum=0.5, weight_decay=0.1),
                            dict(lr=0.01, alpha=0.9, eps=1e-8, maximize=True)],
           "adagrad_step": [dict(lr=0.1, eps=1e-10, lr_decay=0.1, weight_decay=0.1)]}[op]

    def run(dev, kw, extra):
        rng = np.random.default_rng(4)
        p = _on(dev, rng.standard_normal(9).astype(np.float32))
        st = [_on(dev, np.full(9, 0.5, np.float32)) for _ in range(3)]
        for t in range(1, 4):
            g = _on(dev, rng.standard_normal(9).astype(np.float32))
            if op == "sgd_step":
                optim_steps.sgd_step(p, g, st[0] if kw.get("momentum") else None,
                                     first=t == 1, **kw)
            elif op == "adam_step":
                optim_steps.adam_step(p, g, st[0], st[1], st[2] if extra else None, step=t, **kw)
            elif op == "rmsprop_step":
                optim_steps.rmsprop_step(p, g, st[0], st[1] if extra else None,
                                         st[2] if kw.get("momentum") else None, **kw)
            else:
                optim_steps.adagrad_step(p, g, st[0], step=t, **kw)
        return [np.asarray(a) for a in (p, *st)]

    def check(dev):
        cpu = gp.backends.registry.device("cpu")
        for kw in kws:
            for extra in (False, True):
                for got, want in zip(run(dev, kw, extra), run(cpu, kw, extra)):
                    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    return check


def _lif(backward):
    def check(dev):
        from test_snn_fused import _case, ref_backward, ref_forward   # the numpy reference
        from grilly.array import spiking
        from grilly.testing.suite.test_snn import np_backward, np_forward
        ref0 = np.array([0.0, 2.0, 1.0] * 4 + [3.0])
        for reset in ("subtract", "zero", "none"):
            for delay in (True, False):
                x, m0, beta, thr, gs, gm = _case(1)
                X, M0, B, TH, GS, GM, R0 = (_on(dev, v) for v in (x, m0, beta, thr, gs, gm, ref0))
                ext = dict(refractory=2, s0=ref0)
                if not backward:
                    got = spiking.lif_forward(X, M0, B, TH, reset=reset, reset_delay=delay)
                    want = ref_forward(x, m0, beta, thr, reset, delay)
                    # a refractory period: (spikes, mem, trace, counter)
                    got += spiking.lif_forward(X, M0, B, TH, reset=reset, reset_delay=delay,
                                               refractory=2, ref0=R0)
                    w = np_forward(x, m0, beta, thr, reset, delay, **ext)
                    want += (w[0], w[1], w[3], w[2])
                else:
                    kw = dict(reset=reset, reset_delay=delay, surrogate="sigmoid", slope=4.0)
                    got = spiking.lif_backward(GS, GM, X, M0, B, TH, None, **kw)
                    want = ref_backward(gs, gm, x, m0, beta, thr, reset, delay, "sigmoid", 4.0)
                    got += spiking.lif_backward(GS, GM, X, M0, B, TH, None, detach_reset=False,
                                                refractory=2, ref0=R0, **kw)
                    want += np_backward(gs, gm, x, m0, beta, thr, reset, delay, "sigmoid", 4.0,
                                        False, **ext)[:4]
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
    return check


def _alif(dev):
    """alif_forward and alif_backward composed (forward, then both reset conventions'
    gradients, the reset detached and not) against the kit's numpy reference."""
    from grilly.array import spiking
    from grilly.testing.suite.test_snn import case, np_backward, np_forward
    c = case(3)
    names = ("x", "m0", "s0", "beta", "rho", "gamma", "thr", "gs", "gm", "ga")
    X, M0, A0, B, P, G, TH, GS, GM, GA = (_on(dev, c[n]) for n in names)
    ext = dict(s0=c["s0"], rho=c["rho"], gamma=c["gamma"])
    for reset in ("subtract", "zero", "none"):
        for delay in (True, False):
            spk, mem, a, tr = np_forward(c["x"], c["m0"], c["beta"], c["thr"], reset, delay, **ext)
            got = spiking.alif_forward(X, M0, A0, B, P, G, TH, reset=reset, reset_delay=delay)
            for g, w in zip(got, (spk, mem, a, tr)):
                np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
            for detach in (True, False):
                gx, gm0, gb, gt, ga0 = np_backward(c["gs"], c["gm"], c["x"], c["m0"], c["beta"],
                                                   c["thr"], reset, delay, "atan", 2.0, detach,
                                                   ga=c["ga"], **ext)
                got = spiking.alif_backward(GS, GM, GA, X, M0, A0, B, P, G, TH, None, reset=reset,
                                            reset_delay=delay, detach_reset=detach)
                for g, w in zip(got, (gx, gm0, ga0, gb, gt)):
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)


def _leaky(dev):
    from test_snn_fused import _ref_leaky
    from grilly.array import spiking
    rng = np.random.default_rng(2)
    x, s0, al = rng.standard_normal((5, 7)), rng.standard_normal(7), rng.random(7)
    for reverse in (False, True):
        got = spiking.leaky_integrate(_on(dev, x), _on(dev, s0), _on(dev, al), reverse=reverse)
        np.testing.assert_allclose(np.asarray(got), _ref_leaky(x, s0, al, reverse), rtol=1e-13)


def _plasticity(dev):
    """The composition of plasticity_step (matmul, elementwise, clip) against numpy."""
    from test_snn_plasticity import _np_step
    from grilly.array.plasticity import plasticity_step
    rng = np.random.default_rng(6)
    w0, x, y = rng.random((4, 5)), rng.random((3, 5)), rng.random((3, 4))
    u0, v0 = rng.random((3, 5)), rng.random((3, 4))
    for rule in ("stdp_soft", "stdp_hard", "oja"):
        w = _on(dev, w0)
        p = (0.1, 0.2, 0.9, 0.8, 0.1, 0.9)
        res = plasticity_step(w, _on(dev, x), _on(dev, y), _on(dev, u0), _on(dev, v0), rule=rule,
                              params=p)
        ref, u, _ = _np_step(w0, x, y, u0, v0, rule, p)
        np.testing.assert_allclose(np.asarray(w), ref, rtol=1e-13)
        if res is not None:
            np.testing.assert_allclose(np.asarray(res[0]), u, rtol=1e-13)


def _matmul_topk(dev):
    """Exact integer scores with ties and NaN in add, both directions, float64."""
    from grilly.array import neighbors
    rng = np.random.default_rng(4)
    x, mat = rng.integers(-2, 3, (4, 3)).astype(float), rng.integers(-2, 3, (9, 3)).astype(float)
    add = rng.integers(-1, 2, 9).astype(float)
    add[4] = np.nan
    s = x @ mat.T + add
    for largest in (True, False):
        v, i = neighbors.matmul_topk(_on(dev, x), _on(dev, mat), 5, add=_on(dev, add),
                                     largest=largest)
        want = _ref_topk(s, 5, 1, largest)
        np.testing.assert_array_equal(np.asarray(i), want)
        np.testing.assert_array_equal(np.asarray(v), np.take_along_axis(s, want, 1))


def _philox_blocks(dev):
    """The composition needs the optional bitwise kernels: on a device with only the required
    ones it raises NotImplementedError naming one (test_random checks its words on every real
    device, against the namespace rounds and Random123's known answers)."""
    from grilly.array import random_bits
    with pytest.raises(NotImplementedError, match=r"bitwise_\w+: not available on device"):
        random_bits.philox_blocks(6, 2**32 - 2, 2**40 + 3, dev)


def _philox_uniform(dev):
    """Composed from philox_blocks, so the same: test_philox_uniform checks the values on every
    real device, against the composition and the contract's equations."""
    from grilly.array import random_bits
    with pytest.raises(NotImplementedError, match=r"bitwise_\w+: not available on device"):
        random_bits.philox_uniform(6, 2**32 - 2, 2**40 + 3, gp.float32, dev)


def _philox_dropout(dev):
    """Composed from philox_uniform, so the same: test_philox_dropout checks the values on every
    real device, against the composition and the contract's equations."""
    from grilly.array import random_bits
    for d in (gp.float32, gp.float16):
        with pytest.raises(NotImplementedError, match=r"bitwise_\w+: not available on device"):
            random_bits.philox_dropout(6, 2**32 - 2, 2**40 + 3, 0.5, 2.0, d, dev)


def _segments(dev):
    """Integer-valued rows (sums exact in any order), runs with empty ones, a NaN and ties."""
    from grilly.array import segments
    rng = np.random.default_rng(5)
    v = rng.integers(-3, 4, (11, 3)).astype(float)
    v[4, 1] = np.nan
    starts, ends = np.array([0, 2, 2, 7, 11]), np.array([2, 2, 7, 11, 11])
    args = (_on(dev, v), _on(dev, starts), _on(dev, ends))
    runs = [v[a:b] for a, b in zip(starts, ends)]
    want = np.stack([r.sum(0) if len(r) else np.zeros(3) for r in runs])
    np.testing.assert_array_equal(np.asarray(segments.segment_sum(*args)), want)
    m, i = segments.segment_max(*args, fill=-9.0)
    first = [np.nanargmax(np.where(np.isnan(r), np.inf, r), 0) + a if len(r) else [-1] * 3
             for r, a in zip(runs, starts)]
    np.testing.assert_array_equal(np.asarray(i), np.array(first))
    np.testing.assert_array_equal(np.asarray(m), np.stack([r.max(0) if len(r) else [-9.0] * 3
                                                           for r in runs]))


def _ref_topk(x: np.ndarray, k: int, axis: int, largest: bool) -> np.ndarray:
    """topk's indices by Python's stable sort: NaN the largest value, ties by index."""
    def order(row):
        v = row.tolist()
        def key(j):
            nan = v[j] != v[j]
            return (not nan, -v[j]) if largest else (nan, 0 if nan else v[j])
        return sorted(range(len(v)), key=key)[:k]
    m = np.moveaxis(x, axis, -1)
    idx = np.array([order(r) for r in m.reshape(-1, m.shape[-1])], np.int64)
    return np.moveaxis(idx.reshape(m.shape[:-1] + (k,)), -1, axis)


def _topk(dev):
    cpu = gp.backends.registry.device("cpu")
    for dtype in ("bool", "int8", "uint64", "float16", "float64"):
        x = np.stack([_edge(dtype), _edge(dtype)[::-1]])
        for axis, largest, k in ((1, True, 4), (0, False, 1), (1, False, x.shape[1]), (1, True, 0)):
            want = _ref_topk(x, k, axis, largest)
            for d in (dev, cpu):
                v, i = gp.topk(_on(d, x), k, axis=axis, largest=largest)
                _same(i, want)
                _same(v, np.take_along_axis(x, want, axis=axis))


def _host_view(dev):
    x = np.array([[1.0, -0.0], [np.nan, 4.0]])
    a = _on(dev, x)
    _same(np.asarray(a), x)
    _same(np.from_dlpack(a), x)


def _scalar(dev):
    x = np.array([1.0, -0.0, np.nan], np.float32)
    _same(_on(dev, x) * 2.5 + 1, x * np.float32(2.5) + np.float32(1))


HOST_CASES = {
    "cholesky": lambda a: (gp.linalg.cholesky(a), np.linalg.cholesky),
    "det": lambda a: (gp.linalg.det(a), np.linalg.det),
    "eig": lambda a: (gp.linalg.eig(a)[0], lambda h: np.linalg.eig(h)[0]),
    "eigh": lambda a: (gp.linalg.eigh(a)[0], lambda h: np.linalg.eigh(h)[0]),
    "eigvals": lambda a: (gp.linalg.eigvals(a), np.linalg.eigvals),
    "eigvalsh": lambda a: (gp.linalg.eigvalsh(a), np.linalg.eigvalsh),
    "inv": lambda a: (gp.linalg.inv(a), np.linalg.inv),
    "matrix_rank": lambda a: (gp.linalg.matrix_rank(a), np.linalg.matrix_rank),
    "pinv": lambda a: (gp.linalg.pinv(a), np.linalg.pinv),
    "qr": lambda a: (gp.linalg.qr(a)[1], lambda h: np.linalg.qr(h)[1]),
    "slogdet": lambda a: (gp.linalg.slogdet(a)[1], lambda h: np.linalg.slogdet(h)[1]),
    "solve": lambda a: (gp.linalg.solve(a, a[..., :1]), lambda h: np.linalg.solve(h, h[..., :1])),
    "svd": lambda a: (gp.linalg.svd(a)[1], lambda h: np.linalg.svd(h)[1]),
    "svdvals": lambda a: (gp.linalg.svdvals(a), lambda h: np.linalg.svd(h, compute_uv=False)),
    "fft_c2c": lambda a: (gp.fft.fft(a), np.fft.fft),
    "fft_r2c": lambda a: (gp.fft.rfft(a), np.fft.rfft),
    "fft_c2r": lambda a: (gp.fft.irfft(a), np.fft.irfft),
}


def _host(op):
    def check(dev):
        rng = np.random.default_rng(3)
        m = rng.normal(size=(2, 4, 4))
        h = m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)   # symmetric positive definite
        a = _on(dev, h)
        before = gp.device_stats(dev)["host_round_trips"]
        got, ref = HOST_CASES[op](a)
        want = ref(h)
        assert gp.device_stats(dev)["host_round_trips"] > before
        if op == "eig" or op == "eigvals":
            got, want = np.sort_complex(np.asarray(got)), np.sort_complex(want)
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
    return check


def _amp_unscale(dev):
    """The composition on the required kernels: the flag set exactly when the gradient held an
    inf or NaN (and left set), the gradient scaled in place, against numpy."""
    from grilly.array import optim_steps

    found = _on(dev, np.array(0, np.uint32))
    for vals, hit in (([1.0, -2.0, 4.0], 0), ([1.0, np.inf, 8.0], 1), ([2.0, 2.0, 2.0], 1),
                      ([np.nan, 1.0, 0.5], 1)):
        h = np.array(vals, np.float32)
        g = _on(dev, h)
        optim_steps.amp_unscale(g, found, 0.25)
        np.testing.assert_array_equal(np.asarray(g), h * np.float32(0.25))
        assert int(np.asarray(found)) == hit


def _optim_multi(dev):
    """The composition runs each collected update as its own rule would: Adam over parameters
    of several shapes and an unscale over their gradients, batched against one by one."""
    from grilly.array import optim_steps

    def run(batched):
        rng = np.random.default_rng(6)
        ps = [_on(dev, rng.standard_normal(s).astype(np.float32)) for s in ((3,), (2, 5), ())]
        st = [[_on(dev, np.zeros(p.shape, np.float32)) for _ in range(2)] for p in ps]
        found = _on(dev, np.array(0, np.uint32))
        for t in (1, 2):
            gs = [_on(dev, rng.standard_normal(p.shape).astype(np.float32)) for p in ps]
            with optim_steps.batched() if batched else contextlib.nullcontext():
                for g in gs:
                    optim_steps.amp_unscale(g, found, 0.5)
                for p, g, (m, v) in zip(ps, gs, st):
                    optim_steps.adam_step(p, g, m, v, lr=0.1, beta1=0.9, beta2=0.99, eps=1e-8,
                                          step=t)
        return [np.asarray(a) for a in (*ps, found)]

    for a, b in zip(run(True), run(False)):
        np.testing.assert_array_equal(a, b)


CHECKS = {
    "host_view": _host_view, "scalar": _scalar,
    "arange": _creation, "linspace": _creation, "eye": _creation,
    "negative": _unary("negative", "iufc"), "positive": _unary("positive", "iufc"),
    "conj": _complex_needs_kernel("conj"), "real": _complex_needs_kernel("real"),
    "imag": _complex_needs_kernel("imag"), "square": _unary("square", "iufc"),
    "isnan": _unary("isnan", "biufc"), "isfinite": _unary("isfinite", "biufc"),
    "isinf": _complex_needs_kernel("isinf"),
    "greater": _binary("greater", "iuf"), "greater_equal": _binary("greater_equal", "iuf"),
    "less_equal": _binary("less_equal", "iuf"), "not_equal": _binary("not_equal", "biufc"),
    "logical_xor": _binary("logical_xor", "b"),
    "count_nonzero": _reduction("count_nonzero"), "any": _reduction("any"),
    "all": _reduction("all"), "argmax": _arg("argmax"), "argmin": _arg("argmin"),
    "cumulative_prod": _cumulative_prod, "normalize_indices": _normalize_indices,
    "repeat_indices": _repeat_indices, "nonzero": _nonzero, "diagonal": _diagonal,
    "lif_forward": _lif(False), "lif_backward": _lif(True), "leaky_integrate": _leaky,
    "alif_forward": _alif, "alif_backward": _alif,
    "matmul_topk": _matmul_topk, "segment_sum": _segments, "segment_max": _segments,
    "philox_blocks": _philox_blocks,
    "philox_uniform": _philox_uniform, "philox_dropout": _philox_dropout,
    "plasticity_step": _plasticity,
    "unique": _unique, "isin": _isin, "topk": _topk, "cross": _cross, "fft_roll": _fft_roll,
    "softmax": _softmax(False), "log_softmax": _softmax(True),
    "cross_entropy": _cross_entropy, "cross_entropy_backward": _cross_entropy,
    "relu_backward": _relu_backward, "linear": _linear, "linear_backward": _linear,
    "batch_norm": _batch_norm, "batch_norm_backward": _batch_norm,
    "batch_norm_update": _batch_norm_update,
    "layer_norm": _layer_norm, "layer_norm_backward": _layer_norm,
    "attention": _attention, "attention_backward": _attention,
    "im2col": _conv(False), "col2im": _conv(True),
    "conv2d": _conv2d, "conv2d_backward": _conv2d, "max_pool2d": _max_pool,
    "max_pool2d_backward": _max_pool,
    **{op: _optim(op) for op in ("sgd_step", "adam_step", "rmsprop_step", "adagrad_step")},
    "amp_unscale": _amp_unscale, "optim_multi": _optim_multi,
    **{op: _host(op) for op in HOST_CASES},
}


def test_every_composed_op_is_checked():
    assert set(CHECKS) == COMPOSED


@pytest.mark.parametrize("op", sorted(COMPOSED))
def test_composed_op_on_required_kernels_only(mini, op):
    CHECKS[op](mini)


@pytest.mark.parametrize("op", ["sin", "bitwise_and", "floor_divide"])
def test_optional_op_names_op_and_device(mini, op):
    x = _on(mini, np.array([1, 2, 3]))
    with pytest.raises(NotImplementedError, match=rf"{op}: not available on device mini"):
        getattr(gp, op)(x) if op == "sin" else getattr(gp, op)(x, x)


def test_vulkan_backend_imports_no_other_backend():
    import subprocess
    import sys

    code = ("import importlib, pkgutil, sys\n"
            "sys.modules['grilly.backends.cpu_numba'] = None   # importing it now fails\n"
            "import grilly.backends.vulkan as v\n"
            "for m in pkgutil.iter_modules(v.__path__):\n"
            "    importlib.import_module('grilly.backends.vulkan.' + m.name)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
