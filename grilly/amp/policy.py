"""The autocast policy: one table, op name -> how an autocast region runs it (docs/amp.md).

It follows torch's CUDA autocast lists (aten/src/ATen/autocast_mode.h; where torch's CPU list
differs, CUDA's is the one followed), for the ops grilly has.

LOWER: run in the region's low-precision dtype (float32 and the other low dtype's arguments are
cast down; float64 ones are left alone, as torch leaves double). FLOAT32: run in float32
(float16/bfloat16 arguments are cast up). AS_GIVEN: not in torch's lists, but composed by grilly
of listed ops, so the composition runs uncast (dispatch.Uncast). Any op not listed runs on its
arguments as given, with the usual type promotion (a float16 and a float32 operand give
float32), which is what torch's "promote" list (tensordot, cross, atan2, addcmul ...) does.
Names are namespace ops, grilly.nn.functional layers that consult the policy themselves
(``dispatch.autocast``), or compositions decorated with ``dispatch.policy`` (torch-named
methods, grilly.special functions).
"""
from __future__ import annotations

LOWER = "lower"
FLOAT32 = "float32"
# ops torch's autocast does not list, which grilly composes of ops it does list (nansum of sum,
# exp2 of pow, matrix_exp of matmul): their compositions run with autocast off, on the
# arguments as given, so the result is in the arguments' dtype as torch's single kernel's is
AS_GIVEN = "as_given"

# torch's fp32 and fp32_set_opt_dtype lists, as grilly.nn.functional names: these layers cast
# their float16/bfloat16 arguments to float32 on entry (grilly.nn.functional applies them)
FUNCTIONAL_FLOAT32 = (
    "softplus", "rms_norm", "group_norm", "cosine_similarity", "pdist", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "nll_loss", "kl_div", "poisson_nll_loss",
    "hinge_embedding_loss", "soft_margin_loss", "margin_ranking_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "binary_cross_entropy_with_logits",
    # torch's CUDA autocast refuses binary_cross_entropy (float16 logs); its CPU list, and
    # grilly, run it in float32
    "binary_cross_entropy")

# torch runs these layers as single kernels its lists leave alone; grilly composes them of
# listed ops (expm1, sum, conv), so they run uncast (grilly.nn.functional applies them)
FUNCTIONAL_AS_GIVEN = ("elu", "celu", "selu", "avg_pool1d", "embedding_bag")

POLICY: dict[str, str] = {
    # GEMM-shaped work: where low precision is faster (tensor cores) and accurate enough
    **dict.fromkeys(("matmul", "linalg.matmul", "vecdot", "linalg.vecdot", "linear", "conv2d",
                     "flash_attention2", "scaled_dot_product_attention", "addmm", "baddbmm",
                     "addmv", "addr", "addbmm", "chain_matmul", "prelu",
                     # the cells of grilly.nn (RNNCell, LSTMCell, GRUCell): input and states
                     "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell"), LOWER),
    # reductions, exponentials and normalisations: range or accumulated error needs float32
    **dict.fromkeys(("fused.softmax", "fused.log_softmax", "cross_entropy", "layer_norm",
                     "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "rsqrt",
                     "reciprocal", "acos", "asin", "cosh", "sinh", "tan", "logsumexp",
                     "sum", "prod", "cumulative_sum", "cumulative_prod", "linalg.vector_norm",
                     "linalg.matrix_norm", "interpolate",
                     # NumPy's spellings of torch's cumsum, cumprod and norm: composed of the
                     # ops above, but a bfloat16 argument runs them whole in float32 and rounds
                     # the result back, so they must be cast on entry themselves
                     "cumsum", "cumprod", "linalg.norm",
                     # NumPy's nan-skipping cumsum, cumprod and prod follow them
                     "nancumsum", "nancumprod", "nanprod",
                     # torch's square is its pow; erfinv and renorm are in torch's list
                     "square", "erfinv", "renorm",
                     # not in torch's lists, but torch composes these of its sum
                     "trapezoid", "multigammaln") + FUNCTIONAL_FLOAT32, FLOAT32),
    # torch's own kernels, outside its lists: the input's dtype (NumPy's nanvar and nanstd
    # follow var and std, which torch leaves alone too)
    **dict.fromkeys(("nansum", "nanmean", "nanvar", "nanstd", "trace", "linalg.trace", "exp2",
                     "xlogy", "xlog1py", "logit", "entr", "linalg.matrix_exp", "diag_embed", "vdot")
                    + FUNCTIONAL_AS_GIVEN, AS_GIVEN),
}
