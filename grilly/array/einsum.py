"""einsum: Einstein summation as NumPy and torch write it, composed of namespace functions
(diagonal, sum, permute_dims, broadcast_to, reshape, matmul), so autograd, grilly.jit and every
device take it as they take those.

The operands are contracted left to right, two at a time, each pair as one batched matmul:
labels both operands carry and a later operand or the output needs are the batch, labels only
they carry are summed by the product, the rest are rows or columns. A label only one operand
carries and the output does not is summed first; a label repeated in one term takes the
diagonal. Sizes of 1 broadcast against a label's other sizes, as in NumPy."""
from __future__ import annotations

from . import dispatch
from . import dtypes as dt
from .array import Array
from .core import check_array, common_device

__all__ = ["einsum"]

_ns = dispatch.ns
_LABELS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def einsum(subscripts: str, /, *operands: Array, optimize=False) -> Array:
    """Einstein summation over ``operands`` as ``subscripts`` says ("ij,jk->ik", "bii->bi",
    "...ij,...jk", implicit output in NumPy's order; ellipsis axes left out of an explicit
    output are summed, as torch does). NumPy's ``optimize`` is taken and has no effect: grilly
    picks its own contraction order, whatever it is. torch's ``einsum(eq, [a, b])`` (the
    operands in one list) is taken too."""
    op = "einsum"
    if not (isinstance(optimize, (bool, list, tuple)) or optimize in ("greedy", "optimal")):
        raise TypeError(f"{op}: optimize must be a bool, 'greedy', 'optimal' or an einsum_path "
                        f"list, got {optimize!r}")
    if not isinstance(subscripts, str):
        raise TypeError(f"{op}: subscripts must be a string such as 'ij,jk->ik', got "
                        f"{type(subscripts).__name__} (the operand, sublist form is not "
                        "supported)")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])   # torch's einsum(equation, [a, b])
    if not operands:
        raise ValueError(f"{op}: at least one operand is needed")
    for k, x in enumerate(operands):
        check_array(x, op, f"operands[{k}]")
        if x._dtype.kind == "b":
            raise TypeError(f"{op}: operands[{k}] has dtype bool; expected numeric arrays")
    common_device(op, *operands)
    d = operands[0]._dtype
    for x in operands[1:]:
        d = dt.promote(d, x._dtype, op)
    terms, out = _parse(subscripts.replace(" ", ""), operands)
    xs = [_diagonals(x if x._dtype is d else _ns.astype(x, d), t)
          for x, t in zip(operands, terms)]
    sizes = _sizes([t for _, t in xs], [x for x, _ in xs])
    # a label one operand carries and nothing else needs: summed before any product
    counts: dict = {}
    for labels in [t for _, t in xs]:
        for c in labels:
            counts[c] = counts.get(c, 0) + 1
    xs = [_sum_out(x, t, [c for c in t if counts[c] == 1 and c not in out]) for x, t in xs]
    x, t = xs[0]
    for k in range(1, len(xs)):
        keep = set(out).union(*[lab for _, lab in xs[k + 1:]])
        x, t = _contract(x, t, *xs[k], keep, sizes)
    x, t = _sum_out(x, t, [c for c in t if c not in out])
    if tuple(t) != tuple(out):
        x = _ns.permute_dims(x, tuple(t.index(c) for c in out))
    return x


def _parse(spec: str, operands: tuple) -> tuple[list, list]:
    """Each operand's labels and the output's, with ellipsis axes as labels of their own."""
    if spec.count("->") > 1:
        raise ValueError(f"einsum: subscripts {spec!r} have more than one '->'")
    lhs, out = spec.split("->") if "->" in spec else (spec, None)
    parts = lhs.split(",")
    if len(parts) != len(operands):
        raise ValueError(f"einsum: subscripts {spec!r} name {len(parts)} operands, got "
                         f"{len(operands)}")
    for s in parts + ([out] if out is not None else []):
        bad = set(s.replace("...", "")) - _LABELS
        if bad or s.count("...") > 1:
            raise ValueError(f"einsum: invalid subscripts {s!r} (letters a-z, A-Z and at most "
                             "one '...')")
    # ellipsis axes: labels past the letters (internal), aligned from the right
    n_ell = 0
    for k, (s, x) in enumerate(zip(parts, operands)):
        named = len(s.replace("...", ""))
        if ("..." in s and named > x.ndim) or ("..." not in s and named != x.ndim):
            raise ValueError(f"einsum: term {s!r} names {named} axes, but operands[{k}] has "
                             f"{x.ndim} (shape {x.shape})")
        n_ell = max(n_ell, x.ndim - named if "..." in s else 0)
    ell = [chr(0x100 + i) for i in range(n_ell)]
    terms = []
    for s, x in zip(parts, operands):
        if "..." in s:
            head, tail = s.split("...")
            k = x.ndim - len(head) - len(tail)
            terms.append(list(head) + ell[n_ell - k:] + list(tail))
        else:
            terms.append(list(s))
    if out is None:   # NumPy's implicit output: the ellipsis, then letters used once, sorted
        once = [c for c in sorted(set("".join(parts).replace(".", "")))
                if "".join(parts).count(c) == 1]
        return terms, ell + once
    if len(set(out.replace("...", ""))) != len(out.replace("...", "")):
        raise ValueError(f"einsum: output subscripts {out!r} repeat a label")
    used = set().union(*terms)
    for c in out.replace("...", ""):
        if c not in used:
            raise ValueError(f"einsum: output label {c!r} is not in any operand's subscripts")
    if "..." in out:
        head, tail = out.split("...")
        return terms, list(head) + ell + list(tail)
    return terms, list(out)


