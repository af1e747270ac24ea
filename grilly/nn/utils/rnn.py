"""``torch.nn.utils.rnn``: variable-length sequences padded into one array or packed time step
by time step (``PackedSequence``), which grilly's recurrent layers take as input.

Lengths are host data (torch requires them on the CPU): every index a pack or an unpack needs
is computed on the host from them, and the data moves in one gather on its device, so packing
and unpacking differentiate (through ``take``) and trace under grilly.jit for fixed lengths.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from ...array import api as gp
from ...array.array import Array

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence",
           "pad_packed_sequence", "pad_sequence", "unpack_sequence", "unpad_sequence"]


class PackedSequence(NamedTuple):
    """Sequences of different lengths packed time step by time step: ``data`` holds, for each
    step t, the rows of the ``batch_sizes[t]`` sequences still running (longest first)."""

    data: Array
    batch_sizes: Array
    sorted_indices: Array | None = None
    unsorted_indices: Array | None = None

    def to(self, *args, **kwargs) -> "PackedSequence":
        """The same packing with ``data`` moved and/or cast as ``Array.to`` does (a device, a
        dtype or both); the index arrays follow the device only, as torch's."""
        data = self.data.to(*args, **kwargs)
        if data.device == self.data.device:
            idx = (self.sorted_indices, self.unsorted_indices)
        else:
            idx = tuple(None if a is None else a.to_device(data.device)
                        for a in (self.sorted_indices, self.unsorted_indices))
        return PackedSequence(data, self.batch_sizes, *idx)

    def cpu(self) -> "PackedSequence":
        """The packing on the cpu device."""
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        """``data`` as float64."""
        return self.to(gp.float64)

    def float(self) -> "PackedSequence":
        """``data`` as float32."""
        return self.to(gp.float32)

    def half(self) -> "PackedSequence":
        """``data`` as float16."""
        return self.to(gp.float16)

    @property
    def is_cuda(self) -> bool:
        return False

    def _host(self):
        """(batch sizes, sorted indices or None) as NumPy int64 arrays."""
        bs = np.asarray(self.batch_sizes.__array__() if isinstance(self.batch_sizes, Array)
                        else self.batch_sizes, dtype=np.int64)
        si = None if self.sorted_indices is None else np.asarray(
            self.sorted_indices.__array__(), dtype=np.int64)
        return bs, si


def invert_permutation(permutation: Array | None) -> Array | None:
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.__array__(), dtype=np.int64)
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size)
    return gp.asarray(inv, device=permutation.device)


