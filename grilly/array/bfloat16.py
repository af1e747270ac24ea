"""bfloat16 arithmetic: stored as bfloat16, computed in float32.

Backends keep bfloat16 arrays as 2-byte elements and convert them to and from float32 (astype);
every other op on a bfloat16 array runs here as: its bfloat16 arguments cast to float32, the op
in float32, and its float32 results rounded once to bfloat16, unless a wider float argument
(float16, float32, float64 or complex) made float32 or wider the result type anyway, as type
promotion says. Ops that only move or view storage (NATIVE) see bfloat16 itself. The
dispatcher (dispatch.op) sends a call here only once a bfloat16 dtype has been asked for.
"""
from __future__ import annotations

import ml_dtypes

from ..backends import dtypes as _dt
from ..backends.contract import BFLOAT16_ELEMENTWISE, BINARY_OPS

# ops that work on storage without arithmetic: the backends run them on bfloat16 directly
NATIVE = frozenset({
    "astype", "asarray", "to_device", "reshape", "permute_dims", "matrix_transpose",
    "expand_dims", "squeeze", "broadcast_to", "__getitem__", "__setitem__", "__dlpack__",
    "__dlpack_device__", "autograd.detach", "autograd.backward", "unstack",
    # ops that handle 16-bit floats themselves, as float16 (grilly/array/attention.py,
    # random_bits.py): a kernel declaring takes_bfloat16 gets the bits, others float32 copies
    # rounded back once, attention's lse kept float32 either way
    "attention.attention", "attention.attention_backward", "random_bits.philox_dropout",
    # NumPy's in-place writes, composed of namespace calls that take bfloat16 (astype, where,
    # setitem): run here they wrote into a float32 copy and left the array unchanged
    "put", "putmask", "place", "put_along_axis", "fill_diagonal",
    # questions about dtypes and memory, answered from the dtype itself (a float32 stand-in
    # would answer for float32)
    "issubdtype", "promote_types", "common_type", "min_scalar_type", "may_share_memory",
    "shares_memory", "iterable", "isrealobj", "iscomplexobj",
})
# ops a backend may run on bfloat16 itself (Backend.native_bfloat16: the Vulkan backend's
# matrix products, convolutions, pooling and ReLU's gradient: float32 arithmetic on the bits,
# each result rounded once), where every floating array argument is bfloat16 (integer ones, a
# pool's window indices, are what they are)
DEVICE_NATIVE = frozenset({"matmul", "linalg.matmul", "dense.linear", "dense.linear_backward",
                           "conv.conv2d", "conv.conv2d_backward", "conv.max_pool2d",
                           "conv.max_pool2d_backward", "fused.relu_backward"})
# joins of bfloat16 arrays only (mixed ones promote, or raise, through call): storage moves on
# every device, as NATIVE's (the q, k, v projections of attention are stacked and split)
_JOINS = frozenset({"concat", "stack"})
# elementwise ops a backend may run on bfloat16 itself (their value and gradient are then the
# composition's bit for bit); their Python scalars must be bfloat16 values (the composition
# would take them as float32)
ELEMENTWISE = BFLOAT16_ELEMENTWISE
_BF16, _F32 = _dt.bfloat16, _dt.float32
_NATIVE_ON: dict = {}   # device -> the ops its backend runs natively


def _bf16_value(v) -> bool:
    """Whether a Python int or float is a bfloat16 value (so float32 and bfloat16 hold it
    alike)."""
    if type(v) is not int and type(v) is not float:
        return False
    try:
        f = float(v)
    except OverflowError:   # an int past float64: not one
        return False
    return f != f or float(_BF16.np.type(f)) == f


# binary elementwise ops whose Python float arguments take the bfloat16 array's dtype (JAX's weak
# typing and torch's wrapped numbers: x == 0.1 compares with bfloat16(0.1), as float16 does)
SCALAR_OPS = ELEMENTWISE | frozenset({"divide", "floor_divide", "remainder", "pow", "atan2",
                                      "hypot", "copysign", "logaddexp", "where"})


