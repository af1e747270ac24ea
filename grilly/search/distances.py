"""Distances between the rows of two matrices, and the k nearest rows, computed in blocks.

``pairwise_distances`` returns the whole (n, m) matrix, built from blocks of rows of x; ``knn``
keeps only the k best per row through the array layer's ``matmul_topk``, which never holds the
(n, m) matrix (a fused kernel on the cpu backend; blocks of matmul and topk elsewhere). Both run
on any device: they are array-namespace code.
"""
from __future__ import annotations

from typing import Iterator, NamedTuple

from ..array import api as gp
from ..array import neighbors

__all__ = ["METRICS", "pairwise_distances", "knn"]

METRICS = ("sqeuclidean", "euclidean", "cosine", "ip")
# distances held at once by pairwise_distances' blocks (64 MiB of float32) before concat
BLOCK_ELEMS = 1 << 24


def check_matrix(x, op: str, arg: str) -> gp.Array:
    """``x`` as a 2-D real floating Array, or the TypeError/ValueError a NumPy user expects."""
    if not isinstance(x, gp.Array):
        raise TypeError(f"{op}: {arg} must be a grilly Array, got {type(x).__name__}")
    if x.ndim != 2:
        raise ValueError(f"{op}: {arg} must be 2-D (rows, d), got shape {x.shape}")
    if x.dtype not in (gp.float16, gp.float32, gp.float64):
        raise TypeError(f"{op}: {arg} must have a real floating dtype, got {x.dtype.name}")
    return x


def _check_metric(metric, op: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"{op}: metric must be one of {', '.join(map(repr, METRICS))}; "
                         f"got {metric!r}")
    return metric


def as_int(v) -> int | None:
    """``v`` as a Python int if it is an integer (int, numpy integer: ``__index__``), not a
    bool; else None."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        return None
    try:
        return v.__index__()
    except TypeError:   # e.g. a grilly Array of several elements
        return None


def _check_chunk(chunk, n: int, m: int, op: str) -> int:
    """Rows of x per block: ``chunk``, or as many as keep a block near BLOCK_ELEMS."""
    if chunk is None:
        return max(1, min(max(n, 1), BLOCK_ELEMS // max(m, 1)))
    c = as_int(chunk)
    if c is None or c < 1:
        raise ValueError(f"{op}: chunk must be a positive int or None, got {chunk!r}")
    return c


def _pair(x, y, op: str) -> tuple:
    check_matrix(x, op, "x")
    check_matrix(y, op, "y")
    if x.device != y.device:
        raise ValueError(f"{op}: x is on {x.device} and y on {y.device}; move one with "
                         "to_device() first")
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"{op}: x has {x.shape[1]} columns and y has {y.shape[1]}; the rows "
                         "must have the same length d")
    dt = gp.result_type(x, y)
    return gp.astype(x, dt, copy=False), gp.astype(y, dt, copy=False)


def sq_norms(x: gp.Array) -> gp.Array:
    """The squared L2 norm of each row."""
    return gp.sum(x * x, axis=1)


def unit_rows(x: gp.Array) -> gp.Array:
    """Each row divided by its L2 norm; an all-zero row stays zero (as scikit-learn does)."""
    n = gp.sqrt(sq_norms(x))
    return x / gp.expand_dims(gp.where(n == 0, gp.ones_like(n), n), axis=1)


def _rows(n: int, chunk: int) -> Iterator[tuple[int, int]]:
    return ((i, min(i + chunk, n)) for i in range(0, n, chunk))


def pairwise_distances(x: gp.Array, y: gp.Array, metric: str = "sqeuclidean", *,
                       chunk: int | None = None) -> gp.Array:
    """The (n, m) distances between the rows of x (n, d) and y (m, d), in blocks of x's rows."""
    op = "pairwise_distances"
    x, y = _pair(x, y, op)
    _check_metric(metric, op)
    n, m = x.shape[0], y.shape[0]
    chunk = _check_chunk(chunk, n, m, op)
    if metric == "cosine":
        x, y = unit_rows(x), unit_rows(y)
    yt = gp.matrix_transpose(y)
    yn = gp.expand_dims(sq_norms(y), axis=0) if metric in ("sqeuclidean", "euclidean") else None
    parts = []
    for i, j in _rows(n, chunk):
        xc = x[i:j]
        ip = gp.matmul(xc, yt)
        if metric == "ip":
            parts.append(ip)
        elif metric == "cosine":
            parts.append(1.0 - ip)
        else:
            # clamped at 0: rounding makes a row's distance to itself slightly negative
            d2 = gp.maximum(gp.expand_dims(sq_norms(xc), axis=1) + yn - 2.0 * ip, 0.0)
            parts.append(d2 if metric == "sqeuclidean" else gp.sqrt(d2))
    if not parts:
        return gp.zeros((0, m), dtype=x.dtype, device=x.device)
    return parts[0] if len(parts) == 1 else gp.concat(parts, axis=0)


