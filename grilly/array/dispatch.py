"""Dispatch: every public namespace function, by name, and the hooks a recorder attaches to.

Each array-layer module ends with ``export(globals())``: its public functions are replaced by
thin wrappers that, when an argument requires grad, hand the call to ``hooks.record`` (set by
grilly.autograd), and are listed in ``OPS`` under their namespace name (``"add"``,
``"linalg.svd"``). Array's methods call ``OPS`` too, so operators, indexing and ``to_device``
record exactly like the functions. Nothing here imports the rest of grilly but the leaf dtype
table: the array layer sits below autograd, and autograd plugs in rather than patching Array.
"""
from __future__ import annotations

import functools
import threading
import types
from typing import Callable

from ..backends import dtypes as _dtypes   # the leaf dtype table
from . import numpy_args as _numpy_args   # NumPy's positional order (a leaf too)

OPS: dict[str, Callable] = {}   # namespace name -> the exported (hooked) function
_SEQ = (list, tuple)
_SEQ_TYPES = frozenset(_SEQ)

# torch's keywords that NumPy and the Array API never take: a call to one of TORCH_NAMES that
# passes one gets torch's meaning, TORCH_FORMS[name] (grilly/array/torch_dims.py fills it; the
# fft functions' ``dim``, grilly/fft/__init__.py)
TORCH_KEYS = frozenset({"dim", "keepdim", "unbiased", "diagonal", "interpolation", "dims",
                        "shifts", "dim1", "dim2", "as_tuple", "right", "out_int32",
                        "weight"})
TORCH_NAMES = frozenset({"sum", "prod", "mean", "std", "var", "max", "min", "all", "any",
                         "argmax", "argmin", "cumsum", "cumulative_sum", "sort", "argsort",
                         "median", "tril", "triu", "squeeze", "topk", "nansum", "nanmean",
                         "count_nonzero", "quantile", "nanquantile", "nanmedian",
                         "trapezoid", "rot90", "split", "diff", "flip", "roll", "cross",
                         "tensordot", "unique", "nonzero", "cumprod", "diagonal", "concat",
                         "concatenate", "searchsorted", "histogram"}) | frozenset(
    "fft." + n for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fftn", "ifftn",
                         "rfftn", "irfftn", "hfftn", "ihfftn", "fft2", "ifft2", "rfft2",
                         "irfft2", "hfft2", "ihfft2", "fftshift", "ifftshift"))
TORCH_FORMS: dict[str, Callable] = {}

# NumPy's keywords a namespace function takes but its autograd rule does not (linalg.svd's
# compute_uv, linalg.eigh's UPLO): name -> (those keywords, a function of the whole call that
# composes namespace calls without them). Filled by a module before its export(), so what
# autograd and grilly.jit record is the canonical call.
NUMPY_FORMS: dict[str, tuple[frozenset, Callable]] = {}
# NumPy's forms told by their values rather than a keyword (take's list or N-D indices,
# take_along_axis's axis=None): name -> a test of (args, kw) that hands the call to its
# NUMPY_FORMS function instead
NUMPY_CALLS: dict[str, Callable] = {}
# ops that refuse some calls before any work or dtype handling (linalg's decompositions on
# float16 and bfloat16, as numpy.linalg and torch.linalg refuse them): name -> a check of
# (args, kw) that raises. Filled by a module before its export(), as NUMPY_FORMS.
REFUSE: dict[str, Callable] = {}


