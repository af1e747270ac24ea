"""The backend contract as data: every kernel name, its family, its tier and its call.

A leaf module (it imports nothing of grilly), so backends, the array layer, the conformance kit
and ``grilly kernels`` all read the one list. Tiers:

- ``required``: a primitive; without it a device cannot run the core of the namespace.
- ``composed``: the array layer has a default composition from other kernels on the same
  device; a backend may provide the kernel to override it (a fused or faster version).
- ``optional``: no composition; where a device lacks it, the op that needs it raises
  NotImplementedError naming the op and the device (the kit lists it as missing).

docs/backends.md is the prose reference; ``tests/test_contract.py`` keeps the two backends, the
array layer's compositions and this table in step.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

REQUIRED, COMPOSED, OPTIONAL = "required", "composed", "optional"


class Kernel(NamedTuple):
    """One entry of the contract."""

    family: str
    tier: str
    call: str


# The elementwise ops: each is one kernel named after the op, called
# ``kernel(out_shape, out_dtype, *bufs)`` with inputs promoted to one dtype (the array layer's
# table, grilly/array/elementwise.py, says which dtypes each accepts and computes in).
UNARY_OPS = (
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "conj",
    "cos", "cosh", "exp", "expm1", "floor", "imag", "isfinite", "isinf", "isnan", "log", "log10",
    "log1p", "log2", "logical_not", "negative", "positive", "real", "reciprocal", "round", "sign",
    "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc",
)
BINARY_OPS = (
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift",
    "bitwise_xor", "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal",
    "hypot", "less", "less_equal", "logaddexp", "logical_and", "logical_or", "logical_xor",
    "maximum", "minimum", "multiply", "nextafter", "not_equal", "pow", "remainder", "subtract",
)
ELEMENTWISE_OPS = UNARY_OPS + BINARY_OPS

_EW_CALL = "(out_shape, out_dtype, *bufs) -> buf"

# The core elementwise ops a device needs to run arithmetic, comparisons, masks and the
# compositions of the array layer; _EW_COMPOSED have default compositions from those (exact:
# e.g. greater(a, b) is less(b, a), negative(x) is -0.0 - x); the rest of the table is optional.
_EW_REQUIRED = frozenset({
    "add", "subtract", "multiply", "divide", "equal", "less", "logical_and", "logical_or",
    "logical_not", "maximum", "minimum", "exp", "log", "sqrt",
})
_EW_COMPOSED = frozenset({
    "negative", "positive", "conj", "real", "imag", "square", "greater", "greater_equal",
    "less_equal", "not_equal", "logical_xor", "isnan", "isinf", "isfinite",
})


def _ew_tier(op: str) -> str:
    return REQUIRED if op in _EW_REQUIRED else COMPOSED if op in _EW_COMPOSED else OPTIONAL


# matmul_topk's kernel is called for k up to this (a register list per invocation on a GPU);
# larger k runs the composition
MATMUL_TOPK_KMAX = 64

KERNELS: dict[str, Kernel] = {
    # storage: buffers in, buffers out; views share memory
    "from_host": Kernel("storage", REQUIRED, "(np_array, dtype) -> buf (a private copy)"),
    "to_host": Kernel("storage", REQUIRED, "(buf) -> np.ndarray (waits for pending writes)"),
    "empty": Kernel("storage", REQUIRED, "(shape, dtype) -> buf"),
    "full": Kernel("storage", REQUIRED, "(shape, value, dtype) -> buf"),
    "copy": Kernel("storage", REQUIRED, "(buf) -> buf (always new)"),
    "astype": Kernel("storage", REQUIRED, "(buf, dtype) -> buf (always new)"),
    "assign": Kernel("storage", REQUIRED, "(dst_view, src) -> None (src broadcast into dst)"),
    "sole_owner": Kernel("storage", OPTIONAL, "(buf) -> bool (nothing but its one holder "
                         "references buf's memory: no view of it, no other holder)"),
    "slice": Kernel("storage", REQUIRED, "(buf, key) -> view (key: normalized ints/slices)"),
    "reshape": Kernel("storage", REQUIRED, "(buf, shape, copy=None) -> view or buf"),
    "permute": Kernel("storage", REQUIRED, "(buf, axes) -> view"),
    "broadcast_to": Kernel("storage", REQUIRED, "(buf, shape) -> view"),
    "host_view": Kernel("storage", COMPOSED, "(buf) -> np.ndarray or None (zero-copy DLPack)"),
    "scalar": Kernel("storage", COMPOSED, "(value, dtype) -> buf (0-d, shared, never written)"),
    # creation: composed from host numbers built from the Python arguments, then from_host
    "arange": Kernel("creation", COMPOSED, "(start, step, n, dtype) -> buf"),
    "linspace": Kernel("creation", COMPOSED, "(start, stop, num, endpoint, dtype) -> buf"),
    "eye": Kernel("creation", COMPOSED, "(n_rows, n_cols, k, dtype) -> buf"),
    # elementwise
    **{op: Kernel("elementwise", _ew_tier(op), _EW_CALL) for op in ELEMENTWISE_OPS},
    "where": Kernel("elementwise", REQUIRED, "(out_shape, out_dtype, cond, a, b) -> buf"),
    # reductions and scans (docs/kernels/reductions.md)
    **{op: Kernel("reductions", REQUIRED if op in ("sum", "prod", "max", "min") else COMPOSED,
                  "(buf, axes, keepdims, out_dtype) -> buf")
       for op in ("sum", "prod", "max", "min", "all", "any", "count_nonzero")},
    **{op: Kernel("reductions", COMPOSED, "(buf, axis, keepdims) -> int64 buf")
       for op in ("argmax", "argmin")},
    "cumulative_sum": Kernel("reductions", REQUIRED,
                             "(buf, axis, include_initial, out_dtype) -> buf"),
    "cumulative_prod": Kernel("reductions", COMPOSED,
                              "(buf, axis, include_initial, out_dtype) -> buf"),
    # segment reductions (grilly.array.segments: bincount, histogram, embedding_bag's bags):
    # one invocation per (segment, column) walks its run, so memory is O(K D + S D)
    "segment_sum": Kernel("reductions", COMPOSED,
                          "(values (K, D), starts (S,), ends (S,) int64) -> buf (S, D): out[s] = "
                          "0 + values[starts[s]] + ... + values[ends[s] - 1], added in row order "
                          "(bounds clipped to [0, K]; an empty run gives 0); float32/float64"),
    "segment_max": Kernel("reductions", COMPOSED,
                          "(values (K, D), starts (S,), ends (S,) int64, fill) -> (buf (S, D), "
                          "int64 buf (S, D)): each run's maximum (NaN wins) and the row of its "
                          "first maximum; an empty run gives fill (a Python float) and -1; "
                          "float32/float64"),
    # indexing (docs/kernels/indexing.md)
    "gather": Kernel("indexing", REQUIRED, "(buf, indices) -> buf"),
    "scatter": Kernel("indexing", REQUIRED, "(buf, indices, values) -> None (writes buf)"),
    "normalize_indices": Kernel("indexing", COMPOSED, "(idx, n) -> (buf, bad)"),
    "mask_indices": Kernel("indexing", REQUIRED, "(mask) -> tuple of int64 bufs"),
    "nonzero": Kernel("sorting", COMPOSED, "(buf) -> tuple of int64 1-D bufs"),
    "repeat_indices": Kernel("indexing", COMPOSED, "(counts) -> int64 buf or None"),
    "diagonal": Kernel("linalg", COMPOSED, "(buf, offset) -> view (..., K)"),
    # sorting and sets
    "sort": Kernel("sorting", REQUIRED, "(buf, axis, descending, stable) -> buf"),
    "argsort": Kernel("sorting", REQUIRED, "(buf, axis, descending, stable) -> int64 buf"),
    "searchsorted": Kernel("sorting", REQUIRED, "(x1, x2, side, sorter) -> int64 buf"),
    "unique": Kernel("sorting", COMPOSED, "(buf) -> (values, indices, inverse, counts)"),
    "isin": Kernel("sorting", COMPOSED, "(x1, x2, invert) -> bool buf"),
    "topk": Kernel("sorting", COMPOSED,
                   "(buf, k, axis, largest, sorted) -> (values buf, int64 indices buf)"),
    # linear algebra (docs/kernels/linalg.md)
    "matmul": Kernel("linalg", REQUIRED, "(out_shape, out_dtype, a, b) -> buf"),
    "cross": Kernel("linalg", COMPOSED, "(out_shape, out_dtype, a, b) -> buf (last axis 3)"),
    # a dense layer (grilly.array.dense): float32/float64 (others: the composition)
    "linear": Kernel("linalg", COMPOSED, "(x (M, K), w (N, K), bias (N,) or None) -> buf (M, N) "
                     "= x @ w.T + bias; float32/float64, float16 (bfloat16) too where the kernel "
                     "declares takes_float16 (takes_bfloat16; else the array layer composes "
                     "it)"),
    "linear_backward": Kernel("linalg", COMPOSED,
                              "(g (M, N), x, w, need (3 bools)) -> (g @ w, g.T @ x, g summed "
                              "over rows), None where not needed; float16 as linear; a "
                              "kernel declaring takes_grad_dtype also takes a fifth argument, "
                              "float32 for float16 operands: the w and bias gradients in it "
                              "(autocast's master weights; else the array layer casts them)"),
    # the host path: composed as a host round trip (NumPy/SciPy, grilly.array.host_kernels)
    **{op: Kernel("linalg", COMPOSED, "see docs/kernels/linalg.md")
       for op in ("cholesky", "det", "eig", "eigh", "eigvals", "eigvalsh", "inv", "matrix_rank",
                  "pinv", "qr", "slogdet", "solve", "svd", "svdvals")},
    # fft
    **{op: Kernel("fft", COMPOSED, "see docs/kernels/linalg.md (fft)")
       for op in ("fft_c2c", "fft_r2c", "fft_c2r")},
    "fft_roll": Kernel("fft", COMPOSED, "(buf, shifts, axes) -> buf"),
    # fused kernels with default compositions
    "softmax": Kernel("nn", COMPOSED, "(buf, axis) -> buf"),
    "log_softmax": Kernel("nn", COMPOSED, "(buf, axis) -> buf"),
    "batch_norm": Kernel("nn", COMPOSED,
                         "(x (N, C, S), weight (C,) or None, bias or None, eps) -> (y, mean (C,), "
                         "invstd (C,)): training-mode batch norm; float32/float64"),
    "batch_norm_backward": Kernel("nn", COMPOSED,
                                  "(g, x, mean, invstd, weight or None, need (3 bools)) -> "
                                  "(g_x, g_weight, g_bias), None where not needed"),
    "batch_norm_update": Kernel("nn", COMPOSED,
                                "(running_mean (C,), running_var (C,), mean, invstd, momentum, "
                                "eps, n) -> None: in place, running_mean = running_mean (1 - "
                                "momentum) + mean momentum, running_var likewise with the unbiased "
                                "variance (1 / invstd^2 - eps) n/(n-1); float32/float64"),
    "layer_norm": Kernel("nn", COMPOSED,
                         "(x (M, D), weight (D,) or None, bias or None, eps) -> (y, mean (M,), "
                         "rstd (M,)): each row normalized by its mean and biased variance; "
                         "float32/float64"),
    "layer_norm_backward": Kernel("nn", COMPOSED,
                                  "(g, x, mean, rstd, weight or None, need (3 bools)) -> "
                                  "(g_x, g_weight, g_bias), None where not needed"),
    "cross_entropy": Kernel("nn", COMPOSED,
                            "(x (N, C), int target (N,), mean, ignore_index int or None) -> 0-d "
                            "buf: the summed (mean: averaged) -log_softmax(x)[n, target[n]] over "
                            "rows with 0 <= target < C; a row whose target equals ignore_index "
                            "takes no part, any other row outside [0, C) makes the result NaN "
                            "(None: every row outside takes no part); float32/float64"),
    "cross_entropy_backward": Kernel("nn", COMPOSED,
                                     "(x, target, g 0-d buf, mean, ignore_index) -> buf (N, C): "
                                     "zero rows where ignored, NaN rows where out of range"),
    "relu_backward": Kernel("nn", COMPOSED,
                            "(g, y) -> buf: g where y > 0, else 0 (y: the ReLU's output, g's "
                            "shape and dtype); float32/float64, float16 (bfloat16) too where the "
                            "kernel declares takes_float16 (takes_bfloat16)"),
    "attention": Kernel("nn", COMPOSED,
                        "(q (N, H, L, E), k (N, H, S, E), v (N, H, S, Ev), bias (each axis 1 or "
                        "full (N, H, L, S)) or None, drop (N, H, L, S) or None, causal, scale, "
                        "block) -> (out (N, H, L, Ev), lse (N, H, L)): softmax(q k^T scale + "
                        "bias, key j > query i masked if causal) * drop @ v and the row "
                        "logsumexp; float32/float64, float16 (bfloat16) too where the kernel "
                        "declares takes_float16 (takes_bfloat16; its arithmetic float32, lse "
                        "float32; others: float16 runs the float32 kernel on copies, bfloat16 "
                        "the composition on them); a kernel may declare max_features "
                        "(head dims above it compose)"),
    "attention_backward": Kernel("nn", COMPOSED,
                                 "(g, q, k, v, bias, drop, out, lse, causal, scale, block, need "
                                 "(3 bools)) -> (g_q, g_k, g_v), None where not needed; float16 "
                                 "as attention (lse float32, as attention returns it)"),
    "im2col": Kernel("nn", COMPOSED,
                     "(buf, kernel, stride, dilation, pads, fill, out, channel_major=False) -> buf"),
    "col2im": Kernel("nn", COMPOSED,
                     "(buf, kernel, stride, dilation, pads, size, channel_major=False) -> buf"),
    "conv2d": Kernel("nn", COMPOSED,
                     "(x (N, C, H, W), w (O, C/groups, KH, KW), bias (O,) or None, stride, "
                     "dilation, pads, groups, out (Ho, Wo)) -> buf (N, O, Ho, Wo); float32/"
                     "float64, float16 (bfloat16) too where the kernel declares takes_float16 "
                     "(takes_bfloat16; others: the composition)"),
    "conv2d_backward": Kernel("nn", COMPOSED,
                              "(g (N, O, Ho, Wo), x, w, stride, dilation, pads, groups, need "
                              "(3 bools)) -> (g_x, g_w, g_bias), None where not needed; float16 as "
                              "conv2d; grad_dtype as linear_backward's (a ninth argument)"),
    "max_pool2d": Kernel("nn", COMPOSED,
                         "(buf (N, C, H, W), kernel, stride, dilation, pads, out) -> (buf, int32 "
                         "idx), each window's maximum and its window index j*KH + i (the first "
                         "maximum row by row, as torch's; NaN first); float16/32/64, bfloat16 too "
                         "where the kernel declares takes_bfloat16"),
    "max_pool2d_backward": Kernel("nn", COMPOSED,
                                  "(g, idx, kernel, stride, dilation, pads, size) -> buf "
                                  "(N, C, H, W)"),
    # fused optimizer updates (docs/kernels/optim.md): each writes the parameter and its state
    # buffers in place, one pass; float32/float64 buffers of one shape (other dtypes: the
    # composition); a state buffer passed as None is not used
    "sgd_step": Kernel("optim", COMPOSED,
                       "(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, "
                       "first) -> None"),
    "adam_step": Kernel("optim", COMPOSED,
                        "(p, g, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, "
                        "maximize, step_size, bc2_sqrt) -> None"),
    "rmsprop_step": Kernel("optim", COMPOSED,
                           "(p, g, square_avg, grad_avg, buf, lr, alpha, eps, weight_decay, "
                           "momentum, maximize) -> None"),
    "adagrad_step": Kernel("optim", COMPOSED,
                           "(p, g, state_sum, clr, eps, weight_decay, maximize) -> None"),
    # GradScaler.unscale_ (grilly.amp): one pass per gradient, where the composition took seven
    "amp_unscale": Kernel("optim", COMPOSED,
                          "(g, found (0-d uint32), inv_scale) -> None: found set to 1 where g "
                          "holds an inf or NaN (else left), then g *= inv_scale in place; "
                          "float32/float64 g"),
    # many updates of one rule in one call (grilly.array.optim_steps.batched: an optimizer's
    # step over all its parameters, GradScaler's unscale over all gradients); each call the
    # arguments of the rule's own kernel
    "optim_multi": Kernel("optim", COMPOSED,
                          "(op (sgd_step, adam_step, rmsprop_step, adagrad_step or amp_unscale), "
                          "calls (a list of that kernel's argument tuples)[, vals]) -> None: "
                          "every update made, as the rule's kernel makes it; a kernel that "
                          "declares takes_vals also takes vals, a (len(calls), 8) buffer of the "
                          "parameters' dtype whose row k replaces call k's scalars (row k: "
                          "optim_scalars(op, call k)'s values; the calls' flags still hold)"),
    # spiking neurons: every time step of a LIF layer in one call (docs/snn.md, the fused path)
    "lif_forward": Kernel("snn", COMPOSED,
                          "(x (T, N), mem0, beta, thr (N,), reset, delay, store[, refractory, "
                          "ref0 (N,)]) -> (spikes, mem (N,), trace or None[, ref (N,)]); "
                          "refractory > 0 steps (passed only then): the trace is (2, T, N), "
                          "the membrane and the refractory counter of every step"),
    "lif_backward": Kernel("snn", COMPOSED,
                           "(g_spikes, g_mem, x, mem0, beta, thr, trace or None, reset, delay, "
                           "surrogate, slope[, detach_reset=True[, refractory, ref0]]) -> (g_x, "
                           "g_mem0, g_beta, g_thr); detach_reset False (passed only then, or "
                           "with a refractory period) differentiates the reset signal through "
                           "the surrogate"),
    # the adaptive-threshold LIF (grilly.nn.snn.AdaptiveLIF): threshold thr + gamma a, where
    # a = rho a + (the reset signal) is a second state
    "alif_forward": Kernel("snn", COMPOSED,
                           "(x (T, N), mem0, a0, beta, rho, gamma, thr (N,), reset, delay, "
                           "store) -> (spikes, mem (N,), a (N,), trace (2, T, N) or None: the "
                           "membrane and the adaptation of every step)"),
    "alif_backward": Kernel("snn", COMPOSED,
                            "(g_spikes, g_mem, g_a, x, mem0, a0, beta, rho, gamma, thr, trace "
                            "or None, reset, delay, surrogate, slope, detach_reset) -> (g_x, "
                            "g_mem0, g_a0, g_beta, g_thr)"),
    # a leaky integrator over T steps: a Synaptic layer's current, and its backward (reverse)
    "leaky_integrate": Kernel("snn", COMPOSED,
                              "(x (T, N), s0, alpha (N,), reverse) -> (T, N): out[t] = alpha "
                              "out[t -/+ 1] + x[t], from s0"),
    # plasticity without gradients (grilly.nn.snn.plasticity): one dispatch per step
    "plasticity_step": Kernel("snn", COMPOSED,
                              "(w (P, Q), pre (B, Q), post (B, P), pre_trace, post_trace or None, "
                              "pre_out, post_out or None, rule, params (6 floats)) -> None: w "
                              "updated in place, the new traces written (grilly.array.plasticity)"),
    # counter-based random words (grilly.random): one dispatch per draw
    "philox_blocks": Kernel("random", COMPOSED,
                            "(m, counter, key) -> uint32 buf (4, m): the Philox4x32-10 words of "
                            "64-bit block counters counter + i (words 2-3 zero) under the "
                            "64-bit key; where the kernel (of this family) declares "
                            "takes_counter_array, counter may be a (4,) uint32 buf of the "
                            "counter's and the key's 32-bit halves, low first, with key None "
                            "(random_bits.counter_array: a traced graph's fresh counter)"),
    # uniform floats straight from the Philox words: the same values as philox_blocks and
    # namespace casts (grilly.random.Generator), one pass instead of about six
    "philox_uniform": Kernel("random", COMPOSED,
                             "(n, counter, key, dtype) -> buf (n,) of dtype, float32 or float64: "
                             "uniforms in [0, 1) from the Philox4x32-10 stream of blocks counter, "
                             "counter + 1, ... (mod 2^64; word j of block i is stream word "
                             "4 i + j): element k is (word k >> 8) 2^-24 in float32, ((word 2k "
                             ">> 5) 2^26 + (word 2k+1 >> 6)) 2^-53 in float64 (float16/bfloat16: "
                             "the array layer casts the float32 result, which may round to 1)"),
    # a dropout multiplier straight from the uniforms: grilly.nn.functional's dropout masks, one
    # pass where philox_uniform, a comparison and a where took three
    "philox_dropout": Kernel("random", COMPOSED,
                             "(n, counter, key, p, scale, dtype) -> buf (n,) of dtype, float32 or "
                             "float64: scale where philox_uniform(n, counter, key, dtype)'s u_k "
                             ">= p, else 0, p and scale Python floats rounded to dtype; float16 "
                             "too where the kernel declares takes_float16 (u_k and p rounded to "
                             "float16: float16_dropout_args), else the array layer composes it; "
                             "bfloat16 the float32 result rounded (in one pass where the kernel "
                             "declares takes_bfloat16, else the array layer casts it)"),
    # exact nearest-neighbour search: the k best of a product's rows, the product never written
    "matmul_topk": Kernel("search", COMPOSED,
                          "(x (n, d), mat (m, d), add (m,) or None, k, largest) -> (values (n, k), "
                          "int64 indices (n, k)) of x @ mat.T + add, topk's order; float32/float64 "
                          f"and k <= {MATMUL_TOPK_KMAX} (others: the composition)"),
}

FAMILIES = tuple(dict.fromkeys(k.family for k in KERNELS.values()))


# elementwise ops a backend may run on bfloat16 arrays itself (Backend.native_bfloat16):
# float32 arithmetic on the widened bits, each result rounded as astype rounds, gives the array
# layer's float32 composition bit for bit, gradients included, as every step of these is one
# rounding of a float32 result (or exact); grilly/array/bfloat16.py hands them bfloat16 only
# with bfloat16-valued Python scalars
BFLOAT16_ELEMENTWISE = frozenset({
    "add", "subtract", "multiply", "negative", "positive", "maximum", "minimum", "equal",
    "not_equal", "less", "less_equal", "greater", "greater_equal", "isnan", "isinf",
    "isfinite", "signbit",
})


def float16_dropout_args(p: float, scale: float) -> tuple:
    """float16 philox_dropout as integer work: (P, S) where a uniform u = k 2^-24 (k = word >>
    8) rounded to float16 is >= p rounded to float16 exactly when k rounded to 11 significant
    bits (to nearest, ties to even: float16's precision) is >= P, and S is scale's float16 bits."""
    import numpy as np   # (a leaf module: numpy only, imported where this runs)

    with np.errstate(over="ignore"):
        p16, s16 = np.float16(p), np.float16(scale)
    if p16 != p16 or p16 > 1:
        big = (1 << 24) + 1   # above every rounded k (at most 2^24): nothing kept
    elif p16 <= 0:
        big = 0
    else:
        big = int(float(p16) * (1 << 24))   # exact: float16 values are multiples of 2^-24
    return big, int(s16.view(np.uint16))


def _sgd_scalars(p, g, buf, lr, momentum, dampening, weight_decay, nesterov, maximize, first):
    return (p, g, [buf], (lr, momentum, 1.0 - dampening, weight_decay, float(bool(first)),
                          0.0, 0.0, 0.0), (buf is not None, bool(nesterov), bool(maximize)))


def _adam_scalars(p, g, m, v, vmax, lr, beta1, beta2, eps, weight_decay, decoupled, maximize,
                  step_size, bc2_sqrt):
    return (p, g, [m, v, vmax],
            (1.0 - lr * weight_decay, 1.0 - beta1, beta2, 1.0 - beta2, eps, weight_decay,
             step_size, bc2_sqrt), (bool(decoupled), vmax is not None, bool(maximize)))


def _rmsprop_scalars(p, g, square_avg, grad_avg, buf, lr, alpha, eps, weight_decay, momentum,
                     maximize):
    return (p, g, [square_avg, grad_avg, buf],
            (lr, alpha, 1.0 - alpha, eps, weight_decay, momentum, 0.0, 0.0),
            (grad_avg is not None, buf is not None, bool(maximize)))


def _adagrad_scalars(p, g, state_sum, clr, eps, weight_decay, maximize):
    return (p, g, [state_sum], (clr, eps, weight_decay, 0.0, 0.0, 0.0, 0.0, 0.0),
            (False, False, bool(maximize)))


def _unscale_scalars(g, found, inv_scale):
    return g, g, [found], (inv_scale, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0), (False, False, False)


# (a table, and the arguments bound by the call: this runs twice for every parameter of a step)
_SCALARS = {"sgd_step": _sgd_scalars, "adam_step": _adam_scalars,
            "rmsprop_step": _rmsprop_scalars, "adagrad_step": _adagrad_scalars,
            "amp_unscale": _unscale_scalars}


def optim_scalars(op: str, args: tuple) -> tuple:
    """One update's kernel arguments (``args``: the rule kernel's, or amp_unscale's) as an
    update kernel takes them: (p, g, state slots, eight scalars, flags). The scalars are all
    that may change from step to step (learning rate, bias corrections, SGD's first step), so
    a captured step reads them from a buffer; the flags select the kernel's code."""
    return optim_scalars_fn(op)(*args)


def optim_scalars_fn(op: str) -> Callable[..., tuple]:
    """``optim_scalars`` of rule ``op`` as a function of the arguments themselves (a caller
    with many updates of one rule looks it up once)."""
    f = _SCALARS.get(op)
    if f is None:
        raise ValueError(f"optim_scalars: no rule {op!r}")
    return f


def names(tier: str | None = None, family: str | None = None) -> tuple:
    """Kernel names of one tier and/or family (all when both are None), in table order."""
    return tuple(n for n, k in KERNELS.items()
                 if (tier is None or k.tier == tier) and (family is None or k.family == family))


def arity(op: str) -> tuple[int, int] | None:
    """(fewest, most) positional arguments the array layer passes ``op``'s kernel, read from its
    call (``[...]``: arguments passed only sometimes; ``name=default``: may be left out); None
    where the call is described elsewhere (``see docs/...``). Elementwise kernels take
    ``out_shape, out_dtype`` and one buffer per operand."""
    if op in ELEMENTWISE_OPS:
        n = 3 if op in UNARY_OPS else 4
        return n, n
    call = KERNELS[op].call
    if not call.startswith("("):
        return None
    depth = square = 0
    fewest = most = 0
    arg, seen = "", False
    for c in call[1:]:
        if depth == 0 and c in ",)]" or depth == 0 and c == "[":
            if arg.strip():
                most += 1
                fewest += 0 if (square or "=" in arg) else 1
            arg = ""
            if c == ")":
                seen = True
                break
            if c == "[":
                square += 1
            elif c == "]":
                square -= 1
            continue
        depth += c == "("
        depth -= c == ")"
        arg += c
    return (fewest, most) if seen else None


def signature_problem(op: str, fn) -> str | None:
    """Why the kernel ``fn`` cannot take the calls the contract makes of ``op`` (None when it
    can, or when its signature or the call cannot be read)."""
    import inspect

    n = arity(op) if op in KERNELS else None
    if n is None:
        return None
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    for k in sorted(set(n)):
        try:
            sig.bind(*range(k))
        except TypeError as e:
            many = f"{n[0]} to {n[1]}" if n[0] != n[1] else f"{n[0]}"
            return (f"kernel {op!r} has the signature {sig}, which cannot take the {k} positional "
                    f"arguments of the contract's call {op}{KERNELS[op].call.split(' -> ')[0]} "
                    f"({many} arguments; {e})")
    return None


def status(kernels: dict) -> dict:
    """Per contract kernel: 'provided', 'composed' (absent, composition used) or 'missing'."""
    out = {}
    for n, k in KERNELS.items():
        if n in kernels:
            out[n] = "provided"
        else:
            out[n] = "composed" if k.tier == COMPOSED else "missing"
    return out
