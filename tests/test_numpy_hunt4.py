"""NumPy features a data scientist types that grilly lacked, against numpy on every device:
take's array_like indices, modes and axis=None on N-D input, take_along_axis(axis=None);
reductions' where=/initial= and mean/std/var's dtype= (nan-variants too); histogram's
estimator bins, histogram_bin_edges, histogram2d, histogramdd; compress, extract, choose,
apply_along_axis, apply_over_axes, ndindex, ndenumerate; unique(axis=); pad's 'median',
reflect_type='odd' and dict pad_width; interp(period=); the quantile methods inverted_cdf,
averaged_inverted_cdf, closest_observation (and the picking methods' dtype)."""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly.autograd.gradcheck import gradcheck

RNG = np.random.default_rng(11)
A = RNG.standard_normal((3, 4))
M = RNG.random((3, 4)) < 0.6
V = RNG.standard_normal(7)


def _g(h, device):
    return gp.asarray(h, device=device)


def _close(got, want, rtol=1e-10, atol=1e-12):
    want = np.asarray(want)
    got = np.asarray(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert str(got.dtype) == str(want.dtype), (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def _np_quiet(f, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return f(*args, **kw)


# ---- take, take_along_axis -------------------------------------------------------------------
def test_take_numpy_forms(device):
    x = _g(A, device)
    v = _g(V, device)
    _close(gp.take(v, [1, -2, 3]), np.take(V, [1, -2, 3]))           # a list
    _close(gp.take(x, [0, 5, 11]), np.take(A, [0, 5, 11]))           # axis=None: flattened
    _close(gp.take(x, 7), np.take(A, 7))                             # an int: a 0-d result
    _close(gp.take(x, [[0, 2], [1, 1]], axis=1), np.take(A, [[0, 2], [1, 1]], axis=1))  # N-D
    _close(gp.take(x, _g(np.array([[2, 0]]), device), axis=0),
           np.take(A, np.array([[2, 0]]), axis=0))
    for mode in ("wrap", "clip"):
        idx = [-7, -1, 0, 3, 4, 9]
        _close(gp.take(v, idx, mode=mode), np.take(V, idx, mode=mode))
        _close(gp.take(x, idx, axis=1, mode=mode), np.take(A, idx, axis=1, mode=mode))
        _close(gp.take(x, idx, None, None, mode), np.take(A, idx, None, None, mode))  # positional
        _close(x.take(idx, mode=mode), A.take(idx, mode=mode))   # the method
    with pytest.raises(IndexError):
        gp.take(v, [7])                   # mode 'raise'
    with pytest.raises(ValueError, match="take: mode"):
        gp.take(v, [0], mode="bogus")
    with pytest.raises(TypeError, match="take: indices"):
        gp.take(v, [0.5])


def test_take_along_axis_none(device):
    x = _g(A, device)
    i = np.array([11, 0, 4])
    _close(gp.take_along_axis(x, _g(i, device), axis=None), np.take_along_axis(A, i, axis=None))
    _close(gp.take_along_axis(x, _g(i, device), None), np.take_along_axis(A, i, None))
    with pytest.raises(ValueError, match="1-D"):
        gp.take_along_axis(x, _g(i[None], device), axis=None)


def test_take_gradients(device):
    x = _g(A, device)
    assert gradcheck(lambda a: gp.take(a, [[1, 1], [13, -1]], mode="wrap"), (x,))
    assert gradcheck(lambda a: gp.take(a, [-3, 2, 9], axis=1, mode="clip"), (x,))
    assert gradcheck(lambda a: gp.take_along_axis(a, _g(np.array([3, 3, 0]), device),
                                                  axis=None), (x,))


# ---- reductions: where=, initial=, dtype= -----------------------------------------------------
def test_reductions_where_initial(device):
    x, m = _g(A, device), _g(M, device)
    ints = RNG.integers(-5, 9, (3, 4))
    xi = _g(ints, device)
    row = np.array([True, False, True, True])
    for axis in (None, 0, 1):
        for keep in (False, True):
            kw = dict(axis=axis, keepdims=keep)
            _close(gp.sum(x, where=m, **kw), np.sum(A, where=M, **kw))
            _close(gp.prod(x, where=m, **kw), np.prod(A, where=M, **kw))
            _close(gp.sum(xi, where=row, initial=3, **kw), np.sum(ints, where=row, initial=3, **kw))
            _close(gp.mean(x, where=m, **kw), _np_quiet(np.mean, A, where=M, **kw))
            _close(gp.mean(xi, where=m, **kw), _np_quiet(np.mean, ints, where=M, **kw))
            _close(gp.max(x, where=m, initial=-0.5, **kw), np.max(A, where=M, initial=-0.5, **kw))
            _close(gp.min(xi, where=m, initial=2, **kw), np.min(ints, where=M, initial=2, **kw))
            _close(gp.max(x, initial=0.25, **kw), np.max(A, initial=0.25, **kw))
            _close(gp.any(x > 1, where=m, **kw), np.any(A > 1, where=M, **kw))
            _close(gp.all(x > -1, where=m, **kw), np.all(A > -1, where=M, **kw))
            for f in ("var", "std"):
                _close(_np_quiet(getattr(gp, f), x, where=m, ddof=1, **kw),
                       _np_quiet(getattr(np, f), A, where=M, ddof=1, **kw))
    _close(gp.sum(xi, initial=2.7), np.sum(ints, initial=2.7))   # initial cast to int64
    _close(gp.max(xi, initial=50.9), np.max(ints, initial=50.9))
    _close(gp.sum(x, 1, None, None, False, 1.5, m), np.sum(A, 1, None, None, False, 1.5, M))
    _close(gp.max(x, 0, None, True, 9.0, m), np.max(A, 0, None, True, 9.0, M))
    empty = _g(np.zeros((0, 3)), device)
    _close(gp.max(empty, axis=0, initial=1.0), np.max(np.zeros((0, 3)), axis=0, initial=1.0))
    _close(_np_quiet(gp.mean, x, where=_g(np.zeros(4, bool), device)),
           _np_quiet(np.mean, A, where=np.zeros(4, bool)))
    with pytest.raises(ValueError, match="max: where= needs initial="):
        gp.max(x, where=m)
    with pytest.raises(TypeError, match="sum: where must be a bool"):
        gp.sum(x, where=_g(np.ones(4), device))
    with pytest.raises(ValueError, match="sum: where of shape"):
        gp.sum(x, where=_g(np.ones(3, bool), device))


def test_mean_std_var_dtype(device):
    x = _g(A, device)
    ints = np.arange(10).reshape(2, 5)
    xi = _g(ints, device)
    _close(gp.mean(x, dtype=gp.float32), np.mean(A, dtype=np.float32), rtol=1e-6)
    _close(gp.mean(xi, axis=1, dtype="float32"), np.mean(ints, axis=1, dtype=np.float32))
    _close(gp.mean(xi, axis=1, dtype=gp.int64), np.mean(ints, axis=1, dtype=np.int64))
    _close(gp.std(x, 0, gp.float32), np.std(A, 0, np.float32), rtol=1e-6)
    _close(gp.var(xi, dtype=gp.float32), np.var(ints, dtype=np.float32), rtol=1e-6)
    h16 = np.array([1.0, 2.0, 3.0, 4.0], np.float16)
    x16 = _g(h16, device)
    w = np.array([True, True, False, True])
    _close(gp.mean(x16, where=_g(w, device)), np.mean(h16, where=w), rtol=1e-3)


def test_methods_and_numpy_functions_take_where(device):
    """np.sum(x, where=m) calls x.sum(where=m): the methods pass NumPy's keywords on."""
    x, m = _g(A, device), _g(M, device)
    _close(x.sum(axis=1, where=m), A.sum(axis=1, where=M))
    _close(x.mean(where=m), A.mean(where=M))
    _close(x.max(initial=3.0), A.max(initial=3.0))
    _close(x.min(0, where=m, initial=5.0), A.min(0, where=M, initial=5.0))
    _close(x.var(1, where=m), A.var(1, where=M))
    _close((x > 0).any(1, where=m), (A > 0).any(1, where=M))
    _close(np.sum(x, axis=0, where=M), np.sum(A, axis=0, where=M))
    _close(np.max(x, initial=4.0), np.max(A, initial=4.0))


def test_nan_reductions_where_initial(device):
    h = A.copy()
    h[0, 1] = h[2, 2] = np.nan
    h[1, :] = np.nan
    x, m = _g(h, device), _g(M, device)
    for axis in (None, 0, 1):
        _close(gp.nansum(x, axis, where=m, initial=1.0), np.nansum(h, axis, where=M, initial=1.0))
        _close(gp.nanprod(x, axis, where=m), np.nanprod(h, axis, where=M))
        _close(_np_quiet(gp.nanmean, x, axis, where=m), _np_quiet(np.nanmean, h, axis, where=M))
        _close(_np_quiet(gp.nanvar, x, axis, ddof=1, where=m),
               _np_quiet(np.nanvar, h, axis, ddof=1, where=M))
        _close(_np_quiet(gp.nanstd, x, axis, where=m), _np_quiet(np.nanstd, h, axis, where=M))
        _close(gp.nanmax(x, axis, initial=-9.0), np.nanmax(h, axis, initial=-9.0))
        _close(gp.nanmin(x, axis, where=m, initial=9.0), np.nanmin(h, axis, where=M, initial=9.0))
    with pytest.raises(ValueError, match="nanmax: where= needs initial="):
        gp.nanmax(x, where=m)


def test_reduction_gradients(device):
    x, m = _g(A, device), _g(M, device)
    assert gradcheck(lambda a: gp.sum(a, axis=1, where=m, initial=2.0), (x,))
    assert gradcheck(lambda a: gp.prod(a, axis=0, where=m), (x,))
    assert gradcheck(lambda a: gp.mean(a, axis=1, where=m), (x,))
    assert gradcheck(lambda a: gp.var(a, axis=1, where=m), (x,))   # (column 0 selects none)
    assert gradcheck(lambda a: gp.max(a, axis=1, where=m, initial=-5.0), (x,))
    assert gradcheck(lambda a: gp.nanmean(a, axis=1, where=m), (x,))


# ---- histograms ------------------------------------------------------------------------------
HIST_DATA = (RNG.standard_normal(60), RNG.standard_normal(33).astype(np.float32),
             RNG.integers(0, 15, 40), np.exp(RNG.standard_normal(50)))


@pytest.mark.parametrize("bins", ["auto", "fd", "doane", "rice", "scott", "sqrt", "stone",
                                  "sturges"])
def test_histogram_estimators(device, bins):
    for h in HIST_DATA:
        x = _g(h, device)
        for rng in (None, (0.1, 1.7)):
            want = _np_quiet(np.histogram_bin_edges, h, bins=bins, range=rng)
            _close(gp.histogram_bin_edges(x, bins=bins, range=rng), want, rtol=1e-6)
            c, e = gp.histogram(x, bins=bins, range=rng)
            wc, we = _np_quiet(np.histogram, h, bins=bins, range=rng)
            _close(c, wc)
            _close(e, we, rtol=1e-6)
    with pytest.raises(ValueError, match="histogram: 'bogus' is not a valid estimator"):
        gp.histogram(x, bins="bogus")
    with pytest.raises(TypeError, match="weighted"):
        gp.histogram(x, bins=bins, weights=x)


def test_histogram_bin_edges_counts_and_edges(device):
    h = HIST_DATA[0]
    x = _g(h, device)
    _close(gp.histogram_bin_edges(x, 5), np.histogram_bin_edges(h, 5))
    _close(gp.histogram_bin_edges(x, 4, range=(-1, 2)), np.histogram_bin_edges(h, 4, range=(-1, 2)))
    _close(gp.histogram_bin_edges(x, [-1, 0, 2.5]), np.histogram_bin_edges(h, [-1, 0, 2.5]))
    with pytest.raises(ValueError, match="monotonically"):
        gp.histogram_bin_edges(x, [0, -1])


def test_histogram2d_and_dd(device):
    hx, hy = RNG.standard_normal(30), RNG.standard_normal(30).astype(np.float32)
    w = RNG.random(30)
    x, y, gw = _g(hx, device), _g(hy, device), _g(w, device)
    for kw, gkw in (({}, {}), ({"bins": 3}, {"bins": 3}), ({"bins": [2, 4]}, {"bins": [2, 4]}),
                    ({"bins": [np.array([-1.0, 0, 1]), 3]},
                     {"bins": [_g(np.array([-1.0, 0, 1]), device), 3]}),
                    ({"bins": np.array([-2.0, 0, 0.5, 2])}, {"bins": [-2.0, 0, 0.5, 2]}),
                    ({"bins": 4, "density": True}, {"bins": 4, "density": True}),
                    ({"bins": 3, "range": [(-1, 1), (-2, 2)], "weights": w},
                     {"bins": 3, "range": [(-1, 1), (-2, 2)], "weights": gw})):
        H, ex, ey = np.histogram2d(hx, hy, **kw)
        G, gx, gy = gp.histogram2d(x, y, **gkw)
        _close(G, H)
        _close(gx, ex, rtol=1e-6)
        _close(gy, ey, rtol=1e-6)
    s = RNG.standard_normal((25, 3))
    for kw in ({"bins": (2, 3, 4)}, {"bins": 3, "density": True},
               {"bins": [3, [-1.0, 0, 1], 2], "range": [None, None, (-3, 3)]}):
        H, E = np.histogramdd(s, **kw)
        G, GE = gp.histogramdd(_g(s, device), **kw)
        _close(G, H)
        for a, b in zip(GE, E):
            _close(a, b)
    H, E = np.histogramdd([hx, hx * 2], bins=2)
    G, GE = gp.histogramdd([x, x * 2], bins=2)
    _close(G, H)
    with pytest.raises(ValueError, match="histogramdd: the dimension of bins"):
        gp.histogramdd(_g(s, device), bins=[2, 3])


# ---- compress, extract, choose, apply_*, ndindex, ndenumerate ---------------------------------
def test_compress_extract(device):
    x = _g(A, device)
    _close(gp.compress([0, 1, 1], x, axis=0), np.compress([0, 1, 1], A, axis=0))
    _close(gp.compress([True, False], x, axis=1), np.compress([True, False], A, axis=1))
    _close(gp.compress(_g(np.array([1, 0, 1]), device), x), np.compress([1, 0, 1], A))
    with pytest.raises(IndexError):
        gp.compress([0, 0, 0, 1], x, axis=0)
    with pytest.raises(ValueError, match="compress: condition must be a 1-d"):
        gp.compress(_g(M, device), x)
    _close(gp.extract(_g(M, device), x), np.extract(M, A))
    _close(gp.extract(x > 0, x), np.extract(A > 0, A))
    assert gradcheck(lambda a: gp.compress([1, 0, 1, 1], a, axis=1), (x,))


def test_choose(device):
    a = np.array([[0, 2, 1, 1], [2, 0, 0, 1], [1, 1, 2, 0]])
    ch = [A, A * 2, np.arange(4.0)]
    ga = _g(a, device)
    gch = [_g(c, device) for c in ch]
    _close(gp.choose(ga, gch), np.choose(a, ch))
    _close(gp.choose(ga, _g(np.stack([A, -A, A + 1]), device)), np.choose(a, np.stack([A, -A, A + 1])))
    f32 = np.arange(4, dtype=np.float32)
    _close(gp.choose(_g(a[0], device), [_g(f32, device), 5.5, _g(f32, device)]),
           np.choose(a[0], [f32, 5.5, f32]))
    i32 = np.arange(4, dtype=np.int32)
    _close(gp.choose(_g(a[0], device), [_g(i32, device), 5, _g(i32, device)]),
           np.choose(a[0], [i32, 5, i32]))
    bad = np.array([3, -1, 0, 5])
    for mode in ("wrap", "clip"):
        _close(gp.choose(_g(bad, device), gch, mode=mode), np.choose(bad, ch, mode=mode))
    with pytest.raises(ValueError, match="choose: invalid entry"):
        gp.choose(_g(bad, device), gch)
    x = _g(A, device)
    assert gradcheck(lambda c: gp.choose(ga, [c, c * 3, gch[2]]), (x,))


def test_apply_along_and_over_axes(device):
    h = RNG.standard_normal((2, 3, 4))
    x = _g(h, device)
    _close(gp.apply_along_axis(lambda v: gp.stack([gp.sum(v), gp.max(v)]), 1, x),
           np.apply_along_axis(lambda v: np.stack([v.sum(), v.max()]), 1, h))
    _close(gp.apply_along_axis(gp.sum, -1, x), np.apply_along_axis(np.sum, -1, h))
    _close(gp.apply_along_axis(lambda v: gp.outer(v, v), 0, x),
           np.apply_along_axis(lambda v: np.outer(v, v), 0, h))
    _close(gp.apply_along_axis(lambda v, k: v * k, 2, x, 3.0),
           np.apply_along_axis(lambda v, k: v * k, 2, h, 3.0))
    _close(gp.apply_over_axes(gp.sum, x, [0, 2]), np.apply_over_axes(np.sum, h, [0, 2]))
    _close(gp.apply_over_axes(gp.mean, x, -1), np.apply_over_axes(np.mean, h, -1))
    assert gradcheck(lambda a: gp.apply_along_axis(lambda v: gp.cumulative_sum(v) * v, 1, a),
                     (_g(A, device),))


def test_ndindex_ndenumerate(device):
    assert list(gp.ndindex(2, 3)) == list(np.ndindex(2, 3))
    assert list(gp.ndindex((3, 1))) == list(np.ndindex((3, 1)))
    assert list(gp.ndindex()) == list(np.ndindex())
    assert list(gp.ndindex(0, 2)) == list(np.ndindex(0, 2))
    h = np.arange(6).reshape(2, 3)
    got = list(gp.ndenumerate(_g(h, device)))
    want = list(np.ndenumerate(h))
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [v for _, v in got] == [v for _, v in want]
    assert type(got[0][1]) is type(want[0][1])


# ---- unique(axis=), pad, interp(period=) -----------------------------------------------------
def test_unique_axis(device):
    cases = (np.array([[1, 0, 0], [1, 0, 0], [2, 3, 4], [0, 9, 9], [1, 0, 0]]),
             np.array([[np.nan, 1], [np.nan, 1], [0, 1], [-0.0, 1], [0, 1]]),
             RNG.integers(0, 2, (5, 2, 3)), np.zeros((3, 0)), np.zeros((0, 2)))
    for h in cases:
        for ax in range(-h.ndim, h.ndim):
            want = np.unique(h, axis=ax, return_index=True, return_inverse=True,
                             return_counts=True)
            got = gp.unique(_g(h, device), axis=ax, return_index=True, return_inverse=True,
                            return_counts=True)
            for g, w in zip(got, want):
                _close(g, w)
        _close(gp.unique(_g(h, device), axis=0), np.unique(h, axis=0))


def test_pad_odd_median_dict(device):
    for n in (1, 2, 3, 5):
        h = RNG.standard_normal(n)
        hi = RNG.integers(-9, 9, n)
        for mode in ("reflect", "symmetric"):
            for w in ((0, 1), (2, 3), (7, 4), (11, 13)):
                _close(gp.pad(_g(h, device), w, mode=mode, reflect_type="odd"),
                       np.pad(h, w, mode=mode, reflect_type="odd"))
                _close(gp.pad(_g(hi, device), w, mode=mode, reflect_type="odd"),
                       np.pad(hi, w, mode=mode, reflect_type="odd"))
    _close(gp.pad(_g(A, device), ((2, 5), (3, 1)), "reflect", reflect_type="odd"),
           np.pad(A, ((2, 5), (3, 1)), "reflect", reflect_type="odd"))
    ints = RNG.integers(-20, 20, (5, 4))
    for h in (A, ints):
        for sl in (None, 2, (1, 3)):
            _close(gp.pad(_g(h, device), ((2, 3), (1, 2)), mode="median", stat_length=sl),
                   np.pad(h, ((2, 3), (1, 2)), mode="median", stat_length=sl))
    _close(gp.pad(_g(ints, device), {0: (1, 2), -1: 3}), np.pad(ints, {0: (1, 2), -1: 3}))
    _close(gp.pad(_g(A, device), {1: 2}, mode="edge"), np.pad(A, {1: 2}, mode="edge"))
    with pytest.raises(ValueError, match="reflect_type"):
        gp.pad(_g(A, device), 1, mode="reflect", reflect_type="bogus")
    with pytest.raises(TypeError, match="pad_width dict"):
        gp.pad(_g(A, device), {0: 1.5})
    x = _g(A, device)
    assert gradcheck(lambda a: gp.pad(a, ((4, 2), (5, 6)), mode="reflect", reflect_type="odd"),
                     (x,))
    assert gradcheck(lambda a: gp.pad(a, ((3, 2), (1, 7)), mode="symmetric",
                                      reflect_type="odd"), (x,))
    assert gradcheck(lambda a: gp.pad(a, 2, mode="median"), (x,))


def test_interp_period(device):
    x = np.array([-180, -170, -185, 185, -10, -5, 0, 365, 719.5])
    xp = np.array([190, -190, 350, -350])
    fp = np.array([5, 10, 3, 4.0])
    _close(gp.interp(_g(x, device), _g(xp, device), _g(fp, device), period=360),
           np.interp(x, xp, fp, period=360))
    xx = np.linspace(-7, 9, 17)
    _close(gp.interp(_g(xx, device), [0, 1, 2.5, 3], _g(np.array([1, -1, 2, 0.5]), device),
                     period=-3.5),
           np.interp(xx, [0, 1, 2.5, 3], [1, -1, 2, 0.5], period=-3.5))
    with pytest.raises(ValueError, match="interp: period must be a non-zero"):
        gp.interp(_g(xx, device), _g(xp, device), _g(fp, device), period=0)
    assert gradcheck(lambda f: gp.interp(_g(x, device), _g(xp, device), f, period=360),
                     (_g(fp, device),))


# ---- quantile methods ------------------------------------------------------------------------
ALL_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation",
               "interpolated_inverted_cdf", "hazen", "weibull", "linear", "median_unbiased",
               "normal_unbiased", "lower", "higher", "midpoint", "nearest")


@pytest.mark.parametrize("method", ALL_METHODS)
def test_quantile_methods(device, method):
    q = np.linspace(0, 1, 11)
    for h in (np.array([3, 1, 4, 1, 5, 9, 2]), RNG.standard_normal((3, 6)).astype(np.float32),
              RNG.standard_normal((2, 5))):
        x = _g(h, device)
        tol = dict(rtol=1e-6, atol=1e-6) if h.dtype == np.float32 else {}
        _close(gp.quantile(x, q, axis=-1, method=method),
               np.quantile(h, q, axis=-1, method=method), **tol)
        _close(gp.quantile(x, 0.37, method=method), np.quantile(h, 0.37, method=method), **tol)
        _close(gp.percentile(x, [10, 95], axis=0, method=method, keepdims=True),
               np.percentile(h, [10, 95], axis=0, method=method, keepdims=True), **tol)
    b = np.array([[1.0, np.nan, 3, 2, 7], [np.nan] * 5, [4, 5, 6, 1, 0]])
    _close(_np_quiet(gp.nanquantile, _g(b, device), [0.1, 0.5, 0.9], axis=1, method=method),
           _np_quiet(np.nanquantile, b, [0.1, 0.5, 0.9], axis=1, method=method))
    _close(gp.quantile(_g(b, device), 0.5, axis=1, method=method),
           np.quantile(b, 0.5, axis=1, method=method))
    if method not in ("inverted_cdf", "closest_observation", "lower", "higher", "nearest"):
        assert gradcheck(lambda a: gp.quantile(a, [0.2, 0.5, 0.85], axis=1, method=method),
                         (_g(A, device),))
