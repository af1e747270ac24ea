"""bfloat16 through the ops that draw uniforms (grilly.random refuses bfloat16 uniforms, whose
rounding could reach ``high``): gumbel_softmax, rrelu in training, dropout with an Array p,
fractional max pooling, rand/rand_like. Each draws in float32 and rounds once; the reference is
the same call in float32 from the same seed."""
import ml_dtypes
import numpy as np
import pytest

import grilly as gp
import grilly.nn.functional as F

BF = ml_dtypes.bfloat16
EPS = 2.0 ** -7
R = np.random.default_rng(6)


def _pair(shape, device):
    h = R.uniform(-2, 2, shape).astype(BF)
    return gp.asarray(h, device=device), gp.asarray(h.astype(np.float32), device=device)


def _run(f, x, w):
    """f(x) and the gradient of sum(f(x) * w) with respect to x, as float64 numpy."""
    x = gp.asarray(np.asarray(x), device=x.device)
    x.requires_grad = True
    y = f(x)
    gp.sum(y * gp.astype(gp.asarray(w, device=x.device), y.dtype)).backward()
    assert y.dtype == x.dtype and x.grad.dtype == x.dtype
    return np.asarray(y).astype(np.float64), np.asarray(x.grad).astype(np.float64)


def _close(got, ref, k):
    assert np.all(np.abs(got - ref) <= k * EPS * (np.abs(ref) + 0.05 * np.abs(ref).max())
                  + 1e-6), np.abs(got - ref).max()


@pytest.mark.parametrize("op", ["gumbel_softmax", "gumbel_hard", "rrelu"])
def test_random_activations_in_bfloat16(device, op):
    f = {"gumbel_softmax": lambda x: F.gumbel_softmax(x, tau=0.7),
         "gumbel_hard": lambda x: F.gumbel_softmax(x, hard=True),
         "rrelu": lambda x: F.rrelu(x, 0.1, 0.3, training=True)}[op]
    xb, xf = _pair((4, 6), device)
    w = R.uniform(-1, 1, (4, 6)).astype(BF).astype(np.float32)
    gp.manual_seed(11)
    yb, gb = _run(f, xb, w)
    gp.manual_seed(11)
    yf, gf = _run(f, xf, w)
    if op == "gumbel_hard":   # the same class picked, up to a near tie
        assert np.mean(yb == yf) >= 0.9
    else:
        _close(yb, yf, 8)
    _close(gb, gf, 16)


def test_dropout_array_p_and_fractional_pool_in_bfloat16(device):
    xb, xf = _pair((2, 3, 8, 8), device)
    outs = []
    for x in (xb, xf):
        gp.manual_seed(5)
        d = F.dropout(x, gp.asarray(0.4, device=device), training=True)
        gp.manual_seed(5)
        p = F.fractional_max_pool2d(x, 2, output_size=4)
        assert d.dtype == p.dtype == x.dtype
        outs.append((np.asarray(d).astype(np.float64), np.asarray(p).astype(np.float64)))
    assert np.array_equal(outs[0][0] != 0, outs[1][0] != 0)   # the same mask
    _close(outs[0][0], outs[1][0], 2)
    assert np.array_equal(outs[0][1], outs[1][1])   # a max picks bfloat16 values exactly


def test_rand_and_rand_like_bfloat16(device):
    """torch's bfloat16 uniforms: k / 256, k in 0..255 (never 1)."""
    xb, _ = _pair((4000,), device)
    gp.manual_seed(3)
    a = gp.rand_like(xb)
    gp.manual_seed(3)
    ref = np.floor(np.asarray(gp.rand(4000, device=device)).astype(np.float64) * 256) / 256
    gp.manual_seed(3)
    b = gp.rand(4000, dtype=gp.bfloat16, device=device)
    assert a.dtype == b.dtype == gp.bfloat16 and a.device == xb.device
    got = np.asarray(a).astype(np.float64)
    assert np.array_equal(got, ref) and np.array_equal(np.asarray(b).astype(np.float64), ref)
    assert got.min() >= 0 and got.max() < 1 and abs(got.mean() - 0.5) < 0.03
