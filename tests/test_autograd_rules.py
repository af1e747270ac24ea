"""Every VJP rule against central finite differences (float64), one case per rule."""
import numpy as np
import pytest

import grilly as gp
from grilly.array import segments as _seg
from grilly.array import fused as _fused
from grilly.autograd import gradcheck, rule_names

R = np.random.default_rng(7)


def _a(shape, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, shape)


def _spd(n):
    m = R.standard_normal((n, n))
    return m @ m.T + n * np.eye(n)


def _set(y, key, v):
    y[key] = v
    return y


la = gp.linalg
# rule name: (function of the inputs, numpy inputs); inputs are float64 and differentiated
CASES = {
    "abs": (gp.abs, [_a(5) + np.sign(_a(5)) * 0.1]),
    "acos": (gp.acos, [_a(4, -0.8, 0.8)]), "acosh": (gp.acosh, [_a(4, 1.2, 3.0)]),
    "asin": (gp.asin, [_a(4, -0.8, 0.8)]), "asinh": (gp.asinh, [_a(4)]),
    "atan": (gp.atan, [_a(4)]), "atanh": (gp.atanh, [_a(4, -0.8, 0.8)]),
    "cos": (gp.cos, [_a(4)]), "cosh": (gp.cosh, [_a(4)]), "sin": (gp.sin, [_a(4)]),
    "sinh": (gp.sinh, [_a(4)]), "tan": (gp.tan, [_a(4)]), "tanh": (gp.tanh, [_a(4)]),
    "exp": (gp.exp, [_a(4)]), "expm1": (gp.expm1, [_a(4)]), "log": (gp.log, [_a(4, 0.2, 3)]),
    "log1p": (gp.log1p, [_a(4, -0.5, 3)]), "log2": (gp.log2, [_a(4, 0.2, 3)]),
    "log10": (gp.log10, [_a(4, 0.2, 3)]), "sqrt": (gp.sqrt, [_a(4, 0.2, 3)]),
    "reciprocal": (gp.reciprocal, [_a(4, 0.5, 2)]), "square": (gp.square, [_a(4)]),
    "negative": (gp.negative, [_a(4)]), "positive": (gp.positive, [_a(4)]),
    "conj": (gp.conj, [_a(4)]), "real": (gp.real, [_a(4)]),
    "ceil": (lambda x: gp.ceil(x) * x, [_a(4) + 0.3]),
    "floor": (lambda x: gp.floor(x) * x, [_a(4) + 0.3]),
    "trunc": (lambda x: gp.trunc(x) * x, [_a(4) + 0.3]),
    "round": (lambda x: gp.round(x) * x, [_a(4) + 0.3]),
    "sign": (lambda x: gp.sign(x) * x, [_a(4) + 0.3]),
    "add": (gp.add, [_a((3, 4)), _a(4)]), "subtract": (gp.subtract, [_a((3, 1)), _a(4)]),
    "multiply": (gp.multiply, [_a((2, 3)), _a((2, 3))]),
    "divide": (gp.divide, [_a((2, 3)), _a(3, 0.5, 2)]),
    "pow": (gp.pow, [_a(4, 0.5, 2), _a(4)]),
    "atan2": (gp.atan2, [_a(4), _a(4, 0.3, 1)]), "hypot": (gp.hypot, [_a(4), _a(4)]),
    "logaddexp": (gp.logaddexp, [_a(4), _a(4)]),
    "maximum": (gp.maximum, [_a(6), _a(6)]), "minimum": (gp.minimum, [_a(6), _a(6)]),
    "copysign": (gp.copysign, [_a(4) + 2, _a(4) + 0.5]),
    "remainder": (gp.remainder, [_a(4, 2.1, 2.9), np.full(4, 1.5)]),
    "floor_divide": (lambda a, b: gp.floor_divide(a, b) * a, [_a(4, 2.1, 2.9), np.full(4, 1.5)]),
    "clip": (lambda x: gp.clip(x, min=-0.5, max=0.5), [np.array([-0.9, -0.2, 0.1, 0.7])]),
    "where": (lambda a, b: gp.where(a > 0, a, b), [_a(5), _a(5)]),
    "astype": (lambda x: gp.astype(x, gp.float32) * 1.0, [_a(4)], dict(eps=1e-3, atol=1e-4)),
    "sum": (lambda x: gp.sum(x, axis=1), [_a((3, 4))]),
    "mean": (lambda x: gp.mean(x, axis=(0, 2), keepdims=True), [_a((2, 3, 4))]),
    "prod": (lambda x: gp.prod(x, axis=0), [_a((3, 4), 0.5, 1.5)]),
    "max": (lambda x: gp.max(x, axis=1), [_a((3, 4))]),
    "min": (lambda x: gp.min(x), [_a((3, 4))]),
    "var": (lambda x: gp.var(x, axis=0, correction=1), [_a((4, 3))]),
    "std": (lambda x: gp.std(x, axis=1), [_a((3, 4))]),
    "logsumexp": (lambda x: gp.logsumexp(x, axis=1), [_a((3, 4))]),
    "fused.softmax": (lambda x: _fused.softmax(x, axis=0), [_a((3, 4))]),
    "fused.log_softmax": (lambda x: _fused.log_softmax(x, axis=1), [_a((3, 4))]),
    "tensordot/2": (lambda a, b: gp.tensordot(a, b, axes=([2, 0], [0, 1])),
                    [_a((2, 3, 4)), _a((4, 2, 5))]),
    "cumulative_sum": (lambda x: gp.cumulative_sum(x, axis=1), [_a((3, 4))]),
    "matmul": (gp.matmul, [_a((2, 3, 4)), _a((4, 2))]),
    "vecdot": (gp.vecdot, [_a((3, 4)), _a(4)]),
    "matrix_transpose": (gp.matrix_transpose, [_a((2, 3, 4))]),
    "tensordot": (lambda a, b: gp.tensordot(a, b, axes=([0, 2], [1, 0])),
                  [_a((2, 3, 4)), _a((4, 2, 5))]),
    "reshape": (lambda x: gp.reshape(x, (4, 3)), [_a((2, 6))]),
    "expand_dims": (lambda x: gp.expand_dims(x, axis=1), [_a((2, 3))]),
    "squeeze": (lambda x: gp.squeeze(x, axis=1), [_a((2, 1, 3))]),
    "broadcast_to": (lambda x: gp.broadcast_to(x, (2, 3, 4)), [_a((3, 1))]),
    "permute_dims": (lambda x: gp.permute_dims(x, (2, 0, 1)), [_a((2, 3, 4))]),
    "flip": (lambda x: gp.flip(x, axis=1), [_a((2, 3))]),
    "roll": (lambda x: gp.roll(x, 2, axis=1), [_a((2, 5))]),
    "moveaxis": (lambda x: gp.moveaxis(x, 0, 2), [_a((2, 3, 4))]),
    "concat": (lambda a, b: gp.concat([a, b], axis=1), [_a((2, 3)), _a((2, 2))]),
    "stack": (lambda a, b: gp.stack([a, b], axis=1), [_a((2, 3)), _a((2, 3))]),
    "unstack": (lambda x: gp.unstack(x, axis=1), [_a((2, 3))]),
    "broadcast_arrays": (lambda a, b: gp.broadcast_arrays(a, b), [_a((3, 1)), _a(4)]),
    "tile": (lambda x: gp.tile(x, (2, 3)), [_a((2, 2))]),
    "take": (lambda x: gp.take(x, gp.asarray([2, 0, 2, 1]), axis=1), [_a((2, 3))]),
    "linalg.inv": (la.inv, [_spd(3)]), "linalg.det": (la.det, [_spd(3)]),
    "linalg.slogdet": (la.slogdet, [_spd(3)]),
    "linalg.solve": (la.solve, [_spd(3), _a((3, 2))]),
    "linalg.cholesky": (lambda a: la.cholesky(a @ gp.matrix_transpose(a) + 3.0 * gp.eye(3)),
                        [_a((3, 3))]),
    "linalg.vector_norm": (lambda x: la.vector_norm(x, axis=1), [_a((3, 4))]),
    "linalg.matrix_norm": (la.matrix_norm, [_a((2, 3, 3))]),
    "linalg.eigh": (lambda a: la.eigh(a + gp.matrix_transpose(a)), [_a((3, 3))]),
    "linalg.trace": (la.trace, [_a((2, 3, 3))]),
    "linalg.matmul": (la.matmul, [_a((3, 4)), _a(4)]),
    "linalg.vecdot": (la.vecdot, [_a((3, 4)), _a((3, 4))]),
    "linalg.matrix_transpose": (la.matrix_transpose, [_a((3, 4))]),
    "linalg.tensordot": (lambda a, b: la.tensordot(a, b, axes=1), [_a((2, 3)), _a((3, 4))]),
    "linalg.outer": (la.outer, [_a(3), _a(4)]),
    "__getitem__": (lambda x: x[1:, ::2], [_a((3, 4))]),
    "__getitem__/int": (lambda x: x[gp.asarray([2, 0, 2])], [_a((3, 2))]),
    "__getitem__/ints": (lambda x: x[gp.asarray([2, 0, 2]), 1:], [_a((3, 3))]),
    "__getitem__/pair": (lambda x: x[gp.asarray([2, 0, 2]), gp.asarray([1, 1, 0])], [_a((3, 2))]),
    "__getitem__/mask": (lambda x: x[x > 0], [_a((3, 4))]),
    "__getitem__/big": (lambda x: x[gp.asarray(np.arange(3000) % 29)] * 1.0, [_a((29, 3))]),
    "segments.segment_sum": (lambda v: _seg.segment_sum(v, gp.asarray([0, 2, 2]),
                                                        gp.asarray([2, 2, 5])), [_a((6, 2))]),
    "segments.segment_max": (lambda v: _seg.segment_max(v, gp.asarray([0, 3]),
                                                        gp.asarray([3, 6]))[0], [_a((6, 2))]),
    "tril": (lambda x: gp.tril(x, k=-1), [_a((3, 3))]),
    "triu": (lambda x: gp.triu(x, k=1), [_a((2, 3, 3))]),
    "diff": (lambda x: gp.diff(x, axis=1, n=2), [_a((2, 5))]),
    "diff/pre": (lambda x: gp.diff(x, prepend=gp.asarray([0.5]), append=gp.asarray([0.1, 0.2])),
                 [_a(4)]),
    "cumulative_prod": (lambda x: gp.cumulative_prod(x, axis=1), [_a((2, 4), 0.5, 1.5)]),
    "take_along_axis": (lambda x: gp.take_along_axis(x, gp.asarray([[2, 0, 2], [1, 1, 0]]),
                                                     axis=1), [_a((2, 3))]),
    "repeat": (lambda x: gp.repeat(x, 3, axis=0), [_a((2, 2))]),
    "repeat/arr": (lambda x: gp.repeat(x, gp.asarray([1, 0, 2])), [_a(3)]),
    "meshgrid": (lambda a, b: gp.meshgrid(a, b), [_a(3), _a(2)]),
    "meshgrid/ij": (lambda a, b, c: gp.meshgrid(a, b, c, indexing="ij"), [_a(3), _a(2), _a(2)]),
    "sort": (lambda x: gp.sort(x, axis=0, descending=True), [_a((4, 2))]),
    "topk": (lambda x: gp.topk(x, 2, axis=0)[0], [_a((4, 3))]),
    "topk/small": (lambda x: gp.topk(x, 3, largest=False)[0] * 2.0, [_a((2, 5))]),
    "linalg.cross": (la.cross, [_a((2, 3)), _a(3)]),
    "linalg.diagonal": (lambda x: la.diagonal(x, offset=1), [_a((2, 3, 4))]),
    "linalg.diagonal/neg": (lambda x: la.diagonal(x, offset=-1), [_a((4, 3))]),
    "linalg.matrix_power": (lambda x: la.matrix_power(x, 3), [_a((3, 3))]),
    "linalg.matrix_power/neg": (lambda x: la.matrix_power(x, -2), [_spd(3)]),
    "linalg.svdvals": (la.svdvals, [_a((3, 4))]),
    "linalg.eigvalsh": (lambda a: la.eigvalsh(a + gp.matrix_transpose(a)), [_a((3, 3))]),
    "linalg.matrix_norm/nuc": (lambda x: la.matrix_norm(x, ord="nuc"), [_a((3, 4))]),
    "linalg.matrix_norm/2": (lambda x: la.matrix_norm(x, ord=2), [_a((3, 4))]),
    "linalg.matrix_norm/1": (lambda x: la.matrix_norm(x, ord=1), [_a((3, 4))]),
    "linalg.matrix_norm/inf": (lambda x: la.matrix_norm(x, ord=gp.inf), [_a((3, 4))]),
    "linalg.vector_norm/1": (lambda x: la.vector_norm(x, ord=1), [_a(4)]),
    "linalg.vector_norm/3": (lambda x: la.vector_norm(x, ord=3, axis=0), [_a((4, 2))]),
    "linalg.vector_norm/inf": (lambda x: la.vector_norm(x, ord=gp.inf), [_a(4)]),
    "__setitem__": (lambda x, v: _set(x * 1.0, (slice(1, 3),), v * 1.0), [_a(4), _a(2)]),
    "__setitem__/bcast": (lambda x, v: _set(x * 1.0, (0,), v * 1.0), [_a((2, 3)), _a(1)]),
    "to_device": (lambda x: x.to_device(x.device) * 1.0, [_a(3)]),
}


