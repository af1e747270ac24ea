"""A PyTorch computer-vision user porting CNNs to grilly.nn, checked against torch 2.13 on every
device (outputs and gradients). Each test failed before its fix: LPPool with norm_type=inf
(torch's max of |x|), F.interpolate(antialias=True) (was NotImplementedError), grid_sample's
mode='bicubic' (was NotImplementedError), a pooling window that runs past the input in
ceil_mode (torch keeps it; was a ValueError), and arguments that were silently accepted or
failed obscurely (Conv groups=0, an unknown padding string, AdaptiveAvgPool2d of three sizes,
recompute_scale_factor with a size, a scale_factor giving an empty output, Unflatten sizes
that do not multiply up).
"""
import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _check(device, tfn, gfn, *arrays, tol=1e-4):
    """gfn(*grilly arrays) equals tfn(*torch tensors), and so do the gradients of a weighted
    sum of the output with respect to every input."""
    rs = np.random.RandomState(0)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    gs = [gp.asarray(a, device=device).requires_grad_() for a in arrays]
    ty, gy = tfn(*ts), gfn(*gs)
    assert gy.device == gs[0].device
    assert_close(gy, ty.detach().numpy(), rtol=tol, atol=tol)
    w = rs.randn(*ty.shape).astype(arrays[0].dtype)
    (ty * torch.tensor(w)).sum().backward()
    gp.sum(gy * gp.asarray(w, device=device)).backward()
    for g, t in zip(gs, ts):
        assert_close(g.grad, t.grad.numpy(), rtol=10 * tol, atol=10 * tol)


def _x(*shape, seed=1):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ---- pooling ------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [float("inf"), -float("inf")])
def test_lp_pool_infinite_norm(device, p):
    """LPPool2d(float('inf'), ...) is torch's max pool of |x| (-inf: the min of |x|); it gave
    x^inf averaged to the power 0 (ones)."""
    t, g = torch.nn.LPPool2d(p, 2, ceil_mode=True), nn.LPPool2d(p, 2, ceil_mode=True)
    if np.allclose(t(torch.tensor(_x(2, 3, 5, 5))).detach().numpy(), 1.0):
        pytest.skip("this torch gives ones for an infinite norm (torch 2.11 did; 2.13 does not)")
    _check(device, t, g, _x(2, 3, 5, 5))
    _check(device, lambda x: TF.lp_pool1d(x, p, 3, 2), lambda x: F.lp_pool1d(x, p, 3, 2),
           _x(2, 3, 7))


def test_ceil_mode_window_past_the_input(device):
    """With ceil_mode torch keeps a window that starts in the input and runs past its end,
    even where the dilated kernel is larger than the padded input (one output); grilly
    refused it ('kernel is larger than the padded input')."""
    x = _x(1, 2, 3, 4)
    _check(device, lambda a: TF.max_pool2d(a, 3, 2, 1, 2, True),
           lambda a: F.max_pool2d(a, 3, 2, 1, 2, True), x)
    ty, ti = TF.max_pool2d(torch.tensor(x), 3, 2, 1, 2, True, True)
    gy, gi = F.max_pool2d(gp.asarray(x, device=device), 3, 2, 1, 2, True, True)
    np.testing.assert_array_equal(np.asarray(gi.to("cpu")), ti.numpy())
    _check(device, lambda a: TF.avg_pool1d(a, 3, 3, 1, True, False),
           lambda a: F.avg_pool1d(a, 3, 3, 1, True, False), _x(2, 3, 1))
    with pytest.raises(ValueError, match="max_pool2d"):   # without ceil_mode: no window
        F.max_pool2d(gp.asarray(x, device=device), 3, 2, 0, 2)


def test_adaptive_avg_pool2d_checks_output_size(device):
    """AdaptiveAvgPool2d((2, 3, 4)) silently pooled to (2, 3); torch refuses it."""
    x = gp.asarray(_x(2, 3, 6, 7), device=device)
    with pytest.raises(ValueError, match="adaptive_avg_pool2d: output_size"):
        nn.AdaptiveAvgPool2d((2, 3, 4))(x)
    _check(device, torch.nn.AdaptiveAvgPool2d((None, 3)), nn.AdaptiveAvgPool2d((None, 3)),
           _x(2, 3, 5, 7))


# ---- resampling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_interpolate_antialias(device, mode):
    """F.interpolate(..., antialias=True) (torchvision's Resize default for tensors) raised
    NotImplementedError; now torch's filtered resampling, downscaling and upscaling,
    align_corners, a scale_factor used as given or recomputed."""
    x = _x(2, 3, 7, 8)
    for kw in (dict(scale_factor=0.45), dict(size=(3, 11)), dict(size=(2, 5), align_corners=True),
               dict(scale_factor=0.37, recompute_scale_factor=True)):
        _check(device, lambda a: TF.interpolate(a, mode=mode, antialias=True, **kw),
               lambda a: F.interpolate(a, mode=mode, antialias=True, **kw), x)