def narrow_scalars(name: str, args: tuple) -> tuple:
    """``args`` with each Python float rounded to bfloat16 for a SCALAR_OPS op whose float array
    arguments are all bfloat16 (so the result is bfloat16)."""
    if name not in SCALAR_OPS:
        return args
    seen = False
    for a in args:
        d = getattr(a, "_dtype", None)
        if d is not None and d.kind in "fc":
            if d is not _BF16:
                return args
            seen = True
    if not seen or not any(type(a) is float for a in args):
        return args
    return tuple(float(_BF16.np.type(a)) if type(a) is float else a for a in args)


def native_on(name: str, args: tuple) -> bool:
    """Whether ``name`` runs on bfloat16 itself for ``args``: a DEVICE_NATIVE op whose floating
    array arguments are all bfloat16 (integer ones where it does not promote them), or an
    ELEMENTWISE one whose other arguments are bfloat16 values, on a device whose backend says
    it runs that op natively."""
    if name in _JOINS:   # storage only: every backend joins bfloat16 arrays as they are
        arrs = args[0] if args and isinstance(args[0], (list, tuple)) else ()
        return bool(arrs) and all(getattr(a, "_dtype", None) is _BF16 for a in arrs)
    ew = name in ELEMENTWISE
    if not ew and name not in DEVICE_NATIVE:
        return False
    dev = None
    for a in args:
        d = getattr(a, "_dtype", None)
        if d is None:
            if ew and not _bf16_value(a):
                return False
            continue
        if d is not _BF16 and (ew or d.kind in "fc" or name in _PROMOTING):
            return False
        dev = a._device
    if dev is None:
        return False
    ops = _NATIVE_ON.get(dev)
    if ops is None:
        ops = _NATIVE_ON[dev] = frozenset(dev.backend.native_bfloat16(dev))
    return name in ops


def involved(args: tuple, kw: dict) -> bool:
    """Whether a call has a bfloat16 array (also inside list/tuple arguments) or dtype."""
    if kw and kw.get("dtype") is _BF16:
        return True
    for a in args:
        if getattr(a, "_dtype", None) is _BF16 or a is _BF16:
            return True
        if isinstance(a, (list, tuple)):
            for b in a:
                if getattr(b, "_dtype", None) is _BF16:
                    return True
    return False


# ops whose result dtype promotes their array operands (where: its two values; concat and
# stack: the arrays of their first argument)
_PROMOTING = frozenset(BINARY_OPS) | frozenset({
    "where", "matmul", "linalg.matmul", "vecdot", "linalg.vecdot", "tensordot",
    "linalg.tensordot", "linalg.outer", "concat", "stack"})


def check_mixed(name: str, args: tuple) -> None:
    """TypeError naming ``name`` where a promoting op mixes a bfloat16 array with an integer or
    bool one: bfloat16 has no such promotion (NumPy's ml_dtypes has none either), while the
    float32 it computes in would promote as NumPy's."""
    if name not in _PROMOTING:
        return
    ops = args[1:] if name == "where" else args[0] if name in ("concat", "stack") else args
    dts = [d for d in (getattr(a, "_dtype", None) for a in ops) if d is not None]
    if _BF16 in dts:
        for i, d in enumerate(dts):
            if d.kind in "biu":   # (named in the operands' order)
                pair = (d.name, "bfloat16") if i < dts.index(_BF16) else ("bfloat16", d.name)
                raise TypeError(f"{name}: no type promotion between {pair[0]} and {pair[1]}")


# ops whose result dtype is one argument's, whatever the others' (position, keyword): clip's
# is x's, interp's fp's, insert's and ediff1d's the array's; computed in float32, the result is
# bfloat16 exactly where that argument is
_RESULT_OF = {"clip": (0, "x"), "interp": (2, "fp"), "insert": (0, "arr"),
              "ediff1d": (0, "ary")}


def _result_arg(name: str, args: tuple, kw: dict):
    i, key = _RESULT_OF[name]
    return args[i] if len(args) > i else kw.get(key)