def _ri(z):
    """A complex result as two real outputs (gradcheck's losses are real)."""
    return gp.real(z), gp.imag(z)


def _cx(x, y):
    return x + y * 1j


ft = gp.fft
# the transforms (and imag): real inputs, complex ones built as x + iy, outputs split by _ri
CASES.update({
    "imag": (lambda x, y: gp.imag(_cx(x, y) * _cx(y, x)), [_a(3), _a(3)]),
    "fft.fft": (lambda x, y: _ri(ft.fft(_cx(x, y), n=5, norm="ortho")), [_a((2, 4)), _a((2, 4))]),
    "fft.fft/real": (lambda x: _ri(ft.fft(x, n=3, axis=0)), [_a((4, 2))]),
    "fft.ifft": (lambda x, y: _ri(ft.ifft(_cx(x, y), n=6)), [_a(4), _a(4)]),
    "fft.fftn": (lambda x, y: _ri(ft.fftn(_cx(x, y), s=(3, 2), norm="forward")),
                 [_a((2, 3)), _a((2, 3))]),
    "fft.ifftn": (lambda x, y: _ri(ft.ifftn(_cx(x, y), axes=(0,))), [_a((3, 2)), _a((3, 2))]),
    "fft.rfft": (lambda x: _ri(ft.rfft(x, n=7)), [_a((2, 5))]),
    "fft.rfftn": (lambda x: _ri(ft.rfftn(x, s=(2, 4), norm="ortho")), [_a((3, 5))]),
    "fft.irfft": (lambda x, y: ft.irfft(_cx(x, y), n=5), [_a((2, 4)), _a((2, 4))]),
    "fft.irfft/even": (lambda x, y: ft.irfft(_cx(x, y), norm="forward"), [_a(4), _a(4)]),
    "fft.irfftn": (lambda x, y: ft.irfftn(_cx(x, y), s=(3, 4)), [_a((2, 3)), _a((2, 3))]),
    "fft.fftshift": (lambda x: ft.fftshift(x, axes=0), [_a((5, 2))]),
    "fft.ifftshift": (lambda x: ft.ifftshift(x), [_a((3, 4))]),
})

