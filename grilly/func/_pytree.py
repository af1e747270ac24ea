"""Pytrees: nested tuples, lists and dicts (namedtuples and dict subclasses too) whose other
values are leaves, the containers that grilly.func's transforms take and return, as torch's."""
from __future__ import annotations

from typing import Any

# a spec is None for a leaf, else (container type, dict keys or length, child specs)
Spec = Any


def _children(tree) -> tuple | None:
    """(keys or length, children) of a container, None for a leaf."""
    if isinstance(tree, dict):
        return tuple(tree), tuple(tree.values())
    if isinstance(tree, (tuple, list)):
        return len(tree), tuple(tree)
    return None


def flatten(tree) -> tuple[list, Spec]:
    """(the leaves of ``tree`` in order, its spec)."""
    leaves: list = []

    def walk(t):
        c = _children(t)
        if c is None:
            leaves.append(t)
            return None
        return type(t), c[0], tuple(walk(x) for x in c[1])
    return leaves, walk(tree)


def unflatten(leaves, spec: Spec):
    """The tree of ``spec`` holding ``leaves`` (as many as ``flatten`` gave)."""
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        typ, keys, kids = s
        items = [build(k) for k in kids]
        if issubclass(typ, dict):
            return typ(zip(keys, items))
        if hasattr(typ, "_fields"):   # a namedtuple takes its fields as arguments
            return typ(*items)
        return typ(items)
    return build(spec)


def broadcast_prefix(prefix, tree, error: str) -> list:
    """One value of ``prefix`` per leaf of ``tree``: a leaf of ``prefix`` (an int or None) stands
    for every leaf of the subtree it sits over, a container must match ``tree``'s there (else
    ValueError(``error``))."""
    out: list = []

    def walk(p, t):
        cp = _children(p)
        if cp is None:
            out.extend([p] * len(flatten(t)[0]))
            return
        ct = _children(t)
        if ct is None or type(p) is not type(t) or cp[0] != ct[0]:
            raise ValueError(error)
        for a, b in zip(cp[1], ct[1]):
            walk(a, b)
    walk(prefix, tree)
    return out
