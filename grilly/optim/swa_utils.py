"""torch.optim.swa_utils: weight averaging (SWA and EMA) with ``AveragedModel``, the ``SWALR``
schedule and ``update_bn`` (BatchNorm statistics recomputed for the averaged weights).

The averages follow torch's rules: the first ``update_parameters`` copies the model, later ones
move the average towards it by ``1 / (n + 1)`` (SWA) or ``1 - decay`` (EMA) with torch's lerp;
integer buffers (``use_buffers=True``) are averaged in floating point and truncated, as
torch's ``copy_`` into them does."""
from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Iterable

from ..array import api as gp
from ..array.defaults import get_default_dtype
from ..array.array import Array
from ..autograd.mode import no_grad
from ..nn.layers import _BatchNorm
from ..nn.module import Module
from ..nn.norm_pool import _InstanceNorm
from .lr_scheduler import LRScheduler, _per_group
from .optimizers import _lerp

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def _count(n) -> int:
    """The number of models averaged so far (an int, or torch's 0-d count as an Array)."""
    return int(n)


def _assign(dst: Array, value: Array) -> None:
    """Write ``value`` into ``dst`` in place; into an integer array truncated, as copy_."""
    dst[...] = value if value.dtype == dst.dtype else gp.astype(value, dst.dtype)


def _floating(a: Array) -> bool:
    return a.dtype.kind in "fc"


