"""snnTorch's ``backprop`` (``from grilly.nn.snn import backprop``): one epoch of training with
backpropagation through time, whole (``BPTT``), truncated every K steps (``TBPTT``) or every
step (``RTRL``, snnTorch's name for TBPTT with K = 1), with
snnTorch's signatures, driving a grilly net (one step per call, returning ``(spk, mem)`` or
``(spk, ..., mem)``), a grilly.optim optimizer and a ``grilly.nn.snn.functional`` loss."""
from __future__ import annotations

from ...array import api as gp
from . import functional as _F
from .snntorch_functional import _BoundLoss

__all__ = ["BPTT", "TBPTT", "RTRL"]


def _on_membrane(criterion) -> bool:
    # snnTorch picks the record by the loss: the membrane ones read mem, the others spikes
    return isinstance(criterion, _BoundLoss) or type(criterion).__name__ == "MSEMembraneLoss"


def TBPTT(net, dataloader, optimizer, criterion, num_steps=False, time_var: bool = True,  # noqa: N802
          time_first: bool = True, regularization=False, device="cpu", K=1):
    """snnTorch's ``backprop.TBPTT``: for each (data, targets) batch, reset the net, run it one
    step at a time (data[t] when ``time_var``, else the same data for ``num_steps`` steps), and
    every K steps (and at the end) take the loss of the last K steps' spikes (membranes for the
    membrane losses), plus ``regularization``, backward, ``optimizer.step()`` and detach the
    state. Returns the mean over batches of the per-batch loss average (an Array)."""
    return _truncated(net, dataloader, optimizer, criterion, num_steps, time_var, time_first,
                      regularization, device, K, "TBPTT")


def _truncated(net, dataloader, optimizer, criterion, num_steps, time_var, time_first,
               regularization, device, K, op: str):
    # TBPTT's loop, its errors naming the function called (BPTT, TBPTT, RTRL)
    if num_steps and time_var:
        raise ValueError(f"{op}: num_steps must not be given when time_var is True (the time "
                         "axis of each batch sets it)")
    if num_steps is False and not time_var:
        raise ValueError(f"{op}: num_steps must be given when time_var is False")
    if num_steps and K and K > num_steps:
        raise ValueError(f"{op}: K must be <= num_steps, got K={K}, num_steps={num_steps}")
    if not time_var and not time_first:
        raise ValueError(f"{op}: time_first applies to time-varying data only")
    on_mem = _on_membrane(criterion)
    tv_targets = bool(getattr(criterion, "time_var_targets", False))
    loss_avg, n_batches = 0.0, 0
    net.train()
    for data, targets in dataloader:
        n_batches += 1
        data, targets = gp.asarray(data, device=device), gp.asarray(targets, device=device)
        if time_var and not time_first:
            data = gp.moveaxis(data, 1, 0)
        steps = data.shape[0] if time_var else num_steps
        k = steps if K is False or K is None else K
        _F.reset_net(net)
        rec, start = [], 0
        for step in range(steps):
            out = net(data[step] if time_var else data)
            rec.append(out[-1] if on_mem else out[0])
            if len(rec) == k or step == steps - 1:
                seq = gp.stack(rec, axis=0)
                tgt = targets[start:start + len(rec)] if tv_targets else targets
                loss = criterion(seq, tgt)
                if regularization:
                    loss = loss + regularization(seq if not on_mem else gp.stack(rec, axis=0))
                loss_avg = loss_avg + loss.detach() * (len(rec) / steps)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                _F.detach_net(net)
                start += len(rec)
                rec = []
    if n_batches == 0:
        raise ValueError(f"{op}: the dataloader gave no batches")
    return loss_avg / n_batches


def BPTT(net, dataloader, optimizer, criterion, num_steps=False, time_var: bool = True,  # noqa: N802
         time_first: bool = True, regularization=False, device="cpu"):
    """snnTorch's ``backprop.BPTT``: ``TBPTT`` with K = every step of the sequence (one
    backward per batch)."""
    return _truncated(net, dataloader, optimizer, criterion, num_steps, time_var, time_first,
                      regularization, device, num_steps, "BPTT")


def RTRL(net, dataloader, optimizer, criterion, num_steps=False, time_var: bool = True,  # noqa: N802
         time_first: bool = True, regularization=False, device="cpu"):
    """snnTorch's ``backprop.RTRL``: ``TBPTT`` with K = 1 (a loss, backward and optimizer step
    at every time step, the state detached after each); snnTorch 1.0's runs on time-static
    data only (its time-varying branch fails), grilly's on both."""
    return _truncated(net, dataloader, optimizer, criterion, num_steps, time_var, time_first,
                      regularization, device, 1, "RTRL")
