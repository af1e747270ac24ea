"""More of torch's top-level functions as ``gp.<name>``: those a PyTorch user types as
``torch.f(x, ...)`` where grilly has the torch.Tensor method (``torch.index_select(x, 0, i)`` is
``x.index_select(0, i)``) or the grilly.nn.functional function (``torch.conv2d``,
``torch.layer_norm``), and a few compositions (``torch.cdist``, ``torch.block_diag``,
``torch.bucketize``, ``torch.cartesian_prod``, ``torch.std_mean``).

Two tables make most of them: ``METHODS`` (the top-level function calls the Array method of the
same name) and ``FUNCTIONAL`` (it calls grilly.nn.functional's function with the same positional
order). Where torch's top-level order differs from F's (``torch.batch_norm``,
``torch.embedding(weight, input)``, ``torch.dropout(input, p, train)``) a small function says so.
Names NumPy also has are not defined here (they keep NumPy's meaning: grilly/torch_functions.py).
"""
from __future__ import annotations

import builtins
import itertools
import math
from collections.abc import Sequence

from .array import api as gp
from .array import defaults as _defaults
from .array import dispatch as _dispatch
from .amp import _autocast_mod as _amp_state
from .array.array import Array
from .nn import functional as _F

# torch's global autocast state (torch.set_autocast_enabled, ...): grilly.amp's own functions,
# so gp.set_autocast_enabled and grilly.autocast regions share one thread-local state
AUTOCAST_STATE = ("autocast_decrement_nesting", "autocast_increment_nesting",
                  "clear_autocast_cache", "get_autocast_cpu_dtype", "get_autocast_dtype",
                  "get_autocast_gpu_dtype", "is_autocast_cache_enabled",
                  "is_autocast_cpu_enabled", "is_autocast_enabled", "set_autocast_cache_enabled",
                  "set_autocast_cpu_dtype", "set_autocast_cpu_enabled", "set_autocast_dtype",
                  "set_autocast_enabled", "set_autocast_gpu_dtype")
globals().update({_n: getattr(_amp_state, _n) for _n in AUTOCAST_STATE})

# torch.f(input, *args, **kw) is input.f(*args, **kw)
METHODS = ("addbmm", "addcdiv", "addcmul", "addmv", "addr", "adjoint", "aminmax", "chunk",
           "clamp_max", "clamp_min", "clone", "cummax", "cummin", "det", "detach",
           "diag_embed", "diagonal_scatter", "dist", "div", "eq",
           "frac", "ge", "ger", "gt", "histc", "index_add", "index_copy", "index_fill",
           "index_put", "index_reduce", "index_select", "inverse", "is_complex",
           "is_floating_point", "is_nonzero", "is_same_size", "is_signed", "kthvalue", "le",
           "lerp", "logcumsumexp", "lt", "masked_fill", "masked_scatter", "masked_select",
           "matrix_exp", "matrix_power", "mode", "movedim", "msort", "mul", "mv", "narrow",
           "narrow_copy", "ne", "neg", "permute", "renorm", "rsqrt", "scatter_reduce",
           "select_scatter", "sgn", "slice_scatter", "slogdet", "split_with_sizes", "sub",
           "swapdims", "t", "take_along_dim", "tensor_split", "unbind", "unflatten",
           "unique_consecutive", "unsqueeze")

# torch.f(...) is grilly.nn.functional.f(...) (the same positional order)
FUNCTIONAL = ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "celu", "channel_shuffle",
              "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "cosine_similarity", "hardshrink", "pairwise_distance",
              "pdist", "pixel_shuffle", "pixel_unshuffle", "prelu", "rms_norm", "selu",
              "threshold")
# the pools: torch's top-level stride default is [] (the kernel size)
POOLS = ("max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices")


def _input(op: str, x) -> Array:
    """``x``, which must be an Array (torch's functions take tensors, not lists)."""
    if not isinstance(x, Array):
        raise TypeError(f"{op}: input must be a grilly Array, got {type(x).__name__}")
    return x


def _no_out(op: str, out) -> None:
    if out is not None:
        raise NotImplementedError(f"{op}: out= is not supported; use the returned array")


def _first_line(fn) -> str:
    return (fn.__doc__ or "").strip().split("\n")[0]


def _from_method(name: str):
    def f(input: Array, *args, out=None, **kw):   # noqa: A002 (torch's name)
        _no_out(name, out)
        return getattr(_input(name, input), name)(*args, **kw)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name}(input, ...): ``input.{name}(...)``. " + \
        _first_line(getattr(Array, name))
    return f


