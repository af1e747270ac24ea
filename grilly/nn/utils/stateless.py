"""``torch.nn.utils.stateless.functional_call``: call a module with some of its parameters and
buffers replaced by given arrays (gradients flow to those arrays), restored afterwards."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...array.dispatch import structure_changed
from ..module import Module

__all__ = ["functional_call"]

_MISSING = object()


def _merge(parameters_and_buffers) -> dict:
    if isinstance(parameters_and_buffers, Mapping):
        return dict(parameters_and_buffers)
    if isinstance(parameters_and_buffers, Sequence) and all(
            isinstance(d, Mapping) for d in parameters_and_buffers):
        out: dict = {}
        for d in parameters_and_buffers:
            dup = set(out) & set(d)
            if dup:
                raise ValueError(f"functional_call: {sorted(dup)} appeared in multiple "
                                 "dictionaries; behavior of functional call is ambiguous")
            out.update(d)
        return out
    raise TypeError(f"functional_call: parameters_and_buffers must be a dict (or a sequence of "
                    f"dicts) of name -> array, got {type(parameters_and_buffers).__name__}")


def _untie(module: Module, values: dict) -> dict:
    """``values`` with every name tied to a given one (the same array under several names in
    the module) mapped to the given value, as torch's tie_weights=True."""
    by_id: dict[int, set] = {}
    for name, t in [*module.named_parameters(remove_duplicate=False),
                    *module.named_buffers(remove_duplicate=False)]:
        by_id.setdefault(id(t), set()).add(name)
    out = dict(values)
    for names in by_id.values():
        given = [n for n in names if n in values]
        if len(names) < 2 or not given:
            continue
        if len({id(values[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys {sorted(names)}, "
                             "which are tied. Consider using tie_weights=False")
        for n in names:
            out[n] = values[given[0]]
    return out


def _swap(module: Module, name: str, value):
    """Put ``value`` at dotted ``name``; returns what restores the old state."""
    path, _, attr = name.rpartition(".")
    try:
        mod = module.get_submodule(path)
    except AttributeError:
        raise AttributeError(f"functional_call: {type(module).__name__} has no submodule for "
                             f"key {name!r}") from None
    for table in (mod._parameters, mod._buffers):
        if attr in table:
            old = table[attr]
            table[attr] = value
            return mod, table, attr, old
    if isinstance(getattr(type(mod), attr, None), property):
        raise NotImplementedError(f"functional_call: {name!r} is a parametrized tensor; pass "
                                  "its originals ('parametrizations....original') instead")
    old = mod.__dict__.get(attr, _MISSING)
    object.__setattr__(mod, attr, value)
    structure_changed()   # (grilly.jit's replay guards compare a module's plain attributes)
    return mod, None, attr, old


def _restore(mod: Module, table, attr: str, old) -> None:
    if table is not None:
        table[attr] = old
    elif old is _MISSING:
        object.__delattr__(mod, attr)
        structure_changed()
    else:
        object.__setattr__(mod, attr, old)
        structure_changed()


def functional_call(module: Module, parameters_and_buffers, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """``module(*args, **kwargs)`` with the named parameters and buffers replaced by the given
    arrays for the call (the module is left as it was)."""
    if not isinstance(module, Module):
        raise TypeError(f"functional_call: module must be a Module, got {type(module).__name__}")
    values = _merge(parameters_and_buffers)
    if tie_weights:
        values = _untie(module, values)
    if strict:
        own = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        own |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        unexpected = [k for k in values if k not in own]
        missing = [k for k in own if k not in values]
        msgs = []
        if unexpected:
            msgs.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            msgs.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if msgs:
            raise RuntimeError(f"functional_call: error(s) in reparametrizing for "
                               f"{type(module).__name__}:\n\t" + "\n\t".join(msgs))
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    swapped = []
    try:
        for name, value in values.items():
            swapped.append(_swap(module, name, value))
        return module(*args, **(kwargs or {}))
    finally:
        for s in reversed(swapped):
            _restore(*s)
