"""NumPy's positional order for namespace functions whose Array API signature makes their
options keyword-only: ``gp.sum(x, 0)`` is ``gp.sum(x, axis=0)``, as ``np.sum(x, 0)`` is.

dispatch.op applies ``POSITIONAL`` to the functions it names: positional arguments past the
ones grilly's signature takes are moved into the keywords under NumPy's names, before the
autograd, autocast and jit hooks see the call; keyword calls are unchanged. A leaf module
(it imports nothing of grilly), as dispatch is.
"""
from __future__ import annotations

import inspect
import sys

_P = inspect.Parameter

_REDUCE = ("axis", "dtype", "out", "keepdims")          # np.sum(a, axis, dtype, out, keepdims)
_MOMENT = ("axis", "dtype", "out", "correction", "keepdims")   # np.std(..., ddof, keepdims)
_EXTREME = ("axis", "out", "keepdims")                  # np.max(a, axis, out, keepdims)
_REDUCE_IW = _REDUCE + ("initial", "where")              # np.sum(..., keepdims, initial, where)
_EXTREME_IW = _EXTREME + ("initial", "where")            # np.max(..., keepdims, initial, where)
_FFT = ("n", "axis", "norm", "out")                     # np.fft.fft(a, n, axis, norm, out)
_FFTN = ("s", "axes", "norm", "out")

# namespace name -> NumPy's positional parameters after those grilly already takes positionally,
# in NumPy's order, under grilly's names (NumPy's ddof is the Array API's correction, pinv's
# rcond its rtol). A name the grilly function lacks (``out``, mean/std/var's ``dtype``) takes
# only None unless the function's dispatch.NUMPY_FORMS takes it (sum's initial and where, mean's
# dtype). cumulative_sum/prod take cumsum's order (NumPy's own make them keyword-only).
POSITIONAL: dict[str, tuple[str, ...]] = {
    "sum": _REDUCE_IW, "prod": _REDUCE_IW, "mean": _REDUCE, "std": _MOMENT, "var": _MOMENT,
    "max": _EXTREME_IW, "min": _EXTREME_IW, "all": _EXTREME, "any": _EXTREME,
    "argmax": ("axis", "out"), "argmin": ("axis", "out"), "count_nonzero": ("axis",),
    "cumulative_sum": ("axis", "dtype", "out"), "cumulative_prod": ("axis", "dtype", "out"),
    "sort": ("axis", "kind", "order"), "argsort": ("axis", "kind", "order"),
    "searchsorted": ("side", "sorter"),
    "concat": ("axis", "out"), "stack": ("axis", "out"), "flip": ("axis",), "roll": ("axis",),
    "repeat": ("axis",), "take": ("axis", "out", "mode"), "take_along_axis": ("axis",),
    "diff": ("n", "axis", "prepend", "append"), "tensordot": ("axes",), "tril": ("k",),
    "triu": ("k",), "clip": ("out",),
    "asarray": ("dtype",), "arange": ("dtype",), "eye": ("k", "dtype"), "linspace": ("endpoint",),
    "zeros": ("dtype",), "ones": ("dtype",), "empty": ("dtype",), "full": ("dtype",),
    "zeros_like": ("dtype",), "ones_like": ("dtype",), "empty_like": ("dtype",),
    "full_like": ("dtype",),
    "linalg.qr": ("mode",), "linalg.svd": ("full_matrices", "compute_uv", "hermitian"),
    "linalg.pinv": ("rtol", "hermitian"), "linalg.eigh": ("UPLO",), "linalg.eigvalsh": ("UPLO",),
    "linalg.matrix_rank": ("tol", "hermitian"),
    # torch's order (NumPy's vector_norm/matrix_norm take keywords only): (x, ord, dim, keepdim)
    "linalg.vector_norm": ("ord", "axis", "keepdims"),
    "linalg.matrix_norm": ("ord", "dim", "keepdims"),
    "fft.fft": _FFT, "fft.ifft": _FFT, "fft.rfft": _FFT, "fft.irfft": _FFT, "fft.hfft": _FFT,
    "fft.ihfft": _FFT, "fft.fftn": _FFTN, "fft.ifftn": _FFTN, "fft.rfftn": _FFTN,
    "fft.irfftn": _FFTN, "fft.fft2": _FFTN, "fft.ifft2": _FFTN, "fft.rfft2": _FFTN,
    "fft.irfft2": _FFTN, "fft.fftfreq": ("d",), "fft.rfftfreq": ("d",), "fft.fftshift": ("axes",),
    "fft.ifftshift": ("axes",),
}