def _from_functional(name: str):
    fn = getattr(_F, name)

    def f(input: Array, *args, **kw):   # noqa: A002 (torch's name)
        return fn(_input(name, input), *args, **kw)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name}: grilly.nn.functional.{name}. " + _first_line(fn)
    return f


def _pool(name: str):
    fn = getattr(_F, name)

    def f(input: Array, kernel_size, stride=(), padding=0, dilation=1,   # noqa: A002
          ceil_mode: bool = False):
        if isinstance(stride, (tuple, list)) and not stride:
            stride = None   # torch's top-level default: the kernel size
        return fn(_input(name, input), kernel_size, stride, padding, dilation, ceil_mode)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"torch.{name}: grilly.nn.functional.{name}. " + _first_line(fn)
    return f


_made = {n: _from_method(n) for n in METHODS}
_made.update({n: _from_functional(n) for n in FUNCTIONAL})
_made.update({n: _pool(n) for n in POOLS})
globals().update(_made)


def rsub(input: Array, other, *, alpha=1) -> Array:   # noqa: A002
    """other - alpha * input (torch.rsub)."""
    x = _input("rsub", input)
    return gp.subtract(other, x if alpha == 1 else x * alpha)


def repeat_interleave(input: Array, repeats=None, dim: int | None = None, *,   # noqa: A002
                      output_size: int | None = None) -> Array:
    """Each element (slice along ``dim``) repeated ``repeats`` times (Array.repeat_interleave);
    ``repeat_interleave(counts)`` alone repeats each index i counts[i] times."""
    x = _input("repeat_interleave", input)
    if repeats is None:
        if x.ndim != 1 or x.dtype.kind not in "iu":
            raise TypeError("repeat_interleave: repeat_interleave(repeats) takes a 1-D integer "
                            "array of counts")
        return gp.arange(x.shape[0], dtype=x.dtype, device=x.device).repeat_interleave(
            x, output_size=output_size)
    return x.repeat_interleave(repeats, dim, output_size=output_size)


def _stat_mean(name: str, input: Array, dim, unbiased, keepdim, correction) -> tuple:   # noqa: A002
    x = _input(f"{name}_mean", input)
    if isinstance(dim, bool):   # torch.std_mean(x, unbiased): the legacy positional form
        if unbiased is not None:
            raise TypeError(f"{name}_mean: unbiased given twice")
        dim, unbiased = None, dim
    kw = {"keepdim": keepdim}
    if unbiased is not None:
        kw["unbiased"] = unbiased
    if correction is not None:
        kw["correction"] = correction
    d = tuple(dim) if isinstance(dim, list) else dim
    s = _dispatch.TORCH_FORMS[name](x, dim=d, **kw)
    m = gp.mean(x, axis=d, keepdims=keepdim)
    return s, m


def std_mean(input: Array, dim=None, unbiased: bool | None = None,   # noqa: A002
             keepdim: bool = False, *, correction=None) -> tuple:
    """(std, mean) along ``dim`` (all elements when None), the std with ``correction``
    (1 unless unbiased=False), as torch.std_mean."""
    return _stat_mean("std", input, dim, unbiased, keepdim, correction)


def var_mean(input: Array, dim=None, unbiased: bool | None = None,   # noqa: A002
             keepdim: bool = False, *, correction=None) -> tuple:
    """(var, mean) along ``dim`` (all elements when None), as torch.var_mean."""
    return _stat_mean("var", input, dim, unbiased, keepdim, correction)


def block_diag(*tensors: Array) -> Array:
    """The 0-D, 1-D (one row) and 2-D arrays on the diagonal of one 2-D array, zeros elsewhere
    (torch.block_diag), of their promoted dtype."""
    if not tensors:
        raise TypeError("block_diag: needs at least one array")
    mats = []
    for i, t in enumerate(tensors):
        if not isinstance(t, Array):
            raise TypeError(f"block_diag: argument {i} must be a grilly Array, got "
                            f"{type(t).__name__}")
        if t.ndim > 2:
            raise ValueError(f"block_diag: argument {i} has {t.ndim} dimensions; at most 2")
        mats.append(gp.reshape(t, (1, -1) if t.ndim == 1 else (1, 1) if t.ndim == 0 else t.shape))
    dt = gp.result_type(*mats)
    dev = mats[0].device
    width = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = [gp.zeros((r, left), dtype=dt, device=dev), gp.astype(m, dt),
                 gp.zeros((r, width - left - c), dtype=dt, device=dev)]
        rows.append(gp.concat(parts, axis=1))
        left += c
    return gp.concat(rows, axis=0)


