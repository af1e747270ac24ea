"""Elastic weight consolidation (Kirkpatrick et al. 2017).

After a task, the diagonal Fisher information of the model's parameters is estimated on that
task's data,

    F_i = E_x E_{y ~ p} [ (d log p(y | x; theta) / d theta_i)^2 ],

with y the observed label (``kind="empirical"``) or a label drawn from the model's own predictive
distribution (``kind="true"``, classification: softmax over the model's logits). Later tasks
then add the penalty

    lambda / 2 * sum_tasks sum_i F_i (theta_i - theta*_i)^2

(theta* the parameters at the end of each consolidated task) to their loss, so the parameters the
earlier tasks relied on move less.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .. import random as _random
from ..array import api as gp
from ..array.array import Array
from ..autograd.mode import no_grad
from ..compute import _real
from ..nn import functional as F
from ..nn.module import Module

__all__ = ["fisher_diagonal", "ewc_penalty", "EWC"]


def _nll(out: Array, y: Array) -> Array:
    return F.cross_entropy(out, y, reduction="sum")


def fisher_diagonal(model: Module, data: Iterable, *, kind: str = "empirical",
                    loss_fn: Callable | None = None, max_samples: int | None = None,
                    generator=None) -> dict[str, Array]:
    """The diagonal Fisher information of ``model``'s trainable parameters, averaged over the
    samples of ``data`` (an iterable of (x, y) batches): ``{name: Array shaped like the
    parameter}``. Per-sample gradients of ``loss_fn(output, target)`` (default: cross entropy,
    i.e. -log p(y|x) for logits); ``kind`` "empirical" uses the given labels, "true" draws
    them from softmax(output)."""
    op = "fisher_diagonal"
    if kind not in ("empirical", "true"):
        raise ValueError(f"{op}: kind must be 'empirical' or 'true', got {kind!r}")
    if kind == "true" and loss_fn is not None:
        raise ValueError(f"{op}: kind='true' samples class labels from the model's logits and "
                         "uses their cross entropy; it takes no loss_fn")
    if not isinstance(model, Module):
        raise TypeError(f"{op}: model must be a grilly.nn.Module, got {type(model).__name__}")
    loss_fn = loss_fn or _nll
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not named:
        raise ValueError(f"{op}: the model has no trainable parameters")
    acc = {n: gp.zeros_like(p) for n, p in named}
    gen = generator if generator is not None else _random.default_generator
    count = 0
    was_training = model.training
    model.eval()
    try:
        for batch in data:
            if not isinstance(batch, (tuple, list)) or len(batch) != 2:
                raise TypeError(f"{op}: data must yield (x, y) pairs, got {type(batch).__name__}")
            x, y = batch
            for i in range(x.shape[0]):
                if max_samples is not None and count >= max_samples:
                    break
                out = model(x[i:i + 1])
                if kind == "true":
                    with no_grad():
                        probs = F.softmax(out, dim=-1)
                        u = gen.uniform(0.0, 1.0, (1, 1), dtype=probs.dtype, device=probs.device)
                        target = gp.sum(gp.astype(gp.cumulative_sum(probs, axis=-1) < u,
                                                  gp.int64), axis=-1)
                        target = gp.minimum(target, out.shape[-1] - 1)
                else:
                    target = y[i:i + 1]
                for _, p in named:
                    p.grad = None
                loss_fn(out, target).backward()
                with no_grad():
                    for n, p in named:
                        if p.grad is not None:
                            acc[n] += p.grad * p.grad
                count += 1
            if max_samples is not None and count >= max_samples:
                break
    finally:
        for _, p in named:
            p.grad = None
        model.train(was_training)
    if count == 0:
        raise ValueError(f"{op}: data yielded no samples")
    with no_grad():
        return {n: a / float(count) for n, a in acc.items()}


def ewc_penalty(params: dict, fisher: dict, anchors: dict, lam: float = 1.0) -> Array:
    """``lam / 2 * sum_i F_i (theta_i - theta*_i)^2`` over the names of ``fisher``
    (differentiable in ``params``)."""
    op = "ewc_penalty"
    for arg, v in (("params", params), ("fisher", fisher), ("anchors", anchors)):
        if not isinstance(v, Mapping):
            raise TypeError(f"{op}: {arg} must be a dict of Arrays by parameter name (e.g. "
                            f"dict(model.named_parameters())), got {type(v).__name__}")
    lam = _real(op, "lam", lam)
    total = None
    for name, f in fisher.items():
        if name not in params or name not in anchors:
            raise KeyError(f"{op}: no parameter or anchor named {name!r}")
        p, a = params[name], anchors[name]
        for arg, v in (("parameter", p), ("anchor", a), ("Fisher", f)):
            if not isinstance(v, Array):
                raise TypeError(f"{op}: {name!r}: the {arg} must be a grilly Array, got "
                                f"{type(v).__name__}")
        if p.shape != f.shape or a.shape != f.shape:
            raise ValueError(f"{op}: {name!r}: parameter {p.shape}, anchor {a.shape} and Fisher "
                             f"{f.shape} must have one shape")
        term = gp.sum(f * gp.square(p - a))
        total = term if total is None else total + term
    if total is None:
        raise ValueError(f"{op}: fisher is empty")
    return (0.5 * lam) * total


class EWC:
    """EWC for ``model``: ``consolidate(data)`` after each task (estimates the Fisher there and
    anchors the current parameters), then add ``penalty()`` to the next tasks' loss."""

    def __init__(self, model: Module, lam: float = 100.0, *, kind: str = "empirical") -> None:
        if not isinstance(model, Module):
            raise TypeError(f"EWC: model must be a grilly.nn.Module, got {type(model).__name__}")
        if not _real("EWC", "lam", lam) >= 0:
            raise ValueError(f"EWC: lam must be >= 0, got {lam}")
        if kind not in ("empirical", "true"):   # checked here, not at the first consolidate
            raise ValueError(f"EWC: kind must be 'empirical' or 'true', got {kind!r}")
        self.model, self.lam, self.kind = model, float(lam), kind
        self.tasks: list[tuple[dict, dict]] = []   # (fisher, anchors) per consolidated task

    def consolidate(self, data: Iterable | None = None, *, fisher: dict | None = None,
                    **fisher_kw) -> dict:
        """Add a task: its Fisher (estimated on ``data``, or given) and the current parameters
        as its anchors. Returns the Fisher."""
        if (data is None) == (fisher is None):
            raise ValueError("EWC.consolidate: give exactly one of data or fisher")
        if fisher is None:
            fisher = fisher_diagonal(self.model, data, kind=self.kind, **fisher_kw)
        with no_grad():
            anchors = {n: gp.asarray(p, copy=True) for n, p in self.model.named_parameters()
                       if n in fisher}
        self.tasks.append((fisher, anchors))
        return fisher

    def penalty(self) -> Array:
        """The summed penalty of every consolidated task (0 before the first)."""
        params = dict(self.model.named_parameters())
        if not self.tasks:
            p0 = next(iter(params.values()))
            return gp.zeros((), dtype=p0.dtype, device=p0.device)
        total = None
        for fisher, anchors in self.tasks:
            t = ewc_penalty(params, fisher, anchors, self.lam)
            total = t if total is None else total + t
        return total