class _Hooks:
    """What grilly.autograd installs; None means no recorder (every call runs plainly)."""

    # record(name, fn, args, kw): runs an op whose inputs require grad
    record: Callable | None = None
    # inplace(x, name, other): ``x op= other`` where x or other requires grad
    inplace: Callable | None = None
    # setitem(x, key, value): ``x[key] = value`` where x or value requires grad
    setitem: Callable | None = None
    # cast(name, args) -> args: grilly.amp's autocast policy, installed only while a region
    # is active somewhere (so the hot path pays one attribute check otherwise)
    cast: Callable | None = None
    # host_op(fn, args) -> result: grilly.jit's tracer, while it records; host_op() below
    host_op: Callable | None = None
    # module_call(module): grilly.jit's tracer, while it records (nn.Module.__call__ reports
    # each call, so a traced graph knows the train/eval modes it was traced in)
    module_call: Callable | None = None
    # module_setattr(module, name): grilly.jit's tracer, while it records (nn.Module.__setattr__
    # reports each assignment, so a graph knows which module state the traced Python replaced)
    module_setattr: Callable | None = None
    # grad_set(leaf): grilly.jit's tracer, while it records (backward reports each leaf whose
    # .grad it set, so a replay sets it again even where the caller dropped the array)
    grad_set: Callable | None = None
    # deepcopy(src, copy): grilly.nn marks the deep copy of a Parameter as a Parameter
    deepcopy: Callable | None = None


hooks = _Hooks()

# grilly.jit's replay guards: one number bumped by whatever can change what a traced module's
# call runs (an nn.Module's attribute, parameter, buffer or submodule set or deleted, its
# train/eval mode, a module or gradient hook added or removed, an optimizer's group option
# other than lr). A replay re-checks its graph's modules only after the number moved.
structure_epoch = [0]


def structure_changed() -> None:
    """Tell grilly.jit's replay guards that a module's structure or values changed."""
    structure_epoch[0] += 1


def bumping(base: type, name: str) -> Callable:
    """``base``'s method ``name``, bumping structure_epoch after it: the containers the replay
    guards follow (a module's registries and hook tables, an optimizer's groups) are built of
    these."""
    method = getattr(base, name)

    def f(self, *args, **kwargs):
        r = method(self, *args, **kwargs)
        structure_epoch[0] += 1
        return r

    f.__name__ = name
    return f

# this thread's state that changes which kernels a function runs (grad mode, autocast): each a
# function of no arguments returning something hashable; grilly.jit keys its graphs on them
mode_keys: list = []


def host_op(fn: Callable, *args):
    """``fn(*args)``, marked as Python work a traced graph must repeat on every replay (an
    optimizer's step counts steps; a random draw advances its generator): grilly.jit records it
    as one call instead of the kernels it runs. It must not write in place into arrays the
    traced kernels made (it may read them, make new ones and update its own state)."""
    h = hooks.host_op
    return fn(*args) if h is None else h(fn, args)
_namespace: list = []   # the top-level namespace module, registered by grilly/__init__.py


def set_namespace(module) -> None:
    """Register the module ``Array.__array_namespace__`` returns (grilly registers itself)."""
    _namespace[:] = [module]


def namespace():
    """The registered top-level namespace module."""
    if not _namespace:
        raise RuntimeError("the grilly namespace is not imported yet")
    return _namespace[0]


def _tracked(args) -> bool:
    for a in args:
        if getattr(a, "requires_grad", False):
            return True
        if isinstance(a, _SEQ):
            for b in a:
                if getattr(b, "requires_grad", False):
                    return True
    return False


_BF16_SEEN = _dtypes.BFLOAT16_SEEN
_BF16_DT = _dtypes.bfloat16


def _dtype_kw(kw: dict) -> dict:
    """``kw`` with a ``dtype=`` that names bfloat16 ("bfloat16", ml_dtypes' type) as
    gp.bfloat16, marking bfloat16 as seen: the bfloat16 path must run for sum(x,
    dtype=gp.bfloat16) even before any bfloat16 array exists (a float32 kernel was asked for a
    bfloat16 result and raised AttributeError)."""
    d = kw["dtype"]
    if d is _BF16_DT:
        _BF16_SEEN[0] = True
        return kw
    if d is None or type(d) is _dtypes.DType:
        return kw
    try:
        d = _dtypes.as_dtype(d)
    except TypeError:   # the op's own error names it
        return kw
    return {**kw, "dtype": d} if d is _BF16_DT else kw


@functools.cache
def _bf16():
    """grilly/array/bfloat16.py (imported once a bfloat16 dtype has been asked for)."""
    from . import bfloat16
    return bfloat16


