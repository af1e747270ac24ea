"""The optimizers: each one's update, written with namespace array ops in the order
torch.optim uses (so float32 trajectories agree to rounding)."""
from __future__ import annotations

from ..array import api as gp
from ..array import optim_steps

from .optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NLMS", "NaturalGradient"]


def _check(name: str, **values) -> None:
    for k, v in values.items():
        if v < 0:
            raise ValueError(f"{name}: {k} must be >= 0, got {v}")


def _in_float32(update, p, g, *state) -> None:
    """``update(p, g, *state)`` (in-place writes to the parameter and its state arrays); for a
    bfloat16 ``p`` computed in float32 and rounded once, as the fused rules (and torch.optim)
    compute: on float32 copies, then ``p`` and ``state`` assigned back in bfloat16."""
    if p.dtype != gp.bfloat16:
        update(p, g, *state)
        return
    wide = [gp.astype(a, gp.float32) for a in (p, *state)]
    update(wide[0], gp.astype(g, gp.float32), *wide[1:])
    for a, w in zip((p, *state), wide):
        a[...] = gp.astype(w, gp.bfloat16)


def _grad(p, g):
    """``g`` in ``p``'s dtype and shape (a gradient set by hand may differ), as the kernels take."""
    if g.dtype != p.dtype:
        g = gp.astype(g, p.dtype)
    if g.shape != p.shape:
        g = gp.broadcast_to(g, p.shape)
    return g


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

    _in_kernels = True

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False) -> None:
        _check("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        buf, first = None, False
        if group["momentum"]:
            buf = state.get("momentum_buffer")
            if buf is None:
                # torch starts the buffer as the first (decayed) gradient: the kernel writes it
                buf = state["momentum_buffer"] = gp.empty_like(p)
                first = True
        optim_steps.sgd_step(p, _grad(p, g), buf, lr=group["lr"], momentum=group["momentum"],
                             dampening=group["dampening"], weight_decay=group["weight_decay"],
                             nesterov=group["nesterov"], maximize=group["maximize"], first=first)


class Adam(Optimizer):
    """Adam (Kingma & Ba) with L2 weight decay, or decoupled decay in AdamW; amsgrad option."""

    _in_kernels = True

    _decoupled = False

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        _check(type(self).__name__, lr=lr, eps=eps, weight_decay=weight_decay)
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"{type(self).__name__}: betas must be in [0, 1), got {betas}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = gp.zeros_like(p)
        state["step"] += 1
        b1, b2 = group["betas"]
        optim_steps.adam_step(p, _grad(p, g), state["exp_avg"], state["exp_avg_sq"],
                              state.get("max_exp_avg_sq") if group["amsgrad"] else None,
                              lr=group["lr"], beta1=b1, beta2=b2, eps=group["eps"],
                              step=state["step"], weight_decay=group["weight_decay"],
                              decoupled=self._decoupled, maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr * weight_decay."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum."""

    _in_kernels = True

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        _check("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
               momentum=momentum)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = gp.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = gp.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = gp.zeros_like(p)
        state["step"] += 1
        optim_steps.rmsprop_step(
            p, _grad(p, g), state["square_avg"],
            state.get("grad_avg") if group["centered"] else None,
            state.get("momentum_buffer") if group["momentum"] > 0 else None,
            lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
            weight_decay=group["weight_decay"], momentum=group["momentum"],
            maximize=group["maximize"])


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.) with learning-rate decay and weight decay."""

    _in_kernels = True

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        _check("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
               initial_accumulator_value=initial_accumulator_value)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["sum"] = gp.full_like(p, group["initial_accumulator_value"])
        state["step"] += 1
        optim_steps.adagrad_step(p, _grad(p, g), state["sum"], lr=group["lr"], eps=group["eps"],
                                 step=state["step"], lr_decay=group["lr_decay"],
                                 weight_decay=group["weight_decay"], maximize=group["maximize"])


class NLMS(Optimizer):
    """Normalized least mean squares for a linear filter ``y = w . x``: with the loss
    ``e**2 / 2`` (``e = d - y``) the gradient is ``-e x``, so ``w -= mu * grad / (eps + x . x)``
    is the NLMS update ``w += mu e x / (eps + x . x)``.

    The rule needs the filter input's energy ``x . x``: give the input with ``set_input(x)``
    before ``step()`` (or, as before, ``step(x)``). ``step_size`` (the seed's name) and ``lr``
    are the same mu."""

    def __init__(self, params, lr: float | None = None, eps: float = 1e-6, *,
                 step_size: float | None = None) -> None:
        if lr is not None and step_size is not None:
            raise TypeError("NLMS: give lr or step_size (the same mu), not both")
        lr = 0.5 if lr is None and step_size is None else (lr if lr is not None else step_size)
        _check("NLMS", lr=lr, eps=eps)
        super().__init__(params, dict(lr=lr, eps=eps))
        self._energy = None

    def set_input(self, x) -> None:
        """The filter input of the sample whose gradient the next ``step()`` applies."""
        if isinstance(x, gp.Array):
            self._energy = gp.sum(x * x)
        elif isinstance(x, (int, float)) and not isinstance(x, bool):
            self._energy = float(x) ** 2
        else:
            raise TypeError(f"NLMS.set_input: x must be a grilly Array or a number, got "
                            f"{type(x).__name__}")

    def step(self, closure=None):
        """One NLMS update, normalized by the energy of the input given to ``set_input``
        (or passed here as ``step(x)``, the older form)."""
        if isinstance(closure, (gp.Array, int, float)) and not isinstance(closure, bool):
            self.set_input(closure)
            closure = None
        if self._energy is None:
            raise RuntimeError("NLMS.step: call set_input(x) with the filter input first (NLMS "
                               "normalizes the step by its energy x . x)")
        return super().step(closure)

    def _update(self, p, g, state, group) -> None:
        e = self._energy

        def update(p, g):
            p -= (group["lr"] / (group["eps"] + e)) * g if not isinstance(e, gp.Array) else \
                g * (group["lr"] / (group["eps"] + gp.astype(e, p.dtype)))
        _in_float32(update, p, g)


class NaturalGradient(Optimizer):
    """Natural gradient with a diagonal empirical Fisher: ``F = beta F + (1 - beta) g**2``,
    ``F_hat = F / (1 - beta**t)``, ``p -= lr * g / (F_hat + damping)`` (plus optional L2
    weight decay added to ``g``)."""

    def __init__(self, params, lr: float = 1e-2, beta: float = 0.95, damping: float = 1e-3,
                 weight_decay: float = 0.0) -> None:
        _check("NaturalGradient", lr=lr, damping=damping, weight_decay=weight_decay)
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"NaturalGradient: beta must be in [0, 1), got {beta}")
        super().__init__(params, dict(lr=lr, beta=beta, damping=damping,
                                      weight_decay=weight_decay))

    def _update(self, p, g, state, group) -> None:
        b = group["beta"]
        if not state:
            state["step"] = 0
            state["fisher"] = gp.zeros_like(p)
        state["step"] += 1
        step = state["step"]

        def update(p, g, f):
            if group["weight_decay"]:
                g = g + group["weight_decay"] * p
            f *= b
            f += (1.0 - b) * (g * g)
            fhat = f / (1.0 - b ** step)
            p -= group["lr"] * (g / (fhat + group["damping"]))
        _in_float32(update, p, g, state["fisher"])
