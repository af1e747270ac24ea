"""The Optimizer base: parameter groups, per-parameter state, zero_grad, state_dict."""
from __future__ import annotations

import copy
import functools
import itertools
import operator
import weakref
from collections import OrderedDict
from collections.abc import MutableMapping

from ..array import api as gp
from ..array import optim_steps
from ..array.array import Array
from ..array.dispatch import host_op
from ..array.dispatch import bumping as _bumping
from ..array.dispatch import structure_epoch as _EPOCH
from ..autograd.mode import no_grad

__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]

_hook_ids = itertools.count()


class _HookDict(OrderedDict):
    """An OrderedDict a handle may refer to weakly."""


# step hooks of every optimizer (torch.optim.optimizer's globals of the same names)
_global_optimizer_pre_hooks = _HookDict()
_global_optimizer_post_hooks = _HookDict()


class _StepHookHandle:
    """Removes the step hook it was returned for (``remove()``, or leaving a ``with`` block)."""

    def __init__(self, hooks: dict) -> None:
        self.id = next(_hook_ids)
        self._ref = weakref.ref(hooks)

    def remove(self) -> None:
        """Remove the hook (again: nothing)."""
        d = self._ref()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self) -> "_StepHookHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _add_hook(hooks: _HookDict, hook, prepend: bool = False) -> _StepHookHandle:
    handle = _StepHookHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook) -> _StepHookHandle:
    """Call ``hook(optimizer, args, kwargs)`` before every optimizer's ``step`` (before the
    optimizer's own pre-hooks); it may return ``(new_args, new_kwargs)``."""
    return _add_hook(_global_optimizer_pre_hooks, hook)


def register_optimizer_step_post_hook(hook) -> _StepHookHandle:
    """Call ``hook(optimizer, args, kwargs)`` after every optimizer's ``step`` (after the
    optimizer's own post-hooks)."""
    return _add_hook(_global_optimizer_post_hooks, hook)


def _with_step_hooks(step):
    """``step`` running the optimizer's step pre- and post-hooks around it, as torch's (their
    ``args`` begin with the optimizer); a step that calls a base class's step (also wrapped)
    runs them once."""

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        self = args[0]
        # (an lr scheduler's first step warns where no optimizer step came before it, as torch)
        self.__dict__["_opt_called"] = True
        pre = self.__dict__.get("_optimizer_step_pre_hooks") or {}
        post = self.__dict__.get("_optimizer_step_post_hooks") or {}
        if not (pre or post or _global_optimizer_pre_hooks or _global_optimizer_post_hooks) \
                or self.__dict__.get("_in_hooked_step"):
            return step(*args, **kwargs)
        for hook in list(_global_optimizer_pre_hooks.values()) + list(pre.values()):
            res = hook(self, args, kwargs)
            if res is not None:
                if not (isinstance(res, tuple) and len(res) == 2):
                    raise RuntimeError(f"{type(self).__name__}.step: a step pre-hook must return "
                                       f"None or a tuple (new_args, new_kwargs), got {res!r}")
                args, kwargs = res
        self._in_hooked_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_hooked_step = False
        for hook in list(post.values()) + list(_global_optimizer_post_hooks.values()):
            hook(self, args, kwargs)
        return out

    return wrapper


def _restore(v, p: Array):
    """A saved state value for parameter ``p``: arrays copied onto ``p``'s device, those of
    another library (torch.optim's tensors) as grilly Arrays of ``p``'s dtype, and their 0-d
    values (torch's ``step``) as Python numbers."""
    if isinstance(v, Array):
        return gp.asarray(v, device=p.device, copy=True)
    if not (hasattr(v, "__dlpack__") or hasattr(v, "__array__")):
        return v
    if getattr(v, "ndim", None) == 0:
        x = v.item()
        return int(x) if isinstance(x, float) and x.is_integer() else x
    a = gp.asarray(v, device=p.device, copy=True)
    return gp.astype(a, p.dtype) if a.dtype.kind in "fc" and a.dtype != p.dtype else a


_PARAMS = operator.itemgetter("params")
_IS_ARRAY = functools.partial(type.__instancecheck__, Array)   # isinstance(v, Array), in C


def _step_all(opt: "Optimizer") -> None:
    """``opt``'s whole step as one host op (where its updates cannot all be captured)."""
    opt._step_all()


