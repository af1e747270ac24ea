"""SpikingJelly's ``functional`` losses (``activation_based.functional.loss``):
``kernel_dot_product``, ``spike_similar_loss`` and ``temporal_efficient_training_cross_entropy``
(TET, Deng et al. 2022), written with namespace ops (every device, differentiable)."""
from __future__ import annotations

from ...array import api as gp

from ...array.array import Array
from .. import functional as _nnf

__all__ = ["kernel_dot_product", "spike_similar_loss",
           "temporal_efficient_training_cross_entropy"]

_KERNELS = ("linear", "polynomial", "sigmoid", "gaussian")


def _arr(x, op: str, arg: str, ndim: int | None = None) -> Array:
    if not isinstance(x, Array) or not gp.isdtype(x.dtype, "real floating"):
        raise TypeError(f"{op}: {arg} must be a real floating grilly Array, got "
                        f"{getattr(x, 'dtype', type(x).__name__)}")
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{op}: {arg} must be {ndim}-d, got shape {x.shape}")
    return x


def kernel_dot_product(x: Array, y: Array, kernel: str = "linear", *args) -> Array:
    """SpikingJelly's ``functional.kernel_dot_product``: the (N, M) kernel matrix of the rows of
    x (N, D) and y (M, D): ``'linear'`` x y^T, ``'polynomial'`` (x y^T)^d, ``'sigmoid'``
    sigmoid(alpha x y^T), ``'gaussian'`` exp(-|x_i - y_j|^2 / (2 sigma^2)) (d, alpha, sigma the
    extra argument)."""
    op = "kernel_dot_product"
    x, y = _arr(x, op, "x", 2), _arr(y, op, "y", 2)
    if kernel not in _KERNELS:
        raise NotImplementedError(f"{op}: kernel={kernel!r} is not supported; one of {_KERNELS}")
    xy = x @ gp.matrix_transpose(y)
    if kernel == "linear":
        return xy
    if len(args) < 1:
        raise TypeError(f"{op}: kernel={kernel!r} needs its parameter as the next argument")
    a = args[0]
    if kernel == "polynomial":
        return gp.pow(xy, a)
    if kernel == "sigmoid":
        return _nnf.sigmoid(a * xy)
    if not a > 0:
        raise ValueError(f"{op}: sigma must be positive for the Gaussian kernel, got {a}")
    x2 = gp.sum(gp.square(x), axis=1, keepdims=True)
    y2 = gp.reshape(gp.sum(gp.square(y), axis=1), (1, -1))
    return gp.exp(-(x2 + y2 - 2.0 * xy) / (2.0 * a * a))


def spike_similar_loss(spikes: Array, labels: Array, kernel_type: str = "linear",
                       loss_type: str = "mse", *args) -> Array:
    """SpikingJelly's ``functional.spike_similar_loss``: the kernel similarity of every pair of
    samples' spikes (N, ...) (``'linear'``: cosine, x y^T / (|x| |y| + 1e-8)) against 1 where
    their (N, C) multi-hot labels share a class, else 0, by ``'mse'``, ``'l1'`` or ``'bce'``."""
    op = "spike_similar_loss"
    spikes = _arr(spikes, op, "spikes")
    if spikes.ndim < 2:
        raise ValueError(f"{op}: spikes must be (N, ...), got shape {spikes.shape}")
    if not isinstance(labels, Array) or labels.ndim != 2 or labels.shape[0] != spikes.shape[0]:
        raise ValueError(f"{op}: labels must be (N, C) with N = {spikes.shape[0]}, got "
                         f"{getattr(labels, 'shape', type(labels).__name__)}")
    if loss_type not in ("mse", "l1", "bce"):
        raise NotImplementedError(f"{op}: loss_type={loss_type!r} is not supported; 'mse', "
                                  "'l1' or 'bce'")
    s = gp.reshape(spikes, (spikes.shape[0], -1))
    sim_p = kernel_dot_product(s, s, kernel_type, *args)
    if kernel_type == "linear":
        n = gp.sqrt(gp.sum(gp.square(s), axis=1, keepdims=True))
        sim_p = sim_p / (n @ gp.matrix_transpose(n) + 1e-8)
    lab = gp.astype(labels, spikes.dtype)
    sim = gp.minimum(lab @ gp.matrix_transpose(lab), 1.0)
    if loss_type == "mse":
        return _nnf.mse_loss(sim_p, sim)
    if loss_type == "l1":
        return _nnf.l1_loss(sim_p, sim)
    return _nnf.binary_cross_entropy(sim_p, sim)


def temporal_efficient_training_cross_entropy(x_seq: Array, target: Array) -> Array:
    """SpikingJelly's ``functional.temporal_efficient_training_cross_entropy`` (TET): the
    cross-entropy of every step's scores x_seq (T, N, C, ...) against the same targets (N, ...),
    averaged over the steps (and the samples)."""
    op = "temporal_efficient_training_cross_entropy"
    x_seq = _arr(x_seq, op, "x_seq")
    if x_seq.ndim < 3:
        raise ValueError(f"{op}: x_seq must be (T, N, C, ...), got shape {x_seq.shape}")
    if not isinstance(target, Array):
        raise TypeError(f"{op}: target must be a grilly Array, got {type(target).__name__}")
    T = x_seq.shape[0]  # noqa: N806
    # every step as part of one (T * N, C, ...) batch: the mean over it is the mean over steps
    x = gp.reshape(x_seq, (T * x_seq.shape[1],) + tuple(x_seq.shape[2:]))
    return _nnf.cross_entropy(x, gp.concat([target] * T, axis=0))
