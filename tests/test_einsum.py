"""gp.einsum against numpy.einsum (float64 reference) on every device, its errors, its gradients
against torch.einsum, and a jitted einsum."""
import numpy as np
import pytest

import grilly as gp
from grilly.testing import float_dtype

R = np.random.default_rng(21)

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 5)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("ba", [(2, 3)]), ("ijk->", [(2, 3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("...ij,...jk", [(5, 1, 2, 3), (4, 3, 2)]),
    ("i,i", [(3,), (3,)]), ("i,j->ij", [(3,), (4,)]), ("iij->ji", [(2, 2, 3)]),
    ("i,i->", [(3,), (1,)]), ("ij,ij->i", [(3, 4), (1, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ab,cd->", [(2, 3), (4, 5)]),
    ("Ab,bA", [(2, 3), (3, 2)]), (",ij->ij", [(), (2, 3)]), ("ijk,jil->kl", [(3, 4, 5), (4, 3, 2)]),
    ("i,i,i->i", [(4,), (4,), (4,)]), ("i...,i...->...", [(3, 2, 2), (3, 1, 2)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]), ("ij,kj->ikj", [(2, 0), (3, 0)]),
    (" ij , jk -> ki ", [(2, 3), (3, 4)]),
]


@pytest.mark.parametrize("spec,shapes", CASES, ids=[c[0].replace(" ", "_") for c in CASES])
def test_einsum_as_numpy(device, spec, shapes):
    hs = [R.standard_normal(s).astype(np.float32) for s in shapes]
    got = gp.einsum(spec, *[gp.asarray(h, device=device) for h in hs])
    want = np.einsum(spec, *[h.astype(np.float64) for h in hs])
    assert got.shape == want.shape and got.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-5)


def test_integers_and_ellipsis_summed(device):
    h = R.integers(-9, 9, (3, 4, 5)).astype(np.int32)
    x = gp.asarray(h, device=device)
    for spec in ("ijk->k", "ijk,ijk->ij", "jik->kji"):
        got = gp.einsum(spec, *([x] * (spec.count(",") + 1)))
        want = np.einsum(spec, *([h] * (spec.count(",") + 1)))
        assert got.dtype == gp.int32
        np.testing.assert_array_equal(np.asarray(got), want)
    # an ellipsis axis left out of an explicit output is summed (torch; NumPy raises)
    np.testing.assert_array_equal(np.asarray(gp.einsum("...k->k", x)), h.sum(axis=(0, 1)))
    hx = R.standard_normal((3, 4)).astype(np.float64)
    np.testing.assert_allclose(np.asarray(gp.einsum("ij,ij->", gp.asarray(hx, device=device),
                                                    gp.asarray(hx, device=device))),
                               (hx * hx).sum(), rtol=1e-12)


@pytest.mark.parametrize("spec,shapes,err,match", [
    ("ij,jk", [(2, 3), (2, 4)], ValueError, "label 'j' has sizes 3 and 2"),
    ("ij->ii", [(2, 2)], ValueError, "repeat a label"),
    ("ij", [(3,)], ValueError, "names 2 axes, but operands\\[0\\] has 1"),
    ("i,j", [(2,)], ValueError, "name 2 operands, got 1"),
    ("i->j", [(2,)], ValueError, "output label 'j'"),
    ("i1", [(2, 2)], ValueError, "invalid subscripts"),
    ("ii", [(2, 3)], ValueError, "repeats in one term with sizes 2 and 3"),
    ("i->i->i", [(2,)], ValueError, "more than one '->'"),
])
def test_errors(device, spec, shapes, err, match):
    with pytest.raises(err, match=match):
        gp.einsum(spec, *[gp.ones(s, device=device) for s in shapes])


def test_type_errors(device):
    a = gp.asarray(np.array([1, 2], np.int32), device=device)
    # an integer with a float array promotes as NumPy's (int32 with float32: float64)
    if float_dtype(device) == "float64":
        got = gp.einsum("i,i", a, gp.asarray(np.ones(2, np.float32), device=device))
        assert got.dtype == gp.float64 and float(got) == 3.0
    with pytest.raises(TypeError, match="must be a string"):
        gp.einsum(a, [0])
    with pytest.raises(TypeError, match="bool"):
        gp.einsum("i", a > 0)
    with pytest.raises(TypeError, match="grilly Array"):
        gp.einsum("i", np.ones(2))


@pytest.mark.parametrize("spec,shapes", [("ij,jk->ik", [(3, 4), (4, 5)]), ("ii->i", [(3, 3)]),
                                         ("bij,bjk,bk->bi", [(2, 3, 4), (2, 4, 5), (2, 5)]),
                                         ("i,i->", [(3,), (1,)]), ("...ij,...j", [(2, 3, 4), (4,)])])
def test_gradients_as_torch(device, spec, shapes):
    torch = pytest.importorskip("torch")
    hs = [R.standard_normal(s) for s in shapes]
    xs = [gp.asarray(h, device=device) for h in hs]
    for x in xs:
        x.requires_grad_()
    ts = [torch.tensor(h, requires_grad=True) for h in hs]
    y, ty = gp.einsum(spec, *xs), torch.einsum(spec, *ts)
    w = R.standard_normal(ty.shape)
    gp.sum(y * gp.asarray(w, device=device)).backward()
    (ty * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_jitted_einsum(device):
    f = gp.jit(lambda a, b: gp.einsum("bij,bkj->bik", a, b))
    for _ in range(3):
        ha, hb = R.standard_normal((2, 3, 4)), R.standard_normal((2, 5, 4))
        np.testing.assert_allclose(
            np.asarray(f(gp.asarray(ha, device=device), gp.asarray(hb, device=device))),
            np.einsum("bij,bkj->bik", ha, hb), rtol=1e-12)
    assert f.traces == 1