def op(name: str, fn: Callable) -> Callable:
    """``fn`` as the namespace function ``name``: recorded through ``hooks.record`` when an
    argument (or an element of a list/tuple argument) requires grad; it takes NumPy's
    positional order where numpy_args.POSITIONAL names it, and torch's meaning where a call to
    one of TORCH_NAMES passes one of TORCH_KEYS."""
    def run(*args, **kw):
        rec = hooks.record
        if rec is not None and _tracked(args):
            return rec(name, fn, args, kw)
        return fn(*args, **kw)

    h = hooks
    npos, names, absent, sig = _numpy_args.slots(name, fn)
    torch_kw = name in TORCH_NAMES
    np_keys, np_form = NUMPY_FORMS.get(name, (None, None))
    np_call = NUMPY_CALLS.get(name)
    refuse = REFUSE.get(name)
    if np_keys is not None:
        absent = absent - np_keys   # NumPy's keywords the form takes (mean's dtype slot)

    # whether any of the forms below applies to this op: most ops skip their tests at once
    special = refuse is not None or np_keys is not None or np_call is not None or torch_kw

    @functools.wraps(fn)
    def dispatch(*args, **kw):
        if len(args) > npos or kw and absent and not absent.isdisjoint(kw):
            args, kw = _numpy_args.bind(name, npos, names, absent, args, kw)   # canonical form
        if special:
            if refuse is not None:
                refuse(args, kw)
            if np_keys is not None and kw and not np_keys.isdisjoint(kw):
                return np_form(*args, **kw)   # composes namespace calls, which record
            if np_call is not None and np_call(args, kw):
                return np_form(*args, **kw)
            if torch_kw and kw and not TORCH_KEYS.isdisjoint(kw):
                return TORCH_FORMS[name](*args, **kw)   # composes namespace calls, which record
        if h.cast is not None:
            args = h.cast(name, args)
            if type(args) is Uncast:   # the policy leaves this composition alone (AS_GIVEN)
                with no_cast():
                    return dispatch(*args, **kw)
        if kw and "dtype" in kw:
            kw = _dtype_kw(kw)
        if _BF16_SEEN[0]:
            bf = _bf16()
            if name not in bf.NATIVE and bf.involved(args, kw):
                args = bf.narrow_scalars(name, args)
                if not bf.native_on(name, args):
                    return bf.call(run, OPS["astype"], args, kw, name, ns)   # in float32
        rec = h.record
        if rec is not None:
            for a in args:   # _tracked, inlined: this runs on every namespace call
                if getattr(a, "requires_grad", False) or (type(a) in _SEQ_TYPES
                                                          and _tracked(a)):
                    return rec(name, fn, args, kw)
            # an Array keyword that requires grad goes to the recorder too: it refuses what
            # a rule cannot differentiate instead of dropping its gradient
            if kw and _tracked(kw.values()):
                return rec(name, fn, args, kw)
        return fn(*args, **kw)

    if sig is not None:
        dispatch.__signature__ = sig   # help() and inspect show NumPy's positional order
    dispatch.__grilly_op__ = name
    OPS[name] = dispatch
    return dispatch


class Uncast(tuple):
    """An op's arguments as grilly.amp's policy hands back those of an op torch's autocast
    leaves alone (its AS_GIVEN class): the op runs with its composition's casts off, so a
    composite of listed ops (nansum of sum, trace, exp2 of pow) keeps its arguments' dtype."""