def _lengths(lengths, batch: int, op: str) -> np.ndarray:
    """``lengths`` (a list, a NumPy array or a grilly Array: read on the host) as int64."""
    lens = np.asarray(lengths.__array__() if isinstance(lengths, Array) else lengths)
    if lens.ndim != 1 or lens.dtype.kind not in "iu":
        raise ValueError(f"{op}: lengths must be a 1-D sequence of ints, got {lens!r:.80}")
    if lens.size != batch:
        raise ValueError(f"{op}: expected {batch} lengths (the batch size), got {lens.size}")
    if lens.size and lens.min() <= 0:
        raise RuntimeError(f"{op}: length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    return lens.astype(np.int64)


def _fill_value(value, dtype):
    """``padding_value`` in the data's dtype, as torch casts it: the default 0.0 pads integer
    token ids with 0 and bool masks with False (a float fill would be refused)."""
    if gp.isdtype(dtype, "bool"):
        return bool(value)
    if gp.isdtype(dtype, "integral"):
        return int(value)   # truncated toward zero, as torch's cast
    return value


def _check_seq(x, op: str, what: str) -> None:
    if not isinstance(x, Array):
        raise TypeError(f"{op}: {what} must be a grilly Array, got {type(x).__name__}")


def pack_padded_sequence(input: Array, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """A padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of ``lengths`` as a
    PackedSequence; with enforce_sorted=False the lengths may come in any order."""
    op = "pack_padded_sequence"
    _check_seq(input, op, "input")
    if input.ndim < 2:
        raise ValueError(f"{op}: input must have a time and a batch axis, got shape {input.shape}")
    t_ax, b_ax = (1, 0) if batch_first else (0, 1)
    steps, batch = input.shape[t_ax], input.shape[b_ax]
    lens = _lengths(lengths, batch, op)
    if lens.max() > steps:
        raise ValueError(f"{op}: a length ({int(lens.max())}) exceeds the input's {steps} time "
                         "steps")
    if enforce_sorted:
        if (np.diff(lens) > 0).any():
            raise RuntimeError(f"{op}: `lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True; pass enforce_sorted=False to pack "
                               "unsorted sequences")
        order = np.arange(batch)
        sorted_idx = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_idx = gp.asarray(order, device=input.device)
    slens = lens[order]
    batch_sizes = (slens[None, :] > np.arange(slens[0])[:, None]).sum(axis=1)
    data = _pack_rows(input, batch_sizes, order, batch_first)
    return PackedSequence(data, gp.asarray(batch_sizes, device="cpu"), sorted_idx,
                          invert_permutation(sorted_idx))


def _pack_rows(input: Array, batch_sizes: np.ndarray, order: np.ndarray,
               batch_first: bool) -> Array:
    """The packed rows of a padded batch: each step's running sequences (the first
    ``batch_sizes[t]`` of ``order``), gathered from the input flattened over its first two axes."""
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    rows = np.concatenate([order[:n] for n in batch_sizes])
    steps_of = np.repeat(np.arange(batch_sizes.size), batch_sizes)
    flat = rows * steps + steps_of if batch_first else steps_of * batch + rows
    return gp.take(gp.reshape(input, (steps * batch,) + tuple(input.shape[2:])),
                   gp.asarray(flat, device=input.device), axis=0)


def pack_like(padded: Array, like: PackedSequence) -> PackedSequence:
    """A time-major padded batch (original order) packed as ``like`` is (its batch sizes and
    order): a recurrent layer's output for a packed input."""
    bs, si = like._host()
    order = np.arange(int(bs[0])) if si is None else si
    return PackedSequence(_pack_rows(padded, bs, order, False), like.batch_sizes,
                          like.sorted_indices, like.unsorted_indices)


def step_masks(sequence: PackedSequence) -> tuple[Array, Array]:
    """(the padded time-major batch in the original order, a (T, B, 1) bool mask of the steps
    each sequence runs): what a recurrent layer runs a packed input as."""
    padded, lengths = pad_packed_sequence(sequence)
    lens = np.asarray(lengths.__array__())
    mask = np.arange(padded.shape[0])[:, None, None] < lens[None, :, None]
    return padded, gp.asarray(mask, device=padded.device)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """A PackedSequence back to (padded batch in the original order, lengths as int64)."""
    op = "pad_packed_sequence"
    if not isinstance(sequence, PackedSequence):
        raise TypeError(f"{op}: expected a PackedSequence, got {type(sequence).__name__}")
    data = sequence.data
    bs, si = sequence._host()
    steps, batch = int(bs.size), int(bs[0])
    if total_length is not None:
        if total_length < steps:
            raise ValueError(f"{op}: expected total_length to be at least the length of the "
                             f"longest sequence ({steps}), got {total_length}")
        steps_out = total_length
    else:
        steps_out = steps
    order = np.arange(batch) if si is None else si
    slens = (bs[None, :] > np.arange(batch)[:, None]).sum(axis=1)   # per sorted position
    n = int(bs.sum())
    # packed row of (t, sorted position s): the rows of steps before t, plus s
    start = np.concatenate([[0], np.cumsum(bs)[:-1]])
    idx = np.full((steps_out, batch), n, dtype=np.int64)   # n: the padding row
    for t in range(steps):
        idx[t, order[:bs[t]]] = start[t] + np.arange(bs[t])
    if batch_first:
        idx = idx.T
    pad = gp.full((1,) + tuple(data.shape[1:]), _fill_value(padding_value, data.dtype),
                  dtype=data.dtype,
                  device=data.device)
    out = gp.take(gp.concat([data, pad], axis=0), gp.asarray(idx.reshape(-1), device=data.device),
                  axis=0)
    out = gp.reshape(out, idx.shape + tuple(data.shape[1:]))
    lengths = np.empty(batch, dtype=np.int64)
    lengths[order] = slens
    return out, gp.asarray(lengths, device="cpu")


def pad_sequence(sequences: Sequence[Array], batch_first: bool = False,
                 padding_value: float = 0.0, padding_side: str = "right") -> Array:
    """Sequences (L_i, *) padded with ``padding_value`` to the longest into (T, B, *) (or
    (B, T, *)); ``padding_side`` 'left' pads before each sequence."""
    op = "pad_sequence"
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError(f"{op}: received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise ValueError(f"{op}: padding_side must be 'left' or 'right', got {padding_side!r}")
    for s in seqs:
        _check_seq(s, op, "each sequence")
        if s.ndim < 1 or tuple(s.shape[1:]) != tuple(seqs[0].shape[1:]):
            raise RuntimeError(f"{op}: sequences must have the same trailing dimensions, got "
                               f"{[tuple(x.shape) for x in seqs]}")
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    steps, batch, n = int(lens.max()), len(seqs), int(lens.sum())
    start = np.concatenate([[0], np.cumsum(lens)[:-1]])
    idx = np.full((batch, steps), n, dtype=np.int64)
    for b in range(batch):
        off = steps - lens[b] if padding_side == "left" else 0
        idx[b, off:off + lens[b]] = start[b] + np.arange(lens[b])
    if not batch_first:
        idx = idx.T
    first = seqs[0]
    pad = gp.full((1,) + tuple(first.shape[1:]), _fill_value(padding_value, first.dtype),
                  dtype=first.dtype,
                  device=first.device)
    out = gp.take(gp.concat(seqs + [pad], axis=0), gp.asarray(idx.reshape(-1),
                                                               device=first.device), axis=0)
    return gp.reshape(out, idx.shape + tuple(first.shape[1:]))


def pack_sequence(sequences: Sequence[Array], enforce_sorted: bool = True) -> PackedSequence:
    """A list of sequences (L_i, *) as a PackedSequence."""
    seqs = list(sequences)
    return pack_padded_sequence(pad_sequence(seqs), [s.shape[0] for s in seqs],
                                enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Array, lengths, batch_first: bool = False) -> list[Array]:
    """A padded batch back to its list of sequences (views of their valid steps)."""
    x = padded_sequences if batch_first else gp.permute_dims(
        padded_sequences, (1, 0) + tuple(range(2, padded_sequences.ndim)))
    lens = _lengths(lengths, x.shape[0], "unpad_sequence")
    return [x[b, :int(n)] for b, n in enumerate(lens)]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Array]:
    """A PackedSequence back to its list of sequences, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
