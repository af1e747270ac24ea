"""NumPy functions a NumPy user types first: one-argument ``where``, ``squeeze`` without axis,
``tile`` with an int, ``round``/``around`` with decimals, ``polyfit``/``polyval``, and NumPy's
``save``/``load``/``savez``/``savez_compressed`` of .npy/.npz files beside torch's
``save(obj, f)``: against numpy (and torch for gradients) on every device."""
import numpy as np
import pytest

import grilly as gp

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def _grad(f, x, device):
    """grilly's gradient of sum(f(x) * w) for fixed random weights w."""
    a = gp.asarray(x, device=device).requires_grad_()
    out = f(a)
    w = RNG.standard_normal(out.shape)
    gp.sum(out * gp.asarray(w, device=device)).backward()
    return np.asarray(a.grad), w


def test_where_with_one_argument_is_nonzero(device):
    for x in (np.array([0.0, 1.5, 0.0, -2.0]), RNG.standard_normal((3, 4)) > 0,
              np.array([[0, 3], [4, 0]]), np.zeros((2, 2), bool)):
        got = gp.where(gp.asarray(x, device=device))
        want = np.where(x)
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.dtype == gp.int64 and g.device == device
            np.testing.assert_array_equal(np.asarray(g), w)
    c = gp.asarray([True, False], device=device)
    got = gp.where(c, gp.asarray([1.0, 3.0], device=device), 2.0)   # three arguments as before
    np.testing.assert_array_equal(np.asarray(got), np.where([True, False], [1.0, 3.0], 2.0))
    with pytest.raises(ValueError, match="where"):
        gp.where(c, 1.0)
    with pytest.raises(ValueError, match="nonzero"):
        gp.where(gp.asarray(True, device=device))


def test_squeeze_without_axis_removes_every_length_one_axis(device):
    for shape in ((1, 3, 1, 1), (1,), (2, 3), (1, 1), (4, 1, 2)):
        x = RNG.standard_normal(shape)
        got = gp.squeeze(gp.asarray(x, device=device))
        assert got.shape == np.squeeze(x).shape
        np.testing.assert_array_equal(np.asarray(got), np.squeeze(x))
    assert gp.squeeze(gp.ones((1, 3, 1), device=device), axis=0).shape == (3, 1)
    assert gp.squeeze(gp.ones((1, 3, 1), device=device), 2).shape == (1, 3)
    with pytest.raises(ValueError, match="squeeze"):
        gp.squeeze(gp.ones((2, 3), device=device), axis=0)
    x = RNG.standard_normal((1, 3, 1))
    g, w = _grad(gp.squeeze, x, device)
    np.testing.assert_allclose(g, w.reshape(x.shape))


def test_tile_with_an_int(device):
    for shape, reps in (((3,), 2), ((2, 3), 3), ((2, 3), 0), ((), 4), ((2,), (2, 2))):
        x = RNG.standard_normal(shape)
        got = gp.tile(gp.asarray(x, device=device), reps)
        np.testing.assert_array_equal(np.asarray(got), np.tile(x, reps))
    with pytest.raises(TypeError, match="tile"):
        gp.tile(gp.ones(3, device=device), 2.0)
    x = RNG.standard_normal((2, 3))
    g, w = _grad(lambda a: gp.tile(a, 3), x, device)
    t = torch.tensor(x, requires_grad=True)
    (torch.tile(t, (3,)) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_round_with_decimals_matches_numpy(device, dtype):
    x = (RNG.standard_normal(50) * 100).astype(dtype)
    x[:4] = [0.125, 2.5, -3.5, 1.0049]
    a = gp.asarray(x, device=device)
    for d in (-2, -1, 0, 1, 2, 3):
        want = np.round(x, d)
        for got in (gp.round(a, d), gp.round(a, decimals=d), gp.around(a, d), a.round(d),
                    round(a, d)):
            assert got.dtype == gp.dtype(want.dtype) and got.device == device
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6 if dtype == "float32"
                                       else 1e-15, atol=0)
    np.testing.assert_array_equal(np.asarray(gp.round(a)), np.round(x))   # the Array API's