def test_interpolate_argument_errors(device):
    """antialias with a mode torch does not filter, recompute_scale_factor with a size (was
    silently ignored) and a scale_factor that leaves no pixel (gave an empty Array) are
    ValueErrors, as in torch."""
    x = gp.asarray(_x(2, 3, 6, 7), device=device)
    with pytest.raises(ValueError, match="antialias"):
        F.interpolate(x, size=3, mode="nearest", antialias=True)
    with pytest.raises(ValueError, match="recompute_scale_factor"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(ValueError, match="empty output"):
        nn.Upsample(scale_factor=0.1)(x)


@pytest.mark.parametrize("pm,align", [("reflection", True), ("reflection", False),
                                      ("zeros", False), ("border", True)])
def test_grid_sample_bicubic(device, pm, align):
    """grid_sample(mode='bicubic') raised NotImplementedError; now torch's 4 x 4 cubic taps,
    each padded on its own (zeros, border, reflection), with positions far outside the
    input; gradients for the input and the grid."""
    x, grid = _x(2, 3, 5, 6), _x(2, 4, 3, 2, seed=2) * 1.6
    _check(device, lambda a, g: TF.grid_sample(a, g, "bicubic", pm, align),
           lambda a, g: F.grid_sample(a, g, "bicubic", pm, align), x, grid)
    with pytest.raises(ValueError, match="bicubic"):
        F.grid_sample(gp.zeros((1, 1, 2, 2, 2), device=device),
                      gp.zeros((1, 1, 1, 1, 3), device=device), mode="bicubic")


# ---- layers' arguments --------------------------------------------------------------------------
def test_conv_constructor_errors():
    """Conv2d(groups=0) was a ZeroDivisionError, ConvTranspose2d(groups=0) a confusing
    message, and Conv2d(padding='full') was accepted until the first call."""
    with pytest.raises(ValueError, match="Conv2d: groups must be a positive integer"):
        nn.Conv2d(3, 3, 3, groups=0)
    with pytest.raises(ValueError, match="ConvTranspose2d: groups must be a positive integer"):
        nn.ConvTranspose2d(3, 3, 3, groups=0)
    with pytest.raises(ValueError, match="Conv1d: invalid padding string 'full'"):
        nn.Conv1d(3, 3, 3, padding="full")


def test_unflatten_size_mismatch(device):
    """Unflatten(1, (2, 2)) of 3 channels failed inside reshape; the error now names
    Unflatten and its sizes (and -1 still infers one size)."""
    x = gp.asarray(_x(2, 6, 5), device=device)
    with pytest.raises(ValueError, match=r"Unflatten: unflattened_size \(4, -1\)"):
        nn.Unflatten(1, (4, -1))(x)
    _check(device, torch.nn.Unflatten(1, (2, -1)), nn.Unflatten(1, (2, -1)), _x(2, 6, 5))


def test_fractional_max_pool3d(device):
    """nn.FractionalMaxPool3d / F.fractional_max_pool3d were missing; with torch's
    _random_samples (N, C, 3) the windows, values, indices and gradients are torch's."""
    x, u = _x(2, 2, 7, 6, 5), np.random.RandomState(3).rand(2, 2, 3).astype(np.float32)
    kw = dict(kernel_size=(3, 2, 2), output_size=(4, 3, 2))
    _check(device, lambda a: TF.fractional_max_pool3d(a, _random_samples=torch.tensor(u), **kw),
           lambda a: F.fractional_max_pool3d(a, _random_samples=gp.asarray(u, device=device),
                                             **kw), x)
    tm = torch.nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True,
                                      _random_samples=torch.tensor(u[:1]))
    gm = nn.FractionalMaxPool3d(2, output_ratio=0.5, return_indices=True,
                                _random_samples=gp.asarray(u[:1], device=device))
    (ty, ti), (gy, gi) = tm(torch.tensor(x[0])), gm(gp.asarray(x[0], device=device))
    assert_close(gy, ty.numpy())
    np.testing.assert_array_equal(np.asarray(gi.to("cpu")), ti.numpy())


def test_lazy_conv3d(device):
    """nn.LazyConv3d was missing: in_channels from the first input, then a Conv3d that loads
    torch's LazyConv3d weights and computes torch's output."""
    x = _x(1, 2, 3, 4, 5)
    torch.manual_seed(0)
    tm = torch.nn.LazyConv3d(4, 3, padding=1, padding_mode="circular")
    gm = nn.LazyConv3d(4, 3, padding=1, padding_mode="circular")
    tm(torch.tensor(x))
    gm(gp.asarray(x, device=device))
    assert type(gm) is nn.Conv3d and gm.weight.device == gp.asarray(x, device=device).device
    gm.load_state_dict(tm.state_dict())
    _check(device, tm, gm, x)
