"""IndexIDMap: faiss's wrapper that gives the vectors of a flat index ids of the caller's choice
(``add_with_ids``); search returns those ids and ``remove_ids`` removes by them."""
from __future__ import annotations

import os
import threading

import numpy as np

from ..array import api as gp
from ..nn import serialization
from .flat import IndexFlat

__all__ = ["IndexIDMap", "read_index", "write_index"]

# add/remove change the index and the id map together, and a search reads both; one lock for
# every IndexIDMap (a lock attribute would stop copy.deepcopy and pickle)
_LOCK = threading.Lock()


def _ids(ids, op: str) -> np.ndarray:
    """``ids`` (an Array or array-like of integers) as a 1-D int64 host array."""
    h = np.asarray(ids.to_device("cpu") if isinstance(ids, gp.Array) else ids)
    if h.size and h.dtype.kind not in "iu":
        raise TypeError(f"IndexIDMap.{op}: ids must be integers, got dtype {h.dtype}")
    return h.reshape(-1).astype(np.int64)


class IndexIDMap:
    """faiss.IndexIDMap over an empty IndexFlat: ``add_with_ids(x, ids)``; search and
    range_search return the ids given (-1 for a missing hit, as faiss); ``remove_ids`` removes
    every vector holding one of the ids. The ids need not be unique or sorted (as faiss)."""

    def __init__(self, index: IndexFlat):
        if not isinstance(index, IndexFlat):
            raise TypeError(f"IndexIDMap: index must be a grilly.search.IndexFlat, got "
                            f"{type(index).__name__}")
        if index.ntotal:
            raise ValueError(f"IndexIDMap: index must be empty, it holds {index.ntotal} vectors")
        self.index = index
        self._map = np.zeros(0, np.int64)   # id of the vector at each position of the index

    d = property(lambda self: self.index.d, doc="The vectors' dimension.")
    ntotal = property(lambda self: self.index.ntotal, doc="The number of vectors held.")
    metric_type = property(lambda self: self.index.metric_type, doc="faiss's metric constant.")
    is_trained = True

    @property
    def id_map(self) -> np.ndarray:
        """The id of each stored vector, in storage order (a copy; faiss's id_map)."""
        return self._map.copy()

    def train(self, x) -> None:
        """faiss's train: nothing to learn (``x`` is only checked)."""
        self.index.train(x)

    def add(self, x) -> None:
        """Not supported, as faiss: the vectors need ids (add_with_ids)."""
        raise NotImplementedError("IndexIDMap.add: give the vectors ids with add_with_ids(x, ids)")

    def add_with_ids(self, x, ids) -> None:
        """Append the rows of x (n, d) with the int64 ids ``ids`` (n,)."""
        h = _ids(ids, "add_with_ids")
        shape = x.shape if isinstance(x, gp.Array) else np.shape(x)
        if len(shape) == 2 and h.shape[0] != shape[0]:   # (other shapes: index.add says)
            raise ValueError(f"IndexIDMap.add_with_ids: {h.shape[0]} ids for {shape[0]} vectors")
        with _LOCK:
            self.index.add(x)   # checks x (shape, dtype, device)
            self._map = np.concatenate([self._map, h])

    def reset(self) -> None:
        """Remove every vector and id."""
        with _LOCK:
            self.index.reset()
            self._map = np.zeros(0, np.int64)

    def remove_ids(self, ids) -> int:
        """Remove every vector whose id is in ``ids``; the count removed (ids not held: none)."""
        h = _ids(ids, "remove_ids")
        with _LOCK:
            drop = np.isin(self._map, h)
            n = self.index.remove_ids(np.flatnonzero(drop))
            self._map = self._map[~drop]
        return n

    def _to_ids(self, pos: gp.Array, m: np.ndarray) -> gp.Array:
        """The ids at positions ``pos`` (an int64 Array; -1 stays -1)."""
        if m.size == 0:
            return gp.full(pos.shape, -1, dtype=gp.int64, device=pos.device)
        table = gp.asarray(m, device=pos.device)
        flat = gp.take(table, gp.reshape(gp.maximum(pos, 0), (-1,)))
        return gp.where(pos < 0, -1, gp.reshape(flat, pos.shape))

    def search(self, queries, k: int, *, chunk: int | None = None) -> tuple[gp.Array, gp.Array]:
        """(D, I) as IndexFlat.search, I the ids given to add_with_ids."""
        with _LOCK:   # the positions and the map of one moment
            dist, pos = self.index.search(queries, k, chunk=chunk)
            m = self._map
        return dist, self._to_ids(pos, m)

    def range_search(self, queries, radius: float) -> tuple[gp.Array, gp.Array, gp.Array]:
        """(lims, D, I) as IndexFlat.range_search, I the ids given to add_with_ids."""
        with _LOCK:
            lims, dist, pos = self.index.range_search(queries, radius)
            m = self._map
        return lims, dist, self._to_ids(pos, m)

    # ---- files ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> None:
        """Write the index and its ids to ``path`` (safetensors, as IndexFlat.save)."""
        with _LOCK:   # the vectors and the ids of one moment
            x, m = self.index.reconstruct_all(), self._map
        state = {"vectors": x, "ids": gp.asarray(m, device=x.device)}
        serialization.save(state, path, metadata={
            "grilly_index": "IndexIDMap", "d": str(self.d), "metric": self.index.metric})

    @classmethod
    def load(cls, path: str | os.PathLike, *, device=None) -> "IndexIDMap":
        """An index read from a file written by save()."""
        meta = serialization.load_metadata(path)
        if meta.get("grilly_index") != "IndexIDMap":
            raise ValueError(f"IndexIDMap.load: {os.fsdecode(path)!r} is not a saved IndexIDMap")
        state = serialization.load(path, device=device)
        out = cls(IndexFlat(int(meta["d"]), meta["metric"], dtype=state["vectors"].dtype,
                            device=state["vectors"].device))
        out.index = IndexFlat._from_saved(meta, state["vectors"])
        out._map = np.asarray(state["ids"].to_device("cpu"), dtype=np.int64).reshape(-1)
        return out


def write_index(index: IndexFlat | IndexIDMap, path: str | os.PathLike) -> None:
    """faiss.write_index: ``index.save(path)`` for an IndexFlat or IndexIDMap."""
    if not isinstance(index, (IndexFlat, IndexIDMap)):
        raise TypeError(f"write_index: index must be a grilly.search.IndexFlat or IndexIDMap, "
                        f"got {type(index).__name__}")
    index.save(path)


def read_index(path: str | os.PathLike, *, device=None) -> IndexFlat | IndexIDMap:
    """faiss.read_index: the IndexFlat or IndexIDMap a save() wrote to ``path``."""
    kind = serialization.load_metadata(path).get("grilly_index")
    if kind not in ("IndexFlat", "IndexIDMap"):
        raise ValueError(f"read_index: {os.fsdecode(path)!r} is not a saved grilly index")
    return (IndexFlat if kind == "IndexFlat" else IndexIDMap).load(path, device=device)
