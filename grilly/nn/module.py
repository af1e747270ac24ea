"""``Module`` (parameters, buffers, submodules, state dicts, devices) and the containers
``Sequential``, ``ModuleList`` and ``ModuleDict``."""
from __future__ import annotations

import functools
from collections import OrderedDict, namedtuple
from collections.abc import Mapping
from typing import Any, Iterable, Iterator

import numpy as np

from ..array import api as gp
from ..array.dispatch import hooks as _hooks
from ..array.dispatch import structure_epoch as _EPOCH
from ..autograd import no_grad

from . import hooks as _nn_hooks
from .parameter import Parameter, is_parameter

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "IncompatibleKeys"]

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class _IncompatibleKeys(IncompatibleKeys):
    """(missing_keys, unexpected_keys), shown as torch shows it when both are empty."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _LoadStateDictError(RuntimeError, ValueError):
    """A failed ``load_state_dict``: a RuntimeError as torch raises (and a ValueError, which
    grilly raised for a shape mismatch before)."""


def _prefixed(module: "Module", prefix: str = ""):
    """(key prefix, module) for ``module`` and every descendant, as state_dict names them."""
    yield prefix, module
    for name, m in module._modules.items():
        if m is not None:
            yield from _prefixed(m, prefix + name + ".")


def _stage(src, shape: tuple):
    """(value to copy, None) or (None, what is wrong with it) for a state-dict value that
    must fill an array of ``shape``; checked before a load writes anything."""
    if isinstance(src, gp.Array):
        got = tuple(src.shape)
    elif hasattr(src, "__dlpack__") and hasattr(src, "shape") and not isinstance(src, np.ndarray):
        # a torch tensor (or another DLPack producer): its data, outside its autograd graph
        if getattr(src, "is_meta", False) or str(getattr(src, "device", "")) == "meta":
            return None, "is a tensor on the 'meta' device, which holds no data"
        if callable(getattr(src, "detach", None)):
            src = src.detach()
        got = tuple(src.shape)
    else:
        kind = type(src).__name__
        try:
            src = np.asarray(src)
        except (TypeError, ValueError, OverflowError) as e:
            return None, f"is not array data ({e})"
        if src.dtype.kind not in "biufcV" or src.dtype.fields is not None or (
                src.dtype.kind == "V" and src.dtype.name != "bfloat16"):
            return None, f"is not numeric data (a {kind} of dtype {src.dtype})"
        got = src.shape
    if got != shape:
        return None, f"has shape {got} in the state dict but {shape} in the module"
    return src, None


def _hook_list(module: "Module", attr: str) -> list:
    """The hooks in ``module``'s table ``attr`` (none until one is registered)."""
    d = module.__dict__.get(attr)
    return list(d.values()) if d else []


def _add_state_hook(module: "Module", attr: str, value) -> _nn_hooks.RemovableHandle:
    """Register ``value`` in ``module``'s state-dict hook table ``attr`` (made on first use)."""
    d = module.__dict__.get(attr)
    if d is None:
        d = _nn_hooks._HookDict()
        object.__setattr__(module, attr, d)
    handle = _nn_hooks.RemovableHandle(d)
    d[handle.id] = value
    return handle


_EXTRA = "_extra_state"   # torch's key suffix for get_extra_state's value


def _overrides(module: "Module", name: str) -> bool:
    """Whether ``module``'s class overrides Module's ``name`` (torch decides by this whether a
    module has extra state)."""
    return getattr(type(module), name) is not getattr(Module, name)


def _no_grad():
    """A no_grad() block: state copies must not be recorded."""
    return no_grad()


def _set_extra(extra: list) -> None:
    """Call set_extra_state for each (module, key, state); if one raises, the modules set before
    it get their earlier state back (where they can give it), so a failed load leaves the model
    as it was, and the error (its type kept, as torch raises it) names the key."""
    done: list = []
    for module, key, state in extra:
        try:
            old = module.get_extra_state() if _overrides(module, "get_extra_state") else None
            module.set_extra_state(state)
        except Exception as e:
            for m, o in reversed(done):
                m.set_extra_state(o)
            if hasattr(e, "add_note"):   # (Python 3.11+)
                e.add_note(f"load_state_dict: while loading {key!r}")
            raise
        if _overrides(module, "get_extra_state"):
            done.append((module, old))


