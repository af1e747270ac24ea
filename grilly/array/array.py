"""The grilly Array: a backend buffer plus dtype and device. Operators are attached by
elementwise.py (table-driven) and indexing by indexing.py; autograd state lives in slots here."""
from __future__ import annotations

from . import dtypes as _dt
from .dtypes import DType


class Array:
    """An n-dimensional array on a grilly device (the Array API array object)."""

    __slots__ = ("_buf", "_dtype", "_device", "requires_grad", "grad", "_node", "__weakref__")
    __array_priority__ = 100  # numpy defers binary operators to us

    def __init__(self, *a, **k):
        raise TypeError("grilly.Array is not created directly; use grilly.asarray or a creation function")

    @classmethod
    def _new(cls, buf, dtype: DType, device) -> "Array":
        self = object.__new__(cls)
        self._buf = buf
        self._dtype = dtype
        self._device = device
        self.requires_grad = False
        self.grad = None
        self._node = None
        return self

    # ---- attributes -------------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def shape(self) -> tuple:
        return tuple(self._buf.shape)

    @property
    def ndim(self) -> int:
        return len(self._buf.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self._buf.shape:
            n *= s
        return n

    @property
    def T(self) -> "Array":
        if self.ndim != 2:
            raise ValueError(f"Array.T: needs a 2-D array, got {self.ndim}-D; use .mT or permute_dims")
        from .manipulation import permute_dims

        return permute_dims(self, (1, 0))

    @property
    def mT(self) -> "Array":
        from .linear_algebra import matrix_transpose

        return matrix_transpose(self)

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d array")
        return self._buf.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._buf.shape[0]):
            yield self[i]

    __hash__ = None

    def __array_namespace__(self, *, api_version: str | None = None):
        if api_version is not None and api_version not in ("2021.12", "2022.12", "2023.12",
                                                           "2024.12", "2025.12"):
            raise ValueError(f"__array_namespace__: unsupported api_version {api_version!r}")
        import grilly

        return grilly

    # ---- host conversion (sync points) --------------------------------------------------
    def _host(self):
        """This array's data as a numpy array on the host (a sync point)."""
        return self._device.kernels["to_host"](self._buf)

    def __array__(self, dtype=None, copy=None):
        h = self._host()
        if dtype is not None:
            h = h.astype(dtype, copy=False)
        if copy:
            h = h.copy()
        return h

    def _scalar(self, op: str):
        if self.size != 1:
            raise TypeError(f"{op}: only a 0-d (or one-element) array converts to a Python scalar,"
                            f" got shape {self.shape}")
        return self._host().reshape(()).item()

    def __bool__(self) -> bool:
        return bool(self._scalar("bool()"))

    def __int__(self) -> int:
        if _dt.is_complex(self._dtype):
            raise TypeError("int(): cannot convert a complex array to int")
        v = self._scalar("int()")
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise (ValueError if v != v else OverflowError)(f"int(): cannot convert {v} to int")
        return int(v)

    def __float__(self) -> float:
        if _dt.is_complex(self._dtype):
            raise TypeError("float(): cannot convert a complex array to float")
        return float(self._scalar("float()"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex()"))

    def __index__(self) -> int:
        if not _dt.is_int(self._dtype):
            raise TypeError(f"__index__: needs an integer array, got {self._dtype.name}")
        return int(self._scalar("__index__"))

    def tolist(self):
        """The data as nested Python lists (a sync point)."""
        return self._host().tolist()

    def item(self):
        """The value of a one-element array as a Python scalar."""
        return self._scalar("item()")

    def __repr__(self) -> str:
        h = self._host()
        body = repr(h)
        body = body[body.index("(") + 1: body.rindex(")")] if body.startswith("array(") else body
        body = body.split(", dtype=")[0]
        dev = "" if self._device.name == "cpu" else f", device={self._device.name!r}"
        return f"Array({body}, dtype={self._dtype.name}{dev})"

    __str__ = __repr__

    # ---- devices ------------------------------------------------------------------------
    def to_device(self, device, /, *, stream=None) -> "Array":
        """A copy of this array on ``device`` (the same array when it is already there)."""
        from ..backends import registry

        if stream is not None:
            raise ValueError("to_device: grilly has no streams; pass stream=None")
        dev = registry.device(device)
        if dev is self._device:
            return self
        h = self._host()
        return Array._new(dev.kernels["from_host"](h, self._dtype), self._dtype, dev)

    # ---- DLPack -------------------------------------------------------------------------
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from .interop import dlpack_export

        return dlpack_export(self, stream=stream, max_version=max_version,
                             dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from .interop import dlpack_device

        return dlpack_device(self)

    # ---- indexing (indexing.py) ---------------------------------------------------------
    def __getitem__(self, key):
        from .indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key, value):
        from .indexing import setitem

        setitem(self, key, value)
