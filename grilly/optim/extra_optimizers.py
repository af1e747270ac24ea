"""torch.optim's LBFGS and Adafactor, written with namespace array ops in torch's order.

LBFGS reads scalars back to the host on every iteration, as torch's does: its convergence
tests, the curvature test of each history pair and the strong-Wolfe line search branch on
values (a loss, a directional derivative); so a step cannot be traced by grilly.jit. Adafactor
keeps its scalars on the device (torch's single-tensor form reads two norms with ``item()``)."""
from __future__ import annotations

import math

from ..array import api as gp
from ..autograd.mode import enable_grad, no_grad
from .optimizer import Optimizer, _restore
from .optimizers import _check, _grad, _lerp

__all__ = ["LBFGS", "Adafactor"]


def _cubic_interpolate(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), within ``bounds``."""
    xmin_bound, xmax_bound = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (xmin_bound + xmax_bound) / 2.0
    d2 = math.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, xmin_bound), xmax_bound)


def _dot(a, b) -> float:
    return float(gp.sum(a * b))


def _strong_wolfe(obj_func, x, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """torch.optim.lbfgs's line search (minFunc's): a step t meeting the strong Wolfe
    conditions along ``d``; returns (loss, flat gradient, t, evaluations)."""
    d_norm = float(gp.max(gp.abs(d)))
    f_new, g_new = obj_func(x, t, d)
    ls_func_evals = 1
    gtd_new = _dot(g_new, d)
    t_prev, f_prev, g_prev, gtd_prev = 0, f, g, gtd
    done = False
    ls_iter = 0
    # bracket a point meeting the conditions
    while ls_iter < max_ls:
        if f_new > (f + c1 * t * gtd) or (ls_iter > 1 and f_new >= f_prev):
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket, bracket_f = [t_prev, t], [f_prev, f_new]
            bracket_g, bracket_gtd = [g_prev, g_new], [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                               bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new, gtd_new
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
    if ls_iter == max_ls:   # reached the maximum number of evaluations
        bracket, bracket_f, bracket_g = [0, t], [f, f_new], [g, g_new]

    # zoom: shrink the bracket until a point meets the conditions
    insuf_progress = False
    low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(bracket[0], bracket_f[0], bracket_gtd[0],
                               bracket[1], bracket_f[1], bracket_gtd[1])
        # a step too close to a bracket end, or outside it, moves away from the end
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insuf_progress or t >= max(bracket) or t <= min(bracket):
                if abs(t - max(bracket)) < abs(t - min(bracket)):
                    t = max(bracket) - eps
                else:
                    t = min(bracket) + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False
        f_new, g_new = obj_func(x, t, d)
        ls_func_evals += 1
        gtd_new = _dot(g_new, d)
        ls_iter += 1
        if f_new > (f + c1 * t * gtd) or f_new >= bracket_f[low_pos]:
            bracket[high_pos], bracket_f[high_pos] = t, f_new
            bracket_g[high_pos], bracket_gtd[high_pos] = g_new, gtd_new
            low_pos, high_pos = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high_pos] - bracket[low_pos]) >= 0:
                bracket[high_pos], bracket_f[high_pos] = bracket[low_pos], bracket_f[low_pos]
                bracket_g[high_pos] = bracket_g[low_pos]
                bracket_gtd[high_pos] = bracket_gtd[low_pos]
            bracket[low_pos], bracket_f[low_pos] = t, f_new
            bracket_g[low_pos], bracket_gtd[low_pos] = g_new, gtd_new
    return bracket_f[low_pos], bracket_g[low_pos], bracket[low_pos], ls_func_evals


class LBFGS(Optimizer):
    """L-BFGS (torch.optim.LBFGS): ``step(closure)`` runs up to ``max_iter`` iterations of
    quasi-Newton updates from a history of ``history_size`` curvature pairs, with a fixed step
    ``lr`` or a strong-Wolfe line search. One parameter group; the closure must clear the
    gradients, compute the loss, call ``backward()`` and return the loss."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None) -> None:
        _check("LBFGS", lr=lr)
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError(f"LBFGS: line_search_fn must be None or 'strong_wolfe', got "
                             f"{line_search_fn!r}")
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]
        if any(p.dtype.kind == "c" for p in self._params):
            raise NotImplementedError("LBFGS: complex parameters are not supported")

    def _gather_flat_grad(self):
        return gp.concat([gp.zeros((p.size,), dtype=p.dtype, device=p.device) if p.grad is None
                          else gp.reshape(_grad(p, p.grad), (-1,)) for p in self._params])

    def _add_grad(self, step_size: float, update) -> None:
        offset = 0
        for p in self._params:
            n = p.size
            p[...] = p + step_size * gp.reshape(update[offset:offset + n], p.shape)
            offset += n

    def _directional_evaluate(self, closure, x, t, d):
        self._add_grad(t, d)
        loss = float(closure())
        flat_grad = self._gather_flat_grad()
        for p, v in zip(self._params, x):
            p[...] = v
        return loss, flat_grad

    def step(self, closure):
        """Up to ``max_iter`` L-BFGS iterations; returns the loss of the first closure call."""
        if closure is None or not callable(closure):
            raise TypeError("LBFGS.step needs a closure that reevaluates the model and returns "
                            "the loss")

        def evaluate():
            with enable_grad():
                return closure()

        with no_grad():
            return self._step(evaluate)

    def _step(self, closure):
        group = self.param_groups[0]
        lr = float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn, history_size = group["line_search_fn"], group["history_size"]

        state = self.state_of(self._params[0])
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if float(gp.max(gp.abs(flat_grad))) <= tolerance_grad:   # already optimal
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            # the direction: two-loop recursion over the history (kept on the device)
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = gp.sum(y * s)
                if float(ys) > 1e-10:   # a pair of positive curvature joins the history
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / gp.sum(y * y)
                num_old = len(old_dirs)
                if "al" not in state:
                    state["al"] = [None] * history_size
                al = state["al"]
                q = -flat_grad
                for i in range(num_old - 1, -1, -1):
                    al[i] = gp.sum(old_stps[i] * q) * ro[i]
                    q = q - al[i] * old_dirs[i]
                r = q * H_diag
                for i in range(num_old):
                    be_i = gp.sum(old_dirs[i] * r) * ro[i]
                    r = r + (al[i] - be_i) * old_stps[i]
                d = r
            prev_flat_grad = flat_grad
            prev_loss = loss
            # the step length
            if state["n_iter"] == 1:
                t = min(1.0, float(1.0 / gp.sum(gp.abs(flat_grad)))) * lr
            else:
                t = lr
            gtd = _dot(flat_grad, d)
            if gtd > -tolerance_change:   # not a descent direction
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                x_init = [gp.asarray(p, copy=True) for p in self._params]

                def obj_func(x, t, d):
                    return self._directional_evaluate(closure, x, t, d)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, x_init, t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = float(gp.max(gp.abs(flat_grad))) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # re-evaluate (no need after the last iteration)
                    loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(gp.max(gp.abs(flat_grad))) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if float(gp.max(gp.abs(d * t))) <= tolerance_change:   # lack of progress
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def _make_state_dict(self) -> dict:
        # as Optimizer's, the history lists copied (a step changes them in place)
        sd = super()._make_state_dict()
        for s in sd["state"].values():
            for k, v in s.items():
                if isinstance(v, list):
                    s[k] = list(v)
        return sd

    def _load(self, state_dict: dict) -> None:
        # as Optimizer's, the arrays in the history lists restored too
        super()._load(state_dict)
        p0 = self._params[0]
        for s in self._state.values():
            for k, v in s.items():
                if isinstance(v, list):
                    s[k] = [None if e is None else _restore(e, p0) for e in v]