# NumPy's keyword names for a grilly parameter: name -> {NumPy's: grilly's}
ALIASES: dict[str, dict[str, str]] = {"std": {"ddof": "correction"},
                                      "var": {"ddof": "correction"},
                                      "clip": {"a_min": "min", "a_max": "max"}}

# factories whose shape torch also takes as separate ints (bind)
SIZES = frozenset({"zeros", "ones", "empty"})

NONE = (sys.maxsize, (), frozenset(), None)   # slots() of a function not in POSITIONAL


class NotSupported(TypeError, NotImplementedError):
    """An argument NumPy takes that grilly does not (``out=``): a TypeError, as NumPy's for an
    ``out`` it cannot write, and a NotImplementedError, as grilly's other unsupported options."""


def no_out(op: str, out) -> None:
    """NotSupported naming ``op`` unless ``out`` is None (grilly's functions return new arrays)."""
    if out is not None:
        raise NotSupported(f"{op}: out= is not supported (grilly returns a new array; assign "
                           "with x[...] = result)")


def slots(name: str, fn) -> tuple:
    """``(npos, names, absent, signature)`` for namespace function ``name``: how many arguments
    ``fn`` takes positionally, the names that may follow them, those ``fn`` lacks, and the
    signature it shows (``NONE`` when ``name`` is not in POSITIONAL)."""
    names = POSITIONAL.get(name)
    if names is None:
        return NONE
    sig = inspect.signature(fn)
    params = sig.parameters
    pos = [p for p in params.values() if p.kind in (_P.POSITIONAL_ONLY, _P.POSITIONAL_OR_KEYWORD)]
    moved = [params[n].replace(kind=_P.POSITIONAL_OR_KEYWORD) if n in params
             else _P(n, _P.POSITIONAL_OR_KEYWORD, default=None) for n in names]
    rest = [p for p in params.values() if p.kind is _P.KEYWORD_ONLY and p.name not in names]
    absent = frozenset(n for n in names if n not in params) | frozenset(ALIASES.get(name, ()))
    return len(pos), names, absent, sig.replace(parameters=[*pos, *moved, *rest])


def bind(op: str, npos: int, names: tuple, absent: frozenset, args: tuple, kw: dict):
    """``(args, kw)`` with the arguments past ``npos`` moved into ``kw`` under ``names``, and
    the ``absent`` ones (which must be None) dropped; TypeError as Python's for a bad call."""
    if op in SIZES and len(args) > 1 and all(type(a) is int for a in args):
        # torch's sizes as separate ints (torch.zeros(2, 3)): NumPy's second argument is a
        # dtype, which is never an int
        args = (args,)
    extra = args[npos:]
    if len(extra) > len(names):
        raise TypeError(f"{op}() takes from {npos} to {npos + len(names)} positional arguments "
                        f"but {len(args)} were given")
    kw = dict(kw)
    for n, v in zip(names, extra):
        if n in kw:
            raise TypeError(f"{op}() got multiple values for argument {n!r}")
        kw[n] = v
    for n in absent.intersection(kw):
        v = kw.pop(n)
        alias = ALIASES.get(op, {}).get(n)
        if alias is not None:   # NumPy's name (std's ddof) for grilly's parameter
            if alias in kw:
                raise TypeError(f"{op}() got both {n!r} and {alias!r} (the same parameter)")
            kw[alias] = v
        elif n == "out":
            no_out(op, v)
        elif v is not None:
            raise NotSupported(f"{op}: {n}= is not supported (only None)")
    return args[:npos], kw
