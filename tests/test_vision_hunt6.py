"""A PyTorch computer-vision user porting CNNs, segmentation and generative models to grilly.nn,
checked against torch 2.13 on every device (outputs and gradients). Each test failed before its
fix: F.pad's negative amounts (cropping) in reflect/replicate/circular mode (were refused),
nearest / nearest-exact interpolation picking a neighbouring source pixel for some scale
factors (float64 arithmetic where torch's kernels round in float32), a convolution whose
module and input are on different devices (an AttributeError deep in a kernel),
avg_pool2d(divisor_override=0) (silently ignored), the missing LazyConvTranspose1d/2d/3d,
LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d, a materialized state dict loaded into an
unmaterialized lazy module (was 'unexpected keys'), and torch's deprecated F.upsample,
F.upsample_nearest and F.upsample_bilinear (missing).
"""
import warnings

import numpy as np
import pytest

import grilly as gp
from grilly import nn
from grilly.nn import functional as F
from grilly.testing import assert_close

torch = pytest.importorskip("torch")
TF = torch.nn.functional

from test_vision_hunt5 import _check  # noqa: E402  (outputs and gradients against torch)


def _x(*shape, seed=1):
    return np.random.RandomState(seed).randn(*shape).astype(np.float32)


# ---- padding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_negative_amounts_crop(device, mode):
    """F.pad(x, pads, mode) with a negative amount crops that side, as torch's: reflect and
    replicate still mirror / repeat about the input's own edge, circular wraps what is left
    after cropping (grilly refused every negative amount outside mode='constant')."""
    for shape, pads in [((2, 3, 6), (-1, 2)), ((2, 3, 6), (-4, 3 if mode != "circular" else 2)),
                        ((2, 3, 5, 6), (2, -1, -1, 1)), ((3, 5, 6), (-2, 1, 1, -2)),
                        ((1, 2, 4, 5, 6), (-1, -1, 1, -2, 1, 0))]:
        _check(device, lambda a: TF.pad(a, pads, mode), lambda a: F.pad(a, pads, mode),
               _x(*shape))
    x = gp.asarray(_x(1, 2, 3, 4), device=device)
    with pytest.raises(ValueError, match="pad: "):   # nothing left of the last axis
        F.pad(x, (-3, -1), mode)
    if mode != "replicate":   # more padding than the (cropped) axis holds
        with pytest.raises(ValueError, match=f"pad: mode='{mode}' padding"):
            F.pad(x, (-1, 4), mode)


# ---- resampling ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode,shape,factor", [
    ("nearest", (5, 7), 0.6), ("nearest", (6,), 1.2), ("nearest", (2, 6), (1.3, 1.5)),
    ("nearest", (4, 2, 6), (1.6, 2.9, 1.2)), ("nearest-exact", (8,), 3.1),
    ("nearest-exact", (3, 7), (2.1, 2.3)), ("nearest-exact", (7, 3, 7), (2.3, 1.5, 0.9))])
def test_interpolate_nearest_source_pixel(device, mode, shape, factor):
    """nearest / nearest-exact took a neighbouring source pixel where dst * (1/scale) lands
    within a float32 rounding of an integer (e.g. a 5 x 7 image scaled by 0.6): torch rounds
    the product in float32 (float64 inputs: in float64 outside its 2-D kernel, which also
    copies a same-size axis and halves the index of a doubled one)."""
    _check(device, lambda a: TF.interpolate(a, scale_factor=factor, mode=mode),
           lambda a: F.interpolate(a, scale_factor=factor, mode=mode), _x(1, 2, *shape))
    a = np.random.RandomState(2).randn(1, 2, *shape)   # float64
    assert_close(F.interpolate(gp.asarray(a, device=device), scale_factor=factor, mode=mode),
                 TF.interpolate(torch.tensor(a), scale_factor=factor, mode=mode).numpy(),
                 rtol=0, atol=0)


