"""VJP rules of the linalg decompositions (qr, svd, pinv, eig, eigvals): central differences in
float64 on the CPU, torch.autograd on the same inputs, float32 on every device, and the errors
for the cases that have no derivative.

Losses are gauge invariant (singular/eigen vectors are defined up to sign or phase): projectors
such as U diag(c) U^T, products U f(S) Vh, |V|^2 of unit-norm eigenvectors, functions of the
values. ``CASES`` has the layout of tests/test_autograd_rules.py's table, so that file can merge it.
"""
import types

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import grilly as gp
from grilly.autograd import gradcheck, rule_names
from grilly.testing import assert_close

torch = pytest.importorskip("torch")

R = np.random.default_rng(11)


def _a(*shape):
    return R.standard_normal(shape)


def _complex_pair(n=4):
    """A real matrix with one complex-conjugate eigenvalue pair, well separated and conditioned."""
    d = np.diag(np.linspace(1.0, 2.5, n))
    d[:2, :2] = [[0.5, -1.2], [1.2, 0.5]]
    p = np.eye(n) + 0.3 * R.standard_normal((n, n))
    return p @ d @ np.linalg.inv(p)


def _svd_loss(X, x, full=False):
    u, s, vh = X.linalg.svd(x, full_matrices=full)
    k = s.shape[-1]
    c = X.asarray([1.0 + i for i in range(k)])
    return (u @ (u * c).mT, vh.mT @ (vh * X.asarray([[0.5 + i] for i in range(k)])),
            (u * s[..., None, :] ** 3) @ vh, s)


def _eig_loss(X, x):
    w, v = X.linalg.eig(x)
    return X.real(w), X.real(w * X.conj(w)), X.real(v * X.conj(v))


def _eigvals_loss(X, x):
    w = X.linalg.eigvals(x)
    return X.real(w), X.real(w * X.conj(w))


# name: (loss(X, *inputs) written for X = grilly or torch, numpy inputs)
LOSSES = {
    "linalg.qr": (lambda X, x: tuple(X.linalg.qr(x)), [_a(4, 3)]),
    "linalg.qr/square": (lambda X, x: tuple(X.linalg.qr(x, mode="complete")), [_a(3, 3)]),
    "linalg.qr/wide": (lambda X, x: tuple(X.linalg.qr(x)), [_a(2, 4)]),
    "linalg.qr/batch": (lambda X, x: tuple(X.linalg.qr(x)), [_a(2, 4, 3)]),
    "linalg.svd": (_svd_loss, [_a(4, 3)]),
    "linalg.svd/wide": (_svd_loss, [_a(3, 5)]),
    "linalg.svd/square_full": (lambda X, x: _svd_loss(X, x, full=True), [_a(2, 3, 3)]),
    "linalg.pinv": (lambda X, x: X.linalg.pinv(x), [_a(4, 3)]),
    "linalg.pinv/wide": (lambda X, x: X.linalg.pinv(x), [_a(3, 4)]),
    "linalg.eig": (_eig_loss, [_complex_pair()]),
    "linalg.eig/real": (_eig_loss, [_complex_pair() + np.diag([0.0, 3.0, 0.0, 0.0])]),
    "linalg.eigvals": (_eigvals_loss, [_complex_pair()]),
}

TORCH = types.SimpleNamespace(
    linalg=torch.linalg, real=torch.real, conj=torch.conj,
    asarray=lambda v: torch.tensor(v, dtype=torch.float64))


def _grilly(dtype=gp.float64, device=None):
    return types.SimpleNamespace(
        linalg=gp.linalg, real=gp.real, conj=gp.conj,
        asarray=lambda v: gp.asarray(v, dtype=dtype, device=device))


def _gp_loss(name):
    loss = LOSSES[name][0]
    return lambda *xs: loss(gp, *xs)


# the layout of tests/test_autograd_rules.py: name -> (fn, numpy inputs)
CASES = {name: (_gp_loss(name), inputs) for name, (_, inputs) in LOSSES.items()}
DECOMPOSITIONS = ("linalg.qr", "linalg.svd", "linalg.pinv", "linalg.eig", "linalg.eigvals")


def _outs(o):
    return list(o) if isinstance(o, tuple) else [o]


def _torch_grads(name, inputs, weights):
    ts = [torch.tensor(x, requires_grad=True) for x in inputs]
    outs = _outs(LOSSES[name][0](TORCH, *ts))
    total = sum((o * torch.tensor(w)).sum() for o, w in zip(outs, weights))
    total.backward()
    return [t.grad.numpy() for t in ts]


