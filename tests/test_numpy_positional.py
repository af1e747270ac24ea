"""NumPy's positional order in the grilly namespace (grilly/array/numpy_args.py): ``gp.sum(x, 0)``
as ``np.sum(x, 0)``, against numpy on every device (values, shapes, dtypes), the errors of a bad
call, keyword calls unchanged, and gradients through a positional call against torch."""
import inspect

import numpy as np
import pytest
import torch

import grilly as gp
from grilly.array.numpy_args import POSITIONAL
from grilly.testing import assert_close

RNG = np.random.default_rng(1)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((3, 4))
V = RNG.standard_normal(6)
SV = np.sort(V)
C3 = RNG.standard_normal((2, 3, 4))
SQ = RNG.standard_normal((4, 4))
IM = np.array([[3, 0, 2, 7], [0, 5, 4, 1], [6, 0, 0, 2]], dtype=np.int64)
IDX = np.array([2, 0, 3, 3], dtype=np.int64)


def _cum(ns, name):
    """gp.cumulative_sum/prod against np.cumsum/cumprod (NumPy's cumulative_* are keyword-only)."""
    return getattr(ns, name) if ns is gp else getattr(np, {"cumulative_sum": "cumsum",
                                                           "cumulative_prod": "cumprod"}[name])


def _svd(ns, c):
    u, s, vh = ns.linalg.svd(c(A), False)   # signs differ between libraries: compare u s vh
    return s, (u * s) @ vh, u.shape, vh.shape


def _torch_norm(ns, c, name):
    """gp.linalg.vector_norm/matrix_norm in torch's positional order (x, ord, dim, keepdim)
    against numpy's keyword forms (NumPy's take keywords only)."""
    if ns is gp:
        return getattr(ns.linalg, name)(c(C3), 3 if name == "vector_norm" else "nuc", (2, 0), True)
    if name == "vector_norm":
        return np.linalg.vector_norm(C3, ord=3, axis=(2, 0), keepdims=True)
    return np.linalg.norm(C3, "nuc", axis=(2, 0), keepdims=True)


def _qr(ns, c):
    q, r = ns.linalg.qr(c(A.T), "complete")
    return q @ r, q.shape, r.shape


