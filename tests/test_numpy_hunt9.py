"""NumPy callables a porting user types that grilly lacked, against numpy on every device:
fmod, divmod, modf, frexp, ldexp, gcd, lcm, float_power, angle, spacing, unwrap, sort_complex,
real_if_close, bitwise_count, packbits/unpackbits; the poly* functions, poly, roots; piecewise,
matvec, vecmat; issubdtype, promote_types, common_type, min_scalar_type; asanyarray,
ascontiguousarray, require, asarray_chkfinite, copyto, fromfunction, fromiter, frombuffer,
einsum_path, iterable, may_share_memory, shares_memory; the printing functions; loadtxt,
savetxt, genfromtxt, fromfile; and the ndarray methods tobytes, tofile, conj, searchsorted,
partition, argpartition, put, compress, choose, flat, resize."""
import io
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly.autograd.gradcheck import gradcheck

RNG = np.random.default_rng(9)
A = RNG.standard_normal((3, 4))


def _g(h, device):
    return gp.asarray(h, device=device)


def _close(got, want, rtol=1e-10, atol=1e-12):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _same(got, want):
    """Bit for bit (NaNs equal, signed zeros told apart)."""
    want, got = np.asarray(want), np.asarray(got)
    assert got.shape == want.shape and str(got.dtype) == str(want.dtype), (got, want)
    assert np.array_equal(got, want, equal_nan=True), (got, want)
    fin = ~np.isnan(want) if want.dtype.kind in "fc" else slice(None)
    assert np.array_equal(np.signbit(got.real[fin]), np.signbit(want.real[fin])), (got, want)


