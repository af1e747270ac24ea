"""SpikingJelly 2.0's ``learning.plasticity``: ``STDPLearner``, ``MSTDPLearner`` and
``MSTDPETLearner``. A learner watches a synapse's input (pre spikes) and a neuron module's output
(post spikes) through grilly.nn's forward hooks (``snn.monitor``); ``step()`` consumes what was
recorded, advances the traces and either adds -delta_w to ``synapse.weight.grad`` (``on_grad``,
so that an optimizer's step applies +lr delta_w) or returns delta_w. The weight itself is never
written.

    learner = learning.STDPLearner("s", net[0], net[1], tau_pre=2.0, tau_post=2.0)
    net(x); learner.step(on_grad=True); optimizer.step()

Equations (sums over the batch and, for convolutions, over the output positions; (x) is the
outer product on the channel axes):
    STDP:   x_pre <- x_pre (1 - 1/tau_pre) + s_pre,  x_post <- x_post (1 - 1/tau_post) + s_post
            delta_w = f_post(W) sum s_post (x) x_pre - f_pre(W) sum x_post (x) s_pre
    MSTDP:  the traces decay by exp(-1/tau); e[t] = f_post(W) s_post (x) x_pre - f_pre(W) x_post
            (x) s_pre per sample; delta_w = sum_b r_b e_b[t-1] (the first step's is 0)
    MSTDPET: unbatched [I]/[O] spikes; z <- z exp(-1/tau_trace) + e[t-1] / tau_trace;
            delta_w = r z
In 'm' (STDPLearner only) each recorded (T, B, ...) sequence adds up the steps' delta_w at the
fixed weight."""
from __future__ import annotations

import math
import numbers
from typing import Callable

from ....array import api as gp
from ....array.array import Array
from ....array.plasticity import plasticity_step
from ....autograd import no_grad
from ... import functional as F
from ...layers import Conv1d, Conv2d, Linear
from ...module import Module
from .. import monitor
from ..base import MemoryModule

__all__ = ["STDPLearner", "MSTDPLearner", "MSTDPETLearner"]


def _identity(x):
    return x


def _detach(x):
    return x.detach() if isinstance(x, Array) else x


def _tau(value, name: str, op: str, exponential: bool) -> float:
    """A time constant in steps, finite and > 0 (exponential decay) or >= 1 (1 - 1/tau)."""
    bound = "> 0" if exponential else ">= 1"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{op}: {name} must be a number {bound}, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v <= 0 or (not exponential and v < 1):
        raise ValueError(f"{op}: {name} must be finite and {bound} time steps, got {value!r}")
    return v


def _advance(trace: Array | None, spike: Array, decay: float) -> Array:
    """A trace one step on: trace decay + spike (a missing trace is zeros)."""
    return spike if trace is None else trace * decay + spike


def _same_shape(trace: Array | None, spike: Array, op: str, name: str) -> None:
    if trace is not None and tuple(trace.shape) != tuple(spike.shape):
        raise ValueError(f"{op}: the {name} trace has shape {tuple(trace.shape)}, the spikes "
                         f"{tuple(spike.shape)}; reset() before changing the batch size")


def _conv_pads(conv) -> tuple:
    """torch's ``_reversed_padding_repeated_twice`` of a Conv1d/Conv2d: (before, after) pairs
    from the last axis backwards ('same' puts the odd one after, as torch)."""
    k = conv.kernel_size
    if conv.padding == "valid":
        pads = [(0, 0)] * len(k)
    elif conv.padding == "same":
        pads = [((kk - 1) // 2, kk - 1 - (kk - 1) // 2) for kk in k]
    else:
        pads = [(p, p) for p in conv.padding]
    return tuple(v for pair in reversed(pads) for v in pair)


class _Learner(MemoryModule):
    """What the three learners share: the monitors, enable/disable/reset/close and the
    bookkeeping of ``step``."""

    _synapses: tuple = (Linear, Conv1d, Conv2d)
    _exponential = False   # traces decay by 1 - 1/tau (STDP) or exp(-1/tau) (the reward ones)

    def __init__(self, step_mode: str, synapse, sn, tau_pre: float, tau_post: float,
                 f_pre: Callable, f_post: Callable, *extra_taus: tuple) -> None:
        op = type(self).__name__
        # (checked first, as SpikingJelly checks them; ``extra_taus``: (name, value) pairs)
        taus = [_tau(v, name, op, self._exponential)
                for name, v in (("tau_pre", tau_pre), ("tau_post", tau_post), *extra_taus)]
        if not isinstance(synapse, Module):
            raise TypeError(f"{op}: synapse must be a grilly.nn module, got "
                            f"{type(synapse).__name__}")
        if not isinstance(synapse, self._synapses):
            raise NotImplementedError(f"{op}: synapse {type(synapse).__name__} is not supported "
                                      f"(only {', '.join(c.__name__ for c in self._synapses)})")
        if isinstance(synapse, (Conv1d, Conv2d)):
            if any(d != 1 for d in synapse.dilation):
                raise NotImplementedError(f"{op}: a synapse with dilation != 1")
            if synapse.groups != 1:
                raise NotImplementedError(f"{op}: a synapse with groups != 1")
        if not isinstance(sn, Module):
            raise TypeError(f"{op}: sn must be a grilly.nn module, got {type(sn).__name__}")
        for name, f in (("f_pre", f_pre), ("f_post", f_post)):
            if not callable(f):
                raise TypeError(f"{op}: {name} must be callable, got {type(f).__name__}")
        super().__init__()
        self.tau_pre, self.tau_post = taus[:2]
        for (name, _), v in zip(extra_taus, taus[2:]):
            setattr(self, name, v)
        self.register_memory("trace_pre", None)
        self.register_memory("trace_post", None)
        self.step_mode = step_mode
        self.f_pre, self.f_post = f_pre, f_post
        self.synapse = synapse
        self.in_spike_monitor = monitor.InputMonitor(synapse, function_on_input=_detach)
        self.out_spike_monitor = monitor.OutputMonitor(sn, function_on_output=_detach)

    def _check_open(self) -> None:
        if not self.in_spike_monitor.hooks or not self.out_spike_monitor.hooks:
            raise RuntimeError(f"{type(self).__name__}: the learner is closed; create a new "
                               "learner to resume")

    def reset(self) -> None:
        """Forget the traces and the records (the weights, .grad and enablement stay)."""
        super().reset()
        self.in_spike_monitor.clear_recorded_data()
        self.out_spike_monitor.clear_recorded_data()

    def disable(self) -> None:
        """Stop recording (records, traces and hooks stay)."""
        self.in_spike_monitor.disable()
        self.out_spike_monitor.disable()

    def enable(self) -> None:
        """Record again; a closed learner raises RuntimeError."""
        self._check_open()
        self.in_spike_monitor.enable()
        self.out_spike_monitor.enable()

    def close(self) -> None:
        """Remove the hooks for good and forget records and traces (idempotent)."""
        self.in_spike_monitor.close()
        self.out_spike_monitor.close()
        self.reset()

    def _records(self) -> list:
        """The recorded (pre, post) pairs, as the weight's dtype; RuntimeError if closed or the
        counts differ."""
        self._check_open()
        pre, post = self.in_spike_monitor.records, self.out_spike_monitor.records
        if len(pre) != len(post):
            raise RuntimeError(f"{type(self).__name__}.step: {len(pre)} synapse inputs but "
                               f"{len(post)} neuron outputs were recorded")
        d = self.synapse.weight.dtype
        op = f"{type(self).__name__}.step"
        return [(self._as(a, d, op, "pre"), self._as(b, d, op, "post")) for a, b in zip(pre, post)]

    @staticmethod
    def _as(a, d, op: str, name: str) -> Array:
        if not isinstance(a, Array):
            raise TypeError(f"{op}: the recorded {name} spikes are {type(a).__name__}, expected "
                            "a grilly Array")
        return a if a.dtype == d else gp.astype(a, d)

    def _finish(self, delta_w: Array, on_grad: bool, scale) -> Array | None:
        if scale != 1.0:
            delta_w = delta_w * float(scale)
        self.in_spike_monitor.clear_recorded_data()
        self.out_spike_monitor.clear_recorded_data()
        if not on_grad:
            return delta_w
        w = self.synapse.weight
        w.grad = -delta_w if w.grad is None else w.grad - delta_w
        return None


class STDPLearner(_Learner):
    """SpikingJelly 2.0's ``learning.STDPLearner(step_mode, synapse, sn, tau_pre, tau_post,
    f_pre=identity, f_post=identity)``: trace STDP (decay 1 - 1/tau) of a Linear, Conv1d or
    Conv2d (groups 1, dilation 1) watched with the module ``sn`` producing its post spikes;
    step_mode 's' or 'm'."""

    def __init__(self, step_mode: str, synapse, sn, tau_pre: float, tau_post: float,
                 f_pre: Callable = _identity, f_post: Callable = _identity) -> None:
        super().__init__(step_mode, synapse, sn, tau_pre, tau_post, f_pre, f_post)

    def _check(self, pre: Array, post: Array, op: str) -> None:
        syn, w = self.synapse, self.synapse.weight
        nd = 2 if isinstance(syn, Linear) else w.ndim
        if pre.ndim != nd or post.ndim != nd:
            raise ValueError(f"{op}: pre and post spikes of one step must be {nd}-D for "
                             f"{type(syn).__name__}, got shapes {tuple(pre.shape)} and "
                             f"{tuple(post.shape)}")
        if pre.shape[1] != w.shape[1] or post.shape[1] != w.shape[0] or \
                pre.shape[0] != post.shape[0]:
            raise ValueError(f"{op}: pre {tuple(pre.shape)} and post {tuple(post.shape)} do "
                             f"not match the weight {tuple(w.shape)} or each other's batch")

    def _linear(self, pre: Array, post: Array) -> Array:
        """One step of a Linear: grilly's plasticity_step kernel advances the traces and forms
        the batch means of the pair terms (times the batch: SpikingJelly sums)."""
        w = self.synapse.weight.detach()
        self._check(pre, post, f"{type(self).__name__}.step")
        _same_shape(self.trace_pre, pre, type(self).__name__, "pre")
        _same_shape(self.trace_post, post, type(self).__name__, "post")
        n = float(pre.shape[0])
        decay = (1.0 - 1.0 / self.tau_pre, 1.0 - 1.0 / self.tau_post)
        ltp = gp.zeros_like(w)   # + sum s_post (x) x_pre
        ltd = gp.zeros_like(w)   # - sum x_post (x) s_pre
        tr = plasticity_step(ltp, pre, post, self.trace_pre, self.trace_post, rule="stdp",
                             params=(n, 0.0, *decay, 0.0, 0.0))
        plasticity_step(ltd, pre, post, self.trace_pre, self.trace_post, rule="stdp",
                        params=(0.0, n, *decay, 0.0, 0.0))
        self.trace_pre, self.trace_post = tr
        return self.f_post(w) * ltp + self.f_pre(w) * ltd

    def _conv(self, pre: Array, post: Array) -> Array:
        """One step of a Conv1d/Conv2d: the traces on the padded input, the pair terms summed
        over the windows (im2col of pre spikes and pre trace)."""
        syn = self.synapse
        w = syn.weight.detach()
        op = f"{type(self).__name__}.step"
        self._check(pre, post, op)
        pads = _conv_pads(syn)
        if any(pads):
            mode = "constant" if syn.padding_mode == "zeros" else syn.padding_mode
            pre = F.pad(pre, pads, mode=mode)
        k, s = tuple(syn.kernel_size), tuple(syn.stride)
        want = tuple((n - kk) // ss + 1 for n, kk, ss in zip(pre.shape[2:], k, s))
        if tuple(post.shape[2:]) != want:
            raise ValueError(f"{op}: post spikes {tuple(post.shape)} do not match the synapse's "
                             f"output positions {want}")
        _same_shape(self.trace_pre, pre, type(self).__name__, "pre")
        _same_shape(self.trace_post, post, type(self).__name__, "post")
        self.trace_pre = _advance(self.trace_pre, pre, 1.0 - 1.0 / self.tau_pre)
        self.trace_post = _advance(self.trace_post, post, 1.0 - 1.0 / self.tau_post)
        x_pre, x_post = self.trace_pre, self.trace_post
        if isinstance(syn, Conv1d):   # as a Conv2d of height 1
            pre, post, x_pre, x_post = (gp.expand_dims(a, axis=2)
                                        for a in (pre, post, x_pre, x_post))
            k, s = (1, k[0]), (1, s[0])
        b, o = post.shape[:2]
        cols_s = F.unfold(pre, k, stride=s)              # (B, I*K, L)
        cols_x = F.unfold(x_pre, k, stride=s)
        s_post = gp.reshape(post, (b, o, -1))            # (B, O, L)
        x_post = gp.reshape(x_post, (b, o, -1))
        ltp = gp.reshape(gp.einsum("bol,bkl->ok", s_post, cols_x), w.shape)
        ltd = gp.reshape(gp.einsum("bol,bkl->ok", x_post, cols_s), w.shape)
        return self.f_post(w) * ltp - self.f_pre(w) * ltd

    def step(self, on_grad: bool = True, scale: float = 1.0) -> Array | None:
        """Consume the records: on_grad adds -scale delta_w to ``synapse.weight.grad`` and
        returns None, else returns scale delta_w; None (nothing advanced) without records."""
        recs = self._records()
        if not recs:
            return None
        one = self._linear if isinstance(self.synapse, Linear) else self._conv
        op = f"{type(self).__name__}.step"
        with no_grad():
            if self.step_mode == "m":
                for pre, post in recs:
                    if pre.ndim < 1 or post.ndim < 1 or pre.shape[0] != post.shape[0]:
                        raise ValueError(f"{op}: step_mode 'm' records (T, B, ...) sequences "
                                         f"of one T, got {tuple(pre.shape)} and "
                                         f"{tuple(post.shape)}")
            delta_w = None
            for pre, post in recs:
                steps = zip(pre, post) if self.step_mode == "m" else [(pre, post)]
                for p, q in steps:
                    dw = one(p, q)
                    delta_w = dw if delta_w is None else delta_w + dw
            if delta_w is None:   # only empty sequences
                delta_w = gp.zeros_like(self.synapse.weight.detach())
            return self._finish(delta_w, on_grad, scale)


class _RewardLearner(_Learner):
    """MSTDP and MSTDPET: one Linear, single steps, one (pre, post) pair per ``step(reward)``."""

    _synapses = (Linear,)
    _exponential = True

    def supported_step_mode(self) -> tuple:
        """('s',): the reward learners take single steps."""
        return ("s",)

    def _pair(self) -> tuple | None:
        recs = self._records()
        if not recs:
            return None
        if len(recs) != 1:
            raise RuntimeError(f"{type(self).__name__}.step: exactly one recorded step per "
                               f"step(reward), got {len(recs)}")
        return recs[0]

    def _eligibility(self, pre: Array, post: Array) -> Array:
        """Advance the exponential traces; this step's eligibility (per sample where batched)."""
        op = type(self).__name__
        _same_shape(self.trace_pre, pre, op, "pre")
        _same_shape(self.trace_post, post, op, "post")
        tp = _advance(self.trace_pre, pre, math.exp(-1.0 / self.tau_pre))
        tq = _advance(self.trace_post, post, math.exp(-1.0 / self.tau_post))
        w = self.synapse.weight.detach()
        e = (self.f_post(w) * (gp.expand_dims(post, axis=-1) * gp.expand_dims(tp, axis=-2))
             - self.f_pre(w) * (gp.expand_dims(tq, axis=-1) * gp.expand_dims(pre, axis=-2)))
        self.trace_pre, self.trace_post = tp, tq
        return e

    def _reward(self, reward, op: str) -> Array:
        w = self.synapse.weight
        if isinstance(reward, bool) or not isinstance(reward, (numbers.Real, Array)):
            raise TypeError(f"{op}: reward must be a number or a grilly Array, got "
                            f"{type(reward).__name__}")
        if isinstance(reward, Array):
            r = gp.astype(reward.detach(), w.dtype).to_device(w.device)
        else:
            r = gp.asarray(float(reward), dtype=w.dtype, device=w.device)
        return r


class MSTDPLearner(_RewardLearner):
    """SpikingJelly 2.0's ``learning.MSTDPLearner(step_mode, synapse, sn, tau_pre, tau_post,
    f_pre, f_post)``: reward-modulated STDP of a Linear on (N, I)/(N, O) single steps; traces
    decay by exp(-1/tau); ``step(reward)`` with a scalar or (N,) reward acting on the previous
    step's eligibility."""

    def __init__(self, step_mode: str, synapse, sn, tau_pre: float, tau_post: float,
                 f_pre: Callable = _identity, f_post: Callable = _identity) -> None:
        super().__init__(step_mode, synapse, sn, tau_pre, tau_post, f_pre, f_post)
        self.register_memory("eligibility", None)

    def step(self, reward, on_grad: bool = True, scale: float = 1.0) -> Array | None:
        """delta_w = sum_b reward_b eligibility_b[t-1] (zero on the first step), then this
        step's eligibility kept; on_grad as STDPLearner.step."""
        op = f"{type(self).__name__}.step"
        pair = self._pair()
        if pair is None:
            return None
        pre, post = pair
        w = self.synapse.weight
        if pre.ndim != 2 or post.ndim != 2 or pre.shape[1] != w.shape[1] or \
                post.shape[1] != w.shape[0] or pre.shape[0] != post.shape[0]:
            raise ValueError(f"{op}: pre (N, {w.shape[1]}) and post (N, {w.shape[0]}) spikes "
                             f"expected, got {tuple(pre.shape)} and {tuple(post.shape)}")
        r = self._reward(reward, op)
        if r.ndim != 0 and tuple(r.shape) != (pre.shape[0],):
            raise ValueError(f"{op}: reward must be a scalar or shaped (N,) = ({pre.shape[0]},), "
                             f"got {tuple(r.shape)}")
        if self.eligibility is not None and self.eligibility.shape[0] != pre.shape[0]:
            raise ValueError(f"{op}: the eligibility has batch {self.eligibility.shape[0]}, the "
                             f"spikes {pre.shape[0]}; reset() before changing the batch size")
        with no_grad():
            e = self._eligibility(pre, post)
            prev = self.eligibility
            delta_w = (gp.zeros_like(w.detach()) if prev is None
                       else gp.sum(gp.reshape(r, (-1, 1, 1)) * prev, axis=0))
            self.eligibility = e
            return self._finish(delta_w, on_grad, scale)


class MSTDPETLearner(_RewardLearner):
    """SpikingJelly 2.0's ``learning.MSTDPETLearner(step_mode, synapse, sn, tau_pre, tau_post,
    tau_trace, f_pre, f_post)``: reward-modulated STDP with an eligibility trace, of a Linear on
    unbatched (I,)/(O,) single steps; ``step(reward)`` with a scalar reward."""

    def __init__(self, step_mode: str, synapse, sn, tau_pre: float, tau_post: float,
                 tau_trace: float, f_pre: Callable = _identity,
                 f_post: Callable = _identity) -> None:
        super().__init__(step_mode, synapse, sn, tau_pre, tau_post, f_pre, f_post,
                         ("tau_trace", tau_trace))
        self.register_memory("trace_e", None)
        self.register_memory("eligibility", None)

    def step(self, reward, on_grad: bool = True, scale: float = 1.0) -> Array | None:
        """trace_e = trace_e exp(-1/tau_trace) + eligibility[t-1] / tau_trace, delta_w =
        reward trace_e, then this step's eligibility kept; on_grad as STDPLearner.step."""
        op = f"{type(self).__name__}.step"
        pair = self._pair()
        if pair is None:
            return None
        pre, post = pair
        w = self.synapse.weight
        if pre.ndim != 1 or post.ndim != 1 or pre.shape[0] != w.shape[1] or \
                post.shape[0] != w.shape[0]:
            raise ValueError(f"{op}: unbatched pre ({w.shape[1]},) and post ({w.shape[0]},) "
                             f"spikes expected, got {tuple(pre.shape)} and {tuple(post.shape)}")
        r = self._reward(reward, op)
        if r.ndim != 0:
            raise ValueError(f"{op}: reward must be a scalar, got shape {tuple(r.shape)}")
        with no_grad():
            e = self._eligibility(pre, post)
            prev = gp.zeros_like(e) if self.eligibility is None else self.eligibility
            z = gp.zeros_like(e) if self.trace_e is None else self.trace_e
            z = z * math.exp(-1.0 / self.tau_trace) + prev / self.tau_trace
            self.trace_e, self.eligibility = z, e
            return self._finish(r * z, on_grad, scale)
