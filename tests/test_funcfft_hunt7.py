"""A torch.func / numpy.fft user's hunt (a helper's): the second derivative of ``abs`` of a complex
array (a power-spectrum loss's Hessian) dropped the derivative of sgn(z) = z/|z| (``sign`` had a
zero rule for complex input too); vjp/jacrev/jacfwd of integer, bool or (for the Jacobians)
complex outputs and grad of a complex 0-d output returned zeros or real parts silently (torch
refuses them), jvp of a function with a bool output raised a confusing vjp error (torch gives a
zero tangent); the fft sizes and axes as NumPy integers or integer arrays were TypeErrors (NumPy
and torch take them), and ``s`` longer than x.ndim was a confusing "repeated axis" error."""
import numpy as np
import pytest

import grilly as gp
import grilly.func as GF
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.func
_RS = np.random.default_rng(7)


def _c(shape):
    return _RS.standard_normal(shape) + 1j * _RS.standard_normal(shape)


def _close(a, e, tol=1e-10):
    if isinstance(e, (tuple, list)):
        assert type(a) is type(e) and len(a) == len(e)
        for x, y in zip(a, e):
            _close(x, y, tol)
        return
    e = e.detach().resolve_conj().numpy()
    assert a.shape == e.shape and a.dtype.name == e.dtype.name, (a.shape, a.dtype, e.dtype)
    assert_close(a, e, rtol=tol, atol=tol)


def test_second_derivatives_through_complex_abs():
    """The Hessian of a power-spectrum loss (|z| of a complex z mixing the inputs: the
    derivative of sgn(z) = z/|z| gives its cross terms, which were wrong) and sgn's own gradient
    (PyTorch's sgn_backward, 0 at z = 0) against torch.func. On the host only: the rule is
    namespace ops, and lavapipe takes seconds to compile each complex128 pipeline of the double
    backward (tests/test_fft.py and test_linalg_user.py run the complex kernels there)."""
    a = _RS.standard_normal(3)
    ga, ta = gp.asarray(a), torch.tensor(a)

    def loss(m):
        return lambda x: m.sum(m.abs(m.fft.fft(x)) ** 2) + m.abs(m.sum(x * (1.0 + 2.0j))) ** 3

    _close(GF.hessian(loss(gp))(ga), TF.hessian(loss(torch))(ta))
    z, w = _c(3), _c(3)
    for zero in (False, True):
        z[1] = 0.0 if zero else z[1]
        _close(GF.grad(lambda x: gp.sum(gp.real(gp.sign(x) * gp.asarray(w))))(gp.asarray(z)),
               TF.grad(lambda x: torch.sum(torch.real(torch.sgn(x) * torch.tensor(w))))(
                   torch.tensor(z)))


def test_sign_of_a_real_input_stays_piecewise_constant(device):
    a = _RS.standard_normal(3)
    _close(GF.grad(lambda x: gp.sum(gp.sign(x) * x))(gp.asarray(a, device=device)),
           TF.grad(lambda x: torch.sum(torch.sign(x) * x))(torch.tensor(a)))


def test_outputs_without_a_derivative(device):
    a = _RS.standard_normal(3)
    ga, ta = gp.asarray(a, device=device), torch.tensor(a)
    with pytest.raises(TypeError, match="vjp: all outputs of func must be floating-point or "
                                        "complex Arrays, got one of dtype bool"):
        GF.vjp(lambda x: (x * 2.0, x > 0.0), ga)
    with pytest.raises(TypeError, match="jacfwd: all outputs .* dtype int64"):
        GF.jacfwd(lambda x: gp.astype(x, gp.int64))(ga)
    with pytest.raises(TypeError, match="jacrev: expected all outputs of func to be real, got "
                                        "one of dtype complex128"):
        GF.jacrev(gp.fft.rfft)(ga)
    with pytest.raises(TypeError, match=r"grad\(f\)\(\*args\): expected f\(\*args\) to return "
                                        "a real 0-d Array, got complex128"):
        GF.grad(lambda x: gp.sum(x * 1j))(ga)
    _, fn = GF.vjp(gp.sin, ga)
    with pytest.raises(TypeError, match="vjp_fn: cotangents leaf 0 is complex128 but the "
                                        "output is real"):
        fn(gp.asarray(_c(3), device=device))
    # jvp: a bool output's tangent is zeros of its dtype, as torch's
    _close(GF.jvp(lambda x: (gp.sin(x), x > 0.0), (ga,), (ga,)),
           TF.jvp(lambda x: (torch.sin(x), x > 0.0), (ta,), (ta,)))
    # torch's grad of an integer 0-d output is zeros: kept
    _close(GF.grad(lambda x: gp.sum(x > 0.0))(ga), TF.grad(lambda x: torch.sum(x > 0.0))(ta))


def test_fft_sizes_and_axes_as_numpy_integers(device):
    x = _RS.standard_normal((2, 5))
    g, t = gp.asarray(x, device=device), torch.tensor(x)
    _close(gp.fft.fft(g, n=np.int64(4), axis=np.int64(0)), torch.fft.fft(t, n=4, dim=0))
    _close(gp.fft.rfftn(g, s=np.array([3, 6]), axes=np.array([1, 0])),
           torch.fft.rfftn(t, s=(3, 6), dim=(1, 0)))
    _close(gp.fft.irfft2(gp.fft.rfft2(g), s=g.shape), t)
    _close(gp.fft.fftshift(g, axes=np.int64(1)), torch.fft.fftshift(t, dim=1))
    _close(gp.fft.ifftshift(g, axes=np.array([0, 1])), torch.fft.ifftshift(t, dim=(0, 1)))
    _close(gp.fft.fftfreq(np.int64(5), d=0.5, device=device), torch.fft.fftfreq(5, 0.5,
                                                                              dtype=torch.float64))
    with pytest.raises(ValueError, match="fftn: s has 3 sizes but x has only 2 dimensions"):
        gp.fft.fftn(g, s=(2, 2, 2))
    with pytest.raises(TypeError, match="fft: n must be an int, got 2.0"):
        gp.fft.fft(g, n=2.0)
    with pytest.raises(TypeError, match="fftn: s must be a sequence of ints, got 3"):
        gp.fft.fftn(g, s=3)
    with pytest.raises(TypeError, match="fftshift: axes must be an int, got 0.5"):
        gp.fft.fftshift(g, axes=[0.5])
