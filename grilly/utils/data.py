"""Datasets, samplers and the DataLoader, as ``torch.utils.data`` (docs/utils.md, "Data").

Batches are grilly Arrays on the loader's ``device`` (the default device unless given). A
``TensorDataset`` of Arrays is batched with one gather per tensor on its device (no per-sample
indexing); other datasets go sample by sample through ``collate_fn`` (``default_collate``:
torch's rules, making grilly Arrays). Shuffling draws its order on the host from a NumPy
generator seeded by grilly's default generator (or ``generator``), so ``nn.manual_seed``
makes it reproducible. ``num_workers > 0`` prefetches batches in threads (grilly's devices are
thread-safe), in order; there are no worker processes.
"""
from __future__ import annotations

import bisect
import collections
import collections.abc as cabc
import itertools
import math
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from .. import random as _grandom
from ..array import api as gp
from ..array import core as _core
from ..array.array import Array

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "IterableDataset", "RandomSampler", "Sampler", "SequentialSampler", "StackDataset",
           "Subset", "SubsetRandomSampler", "TensorDataset", "WeightedRandomSampler",
           "default_collate", "default_convert", "random_split"]


def _rng(generator) -> np.random.Generator:
    """A host NumPy generator for one shuffle: from ``generator`` (a grilly Generator, a NumPy
    Generator used as is, or None for grilly's default generator, whose stream advances)."""
    if isinstance(generator, np.random.Generator):
        return generator
    if generator is None:
        generator = _grandom.default_generator
    if not isinstance(generator, _grandom.Generator):
        raise TypeError("generator must be a grilly.random.Generator or a numpy.random.Generator, "
                        f"got {type(generator).__name__}")
    # one block of the stream, taken atomically: the next shuffle (or draw) differs
    return np.random.default_rng(list(generator._take(1)))


# ---- datasets ----------------------------------------------------------------------------------
class Dataset:
    """A map-style dataset: ``dataset[i]`` for ``i`` in ``range(len(dataset))``."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other: "Dataset") -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: iterate it (no indexing, no shuffling by the loader)."""

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other: "IterableDataset") -> "ChainDataset":
        return ChainDataset([self, other])


def _rows(t) -> int:
    shape = getattr(t, "shape", None)
    if shape is None or len(shape) == 0:
        raise ValueError("TensorDataset: every tensor needs a first (sample) dimension, got a "
                         f"{type(t).__name__} of shape {shape}")
    return shape[0]


class TensorDataset(Dataset):
    """Samples are rows of the given arrays (grilly Arrays or NumPy arrays), one tuple each."""

    def __init__(self, *tensors) -> None:
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        n = _rows(tensors[0])
        if any(_rows(t) != n for t in tensors):
            raise ValueError("TensorDataset: size mismatch between tensors (first dimensions "
                             f"{[_rows(t) for t in tensors]})")
        self.tensors = tuple(tensors)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return _rows(self.tensors[0])