def broadcast_tensors(*tensors: Array) -> tuple:
    """The arrays broadcast to one shape (torch.broadcast_tensors: gp.broadcast_arrays)."""
    return tuple(gp.broadcast_arrays(*tensors))


def bucketize(input, boundaries: Array, *, out_int32: bool = False,   # noqa: A002
              right: bool = False) -> Array:
    """The bucket of each element among the sorted 1-D ``boundaries``: i with
    boundaries[i-1] < x <= boundaries[i] (``right``: boundaries[i-1] <= x < boundaries[i]),
    int64 (int32 with ``out_int32``), as torch.bucketize."""
    if not isinstance(boundaries, Array) or boundaries.ndim != 1:
        raise ValueError("bucketize: boundaries must be a 1-D grilly Array")
    x = input if isinstance(input, Array) else gp.asarray(input, device=boundaries.device)
    out = gp.searchsorted(boundaries, x, side="right" if right else "left")
    return gp.astype(out, gp.int32) if out_int32 else out


def cartesian_prod(*tensors: Array) -> Array:
    """Every combination of one element from each 1-D array, one per row (torch.cartesian_prod;
    one array is returned as it is)."""
    for i, t in enumerate(tensors):
        if not isinstance(t, Array) or t.ndim != 1:
            raise ValueError(f"cartesian_prod: argument {i} must be a 1-D grilly Array")
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise TypeError("cartesian_prod: needs at least one array")
    grids = gp.meshgrid(*tensors, indexing="ij")
    return gp.stack([gp.reshape(g, (-1,)) for g in grids], axis=1)


def combinations(input: Array, r: int = 2, with_replacement: bool = False) -> Array:   # noqa: A002
    """The length-``r`` combinations of a 1-D array's elements, one per row, in
    itertools.combinations' order (torch.combinations)."""
    x = _input("combinations", input)
    if x.ndim != 1:
        raise ValueError(f"combinations: input must be 1-D, got {x.ndim}-D")
    if isinstance(r, bool) or not hasattr(r, "__index__") or r < 0:
        raise ValueError(f"combinations: r must be a non-negative int, got {r!r}")
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = list(pick(builtins.range(x.shape[0]), r)) if r else []
    at = gp.asarray(idx, dtype=gp.int64, device=x.device)   # none: an empty (still on the graph)
    return gp.reshape(gp.take(x, gp.reshape(at, (-1,)), axis=0),
                      (len(idx), r) if r else (0,))


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


def cdist(x1: Array, x2: Array, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Array:
    """The p-norm distance between each row of x1 (..., P, M) and each row of x2 (..., R, M):
    (..., P, R), as torch.cdist (computed directly, never through a matrix product)."""
    a, b = _input("cdist", x1), _input("cdist", x2)
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"cdist: compute_mode must be one of {_COMPUTE_MODES}, got "
                         f"{compute_mode!r}")
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-1]:
        raise ValueError(f"cdist: x1 and x2 must be at least 2-D with the same last dimension, "
                         f"got {a.shape} and {b.shape}")
    if p < 0:
        raise ValueError(f"cdist: p must be non-negative, got {p}")
    diff = gp.expand_dims(a, axis=-2) - gp.expand_dims(b, axis=-3)
    return gp.linalg.vector_norm(diff, ord=p, axis=-1)


@_dispatch.policy("chain_matmul")   # low precision under autocast, one matrix too (torch's)
def chain_matmul(*matrices: Array) -> Array:
    """The product of the 2-D arrays in order (torch.chain_matmul: grilly.linalg.multi_dot)."""
    for i, m in enumerate(matrices):
        if not isinstance(m, Array) or m.ndim != 2:
            raise ValueError(f"chain_matmul: argument {i} must be a 2-D grilly Array")
    if not matrices:
        raise TypeError("chain_matmul: needs at least one matrix")
    return matrices[0] if len(matrices) == 1 else gp.linalg.multi_dot(list(matrices))