def _sizes(terms: list, operands: tuple) -> dict:
    """Each label's size (sizes of 1 broadcast; other differing sizes are an error)."""
    sizes: dict = {}
    for t, x in zip(terms, operands):
        for c, n in zip(t, x.shape):
            m = sizes.get(c)
            if m is None or m == 1:
                sizes[c] = n
            elif n != 1 and n != m:
                name = "an ellipsis axis" if ord(c) >= 0x100 else f"label {c!r}"
                raise ValueError(f"einsum: {name} has sizes {m} and {n} in different operands "
                                 "(they must match or be 1)")
    return sizes


def _diagonals(x: Array, t: list) -> tuple:
    """``x`` with each label repeated in its term reduced to the diagonal (the label once)."""
    t = list(t)
    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        p = t.index(c)
        q = t.index(c, p + 1)
        if x.shape[p] != x.shape[q]:
            raise ValueError(f"einsum: label {c!r} repeats in one term with sizes "
                             f"{x.shape[p]} and {x.shape[q]}")
        rest = [i for i in range(len(t)) if i not in (p, q)]
        x = _ns.linalg.diagonal(_ns.permute_dims(x, (*rest, p, q)))
        t = [t[i] for i in rest] + [c]
    return x, t


def _sum_out(x: Array, t: list, labels: list) -> tuple:
    """``x`` summed over ``labels`` (in its dtype), and its remaining labels."""
    if not labels:
        return x, list(t)
    axes = tuple(t.index(c) for c in labels)
    return (_ns.sum(x, axis=axes, dtype=x.dtype),
            [c for c in t if c not in labels])


def _contract(a: Array, ta: list, b: Array, tb: list, keep: set, sizes: dict) -> tuple:
    """The product of ``a`` and ``b`` over their shared labels not in ``keep``: one batched
    matmul of (batch, rows, k) by (batch, k, columns)."""
    a, ta = _sum_out(a, ta, [c for c in ta if c not in tb and c not in keep])
    b, tb = _sum_out(b, tb, [c for c in tb if c not in ta and c not in keep])
    shared = [c for c in ta if c in tb]
    batch = [c for c in shared if c in keep]
    inner = [c for c in shared if c not in keep]
    # a label summed by the product but of size 1 on one side: that side broadcasts, so the
    # other side's sum over it is the product's
    for c in inner:
        na, nb = a.shape[ta.index(c)], b.shape[tb.index(c)]
        if na != nb:
            if na == 1:
                b = _ns.sum(b, axis=tb.index(c), keepdims=True, dtype=b.dtype)
            else:
                a = _ns.sum(a, axis=ta.index(c), keepdims=True, dtype=a.dtype)
    rows = [c for c in ta if c not in tb]
    cols = [c for c in tb if c not in ta]
    a = _arranged(a, ta, batch + rows + inner, sizes, batch)
    b = _arranged(b, tb, batch + inner + cols, sizes, batch)
    nbat, nrow = len(batch), len(rows)
    shape = a.shape[:nbat + nrow] + b.shape[nbat + len(inner):]
    m, k, n = (_prod(a.shape[nbat:nbat + nrow]), _prod(a.shape[nbat + nrow:]),
               _prod(b.shape[nbat + len(inner):]))
    y = _ns.matmul(_ns.reshape(a, (_prod(shape[:nbat]), m, k)),
                   _ns.reshape(b, (_prod(shape[:nbat]), k, n)))
    return _ns.reshape(y, shape), batch + rows + cols


def _arranged(x: Array, t: list, order: list, sizes: dict, batch: list) -> Array:
    """``x`` with its axes in ``order``, the ``batch`` axes broadcast to their full sizes."""
    if t != order:
        x = _ns.permute_dims(x, tuple(t.index(c) for c in order))
    full = tuple(sizes[c] if c in batch else n for c, n in zip(order, x.shape))
    return x if full == tuple(x.shape) else _ns.broadcast_to(x, full)


def _prod(xs) -> int:
    n = 1
    for v in xs:
        n *= v
    return n
