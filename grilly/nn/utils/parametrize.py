"""``torch.nn.utils.parametrize``: a parameter or buffer computed on access by modules applied
to its stored original(s).

As torch does, a parametrized module's class is swapped for a subclass (``Parametrized<Name>``)
holding a property per parametrized name, so attribute access on every other module is
untouched. The originals live in ``module.parametrizations[name]`` (a ParametrizationList):
``original``, or ``original0``, ``original1``, ... when the first parametrization's
``right_inverse`` returns a sequence; state_dict keys are torch's."""
from __future__ import annotations

import copy
from collections.abc import Sequence
from contextlib import contextmanager
from typing import Iterator

from ...array import api as gp
from ...array.array import Array
from ...autograd.mode import no_grad
from ..module import Module, ModuleDict, ModuleList
from ..parameter import Parameter, is_parameter

__all__ = ["ParametrizationList", "cached", "is_parametrized", "register_parametrization",
           "remove_parametrizations", "transfer_parametrizations_and_params",
           "type_before_parametrizations"]

_cache_enabled = 0
_cache: dict = {}


@contextmanager
def cached() -> Iterator[None]:
    """Within the block, each parametrized tensor is computed once (on first access) and reused."""
    global _cache_enabled, _cache
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache = {}


def _register(module: Module, name: str, x: Array) -> None:
    if is_parameter(x):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _maybe_set(dest: Array, src: Array) -> None:
    """Give ``dest`` the value (and shape) of ``src`` in place, as torch's ``dest.set_(src)``:
    the same object, so an optimizer holding it keeps working."""
    if src is dest:
        return
    with no_grad():
        if dest.shape == src.shape and dest.dtype == src.dtype:
            dest[...] = src
        else:
            new = gp.asarray(src.detach(), copy=True)
            dest._buf, dest._dtype, dest._device = new._buf, new._dtype, new._device


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (children '0', '1', ..., applied in order) and its
    original(s)."""

    def __init__(self, modules: Sequence[Module], original: Array, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        shape, dtype = original.shape, original.dtype
        with no_grad():
            new = original
            for m in reversed(list(self)):
                if hasattr(m, "right_inverse"):
                    try:
                        new = m.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Array, Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Array)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the "
                                 f"dtype.\noriginal.dtype: {dtype}\nright_inverse(original)"
                                 f".dtype: {new.dtype}")
            _maybe_set(original, new)
            _register(self, "original", original)
        else:
            for i, x in enumerate(new):
                if not isinstance(x, Array):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of "
                                     f"tensors (list, tuple...). Got element {i} of the sequence "
                                     f"with type {type(x).__name__}.")
                if is_parameter(original):
                    x = Parameter(x, original.requires_grad)
                else:
                    x.requires_grad = original.requires_grad
                _register(self, f"original{i}", x)
        if not self.unsafe:
            z = self()
            if not isinstance(z, Array):
                raise ValueError("A parametrization must return a tensor. Got "
                                 f"{type(z).__name__}.")
            if z.dtype != dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the "
                                 f"tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"dtype: {dtype}\nparametrized dtype: {z.dtype}")
            if z.shape != shape:
                raise ValueError("Registering a parametrization may not change the shape of the "
                                 f"tensor, unless `unsafe` flag is enabled.\nunparametrized "
                                 f"shape: {shape}\nparametrized shape: {z.shape}")

    def right_inverse(self, value: Array) -> None:
        """Set the original(s) so that the parametrized tensor is ``value`` (each
        parametrization's ``right_inverse``, last to first)."""
        with no_grad():
            for m in reversed(list(self)):
                if not hasattr(m, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(m).__name__} does not implement "
                                       "right_inverse.")
                value = m.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Array):
                    raise ValueError(f"`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _maybe_set(self.original, value)
            else:
                if not isinstance(value, Sequence):
                    raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                                     f"{type(value).__name__}.")
                if len(value) != self.ntensors:
                    raise ValueError("'right_inverse' must return a sequence of tensors of "
                                     f"length {self.ntensors}. Got a sequence of length "
                                     f"{len(value)}.")
                for i, t in enumerate(value):
                    orig = getattr(self, f"original{i}")
                    if not isinstance(t, Array):
                        raise ValueError(f"`right_inverse` must return a sequence of tensors. "
                                         f"Got element {i} of type {type(t).__name__}")
                    if orig.dtype != t.dtype:
                        raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                         f"{t.dtype} while `original{i}` has dtype {orig.dtype}")
                    _maybe_set(orig, t)

    def forward(self) -> Array:
        """The parametrized tensor: the parametrizations applied to the original(s)."""
        mods = list(self._modules.values())
        if self.is_tensor:
            x = mods[0](self.original)
        else:
            x = mods[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for m in mods[1:]:
            x = m(x)
        return x


def _deepcopy(self, memo):
    out = memo.get(id(self))
    if out is not None:
        return out
    out = self.__new__(type(self))
    memo[id(self)] = out
    out.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return out


def _getstate(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict() (save module.state_dict(), then load it into a module "
                       "parametrized the same way)")


def _setattr(self, name: str, value) -> None:
    # a parametrized name's property setter (right_inverse); anything else as Module does
    if isinstance(type(self).__dict__.get(name), property):
        object.__setattr__(self, name, value)
    else:
        Module.__setattr__(self, name, value)


def _inject_new_class(module: Module) -> None:
    cls = type(module)
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__getstate__": _getstate, "__deepcopy__": _deepcopy,
                             "__setattr__": _setattr,
                             "__doc__": f"{cls.__name__} with parametrized tensors."})


