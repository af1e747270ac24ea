"""Datasets, samplers and the DataLoader, as ``torch.utils.data`` (docs/utils.md, "Data").

Batches are grilly Arrays on the loader's ``device`` (the default device unless given). A
``TensorDataset`` of Arrays is batched with one gather per tensor on its device (no per-sample
indexing); other datasets go sample by sample through ``collate_fn`` (``default_collate``:
torch's rules and structure, making grilly Arrays; torch CPU tensors in a sample are read
through DLPack). Shuffling draws its order on the host from a NumPy generator seeded by
grilly's default generator (or ``generator``: a grilly, NumPy or torch generator), so
``nn.manual_seed`` makes it reproducible. ``num_workers > 0`` runs that many worker threads
(grilly's devices are thread-safe) with torch's batch assignment, order, ``worker_init_fn``,
``get_worker_info`` and ``persistent_workers``; there are no worker processes.
"""
from __future__ import annotations

import bisect
import copy
import collections.abc as cabc
import itertools
import math
import queue
import sys
import threading
import warnings
import weakref
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from .. import random as _grandom
from ..array import api as gp
from ..array import core as _core
from ..array.defaults import get_default_dtype
from ..array.array import Array

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset",
           "DistributedSampler", "IterableDataset", "RandomSampler", "Sampler",
           "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
           "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert",
           "get_worker_info", "random_split"]


def _torch_instance(x, name: str) -> bool:
    """Whether ``x`` is a ``torch.<name>`` (False without importing torch: where torch was
    never imported, nothing is a torch object)."""
    torch = sys.modules.get("torch")
    cls = getattr(torch, name, None) if torch is not None else None
    return cls is not None and isinstance(x, cls)


def _seed(generator) -> int:
    """A non-negative 63-bit seed drawn from ``generator`` (grilly, NumPy or torch; None for
    grilly's default generator), which advances."""
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(2 ** 63))
    if _torch_instance(generator, "Generator"):
        # torch's shuffle order cannot be reproduced (another generator algorithm); one draw
        # from it seeds ours, so torch.manual_seed / Generator.manual_seed make it repeatable
        torch = sys.modules["torch"]
        return int(torch.empty((), dtype=torch.int64).random_(generator=generator))
    if generator is None:
        generator = _grandom.default_generator
    if not isinstance(generator, _grandom.Generator):
        raise TypeError("generator must be a grilly.random.Generator, a numpy.random.Generator or "
                        f"a torch.Generator, got {type(generator).__name__}")
    # one block of the stream, taken atomically: the next shuffle (or draw) differs
    return int(np.random.default_rng(list(generator._take(1))).integers(2 ** 63))


