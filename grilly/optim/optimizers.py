"""The optimizers: each one's update, written with namespace array ops in the order
torch.optim uses (so float32 trajectories agree to rounding)."""
from __future__ import annotations

import numpy as np

from ..array import api as gp
from ..array.defaults import get_default_dtype
from ..array import optim_steps
from ..array.array import Array

from .optimizer import Optimizer

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax", "ASGD",
           "Rprop", "Adadelta", "NLMS", "NaturalGradient", "SparseAdam"]


def _check(name: str, **values) -> None:
    lr = values.get("lr")
    if lr is not None and getattr(lr, "ndim", 0) and getattr(lr, "size", 1) != 1:
        raise ValueError(f"{name}: an lr given as an array must have one element, got shape "
                         f"{tuple(lr.shape)}")
    for k, v in values.items():
        if v < 0:
            raise ValueError(f"{name}: {k} must be >= 0, got {v}")


def _check_betas(name: str, betas) -> tuple:
    betas = tuple(betas)
    if len(betas) != 2:
        raise ValueError(f"{name}: betas must be a pair (beta1, beta2), got {betas}")
    for i, b in enumerate(betas):
        if not 0.0 <= b < 1.0:
            raise ValueError(f"{name}: betas[{i}] must be in [0, 1), got {b}")
    return betas


def _flags(name: str, *, foreach=None, fused=None, capturable=None, differentiable=False) -> dict:
    """torch.optim's implementation flags, kept in the param groups under torch's names (a
    state_dict carries them both ways). ``foreach``, ``fused`` and ``capturable`` change how
    torch runs a step, not what it computes; grilly's steps are already one fused update per
    parameter (one dispatch for all on Vulkan) that grilly.jit captures, so they are accepted
    and change nothing. ``differentiable=True`` (a step recorded by autograd) is refused: the
    updates write the parameters in place under no_grad. A flag torch's optimizer lacks is
    not a keyword here either (None above: not this optimizer's)."""
    if differentiable:
        raise NotImplementedError(f"{name}: differentiable=True is not supported (grilly's "
                                  "optimizer steps update parameters in place under no_grad, "
                                  "unrecorded by autograd)")
    if fused and foreach:
        raise RuntimeError(f"{name}: `fused` and `foreach` cannot be `True` together")
    out = {"foreach": foreach}
    if capturable is not None:
        out["capturable"] = bool(capturable)
    out["differentiable"] = False
    if fused is not None or name in ("SGD", "Adam", "AdamW", "Adagrad"):
        out["fused"] = fused
    return out


def _scalar(v) -> float:
    """A group option (a Python number, or a one-element Array such as an lr) as a float."""
    return float(v)


def _kept(x: float) -> float:
    """``x`` as torch.optim keeps some per-parameter scalars (NAdam's mu_product, ASGD's eta
    and mu): 0-d tensors of its scalar dtype, float64 when the default dtype is float64 and
    float32 otherwise, whose rounding the trajectory carries."""
    return float(x) if get_default_dtype() == gp.float64 else float(np.float32(x))