def test_round_of_integers_and_errors(device):
    x = np.array([15, -25, 7])
    a = gp.asarray(x, device=device)
    for d in (0, 1, 3):
        got = gp.round(a, d)
        assert got.dtype == gp.int64
        np.testing.assert_array_equal(np.asarray(got), np.round(x, d))
    with pytest.raises(NotImplementedError, match="round"):
        gp.round(a, -1)
    with pytest.raises(TypeError, match="round"):
        gp.round(gp.asarray([1.5], device=device), 1.5)
    with pytest.raises(TypeError, match="round.*out"):
        gp.round(gp.asarray([1.5], device=device), 1, gp.zeros(1))


def test_round_gradient_is_zero_as_torch(device):
    x = RNG.standard_normal(6)
    g, w = _grad(lambda a: gp.round(a, 2), x, device)
    t = torch.tensor(x, requires_grad=True)
    (torch.round(t, decimals=2) * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(g, t.grad.numpy())


def test_polyval_matches_numpy(device):
    p = np.array([2.0, -1.5, 0.25, 3.0])
    x = RNG.standard_normal((3, 4))
    want = np.polyval(p, x)
    pd, xd = gp.asarray(p, device=device), gp.asarray(x, device=device)
    np.testing.assert_allclose(np.asarray(gp.polyval(pd, xd)), want, rtol=1e-13)
    np.testing.assert_allclose(np.asarray(gp.polyval(list(p), xd)), want, rtol=1e-13)
    got = gp.polyval(pd, 1.5)
    assert got.shape == () and np.isclose(float(got), np.polyval(p, 1.5))
    p2 = RNG.standard_normal((3, 2))   # one polynomial per column
    x2 = RNG.standard_normal(2)
    np.testing.assert_allclose(np.asarray(gp.polyval(gp.asarray(p2, device=device),
                                                     gp.asarray(x2, device=device))),
                               np.polyval(p2, x2), rtol=1e-13)
    pi, xi = np.array([1, 0, -2]), np.array([3, 4])
    got = gp.polyval(gp.asarray(pi, device=device), gp.asarray(xi, device=device))
    assert got.dtype == gp.int64
    np.testing.assert_array_equal(np.asarray(got), np.polyval(pi, xi))


def test_polyval_gradients_match_torch(device):
    p, x = RNG.standard_normal(4), RNG.standard_normal(5)
    pg = gp.asarray(p, device=device).requires_grad_()
    xg = gp.asarray(x, device=device).requires_grad_()
    w = RNG.standard_normal(5)
    gp.sum(gp.polyval(pg, xg) * gp.asarray(w, device=device)).backward()
    pt, xt = torch.tensor(p, requires_grad=True), torch.tensor(x, requires_grad=True)
    y = torch.zeros_like(xt)
    for c in pt:
        y = y * xt + c
    (y * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np.asarray(pg.grad), pt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(xg.grad), xt.grad.numpy(), rtol=1e-12)


def test_polyfit_matches_numpy(device):
    x = np.linspace(-1.0, 2.0, 25)
    y = 0.5 * x ** 3 - x + 2 + RNG.standard_normal(25) * 0.1
    xd, yd = gp.asarray(x, device=device), gp.asarray(y, device=device)
    for deg in (0, 1, 2, 3, 5):
        np.testing.assert_allclose(np.asarray(gp.polyfit(xd, yd, deg)), np.polyfit(x, y, deg),
                                   rtol=1e-9, atol=1e-11)
    w = RNG.uniform(0.5, 2.0, 25)
    np.testing.assert_allclose(np.asarray(gp.polyfit(xd, yd, 2, w=gp.asarray(w, device=device))),
                               np.polyfit(x, y, 2, w=w), rtol=1e-9)
    y2 = np.stack([y, 2 * y - x], axis=1)
    np.testing.assert_allclose(np.asarray(gp.polyfit(xd, gp.asarray(y2, device=device), 2)),
                               np.polyfit(x, y2, 2), rtol=1e-9)
    c, res, rank, sv, rcond = gp.polyfit(xd, yd, 3, full=True)
    wc, wres, wrank, wsv, wrcond = np.polyfit(x, y, 3, full=True)
    np.testing.assert_allclose(np.asarray(c), wc, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(res), wres, rtol=1e-7)
    assert int(rank) == wrank and rcond == pytest.approx(wrcond)
    np.testing.assert_allclose(np.asarray(sv), wsv, rtol=1e-10)
    x32 = x.astype(np.float32)
    got = gp.polyfit(gp.asarray(x32, device=device), gp.asarray(y.astype(np.float32),
                                                                  device=device), 2)
    assert got.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(got), np.polyfit(x32, y.astype(np.float32), 2),
                               rtol=2e-4, atol=2e-4)
    xi = gp.asarray(np.arange(6), device=device)   # integers are fitted in float64, as NumPy
    got = gp.polyfit(xi, gp.asarray(np.arange(6) * 3 + 1, device=device), 1)
    assert got.dtype == gp.float64
    np.testing.assert_allclose(np.asarray(got), np.polyfit(np.arange(6), np.arange(6) * 3 + 1, 1))