class Prepared(NamedTuple):
    """A database in the form knn multiplies by: ``mat`` (m, d) and a per-row term ``add``.

    sqeuclidean: mat = -2 y, add = |y|^2, so ``x @ mat.T + add`` ranks rows as |x - y|^2 does
    (|x|^2 is added to the k winners only); ip: mat = y; cosine: mat = y / |y|, scored by ip."""

    mat: gp.Array
    add: gp.Array | None
    metric: str


def prepare(y: gp.Array, metric: str) -> Prepared:
    """``y`` in the form knn searches (see Prepared)."""
    if metric in ("sqeuclidean", "euclidean"):
        return Prepared(-2.0 * y, sq_norms(y), metric)
    return Prepared(unit_rows(y) if metric == "cosine" else y, None, metric)


def knn_prepared(x: gp.Array, db: Prepared, k: int, chunk: int | None,
                 op: str = "knn") -> tuple[gp.Array, gp.Array]:
    """(D, I) of the k best rows of a prepared database for each row of x; k <= its rows.

    The scores come from the array layer's ``matmul_topk`` (a fused kernel where the device
    has one, else blocks of matmul and topk); ``chunk`` query rows go to it at a time. A NaN
    score ranks last for every metric: the similarities are found as the smallest of
    ``(-x) @ mat.T`` (negation is exact), since topk's NaN is the largest value and a NaN
    vector would otherwise be every query's best match."""
    n = x.shape[0]
    l2 = db.metric in ("sqeuclidean", "euclidean")
    chunk = n if chunk is None else _check_chunk(chunk, n, 1, op)
    if db.metric == "cosine":
        x = unit_rows(x)
    best_d, best_i = [], []
    for i, j in _rows(n, max(chunk, 1)):
        xc = x[i:j]
        vals, ids = neighbors.matmul_topk(xc if l2 else -xc, db.mat, k, add=db.add,
                                          largest=False)
        if l2:
            vals = gp.maximum(vals + gp.expand_dims(sq_norms(xc), axis=1), 0.0)
            if db.metric == "euclidean":
                vals = gp.sqrt(vals)
        else:
            vals = 0.0 - vals   # (not -vals: a zero score stays +0.0)
        best_d.append(vals)
        best_i.append(ids)
    if not best_d:
        return (gp.zeros((0, k), dtype=x.dtype, device=x.device),
                gp.zeros((0, k), dtype=gp.int64, device=x.device))
    if len(best_d) == 1:
        return best_d[0], best_i[0]
    return gp.concat(best_d, axis=0), gp.concat(best_i, axis=0)


def knn(x: gp.Array, y: gp.Array, k: int, metric: str = "sqeuclidean", *,
        chunk: int | None = None) -> tuple[gp.Array, gp.Array]:
    """The k nearest rows of y for each row of x: distances (n, k) best first, int64 indices."""
    op = "knn"
    x, y = _pair(x, y, op)
    _check_metric(metric, op)
    kk = as_int(k)
    if kk is None or not 0 < kk <= y.shape[0]:
        raise ValueError(f"{op}: k must be an int with 1 <= k <= {y.shape[0]} (the rows of y), "
                         f"got {k!r}")
    k = kk
    if metric == "cosine":   # the cosine distance 1 - cos ranks rows as -cos does
        d, i = knn_prepared(x, prepare(y, "cosine"), k, chunk, op)
        return 1.0 - d, i
    return knn_prepared(x, prepare(y, metric), k, chunk, op)