# "function:what" -> the same call on numpy and on grilly: f(ns, c, d) with c converting a numpy
# array to the namespace's, d the creation keywords (grilly's device=)
CASES = {
    "sum:axis": lambda ns, c, d: ns.sum(c(A), 0),
    "sum:dtype": lambda ns, c, d: ns.sum(c(IM), 1, ns.float64),
    "sum:keepdims": lambda ns, c, d: ns.sum(c(A), 1, None, None, True),
    "prod:keepdims": lambda ns, c, d: ns.prod(c(A), 1, None, None, True),
    "prod:dtype": lambda ns, c, d: ns.prod(c(IM), 0, ns.int32),
    "mean:axis": lambda ns, c, d: ns.mean(c(A), 1),
    "mean:keepdims": lambda ns, c, d: ns.mean(c(A), 0, None, None, True),
    "std:ddof": lambda ns, c, d: ns.std(c(A), 0, None, None, 1),
    "std:keepdims": lambda ns, c, d: ns.std(c(A), 1, None, None, 0, True),
    "var:ddof_keepdims": lambda ns, c, d: ns.var(c(A), 1, None, None, 1, True),
    "max:axis": lambda ns, c, d: ns.max(c(A), 0),
    "max:keepdims": lambda ns, c, d: ns.max(c(A), 1, None, True),
    "min:keepdims": lambda ns, c, d: ns.min(c(IM), 0, None, True),
    "all:axis": lambda ns, c, d: ns.all(c(IM > 0), 0),
    "all:keepdims": lambda ns, c, d: ns.all(c(IM > 0), 1, None, True),
    "any:keepdims": lambda ns, c, d: ns.any(c(IM > 5), 0, None, True),
    "argmax:axis": lambda ns, c, d: ns.argmax(c(A), 1),
    "argmax:out": lambda ns, c, d: ns.argmax(c(A), 0, None),
    "argmin:axis": lambda ns, c, d: ns.argmin(c(IM), 0),
    "count_nonzero:axis": lambda ns, c, d: ns.count_nonzero(c(IM), 1),
    "cumulative_sum:axis": lambda ns, c, d: _cum(ns, "cumulative_sum")(c(A), 1),
    "cumulative_sum:dtype": lambda ns, c, d: _cum(ns, "cumulative_sum")(c(IM), 0, ns.float64),
    "cumulative_prod:out": lambda ns, c, d: _cum(ns, "cumulative_prod")(c(A), 0, None, None),
    "sort:axis": lambda ns, c, d: ns.sort(c(A), 0),
    "argsort:axis": lambda ns, c, d: ns.argsort(c(A), 0),
    "searchsorted:side": lambda ns, c, d: ns.searchsorted(c(SV), c(A), "right"),
    "searchsorted:sorter": lambda ns, c, d: ns.searchsorted(c(V), c(A), "left",
                                                            c(np.argsort(V))),
    "concat:axis": lambda ns, c, d: ns.concat([c(A), c(B)], 1),
    "concat:out": lambda ns, c, d: ns.concat((c(A), c(B)), 0, None),
    "stack:axis": lambda ns, c, d: ns.stack([c(A), c(B)], 1),
    "stack:out": lambda ns, c, d: ns.stack([c(A), c(B)], -1, None),
    "flip:axis": lambda ns, c, d: ns.flip(c(C3), 1),
    "flip:axes": lambda ns, c, d: ns.flip(c(C3), (0, 2)),
    "roll:axis": lambda ns, c, d: ns.roll(c(A), 1, 0),
    "roll:axes": lambda ns, c, d: ns.roll(c(C3), (1, -2), (0, 2)),
    "repeat:axis": lambda ns, c, d: ns.repeat(c(A), 2, 1),
    "take:axis": lambda ns, c, d: ns.take(c(A), c(IDX), 1),
    "take:out": lambda ns, c, d: ns.take(c(A), c(IDX[:2]), 0, None),
    "take_along_axis:axis": lambda ns, c, d: ns.take_along_axis(c(A), c(np.argsort(A, 1)), 1),
    "diff:n_axis": lambda ns, c, d: ns.diff(c(A), 2, 1),
    "diff:prepend_append": lambda ns, c, d: ns.diff(c(A), 1, 0, c(B[:1]), c(B[1:])),
    "tensordot:axes": lambda ns, c, d: ns.tensordot(c(A), c(B), ([1], [1])),
    "tril:k": lambda ns, c, d: ns.tril(c(SQ), -1),
    "triu:k": lambda ns, c, d: ns.triu(c(SQ), 1),
    "asarray:dtype": lambda ns, c, d: ns.asarray(c(IM), ns.float32),
    "arange:dtype": lambda ns, c, d: ns.arange(1, 8, 2, ns.float32, **d),
    "eye:k_dtype": lambda ns, c, d: ns.eye(3, 4, 1, ns.int32, **d),
    "linspace:endpoint": lambda ns, c, d: ns.linspace(0.0, 1.0, 5, False, **d),
    "zeros:dtype": lambda ns, c, d: ns.zeros((2, 3), ns.int32, **d),
    "ones:dtype": lambda ns, c, d: ns.ones((2, 3), ns.float32, **d),
    "empty:dtype": lambda ns, c, d: ns.zeros_like(ns.empty((2, 3), ns.int16, **d)),
    "full:dtype": lambda ns, c, d: ns.full((2, 3), 7, ns.float32, **d),
    "zeros_like:dtype": lambda ns, c, d: ns.zeros_like(c(A), ns.int32),
    "ones_like:dtype": lambda ns, c, d: ns.ones_like(c(IM), ns.float64),
    "empty_like:dtype": lambda ns, c, d: ns.empty_like(c(A), ns.int64).shape,
    "full_like:dtype": lambda ns, c, d: ns.full_like(c(A), 3, ns.int32),
    "linalg.qr:mode": lambda ns, c, d: _qr(ns, c),
    "linalg.svd:full_matrices": lambda ns, c, d: _svd(ns, c),
    "linalg.pinv:rcond": lambda ns, c, d: ns.linalg.pinv(c(SQ), 1e-3),
    "linalg.pinv:hermitian": lambda ns, c, d: ns.linalg.pinv(c(SQ @ SQ.T), 1e-3, True),
    "linalg.svd:compute_uv": lambda ns, c, d: ns.linalg.svd(c(A), False, False),
    "linalg.eigh:UPLO": lambda ns, c, d: ns.linalg.eigh(c(SQ), "U")[0],
    "linalg.eigvalsh:UPLO": lambda ns, c, d: ns.linalg.eigvalsh(c(SQ), "U"),
    "linalg.matrix_rank:tol": lambda ns, c, d: ns.linalg.matrix_rank(c(A), 0.5),
    "linalg.vector_norm:ord": lambda ns, c, d: _torch_norm(ns, c, "vector_norm"),
    "linalg.matrix_norm:ord": lambda ns, c, d: _torch_norm(ns, c, "matrix_norm"),
    "clip:out": lambda ns, c, d: ns.clip(c(A), -0.5, 0.5, None),
    "sort:kind": lambda ns, c, d: ns.sort(c(IM), 0, "stable"),
    "argsort:kind": lambda ns, c, d: ns.argsort(c(IM), 1, "stable"),
    "fft.fft:n_axis": lambda ns, c, d: ns.fft.fft(c(A), 6, 0),
    "fft.fft:norm_out": lambda ns, c, d: ns.fft.fft(c(V), 8, -1, "ortho", None),
    "fft.ifft:n": lambda ns, c, d: ns.fft.ifft(c(A), 5),
    "fft.rfft:axis": lambda ns, c, d: ns.fft.rfft(c(A), None, 0),
    "fft.irfft:norm": lambda ns, c, d: ns.fft.irfft(c(A), 6, 1, "forward"),
    "fft.hfft:n": lambda ns, c, d: ns.fft.hfft(c(V), 10),
    "fft.ihfft:axis": lambda ns, c, d: ns.fft.ihfft(c(A), None, 0),
    "fft.fftn:s_axes": lambda ns, c, d: ns.fft.fftn(c(C3), (2, 5), (0, 2)),
    "fft.ifftn:norm": lambda ns, c, d: ns.fft.ifftn(c(C3), None, None, "ortho"),
    "fft.rfftn:axes": lambda ns, c, d: ns.fft.rfftn(c(C3), None, (1, 2)),
    "fft.fft2:s_axes": lambda ns, c, d: ns.fft.fft2(c(C3), (2, 5), (0, 2)),
    "fft.ifft2:norm": lambda ns, c, d: ns.fft.ifft2(c(C3), None, (-2, -1), "ortho"),
    "fft.rfft2:s": lambda ns, c, d: ns.fft.rfft2(c(C3), (3, 4)),
    "fft.irfft2:axes": lambda ns, c, d: ns.fft.irfft2(c(C3), None, (0, 1)),
    "fft.irfftn:s": lambda ns, c, d: ns.fft.irfftn(c(C3), (3, 6), (1, 2)),
    "fft.fftfreq:d": lambda ns, c, d: ns.fft.fftfreq(8, 0.1, **d),
    "fft.rfftfreq:d": lambda ns, c, d: ns.fft.rfftfreq(9, 0.5, **d),
    "fft.fftshift:axes": lambda ns, c, d: ns.fft.fftshift(c(C3), (0, 2)),
    "fft.ifftshift:axes": lambda ns, c, d: ns.fft.ifftshift(c(C3), 1),
}


