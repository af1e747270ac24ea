"""Vulkan kernel: matmul_topk, the k best of each row of x @ mat.T + add (k <= 64, the
contract's limit for this kernel).

For blocks of x's rows and of mat's rows: the product (the matmul kernel, sgemm for float32,
reading mat transposed in place), then one pass of shaders/sort/topk.comp's SCAN variant that
adds ``add`` as it reads each score and keeps only scores that beat the row's k-th best of the
earlier blocks (so after the first block almost every score costs one compare and the lists
stay empty), then topk's usual passes over the few candidates, and a merge with the best so
far. Nothing waits for the host: the k-th best lives on the device between blocks.
"""
from __future__ import annotations

from .. import dtypes as _dt
from .kernels import assign, new_buffer, permute, slice_view
from .linalg import matmul
from .memory import Buffer
from .reductions import dispatch
from .sorting import TOPK_KMAX, topk_passes

I64 = _dt.int64
BLOCK_ROWS = 1024          # rows of x per block
BLOCK_ELEMS = 1 << 27      # scores per block (512 MiB of float32): few, large dispatches
SCAN = 1024                # elements each invocation of the first pass reads, at least


def _first_pass(s: Buffer, add, a: int, best, k: int, largest: bool, kmax: int) -> tuple:
    """(rows, P*k) candidate values and int64 indices (a + column) of the score block s, P the
    invocations per row; ``best`` (the lists of the earlier blocks) gates them when given."""
    ctx = s.ctx
    rows, n = s.shape
    p = max(1, -(-n // max(SCAN, 8 * k)))
    ov, oi = new_buffer(ctx, (rows, p * k), s.dtype), new_buffer(ctx, (rows, p * k), I64)
    flags = (1 if add is not None else 0) | (2 if best is not None else 0)
    lv, li = best if best is not None else (s, oi)
    ad = add if add is not None else s
    total = rows * p
    dispatch(ctx, f"topkscan{kmax}_{s.dtype.name}", (0, 1), [ov, oi, s, ad, lv, li], total, total,
             (0, 0, s.offset, ad.offset + a if add is not None else 0), (rows, n, p, k, 0),
             ((int(largest), a, flags),), writes=2)
    return ov, oi, p * k


def _merge(best: tuple, new: tuple, k: int, largest: bool, kmax: int) -> tuple:
    """The k best of two (rows, k) lists, the earlier one's first on ties (smaller indices)."""
    rows = best[0].shape[0]
    ctx = best[0].ctx
    both_v = new_buffer(ctx, (rows, 2 * k), best[0].dtype)
    both_i = new_buffer(ctx, (rows, 2 * k), I64)
    for dst, (left, right) in ((both_v, (best[0], new[0])), (both_i, (best[1], new[1]))):
        assign(slice_view(dst, (slice(0, rows, 1), slice(0, k, 1))), left)
        assign(slice_view(dst, (slice(0, rows, 1), slice(k, 2 * k, 1))), right)
    return topk_passes(both_v, both_i, 2 * k, k, largest, kmax)


def matmul_topk(x: Buffer, mat: Buffer, add, k: int, largest: bool) -> tuple:
    """(values, int64 indices) (n, k) of the k best of each row of x @ mat.T + add."""
    ctx = x.ctx
    n, m = x.shape[0], mat.shape[0]
    kmax = next(q for q in TOPK_KMAX if k <= q)
    dt = x.dtype
    out_v, out_i = new_buffer(ctx, (n, k), dt), new_buffer(ctx, (n, k), I64)
    mat_t = permute(mat, (1, 0))
    step = max(k, BLOCK_ELEMS // BLOCK_ROWS)
    for i in range(0, n, BLOCK_ROWS):
        j = min(i + BLOCK_ROWS, n)
        xc = slice_view(x, (slice(i, j, 1), slice(0, x.shape[1], 1)))
        best = None
        for a in range(0, m, step):
            b = min(a + step, m)
            s = matmul((j - i, b - a), dt, xc, slice_view(mat_t, (slice(0, mat_t.shape[0], 1),
                                                                  slice(a, b, 1))))
            cv, ci, width = _first_pass(s, add, a, best, k, largest, kmax)
            new = topk_passes(cv, ci, width, k, largest, kmax)
            best = new if best is None else _merge(best, new, k, largest, kmax)
        rows = (slice(i, j, 1), slice(0, k, 1))
        assign(slice_view(out_v, rows), best[0])
        assign(slice_view(out_i, rows), best[1])
    return out_v, out_i


KERNELS: dict = {"matmul_topk": matmul_topk}
