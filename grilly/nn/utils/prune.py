"""``torch.nn.utils.prune``: a parameter ``name`` becomes ``name + "_orig"`` (the parameter
trained) times the buffer ``name + "_mask"``, recomputed by a forward pre-hook, as torch's.
Pruning the same parameter again prunes among what is left (a PruningContainer); ``remove``
makes the pruning permanent. Random methods draw from grilly.random's default generator (so
``nn.manual_seed`` makes them reproducible; torch's own random masks are not reproduced)."""
from __future__ import annotations

import numbers
from typing import Any, TypeVar

from ...array import api as gp
from ...autograd.mode import no_grad
from .. import _random
from ..module import Module
from ..parameter import Parameter
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured",
           "PruningContainer", "RandomStructured", "RandomUnstructured", "custom_from_mask",
           "global_unstructured", "identity", "is_pruned", "l1_unstructured", "ln_structured",
           "random_structured", "random_unstructured", "remove"]

T_module = TypeVar("T_module", bound=Module)


def _hooks(module: Module) -> dict:
    """hook id -> hook of the module's forward pre-hooks."""
    d = module.__dict__.get("_forward_pre_hooks") or {}
    return {k: v[0] for k, v in d.items()}


def _check_amount(amount, op: str) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"{op}: amount must be an int or a float, got {type(amount).__name__}")
    if isinstance(amount, numbers.Integral) and amount < 0 or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"{op}: amount={amount} should be a float in [0, 1] or a non-negative "
                         "integer")


def _count(amount, size: int, op: str) -> int:
    """How many of ``size`` units ``amount`` prunes (a fraction rounds half to even, as torch)."""
    k = int(amount) if isinstance(amount, numbers.Integral) else round(float(amount) * size)
    if k > size:
        raise ValueError(f"{op}: amount={amount} should be at most the number of units to prune "
                         f"({size})")
    return k


def _lowest(scores, live, k: int):
    """A 0/1 array (scores' dtype) that is 0 at the ``k`` lowest ``scores`` among ``live`` ones."""
    big = gp.where(live, scores, gp.asarray(float("inf"), dtype=scores.dtype,
                                               device=scores.device))
    # ranks (stable): the k lowest live entries have rank < k; dead ones rank last
    rank = gp.argsort(gp.argsort(big, stable=True), stable=True)
    return gp.astype(rank >= k, scores.dtype)