# grilly.jit keeps a graph with this host op while the optimizer's parameters and option flags
# are those of the trace (its state is read on every replay here, so it is not guarded)
_step_all.jit_guard = lambda opt: opt._jit_options()


def _set_option(group: dict, key, value) -> None:
    dict.__setitem__(group, key, value)
    if key != "lr":   # (grilly.jit: the other options are guarded, lr is read on each replay)
        _EPOCH[0] += 1


class _Group(dict):
    """A parameter group: a dict whose assignments grilly.jit follows. Inside a traced step an
    assignment (``opt.param_groups[0]["lr"] = lr``) is a host op, made again on every replay
    (the replay's graph was traced for that value: a Python argument is part of its key), and
    a change of an option other than lr bumps the structure epoch (a replay re-reads the
    options the graph depends on, Optimizer._jit_options, only then)."""

    __slots__ = ()

    def __setitem__(self, key, value) -> None:
        host_op(_set_option, self, key, value)

    __delitem__, __ior__ = _bumping(dict, "__delitem__"), _bumping(dict, "__ior__")
    pop, popitem, setdefault, update, clear = (
        _bumping(dict, n) for n in ("pop", "popitem", "setdefault", "update", "clear"))

    def __reduce__(self):   # pickled as a plain dict (Optimizer.__setstate__ makes it a _Group)
        return dict, (dict(self),)


class _Params(list):
    """A group's list of parameters: a list whose changes bump the structure epoch (a jitted
    step's guard, Optimizer._jit_options, is kept while it has not moved)."""

    __slots__ = ()
    append, extend, insert, pop, remove, clear, sort, reverse = (
        _bumping(list, n) for n in ("append", "extend", "insert", "pop", "remove", "clear",
                                    "sort", "reverse"))
    __setitem__, __delitem__, __iadd__, __imul__ = (
        _bumping(list, n) for n in ("__setitem__", "__delitem__", "__iadd__", "__imul__"))

    def __reduce__(self):   # pickled as a plain list
        return list, (list(self),)


class _ParamState(MutableMapping):
    """An optimizer's per-parameter state keyed by the parameters themselves (torch's
    ``optimizer.state[p]``), over its ``id(param)``-keyed dict."""

    def __init__(self, opt: "Optimizer") -> None:
        self._opt = opt

    @staticmethod
    def _key(k) -> int:
        if isinstance(k, Array):
            return id(k)
        if isinstance(k, int) and not isinstance(k, bool):
            return k
        raise TypeError(f"Optimizer.state: keys are parameters (grilly Arrays), got "
                        f"{type(k).__name__}")

    def _params(self) -> dict:
        return {id(p): p for g in self._opt.param_groups for p in g["params"]}

    def __getitem__(self, k) -> dict:
        states, i = self._opt._state, self._key(k)
        s = states.get(i)
        if s is None:
            if isinstance(k, Array) and i in self._params():
                s = states[i] = {}   # torch's defaultdict(dict)
            else:
                raise KeyError("Optimizer.state: this Array is not in the optimizer's "
                               "param_groups" if isinstance(k, Array) else
                               f"Optimizer.state: no state for the parameter of id {k}")
        return s

    def __setitem__(self, k, v: dict) -> None:
        self._opt._state[self._key(k)] = v

    def __delitem__(self, k) -> None:
        del self._opt._state[self._key(k)]

    def __contains__(self, k) -> bool:
        ok = isinstance(k, Array) or (isinstance(k, int) and not isinstance(k, bool))
        return ok and self._key(k) in self._opt._state

    def __iter__(self):
        params = self._params()
        # the parameters, in param_groups order (a state whose parameter left is skipped)
        return iter([params[i] for i in params if i in self._opt._state])

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"{{{', '.join(f'<Array {tuple(p.shape)}>: {s!r}' for p, s in self.items())}}}"


