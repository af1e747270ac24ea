"""Learning-rate schedulers, with torch.optim.lr_scheduler's update rules (so the lr sequences
agree): call ``scheduler.step()`` after ``optimizer.step()``, once per epoch (or batch)."""
from __future__ import annotations

import math

__all__ = ["CosineAnnealingLR", "LRScheduler", "OneCycleLR", "ReduceLROnPlateau", "StepLR"]


def _optimizer(optimizer, name: str):
    """``optimizer``, checked to be one (param groups to schedule)."""
    if not isinstance(getattr(optimizer, "param_groups", None), list):
        raise TypeError(f"{name}: {type(optimizer).__name__} is not an Optimizer")
    return optimizer


def _per_group(value, n: int, what: str, name: str) -> list:
    """``value`` for each of ``n`` param groups: a list or tuple of ``n``, or one for all."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values for {what} (one per param group), "
                             f"got {len(value)}")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base: keeps ``last_epoch`` and writes ``get_lr()`` into each param group's ``lr``."""

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
        self._step_count = 0
        self.step()

    def get_lr(self) -> list:
        raise NotImplementedError(f"{type(self).__name__}: get_lr is not implemented")

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set."""
        return self._last_lr

    def step(self) -> None:
        """Advance one epoch and set the new learning rates."""
        self._step_count += 1
        self.last_epoch += 1
        for g, lr in zip(self.optimizer.param_groups, self.get_lr()):
            g["lr"] = lr
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Everything but the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state: dict) -> None:
        """Restore from ``state_dict``."""
        self.__dict__.update(state)


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


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the base lr to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts), in torch's recursive form."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1):
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        gs, e, T, m = self.optimizer.param_groups, self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return [g["lr"] for g in gs]
        if self._step_count == 1 and e > 0:
            return [m + (b - m) * (1 + math.cos(e * math.pi / T)) / 2 for b in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [g["lr"] + (b - m) * (1 - math.cos(math.pi / T)) / 2
                    for b, g in zip(self.base_lrs, gs)]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (g["lr"] - m) + m for g in gs]


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
        self._anneal = self._cos if anneal_strategy == "cos" else self._linear
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
        lrs = []
        for g in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if n <= end or i == len(self._phases) - 1:
                    pct = (n - start) / (end - start)
                    lr = self._anneal(g[lr0], g[lr1], pct)
                    if self.cycle_momentum:
                        m = self._anneal(g[m0], g[m1], pct)
                        if self._beta:
                            g["betas"] = (m, *g["betas"][1:])
                        else:
                            g["momentum"] = m
                    break
                start = end
            lrs.append(lr)
        return lrs


class ReduceLROnPlateau:
    """Multiply the lr by ``factor`` when ``step(metric)`` has not improved for ``patience``
    epochs (torch's rules for mode, threshold, cooldown, min_lr and eps)."""

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
        self.mode, self.factor, self.patience = mode, factor, patience
        self.threshold, self.threshold_mode = threshold, threshold_mode
        self.cooldown, self.eps = cooldown, eps
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def _better(self, a: float) -> bool:
        b, t = self.best, self.threshold
        if self.mode == "min":
            return a < (b * (1.0 - t) if self.threshold_mode == "rel" else b - t)
        return a > (b * (t + 1.0) if self.threshold_mode == "rel" else b + t)

    def step(self, metrics) -> None:
        """Record this epoch's metric and reduce the lr after ``patience`` bad epochs."""
        current = float(metrics)
        self.last_epoch += 1
        if self._better(current):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for g, lo in zip(self.optimizer.param_groups, self.min_lrs):
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