def complex(real: Array, imag: Array) -> Array:   # noqa: A001 (torch's name)
    """real + 1j * imag from two float arrays of one dtype: complex64 from float32,
    complex128 from float64 (torch.complex)."""
    re, im = _input("complex", real), _input("complex", imag)
    if re.dtype != im.dtype or re.dtype not in (gp.float32, gp.float64):
        raise TypeError(f"complex: real and imag must be both float32 or both float64, got "
                        f"{re.dtype} and {im.dtype}")
    cd = gp.complex64 if re.dtype == gp.float32 else gp.complex128
    return gp.astype(re, cd) + gp.astype(im, cd) * gp.asarray(1j, dtype=cd, device=re.device)


def polar(abs: Array, angle: Array) -> Array:   # noqa: A002 (torch's name)
    """abs * (cos(angle) + 1j * sin(angle)) (torch.polar)."""
    r, t = _input("polar", abs), _input("polar", angle)
    return complex(r * gp.cos(t), r * gp.sin(t))


def cumulative_trapezoid(y: Array, x: Array | None = None, *, dx=None, dim: int = -1) -> Array:
    """The running trapezoid-rule integral of ``y`` along ``dim`` (one fewer element), with
    sample points ``x`` or spacing ``dx`` (1), as torch.cumulative_trapezoid."""
    y = _input("cumulative_trapezoid", y)
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid: give x or dx, not both")
    n = y.shape[dim]
    lo = [slice(None)] * y.ndim
    hi = list(lo)
    lo[dim], hi[dim] = slice(0, n - 1), slice(1, n)
    mid = (y[tuple(lo)] + y[tuple(hi)]) / 2
    if x is not None:
        if not isinstance(x, Array):
            x = gp.asarray(x, device=y.device)
        if x.ndim == 1:
            shape = [1] * y.ndim
            shape[dim] = x.shape[0]
            x = gp.reshape(x, tuple(shape))
        xl = [slice(None)] * x.ndim
        xh = list(xl)
        xl[dim], xh[dim] = slice(0, x.shape[dim] - 1), slice(1, x.shape[dim])
        mid = mid * (x[tuple(xh)] - x[tuple(xl)])
    elif dx is not None:
        mid = mid * dx
    return gp.cumulative_sum(mid, axis=dim if dim >= 0 else y.ndim + dim)


def trapz(y: Array, x: Array | None = None, *, dx=None, dim: int = -1) -> Array:
    """The trapezoid-rule integral of ``y`` along ``dim`` (torch.trapz: torch.trapezoid)."""
    return gp.trapezoid(_input("trapz", y), x, dx=dx, dim=dim)


def logdet(input: Array) -> Array:   # noqa: A002
    """log(det(input)) of square matrices: nan for a negative determinant, -inf for a zero
    one (torch.logdet)."""
    sign, logabs = gp.linalg.slogdet(_input("logdet", input))
    return gp.where(sign < 0, gp.asarray(math.nan, dtype=logabs.dtype, device=logabs.device),
                    logabs)


def row_stack(tensors: Sequence[Array]) -> Array:
    """The arrays stacked as rows (torch.row_stack: gp.vstack)."""
    return gp.vstack(list(tensors))


def get_default_dtype():
    """The default floating dtype (torch.get_default_dtype; float32 unless
    ``set_default_dtype`` changed it): grilly.nn's parameters and buffers, ``gp.rand``/
    ``gp.randn``/``gp.normal``, distributions' float parameters; the Array API creation functions
    (``zeros``, ``ones``, ``arange``, ``asarray``/``tensor`` of Python floats) give float64
    whatever it is, as NumPy's."""
    return _defaults.get_default_dtype()


def set_default_dtype(d) -> None:
    """torch.set_default_dtype: float32, float64, float16 or bfloat16 becomes the default
    floating dtype (process-global, as torch's; read when a module or array is built); a dtype
    that is not one of those is a TypeError, as torch's."""
    _defaults.set_default_dtype(d)


def get_default_device():
    """The default device (torch.get_default_device; ``gp.set_default_device`` sets it)."""
    return gp.default_device()


def get_num_threads() -> int:
    """The number of threads of the CPU backend's parallel kernels (torch.get_num_threads)."""
    import numba   # the CPU backend's thread pool (imported only when asked)

    return numba.get_num_threads()


def set_num_threads(n: int) -> None:
    """Set the number of threads of the CPU backend's parallel kernels, at most the number
    numba started with (torch.set_num_threads)."""
    if isinstance(n, bool) or not hasattr(n, "__index__") or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    import numba

    if n > numba.config.NUMBA_NUM_THREADS:
        raise ValueError(f"set_num_threads: n={n} exceeds the {numba.config.NUMBA_NUM_THREADS} "
                         f"threads the CPU backend started with (set NUMBA_NUM_THREADS)")
    numba.set_num_threads(int(n))


