"""Stateless forms of the grilly.nn layers, activations and losses (``grilly.nn.functional``,
also importable as ``grilly.functional``). Every function is written with namespace ops, so it
runs on every device; most are differentiated by autograd through those ops, and a few hot or
memory-bound ones (linear, relu, batch_norm, cross_entropy, conv/pool windows, softmax,
flash_attention2) carry a hand-written backward (``autograd.Function``), also in namespace ops."""
from __future__ import annotations

import math
import operator

import numpy as _np

from .. import random as _grandom
from ..array import api as gp
from ..array import dispatch as _dispatch

from ..array import attention as _att
from ..array import conv as _conv
from ..array import dense as _dense
from ..array import normalization as _norm
from ..array import segments as _segments
from ..array import fused as _fused
from ..array.array import Array
from ..array.dtypes import DType
from ..autograd.function import Function
from ..autograd.mode import is_grad_enabled
from . import _special
from .module import _no_grad

__all__ = [
    "linear", "embedding", "one_hot", "dropout", "pad", "interpolate",
    "relu", "relu6", "leaky_relu", "gelu", "silu", "elu", "tanh", "sigmoid", "softplus",
    "softmax", "log_softmax", "erf", "erfc",
    "layer_norm", "rms_norm", "batch_norm",
    "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
    "adaptive_avg_pool2d", "flatten",
    "conv_transpose1d", "conv_transpose2d", "conv3d", "conv_transpose3d",
    "scaled_dot_product_attention", "flash_attention2",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss",
    "linear_cross_entropy",
    "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "matmul", "attention_scores",
]


# ---- helpers ------------------------------------------------------------------------------
def _pair(v, n: int, name: str, op: str) -> tuple:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v,) * n
    if isinstance(v, bool) or not hasattr(v, "__iter__"):
        # (a float or a bool: tuple() would fail with a message naming neither op nor name)
        raise TypeError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    v = tuple(v)
    if len(v) != n:
        raise ValueError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    for i in v:   # (a loop, not all() over a generator: every convolution and pool call)
        if type(i) is not int:   # (a bool is refused too)
            raise ValueError(f"{op}: {name} must be an int or a tuple of {n} ints, got {v!r}")
    return v


def _check_geometry(op: str, stride: tuple, dilation: tuple, padding: tuple = ()) -> None:
    """A ValueError naming ``op`` for a stride or dilation below 1 or a negative padding."""
    for name, v, low in (("stride", stride, 1), ("dilation", dilation, 1), ("padding", padding, 0)):
        if v and min(v) < low:   # (v: ints, from _pair)
            raise ValueError(f"{op}: {name} must be {'positive' if low else 'non-negative'}, "
                             f"got {v!r}")


def _check_float(x, op: str, arg: str = "input"):
    if not isinstance(x, Array):
        raise TypeError(f"{op}: expected a grilly Array for {arg!r}, got {type(x).__name__}")
    # (isdtype's "real floating" is kind "f": read directly, this runs on every layer call)
    if x._dtype.kind != "f":
        raise TypeError(f"{op}: {arg} must have a real floating dtype, got {x.dtype}")
    return x


def _check_input(x, op: str, min_ndim: int = 0):
    """``x`` checked as a floating Array of at least ``min_ndim`` dimensions: a TypeError or
    ValueError naming ``op`` where a kernel deeper down would fail with an unrelated message."""
    _check_float(x, op)
    if x.ndim < min_ndim:
        raise ValueError(f"{op}: input needs at least {min_ndim} dimension"
                         f"{'s' if min_ndim > 1 else ''}, got a {x.ndim}-D array of shape "
                         f"{x.shape}")
    return x


def _reduce(loss, reduction: str, op: str):
    if reduction == "mean":
        return gp.mean(loss)
    if reduction == "sum":
        return gp.sum(loss)
    if reduction == "none":
        return loss
    raise ValueError(f"{op}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _all_float16(x, *others) -> bool:
    """Whether ``x`` and every other array given (None skipped) is float16."""
    return x.dtype == gp.float16 and all(a is None or a.dtype == gp.float16 for a in others)


def _f32(a):
    """``a`` (None kept) in float32 if it is float16."""
    return a if a is None or a.dtype != gp.float16 else gp.astype(a, gp.float32)


def _master_casts(name: str, input: Array, weight: Array, bias, fits: bool) -> tuple:
    """Inside autocast: (``input`` as the policy casts it for layer ``name``, recorded; then
    (weight, bias) cast to input's low dtype *without recording*, or None). Where the layer's
    float32 weight and bias are cast (and ``fits``, the layer's own shape checks), its node
    takes the masters and these copies, and its backward makes the masters' gradients in
    float32 itself (the kernels' grad_dtype) rather than the tape casting float16 ones: a
    dispatch less per parameter."""
    input = _dispatch.autocast(name, input)[0]
    if not (fits and weight.dtype == gp.float32 and (bias is None or bias.dtype == gp.float32)
            and input.dtype in (gp.float16, getattr(gp, "bfloat16", None))):
        return input, None
    with _no_grad():
        low = _dispatch.autocast(name, weight, bias)
    if low[0].dtype == input.dtype and (bias is None or low[1].dtype == input.dtype):
        return input, low
    return input, None


def _promoted(*arrays, op: str = "") -> tuple:
    """``arrays`` (None kept) cast to their result type: a layer's one-dtype kernels. They
    must share a device (``op`` names the layer in the error): the kernels read their
    buffers directly, with no check of their own."""
    d0, dev = arrays[0].dtype, arrays[0].device
    same = True
    for a in arrays:   # (a loop, not all() over a generator: every layer call comes here)
        if a is not None:
            if a.device is not dev and a.device != dev:
                raise ValueError(f"{op or 'layer'}: arrays are on different devices ({dev} and "
                                 f"{a.device}); move the module or the input with .to() first")
            same = same and a.dtype is d0
    if same:   # the common case: nothing to cast
        return arrays
    dt = gp.result_type(*(a for a in arrays if a is not None))
    return tuple(a if a is None or a.dtype == dt else gp.astype(a, dt) for a in arrays)


# ---- linear, embedding, dropout, pad ------------------------------------------------------
def linear(input: Array, weight: Array, bias: Array | None = None) -> Array:
    """``input @ weight.T + bias``."""
    _check_input(input, "linear", 1)
    return _linear(input, weight, bias)


def _linear(input: Array, weight: Array, bias: Array | None) -> Array:
    """``linear`` of an ``input`` already checked (nn.Linear checks it under its own name)."""
    if _dispatch.hooks.cast is not None:   # an autocast region (in some thread)
        input, low = _master_casts("linear", input, weight, bias, (
            weight.ndim == 2 and input.ndim >= 2 and input.shape[-1] == weight.shape[1]
            and (bias is None or bias.shape == weight.shape[:1])))
        if low is not None:
            return _Linear.apply(input, weight, bias, *low)
        # (inside the test: without an autocast region the policy returns the arrays as they
        # are, and every Linear call comes here)
        input, weight, bias = _dispatch.autocast("linear", input, weight, bias)
    if weight.ndim != 2 or input.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: input last dimension {input.shape[-1:]} does not match weight "
                         f"shape {weight.shape} (out_features, in_features)")
    if input.ndim < 2 or (bias is not None and bias.shape != (weight.shape[0],)):
        y = gp.matmul(input, gp.permute_dims(weight, (1, 0)))
        if bias is None:
            return y
        try:
            gp.broadcast_shapes(y.shape, bias.shape)
        except ValueError:
            raise ValueError(f"linear: bias shape {bias.shape} does not broadcast to the output "
                             f"shape {y.shape} (expected ({weight.shape[0]},), out_features)"
                             ) from None
        return y + bias
    input, weight, bias = _promoted(input, weight, bias, op="linear")
    return _Linear.apply(input, weight, bias)


class _Linear(Function):
    """``x @ w.T + b`` as one node: one kernel forward (the bias is the GEMM's starting
    value), one for the three gradients (grilly.array.dense). Leading axes are folded into the
    rows inside (no reshape nodes): the weight gradient is one matmul, not a batch of (n, n)
    products summed afterwards (a (T, batch, n) spike sequence, say)."""

    @staticmethod
    def forward(ctx, x, w, b, w_low=None, b_low=None):
        # w_low, b_low: autocast's low-precision copies of the float32 masters w and b (not
        # recorded), which the product uses; the gradients are the masters', in their dtype
        ctx.master = None if w_low is None else w.dtype
        if w_low is not None:
            ctx.w_master = w
            w, b = w_low, b_low
        ctx.lead = None if x.ndim == 2 else x.shape[:-1]
        if ctx.lead is None:
            ctx.save_for_backward(x, w)
            return _dense.linear(x, w, b)
        x2 = gp.reshape(x, (-1, x.shape[-1]))
        ctx.save_for_backward(x2, w)
        return gp.reshape(_dense.linear(x2, w, b), (*ctx.lead, w.shape[0]))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        lead = ctx.lead
        g2 = g if lead is None else gp.reshape(g, (-1, g.shape[-1]))
        need = ctx.needs_input_grad[:3]
        if is_grad_enabled():
            # create_graph (a gradient penalty): this backward is itself recorded, so it runs
            # as the composition's differentiable namespace ops (the fused kernel has no
            # gradient of its own)
            if ctx.master is not None:   # g @ w depends on the master through its cast
                w = gp.astype(ctx.w_master, w.dtype)
            gx, gw, gb = _dense.composed_linear_backward(g2, x, w, need)
            if ctx.master is not None:
                gw, gb = (None if a is None else gp.astype(a, ctx.master) for a in (gw, gb))
        else:
            gx, gw, gb = _dense.linear_backward(g2, x, w, need, grad_dtype=ctx.master)
        if lead is not None and gx is not None:
            gx = gp.reshape(gx, (*lead, x.shape[-1]))
        return (gx, gw, gb) if ctx.master is None else (gx, gw, gb, None, None)


def embedding(input: Array, weight: Array, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Array:
    """Rows of ``weight`` selected by the integer array ``input`` (shape input.shape + (dim,));
    lookups of row ``padding_idx`` add nothing to the weight's gradient. An index outside
    [0, num_embeddings) raises IndexError (negative ones too, as in PyTorch). With
    ``max_norm``, the looked-up rows whose ``norm_type``-norm exceeds it are first rescaled
    **in place** in ``weight`` to norm ``max_norm`` (outside autograd, as torch's
    ``embedding_renorm_``). ``scale_grad_by_freq`` divides each lookup's gradient by the
    number of times its index occurs in ``input``, as torch's."""
    if not isinstance(input, gp.Array) or not gp.isdtype(input.dtype, "integral"):
        raise TypeError(f"embedding: input must be an integer Array, got "
                        f"{getattr(input, 'dtype', type(input).__name__)}")
    if sparse:
        raise NotImplementedError("embedding: sparse=True is not supported (grilly has no "
                                  "sparse gradients)")
    n = weight.shape[0]
    idx = gp.reshape(input, (-1,))
    if idx.dtype != gp.int64:   # int64 before the shift below (no int8 wrap-around)
        idx = gp.astype(idx, gp.int64)
    # take wraps a negative index; torch's lookup rejects it. Moved below -n, it fails take's
    # own bounds check (normalize_indices: no extra host read, and a jit replay checks it too)
    idx = gp.where(idx < 0, idx - n, idx)
    try:
        if max_norm is not None:
            with _no_grad():
                _embedding_renorm(weight, idx, max_norm, norm_type)
        rows = gp.take(weight, idx, axis=0)
    except IndexError as e:
        raise IndexError(_embedding_index_error(e, n)) from None
    if padding_idx is not None and weight.requires_grad:
        # as torch: the padding row's entries keep their value but add nothing to its gradient
        if padding_idx < 0:
            padding_idx += n
        keep = gp.expand_dims(idx != padding_idx, axis=-1)
        rows = gp.where(keep, rows, _detach(rows))
    if scale_grad_by_freq and weight.requires_grad and is_grad_enabled():
        rows = _ScaleGrad.apply(rows, gp.expand_dims(1.0 / _index_counts(idx, rows.dtype), -1))
    return gp.reshape(rows, (*input.shape, weight.shape[1]))


def _index_counts(idx: Array, dtype) -> Array:
    """For each entry of the 1-D ``idx``, how often its value occurs in ``idx`` (a sort and
    two searches on the device: O(K log K), nothing read back)."""
    srt = gp.sort(idx)
    cnt = gp.searchsorted(srt, idx, side="right") - gp.searchsorted(srt, idx, side="left")
    return gp.astype(cnt, dtype)


class _ScaleGrad(Function):
    """``x`` unchanged, its gradient multiplied by ``s`` (embedding's scale_grad_by_freq)."""

    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(s)
        return x

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return g * s, None


def _embedding_index_error(e: IndexError, n: int) -> str:
    """embedding's message for take's IndexError, with the index as the caller gave it (a
    negative one was moved down by n)."""
    import re

    m = re.search(r"index (-?\d+) is out of bounds", str(e))
    if m is None:
        return f"embedding: index out of range in self: {e}"
    i = int(m.group(1))
    i = i + n if i < 0 else i
    return (f"embedding: index {i} is out of range in self (indices must be in [0, {n}), "
            f"num_embeddings={n})")


def _embedding_renorm(weight: Array, idx: Array, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: the rows at ``idx`` whose norm exceeds ``max_norm``
    scaled by max_norm / (norm + 1e-7), in place (a repeated index writes the same row)."""
    from .. import linalg

    rows = gp.take(weight, idx, axis=0)
    norm = linalg.vector_norm(rows, axis=-1, keepdims=True, ord=norm_type)
    scale = gp.where(norm > max_norm, max_norm / (norm + 1e-7), gp.ones_like(norm))
    weight[idx] = rows * scale


def one_hot(tensor: Array, num_classes: int = -1, *, dtype: DType | None = None) -> Array:
    """Integer class indices as one-hot vectors along a new last axis (int64 unless ``dtype``);
    ``num_classes=-1`` is the largest index + 1. A class outside [0, num_classes) is a
    ValueError (torch's RuntimeError): the check reads the indices' min and max on the host,
    one download, as torch's syncs (so it cannot run inside a grilly.jit trace: JitError)."""
    if not isinstance(tensor, Array):
        raise TypeError(f"one_hot: tensor must be a grilly Array of class indices, got "
                        f"{type(tensor).__name__}")
    if not gp.isdtype(tensor.dtype, "integral"):
        raise TypeError(f"one_hot: needs an integer array, got {tensor.dtype}")
    if isinstance(num_classes, bool) or not hasattr(type(num_classes), "__index__"):
        raise TypeError(f"one_hot: num_classes must be an int, got {type(num_classes).__name__}")
    num_classes = operator.index(num_classes)
    if num_classes < -1:
        raise ValueError(f"one_hot: num_classes must be -1 (inferred) or >= 0, got {num_classes}")
    if tensor.size == 0:
        if num_classes == -1:
            raise ValueError("one_hot: cannot infer num_classes from an empty array; pass it")
        return _one_hot(tensor, num_classes, dtype)
    # one host read for both bounds (the labels' min and max), as torch's check syncs
    lo, hi = gp.stack([gp.min(tensor), gp.max(tensor)]).tolist()
    if lo < 0:
        raise ValueError(f"one_hot: class values must be non-negative, got {lo}")
    if num_classes == -1:
        num_classes = hi + 1
    elif hi >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes "
                         f"({num_classes}), got {hi}")
    return _one_hot(tensor, num_classes, dtype)


def _one_hot(tensor: Array, num_classes: int, dtype: DType | None = None) -> Array:
    """one_hot without its host check, for callers whose indices are in range by construction
    (argmax, samples) or checked already (grilly.nn.snn's losses): it traces under grilly.jit."""
    cls = gp.arange(num_classes, dtype=tensor.dtype, device=tensor.device)
    return gp.astype(gp.expand_dims(tensor, axis=-1) == cls, dtype or gp.int64)


def dropout(input: Array, p: float = 0.5, training: bool = True, inplace: bool = False) -> Array:
    """Zero elements with probability ``p`` and scale the rest by 1/(1-p) while training."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0.0:
        return input
    if inplace:
        return _inplace(input, lambda x: dropout(x, p, True), "dropout")
    if p == 1.0:
        return input * 0.0
    return input * _keep_scale(input.shape, p, 1.0 / (1.0 - p), input.dtype, input.device)


def _draw_dtype(dtype):
    """The dtype to draw uniforms of ``dtype`` in: float32 for bfloat16 (grilly.random refuses
    bfloat16 uniforms, whose rounding could reach ``high``), else ``dtype`` itself."""
    return gp.float32 if dtype == gp.bfloat16 else dtype


def _keep_scale(shape: tuple, p, scale, dtype, device) -> Array:
    """``scale`` where a uniform draw of ``shape`` is >= p, else 0, in ``dtype``: one kernel
    (philox_dropout) where the draw, the comparison and a where took three passes; the same
    numbers the default generator's ``uniform(shape) >= p`` gave."""
    if isinstance(p, Array):
        # an Array p takes part in type promotion (a float64 p compares float32 uniforms in
        # float64): the draw, comparison and where as before
        keep = _grandom.uniform(shape=shape, dtype=_draw_dtype(dtype), device=device) >= p
        return gp.where(keep, gp.asarray(scale, dtype=dtype, device=device),
                        gp.asarray(0.0, dtype=dtype, device=device))
    # float(): a bool or int p compares as the number it is, as it did against the uniforms
    return _grandom.keep_scale(shape, float(p), float(scale), dtype=dtype, device=device)


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _pad_index(n: int, lo: int, hi: int, mode: str):
    """The source positions of an axis of length ``n`` padded by (lo, hi) in ``mode`` (a
    negative amount crops that side: the other side still mirrors or repeats about the
    input's own edge, as torch's reflect and replicate kernels)."""
    i = _np.arange(-lo, n + hi)
    if mode == "reflect":
        i = _np.abs(i)
        i = _np.where(i > n - 1, 2 * (n - 1) - i, i)
    elif mode == "replicate":
        i = _np.clip(i, 0, n - 1)
    else:   # circular
        i = i % n
    return i


def pad(input: Array, pad: tuple[int, ...], mode: str = "constant", value: float | None = None
        ) -> Array:
    """Pad (or, with negative amounts, crop) the trailing axes: ``pad`` lists (before, after)
    pairs from the last axis backwards. Modes as torch's: 'constant' (``value``, default 0),
    'reflect' (mirrored without repeating the edge), 'replicate' (the edge repeated) and
    'circular' (wrapped around: of the axis left after cropping, as torch's)."""
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(map(repr, _PAD_MODES))}, got "
                         f"{mode!r}")
    pad = tuple(pad)
    if len(pad) % 2 or len(pad) // 2 > input.ndim:
        raise ValueError(f"pad: pad must have an even length of at most 2*ndim, got {pad!r}")
    if mode != "constant" and value not in (None, 0, 0.0):
        raise ValueError(f"pad: value is only used by mode='constant', got value={value} with "
                         f"mode={mode!r}")
    value = 0.0 if value is None else value
    x = input
    for i in range(len(pad) // 2):
        ax = input.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = x.shape[ax]
        if mode in ("reflect", "replicate"):
            # replicate repeats the edge any number of times (as torch); reflect reads at most
            # the axis less its edge; a negative amount crops (the pad mirrors the input's
            # edge all the same)
            if n == 0:
                raise ValueError(f"pad: mode={mode!r} cannot pad axis {ax}, which is empty")
            if mode == "reflect" and max(lo, hi) > n - 1:
                raise ValueError(f"pad: mode='reflect' padding ({lo}, {hi}) of axis {ax} must "
                                 f"be at most the size - 1 ({n - 1}) of that axis")
            if n + lo + hi < 1:
                raise ValueError(f"pad: padding ({lo}, {hi}) leaves nothing of axis {ax} "
                                 f"(size {n})")
            if lo or hi:
                idx = gp.asarray(_pad_index(n, lo, hi, mode), dtype=gp.int64, device=x.device)
                x = gp.take(x, idx, axis=ax)
            continue
        if lo < 0 or hi < 0:   # negative amounts crop, as torch's (circular: before wrapping)
            if -min(lo, 0) - min(hi, 0) > n:
                raise ValueError(f"pad: cropping {pad!r} removes more than axis {ax}'s {n} "
                                 "elements")
            key = [slice(None)] * x.ndim
            key[ax] = slice(-min(lo, 0), n + min(hi, 0))
            x = x[tuple(key)]
            lo, hi, n = max(lo, 0), max(hi, 0), x.shape[ax]
            if n == 0 and mode == "circular":
                raise ValueError(f"pad: cropping {pad!r} leaves nothing of axis {ax} to wrap")
        if mode == "circular":
            if lo or hi:
                if n == 0 or max(lo, hi) > n:
                    raise ValueError(f"pad: mode='circular' padding ({lo}, {hi}) of axis {ax} "
                                     f"must be at most the size ({n}) of that axis" if n else
                                     f"pad: mode='circular' cannot pad axis {ax}, which is empty")
                idx = gp.asarray(_pad_index(n, lo, hi, mode), dtype=gp.int64, device=x.device)
                x = gp.take(x, idx, axis=ax)
            continue
        parts = []
        for m in (lo, hi):
            shp = list(x.shape)
            shp[ax] = m
            parts.append(gp.full(tuple(shp), value, dtype=x.dtype, device=x.device) if m else None)
        seq = [a for a in (parts[0], x, parts[1]) if a is not None]
        x = gp.concat(seq, axis=ax) if len(seq) > 1 else x
    return x

_INTERP_MODES = {"nearest": None, "nearest-exact": None, "area": None, "linear": 3,
                 "bilinear": 4, "bicubic": 4, "trilinear": 5}
_CUBIC_A = -0.75   # torch's cubic convolution coefficient


def _interp_source(n_in: int, n_out: int, scale: float | None, mode: str, align: bool,
                   k: int = 2, wide: bool = False):
    """(low index, high index, weight of high) of each output position along one axis, as
    torch's kernels compute them (``scale``: a given scale_factor, used as torch uses it;
    ``k`` spatial axes; ``wide``: a float64 input)."""
    dst = _np.arange(n_out, dtype=_np.float64)
    if mode in ("nearest", "nearest-exact"):
        if k == 2 and mode == "nearest" and n_out in (n_in, 2 * n_in):
            # torch's 2-D nearest kernel copies a same-size axis and halves the index of a
            # doubled one, whatever the scale_factor
            return _np.arange(n_out) // (n_out // n_in), None, None
        # the source position in the kernel's arithmetic: float32, or float64 for a float64
        # input outside the 2-D kernel, rounded to float32 before the floor (as torch's)
        ft = _np.float64 if wide and k != 2 else _np.float32
        r = ft(1.0 / scale) if scale else ft(n_in) / ft(n_out)
        src = (dst.astype(ft) + ft(0.5 if mode == "nearest-exact" else 0.0)) * r
        i = _np.minimum(_np.floor(src.astype(_np.float32)).astype(_np.int64), n_in - 1)
        return i, None, None
    if align:
        r = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = dst * r
    else:
        r = (1.0 / scale) if scale else n_in / n_out
        src = _np.maximum((dst + 0.5) * r - 0.5, 0.0)
    lo = _np.minimum(_np.floor(src).astype(_np.int64), n_in - 1)
    hi = _np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


def _cubic_source(n_in: int, n_out: int, scale: float | None, align: bool):
    """The four source indices (clamped to the border) and their cubic convolution weights
    (A = -0.75) of each output position along one axis, in float32 as torch's kernel."""
    f = _np.float32
    dst = _np.arange(n_out, dtype=f)
    if align:
        r = f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0.0)
        src = r * dst
    else:
        r = f(1.0 / scale) if scale else f(n_in) / f(n_out)
        src = r * (dst + f(0.5)) - f(0.5)   # not clamped at 0, unlike the linear modes
    i0 = _np.floor(src)
    t = src - i0
    a = f(_CUBIC_A)
    near = lambda x: ((a + 2) * x - (a + 3)) * x * x + 1   # noqa: E731  |x| <= 1
    far = lambda x: ((a * x - 5 * a) * x + 8 * a) * x - 4 * a   # noqa: E731  1 < |x| < 2
    weights = (far(t + 1), near(t), near(1 - t), far(2 - t))
    idx = tuple(_np.clip(i0.astype(_np.int64) - 1 + k, 0, n_in - 1) for k in range(4))
    return idx, weights


def _antialias_matrix(n_in: int, n_out: int, scale: float | None, cubic: bool,
                      align: bool) -> _np.ndarray:
    """torch's antialiased resampling of one axis as an (n_out, n_in) matrix: output i is the
    normalized sum of a triangle (bilinear) or A = -0.5 cubic filter, stretched by the
    downscale ratio, over the inputs around its centre (upscaling: the plain filter)."""
    if align:
        r = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        r = (1.0 / scale) if scale else n_in / n_out
    half = 2.0 if cubic else 1.0          # the filter's half-width in input pixels at r <= 1
    support = half * r if r >= 1.0 else half
    inv = 1.0 / r if r >= 1.0 else 1.0

    def filt(x):
        x = _np.abs(x)
        if not cubic:
            return _np.maximum(1.0 - x, 0.0)
        a = -0.5
        return _np.where(x < 1.0, ((a + 2) * x - (a + 3)) * x * x + 1,
                         _np.where(x < 2.0, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))

    m = _np.zeros((n_out, n_in), dtype=_np.float64)
    for i in range(n_out):
        centre = r * (i + 0.5)
        lo = max(int(centre - support + 0.5), 0)
        hi = min(int(centre + support + 0.5), n_in)
        j = _np.arange(lo, hi)
        w = filt((j - centre + 0.5) * inv)
        total = w.sum()
        m[i, lo:hi] = w / total if total != 0 else w
    return m