def _lerp(a, b, w: float):
    """torch.lerp(a, b, w) as torch's CPU kernel computes it (exp_avg.lerp_(grad, 1 - beta1))."""
    return a + w * (b - a) if abs(w) < 0.5 else b - (b - a) * (1.0 - w)


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
    if type(g) is Array and g._dtype is p._dtype and g._buf.shape == p._buf.shape:
        return g   # (the common case, without building the shape tuples)
    d = g.dtype
    if d is not p.dtype and d != p.dtype:   # (identity first: DType's == is Python code)
        g = gp.astype(g, p.dtype)
    if g.shape != p.shape:
        g = gp.broadcast_to(g, p.shape)
    return g


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, dampening, Nesterov and weight decay."""

    _in_kernels = True

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check("SGD", lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: nesterov needs momentum > 0 and dampening = 0")
        flags = _flags("SGD", foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize, **flags))

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
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        name = type(self).__name__
        _check(name, lr=lr, eps=eps, weight_decay=weight_decay)
        betas = _check_betas(name, betas)
        flags = _flags(name, foreach=foreach, fused=fused, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, **flags,
                                      decoupled_weight_decay=decoupled_weight_decay
                                      or self._decoupled))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
        vmax = None
        if group["amsgrad"]:
            if "max_exp_avg_sq" not in state:
                # (also where amsgrad is switched on in param_groups, or the state was saved
                # without it: the maximum starts from this step's exp_avg_sq, as at step 1)
                state["max_exp_avg_sq"] = gp.zeros_like(p)
            vmax = state["max_exp_avg_sq"]
        step = state["step"] = state["step"] + 1
        b1, b2 = group["betas"]
        # AdamW is decoupled whatever its groups say (as torch's, which sets it on load)
        decoupled = self._decoupled or bool(group.get("decoupled_weight_decay", False))
        optim_steps.adam_step(p, _grad(p, g), state["exp_avg"], state["exp_avg_sq"], vmax,
                              lr=group["lr"], beta1=b1, beta2=b2, eps=group["eps"],
                              step=step, weight_decay=group["weight_decay"],
                              decoupled=decoupled, maximize=group["maximize"])


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter): p *= 1 - lr * weight_decay."""

    _decoupled = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize,
                         foreach=foreach, capturable=capturable, differentiable=differentiable,
                         fused=fused)