def _cmp(got, want):
    if isinstance(want, tuple) and not isinstance(got, gp.Array):
        assert isinstance(got, tuple) and len(got) == len(want), (got, want)
        for g, w in zip(got, want):
            _cmp(g, w)
    elif isinstance(got, gp.Array):
        assert_close(got, np.asarray(want), rtol=1e-10, atol=1e-12)
    else:
        assert got == want, (got, want)


def _fn(name: str):
    mod, _, fname = name.rpartition(".")
    return getattr(getattr(gp, mod) if mod else gp, fname)


def test_every_function_in_the_table_is_tested():
    assert {k.partition(":")[0] for k in CASES} == set(POSITIONAL)


@pytest.mark.parametrize("case", sorted(CASES))
def test_against_numpy(device, case):
    want = CASES[case](np, np.asarray, {})
    got = CASES[case](gp, lambda h: gp.asarray(h, device=device), {"device": device})
    _cmp(got, want)


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_signature_shows_numpy_order(name):
    """help() and inspect show the positional order: grilly's positional parameters, then the
    table's names, each POSITIONAL_OR_KEYWORD with a default (absent ones default to None)."""
    params = list(inspect.signature(_fn(name)).parameters.values())
    names = POSITIONAL[name]
    npos = len(params) - len(names) - sum(p.kind is p.KEYWORD_ONLY for p in params)
    assert [p.name for p in params[npos:npos + len(names)]] == list(names)
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD and p.default is not p.empty
               for p in params[npos:npos + len(names)])


