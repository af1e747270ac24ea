"""An example grilly backend: one device, ``numpy``, whose buffers are numpy arrays and whose
kernels are numpy calls. docs/backends.md (in grilly) is the reference for every kernel's call.

Install it (``pip install ./examples/plugins/numpy_backend``) and grilly finds it through the
``grilly.backends`` entry point; ``grilly conformance numpy`` runs the kit on it."""
from __future__ import annotations

import numpy as np

from grilly.backends import Backend, Device, hookimpl
from grilly.backends.contract import BINARY_OPS, UNARY_OPS

# Array API op name -> numpy function name, where the two differ
_NP_NAME = {"acos": "arccos", "acosh": "arccosh", "asin": "arcsin", "asinh": "arcsinh",
            "atan": "arctan", "atanh": "arctanh", "atan2": "arctan2", "bitwise_invert": "invert",
            "pow": "power", "bitwise_left_shift": "left_shift", "bitwise_right_shift": "right_shift"}


def _elementwise(op: str):
    fn = getattr(np, _NP_NAME.get(op, op))

    def kernel(out_shape, out_dtype, *bufs):
        # inputs arrive promoted to one dtype; errstate: 1/0 and friends give inf/nan silently
        with np.errstate(all="ignore"):
            return np.array(fn(*bufs), dtype=out_dtype.np)   # a new buffer, never a view
    return kernel


def _astype(buf, dtype):
    if buf.dtype.kind == "c" and dtype.kind == "b":
        return buf != 0   # either part nonzero, as numpy
    return (buf.real if buf.dtype.kind == "c" and dtype.kind != "c" else buf).astype(dtype.np)


def _reshape(buf, shape, copy=None):
    if copy:
        return buf.reshape(shape).copy()
    if copy is False:   # must be a view (setitem writes through it)
        v = buf.view()
        try:
            v.shape = shape
        except AttributeError:
            raise ValueError("reshape: copy=False but the array's layout needs a copy") from None
        return v
    return buf.reshape(shape)


def _matmul(out_shape, out_dtype, a, b):
    if a.dtype == np.float16:   # numpy's float16 matmul accumulates in float16: use float32
        a, b = a.astype(np.float32), b.astype(np.float32)
    return np.matmul(a, b).astype(out_dtype.np)


def _normalize_indices(idx, n):
    i = idx.astype(np.int64)
    bad = ((i < -n) | (i >= n)).ravel()
    if bad.any():
        return i, int(idx.ravel()[np.argmax(bad)])
    return np.where(i < 0, i + n, i), None


def _scatter(buf, indices, values):
    buf[tuple(indices)] = np.array(values)   # copied first: values may alias buf


def _argsort(buf, axis, descending, stable):
    if not descending:
        return np.argsort(buf, axis=axis, kind="stable")
    # stable descending: sort the reversed array, then map indices back (ties keep their order)
    r = np.flip(np.argsort(np.flip(buf, axis), axis=axis, kind="stable"), axis)
    return buf.shape[axis] - 1 - r


def _sort(buf, axis, descending, stable):
    s = np.sort(buf, axis=axis, kind="stable")
    return np.flip(s, axis).copy() if descending else s


def _unique(buf):
    v, i, inv, c = np.unique(buf.ravel(), return_index=True, return_inverse=True, return_counts=True,
                             equal_nan=False)
    return v, i.astype(np.int64), inv.astype(np.int64).ravel(), c.astype(np.int64)


def _real_of(d):
    return np.float32 if d in (np.float32, np.complex64) else np.float64


def _complex_of(d):
    return np.complex64 if d in (np.float32, np.complex64) else np.complex128


_la = np.linalg

