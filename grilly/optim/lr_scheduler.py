"""Learning-rate schedulers, with torch.optim.lr_scheduler's update rules (so the lr sequences
agree): call ``scheduler.step()`` after ``optimizer.step()``, once per epoch (or batch)."""
from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

__all__ = ["ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
           "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
           "MultiplicativeLR", "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR",
           "StepLR"]


def _warn_epoch(name: str) -> None:
    """torch's deprecation of ``step(epoch)``: still honoured (the closed form where there is
    one), with a UserWarning as torch gives."""
    warnings.warn(f"{name}.step(epoch): passing the epoch is deprecated (as in torch); call "
                  "step() without it. The lr is set from the closed form where the scheduler "
                  "has one", UserWarning, stacklevel=3)


def _optimizer(optimizer, name: str):
    """``optimizer``, checked to be one (param groups to schedule)."""
    if not isinstance(getattr(optimizer, "param_groups", None), list):
        raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
    return optimizer


def _warn_order() -> None:
    warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. Call "
                  "them in the opposite order: `optimizer.step()` before "
                  "`lr_scheduler.step()`; otherwise the first value of the learning rate "
                  "schedule is skipped (torch's warning).", UserWarning, stacklevel=3)


def _per_group(value, n: int, what: str, name: str) -> list:
    """``value`` for each of ``n`` param groups: a list or tuple of ``n``, or one for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values for {what} (one per param group), "
                             f"got {len(value)}")
        return list(value)
    return [value] * n


def _set_lrs(scheduler, values: list) -> None:
    """Write one lr per param group (as torch's strict zip: a group added after the scheduler
    was made would otherwise keep its lr unscheduled, silently)."""
    groups = scheduler.optimizer.param_groups
    values = list(values)
    if len(values) != len(groups):
        raise ValueError(f"{type(scheduler).__name__}.step: the optimizer has {len(groups)} param "
                         f"groups but the scheduler computed {len(values)} learning rates (a "
                         "group added with add_param_group after the scheduler was made?); make "
                         "the scheduler after adding the group")
    for g, lr in zip(groups, values):
        g["lr"] = lr
    scheduler._last_lr = [g["lr"] for g in groups]


class LRScheduler:
    """Base: keeps ``last_epoch`` and writes ``get_lr()`` into each param group's ``lr``.
    ``_is_initial`` is true during the step the constructor takes; ``_get_closed_form_lr`` (where
    a scheduler has one) gives the lr at any ``last_epoch`` (SequentialLR jumps to epoch 0)."""

    _is_initial = False

    def __init__(self, optimizer, last_epoch: int = -1) -> None:
        self.optimizer = _optimizer(optimizer, type(self).__name__)
        if last_epoch == -1:
            for g in optimizer.param_groups:
                g.setdefault("initial_lr", g["lr"])
        else:
            for i, g in enumerate(optimizer.param_groups):
                if "initial_lr" not in g:
                    raise KeyError(f"{type(self).__name__}: param group {i} has no 'initial_lr'; "
                                   "resume only from a scheduler that set it (last_epoch=-1)")
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        if "_opt_sched" not in optimizer.__dict__:
            # optimizer steps count from the first scheduler made for it (torch's tracking)
            optimizer.__dict__["_opt_sched"] = True
            optimizer.__dict__["_opt_called"] = False
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        raise NotImplementedError(f"{type(self).__name__}: get_lr is not implemented")

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch and set the new learning rates (``epoch``: torch's deprecated form,
        jump to that epoch)."""
        if self._step_count == 1 and not self.optimizer.__dict__.get("_opt_called", False):
            _warn_order()
        self._step_count += 1
        if epoch is not None:
            _warn_epoch(type(self).__name__)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed = getattr(self, "_get_closed_form_lr", None)
            values = closed() if closed is not None else self.get_lr()
        _set_lrs(self, values)

    def state_dict(self) -> dict:
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict``."""
        self.__dict__.update(state)


class _LRScheduler(LRScheduler):
    """torch's old name of LRScheduler, kept (as torch keeps it) for schedulers subclassing it."""


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1):
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs = self.optimizer.param_groups
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [g["lr"] for g in gs]
        return [g["lr"] * self.gamma for g in gs]

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** (self.last_epoch // self.step_size) for b in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts), in torch's recursive form."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs, e, T, m = self.optimizer.param_groups, self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            # also when resuming (last_epoch >= 0): the lr the optimizer has is kept, as torch's
            return [g["lr"] for g in gs]
        if self._step_count == 1 and e > 0:
            return [m + (b - m) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - m) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, gs)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (g["lr"] - m) + m for g in gs]

    def _get_closed_form_lr(self) -> list:
        m = self.eta_min
        return [m + (b - m) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for b in self.base_lrs]