def _np(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


# ---- float and integer helpers ---------------------------------------------------------------
F = np.array([5.5, -5.5, 7.0, -7.0, 0.3, -0.0, -4.0, np.inf, 1.0, 2.5])
G = np.array([2.0, 2.0, -3.0, -3.0, 0.1, 1.0, 2.0, 2.0, np.inf, 0.0])


def test_fmod_divmod_modf(device):
    x, y = _g(F, device), _g(G, device)
    _same(gp.fmod(x, y), _np(np.fmod, F, G))
    _same(gp.fmod(x, 2.0), _np(np.fmod, F, 2.0))
    ai, bi = np.array([7, -7, 7, -7, 5, 0, 9]), np.array([3, 3, -3, -3, 2, 5, 4])
    _same(gp.fmod(_g(ai, device), _g(bi, device)), np.fmod(ai, bi))
    for got, want in zip(gp.divmod(_g(ai, device), _g(bi, device)), np.divmod(ai, bi)):
        _same(got, want)
    fin = np.isfinite(F)   # inf // y is the Array API's inf (NumPy's nan): docs/numpy.md
    for got, want in zip(gp.divmod(_g(F[fin], device), 1.5), np.divmod(F[fin], 1.5)):
        _close(got, want)
    for got, want in zip(gp.modf(x), np.modf(F)):
        _same(got, want)
    for got, want in zip(gp.modf(_g(ai, device)), np.modf(ai)):   # integers: float64
        _same(got, want)
    with pytest.raises(TypeError, match="fmod"):
        gp.fmod(x, "a")
    a = _g(np.array([2.3, -1.7, 0.6]), device)
    assert gradcheck(lambda u, v: gp.fmod(u, v), (a, _g(np.array([0.7, 0.5, -0.4]), device)))
    assert gradcheck(lambda u: gp.modf(u)[0], (a,))


def _flushes(device) -> bool:
    """Whether float32 arithmetic on ``device`` flushes subnormals (NVIDIA's Vulkan driver
    without DenormPreserve: docs/vulkan.md, floating-point semantics)."""
    x = gp.asarray(np.array([1e-20], np.float32), device=device)
    return float(np.asarray(x * x)[0]) == 0.0


def test_frexp_ldexp(device):
    x = np.array([1.5, -2.5, 0.0, -0.0, np.inf, -np.inf, np.nan, 3e-310, 1e300, 0.75, 1.0,
                  2.0 ** -1022, 2.0 ** 52 - 1])
    m, e = gp.frexp(_g(x, device))
    wm, we = np.frexp(x)
    _same(m, wm)
    _same(e, we)
    # (a float32 subnormal reads as 0 on a flushing device)
    x32 = np.array([1.5, -3.0, 3e38 if _flushes(device) else 1e-40, 3e38, 0.0], np.float32)
    for got, want in zip(gp.frexp(_g(x32, device)), np.frexp(x32)):
        _same(got, want)
    k = np.array([3, -3, 0, 5, -1100, 10, 1, 1, -2000, 1, 2, 3, -60], np.int32)
    _same(gp.ldexp(_g(x, device), _g(k, device)), _np(np.ldexp, x, k))
    _same(gp.ldexp(_g(x32, device), _g(k[:5], device)), _np(np.ldexp, x32, k[:5]))
    _same(gp.ldexp(_g(np.array([3, -1]), device), 4), np.ldexp(np.array([3, -1]), 4))
    _same(gp.ldexp(*gp.frexp(_g(x, device))), x)      # round trip
    with pytest.raises(TypeError, match="ldexp: x2"):
        gp.ldexp(_g(x, device), _g(x, device))
    a = _g(np.array([1.3, -6.0, 0.2]), device)
    assert gradcheck(lambda u: gp.ldexp(u, _g(np.array([2, -1, 3]), device)), (a,))
    assert gradcheck(lambda u: gp.frexp(u)[0], (a,))


def test_gcd_lcm(device):
    p = RNG.integers(-60, 60, 16)
    q = RNG.integers(-60, 60, 16)
    q[:3], p[1] = 0, 0
    _same(gp.gcd(_g(p, device), _g(q, device)), np.gcd(p, q))
    _same(gp.lcm(_g(p, device), _g(q, device)), np.lcm(p, q))
    p8 = p.astype(np.int8)
    _same(gp.gcd(_g(p8, device), 12), np.gcd(p8, np.int8(12)))
    _same(gp.gcd(_g(np.array([2 ** 40, 3 * 2 ** 35]), device), _g(np.array([[6], [2 ** 36]]),
                                                                   device)),
          np.gcd(np.array([2 ** 40, 3 * 2 ** 35]), np.array([[6], [2 ** 36]])))  # broadcast
    fib = np.array([832040, 514229])
    _same(gp.gcd(_g(fib, device), 317811), np.gcd(fib, 317811))  # Fibonacci
    with pytest.raises(TypeError, match="gcd: integer"):
        gp.gcd(_g(F, device), 2)


def test_float_power_angle_spacing(device):
    x32 = A.astype(np.float32)
    _close(gp.float_power(_g(np.abs(x32), device), 1.5), np.float_power(np.abs(x32), 1.5))
    _close(gp.float_power(_g(np.arange(4), device), -2), _np(np.float_power, np.arange(4), -2.0))
    z = np.array([1 + 1j, -1 + 0j, -2j, 0j, -1 - 1e-3j])
    _close(gp.angle(_g(z, device)), np.angle(z))
    _close(gp.angle(_g(z.astype(np.complex64), device), deg=True),
           np.angle(z.astype(np.complex64), deg=True), rtol=1e-6)
    r = np.array([-2.0, 3.0, -0.0, 0.0])
    _same(gp.angle(_g(r, device)), np.angle(r))
    _same(gp.angle(_g(np.array([-2, 3]), device)), np.angle(np.array([-2, 3])))
    s = np.array([1.0, -1.0, 0.0, -0.0, 1e-3, np.inf, np.nan, 3e-310, 1e300])
    _same(gp.spacing(_g(s, device)), np.spacing(s))
    s32 = np.array([1.0, -3.0, 0.0, 1e-40, 3e38, np.inf], np.float32)
    if _flushes(device):   # spacing(0) and spacing of a subnormal are subnormal: flushed there
        s32 = s32[[0, 1, 4, 5]]
    _same(gp.spacing(_g(s32, device)), np.spacing(s32))
    a = _g(np.array([0.5, 1.7, 2.2]), device)
    assert gradcheck(lambda u, v: gp.float_power(u, v), (a, _g(np.array([1.5, -0.5, 2.0]),
                                                               device)))
    zz = _g(np.array([1.0 + 2.0j, -0.5 + 0.3j]), device)
    torch = pytest.importorskip("torch")
    t = torch.tensor(np.asarray(zz), requires_grad=True)
    torch.angle(t).sum().backward()
    zz.requires_grad = True
    gp.sum(gp.angle(zz)).backward()
    np.testing.assert_allclose(np.asarray(zz.grad), t.grad.numpy(), rtol=1e-12)


def test_unwrap_sort_complex_real_if_close(device):
    ph = np.cumsum(RNG.uniform(-3, 3, (2, 9)), axis=1)
    wrapped = np.angle(np.exp(1j * ph))
    _close(gp.unwrap(_g(wrapped, device)), np.unwrap(wrapped))
    _close(gp.unwrap(_g(wrapped, device), axis=0), np.unwrap(wrapped, axis=0))
    _close(gp.unwrap(_g(wrapped, device), discont=4.0), np.unwrap(wrapped, discont=4.0))
    deg = np.array([0.0, 170.0, -170.0, 90.0, 180.0, 0.0])
    _close(gp.unwrap(_g(deg, device), period=360), np.unwrap(deg, period=360))
    _close(gp.unwrap(_g(np.array([0, 4, 8, 1]), device), period=6.0),
           np.unwrap(np.array([0, 4, 8, 1]), period=6.0))
    assert gradcheck(lambda u: gp.unwrap(u), (_g(wrapped[0], device),))
    c = np.array([1 + 2j, 1 - 1j, -3 + 0j, 1 + 0j, 2 - 5j])
    _same(gp.sort_complex(_g(c, device)), np.sort_complex(c))
    for d in (np.int16, np.float32, np.int64):
        v = np.array([3, -1, 2, 0], d)
        _same(gp.sort_complex(_g(v, device)), np.sort_complex(v))
    near = np.array([1 + 1e-17j, 2 - 1e-16j])
    _same(gp.real_if_close(_g(near, device)), np.real_if_close(near))
    _same(gp.real_if_close(_g(c, device)), np.real_if_close(c))
    _same(gp.real_if_close(_g(F, device)), np.real_if_close(F))


def test_bits(device):
    v = np.array([0, 1, -1, 7, -128, 127, 85], np.int8)
    _same(gp.bitwise_count(_g(v, device)), np.bitwise_count(v))
    w = np.array([0, 2 ** 40 - 1, -(2 ** 62), 12345], np.int64)
    _same(gp.bitwise_count(_g(w, device)), np.bitwise_count(w))
    b = RNG.random((3, 11)) < 0.5
    for kw in ({}, {"axis": 1}, {"axis": 0}, {"axis": -1, "bitorder": "little"}):
        _same(gp.packbits(_g(b, device), **kw), np.packbits(b, **kw))
    u = np.packbits(b, axis=1)
    for kw in ({}, {"axis": 1}, {"axis": 1, "count": 11}, {"axis": 1, "count": -3},
               {"axis": 0, "count": 20, "bitorder": "little"}, {"count": 5}):
        _same(gp.unpackbits(_g(u, device), **kw), np.unpackbits(u, **kw))
    _same(gp.packbits(_g(np.array([0, 3, 0, 2, 1]), device)), np.packbits([0, 3, 0, 2, 1]))
    with pytest.raises(TypeError, match="unpackbits"):
        gp.unpackbits(_g(np.array([1, 2]), device))
    with pytest.raises(ValueError, match="bitorder"):
        gp.packbits(_g(b, device), bitorder="middle")
    with pytest.raises(TypeError, match="bitwise_count"):
        gp.bitwise_count(_g(F, device))


# ---- polynomials -----------------------------------------------------------------------------
def test_polynomials(device):
    p, q = np.array([2.0, -1.0, 3.0, 0.5]), np.array([1.5, -2.0])
    gp_, gq = _g(p, device), _g(q, device)
    for f in ("polyadd", "polysub", "polymul"):
        _close(getattr(gp, f)(gp_, gq), getattr(np, f)(p, q))
        _close(getattr(gp, f)(gq, gp_), getattr(np, f)(q, p))
    _close(gp.polyadd(_g(np.array([1, 2]), device), [3, 4, 5]), np.polyadd([1, 2], [3, 4, 5]))
    for m in (0, 1, 2, 5):
        _close(gp.polyder(gp_, m), np.polyder(p, m))
    _close(gp.polyder(_g(np.array([3, 2, 1]), device)), np.polyder(np.array([3, 2, 1])))
    _close(gp.polyint(gp_), np.polyint(p))
    _close(gp.polyint(gp_, 2, [1.0, -2.0]), np.polyint(p, 2, [1.0, -2.0]))
    _close(gp.polyint(_g(np.array([3, 2]), device), k=4), np.polyint(np.array([3, 2]), k=4))
    for u, v in ((p, q), (p, p[1:]), (q, p), (np.array([1.0, -3, 3, -1]), np.array([1.0, -1]))):
        for got, want in zip(gp.polydiv(_g(u, device), _g(v, device)), np.polydiv(u, v)):
            _close(got, want)
    with pytest.raises(ValueError, match="polyder: order"):
        gp.polyder(gp_, -1)
    r = np.array([1.0, -2.0, 0.5])
    _close(gp.poly(_g(r, device)), np.poly(r))
    _close(gp.poly(_g(np.array([1j, -1j, 2.0]), device)), np.poly(np.array([1j, -1j, 2.0])))
    _close(gp.poly(_g(np.array([1j, 2.0]), device)), np.poly(np.array([1j, 2.0])))
    assert gradcheck(lambda a, b: gp.polydiv(a, b)[0], (gp_, gq))
    assert gradcheck(lambda a, b: gp.polymul(gp.polyint(a), gp.polyder(b, 0)), (gp_, gq))
    assert gradcheck(lambda a: gp.poly(a), (_g(r, device),))


def test_roots(device):
    def key(z):
        z = np.asarray(z)
        return z[np.lexsort((np.round(z.imag, 8), np.round(z.real, 8)))]
    for p in ([1.0, -3, 2], [1.0, -6, 11, -6, 0, 0], [0.0, 0, 1, 0, 1], [2.0], [0.0, 0.0],
              [1, -3, 2]):
        got, want = gp.roots(_g(np.array(p), device)), np.roots(p)
        assert np.asarray(got).dtype == want.dtype and got.shape == want.shape, (got, want)
        np.testing.assert_allclose(key(got), key(want), atol=1e-10)


def test_piecewise_matvec_vecmat(device):
    x = np.linspace(-2.5, 2.5, 7)
    g = _g(x, device)
    _close(gp.piecewise(g, [g < 0, g >= 0], [lambda v: -v, lambda v: v ** 2]),
           np.piecewise(x, [x < 0, x >= 0], [lambda v: -v, lambda v: v ** 2]))
    _close(gp.piecewise(g, [g < -1, g > 1], [-1.0, 1.0, lambda v: v / 2]),
           np.piecewise(x, [x < -1, x > 1], [-1.0, 1.0, lambda v: v / 2]))
    _close(gp.piecewise(g, g > 0, [lambda v: v.mean(), 7.0]),    # the function sees x[cond]
           np.piecewise(x, x > 0, [lambda v: v.mean(), 7.0]))
    xi = np.arange(-3, 4)
    _close(gp.piecewise(_g(xi, device), [_g(xi, device) > 0], [lambda v: v * 2.7]),
           np.piecewise(xi, [xi > 0], [lambda v: v * 2.7]))
    with pytest.raises(ValueError, match="piecewise"):
        gp.piecewise(g, [g < 0], [1.0, 2.0, 3.0])
    assert gradcheck(lambda v: gp.piecewise(v, [v < 0], [lambda t: t * t, lambda t: 3 * t]),
                     (g[[0, 1, 2, 4, 5, 6]],))   # not at the kink
    m = RNG.standard_normal((2, 3, 4))
    vec = RNG.standard_normal(4)
    _close(gp.matvec(_g(m, device), _g(vec, device)), np.matvec(m, vec))
    v3 = RNG.standard_normal((2, 1, 3))
    _close(gp.vecmat(_g(v3, device), _g(m, device)), np.vecmat(v3, m))
    mc = m + 1j * RNG.standard_normal(m.shape)
    vc = RNG.standard_normal(3) - 2j
    _close(gp.vecmat(_g(vc, device), _g(mc, device)), np.vecmat(vc, mc))
    with pytest.raises(ValueError, match="matvec"):
        gp.matvec(_g(vec, device), _g(vec, device))
    assert gradcheck(lambda a, b: gp.matvec(a, b), (_g(m, device), _g(vec, device)))
    assert gradcheck(lambda a, b: gp.vecmat(a, b), (_g(v3, device), _g(m, device)))


# ---- dtypes, construction, memory ------------------------------------------------------------
def test_dtype_questions(device):
    x = _g(A.astype(np.float32), device)
    gp.astype(x, gp.bfloat16)   # (once bfloat16 is seen, its ops compute in float32: not these)
    assert gp.issubdtype(x.dtype, gp.floating) and gp.issubdtype(x.dtype, np.inexact)
    assert not gp.issubdtype(x.dtype, gp.integer)
    assert gp.issubdtype(gp.int8, gp.signedinteger) and gp.issubdtype("uint16", gp.unsignedinteger)
    assert gp.issubdtype(gp.complex64, gp.complexfloating) and gp.issubdtype(gp.float64, "f8")
    assert gp.issubdtype(gp.bfloat16, gp.floating) and not gp.issubdtype(gp.bfloat16, gp.float32)
    for a, b in (("int64", "float32"), ("int8", "uint8"), ("float16", "int16"),
                 ("bool", "int32"), ("complex64", "float64")):
        assert gp.promote_types(a, gp.dtype(b)) == gp.dtype(np.promote_types(a, b).name)
    for hs in ((np.arange(3),), (np.ones(2, np.float16), np.ones(2, np.int8)),
               (np.ones(2, np.float32), np.ones(1, np.complex64)), (np.ones(2, np.float32),)):
        want = np.common_type(*hs)
        assert gp.common_type(*(_g(h, device) for h in hs)) == gp.dtype(want)
    for v in (3, -3, 300, 70000, 1.5, 1e300, 2j, True):
        assert gp.min_scalar_type(v) == gp.dtype(np.min_scalar_type(v).name)
    assert gp.min_scalar_type(x) == x.dtype
    assert gp.typename("d") == np.typename("d")
    assert gp.iterable(x) and not gp.iterable(x[0, 0]) and gp.iterable([1]) and not gp.iterable(2)


def test_construction(device):
    _close(gp.asanyarray([[1, 2]], device=device), np.asanyarray([[1, 2]]))
    y = _g(A, device)
    assert gp.asanyarray(y) is y
    v = gp.ascontiguousarray(y[:, ::2])
    assert v.is_contiguous() and np.array_equal(np.asarray(v), np.ascontiguousarray(A[:, ::2]))
    _close(gp.ascontiguousarray(3.0, device=device), np.ascontiguousarray(3.0))
    _close(gp.asfortranarray([1, 2], device=device), np.asfortranarray([1, 2]))
    with pytest.raises(NotImplementedError, match="asfortranarray"):
        gp.asfortranarray(y)
    r = gp.require(y, gp.float32, ["C", "W"])
    _close(r, np.require(A, np.float32, ["C", "W"]))
    assert gp.require(y, requirements="O") is not y
    with pytest.raises(NotImplementedError, match="require"):
        gp.require(y, requirements="F")
    _close(gp.asarray_chkfinite([1.0, 2.0], device=device), np.asarray_chkfinite([1.0, 2.0]))
    with pytest.raises(ValueError, match="infs or NaNs"):
        gp.asarray_chkfinite(_g(np.array([1.0, np.nan]), device))
    _close(gp.fromfunction(lambda i, j: i * 10 + j, (2, 3), device=device),
           np.fromfunction(lambda i, j: i * 10 + j, (2, 3)))
    _close(gp.fromfunction(lambda i: i, (4,), dtype=gp.int32, device=device),
           np.fromfunction(lambda i: i, (4,), dtype=np.int32))
    _close(gp.fromiter((i * i for i in range(5)), gp.float32, device=device),
           np.fromiter((i * i for i in range(5)), np.float32))
    buf = np.arange(6, dtype=np.int16).tobytes()
    _close(gp.frombuffer(buf, gp.int16, count=3, offset=2, device=device),
           np.frombuffer(buf, np.int16, count=3, offset=2))
    path, rep = gp.einsum_path("ij,jk,kl->il", y, _g(A.T, device), y, optimize="greedy")
    wpath, wrep = np.einsum_path("ij,jk,kl->il", A, A.T, A, optimize="greedy")
    assert path == wpath and rep == wrep


def test_copyto(device):
    d = _g(np.zeros((2, 3)), device)
    gp.copyto(d, _g(np.arange(3.0), device))
    want = np.zeros((2, 3))
    np.copyto(want, np.arange(3.0))
    _close(d, want)
    m = np.array([[True, False, True], [False, True, False]])
    gp.copyto(d, 5, where=_g(m, device))
    np.copyto(want, 5, where=m)
    _close(d, want)
    gp.copyto(d, _g(np.arange(3, dtype=np.int32), device))     # int to float: same_kind
    np.copyto(want, np.arange(3, dtype=np.int32))
    _close(d, want)
    di = _g(np.zeros(3, np.int32), device)
    with pytest.raises(TypeError, match="copyto: cannot cast"):
        gp.copyto(di, _g(np.ones(3), device))
    with pytest.raises(TypeError, match="copyto: cannot cast"):
        gp.copyto(di, 2.5)
    gp.copyto(di, _g(np.array([1.7, -2.2, 3.9]), device), casting="unsafe")
    wi = np.zeros(3, np.int32)
    np.copyto(wi, np.array([1.7, -2.2, 3.9]), casting="unsafe")
    _close(di, wi)
    leaf = _g(np.ones(3), device)
    leaf.requires_grad = True
    out = gp.zeros(3, device=device)
    gp.copyto(out, leaf * 2.0, where=_g(np.array([True, False, True]), device))
    gp.sum(out * out).backward()
    np.testing.assert_allclose(np.asarray(leaf.grad), [8.0, 0.0, 8.0])


def test_memory_questions(device):
    x = _g(np.arange(12.0).reshape(3, 4), device)
    h = np.arange(12.0).reshape(3, 4)
    for a, b, ha, hb in ((x, x[1:], h, h[1:]), (x[0], x[1], h[0], h[1]),
                         (x[:, ::2], x[:, 1::2], h[:, ::2], h[:, 1::2]),
                         (x[:2], x[1:], h[:2], h[1:]), (x, x.copy(), h, h.copy()),
                         (x, x.T, h, h.T)):
        assert gp.may_share_memory(a, b) == np.may_share_memory(ha, hb)
        assert gp.shares_memory(a, b) == np.shares_memory(ha, hb)


# ---- printing, files, methods ----------------------------------------------------------------
def test_printing(device):
    x = _g(A, device)
    assert gp.array2string(x, precision=2, separator=",") == np.array2string(A, precision=2,
                                                                             separator=",")
    assert gp.array_str(x, precision=3) == np.array_str(A, precision=3)
    r = gp.array_repr(x, precision=2)
    assert r.startswith("Array(") and np.array_repr(A, precision=2)[6:-1] in r
    with gp.printoptions(precision=1):
        assert gp.get_printoptions()["precision"] == 1
        assert repr(_g(np.array([0.3333, 1.0]), device)).startswith(
            "Array(" + repr(np.array([0.3333, 1.0]))[6:-1])
    old = gp.get_printoptions()
    gp.set_printoptions(precision=3)
    try:
        assert np.get_printoptions()["precision"] == 3
    finally:
        gp.set_printoptions(**old)


def test_text_and_binary_files(device, tmp_path):
    x = _g(A, device)
    f = tmp_path / "a.txt"
    gp.savetxt(f, x, fmt="%.6f", delimiter=",")
    np.savetxt(tmp_path / "b.txt", A, fmt="%.6f", delimiter=",")
    assert f.read_text() == (tmp_path / "b.txt").read_text()
    got = gp.loadtxt(f, delimiter=",", device=device)
    assert got.device == x.device
    _close(got, np.loadtxt(f, delimiter=","))
    _close(gp.loadtxt(f, gp.float32, delimiter=",", usecols=(0, 2), device=device),
           np.loadtxt(f, np.float32, delimiter=",", usecols=(0, 2)))
    s = io.StringIO("1,2,\n4,,6\n")
    _close(gp.genfromtxt(s, delimiter=",", device=device),
           np.genfromtxt(io.StringIO("1,2,\n4,,6\n"), delimiter=","))
    with pytest.raises(TypeError, match="loadtxt: only numeric"):
        gp.loadtxt(io.StringIO("a b\n"), dtype=str)
    raw = tmp_path / "x.bin"
    x.tofile(raw)
    _close(gp.fromfile(raw, device=device).reshape(3, 4), A)
    _close(gp.fromfile(raw, gp.float64, count=2, offset=8, device=device),
           np.fromfile(raw, np.float64, count=2, offset=8))
    x.tofile(tmp_path / "x.txt", sep=" ", format="%.3f")
    A.tofile(tmp_path / "y.txt", sep=" ", format="%.3f")
    assert (tmp_path / "x.txt").read_text() == (tmp_path / "y.txt").read_text()
    assert x.tobytes() == A.tobytes() and x[:, 1].tobytes() == A[:, 1].tobytes()


def test_array_methods(device):
    x = _g(A, device)
    z = _g(A + 1j, device)
    _close(z.conj(), (A + 1j).conj())
    _close(z.conjugate(), (A + 1j).conjugate())
    _close(x.conj(), A.conj())
    s = np.sort(A[0])
    _close(_g(s, device).searchsorted([0.0, 5.0], side="right"), s.searchsorted([0.0, 5.0],
                                                                                 side="right"))
    p = _g(A.copy(), device)
    assert p.partition(1, axis=1) is None
    hp = A.copy()
    hp.partition(1, axis=1)
    _close(p[:, 1], hp[:, 1])
    assert np.all(np.asarray(p[:, :1]) <= np.asarray(p[:, 1:2]))
    ap = x.argpartition(2, axis=None)
    assert np.take(A, np.asarray(ap))[2] == np.take(A, np.argpartition(A, 2, axis=None))[2]
    q = _g(A.copy(), device)
    hq = A.copy()
    q.put([0, 5], [-1.0, -2.0])
    hq.put([0, 5], [-1.0, -2.0])
    _close(q, hq)
    _close(x.compress([True, False, True], axis=0), A.compress([True, False, True], axis=0))
    c = np.array([[0, 1], [1, 0]])
    _close(_g(c, device).choose([_g(A[:2, :2], device), 10.0]), c.choose([A[:2, :2], 10.0]))
    # flat: indexing, assignment, iteration
    _close(x.flat[5], A.flat[5])
    _close(x.flat[2:7:2], A.flat[2:7:2])
    _close(x.flat[[0, -1, 3]], A.flat[[0, -1, 3]])
    f = _g(A.copy(), device)
    hf = A.copy()
    f.flat[[1, 6, 11]] = 0.5
    hf.flat[[1, 6, 11]] = 0.5
    f.flat[::5] = _g(np.array([7.0, 8.0]), device)
    hf.flat[::5] = np.array([7.0, 8.0])
    _close(f, hf)
    f.flat = [1.0, 2.0, 3.0, 4.0, 5.0]
    hf.flat = [1.0, 2.0, 3.0, 4.0, 5.0]
    _close(f, hf)
    assert len(x.flat) == A.size
    assert [float(v) for v in x.flat] == list(A.flat)
    _close(np.asarray(x.flat), np.asarray(A.flat))
    # resize in place: zero-filled (np.resize repeats)
    r = _g(A.copy(), device)
    hr = A.copy()
    r.resize(4, 4)
    hr.resize(4, 4)
    _close(r, hr)
    r.resize((2, 2))
    hr.resize((2, 2))
    _close(r, hr)
    with pytest.raises(ValueError, match="does not own"):
        r[0].resize(3)