def interpolate(input: Array, size=None, scale_factor=None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> Array:
    """Resize the spatial axes of (N, C, L), (N, C, H, W) or (N, C, D, H, W) ``input`` as
    torch's ``F.interpolate``: modes 'nearest', 'nearest-exact', 'area' (adaptive average
    pooling), 'linear' (3-D), 'bilinear' and 'bicubic' (4-D) and 'trilinear' (5-D), to
    ``size`` or by ``scale_factor``; composed of gathers along each axis and, for the
    interpolating modes, a weighted sum of the neighbours (differentiable, on every device).
    ``antialias`` (bilinear, bicubic): torch's filtered downscaling, as a matrix per axis."""
    op = "interpolate"
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"{op}: mode {mode!r} is not supported (supported: "
                                  f"{', '.join(map(repr, _INTERP_MODES))})")
    if not isinstance(input, Array) or input.ndim not in (3, 4, 5):
        raise ValueError(f"{op}: input must be a 3-D (N, C, L), 4-D (N, C, H, W) or 5-D "
                         f"(N, C, D, H, W) Array, got "
                         f"{getattr(input, 'shape', type(input).__name__)}")
    need = _INTERP_MODES[mode]
    if antialias and (mode not in ("bilinear", "bicubic") or input.ndim != 4):
        raise ValueError(f"{op}: antialias=True applies to modes 'bilinear' and 'bicubic' of a "
                         f"4-D input only, got mode {mode!r} and a {input.ndim}-D input")
    if need is not None and input.ndim != need:
        raise ValueError(f"{op}: mode {mode!r} needs a {need}-D input, got {input.ndim}-D")
    if align_corners is not None and need is None:
        raise ValueError(f"{op}: align_corners only applies to the interpolating modes "
                         f"(linear, bilinear, bicubic, trilinear), not {mode!r}")
    align = bool(align_corners)
    if mode != "area":   # torch's autocast runs its upsample ops in float32 ('area' pools)
        input = _dispatch.autocast(op, input)[0]
    k = input.ndim - 2
    if (size is None) == (scale_factor is None):
        raise ValueError(f"{op}: give exactly one of size and scale_factor")
    spatial = input.shape[2:]
    if size is not None:
        if recompute_scale_factor:
            raise ValueError(f"{op}: recompute_scale_factor is not meaningful with an explicit "
                             "size")
        size = (size,) * k if isinstance(size, int) else tuple(size)
        scales = (None,) * k
        if len(size) != k or any(int(n) < 1 for n in size):
            raise ValueError(f"{op}: size must be {k} positive ints, got {size}")
        out = tuple(int(n) for n in size)
    else:
        sf = (scale_factor,) * k if isinstance(scale_factor, (int, float)) else \
            tuple(scale_factor)
        if len(sf) != k or any(float(f) <= 0 for f in sf):
            raise ValueError(f"{op}: scale_factor must be {k} positive numbers, got "
                             f"{scale_factor}")
        out = tuple(int(n * float(f)) for n, f in zip(spatial, sf))
        if any(o < 1 for o in out):
            raise ValueError(f"{op}: scale_factor {scale_factor} gives an empty output "
                             f"{out} for the input's spatial sizes {spatial}")
        # torch uses the given factor for the source positions unless told to recompute it
        scales = (None,) * k if recompute_scale_factor else tuple(float(f) for f in sf)
    x = input
    for a, (n_in, n_out, sc) in enumerate(zip(spatial, out, scales)):
        axis = 2 + a
        dev = x.device
        if mode == "area":   # torch's adaptive_avg_pool: the mean of each source window
            x = _adaptive_mean(x, axis, n_out)
            continue
        if antialias:   # a resampling matrix applied along the axis (H: from the left)
            m = gp.asarray(_antialias_matrix(n_in, n_out, sc, mode == "bicubic", align),
                           dtype=x.dtype, device=dev)
            x = gp.matmul(m, x) if axis == x.ndim - 2 else gp.matmul(x, gp.matrix_transpose(m))
            continue
        shape = [1] * x.ndim
        shape[axis] = n_out
        if mode == "bicubic":
            idx, wts = _cubic_source(n_in, n_out, sc, align)
            terms = [gp.take(x, gp.asarray(i, device=dev), axis=axis)
                     * gp.reshape(gp.asarray(w, dtype=x.dtype, device=dev), tuple(shape))
                     for i, w in zip(idx, wts)]
            x = (terms[0] + terms[1]) + (terms[2] + terms[3])
            continue
        lo, hi, w = _interp_source(n_in, n_out, sc, mode, align, k, x.dtype == gp.float64)
        xl = gp.take(x, gp.asarray(lo, device=dev), axis=axis)
        if hi is None:
            x = xl
            continue
        wt = gp.reshape(gp.asarray(w, dtype=x.dtype, device=dev), tuple(shape))
        xh = gp.take(x, gp.asarray(hi, device=dev), axis=axis)
        x = xl + (xh - xl) * wt
    return x


def upsample(input: Array, size=None, scale_factor=None, mode: str = "nearest",
             align_corners: bool | None = None) -> Array:
    """torch's deprecated ``F.upsample``: ``interpolate`` with the same arguments."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Array, size=None, scale_factor=None) -> Array:
    """torch's deprecated ``F.upsample_nearest``: ``interpolate(mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Array, size=None, scale_factor=None) -> Array:
    """torch's deprecated ``F.upsample_bilinear``: ``interpolate(mode='bilinear',
    align_corners=True)`` (as UpsamplingBilinear2d)."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


__all__ += ["upsample", "upsample_nearest", "upsample_bilinear"]


def _inplace(input, fn, op: str):
    """torch's ``inplace=True``: ``input`` overwritten with ``fn(input)`` and returned (the same
    Array). In grad mode the result is computed from a copy of ``input`` standing for its old
    values in the graph (nothing saved for the backward is overwritten), and ``input`` takes
    the result's node; a leaf that requires grad raises RuntimeError, as in torch."""
    if not isinstance(input, Array):
        raise TypeError(f"{op}: inplace=True needs a grilly Array, got {type(input).__name__}")
    if input.requires_grad and is_grad_enabled():
        if input._node is None:
            raise RuntimeError(f"{op}: a leaf Array that requires grad is used in an in-place "
                               "operation (inplace=True); work on a copy")
        old = gp.asarray(_detach(input), copy=True)
        old._node, old.requires_grad = input._node, True
        y = fn(old)
    else:
        y = fn(input)
    if y.dtype != input.dtype:
        raise TypeError(f"{op}: inplace=True cannot store a {y.dtype} result in a {input.dtype} "
                        "input")
    input[...] = y
    return input


# ---- activations --------------------------------------------------------------------------
class _ReLU(Function):
    """max(x, 0) with a one-op backward (the generic ``maximum`` rule takes several)."""

    @staticmethod
    def forward(ctx, x):
        y = gp.maximum(x, 0.0)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        # as PyTorch: no gradient at x == 0. One fused kernel, unless this backward is itself
        # recorded (create_graph): then the differentiable composition
        y = ctx.saved_tensors[0]
        if is_grad_enabled():   # create_graph: this backward is recorded
            return (gp.where(y > 0, g, 0.0),)
        return (_fused.relu_backward(g, y),)


def relu(input: Array, inplace: bool = False) -> Array:
    """max(x, 0); integer arrays keep their dtype (as torch.relu). ``inplace``: written into
    ``input``, which is returned."""
    if inplace:
        return _inplace(input, relu, "relu")
    if input.requires_grad:
        return _ReLU.apply(input)
    k = input.dtype.kind   # (the dtype's kind: no isdtype call on this hot path)
    if k == "f":
        return gp.maximum(input, 0.0)
    if k in "iu":
        return gp.maximum(input, 0)
    raise TypeError(f"relu: input must have a real numeric dtype, got {input.dtype}")


def relu6(input: Array, inplace: bool = False) -> Array:
    """min(max(x, 0), 6); as torch, no gradient at 0 and 6 (minimum/maximum split it there)."""
    if inplace:
        return _inplace(input, relu6, "relu6")
    inside = gp.logical_and(input > 0, input < 6.0)
    return gp.where(inside, input, _detach(gp.clip(input, 0.0, 6.0)))


def leaky_relu(input: Array, negative_slope: float = 0.01, inplace: bool = False) -> Array:
    """x for x > 0, negative_slope * x otherwise (the slope at 0 too, as torch)."""
    if inplace:
        return _inplace(input, lambda x: leaky_relu(x, negative_slope), "leaky_relu")
    return gp.where(input > 0, input, input * negative_slope)


def _in_float32(fn, x):
    """fn(x), float16 and bfloat16 computed in float32 (the composites' constants are
    float32/float64 ones), rounded once."""
    if x.dtype == gp.float16 or x.dtype == gp.bfloat16:
        return gp.astype(fn(gp.astype(x, gp.float32)), x.dtype)
    return fn(x)


def _sigmoid_parts(x):
    """(n, d) with sigmoid(x) = n / d, neither overflowing: (1, 1 + e) for x >= 0 and
    (e, 1 + e) below, e = exp(-|x|); one division keeps the error near exp's."""
    e = gp.exp(-gp.abs(x))
    return gp.where(x >= 0, 1.0, e), 1.0 + e


class _Sigmoid(Function):
    """sigmoid with its derivative s (1 - s) (the composite's abs has no slope at 0)."""

    @staticmethod
    def forward(ctx, x):
        n, d = _sigmoid_parts(x)
        s = n / d
        ctx.save_for_backward(s)
        return s

    @staticmethod
    def backward(ctx, g):
        s = ctx.saved_tensors[0]
        return (g * (s * (1.0 - s)),)


def sigmoid(input: Array) -> Array:
    """1 / (1 + exp(-x)), written so that neither branch overflows."""
    _check_float(input, "sigmoid")
    return _in_float32(_Sigmoid.apply, input)


def tanh(input: Array) -> Array:
    """Hyperbolic tangent."""
    return gp.tanh(input)


# silu below this uses x exp(x + S) exp(-S): x exp(x) would multiply a subnormal exp(x) (50 ulp
# lost at x = -104 in float32); x + S is exact there (S a multiple of x's ulp)
_SILU_LOW = {"float32": (-64.0, 32.0), "float64": (-512.0, 512.0)}


def silu(input: Array, inplace: bool = False) -> Array:
    """x * sigmoid(x), also where sigmoid(x) is subnormal."""
    if inplace:
        return _inplace(input, silu, "silu")
    return _in_float32(_silu, _check_float(input, "silu"))


def _silu(x):
    low, shift = _SILU_LOW.get(x.dtype.name, (-64.0, 32.0))
    xc = gp.maximum(x, 4.0 * low)    # -inf -> a finite value: silu(-inf) = -0, not -inf * 0
    tail = xc * gp.exp(xc + shift) * math.exp(-shift)
    # one rounding fewer than x * sigmoid(x); exp(-x) overflows only below ``low``
    return gp.where(x < low, tail, x / (1.0 + gp.exp(-x)))


def elu(input: Array, alpha: float = 1.0, inplace: bool = False) -> Array:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    if inplace:
        return _inplace(input, lambda x: elu(x, alpha), "elu")
    # expm1 of x clamped to <= 0 keeps the unused branch finite, so its gradient is not
    # 0 * inf; a where (not minimum, which halves the gradient at a tie) gives alpha at 0, as torch
    return gp.where(input > 0, input, alpha * gp.expm1(gp.where(input > 0, 0.0, input)))