def _gp_grads(name, inputs, weights, device=None, dtype=gp.float64):
    xs = [gp.asarray(x, dtype=dtype, device=device) for x in inputs]
    for x in xs:
        x.requires_grad_()
    outs = _outs(LOSSES[name][0](_grilly(dtype, device), *xs))
    total = sum(gp.sum(o * gp.asarray(w, dtype=dtype, device=device))
                for o, w in zip(outs, weights))
    total.backward()
    return [np.asarray(x.grad) for x in xs]


def _weights(name, inputs, seed=0):
    rng = np.random.default_rng(seed)
    with gp.no_grad():
        outs = _outs(LOSSES[name][0](gp, *[gp.asarray(x) for x in inputs]))
    return [rng.standard_normal(o.shape) for o in outs]


def test_every_decomposition_rule_has_a_case():
    names = set(rule_names())
    for op in DECOMPOSITIONS:
        assert op in names, f"{op} has no VJP rule"
        assert op in LOSSES, f"{op} has no test case"
    assert "linalg.matrix_rank" not in names


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_gradcheck_float64(name):
    fn, inputs = CASES[name]
    assert gradcheck(fn, [gp.asarray(x) for x in inputs])


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_matches_torch(name):
    inputs = LOSSES[name][1]
    w = _weights(name, inputs)
    for mine, ref in zip(_gp_grads(name, inputs, w), _torch_grads(name, inputs, w)):
        assert_close(mine, ref, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", ["linalg.qr", "linalg.qr/wide", "linalg.svd", "linalg.svd/wide",
                                  "linalg.pinv", "linalg.eig", "linalg.eigvals"])
def test_float32_on_device_matches_torch(device, name):
    inputs = LOSSES[name][1]
    w = _weights(name, inputs)
    got = _gp_grads(name, inputs, w, device=device, dtype=gp.float32)
    for mine, ref in zip(got, _torch_grads(name, inputs, w)):
        assert mine.dtype == np.float32
        assert_close(mine, ref.astype(np.float32), rtol=2e-3,
                     atol=2e-3 * max(1.0, float(np.abs(ref).max())))


def test_svd_full_matrices_non_square_is_an_error():
    x = gp.asarray(_a(4, 3))
    x.requires_grad_()
    u, s, vh = gp.linalg.svd(x)  # the forward is fine; the derivative is not defined
    with pytest.raises(ValueError, match="full_matrices=True.*full_matrices=False"):
        gp.sum(u[:, :3] * s).backward()


def test_qr_complete_tall_is_an_error():
    x = gp.asarray(_a(4, 3))
    x.requires_grad_()
    q, r = gp.linalg.qr(x, mode="complete")
    with pytest.raises(ValueError, match="mode='complete'.*mode='reduced'"):
        gp.sum(r).backward()


def test_matrix_rank_has_no_gradient():
    x = gp.asarray(_a(3, 3))
    x.requires_grad_()
    r = gp.linalg.matrix_rank(x)
    assert r.dtype == gp.int64 and not r.requires_grad


def test_second_order_through_svdvals_of_pinv():
    # rules are namespace calls, so create_graph differentiates the pinv rule itself
    x = gp.asarray(_a(3, 3) + 3 * np.eye(3))
    x.requires_grad_()
    (g,) = gp.autograd.grad(gp.sum(gp.linalg.pinv(x) ** 2), [x], create_graph=True)
    gp.sum(g * g).backward()
    t = torch.tensor(np.asarray(x.detach()), requires_grad=True)
    (tg,) = torch.autograd.grad((torch.linalg.pinv(t) ** 2).sum(), [t], create_graph=True)
    (tg * tg).sum().backward()
    assert_close(np.asarray(x.grad), t.grad.numpy(), rtol=1e-8, atol=1e-8)


@given(m=st.integers(1, 4), n=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_nuclear_norm_gradient_is_u_vh(m, n, seed):
    # d sum(S) / dA = U Vh for distinct nonzero singular values: checks the svd rule through gS
    a = np.random.default_rng(seed).standard_normal((m, n))
    x = gp.asarray(a)
    x.requires_grad_()
    gp.sum(gp.linalg.svd(x, full_matrices=False)[1]).backward()
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    assert_close(np.asarray(x.grad), u @ vh, rtol=1e-7, atol=1e-7)