def batch_norm(input: Array, weight, bias, running_mean, running_var, training: bool,   # noqa: A002
               momentum: float, eps: float, cudnn_enabled: bool = True) -> Array:
    """torch.batch_norm's order (weight and bias before the running statistics):
    grilly.nn.functional.batch_norm."""
    return _F.batch_norm(_input("batch_norm", input), running_mean, running_var, weight, bias,
                         training, momentum, eps)


def instance_norm(input: Array, weight, bias, running_mean, running_var,   # noqa: A002
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Array:
    """torch.instance_norm's order: grilly.nn.functional.instance_norm."""
    return _F.instance_norm(_input("instance_norm", input), running_mean, running_var, weight,
                            bias, use_input_stats, momentum, eps)


def layer_norm(input: Array, normalized_shape, weight=None, bias=None,   # noqa: A002
               eps: float = 1e-5, cudnn_enable: bool = True) -> Array:
    """torch.layer_norm (cudnn_enable is a CUDA hint): grilly.nn.functional.layer_norm."""
    return _F.layer_norm(_input("layer_norm", input), normalized_shape, weight, bias, eps)


def group_norm(input: Array, num_groups: int, weight=None, bias=None,   # noqa: A002
               eps: float = 1e-5, cudnn_enabled: bool = True) -> Array:
    """torch.group_norm (cudnn_enabled is a CUDA hint): grilly.nn.functional.group_norm."""
    return _F.group_norm(_input("group_norm", input), num_groups, weight, bias, eps)


def embedding(weight: Array, indices: Array, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Array:
    """torch.embedding(weight, indices): the rows of ``weight`` (note the order:
    grilly.nn.functional.embedding(indices, weight)); padding_idx -1 is none."""
    _input("embedding", weight)
    return _F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                        scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def _train(op: str, train) -> bool:
    if not isinstance(train, bool):
        raise TypeError(f"{op}: train must be a bool (torch.{op}(input, p, train)), got "
                        f"{type(train).__name__}")
    return train


def dropout(input: Array, p: float, train: bool) -> Array:   # noqa: A002
    """torch.dropout(input, p, train): grilly.nn.functional.dropout."""
    return _F.dropout(_input("dropout", input), p, _train("dropout", train))


def alpha_dropout(input: Array, p: float, train: bool) -> Array:   # noqa: A002
    """torch.alpha_dropout(input, p, train): grilly.nn.functional.alpha_dropout."""
    return _F.alpha_dropout(_input("alpha_dropout", input), p, _train("alpha_dropout", train))


def feature_alpha_dropout(input: Array, p: float, train: bool) -> Array:   # noqa: A002
    """torch.feature_alpha_dropout(input, p, train): grilly.nn.functional's."""
    return _F.feature_alpha_dropout(_input("feature_alpha_dropout", input), p,
                                    _train("feature_alpha_dropout", train))


def rrelu(input: Array, lower: float = 1.0 / 8, upper: float = 1.0 / 3,   # noqa: A002
          training: bool = False, generator=None) -> Array:
    """torch.rrelu: grilly.nn.functional.rrelu (a generator is not supported)."""
    if generator is not None:
        raise NotImplementedError("rrelu: generator= is not supported (seed with "
                                  "gp.manual_seed)")
    return _F.rrelu(_input("rrelu", input), lower, upper, training)


def adaptive_max_pool1d(input: Array, output_size) -> tuple:   # noqa: A002
    """torch.adaptive_max_pool1d: (values, indices), as torch's top-level returns them."""
    return _F.adaptive_max_pool1d(_input("adaptive_max_pool1d", input), output_size,
                                  return_indices=True)


__all__ = sorted(set(_made) | set(AUTOCAST_STATE) | {
    "rsub", "repeat_interleave", "std_mean", "var_mean", "block_diag", "broadcast_tensors",
    "bucketize", "cartesian_prod", "combinations", "cdist", "chain_matmul", "complex", "polar",
    "cumulative_trapezoid", "trapz", "logdet", "row_stack", "get_default_dtype",
    "set_default_dtype", "get_default_device", "get_num_threads", "set_num_threads",
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "embedding", "dropout", "alpha_dropout",
    "feature_alpha_dropout", "rrelu", "adaptive_max_pool1d"})
