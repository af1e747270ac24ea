"""``torch.nn.utils.fusion``: an eval-mode BatchNorm folded into the convolution or linear layer
before it (one layer computing both)."""
from __future__ import annotations

import copy

from ...array import api as gp
from ...array.array import Array
from ...autograd.mode import no_grad
from ..module import Module
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


class FusionError(AssertionError, ValueError):
    """A module pair that cannot be fused: an AssertionError as torch raises (and a
    ValueError, grilly's error for a bad argument)."""


def _cast(x: Array, dtype) -> Array:
    return x if x.dtype == dtype else gp.astype(x, dtype)


def fuse_conv_bn_weights(conv_w: Array, conv_b: Array | None, bn_rm: Array, bn_rv: Array,
                         bn_eps: float, bn_w: Array | None, bn_b: Array | None,
                         transpose: bool = False) -> tuple[Array, Array]:
    """(weight, bias) Parameters of the convolution that computes conv then eval BatchNorm."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    b_grad = conv_b.requires_grad if conv_b is not None else False
    with no_grad():
        if conv_b is None:
            conv_b = gp.zeros_like(bn_rm)
        if bn_w is None:
            bn_w = gp.ones_like(bn_rm)
        if bn_b is None:
            bn_b = gp.zeros_like(bn_rm)
        inv_std = 1.0 / gp.sqrt(bn_rv + bn_eps)
        # a transposed convolution's weight holds its output channels on axis 1
        shape = ((1, -1) if transpose else (-1, 1)) + (1,) * (conv_w.ndim - 2)
        w = _cast(conv_w * gp.reshape(bn_w * inv_std, shape), w_dtype)
        b = _cast((conv_b - bn_rm) * inv_std * bn_w + bn_b, b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, b_grad)


def fuse_linear_bn_weights(linear_w: Array, linear_b: Array | None, bn_rm: Array, bn_rv: Array,
                           bn_eps: float, bn_w: Array, bn_b: Array) -> tuple[Array, Array]:
    """(weight, bias) Parameters of the linear layer that computes linear then eval BatchNorm."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    b_grad = linear_b.requires_grad if linear_b is not None else False
    with no_grad():
        if linear_b is None:
            linear_b = gp.zeros_like(bn_rm)
        scale = bn_w / gp.sqrt(bn_rv + bn_eps)
        w = linear_w * _cast(gp.expand_dims(scale, axis=-1), w_dtype)
        b = _cast((linear_b - bn_rm) * scale + bn_b, b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, b_grad)


def _check_eval(a: Module, b: Module, op: str) -> None:
    if not isinstance(a, Module) or not isinstance(b, Module):
        raise TypeError(f"{op}: expected two Modules, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    if a.training or b.training:
        raise FusionError(f"{op}: fusion only for eval! (call .eval() on both modules)")
    if getattr(b, "running_mean", None) is None or getattr(b, "running_var", None) is None:
        raise FusionError(f"{op}: the BatchNorm needs running statistics "
                          "(track_running_stats=True)")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of the eval-mode ``conv`` with the eval-mode BatchNorm ``bn`` folded into it."""
    _check_eval(conv, bn, "fuse_conv_bn_eval")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of the eval-mode ``linear`` with the eval-mode BatchNorm1d ``bn`` folded into it."""
    _check_eval(linear, bn, "fuse_linear_bn_eval")
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise FusionError(f"fuse_linear_bn_eval: to fuse, linear.out_features == "
                          f"bn.num_features or bn.num_features == 1, got linear.out_features="
                          f"{linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused
