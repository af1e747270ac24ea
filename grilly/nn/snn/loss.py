"""Losses on spike trains and membrane traces (time first: (T, batch, classes)), as
snnTorch.functional defines them: mse_count_loss, ce_rate_loss, ce_count_loss,
ce_max_membrane_loss, mse_membrane_loss, mse_temporal_loss, ce_temporal_loss (first spike
times), accuracy_rate, accuracy_temporal, and the l1_rate_sparsity regularizer."""
from __future__ import annotations

from ...array import api as gp

from ...array.array import Array
from ...array.dispatch import hooks as _hooks
from ...autograd.function import Function
from .. import functional as NF
from .checks import _check_input

__all__ = ["mse_count_loss", "ce_rate_loss", "ce_count_loss", "ce_max_membrane_loss",
           "MSECountLoss", "CERateLoss", "CECountLoss", "accuracy_rate", "mse_membrane_loss",
           "MSEMembraneLoss", "first_spike_time", "mse_temporal_loss", "MSETemporalLoss",
           "ce_temporal_loss", "CETemporalLoss", "accuracy_temporal", "l1_rate_sparsity",
           "L1RateSparsity"]


def _check(spk, targets, op: str, classes: int | None = None):
    spk = _check_input(spk, op, "spk_out")
    if spk.ndim != 3:
        raise ValueError(f"{op}: spk_out must be (T, batch, classes), got shape {spk.shape}")
    if not isinstance(targets, gp.Array) or not gp.isdtype(targets.dtype, "integral"):
        raise TypeError(f"{op}: targets must be an integer Array of class indices, got "
                        f"{getattr(targets, 'dtype', type(targets).__name__)}")
    if targets.shape != spk.shape[1:2]:
        raise ValueError(f"{op}: targets shape {targets.shape} does not match the batch "
                         f"{spk.shape[1]}")
    if targets.size and _hooks.host_op is None:   # (a grilly.jit trace cannot read them)
        # one host read where the labels are good (a sync: snnTorch raises on a bad label too)
        c = spk.shape[2] if classes is None else classes
        if bool(gp.any(gp.logical_or(targets < 0, targets >= c))):
            lo, hi = int(gp.min(targets)), int(gp.max(targets))
            raise ValueError(f"{op}: targets must be class indices in [0, {c}), got values in "
                             f"[{lo}, {hi}]")
    return spk


def _classes(spk_out, population_code, num_classes, op: str) -> int | None:
    """The class count of a population code (None without one): ``num_classes`` must divide
    the outputs, each class owning a consecutive group of them (snnTorch's)."""
    if not population_code:
        return None
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"{op}: population_code=True needs num_classes, an int >= 1, got "
                         f"{num_classes!r}")
    n = getattr(spk_out, "shape", (0,))[-1]
    if n % num_classes:
        raise ValueError(f"{op}: num_classes ({num_classes}) must divide the number of "
                         f"outputs ({n}) for a population code")
    return num_classes


def _counts(spk: Array, classes: int | None) -> Array:
    """(batch, classes) spike counts over time; with a population code each class's group of
    outputs summed."""
    counts = gp.sum(spk, axis=0)
    if classes is None:
        return counts
    b, n = counts.shape
    return gp.sum(gp.reshape(counts, (b, classes, n // classes)), axis=2)


def _class_weight(weight, like: Array, classes: int, op: str) -> Array | None:
    """``weight`` (one number per class, snnTorch's) as an Array on the input's device and in
    its dtype, or None."""
    if weight is None:
        return None
    if hasattr(weight, "detach") and not isinstance(weight, Array):   # a torch tensor
        weight = weight.detach().cpu().numpy()
    try:
        w = gp.asarray(weight, dtype=like.dtype, device=like.device)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: weight must be an array of {classes} numbers (one per class), "
                        f"got {type(weight).__name__} ({e})") from None
    if w.ndim != 1 or w.shape[0] != classes:
        raise ValueError(f"{op}: weight must have shape ({classes},), one number per class, "
                         f"got {tuple(w.shape)}")
    return w


def _per_sample(w: Array, targets: Array) -> Array:
    """Each sample's weight, that of its label: (batch,)."""
    return gp.take(w, gp.astype(targets, gp.int64), axis=0)


def _reduce(loss: Array, reduction: str) -> Array:
    """A weighted loss reduced as snnTorch does it: the plain mean (not divided by the weights'
    sum), the sum, or as it is."""
    if reduction == "mean":
        return gp.mean(loss)
    return gp.sum(loss) if reduction == "sum" else loss


def mse_count_loss(spk_out: Array, targets: Array, correct_rate: float = 1.0,
                   incorrect_rate: float = 0.0, reduction: str = "mean",
                   population_code: bool = False, num_classes=False, weight=None) -> Array:
    """MSE between spike counts and int(T * rate) targets, divided by T (as snnTorch does);
    ``population_code``: counts per class group of the outputs, targets int(T * rate *
    outputs / num_classes); ``weight`` (per class): each sample's errors times its label's."""
    op = "mse_count_loss"
    classes = _classes(spk_out, population_code, num_classes, op)
    spk = _check(spk_out, targets, op, classes)
    _reduction(reduction, op)
    if not (0.0 <= incorrect_rate <= 1.0 and 0.0 <= correct_rate <= 1.0):
        raise ValueError(f"{op}: correct_rate and incorrect_rate must be in [0, 1]")
    steps, outputs = spk.shape[0], spk.shape[2]
    if classes is None:
        classes = outputs
        on, off = int(steps * correct_rate), int(steps * incorrect_rate)
    else:   # (snnTorch's order of the products, so int() rounds the same way)
        on = int(steps * correct_rate * (outputs / classes))
        off = int(steps * incorrect_rate * (outputs / classes))
    counts = _counts(spk, None if classes == outputs else classes)
    hot = NF._one_hot(targets, classes, dtype=spk.dtype)   # checked in _check (eagerly)
    want = hot * float(on - off) + float(off)
    w = _class_weight(weight, spk, classes, op)
    if w is None:
        return NF.mse_loss(counts, want, reduction=reduction) / float(steps)
    per = NF.mse_loss(counts, want, reduction="none") * gp.expand_dims(_per_sample(w, targets),
                                                                        axis=-1)
    return _reduce(per / float(steps), reduction)


def ce_rate_loss(spk_out: Array, targets: Array, reduction: str = "mean",
                 weight=None) -> Array:
    """Cross-entropy of every step's output (spikes as logits), averaged over steps
    (``reduction="none"``: per sample, "sum": summed over the batch); ``weight`` (per class):
    each sample's loss times its label's (the mean then the plain batch mean, snnTorch's)."""
    op = "ce_rate_loss"
    spk = _check(spk_out, targets, op)
    _reduction(reduction, op)
    steps, batch = spk.shape[0], spk.shape[1]
    flat = gp.reshape(spk, (steps * batch, spk.shape[2]))
    tgt = gp.reshape(gp.broadcast_to(gp.expand_dims(targets, axis=0), (steps, batch)), (-1,))
    w = _class_weight(weight, spk, spk.shape[2], op)
    if w is not None:
        per = NF.cross_entropy(flat, tgt, reduction="none")
        per = gp.sum(gp.reshape(per, (steps, batch)), axis=0) / float(steps)
        return _reduce(per * _per_sample(w, targets), reduction)
    if reduction == "mean":
        return NF.cross_entropy(flat, tgt)
    loss = NF.cross_entropy(flat, tgt, reduction=reduction) / float(steps)
    return gp.sum(gp.reshape(loss, (steps, batch)), axis=0) if reduction == "none" else loss


def ce_count_loss(spk_out: Array, targets: Array, reduction: str = "mean",
                  population_code: bool = False, num_classes=False, weight=None) -> Array:
    """Cross-entropy with the spike counts over time as logits (``population_code``: the
    counts of each class's group of outputs); ``weight`` as in ``ce_rate_loss``."""
    op = "ce_count_loss"
    classes = _classes(spk_out, population_code, num_classes, op)
    spk = _check(spk_out, targets, op, classes)
    return _weighted_ce(_counts(spk, classes), targets, reduction, weight, op)


def _weighted_ce(logits: Array, targets: Array, reduction: str, weight, op: str) -> Array:
    """Cross-entropy; with ``weight`` each sample's times its label's, reduced as snnTorch's
    (the plain batch mean, not torch's weighted mean)."""
    reduction = _reduction(reduction, op)
    w = _class_weight(weight, logits, logits.shape[-1], op)
    if w is None:
        return NF.cross_entropy(logits, targets, reduction=reduction)
    per = NF.cross_entropy(logits, targets, reduction="none")
    return _reduce(per * _per_sample(w, targets), reduction)


def ce_max_membrane_loss(mem_out: Array, targets: Array, reduction: str = "mean",
                         weight=None) -> Array:
    """Cross-entropy with each output's largest membrane potential over time as logits
    (``weight`` as in ``ce_rate_loss``)."""
    op = "ce_max_membrane_loss"
    mem = _check(mem_out, targets, op)
    return _weighted_ce(gp.max(mem, axis=0), targets, reduction, weight, op)


def accuracy_rate(spk_out: Array, targets: Array, population_code: bool = False,
                  num_classes=False) -> float:
    """The fraction of samples whose most-spiking output (spike count over time, the first
    class on a tie; ``population_code``: the most-spiking class group) is the target:
    snnTorch's ``SF.accuracy_rate``, a Python float."""
    op = "accuracy_rate"
    classes = _classes(spk_out, population_code, num_classes, op)
    spk = _check(spk_out, targets, op, classes)
    if spk.shape[1] == 0:
        raise ValueError("accuracy_rate: the batch is empty")
    pred = gp.argmax(_counts(spk, classes), axis=1)
    return float(gp.mean(gp.astype(pred == targets, gp.float64)))


class _Loss:
    fn = staticmethod(ce_rate_loss)

    def __call__(self, spk_out: Array, targets: Array) -> Array:
        return type(self).fn(spk_out, targets, **self.kw)

    def __init__(self, **kw):
        self.kw = kw


class MSECountLoss(_Loss):
    """``mse_count_loss`` as a callable object (snnTorch's ``SF.mse_count_loss(...)``)."""
    fn = staticmethod(mse_count_loss)

    def __init__(self, correct_rate: float = 1.0, incorrect_rate: float = 0.0,
                 population_code: bool = False, num_classes=False, reduction: str = "mean",
                 weight=None):
        super().__init__(correct_rate=correct_rate, incorrect_rate=incorrect_rate,
                         population_code=population_code, num_classes=num_classes,
                         reduction=_reduction(reduction, "MSECountLoss"), weight=weight)


class CERateLoss(_Loss):
    """``ce_rate_loss`` as a callable object."""
    fn = staticmethod(ce_rate_loss)

    def __init__(self, reduction: str = "mean", weight=None):
        super().__init__(reduction=_reduction(reduction, "CERateLoss"), weight=weight)


class CECountLoss(_Loss):
    """``ce_count_loss`` as a callable object."""
    fn = staticmethod(ce_count_loss)

    def __init__(self, population_code: bool = False, num_classes=False,
                 reduction: str = "mean", weight=None):
        super().__init__(population_code=population_code, num_classes=num_classes,
                         reduction=_reduction(reduction, "CECountLoss"), weight=weight)


_REDUCTIONS = ("mean", "sum", "none")


def _targets_convert(targets: Array, classes: int, on_target, off_target, dtype) -> Array:
    """snnTorch's ``spikegen.targets_convert``: ``on_target`` at the label, ``off_target``
    elsewhere, except that with on_target > off_target snnTorch clamps one_hot * on_target
    from below at off_target, so the others get max(off_target, 0) (mse_temporal_loss's
    defaults, 0 and -1, give every output the target 0)."""
    hot = NF._one_hot(targets, classes, dtype=dtype)   # checked by the callers
    on, off = float(on_target), float(off_target)
    if on > off:
        return gp.maximum(hot * on, off)
    return hot * on + (1.0 - hot) * off


def _reduction(reduction: str, op: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    return reduction


def mse_membrane_loss(mem_out: Array, targets: Array, time_var_targets: bool = False,
                      on_target: float = 1.0, off_target: float = 0.0,
                      reduction: str = "mean", weight=None) -> Array:
    """MSE between every step's membrane and ``on_target`` at the label (``off_target``
    elsewhere), summed over the steps and divided by T (snnTorch's); ``time_var_targets``:
    ``targets`` (T, batch) labels, one per step; ``weight`` (per class): each sample's errors
    times its label's."""
    op = "mse_membrane_loss"
    reduction = _reduction(reduction, op)
    if weight is not None and time_var_targets:
        raise NotImplementedError(f"{op}: weight with time_var_targets=True is not supported "
                                  "(a sample's label changes over the steps)")
    mem = _check_input(mem_out, op, "mem_out")
    if mem.ndim != 3:
        raise ValueError(f"{op}: mem_out must be (T, batch, classes), got shape {mem.shape}")
    steps, classes = mem.shape[0], mem.shape[2]
    if time_var_targets:   # (T, batch) labels: each step's checked as a batch's
        if not isinstance(targets, gp.Array) or targets.shape != mem.shape[:2]:
            raise ValueError(f"{op}: with time_var_targets, targets must be (T, batch) labels "
                             f"{mem.shape[:2]}, got {getattr(targets, 'shape', targets)}")
        _check(gp.reshape(mem, (1, -1, classes)), gp.reshape(targets, (-1,)), op)
    else:
        _check(mem, targets, op)
    want = _targets_convert(targets, classes, on_target, off_target, mem.dtype)
    if not time_var_targets:
        want = gp.broadcast_to(gp.expand_dims(want, axis=0), mem.shape)
    per = NF.mse_loss(mem, want, reduction="none")
    w = _class_weight(weight, mem, classes, op)
    if w is not None:
        per = gp.sum(per, axis=0) * gp.expand_dims(_per_sample(w, targets), axis=-1)
        return _reduce(per / float(steps), reduction)
    if reduction == "none":
        return gp.sum(per, axis=0) / float(steps)
    if reduction == "sum":
        return gp.sum(per) / float(steps)
    return gp.sum(gp.mean(per, axis=(1, 2))) / float(steps)


class MSEMembraneLoss(_Loss):
    """``mse_membrane_loss`` as a callable object (snnTorch's ``SF.mse_membrane_loss(...)``)."""
    fn = staticmethod(mse_membrane_loss)

    def __init__(self, time_var_targets: bool = False, on_target: float = 1.0,
                 off_target: float = 0.0, reduction: str = "mean", weight=None):
        if weight is not None and time_var_targets:
            raise NotImplementedError("MSEMembraneLoss: weight with time_var_targets=True is "
                                      "not supported")
        super().__init__(time_var_targets=time_var_targets, on_target=on_target,
                         off_target=off_target, reduction=reduction, weight=weight)


class _FirstSpike(Function):
    """snnTorch's SpikeTime.FirstSpike: forward the first spike's step (T - 1 where none);
    backward -grad at that step only (its sign estimator)."""

    @staticmethod
    def forward(ctx, spk):
        steps = spk.shape[0]
        first = gp.zeros_like(spk[0])
        for t in range(steps):   # spk[t] (t + 1) where no earlier spike, as snnTorch sums it
            first = first + spk[t] * float(t + 1) * gp.astype(first == 0, spk.dtype)
        first = first + gp.astype(first == 0, spk.dtype) * float(steps) - 1.0
        ctx.first, ctx.steps = first, steps
        return first

    @staticmethod
    def backward(ctx, g):
        t = gp.reshape(gp.arange(ctx.steps, dtype=g.dtype, device=g.device),
                       (ctx.steps,) + (1,) * g.ndim)
        at = gp.astype(t == gp.astype(gp.astype(ctx.first, gp.int64), g.dtype), g.dtype)
        return -(gp.expand_dims(g, axis=0) * at)


class _Tolerance(Function):
    """A spike time within ``tolerance`` of its target becomes the target; the gradient passes
    straight through (snnTorch's SpikeTime.Tolerance)."""

    @staticmethod
    def forward(ctx, time, target, *, tolerance):
        return gp.where(gp.abs(time - target) < tolerance, target, time)

    @staticmethod
    def backward(ctx, g):
        return g, None


def first_spike_time(spk_out: Array) -> Array:
    """Each output's first spike step in ``spk_out`` (T, batch, classes) -> (batch, classes),
    T - 1 where it never spikes; its gradient is snnTorch's (-1 at that step)."""
    spk = _check_input(spk_out, "first_spike_time", "spk_out")
    if spk.ndim != 3 or spk.shape[0] == 0:
        raise ValueError(f"first_spike_time: spk_out must be (T, batch, classes) with T >= 1, "
                         f"got shape {spk.shape}")
    return _FirstSpike.apply(spk)


def _spike_times(spk, targets, op, target_is_time, on_target, off_target, tolerance):
    steps, classes = spk.shape[0], spk.shape[2]
    if target_is_time:
        tgt = _check_input(targets, op, "targets")
        if tgt.shape != spk.shape[1:]:
            raise ValueError(f"{op}: with target_is_time, targets must be (batch, classes) "
                             f"times {spk.shape[1:]}, got {tgt.shape}")
    else:
        _check(spk, targets, op)
        tgt = _targets_convert(targets, classes, on_target, off_target, spk.dtype)
    tgt = gp.where(tgt < 0, tgt + float(steps), tgt)   # -1 is the last step
    time = first_spike_time(spk)
    if tolerance:
        time = _Tolerance.apply(time, gp.astype(tgt, time.dtype), tolerance=float(tolerance))
    return time, tgt


def mse_temporal_loss(spk_out: Array, targets: Array, target_is_time: bool = False,
                      on_target: float = 0, off_target: float = -1, tolerance: float = 0,
                      multi_spike: bool = False, reduction: str = "mean",
                      weight=None) -> Array:
    """MSE between the first spike times and target times, both divided by T: the label's
    output should fire at ``on_target``, the others at ``off_target`` (negative: from the
    end), or ``target_is_time`` (targets (batch, classes) times); snnTorch's. ``weight``
    (per class): each sample's errors times its label's."""
    op = "mse_temporal_loss"
    reduction = _reduction(reduction, op)
    if multi_spike:
        raise NotImplementedError(f"{op}: multi_spike=True is not supported")
    if weight is not None and target_is_time:
        raise NotImplementedError(f"{op}: weight with target_is_time=True is not supported "
                                  "(the targets are times, not labels to weigh by)")
    spk = _check_input(spk_out, op, "spk_out")
    if spk.ndim != 3:
        raise ValueError(f"{op}: spk_out must be (T, batch, classes), got shape {spk.shape}")
    time, tgt = _spike_times(spk, targets, op, target_is_time, on_target, off_target,
                             tolerance)
    steps = float(spk.shape[0])
    w = _class_weight(weight, spk, spk.shape[2], op)
    if w is None:
        return NF.mse_loss(time / steps, tgt / steps, reduction=reduction)
    per = NF.mse_loss(time / steps, tgt / steps, reduction="none")
    return _reduce(per * gp.expand_dims(_per_sample(w, targets), axis=-1), reduction)


def ce_temporal_loss(spk_out: Array, targets: Array, inverse: str = "negate",
                     reduction: str = "mean", weight=None) -> Array:
    """Cross-entropy with the first spike times as (inverted) logits: ``inverse="negate"``
    -t, ``"reciprocal"`` 1 / (t + 1), so the earliest output wins; snnTorch's (``weight``:
    torch's class weights, the mean divided by the labels' weights' sum)."""
    op = "ce_temporal_loss"
    reduction = _reduction(reduction, op)
    if inverse not in ("negate", "reciprocal"):
        raise ValueError(f"{op}: inverse must be 'negate' or 'reciprocal', got {inverse!r}")
    spk = _check(spk_out, targets, op)
    time = first_spike_time(spk)
    logits = -time if inverse == "negate" else 1.0 / (time + 1.0)
    w = _class_weight(weight, spk, spk.shape[2], op)
    return NF.cross_entropy(logits, targets, weight=w, reduction=reduction)


def accuracy_temporal(spk_out: Array, targets: Array) -> float:
    """The fraction of samples whose earliest-spiking output (the first class on a tie) is
    the target: snnTorch's ``SF.accuracy_temporal``, a Python float."""
    spk = _check(spk_out, targets, "accuracy_temporal")
    if spk.shape[1] == 0:
        raise ValueError("accuracy_temporal: the batch is empty")
    with _no_grad():
        pred = gp.argmin(first_spike_time(spk), axis=1)
    return float(gp.mean(gp.astype(pred == targets, gp.float64)))


def l1_rate_sparsity(spk_out: Array, Lambda: float = 1e-5) -> Array:  # noqa: N803
    """``Lambda`` times the total spike count: snnTorch's ``SF.l1_rate_sparsity``
    regularizer (added to a loss to keep firing sparse)."""
    spk = _check_input(spk_out, "l1_rate_sparsity", "spk_out")
    return gp.sum(spk) * float(Lambda)


class L1RateSparsity:
    """``l1_rate_sparsity`` as a callable object (snnTorch's ``SF.l1_rate_sparsity(Lambda)``)."""

    def __init__(self, Lambda: float = 1e-5):  # noqa: N803
        self.Lambda = Lambda

    def __call__(self, spk_out: Array) -> Array:
        return l1_rate_sparsity(spk_out, self.Lambda)


class MSETemporalLoss(_Loss):
    """``mse_temporal_loss`` as a callable object (snnTorch's ``SF.mse_temporal_loss(...)``)."""
    fn = staticmethod(mse_temporal_loss)

    def __init__(self, target_is_time: bool = False, on_target: float = 0,
                 off_target: float = -1, tolerance: float = 0, multi_spike: bool = False,
                 reduction: str = "mean", weight=None):
        if weight is not None and target_is_time:
            raise NotImplementedError("MSETemporalLoss: weight with target_is_time=True is "
                                      "not supported")
        super().__init__(target_is_time=target_is_time, on_target=on_target,
                         off_target=off_target, tolerance=tolerance, multi_spike=multi_spike,
                         reduction=reduction, weight=weight)


class CETemporalLoss(_Loss):
    """``ce_temporal_loss`` as a callable object (snnTorch's ``SF.ce_temporal_loss(...)``)."""
    fn = staticmethod(ce_temporal_loss)

    def __init__(self, inverse: str = "negate", reduction: str = "mean", weight=None):
        super().__init__(inverse=inverse, reduction=reduction, weight=weight)


def _no_grad():
    from ...autograd import no_grad
    return no_grad()
