"""The autocast policy: one table, op name -> how an autocast region runs it (docs/amp.md).

LOWER: run in the region's low-precision dtype (float32 arguments are cast down; float64 ones
are left alone, as torch leaves double). FLOAT32: run in float32 (float16/bfloat16 arguments are
cast up). Any op not listed runs on its arguments as given, with the usual type promotion
(a float16 and a float32 operand give float32).
"""
from __future__ import annotations

LOWER = "lower"
FLOAT32 = "float32"

POLICY: dict[str, str] = {
    # GEMM-shaped work: where low precision is faster (tensor cores) and accurate enough
    **dict.fromkeys(("matmul", "linalg.matmul", "tensordot", "linalg.tensordot", "vecdot",
                     "linalg.vecdot", "linear", "conv2d", "flash_attention2",
                     "scaled_dot_product_attention"), LOWER),
    # reductions, exponentials and normalisations: range or accumulated error needs float32
    **dict.fromkeys(("fused.softmax", "fused.log_softmax", "cross_entropy", "layer_norm",
                     "exp", "expm1", "log", "log1p", "log2", "log10", "pow", "sqrt", "rsqrt",
                     "sum", "mean", "var", "std", "prod", "cumulative_sum", "cumulative_prod",
                     "logaddexp", "linalg.vector_norm", "linalg.matrix_norm", "reciprocal"),
                    FLOAT32),
}
