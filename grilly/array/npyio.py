"""NumPy's file formats: text files (``loadtxt``, ``savetxt``, ``genfromtxt``), raw binary
(``fromfile``, ``Array.tofile``, ``Array.tobytes``), one array in a .npy file
(``gp.save(file, x)``, ``gp.load(file)``, which grilly/torch_functions.py routes here by the
arguments' types and the file's first bytes) and several in a .npz archive (``savez``,
``savez_compressed``). The arrays are read to the host and written with NumPy's own writer, so
NumPy reads the files and writes what ``load`` reads; ``load`` gives Arrays on the requested
device (no pickled objects: allow_pickle=False). The readers parse on the host, then upload once.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

from . import dispatch
from .array import Array
from .dtypes import DType

__all__ = ["fromfile", "genfromtxt", "loadtxt", "savetxt", "savez", "savez_compressed"]

_ns = dispatch.ns
_NPY = b"\x93NUMPY"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")   # a zip archive's first entry, or an empty archive


class NpzFile(Mapping):
    """The arrays of a .npz archive by name (NumPy's NpzFile, read whole when loaded): ``files``
    lists the names; unnamed arrays are ``arr_0``, ``arr_1``, ..."""

    def __init__(self, arrays: dict) -> None:
        self._arrays = arrays

    @property
    def files(self) -> list:
        return list(self._arrays)

    def __getitem__(self, key: str) -> Array:
        return self._arrays[key]

    def __iter__(self):
        return iter(self._arrays)

    def __len__(self) -> int:
        return len(self._arrays)

    def close(self) -> None:
        """Nothing to close (the archive was read and closed by ``load``)."""

    def __enter__(self) -> "NpzFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"NpzFile(files={self.files})"


def _host(value, op: str):
    """``value`` as a NumPy array (an Array read from its device)."""
    h = np.asarray(value)
    if h.dtype.kind not in "biufc":
        raise TypeError(f"{op}: expected arrays of numbers, got {type(value).__name__} of dtype "
                        f"{h.dtype}")
    return h


def numpy_format(file) -> str | None:
    """'npy' or 'npz' where ``file`` (a path or a seekable binary file) starts as NumPy's
    formats do, else None (a missing file too: the caller's reader reports it)."""
    if isinstance(file, (str, bytes, os.PathLike)):
        try:
            with open(file, "rb") as f:
                head = f.read(6)
        except OSError:
            return None
    elif hasattr(file, "read") and hasattr(file, "seek"):
        pos = file.tell()
        head = file.read(6)
        file.seek(pos)
    else:
        return None
    return "npy" if head == _NPY else "npz" if head[:4] in _ZIP else None


def save(file, arr) -> None:
    """Write one array to a .npy file (numpy.save; '.npy' is appended to a name without it)."""
    np.save(file, _host(arr, "save"), allow_pickle=False)


def load(file, device=None):
    """An Array from a .npy file, or an NpzFile of Arrays from a .npz archive, on ``device``."""
    data = np.load(file, allow_pickle=False)
    if isinstance(data, np.ndarray):
        return _ns.asarray(data, device=device)
    with data:
        return NpzFile({k: _ns.asarray(data[k], device=device) for k in data.files})


def savez(file, *args, **kwds) -> None:
    """Write arrays to an uncompressed .npz archive (numpy.savez: positional ones as arr_0, ...,
    keyword ones under their names; '.npz' is appended to a name without it)."""
    np.savez(file, *(_host(a, "savez") for a in args),
             **{k: _host(v, "savez") for k, v in kwds.items()})


def savez_compressed(file, *args, **kwds) -> None:
    """savez with the archive's entries deflated (numpy.savez_compressed)."""
    np.savez_compressed(file, *(_host(a, "savez_compressed") for a in args),
                        **{k: _host(v, "savez_compressed") for k, v in kwds.items()})


def _np_dtype(dtype):
    """A dtype spec (a grilly dtype, a NumPy one, a name, a Python type) for NumPy's readers."""
    if isinstance(dtype, DType):
        return dtype.np
    return dtype


def _upload(h: np.ndarray, op: str, device) -> Array:
    if h.dtype.kind not in "biufc":
        raise TypeError(f"{op}: only numeric dtypes are supported (structured and string "
                        f"arrays are not), got {h.dtype}")
    return _ns.asarray(h, device=device)


def loadtxt(fname, dtype=float, *args, device=None, **kwargs) -> Array:
    """numpy.loadtxt read on the host (all of its arguments), then one upload to ``device``."""
    return _upload(np.loadtxt(fname, _np_dtype(dtype), *args, **kwargs), "loadtxt", device)


def genfromtxt(fname, dtype=float, *args, device=None, **kwargs) -> Array:
    """numpy.genfromtxt read on the host (missing values as filling_values: NaN for floats),
    then one upload; masked results (usemask=True) are not supported."""
    if kwargs.get("usemask"):
        raise NotImplementedError("genfromtxt: usemask=True (masked arrays) is not supported")
    return _upload(np.genfromtxt(fname, _np_dtype(dtype), *args, **kwargs), "genfromtxt",
                   device)


def savetxt(fname, X, *args, **kwargs) -> None:
    """numpy.savetxt of the array's values (read to the host once)."""
    np.savetxt(fname, _host(X, "savetxt"), *args, **kwargs)


def fromfile(file, dtype=float, count: int = -1, sep: str = "", offset: int = 0, *,
             device=None) -> Array:
    """numpy.fromfile (raw binary, or text with ``sep``) read on the host, then one upload."""
    return _upload(np.fromfile(file, _np_dtype(dtype), count=count, sep=sep, offset=offset),
                   "fromfile", device)


def _tobytes(self: Array, order: str = "C") -> bytes:
    """The raw bytes of the values (read to the host), as ndarray.tobytes."""
    return np.asarray(self).tobytes(order=order)


def _tofile(self: Array, fid, sep: str = "", format: str = "%s") -> None:  # noqa: A002
    """Write the values to a file as raw bytes or text (read to the host), as ndarray.tofile."""
    np.asarray(self).tofile(fid, sep=sep, format=format)


for _name, _fn in (("tobytes", _tobytes), ("tofile", _tofile)):
    _fn.__name__ = _fn.__qualname__ = _name
    setattr(Array, _name, _fn)