def _check_decay(decay: float, name: str) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"{name}: decay must be in [0, 1], got {decay}")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """An in-place EMA over lists: ``ema <- lerp(ema, current, 1 - decay)``."""
    _check_decay(decay, "get_ema_multi_avg_fn")

    def ema_update(ema_param_list, current_param_list, _num_averaged) -> None:
        with no_grad():
            for e, c in zip(ema_param_list, current_param_list, strict=True):
                if _floating(e):
                    e[...] = _lerp(e, c, 1.0 - decay)
                else:
                    _assign(e, gp.astype(e, gp.float64) * decay
                            + gp.astype(c, gp.float64) * (1.0 - decay))
    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """An in-place running mean over lists: ``avg <- lerp(avg, current, 1 / (n + 1))``."""

    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        w = 1.0 / (_count(num_averaged) + 1)
        if isinstance(num_averaged, Array):
            # torch's weight 1 / (count + 1) of an integer tensor count is a tensor of the
            # default dtype (float32 unless set), rounded as there
            w = float(get_default_dtype().np.type(w))
        with no_grad():
            for a, c in zip(averaged_param_list, current_param_list, strict=True):
                if _floating(a):
                    a[...] = _lerp(a, c, w)
                else:
                    wide = gp.astype(a, gp.float64)
                    _assign(a, wide + (gp.astype(c, gp.float64) - wide) * w)
    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """``(ema, current, n) -> decay * ema + (1 - decay) * current`` (a new array)."""
    _check_decay(decay, "get_ema_avg_fn")

    def ema_update(ema_param: Array, current_param: Array, num_averaged) -> Array:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn() -> Callable:
    """``(avg, current, n) -> avg + (current - avg) / (n + 1)`` (a new array)."""

    def swa_update(averaged_param: Array, current_param: Array, num_averaged) -> Array:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (_count(num_averaged) + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) hold the
    average of the models given to ``update_parameters``: SWA's running mean by default,
    ``avg_fn(avg, current, n)`` or in-place ``multi_avg_fn(avgs, currents, n)`` otherwise
    (``get_ema_multi_avg_fn(decay)``: an EMA). Calls run the copy; ``n_averaged`` is a buffer
    (state_dict keys ``n_averaged`` and ``module.*``, as torch's)."""

    def __init__(self, model: Module, device=None, avg_fn: Callable | None = None,
                 multi_avg_fn: Callable | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if not isinstance(model, Module):
            raise TypeError(f"AveragedModel: model must be a grilly nn.Module, got "
                            f"{type(model).__name__}")
        if avg_fn is not None and multi_avg_fn is not None:
            raise ValueError("AveragedModel: give avg_fn or multi_avg_fn, not both")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        if device is None:
            # the count lives with the weights (a host read of it each update, as torch's)
            first = next(itertools.chain(self.module.parameters(), self.module.buffers()), None)
            device = first.device if first is not None else None
        self.register_buffer("n_averaged", gp.zeros((), dtype=gp.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, model: Module) -> tuple[list, list]:
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        if len(mine) != len(theirs):
            what = "parameters and buffers" if self.use_buffers else "parameters"
            raise ValueError(f"AveragedModel.update_parameters: the model has {len(theirs)} "
                             f"{what}, the averaged copy {len(mine)}")
        return mine, theirs

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (the first call copies them)."""
        mine, theirs = self._averaged(model)
        with no_grad():
            theirs = [t.detach() if t.device == m.device else t.detach().to_device(m.device)
                      for m, t in zip(mine, theirs)]
            n = _count(self.n_averaged)
            if n == 0:
                for m, t in zip(mine, theirs):
                    _assign(m, t)
            elif self.avg_fn is not None:
                for m, t in zip(mine, theirs):
                    _assign(m, self.avg_fn(m.detach(), t, self.n_averaged))
            elif self.multi_avg_fn is None:
                # SWA's mean, per parameter (torch's path on the CPU: a division by n + 1)
                for m, t in zip(mine, theirs):
                    _assign(m, m + (t - m) / (n + 1))
            else:
                fn = self.multi_avg_fn
                # one call per (device, dtype) group, as torch groups them
                groups: dict = {}
                for m, t in zip(mine, theirs):
                    ms, ts = groups.setdefault((str(m.device), m.dtype), ([], []))
                    ms.append(m)
                    ts.append(t)
                for ms, ts in groups.values():
                    fn(ms, ts, self.n_averaged)
            if not self.use_buffers:
                mine_b, theirs_b = list(self.module.buffers()), list(model.buffers())
                if len(mine_b) != len(theirs_b):
                    raise ValueError(f"AveragedModel.update_parameters: the model has "
                                     f"{len(theirs_b)} buffers, the averaged copy {len(mine_b)}")
                for m, t in zip(mine_b, theirs_b):
                    _assign(m, t if t.device == m.device else t.to_device(m.device))
            self.n_averaged += 1


def update_bn(loader: Iterable, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running statistics of ``model`` in one pass over ``loader``
    (a batch that is a list or tuple gives its first element), as cumulative averages; the
    modules' momentum and the model's training mode are put back."""
    bns = [m for m in model.modules()
           if isinstance(m, _BatchNorm) and not isinstance(m, _InstanceNorm)]
    if not bns:
        return
    momenta = [m.momentum for m in bns]
    was_training = model.training
    with no_grad():
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        model.train()
        try:
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                if device is not None:
                    batch = gp.asarray(batch, device=device)
                model(batch)
        finally:
            for m, mom in zip(bns, momenta):
                m.momentum = mom
            model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each param group's lr to its ``swa_lr`` over ``anneal_epochs`` epochs ('cos' or
    'linear'), then hold it (torch's recursive form)."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        groups = getattr(optimizer, "param_groups", None)
        if not isinstance(groups, list):
            raise TypeError(f"SWALR: {type(optimizer).__name__} is not an Optimizer")
        for lr, g in zip(_per_group(swa_lr, len(groups), "swa_lr", "SWALR"), groups):
            g["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"SWALR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) \
                or anneal_epochs < 0:
            raise ValueError(f"SWALR: anneal_epochs must be an integer >= 0, got {anneal_epochs!r}")
        # the strategy's name, not a function, is kept: state_dict stays plain data (torch's key)
        self._anneal_strategy = anneal_strategy
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _anneal(self, t: float) -> float:
        return t if self._anneal_strategy == "linear" else (1 - math.cos(math.pi * t)) / 2

    def get_lr(self) -> list:
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        n = max(1, self.anneal_epochs)
        prev_alpha = self._anneal(max(0.0, min(1.0, (step - 1) / n)))
        alpha = self._anneal(max(0.0, min(1.0, step / n)))
        out = []
        for g in self.optimizer.param_groups:
            lr, swa = float(g["lr"]), g["swa_lr"]
            # the lr before the annealing began, recovered from the current one
            start = swa if prev_alpha == 1 else (lr - prev_alpha * swa) / (1 - prev_alpha)
            out.append(swa * alpha + start * (1 - alpha))
        return out