def _inject_property(module: Module, tensor_name: str) -> None:
    def get_parametrized(self) -> Array:
        p = self.parametrizations[tensor_name]
        if not _cache_enabled:
            return p()
        key = (id(self), tensor_name)
        t = _cache.get(key)
        if t is None:
            t = _cache[key] = p()
        return t

    def set_original(self, value: Array) -> None:
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(type(module), tensor_name, property(get_parametrized, set_original))


def _is_parametrized_cls(module: Module) -> bool:
    return "__getstate__" in type(module).__dict__ and type(module).__dict__.get(
        "__getstate__") is _getstate


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, or on any tensor)."""
    ps = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(ps, ModuleDict):
        return False
    return len(ps) > 0 if tensor_name is None else tensor_name in ps


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Make ``module.<tensor_name>`` the output of ``parametrization`` applied to its stored
    original (appended to the existing ones when already parametrized)."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"register_parametrization: parametrization must be a Module, got "
                        f"{type(parametrization).__name__}")
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Array):
                raise ValueError(f"A parametrization must return a tensor. Got "
                                 f"{type(x).__name__}.")
            if x.dtype != y.dtype or x.shape != y.shape:
                raise ValueError("Registering a parametrization may not change the dtype or "
                                 "shape of the tensor, unless `unsafe` flag is enabled.\n"
                                 f"module.{tensor_name}: {y.dtype} {y.shape}\n"
                                 f"parametrization(module.{tensor_name}): {x.dtype} {x.shape}")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Array):
                        raise ValueError(f"parametrization.right_inverse must return a tensor. "
                                         f"Got: {type(z).__name__}")
                    if z.dtype != y.dtype or z.shape != y.shape:
                        raise ValueError("The tensor returned by parametrization.right_inverse "
                                         "must have the same dtype and shape as "
                                         f"module.{tensor_name}")
        plist = module.parametrizations[tensor_name]
        plist.append(parametrization)
        plist.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            if not _is_parametrized_cls(module):
                _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"Module '{type(module).__name__}' does not have a parameter, a buffer, "
                         f"or a parametrized element with name '{tensor_name}'")
    return module


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Undo the parametrizations on ``tensor_name``: it becomes a plain parameter (or buffer)
    again, holding the parametrized value (``leave_parametrized``) or the original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {type(module).__name__} does not have a parametrization on "
                         f"{tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            _maybe_set(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                             "that is parametrized in terms of a sequence of tensors.")
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """The module's class before parametrization (its class when not parametrized)."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Copy the parametrizations (and their originals' values) of ``from_module`` onto
    ``to_module`` (all of them, or only ``tensor_name``'s)."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        src = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            if not hasattr(to_module, name):
                _register(to_module, name, Parameter(gp.asarray(getattr(from_module, name)
                                                                .detach(), copy=True)))
            for p in src:
                register_parametrization(to_module, name, p)
            dst = to_module.parametrizations[name]
            with no_grad():
                if src.is_tensor:
                    _maybe_set(dst.original, src.original)
                else:
                    for i in range(src.ntensors):
                        _maybe_set(getattr(dst, f"original{i}"), getattr(src, f"original{i}"))
        else:
            for p in src:
                register_parametrization(to_module, name, p)
    return to_module