def test_upsample_aliases(device):
    """torch's deprecated F.upsample, F.upsample_nearest and F.upsample_bilinear (old
    segmentation code still calls them) were missing: interpolate with their modes
    (upsample_bilinear: align_corners=True)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch's deprecation warnings
        _check(device, lambda a: TF.upsample(a, scale_factor=1.5, mode="bilinear"),
               lambda a: F.upsample(a, scale_factor=1.5, mode="bilinear"), _x(1, 2, 4, 5))
        _check(device, lambda a: TF.upsample_nearest(a, size=(7, 3)),
               lambda a: F.upsample_nearest(a, size=(7, 3)), _x(1, 2, 4, 5))
        _check(device, lambda a: TF.upsample_bilinear(a, scale_factor=2),
               lambda a: F.upsample_bilinear(a, scale_factor=2), _x(1, 2, 4, 5))


# ---- convolution and pooling --------------------------------------------------------------------
def test_conv_module_and_input_on_different_devices(device):
    """A Conv2d / Conv3d / ConvTranspose2d left on one device called on an input on another
    failed inside the kernel ("'numpy.ndarray' object has no attribute 'is_contiguous'"); now
    a ValueError naming the op and both devices, as every other layer gives."""
    other = next((d for d in gp.devices() if d != device), None)
    if other is None:
        pytest.skip("one device only")
    for m, shape in [(nn.Conv2d(2, 3, 3), (1, 2, 5, 5)), (nn.Conv3d(2, 3, 2), (1, 2, 3, 3, 3)),
                     (nn.ConvTranspose2d(2, 3, 3), (1, 2, 4, 4)),
                     (nn.Conv1d(2, 3, 3, padding=1, padding_mode="reflect"), (1, 2, 6))]:
        m.to(other)
        with pytest.raises(ValueError, match="arrays are on different devices"):
            m(gp.asarray(_x(*shape), device=device))


def test_avg_pool_divisor_override_zero(device):
    """avg_pool2d(divisor_override=0) silently divided by the window size (0 read as 'not
    given'); torch refuses it, as grilly's avg_pool3d did."""
    x = gp.asarray(_x(1, 2, 4, 4), device=device)
    with pytest.raises(ValueError, match="avg_pool2d: divisor_override"):
        nn.AvgPool2d(2, divisor_override=0)(x)
    _check(device, torch.nn.AvgPool2d(3, 2, 1, True, False, 5),
           nn.AvgPool2d(3, 2, 1, True, False, 5), _x(1, 2, 5, 6))


# ---- lazy modules -------------------------------------------------------------------------------
@pytest.mark.parametrize("name,args,kw,shape", [
    ("LazyConvTranspose1d", (6, 3), dict(stride=2, groups=2, output_padding=1), (2, 4, 5)),
    ("LazyConvTranspose2d", (4, 3), dict(stride=2, padding=1, dilation=2), (2, 3, 4, 5)),
    ("LazyConvTranspose3d", (2, 2), dict(stride=2, bias=False), (1, 3, 2, 3, 2)),
    ("LazyBatchNorm1d", (), dict(momentum=None), (4, 3, 5)),
    ("LazyBatchNorm2d", (), dict(), (2, 3, 4, 5)),
    ("LazyBatchNorm3d", (), dict(affine=False), (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", (), dict(), (2, 3, 7)),
    ("LazyInstanceNorm2d", (), dict(momentum=0.3), (2, 3, 4, 5))])
def test_lazy_modules(device, name, args, kw, shape):
    """LazyConvTranspose1d/2d/3d, LazyBatchNorm1d/2d/3d and LazyInstanceNorm1d/2d/3d were
    missing: the first input sets in_channels / num_features and the module becomes torch's
    cls_to_become, with torch's state_dict keys and shapes on the input's device; after
    loading torch's state, an SGD step made after that call, the running statistics and the
    eval output are torch's."""
    torch.manual_seed(0)
    tm, gm = getattr(torch.nn, name)(*args, **kw), getattr(nn, name)(*args, **kw)
    assert gm.has_uninitialized_params()
    x, x2 = _x(*shape), _x(*shape, seed=7) * 2 + 0.5
    tm(torch.tensor(x))
    gm(gp.asarray(x, device=device))
    assert type(gm).__name__ == type(tm).__name__
    sd = gm.state_dict()
    assert [(k, tuple(v.shape)) for k, v in sd.items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert all(v.device == gp.asarray(x, device=device).device for v in sd.values())
    gm.load_state_dict(tm.state_dict())
    params = list(gm.parameters())
    opt = gp.optim.SGD(params, lr=0.1) if params else None
    topt = torch.optim.SGD(tm.parameters(), lr=0.1) if params else None
    ty, gy = tm(torch.tensor(x2)), gm(gp.asarray(x2, device=device))
    assert_close(gy, ty.detach().numpy(), rtol=1e-4, atol=1e-4)
    if params:
        (ty ** 2).sum().backward()
        gp.sum(gy ** 2).backward()
        topt.step()
        opt.step()
    for k, v in tm.state_dict().items():
        assert_close(gm.state_dict()[k], v.numpy(), rtol=1e-4, atol=1e-4)
    tm.eval()
    gm.eval()
    assert_close(gm(gp.asarray(x, device=device)), tm(torch.tensor(x)).detach().numpy(),
                 rtol=1e-4, atol=1e-4)


def test_lazy_module_loads_a_state_dict(device):
    """A checkpoint loaded into a model of lazy layers before any call (torch materializes
    them with the loaded shapes) failed with 'unexpected keys'; an unbatched (C, H, W) input
    gives a LazyInstanceNorm2d its channels from axis 0."""
    tmods = [torch.nn.LazyLinear(4), torch.nn.LazyConv2d(4, 3), torch.nn.LazyConvTranspose2d(
        4, 3), torch.nn.LazyBatchNorm2d(), torch.nn.LazyInstanceNorm1d()]
    shapes = [(2, 3), (1, 2, 5, 5), (1, 2, 5, 5), (2, 3, 4, 4), (2, 3, 4)]
    for tm, shape in zip(tmods, shapes):
        tm(torch.tensor(_x(*shape)))
        tm.eval()
        gm = getattr(nn, "Lazy" + type(tm).__name__)(*{
            "Linear": (4,), "Conv2d": (4, 3), "ConvTranspose2d": (4, 3)}.get(
                type(tm).__name__, ()), device=device)
        gm.load_state_dict(tm.state_dict())
        assert type(gm).__name__ == type(tm).__name__
        gm.eval()
        x = _x(*shape, seed=4)
        assert_close(gm(gp.asarray(x, device=device)), tm(torch.tensor(x)).detach().numpy(),
                     rtol=1e-5, atol=1e-5)
    gm = nn.LazyInstanceNorm2d()
    gm(gp.asarray(_x(3, 4, 5), device=device))
    assert gm.num_features == 3 and gm.weight.shape == (3,)


def test_batch_norm_of_float64_input_with_float32_buffers(device):
    """gp.ones(...) is float64 (the namespace's default float): a float32 BatchNorm promotes it
    as Linear does, and stores the batch's statistics in its float32 running buffers (the
    update failed in __setitem__ before)."""
    rng = np.random.default_rng(5)
    h = rng.normal(2.0, 3.0, (6, 3, 4))
    bn = nn.BatchNorm1d(3).to(device)
    y = bn(gp.asarray(h, device=device))
    assert y.dtype == gp.float64
    mean, var = h.mean(axis=(0, 2)), h.var(axis=(0, 2))
    ref = (h - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5)
    np.testing.assert_allclose(np.asarray(y), ref, rtol=1e-10, atol=1e-10)
    assert bn.running_mean.dtype == gp.float32
    np.testing.assert_allclose(np.asarray(bn.running_mean), 0.1 * mean, rtol=1e-5)
    np.testing.assert_allclose(np.asarray(bn.running_var), 0.9 + 0.1 * var * 24 / 23,
                               rtol=1e-5)