def policy(name: str) -> Callable:
    """Decorator: ``fn`` (a composition that is not a namespace op: a torch-named method, a
    grilly.special function) runs as one op of torch's autocast: its positional array
    arguments are cast as the policy says for ``name``, then its composition runs uncast (a
    float32-listed op composed of a product stays float32; a low one of a sum stays low)."""
    def deco(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(*args, **kw):
            cast = hooks.cast
            if cast is None or cast_suspended():
                return fn(*args, **kw)
            args = cast(name, args)
            with no_cast():
                return fn(*args, **kw)
        return run
    return deco


def autocast(name: str, *args) -> tuple:
    """``args`` as the active autocast policy casts them for ``name`` (unchanged without one):
    for layers that run as their own autograd Function (linear, attention, losses)."""
    cast = hooks.cast
    return args if cast is None else cast(name, args)


def export(namespace: dict, prefix: str = "") -> None:
    """Replace each function named in ``namespace['__all__']`` by its dispatching wrapper."""
    for name in namespace.get("__all__", ()):
        fn = namespace.get(name)
        if isinstance(fn, types.FunctionType) and not hasattr(fn, "__grilly_op__"):
            namespace[name] = op(prefix + name, fn)
        elif hasattr(fn, "__grilly_op__"):
            OPS.setdefault(prefix + name, fn)


_no_cast = threading.local()   # .n > 0 while this thread runs a block of no_cast


class no_cast:
    """``with no_cast():`` this thread's block runs with grilly.amp's autocast policy off, where
    torch's autocast leaves an op alone: in-place ops keep their array's dtype (a float16
    ``x.exp_()`` or ``x **= 2`` in a region computed float32 and raised TypeError), and an op
    given an explicit ``dtype=`` (softmax, norms) runs in it (it came back float32)."""

    def __enter__(self) -> None:
        _no_cast.n = getattr(_no_cast, "n", 0) + 1

    def __exit__(self, *exc) -> bool:
        _no_cast.n -= 1
        return False


def cast_suspended() -> bool:
    """Whether this thread is inside ``no_cast`` (grilly.amp's hook then casts nothing)."""
    return getattr(_no_cast, "n", 0) > 0


def inplace(x, name: str, other):
    """``x`` updated in place with ``name(x, other)`` (the augmented assignment operators)."""
    if hooks.cast is not None:   # an autocast region (some thread): x's own dtype, as torch's
        with no_cast():
            return _inplace(x, name, other)
    return _inplace(x, name, other)


def _inplace(x, name: str, other):
    check_writable(x._buf, f"{name} (in place)")   # before the op's work, on either path
    # (a view of an array that requires grad too: its base's history changes with it)
    if hooks.inplace is not None and (x.requires_grad or getattr(other, "requires_grad", False)
                                      or (x._view is not None and x._view[0].requires_grad)):
        return hooks.inplace(x, name, other)
    store(x, OPS[name](x, other), name)
    return x


def check_writable(buf, op: str) -> None:
    """ValueError naming ``op`` when ``buf`` is a broadcast view (an axis of several elements
    with stride 0, as broadcast_to makes): read-only in NumPy, and a write would land on one
    element of the base array several times."""
    strides = getattr(buf, "strides", None)
    if strides is not None and 0 in strides and 0 not in buf.shape and any(
            s == 0 and n > 1 for s, n in zip(strides, buf.shape)):
        raise ValueError(f"{op}: cannot write into a broadcast view (it is read-only); "
                         "copy it first (asarray(x, copy=True))")


def store(x, res, name: str) -> None:
    """Write ``res`` into ``x``'s buffer; TypeError/ValueError when it does not fit."""
    if res._dtype is not x._dtype:
        raise TypeError(f"{name} (in place): result dtype {res._dtype.name} cannot be stored in "
                        f"an array of dtype {x._dtype.name}")
    if res._buf.shape != x._buf.shape:
        raise ValueError(f"{name} (in place): result shape {res.shape} does not match the "
                         f"array's shape {x.shape}")
    x._device.kernels["assign"](x._buf, res._buf)
    c = x._version   # (array.bump, inlined: array.py imports this module)
    if c is None:
        x._version = [1]
    else:
        c[0] += 1


class _Namespace:
    """The namespace's functions and dtypes by attribute (``ns.matmul``, ``ns.linalg.svd``,
    ``ns.float32``), looked up at call time: what code inside grilly that composes namespace
    functions uses, instead of importing the top-level package it sits below."""

    __slots__ = ("_prefix",)

    def __init__(self, prefix: str = ""):
        self._prefix = prefix

    def __getattr__(self, name: str):
        f = OPS.get(self._prefix + name)
        if f is not None:
            return f
        if not self._prefix:
            if name in ("linalg", "fft"):
                return _Namespace(name + ".")
            d = getattr(_dtypes, name, None)
            if isinstance(d, _dtypes.DType):
                return d
        raise AttributeError(f"grilly namespace has no function {self._prefix + name!r}")


ns = _Namespace()