class BasePruningMethod:
    """A pruning rule: ``compute_mask(t, default_mask)`` gives the new mask; as a forward
    pre-hook it sets ``module.<name>`` to ``<name>_orig * <name>_mask``."""

    PRUNING_TYPE = "unstructured"
    _tensor_name: str | None = None

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        """The mask for importance scores ``t``, on top of ``default_mask``."""
        raise NotImplementedError(f"{type(self).__name__}: compute_mask is not implemented")

    def apply_mask(self, module: Module):
        """``<name>_orig`` times ``<name>_mask`` (differentiable in the original)."""
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return gp.astype(mask, orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores=None, **kwargs):
        """Prune parameter ``name`` of ``module`` with ``cls(*args, **kwargs)`` (combined with
        an earlier pruning of it) and register the forward pre-hook."""
        op = cls.__name__
        old = [(k, h) for k, h in _hooks(module).items()
               if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            # pruned before: the new method prunes among what is left (a container of both)
            key, prev = old[0]
            method = PruningContainer(*(prev if isinstance(prev, PruningContainer) else [prev]),
                                      method)
        elif name not in module._parameters or module._parameters[name] is None:
            raise ValueError(f"{op}: {type(module).__name__} has no parameter {name!r}")
        orig = getattr(module, name + "_orig") if old else getattr(module, name)
        if importance_scores is None:
            importance_scores = getattr(module, name) if old else orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(f"{op}: importance_scores has shape "
                             f"{tuple(importance_scores.shape)}, parameter {name!r} "
                             f"{tuple(orig.shape)}")
        default = gp.asarray(getattr(module, name + "_mask"), copy=True) if old else \
            gp.ones_like(orig)
        # the mask first: a bad amount or dim leaves the module as it was
        with no_grad():
            mask = method.compute_mask(gp.asarray(importance_scores).detach(), default)
        if old:
            del module.__dict__["_forward_pre_hooks"][key]
        else:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask computed from ``importance_scores`` (default ``t``)."""
        scores = t if importance_scores is None else importance_scores
        default = gp.ones_like(t) if default_mask is None else default_mask
        return t * self.compute_mask(scores, default)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: ``<name>`` becomes the parameter again (the same
        Parameter object as ``<name>_orig``, its pruned entries zeroed)."""
        name = self._tensor_name
        with no_grad():
            weight = self.apply_mask(module)
        module.__dict__.pop(name, None)
        orig = module._parameters.pop(name + "_orig")
        with no_grad():
            orig[...] = weight   # in place: an optimizer holding the parameter keeps it
        del module._buffers[name + "_mask"]
        setattr(module, name, orig if isinstance(orig, Parameter) else Parameter(orig))


class PruningContainer(BasePruningMethod):
    """The pruning methods applied in turn to one parameter: each new one prunes among the
    entries (unstructured) or channels (structured) the earlier ones left."""

    def __init__(self, *methods) -> None:
        self._pruning_methods: tuple = ()
        for m in methods:
            if self._tensor_name is None:
                self._tensor_name = m._tensor_name
            self.add_pruning_method(m)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append ``method`` (it must act on the same parameter)."""
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"PruningContainer: {type(method).__name__} is not a pruning method")
        if method._tensor_name != self._tensor_name:
            raise ValueError(f"PruningContainer: holds methods for {self._tensor_name!r}, got "
                             f"one for {method._tensor_name!r}")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, i):
        return self._pruning_methods[i]

    def compute_mask(self, t, default_mask):
        """The latest method's mask, computed where ``default_mask`` left something."""
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            return method._mask(t, default_mask, default_mask != 0)
        if kind == "structured":
            dim = _dim(t, method.dim, type(method).__name__)
            other = tuple(d for d in range(t.ndim) if d != dim)
            return method._mask(t, default_mask, gp.sum(default_mask, axis=other) != 0)
        if kind == "global":
            return method.compute_mask(t, default_mask)
        raise ValueError(f"PruningContainer: unknown PRUNING_TYPE {kind!r}")


class Identity(BasePruningMethod):
    """Prunes nothing (a mask of ones)."""

    def compute_mask(self, t, default_mask):
        """``default_mask`` as it is."""
        return default_mask

    def _mask(self, t, default_mask, live):
        return default_mask


class _Unstructured(BasePruningMethod):
    def __init__(self, amount) -> None:
        _check_amount(amount, type(self).__name__)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """``default_mask`` with ``amount`` more entries zeroed (of all of ``t``)."""
        return self._mask(t, default_mask, gp.ones_like(t, dtype=gp.bool))

    def _mask(self, t, default_mask, live):
        # the amount counts the live entries (those an earlier pruning left)
        n = int(gp.sum(gp.astype(live, gp.int64)))
        k = _count(self.amount, n, type(self).__name__)
        if k == 0:
            return default_mask
        keep = _lowest(gp.reshape(self._scores(t), (-1,)), gp.reshape(live, (-1,)), k)
        return default_mask * gp.reshape(gp.astype(keep, default_mask.dtype), default_mask.shape)


class RandomUnstructured(_Unstructured):
    """Prune ``amount`` (a count, or a fraction) of the entries, at random."""

    def _scores(self, t):
        return _random.uniform(tuple(t.shape), dtype=gp.float32, device=t.device,
                               op="random_unstructured")

    @classmethod
    def apply(cls, module: Module, name: str, amount):
        """See BasePruningMethod.apply."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prune ``amount`` (a count, or a fraction) of the entries of smallest absolute value."""

    def _scores(self, t):
        return gp.abs(t)

    @classmethod
    def apply(cls, module: Module, name: str, amount, importance_scores=None):
        """See BasePruningMethod.apply."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _dim(t, dim: int, op: str) -> int:
    if t.ndim <= 1:
        raise ValueError(f"{op}: structured pruning needs a tensor of 2 or more dimensions, got "
                         f"shape {tuple(t.shape)}")
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"{op}: dim {dim} is out of range for shape {tuple(t.shape)}")
    return dim % t.ndim


class _Structured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        """``default_mask`` with ``amount`` channels along ``dim`` zeroed."""
        d = _dim(t, self.dim, type(self).__name__)
        return self._mask(t, default_mask, gp.ones(t.shape[d], dtype=gp.bool, device=t.device))

    def _mask(self, t, default_mask, live):
        op = type(self).__name__
        d = _dim(t, self.dim, op)
        n = int(gp.sum(gp.astype(live, gp.int64)))
        k = _count(self.amount, n, op)
        if k == 0:
            return default_mask
        keep = _lowest(self._channel_scores(t, d), live, k)
        shape = [1] * t.ndim
        shape[d] = t.shape[d]
        return default_mask * gp.reshape(gp.astype(keep, default_mask.dtype), tuple(shape))


class RandomStructured(_Structured):
    """Prune ``amount`` channels along ``dim``, at random."""

    def __init__(self, amount, dim: int = -1) -> None:
        _check_amount(amount, "RandomStructured")
        self.amount, self.dim = amount, dim

    def _channel_scores(self, t, d: int):
        return _random.uniform((t.shape[d],), dtype=gp.float32, device=t.device,
                               op="random_structured")

    @classmethod
    def apply(cls, module: Module, name: str, amount, dim: int = -1):
        """See BasePruningMethod.apply."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm (``n``: a number,
    ``inf``, ``-inf`` or ``'fro'``)."""

    def __init__(self, amount, n, dim: int = -1) -> None:
        _check_amount(amount, "LnStructured")
        if n == "fro":
            n = 2
        if isinstance(n, bool) or not isinstance(n, numbers.Real):
            raise ValueError(f"LnStructured: n must be a number, inf, -inf or 'fro', got {n!r}")
        self.amount, self.n, self.dim = amount, n, dim

    def _channel_scores(self, t, d: int):
        other = tuple(i for i in range(t.ndim) if i != d)
        return gp.linalg.vector_norm(t, ord=float(self.n), axis=other)

    @classmethod
    def apply(cls, module: Module, name: str, amount, n, dim: int,
              importance_scores=None):
        """See BasePruningMethod.apply."""
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune where the given ``mask`` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask) -> None:
        self.mask = mask

    def compute_mask(self, t, default_mask):
        """``default_mask`` times ``mask``."""
        if tuple(self.mask.shape) != tuple(default_mask.shape):
            raise ValueError(f"CustomFromMask: mask has shape {tuple(self.mask.shape)}, the "
                             f"parameter {tuple(default_mask.shape)}")
        m = gp.asarray(self.mask, device=default_mask.device)
        return default_mask * gp.astype(m, default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask):
        """See BasePruningMethod.apply."""
        return super().apply(module, name, mask=mask)


def identity(module: T_module, name: str) -> T_module:
    """Prune nothing, but reparametrize ``name`` as ``name_orig * name_mask``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: T_module, name: str, amount) -> T_module:
    """Prune ``amount`` entries of ``module.<name>`` at random."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: T_module, name: str, amount, importance_scores=None) -> T_module:
    """Prune the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` where given)."""
    L1Unstructured.apply(module, name, amount, importance_scores=importance_scores)
    return module


def random_structured(module: T_module, name: str, amount, dim: int) -> T_module:
    """Prune ``amount`` channels of ``module.<name>`` along ``dim`` at random."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: T_module, name: str, amount, n, dim: int,
                  importance_scores=None) -> T_module:
    """Prune the ``amount`` channels along ``dim`` of smallest L``n`` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module: T_module, name: str, mask) -> T_module:
    """Prune ``module.<name>`` where ``mask`` is 0."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prune the (module, name) pairs of ``parameters`` together, as one vector, with the
    unstructured ``pruning_method`` class (e.g. ``L1Unstructured``, ``amount=...``)."""
    if isinstance(parameters, (str, Module)) or not hasattr(parameters, "__iter__"):
        raise TypeError("global_unstructured: parameters must be an iterable of (module, name) "
                        f"pairs, got {type(parameters).__name__}")
    parameters = list(parameters)
    scores = {} if importance_scores is None else importance_scores
    if not isinstance(scores, dict):
        raise TypeError("global_unstructured: importance_scores must be a dict of (module, name) "
                        f"-> Array, got {type(scores).__name__}")
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f"global_unstructured: only unstructured pruning methods can prune "
                        f"globally, got {pruning_method.__name__} ({method.PRUNING_TYPE})")
    with no_grad():
        # (a pruned parameter's scores are its pruned values, zeros where pruned, as torch's)
        t = parameters_to_vector([gp.asarray(scores.get((m, n), getattr(m, n))).detach()
                                  for m, n in parameters])
        default = parameters_to_vector([getattr(m, n + "_mask", None)
                                        if hasattr(m, n + "_mask") else
                                        gp.ones_like(getattr(m, n)) for m, n in parameters])
        default = gp.astype(default, t.dtype)
        mask = method._mask(t, default, default != 0)
    start = 0
    for m, n in parameters:
        p = getattr(m, n)
        size = int(p.size)
        custom_from_mask(m, n, gp.reshape(mask[start:start + size], p.shape))
        start += size


def remove(module: T_module, name: str) -> T_module:
    """Make the pruning of ``module.<name>`` permanent (drop ``name_orig``, ``name_mask`` and
    the hook); ``name`` is a plain parameter again, pruned entries zero."""
    for k, hook in _hooks(module).items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module.__dict__["_forward_pre_hooks"][k]
            return module
    raise ValueError(f"remove: parameter {name!r} of {type(module).__name__} has to be pruned "
                     "before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether ``module`` or a submodule has a pruning hook."""
    return any(isinstance(h, BasePruningMethod)
               for m in module.modules() for h in _hooks(m).values())