class RMSprop(Optimizer):
    """RMSprop (Hinton), optionally centered and with momentum."""

    _in_kernels = True

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check("RMSprop", lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
               momentum=momentum)
        flags = _flags("RMSprop", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize,
                                      **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = gp.zeros_like(p)
        # (a buffer also starts where momentum or centered is switched on in param_groups, or
        # the state was saved without it, as at step 1; it was silently not centered)
        if group["momentum"] > 0 and "momentum_buffer" not in state:
            state["momentum_buffer"] = gp.zeros_like(p)
        if group["centered"] and "grad_avg" not in state:
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
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        _check("Adagrad", lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
               initial_accumulator_value=initial_accumulator_value)
        flags = _flags("Adagrad", foreach=foreach, fused=fused, differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["sum"] = gp.full_like(p, group["initial_accumulator_value"])
        state["step"] += 1
        optim_steps.adagrad_step(p, _grad(p, g), state["sum"], lr=group["lr"], eps=group["eps"],
                                 step=state["step"], lr_decay=group["lr_decay"],
                                 weight_decay=group["weight_decay"], maximize=group["maximize"])


# ---- the rest of torch.optim's elementwise optimizers, composed from array ops ---------------
# Each follows torch.optim's single-tensor step (what torch runs on CPU) op for op, addcdiv and
# addcmul in the order of torch's CPU kernels ((value * t1) / t2), so float64 trajectories
# agree to rounding; bfloat16 parameters compute in float32 and round once (_in_float32).


def _decayed(p, g, group):
    """The gradient with maximize and L2 weight decay applied (torch's order)."""
    if group["maximize"]:
        g = -g
    wd = group["weight_decay"]
    return g + wd * p if wd else g


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), torch's momentum_decay schedule
    ``mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * momentum_decay))``; L2 or decoupled decay."""

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check("NAdam", lr=lr, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay)
        betas = _check_betas("NAdam", betas)
        flags = _flags("NAdam", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["mu_product"] = 1.0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
        state["step"] += 1
        step, lr = state["step"], _scalar(group["lr"])
        b1, b2 = group["betas"]
        md, eps = group["momentum_decay"], group["eps"]
        mu = b1 * (1.0 - 0.5 * 0.96 ** (step * md))
        mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * md))
        # torch keeps mu_product as a 0-d tensor (a float32 multiply unless the default dtype
        # is float64; the double product of two float32 values is exact, then rounded once)
        mu_product = state["mu_product"] = _kept(state["mu_product"] * _kept(mu))
        mu_product_next = mu_product * mu_next
        c1 = -lr * (1.0 - mu) / (1.0 - mu_product)
        c2 = (-lr * mu_next) / (1.0 - mu_product_next)
        bc2 = 1.0 - b2 ** step
        wd, decoupled = group["weight_decay"], group["decoupled_weight_decay"]

        def update(p, g, m, v):
            if group["maximize"]:
                g = -g
            if wd:
                if decoupled:
                    p[...] = p * (1.0 - lr * wd)
                else:
                    g = g + wd * p
            m[...] = _lerp(m, g, 1.0 - b1)
            v[...] = v * b2 + ((1.0 - b2) * g) * g
            denom = gp.sqrt(v / bc2) + eps
            p[...] = p + (c1 * g) / denom
            p[...] = p + (c2 * m) / denom
        _in_float32(update, p, _grad(p, g), state["exp_avg"], state["exp_avg_sq"])


class RAdam(Optimizer):
    """Rectified Adam (Liu et al.): plain momentum SGD while the variance estimate's rho_t <= 5,
    rectified Adam after; L2 or decoupled decay."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check("RAdam", lr=lr, eps=eps, weight_decay=weight_decay)
        betas = _check_betas("RAdam", betas)
        flags = _flags("RAdam", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
        state["step"] += 1
        step, lr = state["step"], _scalar(group["lr"])
        b1, b2 = group["betas"]
        eps, wd, decoupled = group["eps"], group["weight_decay"], group["decoupled_weight_decay"]
        bc1, bc2 = 1.0 - b1 ** step, 1.0 - b2 ** step
        rho_inf = 2.0 / (1.0 - b2) - 1.0
        rho_t = rho_inf - 2.0 * step * (b2 ** step) / bc2
        rect = (((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                 / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5 if rho_t > 5.0 else None)

        def update(p, g, m, v):
            if group["maximize"]:
                g = -g
            if wd:
                if decoupled:
                    p[...] = p * (1.0 - lr * wd)
                else:
                    g = g + wd * p
            m[...] = _lerp(m, g, 1.0 - b1)
            v[...] = v * b2 + ((1.0 - b2) * g) * g
            corrected = m / bc1
            if rect is not None:
                adaptive = (bc2 ** 0.5) / (gp.sqrt(v) + eps)
                p[...] = p - corrected * lr * adaptive * rect
            else:
                p[...] = p - corrected * lr
        _in_float32(update, p, _grad(p, g), state["exp_avg"], state["exp_avg_sq"])


class Adamax(Optimizer):
    """Adam with the infinity norm (Kingma & Ba): ``u = max(beta2 u, |g| + eps)``."""

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check("Adamax", lr=lr, eps=eps, weight_decay=weight_decay)
        betas = _check_betas("Adamax", betas)
        flags = _flags("Adamax", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_inf"] = gp.zeros_like(p)
        state["step"] += 1
        b1, b2 = group["betas"]
        clr = _scalar(group["lr"]) / (1.0 - b1 ** state["step"])
        eps = group["eps"]

        def update(p, g, m, u):
            g = _decayed(p, g, group)
            m[...] = _lerp(m, g, 1.0 - b1)
            u[...] = gp.maximum(u * b2, gp.abs(g) + eps)
            p[...] = p + (-clr * m) / u
        _in_float32(update, p, _grad(p, g), state["exp_avg"], state["exp_inf"])


class ASGD(Optimizer):
    """Averaged SGD (Polyak & Juditsky): SGD with the step ``eta = lr / (1 + lambd lr t)**alpha``
    and a running average ``ax`` of the parameters from step ``t0`` on."""

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0.0, foreach: bool | None = None,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check("ASGD", lr=lr, weight_decay=weight_decay)
        flags = _flags("ASGD", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        lr = _scalar(group["lr"])
        if not state:
            # eta and mu: 0-d tensors in torch (float32 unless the default is float64)
            state["step"] = 0
            state["eta"] = _kept(lr)
            state["mu"] = 1.0
            state["ax"] = gp.zeros_like(p)
        state["step"] += 1
        eta, mu = float(state["eta"]), float(state["mu"])
        lambd = group["lambd"]

        def update(p, g, ax):
            g = _decayed(p, g, group)
            p[...] = p * (1.0 - lambd * eta)
            p[...] = p + (-eta) * g
            ax[...] = ax + (p - ax) * mu if mu != 1 else p
        _in_float32(update, p, _grad(p, g), state["ax"])
        step = state["step"]
        state["eta"] = _kept(lr / ((1.0 + lambd * lr * step) ** group["alpha"]))
        state["mu"] = _kept(1.0 / max(1.0, step - group["t0"]))


class Rprop(Optimizer):
    """Resilient backpropagation: per-element step sizes grown by ``etas[1]`` while the
    gradient keeps its sign and shrunk by ``etas[0]`` when it flips (that step skipped),
    clamped to ``step_sizes``; only the gradient's sign moves the parameter."""

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check("Rprop", lr=lr)
        etas, step_sizes = tuple(etas), tuple(step_sizes)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Rprop: etas must satisfy 0 < etas[0] < 1 < etas[1], got {etas}")
        flags = _flags("Rprop", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes,
                                      maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["prev"] = gp.zeros_like(p)
            state["step_size"] = gp.full_like(p, _scalar(group["lr"]))
        state["step"] += 1
        minus, plus = group["etas"]
        lo, hi = group["step_sizes"]

        def update(p, g, prev, size):
            if group["maximize"]:
                g = -g
            s = gp.sign(g * prev)
            factor = gp.where(s > 0, plus, gp.where(s < 0, minus, gp.ones_like(s)))
            size[...] = gp.clip(size * factor, min=lo, max=hi)
            g = gp.where(factor == minus, 0.0, g)
            p[...] = p - gp.sign(g) * size
            prev[...] = g
        _in_float32(update, p, _grad(p, g), state["prev"], state["step_size"])


class Adadelta(Optimizer):
    """Adadelta (Zeiler): step ``sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g``, both
    running averages with ``rho``, scaled by ``lr``."""

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check("Adadelta", lr=lr, eps=eps, weight_decay=weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Adadelta: rho must be in [0, 1], got {rho}")
        flags = _flags("Adadelta", foreach=foreach, capturable=capturable,
                       differentiable=differentiable)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **flags))

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["square_avg"] = gp.zeros_like(p)
            state["acc_delta"] = gp.zeros_like(p)
        state["step"] += 1
        lr, rho, eps = _scalar(group["lr"]), group["rho"], group["eps"]

        def update(p, g, sq, acc):
            g = _decayed(p, g, group)
            sq[...] = sq * rho + ((1.0 - rho) * g) * g
            delta = gp.sqrt(acc + eps) / gp.sqrt(sq + eps) * g
            acc[...] = acc * rho + ((1.0 - rho) * delta) * delta
            p[...] = p + (-lr) * delta
        _in_float32(update, p, _grad(p, g), state["square_avg"], state["acc_delta"])


class SparseAdam(Optimizer):
    """torch's lazy Adam for sparse gradients, on grilly's dense ones: only the entries whose
    gradient is nonzero (those a sparse gradient would list: embedding rows looked up) update
    their moments and move, with Adam's bias correction from the parameter's step count;
    the others are left as they are. (torch's takes sparse gradients only.)"""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if not float(lr) > 0.0:
            raise ValueError(f"SparseAdam: lr must be > 0, got {lr}")
        if not eps > 0.0:
            raise ValueError(f"SparseAdam: eps must be > 0, got {eps}")
        betas = _check_betas("SparseAdam", betas)
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for p in (p for g in self.param_groups for p in g["params"]):
            if p.dtype.kind == "c":
                raise ValueError("SparseAdam: complex parameters are not supported")

    def _update(self, p, g, state, group) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = gp.zeros_like(p)
            state["exp_avg_sq"] = gp.zeros_like(p)
        state["step"] += 1
        step = state["step"]
        b1, b2 = group["betas"]
        eps = group["eps"]
        step_size = _scalar(group["lr"]) * (1.0 - b2 ** step) ** 0.5 / (1.0 - b1 ** step)

        def update(p, g, m, v):
            if group["maximize"]:
                g = -g
            live = g != 0
            # torch's order: the moments' increments, then numer / denom at the listed entries
            m_new = m + (g - m) * (1.0 - b1)
            v_new = v + (g * g - v) * (1.0 - b2)
            step_ = (m_new / (gp.sqrt(v_new) + eps)) * (-step_size)
            m[...] = gp.where(live, m_new, m)
            v[...] = gp.where(live, v_new, v)
            p[...] = gp.where(live, p + step_, p)
        _in_float32(update, p, _grad(p, g), state["exp_avg"], state["exp_avg_sq"])


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
