"""The optimizers: each one's update, written with namespace array ops in the order
torch.optim uses (so float32 trajectories agree to rounding)."""
from __future__ import annotations

import math

from ..array import api as gp

from .optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NLMS", "NaturalGradient"]


def _check(name: str, **values) -> None:
    for k, v in values.items():
        if v < 0:
            raise ValueError(f"{name}: {k} must be >= 0, got {v}")


def _assign(p, new) -> None:
    p[...] = new


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

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
        d = -g if group["maximize"] else g
        if group["weight_decay"]:
            d = d + group["weight_decay"] * p
        mom = group["momentum"]
        if mom:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = gp.asarray(d, copy=True)
            else:
                buf *= mom
                buf += (1.0 - group["dampening"]) * d
            d = d + mom * buf if group["nesterov"] else buf
        p -= group["lr"] * d


class Adam(Optimizer):
    """Adam (Kingma & Ba) with L2 weight decay, or decoupled decay in AdamW; amsgrad option."""

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
        self._flat: dict = {}  # id(group) -> flat moment buffers (see _flat_state)

    def _update(self, p, g, state, group) -> None:
        lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
        if group["maximize"]:
            g = -g
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = gp.zeros_like(p)
        if wd:
            if self._decoupled:
                p *= 1.0 - lr * wd
            else:
                g = g + wd * p
        state["step"] += 1
        t = state["step"]
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m += (1.0 - b1) * (g - m)
        v *= b2
        v += (1.0 - b2) * (g * g)
        step_size = lr / (1.0 - b1 ** t)
        bc2 = math.sqrt(1.0 - b2 ** t)
        if group["amsgrad"]:
            mx = state["max_exp_avg_sq"]
            _assign(mx, gp.maximum(mx, v))
            denom = gp.sqrt(mx) / bc2 + group["eps"]
        else:
            denom = gp.sqrt(v) / bc2 + group["eps"]
        p -= step_size * (m / denom)


    def _step_group(self, group: dict) -> None:
        if not self._flat_step(group):
            super()._step_group(group)

    def _flat_step(self, group: dict) -> bool:
        """The whole group's update on concatenated buffers: a dozen ops per step instead of a
        dozen per parameter. Needs every parameter with a gradient, one dtype and device and one
        step count, and no amsgrad; returns False (per-parameter path) otherwise."""
        ps = group["params"]
        if len(ps) < 2 or group["amsgrad"] or any(p.grad is None for p in ps):
            return False
        dt, dev = ps[0].dtype, ps[0].device
        if any(p.dtype != dt or p.grad.dtype != dt or p.device != dev for p in ps):
            return False
        states = [self.state_of(p) for p in ps]
        if len({s.get("step", 0) for s in states}) != 1:
            return False
        m, v, sizes = self._flat_state(group, ps, states)
        lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
        g = gp.concat([gp.reshape(p.grad, (-1,)) for p in ps])
        if group["maximize"]:
            g = -g
        if wd:
            if self._decoupled:
                for p in ps:
                    p *= 1.0 - lr * wd
            else:
                g = g + wd * gp.concat([gp.reshape(p, (-1,)) for p in ps])
        t = states[0].get("step", 0) + 1
        m += (1.0 - b1) * (g - m)
        v *= b2
        v += (1.0 - b2) * (g * g)
        u = (m / (gp.sqrt(v) / math.sqrt(1.0 - b2 ** t) + group["eps"])) * (lr / (1.0 - b1 ** t))
        o = 0
        for p, s, n in zip(ps, states, sizes):
            p -= gp.reshape(u[o:o + n], p.shape)
            s["step"] = t
            o += n
        return True

    def _flat_state(self, group: dict, ps: list, states: list) -> tuple:
        """Flat moment buffers of ``group``; each parameter's ``exp_avg``/``exp_avg_sq`` state is
        a view into them. Rebuilt (from the per-parameter state) when those views were replaced,
        e.g. by ``load_state_dict``."""
        key = id(group)
        hit = self._flat.get(key)
        if hit is not None and hit[0] == [id(p) for p in ps] and all(
                s.get("exp_avg") is a and s.get("exp_avg_sq") is b
                for s, a, b in zip(states, hit[4], hit[5])):
            return hit[1], hit[2], hit[3]

        def flat(name):
            return gp.concat([gp.reshape(s[name], (-1,)) if name in s
                              else gp.zeros((p.size,), dtype=p.dtype, device=p.device)
                              for p, s in zip(ps, states)])
        m, v = flat("exp_avg"), flat("exp_avg_sq")
        sizes = [p.size for p in ps]
        o = 0
        for p, s, n in zip(ps, states, sizes):
            s["exp_avg"] = gp.reshape(m[o:o + n], p.shape)
            s["exp_avg_sq"] = gp.reshape(v[o:o + n], p.shape)
            s.setdefault("step", 0)
            o += n
        self._flat[key] = ([id(p) for p in ps], m, v, sizes, [s["exp_avg"] for s in states],
                      [s["exp_avg_sq"] for s in states])
        return m, v, sizes


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr * weight_decay."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum."""

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        _check("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
               momentum=momentum)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        a = group["alpha"]
        if group["maximize"]:
            g = -g
        if not state:
            state["step"] = 0
            state["square_avg"] = gp.zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = gp.zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = gp.zeros_like(p)
        state["step"] += 1
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        sq = state["square_avg"]
        sq *= a
        sq += (1.0 - a) * (g * g)
        if group["centered"]:
            ga = state["grad_avg"]
            ga += (1.0 - a) * (g - ga)
            avg = gp.sqrt(sq - ga * ga) + group["eps"]
        else:
            avg = gp.sqrt(sq) + group["eps"]
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            buf *= group["momentum"]
            buf += g / avg
            p -= group["lr"] * buf
        else:
            p -= group["lr"] * (g / avg)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al.) with learning-rate decay and weight decay."""

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, *, maximize: bool = False) -> None:
        _check("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
               initial_accumulator_value=initial_accumulator_value)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _update(self, p, g, state, group) -> None:
        if group["maximize"]:
            g = -g
        if not state:
            state["step"] = 0
            state["sum"] = gp.full_like(p, group["initial_accumulator_value"])
        state["step"] += 1
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        clr = group["lr"] / (1.0 + (state["step"] - 1) * group["lr_decay"])
        s = state["sum"]
        s += g * g
        p -= clr * (g / (gp.sqrt(s) + group["eps"]))


class NLMS(Optimizer):
    """Normalized least mean squares for a linear filter ``y = w . x``: with the loss
    ``e**2 / 2`` (``e = d - y``) the gradient is ``-e x``, so ``w -= lr * grad / (eps + x . x)``
    is the NLMS update ``w += mu e x / (eps + x . x)``. Pass the filter input to ``step(x)``."""

    def __init__(self, params, lr: float = 0.5, eps: float = 1e-6) -> None:
        _check("NLMS", lr=lr, eps=eps)
        super().__init__(params, dict(lr=lr, eps=eps))
        self._energy = None

    def step(self, x=None, closure=None):
        """One NLMS update, normalized by the energy ``x . x`` of the input ``x``."""
        if x is None:
            raise TypeError("NLMS.step: pass the filter input x (the regressor of this sample)")
        self._energy = gp.sum(x * x) if isinstance(x, gp.Array) else float(x)
        return super().step(closure)

    def _update(self, p, g, state, group) -> None:
        e = self._energy
        p -= (group["lr"] / (group["eps"] + e)) * g if not isinstance(e, gp.Array) else \
            g * (group["lr"] / (group["eps"] + gp.astype(e, p.dtype)))


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
        if group["weight_decay"]:
            g = g + group["weight_decay"] * p
        f = state["fisher"]
        f *= b
        f += (1.0 - b) * (g * g)
        fhat = f / (1.0 - b ** state["step"])
        p -= group["lr"] * (g / (fhat + group["damping"]))