class Optimizer:
    """Base of grilly's optimizers (the torch.optim interface). Subclasses implement
    ``_update(p, grad, state, group)``, called under no_grad for each parameter with a grad;
    updates write into the parameter in place, so its Array identity stays. Updates made
    through grilly.array.optim_steps run together when the loop ends (one dispatch for all
    parameters where the device can), so an ``_update`` must not read a parameter another
    ``_update`` of the same step has just written through them."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _with_step_hooks(cls.__dict__["step"])

    def __init__(self, params, defaults: dict) -> None:
        self.defaults = dict(defaults)
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()
        if isinstance(params, Array):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of Arrays or of "
                            "dicts, got a single Array; pass [x]")
        params = list(params)
        if not params:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        self.param_groups: list = []
        self._state: dict = {}
        for g in params:
            self.add_param_group(g)

    @property
    def state(self) -> "_ParamState":
        """Per-parameter state, as torch's ``optimizer.state``: ``state[p]`` is parameter
        ``p``'s dict (made empty on first use, as torch's defaultdict), iteration gives the
        parameters that have state. Kept by ``id(param)`` underneath (Arrays are not
        hashable); an int key is taken as such an id."""
        return _ParamState(self)

    def state_of(self, p: Array) -> dict:
        """The state dict of parameter ``p`` (created empty on first use)."""
        s = self._state.get(id(p))
        if s is None:
            s = self._state[id(p)] = {}
        return s

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters with its own options (missing ones from the defaults)."""
        if not isinstance(group, dict):
            raise TypeError(f"{type(self).__name__}.add_param_group: param_group must be a dict, "
                            f"got {type(group).__name__}")
        g = _Group(group)
        ps = g["params"]
        if isinstance(ps, set):
            raise TypeError(f"{type(self).__name__}: parameters must be in an ordered collection "
                            "(a set's order changes between runs); pass a list")
        g["params"] = _Params([ps] if isinstance(ps, Array) else ps)
        # torch 2.6's named parameters: (name, param) pairs, e.g. model.named_parameters()
        names = [p[0] for p in g["params"] if isinstance(p, tuple)]
        if names:
            if len(names) != len(g["params"]):
                raise ValueError(f"{type(self).__name__}: a parameter group mixes (name, "
                                 "parameter) pairs and bare parameters; name all or none")
            g["params"] = _Params([p[1] for p in g["params"]])
            g["param_names"] = names
        if any(("param_names" in grp) != bool(names) for grp in self.param_groups):
            raise ValueError(f"{type(self).__name__}: every parameter group must have names or "
                             f"none may; cannot add a group {'with' if names else 'without'} "
                             "names")
        for p in g["params"]:
            if not isinstance(p, Array):
                raise TypeError(f"{type(self).__name__}: parameters must be grilly Arrays, got "
                                f"{type(p).__name__}")
            if p.dtype.kind not in "fc":
                raise TypeError(f"{type(self).__name__}: a parameter has dtype {p.dtype.name}; "
                                "only floating-point arrays can be optimized")
        if len({id(p) for p in g["params"]}) != len(g["params"]):
            # (torch warns that this will become an error; it updates such a parameter twice)
            raise ValueError(f"{type(self).__name__}: a parameter group lists a parameter more "
                             "than once")
        seen = {id(p) for grp in self.param_groups for p in grp["params"]}
        if any(id(p) in seen for p in g["params"]):
            raise ValueError(f"{type(self).__name__}: a parameter appears in more than one group")
        for k, v in self.defaults.items():
            g.setdefault(k, v)
        self.param_groups.append(g)
        _EPOCH[0] += 1

    def _hook_table(self, name: str) -> _HookDict:
        d = self.__dict__.get(name)
        if d is None:
            d = self.__dict__[name] = _HookDict()
        return d

    def register_state_dict_pre_hook(self, hook, prepend: bool = False) -> _StepHookHandle:
        """Call ``hook(optimizer)`` before each ``state_dict``."""
        return _add_hook(self._hook_table("_optimizer_state_dict_pre_hooks"), hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend: bool = False) -> _StepHookHandle:
        """Call ``hook(optimizer, state_dict)`` after each ``state_dict``; it may change the state
        dict in place or return a new one."""
        return _add_hook(self._hook_table("_optimizer_state_dict_post_hooks"), hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend: bool = False) -> _StepHookHandle:
        """Call ``hook(optimizer, state_dict)`` before each ``load_state_dict`` with a shallow
        copy of the state dict given; it may change it in place or return the one to load."""
        return _add_hook(self._hook_table("_optimizer_load_state_dict_pre_hooks"), hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend: bool = False) -> _StepHookHandle:
        """Call ``hook(optimizer)`` after each ``load_state_dict``."""
        return _add_hook(self._hook_table("_optimizer_load_state_dict_post_hooks"), hook, prepend)

    def register_step_pre_hook(self, hook) -> _StepHookHandle:
        """Call ``hook(optimizer, args, kwargs)`` before each ``step``; it may return
        ``(new_args, new_kwargs)`` for the step. Returns a handle whose ``remove()`` takes it off."""
        handle = _StepHookHandle(self._optimizer_step_pre_hooks)
        self._optimizer_step_pre_hooks[handle.id] = hook
        return handle

    def register_step_post_hook(self, hook) -> _StepHookHandle:
        """Call ``hook(optimizer, args, kwargs)`` after each ``step``. Returns a handle whose
        ``remove()`` takes it off."""
        handle = _StepHookHandle(self._optimizer_step_post_hooks)
        self._optimizer_step_post_hooks[handle.id] = hook
        return handle

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's gradient (to None, or to zeros in place)."""
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    # zeroed in place, as torch does: no new buffer, holders of .grad see it
                    p.grad[...] = 0

    @_with_step_hooks
    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns closure()'s loss if given."""
        loss = None
        if closure is not None:
            from ..autograd.mode import enable_grad

            with enable_grad():
                loss = closure()
        if self._in_kernels and self._kernels_take_all():
            # the Python part (step counts, learning rates, the scalars) is one host op and
            # the update kernels follow: grilly.jit captures them (without Python per kernel)
            optim_steps.step_in_kernels(self._collect)
        else:
            # one host op: a traced step (grilly.jit) repeats it on replay, with this
            # optimizer's step counts and learning rates as they are then
            host_op(_step_all, self)
        return loss

    # subclasses whose _update makes exactly one optim_steps rule call per parameter, no other
    # array work (the Python part of a step can then be separated from its kernels)
    _in_kernels = False

    def _kernels_take_all(self) -> bool:
        """Whether every update of this step runs on an optim_multi kernel that reads its
        scalars from a buffer (optim_steps.takes_vals)."""
        n = 0
        takes_vals = optim_steps.takes_vals
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is not None:
                    if not takes_vals(p, g):
                        return False
                    n += 1
        return n > 0

    def _collect(self) -> None:
        """Every parameter's update (one ``_update`` each), under no_grad."""
        with no_grad():
            for group in self.param_groups:
                self._step_group(group)

    def _step_all(self) -> None:
        # the updates made through grilly.array.optim_steps run together at the end: one
        # dispatch for all parameters of a rule where the device can (its optim_multi kernel)
        # (no_grad outside: the batch runs its kernels when it closes)
        with no_grad(), optim_steps.batched():
            self._collect()

    def _step_group(self, group: dict) -> None:
        """Update every parameter of ``group`` that has a gradient (one ``_update`` each)."""
        states, update = self._state, self._update
        for p in group["params"]:
            g = p.grad
            if g is not None:
                # (state_of, inlined: once per parameter of every step)
                s = states.get(id(p))
                if s is None:
                    s = states[id(p)] = {}
                update(p, g, s, group)

    def _update(self, p, grad, state, group) -> None:
        raise NotImplementedError(f"{type(self).__name__}: _update is not implemented")

    def jit_guard(self) -> tuple:
        """The objects a traced step's update kernels hold (grilly.jit retraces when one is
        replaced, as load_state_dict replaces the state): state dict, parameters, state arrays,
        and the group options that choose the kernels' code (_jit_options)."""
        # (chain, map and filter with C functions: a jitted step asks on every call)
        return (self._state, *self._jit_options(),
                *filter(_IS_ARRAY, itertools.chain.from_iterable(
                    map(dict.values, self._state.values()))))

    def _jit_options(self) -> tuple:
        """What a traced step depends on besides the state: the parameters of every group
        (a group added or changed since the trace is a new graph: the traced zero_grad() and
        backward() set the old groups' gradients only) and, per group, each option as a flag
        that selects an update's code: a bool as is, a number as whether it is nonzero
        (momentum 0 -> 0.9 makes a momentum buffer; nesterov, maximize, centered, amsgrad
        change the captured kernels' flags), None as None; the learning rate, a scalar read on
        every replay, is left out. All singletons: the guard compares them by identity."""
        # (a jitted step asks on every call: the answer is kept, and returned as the same
        # tuple, while the groups are the same _Group objects with _Params lists, all of whose
        # changes move the structure epoch, and the epoch has not moved)
        groups = self.param_groups
        kept = self.__dict__.get("_jit_flags")
        epoch = _EPOCH[0]
        if kept is not None and kept[0] == epoch and len(kept[1]) == len(groups) \
                and all(map(operator.is_, kept[1], groups)):
            return kept[2]
        out = (*itertools.chain.from_iterable(map(_PARAMS, groups)), *self._option_flags())
        if all(type(g) is _Group and type(g["params"]) is _Params for g in groups):
            self.__dict__["_jit_flags"] = (epoch, tuple(groups), out)
        return out

    def _option_flags(self) -> tuple:
        """Per group, each option as _jit_options's flag (lr left out)."""
        flags = []
        for g in self.param_groups:
            for k, v in g.items():
                if k == "lr" or k == "params" or k == "param_names":
                    continue
                if v is None or v is True or v is False:
                    flags.append(v)
                elif isinstance(v, (int, float)):
                    flags.append(bool(v != 0))
        return tuple(flags)

    # ---- serialization -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Groups (parameters as indices) and state (by parameter index), as torch lays them out;
        state-dict pre- and post-hooks run around it."""
        for hook in list(self._hook_table("_optimizer_state_dict_pre_hooks").values()):
            hook(self)
        sd = self._make_state_dict()
        for hook in list(self._hook_table("_optimizer_state_dict_post_hooks").values()):
            res = hook(self, sd)
            if res is not None:
                sd = res
        return sd

    def _make_state_dict(self) -> dict:
        index, groups = {}, []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {index[k]: dict(v) for k, v in self._state.items() if k in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore options and state saved by ``state_dict`` (parameters matched by position);
        load pre-hooks (which may replace the state dict) and post-hooks run around it."""
        state_dict = state_dict.copy()   # shallow, as torch's: the pre-hooks may change it
        for hook in list(self._hook_table("_optimizer_load_state_dict_pre_hooks").values()):
            res = hook(self, state_dict)
            if res is not None:
                state_dict = res
        self._load(state_dict)
        for hook in list(self._hook_table("_optimizer_load_state_dict_post_hooks").values()):
            hook(self)

    def _load(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the saved groups do not match "
                             "this optimizer's parameter groups")
        by_index = {}
        for saved, mine in zip(groups, self.param_groups):
            for i, p in zip(saved["params"], mine["params"]):
                by_index[i] = p
            for k, v in saved.items():
                if k != "params":
                    mine[k] = copy.deepcopy(v) if not isinstance(v, Array) else v
        self._state = {}
        for i, s in state_dict["state"].items():
            p = by_index[int(i)]
            self._state[id(p)] = {k: _restore(v, p) for k, v in s.items()}

    # pickle and copy.deepcopy: the state is keyed by id(param), which a copy does not keep;
    # it travels keyed by the parameter's position in param_groups and is keyed again by the
    # copied parameters' ids (else a copy would restart every moment and step count from zero)
    def __getstate__(self) -> dict:
        d = dict(self.__dict__)
        d.pop("_jit_flags", None)
        # hooks are not kept (torch's neither): they may be lambdas, which do not pickle
        for k in ("_optimizer_step_pre_hooks", "_optimizer_step_post_hooks", "_in_hooked_step",
                  "_optimizer_state_dict_pre_hooks", "_optimizer_state_dict_post_hooks",
                  "_optimizer_load_state_dict_pre_hooks", "_optimizer_load_state_dict_post_hooks"):
            d.pop(k, None)
        pos = {id(p): i for i, p in enumerate(p for g in self.param_groups for p in g["params"])}
        d["_state"] = {pos[k]: v for k, v in self._state.items() if k in pos}
        return d

    def __setstate__(self, d: dict) -> None:
        self.__dict__.update(d)
        self.__dict__.pop("_jit_flags", None)
        self.param_groups = [g if type(g) is _Group else _Group(g) for g in self.param_groups]
        for g in self.param_groups:
            if type(g["params"]) is not _Params:
                dict.__setitem__(g, "params", _Params(g["params"]))
        self._optimizer_step_pre_hooks = _HookDict()
        self._optimizer_step_post_hooks = _HookDict()
        params = [p for g in self.param_groups for p in g["params"]]
        self._state = {id(params[i]): v for i, v in d["_state"].items()}

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in self.defaults.items())
        return f"{type(self).__name__}({opts})"