def test_polyfit_errors(device):
    x = gp.asarray(np.linspace(0, 1, 5), device=device)
    with pytest.raises(ValueError, match="polyfit.*deg"):
        gp.polyfit(x, x, -1)
    with pytest.raises(TypeError, match="polyfit.*1-D"):
        gp.polyfit(gp.reshape(x[:4], (2, 2)), gp.ones(2, device=device), 1)
    with pytest.raises(TypeError, match="polyfit.*same length"):
        gp.polyfit(x, x[:3], 1)
    with pytest.raises(TypeError, match="polyfit.*non-empty"):
        gp.polyfit(x[:0], x[:0], 1)
    with pytest.raises(NotImplementedError, match="polyfit.*cov"):
        gp.polyfit(x, x, 1, cov=True)
    for f in (lambda: np.polyfit(np.ones((2, 2)), np.ones(2), 1),
              lambda: np.polyfit(np.ones(5), np.ones(3), 1)):
        with pytest.raises(TypeError):   # the error types are NumPy's
            f()


def test_save_and_load_npy_in_numpys_order(device, tmp_path):
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    path = tmp_path / "x.npy"
    gp.save(path, gp.asarray(x, device=device))
    np.testing.assert_array_equal(np.load(path), x)
    gp.save(str(tmp_path / "noext"), gp.asarray(x, device=device))   # '.npy' appended
    np.testing.assert_array_equal(np.load(tmp_path / "noext.npy"), x)
    np.save(tmp_path / "i.npy", np.arange(5, dtype=np.int16))
    got = gp.load(tmp_path / "i.npy", device=device)
    assert isinstance(got, gp.Array) and got.dtype == gp.int16 and got.device == device
    np.testing.assert_array_equal(np.asarray(got), np.arange(5))
    got = gp.load(str(path), map_location=device)
    assert got.device == device and got.dtype == gp.float32
    np.testing.assert_array_equal(np.asarray(got), x)
    with open(path, "rb") as f:   # a file object too
        np.testing.assert_array_equal(np.asarray(gp.load(f)), x)


def test_savez_and_load_npz(device, tmp_path):
    a, b = RNG.standard_normal((2, 3)), np.arange(4)
    for save, name in ((gp.savez, "u"), (gp.savez_compressed, "c")):
        save(tmp_path / name, gp.asarray(a, device=device), b=gp.asarray(b, device=device))
        with np.load(tmp_path / f"{name}.npz") as ref:
            assert sorted(ref.files) == ["arr_0", "b"]
            np.testing.assert_array_equal(ref["arr_0"], a)
            np.testing.assert_array_equal(ref["b"], b)
        with gp.load(tmp_path / f"{name}.npz", device=device) as z:
            assert sorted(z.files) == ["arr_0", "b"] and len(z) == 2 and "b" in z
            assert z["b"].device == device and z["b"].dtype == gp.int64
            np.testing.assert_array_equal(np.asarray(z["arr_0"]), a)
            np.testing.assert_array_equal(np.asarray(z["b"]), b)
    np.savez(tmp_path / "n.npz", q=np.ones(3, np.float32))
    z = gp.load(tmp_path / "n.npz")
    assert z["q"].dtype == gp.float32 and dict(z).keys() == {"q"}


def test_torch_order_save_load_unchanged(device, tmp_path):
    sd = {"w": gp.asarray(RNG.standard_normal((2, 2)), device=device)}
    gp.save(sd, tmp_path / "m.safetensors")
    back = gp.load(tmp_path / "m.safetensors", device=device)
    np.testing.assert_array_equal(np.asarray(back["w"]), np.asarray(sd["w"]))
    with pytest.raises(TypeError, match="save: the object comes first"):
        gp.save(tmp_path / "m2", sd)
    with pytest.raises(TypeError, match="savez"):
        gp.savez(tmp_path / "bad", object())