class StackDataset(Dataset):
    """Samples of several equal-length datasets side by side, as a tuple (positional) or dict."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset: datasets as positional or keyword arguments, not both")
        self.datasets = args or kwargs
        parts = list(args or kwargs.values())
        if not parts:
            raise ValueError("StackDataset: needs at least one dataset")
        n = len(parts[0])
        if any(len(d) != n for d in parts):
            raise ValueError("StackDataset: size mismatch between datasets")
        self._length = n

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index: int):
        n = len(self)
        if index < 0:
            if -index > n:
                raise ValueError("ConcatDataset: absolute value of index should not exceed "
                                 "dataset length")
            index += n
        if index >= n:
            raise IndexError(f"ConcatDataset: index {index} out of range for length {n}")
        i = bisect.bisect_right(self.cumulative_sizes, index)
        return self.datasets[i][index - (self.cumulative_sizes[i - 1] if i else 0)]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another."""

    def __init__(self, datasets: Iterable[IterableDataset]) -> None:
        self.datasets = list(datasets)

    def __iter__(self) -> Iterator:
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset: Dataset, indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return [self.dataset[self.indices[i]] for i in idx]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Disjoint random Subsets of the given lengths (ints summing to the dataset's length, or
    fractions summing to 1: floors, the remainder given one each to the first, as torch)."""
    n = len(dataset)
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(n * f)) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, s in enumerate(sizes):
            if s == 0:
                warnings.warn(f"random_split: length of split at index {i} is 0; this split "
                              "will be empty", stacklevel=2)
        lengths = sizes
    if any(not isinstance(s, (int, np.integer)) or s < 0 for s in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing "
                         f"to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError("random_split: sum of input lengths does not equal the length of the "
                         f"input dataset ({sum(lengths)} != {n})")
    perm = _rng(generator).permutation(n).tolist()
    out, start = [], 0
    for s in lengths:
        out.append(Subset(dataset, perm[start:start + int(s)]))
        start += int(s)
    return out


# ---- samplers ----------------------------------------------------------------------------------
class Sampler:
    """Yields dataset indices (or, for a batch sampler, lists of them)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random order of the indices (a new one per epoch), or ``num_samples`` drawn with
    replacement."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"RandomSampler: replacement should be a boolean, got {replacement!r}")
        self.data_source, self.replacement = data_source, replacement
        self._num_samples, self.generator = num_samples, generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("RandomSampler: num_samples should be a positive integer, got "
                             f"{self.num_samples!r}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, rng = len(self.data_source), _rng(self.generator)
        if self.replacement:
            return iter(rng.integers(0, n, self.num_samples).tolist())
        reps, rest = divmod(self.num_samples, n)
        idx = [rng.permutation(n) for _ in range(reps)] + [rng.permutation(n)[:rest]]
        return iter(np.concatenate(idx).tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (a new one per epoch)."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self) -> Iterator[int]:
        for i in _rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights``."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator=None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError("WeightedRandomSampler: num_samples should be a positive integer, "
                             f"got {num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError("WeightedRandomSampler: replacement should be a boolean, got "
                             f"{replacement!r}")
        w = np.asarray(weights.__array__() if isinstance(weights, Array) else weights,
                       dtype=np.float64)
        if w.ndim != 1:
            raise ValueError(f"WeightedRandomSampler: weights should be a 1-d sequence, got shape "
                             f"{w.shape}")
        if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
            raise ValueError("WeightedRandomSampler: weights must be finite, non-negative and "
                             "not all zero")
        if not replacement and num_samples > int((w > 0).sum()):
            raise ValueError("WeightedRandomSampler: num_samples exceeds the number of non-zero "
                             "weights while drawing without replacement")
        self.weights, self.num_samples, self.replacement = w, num_samples, replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        p = self.weights / self.weights.sum()
        idx = _rng(self.generator).choice(len(p), self.num_samples, replace=self.replacement, p=p)
        return iter(idx.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler`` (the last shorter unless drop_last)."""

    def __init__(self, sampler: Iterable[int], batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"BatchSampler: batch_size should be a positive integer, got "
                             f"{batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"BatchSampler: drop_last should be a boolean, got {drop_last!r}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.sampler)
        while True:
            batch = list(itertools.islice(it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


# ---- collation ---------------------------------------------------------------------------------
def _to_array(x, device):
    return gp.asarray(x, device=device)


def default_convert(data, device=None):
    """One sample's NumPy arrays as grilly Arrays (on ``device``), through lists, tuples and
    dicts; everything else as it is (what the loader yields when batch_size is None)."""
    if isinstance(data, Array):
        return _move(data, device)
    if isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind in "biufc":
        return _to_array(data, device)
    if isinstance(data, cabc.Mapping):
        return {k: default_convert(v, device) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v, device) for v in data))
    if isinstance(data, (list, tuple)):
        return type(data)(default_convert(v, device) for v in data)
    return data


def default_collate(batch: Sequence, device=None):
    """Samples -> one batch, as torch's: Arrays and NumPy arrays stacked on a new first axis,
    Python floats as float64, ints as int64, bools as bool, strings kept as a list; tuples,
    lists, named tuples and dicts collated position by position (key by key)."""
    if len(batch) == 0:
        raise ValueError("default_collate: got an empty batch")
    elem = batch[0]
    if isinstance(elem, Array):
        return _move(gp.stack(list(batch), axis=0), device)
    if isinstance(elem, (np.ndarray, np.generic)):
        if elem.dtype.kind not in "biufc":
            raise TypeError(f"default_collate: batch must contain arrays, numbers, dicts or "
                            f"lists; found a NumPy array of dtype {elem.dtype}")
        return _to_array(np.stack([np.asarray(b) for b in batch]), device)
    if isinstance(elem, bool):
        return gp.asarray(list(batch), dtype=gp.bool, device=device)
    if isinstance(elem, float):
        return gp.asarray(list(batch), dtype=gp.float64, device=device)
    if isinstance(elem, int):
        return gp.asarray(list(batch), dtype=gp.int64, device=device)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, cabc.Mapping):
        return {k: default_collate([d[k] for d in batch], device) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s, device) for s in zip(*batch)))
    if isinstance(elem, cabc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        cols = [default_collate(s, device) for s in zip(*batch)]
        return tuple(cols) if isinstance(elem, tuple) else cols
    raise TypeError("default_collate: batch must contain Arrays, NumPy arrays, numbers, dicts "
                    f"or lists; found {type(elem).__name__}")


def _move(x: Array, device) -> Array:
    """``x`` on ``device`` (as it is where device is None or already its device)."""
    if device is None or x.device is _core.resolve_device(device, "DataLoader"):
        return x
    return x.to_device(device)


# ---- the loader --------------------------------------------------------------------------------
class DataLoader:
    """Batches of a dataset, as torch's DataLoader, as grilly Arrays on ``device``."""

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0,
                 collate_fn: Callable | None = None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True, device=None) -> None:
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("DataLoader: num_workers option should be non-negative; use "
                             "num_workers=0 to disable multiprocessing")
        if timeout < 0:
            raise ValueError("DataLoader: timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("DataLoader: prefetch_factor option could only be specified in "
                             "multiprocessing (num_workers > 0)")
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("DataLoader: prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        self.dataset, self.num_workers = dataset, num_workers
        self.prefetch_factor = 2 if num_workers and prefetch_factor is None else prefetch_factor
        self.worker_init_fn, self.generator, self.timeout = worker_init_fn, generator, timeout
        self.pin_memory, self.persistent_workers, self.in_order = pin_memory, persistent_workers, in_order
        if device is not None:
            _core.resolve_device(device, "DataLoader")   # an unknown device fails here
        self.device = device
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            if sampler is not None and shuffle:
                raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
            if batch_sampler is not None:
                if batch_size != 1 or shuffle or sampler is not None or drop_last:
                    raise ValueError("DataLoader: batch_sampler option is mutually exclusive "
                                     "with batch_size, shuffle, sampler, and drop_last")
                batch_size, drop_last = None, False
            elif batch_size is None and drop_last:
                raise ValueError("DataLoader: batch_size=None option disables auto-batching and "
                                 "is mutually exclusive with drop_last")
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle \
                    else SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if batch_size is not None and (not isinstance(batch_size, int) or batch_size <= 0):
            raise ValueError(f"DataLoader: batch_size should be a positive integer or None, got "
                             f"{batch_size!r}")
        self.batch_size, self.drop_last = batch_size, drop_last
        self.sampler, self.batch_sampler = sampler, batch_sampler
        self._auto_collate = collate_fn is None
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_size is not None or batch_sampler is not None
            else default_convert)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)

    # a batch of a TensorDataset of Arrays: one gather per tensor, on its device
    def _gather(self, idx: list[int]):
        out = []
        for t in self.dataset.tensors:
            if isinstance(t, Array):
                b = _move(gp.take(t, gp.asarray(idx, dtype=gp.int64, device=t.device), axis=0),
                          self.device)
            else:
                b = _to_array(np.asarray(t)[idx], self.device)
            out.append(b)
        return tuple(out)

    def _fetch(self, idx):
        if self.batch_size is None and self.batch_sampler is None:   # no auto-batching
            return self._collate(self.dataset[idx])
        if (self._auto_collate and type(self.dataset) is TensorDataset):
            return self._gather(list(idx))
        return self._collate([self.dataset[i] for i in idx])

    def _collate(self, samples):
        if self.collate_fn is default_collate or self.collate_fn is default_convert:
            return self.collate_fn(samples, self.device)
        return self.collate_fn(samples)

    def _iter_iterable(self) -> Iterator:
        it = iter(self.dataset)
        if self.batch_size is None:
            for s in it:
                yield self._collate(s)
            return
        while True:
            samples = list(itertools.islice(it, self.batch_size))
            if not samples or (self.drop_last and len(samples) < self.batch_size):
                return
            yield self._collate(samples)

    def __iter__(self) -> Iterator:
        if self._iterable:
            return self._iter_iterable()
        keys = self.batch_sampler if self.batch_sampler is not None else self.sampler
        if self.num_workers == 0:
            return (self._fetch(k) for k in keys)
        return self._iter_threads(iter(keys))

    def _iter_threads(self, keys: Iterator) -> Iterator:
        """Batches fetched by ``num_workers`` threads, at most workers x prefetch_factor ahead,
        yielded in the sampler's order."""
        ahead = max(1, self.num_workers * max(self.prefetch_factor or 1, 1))
        init = self.worker_init_fn
        ids = itertools.count()

        def start():
            if init is not None:
                init(next(ids))

        with ThreadPoolExecutor(self.num_workers, initializer=start) as pool:
            pending: collections.deque = collections.deque()
            for k in itertools.islice(keys, ahead):
                pending.append(pool.submit(self._fetch, k))
            while pending:
                batch = pending.popleft().result(timeout=self.timeout or None)
                for k in itertools.islice(keys, 1):
                    pending.append(pool.submit(self._fetch, k))
                yield batch