KERNELS = {
    # storage and creation
    "from_host": lambda h, dtype: np.array(h, dtype=dtype.np),
    "to_host": lambda buf: buf,
    "empty": lambda shape, dtype: np.empty(shape, dtype.np),
    "full": lambda shape, value, dtype: np.full(shape, value, dtype.np),
    "copy": lambda buf: buf.copy(),
    "astype": _astype,
    "assign": lambda dst, src: np.copyto(dst, src, casting="unsafe"),
    "slice": lambda buf, key: buf[key + (Ellipsis,)],   # Ellipsis: an all-int key stays a view
    "reshape": _reshape,
    "permute": lambda buf, axes: buf.transpose(axes),
    "broadcast_to": np.broadcast_to,
    "host_view": lambda buf: buf,
    "arange": lambda start, step, n, dtype: (start + step * np.arange(n, dtype=np.float64 if dtype.kind == "f"
                                                                       else None)).astype(dtype.np),
    "linspace": lambda start, stop, num, endpoint, dtype: np.linspace(start, stop, num, endpoint=endpoint)
    .astype(dtype.np),
    "eye": lambda n_rows, n_cols, k, dtype: np.eye(n_rows, n_cols, k, dtype=dtype.np),
    # elementwise: one kernel per op name, from the contract's list
    **{op: _elementwise(op) for op in UNARY_OPS + BINARY_OPS},
    "where": lambda out_shape, out_dtype, c, a, b: np.where(c, a, b).astype(out_dtype.np),
    # reductions and scans
    **{op: (lambda f: lambda buf, axes, keepdims, out_dtype: np.asarray(
        f(buf, axis=axes, keepdims=keepdims, dtype=out_dtype.np)))(f) for op, f in
       (("sum", np.sum), ("prod", np.prod))},
    **{op: (lambda f: lambda buf, axes, keepdims, out_dtype: np.asarray(
        f(buf, axis=axes, keepdims=keepdims)).astype(out_dtype.np))(f) for op, f in
       (("max", np.max), ("min", np.min), ("all", np.all), ("any", np.any))},
    "count_nonzero": lambda buf, axes, keepdims, out_dtype: np.asarray(
        np.sum(buf != 0, axis=axes, keepdims=keepdims, dtype=np.int64)),
    "argmax": lambda buf, axis, keepdims: np.asarray(np.argmax(buf, axis=axis, keepdims=keepdims), np.int64),
    "argmin": lambda buf, axis, keepdims: np.asarray(np.argmin(buf, axis=axis, keepdims=keepdims), np.int64),
    "cumulative_sum": lambda buf, axis, include_initial, out_dtype: np.cumulative_sum(
        buf, axis=axis, dtype=out_dtype.np, include_initial=include_initial),
    "cumulative_prod": lambda buf, axis, include_initial, out_dtype: np.cumulative_prod(
        buf, axis=axis, dtype=out_dtype.np, include_initial=include_initial),
    # indexing
    "gather": lambda buf, indices: np.array(buf[tuple(indices)]),
    "scatter": _scatter,
    "normalize_indices": _normalize_indices,
    "mask_indices": lambda mask: tuple(i.astype(np.int64) for i in np.nonzero(mask)),
    "nonzero": lambda buf: tuple(i.astype(np.int64) for i in np.nonzero(buf)),
    "repeat_indices": lambda c: None if (c < 0).any() else np.repeat(np.arange(len(c), dtype=np.int64), c),
    # sorting and sets
    "sort": _sort,
    "argsort": _argsort,
    "searchsorted": lambda x1, x2, side, sorter: np.searchsorted(x1, x2, side=side, sorter=sorter)
    .astype(np.int64),
    "unique": _unique,
    "isin": lambda x1, x2, invert: np.isin(x1, x2, invert=invert),
    # linear algebra
    "matmul": _matmul,
    "cross": lambda out_shape, out_dtype, a, b: np.cross(a, b).astype(out_dtype.np),
    "diagonal": lambda buf, offset: np.diagonal(buf, offset, -2, -1),
    "cholesky": _la.cholesky, "inv": _la.inv, "det": _la.det, "eigvals": _la.eigvals,
    "eigvalsh": _la.eigvalsh,
    "slogdet": lambda buf: tuple(_la.slogdet(buf)),
    "solve": lambda out_shape, out_dtype, a, b: _la.solve(a, b).astype(out_dtype.np),
    "eig": lambda buf: tuple(_la.eig(buf)),
    "eigh": lambda buf: tuple(_la.eigh(buf)),
    "svd": lambda buf, full_matrices: tuple(_la.svd(buf, full_matrices=full_matrices)),
    "svdvals": lambda buf: _la.svd(buf, compute_uv=False),
    "qr": lambda buf, mode: tuple(_la.qr(buf, mode=mode)),
    "pinv": lambda buf, rtol: _la.pinv(buf, rtol=rtol),
    "matrix_rank": lambda buf, rtol: np.asarray(_la.matrix_rank(buf, rtol=rtol), np.int64),
    # fft (numpy keeps single precision since 2.0; the casts make it explicit)
    "fft_c2c": lambda buf, s, axes, norm, inverse: (np.fft.ifftn if inverse else np.fft.fftn)(
        buf, s=s, axes=axes, norm=norm).astype(buf.dtype),
    "fft_r2c": lambda buf, s, axes, norm: np.fft.rfftn(buf, s=s, axes=axes, norm=norm)
    .astype(_complex_of(buf.dtype)),
    "fft_c2r": lambda buf, s, axes, norm: np.fft.irfftn(buf, s=s, axes=axes, norm=norm)
    .astype(_real_of(buf.dtype)),
    "fft_roll": lambda buf, shifts, axes: np.roll(buf, shifts, axes),
}


class NumpyBackend(Backend):
    """Buffers are numpy arrays; every kernel is a numpy call."""

    name = "numpy"
    single_device = True   # its one device is called "numpy", not "numpy:0"
    priority = -1          # below cpu (10): installing this plugin never changes the default device
    buffer_type = np.ndarray   # checked mode (GRILLY_CHECK=1, on in the kit) rejects anything else

    def __init__(self):
        self._devices = [Device(self, 0, "numpy reference kernels (example plugin)")]

    def devices(self) -> list[Device]:
        return self._devices

    def kernels(self) -> dict:
        return dict(KERNELS)

    def supports_dtype(self, device: Device, dtype) -> bool:
        return True   # numpy holds every grilly dtype

    def info(self, device: Device) -> dict:
        return {"numpy": np.__version__}


_backend = NumpyBackend()


@hookimpl
def grilly_backends():
    """The backends this plugin provides."""
    return [_backend]