from test_autograd_linalg import CASES as _LINALG  # noqa: E402  (qr, svd, pinv, eig: gauge-free losses)

CASES.update(_LINALG)


@pytest.mark.parametrize("name", sorted({*rule_names(), *CASES}))
def test_rule_matches_finite_differences(name):
    if name not in CASES:
        pytest.fail(f"rule {name} has no gradcheck case")
    fn, inputs, *opts = CASES[name]
    base = name.split(".")[-1].split("/")[0]
    owner = {"linalg": gp.linalg, "fused": _fused, "fft": gp.fft}.get(name.partition(".")[0], gp)
    if base not in ("__getitem__", "__setitem__", "to_device") and not hasattr(owner, base):
        pytest.skip(f"{name} is not in the namespace yet")
    args = [gp.asarray(x) for x in inputs]
    assert gradcheck(fn, args, **(opts[0] if opts else {}))


def _ramp(m, x):
    """1, 2, 3, ... along the last axis of ``x`` (m: grilly or torch)."""
    return m.cumulative_sum(m.ones_like(x), axis=-1) if m is gp else m.ones_like(x).cumsum(-1)


# gradients at zeros and kinks, where a rule written as a quotient gives 0/0: torch's values
_ZEROS = [
    ("prod", lambda m, x: m.prod(x) if m is gp else x.prod(), [2.0, 0.0, 3.0]),
    ("prod/two zeros", lambda m, x: m.prod(x) if m is gp else x.prod(), [2.0, 0.0, 0.0]),
    ("prod/axes", lambda m, x: m.prod(x, axis=(0, 2)) if m is gp else x.prod(2).prod(0),
     [[[1.0, 0.0], [2.0, 3.0]], [[4.0, 5.0], [0.0, 0.0]]]),
    ("cumulative_prod", lambda m, x: (m.cumulative_prod(x, axis=-1) if m is gp else
                                      x.cumprod(-1)) * _ramp(m, x),
     [[2.0, 0.0, 3.0, 0.5], [2.0, 3.0, 0.0, 0.0]]),
    ("vector_norm/2", lambda m, x: m.linalg.vector_norm(x, axis=-1), [[0.0, 0.0], [3.0, 4.0]]),
    ("vector_norm/3", lambda m, x: m.linalg.vector_norm(x, ord=3, axis=-1), [[0.0, 0.0], [0.0, 2.0]]),
    ("vector_norm/0.5", lambda m, x: m.linalg.vector_norm(x, ord=0.5, axis=-1), [0.0, 2.0]),
    ("vector_norm/-1", lambda m, x: m.linalg.vector_norm(x, ord=-1, axis=-1), [[0.0, 2.0], [1.0, 2.0]]),
    ("vector_norm/0", lambda m, x: m.linalg.vector_norm(x, ord=0) * 1.0 + m.sum(x), [1.0, 0.0, -2.0]),
    ("matrix_norm/fro", lambda m, x: m.linalg.matrix_norm(x), [[0.0, 0.0], [0.0, 0.0]]),
    ("std", lambda m, x: m.std(x, axis=1) if m is gp else x.std(1, correction=0),
     [[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]]),
    ("std/one element", lambda m, x: m.std(x, axis=0) if m is gp else x.std(0, correction=0),
     [[1.0, 2.0]]),
]