class Adafactor(Optimizer):
    """Adafactor (torch.optim.Adafactor, Shazeer & Stern): second moments factored into row and
    column averages over a gradient's last two axes, relative step sizes from the parameter's
    RMS and an update clipped to RMS ``d``."""

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        _check("Adafactor", lr=lr, weight_decay=weight_decay)
        if not beta2_decay <= 0.0:
            raise ValueError(f"Adafactor: beta2_decay must be <= 0, got {beta2_decay}")
        eps = tuple(eps)
        if len(eps) != 2:
            raise ValueError(f"Adafactor: eps must be a pair (eps1, eps2), got {eps}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"Adafactor: eps[0] must be >= 0, got {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"Adafactor: eps[1] must be >= 0, got {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Adafactor: the clipping threshold d must be >= 1, got {d}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                                      weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize))
        for g in self.param_groups:
            if any(p.dtype.kind == "c" for p in g["params"]):
                raise NotImplementedError("Adafactor: complex parameters are not supported")

    def _update(self, p, g, state, group) -> None:
        g = _grad(p, g)
        if group["maximize"]:
            g = -g
        if not state:
            state["step"] = 0.0
            if g.ndim > 1:
                state["row_var"] = gp.zeros(p.shape[:-1] + (1,), dtype=p.dtype, device=p.device)
                state["col_var"] = gp.zeros(p.shape[:-2] + (1, p.shape[-1]), dtype=p.dtype,
                                            device=p.device)
            else:
                state["variance"] = gp.zeros_like(p)
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = gp.finfo(p.dtype).eps
        lr, wd = float(group["lr"]), group["weight_decay"]
        state["step"] += 1
        step = float(state["step"])
        one_minus_beta2_t = step ** group["beta2_decay"]
        rho_t = min(lr, 1 / step ** 0.5)
        root_n = p.size ** 0.5
        # the relative step size, from the parameter's RMS before the decay
        alpha = gp.maximum(gp.sqrt(gp.sum(p * p)) / root_n, eps2) * rho_t
        if wd != 0:
            p[...] = p * (1 - lr * wd)
        # new state arrays rather than writes into them: a 0-d one loaded from a state_dict
        # comes back as a number (Optimizer.load_state_dict reads 0-d values as step counts)
        if g.ndim > 1:
            row_var = state["row_var"] = _lerp(
                state["row_var"], gp.sum(g * g, axis=-1, keepdims=True) / g.shape[-1],
                one_minus_beta2_t)
            col_var = state["col_var"] = _lerp(
                state["col_var"], gp.sum(g * g, axis=-2, keepdims=True) / g.shape[-2],
                one_minus_beta2_t)
            var_estimate = gp.matmul(row_var, col_var) / gp.maximum(
                gp.mean(row_var, axis=-2, keepdims=True), eps1)
        else:
            var_estimate = state["variance"] = _lerp(state["variance"], g * g, one_minus_beta2_t)
        update = g / gp.sqrt(gp.maximum(var_estimate, eps1 * eps1))
        denom = gp.maximum(gp.sqrt(gp.sum(update * update)) / (root_n * group["d"]), 1.0)
        p[...] = p - (alpha / denom) * update