def _addindent(s: str, n: int) -> str:
    lines = s.split("\n")
    return lines[0] + "".join("\n" + " " * n + ln for ln in lines[1:])


class _Registry(_nn_hooks._Tracked):
    """A module's parameters, buffers or submodules: an OrderedDict whose changes grilly.jit's
    replay guards see (_Tracked); pickled as a plain OrderedDict (Module.__setstate__ makes
    it a _Registry again), so saved modules load in any version."""

    def __reduce__(self):
        return OrderedDict, (), None, None, iter(self.items())


_REGISTRIES = ("_parameters", "_buffers", "_modules")


# what Module.__init__ sets: never a parameter, buffer or submodule name
_RESERVED = frozenset(("training", "_parameters", "_buffers", "_non_persistent", "_modules"))


class Module:
    """Base class of every layer: holds parameters, buffers and submodules (as in PyTorch)."""

    training: bool
    _version: int = 1   # torch's state-dict metadata version (local_metadata["version"])
    _hooked = False   # set on an instance once a hook is registered (__call__ then runs them)

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", _Registry())
        object.__setattr__(self, "_buffers", _Registry())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", _Registry())

    def __setstate__(self, state: dict) -> None:
        # pickle rebuilds each Array plainly: mark the parameters again (copy.deepcopy's hook
        # does it for a deep copy), so a loaded model's parameters are still nn.Parameter
        self.__dict__.update(state)
        d = self.__dict__
        for k in _REGISTRIES:   # (pickled as OrderedDicts, or by a version before _Registry)
            if k in d and type(d[k]) is not _Registry:
                d[k] = _Registry(d[k])
        _EPOCH[0] += 1
        for p in self.__dict__.get("_parameters", {}).values():
            if p is not None and not is_parameter(p):
                Parameter(p, p.requires_grad)

    # ---- registration -------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"{type(self).__name__}: call Module.__init__() before assigning "
                                 f"attribute {name!r}")
        h = _hooks.module_setattr
        if h is not None:   # grilly.jit's tracer: state the traced Python replaces
            h(self, name)
        _EPOCH[0] += 1   # (grilly.jit's replay guards re-check after any assignment)
        params, bufs, mods = d["_parameters"], d["_buffers"], d["_modules"]
        if is_parameter(value):
            self._drop(name, params)
            params[name] = value
        elif isinstance(value, Module):
            self._drop(name, mods)
            mods[name] = value
        elif name in params:
            if value is not None:
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} to "
                                f"parameter {name!r} (expected nn.Parameter or None)")
            params[name] = None
        elif name in mods:
            if value is not None:
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} to "
                                f"submodule {name!r} (expected a Module or None)")
            mods[name] = None
        elif name in bufs:
            if value is not None and not isinstance(value, gp.Array):
                raise TypeError(f"{type(self).__name__}: buffer {name!r} must be an Array or None")
            bufs[name] = value
        else:
            object.__setattr__(self, name, value)

    def _drop(self, name: str, keep: dict | None = None) -> None:
        """Forget ``name`` everywhere but in ``keep``, the dict it is about to be set in: a
        parameter reassigned (weight tying) keeps its place in the order of parameters(),
        state_dict() and an optimizer's groups, as in torch."""
        d = self.__dict__
        d.pop(name, None)
        for k in ("_parameters", "_buffers", "_modules"):
            if d[k] is not keep:
                d[k].pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        # (unrolled: every layer call reads its parameters through here)
        t = d.get("_parameters")
        if t is not None and name in t:
            return t[name]
        t = d.get("_buffers")
        if t is not None and name in t:
            return t[name]
        t = d.get("_modules")
        if t is not None and name in t:
            return t[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        _EPOCH[0] += 1
        for k in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__[k]:
                del self.__dict__[k][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    def _check_name(self, op: str, name, kind: str) -> None:
        """torch's checks of a name registered by ``op``: a non-empty string without dots (a
        dotted name would make state_dict keys ambiguous), not a parameter, buffer or submodule
        of another kind (re-registering the same kind replaces it), nor the module's own
        bookkeeping. Unlike torch, a plain instance attribute is replaced (``self.bias = None``
        before ``register_parameter("bias", None)``) and a class attribute is not checked (the
        snnTorch ports register ``threshold`` beside a property of that name)."""
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"{op}: call Module.__init__() before registering {name!r}")
        if not isinstance(name, str):
            raise TypeError(f"{op}: name should be a string, got {type(name).__name__}")
        if not name:
            raise KeyError(f"{op}: name can't be empty string \"\"")
        if "." in name:
            raise KeyError(f"{op}: name can't contain \".\", got: {name}")
        taken = any(name in d[k] for k in ("_parameters", "_buffers", "_modules") if k != kind)
        if taken or name in _RESERVED:
            raise KeyError(f"{op}: attribute {name!r} already exists")

    def register_parameter(self, name: str, param) -> None:
        """Add a parameter (an Array marked by Parameter, or None) under ``name``."""
        self._check_name("register_parameter", name, "_parameters")
        if param is not None and not is_parameter(param):
            raise TypeError(f"register_parameter: {name!r} must be an nn.Parameter or None, got "
                            f"{type(param).__name__}")
        self._drop(name, self._parameters)
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add a non-trainable Array (or None) kept in state_dict when ``persistent``."""
        self._check_name("register_buffer", name, "_buffers")
        if tensor is not None and not isinstance(tensor, gp.Array):
            raise TypeError(f"register_buffer: {name!r} must be a grilly Array or None, got "
                            f"{type(tensor).__name__}")
        self._drop(name, self._buffers)
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module or None, got "
                            f"{type(module).__name__}")
        self._check_name("add_module", name, "_modules")
        self._drop(name, self._modules)
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path ``target`` ('' is self)."""
        if not isinstance(target, str):
            raise TypeError(f"get_submodule: target must be a dotted name (a str), got "
                            f"{type(target).__name__}")
        mod = self
        for part in target.split(".") if target else ():
            if part not in mod._modules:
                raise AttributeError(f"get_submodule: {type(mod).__name__} has no submodule {part!r}")
            mod = mod._modules[part]
        return mod

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put ``module`` at dotted path ``target`` (strict: only where one is already)."""
        if not target:
            raise ValueError("set_submodule: cannot set the module itself (target is '')")
        if not isinstance(module, Module):
            raise TypeError(f"set_submodule: module must be a Module, got {type(module).__name__}")
        path, _, name = target.rpartition(".")
        parent = self.get_submodule(path)
        if strict and name not in parent._modules:
            raise AttributeError(f"set_submodule: {type(parent).__name__} has no submodule "
                                 f"{name!r} (strict=True)")
        if name in parent._parameters or name in parent._buffers:
            raise AttributeError(f"set_submodule: {name!r} is a parameter or buffer of "
                                 f"{type(parent).__name__}, not a submodule")
        if name in parent._modules:
            parent._modules[name] = module   # in its place (a Sequential's order is its order)
        else:
            setattr(parent, name, module)

    def get_parameter(self, target: str):
        """The parameter at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._parameters:
            raise AttributeError(f"get_parameter: {type(mod).__name__} has no parameter {name!r}")
        return mod._parameters[name]

    def get_buffer(self, target: str):
        """The buffer at dotted path ``target``."""
        path, _, name = target.rpartition(".")
        mod = self.get_submodule(path)
        if name not in mod._buffers:
            raise AttributeError(f"get_buffer: {type(mod).__name__} has no buffer {name!r}")
        return mod._buffers[name]

    # ---- iteration ----------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True
                      ) -> Iterator[tuple[str, "Module"]]:
        """(dotted name, module) for self and every descendant, each module once (under every
        name it has when ``remove_duplicate`` is False)."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        """Self and every descendant module."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """(name, module) for the direct children."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator["Module"]:
        """The direct child modules."""
        for _, m in self.named_children():
            yield m

    def _named(self, kind: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, v in getattr(m, kind).items():
                if v is None or id(v) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(v))
                yield (f"{mp}.{name}" if mp else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """(dotted name, parameter) pairs, each parameter once (under every name it has when
        ``remove_duplicate`` is False)."""
        return self._named("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        """Every parameter, each once."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """(dotted name, buffer) pairs."""
        return self._named("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        """Every buffer."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- modes and gradients ------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on self, then ``child.train(mode)`` on each child (as torch's, so
        a child that overrides ``train``, e.g. to keep frozen BatchNorms in eval, decides)."""
        if not isinstance(mode, bool):
            raise ValueError(f"train: mode must be a bool, got {type(mode).__name__}")
        object.__setattr__(self, "training", mode)
        _EPOCH[0] += 1
        for m in self.children():
            m.train(mode)
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (``train(False)``)."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set requires_grad on every parameter."""
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (None, or zeros when ``set_to_none`` is False)."""
        for p in self.parameters():
            if p.grad is not None:
                p.grad = None if set_to_none else gp.zeros_like(p.grad)

    def apply(self, fn) -> "Module":
        """Call ``fn`` on every descendant then on self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- devices and dtypes -------------------------------------------------------------
    def to(self, device=None, dtype=None, non_blocking: bool = False) -> "Module":
        """Move (and cast floating) parameters and buffers in place; parameters stay parameters.
        ``to(array)`` takes the array's device (and its dtype, where floating); ``non_blocking``
        changes nothing (every copy is done when it returns). A module's kept state
        (``_to_state``, e.g. a spiking neuron's membrane) moves too."""
        if isinstance(device, gp.Array):
            other = device
            device = other.device
            if dtype is None and gp.isdtype(other.dtype, "real floating"):
                dtype = other.dtype
        elif isinstance(device, gp.DType):
            device, dtype = None, device
        if isinstance(dtype, str):   # a dtype's name, as the namespace's functions take it
            dtype = gp.dtype(dtype)
        if dtype is not None and not gp.isdtype(dtype, "real floating"):
            raise TypeError(f"Module.to: dtype must be a real floating dtype, got {dtype}")

        def conv(a):
            if dtype is not None and gp.isdtype(a.dtype, "real floating") and a.dtype != dtype:
                a = gp.astype(a, dtype)
            if device is not None:
                a = a.to_device(device)
            return a

        return self._convert(conv)

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer, integer ones included (as torch's Module.type), to
        ``dst_type``: a dtype or a torch type name such as ``"torch.DoubleTensor"``."""
        try:   # Array.type's reading of dst_type (dtypes, names, torch's type names)
            dtype = gp.zeros((0,), dtype=gp.float32).type(dst_type).dtype
        except (TypeError, ValueError) as e:
            raise type(e)(f"Module.type: {e}") from None
        if dtype.kind not in "fc":
            for name, p in self.named_parameters():
                if p.requires_grad:   # checked before anything is cast (torch casts some first)
                    raise RuntimeError(f"Module.type: parameter {name!r} requires grad and "
                                       f"cannot be cast to the non-floating dtype {dtype}")

        def conv(a):
            return a if a.dtype == dtype else gp.astype(a, dtype)

        return self._convert(conv)

    def _convert(self, conv) -> "Module":
        """Apply ``conv`` to every parameter (in place), its gradient, buffer and kept state."""
        with _no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is not None:
                        # in place, as torch's param.data = ...: the same Parameter object
                        # (an optimizer made before .to() holds it), its gradient moved along
                        new = conv(p)
                        if new is not p:
                            p._buf, p._dtype, p._device = new._buf, new._dtype, new._device
                        g = p.grad
                        if g is not None and (g._device is not p._device
                                              or g._dtype is not p._dtype):
                            p.grad = conv(g)
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = conv(b)
        # what a module keeps between calls beyond its parameters and buffers (a spiking
        # neuron's membrane, SpikingJelly's memories) goes along, where the module's class
        # says how (``_to_state(conv)``): a kept state left on the old device or in the old
        # dtype would fail the next call. Outside no_grad: a state inside a graph stays in it
        for m in self.modules():
            hook = getattr(type(m), "_to_state", None)
            if hook is not None:
                hook(m, conv)
        return self

    def to_device(self, device) -> "Module":
        """``to(device)``."""
        return self.to(device)

    def float(self) -> "Module":
        """Cast floating parameters and buffers to float32."""
        return self.to(dtype=gp.float32)

    def double(self) -> "Module":
        """Cast floating parameters and buffers to float64."""
        return self.to(dtype=gp.float64)

    def half(self) -> "Module":
        """Cast floating parameters and buffers to float16."""
        return self.to(dtype=gp.float16)

    def bfloat16(self) -> "Module":
        """Cast floating parameters and buffers to bfloat16."""
        return self.to(dtype=gp.bfloat16)

    def cpu(self) -> "Module":
        """``to("cpu")``."""
        return self.to("cpu")

    # ---- state dicts --------------------------------------------------------------------
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name: detached arrays sharing their memory,
        as torch's (changed in place without no_grad), or with ``keep_vars`` the arrays
        themselves. State-dict pre- and post-hooks run as torch's."""
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()   # torch's per-module {"version": ...}
        local_metadata = {"version": self._version}
        meta = getattr(destination, "_metadata", None)
        if meta is not None:
            meta[prefix[:-1]] = local_metadata
        for hook in _hook_list(self, "_state_dict_pre_hooks"):
            hook(self, prefix, keep_vars)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                destination[prefix + name] = b if keep_vars else b.detach()
        if _overrides(self, "get_extra_state"):
            destination[prefix + _EXTRA] = self.get_extra_state()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination, prefix + name + ".", keep_vars)
        for hook, public in _hook_list(self, "_state_dict_hooks"):
            res = hook(self, destination, prefix, local_metadata)
            if public and res is not None:
                raise RuntimeError(f"state_dict: {type(self).__name__}: a state_dict post-hook "
                                   "must return None (change the state dict in place)")
            if not public and res is not None:   # the private API's hooks may replace it
                destination = res
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy values (Arrays, numpy arrays, torch tensors, lists) into parameters and buffers in
        place. Every key is checked (missing and unexpected keys under ``strict``, shapes, values
        that are not numeric data) before anything is written, so a failed load raises a
        RuntimeError listing every problem and leaves the module as it was (where a load post-hook
        is registered, the strict key check follows the hooks, after the values are written, as
        torch's). Load pre- and post-hooks run as torch's."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"load_state_dict: expected a mapping of name -> array, got "
                            f"{type(state_dict).__name__}")
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)    # a copy: the pre-hooks may change it
        if metadata is not None:
            state_dict._metadata = metadata
        missing: list = []
        unexpected: list = [k for k in state_dict if not isinstance(k, str)]
        errors: list = []     # torch's error_msgs: the pre-hooks may add to it
        staged: list = []
        extra: list = []      # (module, key, value) for set_extra_state
        with_post: list = []

        def plan(module: Module, local: dict, prefix: str) -> None:
            # torch's load(): this module's pre-hooks, its own keys, then each child's with the
            # keys under the child's prefix, then (after the children) its post-hooks
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = assign
            for hook in _hook_list(module, "_load_state_dict_pre_hooks"):
                hook(local, prefix, local_metadata, True, missing, unexpected, errors)
            own = {n: p for n, p in module._parameters.items() if p is not None}
            own.update((n, b) for n, b in module._buffers.items()
                       if b is not None and n not in module._non_persistent)
            # keys a checkpoint may lack (BatchNorm's num_batches_tracked, which old torch
            # checkpoints do not have): torch fills them in, so they are not reported missing
            optional = getattr(type(module), "_optional_state", ())
            for name, dst in own.items():
                key = prefix + name
                if key in local:
                    src, problem = _stage(local[key], tuple(dst.shape))
                    if problem is not None:
                        errors.append(f"{key!r} {problem}")
                    else:
                        # assign keeps a typed value's dtype (an Array's device too), as torch's
                        typed = isinstance(local[key], (gp.Array, np.ndarray)) or hasattr(
                            local[key], "__dlpack__")
                        staged.append((module, name, key, dst, src, typed))
                elif name not in optional:
                    missing.append(key)
            # torch's extra state: given to set_extra_state where the class overrides it (missing
            # if absent, unless the class lists it in _optional_state), else an unexpected key
            key = prefix + _EXTRA
            if _overrides(module, "set_extra_state"):
                if key in local:
                    extra.append((module, key, local[key]))
                elif _EXTRA not in optional:
                    missing.append(key)
            elif key in local:
                unexpected.append(key)
            for key in local:
                if isinstance(key, str) and key.startswith(prefix) and key != prefix + _EXTRA:
                    head = key[len(prefix):].split(".", 1)
                    if (head[0] not in module._modules) if len(head) > 1 else (head[0] not in own):
                        unexpected.append(key)
            for name, child in module._modules.items():
                if child is not None:
                    cp = prefix + name + "."
                    plan(child, {k: v for k, v in local.items()
                                 if isinstance(k, str) and k.startswith(cp)}, cp)
            if _hook_list(module, "_load_state_dict_post_hooks"):
                with_post.append(module)

        plan(self, state_dict, "")

        def fail(problems: list) -> None:
            if strict and (missing or unexpected):
                problems = [f"missing keys {missing}, unexpected keys {unexpected}"] + problems
            if problems:
                raise _LoadStateDictError(f"load_state_dict: {type(self).__name__}: "
                                          + "; ".join(problems))

        fail(errors) if (errors or not with_post) else None
        with _no_grad():
            converted = []
            for module, name, key, dst, src, typed in staged:
                # assign: a typed value keeps its dtype (NumPy or DLPack data on the module's
                # device); otherwise the module's dtype and device
                keep = assign and typed
                if not (isinstance(src, gp.Array) and (keep or (src.dtype == dst.dtype
                                                                 and src.device == dst.device))):
                    try:
                        src = gp.asarray(src, device=dst.device) if keep else \
                            gp.asarray(src, dtype=dst.dtype, device=dst.device)
                    except (TypeError, ValueError, OverflowError) as e:
                        raise _LoadStateDictError(
                            f"load_state_dict: {type(self).__name__}: {key!r} cannot be copied "
                            f"into a {dst.dtype.name} array ({e})") from None
                converted.append((module, name, dst, src))
            _set_extra(extra)
            for module, name, dst, src in converted:
                if assign:
                    # a Parameter sharing the value's memory (torch's nn.Parameter(value)): the
                    # caller's array is not marked and keeps its requires_grad
                    val = Parameter(src.detach(), dst.requires_grad) if is_parameter(dst) else src
                    (module._parameters if name in module._parameters else module._buffers)[name] = val
                else:
                    dst[...] = src
        for module in with_post:
            keys = _IncompatibleKeys(missing, unexpected)   # the hooks may edit the lists in place
            for hook in _hook_list(module, "_load_state_dict_post_hooks"):
                if hook(module, keys) is not None:
                    raise AssertionError("load_state_dict: a load_state_dict post-hook must return "
                                         "None (edit incompatible_keys in place)")
        fail([])
        return _IncompatibleKeys(missing, unexpected)

    def get_extra_state(self) -> Any:
        """State beyond parameters and buffers, saved by ``state_dict`` under ``prefix +
        '_extra_state'`` for a class that overrides this (as torch's): Arrays, numbers, strings,
        None, and dicts, lists and tuples of them keep ``gp.save`` free of pickle."""
        raise RuntimeError(f"{type(self).__name__}.get_extra_state: Module's own is never "
                           "called; a module with extra state overrides get_extra_state and "
                           "set_extra_state")

    def set_extra_state(self, state: Any) -> None:
        """Restore what ``get_extra_state`` returned; ``load_state_dict`` calls it with the
        ``_extra_state`` value where the class overrides it (as torch's)."""
        raise RuntimeError(f"{type(self).__name__}.set_extra_state: Module's own is never "
                           "called; a module with extra state overrides get_extra_state and "
                           "set_extra_state")

    # ---- state-dict hooks (torch's names; kept out of __call__'s _hooked path) ----------
    def register_state_dict_pre_hook(self, hook) -> _nn_hooks.RemovableHandle:
        """``hook(module, prefix, keep_vars)`` before this module's ``state_dict`` entries are
        made."""
        return _add_state_hook(self, "_state_dict_pre_hooks", hook)

    def register_state_dict_post_hook(self, hook) -> _nn_hooks.RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata)`` after this module's (and its
        children's) entries are made; it edits the state dict in place and returns None."""
        return _add_state_hook(self, "_state_dict_hooks", (hook, True))

    def _register_state_dict_hook(self, hook) -> _nn_hooks.RemovableHandle:
        """torch's older post-hook: as ``register_state_dict_post_hook``, but a state dict it
        returns replaces the root's result."""
        return _add_state_hook(self, "_state_dict_hooks", (hook, False))

    def register_load_state_dict_pre_hook(self, hook) -> _nn_hooks.RemovableHandle:
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` before this module's keys are read from the (copied) state
        dict, which it may change; messages it appends to ``error_msgs`` fail the load."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False
                                           ) -> _nn_hooks.RemovableHandle:
        """torch's older load pre-hook: without ``with_module`` the hook gets no module."""
        return _add_state_hook(self, "_load_state_dict_pre_hooks",
                               functools.partial(hook, self) if with_module else hook)

    def register_load_state_dict_post_hook(self, hook) -> _nn_hooks.RemovableHandle:
        """``hook(module, incompatible_keys)`` after this module and its children are loaded;
        it may edit ``incompatible_keys.missing_keys`` / ``unexpected_keys`` in place (a strict
        load checks them afterwards) and returns None."""
        return _add_state_hook(self, "_load_state_dict_post_hooks", hook)

    # ---- calling and printing -----------------------------------------------------------
    def forward(self, *args, **kwargs):
        """The computation; subclasses override it."""
        raise NotImplementedError(f"{type(self).__name__}: forward() is not implemented")

    def __call__(self, *args, **kwargs):
        h = _hooks.module_call
        if h is not None:   # grilly.jit's tracer notes the modes a graph was traced in
            h(self)
        if self._hooked:
            return _nn_hooks.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- hooks (grilly/nn/hooks.py) -----------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> _nn_hooks.RemovableHandle:
        """``hook(module, args)`` (or ``(module, args, kwargs)``) before each forward; it may
        return new args (or ``(args, kwargs)``)."""
        return _nn_hooks.add(self, "_forward_pre_hooks", (hook, with_kwargs), prepend)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> _nn_hooks.RemovableHandle:
        """``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) after each
        forward; it may return a new output."""
        return _nn_hooks.add(self, "_forward_hooks", (hook, with_kwargs, always_call), prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False
                                        ) -> _nn_hooks.RemovableHandle:
        """``hook(module, grad_output)`` when the outputs' gradients are computed; it may return
        new ones."""
        return _nn_hooks.add(self, "_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False
                                    ) -> _nn_hooks.RemovableHandle:
        """``hook(module, grad_input, grad_output)`` when the gradients of the module's
        positional Array inputs are computed; it may return new grad_input."""
        return _nn_hooks.add(self, "_backward_hooks", hook, prepend)

    def extra_repr(self) -> str:
        """Extra text shown inside this module's repr."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child = [f"({n}): " + _addindent(repr(m), 2) for n, m in self._modules.items()]
        if not child and len(extra_lines) <= 1:
            return f"{type(self).__name__}({extra})"
        return f"{type(self).__name__}(\n  " + "\n  ".join(extra_lines + child) + "\n)"


class Sequential(Module):
    """Modules applied in order; built from positional modules or an OrderedDict."""

    def __init__(self, *args) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], (dict, OrderedDict)):
            for k, m in args[0].items():
                self.add_module(k, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, x):
        for m in self._modules.values():
            x = m(x)
        return x

    def __getitem__(self, idx):
        mods = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(mods[idx]))
        return mods[_index(idx, len(mods), "Sequential")][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __setitem__(self, idx: int, module: Module) -> None:
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        self.add_module(key, module)

    def __delitem__(self, idx) -> None:
        _delete(self, idx, "Sequential")

    def append(self, module: Module) -> "Sequential":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index: int, module: Module) -> "Sequential":
        """Put ``module`` before position ``index``; the modules are renumbered '0', '1', ..."""
        _insert(self, index, module, "Sequential")
        return self

    def extend(self, sequential: Iterable[Module]) -> "Sequential":
        """Append every module of ``sequential``."""
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key: int = -1) -> Module:
        """Remove the module at position ``key`` and return it."""
        m = self[key]
        del self[key]
        return m

    def __add__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise TypeError(f"Sequential: can only add a Sequential, got {type(other).__name__}")
        return Sequential(*self, *other)

    def __iadd__(self, other: "Sequential") -> "Sequential":
        if not isinstance(other, Sequential):
            raise TypeError(f"Sequential: can only add a Sequential, got {type(other).__name__}")
        return self.extend(other)

    def __mul__(self, other: int) -> "Sequential":
        # the same module objects repeated (shared parameters), as torch's
        if not isinstance(other, int) or isinstance(other, bool):
            raise TypeError(f"Sequential: can only be multiplied by an int, got "
                            f"{type(other).__name__}")
        if other <= 0:
            raise ValueError(f"Sequential: a non-positive multiplier is not supported, got {other}")
        return Sequential(*(list(self) * other))

    __rmul__ = __mul__

    def __imul__(self, other: int) -> "Sequential":
        return self.extend((self * other)[len(self):])


def _index(i: int, n: int, who: str) -> int:
    if not -n <= i < n:
        raise IndexError(f"{who}: index {i} is out of range for {n} modules")
    return i % n


def _delete(container: Module, idx, who: str) -> None:
    """Remove the children at ``idx`` (an int or a slice) and renumber the rest '0', '1', ...
    (PyTorch's ModuleList and Sequential do the same, an OrderedDict's names included)."""
    mods = list(container._modules.values())
    if isinstance(idx, slice):
        del mods[idx]
    else:
        del mods[_index(idx, len(mods), who)]
    container._modules.clear()
    for i, m in enumerate(mods):
        container.add_module(str(i), m)


def _insert(container: Module, index: int, module: Module, who: str) -> None:
    """``module`` before position ``index`` (-n..n, as list.insert within range), the children
    renumbered '0', '1', ..."""
    if not isinstance(module, Module):
        raise TypeError(f"{who}.insert: expected a Module, got {type(module).__name__}")
    mods = list(container._modules.values())
    n = len(mods)
    if not -n <= index <= n:
        raise IndexError(f"{who}: index {index} is out of range for inserting into {n} modules")
    mods.insert(index, module)
    container._modules.clear()
    for i, m in enumerate(mods):
        container.add_module(str(i), m)


class ModuleList(Module):
    """A list of modules, registered as children '0', '1', ..."""

    def __init__(self, modules: Iterable[Module] | None = None) -> None:
        super().__init__()
        for m in modules or ():
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Append every module of ``modules``."""
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx):
        mods = list(self._modules.values())
        if isinstance(idx, slice):
            return ModuleList(mods[idx])
        return mods[_index(idx, len(mods), "ModuleList")]

    def __setitem__(self, idx: int, module: Module) -> None:
        self.add_module(str(_index(idx, len(self), "ModuleList")), module)

    def __delitem__(self, idx) -> None:
        _delete(self, idx, "ModuleList")

    def insert(self, index: int, module: Module) -> None:
        """Put ``module`` before position ``index``; the modules are renumbered '0', '1', ..."""
        _insert(self, index, module, "ModuleList")

    def pop(self, key: int = -1) -> Module:
        """Remove the module at position ``key`` and return it."""
        m = self[key]
        del self[key]
        return m

    def __add__(self, other: Iterable[Module]) -> "ModuleList":
        return ModuleList([*self, *other])

    def __iadd__(self, modules: Iterable[Module]) -> "ModuleList":
        return self.extend(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of modules, registered as children under their keys."""

    def __init__(self, modules=None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def update(self, modules) -> None:
        """Add every (key, module) of a mapping or an iterable of pairs."""
        items = modules.items() if hasattr(modules, "items") else modules
        for k, m in items:
            self.add_module(k, m)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __contains__(self, key: str) -> bool:
        return key in self._modules

    def pop(self, key: str) -> Module:
        """Remove ``key`` and return its module."""
        m = self[key]
        del self[key]
        return m

    def clear(self) -> None:
        """Remove every module."""
        self._modules.clear()

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self):
        """The keys."""
        return self._modules.keys()

    def values(self):
        """The modules."""
        return self._modules.values()

    def items(self):
        """(key, module) pairs."""
        return self._modules.items()