@pytest.mark.parametrize("name,fn,x", _ZEROS, ids=[c[0] for c in _ZEROS])
def test_gradient_at_zeros_matches_torch(device, name, fn, x):
    torch = pytest.importorskip("torch")
    a = gp.asarray(np.asarray(x), device=device)
    a.requires_grad = True
    gp.sum(fn(gp, a)).backward()
    t = torch.tensor(np.asarray(x), requires_grad=True)
    fn(torch, t).sum().backward()
    np.testing.assert_allclose(np.asarray(a.grad), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_prod_second_order_with_a_zero_matches_torch(device):
    torch = pytest.importorskip("torch")
    x = gp.asarray([2.0, 0.0, 3.0], device=device)
    x.requires_grad = True
    (g,) = gp.autograd.grad(gp.prod(x), [x], create_graph=True)
    gp.sum(g * g).backward()
    t = torch.tensor([2.0, 0.0, 3.0], dtype=torch.float64, requires_grad=True)
    (tg,) = torch.autograd.grad(t.prod(), [t], create_graph=True)
    (tg * tg).sum().backward()
    np.testing.assert_allclose(np.asarray(x.grad), t.grad.numpy())


def test_matmul_of_two_vectors(device):
    a = gp.asarray([1.0, 2.0, 3.0], device=device)
    b = gp.asarray([4.0, 5.0, 6.0], device=device)
    a.requires_grad = b.requires_grad = True
    (a @ b).backward()
    np.testing.assert_allclose(np.asarray(a.grad), [4.0, 5.0, 6.0])
    np.testing.assert_allclose(np.asarray(b.grad), [1.0, 2.0, 3.0])