def _rng(generator) -> np.random.Generator:
    """A host NumPy generator for one shuffle: from ``generator`` (a grilly Generator, a NumPy
    Generator used as is, a torch.Generator seeding it, or None for grilly's default generator,
    whose stream advances)."""
    if isinstance(generator, np.random.Generator):
        return generator
    if generator is None or isinstance(generator, _grandom.Generator):
        g = _grandom.default_generator if generator is None else generator
        return np.random.default_rng(list(g._take(1)))
    return np.random.default_rng(_seed(generator))


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

    def __getitems__(self, indices: list) -> list:
        """The samples at ``indices`` (through the dataset's own ``__getitems__`` if it has
        one, as torch's)."""
        return _getitems(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


def _getitems(dataset, indices: list) -> list:
    """The samples at ``indices``: one ``dataset.__getitems__(indices)`` call where the dataset
    defines it (torch's batched-fetch protocol), else ``dataset[i]`` for each."""
    getitems = getattr(dataset, "__getitems__", None)
    if callable(getitems):
        return getitems(indices)
    return [dataset[i] for i in indices]


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


def _int_arg(who: str, name: str, value, low: int) -> int:
    """``value`` as an int >= ``low`` (NumPy ints accepted; bools and others refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{who}: {name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{who}: {name} must be >= {low}, got {value}")
    return int(value)


class DistributedSampler(Sampler):
    """This replica's share of the indices (every ``num_replicas``-th, from ``rank``), padded by
    repeating the first indices (or cut, with ``drop_last``) so every replica gets the same
    number; with ``shuffle``, one order per ``seed + epoch``, the same on every replica."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = True, seed: int = 0, drop_last: bool = False) -> None:
        who = "DistributedSampler"
        if num_replicas is None or rank is None:
            # grilly has no process group to read the world size and rank from
            raise NotImplementedError(f"{who}: num_replicas and rank must be given (grilly has "
                                      "no distributed process group to read them from)")
        self.num_replicas = _int_arg(who, "num_replicas", num_replicas, 1)
        self.rank = _int_arg(who, "rank", rank, 0)
        if self.rank >= self.num_replicas:
            raise ValueError(f"{who}: invalid rank {rank}, rank should be in the interval "
                             f"[0, {self.num_replicas - 1}]")
        self.seed = _int_arg(who, "seed", seed, 0)
        self.dataset, self.shuffle, self.drop_last = dataset, bool(shuffle), bool(drop_last)
        self.epoch = 0
        n = len(dataset)
        # drop_last: the largest multiple of num_replicas not above n; else the smallest above
        self.num_samples = n // self.num_replicas if self.drop_last else -(-n // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        if self.shuffle:
            # torch's randperm stream cannot be reproduced; every replica draws the same order
            # from seed + epoch, so the shares stay disjoint
            idx = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            idx = list(range(n))
        if self.total_size > n and n:
            idx = (idx * -(-self.total_size // n))[:self.total_size]   # wrap round to pad
        idx = idx[:self.total_size]
        return iter(idx[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose order the next ``iter`` gives (call it before each epoch)."""
        self.epoch = _int_arg("DistributedSampler.set_epoch", "epoch", epoch, 0)


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


def _from_torch(t, device, op: str) -> Array:
    """A torch CPU tensor as a grilly Array on ``device`` (the default device if None), read
    through DLPack (no copy on the cpu device), outside torch's autograd."""
    if t.device.type != "cpu":
        raise ValueError(f"{op}: got a torch tensor on {t.device}; grilly reads torch CPU tensors "
                         "(return CPU tensors from the dataset, or numpy arrays)")
    return gp.from_dlpack(t.detach().contiguous(), device=device)


def _rebuild_mapping(elem, items: dict):
    """``items`` in a mapping of ``elem``'s type where it can be made, as torch's collate."""
    try:
        if isinstance(elem, cabc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(items)
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def _rebuild_sequence(elem, items: list):
    """``items`` in a sequence of ``elem``'s type where it can be made (a tuple becomes a list,
    as torch's collate and convert make it)."""
    if isinstance(elem, tuple):
        return items
    try:
        if isinstance(elem, cabc.MutableSequence):
            clone = copy.copy(elem)
            for i, v in enumerate(items):
                clone[i] = v
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def default_convert(data, device=None):
    """One sample's NumPy arrays and torch tensors as grilly Arrays (on ``device``), through
    mappings, named tuples and sequences (a tuple becomes a list, as torch's); everything else
    as it is (what the loader yields when batch_size is None)."""
    if isinstance(data, Array):
        return _move(data, device)
    if _torch_instance(data, "Tensor"):
        return _from_torch(data, device, "default_convert")
    if isinstance(data, (np.ndarray, np.generic)) and data.dtype.kind in "biufc":
        return _to_array(data, device)
    if isinstance(data, cabc.Mapping):
        return _rebuild_mapping(data, {k: default_convert(data[k], device) for k in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(v, device) for v in data))
    if isinstance(data, cabc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(v, device) for v in data])
    return data


_COLLATE_ERR = "default_collate: batch must contain Arrays, tensors, numpy arrays, numbers, dicts " \
               "or lists; found {}"


def _collate_python_ints(batch, device) -> Array:
    """A batch whose first element is a Python int or bool, as ``torch.tensor(batch)`` types
    it: all bools -> bool, ints (bools among them) -> int64, any float -> the default dtype
    (gp.get_default_dtype(), float32 unless set), complex -> its complex twin."""
    a = np.asarray(list(batch))
    if a.dtype.kind == "u" or (a.dtype.kind == "O" and all(isinstance(v, int) for v in batch)):
        raise OverflowError(f"default_collate: an int of the batch does not fit in int64 "
                            f"({list(batch)[:8]}...)")
    f = get_default_dtype()
    c = gp.complex128 if f == gp.float64 else gp.complex64   # (no complex32 here)
    want = {"b": gp.bool, "i": gp.int64, "f": f, "c": c}.get(a.dtype.kind)
    if want is None:
        raise TypeError(_COLLATE_ERR.format(f"a batch of {sorted({type(v).__name__ for v in batch})}"))
    return gp.asarray(a, dtype=want, device=device)


def default_collate(batch: Sequence, device=None):
    """Samples -> one batch, with torch's rules and structure: Arrays, NumPy arrays and torch
    CPU tensors stacked on a new first axis, Python floats as float64, ints as int64, bools as
    bool; strings and bytes kept as the batch (a tuple inside a tuple or list sample); mappings
    (their type kept), named tuples and lists collated field by field; a tuple sample becomes
    a list."""
    if len(batch) == 0:
        raise ValueError("default_collate: got an empty batch")
    elem = batch[0]
    if isinstance(elem, Array):
        return _move(gp.stack(list(batch), axis=0), device)
    if _torch_instance(elem, "Tensor"):
        torch = sys.modules["torch"]
        return _from_torch(torch.stack([t.detach() for t in batch], 0), device, "default_collate")
    if isinstance(elem, np.ndarray):
        if elem.dtype.kind not in "biufc":
            raise TypeError(_COLLATE_ERR.format(f"a numpy array of dtype {elem.dtype}"))
        return _to_array(np.stack([np.asarray(b) for b in batch]), device)
    if isinstance(elem, (np.bool_, np.number)):
        return _to_array(np.asarray(list(batch)), device)
    if isinstance(elem, float):
        return gp.asarray(np.asarray(list(batch), dtype=np.float64), device=device)
    if isinstance(elem, int):
        return _collate_python_ints(batch, device)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, cabc.Mapping):
        return _rebuild_mapping(elem, {k: default_collate([d[k] for d in batch], device)
                                       for k in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s, device) for s in zip(*batch)))
    if isinstance(elem, cabc.Sequence):
        if any(len(b) != len(elem) for b in batch):
            raise RuntimeError("default_collate: each element in list of batch should be of "
                               "equal size")
        return _rebuild_sequence(elem, [default_collate(s, device) for s in zip(*batch)])
    raise TypeError(_COLLATE_ERR.format(type(elem).__name__))


def _move(x: Array, device) -> Array:
    """``x`` on ``device`` (as it is where device is None or already its device)."""
    if device is None or x.device is _core.resolve_device(device, "DataLoader"):
        return x
    return x.to_device(device)


# ---- workers -----------------------------------------------------------------------------------
class WorkerInfo:
    """What ``get_worker_info()`` returns in a DataLoader worker: ``id``, ``num_workers``,
    ``seed`` (the loader's base seed + id, as torch's) and ``dataset``; read-only."""

    _frozen = False

    def __init__(self, **kwargs) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self._keys = tuple(kwargs)
        self._frozen = True

    def __setattr__(self, key: str, val) -> None:
        if self._frozen:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(key, val)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{k}={getattr(self, k)}"
                                                     for k in self._keys) + ")"


_worker_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """This DataLoader worker's WorkerInfo, or None outside a worker (the main thread)."""
    return getattr(_worker_local, "info", None)


_STOP = object()      # a worker thread's last task
_NEXT = object()      # the task key of an iterable dataset's next batch
_END = object()       # an iterable dataset's worker ran out (or the sampler did)


class _Worker:
    """One worker thread: runs the tasks put to it, in order, sending each result (or the
    exception it raised) to the task's result queue."""

    def __init__(self, loader: "DataLoader", wid: int, seed: int) -> None:
        self.tasks: queue.SimpleQueue = queue.SimpleQueue()
        info = WorkerInfo(id=wid, num_workers=loader.num_workers, seed=seed,
                          dataset=loader.dataset)
        # the thread holds the loader weakly: a dropped loader's persistent workers can stop
        self.thread = threading.Thread(target=_worker_loop,
                                       args=(weakref.ref(loader), self.tasks, info,
                                             loader.worker_init_fn),
                                       name=f"grilly-DataLoader-worker-{wid}", daemon=True)
        self.thread.start()


def _worker_loop(loader_ref, tasks: queue.SimpleQueue, info: WorkerInfo, init) -> None:
    _worker_local.info = info
    failed = None
    if init is not None:
        try:
            init(info.id)
        except BaseException as e:    # reported with the first batch asked of this worker
            failed = e
    it, it_epoch = None, None
    while True:
        task = tasks.get()
        if task is _STOP:
            return
        results, epoch, idx, key = task
        loader = loader_ref()
        if loader is None:
            return
        try:
            if epoch != loader._epoch:   # an abandoned epoch's batch: nobody waits for it
                continue
            if failed is not None:
                raise failed
            if key is not _NEXT:
                out = loader._fetch(key)
            else:                        # an iterable dataset: this worker's next batch
                if it_epoch != epoch:
                    it, it_epoch = iter(loader.dataset), epoch
                out = loader._next_batch(it)
            results.put((idx, info.id, True, out))
        except BaseException as e:
            results.put((idx, info.id, False, e))
        finally:
            # nothing of the loader or a batch is held while this thread waits for a task
            task = results = loader = out = None


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
        if multiprocessing_context is not None and num_workers == 0:
            raise ValueError("DataLoader: multiprocessing_context can only be used with "
                             "multi-process loading (num_workers > 0), but got num_workers=0")
        self.dataset, self.num_workers = dataset, num_workers
        self.prefetch_factor = 2 if num_workers and prefetch_factor is None else prefetch_factor
        self.worker_init_fn, self.generator, self.timeout = worker_init_fn, generator, timeout
        # pin_memory: batches are already on the loader's device (nothing to pin on the host)
        self.pin_memory, self.persistent_workers, self.in_order = pin_memory, persistent_workers, in_order
        self.multiprocessing_context = multiprocessing_context
        self._epoch = 0            # the current iteration's number (workers drop older tasks)
        self._workers: list | None = None    # persistent workers, once started
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
    def _gather(self, idx: list[int]) -> list:
        out = []
        for t in self.dataset.tensors:
            if isinstance(t, Array):
                b = _move(gp.take(t, gp.asarray(idx, dtype=gp.int64, device=t.device), axis=0),
                          self.device)
            elif _torch_instance(t, "Tensor"):
                b = _from_torch(t.detach()[idx], self.device, "DataLoader")
            else:
                b = _to_array(np.asarray(t)[idx], self.device)
            out.append(b)
        return out    # a list, as torch's collate makes of TensorDataset's tuples

    def _fetch(self, idx):
        if self.batch_size is None and self.batch_sampler is None:   # no auto-batching
            return self._collate(self.dataset[idx])
        if (self._auto_collate and type(self.dataset) is TensorDataset):
            return self._gather(list(idx))
        return self._collate(_getitems(self.dataset, list(idx)))

    def _collate(self, samples):
        if self.collate_fn is default_collate or self.collate_fn is default_convert:
            return self.collate_fn(samples, self.device)
        return self.collate_fn(samples)

    def _next_batch(self, it: Iterator):
        """The next batch (or sample, without auto-batching) of an iterable dataset's
        iterator, or _END."""
        if self.batch_size is None:
            s = next(it, _END)
            return s if s is _END else self._collate(s)
        samples = list(itertools.islice(it, self.batch_size))
        if not samples or (self.drop_last and len(samples) < self.batch_size):
            return _END
        return self._collate(samples)

    def _iter_iterable(self) -> Iterator:
        it = iter(self.dataset)
        while (batch := self._next_batch(it)) is not _END:
            yield batch

    def __iter__(self) -> Iterator:
        # one draw of the generator per epoch, before the sampler's, as torch's loader draws
        # its workers' base seed: the order does not depend on num_workers
        base_seed = _seed(self.generator)
        if self.num_workers == 0:
            if self._iterable:
                return self._iter_iterable()
            keys = self.batch_sampler if self.batch_sampler is not None else self.sampler
            return (self._fetch(k) for k in keys)
        return self._iter_workers(base_seed)

    def _iter_workers(self, base_seed: int) -> Iterator:
        """Batches made by ``num_workers`` threads as torch's worker processes make them: the
        i-th batch of a map-style dataset by worker i % num_workers (at most num_workers x
        prefetch_factor ahead), an iterable dataset iterated by every worker (each batching its
        own samples: shard it with get_worker_info), the batches yielded round-robin over the
        workers (or as they come, without in_order)."""
        self._epoch += 1
        epoch, nw = self._epoch, self.num_workers
        workers = self._workers
        if workers is None:
            workers = [_Worker(self, w, base_seed + w) for w in range(nw)]
            if self.persistent_workers:
                self._workers = workers
        keys = None if self._iterable else iter(
            self.batch_sampler if self.batch_sampler is not None else self.sampler)
        results: queue.SimpleQueue = queue.SimpleQueue()
        active = [True] * nw
        turn = itertools.cycle(range(nw))
        sent = 0
        done = False

        def put() -> None:
            nonlocal sent, done
            if done:
                return
            for _ in range(nw):
                w = next(turn)
                if active[w]:
                    break
            else:
                done = True
                return
            key = _NEXT
            if keys is not None:
                key = next(keys, _END)
                if key is _END:
                    done = True
                    return
            workers[w].tasks.put((results, epoch, sent, key))
            sent += 1

        def get():
            try:
                return results.get(timeout=self.timeout if self.timeout > 0 else None)
            except queue.Empty:
                raise RuntimeError(f"DataLoader timed out after {self.timeout} seconds") from None

        try:
            for _ in range(nw * max(self.prefetch_factor, 1)):
                put()
            arrived: dict = {}
            got = 0
            while got < sent:
                if self.in_order:
                    while got not in arrived:
                        idx, *rest = get()
                        arrived[idx] = rest
                    wid, ok, out = arrived.pop(got)
                else:
                    _, wid, ok, out = get()
                got += 1
                if out is _END:
                    active[wid] = False
                    put()
                    continue
                put()
                if not ok:
                    raise out
                yield out
        finally:
            if self._workers is None:
                for w in workers:
                    w.tasks.put(_STOP)

    def __del__(self) -> None:
        for w in self.__dict__.get("_workers") or ():
            w.tasks.put(_STOP)