@pytest.mark.parametrize("name", sorted(POSITIONAL))
def test_too_many_positional(name):
    """One positional argument more than the signature shows is Python's TypeError (checked
    before anything else runs, so the arguments' values do not matter)."""
    params = inspect.signature(_fn(name)).parameters.values()
    n = sum(p.kind is not p.KEYWORD_ONLY for p in params)
    with pytest.raises(TypeError, match=rf"{name}\(\) takes from \d+ to {n} positional "
                                        rf"arguments but {n + 1} were given"):
        _fn(name)(*[None] * (n + 1))


@pytest.mark.parametrize("call", [
    lambda ns, x: ns.sort(x, 0, None, None, 1),            # np.sort takes 4 positionally
    lambda ns, x: ns.argmax(x, 0, None, True),             # np.argmax's keepdims is keyword-only
    lambda ns, x: ns.sum(x, 0, axis=1),                    # axis given twice
    lambda ns, x: ns.std(x, 0, None, None, 1, True, 1),    # past keepdims
])
def test_errors_like_numpy(device, call):
    with pytest.raises(TypeError):
        call(np, A)
    with pytest.raises(TypeError):
        call(gp, gp.asarray(A, device=device))


@pytest.mark.parametrize("call", [
    lambda ns, x: ns.sum(x, 0, True), lambda ns, x: ns.mean(x, 0, True),
    lambda ns, x: ns.std(x, 0, True), lambda ns, x: ns.sort(x, 0, True),
    lambda ns, x: ns.argmax(x, 0, True), lambda ns, x: ns.all(x > 0, 0, True),
])
def test_torch_positional_forms_raise(device, call):
    """torch reads these third arguments as keepdim/unbiased/descending; NumPy (and grilly)
    as dtype/out/kind, so grilly raises instead of meaning something else."""
    call(torch, torch.tensor(A))   # a valid torch call
    with pytest.raises(TypeError):
        call(gp, gp.asarray(A, device=device))


def test_out_must_be_none(device):
    """NumPy's out slot takes None; an array there is a TypeError (and NotImplementedError,
    grilly's documented error for out=) naming the function and out, positional or keyword."""
    x = gp.asarray(A, device=device)
    for call in (lambda: gp.sum(x, 0, None, x), lambda: gp.max(x, 0, x),
                 lambda: gp.concat([x, x], 0, x), lambda: gp.take(x, gp.asarray(IDX[:1],
                                                                                 device=device), 0, x),
                 lambda: gp.fft.fft(x, None, -1, "backward", x), lambda: gp.argmin(x, out=x),
                 lambda: gp.concatenate([x, x], 0, x)):
        with pytest.raises(TypeError, match=r"out= is not supported"):
            call()
        with pytest.raises(NotImplementedError):
            call()
    assert_close(gp.sum(x, 0, out=None), A.sum(0, out=None), rtol=1e-12)


