"""IndexFlat: exact (brute-force) nearest-neighbour search, the semantics of faiss's IndexFlatL2 and
IndexFlatIP (ids are positions: remove_ids renumbers the vectors after the removed ones)."""
from __future__ import annotations

import os
import threading

import numpy as np

from ..array import api as gp
from ..array.dtypes import as_dtype
from ..nn import serialization
from . import distances as _d

__all__ = ["IndexFlat"]

# index metric -> the knn metric it ranks by; cosine is inner product on unit rows
_KNN = {"l2": "sqeuclidean", "ip": "ip", "cosine": "cosine"}
# faiss's metric_type values
METRIC_INNER_PRODUCT, METRIC_L2 = 0, 1
# range_search scores this many bytes of queries x vectors at a time (each block is read back)
RANGE_BLOCK_BYTES = 64 << 20
# add/remove_ids/reset replace an index's prepared vectors from the old ones (read-modify-write)
# and search reads them once, so threads sharing an index see whole states; one lock for every
# index (a lock attribute would stop copy.deepcopy and pickle)
_LOCK = threading.Lock()


class IndexFlat:
    """A flat index of d-dimensional vectors on one device: add, search, remove_ids, save/load.

    search returns (D, I): D the squared L2 distance ("l2", as faiss IndexFlatL2), the inner
    product ("ip", as IndexFlatIP) or the cosine similarity ("cosine"), best first; I int64
    positions, -1 (and D = -/+ the dtype's max, as faiss) where the index holds fewer than k."""

    def __init__(self, d: int, metric: str = "l2", *, dtype=gp.float32, device=None):
        if _d.as_int(d) is None or d < 1:
            raise ValueError(f"IndexFlat: d must be a positive int, got {d!r}")
        d = _d.as_int(d)
        if metric not in _KNN:
            raise ValueError(f"IndexFlat: metric must be 'l2', 'ip' or 'cosine', got {metric!r}")
        dtype = as_dtype(dtype, "IndexFlat")   # numpy's dtypes and names too, as gp.asarray
        if dtype not in (gp.float16, gp.float32, gp.float64):
            raise TypeError(f"IndexFlat: dtype must be a real floating dtype, got {dtype!r}")
        self.d, self.metric, self.dtype = d, metric, dtype
        # resolved (a name or a Device, checked) by the array layer, as any creation call does
        self.device = gp.zeros((0,), dtype=dtype, device=device).device
        self.reset()

    # ---- contents ---------------------------------------------------------------------------
    @property
    def ntotal(self) -> int:
        """The number of vectors held."""
        return self._db.mat.shape[0]

    def reset(self) -> None:
        """Remove every vector."""
        empty = _d.prepare(gp.zeros((0, self.d), dtype=self.dtype, device=self.device),
                           _KNN[self.metric])
        with _LOCK:
            self._db = empty

    def _vectors(self, x, op: str, arg: str) -> gp.Array:
        """``x`` (an Array on the index's device, or array-like) as (n, d) of the index dtype."""
        if not isinstance(x, gp.Array):
            h = np.asarray(x)
            if h.dtype.kind not in "biuf":   # strings, objects, None, complex
                raise TypeError(f"IndexFlat.{op}: {arg} must be a real numeric array, got "
                                f"{type(x).__name__} of dtype {h.dtype}")
            x = gp.asarray(h.astype(np.dtype(self.dtype.name)), device=self.device)
        elif x.device != self.device:
            raise ValueError(f"IndexFlat.{op}: {arg} is on {x.device}, the index on "
                             f"{self.device}; move it with to_device() first")
        _d.check_matrix(x, f"IndexFlat.{op}", arg)
        if x.shape[1] != self.d:
            raise ValueError(f"IndexFlat.{op}: {arg} has rows of length {x.shape[1]}, the index "
                             f"d={self.d}")
        return gp.astype(x, self.dtype, copy=False)

    def add(self, x) -> None:
        """Append the rows of x (n, d); they get the next ids ntotal, ntotal + 1, ..."""
        new = _d.prepare(self._vectors(x, "add", "x"), _KNN[self.metric])
        with _LOCK:
            db = self._db
            if db.mat.shape[0]:
                add = None if new.add is None else gp.concat([db.add, new.add])
                new = _d.Prepared(gp.concat([db.mat, new.mat]), add, new.metric)
            self._db = new

    def add_with_ids(self, x, ids) -> None:
        """Not supported, as faiss's IndexFlat: wrap the index in an IndexIDMap."""
        raise NotImplementedError("IndexFlat.add_with_ids: ids are positions in a flat index; "
                                  "use grilly.search.IndexIDMap(index).add_with_ids(x, ids)")

    is_trained = True   # faiss's flag: a flat index needs no training

    @property
    def metric_type(self) -> int:
        """faiss's metric constant: 1 (METRIC_L2) for "l2", 0 (METRIC_INNER_PRODUCT) for "ip"
        and "cosine"."""
        return METRIC_L2 if self.metric == "l2" else METRIC_INNER_PRODUCT

    def train(self, x) -> None:
        """faiss's train: nothing to learn for a flat index (``x`` is only checked)."""
        self._vectors(x, "train", "x")

    def reconstruct(self, key: int) -> gp.Array:
        """The stored vector at id ``key`` (d,); for "cosine", the unit-normalized one."""
        i = _d.as_int(key)
        if i is None or not 0 <= i < self.ntotal:
            raise IndexError(f"IndexFlat.reconstruct: key {key!r} is out of range for an index "
                             f"of {self.ntotal} vectors")
        return self.reconstruct_n(i, 1)[0]

    def reconstruct_n(self, i0: int, ni: int) -> gp.Array:
        """The stored vectors at ids i0 .. i0 + ni - 1 (ni, d)."""
        a, n = _d.as_int(i0), _d.as_int(ni)
        db = self._db   # once: another thread may replace it
        if a is None or n is None or a < 0 or n < 0 or a + n > db.mat.shape[0]:
            raise IndexError(f"IndexFlat.reconstruct_n: ids {i0!r} .. {i0!r} + {ni!r} - 1 are "
                             f"out of range for an index of {db.mat.shape[0]} vectors")
        rows = db.mat[a:a + n]
        return rows * -0.5 if self.metric == "l2" else rows   # (l2 keeps -2 x: exact)

    def reconstruct_all(self) -> gp.Array:
        """The stored vectors (n, d); for "cosine", the unit-normalized ones it keeps."""
        mat = self._db.mat
        return mat * -0.5 if self.metric == "l2" else mat   # (l2 keeps -2 x: exact)

    def remove_ids(self, ids) -> int:
        """Remove the vectors at positions ``ids`` (others move down, as faiss); the count removed."""
        h = np.asarray(ids.to_device("cpu") if isinstance(ids, gp.Array) else ids)
        if h.size and h.dtype.kind not in "iu":
            raise TypeError(f"IndexFlat.remove_ids: ids must be integers, got dtype {h.dtype}")
        h = h.reshape(-1).astype(np.int64)
        with _LOCK:
            db = self._db
            m = db.mat.shape[0]
            drop = np.zeros(m, bool)
            drop[h[(h >= 0) & (h < m)]] = True   # ids not held are ignored, as faiss
            n = int(drop.sum())
            if n:
                keep = gp.asarray(np.flatnonzero(~drop), device=self.device)
                self._db = _d.Prepared(gp.take(db.mat, keep, axis=0),
                                       None if db.add is None else gp.take(db.add, keep),
                                       db.metric)
        return n

    # ---- search -----------------------------------------------------------------------------
    def search(self, queries, k: int, *, chunk: int | None = None) -> tuple[gp.Array, gp.Array]:
        """(D, I) of the k best vectors for each query row, best first (see the class)."""
        q = self._vectors(queries, "search", "queries")
        if _d.as_int(k) is None or k < 1:
            raise ValueError(f"IndexFlat.search: k must be a positive int, got {k!r}")
        k = _d.as_int(k)
        db = self._db   # once: another thread may replace it
        kk = min(k, db.mat.shape[0])
        n = q.shape[0]
        big = float(np.finfo(np.dtype(self.dtype.name)).max)
        pad = big if self.metric == "l2" else -big
        if kk:
            dist, ids = _d.knn_prepared(q, db, kk, chunk, "IndexFlat.search")
            # a hit no better than the pad (an overflowed distance, a NaN score from a NaN
            # vector or query) is no hit, as faiss; knn_prepared ranks them last
            miss = ~(dist < big) if self.metric == "l2" else ~(dist > pad)
            dist = gp.where(miss, pad, dist)
            ids = gp.where(miss, -1, ids)
        else:
            dist = gp.zeros((n, 0), dtype=self.dtype, device=self.device)
            ids = gp.zeros((n, 0), dtype=gp.int64, device=self.device)
        if kk < k:
            dist = gp.concat([dist, gp.full((n, k - kk), pad, dtype=self.dtype,
                                            device=self.device)], axis=1)
            ids = gp.concat([ids, gp.full((n, k - kk), -1, dtype=gp.int64, device=self.device)],
                            axis=1)
        return dist, ids

    def range_search(self, queries, radius: float) -> tuple[gp.Array, gp.Array, gp.Array]:
        """faiss's range_search: (lims, D, I) of every stored vector within ``radius`` of each
        query (l2: squared distance < radius; ip, cosine: score > radius), query i's results
        at lims[i]:lims[i + 1] in id order. The result's size depends on the data: each block
        of scores is read to the host (a counted download) to select it."""
        q = self._vectors(queries, "range_search", "queries")
        try:
            r = float(radius)
        except (TypeError, ValueError):
            raise TypeError(f"IndexFlat.range_search: radius must be a real number, got "
                            f"{type(radius).__name__}") from None
        db = self._db   # once: another thread may replace it
        n, m = q.shape[0], db.mat.shape[0]
        l2 = self.metric == "l2"
        if self.metric == "cosine":
            q = _d.unit_rows(q)
        mt = gp.matrix_transpose(db.mat)
        step = max(1, RANGE_BLOCK_BYTES // max(1, m * q.dtype.itemsize))
        counts, ds, ids = [], [], []
        for i in range(0, n, step):
            xc = q[i:i + step]
            s = gp.matmul(xc, mt)
            if l2:
                s = gp.maximum(s + gp.expand_dims(db.add, axis=0)
                               + gp.expand_dims(_d.sq_norms(xc), axis=1), 0.0)
            h = np.asarray(s)
            rows, cols = np.nonzero(h < r if l2 else h > r)   # row-major: ids ascend per row
            counts.append(np.bincount(rows, minlength=h.shape[0]))
            ds.append(h[rows, cols])
            ids.append(cols)
        lims = np.zeros(n + 1, np.int64)
        dt = np.dtype(self.dtype.name)
        d_h, i_h = np.zeros(0, dt), np.zeros(0, np.int64)
        if counts:   # (no query rows: none)
            np.cumsum(np.concatenate(counts), out=lims[1:])
            d_h, i_h = np.concatenate(ds).astype(dt), np.concatenate(ids).astype(np.int64)
        dev = self.device
        return (gp.asarray(lims, device=dev), gp.asarray(d_h, device=dev),
                gp.asarray(i_h, device=dev))

    # ---- files ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the index to ``path`` (safetensors: the vectors, metric and d in the metadata)."""
        state = {"vectors": self.reconstruct_all()}
        serialization.save(state, path, metadata={"grilly_index": "IndexFlat", "d": str(self.d),
                                                  "metric": self.metric})

    @classmethod
    def load(cls, path: str | os.PathLike, *, device=None) -> "IndexFlat":
        """An index read from a file written by save()."""
        meta = serialization.load_metadata(path)
        if meta.get("grilly_index") != "IndexFlat":
            raise ValueError(f"IndexFlat.load: {os.fsdecode(path)!r} is not a saved IndexFlat")
        return cls._from_saved(meta, serialization.load(path, device=device)["vectors"])

    @classmethod
    def _from_saved(cls, meta: dict, x: gp.Array) -> "IndexFlat":
        """The index of saved vectors ``x`` and the file's metadata (d, metric)."""
        index = cls(int(meta["d"]), meta["metric"], dtype=x.dtype, device=x.device)
        if meta["metric"] == "cosine":   # already unit rows: normalizing again would round them
            index._db = _d.Prepared(x, None, "cosine")
        elif x.shape[0]:
            index.add(x)
        return index