def _nextafter(fn, astype, args: tuple, ns):
    """nextafter with bfloat16 arrays (and bfloat16-rounded Python scalars): one bfloat16
    step. float32's step rounds back to x, so it is scaled by 2**16 (float32 has 16 more
    significand bits in every binade, subnormals included: x plus that is x's bfloat16
    neighbour, exactly); x == y gives y and inf steps to the largest finite value, as NumPy's."""
    like = next(a for a in args if getattr(a, "_dtype", None) is _BF16)
    x, y = (astype(a, _F32) if getattr(a, "_dtype", None) is _BF16 else
            ns.full_like(like, float(_BF16.np.type(a)), dtype=_F32) for a in args)
    step = ns.subtract(fn(x, y), x)
    big = ns.multiply(ns.sign(x), float(ml_dtypes.finfo(_BF16.np).max))
    r = ns.where(ns.isinf(x), big, ns.add(x, ns.multiply(step, 65536.0)))
    return astype(ns.where(ns.equal(x, y), y, r), _BF16)


def call(fn, astype, args: tuple, kw: dict, name: str = "", ns=None):
    """``fn(*args, **kw)`` (the op ``name``, past the dispatcher's checks) computed in float32,
    results in bfloat16; ``astype`` is the namespace's (so autograd records the casts), ``ns``
    the namespace (nextafter composes in it)."""
    check_mixed(name, args)
    if name == "nextafter" and len(args) == 2 and all(
            getattr(a, "_dtype", None) is _BF16 or type(a) in (int, float) for a in args):
        return _nextafter(fn, astype, args, ns)
    wider = False
    first = None
    if name in _RESULT_OF:
        r = _result_arg(name, args, kw)
        first = getattr(r, "_dtype", None) is _BF16

    def widen(a):
        nonlocal wider
        d = getattr(a, "_dtype", None)
        if d is _BF16:
            return astype(a, _F32)
        if d is not None and d.kind in "fc":
            wider = True
        elif a is _BF16:
            return _F32
        return a

    # a result dtype the caller asked for (dtype=bfloat16, or NumPy's positional dtype slot)
    # is bfloat16 whatever the other arguments' dtypes: sum(x_float32, dtype=bfloat16)
    asked = any(a is _BF16 for a in args)
    args = tuple([widen(b) for b in a] if isinstance(a, list) else
                 tuple(widen(b) for b in a) if isinstance(a, tuple) else widen(a) for a in args)
    # another dtype the caller asked for (sum(x, dtype=float32), zeros_like(x, dtype=float32))
    # is the result's, as NumPy with ml_dtypes gives: nothing to narrow
    other = kw.get("dtype") is not None and kw.get("dtype") is not _BF16
    if kw.get("dtype") is _BF16:
        kw = {**kw, "dtype": _F32}
        asked = True
    # array keywords promote as positional ones (average's weights, diff's prepend, clip's
    # min): ignored, a float32 one gave a bfloat16 result
    if any(getattr(v, "_dtype", None) is not None for v in kw.values()):
        kw = {k: v if k == "dtype" else widen(v) for k, v in kw.items()}
    if first is not None:   # the result is that argument's dtype
        wider = not first
    try:
        res = fn(*args, **kw)
    except TypeError as e:
        # the op saw the widened float32: name the dtype the caller used (bfloat16 with an
        # integer array has no promotion, and the message should say so, not "float32")
        msg = str(e)
        if wider and not asked or "float32" not in msg:
            raise
        raise TypeError(msg.replace("float32", "bfloat16")) from None
    if wider and not asked or other:
        return res
    # grad_dtype=float32 (autocast's master weights): the weight and bias gradients stay float32,
    # as the devices that run these ops on bfloat16 return them
    keep = (name in _GRAD_DTYPE_OPS and isinstance(res, tuple)
            and (kw.get("grad_dtype") is _F32 or bool(args) and args[-1] is _F32))

    def narrow(r):
        # nested too: histogramdd returns (counts, [edges, ...])
        if isinstance(r, tuple):
            return type(r)(*map(narrow, r)) if hasattr(r, "_fields") else tuple(map(narrow, r))
        if isinstance(r, list):
            return [narrow(a) for a in r]
        return astype(r, _BF16) if getattr(r, "_dtype", None) is _F32 else r

    if keep:
        return (narrow(res[0]),) + res[1:]
    return narrow(res)


_GRAD_DTYPE_OPS = frozenset({"conv.conv2d_backward", "dense.linear_backward"})