def _lambdas(lr_lambda, optimizer, name: str) -> list:
    """``lr_lambda`` for each param group, each checked callable."""
    fns = _per_group(lr_lambda, len(_optimizer(optimizer, name).param_groups), "lr_lambda", name)
    for fn in fns:
        if not callable(fn):
            raise TypeError(f"{name}: lr_lambda should be a function, got {type(fn).__name__}")
    return fns


class _LambdaState:
    """torch's state_dict for lr_lambdas: a plain function is not saved (None), a callable
    object's ``__dict__`` is."""

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state: dict) -> None:
        state = dict(state)
        saved = state.pop("lr_lambdas")
        self.__dict__.update(state)
        for fn, d in zip(self.lr_lambdas, saved):
            if d is not None:
                fn.__dict__.update(d)


class LambdaLR(_LambdaState, LRScheduler):
    """lr = base lr * ``lr_lambda(epoch)`` (one function, or one per param group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer, "LambdaLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        return [b * fn(self.last_epoch) for fn, b in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaState, LRScheduler):
    """Multiply the lr by ``lr_lambda(epoch)`` each epoch (not at the constructor's step)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1):
        self.lr_lambdas = _lambdas(lr_lambda, optimizer, "MultiplicativeLR")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in gs]
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, gs)]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each milestone epoch (a milestone listed twice, twice)."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1):
        self.milestones, self.gamma = Counter(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [g["lr"] for g in gs]
        return [g["lr"] * self.gamma ** self.milestones[self.last_epoch] for g in gs]

    def _get_closed_form_lr(self) -> list:
        ms = sorted(self.milestones.elements())
        return [b * self.gamma ** bisect_right(ms, self.last_epoch) for b in self.base_lrs]


class ConstantLR(LRScheduler):
    """The lr times ``factor`` until epoch ``total_iters``, then the lr."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1):
        if factor > 1.0 or factor < 0:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in gs]
        if self.last_epoch != self.total_iters:
            return [g["lr"] for g in gs]
        return [g["lr"] * (1.0 / self.factor) for g in gs]

    def _get_closed_form_lr(self) -> list:
        f = self.factor
        return [b * (f + (self.last_epoch >= self.total_iters) * (1 - f)) for b in self.base_lrs]


class LinearLR(LRScheduler):
    """The lr times a factor going linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs (torch's recursive form)."""

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs, e, s0, s1 = self.optimizer.param_groups, self.last_epoch, self.start_factor, \
            self.end_factor
        if e == 0:
            return [g["lr"] * s0 for g in gs]
        if self._is_initial or e > self.total_iters:
            return [g["lr"] for g in gs]
        return [g["lr"] * (1.0 + (s1 - s0) / (self.total_iters * s0 + (e - 1) * (s1 - s0)))
                for g in gs]

    def _get_closed_form_lr(self) -> list:
        s0, s1 = self.start_factor, self.end_factor
        return [b * (s0 + (s1 - s0) * min(self.total_iters, self.last_epoch) / self.total_iters)
                for b in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs = self.optimizer.param_groups
        if self._is_initial:
            return [g["lr"] for g in gs]
        return [g["lr"] * self.gamma for g in gs]

    def _get_closed_form_lr(self) -> list:
        return [b * self.gamma ** self.last_epoch for b in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decay the lr as ``(1 - epoch / total_iters) ** power`` to zero at ``total_iters``
    (torch's recursive form)."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1):
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs, e, T = self.optimizer.param_groups, self.last_epoch, self.total_iters
        if self._is_initial or e > T:
            return [g["lr"] for g in gs]
        f = ((1.0 - e / T) / (1.0 - (e - 1) / T)) ** self.power
        return [g["lr"] * f for g in gs]

    def _get_closed_form_lr(self) -> list:
        T = self.total_iters
        return [b * (1.0 - min(T, self.last_epoch) / T) ** self.power for b in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min``, restarting after ``T_0`` epochs, then
    ``T_0 * T_mult``, ... (SGDR); ``step(epoch)`` takes a fractional epoch, as torch."""

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1):
        if not isinstance(T_0, int) or T_0 <= 0:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be a positive integer, "
                             f"got {T_0}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, "
                             f"got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"CosineAnnealingWarmRestarts: eta_min must be a float or int, got "
                             f"{type(eta_min).__name__}")
        self.T_0, self.T_i, self.T_mult, self.eta_min = T_0, T_0, T_mult, eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        m = self.eta_min
        return [m + (b - m) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for b in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to ``epoch`` (may be fractional), and set the lrs."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"CosineAnnealingWarmRestarts: epoch must be >= 0, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        _set_lrs(self, self.get_lr())


def _check_schedulers(schedulers, optimizer, name: str) -> None:
    if len(schedulers) < 1:
        raise ValueError(f"{name}: expects at least one scheduler, got none")
    for i, s in enumerate(schedulers):
        if not hasattr(s, "optimizer"):
            raise TypeError(f"{name}: the scheduler at index {i} ({type(s).__name__}) has no "
                            "optimizer attribute")
        if isinstance(s, ReduceLROnPlateau):
            raise ValueError(f"{name}: does not support ReduceLROnPlateau (its step needs a "
                             f"metric), got one at index {i}")
        if s.optimizer is not optimizer:
            raise ValueError(f"{name}: all schedulers must belong to the same optimizer; the "
                             f"{type(s).__name__} at index {i} has another")


class _Composite:
    """state_dict with each sub-scheduler's own state_dict."""

    def state_dict(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state: dict) -> None:
        state = dict(state)
        saved = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, d in zip(self._schedulers, saved):
            s.load_state_dict(d)


class SequentialLR(_Composite, LRScheduler):
    """Run ``schedulers[i]`` from ``milestones[i - 1]`` on (each restarted at its epoch 0)."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1):
        _optimizer(optimizer, "SequentialLR")
        _check_schedulers(schedulers, optimizer, "SequentialLR")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expects one milestone fewer than schedulers, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        self._schedulers, self._milestones = list(schedulers), list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        self._undo(self)
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def _undo(self, s) -> None:
        """Take back the step each (nested) scheduler's constructor took."""
        if hasattr(s, "_schedulers"):
            for sub in s._schedulers:
                self._undo(sub)
        elif hasattr(s, "last_epoch"):
            s.last_epoch -= 1

    def step(self) -> None:
        """Advance one epoch in the scheduler whose turn it is."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            s._update_lr(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()


class ChainedScheduler(_Composite, LRScheduler):
    """Step every scheduler each epoch, in order (their factors compose)."""

    def __init__(self, schedulers, optimizer=None):
        if len(schedulers) >= 1 and optimizer is None:
            optimizer = getattr(schedulers[0], "optimizer", None)
        _check_schedulers(schedulers, optimizer, "ChainedScheduler")
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def step(self) -> None:
        """Step each scheduler."""
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith): warm up to ``max_lr`` then anneal far below the start, cycling
    momentum (or Adam's beta1) the other way."""

    def __init__(self, optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum: float = 0.85,
                 max_momentum: float = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: pass total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0:
            raise ValueError(f"OneCycleLR: total_steps must be > 0, got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy!r}")
        self.total_steps = total_steps
        # the strategy's name, not the function, is kept: a state_dict holds no functions (so
        # gp.save writes it), and loads torch's (its key)
        self._anneal_func_type = anneal_strategy
        p = pct_start * total_steps
        if three_phase:
            self._phases = [
                (p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (2 * p - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                (total_steps - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum")]
        else:
            self._phases = [
                (p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                (total_steps - 1, "max_lr", "min_lr", "base_momentum", "max_momentum")]
        groups = _optimizer(optimizer, "OneCycleLR").param_groups
        max_lrs = _per_group(max_lr, len(groups), "max_lr", "OneCycleLR")
        for g, mx in zip(groups, max_lrs):
            if last_epoch == -1:
                g["initial_lr"] = mx / div_factor
                g["max_lr"] = mx
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            d = optimizer.defaults
            if "momentum" not in d and "betas" not in d:
                raise ValueError("OneCycleLR: cycle_momentum needs an optimizer with momentum or "
                                 "betas; pass cycle_momentum=False")
            self._beta = "betas" in d
            for g in groups:
                if last_epoch == -1:
                    if self._beta:
                        g["betas"] = (max_momentum, *g["betas"][1:])
                    else:
                        g["momentum"] = max_momentum
                    g["max_momentum"], g["base_momentum"] = max_momentum, base_momentum
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self) -> list:
        n = self.last_epoch
        if n > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {n} times, more than total_steps="
                             f"{self.total_steps}")
        anneal = self._cos if self._anneal_func_type == "cos" else self._linear
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if n <= end or i == len(self._phases) - 1:
                    pct = (n - start) / (end - start)
                    lr = anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        m = anneal(g[m0], g[m1], pct)
                        if self._beta:
                            g["betas"] = (m, *g["betas"][1:])
                        else:
                            g["momentum"] = m
                    break
                start = end
            lrs.append(lr)
        return lrs


class ReduceLROnPlateau(LRScheduler):
    """Multiply the lr by ``factor`` when ``step(metric)`` has not improved for ``patience``
    epochs (torch's rules for mode, threshold, cooldown, min_lr and eps). An LRScheduler, as
    torch's, though its constructor takes no initial step."""

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0,
                 min_lr=0.0, eps: float = 1e-8) -> None:
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        if mode not in ("min", "max") or threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceLROnPlateau: mode must be 'min'/'max' and threshold_mode "
                             "'rel'/'abs'")
        self.optimizer = _optimizer(optimizer, "ReduceLROnPlateau")
        self.min_lrs = _per_group(min_lr, len(optimizer.param_groups), "min_lr",
                                  "ReduceLROnPlateau")
        # one min_lr for all groups also covers groups added later (a list cannot)
        self.default_min_lr = None if isinstance(min_lr, (list, tuple)) else min_lr
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.best = self.mode_worse
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _better(self, a: float) -> bool:
        b, t = self.best, self.threshold
        if self.mode == "min":
            return a < (b * (1.0 - t) if self.threshold_mode == "rel" else b - t)
        return a > (b * (t + 1.0) if self.threshold_mode == "rel" else b + t)

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record this epoch's metric and reduce the lr after ``patience`` bad epochs
        (``epoch``: torch's deprecated form, the epoch number to record)."""
        current = float(metrics)
        if epoch is not None:
            _warn_epoch("ReduceLROnPlateau")
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if self._better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            groups = self.optimizer.param_groups
            if len(groups) != len(self.min_lrs):
                # a param group added since: zip had left it out (never reduced)
                if self.default_min_lr is None:
                    raise RuntimeError(
                        f"ReduceLROnPlateau: the optimizer has {len(groups)} param groups, "
                        f"{len(self.min_lrs)} when the scheduler was made (a param group was "
                        "added?); set min_lrs to one min_lr per group")
                self.min_lrs = [self.default_min_lr] * len(groups)
            for g, lo in zip(groups, self.min_lrs):
                old = float(g["lr"])
                new = max(old * self.factor, lo)
                if old - new > self.eps:
                    g["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def get_last_lr(self) -> list:
        """The learning rates after the last ``step``."""
        return self._last_lr

    def state_dict(self) -> dict:
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict``."""
        self.__dict__.update(state)


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith): the lr moves between ``base_lr`` and ``max_lr`` over
    cycles of ``step_size_up`` + ``step_size_down`` steps (call ``step()`` after each batch),
    the amplitude scaled by mode ('triangular': constant, 'triangular2': halved each cycle,
    'exp_range': ``gamma ** iteration``) or ``scale_fn``; momentum (or Adam's beta1) cycles
    the other way between ``max_momentum`` and ``base_momentum``."""

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
                 scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float = 0.8, max_momentum: float = 0.9, last_epoch: int = -1):
        groups = _optimizer(optimizer, "CyclicLR").param_groups
        n = len(groups)
        base_lrs = _per_group(base_lr, n, "base_lr", "CyclicLR")
        if last_epoch == -1:
            for lr, g in zip(base_lrs, groups):
                g["lr"] = lr
        self.max_lrs = _per_group(max_lr, n, "max_lr", "CyclicLR")
        step_size_up = float(step_size_up)
        step_size_down = float(step_size_down) if step_size_down is not None else step_size_up
        self.total_size = step_size_up + step_size_down
        self.step_ratio = step_size_up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or "
                             f"'exp_range' (or pass scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got "
                             f"{scale_mode!r}")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("CyclicLR: cycle_momentum needs an optimizer with momentum or "
                                 "betas; pass cycle_momentum=False")
            self.use_beta1 = "betas" in optimizer.defaults
            self.base_momentums = _per_group(base_momentum, n, "base_momentum", "CyclicLR")
            self.max_momentums = _per_group(max_momentum, n, "max_momentum", "CyclicLR")
            if last_epoch == -1:
                for mx, b, g in zip(self.max_momentums, self.base_momentums, groups):
                    if self.use_beta1:
                        g["betas"] = (mx, *g["betas"][1:])
                    else:
                        g["momentum"] = mx
                    g["max_momentum"], g["base_momentum"] = mx, b
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self.scale_mode = "cycle"
        elif self.mode == "triangular2":
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        """The amplitude's scale at cycle (or iteration) ``x``."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        s = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [b + (m - b) * scale_factor * s for b, m in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for g, b, m in zip(self.optimizer.param_groups, self.base_momentums,
                               self.max_momentums):
                momentum = m - (m - b) * scale_factor * s
                if self.use_beta1:
                    g["betas"] = (momentum, *g["betas"][1:])
                else:
                    g["momentum"] = momentum
        return lrs

    def state_dict(self) -> dict:
        """Everything but the optimizer and a custom scale_fn that is a function (a callable
        object's attributes are kept, as torch keeps them)."""
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict`` (this scheduler's own scale_fn kept)."""
        state = dict(state)
        fn = state.pop("_scale_fn_custom")
        super().load_state_dict(state)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


__all__ += ["CyclicLR"]