def test_dtype_slot(device):
    """gp.mean/std/var's NumPy dtype slot computes in that dtype (dispatch.NUMPY_FORMS)."""
    x = gp.asarray(A, device=device)
    for f, nf in ((gp.mean, np.mean), (gp.std, np.std), (gp.var, np.var)):
        assert_close(f(x, 0, gp.float32), nf(A, 0, np.float32), rtol=1e-6)
    assert_close(gp.var(x, None, None), A.var(None, None), rtol=1e-12)


def test_keyword_forms_unchanged(device):
    x = gp.asarray(A, device=device)
    assert_close(gp.sum(x, axis=0, keepdims=True), A.sum(axis=0, keepdims=True), rtol=1e-12)
    assert_close(gp.std(x, axis=1, correction=1), A.std(axis=1, ddof=1), rtol=1e-12)
    assert_close(gp.concat([x, x], axis=1), np.concatenate([A, A], axis=1))
    assert_close(gp.stack([x, x], dim=1), np.stack([A, A], axis=1))
    assert_close(gp.sort(x, axis=0, descending=True), -np.sort(-A, axis=0))
    assert_close(gp.max(x), A.max())
    with pytest.raises(TypeError):
        gp.sum(x, keepdim=True)   # torch's keepdim= without dim=: TypeError, as torch's


def test_methods_agree_with_functions(device):
    """The Array methods' positional forms (NumPy's ndarray methods) give what the functions'
    do, as numpy's methods and functions do."""
    x = gp.asarray(A, device=device)
    i = gp.asarray(IDX, device=device)
    pairs = [(x.sum(0), gp.sum(x, 0), A.sum(0)), (x.mean(1), gp.mean(x, 1), A.mean(1)),
             (x.max(1), gp.max(x, 1), A.max(1)), (x.min(0), gp.min(x, 0), A.min(0)),
             (x.argmax(0), gp.argmax(x, 0), A.argmax(0)),
             (x.std(0), gp.std(x, 0), A.std(0)), (x.var(1), gp.var(x, 1), A.var(1)),
             (x.prod(1), gp.prod(x, 1), A.prod(1)), (x.cumsum(1), gp.cumulative_sum(x, 1),
                                                      A.cumsum(1)),
             ((x > 0).all(0), gp.all(x > 0, 0), (A > 0).all(0)),
             ((x > 0).any(1), gp.any(x > 0, 1), (A > 0).any(1)),
             (x.take(i, 1), gp.take(x, i, 1), A.take(IDX, 1)),
             (x.argsort(0), gp.argsort(x, 0), A.argsort(0)),
             (x.flip(0), gp.flip(x, 0), np.flip(A, 0)),
             (x.roll(1, 0), gp.roll(x, 1, 0), np.roll(A, 1, 0))]
    for method, function, want in pairs:
        assert_close(method, want, rtol=1e-12)
        assert_close(function, want, rtol=1e-12)


def test_gradients_through_positional_calls(device):
    """A positional call records as its keyword form: gradients match torch's."""
    def f(ns, x):
        if ns is torch:
            return (torch.std(x, 0, correction=1).sum() + torch.amax(x, 1, True).sum()
                    + (torch.cat([x, x * 2], 1).sum(0) ** 2).sum()
                    + torch.flip(torch.cumsum(x, 1), (0,))[0].sum())
        return (ns.sum(ns.std(x, 0, None, None, 1)) + ns.sum(ns.max(x, 1, None, True))
                + ns.sum(ns.sum(ns.concat([x, x * 2], 1), 0) ** 2)
                + ns.sum(ns.flip(ns.cumulative_sum(x, 1), 0)[0]))
    t = torch.tensor(A, requires_grad=True)
    f(torch, t).backward()
    x = gp.asarray(A, device=device).requires_grad_()
    f(gp, x).backward()
    assert_close(x.grad, t.grad.numpy(), rtol=1e-10)


def test_jit(device):
    """Positional calls trace under grilly.jit."""
    g = gp.jit(lambda x: gp.mean(x, 0, None, None, True) + gp.max(x, 1, None, True))
    for _ in range(3):
        h = RNG.standard_normal((3, 4))
        assert_close(g(gp.asarray(h, device=device)), h.mean(0, keepdims=True)
                     + h.max(1, keepdims=True), rtol=1e-12)
