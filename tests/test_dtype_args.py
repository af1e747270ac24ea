"""Result dtypes and values when a caller passes ``dtype=`` or mixes dtypes, for every dtype
grilly has (float16 and the extension dtype bfloat16 included), on every device. NumPy (with
ml_dtypes for bfloat16) is the reference for dtypes and values (within the result dtype's
rounding); where grilly documents another rule (docs/amp.md's bfloat16 promotion table,
docs/numpy.md's "Deliberate differences"), the test asserts grilly's and says so."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F
from grilly.backends import dtypes as _bdt

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
BF = ml_dtypes.bfloat16
NAMES = ["bool", "int32", "uint8", "int64", "float16", "float32", "float64", "bfloat16"]
M = np.array([[1.5, -2.0, 0.5], [3.0, 0.25, 7.0], [1.0, 2.0, -1.0]])


def _np(name: str) -> np.dtype:
    return np.dtype(BF) if name == "bfloat16" else np.dtype(name)


def _arr(h: np.ndarray, name: str, device) -> gp.Array:
    return gp.asarray(h.astype(_np(name)), device=device)


def _check(got, ref, ulps: float = 4) -> None:
    """``got`` has ``ref``'s dtype, shape and values (within ``ulps`` of the dtype's spacing)."""
    ref = np.asarray(ref)
    assert isinstance(got, gp.Array), type(got)
    assert got.dtype.name == ref.dtype.name, (got.dtype, ref.dtype)
    g = np.asarray(got)
    assert g.dtype == ref.dtype and g.shape == ref.shape
    if ref.dtype.kind in "biu":
        np.testing.assert_array_equal(g, ref)
        return
    eps = float(ml_dtypes.finfo(ref.dtype).eps) if ref.dtype == BF else \
        float(np.finfo(ref.dtype).eps)
    g64, r64 = g.astype(np.float64), ref.astype(np.float64)
    scale = np.abs(r64).max() if r64.size else 0.0
    np.testing.assert_allclose(g64, r64, rtol=ulps * eps, atol=ulps * eps * scale + 1e-30)


# ---- reductions and scans with dtype= ----------------------------------------------------------
RED_IN = ["bool", "int32", "uint8", "float16", "float32", "bfloat16"]
RED_OUT = [None, "int64", "float16", "float32", "float64", "bfloat16"]
RED = {   # grilly call, NumPy reference (same arguments)
    "sum": (lambda x, **k: gp.sum(x, axis=1, **k), lambda a, **k: np.sum(a, axis=1, **k)),
    "prod": (lambda x, **k: gp.prod(x, axis=0, **k), lambda a, **k: np.prod(a, axis=0, **k)),
    "cumulative_sum": (lambda x, **k: gp.cumulative_sum(x, axis=1, **k),
                       lambda a, **k: np.cumsum(a, axis=1, **k)),
    "cumulative_prod": (lambda x, **k: gp.cumulative_prod(x, axis=0, **k),
                        lambda a, **k: np.cumprod(a, axis=0, **k)),
    "trace": (lambda x, **k: gp.linalg.trace(x, offset=1, **k),
              lambda a, **k: np.trace(a, offset=1, **k)),
    "x.sum": (lambda x, **k: x.sum(axis=0, **k), lambda a, **k: a.sum(axis=0, **k)),
    "nansum": (lambda x, **k: gp.nansum(x, axis=1, **k), lambda a, **k: np.nansum(a, axis=1, **k)),
}


@pytest.mark.parametrize("op", list(RED))
def test_reduction_dtype(device, op):
    fn, ref = RED[op]
    for ni in RED_IN:
        if ni == "bool" and op == "trace":   # the Array API's: trace needs a numeric array
            continue
        h = np.abs(M) if ni == "uint8" else M
        a = h.astype(_np(ni))
        x = gp.asarray(a, device=device)
        for no in RED_OUT:
            k = {} if no is None else {"dtype": getattr(gp, no)}
            nk = {} if no is None else {"dtype": _np(no)}
            # a float16/bfloat16 accumulation: grilly's in float32, rounded once (docs/amp.md),
            # NumPy's in the low dtype, hence 8 spacings at the largest magnitude
            _check(fn(x, **k), ref(a, **nk), ulps=8)


@pytest.mark.parametrize("spelling", [gp.bfloat16, "bfloat16", BF, np.dtype(BF)])
def test_bfloat16_dtype_spellings_before_any_bfloat16_array(device, spelling):
    # a fresh process (no bfloat16 array made yet): sum(x, dtype=bfloat16) asked a float32
    # kernel for a bfloat16 result (AttributeError), as dtype="bfloat16" always did
    seen = _bdt.BFLOAT16_SEEN[0]
    _bdt.BFLOAT16_SEEN[0] = False
    try:
        _spellings(device, spelling)
    finally:
        _bdt.BFLOAT16_SEEN[0] = seen or _bdt.BFLOAT16_SEEN[0]


def _spellings(device, spelling) -> None:
    a = M.astype(np.float32)
    x = gp.asarray(a, device=device)
    _check(gp.sum(x, axis=1, dtype=spelling), a.sum(axis=1).astype(BF))
    _check(gp.cumulative_sum(x, axis=0, dtype=spelling), np.cumsum(a, axis=0).astype(BF))
    _check(gp.sum(gp.asarray(M > 0, device=device), dtype=spelling),
           np.asarray(np.sum(M > 0)).astype(BF))
    b = gp.asarray(a.astype(BF), device=device)
    _check(gp.sum(b, axis=1, dtype=spelling), a.astype(BF).astype(np.float32).sum(1).astype(BF))


def test_refused_accumulation_names_bfloat16(device):
    # grilly refuses complex -> real accumulation (TypeError); the message named float32, the
    # dtype the bfloat16 path computes in, not the bfloat16 the caller asked for
    z = gp.asarray(np.array([1 + 2j, 3j], np.complex64), device=device)
    for f in (gp.sum, gp.prod, gp.cumulative_sum):
        with pytest.raises(TypeError, match="bfloat16"):
            f(z, dtype=gp.bfloat16)


MOM_IN = ["int32", "float16", "float32", "bfloat16"]


def test_mean_var_std_dtype(device):
    for ni in MOM_IN:
        a = M.astype(_np(ni))
        x = gp.asarray(a, device=device)
        a64 = a.astype(np.float64)
        for no in ("float32", "float64", "bfloat16", "float16"):
            d, nd = getattr(gp, no), _np(no)
            # computed in the dtype asked for (float16/bfloat16: in float32, rounded once)
            for got in (gp.mean(x, axis=1, dtype=d), x.mean(axis=1, dtype=d)):
                _check(got, a64.mean(axis=1).astype(nd))
            for got in (gp.var(x, axis=0, dtype=d), x.var(axis=0, dtype=d)):
                _check(got, a64.var(axis=0).astype(nd), ulps=8)
            for got in (gp.std(x, dtype=d), x.std(dtype=d)):
                _check(got, np.asarray(a64.std()).astype(nd), ulps=8)
        # an integer dtype: the result is that dtype, the float moment truncated (grilly's
        # documented rule, docs/numpy.md; NumPy accumulates in the integer dtype, truncating
        # each step); the method gave float64 for mean, var and std
        for got, ref in ((gp.mean(x, axis=1, dtype=gp.int64), a64.mean(axis=1)),
                         (x.mean(axis=1, dtype=gp.int64), a64.mean(axis=1)),
                         (gp.var(x, axis=1, dtype=gp.int64), a64.var(axis=1)),
                         (x.var(axis=1, dtype=gp.int64), a64.var(axis=1)),
                         (gp.std(x, axis=0, dtype=gp.int32), a64.std(axis=0)),
                         (x.std(axis=0, dtype=gp.int32), a64.std(axis=0))):
            assert got.dtype in (gp.int64, gp.int32)
            np.testing.assert_array_equal(np.asarray(got), np.trunc(ref).astype(got.dtype.name))


# ---- creation functions --------------------------------------------------------------------
LIKE_IN = ["int32", "float16", "float32", "bfloat16"]
LIKE_OUT = [None, "int64", "float16", "float32", "bfloat16"]


def test_like_functions_and_asarray(device):
    for ni in LIKE_IN:
        a = M.astype(_np(ni))
        x = gp.asarray(a, device=device)
        for no in LIKE_OUT:
            k = {} if no is None else {"dtype": getattr(gp, no)}
            nk = {} if no is None else {"dtype": _np(no)}
            _check(gp.zeros_like(x, **k), np.zeros_like(a, **nk))
            _check(gp.ones_like(x, **k), np.ones_like(a, **nk))
            assert gp.empty_like(x, **k).dtype.name == np.empty_like(a, **nk).dtype.name
            _check(gp.full_like(x, 3, **k), np.full_like(a, 3, **nk))
            if np.empty_like(a, **nk).dtype.kind == "f":
                _check(gp.full_like(x, 0.1, **k), np.full_like(a, 0.1, **nk))
            if no is not None:
                _check(gp.asarray(x, **k), np.asarray(a, **nk), ulps=0)
                _check(gp.astype(x, getattr(gp, no), copy=False), a.astype(_np(no)), ulps=0)
                _check(x.astype(no), a.astype(_np(no)), ulps=0)
        assert gp.astype(x, x.dtype, copy=False) is x
        assert gp.asarray(x, dtype=x.dtype, copy=False) is x


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "int32"])
def test_creation_with_low_dtypes(device, name):
    d, nd = getattr(gp, name), _np(name)
    _check(gp.arange(5, dtype=d, device=device), np.arange(5, dtype=nd), ulps=0)
    _check(gp.ones((2, 3), dtype=d, device=device), np.ones((2, 3), nd), ulps=0)
    _check(gp.eye(3, k=1, dtype=d, device=device), np.eye(3, k=1, dtype=nd), ulps=0)
    _check(gp.asarray([1.5, 2.25, 257.0], dtype=d, device=device),
           np.asarray([1.5, 2.25, 257.0], dtype=nd), ulps=0)
    if nd.kind == "f":
        _check(gp.arange(0, 2, 0.25, dtype=d, device=device), np.arange(0, 2, 0.25, dtype=nd),
               ulps=0)
        _check(gp.linspace(0, 1, 5, dtype=d, device=device), np.linspace(0, 1, 5, dtype=nd),
               ulps=1)
        _check(gp.full((2,), 0.1, dtype=d, device=device), np.full((2,), 0.1, dtype=nd), ulps=0)
        _check(gp.asarray(np.array([0.1, 1 / 3], np.float32), dtype=d, device=device),
               np.array([0.1, 1 / 3], np.float32).astype(nd), ulps=0)


# ---- mixed dtypes: the promotion lattice ------------------------------------------------------
MIX = ["int32", "float16", "float32", "float64", "bfloat16"]
PY = {"int": 2, "float": 0.1}


BIN = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
       "maximum": np.maximum, "less": np.less, "equal": np.equal}


def _expected(op: str, a: str, b: str):
    """Result dtype name, or None for a TypeError: NumPy's (Python scalars weak, NEP 50), and
    docs/amp.md's table for bfloat16 (JAX/torch: with float16 float32, with an integer array a
    TypeError, a Python scalar takes bfloat16)."""
    if "bfloat16" in (a, b):
        o = b if a == "bfloat16" else a
        return {"bfloat16": "bfloat16", "float16": "float32", "int": "bfloat16",
                "float": "bfloat16"}.get(o, o if o in ("float32", "float64") else None)
    one = np.ones(1, np.dtype(a))
    return BIN[op](one, PY[b] if b in PY else np.ones(1, np.dtype(b))).dtype.name


def test_binary_promotion(device):
    h1, h2 = np.array([1.5, -0.1, 3.0, 0.0]), np.array([2.0, 0.3, -1.0, 4.0])
    for na in MIX:
        x = _arr(h1, na, device)
        for nb in MIX + list(PY):
            y = PY[nb] if nb in PY else _arr(h2, nb, device)
            for op, nop in BIN.items():
                want = _expected(op, na, nb)
                if want is None:
                    with pytest.raises(TypeError, match=op):
                        getattr(gp, op)(x, y)
                    continue
                got = getattr(gp, op)(x, y)
                # the reference: the operands as the result dtype holds them (a Python float
                # takes the array's dtype first), computed in float64, rounded once
                wd = "bool" if op in ("less", "equal") else want
                xa = np.asarray(x).astype(np.float64)
                ya = (float(np.asarray(y, _np(_expected("add", na, nb)))) if nb == "float" else
                      y if nb == "int" else np.asarray(y).astype(np.float64))
                _check(got, nop(xa, ya).astype(_np(wd)), ulps=1)
                rev = getattr(gp, op)(y, x) if nb in PY else None
                assert rev is None or rev.dtype == got.dtype


def test_scalars_and_comparisons_keep_low_dtypes(device):
    for name in ("float16", "bfloat16"):
        nd = _np(name)
        h = np.array([1.5, -0.1, 3.0]).astype(nd)
        x = gp.asarray(h, device=device)
        for got, ref in ((x * 0.1, h * nd.type(0.1)), (0.1 * x, nd.type(0.1) * h),
                         (x / 3, h / nd.type(3)), (x ** 2, h * h), (-x, -h), (abs(x), abs(h)),
                         (x == -0.1, h == nd.type(-0.1)), (x < 1, h < 1),
                         (gp.where(x > 0, x, 0.1), np.where(h > 0, h, nd.type(0.1))),
                         (gp.clip(x, 0.1, 2), np.minimum(np.maximum(h, nd.type(0.1)),
                                                         nd.type(2)))):
            _check(got, ref, ulps=1)
        assert (x + 1j).dtype == gp.complex64
        z = gp.asarray(np.array(0.1, nd), device=device)
        assert z.item() == float(nd.type(0.1)) and type(z.item()) is float
        assert float(z) == float(nd.type(0.1)) and int(z * 30) == 3 and bool(z)
        assert complex(z) == complex(float(nd.type(0.1)))
        assert np.asarray(x).dtype == nd and np.asarray(x, dtype=np.float32).dtype == np.float32
        assert x.tolist() == h.astype(np.float64).tolist()
        assert f"dtype={name}" in repr(x) and f"{z:.4f}" == f"{float(nd.type(0.1)):.4f}"


# ---- ops whose result dtype is one argument's, and array keywords -----------------------------
def test_result_dtype_of_one_argument(device):
    b = _arr(np.array([1.5, -0.1, 3.0, 4.0]), "bfloat16", device)
    h = _arr(np.array([1.5, -0.1, 3.0, 4.0]), "float16", device)
    f = _arr(np.array([2.0, 0.0, 2.5, 9.0]), "float32", device)
    hb, hh, hf = (np.asarray(v) for v in (b, h, f))
    cases = [
        # clip: x's dtype, the bounds cast to it (grilly's documented rule: a float32 bound
        # gave float32 positionally and bfloat16 as a keyword)
        (gp.clip(b, f), np.maximum(hb, hf.astype(BF))),
        (gp.clip(b, min=f), np.maximum(hb, hf.astype(BF))),
        (gp.clip(b, max=f), np.minimum(hb, hf.astype(BF))),
        (gp.clip(h, max=b), np.minimum(hh, hb.astype(np.float16))),
        (gp.clip(f, b), np.maximum(hf, hb.astype(np.float32))),
        # interp: fp's dtype (docs/numpy.md), positional or keyword
        (gp.interp(f, gp.sort(f), b), np.interp(hf, np.sort(hf), hb.astype(np.float32))
         .astype(BF)),
        (gp.interp(f, xp=gp.sort(f), fp=b), np.interp(hf, np.sort(hf), hb.astype(np.float32))
         .astype(BF)),
        # insert and ediff1d: the array's dtype, as NumPy's
        (gp.insert(b, 1, f[:1]), np.insert(hb, 1, hf[:1].astype(BF))),
        (gp.ediff1d(b, to_end=f[:1]), np.ediff1d(hb, to_end=hf[:1].astype(BF))),
        # weights and prepend promote, as keywords too (average(b, weights=f32) was bfloat16)
        (gp.average(b, weights=f), np.average(hb.astype(np.float32), weights=hf)),
        (gp.average(b, None, f), np.average(hb.astype(np.float32), weights=hf)),
        (gp.average(h, weights=f), np.average(hh, weights=hf)),
        (gp.diff(b, prepend=f[:1]), np.diff(hb.astype(np.float32), prepend=hf[:1])),
        (gp.diff(h, prepend=f[:1]), np.diff(hh, prepend=hf[:1])),
        (gp.where(gp.asarray(hf > 1, device=device), b, f), np.where(hf > 1, hb, hf)),
        (gp.vecdot(b, f), np.vecdot(hb.astype(np.float32), hf)),
        (gp.vecdot(b, h), np.vecdot(hb.astype(np.float32), hh.astype(np.float32))),
        (gp.concat([b, h]), np.concatenate([hb.astype(np.float32), hh.astype(np.float32)])),
    ]
    for got, ref in cases:
        _check(got, ref, ulps=2)


def test_inplace_numpy_writes_bfloat16(device):
    # put/putmask/place/put_along_axis/fill_diagonal on a bfloat16 array wrote into a float32
    # copy and left the array unchanged
    h0 = np.array([1.5, -0.1, 3.0, 4.0]).astype(BF)
    vals = np.array([7.0, 8.5, 0.1, 10.0], np.float32)
    v = gp.asarray(vals, device=device)
    mask = np.array([True, False, False, True])
    for fn, ref in (
            (lambda a: gp.put(a, [0, 2], 0.1), lambda a: np.put(a, [0, 2], BF(0.1))),
            (lambda a: gp.put(a, [1], v[:1]), lambda a: np.put(a, [1], vals[:1].astype(BF))),
            (lambda a: gp.putmask(a, gp.asarray(mask, device=device), v),
             lambda a: np.putmask(a, mask, vals.astype(BF))),
            (lambda a: gp.place(a, gp.asarray(mask, device=device), v),
             lambda a: np.place(a, mask, vals.astype(BF))),
            (lambda a: gp.put_along_axis(a, gp.asarray([1, 3], device=device), v[:2], axis=0),
             lambda a: np.put_along_axis(a, np.array([1, 3]), vals[:2].astype(BF), axis=0))):
        a, r = gp.asarray(h0, device=device), h0.copy()
        fn(a)
        ref(r)
        _check(a, r, ulps=0)
    a, r = gp.asarray(h0.reshape(2, 2), device=device), h0.reshape(2, 2).copy()
    gp.fill_diagonal(a, 0.1)
    np.fill_diagonal(r, BF(0.1))
    _check(a, r, ulps=0)


def test_nextafter_bfloat16_steps_one_bfloat16_ulp(device):
    # computed in float32 and rounded back, nextafter returned x itself
    x = np.array([1.5, -0.1, 3.0, 0.0, -0.0, 2.0**-133, 3.3895313892515355e38, -np.inf,
                  np.nan, 1.0, 2.0, 0.0], np.float32).astype(BF)
    y = np.array([1, 1, 1, 1, -1, 0, np.inf, 0, 0, 1, 0, -0.0], np.float32).astype(BF)
    got = gp.nextafter(gp.asarray(x, device=device), gp.asarray(y, device=device))
    assert got.dtype == gp.bfloat16
    want = np.nextafter(x, y)
    sub = np.zeros(x.shape, bool)
    probe = gp.asarray(np.array([1e-20], np.float32), device=device)
    if float(np.asarray(probe * probe)[0]) == 0.0:
        # a device whose float32 arithmetic flushes subnormals (NVIDIA's: docs/vulkan.md): the
        # steps to, from and between bfloat16's subnormals come out as zeros there
        tiny = float(np.finfo(np.float32).tiny)
        sub = (np.abs(want.astype(np.float32)) < tiny) | (np.abs(x.astype(np.float32)) < tiny)
        sub &= ~np.isnan(x.astype(np.float32))
        assert (np.asarray(got)[sub].astype(np.float32) == 0).all()
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16)[~sub],
                                  want.view(np.uint16)[~sub])
    got = gp.nextafter(gp.asarray(x[:3], device=device), 5.0)
    np.testing.assert_array_equal(np.asarray(got).view(np.uint16),
                                  np.nextafter(x[:3], BF(5.0)).view(np.uint16))
    h = np.array([1.5, -0.1, 0.0], np.float16)
    got = gp.nextafter(gp.asarray(h, device=device), gp.ones(3, dtype=gp.float16, device=device))
    _check(got, np.nextafter(h, np.ones(3, np.float16)), ulps=0)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32"])
def test_softmax_dtype(device, name):
    a = M.astype(_np(name))
    x = gp.asarray(a, device=device)
    a64 = a.astype(np.float64)
    sm = np.exp(a64 - a64.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    for no in ("float32", "float64", "bfloat16", "float16"):
        _check(F.softmax(x, dim=1, dtype=getattr(gp, no)), sm.astype(_np(no)), ulps=4)
        _check(F.log_softmax(x, dim=1, dtype=getattr(gp, no)), np.log(sm).astype(_np(no)),
               ulps=4)