def softplus(input: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    """log(1 + exp(beta x)) / beta, linear above ``threshold``."""
    _check_float(input, "softplus")
    return _in_float32(lambda x: _softplus(x, beta, threshold), input)


def _softplus(input, beta: float, threshold: float):
    z = input if beta == 1.0 else input * beta
    sp = gp.maximum(z, 0.0) + gp.log1p(gp.exp(-gp.abs(z)))
    if beta != 1.0:
        # the rounding of beta * x costs up to |beta x| / 2 ulp where beta x << 0 (as in torch)
        sp = sp / beta
    return gp.where(z > threshold, input, sp)


class _GeluTanh(Function):
    """x sigmoid(v), v = sqrt(8/pi) (x + 0.044715 x^3), with its derivative
    s + x s (1 - s) v'."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special.gelu_tanh(x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        a = math.sqrt(8.0 / math.pi)
        xc = gp.clip(x, -1e3, 1e3)              # s (1 - s) = 0 there; keeps x v' finite
        s = sigmoid(a * (xc + 0.044715 * xc * xc * xc))
        return (g * (s + xc * s * (1.0 - s) * (a + (3.0 * 0.044715 * a) * xc * xc)),)


class _Erf(Function):
    """erf with its derivative 2/sqrt(pi) exp(-x^2) (not the composite's many-op tape)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special.erf(x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (g * (2.0 / math.sqrt(math.pi)) * gp.exp(-(x * x)),)


class _Erfc(Function):
    """erfc with its derivative -2/sqrt(pi) exp(-x^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special.erfc(x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (g * (-2.0 / math.sqrt(math.pi)) * gp.exp(-(x * x)),)


class _Gelu(Function):
    """x Phi(x) with its derivative Phi(x) + x phi(x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _special.gelu(x)

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        cdf = 0.5 * erfc(x * -math.sqrt(0.5))   # no cancellation for x << 0
        xc = gp.clip(x, -1e3, 1e3)              # x phi(x) -> 0 at +-inf, not inf * 0
        pdf = xc * gp.exp(xc * xc * -0.5) * (1.0 / math.sqrt(2.0 * math.pi))
        return (g * (cdf + pdf),)


def erf(input: Array) -> Array:
    """The error function, within 2 ulp in float32 (a composite of array ops)."""
    _check_float(input, "erf")
    return _in_float32(_Erf.apply, input)


def erfc(input: Array) -> Array:
    """The complementary error function 1 - erf(x), accurate in relative terms for large x."""
    _check_float(input, "erfc")
    return _in_float32(_Erfc.apply, input)


def gelu(input: Array, approximate: str = "none") -> Array:
    """x * Phi(x) ('none') or the tanh approximation ('tanh')."""
    _check_float(input, "gelu")
    if approximate == "tanh":
        # (1 + tanh(u)) / 2 == sigmoid(2u): no cancellation of 1 + tanh(u) near -1
        return _in_float32(_GeluTanh.apply, input)
    if approximate != "none":
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _in_float32(_Gelu.apply, input)


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1


def log_softmax(input, dim: int | None = None, dtype=None):
    """x - logsumexp(x) along ``dim``."""
    dim = _softmax_dim(input.ndim) if dim is None else dim
    if dtype is not None:   # the caller's dtype, autocast or not (torch's set_opt_dtype rule)
        with _dispatch.no_cast():
            return _fused.log_softmax(gp.astype(input, dtype), axis=dim)
    return _fused.log_softmax(input, axis=dim)


def softmax(input, dim: int | None = None, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim``."""
    dim = _softmax_dim(input.ndim) if dim is None else dim
    if dtype is not None:   # the caller's dtype, autocast or not (torch's set_opt_dtype rule)
        with _dispatch.no_cast():
            return _fused.softmax(gp.astype(input, dtype), axis=dim)
    return _fused.softmax(input, axis=dim)


# ---- normalization ------------------------------------------------------------------------
def _norm_axes(input, normalized_shape, op):
    ns = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(ns):]) != ns:
        raise ValueError(f"{op}: input shape {input.shape} does not end with normalized_shape {ns}")
    return tuple(range(input.ndim - len(ns), input.ndim))


def _norm_grads(g, x, weight, eps, axes, wshape, waxes, need) -> tuple:
    """The gradients (x, weight, bias) of normalizing x over ``axes`` (weight and bias seen as
    ``wshape``, summed over ``waxes``) in differentiable namespace ops: the statistics are
    recomputed from x, so a second backward sees their dependence on it (create_graph)."""
    d = x - gp.mean(x, axis=axes, keepdims=True)
    rstd = 1.0 / gp.sqrt(gp.mean(d * d, axis=axes, keepdims=True) + eps)
    xhat = d * rstd
    gx = gw = gb = None
    if need[0]:
        gy = g if weight is None else g * gp.reshape(weight, wshape)
        gx = rstd * (gy - gp.mean(gy, axis=axes, keepdims=True)
                     - xhat * gp.mean(gy * xhat, axis=axes, keepdims=True))
    if need[1]:
        gw = gp.sum(g * xhat, axis=waxes)
    if need[2]:
        gb = gp.sum(g, axis=waxes)
    return gx, gw, gb


class _LayerNorm(Function):
    """Layer norm of x viewed as (M, D) as one node: one kernel forward (output, row means and
    1/std), one backward (grilly.array.normalization)."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps):
        y, mean, rstd = _norm.layer_norm(x, weight, bias, eps)
        ctx.save_for_backward(x, mean, rstd, weight)
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, g):
        x, mean, rstd, weight = ctx.saved_tensors
        if is_grad_enabled():   # create_graph: the fused kernel has no gradient of its own
            return _norm_grads(g, x, weight, ctx.eps, (1,), (1, x.shape[1]), (0,),
                               ctx.needs_input_grad)
        return _norm.layer_norm_backward(g, x, mean, rstd, weight, ctx.needs_input_grad)


def layer_norm(input: Array, normalized_shape: int | tuple[int, ...], weight: Array | None = None,
               bias: Array | None = None, eps: float = 1e-5) -> Array:
    """(x - mean) / sqrt(var + eps) over the trailing ``normalized_shape`` axes, then affine."""
    axes = _norm_axes(input, normalized_shape, "layer_norm")
    input, weight, bias = _dispatch.autocast("layer_norm", input, weight, bias)
    if _all_float16(input, weight, bias):
        # float16 statistics overflow once the std passes 256 (var > 65504) and the output
        # becomes 0: computed in float32, as torch computes them, and rounded once
        return gp.astype(layer_norm(_f32(input), normalized_shape, _f32(weight), _f32(bias), eps),
                         gp.float16)
    shp = input.shape[input.ndim - len(axes):]
    for a, name in ((weight, "weight"), (bias, "bias")):
        if a is not None and a.shape != shp:
            raise ValueError(f"layer_norm: {name} shape {a.shape} does not match "
                             f"normalized_shape {shp}")
    if input.dtype.kind != "f":
        raise TypeError(f"layer_norm: input must be real floating, got {input.dtype}")
    x, weight, bias = _promoted(input, weight, bias, op="layer_norm")
    d = math.prod(shp)
    # (a reshape to the shape it has is still an op with a gradient node: skipped)
    x2 = x if x.ndim == 2 and x.shape[1] == d else gp.reshape(x, (-1, d))
    w2 = weight if weight is None or weight.shape == (d,) else gp.reshape(weight, (d,))
    b2 = bias if bias is None or bias.shape == (d,) else gp.reshape(bias, (d,))
    y = _LayerNorm.apply(x2, w2, b2, eps=float(eps))
    return y if y.shape == input.shape else gp.reshape(y, input.shape)


def rms_norm(input: Array, normalized_shape: int | tuple[int, ...], weight: Array | None = None,
             eps: float | None = None) -> Array:
    """x / sqrt(mean(x^2) + eps) over the trailing axes, times ``weight``."""
    axes = _norm_axes(input, normalized_shape, "rms_norm")
    eps = float(gp.finfo(input.dtype).eps) if eps is None else eps
    if input.dtype in (gp.float16, gp.bfloat16):
        # x^2 overflows float16 past 256: the statistics in float32 (as torch), rounded once
        d = input.dtype if weight is None else gp.result_type(input, weight)
        y = rms_norm(gp.astype(input, gp.float32), normalized_shape, weight, eps)
        return y if y.dtype == d else gp.astype(y, d)
    y = input / gp.sqrt(gp.mean(input * input, axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


class _BatchNormTrain(Function):
    """Training-mode batch norm of x viewed as (N, C, S) as one node: one kernel forward (output
    and batch statistics), one backward (grilly.array.normalization). The batch mean and
    1/sqrt(biased variance + eps) go into ``stats``."""

    @staticmethod
    def forward(ctx, x, weight, bias, *, eps, stats):
        y, mean, invstd = _norm.batch_norm(x, weight, bias, eps)
        stats["mean"], stats["invstd"] = mean, invstd
        ctx.save_for_backward(x, mean, invstd, weight)
        ctx.eps = eps
        return y

    @staticmethod
    def backward(ctx, g):
        x, mean, invstd, weight = ctx.saved_tensors
        if is_grad_enabled():   # create_graph: the fused kernel has no gradient of its own
            return _norm_grads(g, x, weight, ctx.eps, (0, 2), (1, x.shape[1], 1), (0, 2),
                               ctx.needs_input_grad)
        return _norm.batch_norm_backward(g, x, mean, invstd, weight, ctx.needs_input_grad)


def batch_norm(input: Array, running_mean: Array | None, running_var: Array | None,
               weight: Array | None = None, bias: Array | None = None, training: bool = False,
               momentum: float | None = 0.1, eps: float = 1e-5,
               num_batches_tracked: Array | None = None) -> Array:
    """Normalize over every axis but 1; in training, update the running stats in place."""
    _check_float(input, "batch_norm")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: input needs at least 2 dimensions, got shape {input.shape}")
    bshape = (1, input.shape[1]) + (1,) * (input.ndim - 2)
    if training:
        n = input.size // input.shape[1]
        if n <= 1:
            raise ValueError(f"batch_norm: expected more than 1 value per channel when training, "
                             f"got input shape {input.shape}")
        stats: dict = {}
        low = _all_float16(input, weight, bias)   # statistics in float32 (see layer_norm)
        x3, weight, bias = (_f32(input), _f32(weight), _f32(bias)) if low else \
            _promoted(input, weight, bias, op="batch_norm")
        x3 = gp.reshape(x3, (input.shape[0], input.shape[1], -1))
        y = gp.reshape(_BatchNormTrain.apply(x3, weight, bias, eps=eps, stats=stats), input.shape)
        if low:
            y = gp.astype(y, gp.float16)
        if running_mean is not None:
            with _no_grad():
                rm, rv = running_mean, running_var
                if stats["mean"].dtype != rm.dtype and not low:
                    # float64 input into float32 buffers (promoted as Linear promotes): the
                    # batch's statistics stored in the buffers' dtype, as an assignment would
                    stats["mean"] = gp.astype(stats["mean"], rm.dtype)
                    stats["invstd"] = gp.astype(stats["invstd"], rm.dtype)
                if low and rm.dtype == gp.float16:
                    # float32 statistics into float16 buffers: updated in float32 (the batch
                    # variance may pass 65504 where the running one does not), rounded once
                    rm, rv = gp.astype(rm, gp.float32), gp.astype(rv, gp.float32)
                if momentum is None and num_batches_tracked is not None:
                    # the cumulative average: momentum 1 / count, computed on the device (no
                    # host read of the count, so grilly.jit can trace it)
                    m = 1.0 / gp.maximum(gp.astype(num_batches_tracked, rm.dtype), 1.0)
                    _norm.composed_batch_norm_update(rm, rv, stats["mean"], stats["invstd"],
                                                     m, eps, n)
                else:
                    _norm.batch_norm_update(rm, rv, stats["mean"], stats["invstd"],
                                            1.0 if momentum is None else momentum, eps, n)
                if rm is not running_mean:
                    running_mean[...] = gp.astype(rm, gp.float16)
                    running_var[...] = gp.astype(rv, gp.float16)
        return y
    if running_mean is None or running_var is None:
        raise ValueError("batch_norm: running_mean and running_var are needed in eval mode")
    y = (input - gp.reshape(running_mean, bshape)) / gp.sqrt(gp.reshape(running_var, bshape) + eps)
    if weight is not None:
        y = y * gp.reshape(weight, bshape)
    return y if bias is None else y + gp.reshape(bias, bshape)


def _detach(x):
    d = getattr(x, "detach", None)
    return d() if d is not None else x


# ---- convolution and pooling --------------------------------------------------------------
class _Im2col(Function):
    """The kernel windows of a padded (N, C, H, W) input (grilly.array.conv.im2col); the
    backward is one col2im instead of a tape of KH*KW slice gradients."""

    @staticmethod
    def forward(ctx, x, *, kernel, stride, dilation, pads, fill, out, channel_major):
        ctx.geom = (kernel, stride, dilation, pads, tuple(x.shape[2:]), channel_major)
        return _conv.im2col(x, kernel, stride, dilation, pads, fill, out, channel_major)

    @staticmethod
    def backward(ctx, g):
        if is_grad_enabled():   # create_graph: col2im as a node whose own backward is im2col
            return (_col2im(g, *ctx.geom),)
        return (_conv.col2im(g, *ctx.geom),)


class _Col2im(Function):
    """im2col's adjoint (grilly.array.conv.col2im) as a node; both are linear, so each one's
    backward is the other and the pair differentiates any number of times."""

    @staticmethod
    def forward(ctx, g, *, kernel, stride, dilation, pads, size, channel_major):
        # the windows' (Ho, Wo): axes 3 and 4 in both layouts
        ctx.geom = (kernel, stride, dilation, pads, 0.0, tuple(g.shape[3:5]), channel_major)
        return _conv.col2im(g, kernel, stride, dilation, pads, size, channel_major)

    @staticmethod
    def backward(ctx, gg):
        return (_im2col(gg, *ctx.geom),)


def _im2col(x, kernel, stride, dilation, pads, fill, out, channel_major=False):
    return _Im2col.apply(x, kernel=kernel, stride=stride, dilation=dilation, pads=pads, fill=fill,
                         out=out, channel_major=channel_major)


def _col2im(g, kernel, stride, dilation, pads, size, channel_major=False):
    return _Col2im.apply(g, kernel=kernel, stride=stride, dilation=dilation, pads=pads, size=size,
                         channel_major=channel_major)


def _out_size(n, k, s, p, d, ceil_mode=False, op="conv"):
    span = n + 2 * p - d * (k - 1) - 1
    # ceil_mode (as torch) keeps a window that runs past the end, even the only one
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (o - 1) * s >= n + p:
        o -= 1  # the last window must start inside the input or the left padding
    if o < 1:
        raise ValueError(f"{op}: kernel (size {k}, dilation {d}) is larger than the padded input {n + 2 * p}")
    return o


def _check_conv_channels(op: str, c: int, wshape: tuple, groups, bias) -> None:
    """A convolution's groups, channel counts (input ``c``, weight ``wshape`` (O, C/groups,
    ...)) and bias shape (the kernels read bias[o] unchecked: a short one read past its end)."""
    o, cg = wshape[:2]
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    if c != cg * groups or o % groups:
        raise ValueError(f"{op}: input has {c} channels but weight {wshape} with "
                         f"groups={groups} expects {cg * groups} (and out_channels divisible by "
                         "groups)")
    if bias is not None and tuple(bias.shape) != (o,):
        raise ValueError(f"{op}: bias must have shape ({o},), got {bias.shape}")


def conv2d(input: Array, weight: Array, bias: Array | None = None, stride: int | tuple[int, int] = 1,
           padding: str | int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
           groups: int = 1) -> Array:
    """2-D cross-correlation over (N, C, H, W) (or (C, H, W)) by im2col and one batched matmul."""
    _check_float(input, "conv2d")
    if input.ndim == 3:
        return gp.squeeze(conv2d(gp.expand_dims(input, axis=0), weight, bias, stride, padding,
                                 dilation, groups), axis=0)
    if input.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"conv2d: expected a 4-D input and weight, got {input.shape} and {weight.shape}")
    n, c, h, w = input.shape
    kh, kw = weight.shape[2:]
    _check_conv_channels("conv2d", c, weight.shape, groups, bias)
    stride, dilation = _pair(stride, 2, "stride", "conv2d"), _pair(dilation, 2, "dilation", "conv2d")
    _check_geometry("conv2d", stride, dilation)
    if padding == "valid":
        pads = (0, 0, 0, 0)
    elif padding == "same":
        if stride != (1, 1):
            raise ValueError("conv2d: padding='same' needs stride 1")
        th, tw = dilation[0] * (kh - 1), dilation[1] * (kw - 1)
        pads = (th // 2, th - th // 2, tw // 2, tw - tw // 2)
    elif isinstance(padding, str):
        raise ValueError(f"conv2d: padding must be 'same', 'valid', an int or a tuple of 2 ints, "
                         f"got {padding!r}")
    else:
        ph, pw = _pair(padding, 2, "padding", "conv2d")
        _check_geometry("conv2d", stride, dilation, (ph, pw))
        pads = (ph, ph, pw, pw)
    ho = _out_size(h + pads[0] + pads[1], kh, stride[0], 0, dilation[0], op="conv2d")
    wo = _out_size(w + pads[2] + pads[3], kw, stride[1], 0, dilation[1], op="conv2d")
    geom = (stride, dilation, pads, groups, (ho, wo))
    if _dispatch.hooks.cast is not None:   # an autocast region (in some thread)
        # (its shapes, the bias's too, are checked above)
        input, low = _master_casts("conv2d", input, weight, bias, True)
        if low is not None:
            return _Conv2d.apply(input, weight, bias, *low, geom=geom)
    input, weight, bias = _dispatch.autocast("conv2d", input, weight, bias)
    input, weight, bias = _promoted(input, weight, bias, op="conv2d")
    return _Conv2d.apply(input, weight, bias, geom=geom)


class _Conv2d(Function):
    """conv2d as one node (grilly.array.conv's conv2d and conv2d_backward kernels): on the CPU
    each image's windows live only in a thread's scratch, forward and backward. Under autocast
    it takes float32 masters with their low-precision copies (_master_casts)."""

    @staticmethod
    def forward(ctx, x, w, b, w_low=None, b_low=None, *, geom):
        ctx.master = None if w_low is None else w.dtype
        if w_low is not None:
            ctx.w_master = w
            w, b = w_low, b_low
        ctx.save_for_backward(x, w)
        ctx.geom = geom
        return _conv.conv2d(x, w, b, *geom)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        need = ctx.needs_input_grad[:3]
        if is_grad_enabled():   # create_graph: the fused kernel has no gradient of its own
            if ctx.master is None:
                return _conv2d_grads(g, x, w, *ctx.geom[:4], need)
            # the input's gradient depends on the master through its cast
            gx, gw, gb = _conv2d_grads(g, x, gp.astype(ctx.w_master, w.dtype), *ctx.geom[:4],
                                       need)
            return (gx, *(None if a is None else gp.astype(a, ctx.master) for a in (gw, gb)),
                    None, None)
        res = _conv.conv2d_backward(g, x, w, *ctx.geom[:4], need=need, grad_dtype=ctx.master)
        return res if ctx.master is None else (*res, None, None)


def _conv2d_grads(g, x, w, stride, dilation, pads, groups, need) -> tuple:
    """conv2d's gradients (x, w, bias) in differentiable ops: grilly.array.conv's
    composed_conv2d_backward (one GEMM per group each) with the windows taken and put back by
    the _Im2col and _Col2im nodes."""
    return _conv.composed_conv2d_backward(g, x, w, stride, dilation, pads, groups, need,
                                          take=_im2col, put=_col2im)


def conv1d(input: Array, weight: Array, bias: Array | None = None, stride: int | tuple[int] = 1,
           padding: str | int | tuple[int] = 0, dilation: int | tuple[int] = 1, groups: int = 1) -> Array:
    """1-D cross-correlation over (N, C, L) (or (C, L)), through conv2d with a height of 1."""
    op = "conv1d"
    _check_float(input, op)
    if input.ndim not in (2, 3) or weight.ndim != 3:
        raise ValueError(f"{op}: expected a 2-D or 3-D input and a 3-D weight, got {input.shape} "
                         f"and {weight.shape}")
    # checked here in 1-D terms, so that a bad argument's message names conv1d and its values
    # (not the height-1 conv2d it runs as)
    c, length = input.shape[-2:]
    k = weight.shape[2]
    _check_conv_channels(op, c, weight.shape, groups, bias)
    s, d = _pair(stride, 1, "stride", op), _pair(dilation, 1, "dilation", op)
    _check_geometry(op, s, d)
    if padding == "same":
        if s != (1,):
            raise ValueError(f"{op}: padding='same' needs stride 1")
        pad_ = padding
    elif isinstance(padding, str) and padding != "valid":
        raise ValueError(f"{op}: padding must be 'same', 'valid', an int or a tuple of 1 int, "
                         f"got {padding!r}")
    else:
        p = (0,) if padding == "valid" else _pair(padding, 1, "padding", op)
        _check_geometry(op, s, d, p)
        _out_size(length, k, s[0], p[0], d[0], op=op)
        pad_ = (0, p[0])
    y = conv2d(gp.expand_dims(input, axis=-2), gp.expand_dims(weight, axis=-2), bias,
               (1, s[0]), pad_, (1, d[0]), groups)
    return gp.squeeze(y, axis=-2)


def _pool_setup(input, kernel_size, stride, padding, dilation, ceil_mode, op):
    _check_float(input, op)
    if input.ndim not in (3, 4):
        raise ValueError(f"{op}: expected a 3-D or 4-D input, got shape {input.shape}")
    k = _pair(kernel_size, 2, "kernel_size", op)
    s = k if stride is None or stride == () else _pair(stride, 2, "stride", op)
    p = _pair(padding, 2, "padding", op)
    d = _pair(dilation, 2, "dilation", op)
    _check_geometry(op, s, d, p)
    if any(ki < 1 for ki in k):
        raise ValueError(f"{op}: kernel_size must be positive, got {k!r}")
    if any(pi * 2 > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{op}: padding {p} must be at most half of kernel_size {k}")
    h, w = input.shape[-2:]
    ho = _out_size(h, k[0], s[0], p[0], d[0], ceil_mode, op)
    wo = _out_size(w, k[1], s[1], p[1], d[1], ceil_mode, op)
    # right padding so the (ceil_mode) last window fits
    ph = max(0, (ho - 1) * s[0] + d[0] * (k[0] - 1) + 1 - h - p[0])
    pw = max(0, (wo - 1) * s[1] + d[1] * (k[1] - 1) + 1 - w - p[1])
    x = input if input.ndim == 4 else gp.expand_dims(input, axis=0)
    return x, k, s, d, (ho, wo), p, (ph, pw)


def _pool_windows(x, k, s, d, out, p, extra, fill):
    return _im2col(x, k, s, d, (p[0], extra[0], p[1], extra[1]), fill, out)


def max_pool2d(input: Array, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: int | tuple[int, int] = 0, dilation: int | tuple[int, int] = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Array:
    """Maximum over each window of (N, C, H, W) (padding counts as -inf). With
    ``return_indices`` also torch's int64 flat position of each maximum in its input plane
    (max_pool2d_with_indices)."""
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    x, k, s, d, out, p, extra = _pool_setup(input, kernel_size, stride, padding, dilation, ceil_mode,
                                            "max_pool2d")
    y = _MaxPool2d.apply(x, geom=(k, s, d, (p[0], extra[0], p[1], extra[1])), out=out)
    return y if input.ndim == 4 else gp.squeeze(y, axis=0)


class _MaxPool2d(Function):
    """max_pool2d as one node: the forward keeps each window's argmax, the backward adds the
    gradient there (grilly.array.conv's max_pool2d kernels)."""

    @staticmethod
    def forward(ctx, x, *, geom, out):
        y, ctx.idx = _conv.max_pool2d(x, *geom, out)
        ctx.geom, ctx.size = geom, tuple(x.shape[2:])
        return y

    @staticmethod
    def backward(ctx, g):
        if is_grad_enabled():
            # create_graph: g put on the window argmaxes by a where (a constant one-hot), then a
            # _Col2im node; linear in g, and the argmaxes are locally constant in x
            kk = ctx.geom[0][0] * ctx.geom[0][1]
            ks = gp.reshape(gp.arange(kk, dtype=ctx.idx.dtype, device=g.device), (1, 1, kk, 1, 1))
            hot = gp.expand_dims(ctx.idx, axis=2) == ks
            gcols = gp.where(hot, gp.expand_dims(g, axis=2), 0.0)
            return (_col2im(gcols, *ctx.geom, ctx.size),)
        return (_conv.max_pool2d_backward(g, ctx.idx, *ctx.geom, ctx.size),)


def _check_divisor(divisor_override, op: str) -> None:
    """torch refuses a zero divisor_override (0 would otherwise read as 'not given')."""
    if divisor_override is not None and (isinstance(divisor_override, bool)
                                         or int(divisor_override) == 0):
        raise ValueError(f"{op}: divisor_override must be a non-zero int, got "
                         f"{divisor_override!r}")


def avg_pool2d(input: Array, kernel_size: int | tuple[int, int], stride: int | tuple[int, int] | None = None,
               padding: int | tuple[int, int] = 0, ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Array:
    """Mean over each window of (N, C, H, W)."""
    _check_divisor(divisor_override, "avg_pool2d")
    x, k, s, d, out, p, extra = _pool_setup(input, kernel_size, stride, padding, 1, ceil_mode,
                                            "avg_pool2d")
    total = gp.sum(_pool_windows(x, k, s, d, out, p, extra, 0.0), axis=2)
    if divisor_override:
        y = total / float(divisor_override)
    elif not ceil_mode and (count_include_pad or p == (0, 0)):
        y = total / float(k[0] * k[1])
    else:
        # windows clipped by the ceil_mode overhang (and the padding unless counted) divide by less
        h, w = input.shape[-2:]
        ones = gp.ones((1, 1, h, w), dtype=input.dtype, device=input.device)
        if count_include_pad:
            ones = pad(ones, (p[1], p[1], p[0], p[0]), value=1.0)
            ones = pad(ones, (0, extra[1] - p[1] if extra[1] > p[1] else 0,
                              0, extra[0] - p[0] if extra[0] > p[0] else 0))
        else:
            ones = pad(ones, (p[1], extra[1], p[0], extra[0]))
        hp, wp = h + p[0] + extra[0], w + p[1] + extra[1]
        ones = ones[:, :, :hp, :wp]
        y = total / gp.sum(_conv.im2col(ones, k, s, d, (0, 0, 0, 0), 0.0, out), axis=2)
    return y if input.ndim == 4 else gp.squeeze(y, axis=0)


def max_pool1d(input: Array, kernel_size: int | tuple[int], stride: int | tuple[int] | None = None,
               padding: int | tuple[int] = 0, dilation: int | tuple[int] = 1,
               ceil_mode: bool = False, return_indices: bool = False) -> Array:
    """Maximum over each window of (N, C, L); with ``return_indices`` also the int64 position
    of each maximum (max_pool1d_with_indices)."""
    if return_indices:
        return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    one = lambda v: (1, _pair(v, 1, "argument", "max_pool1d")[0])  # noqa: E731
    pd = (0, _pair(padding, 1, "padding", "max_pool1d")[0])
    y = max_pool2d(gp.expand_dims(input, axis=-2), one(kernel_size),
                   None if stride is None else one(stride), pd,
                   one(dilation), ceil_mode)
    return gp.squeeze(y, axis=-2)


def avg_pool1d(input: Array, kernel_size: int | tuple[int], stride: int | tuple[int] | None = None,
               padding: int | tuple[int] = 0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Array:
    """Mean over each window of (N, C, L)."""
    one = lambda v: (1, _pair(v, 1, "argument", "avg_pool1d")[0])  # noqa: E731
    pd = (0, _pair(padding, 1, "padding", "avg_pool1d")[0])
    y = avg_pool2d(gp.expand_dims(input, axis=-2), one(kernel_size),
                   None if stride is None else one(stride), pd,
                   ceil_mode, count_include_pad)
    return gp.squeeze(y, axis=-2)


def _adaptive_mean(x, axis: int, out: int):
    n = x.shape[axis]
    if n % out == 0:
        shp = x.shape[:axis] + (out, n // out) + x.shape[axis + 1:]
        return gp.mean(gp.reshape(x, shp), axis=axis + 1)
    parts = []
    for i in range(out):
        lo, hi = (i * n) // out, -((-(i + 1) * n) // out)
        key = (slice(None),) * axis + (slice(lo, hi),)
        parts.append(gp.mean(x[key], axis=axis, keepdims=True))
    return gp.concat(parts, axis=axis)


def adaptive_avg_pool2d(input: Array, output_size: int | None | tuple[int | None, int | None]) -> Array:
    """Mean pooling of (N, C, H, W) to ``output_size`` (None keeps that size)."""
    oh, ow = _adaptive_sizes(input, 2, output_size, "adaptive_avg_pool2d")
    return _adaptive_mean(_adaptive_mean(input, input.ndim - 2, oh), input.ndim - 1, ow)


def flatten(input: Array, start_dim: int = 1, end_dim: int = -1) -> Array:
    """Merge axes start_dim..end_dim into one."""
    nd = input.ndim
    s, e = start_dim % max(nd, 1), end_dim % max(nd, 1)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    return gp.reshape(input, input.shape[:s] + (-1,) + input.shape[e + 1:])


# ---- attention ----------------------------------------------------------------------------
def _mask_bias(attn_mask, dtype):
    """A boolean mask (True = attend) or an additive float mask, as an additive array."""
    if attn_mask is None:
        return None
    if attn_mask.dtype == gp.bool:
        return gp.where(attn_mask, 0.0, gp.asarray(-math.inf, dtype=dtype, device=attn_mask.device))
    return attn_mask


def _causal(lq, lk, dtype, device):
    r = gp.expand_dims(gp.arange(lq, device=device), axis=1)
    c = gp.expand_dims(gp.arange(lk, device=device), axis=0)
    return gp.where(c <= r, gp.asarray(0.0, dtype=dtype, device=device),
                    gp.asarray(-math.inf, dtype=dtype, device=device))


def _sdpa_composed(query, key, value, bias, dropout_p, scale):
    """Attention from differentiable namespace ops: for an additive mask that needs a gradient."""
    s = gp.matmul(query, gp.matrix_transpose(key)) * scale + bias
    # a row with no visible key gives 0, as torch's attention (its safe softmax), not NaN
    live = gp.any(s != -math.inf, axis=-1, keepdims=True)
    a = gp.where(live, softmax(gp.where(live, s, 0.0), dim=-1), 0.0)
    if dropout_p > 0.0:
        a = dropout(a, dropout_p, True)
    return gp.matmul(a, value)


def _lead(batch: tuple) -> tuple:
    """Batch axes as the kernels' (N, H): the last one is H, the others merge into N."""
    return (math.prod(batch[:-1]), batch[-1]) if batch else (1, 1)


def _as4(x: Array, batch: tuple) -> Array:
    """``x`` broadcast over ``batch`` and seen as (N, H, rows, cols)."""
    if tuple(x.shape[:-2]) != batch:
        x = gp.broadcast_to(x, batch + tuple(x.shape[-2:]))
    return gp.reshape(x, _lead(batch) + tuple(x.shape[-2:]))


def _bias4(bias: Array, batch: tuple, lq: int, sk: int, op: str) -> Array:
    """An additive mask broadcastable to batch + (L, S), as (Nb, Hb, Lb, Sb): each axis 1 or
    full, so a mask shared over heads or batch is never copied out."""
    shp = tuple(bias.shape)
    full = batch + (lq, sk)
    if len(shp) > len(full) or any(d not in (1, f) for d, f in zip(shp[::-1], full[::-1])):
        raise ValueError(f"{op}: attn_mask of shape {shp} does not broadcast to {full}")
    shp = (1,) * (len(full) - len(shp)) + shp
    lead = shp[:-3]
    if len(batch) >= 2 and any(d != 1 for d in lead) and lead != batch[:-1]:
        shp = batch[:-1] + shp[-3:]          # mixed broadcast over the merged axes: spell it out
        bias = gp.broadcast_to(gp.reshape(bias, (1,) * (len(full) - bias.ndim) + tuple(bias.shape)),
                               shp)
    nb = math.prod(shp[:-3]) if len(batch) >= 2 else 1
    hb = shp[-3] if batch else 1
    return gp.reshape(bias, (nb, hb) + shp[-2:])


class _Attention(Function):
    """Attention as one node: the fused kernel each way (grilly.array.attention), which keeps
    the output and the row logsumexp and recomputes the probabilities in the backward."""

    @staticmethod
    def forward(ctx, q, k, v, bias, drop, *, causal, scale, block):
        out, lse = _att.attention(q, k, v, bias, drop, causal=causal, scale=scale, block=block)
        if bias is not None:
            # a row with no visible key (lse -inf; only a mask makes one: a causal row sees
            # its first key): the kernels leave NaN, torch's attention gives 0 (so a fully
            # padded query does not turn the next layer's values into NaN); the kernels'
            # backward already gives such a row no gradient
            out = gp.where(gp.expand_dims(lse == -math.inf, axis=-1),
                           gp.zeros((), dtype=out.dtype, device=out.device), out)
        ctx.save_for_backward(q, k, v, bias, drop, out, lse)
        ctx.geom = (causal, scale, block)
        return out

    @staticmethod
    def backward(ctx, g):
        q, k, v, bias, drop, out, lse = ctx.saved_tensors
        causal, scale, block = ctx.geom
        need = ctx.needs_input_grad[:3]
        if is_grad_enabled():   # create_graph: the fused kernel has no gradient of its own
            dq, dk, dv = _attention_grads(g, q, k, v, bias, drop, causal, scale, need)
        else:
            dq, dk, dv = _att.attention_backward(g, q, k, v, bias, drop, out, lse,
                                                 causal=causal, scale=scale, block=block,
                                                 need=need)
        return dq, dk, dv, None, None


def _attention_grads(g, q, k, v, bias, drop, causal, scale, need) -> tuple:
    """The gradients (q, k, v) of attention in differentiable ops, the (L, S) probabilities
    recomputed whole (O(L*S) memory on this create_graph path): dV = (P drop)^T g,
    dS = P (g v^T drop - rowsum(P g v^T drop)), dQ = dS k scale, dK = dS^T q scale."""
    s = gp.matmul(q, gp.matrix_transpose(k)) * scale
    if bias is not None:
        s = s + bias
    if causal:
        s = s + _causal(q.shape[-2], k.shape[-2], s.dtype, s.device)
    # rows with no visible key: their output is 0 (no gradient reaches q, k or v from them)
    live = gp.any(s != -math.inf, axis=-1, keepdims=True)
    p = gp.where(live, softmax(gp.where(live, s, 0.0), dim=-1), 0.0)
    dp = gp.matmul(g, gp.matrix_transpose(v))
    if drop is not None:
        dp = dp * drop
    ds = p * (dp - gp.sum(p * dp, axis=-1, keepdims=True))
    dq = gp.matmul(ds, k) * scale if need[0] else None
    dk = gp.matmul(gp.matrix_transpose(ds), q) * scale if need[1] else None
    dv = gp.matmul(gp.matrix_transpose(p if drop is None else p * drop), g) if need[2] else None
    return dq, dk, dv


def _attend(op: str, query: Array, key: Array, value: Array, attn_mask, dropout_p: float,
            is_causal: bool, scale: float | None, block_size: int, enable_gqa: bool = False):
    """The checks and layout shared by scaled_dot_product_attention and flash_attention2."""
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: give attn_mask or is_causal, not both")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{op}: dropout_p must be in [0, 1], got {dropout_p}")
    for name, x in (("query", query), ("key", key), ("value", value)):
        _check_float(x, op, name)
        if x.ndim < 2:
            raise ValueError(f"{op}: {name} needs shape (..., length, features), got {x.shape}")
    if key.shape[-1] != query.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ValueError(f"{op}: expected query (..., L, E), key (..., S, E) and value "
                         f"(..., S, Ev), got {query.shape}, {key.shape} and {value.shape}")
    if key.shape[-2] == 0:
        raise ValueError(f"{op}: key has no positions (S == 0)")
    if enable_gqa and query.ndim >= 3 and key.ndim >= 3 and key.shape[-3] != query.shape[-3]:
        hq, hk = query.shape[-3], key.shape[-3]
        if hk == 0 or hq % hk:
            raise ValueError(f"{op}: enable_gqa needs query heads ({hq}) to be a multiple of "
                             f"key heads ({hk})")
        key, value = (gp.repeat(t, hq // hk, axis=-3) for t in (key, value))
    dt = gp.result_type(query, key, value)
    query, key, value = (t if t.dtype == dt else gp.astype(t, dt) for t in (query, key, value))
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    bias = _mask_bias(attn_mask, dt)
    if bias is not None and bias.dtype != dt:
        bias = gp.astype(bias, dt)
    if bias is not None and bias.requires_grad:
        return _sdpa_composed(query, key, value, bias, dropout_p, scale)
    lq, sk = query.shape[-2], key.shape[-2]
    batch = tuple(gp.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2]))
    if bias is not None:
        bias = _bias4(bias, batch, lq, sk, op)
    drop = None
    if dropout_p > 0.0:
        # the draws of dropout() on the (..., L, S) probabilities: the same seed, the same mask
        mult = 0.0 if dropout_p == 1.0 else 1.0 / (1.0 - dropout_p)
        drop = gp.reshape(_keep_scale(batch + (lq, sk), dropout_p, mult, dt, query.device),
                          _lead(batch) + (lq, sk))
    out = _Attention.apply(_as4(query, batch), _as4(key, batch), _as4(value, batch), bias, drop,
                           causal=bool(is_causal), scale=scale, block=block_size)
    return gp.reshape(out, batch + (lq, value.shape[-1]))


def scaled_dot_product_attention(query: Array, key: Array, value: Array, attn_mask: Array | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: float | None = None, enable_gqa: bool = False) -> Array:
    """softmax(q k^T * scale + mask) v over (..., L, E) queries and (..., S, E) keys, with
    dropout on the probabilities: one fused kernel each way (grilly.array.attention)."""
    query, key, value = _dispatch.autocast("scaled_dot_product_attention", query, key, value)
    return _attend("scaled_dot_product_attention", query, key, value, attn_mask, dropout_p,
                   is_causal, scale, 128, enable_gqa)


def flash_attention2(query: Array, key: Array, value: Array, attn_mask: Array | None = None,
                     is_causal: bool = False, scale: float | None = None,
                     block_size: int = 128) -> Array:
    """Attention with keys in blocks of ``block_size`` and an online softmax (FlashAttention-2):
    beyond the inputs and a boolean mask's additive form, peak memory O(L * block_size)
    instead of O(L * S), in the forward and in the backward."""
    query, key, value = _dispatch.autocast("flash_attention2", query, key, value)
    if not isinstance(block_size, int) or isinstance(block_size, bool):
        raise TypeError(f"flash_attention2: block_size must be an int, got {type(block_size).__name__}")
    if block_size < 1:
        raise ValueError(f"flash_attention2: block_size must be positive, got {block_size}")
    return _attend("flash_attention2", query, key, value, attn_mask, 0.0, is_causal, scale,
                   block_size)


# ---- losses -------------------------------------------------------------------------------
__all__ += ["multi_head_attention_forward"]


def _mha_mask(mask, dtype, who: str, name: str):
    """A bool mask (True = blocked) or a float mask as an additive float array."""
    if mask is None:
        return None
    if not isinstance(mask, Array) or not gp.isdtype(mask.dtype, ("bool", "real floating")):
        raise TypeError(f"{who}: {name} must be a bool or floating mask, got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if mask.dtype == gp.bool:
        return gp.where(mask, gp.asarray(-math.inf, dtype=dtype, device=mask.device),
                        gp.asarray(0.0, dtype=dtype, device=mask.device))
    return gp.astype(mask, dtype) if mask.dtype != dtype else mask


def _mha_heads(x: Array, n: int, h: int) -> Array:
    """(n, len, h * d) projections as (n, h, len, d)."""
    return gp.permute_dims(gp.reshape(x, (n, x.shape[1], h, x.shape[2] // h)), (0, 2, 1, 3))


def _mha_static(t: Array, name: str, n: int, h: int, d: int, who: str) -> Array:
    """A static_k / static_v of shape (n * h, S, d) as (n, h, S, d)."""
    if t.ndim != 3 or t.shape[0] != n * h or t.shape[2] != d:
        raise ValueError(f"{who}: {name} must have shape ({n * h}, S, {d}) (batch * heads, "
                         f"source length, head_dim), got {t.shape}")
    return gp.reshape(t, (n, h, t.shape[1], d))


def multi_head_attention_forward(
        query: Array, key: Array, value: Array, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Array | None, in_proj_bias: Array | None, bias_k: Array | None,
        bias_v: Array | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Array,
        out_proj_bias: Array | None, training: bool = True, key_padding_mask: Array | None = None,
        need_weights: bool = True, attn_mask: Array | None = None,
        use_separate_proj_weight: bool = False, q_proj_weight: Array | None = None,
        k_proj_weight: Array | None = None, v_proj_weight: Array | None = None,
        static_k: Array | None = None, static_v: Array | None = None,
        average_attn_weights: bool = True, is_causal: bool = False,
        ) -> tuple[Array, Array | None]:
    """torch's ``F.multi_head_attention_forward``: (attn_output, attn_weights or None) for
    sequence-first (L, N, E) queries and (S, N, kdim|vdim) keys and values (or unbatched
    (L, E), (S, *)), the in-projection packed (in_proj_weight) or separate."""
    return _multi_head_attention(
        "multi_head_attention_forward", query, key, value, embed_dim_to_check, num_heads,
        in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight,
        out_proj_bias, training, key_padding_mask, need_weights, attn_mask,
        use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, static_k,
        static_v, average_attn_weights, is_causal, False)


def _multi_head_attention(who, query, key, value, e_check, h, in_w, in_b, bias_k, bias_v,
                          add_zero_attn, dropout_p, out_w, out_b, training, key_padding_mask,
                          need_weights, attn_mask, separate, q_w, k_w, v_w, static_k, static_v,
                          average_attn_weights, is_causal, batch_first: bool):
    """multi_head_attention_forward and nn.MultiheadAttention: the inputs batch-first or not."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_float(t, who, name)
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ValueError(f"{who}: query, key and value must all be 3-D (batched) or 2-D "
                         f"(unbatched), got shapes {query.shape}, {key.shape} and {value.shape}")
    # self-attention (one array as query, key and value): one GEMM against the packed weight
    same = query is key and key is value
    unbatched = query.ndim == 2
    if unbatched:
        query, key, value = (gp.expand_dims(t, axis=0 if batch_first else 1)
                             for t in (query, key, value))
        if key_padding_mask is not None:
            key_padding_mask = gp.expand_dims(key_padding_mask, axis=0)
    if not batch_first:
        query, key, value = (gp.permute_dims(t, (1, 0, 2)) for t in (query, key, value))
    n, lq, e = query.shape
    if e != e_check:
        raise ValueError(f"{who}: query has embedding size {e}, expected {e_check}")
    if e % h:
        raise ValueError(f"{who}: embed_dim {e} is not divisible by num_heads {h}")
    d = e // h
    if key.shape[:-1] != value.shape[:-1]:
        raise ValueError(f"{who}: key and value must have the same batch and source length, "
                         f"got {key.shape} and {value.shape}")
    if key.shape[0] != n:
        raise ValueError(f"{who}: query, key and value must have the same batch size, got "
                         f"{n} and {key.shape[0]}")
    if separate:
        if q_w is None or k_w is None or v_w is None:
            raise ValueError(f"{who}: use_separate_proj_weight=True needs q_proj_weight, "
                             "k_proj_weight and v_proj_weight")
        ws = (q_w, k_w, v_w)
    else:
        if in_w is None:
            raise ValueError(f"{who}: in_proj_weight is None (pass use_separate_proj_weight="
                             "True with q/k/v_proj_weight)")
        ws = (in_w[:e], in_w[e:2 * e], in_w[2 * e:])
    for t, w, name in ((key, ws[1], "key"), (value, ws[2], "value")):
        if t.shape[-1] != w.shape[-1]:
            raise ValueError(f"{who}: {name} has feature size {t.shape[-1]}, expected "
                             f"{w.shape[-1]} ({name[0]}dim)")
    bs = (None,) * 3 if in_b is None else (in_b[:e], in_b[e:2 * e], in_b[2 * e:])
    if same and not separate and static_k is None and static_v is None:
        # the split's backward is one stack, where slices of the weight each took a zeroed
        # gradient, a copy into it and an add
        p = gp.reshape(linear(query, in_w, in_b), (n, lq, 3, h, d))
        q, k, v = (gp.permute_dims(t, (0, 2, 1, 3)) for t in gp.unstack(p, axis=2))
    else:
        q = _mha_heads(linear(query, ws[0], bs[0]), n, h)
        k = (_mha_static(static_k, "static_k", n, h, d, who) if static_k is not None
             else _mha_heads(linear(key, ws[1], bs[1]), n, h))
        v = (_mha_static(static_v, "static_v", n, h, d, who) if static_v is not None
             else _mha_heads(linear(value, ws[2], bs[2]), n, h))
        if k.shape[2] != v.shape[2]:
            raise ValueError(f"{who}: static_k and the values (or static_v and the keys) "
                             f"differ in source length: {k.shape[2]} and {v.shape[2]}")
    s_len = k.shape[2]

    # bias_k / bias_v and add_zero_attn: extra key/value rows after the source, which every
    # query may attend (torch pads the masks with unmasked columns for them)
    extra = []
    if (bias_k is None) != (bias_v is None):
        raise ValueError(f"{who}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ValueError(f"{who}: bias_k / bias_v cannot be added to static_k / static_v")
        extra.append(tuple(gp.broadcast_to(gp.permute_dims(gp.reshape(b, (1, 1, h, d)),
                                                           (0, 2, 1, 3)), (n, h, 1, d))
                           for b in (bias_k, bias_v)))
    if add_zero_attn:
        z = gp.zeros((n, h, 1, d), dtype=k.dtype, device=k.device)
        extra.append((z, z))
    if extra:
        k = gp.concat([k, *(ek for ek, _ in extra)], axis=2)
        v = gp.concat([v, *(ev for _, ev in extra)], axis=2)

    # a causal mask alone goes to the attention kernels as a flag (no (L, S) bias is made)
    causal = (is_causal and attn_mask is None and key_padding_mask is None and not need_weights
              and not extra)
    if key_padding_mask is not None and tuple(key_padding_mask.shape) != (n, s_len):
        raise ValueError(f"{who}: key_padding_mask must have shape {(n, s_len)} (batch, source "
                         f"length), got {key_padding_mask.shape}")
    # (an unbatched query's (heads, L, S) mask is the batched (1 * heads, L, S) one)
    if attn_mask is not None and tuple(attn_mask.shape) not in ((lq, s_len), (n * h, lq, s_len)):
        raise ValueError(f"{who}: attn_mask must have shape {(lq, s_len)} or "
                         f"{(n * h, lq, s_len)}, got {attn_mask.shape}")
    bias = None
    if attn_mask is not None:
        am = _mha_mask(attn_mask, q.dtype, who, "attn_mask")
        bias = gp.reshape(am, (n, h, lq, s_len)) if am.ndim == 3 else am
    elif is_causal and not causal:
        bias = _causal(lq, s_len, q.dtype, q.device)
    if key_padding_mask is not None:
        kp = _mha_mask(key_padding_mask, q.dtype, who, "key_padding_mask")
        kp = gp.reshape(kp, (n, 1, 1, s_len))
        bias = kp if bias is None else bias + kp
    if extra and bias is not None:
        pad = gp.zeros(bias.shape[:-1] + (len(extra),), dtype=bias.dtype, device=bias.device)
        bias = gp.concat([bias, pad], axis=-1)

    p_drop = dropout_p if training else 0.0
    weights = None
    if need_weights:
        sc = gp.matmul(q, gp.matrix_transpose(k)) * (1.0 / math.sqrt(d))
        a = softmax(sc if bias is None else sc + bias, dim=-1)
        if p_drop > 0:
            a = dropout(a, p_drop, True)
        out = gp.matmul(a, v)
        weights = gp.mean(a, axis=1) if average_attn_weights else a
    elif p_drop > 0:
        out = scaled_dot_product_attention(q, k, v, bias, p_drop, is_causal=causal)
    else:
        out = flash_attention2(q, k, v, bias, is_causal=causal)
    out = linear(gp.reshape(gp.permute_dims(out, (0, 2, 1, 3)), (n, lq, e)), out_w, out_b)
    if not batch_first:
        out = gp.permute_dims(out, (1, 0, 2))
    if unbatched:
        out = gp.squeeze(out, axis=0 if batch_first else 1)
        weights = None if weights is None else gp.squeeze(weights, axis=0)
    return out, weights


def _check_same_shape(input, target, op):
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: input shape {input.shape} and target shape {target.shape} differ")


def _target_like(input, target, floats: bool = False):
    """``target`` in ``input``'s floating dtype where torch's promotion keeps that dtype: an
    integer or bool target (a float32 input with int64 labels gives a float32 loss, not NumPy's
    float64), and with ``floats`` any target (huber_loss casts as torch's does)."""
    if (isinstance(input, Array) and isinstance(target, Array) and target.dtype != input.dtype
            and gp.isdtype(input.dtype, "real floating")
            and not gp.isdtype(target.dtype, "complex floating")
            and (floats or not gp.isdtype(target.dtype, "real floating"))):
        return gp.astype(target, input.dtype)
    return target


def mse_loss(input: Array, target: Array, reduction: str = "mean") -> Array:
    """Mean squared error."""
    _check_same_shape(input, target, "mse_loss")
    d = input - _target_like(input, target)
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input: Array, target: Array, reduction: str = "mean") -> Array:
    """Mean absolute error."""
    _check_same_shape(input, target, "l1_loss")
    return _reduce(gp.abs(input - _target_like(input, target)), reduction, "l1_loss")


def smooth_l1_loss(input: Array, target: Array, reduction: str = "mean",
                   beta: float = 1.0) -> Array:
    """0.5 d^2 / beta where |d| < beta, |d| - beta / 2 elsewhere."""
    _check_same_shape(input, target, "smooth_l1_loss")
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = gp.abs(input - _target_like(input, target))
    if beta == 0.0:
        return _reduce(d, reduction, "smooth_l1_loss")
    return _reduce(gp.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta), reduction, "smooth_l1_loss")


def huber_loss(input: Array, target: Array, reduction: str = "mean",
               delta: float = 1.0) -> Array:
    """0.5 d^2 where |d| < delta, delta (|d| - delta / 2) elsewhere."""
    _check_same_shape(input, target, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = gp.abs(input - _target_like(input, target, floats=True))
    return _reduce(gp.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta)), reduction, "huber_loss")


def _check_class_weight(input, weight, op: str) -> None:
    """``weight`` (None, or one value per class of ``input``), checked before it is broadcast."""
    if weight is None:
        return
    c = input.shape[1 if input.ndim >= 2 else 0]
    if tuple(weight.shape) != (c,):
        raise ValueError(f"{op}: weight must hold one value per class, shape ({c},), got shape "
                         f"{tuple(weight.shape)}")


def _class_bshape(input, weight):
    return (1, weight.shape[0]) + (1,) * (input.ndim - 2) if input.ndim >= 2 else (weight.shape[0],)


def _onehot_targets(input, target, op):
    """Class indices (N, d...) as a float one-hot (N, C, d...); ignored/out-of-range rows are 0."""
    cax = 1 if input.ndim >= 2 else 0
    exp_shape = input.shape[:cax] + input.shape[cax + 1:]
    if tuple(target.shape) != tuple(exp_shape):
        raise ValueError(f"{op}: target shape {target.shape} does not match input shape {input.shape} "
                         f"(expected {exp_shape})")
    c = input.shape[cax]
    cls = gp.reshape(gp.arange(c, dtype=target.dtype, device=target.device),
                     (c,) + (1,) * (input.ndim - cax - 1))
    return gp.astype(gp.expand_dims(target, axis=cax) == cls, input.dtype), cax


def _nan_if_out_of_range(loss: Array, target: Array, c: int, ignore_index=None,
                         low: int = 0) -> Array:
    """``loss`` times NaN where a class index of ``target`` is outside [low, c) and is not
    ``ignore_index``, else ``loss``. torch raises IndexError ('Target 4 is out of bounds');
    that check reads the targets back to the host (a sync each step, and a split jit graph),
    so here the loss and its gradient turn NaN instead (as BCELoss's probabilities outside
    [0, 1]), where the bad row was silently dropped and an off-by-one label trained on."""
    bad = gp.logical_or(target < low, target >= c)
    if ignore_index is not None:
        bad = gp.logical_and(bad, target != ignore_index)
    one = gp.ones((), dtype=loss.dtype, device=loss.device)
    return loss * gp.where(gp.any(bad), gp.full((), math.nan, dtype=loss.dtype,
                                                device=loss.device), one)


def nll_loss(input: Array, target: Array, weight: Array | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Array:
    """-input[n, target[n]] (weighted), from log-probabilities (N, C, d...) and class indices."""
    _check_float(input, "nll_loss")
    return _nll_loss(input, target, weight, ignore_index, reduction, "nll_loss")


def _nll_loss(input, target, weight, ignore_index, reduction, op: str):
    """nll_loss, its errors naming ``op`` (cross_entropy's own)."""
    if not gp.isdtype(target.dtype, "integral"):
        raise TypeError(f"{op}: target must hold integer class indices, got {target.dtype}")
    _check_class_weight(input, weight, op)
    oh, cax = _onehot_targets(input, target, op)
    if ignore_index is not None and 0 <= ignore_index < input.shape[cax]:
        keep = gp.astype(gp.expand_dims(target != ignore_index, axis=cax), input.dtype)
        oh = oh * keep
    counted = oh
    if weight is not None:
        oh = oh * gp.reshape(weight, _class_bshape(input, weight))
    # the targets' entries only: another class's -inf (a masked vocabulary) times 0 is NaN
    input = gp.where(counted != 0, input, gp.zeros((), dtype=input.dtype, device=input.device))
    if reduction == "mean":
        loss = -_weighted_mean(input, counted, oh, gp.sum(oh))
    else:
        loss = _reduce(-gp.sum(input * oh, axis=cax), reduction, op)
    return _nan_if_out_of_range(loss, target, input.shape[cax], ignore_index)


def _weighted_mean(x: Array, counted: Array, w: Array, total: Array) -> Array:
    """sum(x * w) / total over the entries ``counted``, as torch's weighted means: a batch
    whose every target is ignored (total == 0) gives NaN but a zero gradient, where
    sum / total would give its gradient 0 * inf = NaN."""
    zero = gp.zeros((), dtype=w.dtype, device=w.device)
    share = gp.where(counted != 0, w / total, zero)       # torch's gradient factors
    nan = gp.where(total == 0, gp.asarray(math.nan, dtype=w.dtype, device=w.device), zero)
    return gp.sum(x * share) + nan


class _CrossEntropy(Function):
    """Mean or summed cross entropy of (N, C) logits against class indices (rows at
    ignore_index drop out, other out-of-range rows make it NaN) as one node: one fused kernel
    each way."""

    @staticmethod
    def forward(ctx, x, target, *, mean, ignore_index):
        ctx.save_for_backward(x, target)
        ctx.mean, ctx.ignore_index = mean, ignore_index
        return _fused.cross_entropy(x, target, mean=mean, ignore_index=ignore_index)

    @staticmethod
    def backward(ctx, g):
        x, target = ctx.saved_tensors
        if is_grad_enabled():
            # create_graph: (softmax(x) * counted - onehot) * g (/ the count) in namespace ops,
            # softmax recorded with its own rule
            return _fused.composed_cross_entropy_backward(x, target, g, ctx.mean,
                                                          ctx.ignore_index), None
        return _fused.cross_entropy_backward(x, target, g, mean=ctx.mean,
                                             ignore_index=ctx.ignore_index), None


def cross_entropy(input: Array, target: Array, weight: Array | None = None,
                  ignore_index: int = -100, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Array:
    """log_softmax over the class axis then NLL; ``target`` holds class indices or probabilities."""
    input, target = _dispatch.autocast("cross_entropy", input, target)
    _check_float(input, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    _check_class_weight(input, weight, "cross_entropy")
    cax = 1 if input.ndim >= 2 else 0
    c = input.shape[cax]
    if (input.ndim == 2 and weight is None and label_smoothing == 0 and reduction != "none"
            and not 0 <= ignore_index < c and gp.isdtype(target.dtype, "integral")
            and target.shape == input.shape[:1]):
        # (the kernels make the loss NaN for a target out of range that is not ignore_index)
        return _CrossEntropy.apply(input, target, mean=reduction == "mean",
                                   ignore_index=ignore_index)
    logp = log_softmax(input, dim=cax)
    wb = None if weight is None else gp.reshape(weight, _class_bshape(input, weight))
    if gp.isdtype(target.dtype, "real floating"):
        if tuple(target.shape) != tuple(input.shape) and tuple(target.shape) == (
                input.shape[:cax] + input.shape[cax + 1:]):
            raise TypeError(f"cross_entropy: target of shape {tuple(target.shape)} holds class "
                            f"indices, which must be integers, got {target.dtype}; class "
                            f"probabilities would have the input's shape {tuple(input.shape)}")
        _check_same_shape(input, target, "cross_entropy")
        if ignore_index >= 0:
            raise ValueError(f"cross_entropy: ignore_index ({ignore_index}) applies to class-index "
                             "targets, not to class probabilities (as torch)")
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / c
        t = target if wb is None else target * wb
        loss = -gp.sum(logp * t, axis=cax)
        if reduction == "mean":
            return gp.sum(loss) / float(max(input.size // c, 1))
        return _reduce(loss, reduction, "cross_entropy")
    exp_shape = input.shape[:cax] + input.shape[cax + 1:]
    if tuple(target.shape) != tuple(exp_shape):
        raise ValueError(f"cross_entropy: target shape {target.shape} does not match input shape "
                         f"{input.shape} (expected {exp_shape} class indices or {input.shape} "
                         "probabilities)")
    nll = _nll_loss(logp, target, weight, ignore_index, reduction, "cross_entropy")
    if label_smoothing == 0:
        return nll
    oh, _ = _onehot_targets(input, target, "cross_entropy")
    valid = gp.astype(target != ignore_index, input.dtype)
    smooth = -gp.sum(logp if wb is None else logp * wb, axis=cax)
    if reduction == "mean":
        denom = gp.sum(valid) if wb is None else gp.sum(oh * wb * gp.expand_dims(valid, axis=cax))
        smooth = _weighted_mean(smooth, valid, valid, denom)
    else:
        smooth = smooth * valid
        if reduction == "sum":
            smooth = gp.sum(smooth)
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / c)


def linear_cross_entropy(input: Array, linear_weight: Array, target: Array, *,
                         linear_bias: Array | None = None, weight: Array | None = None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None) -> Array:
    """cross_entropy(linear(input, linear_weight, linear_bias), target) (torch 2.13's
    F.linear_cross_entropy, its reference path): ``linear_weight`` (C, d..., in_features)
    gives logits (N, C, d...); ``ignore_index`` None means -100 for class indices."""
    op = "linear_cross_entropy"
    if options is not None:
        # torch's chunked evaluation (a memory saving, same values): not implemented here
        raise NotImplementedError(f"{op}: options (torch's chunked evaluation) is not supported; "
                                  "pass options=None")
    _check_float(input, op)
    _check_float(linear_weight, op, "linear_weight")
    if input.ndim not in (1, 2):
        raise ValueError(f"{op}: expected input with 1 or 2 dimensions, got shape {input.shape}")
    if linear_weight.ndim < 2:
        raise ValueError(f"{op}: expected linear_weight with at least 2 dimensions, got shape "
                         f"{linear_weight.shape}")
    k = input.shape[-1]
    if linear_weight.shape[-1] != k:
        raise ValueError(f"{op}: input and linear_weight must end in the same in_features, got "
                         f"shapes {input.shape} and {linear_weight.shape}")
    c, out = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (c, *out):
        raise ValueError(f"{op}: expected linear_bias of shape {(c, *out)}, got "
                         f"{tuple(linear_bias.shape)}")
    if out and input.ndim == 1:
        raise ValueError(f"{op}: a K-dimensional loss (linear_weight of shape "
                         f"{linear_weight.shape}) needs batched (N, {k}) input, got shape "
                         f"{input.shape}")
    logits_shape = (*input.shape[:-1], c, *out)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise ValueError(f"{op}: ignore_index cannot be given with class-probability targets")
    rows = c * math.prod(out)
    w = gp.reshape(linear_weight, (rows, k)) if out else linear_weight
    b = linear_bias if linear_bias is None or not out else gp.reshape(linear_bias, (rows,))
    logits = gp.reshape(linear(input, w, b), logits_shape)
    return cross_entropy(logits, target, weight, -100 if ignore_index is None else ignore_index,
                         reduction, label_smoothing)


class _BinaryCrossEntropy(Function):
    """-(y log p + (1 - y) log(1 - p)) elementwise, each log clamped at -100, with torch's
    gradient (p - y) / max(p (1 - p), 1e-12): finite where p is 0 or 1, where the clamped
    logs' composed gradient is 0 * inf = nan."""

    @staticmethod
    def forward(ctx, p, y):
        lp = gp.maximum(gp.log(p), -100.0)
        lq = gp.maximum(gp.log1p(-p), -100.0)     # log(1 - p) without 1 - p's rounding
        ctx.save_for_backward(p, y, lp, lq)
        return -(y * lp + (1.0 - y) * lq)

    @staticmethod
    def backward(ctx, g):
        p, y, lp, lq = ctx.saved_tensors
        need = ctx.needs_input_grad
        gp_ = g * (p - y) / gp.maximum(p * (1.0 - p), 1e-12) if need[0] else None
        gy = g * (lq - lp) if need[1] else None
        return gp_, gy


def binary_cross_entropy(input: Array, target: Array, weight: Array | None = None,
                         reduction: str = "mean") -> Array:
    """-(y log p + (1 - y) log(1 - p)), each log clamped at -100 as in PyTorch."""
    _check_float(input, "binary_cross_entropy")
    _check_float(target, "binary_cross_entropy", "target")
    _check_same_shape(input, target, "binary_cross_entropy")
    loss = _BinaryCrossEntropy.apply(input, target)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input: Array, target: Array, weight: Array | None = None,
                                     reduction: str = "mean", pos_weight: Array | None = None) -> Array:
    """Sigmoid + binary cross entropy in one numerically stable expression."""
    _check_float(input, "binary_cross_entropy_with_logits")
    _check_float(target, "binary_cross_entropy_with_logits", "target")
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    sp = gp.maximum(-input, 0.0) + gp.log1p(gp.exp(-gp.abs(input)))  # softplus(-x)
    if pos_weight is not None:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
    else:
        loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def matmul(input: Array, other: Array) -> Array:
    """``input @ other`` (the seed's ``F.matmul``)."""
    return gp.matmul(input, other)


def attention_scores(query: Array, key: Array, scale: float | None = None) -> Array:
    """``query @ key^T * scale`` (default 1 / sqrt(head dim)): attention logits before softmax."""
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    return gp.matmul(query, gp.matrix_transpose(key)) * scale


def _accepts_array_likes(fn):
    """``fn`` taking numpy arrays, lists and scalars for its positional Array arguments too
    (the seed's functional API): they become Arrays on the device of the first Array argument,
    else on the default device."""
    import functools

    likes = (_np.ndarray, _np.generic, list)

    @functools.wraps(fn)
    def wrapped(*args, **kw):
        for a in args:
            if type(a) is not Array and isinstance(a, likes):
                break
        else:   # the common case: nothing to convert
            return fn(*args, **kw)
        dev = next((a.device for a in args if isinstance(a, Array)), None)
        return fn(*(gp.asarray(a, device=dev) if isinstance(a, likes) else a for a in args),
                  **kw)
    return wrapped


for _name in ("linear", "relu", "relu6", "leaky_relu", "gelu", "silu", "elu", "tanh", "sigmoid",
              "softplus", "softmax", "log_softmax", "layer_norm", "rms_norm",
              "scaled_dot_product_attention", "flash_attention2", "matmul", "attention_scores",
              "mse_loss", "l1_loss", "cross_entropy", "nll_loss", "embedding", "dropout"):
    globals()[_name] = _accepts_array_likes(globals()[_name])
del _name


# ---- transposed and 3-D convolution -------------------------------------------------------
def _transposed_geometry(op: str, n: int, input, weight, stride, padding, output_padding, groups,
                         dilation) -> tuple:
    """The checked (stride, padding, output_padding, dilation, output size) of a transposed
    convolution of ``n`` spatial axes: input (N, C_in, *S), weight (C_in, C_out/groups, *K)."""
    if weight.ndim != n + 2:
        raise ValueError(f"{op}: weight must be {n + 2}-D (in_channels, out_channels/groups, "
                         f"*kernel), got shape {weight.shape}")
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a tuple of {n} ints, got {padding!r}")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    c = input.shape[1]
    if weight.shape[0] != c or c % groups:
        raise ValueError(f"{op}: weight of shape {weight.shape} expects input with "
                         f"{weight.shape[0]} channels (divisible by groups={groups}), got "
                         f"{c} channels")
    s, p = _pair(stride, n, "stride", op), _pair(padding, n, "padding", op)
    op_, d = _pair(output_padding, n, "output_padding", op), _pair(dilation, n, "dilation", op)
    _check_geometry(op, s, d, p)
    if any(o < 0 or (o >= si and o >= di) for o, si, di in zip(op_, s, d)):
        raise ValueError(f"{op}: output_padding {op_} must be non-negative and smaller than "
                         f"either stride {s} or dilation {d}")
    out = tuple((i - 1) * si - 2 * pi + di * (k - 1) + oi + 1 for i, si, pi, di, k, oi in
                zip(input.shape[2:], s, p, d, weight.shape[2:], op_))
    if any(o < 1 for o in out):
        raise ValueError(f"{op}: the output size {out} computed for an input of "
                         f"{input.shape[2:]} is too small")
    return s, p, op_, d, out


def conv_transpose2d(input: Array, weight: Array, bias: Array | None = None,
                     stride: int | tuple[int, int] = 1, padding: int | tuple[int, int] = 0,
                     output_padding: int | tuple[int, int] = 0, groups: int = 1,
                     dilation: int | tuple[int, int] = 1) -> Array:
    """2-D transposed convolution over (N, C_in, H, W) (or (C_in, H, W)) with weight
    (C_in, C_out/groups, KH, KW): the input gradient of conv2d, as torch's."""
    op = "conv_transpose2d"
    _check_float(input, op)
    if input.ndim == 3:
        return gp.squeeze(conv_transpose2d(gp.expand_dims(input, axis=0), weight, bias, stride,
                                           padding, output_padding, groups, dilation), axis=0)
    if input.ndim != 4:
        raise ValueError(f"{op}: expected a 3-D or 4-D input, got shape {input.shape}")
    s, p, _, d, out = _transposed_geometry(op, 2, input, weight, stride, padding, output_padding,
                                           groups, dilation)
    if bias is not None and tuple(bias.shape) != (weight.shape[1] * groups,):
        raise ValueError(f"{op}: bias must have shape ({weight.shape[1] * groups},), got "
                         f"{bias.shape}")
    input, weight, bias = _dispatch.autocast("conv2d", input, weight, bias)
    input, weight, bias = _promoted(input, weight, bias, op="conv_transpose2d")
    return _ConvTranspose2d.apply(input, weight, bias,
                                  geom=(s, d, (p[0], p[0], p[1], p[1]), groups, out))


class _ConvTranspose2d(Function):
    """conv_transpose2d as one node on the conv2d kernels: its forward is conv2d's input
    gradient, its input gradient a conv2d and its weight gradient conv2d's weight gradient
    with the roles of input and output gradient swapped."""

    @staticmethod
    def forward(ctx, x, w, b, *, geom):
        stride, dilation, pads, groups, out = geom
        ctx.save_for_backward(x, w)
        ctx.geom = geom
        co = w.shape[1] * groups
        # conv2d_backward reads only the shape of its input for the input gradient
        shell = gp.empty((x.shape[0], co) + out, dtype=x.dtype, device=x.device)
        y = _conv.conv2d_backward(x, shell, w, stride, dilation, pads, groups,
                                  (True, False, False))[0]
        return y if b is None else y + gp.reshape(b, (1, co, 1, 1))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        stride, dilation, pads, groups, _ = ctx.geom
        need = ctx.needs_input_grad
        size = tuple(x.shape[2:])
        gx = gw = gb = None
        if is_grad_enabled():   # create_graph: differentiable nodes
            if need[0]:
                gx = _Conv2d.apply(g, w, None, geom=(stride, dilation, pads, groups, size))
            if need[1]:
                gw = _conv2d_grads(x, g, w, stride, dilation, pads, groups,
                                   (False, True, False))[1]
        else:
            if need[0]:
                gx = _conv.conv2d(g, w, None, stride, dilation, pads, groups, size)
            if need[1]:
                gw = _conv.conv2d_backward(x, g, w, stride, dilation, pads, groups,
                                           (False, True, False))[1]
        if need[2]:
            gb = gp.sum(g, axis=(0, 2, 3))
        return gx, gw, gb


def conv_transpose1d(input: Array, weight: Array, bias: Array | None = None,
                     stride: int | tuple[int] = 1, padding: int | tuple[int] = 0,
                     output_padding: int | tuple[int] = 0, groups: int = 1,
                     dilation: int | tuple[int] = 1) -> Array:
    """1-D transposed convolution over (N, C_in, L) (or (C_in, L)), through conv_transpose2d
    with a height of 1."""
    op = "conv_transpose1d"
    _check_float(input, op)
    if input.ndim not in (2, 3) or weight.ndim != 3:
        raise ValueError(f"{op}: expected a 2-D or 3-D input and a 3-D weight, got "
                         f"{input.shape} and {weight.shape}")
    # the geometry checked in 1-D terms first (a message naming conv_transpose1d's values)
    _transposed_geometry(op, 1, input if input.ndim == 3 else gp.expand_dims(input, axis=0),
                         weight, stride, padding, output_padding, groups, dilation)
    cout = weight.shape[1] * groups
    if bias is not None and tuple(bias.shape) != (cout,):
        raise ValueError(f"{op}: bias must have shape ({cout},), got {bias.shape}")
    one = lambda v, name, lo: (lo, _pair(v, 1, name, op)[0])  # noqa: E731
    y = conv_transpose2d(gp.expand_dims(input, axis=-2), gp.expand_dims(weight, axis=-2), bias,
                         one(stride, "stride", 1), one(padding, "padding", 0),
                         one(output_padding, "output_padding", 0), groups,
                         one(dilation, "dilation", 1))
    return gp.squeeze(y, axis=-2)


def _depth_pads(op, padding, k, d, s) -> tuple:
    """(before, after) zero padding of each of conv3d's three axes for ``padding``."""
    if padding == "valid":
        return ((0, 0),) * 3
    if padding == "same":
        if s != (1, 1, 1):
            raise ValueError(f"{op}: padding='same' needs stride 1")
        return tuple((di * (ki - 1) // 2, di * (ki - 1) - di * (ki - 1) // 2)
                     for ki, di in zip(k, d))
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be 'same', 'valid', an int or a tuple of 3 ints, "
                         f"got {padding!r}")
    p = _pair(padding, 3, "padding", op)
    _check_geometry(op, s, d, p)
    return tuple((pi, pi) for pi in p)


def conv3d(input: Array, weight: Array, bias: Array | None = None,
           stride: int | tuple[int, int, int] = 1, padding: str | int | tuple[int, int, int] = 0,
           dilation: int | tuple[int, int, int] = 1, groups: int = 1) -> Array:
    """3-D cross-correlation over (N, C, D, H, W) (or (C, D, H, W)) with weight
    (O, C/groups, KD, KH, KW): the depth windows of the input stacked into its channels, then
    one conv2d with the weight's depth folded into its channels."""
    op = "conv3d"
    _check_float(input, op)
    if input.ndim == 4:
        return gp.squeeze(conv3d(gp.expand_dims(input, axis=0), weight, bias, stride, padding,
                                 dilation, groups), axis=0)
    if input.ndim != 5 or weight.ndim != 5:
        raise ValueError(f"{op}: expected a 4-D or 5-D input and a 5-D weight, got "
                         f"{input.shape} and {weight.shape}")
    n, c, dd, h, w = input.shape
    o, cg, kd, kh, kw = weight.shape
    _check_conv_channels(op, c, weight.shape, groups, bias)
    s, d = _pair(stride, 3, "stride", op), _pair(dilation, 3, "dilation", op)
    _check_geometry(op, s, d)
    pads = _depth_pads(op, padding, (kd, kh, kw), d, s)
    out = tuple(_out_size(i + lo + hi, k, si, 0, di, op=op) for i, k, si, di, (lo, hi) in
                zip((dd, h, w), (kd, kh, kw), s, d, pads))
    input, weight, bias = _dispatch.autocast("conv2d", input, weight, bias)
    input, weight, bias = _promoted(input, weight, bias, op="conv3d")
    # the depth windows as one im2col over a (depth, 1) image whose channels are (C, H, W)
    x = gp.reshape(gp.permute_dims(input, (0, 1, 3, 4, 2)), (n, c * h * w, dd, 1))
    cols = _im2col(x, (kd, 1), (s[0], 1), (d[0], 1), (pads[0][0], pads[0][1], 0, 0), 0.0,
                   (out[0], 1))
    cols = gp.permute_dims(gp.reshape(cols, (n, c, h, w, kd, out[0])), (0, 5, 1, 4, 2, 3))
    x2 = gp.reshape(cols, (n * out[0], c * kd, h, w))
    # (O, C/g, KD, KH, KW) is (O, C/g*KD, KH, KW): the channels (C, KD) of x2 in group order
    w2 = gp.reshape(weight, (o, cg * kd, kh, kw))
    y = _Conv2d.apply(x2, w2, bias, geom=(s[1:], d[1:], pads[1] + pads[2], groups, out[1:]))
    return gp.permute_dims(gp.reshape(y, (n, out[0], o) + out[1:]), (0, 2, 1, 3, 4))


def conv_transpose3d(input: Array, weight: Array, bias: Array | None = None,
                     stride: int | tuple[int, int, int] = 1,
                     padding: int | tuple[int, int, int] = 0,
                     output_padding: int | tuple[int, int, int] = 0, groups: int = 1,
                     dilation: int | tuple[int, int, int] = 1) -> Array:
    """3-D transposed convolution over (N, C_in, D, H, W) (or (C_in, D, H, W)) with weight
    (C_in, C_out/groups, KD, KH, KW): one conv_transpose2d per input depth with the weight's
    depth folded into its output channels, then those depth windows summed into place."""
    op = "conv_transpose3d"
    _check_float(input, op)
    if input.ndim == 4:
        return gp.squeeze(conv_transpose3d(gp.expand_dims(input, axis=0), weight, bias, stride,
                                           padding, output_padding, groups, dilation), axis=0)
    if input.ndim != 5:
        raise ValueError(f"{op}: expected a 4-D or 5-D input, got shape {input.shape}")
    s, p, _, d, out = _transposed_geometry(op, 3, input, weight, stride, padding, output_padding,
                                           groups, dilation)
    n, ci, dd, h, w = input.shape
    cog, kd, kh, kw = weight.shape[1:]
    co = cog * groups
    if bias is not None and tuple(bias.shape) != (co,):
        raise ValueError(f"{op}: bias must have shape ({co},), got {bias.shape}")
    input, weight, bias = _dispatch.autocast("conv2d", input, weight, bias)
    input, weight, bias = _promoted(input, weight, bias, op="conv_transpose3d")
    x2 = gp.reshape(gp.permute_dims(input, (0, 2, 1, 3, 4)), (n * dd, ci, h, w))
    # output channels (C_out, KD) in group order, as the weight's (C_out/g, KD) reshape gives
    w2 = gp.reshape(weight, (ci, cog * kd, kh, kw))
    y = _ConvTranspose2d.apply(x2, w2, None,
                               geom=(s[1:], d[1:], (p[1], p[1], p[2], p[2]), groups, out[1:]))
    ho, wo = out[1:]
    y = gp.permute_dims(gp.reshape(y, (n, dd, co, kd, ho, wo)), (0, 2, 4, 5, 3, 1))
    # each input depth's KD outputs summed onto the output depths: col2im over (depth, 1)
    y = _col2im(gp.reshape(y, (n, co * ho * wo, kd, dd, 1)), (kd, 1), (s[0], 1), (d[0], 1),
                (p[0], p[0], 0, 0), (out[0], 1))
    y = gp.permute_dims(gp.reshape(y, (n, co, ho, wo, out[0])), (0, 1, 4, 2, 3))
    return y if bias is None else y + gp.reshape(bias, (1, co, 1, 1, 1))

# ---- more of torch.nn's losses ------------------------------------------------------------
# Integer class targets out of range (torch raises) make the loss NaN: _nan_if_out_of_range.
def _check_reduction(reduction: str, op: str, extra: tuple = ()) -> None:
    if reduction not in ("mean", "sum", "none") + extra:
        allowed = ", ".join(repr(r) for r in ("mean", "sum", "none") + extra)
        raise ValueError(f"{op}: reduction must be one of {allowed}, got {reduction!r}")


def _like(t, x, op: str, arg: str = "target"):
    """``t`` (an Array) in ``x``'s floating dtype: torch's +-1 targets may be integers."""
    if not isinstance(t, gp.Array):
        raise TypeError(f"{op}: expected a grilly Array for {arg!r}, got {type(t).__name__}")
    return t if t.dtype == x.dtype else gp.astype(t, x.dtype)


def _softplus0(z):
    """log(1 + exp(z)) without overflow (torch's log1p(exp(z)) overflows for z > 88)."""
    return gp.maximum(z, 0.0) + gp.log1p(gp.exp(-gp.abs(z)))


def _class_targets(input, target, op: str):
    """Integer class targets of an (N, C) or (C,) input as an (N,) or () array."""
    _check_float(input, op)
    if not isinstance(target, gp.Array) or not gp.isdtype(target.dtype, "integral"):
        raise TypeError(f"{op}: target must be an Array of integer class indices, got "
                        f"{getattr(target, 'dtype', type(target).__name__)}")
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise ValueError(f"{op}: expected a non-empty (C,) or (N, C) input, got shape {input.shape}")
    nframe = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.size != nframe:
        raise ValueError(f"{op}: target of shape {target.shape} does not match input of shape "
                         f"{input.shape} (expected {nframe} class indices)")
    return gp.reshape(target, input.shape[:-1])


def kl_div(input: Array, target: Array, reduction: str = "mean", log_target: bool = False) -> Array:
    """Pointwise KL divergence target * (log target - input) of log-probabilities ``input``;
    'batchmean' divides the sum by the batch size, 'mean' by the element count (as torch)."""
    _check_float(input, "kl_div")
    _check_float(target, "kl_div", "target")
    _check_reduction(reduction, "kl_div", ("batchmean",))
    if log_target:
        loss = gp.exp(target) * (target - input)
    else:
        zero = target == 0   # xlogy(t, t): 0 where t is 0 (nan below 0, as torch)
        loss = gp.where(zero, 0.0, target * gp.log(gp.where(zero, 1.0, target))) - target * input
    if reduction == "batchmean":
        s = gp.sum(loss)
        return s / input.shape[0] if input.ndim else s
    return _reduce(loss, reduction, "kl_div")


def poisson_nll_loss(input: Array, target: Array, log_input: bool = True, full: bool = False,
                     eps: float = 1e-8, reduction: str = "mean") -> Array:
    """Poisson negative log-likelihood: exp(input) - target * input of log-rates (log_input),
    else input - target * log(input + eps); ``full`` adds Stirling's term where target > 1."""
    _check_float(input, "poisson_nll_loss")
    _check_float(target, "poisson_nll_loss", "target")
    _check_reduction(reduction, "poisson_nll_loss")
    if log_input:
        loss = gp.exp(input) - target * input
    else:
        loss = input - target * gp.log(input + eps)
    if full:
        big = target > 1
        t = gp.where(big, target, 1.0)
        stirling = t * gp.log(t) - t + 0.5 * gp.log(2 * math.pi * t)
        loss = loss + gp.where(big, stirling, 0.0)
    return _reduce(loss, reduction, "poisson_nll_loss")


class _ClampMinStraight(Function):
    """max(x, lo) whose gradient passes through unchanged: torch clamps the variance of
    gaussian_nll_loss in place under no_grad, so its gradient ignores the clamp."""

    @staticmethod
    def forward(ctx, x, *, lo):
        return gp.maximum(x, lo)

    @staticmethod
    def backward(ctx, g):
        return g


def gaussian_nll_loss(input: Array, target: Array, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Array:
    """Gaussian negative log-likelihood 0.5 (log var + (input - target)^2 / var), var clamped
    at ``eps``; ``var`` as input's shape, one dimension short of it, or with one dimension of
    1 where input's is not (homoscedastic), or a Python number. A negative entry of an array
    ``var`` is clamped (torch raises, which needs its values on the host)."""
    _check_float(input, "gaussian_nll_loss")
    _check_float(target, "gaussian_nll_loss", "target")
    if isinstance(var, (int, float)) and not isinstance(var, bool):
        if var < 0:
            raise ValueError(f"gaussian_nll_loss: var has a negative entry: {var}")
        var = gp.full(input.shape, float(var), dtype=input.dtype, device=input.device)
    _check_float(var, "gaussian_nll_loss", "var")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = gp.expand_dims(var, axis=-1)
        elif not (input.ndim == var.ndim
                  and sum(v for i, v in zip(input.shape, var.shape) if i != v) == 1):
            raise ValueError(f"gaussian_nll_loss: var of shape {var.shape} is of incorrect size "
                             f"for input of shape {input.shape}")
    _check_reduction(reduction, "gaussian_nll_loss")
    var = _ClampMinStraight.apply(var, lo=eps)
    d = input - target
    loss = 0.5 * (gp.log(var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction, "gaussian_nll_loss")


def margin_ranking_loss(input1: Array, input2: Array, target: Array, margin: float = 0.0,
                        reduction: str = "mean") -> Array:
    """max(0, -target * (input1 - input2) + margin), target holding 1 or -1."""
    _check_float(input1, "margin_ranking_loss", "input1")
    _check_float(input2, "margin_ranking_loss", "input2")
    target = _like(target, input1, "margin_ranking_loss")
    if not input1.ndim == input2.ndim == target.ndim:
        raise ValueError(f"margin_ranking_loss: input1, input2 and target must have the same "
                         f"number of dimensions, got shapes {input1.shape}, {input2.shape} and "
                         f"{target.shape}")
    _check_reduction(reduction, "margin_ranking_loss")
    loss = gp.maximum(-target * (input1 - input2) + margin, 0.0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def hinge_embedding_loss(input: Array, target: Array, margin: float = 1.0,
                         reduction: str = "mean") -> Array:
    """input where target is 1, max(0, margin - input) where it is -1 (both where neither)."""
    _check_float(input, "hinge_embedding_loss")
    _check_reduction(reduction, "hinge_embedding_loss")
    if not isinstance(target, gp.Array):
        raise TypeError("hinge_embedding_loss: expected a grilly Array for 'target', got "
                        f"{type(target).__name__}")
    loss = (gp.where(target != 1, gp.maximum(margin - input, 0.0), 0.0)
            + gp.where(target != -1, input, 0.0))
    return _reduce(loss, reduction, "hinge_embedding_loss")


def cosine_embedding_loss(input1: Array, input2: Array, target: Array, margin: float = 0.0,
                          reduction: str = "mean") -> Array:
    """1 - cos(input1, input2) where target is 1, max(0, cos - margin) where it is -1."""
    op = "cosine_embedding_loss"
    _check_float(input1, op, "input1")
    _check_float(input2, op, "input2")
    if not isinstance(target, gp.Array):
        raise TypeError(f"{op}: expected a grilly Array for 'target', got {type(target).__name__}")
    if target.ndim not in (0, 1):
        raise ValueError(f"{op}: expected a 0-D or 1-D target, got shape {target.shape}")
    if input1.ndim != target.ndim + 1 or input2.ndim != target.ndim + 1:
        raise ValueError(f"{op}: a {target.ndim}-D target needs {target.ndim + 1}-D inputs, got "
                         f"shapes {input1.shape} and {input2.shape}")
    _check_reduction(reduction, op)
    ax = target.ndim
    eps = 1e-12   # torch's EPSILON on each squared magnitude
    prod = gp.sum(input1 * input2, axis=ax)
    mag = (gp.sum(input1 * input1, axis=ax) + eps) * (gp.sum(input2 * input2, axis=ax) + eps)
    cos = prod / gp.sqrt(mag)
    try:
        _np.broadcast_shapes(tuple(target.shape), tuple(cos.shape))
    except ValueError:
        raise ValueError(f"{op}: target of shape {tuple(target.shape)} does not match the inputs' "
                         f"batch shape {tuple(cos.shape)} (one label per pair)") from None
    loss = (gp.where(target == 1, 1.0 - cos, 0.0)
            + gp.where(target == -1, gp.maximum(cos - margin, 0.0), 0.0))
    return _reduce(loss, reduction, op)


def soft_margin_loss(input: Array, target: Array, reduction: str = "mean") -> Array:
    """log(1 + exp(-target * input)), as a softplus (finite where torch's form overflows)."""
    _check_float(input, "soft_margin_loss")
    target = _like(target, input, "soft_margin_loss")
    _check_reduction(reduction, "soft_margin_loss")
    return _reduce(_softplus0(-target * input), reduction, "soft_margin_loss")


def multilabel_soft_margin_loss(input: Array, target: Array, weight: Array | None = None,
                                reduction: str = "mean") -> Array:
    """Per-class logistic loss of (N, C) logits against 0/1 targets, averaged over classes."""
    op = "multilabel_soft_margin_loss"
    _check_float(input, op)
    target = _like(target, input, op)
    _check_reduction(reduction, op)
    # -(t logsigmoid(x) + (1 - t) logsigmoid(-x)), logsigmoid(x) = -softplus(-x)
    loss = target * _softplus0(-input) + (1.0 - target) * _softplus0(input)
    if weight is not None:
        loss = loss * weight
    loss = gp.sum(loss, axis=input.ndim - 1) / input.shape[-1]
    return _reduce(loss, reduction, op)


def multi_margin_loss(input: Array, target: Array, p: int = 1, margin: float = 1.0,
                      weight: Array | None = None, reduction: str = "mean") -> Array:
    """Multi-class hinge: sum over i != y of weight[y] max(0, margin - x[y] + x[i])^p / C, of
    (N, C) or (C,) scores and class indices y."""
    op = "multi_margin_loss"
    if p not in (1, 2):
        raise ValueError(f"{op}: only p == 1 and p == 2 are supported, got {p!r}")
    if weight is not None and weight.ndim != 1:
        raise ValueError(f"{op}: weight must be one-dimensional, got shape {weight.shape}")
    _check_reduction(reduction, op)
    keep_shape = target.shape if isinstance(target, gp.Array) else None
    y = _class_targets(input, target, op)
    c = input.shape[-1]
    oh = gp.astype(gp.expand_dims(y, axis=-1) == gp.arange(c, dtype=y.dtype, device=y.device),
                   input.dtype)
    xy = gp.sum(input * oh, axis=-1, keepdims=True)
    z = gp.maximum(margin - xy + input, 0.0)
    if p == 2:
        z = z * z
    loss = gp.sum(z * (1.0 - oh), axis=-1)
    if weight is not None:
        loss = loss * gp.sum(oh * weight, axis=-1)
    loss = _nan_if_out_of_range(loss / c, y, c)
    if reduction == "none" and input.ndim == 1:
        return gp.reshape(loss, keep_shape)   # torch keeps a (1,) target's shape
    return _reduce(loss, reduction, op)


def multilabel_margin_loss(input: Array, target: Array, reduction: str = "mean") -> Array:
    """Multi-label hinge: sum over target classes j and non-target classes i of
    max(0, 1 - (x[j] - x[i])) / C; each row of ``target`` lists class indices, ended by -1."""
    op = "multilabel_margin_loss"
    _check_float(input, op)
    if not isinstance(target, gp.Array) or not gp.isdtype(target.dtype, "integral"):
        raise TypeError(f"{op}: target must be an Array of integer class indices, got "
                        f"{getattr(target, 'dtype', type(target).__name__)}")
    if input.ndim not in (1, 2) or input.shape[-1] == 0:
        raise ValueError(f"{op}: expected a non-empty (C,) or (N, C) input, got shape {input.shape}")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{op}: target shape {target.shape} must equal input shape {input.shape}")
    _check_reduction(reduction, op)
    c = input.shape[-1]
    # the entries before the first -1 count (a later one does not, whatever follows it)
    ended = gp.cumulative_sum(gp.astype(target == -1, gp.int32), axis=-1)
    valid = gp.astype(ended == 0, input.dtype)                                 # (.., K)
    cls = gp.arange(c, dtype=target.dtype, device=target.device)
    oh = gp.astype(gp.expand_dims(target, axis=-1) == cls, input.dtype)       # (.., K, C)
    oh = oh * gp.expand_dims(valid, axis=-1)
    is_target = gp.astype(gp.sum(oh, axis=-2) > 0, input.dtype)               # (.., C)
    xj = gp.sum(oh * gp.expand_dims(input, axis=-2), axis=-1, keepdims=True)  # (.., K, 1)
    z = gp.maximum(1.0 - xj + gp.expand_dims(input, axis=-2), 0.0)           # (.., K, C)
    z = z * gp.expand_dims(valid, axis=-1) * gp.expand_dims(1.0 - is_target, axis=-2)
    loss = gp.sum(z, axis=(-2, -1)) / c
    # every entry in [-1, C), as torch's check (those after a -1 too)
    return _reduce(_nan_if_out_of_range(loss, target, c, low=-1), reduction, op)


def _pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6):
    """torch.pairwise_distance: the p-norm of x1 - x2 + eps over the last axis."""
    d = x1 - x2 + eps
    ax = max(x1.ndim, x2.ndim) - 1
    if p == 2:
        return gp.sqrt(gp.sum(d * d, axis=ax))
    a = gp.abs(d)
    if p == 1:
        return gp.sum(a, axis=ax)
    if p == math.inf:
        return gp.max(a, axis=ax)
    if p == 0:
        return gp.sum(gp.astype(a != 0, d.dtype), axis=ax)
    return gp.sum(a ** p, axis=ax) ** (1.0 / p)


def _triplet(op, anchor, positive, negative, dist, margin, swap, reduction):
    for name, a in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _check_float(a, op, name)
    if margin <= 0:
        raise ValueError(f"{op}: margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise ValueError(f"{op}: anchor, positive and negative must have the same number of "
                         f"dimensions, got {anchor.ndim}-D, {positive.ndim}-D and "
                         f"{negative.ndim}-D")
    _check_reduction(reduction, op)
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = gp.minimum(d_neg, dist(positive, negative))
    return _reduce(gp.maximum(margin + d_pos - d_neg, 0.0), reduction, op)


def triplet_margin_loss(anchor: Array, positive: Array, negative: Array, margin: float = 1.0,
                        p: float = 2, eps: float = 1e-6, swap: bool = False,
                        reduction: str = "mean") -> Array:
    """max(0, margin + d(anchor, positive) - d(anchor, negative)), d the pairwise p-norm
    distance; ``swap`` uses min(d(a, n), d(p, n))."""
    return _triplet("triplet_margin_loss", anchor, positive, negative,
                    lambda a, b: _pairwise_distance(a, b, p, eps), margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor: Array, positive: Array, negative: Array, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Array:
    """triplet_margin_loss with any distance callable (default: the pairwise 2-norm)."""
    if distance_function is not None and not callable(distance_function):
        raise TypeError("triplet_margin_with_distance_loss: distance_function must be callable, "
                        f"got {type(distance_function).__name__}")
    return _triplet("triplet_margin_with_distance_loss", anchor, positive, negative,
                    distance_function or _pairwise_distance, margin, swap, reduction)


__all__ += ["kl_div", "poisson_nll_loss", "gaussian_nll_loss", "margin_ranking_loss",
            "hinge_embedding_loss", "cosine_embedding_loss", "soft_margin_loss",
            "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
            "triplet_margin_loss", "triplet_margin_with_distance_loss"]

# ---- more of torch.nn.functional: activations -----------------------------------------------
__all__ += [
    "celu", "selu", "hardswish", "hardsigmoid", "hardtanh", "hardshrink", "softshrink",
    "tanhshrink", "softsign", "logsigmoid", "mish", "glu", "prelu", "rrelu", "threshold",
    "softmin", "relu_", "elu_", "leaky_relu_", "hardtanh_", "threshold_", "selu_", "celu_",
    "rrelu_",
    "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "unfold", "fold", "normalize",
    "cosine_similarity", "pairwise_distance", "pdist", "bilinear",
    "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
]

# torch's SELU constants (Klambauer et al. 2017)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def celu(input: Array, alpha: float = 1.0, inplace: bool = False) -> Array:
    """x for x > 0, alpha * (exp(x / alpha) - 1) otherwise."""
    if inplace:
        return _inplace(input, lambda x: celu(x, alpha), "celu")
    _check_float(input, "celu")
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides the input)")
    pos = input > 0
    # the unused branch sees 0, not a large x: its gradient stays finite (see elu)
    return gp.where(pos, input, gp.expm1(gp.where(pos, 0.0, input) * (1.0 / alpha)) * alpha)


def selu(input: Array, inplace: bool = False) -> Array:
    """scale * (x for x > 0, alpha * (exp(x) - 1) otherwise), torch's alpha and scale."""
    if inplace:
        return _inplace(input, selu, "selu")
    _check_float(input, "selu")
    pos = input > 0
    return gp.where(pos, input * _SELU_SCALE,
                    gp.expm1(gp.where(pos, 0.0, input)) * (_SELU_ALPHA * _SELU_SCALE))


class _Hardswish(Function):
    """x * relu6(x + 3) / 6 with torch's derivative: 0 up to -3, x / 3 + 1/2 between, 1 from
    3 on."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * gp.clip(x + 3.0, 0.0, 6.0) / 6.0

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        return (gp.where(x <= -3.0, 0.0, gp.where(x < 3.0, g * (x / 3.0 + 0.5), g)),)


def hardswish(input: Array, inplace: bool = False) -> Array:
    """x * relu6(x + 3) / 6."""
    if inplace:
        return _inplace(input, hardswish, "hardswish")
    return _Hardswish.apply(_check_float(input, "hardswish"))


def hardsigmoid(input: Array, inplace: bool = False) -> Array:
    """relu6(x + 3) / 6; as torch, no gradient at -3 and 3."""
    if inplace:
        return _inplace(input, hardsigmoid, "hardsigmoid")
    _check_float(input, "hardsigmoid")
    inside = gp.logical_and(input > -3.0, input < 3.0)
    return gp.where(inside, (input + 3.0) / 6.0, _detach(gp.clip(input + 3.0, 0.0, 6.0) / 6.0))


def hardtanh(input: Array, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Array:
    """x clipped to [min_val, max_val]; as torch, no gradient at either bound."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val "
                         f"({max_val})")
    if inplace:
        return _inplace(input, lambda x: hardtanh(x, min_val, max_val), "hardtanh")
    _check_float(input, "hardtanh")
    inside = gp.logical_and(input > min_val, input < max_val)
    return gp.where(inside, input, _detach(gp.clip(input, min_val, max_val)))


def hardshrink(input: Array, lambd: float = 0.5) -> Array:
    """0 where |x| <= lambd, x elsewhere."""
    _check_float(input, "hardshrink")
    return gp.where(gp.logical_and(input >= -lambd, input <= lambd), 0.0, input)


def softshrink(input: Array, lambd: float = 0.5) -> Array:
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    _check_float(input, "softshrink")
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be greater or equal to 0, got {lambd}")
    return gp.where(input > lambd, input - lambd, gp.where(input < -lambd, input + lambd, 0.0))


def tanhshrink(input: Array) -> Array:
    """x - tanh(x)."""
    _check_float(input, "tanhshrink")
    # x - tanh(x) cancels near 0: a low-precision tanh's rounding would be the whole result
    return _in_float32(lambda x: x - gp.tanh(x), input)


def softsign(input: Array) -> Array:
    """x / (1 + |x|)."""
    _check_float(input, "softsign")
    return input / (1.0 + gp.abs(input))


class _LogSigmoid(Function):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), with its derivative sigmoid(-x) (the
    composite's min and abs split the slope at 0)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gp.where(x < 0, x, 0.0) - gp.log1p(gp.exp(-gp.abs(x)))

    @staticmethod
    def backward(ctx, g):
        return (g * sigmoid(-ctx.saved_tensors[0]),)


def logsigmoid(input: Array) -> Array:
    """log(1 / (1 + exp(-x))), without overflow either side."""
    _check_float(input, "logsigmoid")
    return _in_float32(_LogSigmoid.apply, input)


class _Mish(Function):
    """x tanh(softplus(x)) with torch's derivative t + x sigmoid(x) (1 - t^2)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * gp.tanh(_softplus(x, 1.0, 20.0))

    @staticmethod
    def backward(ctx, g):
        x = ctx.saved_tensors[0]
        t = gp.tanh(_softplus(x, 1.0, 20.0))
        return (g * (t + x * sigmoid(x) * (1.0 - t * t)),)


def mish(input: Array, inplace: bool = False) -> Array:
    """x * tanh(softplus(x))."""
    if inplace:
        return _inplace(input, mish, "mish")
    _check_float(input, "mish")
    return _in_float32(_Mish.apply, input)


def glu(input: Array, dim: int = -1) -> Array:
    """a * sigmoid(b), a and b the two halves of ``input`` along ``dim``."""
    _check_float(input, "glu")
    if input.ndim == 0:
        raise ValueError("glu: does not support scalars (0-D input): the halved dimension must "
                         "have an even size")
    if not -input.ndim <= dim < input.ndim:
        raise ValueError(f"glu: dim {dim} is out of range for a {input.ndim}-D input")
    ax = dim % input.ndim
    n = input.shape[ax]
    if n % 2:
        raise ValueError(f"glu: halving dimension must be even, but dimension {ax} has size {n}")
    lead = (slice(None),) * ax
    return input[lead + (slice(0, n // 2),)] * sigmoid(input[lead + (slice(n // 2, n),)])


def prelu(input: Array, weight: Array) -> Array:
    """x for x > 0, weight * x otherwise; ``weight`` is one slope or one per channel (axis 1)."""
    _check_float(input, "prelu")
    _check_float(weight, "prelu", "weight")
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be a scalar or 1-D array, got shape {weight.shape}")
    input, weight = _dispatch.autocast("prelu", input, weight)   # torch's autocast: low dtype
    if weight.size == 1:
        w = gp.reshape(weight, ())
    else:
        c = input.shape[1] if input.ndim > 1 else 1
        if input.ndim == 0 or weight.size != c:
            raise ValueError(f"prelu: weight has {weight.size} slopes but the input has {c} "
                             f"channel{'s' if c != 1 else ''} (axis 1 of shape {input.shape}); "
                             "give 1 slope or one per channel")
        w = gp.reshape(weight, (1, c) + (1,) * (input.ndim - 2))
    return gp.where(input > 0, input, w * input)


def rrelu(input: Array, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Array:
    """Randomized leaky ReLU: while training each non-positive x is scaled by a slope drawn
    uniformly from [lower, upper) (grilly.random's default generator); in evaluation by the
    fixed (lower + upper) / 2."""
    if lower > upper:
        raise ValueError(f"rrelu: lower bound ({lower}) must be less than or equal to the upper "
                         f"bound ({upper})")
    if inplace:
        return _inplace(input, lambda x: rrelu(x, lower, upper, training), "rrelu")
    _check_float(input, "rrelu")
    if not training:
        return leaky_relu(input, (lower + upper) / 2.0)
    slope = _grandom.uniform(lower, upper, input.shape, dtype=_draw_dtype(input.dtype),
                             device=input.device)
    # (a bfloat16 input: the float32 slope rounded once, which may reach ``upper``, as torch's)
    slope = gp.astype(slope, input.dtype)
    return gp.where(input > 0, input, input * slope)


def _threshold(x, th, value):
    return gp.where(x <= th, gp.asarray(value, dtype=x.dtype, device=x.device), x)


def threshold(input: Array, threshold: float, value: float, inplace: bool = False) -> Array:
    """``value`` where x <= threshold, x elsewhere."""
    th = threshold
    if inplace:
        return _inplace(input, lambda x: _threshold(x, th, value), "threshold")
    if not isinstance(input, Array):
        raise TypeError(f"threshold: expected a grilly Array for 'input', got "
                        f"{type(input).__name__}")
    return _threshold(input, th, value)


def softmin(input: Array, dim: int | None = None, _stacklevel: int = 3, dtype=None) -> Array:
    """softmax(-x) along ``dim``."""
    return softmax(-input, dim, dtype)


def relu_(input: Array) -> Array:
    """relu written into ``input``."""
    return relu(input, inplace=True)


def elu_(input: Array, alpha: float = 1.0) -> Array:
    """elu written into ``input``."""
    return elu(input, alpha, inplace=True)


def leaky_relu_(input: Array, negative_slope: float = 0.01) -> Array:
    """leaky_relu written into ``input``."""
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input: Array, min_val: float = -1.0, max_val: float = 1.0) -> Array:
    """hardtanh written into ``input``."""
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input: Array, threshold: float, value: float) -> Array:
    """threshold written into ``input``."""
    return _inplace(input, lambda x: _threshold(x, threshold, value), "threshold_")


def selu_(input: Array) -> Array:
    """selu written into ``input``."""
    return selu(input, inplace=True)


def celu_(input: Array, alpha: float = 1.0) -> Array:
    """celu written into ``input``."""
    return celu(input, alpha, inplace=True)


def rrelu_(input: Array, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Array:
    """rrelu written into ``input``."""
    return rrelu(input, lower, upper, training, inplace=True)


# ---- more of torch.nn.functional: reshuffles, windows, distances, bilinear ------------------
def _positive_int(v, name: str, op: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{op}: {name} must be a positive int, got {v!r}")
    return v


def pixel_shuffle(input: Array, upscale_factor: int) -> Array:
    """(*, C r^2, H, W) -> (*, C, H r, W r), r = ``upscale_factor``."""
    r = _positive_int(upscale_factor, "upscale_factor", "pixel_shuffle")
    if not isinstance(input, Array) or input.ndim < 3:
        raise ValueError(f"pixel_shuffle: input must have at least 3 dimensions (*, C, H, W), "
                         f"got {getattr(input, 'shape', type(input).__name__)}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise ValueError(f"pixel_shuffle: the channel dimension (input.shape[-3] = {c}) must be "
                         f"divisible by upscale_factor squared ({r * r})")
    k = len(lead)
    x = gp.reshape(input, (*lead, c // (r * r), r, r, h, w))
    x = gp.permute_dims(x, (*range(k), k, k + 3, k + 1, k + 4, k + 2))
    return gp.reshape(x, (*lead, c // (r * r), h * r, w * r))


def pixel_unshuffle(input: Array, downscale_factor: int) -> Array:
    """(*, C, H r, W r) -> (*, C r^2, H, W), r = ``downscale_factor``: pixel_shuffle's inverse."""
    r = _positive_int(downscale_factor, "downscale_factor", "pixel_unshuffle")
    if not isinstance(input, Array) or input.ndim < 3:
        raise ValueError(f"pixel_unshuffle: input must have at least 3 dimensions (*, C, H, W), "
                         f"got {getattr(input, 'shape', type(input).__name__)}")
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise ValueError(f"pixel_unshuffle: height ({h}) and width ({w}) must be divisible by "
                         f"downscale_factor ({r})")
    k = len(lead)
    x = gp.reshape(input, (*lead, c, h // r, r, w // r, r))
    x = gp.permute_dims(x, (*range(k), k, k + 2, k + 4, k + 1, k + 3))
    return gp.reshape(x, (*lead, c * r * r, h // r, w // r))


def channel_shuffle(input: Array, groups: int) -> Array:
    """(N, C, *) with its channels, seen as (groups, C / groups), transposed."""
    g = _positive_int(groups, "groups", "channel_shuffle")
    if not isinstance(input, Array) or input.ndim < 3:
        raise ValueError(f"channel_shuffle: input must have at least 3 dimensions (N, C, *), "
                         f"got {getattr(input, 'shape', type(input).__name__)}")
    n, c, *rest = input.shape
    if c % g:
        raise ValueError(f"channel_shuffle: the number of channels ({c}) must be divisible by "
                         f"groups ({g})")
    x = gp.reshape(input, (n, g, c // g, *rest))
    x = gp.permute_dims(x, (0, 2, 1, *range(3, x.ndim)))
    return gp.reshape(x, input.shape)


def _fold_geometry(op: str, kernel_size, dilation, padding, stride) -> tuple:
    k = _pair(kernel_size, 2, "kernel_size", op)
    d = _pair(dilation, 2, "dilation", op)
    p = _pair(padding, 2, "padding", op)
    s = _pair(stride, 2, "stride", op)
    _check_geometry(op, s, d, p)
    if any(i < 1 for i in k):
        raise ValueError(f"{op}: kernel_size must be positive, got {k!r}")
    return k, d, p, s


def unfold(input: Array, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """Sliding windows (im2col) of (N, C, H, W) or (C, H, W) as (N, C * kh * kw, L) (or
    (C * kh * kw, L)), one column per window position."""
    op = "unfold"
    _check_float(input, op)
    if input.ndim not in (3, 4):
        raise ValueError(f"{op}: input must be 3-D (C, H, W) or 4-D (N, C, H, W), got shape "
                         f"{input.shape}")
    k, d, p, s = _fold_geometry(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 4 else gp.expand_dims(input, axis=0)
    n, c, h, w = x.shape
    out = tuple(_out_size(size, k[i], s[i], p[i], d[i], op=op) for i, size in enumerate((h, w)))
    cols = _im2col(x, k, s, d, (p[0], p[0], p[1], p[1]), 0.0, out)   # (N, C, kw*kh, Ho, Wo)
    if k[0] > 1 and k[1] > 1:   # im2col's window axis is kw-major; torch's is kh-major
        cols = gp.permute_dims(gp.reshape(cols, (n, c, k[1], k[0], *out)), (0, 1, 3, 2, 4, 5))
    y = gp.reshape(cols, (n, c * k[0] * k[1], out[0] * out[1]))
    return y if input.ndim == 4 else gp.squeeze(y, axis=0)


def fold(input: Array, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Array:
    """unfold's adjoint (col2im): (N, C * kh * kw, L) columns summed onto (N, C, H, W) at
    their windows' places (overlaps add up), H, W = ``output_size``."""
    op = "fold"
    _check_float(input, op)
    if input.ndim not in (2, 3):
        raise ValueError(f"{op}: input must be 2-D (C * kh * kw, L) or 3-D (N, C * kh * kw, L), "
                         f"got shape {input.shape}")
    size = _pair(output_size, 2, "output_size", op)
    k, d, p, s = _fold_geometry(op, kernel_size, dilation, padding, stride)
    x = input if input.ndim == 3 else gp.expand_dims(input, axis=0)
    n, ck, L = x.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise ValueError(f"{op}: input.shape[-2] ({ck}) must be divisible by the product of "
                         f"kernel_size {k} ({kk})")
    out = tuple(_out_size(size[i], k[i], s[i], p[i], d[i], op=op) for i in range(2))
    if out[0] * out[1] != L:
        raise ValueError(f"{op}: output_size={size}, kernel_size={k}, dilation={d}, "
                         f"padding={p}, stride={s} give {out[0]} * {out[1]} = "
                         f"{out[0] * out[1]} sliding blocks, but input.shape[-1] is {L}")
    c = ck // kk
    cols = gp.reshape(x, (n, c, k[0], k[1], *out))
    if k[0] > 1 and k[1] > 1:
        cols = gp.permute_dims(cols, (0, 1, 3, 2, 4, 5))
    y = _col2im(gp.reshape(cols, (n, c, kk, *out)), k, s, d, (p[0], p[0], p[1], p[1]), size)
    return y if input.ndim == 3 else gp.squeeze(y, axis=0)


def _norm_clamped(x, axis, eps, p=2.0):
    """(||x||_p along ``axis`` kept, the same clamped below at ``eps``) as torch's
    cosine_similarity: the clamp (done there under no_grad) changes the value, not the
    gradient."""
    from .. import linalg

    n = linalg.vector_norm(x, axis=axis, keepdims=True, ord=p)
    return n + _detach(gp.maximum(n, eps) - n)


def normalize(input: Array, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Array | None = None) -> Array:
    """x / max(||x||_p, eps) along ``dim``."""
    from .. import linalg

    _check_float(input, "normalize")
    n = linalg.vector_norm(input, axis=dim, keepdims=True, ord=p)
    # as torch's clamp_min: below eps the denominator is the constant eps (no gradient)
    y = input / gp.where(n >= eps, n, gp.asarray(eps, dtype=n.dtype, device=n.device))
    if out is not None:
        out[...] = y
        return out
    return y


def cosine_similarity(x1: Array, x2: Array, dim: int = 1, eps: float = 1e-8) -> Array:
    """sum((x1 / ||x1||) * (x2 / ||x2||)) along ``dim``, each norm clamped below at ``eps``
    (torch's formula since 1.12: the result stays in [-1, 1])."""
    _check_float(x1, "cosine_similarity", "x1")
    _check_float(x2, "cosine_similarity", "x2")
    try:
        shape = gp.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise ValueError(f"cosine_similarity: x1 {x1.shape} and x2 {x2.shape} do not "
                         "broadcast") from None
    if not -len(shape) <= dim < max(len(shape), 1):
        raise ValueError(f"cosine_similarity: dim {dim} is out of range for shape {shape}")
    x1, x2 = (gp.broadcast_to(a, shape) if a.shape != shape else a
              for a in _promoted(x1, x2, op="cosine_similarity"))
    return gp.sum((x1 / _norm_clamped(x1, dim, eps)) * (x2 / _norm_clamped(x2, dim, eps)),
                  axis=dim)


def pairwise_distance(x1: Array, x2: Array, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Array:
    """||x1 - x2 + eps||_p along the last axis."""
    from .. import linalg

    _check_float(x1, "pairwise_distance", "x1")
    _check_float(x2, "pairwise_distance", "x2")
    if x1.ndim == 0 and x2.ndim == 0:
        raise ValueError("pairwise_distance: x1 and x2 must not both be 0-D")
    return linalg.vector_norm(x1 - x2 + eps, axis=-1, keepdims=keepdim, ord=p)


def pdist(input: Array, p: float = 2.0) -> Array:
    """The p-norm distances between every pair of rows i < j of (N, M) ``input``, as a vector
    of N (N - 1) / 2 in row-major order of the pairs."""
    from .. import linalg

    _check_float(input, "pdist")
    if input.ndim != 2:
        raise ValueError(f"pdist: input must be 2-D (N, M), got shape {input.shape}")
    if p < 0:
        raise ValueError(f"pdist: p must be non-negative, got {p}")
    n = input.shape[0]
    i, j = _np.triu_indices(n, 1)
    if i.size == 0:
        return gp.sum(input[:0], axis=1)   # empty, still on input's graph
    dev = input.device
    d = gp.take(input, gp.asarray(i, device=dev), axis=0) - \
        gp.take(input, gp.asarray(j, device=dev), axis=0)
    return linalg.vector_norm(d, axis=-1, ord=p)


def bilinear(input1: Array, input2: Array, weight: Array, bias: Array | None = None) -> Array:
    """y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]."""
    op = "bilinear"
    for name, a in (("input1", input1), ("input2", input2), ("weight", weight)):
        _check_float(a, op, name)
    if weight.ndim != 3:
        raise ValueError(f"{op}: weight must be 3-D (out_features, in1_features, in2_features), "
                         f"got shape {weight.shape}")
    o, i1, i2 = weight.shape
    if input1.ndim < 1 or input1.shape[:-1] != input2.shape[:-1]:
        raise ValueError(f"{op}: input1 and input2 must have the same batch dimensions, got "
                         f"shapes {input1.shape} and {input2.shape}")
    if input1.shape[-1] != i1 or input2.shape[-1] != i2:
        raise ValueError(f"{op}: input sizes ({input1.shape[-1]}, {input2.shape[-1]}) do not "
                         f"match weight shape {weight.shape} (out, in1, in2)")
    if bias is not None and bias.shape != (o,):
        raise ValueError(f"{op}: bias shape {bias.shape} must be ({o},) (out_features)")
    input1, input2, weight, bias = _promoted(input1, input2, weight, bias, op="bilinear")
    lead = input1.shape[:-1]
    # one GEMM: x1 (B, in1) times the weight as (in1, out * in2), then a product with x2
    w = gp.reshape(gp.permute_dims(weight, (1, 0, 2)), (i1, o * i2))
    t = gp.reshape(gp.matmul(gp.reshape(input1, (-1, i1)), w), (-1, o, i2))
    y = gp.sum(t * gp.expand_dims(gp.reshape(input2, (-1, i2)), axis=1), axis=-1)
    if bias is not None:
        y = y + bias
    return gp.reshape(y, (*lead, o))


# ---- more of torch.nn.functional: channel and alpha dropout ---------------------------------
_ALPHA_DROPOUT = 1.7580993408473766   # SELU's scale * alpha: the value a dropped unit takes


def _check_p(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{op}: dropout probability p must be in [0, 1], got {p}")


def _noise_dropout(input, p, feature: bool, alpha: bool, op: str):
    """torch's _dropout_impl: a keep mask (whole channels when ``feature``: shape (N, C, 1...))
    scaled by 1 / (1 - p), or, with ``alpha``, a * x * keep + the affine term that keeps
    SELU's zero mean and unit variance."""
    if feature and input.ndim < 2:
        raise ValueError(f"{op}: channel dropout needs at least 2 dimensions (N, C, ...), got "
                         f"shape {input.shape}")
    if p == 1.0:
        return input * 0.0
    shape = input.shape[:2] + (1,) * (input.ndim - 2) if feature else input.shape
    if not alpha:
        return input * _keep_scale(shape, p, 1.0 / (1.0 - p), input.dtype, input.device)
    a = 1.0 / math.sqrt((_ALPHA_DROPOUT ** 2 * p + 1.0) * (1.0 - p))
    keep = _keep_scale(shape, p, 1.0, input.dtype, input.device)
    b = (keep - 1.0) * (_ALPHA_DROPOUT * a) + _ALPHA_DROPOUT * a * p
    return input * (keep * a) + b


def _dropout_with(input, p, training, inplace, op, feature, alpha, unbatched_ndim=None):
    """The shared checks and in-place handling; an input of ``unbatched_ndim`` dimensions is
    one sample (a batch axis added around the draw)."""
    _check_p(p, op)
    if not training or p == 0.0:
        return input
    if inplace:
        return _inplace(input, lambda x: _dropout_with(x, p, True, False, op, feature, alpha,
                                                       unbatched_ndim), op)
    _check_float(input, op)
    if unbatched_ndim is not None and input.ndim == unbatched_ndim:
        y = _noise_dropout(gp.expand_dims(input, axis=0), p, feature, alpha, op)
        return gp.squeeze(y, axis=0)
    return _noise_dropout(input, p, feature, alpha, op)


def dropout1d(input: Array, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Array:
    """Zero whole channels of (N, C, L) or (C, L) with probability ``p`` while training, the
    rest scaled by 1 / (1 - p)."""
    if isinstance(input, Array) and input.ndim not in (2, 3):
        raise ValueError(f"dropout1d: expected a 2-D (C, L) or 3-D (N, C, L) input, got shape "
                         f"{input.shape}")
    return _dropout_with(input, p, training, inplace, "dropout1d", True, False, 2)


def dropout2d(input: Array, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Array:
    """Zero whole channels of (N, C, H, W) with probability ``p`` while training, the rest
    scaled by 1 / (1 - p). As torch, a 3-D input is taken as (N, C, L)."""
    return _dropout_with(input, p, training, inplace, "dropout2d", True, False)


def dropout3d(input: Array, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Array:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) with probability ``p`` while
    training, the rest scaled by 1 / (1 - p)."""
    return _dropout_with(input, p, training, inplace, "dropout3d", True, False, 4)


def alpha_dropout(input: Array, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Array:
    """Dropout for SELU networks: dropped units take SELU's negative saturation value and an
    affine correction keeps the mean and variance (torch's formula); identity unless
    ``training``."""
    return _dropout_with(input, p, training, inplace, "alpha_dropout", False, True)


def feature_alpha_dropout(input: Array, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Array:
    """alpha_dropout of whole channels (N, C, ...)."""
    return _dropout_with(input, p, training, inplace, "feature_alpha_dropout", True, True)

# ---- group, instance and local response norm; N-d pooling with indices, unpooling ----------
__all__ += [
    "group_norm", "instance_norm", "local_response_norm",
    "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
    "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d", "avg_pool3d",
    "adaptive_avg_pool1d", "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d",
    "adaptive_max_pool3d", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
    "lp_pool1d", "lp_pool2d", "lp_pool3d",
]


def _channel_shape(input) -> tuple:
    """(1, C, 1, ...): a per-channel vector seen against ``input`` (N, C, *)."""
    return (1, input.shape[1]) + (1,) * (input.ndim - 2)


def _affine(y, weight, bias):
    """``y * weight + bias`` per channel (axis 1), either of them None."""
    shp = _channel_shape(y)
    if weight is not None:
        y = y * gp.reshape(weight, shp)
    return y if bias is None else y + gp.reshape(bias, shp)


def _check_channels(a, name: str, c: int, op: str) -> None:
    if a is not None and tuple(a.shape) != (c,):
        raise ValueError(f"{op}: {name} must have shape ({c},) (one value per channel), got "
                         f"{tuple(a.shape)}")


def group_norm(input: Array, num_groups: int, weight: Array | None = None,
               bias: Array | None = None, eps: float = 1e-5) -> Array:
    """Normalize (N, C, *) over each group of C / num_groups channels (and every spatial
    position), then scale and shift per channel: torch's ``F.group_norm``, through the
    layer_norm kernel on the (N * num_groups, C / num_groups * spatial) rows."""
    op = "group_norm"
    _check_input(input, op, 2)
    n, c = input.shape[:2]
    if not isinstance(num_groups, int) or isinstance(num_groups, bool) or num_groups < 1:
        raise ValueError(f"{op}: num_groups must be a positive int, got {num_groups!r}")
    if c % num_groups:
        raise ValueError(f"{op}: the number of channels ({c}) must be divisible by num_groups "
                         f"({num_groups})")
    _check_channels(weight, "weight", c, op)
    _check_channels(bias, "bias", c, op)
    d = input.size // max(n * num_groups, 1)
    if input.size and input.size // c == 1 and c == num_groups:
        # torch's check (_verify_batch_size): one value per channel overall
        raise ValueError(f"{op}: expected more than 1 value per channel, got input shape "
                         f"{input.shape} with num_groups={num_groups}")
    y = layer_norm(gp.reshape(input, (n * num_groups, d)), (d,), eps=eps)
    return _affine(gp.reshape(y, input.shape), weight, bias)


def instance_norm(input: Array, running_mean: Array | None = None,
                  running_var: Array | None = None, weight: Array | None = None,
                  bias: Array | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Array:
    """Normalize each channel of each sample of (N, C, *) over its spatial positions, then
    scale and shift per channel: torch's ``F.instance_norm``. With ``use_input_stats`` and
    running statistics given, these are updated in place as torch does (momentum times the
    batch average of the per-instance means and unbiased variances); without
    ``use_input_stats`` the running statistics normalize instead."""
    op = "instance_norm"
    _check_input(input, op, 2)
    n, c = input.shape[:2]
    for a, name in ((running_mean, "running_mean"), (running_var, "running_var"),
                    (weight, "weight"), (bias, "bias")):
        _check_channels(a, name, c, op)
    if (running_mean is None) != (running_var is None):
        raise ValueError(f"{op}: give both running_mean and running_var, or neither")
    shp = _channel_shape(input)
    if not use_input_stats:
        if running_mean is None:
            raise ValueError(f"{op}: running_mean and running_var are needed when "
                             "use_input_stats is False")
        y = (input - gp.reshape(running_mean, shp)) / gp.sqrt(gp.reshape(running_var, shp) + eps)
        return _affine(y, weight, bias)
    s = input.size // max(n * c, 1)
    if s <= 1 and input.size:
        raise ValueError(f"{op}: expected more than 1 spatial element when training, got input "
                         f"shape {input.shape}")
    y = layer_norm(gp.reshape(input, (n * c, s)), (s,), eps=eps)
    if y.dtype != input.dtype:   # autocast ran layer_norm in float32; torch's instance_norm
        y = gp.astype(y, input.dtype)   # (a batch norm, not autocast) keeps the input's dtype
    if running_mean is not None:
        with _no_grad():
            x3 = gp.reshape(_detach(input), (n, c, s))
            if x3.dtype != running_mean.dtype:
                x3 = gp.astype(x3, running_mean.dtype)
            mean = gp.mean(gp.mean(x3, axis=2), axis=0)
            var = gp.mean(gp.var(x3, axis=2, correction=1), axis=0)
            running_mean[...] = running_mean * (1.0 - momentum) + mean * momentum
            running_var[...] = running_var * (1.0 - momentum) + var * momentum
    return _affine(gp.reshape(y, input.shape), weight, bias)


def local_response_norm(input: Array, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Array:
    """x / (k + alpha * mean of x^2 over ``size`` neighbouring channels)^beta, the window
    zero-padded by size // 2 before and (size - 1) // 2 after: torch's
    ``F.local_response_norm`` on (N, C, *)."""
    op = "local_response_norm"
    _check_float(input, op)
    if input.ndim < 3:
        raise ValueError(f"{op}: expected a 3-D or higher input (N, C, *), got shape "
                         f"{input.shape}")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise ValueError(f"{op}: size must be a positive int, got {size!r}")
    if input.size == 0:
        return input
    c = input.shape[1]
    sq = pad(input * input, (0, 0) * (input.ndim - 2) + (size // 2, (size - 1) // 2))
    total = sq[:, 0:c]
    for i in range(1, size):
        total = total + sq[:, i:i + c]
    div = gp.pow(total * (alpha / size) + k, beta)
    return input / div


def _ntuple(v, n: int, name: str, op: str) -> tuple:
    """``v`` as an n-tuple of ints (torch's _single/_pair/_triple)."""
    return _pair(tuple(v) if isinstance(v, list) else v, n, name, op)


def _pool_nd(input, n: int, kernel_size, stride, padding, dilation, ceil_mode, op: str):
    """The batched (N, C, *spatial) input and the geometry of an n-d pooling: kernel, stride,
    padding, dilation, output size and the right padding the last (ceil_mode) window needs."""
    _check_float(input, op)
    if input.ndim not in (n + 1, n + 2):
        raise ValueError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape "
                         f"{input.shape}")
    k = _ntuple(kernel_size, n, "kernel_size", op)
    s = k if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0) \
        else _ntuple(stride, n, "stride", op)
    p = _ntuple(padding, n, "padding", op)
    d = _ntuple(dilation, n, "dilation", op)
    if any(ki < 1 for ki in k):
        raise ValueError(f"{op}: kernel_size must be positive, got {k!r}")
    _check_geometry(op, s, d, p)
    if any(pi * 2 > ki for pi, ki in zip(p, k)):
        raise ValueError(f"{op}: padding {p} must be at most half of kernel_size {k}")
    spatial = input.shape[-n:]
    out = tuple(_out_size(m, ki, si, pi, di, ceil_mode, op)
                for m, ki, si, pi, di in zip(spatial, k, s, p, d))
    extra = tuple(max(0, (o - 1) * si + di * (ki - 1) + 1 - m - pi)
                  for o, m, ki, si, pi, di in zip(out, spatial, k, s, p, d))
    x = input if input.ndim == n + 2 else gp.expand_dims(input, axis=0)
    return x, k, s, p, d, out, extra


def _unfold_axis(x, axis: int, k: int, s: int, d: int, lo: int, hi: int, fill: float,
                 out: int):
    """The ``k`` windows (stride s, dilation d) along ``axis`` of x padded by (lo, hi) with
    ``fill``: x.shape[:axis] + (k, out) + x.shape[axis + 1:], through the im2col node (its
    backward one col2im)."""
    shp = x.shape
    a, b = math.prod(shp[:axis]), math.prod(shp[axis + 1:])
    cols = _im2col(gp.reshape(x, (a, 1, shp[axis], b)), (k, 1), (s, 1), (d, 1), (lo, hi, 0, 0),
                   fill, (out, b))
    return gp.reshape(cols, shp[:axis] + (k, out) + shp[axis + 1:])


def _adaptive_table(n: int, out: int):
    """torch's adaptive windows of an axis of n to ``out``: (k, out) positions, window o
    holding [floor(o n / out), ceil((o + 1) n / out)), its tail repeating its last position
    up to the longest window's length k."""
    o = _np.arange(out)
    start, end = (o * n) // out, -((-(o + 1) * n) // out)
    k = int((end - start).max())
    return _np.minimum(start[None, :] + _np.arange(k)[:, None], end[None, :] - 1)


def _gather_windows(x, axis: int, table):
    """x's values at the (k, out) positions ``table`` along ``axis``: shape
    x.shape[:axis] + (k, out) + x.shape[axis + 1:] (take: differentiable)."""
    k, out = table.shape
    idx = gp.asarray(table.reshape(-1).astype(_np.int64), device=x.device)
    w = gp.take(x, idx, axis=axis)
    return gp.reshape(w, x.shape[:axis] + (k, out) + x.shape[axis + 1:])


class _Axis:
    """The windows of one spatial axis: regular ones (kernel, stride, dilation, padding) taken
    by im2col, or adaptive ones gathered by a position table."""

    def __init__(self, n, out, k=None, s=None, d=1, lo=0, hi=0):
        self.n, self.out = n, out
        if k is None:   # adaptive: uniform windows where out divides n
            if n % out == 0:
                k = s = n // out
            else:
                self.table = _adaptive_table(n, out)
                self.base = self.table[0]
                self.k, self.d = self.table.shape[0], 1
                return
        self.table = None
        self.k, self.s, self.d, self.lo, self.hi = k, s, d, lo, hi
        self.base = _np.arange(out) * s - lo

    def windows(self, x, axis: int, fill: float):
        if self.table is not None:
            return _gather_windows(x, axis, self.table)
        return _unfold_axis(x, axis, self.k, self.s, self.d, self.lo, self.hi, fill, self.out)

    def positions(self):
        """(k, out) input positions of each window slot, clipped into the axis."""
        if self.table is not None:
            return self.table
        return _np.clip(self.base[None, :] + self.d * _np.arange(self.k)[:, None], 0, self.n - 1)


def _axis_vector(v, ndim: int, axis: int, device):
    """The int64 host vector ``v`` on ``device``, shaped to lie along ``axis`` of ndim axes."""
    a = gp.asarray(_np.asarray(v, dtype=_np.int64), device=device)
    return gp.reshape(a, (len(v),) + (1,) * (ndim - axis - 1))


def _max_nd(x, axes: list, want_indices: bool):
    """Maximum over the windows of the trailing len(axes) axes of x (N, C, *spatial), one axis
    at a time from the last (a box's maximum is the maximum of its rows' maxima): each step
    picks the first maximum of its windows (argmax), the gradient goes there alone
    (take_along_axis). Going from the last axis the first maximum found is the first in
    row-major order: torch's. With ``want_indices`` also the flat position of each maximum in
    its (unpadded) input plane, int64."""
    n = len(axes)
    sizes = x.shape[2:]
    strides = [math.prod(sizes[i + 1:]) for i in range(n)]
    y, flat = x, None
    for i in reversed(range(n)):
        ax, spec = 2 + i, axes[i]
        w = spec.windows(y, ax, float("-inf"))
        arg = gp.argmax(w, axis=ax, keepdims=True)
        y = gp.squeeze(gp.take_along_axis(w, arg, axis=ax), axis=ax)
        if not want_indices:
            continue
        arg = gp.squeeze(arg, axis=ax)
        pos = _axis_vector(spec.base, y.ndim, ax, y.device) + arg * spec.d
        if flat is not None:
            # the positions found along later axes, carried through this axis's choice
            fw = _gather_windows(flat, ax, spec.positions())
            flat = gp.squeeze(gp.take_along_axis(fw, gp.expand_dims(arg, axis=ax), axis=ax),
                              axis=ax)
            flat = flat + pos * strides[i]
        else:
            flat = pos * strides[i]
    return y, flat


def _max_pool_nd(input, n, kernel_size, stride, padding, dilation, ceil_mode, op,
                 want_indices):
    x, k, s, p, d, out, extra = _pool_nd(input, n, kernel_size, stride, padding, dilation,
                                         ceil_mode, op)
    axes = [_Axis(m, o, ki, si, di, pi, ei)
            for m, o, ki, si, di, pi, ei in zip(x.shape[2:], out, k, s, d, p, extra)]
    y, idx = _max_nd(x, axes, want_indices)
    if input.ndim == n + 1:
        y = gp.squeeze(y, axis=0)
        idx = None if idx is None else gp.squeeze(idx, axis=0)
    return (y, idx) if want_indices else y


def max_pool1d_with_indices(input: Array, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple:
    """``(max_pool1d(...), indices)``: the int64 position of each maximum along L."""
    return _max_pool_nd(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                        "max_pool1d", True)


def max_pool2d_with_indices(input: Array, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple:
    """``(max_pool2d(...), indices)``: the int64 flat position (h * W + w) of each maximum in
    its input plane, torch's; on ties the first maximum in row-major order, as torch."""
    return _max_pool_nd(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                        "max_pool2d", True)


def max_pool3d_with_indices(input: Array, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = False) -> tuple:
    """``(max_pool3d(...), indices)``: flat positions (d * H * W + h * W + w), int64."""
    return _max_pool_nd(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                        "max_pool3d", True)


def max_pool3d(input: Array, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """Maximum over each window of (N, C, D, H, W) (or (C, D, H, W)); padding counts as -inf.
    With ``return_indices`` also the flat positions of the maxima (max_pool3d_with_indices)."""
    return _max_pool_nd(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                        "max_pool3d", bool(return_indices))


def avg_pool3d(input: Array, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Array:
    """Mean over each window of (N, C, D, H, W) (or (C, D, H, W)), with torch's divisors:
    the window clipped to the padded input (count_include_pad) or to the input, or
    ``divisor_override``."""
    op = "avg_pool3d"
    x, k, s, p, d, out, extra = _pool_nd(input, 3, kernel_size, stride, padding, 1, ceil_mode,
                                         op)
    _check_divisor(divisor_override, op)
    total = x
    for i in reversed(range(3)):
        ax = 2 + i
        w = _unfold_axis(total, ax, k[i], s[i], 1, p[i], extra[i], 0.0, out[i])
        total = gp.sum(w, axis=ax)
    if divisor_override:
        y = total / float(divisor_override)
    else:
        div = _np.ones((), dtype=_np.float64)
        for m, o, ki, si, pi in zip(x.shape[2:], out, k, s, p):
            start = _np.arange(o) * si - pi
            end = _np.minimum(start + ki, m + pi)
            cnt = end - start if count_include_pad else \
                _np.minimum(end, m) - _np.maximum(start, 0)
            div = div[..., None] * cnt
        y = total / gp.asarray(div, dtype=x.dtype, device=x.device)
    return y if input.ndim == 5 else gp.squeeze(y, axis=0)


def _adaptive_sizes(input, n: int, output_size, op: str) -> tuple:
    _check_float(input, op)
    if input.ndim not in (n + 1, n + 2):
        raise ValueError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape "
                         f"{input.shape}")
    os_ = (output_size,) * n if output_size is None or isinstance(output_size, int) \
        else tuple(output_size)
    if len(os_) != n:
        raise ValueError(f"{op}: output_size must be an int, None or a tuple of {n}, got "
                         f"{output_size!r}")
    spatial = input.shape[-n:]
    out = tuple(m if o is None else o for o, m in zip(os_, spatial))
    if any(not isinstance(o, int) or isinstance(o, bool) or o < 1 for o in out):
        raise ValueError(f"{op}: output_size must hold positive ints (or None), got "
                         f"{output_size!r}")
    if any(m < 1 for m in spatial):
        raise ValueError(f"{op}: expected an input with non-zero spatial sizes, got shape "
                         f"{input.shape}")
    return out


def adaptive_avg_pool1d(input: Array, output_size: int | tuple[int]) -> Array:
    """Mean pooling of (N, C, L) (or (C, L)) to ``output_size`` positions, torch's windows."""
    (o,) = _adaptive_sizes(input, 1, output_size, "adaptive_avg_pool1d")
    return _adaptive_mean(input, input.ndim - 1, o)


def adaptive_avg_pool3d(input: Array, output_size) -> Array:
    """Mean pooling of (N, C, D, H, W) (or (C, D, H, W)) to ``output_size`` (None keeps that
    size)."""
    out = _adaptive_sizes(input, 3, output_size, "adaptive_avg_pool3d")
    y = input
    for i, o in enumerate(out):
        y = _adaptive_mean(y, input.ndim - 3 + i, o)
    return y


def _adaptive_max(input, n: int, output_size, op: str, want_indices: bool):
    out = _adaptive_sizes(input, n, output_size, op)
    x = input if input.ndim == n + 2 else gp.expand_dims(input, axis=0)
    axes = [_Axis(m, o) for m, o in zip(x.shape[2:], out)]
    y, idx = _max_nd(x, axes, want_indices)
    if input.ndim == n + 1:
        y = gp.squeeze(y, axis=0)
        idx = None if idx is None else gp.squeeze(idx, axis=0)
    return (y, idx) if want_indices else y


def adaptive_max_pool1d(input: Array, output_size, return_indices: bool = False):
    """Max pooling of (N, C, L) (or (C, L)) to ``output_size`` positions, torch's windows; with
    ``return_indices`` also the int64 position of each maximum."""
    return _adaptive_max(input, 1, output_size, "adaptive_max_pool1d", bool(return_indices))


def adaptive_max_pool2d(input: Array, output_size, return_indices: bool = False):
    """Max pooling of (N, C, H, W) (or (C, H, W)) to ``output_size`` (None keeps that size);
    with ``return_indices`` also each maximum's flat position h * W + w, int64."""
    return _adaptive_max(input, 2, output_size, "adaptive_max_pool2d", bool(return_indices))


def adaptive_max_pool3d(input: Array, output_size, return_indices: bool = False):
    """Max pooling of (N, C, D, H, W) (or (C, D, H, W)) to ``output_size``; with
    ``return_indices`` also each maximum's flat position in its D * H * W plane, int64."""
    return _adaptive_max(input, 3, output_size, "adaptive_max_pool3d", bool(return_indices))


def adaptive_max_pool1d_with_indices(input: Array, output_size,
                                     return_indices: bool = False) -> tuple:
    """``adaptive_max_pool1d(input, output_size, return_indices=True)``."""
    return _adaptive_max(input, 1, output_size, "adaptive_max_pool1d", True)


def adaptive_max_pool2d_with_indices(input: Array, output_size,
                                     return_indices: bool = False) -> tuple:
    """``adaptive_max_pool2d(input, output_size, return_indices=True)``."""
    return _adaptive_max(input, 2, output_size, "adaptive_max_pool2d", True)


def adaptive_max_pool3d_with_indices(input: Array, output_size,
                                     return_indices: bool = False) -> tuple:
    """``adaptive_max_pool3d(input, output_size, return_indices=True)``."""
    return _adaptive_max(input, 3, output_size, "adaptive_max_pool3d", True)


def _unpool_size(input, n: int, k, s, p, output_size, op: str) -> tuple:
    """torch's _unpool_output_size: the default (in - 1) * stride + kernel - 2 * padding per
    axis, or ``output_size`` (its last n entries given n + 2) within a stride of it."""
    default = tuple((m - 1) * si + ki - 2 * pi
                    for m, ki, si, pi in zip(input.shape[-n:], k, s, p))
    if output_size is None:
        return default
    os_ = tuple(output_size)
    if len(os_) == n + 2:
        os_ = os_[2:]
    if len(os_) != n:
        raise ValueError(f"{op}: output_size must hold {n} or {n + 2} sizes, got "
                         f"{output_size!r}")
    for i, (o, dflt, si) in enumerate(zip(os_, default, s)):
        if not dflt - si < o < dflt + si:
            raise ValueError(f"{op}: invalid output_size {tuple(output_size)!r} (dim {i} must "
                             f"be between {dflt - si} and {dflt + si}, exclusive)")
    return tuple(int(o) for o in os_)


class _MaxUnpool(Function):
    """x (R, L) placed at the int64 positions idx (R, L) of zero rows of length ``size``, a
    repeated position keeping the last value written there (torch's CPU order), as a gather:
    the positions sorted (stably), each output position's last match found by searchsorted.
    No in-place scatter, so a grilly.jit replay recomputes it whole. The backward gathers the
    gradient at the same positions."""

    @staticmethod
    def forward(ctx, x, idx, *, size):
        ctx.idx = idx
        r, n = idx.shape
        dev = x.device
        rows = gp.reshape(gp.arange(r, dtype=gp.int64, device=dev) * size, (-1, 1))
        pos = gp.reshape(idx + rows, (-1,))
        order = gp.argsort(pos, stable=True)
        spos = gp.take(pos, order)
        q = gp.arange(r * size, dtype=gp.int64, device=dev)
        j = gp.searchsorted(spos, q, side="right") - 1
        jc = gp.clip(j, 0, max(r * n - 1, 0))
        hit = gp.logical_and(j >= 0, gp.take(spos, jc) == q)
        vals = gp.take(gp.reshape(x, (-1,)), gp.take(order, jc))
        out = gp.where(hit, vals, gp.zeros((), dtype=x.dtype, device=dev))
        return gp.reshape(out, (r, size))

    @staticmethod
    def backward(ctx, g):
        return gp.take_along_axis(g, ctx.idx, axis=1), None


def _max_unpool_nd(input, indices, n, kernel_size, stride, padding, output_size, op):
    _check_float(input, op)
    if input.ndim not in (n + 1, n + 2):
        raise ValueError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape "
                         f"{input.shape}")
    if not isinstance(indices, Array) or not gp.isdtype(indices.dtype, "integral"):
        raise TypeError(f"{op}: indices must be an integer Array (as max_pool returns them), "
                        f"got {getattr(indices, 'dtype', type(indices).__name__)}")
    if tuple(indices.shape) != tuple(input.shape):
        raise ValueError(f"{op}: indices shape {tuple(indices.shape)} must match the input "
                         f"shape {tuple(input.shape)}")
    k = _ntuple(kernel_size, n, "kernel_size", op)
    s = k if stride is None else _ntuple(stride, n, "stride", op)
    p = _ntuple(padding, n, "padding", op)
    out = _unpool_size(input, n, k, s, p, output_size, op)
    lead = input.shape[:-n]
    size = math.prod(out)
    idx = gp.reshape(indices, (-1, math.prod(input.shape[-n:])))
    if idx.dtype != gp.int64:
        idx = gp.astype(idx, gp.int64)
    try:
        # torch rejects an index outside the plane: take's bounds check (one flag read, as
        # embedding's), a negative index moved below -size first so that it fails too
        gp.take(gp.zeros((size,), dtype=gp.int8, device=idx.device),
                gp.reshape(gp.where(idx < 0, idx - size, idx), (-1,)))
    except IndexError as e:
        import re

        m = re.search(r"index (-?\d+) is out of bounds", str(e))
        bad = "" if m is None else f" {int(m.group(1)) + (size if int(m.group(1)) < 0 else 0)}"
        raise IndexError(f"{op}: found an invalid max index{bad} (indices must be in "
                         f"[0, {size}) for the output size {out})") from None
    y = _MaxUnpool.apply(gp.reshape(input, idx.shape), idx, size=size)
    return gp.reshape(y, lead + out)


def max_unpool1d(input: Array, indices: Array, kernel_size, stride=None, padding=0,
                 output_size=None) -> Array:
    """The inverse of max_pool1d: each value of (N, C, L) placed at its index in zeros of
    length (L - 1) * stride + kernel_size - 2 * padding (or ``output_size``)."""
    return _max_unpool_nd(input, indices, 1, kernel_size, stride, padding, output_size,
                          "max_unpool1d")


def max_unpool2d(input: Array, indices: Array, kernel_size, stride=None, padding=0,
                 output_size=None) -> Array:
    """The inverse of max_pool2d: each value of (N, C, H, W) placed at its flat index in a
    zero plane of torch's default size (or ``output_size``); the gradient is gathered back."""
    return _max_unpool_nd(input, indices, 2, kernel_size, stride, padding, output_size,
                          "max_unpool2d")


def max_unpool3d(input: Array, indices: Array, kernel_size, stride=None, padding=0,
                 output_size=None) -> Array:
    """The inverse of max_pool3d on (N, C, D, H, W): values placed at their flat indices."""
    return _max_unpool_nd(input, indices, 3, kernel_size, stride, padding, output_size,
                          "max_unpool3d")


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, n: int, op: str):
    """torch's lp_pool: (sum over each window of x^p)^(1/p), composed as torch composes it
    (an average pool of x^p times the window size, sign(a) * relu(|a|) before the root);
    norm_type inf is the window's max |x|, -inf its min |x|."""
    _check_float(input, op)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or norm_type == 0:
        raise ValueError(f"{op}: norm_type must be a non-zero number, got {norm_type!r}")
    k = _ntuple(kernel_size, n, "kernel_size", op)
    if math.isinf(norm_type):
        # torch's limit of the p-norm: the largest |x| of each window (-inf: the smallest)
        mx = {1: max_pool1d, 2: max_pool2d, 3: max_pool3d}[n]
        if norm_type > 0:
            return mx(gp.abs(input), k, stride, 0, 1, ceil_mode)
        return -mx(-gp.abs(input), k, stride, 0, 1, ceil_mode)
    avg = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[n]
    a = avg(gp.pow(input, float(norm_type)), k, stride, 0, ceil_mode)
    a = gp.sign(a) * relu(gp.abs(a))
    return gp.pow(a * float(math.prod(k)), 1.0 / float(norm_type))


def lp_pool1d(input: Array, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Array:
    """The ``norm_type``-norm of each window of (N, C, L): torch's ``F.lp_pool1d``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, "lp_pool1d")


def lp_pool2d(input: Array, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Array:
    """The ``norm_type``-norm of each window of (N, C, H, W): torch's ``F.lp_pool2d``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, "lp_pool2d")


def lp_pool3d(input: Array, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Array:
    """The ``norm_type``-norm of each window of (N, C, D, H, W): torch's ``F.lp_pool3d``."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, "lp_pool3d")


# ---- embedding_bag, gumbel_softmax, affine_grid/grid_sample, ctc_loss, fractional pooling ------
__all__ += ["embedding_bag", "gumbel_softmax", "affine_grid", "grid_sample", "ctc_loss",
            "fractional_max_pool2d", "fractional_max_pool2d_with_indices",
            "fractional_max_pool3d", "fractional_max_pool3d_with_indices"]


def _int_array(a, op: str, arg: str, device) -> Array:
    """``a`` (an integer Array, or a Python int sequence) as an int64 Array on ``device``."""
    if isinstance(a, Array):
        if not gp.isdtype(a.dtype, "integral"):
            raise TypeError(f"{op}: {arg} must be an integer array, got {a.dtype}")
        return a if a.dtype == gp.int64 else gp.astype(a, gp.int64)
    try:
        v = _np.asarray(a)
    except (TypeError, ValueError):
        v = None
    if v is None or not (v.dtype.kind in "iu" or (v.size == 0 and v.dtype.kind == "f")):
        raise TypeError(f"{op}: {arg} must be an integer array or a sequence of ints, got "
                        f"{type(a).__name__}")
    return gp.asarray(v.astype(_np.int64), device=device)


def embedding_bag(input: Array, weight: Array, offsets: Array | None = None,
                  max_norm: float | None = None, norm_type: float = 2, scale_grad_by_freq: bool = False,
                  mode: str = "mean", sparse: bool = False, per_sample_weights: Array | None = None,
                  include_last_offset: bool = False, padding_idx: int | None = None) -> Array:
    """Sums, means or maxima of bags of ``weight`` rows: torch's ``F.embedding_bag``. A 2-D
    input holds one bag per row; a 1-D input is cut into bags starting at ``offsets``. Empty
    bags (and bags of ``padding_idx`` only) give zeros; ``scale_grad_by_freq`` divides each
    lookup's gradient by its index's count in ``input``. A 1-D input's bags are reduced as
    runs of rows (grilly.array.segments: O(indices + bags) memory; offsets are never read
    back to the host)."""
    op = "embedding_bag"
    if not isinstance(input, Array) or not gp.isdtype(input.dtype, "integral"):
        raise TypeError(f"{op}: input must be an integer Array, got "
                        f"{getattr(input, 'dtype', type(input).__name__)}")
    _check_float(weight, op, "weight")
    if weight.ndim != 2:
        raise ValueError(f"{op}: weight must be 2-D (num_embeddings, embedding_dim), got shape "
                         f"{weight.shape}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"{op}: mode must be 'sum', 'mean' or 'max', got {mode!r}")
    if scale_grad_by_freq and mode == "max":
        raise ValueError(f"{op}: mode='max' does not support scale_grad_by_freq=True (as torch)")
    if sparse:
        raise NotImplementedError(f"{op}: sparse=True is not supported (grilly has no sparse "
                                  "gradients)")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise ValueError(f"{op}: padding_idx {padding_idx} must be within [-{n}, {n})")
        padding_idx %= n
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"{op}: per_sample_weights is only supported for "
                                      f"mode='sum', got mode={mode!r}")
        _check_float(per_sample_weights, op, "per_sample_weights")
        if per_sample_weights.shape != input.shape:
            raise ValueError(f"{op}: per_sample_weights must have the input's shape "
                             f"{input.shape}, got {per_sample_weights.shape}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"{op}: offsets must be None when input is 2-D, got an array of "
                             f"shape {getattr(offsets, 'shape', None)}")
        if include_last_offset:
            raise ValueError(f"{op}: include_last_offset=True needs a 1-D input with offsets")
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError(f"{op}: a 1-D input needs offsets (the start of each bag)")
        offsets = _int_array(offsets, op, "offsets", input.device)
        if offsets.ndim != 1:
            raise ValueError(f"{op}: offsets must be 1-D, got shape {offsets.shape}")
        if include_last_offset and offsets.shape[0] < 1:
            raise ValueError(f"{op}: include_last_offset=True needs at least one offset")
    else:
        raise ValueError(f"{op}: input must be 1-D (with offsets) or 2-D (bags, length), got "
                         f"shape {input.shape}")
    idx = gp.reshape(input, (-1,))
    if idx.dtype != gp.int64:
        idx = gp.astype(idx, gp.int64)
    idx = gp.where(idx < 0, idx - n, idx)   # negative indices fail take's bounds check
    try:
        if max_norm is not None:
            with _no_grad():
                _embedding_renorm(weight, idx, max_norm, norm_type)
        rows = gp.take(weight, idx, axis=0)   # (K, D)
    except IndexError as e:
        raise IndexError(_embedding_index_error(e, n).replace("embedding:", f"{op}:")) from None
    if scale_grad_by_freq and weight.requires_grad and is_grad_enabled():
        # each lookup's gradient divided by how often its index occurs in the whole input
        rows = _ScaleGrad.apply(rows, gp.expand_dims(1.0 / _index_counts(idx, rows.dtype), -1))
    if input.ndim == 2:
        return _fixed_bags(input, idx, rows, weight.shape[1], mode, per_sample_weights,
                           padding_idx)
    k = idx.shape[0]
    b = offsets.shape[0] - (1 if include_last_offset else 0)
    start = offsets[:b]
    end = offsets[1:b + 1] if include_last_offset else gp.concat(
        [offsets[1:], gp.full((1,), k, dtype=offsets.dtype, device=input.device)])
    # each bag is the run rows[start:end]: segment reductions, O(K + bags) memory
    keep = None if padding_idx is None else idx != padding_idx
    if mode == "max":
        if keep is not None:
            rows = gp.where(gp.expand_dims(keep, axis=-1), rows,
                            gp.asarray(float("-inf"), dtype=rows.dtype, device=rows.device))
        top = _segments.segment_max(rows, start, end, fill=0.0)[0]
        if keep is None:
            return top   # (an empty bag's fill: 0)
        count = _segments.segment_sum(gp.astype(keep, rows.dtype), start, end)
        return gp.where(gp.expand_dims(count > 0, axis=-1), top,
                        gp.zeros((), dtype=top.dtype, device=top.device))
    scale = per_sample_weights
    if keep is not None:
        k_w = gp.astype(keep, rows.dtype)
        scale = k_w if scale is None else scale * k_w
    out = _segments.segment_sum(rows if scale is None else rows * gp.expand_dims(scale, axis=-1),
                                start, end)
    if mode == "mean":
        ones = gp.ones((k,), dtype=rows.dtype, device=rows.device) if keep is None else k_w
        count = gp.expand_dims(_segments.segment_sum(ones, start, end), axis=-1)
        out = out / gp.maximum(count, gp.ones((), dtype=count.dtype, device=count.device))
    return out


def _fixed_bags(input: Array, idx: Array, rows: Array, dim: int, mode: str, psw, padding_idx):
    """embedding_bag of a 2-D input: one bag of fixed length per row, reduced over its axis."""
    b, length = input.shape
    rows = gp.reshape(rows, (b, length, dim))
    member = gp.reshape(idx, (b, length)) != (-1 if padding_idx is None else padding_idx)
    if mode == "max":
        vals = gp.where(gp.expand_dims(member, axis=-1), rows,
                        gp.asarray(float("-inf"), dtype=rows.dtype, device=rows.device))
        arg = gp.argmax(vals, axis=1, keepdims=True)
        top = gp.squeeze(gp.take_along_axis(vals, arg, axis=1), axis=1)
        return gp.where(gp.expand_dims(gp.any(member, axis=1), axis=-1), top,
                        gp.zeros((), dtype=top.dtype, device=top.device))
    m = gp.astype(member, rows.dtype)
    if psw is not None:
        m = m * psw
    out = gp.sum(rows * gp.expand_dims(m, axis=-1), axis=1)
    if mode == "mean":
        count = gp.sum(gp.astype(member, rows.dtype), axis=1, keepdims=True)
        out = out / gp.maximum(count, gp.ones((), dtype=count.dtype, device=count.device))
    return out


def gumbel_softmax(logits: Array, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Array:
    """A sample of the Gumbel-softmax distribution: softmax((logits + g) / tau) with Gumbel
    noise g from grilly.random; ``hard`` returns the one-hot of its argmax with the soft
    sample's gradient (straight-through). ``eps`` is unused, as in torch."""
    _check_float(logits, "gumbel_softmax", "logits")
    if not tau > 0:
        raise ValueError(f"gumbel_softmax: tau must be positive, got {tau}")
    if logits.ndim == 0:
        raise ValueError("gumbel_softmax: logits must have at least one dimension")
    dim = dim + logits.ndim if dim < 0 else dim
    if not 0 <= dim < logits.ndim:
        raise ValueError(f"gumbel_softmax: dim {dim} is out of range for a {logits.ndim}-D input")
    u = _grandom.uniform(shape=logits.shape, dtype=_draw_dtype(logits.dtype),
                         device=logits.device)
    # -log(E), E ~ Exp(1) drawn as -log(1 - u); a draw of u = 0 (E = 0) is moved to the
    # smallest normal number, as torch's exponential_ never returns 0 (else inf and NaN)
    e = gp.maximum(-gp.log1p(-u), gp.asarray(gp.finfo(u.dtype).smallest_normal, dtype=u.dtype,
                                             device=u.device))
    gumbels = gp.astype(-gp.log(e), logits.dtype)   # (bfloat16: computed in float32)
    y_soft = softmax((logits + gumbels) / tau, dim=dim)
    if not hard:
        return y_soft
    index = gp.argmax(_detach(y_soft), axis=dim, keepdims=True)
    cls = gp.reshape(gp.arange(logits.shape[dim], dtype=index.dtype, device=logits.device),
                     (-1,) + (1,) * (logits.ndim - dim - 1))
    y_hard = gp.astype(index == cls, logits.dtype)
    return y_hard - _detach(y_soft) + y_soft


def _grid_axis(n: int, align_corners: bool):
    """torch's normalized sample positions of an axis of ``n`` points (host float64)."""
    if n <= 1:
        return _np.zeros(max(n, 1))
    r = _np.linspace(-1.0, 1.0, n)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta: Array, size, align_corners: bool | None = None) -> Array:
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps ``theta``
    (N, 2, 3) (or (N, 3, 4)) over an output of ``size`` (N, C, H, W) (or (N, C, D, H, W)), in
    grid_sample's normalized coordinates: torch's ``F.affine_grid``."""
    op = "affine_grid"
    _check_float(theta, op, "theta")
    size = tuple(int(s) for s in size)
    if len(size) not in (4, 5):
        raise ValueError(f"{op}: size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) entries, got "
                         f"{size}")
    nd = len(size) - 2
    if theta.shape != (size[0], nd, nd + 1):
        raise ValueError(f"{op}: for size {size} theta must have shape "
                         f"{(size[0], nd, nd + 1)}, got {theta.shape}")
    if min(size[2:]) <= 0:
        raise ValueError(f"{op}: the spatial sizes must be positive, got {size}")
    align = bool(align_corners)
    axes = [_grid_axis(s, align) for s in size[2:]]      # (D,) H, W
    mesh = _np.meshgrid(*axes, indexing="ij")
    # torch's base grid holds (x, y[, z], 1): the last spatial axis first
    base = _np.stack([*reversed(mesh), _np.ones_like(mesh[0])], axis=-1).reshape(-1, nd + 1)
    base = gp.asarray(base, dtype=theta.dtype, device=theta.device)
    grid = gp.matmul(base, gp.permute_dims(theta, (0, 2, 1)))   # (N, points, nd)
    return gp.reshape(grid, (size[0], *size[2:], nd))


def _reflect(c, twice_low: int, twice_high: int):
    """torch's reflect_coordinates: c folded into [twice_low / 2, twice_high / 2]."""
    if twice_low == twice_high:
        return c * 0.0
    lo, span = twice_low / 2.0, (twice_high - twice_low) / 2.0
    a = gp.abs(c - lo)
    flips = gp.floor(_detach(a) / span)
    extra = a - flips * span
    even = gp.remainder(flips, 2.0) == 0
    return gp.where(even, extra + lo, span - extra + lo)


def grid_sample(input: Array, grid: Array, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Array:
    """``input`` (N, C, H, W) (or (N, C, D, H, W)) sampled at the normalized positions
    ``grid`` (N, Ho, Wo, 2) (or (..., 3)), x first: torch's ``F.grid_sample`` ('bilinear',
    'nearest' or, 4-D, 'bicubic'; padding 'zeros', 'border' or 'reflection'), differentiable
    in both."""
    op = "grid_sample"
    _check_float(input, op)
    _check_float(grid, op, "grid")
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"{op}: mode must be 'bilinear', 'nearest' or 'bicubic', got {mode!r}")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"{op}: padding_mode must be 'zeros', 'border' or 'reflection', got "
                         f"{padding_mode!r}")
    if input.ndim not in (4, 5):
        raise ValueError(f"{op}: input must be 4-D (N, C, H, W) or 5-D (N, C, D, H, W), got "
                         f"shape {input.shape}")
    nd = input.ndim - 2
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"{op}: mode='bicubic' needs a 4-D input, got shape {input.shape}")
    if grid.ndim != input.ndim or grid.shape[0] != input.shape[0] or grid.shape[-1] != nd:
        raise ValueError(f"{op}: for an input of shape {input.shape} grid must have shape "
                         f"(N={input.shape[0]}, {', '.join(['*'] * nd)}, {nd}), got {grid.shape}")
    input, grid = _promoted(input, grid, op="grid_sample")
    align = bool(align_corners)
    n, c, spatial = input.shape[0], input.shape[1], input.shape[2:]
    out_sp = grid.shape[1:-1]
    q = math.prod(out_sp)
    g = gp.reshape(grid, (n, q, nd))
    def pad(x, size):
        """torch's compute_coordinates: x folded (reflection) and clamped (border) into the
        input; as is for zeros."""
        if padding_mode == "reflection":
            x = _reflect(x, 0, 2 * (size - 1)) if align else _reflect(x, -1, 2 * size - 1)
        if padding_mode != "zeros":
            x = gp.clip(x, 0.0, float(size - 1))
        return x

    raw, coords = [], []   # per spatial axis (D,) H, W: pixel coordinates (N, Q)
    for i, size in enumerate(spatial):
        x = g[:, :, nd - 1 - i]
        x = (x + 1.0) * 0.5 * (size - 1) if align else ((x + 1.0) * size - 1.0) * 0.5
        raw.append(x)
        coords.append(x if mode == "bicubic" else pad(x, size))
    strides = [math.prod(spatial[i + 1:]) for i in range(nd)]
    flat_in = gp.reshape(input, (n, c, math.prod(spatial)))

    def corner(idx_list):
        """Values (N, C, Q) at the integer positions ``idx_list`` (float, per axis), zero
        outside the input, and that validity (N, 1, Q)."""
        valid, flat = None, None
        for ix, size, st in zip(idx_list, spatial, strides):
            ok = (ix >= 0.0) & (ix <= float(size - 1))
            valid = ok if valid is None else valid & ok
            i = gp.astype(gp.clip(ix, 0.0, float(size - 1)), gp.int64) * st
            flat = i if flat is None else flat + i
        vals = gp.take_along_axis(flat_in, gp.expand_dims(flat, axis=1), axis=2)
        return vals, gp.astype(gp.expand_dims(valid, axis=1), input.dtype)

    if mode == "bicubic":
        # torch's: the 4 x 4 taps around the unpadded position, each tap's position padded
        # on its own (zero where it stays outside), cubic convolution weights (A = -0.75)
        base = [gp.floor(_detach(x)) for x in raw]   # (not clipped: reflection folds taps)
        a = _CUBIC_A
        near = lambda t: ((a + 2) * t - (a + 3)) * t * t + 1   # noqa: E731  |t| <= 1
        far = lambda t: ((a * t - 5 * a) * t + 8 * a) * t - 4 * a   # noqa: E731  1 < |t| < 2
        wts = []
        for x, b in zip(raw, base):
            t = x - b
            wts.append((far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)))
        out = None
        for j in range(4):
            for i in range(4):
                vals, valid = corner([pad(base[0] + float(j - 1), spatial[0]),
                                      pad(base[1] + float(i - 1), spatial[1])])
                term = vals * (gp.expand_dims(wts[0][j] * wts[1][i], axis=1) * valid)
                out = term if out is None else out + term
    elif mode == "nearest":
        # torch rounds half to even (nearbyint)
        vals, valid = corner([gp.round(_detach(x)) for x in coords])
        out = vals * valid
        if grid.requires_grad:   # torch's grid gradient here is zeros (locally constant), not None
            out = _ZeroGradTo.apply(out, grid)
    else:
        # far outside coordinates are clipped before the integer cast (they read zeros anyway)
        base = [gp.floor(gp.clip(_detach(x), -2.0, float(size + 1)))
                for x, size in zip(coords, spatial)]
        frac = [x - b for x, b in zip(coords, base)]
        out = None
        for bits in range(2 ** nd):
            pick = [(bits >> (nd - 1 - i)) & 1 for i in range(nd)]
            w = None
            for p, f in zip(pick, frac):
                wi = f if p else 1.0 - f
                w = wi if w is None else w * wi
            vals, valid = corner([b + float(p) for b, p in zip(base, pick)])
            term = vals * (gp.expand_dims(w, axis=1) * valid)
            out = term if out is None else out + term
    return gp.reshape(out, (n, c, *out_sp))


class _ZeroGradTo(Function):
    """``out`` as it is, with a zero gradient for ``to``: a piecewise-constant dependence
    (nearest grid_sample's grid), whose gradient torch gives as zeros rather than None."""

    @staticmethod
    def forward(ctx, out, to):
        ctx.like = (to.shape, to.dtype, to.device)
        return out

    @staticmethod
    def backward(ctx, g):
        shape, dtype, device = ctx.like
        return g, gp.zeros(shape, dtype=dtype, device=device)


_CTC_NEG = -1e30   # log(0) stand-in: -inf would put NaN into the gradients of unreachable paths


def _lse(*xs):
    """log(sum(exp(x))) of same-shaped finite arrays, shifted by their (constant) maximum."""
    m = xs[0]
    for x in xs[1:]:
        m = gp.maximum(m, x)
    m = _detach(m)
    s = None
    for x in xs:
        e = gp.exp(x - m)
        s = e if s is None else s + e
    return m + gp.log(s)


def _shift_right(a, k: int, fill):
    """``a`` (N, L) moved right by k positions along L, ``fill`` coming in on the left."""
    n, length = a.shape
    pad = gp.full((n, min(k, length)), fill, dtype=a.dtype, device=a.device)
    return pad if k >= length else gp.concat([pad, a[:, :length - k]], axis=1)


def _ctc_labels(targets, tl, tl_host, n: int, blank: int, op: str):
    """The targets as (N, W) labels, ``blank`` past each target's length: from padded (N, S)
    targets, or gathered from concatenated 1-D ones (W the longest length where the lengths
    came from the host, else the total length: no host read)."""
    if targets.ndim == 2:
        if targets.shape[0] != n:
            raise ValueError(f"{op}: targets must have {n} rows (the batch), got shape "
                             f"{targets.shape}")
        lab = targets if targets.dtype == gp.int64 else gp.astype(targets, gp.int64)
    elif targets.ndim == 1:
        total = targets.shape[0]
        if tl_host is not None and sum(tl_host) != total:
            raise ValueError(f"{op}: concatenated targets hold {total} labels but "
                             f"target_lengths sum to {sum(tl_host)}")
        width = max(tl_host, default=0) if tl_host is not None else total
        start = gp.cumsum(tl) - tl
        pos = gp.expand_dims(start, axis=1) + gp.arange(width, dtype=gp.int64,
                                                        device=targets.device)
        flat = targets if targets.dtype == gp.int64 else gp.astype(targets, gp.int64)
        if total:
            pos = gp.reshape(gp.clip(pos, 0, total - 1), (-1,))
            lab = gp.reshape(gp.take(flat, pos, axis=0), (n, width))
        else:
            lab = gp.zeros((n, width), dtype=gp.int64, device=targets.device)
    else:
        raise ValueError(f"{op}: targets must be 2-D (N, S) padded or 1-D concatenated, got "
                         f"shape {targets.shape}")
    keep = gp.arange(lab.shape[1], dtype=gp.int64, device=lab.device) < gp.expand_dims(tl, axis=1)
    return gp.where(keep, lab, gp.asarray(blank, dtype=gp.int64, device=lab.device))


def ctc_loss(log_probs: Array, targets: Array, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Array:
    """The connectionist temporal classification loss of ``log_probs`` (T, N, C) (or (T, C))
    given ``targets`` (N, S) padded or concatenated: torch's ``F.ctc_loss``, the forward
    (alpha) recursion in log space, a loop over time vectorized over batch and labels, its
    gradient by autograd. Impossible alignments give inf (0 with ``zero_infinity``)."""
    op = "ctc_loss"
    _check_float(log_probs, op, "log_probs")
    _check_reduction(reduction, op)
    if not isinstance(targets, Array) or not gp.isdtype(targets.dtype, "integral"):
        raise TypeError(f"{op}: targets must be an integer Array, got "
                        f"{getattr(targets, 'dtype', type(targets).__name__)}")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = gp.expand_dims(log_probs, axis=1)
        if targets.ndim != 1:
            raise ValueError(f"{op}: unbatched (T, C) log_probs need 1-D targets, got shape "
                             f"{targets.shape}")
        targets = gp.expand_dims(targets, axis=0)
    elif log_probs.ndim != 3:
        raise ValueError(f"{op}: log_probs must be (T, N, C) or (T, C), got shape "
                         f"{log_probs.shape}")
    t_max, n, c = log_probs.shape
    if not 0 <= blank < c:
        raise ValueError(f"{op}: blank must be in [0, {c}), got {blank}")
    if targets.device != log_probs.device:
        targets = targets.to_device(log_probs.device)   # as torch moves them to log_probs'

    lengths = []
    for name, v in (("input_lengths", input_lengths), ("target_lengths", target_lengths)):
        host = None if isinstance(v, Array) else _np.asarray(v).reshape(-1)
        a = gp.reshape(_int_array(v, op, name, log_probs.device), (-1,))
        if a.device != log_probs.device:
            # lengths are host data to torch (CPU tensors beside CUDA log_probs): any device's
            a = a.to_device(log_probs.device)
        if a.shape != (n,):
            raise ValueError(f"{op}: {name} must hold {n} lengths (one per batch entry), got "
                             f"shape {a.shape}")
        if host is not None and (host < 0).any():
            raise ValueError(f"{op}: {name} must be non-negative, got {host.tolist()}")
        lengths.append((a, None if host is None else [int(i) for i in host]))
    (in_len, in_host), (tl, tl_host) = lengths
    if in_host is not None and max(in_host, default=0) > t_max:
        raise ValueError(f"{op}: input_lengths {in_host} exceed the {t_max} time steps")
    lp = gp.astype(log_probs, gp.float32) if log_probs.dtype == gp.float16 else log_probs
    labels = _ctc_labels(targets, tl, tl_host, n, blank, op)
    w = labels.shape[1]
    blanks = gp.full((n, w), blank, dtype=gp.int64, device=lp.device)
    ext = gp.concat([gp.reshape(gp.stack([blanks, labels], axis=-1), (n, 2 * w)),
                     gp.full((n, 1), blank, dtype=gp.int64, device=lp.device)], axis=1)
    # a label may be reached from two positions back unless it repeats the label before it
    skip = (ext != blank) & (ext != _shift_right(ext, 2, -1))
    emit = gp.take_along_axis(lp, gp.expand_dims(ext, axis=0), axis=2)   # (T, N, 2W + 1)
    neg = gp.asarray(_CTC_NEG, dtype=lp.dtype, device=lp.device)
    # alpha before the first step: all paths start at position 0 (log 1)
    alpha = gp.where(gp.arange(2 * w + 1, device=lp.device) == 0,
                     gp.zeros((), dtype=lp.dtype, device=lp.device), neg)
    alpha = gp.broadcast_to(alpha, (n, 2 * w + 1))
    for t, e in enumerate(gp.unstack(emit, axis=0)):
        step = _lse(alpha, _shift_right(alpha, 1, _CTC_NEG),
                    gp.where(skip, _shift_right(alpha, 2, _CTC_NEG), neg)) + e
        alpha = gp.where(gp.expand_dims(in_len > t, axis=1), step, alpha)
    last = gp.expand_dims(2 * tl, axis=1)
    prev = gp.where(last > 0, gp.take_along_axis(alpha, gp.clip(last - 1, 0, None), axis=1), neg)
    ll = gp.squeeze(_lse(gp.take_along_axis(alpha, last, axis=1), prev), axis=1)
    impossible = ll < _CTC_NEG / 10
    nll = gp.where(impossible, gp.asarray(0.0 if zero_infinity else float("inf"), dtype=ll.dtype,
                                          device=ll.device), -ll)
    if lp is not log_probs:
        nll = gp.astype(nll, log_probs.dtype)
    if reduction == "mean":
        return gp.mean(nll / gp.astype(gp.maximum(tl, 1), nll.dtype))
    if reduction == "sum":
        return gp.sum(nll)
    return gp.squeeze(nll, axis=0) if unbatched else nll


def _fractional_starts(u, n_in: int, n_out: int, k: int):
    """torch's generate_intervals: the (..., n_out) int64 window starts along an axis from
    the uniform draws ``u`` (...), computed in u's dtype as torch computes them in the
    input's."""
    last = gp.full(u.shape + (1,), n_in - k, dtype=gp.int64, device=u.device)
    if n_out == 1:
        return last
    dt = _np.float64 if u.dtype == gp.float64 else _np.float32
    alpha = float(dt(n_in - k) / dt(n_out - 1))
    i = gp.arange(n_out - 1, dtype=u.dtype, device=u.device)
    ue = gp.expand_dims(u, axis=-1)
    seq = gp.floor((i + ue) * alpha) - gp.floor(ue * alpha)
    return gp.concat([gp.astype(seq, gp.int64), last], axis=-1)


def _fractional_max_pool(input, n: int, kernel_size, output_size, output_ratio,
                         _random_samples, op: str) -> tuple:
    """(values, indices) of torch's fractional max pooling of the last ``n`` axes of (N, C,
    *) or (C, *): windows placed by one uniform draw per (sample, channel, axis)."""
    _check_float(input, op)
    if input.ndim not in (n + 1, n + 2):
        raise ValueError(f"{op}: expected a {n + 1}-D or {n + 2}-D input, got shape "
                         f"{input.shape}")
    x = input if input.ndim == n + 2 else gp.expand_dims(input, axis=0)
    nb, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    k = _ntuple(kernel_size, n, "kernel_size", op)
    if (output_size is None) == (output_ratio is None):
        raise ValueError(f"{op}: give exactly one of output_size and output_ratio")
    if output_size is None:
        r = (output_ratio,) * n if isinstance(output_ratio, (int, float)) \
            else tuple(output_ratio)
        if len(r) != n or not all(0 < v < 1 for v in r):
            raise ValueError(f"{op}: output_ratio must be in (0, 1), got {output_ratio!r}")
        out = tuple(int(m * v) for m, v in zip(spatial, r))
    else:
        out = _ntuple(output_size, n, "output_size", op)
    names = ("depth", "height", "width")[3 - n:]
    for name, o, ki, m in zip(names, out, k, spatial):
        if ki < 1 or o < 1 or o + ki - 1 > m:
            raise ValueError(f"{op}: kernel_size {k} and output_size {out} do not fit the input "
                             f"{name} {m} (output + kernel - 1 must be at most the input)")
    if _random_samples is None:
        u = _grandom.uniform(shape=(nb, c, n), dtype=_draw_dtype(x.dtype), device=x.device)
    else:
        _check_float(_random_samples, op, "_random_samples")
        if _random_samples.shape != (nb, c, n):
            raise ValueError(f"{op}: _random_samples must have shape {(nb, c, n)}, got "
                             f"{_random_samples.shape}")
        u = _random_samples
    # as torch: in 2-D the first draw places the columns, the second the rows; in 3-D the
    # draws follow the axes (depth, height, width)
    order = (1, 0) if n == 2 else tuple(range(n))
    strides = [math.prod(spatial[a + 1:]) for a in range(n)]
    # (N, C, *out, *k) flat positions, each window in row-major order
    flat = None
    for a in range(n):
        start = _fractional_starts(u[:, :, order[a]], spatial[a], out[a], k[a])
        pos = gp.expand_dims(start, axis=-1) + gp.arange(k[a], dtype=gp.int64, device=x.device)
        shape = [nb, c] + [1] * (2 * n)
        shape[2 + a], shape[2 + n + a] = out[a], k[a]
        term = gp.reshape(pos * strides[a], tuple(shape))
        flat = term if flat is None else flat + term
    nout, nk = math.prod(out), math.prod(k)
    flat = gp.reshape(gp.broadcast_to(flat, (nb, c, *out, *k)), (nb, c, nout, nk))
    vals = gp.take_along_axis(gp.reshape(x, (nb, c, math.prod(spatial))),
                              gp.reshape(flat, (nb, c, -1)), axis=2)
    vals = gp.reshape(vals, flat.shape)
    arg = gp.argmax(vals, axis=-1, keepdims=True)   # the first maximum, as torch
    y = gp.reshape(gp.take_along_axis(vals, arg, axis=-1), (nb, c, *out))
    idx = gp.reshape(gp.take_along_axis(flat, arg, axis=-1), (nb, c, *out))
    if input.ndim == n + 1:
        y, idx = gp.squeeze(y, axis=0), gp.squeeze(idx, axis=0)
    return y, idx


def fractional_max_pool2d_with_indices(input: Array, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Array | None = None) -> tuple:
    """``(fractional_max_pool2d(...), indices)``: the int64 flat position in its H x W plane
    of each maximum."""
    return _fractional_max_pool(input, 2, kernel_size, output_size, output_ratio,
                                _random_samples, "fractional_max_pool2d")


def fractional_max_pool3d_with_indices(input: Array, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Array | None = None) -> tuple:
    """``(fractional_max_pool3d(...), indices)``: the int64 flat position in its D x H x W
    volume of each maximum."""
    return _fractional_max_pool(input, 3, kernel_size, output_size, output_ratio,
                                _random_samples, "fractional_max_pool3d")


def fractional_max_pool2d(input: Array, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Array | None = None):
    """Max pooling over pseudo-randomly placed windows of (N, C, H, W) (Graham's fractional
    max pooling): torch's ``F.fractional_max_pool2d``; ``_random_samples`` (N, C, 2) fixes the
    placement, else it is drawn from grilly.random."""
    y, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return (y, idx) if return_indices else y


def fractional_max_pool3d(input: Array, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Array | None = None):
    """fractional_max_pool2d over (N, C, D, H, W): torch's ``F.fractional_max_pool3d``;
    ``_random_samples`` is (N, C, 3)."""
    y, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio,
                                                return_indices, _random_samples)
    return (y, idx) if return_indices else y


# ---- autocast: the layers torch's autocast runs in float32 ---------------------------------
def _float32_in_autocast(name: str, fn):
    """``fn`` with its float16/bfloat16 array arguments cast to float32 inside an autocast
    region (grilly.amp.policy.FUNCTIONAL_FLOAT32: torch's fp32 list), recorded as the casts
    are, so gradients come back in the arguments' own dtypes."""
    import functools

    @functools.wraps(fn)
    def run(*args, **kw):
        if _dispatch.hooks.cast is not None:   # an autocast region (in some thread)
            args = _dispatch.autocast(name, *args)
            if kw:
                kw = dict(zip(kw, _dispatch.autocast(name, *kw.values())))
        return fn(*args, **kw)
    return run


def _wrap_float32_layers() -> None:
    from ..amp.policy import FUNCTIONAL_AS_GIVEN, FUNCTIONAL_FLOAT32
    for n in FUNCTIONAL_FLOAT32:
        globals()[n] = _float32_in_autocast(n, globals()[n])
    for n in FUNCTIONAL_AS_GIVEN:   # torch's single kernels grilly composes: run uncast
        globals()[n] = _dispatch.policy(n)(globals()[n])


_wrap_float32_layers()
